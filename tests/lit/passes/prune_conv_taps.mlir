// RUN: %flowc build %s --passes=prune_conv_taps,dce --verify-each --emit ir --split-input-file | FileCheck %s

// DeepLabV3's ASPP branch on a 16x16 map: dilation 24 with pads 24. The off-centre taps read only
// padding for every output pixel, so the conv becomes a 1x1 conv on the centre tap, unpadded, dilation 1.
// CHECK-LABEL: func.func @aspp_d24(
// CHECK:         %[[W:.*]] = "flow.constant"() {value = dense<{{.*}}> : tensor<2x3x1x1xf32>}
// CHECK-NEXT:    %{{.*}} = "flow.conv"(%arg0, %[[W]], %{{.*}}) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x16x16xf32>, tensor<2x3x1x1xf32>, tensor<2xf32>) -> tensor<1x2x16x16xf32> loc("aspp")
func.func @aspp_d24(%arg0: tensor<1x3x16x16xf32>) -> tensor<1x2x16x16xf32> {
  %w = "flow.constant"() {value = dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0], [16.0, 17.0, 18.0]], [[19.0, 20.0, 21.0], [22.0, 23.0, 24.0], [25.0, 26.0, 27.0]]], [[[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -9.0]], [[-10.0, -11.0, -12.0], [-13.0, -14.0, -15.0], [-16.0, -17.0, -18.0]], [[-19.0, -20.0, -21.0], [-22.0, -23.0, -24.0], [-25.0, -26.0, -27.0]]]]> : tensor<2x3x3x3xf32>} : () -> tensor<2x3x3x3xf32>
  %b = "flow.constant"() {value = dense<[0.5, -0.5]> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = "flow.conv"(%arg0, %w, %b) {dilations = array<i64: 24, 24>, group = 1 : i64, pads = array<i64: 24, 24, 24, 24>, strides = array<i64: 1, 1>} : (tensor<1x3x16x16xf32>, tensor<2x3x3x3xf32>, tensor<2xf32>) -> tensor<1x2x16x16xf32> loc("aspp")
  "func.return"(%0) : (tensor<1x2x16x16xf32>) -> ()
}

// -----

// The centre taps are the ones kept: w[:, :, 1, 1] = 5, 14, 23 and -5, -14, -23.
// CHECK-LABEL: func.func @centre_values(
// CHECK:         "flow.constant"() {value = dense<{{\[\[\[\[}}5.000000e+00]], {{\[\[}}1.400000e+01]], {{\[\[}}2.300000e+01]]], {{\[\[\[}}-5.000000e+00]], {{\[\[}}-1.400000e+01]], {{\[\[}}-2.300000e+01]]]]> : tensor<2x3x1x1xf32>}
func.func @centre_values(%arg0: tensor<1x3x5x5xf32>) -> tensor<1x2x5x5xf32> {
  %w = "flow.constant"() {value = dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0], [16.0, 17.0, 18.0]], [[19.0, 20.0, 21.0], [22.0, 23.0, 24.0], [25.0, 26.0, 27.0]]], [[[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -9.0]], [[-10.0, -11.0, -12.0], [-13.0, -14.0, -15.0], [-16.0, -17.0, -18.0]], [[-19.0, -20.0, -21.0], [-22.0, -23.0, -24.0], [-25.0, -26.0, -27.0]]]]> : tensor<2x3x3x3xf32>} : () -> tensor<2x3x3x3xf32>
  %0 = "flow.conv"(%arg0, %w) {dilations = array<i64: 6, 6>, group = 1 : i64, pads = array<i64: 6, 6, 6, 6>, strides = array<i64: 1, 1>} : (tensor<1x3x5x5xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x5x5xf32>
  "func.return"(%0) : (tensor<1x2x5x5xf32>) -> ()
}

// -----

// Partial: dilation 12 on a 16x16 map. Every tap reads the map for some output pixel (rows 12..15 for
// the first tap), so nothing is pruned.
// CHECK-LABEL: func.func @aspp_d12(
// CHECK:         "flow.conv"(%arg0, %{{.*}}) {dilations = array<i64: 12, 12>, group = 1 : i64, pads = array<i64: 12, 12, 12, 12>, {{.*}}tensor<4x8x3x3xf32>
func.func @aspp_d12(%arg0: tensor<1x8x16x16xf32>) -> tensor<1x4x16x16xf32> {
  %w = "flow.constant"() {value = dense<0.5> : tensor<4x8x3x3xf32>} : () -> tensor<4x8x3x3xf32>
  %0 = "flow.conv"(%arg0, %w) {dilations = array<i64: 12, 12>, group = 1 : i64, pads = array<i64: 12, 12, 12, 12>, strides = array<i64: 1, 1>} : (tensor<1x8x16x16xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x16x16xf32>
  "func.return"(%0) : (tensor<1x4x16x16xf32>) -> ()
}

// -----

// One dim at a time: rows (H = 8 < dilation 10) keep only the centre tap, columns (W = 20) keep all
// three; a grouped conv keeps its group.
// CHECK-LABEL: func.func @rows_only(
// CHECK:         "flow.conv"(%arg0, %{{.*}}) {dilations = array<i64: 1, 10>, group = 2 : i64, pads = array<i64: 0, 10, 0, 10>, {{.*}} : (tensor<1x4x8x20xf32>, tensor<6x2x1x3xf32>) -> tensor<1x6x8x20xf32>
func.func @rows_only(%arg0: tensor<1x4x8x20xf32>) -> tensor<1x6x8x20xf32> {
  %w = "flow.constant"() {value = dense<0.5> : tensor<6x2x3x3xf32>} : () -> tensor<6x2x3x3xf32>
  %0 = "flow.conv"(%arg0, %w) {dilations = array<i64: 10, 10>, group = 2 : i64, pads = array<i64: 10, 10, 10, 10>, strides = array<i64: 1, 1>} : (tensor<1x4x8x20xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x8x20xf32>
  "func.return"(%0) : (tensor<1x6x8x20xf32>) -> ()
}

// -----

// Asymmetric pads and stride 2 on a 1-D conv: pads (3, 9), dilation 4, K = 5 on a length-10 map (output 3):
// tap kk reads 2o - 3 + 4kk; tap 0 reads -3, -1 and 1 (inside), tap 4 reads 13, 15, 17 only: taps 0..3 stay,
// pad_end 9 - 4 = 5.
// CHECK-LABEL: func.func @conv1d_asym(
// CHECK:         "flow.conv"(%arg0, %{{.*}}) {dilations = array<i64: 4>, group = 1 : i64, pads = array<i64: 3, 5>, strides = array<i64: 2>} : (tensor<1x2x10xf32>, tensor<3x2x4xf32>) -> tensor<1x3x3xf32>
func.func @conv1d_asym(%arg0: tensor<1x2x10xf32>) -> tensor<1x3x3xf32> {
  %w = "flow.constant"() {value = dense<0.5> : tensor<3x2x5xf32>} : () -> tensor<3x2x5xf32>
  %0 = "flow.conv"(%arg0, %w) {dilations = array<i64: 4>, group = 1 : i64, pads = array<i64: 3, 9>, strides = array<i64: 2>} : (tensor<1x2x10xf32>, tensor<3x2x5xf32>) -> tensor<1x3x3xf32>
  "func.return"(%0) : (tensor<1x3x3xf32>) -> ()
}

// -----

// Weights that are not constants are left alone.
// CHECK-LABEL: func.func @runtime_weights(
// CHECK:         "flow.conv"(%arg0, %arg1) {dilations = array<i64: 24, 24>
func.func @runtime_weights(%arg0: tensor<1x3x16x16xf32>, %arg1: tensor<2x3x3x3xf32>) -> tensor<1x2x16x16xf32> {
  %0 = "flow.conv"(%arg0, %arg1) {dilations = array<i64: 24, 24>, group = 1 : i64, pads = array<i64: 24, 24, 24, 24>, strides = array<i64: 1, 1>} : (tensor<1x3x16x16xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x16x16xf32>
  "func.return"(%0) : (tensor<1x2x16x16xf32>) -> ()
}
