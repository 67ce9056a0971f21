func.func @main(%x: tensor<3000000000x5000xf32>) -> tensor<3000000000xf32> {
  %0 = "flow.reduce_max"(%x) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<3000000000x5000xf32>) -> tensor<3000000000xf32> loc("big")
  "func.return"(%0) : (tensor<3000000000xf32>) -> ()
}
