/* sbp.c — SBP plans and the one path that applies them (sbp.h), and the fixed strategies: passes sbp_data and
 * sbp_tensor (flowc build --ranks N --sbp data|tensor).
 *
 * A plan (sbp.h) is made on the untouched graph: for every op of the top-level graph, the signature it takes
 * each operand in and the signature of each result, from the rules (sbp_rules.def). The fixed strategies make
 * it forward in op order: each op's rule sees the signatures its operands were planned with and keeps what
 * split it can (sbp_data slices each graph input whose dim 0 divides by G; sbp_tensor also starts a split at
 * each matmul/conv by a constant weight, fc_sbp_tensor_start). sbp_file and sbp_auto make plans their own
 * way and apply them here too.
 *
 * Applying a plan is one forward walk. Every value keeps its GLOBAL type beside its signature in a table of
 * this file. Where an operand arrives with another signature than the op takes, a boxing op goes in front of
 * the op (B -> S local_slice, S -> B all_gather, P -> B all_reduce, P -> S reduce_scatter, S -> S
 * all_to_all); a value boxed to one signature once is reused by later ops that take it so (an all_reduce
 * for two consumers runs once). The op's shape attributes (reshape's shape, slice's ends) are then rewritten
 * to the local chunk and its result types re-inferred from its now local operands, and checked against the
 * global types split as planned. Afterwards every value has its LOCAL type, so the later passes, the kernels
 * and the memory plan see an ordinary graph with a few collective ops. Every result gets its signature as
 * flow.sbp (one entry per mesh axis); an op that runs on whole tensors although an operand arrived split
 * gets flow.sbp_note, which flowc info lists.
 *
 * A flat plan's boxing ops have all ranks as their group (mesh_axis -1: G = the product of the mesh, row-major
 * rank order), so on a 2-D mesh a split is over all its ranks and the annotation repeats the signature per
 * axis (splitting dim d along axis 0 and then along axis 1 gives the same chunks in the same order). A
 * per-axis plan (sbp_axes: `--sbp data,tensor`) boxes one axis at a time in the steps of fc_sbp_steps
 * (sbp_axes.c), each op over one axis's group (mesh_axis = k), and writes one signature per axis. Graph
 * inputs arrive whole on every rank (frt_main broadcasts them) and every graph output is gathered to B, so
 * rank 0 writes whole outputs.
 *
 * A constant taken split along a dim other than 0 is stored re-laid as [G, ..., n/G, ...] (rank r's chunk
 * contiguous at r * chunk), so its local_slice is one contiguous copy of 1/G of the weight per run, not a
 * strided gather; a dim-0 split is contiguous already. (A view at offset rank*chunk would save that copy,
 * but then the GEMM kernels could no longer pack the weight at compile time either way; a per-rank build
 * would.) A rank-specialised build (flowc build --ranks N: the module attribute flow.rank, one program per
 * rank) does that: there the constant is sliced plainly and pass fold_rank folds the slice to the rank's
 * chunk, so the kernels pack it at compile time; the plan is the same for every rank (nothing in the
 * planning depends on the rank), so the ranks' collectives still match.
 */
#include "sbp.h"

#include <string.h>

#include "rewrite.h"

/* ---- plans ---------------------------------------------------------------------------------------------- */

/* group > 0: a flat plan over that many parts, whatever the module's mesh (microbatch.c's micro-batches). */
static FcStatus plan_alloc(FcSbpPlan *p, FcModule *m, FcArena *a, bool per_axis, int64_t group, FcDiag *diag) {
  memset(p, 0, sizeof *p);
  p->m = m;
  p->g = m->graph;
  p->rank = fc_module_rank(m);
  const int64_t *mesh;
  int n_mesh = fc_module_mesh(m, &mesh);
  if (group > 0) {
    p->group = group;
    mesh = &p->group;
    n_mesh = 1;
  } else if (n_mesh == 0) {
    return fc_error(diag, FC_ERR_INPUT, "an SBP plan needs the module's mesh (flow.mesh: flowc build --ranks N)");
  } else if (!fc_mesh_group_size(m, -1, &p->group)) {
    return fc_error(diag, FC_ERR_INPUT, "the mesh has too many ranks");
  }
  if (per_axis && n_mesh > FC_SBP_MAX_AXES)
    return fc_error(diag, FC_ERR_INPUT, "a per-axis SBP plan takes at most %d mesh axes", FC_SBP_MAX_AXES);
  p->n_axes = per_axis ? n_mesh : 1;
  for (int i = 0; i < p->n_axes; i++) p->axis_group[i] = per_axis ? mesh[i] : p->group;
  size_t na = (size_t)p->n_axes;
  FcGraph *g = p->g;
  fc_graph_for_each_op(g, op) p->n_ops++;
  p->ops = FC_NEW_ARRAY(a, FcOp *, (size_t)p->n_ops + 1);
  p->need = FC_NEW_ARRAY(a, FcSbp *, (size_t)p->n_ops + 1);
  p->out = FC_NEW_ARRAY(a, FcSbp *, (size_t)p->n_ops + 1);
  p->input = FC_NEW_ARRAY(a, FcSbp, ((size_t)g->n_inputs + 1) * na);
  p->n_ids = g->next_value_id;
  p->op_of = FC_NEW_ARRAY(a, int32_t, (size_t)p->n_ids + 1);
  for (uint32_t i = 0; i < p->n_ids; i++) p->op_of[i] = -1;
  for (size_t i = 0; i < (size_t)g->n_inputs * na; i++) p->input[i] = FC_SBP_BCAST;
  p->n_op_ids = g->next_op_id;
  p->index_of = FC_NEW_ARRAY(a, int32_t, (size_t)p->n_op_ids + 1);
  int k = 0;
  fc_graph_for_each_op(g, op) {
    p->ops[k] = op;
    p->index_of[op->id] = k;
    p->need[k] = FC_NEW_ARRAY(a, FcSbp, ((size_t)op->n_operands + 1) * na);
    p->out[k] = FC_NEW_ARRAY(a, FcSbp, ((size_t)op->n_results + 1) * na);
    for (size_t i = 0; i < (size_t)op->n_operands * na; i++) p->need[k][i] = FC_SBP_BCAST;
    for (size_t j = 0; j < (size_t)op->n_results * na; j++) p->out[k][j] = FC_SBP_BCAST;
    for (int j = 0; j < op->n_results; j++) p->op_of[op->results[j].id] = k;
    k++;
  }
  return FC_OK;
}

FcStatus fc_sbp_plan_init(FcSbpPlan *p, FcModule *m, FcArena *a, FcDiag *diag) { return plan_alloc(p, m, a, false, 0, diag); }

FcStatus fc_sbp_plan_init_axes(FcSbpPlan *p, FcModule *m, FcArena *a, FcDiag *diag) {
  return plan_alloc(p, m, a, true, 0, diag);
}

FcStatus fc_sbp_plan_init_group(FcSbpPlan *p, FcModule *m, int64_t group, FcArena *a, FcDiag *diag) {
  FC_ASSERT(group > 0);
  return plan_alloc(p, m, a, false, group, diag);
}

/* v's signatures under p (n_axes of them), or NULL for B everywhere. */
static const FcSbp *plan_sigs(const FcSbpPlan *p, const FcValue *v) {
  if (v->id >= p->n_ids) return NULL;
  if (!v->def) return v->index < p->g->n_inputs ? &p->input[(size_t)v->index * (size_t)p->n_axes] : NULL;
  int32_t k = p->op_of[v->id];
  return k >= 0 ? &p->out[k][(size_t)v->index * (size_t)p->n_axes] : NULL;
}

FcSbp fc_sbp_plan_sig_at(const FcSbpPlan *p, const FcValue *v, int axis) {
  const FcSbp *s = plan_sigs(p, v);
  return s ? s[axis] : FC_SBP_BCAST;
}

FcSbp fc_sbp_plan_sig(const FcSbpPlan *p, const FcValue *v) { return fc_sbp_plan_sig_at(p, v, 0); }

void fc_sbp_plan_ctx_at(const FcSbpPlan *p, int k, int axis, FcArena *a, FcSbpRuleCtx *c) {
  const FcOp *op = p->ops[k];
  int n_in = op->n_operands, n_out = op->n_results, na = p->n_axes;
  const FcType **in_type = FC_NEW_ARRAY(a, const FcType *, (size_t)n_in + 1);
  FcSbp *in = FC_NEW_ARRAY(a, FcSbp, (size_t)n_in + 1), *need = FC_NEW_ARRAY(a, FcSbp, (size_t)n_in + 1);
  FcType *out_type = FC_NEW_ARRAY(a, FcType, (size_t)n_out + 1);
  FcSbp *out = FC_NEW_ARRAY(a, FcSbp, (size_t)n_out + 1);
  for (int i = 0; i < n_in; i++) {
    const FcValue *v = op->operands[i].value;
    in_type[i] = NULL;
    if (v && axis == 0) in_type[i] = &v->type;
    else if (v) {
      /* As op k takes it on the axes before this one. */
      FcType *t = FC_NEW(a, FcType);
      *t = fc_sbp_local_type(p, &v->type, &p->need[k][(size_t)i * (size_t)na], axis, a);
      in_type[i] = t;
    }
    in[i] = v ? fc_sbp_plan_sig_at(p, v, axis) : FC_SBP_BCAST;
    need[i] = FC_SBP_BCAST;
  }
  for (int j = 0; j < n_out; j++) {
    out_type[j] = axis == 0 ? op->results[j].type
                            : fc_sbp_local_type(p, &op->results[j].type, &p->out[k][(size_t)j * (size_t)na], axis, a);
    out[j] = FC_SBP_BCAST;
  }
  *c = (FcSbpRuleCtx){op, p->axis_group[axis], in_type, out_type, in, need, out};
}

void fc_sbp_plan_ctx(const FcSbpPlan *p, int k, FcArena *a, FcSbpRuleCtx *c) { fc_sbp_plan_ctx_at(p, k, 0, a, c); }

/* Whether the rules may split op at all: regions run whole on every rank (their loop or if has no rule), and
 * quantised ops keep B (their scales are per tensor, not per chunk). */
static bool splittable(const FcOp *op) {
  return op->kind != FC_OP_CONSTANT && op->kind != FC_OP_RETURN && op->n_regions == 0 && !fc_rw_is_quantised(op);
}

static bool choice_equal(const FcOp *op, const FcSbp *na, const FcSbp *oa, const FcSbp *nb, const FcSbp *ob) {
  for (int i = 0; i < op->n_operands; i++)
    if (!fc_sbp_equal(na[i], nb[i])) return false;
  for (int j = 0; j < op->n_results; j++)
    if (!fc_sbp_equal(oa[j], ob[j])) return false;
  return true;
}

/* Adds the rule's answer for the probe in c->in (and resets need/out to B for the next probe). */
/* Whether every split a choice asks of its operands and gives its results falls on a dim the group divides
 * (a rule probed with a candidate split of a dim too small to take it, a [1]-shaped index say, must not
 * become a plan that cannot be applied). */
static bool choice_fits(const FcSbpRuleCtx *c) {
  const FcOp *op = c->op;
  for (int i = 0; i < op->n_operands; i++) {
    const FcType *t = c->in_type[i];
    if (c->need[i].kind == FC_SBP_S && (!t || c->need[i].dim >= t->rank || t->dims[c->need[i].dim] < c->g ||
                                        t->dims[c->need[i].dim] % c->g))
      return false;
  }
  for (int j = 0; j < op->n_results; j++) {
    const FcType *t = &c->out_type[j];
    if (c->out[j].kind == FC_SBP_S && (c->out[j].dim >= t->rank || t->dims[c->out[j].dim] < c->g ||
                                       t->dims[c->out[j].dim] % c->g))
      return false;
  }
  return true;
}

static void add_probe(FcSbpRuleCtx *c, bool start, FcArena *a, FcSbpChoice *list, int *n) {
  const FcOp *op = c->op;
  FcSbpRuleFn rule = fc_sbp_rule(op->kind);
  bool kept = start ? fc_sbp_tensor_start(c) : rule && rule(c);
  if (kept && choice_fits(c)) {
    bool dup = false;
    for (int i = 0; i < *n && !dup; i++) dup = choice_equal(op, list[i].need, list[i].out, c->need, c->out);
    if (!dup) {
      FcSbpChoice *ch = &list[(*n)++];
      ch->need = FC_NEW_ARRAY(a, FcSbp, (size_t)op->n_operands + 1);
      ch->out = FC_NEW_ARRAY(a, FcSbp, (size_t)op->n_results + 1);
      memcpy(ch->need, c->need, (size_t)op->n_operands * sizeof *c->need);
      memcpy(ch->out, c->out, (size_t)op->n_results * sizeof *c->out);
    }
  }
  for (int i = 0; i < op->n_operands; i++) c->need[i] = FC_SBP_BCAST;
  for (int j = 0; j < op->n_results; j++) c->out[j] = FC_SBP_BCAST;
}

int fc_sbp_candidates(const FcSbpPlan *p, int k, FcArena *a, FcSbpChoice **out) {
  return fc_sbp_candidates_at(p, k, 0, a, out);
}

int fc_sbp_candidates_at(const FcSbpPlan *p, int k, int axis, FcArena *a, FcSbpChoice **out) {
  const FcOp *op = p->ops[k];
  FcSbpRuleCtx c;
  fc_sbp_plan_ctx_at(p, k, axis, a, &c);
  FcSbp *in = (FcSbp *)c.in;
  int n_in = op->n_operands, cap = 2;
  for (int i = 0; i < n_in; i++) cap += (c.in_type[i] ? c.in_type[i]->rank : 0) + 1;
  cap += 1;
  FcSbpChoice *list = FC_NEW_ARRAY(a, FcSbpChoice, (size_t)cap + 1);
  int n = 0;
  if (splittable(op)) {
    for (int i = 0; i < n_in; i++) in[i] = FC_SBP_BCAST;
    add_probe(&c, true, a, list, &n);
    for (int i = 0; i < n_in; i++) {
      if (!c.in_type[i]) continue;
      for (int d = 0; d < c.in_type[i]->rank; d++) {
        in[i] = FC_SBP_SPLIT(d);
        add_probe(&c, false, a, list, &n);
      }
      in[i] = FC_SBP_PARTIAL(FC_SBP_SUM);
      add_probe(&c, false, a, list, &n);
      in[i] = FC_SBP_BCAST;
    }
    for (int i = 0; i < n_in; i++) in[i] = c.in_type[i] ? FC_SBP_PARTIAL(FC_SBP_SUM) : FC_SBP_BCAST;
    if (n_in > 1) add_probe(&c, false, a, list, &n);
  }
  /* All B is always legal: the op runs on whole tensors. */
  FcSbpChoice *ch = &list[n++];
  ch->need = FC_NEW_ARRAY(a, FcSbp, (size_t)n_in + 1);
  ch->out = FC_NEW_ARRAY(a, FcSbp, (size_t)op->n_results + 1);
  for (int i = 0; i < n_in; i++) ch->need[i] = FC_SBP_BCAST;
  for (int j = 0; j < op->n_results; j++) ch->out[j] = FC_SBP_BCAST;
  *out = list;
  return n;
}

/* The signature graph input x may be sliced to on plan axis `axis` (the axes before it as planned): a split of
 * a dim that divides by the axis's group there (P never). */
static bool input_sig_ok(const FcSbpPlan *p, const FcValue *x, int input, int axis, FcSbp s) {
  if (s.kind == FC_SBP_B) return true;
  if (s.kind != FC_SBP_S || s.dim < 0 || s.dim >= x->type.rank) return false;
  int64_t dims[FC_DEFAULT_MAX_RANK + 1];
  if (x->type.rank > FC_DEFAULT_MAX_RANK) return false;
  fc_sbp_local_dims(p, &x->type, &p->input[(size_t)input * (size_t)p->n_axes], axis, dims);
  int64_t n = dims[s.dim], g = p->axis_group[axis];
  return n >= g && n % g == 0;
}

/* want[id * n_axes + axis], kind -1: none. */
static const FcSbp *wanted(const FcSbpPlan *p, const FcSbp *want, const FcValue *v, int axis) {
  if (!want || v->id >= p->n_ids) return NULL;
  const FcSbp *w = &want[(size_t)v->id * (size_t)p->n_axes + (size_t)axis];
  return (int)w->kind >= 0 ? w : NULL;
}

/* Op k on plan axis `axis`, forced to the candidate that gives the wanted signatures of its results with the
 * fewest operands boxed. */
static FcStatus plan_forced(FcSbpPlan *p, int k, int axis, int forced, const FcSbp *want, FcArena *a, FcDiag *diag) {
  FcOp *op = p->ops[k];
  size_t na = (size_t)p->n_axes;
  FcSbpChoice *list;
  int n = fc_sbp_candidates_at(p, k, axis, a, &list), best = -1, best_boxed = 0;
  for (int c = 0; c < n; c++) {
    bool ok = true;
    for (int j = 0; j < op->n_results && ok; j++) {
      const FcSbp *w = wanted(p, want, &op->results[j], axis);
      if (w && !fc_sbp_equal(list[c].out[j], *w)) ok = false;
    }
    if (!ok) continue;
    int boxed = 0;
    for (int i = 0; i < op->n_operands; i++)
      if (op->operands[i].value && !fc_sbp_equal(list[c].need[i], fc_sbp_plan_sig_at(p, op->operands[i].value, axis))) boxed++;
    if (best < 0 || boxed < best_boxed) best = c, best_boxed = boxed;
  }
  if (best < 0) {
    char b[32];
    return fc_error_node(diag, FC_ERR_INPUT, fc_op_name(op), fc_op_info(op->kind)->name,
                         "no SBP rule of this op gives its result %d as %s%s", forced,
                         fc_sbp_str(*wanted(p, want, &op->results[forced], axis), b, sizeof b),
                         p->n_axes > 1 ? fc_arena_printf(a, " on mesh axis %d", axis) : "");
  }
  for (int i = 0; i < op->n_operands; i++) p->need[k][(size_t)i * na + (size_t)axis] = list[best].need[i];
  for (int j = 0; j < op->n_results; j++) p->out[k][(size_t)j * na + (size_t)axis] = list[best].out[j];
  return FC_OK;
}

/* Tensor parallelism: a partial sum (a row-parallel matmul's P(sum)) that an element-wise op takes (its bias,
 * its activation) is offered to the rule as rows S(0), so it is reduce-scattered rather than all-reduced
 * where the rows divide and no later block's column split would gather them back (feeds_column_split): half
 * the bytes of an all_reduce, the element-wise work split, and a thin product after the last block (a
 * classifier) runs on each rank's rows instead of a column split of a few columns, its rows gathered at the
 * output. Before another block the all_reduce stays (reduce-scatter + all-gather move the same bytes in two
 * collectives, and measured slower: the transformer 1.88 against 1.79 ms). Rows that do not divide (a batch
 * of 1) keep the all_reduce. */
/* Whether a matmul that starts a column split (a constant weight of at least 64 columns a rank: see
 * gather_for_columns) reads what op computes, directly or through other ops (a bounded walk): the rows would
 * be gathered back for it, and an all_reduce costs no more than reduce-scatter + all-gather. */
static bool feeds_column_split(const FcOp *op, int64_t g, int depth) {
  if (depth > 64) return true; /* too far to tell: keep the all_reduce */
  for (int j = 0; j < op->n_results; j++)
    for (const FcUse *u = op->results[j].first_use; u; u = u->next_use) {
      const FcOp *user = u->user;
      if (user->kind == FC_OP_RETURN) continue;
      if (user->kind == FC_OP_MATMUL && user->n_operands == 2 && u->index == 0) {
        const FcValue *w = user->operands[1].value;
        if (fc_value_const(w) && w->type.rank == 2 && w->type.dims[1] % g == 0 && w->type.dims[1] / g >= 64) return true;
      }
      if (feeds_column_split(user, g, depth + 1)) return true;
    }
  return false;
}

static void rows_from_partial(FcSbpRuleCtx *c) {
  const FcOp *op = c->op;
  if (!(fc_op_info(op->kind)->flags & FC_OPF_ELEMENTWISE) || op->n_results != 1 || c->out_type[0].rank < 1) return;
  if (feeds_column_split(op, c->g, 0)) return;
  FcSbp *in = (FcSbp *)c->in;
  for (int i = 0; i < op->n_operands; i++) {
    const FcType *t = c->in_type[i];
    if (!t || in[i].kind != FC_SBP_P || in[i].reduce != FC_SBP_SUM || t->rank != c->out_type[0].rank) continue;
    int64_t n = t->dims[0];
    if (n == c->out_type[0].dims[0] && n >= c->g && n % c->g == 0) in[i] = FC_SBP_SPLIT(0);
  }
}

/* Tensor parallelism after a block whose partial sum went to rows (rows_from_partial): a matmul by a constant
 * weight with at least a GEMM panel of columns a rank (64) still starts a column split, its input gathered
 * back to whole (the all_gather of Megatron's sequence parallelism), so every block's weights stay split; a
 * thinner one (a classifier's 10 columns) keeps the rows. */
static void gather_for_columns(FcSbpRuleCtx *c) {
  const FcOp *op = c->op;
  if (op->kind != FC_OP_MATMUL || op->n_operands != 2 || !c->in_type[0] || !c->in_type[1] ||
      !fc_value_const(op->operands[1].value) || c->in_type[1]->rank != 2)
    return;
  int64_t n = c->in_type[1]->dims[1];
  FcSbp *in = (FcSbp *)c->in;
  /* a split of any dim but the reduced last one: rows of the product */
  if (in[0].kind == FC_SBP_S && in[0].dim < c->in_type[0]->rank - 1 && in[1].kind == FC_SBP_B && n % c->g == 0 &&
      n / c->g >= 64)
    in[0] = FC_SBP_BCAST;
}

FcStatus fc_sbp_plan_forward(FcSbpPlan *p, const FcSbpStrategy *strategy, const FcSbp *want, FcArena *a, FcDiag *diag) {
  FcGraph *g = p->g;
  size_t na = (size_t)p->n_axes;
  for (int i = 0; i < g->n_inputs; i++) {
    FcValue *x = g->inputs[i];
    for (int ax = 0; ax < p->n_axes; ax++) {
      const FcSbp *w = wanted(p, want, x, ax);
      FcSbp sig = FC_SBP_BCAST;
      if (w) sig = *w;
      else if (strategy[ax] == FC_SBP_DATA && x->type.rank >= 1 && fc_value_has_uses(x)) sig = FC_SBP_SPLIT(0);
      if (!input_sig_ok(p, x, i, ax, sig)) {
        if (w) {
          char b[32];
          return fc_error(diag, FC_ERR_INPUT, "graph input '%s' cannot be %s on %lld ranks%s", x->name ? x->name : "?",
                          fc_sbp_str(sig, b, sizeof b), (long long)p->axis_group[ax],
                          p->n_axes > 1 ? fc_arena_printf(a, " (mesh axis %d)", ax) : "");
        }
        sig = FC_SBP_BCAST; /* an indivisible batch runs whole on every rank */
      }
      p->input[(size_t)i * na + (size_t)ax] = sig;
    }
  }
  for (int k = 0; k < p->n_ops; k++) {
    FcOp *op = p->ops[k];
    if (op->kind == FC_OP_CONSTANT) continue; /* B; the apply path slices a constant a consumer takes split */
    if (op->kind == FC_OP_RETURN) continue;   /* takes B: outputs are written whole */
    for (int ax = 0; ax < p->n_axes; ax++) {
      int forced = -1;
      for (int j = 0; j < op->n_results && forced < 0; j++)
        if (wanted(p, want, &op->results[j], ax)) forced = j;
      if (forced >= 0) {
        FcStatus st = plan_forced(p, k, ax, forced, want, a, diag);
        if (st != FC_OK) return st;
        continue;
      }
      if (!splittable(op)) continue;
      FcSbpRuleCtx c;
      fc_sbp_plan_ctx_at(p, k, ax, a, &c);
      if (strategy[ax] == FC_SBP_TENSOR) rows_from_partial(&c), gather_for_columns(&c);
      bool kept = strategy[ax] == FC_SBP_TENSOR && fc_sbp_tensor_start(&c);
      FcSbpRuleFn rule = fc_sbp_rule(op->kind);
      if (!kept && rule) kept = rule(&c);
      if (!kept) continue; /* the plan's B stands */
      for (int i = 0; i < op->n_operands; i++) p->need[k][(size_t)i * na + (size_t)ax] = c.need[i];
      for (int j = 0; j < op->n_results; j++) p->out[k][(size_t)j * na + (size_t)ax] = c.out[j];
    }
  }
  return FC_OK;
}

/* ---- applying a plan ------------------------------------------------------------------------------------ */

typedef struct Boxed {
  FcSbp to[FC_SBP_MAX_AXES];
  FcValue *y;
  struct Boxed *next;
} Boxed;

typedef struct ValueInfo {
  FcSbp sig[FC_SBP_MAX_AXES]; /* per plan axis */
  FcType global;              /* the value's type in the one-process program */
  bool set;
  Boxed *boxed;               /* the value boxed to other signatures so far */
} ValueInfo;

typedef struct Sbp {
  const FcSbpPlan *p;
  FcModule *m;
  FcGraph *g;
  FcDiag *diag;
  FcArena *scratch;
  int n_mesh;    /* axes of the mesh: entries per flow.sbp */
  ValueInfo *info;
  uint32_t cap;
} Sbp;

static ValueInfo *info_of(Sbp *s, const FcValue *v) {
  if (v->id >= s->cap) {
    uint32_t cap = s->cap ? s->cap : 64;
    while (cap <= v->id) cap *= 2;
    ValueInfo *n = FC_NEW_ARRAY(s->scratch, ValueInfo, cap);
    if (s->cap) memcpy(n, s->info, s->cap * sizeof *n);
    s->info = n;
    s->cap = cap;
  }
  return &s->info[v->id];
}

/* Records v's signatures (one per plan axis) and global type; result 0 of an op and a graph input carry
 * them as flow.sbp (a flat plan's one signature repeated per mesh axis). */
static void set_sig(Sbp *s, FcValue *v, const FcSbp *sig, const FcType *global) {
  ValueInfo *vi = info_of(s, v);
  memcpy(vi->sig, sig, (size_t)s->p->n_axes * sizeof *sig);
  vi->global = *global;
  vi->set = true;
  FcAnnotValue *e = FC_NEW_ARRAY(s->scratch, FcAnnotValue, (size_t)s->n_mesh);
  for (int i = 0; i < s->n_mesh; i++) {
    char buf[32];
    fc_sbp_str(sig[s->p->n_axes == 1 ? 0 : i], buf, sizeof buf);
    e[i] = FC_AV_STRING(fc_arena_strdup(s->scratch, buf));
  }
  FcAnnotValue list = FC_AV_LIST(e, s->n_mesh);
  if (!v->def) fc_input_set_annot(s->g, v, fc_annot_name(FC_ANNOT_SBP), &list);
  else if (v->index == 0) fc_op_set_annot(v->def, fc_annot_name(FC_ANNOT_SBP), &list);
}

/* The same signature on every plan axis. */
static const FcSbp *all_axes(Sbp *s, FcSbp sig) {
  FcSbp *v = FC_NEW_ARRAY(s->scratch, FcSbp, FC_SBP_MAX_AXES);
  for (int i = 0; i < FC_SBP_MAX_AXES; i++) v[i] = sig;
  return v;
}

static FcValue *boxing_op(FcBuilder *b, FcOpKind kind, FcValue *x, int64_t dim, int64_t dim2, FcSbpReduce r,
                          int mesh_axis) {
  FcAttr attrs[3];
  int n = 0;
  switch (kind) {
  case FC_OP_LOCAL_SLICE:
  case FC_OP_ALL_GATHER: attrs[n++] = FC_A_INT(DIM, dim); break;
  case FC_OP_ALL_REDUCE: attrs[n++] = FC_A_STR(REDUCE, fc_sbp_reduce_name(r)); break;
  case FC_OP_REDUCE_SCATTER:
    attrs[n++] = FC_A_INT(DIM, dim);
    attrs[n++] = FC_A_STR(REDUCE, fc_sbp_reduce_name(r));
    break;
  case FC_OP_ALL_TO_ALL:
    attrs[n++] = FC_A_INT(CONCAT_DIM, dim2);
    attrs[n++] = FC_A_INT(SPLIT_DIM, dim);
    break;
  default: FC_UNREACHABLE();
  }
  attrs[n++] = FC_A_INT(MESH_AXIS, mesh_axis);
  return fc_b_op1(b, kind, &x, 1, attrs, n);
}

/* A constant taken S(d), d > 0, along plan axis `axis` (group g): a constant [g, D0.., D(d)/g, ..] holding
 * coordinate r's chunk at index r, its local_slice along dim 0 and a reshape to the local type. `after` is
 * the signature the value has then (the constant's, with `axis` split). NULL: take the plain local_slice. */
static FcValue *split_constant(Sbp *s, FcBuilder *b, FcValue *v, int d, int axis, const FcSbp *after) {
  const FcTensor *t = fc_value_const(v);
  /* nbytes > 0: every dim is positive, so the products below are at most the element count. */
  if (!t || t->type.quant || d == 0 || t->type.rank >= FC_DEFAULT_MAX_RANK || t->nbytes <= 0) return NULL;
  const FcType *ty = &t->type;
  int64_t g = s->p->axis_group[axis], c = ty->dims[d] / g, outer = 1, inner = 1;
  for (int i = 0; i < d; i++) outer *= ty->dims[i];
  for (int i = d + 1; i < ty->rank; i++) inner *= ty->dims[i];
  int64_t dims[FC_DEFAULT_MAX_RANK + 1], local[FC_DEFAULT_MAX_RANK];
  dims[0] = g;
  for (int i = 0; i < ty->rank; i++) dims[i + 1] = local[i] = i == d ? c : ty->dims[i];
  FcTensor *nt = fc_tensor_new(&s->m->arena, fc_type_make(&s->m->arena, ty->dtype, ty->rank + 1, dims));
  size_t es = fc_dtype_size(ty->dtype), run = (size_t)(c * inner) * es;
  for (int64_t r = 0; r < g; r++)
    for (int64_t o = 0; o < outer; o++)
      memcpy((char *)nt->data + (size_t)((r * outer + o) * c * inner) * es,
             (const char *)t->data + (size_t)((o * ty->dims[d] + r * c) * inner) * es, run);
  FcValue *k = fc_b_const_tensor(b, nt);
  if (!k) return NULL;
  set_sig(s, k, all_axes(s, FC_SBP_BCAST), &k->type);
  FcValue *sl = boxing_op(b, FC_OP_LOCAL_SLICE, k, 0, 0, FC_SBP_SUM, fc_sbp_plan_mesh_axis(s->p, axis));
  if (!sl) return NULL;
  FcSbp *ss = FC_NEW_ARRAY(s->scratch, FcSbp, FC_SBP_MAX_AXES);
  memcpy(ss, all_axes(s, FC_SBP_BCAST), FC_SBP_MAX_AXES * sizeof *ss);
  ss[axis] = FC_SBP_SPLIT(0);
  set_sig(s, sl, ss, &k->type);
  FcValue *y = fc_b_reshape(b, sl, ty->rank, local);
  if (y) set_sig(s, y, after, ty);
  return y;
}

static FcValue *box_new(Sbp *s, FcValue *v, const FcSbp *from, const FcSbp *to, FcOp *before);

/* v (signatures `from`) as signatures `to`, boxed in front of `before`; NULL after an error. */
static FcValue *box(Sbp *s, FcValue *v, const FcSbp *from, const FcSbp *to, FcOp *before) {
  if (fc_sbp_sigs_equal(s->p, from, to)) return v;
  /* Boxed for an earlier op already: that op precedes `before`, so the boxed value dominates it. */
  for (Boxed *bx = info_of(s, v)->boxed; bx; bx = bx->next)
    if (fc_sbp_sigs_equal(s->p, bx->to, to)) return bx->y;
  FcValue *y = box_new(s, v, from, to, before);
  if (y) {
    Boxed *bx = FC_NEW(s->scratch, Boxed);
    *bx = (Boxed){.y = y, .next = info_of(s, v)->boxed};
    memcpy(bx->to, to, (size_t)s->p->n_axes * sizeof *to);
    info_of(s, v)->boxed = bx;
  }
  return y;
}

/* One step: v (signatures cur, which step changes on its axis) boxed along that axis. */
static FcValue *box_step(Sbp *s, FcBuilder *b, FcValue *v, const FcSbpStep *st, const FcSbp *after) {
  int ax = fc_sbp_plan_mesh_axis(s->p, st->axis);
  FcSbp from = st->from, to = st->to;
  switch (from.kind) {
  case FC_SBP_B: {
    /* In one rank's program (flow.rank) pass fold_rank folds the plain slice of a constant: no re-layout. */
    FcValue *y = s->p->rank < 0 ? split_constant(s, b, v, to.dim, st->axis, after) : NULL;
    if (y || fc_b_status(b) != FC_OK) return y;
    return boxing_op(b, FC_OP_LOCAL_SLICE, v, to.dim, 0, FC_SBP_SUM, ax);
  }
  case FC_SBP_S:
    return to.kind == FC_SBP_B ? boxing_op(b, FC_OP_ALL_GATHER, v, from.dim, 0, FC_SBP_SUM, ax)
                               : boxing_op(b, FC_OP_ALL_TO_ALL, v, to.dim, from.dim, FC_SBP_SUM, ax);
  case FC_SBP_P:
    return to.kind == FC_SBP_B ? boxing_op(b, FC_OP_ALL_REDUCE, v, 0, 0, from.reduce, ax)
                               : boxing_op(b, FC_OP_REDUCE_SCATTER, v, to.dim, 0, from.reduce, ax);
  }
  return NULL;
}

static FcValue *box_new(Sbp *s, FcValue *v, const FcSbp *from, const FcSbp *to, FcOp *before) {
  FcBuilder b;
  fc_rw_builder_before(&b, before, s->diag);
  FcType global = info_of(s, v)->global;
  FcSbpStep steps[2 * FC_SBP_MAX_AXES];
  int n = fc_sbp_steps(s->p, from, to, steps);
  if (n < 0) {
    /* No rule asks for a partial operand that does not arrive partial. */
    fc_error(s->diag, FC_ERR_INTERNAL, "sbp: node '%s': cannot box to a partial value", fc_op_name(before));
    return NULL;
  }
  FcSbp cur[FC_SBP_MAX_AXES];
  for (int a = 0; a < FC_SBP_MAX_AXES; a++) cur[a] = a < s->p->n_axes ? from[a] : FC_SBP_BCAST;
  FcValue *y = v;
  for (int i = 0; i < n; i++) {
    cur[steps[i].axis] = steps[i].to;
    FcSbp *after = FC_NEW_ARRAY(s->scratch, FcSbp, FC_SBP_MAX_AXES);
    memcpy(after, cur, sizeof cur);
    y = box_step(s, &b, y, &steps[i], after);
    if (!y) return NULL;
    if (!info_of(s, y)->set || !fc_sbp_sigs_equal(s->p, info_of(s, y)->sig, after)) set_sig(s, y, after, &global);
  }
  return y;
}

/* The local type of a value of global type t with signatures sig. */
static FcType local_type(Sbp *s, const FcType *t, const FcSbp *sig) {
  return fc_sbp_local_type(s->p, t, sig, s->p->n_axes, s->scratch);
}

void fc_sbp_localize_attrs(FcOp *op, const FcType *local, const FcSbp *sig, int n_axes, FcArena *a) {
  if (op->kind == FC_OP_RESHAPE) {
    fc_op_set_attr(op, FC_A_INTS(SHAPE, local->dims, local->rank));
  } else if (op->kind == FC_OP_SLICE) {
    const int64_t *ends;
    int n = fc_op_attr_ints(op, FC_ATTR_ENDS, &ends);
    int64_t *e = FC_NEW_ARRAY(a, int64_t, (size_t)(n > 0 ? n : 1));
    if (n) memcpy(e, ends, (size_t)n * sizeof *e);
    /* rule_slice keeps a split only through a whole dim (start 0, step 1), whose end is then the local dim;
     * the other dims are sliced as before. */
    for (int ax = 0; ax < n_axes; ax++)
      if (sig[ax].kind == FC_SBP_S && sig[ax].dim < n) e[sig[ax].dim] = local->dims[sig[ax].dim];
    fc_op_set_attr(op, FC_A_INTS(ENDS, e, n));
  }
}

static bool any_kind(const FcSbp *sig, int n, FcSbpKind kind) {
  for (int a = 0; a < n; a++)
    if (sig[a].kind == kind) return true;
  return false;
}

static FcStatus distribute_op(Sbp *s, int k) {
  FcOp *op = s->p->ops[k];
  const FcSbp *need = s->p->need[k], *out = s->p->out[k];
  int n_in = op->n_operands, n_out = op->n_results, na = s->p->n_axes;
  FcType *global = FC_NEW_ARRAY(s->scratch, FcType, (size_t)n_out + 1);
  bool any_split_in = false, kept = false;
  for (int i = 0; i < n_in; i++) {
    FcValue *v = op->operands[i].value;
    if (!v) continue;
    FC_ASSERT(info_of(s, v)->set);
    any_split_in |= any_kind(info_of(s, v)->sig, na, FC_SBP_S);
    kept |= any_kind(&need[i * na], na, FC_SBP_S) || any_kind(&need[i * na], na, FC_SBP_P);
  }
  for (int j = 0; j < n_out; j++) {
    global[j] = op->results[j].type;
    kept |= any_kind(&out[j * na], na, FC_SBP_S) || any_kind(&out[j * na], na, FC_SBP_P);
  }
  if (op->kind != FC_OP_RETURN && !kept && any_split_in) {
    /* Only a gathered split is worth a note: reducing partial sums before a non-linear op (a bias add after a
     * row-parallel matmul) is the plan, not a loss. */
    FcAnnotValue note = FC_AV_STRING(fc_sbp_rule(op->kind) ? "no split of these operands carries through this op: it runs on whole tensors"
                                                            : "no SBP rule for this op: it runs on whole tensors");
    fc_op_set_annot(op, fc_annot_name(FC_ANNOT_SBP_NOTE), &note);
  }
  for (int i = 0; i < n_in; i++) {
    FcValue *v = op->operands[i].value;
    if (!v || fc_sbp_sigs_equal(s->p, info_of(s, v)->sig, &need[i * na])) continue;
    FcValue *y = box(s, v, info_of(s, v)->sig, &need[i * na], op);
    if (!y) return s->diag->status != FC_OK ? s->diag->status : FC_ERR_INTERNAL;
    fc_op_set_operand(op, i, y);
  }
  if (op->kind == FC_OP_RETURN) return FC_OK;
  FcType *local = FC_NEW_ARRAY(s->scratch, FcType, (size_t)n_out + 1);
  for (int j = 0; j < n_out; j++) local[j] = local_type(s, &global[j], &out[j * na]);
  if (n_out && any_kind(out, na, FC_SBP_S)) fc_sbp_localize_attrs(op, &local[0], out, na, s->scratch);
  FcStatus st = fc_op_infer_results(op, &s->m->arena, s->diag);
  if (st != FC_OK) return st;
  for (int j = 0; j < n_out; j++) {
    if (!fc_type_equal(&op->results[j].type, &local[j])) {
      char a[256], b[256];
      return fc_error_node(s->diag, FC_ERR_INTERNAL, fc_op_name(op), fc_op_info(op->kind)->name,
                           "sbp: result %d is %s on a rank, expected %s", j, fc_type_str(&op->results[j].type, a, sizeof a),
                           fc_type_str(&local[j], b, sizeof b));
    }
    set_sig(s, &op->results[j], &out[j * na], &global[j]);
  }
  return FC_OK;
}

FcStatus fc_sbp_apply(const FcSbpPlan *p, FcPassContext *pc) {
  FcModule *m = p->m;
  Sbp s = {.p = p, .m = m, .g = p->g, .diag = pc->diag, .scratch = &pc->scratch};
  s.n_mesh = fc_module_mesh(m, NULL);
  if (p->group == 1) return FC_OK; /* one rank: the program is the one-process program */
  FcGraph *g = p->g;
  FC_ASSERT(g->next_value_id == p->n_ids); /* the plan is for this graph as it is */
  const FcSbp *whole = all_axes(&s, FC_SBP_BCAST);
  for (int i = 0; i < g->n_inputs; i++) {
    FcValue *x = g->inputs[i];
    set_sig(&s, x, whole, &x->type);
  }
  for (int k = 0; k < p->n_ops; k++)
    if (p->ops[k]->kind == FC_OP_CONSTANT) set_sig(&s, &p->ops[k]->results[0], whole, &p->ops[k]->results[0].type);
  /* Inputs planned split are sliced once, at the top, named after the input (not after the op they went in
   * front of). */
  for (int i = 0; i < g->n_inputs && g->first; i++) {
    FcValue *x = g->inputs[i];
    const FcSbp *want = &p->input[(size_t)i * (size_t)p->n_axes];
    if (fc_sbp_sigs_equal(p, want, whole) || !fc_value_has_uses(x)) continue;
    FcValue *y = box(&s, x, whole, want, g->first);
    if (!y) return pc->diag->status != FC_OK ? pc->diag->status : FC_ERR_INTERNAL;
    /* The slices (one per split axis, a chain from x to y) take x; every other use takes y. */
    fc_value_replace_all_uses(x, y);
    FcOp *top = y->def;
    while (top->operands[0].value != y) top = top->operands[0].value->def;
    fc_op_set_operand(top, 0, x);
    for (FcOp *o = y->def;; o = o->operands[0].value->def) {
      o->loc = x->name;
      if (o == top) break;
    }
  }
  for (int k = 0; k < p->n_ops; k++) {
    if (p->ops[k]->kind == FC_OP_CONSTANT) continue;
    FcStatus st = distribute_op(&s, k);
    if (st != FC_OK) return st;
  }
  return FC_OK;
}

/* ---- the fixed strategies ------------------------------------------------------------------------------- */

static FcStatus run_fixed(FcModule *m, FcPassContext *pc, FcSbpStrategy strategy, const char *name) {
  if (m->graph->parent) return FC_OK;
  if (fc_module_mesh(m, NULL) == 0)
    return fc_error(pc->diag, FC_ERR_INPUT, "pass %s needs the module's mesh (flow.mesh: flowc build --ranks N)", name);
  FcSbpPlan p;
  FcStatus st = fc_sbp_plan_init(&p, m, &pc->scratch, pc->diag);
  if (st == FC_OK && p.group > 1) st = fc_sbp_plan_forward(&p, &strategy, NULL, &pc->scratch, pc->diag);
  if (st == FC_OK) st = fc_sbp_apply(&p, pc);
  return st;
}

FcStatus fc_sbp_axes_plan(FcModule *m, const char *list, FcArena *a, FcSbpPlan *plan, FcDiag *diag) {
  int n_mesh = fc_module_mesh(m, NULL);
  FcStatus st = fc_sbp_plan_init_axes(plan, m, a, diag);
  if (st != FC_OK) return st;
  FcSbpStrategy s[FC_SBP_MAX_AXES];
  int n = 0;
  for (const char *c = list; n <= n_mesh;) {
    size_t len = strcspn(c, ",");
    if (n < n_mesh) {
      if (len == 4 && strncmp(c, "data", 4) == 0) s[n] = FC_SBP_DATA;
      else if (len == 6 && strncmp(c, "tensor", 6) == 0) s[n] = FC_SBP_TENSOR;
      /* Pipeline stages on axis 0 (place_stages placed the ops): whole tensors along it, no boxing over it. */
      else if (n == 0 && len == 8 && strncmp(c, "pipeline", 8) == 0) s[n] = FC_SBP_ASSIGNED;
      else return fc_error(diag, FC_ERR_INPUT, "sbp axes '%s': '%.*s' is not data or tensor", list, (int)len, c);
    }
    n++;
    if (!c[len]) break;
    c += len + 1;
  }
  if (n != n_mesh)
    return fc_error(diag, FC_ERR_INPUT, "sbp axes '%s': %d strateg%s for a mesh of %d axes", list, n, n == 1 ? "y" : "ies",
                    n_mesh);
  return plan->group > 1 ? fc_sbp_plan_forward(plan, s, NULL, a, diag) : FC_OK;
}

/* Pass sbp_axes: one strategy per mesh axis, from the module attribute flow.sbp_axes (which it drops). */
FcStatus fc_pass_sbp_axes(FcModule *m, FcPassContext *pc) {
  if (m->graph->parent) return FC_OK;
  const FcAnnotValue *v = fc_annots_get(&m->annots, fc_annot_name(FC_ANNOT_SBP_AXES));
  if (!v || v->kind != FC_AV_STR || !v->s)
    return fc_error(pc->diag, FC_ERR_INPUT, "pass sbp_axes needs the module attribute flow.sbp_axes (flowc build --sbp data,tensor)");
  const char *list = fc_arena_strdup(&pc->scratch, v->s);
  fc_annots_remove(&m->annots, fc_annot_name(FC_ANNOT_SBP_AXES));
  if (fc_module_mesh(m, NULL) == 0)
    return fc_error(pc->diag, FC_ERR_INPUT, "pass sbp_axes needs the module's mesh (flow.mesh: flowc build --ranks N)");
  FcSbpPlan p;
  FcStatus st = fc_sbp_axes_plan(m, list, &pc->scratch, &p, pc->diag);
  return st == FC_OK ? fc_sbp_apply(&p, pc) : st;
}

FcStatus fc_pass_sbp_data(FcModule *m, FcPassContext *pc) { return run_fixed(m, pc, FC_SBP_DATA, "sbp_data"); }
FcStatus fc_pass_sbp_tensor(FcModule *m, FcPassContext *pc) { return run_fixed(m, pc, FC_SBP_TENSOR, "sbp_tensor"); }
