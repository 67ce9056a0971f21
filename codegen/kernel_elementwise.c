/* kernel_elementwise.c — the element-wise kernels: every FC_OPF_ELEMENTWISE op (unary maths, cast,
 * binary arithmetic, bitwise ops, comparisons, select) with NumPy broadcasting.
 *
 * fc_cg_scalar_op builds the computation of one element on compute-type values (codegen.h); it is
 * straight-line code (selects, no branches), so a loop around it vectorises, and fusion can reuse it.
 * Its results match the reference evaluators (ir/eval_elementwise.c) wherever those are defined; where
 * they decline, the kernel still defines a result, the one NumPy gives: integer x / 0 and x % 0 are 0,
 * INT_MIN / -1 wraps to INT_MIN, shifts by the width or more give 0 (an arithmetic right shift gives the
 * sign fill; a negative signed amount counts as huge), an integer raised to a negative power is the
 * truncated real result (1 for base 1, ±1 for base -1, else 0). Transcendental functions and float
 * pow come from fcmath.h (inline, accurate to a few ulp, no libcalls); an integer raised to a float
 * power is computed in double and truncated, with exact square-and-multiply for small integer powers.
 * Float mod uses LLVM's frem, which is C's fmod (exact; a libm call on x86, allowed in built programs).
 *
 * fc_kernel_elementwise first simplifies the iteration space: result dims of size 1 are dropped and
 * neighbouring dims merged wherever every operand steps through them as one (both contiguous, or both
 * broadcast), so a same-shape op is one flat loop and a bias add is [rows, cols]. The last merged dim
 * is the inner loop, whose operand strides are 1 or 0 — unit-stride loads and hoistable broadcasts that
 * LLVM's loop vectoriser turns into vector code. The other dims, times the chunks of a long inner dim,
 * are the outer iterations handed to the thread pool; each one finds its operand offsets by dividing
 * its row number by the (constant) dims.
 */
#include <math.h>
#include <string.h>

#include "codegen.h"
#include "fcmath.h"

/* Inner rows longer than this are cut into chunks of EW_CHUNK so that one long row still spreads
 * across threads; both are multiples of every vector width. */
enum { EW_SPLIT_ABOVE = 32768, EW_CHUNK = 16384 };
/* An integer raised to a float power: exponents that are integers below 2^POW_SQUARE_BITS multiply. */
enum { POW_SQUARE_BITS = 8 };

/* ---- small builders ------------------------------------------------------------------------------ */

static LLVMValueRef intrinsic(FcKernel *k, const char *name, LLVMTypeRef t, LLVMValueRef *args, unsigned n) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  FC_ASSERT(id != 0);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(k->mod, id, &t, 1);
  LLVMTypeRef fty = LLVMIntrinsicGetType(k->ctx, id, &t, 1);
  return LLVMBuildCall2(k->b, fty, fn, args, n, "");
}

static LLVMValueRef intrinsic1(FcKernel *k, const char *name, LLVMValueRef x) {
  return intrinsic(k, name, LLVMTypeOf(x), &x, 1);
}

/* fc_cg_scalar_op also accepts fixed-width vectors (for callers that vectorise by hand): types and
 * constants are shaped like the value they go with. */
static LLVMTypeRef elem_of(LLVMTypeRef t) {
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
}
static LLVMTypeRef shaped(LLVMValueRef like, LLVMTypeRef elem) {
  LLVMTypeRef t = LLVMTypeOf(like);
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMVectorType(elem, LLVMGetVectorSize(t)) : elem;
}
static LLVMValueRef cfp(LLVMValueRef like, double v) {
  LLVMTypeRef t = LLVMTypeOf(like);
  return fc_cg_splat_const(t, LLVMConstReal(elem_of(t), v));
}
static LLVMValueRef cint(LLVMValueRef like, long long v) {
  LLVMTypeRef t = LLVMTypeOf(like);
  return fc_cg_splat_const(t, LLVMConstInt(elem_of(t), (unsigned long long)v, 1));
}
static LLVMValueRef cbool(FcKernel *k, LLVMValueRef like, bool v) {
  LLVMTypeRef t = shaped(like, LLVMInt1TypeInContext(k->ctx));
  return fc_cg_splat_const(t, LLVMConstInt(elem_of(t), v, 0));
}
static unsigned int_width(LLVMValueRef v) { return LLVMGetIntTypeWidth(elem_of(LLVMTypeOf(v))); }
static LLVMValueRef to_i1(FcKernel *k, LLVMValueRef v) {
  return LLVMBuildTrunc(k->b, v, shaped(v, LLVMInt1TypeInContext(k->ctx)), "");
}

static LLVMValueRef math1(FcKernel *k, FcMathFn fn, LLVMValueRef x) {
  return fc_math_emit(k->mod, k->b, fn, x, NULL);
}

/* ---- floats --------------------------------------------------------------------------------------- */

/* Round half to even. x86 before SSE4.1 has no roundps, and LLVM calls libm's roundevenf per element there
 * (the quantisation of every QDQ model runs it); instead (|x| + 2^p) - 2^p, p the significand's bits, rounds
 * |x| < 2^p to the nearest integer, ties to even, under the default rounding mode (the add rounds, the
 * subtract is exact), and x's sign is put back (-0.4 gives -0). Larger magnitudes are already integers, and
 * they, the infinities and NaN fail the comparison and pass unchanged. */
static LLVMValueRef round_half_even(FcKernel *k, LLVMValueRef x) {
  LLVMTypeRef t = LLVMTypeOf(x), e = elem_of(t);
  LLVMTypeKind kind = LLVMGetTypeKind(e);
  if (k->target->arch != FC_ARCH_X86_64 || fc_target_has(k->target, FC_FEAT_SSE41) ||
      (kind != LLVMFloatTypeKind && kind != LLVMDoubleTypeKind))
    return intrinsic1(k, "llvm.roundeven", x);
  LLVMBuilderRef b = k->b;
  LLVMValueRef big = fc_cg_splat_const(t, LLVMConstReal(e, kind == LLVMFloatTypeKind ? 0x1p23 : 0x1p52));
  LLVMValueRef mag = intrinsic1(k, "llvm.fabs", x);
  LLVMValueRef args[2] = {LLVMBuildFSub(b, LLVMBuildFAdd(b, mag, big, ""), big, ""), x};
  LLVMValueRef r = intrinsic(k, "llvm.copysign", t, args, 2);
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, mag, big, ""), r, x, "");
}

/* max/min as the evaluator: NaN if either is NaN; of +0 and -0, max is +0 and min is -0. */
/* A float constant's value (a splat's: every lane the same), or NaN where v is none. */
static double const_value(LLVMValueRef v) {
  if (!LLVMIsConstant(v)) return NAN;
  bool vec = LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind;
  unsigned lanes = vec ? LLVMGetVectorSize(LLVMTypeOf(v)) : 1;
  double first = NAN;
  for (unsigned i = 0; i < lanes; i++) {
    LLVMValueRef c = vec ? LLVMGetAggregateElement(v, i) : v;
    LLVMBool loses;
    double x = c && LLVMIsAConstantFP(c) ? LLVMConstRealGetDouble(c, &loses) : NAN;
    if (isnan(x) || (i && (x != first || signbit(x) != signbit(first)))) return NAN;
    first = x;
  }
  return first;
}

static LLVMValueRef fmaxmin(FcKernel *k, bool is_max, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = k->b;
  /* Against a constant bound c that is not NaN (the clamp of a quantize, a clip): "x > c or x is NaN"
   * picks x, one compare and one select, which is the whole op unless c is a zero of the wrong sign (of
   * two zeros max takes +0, min -0). */
  for (int j = 0; j < 2; j++) {
    LLVMValueRef x = j ? b : a, cv = j ? a : b;
    double c = const_value(cv);
    if (isnan(c) || (c == 0 && (signbit(c) != 0) == is_max)) continue;
    return LLVMBuildSelect(B, LLVMBuildFCmp(B, is_max ? LLVMRealUGT : LLVMRealULT, x, cv, ""), x, cv, "");
  }
  LLVMValueRef better = LLVMBuildFCmp(B, is_max ? LLVMRealOGT : LLVMRealOLT, a, b, "");
  LLVMValueRef eq = LLVMBuildFCmp(B, LLVMRealOEQ, a, b, "");
  bool f64 = LLVMGetTypeKind(elem_of(LLVMTypeOf(a))) == LLVMDoubleTypeKind;
  LLVMTypeRef it = shaped(a, LLVMIntTypeInContext(k->ctx, f64 ? 64 : 32));
  LLVMValueRef ai = LLVMBuildBitCast(B, a, it, "");
  LLVMValueRef neg = LLVMBuildICmp(B, LLVMIntSLT, ai, cint(ai, 0), "");
  LLVMValueRef tie_a = is_max ? LLVMBuildNot(B, neg, "") : neg;
  LLVMValueRef pick_a = LLVMBuildOr(B, better, LLVMBuildAnd(B, eq, tie_a, ""), "");
  LLVMValueRef r = LLVMBuildSelect(B, pick_a, a, b, "");
  LLVMValueRef nan = LLVMBuildFCmp(B, LLVMRealUNO, a, b, "");
  return LLVMBuildSelect(B, nan, LLVMBuildFAdd(B, a, b, ""), r, "");
}

/* pow for an integer result, in double: square-and-multiply for small integer exponents, exact wherever
 * the power is representable (5^3 must be 125, not 124.99999999999997, before it truncates); C pow
 * (fcmath.h) otherwise. Zeros, infinities and signs follow from IEEE multiplication and 1/x. */
static LLVMValueRef pow_f64_exact(FcKernel *k, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef B = k->b;
  LLVMValueRef r = fc_math_emit(k->mod, B, FC_MATH_POW, x, y);
  LLVMValueRef ay = intrinsic1(k, "llvm.fabs", y);
  LLVMValueRef y_int = LLVMBuildFCmp(B, LLVMRealOEQ, intrinsic1(k, "llvm.floor", y), y, "");
  LLVMValueRef below = LLVMBuildFCmp(B, LLVMRealOLT, ay, cfp(y, (double)(1 << POW_SQUARE_BITS)), "");
  LLVMValueRef small = LLVMBuildAnd(B, y_int, below, "");
  LLVMValueRef n = LLVMBuildFPToUI(B, LLVMBuildSelect(B, small, ay, cfp(y, 0.0), ""),
                                   shaped(y, LLVMInt32TypeInContext(k->ctx)), "");
  LLVMValueRef acc = cfp(x, 1.0), p = x;
  for (int i = 0; i < POW_SQUARE_BITS; i++) {
    LLVMValueRef bit = to_i1(k, LLVMBuildLShr(B, n, cint(n, i), ""));
    acc = LLVMBuildSelect(B, bit, LLVMBuildFMul(B, acc, p, ""), acc, "");
    if (i + 1 < POW_SQUARE_BITS) p = LLVMBuildFMul(B, p, p, "");
  }
  LLVMValueRef y_neg = LLVMBuildFCmp(B, LLVMRealOLT, y, cfp(y, 0.0), "");
  acc = LLVMBuildSelect(B, y_neg, LLVMBuildFDiv(B, cfp(x, 1.0), acc, ""), acc, "");
  return LLVMBuildSelect(B, small, acc, r, "");
}

/* ---- integers ------------------------------------------------------------------------------------- */

static LLVMValueRef idiv(FcKernel *k, bool sint, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = k->b;
  LLVMValueRef zero = cint(b, 0), one = cint(b, 1);
  LLVMValueRef b0 = LLVMBuildICmp(B, LLVMIntEQ, b, zero, "");
  if (!sint) {
    LLVMValueRef q = LLVMBuildUDiv(B, a, LLVMBuildSelect(B, b0, one, b, ""), "");
    return LLVMBuildSelect(B, b0, zero, q, "");
  }
  LLVMValueRef bm1 = LLVMBuildICmp(B, LLVMIntEQ, b, cint(b, -1), "");
  LLVMValueRef safe = LLVMBuildSelect(B, LLVMBuildOr(B, b0, bm1, ""), one, b, "");
  LLVMValueRef q = LLVMBuildSDiv(B, a, safe, "");
  q = LLVMBuildSelect(B, bm1, LLVMBuildNeg(B, a, ""), q, "");
  return LLVMBuildSelect(B, b0, zero, q, "");
}

static LLVMValueRef imod(FcKernel *k, bool sint, bool c_fmod, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = k->b;
  LLVMValueRef zero = cint(b, 0), one = cint(b, 1);
  LLVMValueRef b0 = LLVMBuildICmp(B, LLVMIntEQ, b, zero, "");
  if (!sint) {
    LLVMValueRef m = LLVMBuildURem(B, a, LLVMBuildSelect(B, b0, one, b, ""), "");
    return LLVMBuildSelect(B, b0, zero, m, "");
  }
  LLVMValueRef bm1 = LLVMBuildICmp(B, LLVMIntEQ, b, cint(b, -1), "");
  LLVMValueRef m = LLVMBuildSRem(B, a, LLVMBuildSelect(B, LLVMBuildOr(B, b0, bm1, ""), one, b, ""), "");
  if (c_fmod) return m;
  LLVMValueRef fix = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, m, zero, ""),
                                  LLVMBuildICmp(B, LLVMIntNE, LLVMBuildICmp(B, LLVMIntSLT, m, zero, ""),
                                                LLVMBuildICmp(B, LLVMIntSLT, b, zero, ""), ""), "");
  return LLVMBuildSelect(B, fix, LLVMBuildAdd(B, m, b, ""), m, "");
}

static LLVMValueRef ishift(FcKernel *k, bool left, bool sint, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = k->b;
  unsigned w = int_width(a);
  LLVMValueRef oob = LLVMBuildICmp(B, LLVMIntUGE, b, cint(b, w), "");
  if (!left && sint) return LLVMBuildAShr(B, a, LLVMBuildSelect(B, oob, cint(b, w - 1), b, ""), "");
  LLVMValueRef amt = LLVMBuildSelect(B, oob, cint(b, 0), b, "");
  LLVMValueRef r = left ? LLVMBuildShl(B, a, amt, "") : LLVMBuildLShr(B, a, amt, "");
  return LLVMBuildSelect(B, oob, cint(a, 0), r, "");
}

/* base^e with wraparound by square-and-multiply over every bit of e (straight-line, so it vectorises).
 * e has its own integer type and signedness; a negative e gives the truncated real result. */
static LLVMValueRef ipow(FcKernel *k, bool base_sint, LLVMValueRef base, bool e_sint, LLVMValueRef e) {
  LLVMBuilderRef B = k->b;
  unsigned ew = int_width(e);
  LLVMValueRef acc = cint(base, 1), p = base;
  for (unsigned i = 0; i < ew; i++) {
    LLVMValueRef bit = to_i1(k, LLVMBuildLShr(B, e, cint(e, i), ""));
    acc = LLVMBuildSelect(B, bit, LLVMBuildMul(B, acc, p, ""), acc, "");
    if (i + 1 < ew) p = LLVMBuildMul(B, p, p, "");
  }
  if (!e_sint) return acc;
  /* 1/base^|e| truncated: 1 for base 1, ±1 for base -1 (by e's parity), 0 otherwise */
  LLVMValueRef e_neg = LLVMBuildICmp(B, LLVMIntSLT, e, cint(e, 0), "");
  LLVMValueRef is1 = LLVMBuildICmp(B, LLVMIntEQ, base, cint(base, 1), "");
  LLVMValueRef neg_r = LLVMBuildSelect(B, is1, cint(base, 1), cint(base, 0), "");
  if (base_sint) {
    LLVMValueRef ism1 = LLVMBuildICmp(B, LLVMIntEQ, base, cint(base, -1), "");
    LLVMValueRef odd = to_i1(k, e);
    neg_r = LLVMBuildSelect(B, ism1, LLVMBuildSelect(B, odd, cint(base, -1), cint(base, 1), ""), neg_r, "");
  }
  return LLVMBuildSelect(B, e_neg, neg_r, acc, "");
}

static LLVMValueRef pow_op(FcKernel *k, const FcOp *op, FcDtype dt, LLVMValueRef x, LLVMValueRef y) {
  FcDtype et = op->operands[1].value->type.dtype;
  if (fc_dtype_is_float(dt) && elem_of(LLVMTypeOf(x)) == fc_cg_compute_type(k, et))
    return fc_math_emit(k->mod, k->b, FC_MATH_POW, x, y); /* f32 pow runs via f64 inside */
  if (fc_dtype_is_float(dt) || fc_dtype_is_float(et)) {
    /* mixed dtypes meet in double, the evaluator's domain; an integer result truncates toward zero */
    LLVMValueRef xd = fc_cg_convert(k, x, dt, FC_DT_F64), yd = fc_cg_convert(k, y, et, FC_DT_F64);
    LLVMValueRef r = fc_dtype_is_float(dt) ? fc_math_emit(k->mod, k->b, FC_MATH_POW, xd, yd)
                                           : intrinsic1(k, "llvm.trunc", pow_f64_exact(k, xd, yd));
    return fc_cg_convert(k, r, FC_DT_F64, dt);
  }
  return ipow(k, fc_dtype_class(dt) == FC_DTC_SINT, x, fc_dtype_class(et) == FC_DTC_SINT, y);
}

/* ---- the scalar op ------------------------------------------------------------------------------ */

static bool math_fn(FcOpKind kind, FcMathFn *fn) {
  switch (kind) {
  case FC_OP_EXP: *fn = FC_MATH_EXP; return true;
  case FC_OP_LOG: *fn = FC_MATH_LOG; return true;
  case FC_OP_SIN: *fn = FC_MATH_SIN; return true;
  case FC_OP_COS: *fn = FC_MATH_COS; return true;
  case FC_OP_TAN: *fn = FC_MATH_TAN; return true;
  case FC_OP_ASIN: *fn = FC_MATH_ASIN; return true;
  case FC_OP_ACOS: *fn = FC_MATH_ACOS; return true;
  case FC_OP_ATAN: *fn = FC_MATH_ATAN; return true;
  case FC_OP_SINH: *fn = FC_MATH_SINH; return true;
  case FC_OP_COSH: *fn = FC_MATH_COSH; return true;
  case FC_OP_TANH: *fn = FC_MATH_TANH; return true;
  case FC_OP_ASINH: *fn = FC_MATH_ASINH; return true;
  case FC_OP_ACOSH: *fn = FC_MATH_ACOSH; return true;
  case FC_OP_ATANH: *fn = FC_MATH_ATANH; return true;
  case FC_OP_ERF: *fn = FC_MATH_ERF; return true;
  case FC_OP_SIGMOID: *fn = FC_MATH_SIGMOID; return true;
  case FC_OP_SOFTPLUS: *fn = FC_MATH_SOFTPLUS; return true;
  default: return false;
  }
}

static LLVMValueRef unary_float(FcKernel *k, const FcOp *op, LLVMValueRef x) {
  LLVMBuilderRef B = k->b;
  FcMathFn fn;
  if (math_fn(op->kind, &fn)) return math1(k, fn, x);
  switch (op->kind) {
  case FC_OP_NEG: return LLVMBuildFNeg(B, x, "");
  case FC_OP_ABS: return intrinsic1(k, "llvm.fabs", x);
  case FC_OP_SIGN: {
    LLVMValueRef r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, x, cfp(x, 0.0), ""), cfp(x, -1.0), x, "");
    return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT, x, cfp(x, 0.0), ""), cfp(x, 1.0), r, "");
  }
  case FC_OP_CEIL: return intrinsic1(k, "llvm.ceil", x);
  case FC_OP_FLOOR: return intrinsic1(k, "llvm.floor", x);
  case FC_OP_ROUND: return round_half_even(k, x);
  case FC_OP_SQRT: return intrinsic1(k, "llvm.sqrt", x);
  case FC_OP_RECIPROCAL: return LLVMBuildFDiv(B, cfp(x, 1.0), x, "");
  case FC_OP_RELU: return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, x, cfp(x, 0.0), ""), cfp(x, 0.0), x, "");
  case FC_OP_ISNAN: return LLVMBuildFCmp(B, LLVMRealUNO, x, x, "");
  case FC_OP_ISINF: {
    bool neg = fc_op_attr_int(op, FC_ATTR_DETECT_NEGATIVE, 1) != 0;
    bool pos = fc_op_attr_int(op, FC_ATTR_DETECT_POSITIVE, 1) != 0;
    LLVMValueRef r = cbool(k, x, false);
    if (pos) r = LLVMBuildOr(B, r, LLVMBuildFCmp(B, LLVMRealOEQ, x, cfp(x, INFINITY), ""), "");
    if (neg) r = LLVMBuildOr(B, r, LLVMBuildFCmp(B, LLVMRealOEQ, x, cfp(x, -INFINITY), ""), "");
    return r;
  }
  default: return NULL;
  }
}

static LLVMValueRef unary_int(FcKernel *k, const FcOp *op, bool sint, LLVMValueRef x) {
  LLVMBuilderRef B = k->b;
  LLVMValueRef neg = sint ? LLVMBuildICmp(B, LLVMIntSLT, x, cint(x, 0), "") : NULL;
  switch (op->kind) {
  case FC_OP_NEG: return LLVMBuildNeg(B, x, "");
  case FC_OP_ABS: return sint ? LLVMBuildSelect(B, neg, LLVMBuildNeg(B, x, ""), x, "") : x;
  case FC_OP_SIGN: {
    LLVMValueRef nz = LLVMBuildZExt(B, LLVMBuildICmp(B, LLVMIntNE, x, cint(x, 0), ""), LLVMTypeOf(x), "");
    return sint ? LLVMBuildSelect(B, neg, cint(x, -1), nz, "") : nz;
  }
  case FC_OP_RELU: return sint ? LLVMBuildSelect(B, neg, cint(x, 0), x, "") : x;
  case FC_OP_NOT:
  case FC_OP_BITWISE_NOT: return LLVMBuildNot(B, x, "");
  default: return NULL;
  }
}

static LLVMValueRef compare(FcKernel *k, FcOpKind kind, FcDtypeClass cls, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = k->b;
  if (cls == FC_DTC_FLOAT) {
    static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
    return LLVMBuildFCmp(B, fp[kind - FC_OP_EQUAL], a, b, "");
  }
  static const LLVMIntPredicate sp[] = {LLVMIntEQ, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
  static const LLVMIntPredicate up[] = {LLVMIntEQ, LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
  return LLVMBuildICmp(B, (cls == FC_DTC_SINT ? sp : up)[kind - FC_OP_EQUAL], a, b, "");
}

static LLVMValueRef binary_int(FcKernel *k, const FcOp *op, bool sint, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = k->b;
  switch (op->kind) {
  case FC_OP_ADD: return LLVMBuildAdd(B, a, b, "");
  case FC_OP_SUB: return LLVMBuildSub(B, a, b, "");
  case FC_OP_MUL: return LLVMBuildMul(B, a, b, "");
  case FC_OP_DIV: return idiv(k, sint, a, b);
  case FC_OP_MOD: return imod(k, sint, fc_op_attr_int(op, FC_ATTR_FMOD, 0) != 0, a, b);
  case FC_OP_MAX: return LLVMBuildSelect(B, LLVMBuildICmp(B, sint ? LLVMIntSGE : LLVMIntUGE, a, b, ""), a, b, "");
  case FC_OP_MIN: return LLVMBuildSelect(B, LLVMBuildICmp(B, sint ? LLVMIntSLE : LLVMIntULE, a, b, ""), a, b, "");
  case FC_OP_BITSHIFT_LEFT: return ishift(k, true, sint, a, b);
  case FC_OP_BITSHIFT_RIGHT: return ishift(k, false, sint, a, b);
  case FC_OP_AND: return LLVMBuildAnd(B, a, b, "");
  case FC_OP_OR: return LLVMBuildOr(B, a, b, "");
  case FC_OP_XOR: return LLVMBuildXor(B, a, b, "");
  default: return NULL;
  }
}

static LLVMValueRef binary_float(FcKernel *k, const FcOp *op, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = k->b;
  switch (op->kind) {
  case FC_OP_ADD: return LLVMBuildFAdd(B, a, b, "");
  case FC_OP_SUB: return LLVMBuildFSub(B, a, b, "");
  case FC_OP_MUL: return LLVMBuildFMul(B, a, b, "");
  case FC_OP_DIV: return LLVMBuildFDiv(B, a, b, "");
  case FC_OP_MAX: return fmaxmin(k, true, a, b);
  case FC_OP_MIN: return fmaxmin(k, false, a, b);
  case FC_OP_MOD: {
    LLVMValueRef r = LLVMBuildFRem(B, a, b, "");
    if (fc_op_attr_int(op, FC_ATTR_FMOD, 0) != 0) return r;
    /* Python's %: a non-zero remainder whose sign differs from the divisor's moves by one divisor */
    LLVMValueRef fix = LLVMBuildAnd(B, LLVMBuildFCmp(B, LLVMRealUNE, r, cfp(r, 0.0), ""),
                                    LLVMBuildXor(B, LLVMBuildFCmp(B, LLVMRealOLT, r, cfp(r, 0.0), ""),
                                                 LLVMBuildFCmp(B, LLVMRealOLT, b, cfp(b, 0.0), ""), ""), "");
    return LLVMBuildSelect(B, fix, LLVMBuildFAdd(B, r, b, ""), r, "");
  }
  default: return NULL;
  }
}

LLVMValueRef fc_cg_scalar_op(FcKernel *k, const FcOp *op, FcDtype dt, LLVMValueRef x, LLVMValueRef y, LLVMValueRef z) {
  FcDtypeClass cls = fc_dtype_class(dt);
  bool sint = cls == FC_DTC_SINT;
  LLVMValueRef r = NULL;
  switch (op->kind) {
  case FC_OP_CAST: return fc_cg_convert(k, x, dt, fc_op_attr(op, FC_ATTR_TO)->type);
  case FC_OP_SELECT: return LLVMBuildSelect(k->b, x, y, z, "");
  case FC_OP_POW: return pow_op(k, op, dt, x, y);
  case FC_OP_EQUAL: case FC_OP_LESS: case FC_OP_LESS_EQUAL: case FC_OP_GREATER: case FC_OP_GREATER_EQUAL:
    return compare(k, op->kind, cls, x, y);
  default: break;
  }
  if (fc_op_info(op->kind)->in_max == 1) r = cls == FC_DTC_FLOAT ? unary_float(k, op, x) : unary_int(k, op, sint, x);
  else r = cls == FC_DTC_FLOAT ? binary_float(k, op, x, y) : binary_int(k, op, sint, x, y);
  /* inference rejects every op/dtype pair that reaches here without a result */
  FC_ASSERT(r != NULL);
  return r;
}

/* ---- the kernel ------------------------------------------------------------------------------------ */

/* Rough scalar operations per element, for the parallel cut-off. */
static double op_cost(FcOpKind kind, FcDtype dt) {
  FcMathFn fn;
  if (math_fn(kind, &fn)) return 30;
  switch (kind) {
  case FC_OP_POW: return fc_dtype_is_float(dt) ? 60 : 40;
  case FC_OP_DIV: case FC_OP_MOD: case FC_OP_SQRT: case FC_OP_RECIPROCAL: return 8;
  default: return 2;
  }
}

/* The simplified iteration space: cd[0..cr) merged dims (outermost first), cs[j] operand j's strides. */
typedef struct EwSpace {
  int n_in, cr;
  int64_t *cd, *cs[3];
  int64_t inner, chunk, nchunks;
} EwSpace;

/* The loop nest over the outer iterations [begin, end), reading operand j from ptrs[j]. */
static void emit_nest(FcKernel *k, const EwSpace *sp, LLVMValueRef const *ptrs) {
  FcOp *op = k->op;
  LLVMBuilderRef B = k->b;
  int cr = sp->cr;
  FcLoop lo_outer, lo_inner;
  LLVMValueRef o = fc_cg_loop_begin(k, &lo_outer, k->begin, k->end, 1, "o");
  LLVMValueRef row, lo, hi;
  fc_cg_row_chunk(k, o, sp->inner, sp->chunk, sp->nchunks, &row, &lo, &hi);
  /* operand offsets of the row: its index decomposed over the outer dims (constant divisors) */
  LLVMValueRef off[3], rem = row;
  for (int j = 0; j < sp->n_in; j++) off[j] = fc_cg_const_i64(k, 0);
  for (int a = cr - 2; a >= 0; a--) {
    LLVMValueRef idx = rem;
    if (a > 0) {
      idx = LLVMBuildURem(B, rem, fc_cg_const_i64(k, sp->cd[a]), "");
      rem = LLVMBuildUDiv(B, rem, fc_cg_const_i64(k, sp->cd[a]), "");
    }
    for (int j = 0; j < sp->n_in; j++)
      if (sp->cs[j][a] != 0)
        off[j] = LLVMBuildAdd(B, off[j], LLVMBuildMul(B, idx, fc_cg_const_i64(k, sp->cs[j][a]), ""), "");
  }
  LLVMValueRef out_base = LLVMBuildMul(B, row, fc_cg_const_i64(k, sp->inner), "");

  LLVMValueRef i = fc_cg_loop_begin(k, &lo_inner, lo, hi, 1, "i");
  LLVMValueRef v[3] = {NULL, NULL, NULL};
  LLVMValueRef out_idx = LLVMBuildAdd(B, out_base, i, "");
  for (int j = 0; j < sp->n_in; j++) {
    LLVMValueRef idx = off[j];
    int64_t s = sp->cs[j][cr - 1];
    /* An operand read through the result pointer (in place) is read at the result's own index: the
     * same address expression as the store, so the vectoriser sees a distance of 0 and needs no run-time
     * overlap check (which an equal but differently computed range would fail). */
    if (ptrs[j] == k->out[0]) idx = out_idx;
    else if (s != 0) idx = LLVMBuildAdd(B, idx, s == 1 ? i : LLVMBuildMul(B, i, fc_cg_const_i64(k, s), ""), "");
    v[j] = fc_cg_load(k, op->operands[j].value->type.dtype, ptrs[j], idx);
  }
  LLVMValueRef res = fc_cg_scalar_op(k, op, op->operands[0].value->type.dtype, v[0], v[1], v[2]);
  fc_cg_store(k, op->results[0].type.dtype, k->out[0], out_idx, res);
  fc_cg_loop_end(k, &lo_inner);
  fc_cg_loop_end(k, &lo_outer);
}

FcStatus fc_kernel_elementwise(FcKernel *k) {
  FcOp *op = k->op;
  FcArena *arena = &op->graph->module->arena;
  const FcType *rt = &op->results[0].type;
  int n_in = op->n_operands, r = rt->rank;
  FC_ASSERT(n_in >= 1 && n_in <= 3);
  int64_t numel;
  FC_ASSERT(fc_type_numel(rt, &numel));
  if (numel == 0) {
    fc_kernel_set_outer(k, 0, 0);
    return FC_OK;
  }

  EwSpace sp = {.n_in = n_in, .cd = FC_NEW_ARRAY(arena, int64_t, (size_t)r + 1)};
  const int64_t *st[3];
  for (int j = 0; j < n_in; j++) {
    st[j] = fc_cg_broadcast_strides(arena, &op->operands[j].value->type, rt);
    sp.cs[j] = FC_NEW_ARRAY(arena, int64_t, (size_t)r + 1);
  }
  int cr = 0;
  for (int a = 0; a < r; a++) {
    if (rt->dims[a] == 1) continue;
    bool merge = cr > 0;
    for (int j = 0; merge && j < n_in; j++) merge = sp.cs[j][cr - 1] == st[j][a] * rt->dims[a];
    if (merge) {
      sp.cd[cr - 1] *= rt->dims[a];
      for (int j = 0; j < n_in; j++) sp.cs[j][cr - 1] = st[j][a];
    } else {
      sp.cd[cr] = rt->dims[a];
      for (int j = 0; j < n_in; j++) sp.cs[j][cr] = st[j][a];
      cr++;
    }
  }
  if (cr == 0) { /* a single element */
    sp.cd[0] = 1;
    for (int j = 0; j < n_in; j++) sp.cs[j][0] = 0;
    cr = 1;
  }
  sp.cr = cr;
  sp.inner = sp.cd[cr - 1];
  sp.chunk = sp.inner > EW_SPLIT_ABOVE ? EW_CHUNK : sp.inner;
  sp.nchunks = (sp.inner + sp.chunk - 1) / sp.chunk;
  FcDtype in_dt = op->operands[op->kind == FC_OP_SELECT ? 1 : 0].value->type.dtype;
  fc_kernel_set_outer(k, numel / sp.inner * sp.nchunks, (double)sp.chunk * op_cost(op->kind, in_dt));

  /* The memory plan may compute the result in place over an operand of the result's shape. The
   * vectoriser's run-time overlap check would then send the loop to its scalar version, so such an
   * operand gets a copy of the nest where it is read through the result pointer itself: a load and a
   * store of one address per iteration, which vectorises without a check. */
  LLVMBuilderRef B = k->b;
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "done");
  size_t out_es = fc_dtype_size(rt->dtype);
  for (int j = 0; j < n_in; j++) {
    const FcType *t = &op->operands[j].value->type;
    bool seen = false;
    for (int i = 0; i < j; i++) seen |= op->operands[i].value == op->operands[j].value;
    if (seen || !fc_shape_equal(t, rt) || fc_dtype_size(t->dtype) != out_es) continue;
    LLVMBasicBlockRef same = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "in_place");
    LLVMBasicBlockRef other = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "not_in_place");
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, k->in[j], k->out[0], ""), same, other);
    LLVMPositionBuilderAtEnd(B, same);
    LLVMValueRef ptrs[3];
    for (int i = 0; i < n_in; i++) ptrs[i] = op->operands[i].value == op->operands[j].value ? k->out[0] : k->in[i];
    emit_nest(k, &sp, ptrs);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, other);
  }
  emit_nest(k, &sp, k->in);
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, done);
  return FC_OK;
}
