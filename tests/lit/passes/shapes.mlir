// RUN: %flowc build %s --passes=shapes --emit ir --split-input-file | FileCheck %s
//
// The parser already checks every recorded type against inference, so text input is consistent and
// the pass must reproduce each type exactly (a hook that disagreed would change the printed types or
// fail --verify-each). Propagation of a changed input type is tested in tests/unit/test_passes.c.
// RUN: %flowc build %s --passes=shapes,shapes --verify-each --emit ir --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @mixed(%arg0: tensor<1x3x8x8xf32>, %arg1: tensor<4x3x3x3xf32>) -> (tensor<1x4xf32>
// CHECK-NEXT:    %0 = "flow.conv"(%arg0, %arg1) {{.*}} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NEXT:    %1 = "flow.reduce_mean"(%0) {{.*}} : (tensor<1x4x6x6xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    "func.return"(%1) : (tensor<1x4xf32>) -> ()
func.func @mixed(%arg0: tensor<1x3x8x8xf32>, %arg1: tensor<4x3x3x3xf32>) -> (tensor<1x4xf32>) {
  %0 = "flow.conv"(%arg0, %arg1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %1 = "flow.reduce_mean"(%0) {axes = array<i64: 2, 3>, keepdims = 0 : i64} : (tensor<1x4x6x6xf32>) -> tensor<1x4xf32>
  "func.return"(%1) : (tensor<1x4xf32>) -> ()
}

// -----

// CHECK-LABEL: func.func @multi_result(
// CHECK-NEXT:    %0:2 = "flow.topk"(%arg0) {{.*}} : (tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
// CHECK-NEXT:    %1 = "flow.matmul"(%0#0, %arg1) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
func.func @multi_result(%arg0: tensor<2x5xf32>, %arg1: tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<2x3xi64>) {
  %0:2 = "flow.topk"(%arg0) {axis = 1 : i64, k = 3 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
  %1 = "flow.matmul"(%0#0, %arg1) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  "func.return"(%1, %0#1) : (tensor<2x4xf32>, tensor<2x3xi64>) -> ()
}
