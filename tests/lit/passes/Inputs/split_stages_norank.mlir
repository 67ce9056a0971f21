module attributes {flow.mesh = array<i64: 3>} {
  func.func @main(%x: tensor<4xf32> {flow.name = "x"}) -> (tensor<4xf32> {flow.name = "y"}) {
    %w = "flow.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32> loc("w")
    %a = "flow.relu"(%x) {flow.placement = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32> loc("a")
    %b = "flow.mul"(%a, %w) {flow.placement = array<i64: 1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("b")
    %c = "flow.add"(%b, %a) {flow.placement = array<i64: 2>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("c")
    "func.return"(%c) : (tensor<4xf32>) -> ()
  }
}
