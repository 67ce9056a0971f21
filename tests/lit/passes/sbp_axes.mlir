// sbp_axes: one strategy per mesh axis (flow.sbp_axes, flowc build --mesh AxB --sbp data,tensor): one signature
// per value and axis, each boxing op over the group of one mesh axis (mesh_axis = k), splits of one dim by
// several axes nested (chunk coord0 * size1 + coord1), boxing from the last axis to the first.
// RUN: %flowc build %s -O0 --passes=sbp_axes --verify-each --emit ir --split-input-file | FileCheck %s

// data x tensor on 2x2: the batch sliced over axis 0, the first weight's columns over axis 1 (its bias too),
// the second weight's rows into P(sum) over axis 1, reduce-scattered into the rows over axis 1 (they divide),
// the second bias added to those rows, the output gathered over axis 1 and then axis 0.
// CHECK-LABEL: module attributes {flow.mesh = array<i64: 2, 2>}
// CHECK: %arg0: tensor<8x6xf32> {flow.name = "x", flow.sbp = ["B", "B"]}
// CHECK-NEXT: %0 = "flow.local_slice"(%arg0) {dim = 0 : i64, mesh_axis = 0 : i64, flow.sbp = ["S(0)", "B"]} : (tensor<8x6xf32>) -> tensor<4x6xf32> loc("x")
// CHECK: "flow.local_slice"(%{{.*}}) {dim = 0 : i64, mesh_axis = 1 : i64, flow.sbp = ["B", "S(0)"]} : (tensor<2x6x2xf32>) -> tensor<1x6x2xf32>
// CHECK: %[[W1:.*]] = "flow.reshape"({{.*}}) {shape = array<i64: 6, 2>, flow.sbp = ["B", "S(1)"]}
// CHECK: "flow.matmul"(%0, %[[W1]]) {flow.sbp = ["S(0)", "S(1)"]} : (tensor<4x6xf32>, tensor<6x2xf32>) -> tensor<4x2xf32>
// CHECK: "flow.relu"({{.*}}) {flow.sbp = ["S(0)", "S(1)"]} : (tensor<4x2xf32>) -> tensor<4x2xf32>
// CHECK: "flow.local_slice"({{.*}}) {dim = 0 : i64, mesh_axis = 1 : i64, flow.sbp = ["B", "S(0)"]} : (tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK: %[[P:.*]] = "flow.matmul"({{.*}}) {flow.sbp = ["S(0)", "P(sum)"]} : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %[[R:.*]] = "flow.reduce_scatter"(%[[P]]) {dim = 0 : i64, mesh_axis = 1 : i64, reduce = "sum", flow.sbp = ["S(0)", "S(0)"]} : (tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[Y:.*]] = "flow.add"(%[[R]], {{.*}}) {flow.sbp = ["S(0)", "S(0)"]}
// CHECK-NEXT: %[[G1:.*]] = "flow.all_gather"(%[[Y]]) {dim = 0 : i64, mesh_axis = 1 : i64, flow.sbp = ["S(0)", "B"]} : (tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %[[G:.*]] = "flow.all_gather"(%[[G1]]) {dim = 0 : i64, mesh_axis = 0 : i64, flow.sbp = ["B", "B"]} : (tensor<4x3xf32>) -> tensor<8x3xf32>
// CHECK-NEXT: "func.return"(%[[G]])
// CHECK-NOT: mesh_axis = -1
module attributes {flow.mesh = array<i64: 2, 2>, flow.sbp_axes = "data,tensor"} {
  func.func @main(%arg0: tensor<8x6xf32> {flow.name = "x"}) -> (tensor<8x3xf32> {flow.name = "y"}) {
    %w1 = "flow.constant"() {value = dense<1.0> : tensor<6x4xf32>} : () -> tensor<6x4xf32>
    %b1 = "flow.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
    %w2 = "flow.constant"() {value = dense<0.5> : tensor<4x3xf32>} : () -> tensor<4x3xf32>
    %b2 = "flow.constant"() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %0 = "flow.matmul"(%arg0, %w1) : (tensor<8x6xf32>, tensor<6x4xf32>) -> tensor<8x4xf32>
    %1 = "flow.add"(%0, %b1) : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
    %2 = "flow.relu"(%1) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %3 = "flow.matmul"(%2, %w2) : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    %4 = "flow.add"(%3, %b2) : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
    "func.return"(%4) : (tensor<8x3xf32>) -> ()
  }
}

// -----
// data x data: dim 0 split by both axes (2 rows of 8 a rank, chunk coord0 * 2 + coord1), sliced axis 0 then
// axis 1; cumsum along it takes it whole: gathered over axis 1 first, then axis 0.
// CHECK-LABEL: module attributes {flow.mesh = array<i64: 2, 2>}
// CHECK: %0 = "flow.local_slice"(%arg0) {dim = 0 : i64, mesh_axis = 0 : i64, flow.sbp = ["S(0)", "B"]} : (tensor<8x4xf32>) -> tensor<4x4xf32> loc("x")
// CHECK-NEXT: %1 = "flow.local_slice"(%0) {dim = 0 : i64, mesh_axis = 1 : i64, flow.sbp = ["S(0)", "S(0)"]} : (tensor<4x4xf32>) -> tensor<2x4xf32> loc("x")
// CHECK-NEXT: %2 = "flow.relu"(%1) {flow.sbp = ["S(0)", "S(0)"]} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %3 = "flow.all_gather"(%2) {dim = 0 : i64, mesh_axis = 1 : i64, flow.sbp = ["S(0)", "B"]} : (tensor<2x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %4 = "flow.all_gather"(%3) {dim = 0 : i64, mesh_axis = 0 : i64, flow.sbp = ["B", "B"]} : (tensor<4x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT: "flow.cumsum"(%4)
module attributes {flow.mesh = array<i64: 2, 2>, flow.sbp_axes = "data,data"} {
  func.func @main(%arg0: tensor<8x4xf32> {flow.name = "x"}) -> tensor<8x4xf32> {
    %0 = "flow.relu"(%arg0) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %1 = "flow.cumsum"(%0) {axis = 0, exclusive = 0, reverse = 0} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    "func.return"(%1) : (tensor<8x4xf32>) -> ()
  }
}

// -----
// tensor x tensor: the columns split by both axes (nested), the rows of the next matmul likewise, partial on
// both axes: reduced over axis 1, then axis 0.
// CHECK-LABEL: module attributes {flow.mesh = array<i64: 2, 2>}
// CHECK: "flow.local_slice"({{.*}}) {dim = 1 : i64, mesh_axis = 1 : i64, flow.sbp = ["S(1)", "S(1)"]} : (tensor<6x4xf32>) -> tensor<6x2xf32>
// CHECK: "flow.matmul"(%arg0, {{.*}}) {flow.sbp = ["S(1)", "S(1)"]} : (tensor<2x6xf32>, tensor<6x2xf32>) -> tensor<2x2xf32>
// CHECK: %[[P:.*]] = "flow.matmul"({{.*}}) {flow.sbp = ["P(sum)", "P(sum)"]} : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[R1:.*]] = "flow.all_reduce"(%[[P]]) {mesh_axis = 1 : i64, reduce = "sum", flow.sbp = ["P(sum)", "B"]}
// CHECK-NEXT: %[[R0:.*]] = "flow.all_reduce"(%[[R1]]) {mesh_axis = 0 : i64, reduce = "sum", flow.sbp = ["B", "B"]}
// CHECK-NEXT: "func.return"(%[[R0]])
module attributes {flow.mesh = array<i64: 2, 2>, flow.sbp_axes = "tensor,tensor"} {
  func.func @main(%arg0: tensor<2x6xf32> {flow.name = "x"}) -> tensor<2x3xf32> {
    %w1 = "flow.constant"() {value = dense<1.0> : tensor<6x8xf32>} : () -> tensor<6x8xf32>
    %w2 = "flow.constant"() {value = dense<0.5> : tensor<8x3xf32>} : () -> tensor<8x3xf32>
    %0 = "flow.matmul"(%arg0, %w1) : (tensor<2x6xf32>, tensor<6x8xf32>) -> tensor<2x8xf32>
    %1 = "flow.matmul"(%0, %w2) : (tensor<2x8xf32>, tensor<8x3xf32>) -> tensor<2x3xf32>
    "func.return"(%1) : (tensor<2x3xf32>) -> ()
  }
}

// -----
// A batch of 3 does not divide by axis 0: it stays whole there; axis 1's tensor split still applies.
// CHECK-LABEL: module attributes {flow.mesh = array<i64: 2, 2>}
// CHECK-NOT: mesh_axis = 0
// CHECK: "flow.matmul"(%arg0, {{.*}}) {flow.sbp = ["B", "S(1)"]} : (tensor<3x6xf32>, tensor<6x2xf32>) -> tensor<3x2xf32>
// CHECK: "flow.all_gather"({{.*}}) {dim = 1 : i64, mesh_axis = 1 : i64, flow.sbp = ["B", "B"]} : (tensor<3x2xf32>) -> tensor<3x4xf32>
module attributes {flow.mesh = array<i64: 2, 2>, flow.sbp_axes = "data,tensor"} {
  func.func @main(%arg0: tensor<3x6xf32> {flow.name = "x"}) -> tensor<3x4xf32> {
    %w1 = "flow.constant"() {value = dense<1.0> : tensor<6x4xf32>} : () -> tensor<6x4xf32>
    %0 = "flow.matmul"(%arg0, %w1) : (tensor<3x6xf32>, tensor<6x4xf32>) -> tensor<3x4xf32>
    "func.return"(%0) : (tensor<3x4xf32>) -> ()
  }
}
