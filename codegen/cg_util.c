/* cg_util.c — the small builders every kernel emitter uses: dtype → LLVM types, element addresses,
 * loads and stores with conversion to and from the compute type, ONNX Cast conversions, counted loops,
 * strides, run-time data errors, and the small emit helpers the kernel emitters share (error reports,
 * intrinsic calls, entry-block allocas and tiles, constant tables, if blocks).
 *
 * f16 and bf16 are computed in float and stored as i16. The conversions between them are emitted as
 * integer bit manipulation with selects only (no branches, no library calls such as __truncsfhf2, no
 * dependence on F16C), so they vectorise and run on any CPU: narrowing rounds to nearest even with
 * subnormals, overflow to infinity and NaN kept quiet; widening is exact. Narrowing from f64 works on the
 * double's bits directly, so f64 → f16 rounds once, as the reference evaluator does (ir/eval_elementwise.c).
 *
 * Every conversion helper accepts scalars or vectors: constants are splatted to the value's shape.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cg_private.h"

/* ---- types and constants ------------------------------------------------------------------------- */

LLVMTypeRef fc_cg_i64(FcKernel *k) { return LLVMInt64TypeInContext(k->ctx); }

LLVMValueRef fc_cg_const_i64(FcKernel *k, int64_t v) { return LLVMConstInt(fc_cg_i64(k), (unsigned long long)v, 1); }

LLVMValueRef fc_cg_iadd(FcKernel *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(k->b, a, b, ""); }
LLVMValueRef fc_cg_isub(FcKernel *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildSub(k->b, a, b, ""); }
LLVMValueRef fc_cg_imul(FcKernel *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildMul(k->b, a, b, ""); }
LLVMValueRef fc_cg_imulc(FcKernel *k, LLVMValueRef a, int64_t c) {
  return c == 1 ? a : LLVMBuildMul(k->b, a, fc_cg_const_i64(k, c), "");
}
LLVMValueRef fc_cg_smin(FcKernel *k, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(k->b, LLVMBuildICmp(k->b, LLVMIntSLT, a, b, ""), a, b, "");
}
LLVMValueRef fc_cg_smax(FcKernel *k, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(k->b, LLVMBuildICmp(k->b, LLVMIntSGT, a, b, ""), a, b, "");
}
LLVMValueRef fc_cg_select(FcKernel *k, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(k->b, c, a, b, "");
}

LLVMTypeRef fc_cg_compute_type(FcKernel *k, FcDtype dt) {
  switch (dt) {
  case FC_DT_F16:
  case FC_DT_BF16:
  case FC_DT_F32: return LLVMFloatTypeInContext(k->ctx);
  case FC_DT_F64: return LLVMDoubleTypeInContext(k->ctx);
  case FC_DT_BOOL: return LLVMInt1TypeInContext(k->ctx);
  default: return LLVMIntTypeInContext(k->ctx, (unsigned)(fc_dtype_size(dt) * 8));
  }
}

LLVMTypeRef fc_cg_storage_type(FcKernel *k, FcDtype dt) {
  switch (dt) {
  case FC_DT_F16:
  case FC_DT_BF16: return LLVMInt16TypeInContext(k->ctx);
  case FC_DT_BOOL: return LLVMInt8TypeInContext(k->ctx);
  default: return fc_cg_compute_type(k, dt);
  }
}

/* `elem` shaped like `like`: itself for a scalar, a vector of as many lanes for a vector. */
static LLVMTypeRef shaped(LLVMTypeRef like, LLVMTypeRef elem) {
  if (LLVMGetTypeKind(like) == LLVMVectorTypeKind) return LLVMVectorType(elem, LLVMGetVectorSize(like));
  return elem;
}

static LLVMTypeRef scalar_of(LLVMTypeRef t) {
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
}

LLVMValueRef fc_cg_immediate(FcKernel *k, FcDtype dt, const FcTensor *t) {
  int64_t n;
  if (!t || !fc_type_numel(&t->type, &n) || n != 1 || t->type.dtype != dt || dt == FC_DT_BOOL) return NULL;
  LLVMTypeRef ct = fc_cg_compute_type(k, dt);
  if (fc_dtype_is_float(dt)) return LLVMConstReal(ct, fc_tensor_get_f64(t, 0));
  return LLVMConstInt(ct, (unsigned long long)fc_tensor_get_i64(t, 0), 1);
}

LLVMValueRef fc_cg_splat_const(LLVMTypeRef ty, LLVMValueRef c) {
  if (LLVMGetTypeKind(ty) != LLVMVectorTypeKind) return c;
  unsigned n = LLVMGetVectorSize(ty);
  LLVMValueRef lanes[64];
  FC_ASSERT(n <= 64);
  for (unsigned i = 0; i < n; i++) lanes[i] = c;
  return LLVMConstVector(lanes, n);
}

LLVMValueRef fc_cg_splat(FcKernel *k, LLVMValueRef v, unsigned n) {
  if (n == 1) return v;
  LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(v), n);
  LLVMValueRef one = LLVMBuildInsertElement(k->b, LLVMGetUndef(vt), v, fc_cg_const_i64(k, 0), "");
  LLVMValueRef zeros = LLVMConstNull(LLVMVectorType(LLVMInt32TypeInContext(k->ctx), n));
  return LLVMBuildShuffleVector(k->b, one, LLVMGetUndef(vt), zeros, "");
}

static LLVMValueRef c_int(LLVMTypeRef ty, uint64_t v) {
  return fc_cg_splat_const(ty, LLVMConstInt(scalar_of(ty), v, 0));
}
static LLVMValueRef c_real(LLVMTypeRef ty, double v) { return fc_cg_splat_const(ty, LLVMConstReal(scalar_of(ty), v)); }

/* ---- f16 / bf16 ------------------------------------------------------------------------------------ */

/* Rounds an integer right shift to nearest even: (x + (2^(s-1) - 1) + ((x >> s) & 1)) >> s, for x whose
 * top bit is clear (so the sum cannot wrap) and 1 <= s < width. */
static LLVMValueRef shr_round_even(LLVMBuilderRef b, LLVMTypeRef ty, LLVMValueRef x, LLVMValueRef s) {
  LLVMValueRef one = c_int(ty, 1);
  LLVMValueRef half_m1 = LLVMBuildSub(b, LLVMBuildShl(b, one, LLVMBuildSub(b, s, one, ""), ""), one, "");
  LLVMValueRef odd = LLVMBuildAnd(b, LLVMBuildLShr(b, x, s, ""), one, "");
  LLVMValueRef sum = LLVMBuildAdd(b, LLVMBuildAdd(b, x, half_m1, ""), odd, "");
  return LLVMBuildLShr(b, sum, s, "");
}

/* A float or double (scalar or vector) to the bits of f16 (bf16 when `bf16`), as i16. */
static LLVMValueRef narrow_to_half_bits(FcKernel *k, LLVMValueRef v, bool bf16) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef vt = LLVMTypeOf(v);
  bool src64 = LLVMGetTypeKind(scalar_of(vt)) == LLVMDoubleTypeKind;
  unsigned w = src64 ? 64 : 32;
  int ms = src64 ? 52 : 23, bias_s = src64 ? 1023 : 127;
  int md = bf16 ? 7 : 10, ed = bf16 ? 8 : 5, bias_d = bf16 ? 127 : 15;
  LLVMTypeRef it = shaped(vt, LLVMIntTypeInContext(k->ctx, w));
  LLVMTypeRef i16 = shaped(vt, LLVMInt16TypeInContext(k->ctx));
  LLVMValueRef bits = LLVMBuildBitCast(b, v, it, "");
  LLVMValueRef sign = LLVMBuildTrunc(b, LLVMBuildLShr(b, bits, c_int(it, w - 16), ""), i16, "");
  sign = LLVMBuildAnd(b, sign, c_int(i16, 0x8000), "");
  LLVMValueRef abs = LLVMBuildAnd(b, bits, c_int(it, (UINT64_MAX >> (65 - w))), "");
  uint64_t src_inf = ((1ull << (w - 1 - (unsigned)ms)) - 1) << ms;
  uint64_t dst_inf = ((1ull << ed) - 1) << md;
  int shift = ms - md;
  LLVMValueRef res;
  if (bias_s == bias_d) {
    /* Same exponent range (f32 → bf16): dropping mantissa bits with rounding is the whole conversion,
     * subnormals and the carry into infinity included. */
    res = shr_round_even(b, it, abs, c_int(it, (uint64_t)shift));
  } else {
    uint64_t rebias = (uint64_t)(bias_s - bias_d) << ms;
    /* Normal results: rebias the exponent, round the mantissa; a carry or a large exponent gives a
     * value at or beyond infinity's bits, clamped to infinity. */
    LLVMValueRef is_normal = LLVMBuildICmp(b, LLVMIntUGE, abs, c_int(it, rebias + (1ull << ms)), "");
    LLVMValueRef rn = shr_round_even(b, it, LLVMBuildSub(b, abs, c_int(it, rebias), ""), c_int(it, (uint64_t)shift));
    rn = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGT, rn, c_int(it, dst_inf), ""), c_int(it, dst_inf), rn, "");
    /* Subnormal results: the significand with its implicit bit, shifted right by
     * shift + 1 + (bias_s - bias_d) - exponent; beyond ms + 2 everything rounds to zero, so the shift is
     * clamped there (which also keeps it below the width for the lanes that take the normal path). */
    LLVMValueRef e = LLVMBuildLShr(b, abs, c_int(it, (uint64_t)ms), "");
    LLVMValueRef s2 = LLVMBuildSub(b, c_int(it, (uint64_t)(shift + 1 + bias_s - bias_d)), e, "");
    LLVMValueRef cap = c_int(it, (uint64_t)ms + 2);
    s2 = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGT, s2, cap, ""), cap, s2, "");
    LLVMValueRef sig = LLVMBuildOr(b, LLVMBuildAnd(b, abs, c_int(it, (1ull << ms) - 1), ""), c_int(it, 1ull << ms), "");
    LLVMValueRef rs = shr_round_even(b, it, sig, s2);
    res = LLVMBuildSelect(b, is_normal, rn, rs, "");
  }
  /* NaN stays NaN, quiet, with the top of its payload (as NumPy and the reference evaluator do). */
  LLVMValueRef is_nan = LLVMBuildICmp(b, LLVMIntUGT, abs, c_int(it, src_inf), "");
  LLVMValueRef payload = LLVMBuildAnd(b, LLVMBuildLShr(b, abs, c_int(it, (uint64_t)shift), ""),
                                      c_int(it, (1ull << md) - 1), "");
  LLVMValueRef nan = LLVMBuildOr(b, payload, c_int(it, dst_inf | (1ull << (md - 1))), "");
  res = LLVMBuildSelect(b, is_nan, nan, res, "");
  return LLVMBuildOr(b, LLVMBuildTrunc(b, res, i16, ""), sign, "");
}

/* i16 bits of f16 (bf16 when `bf16`) to float, exactly. */
static LLVMValueRef widen_half_bits(FcKernel *k, LLVMValueRef h, bool bf16) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef ht = LLVMTypeOf(h);
  LLVMTypeRef i32 = shaped(ht, LLVMInt32TypeInContext(k->ctx));
  LLVMTypeRef f32 = shaped(ht, LLVMFloatTypeInContext(k->ctx));
  LLVMValueRef x = LLVMBuildZExt(b, h, i32, "");
  if (bf16) return LLVMBuildBitCast(b, LLVMBuildShl(b, x, c_int(i32, 16), ""), f32, "");
  LLVMValueRef sign = LLVMBuildShl(b, LLVMBuildAnd(b, x, c_int(i32, 0x8000), ""), c_int(i32, 16), "");
  LLVMValueRef mag = LLVMBuildShl(b, LLVMBuildAnd(b, x, c_int(i32, 0x7fff), ""), c_int(i32, 13), "");
  LLVMValueRef e = LLVMBuildAnd(b, LLVMBuildLShr(b, x, c_int(i32, 10), ""), c_int(i32, 0x1f), "");
  LLVMValueRef normal = LLVMBuildAdd(b, mag, c_int(i32, 112u << 23), "");
  LLVMValueRef infnan = LLVMBuildOr(b, mag, c_int(i32, 0x7f800000), "");
  /* Zero and subnormals: mantissa × 2^-24, exact in float. */
  LLVMValueRef m = LLVMBuildAnd(b, x, c_int(i32, 0x3ff), "");
  LLVMValueRef sub = LLVMBuildFMul(b, LLVMBuildUIToFP(b, m, f32, ""), c_real(f32, 0x1p-24), "");
  sub = LLVMBuildBitCast(b, sub, i32, "");
  LLVMValueRef r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, e, c_int(i32, 31), ""), infnan, normal, "");
  r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, e, c_int(i32, 0), ""), sub, r, "");
  return LLVMBuildBitCast(b, LLVMBuildOr(b, r, sign, ""), f32, "");
}

/* A float/double value rounded to f16 (bf16) precision and returned as float. */
static LLVMValueRef round_to_half(FcKernel *k, LLVMValueRef v, bool bf16) {
  return widen_half_bits(k, narrow_to_half_bits(k, v, bf16), bf16);
}

/* ---- element access ------------------------------------------------------------------------------ */

LLVMValueRef fc_cg_gep(FcKernel *k, FcDtype dt, LLVMValueRef base, LLVMValueRef index) {
  return LLVMBuildInBoundsGEP2(k->b, fc_cg_storage_type(k, dt), base, &index, 1, "");
}

LLVMValueRef fc_cg_load(FcKernel *k, FcDtype dt, LLVMValueRef base, LLVMValueRef index) {
  LLVMTypeRef st = fc_cg_storage_type(k, dt);
  LLVMValueRef v = LLVMBuildLoad2(k->b, st, fc_cg_gep(k, dt, base, index), "");
  LLVMSetAlignment(v, (unsigned)fc_dtype_size(dt));
  switch (dt) {
  case FC_DT_F16: return widen_half_bits(k, v, false);
  case FC_DT_BF16: return widen_half_bits(k, v, true);
  case FC_DT_BOOL: return LLVMBuildICmp(k->b, LLVMIntNE, v, LLVMConstInt(st, 0, 0), "");
  default: return v;
  }
}

void fc_cg_store(FcKernel *k, FcDtype dt, LLVMValueRef base, LLVMValueRef index, LLVMValueRef v) {
  LLVMTypeRef st = fc_cg_storage_type(k, dt);
  switch (dt) {
  case FC_DT_F16: v = narrow_to_half_bits(k, v, false); break;
  case FC_DT_BF16: v = narrow_to_half_bits(k, v, true); break;
  case FC_DT_BOOL: v = LLVMBuildZExt(k->b, v, st, ""); break;
  default: break;
  }
  LLVMValueRef s = LLVMBuildStore(k->b, v, fc_cg_gep(k, dt, base, index));
  LLVMSetAlignment(s, (unsigned)fc_dtype_size(dt));
}

/* ---- conversions ----------------------------------------------------------------------------------- */

/* Calls an overloaded intrinsic such as llvm.fptosi.sat.<ret>.<arg> on one argument. */
static LLVMValueRef call_intrinsic1(FcKernel *k, const char *name, LLVMTypeRef ret, LLVMValueRef arg) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  FC_ASSERT(id != 0);
  LLVMTypeRef over[2] = {ret, LLVMTypeOf(arg)};
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(k->mod, id, over, 2);
  LLVMTypeRef fty = LLVMIntrinsicGetType(k->ctx, id, over, 2);
  return LLVMBuildCall2(k->b, fty, fn, &arg, 1, "");
}

LLVMValueRef fc_cg_convert(FcKernel *k, LLVMValueRef v, FcDtype from, FcDtype to) {
  if (from == to) return v;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef vt = LLVMTypeOf(v);
  LLVMTypeRef tt = shaped(vt, fc_cg_compute_type(k, to));
  FcDtypeClass fc = fc_dtype_class(from), tc = fc_dtype_class(to);
  bool to_half = to == FC_DT_F16 || to == FC_DT_BF16;
  if (tc == FC_DTC_BOOL) {
    if (fc == FC_DTC_FLOAT) return LLVMBuildFCmp(b, LLVMRealUNE, v, c_real(vt, 0.0), "");
    return LLVMBuildICmp(b, LLVMIntNE, v, c_int(vt, 0), "");
  }
  if (fc == FC_DTC_FLOAT) {
    if (tc == FC_DTC_FLOAT) {
      /* f16/bf16 targets round once from the source's own precision (f64 bits directly). */
      if (to_half) return round_to_half(k, v, to == FC_DT_BF16);
      if (LLVMGetTypeKind(scalar_of(vt)) == LLVMGetTypeKind(scalar_of(tt))) return v; /* f16/bf16 → f32 */
      return to == FC_DT_F64 ? LLVMBuildFPExt(b, v, tt, "") : LLVMBuildFPTrunc(b, v, tt, "");
    }
    /* Truncation toward zero, saturating at the target's range, NaN → 0: exactly llvm.fpto[su]i.sat. For
     * targets of at most 16 bits the same result comes from clamping in float (the bounds are exact),
     * then an in-range fptosi to i32 and a truncation, which x86 vectorises (cvttps2dq + pack); LLVM 19
     * scalarises a vector fptoui.sat to u8 into one conversion per element. maxnum takes the non-NaN
     * operand, so NaN clamps to the lower bound: 0 for unsigned targets, and a select for signed ones. */
    unsigned tw = LLVMGetIntTypeWidth(scalar_of(tt));
    if (tw <= 16 && LLVMGetTypeKind(scalar_of(vt)) != LLVMHalfTypeKind &&
        LLVMGetTypeKind(scalar_of(vt)) != LLVMBFloatTypeKind) {
      bool sgn = tc == FC_DTC_SINT;
      double lo = sgn ? -ldexp(1.0, (int)tw - 1) : 0.0, hi = sgn ? ldexp(1.0, (int)tw - 1) - 1 : ldexp(1.0, (int)tw) - 1;
      LLVMValueRef a[2] = {v, c_real(vt, lo)};
      LLVMValueRef c = fc_cg_intrinsic(k, "llvm.maxnum", vt, a, 2);
      a[0] = c;
      a[1] = c_real(vt, hi);
      c = fc_cg_intrinsic(k, "llvm.minnum", vt, a, 2);
      if (sgn) c = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, v, v, ""), c_real(vt, 0.0), c, "");
      LLVMValueRef i32v = LLVMBuildFPToSI(b, c, shaped(vt, LLVMInt32TypeInContext(k->ctx)), "");
      return LLVMBuildTrunc(b, i32v, tt, "");
    }
    return call_intrinsic1(k, tc == FC_DTC_SINT ? "llvm.fptosi.sat" : "llvm.fptoui.sat", tt, v);
  }
  bool sint = fc == FC_DTC_SINT;
  if (tc == FC_DTC_FLOAT) {
    if (to_half) {
      /* Through double, exact for every source up to 32 bits, then one rounding to f16/bf16. */
      LLVMTypeRef dt = shaped(vt, LLVMDoubleTypeInContext(k->ctx));
      LLVMValueRef d = sint ? LLVMBuildSIToFP(b, v, dt, "") : LLVMBuildUIToFP(b, v, dt, "");
      return round_to_half(k, d, to == FC_DT_BF16);
    }
    return sint ? LLVMBuildSIToFP(b, v, tt, "") : LLVMBuildUIToFP(b, v, tt, "");
  }
  /* Integer (or bool) to integer: keep the low bits; widen by the source's signedness. */
  unsigned fw = LLVMGetIntTypeWidth(scalar_of(vt)), tw = LLVMGetIntTypeWidth(scalar_of(tt));
  if (fw == tw) return v;
  if (fw > tw) return LLVMBuildTrunc(b, v, tt, "");
  return sint ? LLVMBuildSExt(b, v, tt, "") : LLVMBuildZExt(b, v, tt, "");
}

/* ---- loops ------------------------------------------------------------------------------------------ */

LLVMValueRef fc_cg_loop_begin(FcKernel *k, FcLoop *l, LLVMValueRef lo, LLVMValueRef hi, int64_t step, const char *name) {
  FC_ASSERT(step > 0);
  LLVMBuilderRef b = k->b;
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
  LLVMValueRef fn = LLVMGetBasicBlockParent(pre);
  const char *n = name ? name : "i";
  l->header = LLVMAppendBasicBlockInContext(k->ctx, fn, n);
  l->body = LLVMAppendBasicBlockInContext(k->ctx, fn, "body");
  l->latch = LLVMAppendBasicBlockInContext(k->ctx, fn, "latch");
  l->exit = LLVMAppendBasicBlockInContext(k->ctx, fn, "exit");
  l->step = fc_cg_const_i64(k, step);
  LLVMBuildBr(b, l->header);
  LLVMPositionBuilderAtEnd(b, l->header);
  l->iv = LLVMBuildPhi(b, fc_cg_i64(k), n);
  LLVMAddIncoming(l->iv, &lo, &pre, 1);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, l->iv, hi, ""), l->body, l->exit);
  LLVMPositionBuilderAtEnd(b, l->latch);
  /* iv < hi <= INT64_MAX and hi - lo fits the loop's trip count, so iv + step cannot wrap for the
   * loops kernels build (bounds are tensor sizes); nsw lets the vectoriser reason about the count. */
  l->next = LLVMBuildNSWAdd(b, l->iv, l->step, "");
  LLVMBuildBr(b, l->header);
  LLVMAddIncoming(l->iv, &l->next, &l->latch, 1);
  LLVMPositionBuilderAtEnd(b, l->body);
  return l->iv;
}

void fc_cg_loop_end(FcKernel *k, FcLoop *l) {
  LLVMBuildBr(k->b, l->latch);
  LLVMPositionBuilderAtEnd(k->b, l->exit);
}

/* ---- strides ----------------------------------------------------------------------------------------- */

/* Products of dims of verified types fit int64 (their element counts do), so no step can overflow. */
const int64_t *fc_cg_strides(FcArena *a, const FcType *t) {
  int64_t *s = FC_NEW_ARRAY(a, int64_t, (size_t)(t->rank > 0 ? t->rank : 1));
  int64_t acc = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    s[i] = acc;
    if (!fc_checked_mul(acc, t->dims[i] > 0 ? t->dims[i] : 1, &acc)) acc = INT64_MAX;
  }
  return s;
}

const int64_t *fc_cg_broadcast_strides(FcArena *a, const FcType *operand, const FcType *result) {
  FC_ASSERT(operand->rank <= result->rank);
  int64_t *s = FC_NEW_ARRAY(a, int64_t, (size_t)(result->rank > 0 ? result->rank : 1));
  const int64_t *os = fc_cg_strides(a, operand);
  int lead = result->rank - operand->rank;
  for (int i = 0; i < result->rank; i++) {
    if (i < lead) continue; /* zeroed: a missing leading dim is broadcast */
    int j = i - lead;
    FC_ASSERT(operand->dims[j] == result->dims[i] || operand->dims[j] == 1);
    s[i] = operand->dims[j] == 1 ? 0 : os[j];
  }
  return s;
}

/* ---- run-time data errors ----------------------------------------------------------------------------- */

/* The status word keeps the first failing kernel: kernels run in order and a compare-and-swap from 0
 * never overwrites an earlier kernel's mark (nor one set by another thread of the same kernel). */
void fc_cg_flag_error(FcKernel *k, LLVMValueRef bad) {
  FcCg *cg = k->cg;
  FC_ASSERT(cg && cg->status);
  LLVMBuilderRef b = k->b;
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
  LLVMBasicBlockRef flag = LLVMAppendBasicBlockInContext(k->ctx, fn, "flag_error");
  LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(k->ctx, fn, "after_flag");
  LLVMValueRef br = LLVMBuildCondBr(b, bad, flag, cont);
  /* Bad data is the rare path: keep the loop's hot path straight. */
  LLVMMetadataRef w[3] = {LLVMMDStringInContext2(k->ctx, "branch_weights", 14),
                       LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(k->ctx), 1, 0)),
                       LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(k->ctx), 1000000, 0))};
  LLVMMetadataRef md = LLVMMDNodeInContext2(k->ctx, w, 3);
  LLVMSetMetadata(br, LLVMGetMDKindIDInContext(k->ctx, "prof", 4), LLVMMetadataAsValue(k->ctx, md));
  LLVMPositionBuilderAtEnd(b, flag);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMValueRef x = LLVMBuildAtomicCmpXchg(b, cg->status, LLVMConstInt(i32, 0, 0),
                                          LLVMConstInt(i32, (unsigned long long)cg->kernel_index + 1, 0),
                                          LLVMAtomicOrderingMonotonic, LLVMAtomicOrderingMonotonic, 0);
  (void)x;
  LLVMBuildBr(b, cont);
  LLVMPositionBuilderAtEnd(b, cont);
}

/* ---- kernels ---------------------------------------------------------------------------------------- */

void fc_kernel_set_outer(FcKernel *k, int64_t outer, double work_per_outer) {
  FC_ASSERT(outer >= 0);
  k->outer = outer;
  k->work_per_outer = work_per_outer > 0 ? work_per_outer : 1;
}

/* ---- small emit helpers ------------------------------------------------------------------------------ */

FcStatus fc_cg_error(FcKernel *k, FcStatus st, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fc_error_node(k->diag, st, fc_op_name(k->op), fc_op_info(k->op->kind)->name, "%s", msg);
}

LLVMValueRef fc_cg_intrinsic(FcKernel *k, const char *name, LLVMTypeRef ty, LLVMValueRef *args, unsigned n) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  FC_ASSERT(id != 0);
  size_t n_over = ty ? 1 : 0;
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(k->mod, id, ty ? &ty : NULL, n_over);
  return LLVMBuildCall2(k->b, LLVMIntrinsicGetType(k->ctx, id, ty ? &ty : NULL, n_over), fn, args, n, "");
}

/* The alignment the masked operations claim for vector type vt: its element's size up to 4 (what every
 * element of a planned buffer has, and all the f32 callers ever claimed), so byte vectors claim 1. */
static unsigned element_align(LLVMTypeRef vt) {
  LLVMTypeRef e = LLVMGetElementType(vt);
  switch (LLVMGetTypeKind(e)) {
  case LLVMIntegerTypeKind: return LLVMGetIntTypeWidth(e) >= 32 ? 4 : LLVMGetIntTypeWidth(e) >= 16 ? 2 : 1;
  case LLVMHalfTypeKind: case LLVMBFloatTypeKind: return 2;
  default: return 4;
  }
}

/* llvm.masked.load / llvm.masked.store of vector type vt at p (alignment: element_align): lanes whose mask bit
 * is off are neither read nor written (they may lie outside any object) and read as `passthru`. */
LLVMValueRef fc_cg_masked_load(FcKernel *k, LLVMTypeRef vt, LLVMValueRef p, LLVMValueRef mask, LLVMValueRef passthru) {
  static const char name[] = "llvm.masked.load";
  unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
  FC_ASSERT(id != 0);
  LLVMTypeRef over[2] = {vt, LLVMTypeOf(p)};
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(k->mod, id, over, 2);
  LLVMValueRef args[4] = {p, LLVMConstInt(LLVMInt32TypeInContext(k->ctx), element_align(vt), 0), mask, passthru};
  return LLVMBuildCall2(k->b, LLVMIntrinsicGetType(k->ctx, id, over, 2), fn, args, 4, "");
}

void fc_cg_masked_store(FcKernel *k, LLVMValueRef v, LLVMValueRef p, LLVMValueRef mask) {
  static const char name[] = "llvm.masked.store";
  unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
  FC_ASSERT(id != 0);
  LLVMTypeRef over[2] = {LLVMTypeOf(v), LLVMTypeOf(p)};
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(k->mod, id, over, 2);
  LLVMValueRef args[4] = {v, p, LLVMConstInt(LLVMInt32TypeInContext(k->ctx), element_align(LLVMTypeOf(v)), 0), mask};
  LLVMBuildCall2(k->b, LLVMIntrinsicGetType(k->ctx, id, over, 2), fn, args, 4, "");
}

LLVMValueRef fc_cg_concat(FcKernel *k, LLVMValueRef *v, int n) {
  for (; n > 1; n /= 2) {
    int w = (int)LLVMGetVectorSize(LLVMTypeOf(v[0])), idx[256];
    FC_ASSERT(2 * w <= 256);
    for (int i = 0; i < 2 * w; i++) idx[i] = i;
    for (int j = 0; j < n / 2; j++) v[j] = fc_cg_shuffle(k, v[2 * j], v[2 * j + 1], idx, 2 * w);
  }
  return v[0];
}

void fc_cg_store_prefix(FcKernel *k, LLVMValueRef v, LLVMValueRef p, unsigned n) {
  LLVMTypeRef et = LLVMGetElementType(LLVMTypeOf(v));
  unsigned lanes = LLVMGetVectorSize(LLVMTypeOf(v)), done = 0, top = 1;
  FC_ASSERT(n <= lanes && lanes <= 64);
  while (2 * top <= n) top *= 2;
  for (unsigned piece = top; piece >= 1; piece /= 2) {
    if (n - done < piece) continue;
    int idx[64];
    for (unsigned i = 0; i < piece; i++) idx[i] = (int)(done + i);
    LLVMValueRef part = fc_cg_shuffle(k, v, v, idx, (int)piece);
    LLVMValueRef at = fc_cg_const_i64(k, done);
    LLVMValueRef st = LLVMBuildStore(k->b, part, LLVMBuildGEP2(k->b, et, p, &at, 1, ""));
    LLVMSetAlignment(st, 1);
    done += piece;
  }
  FC_ASSERT(done == n);
}

void fc_cg_row_chunk(FcKernel *k, LLVMValueRef o, int64_t inner, int64_t chunk, int64_t nchunks, LLVMValueRef *row,
                     LLVMValueRef *lo, LLVMValueRef *hi) {
  LLVMBuilderRef b = k->b;
  *row = o;
  *lo = fc_cg_const_i64(k, 0);
  *hi = fc_cg_const_i64(k, inner);
  if (nchunks <= 1) return;
  LLVMValueRef nc = fc_cg_const_i64(k, nchunks);
  *row = LLVMBuildUDiv(b, o, nc, "row");
  *lo = LLVMBuildMul(b, LLVMBuildURem(b, o, nc, ""), fc_cg_const_i64(k, chunk), "lo");
  LLVMValueRef end = LLVMBuildAdd(b, *lo, fc_cg_const_i64(k, chunk), "");
  *hi = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, end, *hi, ""), end, *hi, "hi");
}

LLVMValueRef fc_cg_madd(FcKernel *k, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  LLVMTypeRef t = LLVMTypeOf(a);
  if (LLVMGetTypeKind(t) == LLVMIntegerTypeKind) return LLVMBuildAdd(k->b, LLVMBuildMul(k->b, a, b, ""), c, "");
  LLVMValueRef args[3] = {a, b, c};
  return fc_cg_intrinsic(k, "llvm.fmuladd", t, args, 3);
}

LLVMValueRef fc_cg_entry_alloca(FcKernel *k, LLVMTypeRef t, const char *name) {
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(k->fn);
  LLVMBuilderRef eb = LLVMCreateBuilderInContext(k->ctx);
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first) LLVMPositionBuilderBefore(eb, first);
  else LLVMPositionBuilderAtEnd(eb, entry);
  LLVMValueRef a = LLVMBuildAlloca(eb, t, name);
  LLVMSetAlignment(a, 64);
  LLVMDisposeBuilder(eb);
  return a;
}

LLVMValueRef fc_cg_tile_new(FcKernel *k, LLVMTypeRef t, int64_t n, const char *name) {
  return fc_cg_entry_alloca(k, LLVMArrayType2(t, (uint64_t)(n > 0 ? n : 1)), name);
}

LLVMValueRef fc_cg_tile_at(FcKernel *k, LLVMTypeRef t, LLVMValueRef tile, LLVMValueRef i) {
  return LLVMBuildGEP2(k->b, t, tile, &i, 1, "");
}

LLVMValueRef fc_cg_const_table(FcKernel *k, LLVMTypeRef t, LLVMValueRef *vals, int64_t n, const char *name) {
  if (n == 0) vals[n++] = LLVMConstNull(t);
  LLVMValueRef init = LLVMConstArray2(t, vals, (uint64_t)n);
  /* LLVM uniques constant arrays, so an equal table has this very initializer: one global for both keeps
   * the kernels that read it textually equal (ops of one shape then share one function, cg_module.c) */
  for (LLVMValueRef g = LLVMGetFirstGlobal(k->mod); g; g = LLVMGetNextGlobal(g))
    if (LLVMGetInitializer(g) == init && LLVMIsGlobalConstant(g) && LLVMGetLinkage(g) == LLVMPrivateLinkage &&
        LLVMGetAlignment(g) == 64)
      return g;
  LLVMValueRef g = LLVMAddGlobal(k->mod, LLVMTypeOf(init), name);
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  LLVMSetAlignment(g, 64);
  return g;
}

LLVMValueRef fc_cg_i64_table(FcKernel *k, const int64_t *v, int64_t n, const char *name) {
  LLVMValueRef *vals = FC_NEW_ARRAY(&k->op->graph->module->arena, LLVMValueRef, (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) vals[i] = LLVMConstInt(fc_cg_i64(k), (unsigned long long)v[i], 1);
  return fc_cg_const_table(k, fc_cg_i64(k), vals, n, name);
}

LLVMValueRef fc_cg_shuffle(FcKernel *k, LLVMValueRef a, LLVMValueRef b, const int *idx, int n) {
  LLVMValueRef m[256];
  FC_ASSERT(n > 0 && n <= 256);
  for (int i = 0; i < n; i++) m[i] = LLVMConstInt(LLVMInt32TypeInContext(k->ctx), (unsigned)idx[i], 0);
  return LLVMBuildShuffleVector(k->b, a, b ? b : LLVMGetUndef(LLVMTypeOf(a)), LLVMConstVector(m, (unsigned)n), "");
}

void fc_cg_fill_bytes(FcKernel *k, LLVMValueRef dst, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef v) {
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  FcLoop l;
  LLVMValueRef j = fc_cg_loop_begin(k, &l, lo, fc_cg_smax(k, lo, hi), 1, "fill");
  LLVMBuildStore(k->b, v, LLVMBuildGEP2(k->b, i8, dst, &j, 1, ""));
  fc_cg_loop_end(k, &l);
}

LLVMBasicBlockRef fc_cg_if_begin(FcKernel *k, LLVMValueRef cond) {
  LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "then");
  LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "endif");
  LLVMBuildCondBr(k->b, cond, then, cont);
  LLVMPositionBuilderAtEnd(k->b, then);
  return cont;
}

void fc_cg_if_end(FcKernel *k, LLVMBasicBlockRef cont) {
  LLVMBuildBr(k->b, cont);
  LLVMPositionBuilderAtEnd(k->b, cont);
}

void fc_cg_unflatten(FcKernel *k, LLVMValueRef lin, const int64_t *dims, int n, LLVMValueRef *coord) {
  for (int i = n - 1; i > 0; i--) {
    coord[i] = LLVMBuildURem(k->b, lin, fc_cg_const_i64(k, dims[i]), "");
    lin = LLVMBuildUDiv(k->b, lin, fc_cg_const_i64(k, dims[i]), "");
  }
  if (n > 0) coord[0] = lin;
}

/* ---- element-wise program steps ------------------------------------------------------------------------- */

FcStatus fc_cg_program_steps(FcKernel *k, const FcEwProgram *p, FcDtype dt, const char *what, FcCgStep **out) {
  FcArena *arena = &k->op->graph->module->arena;
  FcCgStep *steps = FC_NEW_ARRAY(arena, FcCgStep, (size_t)(p->n_steps > 0 ? p->n_steps : 1));
  for (int i = 0; i < p->n_steps; i++) {
    const FcEwStep *st = &p->steps[i];
    FcCgStep *s = &steps[i];
    for (int a = 0; a < st->n_args; a++) {
      s->args[a] = (FcValue){.type = {.dtype = dt, .rank = 0, .dims = NULL}};
      s->uses[a] = (FcUse){.value = &s->args[a], .user = &s->op, .index = a};
    }
    s->op = (FcOp){.kind = st->kind, .n_operands = st->n_args, .n_results = 1, .operands = s->uses,
                   .results = &s->res, .loc = k->op->loc, .graph = k->op->graph};
    s->res = (FcValue){.def = &s->op};
    const FcOpInfo *info = fc_op_info(st->kind);
    FcDiag d;
    fc_diag_init(&d);
    if (!info->infer || info->infer(&s->op, arena, &d) != FC_OK || s->res.type.dtype != dt || s->res.type.rank != 0)
      return fc_cg_error(k, FC_ERR_INPUT, "%s step %d (%s) is not an element-wise op on %s values", what, i, info->name,
                         fc_dtype_name(dt));
  }
  *out = steps;
  return FC_OK;
}

/* ---- matmul batches -------------------------------------------------------------------------------------- */

void fc_cg_matmul_batch_strides(const FcType *a, const FcType *b, const FcType *r, int64_t *as, int64_t *bs,
                                int64_t *na, int64_t *nb_out) {
  int rank = r->rank;
  int64_t sa = 1, sb = 1;
  for (int d = rank - 3; d >= 0; d--) {
    int da = d - (rank - a->rank), db = d - (rank - b->rank);
    int64_t ad = da >= 0 ? a->dims[da] : 1, bd = db >= 0 ? b->dims[db] : 1;
    as[d] = ad == 1 ? 0 : sa;
    bs[d] = bd == 1 ? 0 : sb;
    sa *= ad; /* products of dims of verified types: no overflow */
    sb *= bd;
  }
  *na = sa;
  *nb_out = sb;
}
