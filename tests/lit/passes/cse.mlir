// RUN: %flowc build %s --passes=cse --emit ir --split-input-file | FileCheck %s

// add is commutative: add(a, b) and add(b, a) are one value; the muls then match too.
// CHECK-LABEL: func.func @commutative(
// CHECK-NEXT:    %0 = "flow.add"(%arg0, %arg1)
// CHECK-NEXT:    %1 = "flow.mul"(%0, %0)
// CHECK-NEXT:    "func.return"(%1, %1)
func.func @commutative(%arg0: tensor<3xf32>, %arg1: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = "flow.add"(%arg0, %arg1) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = "flow.add"(%arg1, %arg0) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %2 = "flow.mul"(%0, %1) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %3 = "flow.mul"(%1, %0) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  "func.return"(%2, %3) : (tensor<3xf32>, tensor<3xf32>) -> ()
}

// -----

// sub is not commutative: both stay; the duplicate sub(a, b) goes.
// CHECK-LABEL: func.func @not_commutative(
// CHECK-NEXT:    %0 = "flow.sub"(%arg0, %arg1)
// CHECK-NEXT:    %1 = "flow.sub"(%arg1, %arg0)
// CHECK-NEXT:    "func.return"(%0, %1, %0)
func.func @not_commutative(%arg0: tensor<3xf32>, %arg1: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %0 = "flow.sub"(%arg0, %arg1) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = "flow.sub"(%arg1, %arg0) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %2 = "flow.sub"(%arg0, %arg1) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  "func.return"(%0, %1, %2) : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> ()
}

// -----

// Constants merge when type and bytes are equal; another value or dtype stays apart.
// CHECK-LABEL: func.func @constants(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense<[1, 2]> : tensor<2xi32>}
// CHECK-NEXT:    %1 = "flow.constant"() {value = dense<[1, 3]> : tensor<2xi32>}
// CHECK-NEXT:    %2 = "flow.constant"() {value = dense<[1, 2]> : tensor<2xi64>}
// CHECK-NEXT:    "func.return"(%0, %0, %1, %2)
func.func @constants() -> (tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi64>) {
  %0 = "flow.constant"() {value = dense<[1, 2]> : tensor<2xi32>} : () -> tensor<2xi32>
  %1 = "flow.constant"() {value = dense<[1, 2]> : tensor<2xi32>} : () -> tensor<2xi32>
  %2 = "flow.constant"() {value = dense<[1, 3]> : tensor<2xi32>} : () -> tensor<2xi32>
  %3 = "flow.constant"() {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  "func.return"(%0, %1, %2, %3) : (tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi64>) -> ()
}

// -----

// Attributes are part of the key: reshapes to different shapes stay apart.
// CHECK-LABEL: func.func @attributes(
// CHECK-NEXT:    %0 = "flow.reshape"(%arg0) {shape = array<i64: 3, 2>}
// CHECK-NEXT:    %1 = "flow.reshape"(%arg0) {shape = array<i64: 6>}
// CHECK-NEXT:    "func.return"(%0, %1, %0)
func.func @attributes(%arg0: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<6xf32>, tensor<3x2xf32>) {
  %0 = "flow.reshape"(%arg0) {shape = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = "flow.reshape"(%arg0) {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
  %2 = "flow.reshape"(%arg0) {shape = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  "func.return"(%0, %1, %2) : (tensor<3x2xf32>, tensor<6xf32>, tensor<3x2xf32>) -> ()
}

// -----

// random_uniform is not pure: two draws are two values.
// CHECK-LABEL: func.func @impure(
// CHECK-NEXT:    %0 = "flow.random_uniform"()
// CHECK-NEXT:    %1 = "flow.random_uniform"()
// CHECK-NEXT:    "func.return"(%0, %1)
func.func @impure() -> (tensor<2xf32>, tensor<2xf32>) {
  %0 = "flow.random_uniform"() {dtype = f32, high = 1.0 : f32, low = 0.0 : f32, shape = array<i64: 2>} : () -> tensor<2xf32>
  %1 = "flow.random_uniform"() {dtype = f32, high = 1.0 : f32, low = 0.0 : f32, shape = array<i64: 2>} : () -> tensor<2xf32>
  "func.return"(%0, %1) : (tensor<2xf32>, tensor<2xf32>) -> ()
}

// -----

// Elided constants have unknown values: never merged.
// CHECK-LABEL: func.func @elided(
// CHECK-NEXT:    %0 = "flow.constant"() {value = dense_resource<__elided__> : tensor<20xf32>}
// CHECK-NEXT:    %1 = "flow.constant"() {value = dense_resource<__elided__> : tensor<20xf32>}
// CHECK-NEXT:    "func.return"(%0, %1)
func.func @elided() -> (tensor<20xf32>, tensor<20xf32>) {
  %0 = "flow.constant"() {value = dense_resource<__elided__> : tensor<20xf32>} : () -> tensor<20xf32>
  %1 = "flow.constant"() {value = dense_resource<__elided__> : tensor<20xf32>} : () -> tensor<20xf32>
  "func.return"(%0, %1) : (tensor<20xf32>, tensor<20xf32>) -> ()
}
