// Region ops: a flow.loop with a carried value, a captured one and a scan output, and a flow.if with
// two regions, in MLIR's generic region syntax. print -> parse -> print is identical, mlir-opt-19
// accepts the text (every op has a loc, so its output with the locations reads back to the same module).
// RUN: rm -rf %t && mkdir -p %t
// RUN: %flowc build %s -O0 --emit ir -o %t/a.mlir
// RUN: FileCheck %s < %t/a.mlir
// RUN: %flowc build %t/a.mlir -O0 --emit ir | diff %t/a.mlir -
// RUN: mlir-opt --allow-unregistered-dialect --mlir-print-debuginfo --mlir-print-local-scope %t/a.mlir -o %t/opt.mlir
// RUN: %flowc build %t/opt.mlir -O0 --emit ir | diff %t/a.mlir -

// CHECK:      %1:2 = "flow.loop"(%arg0, %0, %arg1, %arg2) ({
// CHECK-NEXT: ^bb0(%b0_0: tensor<i64>, %b0_1: tensor<i1>, %b0_2: tensor<1x4xf32>, %b0_3: tensor<4x4xf32>):
// CHECK-NEXT:   %2 = "flow.matmul"(%b0_2, %b0_3) : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32> loc("mm")
// CHECK-NEXT:   "flow.yield"(%b0_1, %2, %2) : (tensor<i1>, tensor<1x4xf32>, tensor<1x4xf32>) -> () loc("yield")
// CHECK-NEXT: }) {carried = 1 : i64, scan_len = 5 : i64} : (tensor<i64>, tensor<i1>, tensor<1x4xf32>, tensor<4x4xf32>) -> (tensor<1x4xf32>, tensor<5x1x4xf32>) loc("loop")
// CHECK:      %3 = "flow.if"(%0, %1#0) ({
// CHECK-NEXT: ^bb0(%b1_0: tensor<1x4xf32>):
// CHECK-NEXT:   %4 = "flow.neg"(%b1_0) : (tensor<1x4xf32>) -> tensor<1x4xf32> loc("n")
// CHECK-NEXT:   "flow.yield"(%4) : (tensor<1x4xf32>) -> ()
// CHECK-NEXT: }, {
// CHECK-NEXT: ^bb0(%b2_0: tensor<1x4xf32>):
// CHECK-NEXT:   "flow.yield"(%b2_0) : (tensor<1x4xf32>) -> ()
// CHECK-NEXT: }) : (tensor<i1>, tensor<1x4xf32>) -> tensor<1x4xf32>
module {
  func.func @main(%trip: tensor<i64> {flow.name = "trip"}, %h0: tensor<1x4xf32> {flow.name = "h0"},
                  %w: tensor<4x4xf32> {flow.name = "w"}) -> (tensor<1x4xf32> {flow.name = "h"},
                  tensor<5x1x4xf32> {flow.name = "ys"}) {
    %true = "flow.constant"() {value = dense<true> : tensor<i1>} : () -> tensor<i1> loc("true")
    %r:2 = "flow.loop"(%trip, %true, %h0, %w) ({
    ^bb0(%i: tensor<i64>, %c: tensor<i1>, %h: tensor<1x4xf32>, %w1: tensor<4x4xf32>):
      %h2 = "flow.matmul"(%h, %w1) : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32> loc("mm")
      "flow.yield"(%c, %h2, %h2) : (tensor<i1>, tensor<1x4xf32>, tensor<1x4xf32>) -> () loc("yield")
    }) {carried = 1 : i64, scan_len = 5 : i64} : (tensor<i64>, tensor<i1>, tensor<1x4xf32>, tensor<4x4xf32>) -> (tensor<1x4xf32>, tensor<5x1x4xf32>) loc("loop")
    %s = "flow.if"(%true, %r#0) ({
    ^bb0(%a: tensor<1x4xf32>):
      %n = "flow.neg"(%a) : (tensor<1x4xf32>) -> tensor<1x4xf32> loc("n")
      "flow.yield"(%n) : (tensor<1x4xf32>) -> () loc("yield")
    }, {
    ^bb0(%a: tensor<1x4xf32>):
      "flow.yield"(%a) : (tensor<1x4xf32>) -> () loc("yield")
    }) : (tensor<i1>, tensor<1x4xf32>) -> tensor<1x4xf32> loc("if")
    return %s, %r#1 : tensor<1x4xf32>, tensor<5x1x4xf32> loc("ret")
  }
}
