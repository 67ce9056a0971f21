// RUN: %flowc build %s --passes=layout,dce --verify-each --emit ir --split-input-file | FileCheck %s
// RUN: %flowc build %s --passes=layout,dce --verify-each --emit ir --split-input-file --cpu x86-64-v4 | FileCheck %s --check-prefix=V4

// A DenseNet layer: two convs, the concat of their results, a pre-activation batch norm (mul and add by
// per-channel constants) and relu, and the next conv. One region: the concat joins blocked operands
// along the channel blocks, the batch norm's constants are reshaped to [1, C/8, 1, 1, 8], and only the
// graph's input and result change layout.
// CHECK-LABEL: func.func @dense_layer(
// CHECK:         %[[A:.*]] = "flow.conv_blocked"({{.*}} -> tensor<1x4x32x32x8xf32> loc("a")
// CHECK:         %[[B:.*]] = "flow.conv_blocked"(%[[A]], {{.*}} -> tensor<1x4x32x32x8xf32> loc("b")
// CHECK-NEXT:    %[[C:.*]] = "flow.concat"(%[[A]], %[[B]]) {axis = 1 : i64} : (tensor<1x4x32x32x8xf32>, tensor<1x4x32x32x8xf32>) -> tensor<1x8x32x32x8xf32> loc("cat")
// CHECK:         %[[S:.*]] = "flow.reshape"(%{{.*}}) {shape = array<i64: 1, 8, 1, 1, 8>}
// CHECK-NEXT:    %[[M:.*]] = "flow.mul"(%[[C]], %[[S]]) : (tensor<1x8x32x32x8xf32>, tensor<1x8x1x1x8xf32>) -> tensor<1x8x32x32x8xf32> loc("bn_mul")
// CHECK:         %[[D:.*]] = "flow.add"(%[[M]], %{{.*}}) : (tensor<1x8x32x32x8xf32>, tensor<1x8x1x1x8xf32>) -> tensor<1x8x32x32x8xf32> loc("bn_add")
// CHECK-NEXT:    %[[R:.*]] = "flow.relu"(%[[D]]) : (tensor<1x8x32x32x8xf32>) -> tensor<1x8x32x32x8xf32> loc("relu")
// CHECK:         %{{.*}} = "flow.conv_blocked"(%[[R]], {{.*}} loc("c")
// CHECK-NEXT:    "flow.transpose"
// CHECK-NEXT:    "flow.reshape"
// CHECK-NEXT:    "func.return"
func.func @dense_layer(%arg0: tensor<1x32x32x32xf32>) -> tensor<1x32x32x32xf32> {
  %w0 = "flow.constant"() {value = dense<0.5> : tensor<32x32x3x3xf32>} : () -> tensor<32x32x3x3xf32>
  %w1 = "flow.constant"() {value = dense<0.25> : tensor<32x64x3x3xf32>} : () -> tensor<32x64x3x3xf32>
  %s = "flow.constant"() {value = dense<2.0> : tensor<64x1x1xf32>} : () -> tensor<64x1x1xf32>
  %t = "flow.constant"() {value = dense<-1.0> : tensor<64x1x1xf32>} : () -> tensor<64x1x1xf32>
  %0 = "flow.conv"(%arg0, %w0) {dilations = array<i64: 2, 2>, group = 1 : i64, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>} : (tensor<1x32x32x32xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x32x32xf32> loc("a")
  %1 = "flow.conv"(%0, %w0) {dilations = array<i64: 2, 2>, group = 1 : i64, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>} : (tensor<1x32x32x32xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x32x32xf32> loc("b")
  %2 = "flow.concat"(%0, %1) {axis = 1 : i64} : (tensor<1x32x32x32xf32>, tensor<1x32x32x32xf32>) -> tensor<1x64x32x32xf32> loc("cat")
  %3 = "flow.mul"(%2, %s) : (tensor<1x64x32x32xf32>, tensor<64x1x1xf32>) -> tensor<1x64x32x32xf32> loc("bn_mul")
  %4 = "flow.add"(%3, %t) : (tensor<1x64x32x32xf32>, tensor<64x1x1xf32>) -> tensor<1x64x32x32xf32> loc("bn_add")
  %5 = "flow.relu"(%4) : (tensor<1x64x32x32xf32>) -> tensor<1x64x32x32xf32> loc("relu")
  %6 = "flow.conv"(%5, %w1) {dilations = array<i64: 2, 2>, group = 1 : i64, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>} : (tensor<1x64x32x32xf32>, tensor<32x64x3x3xf32>) -> tensor<1x32x32x32xf32> loc("c")
  "func.return"(%6) : (tensor<1x32x32x32xf32>) -> ()
}

// -----

// A concat with an operand of 12 channels (not whole blocks) has no blocked form: it reads its operands
// in NCHW, and a relu whose result is returned stays there too.
// CHECK-LABEL: func.func @partial_block(
// CHECK:         "flow.concat"({{.*}}) {axis = 1 : i64} : (tensor<1x32x32x32xf32>, tensor<1x12x32x32xf32>) -> tensor<1x44x32x32xf32>
// CHECK:         "flow.relu"({{.*}}) : (tensor<1x32x32x32xf32>) -> tensor<1x32x32x32xf32>
func.func @partial_block(%arg0: tensor<1x32x32x32xf32>, %arg1: tensor<1x12x32x32xf32>) -> (tensor<1x32x16x16xf32>, tensor<1x32x32x32xf32>) {
  %w0 = "flow.constant"() {value = dense<0.5> : tensor<32x32x3x3xf32>} : () -> tensor<32x32x3x3xf32>
  %w1 = "flow.constant"() {value = dense<0.25> : tensor<32x44x3x3xf32>} : () -> tensor<32x44x3x3xf32>
  %0 = "flow.conv"(%arg0, %w0) {dilations = array<i64: 2, 2>, group = 1 : i64, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>} : (tensor<1x32x32x32xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x32x32xf32> loc("a")
  %1 = "flow.concat"(%0, %arg1) {axis = 1 : i64} : (tensor<1x32x32x32xf32>, tensor<1x12x32x32xf32>) -> tensor<1x44x32x32xf32> loc("cat")
  %2 = "flow.conv"(%1, %w1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x44x32x32xf32>, tensor<32x44x3x3xf32>) -> tensor<1x32x16x16xf32> loc("c")
  %3 = "flow.relu"(%0) : (tensor<1x32x32x32xf32>) -> tensor<1x32x32x32xf32> loc("r")
  "func.return"(%2, %3) : (tensor<1x32x16x16xf32>, tensor<1x32x32x32xf32>) -> ()
}

// -----

// A Winograd conv (3x3, stride 1, 32 output channels) between converted members: its input comes blocked
// from one and only the concat reads its result. On AVX-512 its two layout changes cost more than the
// blocked direct kernel loses to Winograd, so it is converted too; returned as well (read in NCHW), it is not.
// V4-LABEL: func.func @winograd_between(
// V4:         "flow.conv_blocked"({{.*}}dilations = array<i64: 1, 1>{{.*}} -> tensor<1x2x28x28x16xf32> loc("wino")
// V4-LABEL: func.func @winograd_returned(
// V4:         "flow.conv"({{.*}} -> tensor<1x32x28x28xf32> loc("wino")
func.func @winograd_between(%arg0: tensor<1x128x28x28xf32>) -> tensor<1x32x28x28xf32> {
  %w0 = "flow.constant"() {value = dense<0.5> : tensor<128x128x3x3xf32>} : () -> tensor<128x128x3x3xf32>
  %w1 = "flow.constant"() {value = dense<0.25> : tensor<32x128x3x3xf32>} : () -> tensor<32x128x3x3xf32>
  %w2 = "flow.constant"() {value = dense<0.125> : tensor<32x160x3x3xf32>} : () -> tensor<32x160x3x3xf32>
  %0 = "flow.conv"(%arg0, %w0) {dilations = array<i64: 2, 2>, group = 1 : i64, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>} : (tensor<1x128x28x28xf32>, tensor<128x128x3x3xf32>) -> tensor<1x128x28x28xf32> loc("a")
  %1 = "flow.conv"(%0, %w1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x128x28x28xf32>, tensor<32x128x3x3xf32>) -> tensor<1x32x28x28xf32> loc("wino")
  %2 = "flow.concat"(%0, %1) {axis = 1 : i64} : (tensor<1x128x28x28xf32>, tensor<1x32x28x28xf32>) -> tensor<1x160x28x28xf32> loc("cat")
  %3 = "flow.conv"(%2, %w2) {dilations = array<i64: 2, 2>, group = 1 : i64, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>} : (tensor<1x160x28x28xf32>, tensor<32x160x3x3xf32>) -> tensor<1x32x28x28xf32> loc("c")
  "func.return"(%3) : (tensor<1x32x28x28xf32>) -> ()
}

// -----

func.func @winograd_returned(%arg0: tensor<1x128x28x28xf32>) -> (tensor<1x32x28x28xf32>, tensor<1x32x28x28xf32>) {
  %w0 = "flow.constant"() {value = dense<0.5> : tensor<128x128x3x3xf32>} : () -> tensor<128x128x3x3xf32>
  %w1 = "flow.constant"() {value = dense<0.25> : tensor<32x128x3x3xf32>} : () -> tensor<32x128x3x3xf32>
  %w2 = "flow.constant"() {value = dense<0.125> : tensor<32x160x3x3xf32>} : () -> tensor<32x160x3x3xf32>
  %0 = "flow.conv"(%arg0, %w0) {dilations = array<i64: 2, 2>, group = 1 : i64, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>} : (tensor<1x128x28x28xf32>, tensor<128x128x3x3xf32>) -> tensor<1x128x28x28xf32> loc("a")
  %1 = "flow.conv"(%0, %w1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x128x28x28xf32>, tensor<32x128x3x3xf32>) -> tensor<1x32x28x28xf32> loc("wino")
  %2 = "flow.concat"(%0, %1) {axis = 1 : i64} : (tensor<1x128x28x28xf32>, tensor<1x32x28x28xf32>) -> tensor<1x160x28x28xf32> loc("cat")
  %3 = "flow.conv"(%2, %w2) {dilations = array<i64: 2, 2>, group = 1 : i64, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>} : (tensor<1x160x28x28xf32>, tensor<32x160x3x3xf32>) -> tensor<1x32x28x28xf32> loc("c")
  "func.return"(%3, %1) : (tensor<1x32x28x28xf32>, tensor<1x32x28x28xf32>) -> ()
}
