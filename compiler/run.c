/* run.c — compiling a module in memory for this process: what `flowc run` and `flowc check` share.
 *
 * The steps are those of an ahead-of-time build with the JIT in place of the object file: verify, resolve
 * the target (target.h), run the pass pipeline for it, build the LLVM module for the same target
 * (codegen/cg_module.c), run LLVM's pipeline at the same -O level, and hand the module to ORC. The CPU
 * defaults to "native": JIT code never leaves this machine, so there is no reason to hold it to the
 * portable x86-64-v3 that artefacts use.
 */
#include "cli.h"
#include "codegen.h"
#include "passes.h"

FcStatus fc_compile_jit(FcModule *m, const FcPipelineOptions *po, const FcCodegenOptions *co, FcJit **out,
                        FcDiag *diag) {
  *out = NULL;
  FcCodegenOptions o = *co;
  if (!o.cpu) o.cpu = "native";
  o.model_name = NULL; /* fc_jit_create looks up the default `flowc_model` */
  FcTarget *target = NULL;
  FcStatus st = fc_verify(m, diag);
  if (st == FC_OK) st = fc_target_resolve(&o, &target, diag);
  FcPipelineOptions pipe = *po;
  pipe.target = target;
  if (st == FC_OK) st = fc_pipeline_run(m, &pipe, diag);
  if (st != FC_OK) {
    fc_target_free(target);
    return st;
  }
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  st = fc_codegen_module(m, &o, ctx, target, &mod, diag);
  if (st == FC_OK) st = fc_codegen_optimize(mod, fc_target_tm(target), o.opt_level, diag);
  fc_target_free(target);
  if (st != FC_OK) {
    if (mod) LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    return st;
  }
  return fc_jit_create(mod, ctx, out, diag); /* owns mod and ctx from here, also on failure */
}
