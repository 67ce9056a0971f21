/* lower_elementwise.c — legalisers of ONNX's element-wise ops: unary math, binary arithmetic, logic,
 * comparisons, casts, Clip, the variadic Sum/Mean/Max/Min, Where, and the activation functions.
 *
 * Ops with a core twin map one to one through two small tables (ONNX op type → core op). Everything
 * else is decomposed into core ops, TOSA-style, with scalar constants made in the operand's dtype so
 * the arithmetic stays in that dtype: LeakyRelu is select(x < 0, x * alpha, x), HardSigmoid is
 * max(0, min(1, alpha * x + beta)), and so on; each decomposition follows the formula of the ONNX spec
 * (or its reference implementation where the two differ in corner cases).
 *
 * Opsets 7..17 share these semantics, with three older forms still seen in exported models: opset < 7
 * binary ops with `broadcast`/`axis` (B aligned at `axis` of A), Clip < 11 with min/max attributes, and
 * PRelu < 7 with a per-channel slope of shape [C].
 *
 * The builder is sticky: after a failed call every later call returns NULL, so code below only needs
 * to avoid reading the type of a NULL value (fc_lx_scalar() and the explicit checks) and ends in fc_lx_finish.
 */
#include "onnx.h"

#include <math.h>
#include <string.h>

/* ---- one-to-one ops -------------------------------------------------------------------------------- */

/* The core op is the table row's (onnx_ops.def). */
FcStatus fc_lower_unary(FcLower *l) {
  if (fc_lx_need_inputs(l, 1) != FC_OK) return FC_ERR_INPUT;
  l->out[0] = fc_b_unary(l->b, (FcOpKind)l->arg, l->in[0]);
  return fc_lx_finish(l);
}

/* Opset < 7 binary ops broadcast only when `broadcast` is 1, aligning B's dims with A's starting at
 * `axis` (default: B's dims are A's trailing ones). Reshaping B with trailing ones turns that into
 * NumPy broadcasting. */
static FcValue *legacy_broadcast(FcLower *l, FcValue *a, FcValue *b) {
  if (l->opset >= 7 || fc_lx_int(l, "broadcast", 0) == 0 || !fc_lx_has_attr(l, "axis")) return b;
  int ra = a->type.rank, rb = b->type.rank;
  int64_t axis;
  if (!fc_lx_axis(l, fc_lx_int(l, "axis", 0), ra > 0 ? ra : 1, &axis)) return NULL;
  if (axis + rb > ra) {
    fc_lx_error(l, "legacy broadcast of rank %d at axis %lld does not fit rank %d", rb, (long long)axis, ra);
    return NULL;
  }
  int r = ra - (int)axis;
  if (r == rb) return b;
  int64_t *dims = fc_lx_dims(l, r);
  for (int i = 0; i < r; i++) dims[i] = i < rb ? b->type.dims[i] : 1;
  return fc_b_reshape(l->b, b, r, dims);
}

FcStatus fc_lower_binary(FcLower *l) {
  FcOpKind k = (FcOpKind)l->arg;
  if (fc_lx_need_inputs(l, 2) != FC_OK) return FC_ERR_INPUT;
  FcValue *b = legacy_broadcast(l, l->in[0], l->in[1]);
  if (!b) return fc_lx_bail(l);
  l->out[0] = fc_b_binary(l->b, k, l->in[0], b);
  return fc_lx_finish(l);
}

FcStatus fc_lower_mod(FcLower *l) {
  if (fc_lx_need_inputs(l, 2) != FC_OK) return FC_ERR_INPUT;
  int64_t fmod = fc_lx_int(l, "fmod", 0);
  if (fmod != 0 && fmod != 1) return fc_lx_error(l, "fmod must be 0 or 1, is %lld", (long long)fmod);
  if (fmod == 0 && fc_dtype_is_float(l->in[0]->type.dtype))
    return fc_lx_error(l, "fmod must be 1 for float inputs");
  FcValue *ops[2] = {l->in[0], l->in[1]};
  FcAttr a = FC_A_INT(FMOD, fmod);
  l->out[0] = fc_b_op1(l->b, FC_OP_MOD, ops, 2, &a, 1);
  return fc_lx_finish(l);
}

FcStatus fc_lower_bitshift(FcLower *l) {
  if (fc_lx_need_inputs(l, 2) != FC_OK) return FC_ERR_INPUT;
  const char *dir = fc_lx_str(l, "direction", "");
  FcOpKind k;
  if (strcmp(dir, "LEFT") == 0) k = FC_OP_BITSHIFT_LEFT;
  else if (strcmp(dir, "RIGHT") == 0) k = FC_OP_BITSHIFT_RIGHT;
  else return fc_lx_error(l, "direction must be \"LEFT\" or \"RIGHT\", is \"%s\"", dir);
  l->out[0] = fc_b_binary(l->b, k, l->in[0], l->in[1]);
  return fc_lx_finish(l);
}

FcStatus fc_lower_isinf(FcLower *l) {
  if (fc_lx_need_inputs(l, 1) != FC_OK) return FC_ERR_INPUT;
  FcAttr a[2] = {FC_A_INT(DETECT_NEGATIVE, fc_lx_int(l, "detect_negative", 1) != 0),
                 FC_A_INT(DETECT_POSITIVE, fc_lx_int(l, "detect_positive", 1) != 0)};
  l->out[0] = fc_b_op1(l->b, FC_OP_ISINF, &l->in[0], 1, a, 2);
  return fc_lx_finish(l);
}

/* Cast and CastLike. Opset 19's saturate attribute only concerns float8 results, and float8 (19) and
 * 4-bit (21) element types have no flowc dtype, so those casts are refused as unsupported. */
FcStatus fc_lower_cast(FcLower *l) {
  if (fc_lx_need_inputs(l, 1) != FC_OK) return FC_ERR_INPUT;
  if (!fc_lx_has_attr(l, "to")) return fc_lx_error(l, "attribute 'to' is required");
  int64_t to = fc_lx_int(l, "to", 0);
  FcDtype dt;
  if (to < INT32_MIN || to > INT32_MAX || !fc_dtype_from_onnx((int)to, &dt))
    return fc_lx_unsupported(l, "cast to ONNX element type %lld is not supported", (long long)to);
  l->out[0] = fc_b_cast(l->b, l->in[0], dt);
  return fc_lx_finish(l);
}

FcStatus fc_lower_cast_like(FcLower *l) {
  if (fc_lx_need_inputs(l, 2) != FC_OK) return FC_ERR_INPUT;
  l->out[0] = fc_b_cast(l->b, l->in[0], l->in[1]->type.dtype);
  return fc_lx_finish(l);
}

FcStatus fc_lower_where(FcLower *l) {
  if (fc_lx_need_inputs(l, 3) != FC_OK) return FC_ERR_INPUT;
  l->out[0] = fc_b_select(l->b, l->in[0], l->in[1], l->in[2]);
  return fc_lx_finish(l);
}

/* Clip = min(max(x, lo), hi), as np.clip: when lo > hi every element becomes hi. Bounds are attributes
 * before opset 11 and optional inputs from 11 on; an absent bound is no bound. */
FcStatus fc_lower_clip(FcLower *l) {
  if (fc_lx_need_inputs(l, 1) != FC_OK) return FC_ERR_INPUT;
  FcValue *x = l->in[0], *lo = NULL, *hi = NULL;
  if (l->opset < 11) {
    if (fc_lx_has_attr(l, "min")) lo = fc_lx_scalar(l, x, fc_lx_float(l, "min", 0));
    if (fc_lx_has_attr(l, "max")) hi = fc_lx_scalar(l, x, fc_lx_float(l, "max", 0));
  } else {
    lo = l->n_in > 1 ? l->in[1] : NULL;
    hi = l->n_in > 2 ? l->in[2] : NULL;
  }
  FcValue *y = x;
  if (lo) y = fc_b_binary(l->b, FC_OP_MAX, y, lo);
  if (hi) y = fc_b_binary(l->b, FC_OP_MIN, y, hi);
  l->out[0] = y;
  return fc_lx_finish(l);
}

/* Sum/Max/Min of N broadcasting inputs: a chain of N-1 binary ops of the row's core op (NULL after an
 * error). */
static FcValue *variadic_chain(FcLower *l, FcOpKind k) {
  if (fc_lx_need_inputs(l, l->n_in > 0 ? l->n_in : 1) != FC_OK) return NULL;
  FcValue *y = l->in[0];
  for (int i = 1; i < l->n_in; i++) y = fc_b_binary(l->b, k, y, l->in[i]);
  return y;
}

FcStatus fc_lower_variadic(FcLower *l) {
  if (!(l->out[0] = variadic_chain(l, (FcOpKind)l->arg))) return fc_lx_bail(l);
  return fc_lx_finish(l);
}

/* Mean: the sum, divided by N. */
FcStatus fc_lower_mean(FcLower *l) {
  FcValue *y = variadic_chain(l, FC_OP_ADD);
  if (!y) return fc_lx_bail(l);
  if (l->n_in > 1) {
    if (!fc_dtype_is_float(y->type.dtype)) return fc_lx_error(l, "Mean needs float inputs");
    y = fc_b_binary(l->b, FC_OP_DIV, y, fc_lx_scalar(l, y, l->n_in));
  }
  l->out[0] = y;
  return fc_lx_finish(l);
}

/* PRelu: select(x < 0, x * slope, x). Before opset 7 a 1-D slope of size C is per channel (dim 1),
 * which NumPy broadcasting would align with the last dim instead. */
FcStatus fc_lower_prelu(FcLower *l) {
  if (fc_lx_need_inputs(l, 2) != FC_OK) return FC_ERR_INPUT;
  FcValue *x = l->in[0], *slope = l->in[1];
  const FcType *xt = &x->type, *st = &slope->type;
  if (l->opset < 7 && st->rank == 1 && xt->rank >= 2 && st->dims[0] == xt->dims[1] && st->dims[0] != 1) {
    int r = xt->rank - 1;
    int64_t *dims = fc_lx_dims(l, r);
    dims[0] = st->dims[0];
    for (int i = 1; i < r; i++) dims[i] = 1;
    slope = fc_b_reshape(l->b, slope, r, dims);
  }
  FcValue *neg = fc_b_binary(l->b, FC_OP_LESS, x, fc_lx_scalar(l, x, 0));
  l->out[0] = fc_b_select(l->b, neg, fc_b_binary(l->b, FC_OP_MUL, x, slope), x);
  return fc_lx_finish(l);
}

/* ---- activations ---------------------------------------------------------------------------------- */


/* max(0, min(1, alpha * x + beta)) */
static FcValue *hard_sigmoid(FcLower *l, FcValue *x, double alpha, double beta) {
  FcValue *y = fc_lx_mul(l, x, fc_lx_scalar(l, x, alpha));
  y = fc_lx_add(l, y, fc_lx_scalar(l, x, beta));
  y = fc_b_binary(l->b, FC_OP_MIN, y, fc_lx_scalar(l, x, 1));
  return fc_b_binary(l->b, FC_OP_MAX, y, fc_lx_scalar(l, x, 0));
}

/* Shrink accepts integer inputs; its reference computes x +/- bias and the comparisons with lambd in
 * double and converts back (truncating), so integers go through f64 to match it exactly. */
static FcValue *shrink(FcLower *l, FcValue *x) {
  double bias = fc_lx_float(l, "bias", 0), lambd = fc_lx_float(l, "lambd", 0.5f);
  FcDtype dt = x->type.dtype;
  FcValue *v = fc_dtype_is_float(dt) ? x : fc_b_cast(l->b, x, FC_DT_F64);
  FcValue *lo = fc_b_binary(l->b, FC_OP_LESS, v, fc_lx_scalar(l, v, -lambd));
  FcValue *hi = fc_b_binary(l->b, FC_OP_GREATER, v, fc_lx_scalar(l, v, lambd));
  FcValue *zero = fc_lx_scalar(l, v, 0);
  FcValue *y = fc_b_select(l->b, hi, fc_lx_sub(l, v, fc_lx_scalar(l, v, bias)), zero);
  y = fc_b_select(l->b, lo, fc_lx_add(l, v, fc_lx_scalar(l, v, bias)), y);
  return v == x ? y : fc_b_cast(l->b, y, dt);
}

/* The activation is the table row's FcLxActivation. */
FcStatus fc_lower_activation(FcLower *l) {
  if (fc_lx_need_inputs(l, 1) != FC_OK) return FC_ERR_INPUT;
  FcValue *x = l->in[0], *y;
  if (l->arg == FC_LX_ACT_SHRINK) {
    if (x->type.dtype == FC_DT_BOOL) return fc_lx_error(l, "input must be numeric, not bool");
    l->out[0] = shrink(l, x);
    return fc_lx_finish(l);
  }
  if (!fc_lx_need_float(l, x)) return FC_ERR_INPUT;
  switch ((FcLxActivation)l->arg) {
  case FC_LX_ACT_CELU: {
    /* max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) */
    double alpha = fc_lx_float(l, "alpha", 1);
    if (alpha == 0) return fc_lx_error(l, "alpha must not be 0");
    FcValue *zero = fc_lx_scalar(l, x, 0);
    FcValue *e = fc_b_unary(l->b, FC_OP_EXP, fc_b_binary(l->b, FC_OP_DIV, x, fc_lx_scalar(l, x, alpha)));
    FcValue *em1 = fc_lx_sub(l, e, fc_lx_scalar(l, x, 1));
    FcValue *neg = fc_b_binary(l->b, FC_OP_MIN, zero, fc_lx_mul(l, em1, fc_lx_scalar(l, x, alpha)));
    y = fc_lx_add(l, fc_b_binary(l->b, FC_OP_MAX, zero, x), neg);
    break;
  }
  case FC_LX_ACT_ELU: {
    /* x < 0 ? alpha * (exp(x) - 1) : x */
    FcValue *e = fc_b_unary(l->b, FC_OP_EXP, x);
    e = fc_lx_sub(l, e, fc_lx_scalar(l, x, 1));
    e = fc_lx_mul(l, e, fc_lx_scalar(l, x, fc_lx_float(l, "alpha", 1)));
    FcValue *zero = fc_lx_scalar(l, x, 0);
    y = fc_b_select(l->b, fc_b_binary(l->b, FC_OP_LESS, x, zero), e, x);
    break;
  }
  case FC_LX_ACT_GELU: {
    const char *approx = fc_lx_str(l, "approximate", "none");
    FcValue *inner;
    if (strcmp(approx, "none") == 0) {
      /* 1 + erf(x / sqrt(2)) */
      inner = fc_b_unary(l->b, FC_OP_ERF, fc_lx_mul(l, x, fc_lx_scalar(l, x, 1 / sqrt(2.0))));
    } else if (strcmp(approx, "tanh") == 0) {
      /* 1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)) */
      FcValue *x3 = fc_lx_mul(l, fc_lx_mul(l, x, x), x);
      FcValue *p = fc_lx_add(l, x, fc_lx_mul(l, x3, fc_lx_scalar(l, x, 0.044715)));
      inner = fc_b_unary(l->b, FC_OP_TANH, fc_lx_mul(l, p, fc_lx_scalar(l, x, sqrt(2.0 / 3.14159265358979323846))));
    } else {
      return fc_lx_error(l, "approximate must be \"none\" or \"tanh\", is \"%s\"", approx);
    }
    FcValue *half_x = fc_lx_mul(l, x, fc_lx_scalar(l, x, 0.5));
    y = fc_lx_mul(l, half_x, fc_lx_add(l, inner, fc_lx_scalar(l, x, 1)));
    break;
  }
  case FC_LX_ACT_HARD_SIGMOID: {
    y = hard_sigmoid(l, x, fc_lx_float(l, "alpha", 0.2f), fc_lx_float(l, "beta", 0.5f));
    break;
  }
  case FC_LX_ACT_HARD_SWISH: {
    y = fc_lx_mul(l, x, hard_sigmoid(l, x, 1.0 / 6.0, 0.5));
    break;
  }
  case FC_LX_ACT_LEAKY_RELU: {
    FcValue *zero = fc_lx_scalar(l, x, 0);
    FcValue *neg = fc_b_binary(l->b, FC_OP_LESS, x, zero);
    y = fc_b_select(l->b, neg, fc_lx_mul(l, x, fc_lx_scalar(l, x, fc_lx_float(l, "alpha", 0.01f))), x);
    break;
  }
  case FC_LX_ACT_MISH: {
    y = fc_lx_mul(l, x, fc_b_unary(l->b, FC_OP_TANH, fc_b_unary(l->b, FC_OP_SOFTPLUS, x)));
    break;
  }
  case FC_LX_ACT_SELU: {
    /* x > 0 ? gamma * x : gamma * (alpha * exp(x) - alpha) */
    double alpha = fc_lx_float(l, "alpha", 1.67326319217681884765625f);
    double gamma = fc_lx_float(l, "gamma", 1.05070102214813232421875f);
    FcValue *e = fc_b_unary(l->b, FC_OP_EXP, x);
    e = fc_lx_mul(l, e, fc_lx_scalar(l, x, alpha));
    e = fc_lx_sub(l, e, fc_lx_scalar(l, x, alpha));
    FcValue *zero = fc_lx_scalar(l, x, 0);
    FcValue *pos = fc_b_binary(l->b, FC_OP_GREATER, x, zero);
    y = fc_b_select(l->b, pos, x, e);
    y = fc_lx_mul(l, y, fc_lx_scalar(l, x, gamma));
    break;
  }
  case FC_LX_ACT_SOFTSIGN: {
    FcValue *den = fc_b_unary(l->b, FC_OP_ABS, x);
    den = fc_lx_add(l, den, fc_lx_scalar(l, x, 1));
    y = fc_b_binary(l->b, FC_OP_DIV, x, den);
    break;
  }
  case FC_LX_ACT_THRESHOLDED_RELU: {
    FcValue *gt = fc_b_binary(l->b, FC_OP_GREATER, x, fc_lx_scalar(l, x, fc_lx_float(l, "alpha", 1)));
    y = fc_b_select(l->b, gt, x, fc_lx_scalar(l, x, 0));
    break;
  }
  default: return fc_lx_unsupported(l, "no activation lowering for this op type");
  }
  l->out[0] = y;
  return fc_lx_finish(l);
}
