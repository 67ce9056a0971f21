module attributes {flow.mesh = array<i64: 2>, flow.micro_batches = 2 : i64} {
  func.func @main(%x: tensor<4x3xf32> {flow.name = "x"}) -> (tensor<1x3xf32> {flow.name = "y"}) {
    %a = "flow.reduce_sum"(%x) {axes = array<i64: 0>, keepdims = 1 : i64} : (tensor<4x3xf32>) -> tensor<1x3xf32> loc("sum")
    "func.return"(%a) : (tensor<1x3xf32>) -> ()
  }
}
