module attributes {flow.mesh = array<i64: 2>, flow.rank = 0 : i64} {
  func.func @main(%x: tensor<4xf32> {flow.name = "x"}) -> (tensor<4xf32> {flow.name = "y"}) {
    %a = "flow.relu"(%x) {flow.placement = array<i64: 5>} : (tensor<4xf32>) -> tensor<4xf32> loc("a")
    "func.return"(%a) : (tensor<4xf32>) -> ()
  }
}
