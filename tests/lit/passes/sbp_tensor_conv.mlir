// sbp_tensor on convs: the first by output channels (weight and bias S(0) -> S(1)), relu keeps it, the second (no bias) by
// input channels -> P(sum), reduced once at the output.
// RUN: %flowc build %s -O0 --passes=sbp_tensor --verify-each --emit ir | FileCheck %s --check-prefix=CONV
// CONV: "flow.conv"(%arg0, %{{.*}}, %{{.*}}) {{{.*}}flow.sbp = ["S(1)"]} : (tensor<2x3x5x5xf32>, tensor<2x3x3x3xf32>, tensor<2xf32>) -> tensor<2x2x5x5xf32>
// CONV-NEXT: "flow.relu"({{.*}}) {flow.sbp = ["S(1)"]} : (tensor<2x2x5x5xf32>) -> tensor<2x2x5x5xf32>
// CONV-NEXT: %[[W:.*]] = "flow.constant"() {{.*}} : () -> tensor<2x2x2x3x3xf32>
// CONV: "flow.conv"({{.*}}) {{{.*}}flow.sbp = ["P(sum)"]} : (tensor<2x2x5x5xf32>, tensor<2x2x3x3xf32>) -> tensor<2x2x5x5xf32>
// CONV-NEXT: "flow.all_reduce"({{.*}}) {mesh_axis = -1 : i64, reduce = "sum", flow.sbp = ["B"]} : (tensor<2x2x5x5xf32>) -> tensor<2x2x5x5xf32>
module attributes {flow.mesh = array<i64: 2>} {
  func.func @main(%arg0: tensor<2x3x5x5xf32> {flow.name = "x"}) -> tensor<2x2x5x5xf32> {
    %w1 = "flow.constant"() {value = dense<0.5> : tensor<4x3x3x3xf32>} : () -> tensor<4x3x3x3xf32>
    %b1 = "flow.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
    %w2 = "flow.constant"() {value = dense<0.25> : tensor<2x4x3x3xf32>} : () -> tensor<2x4x3x3xf32>
    %0 = "flow.conv"(%arg0, %w1, %b1) {dilations = array<i64: 1, 1>, group = 1, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x3x5x5xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x5x5xf32>
    %1 = "flow.relu"(%0) : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %2 = "flow.conv"(%1, %w2) {dilations = array<i64: 1, 1>, group = 1, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x5x5xf32>, tensor<2x4x3x3xf32>) -> tensor<2x2x5x5xf32>
    "func.return"(%2) : (tensor<2x2x5x5xf32>) -> ()
  }
}
