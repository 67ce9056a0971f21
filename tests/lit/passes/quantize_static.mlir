// quantize_static (passes/quantize_static.c): quantize -> dequantize on the activation of each conv and matmul
// by constant weights that has a calibrated range, and its weights as constant i8 per output channel. With
// VNNI (icelake-server) weights use [-127, 127]; without (x86-64-v3: vpmaddubsw saturates) [-64, 64] by
// default (--quantize-reduce-range activations instead: tests/lit/cli/calibrate.test). Expected values from
// NumPy: range [-1, 3] -> scale f32(4/255) = 0.015686275, zero point rne(1/scale) = 64; weight scales per
// column f32(max|w|/127) = 3/127, 2/127, 1/127, 2/127 and q = rne(w/s): [[42, -127, 64, 16], [0, 95, -127,
// 127], [127, -32, 127, -79]] (0.5/f32(1/127) = 63.500002 rounds to 64); with 64: scales 3/64, 2/64, 1/64,
// 2/64 and q [[21, -64, 32, 8], [0, 48, -64, 64], [64, -16, 64, -40]]. Scales are f32 values, printed as the
// doubles they are.
// RUN: %flowc build %s --split-input-file --passes=quantize_static --cpu icelake-server --emit ir | FileCheck %s --check-prefixes=CHECK,VNNI
// RUN: %flowc build %s --split-input-file --passes=quantize_static --cpu x86-64-v3 --emit ir | FileCheck %s --check-prefixes=CHECK,AVX2
// The IR it writes verifies and lowers: -O0's lower_quant after it runs (flowc run compares nothing here).
// RUN: %flowc build %s --split-input-file --passes=quantize_static,lower_quant --verify-each --emit ir > /dev/null
// With fold_qdq after it, the ShuffleNet unit's data moves run on the bytes of the one type (FOLD below).
// RUN: %flowc build %s --split-input-file --passes=quantize_static,fold_qdq --cpu x86-64-v3 --emit ir | FileCheck %s --check-prefix=FOLD

// CHECK-LABEL: func.func @main
// CHECK: %[[Q:.*]] = "flow.quantize"(%arg0) {qtype = !quant.uniform<u8:f32, 1.568627543747425e-02:64>}
// CHECK: %[[X:.*]] = "flow.dequantize"(%[[Q]])
// VNNI: %[[W:.*]] = "flow.constant"() {value = dense<{{\[}}[42, -127, 64, 16], [0, 95, -127, 127], [127, -32, 127, -79]]> : tensor<3x4xi8>} : () -> tensor<3x4x!quant.uniform<i8<-127:127>:f32:1, {2.3622047156095505e-02,1.5748031437397003e-02,7.874015718698502e-03,1.5748031437397003e-02}>>
// AVX2: %[[W:.*]] = "flow.constant"() {value = dense<{{\[}}[21, -64, 32, 8], [0, 48, -64, 64], [64, -16, 64, -40]]> : tensor<3x4xi8>} : () -> tensor<3x4x!quant.uniform<i8<-64:64>:f32:1, {4.687500e-02,3.125000e-02,1.562500e-02,3.125000e-02}>>
// CHECK: %[[WD:.*]] = "flow.dequantize"(%[[W]])
// CHECK: "flow.matmul"(%[[X]], %[[WD]])
module {
  func.func @main(%arg0: tensor<2x3xf32> {flow.name = "x", flow.calib_range = array<f64: -1.0, 3.0>}) -> (tensor<2x4xf32> {flow.name = "y"}) {
    %0 = "flow.constant"() {value = dense<[[1.0, -2.0, 0.5, 0.25], [0.0, 1.5, -1.0, 2.0], [3.0, -0.5, 1.0, -1.25]]> : tensor<3x4xf32>} : () -> tensor<3x4xf32> loc("w")
    %1 = "flow.matmul"(%arg0, %0) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32> loc("mm")
    "func.return"(%1) : (tensor<2x4xf32>) -> ()
  }
}

// -----
// conv -> relu -> max_pool -> reshape -> matmul: relu's result, max_pool's and reshape's are one class (values
// joined by data moves), which only data moves and the matmuls read, so it gets one type from the matmuls'
// range (the reshape's [0, 2]: scale f32(2/255) = 7.8431377e-03, zero point 0, not printed): the pair goes on
// the class's source (relu's result, a dequantize before its one use) so that fold_qdq can run max_pool and
// reshape on u8 and requantise the conv, and on the matmuls' input (folded away once reshape runs on u8). The
// conv's own input (the graph input, [0, 1]) gets its pair, its weights one scale per output channel (dim 0:
// 1/127 and 2/127, or 1/64 and 2/64), and its f32 bias stays for fold_qdq. One activation read by two matmuls
// is quantised once.
// CHECK-LABEL: func.func @main
// CHECK: %[[QX:.*]] = "flow.quantize"(%arg0) {qtype = !quant.uniform<u8:f32, 3.921568859368563e-03>}
// CHECK: %[[DX:.*]] = "flow.dequantize"(%[[QX]])
// VNNI: %[[CW:.*]] = "flow.constant"() {value = dense<{{\[\[\[\[}}127, -64]]], {{\[\[\[}}32, 127]]]]> : tensor<2x1x1x2xi8>} : () -> tensor<2x1x1x2x!quant.uniform<i8<-127:127>:f32:0, {7.874015718698502e-03,1.5748031437397003e-02}>>
// AVX2: %[[CW:.*]] = "flow.constant"() {value = dense<{{\[\[\[\[}}64, -32]]], {{\[\[\[}}16, 64]]]]> : tensor<2x1x1x2xi8>} : () -> tensor<2x1x1x2x!quant.uniform<i8<-64:64>:f32:0, {1.562500e-02,3.125000e-02}>>
// CHECK: %[[CWD:.*]] = "flow.dequantize"(%[[CW]])
// CHECK: %[[C:.*]] = "flow.conv"(%[[DX]], %[[CWD]], %{{.*}})
// CHECK: %[[R:.*]] = "flow.relu"(%[[C]])
// CHECK: %[[Q1:.*]] = "flow.quantize"(%[[R]]) {qtype = !quant.uniform<u8:f32, 7.843137718737125e-03>}
// CHECK: %[[D1:.*]] = "flow.dequantize"(%[[Q1]])
// CHECK: %[[P:.*]] = "flow.max_pool"(%[[D1]])
// CHECK: %[[S:.*]] = "flow.reshape"(%[[P]])
// CHECK: %[[Q3:.*]] = "flow.quantize"(%[[S]]) {qtype = !quant.uniform<u8:f32, 7.843137718737125e-03>}
// CHECK: %[[D3:.*]] = "flow.dequantize"(%[[Q3]])
// CHECK: "flow.matmul"(%[[D3]], %{{.*}})
// CHECK-NOT: flow.quantize
// CHECK: "flow.matmul"(%[[D3]], %{{.*}})
module {
  func.func @main(%arg0: tensor<1x1x4x4xf32> {flow.name = "x", flow.calib_range = array<f64: 0.0, 1.0>}) -> (tensor<1x3xf32> {flow.name = "y"}, tensor<1x3xf32> {flow.name = "z"}) {
    %w = "flow.constant"() {value = dense<[[[[1.0, -0.5]]], [[[0.5, 2.0]]]]> : tensor<2x1x1x2xf32>} : () -> tensor<2x1x1x2xf32> loc("cw")
    %b = "flow.constant"() {value = dense<[0.1, -0.2]> : tensor<2xf32>} : () -> tensor<2xf32> loc("cb")
    %c = "flow.conv"(%arg0, %w, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 1>, strides = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<2x1x1x2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32> loc("conv")
    %r = "flow.relu"(%c) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("relu")
    %p = "flow.max_pool"(%r) {ceil_mode = 0 : i64, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, storage_order = 0 : i64, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> loc("pool")
    %s = "flow.reshape"(%p) {shape = array<i64: 1, 8>, flow.calib_range = array<f64: 0.0, 2.0>} : (tensor<1x2x2x2xf32>) -> tensor<1x8xf32> loc("flatten")
    %m = "flow.constant"() {value = dense<1.0> : tensor<8x3xf32>} : () -> tensor<8x3xf32> loc("fw")
    %y = "flow.matmul"(%s, %m) : (tensor<1x8xf32>, tensor<8x3xf32>) -> tensor<1x3xf32> loc("fc")
    %m2 = "flow.constant"() {value = dense<0.5> : tensor<8x3xf32>} : () -> tensor<8x3xf32> loc("fw2")
    %z = "flow.matmul"(%s, %m2) : (tensor<1x8xf32>, tensor<8x3xf32>) -> tensor<1x3xf32> loc("fc2")
    "func.return"(%y, %z) : (tensor<1x3xf32>, tensor<1x3xf32>) -> ()
  }
}

// -----
// Left alone: an activation without a calibrated range, and a node in no range at all (a matmul by a run-time B).
// CHECK-LABEL: func.func @main
// CHECK-NOT: flow.quantize
// CHECK-NOT: flow.dequantize
module {
  func.func @main(%arg0: tensor<2x3xf32> {flow.name = "x"}, %arg1: tensor<3x4xf32> {flow.name = "b", flow.calib_range = array<f64: 0.0, 1.0>}) -> (tensor<2x4xf32> {flow.name = "y"}, tensor<2x4xf32> {flow.name = "z"}) {
    %0 = "flow.constant"() {value = dense<1.0> : tensor<3x4xf32>} : () -> tensor<3x4xf32> loc("w")
    %1 = "flow.matmul"(%arg0, %0) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32> loc("mm")
    %2 = "flow.matmul"(%arg0, %arg1) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32> loc("mm2")
    "func.return"(%1, %2) : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
  }
}

// -----
// A ShuffleNet unit: the input is split in two by slices, one half goes through a conv and ReLU, the halves are
// concatenated and shuffled (reshape, transpose, reshape), and a second conv reads the result. The input, both
// halves, the ReLU's result, the concat and the shuffle are one class, read by nothing but data moves and the
// two convs, so it gets ONE type, from the union of the convs' ranges ([0, 1] and [0, 3]: scale f32(3/255),
// zero point 0): its two sources, the graph input and the ReLU's result, are quantised to it (a dequantize
// before each use) and each conv's input gets a pair of the same type, so that fold_qdq moves bytes all the way.
// CHECK-LABEL: func.func @main
// CHECK: %[[QI:.*]] = "flow.quantize"(%arg0) {qtype = !quant.uniform<u8:f32, 1.17647061124444e-02>}
// CHECK-DAG: %[[DA:.*]] = "flow.dequantize"(%[[QI]])
// CHECK-DAG: %[[DB:.*]] = "flow.dequantize"(%[[QI]])
// CHECK-DAG: "flow.slice"(%[[DA]])
// CHECK-DAG: "flow.slice"(%[[DB]])
// CHECK: "flow.quantize"(%{{.*}}) {qtype = !quant.uniform<u8:f32, 1.17647061124444e-02>}
// CHECK: "flow.conv"
// CHECK: %[[R:.*]] = "flow.relu"
// CHECK: %[[QR:.*]] = "flow.quantize"(%[[R]]) {qtype = !quant.uniform<u8:f32, 1.17647061124444e-02>}
// CHECK: %[[DR:.*]] = "flow.dequantize"(%[[QR]])
// CHECK: "flow.concat"(%{{.*}}, %[[DR]])
// CHECK: "flow.quantize"(%{{.*}}) {qtype = !quant.uniform<u8:f32, 1.17647061124444e-02>}
// CHECK: "flow.conv"
// CHECK-NOT: flow.quantize
// FOLD: %[[Q:.*]] = "flow.quantize"(%arg0) {qtype = ![[T:quant.uniform<u8:f32, 1.17647061124444e-02>]]}
// FOLD-DAG: %[[A:.*]] = "flow.slice"(%[[Q]]) {{.*}} -> tensor<1x2x2x2x![[T]]>
// FOLD-DAG: %[[B:.*]] = "flow.slice"(%[[Q]]) {{.*}} -> tensor<1x2x2x2x![[T]]>
// FOLD: %[[C:.*]] = "flow.conv"(%[[B]], {{.*}} qtype = ![[T]],
// FOLD: %[[CAT:.*]] = "flow.concat"(%[[A]], %[[C]]) {{.*}} -> tensor<1x4x2x2x![[T]]>
// FOLD: "flow.reshape"(%[[CAT]]) {{.*}} -> tensor<1x2x2x2x2x![[T]]>
// FOLD: "flow.transpose"({{.*}} -> tensor<1x2x2x2x2x![[T]]>
// FOLD: %[[Y:.*]] = "flow.reshape"({{.*}} -> tensor<1x4x2x2x![[T]]>
// FOLD-NOT: flow.quantize
// FOLD: "flow.conv"(%[[Y]],
module {
  func.func @main(%arg0: tensor<1x4x2x2xf32> {flow.name = "x", flow.calib_range = array<f64: 0.0, 1.0>}) -> (tensor<1x3x2x2xf32> {flow.name = "y"}) {
    %a = "flow.slice"(%arg0) {ends = array<i64: 1, 2, 2, 2>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x2x2xf32> loc("split_a")
    %b = "flow.slice"(%arg0) {ends = array<i64: 1, 4, 2, 2>, starts = array<i64: 0, 2, 0, 0>, steps = array<i64: 1, 1, 1, 1>, flow.calib_range = array<f64: 0.0, 1.0>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x2x2xf32> loc("split_b")
    %w1 = "flow.constant"() {value = dense<[[[[1.0]], [[-0.5]]], [[[0.5]], [[2.0]]]]> : tensor<2x2x1x1xf32>} : () -> tensor<2x2x1x1xf32> loc("w1")
    %c = "flow.conv"(%b, %w1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x2x2xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x2x2xf32> loc("branch")
    %r = "flow.relu"(%c) : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> loc("branch_relu")
    %cat = "flow.concat"(%a, %r) {axis = 1 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x4x2x2xf32> loc("concat")
    %rs = "flow.reshape"(%cat) {shape = array<i64: 1, 2, 2, 2, 2>} : (tensor<1x4x2x2xf32>) -> tensor<1x2x2x2x2xf32> loc("shuffle_a")
    %t = "flow.transpose"(%rs) {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x2x2x2xf32>) -> tensor<1x2x2x2x2xf32> loc("shuffle_b")
    %y = "flow.reshape"(%t) {shape = array<i64: 1, 4, 2, 2>, flow.calib_range = array<f64: 0.0, 3.0>} : (tensor<1x2x2x2x2xf32>) -> tensor<1x4x2x2xf32> loc("shuffle_c")
    %w2 = "flow.constant"() {value = dense<0.25> : tensor<3x4x1x1xf32>} : () -> tensor<3x4x1x1xf32> loc("w2")
    %o = "flow.conv"(%y, %w2) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x2x2xf32>, tensor<3x4x1x1xf32>) -> tensor<1x3x2x2xf32> loc("next")
    "func.return"(%o) : (tensor<1x3x2x2xf32>) -> ()
  }
}

// -----
// The same concat also a model output: its class is read by more than data moves and quantised ops, so it keeps
// the quantisation at the conv's input (its own range [0, 3]) and the concat stays in float.
// CHECK-LABEL: func.func @main
// CHECK: %[[R:.*]] = "flow.relu"
// CHECK: %[[CAT:.*]] = "flow.concat"(%arg0, %[[R]])
// CHECK: %[[Q:.*]] = "flow.quantize"(%[[CAT]]) {qtype = !quant.uniform<u8:f32, 1.17647061124444e-02>}
// CHECK: %[[D:.*]] = "flow.dequantize"(%[[Q]])
// CHECK: "flow.conv"(%[[D]]
// CHECK: "func.return"(%{{.*}}, %[[CAT]])
module {
  func.func @main(%arg0: tensor<1x2x2x2xf32> {flow.name = "x", flow.calib_range = array<f64: 0.0, 1.0>}) -> (tensor<1x3x2x2xf32> {flow.name = "y"}, tensor<1x4x2x2xf32> {flow.name = "cat"}) {
    %r = "flow.relu"(%arg0) : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> loc("relu")
    %cat = "flow.concat"(%arg0, %r) {axis = 1 : i64, flow.calib_range = array<f64: 0.0, 3.0>} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x4x2x2xf32> loc("concat")
    %w2 = "flow.constant"() {value = dense<0.25> : tensor<3x4x1x1xf32>} : () -> tensor<3x4x1x1xf32> loc("w2")
    %o = "flow.conv"(%cat, %w2) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x2x2xf32>, tensor<3x4x1x1xf32>) -> tensor<1x3x2x2xf32> loc("next")
    "func.return"(%o, %cat) : (tensor<1x3x2x2xf32>, tensor<1x4x2x2xf32>) -> ()
  }
}
