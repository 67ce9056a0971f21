// split_stages: one rank's program of a pipeline placement. Value a (stage 0) is read on stages 1 and 2, b
// (stage 1) on 2, the output c (stage 2) by every rank: transfers in graph order, tags 0 (a to 1), 1 (a to
// 2), 2 (b to 2), 3 (c to 0), 4 (c to 1); each rank keeps its ops, sends after them, receives at their place,
// and only the constants its own ops read.
// RUN: %flowc build %s -O0 --passes=split_stages --verify-each --emit ir --split-input-file | FileCheck %s
// RUN: not %flowc build %S/Inputs/split_stages_norank.mlir -O0 --passes=split_stages --emit ir 2>&1 | FileCheck %s --check-prefix=NORANK
// NORANK: error: {{.*}}pass split_stages needs one program per rank (flow.rank
// RUN: not %flowc build %S/Inputs/split_stages_far.mlir -O0 --passes=split_stages --emit ir 2>&1 | FileCheck %s --check-prefix=FAR
// FAR: error: {{.*}}node 'a' (relu): placed on rank 5 of a 2-rank mesh

// CHECK-LABEL: flow.rank = 0 : i64
// CHECK-NOT: "flow.constant"
// CHECK: %[[A:.*]] = "flow.relu"(%arg0)
// CHECK-NEXT: "flow.send"(%[[A]]) {peer = 1 : i64, tag = 0 : i64}
// CHECK-NEXT: "flow.send"(%[[A]]) {peer = 2 : i64, tag = 1 : i64}
// CHECK-NEXT: %[[C:.*]] = "flow.recv"() {dtype = f32, peer = 2 : i64, shape = array<i64: 4>, tag = 3 : i64} : () -> tensor<4xf32> loc("c")
// CHECK-NEXT: "func.return"(%[[C]])
module attributes {flow.mesh = array<i64: 3>, flow.rank = 0 : i64} {
  func.func @main(%x: tensor<4xf32> {flow.name = "x"}) -> (tensor<4xf32> {flow.name = "y"}) {
    %w = "flow.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32> loc("w")
    %a = "flow.relu"(%x) {flow.placement = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32> loc("a")
    %b = "flow.mul"(%a, %w) {flow.placement = array<i64: 1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("b")
    %c = "flow.add"(%b, %a) {flow.placement = array<i64: 2>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("c")
    "func.return"(%c) : (tensor<4xf32>) -> ()
  }
}

// -----
// CHECK-LABEL: flow.rank = 1 : i64
// CHECK: %[[W:.*]] = "flow.constant"() {{.*}} loc("w")
// CHECK-NEXT: %[[A:.*]] = "flow.recv"() {dtype = f32, peer = 0 : i64, shape = array<i64: 4>, tag = 0 : i64}
// CHECK-NEXT: %[[B:.*]] = "flow.mul"(%[[A]], %[[W]])
// CHECK-NEXT: "flow.send"(%[[B]]) {peer = 2 : i64, tag = 2 : i64}
// CHECK-NEXT: %[[C:.*]] = "flow.recv"() {dtype = f32, peer = 2 : i64, shape = array<i64: 4>, tag = 4 : i64}
// CHECK-NEXT: "func.return"(%[[C]])
module attributes {flow.mesh = array<i64: 3>, flow.rank = 1 : i64} {
  func.func @main(%x: tensor<4xf32> {flow.name = "x"}) -> (tensor<4xf32> {flow.name = "y"}) {
    %w = "flow.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32> loc("w")
    %a = "flow.relu"(%x) {flow.placement = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32> loc("a")
    %b = "flow.mul"(%a, %w) {flow.placement = array<i64: 1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("b")
    %c = "flow.add"(%b, %a) {flow.placement = array<i64: 2>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("c")
    "func.return"(%c) : (tensor<4xf32>) -> ()
  }
}

// -----
// CHECK-LABEL: flow.rank = 2 : i64
// CHECK-NOT: "flow.constant"
// CHECK: %[[A:.*]] = "flow.recv"() {dtype = f32, peer = 0 : i64, shape = array<i64: 4>, tag = 1 : i64}
// CHECK-NEXT: %[[B:.*]] = "flow.recv"() {dtype = f32, peer = 1 : i64, shape = array<i64: 4>, tag = 2 : i64}
// CHECK-NEXT: %[[C:.*]] = "flow.add"(%[[B]], %[[A]])
// CHECK-NEXT: "flow.send"(%[[C]]) {peer = 0 : i64, tag = 3 : i64}
// CHECK-NEXT: "flow.send"(%[[C]]) {peer = 1 : i64, tag = 4 : i64}
// CHECK-NEXT: "func.return"(%[[C]])
module attributes {flow.mesh = array<i64: 3>, flow.rank = 2 : i64} {
  func.func @main(%x: tensor<4xf32> {flow.name = "x"}) -> (tensor<4xf32> {flow.name = "y"}) {
    %w = "flow.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32> loc("w")
    %a = "flow.relu"(%x) {flow.placement = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32> loc("a")
    %b = "flow.mul"(%a, %w) {flow.placement = array<i64: 1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("b")
    %c = "flow.add"(%b, %a) {flow.placement = array<i64: 2>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("c")
    "func.return"(%c) : (tensor<4xf32>) -> ()
  }
}

// -----
// A quantised value crosses as its storage bytes: scast before the send, scast back after the recv.
// CHECK-LABEL: flow.mesh = array<i64: 2>, flow.rank = 1 : i64
// CHECK: %[[R:.*]] = "flow.recv"() {dtype = ui8, peer = 0 : i64, shape = array<i64: 4>, tag = 0 : i64} : () -> tensor<4xui8>
// CHECK-NEXT: %[[Q:.*]] = "flow.scast"(%[[R]]) {qtype = !quant.uniform<u8:f32, 5.000000e-01:128>}
// CHECK-NEXT: "flow.dequantize"(%[[Q]])
module attributes {flow.mesh = array<i64: 2>, flow.rank = 1 : i64} {
  func.func @main(%x: tensor<4xf32> {flow.name = "x"}) -> (tensor<4xf32> {flow.name = "y"}) {
    %q = "flow.quantize"(%x) {qtype = !quant.uniform<u8:f32, 0.5:128>, flow.placement = array<i64: 0>} : (tensor<4xf32>) -> tensor<4x!quant.uniform<u8:f32, 0.5:128>> loc("q")
    %d = "flow.dequantize"(%q) {flow.placement = array<i64: 1>} : (tensor<4x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<4xf32> loc("d")
    "func.return"(%d) : (tensor<4xf32>) -> ()
  }
}

// -----
// ... and on the sending rank.
// CHECK-LABEL: flow.mesh = array<i64: 2>, flow.rank = 0 : i64
// CHECK: %[[Q:.*]] = "flow.quantize"
// CHECK-NEXT: %[[S:.*]] = "flow.scast"(%[[Q]]) {qtype = ui8}
// CHECK-NEXT: "flow.send"(%[[S]]) {peer = 1 : i64, tag = 0 : i64} : (tensor<4xui8>) -> ()
module attributes {flow.mesh = array<i64: 2>, flow.rank = 0 : i64} {
  func.func @main(%x: tensor<4xf32> {flow.name = "x"}) -> (tensor<4xf32> {flow.name = "y"}) {
    %q = "flow.quantize"(%x) {qtype = !quant.uniform<u8:f32, 0.5:128>, flow.placement = array<i64: 0>} : (tensor<4xf32>) -> tensor<4x!quant.uniform<u8:f32, 0.5:128>> loc("q")
    %d = "flow.dequantize"(%q) {flow.placement = array<i64: 1>} : (tensor<4x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<4xf32> loc("d")
    "func.return"(%d) : (tensor<4xf32>) -> ()
  }
}
