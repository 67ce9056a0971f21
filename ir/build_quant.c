/* build_quant.c — the IR of run-time quantisation, built with an FcBuilder: shared by the importer's
 * QuantizeLinear/DynamicQuantizeLinear (compiler/lower_quant.c) and the quantize_dynamic pass, so that
 * the two compute the same u8 values the same way.
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

FcValue *fc_b_dynamic_quantize(FcBuilder *b, FcValue *x, double min_scale, FcValue **scale, FcValue **zp) {
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
  FcValue *y = fc_b_round_saturate(b, fc_b_binary(b, FC_OP_DIV, x, s), fc_b_cast(b, z, FC_DT_F32), FC_DT_U8, 0, 255);
  if (b->status != FC_OK) return NULL;
  *scale = s;
  *zp = z;
  return y;
}
