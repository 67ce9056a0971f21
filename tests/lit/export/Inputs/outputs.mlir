module {
  func.func @main(%x: tensor<2xf32> {flow.name = "x"}) -> (tensor<2xf32> {flow.name = "a"}, tensor<2xf32> {flow.name = "b"}, tensor<2xf32> {flow.name = "x_again"}, tensor<2xf32> {flow.name = "c"}, tensor<2xf32> {flow.name = "x"}) {
    %c = "flow.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32> loc("c")
    %r = "flow.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32> loc("relu")
    "func.return"(%r, %r, %x, %c, %x) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> ()
  }
}
