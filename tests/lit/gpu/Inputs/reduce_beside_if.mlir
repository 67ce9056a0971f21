func.func @main(%c: tensor<i1>, %x: tensor<4x33xf32>) -> (tensor<4x33xf32>, tensor<4xf32>) {
  %0 = "flow.if"(%c, %x) ({
  ^bb0(%a: tensor<4x33xf32>):
    %n = "flow.neg"(%a) : (tensor<4x33xf32>) -> tensor<4x33xf32>
    "flow.yield"(%n) : (tensor<4x33xf32>) -> ()
  }, {
  ^bb0(%a: tensor<4x33xf32>):
    "flow.yield"(%a) : (tensor<4x33xf32>) -> ()
  }) : (tensor<i1>, tensor<4x33xf32>) -> tensor<4x33xf32> loc("branch")
  %1 = "flow.reduce_sum"(%x) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<4x33xf32>) -> tensor<4xf32> loc("rs")
  "func.return"(%0, %1) : (tensor<4x33xf32>, tensor<4xf32>) -> ()
}
