/* info.c — `flowc info`: one aligned block that says what a model is.
 *
 * It reports the module as imported (before any pass), so the op histogram shows how the importer
 * legalised the model: graph inputs and outputs with their types, ops by kind (most frequent first),
 * the constants as parameters (elements and bytes, taken from the types so elided text dumps count too),
 * and FLOPs. The FLOP convention is the common one: 2 per multiply-accumulate of conv, conv_transpose and
 * matmul (bias additions, activations and other elementwise work are not counted).
 *
 * An SBP build (--ranks N) also gets the cost model's predictions (passes/sbp_cost.h), made on the module
 * after the clean-up round that precedes the sbp pass: per rank and run, the time (compute + communication),
 * FLOPs, bytes sent, collectives and memory (weights + peak activations) of data, tensor, auto and an
 * assignment file side by side, with the constants of the host's CPU and its core count (the prediction is
 * for running here), and a summary of the plan the asked-for strategy applies.
 *
 * The block is two columns: a key (indented for list items) and its value; the key column is as wide
 * as the longest key, so names of any length stay aligned.
 */
#include "cli.h"
#include "memplan.h"
#include "passes.h"
#include "sbp_cost.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One row of the block. */
typedef struct Row {
  int indent;       /* 0 for a heading, 2 for a list item */
  const char *key;  /* arena string */
  const char *val;
} Row;

typedef struct Rows {
  Row *v;
  int n, cap;
  FcArena *arena;
} Rows;

static void add_row(Rows *r, int indent, const char *key, const char *val) {
  if (r->n == r->cap) {
    int cap = r->cap ? 2 * r->cap : 32;
    Row *nv = FC_NEW_ARRAY(r->arena, Row, (size_t)cap);
    if (r->n) memcpy(nv, r->v, (size_t)r->n * sizeof *nv);
    r->v = nv;
    r->cap = cap;
  }
  r->v[r->n++] = (Row){indent, key, val};
}

/* Names come from the model: control characters would break the block, so they print as '?'. */
static const char *clean_name(FcArena *a, const char *s) {
  if (!s || !*s) return "(unnamed)";
  char *c = fc_arena_strdup(a, s);
  for (char *p = c; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
  return c;
}

static const char *type_str(FcArena *a, const FcType *t) {
  char buf[512];
  return fc_arena_strdup(a, fc_type_str(t, buf, sizeof buf));
}

/* "1.64 MiB" style, for bytes (binary units). */
static const char *human_bytes(FcArena *a, int64_t b) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = (double)b;
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    u++;
  }
  return u == 0 ? fc_arena_printf(a, "%lld B", (long long)b) : fc_arena_printf(a, "%.2f %s", v, units[u]);
}

/* "3.63 G" style, for counts (decimal units); "" below 1000. */
static const char *human_count(FcArena *a, int64_t c) {
  static const char *const units[] = {"", "K", "M", "G", "T", "P", "E"};
  double v = (double)c;
  int u = 0;
  while (v >= 1000.0 && u < 6) {
    v /= 1000.0;
    u++;
  }
  return u == 0 ? "" : fc_arena_printf(a, "%.2f %s", v, units[u]);
}

typedef struct KindCount {
  FcOpKind kind;
  int64_t count;
} KindCount;

static int by_count_then_name(const void *x, const void *y) {
  const KindCount *a = x, *b = y;
  if (a->count != b->count) return a->count > b->count ? -1 : 1;
  return strcmp(fc_op_info(a->kind)->name, fc_op_info(b->kind)->name);
}

/* Op counts and constants of g and the regions in it (every op once), and its multiply-accumulates per
 * run: a loop's body counts once per iteration when its trip count is a constant (else once per row of
 * its scan outputs, or once), an if counts its larger branch. */
typedef struct OpStats {
  KindCount hist[FC_OP_COUNT];
  int64_t n_ops, n_consts, params, param_bytes;
  bool params_overflow, macs_overflow;
} OpStats;

static int64_t loop_iterations(const FcOp *loop) {
  const FcTensor *t = fc_value_const(loop->operands[0].value);
  if (t && t->type.dtype == FC_DT_I64 && t->type.rank == 0) {
    int64_t n = fc_tensor_get_i64(t, 0);
    return n > 0 ? n : 0;
  }
  return fc_loop_num_scan(loop) > 0 ? fc_loop_scan_len(loop) : 1;
}

static int64_t graph_stats(const FcGraph *g, OpStats *st) {
  int64_t macs = 0;
  fc_graph_for_each_op(g, op) {
    if (op->kind == FC_OP_RETURN || op->kind == FC_OP_YIELD) continue;
    st->hist[op->kind].count++;
    st->n_ops++;
    if (op->kind == FC_OP_CONSTANT && op->n_results == 1) {
      int64_t ne, nb;
      st->n_consts++;
      if (!fc_type_numel(&op->results[0].type, &ne) || !fc_type_nbytes(&op->results[0].type, &nb) ||
          !fc_checked_add(st->params, ne, &st->params) || !fc_checked_add(st->param_bytes, nb, &st->param_bytes))
        st->params_overflow = true;
    }
    int64_t om = 0;
    if (op->kind == FC_OP_LOOP) {
      if (!fc_checked_mul(graph_stats(op->regions[0], st), loop_iterations(op), &om)) st->macs_overflow = true;
    } else if (op->kind == FC_OP_IF) {
      int64_t a = graph_stats(op->regions[0], st), b = graph_stats(op->regions[1], st);
      om = a > b ? a : b;
    } else if (!fc_op_macs(op, &om)) {
      st->macs_overflow = true;
    }
    if (!fc_checked_add(macs, om, &macs)) st->macs_overflow = true;
  }
  return macs;
}

/* What the pipeline made of one conv or matmul, for the quantisation rows: NULL for a float op with nothing
 * to say. */
static const char *quant_state(FcArena *a, const FcOp *op) {
  const FcType *x = &op->operands[0].value->type, *w = &op->operands[1].value->type, *y = &op->results[0].type;
  if (x->quant && w->quant) {
    const FcQuant *wq = w->quant;
    return fc_arena_printf(a, "int8: %s x %s weights (%s) -> %s", fc_dtype_name(x->dtype), fc_dtype_name(w->dtype),
                           wq->axis >= 0 ? "per channel" : "per tensor",
                           y->quant ? fc_arena_printf(a, "%s, requantised", fc_dtype_name(y->dtype)) : "f32");
  }
  if (op->kind == FC_OP_MATMUL && fc_matmul_is_int8(x->dtype, w->dtype))
    return fc_arena_printf(a, "int8: %s x %s -> i32 (activations quantised at run time)", fc_dtype_name(x->dtype),
                           fc_dtype_name(w->dtype));
  const FcAnnotValue *note = fc_op_annot(op, fc_annot_name(FC_ANNOT_QUANT_NOTE));
  return note && note->kind == FC_AV_STR ? fc_arena_printf(a, "f32: %s", note->s) : NULL;
}

/* Per conv/matmul of every graph: what was quantised, and why not where a quantised model's op stayed in
 * float (fold_qdq's and quantize_static's notes). A float model gets one row. */
static void quant_rows(Rows *rows, FcArena *a, FcGraph *const *graphs, int n_graphs) {
  int total = 0, quantised = 0, noted = 0;
  for (int g = 0; g < n_graphs; g++) fc_graph_for_each_op(graphs[g], op) {
      if (op->kind != FC_OP_CONV && op->kind != FC_OP_MATMUL && op->kind != FC_OP_CONV_BLOCKED) continue;
      const char *s = quant_state(a, op);
      total++;
      quantised += s && strncmp(s, "int8", 4) == 0;
      noted += s != NULL;
    }
  if (!noted) {
    add_row(rows, 0, "quantised", fc_arena_printf(a, "none of %d conv/matmul ops (a float model: build with --quantize "
                                                     "to quantise it)", total));
    return;
  }
  add_row(rows, 0, "quantised", fc_arena_printf(a, "%d of %d conv/matmul ops run on integer kernels", quantised, total));
  for (int g = 0; g < n_graphs; g++) fc_graph_for_each_op(graphs[g], op) {
      if (op->kind != FC_OP_CONV && op->kind != FC_OP_MATMUL && op->kind != FC_OP_CONV_BLOCKED) continue;
      const char *s = quant_state(a, op);
      if (s) add_row(rows, 2, clean_name(a, fc_op_name(op)), fc_arena_printf(a, "%s %s", fc_op_info(op->kind)->name, s));
    }
}

/* An SBP program (the module has a mesh): the mesh, the collectives each rank runs, and every op that runs on
 * whole tensors although its operands arrived split (the sbp pass's flow.sbp_note). */
static void sbp_rows(Rows *rows, FcArena *a, FcModule *m) {
  const int64_t *mesh;
  int n_axes = fc_module_mesh(m, &mesh);
  int64_t ranks;
  if (!n_axes || !fc_mesh_group_size(m, -1, &ranks)) return;
  char dims[256] = "";
  for (int i = 0, len = 0; i < n_axes && len < (int)sizeof dims - 24; i++)
    len += snprintf(dims + len, sizeof dims - (size_t)len, "%s%lld", i ? "x" : "", (long long)mesh[i]);
  int count[FC_OP_COUNT] = {0}, noted = 0;
  fc_graph_for_each_op(m->graph, op) {
    count[op->kind]++;
    noted += fc_op_annot(op, fc_annot_name(FC_ANNOT_SBP_NOTE)) != NULL;
  }
  static const FcOpKind colls[] = {FC_OP_ALL_GATHER, FC_OP_ALL_REDUCE, FC_OP_REDUCE_SCATTER, FC_OP_ALL_TO_ALL};
  char list[512] = "";
  int total = 0;
  for (size_t i = 0, len = 0; i < sizeof colls / sizeof colls[0]; i++) {
    if (!count[colls[i]]) continue;
    total += count[colls[i]];
    len += (size_t)snprintf(list + len, sizeof list - len, "%s%d %s", len ? ", " : "", count[colls[i]],
                            fc_op_info(colls[i])->name);
  }
  add_row(rows, 0, "sbp", fc_arena_printf(a, "mesh %s (%lld ranks): %d collective%s per run%s%s%s, %d local slice%s; "
                                             "%d op%s on whole tensors", dims, (long long)ranks, total,
                                          total == 1 ? "" : "s", total ? " (" : "", list, total ? ")" : "",
                                          count[FC_OP_LOCAL_SLICE], count[FC_OP_LOCAL_SLICE] == 1 ? "" : "s", noted,
                                          noted == 1 ? "" : "s"));
  fc_graph_for_each_op(m->graph, op) {
    const FcAnnotValue *note = fc_op_annot(op, fc_annot_name(FC_ANNOT_SBP_NOTE));
    if (note && note->kind == FC_AV_STR)
      add_row(rows, 2, clean_name(a, fc_op_name(op)), fc_arena_printf(a, "%s: %s", fc_op_info(op->kind)->name, note->s));
  }
}

static const char *estimate_str(FcArena *a, const FcSbpEstimate *e) {
  return fc_arena_printf(a, "%.3f ms (compute %.3f, communication %.3f); %s FLOPs; %s sent in %d collective%s, %d local "
                            "slice%s; memory %s weights + %s activations%s",
                         e->total_s * 1e3, e->compute_s * 1e3, e->comm_s * 1e3, human_count(a, e->flops),
                         human_bytes(a, e->sent_bytes), e->n_collectives, e->n_collectives == 1 ? "" : "s", e->n_slices,
                         e->n_slices == 1 ? "" : "s", human_bytes(a, e->weight_bytes), human_bytes(a, e->peak_bytes),
                         e->fits ? "" : " (over the cap: refused)");
}

/* A value's signatures under p, one per plan axis: "S(0)" or "[S(0), S(1)]". */
static const char *sigs_str(FcArena *a, const FcSbpPlan *p, const FcSbp *sig) {
  char buf[256] = "";
  for (int i = 0, len = 0; i < p->n_axes && len < (int)sizeof buf - 32; i++) {
    char one[32];
    len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%s", i ? ", " : "", fc_sbp_str(sig[i], one, sizeof one));
  }
  return p->n_axes == 1 ? fc_arena_strdup(a, buf) : fc_arena_printf(a, "[%s]", buf);
}

/* What a plan does: ops by the signature of their first result, and its boxing (value, from -> to, size). */
static void plan_rows(Rows *rows, FcArena *a, const char *label, const FcSbpPlan *p) {
  int split = 0, partial = 0, whole = 0, na = p->n_axes;
  for (int k = 0; k < p->n_ops; k++) {
    const FcOp *op = p->ops[k];
    if (op->kind == FC_OP_CONSTANT || op->kind == FC_OP_RETURN || op->n_results == 0) continue;
    bool s = false, pp = false;
    for (int ax = 0; ax < na; ax++) s |= p->out[k][ax].kind == FC_SBP_S, pp |= p->out[k][ax].kind == FC_SBP_P;
    split += s && !pp, partial += pp, whole += !s && !pp;
  }
  add_row(rows, 0, label, fc_arena_printf(a, "%d ops split, %d partial sums, %d on whole tensors%s", split, partial,
                                          whole, na > 1 ? " (signatures per mesh axis)" : ""));
  int shown = 0, more = 0;
  for (int k = 0; k < p->n_ops; k++) {
    const FcOp *op = p->ops[k];
    for (int i = 0; i < op->n_operands; i++) {
      const FcValue *v = op->operands[i].value;
      if (!v || (v->def && v->def->kind == FC_OP_CONSTANT)) continue;
      FcSbp from[FC_SBP_MAX_AXES];
      const FcSbp *to = &p->need[k][(size_t)i * (size_t)na];
      bool all_b = true;
      for (int ax = 0; ax < na; ax++) from[ax] = fc_sbp_plan_sig_at(p, v, ax), all_b &= from[ax].kind == FC_SBP_B;
      if (fc_sbp_sigs_equal(p, from, to) || all_b) continue;
      if (shown == 12) {
        more++;
        continue;
      }
      const char *name = v->def ? fc_op_name(v->def) : v->name;
      add_row(rows, 2, clean_name(a, name), fc_arena_printf(a, "%s -> %s for %s, %s", sigs_str(a, p, from), sigs_str(a, p, to),
                                                           clean_name(a, fc_op_name(op)), type_str(a, &v->type)));
      shown++;
    }
  }
  if (more) add_row(rows, 2, "...", fc_arena_printf(a, "%d more boxing op%s (flowc build --emit ir shows them)", more, more == 1 ? "" : "s"));
}

/* This host's cost-model constants (its CPU's, its cores); NULL with d's message when it cannot tell. */
static FcTarget *host_costs(FcSbpCosts *k, FcDiag *d) {
  FcCodegenOptions co = {.cpu = "native"};
  FcTarget *host = NULL;
  if (fc_target_resolve(&co, &host, d) != FC_OK) return NULL;
  *k = host->sbp;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  k->cores = cores > 0 && cores < 1 << 20 ? (int)cores : 0;
  return host;
}

/* The prediction of a pipeline placement, on m with its stages placed and micro-batches cut. */
static void stage_rows(Rows *rows, FcArena *a, FcModule *m) {
  FcDiag d;
  fc_diag_init(&d);
  FcSbpCosts k;
  FcTarget *host = host_costs(&k, &d);
  FcStageEstimate e;
  if (!host || fc_stage_estimate(&k, m, a, &e, &d) != FC_OK) {
    add_row(rows, 0, "pipeline", fc_arena_printf(a, "not predicted: %s", d.msg));
    fc_target_free(host);
    return;
  }
  int64_t all = 1;
  fc_mesh_group_size(m, -1, &all);
  int64_t per = all / e.n_stages;
  add_row(rows, 0, "pipeline", fc_arena_printf(a, "%d stages: predicted %.3f ms a run on this host (%s; link %.1f GB/s, "
                                                  "%.1f us a step); the same ops back to back on one rank %.3f ms",
                                               e.n_stages, e.total_s * 1e3, host->level, k.link_gbps, k.link_latency_us,
                                               e.one_rank_s * 1e3));
  for (int s = 0; s < e.n_stages; s++) {
    const FcStageCost *c = &e.stage[s];
    const char *ranks = per == 1 ? fc_arena_printf(a, "rank %lld", (long long)s)
                                 : fc_arena_printf(a, "ranks %lld-%lld", (long long)(s * per), (long long)(s * per + per - 1));
    add_row(rows, 2, fc_arena_printf(a, "stage %d", s),
            c->n_ops == 0 ? fc_arena_printf(a, "%s: no ops", ranks)
                          : fc_arena_printf(a, "%s: %d ops from '%s' to '%s', busy %.3f ms, weights %s, sends %s in %d transfer%s",
                                            ranks, c->n_ops, clean_name(a, fc_op_name(c->first)),
                                            clean_name(a, fc_op_name(c->last)), c->busy_s * 1e3,
                                            human_bytes(a, c->weight_bytes), human_bytes(a, c->sent_bytes), c->sends,
                                            c->sends == 1 ? "" : "s"));
  }
  fc_target_free(host);
}

/* The predictions of an SBP build, on m after the clean-up round (the caller runs it). */
static void predict_rows(Rows *rows, FcArena *a, FcModule *m, const char *strategy) {
  FcDiag d;
  fc_diag_init(&d);
  FcSbpCosts k;
  FcTarget *host = host_costs(&k, &d);
  if (!host) {
    add_row(rows, 0, "sbp predicted", fc_arena_printf(a, "not predicted: %s", d.msg));
    return;
  }
  int64_t ranks = 1;
  fc_mesh_group_size(m, -1, &ranks);
  FcSbpPlan plan, file;
  FcSbpChoiceReport r;
  bool has_file = fc_annots_get(&m->annots, fc_annot_name(FC_ANNOT_SBP_FILE)) != NULL;
  if (ranks < 2) {
    add_row(rows, 0, "sbp predicted", "one rank: the one-process program");
  } else if (fc_sbp_auto_plan(m, &k, a, &plan, &r, &d) != FC_OK) {
    add_row(rows, 0, "sbp predicted", fc_arena_printf(a, "not predicted: %s", d.msg));
  } else {
    add_row(rows, 0, "sbp predicted",
            fc_arena_printf(a, "per rank and run on this host (%s, %lld rank%s on %d core%s; link %.1f GB/s, %.1f us a "
                               "step; cap %s a rank)", host->level, (long long)ranks, ranks == 1 ? "" : "s", k.cores,
                            k.cores == 1 ? "" : "s", k.link_gbps, k.link_latency_us, human_bytes(a, k.mem_cap_bytes)));
    add_row(rows, 2, "data", estimate_str(a, &r.data));
    add_row(rows, 2, "tensor", estimate_str(a, &r.tensor));
    if (r.axes_list) add_row(rows, 2, r.axes_list, fc_arena_printf(a, "%s; per mesh axis", estimate_str(a, &r.axes)));
    add_row(rows, 2, "auto", fc_arena_printf(a, "%s; %s", estimate_str(a, &r.chosen),
                                             strcmp(r.taken, "search") == 0
                                                 ? "the search's plan"
                                                 : fc_arena_printf(a, "%s's plan (the search's: %.3f ms)", r.taken,
                                                                   r.searched.total_s * 1e3)));
    if (has_file) {
      FcSbpEstimate fe;
      if (fc_sbp_file_plan(m, a, &file, &d) == FC_OK) {
        fc_sbp_estimate(&k, &file, a, &fe);
        add_row(rows, 2, "file", estimate_str(a, &fe));
      } else {
        add_row(rows, 2, "file", fc_arena_printf(a, "not predicted: %s", d.msg));
        has_file = false;
      }
    }
    const FcAnnotValue *axes = fc_annots_get(&m->annots, fc_annot_name(FC_ANNOT_SBP_AXES));
    /* pipeline,X: the stages' prediction follows (stage_rows), not a plan over every rank. */
    if (strcmp(strategy, "axes") == 0 && axes && axes->kind == FC_AV_STR && axes->s && strncmp(axes->s, "pipeline,", 9) != 0) {
      /* --sbp A,B: that per-axis plan, its prediction and what it does. */
      FcSbpPlan ap;
      FcSbpEstimate ae;
      if (fc_sbp_axes_plan(m, axes->s, a, &ap, &d) == FC_OK) {
        fc_sbp_estimate(&k, &ap, a, &ae);
        if (!r.axes_list || strcmp(r.axes_list, axes->s) != 0)
          add_row(rows, 2, axes->s, fc_arena_printf(a, "%s; per mesh axis", estimate_str(a, &ae)));
        plan_rows(rows, a, fc_arena_printf(a, "sbp %s plan", axes->s), &ap);
      } else {
        add_row(rows, 2, axes->s, fc_arena_printf(a, "not predicted: %s", d.msg));
      }
    }
    if (strcmp(strategy, "auto") == 0) plan_rows(rows, a, "sbp auto plan", &plan);
    else if (strcmp(strategy, "file") == 0 && has_file) plan_rows(rows, a, "sbp file plan", &file);
  }
  fc_target_free(host);
}

FcStatus fc_info_print(FILE *out, FcModule *m, const char *path, FcModelFormat format, const char *passes,
                       FcDiag *diag) {
  /* Scratch strings live in their own arena, freed on return, so the module is left as it was. */
  FcArena scratch;
  fc_arena_init(&scratch);
  FcArena *a = &scratch;
  Rows rows = {.arena = a};
  FcGraph *g = m->graph;

  add_row(&rows, 0, "model", clean_name(a, path));
  add_row(&rows, 0, "format", fc_model_format_name(format));

  add_row(&rows, 0, "inputs", fc_arena_printf(a, "%d", g->n_inputs));
  for (int i = 0; i < g->n_inputs; i++)
    add_row(&rows, 2, clean_name(a, g->inputs[i]->name), type_str(a, &g->inputs[i]->type));

  int n_out = fc_graph_num_outputs(g);
  add_row(&rows, 0, "outputs", fc_arena_printf(a, "%d", n_out));
  for (int i = 0; i < n_out; i++)
    add_row(&rows, 2, clean_name(a, fc_graph_output_name(g, i)), type_str(a, &fc_graph_output(g, i)->type));

  OpStats st = {0};
  KindCount *hist = st.hist;
  for (int k = 0; k < FC_OP_COUNT; k++) hist[k] = (KindCount){(FcOpKind)k, 0};
  int64_t macs = graph_stats(g, &st);
  int64_t n_ops = st.n_ops, n_consts = st.n_consts, params = st.params, param_bytes = st.param_bytes;
  bool params_overflow = st.params_overflow, macs_overflow = st.macs_overflow;
  qsort(hist, FC_OP_COUNT, sizeof *hist, by_count_then_name);

  add_row(&rows, 0, "ops", fc_arena_printf(a, "%lld", (long long)n_ops));
  for (int k = 0; k < FC_OP_COUNT && hist[k].count; k++)
    add_row(&rows, 2, fc_op_info(hist[k].kind)->name, fc_arena_printf(a, "%lld", (long long)hist[k].count));

  const char *cs = n_consts == 1 ? "" : "s";
  if (params_overflow)
    add_row(&rows, 0, "parameters", fc_arena_printf(a, "too many to count in %lld constant%s", (long long)n_consts, cs));
  else
    add_row(&rows, 0, "parameters",
            fc_arena_printf(a, "%lld in %lld constant%s, %s", (long long)params, (long long)n_consts, cs,
                            param_bytes < 1024 ? fc_arena_printf(a, "%lld bytes", (long long)param_bytes)
                                               : fc_arena_printf(a, "%lld bytes (%s)", (long long)param_bytes,
                                                                 human_bytes(a, param_bytes))));

  static const char convention[] = "2 per multiply-accumulate of conv, conv_transpose and matmul";
  int64_t flops;
  if (macs_overflow || !fc_checked_mul(macs, 2, &flops)) {
    add_row(&rows, 0, "flops", fc_arena_printf(a, "more than %lld (%s)", (long long)INT64_MAX, convention));
  } else {
    const char *h = human_count(a, flops);
    add_row(&rows, 0, "flops", *h ? fc_arena_printf(a, "%lld (%s; %s)", (long long)flops, h, convention)
                                   : fc_arena_printf(a, "%lld (%s)", (long long)flops, convention));
  }

  /* The workspace the memory planner lays out after the default pipeline for the default target (an
   * artefact's), beside the naive sum of all intermediate values. The pipeline changes the module, so
   * this comes after every other row. */
  FcPipelineOptions po;
  fc_pipeline_options_default(&po);
  FcDiag pd;
  fc_diag_init(&pd);
  FcMemPlan plan;
  FcCodegenOptions co = {.opt_level = po.opt_level};
  FcTarget *target = NULL;
  bool planned = fc_target_resolve(&co, &target, &pd) == FC_OK;
  po.target = target;
  po.passes = passes;
  /* An SBP build: the clean-up round before the sbp pass, the predictions, then the rest of the pipeline. */
  const char *sbp = passes ? strstr(passes, "sbp_") : NULL;
  if (planned && sbp && fc_module_mesh(m, NULL)) {
    po.passes = sbp == passes ? "shapes" : fc_arena_printf(a, "%.*s", (int)(sbp - passes - 1), passes);
    planned = fc_pipeline_run(m, &po, &pd) == FC_OK;
    if (planned) predict_rows(&rows, a, m, fc_arena_printf(a, "%.*s", (int)strcspn(sbp + 4, ","), sbp + 4));
    po.passes = sbp;
  }
  /* A pipeline placement: the passes up to split_stages (stages placed, micro-batches cut, a 2-D mesh's other
   * axes planned), its prediction. */
  const char *rest = po.passes, *stages = rest ? strstr(rest, "split_stages") : NULL;
  if (planned && stages && fc_module_mesh(m, NULL)) {
    if (stages > rest) {
      po.passes = fc_arena_printf(a, "%.*s", (int)(stages - rest - 1), rest);
      planned = fc_pipeline_run(m, &po, &pd) == FC_OK;
    }
    if (planned) stage_rows(&rows, a, m);
    po.passes = stages;
  }
  planned = planned && fc_pipeline_run(m, &po, &pd) == FC_OK && fc_memplan(m, NULL, a, &plan, &pd) == FC_OK;
  fc_target_free(target);
  /* Each loop or if body has a plan and an area of its own (codegen/cg_module.c): they add up. */
  int n_graphs = planned ? fc_module_graphs(m, NULL, 0) : 0;
  FcGraph **graphs = FC_NEW_ARRAY(a, FcGraph *, (size_t)(n_graphs ? n_graphs : 1));
  fc_module_graphs(m, graphs, n_graphs);
  for (int i = 1; i < n_graphs && planned; i++) {
    FcMemPlan rp;
    planned = fc_memplan_graph(graphs[i], NULL, a, &rp, &pd) == FC_OK &&
              fc_checked_add(plan.workspace_bytes, rp.workspace_bytes, &plan.workspace_bytes) &&
              fc_checked_add(plan.naive_bytes, rp.naive_bytes, &plan.naive_bytes);
    if (!planned && pd.status == FC_OK) fc_error(&pd, FC_ERR_LIMIT, "the workspace size overflows");
  }
  if (planned) quant_rows(&rows, a, graphs, n_graphs);
  if (planned) sbp_rows(&rows, a, m);
  if (planned)
    add_row(&rows, 0, "workspace",
            fc_arena_printf(a, "%lld bytes planned after -O2 (%s)%s; %lld bytes if every intermediate had its own",
                            (long long)plan.workspace_bytes, human_bytes(a, plan.workspace_bytes),
                            fc_module_mesh(m, NULL) ? " per rank" : "", (long long)plan.naive_bytes));
  else
    add_row(&rows, 0, "workspace", fc_arena_printf(a, "not planned: %s", pd.msg));

  size_t width = 0;
  for (int i = 0; i < rows.n; i++) {
    size_t w = (size_t)rows.v[i].indent + strlen(rows.v[i].key);
    if (w > width) width = w;
  }
  for (int i = 0; i < rows.n; i++) {
    const Row *r = &rows.v[i];
    int pad = (int)(width - (size_t)r->indent - strlen(r->key)) + 2;
    fprintf(out, "%*s%s%*s%s\n", r->indent, "", r->key, pad, "", r->val);
  }
  fc_arena_free(&scratch);
  if (fflush(out) != 0 || ferror(out)) return fc_error(diag, FC_ERR_IO, "cannot write the summary");
  return FC_OK;
}
