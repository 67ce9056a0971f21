/* math_erfc_fast.c — a cheap f32 erfc for GELU's 1 + erf(u) = erfc(-u) (fcmath.h, fc_math_emit_erfc_fast).
 *
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
 *   absolute error (2^-24.5) is E's relative error; erfc(x) = E for x > 0 and 2 - E for x < 0. exp is
 *   a short form for P's range [-17.9, -1.6]: n = rint(t/ln2) by a magic-number add whose low bits
 *   also carry n + 127, r = t - n ln2 in one fmuladd (n ln2's rounding is below 2^-27 relative), e^r
 *   as a degree-6 polynomial, 2^n by a shift; no overflow, underflow or NaN handling is needed there.
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
 */
#include "ir.h"
#include "math_internal.h"

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
/* 1.5 * 2^23 + 127: t/ln2 + MAGIC rounds to an integer whose low bits are n + 127, which shifted into
 * the exponent field (the magic's own bit 22 shifts out) is 2^n. */
static const double MAGIC = 0x1.8p23 + 127;

LLVMValueRef fc_math_emit_erfc_fast(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef x)
{
  FcMathB mb, *m = &mb;
  fc_mb_init(m, mod, b, LLVMTypeOf(x));
  FC_ASSERT(!m->f64);
  FcV one = fc_mb_k(m, 1), a = fc_mb_abs(m, x);

  FcV small = fc_mb_sub(m, one, fc_mb_mla(m, x, fc_mb_poly(m, fc_mb_mul(m, x, x), Q, NELEM(Q)), x));

  FcV ac = fc_mb_sel(m, fc_mb_lt(m, a, fc_mb_k(m, AMAX)), a, fc_mb_k(m, AMAX));
  FcV t = fc_mb_poly(m, ac, P, NELEM(P));
  FcV s = fc_mb_mla(m, t, fc_mb_k(m, LOG2E), fc_mb_k(m, MAGIC));
  FcV n = fc_mb_sub(m, s, fc_mb_k(m, MAGIC));
  FcV r = fc_mb_mla(m, n, fc_mb_k(m, -LN2), t);
  FcV e = fc_mb_mul(m, fc_mb_poly(m, r, E, NELEM(E)), fc_mb_flt(m, fc_mb_shl(m, fc_mb_bits(m, s), 23)));
  e = fc_mb_sel(m, fc_mb_gt(m, a, fc_mb_k(m, AMAX)), fc_mb_k(m, 0), e);
  FcV big = fc_mb_sel(m, fc_mb_lt(m, x, fc_mb_k(m, 0)), fc_mb_sub(m, fc_mb_k(m, 2), e), e);
  /* NaN fails the test and keeps small's NaN. */
  return fc_mb_sel(m, fc_mb_ge(m, a, fc_mb_k(m, SPLIT)), big, small);
}
