/* pipeline.c — the -O pipelines and the driver that runs a pass list.
 *
 * A pipeline is a comma-separated list of registered pass names ("canonicalize,fold,dce"), the same
 * string --passes takes, so every -O level can be reproduced by hand. The whole list (and the
 * --print-before/--print-after names) is checked before the first pass runs: a typo at the end of a
 * list must not leave a half-transformed module behind an error.
 *
 * The levels:
 *   -O0  lower_quant only, the one lowering codegen requires (it has no kernel for quantize/dequantize).
 *        The importer and the parser already verify and infer every type, so the module is otherwise
 *        compiled as written.
 *   -O1  lower_quant,canonicalize,fold,dce — cheap local clean-up: identities, constant subgraphs, dead ops.
 *   -O2  shapes,canonicalize,fold,cse,sink_constants,canonicalize,fold,cse,dce — shapes first so that
 *        every type is consistent before anything matches on it; then two rounds of the local passes,
 *        because each exposes work for the others: folding makes constants that CSE merges, CSE turns
 *        select(c, k1, k2) with equal constants into select(c, k, k), which fold removes, and both
 *        leave reshape-of-constant and constant-first forms for canonicalize. The second round makes
 *        -O2 idempotent on every importable ONNX test model (a second -O2 run changes nothing), which
 *        one round alone does not. Between the rounds, sink_constants moves the constants that loops
 *        and ifs capture (folded by the first round: a recurrent layer's transposed weights) into their
 *        bodies, where the second round and the kernels see them as constants. Then the fusions, on the cleaned-up graph: fuse_layer_norm turns the
 *        written-out LayerNorm (ReduceMean, Sub, Pow, ...) into one layer_norm op before anything
 *        else can take its mul/add tail; eliminate_transpose removes layout-free transposes and
 *        sinks the rest (canonicalize merges the reshapes it leaves); decompose_conv_transpose makes
 *        a strided conv_transpose one conv per output phase (before calibration, so that int8 quantises
 *        them, and before anything packs weights); prune_conv_taps drops conv taps
 *        that read only padding (dilated convs on small maps), before anything packs the weights; fold_batchnorm folds
 *        per-channel scale/shift chains (inference BatchNormalization) into conv weights and biases
 *        (a QDQ model's f32 bias included, before fold_qdq converts it); fold_qdq turns the dequantize ->
 *        conv/matmul -> quantize patterns of quantised models into quantised convs/matmuls for the
 *        integer kernels; split_conv_bands cuts those whose taps read mostly padding into rectangles
 *        of outputs that read the same taps (the integer kernels compute every tap); lower_quant then writes the quantize/dequantize ops left as core ops (canonicalize and fold clean
 *        up after it: a dequantized constant weight becomes an f32 constant), so that fuse_epilogue finds the activation right after the conv and fuses it, with bias
 *        and residual adds, into the conv's or matmul's epilogue; hoist_avg_pool moves an average pool
 *        above the epilogue-free 1x1 conv feeding it (the conv then runs on the pooled map); layout then
 *        puts regions of convs (epilogues included) in the blocked layout NCHW8c where its kernels
 *        win, and canonicalize and fold clean up the layout changes it leaves (a per-channel
 *        constant's becomes a constant); fuse_elementwise merges the element-wise chains that are
 *        left into flow.fused loops. dce last removes what the rewrites left unused.
 *   -O3  the same as -O2 for now.
 *
 * Every pass runs on each graph of the module: the function, then the regions of its loops and ifs
 * (pre-order, fc_graph_walk), with m->graph pointed at the graph being transformed and put back after.
 * Regions are isolated from above and end in a terminator that fc_graph_return finds as it finds
 * func.return, so a pass written for one graph is correct on a body unchanged: DCE keeps what the yield
 * uses, fusions happen inside a GRU step, and a region op is an opaque pure op to the graph around it.
 * Regions are visited after the pass ran on the graph holding them, so the regions of an op the pass
 * erased are not transformed. A pass that does not apply to bodies says so itself (layout).
 *
 * With verify_each the verifier runs after every pass; a failure there is a flowc bug, reported as
 * FC_ERR_INTERNAL "after pass '<name>': <verifier message>". Dumps are headed the way mlir-opt heads
 * them, so the output of --print-after=all reads (and splits) like an MLIR dump.
 */
#include "passes.h"

#include <string.h>

static const char *const level_pipelines[4] = {
    "lower_quant",
    "lower_quant,canonicalize,fold,dce",
    "shapes,canonicalize,fold,cse,sink_constants,canonicalize,fold,cse,fuse_layer_norm,eliminate_transpose,canonicalize,"
    "decompose_conv_transpose,prune_conv_taps,fold_batchnorm,fold_qdq,split_conv_bands,lower_quant,canonicalize,fold,fuse_epilogue,hoist_avg_pool,layout,layout_i8,canonicalize,fold,"
    "fuse_elementwise,fuse_casts,dce",
    "shapes,canonicalize,fold,cse,sink_constants,canonicalize,fold,cse,fuse_layer_norm,eliminate_transpose,canonicalize,"
    "decompose_conv_transpose,prune_conv_taps,fold_batchnorm,fold_qdq,split_conv_bands,lower_quant,canonicalize,fold,fuse_epilogue,hoist_avg_pool,layout,layout_i8,canonicalize,fold,"
    "fuse_elementwise,fuse_casts,dce",
};

void fc_pipeline_options_default(FcPipelineOptions *o) {
  memset(o, 0, sizeof *o);
  o->passes = NULL;
  o->opt_level = 2;
  o->print_before = NULL;
  o->print_after = NULL;
  o->verify_each = false;
  o->dump = NULL;
  o->print.weights = false;
  o->print.inline_limit = FC_PRINT_INLINE_LIMIT_DEFAULT;
}

const char *fc_pipeline_for_level(int level) {
  if (level < 0) level = 0;
  if (level > 3) level = 3;
  return level_pipelines[level];
}

static bool is_space(char c) { return c == ' ' || c == '\t'; }

static const FcPassInfo *lookup_n(const char *s, size_t n) {
  for (int i = 0; i < fc_pass_count(); i++) {
    const FcPassInfo *p = fc_pass_at(i);
    if (strlen(p->name) == n && memcmp(p->name, s, n) == 0) return p;
  }
  return NULL;
}

/* Splits `list` at commas, trimming blanks around each name. Calls `fn` (when not NULL) for each
 * pass in order; stops at the first error. An empty list is valid and names no pass. */
typedef FcStatus (*PassVisit)(const FcPassInfo *p, void *ctx);

static FcStatus for_each_pass(const char *list, PassVisit fn, void *ctx, FcDiag *diag) {
  if (!list) return FC_OK;
  const char *p = list;
  while (is_space(*p)) p++;
  if (!*p) return FC_OK;
  for (;;) {
    const char *end = strchr(p, ',');
    if (!end) end = p + strlen(p);
    const char *b = p, *e = end;
    while (b < e && is_space(*b)) b++;
    while (e > b && is_space(e[-1])) e--;
    if (b == e) return fc_error(diag, FC_ERR_INPUT, "empty pass name in pass list '%.200s'", list);
    const FcPassInfo *info = lookup_n(b, (size_t)(e - b));
    if (!info) {
      char known[512] = "";
      for (int i = 0; i < fc_pass_count(); i++) {
        size_t len = strlen(known);
        snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "", fc_pass_at(i)->name);
      }
      int n = e - b > 64 ? 64 : (int)(e - b);
      return fc_error(diag, FC_ERR_INPUT, "unknown pass '%.*s'%s (passes: %s)", n, b, e - b > 64 ? "..." : "", known);
    }
    if (fn) {
      FcStatus st = fn(info, ctx);
      if (st != FC_OK) return st;
    }
    if (!*end) return FC_OK;
    p = end + 1;
  }
}

FcStatus fc_pipeline_check(const char *list, FcDiag *diag) { return for_each_pass(list, NULL, NULL, diag); }

/* A --print-before/--print-after value: NULL (no dumps), "all", or one registered pass. */
static FcStatus check_print_name(const char *name, const char *flag, FcDiag *diag) {
  if (!name || strcmp(name, "all") == 0 || fc_pass_lookup(name)) return FC_OK;
  return fc_error(diag, FC_ERR_INPUT, "unknown pass '%.64s' in %s", name, flag);
}

static bool print_matches(const char *sel, const FcPassInfo *p) {
  return sel && (strcmp(sel, "all") == 0 || strcmp(sel, p->name) == 0);
}

typedef struct RunCtx {
  FcModule *m;
  const FcPipelineOptions *o;
  FILE *dump;
  FcDiag *diag;
  int step, n_passes; /* for the progress report */
} RunCtx;

static FcStatus dump_ir(RunCtx *c, const char *when, const FcPassInfo *p) {
  fprintf(c->dump, "// -----// IR Dump %s %s //----- //\n", when, p->name);
  FcStatus st = fc_print_module(c->dump, c->m, &c->o->print, c->diag);
  fputc('\n', c->dump);
  fflush(c->dump);
  return st;
}

typedef struct GraphRun {
  const FcPassInfo *p;
  FcModule *m;
  FcPassContext *pc;
} GraphRun;

static FcStatus run_on_graph(FcGraph *g, void *ctx) {
  GraphRun *r = ctx;
  FcGraph *top = r->m->graph;
  r->m->graph = g;
  FcStatus st = r->p->fn(r->m, r->pc);
  r->m->graph = top;
  return st;
}

static FcStatus run_one(const FcPassInfo *p, void *ctx) {
  RunCtx *c = ctx;
  FcStatus st;
  fc_progress(&c->o->progress, "passes", p->name, ++c->step, c->n_passes);
  if (print_matches(c->o->print_before, p) && (st = dump_ir(c, "Before", p)) != FC_OK) return st;
  FcPassContext pc = {.target = c->o->target, .opt_level = c->o->opt_level, .quant = c->o->quant, .diag = c->diag};
  fc_arena_init(&pc.scratch);
  GraphRun r = {p, c->m, &pc};
  st = fc_graph_walk(c->m->graph, run_on_graph, &r);
  fc_arena_free(&pc.scratch);
  if (st != FC_OK) {
    /* A pass that fails must say why; an empty message would print as a bare "error:". */
    if (c->diag->status == FC_OK) fc_error(c->diag, st, "pass '%s' failed", p->name);
    return st;
  }
  if (c->o->verify_each) {
    FcDiag vd;
    fc_diag_init(&vd);
    if (fc_verify(c->m, &vd) != FC_OK)
      return fc_error(c->diag, FC_ERR_INTERNAL, "after pass '%s': %s", p->name, vd.msg);
  }
  if (print_matches(c->o->print_after, p) && (st = dump_ir(c, "After", p)) != FC_OK) return st;
  return FC_OK;
}

FcStatus fc_pipeline_run(FcModule *m, const FcPipelineOptions *o, FcDiag *diag) {
  const char *list = o->passes ? o->passes : fc_pipeline_for_level(o->opt_level);
  FcStatus st;
  if (!o->target) return fc_error(diag, FC_ERR_INTERNAL, "the pass pipeline needs a target description");
  if ((st = fc_pipeline_check(list, diag)) != FC_OK) return st;
  if ((st = check_print_name(o->print_before, "--print-before", diag)) != FC_OK) return st;
  if ((st = check_print_name(o->print_after, "--print-after", diag)) != FC_OK) return st;
  RunCtx c = {m, o, o->dump ? o->dump : stderr, diag, 0, 1};
  for (const char *p = list; *p; p++) c.n_passes += *p == ',';
  return for_each_pass(list, run_one, &c, diag);
}
