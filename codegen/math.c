/* math.c — exp/log families, tanh, sigmoid, softplus, erf, hyperbolic functions and pow as straight-line
 * LLVM IR (see fcmath.h for the contract and the measured errors).
 *
 * Approach, per function, for a value shape fixed by an FcMathB (math_internal.h):
 * - exp: n = rint(x/ln2), r = x - n ln2 in two Cody–Waite steps (exact first product), e^r = 1 + r +
 *   r^2 P(r) with 1 + r split exactly so the sum rounds once, then 2^n applied in two exact halves so
 *   overflow and subnormal results round once. expm1 uses 2^n ((1 - 2^-n) + r + r^2 P(r)).
 * - log: x = 2^k z with z in [sqrt(1/2), sqrt(2)), f = z - 1, s = f/(2+f), log(1+f) = 2s + s R(s^2) in
 *   fdlibm's arrangement; log1p adds the rounding error of 1 + x back as c/u.
 * - tanh/sigmoid/softplus take e^-|x| (e^2|x|) as an unevaluated pair hi + lo, so neither exp's rounding
 *   nor that of 1 + e is amplified; sinh/cosh use e^|x|/2 (exact 2^-1 scale); odd polynomials cover
 *   small arguments where cancellation would cost accuracy.
 * - erf: x + x Q(x^2) below 1; above, 1 - exp(-x^2) g(x) with x^2 as an exact double-word product and g
 *   a polynomial (piecewise for f64), fitted for the absolute error of erfc.
 * - pow (f64): log|x| as a double-word value (s = f/(2+f) as a pair, 2s + 2/3 s^3 as pairs), y*log|x| as
 *   a pair, and exp of the pair; then the C99 special cases by selects. f32 pow and the other f32
 *   functions marked "via f64" run the f64 algorithm on widened values and round once.
 * Coefficients are minimax fits from bench/math_fit.py, stored as the exact doubles it prints.
 * Special cases (NaN, ±Inf, ±0, domain errors) are applied last by selects, in reverse priority.
 */
#include <math.h>

#include "ir.h"
#include "math_internal.h"

static const double LOG2E = 0x1.71547652b82fep0;
static const double LN2 = 0x1.62e42fefa39efp-1;
/* Cody–Waite halves of ln2: the high part has few enough bits that n*hi is exact for every n used. */
static const double EXP_LN2_HI_F32 = 0x1.63p-1, EXP_LN2_LO_F32 = -0x1.bd0106p-13;
static const double LOG_LN2_HI_F32 = 0x1.62e4p-1, LOG_LN2_LO_F32 = 0x1.7f7d1cp-20;
static const double LN2_HI_F64 = 0x1.62e42feep-1, LN2_LO_F64 = 0x1.a39ef35793c76p-33;

/* e^r = 1 + r + r^2 P(r) on |r| <= ln2/2, fitted for the relative error of e^r - 1 (so expm1 can use it). */
static const double EXP_P_F32[] = {
    0x1p-1, 0x1.55552cp-3, 0x1.555502p-5, 0x1.1155a8p-7,
    0x1.6d2e4ap-10, 0x1.3b8acp-13,
};
static const double EXP_P_F64[] = {
    0x1p-1, 0x1.5555555555559p-3, 0x1.555555555555cp-5, 0x1.111111110f3e9p-7,
    0x1.6c16c16c118bcp-10, 0x1.a01a01b11ec68p-13, 0x1.a01a01c70b3p-16, 0x1.71ddf4f95b6d4p-19,
    0x1.27e48464ac1c1p-22, 0x1.af64fc26f84b9p-26, 0x1.2013494211693p-29,
};
/* log(1+f) = 2s + s R, R = z Q(z), z = s^2 <= (3 - 2 sqrt 2)^2. */
static const double LOG_Q_F32[] = {
    0x1.555554p-1, 0x1.999c26p-2, 0x1.23d3ep-2, 0x1.f13aa2p-3,
};
static const double LOG_Q_F64[] = {
    0x1.5555555555592p-1, 0x1.999999997fd37p-2, 0x1.24924941f8d39p-2, 0x1.c71c5202b1b34p-3,
    0x1.7466405c123afp-3, 0x1.39a1933299675p-3, 0x1.2f0705ace02cap-3,
};
/* tanh(x) = x + x^3 P(x^2) on |x| <= 0.625. */
static const double TANH_P_F32[] = {
    -0x1.555554p-2, 0x1.11107ap-3, -0x1.b9f188p-5, 0x1.63a54ep-6,
    -0x1.0c5eb8p-7, 0x1.1a2788p-9,
};
static const double TANH_P_F64[] = {
    -0x1.55555555554ffp-2, 0x1.111111110accdp-3, -0x1.ba1ba1b5064afp-5, 0x1.664f477adac7ap-6,
    -0x1.226e162bf7b4ap-7, 0x1.d6cf280ecd988p-9, -0x1.7d68a32fdd5bap-10, 0x1.336612e403ee6p-11,
    -0x1.df5579a8ae5e5p-13, 0x1.43912142f8ca6p-14, -0x1.0da727a621788p-16,
};
/* erf(x) = x + x Q(x^2) on [0, 1], relative error. */
static const double ERF_Q_F32[] = {
    0x1.06eba8p-3, -0x1.81273ep-2, 0x1.ce2ce6p-4, -0x1.b7f71ap-6,
    0x1.53f224p-8, -0x1.a3515ep-11, 0x1.4771f8p-14,
};
static const double ERF_Q_F64[] = {
    0x1.06eba8214db68p-3, -0x1.812746b0379bdp-2, 0x1.ce2f21a040d16p-4, -0x1.b82ce311fa93ep-6,
    0x1.565bccf92b2f9p-8, -0x1.c02db03dd71d4p-11, 0x1.f9a2baa8fedd2p-14, -0x1.f4ca4d6f3e30fp-17,
    0x1.b97fd3d992938p-20, -0x1.5c0726f04dcfbp-23, 0x1.d71b0f1b10a64p-27, -0x1.abae491c443a9p-31,
};
/* erfc(x) = e^-x^2 g(x), g a polynomial in x - mid on each piece, fitted for the absolute error of
 * erfc. Above AMAX, erf rounds to 1. */
static const double ERFC_AMAX_F32 = 3.93, ERFC_MID_F32 = 2.465;
static const double ERFC_G_F32[] = {
    0x1.b51fbep-3, -0x1.37ce1ap-4, 0x1.a68412p-6, -0x1.11fc7cp-7,
    0x1.59d44cp-9, -0x1.6ea744p-11, 0x1.0c1868p-12, -0x1.faaa2p-14,
    -0x1.99185p-15, -0x1.d524e8p-16,
};
static const double ERFC_AMAX_F64 = 5.95;
static const double ERFC_SPLIT_F64[2] = {1.7, 2.75};
static const double ERFC_MID_F64[3] = {1.35, 2.225, 4.35};
enum { ERFC_G_DEG_F64 = 13 };
static const double ERFC_G_F64[3 * (ERFC_G_DEG_F64 + 1)] = {
    /* [1, 1.7] */
    0x1.644fc73e4e441p-2, -0x1.82d6743740ae9p-3, 0x1.7cc8e330d717fp-4, -0x1.5a279cf724579p-5,
    0x1.2642b27abfed2p-6, -0x1.d817a80444f82p-8, 0x1.67cfc431e3b2p-9, -0x1.05f714c3c1cf9p-10,
    0x1.6df8ccc0e1335p-12, -0x1.ec48f79181c36p-14, 0x1.3f8ccbace2a25p-15, -0x1.91187ac458251p-17,
    0x1.fc5646409790fp-19, -0x1.3db4145dc0947p-20,
    /* [1.7, 2.75] */
    0x1.ddd6a9456228dp-3, -0x1.7114075918418p-4, 0x1.0cf4b795de22cp-5, -0x1.749cb2b70aadcp-7,
    0x1.ed8607c9909bep-9, -0x1.39e305612da2fp-10, 0x1.80dd860d666bp-12, -0x1.c84097ce8a988p-14,
    0x1.0626663bf38b8p-15, -0x1.24b720e64f38dp-17, 0x1.3db4cb09ac32p-19, -0x1.4cffe99cb7fedp-21,
    0x1.6cbcf735f301dp-23, -0x1.b5ac5cc1a072cp-25,
    /* [2.75, 5.95] */
    0x1.031928e8708c9p-3, -0x1.c61fbb65f8489p-6, 0x1.85636138e1582p-8, -0x1.4715f31cd9991p-10,
    0x1.0d7506127f38p-12, -0x1.b3e2122eedfefp-15, 0x1.5a2f9d458305cp-17, -0x1.0e0ea0540338p-19,
    0x1.ac12788ea4cdcp-22, -0x1.1f7553abce34dp-24, 0x1.902ac732d1d01p-27, -0x1.e043bb0c89ae4p-28,
    -0x1.f3996620c62d7p-30, -0x1.2a5bdb3291f1cp-31,
};
/* sinh(x) = x + x^3 P(x^2) on [0, 1]. */
static const double SINH_P_F64[] = {
    0x1.5555555555556p-3, 0x1.11111111110a6p-7, 0x1.a01a01a02899dp-13, 0x1.71de3a465b1e4p-19,
    0x1.ae64671b18f5cp-26, 0x1.611a561d87defp-33, 0x1.b4c75ab274c53p-41,
};
/* pow's log: log(1+f) = 2s + 2/3 s^3 + s^5 R2(s^2). */
static const double LOG_R2_F64[] = {
    0x1.999999999999ap-2, 0x1.249249249246fp-2, 0x1.c71c71c72273cp-3, 0x1.745d174180dep-3,
    0x1.3b13b31120579p-3, 0x1.1110946aa4f0fp-3, 0x1.e20b7b5799d6bp-4, 0x1.aaec2bc200839p-4,
    0x1.c31a605c4c7d6p-4,
};

static const double TANH_SMALL = 0.625;

/* ---- small shared pieces ---------------------------------------------------------------------------- */

static FcV k(const FcMathB *m, double v)
{
  return fc_mb_k(m, v);
}

static FcV inf(const FcMathB *m)
{
  return k(m, INFINITY);
}

static FcV qnan(const FcMathB *m)
{
  return k(m, NAN);
}

static FcV exp_p(const FcMathB *m, FcV r)
{
  return m->f64 ? fc_mb_poly(m, r, EXP_P_F64, NELEM(EXP_P_F64)) : fc_mb_poly(m, r, EXP_P_F32, NELEM(EXP_P_F32));
}

/* Rounds x*log2e to n (*ni) and returns r = x - n ln2 (Cody–Waite) as a pair: *rh = x - n ln2_hi is
 * exact, *rl = -n ln2_lo; the return value is their rounded sum. The clamp keeps n finite and small
 * for every x (NaN included); r is only meaningful inside [lo, hi]. */
static FcV exp_reduce(const FcMathB *m, FcV x, double lo, double hi, FcV *ni, FcV *rh, FcV *rl)
{
  FcV xc = fc_mb_clamp(m, x, lo, hi);
  FcV nf = fc_mb_rint(m, fc_mb_mul(m, xc, k(m, LOG2E)), ni);
  double h = m->f64 ? LN2_HI_F64 : EXP_LN2_HI_F32, l = m->f64 ? LN2_LO_F64 : EXP_LN2_LO_F32;
  *rh = fc_mb_mla(m, nf, k(m, -h), x);
  *rl = fc_mb_mul(m, nf, k(m, -l));
  return fc_mb_add(m, *rh, *rl);
}

/* t + e^r - 1 for |r| <= ln2/2, r = rh + rl: t + rh is split exactly into hi + lo and everything else is
 * added to lo, so the sum rounds once, at the end. Keeping rl apart matters where t + r cancels
 * (expm1 with n = 1); for exp (t = 1) it keeps the error near 0.5 ulp before scaling. With `tail`
 * non-NULL the final add is split too: the result is hi + *tail exactly. */
static FcV plus_expm1(const FcMathB *m, FcV t, FcV r, FcV rh, FcV rl, FcV *tail)
{
  FcV hi, lo;
  fc_mb_fast_two_sum(m, t, rh, &hi, &lo); /* t is 0 or |t| >= 1/2 > |rh| */
  FcV rest = fc_mb_mla(m, fc_mb_mul(m, r, r), exp_p(m, r), fc_mb_add(m, lo, rl));
  if (!tail) return fc_mb_add(m, hi, rest);
  FcV y;
  fc_mb_fast_two_sum(m, hi, rest, &y, tail);
  return y;
}

static double exp_lo(const FcMathB *m)
{
  return -(m->bias + m->p + 2) * LN2; /* e^lo * 4 is below half the smallest subnormal */
}

static double exp_hi(const FcMathB *m)
{
  return (m->bias + 3) * LN2; /* e^hi / 4 overflows */
}

/* e^x * 2^kadj; with lo != NULL the result is split into hi + lo (lo the rounding error of hi, scaled
 * alike, 0 where hi overflows or is flushed), which callers use to avoid amplifying exp's 0.5 ulp. */
static FcV exp_parts(const FcMathB *m, FcV x, int kadj, FcV *lo)
{
  FC_ASSERT(kadj >= -2 && kadj <= 2);
  double xlo = exp_lo(m), xhi = exp_hi(m);
  FcV ni, rh, rl, pl = NULL;
  FcV r = exp_reduce(m, x, xlo, xhi, &ni, &rh, &rl);
  FcV p = plus_expm1(m, k(m, 1), r, rh, rl, lo ? &pl : NULL);
  if (kadj) ni = fc_mb_iadd(m, ni, fc_mb_ki(m, kadj));
  FcV over = fc_mb_gt(m, x, k(m, xhi)), under = fc_mb_lt(m, x, k(m, xlo));
  FcV y = fc_mb_scale(m, p, ni);
  y = fc_mb_sel(m, over, inf(m), y);
  y = fc_mb_sel(m, under, k(m, 0), y);
  if (lo) *lo = fc_mb_sel(m, fc_mb_or(m, over, under), k(m, 0), fc_mb_scale(m, pl, ni));
  return y;
}

FcV fc_math_exp_kernel(const FcMathB *m, FcV x, int kadj)
{
  return exp_parts(m, x, kadj, NULL);
}

FcV fc_math_log_kernel(const FcMathB *m, FcV u, FcV c, FcV kextra)
{
  /* Subnormals are scaled into the normal range first. */
  FcV sub = fc_mb_lt(m, u, k(m, ldexp(1, 1 - m->bias)));
  FcV us = fc_mb_sel(m, sub, fc_mb_mul(m, u, k(m, ldexp(1, m->p))), u);
  FcV kadd = fc_mb_sel(m, sub, fc_mb_ki(m, -m->p), fc_mb_ki(m, 0));
  if (kextra) kadd = fc_mb_iadd(m, kadd, kextra);
  /* Subtracting the bits of sqrt(1/2) before the shift makes the remaining significand z land in
   * [sqrt(1/2), sqrt(2)), so |f| = |z - 1| <= 0.414 and f is exact. */
  FcV off = fc_mb_ki(m, m->f64 ? INT64_C(0x3fe6a09e667f3bcd) : 0x3f3504f3);
  FcV ix = fc_mb_bits(m, us);
  FcV kk = fc_mb_ashr(m, fc_mb_isub(m, ix, off), m->p - 1);
  FcV z = fc_mb_flt(m, fc_mb_isub(m, ix, fc_mb_shl(m, kk, m->p - 1)));
  FcV dk = fc_mb_itof(m, fc_mb_iadd(m, kk, kadd));
  FcV f = fc_mb_sub(m, z, k(m, 1));
  FcV hfsq = fc_mb_mul(m, k(m, 0.5), fc_mb_mul(m, f, f));
  FcV s = fc_mb_div(m, f, fc_mb_add(m, k(m, 2), f));
  FcV zz = fc_mb_mul(m, s, s);
  FcV q = m->f64 ? fc_mb_poly(m, zz, LOG_Q_F64, NELEM(LOG_Q_F64)) : fc_mb_poly(m, zz, LOG_Q_F32, NELEM(LOG_Q_F32));
  FcV r = fc_mb_mul(m, zz, q);
  double h = m->f64 ? LN2_HI_F64 : LOG_LN2_HI_F32, l = m->f64 ? LN2_LO_F64 : LOG_LN2_LO_F32;
  /* log = k ln2_hi - ((hfsq - (s (hfsq + R) + (k ln2_lo + c))) - f) */
  FcV lo = fc_mb_mla(m, dk, k(m, l), c);
  FcV t = fc_mb_mla(m, s, fc_mb_add(m, hfsq, r), lo);
  t = fc_mb_sub(m, fc_mb_sub(m, hfsq, t), f);
  return fc_mb_sub(m, fc_mb_mul(m, dk, k(m, h)), t);
}

/* u = 1 + v rounded and c = ((1 + v + vl) - u) / u, the correction log1p adds to log(u); vl is an optional
 * low part of v (NULL for none). */
static void one_plus(const FcMathB *m, FcV v, FcV vl, FcV *u, FcV *c)
{
  FcV one = k(m, 1);
  FcV uu = fc_mb_add(m, one, v);
  /* Both forms are exact differences (Sterbenz) in their ranges. */
  FcV small = fc_mb_sub(m, v, fc_mb_sub(m, uu, one));
  FcV big = fc_mb_sub(m, one, fc_mb_sub(m, uu, v));
  FcV e = fc_mb_sel(m, fc_mb_lt(m, v, one), small, big);
  if (vl) e = fc_mb_add(m, e, vl);
  *u = uu;
  *c = fc_mb_div(m, e, uu);
}

static FcV zero_keeps_sign(const FcMathB *m, FcV x, FcV y)
{
  return fc_mb_sel(m, fc_mb_eq(m, x, k(m, 0)), x, y);
}

static FcV nan_passes(const FcMathB *m, FcV x, FcV y)
{
  return fc_mb_sel(m, fc_mb_isnan(m, x), x, y);
}

/* ---- exp family ------------------------------------------------------------------------------------- */

static FcV emit_exp(const FcMathB *m, FcV x)
{
  return fc_math_exp_kernel(m, x, 0);
}

static FcV emit_expm1(const FcMathB *m, FcV x)
{
  double lo = -(m->p + 3) * LN2, hi = exp_hi(m);
  FcV ni, rh, rl;
  FcV r = exp_reduce(m, x, lo, hi, &ni, &rh, &rl);
  /* For n >= -1: 2^n ((1 - 2^-n) + e^r - 1) with 1 - 2^-n as an exact pair (th, tl), rounding once
   * before the exact scaling. For n <= -2, 2^n e^r <= 0.36 and 2^n e^r - 1 is as good. */
  FcV in_a = fc_mb_ilt(m, fc_mb_ki(m, -2), ni);
  FcV na = fc_mb_sel(m, in_a, ni, fc_mb_ki(m, 0));
  FcV th, tl;
  fc_mb_fast_two_sum(m, k(m, 1), fc_mb_neg(m, fc_mb_scale(m, k(m, 1), fc_mb_isub(m, fc_mb_ki(m, 0), na))), &th, &tl);
  FcV ya = fc_mb_scale(m, plus_expm1(m, th, r, rh, fc_mb_add(m, rl, tl), NULL), na);
  FcV yb = fc_mb_sub(m, fc_mb_scale(m, plus_expm1(m, k(m, 1), r, rh, rl, NULL), ni), k(m, 1));
  FcV y = fc_mb_sel(m, in_a, ya, yb);
  y = fc_mb_sel(m, fc_mb_gt(m, x, k(m, hi)), inf(m), y);
  y = fc_mb_sel(m, fc_mb_lt(m, x, k(m, lo)), k(m, -1), y);
  return zero_keeps_sign(m, x, y);
}

/* ---- log family ------------------------------------------------------------------------------------- */

static FcV emit_log(const FcMathB *m, FcV x)
{
  FcV y = fc_math_log_kernel(m, x, k(m, 0), NULL);
  y = fc_mb_sel(m, fc_mb_eq(m, x, inf(m)), x, y);
  y = fc_mb_sel(m, fc_mb_eq(m, x, k(m, 0)), k(m, -INFINITY), y);
  y = fc_mb_sel(m, fc_mb_lt(m, x, k(m, 0)), qnan(m), y);
  return nan_passes(m, x, y);
}

static FcV emit_log1p(const FcMathB *m, FcV x)
{
  FcV u, c;
  one_plus(m, x, NULL, &u, &c);
  FcV y = fc_math_log_kernel(m, u, c, NULL);
  y = fc_mb_sel(m, fc_mb_eq(m, x, inf(m)), x, y);
  y = fc_mb_sel(m, fc_mb_eq(m, x, k(m, -1)), k(m, -INFINITY), y);
  y = fc_mb_sel(m, fc_mb_lt(m, x, k(m, -1)), qnan(m), y);
  y = zero_keeps_sign(m, x, y);
  return nan_passes(m, x, y);
}

/* ---- tanh, sigmoid, softplus ------------------------------------------------------------------------ */

static FcV emit_tanh(const FcMathB *m, FcV x)
{
  FcV a = fc_mb_abs(m, x);
  FcV x2 = fc_mb_mul(m, x, x);
  FcV p = m->f64 ? fc_mb_poly(m, x2, TANH_P_F64, NELEM(TANH_P_F64))
                 : fc_mb_poly(m, x2, TANH_P_F32, NELEM(TANH_P_F32));
  FcV small = fc_mb_mla(m, fc_mb_mul(m, x, x2), p, x);
  /* 1 - 2/(e + 1), e = e^2a = eh + el: with (dh, dl) = eh + 1 exactly and t = 2/dh,
   * 2/(e + 1) = t - t^2/2 (dl + el), and 1 - t is split exactly, so only the last add rounds. Beyond
   * 22 the result is 1 for both types; clamping keeps e finite (NaN passes the ordered test). */
  FcV ac = fc_mb_sel(m, fc_mb_gt(m, a, k(m, 22)), k(m, 22), a);
  FcV el;
  FcV e = exp_parts(m, fc_mb_add(m, ac, ac), 0, &el);
  FcV dh, dl, bh, bl;
  fc_mb_fast_two_sum(m, e, k(m, 1), &dh, &dl);
  FcV t = fc_mb_div(m, k(m, 2), dh);
  fc_mb_fast_two_sum(m, k(m, 1), fc_mb_neg(m, t), &bh, &bl);
  FcV big = fc_mb_add(m, bh, fc_mb_mla(m, fc_mb_mul(m, fc_mb_mul(m, t, t), k(m, 0.5)), fc_mb_add(m, dl, el), bl));
  FcV y = fc_mb_sel(m, fc_mb_lt(m, a, k(m, TANH_SMALL)), small, fc_mb_copysign(m, big, x));
  return zero_keeps_sign(m, x, y);
}

static FcV emit_sigmoid(const FcMathB *m, FcV x)
{
  /* e = e^-|x| <= 1 never overflows: 1/(1+e) for x >= 0, e/(1+e) for x < 0. With e = eh + el,
   * 1 + eh = dh + dl exactly and t = num/dh: num/(1 + e) = t + (numl - t (dl + el))/dh, and
   * 1/dh = 1 - t (x < 0) or t (x >= 0) to first order, so no second division is needed and neither
   * exp's rounding nor that of 1 + e reaches the result. */
  FcV el;
  FcV e = exp_parts(m, fc_mb_neg(m, fc_mb_abs(m, x)), 0, &el);
  FcV neg = fc_mb_lt(m, x, k(m, 0));
  FcV num = fc_mb_sel(m, neg, e, k(m, 1));
  FcV numl = fc_mb_sel(m, neg, el, k(m, 0));
  FcV dh, dl;
  fc_mb_fast_two_sum(m, k(m, 1), e, &dh, &dl);
  FcV t = fc_mb_div(m, num, dh);
  FcV inv = fc_mb_sel(m, neg, fc_mb_sub(m, k(m, 1), t), t);
  FcV corr = fc_mb_mla(m, fc_mb_neg(m, t), fc_mb_add(m, dl, el), numl);
  return fc_mb_mla(m, corr, inv, t);
}

static FcV emit_softplus(const FcMathB *m, FcV x)
{
  /* max(x, 0) + log1p(e^-|x|); the log1p argument is in [0, 1], so no special cases reach it. */
  FcV el;
  FcV e = exp_parts(m, fc_mb_neg(m, fc_mb_abs(m, x)), 0, &el);
  FcV u, c;
  one_plus(m, e, el, &u, &c);
  FcV l = fc_math_log_kernel(m, u, c, NULL);
  FcV pos = fc_mb_sel(m, fc_mb_gt(m, x, k(m, 0)), x, k(m, 0));
  return fc_mb_add(m, pos, l);
}

/* ---- erf -------------------------------------------------------------------------------------------- */

static FcV emit_erf(const FcMathB *m, FcV x)
{
  FcV a = fc_mb_abs(m, x);
  FcV x2 = fc_mb_mul(m, x, x);
  FcV q = m->f64 ? fc_mb_poly(m, x2, ERF_Q_F64, NELEM(ERF_Q_F64)) : fc_mb_poly(m, x2, ERF_Q_F32, NELEM(ERF_Q_F32));
  FcV small = fc_mb_mla(m, x, q, x);

  /* erfc(a) = e^-a^2 g(a): a^2 = h + l exactly, e^-(h+l) = e^-h (1 - l). */
  double amax = m->f64 ? ERFC_AMAX_F64 : ERFC_AMAX_F32;
  FcV ac = fc_mb_sel(m, fc_mb_lt(m, a, k(m, amax)), a, k(m, amax));
  FcV h, l;
  fc_mb_two_prod(m, ac, ac, &h, &l);
  FcV e = fc_math_exp_kernel(m, fc_mb_neg(m, h), 0);
  e = fc_mb_mla(m, fc_mb_neg(m, e), l, e);
  FcV g;
  if (m->f64) {
    FcV in_seg[2] = {fc_mb_ge(m, ac, k(m, ERFC_SPLIT_F64[0])), fc_mb_ge(m, ac, k(m, ERFC_SPLIT_F64[1]))};
    FcV c = fc_mb_sel(m, in_seg[1], k(m, ERFC_MID_F64[2]),
                      fc_mb_sel(m, in_seg[0], k(m, ERFC_MID_F64[1]), k(m, ERFC_MID_F64[0])));
    g = fc_mb_poly_pw(m, fc_mb_sub(m, ac, c), ERFC_G_F64, ERFC_G_DEG_F64 + 1, 3, in_seg);
  } else {
    g = fc_mb_poly(m, fc_mb_sub(m, ac, k(m, ERFC_MID_F32)), ERFC_G_F32, NELEM(ERFC_G_F32));
  }
  FcV big = fc_mb_sub(m, k(m, 1), fc_mb_mul(m, e, g));
  big = fc_mb_sel(m, fc_mb_ge(m, a, k(m, amax)), k(m, 1), big);
  /* a >= 1 also holds for +-inf; NaN fails both tests and keeps small's NaN. */
  return zero_keeps_sign(m, x, fc_mb_sel(m, fc_mb_ge(m, a, k(m, 1)), fc_mb_copysign(m, big, x), small));
}

/* ---- hyperbolic ------------------------------------------------------------------------------------- */

static FcV emit_sinh_cosh(const FcMathB *m, FcV x, bool is_cosh)
{
  FcV a = fc_mb_abs(m, x);
  FcV e = fc_math_exp_kernel(m, a, -1); /* e^a / 2, exact scaling, so sinh/cosh overflow only when due */
  FcV inv = fc_mb_div(m, k(m, 0.25), e);
  if (is_cosh) return fc_mb_add(m, e, inv);
  FcV x2 = fc_mb_mul(m, x, x);
  FcV small = fc_mb_mla(m, fc_mb_mul(m, x, x2), fc_mb_poly(m, x2, SINH_P_F64, NELEM(SINH_P_F64)), x);
  FcV big = fc_mb_copysign(m, fc_mb_sub(m, e, inv), x);
  return fc_mb_sel(m, fc_mb_lt(m, a, k(m, 1)), small, big);
}

/* log of the three forms of asinh/acosh: small -> log1p(v); mid -> log(u); big -> log(a) + ln2. */
static FcV log_forms(const FcMathB *m, FcV is_small, FcV v, FcV is_big, FcV a, FcV u_mid)
{
  FcV us, cs;
  one_plus(m, v, NULL, &us, &cs);
  FcV u = fc_mb_sel(m, is_small, us, fc_mb_sel(m, is_big, a, u_mid));
  FcV c = fc_mb_sel(m, is_small, cs, k(m, 0));
  FcV kx = fc_mb_sel(m, is_big, fc_mb_ki(m, 1), fc_mb_ki(m, 0));
  return fc_math_log_kernel(m, u, c, kx);
}

static const double BIG_ARG = 0x1p28; /* beyond, sqrt(x^2 +- 1) = x in double */

static FcV emit_asinh(const FcMathB *m, FcV x)
{
  FcV a = fc_mb_abs(m, x);
  FcV a2 = fc_mb_mul(m, a, a);
  FcV sq = fc_mb_sqrt(m, fc_mb_add(m, k(m, 1), a2));
  FcV v = fc_mb_add(m, a, fc_mb_div(m, a2, fc_mb_add(m, k(m, 1), sq)));
  FcV mid = fc_mb_add(m, fc_mb_add(m, a, a), fc_mb_div(m, k(m, 1), fc_mb_add(m, sq, a)));
  FcV y = log_forms(m, fc_mb_le(m, a, k(m, 2)), v, fc_mb_ge(m, a, k(m, BIG_ARG)), a, mid);
  y = fc_mb_copysign(m, y, x);
  y = fc_mb_sel(m, fc_mb_eq(m, a, inf(m)), x, y);
  y = zero_keeps_sign(m, x, y);
  return nan_passes(m, x, y);
}

static FcV emit_acosh(const FcMathB *m, FcV x)
{
  FcV t = fc_mb_sub(m, x, k(m, 1));
  FcV v = fc_mb_add(m, t, fc_mb_sqrt(m, fc_mb_mla(m, t, t, fc_mb_add(m, t, t))));
  FcV sq = fc_mb_sqrt(m, fc_mb_mla(m, x, x, k(m, -1)));
  FcV mid = fc_mb_sub(m, fc_mb_add(m, x, x), fc_mb_div(m, k(m, 1), fc_mb_add(m, x, sq)));
  FcV y = log_forms(m, fc_mb_le(m, x, k(m, 2)), v, fc_mb_ge(m, x, k(m, BIG_ARG)), x, mid);
  y = fc_mb_sel(m, fc_mb_eq(m, x, inf(m)), x, y);
  y = fc_mb_sel(m, fc_mb_lt(m, x, k(m, 1)), qnan(m), y);
  return nan_passes(m, x, y);
}

static FcV emit_atanh(const FcMathB *m, FcV x)
{
  /* 0.5 log1p(2a + 2a^2/(1-a)) below 0.5, 0.5 log1p(2a/(1-a)) above: one division either way. */
  FcV a = fc_mb_abs(m, x);
  FcV t = fc_mb_add(m, a, a);
  FcV lt = fc_mb_lt(m, a, k(m, 0.5));
  FcV q = fc_mb_div(m, fc_mb_sel(m, lt, fc_mb_mul(m, t, a), t), fc_mb_sub(m, k(m, 1), a));
  FcV v = fc_mb_sel(m, lt, fc_mb_add(m, t, q), q);
  FcV u, c;
  one_plus(m, v, NULL, &u, &c);
  FcV y = fc_mb_mul(m, k(m, 0.5), fc_math_log_kernel(m, u, c, NULL));
  y = fc_mb_sel(m, fc_mb_eq(m, a, k(m, 1)), inf(m), y);
  y = fc_mb_sel(m, fc_mb_gt(m, a, k(m, 1)), qnan(m), y);
  y = fc_mb_copysign(m, y, x);
  y = zero_keeps_sign(m, x, y);
  return nan_passes(m, x, y);
}

/* ---- pow -------------------------------------------------------------------------------------------- */

/* log(a) as a double-word pair for finite a > 0: relative error about 2^-68. */
static void log_dd(const FcMathB *m, FcV a, FcV *lh, FcV *ll)
{
  FcV sub = fc_mb_lt(m, a, k(m, ldexp(1, 1 - m->bias)));
  FcV as = fc_mb_sel(m, sub, fc_mb_mul(m, a, k(m, ldexp(1, m->p))), a);
  FcV kadd = fc_mb_sel(m, sub, fc_mb_ki(m, -m->p), fc_mb_ki(m, 0));
  FcV ix = fc_mb_bits(m, as);
  FcV kk = fc_mb_ashr(m, fc_mb_isub(m, ix, fc_mb_ki(m, INT64_C(0x3fe6a09e667f3bcd))), m->p - 1);
  FcV z = fc_mb_flt(m, fc_mb_isub(m, ix, fc_mb_shl(m, kk, m->p - 1)));
  FcV dk = fc_mb_itof(m, fc_mb_iadd(m, kk, kadd));
  FcV f = fc_mb_sub(m, z, k(m, 1));
  /* s = f / (2 + f) as a pair. */
  FcV dh, dl;
  fc_mb_fast_two_sum(m, k(m, 2), f, &dh, &dl);
  FcV sh = fc_mb_div(m, f, dh);
  FcV p, pe;
  fc_mb_two_prod(m, sh, dh, &p, &pe);
  FcV rem = fc_mb_sub(m, fc_mb_sub(m, fc_mb_sub(m, f, p), pe), fc_mb_mul(m, sh, dl));
  FcV sl = fc_mb_div(m, rem, dh);
  /* log(1+f) = 2s + 2/3 s^3 + s^5 R2(s^2); the first two terms as pairs, the rest is below 2^-12 of
   * the total and a double suffices. */
  FcV s2h, s2l, s3h, s3l, t3h, t3l;
  fc_mb_dd_mul(m, sh, sl, sh, sl, &s2h, &s2l);
  fc_mb_dd_mul(m, s2h, s2l, sh, sl, &s3h, &s3l);
  fc_mb_dd_mul(m, s3h, s3l, k(m, 0x1.5555555555555p-1), k(m, 0x1.5555555555555p-55), &t3h, &t3l);
  FcV t5 = fc_mb_mul(m, fc_mb_mul(m, s3h, s2h), fc_mb_poly(m, s2h, LOG_R2_F64, NELEM(LOG_R2_F64)));
  FcV h, e1, e2;
  fc_mb_two_sum(m, fc_mb_mul(m, dk, k(m, LN2_HI_F64)), fc_mb_add(m, sh, sh), &h, &e1);
  fc_mb_two_sum(m, h, t3h, &h, &e2);
  FcV lo = fc_mb_add(m, fc_mb_add(m, sl, sl), t3l);
  lo = fc_mb_add(m, lo, fc_mb_mla(m, dk, k(m, LN2_LO_F64), t5));
  lo = fc_mb_add(m, lo, fc_mb_add(m, e1, e2));
  fc_mb_fast_two_sum(m, h, lo, lh, ll);
}

/* e^(zh + zl) for a normalised pair, with overflow and underflow as in exp. */
static FcV exp_dd(const FcMathB *m, FcV zh, FcV zl)
{
  double zlo = exp_lo(m), zhi = exp_hi(m);
  FcV zc = fc_mb_clamp(m, zh, zlo, zhi);
  FcV ni;
  FcV nf = fc_mb_rint(m, fc_mb_mul(m, zc, k(m, LOG2E)), &ni);
  FcV r = fc_mb_mla(m, nf, k(m, -LN2_HI_F64), zh);
  FcV rh, rl;
  fc_mb_two_sum(m, r, fc_mb_mul(m, nf, k(m, -LN2_LO_F64)), &rh, &rl);
  rl = fc_mb_add(m, rl, zl);
  /* e^(rh + rl) = e^rh + rl e^rh to first order in rl (rl can reach 2^-44: the low part of y log|x|),
   * with e^rh = hi + inner; summed so it rounds once. */
  FcV hi, lo;
  fc_mb_fast_two_sum(m, k(m, 1), rh, &hi, &lo);
  FcV inner = fc_mb_mla(m, fc_mb_mul(m, rh, rh), exp_p(m, rh), lo);
  inner = fc_mb_mla(m, rl, fc_mb_add(m, hi, inner), inner);
  FcV y = fc_mb_scale(m, fc_mb_add(m, hi, inner), ni);
  y = fc_mb_sel(m, fc_mb_gt(m, zh, k(m, zhi)), inf(m), y);
  return fc_mb_sel(m, fc_mb_lt(m, zh, k(m, zlo)), k(m, 0), y);
}

/* Integer and odd-integer tests of y from its bits (exact for every y, inf counts as an even integer). */
static void int_tests(const FcMathB *m, FcV y, FcV *is_int, FcV *is_odd)
{
  int mb = m->p - 1;
  FcV yb = fc_mb_bits(m, y);
  FcV e = fc_mb_isub(m, fc_mb_and(m, fc_mb_lshr(m, yb, mb), fc_mb_ki(m, 2 * m->bias + 1)), fc_mb_ki(m, m->bias));
  FcV ge0 = fc_mb_not(m, fc_mb_ilt(m, e, fc_mb_ki(m, 0)));
  FcV whole = fc_mb_not(m, fc_mb_ilt(m, e, fc_mb_ki(m, mb))); /* e >= p-1: no fraction bits */
  /* Fraction bits below 2^0 are the low (p-1-e) significand bits; the shift is clamped to [0, p-1]. */
  FcV sh = fc_mb_isub(m, fc_mb_ki(m, mb), e);
  sh = fc_mb_sel(m, ge0, fc_mb_sel(m, whole, fc_mb_ki(m, 0), sh), fc_mb_ki(m, mb));
  FcV one = fc_mb_ki(m, 1);
  FcV mask = fc_mb_isub(m, LLVMBuildShl(m->b, one, sh, ""), one);
  FcV frac0 = fc_mb_ieq(m, fc_mb_and(m, yb, mask), fc_mb_ki(m, 0));
  FcV unit = fc_mb_and(m, LLVMBuildLShr(m->b, yb, sh, ""), one);
  FcV zero = fc_mb_eq(m, y, k(m, 0));
  *is_int = fc_mb_or(m, zero, fc_mb_or(m, whole, fc_mb_and(m, ge0, frac0)));
  /* e == p-1 still has its units bit in the significand; e >= p makes every value even. */
  FcV odd_range = fc_mb_and(m, ge0, fc_mb_ilt(m, e, fc_mb_ki(m, m->p)));
  *is_odd = fc_mb_and(m, fc_mb_and(m, odd_range, frac0), fc_mb_ieq(m, unit, one));
}

/* pow's C99 special cases around core = |x|^y. */
static FcV pow_specials(const FcMathB *m, FcV x, FcV y, FcV core)
{
  FcV is_int, is_odd;
  int_tests(m, y, &is_int, &is_odd);
  FcV ax = fc_mb_abs(m, x);
  FcV xneg = fc_mb_ilt(m, fc_mb_bits(m, x), fc_mb_ki(m, 0)); /* sign bit, so -0 counts */
  FcV neg = fc_mb_and(m, xneg, is_odd);
  FcV ylt0 = fc_mb_lt(m, y, k(m, 0));
  FcV r = fc_mb_negif(m, neg, core);
  r = fc_mb_sel(m, fc_mb_and(m, fc_mb_lt(m, x, k(m, 0)), fc_mb_not(m, is_int)), qnan(m), r);
  FcV ax_inf = fc_mb_eq(m, ax, inf(m));
  FcV zero_or_inf = fc_mb_or(m, fc_mb_eq(m, ax, k(m, 0)), ax_inf);
  FcV mag = fc_mb_sel(m, fc_mb_xor(m, ylt0, ax_inf), inf(m), k(m, 0));
  r = fc_mb_sel(m, zero_or_inf, fc_mb_negif(m, neg, mag), r);
  FcV magy = fc_mb_sel(m, fc_mb_eq(m, ax, k(m, 1)), k(m, 1),
                       fc_mb_sel(m, fc_mb_xor(m, fc_mb_lt(m, ax, k(m, 1)), ylt0), k(m, 0), inf(m)));
  r = fc_mb_sel(m, fc_mb_eq(m, fc_mb_abs(m, y), inf(m)), magy, r);
  r = fc_mb_sel(m, fc_mb_or(m, fc_mb_isnan(m, x), fc_mb_isnan(m, y)), fc_mb_add(m, x, y), r);
  return fc_mb_sel(m, fc_mb_or(m, fc_mb_eq(m, x, k(m, 1)), fc_mb_eq(m, y, k(m, 0))), k(m, 1), r);
}

static FcV emit_pow(const FcMathB *m, FcV x, FcV y)
{
  FC_ASSERT(m->f64);
  FcV ax = fc_mb_abs(m, x);
  FcV lh, ll, zh, ze;
  log_dd(m, ax, &lh, &ll);
  fc_mb_two_prod(m, y, lh, &zh, &ze);
  ze = fc_mb_mla(m, y, ll, ze);
  /* Where y log|x| overflows the pair arithmetic gives NaN; the plain product's +-inf (or its size)
   * already decides the result there. */
  FcV z0 = zh;
  fc_mb_fast_two_sum(m, zh, ze, &zh, &ze);
  FcV fine = fc_mb_lt(m, fc_mb_abs(m, z0), k(m, 0x1p12));
  zh = fc_mb_sel(m, fine, zh, z0);
  ze = fc_mb_sel(m, fine, ze, k(m, 0));
  return pow_specials(m, x, y, exp_dd(m, zh, ze));
}

/* f32 pow in double: log|x| to 2^-52, y log|x| to 2^-51 relative, which is ample for a float result. */
static FcV emit_pow_f32_in_f64(const FcMathB *d, FcV x, FcV y)
{
  FcV l = fc_math_log_kernel(d, fc_mb_abs(d, x), k(d, 0), NULL);
  FcV core = fc_math_exp_kernel(d, fc_mb_mul(d, y, l), 0);
  return pow_specials(d, x, y, core);
}

/* ---- dispatch --------------------------------------------------------------------------------------- */

/* Names, the asserted error bounds of fcmath.h's table, and which f32 functions run in double. */
static const struct {
  const char *name;
  double ulp_f32, ulp_f64;
  bool f32_via_f64;
} FN_INFO[FC_MATH_COUNT] = {
    [FC_MATH_EXP] = {"exp", 1, 1, false},
    [FC_MATH_EXPM1] = {"expm1", 1.5, 1.5, false},
    [FC_MATH_LOG] = {"log", 1, 1, false},
    [FC_MATH_LOG1P] = {"log1p", 1, 1, false},
    [FC_MATH_TANH] = {"tanh", 1, 1, false},
    [FC_MATH_SIGMOID] = {"sigmoid", 1.5, 1.5, false},
    [FC_MATH_SOFTPLUS] = {"softplus", 1.5, 1.5, false},
    [FC_MATH_ERF] = {"erf", 1.5, 1.5, false},
    [FC_MATH_SIN] = {"sin", 1, 1, true},
    [FC_MATH_COS] = {"cos", 1, 1, true},
    [FC_MATH_TAN] = {"tan", 1, 2.5, true},
    [FC_MATH_ASIN] = {"asin", 1, 1, true},
    [FC_MATH_ACOS] = {"acos", 1, 1, true},
    [FC_MATH_ATAN] = {"atan", 1, 2, true},
    [FC_MATH_SINH] = {"sinh", 1, 2, true},
    [FC_MATH_COSH] = {"cosh", 1, 1.5, true},
    [FC_MATH_ASINH] = {"asinh", 1, 2, true},
    [FC_MATH_ACOSH] = {"acosh", 1, 2, true},
    [FC_MATH_ATANH] = {"atanh", 1, 2, true},
    [FC_MATH_POW] = {"pow", 1, 1, true},
};

const char *fc_math_name(FcMathFn fn)
{
  FC_ASSERT(fn >= 0 && fn < FC_MATH_COUNT);
  return FN_INFO[fn].name;
}

int fc_math_arity(FcMathFn fn)
{
  return fn == FC_MATH_POW ? 2 : 1;
}

double fc_math_max_ulp(FcMathFn fn, bool f64)
{
  FC_ASSERT(fn >= 0 && fn < FC_MATH_COUNT);
  return f64 ? FN_INFO[fn].ulp_f64 : FN_INFO[fn].ulp_f32;
}

static FcV emit(const FcMathB *m, FcMathFn fn, FcV x, FcV y)
{
  switch (fn) {
  case FC_MATH_EXP: return emit_exp(m, x);
  case FC_MATH_EXPM1: return emit_expm1(m, x);
  case FC_MATH_LOG: return emit_log(m, x);
  case FC_MATH_LOG1P: return emit_log1p(m, x);
  case FC_MATH_TANH: return emit_tanh(m, x);
  case FC_MATH_SIGMOID: return emit_sigmoid(m, x);
  case FC_MATH_SOFTPLUS: return emit_softplus(m, x);
  case FC_MATH_ERF: return emit_erf(m, x);
  case FC_MATH_SIN:
  case FC_MATH_COS:
  case FC_MATH_TAN: return fc_math_emit_trig(m, fn, x);
  case FC_MATH_ASIN:
  case FC_MATH_ACOS:
  case FC_MATH_ATAN: return fc_math_emit_atrig(m, fn, x);
  case FC_MATH_SINH: return emit_sinh_cosh(m, x, false);
  case FC_MATH_COSH: return emit_sinh_cosh(m, x, true);
  case FC_MATH_ASINH: return emit_asinh(m, x);
  case FC_MATH_ACOSH: return emit_acosh(m, x);
  case FC_MATH_ATANH: return emit_atanh(m, x);
  case FC_MATH_POW: return emit_pow(m, x, y);
  case FC_MATH_COUNT: break;
  }
  FC_UNREACHABLE();
}

LLVMValueRef fc_math_emit(LLVMModuleRef mod, LLVMBuilderRef b, FcMathFn fn, LLVMValueRef x, LLVMValueRef y)
{
  FC_ASSERT(fn >= 0 && fn < FC_MATH_COUNT && x != NULL);
  FcMathB m;
  fc_mb_init(&m, mod, b, LLVMTypeOf(x));
  if (fn == FC_MATH_POW) FC_ASSERT(y != NULL && LLVMTypeOf(y) == LLVMTypeOf(x));
  /* f32 sin/cos/tan reduce the float argument exactly themselves and only evaluate in double. */
  bool trig = fn == FC_MATH_SIN || fn == FC_MATH_COS || fn == FC_MATH_TAN;
  if (m.f64 || !FN_INFO[fn].f32_via_f64 || trig) return emit(&m, fn, x, y);
  FcMathB d;
  fc_mb_retype(&m, &d, true);
  FcV xd = fc_mb_widen(&d, x);
  FcV r = fn == FC_MATH_POW ? emit_pow_f32_in_f64(&d, xd, fc_mb_widen(&d, y)) : emit(&d, fn, xd, NULL);
  return fc_mb_narrow(&m, r);
}
