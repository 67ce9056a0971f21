module attributes {flow.mesh = array<i64: 4>} {
  func.func @main(%x: tensor<4xf32> {flow.name = "x"}) -> (tensor<4xf32> {flow.name = "y"}) {
    %a = "flow.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32> loc("r")
    "func.return"(%a) : (tensor<4xf32>) -> ()
  }
}
