/* cg_cpu_guard.c — the CPU-feature check at the door of an ahead-of-time artefact.
 *
 * A model compiled for a CPU with features the running one lacks must refuse before any of its code
 * runs, not die of SIGILL (runtime/cpu.c does the checking). frt_main and frt_model_run check the
 * descriptor's cpu_features themselves; a library user may call NAME_run directly, so for obj and lib
 * the generated run function is renamed to a private body and NAME_run becomes a wrapper: -1 when
 * frt_cpu_check refuses, else the body's result. NAME_check_cpu(msg, cap) hands the caller the message.
 *
 * The wrapper and `main` (exe) are compiled for the architecture's baseline ("target-cpu" x86-64, no
 * features), so nothing in them can use an instruction the check has not yet cleared; LLVM does not
 * inline a callee that needs more features into them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_emit.h"
#include "cg_private.h"

/* FrtModel's fields (runtime/flowrt.h): run is the 8th, cpu and cpu_features the 12th and 13th. */
enum { MODEL_FIELD_RUN = 7, MODEL_FIELD_CPU = 11, MODEL_FIELD_CPU_FEATURES = 12 };

void fc_cg_baseline_fn(LLVMModuleRef mod, const FcTarget *t, LLVMValueRef fn) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  const char *cpu = t->arch == FC_ARCH_X86_64 ? "x86-64" : "generic";
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateStringAttribute(ctx, "target-cpu", 10, cpu,
                                                                                    (unsigned)strlen(cpu)));
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateStringAttribute(ctx, "target-features", 15, "", 0));
}

FcStatus fc_emit_cpu_guard(LLVMModuleRef mod, const FcTarget *t, const char *name, FcEmitKind kind, FcDiag *diag) {
  if (kind == FC_EMIT_EXE) {
    LLVMValueRef main_fn = LLVMGetNamedFunction(mod, "main");
    if (!main_fn) return fc_error(diag, FC_ERR_INTERNAL, "the generated module has no 'main'");
    fc_cg_baseline_fn(mod, t, main_fn);
    return FC_OK;
  }
  char sym[512];
  snprintf(sym, sizeof sym, "%s_model", name);
  LLVMValueRef model = LLVMGetNamedGlobal(mod, sym);
  LLVMValueRef init = model ? LLVMGetInitializer(model) : NULL;
  snprintf(sym, sizeof sym, "%s_run", name);
  LLVMValueRef body = LLVMGetNamedFunction(mod, sym);
  if (!init || !body || LLVMGetNumOperands(init) <= MODEL_FIELD_CPU_FEATURES ||
      LLVMGetOperand(init, MODEL_FIELD_RUN) != body)
    return fc_error(diag, FC_ERR_INTERNAL, "the model descriptor '%s_model' does not match its run function", name);
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx), ptr = LLVMPointerTypeInContext(ctx, 0);
  LLVMTypeRef size_ty = LLVMIntPtrTypeInContext(ctx, LLVMGetModuleDataLayout(mod));
  LLVMValueRef features = LLVMGetOperand(init, MODEL_FIELD_CPU_FEATURES), cpu = LLVMGetOperand(init, MODEL_FIELD_CPU);

  /* int frt_cpu_check_const(const char *required, const char *cpu, char *msg, size_t cap): the model's
   * list is a constant, so after the first run the check is a pointer compare */
  LLVMTypeRef check_params[4] = {ptr, ptr, ptr, size_ty};
  LLVMTypeRef check_ty = LLVMFunctionType(i32, check_params, 4, 0);
  LLVMValueRef check = LLVMGetNamedFunction(mod, "frt_cpu_check_const");
  if (!check) check = LLVMAddFunction(mod, "frt_cpu_check_const", check_ty);

  LLVMSetValueName2(body, "", 0); /* the body loses the public name to the wrapper */
  LLVMSetLinkage(body, LLVMInternalLinkage);
  LLVMTypeRef run_ty = LLVMGlobalGetValueType(body);
  LLVMValueRef run = LLVMAddFunction(mod, sym, run_ty);
  fc_cg_baseline_fn(mod, t, run);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, run, "entry"));
  LLVMValueRef args[4] = {features, cpu, LLVMConstNull(ptr), LLVMConstInt(size_ty, 0, 0)};
  LLVMValueRef refused = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildCall2(b, check_ty, check, args, 4, "cpu"),
                                       LLVMConstInt(i32, 0, 0), "");
  LLVMBasicBlockRef no = LLVMAppendBasicBlockInContext(ctx, run, "refused"),
                    yes = LLVMAppendBasicBlockInContext(ctx, run, "run");
  LLVMBuildCondBr(b, refused, no, yes);
  LLVMPositionBuilderAtEnd(b, no);
  LLVMBuildRet(b, LLVMConstInt(i32, (unsigned long long)-1, 1));
  LLVMPositionBuilderAtEnd(b, yes);
  LLVMValueRef pass[4];
  for (unsigned i = 0; i < 4; i++) pass[i] = LLVMGetParam(run, i);
  LLVMBuildRet(b, LLVMBuildCall2(b, run_ty, body, pass, 4, ""));

  snprintf(sym, sizeof sym, "%s_check_cpu", name);
  LLVMTypeRef cc_params[2] = {ptr, size_ty};
  LLVMValueRef cc = LLVMAddFunction(mod, sym, LLVMFunctionType(i32, cc_params, 2, 0));
  fc_cg_baseline_fn(mod, t, cc);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, cc, "entry"));
  LLVMValueRef cargs[4] = {features, cpu, LLVMGetParam(cc, 0), LLVMGetParam(cc, 1)};
  LLVMBuildRet(b, LLVMBuildCall2(b, check_ty, check, cargs, 4, ""));
  LLVMDisposeBuilder(b);
  return FC_OK;
}

void fc_cg_cpu_features(const FcTarget *t, char *buf, size_t cap) {
  static const char *const checkable[] = {
#define FRT_CPU_FEATURE(name, leaf, subleaf, reg, bit, state) name,
#include "../runtime/cpu_features.def"
#undef FRT_CPU_FEATURE
  };
  if (cap) buf[0] = '\0';
  if (t->arch != FC_ARCH_X86_64) return;
  char *all = fc_llvm_tm_features(fc_target_tm(t)); /* "avx,avx2,fma,...," */
  if (!all) fc_die(__FILE__, __LINE__, "out of memory");
  size_t used = 0;
  for (size_t i = 0; i < sizeof checkable / sizeof checkable[0]; i++) {
    size_t n = strlen(checkable[i]);
    bool on = false;
    for (const char *p = all; *p && !on; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ','))
      on = strcspn(p, ",") == n && memcmp(p, checkable[i], n) == 0;
    if (!on) continue;
    int w = snprintf(buf + used, cap > used ? cap - used : 0, "%s%s", used ? "," : "", checkable[i]);
    if (w > 0) used += (size_t)w;
  }
  free(all);
}
