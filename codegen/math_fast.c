/* math_fast.c — cheaper f32 forms for conv/matmul epilogue activations, where an error of a few ulp of
 * the activation is enough (fcmath.h): erfc for GELU's 1 + erf(u) = erfc(-u) (fc_math_emit_erfc_fast) and
 * exp of non-positive arguments for SiLU (fc_math_emit_exp_nonpos). Both end in the same short exp: n =
 * rint(t/ln2) by a magic-number add whose low bits also carry n + 127, r = t - n ln2, e^r as a degree-6
 * polynomial (bench/math_fit.py erfc_fast_e, relative error 2^-27.8), then 2^n.
 *
 * ---- erfc ----
 * GELU, x/2 (1 + erf(x/sqrt 2)), needs erf to an absolute error near 1e-7 only, where FC_MATH_ERF
 * (math.c) pays for a 1.5 ulp bound on erf with an exact double-word x^2, a full exp kernel with its
 * overflow handling and a degree-9 erfc polynomial: about 75 instructions a vector. Computing 1 + erf(u)
 * as erfc(-u) directly also avoids the cancellation of 1 + erf(u) for negative u, so the result keeps
 * a small RELATIVE error where GELU's output is small, which 1 + erf(u) through any erf cannot.
 * After MLAS's MlasErfKernel (a polynomial below 0.921875, 1 - exp(polynomial) above), in about 32
 * instructions:
 * - |x| < S = 0.921875: erfc(x) = 1 - (x + x Q(x^2)), Q of degree 5 fitted for erf's relative error;
 *   the subtraction loses nothing as erfc is in [0.19, 1.81] there.
 * - |x| >= S: E = erfc(|x|) = exp(P(|x|)) with P of degree 8 fitted to log erfc on [S, 4], so the fit's
 *   absolute error (2^-24.5) is E's relative error; erfc(x) = E for x > 0 and 2 - E for x < 0. For P's
 *   range [-17.9, -1.6] the short exp takes r = t - n ln2 in one fmuladd (n ln2's rounding is below
 *   2^-27 relative) and 2^n by a shift of the magic sum's bits; no overflow, underflow or NaN handling
 *   is needed there.
 * - |x| > 4 (erfc(4) = 1.5e-8): 0 or 2.
 * Special values: NaN propagates (through the small form), erfc(+inf) = 0, erfc(-inf) = 2, subnormal
 * and zero x give 1. Coefficients are from bench/math_fit.py erfc_fast (f32, rounded one by one).
 *
 * Measured against libm's erfc in double (tests/unit/test_math.c, check_erfc_fast: 2^22 points evenly over
 * [-6, 6], every 256th float bit pattern, the special values), with FMA / on the x86-64 baseline without:
 * absolute error at most 1.21e-7 / 1.16e-7 (about 1 ulp of results near 2); relative error at most
 * 5.9e-7 / 7.1e-7 where erfc(x) >= 1e-2 (x <= 1.82) and 2.3e-6 / 3.6e-6 where erfc(x) >= 1e-7
 * (x <= 3.77): t = P(|x|) rounds to float, and its absolute rounding error, which grows with |t|, is
 * e^t's relative error. Above 4 the result is 0 (an absolute error below 1.6e-8).
 *
 * ---- exp of x <= 0 ----
 * For SiLU's e^-|a| in place of FC_MATH_EXP's 0.5 ulp form (exact two-sum of 1 + r, overflow selects):
 * x clamped to -110 (where e^x rounds to +0), r = x - n ln2 in two Cody–Waite steps (ln2's high part
 * has few enough bits that n ln2_hi is exact, as |n| <= 159), the polynomial, and 2^n applied in two
 * halves so that subnormal results round once. Measured against libm's exp in double (test_math.c,
 * check_exp_nonpos: 2^22 points evenly over [-110, 0], every float bit pattern of a negative number
 * step 256, the special values): at most 0.89 ulp with FMA, 1.17 ulp on the x86-64 baseline without
 * it (bounds asserted: 1 and 1.25). exp(-inf) = +0, exp(-0) = 1, NaN propagates; x > 0 is not supported.
 */
#include "ir.h"
#include "math_internal.h"

/* erfc: the split between the two forms and where erfc rounds to 0 (or 2). */
static const double SPLIT = 0.921875, AMAX = 4;
/* erf(x) = x + x Q(x^2) on [0, S]. */
static const double Q[] = {
    0x1.06eba6p-3, -0x1.8126e8p-2, 0x1.ce1ab4p-4, -0x1.b68e66p-6, 0x1.474a0ep-8, -0x1.3a48d8p-11,
};
/* log erfc(a) = P(a) on [S, 4]. */
static const double P[] = {
    0x1.3490fep-12, -0x1.21504cp+0, -0x1.4394e6p-1, -0x1.c240dp-4, 0x1.af7afep-6,
    -0x1.3600c8p-8, 0x1.35b52ep-11, -0x1.7c7b1p-15, 0x1.ae3a08p-20,
};
/* e^r on |r| <= ln2/2. */
static const double E[] = {
    0x1p+0, 0x1p+0, 0x1p-1, 0x1.555466p-3, 0x1.5552fep-5, 0x1.1257e2p-7, 0x1.6fef7cp-10,
};

static const double LOG2E = 0x1.715476p0, LN2 = 0x1.62e43p-1;
/* Cody–Waite halves of ln2 (as math.c's exp): n * LN2_HI is exact for |n| < 2^9. */
static const double LN2_HI = 0x1.63p-1, LN2_LO = -0x1.bd0106p-13;
/* 1.5 * 2^23 + 127: t/ln2 + MAGIC rounds to an integer whose low bits are n + 127, which shifted into
 * the exponent field (the magic's own bit 22 shifts out) is 2^n. */
static const double MAGIC = 0x1.8p23 + 127;
/* exp of x <= 0: below this e^x rounds to +0, and 2^n's halves stay normal. */
static const double EXP_LO = -110;

/* e^t for t in [EXP_LO, 0] (NaN propagates). `wide`: the whole range, subnormal results rounding
 * once; else t in [-87, 0], where one reduction step and a one-step 2^n suffice. */
static FcV short_exp(const FcMathB *m, FcV t, bool wide)
{
  FcV s = fc_mb_mla(m, t, fc_mb_k(m, LOG2E), fc_mb_k(m, MAGIC));
  FcV n = fc_mb_sub(m, s, fc_mb_k(m, MAGIC));
  FcV r = wide ? fc_mb_mla(m, n, fc_mb_k(m, -LN2_LO), fc_mb_mla(m, n, fc_mb_k(m, -LN2_HI), t))
               : fc_mb_mla(m, n, fc_mb_k(m, -LN2), t);
  FcV p = fc_mb_poly(m, r, E, NELEM(E));
  if (!wide) return fc_mb_mul(m, p, fc_mb_flt(m, fc_mb_shl(m, fc_mb_bits(m, s), 23)));
  return fc_mb_scale(m, p, fc_mb_isub(m, fc_mb_bits(m, s), fc_mb_bits(m, fc_mb_k(m, MAGIC))));
}

LLVMValueRef fc_math_emit_erfc_fast(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef x)
{
  FcMathB mb, *m = &mb;
  fc_mb_init(m, mod, b, LLVMTypeOf(x));
  FC_ASSERT(!m->f64);
  FcV one = fc_mb_k(m, 1), a = fc_mb_abs(m, x);

  FcV small = fc_mb_sub(m, one, fc_mb_mla(m, x, fc_mb_poly(m, fc_mb_mul(m, x, x), Q, NELEM(Q)), x));

  FcV ac = fc_mb_sel(m, fc_mb_lt(m, a, fc_mb_k(m, AMAX)), a, fc_mb_k(m, AMAX));
  FcV e = short_exp(m, fc_mb_poly(m, ac, P, NELEM(P)), false);
  e = fc_mb_sel(m, fc_mb_gt(m, a, fc_mb_k(m, AMAX)), fc_mb_k(m, 0), e);
  FcV big = fc_mb_sel(m, fc_mb_lt(m, x, fc_mb_k(m, 0)), fc_mb_sub(m, fc_mb_k(m, 2), e), e);
  /* NaN fails the test and keeps small's NaN. */
  return fc_mb_sel(m, fc_mb_ge(m, a, fc_mb_k(m, SPLIT)), big, small);
}

LLVMValueRef fc_math_emit_exp_nonpos(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef x)
{
  FcMathB mb, *m = &mb;
  fc_mb_init(m, mod, b, LLVMTypeOf(x));
  FC_ASSERT(!m->f64);
  /* NaN fails the test and passes through. */
  return short_exp(m, fc_mb_sel(m, fc_mb_lt(m, x, fc_mb_k(m, EXP_LO)), fc_mb_k(m, EXP_LO), x), true);
}
