// RUN: %flowc build %s --passes=store_weights_f16 --verify-each --emit ir --split-input-file | FileCheck %s --check-prefix=F16
// RUN: %flowc build %s --passes=store_weights_bf16 --verify-each --emit ir --split-input-file | FileCheck %s --check-prefix=BF16

// f32 constants of >= 256 elements get flow.storage and their data rounded to nearest even: 0.1 is
// 0x3DCCCCCD, f16 0.0999755859375 (0x2E66), bf16 0.10009765625 (0x3DCD). Ties go to the even neighbour:
// 1 + 2^-11 is halfway between f16 1 and 1 + 2^-10 (-> 1), 1 + 3*2^-11 between 1 + 2^-10 and 1 + 2^-9
// (-> 1 + 2^-9 = 1.001953125; bf16, whose step at 1 is 2^-7, rounds both to 1). The bf16 ties are in the
// next case: 1 + 2^-8 -> 1 and 1 + 3*2^-8 -> 1 + 2^-6 = 1.015625.
// F16-LABEL: func.func @round(
// F16-NEXT:    %0 = "flow.constant"() {value = dense<9.9975586e-02> : tensor<16x16xf32>, flow.storage = "f16"}
// F16-NEXT:    %1 = "flow.constant"() {value = dense<1.000000e+00> : tensor<3x5x18xf32>, flow.storage = "f16"}
// F16-NEXT:    %2 = "flow.constant"() {value = dense<1.0019531e+00> : tensor<257xf32>, flow.storage = "f16"}
// BF16-LABEL: func.func @round(
// BF16-NEXT:    %0 = "flow.constant"() {value = dense<1.00097656e-01> : tensor<16x16xf32>, flow.storage = "bf16"}
// BF16-NEXT:    %1 = "flow.constant"() {value = dense<1.000000e+00> : tensor<3x5x18xf32>, flow.storage = "bf16"}
// BF16-NEXT:    %2 = "flow.constant"() {value = dense<1.000000e+00> : tensor<257xf32>, flow.storage = "bf16"}
func.func @round(%arg0: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<3x5x18xf32>, tensor<257xf32>) {
  %w = "flow.constant"() {value = dense<0.1> : tensor<16x16xf32>} : () -> tensor<16x16xf32>
  %f16tie = "flow.constant"() {value = dense<1.00048828125> : tensor<3x5x18xf32>} : () -> tensor<3x5x18xf32>
  %f16tie_up = "flow.constant"() {value = dense<1.00146484375> : tensor<257xf32>} : () -> tensor<257xf32>
  %0 = "flow.add"(%arg0, %w) : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  "func.return"(%0, %f16tie, %f16tie_up) : (tensor<16x16xf32>, tensor<3x5x18xf32>, tensor<257xf32>) -> ()
}

// -----

// The bf16 ties (stored as they are in f16, whose 10-bit mantissa holds them).
// F16-LABEL: func.func @bf16_ties(
// F16-NEXT:    %0 = "flow.constant"() {value = dense<1.0039062e+00> : tensor<256xf32>, flow.storage = "f16"}
// F16-NEXT:    %1 = "flow.constant"() {value = dense<1.0117188e+00> : tensor<256xf32>, flow.storage = "f16"}
// BF16-LABEL: func.func @bf16_ties(
// BF16-NEXT:    %0 = "flow.constant"() {value = dense<1.000000e+00> : tensor<256xf32>, flow.storage = "bf16"}
// BF16-NEXT:    %1 = "flow.constant"() {value = dense<1.015625e+00> : tensor<256xf32>, flow.storage = "bf16"}
func.func @bf16_ties() -> (tensor<256xf32>, tensor<256xf32>) {
  %a = "flow.constant"() {value = dense<1.00390625> : tensor<256xf32>} : () -> tensor<256xf32>
  %b = "flow.constant"() {value = dense<1.01171875> : tensor<256xf32>} : () -> tensor<256xf32>
  "func.return"(%a, %b) : (tensor<256xf32>, tensor<256xf32>) -> ()
}

// -----

// Left alone: 255 elements (below 1 KiB), integers, and in f16 a magnitude that would round to infinity
// (65520 and above; 65519 rounds to 65504, the largest f16) — bf16 has f32's range and stores it
// (70000 -> 70144, the nearest multiple of 2^9). NaN and infinities stay f32 in both formats.
// F16-LABEL: func.func @kept(
// F16-NEXT:    %0 = "flow.constant"() {value = dense<1.000000e-01> : tensor<255xf32>} : () -> tensor<255xf32>
// F16-NEXT:    %1 = "flow.constant"() {value = dense<3> : tensor<256xi32>} : () -> tensor<256xi32>
// F16-NEXT:    %2 = "flow.constant"() {value = dense<7.000000e+04> : tensor<256xf32>} : () -> tensor<256xf32>
// F16-NEXT:    %3 = "flow.constant"() {value = dense<6.550400e+04> : tensor<256xf32>, flow.storage = "f16"}
// F16-NEXT:    %4 = "flow.constant"() {value = dense<0x7F800000> : tensor<256xf32>} : () -> tensor<256xf32>
// F16-NEXT:    %5 = "flow.constant"() {value = dense<0x7FC00000> : tensor<256xf32>} : () -> tensor<256xf32>
// BF16-LABEL: func.func @kept(
// BF16-NEXT:    %0 = "flow.constant"() {value = dense<1.000000e-01> : tensor<255xf32>} : () -> tensor<255xf32>
// BF16-NEXT:    %1 = "flow.constant"() {value = dense<3> : tensor<256xi32>} : () -> tensor<256xi32>
// BF16-NEXT:    %2 = "flow.constant"() {value = dense<7.014400e+04> : tensor<256xf32>, flow.storage = "bf16"}
// BF16-NEXT:    %3 = "flow.constant"() {value = dense<6.553600e+04> : tensor<256xf32>, flow.storage = "bf16"}
// BF16-NEXT:    %4 = "flow.constant"() {value = dense<0x7F800000> : tensor<256xf32>} : () -> tensor<256xf32>
// BF16-NEXT:    %5 = "flow.constant"() {value = dense<0x7FC00000> : tensor<256xf32>} : () -> tensor<256xf32>
func.func @kept() -> (tensor<255xf32>, tensor<256xi32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>) {
  %a = "flow.constant"() {value = dense<0.1> : tensor<255xf32>} : () -> tensor<255xf32>
  %b = "flow.constant"() {value = dense<3> : tensor<256xi32>} : () -> tensor<256xi32>
  %c = "flow.constant"() {value = dense<70000.0> : tensor<256xf32>} : () -> tensor<256xf32>
  %d = "flow.constant"() {value = dense<65519.0> : tensor<256xf32>} : () -> tensor<256xf32>
  %e = "flow.constant"() {value = dense<0x7F800000> : tensor<256xf32>} : () -> tensor<256xf32>
  %f = "flow.constant"() {value = dense<0x7FC00000> : tensor<256xf32>} : () -> tensor<256xf32>
  "func.return"(%a, %b, %c, %d, %e, %f) : (tensor<255xf32>, tensor<256xi32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>) -> ()
}

// -----

// Inside a loop body too (every pass runs on every region).
// F16-LABEL: func.func @body(
// F16:           "flow.constant"() {value = dense<2.500000e-01> : tensor<256xf32>, flow.storage = "f16"}
// F16:           "flow.yield"
func.func @body(%arg0: tensor<i64>, %arg1: tensor<256xf32>) -> (tensor<256xf32>) {
  %c = "flow.constant"() {value = dense<true> : tensor<i1>} : () -> tensor<i1>
  %0 = "flow.loop"(%arg0, %c, %arg1) ({
  ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %x: tensor<256xf32>):
    %q = "flow.constant"() {value = dense<0.25> : tensor<256xf32>} : () -> tensor<256xf32>
    %y = "flow.add"(%x, %q) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    "flow.yield"(%cond, %y) : (tensor<i1>, tensor<256xf32>) -> ()
  }) {carried = 1 : i64} : (tensor<i64>, tensor<i1>, tensor<256xf32>) -> tensor<256xf32>
  "func.return"(%0) : (tensor<256xf32>) -> ()
}
