// A [128, 1, 256] by [256, 768] matmul (a transformer's QKV projection over a sequence of 128 tokens, batch 1),
// for sbp-cost-rows.test: the kernel runs it as one product of 128 rows.
func.func @main(%arg0: tensor<128x1x256xf32> {flow.name = "x"}, %arg1: tensor<256x768xf32> {flow.name = "w"}) -> tensor<128x1x768xf32> {
  %0 = "flow.matmul"(%arg0, %arg1) : (tensor<128x1x256xf32>, tensor<256x768xf32>) -> tensor<128x1x768xf32>
  return %0 : tensor<128x1x768xf32>
}
