// sbp_data: inputs split along dim 0 where it divides by the ranks, splits kept through ops whose rules allow
// them, boxing ops where they do not, outputs gathered; every value has its local type and its signature.
// RUN: %flowc build %s -O0 --passes=sbp_data --verify-each --emit ir --split-input-file | FileCheck %s

// Two ranks: batch split through matmul, bias add and relu; weights whole; the output gathered.
// CHECK-LABEL: module attributes {flow.mesh = array<i64: 2>}
// CHECK: %arg0: tensor<4x6xf32> {flow.name = "x", flow.sbp = ["B"]}
// CHECK-NEXT: %0 = "flow.local_slice"(%arg0) {dim = 0 : i64, mesh_axis = -1 : i64, flow.sbp = ["S(0)"]} : (tensor<4x6xf32>) -> tensor<2x6xf32> loc("x")
// CHECK: "flow.matmul"(%0, %{{.*}}) {flow.sbp = ["S(0)"]} : (tensor<2x6xf32>, tensor<6x3xf32>) -> tensor<2x3xf32>
// CHECK: "flow.add"({{.*}}) {flow.sbp = ["S(0)"]} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK: "flow.relu"({{.*}}) {flow.sbp = ["S(0)"]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: %[[G:.*]] = "flow.all_gather"({{.*}}) {dim = 0 : i64, mesh_axis = -1 : i64, flow.sbp = ["B"]} : (tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: "func.return"(%[[G]])
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main(%arg0: tensor<4x6xf32> {flow.name = "x"}) -> (tensor<4x3xf32> {flow.name = "y"}) {
    %w = "flow.constant"() {value = dense<1.0> : tensor<6x3xf32>} : () -> tensor<6x3xf32>
    %b = "flow.constant"() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %0 = "flow.matmul"(%arg0, %w) : (tensor<4x6xf32>, tensor<6x3xf32>) -> tensor<4x3xf32>
    %1 = "flow.add"(%0, %b) : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %2 = "flow.relu"(%1) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    "func.return"(%2) : (tensor<4x3xf32>) -> ()
  }
}

// -----
// Four ranks: reshape and transpose move the split dim; a reduction over another dim keeps it (renumbered
// without keepdims); a reduction over the split dim gives P(max), reduced before the add; cumsum along the
// split dim takes it whole (gathered, with a note); an input whose dim 0 does not divide stays B.
// CHECK-LABEL: module attributes {flow.mesh = array<i64: 4>}
// CHECK: %0 = "flow.local_slice"(%arg0) {{.*}} : (tensor<8x6xf32>) -> tensor<2x6xf32> loc("x")
// CHECK-NOT: local_slice
// CHECK: "flow.reshape"({{.*}}) {shape = array<i64: 2, 2, 2>, flow.sbp = ["S(0)"]} : (tensor<2x4xf32>) -> tensor<2x2x2xf32>
// CHECK: "flow.transpose"({{.*}}) {perm = array<i64: 1, 0, 2>, flow.sbp = ["S(1)"]} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
// CHECK: "flow.reduce_sum"({{.*}}) {axes = array<i64: 0, 2>, keepdims = 0 : i64, flow.sbp = ["S(0)"]} : (tensor<2x2x2xf32>) -> tensor<2xf32>
// CHECK: %[[M:.*]] = "flow.reduce_max"(%0) {axes = array<i64: 0>, keepdims = 1 : i64, flow.sbp = ["P(max)"]} : (tensor<2x6xf32>) -> tensor<1x6xf32>
// CHECK: %[[W:.*]] = "flow.all_gather"(%0) {dim = 0 : i64, mesh_axis = -1 : i64, flow.sbp = ["B"]} : (tensor<2x6xf32>) -> tensor<8x6xf32>
// CHECK-NEXT: "flow.cumsum"(%[[W]]) {{{.*}}, flow.sbp = ["B"], flow.sbp_note = "no split of these operands carries through this op: it runs on whole tensors"} : (tensor<8x6xf32>) -> tensor<8x6xf32>
// CHECK: "flow.relu"(%arg1) {flow.sbp = ["B"]} : (tensor<3x6xf32>) -> tensor<3x6xf32>
// CHECK: %[[R:.*]] = "flow.all_reduce"(%[[M]]) {mesh_axis = -1 : i64, reduce = "max", flow.sbp = ["B"]} : (tensor<1x6xf32>) -> tensor<1x6xf32>
// CHECK-NEXT: "flow.add"(%{{.*}}, %[[R]]) {flow.sbp = ["B"]} : (tensor<4x6xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
module attributes {flow.mesh = array<i64: 4>} {
  func.func @main(%arg0: tensor<8x6xf32> {flow.name = "x"}, %arg1: tensor<3x6xf32> {flow.name = "odd"}) -> (tensor<8x1xf32>, tensor<4x6xf32>, tensor<3x6xf32>) {
    %w = "flow.constant"() {value = dense<1.0> : tensor<6x4xf32>} : () -> tensor<6x4xf32>
    %0 = "flow.matmul"(%arg0, %w) : (tensor<8x6xf32>, tensor<6x4xf32>) -> tensor<8x4xf32>
    %1 = "flow.reshape"(%0) {shape = array<i64: 8, 2, 2>} : (tensor<8x4xf32>) -> tensor<8x2x2xf32>
    %2 = "flow.transpose"(%1) {perm = array<i64: 1, 0, 2>} : (tensor<8x2x2xf32>) -> tensor<2x8x2xf32>
    %3 = "flow.reduce_sum"(%2) {axes = array<i64: 0, 2>, keepdims = 0} : (tensor<2x8x2xf32>) -> tensor<8xf32>
    %4 = "flow.reshape"(%3) {shape = array<i64: 8, 1>} : (tensor<8xf32>) -> tensor<8x1xf32>
    %5 = "flow.reduce_max"(%arg0) {axes = array<i64: 0>, keepdims = 1} : (tensor<8x6xf32>) -> tensor<1x6xf32>
    %6 = "flow.cumsum"(%arg0) {axis = 0, exclusive = 0, reverse = 0} : (tensor<8x6xf32>) -> tensor<8x6xf32>
    %7 = "flow.slice"(%6) {starts = array<i64: 0, 0>, ends = array<i64: 4, 6>, steps = array<i64: 1, 1>} : (tensor<8x6xf32>) -> tensor<4x6xf32>
    %8 = "flow.relu"(%arg1) : (tensor<3x6xf32>) -> tensor<3x6xf32>
    %10 = "flow.add"(%7, %5) : (tensor<4x6xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
    "func.return"(%4, %10, %8) : (tensor<8x1xf32>, tensor<4x6xf32>, tensor<3x6xf32>) -> ()
  }
}

// -----
// An op without rules (topk) takes whole operands: the split input is gathered first, with a note.
// CHECK-LABEL: module attributes {flow.mesh = array<i64: 2>}
// CHECK: %[[G:.*]] = "flow.all_gather"(%1) {dim = 0 : i64, mesh_axis = -1 : i64, flow.sbp = ["B"]} : (tensor<2x5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT: "flow.topk"(%[[G]]) {{{.*}}, flow.sbp = ["B"], flow.sbp_note = "no SBP rule for this op: it runs on whole tensors"}
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main(%arg0: tensor<4x5xf32> {flow.name = "x"}) -> (tensor<4x2xf32>, tensor<4x2xi64>) {
    %0 = "flow.relu"(%arg0) : (tensor<4x5xf32>) -> tensor<4x5xf32>
    %1:2 = "flow.topk"(%0) {axis = 1, k = 2, largest = 1, sorted = 1} : (tensor<4x5xf32>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
    "func.return"(%1#0, %1#1) : (tensor<4x2xf32>, tensor<4x2xi64>) -> ()
  }
}

// -----
// A batch that does not divide by the ranks stays whole: no collective at all.
// CHECK-LABEL: module attributes {flow.mesh = array<i64: 2>}
// CHECK-NOT: local_slice
// CHECK-NOT: all_gather
// CHECK: "flow.relu"(%arg0) {flow.sbp = ["B"]} : (tensor<3x4xf32>) -> tensor<3x4xf32>
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main(%arg0: tensor<3x4xf32> {flow.name = "x"}) -> tensor<3x4xf32> {
    %0 = "flow.relu"(%arg0) : (tensor<3x4xf32>) -> tensor<3x4xf32>
    "func.return"(%0) : (tensor<3x4xf32>) -> ()
  }
}

// -----
// A 2x2 mesh: the split is over all four ranks, one signature entry per mesh axis.
// CHECK-LABEL: module attributes {flow.mesh = array<i64: 2, 2>}
// CHECK: %arg0: tensor<8x4xf32> {flow.name = "x", flow.sbp = ["B", "B"]}
// CHECK: "flow.local_slice"(%arg0) {dim = 0 : i64, mesh_axis = -1 : i64, flow.sbp = ["S(0)", "S(0)"]} : (tensor<8x4xf32>) -> tensor<2x4xf32>
// CHECK: "flow.softmax"({{.*}}) {axis = 1 : i64, flow.sbp = ["S(0)", "S(0)"]} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK: "flow.all_gather"({{.*}}) {dim = 0 : i64, mesh_axis = -1 : i64, flow.sbp = ["B", "B"]} : (tensor<2x4xf32>) -> tensor<8x4xf32>
module attributes {flow.mesh = array<i64: 2, 2>} {
  func.func @main(%arg0: tensor<8x4xf32> {flow.name = "x"}) -> tensor<8x4xf32> {
    %0 = "flow.softmax"(%arg0) {axis = 1} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    "func.return"(%0) : (tensor<8x4xf32>) -> ()
  }
}

// -----
// A slice keeps the split of a dim it takes whole (its end becomes the local size) and still cuts the others.
// CHECK-LABEL: module attributes {flow.mesh = array<i64: 2>}
// CHECK: "flow.slice"(%0) {ends = array<i64: 2, 6>, starts = array<i64: 0, 2>, steps = array<i64: 1, 1>, flow.sbp = ["S(0)"]} : (tensor<2x8xf32>) -> tensor<2x4xf32>
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main(%arg0: tensor<4x8xf32> {flow.name = "x"}) -> tensor<4x4xf32> {
    %0 = "flow.slice"(%arg0) {starts = array<i64: 0, 2>, ends = array<i64: 4, 6>, steps = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x4xf32>
    "func.return"(%0) : (tensor<4x4xf32>) -> ()
  }
}
