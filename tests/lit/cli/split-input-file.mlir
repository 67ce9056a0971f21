// --split-input-file: each part between `// -----` lines is its own model; outputs are joined with
// `// -----`; a part that fails prints its error (with the line number in this file) and the others go on.
// RUN: not %flowc build %s -O0 --emit ir --split-input-file 2>&1 | FileCheck %s
// RUN: not %flowc build %s -O0 --emit ir --split-input-file 2>/dev/null | FileCheck %s --check-prefix=OUT
// RUN: sh -c '%flowc build %s --emit ir -O0 --split-input-file >/dev/null 2>&1; echo exit=$?' | FileCheck %s --check-prefix=EXIT

// CHECK-LABEL: module {
// CHECK:       "flow.relu"(%arg0)
// OUT:         "flow.relu"
// OUT-NOT:     flow.neg
module {
  func.func @main(%arg0: tensor<2x3xf32> {flow.name = "x"}) -> (tensor<2x3xf32> {flow.name = "y"}) {
    %0 = "flow.relu"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    "func.return"(%0) : (tensor<2x3xf32>) -> ()
  }
}

// -----
// CHECK: // -----
// CHECK-NEXT: flowc: error: {{.*}}split-input-file.mlir:[[@LINE+3]]:{{[0-9]+}}: {{.*}}tensor<2x4xf32>
module {
  func.func @main(%arg0: tensor<2x3xf32> {flow.name = "x"}) -> (tensor<2x3xf32> {flow.name = "y"}) {
    %0 = "flow.relu"(%arg0) : (tensor<2x3xf32>) -> tensor<2x4xf32>
    "func.return"(%0) : (tensor<2x3xf32>) -> ()
  }
}

// -----
// CHECK: // -----
// CHECK-NEXT: flowc: error: {{.*}}split-input-file.mlir:[[@LINE+3]]:{{[0-9]+}}: unknown operation 'flow.no_such_op'
module {
  func.func @main(%arg0: tensor<2x3xf32> {flow.name = "x"}) -> (tensor<2x3xf32> {flow.name = "y"}) {
    %0 = "flow.no_such_op"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    "func.return"(%0) : (tensor<2x3xf32>) -> ()
  }
}

// -----
// CHECK: // -----
// CHECK-NEXT: module {
// CHECK:       "flow.neg"(%arg0)
// OUT:         // -----
// OUT-NEXT:    // -----
// OUT-NEXT:    // -----
// OUT-NEXT:    module {
// OUT:         "flow.neg"
module {
  func.func @main(%arg0: tensor<2x3xf32> {flow.name = "x"}) -> (tensor<2x3xf32> {flow.name = "y"}) {
    %0 = "flow.neg"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    "func.return"(%0) : (tensor<2x3xf32>) -> ()
  }
}
// EXIT: exit=1
