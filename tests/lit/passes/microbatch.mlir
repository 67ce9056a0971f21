// microbatch: the batch cut into flow.micro_batches parts, each op on the batch copied once per micro-batch in
// micro-batch order (annotations such as the placement kept), whole ops computed once, outputs concatenated.
// RUN: %flowc build %s -O0 --passes=microbatch --verify-each --emit ir --split-input-file | FileCheck %s
// RUN: not %flowc build %S/Inputs/microbatch_mixes.mlir -O0 --passes=microbatch --emit ir 2>&1 | FileCheck %s --check-prefix=MIX
// MIX: error: {{.*}}node 'sum' (reduce_sum): 2 micro-batches: this op mixes the rows of the batch, so it cannot run per micro-batch
// RUN: not %flowc build %S/Inputs/microbatch_odd.mlir -O0 --passes=microbatch --emit ir 2>&1 | FileCheck %s --check-prefix=ODD
// ODD: error: {{.*}}2 micro-batches: no graph input has a batch (dim 0) that divides into 2

// Two micro-batches of a matmul and relu; the weight's transpose (whole) runs once, before them; a reshape
// that keeps the batch is localised.
// CHECK-LABEL: func.func @main
// CHECK-NOT: flow.micro_batches
// CHECK: %[[WT:.*]] = "flow.transpose"
// CHECK: %[[X0:.*]] = "flow.slice"(%arg0) {ends = array<i64: 2, 2, 4>, starts = array<i64: 0, 0, 0>
// CHECK-SAME: flow.placement = array<i64: 0>
// CHECK: %[[R0:.*]] = "flow.reshape"(%[[X0]]) {shape = array<i64: 2, 8>, flow.placement = array<i64: 0>}
// CHECK: %[[M0:.*]] = "flow.matmul"(%[[R0]], %[[WT]]) {flow.placement = array<i64: 0>} : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32> loc("fc")
// CHECK: %[[Y0:.*]] = "flow.relu"(%[[M0]]) {flow.placement = array<i64: 1>}
// CHECK: %[[X1:.*]] = "flow.slice"(%arg0) {ends = array<i64: 4, 2, 4>, starts = array<i64: 2, 0, 0>
// CHECK: %[[R1:.*]] = "flow.reshape"(%[[X1]])
// CHECK: %[[M1:.*]] = "flow.matmul"(%[[R1]], %[[WT]])
// CHECK: %[[Y1:.*]] = "flow.relu"(%[[M1]])
// CHECK: %[[Y:.*]] = "flow.concat"(%[[Y0]], %[[Y1]]) {axis = 0 : i64, flow.placement = array<i64: 1>} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
// CHECK: "func.return"(%[[Y]])
module attributes {flow.mesh = array<i64: 2>, flow.micro_batches = 2 : i64} {
  func.func @main(%x: tensor<4x2x4xf32> {flow.name = "x"}) -> (tensor<4x8xf32> {flow.name = "y"}) {
    %w = "flow.constant"() {value = dense<0.5> : tensor<8x8xf32>} : () -> tensor<8x8xf32>
    %wt = "flow.transpose"(%w) {perm = array<i64: 1, 0>} : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %r = "flow.reshape"(%x) {shape = array<i64: 4, 8>, flow.placement = array<i64: 0>} : (tensor<4x2x4xf32>) -> tensor<4x8xf32>
    %a = "flow.matmul"(%r, %wt) {flow.placement = array<i64: 0>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("fc")
    %b = "flow.relu"(%a) {flow.placement = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    "func.return"(%b) : (tensor<4x8xf32>) -> ()
  }
}

// -----
// Auto (0): as many micro-batches as stages (mesh axis 0: 4) where the batch divides: 8 rows, 4 parts of 2.
// CHECK-LABEL: func.func @main
// CHECK-COUNT-4: "flow.neg"{{.*}} -> tensor<2x3xf32>
// CHECK: "flow.concat"{{.*}} -> tensor<8x3xf32>
module attributes {flow.mesh = array<i64: 4>, flow.micro_batches = 0 : i64} {
  func.func @main(%x: tensor<8x3xf32> {flow.name = "x"}) -> (tensor<8x3xf32> {flow.name = "y"}) {
    %a = "flow.neg"(%x) : (tensor<8x3xf32>) -> tensor<8x3xf32>
    "func.return"(%a) : (tensor<8x3xf32>) -> ()
  }
}

// -----
// Auto where the batch does not divide (3 rows, 2 stages): one micro-batch, the graph unchanged.
// CHECK-LABEL: func.func @main
// CHECK-NOT: flow.slice
// CHECK: "flow.neg"(%arg0) : (tensor<3x3xf32>) -> tensor<3x3xf32>
module attributes {flow.mesh = array<i64: 2>, flow.micro_batches = 0 : i64} {
  func.func @main(%x: tensor<3x3xf32> {flow.name = "x"}) -> (tensor<3x3xf32> {flow.name = "y"}) {
    %a = "flow.neg"(%x) : (tensor<3x3xf32>) -> tensor<3x3xf32>
    "func.return"(%a) : (tensor<3x3xf32>) -> ()
  }
}
