// Nested regions: for i < trip: s = sum of step over an inner loop of i + 1 iterations (its own trip count
// computed in the body), then acc = (i is even) ? acc + s : acc - s through a flow.if; scan of acc.
module {
  func.func @main(%trip: tensor<i64> {flow.name = "trip"}, %step: tensor<2xf32> {flow.name = "step"})
                  -> (tensor<2xf32> {flow.name = "acc"}, tensor<4x2xf32> {flow.name = "ys"}) {
    %true = "flow.constant"() {value = dense<true> : tensor<i1>} : () -> tensor<i1>
    %zero = "flow.constant"() {value = dense<0.0> : tensor<2xf32>} : () -> tensor<2xf32>
    %r:2 = "flow.loop"(%trip, %true, %zero, %step) ({
    ^bb0(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<2xf32>, %st: tensor<2xf32>):
      %one = "flow.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
      %two = "flow.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
      %n = "flow.add"(%i, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
      %z = "flow.constant"() {value = dense<0.0> : tensor<2xf32>} : () -> tensor<2xf32>
      %s = "flow.loop"(%n, %c, %z, %st) ({
      ^bb0(%j: tensor<i64>, %cj: tensor<i1>, %sj: tensor<2xf32>, %stj: tensor<2xf32>):
        %s2 = "flow.add"(%sj, %stj) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("inner_add")
        "flow.yield"(%cj, %s2) : (tensor<i1>, tensor<2xf32>) -> ()
      }) {carried = 1 : i64} : (tensor<i64>, tensor<i1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("inner")
      %m = "flow.mod"(%i, %two) {fmod = 0 : i64} : (tensor<i64>, tensor<i64>) -> tensor<i64>
      %zi = "flow.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
      %even = "flow.equal"(%m, %zi) : (tensor<i64>, tensor<i64>) -> tensor<i1>
      %a2 = "flow.if"(%even, %acc, %s) ({
      ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
        %p = "flow.add"(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
        "flow.yield"(%p) : (tensor<2xf32>) -> ()
      }, {
      ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
        %q = "flow.sub"(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
        "flow.yield"(%q) : (tensor<2xf32>) -> ()
      }) : (tensor<i1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc("pick")
      "flow.yield"(%c, %a2, %a2) : (tensor<i1>, tensor<2xf32>, tensor<2xf32>) -> ()
    }) {carried = 1 : i64, scan_len = 4 : i64} : (tensor<i64>, tensor<i1>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<4x2xf32>) loc("outer")
    return %r#0, %r#1 : tensor<2xf32>, tensor<4x2xf32>
  }
}
