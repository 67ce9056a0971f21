/* fcmath.h — accurate, vectorisable elementwise math emitted as LLVM IR: exp, expm1, log, log1p, tanh,
 * sigmoid, softplus, erf, sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, pow.
 *
 * Generated kernels call fc_math_emit where they need f(x): it emits straight-line IR at the builder's
 * position — selects for special cases, no branches, no calls — so LLVM's loop and SLP vectorisers keep
 * the code vectorised and built programs depend on no math library for it:
 *
 *   LLVMValueRef y = fc_math_emit(mod, b, FC_MATH_TANH, x, NULL);   // x, y: <8 x float>
 *
 * Values are float or double, scalar or a fixed-width vector (f16/bf16 are computed by the caller in
 * f32). The only intrinsics emitted are llvm.fmuladd, llvm.fabs, llvm.copysign, llvm.sqrt and (sin, cos
 * and tan) llvm.masked.gather, which become instructions on every x86-64 and AArch64 target; fmuladd
 * is a multiply and an add without FMA, and the error bounds below hold either way. The algorithms need
 * IEEE rounding of each operation: no fast-math flags on what is emitted, and no FP contraction beyond
 * fmuladd (LLVM's default).
 *
 * Results follow C's libm (C99 Annex F) for NaN, ±Inf, ±0, subnormal inputs and results, overflow and
 * underflow: exp(-inf) = +0, exp(large) = +inf, log(±0) = -inf, log(x<0) = NaN, tanh and erf saturate
 * to ±1, sigmoid(-inf) = +0, odd functions keep the sign of zero, pow has every special case of
 * F.9.4.4. Methods (codegen/math.c, math_trig.c): range reduction plus minimax polynomials fitted by
 * bench/math_fit.py, Cody–Waite and Payne–Hanek reductions and double-word arithmetic, after the
 * published approaches of fdlibm/musl, Cephes and SLEEF; no table approximations (the only tables are
 * the bits of 2/pi). The functions after erf compute f32 values in double and round once ("f64" in
 * the table), which costs two vector registers per eight lanes and makes them almost correctly rounded.
 *
 * Maximum error in ulp against a double (f32) or long double (f64) libm reference: the bound that
 * tests/unit/test_math.c asserts (fc_math_max_ulp) and, in parentheses, the largest error measured:
 * f32 over all 2^32 floats for exp ... erf (FC_MATH_EXHAUSTIVE=1) and over 2^20 bit patterns plus
 * focused ranges for the rest; f64 over 2^24 (exp ... erf) or 2^18 (the rest) bit patterns plus 7 x 2^16
 * focused values; on x86-64 with FMA and on the baseline x86-64 CPU without it.
 *
 *   fn        f32            f64            method
 *   exp       1   (0.78)     1   (0.73)     n = rint(x/ln2), r = x - n ln2 as a pair, 1 + r + r^2 P(r)
 *                                           rounded once, 2^n in two exact halves
 *   expm1     1.5 (0.94)     1.5 (1.01)     same; 2^n ((1 - 2^-n) + r + r^2 P(r)) rounded once
 *   log       1   (0.84)     1   (0.76)     fdlibm: s = f/(2+f), 2s + s R(s^2)
 *   log1p     1   (0.84)     1   (0.79)     log of 1+x plus the rounding error of 1+x
 *   tanh      1   (0.78)     1   (0.78)     odd polynomial below 0.625, else 1 - 2/(e^2|x| + 1)
 *   sigmoid   1.5 (1.13)     1.5 (1.07)     e/(1+e) or 1/(1+e), e = e^-|x|; e and 1+e as pairs
 *   softplus  1.5 (1.19)     1.5 (1.16)     max(x,0) + log1p(e^-|x|)
 *   erf       1.5 (1.11)     1.5 (1.20)     x + x Q(x^2) below 1, else 1 - e^-x^2 g(x) with x^2 as an
 *                                           exact pair (g piecewise for f64)
 *   sin cos   1 (0.50, f64)  1   (0.77)     f32: exact Payne–Hanek for every float; f64: see below;
 *   tan       1 (0.50, f64)  2.5 (2.06)     fdlibm's sin/cos kernels, tan = sin/cos
 *   asin acos 1 (0.50, f64)  1   (0.87)     fdlibm: polynomial in x^2 or in (1-|x|)/2, split sqrt
 *   atan      1 (0.50, f64)  2   (1.66)     reduction to |t| <= tan(pi/8)
 *   sinh      1 (0.50, f64)  2   (1.56)     polynomial below 1, else E - 1/(4E), E = e^|x|/2
 *   cosh      1 (0.50, f64)  1.5 (1.05)     E + 1/(4E)
 *   asinh acosh atanh  1 (0.50, f64)  2 (1.71)   fdlibm's log and log1p forms
 *   pow       1 (0.50, f64)  1   (0.81)     f64: log|x| and y log|x| as double-word pairs, exp of the
 *                                           pair; C99 special cases by selects
 *
 * f64 sin/cos/tan: Cody–Waite with pi/2 in five parts, exact for |x| < 2^28; above, a Payne–Hanek
 * reduction (2/pi in 26-bit chunks gathered by exponent, exact partial products) whose reduced argument
 * has an absolute error below 2^-98, so results stay within the bound except for arguments within about
 * 2^-45 of a zero of sin or cos (a handful of doubles), where the error relative to the tiny result
 * grows. f32 needs no such caveat: its reduction is exact for every float.
 */
#ifndef FLOWC_FCMATH_H
#define FLOWC_FCMATH_H

#include <llvm-c/Core.h>
#include <stdbool.h>

/* The functions up to FC_MATH_ERF compute f32 values in f32; the rest compute them in double. */
typedef enum FcMathFn {
  FC_MATH_EXP,
  FC_MATH_EXPM1,
  FC_MATH_LOG,
  FC_MATH_LOG1P,
  FC_MATH_TANH,
  FC_MATH_SIGMOID,  /* 1 / (1 + e^-x) */
  FC_MATH_SOFTPLUS, /* log(1 + e^x) */
  FC_MATH_ERF,
  FC_MATH_SIN,
  FC_MATH_COS,
  FC_MATH_TAN,
  FC_MATH_ASIN,
  FC_MATH_ACOS,
  FC_MATH_ATAN,
  FC_MATH_SINH,
  FC_MATH_COSH,
  FC_MATH_ASINH,
  FC_MATH_ACOSH,
  FC_MATH_ATANH,
  FC_MATH_POW, /* binary: pow(x, y) */
  FC_MATH_COUNT
} FcMathFn;

/* "exp", "log1p", ... */
const char *fc_math_name(FcMathFn fn);
/* 1, or 2 for FC_MATH_POW. */
int fc_math_arity(FcMathFn fn);
/* The asserted maximum error in ulp (the table above) for f32 (f64 false) or f64. */
double fc_math_max_ulp(FcMathFn fn, bool f64);

/* Emits fn(x) (fn(x, y) for pow, y of x's type; y is ignored otherwise) at the builder's position and
 * returns the result, of x's type. x must be float/double or a fixed-width vector of them (at most 64
 * lanes): anything else is a caller bug (FC_ASSERT). May add intrinsic declarations and, for sin, cos
 * and tan, a private constant table of 2/pi bits to mod. Thread-safe for distinct modules. */
LLVMValueRef fc_math_emit(LLVMModuleRef mod, LLVMBuilderRef b, FcMathFn fn, LLVMValueRef x, LLVMValueRef y);

/* erfc(x) for float x (scalar or vector), to an absolute error below 1.3e-7 and a relative error below
 * 8e-7 where erfc(x) >= 1e-2 and 4e-6 where erfc(x) >= 1e-7, in under half FC_MATH_ERF's instructions
 * (math_fast.c has the measured errors): for GELU's 1 + erf(u) = erfc(-u), which needs no more and,
 * computed so, keeps its relative accuracy for negative u. NaN propagates; erfc(+-inf) = 0, 2. Same
 * emission contract as fc_math_emit. */
LLVMValueRef fc_math_emit_erfc_fast(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef x);

/* e^x for float x <= 0 or NaN (scalar or vector; x > 0 is not supported), within 1 ulp (1.25 without FMA),
 * subnormal results rounded once, in about two thirds of FC_MATH_EXP's instructions: for SiLU's e^-|a|. */
LLVMValueRef fc_math_emit_exp_nonpos(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef x);

#endif
