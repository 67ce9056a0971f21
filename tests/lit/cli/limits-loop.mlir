// --max-rank applies inside loop and if bodies too: a body value over the limit is refused naming its op,
// a block argument over it naming the region op.
// RUN: not %flowc build %s --max-rank=2 --emit ir 2>&1 | FileCheck %s
// CHECK: flowc: error: {{.*}}limits-loop.mlir: node 'up' (reshape): result 0 has rank 3, over the limit of 2 (raise it with --max-rank)
// RUN: %flowc build %s --max-rank=3 --emit ir -o /dev/null
func.func @main(%t: tensor<i64>, %c: tensor<i1>, %x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %r = "flow.loop"(%t, %c, %x) ({
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %h: tensor<4x2xf32>):
    %u = "flow.reshape"(%h) {shape = array<i64: 2, 2, 2>} : (tensor<4x2xf32>) -> tensor<2x2x2xf32> loc("up")
    %d = "flow.reshape"(%u) {shape = array<i64: 4, 2>} : (tensor<2x2x2xf32>) -> tensor<4x2xf32> loc("down")
    "flow.yield"(%cc, %d) : (tensor<i1>, tensor<4x2xf32>) -> ()
  }) {carried = 1 : i64} : (tensor<i64>, tensor<i1>, tensor<4x2xf32>) -> tensor<4x2xf32> loc("loop")
  return %r : tensor<4x2xf32>
}
