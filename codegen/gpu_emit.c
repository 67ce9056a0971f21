/* gpu_emit.c — what becomes of a module's GPU half (gpu.h): PTX text from the NVPTX module, a check of it by
 * ptxas, and the FrtGpuModel (runtime/flowrt.h) that an artefact carries, written as constant data into a
 * module of the host: the launch table, the PTX text and the weights blob.
 *
 * The PTX is JIT-compiled by the driver when the model is opened (the portable form: a newer GPU than the
 * one compiled for still loads it). ptxas is the CUDA toolkit's assembler; `flowc build --device cuda` runs
 * it when it is there, so a kernel the GPU would refuse fails the build rather than the first run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>

#include "cg_emit.h"
#include "gpu.h"

FcStatus fc_gpu_emit_ptx(LLVMModuleRef mod, const FcTarget *t, int opt_level, char **ptx, FcDiag *diag) {
  *ptx = NULL;
  LLVMTargetMachineRef tm = fc_target_tm(t);
  char *err = NULL;
  if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &err)) {
    FcStatus st = fc_error(diag, FC_ERR_INTERNAL, "the GPU module does not verify: %.300s", err ? err : "");
    LLVMDisposeMessage(err);
    return st;
  }
  LLVMDisposeMessage(err);
  FcStatus st = fc_codegen_optimize(mod, tm, opt_level, diag);
  if (st != FC_OK) return st;
  LLVMMemoryBufferRef buf = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &err, &buf)) {
    st = fc_error(diag, FC_ERR_INTERNAL, "NVPTX code generation failed: %.300s", err ? err : "");
    LLVMDisposeMessage(err);
    return st;
  }
  size_t n = LLVMGetBufferSize(buf);
  char *s = malloc(n + 1);
  if (!s) fc_die(__FILE__, __LINE__, "out of memory");
  memcpy(s, LLVMGetBufferStart(buf), n);
  s[n] = '\0';
  LLVMDisposeMemoryBuffer(buf);
  *ptx = s;
  return FC_OK;
}

static char *find_ptxas(void) {
  const char *env = getenv("FLOWC_PTXAS");
  if (env && *env) return fc_emit_find_program(env);
  char *p = fc_emit_find_program("ptxas");
  return p ? p : fc_emit_find_program("/usr/local/cuda/bin/ptxas");
}

FcStatus fc_gpu_ptxas_check(const char *ptx, const FcTarget *t, FcDiag *diag) {
  char *ptxas = find_ptxas();
  if (!ptxas) return fc_error(diag, FC_ERR_UNSUPPORTED, "no ptxas (the CUDA toolkit's) on PATH or in /usr/local/cuda/bin");
  char *dir = NULL;
  FcStatus st = fc_emit_tmpdir_make(&dir, diag);
  if (st != FC_OK) {
    free(ptxas);
    return st;
  }
  size_t dn = strlen(dir) + 16;
  char *in = malloc(dn), *out = malloc(dn);
  if (!in || !out) fc_die(__FILE__, __LINE__, "out of memory");
  snprintf(in, dn, "%s/k.ptx", dir);
  snprintf(out, dn, "%s/k.cubin", dir);
  FILE *f = fopen(in, "w");
  if (!f) {
    st = fc_error(diag, FC_ERR_IO, "cannot write %s: %s", in, strerror(errno));
  } else {
    fputs(ptx, f);
    st = fc_emit_close_file(f, in, "", diag);
  }
  if (st == FC_OK) {
    char arch[32];
    snprintf(arch, sizeof arch, "-arch=%s", t->cpu);
    char *argv[] = {ptxas, arch, in, "-o", out, NULL};
    int code = 0, sig = 0;
    char line[400];
    st = fc_emit_run_tool(argv, &code, &sig, line, sizeof line, diag);
    if (st == FC_OK && (code != 0 || sig != 0))
      st = fc_error(diag, FC_ERR_INTERNAL, "ptxas -arch=%s rejected the generated PTX: %s", t->cpu,
                    *line ? line : "no message");
  }
  free(in);
  free(out);
  free(ptxas);
  fc_emit_tmpdir_remove(&dir);
  return st;
}

/* ---- the descriptor -------------------------------------------------------------------------------------- */

typedef struct Desc {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMTypeRef ptr, i32, i64;
} Desc;

static LLVMValueRef private_const(Desc *d, LLVMValueRef init, const char *name, unsigned align) {
  LLVMValueRef g = LLVMAddGlobal(d->mod, LLVMTypeOf(init), name);
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetAlignment(g, align);
  return g;
}

static LLVMValueRef cstring(Desc *d, const char *s, const char *name) {
  return private_const(d, LLVMConstStringInContext2(d->ctx, s, strlen(s), 0), name, 1);
}

static LLVMValueRef u32s(Desc *d, const uint32_t *v) {
  LLVMValueRef e[3];
  for (int i = 0; i < 3; i++) e[i] = LLVMConstInt(d->i32, v[i], 0);
  return LLVMConstArray2(d->i32, e, 3);
}

FcStatus fc_gpu_add_descriptor(LLVMModuleRef mod, const FcGpuPlan *plan, const char *ptx, const FcTarget *t,
                               const char *symbol, FcDiag *diag) {
  (void)diag;
  Desc d = {.ctx = LLVMGetModuleContext(mod), .mod = mod};
  d.ptr = LLVMPointerTypeInContext(d.ctx, 0);
  d.i32 = LLVMInt32TypeInContext(d.ctx);
  d.i64 = LLVMInt64TypeInContext(d.ctx);
  LLVMTypeRef arr3 = LLVMArrayType2(d.i32, 3);
  LLVMTypeRef arg_ty = LLVMStructTypeInContext(d.ctx, (LLVMTypeRef[]){d.i32, d.i32, d.i64}, 3, 0);
  LLVMTypeRef launch_ty = LLVMStructTypeInContext(
      d.ctx, (LLVMTypeRef[]){d.ptr, d.i32, arr3, arr3, d.i32, d.i32, d.i32, d.ptr, d.i32, d.i32, d.i32, d.i32, d.i32,
                             d.i32, d.i32, d.i64},
      16, 0);
  int n = plan->n_launches;
  LLVMValueRef *launches = calloc((size_t)n + 1, sizeof *launches);
  if (!launches) fc_die(__FILE__, __LINE__, "out of memory");
  for (int i = 0; i < n; i++) {
    const FcGpuLaunchPlan *l = &plan->launches[i];
    LLVMValueRef *args = calloc((size_t)l->n_args + 1, sizeof *args);
    if (!args) fc_die(__FILE__, __LINE__, "out of memory");
    for (int a = 0; a < l->n_args; a++) {
      LLVMValueRef f[3] = {LLVMConstInt(d.i32, (unsigned long long)l->args[a].buf, 0),
                           LLVMConstInt(d.i32, (unsigned long long)l->args[a].index, 0),
                           LLVMConstInt(d.i64, (unsigned long long)l->args[a].offset, 0)};
      args[a] = LLVMConstStructInContext(d.ctx, f, 3, 0);
    }
    LLVMValueRef args_g = private_const(&d, LLVMConstArray2(arg_ty, args, (uint64_t)l->n_args), ".gpu.args", 8);
    free(args);
    LLVMValueRef f[16] = {cstring(&d, l->name, ".gpu.kname"), LLVMConstInt(d.i32, (unsigned long long)l->node, 0),
                          u32s(&d, l->grid), u32s(&d, l->block), LLVMConstInt(d.i32, l->shared_bytes, 0),
                          LLVMConstInt(d.i32, l->sync ? 1 : 0, 0), /* FRT_GPU_SYNC */
                          LLVMConstInt(d.i32, (unsigned long long)l->n_args, 0), args_g,
                          /* the collective's fields (FrtGpuLaunch.coll ... count) */
                          LLVMConstInt(d.i32, (unsigned long long)l->coll, 0),
                          LLVMConstInt(d.i32, (unsigned long long)(int64_t)l->mesh_axis, 1),
                          LLVMConstInt(d.i32, (unsigned long long)l->group, 0),
                          LLVMConstInt(d.i32, (unsigned long long)l->dtype, 0),
                          LLVMConstInt(d.i32, (unsigned long long)l->reduce_op, 0),
                          LLVMConstInt(d.i32, (unsigned long long)l->send_rows, 0),
                          LLVMConstInt(d.i32, (unsigned long long)l->recv_rows, 0),
                          LLVMConstInt(d.i64, (unsigned long long)l->count, 0)};
    launches[i] = LLVMConstStructInContext(d.ctx, f, 16, 0);
  }
  LLVMValueRef launches_g = private_const(&d, LLVMConstArray2(launch_ty, launches, (uint64_t)n), ".gpu.launches", 8);
  free(launches);
  LLVMValueRef *names = calloc((size_t)plan->n_kernels + 1, sizeof *names);
  if (!names) fc_die(__FILE__, __LINE__, "out of memory");
  for (int i = 0; i < plan->n_kernels; i++) names[i] = cstring(&d, plan->kernel_names[i], ".gpu.node");
  LLVMValueRef names_g = private_const(&d, LLVMConstArray2(d.ptr, names, (uint64_t)plan->n_kernels), ".gpu.nodes", 8);
  free(names);
  LLVMValueRef weights = private_const(
      &d, LLVMConstStringInContext2(d.ctx, plan->weights ? (const char *)plan->weights : "",
                                    (size_t)plan->weights_bytes, 1),
      ".gpu.weights", FC_MEMPLAN_ALIGN);
  LLVMValueRef f[10] = {cstring(&d, t->cpu, ".gpu.arch"),
                        cstring(&d, ptx, ".gpu.ptx"),
                        weights,
                        LLVMConstInt(d.i64, (unsigned long long)plan->weights_bytes, 0),
                        LLVMConstInt(d.i64, (unsigned long long)plan->workspace_bytes, 0),
                        LLVMConstInt(d.i32, (unsigned long long)n, 0),
                        launches_g,
                        LLVMConstInt(d.i32, (unsigned long long)plan->n_kernels, 0),
                        names_g,
                        LLVMConstNull(d.ptr)};
  LLVMTypeRef model_ty = LLVMStructTypeInContext(
      d.ctx, (LLVMTypeRef[]){d.ptr, d.ptr, d.ptr, d.i64, d.i64, d.i32, d.ptr, d.i32, d.ptr, d.ptr}, 10, 0);
  LLVMValueRef g = LLVMGetNamedGlobal(mod, symbol);
  if (g && LLVMGlobalGetValueType(g) != model_ty) {
    /* declared by the CPU descriptor as an opaque byte: replace that declaration */
    LLVMValueRef def = LLVMAddGlobal(mod, model_ty, "");
    LLVMReplaceAllUsesWith(g, def);
    LLVMDeleteGlobal(g);
    LLVMSetValueName2(def, symbol, strlen(symbol));
    g = def;
  } else if (!g) {
    g = LLVMAddGlobal(mod, model_ty, symbol);
  }
  LLVMSetInitializer(g, LLVMConstNamedStruct(model_ty, f, 10));
  LLVMSetGlobalConstant(g, 1);
  LLVMSetAlignment(g, 8);
  /* An undefined reference to libflowrt's frt_gpu_runtime links the GPU runner into the program (its
   * references from frt_main are weak: a CPU-only program carries none of it). */
  LLVMValueRef rt = LLVMGetNamedGlobal(mod, "frt_gpu_runtime");
  if (!rt) rt = LLVMAddGlobal(mod, LLVMInt8TypeInContext(d.ctx), "frt_gpu_runtime");
  char anchor[300];
  snprintf(anchor, sizeof anchor, "%s_links_runtime", symbol);
  LLVMValueRef a = LLVMAddGlobal(mod, d.ptr, anchor);
  LLVMSetInitializer(a, rt);
  LLVMSetGlobalConstant(a, 1);
  LLVMSetVisibility(a, LLVMHiddenVisibility);
  return FC_OK;
}
