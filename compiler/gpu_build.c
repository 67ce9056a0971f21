/* gpu_build.c — the compiler's side of --device cuda: a module put through the GPU's pipeline becomes PTX and
 * a launch plan (codegen/gpu.h), which `--emit ptx` prints and an artefact carries beside its CPU code.
 *
 * The PTX is checked by ptxas when the CUDA toolkit is there, so a kernel a GPU would refuse fails the
 * build instead of the program's first run; where it is missing the check is skipped ($FLOWC_PTXAS names
 * another ptxas).
 */
#include <stdlib.h>

#include "cli.h"
#include "gpu.h"

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
