// A matmul by constant weights behind one graph input, for the --calibrate folder tests (calibrate.test).
module {
  func.func @main(%arg0: tensor<2x3xf32> {flow.name = "x"}) -> (tensor<2x4xf32> {flow.name = "y"}) {
    %0 = "flow.constant"() {value = dense<[[1.0, -2.0, 0.5, 0.25], [0.0, 1.5, -1.0, 2.0], [3.0, -0.5, 1.0, -1.25]]> : tensor<3x4xf32>} : () -> tensor<3x4xf32> loc("w")
    %1 = "flow.matmul"(%arg0, %0) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32> loc("mm")
    "func.return"(%1) : (tensor<2x4xf32>) -> ()
  }
}
