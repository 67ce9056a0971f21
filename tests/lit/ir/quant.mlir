// Quantised element types as MLIR's quant dialect spells them: per tensor and per axis, signed and
// unsigned storage (u8; the builtin ui8 is read too), a narrowed storage range, f32/f16/bf16 expressed
// types, a zero point of 0 left out. print -> parse -> print is identical, mlir-opt-19 accepts the text
// and prints it back the same way, and a constant of a quantised type writes its data with the storage
// type, inline or (with --weights) as a resource blob.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %flowc build %s -O0 --emit ir --weights -o %t/a.mlir
// RUN: FileCheck %s < %t/a.mlir
// RUN: %flowc build %t/a.mlir -O0 --emit ir --weights | diff %t/a.mlir -
// RUN: mlir-opt --allow-unregistered-dialect %t/a.mlir -o %t/opt.mlir
// RUN: %flowc build %t/opt.mlir -O0 --emit ir --weights | diff %t/a.mlir -
// RUN: %flowc build %s -O2 --emit ir --weights | diff %t/a.mlir -
// Values of quantised types compile: their storage integers are what inputs, outputs and constants hold.
// RUN: %flowc build %s -o %t/exe
// RUN: %flowc build %S/Inputs/quant-const.mlir --emit obj -o %t/k.o

// CHECK:      func.func @main(%arg0: tensor<1x8x!quant.uniform<i8:f32, 5.000000e-02:-3>> {flow.name = "a"},
// CHECK-SAME:   %arg1: tensor<4x!quant.uniform<u8:f16, 2.500000e-01:128>> {flow.name = "b"},
// CHECK-SAME:   %arg2: tensor<2x3x!quant.uniform<i8<-127:127>:f32:1, {1.000000e-01,2.000000e-01:-1,3.000000e-01:5}>> {flow.name = "c"},
// CHECK-SAME:   %arg3: tensor<3x!quant.uniform<i32:bf16, 1.000000e+00>> {flow.name = "d"},
// CHECK-SAME:   %arg4: tensor<2x!quant.uniform<i16:f32:0, {1.000000e-03,2.000000e-03}>> {flow.name = "e"},
// CHECK-SAME:   %arg5: tensor<!quant.uniform<u16<0:1000>:f32, 1.000000e+00:7>> {flow.name = "f"})
// CHECK:      "flow.constant"() {value = dense<{{\[}}[1, -2, 127], [0, 5, -127]]> : tensor<2x3xi8>} : () -> tensor<2x3x!quant.uniform<i8<-127:127>:f32:1, {1.000000e-01,2.000000e-01:-1,3.000000e-01:5}>>
// CHECK:      "flow.constant"() {value = dense_resource<c0> : tensor<20xui8>} : () -> tensor<20x!quant.uniform<u8:f32, 5.000000e-01:10>>
// CHECK:      c0: "0x01000000000102030405060708090A0B0C0D0E0F10111213"
module {
  func.func @main(%arg0: tensor<1x8x!quant.uniform<i8:f32, 0.05:-3>> {flow.name = "a"},
                  %arg1: tensor<4x!quant.uniform<ui8:f16, 0.25:128>> {flow.name = "b"},
                  %arg2: tensor<2x3x!quant.uniform<i8<-127:127>:f32:1, {0.1:0, 0.2:-1, 0.3:5}>> {flow.name = "c"},
                  %arg3: tensor<3x!quant.uniform<i32:bf16, 1.0:0>> {flow.name = "d"},
                  %arg4: tensor<2x!quant.uniform<i16:f32:0, {1.0e-3, 2.0e-3}>> {flow.name = "e"},
                  %arg5: tensor<!quant.uniform<u16<0:1000>:f32, 1.0:7>> {flow.name = "f"})
      -> (tensor<1x8x!quant.uniform<i8:f32, 0.05:-3>> {flow.name = "a2"},
          tensor<4x!quant.uniform<u8:f16, 0.25:128>> {flow.name = "b2"},
          tensor<2x3x!quant.uniform<i8<-127:127>:f32:1, {0.1, 0.2:-1, 0.3:5}>> {flow.name = "c2"},
          tensor<3x!quant.uniform<i32:bf16, 1.0>> {flow.name = "d2"},
          tensor<2x!quant.uniform<i16:f32:0, {1.0e-3, 2.0e-3}>> {flow.name = "e2"},
          tensor<!quant.uniform<u16<0:1000>:f32, 1.0:7>> {flow.name = "f2"},
          tensor<2x3x!quant.uniform<i8<-127:127>:f32:1, {0.1, 0.2:-1, 0.3:5}>> {flow.name = "k"},
          tensor<20x!quant.uniform<u8:f32, 0.5:10>> {flow.name = "w"}) {
    %0 = "flow.constant"() {value = dense<[[1, -2, 127], [0, 5, -127]]> : tensor<2x3xi8>} : () -> tensor<2x3x!quant.uniform<i8<-127:127>:f32:1, {0.1, 0.2:-1, 0.3:5}>>
    %1 = "flow.constant"() {value = dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]> : tensor<20xui8>} : () -> tensor<20x!quant.uniform<u8:f32, 0.5:10>>
    "func.return"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %0, %1) : (tensor<1x8x!quant.uniform<i8:f32, 0.05:-3>>, tensor<4x!quant.uniform<u8:f16, 0.25:128>>, tensor<2x3x!quant.uniform<i8<-127:127>:f32:1, {0.1, 0.2:-1, 0.3:5}>>, tensor<3x!quant.uniform<i32:bf16, 1.0>>, tensor<2x!quant.uniform<i16:f32:0, {1.0e-3, 2.0e-3}>>, tensor<!quant.uniform<u16<0:1000>:f32, 1.0:7>>, tensor<2x3x!quant.uniform<i8<-127:127>:f32:1, {0.1, 0.2:-1, 0.3:5}>>, tensor<20x!quant.uniform<u8:f32, 0.5:10>>) -> ()
  }
}
