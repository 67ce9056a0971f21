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
 * to avoid reading the type of a NULL value (sc() and the explicit checks) and ends in fc_lx_finish.
 */
#include "onnx.h"

#include <math.h>
#include <string.h>

/* A rank-0 constant of `like`'s dtype (NULL after an earlier failure). */
static FcValue *sc(FcLower *l, const FcValue *like, double v) {
  return like ? fc_b_scalar(l->b, like->type.dtype, v) : NULL;
}

/* The status to return after a builder call or an fc_lx_* helper recorded an error. */
static FcStatus bail(const FcLower *l) {
  if (l->b->status != FC_OK) return l->b->status;
  return l->diag->status != FC_OK ? l->diag->status : FC_ERR_INPUT;
}

/* Inputs [0, n) must be present. */
static bool need_inputs(FcLower *l, int n) {
  if (l->n_in < n) {
    fc_lx_error(l, "expects at least %d inputs, has %d", n, l->n_in);
    return false;
  }
  for (int i = 0; i < n; i++)
    if (!l->in[i]) {
      fc_lx_error(l, "input %d is required", i);
      return false;
    }
  return true;
}

/* Scratch dims in the module arena: ranks may exceed FC_DEFAULT_MAX_RANK when the limit is raised. */
static int64_t *new_dims(FcLower *l, int n) { return FC_NEW_ARRAY(&l->b->g->module->arena, int64_t, n > 0 ? n : 1); }

static bool need_float(FcLower *l, const FcValue *x) {
  if (fc_dtype_is_float(x->type.dtype)) return true;
  fc_lx_error(l, "input must have a float type, not %s", fc_dtype_name(x->type.dtype));
  return false;
}

/* ---- one-to-one maps ----------------------------------------------------------------------------- */

typedef struct OpMap {
  const char *onnx;
  FcOpKind kind;
} OpMap;

static const OpMap unary_map[] = {
    {"Abs", FC_OP_ABS},         {"Acos", FC_OP_ACOS},         {"Acosh", FC_OP_ACOSH},   {"Asin", FC_OP_ASIN},
    {"Asinh", FC_OP_ASINH},     {"Atan", FC_OP_ATAN},         {"Atanh", FC_OP_ATANH},   {"BitwiseNot", FC_OP_BITWISE_NOT},
    {"Ceil", FC_OP_CEIL},       {"Cos", FC_OP_COS},           {"Cosh", FC_OP_COSH},     {"Erf", FC_OP_ERF},
    {"Exp", FC_OP_EXP},         {"Floor", FC_OP_FLOOR},       {"IsNaN", FC_OP_ISNAN},   {"Log", FC_OP_LOG},
    {"Neg", FC_OP_NEG},         {"Not", FC_OP_NOT},           {"Reciprocal", FC_OP_RECIPROCAL},
    {"Relu", FC_OP_RELU},       {"Round", FC_OP_ROUND},       {"Sigmoid", FC_OP_SIGMOID}, {"Sign", FC_OP_SIGN},
    {"Sin", FC_OP_SIN},         {"Sinh", FC_OP_SINH},         {"Softplus", FC_OP_SOFTPLUS}, {"Sqrt", FC_OP_SQRT},
    {"Tan", FC_OP_TAN},         {"Tanh", FC_OP_TANH},
};

static const OpMap binary_map[] = {
    {"Add", FC_OP_ADD},         {"And", FC_OP_AND},           {"BitwiseAnd", FC_OP_AND}, {"BitwiseOr", FC_OP_OR},
    {"BitwiseXor", FC_OP_XOR},  {"Div", FC_OP_DIV},           {"Equal", FC_OP_EQUAL},   {"Greater", FC_OP_GREATER},
    {"GreaterOrEqual", FC_OP_GREATER_EQUAL},                  {"Less", FC_OP_LESS},     {"LessOrEqual", FC_OP_LESS_EQUAL},
    {"Mul", FC_OP_MUL},         {"Or", FC_OP_OR},             {"Pow", FC_OP_POW},       {"Sub", FC_OP_SUB},
    {"Xor", FC_OP_XOR},
};

static bool find_op(const OpMap *map, size_t n, const char *name, FcOpKind *out) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(map[i].onnx, name) == 0) {
      *out = map[i].kind;
      return true;
    }
  return false;
}

FcStatus fc_lower_unary(FcLower *l) {
  FcOpKind k;
  if (!find_op(unary_map, sizeof unary_map / sizeof unary_map[0], l->node->op_type, &k))
    return fc_lx_unsupported(l, "no unary lowering for this op type");
  if (!need_inputs(l, 1)) return FC_ERR_INPUT;
  l->out[0] = fc_b_unary(l->b, k, l->in[0]);
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
  int64_t *dims = new_dims(l, r);
  for (int i = 0; i < r; i++) dims[i] = i < rb ? b->type.dims[i] : 1;
  return fc_b_reshape(l->b, b, r, dims);
}

FcStatus fc_lower_binary(FcLower *l) {
  FcOpKind k;
  if (!find_op(binary_map, sizeof binary_map / sizeof binary_map[0], l->node->op_type, &k))
    return fc_lx_unsupported(l, "no binary lowering for this op type");
  if (!need_inputs(l, 2)) return FC_ERR_INPUT;
  FcValue *b = legacy_broadcast(l, l->in[0], l->in[1]);
  if (!b) return bail(l);
  l->out[0] = fc_b_binary(l->b, k, l->in[0], b);
  return fc_lx_finish(l);
}

FcStatus fc_lower_mod(FcLower *l) {
  if (!need_inputs(l, 2)) return FC_ERR_INPUT;
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
  if (!need_inputs(l, 2)) return FC_ERR_INPUT;
  const char *dir = fc_lx_str(l, "direction", "");
  FcOpKind k;
  if (strcmp(dir, "LEFT") == 0) k = FC_OP_BITSHIFT_LEFT;
  else if (strcmp(dir, "RIGHT") == 0) k = FC_OP_BITSHIFT_RIGHT;
  else return fc_lx_error(l, "direction must be \"LEFT\" or \"RIGHT\", is \"%s\"", dir);
  l->out[0] = fc_b_binary(l->b, k, l->in[0], l->in[1]);
  return fc_lx_finish(l);
}

FcStatus fc_lower_isinf(FcLower *l) {
  if (!need_inputs(l, 1)) return FC_ERR_INPUT;
  FcAttr a[2] = {FC_A_INT(DETECT_NEGATIVE, fc_lx_int(l, "detect_negative", 1) != 0),
                 FC_A_INT(DETECT_POSITIVE, fc_lx_int(l, "detect_positive", 1) != 0)};
  l->out[0] = fc_b_op1(l->b, FC_OP_ISINF, &l->in[0], 1, a, 2);
  return fc_lx_finish(l);
}

FcStatus fc_lower_cast(FcLower *l) {
  if (!need_inputs(l, 1)) return FC_ERR_INPUT;
  if (!fc_lx_has_attr(l, "to")) return fc_lx_error(l, "attribute 'to' is required");
  int64_t to = fc_lx_int(l, "to", 0);
  FcDtype dt;
  if (to < INT32_MIN || to > INT32_MAX || !fc_dtype_from_onnx((int)to, &dt))
    return fc_lx_unsupported(l, "cast to ONNX element type %lld is not supported", (long long)to);
  l->out[0] = fc_b_cast(l->b, l->in[0], dt);
  return fc_lx_finish(l);
}

FcStatus fc_lower_cast_like(FcLower *l) {
  if (!need_inputs(l, 2)) return FC_ERR_INPUT;
  l->out[0] = fc_b_cast(l->b, l->in[0], l->in[1]->type.dtype);
  return fc_lx_finish(l);
}

FcStatus fc_lower_where(FcLower *l) {
  if (!need_inputs(l, 3)) return FC_ERR_INPUT;
  l->out[0] = fc_b_select(l->b, l->in[0], l->in[1], l->in[2]);
  return fc_lx_finish(l);
}

/* Clip = min(max(x, lo), hi), as np.clip: when lo > hi every element becomes hi. Bounds are attributes
 * before opset 11 and optional inputs from 11 on; an absent bound is no bound. */
FcStatus fc_lower_clip(FcLower *l) {
  if (!need_inputs(l, 1)) return FC_ERR_INPUT;
  FcValue *x = l->in[0], *lo = NULL, *hi = NULL;
  if (l->opset < 11) {
    if (fc_lx_has_attr(l, "min")) lo = sc(l, x, fc_lx_float(l, "min", 0));
    if (fc_lx_has_attr(l, "max")) hi = sc(l, x, fc_lx_float(l, "max", 0));
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

/* Sum/Mean/Max/Min of N broadcasting inputs: a chain of N-1 binary ops (Mean then divides by N). */
FcStatus fc_lower_variadic(FcLower *l) {
  const char *t = l->node->op_type;
  FcOpKind k;
  if (strcmp(t, "Sum") == 0 || strcmp(t, "Mean") == 0) k = FC_OP_ADD;
  else if (strcmp(t, "Max") == 0) k = FC_OP_MAX;
  else if (strcmp(t, "Min") == 0) k = FC_OP_MIN;
  else return fc_lx_unsupported(l, "no variadic lowering for this op type");
  if (!need_inputs(l, l->n_in > 0 ? l->n_in : 1)) return FC_ERR_INPUT;
  FcValue *y = l->in[0];
  for (int i = 1; i < l->n_in; i++) y = fc_b_binary(l->b, k, y, l->in[i]);
  if (strcmp(t, "Mean") == 0 && l->n_in > 1) {
    if (y && !fc_dtype_is_float(y->type.dtype)) return fc_lx_error(l, "Mean needs float inputs");
    y = fc_b_binary(l->b, FC_OP_DIV, y, sc(l, y, l->n_in));
  }
  l->out[0] = y;
  return fc_lx_finish(l);
}

/* PRelu: select(x < 0, x * slope, x). Before opset 7 a 1-D slope of size C is per channel (dim 1),
 * which NumPy broadcasting would align with the last dim instead. */
FcStatus fc_lower_prelu(FcLower *l) {
  if (!need_inputs(l, 2)) return FC_ERR_INPUT;
  FcValue *x = l->in[0], *slope = l->in[1];
  const FcType *xt = &x->type, *st = &slope->type;
  if (l->opset < 7 && st->rank == 1 && xt->rank >= 2 && st->dims[0] == xt->dims[1] && st->dims[0] != 1) {
    int r = xt->rank - 1;
    int64_t *dims = new_dims(l, r);
    dims[0] = st->dims[0];
    for (int i = 1; i < r; i++) dims[i] = 1;
    slope = fc_b_reshape(l->b, slope, r, dims);
  }
  FcValue *neg = fc_b_binary(l->b, FC_OP_LESS, x, sc(l, x, 0));
  l->out[0] = fc_b_select(l->b, neg, fc_b_binary(l->b, FC_OP_MUL, x, slope), x);
  return fc_lx_finish(l);
}

/* ---- activations ---------------------------------------------------------------------------------- */

static FcValue *add(FcLower *l, FcValue *a, FcValue *b) { return fc_b_binary(l->b, FC_OP_ADD, a, b); }
static FcValue *mul(FcLower *l, FcValue *a, FcValue *b) { return fc_b_binary(l->b, FC_OP_MUL, a, b); }
static FcValue *sub(FcLower *l, FcValue *a, FcValue *b) { return fc_b_binary(l->b, FC_OP_SUB, a, b); }

/* max(0, min(1, alpha * x + beta)) */
static FcValue *hard_sigmoid(FcLower *l, FcValue *x, double alpha, double beta) {
  FcValue *y = mul(l, x, sc(l, x, alpha));
  y = add(l, y, sc(l, x, beta));
  y = fc_b_binary(l->b, FC_OP_MIN, y, sc(l, x, 1));
  return fc_b_binary(l->b, FC_OP_MAX, y, sc(l, x, 0));
}

/* Shrink accepts integer inputs; its reference computes x +/- bias and the comparisons with lambd in
 * double and converts back (truncating), so integers go through f64 to match it exactly. */
static FcValue *shrink(FcLower *l, FcValue *x) {
  double bias = fc_lx_float(l, "bias", 0), lambd = fc_lx_float(l, "lambd", 0.5f);
  FcDtype dt = x->type.dtype;
  FcValue *v = fc_dtype_is_float(dt) ? x : fc_b_cast(l->b, x, FC_DT_F64);
  FcValue *lo = fc_b_binary(l->b, FC_OP_LESS, v, sc(l, v, -lambd));
  FcValue *hi = fc_b_binary(l->b, FC_OP_GREATER, v, sc(l, v, lambd));
  FcValue *zero = sc(l, v, 0);
  FcValue *y = fc_b_select(l->b, hi, sub(l, v, sc(l, v, bias)), zero);
  y = fc_b_select(l->b, lo, add(l, v, sc(l, v, bias)), y);
  return v == x ? y : fc_b_cast(l->b, y, dt);
}

FcStatus fc_lower_activation(FcLower *l) {
  if (!need_inputs(l, 1)) return FC_ERR_INPUT;
  const char *t = l->node->op_type;
  FcValue *x = l->in[0], *y;
  if (strcmp(t, "Shrink") == 0) {
    if (x->type.dtype == FC_DT_BOOL) return fc_lx_error(l, "input must be numeric, not bool");
    l->out[0] = shrink(l, x);
    return fc_lx_finish(l);
  }
  if (!need_float(l, x)) return FC_ERR_INPUT;
  if (strcmp(t, "Celu") == 0) {
    /* max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) */
    double alpha = fc_lx_float(l, "alpha", 1);
    if (alpha == 0) return fc_lx_error(l, "alpha must not be 0");
    FcValue *zero = sc(l, x, 0);
    FcValue *e = fc_b_unary(l->b, FC_OP_EXP, fc_b_binary(l->b, FC_OP_DIV, x, sc(l, x, alpha)));
    FcValue *em1 = sub(l, e, sc(l, x, 1));
    FcValue *neg = fc_b_binary(l->b, FC_OP_MIN, zero, mul(l, em1, sc(l, x, alpha)));
    y = add(l, fc_b_binary(l->b, FC_OP_MAX, zero, x), neg);
  } else if (strcmp(t, "Elu") == 0) {
    /* x < 0 ? alpha * (exp(x) - 1) : x */
    FcValue *e = fc_b_unary(l->b, FC_OP_EXP, x);
    e = sub(l, e, sc(l, x, 1));
    e = mul(l, e, sc(l, x, fc_lx_float(l, "alpha", 1)));
    FcValue *zero = sc(l, x, 0);
    y = fc_b_select(l->b, fc_b_binary(l->b, FC_OP_LESS, x, zero), e, x);
  } else if (strcmp(t, "Gelu") == 0) {
    const char *approx = fc_lx_str(l, "approximate", "none");
    FcValue *inner;
    if (strcmp(approx, "none") == 0) {
      /* 1 + erf(x / sqrt(2)) */
      inner = fc_b_unary(l->b, FC_OP_ERF, mul(l, x, sc(l, x, 1 / sqrt(2.0))));
    } else if (strcmp(approx, "tanh") == 0) {
      /* 1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)) */
      FcValue *x3 = mul(l, mul(l, x, x), x);
      FcValue *p = add(l, x, mul(l, x3, sc(l, x, 0.044715)));
      inner = fc_b_unary(l->b, FC_OP_TANH, mul(l, p, sc(l, x, sqrt(2.0 / 3.14159265358979323846))));
    } else {
      return fc_lx_error(l, "approximate must be \"none\" or \"tanh\", is \"%s\"", approx);
    }
    FcValue *half_x = mul(l, x, sc(l, x, 0.5));
    y = mul(l, half_x, add(l, inner, sc(l, x, 1)));
  } else if (strcmp(t, "HardSigmoid") == 0) {
    y = hard_sigmoid(l, x, fc_lx_float(l, "alpha", 0.2f), fc_lx_float(l, "beta", 0.5f));
  } else if (strcmp(t, "HardSwish") == 0) {
    y = mul(l, x, hard_sigmoid(l, x, 1.0 / 6.0, 0.5));
  } else if (strcmp(t, "LeakyRelu") == 0) {
    FcValue *zero = sc(l, x, 0);
    FcValue *neg = fc_b_binary(l->b, FC_OP_LESS, x, zero);
    y = fc_b_select(l->b, neg, mul(l, x, sc(l, x, fc_lx_float(l, "alpha", 0.01f))), x);
  } else if (strcmp(t, "Mish") == 0) {
    y = mul(l, x, fc_b_unary(l->b, FC_OP_TANH, fc_b_unary(l->b, FC_OP_SOFTPLUS, x)));
  } else if (strcmp(t, "Selu") == 0) {
    /* x > 0 ? gamma * x : gamma * (alpha * exp(x) - alpha) */
    double alpha = fc_lx_float(l, "alpha", 1.67326319217681884765625f);
    double gamma = fc_lx_float(l, "gamma", 1.05070102214813232421875f);
    FcValue *e = fc_b_unary(l->b, FC_OP_EXP, x);
    e = mul(l, e, sc(l, x, alpha));
    e = sub(l, e, sc(l, x, alpha));
    FcValue *zero = sc(l, x, 0);
    FcValue *pos = fc_b_binary(l->b, FC_OP_GREATER, x, zero);
    y = fc_b_select(l->b, pos, x, e);
    y = mul(l, y, sc(l, x, gamma));
  } else if (strcmp(t, "Softsign") == 0) {
    FcValue *den = fc_b_unary(l->b, FC_OP_ABS, x);
    den = add(l, den, sc(l, x, 1));
    y = fc_b_binary(l->b, FC_OP_DIV, x, den);
  } else if (strcmp(t, "ThresholdedRelu") == 0) {
    FcValue *gt = fc_b_binary(l->b, FC_OP_GREATER, x, sc(l, x, fc_lx_float(l, "alpha", 1)));
    y = fc_b_select(l->b, gt, x, sc(l, x, 0));
  } else {
    return fc_lx_unsupported(l, "no activation lowering for this op type");
  }
  l->out[0] = y;
  return fc_lx_finish(l);
}
