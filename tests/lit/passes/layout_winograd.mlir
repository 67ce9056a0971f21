// RUN: %flowc build %s --cpu x86-64-v3 --passes=layout,dce --verify-each --emit ir --split-input-file | FileCheck %s

// The layout pass leaves a 3x3 stride-1 conv in NCHW only when codegen will give it Winograd: both ask
// fc_conv_winograd_variant. Over 8 channels Winograd declines (its transforms cost more than they save),
// so the dense conv joins the depthwise convs around it and the region converts whole.
// CHECK-LABEL: func.func @declined(
// CHECK:         "flow.conv_blocked"({{.*}} loc("dw1")
// CHECK:         "flow.conv_blocked"({{.*}} loc("dense")
// CHECK:         "flow.conv_blocked"({{.*}} loc("dw2")
func.func @declined(%arg0: tensor<1x8x56x56xf32>) -> tensor<1x8x56x56xf32> {
  %w1 = "flow.constant"() {value = dense<0.125> : tensor<8x1x3x3xf32>} : () -> tensor<8x1x3x3xf32>
  %w2 = "flow.constant"() {value = dense<0.5> : tensor<8x8x3x3xf32>} : () -> tensor<8x8x3x3xf32>
  %0 = "flow.conv"(%arg0, %w1) {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x56x56xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x56x56xf32> loc("dw1")
  %1 = "flow.conv"(%0, %w2) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x56x56xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x56x56xf32> loc("dense")
  %2 = "flow.conv"(%1, %w1) {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x56x56xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x56x56xf32> loc("dw2")
  "func.return"(%2) : (tensor<1x8x56x56xf32>) -> ()
}

// -----

// Over 32 channels Winograd takes the dense conv: it stays in NCHW and splits the region, whose
// depthwise halves then save less than their layout changes cost.
// CHECK-LABEL: func.func @taken(
// CHECK-NOT:     conv_blocked
// CHECK:         "flow.conv"({{.*}} loc("dense")
func.func @taken(%arg0: tensor<1x32x56x56xf32>) -> tensor<1x32x56x56xf32> {
  %w1 = "flow.constant"() {value = dense<0.125> : tensor<32x1x3x3xf32>} : () -> tensor<32x1x3x3xf32>
  %w2 = "flow.constant"() {value = dense<0.5> : tensor<32x32x3x3xf32>} : () -> tensor<32x32x3x3xf32>
  %0 = "flow.conv"(%arg0, %w1) {dilations = array<i64: 1, 1>, group = 32 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x32x56x56xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x56x56xf32> loc("dw1")
  %1 = "flow.conv"(%0, %w2) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x32x56x56xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x56x56xf32> loc("dense")
  %2 = "flow.conv"(%1, %w1) {dilations = array<i64: 1, 1>, group = 32 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x32x56x56xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x56x56xf32> loc("dw2")
  "func.return"(%2) : (tensor<1x32x56x56xf32>) -> ()
}
