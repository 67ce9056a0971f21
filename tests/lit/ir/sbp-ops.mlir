// The SBP boxing ops and the module's mesh (module attributes {flow.mesh = ...}): print -> parse -> print is
// identical, the local types follow from the mesh (G = 4 for mesh_axis -1 of a 2x2 mesh, 2 for axis 0 or 1),
// and mlir-opt accepts the text.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %flowc build %s -O0 --emit ir -o %t/a.mlir
// RUN: FileCheck %s < %t/a.mlir
// RUN: %flowc build %t/a.mlir -O0 --emit ir -o %t/b.mlir
// RUN: diff %t/a.mlir %t/b.mlir
// RUN: mlir-opt --allow-unregistered-dialect %t/a.mlir -o %t/opt.mlir
// RUN: %flowc build %t/opt.mlir -O0 --emit ir | FileCheck %s

// CHECK: module attributes {flow.mesh = array<i64: 2, 2>} {
// CHECK: "flow.local_slice"(%arg0) {dim = 0 : i64, mesh_axis = -1 : i64, flow.sbp = ["S(0)", "S(0)"]} : (tensor<8x6xf32>) -> tensor<2x6xf32>
// CHECK: "flow.local_slice"(%arg0) {dim = 1 : i64, mesh_axis = 1 : i64} : (tensor<8x6xf32>) -> tensor<8x3xf32>
// CHECK: "flow.all_gather"(%0) {dim = 0 : i64, mesh_axis = -1 : i64} : (tensor<2x6xf32>) -> tensor<8x6xf32>
// CHECK: "flow.all_gather"(%1) {dim = 1 : i64, mesh_axis = 0 : i64} : (tensor<8x3xf32>) -> tensor<8x6xf32>
// CHECK: "flow.all_reduce"(%arg0) {mesh_axis = 0 : i64, reduce = "max"} : (tensor<8x6xf32>) -> tensor<8x6xf32>
// CHECK: "flow.reduce_scatter"(%arg0) {dim = 0 : i64, mesh_axis = -1 : i64, reduce = "sum"} : (tensor<8x6xf32>) -> tensor<2x6xf32>
// CHECK: "flow.all_to_all"(%1) {concat_dim = 1 : i64, mesh_axis = 1 : i64, split_dim = 0 : i64} : (tensor<8x3xf32>) -> tensor<4x6xf32>
module attributes {flow.mesh = array<i64: 2, 2>} {
  func.func @main(%arg0: tensor<8x6xf32> {flow.name = "x"}) -> (tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>, tensor<2x6xf32>, tensor<4x6xf32>) {
    %0 = "flow.local_slice"(%arg0) {dim = 0, mesh_axis = -1, flow.sbp = ["S(0)", "S(0)"]} : (tensor<8x6xf32>) -> tensor<2x6xf32>
    %1 = "flow.local_slice"(%arg0) {dim = 1, mesh_axis = 1} : (tensor<8x6xf32>) -> tensor<8x3xf32>
    %2 = "flow.all_gather"(%0) {dim = 0, mesh_axis = -1} : (tensor<2x6xf32>) -> tensor<8x6xf32>
    %3 = "flow.all_gather"(%1) {dim = 1, mesh_axis = 0} : (tensor<8x3xf32>) -> tensor<8x6xf32>
    %4 = "flow.all_reduce"(%arg0) {mesh_axis = 0, reduce = "max"} : (tensor<8x6xf32>) -> tensor<8x6xf32>
    %5 = "flow.reduce_scatter"(%arg0) {dim = 0, mesh_axis = -1, reduce = "sum"} : (tensor<8x6xf32>) -> tensor<2x6xf32>
    %6 = "flow.all_to_all"(%1) {concat_dim = 1, mesh_axis = 1, split_dim = 0} : (tensor<8x3xf32>) -> tensor<4x6xf32>
    "func.return"(%2, %3, %4, %5, %6) : (tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>, tensor<2x6xf32>, tensor<4x6xf32>) -> ()
  }
}
