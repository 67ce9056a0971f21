func.func @main(%x: tensor<4x33x1025xf32>, %h: tensor<8x1000xf16>, %l: tensor<2x5000xf32>, %g: tensor<1025xf32>, %b: tensor<1025xf32>, %i: tensor<6x31x5xi32>) -> (tensor<4x1x1025xf32>, tensor<4xf32>, tensor<8xf16>, tensor<4x33xi64>, tensor<2x5000xf32>, tensor<4x33x1025xf32>, tensor<4x33x1025xf32>, tensor<4x33x1xf32>, tensor<4x33x1xf32>, tensor<2x5000xf32>, tensor<6x5xi32>) {
  %0 = "flow.reduce_sum"(%x) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<4x33x1025xf32>) -> tensor<4x1x1025xf32>
  %1 = "flow.reduce_max"(%x) {axes = array<i64: 1, 2>, keepdims = 0 : i64} : (tensor<4x33x1025xf32>) -> tensor<4xf32>
  %2 = "flow.reduce_mean"(%h) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<8x1000xf16>) -> tensor<8xf16>
  %3 = "flow.argmax"(%x) {axis = 2 : i64, keepdims = 0 : i64, select_last_index = 1 : i64} : (tensor<4x33x1025xf32>) -> tensor<4x33xi64>
  %4 = "flow.softmax"(%l) {axis = 1 : i64} : (tensor<2x5000xf32>) -> tensor<2x5000xf32>
  %5 = "flow.log_softmax"(%x) {axis = 1 : i64} : (tensor<4x33x1025xf32>) -> tensor<4x33x1025xf32>
  %6:3 = "flow.layer_norm"(%x, %g, %b) {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x33x1025xf32>, tensor<1025xf32>, tensor<1025xf32>) -> (tensor<4x33x1025xf32>, tensor<4x33x1xf32>, tensor<4x33x1xf32>)
  %7 = "flow.layer_norm"(%l, %l) {axis = 0 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x5000xf32>, tensor<2x5000xf32>) -> tensor<2x5000xf32>
  %8 = "flow.reduce_prod"(%i) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<6x31x5xi32>) -> tensor<6x5xi32>
  "func.return"(%0, %1, %2, %3, %4, %5, %6#0, %6#1, %6#2, %7, %8) : (tensor<4x1x1025xf32>, tensor<4xf32>, tensor<8xf16>, tensor<4x33xi64>, tensor<2x5000xf32>, tensor<4x33x1025xf32>, tensor<4x33x1025xf32>, tensor<4x33x1xf32>, tensor<4x33x1xf32>, tensor<2x5000xf32>, tensor<6x5xi32>) -> ()
}
