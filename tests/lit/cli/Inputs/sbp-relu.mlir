func.func @main(%arg0: tensor<4x2xf32> {flow.name = "x"}) -> tensor<4x2xf32> {
  %0 = "flow.relu"(%arg0) : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
