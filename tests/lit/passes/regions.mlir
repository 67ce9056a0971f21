// Passes run inside loop and if bodies (each region is a graph of its own) and treat a region op as an
// opaque pure op around it: DCE drops a loop whose results are unused and, inside a body, keeps exactly
// what the yield uses; CSE never merges two identical loops; fold and canonicalize simplify a body;
// fuse_elementwise fuses a body's element-wise chain; --print-after shows the bodies.
// RUN: %flowc build %s --passes=dce --verify-each --emit ir --split-input-file | FileCheck %s --check-prefix=DCE
// RUN: %flowc build %s --passes=cse --verify-each --emit ir --split-input-file | FileCheck %s --check-prefix=CSE
// RUN: %flowc build %s -O2 --verify-each --emit ir --split-input-file | FileCheck %s --check-prefix=O2
// RUN: %flowc build %s --passes=fold,dce --print-after=dce --emit ir --split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=DUMP

// DCE-LABEL: func.func @dce(
// DCE-NEXT:    %0 = "flow.loop"(%arg0, %arg1, %arg2) ({
// DCE-NEXT:    ^bb0(%b0_0: tensor<i64>, %b0_1: tensor<i1>, %b0_2: tensor<4xf32>):
// DCE-NEXT:      %1 = "flow.tanh"(%b0_2)
// DCE-NEXT:      "flow.yield"(%b0_1, %1)
// DCE-NEXT:    }) {carried = 1 : i64}
// DCE-NEXT:    "func.return"(%0)
// CSE-LABEL: func.func @dce(
// CSE-COUNT-3:   = "flow.loop"
// CSE-NOT:       "flow.loop"
// CSE:           "func.return"
// DUMP:        // -----// IR Dump After dce //----- //
// DUMP:        "flow.loop"(%arg0, %arg1, %arg2) ({
// DUMP-NEXT:   ^bb0(%b0_0: tensor<i64>, %b0_1: tensor<i1>, %b0_2: tensor<4xf32>):
// DUMP-NEXT:     %1 = "flow.tanh"(%b0_2)
// DUMP-NEXT:     "flow.yield"(%b0_1, %1)
func.func @dce(%t: tensor<i64>, %c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %r = "flow.loop"(%t, %c, %x) ({
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %h: tensor<4xf32>):
    %dead = "flow.exp"(%h) : (tensor<4xf32>) -> tensor<4xf32>
    %n = "flow.tanh"(%h) : (tensor<4xf32>) -> tensor<4xf32>
    "flow.yield"(%cc, %n) : (tensor<i1>, tensor<4xf32>) -> ()
  }) {carried = 1 : i64} : (tensor<i64>, tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  %unused = "flow.loop"(%t, %c, %x) ({
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %h: tensor<4xf32>):
    %n = "flow.tanh"(%h) : (tensor<4xf32>) -> tensor<4xf32>
    "flow.yield"(%cc, %n) : (tensor<i1>, tensor<4xf32>) -> ()
  }) {carried = 1 : i64} : (tensor<i64>, tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  %same = "flow.loop"(%t, %c, %x) ({
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %h: tensor<4xf32>):
    %dead = "flow.exp"(%h) : (tensor<4xf32>) -> tensor<4xf32>
    %n = "flow.tanh"(%h) : (tensor<4xf32>) -> tensor<4xf32>
    "flow.yield"(%cc, %n) : (tensor<i1>, tensor<4xf32>) -> ()
  }) {carried = 1 : i64} : (tensor<i64>, tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  %sum = "flow.add"(%r, %same) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----
// An RNN-like step: h' = tanh(h * w + x[t]) * 0.5 + h, with x[t] a gather of the captured x. At -O2 a
// constant sub-expression folds to 0.5 and the element-wise tail becomes the matmul's epilogue inside the
// body; the if's then branch loses its identity reshape.
// O2-LABEL: func.func @step(
// O2:         "flow.loop"(%arg0, %{{[0-9]+}}, %arg1, %arg2, %arg3) ({
// O2-NEXT:    ^bb0(%b0_0: tensor<i64>, %b0_1: tensor<i1>, %b0_2: tensor<1x4xf32>, %b0_3: tensor<4x4xf32>, %b0_4: tensor<7x1x4xf32>):
// O2-NEXT:      %{{[0-9]+}} = "flow.gather"(%b0_4, %b0_0) {axis = 0 : i64}
// O2-NEXT:      %[[K:[0-9]+]] = "flow.constant"() {value = dense<5.000000e-01> : tensor<f32>}
// O2-NEXT:      %[[M:[0-9]+]] = "flow.matmul"(%b0_2, %b0_3, %{{[0-9]+}}, %[[K]], %b0_2) {epilogue = "add x o2; tanh s0; mul s1 o3; add s2 o4"}
// O2-NEXT:      "flow.yield"(%b0_1, %[[M]])
// O2:         "flow.if"
// O2-NEXT:    ^bb0(%b1_0: tensor<1x4xf32>):
// O2-NEXT:      "flow.yield"(%b1_0)
func.func @step(%t: tensor<i64>, %h0: tensor<1x4xf32>, %w: tensor<4x4xf32>, %x: tensor<7x1x4xf32>, %p: tensor<i1>) -> tensor<1x4xf32> {
  %true = "flow.constant"() {value = dense<true> : tensor<i1>} : () -> tensor<i1>
  %r = "flow.loop"(%t, %true, %h0, %w, %x) ({
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %h: tensor<1x4xf32>, %w1: tensor<4x4xf32>, %x1: tensor<7x1x4xf32>):
    %xt = "flow.gather"(%x1, %i) {axis = 0 : i64} : (tensor<7x1x4xf32>, tensor<i64>) -> tensor<1x4xf32>
    %m = "flow.matmul"(%h, %w1) : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32>
    %a = "flow.add"(%m, %xt) : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
    %th = "flow.tanh"(%a) : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %one = "flow.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %half = "flow.mul"(%one, %one) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %k = "flow.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %kk = "flow.mul"(%k, %half) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %s = "flow.mul"(%th, %kk) : (tensor<1x4xf32>, tensor<f32>) -> tensor<1x4xf32>
    %n = "flow.add"(%s, %h) : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
    "flow.yield"(%c, %n) : (tensor<i1>, tensor<1x4xf32>) -> ()
  }) {carried = 1 : i64} : (tensor<i64>, tensor<i1>, tensor<1x4xf32>, tensor<4x4xf32>, tensor<7x1x4xf32>) -> tensor<1x4xf32>
  %o = "flow.if"(%p, %r) ({
  ^bb0(%a: tensor<1x4xf32>):
    %id = "flow.reshape"(%a) {shape = array<i64: 1, 4>} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    "flow.yield"(%id) : (tensor<1x4xf32>) -> ()
  }, {
  ^bb0(%a: tensor<1x4xf32>):
    %n = "flow.neg"(%a) : (tensor<1x4xf32>) -> tensor<1x4xf32>
    "flow.yield"(%n) : (tensor<1x4xf32>) -> ()
  }) : (tensor<i1>, tensor<1x4xf32>) -> tensor<1x4xf32>
  return %o : tensor<1x4xf32>
}
