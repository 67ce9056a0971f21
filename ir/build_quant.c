/* build_quant.c — the IR of run-time quantisation, built with an FcBuilder: shared by the importer's
 * QuantizeLinear/DynamicQuantizeLinear (compiler/lower_quant.c) and the quantize_dynamic pass, so that
 * the two compute the same u8 values the same way (but for the pass's product with the scale's reciprocal
 * where ONNX divides: one division per run instead of one per element).
 *
 * Everything is f32 element-wise and reduction ops (no new op kind): round half to even (the core
 * round), add the zero point, clamp, cast. Later passes fuse the chain into one loop.
 */
#include "ir.h"

FcValue *fc_b_round_saturate(FcBuilder *b, FcValue *v, FcValue *zp_f, FcDtype dt, double lo, double hi) {
  FcValue *y = fc_b_unary(b, FC_OP_ROUND, v);
  if (zp_f) y = fc_b_binary(b, FC_OP_ADD, y, zp_f);
  y = fc_b_binary(b, FC_OP_MAX, y, fc_b_scalar(b, FC_DT_F32, lo));
  y = fc_b_binary(b, FC_OP_MIN, y, fc_b_scalar(b, FC_DT_F32, hi));
  return fc_b_cast(b, y, dt);
}

FcValue *fc_b_dynamic_quantize(FcBuilder *b, FcValue *x, double min_scale, bool reciprocal, FcValue **scale,
                               FcValue **zp) {
  *scale = *zp = NULL;
  if (!x || b->status != FC_OK) return NULL;
  int rank = x->type.rank;
  int64_t *all = rank ? FC_NEW_ARRAY(&b->g->module->arena, int64_t, rank) : NULL;
  for (int i = 0; i < rank; i++) all[i] = i;
  FcValue *mx = rank ? fc_b_reduce(b, FC_OP_REDUCE_MAX, x, rank, all, false) : x;
  FcValue *mn = rank ? fc_b_reduce(b, FC_OP_REDUCE_MIN, x, rank, all, false) : x;
  FcValue *zero = fc_b_scalar(b, FC_DT_F32, 0);
  mx = fc_b_binary(b, FC_OP_MAX, mx, zero);
  mn = fc_b_binary(b, FC_OP_MIN, mn, zero);
  FcValue *s = fc_b_binary(b, FC_OP_DIV, fc_b_binary(b, FC_OP_SUB, mx, mn), fc_b_scalar(b, FC_DT_F32, 255));
  if (min_scale > 0) s = fc_b_binary(b, FC_OP_MAX, s, fc_b_scalar(b, FC_DT_F32, min_scale));
  FcValue *z = fc_b_round_saturate(b, fc_b_binary(b, FC_OP_DIV, fc_b_unary(b, FC_OP_NEG, mn), s), NULL, FC_DT_U8, 0,
                                   255);
  FcValue *xs = reciprocal ? fc_b_binary(b, FC_OP_MUL, x, fc_b_binary(b, FC_OP_DIV, fc_b_scalar(b, FC_DT_F32, 1), s))
                           : fc_b_binary(b, FC_OP_DIV, x, s);
  FcValue *y = fc_b_round_saturate(b, xs, fc_b_cast(b, z, FC_DT_F32), FC_DT_U8, 0, 255);
  if (b->status != FC_OK) return NULL;
  *scale = s;
  *zp = z;
  return y;
}

FcValue *fc_b_quantize(FcBuilder *b, FcValue *x, const FcQuant *q) {
  FcAttr a = FC_A_QTYPE(QTYPE, q);
  return fc_b_op1(b, FC_OP_QUANTIZE, &x, 1, &a, 1);
}

FcValue *fc_b_dequantize(FcBuilder *b, FcValue *x) { return fc_b_unary(b, FC_OP_DEQUANTIZE, x); }

FcValue *fc_b_scast(FcBuilder *b, FcValue *x, const FcQuant *q) {
  if (!x) return NULL;
  FcAttr a = q ? FC_A_QTYPE(QTYPE, q) : FC_A_TYPE(QTYPE, x->type.dtype);
  return fc_b_op1(b, FC_OP_SCAST, &x, 1, &a, 1);
}

/* q's scales (f32) and zero points (f32) as constants that broadcast along its axis of a rank-`rank` tensor:
 * rank 0 per tensor, [n, 1, .., 1] per axis. */
static void param_constants(FcBuilder *b, const FcQuant *q, int rank, FcValue **scale, FcValue **zp) {
  FcArena *a = &b->g->module->arena;
  int r = q->axis < 0 ? 0 : rank - q->axis;
  int64_t *dims = FC_NEW_ARRAY(a, int64_t, (size_t)(r ? r : 1));
  for (int i = 0; i < r; i++) dims[i] = i ? 1 : q->n;
  float *s = FC_NEW_ARRAY(a, float, (size_t)q->n), *z = FC_NEW_ARRAY(a, float, (size_t)q->n);
  for (int i = 0; i < q->n; i++) {
    s[i] = (float)q->scales[i];
    z[i] = (float)q->zero_points[i];
  }
  *scale = fc_b_const(b, FC_DT_F32, r, dims, s);
  *zp = fc_b_const(b, FC_DT_F32, r, dims, z);
}

FcValue *fc_b_quantize_core(FcBuilder *b, FcValue *x, const FcQuant *q) {
  if (!x) return NULL;
  FcValue *s, *z;
  param_constants(b, q, x->type.rank, &s, &z);
  FcValue *y = fc_b_round_saturate(b, fc_b_binary(b, FC_OP_DIV, x, s), z, q->storage, (double)q->qmin, (double)q->qmax);
  return fc_b_scast(b, y, q);
}

FcValue *fc_b_dequantize_core(FcBuilder *b, FcValue *x) {
  if (!x) return NULL;
  const FcQuant *q = x->type.quant;
  FcValue *s, *z;
  param_constants(b, q, x->type.rank, &s, &z);
  FcValue *v = fc_b_cast(b, fc_b_scast(b, x, NULL), FC_DT_F32);
  return fc_b_binary(b, FC_OP_MUL, fc_b_binary(b, FC_OP_SUB, v, z), s);
}
