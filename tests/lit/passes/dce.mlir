// RUN: %flowc build %s --passes=dce --emit ir --split-input-file | FileCheck %s

// A dead chain, a dead op with a constant operand: all gone in one run; the live op stays.
// CHECK-LABEL: func.func @dead_chain(
// CHECK-NEXT:    %0 = "flow.sqrt"(%arg0) : (tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    "func.return"(%0) : (tensor<3xf32>) -> ()
func.func @dead_chain(%arg0: tensor<3xf32>) -> (tensor<3xf32>) {
  %0 = "flow.abs"(%arg0) : (tensor<3xf32>) -> tensor<3xf32>
  %1 = "flow.exp"(%0) : (tensor<3xf32>) -> tensor<3xf32>
  %2 = "flow.constant"() {value = dense<2.0> : tensor<3xf32>} : () -> tensor<3xf32>
  %3 = "flow.mul"(%2, %arg0) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %4 = "flow.sqrt"(%arg0) : (tensor<3xf32>) -> tensor<3xf32>
  "func.return"(%4) : (tensor<3xf32>) -> ()
}

// -----

// random_uniform has a side effect (it draws numbers): kept though unused. Unused inputs stay.
// CHECK-LABEL: func.func @impure_kept(%arg0: tensor<3xf32>, %arg1: tensor<3xf32>)
// CHECK-NEXT:    %0 = "flow.random_uniform"()
// CHECK-NEXT:    "func.return"(%arg0)
func.func @impure_kept(%arg0: tensor<3xf32>, %arg1: tensor<3xf32>) -> (tensor<3xf32>) {
  %0 = "flow.random_uniform"() {dtype = f32, high = 1.0 : f32, low = 0.0 : f32, shape = array<i64: 2>} : () -> tensor<2xf32>
  %1 = "flow.neg"(%arg1) : (tensor<3xf32>) -> tensor<3xf32>
  "func.return"(%arg0) : (tensor<3xf32>) -> ()
}

// -----

// An op with one of two results used is live.
// CHECK-LABEL: func.func @partly_used(
// CHECK-NEXT:    %0:2 = "flow.topk"(%arg0)
// CHECK-NEXT:    "func.return"(%0#1)
func.func @partly_used(%arg0: tensor<5xf32>) -> (tensor<2xi64>) {
  %0:2 = "flow.topk"(%arg0) {axis = 0 : i64, k = 2 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<5xf32>) -> (tensor<2xf32>, tensor<2xi64>)
  "func.return"(%0#1) : (tensor<2xi64>) -> ()
}
