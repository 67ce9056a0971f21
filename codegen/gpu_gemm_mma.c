/* gpu_gemm_mma.c — the GPU GEMM on tensor cores, for --precision tf32, fp16 and bf16 (FcGpuDesc.precision):
 * the same problem, callbacks and block tiling as gpu_kernel_matmul.c's SIMT GEMM, with the products done by
 * warp-wide mma.sync (fc_gpu_mma) on inputs rounded to the precision and accumulated in f32.
 *
 * A block of 256 threads (8 warps) computes a 64 x 64 tile of C, stepping through K 16 at a time (one
 * m16n8k16 for f16/bf16, two m16n8k8 for tf32). Warp w owns rows 16·(w % 4) .. +16 and columns 32·(w / 4)
 * .. +32 of the tile: four 16 x 8 accumulator tiles, 16 f32 per lane. Per step every thread loads 4
 * elements of the A tile (consecutive threads along k; A is row-major) and 4 of the B tile (consecutive
 * threads along n) through the callbacks, rounds them to the precision once (f16/bf16: round to nearest
 * even, stored as 16-bit values; tf32: round to nearest, ties away, as cvt.rna.tf32.f32, kept as f32 bits)
 * and stores them in shared memory k-contiguous: A as [m][k], B transposed as [n][k], so each fragment
 * register (two consecutive k of one row or column for 16-bit inputs) is one 32-bit shared load. Rows are
 * padded (to 24 halves, 20 words) so that the 32 lanes' fragment loads (8 rows x 4 words) hit 32 banks.
 * A barrier separates the stores from the fragment loads, a second one the step from the next stores.
 *
 * Edges are as in the SIMT GEMM: out-of-range elements load a clamped address and are replaced by 0, so every
 * lane of every warp reaches each mma (they are warp-collective) and each barrier; stores are guarded.
 * Not yet: ldmatrix, cp.async double buffering, and weights converted to the precision at compile time.
 */
#include "gpu.h"

enum { BM = 64, BN = 64, BK = 16, THREADS = 256, WARP_N = 32, NT = WARP_N / 8 };

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }
static LLVMValueRef clamp_hi(FcKernel *k, LLVMValueRef v, int64_t hi) { return fc_cg_smin(k, v, c64(k, hi)); }

/* f32 → the nearest tf32 (10 explicit mantissa bits; ties away from zero, as cvt.rna.tf32.f32), as i32 bits
 * with the low 13 bits clear; infinities stay, NaN becomes the canonical quiet NaN. */
static LLVMValueRef round_tf32(FcKernel *k, LLVMValueRef v) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMValueRef bits = LLVMBuildBitCast(b, v, i32, "");
  LLVMValueRef r = LLVMBuildAnd(b, LLVMBuildAdd(b, bits, LLVMConstInt(i32, 0x1000, 0), ""),
                                LLVMConstInt(i32, 0xffffe000u, 0), "");
  LLVMValueRef exp_all = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, bits, LLVMConstInt(i32, 0x7f800000, 0), ""),
                                       LLVMConstInt(i32, 0x7f800000, 0), "");
  LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, v, v, "");
  r = LLVMBuildSelect(b, exp_all, bits, r, ""); /* infinities: unchanged */
  return LLVMBuildSelect(b, nan, LLVMConstInt(i32, 0x7fc00000, 0), r, "");
}

typedef struct MmaTiles {
  FcGpuMma kind;
  bool tf32;
  int ld;                 /* shared row length in elements (16-bit or 32-bit) */
  LLVMTypeRef et;         /* shared element type: i16 or i32 */
  LLVMValueRef as, bs;    /* [BM][ld], [BN][ld] */
} MmaTiles;

/* Stores the f32 v (already 0 where out of range) rounded to the precision at element `at` of tile t. */
static void store_rounded(FcKernel *k, const MmaTiles *m, LLVMValueRef tile, LLVMValueRef at, LLVMValueRef v) {
  if (m->tf32) {
    LLVMBuildStore(k->b, round_tf32(k, v), LLVMBuildGEP2(k->b, m->et, tile, &at, 1, ""));
    return;
  }
  fc_cg_store(k, m->kind == FC_GPU_MMA_F16 ? FC_DT_F16 : FC_DT_BF16, tile, at, v);
}

/* The 32-bit fragment register at shared element `at` of tile: one tf32, or the 16-bit values at at and
 * at + 1 (at even: an aligned word). */
static LLVMValueRef frag(FcKernel *k, const MmaTiles *m, LLVMValueRef tile, LLVMValueRef at) {
  LLVMValueRef v = LLVMBuildLoad2(k->b, LLVMInt32TypeInContext(k->ctx), LLVMBuildGEP2(k->b, m->et, tile, &at, 1, ""), "");
  LLVMSetAlignment(v, 4);
  return v;
}

FcStatus fc_gpu_gemm_mma_emit(FcGpuKernel *g, const FcGpuGemm *p) {
  FcKernel *k = &g->k;
  LLVMBuilderRef b = k->b;
  FcGpuPrecision prec = k->target->gpu.precision;
  FC_ASSERT(prec != FC_GPU_FP32 && LLVMGetTypeKind(p->ct) == LLVMFloatTypeKind);
  if (!k->target->gpu.mma_f16)
    return fc_gpu_error(g, FC_ERR_UNSUPPORTED, "--precision %s needs tensor cores (sm_80 or newer)",
                        fc_gpu_precision_name(prec));
  int64_t mb = (p->M + BM - 1) / BM, nb = (p->N + BN - 1) / BN, blocks;
  if (!fc_checked_mul(mb, nb, &blocks) || !fc_checked_mul(blocks, p->batch, &blocks) || blocks > INT32_MAX)
    return fc_gpu_error(g, FC_ERR_LIMIT, "a GEMM of %lld x %lld x %lld (batch %lld) needs more than 2^31-1 blocks",
                        (long long)p->M, (long long)p->N, (long long)p->K, (long long)p->batch);
  if (blocks == 0) return fc_gpu_launch_1d(g, 0, 32);
  g->grid[0] = (uint32_t)blocks;
  g->grid[1] = g->grid[2] = 1;
  g->block[0] = THREADS;
  g->block[1] = g->block[2] = 1;

  MmaTiles m = {.tf32 = prec == FC_GPU_TF32};
  m.kind = prec == FC_GPU_TF32 ? FC_GPU_MMA_TF32 : prec == FC_GPU_FP16 ? FC_GPU_MMA_F16 : FC_GPU_MMA_BF16;
  m.ld = m.tf32 ? BK + 4 : BK + 8;
  m.et = m.tf32 ? LLVMInt32TypeInContext(k->ctx) : LLVMInt16TypeInContext(k->ctx);
  m.as = fc_gpu_shared(g, m.et, (int64_t)BM * m.ld, "mma_a");
  m.bs = m.as ? fc_gpu_shared(g, m.et, (int64_t)BN * m.ld, "mma_b") : NULL;
  if (!m.bs) return FC_ERR_LIMIT;
  LLVMTypeRef f32 = p->ct;
  LLVMValueRef zero = LLVMConstNull(f32);
  LLVMValueRef acc = fc_cg_tile_new(k, f32, NT * 4, "acc");
  for (int i = 0; i < NT * 4; i++) LLVMBuildStore(b, zero, fc_cg_tile_at(k, f32, acc, c64(k, i)));

  LLVMTypeRef i64 = fc_cg_i64(k);
  LLVMValueRef bid = LLVMBuildZExt(b, fc_gpu_block_idx(g, 0), i64, "bid");
  LLVMValueRef t = LLVMBuildZExt(b, fc_gpu_thread_idx(g, 0), i64, "tid");
  LLVMValueRef nbk = LLVMBuildURem(b, bid, c64(k, nb), "");
  LLVMValueRef rest = LLVMBuildUDiv(b, bid, c64(k, nb), "");
  LLVMValueRef mbk = LLVMBuildURem(b, rest, c64(k, mb), "");
  LLVMValueRef z = LLVMBuildUDiv(b, rest, c64(k, mb), "z");
  LLVMValueRef m0 = fc_cg_imulc(k, mbk, BM), n0 = fc_cg_imulc(k, nbk, BN);
  LLVMValueRef lane = LLVMBuildAnd(b, t, c64(k, 31), "lane"), warp = LLVMBuildLShr(b, t, c64(k, 5), "warp");
  LLVMValueRef grp = LLVMBuildLShr(b, lane, c64(k, 2), "group"), tig = LLVMBuildAnd(b, lane, c64(k, 3), "tig");
  LLVMValueRef wrow = fc_cg_imulc(k, LLVMBuildAnd(b, warp, c64(k, 3), ""), 16);   /* the warp's first tile row */
  LLVMValueRef wcol = fc_cg_imulc(k, LLVMBuildLShr(b, warp, c64(k, 2), ""), WARP_N); /* ... and column */
  LLVMValueRef arow = fc_cg_iadd(k, wrow, grp), arow8 = fc_cg_iadd(k, arow, c64(k, 8)); /* the lane's A rows */
  if (p->begin) p->begin(g, p->ctx, z);

  FcLoop lk;
  LLVMValueRef k0 = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, p->K), BK, "k0");
  LLVMValueRef tx = LLVMBuildAnd(b, t, c64(k, 15), ""), ty = LLVMBuildLShr(b, t, c64(k, 4), "");
  for (int i = 0; i < BM * BK / THREADS; i++) { /* A: (m0 + t/16 + 16i, k0 + t%16) → as[m][k] */
    LLVMValueRef ml = fc_cg_iadd(k, ty, c64(k, 16 * i)), mm = fc_cg_iadd(k, m0, ml), kk = fc_cg_iadd(k, k0, tx);
    LLVMValueRef in = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSLT, mm, c64(k, p->M), ""),
                                   LLVMBuildICmp(b, LLVMIntSLT, kk, c64(k, p->K), ""), "");
    LLVMValueRef v = p->load_a(g, p->ctx, z, clamp_hi(k, mm, p->M - 1), clamp_hi(k, kk, p->K - 1));
    store_rounded(k, &m, m.as, fc_cg_iadd(k, fc_cg_imulc(k, ml, m.ld), tx), LLVMBuildSelect(b, in, v, zero, ""));
  }
  LLVMValueRef nl = LLVMBuildAnd(b, t, c64(k, BN - 1), ""), kr = LLVMBuildLShr(b, t, c64(k, 6), "");
  for (int i = 0; i < BN * BK / THREADS; i++) { /* B: (k0 + t/64 + 4i, n0 + t%64) → bs[n][k] */
    LLVMValueRef kl = fc_cg_iadd(k, kr, c64(k, 4 * i)), kk = fc_cg_iadd(k, k0, kl), n = fc_cg_iadd(k, n0, nl);
    LLVMValueRef in = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSLT, kk, c64(k, p->K), ""),
                                   LLVMBuildICmp(b, LLVMIntSLT, n, c64(k, p->N), ""), "");
    LLVMValueRef v = p->load_b(g, p->ctx, z, clamp_hi(k, kk, p->K - 1), clamp_hi(k, n, p->N - 1));
    store_rounded(k, &m, m.bs, fc_cg_iadd(k, fc_cg_imulc(k, nl, m.ld), kl), LLVMBuildSelect(b, in, v, zero, ""));
  }
  fc_gpu_barrier(g);
  LLVMValueRef r[NT * 4];
  for (int i = 0; i < NT * 4; i++) r[i] = LLVMBuildLoad2(b, f32, fc_cg_tile_at(k, f32, acc, c64(k, i)), "");
  /* Fragment columns in shared elements: 16-bit pairs start at 2·tig (the register at element 2·tig of an
   * i16 row is one aligned 32-bit word); tf32 values at tig. */
  LLVMValueRef kcol = m.tf32 ? tig : fc_cg_imulc(k, tig, 2);
  for (int ks = 0; ks < BK; ks += m.tf32 ? 8 : 16) {
    int64_t hi = m.tf32 ? 4 : 8; /* the second k half of a fragment */
    LLVMValueRef kc = fc_cg_iadd(k, kcol, c64(k, ks)), kc2 = fc_cg_iadd(k, kc, c64(k, hi));
    LLVMValueRef rowa = fc_cg_imulc(k, arow, m.ld), rowa8 = fc_cg_imulc(k, arow8, m.ld);
    LLVMValueRef a[4] = {frag(k, &m, m.as, fc_cg_iadd(k, rowa, kc)), frag(k, &m, m.as, fc_cg_iadd(k, rowa8, kc)),
                         frag(k, &m, m.as, fc_cg_iadd(k, rowa, kc2)), frag(k, &m, m.as, fc_cg_iadd(k, rowa8, kc2))};
    for (int j = 0; j < NT; j++) {
      LLVMValueRef n = fc_cg_iadd(k, fc_cg_iadd(k, wcol, c64(k, 8 * j)), grp), rown = fc_cg_imulc(k, n, m.ld);
      LLVMValueRef bv[2] = {frag(k, &m, m.bs, fc_cg_iadd(k, rown, kc)), frag(k, &m, m.bs, fc_cg_iadd(k, rown, kc2))};
      fc_gpu_mma(g, m.kind, a, bv, &r[4 * j]);
    }
  }
  for (int i = 0; i < NT * 4; i++) LLVMBuildStore(b, r[i], fc_cg_tile_at(k, f32, acc, c64(k, i)));
  fc_gpu_barrier(g); /* every warp is done reading the tiles before the next step overwrites them */
  fc_cg_loop_end(k, &lk);

  /* cd[e] of n-tile j is C[wrow + group + 8·(e/2)][wcol + 8j + 2·tig + e%2]. */
  for (int e2 = 0; e2 < 2; e2++) {
    LLVMValueRef mrow = fc_cg_iadd(k, m0, fc_cg_iadd(k, arow, c64(k, 8 * e2)));
    LLVMBasicBlockRef row_done = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntSLT, mrow, c64(k, p->M), ""));
    for (int j = 0; j < NT; j++)
      for (int e1 = 0; e1 < 2; e1++) {
        LLVMValueRef n = fc_cg_iadd(k, n0, fc_cg_iadd(k, wcol, fc_cg_iadd(k, fc_cg_imulc(k, tig, 2), c64(k, 8 * j + e1))));
        LLVMBasicBlockRef done = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntSLT, n, c64(k, p->N), ""));
        LLVMValueRef v = LLVMBuildLoad2(b, f32, fc_cg_tile_at(k, f32, acc, c64(k, 4 * j + 2 * e2 + e1)), "");
        p->store_c(g, p->ctx, z, mrow, n, v);
        fc_cg_if_end(k, done);
      }
    fc_cg_if_end(k, row_done);
  }
  return FC_OK;
}
