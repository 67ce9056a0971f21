/* math_ir.c — the small IR builders behind codegen/math*.c (see math_internal.h).
 *
 * Each helper emits one or a few instructions in the context's value shape. Constants are splatted for
 * vectors. Integer conversions go through the magic-number trick (adding 1.5*2^(p-1) puts the rounded
 * integer in the low significand bits), so no fptosi/sitofp is needed — those would be poison for NaN
 * or out-of-range lanes, and i64 <-> double vector conversions do not exist before AVX-512. Splits for
 * error-free products mask the low significand bits, which needs no FMA.
 */
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "math_internal.h"

bool fc_mb_type_ok(LLVMTypeRef ty)
{
  LLVMTypeKind k = LLVMGetTypeKind(ty);
  if (k == LLVMVectorTypeKind) {
    if (LLVMGetVectorSize(ty) == 0) return false;
    k = LLVMGetTypeKind(LLVMGetElementType(ty));
  }
  return k == LLVMFloatTypeKind || k == LLVMDoubleTypeKind;
}

void fc_mb_init(FcMathB *m, LLVMModuleRef mod, LLVMBuilderRef b, LLVMTypeRef ty)
{
  FC_ASSERT(fc_mb_type_ok(ty));
  memset(m, 0, sizeof *m);
  m->mod = mod;
  m->b = b;
  m->ctx = LLVMGetTypeContext(ty);
  m->ft = ty;
  m->lanes = LLVMGetTypeKind(ty) == LLVMVectorTypeKind ? LLVMGetVectorSize(ty) : 0;
  m->ef = m->lanes ? LLVMGetElementType(ty) : ty;
  m->f64 = LLVMGetTypeKind(m->ef) == LLVMDoubleTypeKind;
  m->ei = m->f64 ? LLVMInt64TypeInContext(m->ctx) : LLVMInt32TypeInContext(m->ctx);
  m->it = m->lanes ? LLVMVectorType(m->ei, m->lanes) : m->ei;
  m->p = m->f64 ? 53 : 24;
  m->bias = m->f64 ? 1023 : 127;
}

void fc_mb_retype(const FcMathB *m, FcMathB *out, bool f64)
{
  LLVMTypeRef e = f64 ? LLVMDoubleTypeInContext(m->ctx) : LLVMFloatTypeInContext(m->ctx);
  fc_mb_init(out, m->mod, m->b, m->lanes ? LLVMVectorType(e, m->lanes) : e);
}

FcV fc_mb_widen(const FcMathB *m, FcV x)
{
  return LLVMBuildFPExt(m->b, x, m->ft, "");
}

FcV fc_mb_narrow(const FcMathB *m, FcV x)
{
  return LLVMBuildFPTrunc(m->b, x, m->ft, "");
}

static FcV splat(const FcMathB *m, LLVMValueRef c)
{
  if (!m->lanes) return c;
  LLVMValueRef v[64];
  FC_ASSERT(m->lanes <= 64);
  for (unsigned i = 0; i < m->lanes; i++) v[i] = c;
  return LLVMConstVector(v, m->lanes);
}

FcV fc_mb_k(const FcMathB *m, double v)
{
  return splat(m, LLVMConstReal(m->ef, v));
}

FcV fc_mb_ki(const FcMathB *m, int64_t v)
{
  return splat(m, LLVMConstInt(m->ei, (unsigned long long)v, 1));
}

FcV fc_mb_kb(const FcMathB *m, bool v)
{
  return splat(m, LLVMConstInt(LLVMInt1TypeInContext(m->ctx), v, 0));
}

FcV fc_mb_add(const FcMathB *m, FcV a, FcV b) { return LLVMBuildFAdd(m->b, a, b, ""); }
FcV fc_mb_sub(const FcMathB *m, FcV a, FcV b) { return LLVMBuildFSub(m->b, a, b, ""); }
FcV fc_mb_mul(const FcMathB *m, FcV a, FcV b) { return LLVMBuildFMul(m->b, a, b, ""); }
FcV fc_mb_div(const FcMathB *m, FcV a, FcV b) { return LLVMBuildFDiv(m->b, a, b, ""); }
FcV fc_mb_neg(const FcMathB *m, FcV a) { return LLVMBuildFNeg(m->b, a, ""); }

static FcV intrinsic(const FcMathB *m, const char *name, LLVMTypeRef *over, unsigned nover, FcV *args,
                     unsigned nargs)
{
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  FC_ASSERT(id != 0);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(m->mod, id, over, nover);
  LLVMTypeRef fty = LLVMIntrinsicGetType(m->ctx, id, over, nover);
  return LLVMBuildCall2(m->b, fty, fn, args, nargs, "");
}

static FcV intrinsic_f(const FcMathB *m, const char *name, FcV *args, unsigned nargs)
{
  LLVMTypeRef t = m->ft;
  return intrinsic(m, name, &t, 1, args, nargs);
}

FcV fc_mb_mla(const FcMathB *m, FcV a, FcV b, FcV c)
{
  FcV args[3] = {a, b, c};
  return intrinsic_f(m, "llvm.fmuladd", args, 3);
}

FcV fc_mb_abs(const FcMathB *m, FcV a)
{
  return intrinsic_f(m, "llvm.fabs", &a, 1);
}

FcV fc_mb_copysign(const FcMathB *m, FcV mag, FcV sgn)
{
  FcV args[2] = {mag, sgn};
  return intrinsic_f(m, "llvm.copysign", args, 2);
}

FcV fc_mb_sqrt(const FcMathB *m, FcV a)
{
  return intrinsic_f(m, "llvm.sqrt", &a, 1);
}

FcV fc_mb_negif(const FcMathB *m, FcV cond, FcV x)
{
  FcV sign = fc_mb_sel(m, cond, fc_mb_ki(m, m->f64 ? INT64_MIN : INT32_MIN), fc_mb_ki(m, 0));
  return fc_mb_flt(m, fc_mb_xor(m, fc_mb_bits(m, x), sign));
}

FcV fc_mb_lt(const FcMathB *m, FcV a, FcV b) { return LLVMBuildFCmp(m->b, LLVMRealOLT, a, b, ""); }
FcV fc_mb_le(const FcMathB *m, FcV a, FcV b) { return LLVMBuildFCmp(m->b, LLVMRealOLE, a, b, ""); }
FcV fc_mb_gt(const FcMathB *m, FcV a, FcV b) { return LLVMBuildFCmp(m->b, LLVMRealOGT, a, b, ""); }
FcV fc_mb_ge(const FcMathB *m, FcV a, FcV b) { return LLVMBuildFCmp(m->b, LLVMRealOGE, a, b, ""); }
FcV fc_mb_eq(const FcMathB *m, FcV a, FcV b) { return LLVMBuildFCmp(m->b, LLVMRealOEQ, a, b, ""); }
FcV fc_mb_isnan(const FcMathB *m, FcV a) { return LLVMBuildFCmp(m->b, LLVMRealUNO, a, a, ""); }
FcV fc_mb_sel(const FcMathB *m, FcV c, FcV a, FcV b) { return LLVMBuildSelect(m->b, c, a, b, ""); }
FcV fc_mb_and(const FcMathB *m, FcV a, FcV b) { return LLVMBuildAnd(m->b, a, b, ""); }
FcV fc_mb_or(const FcMathB *m, FcV a, FcV b) { return LLVMBuildOr(m->b, a, b, ""); }
FcV fc_mb_xor(const FcMathB *m, FcV a, FcV b) { return LLVMBuildXor(m->b, a, b, ""); }
FcV fc_mb_not(const FcMathB *m, FcV a) { return LLVMBuildNot(m->b, a, ""); }

FcV fc_mb_iadd(const FcMathB *m, FcV a, FcV b) { return LLVMBuildAdd(m->b, a, b, ""); }
FcV fc_mb_isub(const FcMathB *m, FcV a, FcV b) { return LLVMBuildSub(m->b, a, b, ""); }
FcV fc_mb_shl(const FcMathB *m, FcV a, int s) { return LLVMBuildShl(m->b, a, fc_mb_ki(m, s), ""); }
FcV fc_mb_ashr(const FcMathB *m, FcV a, int s) { return LLVMBuildAShr(m->b, a, fc_mb_ki(m, s), ""); }
FcV fc_mb_lshr(const FcMathB *m, FcV a, int s) { return LLVMBuildLShr(m->b, a, fc_mb_ki(m, s), ""); }
FcV fc_mb_ieq(const FcMathB *m, FcV a, FcV b) { return LLVMBuildICmp(m->b, LLVMIntEQ, a, b, ""); }
FcV fc_mb_ilt(const FcMathB *m, FcV a, FcV b) { return LLVMBuildICmp(m->b, LLVMIntSLT, a, b, ""); }
FcV fc_mb_bits(const FcMathB *m, FcV x) { return LLVMBuildBitCast(m->b, x, m->it, ""); }
FcV fc_mb_flt(const FcMathB *m, FcV i) { return LLVMBuildBitCast(m->b, i, m->ft, ""); }

FcV fc_mb_clamp(const FcMathB *m, FcV x, double lo, double hi)
{
  FcV klo = fc_mb_k(m, lo), khi = fc_mb_k(m, hi);
  FcV y = fc_mb_sel(m, fc_mb_ge(m, x, klo), x, klo); /* NaN fails the ordered test: lo */
  return fc_mb_sel(m, fc_mb_le(m, y, khi), y, khi);
}

static double magic(const FcMathB *m)
{
  return m->f64 ? 0x1.8p52 : 0x1.8p23;
}

FcV fc_mb_rint(const FcMathB *m, FcV x, FcV *ni)
{
  FcV km = fc_mb_k(m, magic(m));
  FcV t = fc_mb_add(m, x, km);
  if (ni) *ni = fc_mb_isub(m, fc_mb_bits(m, t), fc_mb_bits(m, km));
  return fc_mb_sub(m, t, km);
}

FcV fc_mb_itof(const FcMathB *m, FcV k)
{
  FcV km = fc_mb_k(m, magic(m));
  return fc_mb_sub(m, fc_mb_flt(m, fc_mb_iadd(m, fc_mb_bits(m, km), k)), km);
}

FcV fc_mb_pow2i(const FcMathB *m, FcV n)
{
  return fc_mb_flt(m, fc_mb_shl(m, fc_mb_iadd(m, n, fc_mb_ki(m, m->bias)), m->p - 1));
}

FcV fc_mb_scale(const FcMathB *m, FcV x, FcV n)
{
  FcV n1 = fc_mb_ashr(m, n, 1);
  FcV n2 = fc_mb_isub(m, n, n1);
  return fc_mb_mul(m, fc_mb_mul(m, x, fc_mb_pow2i(m, n1)), fc_mb_pow2i(m, n2));
}

FcV fc_mb_poly(const FcMathB *m, FcV x, const double *c, int n)
{
  FC_ASSERT(n >= 1);
  FcV acc = fc_mb_k(m, c[n - 1]);
  for (int i = n - 2; i >= 0; i--) acc = fc_mb_mla(m, acc, x, fc_mb_k(m, c[i]));
  return acc;
}

FcV fc_mb_poly_pw(const FcMathB *m, FcV x, const double *c, int n, int nseg, const FcV *in_seg)
{
  FC_ASSERT(n >= 1 && nseg >= 1);
  FcV acc = NULL;
  for (int i = n - 1; i >= 0; i--) {
    FcV ci = fc_mb_k(m, c[i]);
    for (int s = 1; s < nseg; s++) ci = fc_mb_sel(m, in_seg[s - 1], fc_mb_k(m, c[s * n + i]), ci);
    acc = acc ? fc_mb_mla(m, acc, x, ci) : ci;
  }
  return acc;
}

FcV fc_mb_trunc_bits(const FcMathB *m, FcV x, int keep)
{
  int drop = m->p - keep;
  FC_ASSERT(drop > 0 && drop < m->p);
  int64_t mask = ~(((int64_t)1 << drop) - 1);
  return fc_mb_flt(m, fc_mb_and(m, fc_mb_bits(m, x), fc_mb_ki(m, mask)));
}

void fc_mb_two_sum(const FcMathB *m, FcV a, FcV b, FcV *s, FcV *e)
{
  FcV sum = fc_mb_add(m, a, b);
  FcV bb = fc_mb_sub(m, sum, a);
  FcV aa = fc_mb_sub(m, sum, bb);
  *e = fc_mb_add(m, fc_mb_sub(m, a, aa), fc_mb_sub(m, b, bb));
  *s = sum;
}

void fc_mb_fast_two_sum(const FcMathB *m, FcV a, FcV b, FcV *s, FcV *e)
{
  FcV sum = fc_mb_add(m, a, b);
  *e = fc_mb_sub(m, b, fc_mb_sub(m, sum, a));
  *s = sum;
}

void fc_mb_two_prod(const FcMathB *m, FcV a, FcV b, FcV *p, FcV *e)
{
  /* Halves of at most p/2 bits (f32: 12 + 12; f64: 26 + 27), so the partial products are exact but the
   * low-by-low one for f64. */
  int keep = m->f64 ? 26 : 12;
  FcV ah = fc_mb_trunc_bits(m, a, keep), al = fc_mb_sub(m, a, ah);
  FcV bh = fc_mb_trunc_bits(m, b, keep), bl = fc_mb_sub(m, b, bh);
  FcV prod = fc_mb_mul(m, a, b);
  FcV err = fc_mb_sub(m, fc_mb_mul(m, ah, bh), prod);
  err = fc_mb_add(m, err, fc_mb_mul(m, ah, bl));
  err = fc_mb_add(m, err, fc_mb_mul(m, al, bh));
  err = fc_mb_add(m, err, fc_mb_mul(m, al, bl));
  *p = prod;
  *e = err;
}

void fc_mb_dd_mul(const FcMathB *m, FcV ah, FcV al, FcV bh, FcV bl, FcV *rh, FcV *rl)
{
  FcV p, e;
  fc_mb_two_prod(m, ah, bh, &p, &e);
  e = fc_mb_add(m, e, fc_mb_add(m, fc_mb_mul(m, ah, bl), fc_mb_mul(m, al, bh)));
  fc_mb_fast_two_sum(m, p, e, rh, rl);
}

LLVMValueRef fc_mb_table(const FcMathB *m, const char *name, const double *vals, unsigned n)
{
  LLVMValueRef g = LLVMGetNamedGlobal(m->mod, name);
  if (g) return g;
  LLVMValueRef *elems = malloc(n * sizeof *elems);
  FC_ASSERT(elems != NULL);
  for (unsigned i = 0; i < n; i++) elems[i] = LLVMConstReal(m->ef, vals[i]);
  LLVMTypeRef aty = LLVMArrayType2(m->ef, n);
  g = LLVMAddGlobal(m->mod, aty, name);
  LLVMSetInitializer(g, LLVMConstArray2(m->ef, elems, n));
  free(elems);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  LLVMSetAlignment(g, 64);
  return g;
}

FcV fc_mb_gather(const FcMathB *m, LLVMValueRef table, FcV idx)
{
  FcV ptr = LLVMBuildGEP2(m->b, m->ef, table, &idx, 1, "");
  if (!m->lanes) return LLVMBuildLoad2(m->b, m->ef, ptr, "");
  LLVMTypeRef over[2] = {m->ft, LLVMTypeOf(ptr)};
  FcV args[4] = {ptr, LLVMConstInt(LLVMInt32TypeInContext(m->ctx), m->f64 ? 8 : 4, 0), fc_mb_kb(m, true),
                 LLVMGetPoison(m->ft)};
  return intrinsic(m, "llvm.masked.gather", over, 2, args, 4);
}
