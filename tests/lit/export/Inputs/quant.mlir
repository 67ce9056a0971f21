module {
  func.func @main(%x: tensor<1x2x4x4xf32> {flow.name = "x"}, %a: tensor<3x4xf32> {flow.name = "a"}) -> (tensor<1x3x2x2xui8> {flow.name = "y"}, tensor<3x2xf32> {flow.name = "m"}, tensor<1x2x4x4xf32> {flow.name = "xr"}) {
    %w = "flow.constant"() {value = dense<[[[[1, -2, 3], [4, 5, -6], [7, 8, 9]], [[-1, 2, 3], [4, -5, 6], [7, 8, -9]]], [[[1, 1, 1], [1, 1, 1], [1, 1, 1]], [[2, 2, 2], [2, 2, 2], [2, 2, 2]]], [[[0, 0, 0], [0, 127, 0], [0, 0, 0]], [[0, 0, 0], [0, -128, 0], [0, 0, 0]]]]> : tensor<3x2x3x3xi8>} : () -> tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.01, 0.02, 0.03}>> loc("conv.weight")
    %b = "flow.constant"() {value = dense<[5, -7, 100]> : tensor<3xi32>} : () -> tensor<3xi32> loc("conv.bias")
    %q = "flow.quantize"(%x) {qtype = !quant.uniform<u8:f32, 0.05:10>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4x!quant.uniform<u8:f32, 0.05:10>> loc("quant")
    %c = "flow.conv"(%q, %w, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, qtype = !quant.uniform<u8<10:200>:f32, 0.1:10>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4x!quant.uniform<u8:f32, 0.05:10>>, tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.01, 0.02, 0.03}>>, tensor<3xi32>) -> tensor<1x3x2x2x!quant.uniform<u8<10:200>:f32, 0.1:10>> loc("conv")
    %y = "flow.scast"(%c) {qtype = ui8} : (tensor<1x3x2x2x!quant.uniform<u8<10:200>:f32, 0.1:10>>) -> tensor<1x3x2x2xui8> loc("y")
    %aq = "flow.quantize"(%a) {qtype = !quant.uniform<i8:f32, 0.5:-3>} : (tensor<3x4xf32>) -> tensor<3x4x!quant.uniform<i8:f32, 0.5:-3>> loc("aquant")
    %bm = "flow.constant"() {value = dense<[[1, -1], [2, 127], [-128, 3], [0, 5]]> : tensor<4x2xi8>} : () -> tensor<4x2x!quant.uniform<i8:f32:1, {0.25:1, 0.125:-2}>> loc("fc.weight")
    %m = "flow.matmul"(%aq, %bm) {qtype = f32} : (tensor<3x4x!quant.uniform<i8:f32, 0.5:-3>>, tensor<4x2x!quant.uniform<i8:f32:1, {0.25:1, 0.125:-2}>>) -> tensor<3x2xf32> loc("fc")
    %xr = "flow.dequantize"(%q) : (tensor<1x2x4x4x!quant.uniform<u8:f32, 0.05:10>>) -> tensor<1x2x4x4xf32> loc("dequant")
    "func.return"(%y, %m, %xr) : (tensor<1x3x2x2xui8>, tensor<3x2xf32>, tensor<1x2x4x4xf32>) -> ()
  }
}
