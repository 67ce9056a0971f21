// RUN: %flowc build %s --passes=split_conv_bands,dce --verify-each --emit ir --split-input-file | FileCheck %s

// DeepLabV3's ASPP conv at dilation 12 on a 16x16 map, quantised: rows 0-3 read the image through taps 1-2,
// rows 4-11 through tap 1 alone, rows 12-15 through taps 0-1 (columns alike). Nine rectangles, each a conv of
// its taps without padding over the input it reads (the centre one a 1x1 conv on rows and columns 4-11), the
// rectangles of a band concatenated along the width and the bands along the height; the middle bands share
// their input slices. The bias is each rectangle's.
// CHECK-LABEL: func.func @aspp_d12(
// CHECK:         %[[B:.*]] = "flow.constant"() {value = dense<100> : tensor<48xi32>}
// CHECK:         %[[W0:.*]] = "flow.constant"() {value = dense<3> : tensor<48x112x2x2xi8>}
// CHECK-NEXT:    %[[C0:.*]] = "flow.conv"(%arg0, %[[W0]], %[[B]]) {dilations = array<i64: 12, 12>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, qtype = !quant.uniform<u8:f32, 5.000000e-01:20>, strides = array<i64: 1, 1>} : {{.*}} -> tensor<1x48x4x4x!quant.uniform<u8:f32, 5.000000e-01:20>>
// CHECK:         %[[S1:.*]] = "flow.slice"(%arg0) {ends = array<i64: 1, 112, 16, 12>, starts = array<i64: 0, 0, 0, 4>, steps = array<i64: 1, 1, 1, 1>}
// CHECK:         "flow.conv"(%[[S1]], %{{.*}}, %[[B]]) {dilations = array<i64: 12, 1>, {{.*}} -> tensor<1x48x4x8x
// CHECK:         %[[R0:.*]] = "flow.concat"(%[[C0]], %{{.*}}, %{{.*}}) {axis = 3 : i64} {{.*}} -> tensor<1x48x4x16x
// CHECK:         %[[S4:.*]] = "flow.slice"(%arg0) {ends = array<i64: 1, 112, 12, 12>, starts = array<i64: 0, 0, 4, 4>,
// CHECK:         "flow.constant"() {value = dense<3> : tensor<48x112x1x1xi8>}
// CHECK-NEXT:    "flow.conv"(%[[S4]], %{{.*}}, %[[B]]) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, {{.*}} -> tensor<1x48x8x8x
// CHECK:         %[[R1:.*]] = "flow.concat"({{.*}}) {axis = 3 : i64} {{.*}} -> tensor<1x48x8x16x
// CHECK:         %[[R2:.*]] = "flow.concat"({{.*}}) {axis = 3 : i64} {{.*}} -> tensor<1x48x4x16x
// CHECK:         %[[Y:.*]] = "flow.concat"(%[[R0]], %[[R1]], %[[R2]]) {axis = 2 : i64} {{.*}} -> tensor<1x48x16x16x!quant.uniform<u8:f32, 5.000000e-01:20>>
// CHECK-NEXT:    "func.return"(%[[Y]])
func.func @aspp_d12(%arg0: tensor<1x112x16x16x!quant.uniform<u8:f32, 5.000000e-02:7>>) -> tensor<1x48x16x16x!quant.uniform<u8:f32, 5.000000e-01:20>> {
  %w = "flow.constant"() {value = dense<3> : tensor<48x112x3x3xi8>} : () -> tensor<48x112x3x3x!quant.uniform<i8:f32, 1.000000e-02>>
  %b = "flow.constant"() {value = dense<100> : tensor<48xi32>} : () -> tensor<48xi32>
  %0 = "flow.conv"(%arg0, %w, %b) {dilations = array<i64: 12, 12>, group = 1 : i64, pads = array<i64: 12, 12, 12, 12>, qtype = !quant.uniform<u8:f32, 5.000000e-01:20>, strides = array<i64: 1, 1>} : (tensor<1x112x16x16x!quant.uniform<u8:f32, 5.000000e-02:7>>, tensor<48x112x3x3x!quant.uniform<i8:f32, 1.000000e-02>>, tensor<48xi32>) -> tensor<1x48x16x16x!quant.uniform<u8:f32, 5.000000e-01:20>> loc("aspp")
  "func.return"(%0) : (tensor<1x48x16x16x!quant.uniform<u8:f32, 5.000000e-01:20>>) -> ()
}

// -----

// The same geometry on 8 channels: the rectangles would save 1728 taps x 32 = 55,296 multiply-adds, below what
// nine kernels' set-up costs, so the conv stays whole.
// CHECK-LABEL: func.func @too_small(
// CHECK:         "flow.conv"(%arg0, {{.*}}pads = array<i64: 12, 12, 12, 12>
// CHECK-NOT:     "flow.concat"
func.func @too_small(%arg0: tensor<1x8x16x16x!quant.uniform<u8:f32, 5.000000e-02:7>>) -> tensor<1x4x16x16x!quant.uniform<u8:f32, 5.000000e-01:20>> {
  %w = "flow.constant"() {value = dense<3> : tensor<4x8x3x3xi8>} : () -> tensor<4x8x3x3x!quant.uniform<i8:f32, 1.000000e-02>>
  %0 = "flow.conv"(%arg0, %w) {dilations = array<i64: 12, 12>, group = 1 : i64, pads = array<i64: 12, 12, 12, 12>, qtype = !quant.uniform<u8:f32, 5.000000e-01:20>, strides = array<i64: 1, 1>} : (tensor<1x8x16x16x!quant.uniform<u8:f32, 5.000000e-02:7>>, tensor<4x8x3x3x!quant.uniform<i8:f32, 1.000000e-02>>) -> tensor<1x4x16x16x!quant.uniform<u8:f32, 5.000000e-01:20>>
  "func.return"(%0) : (tensor<1x4x16x16x!quant.uniform<u8:f32, 5.000000e-01:20>>) -> ()
}

// -----

// A 3x3 conv with pads 1 on a 56x56 map: only the border rows and columns miss a tap (about 7% of the work),
// short of the quarter the rectangles must save.
// CHECK-LABEL: func.func @ordinary(
// CHECK:         "flow.conv"(%arg0, {{.*}}pads = array<i64: 1, 1, 1, 1>
// CHECK-NOT:     "flow.concat"
func.func @ordinary(%arg0: tensor<1x64x56x56x!quant.uniform<u8:f32, 5.000000e-02:7>>) -> tensor<1x64x56x56x!quant.uniform<u8:f32, 5.000000e-01:20>> {
  %w = "flow.constant"() {value = dense<3> : tensor<64x64x3x3xi8>} : () -> tensor<64x64x3x3x!quant.uniform<i8:f32, 1.000000e-02>>
  %0 = "flow.conv"(%arg0, %w) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, qtype = !quant.uniform<u8:f32, 5.000000e-01:20>, strides = array<i64: 1, 1>} : (tensor<1x64x56x56x!quant.uniform<u8:f32, 5.000000e-02:7>>, tensor<64x64x3x3x!quant.uniform<i8:f32, 1.000000e-02>>) -> tensor<1x64x56x56x!quant.uniform<u8:f32, 5.000000e-01:20>>
  "func.return"(%0) : (tensor<1x64x56x56x!quant.uniform<u8:f32, 5.000000e-01:20>>) -> ()
}

// -----

// An f32 conv of the ASPP geometry stays whole: the blocked f32 kernels skip the taps outside the rows.
// CHECK-LABEL: func.func @float_conv(
// CHECK:         "flow.conv"(%arg0, {{.*}}pads = array<i64: 12, 12, 12, 12>
// CHECK-NOT:     "flow.concat"
func.func @float_conv(%arg0: tensor<1x112x16x16xf32>) -> tensor<1x48x16x16xf32> {
  %w = "flow.constant"() {value = dense<0.5> : tensor<48x112x3x3xf32>} : () -> tensor<48x112x3x3xf32>
  %0 = "flow.conv"(%arg0, %w) {dilations = array<i64: 12, 12>, group = 1 : i64, pads = array<i64: 12, 12, 12, 12>, strides = array<i64: 1, 1>} : (tensor<1x112x16x16xf32>, tensor<48x112x3x3xf32>) -> tensor<1x48x16x16xf32>
  "func.return"(%0) : (tensor<1x48x16x16xf32>) -> ()
}
