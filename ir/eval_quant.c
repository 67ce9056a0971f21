/* eval_quant.c — reference evaluators of quantisation (ops.def): quantize, dequantize, scast, and the
 * quantised forms of matmul and conv (conv's integer product is eval_nn.c's conv on the shifted operands).
 *
 * These define the arithmetic the integer kernels must reproduce bit for bit, so every rounding step is
 * spelled out in f32 as ops.def states it: quantize divides in f32 and rounds half to even; requantisation
 * multiplies f32(acc) by the f32 multiplier f32(f32(sx*sw) / sy) (fc_quant_multiplier) and rounds half to
 * even before adding the zero point and clamping to the result type's [qmin, qmax].
 */
#include "eval_struct.h"

#include <math.h>
#include <string.h>

/* Parameter index of flat element i of a tensor of type t for per-axis q (0 for per-tensor). */
static int64_t param_at(const FcQuant *q, const FcType *t, int64_t i) {
  if (q->axis < 0) return 0;
  int64_t inner = 1;
  for (int d = q->axis + 1; d < t->rank; d++) inner *= t->dims[d];
  return (i / inner) % t->dims[q->axis];
}

static int64_t clamp_q(const FcQuant *q, double r) {
  if (!(r >= (double)q->qmin)) return q->qmin; /* NaN too */
  if (r > (double)q->qmax) return q->qmax;
  return (int64_t)r;
}

FcStatus fc_eval_quantize(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 1, diag));
  const FcType *rt = &op->results[0].type;
  const FcQuant *q = rt->quant;
  if (!q || in[0]->type.dtype != FC_DT_F32) return fc_ev_fail(op, diag, FC_ERR_INPUT, "expects f32 -> quantised");
  FcTensor *y = fc_tensor_new(arena, *rt);
  const float *x = in[0]->data;
  int64_t n = fc_ev_numel(rt);
  for (int64_t i = 0; i < n; i++) {
    int64_t p = param_at(q, rt, i);
    float v = x[i] / (float)q->scales[p];
    fc_tensor_set_i64(y, i, clamp_q(q, (double)rintf(v) + (double)q->zero_points[p]));
  }
  out[0] = y;
  return FC_OK;
}

FcStatus fc_eval_dequantize(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena,
                            FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 1, diag));
  const FcType *xt = &in[0]->type;
  const FcQuant *q = xt->quant;
  if (!q || op->results[0].type.dtype != FC_DT_F32)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "expects quantised -> f32");
  FcTensor *y = fc_tensor_new(arena, op->results[0].type);
  float *yd = (float *)y->data;
  int64_t n = fc_ev_numel(xt);
  for (int64_t i = 0; i < n; i++) {
    int64_t p = param_at(q, xt, i);
    yd[i] = (float)(fc_tensor_get_i64(in[0], i) - q->zero_points[p]) * (float)q->scales[p];
  }
  out[0] = y;
  return FC_OK;
}

FcStatus fc_eval_scast(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 1, diag));
  const FcType *rt = &op->results[0].type;
  if (rt->dtype != in[0]->type.dtype) return fc_ev_fail(op, diag, FC_ERR_INPUT, "storage types differ");
  FcTensor *y = fc_tensor_new(arena, *rt);
  if (y->nbytes) memcpy((void *)y->data, in[0]->data, (size_t)y->nbytes);
  out[0] = y;
  return FC_OK;
}

FcTensor *fc_ev_quant_shifted(FcArena *a, const FcTensor *t) {
  const FcQuant *q = t->type.quant;
  FcTensor *s = fc_tensor_new(a, fc_type_make(a, FC_DT_I32, t->type.rank, t->type.dims));
  int32_t *sd = (int32_t *)s->data;
  int64_t n = fc_ev_numel(&t->type);
  for (int64_t i = 0; i < n; i++) sd[i] = (int32_t)(fc_tensor_get_i64(t, i) - q->zero_points[param_at(q, &t->type, i)]);
  return s;
}

FcTensor *fc_ev_requantize(const FcOp *op, FcArena *arena, const int32_t *acc, const FcQuant *xq, const FcQuant *wq,
                           int64_t inner) {
  const FcType *rt = &op->results[0].type;
  const FcQuant *yq = rt->quant;
  /* plain: the f32 product, also where an epilogue (conv: `to`) then makes the result another dtype */
  FcTensor *y = fc_tensor_new(arena, yq ? *rt : fc_type_make(arena, FC_DT_F32, rt->rank, rt->dims));
  int64_t n = fc_ev_numel(rt), channels = wq->n;
  for (int64_t i = 0; i < n; i++) {
    int64_t c = wq->axis < 0 ? 0 : (i / inner) % channels;
    double s = xq->scales[0] * wq->scales[c];
    float a = (float)acc[i];
    if (!yq) {
      ((float *)y->data)[i] = a * (float)s;
    } else {
      float v = a * fc_quant_multiplier(xq->scales[0], wq->scales[c], yq->scales[0]);
      fc_tensor_set_i64(y, i, clamp_q(yq, (double)rintf(v) + (double)yq->zero_points[0]));
    }
  }
  return y;
}

/* a [.., M, K] x b [K, N] on the shifted integers, plus the bias, requantised. */
FcStatus fc_eval_quant_matmul(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena,
                              FcDiag *diag) {
  const FcType *at = &in[0]->type, *bt = &in[1]->type, *rt = &op->results[0].type;
  if (bt->rank != 2 || at->rank < 2) return fc_ev_fail(op, diag, FC_ERR_INPUT, "expects a [.., M, K] x [K, N]");
  int64_t K = bt->dims[0], N = bt->dims[1], rows = fc_ev_numel(at) / (K ? K : 1);
  int64_t work[3] = {rows, K, N};
  FC_EV_TRY(fc_ev_work(op, diag, 3, work));
  FcArena scratch;
  fc_arena_init(&scratch);
  const int32_t *A = fc_ev_quant_shifted(&scratch, in[0])->data, *B = fc_ev_quant_shifted(&scratch, in[1])->data;
  const int32_t *bias = op->n_operands > 2 && in[2] ? in[2]->data : NULL;
  int64_t n = fc_ev_numel(rt);
  int32_t *acc = FC_NEW_ARRAY(&scratch, int32_t, (size_t)(n ? n : 1));
  for (int64_t r = 0; K && r < rows; r++)
    for (int64_t j = 0; j < N; j++) {
      int64_t s = bias ? bias[j] : 0;
      for (int64_t k = 0; k < K; k++) s += (int64_t)A[r * K + k] * B[k * N + j];
      acc[r * N + j] = (int32_t)s;
    }
  for (int64_t i = 0; !K && i < n; i++) acc[i] = bias ? bias[i % N] : 0;
  out[0] = fc_ev_requantize(op, arena, acc, at->quant, bt->quant, 1);
  fc_arena_free(&scratch);
  return FC_OK;
}
