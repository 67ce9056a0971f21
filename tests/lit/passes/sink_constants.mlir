// sink_constants: a constant that a loop or if captures becomes a constant inside the region that reads
// it, and the capture and its block argument go; a capture nothing reads goes too. A large constant
// stays captured when it is used outside as well or when both branches of an if read it (it would be
// stored twice); a small one is copied wherever it is read.
// RUN: %flowc build %s --passes=sink_constants --verify-each --emit ir --split-input-file | FileCheck %s
// RUN: %flowc build %s -O2 --emit ir --split-input-file | FileCheck %s --check-prefix=O2

// A recurrent step's weight (8 KiB, only the loop uses it): inside the body, before everything else;
// the unused capture %x is dropped, and with it the block arguments after the carried value.
// CHECK-LABEL: func.func @loop_weight(
// CHECK:         %[[W:[0-9]+]] = "flow.constant"() {value = dense<5.000000e-01> : tensor<32x64xf32>}
// CHECK-NEXT:    = "flow.loop"(%arg0, %arg1, %arg2) ({
// CHECK-NEXT:    ^bb0(%b0_0: tensor<i64>, %b0_1: tensor<i1>, %b0_2: tensor<1x32xf32>):
// CHECK-NEXT:      %[[WB:[0-9]+]] = "flow.constant"() {value = dense<5.000000e-01> : tensor<32x64xf32>} : () -> tensor<32x64xf32> loc("w")
// CHECK-NEXT:      = "flow.matmul"(%b0_2, %[[WB]])
// O2-LABEL: func.func @loop_weight(
// O2-NOT:        "flow.constant"
// O2:            "flow.loop"(%arg0, %arg1, %arg2) ({
// O2-NEXT:       ^bb0(%b0_0: tensor<i64>, %b0_1: tensor<i1>, %b0_2: tensor<1x32xf32>):
// O2-NEXT:         "flow.constant"() {value = dense<5.000000e-01> : tensor<32x64xf32>}
func.func @loop_weight(%t: tensor<i64>, %c: tensor<i1>, %h0: tensor<1x32xf32>, %x: tensor<3xf32>) -> tensor<1x32xf32> {
  %w = "flow.constant"() {value = dense<0.5> : tensor<32x64xf32>} : () -> tensor<32x64xf32> loc("w")
  %r = "flow.loop"(%t, %c, %h0, %w, %x) ({
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %h: tensor<1x32xf32>, %w1: tensor<32x64xf32>, %x1: tensor<3xf32>):
    %m = "flow.matmul"(%h, %w1) : (tensor<1x32xf32>, tensor<32x64xf32>) -> tensor<1x64xf32>
    %s = "flow.slice"(%m) {starts = array<i64: 0, 0>, ends = array<i64: 1, 32>, steps = array<i64: 1, 1>} : (tensor<1x64xf32>) -> tensor<1x32xf32>
    %n = "flow.tanh"(%s) : (tensor<1x32xf32>) -> tensor<1x32xf32>
    "flow.yield"(%cc, %n) : (tensor<i1>, tensor<1x32xf32>) -> ()
  }) {carried = 1 : i64} : (tensor<i64>, tensor<i1>, tensor<1x32xf32>, tensor<32x64xf32>, tensor<3xf32>) -> tensor<1x32xf32>
  return %r : tensor<1x32xf32>
}

// -----
// The same weight also used after the loop stays captured (one copy of its bytes).
// CHECK-LABEL: func.func @shared_weight(
// CHECK:         "flow.loop"(%arg0, %arg1, %arg2, %{{[0-9]+}}) ({
// CHECK-NEXT:    ^bb0(%b0_0: tensor<i64>, %b0_1: tensor<i1>, %b0_2: tensor<1x64xf32>, %b0_3: tensor<64x64xf32>):
// CHECK-NEXT:      "flow.matmul"(%b0_2, %b0_3)
func.func @shared_weight(%t: tensor<i64>, %c: tensor<i1>, %h0: tensor<1x64xf32>) -> tensor<1x64xf32> {
  %w = "flow.constant"() {value = dense<0.5> : tensor<64x64xf32>} : () -> tensor<64x64xf32>
  %r = "flow.loop"(%t, %c, %h0, %w) ({
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %h: tensor<1x64xf32>, %w1: tensor<64x64xf32>):
    %m = "flow.matmul"(%h, %w1) : (tensor<1x64xf32>, tensor<64x64xf32>) -> tensor<1x64xf32>
    "flow.yield"(%cc, %m) : (tensor<i1>, tensor<1x64xf32>) -> ()
  }) {carried = 1 : i64} : (tensor<i64>, tensor<i1>, tensor<1x64xf32>, tensor<64x64xf32>) -> tensor<1x64xf32>
  %o = "flow.matmul"(%r, %w) : (tensor<1x64xf32>, tensor<64x64xf32>) -> tensor<1x64xf32>
  return %o : tensor<1x64xf32>
}

// -----
// An if: the small bias goes into both branches, the large weight both read stays captured, the weight
// only the else branch reads goes into it; the captures left keep their order.
// CHECK-LABEL: func.func @branches(
// CHECK:         "flow.if"(%arg0, %arg1, %{{[0-9]+}}) ({
// CHECK-NEXT:    ^bb0(%b0_0: tensor<1x64xf32>, %b0_1: tensor<64x64xf32>):
// CHECK-NEXT:      %[[B0:[0-9]+]] = "flow.constant"() {value = dense<2.000000e+00> : tensor<64xf32>}
// CHECK-NEXT:      %[[M0:[0-9]+]] = "flow.matmul"(%b0_0, %b0_1)
// CHECK-NEXT:      "flow.add"(%[[M0]], %[[B0]])
// CHECK:         ^bb0(%b1_0: tensor<1x64xf32>, %b1_1: tensor<64x64xf32>):
// CHECK-NEXT:      %[[B1:[0-9]+]] = "flow.constant"() {value = dense<2.000000e+00> : tensor<64xf32>}
// CHECK-NEXT:      %[[V:[0-9]+]] = "flow.constant"() {value = dense<3.000000e+00> : tensor<64x64xf32>}
// CHECK-NEXT:      %[[M1:[0-9]+]] = "flow.matmul"(%b1_0, %b1_1)
// CHECK-NEXT:      %[[M2:[0-9]+]] = "flow.matmul"(%[[M1]], %[[V]])
// CHECK-NEXT:      "flow.add"(%[[M2]], %[[B1]])
func.func @branches(%p: tensor<i1>, %x: tensor<1x64xf32>) -> tensor<1x64xf32> {
  %w = "flow.constant"() {value = dense<0.5> : tensor<64x64xf32>} : () -> tensor<64x64xf32>
  %b = "flow.constant"() {value = dense<2.0> : tensor<64xf32>} : () -> tensor<64xf32>
  %v = "flow.constant"() {value = dense<3.0> : tensor<64x64xf32>} : () -> tensor<64x64xf32>
  %o = "flow.if"(%p, %x, %w, %b, %v) ({
  ^bb0(%a: tensor<1x64xf32>, %w1: tensor<64x64xf32>, %b1: tensor<64xf32>, %v1: tensor<64x64xf32>):
    %m = "flow.matmul"(%a, %w1) : (tensor<1x64xf32>, tensor<64x64xf32>) -> tensor<1x64xf32>
    %s = "flow.add"(%m, %b1) : (tensor<1x64xf32>, tensor<64xf32>) -> tensor<1x64xf32>
    "flow.yield"(%s) : (tensor<1x64xf32>) -> ()
  }, {
  ^bb0(%a: tensor<1x64xf32>, %w1: tensor<64x64xf32>, %b1: tensor<64xf32>, %v1: tensor<64x64xf32>):
    %m = "flow.matmul"(%a, %w1) : (tensor<1x64xf32>, tensor<64x64xf32>) -> tensor<1x64xf32>
    %m2 = "flow.matmul"(%m, %v1) : (tensor<1x64xf32>, tensor<64x64xf32>) -> tensor<1x64xf32>
    %s = "flow.add"(%m2, %b1) : (tensor<1x64xf32>, tensor<64xf32>) -> tensor<1x64xf32>
    "flow.yield"(%s) : (tensor<1x64xf32>) -> ()
  }) : (tensor<i1>, tensor<1x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>) -> tensor<1x64xf32>
  return %o : tensor<1x64xf32>
}

// -----
// Nested loops: the weight sunk into the outer body is then captured by the inner loop, whose turn comes
// next (regions after the graph holding them), so it ends in the inner body (the outer body's copy is
// left for dce).
// CHECK-LABEL: func.func @nested(
// CHECK:         "flow.loop"(%arg0, %arg1, %arg2) ({
// CHECK-NEXT:    ^bb0(%b0_0: tensor<i64>, %b0_1: tensor<i1>, %b0_2: tensor<1x32xf32>):
// CHECK:           "flow.loop"(%b0_0, %b0_1, %b0_2) ({
// CHECK-NEXT:      ^bb0(%b1_0: tensor<i64>, %b1_1: tensor<i1>, %b1_2: tensor<1x32xf32>):
// CHECK-NEXT:        %[[W:[0-9]+]] = "flow.constant"() {value = dense<5.000000e-01> : tensor<32x32xf32>}
// CHECK-NEXT:        "flow.matmul"(%b1_2, %[[W]])
func.func @nested(%t: tensor<i64>, %c: tensor<i1>, %h0: tensor<1x32xf32>) -> tensor<1x32xf32> {
  %w = "flow.constant"() {value = dense<0.5> : tensor<32x32xf32>} : () -> tensor<32x32xf32>
  %r = "flow.loop"(%t, %c, %h0, %w) ({
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %h: tensor<1x32xf32>, %w1: tensor<32x32xf32>):
    %in = "flow.loop"(%i, %cc, %h, %w1) ({
    ^bb0(%j: tensor<i64>, %c2: tensor<i1>, %g: tensor<1x32xf32>, %w2: tensor<32x32xf32>):
      %m = "flow.matmul"(%g, %w2) : (tensor<1x32xf32>, tensor<32x32xf32>) -> tensor<1x32xf32>
      "flow.yield"(%c2, %m) : (tensor<i1>, tensor<1x32xf32>) -> ()
    }) {carried = 1 : i64} : (tensor<i64>, tensor<i1>, tensor<1x32xf32>, tensor<32x32xf32>) -> tensor<1x32xf32>
    "flow.yield"(%cc, %in) : (tensor<i1>, tensor<1x32xf32>) -> ()
  }) {carried = 1 : i64} : (tensor<i64>, tensor<i1>, tensor<1x32xf32>, tensor<32x32xf32>) -> tensor<1x32xf32>
  return %r : tensor<1x32xf32>
}
