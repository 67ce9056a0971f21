/* fuse_layer_norm.c — recognises LayerNorm written out in element-wise ops and reductions, as PyTorch
 * exports it below opset 17, and replaces it by one flow.layer_norm:
 *
 *     m = reduce_mean(x, axes = [a, .., r-1], keepdims = 1)
 *     d = sub(x, m)
 *     p = pow(d, 2)             or  mul(d, d)
 *     v = reduce_mean(p, the same axes, keepdims = 1)
 *     s = sqrt(add(v, eps))     eps a constant scalar >= 0, on either side of the add
 *     y = div(d, s)             or  mul(d, reciprocal(s)), either side
 *     y = mul(y, gamma)         optional; gamma constant along dims < a
 *     y = add(y, beta)          optional; beta constant along dims < a
 *  -> layer_norm(x, gamma or 1, beta?) {axis = a, epsilon = eps}
 *
 * The match starts at each div (or mul by a reciprocal) and walks up its operands; every op must have the
 * types the pattern implies (d and y exactly x's type, the statistics x's shape with the normalised dims
 * 1), so no broadcast is lost. The affine tail is taken only while the value it extends has no other user
 * (otherwise that user needs the un-scaled value) and only when gamma / beta do not vary along the outer
 * dims; one with leading size-1 dims beyond the normalised rank is reshaped to the normalised dims.
 * Intermediate values of the pattern may have other users: they keep their ops, and the layer_norm is
 * still exact, since it recomputes from x. The new op is placed just before the last op it replaces
 * (where every operand is defined) and takes over that op's uses; the pattern's ops left unused are
 * erased. The kernel computes (x - mean) * (1 / sqrt(var + eps)) * gamma + beta, two passes over each row
 * as the pattern does, so the result differs from the written-out form only in rounding.
 */
#include "passes.h"
#include "rewrite.h"

#include <math.h>

typedef struct Match {
  FcValue *x;
  int axis;
  float eps;
  FcValue *d;       /* x - mean */
  FcOp *last;       /* the op whose result the layer_norm replaces */
  FcValue *gamma, *beta;
} Match;

static FcOp *def_kind(const FcValue *v, FcOpKind kind) {
  return v && v->def && !v->def->erased && v->def->kind == kind ? v->def : NULL;
}

static FcValue *operand(const FcOp *op, int i) { return op->operands[i].value; }

/* The single constant element of v (a constant with one element), as double. */
static bool const_scalar(const FcValue *v, double *out) {
  const FcTensor *t = fc_value_const(v);
  int64_t n;
  if (!t || !fc_type_numel(&t->type, &n) || n != 1) return false;
  *out = fc_tensor_get_f64(t, 0);
  return true;
}

/* reduce_mean(x) over exactly the trailing dims [axis, rank) with keepdims; *axis is set from the first
 * mean seen and must agree for the second. */
static FcValue *mean_of(const FcValue *v, int *axis) {
  FcOp *op = def_kind(v, FC_OP_REDUCE_MEAN);
  if (!op || fc_op_attr_int(op, FC_ATTR_KEEPDIMS, 0) != 1) return NULL;
  FcValue *x = operand(op, 0);
  const int64_t *ax;
  int n = fc_op_attr_ints(op, FC_ATTR_AXES, &ax), r = x->type.rank;
  if (n < 1 || n > r) return NULL;
  for (int i = 0; i < n; i++)
    if (ax[i] != r - n + i) return NULL;
  if (*axis >= 0 && *axis != r - n) return NULL;
  *axis = r - n;
  return x;
}

/* The value s is divided by in y (y = d / s or d * reciprocal(s)); sets *d. */
static FcValue *divisor_of(const FcOp *y, FcValue **d) {
  if (y->kind == FC_OP_DIV) {
    *d = operand(y, 0);
    return operand(y, 1);
  }
  if (y->kind != FC_OP_MUL) return NULL;
  for (int i = 0; i < 2; i++) {
    FcOp *rc = def_kind(operand(y, i), FC_OP_RECIPROCAL);
    if (rc) {
      *d = operand(y, 1 - i);
      return operand(rc, 0);
    }
  }
  return NULL;
}

/* True for a value whose type is x's with the dims from axis on set to 1 (a per-row statistic). */
static bool row_stat(const FcValue *v, const FcValue *x, int axis) {
  const FcType *t = &v->type, *xt = &x->type;
  if (t->dtype != xt->dtype || t->rank != xt->rank) return false;
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i] != (i < axis ? xt->dims[i] : 1)) return false;
  return true;
}

/* Matches the normalisation (up to y) ending at op y. */
static bool match_core(FcOp *y, Match *mt) {
  FcValue *d = NULL, *s = divisor_of(y, &d);
  if (!s || !fc_dtype_is_float(y->results[0].type.dtype)) return false;
  FcOp *sub = def_kind(d, FC_OP_SUB), *sq = def_kind(s, FC_OP_SQRT);
  if (!sub || !sq) return false;
  FcOp *add = def_kind(operand(sq, 0), FC_OP_ADD);
  if (!add) return false;
  double eps;
  FcValue *v;
  if (const_scalar(operand(add, 1), &eps)) v = operand(add, 0);
  else if (const_scalar(operand(add, 0), &eps)) v = operand(add, 1);
  else return false;
  if (!(eps >= 0) || !isfinite(eps)) return false;
  int axis = -1;
  FcValue *p = mean_of(v, &axis);
  FcValue *x = operand(sub, 0);
  if (!p || mean_of(operand(sub, 1), &axis) != x) return false;
  FcOp *sqr;
  double two;
  if ((sqr = def_kind(p, FC_OP_POW))) {
    if (operand(sqr, 0) != d || !const_scalar(operand(sqr, 1), &two) || two != 2.0) return false;
  } else if ((sqr = def_kind(p, FC_OP_MUL))) {
    if (operand(sqr, 0) != d || operand(sqr, 1) != d) return false;
  } else {
    return false;
  }
  if (!fc_type_equal(&d->type, &x->type) || !fc_type_equal(&p->type, &x->type) ||
      !fc_type_equal(&y->results[0].type, &x->type))
    return false;
  if (!row_stat(operand(sub, 1), x, axis) || !row_stat(v, x, axis) || !row_stat(s, x, axis) ||
      !row_stat(&add->results[0], x, axis))
    return false;
  *mt = (Match){.x = x, .axis = axis, .eps = (float)eps, .d = d, .last = y};
  return true;
}

/* gamma or beta: x's dtype, and not varying along the dims before axis (after right alignment). */
static bool affine_param(const FcValue *pv, const Match *mt) {
  const FcType *t = &pv->type, *xt = &mt->x->type;
  if (t->dtype != xt->dtype || t->rank > xt->rank) return false;
  for (int i = 0; i < t->rank; i++) {
    int k = xt->rank - t->rank + i;
    if (k < mt->axis ? t->dims[i] != 1 : (t->dims[i] != 1 && t->dims[i] != xt->dims[k])) return false;
  }
  return true;
}

/* Extends the match by `op(last, param)` (either side) when last's only user is such an op. */
static FcValue *affine_step(Match *mt, FcOpKind kind) {
  FcValue *y = &mt->last->results[0];
  if (fc_value_num_uses(y) != 1) return NULL;
  FcOp *u = y->first_use->user;
  if (u->kind != kind || u->erased || !fc_type_equal(&u->results[0].type, &mt->x->type)) return NULL;
  FcValue *pv = operand(u, 0) == y ? operand(u, 1) : operand(u, 0);
  if (pv == y || !affine_param(pv, mt)) return NULL;
  mt->last = u;
  return pv;
}

/* gamma/beta with more dims than the normalised ones (all of them 1) become a reshape to those dims. */
static FcValue *to_norm_rank(FcBuilder *b, FcValue *pv, const Match *mt) {
  int nn = mt->x->type.rank - mt->axis;
  if (pv->type.rank <= nn) return pv;
  return fc_b_reshape(b, pv, nn, pv->type.dims + (pv->type.rank - nn));
}

/* ones[dt]: the scalar 1 used as scale where the pattern has no gamma, one per dtype and pass run, made at
 * the top of the graph so that it precedes every layer_norm that uses it. */
static FcStatus rewrite(FcModule *m, Match *mt, FcValue **ones, FcOpStack *scratch, FcDiag *diag) {
  FcBuilder b;
  fc_builder_init(&b, m->graph, diag);
  b.before = mt->last;
  b.loc = mt->last->loc;
  FcDtype dt = mt->x->type.dtype;
  FcValue *scale = mt->gamma;
  if (scale) scale = to_norm_rank(&b, scale, mt);
  else if (!(scale = ones[dt])) {
    FcBuilder cb = b;
    cb.before = m->graph->first;
    scale = ones[dt] = fc_b_scalar(&cb, dt, 1.0);
    if (fc_b_status(&cb) != FC_OK) return fc_b_status(&cb);
  }
  FcValue *bias = mt->beta ? to_norm_rank(&b, mt->beta, mt) : NULL;
  FcValue *ops[3] = {mt->x, scale, bias};
  FcAttr attrs[2] = {FC_A_INT(AXIS, mt->axis), FC_A_FLOAT(EPSILON, mt->eps)};
  FcValue *ln = fc_b_op1(&b, FC_OP_LAYER_NORM, ops, bias ? 3 : 2, attrs, 2);
  if (fc_b_status(&b) != FC_OK) return fc_b_status(&b);
  fc_rw_replace_op(mt->last, &ln, scratch);
  return FC_OK;
}

FcStatus fc_pass_fuse_layer_norm(FcModule *m, FcPassContext *pc) {
  FcDiag *diag = pc->diag;
  FcOpStack scratch, cands;
  FcValue *ones[FC_DT_COUNT] = {NULL};
  fc_op_stack_init(&scratch, &m->arena);
  fc_op_stack_init(&cands, &pc->scratch);
  /* Candidates first: a rewrite erases ops and inserts one, so the list is not walked while it changes
   * (an erased op stays readable, with its flag set). */
  fc_graph_for_each_op(m->graph, op)
    if (op->kind == FC_OP_DIV || op->kind == FC_OP_MUL) fc_op_stack_push(&cands, op);
  for (int i = 0; i < cands.n; i++) {
    FcOp *op = cands.v[i];
    Match mt;
    if (op->erased || !match_core(op, &mt)) continue;
    mt.gamma = affine_step(&mt, FC_OP_MUL);
    mt.beta = affine_step(&mt, FC_OP_ADD);
    FcStatus st = rewrite(m, &mt, ones, &scratch, diag);
    if (st != FC_OK) return st;
  }
  return FC_OK;
}
