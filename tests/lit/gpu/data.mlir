// RUN: flowc build %s --device cuda --emit ptx -o %t.ptx && FileCheck %s < %t.ptx
// RUN: flowc build %s --device cuda --gpu sm_90 --emit ptx -o %t90.ptx && FileCheck %s < %t90.ptx
// A transpose that moves the last dim goes through the 32 x 33 shared tile (g0); pooling (g1) and a gather
// (g2, whose bad indices set the status word) are one thread per element.
// CHECK: .entry g0(
// CHECK: .shared .align 16 .b8 g0_$_tile_$_1[4224];
// CHECK: bar.sync
// CHECK: .entry g1(
// CHECK-NOT: bar.sync
// CHECK: .entry g2(
// CHECK: atom.global.cas.b32
module {
  func.func @main(%x: tensor<2x33x70xf32> {flow.name = "x"}, %i: tensor<3xi64> {flow.name = "i"})
                  -> (tensor<2x70x33xf32> {flow.name = "t"}, tensor<2x70x16xf32> {flow.name = "p"}, tensor<2x3x33xf32> {flow.name = "g"}) {
    %t = "flow.transpose"(%x) {perm = array<i64: 0, 2, 1>} : (tensor<2x33x70xf32>) -> tensor<2x70x33xf32>
    %p = "flow.max_pool"(%t) {ceil_mode = 0 : i64, dilations = array<i64: 1>, kernel_shape = array<i64: 3>, pads = array<i64: 1, 0>, storage_order = 0 : i64, strides = array<i64: 2>} : (tensor<2x70x33xf32>) -> tensor<2x70x16xf32>
    %g = "flow.gather"(%t, %i) {axis = 1 : i64} : (tensor<2x70x33xf32>, tensor<3xi64>) -> tensor<2x3x33xf32>
    return %t, %p, %g : tensor<2x70x33xf32>, tensor<2x70x16xf32>, tensor<2x3x33xf32>
  }
}
