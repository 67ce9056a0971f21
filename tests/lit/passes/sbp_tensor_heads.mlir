// sbp_tensor through attention's head reshapes: a projection split by columns (2 ranks, 8 columns: 4 each)
// viewed as [.., 4 heads, 2] keeps the split on the heads axis (each rank holds 2 whole heads), and viewed
// back as [.., 8] keeps it on the columns, so the next projection splits by rows into P(sum) and one
// all_reduce ends the block: no all_gather anywhere (sbp_rules.c, rule_reshape).
// RUN: %flowc build %s -O0 --passes=sbp_tensor --verify-each --emit ir | FileCheck %s
// CHECK-NOT: all_gather
// CHECK: "flow.matmul"(%arg0, %{{.*}}) {flow.sbp = ["S(1)"]} : (tensor<3x8xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
// CHECK: "flow.reshape"(%{{.*}}) {shape = array<i64: 3, 2, 2>, flow.sbp = ["S(1)"]} : (tensor<3x4xf32>) -> tensor<3x2x2xf32>
// CHECK: "flow.relu"(%{{.*}}) {flow.sbp = ["S(1)"]} : (tensor<3x2x2xf32>) -> tensor<3x2x2xf32>
// CHECK: "flow.reshape"(%{{.*}}) {shape = array<i64: 3, 4>, flow.sbp = ["S(1)"]} : (tensor<3x2x2xf32>) -> tensor<3x4xf32>
// CHECK: "flow.matmul"(%{{.*}}, %{{.*}}) {flow.sbp = ["P(sum)"]} : (tensor<3x4xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
// CHECK: "flow.all_reduce"
// CHECK-NOT: all_gather
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main(%arg0: tensor<3x8xf32> {flow.name = "x"}) -> (tensor<3x8xf32> {flow.name = "y"}) {
    %w1 = "flow.constant"() {value = dense<0.5> : tensor<8x8xf32>} : () -> tensor<8x8xf32>
    %w2 = "flow.constant"() {value = dense<0.25> : tensor<8x8xf32>} : () -> tensor<8x8xf32>
    %0 = "flow.matmul"(%arg0, %w1) : (tensor<3x8xf32>, tensor<8x8xf32>) -> tensor<3x8xf32>
    %1 = "flow.reshape"(%0) {shape = array<i64: 3, 4, 2>} : (tensor<3x8xf32>) -> tensor<3x4x2xf32>
    %2 = "flow.relu"(%1) : (tensor<3x4x2xf32>) -> tensor<3x4x2xf32>
    %3 = "flow.reshape"(%2) {shape = array<i64: 3, 8>} : (tensor<3x4x2xf32>) -> tensor<3x8xf32>
    %4 = "flow.matmul"(%3, %w2) : (tensor<3x8xf32>, tensor<8x8xf32>) -> tensor<3x8xf32>
    "func.return"(%4) : (tensor<3x8xf32>) -> ()
  }
}
