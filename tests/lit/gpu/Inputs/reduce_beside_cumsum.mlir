func.func @main(%x: tensor<4x33xf32>) -> (tensor<4x33xf32>, tensor<4xf32>) {
  %0 = "flow.cumsum"(%x) {axis = 1 : i64, exclusive = 0 : i64, reverse = 0 : i64} : (tensor<4x33xf32>) -> tensor<4x33xf32> loc("cs")
  %1 = "flow.reduce_sum"(%x) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<4x33xf32>) -> tensor<4xf32> loc("rs")
  "func.return"(%0, %1) : (tensor<4x33xf32>, tensor<4xf32>) -> ()
}
