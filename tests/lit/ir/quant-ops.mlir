// The ops of quantised types (ops.def): quantize, dequantize and scast, and the quantised forms of conv and
// matmul. The folds below are the reference evaluator's results, which integer kernels must reproduce bit
// for bit; the expected values were computed with NumPy from the semantics in ops.def (round half to even,
// requantisation multiplier f32(f32(sx*sw)/sy), the product in f32; 0.075/0.05 = 1.5 rounds to 2, 0.025/0.05 =
// 0.5 to 0). The narrowed result range <10:255> is a fused ReLU: everything below the zero point 10 clamps.
// RUN: %flowc build %s --passes=shapes --emit ir | FileCheck %s --check-prefix=TEXT
// RUN: rm -rf %t && mkdir -p %t && %flowc build %s --passes=shapes --emit ir -o %t/a.mlir
// RUN: %flowc build %t/a.mlir --passes=shapes --emit ir | diff %t/a.mlir -
// RUN: %flowc build %s --passes=fold,dce --emit ir | FileCheck %s --check-prefix=FOLD
// RUN: %flowc build %s -O2 --emit ir | FileCheck %s --check-prefix=O2

// TEXT: "flow.quantize"(%{{.*}}) {qtype = !quant.uniform<u8:f32, 5.000000e-02:10>} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2x!quant.uniform<u8:f32, 5.000000e-02:10>>
// TEXT: "flow.conv"({{.*}}qtype = !quant.uniform<u8<10:255>:f32, 1.000000e-01:10>{{.*}} -> tensor<1x3x2x2x!quant.uniform<u8<10:255>:f32, 1.000000e-01:10>>
// TEXT: "flow.scast"(%{{.*}}) {qtype = ui8}

// FOLD-DAG: dense<{{\[}}[{{\[}}[16, 8], [20, 25]], {{\[}}[2, 10], [12, 36]]]]> : tensor<1x2x2x2xui8>} : () -> tensor<1x2x2x2x!quant.uniform<u8:f32, 5.000000e-02:10>>
// FOLD-DAG: dense<{{\[}}[{{\[}}[10, 12], [10, 10]], {{\[}}[11, 11], [11, 11]], {{\[}}[38, 10], [27, 10]]]]> : tensor<1x3x2x2xui8>} : () -> tensor<1x3x2x2xui8>
// FOLD-DAG: dense<{{\[}}[{{\[}}[4.2000003e-02, 1.9950001e-01], [3.8500004e-02, 8.000000e-03]], {{\[}}[6.2000003e-02, 6.2000003e-02], [6.2000003e-02, 6.2000003e-02]], {{\[}}[2.829000e+00, -2.310000e-01], [1.671000e+00, -1.984500e+00]]]]> : tensor<1x3x2x2xf32>
// FOLD-DAG: dense<{{\[}}[-128, 42], [0, 127]]> : tensor<2x2xi8>

// lower_quant leaves no quantize/dequantize; everything folds to the same constants.
// O2-NOT: flow.quantize
// O2-NOT: flow.dequantize
// O2: dense<{{\[}}[{{\[}}[10, 12], [10, 10]], {{\[}}[11, 11], [11, 11]], {{\[}}[38, 10], [27, 10]]]]> : tensor<1x3x2x2xui8>
// O2: dense<{{\[}}[{{\[}}[3.000000e-01, -1.000000e-01], [5.000000e-01, 7.500000e-01]], {{\[}}[-4.000000e-01, 0.000000e+00], [1.000000e-01, 1.3000001e+00]]]]> : tensor<1x2x2x2xf32>
module {
  func.func @main() -> (tensor<1x3x2x2xui8> {flow.name = "y"}, tensor<1x3x2x2xf32> {flow.name = "yf"},
                        tensor<2x2xi8> {flow.name = "ym"}, tensor<1x2x2x2xf32> {flow.name = "xr"}) {
    %x = "flow.constant"() {value = dense<[[[[0.31, -0.12], [0.5, 0.77]], [[-0.4, 0.025], [0.075, 1.3]]]]> : tensor<1x2x2x2xf32>} : () -> tensor<1x2x2x2xf32>
    %q = "flow.quantize"(%x) {qtype = !quant.uniform<u8:f32, 0.05:10>} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2x!quant.uniform<u8:f32, 0.05:10>>
    %w = "flow.constant"() {value = dense<[[[[1, -2, 3], [4, 5, -6], [7, 8, 9]], [[-1, 2, 3], [4, -5, 6], [7, 8, -9]]], [[[1, 1, 1], [1, 1, 1], [1, 1, 1]], [[2, 2, 2], [2, 2, 2], [2, 2, 2]]], [[[0, 0, 0], [0, 127, 0], [0, 0, 0]], [[0, 0, 0], [0, -128, 0], [0, 0, 0]]]]> : tensor<3x2x3x3xi8>} : () -> tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.01, 0.02, 0.03}>>
    %b = "flow.constant"() {value = dense<[5, -7, 100]> : tensor<3xi32>} : () -> tensor<3xi32>
    %c = "flow.conv"(%q, %w, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, qtype = !quant.uniform<u8<10:255>:f32, 0.1:10>, strides = array<i64: 1, 1>} : (tensor<1x2x2x2x!quant.uniform<u8:f32, 0.05:10>>, tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.01, 0.02, 0.03}>>, tensor<3xi32>) -> tensor<1x3x2x2x!quant.uniform<u8<10:255>:f32, 0.1:10>>
    %y = "flow.scast"(%c) {qtype = ui8} : (tensor<1x3x2x2x!quant.uniform<u8<10:255>:f32, 0.1:10>>) -> tensor<1x3x2x2xui8>
    %cf = "flow.conv"(%q, %w, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, qtype = f32, strides = array<i64: 1, 1>} : (tensor<1x2x2x2x!quant.uniform<u8:f32, 0.05:10>>, tensor<3x2x3x3x!quant.uniform<i8:f32:0, {0.01, 0.02, 0.03}>>, tensor<3xi32>) -> tensor<1x3x2x2xf32>
    %a = "flow.constant"() {value = dense<[[0, 3, 255], [10, 20, 3]]> : tensor<2x3xui8>} : () -> tensor<2x3x!quant.uniform<u8:f32, 0.5:3>>
    %bm = "flow.constant"() {value = dense<[[1, -1], [2, 127], [-128, 3]]> : tensor<3x2xi8>} : () -> tensor<3x2x!quant.uniform<i8:f32:1, {0.25, 0.125}>>
    %bb = "flow.constant"() {value = dense<[1, -2]> : tensor<2xi32>} : () -> tensor<2xi32>
    %m = "flow.matmul"(%a, %bm, %bb) {qtype = !quant.uniform<i8:f32, 1.0:-5>} : (tensor<2x3x!quant.uniform<u8:f32, 0.5:3>>, tensor<3x2x!quant.uniform<i8:f32:1, {0.25, 0.125}>>, tensor<2xi32>) -> tensor<2x2x!quant.uniform<i8:f32, 1.0:-5>>
    %ym = "flow.scast"(%m) {qtype = i8} : (tensor<2x2x!quant.uniform<i8:f32, 1.0:-5>>) -> tensor<2x2xi8>
    %xr = "flow.dequantize"(%q) : (tensor<1x2x2x2x!quant.uniform<u8:f32, 0.05:10>>) -> tensor<1x2x2x2xf32>
    "func.return"(%y, %cf, %ym, %xr) : (tensor<1x3x2x2xui8>, tensor<1x3x2x2xf32>, tensor<2x2xi8>, tensor<1x2x2x2xf32>) -> ()
  }
}
