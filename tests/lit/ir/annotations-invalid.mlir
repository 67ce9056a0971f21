// Malformed annotations are refused with the line and column of the annotation's name (or of the
// malformed part of its value).
// RUN: not %flowc build %s -O0 --emit ir --split-input-file 2>&1 | FileCheck %s
// unknown name in the flow namespace
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:28: unknown annotation 'flow.spb'
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.relu"(%arg0) {flow.spb = ["B"]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// SBP entries are S(axis), B or P(sum|max|min)
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:28: flow.sbp must be ["S(k)" | "B" | "P(sum|max|min)", ...]: one per mesh axis
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.relu"(%arg0) {flow.sbp = ["S(x)"]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// an SBP split names a dim of the result
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:28: flow.sbp: "S(2)" splits axis 2 of a rank-2 tensor
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.relu"(%arg0) {flow.sbp = ["B", "S(2)"]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// SBP has one entry per mesh axis, at least one
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:28: flow.sbp must be ["S(k)" | "B" | "P(sum|max|min)", ...]: one per mesh axis
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.relu"(%arg0) {flow.sbp = []} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// placement is a dense i64 array
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:28: flow.placement must be array<i64: d0, ...>: device ids (>= 0), at least one
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.relu"(%arg0) {flow.placement = [0, 1]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// device ids are not negative
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:28: flow.placement: device id -1 is negative
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.relu"(%arg0) {flow.placement = array<i64: 0, -1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// a pruning mask broadcasts to the result
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:28: flow.prune_mask: mask tensor<3x1xi1> does not broadcast to tensor<2x3xf32>
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.relu"(%arg0) {flow.prune_mask = dense<true> : tensor<3x1xi1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// a pruning mask is i1
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:28: flow.prune_mask must be dense<...> : tensor<...xi1>, broadcastable to result 0
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.relu"(%arg0) {flow.prune_mask = dense<1.0> : tensor<2x3xf32>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// flow.quant expresses the result's element type
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:28: flow.quant: expressed type f16 differs from the result's element type f32
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.relu"(%arg0) {flow.quant = !quant.uniform<i8:f16, 0.5>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// flow.quant per axis has one scale per element of the axis
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:28: flow.quant: 3 scales for axis 0 of size 2
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.relu"(%arg0) {flow.quant = !quant.uniform<i8:f32:0, {0.5, 0.25, 0.125}>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// flow.quant is a quantised element type
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:28: flow.quant must be a !quant.uniform<...> element type for result 0
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.relu"(%arg0) {flow.quant = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// a malformed quantised type in any annotation
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:38: invalid quantised type: zero point 300 is outside the storage range [-128, 127]
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.relu"(%arg0) {other.q = !quant.uniform<i8:f32, 0.5:300>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// duplicate annotation
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:37: duplicate attribute 'x.y'
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.relu"(%arg0) {x.y = 1, x.y = 2} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// dialect attributes (#dialect.name<...>) are not supported
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:34: unsupported annotation value '#foo.bar'
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.relu"(%arg0) {x.y = #foo.bar<1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// integer out of range for its type
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:34: integer literal 300 out of range for i8
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.relu"(%arg0) {x.y = 300 : i8} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// invalid annotation name
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:28: invalid annotation name 'x.y z'
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.relu"(%arg0) {"x.y z" = 1} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// array nesting is bounded
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:66: annotation nested deeper than 32
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "flow.relu"(%arg0) {x.y = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----
// argument annotations are checked against the argument
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+1]]:41: flow.sbp: "S(2)" splits axis 2 of a rank-2 tensor
func.func @main(%arg0: tensor<2x3xf32> {flow.sbp = ["S(2)"]}) -> tensor<2x3xf32> {
  return %arg0 : tensor<2x3xf32>
}

// -----
// flow.storage is "f16" or "bf16"
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:70: flow.storage must be "f16" | "bf16" on an f32 constant: its data is stored in 16 bits in the artefact
func.func @main() -> tensor<2xf32> {
  %0 = "flow.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>, flow.storage = "f17"} : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----
// only of f32 data
// CHECK: error: {{.*}}annotations-invalid.mlir:[[@LINE+2]]:66: flow.storage: the data of an f32 constant is stored in 16 bits, not that of i32
func.func @main() -> tensor<2xi32> {
  %0 = "flow.constant"() {value = dense<[1, 2]> : tensor<2xi32>, flow.storage = "f16"} : () -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----
// flow.rank names a rank of the module's mesh
// CHECK: error: {{.*}}module attribute: flow.rank = 2 needs a flow.mesh of more ranks
module attributes {flow.mesh = array<i64: 2>, flow.rank = 2 : i64} {
  func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
    return %arg0 : tensor<2x3xf32>
  }
}

// -----
// flow.rank belongs on the module
// CHECK: error: {{.*}}flow.rank belongs on the module, not on a value
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = "flow.relu"(%arg0) {flow.rank = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
}
