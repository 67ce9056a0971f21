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
