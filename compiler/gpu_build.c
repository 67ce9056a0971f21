/* gpu_build.c — the compiler's side of --device cuda: a module put through the GPU's pipeline becomes PTX and
 * a launch plan (codegen/gpu.h), which `--emit ptx` prints and an artefact carries beside its CPU code.
 *
 * The PTX is checked by ptxas when the CUDA toolkit is there, so a kernel a GPU would refuse fails the
 * build instead of the program's first run; where it is missing the check is skipped ($FLOWC_PTXAS names
 * another ptxas).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "flowrt.h"
#include "gpu.h"
#include "passes.h"

FcStatus fc_gpu_compile(FcModule *m, const FcTarget *gpu, int opt_level, FcGpuPlan *plan, char **ptx, FcDiag *diag) {
  *ptx = NULL;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  FcStatus st = fc_gpu_codegen_module(m, gpu, false, NULL, ctx, &mod, plan, diag);
  if (st == FC_OK) st = fc_gpu_emit_ptx(mod, gpu, opt_level, ptx, diag);
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  if (st == FC_OK) {
    FcDiag pd;
    fc_diag_init(&pd);
    FcStatus ps = fc_gpu_ptxas_check(*ptx, gpu, &pd);
    if (ps != FC_OK && ps != FC_ERR_UNSUPPORTED) { /* FC_ERR_UNSUPPORTED: no ptxas here */
      *diag = pd;
      st = ps;
    }
  }
  if (st != FC_OK) {
    free(*ptx);
    *ptx = NULL;
    fc_gpu_plan_free(plan);
  }
  return st;
}

/* ---- the SIMT host backend's compile (flowc run/check --device simt) ---------------------------------- */

struct FcSimt {
  FcJit *jit;
  FcGpuPlan plan;
  FrtGpuModel gm;
  FrtGpuLaunch *launches;
  FrtSimtKernelFn *fns;
};

FcStatus fc_simt_compile(FcModule *m, const FcPipelineOptions *po, int precision, FcSimt **out, FcDiag *diag) {
  *out = NULL;
  int opt_level = po->opt_level;
  FcCodegenOptions ho = {.cpu = "native", .opt_level = opt_level};
  FcCodegenOptions go = {.triple = "nvptx64-nvidia-cuda", .opt_level = opt_level};
  FcTarget *host = NULL, *gpu = NULL;
  FcStatus st = fc_target_resolve(&ho, &host, diag);
  if (st == FC_OK) st = fc_target_resolve(&go, &gpu, diag);
  if (st == FC_OK) gpu->gpu.precision = (FcGpuPrecision)precision;
  FcPipelineOptions gpo = *po;
  gpo.target = gpu;
  if (st == FC_OK) st = fc_verify(m, diag);
  if (st == FC_OK) st = fc_pipeline_run(m, &gpo, diag);
  if (st != FC_OK) {
    fc_target_free(host);
    fc_target_free(gpu);
    return st;
  }
  FcSimt *s = calloc(1, sizeof *s);
  if (!s) fc_die(__FILE__, __LINE__, "out of memory");
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  st = fc_gpu_codegen_module(m, gpu, true, fc_target_tm(host), ctx, &mod, &s->plan, diag);
  if (st == FC_OK) st = fc_codegen_optimize(mod, fc_target_tm(host), opt_level, diag);
  fc_target_free(host);
  fc_target_free(gpu);
  if (st == FC_OK) {
    st = fc_jit_create(mod, ctx, &s->jit, diag); /* takes mod and ctx */
  } else {
    if (mod) LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
  }
  const FcGpuPlan *p = &s->plan;
  int n = p->n_launches;
  s->launches = calloc((size_t)n + 1, sizeof *s->launches);
  s->fns = calloc((size_t)n + 1, sizeof *s->fns);
  if (!s->launches || !s->fns) fc_die(__FILE__, __LINE__, "out of memory");
  for (int i = 0; st == FC_OK && i < n; i++) {
    const FcGpuLaunchPlan *l = &p->launches[i];
    FrtGpuArg *args = FC_NEW_ARRAY(&m->arena, FrtGpuArg, (size_t)l->n_args + 1);
    for (int a = 0; a < l->n_args; a++)
      args[a] = (FrtGpuArg){(int32_t)l->args[a].buf, l->args[a].index, (uint64_t)l->args[a].offset};
    s->launches[i] = (FrtGpuLaunch){.kernel = l->name, .node = l->node, .shared_bytes = l->shared_bytes,
                                    .flags = l->sync ? FRT_GPU_SYNC : 0, .n_args = l->n_args, .args = args,
                                    .coll = (int32_t)l->coll, .mesh_axis = l->mesh_axis, .group = l->group,
                                    .dtype = l->dtype, .reduce_op = l->reduce_op, .send_rows = l->send_rows,
                                    .recv_rows = l->recv_rows, .count = l->count};
    memcpy(s->launches[i].grid, l->grid, sizeof l->grid);
    memcpy(s->launches[i].block, l->block, sizeof l->block);
    if (l->coll != FC_GPU_COLL_NONE) continue; /* the host runs it: no kernel */
    s->fns[i] = (FrtSimtKernelFn)fc_jit_lookup(s->jit, l->name, diag);
    if (!s->fns[i]) st = FC_ERR_INTERNAL;
  }
  if (st != FC_OK) {
    fc_simt_free(s);
    return st;
  }
  /* The same kernels for NVPTX, sm_80 and sm_90, through LLVM's backend and ptxas (when installed): a kernel
   * a GPU would refuse fails here too, not only in `flowc build --device cuda`. */
  static const char *const archs[] = {"sm_80", "sm_90"};
  for (size_t a = 0; a < sizeof archs / sizeof archs[0] && st == FC_OK; a++) {
    FcGpuPlan pplan;
    char *ptx = NULL;
    FcTarget *arch = NULL;
    go.cpu = archs[a];
    st = fc_target_resolve(&go, &arch, diag);
    if (st == FC_OK) {
      arch->gpu.precision = (FcGpuPrecision)precision;
      st = fc_gpu_compile(m, arch, opt_level, &pplan, &ptx, diag);
    }
    if (st == FC_OK) fc_gpu_plan_free(&pplan);
    free(ptx);
    fc_target_free(arch);
  }
  if (st != FC_OK) {
    fc_simt_free(s);
    return st;
  }
  s->gm = (FrtGpuModel){.arch = "simt", .weights = p->weights, .weights_size = (uint64_t)p->weights_bytes,
                        .workspace_size = (uint64_t)p->workspace_bytes, .n_launches = n, .launches = s->launches,
                        .n_kernels = p->n_kernels, .kernel_names = p->kernel_names, .host_kernels = s->fns};
  *out = s;
  return FC_OK;
}

const FrtGpuModel *fc_simt_model(const FcSimt *s) { return &s->gm; }

void fc_simt_free(FcSimt *s) {
  if (!s) return;
  fc_jit_destroy(s->jit);
  fc_gpu_plan_free(&s->plan);
  free(s->launches);
  free(s->fns);
  free(s);
}
