/* run.c — compiling a module in memory for this process: what `flowc run` and `flowc check` share.
 *
 * The steps are those of an ahead-of-time build with the JIT in place of the object file: verify, run the
 * pass pipeline, build the LLVM module for the host (codegen/cg_module.c), run LLVM's pipeline at the
 * same -O level, and hand the module to ORC. The CPU defaults to "native": JIT code never leaves this
 * machine, so there is no reason to hold it to the portable x86-64-v3 that artefacts use.
 */
#include "cli.h"
#include "codegen.h"
#include "passes.h"

FcStatus fc_compile_jit(FcModule *m, const FcPipelineOptions *po, const FcCodegenOptions *co, FcJit **out,
                        FcDiag *diag) {
  *out = NULL;
  FcStatus st = fc_verify(m, diag);
  if (st == FC_OK) st = fc_pipeline_run(m, po, diag);
  if (st != FC_OK) return st;
  FcCodegenOptions o = *co;
  if (!o.cpu) o.cpu = "native";
  o.model_name = NULL; /* fc_jit_create looks up the default `flowc_model` */
  LLVMTargetMachineRef tm = NULL;
  st = fc_target_machine(&o, &tm, diag);
  if (st != FC_OK) return st;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  st = fc_codegen_module(m, &o, ctx, tm, &mod, diag);
  if (st == FC_OK) st = fc_codegen_optimize(mod, tm, o.opt_level, diag);
  LLVMDisposeTargetMachine(tm);
  if (st != FC_OK) {
    if (mod) LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    return st;
  }
  return fc_jit_create(mod, ctx, out, diag); /* owns mod and ctx from here, also on failure */
}
