/* math_internal.h — shared pieces of codegen/math*.c: the emission context and the small IR builders
 * every elementwise math emitter is written with.
 *
 * An FcMathB fixes one value shape (float or double, scalar or fixed-width vector) and knows the
 * matching integer shape, so an algorithm reads like scalar code: fc_mb_mul(m, a, b), fc_mb_k(m, 0.5),
 * fc_mb_sel(m, cond, a, b). Every builder emits straight-line IR; nothing here calls a library function.
 * No fast-math flags are ever set: the algorithms rely on exact IEEE rounding of each operation
 * (error-free transformations, magic-number rounding), and llvm.fmuladd may be fused or not.
 */
#ifndef FLOWC_MATH_INTERNAL_H
#define FLOWC_MATH_INTERNAL_H

#include <llvm-c/Core.h>
#include <stdbool.h>
#include <stdint.h>

#include "fcmath.h"

typedef LLVMValueRef FcV;

/* Elements of a coefficient array. */
#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct FcMathB {
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMContextRef ctx;
  LLVMTypeRef ft;     /* float, double, or a fixed-width vector of them */
  LLVMTypeRef it;     /* the integer shape of the same width (i32/i64 elements) */
  LLVMTypeRef ef, ei; /* element types */
  unsigned lanes;     /* 0 for a scalar */
  bool f64;
  int p;    /* significand bits, the implicit one included: 24 or 53 */
  int bias; /* exponent bias: 127 or 1023 */
} FcMathB;

/* ---- math_ir.c: context, constants, arithmetic, comparisons, bit tricks, double-word arithmetic ---- */

/* True when `ty` is float/double or a fixed-width vector of them. */
bool fc_mb_type_ok(LLVMTypeRef ty);
void fc_mb_init(FcMathB *m, LLVMModuleRef mod, LLVMBuilderRef b, LLVMTypeRef ty);
/* The same shape with double (or float) elements. */
void fc_mb_retype(const FcMathB *m, FcMathB *out, bool f64);
FcV fc_mb_widen(const FcMathB *m, FcV x);  /* fpext of a float value to the double context */
FcV fc_mb_narrow(const FcMathB *m, FcV x); /* fptrunc of a double value to the float context m */

FcV fc_mb_k(const FcMathB *m, double v);   /* float constant, splat for vectors */
FcV fc_mb_ki(const FcMathB *m, int64_t v); /* integer constant of the int shape */
FcV fc_mb_kb(const FcMathB *m, bool v);    /* i1 constant of the mask shape */

FcV fc_mb_add(const FcMathB *m, FcV a, FcV b);
FcV fc_mb_sub(const FcMathB *m, FcV a, FcV b);
FcV fc_mb_mul(const FcMathB *m, FcV a, FcV b);
FcV fc_mb_div(const FcMathB *m, FcV a, FcV b);
FcV fc_mb_neg(const FcMathB *m, FcV a);
FcV fc_mb_mla(const FcMathB *m, FcV a, FcV b, FcV c); /* a*b + c through llvm.fmuladd */
FcV fc_mb_abs(const FcMathB *m, FcV a);
FcV fc_mb_copysign(const FcMathB *m, FcV mag, FcV sgn);
FcV fc_mb_sqrt(const FcMathB *m, FcV a);
/* `x` with its sign flipped where `cond` holds (an xor of the sign bit). */
FcV fc_mb_negif(const FcMathB *m, FcV cond, FcV x);

/* Ordered comparisons (false when either side is NaN) and the NaN test. */
FcV fc_mb_lt(const FcMathB *m, FcV a, FcV b);
FcV fc_mb_le(const FcMathB *m, FcV a, FcV b);
FcV fc_mb_gt(const FcMathB *m, FcV a, FcV b);
FcV fc_mb_ge(const FcMathB *m, FcV a, FcV b);
FcV fc_mb_eq(const FcMathB *m, FcV a, FcV b);
FcV fc_mb_isnan(const FcMathB *m, FcV a);
FcV fc_mb_sel(const FcMathB *m, FcV c, FcV a, FcV b);
FcV fc_mb_and(const FcMathB *m, FcV a, FcV b); /* on masks or integers */
FcV fc_mb_or(const FcMathB *m, FcV a, FcV b);
FcV fc_mb_xor(const FcMathB *m, FcV a, FcV b);
FcV fc_mb_not(const FcMathB *m, FcV a);

/* Integer arithmetic in the int shape. */
FcV fc_mb_iadd(const FcMathB *m, FcV a, FcV b);
FcV fc_mb_isub(const FcMathB *m, FcV a, FcV b);
FcV fc_mb_shl(const FcMathB *m, FcV a, int s);
FcV fc_mb_ashr(const FcMathB *m, FcV a, int s);
FcV fc_mb_lshr(const FcMathB *m, FcV a, int s);
FcV fc_mb_ieq(const FcMathB *m, FcV a, FcV b);
FcV fc_mb_ilt(const FcMathB *m, FcV a, FcV b); /* signed */
FcV fc_mb_bits(const FcMathB *m, FcV x);       /* bitcast float -> int */
FcV fc_mb_flt(const FcMathB *m, FcV i);        /* bitcast int -> float */

/* x with NaN mapped to lo and the rest clamped to [lo, hi]: safe to feed integer conversions. */
FcV fc_mb_clamp(const FcMathB *m, FcV x, double lo, double hi);
/* Round to nearest-even for |x| < 2^(p-2) by adding and subtracting 1.5*2^(p-1); also yields the
 * integer (in the int shape) from the low bits of the sum, so no fptosi is needed. `ni` may be NULL. */
FcV fc_mb_rint(const FcMathB *m, FcV x, FcV *ni);
/* Integer (|k| < 2^(p-2)) to float, exactly, by the reverse trick. */
FcV fc_mb_itof(const FcMathB *m, FcV k);
/* 2^n for an integer n within the normal exponent range. */
FcV fc_mb_pow2i(const FcMathB *m, FcV n);
/* x * 2^n in two exact steps, so results that overflow or become subnormal round once;
 * n in [-2*bias + 2, 2*bias]. */
FcV fc_mb_scale(const FcMathB *m, FcV x, FcV n);
/* c[0] + c[1] x + ... + c[n-1] x^(n-1) by Horner with fmuladd. */
FcV fc_mb_poly(const FcMathB *m, FcV x, const double *c, int n);
/* Piecewise polynomial: coefficients are chosen per lane before one Horner evaluation. Segment s uses
 * c[s*n .. s*n+n-1]; lanes where in_seg[s-1] holds (s >= 1, tested in order, later wins) take segment s,
 * the rest segment 0. */
FcV fc_mb_poly_pw(const FcMathB *m, FcV x, const double *c, int n, int nseg, const FcV *in_seg);
/* Keeps the leading `keep` significand bits of x (the rest zeroed): an exact split point. */
FcV fc_mb_trunc_bits(const FcMathB *m, FcV x, int keep);

/* Double-word (error-free) arithmetic. All results exact as pairs unless noted. */
void fc_mb_two_sum(const FcMathB *m, FcV a, FcV b, FcV *s, FcV *e);
void fc_mb_fast_two_sum(const FcMathB *m, FcV a, FcV b, FcV *s, FcV *e); /* needs |a| >= |b| or a == 0 */
/* a*b = p + e. Dekker's product with the operands split by masking (no FMA assumed); exact for f32,
 * and for f64 up to a relative 2^-106 (the low-by-low product keeps 53 of its 54 bits). */
void fc_mb_two_prod(const FcMathB *m, FcV a, FcV b, FcV *p, FcV *e);
/* (ah + al) * (bh + bl) as a normalised pair, relative error ~2^-2p. */
void fc_mb_dd_mul(const FcMathB *m, FcV ah, FcV al, FcV bh, FcV bl, FcV *rh, FcV *rl);

/* A private constant table of m's element type in the module (created once per name), and a per-lane
 * load from it: llvm.masked.gather for vectors. `idx` is an integer (vector) with m's lanes, in range. */
LLVMValueRef fc_mb_table(const FcMathB *m, const char *name, const double *vals, unsigned n);
FcV fc_mb_gather(const FcMathB *m, LLVMValueRef table, FcV idx);

/* ---- math.c: cores shared between the emitters ------------------------------------------------------ */

/* e^x * 2^kadj for every x: overflow to +inf and underflow (through subnormals) to +0 round once;
 * NaN propagates. kadj in [-2, 2]. */
FcV fc_math_exp_kernel(const FcMathB *m, FcV x, int kadj);
/* log(u) + c + kextra*ln2 for finite u > 0 (subnormals included); c is a small additive correction
 * (|c| < 2^-p-ish, e.g. the rounding error of 1 + x divided by u) and kextra an integer in the int shape
 * (NULL for 0). Garbage, but no poison, for other u: callers select special cases afterwards. */
FcV fc_math_log_kernel(const FcMathB *m, FcV u, FcV c, FcV kextra);

/* ---- math_trig.c: trigonometric emitters ------------------------------------------------------------ */

FcV fc_math_emit_trig(const FcMathB *m, FcMathFn fn, FcV x);  /* SIN, COS, TAN (f32 or f64) */
FcV fc_math_emit_atrig(const FcMathB *m, FcMathFn fn, FcV x); /* ASIN, ACOS, ATAN (f64) */

#endif
