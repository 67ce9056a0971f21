module {
  func.func @main(%arg0: tensor<2xf32> {flow.name = "x"}) -> (tensor<2xf32> {flow.name = "y"}, tensor<2x!quant.uniform<i8:f32, 5.000000e-01>> {flow.name = "k"}) {
    %0 = "flow.relu"(%arg0) : (tensor<2xf32>) -> tensor<2xf32> loc("relu")
    %1 = "flow.constant"() {value = dense<[1, 2]> : tensor<2xi8>} : () -> tensor<2x!quant.uniform<i8:f32, 5.000000e-01>> loc("weights")
    "func.return"(%0, %1) : (tensor<2xf32>, tensor<2x!quant.uniform<i8:f32, 5.000000e-01>>) -> ()
  }
}
