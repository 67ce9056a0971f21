/* cg_private.h — the per-module codegen state shared by cg_module.c (which owns it) and cg_util.c (whose
 * fc_cg_flag_error needs the current kernel's status word). Kernel emitters never include this: they
 * see only FcKernel and the helpers of codegen.h.
 */
#ifndef FLOWC_CG_PRIVATE_H
#define FLOWC_CG_PRIVATE_H

#include "codegen.h"
#include "memplan.h"

typedef struct FcCgStored FcCgStored; /* cg_weights_once.c: one blob expanded before the first run */

struct FcCg {
  FcModule *m;
  const FcCodegenOptions *opts;
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMTargetMachineRef tm;
  const FcTarget *target;
  FcArena *arena;       /* the module's arena: plan arrays and per-kernel scratch */
  FcMemPlan plan;
  LLVMTypeRef ptr, i8, i32, i64, v;
  LLVMValueRef *const_globals; /* by constant ordinal (memplan's `index` of FC_BUF_CONSTANT); made on first use */
  FcOp **const_ops;            /* by constant ordinal: the constant op (NULL when unused) */
  int n_consts;
  FcCgStored *stored;          /* blobs stored in 16 bits or derived at run time, expanded before the first run */
  int n_stored, cap_stored;
  /* The kernel being emitted. */
  int kernel_index;     /* its position in flowc_model.kernel_names */
  LLVMValueRef status;  /* ptr to the run's i32 status word, loaded in the kernel's entry block */
  LLVMValueRef scratch_base; /* ptr to the scratch area (ctx slot after the status word) */
  int64_t kernel_scratch;    /* bytes per slot the current kernel asked for (0: none) */
  int64_t scratch_slot_max;  /* the largest request of any kernel (rounded to 64) */
  bool kernel_coarse;        /* the current kernel wants one chunk per thread */
  int kernels_shared;        /* kernels that reuse an identical earlier kernel's function */
  LLVMValueRef kernel_subst[64]; /* operand slot -> the global passed instead (fc_kernel_substitute_operand) */
};

/* cg_cpu_guard.c: the features of runtime/cpu_features.def (those the runtime can detect) that the
 * target's code may use, comma-separated in LLVM's spelling, into buf (cap bytes); "" for targets other
 * than x86-64. */
void fc_cg_cpu_features(const FcTarget *t, char *buf, size_t cap);
/* Compiles fn for the baseline of the target's architecture ("target-cpu" x86-64, no features): code that
 * runs before the CPU check. */
void fc_cg_baseline_fn(LLVMModuleRef mod, const FcTarget *t, LLVMValueRef fn);

/* cg_module.c: a private constant global (64-byte aligned) holding n bytes copied from data. */
LLVMValueRef fc_cg_bytes_global(FcCg *cg, const char *name, const void *data, size_t n);

/* cg_weights_once.c: the global kernels read for `count` f32 values stored as `storage` (FC_DT_F16 or
 * FC_DT_BF16: a 16-bit copy in the artefact and a zeroed f32 buffer that the expansion fills; anything else:
 * fc_cg_bytes_global). */
LLVMValueRef fc_cg_weights_global(FcCg *cg, const char *name, const float *data, size_t count, FcDtype storage);
/* Ends the run function's entry block (b at its end) with the one-time expansion of every blob stored
 * so far, then a branch to `next`; only the branch when nothing is stored. Call after every global is made. */
void fc_cg_weights_expand_once(FcCg *cg, LLVMBuilderRef b, LLVMBasicBlockRef next);

/* cg_unsupported.c: ops code generation cannot handle — no emitter for the kind (reason NULL), or the emitter
 * refused it — collected, then reported once: "<head>: det x1 ('d'), cast x2 ('a', 'b': f16 to i4 is not
 * supported)" (FC_ERR_UNSUPPORTED). */
typedef struct FcCgUnsupported {
  FcOpKind kind;
  const char *node, *reason;
  int seq;
} FcCgUnsupported;
typedef struct FcCgUnsupportedList {
  FcCgUnsupported *v;
  int n, cap;
} FcCgUnsupportedList;
void fc_cg_unsupported_add(FcArena *a, FcCgUnsupportedList *l, const FcOp *op, const char *reason);
FcStatus fc_cg_report_unsupported(FcCgUnsupportedList *l, const char *head, FcDiag *diag);
/* An emitter's message without the "node '<name>' (<op>): " prefix the list supplies itself. */
const char *fc_cg_strip_node_prefix(FcArena *a, const FcOp *op, const char *msg);

#endif /* FLOWC_CG_PRIVATE_H */
