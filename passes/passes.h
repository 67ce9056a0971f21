/* passes.h — the pass registry and the pipeline driver: one internal header for passes/.
 *
 * Every pass is one file (passes/<name>.c) with one entry point `FcStatus fc_pass_<name>(FcModule *,
 * FcPassContext *)`, listed once in passes.def; the registry feeds both `--passes=a,b,c` and the -O0..-O3
 * pipelines. The driver runs a list, dumps IR before/after passes on request, and runs the verifier
 * after each pass with --verify-each.
 *
 * A pass asks the context, as LLVM passes ask TargetTransformInfo, for what depends on the target (the
 * layout's block and costs, whether a conv goes through Winograd: target.h) and on the build (-O level);
 * nothing target-specific is hard-coded in a pass. Its scratch arena holds what the pass needs only
 * while it runs (tables, work lists; never IR) and is released after the pass.
 */
#ifndef FLOWC_PASSES_H
#define FLOWC_PASSES_H

#include <stdio.h>

#include "ir.h"
#include "target.h"

/* How quantize_static quantises (flowc build --quantize int8 --quantize-*). The defaults (all zero): u8
 * asymmetric activations, i8 symmetric weights per output channel, no node skipped, and on targets whose
 * u8 x i8 dot can saturate (fc_target_i8_gemm without VNNI) weights in [-64, 64]. */
typedef enum FcQuantActivations {
  FC_QACT_ASYM_U8, /* scale = (hi - lo) / 255, zero point in [0, 255] so that 0.0 is exact */
  FC_QACT_SYM_I8,  /* scale = max(|lo|, |hi|) / 127, zero point 0 */
} FcQuantActivations;
typedef enum FcQuantReduce {
  FC_QREDUCE_WEIGHTS,     /* full-range activations, weights in [-64, 64] */
  FC_QREDUCE_ACTIVATIONS, /* u8 activations in [0, 127] (i8 in [-64, 63]), weights +-127 */
} FcQuantReduce;
typedef struct FcQuantOptions {
  bool per_tensor_weights;        /* one weight scale per tensor instead of one per output channel */
  FcQuantActivations activations;
  FcQuantReduce reduce;           /* what gives up a bit where the target's int8 dot saturates */
  const char *const *skip;        /* node names (op loc) kept in float */
  int n_skip;
  /* The CPU whose integer dot the quantisation choices follow (the reduced weight or activation range where
   * vpmaddubsw saturates): a multiversioned artefact's most portable variant, so that every variant computes
   * the same model and stores its weights once. NULL: the module's own target. */
  const FcTarget *int8_target;
} FcQuantOptions;

typedef struct FcPassContext {
  const FcTarget *target; /* what the module is compiled for (never NULL) */
  int opt_level;          /* the build's -O level, 0..3 */
  const FcQuantOptions *quant; /* quantize_static's choices; NULL: the defaults */
  FcDiag *diag;           /* where the pass reports a failure */
  FcArena scratch;        /* released after each pass: temporary tables, never IR */
} FcPassContext;

/* The target whose integer dot the quantisation passes follow (FcQuantOptions.int8_target, else pc's own). */
static inline const FcTarget *fc_pass_int8_target(const FcPassContext *pc) {
  return pc->quant && pc->quant->int8_target ? pc->quant->int8_target : pc->target;
}

/* The ranges quantize_static gives up where target t's int8 dot is vpmaddubsw (no VNNI), which could saturate
 * on full-range u8 x +-127: with options o (NULL: the defaults) either the activations lose their top bit
 * (*reduce_acts) or the weights do (*weight_qmax 64; 127 otherwise). quantize-report names the same choice. */
void fc_quant_reduced_ranges(const FcQuantOptions *o, const FcTarget *t, bool *reduce_acts, int *weight_qmax);

/* quantize_dynamic's rewrite of one op (quantize_dynamic.c): a matmul by a constant f32 B that qualifies becomes
 * the integer GEMM of activations quantised per run; any other op is left as it is. quantize_static calls it
 * for the matmuls calibration saw no range for (loop bodies: an RNN's recurrent matmuls). */
FcStatus fc_quantize_matmul_dynamic(FcModule *m, FcOp *op, FcPassContext *pc);

typedef FcStatus (*FcPassFn)(FcModule *m, FcPassContext *pc);

typedef struct FcPassInfo {
  const char *name; /* as given to --passes and --print-after */
  FcPassFn fn;
  const char *help; /* one line for `flowc build --help` */
} FcPassInfo;

#define FC_PASS(name, help) FcStatus fc_pass_##name(FcModule *m, FcPassContext *pc);
#include "passes.def"
#undef FC_PASS

int fc_pass_count(void);
const FcPassInfo *fc_pass_at(int i);
const FcPassInfo *fc_pass_lookup(const char *name); /* NULL if unknown */

typedef struct FcPipelineOptions {
  const FcTarget *target;   /* required: the description codegen then uses (fc_target_resolve) */
  const char *passes;       /* explicit "a,b,c" list; NULL: the pipeline of opt_level */
  int opt_level;            /* 0..3 */
  const char *print_before; /* a pass name, "all", or NULL */
  const char *print_after;  /* a pass name, "all", or NULL */
  bool verify_each;         /* run fc_verify after every pass */
  FILE *dump;               /* where IR dumps go (NULL: stderr) */
  FcPrintOptions print;     /* how dumps print */
  FcProgress progress;      /* "passes", one step per pass run */
  const FcQuantOptions *quant; /* handed to the passes (quantize_static); NULL: the defaults */
} FcPipelineOptions;

void fc_pipeline_options_default(FcPipelineOptions *o);
/* The comma-separated pass list of -O<level> (level clamped to 0..3). */
const char *fc_pipeline_for_level(int level);
/* Checks a list ("a,b,c") names only registered passes; FC_ERR_INPUT naming the first unknown one. */
FcStatus fc_pipeline_check(const char *list, FcDiag *diag);
/* Runs the pipeline for o->target (FC_ERR_INTERNAL without one). Dumps are headed
 * `// -----// IR Dump After <name> //----- //` as MLIR does. */
FcStatus fc_pipeline_run(FcModule *m, const FcPipelineOptions *o, FcDiag *diag);

#endif /* FLOWC_PASSES_H */
