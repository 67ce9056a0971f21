// RUN: %flowc build %s --passes=fuse_elementwise,fuse_casts,dce --verify-each --emit ir --split-input-file | FileCheck %s
// RUN: %flowc build %s --passes=fuse_elementwise,fuse_casts,dce --emit ir --split-input-file -o %t.mlir
// RUN: %flowc build %t.mlir --split-input-file --passes=fuse_casts --verify-each --emit ir | FileCheck %s

// A quantised model's float glue (lower_quant's dequantize, add, requantize): the u8 operands are read as
// bytes and the result is stored as bytes; the three casts go.
// CHECK-LABEL: func.func @glue(
// CHECK-NEXT:    %0 = "flow.constant"
// CHECK-NEXT:    %1 = "flow.fused"(%arg0, %0, %arg1) {dtype = f32, program = "mul o0 o1; add s0 o2; round s1", shape = array<i64: 2, 3>, to = ui8} : (tensor<2x3xui8>, tensor<f32>, tensor<2x3xui8>) -> tensor<2x3xui8> loc("q")
// CHECK-NEXT:    "func.return"(%1)
func.func @glue(%arg0: tensor<2x3xui8>, %arg1: tensor<2x3xui8>) -> tensor<2x3xui8> {
  %s = "flow.constant"() {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.cast"(%arg0) {to = f32} : (tensor<2x3xui8>) -> tensor<2x3xf32>
  %1 = "flow.cast"(%arg1) {to = f32} : (tensor<2x3xui8>) -> tensor<2x3xf32>
  %2 = "flow.mul"(%0, %s) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %3 = "flow.add"(%2, %1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = "flow.round"(%3) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("q")
  %5 = "flow.cast"(%4) {to = ui8} : (tensor<2x3xf32>) -> tensor<2x3xui8>
  "func.return"(%5) : (tensor<2x3xui8>) -> ()
}

// -----

// A lone element-wise op becomes a one-step flow.fused to read its operand's bytes.
// CHECK-LABEL: func.func @lone(
// CHECK:         "flow.fused"(%arg0, %0) {dtype = f32, program = "mul o0 o1", shape = array<i64: 4>} : (tensor<4xi8>, tensor<f32>) -> tensor<4xf32>
func.func @lone(%arg0: tensor<4xi8>) -> tensor<4xf32> {
  %s = "flow.constant"() {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.cast"(%arg0) {to = f32} : (tensor<4xi8>) -> tensor<4xf32>
  %1 = "flow.mul"(%0, %s) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  "func.return"(%1) : (tensor<4xf32>) -> ()
}

// -----

// A source as wide as the compute type (i32: an integer GEMM's sums before their dequantize) is read
// directly too; the cast goes.
// CHECK-LABEL: func.func @same_width(
// CHECK-NEXT:    %0 = "flow.constant"
// CHECK-NEXT:    %1 = "flow.fused"(%arg0, %0) {dtype = f32, program = "mul o0 o1", shape = array<i64: 4>} : (tensor<4xi32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT:    "func.return"(%1)
func.func @same_width(%arg0: tensor<4xi32>) -> tensor<4xf32> {
  %s = "flow.constant"() {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.cast"(%arg0) {to = f32} : (tensor<4xi32>) -> tensor<4xf32>
  %1 = "flow.mul"(%0, %s) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  "func.return"(%1) : (tensor<4xf32>) -> ()
}

// -----

// Not folded: a cast from a type wider than the compute type (i64), a result used twice, and a cast to
// bool (a comparison, not a narrowing store).
// CHECK-LABEL: func.func @kept(
// CHECK:         "flow.cast"(%arg0) {to = f32}
// CHECK:         "flow.cast"(%{{.*}}) {to = ui8}
// CHECK:         "flow.cast"(%{{.*}}) {to = i1}
func.func @kept(%arg0: tensor<4xi64>) -> (tensor<4xui8>, tensor<4xf32>, tensor<4xi1>) {
  %0 = "flow.cast"(%arg0) {to = f32} : (tensor<4xi64>) -> tensor<4xf32>
  %1 = "flow.neg"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "flow.cast"(%1) {to = ui8} : (tensor<4xf32>) -> tensor<4xui8>
  %3 = "flow.abs"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %4 = "flow.cast"(%3) {to = i1} : (tensor<4xf32>) -> tensor<4xi1>
  "func.return"(%2, %1, %4) : (tensor<4xui8>, tensor<4xf32>, tensor<4xi1>) -> ()
}
