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
 * Scales are rounded to f32 once, as an ONNX file stores them. When x reaches the op through pass-through
 * ops of qspec §3 (reshape, transpose, max_pool, slice) that have no other use, the same quantize/dequantize
 * pair goes on each of their inputs too: fold_qdq then runs them on the integers, and the producer ahead of
 * them (a conv, through its ReLU) gets a requantised result. The same parameters are right at every step
 * because those ops commute with the monotone quantisation (max(q(a), q(b)) = q(max(a, b)), clamps included).
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

static FcStatus quantize_op(FcModule *m, FcOp *op, const FcQuantOptions *o, bool reduce, int weight_qmax, Memo *memo,
                            Memo *weights, FcPassContext *pc) {
  FcValue *x = op->operands[0].value;
  double lo, hi;
  if (!range_of(x, &lo, &hi)) return FC_OK;
  int axis = o->per_tensor_weights ? -1 : op->kind == FC_OP_CONV ? 0 : 1;
  /* Weights that several ops read (layers sharing them) are quantised once, so they stay one constant: the
   * kernels then store them once (fc_cg_packed_weights_bytes). A conv's and a matmul's per-channel axes
   * differ, so the memo is per kind. */
  FcValue *w = op->operands[1].value, *wdq = memo_get(&weights[op->kind == FC_OP_CONV], w);
  FcTensor *wq = wdq ? NULL : quantize_weights(&m->arena, fc_value_const(w), axis, weight_qmax);
  if (!wdq && !wq) return FC_OK;
  FcQuant q = activation_quant(&m->arena, o, reduce, lo, hi);
  FcStatus st = FC_OK;
  FcValue *dq = memo_get(memo, x);
  if (dq) {
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
  Memo memo = {0}, weights[2] = {{0}};
  FcOpStack dead;
  fc_op_stack_init(&dead, &pc->scratch);
  fc_graph_for_each_op_safe(m->graph, op, next) {
    if (!candidate(op) || skipped(o, op)) continue;
    FcValue *w = op->operands[1].value;
    double lo, hi;
    FcStatus st = op->kind == FC_OP_MATMUL && !range_of(op->operands[0].value, &lo, &hi)
                      ? fc_quantize_matmul_dynamic(m, op, pc)
                      : quantize_op(m, op, o, reduce_acts, weight_qmax, &memo, weights, pc);
    if (st != FC_OK) return st;
    if (!fc_value_has_uses(w)) fc_rw_erase_if_dead(w->def, &dead); /* the f32 weights */
  }
  return FC_OK;
}
