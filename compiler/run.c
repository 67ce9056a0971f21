/* run.c — compiling a module in memory for this process: what `flowc run` and `flowc check` share.
 *
 * The steps are those of an ahead-of-time build with the JIT in place of the object file: verify, resolve
 * the target (target.h), run the pass pipeline for it, build the LLVM module for the same target
 * (codegen/cg_module.c), run LLVM's pipeline at the same -O level, and hand the module to ORC. The CPU
 * defaults to "native": JIT code never leaves this machine, so there is no reason to hold it to the
 * portable x86-64-v3 that artefacts use.
 *
 * A model with symbolic input dims compiles for the files `flowc run` was given (fc_run_input_type): the
 * files are bound to inputs by the runtime's own rules (frt_main's positional FILEs and --input
 * NAME=FILE) and read by the runtime's reader, so the shape compiled is the shape that will be fed.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "codegen.h"
#include "flowrt.h"
#include "passes.h"

FcStatus fc_compile_jit(FcModule *m, const FcPipelineOptions *po, const FcCodegenOptions *co, FcJit **out,
                        FcDiag *diag) {
  *out = NULL;
  FcCodegenOptions o = *co;
  if (!o.cpu) o.cpu = "native";
  o.model_name = NULL; /* fc_jit_create looks up the default `flowc_model` */
  FcTarget *target = NULL;
  FcStatus st = fc_verify(m, diag);
  /* The JIT links no collectives: an SBP program runs as an artefact under mpirun. */
  if (st == FC_OK && fc_module_mesh(m, NULL) > 0)
    st = fc_error(diag, FC_ERR_UNSUPPORTED, "the module is an SBP program (flow.mesh): build it with 'flowc build' and "
                                            "start it with mpirun");
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
  /* The JIT's machine is the host's: without the stamp, `--cpu x86-64-v3` code would be generated with
   * every feature of the host (AVX-512's 32 registers, VNNI's fused dots), not the CPU asked for. */
  if (st == FC_OK) fc_codegen_stamp_target(mod, fc_target_tm(target));
  if (st == FC_OK) fc_progress(&o.progress, "LLVM optimisation", NULL, 0, 0);
  if (st == FC_OK) st = fc_codegen_optimize(mod, fc_target_tm(target), o.opt_level, diag);
  fc_target_free(target);
  if (st != FC_OK) {
    if (mod) LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    return st;
  }
  fc_progress(&o.progress, "JIT compilation", NULL, 0, 0);
  return fc_jit_create(mod, ctx, out, diag); /* owns mod and ctx from here, also on failure */
}

/* The file bound to input `name` (index-th of the model's inputs) on the runtime's command line, or NULL.
 * Options with a value are those of frt_main (runtime/main.c); `--` ends the options. */
static const char *file_for(const FcRunArgs *a, const char *name, int index) {
  static const char *const with_value[] = {"--input", "--output-dir", "--output-format", "--threads", "--bench"};
  const char *named = NULL, *positional = NULL;
  int k = 0;
  bool options = true;
  for (int i = 1; i < a->argc; i++) {
    const char *s = a->argv[i];
    if (options && strcmp(s, "--") == 0) {
      options = false;
      continue;
    }
    if (!options || s[0] != '-') {
      if (k++ == index) positional = s;
      continue;
    }
    for (size_t w = 0; w < sizeof with_value / sizeof with_value[0]; w++) {
      size_t n = strlen(with_value[w]);
      if (strncmp(s, with_value[w], n) != 0 || (s[n] != '\0' && s[n] != '=')) continue;
      const char *v = s[n] == '=' ? s + n + 1 : i + 1 < a->argc ? a->argv[++i] : "";
      size_t len = strlen(name);
      if (w == 0 && strncmp(v, name, len) == 0 && v[len] == '=') named = v + len + 1;
      break;
    }
  }
  return named ? named : positional;
}

FcStatus fc_run_input_type(void *ctx, const char *name, int index, FcArena *arena, FcType *out,
                           const char **source, FcDiag *diag) {
  const char *path = file_for(ctx, name, index);
  if (!path) return FC_ERR_UNSUPPORTED;
  FrtTensor t;
  FrtError err = {0};
  if (frt_tensor_read(path, &t, &err) != FRT_OK) return fc_error(diag, FC_ERR_INPUT, "input '%s': %s", name, err.msg);
  FcDtype dt;
  bool known = fc_dtype_from_onnx((int)t.dtype, &dt);
  if (known) *out = fc_type_make(arena, dt, t.rank, t.dims);
  frt_tensor_free(&t);
  if (!known) return fc_error(diag, FC_ERR_INPUT, "input '%s': %s holds an unsupported element type", name, path);
  *source = fc_arena_strdup(arena, path);
  return FC_OK;
}
