// RUN: %flowc build %s --passes=fold_qdq --verify-each --emit ir --split-input-file --cpu x86-64-v3 | FileCheck %s
// RUN: %flowc build %s --passes=fold_qdq --verify-each --emit ir --split-input-file --cpu x86-64 | FileCheck %s --check-prefix=BASE

// fold_qdq and depthwise convs: where the target has the integer depthwise kernel (codegen/kernel_dwconv_i8.c,
// fc_target_i8_depthwise: AVX2 and up) a depthwise conv (one input channel per group, any multiplier)
// becomes the quantised conv like a dense one; without it (the x86-64 baseline, SSE2) one of multiplier 1
// stays f32 with a note, while groups of 2 output channels or more take the integer GEMM on every x86 target
// (fc_target_i8_conv_tiles).
// Narrow groups of several input channels have no integer kernel but the loop nest: f32 on every target.

// A depthwise 3x3 conv + relu -> quantize: one conv on the integers, range narrowed to [zy, 255], i32 bias.
// CHECK-LABEL: func.func @dw_relu(
// CHECK:         %1 = "flow.constant"() {value = dense<[8, -5, 10]> : tensor<3xi32>}
// CHECK-NEXT:    %2 = "flow.conv"(%arg0, %0, %1) {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 1, 1, 1, 1>, qtype = !quant.uniform<u8<7:255>:f32, 2.500000e-01:7>, strides = array<i64: 1, 1>} : (tensor<1x3x5x5x!quant.uniform<u8:f32, 5.000000e-01:10>>, tensor<3x1x3x3x!quant.uniform<i8:f32:0, {2.500000e-01,1.250000e-01,5.000000e-01}>>, tensor<3xi32>) -> tensor<1x3x5x5x!quant.uniform<u8<7:255>:f32, 2.500000e-01:7>> loc("dw")
// CHECK-NEXT:    %3 = "flow.scast"(%2) {qtype = ui8}
// CHECK-NEXT:    "func.return"(%3)
// BASE-LABEL: func.func @dw_relu(
// BASE:         "flow.conv"({{.*}}) {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, flow.quant_note = "no integer kernel fits this conv's groups on this CPU {{.*}}"} : (tensor<1x3x5x5xf32>, tensor<3x1x3x3xf32>, tensor<3xf32>) -> tensor<1x3x5x5xf32> loc("dw")
// BASE-NEXT:    "flow.relu"
// BASE-NEXT:    "flow.quantize"
func.func @dw_relu(%arg0: tensor<1x3x5x5x!quant.uniform<u8:f32, 0.5:10>>) -> (tensor<1x3x5x5xui8>) {
  %w = "flow.constant"() {value = dense<[[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]], [[[-1, 0, 1], [2, -2, 3], [0, 0, 0]]], [[[5, 5, 5], [-5, -5, -5], [1, 1, 1]]]]> : tensor<3x1x3x3xi8>} : () -> tensor<3x1x3x3x!quant.uniform<i8:f32:0, {0.25, 0.125, 0.5}>>
  %b = "flow.constant"() {value = dense<[1.0, -0.3125, 2.6]> : tensor<3xf32>} : () -> tensor<3xf32>
  %0 = "flow.dequantize"(%arg0) : (tensor<1x3x5x5x!quant.uniform<u8:f32, 0.5:10>>) -> tensor<1x3x5x5xf32>
  %1 = "flow.dequantize"(%w) : (tensor<3x1x3x3x!quant.uniform<i8:f32:0, {0.25, 0.125, 0.5}>>) -> tensor<3x1x3x3xf32>
  %2 = "flow.conv"(%0, %1, %b) {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x3x5x5xf32>, tensor<3x1x3x3xf32>, tensor<3xf32>) -> tensor<1x3x5x5xf32> loc("dw")
  %3 = "flow.relu"(%2) : (tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32>
  %4 = "flow.quantize"(%3) {qtype = !quant.uniform<u8:f32, 0.25:7>} : (tensor<1x3x5x5xf32>) -> tensor<1x3x5x5x!quant.uniform<u8:f32, 0.25:7>>
  %5 = "flow.scast"(%4) {qtype = ui8} : (tensor<1x3x5x5x!quant.uniform<u8:f32, 0.25:7>>) -> tensor<1x3x5x5xui8>
  "func.return"(%5) : (tensor<1x3x5x5xui8>) -> ()
}

// -----

// Channel multiplier 2 (group 2, 4 outputs), 1-D, i8 activations, stride 2, no bias, an f32 result (no
// quantize after it): the quantised conv with qtype f32.
// CHECK-LABEL: func.func @dw_mult2_1d(
// CHECK:         "flow.conv"(%arg0, %{{[0-9]+}}) {dilations = array<i64: 1>, group = 2 : i64, pads = array<i64: 1, 1>, qtype = f32, strides = array<i64: 2>} : (tensor<1x2x9x!quant.uniform<i8:f32, 1.000000e-01:-3>>, tensor<4x1x3x!quant.uniform<i8:f32, 5.000000e-01>>) -> tensor<1x4x5xf32>
// BASE-LABEL: func.func @dw_mult2_1d(
// BASE:         "flow.conv"(%arg0, %{{[0-9]+}}) {dilations = array<i64: 1>, group = 2 : i64, pads = array<i64: 1, 1>, qtype = f32, strides = array<i64: 2>} : (tensor<1x2x9x!quant.uniform<i8:f32, 1.000000e-01:-3>>, tensor<4x1x3x!quant.uniform<i8:f32, 5.000000e-01>>) -> tensor<1x4x5xf32>
func.func @dw_mult2_1d(%arg0: tensor<1x2x9x!quant.uniform<i8:f32, 0.1:-3>>) -> (tensor<1x4x5xf32>) {
  %w = "flow.constant"() {value = dense<[[[1, 2, 3]], [[-1, 0, 1]], [[4, 4, 4]], [[0, 7, 0]]]> : tensor<4x1x3xi8>} : () -> tensor<4x1x3x!quant.uniform<i8:f32, 0.5>>
  %0 = "flow.dequantize"(%arg0) : (tensor<1x2x9x!quant.uniform<i8:f32, 0.1:-3>>) -> tensor<1x2x9xf32>
  %1 = "flow.dequantize"(%w) : (tensor<4x1x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<4x1x3xf32>
  %2 = "flow.conv"(%0, %1) {dilations = array<i64: 1>, group = 2 : i64, pads = array<i64: 1, 1>, strides = array<i64: 2>} : (tensor<1x2x9xf32>, tensor<4x1x3xf32>) -> tensor<1x4x5xf32>
  "func.return"(%2) : (tensor<1x4x5xf32>) -> ()
}

// -----

// Narrow groups of two input channels (group 2, one output per group) are not depthwise: f32 everywhere.
// CHECK-LABEL: func.func @narrow_groups(
// CHECK:         "flow.conv"({{.*}}) {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, flow.quant_note = "no integer kernel fits this conv's groups on this CPU {{.*}}"} : (tensor<1x4x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
// BASE-LABEL: func.func @narrow_groups(
// BASE:         "flow.conv"({{.*}}flow.quant_note = {{.*}} : (tensor<1x4x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
func.func @narrow_groups(%arg0: tensor<1x4x3x3x!quant.uniform<u8:f32, 0.1:3>>) -> (tensor<1x2x3x3xf32>) {
  %w = "flow.constant"() {value = dense<[[[[1]], [[2]]], [[[3]], [[-4]]]]> : tensor<2x2x1x1xi8>} : () -> tensor<2x2x1x1x!quant.uniform<i8:f32, 0.5>>
  %0 = "flow.dequantize"(%arg0) : (tensor<1x4x3x3x!quant.uniform<u8:f32, 0.1:3>>) -> tensor<1x4x3x3xf32>
  %1 = "flow.dequantize"(%w) : (tensor<2x2x1x1x!quant.uniform<i8:f32, 0.5>>) -> tensor<2x2x1x1xf32>
  %2 = "flow.conv"(%0, %1) {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  "func.return"(%2) : (tensor<1x2x3x3xf32>) -> ()
}

// -----

// A depthwise filter of 10x10 = 100 taps is beyond the kernel (81 taps): f32 everywhere.
// CHECK-LABEL: func.func @dw_too_many_taps(
// CHECK:         "flow.conv"({{.*}}flow.quant_note = {{.*}} : (tensor<1x2x10x10xf32>, tensor<2x1x10x10xf32>) -> tensor<1x2x1x1xf32>
func.func @dw_too_many_taps(%arg0: tensor<1x2x10x10x!quant.uniform<u8:f32, 0.1:3>>) -> (tensor<1x2x1x1xf32>) {
  %w = "flow.constant"() {value = dense<1> : tensor<2x1x10x10xi8>} : () -> tensor<2x1x10x10x!quant.uniform<i8:f32, 0.5>>
  %0 = "flow.dequantize"(%arg0) : (tensor<1x2x10x10x!quant.uniform<u8:f32, 0.1:3>>) -> tensor<1x2x10x10xf32>
  %1 = "flow.dequantize"(%w) : (tensor<2x1x10x10x!quant.uniform<i8:f32, 0.5>>) -> tensor<2x1x10x10xf32>
  %2 = "flow.conv"(%0, %1) {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x10x10xf32>, tensor<2x1x10x10xf32>) -> tensor<1x2x1x1xf32>
  "func.return"(%2) : (tensor<1x2x1x1xf32>) -> ()
}
