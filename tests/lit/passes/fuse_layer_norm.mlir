// RUN: %flowc build %s --passes=fuse_layer_norm --verify-each --emit ir --split-input-file | FileCheck %s

// PyTorch's opset-13 LayerNorm: mean, sub, pow 2, mean, add eps, sqrt, div, mul gamma, add beta.
// CHECK-LABEL: func.func @torch(
// CHECK-NOT:     flow.reduce_mean
// CHECK:         %[[Y:.*]] = "flow.layer_norm"(%arg0, %arg1, %arg2) {axis = 2 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32> loc("beta")
// CHECK-NEXT:    "func.return"(%[[Y]])
func.func @torch(%x: tensor<2x3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %two = "flow.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = "flow.constant"() {value = dense<9.99999974E-6> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.reduce_mean"(%x) {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
  %1 = "flow.sub"(%x, %0) : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %2 = "flow.pow"(%1, %two) : (tensor<2x3x8xf32>, tensor<f32>) -> tensor<2x3x8xf32>
  %3 = "flow.reduce_mean"(%2) {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
  %4 = "flow.add"(%3, %eps) : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3x1xf32>
  %5 = "flow.sqrt"(%4) : (tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %6 = "flow.div"(%1, %5) : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %7 = "flow.mul"(%6, %g) : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  %8 = "flow.add"(%7, %b) : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32> loc("beta")
  "func.return"(%8) : (tensor<2x3x8xf32>) -> ()
}

// -----

// Without gamma and beta (folded away when they were 1 and absent): the scale is a scalar 1, made at the
// top of the graph. Variants:
// mul(d, d) for the square, eps on the left of the add, normalisation over the last two dims.
// CHECK-LABEL: func.func @no_affine(
// CHECK-NEXT:    %[[ONE:.*]] = "flow.constant"() {value = dense<1.000000e+00> : tensor<f32>}
// CHECK:         %[[Y:.*]] = "flow.layer_norm"(%arg0, %[[ONE]]) {axis = 1 : i64, epsilon = 1.000000e-03 : f32} : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    "func.return"(%[[Y]])
func.func @no_affine(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %eps = "flow.constant"() {value = dense<1.0E-3> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.reduce_mean"(%x) {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  %1 = "flow.sub"(%x, %0) : (tensor<2x3x4xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
  %2 = "flow.mul"(%1, %1) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %3 = "flow.reduce_mean"(%2) {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  %4 = "flow.add"(%eps, %3) : (tensor<f32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %5 = "flow.sqrt"(%4) : (tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %6 = "flow.div"(%1, %5) : (tensor<2x3x4xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
  "func.return"(%6) : (tensor<2x3x4xf32>) -> ()
}

// -----

// Multiplying by the reciprocal instead of dividing; gamma with leading size-1 dims is reshaped to the
// normalised dims. The deviation d is also returned: its sub stays, the rest of the pattern goes.
// CHECK-LABEL: func.func @reciprocal(
// CHECK:         %[[D:.*]] = "flow.sub"(%arg0,
// CHECK:         %[[G:.*]] = "flow.reshape"(%arg1) {shape = array<i64: 6>} : (tensor<1x1x6xf64>) -> tensor<6xf64>
// CHECK-NEXT:    %[[Y:.*]] = "flow.layer_norm"(%arg0, %[[G]]) {axis = 2 : i64, epsilon = 1.000000e-05 : f32} : (tensor<4x5x6xf64>, tensor<6xf64>) -> tensor<4x5x6xf64>
// CHECK-NEXT:    "func.return"(%[[Y]], %[[D]])
func.func @reciprocal(%x: tensor<4x5x6xf64>, %g: tensor<1x1x6xf64>) -> (tensor<4x5x6xf64>, tensor<4x5x6xf64>) {
  %two = "flow.constant"() {value = dense<2.0> : tensor<f64>} : () -> tensor<f64>
  %eps = "flow.constant"() {value = dense<1.0E-5> : tensor<1xf64>} : () -> tensor<1xf64>
  %0 = "flow.reduce_mean"(%x) {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<4x5x6xf64>) -> tensor<4x5x1xf64>
  %1 = "flow.sub"(%x, %0) : (tensor<4x5x6xf64>, tensor<4x5x1xf64>) -> tensor<4x5x6xf64>
  %2 = "flow.pow"(%1, %two) : (tensor<4x5x6xf64>, tensor<f64>) -> tensor<4x5x6xf64>
  %3 = "flow.reduce_mean"(%2) {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<4x5x6xf64>) -> tensor<4x5x1xf64>
  %4 = "flow.add"(%3, %eps) : (tensor<4x5x1xf64>, tensor<1xf64>) -> tensor<4x5x1xf64>
  %5 = "flow.sqrt"(%4) : (tensor<4x5x1xf64>) -> tensor<4x5x1xf64>
  %6 = "flow.reciprocal"(%5) : (tensor<4x5x1xf64>) -> tensor<4x5x1xf64>
  %7 = "flow.mul"(%6, %1) : (tensor<4x5x1xf64>, tensor<4x5x6xf64>) -> tensor<4x5x6xf64>
  %8 = "flow.mul"(%g, %7) : (tensor<1x1x6xf64>, tensor<4x5x6xf64>) -> tensor<4x5x6xf64>
  "func.return"(%8, %1) : (tensor<4x5x6xf64>, tensor<4x5x6xf64>) -> ()
}

// -----

// A gamma that varies along an outer dim is not a layer_norm scale: the mul stays after the layer_norm.
// CHECK-LABEL: func.func @outer_gamma(
// CHECK:         %[[Y:.*]] = "flow.layer_norm"(%arg0, %{{.*}}) {axis = 1 : i64
// CHECK-NEXT:    %[[M:.*]] = "flow.mul"(%[[Y]], %arg1) : (tensor<3x8xf32>, tensor<3x1xf32>) -> tensor<3x8xf32>
// CHECK-NEXT:    "func.return"(%[[M]])
func.func @outer_gamma(%x: tensor<3x8xf32>, %g: tensor<3x1xf32>) -> tensor<3x8xf32> {
  %two = "flow.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = "flow.constant"() {value = dense<1.0E-5> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.reduce_mean"(%x) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<3x8xf32>) -> tensor<3x1xf32>
  %1 = "flow.sub"(%x, %0) : (tensor<3x8xf32>, tensor<3x1xf32>) -> tensor<3x8xf32>
  %2 = "flow.pow"(%1, %two) : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
  %3 = "flow.reduce_mean"(%2) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<3x8xf32>) -> tensor<3x1xf32>
  %4 = "flow.add"(%3, %eps) : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %5 = "flow.sqrt"(%4) : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %6 = "flow.div"(%1, %5) : (tensor<3x8xf32>, tensor<3x1xf32>) -> tensor<3x8xf32>
  %7 = "flow.mul"(%6, %g) : (tensor<3x8xf32>, tensor<3x1xf32>) -> tensor<3x8xf32>
  "func.return"(%7) : (tensor<3x8xf32>) -> ()
}

// -----

// Not a layer norm: the means are over different axes, the power is 3, the statistics are over a
// leading axis. Nothing changes.
// CHECK-LABEL: func.func @not_layer_norm(
// CHECK-NOT:     flow.layer_norm
// CHECK:         "func.return"
func.func @not_layer_norm(%x: tensor<3x8xf32>, %y: tensor<3x8xf32>) -> (tensor<3x8xf32>, tensor<3x8xf32>) {
  %three = "flow.constant"() {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
  %two = "flow.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %eps = "flow.constant"() {value = dense<1.0E-5> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.reduce_mean"(%x) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<3x8xf32>) -> tensor<3x1xf32>
  %1 = "flow.sub"(%x, %0) : (tensor<3x8xf32>, tensor<3x1xf32>) -> tensor<3x8xf32>
  %2 = "flow.pow"(%1, %three) : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
  %3 = "flow.reduce_mean"(%2) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<3x8xf32>) -> tensor<3x1xf32>
  %4 = "flow.add"(%3, %eps) : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %5 = "flow.sqrt"(%4) : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %6 = "flow.div"(%1, %5) : (tensor<3x8xf32>, tensor<3x1xf32>) -> tensor<3x8xf32>
  %10 = "flow.reduce_mean"(%y) {axes = array<i64: 0>, keepdims = 1 : i64} : (tensor<3x8xf32>) -> tensor<1x8xf32>
  %11 = "flow.sub"(%y, %10) : (tensor<3x8xf32>, tensor<1x8xf32>) -> tensor<3x8xf32>
  %12 = "flow.pow"(%11, %two) : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
  %13 = "flow.reduce_mean"(%12) {axes = array<i64: 0>, keepdims = 1 : i64} : (tensor<3x8xf32>) -> tensor<1x8xf32>
  %14 = "flow.add"(%13, %eps) : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
  %15 = "flow.sqrt"(%14) : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %16 = "flow.div"(%11, %15) : (tensor<3x8xf32>, tensor<1x8xf32>) -> tensor<3x8xf32>
  "func.return"(%6, %16) : (tensor<3x8xf32>, tensor<3x8xf32>) -> ()
}
