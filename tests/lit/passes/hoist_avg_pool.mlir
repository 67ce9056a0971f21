// RUN: %flowc build %s --passes=hoist_avg_pool,dce --verify-each --emit ir --split-input-file | FileCheck %s

// A DenseNet transition: a 1x1 conv halving the channels, then a 2x2 stride-2 average pool. The pool
// moves above the conv, which then runs on the pooled 4x4 map; attributes and loc stay with each op.
// CHECK-LABEL: func.func @transition(
// CHECK:         %[[P:.*]] = "flow.avg_pool"(%arg0) {{{.*}}kernel_shape = array<i64: 2, 2>{{.*}}strides = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32> loc("pool")
// CHECK-NEXT:    %[[C:.*]] = "flow.conv"(%[[P]], %{{.*}}, %{{.*}}) {{.*}} : (tensor<1x16x4x4xf32>, tensor<8x16x1x1xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32> loc("conv")
// CHECK-NEXT:    "func.return"(%[[C]])
func.func @transition(%arg0: tensor<1x16x8x8xf32>) -> tensor<1x8x4x4xf32> {
  %w = "flow.constant"() {value = dense<0.5> : tensor<8x16x1x1xf32>} : () -> tensor<8x16x1x1xf32>
  %b = "flow.constant"() {value = dense<0.25> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = "flow.conv"(%arg0, %w, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<8x16x1x1xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32> loc("conv")
  %1 = "flow.avg_pool"(%0) {ceil_mode = 0 : i64, count_include_pad = 0 : i64, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32> loc("pool")
  "func.return"(%1) : (tensor<1x8x4x4xf32>) -> ()
}

// -----

// Left alone: a pool counting padding (its windows' weights do not add up to 1, so the bias would not
// commute), a conv with an epilogue (relu does not commute), a 3x3 conv, a conv whose result is also
// returned, and a pool that keeps the map's size.
// CHECK-LABEL: func.func @left_alone(
// CHECK-COUNT-5: "flow.conv"(%arg0
func.func @left_alone(%arg0: tensor<1x16x8x8xf32>) -> (tensor<1x8x5x5xf32>, tensor<1x8x4x4xf32>, tensor<1x8x3x3xf32>, tensor<1x8x4x4xf32>, tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) {
  %w = "flow.constant"() {value = dense<0.5> : tensor<8x16x1x1xf32>} : () -> tensor<8x16x1x1xf32>
  %w3 = "flow.constant"() {value = dense<0.5> : tensor<8x16x3x3xf32>} : () -> tensor<8x16x3x3xf32>
  %b = "flow.constant"() {value = dense<0.25> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = "flow.conv"(%arg0, %w, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<8x16x1x1xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %1 = "flow.avg_pool"(%0) {ceil_mode = 0 : i64, count_include_pad = 1 : i64, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x5x5xf32>
  %2 = "flow.conv"(%arg0, %w, %b) {dilations = array<i64: 1, 1>, epilogue = "relu x", group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<8x16x1x1xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %3 = "flow.avg_pool"(%2) {ceil_mode = 0 : i64, count_include_pad = 0 : i64, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
  %4 = "flow.conv"(%arg0, %w3, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<8x16x3x3xf32>, tensor<8xf32>) -> tensor<1x8x6x6xf32>
  %5 = "flow.avg_pool"(%4) {ceil_mode = 0 : i64, count_include_pad = 0 : i64, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x8x6x6xf32>) -> tensor<1x8x3x3xf32>
  %6 = "flow.conv"(%arg0, %w, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<8x16x1x1xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %7 = "flow.avg_pool"(%6) {ceil_mode = 0 : i64, count_include_pad = 0 : i64, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
  %8 = "flow.conv"(%arg0, %w, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<8x16x1x1xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %9 = "flow.avg_pool"(%8) {ceil_mode = 0 : i64, count_include_pad = 0 : i64, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  "func.return"(%1, %3, %5, %7, %6, %9) : (tensor<1x8x5x5xf32>, tensor<1x8x4x4xf32>, tensor<1x8x3x3xf32>, tensor<1x8x4x4xf32>, tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> ()
}
