// RUN: %flowc build %s --passes=eliminate_transpose --verify-each --emit ir --split-input-file | FileCheck %s

// Moving only size-1 dims moves no data: a reshape (nn.MultiheadAttention's [1, L, E] <-> [L, 1, E]).
// A transpose that also swaps two real dims stays.
// CHECK-LABEL: func.func @layout_free(
// CHECK-NEXT:    %0 = "flow.reshape"(%arg0) {shape = array<i64: 128, 1, 256>} : (tensor<1x128x256xf32>) -> tensor<128x1x256xf32> loc("t1")
// CHECK-NEXT:    %1 = "flow.reshape"(%arg1) {shape = array<i64: 4, 1>}
// CHECK-NEXT:    %2 = "flow.transpose"(%arg2) {perm = array<i64: 2, 1, 0>} : (tensor<2x1x3xf32>) -> tensor<3x1x2xf32>
// CHECK-NEXT:    "func.return"(%0, %1, %2)
func.func @layout_free(%arg0: tensor<1x128x256xf32>, %arg1: tensor<1x4xf32>, %arg2: tensor<2x1x3xf32>) -> (tensor<128x1x256xf32>, tensor<4x1xf32>, tensor<3x1x2xf32>) {
  %0 = "flow.transpose"(%arg0) {perm = array<i64: 1, 0, 2>} : (tensor<1x128x256xf32>) -> tensor<128x1x256xf32> loc("t1")
  %1 = "flow.transpose"(%arg1) {perm = array<i64: 1, 0>} : (tensor<1x4xf32>) -> tensor<4x1xf32>
  %2 = "flow.transpose"(%arg2) {perm = array<i64: 2, 1, 0>} : (tensor<2x1x3xf32>) -> tensor<3x1x2xf32>
  "func.return"(%0, %1, %2) : (tensor<128x1x256xf32>, tensor<4x1xf32>, tensor<3x1x2xf32>) -> ()
}

// -----

// Two transposes compose into one; a pair that cancels leaves the value itself.
// CHECK-LABEL: func.func @compose(
// CHECK-NEXT:    %0 = "flow.transpose"(%arg0) {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
// CHECK-NEXT:    "func.return"(%0, %arg0)
func.func @compose(%arg0: tensor<2x3x4xf32>) -> (tensor<3x4x2xf32>, tensor<2x3x4xf32>) {
  %0 = "flow.transpose"(%arg0) {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %1 = "flow.transpose"(%0) {perm = array<i64: 0, 2, 1>} : (tensor<3x2x4xf32>) -> tensor<3x4x2xf32>
  %2 = "flow.transpose"(%arg0) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %3 = "flow.transpose"(%2) {perm = array<i64: 1, 2, 0>} : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
  "func.return"(%1, %3) : (tensor<3x4x2xf32>, tensor<2x3x4xf32>) -> ()
}

// -----

// Two transposes by one permutation into an element-wise op become one transpose after it.
// CHECK-LABEL: func.func @sink_binary(
// CHECK-NEXT:    %0 = "flow.add"(%arg0, %arg1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("add")
// CHECK-NEXT:    %1 = "flow.transpose"(%0) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32> loc("add")
// CHECK-NEXT:    "func.return"(%1)
func.func @sink_binary(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = "flow.transpose"(%arg0) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = "flow.transpose"(%arg1) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %2 = "flow.add"(%0, %1) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32> loc("add")
  "func.return"(%2) : (tensor<3x2xf32>) -> ()
}

// -----

// transpose, element-wise ops with a scalar and a per-channel constant (permuted at compile time to the
// untransposed layout), and the inverse transpose: no transpose is left.
// CHECK-LABEL: func.func @round_trip(
// CHECK-NOT:     flow.transpose
// CHECK:         %[[C:.*]] = "flow.constant"() {value = dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}2.000000e+00]], {{\[\[}}3.000000e+00]]]> : tensor<3x1x1xf32>}
// CHECK-NEXT:    %[[A:.*]] = "flow.mul"(%arg0, %[[C]]) : (tensor<3x4x5xf32>, tensor<3x1x1xf32>) -> tensor<3x4x5xf32>
// CHECK-NEXT:    %[[B:.*]] = "flow.max"(%[[A]], %{{.*}}) : (tensor<3x4x5xf32>, tensor<f32>) -> tensor<3x4x5xf32>
// CHECK-NEXT:    "func.return"(%[[B]])
func.func @round_trip(%arg0: tensor<3x4x5xf32>) -> tensor<3x4x5xf32> {
  %c = "flow.constant"() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %z = "flow.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.transpose"(%arg0) {perm = array<i64: 1, 2, 0>} : (tensor<3x4x5xf32>) -> tensor<4x5x3xf32>
  %1 = "flow.mul"(%0, %c) : (tensor<4x5x3xf32>, tensor<3xf32>) -> tensor<4x5x3xf32>
  %2 = "flow.max"(%1, %z) : (tensor<4x5x3xf32>, tensor<f32>) -> tensor<4x5x3xf32>
  %3 = "flow.transpose"(%2) {perm = array<i64: 2, 0, 1>} : (tensor<4x5x3xf32>) -> tensor<3x4x5xf32>
  "func.return"(%3) : (tensor<3x4x5xf32>) -> ()
}

// -----

// No gain, no change: one transpose in, one out (attention's q / sqrt(d) before its matmul), or a
// transpose that has another user and so would stay anyway.
// CHECK-LABEL: func.func @no_gain(
// CHECK-NEXT:    %0 = "flow.constant"()
// CHECK-NEXT:    %1 = "flow.transpose"(%arg0)
// CHECK-NEXT:    %2 = "flow.div"(%1, %0)
// CHECK-NEXT:    %3 = "flow.matmul"(%2, %arg1)
// CHECK-NEXT:    %4 = "flow.transpose"(%arg1)
// CHECK-NEXT:    %5 = "flow.transpose"(%arg0)
// CHECK-NEXT:    %6 = "flow.sub"(%4, %5)
// CHECK-NEXT:    "func.return"(%3, %6, %4)
func.func @no_gain(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %k = "flow.constant"() {value = dense<8.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.transpose"(%arg0) {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "flow.div"(%0, %k) : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %2 = "flow.matmul"(%1, %arg1) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %3 = "flow.transpose"(%arg1) {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %4 = "flow.transpose"(%arg0) {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %5 = "flow.sub"(%3, %4) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  "func.return"(%2, %5, %3) : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> ()
}
