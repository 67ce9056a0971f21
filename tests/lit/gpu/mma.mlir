// RUN: flowc build %s --device cuda --precision fp16 --emit ptx -o %t16.ptx && FileCheck %s --check-prefixes=CHECK,F16 < %t16.ptx
// RUN: flowc build %s --device cuda --gpu sm_90 --precision fp16 --emit ptx -o %t16_90.ptx && FileCheck %s --check-prefixes=CHECK,F16 < %t16_90.ptx
// RUN: flowc build %s --device cuda --precision bf16 --emit ptx -o %tbf.ptx && FileCheck %s --check-prefixes=CHECK,BF16 < %tbf.ptx
// RUN: flowc build %s --device cuda --gpu sm_90 --precision bf16 --emit ptx -o %tbf90.ptx && FileCheck %s --check-prefixes=CHECK,BF16 < %tbf90.ptx
// RUN: flowc build %s --device cuda --precision tf32 --emit ptx -o %ttf.ptx && FileCheck %s --check-prefixes=CHECK,TF32 < %ttf.ptx
// RUN: flowc build %s --device cuda --gpu sm_90 --precision tf32 --emit ptx -o %ttf90.ptx && FileCheck %s --check-prefixes=CHECK,TF32 < %ttf90.ptx
// RUN: flowc build %s --device cuda --precision fp32 --emit ptx -o %t32.ptx && FileCheck %s --check-prefix=F32 < %t32.ptx
// A matmul and a conv (implicit GEMM) with --precision: tensor-core GEMMs (gpu_gemm_mma.c) with k-contiguous
// shared tiles of 16-bit values (64 rows of 24) or tf32 words (64 rows of 20), barriers around each K step;
// ptxas checks every build for sm_80 and sm_90. fp32 (the default) keeps the SIMT f32 GEMM.
// CHECK: .entry g0(
// F16-DAG: .shared .align 16 .b8 g0_$_mma_a_$_1[3072];
// TF32-DAG: .shared .align 16 .b8 g0_$_mma_a_$_1[5120];
// CHECK: bar.sync
// F16: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// BF16: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// TF32: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// CHECK: bar.sync
// CHECK: .entry g1(
// F16: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// BF16: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// TF32: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// F32-NOT: mma.sync
// F32: fma.rn.f32
module {
  func.func @main(%a: tensor<2x1x31x37xf32> {flow.name = "a"}, %b: tensor<3x37x65xf32> {flow.name = "b"},
                  %x: tensor<1x5x9x11xf32> {flow.name = "x"}, %w: tensor<8x5x3x3xf32> {flow.name = "w"})
                  -> (tensor<2x3x31x65xf32> {flow.name = "y"}, tensor<1x8x9x11xf32> {flow.name = "z"}) {
    %y = "flow.matmul"(%a, %b) : (tensor<2x1x31x37xf32>, tensor<3x37x65xf32>) -> tensor<2x3x31x65xf32>
    %z = "flow.conv"(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x5x9x11xf32>, tensor<8x5x3x3xf32>) -> tensor<1x8x9x11xf32>
    return %y, %z : tensor<2x3x31x65xf32>, tensor<1x8x9x11xf32>
  }
}
