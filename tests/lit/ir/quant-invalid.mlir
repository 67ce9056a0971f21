// Malformed quantised types and their uses are refused with the line and column of the problem.
// RUN: not %flowc build %s -O0 --emit ir --split-input-file 2>&1 | FileCheck %s
// scale must be positive
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+1]]:33: invalid quantised type: scale 0.000000e+00 must be positive, finite and within f32's range
func.func @main(%arg0: tensor<2x!quant.uniform<i8:f32, 0.0>>) {
  return
}

// -----
// negative scale
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+1]]:33: invalid quantised type: scale -5.000000e-01 must be positive, finite and within f32's range
func.func @main(%arg0: tensor<2x!quant.uniform<i8:f32, -0.5>>) {
  return
}

// -----
// f16 scale over its range
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+1]]:33: invalid quantised type: scale 1.000000e+05 must be positive, finite and within f16's range
func.func @main(%arg0: tensor<2x!quant.uniform<i8:f16, 1.0e5>>) {
  return
}

// -----
// zero point outside storage
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+1]]:33: invalid quantised type: zero point 200 is outside the storage range [-128, 127]
func.func @main(%arg0: tensor<2x!quant.uniform<i8:f32, 0.5:200>>) {
  return
}

// -----
// zero point outside narrowed
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+1]]:33: invalid quantised type: zero point 0 is outside the storage range [1, 255]
func.func @main(%arg0: tensor<2x!quant.uniform<u8<1:255>:f32, 0.5>>) {
  return
}

// -----
// per-axis count
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+1]]:35: invalid quantised type: 2 scales for axis 1 of size 3
func.func @main(%arg0: tensor<2x3x!quant.uniform<i8:f32:1, {0.1, 0.2}>>) {
  return
}

// -----
// axis out of range
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+1]]:35: invalid quantised type: quantised axis 2 is out of range for rank 2
func.func @main(%arg0: tensor<2x3x!quant.uniform<i8:f32:2, {0.1, 0.2}>>) {
  return
}

// -----
// range beyond type
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+1]]:33: invalid quantised type: storage range [-200, 127] is not a non-empty part of i8's [-128, 127]
func.func @main(%arg0: tensor<2x!quant.uniform<i8<-200:127>:f32, 0.5>>) {
  return
}

// -----
// empty range
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+1]]:33: invalid quantised type: storage range [5, 5] is not a non-empty part of i8's [-128, 127]
func.func @main(%arg0: tensor<2x!quant.uniform<i8<5:5>:f32, 0.5:5>>) {
  return
}

// -----
// storage
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+1]]:48: quantised storage type must be i8, u8, i16, u16 or i32
func.func @main(%arg0: tensor<2x!quant.uniform<i64:f32, 0.5>>) {
  return
}

// -----
// expressed
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+1]]:51: quantised expressed type must be f32, f16, bf16 or f64
func.func @main(%arg0: tensor<2x!quant.uniform<i8:i32, 0.5>>) {
  return
}

// -----
// scales without axis
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+1]]:56: expected a scale (a float literal)
func.func @main(%arg0: tensor<2x!quant.uniform<i8:f32, {0.1, 0.2}>>) {
  return
}

// -----
// other dialect
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+1]]:33: unsupported dialect type (only !quant.uniform<...>)
func.func @main(%arg0: tensor<2x!foo.bar<i8>>) {
  return
}

// -----
// constant data outside the narrowed storage range
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+2]]:8: flow.constant: value element 1 is -128, outside the storage range [-127, 127]
func.func @main() -> tensor<2x!quant.uniform<i8<-127:127>:f32, 0.5>> {
  %0 = "flow.constant"() {value = dense<[1, -128]> : tensor<2xi8>} : () -> tensor<2x!quant.uniform<i8<-127:127>:f32, 0.5>>
  return %0 : tensor<2x!quant.uniform<i8<-127:127>:f32, 0.5>>
}

// -----
// constant data must have the storage type
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+2]]:8: flow.constant: value has type tensor<2xui8> but a tensor<2x!quant.uniform<i8:f32, 5.000000e-01>> result needs tensor<2xi8>
func.func @main() -> tensor<2x!quant.uniform<i8:f32, 0.5>> {
  %0 = "flow.constant"() {value = dense<[1, 2]> : tensor<2xui8>} : () -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  return %0 : tensor<2x!quant.uniform<i8:f32, 0.5>>
}

// -----
// dense literals take no quantised element type
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+2]]:35: constant data takes its storage type (write i8, not a quantised type)
func.func @main() -> tensor<2x!quant.uniform<i8:f32, 0.5>> {
  %0 = "flow.constant"() {value = dense<[1, 2]> : tensor<2x!quant.uniform<i8:f32, 0.5>>} : () -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  return %0 : tensor<2x!quant.uniform<i8:f32, 0.5>>
}

// -----
// no op computes with quantised operands yet
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+2]]:8: flow.relu: operand 0 has the quantised type tensor<2x!quant.uniform<i8:f32, 5.000000e-01>>, which this op does not take
func.func @main(%arg0: tensor<2x!quant.uniform<i8:f32, 0.5>>) -> tensor<2x!quant.uniform<i8:f32, 0.5>> {
  %0 = "flow.relu"(%arg0) : (tensor<2x!quant.uniform<i8:f32, 0.5>>) -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  return %0 : tensor<2x!quant.uniform<i8:f32, 0.5>>
}

// -----
// an op's inferred result is not quantised
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+2]]:8: flow.relu: result 0 has type tensor<2x!quant.uniform<i8:f32, 5.000000e-01>> but operands imply tensor<2xi8>
func.func @main(%arg0: tensor<2xi8>) -> tensor<2x!quant.uniform<i8:f32, 0.5>> {
  %0 = "flow.relu"(%arg0) : (tensor<2xi8>) -> tensor<2x!quant.uniform<i8:f32, 0.5>>
  return %0 : tensor<2x!quant.uniform<i8:f32, 0.5>>
}

// -----
// a quantised value is not its storage type
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+2]]:10: operand %arg0 is used as tensor<2xi8> but has type tensor<2x!quant.uniform<i8:f32, 5.000000e-01>>
func.func @main(%arg0: tensor<2x!quant.uniform<i8:f32, 0.5>>) -> tensor<2xi8> {
  return %arg0 : tensor<2xi8>
}

// -----
// quantize takes f32
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+2]]:8: flow.quantize: input must be f32, not i32
func.func @main(%arg0: tensor<2xi32>) -> tensor<2x!quant.uniform<u8:f32, 0.5>> {
  %0 = "flow.quantize"(%arg0) {qtype = !quant.uniform<u8:f32, 0.5>} : (tensor<2xi32>) -> tensor<2x!quant.uniform<u8:f32, 0.5>>
  return %0 : tensor<2x!quant.uniform<u8:f32, 0.5>>
}

// -----
// dequantize takes a quantised value
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+2]]:8: flow.dequantize: input must be quantised, not ui8
func.func @main(%arg0: tensor<2xui8>) -> tensor<2xf32> {
  %0 = "flow.dequantize"(%arg0) : (tensor<2xui8>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----
// scast keeps the storage type
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+2]]:8: flow.scast: a plain i8 input casts to a quantised type stored as i8
func.func @main(%arg0: tensor<2xi8>) -> tensor<2x!quant.uniform<u8:f32, 0.5>> {
  %0 = "flow.scast"(%arg0) {qtype = !quant.uniform<u8:f32, 0.5>} : (tensor<2xi8>) -> tensor<2x!quant.uniform<u8:f32, 0.5>>
  return %0 : tensor<2x!quant.uniform<u8:f32, 0.5>>
}

// -----
// a quantised matmul needs a qtype
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+2]]:8: flow.matmul: a quantised form needs quantised input and weight and a qtype
func.func @main(%arg0: tensor<2x3x!quant.uniform<u8:f32, 0.5>>, %arg1: tensor<3x2x!quant.uniform<i8:f32, 0.5>>) -> tensor<2x2xi32> {
  %0 = "flow.matmul"(%arg0, %arg1) : (tensor<2x3x!quant.uniform<u8:f32, 0.5>>, tensor<3x2x!quant.uniform<i8:f32, 0.5>>) -> tensor<2x2xi32>
  return %0 : tensor<2x2xi32>
}

// -----
// the weight of a quantised conv is per tensor or per output channel
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+2]]:8: flow.conv: the weight must be quantised 8-bit, per tensor or along dim 0, expressing f32
func.func @main(%arg0: tensor<1x2x3x3x!quant.uniform<u8:f32, 0.5>>, %arg1: tensor<1x2x1x1x!quant.uniform<i8:f32:1, {0.5, 0.5}>>) -> tensor<1x1x3x3xf32> {
  %0 = "flow.conv"(%arg0, %arg1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, qtype = f32, strides = array<i64: 1, 1>} : (tensor<1x2x3x3x!quant.uniform<u8:f32, 0.5>>, tensor<1x2x1x1x!quant.uniform<i8:f32:1, {0.5, 0.5}>>) -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}

// -----
// a quantised bias is i32 with one element per output channel
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+2]]:8: flow.conv: the bias must have 1 elements, one per output channel
func.func @main(%arg0: tensor<1x2x3x3x!quant.uniform<u8:f32, 0.5>>, %arg1: tensor<1x2x1x1x!quant.uniform<i8:f32, 0.5>>, %arg2: tensor<2xi32>) -> tensor<1x1x3x3xf32> {
  %0 = "flow.conv"(%arg0, %arg1, %arg2) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, qtype = f32, strides = array<i64: 1, 1>} : (tensor<1x2x3x3x!quant.uniform<u8:f32, 0.5>>, tensor<1x2x1x1x!quant.uniform<i8:f32, 0.5>>, tensor<2xi32>) -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}

// -----
// pass-through ops keep one per-tensor type
// CHECK: error: {{.*}}quant-invalid.mlir:[[@LINE+2]]:8: flow.concat: quantised operands must share one per-tensor quantised type
func.func @main(%arg0: tensor<2x!quant.uniform<u8:f32, 0.5>>, %arg1: tensor<2x!quant.uniform<u8:f32, 0.25>>) -> tensor<4x!quant.uniform<u8:f32, 0.5>> {
  %0 = "flow.concat"(%arg0, %arg1) {axis = 0 : i64} : (tensor<2x!quant.uniform<u8:f32, 0.5>>, tensor<2x!quant.uniform<u8:f32, 0.25>>) -> tensor<4x!quant.uniform<u8:f32, 0.5>>
  return %0 : tensor<4x!quant.uniform<u8:f32, 0.5>>
}
