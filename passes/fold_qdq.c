/* fold_qdq.c — turns the quantize/dequantize patterns of a QDQ model into quantised convs, matmuls and means
 * (ops.def: qtype), which run on integer kernels, and moves data-movement ops onto the quantised values.
 *
 * The importer writes QuantizeLinear/DequantizeLinear with constant parameters as quantize and dequantize
 * (canonicalize removes the storage casts between them), so a quantised layer arrives as
 *     dequantize(xq) -> conv/matmul(., dequantize(wq constant), bias) -> [relu | max/min by scalars] -> quantize
 * Five rewrites, in one forward walk over a snapshot of the ops (producers first, so a rewrite has seen
 * everything above it; ops that an earlier rewrite erased are skipped):
 *
 *   sink       P(dequantize(q)..) -> dequantize(P(q)..) for the pass-through ops P of qspec §3 (reshape, transpose,
 *              max_pool without indices, slice, concat, a nearest resize) when every operand is a dequantize used by P
 *              alone, all of per-tensor types on one grid (storage, scale, zero point; ranges narrowed differently are
 *              read through views of their union's type): exact (they move integers, and max commutes with the monotone
 *              dequantisation), moves a quarter of the bytes, and brings the dequantize to the quantize or conv below
 *              it. When P's result is read by other pass-through ops that would sink as well, each gets a dequantize of
 *              its own (a split after a channel shuffle). Dequantized constants are not sunk: they are weights, matched
 *              where they are used (a Gemm's transposed weight included).
 *   concat     quantize(concat(dequantize(q_i)..)) -> concat(r_i..) when the concat's operands are dequantized
 *              8-bit values of other scales (requant_concat below): each r_i is q_i requantised to the
 *              quantize's type, or q_i where it has that type already. Exact.
 *   requant    quantize(dequantize(q)) -> q when the quantize has q's scale, zero point and storage and a
 *              range containing q's: dequantize then quantize returns every integer unchanged, since
 *              (k * s) / s rounds back to k for |k| < 2^16 and a normal f32 scale. Other pairs stay
 *              (dequantize(quantize(x)) rounds x, and is never removed).
 *   compute    a conv/matmul without epilogue whose input is dequantize(xq) (xq per-tensor, 8-bit) and
 *              whose weight is dequantize(constant wq) (8-bit, per tensor or per output channel: conv dim
 *              0, matmul [K, N] dim 1; a matmul weight may be transpose(dequantize(constant [N, K])), as
 *              Gemm's transB imports) becomes the quantised op on xq and wq. Its bias (conv operand 2; for
 *              matmul the add of a [N] constant its only user is) becomes i32 in units of sx*sw[c]:
 *              rne(b / (sx*sw[c])) from an f32 constant, or the integers of dequantize(constant i32)
 *              when its scale is sx*sw[c] (relative 1e-6), else requantised the same way. A bias that does
 *              not fit i32, or is not finite, leaves the op as it is.
 *              The result: when the op's (or bias add's) result has one use, a chain of single-use
 *              relu / max(., c) / min(., c) (c a scalar constant: ReLU, ReLU6, Clip) may follow, and then a
 *              quantize to a per-tensor 8-bit type qy, the quantised op computes qy directly, its range
 *              narrowed to what the activations allow: each max(., c) / min(., c) maps the clamp interval
 *              [a, b] to [max(a, Q(c)), max(b, Q(c))] / [min(a, Q(c)), min(b, Q(c))], Q(c) =
 *              clamp(rne(c / sy) + zy, qmin, qmax) — exact, because quantisation is monotone and commutes
 *              with max and min. A narrowed range that excludes zy or is a single value is not a valid
 *              type; then, and whenever there is no such chain, the op's result is qtype f32 and the f32
 *              ops after it stay.
 *              Users of the quantize that take any quantised type (dequantize, scast to storage) read the
 *              narrowed result directly; any other user gets it through scast(scast(y), qy): a view.
 *   mean       quantize(reduce_mean(dequantize(q))), q and the quantize per-tensor 8-bit, the mean's result
 *              used by the quantize alone -> reduce_mean(q) with the quantize's type as qtype: the sum of the
 *              integers is exact and the mean is formed in double (ops.def), so an exact tie (a global
 *              average of 64 integers summing to 672 is 10.5) rounds to even, where the f32 ops round each
 *              dequantized element, the sum and the quotient and turn it up or down by their order.
 *
 * Everything not matched is left as it is; lower_quant writes the rest as core f32 ops. The pass never
 * changes a type that an existing user sees.
 */
#include "passes.h"
#include "rewrite.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

enum { MAX_ACTS = 4 }; /* activations between a compute op and its quantize (Clip: 2) */

typedef struct Qdq {
  FcModule *m;
  const FcTarget *target;
  FcDiag *diag;
  FcOpStack scratch;
} Qdq;

/* The producer of v when it is an op of `kind` (and not erased), else NULL. */
static FcOp *def_kind(const FcValue *v, FcOpKind kind) {
  return v && v->def && v->def->kind == kind && !v->def->erased ? v->def : NULL;
}

/* The only user of v, or NULL when v has no use or several. */
static FcOp *single_user(const FcValue *v) {
  return v->first_use && !v->first_use->next_use ? v->first_use->user : NULL;
}

/* A per-tensor 8-bit type expressing f32: what a quantised op's input and requantised result may be. */
static bool per_tensor_8bit(const FcQuant *q) {
  return q && q->axis < 0 && fc_dtype_is_8bit(q->storage) && q->expressed == FC_DT_F32;
}

/* ---- sink: pass-through ops onto the quantised values ----------------------------------------------- */

/* The indices of a max are not a pass-through. */
static bool passes_through(const FcOp *op) { return op->n_results == 1 && fc_op_passes_quant_through(op); }

/* All uses of v are operands of op. */
static bool used_only_by(const FcValue *v, const FcOp *op) {
  for (const FcUse *u = v->first_use; u; u = u->next_use)
    if (u->user != op) return false;
  return true;
}

/* a and b quantise on the same grid (storage, scale, zero point), whatever their ranges. */
static bool same_grid(const FcQuant *a, const FcQuant *b) {
  FcQuant x = *a;
  x.qmin = b->qmin;
  x.qmax = b->qmax;
  return fc_quant_equal(&x, b);
}

/* Operand i of op is a dequantize that `op` alone reads, of a per-tensor type; its quantised value's type. */
static const FcQuant *sinkable_operand(const FcOp *op, int i) {
  FcValue *v = op->operands[i].value;
  FcOp *d = def_kind(v, FC_OP_DEQUANTIZE);
  if (!d || !used_only_by(v, op)) return NULL;
  const FcValue *qv = d->operands[0].value;
  const FcQuant *q = qv->type.quant;
  if (!q || q->axis >= 0 || fc_value_const(qv) ||
      (def_kind(qv, FC_OP_SCAST) && fc_value_const(qv->def->operands[0].value)))
    return NULL;
  return q;
}

/* y = dequantize(q), the result of a sunk pass-through op, read by several ops: each pass-through op among
 * them that would then sink too (every other operand a dequantize of q's type that it alone reads) gets a
 * dequantize of its own, so that a split or a channel shuffle's consumers move bytes as well (the walk
 * reaches them later). The others keep sharing y. */
static FcStatus split_for_sinking(Qdq *s, FcValue *y) {
  if (!y->first_use || !y->first_use->next_use) return FC_OK;
  FcValue *q = y->def->operands[0].value;
  int n = fc_value_num_uses(y), k = 0;
  FcUse **uses = FC_NEW_ARRAY(&s->m->arena, FcUse *, (size_t)n);
  for (FcUse *u = y->first_use; u; u = u->next_use) uses[k++] = u;
  FcOp **users = FC_NEW_ARRAY(&s->m->arena, FcOp *, (size_t)n);
  int *index = FC_NEW_ARRAY(&s->m->arena, int, (size_t)n);
  int m = 0;
  for (int i = 0; i < n; i++) {
    FcOp *user = uses[i]->user;
    if (!passes_through(user) || user->n_operands < 1 || user->n_operands > 4096) continue;
    bool sinks = true;
    for (int j = 0; j < user->n_operands && sinks; j++) {
      if (user->operands[j].value == y) continue;
      const FcQuant *qj = sinkable_operand(user, j);
      sinks = qj && same_grid(qj, q->type.quant);
    }
    if (!sinks) continue;
    users[m] = user;
    index[m++] = uses[i]->index;
  }
  if (m == n) m--; /* the last of them keeps y */
  for (int i = 0; i < m; i++) {
    FcBuilder b;
    fc_rw_builder_before(&b, users[i], s->diag);
    b.loc = y->def->loc;
    FcValue *dq = fc_b_dequantize(&b, q);
    if (fc_b_status(&b) != FC_OK) return fc_b_status(&b);
    fc_op_set_operand(users[i], index[i], dq);
  }
  return FC_OK;
}

static FcStatus sink(Qdq *s, FcOp *op) {
  if (op->n_operands < 1 || op->n_operands > 4096) return FC_OK;
  const FcQuant *q = NULL;
  FcQuant range = {0}; /* the union of the operands' ranges */
  for (int i = 0; i < op->n_operands; i++) {
    const FcQuant *qi = sinkable_operand(op, i);
    if (!qi || (q && !same_grid(q, qi))) return FC_OK;
    if (!q) range = *qi;
    range.qmin = qi->qmin < range.qmin ? qi->qmin : range.qmin;
    range.qmax = qi->qmax > range.qmax ? qi->qmax : range.qmax;
    q = qi;
  }
  FcValue **ops = FC_NEW_ARRAY(&s->m->arena, FcValue *, (size_t)op->n_operands);
  FcBuilder b;
  fc_rw_builder_before(&b, op, s->diag);
  for (int i = 0; i < op->n_operands; i++) {
    ops[i] = op->operands[i].value->def->operands[0].value;
    /* operands narrowed differently (a ReLU's result beside a plain one): views of the union's type */
    if (!fc_quant_equal(ops[i]->type.quant, &range)) {
      FcQuant *u = FC_NEW(&s->m->arena, FcQuant);
      *u = range;
      ops[i] = fc_b_scast(&b, fc_b_scast(&b, ops[i], NULL), u);
    }
  }
  FcValue *yq = fc_b_op1(&b, op->kind, ops, op->n_operands, op->attrs, op->n_attrs);
  FcValue *y = fc_b_dequantize(&b, yq);
  FcStatus st = fc_rw_replace_built(&b, op, y, &s->scratch);
  return st == FC_OK ? split_for_sinking(s, y) : st;
}

/* ---- retyping a quantised value ----------------------------------------------------------------------- */

/* Replaces every use of `from` (quantised) by `to`, which holds the same integers under the same scale and
 * zero point but possibly a narrower range: dequantize and scast users read `to` itself, others a view of
 * it with from's exact type. Then erases from's producer if it is dead. */
static FcStatus replace_quant_value(Qdq *s, FcValue *from, FcValue *to) {
  FcOp *from_op = from->def;
  if (fc_type_equal(&from->type, &to->type)) {
    fc_rw_replace_op(from_op, &to, &s->scratch);
    return FC_OK;
  }
  int n = fc_value_num_uses(from), k = 0;
  FcUse **uses = FC_NEW_ARRAY(&s->m->arena, FcUse *, (size_t)(n > 0 ? n : 1));
  for (FcUse *u = from->first_use; u; u = u->next_use) uses[k++] = u;
  FcValue *view = NULL;
  for (int i = 0; i < n; i++) {
    FcOp *user = uses[i]->user;
    int idx = uses[i]->index;
    if (user->kind == FC_OP_DEQUANTIZE || user->kind == FC_OP_SCAST) {
      fc_op_set_operand(user, idx, to);
      continue;
    }
    if (!view) {
      FcBuilder b; /* right after `to` is defined (a graph input: at the top), before every user */
      fc_builder_init(&b, from_op->graph, s->diag);
      b.before = to->def ? to->def->next : from_op->graph->first;
      b.loc = from_op->loc;
      view = fc_b_scast(&b, fc_b_scast(&b, to, NULL), from->type.quant);
      if (fc_b_status(&b) != FC_OK) return fc_b_status(&b);
    }
    fc_op_set_operand(user, idx, view);
  }
  fc_rw_keep_annots(from_op, &to, 1);
  fc_rw_erase_if_dead(from_op, &s->scratch);
  return FC_OK;
}

/* ---- requant: quantize(dequantize(q)) ------------------------------------------------------------------- */

/* Dequantizing q and quantizing the result to `to` gives q back: same storage, axis, scales and zero
 * points, q's range within to's, and scales at which (k * s) / s rounds back to k in f32. */
static bool round_trips(const FcQuant *q, const FcQuant *to) {
  if (q->storage != to->storage || q->expressed != to->expressed || q->axis != to->axis || q->n != to->n ||
      q->qmin < to->qmin || q->qmax > to->qmax)
    return false;
  for (int i = 0; i < q->n; i++) {
    float sf = (float)q->scales[i];
    if (q->scales[i] != to->scales[i] || q->zero_points[i] != to->zero_points[i] || !(sf >= FLT_MIN) ||
        !isfinite(sf * 65536.0f))
      return false;
  }
  return q->storage == FC_DT_U8 || q->storage == FC_DT_I8 || q->storage == FC_DT_U16 || q->storage == FC_DT_I16;
}

/* quantize(concat(dequantize(q_1), ..)), the concat read by the quantize alone, each q_i per-tensor 8-bit ->
 * concat(r_1, ..) of the quantize's type: r_i is q_i itself where it round-trips to that type (a view when
 * only its range is narrower), else quantize(dequantize(q_i)), an element map of 8-bit values that codegen
 * runs as a 256-entry table. Exact: a concat only moves elements, so quantising its result quantises each
 * operand. The branches of a QDQ inception block (one scale each, as PyTorch's export writes them) then
 * write their bytes and the concat moves a quarter of what the f32 one did. */
static FcStatus requant_concat(Qdq *s, FcOp *op) {
  FcOp *c = def_kind(op->operands[0].value, FC_OP_CONCAT);
  const FcQuant *to = op->results[0].type.quant;
  if (!c || !per_tensor_8bit(to) || single_user(&c->results[0]) != op || c->n_operands > 4096) return FC_OK;
  for (int i = 0; i < c->n_operands; i++) {
    FcOp *d = def_kind(c->operands[i].value, FC_OP_DEQUANTIZE);
    const FcValue *q = d ? d->operands[0].value : NULL;
    if (!q || !per_tensor_8bit(q->type.quant) || fc_value_const(q)) return FC_OK;
  }
  FcValue **ops = FC_NEW_ARRAY(&s->m->arena, FcValue *, (size_t)c->n_operands);
  FcBuilder b;
  fc_rw_builder_before(&b, op, s->diag);
  for (int i = 0; i < c->n_operands; i++) {
    FcValue *q = c->operands[i].value->def->operands[0].value;
    if (fc_quant_equal(q->type.quant, to))
      ops[i] = q;
    else if (round_trips(q->type.quant, to))
      ops[i] = fc_b_scast(&b, fc_b_scast(&b, q, NULL), to);
    else
      ops[i] = fc_b_quantize(&b, fc_b_dequantize(&b, q), to);
  }
  FcValue *y = fc_b_op1(&b, FC_OP_CONCAT, ops, c->n_operands, c->attrs, c->n_attrs);
  if (fc_b_status(&b) != FC_OK) return fc_b_status(&b);
  FcStatus st = replace_quant_value(s, &op->results[0], y);
  if (st == FC_OK) fc_rw_erase_if_dead(c, &s->scratch);
  return st;
}

static FcStatus requant(Qdq *s, FcOp *op) {
  FcOp *d = def_kind(op->operands[0].value, FC_OP_DEQUANTIZE);
  const FcQuant *to = op->results[0].type.quant;
  if (!d || !to) return FC_OK;
  FcValue *q = d->operands[0].value;
  if (!q->type.quant || !round_trips(q->type.quant, to)) return FC_OK;
  return replace_quant_value(s, &op->results[0], q);
}

/* ---- mean: quantize(reduce_mean(dequantize(q))) ------------------------------------------------------- */

static FcStatus mean(Qdq *s, FcOp *op) {
  FcOp *m = def_kind(op->operands[0].value, FC_OP_REDUCE_MEAN);
  const FcQuant *to = op->results[0].type.quant;
  if (!m || fc_op_attr(m, FC_ATTR_QTYPE) || single_user(&m->results[0]) != op || !per_tensor_8bit(to)) return FC_OK;
  FcOp *d = def_kind(m->operands[0].value, FC_OP_DEQUANTIZE);
  FcValue *q = d ? d->operands[0].value : NULL;
  if (!q || !per_tensor_8bit(q->type.quant) || fc_value_const(q)) return FC_OK;
  for (int i = 0; i < q->type.rank; i++)
    if (q->type.dims[i] == 0) return FC_OK; /* a mean of nothing is NaN in f32 */
  FcAttr attrs[8];
  int n_attrs = 0;
  for (int i = 0; i < m->n_attrs && n_attrs < 7; i++) attrs[n_attrs++] = m->attrs[i];
  attrs[n_attrs++] = FC_A_QTYPE(QTYPE, to);
  FcBuilder b;
  fc_rw_builder_before(&b, op, s->diag);
  b.loc = m->loc;
  FcValue *y = fc_b_op1(&b, FC_OP_REDUCE_MEAN, &q, 1, attrs, n_attrs);
  if (fc_b_status(&b) != FC_OK) return fc_b_status(&b);
  fc_rw_keep_annots(m, &y, 1);
  return replace_quant_value(s, &op->results[0], y);
}

/* ---- compute: quantised conv and matmul ----------------------------------------------------------------- */

/* The constant quantised tensor behind v: a constant of a quantised type, or scast(constant) (when fold
 * has not run since the import). NULL otherwise. */
static const FcTensor *const_quant(Qdq *s, const FcValue *v) {
  const FcTensor *t = fc_value_const(v);
  if (t) return t->type.quant ? t : NULL;
  FcOp *sc = def_kind(v, FC_OP_SCAST);
  if (!sc || !v->type.quant || !(t = fc_value_const(sc->operands[0].value)) || t->type.quant) return NULL;
  FcTensor *r = FC_NEW(&s->m->arena, FcTensor);
  r->type = fc_type_copy(&s->m->arena, &v->type);
  r->data = t->data;
  r->nbytes = t->nbytes;
  return r;
}

/* The 2-D 8-bit quantised tensor t transposed, its quantised axis moved with its dim. */
static const FcTensor *transpose_2d(Qdq *s, const FcTensor *t) {
  FcArena *a = &s->m->arena;
  int64_t R = t->type.dims[0], C = t->type.dims[1], dims[2] = {C, R};
  FcQuant q = *t->type.quant;
  if (q.axis >= 0) q.axis = 1 - q.axis;
  FcTensor *r = fc_tensor_new(a, fc_type_make_quant(a, &q, 2, dims));
  const uint8_t *src = t->data;
  uint8_t *dst = (uint8_t *)r->data;
  for (int64_t i = 0; i < R; i++)
    for (int64_t j = 0; j < C; j++) dst[j * R + i] = src[i * C + j];
  return r;
}

/* The constant c (one quantisation parameter pair: per tensor, or per axis of one element) viewed with
 * w's shape, its parameters per tensor or along `axis` of w (which must then have size 1). NULL otherwise. */
static const FcTensor *reshaped(Qdq *s, const FcTensor *c, const FcValue *w, int axis) {
  if (!c || c->type.quant->n != 1) return NULL;
  FcQuant q = *c->type.quant;
  if (q.axis >= 0) {
    if (axis >= w->type.rank || w->type.dims[axis] != 1) return NULL;
    q.axis = axis;
  }
  FcArena *a = &s->m->arena;
  FcTensor *r = FC_NEW(a, FcTensor);
  r->type = fc_type_make_quant(a, &q, w->type.rank, w->type.dims);
  r->data = c->data;
  r->nbytes = c->nbytes;
  return r;
}

/* The weight operand w as a constant 8-bit quantised tensor, per tensor or along `axis`: dequantize(c),
 * or (a matmul's [K, N], axis 1) transpose(dequantize(c [N, K])) — Gemm's transB — or reshape(dequantize(c))
 * with one scale (what eliminate_transpose makes of that transpose when N or K is 1). NULL otherwise. */
static const FcTensor *weight_of(Qdq *s, const FcValue *w, int axis) {
  const FcTensor *t = NULL;
  FcOp *d = def_kind(w, FC_OP_DEQUANTIZE), *tr;
  if (d) {
    t = const_quant(s, d->operands[0].value);
  } else if (axis == 1 && (tr = def_kind(w, FC_OP_TRANSPOSE)) && w->type.rank == 2 &&
             (d = def_kind(tr->operands[0].value, FC_OP_DEQUANTIZE))) {
    const int64_t *p;
    if (fc_op_attr_ints(tr, FC_ATTR_PERM, &p) != 2 || p[0] != 1 || p[1] != 0) return NULL;
    t = const_quant(s, d->operands[0].value);
    if (t && t->type.rank == 2 && fc_dtype_is_8bit(t->type.dtype)) t = transpose_2d(s, t);
  } else if ((tr = def_kind(w, FC_OP_RESHAPE)) && (d = def_kind(tr->operands[0].value, FC_OP_DEQUANTIZE))) {
    t = reshaped(s, const_quant(s, d->operands[0].value), w, axis);
  }
  if (!t) return NULL;
  const FcQuant *q = t->type.quant;
  if (!fc_dtype_is_8bit(q->storage) || q->expressed != FC_DT_F32 || (q->axis >= 0 && q->axis != axis)) return NULL;
  return t;
}

/* sw[c]: the weight's scale for output channel c. */
static double weight_scale(const FcQuant *w, int64_t c) { return w->scales[w->axis >= 0 ? c : 0]; }

/* A constant f32 bias over the channel dim `cdim` of a rank-`rank` result with C channels: every dim 1
 * except (after right alignment) cdim, which is C or 1. Element c of it, broadcast, is b[c or 0]. */
static bool bias_shape_ok(const FcType *t, int rank, int cdim, int64_t C) {
  if (t->rank > rank) return false;
  for (int i = 0; i < t->rank; i++) {
    int d = rank - t->rank + i;
    if (t->dims[i] != 1 && (d != cdim || t->dims[i] != C)) return false;
  }
  return true;
}

/* One output channel's bias in units of sx*sw[c] into *out; false when it is not finite or not in i32. */
static bool to_i32(double v, int32_t *out) {
  double r = nearbyint(v); /* the default rounding mode: half to even */
  if (!(r >= (double)INT32_MIN && r <= (double)INT32_MAX)) return false;
  *out = (int32_t)r;
  return true;
}

/* The i32 bias [C] for the value b (f32 constant, or dequantize(constant i32)) of a quantised op with input
 * scale sx and weight type wq, whose result has rank `rank` and channel dim `cdim`; NULL when b is neither
 * or a channel's bias does not fit. */
static const FcTensor *bias_i32(Qdq *s, const FcValue *b, double sx, const FcQuant *wq, int rank, int cdim,
                                int64_t C) {
  const FcTensor *f = fc_value_const(b), *qb = NULL;
  FcOp *d = def_kind(b, FC_OP_DEQUANTIZE);
  if (f && (f->type.dtype != FC_DT_F32 || f->type.quant)) return NULL;
  if (!f && d) qb = const_quant(s, d->operands[0].value);
  if (!f && !qb) return NULL;
  const FcTensor *src = f ? f : qb;
  if (!bias_shape_ok(&src->type, rank, cdim, C)) return NULL;
  if (qb && (qb->type.dtype != FC_DT_I32 || qb->type.quant->expressed != FC_DT_F32 ||
             (qb->type.quant->axis >= 0 && qb->type.quant->axis != qb->type.rank - (rank - cdim))))
    return NULL;
  int64_t n;
  if (!fc_type_numel(&src->type, &n)) return NULL;
  FcArena *a = &s->m->arena;
  FcTensor *t = fc_tensor_new(a, fc_type_make(a, FC_DT_I32, 1, &C));
  int32_t *dst = (int32_t *)t->data;
  for (int64_t c = 0; c < C; c++) {
    int64_t i = n == 1 ? 0 : c;
    double unit = sx * weight_scale(wq, c), v;
    if (!(unit > 0) || !isfinite(unit)) return NULL;
    if (f) {
      v = fc_tensor_get_f64(f, i) / unit;
    } else {
      const FcQuant *bq = qb->type.quant;
      int64_t k = bq->axis >= 0 ? i : 0;
      double bs = bq->scales[k];
      v = (double)(fc_tensor_get_i64(qb, i) - bq->zero_points[k]);
      if (fabs(bs - unit) > 1e-6 * unit) v = v * bs / unit; /* another scale: requantise */
    }
    if (!to_i32(v, &dst[c])) return NULL;
  }
  return t;
}

/* Q(c) of a quantize to q (per tensor): clamp(rne(c / s) + zp, qmin, qmax), divided in f32 as the op does. */
static int64_t quantize_scalar(const FcQuant *q, float c) {
  float r = nearbyintf(c / (float)q->scales[0]) + (float)q->zero_points[0];
  if (!(r >= (float)q->qmin)) return q->qmin; /* NaN: the lowest, as the clamp of max-then-min gives */
  if (r > (float)q->qmax) return q->qmax;
  return (int64_t)r;
}

/* The scalar f32 constant operand of a binary op `u` whose other operand is v, or NULL. */
static const FcTensor *scalar_other(const FcOp *u, const FcValue *v) {
  if (u->n_operands != 2) return NULL;
  int o = u->operands[0].value == v ? 1 : 0;
  if (u->operands[1 - o].value != v || u->operands[o].value == v) return NULL;
  return fc_value_scalar_f32(u->operands[o].value);
}

/* Follows v's single-use chain of activations to a quantize of a per-tensor 8-bit type; returns that
 * quantize and sets *out to its type narrowed by the activations, or NULL (no such chain, or a narrowed
 * range that is no valid type). */
static FcOp *output_chain(Qdq *s, FcValue *v, const FcQuant **out) {
  const FcTensor *consts[MAX_ACTS];
  FcOpKind kinds[MAX_ACTS];
  int n = 0;
  FcOp *u;
  while ((u = single_user(v)) != NULL && n < MAX_ACTS && u->n_results == 1 &&
         fc_type_equal(&u->results[0].type, &v->type)) {
    const FcTensor *c = NULL;
    if (u->kind != FC_OP_RELU && !((u->kind == FC_OP_MAX || u->kind == FC_OP_MIN) && (c = scalar_other(u, v))))
      break;
    consts[n] = c;
    kinds[n++] = u->kind;
    v = &u->results[0];
  }
  if (!u || u->kind != FC_OP_QUANTIZE || !per_tensor_8bit(u->results[0].type.quant)) return NULL;
  const FcQuant *qy = u->results[0].type.quant;
  int64_t lo = qy->qmin, hi = qy->qmax;
  for (int i = 0; i < n; i++) {
    float c = 0.0f; /* relu: max(., 0) */
    if (consts[i]) c = (float)fc_tensor_get_f64(consts[i], 0);
    int64_t k = quantize_scalar(qy, c);
    if (kinds[i] != FC_OP_MIN) {
      lo = lo > k ? lo : k;
      hi = hi > k ? hi : k;
    } else {
      lo = lo < k ? lo : k;
      hi = hi < k ? hi : k;
    }
  }
  if (lo >= hi || qy->zero_points[0] < lo || qy->zero_points[0] > hi) return NULL;
  if (lo == qy->qmin && hi == qy->qmax) {
    *out = qy;
  } else {
    FcQuant nq = *qy;
    nq.qmin = lo;
    nq.qmax = hi;
    *out = fc_quant_copy(&s->m->arena, &nq);
  }
  return u;
}

/* The add of a constant [N] bias that is the only user of a matmul's result x, and that bias operand; NULL
 * when there is none. */
static FcOp *matmul_bias_add(const FcValue *x, const FcValue **bias) {
  FcOp *u = single_user(x);
  if (!u || u->kind != FC_OP_ADD || u->n_operands != 2 || !fc_type_equal(&u->results[0].type, &x->type)) return NULL;
  int o = u->operands[0].value == x ? 1 : 0;
  if (u->operands[1 - o].value != x || u->operands[o].value == x) return NULL;
  *bias = u->operands[o].value;
  return u;
}

/* Whether conv op (group > 1) is depthwise (one input channel per group) and runs on the target's integer
 * depthwise kernel. */
static bool depthwise_i8(const Qdq *s, const FcOp *op, int64_t group) {
  const FcType *x = &op->operands[0].value->type, *w = &op->operands[1].value->type;
  int n = x->rank - 2;
  if (n < 1 || w->rank != x->rank || x->dims[1] != group || w->dims[1] != 1) return false;
  int64_t taps = 1, plane = 1;
  for (int i = 2; i < x->rank; i++) {
    /* dims of verified tensors: a product over the spatial dims of one cannot overflow */
    taps *= w->dims[i];
    plane *= x->dims[i];
  }
  return fc_target_i8_depthwise(s->target, n, taps, plane);
}

static FcStatus compute(Qdq *s, FcOp *op) {
  bool is_conv = op->kind == FC_OP_CONV;
  if (op->n_results != 1 || fc_op_attr(op, FC_ATTR_EPILOGUE) || fc_op_attr(op, FC_ATTR_QTYPE) ||
      op->n_operands > (is_conv ? 3 : 2))
    return FC_OK;
  FcValue *x = &op->results[0];
  if (x->type.dtype != FC_DT_F32 || x->type.quant || x->type.rank < 2) return FC_OK;
  FcOp *dx = def_kind(op->operands[0].value, FC_OP_DEQUANTIZE);
  if (!dx) return FC_OK;
  FcValue *xq = dx->operands[0].value;
  if (!per_tensor_8bit(xq->type.quant)) return FC_OK;
  int w_axis = is_conv ? 0 : 1;
  if (!is_conv && op->operands[1].value->type.rank != 2) return FC_OK;
  const FcTensor *w = weight_of(s, op->operands[1].value, w_axis);
  if (!w) return FC_OK;
  int64_t group = is_conv ? fc_op_attr_int(op, FC_ATTR_GROUP, 1) : 1;
  /* Grouped convs whose groups fit no integer GEMM tile run faster in f32 than on the integer loop nest,
   * unless they are depthwise and the target has the integer depthwise kernel; a dense conv with few
   * channels is cheap either way and stays integer. */
  if (is_conv && group > 1 &&
      !fc_target_i8_conv_tiles(s->target, op->results[0].type.rank - 2, op->results[0].type.dims[1] / group) &&
      !depthwise_i8(s, op, group)) {
    FcAnnotValue note = {.kind = FC_AV_STR,
                         .s = "no integer kernel fits this conv's groups on this CPU (narrow groups, or depthwise "
                              "beyond the integer depthwise kernel); the f32 kernel is faster than the integer loop "
                              "nest"};
    fc_op_set_annot(op, fc_annot_name(FC_ANNOT_QUANT_NOTE), &note);
    return FC_OK;
  }
  double sx = xq->type.quant->scales[0];
  int rank = x->type.rank, cdim = is_conv ? 1 : rank - 1;
  int64_t C = x->type.dims[cdim];

  /* the bias, and the op whose result the new op replaces */
  const FcTensor *bias = NULL;
  FcOp *last = op;
  if (is_conv && op->n_operands == 3) {
    if (!(bias = bias_i32(s, op->operands[2].value, sx, w->type.quant, 1, 0, C))) return FC_OK;
  } else if (!is_conv) {
    const FcValue *bv;
    FcOp *add = matmul_bias_add(x, &bv);
    if (add && (bias = bias_i32(s, bv, sx, w->type.quant, rank, cdim, C))) last = add;
  }
  const FcQuant *qy = NULL;
  FcOp *quant = output_chain(s, &last->results[0], &qy);

  FcBuilder b;
  fc_rw_builder_before(&b, quant ? quant : last, s->diag);
  b.loc = op->loc;
  /* a weight that already is a constant of its quantised type is used as it is (shared with other users) */
  FcOp *dw = def_kind(op->operands[1].value, FC_OP_DEQUANTIZE);
  FcValue *wv = dw && fc_value_const(dw->operands[0].value) == w ? dw->operands[0].value : fc_b_const_tensor(&b, w);
  FcValue *ops[3] = {xq, wv, bias ? fc_b_const_tensor(&b, bias) : NULL};
  FcAttr attrs[16];
  int n_attrs = 0;
  for (int i = 0; i < op->n_attrs && n_attrs < 15; i++)
    if (op->attrs[i].name != FC_ATTR_EPILOGUE && op->attrs[i].name != FC_ATTR_QTYPE) attrs[n_attrs++] = op->attrs[i];
  attrs[n_attrs++] = qy ? FC_A_QTYPE(QTYPE, qy) : FC_A_TYPE(QTYPE, FC_DT_F32);
  FcValue *y = fc_b_op1(&b, op->kind, ops, bias ? 3 : 2, attrs, n_attrs);
  if (fc_b_status(&b) != FC_OK) return fc_b_status(&b);
  fc_rw_keep_annots(op, &y, 1);
  if (quant) return replace_quant_value(s, &quant->results[0], y);
  fc_rw_replace_op(last, &y, &s->scratch);
  return FC_OK;
}

FcStatus fc_pass_fold_qdq(FcModule *m, FcPassContext *pc) {
  Qdq s = {.m = m, .target = pc->target, .diag = pc->diag};
  fc_op_stack_init(&s.scratch, &m->arena);
  FcOpStack todo;
  fc_op_stack_init(&todo, &pc->scratch);
  fc_graph_for_each_op(m->graph, op) {
    if (passes_through(op) || op->kind == FC_OP_QUANTIZE || op->kind == FC_OP_CONV || op->kind == FC_OP_MATMUL)
      fc_op_stack_push(&todo, op);
  }
  for (int i = 0; i < todo.n; i++) {
    FcOp *op = todo.v[i];
    if (op->erased) continue;
    FcStatus st;
    if (op->kind == FC_OP_QUANTIZE)
      st = def_kind(op->operands[0].value, FC_OP_REDUCE_MEAN) ? mean(&s, op)
           : def_kind(op->operands[0].value, FC_OP_CONCAT)    ? requant_concat(&s, op)
                                                                : requant(&s, op);
    else
      st = op->kind == FC_OP_CONV || op->kind == FC_OP_MATMUL ? compute(&s, op) : sink(&s, op);
    if (st != FC_OK) return st;
  }
  return FC_OK;
}
