/* sbp_cost.c — the SBP cost model: what a plan (sbp.h) costs one rank per run, in predicted seconds, bytes
 * sent and bytes held (sbp_cost.h). The constants are the target's (FcSbpCosts, target.h), never this file's.
 *
 * Compute: a matmul or conv runs at the GEMM's speed scaled down where the local product is thin (fewer than
 * 8 rows, 64 columns or 64 reduction steps: the register tile and the vector lanes go part empty), or at the
 * memory bandwidth over the bytes it touches if that is longer (a roofline); on top of that it reads its
 * constant weights once per run from beyond L2 (weight_gbps: the kernels overlap little of that stream with
 * their FMAs, which is what makes a product of few rows slower than its FLOPs say), or packs a right operand
 * computed at run time (pack_gbps: attention's keys and values). Every other op touches its local operands
 * and results at the memory bandwidth, and one that evaluates exp, tanh, erf ... (softmax too) pays
 * transcendental_ns an element of its result; each op also pays a fixed cost. A reshape is a view.
 * The model sees the graph before fusion, so a chain of element-wise ops is priced op by op: mem_gbps is
 * fitted to whole programs (target.c) rather than to one kernel.
 *
 * Communication: each value is boxed once per signature its consumers take it in (sbp.c reuses a boxed value).
 * A collective over G ranks of a tensor of n bytes costs steps * latency + factor * n / link bandwidth, with
 * the ring algorithm's steps and factors: all_reduce 2(G-1) steps, 2(G-1)/G; all_gather and reduce_scatter
 * G-1, (G-1)/G; all_to_all G-1, (G-1)/G^2 (each rank's chunk is n/G). A local slice (B -> S) copies n/G bytes.
 * When the ranks outnumber the cores they share (FcSbpCosts.cores), everything slows by ranks / cores (and
 * crowd_extra), and each collective waits crowd_sync_us more for the scheduler to have run every rank up to
 * it (a rank that arrives yields its core to the one it waits for, which may sit on the other core). A
 * per-axis plan boxes in steps (fc_sbp_steps), each priced as one collective over its axis's group on the
 * tensor as that group sees it (cut by the other axes); an op's work divides by the group of every axis on
 * which it is split.
 *
 * A rank-specialised build (the plan's module names its rank, flow.rank) folds a constant's local slices
 * at compile time (pass fold_rank): they cost nothing per run, and the split weight is no longer copied and
 * repacked by its GEMM on each run. flowc info sets flow.rank where the build would specialise, so it
 * predicts what the build does.
 *
 * Memory: every constant whole (a rank's program stores all weights; a split weight's slice is a copy made
 * per run; a rank-specialised program holds only the chunks of a weight no op takes whole) plus the peak of the values live at once in op order, each at its local size, boxed copies
 * from their first to their last consumer. It is an upper bound of what the memory planner lays out (that
 * one reuses buffers in place too).
 */
#include "sbp_cost.h"

#include <math.h>
#include <string.h>

FcStatus fc_sbp_costs_check(const FcSbpCosts *k, FcDiag *diag) {
  if (!(k->gemm_gflops > 0) || !(k->mem_gbps > 0) || !(k->link_gbps > 0) || k->mem_cap_bytes <= 0)
    return fc_error(diag, FC_ERR_INPUT, "the target description has no SBP cost model (FcSbpCosts)");
  return FC_OK;
}

static double bytes_of(const FcType *t) {
  int64_t b;
  return fc_type_nbytes(t, &b) ? (double)b : 1e30;
}


/* Ranks beyond the cores they share take turns, and lose more to the shared caches and the switches
 * between them (crowd_extra, measured). */
static double crowding(const FcSbpCosts *k, int64_t g) {
  return k->cores > 0 && g > k->cores ? (double)g / k->cores * (k->crowd_extra >= 1 ? k->crowd_extra : 1) : 1.0;
}

static double fill(double n, double full) { return n >= full ? 1.0 : n > 0 ? n / full : 1.0 / full; }

/* The GEMM's efficiency at local sizes rows M, columns N, reduction K. */
static double gemm_efficiency(double m, double n, double kk) { return fill(m, 8) * fill(n, 64) * fill(kk, 64); }

/* Ops that evaluate a transcendental function per element of their result (softmax an exp). */
static bool transcendental(FcOpKind kind) {
  switch (kind) {
  case FC_OP_EXP: case FC_OP_LOG: case FC_OP_SIN: case FC_OP_COS: case FC_OP_TAN: case FC_OP_ASIN:
  case FC_OP_ACOS: case FC_OP_ATAN: case FC_OP_SINH: case FC_OP_COSH: case FC_OP_TANH: case FC_OP_ASINH:
  case FC_OP_ACOSH: case FC_OP_ATANH: case FC_OP_ERF: case FC_OP_SIGMOID: case FC_OP_SOFTPLUS:
  case FC_OP_SOFTMAX: case FC_OP_LOG_SOFTMAX: return true;
  default: return false;
  }
}

static double prod_dims(const FcType *t, int from, int to) {
  double p = 1;
  for (int i = from; i < to && i < t->rank; i++) p *= (double)t->dims[i];
  return p;
}

/* Bytes one rank holds of a value of type t under signatures sig (one per plan axis). */
static double plan_local_bytes(const FcSbpPlan *p, const FcType *t, const FcSbp *sig) {
  double b = bytes_of(t);
  for (int a = 0; a < p->n_axes; a++)
    if (sig[a].kind == FC_SBP_S) b /= (double)p->axis_group[a];
  return b;
}

double fc_sbp_op_seconds(const FcSbpCosts *k, const FcSbpPlan *p, int idx, const FcSbp *need, const FcSbp *out,
                         int64_t *flops) {
  const FcOp *op = p->ops[idx];
  int na = p->n_axes;
  if (flops) *flops = 0;
  if (op->kind == FC_OP_CONSTANT || op->kind == FC_OP_RETURN || op->kind == FC_OP_RESHAPE) return 0;
  double bytes = 0, share = 1; /* share: the ranks among which the op's work is split */
  bool split[FC_SBP_MAX_AXES] = {false};
  for (int i = 0; i < op->n_operands; i++) {
    if (!op->operands[i].value) continue;
    bytes += plan_local_bytes(p, &op->operands[i].value->type, &need[i * na]);
    for (int a = 0; a < na; a++) split[a] |= need[i * na + a].kind != FC_SBP_B;
  }
  for (int j = 0; j < op->n_results; j++) {
    bytes += plan_local_bytes(p, &op->results[j].type, &out[j * na]);
    for (int a = 0; a < na; a++) split[a] |= out[j * na + a].kind != FC_SBP_B;
  }
  for (int a = 0; a < na; a++)
    if (split[a]) share *= (double)p->axis_group[a];
  double t = bytes / (k->mem_gbps * 1e9);
  if (transcendental(op->kind) && op->n_results == 1)
    t += plan_local_bytes(p, &op->results[0].type, out) / (double)fc_dtype_size(op->results[0].type.dtype) *
         k->transcendental_ns * 1e-9;
  int64_t macs = 0;
  if ((op->kind == FC_OP_MATMUL || op->kind == FC_OP_CONV) && fc_op_macs(op, &macs) && macs > 0) {
    double m, n, kk;
    const FcType *a = &op->operands[0].value->type, *b = &op->operands[1].value->type, *r = &op->results[0].type;
    int rr = r->rank;
    bool rows_fold = op->kind == FC_OP_MATMUL && b->rank <= 2;
    if (op->kind == FC_OP_MATMUL) {
      /* A 2-D right operand is shared by every matrix of a batched left one, so the kernel runs one
       * product whose rows are all of the left operand's leading dims (a [128, 1, 256] by [256, 768] is 128
       * rows, not 128 products of one row); a split of any of those dims splits the rows. */
      m = rows_fold ? prod_dims(a, 0, a->rank - 1) : a->rank >= 2 ? (double)a->dims[a->rank - 2] : 1;
      kk = a->rank >= 1 ? (double)a->dims[a->rank - 1] : 1;
      n = b->rank >= 2 ? (double)b->dims[b->rank - 1] : 1;
    } else {
      m = b->rank >= 1 ? (double)b->dims[0] : 1;
      kk = prod_dims(b, 1, b->rank);
      n = prod_dims(r, 0, 1) * prod_dims(r, 2, rr);
    }
    for (int ax = 0; ax < na; ax++) {
      FcSbp o = out[ax];
      double g = (double)p->axis_group[ax];
      if (op->kind == FC_OP_MATMUL) {
        if (o.kind == FC_SBP_S && o.dim == rr - 1) n /= g;
        else if (o.kind == FC_SBP_S && (o.dim == rr - 2 || (rows_fold && o.dim < rr - 1))) m /= g;
      } else {
        if (o.kind == FC_SBP_S && o.dim == 1) m /= g;
        else if (o.kind == FC_SBP_S && o.dim == 0) n /= g;
      }
      if (o.kind == FC_SBP_P) kk /= g;
    }
    /* Every rule that keeps a split of a matmul or conv on an axis gives each rank of its group 1/G of the
     * products. */
    double local = (double)macs / share;
    double tf = 2 * local / (k->gemm_gflops * 1e9 * gemm_efficiency(m, n, kk));
    if (tf > t) t = tf;
    if (flops) *flops = (int64_t)(2 * local);
    const FcValue *w = op->operands[1].value;
    bool w_const = w && w->def && w->def->kind == FC_OP_CONSTANT;
    /* The weights are read once per run from beyond L2 (a model's weights rarely fit it), on top of the
     * products: the kernels overlap little of that stream with their FMAs (bench/sbp_calibrate.py measures
     * it as the time a chain of matmuls takes at no rows). */
    if (w_const && k->weight_gbps > 0) t += plan_local_bytes(p, &w->type, &need[na]) / (k->weight_gbps * 1e9);
    /* A right operand computed at run time (attention's keys and values) is packed on each run. */
    if (w && !w_const && op->kind == FC_OP_MATMUL && k->pack_gbps > 0)
      t += plan_local_bytes(p, &w->type, &need[na]) / (k->pack_gbps * 1e9);
    /* A constant weight taken split is no compile-time constant of the rank's program: each run copies its
     * slice out of cache (the boxing prices the copy as cache-resident; the difference is added here) and
     * the GEMM packs it again, reading and writing it once more. Not so in a rank's own program (p->rank:
     * a rank-specialised build), where fold_rank makes the slice a constant that the GEMM packs at compile
     * time. */
    bool w_split = false;
    for (int ax = 0; ax < na; ax++) w_split |= need[na + ax].kind != FC_SBP_B;
    if (w_const && w_split && k->mem_cold_gbps > 0 && p->rank < 0) {
      double wb = plan_local_bytes(p, &w->type, &need[na]);
      t += 2 * wb / (k->mem_cold_gbps * 1e9) + 2 * wb * (1 / (k->mem_cold_gbps * 1e9) - 1 / (k->mem_gbps * 1e9));
    }
  }
  return (t + k->op_us * 1e-6) * crowding(k, p->group);
}

/* The collective that boxes from -> to (FC_OP_LOCAL_SLICE for B -> S), or FC_OP_COUNT for none. */
static FcOpKind box_kind(FcSbp from, FcSbp to) {
  if (fc_sbp_equal(from, to) || to.kind == FC_SBP_P) return FC_OP_COUNT;
  if (from.kind == FC_SBP_B) return FC_OP_LOCAL_SLICE;
  if (from.kind == FC_SBP_S) return to.kind == FC_SBP_B ? FC_OP_ALL_GATHER : FC_OP_ALL_TO_ALL;
  return to.kind == FC_SBP_B ? FC_OP_ALL_REDUCE : FC_OP_REDUCE_SCATTER;
}

/* A 1-D box over a group of g ranks (of `ranks` in all, for the crowding) of a tensor of n bytes (whole, as
 * the group sees it). */
static double box1(const FcSbpCosts *k, int64_t g, int64_t ranks, double n, FcSbp from, FcSbp to, int64_t *sent) {
  if (sent) *sent = 0;
  if (fc_sbp_equal(from, to)) return 0;
  FcOpKind kind = box_kind(from, to);
  if (kind == FC_OP_COUNT) return HUGE_VAL;
  double gg = (double)g, steps, factor, copied = 0;
  switch (kind) {
  case FC_OP_LOCAL_SLICE: steps = 0, factor = 0, copied = 2 * n / gg; break;
  case FC_OP_ALL_GATHER:
  case FC_OP_REDUCE_SCATTER: steps = gg - 1, factor = (gg - 1) / gg; break;
  case FC_OP_ALL_REDUCE: steps = 2 * (gg - 1), factor = 2 * (gg - 1) / gg; break;
  default: steps = gg - 1, factor = (gg - 1) / (gg * gg), copied = 2 * n / gg; break; /* all_to_all repacks */
  }
  if (sent) *sent = (int64_t)(factor * n);
  double s = k->op_us * 1e-6 + steps * k->link_latency_us * 1e-6 + factor * n / (k->link_gbps * 1e9) +
             copied / (k->mem_gbps * 1e9);
  /* Crowded ranks meet in a collective only when the scheduler has run each of them up to it: a wait of its
   * own per collective (crowd_sync_us, measured), beyond the shared cores' slowdown. */
  double sync = steps > 0 && k->cores > 0 && ranks > k->cores ? k->crowd_sync_us * 1e-6 : 0;
  return s * crowding(k, ranks) + sync;
}

double fc_sbp_box_seconds(const FcSbpCosts *k, int64_t g, const FcType *t, FcSbp from, FcSbp to, int64_t *sent) {
  return box1(k, g, g, bytes_of(t), from, to, sent);
}

double fc_sbp_box_plan_seconds(const FcSbpCosts *k, const FcSbpPlan *p, const FcType *t, const FcSbp *from,
                               const FcSbp *to, int64_t *sent) {
  if (sent) *sent = 0;
  if (p->n_axes == 1) return fc_sbp_box_seconds(k, p->group, t, from[0], to[0], sent);
  FcSbpStep steps[2 * FC_SBP_MAX_AXES];
  int n = fc_sbp_steps(p, from, to, steps);
  if (n < 0) return HUGE_VAL;
  FcSbp cur[FC_SBP_MAX_AXES];
  memcpy(cur, from, (size_t)p->n_axes * sizeof *cur);
  double s = 0;
  for (int i = 0; i < n; i++) {
    /* The tensor as the step's group sees it: cut by every other axis, whole along its own. */
    FcSbp other[FC_SBP_MAX_AXES];
    memcpy(other, cur, (size_t)p->n_axes * sizeof *other);
    other[steps[i].axis] = FC_SBP_BCAST;
    double bytes = plan_local_bytes(p, t, other);
    int64_t g = p->axis_group[steps[i].axis], st;
    s += box1(k, g, p->group, bytes, steps[i].from, steps[i].to, &st);
    if (sent) *sent += st;
    cur[steps[i].axis] = steps[i].to;
  }
  return s;
}

/* The signature consumer use u takes its value in under a flat p (or the override). */
static FcSbp use_need(const FcSbpPlan *p, const FcUse *u, int ov_op, const FcSbp *ov_need) {
  if (u->user->id >= p->n_op_ids) return FC_SBP_BCAST;
  int ku = p->index_of[u->user->id];
  if (ku < 0 || ku >= p->n_ops || p->ops[ku] != u->user) return FC_SBP_BCAST;
  return ku == ov_op ? ov_need[u->index] : p->need[ku][u->index];
}

/* The same for any plan: the signatures (one per plan axis), NULL for B everywhere. */
static const FcSbp *use_needs(const FcSbpPlan *p, const FcUse *u) {
  if (u->user->id >= p->n_op_ids) return NULL;
  int ku = p->index_of[u->user->id];
  if (ku < 0 || ku >= p->n_ops || p->ops[ku] != u->user) return NULL;
  return &p->need[ku][(size_t)u->index * (size_t)p->n_axes];
}

/* Whether boxing constant-or-not v from `from` to `to` is folded away at compile time: v is a constant, the
 * boxes are local slices only, and the program is one rank's (fold_rank). */
static bool folded_box(const FcSbpPlan *p, const FcValue *v, const FcSbp *from, const FcSbp *to) {
  if (p->rank < 0 || !v->def || v->def->kind != FC_OP_CONSTANT) return false;
  for (int a = 0; a < p->n_axes; a++)
    if (!fc_sbp_equal(from[a], to[a]) && box_kind(from[a], to[a]) != FC_OP_LOCAL_SLICE) return false;
  return true;
}

double fc_sbp_value_seconds(const FcSbpCosts *k, const FcSbpPlan *p, const FcValue *v, FcSbp sig, int ov_op,
                            const FcSbp *ov_need) {
  FC_ASSERT(p->n_axes == 1); /* the local search runs on flat plans */
  FcSbp seen[16];
  int n_seen = 0;
  double s = 0;
  for (const FcUse *u = v->first_use; u; u = u->next_use) {
    FcSbp need = use_need(p, u, ov_op, ov_need);
    if (fc_sbp_equal(need, sig)) continue;
    bool dup = false;
    for (int i = 0; i < n_seen && !dup; i++) dup = fc_sbp_equal(seen[i], need);
    if (dup) continue;
    if (n_seen < 16) seen[n_seen++] = need;
    if (!folded_box(p, v, &sig, &need)) s += fc_sbp_box_seconds(k, p->group, &v->type, sig, need, NULL);
  }
  return s;
}

/* One boxed copy of a value: the consumers' span in op order. */
typedef struct Copy {
  const FcSbp *to;
  int first, last;
} Copy;

/* Adds v's boxes to e and their copies' and v's own live spans to the difference array live[]. A constant's
 * own bytes go to e->weight_bytes: whole, or in a rank's own program (p->rank) only the chunks its consumers
 * take when none takes it whole (its slices are constants there, and the whole weight is not kept). */
static void value_estimate(const FcSbpCosts *k, const FcSbpPlan *p, const FcValue *v, const FcSbp *sig, int def,
                           double *live, FcSbpEstimate *e) {
  static const FcSbp whole[FC_SBP_MAX_AXES] = {{0}}; /* FC_SBP_B is 0 */
  Copy copies[16];
  int n_copies = 0, last = def;
  bool is_const = v->def && v->def->kind == FC_OP_CONSTANT, taken_whole = !fc_value_has_uses(v);
  double folded_bytes = 0;
  for (const FcUse *u = v->first_use; u; u = u->next_use) {
    int ku = u->user->id < p->n_op_ids ? p->index_of[u->user->id] : def;
    if (ku > last) last = ku;
    const FcSbp *need = use_needs(p, u);
    if (!need) need = whole;
    if (fc_sbp_sigs_equal(p, need, sig)) {
      taken_whole = true;
      continue;
    }
    int c = 0;
    while (c < n_copies && !fc_sbp_sigs_equal(p, copies[c].to, need)) c++;
    if (c < n_copies) {
      if (ku < copies[c].first) copies[c].first = ku;
      if (ku > copies[c].last) copies[c].last = ku;
      continue;
    }
    if (folded_box(p, v, sig, need)) {
      /* A constant chunk: neither a run-time box nor a live copy. */
      folded_bytes += plan_local_bytes(p, &v->type, need);
      if (n_copies < 16) copies[n_copies++] = (Copy){need, -1, -1};
      continue;
    }
    int64_t sent;
    e->comm_s += fc_sbp_box_plan_seconds(k, p, &v->type, sig, need, &sent);
    e->sent_bytes += sent;
    bool slice_only = true;
    for (int a = 0; a < p->n_axes; a++)
      if (!fc_sbp_equal(sig[a], need[a])) slice_only &= box_kind(sig[a], need[a]) == FC_OP_LOCAL_SLICE;
    if (slice_only) e->n_slices++;
    else e->n_collectives++;
    if (n_copies < 16) copies[n_copies++] = (Copy){need, ku, ku};
  }
  if (is_const) e->weight_bytes += (int64_t)(p->rank < 0 || taken_whole ? bytes_of(&v->type) + folded_bytes : folded_bytes);
  if (!is_const) {
    double b = plan_local_bytes(p, &v->type, sig);
    live[def] += b;
    live[last + 1] -= b;
  }
  for (int c = 0; c < n_copies; c++) {
    if (copies[c].first < 0) continue; /* folded */
    double b = plan_local_bytes(p, &v->type, copies[c].to);
    live[copies[c].first] += b;
    live[copies[c].last + 1] -= b;
  }
}

void fc_sbp_estimate(const FcSbpCosts *k, const FcSbpPlan *p, FcArena *scratch, FcSbpEstimate *e) {
  static const FcSbp whole[FC_SBP_MAX_AXES] = {{0}};
  memset(e, 0, sizeof *e);
  size_t na = (size_t)p->n_axes;
  double *live = FC_NEW_ARRAY(scratch, double, (size_t)p->n_ops + 2);
  for (int i = 0; i <= p->n_ops + 1; i++) live[i] = 0;
  FcGraph *g = p->g;
  for (int i = 0; i < g->n_inputs; i++) {
    FcValue *x = g->inputs[i];
    const FcSbp *in = &p->input[(size_t)i * na];
    if (!fc_sbp_sigs_equal(p, in, whole) && fc_value_has_uses(x)) {
      e->comm_s += fc_sbp_box_plan_seconds(k, p, &x->type, whole, in, NULL);
      e->n_slices++;
    }
    value_estimate(k, p, x, in, 0, live, e);
  }
  for (int idx = 0; idx < p->n_ops; idx++) {
    const FcOp *op = p->ops[idx];
    int64_t f;
    e->compute_s += fc_sbp_op_seconds(k, p, idx, p->need[idx], p->out[idx], &f);
    e->flops += f;
    for (int j = 0; j < op->n_results; j++)
      value_estimate(k, p, &op->results[j], &p->out[idx][(size_t)j * na], idx, live, e);
  }
  double cur = 0, peak = 0;
  for (int i = 0; i <= p->n_ops; i++) {
    cur += live[i];
    if (cur > peak) peak = cur;
  }
  e->peak_bytes = (int64_t)peak;
  e->total_s = e->compute_s + e->comm_s;
  e->fits = (double)e->weight_bytes + peak <= (double)k->mem_cap_bytes;
}
