/* eval_elementwise.c — reference evaluators of the element-wise ops: unary maths, cast, binary
 * arithmetic/bitwise/comparison ops with broadcasting, and select; plus the helpers of eval_ew.h.
 *
 * Each element is loaded into its dtype's domain (double, int64 or uint64), computed there and stored
 * once. Integer arithmetic wraps (computed in uint64_t, truncated to the width on store) so that signed
 * overflow never reaches C's undefined behaviour; integer division or modulo by zero and negative
 * integer exponents are declined with FC_ERR_UNSUPPORTED, which leaves the op unfolded. Float results
 * follow IEEE (x/0 is inf, NaN propagates through max/min as in NumPy); f32 maths in double rounds to
 * the same result as f32 maths for + - * / and sqrt, and to a result at least as accurate elsewhere.
 */
#include "eval_ew.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- shared helpers (eval_ew.h) ------------------------------------------------------------------ */

FcEeDomain fc_ee_domain(FcDtype dt) {
  switch (fc_dtype_class(dt)) {
  case FC_DTC_FLOAT: return FC_EE_FLOAT;
  case FC_DTC_SINT: return FC_EE_SINT;
  default: return FC_EE_UINT;
  }
}

FcStatus fc_ee_fail(const FcOp *op, FcDiag *diag, FcStatus st, const char *fmt, ...) {
  char msg[sizeof diag->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fc_error(diag, st, "%s: %s", fc_op_info(op->kind)->name, msg);
}

/* double -> f32 rounding to odd: rounding that result once more to f16/bf16 (fewer than 23 bits)
 * gives the correctly rounded value, where a plain (float) cast could round twice. */
static float round_to_odd_f32(double d) {
  float f = (float)d;
  if (d != d || (double)f == d) return f;
  if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f);
  uint32_t bits;
  memcpy(&bits, &f, 4);
  bits |= 1;
  memcpy(&f, &bits, 4);
  return f;
}

void fc_ee_setf(FcTensor *t, int64_t i, double v) {
  unsigned char *p = (unsigned char *)t->data + (size_t)i * fc_dtype_size(t->type.dtype);
  uint16_t h;
  switch (t->type.dtype) {
  case FC_DT_F16: h = fc_f32_to_f16(round_to_odd_f32(v)); memcpy(p, &h, 2); return;
  case FC_DT_BF16: h = fc_f32_to_bf16(round_to_odd_f32(v)); memcpy(p, &h, 2); return;
  default: fc_tensor_set_f64(t, i, v); return;
  }
}

int64_t fc_ee_numel(const FcType *t) {
  int64_t n;
  FC_ASSERT(fc_type_numel(t, &n));
  return n;
}

void fc_ee_bcast_init(FcEeBcast *it, FcArena *arena, const FcType *out, const FcType *const *ins, int n) {
  FC_ASSERT(n >= 1 && n <= FC_EE_MAX_BCAST);
  int r = out->rank;
  it->rank = r;
  it->n = n;
  it->dims = out->dims;
  it->ctr = FC_NEW_ARRAY(arena, int64_t, (size_t)(r > 0 ? r : 1));
  for (int k = 0; k < n; k++) {
    const FcType *t = ins[k];
    FC_ASSERT(t->rank <= r);
    int64_t *st = FC_NEW_ARRAY(arena, int64_t, (size_t)(r > 0 ? r : 1));
    for (int a = t->rank - 1; a >= 0; a--) {
      int oa = a + (r - t->rank);
      FC_ASSERT(t->dims[a] == out->dims[oa] || t->dims[a] == 1);
      st[oa] = t->dims[a] == 1 ? 0 : fc_ee_prod(t->dims + a + 1, t->rank - a - 1);
    }
    it->strides[k] = st;
    it->off[k] = 0;
  }
}

void fc_ee_bcast_next(FcEeBcast *it) {
  for (int a = it->rank - 1; a >= 0; a--) {
    it->ctr[a]++;
    for (int k = 0; k < it->n; k++) it->off[k] += it->strides[k][a];
    if (it->ctr[a] < it->dims[a]) return;
    for (int k = 0; k < it->n; k++) it->off[k] -= it->strides[k][a] * it->dims[a];
    it->ctr[a] = 0;
  }
}

int64_t fc_ee_prod(const int64_t *dims, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; i++)
    if (dims[i] == 0) return 0;
  for (int i = 0; i < n; i++)
    if (__builtin_mul_overflow(p, dims[i], &p)) return INT64_MAX;
  return p;
}

FcEeAxis fc_ee_axis_split(const FcType *t, int axis) {
  FcEeAxis s = {fc_ee_prod(t->dims, axis), t->dims[axis], fc_ee_prod(t->dims + axis + 1, t->rank - axis - 1)};
  return s;
}

/* ---- unary ---------------------------------------------------------------------------------------- */

static double round_half_even(double x) {
  if (!isfinite(x)) return x;
  double r = floor(x), d = x - r; /* exact for every double */
  if (d > 0.5 || (d == 0.5 && fmod(r, 2.0) != 0)) r += 1;
  return r == 0 ? copysign(0.0, x) : r;
}

static double unary_f(FcOpKind k, double x) {
  switch (k) {
  case FC_OP_NEG: return -x;
  case FC_OP_ABS: return fabs(x);
  case FC_OP_SIGN: return x > 0 ? 1.0 : x < 0 ? -1.0 : x; /* keeps NaN and the sign of 0 */
  case FC_OP_CEIL: return ceil(x);
  case FC_OP_FLOOR: return floor(x);
  case FC_OP_ROUND: return round_half_even(x);
  case FC_OP_SQRT: return sqrt(x);
  case FC_OP_RECIPROCAL: return 1.0 / x;
  case FC_OP_EXP: return exp(x);
  case FC_OP_LOG: return log(x);
  case FC_OP_SIN: return sin(x);
  case FC_OP_COS: return cos(x);
  case FC_OP_TAN: return tan(x);
  case FC_OP_ASIN: return asin(x);
  case FC_OP_ACOS: return acos(x);
  case FC_OP_ATAN: return atan(x);
  case FC_OP_SINH: return sinh(x);
  case FC_OP_COSH: return cosh(x);
  case FC_OP_TANH: return tanh(x);
  case FC_OP_ASINH: return asinh(x);
  case FC_OP_ACOSH: return acosh(x);
  case FC_OP_ATANH: return atanh(x);
  case FC_OP_ERF: return erf(x);
  /* Both forms avoid exp overflow on the side where it would lose the result. */
  case FC_OP_SIGMOID: return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
  case FC_OP_SOFTPLUS: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
  case FC_OP_RELU: return x < 0 ? 0.0 : x; /* NaN stays NaN, as max(NaN, 0) in NumPy */
  default: FC_UNREACHABLE();
  }
}

static uint64_t unary_i(FcOpKind k, uint64_t x, bool sint) {
  bool neg = sint && (int64_t)x < 0;
  switch (k) {
  case FC_OP_NEG: return 0 - x;
  case FC_OP_ABS: return neg ? 0 - x : x;
  case FC_OP_SIGN: return neg ? UINT64_MAX : x != 0;
  case FC_OP_RELU: return neg ? 0 : x;
  case FC_OP_BITWISE_NOT: return ~x;
  case FC_OP_NOT: return x == 0;
  default: FC_UNREACHABLE();
  }
}

FcStatus fc_eval_unary(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  const FcTensor *x = in[0];
  FcTensor *y = fc_tensor_new(arena, op->results[0].type);
  int64_t n = fc_ee_numel(&x->type);
  FcEeDomain dom = fc_ee_domain(x->type.dtype);
  switch (op->kind) {
  case FC_OP_ISNAN:
    for (int64_t i = 0; i < n; i++) fc_ee_setu(y, i, isnan(fc_ee_getf(x, i)));
    break;
  case FC_OP_ISINF: {
    bool neg = fc_op_attr_int(op, FC_ATTR_DETECT_NEGATIVE, 1) != 0, pos = fc_op_attr_int(op, FC_ATTR_DETECT_POSITIVE, 1) != 0;
    for (int64_t i = 0; i < n; i++) {
      double v = fc_ee_getf(x, i);
      fc_ee_setu(y, i, isinf(v) && (v > 0 ? pos : neg));
    }
    break;
  }
  default:
    if (dom == FC_EE_FLOAT) {
      if (op->kind == FC_OP_NOT || op->kind == FC_OP_BITWISE_NOT)
        return fc_ee_fail(op, diag, FC_ERR_UNSUPPORTED, "not defined on %s", fc_dtype_name(x->type.dtype));
      for (int64_t i = 0; i < n; i++) fc_ee_setf(y, i, unary_f(op->kind, fc_ee_getf(x, i)));
    } else {
      switch (op->kind) {
      case FC_OP_NEG: case FC_OP_ABS: case FC_OP_SIGN: case FC_OP_RELU: case FC_OP_BITWISE_NOT: case FC_OP_NOT: break;
      default: return fc_ee_fail(op, diag, FC_ERR_UNSUPPORTED, "not defined on %s", fc_dtype_name(x->type.dtype));
      }
      for (int64_t i = 0; i < n; i++) fc_ee_setu(y, i, unary_i(op->kind, fc_ee_getu(x, i), dom == FC_EE_SINT));
    }
  }
  out[0] = y;
  return FC_OK;
}

/* ---- cast ----------------------------------------------------------------------------------------- */

/* An integer to a float dtype with one rounding: f32 and f64 convert directly from the integer. */
static void store_int_as_float(FcTensor *y, int64_t i, uint64_t v, bool sint) {
  unsigned char *p = (unsigned char *)y->data + (size_t)i * fc_dtype_size(y->type.dtype);
  if (y->type.dtype == FC_DT_F32) {
    float f = sint ? (float)(int64_t)v : (float)v;
    memcpy(p, &f, 4);
  } else if (y->type.dtype == FC_DT_F64) {
    double d = sint ? (double)(int64_t)v : (double)v;
    memcpy(p, &d, 8);
  } else {
    fc_ee_setf(y, i, sint ? (double)(int64_t)v : (double)v);
  }
}

FcStatus fc_eval_cast(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  const FcTensor *x = in[0];
  FcTensor *y = fc_tensor_new(arena, op->results[0].type);
  int64_t n = fc_ee_numel(&x->type);
  FcDtype dst = y->type.dtype;
  FcEeDomain sd = fc_ee_domain(x->type.dtype);
  for (int64_t i = 0; i < n; i++) {
    if (dst == FC_DT_BOOL) {
      fc_ee_setu(y, i, sd == FC_EE_FLOAT ? fc_ee_getf(x, i) != 0 : fc_ee_getu(x, i) != 0);
    } else if (fc_dtype_is_float(dst)) {
      if (sd == FC_EE_FLOAT) fc_ee_setf(y, i, fc_ee_getf(x, i));
      else store_int_as_float(y, i, fc_ee_getu(x, i), sd == FC_EE_SINT);
    } else {
      /* Float to integer truncates toward zero; out-of-range values saturate (ONNX leaves them
       * undefined) and NaN gives 0. Integer to integer keeps the low bits. */
      if (sd == FC_EE_FLOAT) fc_tensor_set_f64(y, i, trunc(fc_ee_getf(x, i)));
      else fc_ee_setu(y, i, fc_ee_getu(x, i));
    }
  }
  out[0] = y;
  return FC_OK;
}

/* ---- binary --------------------------------------------------------------------------------------- */

static double binary_f(FcOpKind k, bool fmod_flag, double a, double b) {
  switch (k) {
  case FC_OP_ADD: return a + b;
  case FC_OP_SUB: return a - b;
  case FC_OP_MUL: return a * b;
  case FC_OP_DIV: return a / b;
  case FC_OP_POW: return pow(a, b);
  case FC_OP_MAX: return isnan(a) || isnan(b) ? NAN : (a > b || (a == b && !signbit(a))) ? a : b;
  case FC_OP_MIN: return isnan(a) || isnan(b) ? NAN : (a < b || (a == b && signbit(a))) ? a : b;
  case FC_OP_MOD: {
    double r = fmod(a, b);
    /* fmod=0 takes the divisor's sign (NumPy's mod); fmod=1 is C's fmod. */
    if (!fmod_flag && r != 0 && (r < 0) != (b < 0)) r += b;
    return r;
  }
  default: FC_UNREACHABLE();
  }
}

/* Returns false where the result is undefined (division by zero, a bad shift amount). */
static bool binary_i(FcOpKind k, bool fmod_flag, bool sint, unsigned width, uint64_t a, uint64_t b, uint64_t *r) {
  int64_t sa = (int64_t)a, sb = (int64_t)b;
  switch (k) {
  case FC_OP_ADD: *r = a + b; return true;
  case FC_OP_SUB: *r = a - b; return true;
  case FC_OP_MUL: *r = a * b; return true;
  case FC_OP_DIV:
    if (b == 0) return false;
    if (!sint) *r = a / b;
    else *r = sb == -1 ? 0 - a : (uint64_t)(sa / sb); /* INT64_MIN / -1 wraps instead of trapping */
    return true;
  case FC_OP_MOD:
    if (b == 0) return false;
    if (!sint) {
      *r = a % b;
    } else {
      int64_t m = sb == -1 ? 0 : sa % sb;
      if (!fmod_flag && m != 0 && (m < 0) != (sb < 0)) m += sb; /* the divisor's sign */
      *r = (uint64_t)m;
    }
    return true;
  case FC_OP_MAX: *r = (sint ? sa >= sb : a >= b) ? a : b; return true;
  case FC_OP_MIN: *r = (sint ? sa <= sb : a <= b) ? a : b; return true;
  case FC_OP_AND: *r = a & b; return true;
  case FC_OP_OR: *r = a | b; return true;
  case FC_OP_XOR: *r = a ^ b; return true;
  case FC_OP_BITSHIFT_LEFT:
  case FC_OP_BITSHIFT_RIGHT:
    if (sint && sb < 0) return false;
    if (k == FC_OP_BITSHIFT_LEFT) *r = b >= width ? 0 : a << b;
    else if (!sint) *r = b >= width ? 0 : a >> b;
    else { /* arithmetic shift of the sign-extended value, without shifting a negative number */
      unsigned s = b >= 63 ? 63 : (unsigned)b;
      *r = sa < 0 ? ~(~a >> s) : a >> s;
    }
    return true;
  default: FC_UNREACHABLE();
  }
}

static bool compare_f(FcOpKind k, double a, double b) {
  switch (k) {
  case FC_OP_EQUAL: return a == b;
  case FC_OP_LESS: return a < b;
  case FC_OP_LESS_EQUAL: return a <= b;
  case FC_OP_GREATER: return a > b;
  case FC_OP_GREATER_EQUAL: return a >= b;
  default: FC_UNREACHABLE();
  }
}

static bool compare_i(FcOpKind k, bool sint, uint64_t a, uint64_t b) {
  int c = sint ? ((int64_t)a > (int64_t)b) - ((int64_t)a < (int64_t)b) : (a > b) - (a < b);
  switch (k) {
  case FC_OP_EQUAL: return c == 0;
  case FC_OP_LESS: return c < 0;
  case FC_OP_LESS_EQUAL: return c <= 0;
  case FC_OP_GREATER: return c > 0;
  case FC_OP_GREATER_EQUAL: return c >= 0;
  default: FC_UNREACHABLE();
  }
}

/* Integer power by squaring with wraparound; false for a negative exponent. */
static bool ipow(uint64_t base, uint64_t e, bool e_signed, uint64_t *r) {
  if (e_signed && (int64_t)e < 0) return false;
  uint64_t acc = 1;
  while (e) {
    if (e & 1) acc *= base;
    base *= base;
    e >>= 1;
  }
  *r = acc;
  return true;
}

static bool is_compare(FcOpKind k) {
  return k == FC_OP_EQUAL || k == FC_OP_LESS || k == FC_OP_LESS_EQUAL || k == FC_OP_GREATER || k == FC_OP_GREATER_EQUAL;
}

FcStatus fc_eval_binary(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  const FcTensor *a = in[0], *b = in[1];
  FcTensor *y = fc_tensor_new(arena, op->results[0].type);
  int64_t n = fc_ee_numel(&y->type);
  const FcType *ts[2] = {&a->type, &b->type};
  FcEeBcast it;
  fc_ee_bcast_init(&it, arena, &y->type, ts, 2);
  FcOpKind k = op->kind;
  FcEeDomain da = fc_ee_domain(a->type.dtype), db = fc_ee_domain(b->type.dtype);
  bool fmod_flag = fc_op_attr_int(op, FC_ATTR_FMOD, 0) != 0;
  unsigned width = (unsigned)fc_dtype_size(a->type.dtype) * 8;
  for (int64_t i = 0; i < n; i++, fc_ee_bcast_next(&it)) {
    int64_t ia = it.off[0], ib = it.off[1];
    if (is_compare(k)) {
      bool c = da == FC_EE_FLOAT ? compare_f(k, fc_ee_getf(a, ia), fc_ee_getf(b, ib))
                                 : compare_i(k, da == FC_EE_SINT, fc_ee_getu(a, ia), fc_ee_getu(b, ib));
      fc_ee_setu(y, i, c);
    } else if (da == FC_EE_FLOAT) {
      fc_ee_setf(y, i, binary_f(k, fmod_flag, fc_ee_getf(a, ia), fc_ee_getf(b, ib)));
    } else if (k == FC_OP_POW) {
      uint64_t base = fc_ee_getu(a, ia), r;
      if (db == FC_EE_FLOAT) {
        double fb = da == FC_EE_SINT ? (double)(int64_t)base : (double)base;
        fc_tensor_set_f64(y, i, trunc(pow(fb, fc_ee_getf(b, ib))));
        continue;
      }
      if (!ipow(base, fc_ee_getu(b, ib), db == FC_EE_SINT, &r))
        return fc_ee_fail(op, diag, FC_ERR_UNSUPPORTED, "integer raised to a negative power");
      fc_ee_setu(y, i, r);
    } else {
      uint64_t r;
      if (!binary_i(k, fmod_flag, da == FC_EE_SINT, width, fc_ee_getu(a, ia), fc_ee_getu(b, ib), &r))
        return fc_ee_fail(op, diag, FC_ERR_UNSUPPORTED, "%s",
                          k == FC_OP_DIV || k == FC_OP_MOD ? "integer division by zero" : "negative shift amount");
      fc_ee_setu(y, i, r);
    }
  }
  out[0] = y;
  return FC_OK;
}

FcStatus fc_eval_select(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FcTensor *y = fc_tensor_new(arena, op->results[0].type);
  int64_t n = fc_ee_numel(&y->type);
  const FcType *ts[3] = {&in[0]->type, &in[1]->type, &in[2]->type};
  FcEeBcast it;
  fc_ee_bcast_init(&it, arena, &y->type, ts, 3);
  size_t es = fc_dtype_size(y->type.dtype);
  const unsigned char *c = in[0]->data, *a = in[1]->data, *b = in[2]->data;
  unsigned char *dst = (unsigned char *)y->data;
  for (int64_t i = 0; i < n; i++, fc_ee_bcast_next(&it)) {
    const unsigned char *src = c[it.off[0]] ? a + (size_t)it.off[1] * es : b + (size_t)it.off[2] * es;
    memcpy(dst + (size_t)i * es, src, es);
  }
  out[0] = y;
  return FC_OK;
}
