// The pipeline transfers send and recv (a rank's own program: flow.rank): print -> parse -> print is identical,
// DCE keeps them (not pure: each meets its peer's), and mlir-opt accepts the text.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %flowc build %s -O0 --passes=dce,cse --emit ir -o %t/a.mlir
// RUN: FileCheck %s < %t/a.mlir
// RUN: %flowc build %t/a.mlir -O0 --emit ir -o %t/b.mlir
// RUN: diff %t/a.mlir %t/b.mlir
// RUN: mlir-opt --allow-unregistered-dialect %t/a.mlir -o %t/opt.mlir
// RUN: %flowc build %t/opt.mlir -O0 --emit ir | FileCheck %s

// CHECK: module attributes {flow.mesh = array<i64: 3>, flow.rank = 1 : i64} {
// CHECK: %[[A:.*]] = "flow.recv"() {dtype = f32, peer = 0 : i64, shape = array<i64: 2, 3>, tag = 0 : i64} : () -> tensor<2x3xf32>
// CHECK: %[[B:.*]] = "flow.recv"() {dtype = f32, peer = 0 : i64, shape = array<i64: 2, 3>, tag = 1 : i64} : () -> tensor<2x3xf32>
// CHECK: %[[U:.*]] = "flow.recv"() {dtype = i32, peer = 2 : i64, shape = array<i64>, tag = 2 : i64} : () -> tensor<i32>
// CHECK: %[[C:.*]] = "flow.add"(%[[A]], %[[B]])
// CHECK: "flow.send"(%[[C]]) {peer = 2 : i64, tag = 3 : i64} : (tensor<2x3xf32>) -> ()
// CHECK: "func.return"(%[[C]])
module attributes {flow.mesh = array<i64: 3>, flow.rank = 1} {
  func.func @main() -> tensor<2x3xf32> {
    %a = "flow.recv"() {dtype = f32, peer = 0, shape = array<i64: 2, 3>, tag = 0} : () -> tensor<2x3xf32>
    %b = "flow.recv"() {dtype = f32, peer = 0, shape = array<i64: 2, 3>, tag = 1} : () -> tensor<2x3xf32>
    %unused = "flow.recv"() {dtype = i32, peer = 2, shape = array<i64>, tag = 2} : () -> tensor<i32>
    %c = "flow.add"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    "flow.send"(%c) {peer = 2, tag = 3} : (tensor<2x3xf32>) -> ()
    return %c : tensor<2x3xf32>
  }
}
