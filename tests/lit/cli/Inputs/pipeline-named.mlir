module {
  func.func @main(%arg0: tensor<4x32xf32> {flow.name = "x"}) -> (tensor<4x32xf32> {flow.name = "y"}) {
    %w = "flow.constant"() {value = dense<0.5> : tensor<32x32xf32>} : () -> tensor<32x32xf32>
    %0 = "flow.matmul"(%arg0, %w) : (tensor<4x32xf32>, tensor<32x32xf32>) -> tensor<4x32xf32> loc("m1")
    %1 = "flow.relu"(%0) : (tensor<4x32xf32>) -> tensor<4x32xf32> loc("r1")
    %2 = "flow.matmul"(%1, %w) : (tensor<4x32xf32>, tensor<32x32xf32>) -> tensor<4x32xf32> loc("m2")
    %3 = "flow.relu"(%2) : (tensor<4x32xf32>) -> tensor<4x32xf32> loc("r2")
    "func.return"(%3) : (tensor<4x32xf32>) -> ()
  }
}
