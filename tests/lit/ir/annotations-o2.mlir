// -O2 keeps annotations on the ops that survive, and a rewrite that replaces an op carries the flow
// dialect's annotations to the replacement (fold: the folded constant; fusion: the fused op) while other
// dialects' are dropped; CSE merges only ops whose annotations are equal, and elementwise fusion leaves
// out a producer whose annotations the root lacks.
// RUN: %flowc build %s -O2 --emit ir | FileCheck %s
// RUN: %flowc build %s -O2 --emit ir | mlir-opt --allow-unregistered-dialect -o /dev/null

// CHECK:      func.func @main(%arg0: tensor<2x3xf32> {flow.name = "x", flow.sbp = ["S(0)"]})
// CHECK-NEXT:   %0 = "flow.relu"(%arg0) {flow.placement = array<i64: 0>, other.tag = "t"} {{.*}} loc("relu")
// CHECK-NEXT:   %1 = "flow.constant"() {value = dense<-2.000000e+00> : tensor<2x3xf32>, flow.sbp = ["B"]} {{.*}} loc("folded")
// CHECK-NEXT:   %2 = "flow.fused"(%arg0, %1) {dtype = f32, program = "relu o0; add s0 o1; exp s1", shape = array<i64: 2, 3>, flow.sbp = ["S(1)"]} {{.*}} loc("exp")
// CHECK-NEXT:   %3 = "flow.relu"(%arg0) {flow.placement = array<i64: 3>} {{.*}} loc("relu_elsewhere")
// CHECK-NEXT:   %4 = "flow.fused"(%3) {dtype = f32, program = "neg o0; exp s0", shape = array<i64: 2, 3>} {{.*}} loc("exp_here")
// CHECK-NEXT:   "func.return"(%0, %2, %0, %4)
module {
  func.func @main(%arg0: tensor<2x3xf32> {flow.name = "x", flow.sbp = ["S(0)"]}) -> (tensor<2x3xf32> {flow.name = "y"}, tensor<2x3xf32> {flow.name = "z"}, tensor<2x3xf32> {flow.name = "w"}, tensor<2x3xf32> {flow.name = "v"}) {
    %0 = "flow.relu"(%arg0) {flow.placement = array<i64: 0>, other.tag = "t"} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("relu")
    %1 = "flow.relu"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("relu_b")
    %2 = "flow.constant"() {value = dense<2.0> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
    %3 = "flow.neg"(%2) {flow.sbp = ["B"], other.tag = "dropped"} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("folded")
    %4 = "flow.add"(%1, %3) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("add")
    %5 = "flow.exp"(%4) {flow.sbp = ["S(1)"]} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("exp")
    %6 = "flow.relu"(%arg0) {flow.placement = array<i64: 0>, other.tag = "t"} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("relu_dup")
    %7 = "flow.relu"(%arg0) {flow.placement = array<i64: 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("relu_elsewhere")
    %8 = "flow.neg"(%7) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("neg_here")
    %9 = "flow.exp"(%8) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("exp_here")
    "func.return"(%0, %5, %6, %9) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> ()
  }
}
