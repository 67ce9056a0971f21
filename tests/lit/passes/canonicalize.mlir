// RUN: %flowc build %s --passes=canonicalize --emit ir --split-input-file | FileCheck %s

// reshape(reshape x) is one reshape of x; the inner one goes. A reshape to its own shape is x.
// CHECK-LABEL: func.func @reshape_chain(
// CHECK-NEXT:    %0 = "flow.reshape"(%arg0) {shape = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    "func.return"(%0, %arg0)
func.func @reshape_chain(%arg0: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<2x3xf32>) {
  %0 = "flow.reshape"(%arg0) {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
  %1 = "flow.reshape"(%0) {shape = array<i64: 3, 2>} : (tensor<6xf32>) -> tensor<3x2xf32>
  %2 = "flow.reshape"(%arg0) {shape = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  "func.return"(%1, %2) : (tensor<3x2xf32>, tensor<2x3xf32>) -> ()
}

// -----

// transpose(transpose(x, p1), p2) is transpose(x, q) with q[j] = p1[p2[j]]; the identity vanishes.
// CHECK-LABEL: func.func @transpose_chain(
// CHECK-NEXT:    %0 = "flow.transpose"(%arg0) {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
// CHECK-NEXT:    "func.return"(%0, %arg0)
func.func @transpose_chain(%arg0: tensor<2x3x4xf32>) -> (tensor<3x4x2xf32>, tensor<2x3x4xf32>) {
  %0 = "flow.transpose"(%arg0) {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %1 = "flow.transpose"(%0) {perm = array<i64: 0, 2, 1>} : (tensor<3x2x4xf32>) -> tensor<3x4x2xf32>
  %2 = "flow.transpose"(%arg0) {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %3 = "flow.transpose"(%2) {perm = array<i64: 2, 0, 1>} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  "func.return"(%1, %3) : (tensor<3x4x2xf32>, tensor<2x3x4xf32>) -> ()
}

// -----

// cast chains merge only when the first cast is exact: i8 -> i32 -> i64 is one cast, i8 -> i32 -> i8
// is x; f32 -> i32 -> f32 truncates and stays.
// CHECK-LABEL: func.func @cast_chain(
// CHECK-NEXT:    %0 = "flow.cast"(%arg0) {to = i64} : (tensor<2xi8>) -> tensor<2xi64>
// CHECK-NEXT:    %1 = "flow.cast"(%arg1) {to = i32}
// CHECK-NEXT:    %2 = "flow.cast"(%1) {to = f32}
// CHECK-NEXT:    "func.return"(%0, %arg0, %2)
func.func @cast_chain(%arg0: tensor<2xi8>, %arg1: tensor<2xf32>) -> (tensor<2xi64>, tensor<2xi8>, tensor<2xf32>) {
  %0 = "flow.cast"(%arg0) {to = i32} : (tensor<2xi8>) -> tensor<2xi32>
  %1 = "flow.cast"(%0) {to = i64} : (tensor<2xi32>) -> tensor<2xi64>
  %2 = "flow.cast"(%0) {to = i8} : (tensor<2xi32>) -> tensor<2xi8>
  %3 = "flow.cast"(%arg1) {to = i32} : (tensor<2xf32>) -> tensor<2xi32>
  %4 = "flow.cast"(%3) {to = f32} : (tensor<2xi32>) -> tensor<2xf32>
  "func.return"(%1, %2, %4) : (tensor<2xi64>, tensor<2xi8>, tensor<2xf32>) -> ()
}

// -----

// neg(neg x) and not(not x) are x; a third neg stays.
// CHECK-LABEL: func.func @involutions(
// CHECK-NEXT:    %0 = "flow.neg"(%arg0)
// CHECK-NEXT:    "func.return"(%arg0, %arg1, %0)
func.func @involutions(%arg0: tensor<2xf32>, %arg1: tensor<2xi1>) -> (tensor<2xf32>, tensor<2xi1>, tensor<2xf32>) {
  %0 = "flow.neg"(%arg0) : (tensor<2xf32>) -> tensor<2xf32>
  %1 = "flow.neg"(%0) : (tensor<2xf32>) -> tensor<2xf32>
  %2 = "flow.not"(%arg1) : (tensor<2xi1>) -> tensor<2xi1>
  %3 = "flow.not"(%2) : (tensor<2xi1>) -> tensor<2xi1>
  %4 = "flow.neg"(%1) : (tensor<2xf32>) -> tensor<2xf32>
  "func.return"(%1, %3, %4) : (tensor<2xf32>, tensor<2xi1>, tensor<2xf32>) -> ()
}

// -----

// Identity ops: full slice, zero pad, one-operand concat, broadcast and cast to the same type.
// A slice that reverses rows (same shape, step -1) stays.
// CHECK-LABEL: func.func @identities(
// CHECK-NEXT:    %0 = "flow.slice"(%arg0) {ends = array<i64: -1, 3>, starts = array<i64: 1, 0>, steps = array<i64: -1, 1>}
// CHECK-NEXT:    "func.return"(%arg0, %arg0, %arg0, %arg0, %arg0, %0)
func.func @identities(%arg0: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = "flow.slice"(%arg0) {ends = array<i64: 2, 3>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "flow.pad"(%arg0) {mode = "constant", pads = array<i64: 0, 0, 0, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = "flow.concat"(%arg0) {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = "flow.broadcast"(%arg0) {shape = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = "flow.cast"(%arg0) {to = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = "flow.slice"(%arg0) {ends = array<i64: -1, 3>, starts = array<i64: 1, 0>, steps = array<i64: -1, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  "func.return"(%0, %1, %2, %3, %4, %5) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> ()
}

// -----

// Normal form: a commutative op takes its constant second; sub is not commutative and stays.
// CHECK-LABEL: func.func @constant_second(
// CHECK-NEXT:    %0 = "flow.constant"()
// CHECK-NEXT:    %1 = "flow.add"(%arg0, %0)
// CHECK-NEXT:    %2 = "flow.sub"(%0, %arg0)
func.func @constant_second(%arg0: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %0 = "flow.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %1 = "flow.add"(%0, %arg0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %2 = "flow.sub"(%0, %arg0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  "func.return"(%1, %2) : (tensor<2xf32>, tensor<2xf32>) -> ()
}

// -----

// reshape of a constant is a constant of the new shape (same data); the old constant goes.
// CHECK-LABEL: func.func @reshape_constant(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<{{\[}}[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>} : () -> tensor<3x2xi32> loc("r")
// CHECK-NEXT:    "func.return"(%0)
func.func @reshape_constant() -> (tensor<3x2xi32>) {
  %0 = "flow.constant"() {value = dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>} : () -> tensor<2x3xi32>
  %1 = "flow.reshape"(%0) {shape = array<i64: 3, 2>} : (tensor<2x3xi32>) -> tensor<3x2xi32> loc("r")
  "func.return"(%1) : (tensor<3x2xi32>) -> ()
}
