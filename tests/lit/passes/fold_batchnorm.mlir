// RUN: %flowc build %s --passes=fold_batchnorm --verify-each --emit ir --split-input-file | FileCheck %s

// Inference BatchNormalization after a conv, as the importer lowers it (mul by s[C,1,1], add t[C,1,1]):
// w'[m] = w[m] * s[m], b'[m] = b[m] * s[m] + t[m].
// CHECK-LABEL: func.func @conv_bn(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}-1.500000e+00]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32> loc("conv")
// CHECK-NEXT:    %1 = "flow.constant"() {value = dense<[2.000000e+00, 1.750000e+00]> : tensor<2xf32>} : () -> tensor<2xf32> loc("conv")
// CHECK-NEXT:    %2 = "flow.conv"(%arg0, %0, %1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32> loc("conv")
// CHECK-NEXT:    "func.return"(%2)
func.func @conv_bn(%arg0: tensor<1x1x2x2xf32>) -> (tensor<1x2x2x2xf32>) {
  %w = "flow.constant"() {value = dense<[[[[1.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %b = "flow.constant"() {value = dense<[0.5, -0.5]> : tensor<2xf32>} : () -> tensor<2xf32>
  %s = "flow.constant"() {value = dense<[[[2.0]], [[-0.5]]]> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %t = "flow.constant"() {value = dense<[[[1.0]], [[1.5]]]> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %0 = "flow.conv"(%arg0, %w, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32> loc("conv")
  %1 = "flow.mul"(%0, %s) : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32> loc("bn")
  %2 = "flow.add"(%1, %t) : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32> loc("bn")
  "func.return"(%2) : (tensor<1x2x2x2xf32>) -> ()
}

// -----

// No bias, [1, C, 1, 1] constants, constant first (c + y, c - y), a division and a scalar: all per
// channel. y = (4 - (conv * [1,2] + [1,1])) / 2  ->  w' = -w * [1,2] / 2, b' = (4 - 1) / 2.
// CHECK-LABEL: func.func @forms(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<{{\[\[\[\[}}-5.000000e-01]]], {{\[\[\[}}-2.000000e+00]]]]> : tensor<2x1x1x1xf32>}
// CHECK-NEXT:    %1 = "flow.constant"() {value = dense<1.500000e+00> : tensor<2xf32>}
// CHECK-NEXT:    %2 = "flow.conv"(%arg0, %0, %1)
// CHECK-NEXT:    "func.return"(%2)
func.func @forms(%arg0: tensor<1x1x2x2xf32>) -> (tensor<1x2x2x2xf32>) {
  %w = "flow.constant"() {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %s = "flow.constant"() {value = dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32>} : () -> tensor<1x2x1x1xf32>
  %one = "flow.constant"() {value = dense<1.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %four = "flow.constant"() {value = dense<4.0> : tensor<f32>} : () -> tensor<f32>
  %two = "flow.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.conv"(%arg0, %w) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %1 = "flow.mul"(%s, %0) : (tensor<1x2x1x1xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %2 = "flow.add"(%one, %1) : (tensor<1xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %3 = "flow.sub"(%four, %2) : (tensor<f32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %4 = "flow.div"(%3, %two) : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  "func.return"(%4) : (tensor<1x2x2x2xf32>) -> ()
}

// -----

// The conv's result has two uses: nothing is folded into it (the scale-shift pair is already minimal).
// CHECK-LABEL: func.func @multi_use(
// CHECK:         %[[C:.*]] = "flow.conv"(%arg0, %{{.*}}) {
// CHECK-NEXT:    %[[M:.*]] = "flow.mul"(%[[C]], %{{.*}})
// CHECK-NEXT:    %[[A:.*]] = "flow.add"(%[[M]], %{{.*}})
// CHECK-NEXT:    "func.return"(%[[A]], %[[C]])
func.func @multi_use(%arg0: tensor<1x1x2x2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %w = "flow.constant"() {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %s = "flow.constant"() {value = dense<[[[2.0]], [[3.0]]]> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %0 = "flow.conv"(%arg0, %w) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %1 = "flow.mul"(%0, %s) : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
  %2 = "flow.add"(%1, %s) : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
  "func.return"(%2, %0) : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> ()
}

// -----

// A constant that varies along a spatial dim is not per channel: the conv keeps its weights, and the
// two adds (x + a + b) compose into one.
// CHECK-LABEL: func.func @not_per_channel(
// CHECK:         %[[C:.*]] = "flow.conv"(%arg0, %{{.*}}) {
// CHECK-NEXT:    %[[K:.*]] = "flow.constant"() {value = dense<{{\[\[\[\[}}3.000000e+00, 5.000000e+00]]]]> : tensor<1x1x1x2xf32>}
// CHECK-NEXT:    %[[A:.*]] = "flow.add"(%[[C]], %[[K]])
// CHECK-NEXT:    "func.return"(%[[A]])
func.func @not_per_channel(%arg0: tensor<1x1x2x2xf32>) -> (tensor<1x2x2x2xf32>) {
  %w = "flow.constant"() {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %a = "flow.constant"() {value = dense<[[[[1.0, 2.0]]]]> : tensor<1x1x1x2xf32>} : () -> tensor<1x1x1x2xf32>
  %b = "flow.constant"() {value = dense<[2.0, 3.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = "flow.conv"(%arg0, %w) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %1 = "flow.add"(%0, %a) : (tensor<1x2x2x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x2x2x2xf32>
  %2 = "flow.add"(%1, %b) : (tensor<1x2x2x2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  "func.return"(%2) : (tensor<1x2x2x2xf32>) -> ()
}

// -----

// Weights that are not constant: only the bias-only prefix (the add) folds; the mul stays.
// CHECK-LABEL: func.func @runtime_weights(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<2.000000e+00> : tensor<2x1x1xf32>}
// CHECK-NEXT:    %1 = "flow.constant"() {value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>}
// CHECK-NEXT:    %2 = "flow.conv"(%arg0, %arg1, %1)
// CHECK-NEXT:    %3 = "flow.mul"(%2, %0)
// CHECK-NEXT:    "func.return"(%3)
func.func @runtime_weights(%arg0: tensor<1x1x2x2xf32>, %arg1: tensor<2x1x1x1xf32>) -> (tensor<1x2x2x2xf32>) {
  %s = "flow.constant"() {value = dense<2.0> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %t = "flow.constant"() {value = dense<[[[1.0]], [[2.0]]]> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %0 = "flow.conv"(%arg0, %arg1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %1 = "flow.add"(%0, %t) : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
  %2 = "flow.mul"(%1, %s) : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
  "func.return"(%2) : (tensor<1x2x2x2xf32>) -> ()
}

// -----

// Two BatchNormalizations in a row on a graph input (no conv): four ops compose into one mul and one
// add: ((x*2 + 1) * 3 + 4) = x*6 + 7.
// CHECK-LABEL: func.func @bn_bn(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<6.000000e+00> : tensor<f32>}
// CHECK-NEXT:    %1 = "flow.mul"(%arg0, %0)
// CHECK-NEXT:    %2 = "flow.constant"() {value = dense<7.000000e+00> : tensor<f32>}
// CHECK-NEXT:    %3 = "flow.add"(%1, %2)
// CHECK-NEXT:    "func.return"(%3)
func.func @bn_bn(%arg0: tensor<1x2x2x2xf32>) -> (tensor<1x2x2x2xf32>) {
  %a = "flow.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %b = "flow.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %c = "flow.constant"() {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
  %d = "flow.constant"() {value = dense<4.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.mul"(%arg0, %a) : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %1 = "flow.add"(%0, %b) : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %2 = "flow.mul"(%1, %c) : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %3 = "flow.add"(%2, %d) : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  "func.return"(%3) : (tensor<1x2x2x2xf32>) -> ()
}

// -----

// A minimal pair (mul then add) is left exactly as it is; so is an intermediate with a second use.
// CHECK-LABEL: func.func @minimal(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<2.000000e+00> : tensor<f32>}
// CHECK-NEXT:    %1 = "flow.mul"(%arg0, %0)
// CHECK-NEXT:    %2 = "flow.add"(%1, %0)
// CHECK-NEXT:    %3 = "flow.mul"(%2, %0)
// CHECK-NEXT:    %4 = "flow.add"(%3, %0)
// CHECK-NEXT:    "func.return"(%4, %2)
func.func @minimal(%arg0: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %c = "flow.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.mul"(%arg0, %c) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = "flow.add"(%0, %c) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %2 = "flow.mul"(%1, %c) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %3 = "flow.add"(%2, %c) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  "func.return"(%3, %1) : (tensor<4xf32>, tensor<4xf32>) -> ()
}

// -----

// A Linear (matmul with constant weights) then a per-column scale and shift (BatchNorm1d): the scale
// goes into the weights' columns, the shift stays as one add.
// CHECK-LABEL: func.func @linear_bn(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<{{\[\[}}2.000000e+00, -3.000000e+00], [6.000000e+00, 1.200000e+01]]> : tensor<2x2xf32>}
// CHECK-NEXT:    %1 = "flow.matmul"(%arg0, %0) : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32> loc("fc")
// CHECK-NEXT:    %2 = "flow.constant"() {value = dense<[1.000000e+00, 5.000000e-01]> : tensor<2xf32>}
// CHECK-NEXT:    %3 = "flow.add"(%1, %2) : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32> loc("bn")
// CHECK-NEXT:    "func.return"(%3)
func.func @linear_bn(%arg0: tensor<3x2xf32>) -> (tensor<3x2xf32>) {
  %w = "flow.constant"() {value = dense<[[1.0, -1.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %s = "flow.constant"() {value = dense<[2.0, 3.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %t = "flow.constant"() {value = dense<[1.0, 0.5]> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = "flow.matmul"(%arg0, %w) : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32> loc("fc")
  %1 = "flow.mul"(%0, %s) : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32> loc("bn")
  %2 = "flow.add"(%1, %t) : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32> loc("bn")
  "func.return"(%2) : (tensor<3x2xf32>) -> ()
}

// -----

// A matmul whose chain has no scale (a bias add) keeps its weights.
// CHECK-LABEL: func.func @linear_bias(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<{{\[\[}}1.000000e+00, -1.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>}
// CHECK-NEXT:    %1 = "flow.constant"() {value = dense<[2.000000e+00, 3.000000e+00]> : tensor<2xf32>}
// CHECK-NEXT:    %2 = "flow.matmul"(%arg0, %0)
// CHECK-NEXT:    %3 = "flow.add"(%2, %1)
// CHECK-NEXT:    "func.return"(%3)
func.func @linear_bias(%arg0: tensor<3x2xf32>) -> (tensor<3x2xf32>) {
  %w = "flow.constant"() {value = dense<[[1.0, -1.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %s = "flow.constant"() {value = dense<[2.0, 3.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = "flow.matmul"(%arg0, %w) : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %1 = "flow.add"(%0, %s) : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  "func.return"(%1) : (tensor<3x2xf32>) -> ()
}
