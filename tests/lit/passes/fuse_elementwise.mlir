// RUN: %flowc build %s --passes=fuse_elementwise --verify-each --emit ir --split-input-file | FileCheck %s
// RUN: %flowc build %s --passes=fuse_elementwise,fuse_elementwise --verify-each --emit ir --split-input-file | FileCheck %s

// A chain becomes one program; operands are deduplicated in first-use order and broadcast (a per-row and
// a per-column operand); the result keeps the root's loc.
// CHECK-LABEL: func.func @chain(
// CHECK-NEXT:    %0 = "flow.fused"(%arg0, %arg1, %arg2) {dtype = f32, program = "sub o0 o1; mul s0 o2; tanh s1; add s2 o0", shape = array<i64: 2, 3>} : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32> loc("root")
// CHECK-NEXT:    "func.return"(%0)
func.func @chain(%arg0: tensor<2x3xf32>, %arg1: tensor<3xf32>, %arg2: tensor<2x1xf32>) -> tensor<2x3xf32> {
  %0 = "flow.sub"(%arg0, %arg1) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = "flow.mul"(%0, %arg2) : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %2 = "flow.tanh"(%1) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = "flow.add"(%2, %arg0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("root")
  "func.return"(%3) : (tensor<2x3xf32>) -> ()
}

// -----

// A DAG whose intermediate has two users, both in the group (SiLU of a sum): computed once, step s0.
// CHECK-LABEL: func.func @silu(
// CHECK-NEXT:    %0 = "flow.fused"(%arg0, %arg1) {dtype = f32, program = "add o0 o1; sigmoid s0; mul s0 s1", shape = array<i64: 4, 8>}
// CHECK-NEXT:    "func.return"(%0)
func.func @silu(%arg0: tensor<4x8xf32>, %arg1: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = "flow.add"(%arg0, %arg1) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = "flow.sigmoid"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "flow.mul"(%0, %1) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  "func.return"(%2) : (tensor<4x8xf32>) -> ()
}

// -----

// An intermediate that is also returned stays: the group starts after it and reads it as an operand.
// CHECK-LABEL: func.func @used_outside(
// CHECK-NEXT:    %0 = "flow.add"(%arg0, %arg0)
// CHECK-NEXT:    %1 = "flow.fused"(%0, %arg1) {dtype = f32, program = "mul o0 o1; relu s0", shape = array<i64: 4>}
// CHECK-NEXT:    "func.return"(%1, %0)
func.func @used_outside(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = "flow.add"(%arg0, %arg0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "flow.mul"(%0, %arg1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = "flow.relu"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  "func.return"(%2, %0) : (tensor<4xf32>, tensor<4xf32>) -> ()
}

// -----

// Smaller intermediates: a cheap one (add on a per-row value) is recomputed per element and joins; an
// expensive one (sqrt) stays a separate op over its own small shape, itself fused with its producer.
// CHECK-LABEL: func.func @small_intermediates(
// CHECK-NEXT:    %0 = "flow.fused"(%arg1, %arg2) {dtype = f32, program = "add o0 o1; sqrt s0", shape = array<i64: 8, 1>}
// CHECK-NEXT:    %1 = "flow.fused"(%arg0, %0, %arg1, %arg2) {dtype = f32, program = "div o0 o1; add o2 o3; mul s0 s1", shape = array<i64: 8, 16>}
// CHECK-NEXT:    "func.return"(%1)
func.func @small_intermediates(%arg0: tensor<8x16xf32>, %arg1: tensor<8x1xf32>, %arg2: tensor<f32>) -> tensor<8x16xf32> {
  %0 = "flow.add"(%arg1, %arg2) : (tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32>
  %1 = "flow.sqrt"(%0) : (tensor<8x1xf32>) -> tensor<8x1xf32>
  %2 = "flow.div"(%arg0, %1) : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  %3 = "flow.add"(%arg1, %arg2) : (tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32>
  %4 = "flow.mul"(%2, %3) : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
  "func.return"(%4) : (tensor<8x16xf32>) -> ()
}

// -----

// Ops that change the dtype (comparison, cast, select on a bool condition) are not members and stay as
// they are; the chains on either side of them fuse separately, in their own dtype (f32, i32, i1).
// CHECK-LABEL: func.func @dtype_boundaries(
// CHECK-NEXT:    %0 = "flow.fused"(%arg0, %arg1) {dtype = f32, program = "sub o0 o1; abs s0", shape = array<i64: 5>}
// CHECK-NEXT:    %1 = "flow.less"(%0, %arg1)
// CHECK-NEXT:    %2 = "flow.select"(%1, %0, %arg1)
// CHECK-NEXT:    %3 = "flow.cast"(%2) {to = i32}
// CHECK-NEXT:    %4 = "flow.fused"(%3) {dtype = i32, program = "mul o0 o0; neg s0", shape = array<i64: 5>}
// CHECK-NEXT:    %5 = "flow.fused"(%1) {dtype = i1, program = "not o0; and s0 o0", shape = array<i64: 5>}
func.func @dtype_boundaries(%arg0: tensor<5xf32>, %arg1: tensor<5xf32>) -> (tensor<5xi32>, tensor<5xi1>) {
  %0 = "flow.sub"(%arg0, %arg1) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %1 = "flow.abs"(%0) : (tensor<5xf32>) -> tensor<5xf32>
  %2 = "flow.less"(%1, %arg1) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xi1>
  %3 = "flow.select"(%2, %1, %arg1) : (tensor<5xi1>, tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %4 = "flow.cast"(%3) {to = i32} : (tensor<5xf32>) -> tensor<5xi32>
  %5 = "flow.mul"(%4, %4) : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
  %6 = "flow.neg"(%5) : (tensor<5xi32>) -> tensor<5xi32>
  %7 = "flow.not"(%2) : (tensor<5xi1>) -> tensor<5xi1>
  %8 = "flow.and"(%7, %2) : (tensor<5xi1>, tensor<5xi1>) -> tensor<5xi1>
  "func.return"(%6, %8) : (tensor<5xi32>, tensor<5xi1>) -> ()
}

// -----

// pow by a constant 2 is the step `mul x x` (the constant is not an operand); an existing fused op is a
// member whose program is inlined, so running the pass again changes nothing more.
// CHECK-LABEL: func.func @square_and_inline(
// CHECK-NEXT:    %0 = "flow.fused"(%arg0, %arg1) {dtype = f32, program = "add o0 o1; exp s0; mul s1 s1; relu s2", shape = array<i64: 3, 4>}
// CHECK-NEXT:    "func.return"(%0)
func.func @square_and_inline(%arg0: tensor<3x4xf32>, %arg1: tensor<4xf32>) -> tensor<3x4xf32> {
  %c = "flow.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "flow.fused"(%arg0, %arg1) {dtype = f32, program = "add o0 o1; exp s0", shape = array<i64: 3, 4>} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %1 = "flow.pow"(%0, %c) : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %2 = "flow.relu"(%1) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  "func.return"(%2) : (tensor<3x4xf32>) -> ()
}

// -----

// Conv and matmul results are read as operands (their epilogues are fuse_epilogue's); the chain after
// them fuses.
// CHECK-LABEL: func.func @after_matmul(
// CHECK-NEXT:    %0 = "flow.matmul"(%arg0, %arg1)
// CHECK-NEXT:    %1 = "flow.fused"(%0, %arg2) {dtype = f32, program = "add o0 o1; tanh s0", shape = array<i64: 2, 2>}
func.func @after_matmul(%arg0: tensor<2x3xf32>, %arg1: tensor<3x2xf32>, %arg2: tensor<2xf32>) -> tensor<2x2xf32> {
  %0 = "flow.matmul"(%arg0, %arg1) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %1 = "flow.add"(%0, %arg2) : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %2 = "flow.tanh"(%1) : (tensor<2x2xf32>) -> tensor<2x2xf32>
  "func.return"(%2) : (tensor<2x2xf32>) -> ()
}

// -----

// A calibrated range on an intermediate (--quantize int8 annotates SiLU's mul) does not keep it out: the
// value vanishes into the group, and so does its annotation; the root's stays on the fused op.
// CHECK-LABEL: func.func @calibrated_intermediate(
// CHECK-NEXT:    %0 = "flow.fused"(%arg0, %arg1) {dtype = f32, program = "sigmoid o0; mul o0 s0; div s1 o1; round s2", shape = array<i64: 6>, flow.calib_range = array<f64: 0.000000e+00, 1.000000e+00>}
// CHECK-NEXT:    "func.return"(%0)
func.func @calibrated_intermediate(%arg0: tensor<6xf32>, %arg1: tensor<f32>) -> tensor<6xf32> {
  %0 = "flow.sigmoid"(%arg0) : (tensor<6xf32>) -> tensor<6xf32>
  %1 = "flow.mul"(%arg0, %0) {flow.calib_range = array<f64: -0.25, 6.5>} : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  %2 = "flow.div"(%1, %arg1) : (tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
  %3 = "flow.round"(%2) {flow.calib_range = array<f64: 0.0, 1.0>} : (tensor<6xf32>) -> tensor<6xf32>
  "func.return"(%3) : (tensor<6xf32>) -> ()
}
