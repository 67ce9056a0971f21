// RUN: not flowc build %s --device cuda --emit ptx -o %t.ptx 2>&1 | FileCheck %s
// A quantised matmul whose weights are not a constant has no kernel on either path (the GPU emitter refuses
// quantised products, the CPU loop nest it falls back to needs constant weights): refused with the node and
// the reason, never miscomputed.
// CHECK: no GPU kernel (--device cuda) for: matmul x1 ('fc': quantised matmul: the weights must be a constant with data)
module {
  func.func @main(%a: tensor<3x4x!quant.uniform<i8:f32, 0.5:-3>> {flow.name = "a"},
                  %b: tensor<4x2x!quant.uniform<i8:f32:1, {0.25:1, 0.125:-2}>> {flow.name = "b"})
                  -> (tensor<3x2xf32> {flow.name = "y"}) {
    %m = "flow.matmul"(%a, %b) {qtype = f32} : (tensor<3x4x!quant.uniform<i8:f32, 0.5:-3>>, tensor<4x2x!quant.uniform<i8:f32:1, {0.25:1, 0.125:-2}>>) -> tensor<3x2xf32> loc("fc")
    return %m : tensor<3x2xf32>
  }
}
