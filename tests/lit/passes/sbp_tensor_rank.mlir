// sbp_tensor in rank 1's program (flow.rank = 1): a weight split by columns is sliced plainly (no [G, K, N/G]
// re-layout: nothing slices it at run time) and fold_rank makes every slice of a constant rank 1's chunk, so
// the matmuls take constant weights; the collectives are those of every rank's program (one all_reduce).
// RUN: %flowc build %s -O0 --passes=sbp_tensor,fold_rank,dce --verify-each --emit ir | FileCheck %s
// CHECK: module attributes {flow.mesh = array<i64: 2>, flow.rank = 1 : i64}
// CHECK-NOT: local_slice
// CHECK: %[[W1:.*]] = "flow.constant"() {value = dense<{{\[\[}}3.000000e+00, 4.000000e+00], [7.000000e+00, 8.000000e+00]]> : tensor<2x2xf32>, flow.sbp = ["S(1)"]}
// CHECK: "flow.matmul"(%arg0, %[[W1]]) {flow.sbp = ["S(1)"]}
// CHECK: %[[W2:.*]] = "flow.constant"() {value = dense<{{\[\[}}3.000000e+00], [4.000000e+00]]> : tensor<2x1xf32>, flow.sbp = ["S(0)"]}
// CHECK: "flow.matmul"(%{{.*}}, %[[W2]]) {flow.sbp = ["P(sum)"]}
// CHECK: flow.all_reduce
// CHECK-NOT: local_slice
module attributes {flow.mesh = array<i64: 2>, flow.rank = 1 : i64} {
  func.func @main(%arg0: tensor<3x2xf32> {flow.name = "x"}) -> (tensor<3x1xf32> {flow.name = "y"}) {
    %w1 = "flow.constant"() {value = dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
    %w2 = "flow.constant"() {value = dense<[[1.0], [2.0], [3.0], [4.0]]> : tensor<4x1xf32>} : () -> tensor<4x1xf32>
    %0 = "flow.matmul"(%arg0, %w1) : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
    %1 = "flow.relu"(%0) : (tensor<3x4xf32>) -> tensor<3x4xf32>
    %2 = "flow.matmul"(%1, %w2) : (tensor<3x4xf32>, tensor<4x1xf32>) -> tensor<3x1xf32>
    "func.return"(%2) : (tensor<3x1xf32>) -> ()
  }
}
