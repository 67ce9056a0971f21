// split_sliced_matmul: a matmul by a constant weight read only through slices of its last axis (with a bias
// add in between or not) becomes one matmul per slice by that slice's weight columns; anything else read
// from the product, a slice of another axis or a single slice leaves it fused.
// RUN: %flowc build %s -O0 --passes=split_sliced_matmul,dce --verify-each --emit ir --split-input-file | FileCheck %s

// PyTorch's attention in-projection: [2, 6] weight, bias, three slices of 2 columns each.
// CHECK-LABEL: func.func @qkv
// CHECK-NOT: flow.slice
// CHECK: %[[W0:.*]] = "flow.constant"() {value = dense<{{\[\[}}1.000000e+00, 2.000000e+00], [7.000000e+00, 8.000000e+00]]> : tensor<2x2xf32>}
// CHECK: %[[M0:.*]] = "flow.matmul"(%arg0, %[[W0]]) : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32> loc("in_proj")
// CHECK: %[[B0:.*]] = "flow.constant"() {value = dense<[1.000000e-01, 2.000000e-01]> : tensor<2xf32>}
// CHECK: "flow.add"(%[[M0]], %[[B0]]) {{.*}} loc("in_bias")
// CHECK: "flow.constant"() {value = dense<{{\[\[}}3.000000e+00, 4.000000e+00], [9.000000e+00, 1.000000e+01]]> : tensor<2x2xf32>}
// CHECK: "flow.constant"() {value = dense<{{\[\[}}5.000000e+00, 6.000000e+00], [1.100000e+01, 1.200000e+01]]> : tensor<2x2xf32>}
// CHECK: "flow.constant"() {value = dense<[5.000000e-01, 6.000000e-01]> : tensor<2xf32>}
// CHECK-NOT: tensor<2x6xf32>
module {
  func.func @qkv(%arg0: tensor<3x2xf32> {flow.name = "x"}) -> (tensor<3x2xf32> {flow.name = "q"}, tensor<3x2xf32> {flow.name = "k"}, tensor<3x2xf32> {flow.name = "v"}) {
    %w = "flow.constant"() {value = dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [7.0, 8.0, 9.0, 10.0, 11.0, 12.0]]> : tensor<2x6xf32>} : () -> tensor<2x6xf32>
    %b = "flow.constant"() {value = dense<[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]> : tensor<6xf32>} : () -> tensor<6xf32>
    %m = "flow.matmul"(%arg0, %w) : (tensor<3x2xf32>, tensor<2x6xf32>) -> tensor<3x6xf32> loc("in_proj")
    %y = "flow.add"(%m, %b) : (tensor<3x6xf32>, tensor<6xf32>) -> tensor<3x6xf32> loc("in_bias")
    %q = "flow.slice"(%y) {ends = array<i64: 3, 2>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<3x6xf32>) -> tensor<3x2xf32>
    %k = "flow.slice"(%y) {ends = array<i64: 3, 4>, starts = array<i64: 0, 2>, steps = array<i64: 1, 1>} : (tensor<3x6xf32>) -> tensor<3x2xf32>
    %v = "flow.slice"(%y) {ends = array<i64: 3, 6>, starts = array<i64: 0, 4>, steps = array<i64: 1, 1>} : (tensor<3x6xf32>) -> tensor<3x2xf32>
    "func.return"(%q, %k, %v) : (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> ()
  }
}

// -----
// No bias, a batch axis, overlapping slices: each still gets its own columns.
// CHECK-LABEL: func.func @overlap
// CHECK-NOT: flow.slice
// CHECK: "flow.matmul"(%arg0, %{{.*}}) : (tensor<2x3x2xf32>, tensor<2x3xf32>) -> tensor<2x3x3xf32>
// CHECK: "flow.matmul"(%arg0, %{{.*}}) : (tensor<2x3x2xf32>, tensor<2x2xf32>) -> tensor<2x3x2xf32>
module {
  func.func @overlap(%arg0: tensor<2x3x2xf32> {flow.name = "x"}) -> (tensor<2x3x3xf32> {flow.name = "a"}, tensor<2x3x2xf32> {flow.name = "b"}) {
    %w = "flow.constant"() {value = dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
    %m = "flow.matmul"(%arg0, %w) : (tensor<2x3x2xf32>, tensor<2x4xf32>) -> tensor<2x3x4xf32>
    %a = "flow.slice"(%m) {ends = array<i64: 2, 3, 3>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : (tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
    %b = "flow.slice"(%m) {ends = array<i64: 2, 3, 4>, starts = array<i64: 0, 0, 2>, steps = array<i64: 1, 1, 1>} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
    "func.return"(%a, %b) : (tensor<2x3x3xf32>, tensor<2x3x2xf32>) -> ()
  }
}

// -----
// Left fused: the product is also returned; a slice of another axis; a single slice; a strided slice.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: "flow.matmul"(%arg0, %{{.*}}) : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
module {
  func.func @kept(%arg0: tensor<3x2xf32> {flow.name = "x"}) -> (tensor<3x4xf32> {flow.name = "p"}, tensor<3x2xf32> {flow.name = "s"}, tensor<2x4xf32> {flow.name = "r"}, tensor<3x2xf32> {flow.name = "one"}, tensor<3x2xf32> {flow.name = "st"}, tensor<3x2xf32> {flow.name = "st2"}) {
    %w = "flow.constant"() {value = dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
    %m0 = "flow.matmul"(%arg0, %w) : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
    %s0 = "flow.slice"(%m0) {ends = array<i64: 3, 2>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<3x4xf32>) -> tensor<3x2xf32>
    %m1 = "flow.matmul"(%arg0, %w) : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
    %r = "flow.slice"(%m1) {ends = array<i64: 2, 4>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<3x4xf32>) -> tensor<2x4xf32>
    %m2 = "flow.matmul"(%arg0, %w) : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
    %one = "flow.slice"(%m2) {ends = array<i64: 3, 2>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<3x4xf32>) -> tensor<3x2xf32>
    %m3 = "flow.matmul"(%arg0, %w) : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
    %st = "flow.slice"(%m3) {ends = array<i64: 3, 4>, starts = array<i64: 0, 0>, steps = array<i64: 1, 2>} : (tensor<3x4xf32>) -> tensor<3x2xf32>
    %st2 = "flow.slice"(%m3) {ends = array<i64: 3, 4>, starts = array<i64: 0, 2>, steps = array<i64: 1, 1>} : (tensor<3x4xf32>) -> tensor<3x2xf32>
    "func.return"(%m0, %s0, %r, %one, %st, %st2) : (tensor<3x4xf32>, tensor<3x2xf32>, tensor<2x4xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> ()
  }
}
