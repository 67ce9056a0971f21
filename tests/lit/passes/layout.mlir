// RUN: %flowc build %s --passes=layout,dce --verify-each --emit ir --split-input-file | FileCheck %s

// A MobileNetV2 block (expand 1x1 + ReLU, depthwise 3x3, project 1x1 + residual) and a global average
// pool: one region, converted whole. The input changes layout once (the expand conv and the residual
// share it), the convs read each other's blocked results, the depthwise conv gets an explicit zero
// bias, the pool runs on the blocked result and only its [1, 2, 1, 1, 8] result is reshaped back.
// CHECK-LABEL: func.func @mobile_block(
// CHECK:         %[[R:.*]] = "flow.reshape"(%arg0) {shape = array<i64: 1, 2, 8, 20, 20>}
// CHECK-NEXT:    %[[X:.*]] = "flow.transpose"(%[[R]]) {perm = array<i64: 0, 1, 3, 4, 2>} : (tensor<1x2x8x20x20xf32>) -> tensor<1x2x20x20x8xf32>
// CHECK-NEXT:    %[[E:.*]] = "flow.conv_blocked"(%[[X]], %{{.*}}, %{{.*}}) {block = 8 : i64, dilations = array<i64: 1, 1>, epilogue = "relu x", group = 1 : i64, {{.*}} -> tensor<1x8x20x20x8xf32> loc("expand")
// CHECK-NEXT:    %[[Z:.*]] = "flow.constant"() {value = dense<0.000000e+00> : tensor<64xf32>}
// CHECK-NEXT:    %[[D:.*]] = "flow.conv_blocked"(%[[E]], %{{.*}}, %[[Z]]) {{.*}}group = 64 : i64{{.*}} -> tensor<1x8x20x20x8xf32> loc("dw")
// CHECK-NEXT:    %[[P:.*]] = "flow.conv_blocked"(%[[D]], %{{.*}}, %{{.*}}, %[[X]]) {{{.*}}epilogue = "add x o3"{{.*}} -> tensor<1x2x20x20x8xf32> loc("project")
// CHECK-NEXT:    %[[G:.*]] = "flow.reduce_mean"(%[[P]]) {axes = array<i64: 2, 3>, keepdims = 1 : i64} : (tensor<1x2x20x20x8xf32>) -> tensor<1x2x1x1x8xf32>
// CHECK-NEXT:    %[[O:.*]] = "flow.reshape"(%[[G]]) {shape = array<i64: 1, 16, 1, 1>}
// CHECK-NEXT:    "func.return"(%[[O]])
func.func @mobile_block(%arg0: tensor<1x16x20x20xf32>) -> tensor<1x16x1x1xf32> {
  %w0 = "flow.constant"() {value = dense<0.5> : tensor<64x16x1x1xf32>} : () -> tensor<64x16x1x1xf32>
  %b0 = "flow.constant"() {value = dense<0.25> : tensor<64xf32>} : () -> tensor<64xf32>
  %w1 = "flow.constant"() {value = dense<0.125> : tensor<64x1x3x3xf32>} : () -> tensor<64x1x3x3xf32>
  %b2 = "flow.constant"() {value = dense<0.75> : tensor<16xf32>} : () -> tensor<16xf32>
  %w2 = "flow.constant"() {value = dense<-0.5> : tensor<16x64x1x1xf32>} : () -> tensor<16x64x1x1xf32>
  %0 = "flow.conv"(%arg0, %w0, %b0) {dilations = array<i64: 1, 1>, epilogue = "relu x", group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x20x20xf32>, tensor<64x16x1x1xf32>, tensor<64xf32>) -> tensor<1x64x20x20xf32> loc("expand")
  %1 = "flow.conv"(%0, %w1) {dilations = array<i64: 1, 1>, group = 64 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x64x20x20xf32>, tensor<64x1x3x3xf32>) -> tensor<1x64x20x20xf32> loc("dw")
  %2 = "flow.conv"(%1, %w2, %b2, %arg0) {dilations = array<i64: 1, 1>, epilogue = "add x o3", group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x64x20x20xf32>, tensor<16x64x1x1xf32>, tensor<16xf32>, tensor<1x16x20x20xf32>) -> tensor<1x16x20x20xf32> loc("project")
  %3 = "flow.reduce_mean"(%2) {axes = array<i64: 2, 3>, keepdims = 1 : i64} : (tensor<1x16x20x20xf32>) -> tensor<1x16x1x1xf32> loc("gap")
  "func.return"(%3) : (tensor<1x16x1x1xf32>) -> ()
}

// -----

// A first conv over 3 colour planes reads its plain NCHW input; only its result is blocked. Epilogue
// extras: a per-channel constant is blocked ([1, 2, 1, 1, 8]: for 1x1 pixels a reshape, which fold then
// applies to the constant), a scalar stays as it is.
// CHECK-LABEL: func.func @first_conv(
// CHECK:         %[[S:.*]] = "flow.reshape"(%{{.*}}) {shape = array<i64: 1, 16, 1, 1>} : (tensor<16x1x1xf32>)
// CHECK-NEXT:    %[[T:.*]] = "flow.reshape"(%[[S]]) {shape = array<i64: 1, 2, 1, 1, 8>}
// CHECK-NEXT:    %[[C:.*]] = "flow.conv_blocked"(%arg0, %{{.*}}, %{{.*}}, %[[T]], %{{.*}}) {{{.*}}epilogue = "mul x o3; min s0 o4"{{.*}}strides = array<i64: 2, 2>} : (tensor<1x3x16x16xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>, tensor<1x2x1x1x8xf32>, tensor<f32>) -> tensor<1x2x8x8x8xf32>
// CHECK-NEXT:    %{{.*}} = "flow.constant"
// CHECK-NEXT:    %[[D:.*]] = "flow.conv_blocked"(%[[C]],
// CHECK-NEXT:    %[[M:.*]] = "flow.reduce_max"(%[[D]]) {axes = array<i64: 2, 3>
// CHECK-NEXT:    %[[O:.*]] = "flow.reshape"(%[[M]]) {shape = array<i64: 1, 16, 1, 1>}
func.func @first_conv(%arg0: tensor<1x3x16x16xf32>) -> tensor<1x16x1x1xf32> {
  %w0 = "flow.constant"() {value = dense<0.5> : tensor<16x3x3x3xf32>} : () -> tensor<16x3x3x3xf32>
  %b0 = "flow.constant"() {value = dense<0.25> : tensor<16xf32>} : () -> tensor<16xf32>
  %s = "flow.constant"() {value = dense<2.0> : tensor<16x1x1xf32>} : () -> tensor<16x1x1xf32>
  %six = "flow.constant"() {value = dense<6.0> : tensor<f32>} : () -> tensor<f32>
  %w1 = "flow.constant"() {value = dense<0.125> : tensor<16x1x3x3xf32>} : () -> tensor<16x1x3x3xf32>
  %0 = "flow.conv"(%arg0, %w0, %b0, %s, %six) {dilations = array<i64: 1, 1>, epilogue = "mul x o3; min s0 o4", group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x16x16xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>, tensor<16x1x1xf32>, tensor<f32>) -> tensor<1x16x8x8xf32>
  %1 = "flow.conv"(%0, %w1) {dilations = array<i64: 1, 1>, group = 16 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x8x8xf32>
  %2 = "flow.reduce_max"(%1) {axes = array<i64: 2, 3>, keepdims = 1 : i64} : (tensor<1x16x8x8xf32>) -> tensor<1x16x1x1xf32>
  "func.return"(%2) : (tensor<1x16x1x1xf32>) -> ()
}

// -----

// Left in NCHW: a region of dense convs whose result a max_pool (no blocked form) reads would only add
// layout changes; a 3x3 stride-1 dense conv is Winograd's; 12 output channels do not block; a small
// grouped 1x1 conv gains less than its layout changes cost; weights that are not constants cannot be packed.
// CHECK-LABEL: func.func @left_alone(
// CHECK-NOT:     conv_blocked
// CHECK-NOT:     transpose
// CHECK:         "func.return"
func.func @left_alone(%arg0: tensor<1x16x8x8xf32>, %wr: tensor<16x16x1x1xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x16x8x8xf32>, tensor<1x12x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) {
  %w1 = "flow.constant"() {value = dense<0.5> : tensor<16x16x1x1xf32>} : () -> tensor<16x16x1x1xf32>
  %w3 = "flow.constant"() {value = dense<0.5> : tensor<16x16x3x3xf32>} : () -> tensor<16x16x3x3xf32>
  %w12 = "flow.constant"() {value = dense<0.5> : tensor<12x16x1x1xf32>} : () -> tensor<12x16x1x1xf32>
  %wg = "flow.constant"() {value = dense<0.5> : tensor<16x4x1x1xf32>} : () -> tensor<16x4x1x1xf32>
  %0 = "flow.conv"(%arg0, %w1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %1 = "flow.max_pool"(%0) {ceil_mode = 0 : i64, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, storage_order = 0 : i64, strides = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
  %2 = "flow.conv"(%arg0, %w3) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %3 = "flow.conv"(%arg0, %w12) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<12x16x1x1xf32>) -> tensor<1x12x8x8xf32>
  %4 = "flow.conv"(%arg0, %wg) {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x4x1x1xf32>) -> tensor<1x16x8x8xf32>
  %5 = "flow.conv"(%arg0, %wr) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  "func.return"(%1, %2, %3, %4, %5) : (tensor<1x16x4x4xf32>, tensor<1x16x8x8xf32>, tensor<1x12x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> ()
}

// -----

// A dense strided conv whose work outweighs changing the layout of its input and result (ResNet-18's
// stride-2 convs: the blocked kernel saves ~109 us here, the two changes cost ~30 us) is converted on
// its own; the same conv on a tiny image is not.
// CHECK-LABEL: func.func @strided(
// CHECK:         %[[X:.*]] = "flow.transpose"(%{{.*}}) {perm = array<i64: 0, 1, 3, 4, 2>} : (tensor<1x8x8x28x28xf32>) -> tensor<1x8x28x28x8xf32>
// CHECK-NEXT:    %{{.*}} = "flow.constant"
// CHECK-NEXT:    %[[Y:.*]] = "flow.conv_blocked"(%[[X]], {{.*}} -> tensor<1x16x14x14x8xf32>
// CHECK-NEXT:    %[[T:.*]] = "flow.transpose"(%[[Y]]) {perm = array<i64: 0, 1, 4, 2, 3>}
// CHECK-NEXT:    %[[R:.*]] = "flow.reshape"(%[[T]]) {shape = array<i64: 1, 128, 14, 14>}
// CHECK-NEXT:    %[[S:.*]] = "flow.conv"(%arg1,
// CHECK-NEXT:    "func.return"(%[[R]], %[[S]])
func.func @strided(%arg0: tensor<1x64x28x28xf32>, %arg1: tensor<1x8x8x8xf32>) -> (tensor<1x128x14x14xf32>, tensor<1x8x4x4xf32>) {
  %w = "flow.constant"() {value = dense<0.5> : tensor<128x64x3x3xf32>} : () -> tensor<128x64x3x3xf32>
  %v = "flow.constant"() {value = dense<0.5> : tensor<8x8x3x3xf32>} : () -> tensor<8x8x3x3xf32>
  %0 = "flow.conv"(%arg0, %w) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x64x28x28xf32>, tensor<128x64x3x3xf32>) -> tensor<1x128x14x14xf32>
  %1 = "flow.conv"(%arg1, %v) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  "func.return"(%0, %1) : (tensor<1x128x14x14xf32>, tensor<1x8x4x4xf32>) -> ()
}

// -----

// A RegNet-style grouped 3x3 conv (4 groups of 16 channels) after a 1x1 conv: one region, the grouped conv
// blocked like the dense one (its group kept), reading its blocked result directly. The last 1x1 conv gains
// nothing from the layout and stays in NCHW.
// CHECK-LABEL: func.func @grouped_block(
// CHECK:         %[[A:.*]] = "flow.conv_blocked"(%{{.*}}) {block = 8 : i64, {{.*}}group = 1 : i64{{.*}} -> tensor<1x8x14x14x8xf32>
// CHECK:         %[[B:.*]] = "flow.conv_blocked"(%[[A]], %{{.*}}) {block = 8 : i64, {{.*}}group = 4 : i64, pads = array<i64: 1, 1, 1, 1>{{.*}} : (tensor<1x8x14x14x8xf32>, tensor<64x16x3x3xf32>, tensor<64xf32>) -> tensor<1x8x14x14x8xf32>
// CHECK:         "flow.conv"(
func.func @grouped_block(%arg0: tensor<1x64x14x14xf32>) -> tensor<1x64x14x14xf32> {
  %wa = "flow.constant"() {value = dense<0.5> : tensor<64x64x1x1xf32>} : () -> tensor<64x64x1x1xf32>
  %wb = "flow.constant"() {value = dense<0.25> : tensor<64x16x3x3xf32>} : () -> tensor<64x16x3x3xf32>
  %wc = "flow.constant"() {value = dense<0.125> : tensor<64x64x1x1xf32>} : () -> tensor<64x64x1x1xf32>
  %bc = "flow.constant"() {value = dense<1.0> : tensor<64xf32>} : () -> tensor<64xf32>
  %0 = "flow.conv"(%arg0, %wa) {dilations = array<i64: 1, 1>, epilogue = "relu x", group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x64x14x14xf32>, tensor<64x64x1x1xf32>) -> tensor<1x64x14x14xf32>
  %1 = "flow.conv"(%0, %wb) {dilations = array<i64: 1, 1>, epilogue = "relu x", group = 4 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x64x14x14xf32>, tensor<64x16x3x3xf32>) -> tensor<1x64x14x14xf32>
  %2 = "flow.conv"(%1, %wc, %bc, %arg0) {dilations = array<i64: 1, 1>, epilogue = "add x o3", group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x64x14x14xf32>, tensor<64x64x1x1xf32>, tensor<64xf32>, tensor<1x64x14x14xf32>) -> tensor<1x64x14x14xf32>
  "func.return"(%2) : (tensor<1x64x14x14xf32>) -> ()
}

// -----

// A squeeze-and-excitation block (expand 1x1, depthwise 5x5, SE, project 1x1): the channel scale (its gate
// the first operand, as PyTorch exports it) joins the region with its [1, 64, 1, 1] gate reshaped to
// [1, 8, 1, 1, 8], so neither the depthwise result nor the scaled tensor changes layout; the pool sinks
// below the change.
// CHECK-LABEL: func.func @squeeze_excite(
// CHECK:         %[[D:.*]] = "flow.conv_blocked"(%{{.*}}) {{.*}}group = 64 : i64{{.*}} -> tensor<1x8x28x28x8xf32> loc("dw")
// CHECK-NEXT:    %[[P:.*]] = "flow.reduce_mean"(%[[D]]) {axes = array<i64: 2, 3>, keepdims = 1 : i64} : (tensor<1x8x28x28x8xf32>) -> tensor<1x8x1x1x8xf32>
// CHECK-NOT:     "flow.transpose"
// CHECK:         %[[G:.*]] = "flow.sigmoid"
// CHECK-NEXT:    %[[GB:.*]] = "flow.reshape"(%[[G]]) {shape = array<i64: 1, 8, 1, 1, 8>}
// CHECK-NEXT:    %[[S:.*]] = "flow.mul"(%[[GB]], %[[D]]) : (tensor<1x8x1x1x8xf32>, tensor<1x8x28x28x8xf32>) -> tensor<1x8x28x28x8xf32> loc("scale")
// CHECK-NOT:     "flow.transpose"
// CHECK:         "flow.conv_blocked"(%[[S]], {{.*}} loc("project")
func.func @squeeze_excite(%arg0: tensor<1x16x28x28xf32>) -> tensor<1x16x28x28xf32> {
  %we = "flow.constant"() {value = dense<0.25> : tensor<64x16x1x1xf32>} : () -> tensor<64x16x1x1xf32>
  %w0 = "flow.constant"() {value = dense<0.125> : tensor<64x1x5x5xf32>} : () -> tensor<64x1x5x5xf32>
  %w1 = "flow.constant"() {value = dense<0.5> : tensor<16x64x1x1xf32>} : () -> tensor<16x64x1x1xf32>
  %e = "flow.conv"(%arg0, %we) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x28x28xf32>, tensor<64x16x1x1xf32>) -> tensor<1x64x28x28xf32>
  %0 = "flow.conv"(%e, %w0) {dilations = array<i64: 1, 1>, group = 64 : i64, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>} : (tensor<1x64x28x28xf32>, tensor<64x1x5x5xf32>) -> tensor<1x64x28x28xf32> loc("dw")
  %1 = "flow.reduce_mean"(%0) {axes = array<i64: 2, 3>, keepdims = 1 : i64} : (tensor<1x64x28x28xf32>) -> tensor<1x64x1x1xf32>
  %2 = "flow.sigmoid"(%1) : (tensor<1x64x1x1xf32>) -> tensor<1x64x1x1xf32>
  %3 = "flow.mul"(%2, %0) : (tensor<1x64x1x1xf32>, tensor<1x64x28x28xf32>) -> tensor<1x64x28x28xf32> loc("scale")
  %4 = "flow.conv"(%3, %w1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x64x28x28xf32>, tensor<16x64x1x1xf32>) -> tensor<1x16x28x28xf32> loc("project")
  "func.return"(%4) : (tensor<1x16x28x28xf32>) -> ()
}

// -----

// Not channel scales, so region edges: a per-pixel scale [1, 1, 7, 7] and a full [1, 16, 7, 7] product.
// CHECK-LABEL: func.func @not_channel_scales(
// CHECK:         "flow.mul"(%{{.*}}, %{{.*}}) : (tensor<1x1x7x7xf32>, tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32>
// CHECK:         "flow.mul"(%{{.*}}, %{{.*}}) : (tensor<1x16x7x7xf32>, tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32>
func.func @not_channel_scales(%arg0: tensor<1x16x7x7xf32>, %p: tensor<1x1x7x7xf32>, %q: tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32> {
  %w0 = "flow.constant"() {value = dense<0.125> : tensor<16x1x3x3xf32>} : () -> tensor<16x1x3x3xf32>
  %w1 = "flow.constant"() {value = dense<0.5> : tensor<16x16x1x1xf32>} : () -> tensor<16x16x1x1xf32>
  %0 = "flow.conv"(%arg0, %w0) {dilations = array<i64: 1, 1>, group = 16 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x7x7xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x7x7xf32>
  %1 = "flow.mul"(%p, %0) : (tensor<1x1x7x7xf32>, tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32>
  %2 = "flow.mul"(%1, %q) : (tensor<1x16x7x7xf32>, tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32>
  %3 = "flow.conv"(%2, %w1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x7x7xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x7x7xf32>
  "func.return"(%3) : (tensor<1x16x7x7xf32>) -> ()
}
