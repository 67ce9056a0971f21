// RUN: flowc build %s --device cuda --emit ptx -o %t.ptx && FileCheck %s < %t.ptx
// RUN: flowc build %s --device cuda --gpu sm_90 --emit ptx -o %t90.ptx && FileCheck %s < %t90.ptx
// A padded, strided conv with bias is the implicit GEMM (g0: shared tiles, barriers); a depthwise conv is
// the direct kernel (g1: no shared memory, no barrier).
// CHECK: .entry g0(
// CHECK: .shared
// CHECK: bar.sync
// CHECK: .entry g1(
// CHECK-NOT: bar.sync
// CHECK-NOT: .shared
// CHECK: ret;
module {
  func.func @main(%x: tensor<1x3x17x15xf32> {flow.name = "x"}, %w: tensor<8x3x3x3xf32> {flow.name = "w"},
                  %bias: tensor<8xf32> {flow.name = "bias"}, %dw: tensor<8x1x3x3xf32> {flow.name = "dw"})
                  -> (tensor<1x8x9x8xf32> {flow.name = "y"}) {
    %c = "flow.conv"(%x, %w, %bias) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x17x15xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x8x9x8xf32>
    %y = "flow.conv"(%c, %dw) {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x9x8xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x9x8xf32>
    return %y : tensor<1x8x9x8xf32>
  }
}
