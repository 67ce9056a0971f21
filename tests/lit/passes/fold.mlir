// RUN: %flowc build %s --passes=fold --emit ir --split-input-file | FileCheck %s

// A chain of constant ops becomes one constant with the last op's loc; operand constants go too.
// CHECK-LABEL: func.func @chain(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<[2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<3xf32>} : () -> tensor<3xf32> loc("plus")
// CHECK-NEXT:    "func.return"(%0)
func.func @chain() -> (tensor<3xf32>) {
  %0 = "flow.constant"() {value = dense<[1.0, 4.0, 9.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %1 = "flow.sqrt"(%0) : (tensor<3xf32>) -> tensor<3xf32> loc("root")
  %2 = "flow.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %3 = "flow.add"(%1, %2) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32> loc("plus")
  "func.return"(%3) : (tensor<3xf32>) -> ()
}

// -----

// A graph input is never a constant: the add stays, its constant operand folds.
// CHECK-LABEL: func.func @input_not_folded(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<[-1, -2]> : tensor<2xi64>}
// CHECK-NEXT:    %1 = "flow.add"(%arg0, %0)
// CHECK-NEXT:    "func.return"(%1)
func.func @input_not_folded(%arg0: tensor<2xi64>) -> (tensor<2xi64>) {
  %0 = "flow.constant"() {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %1 = "flow.neg"(%0) : (tensor<2xi64>) -> tensor<2xi64>
  %2 = "flow.add"(%arg0, %1) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  "func.return"(%2) : (tensor<2xi64>) -> ()
}

// -----

// Casts truncate toward zero; integer division truncates; comparisons give i1.
// CHECK-LABEL: func.func @cast_div_compare(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<[1, -1]> : tensor<2xi32>}
// CHECK-NEXT:    %1 = "flow.constant"() {value = dense<[3, -3]> : tensor<2xi32>}
// CHECK-NEXT:    %2 = "flow.constant"() {value = dense<[true, false]> : tensor<2xi1>}
// CHECK-NEXT:    "func.return"(%0, %1, %2)
func.func @cast_div_compare() -> (tensor<2xi32>, tensor<2xi32>, tensor<2xi1>) {
  %0 = "flow.constant"() {value = dense<[1.7, -1.7]> : tensor<2xf32>} : () -> tensor<2xf32>
  %1 = "flow.cast"(%0) {to = i32} : (tensor<2xf32>) -> tensor<2xi32>
  %2 = "flow.constant"() {value = dense<[7, -7]> : tensor<2xi32>} : () -> tensor<2xi32>
  %3 = "flow.constant"() {value = dense<2> : tensor<i32>} : () -> tensor<i32>
  %4 = "flow.div"(%2, %3) : (tensor<2xi32>, tensor<i32>) -> tensor<2xi32>
  %5 = "flow.less"(%3, %2) : (tensor<i32>, tensor<2xi32>) -> tensor<2xi1>
  "func.return"(%1, %4, %5) : (tensor<2xi32>, tensor<2xi32>, tensor<2xi1>) -> ()
}

// -----

// Structural ops: transpose then reduce_sum, and a matmul.
// CHECK-LABEL: func.func @structural(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<[5.000000e+00, 7.000000e+00, 9.000000e+00]> : tensor<3xf32>}
// CHECK-NEXT:    %1 = "flow.constant"() {value = dense<{{\[}}[1.900000e+01, 2.200000e+01], [4.300000e+01, 5.000000e+01]]> : tensor<2x2xf32>}
// CHECK-NEXT:    "func.return"(%0, %1)
func.func @structural() -> (tensor<3xf32>, tensor<2x2xf32>) {
  %0 = "flow.constant"() {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %1 = "flow.transpose"(%0) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %2 = "flow.reduce_sum"(%1) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<3x2xf32>) -> tensor<3xf32>
  %3 = "flow.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %4 = "flow.constant"() {value = dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %5 = "flow.matmul"(%3, %4) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  "func.return"(%2, %5) : (tensor<3xf32>, tensor<2x2xf32>) -> ()
}

// -----

// Size bound: a scalar broadcast to 64 KiB folds (a splat), one element more does not.
// CHECK-LABEL: func.func @size_bound(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<1.000000e+00> : tensor<f32>}
// CHECK-NEXT:    %1 = "flow.constant"() {value = dense<1.000000e+00> : tensor<16384xf32>}
// CHECK-NEXT:    %2 = "flow.broadcast"(%0) {shape = array<i64: 16385>}
// CHECK-NEXT:    "func.return"(%1, %2)
func.func @size_bound() -> (tensor<16384xf32>, tensor<16385xf32>) {
  %0 = "flow.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %1 = "flow.broadcast"(%0) {shape = array<i64: 16384>} : (tensor<f32>) -> tensor<16384xf32>
  %2 = "flow.broadcast"(%0) {shape = array<i64: 16385>} : (tensor<f32>) -> tensor<16385xf32>
  "func.return"(%1, %2) : (tensor<16384xf32>, tensor<16385xf32>) -> ()
}

// -----

// Integer identities: x + 0, 0 + x, x * 1, x / 1 are x; x * 0 is a zero constant.
// CHECK-LABEL: func.func @int_identities(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<0> : tensor<3xi32>} : () -> tensor<3xi32> loc("times0")
// CHECK-NEXT:    "func.return"(%arg0, %arg0, %arg0, %arg0, %0)
func.func @int_identities(%arg0: tensor<3xi32>) -> (tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) {
  %0 = "flow.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
  %1 = "flow.constant"() {value = dense<1> : tensor<3xi32>} : () -> tensor<3xi32>
  %2 = "flow.add"(%arg0, %0) : (tensor<3xi32>, tensor<i32>) -> tensor<3xi32>
  %3 = "flow.add"(%0, %arg0) : (tensor<i32>, tensor<3xi32>) -> tensor<3xi32>
  %4 = "flow.mul"(%1, %arg0) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %5 = "flow.div"(%arg0, %1) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %6 = "flow.mul"(%arg0, %0) : (tensor<3xi32>, tensor<i32>) -> tensor<3xi32> loc("times0")
  "func.return"(%2, %3, %4, %5, %6) : (tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) -> ()
}

// -----

// Float identities only where IEEE-exact: x + (-0.0), x - 0.0, x * 1 go; x + 0.0 (-0.0 + 0.0 is
// +0.0) and x * 0 (NaN, inf) stay.
// CHECK-LABEL: func.func @float_identities(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<0.000000e+00> : tensor<f32>}
// CHECK-NEXT:    %1 = "flow.add"(%arg0, %0)
// CHECK-NEXT:    %2 = "flow.mul"(%arg0, %0)
// CHECK-NEXT:    "func.return"(%arg0, %arg0, %arg0, %1, %2)
func.func @float_identities(%arg0: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %0 = "flow.constant"() {value = dense<-0.0> : tensor<f32>} : () -> tensor<f32>
  %1 = "flow.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %2 = "flow.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %3 = "flow.add"(%arg0, %0) : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %4 = "flow.sub"(%arg0, %1) : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %5 = "flow.mul"(%2, %arg0) : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
  %6 = "flow.add"(%arg0, %1) : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %7 = "flow.mul"(%arg0, %1) : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  "func.return"(%3, %4, %5, %6, %7) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> ()
}

// -----

// An identity that would drop a broadcast does not apply: x[3] * ones[2x3] is 2x3.
// CHECK-LABEL: func.func @identity_keeps_broadcast(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<1.000000e+00> : tensor<2x3xf32>}
// CHECK-NEXT:    %1 = "flow.mul"(%arg0, %0) : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @identity_keeps_broadcast(%arg0: tensor<3xf32>) -> (tensor<2x3xf32>) {
  %0 = "flow.constant"() {value = dense<1.0> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %1 = "flow.mul"(%arg0, %0) : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  "func.return"(%1) : (tensor<2x3xf32>) -> ()
}

// -----

// Boolean identities and a select with a constant condition.
// CHECK-LABEL: func.func @bool_select(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<false> : tensor<2xi1>}
// CHECK-NEXT:    %1 = "flow.constant"() {value = dense<true> : tensor<2xi1>}
// CHECK-NEXT:    "func.return"(%arg0, %0, %1, %arg0, %arg2)
func.func @bool_select(%arg0: tensor<2xi1>, %arg1: tensor<2xf32>, %arg2: tensor<2xf32>) -> (tensor<2xi1>, tensor<2xi1>, tensor<2xi1>, tensor<2xi1>, tensor<2xf32>) {
  %0 = "flow.constant"() {value = dense<true> : tensor<i1>} : () -> tensor<i1>
  %1 = "flow.constant"() {value = dense<false> : tensor<i1>} : () -> tensor<i1>
  %2 = "flow.and"(%arg0, %0) : (tensor<2xi1>, tensor<i1>) -> tensor<2xi1>
  %3 = "flow.and"(%1, %arg0) : (tensor<i1>, tensor<2xi1>) -> tensor<2xi1>
  %4 = "flow.or"(%arg0, %0) : (tensor<2xi1>, tensor<i1>) -> tensor<2xi1>
  %5 = "flow.or"(%arg0, %1) : (tensor<2xi1>, tensor<i1>) -> tensor<2xi1>
  %6 = "flow.select"(%1, %arg1, %arg2) : (tensor<i1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  "func.return"(%2, %3, %4, %5, %6) : (tensor<2xi1>, tensor<2xi1>, tensor<2xi1>, tensor<2xi1>, tensor<2xf32>) -> ()
}

// -----

// A constant whose data was elided from the text has no value to fold.
// CHECK-LABEL: func.func @elided(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense_resource<__elided__> : tensor<20xf32>}
// CHECK-NEXT:    %1 = "flow.neg"(%0)
func.func @elided() -> (tensor<20xf32>) {
  %0 = "flow.constant"() {value = dense_resource<__elided__> : tensor<20xf32>} : () -> tensor<20xf32>
  %1 = "flow.neg"(%0) : (tensor<20xf32>) -> tensor<20xf32>
  "func.return"(%1) : (tensor<20xf32>) -> ()
}

// -----

// Moving elements is folded whatever the size: a matmul's transposed weight of 4097 x 4096 floats (just
// over the 64 MiB bound) becomes a constant that the kernel packs at compile time, not a run-time
// transpose into the workspace. A reshape likewise; a broadcast to the same size is still bounded.
// CHECK-LABEL: func.func @moves_unbounded(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<5.000000e-01> : tensor<4096x4097xf32>}
// CHECK-NEXT:    %1 = "flow.matmul"(%arg0, %0)
// CHECK-NEXT:    %2 = "flow.constant"() {value = dense<5.000000e-01> : tensor<4097x64x64xf32>}
// CHECK-NEXT:    %3 = "flow.constant"() {value = dense<5.000000e-01> : tensor<4097xf32>}
// CHECK-NEXT:    %4 = "flow.broadcast"(%3) {shape = array<i64: 4096, 4097>}
// CHECK-NEXT:    "func.return"(%1, %2, %4)
func.func @moves_unbounded(%arg0: tensor<1x4096xf32>) -> (tensor<1x4097xf32>, tensor<4097x64x64xf32>, tensor<4096x4097xf32>) {
  %0 = "flow.constant"() {value = dense<0.5> : tensor<4097x4096xf32>} : () -> tensor<4097x4096xf32>
  %1 = "flow.transpose"(%0) {perm = array<i64: 1, 0>} : (tensor<4097x4096xf32>) -> tensor<4096x4097xf32>
  %2 = "flow.matmul"(%arg0, %1) : (tensor<1x4096xf32>, tensor<4096x4097xf32>) -> tensor<1x4097xf32>
  %3 = "flow.reshape"(%0) {shape = array<i64: 4097, 64, 64>} : (tensor<4097x4096xf32>) -> tensor<4097x64x64xf32>
  %4 = "flow.constant"() {value = dense<0.5> : tensor<4097xf32>} : () -> tensor<4097xf32>
  %5 = "flow.broadcast"(%4) {shape = array<i64: 4096, 4097>} : (tensor<4097xf32>) -> tensor<4096x4097xf32>
  "func.return"(%2, %3, %5) : (tensor<1x4097xf32>, tensor<4097x64x64xf32>, tensor<4096x4097xf32>) -> ()
}
