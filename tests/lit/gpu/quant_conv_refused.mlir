// RUN: not flowc build %s --device cuda --emit ptx -o %t.ptx 2>&1 | FileCheck %s
// RUN: not flowc run %s --device simt 2>&1 | FileCheck %s
// A quantised conv by constant weights: the GPU emitter refuses quantised products, and the CPU kernel the
// fallback would run re-lays its weights at compile time (a table the GPU's weights blob does not hold), so
// the op is listed with the reason. (It once crashed: the fallback's codegen state had no options.)
// CHECK: no GPU kernel (--device cuda) for: conv x1 ('conv': its CPU kernel re-lays its weights at compile time)
func.func @main(%arg0: tensor<1x2x5x5x!quant.uniform<u8:f32, 0.5:10>>) -> (tensor<1x3x3x3xui8>) {
  %w = "flow.constant"() {value = dense<[[[[1, 2]], [[3, 4]]], [[[-1, 0]], [[2, -2]]], [[[5, 5]], [[-5, -5]]]]> : tensor<3x2x1x2xi8>} : () -> tensor<3x2x1x2x!quant.uniform<i8:f32:0, {0.25, 0.125, 0.5}>>
  %b = "flow.constant"() {value = dense<[8, -5, 10]> : tensor<3xi32>} : () -> tensor<3xi32>
  %0 = "flow.conv"(%arg0, %w, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 0, 0, 1>, qtype = !quant.uniform<u8<7:255>:f32, 2.500000e-01:7>, strides = array<i64: 2, 2>} : (tensor<1x2x5x5x!quant.uniform<u8:f32, 0.5:10>>, tensor<3x2x1x2x!quant.uniform<i8:f32:0, {0.25, 0.125, 0.5}>>, tensor<3xi32>) -> tensor<1x3x3x3x!quant.uniform<u8<7:255>:f32, 2.500000e-01:7>> loc("conv")
  %1 = "flow.scast"(%0) {qtype = ui8} : (tensor<1x3x3x3x!quant.uniform<u8<7:255>:f32, 2.500000e-01:7>>) -> tensor<1x3x3x3xui8>
  "func.return"(%1) : (tensor<1x3x3x3xui8>) -> ()
}
