// h = h * W + x[t] for t < trip (while cond), carried h, scan output Y[t] = h, captured W and x.
module {
  func.func @main(%trip: tensor<i64> {flow.name = "trip"}, %go: tensor<i1> {flow.name = "go"},
                  %h0: tensor<1x4xf32> {flow.name = "h0"}, %w: tensor<4x4xf32> {flow.name = "w"},
                  %x: tensor<7x1x4xf32> {flow.name = "x"}) -> (tensor<1x4xf32> {flow.name = "h"},
                  tensor<7x1x4xf32> {flow.name = "y"}) {
    %r:2 = "flow.loop"(%trip, %go, %h0, %w, %x) ({
    ^bb0(%i: tensor<i64>, %c: tensor<i1>, %h: tensor<1x4xf32>, %w1: tensor<4x4xf32>, %x1: tensor<7x1x4xf32>):
      %xt = "flow.gather"(%x1, %i) {axis = 0 : i64} : (tensor<7x1x4xf32>, tensor<i64>) -> tensor<1x4xf32> loc("xt")
      %m = "flow.matmul"(%h, %w1) : (tensor<1x4xf32>, tensor<4x4xf32>) -> tensor<1x4xf32> loc("mm")
      %h2 = "flow.add"(%m, %xt) : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32> loc("add")
      "flow.yield"(%c, %h2, %h2) : (tensor<i1>, tensor<1x4xf32>, tensor<1x4xf32>) -> ()
    }) {carried = 1 : i64, scan_len = 7 : i64} : (tensor<i64>, tensor<i1>, tensor<1x4xf32>, tensor<4x4xf32>, tensor<7x1x4xf32>) -> (tensor<1x4xf32>, tensor<7x1x4xf32>) loc("loop")
    return %r#0, %r#1 : tensor<1x4xf32>, tensor<7x1x4xf32>
  }
}
