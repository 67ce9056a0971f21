// Malformed region ops are refused with the line and column of the problem and what is wrong.
// RUN: not %flowc build %s -O0 --emit ir --split-input-file 2>&1 | FileCheck %s

// A body reading an outer value instead of a block argument (regions are isolated from above).
func.func @main(%t: tensor<i64>, %c: tensor<i1>, %h0: tensor<2xf32>, %w: tensor<2xf32>) -> tensor<2xf32> {
  %r = "flow.loop"(%t, %c, %h0) ({
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %h: tensor<2xf32>):
// CHECK: error: {{.*}}loop-invalid.mlir:[[@LINE+1]]:26: %w is defined outside this region; regions are isolated from above, so pass it as an operand of the region op
    %h2 = "flow.add"(%h, %w) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "flow.yield"(%cc, %h2) : (tensor<i1>, tensor<2xf32>) -> ()
  }) {carried = 1 : i64} : (tensor<i64>, tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----
// The yielded carried value has another type than the carried operand.
func.func @main(%t: tensor<i64>, %c: tensor<i1>, %h0: tensor<2xf32>) -> tensor<2xf32> {
// CHECK: error: {{.*}}loop-invalid.mlir:[[@LINE+1]]:8: flow.loop: body yields tensor<3xf32> as value 1, expected tensor<2xf32>
  %r = "flow.loop"(%t, %c, %h0) ({
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %h: tensor<2xf32>):
    %z = "flow.constant"() {value = dense<0.0> : tensor<3xf32>} : () -> tensor<3xf32>
    "flow.yield"(%cc, %z) : (tensor<i1>, tensor<3xf32>) -> ()
  }) {carried = 1 : i64} : (tensor<i64>, tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----
// A scan output without scan_len.
func.func @main(%t: tensor<i64>, %c: tensor<i1>, %h0: tensor<2xf32>) -> tensor<4x2xf32> {
// CHECK: error: {{.*}}loop-invalid.mlir:[[@LINE+1]]:8: flow.loop: missing attribute 'scan_len'
  %r = "flow.loop"(%t, %c, %h0) ({
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %h: tensor<2xf32>):
    "flow.yield"(%cc, %h) : (tensor<i1>, tensor<2xf32>) -> ()
  }) {carried = 0 : i64} : (tensor<i64>, tensor<i1>, tensor<2xf32>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----
// Block arguments that do not match the operands.
func.func @main(%t: tensor<i64>, %c: tensor<i1>, %h0: tensor<2xf32>) -> tensor<2xf32> {
// CHECK: error: {{.*}}loop-invalid.mlir:[[@LINE+1]]:3: flow.loop: body argument 2 has type tensor<2xi32>, expected tensor<2xf32>
  "flow.loop"(%t, %c, %h0) ({
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %h: tensor<2xi32>):
    "flow.yield"(%cc) : (tensor<i1>) -> ()
  }) {carried = 0 : i64} : (tensor<i64>, tensor<i1>, tensor<2xf32>) -> ()
  return %h0 : tensor<2xf32>
}

// -----
// A trip count that is not a 0-d i64.
func.func @main(%t: tensor<i32>, %c: tensor<i1>) {
// CHECK: error: {{.*}}loop-invalid.mlir:[[@LINE+1]]:3: flow.loop: trip count has type tensor<i32>, expected tensor<i64>
  "flow.loop"(%t, %c) ({
  ^bb0(%i: tensor<i64>, %cc: tensor<i1>):
    "flow.yield"(%cc) : (tensor<i1>) -> ()
  }) {carried = 0 : i64} : (tensor<i32>, tensor<i1>) -> ()
  return
}

// -----
// Branches yielding different types.
func.func @main(%c: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
// CHECK: error: {{.*}}loop-invalid.mlir:[[@LINE+1]]:8: flow.if: else region yields tensor<2xi1> as value 0, expected tensor<2xf32>
  %r = "flow.if"(%c, %x) ({
  ^bb0(%a: tensor<2xf32>):
    "flow.yield"(%a) : (tensor<2xf32>) -> ()
  }, {
  ^bb0(%a: tensor<2xf32>):
    %n = "flow.isnan"(%a) : (tensor<2xf32>) -> tensor<2xi1>
    "flow.yield"(%n) : (tensor<2xi1>) -> ()
  }) : (tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----
// A region without its terminator.
func.func @main(%c: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %r = "flow.if"(%c, %x) ({
  ^bb0(%a: tensor<2xf32>):
    %n = "flow.neg"(%a) : (tensor<2xf32>) -> tensor<2xf32>
// CHECK: error: {{.*}}loop-invalid.mlir:[[@LINE+1]]:3: the region does not end with flow.yield
  }, {
  ^bb0(%a: tensor<2xf32>):
    "flow.yield"(%a) : (tensor<2xf32>) -> ()
  }) : (tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----
// flow.yield in the function, func.return in a region, regions on an op without any.
func.func @main(%x: tensor<2xf32>) {
// CHECK: error: {{.*}}loop-invalid.mlir:[[@LINE+1]]:3: flow.yield outside a region
  "flow.yield"(%x) : (tensor<2xf32>) -> ()
}

// -----
func.func @main(%c: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %r = "flow.if"(%c, %x) ({
  ^bb0(%a: tensor<2xf32>):
// CHECK: error: {{.*}}loop-invalid.mlir:[[@LINE+1]]:5: func.return inside a region (regions end with flow.yield)
    return %a : tensor<2xf32>
  }, {
  ^bb0(%a: tensor<2xf32>):
    "flow.yield"(%a) : (tensor<2xf32>) -> ()
  }) : (tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
// CHECK: error: {{.*}}loop-invalid.mlir:[[@LINE+1]]:23: flow.neg takes no regions
  %r = "flow.neg"(%x) ({
    "flow.yield"() : () -> ()
  }) : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}
