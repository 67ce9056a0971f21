// y = p ? relu(x) * 2 : -x, on a run-time condition p; the else branch yields its block argument's negation
// and a pass-through branch would copy.
module {
  func.func @main(%p: tensor<i1> {flow.name = "p"}, %x: tensor<2x3xf32> {flow.name = "x"})
                  -> (tensor<2x3xf32> {flow.name = "y"}, tensor<2x3xf32> {flow.name = "same"}) {
    %r:2 = "flow.if"(%p, %x) ({
    ^bb0(%a: tensor<2x3xf32>):
      %two = "flow.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
      %re = "flow.relu"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %m = "flow.mul"(%re, %two) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
      "flow.yield"(%m, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> ()
    }, {
    ^bb0(%a: tensor<2x3xf32>):
      %n = "flow.neg"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
      "flow.yield"(%n, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> ()
    }) : (tensor<i1>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) loc("if")
    return %r#0, %r#1 : tensor<2x3xf32>, tensor<2x3xf32>
  }
}
