// An early exit: the body yields cond = (iter + 1 < stop), so the loop runs min(trip, stop) times when
// go is true and not at all when it is false; acc = acc + iter * step, and a scan of acc.
module {
  func.func @main(%trip: tensor<i64> {flow.name = "trip"}, %go: tensor<i1> {flow.name = "go"},
                  %stop: tensor<i64> {flow.name = "stop"}, %step: tensor<2xf32> {flow.name = "step"})
                  -> (tensor<2xf32> {flow.name = "acc"}, tensor<i64> {flow.name = "count"}, tensor<5x2xf32> {flow.name = "ys"}) {
    %zero = "flow.constant"() {value = dense<0.0> : tensor<2xf32>} : () -> tensor<2xf32>
    %n0 = "flow.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %r:3 = "flow.loop"(%trip, %go, %zero, %n0, %stop, %step) ({
    ^bb0(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<2xf32>, %n: tensor<i64>, %stop1: tensor<i64>, %step1: tensor<2xf32>):
      %one = "flow.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
      %i1 = "flow.add"(%i, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
      %more = "flow.less"(%i1, %stop1) : (tensor<i64>, tensor<i64>) -> tensor<i1>
      %fi = "flow.cast"(%i) {to = f32} : (tensor<i64>) -> tensor<f32>
      %d = "flow.mul"(%step1, %fi) : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
      %acc2 = "flow.add"(%acc, %d) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      %n2 = "flow.add"(%n, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
      "flow.yield"(%more, %acc2, %n2, %acc2) : (tensor<i1>, tensor<2xf32>, tensor<i64>, tensor<2xf32>) -> ()
    }) {carried = 2 : i64, scan_len = 5 : i64} : (tensor<i64>, tensor<i1>, tensor<2xf32>, tensor<i64>, tensor<i64>, tensor<2xf32>) -> (tensor<2xf32>, tensor<i64>, tensor<5x2xf32>) loc("loop")
    return %r#0, %r#1, %r#2 : tensor<2xf32>, tensor<i64>, tensor<5x2xf32>
  }
}
