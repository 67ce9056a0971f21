// A conv of `--quantize int8` (qtype f32: the f32 product) followed by SiLU and the quantisation of the next
// layer's input as lower_quant writes it (div by the scale 0.02, round, add the zero point 7, clamp, cast):
// fuse_epilogue makes it one conv with that epilogue and `to = ui8` (quant_conv_epilogue.test).
module {
  func.func @main(%arg0: tensor<1x4x3x3xui8> {flow.name = "x"}) -> (tensor<1x2x3x3xui8> {flow.name = "y"}) {
    %x = "flow.scast"(%arg0) {qtype = !quant.uniform<u8:f32, 5.000000e-02:3>} : (tensor<1x4x3x3xui8>) -> tensor<1x4x3x3x!quant.uniform<u8:f32, 5.000000e-02:3>>
    %w = "flow.constant"() {value = dense<[[[[1]], [[2]], [[3]], [[4]]], [[[-1]], [[-2]], [[-3]], [[-4]]]]> : tensor<2x4x1x1xi8>} : () -> tensor<2x4x1x1x!quant.uniform<i8:f32, 1.000000e-02:0>>
    %b = "flow.constant"() {value = dense<[10, -10]> : tensor<2xi32>} : () -> tensor<2xi32>
    %y = "flow.conv"(%x, %w, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, qtype = f32, strides = array<i64: 1, 1>} : (tensor<1x4x3x3x!quant.uniform<u8:f32, 5.000000e-02:3>>, tensor<2x4x1x1x!quant.uniform<i8:f32, 1.000000e-02:0>>, tensor<2xi32>) -> tensor<1x2x3x3xf32>
    %s = "flow.sigmoid"(%y) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %m = "flow.mul"(%y, %s) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %sc = "flow.constant"() {value = dense<2.000000e-02> : tensor<f32>} : () -> tensor<f32>
    %zp = "flow.constant"() {value = dense<7.000000e+00> : tensor<f32>} : () -> tensor<f32>
    %lo = "flow.constant"() {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>
    %hi = "flow.constant"() {value = dense<2.550000e+02> : tensor<f32>} : () -> tensor<f32>
    %d = "flow.div"(%m, %sc) : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
    %r = "flow.round"(%d) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %a = "flow.add"(%r, %zp) : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
    %c0 = "flow.max"(%a, %lo) : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
    %c1 = "flow.min"(%c0, %hi) : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
    %q = "flow.cast"(%c1) {to = ui8} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xui8>
    "func.return"(%q) : (tensor<1x2x3x3xui8>) -> ()
  }
}
