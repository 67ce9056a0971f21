// RUN: not %flowc build %s -O0 --emit ir --split-input-file 2>&1 | FileCheck %s

// What the verifier (conv and matmul inference) rejects in a fused epilogue.

// CHECK: flowc: error: {{.*}}:[[@LINE+2]]:{{[0-9]+}}: flow.matmul: has 3 operands; more than 2 need an 'epilogue'
func.func @no_epilogue(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32>, %arg2: tensor<4xf32>) -> (tensor<2x4xf32>) {
  %0 = "flow.matmul"(%arg0, %arg1, %arg2) : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  "func.return"(%0) : (tensor<2x4xf32>) -> ()
}

// -----
// CHECK: // -----
// CHECK-NEXT: flowc: error: {{.*}}:[[@LINE+2]]:{{[0-9]+}}: flow.matmul: epilogue step 0 references operand 1; only operands 2.. are extras
func.func @not_an_extra(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32>, %arg2: tensor<4xf32>) -> (tensor<2x4xf32>) {
  %0 = "flow.matmul"(%arg0, %arg1, %arg2) {epilogue = "add x o1"} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  "func.return"(%0) : (tensor<2x4xf32>) -> ()
}

// -----
// CHECK: // -----
// CHECK-NEXT: flowc: error: {{.*}}:[[@LINE+2]]:{{[0-9]+}}: flow.matmul: epilogue: element-wise program "add x o5": bad reference
func.func @out_of_range(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32>, %arg2: tensor<4xf32>) -> (tensor<2x4xf32>) {
  %0 = "flow.matmul"(%arg0, %arg1, %arg2) {epilogue = "add x o5"} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  "func.return"(%0) : (tensor<2x4xf32>) -> ()
}

// -----
// CHECK: // -----
// CHECK-NEXT: flowc: error: {{.*}}:[[@LINE+2]]:{{[0-9]+}}: flow.matmul: epilogue step 1 (less) gives i1, not the result's f32
func.func @dtype_change(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32>, %arg2: tensor<4xf32>) -> (tensor<2x4xf32>) {
  %0 = "flow.matmul"(%arg0, %arg1, %arg2) {epilogue = "add x o2; less s0 o2"} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  "func.return"(%0) : (tensor<2x4xf32>) -> ()
}

// -----
// CHECK: // -----
// CHECK-NEXT: flowc: error: {{.*}}:[[@LINE+2]]:{{[0-9]+}}: flow.matmul: epilogue step 0: sqrt: operand must have a float type
func.func @int_sqrt(%arg0: tensor<2x3xi32>, %arg1: tensor<3x4xi32>) -> (tensor<2x4xi32>) {
  %0 = "flow.matmul"(%arg0, %arg1) {epilogue = "sqrt x"} : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
  "func.return"(%0) : (tensor<2x4xi32>) -> ()
}

// -----
// CHECK: // -----
// CHECK-NEXT: flowc: error: {{.*}}:[[@LINE+2]]:{{[0-9]+}}: flow.matmul: epilogue operand 2 (tensor<3x2x4xf32>) does not broadcast to the result shape
func.func @enlarging(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32>, %arg2: tensor<3x2x4xf32>) -> (tensor<2x4xf32>) {
  %0 = "flow.matmul"(%arg0, %arg1, %arg2) {epilogue = "add x o2"} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<3x2x4xf32>) -> tensor<2x4xf32>
  "func.return"(%0) : (tensor<2x4xf32>) -> ()
}

// -----
// CHECK: // -----
// CHECK-NEXT: flowc: error: {{.*}}:[[@LINE+2]]:{{[0-9]+}}: flow.matmul: epilogue operand 2 is f64, the result f32
func.func @extra_dtype(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32>, %arg2: tensor<4xf64>) -> (tensor<2x4xf32>) {
  %0 = "flow.matmul"(%arg0, %arg1, %arg2) {epilogue = "add x o2"} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf64>) -> tensor<2x4xf32>
  "func.return"(%0) : (tensor<2x4xf32>) -> ()
}

// -----
// CHECK: // -----
// CHECK-NEXT: flowc: error: {{.*}}:[[@LINE+2]]:{{[0-9]+}}: flow.conv: epilogue step 0 references operand 2; only operands 3.. are extras
func.func @conv_bias_ref(%arg0: tensor<1x2x3x3xf32>, %arg1: tensor<2x2x1x1xf32>, %arg2: tensor<2xf32>) -> (tensor<1x2x3x3xf32>) {
  %0 = "flow.conv"(%arg0, %arg1, %arg2) {dilations = array<i64: 1, 1>, epilogue = "mul x o2", group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  "func.return"(%0) : (tensor<1x2x3x3xf32>) -> ()
}

// -----
// CHECK: // -----
// CHECK-NEXT: flowc: error: {{.*}}:[[@LINE+2]]:{{[0-9]+}}: flow.conv: bias must be 1-D of 2 output channels
func.func @conv_extra_no_bias(%arg0: tensor<1x2x3x3xf32>, %arg1: tensor<2x2x1x1xf32>, %arg2: tensor<1x2x3x3xf32>) -> (tensor<1x2x3x3xf32>) {
  %0 = "flow.conv"(%arg0, %arg1, %arg2) {dilations = array<i64: 1, 1>, epilogue = "add x o2", group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  "func.return"(%0) : (tensor<1x2x3x3xf32>) -> ()
}

// -----
// CHECK: // -----
// CHECK-NEXT: flowc: error: {{.*}}:[[@LINE+2]]:{{[0-9]+}}: flow.matmul: 'to' is the result dtype of 8-bit operands: i32 or f32
func.func @to_on_floats(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32>) -> (tensor<2x4xf32>) {
  %0 = "flow.matmul"(%arg0, %arg1) {to = f32} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  "func.return"(%0) : (tensor<2x4xf32>) -> ()
}

// -----
// CHECK: // -----
// CHECK-NEXT: flowc: error: {{.*}}:[[@LINE+2]]:{{[0-9]+}}: flow.matmul: 'to' is the result dtype of 8-bit operands: i32 or f32
func.func @to_f16(%arg0: tensor<2x3xui8>, %arg1: tensor<3x4xi8>) -> (tensor<2x4xf16>) {
  %0 = "flow.matmul"(%arg0, %arg1) {to = f16} : (tensor<2x3xui8>, tensor<3x4xi8>) -> tensor<2x4xf16>
  "func.return"(%0) : (tensor<2x4xf16>) -> ()
}

// -----
// CHECK: // -----
// CHECK-NEXT: flowc: error: {{.*}}:[[@LINE+2]]:{{[0-9]+}}: flow.conv: 'to' is the result dtype of a quantised conv's epilogue
func.func @to_on_f32_conv(%arg0: tensor<1x2x3x3xf32>, %arg1: tensor<2x2x1x1xf32>) -> (tensor<1x2x3x3xui8>) {
  %0 = "flow.conv"(%arg0, %arg1) {dilations = array<i64: 1, 1>, epilogue = "relu x", group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, to = ui8} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xui8>
  "func.return"(%0) : (tensor<1x2x3x3xui8>) -> ()
}

// -----
// CHECK: // -----
// CHECK-NEXT: flowc: error: {{.*}}:[[@LINE+3]]:{{[0-9]+}}: flow.conv: a quantised conv with an epilogue has qtype f32
func.func @quant_result_epilogue(%arg0: tensor<1x2x3x3xui8>) -> (tensor<1x2x3x3x!quant.uniform<u8:f32, 1.000000e-01:3>>) {
  %x = "flow.scast"(%arg0) {qtype = !quant.uniform<u8:f32, 5.000000e-02:3>} : (tensor<1x2x3x3xui8>) -> tensor<1x2x3x3x!quant.uniform<u8:f32, 5.000000e-02:3>>
  %0 = "flow.conv"(%x, %x) {dilations = array<i64: 1, 1>, epilogue = "relu x", group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, qtype = !quant.uniform<u8:f32, 1.000000e-01:3>, strides = array<i64: 1, 1>} : (tensor<1x2x3x3x!quant.uniform<u8:f32, 5.000000e-02:3>>, tensor<1x2x3x3x!quant.uniform<u8:f32, 5.000000e-02:3>>) -> tensor<1x2x3x3x!quant.uniform<u8:f32, 1.000000e-01:3>>
  "func.return"(%0) : (tensor<1x2x3x3x!quant.uniform<u8:f32, 1.000000e-01:3>>) -> ()
}

// -----
// CHECK: // -----
// CHECK-NEXT: flowc: error: {{.*}}:[[@LINE+4]]:{{[0-9]+}}: flow.conv: 'to' of a quantised conv's epilogue is u8 or i8
func.func @quant_to_i32(%arg0: tensor<1x2x3x3xui8>) -> (tensor<1x2x3x3xi32>) {
  %x = "flow.scast"(%arg0) {qtype = !quant.uniform<u8:f32, 5.000000e-02:3>} : (tensor<1x2x3x3xui8>) -> tensor<1x2x3x3x!quant.uniform<u8:f32, 5.000000e-02:3>>
  %w = "flow.constant"() {value = dense<1> : tensor<2x2x1x1xi8>} : () -> tensor<2x2x1x1x!quant.uniform<i8:f32, 1.000000e-02:0>>
  %0 = "flow.conv"(%x, %w) {dilations = array<i64: 1, 1>, epilogue = "relu x", group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, qtype = f32, strides = array<i64: 1, 1>, to = i32} : (tensor<1x2x3x3x!quant.uniform<u8:f32, 5.000000e-02:3>>, tensor<2x2x1x1x!quant.uniform<i8:f32, 1.000000e-02:0>>) -> tensor<1x2x3x3xi32>
  "func.return"(%0) : (tensor<1x2x3x3xi32>) -> ()
}
