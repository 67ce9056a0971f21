// The same product as sbp-matmul-rows.mlir with its rows in one dim, for sbp-cost-rows.test.
func.func @main(%arg0: tensor<128x256xf32> {flow.name = "x"}, %arg1: tensor<256x768xf32> {flow.name = "w"}) -> tensor<128x768xf32> {
  %0 = "flow.matmul"(%arg0, %arg1) : (tensor<128x256xf32>, tensor<256x768xf32>) -> tensor<128x768xf32>
  return %0 : tensor<128x768xf32>
}
