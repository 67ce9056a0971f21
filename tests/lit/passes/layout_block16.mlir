// RUN: %flowc build %s --cpu skylake-avx512 --passes=layout,dce --verify-each --emit ir | FileCheck %s --check-prefix=AVX512
// RUN: %flowc build %s --cpu x86-64-v3 --passes=layout,dce --verify-each --emit ir | FileCheck %s --check-prefix=AVX2

// The layout pass takes its block from the target: 16 channels (one AVX-512 vector, NCHW16c) on
// skylake-avx512, 8 (NCHW8c) on x86-64-v3. A MobileNetV2 block over 32 channels (expand 1x1 + ReLU,
// depthwise 3x3, project 1x1 + residual) and a global average pool, converted whole either way.
// AVX512-LABEL: func.func @mobile_block(
// AVX512:         %[[R:.*]] = "flow.reshape"(%arg0) {shape = array<i64: 1, 2, 16, 56, 56>}
// AVX512-NEXT:    %[[X:.*]] = "flow.transpose"(%[[R]]) {perm = array<i64: 0, 1, 3, 4, 2>} : (tensor<1x2x16x56x56xf32>) -> tensor<1x2x56x56x16xf32>
// AVX512-NEXT:    %[[E:.*]] = "flow.conv_blocked"(%[[X]], %{{.*}}, %{{.*}}) {block = 16 : i64, {{.*}} -> tensor<1x12x56x56x16xf32> loc("expand")
// AVX512-NEXT:    %[[Z:.*]] = "flow.constant"() {value = dense<0.000000e+00> : tensor<192xf32>}
// AVX512-NEXT:    %[[D:.*]] = "flow.conv_blocked"(%[[E]], %{{.*}}, %[[Z]]) {block = 16 : i64, {{.*}}group = 192 : i64{{.*}} -> tensor<1x12x56x56x16xf32> loc("dw")
// AVX512-NEXT:    %[[P:.*]] = "flow.conv_blocked"(%[[D]], %{{.*}}, %{{.*}}, %[[X]]) {block = 16 : i64, {{.*}}epilogue = "add x o3"{{.*}} -> tensor<1x2x56x56x16xf32> loc("project")
// AVX512-NEXT:    %[[G:.*]] = "flow.reduce_mean"(%[[P]]) {axes = array<i64: 2, 3>, keepdims = 1 : i64} : (tensor<1x2x56x56x16xf32>) -> tensor<1x2x1x1x16xf32>
// AVX512-NEXT:    %[[O:.*]] = "flow.reshape"(%[[G]]) {shape = array<i64: 1, 32, 1, 1>}
// AVX512-NEXT:    "func.return"(%[[O]])
// AVX2-LABEL: func.func @mobile_block(
// AVX2:         "flow.transpose"({{.*}} -> tensor<1x4x56x56x8xf32>
// AVX2-NEXT:    "flow.conv_blocked"({{.*}} {block = 8 : i64, {{.*}} -> tensor<1x24x56x56x8xf32> loc("expand")
func.func @mobile_block(%arg0: tensor<1x32x56x56xf32>) -> tensor<1x32x1x1xf32> {
  %w0 = "flow.constant"() {value = dense<0.5> : tensor<192x32x1x1xf32>} : () -> tensor<192x32x1x1xf32>
  %b0 = "flow.constant"() {value = dense<0.25> : tensor<192xf32>} : () -> tensor<192xf32>
  %w1 = "flow.constant"() {value = dense<0.125> : tensor<192x1x3x3xf32>} : () -> tensor<192x1x3x3xf32>
  %b2 = "flow.constant"() {value = dense<0.75> : tensor<32xf32>} : () -> tensor<32xf32>
  %w2 = "flow.constant"() {value = dense<-0.5> : tensor<32x192x1x1xf32>} : () -> tensor<32x192x1x1xf32>
  %0 = "flow.conv"(%arg0, %w0, %b0) {dilations = array<i64: 1, 1>, epilogue = "relu x", group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x56x56xf32>, tensor<192x32x1x1xf32>, tensor<192xf32>) -> tensor<1x192x56x56xf32> loc("expand")
  %1 = "flow.conv"(%0, %w1) {dilations = array<i64: 1, 1>, group = 192 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x192x56x56xf32>, tensor<192x1x3x3xf32>) -> tensor<1x192x56x56xf32> loc("dw")
  %2 = "flow.conv"(%1, %w2, %b2, %arg0) {dilations = array<i64: 1, 1>, epilogue = "add x o3", group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x192x56x56xf32>, tensor<32x192x1x1xf32>, tensor<32xf32>, tensor<1x32x56x56xf32>) -> tensor<1x32x56x56xf32> loc("project")
  %3 = "flow.reduce_mean"(%2) {axes = array<i64: 2, 3>, keepdims = 1 : i64} : (tensor<1x32x56x56xf32>) -> tensor<1x32x1x1xf32> loc("gap")
  "func.return"(%3) : (tensor<1x32x1x1xf32>) -> ()
}
