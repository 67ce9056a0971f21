// fold_rank: in one rank's program (flow.rank, a rank-specialised --ranks build) a local_slice of a constant
// becomes that rank's chunk, a plain constant; without flow.rank nothing changes.
// RUN: %flowc build %s -O0 --passes=fold_rank --verify-each --emit ir --split-input-file | FileCheck %s

// Rank 1 of 2, columns split (dim 1): columns 2..3 of w; the whole w goes.
// CHECK-LABEL: flow.rank = 1 : i64
// CHECK-NOT: local_slice
// CHECK-NOT: tensor<2x4xf32>
// CHECK: %[[C:.*]] = "flow.constant"() {value = dense<{{\[\[}}3.000000e+00, 4.000000e+00], [7.000000e+00, 8.000000e+00]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32> loc("fc")
// CHECK-NEXT: "flow.matmul"(%arg0, %[[C]])
module attributes {flow.mesh = array<i64: 2>, flow.rank = 1 : i64} {
  func.func @main(%arg0: tensor<3x2xf32> {flow.name = "x"}) -> (tensor<3x2xf32> {flow.name = "y"}) {
    %w = "flow.constant"() {value = dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>} : () -> tensor<2x4xf32> loc("w")
    %s = "flow.local_slice"(%w) {dim = 1 : i64, mesh_axis = -1 : i64} : (tensor<2x4xf32>) -> tensor<2x2xf32> loc("fc")
    %0 = "flow.matmul"(%arg0, %s) : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
    "func.return"(%0) : (tensor<3x2xf32>) -> ()
  }
}

// -----
// A 2x2 mesh, rank 2 = coordinates (1, 0) (the last axis fastest, as the runtime numbers ranks): rows 2..3
// over mesh axis 0, then column 0 of those over axis 1; the second slice folds once the first has.
// CHECK-LABEL: flow.rank = 2 : i64
// CHECK-NOT: local_slice
// CHECK: "flow.constant"() {value = dense<{{\[\[}}5.000000e+00], [7.000000e+00]]> : tensor<2x1xf32>}
// CHECK-NOT: local_slice
module attributes {flow.mesh = array<i64: 2, 2>, flow.rank = 2 : i64} {
  func.func @main() -> (tensor<2x1xf32> {flow.name = "y"}) {
    %w = "flow.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xf32>} : () -> tensor<4x2xf32>
    %a = "flow.local_slice"(%w) {dim = 0 : i64, mesh_axis = 0 : i64} : (tensor<4x2xf32>) -> tensor<2x2xf32>
    %b = "flow.local_slice"(%a) {dim = 1 : i64, mesh_axis = 1 : i64} : (tensor<2x2xf32>) -> tensor<2x1xf32>
    "func.return"(%b) : (tensor<2x1xf32>) -> ()
  }
}

// -----
// Without flow.rank every rank runs this program: the slice stays (the rank is known at run time only), and
// so does a slice of a value that is no constant in a rank's program.
// CHECK-LABEL: module attributes {flow.mesh = array<i64: 2>}
// CHECK: "flow.local_slice"(%{{.*}}) {dim = 0 : i64, mesh_axis = -1 : i64} : (tensor<4xf32>) -> tensor<2xf32>
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main() -> (tensor<2xf32> {flow.name = "y"}) {
    %w = "flow.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
    %s = "flow.local_slice"(%w) {dim = 0 : i64, mesh_axis = -1 : i64} : (tensor<4xf32>) -> tensor<2xf32>
    "func.return"(%s) : (tensor<2xf32>) -> ()
  }
}

// -----
// CHECK-LABEL: flow.rank = 0 : i64
// CHECK: "flow.local_slice"(%arg0) {dim = 0 : i64, mesh_axis = -1 : i64} : (tensor<4xf32>) -> tensor<2xf32>
module attributes {flow.mesh = array<i64: 2>, flow.rank = 0 : i64} {
  func.func @main(%arg0: tensor<4xf32> {flow.name = "x"}) -> (tensor<2xf32> {flow.name = "y"}) {
    %s = "flow.local_slice"(%arg0) {dim = 0 : i64, mesh_axis = -1 : i64} : (tensor<4xf32>) -> tensor<2xf32>
    "func.return"(%s) : (tensor<2xf32>) -> ()
  }
}
