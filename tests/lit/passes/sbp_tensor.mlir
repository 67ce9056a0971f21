// sbp_tensor on a two-layer MLP (Megatron): the first weight split by columns (stored re-laid as [G, K, N/G]
// so each rank's part is one contiguous block), its bias split alike, relu keeps S(1), the second weight split
// by rows gives P(sum), which is reduce-scattered into rows (the 4 rows divide by 2: half an all_reduce's
// bytes), the second bias added to each rank's rows, and the rows gathered for the output. Inputs stay whole.
// RUN: %flowc build %s -O0 --passes=sbp_tensor --verify-each --emit ir --split-input-file | FileCheck %s
// The -O2 pipeline after it keeps the plan (one reduce_scatter, the output's all_gather).
// RUN: %flowc build %s --passes=sbp_tensor,shapes,canonicalize,fold,cse,fuse_epilogue,fuse_elementwise,dce --verify-each --emit ir --split-input-file | FileCheck %s --check-prefix=O2
// O2-NOT: all_reduce
// O2: flow.reduce_scatter
// O2-NOT: all_reduce
// O2: flow.all_gather
// O2-NOT: all_reduce
// O2: // -----
// O2: flow.all_reduce
// O2-NOT: reduce_scatter

// CHECK: %arg0: tensor<4x6xf32> {flow.name = "x", flow.sbp = ["B"]}
// CHECK-NOT: local_slice"(%arg0
// CHECK: %[[W1:.*]] = "flow.constant"() {value = {{.*}} : tensor<2x6x2xf32>, flow.sbp = ["B"]}
// CHECK-NEXT: %[[S1:.*]] = "flow.local_slice"(%[[W1]]) {dim = 0 : i64, mesh_axis = -1 : i64, flow.sbp = ["S(0)"]} : (tensor<2x6x2xf32>) -> tensor<1x6x2xf32>
// CHECK-NEXT: %[[L1:.*]] = "flow.reshape"(%[[S1]]) {shape = array<i64: 6, 2>, flow.sbp = ["S(1)"]} : (tensor<1x6x2xf32>) -> tensor<6x2xf32>
// CHECK-NEXT: %[[M1:.*]] = "flow.matmul"(%arg0, %[[L1]]) {flow.sbp = ["S(1)"]} : (tensor<4x6xf32>, tensor<6x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT: %[[B1:.*]] = "flow.local_slice"(%{{.*}}) {dim = 0 : i64, mesh_axis = -1 : i64, flow.sbp = ["S(0)"]} : (tensor<4xf32>) -> tensor<2xf32>
// CHECK-NEXT: %[[A1:.*]] = "flow.add"(%[[M1]], %[[B1]]) {flow.sbp = ["S(1)"]} : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT: %[[R:.*]] = "flow.relu"(%[[A1]]) {flow.sbp = ["S(1)"]} : (tensor<4x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT: %[[W2:.*]] = "flow.local_slice"(%{{.*}}) {dim = 0 : i64, mesh_axis = -1 : i64, flow.sbp = ["S(0)"]} : (tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[M2:.*]] = "flow.matmul"(%[[R]], %[[W2]]) {flow.sbp = ["P(sum)"]} : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %[[RS:.*]] = "flow.reduce_scatter"(%[[M2]]) {dim = 0 : i64, mesh_axis = -1 : i64, reduce = "sum", flow.sbp = ["S(0)"]} : (tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[Y:.*]] = "flow.add"(%[[RS]], %{{.*}}) {flow.sbp = ["S(0)"]} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[G:.*]] = "flow.all_gather"(%[[Y]]) {dim = 0 : i64, mesh_axis = -1 : i64, flow.sbp = ["B"]} : (tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: "func.return"(%[[G]])
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main(%arg0: tensor<4x6xf32> {flow.name = "x"}) -> (tensor<4x3xf32> {flow.name = "y"}) {
    %w1 = "flow.constant"() {value = dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<6x4xf32>} : () -> tensor<6x4xf32>
    %b1 = "flow.constant"() {value = dense<[0.5, 1.5, 2.5, 3.5]> : tensor<4xf32>} : () -> tensor<4xf32>
    %w2 = "flow.constant"() {value = dense<1.0> : tensor<4x3xf32>} : () -> tensor<4x3xf32>
    %b2 = "flow.constant"() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %0 = "flow.matmul"(%arg0, %w1) : (tensor<4x6xf32>, tensor<6x4xf32>) -> tensor<4x4xf32>
    %1 = "flow.add"(%0, %b1) : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
    %2 = "flow.relu"(%1) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = "flow.matmul"(%2, %w2) : (tensor<4x4xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %4 = "flow.add"(%3, %b2) : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    "func.return"(%4) : (tensor<4x3xf32>) -> ()
  }
}


// -----
// One row (a batch of 1) does not divide: the partial sum is all-reduced and the bias added whole.
// CHECK: // -----
// CHECK: %[[M2:.*]] = "flow.matmul"({{.*}}) {flow.sbp = ["P(sum)"]} : (tensor<1x2xf32>, tensor<2x3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT: %[[AR:.*]] = "flow.all_reduce"(%[[M2]]) {mesh_axis = -1 : i64, reduce = "sum", flow.sbp = ["B"]} : (tensor<1x3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT: "flow.add"(%[[AR]], %{{.*}}) {flow.sbp = ["B"]} : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main(%arg0: tensor<1x6xf32> {flow.name = "x"}) -> (tensor<1x3xf32> {flow.name = "y"}) {
    %w1 = "flow.constant"() {value = dense<0.5> : tensor<6x4xf32>} : () -> tensor<6x4xf32>
    %w2 = "flow.constant"() {value = dense<1.0> : tensor<4x3xf32>} : () -> tensor<4x3xf32>
    %b2 = "flow.constant"() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %0 = "flow.matmul"(%arg0, %w1) : (tensor<1x6xf32>, tensor<6x4xf32>) -> tensor<1x4xf32>
    %1 = "flow.relu"(%0) : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %2 = "flow.matmul"(%1, %w2) : (tensor<1x4xf32>, tensor<4x3xf32>) -> tensor<1x3xf32>
    %3 = "flow.add"(%2, %b2) : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
    "func.return"(%3) : (tensor<1x3xf32>) -> ()
  }
}
