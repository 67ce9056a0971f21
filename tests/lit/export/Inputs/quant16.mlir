module {
  func.func @main(%x: tensor<2x3xf32> {flow.name = "x"}) -> (tensor<2x3xi16> {flow.name = "q"}) {
    %q = "flow.quantize"(%x) {qtype = !quant.uniform<i16:f32, 0.05:10>} : (tensor<2x3xf32>) -> tensor<2x3x!quant.uniform<i16:f32, 0.05:10>> loc("quant")
    %s = "flow.scast"(%q) {qtype = i16} : (tensor<2x3x!quant.uniform<i16:f32, 0.05:10>>) -> tensor<2x3xi16> loc("s")
    "func.return"(%s) : (tensor<2x3xi16>) -> ()
  }
}
