// The pipeline driver: dump headers, -O levels, pass-list errors.
// RUN: %flowc build %s --passes=canonicalize,dce --print-before=canonicalize --print-after=all --emit ir 2>&1 >/dev/null | FileCheck %s --check-prefix=DUMP
// RUN: %flowc build %s --passes=fold,cse --print-after=cse --verify-each --emit ir 2>&1 >/dev/null | FileCheck %s --check-prefix=ONE
// RUN: %flowc build %s -O0 --emit ir | FileCheck %s --check-prefix=O0
// RUN: %flowc build %s -O1 --emit ir | FileCheck %s --check-prefix=OPT
// RUN: %flowc build %s -O2 --verify-each --emit ir | FileCheck %s --check-prefix=OPT
// RUN: %flowc build %s --emit ir | FileCheck %s --check-prefix=OPT
// RUN: sh -c '%flowc build %s --passes=fold,bogus --emit ir 2>&1; echo exit=$?' | FileCheck %s --check-prefix=BAD

// DUMP:      // -----// IR Dump Before canonicalize //----- //
// DUMP-NEXT: module {
// DUMP:        "flow.neg"
// DUMP:      // -----// IR Dump After canonicalize //----- //
// DUMP-NEXT: module {
// DUMP-NOT:    "flow.neg"
// DUMP:      // -----// IR Dump After dce //----- //
// DUMP-NOT:  IR Dump

// ONE-NOT:  IR Dump After fold
// ONE:      // -----// IR Dump After cse //----- //
// ONE-NOT:  IR Dump

// O0:       %0 = "flow.neg"(%arg0)
// O0-NEXT:  %1 = "flow.neg"(%0)
// O0-NEXT:  %2 = "flow.constant"
// O0-NEXT:  %3 = "flow.add"(%2, %2)

// OPT:       func.func @main(%arg0: tensor<2xf32>) -> (tensor<2xf32>
// OPT-NEXT:    %0 = "flow.constant"() {value = dense<[2.000000e+00, 4.000000e+00]> : tensor<2xf32>}
// OPT-NEXT:    %1 = "flow.add"(%arg0, %0)
// OPT-NEXT:    "func.return"(%1)

// BAD: flowc: error: {{.*}}unknown pass 'bogus' (passes: shapes, canonicalize, fold, cse, dce, {{.*}}, lower_quant, quantize_dynamic{{.*}})
// BAD: exit=2
func.func @main(%arg0: tensor<2xf32>) -> (tensor<2xf32>) {
  %0 = "flow.neg"(%arg0) : (tensor<2xf32>) -> tensor<2xf32>
  %1 = "flow.neg"(%0) : (tensor<2xf32>) -> tensor<2xf32>
  %2 = "flow.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %3 = "flow.add"(%2, %2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %4 = "flow.add"(%1, %3) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  "func.return"(%4) : (tensor<2xf32>) -> ()
}
