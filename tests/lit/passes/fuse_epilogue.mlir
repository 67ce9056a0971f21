// RUN: %flowc build %s --passes=fuse_epilogue --verify-each --emit ir --split-input-file | FileCheck %s
// RUN: %flowc build %s --passes=fuse_epilogue --emit ir --split-input-file -o %t.mlir
// RUN: %flowc build %t.mlir --passes=fuse_epilogue --emit ir --split-input-file | FileCheck %s

// Round trip and idempotence: the printed epilogue parses back, and a second run changes nothing.

// ResNet block tail: conv -> add(residual) -> relu. The conv had no bias: it gets a zero one, since the
// extra operand must be operand 3.
// CHECK-LABEL: func.func @resnet_tail(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<{{\[\[\[\[}}1.000000e+00]]], {{\[\[\[}}2.000000e+00]]]]> : tensor<2x1x1x1xf32>}
// CHECK-NEXT:    %1 = "flow.constant"() {value = dense<0.000000e+00> : tensor<2xf32>}
// CHECK-NEXT:    %2 = "flow.conv"(%arg0, %0, %1, %arg1) {dilations = array<i64: 1, 1>, epilogue = "add x o3; relu s0", group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> loc("conv")
// CHECK-NEXT:    "func.return"(%2)
func.func @resnet_tail(%arg0: tensor<1x2x3x3xf32>, %arg1: tensor<1x2x3x3xf32>) -> (tensor<1x2x3x3xf32>) {
  %w = "flow.constant"() {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %0 = "flow.conv"(%arg0, %w) {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32> loc("conv")
  %1 = "flow.add"(%0, %arg1) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %2 = "flow.relu"(%1) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  "func.return"(%2) : (tensor<1x2x3x3xf32>) -> ()
}

// -----

// A per-channel constant add right after a conv becomes its bias (added to the old one); then relu.
// CHECK-LABEL: func.func @channel_bias(
// CHECK:         %[[B:.*]] = "flow.constant"() {value = dense<[1.500000e+00, 1.750000e+00]> : tensor<2xf32>}
// CHECK-NEXT:    %[[C:.*]] = "flow.conv"(%arg0, %{{.*}}, %[[B]]) {dilations = array<i64: 1, 1>, epilogue = "relu x", group = 1 : i64
// CHECK-NOT:     flow.add
// CHECK:         "func.return"(%[[C]])
func.func @channel_bias(%arg0: tensor<1x1x2x2xf32>) -> (tensor<1x2x2x2xf32>) {
  %w = "flow.constant"() {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %b = "flow.constant"() {value = dense<[0.5, -0.25]> : tensor<2xf32>} : () -> tensor<2xf32>
  %c = "flow.constant"() {value = dense<[[[1.0]], [[2.0]]]> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %0 = "flow.conv"(%arg0, %w, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %1 = "flow.add"(%c, %0) : (tensor<2x1x1xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %2 = "flow.relu"(%1) : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  "func.return"(%2) : (tensor<1x2x2x2xf32>) -> ()
}

// -----

// MobileNet's ReLU6 (Clip lowered to max then min with scalar constants): both scalars become extras.
// CHECK-LABEL: func.func @clip(
// CHECK:         %[[C:.*]] = "flow.conv"(%arg0, %arg1, %arg2, %[[LO:.*]], %[[HI:.*]]) {dilations = array<i64: 1, 1>, epilogue = "max x o3; min s0 o4", group = 1 : i64
// CHECK-NEXT:    "func.return"(%[[C]])
func.func @clip(%arg0: tensor<1x3x4x4xf32>, %arg1: tensor<8x3x3x3xf32>, %arg2: tensor<8xf32>) -> (tensor<1x8x4x4xf32>) {
  %lo = "flow.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %hi = "flow.constant"() {value = dense<6.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.conv"(%arg0, %arg1, %arg2) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x3x4x4xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32>
  %1 = "flow.max"(%0, %lo) : (tensor<1x8x4x4xf32>, tensor<f32>) -> tensor<1x8x4x4xf32>
  %2 = "flow.min"(%1, %hi) : (tensor<1x8x4x4xf32>, tensor<f32>) -> tensor<1x8x4x4xf32>
  "func.return"(%2) : (tensor<1x8x4x4xf32>) -> ()
}

// -----

// Linear + ReLU: matmul, bias add [N], relu.
// CHECK-LABEL: func.func @linear_relu(
// CHECK-NEXT:    %0 = "flow.matmul"(%arg0, %arg1, %arg2) {epilogue = "add x o2; relu s0"} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    "func.return"(%0)
func.func @linear_relu(%arg0: tensor<4x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16xf32>) -> (tensor<4x16xf32>) {
  %0 = "flow.matmul"(%arg0, %arg1) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "flow.add"(%0, %arg2) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = "flow.relu"(%1) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  "func.return"(%2) : (tensor<4x16xf32>) -> ()
}

// -----

// SiLU: x is used twice (sigmoid and mul); both users join, so the region is closed at the mul.
// CHECK-LABEL: func.func @silu(
// CHECK-NEXT:    %0 = "flow.matmul"(%arg0, %arg1, %arg2) {epilogue = "add x o2; sigmoid s0; mul s0 s1"}
// CHECK-NEXT:    "func.return"(%0)
func.func @silu(%arg0: tensor<4x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16xf32>) -> (tensor<4x16xf32>) {
  %0 = "flow.matmul"(%arg0, %arg1) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "flow.add"(%0, %arg2) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = "flow.sigmoid"(%1) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %3 = "flow.mul"(%1, %2) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  "func.return"(%3) : (tensor<4x16xf32>) -> ()
}

// -----

// GELU as the importer lowers it: x * 0.5 * (1 + erf(x * (1 / sqrt 2))), three scalar extras.
// CHECK-LABEL: func.func @gelu(
// CHECK:         %[[M:.*]] = "flow.matmul"(%arg0, %arg1, %[[R:.*]], %[[H:.*]], %[[O:.*]]) {epilogue = "mul x o2; erf s0; mul x o3; add s1 o4; mul s2 s3"}
// CHECK-NEXT:    "func.return"(%[[M]])
func.func @gelu(%arg0: tensor<2x3x8xf32>, %arg1: tensor<8x16xf32>) -> (tensor<2x3x16xf32>) {
  %r = "flow.constant"() {value = dense<0.707106769> : tensor<f32>} : () -> tensor<f32>
  %h = "flow.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %o = "flow.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.matmul"(%arg0, %arg1) : (tensor<2x3x8xf32>, tensor<8x16xf32>) -> tensor<2x3x16xf32>
  %1 = "flow.mul"(%0, %r) : (tensor<2x3x16xf32>, tensor<f32>) -> tensor<2x3x16xf32>
  %2 = "flow.erf"(%1) : (tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
  %3 = "flow.mul"(%0, %h) : (tensor<2x3x16xf32>, tensor<f32>) -> tensor<2x3x16xf32>
  %4 = "flow.add"(%2, %o) : (tensor<2x3x16xf32>, tensor<f32>) -> tensor<2x3x16xf32>
  %5 = "flow.mul"(%3, %4) : (tensor<2x3x16xf32>, tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
  "func.return"(%5) : (tensor<2x3x16xf32>) -> ()
}

// -----

// HardSwish: x * max(min(x * (1/6) + 0.5, 1), 0).
// CHECK-LABEL: func.func @hardswish(
// CHECK:         "flow.conv"(%arg0, %arg1, %arg2, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {dilations = array<i64: 1, 1>, epilogue = "mul x o3; add s0 o4; min s1 o5; max s2 o6; mul x s3", group = 1 : i64
// CHECK-NOT:     "flow.mul"
func.func @hardswish(%arg0: tensor<1x3x4x4xf32>, %arg1: tensor<8x3x1x1xf32>, %arg2: tensor<8xf32>) -> (tensor<1x8x4x4xf32>) {
  %a = "flow.constant"() {value = dense<0.166666672> : tensor<f32>} : () -> tensor<f32>
  %b = "flow.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %one = "flow.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %zero = "flow.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.conv"(%arg0, %arg1, %arg2) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x4x4xf32>, tensor<8x3x1x1xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32>
  %1 = "flow.mul"(%0, %a) : (tensor<1x8x4x4xf32>, tensor<f32>) -> tensor<1x8x4x4xf32>
  %2 = "flow.add"(%1, %b) : (tensor<1x8x4x4xf32>, tensor<f32>) -> tensor<1x8x4x4xf32>
  %3 = "flow.min"(%2, %one) : (tensor<1x8x4x4xf32>, tensor<f32>) -> tensor<1x8x4x4xf32>
  %4 = "flow.max"(%3, %zero) : (tensor<1x8x4x4xf32>, tensor<f32>) -> tensor<1x8x4x4xf32>
  %5 = "flow.mul"(%0, %4) : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  "func.return"(%5) : (tensor<1x8x4x4xf32>) -> ()
}

// -----

// The residual is computed after the conv (a downsample branch): the fused conv goes where the add was,
// after the residual's producer.
// CHECK-LABEL: func.func @late_residual(
// CHECK-NEXT:    %0 = "flow.relu"(%arg1)
// CHECK-NEXT:    %1 = "flow.matmul"(%arg0, %arg2, %0) {epilogue = "add x o2"}
// CHECK-NEXT:    "func.return"(%1)
func.func @late_residual(%arg0: tensor<4x8xf32>, %arg1: tensor<4x16xf32>, %arg2: tensor<8x16xf32>) -> (tensor<4x16xf32>) {
  %0 = "flow.matmul"(%arg0, %arg2) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "flow.relu"(%arg1) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %2 = "flow.add"(%0, %1) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  "func.return"(%2) : (tensor<4x16xf32>) -> ()
}

// -----

// An intermediate with a use outside the region ends it: the add is fused, the relu stays.
// CHECK-LABEL: func.func @multi_use_intermediate(
// CHECK-NEXT:    %0 = "flow.matmul"(%arg0, %arg1, %arg2) {epilogue = "add x o2"}
// CHECK-NEXT:    %1 = "flow.relu"(%0)
// CHECK-NEXT:    "func.return"(%1, %0)
func.func @multi_use_intermediate(%arg0: tensor<4x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %0 = "flow.matmul"(%arg0, %arg1) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "flow.add"(%0, %arg2) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = "flow.relu"(%1) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  "func.return"(%2, %1) : (tensor<4x16xf32>, tensor<4x16xf32>) -> ()
}

// -----

// The product itself is used outside (returned): nothing can be fused.
// CHECK-LABEL: func.func @product_used(
// CHECK-NEXT:    %0 = "flow.matmul"(%arg0, %arg1) : (
// CHECK-NEXT:    %1 = "flow.relu"(%0)
func.func @product_used(%arg0: tensor<4x8xf32>, %arg1: tensor<8x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %0 = "flow.matmul"(%arg0, %arg1) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "flow.relu"(%0) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  "func.return"(%1, %0) : (tensor<4x16xf32>, tensor<4x16xf32>) -> ()
}

// -----

// An operand that depends on the product from outside the region (through a transpose) cannot be an
// extra, and the product's other user then has a use outside: nothing is fused.
// CHECK-LABEL: func.func @dependent_operand(
// CHECK-NEXT:    %0 = "flow.matmul"(%arg0, %arg1) : (
// CHECK-NEXT:    %1 = "flow.relu"(%0)
// CHECK-NEXT:    %2 = "flow.transpose"(%1)
// CHECK-NEXT:    %3 = "flow.add"(%0, %2)
func.func @dependent_operand(%arg0: tensor<4x8xf32>, %arg1: tensor<8x4xf32>) -> (tensor<4x4xf32>) {
  %0 = "flow.matmul"(%arg0, %arg1) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %1 = "flow.relu"(%0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = "flow.transpose"(%1) {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %3 = "flow.add"(%0, %2) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  "func.return"(%3) : (tensor<4x4xf32>) -> ()
}

// -----

// Ops that change the dtype (a comparison, a cast) or broadcast the product up are not fused.
// CHECK-LABEL: func.func @not_fusable(
// CHECK-NEXT:    %0 = "flow.matmul"(%arg0, %arg1) : (
// CHECK-NEXT:    %1 = "flow.less"(%0, %arg2)
// CHECK-NEXT:    %2 = "flow.matmul"(%arg0, %arg1) : (
// CHECK-NEXT:    %3 = "flow.cast"(%2)
// CHECK-NEXT:    %4 = "flow.matmul"(%arg0, %arg1) : (
// CHECK-NEXT:    %5 = "flow.add"(%4, %arg3)
func.func @not_fusable(%arg0: tensor<4x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16xf32>, %arg3: tensor<2x4x16xf32>) -> (tensor<4x16xi1>, tensor<4x16xf64>, tensor<2x4x16xf32>) {
  %0 = "flow.matmul"(%arg0, %arg1) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "flow.less"(%0, %arg2) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xi1>
  %2 = "flow.matmul"(%arg0, %arg1) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %3 = "flow.cast"(%2) {to = f64} : (tensor<4x16xf32>) -> tensor<4x16xf64>
  %4 = "flow.matmul"(%arg0, %arg1) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %5 = "flow.add"(%4, %arg3) : (tensor<4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  "func.return"(%1, %3, %5) : (tensor<4x16xi1>, tensor<4x16xf64>, tensor<2x4x16xf32>) -> ()
}

// -----

// Only f32 convs and matmuls are fused.
// CHECK-LABEL: func.func @f64(
// CHECK-NEXT:    %0 = "flow.matmul"(%arg0, %arg1) : (
// CHECK-NEXT:    %1 = "flow.relu"(%0)
func.func @f64(%arg0: tensor<4x8xf64>, %arg1: tensor<8x16xf64>) -> (tensor<4x16xf64>) {
  %0 = "flow.matmul"(%arg0, %arg1) : (tensor<4x8xf64>, tensor<8x16xf64>) -> tensor<4x16xf64>
  %1 = "flow.relu"(%0) : (tensor<4x16xf64>) -> tensor<4x16xf64>
  "func.return"(%1) : (tensor<4x16xf64>) -> ()
}

// -----

// A matmul takes at most 10 extras (FC_PRODUCT_MAX_OPERANDS 12): the eleventh distinct operand ends the region
// before its add.
// CHECK-LABEL: func.func @extras_limit(
// CHECK-NEXT:    %0 = "flow.matmul"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %arg8, %arg9, %arg10, %arg11) {epilogue = "add x o2; add s0 o3; add s1 o4; add s2 o5; add s3 o6; add s4 o7; add s5 o8; add s6 o9; add s7 o10; add s8 o11; add s9 o2"}
// CHECK-NEXT:    %1 = "flow.add"(%0, %arg12)
// CHECK-NEXT:    "func.return"(%1)
func.func @extras_limit(%arg0: tensor<4x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16xf32>, %arg3: tensor<16xf32>, %arg4: tensor<16xf32>, %arg5: tensor<16xf32>, %arg6: tensor<16xf32>, %arg7: tensor<16xf32>, %arg8: tensor<16xf32>, %arg9: tensor<16xf32>, %arg10: tensor<16xf32>, %arg11: tensor<16xf32>, %arg12: tensor<16xf32>) -> (tensor<4x16xf32>) {
  %0 = "flow.matmul"(%arg0, %arg1) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "flow.add"(%0, %arg2) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = "flow.add"(%1, %arg3) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %3 = "flow.add"(%2, %arg4) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %4 = "flow.add"(%3, %arg5) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %5 = "flow.add"(%4, %arg6) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %6 = "flow.add"(%5, %arg7) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %7 = "flow.add"(%6, %arg8) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %8 = "flow.add"(%7, %arg9) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %9 = "flow.add"(%8, %arg10) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %10 = "flow.add"(%9, %arg11) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %11 = "flow.add"(%10, %arg2) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %12 = "flow.add"(%11, %arg12) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  "func.return"(%12) : (tensor<4x16xf32>) -> ()
}

// -----

// An existing epilogue is extended: its last step stands for the product.
// CHECK-LABEL: func.func @extend(
// CHECK-NEXT:    %0 = "flow.matmul"(%arg0, %arg1, %arg2) {epilogue = "add x o2; relu s0"}
// CHECK-NEXT:    "func.return"(%0)
func.func @extend(%arg0: tensor<4x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16xf32>) -> (tensor<4x16xf32>) {
  %0 = "flow.matmul"(%arg0, %arg1, %arg2) {epilogue = "add x o2"} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %1 = "flow.relu"(%0) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  "func.return"(%1) : (tensor<4x16xf32>) -> ()
}

// -----

// An 8-bit integer matmul whose i32 result only feeds a cast to f32 (the dynamic quantisation's dequantize)
// takes the cast (to = f32), then the dequantize's scaling, the bias and the relu as its epilogue.
// CHECK-LABEL: func.func @int8_dequantize(
// CHECK:         %[[Y:.*]] = "flow.matmul"(%arg0, %{{.*}}, %arg1, %arg2) {epilogue = "mul x o2; add s0 o3; relu s1", to = f32} : (tensor<3x4xui8>, tensor<4x5xi8>, tensor<5xf32>, tensor<5xf32>) -> tensor<3x5xf32> loc("mm")
// CHECK-NOT:     flow.cast
// CHECK:         "func.return"(%[[Y]])
func.func @int8_dequantize(%arg0: tensor<3x4xui8>, %arg1: tensor<5xf32>, %arg2: tensor<5xf32>) -> tensor<3x5xf32> {
  %w = "flow.constant"() {value = dense<3> : tensor<4x5xi8>} : () -> tensor<4x5xi8>
  %0 = "flow.matmul"(%arg0, %w) : (tensor<3x4xui8>, tensor<4x5xi8>) -> tensor<3x5xi32> loc("mm")
  %1 = "flow.cast"(%0) {to = f32} : (tensor<3x5xi32>) -> tensor<3x5xf32>
  %2 = "flow.mul"(%1, %arg1) : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %3 = "flow.add"(%2, %arg2) : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %4 = "flow.relu"(%3) : (tensor<3x5xf32>) -> tensor<3x5xf32>
  "func.return"(%4) : (tensor<3x5xf32>) -> ()
}

// -----

// Kept as i32: a result with another use besides the cast, and a cast to another type than f32.
// CHECK-LABEL: func.func @int8_kept(
// CHECK:         "flow.matmul"(%arg0, %{{.*}}) : (tensor<3x4xui8>, tensor<4x5xi8>) -> tensor<3x5xi32>
// CHECK:         "flow.cast"(%{{.*}}) {to = f32}
// CHECK:         "flow.matmul"(%arg0, %{{.*}}) : (tensor<3x4xui8>, tensor<4x5xi8>) -> tensor<3x5xi32>
// CHECK:         "flow.cast"(%{{.*}}) {to = f64}
func.func @int8_kept(%arg0: tensor<3x4xui8>) -> (tensor<3x5xf32>, tensor<3x5xi32>, tensor<3x5xf64>) {
  %w = "flow.constant"() {value = dense<3> : tensor<4x5xi8>} : () -> tensor<4x5xi8>
  %0 = "flow.matmul"(%arg0, %w) : (tensor<3x4xui8>, tensor<4x5xi8>) -> tensor<3x5xi32>
  %1 = "flow.cast"(%0) {to = f32} : (tensor<3x5xi32>) -> tensor<3x5xf32>
  %2 = "flow.matmul"(%arg0, %w) : (tensor<3x4xui8>, tensor<4x5xi8>) -> tensor<3x5xi32>
  %3 = "flow.cast"(%2) {to = f64} : (tensor<3x5xi32>) -> tensor<3x5xf64>
  "func.return"(%1, %0, %3) : (tensor<3x5xf32>, tensor<3x5xi32>, tensor<3x5xf64>) -> ()
}

// -----

// A quantised conv (qtype f32) takes an epilogue of one-element constants only (its kernels apply it where
// they requantise, reading no operand): the residual add ends the prefix before it, so SiLU alone joins,
// and the f32 result is kept (no cast follows). Without a bias the conv gets a zero i32 one where extras
// follow; here none do. The division after the add, outside the prefix, stays a division.
// CHECK-LABEL: func.func @quant_residual(
// CHECK:         %[[C:.*]] = "flow.conv"(%{{.*}}, %{{.*}}) {dilations = array<i64: 1, 1>, epilogue = "sigmoid x; mul x s0", group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, qtype = f32, strides = array<i64: 1, 1>}
// CHECK-NEXT:    %[[A:.*]] = "flow.add"(%[[C]], %arg1)
// CHECK:         "flow.div"(%[[A]], %{{.*}})
func.func @quant_residual(%arg0: tensor<1x2x3x3xui8>, %arg1: tensor<1x2x3x3xf32>) -> (tensor<1x2x3x3xf32>) {
  %x = "flow.scast"(%arg0) {qtype = !quant.uniform<u8:f32, 5.000000e-02:3>} : (tensor<1x2x3x3xui8>) -> tensor<1x2x3x3x!quant.uniform<u8:f32, 5.000000e-02:3>>
  %w = "flow.constant"() {value = dense<1> : tensor<2x2x1x1xi8>} : () -> tensor<2x2x1x1x!quant.uniform<i8:f32, 1.000000e-02:0>>
  %0 = "flow.conv"(%x, %w) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, qtype = f32, strides = array<i64: 1, 1>} : (tensor<1x2x3x3x!quant.uniform<u8:f32, 5.000000e-02:3>>, tensor<2x2x1x1x!quant.uniform<i8:f32, 1.000000e-02:0>>) -> tensor<1x2x3x3xf32>
  %1 = "flow.sigmoid"(%0) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %2 = "flow.mul"(%0, %1) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %3 = "flow.add"(%2, %arg1) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %s = "flow.constant"() {value = dense<2.000000e-02> : tensor<f32>} : () -> tensor<f32>
  %4 = "flow.div"(%3, %s) : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  "func.return"(%4) : (tensor<1x2x3x3xf32>) -> ()
}

// -----

// A quantised result (qtype a quantised type: the activation is its range) takes no epilogue: the relu after
// its dequantisation stays.
// CHECK-LABEL: func.func @quant_result_kept(
// CHECK:         "flow.conv"(%{{.*}}, %{{.*}}) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, qtype = !quant.uniform<u8:f32, 1.000000e-01:3>, strides = array<i64: 1, 1>}
// CHECK:         "flow.relu"
func.func @quant_result_kept(%arg0: tensor<1x2x3x3xui8>) -> (tensor<1x2x3x3xf32>) {
  %x = "flow.scast"(%arg0) {qtype = !quant.uniform<u8:f32, 5.000000e-02:3>} : (tensor<1x2x3x3xui8>) -> tensor<1x2x3x3x!quant.uniform<u8:f32, 5.000000e-02:3>>
  %w = "flow.constant"() {value = dense<1> : tensor<2x2x1x1xi8>} : () -> tensor<2x2x1x1x!quant.uniform<i8:f32, 1.000000e-02:0>>
  %0 = "flow.conv"(%x, %w) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, qtype = !quant.uniform<u8:f32, 1.000000e-01:3>, strides = array<i64: 1, 1>} : (tensor<1x2x3x3x!quant.uniform<u8:f32, 5.000000e-02:3>>, tensor<2x2x1x1x!quant.uniform<i8:f32, 1.000000e-02:0>>) -> tensor<1x2x3x3x!quant.uniform<u8:f32, 1.000000e-01:3>>
  %1 = "flow.dequantize"(%0) : (tensor<1x2x3x3x!quant.uniform<u8:f32, 1.000000e-01:3>>) -> tensor<1x2x3x3xf32>
  %2 = "flow.relu"(%1) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  "func.return"(%2) : (tensor<1x2x3x3xf32>) -> ()
}
