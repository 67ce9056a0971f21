func.func @main(%arg0: tensor<8x5xf32> {flow.name = "x"}) -> (tensor<8x2xf32>, tensor<8x2xi64>) {
  %0 = "flow.relu"(%arg0) : (tensor<8x5xf32>) -> tensor<8x5xf32>
  %1:2 = "flow.topk"(%0) {axis = 1, k = 2, largest = 1, sorted = 1} : (tensor<8x5xf32>) -> (tensor<8x2xf32>, tensor<8x2xi64>) loc("top")
  "func.return"(%1#0, %1#1) : (tensor<8x2xf32>, tensor<8x2xi64>) -> ()
}
