/* microbatch.c — pass microbatch: the batch cut into M micro-batches, the graph run once per micro-batch on
 * its rows (the module attribute flow.micro_batches = M, which the pass drops; flowc build --sbp pipeline
 * --micro-batches M; 0, auto: as many as the mesh's axis 0 has stages where the batch divides), so that the stages of a pipeline placement overlap: while stage 1 runs micro-batch m,
 * stage 0 runs m + 1 (place_stages.c placed the ops; split_stages.c then cuts each rank's program).
 *
 * Which ops see only their micro-batch's rows is SBP data parallelism over M parts (sbp.c's plan over a
 * group of M, fc_sbp_plan_init_group): each graph input whose dim 0 divides by M is split S(0) and the rules
 * carry the split through the ops that allow it. An op the plan runs on whole operands giving whole results
 * (weights, shape arithmetic) stays, computed once; every other op is copied M times, in micro-batch order
 * (all of micro-batch 0's ops, then 1's, ...), each copy reading its micro-batch's operands, with its shape
 * attributes localised as the sbp pass does (fc_sbp_localize_attrs) and its annotations (the placement)
 * kept; a whole operand it takes split is cut by a static slice (a graph input: once per micro-batch). Each
 * output is the copies' results concatenated along their split dim. An op that would need the whole batch of
 * a split operand (a reduction over the batch, a reshape that mixes it with another dim) makes the pass fail
 * naming it, as does a loop or if on split values: micro-batches would change their results (auto then
 * keeps one micro-batch instead). Quantised ops keep whole tensors in the SBP rules, so a quantised model's
 * batch is not cut either.
 */
#include "passes.h"
#include "rewrite.h"
#include "sbp.h"

#include <string.h>

typedef struct Micro {
  FcModule *m;
  FcSbpPlan p;
  FcDiag *diag;
  FcArena *a;
  FcOp *ret;
  int64_t n;       /* micro-batches */
  FcValue ***copy; /* copy[mb][value id]: micro-batch mb's part of a split value (NULL: not made yet) */
} Micro;

static bool whole(FcSbp s) { return s.kind == FC_SBP_B; }

/* Whether plan op k runs per micro-batch (some operand or result split) — after checking that every split
 * operand arrives as the op takes it, or arrives whole and is cut. */
static FcStatus per_micro_batch(Micro *mc, int k, bool *per) {
  const FcOp *op = mc->p.ops[k];
  *per = false;
  for (int j = 0; j < op->n_results; j++) {
    if (mc->p.out[k][j].kind == FC_SBP_P) goto mixes;
    *per |= !whole(mc->p.out[k][j]);
  }
  for (int i = 0; i < op->n_operands; i++) {
    const FcValue *v = op->operands[i].value;
    if (!v) continue;
    FcSbp from = fc_sbp_plan_sig(&mc->p, v), need = mc->p.need[k][i];
    if (!whole(need) || !whole(from)) *per = true;
    if (fc_sbp_equal(from, need) || (whole(from) && need.kind == FC_SBP_S)) continue;
    goto mixes;
  }
  if (*per && op->n_regions)
    return fc_error_node(mc->diag, FC_ERR_INPUT, fc_op_name(op), fc_op_info(op->kind)->name,
                         "%lld micro-batches: a loop or if on the batch is not cut into micro-batches", (long long)mc->n);
  for (int j = 0; j < op->n_results && *per; j++)
    if (whole(mc->p.out[k][j]) && fc_value_has_uses(&op->results[j])) goto mixes;
  return FC_OK;
mixes:
  return fc_error_node(mc->diag, FC_ERR_INPUT, fc_op_name(op), fc_op_info(op->kind)->name,
                       "%lld micro-batches: this op mixes the rows of the batch, so it cannot run per micro-batch",
                       (long long)mc->n);
}

/* Rows [mb * n / M, (mb + 1) * n / M) of dim d of whole value v, in front of the return; placed as `like`. */
static FcValue *cut(Micro *mc, FcValue *v, int64_t d, int64_t mb, const FcOp *like) {
  const FcType *t = &v->type;
  int64_t *starts = FC_NEW_ARRAY(mc->a, int64_t, (size_t)t->rank + 1), *ends = FC_NEW_ARRAY(mc->a, int64_t, (size_t)t->rank + 1);
  int64_t *steps = FC_NEW_ARRAY(mc->a, int64_t, (size_t)t->rank + 1);
  for (int i = 0; i < t->rank; i++) starts[i] = 0, ends[i] = t->dims[i], steps[i] = 1;
  int64_t part = t->dims[d] / mc->n;
  starts[d] = mb * part;
  ends[d] = starts[d] + part;
  FcBuilder b;
  fc_rw_builder_before(&b, mc->ret, mc->diag);
  b.loc = v->name ? v->name : like->loc;
  FcValue *y = fc_b_slice(&b, v, starts, ends, steps);
  const FcAnnotValue *pl = like ? fc_op_annot(like, fc_annot_name(FC_ANNOT_PLACEMENT)) : NULL;
  if (y && pl) fc_op_set_annot(y->def, fc_annot_name(FC_ANNOT_PLACEMENT), pl);
  return y;
}

/* Micro-batch mb's copy of plan op k, in front of the return. */
static FcStatus copy_op(Micro *mc, int k, int64_t mb) {
  const FcOp *op = mc->p.ops[k];
  FcValue **in = FC_NEW_ARRAY(mc->a, FcValue *, (size_t)op->n_operands + 1);
  for (int i = 0; i < op->n_operands; i++) {
    FcValue *v = op->operands[i].value;
    in[i] = v;
    if (!v) continue;
    FcSbp from = fc_sbp_plan_sig(&mc->p, v), need = mc->p.need[k][i];
    if (!whole(from)) {
      FcValue **c = &mc->copy[mb][v->id];
      if (!*c && !v->def) *c = cut(mc, v, from.dim, mb, op); /* a graph input: cut once per micro-batch */
      if (!*c) return mc->diag->status != FC_OK ? mc->diag->status : FC_ERR_INTERNAL;
      in[i] = *c;
    } else if (!whole(need)) {
      in[i] = cut(mc, v, need.dim, mb, op);
      if (!in[i]) return mc->diag->status != FC_OK ? mc->diag->status : FC_ERR_INTERNAL;
    }
  }
  FcOp *c = fc_op_create(mc->m->graph, op->kind, in, op->n_operands, op->n_results);
  for (int j = 0; j < op->n_attrs; j++) fc_op_set_attr(c, op->attrs[j]);
  c->loc = op->loc;
  fc_annots_copy_kept(&mc->m->arena, &c->annots, &op->annots);
  FcType *local = FC_NEW_ARRAY(mc->a, FcType, (size_t)op->n_results + 1);
  for (int j = 0; j < op->n_results; j++) local[j] = fc_sbp_local_type(&mc->p, &op->results[j].type, &mc->p.out[k][j], 1, mc->a);
  if (op->n_results) fc_sbp_localize_attrs(c, &local[0], mc->p.out[k], 1, mc->a);
  fc_op_insert_before(mc->ret, c);
  FcStatus st = fc_op_infer_results(c, &mc->m->arena, mc->diag);
  if (st != FC_OK) return st;
  for (int j = 0; j < op->n_results; j++) {
    if (!fc_type_equal(&c->results[j].type, &local[j])) {
      char x[256], y[256];
      return fc_error_node(mc->diag, FC_ERR_INTERNAL, fc_op_name(op), fc_op_info(op->kind)->name,
                           "microbatch: result %d is %s per micro-batch, expected %s", j,
                           fc_type_str(&c->results[j].type, x, sizeof x), fc_type_str(&local[j], y, sizeof y));
    }
    mc->copy[mb][op->results[j].id] = &c->results[j];
  }
  return FC_OK;
}

/* The data plan over the micro-batches and which ops run per micro-batch (*per, by plan op), or the error
 * that says why the graph cannot be cut. */
static FcStatus plan(Micro *mc, bool **per) {
  FcGraph *g = mc->m->graph;
  FcStatus st = fc_sbp_plan_init_group(&mc->p, mc->m, mc->n, mc->a, mc->diag);
  if (st != FC_OK) return st;
  FcSbpStrategy data = FC_SBP_DATA;
  if ((st = fc_sbp_plan_forward(&mc->p, &data, NULL, mc->a, mc->diag)) != FC_OK) return st;
  bool any = false;
  for (int i = 0; i < g->n_inputs; i++) any |= !whole(mc->p.input[i]);
  if (!any)
    return fc_error(mc->diag, FC_ERR_INPUT, "%lld micro-batches: no graph input has a batch (dim 0) that divides into %lld",
                    (long long)mc->n, (long long)mc->n);
  *per = FC_NEW_ARRAY(mc->a, bool, (size_t)mc->p.n_ops + 1);
  for (int k = 0; k < mc->p.n_ops; k++) {
    const FcOp *op = mc->p.ops[k];
    if (op->kind == FC_OP_CONSTANT || op->kind == FC_OP_RETURN) continue;
    if ((st = per_micro_batch(mc, k, &(*per)[k])) != FC_OK) return st;
  }
  return FC_OK;
}

/* flow.micro_batches = 0 (auto): as many micro-batches as pipeline stages (mesh axis 0) where some graph
 * input's batch divides by that, else none. */
static int64_t auto_count(const FcModule *m) {
  const int64_t *mesh;
  if (fc_module_mesh(m, &mesh) == 0) return 1;
  const FcGraph *g = m->graph;
  for (int i = 0; i < g->n_inputs; i++) {
    const FcType *t = &g->inputs[i]->type;
    if (t->rank >= 1 && t->dims[0] >= mesh[0] && t->dims[0] % mesh[0] == 0 && fc_value_has_uses(g->inputs[i])) return mesh[0];
  }
  return 1;
}

FcStatus fc_pass_microbatch(FcModule *m, FcPassContext *pc) {
  FcGraph *g = m->graph;
  if (g->parent) return FC_OK;
  const FcAnnotValue *attr = fc_annots_get(&m->annots, fc_annot_name(FC_ANNOT_MICRO_BATCHES));
  if (!attr || attr->kind != FC_AV_INT)
    return fc_error(pc->diag, FC_ERR_INPUT, "pass microbatch needs the module attribute flow.micro_batches (flowc build --sbp pipeline --micro-batches M)");
  int64_t n = attr->i;
  fc_annots_remove(&m->annots, fc_annot_name(FC_ANNOT_MICRO_BATCHES));
  bool automatic = n == 0;
  if (automatic) n = auto_count(m);
  if (n <= 1) return FC_OK;
  /* auto: one micro-batch where the graph cannot be cut (an op mixes the rows of the batch): the plan is
   * tried with diagnostics of its own. */
  FcDiag quiet;
  fc_diag_init(&quiet);
  Micro mc = {.m = m, .diag = automatic ? &quiet : pc->diag, .a = &pc->scratch, .ret = fc_graph_return(g), .n = n};
  bool *per = NULL;
  FcStatus st = plan(&mc, &per);
  if (st != FC_OK) return automatic ? FC_OK : st;
  mc.diag = pc->diag;
  mc.copy = FC_NEW_ARRAY(mc.a, FcValue **, (size_t)n);
  for (int64_t mb = 0; mb < n; mb++) mc.copy[mb] = FC_NEW_ARRAY(mc.a, FcValue *, (size_t)mc.p.n_ids + 1);
  for (int64_t mb = 0; mb < n; mb++)
    for (int k = 0; k < mc.p.n_ops; k++)
      if (per[k] && (st = copy_op(&mc, k, mb)) != FC_OK) return st;
  /* The outputs: the micro-batches' parts joined, on the stage that made them. */
  for (int i = 0; i < mc.ret->n_operands; i++) {
    FcValue *v = mc.ret->operands[i].value;
    FcSbp s = fc_sbp_plan_sig(&mc.p, v);
    if (whole(s)) continue;
    FcValue **parts = FC_NEW_ARRAY(mc.a, FcValue *, (size_t)n);
    for (int64_t mb = 0; mb < n; mb++) {
      parts[mb] = mc.copy[mb][v->id];
      if (!parts[mb]) parts[mb] = cut(&mc, v, s.dim, mb, mc.ret); /* a graph input returned as it is */
      if (!parts[mb]) return pc->diag->status != FC_OK ? pc->diag->status : FC_ERR_INTERNAL;
    }
    FcBuilder b;
    fc_rw_builder_before(&b, mc.ret, pc->diag);
    b.loc = v->def ? v->def->loc : v->name;
    FcValue *y = fc_b_concat(&b, parts, (int)n, s.dim);
    if (!y) return fc_b_status(&b);
    const FcAnnotValue *pl = parts[n - 1]->def ? fc_op_annot(parts[n - 1]->def, fc_annot_name(FC_ANNOT_PLACEMENT)) : NULL;
    if (pl) fc_op_set_annot(y->def, fc_annot_name(FC_ANNOT_PLACEMENT), pl);
    fc_op_set_operand(mc.ret, i, y);
  }
  for (int k = mc.p.n_ops - 1; k >= 0; k--)
    if (per[k]) fc_op_erase(mc.p.ops[k]);
  return FC_OK;
}
