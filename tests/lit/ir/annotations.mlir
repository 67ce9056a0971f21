// Annotations (MLIR discardable attributes): on ops next to the inherent attributes, on graph inputs as
// argument attributes. print -> parse -> print is identical, mlir-opt-19 accepts the text, and what
// mlir-opt prints back parses to the same module (it drops locations and sorts attributes).
// RUN: rm -rf %t && mkdir -p %t
// RUN: %flowc build %s -O0 --emit ir -o %t/a.mlir
// RUN: FileCheck %s < %t/a.mlir
// RUN: %flowc build %t/a.mlir -O0 --emit ir -o %t/b.mlir
// RUN: diff %t/a.mlir %t/b.mlir
// RUN: mlir-opt --allow-unregistered-dialect %t/a.mlir -o %t/opt.mlir
// RUN: %flowc build %t/opt.mlir -O0 --emit ir -o %t/c.mlir
// RUN: sed 's/ loc("[^"]*")//' %t/a.mlir | diff - %t/c.mlir
// --emit dot shows each annotation as a label line of its op or input vertex.
// RUN: %flowc build %s -O0 --emit dot | FileCheck %s --check-prefix=DOT
// DOT: in0 [label="x\nflow.placement = array<i64: 0, 1>\nflow.sbp = [\"S(0)\", \"B\"]\nother.note = \"kept\""
// DOT: op{{[0-9]+}} [label="relu\nr\nflow.placement = array<i64: 2>\nflow.sbp = [\"S(1)\", \"P(sum)\"]\nmydialect.any = [1 : i64, -2 : i32, {{.*}}...", fillcolor="#c8ecc8"];
// DOT: [label="constant\nflow.prune_mask = dense<{{\[}}[true], [false]]> : tensor<2x1xi1>"
// DOT: [label="add\nflow.quant = !quant.uniform<i8<-127:127>:f32:1, {1.000000e-01,2.000000e-01:-1..."];

// CHECK: func.func @main(%arg0: tensor<2x3xf32> {flow.name = "x", flow.placement = array<i64: 0, 1>, flow.sbp = ["S(0)", "B"], other.note = "kept"})
// CHECK: "flow.relu"(%arg0) {flow.placement = array<i64: 2>, flow.sbp = ["S(1)", "P(sum)"], mydialect.any = [1 : i64, -2 : i32, 2.500000e+00 : f64, 5.000000e-01 : f32, "s", true, unit, array<f32: 1.000000e+00, -2.000000e+00>, array<i1: true, false>, f32, tensor<2xi8>, [7 : i64], {a = unit, b = 1 : i64, "c d" = {}}]} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("r")
// CHECK: "flow.constant"() {value = dense<1.000000e+00> : tensor<2x3xf32>, flow.prune_mask = dense<{{\[}}[true], [false]]> : tensor<2x1xi1>}
// CHECK: "flow.add"(%0, %1) {flow.quant = !quant.uniform<i8<-127:127>:f32:1, {1.000000e-01,2.000000e-01:-1,3.000000e-01}>}
// CHECK: "func.return"(%2) {other.ret = 1 : i64}

module {
  func.func @main(%arg0: tensor<2x3xf32> {flow.sbp = ["S(0)", "B"], flow.name = "x", other.note = "kept", flow.placement = array<i64: 0, 1>}) -> (tensor<2x3xf32> {flow.name = "y"}) {
    %0 = "flow.relu"(%arg0) {mydialect.any = [1, -2 : i32, 2.5, 0.5 : f32, "s", true, unit, array<f32: 1.0, -2.0>, array<i1: true, false>, f32, tensor<2xi8>, [7], {b = 1, a, "c d" = {}}], flow.sbp = ["S(1)", "P(sum)"], "flow.placement" = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("r")
    %1 = "flow.constant"() {flow.prune_mask = dense<[[true], [false]]> : tensor<2x1xi1>, value = dense<1.0> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
    %2 = "flow.add"(%0, %1) {flow.quant = !quant.uniform<i8<-127:127>:f32:1, {0.1, 0.2:-1, 0.3}>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    "func.return"(%2) {other.ret = 1} : (tensor<2x3xf32>) -> ()
  }
}
