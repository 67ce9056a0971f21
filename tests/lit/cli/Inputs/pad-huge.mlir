// A pad whose result (2^40 + 1 floats) is over the per-tensor limit, as IR text (tests/lit/cli/adversarial.test).
module {
  func.func @main(%arg0: tensor<1xf32>) -> tensor<1099511627777xf32> {
    %0 = "flow.pad"(%arg0) {mode = "constant", pads = array<i64: 0, 1099511627776>} : (tensor<1xf32>) -> tensor<1099511627777xf32>
    "func.return"(%0) : (tensor<1099511627777xf32>) -> ()
  }
}
