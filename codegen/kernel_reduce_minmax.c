/* kernel_reduce_minmax.c — the max or min of a long contiguous run of f32, as reduce_max/reduce_min define
 * it (llvm.maximum/minimum: NaN if any element is NaN, and -0 below +0), at the cost of a plain compare.
 *
 * Stepping llvm.maximum vector by vector costs x86 three blends besides the max and the NaN test, on a
 * dependency chain through the accumulator, where a compare-select per vector keeps up with the loads
 * (bench/RESULTS.md has the times). So the loop keeps three accumulators per vector lane,
 * with U independent vectors of each, and settles NaN and the sign of zero once at the end:
 *   m = x > m ? x : m          (MAXPS's own semantics: a NaN x leaves m; m never holds a NaN)
 *   s = smax(s, bits(x))       (signed integers of the bit patterns)
 *   a = umax(a, bits(x) & 0x7fffffff)
 * (min: <, smin, umax). Then: a NaN was seen iff a > 0x7f800000; else the answer is m, except that a zero m
 * does not know its sign: the max is zero with every element <= 0, and a +0 was among them iff some
 * element's sign bit was clear, i.e. s >= 0 (the min: a -0 iff some sign bit was set, s < 0). The run's
 * last elements (fewer than a block of vectors) take the same steps on scalars. */
#include <math.h>

#include "codegen.h"

enum { UNROLL = 4 }; /* independent accumulators: the compare's latency over its throughput */

typedef struct MinMaxAcc {
  LLVMValueRef m, s, a; /* allocas: the float, the signed bits, the magnitude bits */
} MinMaxAcc;

static LLVMValueRef splat_f(LLVMTypeRef t, double v) {
  LLVMValueRef c = LLVMConstReal(LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t, v);
  return fc_cg_splat_const(t, c);
}
static LLVMValueRef splat_i(LLVMTypeRef t, uint32_t v) {
  LLVMValueRef c = LLVMConstInt(LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t, v, 0);
  return fc_cg_splat_const(t, c);
}

static void acc_init(FcKernel *k, MinMaxAcc *acc, LLVMTypeRef ft, LLVMTypeRef it, bool is_max) {
  acc->m = fc_cg_entry_alloca(k, ft, "mm_m");
  acc->s = fc_cg_entry_alloca(k, it, "mm_s");
  acc->a = fc_cg_entry_alloca(k, it, "mm_a");
  LLVMBuildStore(k->b, splat_f(ft, is_max ? -INFINITY : INFINITY), acc->m);
  LLVMBuildStore(k->b, splat_i(it, is_max ? 0x80000000u : 0x7fffffffu), acc->s);
  LLVMBuildStore(k->b, splat_i(it, 0), acc->a);
}

/* Combines the accumulators with a float m, signed bits s and magnitude bits a (scalars or vectors, as the
 * accumulators). */
static void combine(FcKernel *k, const MinMaxAcc *acc, LLVMTypeRef ft, LLVMTypeRef it, LLVMValueRef m, LLVMValueRef s,
                    LLVMValueRef a, bool is_max) {
  LLVMBuilderRef B = k->b;
  LLVMValueRef m0 = LLVMBuildLoad2(B, ft, acc->m, "");
  LLVMValueRef better = LLVMBuildFCmp(B, is_max ? LLVMRealOGT : LLVMRealOLT, m, m0, "");
  LLVMBuildStore(B, LLVMBuildSelect(B, better, m, m0, ""), acc->m);
  LLVMValueRef sa[2] = {LLVMBuildLoad2(B, it, acc->s, ""), s};
  LLVMBuildStore(B, fc_cg_intrinsic(k, is_max ? "llvm.smax" : "llvm.smin", it, sa, 2), acc->s);
  LLVMValueRef aa[2] = {LLVMBuildLoad2(B, it, acc->a, ""), a};
  LLVMBuildStore(B, fc_cg_intrinsic(k, "llvm.umax", it, aa, 2), acc->a);
}

/* One step with the floats x. */
static void step(FcKernel *k, const MinMaxAcc *acc, LLVMTypeRef ft, LLVMTypeRef it, LLVMValueRef x, bool is_max) {
  LLVMValueRef bits = LLVMBuildBitCast(k->b, x, it, "");
  combine(k, acc, ft, it, x, bits, LLVMBuildAnd(k->b, bits, splat_i(it, 0x7fffffffu), ""), is_max);
}

static LLVMValueRef reduce_lanes(FcKernel *k, const char *name, LLVMTypeRef vt, LLVMValueRef acc) {
  LLVMValueRef v = LLVMBuildLoad2(k->b, vt, acc, "");
  v = fc_cg_intrinsic(k, name, vt, &v, 1);
  /* the float lanes hold no NaN: plain max/min instructions fold them, without maxnum's NaN checks */
  if (LLVMGetTypeKind(LLVMGetElementType(vt)) == LLVMFloatTypeKind) LLVMSetFastMathFlags(v, LLVMFastMathNoNaNs);
  return v;
}

LLVMValueRef fc_cg_reduce_minmax_f32(FcKernel *k, bool is_max, LLVMValueRef base, int64_t n) {
  LLVMBuilderRef B = k->b;
  int w = fc_target_lanes(k->target, FC_DT_F32);
  LLVMTypeRef f = LLVMFloatTypeInContext(k->ctx), i = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef vf = LLVMVectorType(f, (unsigned)w), vi = LLVMVectorType(i, (unsigned)w);
  int64_t block = (int64_t)w * UNROLL, nvec = n / block * block;

  MinMaxAcc sc;
  acc_init(k, &sc, f, i, is_max);
  if (nvec > 0) {
    MinMaxAcc v[UNROLL];
    for (int u = 0; u < UNROLL; u++) acc_init(k, &v[u], vf, vi, is_max);
    FcLoop l;
    LLVMValueRef j = fc_cg_loop_begin(k, &l, fc_cg_const_i64(k, 0), fc_cg_const_i64(k, nvec), block, "mm");
    for (int u = 0; u < UNROLL; u++) {
      LLVMValueRef at = fc_cg_iadd(k, base, fc_cg_iadd(k, j, fc_cg_const_i64(k, (int64_t)u * w)));
      LLVMValueRef p = fc_cg_gep(k, FC_DT_F32, k->in[0], at);
      LLVMValueRef x = LLVMBuildLoad2(B, vf, p, "");
      LLVMSetAlignment(x, 4);
      step(k, &v[u], vf, vi, x, is_max);
    }
    fc_cg_loop_end(k, &l);
    /* the unrolled accumulators into the first, then its lanes into the scalar one; no lane of m is NaN, so
     * maxnum's reduction of them is exact but for the sign of a zero, which the end settles */
    for (int u = 1; u < UNROLL; u++)
      combine(k, &v[0], vf, vi, LLVMBuildLoad2(B, vf, v[u].m, ""), LLVMBuildLoad2(B, vi, v[u].s, ""),
              LLVMBuildLoad2(B, vi, v[u].a, ""), is_max);
    combine(k, &sc, f, i, reduce_lanes(k, is_max ? "llvm.vector.reduce.fmax" : "llvm.vector.reduce.fmin", vf, v[0].m),
            reduce_lanes(k, is_max ? "llvm.vector.reduce.smax" : "llvm.vector.reduce.smin", vi, v[0].s),
            reduce_lanes(k, "llvm.vector.reduce.umax", vi, v[0].a), is_max);
  }
  if (n > nvec) {
    FcLoop l;
    LLVMValueRef j = fc_cg_loop_begin(k, &l, fc_cg_const_i64(k, nvec), fc_cg_const_i64(k, n), 1, "mm_tail");
    step(k, &sc, f, i, fc_cg_load(k, FC_DT_F32, k->in[0], fc_cg_iadd(k, base, j)), is_max);
    fc_cg_loop_end(k, &l);
  }
  LLVMValueRef m = LLVMBuildLoad2(B, f, sc.m, ""), s = LLVMBuildLoad2(B, i, sc.s, "");
  LLVMValueRef a = LLVMBuildLoad2(B, i, sc.a, "");
  LLVMValueRef zero = LLVMBuildFCmp(B, LLVMRealOEQ, m, LLVMConstReal(f, 0.0), "");
  /* max: a +0 was seen iff some sign bit was clear; min: a -0 iff some was set; both read s >= 0 as +0 */
  LLVMValueRef pos = LLVMBuildICmp(B, LLVMIntSGE, s, LLVMConstInt(i, 0, 0), "");
  LLVMValueRef signed_zero = LLVMBuildSelect(B, pos, LLVMConstReal(f, 0.0), LLVMConstReal(f, -0.0), "");
  m = LLVMBuildSelect(B, zero, signed_zero, m, "");
  LLVMValueRef nan = LLVMBuildICmp(B, LLVMIntUGT, a, LLVMConstInt(i, 0x7f800000u, 0), "");
  return LLVMBuildSelect(B, nan, LLVMConstReal(f, NAN), m, "");
}
