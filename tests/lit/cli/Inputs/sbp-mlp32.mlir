module {
  func.func @main(%arg0: tensor<4x32xf32> {flow.name = "x"}) -> (tensor<4x1xf32> {flow.name = "y"}) {
    %w1 = "flow.constant"() {value = dense<0.5> : tensor<32x32xf32>} : () -> tensor<32x32xf32>
    %w2 = "flow.constant"() {value = dense<0.25> : tensor<32x1xf32>} : () -> tensor<32x1xf32>
    %0 = "flow.matmul"(%arg0, %w1) : (tensor<4x32xf32>, tensor<32x32xf32>) -> tensor<4x32xf32>
    %1 = "flow.relu"(%0) : (tensor<4x32xf32>) -> tensor<4x32xf32>
    %2 = "flow.matmul"(%1, %w2) : (tensor<4x32xf32>, tensor<32x1xf32>) -> tensor<4x1xf32>
    "func.return"(%2) : (tensor<4x1xf32>) -> ()
  }
}
