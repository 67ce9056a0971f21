// place_stages: each coordinate of mesh axis 0 a stage, the ops cut into contiguous ranges balanced by the cost
// model, each op annotated flow.placement = its stage's ranks; constants unplaced (every rank that reads them).
// RUN: %flowc build %s -O0 --passes=place_stages --verify-each --emit ir --split-input-file | FileCheck %s
// Fewer ops than stages: refused.
// RUN: not %flowc build %S/Inputs/place_stages_few.mlir -O0 --passes=place_stages --emit ir 2>&1 | FileCheck %s --check-prefix=FEW
// FEW: error: {{.*}}a pipeline of 4 stages needs at least as many ops; the model has 1

// Two matmuls of equal cost on 2 ranks: one each; the elementwise ops go with their neighbours.
// CHECK-LABEL: flow.mesh = array<i64: 2>
// CHECK: "flow.constant"
// CHECK-NOT: flow.placement
// CHECK: "flow.matmul"{{.*}}flow.placement = array<i64: 0>{{.*}}loc("fc1")
// CHECK: "flow.relu"{{.*}}flow.placement = array<i64: 0>
// CHECK: "flow.matmul"{{.*}}flow.placement = array<i64: 1>{{.*}}loc("fc2")
// CHECK: "flow.relu"{{.*}}flow.placement = array<i64: 1>
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main(%x: tensor<64x256xf32> {flow.name = "x"}) -> (tensor<64x256xf32> {flow.name = "y"}) {
    %w = "flow.constant"() {value = dense<0.5> : tensor<256x256xf32>} : () -> tensor<256x256xf32>
    %a = "flow.matmul"(%x, %w) : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32> loc("fc1")
    %b = "flow.relu"(%a) : (tensor<64x256xf32>) -> tensor<64x256xf32>
    %c = "flow.matmul"(%b, %w) : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32> loc("fc2")
    %d = "flow.relu"(%c) : (tensor<64x256xf32>) -> tensor<64x256xf32>
    "func.return"(%d) : (tensor<64x256xf32>) -> ()
  }
}

// -----
// A 2x2 mesh: stage s on ranks 2s, 2s + 1 (axis 0 the slowest); four matmuls, two a stage.
// CHECK-LABEL: flow.mesh = array<i64: 2, 2>
// CHECK: flow.placement = array<i64: 0, 1>{{.*}}loc("m0")
// CHECK: flow.placement = array<i64: 0, 1>{{.*}}loc("m1")
// CHECK: flow.placement = array<i64: 2, 3>{{.*}}loc("m2")
// CHECK: flow.placement = array<i64: 2, 3>{{.*}}loc("m3")
module attributes {flow.mesh = array<i64: 2, 2>} {
  func.func @main(%x: tensor<64x256xf32> {flow.name = "x"}) -> (tensor<64x256xf32> {flow.name = "y"}) {
    %w = "flow.constant"() {value = dense<0.5> : tensor<256x256xf32>} : () -> tensor<256x256xf32>
    %a = "flow.matmul"(%x, %w) : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32> loc("m0")
    %b = "flow.matmul"(%a, %w) : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32> loc("m1")
    %c = "flow.matmul"(%b, %w) : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32> loc("m2")
    %d = "flow.matmul"(%c, %w) : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32> loc("m3")
    "func.return"(%d) : (tensor<64x256xf32>) -> ()
  }
}

// -----
// A given placement stands (a dump recompiled).
// CHECK-LABEL: flow.mesh = array<i64: 3>
// CHECK: flow.placement = array<i64: 2>{{.*}}loc("only")
module attributes {flow.mesh = array<i64: 3>} {
  func.func @main(%x: tensor<4xf32> {flow.name = "x"}) -> (tensor<4xf32> {flow.name = "y"}) {
    %a = "flow.relu"(%x) {flow.placement = array<i64: 2>} : (tensor<4xf32>) -> tensor<4xf32> loc("only")
    %b = "flow.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32> loc("b")
    %c = "flow.abs"(%b) : (tensor<4xf32>) -> tensor<4xf32> loc("c")
    "func.return"(%c) : (tensor<4xf32>) -> ()
  }
}

