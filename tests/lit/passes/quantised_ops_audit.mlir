// RUN: %flowc build %s --passes=fold_batchnorm,fuse_epilogue,prune_conv_taps,hoist_avg_pool,layout,quantize_dynamic --verify-each --emit ir --split-input-file | FileCheck %s
// RUN: %flowc build %s --passes=cse,canonicalize --verify-each --emit ir --split-input-file | FileCheck %s --check-prefix=CSE

// The passes that rewrite conv/matmul by their f32 semantics leave quantised ones alone, even when the
// result is f32 (qtype f32) and followed by what they would otherwise take: fold_batchnorm does not scale
// integer weights by the mul/add after the conv (nor the matmul's by the mul after it), fuse_epilogue fuses
// no relu or bias into an integer kernel, layout does not block the conv, hoist_avg_pool does not move the
// pool above the 1x1 conv, prune_conv_taps leaves the taps that read only padding, quantize_dynamic does
// not quantise the matmul again.
// CHECK-LABEL: func.func @f32_results(
// CHECK:         %[[C:[0-9]+]] = "flow.conv"(%arg0, %{{[0-9]+}}) {dilations = array<i64: 4, 4>, group = 1 : i64, pads = array<i64: 4, 4, 4, 4>, qtype = f32, strides = array<i64: 1, 1>} : (tensor<1x8x4x4x!quant.uniform<u8:f32, 1.000000e-01:3>>, tensor<8x8x3x3x!quant.uniform<i8:f32, 5.000000e-01>>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    %[[M:[0-9]+]] = "flow.mul"(%[[C]], %{{[0-9]+}})
// CHECK-NEXT:    %[[A:[0-9]+]] = "flow.add"(%[[M]], %{{[0-9]+}})
// CHECK-NEXT:    %[[R:[0-9]+]] = "flow.relu"(%[[A]])
// CHECK-NEXT:    %[[P:[0-9]+]] = "flow.conv"(%arg1, %{{[0-9]+}}) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, qtype = f32, strides = array<i64: 1, 1>}
// CHECK-NEXT:    "flow.avg_pool"(%[[P]])
// CHECK:         %[[MM:[0-9]+]] = "flow.matmul"(%arg2, %{{[0-9]+}}) {qtype = f32} : (tensor<4x64x!quant.uniform<u8:f32, 1.000000e-01:3>>, tensor<64x64x!quant.uniform<i8:f32, 5.000000e-01>>) -> tensor<4x64xf32>
// CHECK-NEXT:    "flow.mul"(%[[MM]], %{{[0-9]+}})
func.func @f32_results(%arg0: tensor<1x8x4x4x!quant.uniform<u8:f32, 0.1:3>>, %arg1: tensor<1x8x4x4x!quant.uniform<u8:f32, 0.1:3>>, %arg2: tensor<4x64x!quant.uniform<u8:f32, 0.1:3>>) -> (tensor<1x8x4x4xf32>, tensor<1x8x2x2xf32>, tensor<4x64xf32>) {
  %w = "flow.constant"() {value = dense<1> : tensor<8x8x3x3xi8>} : () -> tensor<8x8x3x3x!quant.uniform<i8:f32, 0.5>>
  %w1 = "flow.constant"() {value = dense<1> : tensor<8x8x1x1xi8>} : () -> tensor<8x8x1x1x!quant.uniform<i8:f32, 0.5>>
  %wm = "flow.constant"() {value = dense<1> : tensor<64x64xi8>} : () -> tensor<64x64x!quant.uniform<i8:f32, 0.5>>
  %s = "flow.constant"() {value = dense<2.0> : tensor<8x1x1xf32>} : () -> tensor<8x1x1xf32>
  %sm = "flow.constant"() {value = dense<2.0> : tensor<64xf32>} : () -> tensor<64xf32>
  %0 = "flow.conv"(%arg0, %w) {dilations = array<i64: 4, 4>, group = 1 : i64, pads = array<i64: 4, 4, 4, 4>, qtype = f32, strides = array<i64: 1, 1>} : (tensor<1x8x4x4x!quant.uniform<u8:f32, 0.1:3>>, tensor<8x8x3x3x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x8x4x4xf32>
  %1 = "flow.mul"(%0, %s) : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %2 = "flow.add"(%1, %s) : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %3 = "flow.relu"(%2) : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %4 = "flow.conv"(%arg1, %w1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, qtype = f32, strides = array<i64: 1, 1>} : (tensor<1x8x4x4x!quant.uniform<u8:f32, 0.1:3>>, tensor<8x8x1x1x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x8x4x4xf32>
  %5 = "flow.avg_pool"(%4) {ceil_mode = 0 : i64, count_include_pad = 0 : i64, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x8x4x4xf32>) -> tensor<1x8x2x2xf32>
  %6 = "flow.matmul"(%arg2, %wm) {qtype = f32} : (tensor<4x64x!quant.uniform<u8:f32, 0.1:3>>, tensor<64x64x!quant.uniform<i8:f32, 0.5>>) -> tensor<4x64xf32>
  %7 = "flow.mul"(%6, %sm) : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  "func.return"(%3, %5, %7) : (tensor<1x8x4x4xf32>, tensor<1x8x2x2xf32>, tensor<4x64xf32>) -> ()
}

// -----

// CSE merges quantize ops only with equal qtype attributes (and so equal result types); canonicalize keeps a
// scast pair that changes the range of a quantised type (a narrowed result viewed as the full type).
// CSE-LABEL: func.func @cse(
// CSE-NEXT:    %0 = "flow.quantize"(%arg0) {qtype = !quant.uniform<u8:f32, 1.000000e-01:3>}
// CSE-NEXT:    %1 = "flow.quantize"(%arg0) {qtype = !quant.uniform<u8:f32, 2.000000e-01:3>}
// CSE-NEXT:    %2 = "flow.scast"(%arg1) {qtype = ui8}
// CSE-NEXT:    %3 = "flow.scast"(%2) {qtype = !quant.uniform<u8:f32, 1.000000e-01:3>}
// CSE-NEXT:    "func.return"(%0, %0, %1, %3)
func.func @cse(%arg0: tensor<4xf32>, %arg1: tensor<4x!quant.uniform<u8<3:255>:f32, 0.1:3>>) -> (tensor<4x!quant.uniform<u8:f32, 0.1:3>>, tensor<4x!quant.uniform<u8:f32, 0.1:3>>, tensor<4x!quant.uniform<u8:f32, 0.2:3>>, tensor<4x!quant.uniform<u8:f32, 0.1:3>>) {
  %0 = "flow.quantize"(%arg0) {qtype = !quant.uniform<u8:f32, 0.1:3>} : (tensor<4xf32>) -> tensor<4x!quant.uniform<u8:f32, 0.1:3>>
  %1 = "flow.quantize"(%arg0) {qtype = !quant.uniform<u8:f32, 0.1:3>} : (tensor<4xf32>) -> tensor<4x!quant.uniform<u8:f32, 0.1:3>>
  %2 = "flow.quantize"(%arg0) {qtype = !quant.uniform<u8:f32, 0.2:3>} : (tensor<4xf32>) -> tensor<4x!quant.uniform<u8:f32, 0.2:3>>
  %3 = "flow.scast"(%arg1) {qtype = ui8} : (tensor<4x!quant.uniform<u8<3:255>:f32, 0.1:3>>) -> tensor<4xui8>
  %4 = "flow.scast"(%3) {qtype = !quant.uniform<u8:f32, 0.1:3>} : (tensor<4xui8>) -> tensor<4x!quant.uniform<u8:f32, 0.1:3>>
  "func.return"(%0, %1, %2, %4) : (tensor<4x!quant.uniform<u8:f32, 0.1:3>>, tensor<4x!quant.uniform<u8:f32, 0.1:3>>, tensor<4x!quant.uniform<u8:f32, 0.2:3>>, tensor<4x!quant.uniform<u8:f32, 0.1:3>>) -> ()
}
