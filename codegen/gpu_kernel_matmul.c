/* gpu_kernel_matmul.c — the GPU's tiled GEMM (shared by flow.matmul and the conv's implicit GEMM) and the
 * flow.matmul kernel on it.
 *
 * The GEMM is the classic shared-memory SGEMM: each block of 256 threads computes a 64 × 64 tile of C
 * for one problem of a batch (the grid is 1-D: batch × m-blocks × n-blocks, n fastest, so neighbouring
 * blocks share A's rows in L2), stepping through K 16 at a time. Per step every thread loads 4 elements
 * of the A tile (consecutive threads along k: A is row-major) and 4 of the B tile (consecutive threads
 * along n), stores them in shared memory (A transposed to [k][m], rows padded to 65 so that the
 * transposing stores spread over the banks), and after a barrier accumulates a 4 × 4 register tile:
 * thread (tx, ty) owns rows ty + 16i and columns tx + 16j, so the 16 lanes of a half-warp read 4
 * consecutive words of B's row and one broadcast word of A per step, and the final stores of a warp
 * write two runs of 16 consecutive elements of C. A second barrier ends the step before the next loads.
 *
 * Edges: every load of an element outside [0, M) × [0, K) or [0, K) × [0, N) reads a clamped (in-range)
 * address and is replaced by 0 with a select, so the loop has no divergent branches around its barriers
 * and a partial tile contributes nothing; stores are guarded. Operands are loaded and accumulated in
 * the result dtype's compute type (f16/bf16 in f32; 8-bit integer operands widen to the i32 result).
 * The A and B elements are callbacks, so the conv's im2col addresses are computed on the fly
 * (gpu_kernel_conv.c).
 *
 * With --precision tf32, fp16 or bf16 (FcGpuDesc.precision) an f32 GEMM runs on tensor cores instead
 * (gpu_gemm_mma.c: the same block tiling, warp tiles of mma.sync); at fp32, the default, this file's SIMT
 * arithmetic computes exactly as the CPU does up to summation order. Not yet: cp.async double buffering.
 */
#include "cg_epilogue.h"
#include "gpu.h"

enum { BM = 64, BN = 64, BK = 16, THREADS = 256, TM = 4, TN = 4, A_LD = BM + 1 };

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

/* min(v, hi) for hi >= 0: an in-range index for a clamped load. */
static LLVMValueRef clamp_hi(FcKernel *k, LLVMValueRef v, int64_t hi) { return fc_cg_smin(k, v, c64(k, hi)); }

FcStatus fc_gpu_gemm_emit(FcGpuKernel *g, const FcGpuGemm *p) {
  FcKernel *k = &g->k;
  if (k->target->gpu.precision != FC_GPU_FP32 && LLVMGetTypeKind(p->ct) == LLVMFloatTypeKind)
    return fc_gpu_gemm_mma_emit(g, p);
  LLVMBuilderRef b = k->b;
  int64_t mb = (p->M + BM - 1) / BM, nb = (p->N + BN - 1) / BN, blocks;
  if (!fc_checked_mul(mb, nb, &blocks) || !fc_checked_mul(blocks, p->batch, &blocks) || blocks > INT32_MAX)
    return fc_gpu_error(g, FC_ERR_LIMIT, "a GEMM of %lld x %lld x %lld (batch %lld) needs more than 2^31-1 blocks",
                        (long long)p->M, (long long)p->N, (long long)p->K, (long long)p->batch);
  if (blocks == 0) return fc_gpu_launch_1d(g, 0, 32); /* an empty result: nothing to compute */
  g->grid[0] = (uint32_t)blocks;
  g->grid[1] = g->grid[2] = 1;
  g->block[0] = THREADS;
  g->block[1] = g->block[2] = 1;

  LLVMTypeRef ct = p->ct;
  LLVMValueRef zero = LLVMConstNull(ct);
  LLVMValueRef as = fc_gpu_shared(g, ct, (int64_t)BK * A_LD, "gemm_a");
  LLVMValueRef bs = as ? fc_gpu_shared(g, ct, (int64_t)BK * BN, "gemm_b") : NULL;
  if (!bs) return FC_ERR_LIMIT;
  LLVMValueRef acc = fc_cg_tile_new(k, ct, TM * TN, "acc");

  LLVMTypeRef i64 = fc_cg_i64(k);
  LLVMValueRef bid = LLVMBuildZExt(b, fc_gpu_block_idx(g, 0), i64, "bid");
  LLVMValueRef t = LLVMBuildZExt(b, fc_gpu_thread_idx(g, 0), i64, "tid");
  LLVMValueRef nbk = LLVMBuildURem(b, bid, c64(k, nb), "");
  LLVMValueRef rest = LLVMBuildUDiv(b, bid, c64(k, nb), "");
  LLVMValueRef mbk = LLVMBuildURem(b, rest, c64(k, mb), "");
  LLVMValueRef z = LLVMBuildUDiv(b, rest, c64(k, mb), "z");
  LLVMValueRef m0 = fc_cg_imulc(k, mbk, BM), n0 = fc_cg_imulc(k, nbk, BN);
  LLVMValueRef tx = LLVMBuildAnd(b, t, c64(k, 15), "tx"), ty = LLVMBuildLShr(b, t, c64(k, 4), "ty");
  if (p->begin) p->begin(g, p->ctx, z);
  for (int i = 0; i < TM * TN; i++) LLVMBuildStore(b, zero, fc_cg_tile_at(k, ct, acc, c64(k, i)));

  FcLoop lk;
  LLVMValueRef k0 = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, p->K), BK, "k0");
  /* A tile: thread t loads (m0 + t/16 + 16i, k0 + t%16) into as[t%16][t/16 + 16i]. */
  for (int i = 0; i < BM * BK / THREADS; i++) {
    LLVMValueRef ml = fc_cg_iadd(k, ty, c64(k, 16 * i)), m = fc_cg_iadd(k, m0, ml), kk = fc_cg_iadd(k, k0, tx);
    LLVMValueRef in = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSLT, m, c64(k, p->M), ""),
                                   LLVMBuildICmp(b, LLVMIntSLT, kk, c64(k, p->K), ""), "");
    LLVMValueRef v = p->load_a(g, p->ctx, z, clamp_hi(k, m, p->M - 1), clamp_hi(k, kk, p->K - 1));
    LLVMValueRef at = fc_cg_iadd(k, fc_cg_imulc(k, tx, A_LD), ml);
    LLVMBuildStore(b, LLVMBuildSelect(b, in, v, zero, ""), LLVMBuildGEP2(b, ct, as, &at, 1, ""));
  }
  /* B tile: thread t loads (k0 + t/64 + 4i, n0 + t%64) into bs[t/64 + 4i][t%64]. */
  LLVMValueRef nl = LLVMBuildAnd(b, t, c64(k, BN - 1), ""), kr = LLVMBuildLShr(b, t, c64(k, 6), "");
  for (int i = 0; i < BN * BK / THREADS; i++) {
    LLVMValueRef kl = fc_cg_iadd(k, kr, c64(k, 4 * i)), kk = fc_cg_iadd(k, k0, kl), n = fc_cg_iadd(k, n0, nl);
    LLVMValueRef in = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSLT, kk, c64(k, p->K), ""),
                                   LLVMBuildICmp(b, LLVMIntSLT, n, c64(k, p->N), ""), "");
    LLVMValueRef v = p->load_b(g, p->ctx, z, clamp_hi(k, kk, p->K - 1), clamp_hi(k, n, p->N - 1));
    LLVMValueRef at = fc_cg_iadd(k, fc_cg_imulc(k, kl, BN), nl);
    LLVMBuildStore(b, LLVMBuildSelect(b, in, v, zero, ""), LLVMBuildGEP2(b, ct, bs, &at, 1, ""));
  }
  fc_gpu_barrier(g);
  LLVMValueRef r[TM * TN];
  for (int i = 0; i < TM * TN; i++) r[i] = LLVMBuildLoad2(b, ct, fc_cg_tile_at(k, ct, acc, c64(k, i)), "");
  for (int s = 0; s < BK; s++) {
    LLVMValueRef av[TM], bv[TN];
    for (int i = 0; i < TM; i++) {
      LLVMValueRef at = fc_cg_iadd(k, ty, c64(k, (int64_t)s * A_LD + 16 * i));
      av[i] = LLVMBuildLoad2(b, ct, LLVMBuildGEP2(b, ct, as, &at, 1, ""), "");
    }
    for (int j = 0; j < TN; j++) {
      LLVMValueRef at = fc_cg_iadd(k, tx, c64(k, (int64_t)s * BN + 16 * j));
      bv[j] = LLVMBuildLoad2(b, ct, LLVMBuildGEP2(b, ct, bs, &at, 1, ""), "");
    }
    for (int i = 0; i < TM; i++)
      for (int j = 0; j < TN; j++) r[i * TN + j] = fc_cg_madd(k, av[i], bv[j], r[i * TN + j]);
  }
  for (int i = 0; i < TM * TN; i++) LLVMBuildStore(b, r[i], fc_cg_tile_at(k, ct, acc, c64(k, i)));
  fc_gpu_barrier(g); /* every thread is done reading the tiles before the next step overwrites them */
  fc_cg_loop_end(k, &lk);

  for (int i = 0; i < TM; i++) {
    LLVMValueRef m = fc_cg_iadd(k, m0, fc_cg_iadd(k, ty, c64(k, 16 * i)));
    LLVMBasicBlockRef row_done = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntSLT, m, c64(k, p->M), ""));
    for (int j = 0; j < TN; j++) {
      LLVMValueRef n = fc_cg_iadd(k, n0, fc_cg_iadd(k, tx, c64(k, 16 * j)));
      LLVMBasicBlockRef done = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntSLT, n, c64(k, p->N), ""));
      LLVMValueRef v = LLVMBuildLoad2(b, ct, fc_cg_tile_at(k, ct, acc, c64(k, i * TN + j)), "");
      p->store_c(g, p->ctx, z, m, n, v);
      fc_cg_if_end(k, done);
    }
    fc_cg_if_end(k, row_done);
  }
  return FC_OK;
}

/* ---- flow.matmul ---------------------------------------------------------------------------------- */

typedef struct MatmulCtx {
  const FcType *at, *bt, *rt;
  int nb;                   /* batch dims of the result */
  int64_t M, N, K;
  int64_t as[FC_DEFAULT_MAX_RANK], bs[FC_DEFAULT_MAX_RANK];
  FcDtype dt;               /* the result's */
  FcDtype acc_dt;           /* the accumulator's: i32 for 8-bit operands, else dt */
  FcCgEpilogue *e;
  LLVMValueRef abase, bbase; /* element offsets of the block's A and B matrices */
} MatmulCtx;

static void mm_begin(FcGpuKernel *g, void *ctx, LLVMValueRef z) {
  MatmulCtx *c = ctx;
  FcKernel *k = &g->k;
  LLVMValueRef idx[FC_DEFAULT_MAX_RANK], aoff = c64(k, 0), boff = c64(k, 0);
  fc_cg_unflatten(k, z, c->rt->dims, c->nb, idx);
  for (int d = 0; d < c->nb; d++) {
    if (c->as[d]) aoff = fc_cg_iadd(k, aoff, fc_cg_imulc(k, idx[d], c->as[d]));
    if (c->bs[d]) boff = fc_cg_iadd(k, boff, fc_cg_imulc(k, idx[d], c->bs[d]));
  }
  c->abase = fc_cg_imulc(k, aoff, c->M * c->K);
  c->bbase = fc_cg_imulc(k, boff, c->K * c->N);
}

static LLVMValueRef mm_load_a(FcGpuKernel *g, void *ctx, LLVMValueRef z, LLVMValueRef m, LLVMValueRef kk) {
  (void)z;
  MatmulCtx *c = ctx;
  FcKernel *k = &g->k;
  LLVMValueRef i = fc_cg_iadd(k, c->abase, fc_cg_iadd(k, fc_cg_imulc(k, m, c->K), kk));
  return fc_cg_convert(k, fc_cg_load(k, c->at->dtype, k->in[0], i), c->at->dtype, c->acc_dt);
}

static LLVMValueRef mm_load_b(FcGpuKernel *g, void *ctx, LLVMValueRef z, LLVMValueRef kk, LLVMValueRef n) {
  (void)z;
  MatmulCtx *c = ctx;
  FcKernel *k = &g->k;
  LLVMValueRef i = fc_cg_iadd(k, c->bbase, fc_cg_iadd(k, fc_cg_imulc(k, kk, c->N), n));
  return fc_cg_convert(k, fc_cg_load(k, c->bt->dtype, k->in[1], i), c->bt->dtype, c->acc_dt);
}

static void mm_store_c(FcGpuKernel *g, void *ctx, LLVMValueRef z, LLVMValueRef m, LLVMValueRef n, LLVMValueRef v) {
  MatmulCtx *c = ctx;
  FcKernel *k = &g->k;
  LLVMValueRef row = fc_cg_iadd(k, fc_cg_imulc(k, z, c->M), m);
  v = fc_cg_convert(k, v, c->acc_dt, c->dt);
  if (c->e) v = fc_cg_epilogue_value(k, c->e, v, row, n);
  fc_cg_store(k, c->dt, k->out[0], fc_cg_iadd(k, fc_cg_imulc(k, row, c->N), n), v);
}

FcStatus fc_gpu_matmul(FcGpuKernel *g) {
  FcKernel *k = &g->k;
  FcOp *op = k->op;
  MatmulCtx c = {.at = &op->operands[0].value->type, .bt = &op->operands[1].value->type, .rt = &op->results[0].type};
  if (c.at->quant || c.bt->quant || c.rt->quant)
    return fc_gpu_error(g, FC_ERR_UNSUPPORTED, "a quantised matmul has no GPU kernel yet");
  int r = c.rt->rank;
  if (r < 2 || r > FC_DEFAULT_MAX_RANK || c.at->rank < 2 || c.bt->rank < 2)
    return fc_gpu_error(g, FC_ERR_UNSUPPORTED, "rank %d is not supported", r);
  c.dt = c.rt->dtype;
  if (c.dt == FC_DT_BOOL) return fc_gpu_error(g, FC_ERR_UNSUPPORTED, "an i1 matmul");
  c.acc_dt = fc_matmul_is_int8(c.at->dtype, c.bt->dtype) ? FC_DT_I32 : c.dt; /* `to = f32` converts the sums */
  c.nb = r - 2;
  c.M = c.rt->dims[r - 2];
  c.N = c.rt->dims[r - 1];
  c.K = c.at->dims[c.at->rank - 1];
  int64_t numel;
  if (!fc_type_numel(c.rt, &numel)) return fc_gpu_error(g, FC_ERR_LIMIT, "result is too large");
  int64_t batch = c.M * c.N == 0 ? 0 : numel / (c.M * c.N), sa, sb;
  fc_cg_matmul_batch_strides(c.at, c.bt, c.rt, c.as, c.bs, &sa, &sb);
  /* A batch of row blocks times one B (a Linear layer over [batch, seq, features]) is one tall product:
   * whole 64-row tiles even where each batch item has few rows. */
  if (sb == 1 && sa == batch && batch > 1) {
    c.M *= batch;
    batch = 1;
    c.nb = 0;
  }
  if (c.dt == FC_DT_F32) {
    FcStatus st = fc_cg_epilogue_init(k, 1, &c.e);
    if (st != FC_OK) return st;
  } else if (op->n_operands > 2 || fc_op_attr(op, FC_ATTR_EPILOGUE)) {
    return fc_gpu_error(g, FC_ERR_UNSUPPORTED, "a fused epilogue on a %s matmul", fc_dtype_name(c.dt));
  }
  FcGpuGemm p = {.batch = batch, .M = c.M, .N = c.N, .K = c.K, .ct = fc_cg_compute_type(k, c.acc_dt), .ctx = &c,
                 .begin = mm_begin, .load_a = mm_load_a, .load_b = mm_load_b, .store_c = mm_store_c};
  return fc_gpu_gemm_emit(g, &p);
}
