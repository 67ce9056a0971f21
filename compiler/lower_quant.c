/* lower_quant.c — legalisers of quantisation and integer arithmetic: QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv.
 *
 * Quantisation is y = saturate(round(x / scale) + zero_point) in f32 (round half to even, the core
 * round), clamped to the output type's range and cast; dequantisation is (x - zero_point) * scale in
 * f32. A 1-D scale/zero point is per-axis (QuantizeLinear/DequantizeLinear >= 13, `axis` default 1):
 * it is viewed as [C, 1, .., 1] so it broadcasts along that axis.
 *
 * Integer products widen to i32 and subtract the zero points first (zero points are per tensor, per
 * row of A / per column of B for matmul, per output channel of W for conv), then use core matmul/conv
 * on i32 — exact, as the spec requires. Padding in ConvInteger/QLinearConv therefore contributes zeros
 * of the shifted values, as ONNX's reference does. The QLinear* ops then requantise the i32 result:
 * y = saturate(round(acc * (a_scale * b_scale / y_scale)) + y_zero_point), the multiplier in f32.
 *
 * QLinearConv and QLinearMatMul whose weight, scales and zero points are compile-time values (a model's
 * initializers) with the per-tensor / per-output-channel shapes the integer kernels take are written in the
 * QDQ form instead — dequantize the operands, conv/matmul in f32, quantize the result — which the fold_qdq
 * pass turns into one quantised conv/matmul (ops.def qtype): the QDQ models and the QOperator models then
 * take one path. A QLinearConv bias (i32 in units of x_scale * w_scale[m]) becomes dequantize of an i32
 * type with exactly those scales, so fold_qdq reads back the same integers.
 *
 * Conv attributes (auto_pad, pads, strides, dilations, group, kernel_shape) are resolved here to the
 * explicit form core conv takes.
 */
#include "onnx.h"

#include <math.h>
#include <string.h>

static FcValue *opt_in(const FcLower *l, int i) { return i < l->n_in ? l->in[i] : NULL; }


/* The saturation range of a quantised type. */
static bool quant_range(FcDtype dt, double *lo, double *hi) {
  switch (dt) {
  case FC_DT_U8: *lo = 0; *hi = 255; return true;
  case FC_DT_I8: *lo = -128; *hi = 127; return true;
  case FC_DT_U16: *lo = 0; *hi = 65535; return true;
  case FC_DT_I16: *lo = -32768; *hi = 32767; return true;
  default: return false;
  }
}

static bool need_quant_type(FcLower *l, const FcValue *v, const char *what) {
  double lo, hi;
  if (quant_range(v->type.dtype, &lo, &hi)) return true;
  fc_lx_error(l, "%s must be a 8- or 16-bit integer, not %s", what, fc_dtype_name(v->type.dtype));
  return false;
}

/* round(v) + zp, clamped to dt's range and cast to dt; v and zp_f are f32 (zp_f may be NULL). */
static FcValue *requantize(FcLower *l, FcValue *v, FcValue *zp_f, FcDtype dt) {
  double lo, hi;
  FC_ASSERT(quant_range(dt, &lo, &hi));
  return fc_b_round_saturate(l->b, v, zp_f, dt, lo, hi);
}

/* A scale or zero point for x: rank 0 or a single element is per tensor; from opset 13 a 1-D one of
 * x's dim at `axis` (attribute, default 1, read only then) is per axis and viewed as [C, 1, .., 1].
 * Returns NULL (error recorded) otherwise. */
static FcValue *axis_view(FcLower *l, FcValue *p, const FcValue *x, const char *what) {
  const FcType *t = &p->type;
  int64_t n, axis = 1;
  if (!fc_type_numel(t, &n)) n = -1;
  if (t->rank == 0 || (n == 1 && t->rank <= x->type.rank)) return p;
  char b1[256], b2[256];
  if (t->rank == 1 && l->opset >= 13) {
    if (!fc_lx_axis(l, fc_lx_int(l, "axis", 1), x->type.rank, &axis)) return NULL;
    if (t->dims[0] == x->type.dims[axis]) {
      int r = x->type.rank - (int)axis;
      if (r == 1) return p;
      int64_t *dims = fc_lx_dims(l, r);
      dims[0] = t->dims[0];
      for (int i = 1; i < r; i++) dims[i] = 1;
      return fc_b_reshape(l->b, p, r, dims);
    }
    fc_lx_error(l, "%s %s does not match dim %lld of input %s", what, fc_type_str(t, b1, sizeof b1),
                (long long)axis, fc_type_str(&x->type, b2, sizeof b2));
    return NULL;
  }
  fc_lx_error(l, "%s %s must be a scalar%s", what, fc_type_str(t, b1, sizeof b1),
              l->opset >= 13 ? " or 1-D along the quantisation axis" : "");
  return NULL;
}

/* ---- QuantizeLinear / DequantizeLinear ------------------------------------------------------------ */

/* Opset 21's block quantisation (block_size > 0: a scale per block of `block_size` elements along the
 * axis) is not implemented; per-tensor and per-axis are. */
static bool refuse_blocked(FcLower *l) {
  if (l->opset < 21 || fc_lx_int(l, "block_size", 0) == 0) return false;
  fc_lx_unsupported(l, "blocked quantisation (block_size %lld) is not supported",
                    (long long)fc_lx_int(l, "block_size", 0));
  return true;
}

/* The quantised type: the zero point's, else output_dtype (opset 21), else uint8. */
static bool quantize_dtype(FcLower *l, const FcValue *zp, FcDtype *qdt) {
  int64_t code = l->opset >= 21 ? fc_lx_int(l, "output_dtype", 0) : 0;
  *qdt = zp ? zp->type.dtype : FC_DT_U8;
  if (code == 0) return true;
  FcDtype dt;
  double lo, hi;
  if (code < 0 || code > 1000 || !fc_dtype_from_onnx((int)code, &dt) || !quant_range(dt, &lo, &hi)) {
    fc_lx_unsupported(l, "output_dtype %lld is not supported", (long long)code);
    return false;
  }
  if (zp && dt != *qdt) {
    fc_lx_error(l, "output_dtype differs from y_zero_point's type %s", fc_dtype_name(*qdt));
    return false;
  }
  *qdt = dt;
  return true;
}

/* The quantised type of QuantizeLinear's output / DequantizeLinear's input when its scale and zero point
 * are constants (per tensor, or 1-D per axis as axis_view accepts them), else NULL without an error; NULL
 * with an error recorded when a scale is not positive and finite. */
static const FcQuant *constant_quant(FcLower *l, FcValue *scale, FcValue *zp, const FcValue *x, FcDtype storage,
                                     const char *what) {
  const FcTensor *s = fc_value_const(scale), *z = zp ? fc_value_const(zp) : NULL;
  int64_t n, lo, hi, axis = -1;
  if (!s || (zp && !z) || !fc_type_numel(&s->type, &n) || n < 1 || !fc_quant_storage_range(storage, &lo, &hi))
    return NULL;
  if (n > 1 && !fc_lx_axis(l, fc_lx_int(l, "axis", 1), x->type.rank, &axis)) return NULL;
  FcArena *a = &l->b->g->module->arena;
  double *scales = FC_NEW_ARRAY(a, double, (size_t)n);
  int64_t *zps = FC_NEW_ARRAY(a, int64_t, (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    scales[i] = fc_tensor_get_f64(s, i);
    zps[i] = z ? fc_tensor_get_i64(z, i) : 0;
    if (!(scales[i] > 0) || isinf(scales[i])) {
      fc_lx_error(l, "%s %g must be positive and finite", what, scales[i]);
      return NULL;
    }
  }
  FcQuant q = {.storage = storage, .expressed = FC_DT_F32, .qmin = lo, .qmax = hi, .axis = n > 1 ? (int)axis : -1,
               .n = (int)n, .scales = scales, .zero_points = zps};
  return fc_quant_copy(a, &q);
}

FcStatus fc_lower_quantize(FcLower *l) {
  if (fc_lx_need_inputs(l, 2) != FC_OK) return FC_ERR_INPUT;
  FcValue *x = l->in[0], *scale = l->in[1], *zp = opt_in(l, 2);
  if (refuse_blocked(l)) return fc_lx_bail(l);
  if (scale->type.dtype != FC_DT_F32) return fc_lx_error(l, "y_scale must be float32");
  if (zp && !need_quant_type(l, zp, "y_zero_point")) return FC_ERR_INPUT;
  FcDtype qdt;
  if (!quantize_dtype(l, zp, &qdt)) return fc_lx_bail(l);
  FcValue *s = axis_view(l, scale, x, "y_scale");
  if (!s) return fc_lx_bail(l);
  const FcQuant *q = constant_quant(l, scale, zp, x, qdt, "y_scale");
  if (l->diag->status) return fc_lx_bail(l);
  if (q) {
    l->out[0] = fc_b_scast(l->b, fc_b_quantize(l->b, fc_lx_cast_to(l, x, FC_DT_F32), q), NULL);
    return fc_lx_finish(l);
  }
  FcValue *zf = NULL;
  if (zp) {
    FcValue *z = axis_view(l, zp, x, "y_zero_point");
    if (!z) return fc_lx_bail(l);
    zf = fc_b_cast(l->b, z, FC_DT_F32);
  }
  FcValue *xf = fc_lx_cast_to(l, x, FC_DT_F32);
  l->out[0] = requantize(l, fc_b_binary(l->b, FC_OP_DIV, xf, s), zf, qdt);
  return fc_lx_finish(l);
}

FcStatus fc_lower_dequantize(FcLower *l) {
  if (fc_lx_need_inputs(l, 2) != FC_OK) return FC_ERR_INPUT;
  FcValue *x = l->in[0], *scale = l->in[1], *zp = opt_in(l, 2);
  if (refuse_blocked(l)) return fc_lx_bail(l);
  FcDtype dt = x->type.dtype;
  if (dt != FC_DT_U8 && dt != FC_DT_I8 && dt != FC_DT_I32 && dt != FC_DT_U16 && dt != FC_DT_I16)
    return fc_lx_error(l, "x must be an integer tensor, not %s", fc_dtype_name(dt));
  if (scale->type.dtype != FC_DT_F32) return fc_lx_error(l, "x_scale must be float32");
  if (zp && zp->type.dtype != dt) return fc_lx_error(l, "x_zero_point must have x's type %s", fc_dtype_name(dt));
  FcValue *s = axis_view(l, scale, x, "x_scale");
  if (!s) return fc_lx_bail(l);
  const FcQuant *q = constant_quant(l, scale, zp, x, dt, "x_scale");
  if (l->diag->status) return fc_lx_bail(l);
  if (q) {
    l->out[0] = fc_b_dequantize(l->b, fc_b_scast(l->b, x, q));
    return fc_lx_finish(l);
  }
  FcValue *y = fc_b_cast(l->b, x, FC_DT_F32);
  if (zp) {
    FcValue *z = axis_view(l, zp, x, "x_zero_point");
    if (!z) return fc_lx_bail(l);
    y = fc_b_binary(l->b, FC_OP_SUB, y, fc_b_cast(l->b, z, FC_DT_F32));
  }
  l->out[0] = fc_b_binary(l->b, FC_OP_MUL, y, s);
  return fc_lx_finish(l);
}

/* scale = (max(x, 0) - min(x, 0)) / 255; zero_point = saturate(round(-min / scale)); y = quantised x. */
FcStatus fc_lower_dynamic_quantize(FcLower *l) {
  if (fc_lx_need_inputs(l, 1) != FC_OK) return FC_ERR_INPUT;
  FcValue *x = l->in[0];
  if (x->type.dtype != FC_DT_F32) return fc_lx_error(l, "x must be float32, not %s", fc_dtype_name(x->type.dtype));
  FcValue *scale, *zp;
  l->out[0] = fc_b_dynamic_quantize(l->b, x, 0, false, &scale, &zp);
  if (fc_lx_out_named(l, 1)) l->out[1] = scale;
  if (fc_lx_out_named(l, 2)) l->out[2] = zp;
  return fc_lx_finish(l);
}

/* ---- integer matmul ------------------------------------------------------------------------------ */

/* A per-row parameter of A (or of the result): 1-D [M] viewed as [M, 1]; other shapes as given. */
static FcValue *per_row(FcLower *l, FcValue *p) {
  if (!p || p->type.rank != 1 || p->type.dims[0] == 1) return p;
  int64_t dims[2] = {p->type.dims[0], 1};
  return fc_b_reshape(l->b, p, 2, dims);
}

/* x widened to i32 minus its zero point (already shaped to broadcast), or x alone without one. */
static FcValue *shifted(FcLower *l, FcValue *x, FcValue *zp) {
  FcValue *v = fc_lx_cast_to(l, x, FC_DT_I32);
  return zp ? fc_b_binary(l->b, FC_OP_SUB, v, fc_lx_cast_to(l, zp, FC_DT_I32)) : v;
}

/* NumPy matmul on i32 operands: 1-D operands are promoted to matrices and the added dim dropped. */
static FcValue *matmul_nd(FcLower *l, FcValue *a, FcValue *b) {
  if (!a || !b) return NULL;
  int ra = a->type.rank, rb = b->type.rank;
  if (ra < 1 || rb < 1) {
    fc_lx_error(l, "matmul operands must have rank >= 1");
    return NULL;
  }
  if (ra == 1) {
    int64_t d[2] = {1, a->type.dims[0]};
    a = fc_b_reshape(l->b, a, 2, d);
  }
  if (rb == 1) {
    int64_t d[2] = {b->type.dims[0], 1};
    b = fc_b_reshape(l->b, b, 2, d);
  }
  FcValue *y = fc_b_binary(l->b, FC_OP_MATMUL, a, b);
  if (!y || (ra > 1 && rb > 1)) return y;
  /* drop the promoted dims: M (ra == 1) sits at rank-2, N (rb == 1) at rank-1 */
  int r = y->type.rank, n = 0;
  int64_t *dims = fc_lx_dims(l, r);
  for (int i = 0; i < r; i++) {
    if ((ra == 1 && i == r - 2) || (rb == 1 && i == r - 1)) continue;
    dims[n++] = y->type.dims[i];
  }
  return fc_b_reshape(l->b, y, n, dims);
}

static bool need_int8(FcLower *l, const FcValue *v, const char *what) {
  if (v->type.dtype == FC_DT_U8 || v->type.dtype == FC_DT_I8) return true;
  fc_lx_error(l, "%s must be uint8 or int8, not %s", what, fc_dtype_name(v->type.dtype));
  return false;
}

/* zp (8-bit, may be NULL: 0) as i32 plus `add`; NULL when that is 0 and zp is absent. */
static FcValue *zero_point_i32(FcLower *l, FcValue *zp, int add) {
  FcValue *z = zp ? fc_lx_cast_to(l, zp, FC_DT_I32) : NULL;
  if (!add) return z;
  FcValue *c = fc_b_scalar(l->b, FC_DT_I32, add);
  return z ? fc_b_binary(l->b, FC_OP_ADD, z, c) : c;
}

/* x (8-bit) + add, as `to` (the other 8-bit type): a shift by 128 between i8 and u8, exact. */
static FcValue *shift_8bit(FcLower *l, FcValue *x, int add, FcDtype to) {
  FcValue *v = fc_b_binary(l->b, FC_OP_ADD, fc_lx_cast_to(l, x, FC_DT_I32), fc_b_scalar(l->b, FC_DT_I32, add));
  return fc_b_cast(l->b, v, to);
}

/* Sum of x (8-bit) over `axis`, kept as a size-1 dim, in i32. */
static FcValue *sum_i32(FcLower *l, FcValue *x, int64_t axis) {
  return fc_b_reduce(l->b, FC_OP_REDUCE_SUM, fc_lx_cast_to(l, x, FC_DT_I32), 1, &axis, true);
}

/* The i32 accumulator sum_k (a - za)(b - zb) of an integer matmul, zero points already shaped to
 * broadcast (za per row [M, 1], zb per column). With a constant 2-D B, the product runs as flow.matmul on
 * the 8-bit operands themselves (u8 A × i8 B: the integer GEMM's operand types; the other 8-bit types are
 * shifted by 128 into them, the zero point with them, which changes no difference a - za) and the zero
 * points are exact i32 corrections around it:
 *     sum (a-za)(b-zb) = sum ab - zb·rowsum(A) - za·colsum(B) + K·za·zb,
 * where colsum(B) and everything of B fold at compile time. Otherwise (a run-time B, 1-D operands) the
 * operands are widened to i32 first. */
static FcValue *integer_matmul(FcLower *l, FcValue *a, FcValue *azp, FcValue *b, FcValue *bzp) {
  const FcTensor *cb = fc_value_const(b);
  if (!(cb && cb->data) || a->type.rank < 2 || b->type.rank != 2)
    return matmul_nd(l, shifted(l, a, azp), shifted(l, b, bzp));
  int a_add = a->type.dtype == FC_DT_I8 ? 128 : 0, b_add = b->type.dtype == FC_DT_U8 ? -128 : 0;
  FcValue *a8 = a_add ? shift_8bit(l, a, a_add, FC_DT_U8) : a, *b8 = b_add ? shift_8bit(l, b, b_add, FC_DT_I8) : b;
  FcValue *za = zero_point_i32(l, azp, a_add), *zb = zero_point_i32(l, bzp, b_add);
  FcValue *acc = fc_b_binary(l->b, FC_OP_MATMUL, a8, b8);
  if (zb) acc = fc_b_binary(l->b, FC_OP_SUB, acc, fc_b_binary(l->b, FC_OP_MUL, sum_i32(l, a8, a->type.rank - 1), zb));
  if (za) acc = fc_b_binary(l->b, FC_OP_SUB, acc, fc_b_binary(l->b, FC_OP_MUL, za, sum_i32(l, b8, 0)));
  if (za && zb) {
    FcValue *kz = fc_b_binary(l->b, FC_OP_MUL, za, fc_b_scalar(l->b, FC_DT_I32, (double)b->type.dims[0]));
    acc = fc_b_binary(l->b, FC_OP_ADD, acc, fc_b_binary(l->b, FC_OP_MUL, kz, zb));
  }
  return acc;
}

FcStatus fc_lower_matmul_integer(FcLower *l) {
  if (fc_lx_need_inputs(l, 2) != FC_OK) return FC_ERR_INPUT;
  FcValue *a = l->in[0], *b = l->in[1];
  if (!need_int8(l, a, "A") || !need_int8(l, b, "B")) return FC_ERR_INPUT;
  l->out[0] = integer_matmul(l, a, per_row(l, opt_in(l, 2)), b, opt_in(l, 3));
  if (!l->out[0]) return fc_lx_bail(l);
  return fc_lx_finish(l);
}

/* y = saturate(round(acc * multiplier) + y_zero_point) with acc i32 and the multiplier f32. */
static FcValue *requantize_acc(FcLower *l, FcValue *acc, FcValue *mult, FcValue *yzp) {
  if (!yzp) return NULL;
  FcValue *v = fc_b_binary(l->b, FC_OP_MUL, fc_b_cast(l->b, acc, FC_DT_F32), mult);
  return requantize(l, v, fc_b_cast(l->b, yzp, FC_DT_F32), yzp->type.dtype);
}

/* ---- QLinearMatMul / QLinearConv with compile-time parameters: the QDQ form ---------------------------- */

/* The quantised type stored as `storage` with the compile-time scale (input si) and zero point (input zi;
 * absent: 0) of a QLinear* operand: per tensor when both have one element, else per axis `axis` of size
 * n_axis (1-D parameters of that size, or one element repeated). NULL when they are not compile-time values
 * of those shapes and types (the caller then keeps the i32 lowering); NULL with an error recorded when a
 * scale is not positive and finite. */
static const FcQuant *qlinear_quant(FcLower *l, int si, int zi, FcDtype storage, int axis, int64_t n_axis,
                                    const char *what) {
  const FcTensor *s = fc_lx_bind_const_input(l, si), *z = opt_in(l, zi) ? fc_lx_bind_const_input(l, zi) : NULL;
  int64_t ns, nz = 1, lo, hi;
  if (!s || (opt_in(l, zi) && !z) || s->type.dtype != FC_DT_F32 || (z && z->type.dtype != storage) ||
      !fc_type_numel(&s->type, &ns) || (z && !fc_type_numel(&z->type, &nz)) ||
      !fc_quant_storage_range(storage, &lo, &hi))
    return NULL;
  int64_t n = ns > nz ? ns : nz;
  if (n < 1 || (ns != 1 && ns != n) || (nz != 1 && nz != n)) return NULL;
  if (n > 1 && (axis < 0 || n != n_axis || (ns > 1 && s->type.rank != 1) || (nz > 1 && z->type.rank != 1)))
    return NULL;
  FcArena *a = fc_lx_arena(l);
  double *scales = FC_NEW_ARRAY(a, double, (size_t)n);
  int64_t *zps = FC_NEW_ARRAY(a, int64_t, (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    scales[i] = fc_tensor_get_f64(s, ns > 1 ? i : 0);
    zps[i] = z ? fc_tensor_get_i64(z, nz > 1 ? i : 0) : 0;
    if (!(scales[i] > 0) || !isfinite(scales[i])) {
      fc_lx_error(l, "%s %g must be positive and finite", what, scales[i]);
      return NULL;
    }
  }
  FcQuant q = {.storage = storage, .expressed = FC_DT_F32, .qmin = lo, .qmax = hi, .axis = n > 1 ? axis : -1,
               .n = (int)n, .scales = scales, .zero_points = zps};
  char why[256];
  return fc_quant_problem(&q, NULL, why, sizeof why) ? NULL : fc_quant_copy(a, &q);
}

/* dequantize(scast(v, q)): the real values of the storage integers v. */
static FcValue *dequantized(FcLower *l, FcValue *v, const FcQuant *q) {
  return fc_b_dequantize(l->b, fc_b_scast(l->b, v, q));
}

/* QLinearMatMul as dequantize -> matmul -> quantize, which fold_qdq turns into one quantised matmul on the
 * integer kernels: taken when B is a compile-time [K, N] matrix (a weight), A's and Y's parameters are per
 * tensor and B's per tensor or per column. NULL without an error otherwise (the i32 lowering applies). */
static FcValue *qlinear_matmul_qdq(FcLower *l) {
  FcValue *a = l->in[0];
  if (a->type.rank < 2 || l->in[3]->type.rank != 2 || !fc_lx_bind_const_input(l, 3)) return NULL;
  FcValue *b = l->in[3];
  const FcQuant *qa = qlinear_quant(l, 1, 2, a->type.dtype, -1, 0, "a_scale");
  const FcQuant *qb = qa ? qlinear_quant(l, 4, 5, b->type.dtype, 1, b->type.dims[1], "b_scale") : NULL;
  const FcQuant *qy = qb ? qlinear_quant(l, 6, 7, l->in[7]->type.dtype, -1, 0, "y_scale") : NULL;
  if (!qy) return NULL;
  FcValue *y = fc_b_binary(l->b, FC_OP_MATMUL, dequantized(l, a, qa), dequantized(l, b, qb));
  return fc_b_scast(l->b, fc_b_quantize(l->b, y, qy), NULL);
}

FcStatus fc_lower_qlinear_matmul(FcLower *l) {
  if (fc_lx_need_inputs(l, 8) != FC_OK) return FC_ERR_INPUT;
  FcValue *a = l->in[0], *as = l->in[1], *azp = l->in[2], *b = l->in[3], *bs = l->in[4], *bzp = l->in[5],
          *ys = l->in[6], *yzp = l->in[7];
  if (!need_int8(l, a, "a") || !need_int8(l, b, "b") || !need_int8(l, yzp, "y_zero_point")) return FC_ERR_INPUT;
  if (as->type.dtype != FC_DT_F32 || bs->type.dtype != FC_DT_F32 || ys->type.dtype != FC_DT_F32)
    return fc_lx_error(l, "scales must be float32");
  if ((l->out[0] = qlinear_matmul_qdq(l)) != NULL || l->diag->status) return fc_lx_finish(l);
  /* the inputs the QDQ form bound to their compile-time values */
  as = l->in[1], azp = l->in[2], b = l->in[3], bs = l->in[4], bzp = l->in[5], ys = l->in[6], yzp = l->in[7];
  FcValue *acc = integer_matmul(l, a, per_row(l, azp), b, bzp);
  if (!acc) return fc_lx_bail(l);
  FcValue *mult = fc_b_binary(l->b, FC_OP_MUL, per_row(l, as), bs);
  mult = fc_b_binary(l->b, FC_OP_DIV, mult, per_row(l, ys));
  l->out[0] = requantize_acc(l, acc, mult, per_row(l, yzp));
  return fc_lx_finish(l);
}

/* ---- integer convolution ------------------------------------------------------------------------- */

typedef struct ConvAttrs {
  int n;                      /* spatial dims */
  int64_t *strides, *dilations, *pads;
  int64_t group;
} ConvAttrs;

/* Resolves ONNX conv attributes for x [N, C, D..] and w [M, C/group, K..] into explicit ones. */
static bool conv_attrs(FcLower *l, const FcType *x, const FcType *w, ConvAttrs *c) {
  if (x->rank < 3 || w->rank != x->rank) {
    fc_lx_error(l, "input (rank %d) and weight (rank %d) must have one rank >= 3", x->rank, w->rank);
    return false;
  }
  int n = c->n = x->rank - 2;
  const int64_t *v;
  int cnt = fc_lx_ints(l, "kernel_shape", &v);
  if (cnt >= 0) {
    bool same = cnt == n;
    for (int i = 0; same && i < n; i++) same = v[i] == w->dims[2 + i];
    if (!same) {
      fc_lx_error(l, "kernel_shape does not match the weight's spatial dims");
      return false;
    }
  }
  static const char *const names[2] = {"strides", "dilations"};
  int64_t **dst[2] = {&c->strides, &c->dilations};
  for (int k = 0; k < 2; k++) {
    *dst[k] = fc_lx_dims(l, n);
    cnt = fc_lx_ints(l, names[k], &v);
    if (cnt >= 0 && cnt != n) {
      fc_lx_error(l, "%s has %d values, expects %d", names[k], cnt, n);
      return false;
    }
    for (int i = 0; i < n; i++) {
      (*dst[k])[i] = cnt >= 0 ? v[i] : 1;
      if ((*dst[k])[i] < 1) {
        fc_lx_error(l, "%s must be positive", names[k]);
        return false;
      }
    }
  }
  c->group = fc_lx_int(l, "group", 1);
  c->pads = fc_lx_dims(l, 2 * n);
  const char *auto_pad = fc_lx_str(l, "auto_pad", "NOTSET");
  if (strcmp(auto_pad, "NOTSET") == 0) {
    cnt = fc_lx_ints(l, "pads", &v);
    if (cnt >= 0 && cnt != 2 * n) {
      fc_lx_error(l, "pads has %d values, expects %d", cnt, 2 * n);
      return false;
    }
    for (int i = 0; i < 2 * n; i++) {
      c->pads[i] = cnt >= 0 ? v[i] : 0;
      if (c->pads[i] < 0) {
        fc_lx_error(l, "pads must be non-negative");
        return false;
      }
    }
  } else if (strcmp(auto_pad, "VALID") == 0) {
    for (int i = 0; i < 2 * n; i++) c->pads[i] = 0;
  } else if (strcmp(auto_pad, "SAME_UPPER") == 0 || strcmp(auto_pad, "SAME_LOWER") == 0) {
    /* out = ceil(in / stride); the padding that makes it: (out-1)*stride + (k-1)*dilation + 1 - in */
    bool upper = auto_pad[5] == 'U';
    for (int i = 0; i < n; i++) {
      int64_t in = x->dims[2 + i], st = c->strides[i], out = in / st + (in % st != 0), span, need, total;
      if (!fc_checked_mul(w->dims[2 + i] > 0 ? w->dims[2 + i] - 1 : 0, c->dilations[i], &span) ||
          !fc_checked_mul(out > 0 ? out - 1 : 0, st, &need) || !fc_checked_add(need, span, &need) ||
          !fc_checked_add(need, 1, &need)) {
        fc_lx_error(l, "convolution window sizes overflow");
        return false;
      }
      total = need > in ? need - in : 0;
      c->pads[i] = upper ? total / 2 : total - total / 2;
      c->pads[n + i] = total - c->pads[i];
    }
  } else {
    fc_lx_error(l, "auto_pad \"%s\" is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", auto_pad);
    return false;
  }
  return true;
}

/* A per-output-channel parameter of length M viewed as [M, 1, .., 1] of rank `rank`. */
static FcValue *per_channel(FcLower *l, FcValue *p, int rank) {
  if (!p || p->type.rank != 1 || p->type.dims[0] == 1) return p;
  int64_t *dims = fc_lx_dims(l, rank);
  dims[0] = p->type.dims[0];
  for (int i = 1; i < rank; i++) dims[i] = 1;
  return fc_b_reshape(l->b, p, rank, dims);
}

static FcValue *conv_op(FcLower *l, FcValue *x, FcValue *w, FcValue *bias, const ConvAttrs *c) {
  FcValue *ops[3] = {x, w, bias};
  FcAttr a[4] = {FC_A_INTS(DILATIONS, c->dilations, c->n), FC_A_INT(GROUP, c->group),
                 FC_A_INTS(PADS, c->pads, 2 * c->n), FC_A_INTS(STRIDES, c->strides, c->n)};
  return fc_b_op1(l->b, FC_OP_CONV, ops, bias ? 3 : 2, a, 4);
}

FcStatus fc_lower_conv_integer(FcLower *l) {
  if (fc_lx_need_inputs(l, 2) != FC_OK) return FC_ERR_INPUT;
  FcValue *x = l->in[0], *w = l->in[1];
  if (!need_int8(l, x, "x") || !need_int8(l, w, "w")) return FC_ERR_INPUT;
  ConvAttrs c;
  if (!conv_attrs(l, &x->type, &w->type, &c)) return fc_lx_bail(l);
  FcValue *xs = shifted(l, x, opt_in(l, 2));
  FcValue *ws = shifted(l, w, per_channel(l, opt_in(l, 3), w->type.rank));
  l->out[0] = conv_op(l, xs, ws, NULL, &c);
  return fc_lx_finish(l);
}

/* QLinearConv as dequantize -> conv -> quantize, like QLinearMatMul's QDQ form: taken when W (and B) are
 * compile-time values, X's and Y's parameters per tensor and W's per tensor or per output channel. B (i32,
 * in units of x_scale * w_scale[m]) becomes dequantize of an i32 type with those scales, which fold_qdq
 * reads back as the same integers. NULL without an error otherwise. */
static FcValue *qlinear_conv_qdq(FcLower *l, const ConvAttrs *c) {
  if (!fc_lx_bind_const_input(l, 3) || (opt_in(l, 8) && !fc_lx_bind_const_input(l, 8))) return NULL;
  FcValue *x = l->in[0], *w = l->in[3], *bias = opt_in(l, 8);
  int64_t M = w->type.dims[0];
  const FcQuant *qx = qlinear_quant(l, 1, 2, x->type.dtype, -1, 0, "x_scale");
  const FcQuant *qw = qx ? qlinear_quant(l, 4, 5, w->type.dtype, 0, M, "w_scale") : NULL;
  const FcQuant *qy = qw ? qlinear_quant(l, 6, 7, l->in[7]->type.dtype, -1, 0, "y_scale") : NULL;
  if (!qy) return NULL;
  FcValue *bd = NULL;
  if (bias) {
    if (bias->type.rank != 1 || bias->type.dims[0] != M) return NULL;
    FcQuant qb = {.storage = FC_DT_I32, .expressed = FC_DT_F32, .qmin = INT32_MIN, .qmax = INT32_MAX,
                  .axis = qw->axis, .n = qw->n};
    double *scales = FC_NEW_ARRAY(fc_lx_arena(l), double, (size_t)qw->n);
    for (int i = 0; i < qw->n; i++) scales[i] = qx->scales[0] * qw->scales[i];
    qb.scales = scales;
    qb.zero_points = FC_NEW_ARRAY(fc_lx_arena(l), int64_t, (size_t)qw->n);
    char why[256];
    if (fc_quant_problem(&qb, NULL, why, sizeof why)) return NULL; /* a product outside f32's range */
    bd = dequantized(l, bias, fc_quant_copy(fc_lx_arena(l), &qb));
  }
  FcValue *y = conv_op(l, dequantized(l, x, qx), dequantized(l, w, qw), bd, c);
  return fc_b_scast(l->b, fc_b_quantize(l->b, y, qy), NULL);
}

FcStatus fc_lower_qlinear_conv(FcLower *l) {
  if (fc_lx_need_inputs(l, 8) != FC_OK) return FC_ERR_INPUT;
  FcValue *x = l->in[0], *xs = l->in[1], *xzp = l->in[2], *w = l->in[3], *ws = l->in[4], *wzp = l->in[5],
          *ys = l->in[6], *yzp = l->in[7], *bias = opt_in(l, 8);
  if (!need_int8(l, x, "x") || !need_int8(l, w, "w") || !need_int8(l, yzp, "y_zero_point")) return FC_ERR_INPUT;
  if (xs->type.dtype != FC_DT_F32 || ws->type.dtype != FC_DT_F32 || ys->type.dtype != FC_DT_F32)
    return fc_lx_error(l, "scales must be float32");
  if (bias && bias->type.dtype != FC_DT_I32) return fc_lx_error(l, "B must be int32");
  ConvAttrs c;
  if (!conv_attrs(l, &x->type, &w->type, &c)) return fc_lx_bail(l);
  if ((l->out[0] = qlinear_conv_qdq(l, &c)) != NULL || l->diag->status) return fc_lx_finish(l);
  /* the inputs the QDQ form bound to their compile-time values */
  xs = l->in[1], xzp = l->in[2], w = l->in[3], ws = l->in[4], wzp = l->in[5], ys = l->in[6], yzp = l->in[7];
  bias = opt_in(l, 8);
  int rank = x->type.rank;
  FcValue *x_shift = shifted(l, x, xzp);
  FcValue *w_shift = shifted(l, w, per_channel(l, wzp, rank));
  FcValue *acc = conv_op(l, x_shift, w_shift, bias, &c);
  /* w_scale is per output channel: dim 1 of the result, so [M, 1, .., 1] of rank - 1 */
  FcValue *mult = fc_b_binary(l->b, FC_OP_MUL, xs, per_channel(l, ws, rank - 1));
  mult = fc_b_binary(l->b, FC_OP_DIV, mult, ys);
  l->out[0] = acc ? requantize_acc(l, acc, mult, yzp) : NULL;
  return fc_lx_finish(l);
}
