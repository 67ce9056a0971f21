module attributes {flow.mesh = array<i64: 2>, flow.micro_batches = 2 : i64} {
  func.func @main(%x: tensor<3x3xf32> {flow.name = "x"}) -> (tensor<3x3xf32> {flow.name = "y"}) {
    %a = "flow.neg"(%x) : (tensor<3x3xf32>) -> tensor<3x3xf32>
    "func.return"(%a) : (tensor<3x3xf32>) -> ()
  }
}
