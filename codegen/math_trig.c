/* math_trig.c — sin, cos, tan, asin, acos, atan as straight-line LLVM IR (see fcmath.h).
 *
 * sin/cos/tan reduce x to r = x - n pi/2, |r| <= pi/4, evaluate sin and cos kernels (odd and even
 * minimax polynomials, fdlibm's arrangement for cos) and pick by the quadrant n mod 4; tan is
 * sin/cos of r (or -cos/sin in odd quadrants).
 * - f64: Cody–Waite with pi/2 in five parts (four of 25 bits, so n*part is exact for n < 2^28), the
 *   subtractions kept as a double-word pair: exact enough for |x| < 2^28. Above, Payne–Hanek over
 *   26-bit chunks of 2/pi (ph_reduce_f64). Both are computed and the lanes pick one (straight-line
 *   code); fcmath.h documents the large-argument accuracy.
 * - f32: an exact Payne–Hanek reduction for every float, done in double. With x = M 2^(e-150) (M a
 *   24-bit integer), x 2/pi mod 4 = M W_e mod 4 where W_e = (2^(e-150) 2/pi) mod 4 depends only on the
 *   exponent. W_e is tabulated as three 29-bit chunks (built here from the bits of 2/pi), so each
 *   M * chunk is exact in double; the sum gives the reduced argument to ~2^-62 absolute, far below the
 *   worst float case (~2^-30). The kernels then run in double and the result is rounded once.
 * asin/acos/atan (f64; f32 runs them in double) follow fdlibm: asin/acos use one polynomial in
 * z = x^2 (|x| < 1/2) or z = (1-|x|)/2 with s = sqrt(z) split for the extra bits; atan reduces to
 * |t| <= tan(pi/8) with t = x, (x-1)/(x+1) or -1/x.
 */
#include <math.h>

#include "ir.h"
#include "math_internal.h"

/* pi/2 in five parts: four of at most 25 significant bits, then the rest rounded. */
static const double PIO2_PART[5] = {0x1.921fb5p+0, 0x1.110b46p-26, 0x1.1a6263p-54, 0x1.8a2e03p-81,
                                    0x1.c1cd129024e09p-107};
static const double PIO2_HI = 0x1.921fb54442d18p+0, PIO2_LO = 0x1.1a62633145c07p-54;
static const double PIO4_HI = 0x1.921fb54442d18p-1;
static const double PI_HI = 0x1.921fb54442d18p+1;
static const double TWO_OVER_PI = 0x1.45f306dc9c883p-1;
/* Cody–Waite is exact for |x| < CW_LIMIT; the clamp only keeps its integer path defined elsewhere. */
static const double CW_LIMIT = 0x1p28, CW_CLAMP = 0x1p50;

/* The bits of 2/pi, most significant first (2/pi = 0.a2f9836e...), enough for every double exponent. */
static const uint32_t TWO_OVER_PI_BITS[40] = {
    0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0, 0xdb629599, 0x3c439041, 0xfe5163ab, 0xdebbc561,
    0xb7246e3a, 0x424dd2e0, 0x06492eea, 0x09d1921c, 0xfe1deb1c, 0xb129a73e, 0xe88235f5, 0x2ebb4484,
    0xe99c7026, 0xb45f7e41, 0x3991d639, 0x835339f4, 0x9c845f8b, 0xbdf9283b, 0x1ff897ff, 0xde05980f,
    0xef2f118b, 0x5a0a6d1f, 0x6d367ecf, 0x27cb09b7, 0x4f463f66, 0x9e5fea2d, 0x7527bac7, 0xebe5f17b,
    0x3d0739f7, 0x8a5292ea, 0x6bfb5fb1, 0x1f8d5d08, 0x56033046, 0xfc7b6bab, 0xf0cfbc20, 0x9af4361d,
};

/* sin(r) = r + r^3 S(r^2), cos(r) = 1 - r^2/2 + r^4 C(r^2) on |r| <= pi/4. */
static const double SIN_S_F64[] = {
    -0x1.5555555555548p-3, 0x1.111111110f7bp-7, -0x1.a01a019bf9b6p-13, 0x1.71de356408ad5p-19,
    -0x1.ae5e57812c6fep-26, 0x1.5d8ee79c06221p-33,
};
static const double COS_C_F64[] = {
    0x1.555555555554bp-5, -0x1.6c16c16c14f6cp-10, 0x1.a01a019c80966p-16, -0x1.27e4f7e80273p-22,
    0x1.1ee9d5c91b1fp-29, -0x1.8fa3958a5d08ap-37,
};
/* asin(x) = x + x^3 P(x^2) on |x| <= 1/2. */
static const double ASIN_P_F64[] = {
    0x1.5555555555577p-3, 0x1.333333332e101p-4, 0x1.6db6db72142fdp-5, 0x1.f1c71a9463de2p-6,
    0x1.6e8bdeede92fep-6, 0x1.1c49ef82a427p-6, 0x1.ca1f9ff073d73p-7, 0x1.7584fec87b06cp-7,
    0x1.613f5ddc81dc7p-7, 0x1.e5cdc1210567cp-9, 0x1.63a7d218d855p-6, -0x1.580cb2f1ae21ap-6,
    0x1.0b4b41a3e06c1p-5,
};
/* atan(t) = t + t^3 P(t^2) on |t| <= tan(pi/8). */
static const double ATAN_P_F64[] = {
    -0x1.555555555553cp-2, 0x1.9999999995733p-3, -0x1.24924922a651cp-3, 0x1.c71c70e36ef6cp-4,
    -0x1.745cf8932189fp-4, 0x1.3b11141ec014dp-4, -0x1.10eb80567c8efp-4, 0x1.df0c250654d29p-5,
    -0x1.9cc4a4530e4c3p-5, 0x1.37b1fb9176eb3p-5, -0x1.251c71a0d365dp-6,
};

static FcV k(const FcMathB *m, double v)
{
  return fc_mb_k(m, v);
}

/* ---- kernels on |r| <= pi/4, r = rh + rl ------------------------------------------------------------ */

static FcV sin_kernel(const FcMathB *m, FcV rh, FcV rl)
{
  /* sin(rh + rl) = rh + (rh z S(z) + rl (1 - z/2)) to first order in rl. */
  FcV z = fc_mb_mul(m, rh, rh);
  FcV s = fc_mb_mul(m, fc_mb_mul(m, rh, z), fc_mb_poly(m, z, SIN_S_F64, NELEM(SIN_S_F64)));
  FcV t = fc_mb_mla(m, rl, fc_mb_mla(m, k(m, -0.5), z, k(m, 1)), s);
  return fc_mb_add(m, rh, t);
}

static FcV cos_kernel(const FcMathB *m, FcV rh, FcV rl)
{
  /* cos(rh + rl) = 1 - z/2 + z^2 C(z) - rh rl. w = 1 - z/2 rounds; ((1 - w) - z/2) is its exact
   * error, added back with the small terms (fdlibm's __kernel_cos). */
  FcV z = fc_mb_mul(m, rh, rh);
  FcV hz = fc_mb_mul(m, k(m, 0.5), z);
  FcV w = fc_mb_sub(m, k(m, 1), hz);
  FcV c = fc_mb_mul(m, fc_mb_mul(m, z, z), fc_mb_poly(m, z, COS_C_F64, NELEM(COS_C_F64)));
  FcV corr = fc_mb_sub(m, fc_mb_sub(m, k(m, 1), w), hz);
  corr = fc_mb_add(m, corr, fc_mb_sub(m, c, fc_mb_mul(m, rh, rl)));
  return fc_mb_add(m, w, corr);
}

/* sin, cos or tan of x from the reduced pair and quadrant, in the double context d. */
static FcV quadrant_select(const FcMathB *d, FcMathFn fn, FcV rh, FcV rl, FcV q)
{
  FcV s = sin_kernel(d, rh, rl);
  FcV c = cos_kernel(d, rh, rl);
  FcV odd = fc_mb_ieq(d, fc_mb_and(d, q, fc_mb_ki(d, 1)), fc_mb_ki(d, 1));
  if (fn == FC_MATH_TAN) {
    FcV num = fc_mb_sel(d, odd, fc_mb_neg(d, c), s);
    return fc_mb_div(d, num, fc_mb_sel(d, odd, s, c));
  }
  FcV qq = fn == FC_MATH_COS ? fc_mb_iadd(d, q, fc_mb_ki(d, 1)) : q;
  FcV neg = fc_mb_ieq(d, fc_mb_and(d, qq, fc_mb_ki(d, 2)), fc_mb_ki(d, 2));
  FcV v = fn == FC_MATH_COS ? fc_mb_sel(d, odd, s, c) : fc_mb_sel(d, odd, c, s);
  return fc_mb_negif(d, neg, v);
}

static FcV trig_specials(const FcMathB *m, FcMathFn fn, FcV x, FcV y)
{
  if (fn != FC_MATH_COS) y = fc_mb_sel(m, fc_mb_eq(m, x, k(m, 0)), x, y); /* sin/tan keep -0 */
  FcV bad = fc_mb_or(m, fc_mb_isnan(m, x), fc_mb_eq(m, fc_mb_abs(m, x), k(m, INFINITY)));
  return fc_mb_sel(m, bad, k(m, NAN), y);
}

/* Bit j (1-based: weight 2^-j) of 2/pi. */
static int two_over_pi_bit(int j)
{
  FC_ASSERT(j >= 1 && j <= 32 * NELEM(TWO_OVER_PI_BITS));
  return (TWO_OVER_PI_BITS[(j - 1) / 32] >> (31 - (j - 1) % 32)) & 1;
}

/* ---- f64: Cody–Waite below 2^28, Payne–Hanek above ------------------------------------------------- */

/* x - n pi/2 as a pair and n, exact enough for |x| < 2^28 (n*part exact, the rest as a pair). */
static void cw_reduce(const FcMathB *m, FcV x, FcV *rh, FcV *rl, FcV *q)
{
  FcV xc = fc_mb_clamp(m, x, -CW_CLAMP, CW_CLAMP);
  FcV n = fc_mb_rint(m, fc_mb_mul(m, xc, k(m, TWO_OVER_PI)), q);
  FcV h = fc_mb_mla(m, n, k(m, -PIO2_PART[0]), x);
  FcV l = k(m, 0);
  for (int i = 1; i < 4; i++) {
    FcV e;
    fc_mb_two_sum(m, h, fc_mb_mul(m, n, k(m, -PIO2_PART[i])), &h, &e);
    l = fc_mb_add(m, l, e);
  }
  l = fc_mb_mla(m, n, k(m, -PIO2_PART[4]), l);
  fc_mb_fast_two_sum(m, h, l, rh, rl);
}

enum { PH64_CHUNK_BITS = 26, PH64_TERMS = 7, PH64_CHUNKS = 46 };
#define PH64_TABLE "fc_math.two_over_pi_f64"

/* v mod 4 into [-2, 2], exact for |v| <= 2^53. */
static FcV mod4(const FcMathB *m, FcV v)
{
  return fc_mb_mla(m, fc_mb_rint(m, fc_mb_mul(m, v, k(m, 0.25)), NULL), k(m, -4), v);
}

/* Payne–Hanek for doubles: |x| = M 2^E with M = Mh 2^26 + Ml (27 + 26 bits) and 2/pi in 26-bit chunks
 * C_k; x 2/pi = sum_k (Mh C_k 2^26 + Ml C_k) 2^(E - 26(k+1)). Chunks before k0 = (E-2)/26 only add
 * multiples of 4 and are skipped; every partial product below is exact (27 x 26 or 26 x 26 bits times a
 * power of two), large ones are reduced mod 4 exactly, and the terms are summed with two_sum in
 * decreasing size. The reduced argument carries an absolute error below 2^-98: accurate except within
 * about 2^-45 of a zero of sin or cos. Lanes with small x compute garbage (no poison) and are not
 * selected. */
static void ph_reduce_f64(const FcMathB *m, FcV x, FcV *rh, FcV *rl, FcV *q)
{
  LLVMValueRef tab = LLVMGetNamedGlobal(m->mod, PH64_TABLE);
  if (!tab) {
    double chunks[PH64_CHUNKS];
    for (int c = 0; c < PH64_CHUNKS; c++) {
      uint64_t v = 0;
      for (int b = 0; b < PH64_CHUNK_BITS; b++) v = v << 1 | (uint64_t)two_over_pi_bit(1 + c * PH64_CHUNK_BITS + b);
      chunks[c] = (double)v;
    }
    tab = fc_mb_table(m, PH64_TABLE, chunks, PH64_CHUNKS);
  }
  FcV xb = fc_mb_bits(m, x);
  FcV be = fc_mb_and(m, fc_mb_lshr(m, xb, 52), fc_mb_ki(m, 2047));
  FcV ei = fc_mb_isub(m, be, fc_mb_ki(m, 1075));
  FcV mhi = fc_mb_or(m, fc_mb_and(m, fc_mb_lshr(m, xb, 26), fc_mb_ki(m, (1 << 26) - 1)), fc_mb_ki(m, 1 << 26));
  FcV mh = fc_mb_itof(m, mhi);
  FcV ml = fc_mb_itof(m, fc_mb_and(m, xb, fc_mb_ki(m, (1 << 26) - 1)));
  /* k0 = max(0, floor((E - 2)/26)), through rint((E - 14.5)/26), which is never a tie. */
  FcV k0;
  fc_mb_rint(m, fc_mb_mul(m, fc_mb_sub(m, fc_mb_itof(m, ei), k(m, 14.5)), k(m, 1.0 / 26)), &k0);
  k0 = fc_mb_sel(m, fc_mb_ilt(m, k0, fc_mb_ki(m, 0)), fc_mb_ki(m, 0), k0);
  FcV e0 = fc_mb_isub(m, ei, fc_mb_iadd(m, fc_mb_shl(m, k0, 1), fc_mb_iadd(m, fc_mb_shl(m, k0, 3),
                                                                                fc_mb_shl(m, k0, 4)))); /* E - 26 k0 */
  FcV sig = fc_mb_pow2i(m, fc_mb_isub(m, e0, fc_mb_ki(m, 26))); /* 2^(E - 26(k0+1)) */
  FcV hs = fc_mb_mul(m, mh, fc_mb_mul(m, sig, k(m, 0x1p26)));   /* Mh 2^26 sigma_i, i = 0 */
  FcV ls = fc_mb_mul(m, ml, sig);                                /* Ml sigma_i */
  FcV a[PH64_TERMS], bb[PH64_TERMS];
  for (int i = 0; i < PH64_TERMS; i++) {
    FcV c = fc_mb_gather(m, tab, fc_mb_iadd(m, k0, fc_mb_ki(m, i)));
    a[i] = fc_mb_mul(m, hs, c);
    bb[i] = fc_mb_mul(m, ls, c);
    hs = fc_mb_mul(m, hs, k(m, 0x1p-26));
    ls = fc_mb_mul(m, ls, k(m, 0x1p-26));
  }
  /* A_0 is a multiple of 4 once E - 26 k0 >= 2; otherwise it is below 2^54 and reduces exactly. */
  FcV a0 = fc_mb_sel(m, fc_mb_ilt(m, e0, fc_mb_ki(m, 2)), mod4(m, a[0]), k(m, 0));
  /* A_0, B_0, A_1 are multiples of sigma_0 >= 2^-50 below 4 after reduction: exact sums. */
  FcV h = mod4(m, fc_mb_add(m, a0, mod4(m, bb[0])));
  h = mod4(m, fc_mb_add(m, h, mod4(m, a[1])));
  FcV l = k(m, 0), e;
  FcV mid[6] = {mod4(m, bb[1]), mod4(m, a[2]), bb[2], a[3], bb[3], a[4]};
  for (int i = 0; i < 6; i++) {
    fc_mb_two_sum(m, h, mid[i], &h, &e);
    l = fc_mb_add(m, l, e);
    if (i < 4) h = mod4(m, h);
  }
  /* The rest is below 2^-50: plain adds, smallest first. */
  FcV tail = fc_mb_add(m, fc_mb_add(m, a[6], bb[6]), fc_mb_add(m, a[5], bb[5]));
  l = fc_mb_add(m, l, fc_mb_add(m, tail, bb[4]));
  FcV neg = fc_mb_ilt(m, xb, fc_mb_ki(m, 0));
  h = fc_mb_negif(m, neg, h);
  l = fc_mb_negif(m, neg, l);
  FcV n = fc_mb_rint(m, h, q);
  FcV fh, fl;
  fc_mb_fast_two_sum(m, fc_mb_sub(m, h, n), l, &fh, &fl);
  fc_mb_dd_mul(m, fh, fl, k(m, PIO2_HI), k(m, PIO2_LO), rh, rl);
}

static FcV trig_f64(const FcMathB *m, FcMathFn fn, FcV x)
{
  FcV rh, rl, q, ph_rh, ph_rl, ph_q;
  cw_reduce(m, x, &rh, &rl, &q);
  ph_reduce_f64(m, x, &ph_rh, &ph_rl, &ph_q);
  FcV big = fc_mb_ge(m, fc_mb_abs(m, x), k(m, CW_LIMIT));
  rh = fc_mb_sel(m, big, ph_rh, rh);
  rl = fc_mb_sel(m, big, ph_rl, rl);
  q = fc_mb_sel(m, big, ph_q, q);
  return trig_specials(m, fn, x, quadrant_select(m, fn, rh, rl, q));
}

/* ---- f32: Payne–Hanek through per-exponent chunks of (2^(e-150) 2/pi) mod 4 ------------------------ */

enum { PH_CHUNKS = 3, PH_CHUNK_BITS = 29, PH_ENTRIES = 256 };
#define PH_TABLE "fc_math.two_over_pi_f32"

/* T[3e + i]: chunk i of W_e = (2^(e-150) 2/pi) mod 4, each chunk PH_CHUNK_BITS bits from W_e's
 * leading bit down (so tiny W_e keep full relative precision). */
static void ph_table(double *t)
{
  for (int e = 0; e < PH_ENTRIES; e++) {
    int s = (e < 1 ? 1 : e) - 150; /* x = M 2^s; bit j of 2/pi has weight 2^(s-j) in x 2/pi */
    int j = s - 1 > 1 ? s - 1 : 1; /* bits with s - j >= 2 are multiples of 4: dropped */
    while (!two_over_pi_bit(j)) j++;
    for (int c = 0; c < PH_CHUNKS; c++) {
      uint64_t v = 0;
      for (int b = 0; b < PH_CHUNK_BITS; b++) v = v << 1 | (uint64_t)two_over_pi_bit(j + b);
      t[PH_CHUNKS * e + c] = ldexp((double)v, s - (j + PH_CHUNK_BITS - 1));
      j += PH_CHUNK_BITS;
    }
  }
}

static FcV trig_f32(const FcMathB *m, FcMathFn fn, FcV x)
{
  FcMathB d;
  fc_mb_retype(m, &d, true);
  LLVMBuilderRef b = m->b;
  FcV xb = fc_mb_bits(m, x);
  FcV be = fc_mb_and(m, fc_mb_lshr(m, xb, 23), fc_mb_ki(m, 255));
  FcV normal = fc_mb_not(m, fc_mb_ieq(m, be, fc_mb_ki(m, 0)));
  FcV mi = fc_mb_or(m, fc_mb_and(m, xb, fc_mb_ki(m, 0x7fffff)),
                    fc_mb_sel(m, normal, fc_mb_ki(m, 0x800000), fc_mb_ki(m, 0)));
  FcV mant = LLVMBuildSIToFP(b, mi, d.ft, "");
  FcV idx = fc_mb_sel(m, normal, be, fc_mb_ki(m, 1));
  LLVMValueRef tab = LLVMGetNamedGlobal(m->mod, PH_TABLE);
  if (!tab) {
    double table[PH_CHUNKS * PH_ENTRIES];
    ph_table(table);
    tab = fc_mb_table(&d, PH_TABLE, table, PH_CHUNKS * PH_ENTRIES);
  }
  FcV base = fc_mb_iadd(m, fc_mb_iadd(m, idx, idx), idx);
  FcV p[PH_CHUNKS];
  for (int c = 0; c < PH_CHUNKS; c++) {
    FcV w = fc_mb_gather(&d, tab, fc_mb_iadd(m, base, fc_mb_ki(m, c)));
    p[c] = fc_mb_mul(&d, mant, w); /* exact: 24 x 29 bits */
  }
  /* p0 can be large: take it mod 4 exactly; p1 < 2^-3 and p2 need no reduction. */
  FcV q4 = fc_mb_rint(&d, fc_mb_mul(&d, p[0], k(&d, 0.25)), NULL);
  FcV p0 = fc_mb_mla(&d, q4, k(&d, -4), p[0]);
  FcV yh, yl;
  fc_mb_two_sum(&d, p0, p[1], &yh, &yl);
  yl = fc_mb_add(&d, yl, p[2]);
  FcV neg = fc_mb_ilt(m, xb, fc_mb_ki(m, 0)); /* a mask: the same shape in both contexts */
  yh = fc_mb_negif(&d, neg, yh);
  yl = fc_mb_negif(&d, neg, yl);
  FcV q;
  FcV n = fc_mb_rint(&d, yh, &q);
  FcV f = fc_mb_add(&d, fc_mb_sub(&d, yh, n), yl);
  FcV r = fc_mb_mul(&d, f, k(&d, PIO2_HI));
  FcV y = fc_mb_narrow(m, quadrant_select(&d, fn, r, k(&d, 0), q));
  return trig_specials(m, fn, x, y);
}

FcV fc_math_emit_trig(const FcMathB *m, FcMathFn fn, FcV x)
{
  return m->f64 ? trig_f64(m, fn, x) : trig_f32(m, fn, x);
}

/* ---- asin, acos, atan (f64) ------------------------------------------------------------------------- */

static FcV emit_asin_acos(const FcMathB *m, FcMathFn fn, FcV x)
{
  FcV a = fc_mb_abs(m, x);
  FcV small = fc_mb_lt(m, a, k(m, 0.5));
  /* One polynomial for both ranges: z = x^2 below 1/2, z = (1 - |x|)/2 (exact) above. */
  FcV zl = fc_mb_mul(m, k(m, 0.5), fc_mb_sub(m, k(m, 1), a));
  FcV z = fc_mb_sel(m, small, fc_mb_mul(m, x, x), zl);
  FcV r = fc_mb_mul(m, z, fc_mb_poly(m, z, ASIN_P_F64, NELEM(ASIN_P_F64))); /* asin(t) = t + t r */
  FcV s = fc_mb_sqrt(m, zl);
  /* s = df + c/(...) with df = s truncated to 26 bits (df^2 exact): the low part of sqrt(z). */
  FcV df = fc_mb_trunc_bits(m, s, 26);
  FcV c = fc_mb_div(m, fc_mb_sub(m, zl, fc_mb_mul(m, df, df)), fc_mb_add(m, s, df));
  c = fc_mb_sel(m, fc_mb_eq(m, zl, k(m, 0)), k(m, 0), c);
  FcV y;
  if (fn == FC_MATH_ASIN) {
    FcV ys = fc_mb_mla(m, x, r, x);
    /* pi/2 - 2 asin(s) = pi/4 - ((2 s r - (pio2_lo - 2c)) - (pi/4 - 2 df)) */
    FcV p = fc_mb_sub(m, fc_mb_mul(m, fc_mb_add(m, s, s), r), fc_mb_sub(m, k(m, PIO2_LO), fc_mb_add(m, c, c)));
    FcV qq = fc_mb_sub(m, k(m, PIO4_HI), fc_mb_add(m, df, df));
    FcV yb = fc_mb_sub(m, k(m, PIO4_HI), fc_mb_sub(m, p, qq));
    y = fc_mb_sel(m, small, ys, fc_mb_copysign(m, yb, x));
  } else {
    FcV ys = fc_mb_sub(m, k(m, PIO2_HI), fc_mb_sub(m, x, fc_mb_sub(m, k(m, PIO2_LO), fc_mb_mul(m, x, r))));
    /* x > 0: 2 asin(s) = 2 (df + (s r + c)); x < 0: pi - 2 asin(s). */
    FcV ypos = fc_mb_mul(m, k(m, 2), fc_mb_add(m, df, fc_mb_mla(m, s, r, c)));
    FcV w = fc_mb_mla(m, r, s, k(m, -PIO2_LO));
    FcV yneg = fc_mb_sub(m, k(m, PI_HI), fc_mb_mul(m, k(m, 2), fc_mb_add(m, s, w)));
    y = fc_mb_sel(m, small, ys, fc_mb_sel(m, fc_mb_lt(m, x, k(m, 0)), yneg, ypos));
  }
  /* |x| > 1 gives sqrt of a negative number: NaN already; NaN inputs propagate. */
  y = fc_mb_sel(m, fc_mb_gt(m, a, k(m, 1)), k(m, NAN), y);
  return fc_mb_sel(m, fc_mb_isnan(m, x), x, y);
}

static FcV emit_atan(const FcMathB *m, FcV x)
{
  FcV a = fc_mb_abs(m, x);
  FcV r1 = fc_mb_le(m, a, k(m, 0x1.a827999fcef32p-2)); /* tan(pi/8) */
  FcV r2 = fc_mb_le(m, a, k(m, 0x1.3504f333f9de6p+1)); /* tan(3pi/8) */
  /* t = a, (a-1)/(a+1) or -1/a: one division, exact where the denominator is 1. */
  FcV num = fc_mb_sel(m, r1, a, fc_mb_sel(m, r2, fc_mb_sub(m, a, k(m, 1)), k(m, -1)));
  FcV den = fc_mb_sel(m, r1, k(m, 1), fc_mb_sel(m, r2, fc_mb_add(m, a, k(m, 1)), a));
  FcV t = fc_mb_div(m, num, den);
  FcV bh = fc_mb_sel(m, r1, k(m, 0), fc_mb_sel(m, r2, k(m, PIO4_HI), k(m, PIO2_HI)));
  FcV bl = fc_mb_sel(m, r1, k(m, 0), fc_mb_sel(m, r2, k(m, PIO2_LO / 2), k(m, PIO2_LO)));
  FcV z = fc_mb_mul(m, t, t);
  FcV tr = fc_mb_mul(m, fc_mb_mul(m, t, z), fc_mb_poly(m, z, ATAN_P_F64, NELEM(ATAN_P_F64)));
  /* base + atan(t) = bh + bl + t + tr, summed as bh - ((-tr - bl) - t) (fdlibm's order) */
  FcV y = fc_mb_sub(m, bh, fc_mb_sub(m, fc_mb_sub(m, fc_mb_neg(m, tr), bl), t));
  y = fc_mb_copysign(m, y, x);
  return fc_mb_sel(m, fc_mb_isnan(m, x), x, y);
}

FcV fc_math_emit_atrig(const FcMathB *m, FcMathFn fn, FcV x)
{
  FC_ASSERT(m->f64);
  return fn == FC_MATH_ATAN ? emit_atan(m, x) : emit_asin_acos(m, fn, x);
}
