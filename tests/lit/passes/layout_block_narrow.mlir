// RUN: %flowc build %s --split-input-file --cpu skylake-avx512 --passes=layout,dce --verify-each --emit ir | FileCheck %s --check-prefix=AVX512
// RUN: %flowc build %s --split-input-file --cpu x86-64-v3 --passes=layout,dce --verify-each --emit ir | FileCheck %s --check-prefix=AVX2

// AVX-512 has a second, narrower block: a region whose channel counts 16 does not divide (a RegNetY
// block over 24 channels, grouped 3x3 of group width 8) is blocked by 8 instead of staying in NCHW.
// AVX512-LABEL: func.func @narrow(
// AVX512:         "flow.transpose"({{.*}} -> tensor<1x3x14x14x8xf32>
// AVX512:         "flow.conv_blocked"({{.*}} {block = 8 : i64, {{.*}} -> tensor<1x3x14x14x8xf32> loc("a")
// AVX512:         "flow.conv_blocked"({{.*}} {block = 8 : i64, {{.*}}group = 3 : i64{{.*}} -> tensor<1x3x14x14x8xf32> loc("b")
// AVX2-LABEL: func.func @narrow(
// AVX2:         "flow.conv_blocked"({{.*}} {block = 8 : i64, {{.*}} loc("a")
func.func @narrow(%arg0: tensor<1x24x14x14xf32>) -> tensor<1x24x14x14xf32> {
  %wa = "flow.constant"() {value = dense<0.5> : tensor<24x24x1x1xf32>} : () -> tensor<24x24x1x1xf32>
  %wb = "flow.constant"() {value = dense<0.25> : tensor<24x8x3x3xf32>} : () -> tensor<24x8x3x3xf32>
  %wc = "flow.constant"() {value = dense<-0.5> : tensor<24x24x1x1xf32>} : () -> tensor<24x24x1x1xf32>
  %bc = "flow.constant"() {value = dense<0.75> : tensor<24xf32>} : () -> tensor<24xf32>
  %0 = "flow.conv"(%arg0, %wa) {dilations = array<i64: 1, 1>, epilogue = "relu x", group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x24x14x14xf32>, tensor<24x24x1x1xf32>) -> tensor<1x24x14x14xf32> loc("a")
  %1 = "flow.conv"(%0, %wb) {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x24x14x14xf32>, tensor<24x8x3x3xf32>) -> tensor<1x24x14x14xf32> loc("b")
  %2 = "flow.conv"(%1, %wc, %bc, %arg0) {dilations = array<i64: 1, 1>, epilogue = "add x o3", group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x24x14x14xf32>, tensor<24x24x1x1xf32>, tensor<24xf32>, tensor<1x24x14x14xf32>) -> tensor<1x24x14x14xf32> loc("c")
  "func.return"(%2) : (tensor<1x24x14x14xf32>) -> ()
}

// -----

// Both blocks in one graph: the 32-channel region takes 16, the 24-channel one after it 8, and the value
// between them changes layout once.
// AVX512-LABEL: func.func @both(
// AVX512:         "flow.conv_blocked"({{.*}} {block = 16 : i64, {{.*}}group = 2 : i64{{.*}} -> tensor<1x2x14x14x16xf32> loc("wide")
// AVX512:         "flow.conv_blocked"({{.*}} {block = 8 : i64, {{.*}}group = 3 : i64{{.*}} -> tensor<1x3x14x14x8xf32> loc("narrow")
// AVX2-LABEL: func.func @both(
// AVX2:         "flow.conv_blocked"({{.*}} {block = 8 : i64, {{.*}} -> tensor<1x4x14x14x8xf32> loc("wide")
func.func @both(%arg0: tensor<1x32x14x14xf32>) -> tensor<1x24x14x14xf32> {
  %w0 = "flow.constant"() {value = dense<0.5> : tensor<32x16x3x3xf32>} : () -> tensor<32x16x3x3xf32>
  %w1 = "flow.constant"() {value = dense<0.25> : tensor<24x32x1x1xf32>} : () -> tensor<24x32x1x1xf32>
  %w2 = "flow.constant"() {value = dense<-0.5> : tensor<24x8x3x3xf32>} : () -> tensor<24x8x3x3xf32>
  %0 = "flow.conv"(%arg0, %w0) {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x32x14x14xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x14x14xf32> loc("wide")
  %1 = "flow.conv"(%0, %w1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x14x14xf32>, tensor<24x32x1x1xf32>) -> tensor<1x24x14x14xf32> loc("mid")
  %2 = "flow.conv"(%1, %w2) {dilations = array<i64: 1, 1>, group = 3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x24x14x14xf32>, tensor<24x8x3x3xf32>) -> tensor<1x24x14x14xf32> loc("narrow")
  "func.return"(%2) : (tensor<1x24x14x14xf32>) -> ()
}
