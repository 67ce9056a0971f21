// RUN: %flowc build %s --passes=fold_qdq --verify-each --emit ir --split-input-file | FileCheck %s

// conv -> relu -> quantize: one conv on the integers, its range narrowed by the relu to [zy, 255]; the f32
// bias becomes i32 in units of sx*sw[m] (1.0 / (0.5*0.25) = 8, -0.3125 / 0.0625 = -5, 2.6 / 0.25 = 10.4 -> 10);
// the scast to the storage type reads the narrowed result directly.
// CHECK-LABEL: func.func @conv_relu(
// CHECK-NEXT:    %0 = "flow.constant"() {{.*}} -> tensor<3x2x1x2x!quant.uniform<i8:f32:0, {2.500000e-01,1.250000e-01,5.000000e-01}>>
// CHECK-NEXT:    %1 = "flow.constant"() {value = dense<[8, -5, 10]> : tensor<3xi32>}
// CHECK-NEXT:    %2 = "flow.conv"(%arg0, %0, %1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 0, 0, 1>, qtype = !quant.uniform<u8<7:255>:f32, 2.500000e-01:7>, strides = array<i64: 2, 2>} : (tensor<1x2x5x5x!quant.uniform<u8:f32, 5.000000e-01:10>>, tensor<3x2x1x2x!quant.uniform<i8:f32:0, {2.500000e-01,1.250000e-01,5.000000e-01}>>, tensor<3xi32>) -> tensor<1x3x3x3x!quant.uniform<u8<7:255>:f32, 2.500000e-01:7>> loc("conv")
// CHECK-NEXT:    %3 = "flow.scast"(%2) {qtype = ui8}
// CHECK-NEXT:    "func.return"(%3)
func.func @conv_relu(%arg0: tensor<1x2x5x5x!quant.uniform<u8:f32, 0.5:10>>) -> (tensor<1x3x3x3xui8>) {
  %w = "flow.constant"() {value = dense<[[[[1, 2]], [[3, 4]]], [[[-1, 0]], [[2, -2]]], [[[5, 5]], [[-5, -5]]]]> : tensor<3x2x1x2xi8>} : () -> tensor<3x2x1x2x!quant.uniform<i8:f32:0, {0.25, 0.125, 0.5}>>
  %b = "flow.constant"() {value = dense<[1.0, -0.3125, 2.6]> : tensor<3xf32>} : () -> tensor<3xf32>
  %0 = "flow.dequantize"(%arg0) : (tensor<1x2x5x5x!quant.uniform<u8:f32, 0.5:10>>) -> tensor<1x2x5x5xf32>
  %1 = "flow.dequantize"(%w) : (tensor<3x2x1x2x!quant.uniform<i8:f32:0, {0.25, 0.125, 0.5}>>) -> tensor<3x2x1x2xf32>
  %2 = "flow.conv"(%0, %1, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 0, 0, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x5x5xf32>, tensor<3x2x1x2xf32>, tensor<3xf32>) -> tensor<1x3x3x3xf32> loc("conv")
  %3 = "flow.relu"(%2) : (tensor<1x3x3x3xf32>) -> tensor<1x3x3x3xf32>
  %4 = "flow.quantize"(%3) {qtype = !quant.uniform<u8:f32, 0.25:7>} : (tensor<1x3x3x3xf32>) -> tensor<1x3x3x3x!quant.uniform<u8:f32, 0.25:7>>
  %5 = "flow.scast"(%4) {qtype = ui8} : (tensor<1x3x3x3x!quant.uniform<u8:f32, 0.25:7>>) -> tensor<1x3x3x3xui8>
  "func.return"(%5) : (tensor<1x3x3x3xui8>) -> ()
}

// -----

// ReLU6 as max(., 0) then min(., 6) (ONNX Clip), an i8 result returned as the quantised type: the range is
// [Q(0), Q(6)] = [-4, 56]; the return keeps its type through a view (scast to storage and back).
// CHECK-LABEL: func.func @conv_clip(
// CHECK:         %1 = "flow.conv"(%arg0, %0) {{{.*}}qtype = !quant.uniform<i8<-4:56>:f32, 1.000000e-01:-4>{{.*}}} : {{.*}} -> tensor<1x1x3x3x!quant.uniform<i8<-4:56>:f32, 1.000000e-01:-4>>
// CHECK-NEXT:    %2 = "flow.scast"(%1) {qtype = i8}
// CHECK-NEXT:    %3 = "flow.scast"(%2) {qtype = !quant.uniform<i8:f32, 1.000000e-01:-4>}
// CHECK-NEXT:    "func.return"(%3)
func.func @conv_clip(%arg0: tensor<1x1x3x3x!quant.uniform<i8:f32, 0.1:-2>>) -> (tensor<1x1x3x3x!quant.uniform<i8:f32, 0.1:-4>>) {
  %w = "flow.constant"() {value = dense<[[[[3]]]]> : tensor<1x1x1x1xi8>} : () -> tensor<1x1x1x1x!quant.uniform<i8:f32, 0.5>>
  %lo = "flow.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %hi = "flow.constant"() {value = dense<6.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.dequantize"(%arg0) : (tensor<1x1x3x3x!quant.uniform<i8:f32, 0.1:-2>>) -> tensor<1x1x3x3xf32>
  %1 = "flow.dequantize"(%w) : (tensor<1x1x1x1x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x1x1x1xf32>
  %2 = "flow.conv"(%0, %1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x3x3xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x3x3xf32>
  %3 = "flow.max"(%2, %lo) : (tensor<1x1x3x3xf32>, tensor<f32>) -> tensor<1x1x3x3xf32>
  %4 = "flow.min"(%3, %hi) : (tensor<1x1x3x3xf32>, tensor<f32>) -> tensor<1x1x3x3xf32>
  %5 = "flow.quantize"(%4) {qtype = !quant.uniform<i8:f32, 0.1:-4>} : (tensor<1x1x3x3xf32>) -> tensor<1x1x3x3x!quant.uniform<i8:f32, 0.1:-4>>
  "func.return"(%5) : (tensor<1x1x3x3x!quant.uniform<i8:f32, 0.1:-4>>) -> ()
}

// -----

// matmul + [N] bias without a quantize after it: the chain ends here, qtype f32; the bias add is absorbed
// (0.5 / (0.25*0.5) = 4, -1 / (0.25*0.25) = -16), the relu after it stays an f32 op.
// CHECK-LABEL: func.func @matmul_f32(
// CHECK:         %1 = "flow.constant"() {value = dense<[4, -16]> : tensor<2xi32>}
// CHECK-NEXT:    %2 = "flow.matmul"(%arg0, %0, %1) {qtype = f32} : (tensor<2x3x!quant.uniform<u8:f32, 2.500000e-01:128>>, tensor<3x2x!quant.uniform<i8:f32:1, {5.000000e-01,2.500000e-01}>>, tensor<2xi32>) -> tensor<2x2xf32>
// CHECK-NEXT:    %3 = "flow.relu"(%2)
// CHECK-NEXT:    "func.return"(%3)
func.func @matmul_f32(%arg0: tensor<2x3x!quant.uniform<u8:f32, 0.25:128>>) -> (tensor<2x2xf32>) {
  %w = "flow.constant"() {value = dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi8>} : () -> tensor<3x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>
  %b = "flow.constant"() {value = dense<[0.5, -1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = "flow.dequantize"(%arg0) : (tensor<2x3x!quant.uniform<u8:f32, 0.25:128>>) -> tensor<2x3xf32>
  %1 = "flow.dequantize"(%w) : (tensor<3x2x!quant.uniform<i8:f32:1, {0.5, 0.25}>>) -> tensor<3x2xf32>
  %2 = "flow.matmul"(%0, %1) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %3 = "flow.add"(%2, %b) : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %4 = "flow.relu"(%3) : (tensor<2x2xf32>) -> tensor<2x2xf32>
  "func.return"(%4) : (tensor<2x2xf32>) -> ()
}

// -----

// An i32 bias written as dequantize(constant i32) (onnxruntime's QDQ form): its integers are kept when its
// scale is sx*sw (0.125), and requantised otherwise (scale 0.25: 2 * 0.25 / 0.125 = 4).
// CHECK-LABEL: func.func @bias_i32(
// CHECK:         %1 = "flow.constant"() {value = dense<[7]> : tensor<1xi32>}
// CHECK-NEXT:    %2 = "flow.conv"(%arg0, %0, %1) {{{.*}}qtype = f32
// CHECK-NEXT:    %3 = "flow.constant"() {value = dense<[4]> : tensor<1xi32>}
// CHECK-NEXT:    %4 = "flow.conv"(%arg0, %0, %3) {{{.*}}qtype = f32
func.func @bias_i32(%arg0: tensor<1x1x2x2x!quant.uniform<u8:f32, 0.25:0>>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) {
  %w = "flow.constant"() {value = dense<[[[[3]]]]> : tensor<1x1x1x1xi8>} : () -> tensor<1x1x1x1x!quant.uniform<i8:f32, 0.5>>
  %b1 = "flow.constant"() {value = dense<[7]> : tensor<1xi32>} : () -> tensor<1x!quant.uniform<i32:f32, 0.125>>
  %b2 = "flow.constant"() {value = dense<[2]> : tensor<1xi32>} : () -> tensor<1x!quant.uniform<i32:f32, 0.25>>
  %0 = "flow.dequantize"(%arg0) : (tensor<1x1x2x2x!quant.uniform<u8:f32, 0.25:0>>) -> tensor<1x1x2x2xf32>
  %1 = "flow.dequantize"(%w) : (tensor<1x1x1x1x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x1x1x1xf32>
  %2 = "flow.dequantize"(%b1) : (tensor<1x!quant.uniform<i32:f32, 0.125>>) -> tensor<1xf32>
  %3 = "flow.dequantize"(%b2) : (tensor<1x!quant.uniform<i32:f32, 0.25>>) -> tensor<1xf32>
  %4 = "flow.conv"(%0, %1, %2) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %5 = "flow.conv"(%0, %1, %3) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  "func.return"(%4, %5) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> ()
}

// -----

// Pass-through ops between a dequantize and a quantize of the same type run on the integers, and
// quantize(dequantize(q)) of q's type is q: reshape, max_pool and concat of two values of one type.
// CHECK-LABEL: func.func @pass_through(
// CHECK-NEXT:    %0 = "flow.max_pool"(%arg0) {{.*}} -> tensor<1x2x2x2x!quant.uniform<u8:f32, 1.000000e-01:5>>
// CHECK-NEXT:    %1 = "flow.concat"(%0, %arg1) {{.*}} -> tensor<1x4x2x2x!quant.uniform<u8:f32, 1.000000e-01:5>>
// CHECK-NEXT:    %2 = "flow.reshape"(%1) {{.*}} -> tensor<1x16x!quant.uniform<u8:f32, 1.000000e-01:5>>
// CHECK-NEXT:    "func.return"(%2)
func.func @pass_through(%arg0: tensor<1x2x4x4x!quant.uniform<u8:f32, 0.1:5>>, %arg1: tensor<1x2x2x2x!quant.uniform<u8:f32, 0.1:5>>) -> (tensor<1x16x!quant.uniform<u8:f32, 0.1:5>>) {
  %0 = "flow.dequantize"(%arg0) : (tensor<1x2x4x4x!quant.uniform<u8:f32, 0.1:5>>) -> tensor<1x2x4x4xf32>
  %1 = "flow.max_pool"(%0) {ceil_mode = 0 : i64, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, storage_order = 0 : i64, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %2 = "flow.dequantize"(%arg1) : (tensor<1x2x2x2x!quant.uniform<u8:f32, 0.1:5>>) -> tensor<1x2x2x2xf32>
  %3 = "flow.concat"(%1, %2) {axis = 1 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x4x2x2xf32>
  %4 = "flow.reshape"(%3) {shape = array<i64: 1, 16>} : (tensor<1x4x2x2xf32>) -> tensor<1x16xf32>
  %5 = "flow.quantize"(%4) {qtype = !quant.uniform<u8:f32, 0.1:5>} : (tensor<1x16xf32>) -> tensor<1x16x!quant.uniform<u8:f32, 0.1:5>>
  "func.return"(%5) : (tensor<1x16x!quant.uniform<u8:f32, 0.1:5>>) -> ()
}

// -----

// Near misses, left as they are: a concat of two types, a quantize to another scale, a conv whose result
// has two users (it becomes qtype f32; the relu and the quantize stay f32 ops), a per-axis input, a weight
// that is not a constant, a bias that is not a constant, and a conv that already has an epilogue.
// CHECK-LABEL: func.func @near_misses(
// CHECK:         %[[D0:[0-9]+]] = "flow.dequantize"(%arg0)
// CHECK-NEXT:    %[[D1:[0-9]+]] = "flow.dequantize"(%arg1)
// CHECK-NEXT:    "flow.concat"(%[[D0]], %[[D1]])
// CHECK-NEXT:    "flow.quantize"(%[[D1]]) {qtype = !quant.uniform<u8:f32, 3.000000e-01:5>}
// CHECK:         %[[TWO:[0-9]+]] = "flow.conv"(%arg0, %{{[0-9]+}}) {{{.*}}qtype = f32{{.*}}loc("two_users")
// CHECK-NEXT:    %[[R:[0-9]+]] = "flow.relu"(%[[TWO]])
// CHECK-NEXT:    "flow.quantize"(%[[R]])
// CHECK:         "flow.conv"({{.*}}) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x2x2xf32> loc("per_axis_input")
// CHECK:         "flow.conv"({{.*}}) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : {{.*}} loc("weight_not_constant")
// CHECK-NEXT:    "flow.conv"({{.*}}) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : {{.*}} loc("bias_not_constant")
// CHECK-NEXT:    "flow.conv"({{.*}}) {dilations = array<i64: 1, 1>, epilogue = "relu x", group = 1 : i64, {{.*}} loc("epilogue")
func.func @near_misses(%arg0: tensor<1x1x2x2x!quant.uniform<u8:f32, 0.1:5>>, %arg1: tensor<1x1x2x2x!quant.uniform<u8:f32, 0.2:5>>, %arg2: tensor<1x1x1x1x!quant.uniform<i8:f32, 0.5>>, %arg3: tensor<1x2x2x2x!quant.uniform<u8:f32:1, {0.1, 0.2}>>, %arg4: tensor<1xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x1x2x2x!quant.uniform<u8:f32, 0.3:5>>, tensor<1x1x2x2xf32>, tensor<1x1x2x2x!quant.uniform<u8:f32, 0.1:0>>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) {
  %w = "flow.constant"() {value = dense<[[[[3]]]]> : tensor<1x1x1x1xi8>} : () -> tensor<1x1x1x1x!quant.uniform<i8:f32, 0.5>>
  %w2 = "flow.constant"() {value = dense<[[[[3]], [[1]]]]> : tensor<1x2x1x1xi8>} : () -> tensor<1x2x1x1x!quant.uniform<i8:f32, 0.5>>
  %0 = "flow.dequantize"(%arg0) : (tensor<1x1x2x2x!quant.uniform<u8:f32, 0.1:5>>) -> tensor<1x1x2x2xf32>
  %1 = "flow.dequantize"(%arg1) : (tensor<1x1x2x2x!quant.uniform<u8:f32, 0.2:5>>) -> tensor<1x1x2x2xf32>
  %2 = "flow.concat"(%0, %1) {axis = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32>
  %3 = "flow.quantize"(%1) {qtype = !quant.uniform<u8:f32, 0.3:5>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2x!quant.uniform<u8:f32, 0.3:5>>
  %4 = "flow.dequantize"(%w) : (tensor<1x1x1x1x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x1x1x1xf32>
  %5 = "flow.conv"(%0, %4) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32> loc("two_users")
  %6 = "flow.relu"(%5) : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %7 = "flow.quantize"(%6) {qtype = !quant.uniform<u8:f32, 0.1:0>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2x!quant.uniform<u8:f32, 0.1:0>>
  %8 = "flow.dequantize"(%arg3) : (tensor<1x2x2x2x!quant.uniform<u8:f32:1, {0.1, 0.2}>>) -> tensor<1x2x2x2xf32>
  %9 = "flow.dequantize"(%w2) : (tensor<1x2x1x1x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x2x1x1xf32>
  %10 = "flow.conv"(%8, %9) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x2x2xf32> loc("per_axis_input")
  %11 = "flow.dequantize"(%arg2) : (tensor<1x1x1x1x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x1x1x1xf32>
  %12 = "flow.conv"(%0, %11) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32> loc("weight_not_constant")
  %13 = "flow.conv"(%0, %4, %arg4) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32> loc("bias_not_constant")
  %14 = "flow.conv"(%0, %4, %arg4) {dilations = array<i64: 1, 1>, epilogue = "relu x", group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32> loc("epilogue")
  "func.return"(%2, %3, %5, %7, %10, %12, %13, %14) : (tensor<1x2x2x2xf32>, tensor<1x1x2x2x!quant.uniform<u8:f32, 0.3:5>>, tensor<1x1x2x2xf32>, tensor<1x1x2x2x!quant.uniform<u8:f32, 0.1:0>>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> ()
}

// -----

// A Gemm weight [N, K] with N = 1 (transB): eliminate_transpose makes its transpose a reshape, which the
// weight is read through too (the per-axis parameter moves to the [K, N] weight's dim 1).
// CHECK-LABEL: func.func @reshaped_weight(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<{{\[}}[1], [2], [3], [4], [5]]> : tensor<5x1xi8>} : () -> tensor<5x1x!quant.uniform<i8:f32:1, {2.500000e-01}>>
// CHECK-NEXT:    %1 = "flow.matmul"(%arg0, %0) {qtype = f32}
// CHECK-NEXT:    "func.return"(%1)
func.func @reshaped_weight(%arg0: tensor<3x5x!quant.uniform<u8:f32, 0.5:2>>) -> (tensor<3x1xf32>) {
  %w = "flow.constant"() {value = dense<[[1, 2, 3, 4, 5]]> : tensor<1x5xi8>} : () -> tensor<1x5x!quant.uniform<i8:f32:0, {0.25}>>
  %0 = "flow.dequantize"(%arg0) : (tensor<3x5x!quant.uniform<u8:f32, 0.5:2>>) -> tensor<3x5xf32>
  %1 = "flow.dequantize"(%w) : (tensor<1x5x!quant.uniform<i8:f32:0, {0.25}>>) -> tensor<1x5xf32>
  %2 = "flow.reshape"(%1) {shape = array<i64: 5, 1>} : (tensor<1x5xf32>) -> tensor<5x1xf32>
  %3 = "flow.matmul"(%0, %2) : (tensor<3x5xf32>, tensor<5x1xf32>) -> tensor<3x1xf32>
  "func.return"(%3) : (tensor<3x1xf32>) -> ()
}

// -----

// A global average pool between dequantize and quantize is a mean of the integers (ops.def), its result the
// quantize's type; the dequantize, now unused, goes.
// CHECK-LABEL: func.func @mean(
// CHECK-NEXT:    %0 = "flow.reduce_mean"(%arg0) {axes = array<i64: 2, 3>, keepdims = 1 : i64, qtype = !quant.uniform<i8:f32, 2.500000e-01:-3>} : (tensor<1x3x5x7x!quant.uniform<u8:f32, 5.000000e-01:10>>) -> tensor<1x3x1x1x!quant.uniform<i8:f32, 2.500000e-01:-3>> loc("gap")
// CHECK-NEXT:    "func.return"(%0)
func.func @mean(%arg0: tensor<1x3x5x7x!quant.uniform<u8:f32, 0.5:10>>) -> (tensor<1x3x1x1x!quant.uniform<i8:f32, 0.25:-3>>) {
  %0 = "flow.dequantize"(%arg0) : (tensor<1x3x5x7x!quant.uniform<u8:f32, 0.5:10>>) -> tensor<1x3x5x7xf32>
  %1 = "flow.reduce_mean"(%0) {axes = array<i64: 2, 3>, keepdims = 1 : i64} : (tensor<1x3x5x7xf32>) -> tensor<1x3x1x1xf32> loc("gap")
  %2 = "flow.quantize"(%1) {qtype = !quant.uniform<i8:f32, 0.25:-3>} : (tensor<1x3x1x1xf32>) -> tensor<1x3x1x1x!quant.uniform<i8:f32, 0.25:-3>>
  "func.return"(%2) : (tensor<1x3x1x1x!quant.uniform<i8:f32, 0.25:-3>>) -> ()
}

// -----

// Means that stay in f32: one whose f32 result has another user, and one of per-axis quantised values.
// CHECK-LABEL: func.func @mean_near_misses(
// CHECK-NOT:     "flow.reduce_mean"(%arg
// CHECK:         %1 = "flow.reduce_mean"(%0) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>)
// CHECK-NOT:     "flow.reduce_mean"(%arg
// CHECK:         %4 = "flow.reduce_mean"(%3) {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>)
func.func @mean_near_misses(%arg0: tensor<2x3x4x!quant.uniform<u8:f32, 0.5:10>>, %arg1: tensor<2x3x4x!quant.uniform<u8:f32:1, {0.5, 0.25, 0.125}>>) -> (tensor<2x4x!quant.uniform<u8:f32, 0.25>>, tensor<2x4xf32>, tensor<2x3x!quant.uniform<u8:f32, 0.25>>) {
  %0 = "flow.dequantize"(%arg0) : (tensor<2x3x4x!quant.uniform<u8:f32, 0.5:10>>) -> tensor<2x3x4xf32>
  %1 = "flow.reduce_mean"(%0) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %2 = "flow.quantize"(%1) {qtype = !quant.uniform<u8:f32, 0.25>} : (tensor<2x4xf32>) -> tensor<2x4x!quant.uniform<u8:f32, 0.25>>
  %3 = "flow.dequantize"(%arg1) : (tensor<2x3x4x!quant.uniform<u8:f32:1, {0.5, 0.25, 0.125}>>) -> tensor<2x3x4xf32>
  %4 = "flow.reduce_mean"(%3) {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %5 = "flow.quantize"(%4) {qtype = !quant.uniform<u8:f32, 0.25>} : (tensor<2x3xf32>) -> tensor<2x3x!quant.uniform<u8:f32, 0.25>>
  "func.return"(%2, %1, %5) : (tensor<2x4x!quant.uniform<u8:f32, 0.25>>, tensor<2x4xf32>, tensor<2x3x!quant.uniform<u8:f32, 0.25>>) -> ()
}

// -----

// Data moves whose operands are dequantized on one grid (storage, scale, zero point) but with different
// ranges (a ReLU-narrowed result beside a plain one) move the integers, those of the narrower range through a
// view of the union's type; and a moved result read by several data moves (a channel split after a shuffle)
// gives each of them a dequantize of its own, so that they move the integers too.
// CHECK-LABEL: func.func @moves(
// CHECK-NEXT:    %0 = "flow.transpose"(%arg0) {{.*}} -> tensor<1x2x2x2x!quant.uniform<u8:f32, 5.000000e-01:10>>
// CHECK-DAG:     %[[S1:.*]] = "flow.slice"(%0) {{.*}} -> tensor<1x1x2x2x!quant.uniform<u8:f32, 5.000000e-01:10>>
// CHECK-DAG:     %[[S2:.*]] = "flow.slice"(%0) {{.*}} -> tensor<1x1x2x2x!quant.uniform<u8:f32, 5.000000e-01:10>>
// CHECK-DAG:     %[[V0:.*]] = "flow.scast"(%arg1) {qtype = ui8}
// CHECK-DAG:     %[[V:.*]] = "flow.scast"(%[[V0]]) {qtype = !quant.uniform<u8:f32, 5.000000e-01:10>}
// CHECK:         %[[CAT:.*]] = "flow.concat"(%arg0, %[[V]]) {{.*}} -> tensor<1x4x2x2x!quant.uniform<u8:f32, 5.000000e-01:10>>
// CHECK-NOT:     "flow.transpose"
// CHECK-NOT:     "flow.slice"
// CHECK-NOT:     "flow.concat"
// CHECK:         "func.return"
func.func @moves(%arg0: tensor<1x2x2x2x!quant.uniform<u8:f32, 0.5:10>>, %arg1: tensor<1x2x2x2x!quant.uniform<u8<10:255>:f32, 0.5:10>>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x4x2x2xf32>) {
  %d = "flow.dequantize"(%arg0) : (tensor<1x2x2x2x!quant.uniform<u8:f32, 0.5:10>>) -> tensor<1x2x2x2xf32>
  %t = "flow.transpose"(%d) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %s1 = "flow.slice"(%t) {ends = array<i64: 1, 1, 2, 2>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32>
  %s2 = "flow.slice"(%t) {ends = array<i64: 1, 2, 2, 2>, starts = array<i64: 0, 1, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32>
  %d3 = "flow.dequantize"(%arg0) : (tensor<1x2x2x2x!quant.uniform<u8:f32, 0.5:10>>) -> tensor<1x2x2x2xf32>
  %d2 = "flow.dequantize"(%arg1) : (tensor<1x2x2x2x!quant.uniform<u8<10:255>:f32, 0.5:10>>) -> tensor<1x2x2x2xf32>
  %cat = "flow.concat"(%d3, %d2) {axis = 1 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x4x2x2xf32>
  "func.return"(%s1, %s2, %cat) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x4x2x2xf32>) -> ()
}

// -----

// A nearest resize moves elements (sizes 9x11 from 5x6, as a feature pyramid upsamples): it sinks like the
// other pass-through ops; a linear one computes and stays in float.
// CHECK-LABEL: func.func @resize(
// CHECK-NEXT:    %0 = "flow.resize"(%arg0) {{.*}}mode = "nearest"{{.*}} -> tensor<1x2x9x11x!quant.uniform<u8:f32, 5.000000e-01:10>>
// CHECK-NEXT:    %1 = "flow.dequantize"(%0)
// CHECK-NEXT:    %2 = "flow.dequantize"(%arg0)
// CHECK-NEXT:    %3 = "flow.resize"(%2) {{.*}}mode = "linear"{{.*}} -> tensor<1x2x9x11xf32>
func.func @resize(%arg0: tensor<1x2x5x6x!quant.uniform<u8:f32, 0.5:10>>) -> (tensor<1x2x9x11xf32>, tensor<1x2x9x11xf32>) {
  %d = "flow.dequantize"(%arg0) : (tensor<1x2x5x6x!quant.uniform<u8:f32, 0.5:10>>) -> tensor<1x2x5x6xf32>
  %n = "flow.resize"(%d) {coordinate_transformation_mode = "asymmetric", cubic_coeff_a = -7.500000e-01 : f32, exclude_outside = 0 : i64, extrapolation_value = 0.000000e+00 : f32, mode = "nearest", nearest_mode = "floor", roi = array<f32>, scales = array<f32>, sizes = array<i64: 1, 2, 9, 11>} : (tensor<1x2x5x6xf32>) -> tensor<1x2x9x11xf32>
  %d2 = "flow.dequantize"(%arg0) : (tensor<1x2x5x6x!quant.uniform<u8:f32, 0.5:10>>) -> tensor<1x2x5x6xf32>
  %l = "flow.resize"(%d2) {coordinate_transformation_mode = "half_pixel", cubic_coeff_a = -7.500000e-01 : f32, exclude_outside = 0 : i64, extrapolation_value = 0.000000e+00 : f32, mode = "linear", nearest_mode = "floor", roi = array<f32>, scales = array<f32>, sizes = array<i64: 1, 2, 9, 11>} : (tensor<1x2x5x6xf32>) -> tensor<1x2x9x11xf32>
  "func.return"(%n, %l) : (tensor<1x2x9x11xf32>, tensor<1x2x9x11xf32>) -> ()
}
