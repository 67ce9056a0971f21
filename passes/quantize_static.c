/* quantize_static.c — static post-training int8 quantisation (`--quantize int8 --calibrate DIR`): turns the
 * float model, annotated with calibrated ranges (compiler/calibrate.c, `flow.calib_range`), into the QDQ form
 * an imported quantised model has, so that fold_qdq makes integer convs and matmuls of it (qspec §4).
 *
 * For every conv and matmul by constant f32 weights (no epilogue yet: the pass runs after fold_batchnorm and
 * before fuse_epilogue) whose activation operand x has a calibrated range and whose node is not in the skip
 * list:
 *   x  ->  dequantize(quantize(x) {qtype_x})     per tensor; u8 asymmetric by default: scale = (hi - lo) / 255
 *                                                 over [lo, hi] widened to hold 0, zero point rne(-lo / scale),
 *                                                 so that 0.0 (padding, ReLU's floor) is exact; or i8 with zero
 *                                                 point 0 and scale max(|lo|, |hi|) / 127
 *   w  ->  dequantize(constant quant i8)         symmetric (zero point 0), one scale per output channel (conv
 *                                                 dim 0, matmul dim 1) or per tensor: s = max|w| / 127,
 *                                                 q = rne(w / s) in [-127, 127] (narrowed: -128 never used, so
 *                                                 negating a weight never overflows)
 * Scales are rounded to f32 once, as an ONNX file stores them.
 * Data movement is quantised as a whole: the values joined by the ops of qspec §3 that move data without computing
 * (reshape, transpose, slice, max_pool, a nearest resize, and concat) form classes, and a class that nothing but such
 * ops and quantised ops reads (no float op, no model output) gets ONE type, from the union of its quantised ops'
 * calibrated ranges ("aligned scales"). Its sources (the values a class member is moved from: a conv's result, a model
 * input) are quantised once, a dequantize before each use, so fold_qdq runs every op of the class on the integers and
 * each producing conv requantises straight to the class's type: an inception block's branches write their concat's
 * bytes, and a ShuffleNet's split, concat and channel shuffle move bytes from one unit to the next instead of floats
 * that are quantised again at every unit. One type is right throughout because those ops commute with the monotone
 * quantisation (max(q(a), q(b)) = q(max(a, b)), clamps included), and a class's range covers every value its quantised
 * ops see. Any other class (read by a float op or returned) keeps the quantisation at x: the quantize/dequantize pair
 * goes on x and on the inputs of the single-use pass-through ops ahead of it.
 * An activation feeding several quantised ops is quantised once, and so are weights read by several ops
 * (layers that share them), which stay one constant.
 * A matmul whose activation has no calibrated range gets quantize_dynamic's form instead (activations
 * quantised per run, fc_quantize_matmul_dynamic): calibration observes the function's values, not those of
 * loop bodies, so this is an RNN's recurrent matmul, which would otherwise stay in float and leave a
 * recurrent model's int8 build about as slow and large as its f32 one.
 *
 * Saturation: without VNNI the u8 x i8 dot is vpmaddubsw, which adds two u8·i8 products into a saturating
 * i16; 255·127·2 overflows it. Where fc_target_i8_gemm says so, one operand gives up a bit: by default the
 * weights ([-64, 64], as quantize_dynamic: 255·64·2 < 32767, and the integer GEMM proves that from the
 * weights alone), or with FC_QREDUCE_ACTIVATIONS the activations (u8 in [0, 127], i8 in [-64, 63]:
 * PyTorch's reduce_range). On the Fashion-MNIST example 7-bit weights lose less: logits SNR 43.0 dB against
 * 40.5 dB with 7-bit activations (minmax; 44.3 dB with neither, on VNNI), test accuracy equal within 3
 * images (README). A weight that is not finite leaves its op in float.
 */
#include "passes.h"
#include "rewrite.h"

#include <float.h>
#include <math.h>
#include <string.h>

static const FcQuantOptions default_options; /* all zero: the defaults passes.h describes */

/* The calibrated range of value v, false when it has none. */
static bool range_of(const FcValue *v, double *lo, double *hi) {
  const FcAnnotValue *a = NULL;
  if (!v->def) a = fc_annots_get(&v->annots, "flow.calib_range");
  else if (v->index == 0) a = fc_op_annot(v->def, "flow.calib_range");
  if (!a || a->kind != FC_AV_DENSE || a->dtype != FC_DT_F64 || a->floats.n != 2) return false;
  *lo = a->floats.v[0];
  *hi = a->floats.v[1];
  return true;
}

static bool skipped(const FcQuantOptions *o, const FcOp *op) {
  for (int i = 0; i < o->n_skip; i++)
    if (op->loc && strcmp(op->loc, o->skip[i]) == 0) return true;
  return false;
}

static bool candidate(const FcOp *op) {
  if ((op->kind != FC_OP_CONV && op->kind != FC_OP_MATMUL) || op->n_results != 1) return false;
  if (fc_op_attr(op, FC_ATTR_EPILOGUE)) return false;
  if (op->kind == FC_OP_MATMUL && op->n_operands != 2) return false;
  if (op->kind == FC_OP_CONV && op->n_operands > 3) return false;
  const FcValue *x = op->operands[0].value, *w = op->operands[1].value;
  const FcTensor *wt = fc_value_const(w);
  if (x->type.dtype != FC_DT_F32 || x->type.quant || w->type.dtype != FC_DT_F32 || w->type.quant || !wt || !wt->data)
    return false;
  if (op->kind == FC_OP_MATMUL && w->type.rank != 2) return false;
  if (op->kind == FC_OP_CONV && op->n_operands == 3) { /* the bias must stay a constant for fold_qdq */
    const FcValue *bias = op->operands[2].value;
    if (bias->type.dtype != FC_DT_F32 || !fc_value_const(bias)) return false;
  }
  return true;
}

/* ---- parameters ----------------------------------------------------------------------------------- */

/* The activation type for range [lo, hi]. */
static FcQuant activation_quant(FcArena *a, const FcQuantOptions *o, bool reduce, double lo, double hi) {
  double *scale = FC_NEW(a, double);
  int64_t *zp = FC_NEW(a, int64_t);
  FcQuant q = {.expressed = FC_DT_F32, .axis = -1, .n = 1, .scales = scale, .zero_points = zp};
  if (o->activations == FC_QACT_SYM_I8) {
    q.storage = FC_DT_I8;
    q.qmin = reduce ? -64 : -128;
    q.qmax = reduce ? 63 : 127;
    double m = fmax(fabs(lo), fabs(hi));
    *scale = m > 0 ? (double)(float)(m / (double)q.qmax) : 1.0;
    *zp = 0;
  } else {
    q.storage = FC_DT_U8;
    q.qmin = 0;
    q.qmax = reduce ? 127 : 255;
    lo = fmin(lo, 0);
    hi = fmax(hi, 0);
    *scale = hi > lo ? (double)(float)((hi - lo) / (double)(q.qmax - q.qmin)) : 1.0;
    double z = nearbyint(q.qmin - lo / *scale);
    *zp = (int64_t)fmin(fmax(z, (double)q.qmin), (double)q.qmax);
  }
  if (!(*scale >= FLT_MIN)) *scale = FLT_MIN; /* a range too narrow for f32: quantise it to one step */
  return q;
}

/* The weights w (f32, constant) as i8 with one scale per slice of dim `axis` (-1: per tensor), values in
 * [-qmax, qmax]; NULL when w holds a value that is not finite. */
static FcTensor *quantize_weights(FcArena *a, const FcTensor *w, int axis, int qmax) {
  int64_t numel;
  FC_ASSERT(fc_type_numel(&w->type, &numel));
  int64_t channels = axis < 0 ? 1 : w->type.dims[axis];
  int64_t inner = 1; /* elements per step of the channel index */
  for (int d = axis < 0 ? w->type.rank : axis + 1; d < w->type.rank; d++) inner *= w->type.dims[d];
  const float *src = w->data;
  double *scales = FC_NEW_ARRAY(a, double, (size_t)(channels > 0 ? channels : 1));
  int64_t *zps = FC_NEW_ARRAY(a, int64_t, (size_t)(channels > 0 ? channels : 1));
  for (int64_t i = 0; i < numel; i++) {
    if (!isfinite(src[i])) return NULL;
    int64_t c = axis < 0 ? 0 : i / inner % channels;
    scales[c] = fmax(scales[c], fabs((double)src[i]));
  }
  for (int64_t c = 0; c < channels; c++) {
    double s = (double)(float)(scales[c] / qmax);
    scales[c] = s >= FLT_MIN ? s : 1.0; /* an all-zero channel */
  }
  FcQuant q = {.storage = FC_DT_I8, .expressed = FC_DT_F32, .qmin = -qmax, .qmax = qmax, .axis = axis,
               .n = (int)channels, .scales = scales, .zero_points = zps};
  FcTensor *t = fc_tensor_new(a, fc_type_make_quant(a, &q, w->type.rank, w->type.dims));
  int8_t *dst = (int8_t *)t->data;
  for (int64_t i = 0; i < numel; i++) {
    int64_t c = axis < 0 ? 0 : i / inner % channels;
    float r = nearbyintf(src[i] / (float)scales[c]); /* in f32, as QuantizeLinear divides */
    dst[i] = (int8_t)fminf(fmaxf(r, (float)-qmax), (float)qmax);
  }
  return t;
}

/* ---- rewriting ------------------------------------------------------------------------------------- */

/* dequantize(quantize(v)) with type q, built before `user`, replacing v's use as operand `index` of user. */
static FcStatus insert_qdq(FcOp *user, int index, const FcQuant *q, FcValue **out, FcDiag *diag) {
  FcValue *v = user->operands[index].value;
  FcBuilder b;
  fc_rw_builder_before(&b, user, diag);
  b.loc = v->def && v->def->loc ? v->def->loc : user->loc;
  FcType qt = fc_type_make_quant(&user->graph->module->arena, q, v->type.rank, v->type.dims);
  FcValue *dq = fc_b_dequantize(&b, fc_b_quantize(&b, v, qt.quant));
  if (fc_b_status(&b) != FC_OK) return fc_b_status(&b);
  fc_op_set_operand(user, index, dq);
  if (out) *out = dq;
  return FC_OK;
}

/* qspec §3's pass-through ops with one operand (max_pool only while its indices are unused). */
static bool pass_through(const FcOp *op) {
  if (op->kind == FC_OP_MAX_POOL) return op->n_results == 1 || !fc_value_has_uses(&op->results[1]);
  return op->kind == FC_OP_RESHAPE || op->kind == FC_OP_TRANSPOSE || op->kind == FC_OP_SLICE;
}

/* True when every use of v is quantised with v's parameters: v is x (each of whose users reads it as a
 * quantised activation) or a link of the pass-through chain ahead of x, used by the next link only. */
static bool only_quantised_uses(const FcValue *v, const FcValue *x, const FcQuantOptions *o) {
  if (v != x) return fc_value_num_uses(v) == 1;
  for (const FcUse *u = v->first_use; u; u = u->next_use)
    if (u->index != 0 || !candidate(u->user) || skipped(o, u->user)) return false;
  return true;
}

typedef struct Memo {
  FcValue **from, **to; /* an activation already quantised, and its dequantize */
  int n, cap;
} Memo;

static FcValue *memo_get(const Memo *m, const FcValue *v) {
  for (int i = 0; i < m->n; i++)
    if (m->from[i] == v) return m->to[i];
  return NULL;
}

static void memo_put(FcArena *a, Memo *m, FcValue *from, FcValue *to) {
  if (m->n == m->cap) {
    int cap = m->cap ? 2 * m->cap : 16;
    FcValue **f = FC_NEW_ARRAY(a, FcValue *, (size_t)cap), **t = FC_NEW_ARRAY(a, FcValue *, (size_t)cap);
    if (m->n) {
      memcpy(f, m->from, (size_t)m->n * sizeof *f);
      memcpy(t, m->to, (size_t)m->n * sizeof *t);
    }
    m->from = f;
    m->to = t;
    m->cap = cap;
  }
  m->from[m->n] = from;
  m->to[m->n++] = to;
}

/* ---- aligned classes: data movement quantised as a whole -------------------------------------------- */

/* An op that moves f32 data without computing (qspec §3, concat and a nearest resize included): its result
 * joins its operands' class. Constants are weights and never move here. */
static bool moves_data(const FcOp *op) {
  if (!fc_op_passes_quant_through(op) || op->n_operands < 1 || (op->kind != FC_OP_CONCAT && op->n_operands != 1))
    return false;
  if (op->kind == FC_OP_MAX_POOL ? !pass_through(op) : op->n_results != 1) return false;
  const FcType *y = &op->results[0].type;
  if (y->dtype != FC_DT_F32 || y->quant) return false;
  for (int i = 0; i < op->n_operands; i++) {
    const FcValue *v = op->operands[i].value;
    if (v->type.dtype != FC_DT_F32 || v->type.quant || fc_value_const(v)) return false;
  }
  return true;
}

static bool finite_weights(const FcValue *w) {
  const FcTensor *t = fc_value_const(w);
  int64_t n;
  if (!t || !t->data || !fc_type_numel(&t->type, &n)) return false;
  const float *d = t->data;
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(d[i])) return false;
  return true;
}

/* op is one that quantize_op quantises with its activation's calibrated range. */
static bool quantised_consumer(const FcOp *op, const FcQuantOptions *o, const FcGraph *g) {
  double lo, hi;
  return op->graph == g && candidate(op) && !skipped(o, op) && range_of(op->operands[0].value, &lo, &hi) &&
         finite_weights(op->operands[1].value);
}

enum { WANTED = 1, OPEN = 2 }; /* a class's state: a quantised op reads it; something else does too */

/* The classes of g's values (union-find over value ids), with per root the union of the ranges its
 * quantised ops read and its state; `aligned` marks the quantised ops whose activation is in a class that
 * only data moves and quantised ops read (indexed by op id). */
typedef struct Classes {
  uint32_t n_values, n_ops;
  uint32_t *parent;
  double *lo, *hi;
  uint8_t *state;
  bool *consumer; /* per op id: quantised_consumer */
  bool *aligned;
  uint32_t *x_root;      /* per op id: the class of a quantised op's activation */
  const FcQuant **quant; /* per root, made on first use */
} Classes;

static uint32_t find(const Classes *c, uint32_t i) {
  while (c->parent[i] != i) {
    c->parent[i] = c->parent[c->parent[i]];
    i = c->parent[i];
  }
  return i;
}

static void unite(Classes *c, const FcValue *a, const FcValue *b) {
  uint32_t ra = find(c, a->id), rb = find(c, b->id);
  if (ra != rb) c->parent[rb] = ra;
}

/* Marks the class of v OPEN when a use of v is neither a data move nor a quantised op's activation. */
static void check_uses(Classes *c, const FcValue *v, const FcGraph *g) {
  uint32_t r = find(c, v->id);
  if (!(c->state[r] & WANTED)) return;
  for (const FcUse *u = v->first_use; u; u = u->next_use) {
    const FcOp *user = u->user;
    if (user->graph != g) {
      c->state[r] |= OPEN;
      continue;
    }
    if (moves_data(user) || (u->index == 0 && c->consumer[user->id])) continue;
    c->state[r] |= OPEN;
  }
}

static void build_classes(FcGraph *g, const FcQuantOptions *o, FcArena *a, Classes *c) {
  c->n_values = g->next_value_id;
  c->n_ops = g->next_op_id;
  c->parent = FC_NEW_ARRAY(a, uint32_t, c->n_values + 1);
  c->lo = FC_NEW_ARRAY(a, double, c->n_values + 1);
  c->hi = FC_NEW_ARRAY(a, double, c->n_values + 1);
  c->state = FC_NEW_ARRAY(a, uint8_t, c->n_values + 1);
  c->quant = FC_NEW_ARRAY(a, const FcQuant *, c->n_values + 1);
  c->consumer = FC_NEW_ARRAY(a, bool, c->n_ops + 1);
  c->aligned = FC_NEW_ARRAY(a, bool, c->n_ops + 1);
  c->x_root = FC_NEW_ARRAY(a, uint32_t, c->n_ops + 1);
  for (uint32_t i = 0; i < c->n_values; i++) {
    c->parent[i] = i;
    c->lo[i] = INFINITY;
    c->hi[i] = -INFINITY;
  }
  fc_graph_for_each_op(g, op) {
    if (!moves_data(op)) continue;
    for (int i = 0; i < op->n_operands; i++) unite(c, &op->results[0], op->operands[i].value);
  }
  fc_graph_for_each_op(g, op) {
    c->consumer[op->id] = quantised_consumer(op, o, g);
    if (!c->consumer[op->id]) continue;
    const FcValue *x = op->operands[0].value;
    uint32_t r = find(c, x->id);
    double lo = 0, hi = 0;
    bool ranged = range_of(x, &lo, &hi); /* as a quantised consumer's activation has */
    FC_ASSERT(ranged);
    c->lo[r] = fmin(c->lo[r], lo);
    c->hi[r] = fmax(c->hi[r], hi);
    c->state[r] |= WANTED;
  }
  for (int i = 0; i < g->n_inputs; i++) check_uses(c, g->inputs[i], g);
  fc_graph_for_each_op(g, op)
    for (int i = 0; i < op->n_results; i++) check_uses(c, &op->results[i], g);
  fc_graph_for_each_op(g, op) {
    if (!c->consumer[op->id]) continue;
    c->x_root[op->id] = find(c, op->operands[0].value->id);
    c->aligned[op->id] = c->state[c->x_root[op->id]] == WANTED;
  }
}

/* Quantises v, a source of a closed class, to q: one quantize before its first use, a dequantize before
 * each use (so that every data move reading it is the dequantize's only user, as fold_qdq's sink needs). */
static FcStatus quantize_source(FcGraph *g, FcValue *v, const FcQuant *q, FcArena *scratch, FcDiag *diag) {
  int n = fc_value_num_uses(v), k = 0;
  FcOp **users = FC_NEW_ARRAY(scratch, FcOp *, (size_t)n);
  int *index = FC_NEW_ARRAY(scratch, int, (size_t)n);
  for (FcUse *u = v->first_use; u; u = u->next_use, k++) {
    users[k] = u->user;
    index[k] = u->index;
  }
  FcOp *first = NULL;
  for (FcOp *op = v->def ? v->def->next : g->first; op && !first; op = op->next)
    for (int i = 0; i < n && !first; i++)
      if (users[i] == op) first = op;
  FC_ASSERT(first);
  FcBuilder b;
  fc_rw_builder_before(&b, first, diag);
  const char *loc = v->def && v->def->loc ? v->def->loc : first->loc;
  b.loc = loc;
  FcType qt = fc_type_make_quant(&g->module->arena, q, v->type.rank, v->type.dims);
  FcValue *qv = fc_b_quantize(&b, v, qt.quant);
  if (fc_b_status(&b) != FC_OK) return fc_b_status(&b);
  for (int i = 0; i < n; i++) {
    FcBuilder bu;
    fc_rw_builder_before(&bu, users[i], diag);
    bu.loc = loc;
    FcValue *dq = fc_b_dequantize(&bu, qv);
    if (fc_b_status(&bu) != FC_OK) return fc_b_status(&bu);
    fc_op_set_operand(users[i], index[i], dq);
  }
  return FC_OK;
}

/* The quantisation of closed class r: the type of the union of its quantised ops' ranges. */
static const FcQuant *class_quant(Classes *c, uint32_t r, FcArena *a, const FcQuantOptions *o, bool reduce) {
  if (!c->quant[r]) {
    FcQuant *q = FC_NEW(a, FcQuant);
    *q = activation_quant(a, o, reduce, c->lo[r], c->hi[r]);
    c->quant[r] = q;
  }
  return c->quant[r];
}

/* v is a source of a closed class: a graph input or the result of an op other than a data move, that a
 * data move or a quantised op reads. */
static bool closed_source(const Classes *c, const FcValue *v) {
  if (v->id >= c->n_values || (v->def && moves_data(v->def))) return false;
  return c->state[find(c, v->id)] == WANTED;
}

/* Quantises the sources of every closed class, each to its class's type. */
static FcStatus quantize_classes(FcModule *m, Classes *c, const FcQuantOptions *o, bool reduce, FcPassContext *pc) {
  FcGraph *g = m->graph;
  /* collected first: quantising one inserts ops */
  FcValue **src = FC_NEW_ARRAY(&pc->scratch, FcValue *, c->n_values + 1);
  uint32_t n = 0;
  for (int i = 0; i < g->n_inputs; i++)
    if (closed_source(c, g->inputs[i])) src[n++] = g->inputs[i];
  fc_graph_for_each_op(g, op)
    for (int r = 0; r < op->n_results; r++)
      if (closed_source(c, &op->results[r])) src[n++] = &op->results[r];
  for (uint32_t i = 0; i < n; i++) {
    const FcQuant *q = class_quant(c, find(c, src[i]->id), &m->arena, o, reduce);
    FcStatus st = quantize_source(g, src[i], q, &pc->scratch, pc->diag);
    if (st != FC_OK) return st;
  }
  return FC_OK;
}

/* Quantises op's weights and its activation x: to `aligned`, the type of x's class when it is a closed one
 * (its sources quantised already), else by x's own range. */
static FcStatus quantize_op(FcModule *m, FcOp *op, const FcQuantOptions *o, bool reduce, int weight_qmax,
                            const FcQuant *aligned, Memo *memo, Memo *weights, FcPassContext *pc) {
  FcValue *x = op->operands[0].value;
  double lo = 0, hi = 0;
  if (!aligned && !range_of(x, &lo, &hi)) return FC_OK;
  int axis = o->per_tensor_weights ? -1 : op->kind == FC_OP_CONV ? 0 : 1;
  /* Weights that several ops read (layers sharing them) are quantised once, so they stay one constant: the
   * kernels then store them once (fc_cg_packed_weights_bytes). A conv's and a matmul's per-channel axes
   * differ, so the memo is per kind. */
  FcValue *w = op->operands[1].value, *wdq = memo_get(&weights[op->kind == FC_OP_CONV], w);
  FcTensor *wq = wdq ? NULL : quantize_weights(&m->arena, fc_value_const(w), axis, weight_qmax);
  if (!wdq && !wq) return FC_OK;
  FcQuant q = aligned ? *aligned : activation_quant(&m->arena, o, reduce, lo, hi);
  FcStatus st = FC_OK;
  FcValue *dq = memo_get(memo, x);
  if (aligned && !dq) {
    /* x is a dequantize of this type (nothing to add), or a data move of such values that fold_qdq runs
     * on the integers, making x one: the pair on x then folds away. Should a move stay in float, the pair
     * still quantises x, as for an open class. */
    const FcOp *d = x->def && x->def->kind == FC_OP_DEQUANTIZE ? x->def : NULL;
    if (d && fc_quant_equal(d->operands[0].value->type.quant, aligned))
      dq = x;
    else
      st = insert_qdq(op, 0, &q, &dq, pc->diag);
    if (st == FC_OK) memo_put(&pc->scratch, memo, x, dq);
  } else if (dq) {
    fc_op_set_operand(op, 0, dq);
  } else {
    /* The pass-through ops ahead of x, each used only by the next: quantised at their inputs too. */
    for (FcValue *v = x; st == FC_OK && v->def && v->index == 0 && pass_through(v->def) && only_quantised_uses(v, x, o);) {
      FcOp *pt = v->def;
      FcValue *in = pt->operands[0].value;
      if (in->type.dtype != FC_DT_F32 || in->type.quant || memo_get(memo, in)) break;
      st = insert_qdq(pt, 0, &q, NULL, pc->diag);
      v = in;
    }
    if (st == FC_OK) st = insert_qdq(op, 0, &q, &dq, pc->diag);
    if (st == FC_OK) memo_put(&pc->scratch, memo, x, dq);
  }
  if (st != FC_OK) return st;
  if (!wdq) {
    FcBuilder b;
    fc_rw_builder_before(&b, op, pc->diag);
    b.loc = w->def->loc ? w->def->loc : op->loc;
    wdq = fc_b_dequantize(&b, fc_b_const_tensor(&b, wq));
    if (fc_b_status(&b) != FC_OK) return fc_b_status(&b);
    memo_put(&pc->scratch, &weights[op->kind == FC_OP_CONV], w, wdq);
  }
  fc_op_set_operand(op, 1, wdq);
  return FC_OK;
}

void fc_quant_reduced_ranges(const FcQuantOptions *o, const FcTarget *t, bool *reduce_acts, int *weight_qmax) {
  if (!o) o = &default_options;
  FcI8Gemm g;
  fc_target_i8_gemm(t, &g);
  bool saturates = g.dot == FC_I8DOT_MADDUBS;
  *reduce_acts = saturates && o->reduce == FC_QREDUCE_ACTIVATIONS;
  *weight_qmax = saturates && o->reduce == FC_QREDUCE_WEIGHTS ? 64 : 127;
}

FcStatus fc_pass_quantize_static(FcModule *m, FcPassContext *pc) {
  const FcQuantOptions *o = pc->quant ? pc->quant : &default_options;
  bool reduce_acts;
  int weight_qmax;
  fc_quant_reduced_ranges(o, fc_pass_int8_target(pc), &reduce_acts, &weight_qmax);
  Classes classes;
  build_classes(m->graph, o, &pc->scratch, &classes);
  FcStatus st = quantize_classes(m, &classes, o, reduce_acts, pc);
  if (st != FC_OK) return st;
  Memo memo = {0}, weights[2] = {{0}};
  FcOpStack dead;
  fc_op_stack_init(&dead, &pc->scratch);
  fc_graph_for_each_op_safe(m->graph, op, next) {
    if (!candidate(op) || skipped(o, op)) continue;
    FcValue *w = op->operands[1].value;
    const FcQuant *aligned = NULL;
    if (op->id < classes.n_ops && classes.aligned[op->id])
      aligned = class_quant(&classes, classes.x_root[op->id], &m->arena, o, reduce_acts);
    double lo, hi;
    st = op->kind == FC_OP_MATMUL && !aligned && !range_of(op->operands[0].value, &lo, &hi)
             ? fc_quantize_matmul_dynamic(m, op, pc)
             : quantize_op(m, op, o, reduce_acts, weight_qmax, aligned, &memo, weights, pc);
    if (st != FC_OK) return st;
    if (!fc_value_has_uses(w)) fc_rw_erase_if_dead(w->def, &dead); /* the f32 weights */
  }
  return FC_OK;
}
