/* cg_jit.c — in-process compilation with ORC's LLJIT, for `flowc run` and `flowc check`.
 *
 * The JIT compiles for the host (its target machine builder detects the host CPU and features); modules
 * meant for it are generated with --cpu native, so both agree.
 *
 * Symbols: generated code calls frt_parallel_for(_max), frt_task_index, frt_pool_threads,
 * frt_profile_tick, frt_once and frt_winograd_i8_weights (weights expanded once) and, through LLVM intrinsics, libc's
 * memcpy/memset. The runtime entry points are defined in the JIT as absolute addresses of the functions linked into this program, so they resolve
 * even though flowc is linked statically against libflowrt (an archive member nobody else references
 * would not be linked in, and nothing needs --export-dynamic). Anything else (memcpy, ...) comes from
 * the process's own libraries through a search generator.
 *
 * Contexts: LLVM 19's C API can only wrap a new LLVMContext in a ThreadSafeContext, but the module was
 * built in the caller's context. The ThreadSafeContext is used by ORC only as the lock taken around
 * work on the module, and the module keeps its own context, so the module is added with a fresh
 * ThreadSafeContext and the caller's context is kept alive here until the JIT (which frees the module)
 * is gone. Compilation happens on this thread, inside the lookup.
 */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>

#include "codegen.h"
#include "flowrt.h"
#include "gpu_simt.h"

struct FcJit {
  LLVMOrcLLJITRef jit;
  LLVMOrcThreadSafeContextRef tsc;
  LLVMContextRef ctx; /* the module's context, disposed after the JIT */
  const struct FrtModel *model;
};

static FcStatus jit_error(FcDiag *diag, const char *what, LLVMErrorRef err) {
  char *msg = LLVMGetErrorMessage(err);
  size_t n = strcspn(msg, "\n");
  FcStatus st = fc_error(diag, FC_ERR_INTERNAL, "JIT: %s: %.*s", what, (int)n, msg);
  LLVMDisposeErrorMessage(msg);
  return st;
}

/* The runtime functions generated code may call, by name. */
static const struct {
  const char *name;
  void (*addr)(void);
} runtime_symbols[] = {
    {"frt_parallel_for", (void (*)(void))frt_parallel_for},
    {"frt_parallel_for_max", (void (*)(void))frt_parallel_for_max},
    {"frt_task_index", (void (*)(void))frt_task_index},
    {"frt_pool_threads", (void (*)(void))frt_pool_threads},
    {"frt_profile_tick", (void (*)(void))frt_profile_tick},
    {"frt_once", (void (*)(void))frt_once},
    {"frt_winograd_i8_weights", (void (*)(void))frt_winograd_i8_weights},
    /* the SIMT host backend's kernels (flowc run/check --device simt) */
    {"frt_simt_barrier", (void (*)(void))frt_simt_barrier},
    {"frt_simt_shfl_f32", (void (*)(void))frt_simt_shfl_f32},
    {"frt_simt_shfl_i32", (void (*)(void))frt_simt_shfl_i32},
    {"frt_simt_mma", (void (*)(void))frt_simt_mma},
};

static FcStatus define_runtime_symbols(FcJit *j, LLVMOrcJITDylibRef jd, FcDiag *diag) {
  enum { N = sizeof runtime_symbols / sizeof runtime_symbols[0] };
  LLVMOrcCSymbolMapPair pairs[N];
  for (int i = 0; i < N; i++) {
    pairs[i].Name = LLVMOrcLLJITMangleAndIntern(j->jit, runtime_symbols[i].name);
    pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)runtime_symbols[i].addr;
    pairs[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    pairs[i].Sym.Flags.TargetFlags = 0;
  }
  LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, N);
  LLVMErrorRef err = LLVMOrcJITDylibDefine(jd, mu);
  if (err) {
    LLVMOrcDisposeMaterializationUnit(mu);
    return jit_error(diag, "defining runtime symbols", err);
  }
  return FC_OK;
}

FcStatus fc_jit_create(LLVMModuleRef mod, LLVMContextRef ctx, FcJit **out, FcDiag *diag) {
  *out = NULL;
  FcJit *j = calloc(1, sizeof *j);
  if (!j) fc_die(__FILE__, __LINE__, "out of memory");
  j->ctx = ctx;
  bool has_model = LLVMGetNamedGlobal(mod, "flowc_model") != NULL;
  FcStatus st = FC_OK;
  LLVMOrcJITTargetMachineBuilderRef jtmb = NULL;
  LLVMErrorRef err = LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb);
  if (err) {
    st = jit_error(diag, "detecting the host", err);
    LLVMDisposeModule(mod);
    goto fail;
  }
  LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb);
  err = LLVMOrcCreateLLJIT(&j->jit, builder); /* consumes the builder */
  if (err) {
    j->jit = NULL;
    st = jit_error(diag, "creating the JIT", err);
    LLVMDisposeModule(mod);
    goto fail;
  }
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j->jit);
  st = define_runtime_symbols(j, jd, diag);
  if (st != FC_OK) {
    LLVMDisposeModule(mod);
    goto fail;
  }
  LLVMOrcDefinitionGeneratorRef gen = NULL;
  err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(j->jit), NULL, NULL);
  if (err) {
    st = jit_error(diag, "searching the process for symbols", err);
    LLVMDisposeModule(mod);
    goto fail;
  }
  LLVMOrcJITDylibAddGenerator(jd, gen);
  j->tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, j->tsc);
  err = LLVMOrcLLJITAddLLVMIRModule(j->jit, jd, tsm);
  if (err) {
    LLVMOrcDisposeThreadSafeModule(tsm);
    st = jit_error(diag, "adding the module", err);
    goto fail;
  }
  LLVMOrcExecutorAddress addr = 0;
  if (!has_model) { /* a module of other entry points (the SIMT host kernels): fc_jit_lookup finds them */
    *out = j;
    return FC_OK;
  }
  err = LLVMOrcLLJITLookup(j->jit, &addr, "flowc_model");
  if (err) {
    st = jit_error(diag, "compiling the model", err);
    goto fail;
  }
  j->model = (const struct FrtModel *)(uintptr_t)addr;
  *out = j;
  return FC_OK;
fail:
  fc_jit_destroy(j);
  return st;
}

const struct FrtModel *fc_jit_model(FcJit *j) { return j->model; }

void *fc_jit_lookup(FcJit *j, const char *name, FcDiag *diag) {
  LLVMOrcExecutorAddress addr = 0;
  LLVMErrorRef err = LLVMOrcLLJITLookup(j->jit, &addr, name);
  if (err) {
    jit_error(diag, "looking up a symbol", err);
    return NULL;
  }
  return (void *)(uintptr_t)addr;
}

void fc_jit_destroy(FcJit *j) {
  if (!j) return;
  if (j->jit) {
    LLVMErrorRef err = LLVMOrcDisposeLLJIT(j->jit);
    if (err) LLVMConsumeError(err);
  }
  if (j->tsc) LLVMOrcDisposeThreadSafeContext(j->tsc);
  if (j->ctx) LLVMContextDispose(j->ctx);
  free(j);
}
