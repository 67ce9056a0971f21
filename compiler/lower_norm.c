/* lower_norm.c — legalisers of the normalisations: BatchNormalization, InstanceNormalization,
 * GroupNormalization, LayerNormalization, LRN and MeanVarianceNormalization.
 *
 * BatchNormalization in inference is folded per channel: s = scale / sqrt(var + eps) and
 * t = B - mean * s are computed on the 1-D parameters (constant folding turns them into two small
 * constants when the parameters are initializers), reshaped to [C, 1, ..., 1], and y = x * s + t.
 * Training mode (training_mode=1 from opset 14; before that, a node that names the statistics outputs
 * without is_test) normalises with the batch statistics over every axis but the channel axis and
 * updates the running ones: running = input * momentum + batch * (1 - momentum). Opset < 9's spatial=0
 * takes per-activation parameters of shape [C, D1, ..]: statistics then reduce over the batch axis only.
 *
 * InstanceNormalization is core layer_norm over the spatial axes (unit scale) followed by the
 * per-channel affine step. LayerNormalization is core layer_norm, computed in stash_type's precision
 * as the spec says when that differs from the input's. LRN sums squares over a channel window with an
 * avg_pool over the input viewed as [N, 1, C, rest] (count_include_pad=1, so avg * size is the sum
 * the spec wants, and alpha / size * sum = alpha * avg). MeanVarianceNormalization is
 * (x - mean) / (sqrt(var) + 1e-9) over `axes`, with var = mean((x - mean)^2): the spec's
 * E[x^2] - E[x]^2 is the same value, but that form can go negative through cancellation.
 */
#include "onnx.h"

#include <stdlib.h>
#include <string.h>



/* A per-channel parameter of shape [C] viewed as [C, 1, ..., 1] so it broadcasts against x of rank
 * `rank` along dim 1; other shapes (rank 0, or [C, D1, ..] of spatial=0) already broadcast. */
static FcValue *per_channel(FcLower *l, FcValue *p, int rank) {
  if (!p || p->type.rank != 1 || rank <= 2) return p;
  int64_t *dims = fc_lx_dims(l, rank - 1);
  dims[0] = p->type.dims[0];
  for (int i = 1; i < rank - 1; i++) dims[i] = 1;
  return fc_b_reshape(l->b, p, rank - 1, dims);
}

/* ---- BatchNormalization -------------------------------------------------------------------------- */

static bool batch_norm_training(const FcLower *l) {
  if (l->opset >= 14) return fc_lx_int(l, "training_mode", 0) != 0;
  if (l->opset < 7 && fc_lx_int(l, "is_test", 0) != 0) return false;
  for (int i = 1; i < l->n_out; i++)
    if (fc_lx_out_named(l, i)) return true;
  return false;
}

FcStatus fc_lower_batch_norm(FcLower *l) {
  if (fc_lx_need_inputs(l, 5) != FC_OK) return FC_ERR_INPUT;
  FcValue *x = l->in[0];
  if (!fc_lx_need_float(l, x)) return FC_ERR_INPUT;
  int rank = x->type.rank;
  if (rank < 2) return fc_lx_error(l, "input must have rank >= 2 (N, C, ...), has %d", rank);
  FcDtype dt = x->type.dtype;
  double eps = fc_lx_float(l, "epsilon", 1e-5f), momentum = fc_lx_float(l, "momentum", 0.9f);
  bool spatial = l->opset >= 9 || fc_lx_int(l, "spatial", 1) != 0;
  FcValue *scale = fc_lx_cast_to(l, l->in[1], dt), *bias = fc_lx_cast_to(l, l->in[2], dt);
  FcValue *mean = l->in[3], *var = l->in[4];

  if (!batch_norm_training(l)) {
    FcValue *inv = fc_lx_cast_to(l, var, dt);
    inv = fc_lx_add(l, inv, fc_lx_scalar(l, x, eps));
    inv = fc_b_unary(l->b, FC_OP_RECIPROCAL, fc_b_unary(l->b, FC_OP_SQRT, inv));
    FcValue *s = fc_lx_mul(l, scale, inv);
    FcValue *t = fc_lx_sub(l, bias, fc_lx_mul(l, fc_lx_cast_to(l, mean, dt), s));
    FcValue *y = fc_lx_mul(l, x, per_channel(l, s, rank));
    l->out[0] = fc_lx_add(l, y, per_channel(l, t, rank));
    return fc_lx_finish(l);
  }

  /* Batch statistics over N and (spatial) the trailing dims; keepdims=0 gives them the parameters'
   * shape ([C], or [C, D1, ..] for spatial=0). */
  int64_t *axes = fc_lx_dims(l, rank);
  int n = 0;
  axes[n++] = 0;
  if (spatial)
    for (int i = 2; i < rank; i++) axes[n++] = i;
  FcValue *bm = fc_b_reduce(l->b, FC_OP_REDUCE_MEAN, x, n, axes, false);
  FcValue *d = fc_lx_sub(l, x, per_channel(l, bm, rank));
  FcValue *bv = fc_b_reduce(l->b, FC_OP_REDUCE_MEAN, fc_lx_mul(l, d, d), n, axes, false);
  FcValue *std = fc_b_unary(l->b, FC_OP_SQRT, fc_lx_add(l, bv, fc_lx_scalar(l, x, eps)));
  FcValue *y = fc_lx_div(l, d, per_channel(l, std, rank));
  y = fc_lx_mul(l, y, per_channel(l, scale, rank));
  l->out[0] = fc_lx_add(l, y, per_channel(l, bias, rank));

  /* running = input * momentum + batch * (1 - momentum), in the running statistics' dtype */
  FcValue *stats[2] = {mean, var}, *batch[2] = {bm, bv};
  for (int i = 0; i < 2; i++) {
    if (!fc_lx_out_named(l, 1 + i)) continue;
    FcValue *st = stats[i];
    FcValue *bs = fc_lx_cast_to(l, batch[i], st->type.dtype);
    FcValue *kept = fc_lx_mul(l, st, fc_lx_scalar(l, st, momentum));
    l->out[1 + i] = fc_lx_add(l, kept, fc_lx_mul(l, bs, fc_lx_scalar(l, st, 1.0 - momentum)));
  }
  if (l->opset < 14) {
    if (fc_lx_out_named(l, 3)) l->out[3] = bm;
    if (fc_lx_out_named(l, 4)) l->out[4] = bv;
  }
  return fc_lx_finish(l);
}

/* ---- InstanceNormalization ----------------------------------------------------------------------- */

FcStatus fc_lower_instance_norm(FcLower *l) {
  if (fc_lx_need_inputs(l, 3) != FC_OK) return FC_ERR_INPUT;
  FcValue *x = l->in[0];
  if (!fc_lx_need_float(l, x)) return FC_ERR_INPUT;
  int rank = x->type.rank;
  if (rank < 3) return fc_lx_error(l, "input must have rank >= 3 (N, C, D1, ...), has %d", rank);
  FcValue *ops[2] = {x, fc_lx_scalar(l, x, 1)};
  FcAttr a[2] = {FC_A_INT(AXIS, 2), FC_A_FLOAT(EPSILON, fc_lx_float(l, "epsilon", 1e-5f))};
  FcValue *y = fc_b_op1(l->b, FC_OP_LAYER_NORM, ops, 2, a, 2);
  y = fc_lx_mul(l, y, per_channel(l, fc_lx_cast_to(l, l->in[1], x->type.dtype), rank));
  l->out[0] = fc_lx_add(l, y, per_channel(l, fc_lx_cast_to(l, l->in[2], x->type.dtype), rank));
  return fc_lx_finish(l);
}

/* ---- GroupNormalization ------------------------------------------------------------------------- */

/* GroupNormalization: x [N, C, D...] viewed as [N, G, C/G * D...] goes through core layer_norm along axis 2
 * (unit scale), back to x's shape, then the affine step per channel. Opset 18 gives scale and bias per
 * group ([G], widened to [C] by repeating each C/G times); opset 21 gives them per channel ([C]) and
 * adds stash_type, the precision of the standardisation (as LayerNormalization's). */
FcStatus fc_lower_group_norm(FcLower *l) {
  if (fc_lx_need_inputs(l, 3) != FC_OK) return FC_ERR_INPUT;
  FcValue *x = l->in[0], *scale = l->in[1], *bias = l->in[2];
  if (!fc_lx_need_float(l, x)) return FC_ERR_INPUT;
  int rank = x->type.rank;
  if (rank < 2) return fc_lx_error(l, "input must have rank >= 2 (N, C, D1, ...), has %d", rank);
  int64_t n = x->type.dims[0], c = x->type.dims[1], g = fc_lx_int(l, "num_groups", 0), rest = 1;
  if (!fc_lx_has_attr(l, "num_groups")) return fc_lx_error(l, "attribute 'num_groups' is required");
  if (g < 1 || c % g != 0)
    return fc_lx_error(l, "num_groups %lld does not divide the %lld channels", (long long)g, (long long)c);
  for (int i = 2; i < rank; i++)
    if (!fc_checked_mul(rest, x->type.dims[i], &rest)) return fc_lx_error(l, "input is too large");
  int64_t want = l->opset >= 21 ? c : g;
  for (int i = 1; i < 3; i++) {
    const FcType *t = &l->in[i]->type;
    if (t->rank != 1 || t->dims[0] != want)
      return fc_lx_error(l, "%s must have shape [%lld] (one per %s)", i == 1 ? "scale" : "bias", (long long)want,
                         l->opset >= 21 ? "channel" : "group");
  }
  FcDtype stash = x->type.dtype;
  int64_t stash_code = fc_lx_int(l, "stash_type", 1);
  if (l->opset >= 21 && (stash_code < 0 || stash_code > 1000 || !fc_dtype_from_onnx((int)stash_code, &stash) ||
                         !fc_dtype_is_float(stash)))
    return fc_lx_error(l, "stash_type %lld is not a float element type", (long long)stash_code);
  int64_t cg, grouped[3];
  if (!fc_checked_mul(c / g, rest, &cg)) return fc_lx_error(l, "input is too large");
  grouped[0] = n, grouped[1] = g, grouped[2] = cg;
  FcValue *ops[2] = {fc_b_reshape(l->b, fc_lx_cast_to(l, x, stash), 3, grouped), fc_b_scalar(l->b, stash, 1)};
  FcAttr a[2] = {FC_A_INT(AXIS, 2), FC_A_FLOAT(EPSILON, fc_lx_float(l, "epsilon", 1e-5f))};
  FcValue *y = fc_b_op1(l->b, FC_OP_LAYER_NORM, ops, 2, a, 2);
  y = fc_lx_cast_to(l, fc_b_reshape(l->b, y, rank, x->type.dims), x->type.dtype);
  if (l->opset < 21) { /* [G] -> [G, 1] -> [G, C/G] -> [C] */
    int64_t col[2] = {g, 1}, wide[2] = {g, c / g};
    scale = fc_b_reshape(l->b, fc_b_broadcast(l->b, fc_b_reshape(l->b, scale, 2, col), 2, wide), 1, &c);
    bias = fc_b_reshape(l->b, fc_b_broadcast(l->b, fc_b_reshape(l->b, bias, 2, col), 2, wide), 1, &c);
  }
  y = fc_lx_mul(l, y, per_channel(l, fc_lx_cast_to(l, scale, x->type.dtype), rank));
  l->out[0] = fc_lx_add(l, y, per_channel(l, fc_lx_cast_to(l, bias, x->type.dtype), rank));
  return fc_lx_finish(l);
}

/* ---- LayerNormalization -------------------------------------------------------------------------- */

FcStatus fc_lower_layer_norm(FcLower *l) {
  if (fc_lx_need_inputs(l, 2) != FC_OK) return FC_ERR_INPUT;
  FcValue *x = l->in[0], *scale = l->in[1], *bias = l->n_in > 2 ? l->in[2] : NULL;
  if (!fc_lx_need_float(l, x)) return FC_ERR_INPUT;
  int64_t axis;
  if (!fc_lx_axis(l, fc_lx_int(l, "axis", -1), x->type.rank, &axis)) return fc_lx_bail(l);
  float eps = fc_lx_float(l, "epsilon", 1e-5f);
  int64_t stash_code = fc_lx_int(l, "stash_type", 1);
  FcDtype stash;
  if (stash_code < 0 || stash_code > 1000 || !fc_dtype_from_onnx((int)stash_code, &stash) || !fc_dtype_is_float(stash))
    return fc_lx_error(l, "stash_type %lld is not a float element type", (long long)stash_code);
  int n_res = 1;
  for (int i = 1; i < 3; i++)
    if (fc_lx_out_named(l, i)) n_res = i + 1;
  FcAttr a[2] = {FC_A_INT(AXIS, axis), FC_A_FLOAT(EPSILON, eps)};
  FcOp *op;
  if (stash == x->type.dtype) {
    FcValue *ops[3] = {x, scale, bias};
    op = fc_b_op(l->b, FC_OP_LAYER_NORM, ops, bias ? 3 : 2, n_res, a, 2);
    if (!op) return fc_lx_bail(l);
    l->out[0] = &op->results[0];
  } else {
    /* Standardise in the stash precision; the affine step stays in x's dtype (spec). */
    FcValue *xs = fc_b_cast(l->b, x, stash);
    FcValue *ops[2] = {xs, fc_b_scalar(l->b, stash, 1)};
    op = fc_b_op(l->b, FC_OP_LAYER_NORM, ops, 2, n_res, a, 2);
    if (!op) return fc_lx_bail(l);
    FcValue *y = fc_lx_mul(l, fc_b_cast(l->b, &op->results[0], x->type.dtype), scale);
    l->out[0] = bias ? fc_lx_add(l, y, bias) : y;
  }
  for (int i = 1; i < n_res; i++)
    if (fc_lx_out_named(l, i)) l->out[i] = &op->results[i];
  return fc_lx_finish(l);
}

/* ---- LRN ----------------------------------------------------------------------------------------- */

FcStatus fc_lower_lrn(FcLower *l) {
  if (fc_lx_need_inputs(l, 1) != FC_OK) return FC_ERR_INPUT;
  FcValue *x = l->in[0];
  if (!fc_lx_need_float(l, x)) return FC_ERR_INPUT;
  const FcType *t = &x->type;
  if (t->rank < 2) return fc_lx_error(l, "input must have rank >= 2 (N, C, ...), has %d", t->rank);
  if (!fc_lx_has_attr(l, "size")) return fc_lx_error(l, "attribute 'size' is required");
  int64_t size = fc_lx_int(l, "size", 1);
  if (size < 1 || size > INT32_MAX) return fc_lx_error(l, "size must be positive, is %lld", (long long)size);
  double alpha = fc_lx_float(l, "alpha", 1e-4f), beta = fc_lx_float(l, "beta", 0.75f),
         bias = fc_lx_float(l, "bias", 1.0f);
  int64_t rest = 1;
  for (int i = 2; i < t->rank; i++)
    if (!fc_checked_mul(rest, t->dims[i], &rest)) return fc_lx_error(l, "input has too many elements");
  int64_t view[4] = {t->dims[0], 1, t->dims[1], rest};
  FcValue *sq = fc_b_reshape(l->b, fc_lx_mul(l, x, x), 4, view);
  /* channel c sums squares over [c - floor((size-1)/2), c + ceil((size-1)/2)] */
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  int64_t kernel[2] = {size, 1}, ones[2] = {1, 1}, pads[4] = {lo, 0, hi, 0};
  FcAttr a[6] = {FC_A_INT(CEIL_MODE, 0),         FC_A_INT(COUNT_INCLUDE_PAD, 1), FC_A_INTS(DILATIONS, ones, 2),
                 FC_A_INTS(KERNEL_SHAPE, kernel, 2), FC_A_INTS(PADS, pads, 4),      FC_A_INTS(STRIDES, ones, 2)};
  FcValue *avg = fc_b_op1(l->b, FC_OP_AVG_POOL, &sq, 1, a, 6);
  avg = fc_b_reshape(l->b, avg, t->rank, t->dims);
  FcValue *den = fc_lx_mul(l, avg, fc_lx_scalar(l, x, alpha));
  den = fc_lx_add(l, den, fc_lx_scalar(l, x, bias));
  l->out[0] = fc_lx_div(l, x, fc_b_binary(l->b, FC_OP_POW, den, fc_lx_scalar(l, x, beta)));
  return fc_lx_finish(l);
}

/* ---- MeanVarianceNormalization ------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

FcStatus fc_lower_mvn(FcLower *l) {
  if (fc_lx_need_inputs(l, 1) != FC_OK) return FC_ERR_INPUT;
  FcValue *x = l->in[0];
  if (!fc_lx_need_float(l, x)) return FC_ERR_INPUT;
  static const int64_t default_axes[3] = {0, 2, 3};
  const int64_t *v = default_axes;
  int n = fc_lx_ints(l, "axes", &v);
  if (n < 0) {
    v = default_axes;
    n = 3;
  }
  if (n == 0) return fc_lx_error(l, "axes is empty");
  int64_t *axes = fc_lx_dims(l, n);
  for (int i = 0; i < n; i++)
    if (!fc_lx_axis(l, v[i], x->type.rank, &axes[i])) return fc_lx_bail(l);
  qsort(axes, (size_t)n, sizeof *axes, cmp_i64);
  int m = 0;
  for (int i = 0; i < n; i++)
    if (m == 0 || axes[i] != axes[m - 1]) axes[m++] = axes[i];
  FcValue *mean = fc_b_reduce(l->b, FC_OP_REDUCE_MEAN, x, m, axes, true);
  FcValue *d = fc_lx_sub(l, x, mean);
  FcValue *var = fc_b_reduce(l->b, FC_OP_REDUCE_MEAN, fc_lx_mul(l, d, d), m, axes, true);
  FcValue *std = fc_b_unary(l->b, FC_OP_SQRT, var);
  std = fc_lx_add(l, std, fc_lx_scalar(l, x, 1e-9));
  l->out[0] = fc_lx_div(l, d, std);
  return fc_lx_finish(l);
}
