/* test_codegen.h — code generation of a unit test's module for one named CPU, as `flowc build --cpu`
 * does it: the target resolved from the CPU name, the module generated into a fresh LLVM module of `ctx`.
 * A failure fails the test with the diagnostic. Include after cmocka.h and codegen.h. */
#ifndef FLOWC_TEST_CODEGEN_H
#define FLOWC_TEST_CODEGEN_H

/* The LLVM module of m for `cpu`; *target receives the resolved target (the caller frees it). */
static LLVMModuleRef test_codegen_for_cpu(FcModule *m, const char *cpu, LLVMContextRef ctx, FcTarget **target) {
  FcDiag diag;
  fc_diag_init(&diag);
  FcCodegenOptions o = {.cpu = cpu, .opt_level = 2};
  if (fc_target_resolve(&o, target, &diag) != FC_OK) fail_msg("target %s: %s", cpu, diag.msg);
  LLVMModuleRef mod = NULL;
  if (fc_codegen_module(m, &o, ctx, *target, &mod, &diag) != FC_OK) fail_msg("codegen: %s", diag.msg);
  return mod;
}

#endif /* FLOWC_TEST_CODEGEN_H */
