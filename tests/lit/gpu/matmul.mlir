// RUN: flowc build %s --device cuda --emit ptx -o %t.ptx && FileCheck %s < %t.ptx
// RUN: flowc build %s --device cuda --gpu sm_90 --emit ptx -o %t90.ptx && FileCheck %s < %t90.ptx
// A batched matmul with broadcast batch dims and odd sizes: the tiled GEMM (gpu_kernel_matmul.c), its two
// shared tiles (16 x 65 and 16 x 64 floats), barriers around the K step; ptxas checks both architectures.
// CHECK: .entry g0(
// CHECK-DAG: .shared .align 16 .b8 g0_$_gemm_a_$_1[4160];
// CHECK-DAG: .shared .align 16 .b8 g0_$_gemm_b_$_2[4096];
// CHECK: bar.sync
// CHECK: fma.rn.f32
// CHECK: bar.sync
module {
  func.func @main(%a: tensor<2x1x31x37xf32> {flow.name = "a"}, %b: tensor<3x37x65xf32> {flow.name = "b"})
                  -> (tensor<2x3x31x65xf32> {flow.name = "y"}) {
    %y = "flow.matmul"(%a, %b) : (tensor<2x1x31x37xf32>, tensor<3x37x65xf32>) -> tensor<2x3x31x65xf32>
    return %y : tensor<2x3x31x65xf32>
  }
}
