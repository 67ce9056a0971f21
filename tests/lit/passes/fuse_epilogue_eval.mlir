// RUN: %flowc build %s --passes=fuse_epilogue --emit ir --split-input-file | FileCheck %s --check-prefix=FUSED
// RUN: %flowc build %s --passes=fuse_epilogue,fold --emit ir --split-input-file | FileCheck %s
// RUN: %flowc build %s --passes=fold --emit ir --split-input-file | FileCheck %s

// The reference evaluator applies a fused epilogue: folding the fused op gives what folding the
// unfused chain gives.

// conv (1x1, per-channel weights 1 and 2, no bias) + residual, relu:
// [1, -3] -> [1, -3 | 2, -6] + [0.5, 0.5 | 1, 1] -> relu [1.5, 0 | 3, 0].
// FUSED-LABEL: func.func @conv(
// FUSED:         "flow.conv"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {dilations = array<i64: 1, 1>, epilogue = "add x o3; relu s0"
// CHECK-LABEL: func.func @conv(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<{{\[\[\[\[}}1.500000e+00, 0.000000e+00]], {{\[\[}}3.000000e+00, 0.000000e+00]]]]> : tensor<1x2x1x2xf32>}
// CHECK-NEXT:    "func.return"(%0)
func.func @conv() -> (tensor<1x2x1x2xf32>) {
  %x = "flow.constant"() {value = dense<[[[[1.0, -3.0]]]]> : tensor<1x1x1x2xf32>} : () -> tensor<1x1x1x2xf32>
  %w = "flow.constant"() {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %r = "flow.constant"() {value = dense<[[[[0.5, 0.5]], [[1.0, 1.0]]]]> : tensor<1x2x1x2xf32>} : () -> tensor<1x2x1x2xf32>
  %0 = "flow.conv"(%x, %w) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x1x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x1x2xf32>
  %1 = "flow.add"(%0, %r) : (tensor<1x2x1x2xf32>, tensor<1x2x1x2xf32>) -> tensor<1x2x1x2xf32>
  %2 = "flow.relu"(%1) : (tensor<1x2x1x2xf32>) -> tensor<1x2x1x2xf32>
  "func.return"(%2) : (tensor<1x2x1x2xf32>) -> ()
}

// -----

// matmul + bias [N] + clip to [0, 6]: [[1, 2]] x [[1, 2, 3], [4, 5, 6]] = [9, 12, 15], + [-10, -5, 0]
// -> clip [0, 6, 6].
// FUSED-LABEL: func.func @matmul(
// FUSED:         "flow.matmul"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {epilogue = "add x o2; max s0 o3; min s1 o4"}
// CHECK-LABEL: func.func @matmul(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<{{\[\[}}0.000000e+00, 6.000000e+00, 6.000000e+00]]> : tensor<1x3xf32>}
// CHECK-NEXT:    "func.return"(%0)
func.func @matmul() -> (tensor<1x3xf32>) {
  %a = "flow.constant"() {value = dense<[[1.0, 2.0]]> : tensor<1x2xf32>} : () -> tensor<1x2xf32>
  %b = "flow.constant"() {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %bias = "flow.constant"() {value = dense<[-10.0, -5.0, 0.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %lo = "flow.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %hi = "flow.constant"() {value = dense<6.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.matmul"(%a, %b) : (tensor<1x2xf32>, tensor<2x3xf32>) -> tensor<1x3xf32>
  %1 = "flow.add"(%0, %bias) : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  %2 = "flow.max"(%1, %lo) : (tensor<1x3xf32>, tensor<f32>) -> tensor<1x3xf32>
  %3 = "flow.min"(%2, %hi) : (tensor<1x3xf32>, tensor<f32>) -> tensor<1x3xf32>
  "func.return"(%3) : (tensor<1x3xf32>) -> ()
}
