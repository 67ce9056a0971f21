/* gpu_team.c — rows computed by a team of threads (gpu.h): the frame the reduction, arg-reduction,
 * softmax and layer-norm kernels share.
 *
 * Every such op is a set of independent rows, each combined from its elements. A row goes to one thread
 * (short rows, or rows strided in memory, where consecutive threads take consecutive columns and so
 * coalesce), to one warp (consecutive lanes read consecutive elements; the lanes' partials meet in a
 * five-step xor butterfly, so every lane ends with the same value), or to a whole block (long rows: each
 * warp's butterfly result goes to shared memory, one barrier, then every thread combines the warps'
 * partials in the same order, so again all agree). A warp team's last block may hold rows past the end:
 * their lanes loop over nothing but still take part in every shuffle, as shuffles need the full warp.
 */
#include "gpu.h"

enum {
  WARP = 32,
  WARP_ROW_MAX = 4096, /* longer rows take a block */
  THREAD_ROW_MAX = 16, /* shorter rows take a thread */
};

FcGpuTeamKind fc_gpu_team_pick(int64_t rows, int64_t len) {
  if (len < THREAD_ROW_MAX) return FC_GPU_TEAM_THREAD;
  /* A few long rows would leave most of the GPU idle with a warp each. */
  if (len > WARP_ROW_MAX || (len >= 1024 && rows <= 128)) return FC_GPU_TEAM_BLOCK;
  return FC_GPU_TEAM_WARP;
}

FcStatus fc_gpu_team_begin(FcGpuKernel *g, FcGpuTeamKind kind, int64_t rows, FcGpuTeam *t) {
  FcKernel *k = &g->k;
  LLVMBuilderRef B = k->b;
  LLVMTypeRef i64 = fc_cg_i64(k);
  *t = (FcGpuTeam){.kind = kind, .rows = rows};
  if (kind == FC_GPU_TEAM_BLOCK) {
    if (rows > INT32_MAX)
      return fc_gpu_error(g, FC_ERR_LIMIT, "%lld rows need more than 2^31-1 blocks", (long long)rows);
    t->size = FC_GPU_TEAM_BLOCK_THREADS;
    g->grid[0] = rows < 1 ? 1 : (uint32_t)rows;
    g->grid[1] = g->grid[2] = 1;
    g->block[0] = FC_GPU_TEAM_BLOCK_THREADS;
    g->block[1] = g->block[2] = 1;
    t->row = LLVMBuildZExt(B, fc_gpu_block_idx(g, 0), i64, "row");
    t->lane = LLVMBuildZExt(B, fc_gpu_thread_idx(g, 0), i64, "lane");
  } else {
    t->size = kind == FC_GPU_TEAM_WARP ? WARP : 1;
    int64_t threads;
    if (!fc_checked_mul(rows, t->size, &threads))
      return fc_gpu_error(g, FC_ERR_LIMIT, "%lld rows need more than 2^63 threads", (long long)rows);
    FcStatus st = fc_gpu_launch_1d(g, threads, 256);
    if (st != FC_OK) return st;
    LLVMValueRef gid = fc_gpu_global_idx_x(g);
    if (kind == FC_GPU_TEAM_WARP) {
      t->row = LLVMBuildLShr(B, gid, fc_cg_const_i64(k, 5), "row");
      t->lane = LLVMBuildAnd(B, gid, fc_cg_const_i64(k, WARP - 1), "lane");
    } else {
      t->row = gid;
      t->lane = fc_cg_const_i64(k, 0);
    }
  }
  t->valid = LLVMBuildICmp(B, LLVMIntSLT, t->row, fc_cg_const_i64(k, rows), "valid");
  return FC_OK;
}

LLVMValueRef fc_gpu_team_loop_begin(FcGpuKernel *g, const FcGpuTeam *t, int64_t len, FcLoop *l) {
  FcKernel *k = &g->k;
  LLVMValueRef hi = LLVMBuildSelect(k->b, t->valid, fc_cg_const_i64(k, len), fc_cg_const_i64(k, 0), "");
  return fc_cg_loop_begin(k, l, t->lane, hi, t->size, "s");
}

LLVMValueRef fc_gpu_shfl_xor_any(FcGpuKernel *g, LLVMValueRef v, int mask) {
  LLVMBuilderRef B = g->k.b;
  LLVMTypeRef t = LLVMTypeOf(v), i32 = LLVMInt32TypeInContext(g->k.ctx), i64 = LLVMInt64TypeInContext(g->k.ctx);
  LLVMTypeKind kind = LLVMGetTypeKind(t);
  if (kind == LLVMFloatTypeKind || t == i32) return fc_gpu_shfl_xor(g, v, mask);
  if (kind == LLVMDoubleTypeKind)
    return LLVMBuildBitCast(B, fc_gpu_shfl_xor_any(g, LLVMBuildBitCast(B, v, i64, ""), mask), t, "");
  FC_ASSERT(kind == LLVMIntegerTypeKind);
  unsigned w = LLVMGetIntTypeWidth(t);
  if (w < 32) return LLVMBuildTrunc(B, fc_gpu_shfl_xor(g, LLVMBuildZExt(B, v, i32, ""), mask), t, "");
  FC_ASSERT(w == 64);
  LLVMValueRef lo = fc_gpu_shfl_xor(g, LLVMBuildTrunc(B, v, i32, ""), mask);
  LLVMValueRef hi = fc_gpu_shfl_xor(g, LLVMBuildTrunc(B, LLVMBuildLShr(B, v, LLVMConstInt(i64, 32, 0), ""), i32, ""), mask);
  return LLVMBuildOr(B, LLVMBuildZExt(B, lo, i64, ""),
                     LLVMBuildShl(B, LLVMBuildZExt(B, hi, i64, ""), LLVMConstInt(i64, 32, 0), ""), "");
}

enum { MAX_VALUES = 8 };

FcStatus fc_gpu_team_reduce(FcGpuKernel *g, const FcGpuTeam *t, int n, LLVMValueRef *v, FcGpuCombine combine,
                            const void *ctx) {
  FC_ASSERT(n >= 1 && n <= MAX_VALUES);
  if (t->kind == FC_GPU_TEAM_THREAD) return FC_OK;
  FcKernel *k = &g->k;
  LLVMBuilderRef B = k->b;
  LLVMValueRef other[MAX_VALUES];
  for (int mask = WARP / 2; mask >= 1; mask /= 2) {
    for (int i = 0; i < n; i++) other[i] = fc_gpu_shfl_xor_any(g, v[i], mask);
    combine(g, ctx, v, other);
  }
  if (t->kind == FC_GPU_TEAM_WARP) return FC_OK;

  /* The block: lane 0 of each warp publishes its warp's result; after the barrier every thread combines
   * them all, warp 0 first. */
  int64_t nw = t->size / WARP;
  LLVMValueRef part[MAX_VALUES];
  for (int i = 0; i < n; i++)
    if (!(part[i] = fc_gpu_shared(g, LLVMTypeOf(v[i]), nw, "part"))) return FC_ERR_LIMIT;
  LLVMValueRef warp = LLVMBuildLShr(B, t->lane, fc_cg_const_i64(k, 5), "warp");
  LLVMValueRef first = LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildAnd(B, t->lane, fc_cg_const_i64(k, WARP - 1), ""),
                                     fc_cg_const_i64(k, 0), "");
  LLVMBasicBlockRef done = fc_cg_if_begin(k, first);
  for (int i = 0; i < n; i++)
    LLVMBuildStore(B, v[i], LLVMBuildInBoundsGEP2(B, LLVMTypeOf(v[i]), part[i], &warp, 1, ""));
  fc_cg_if_end(k, done);
  fc_gpu_barrier(g);
  for (int64_t w = 0; w < nw; w++) {
    LLVMValueRef at = fc_cg_const_i64(k, w);
    for (int i = 0; i < n; i++) {
      LLVMTypeRef ty = LLVMTypeOf(v[i]);
      other[i] = LLVMBuildLoad2(B, ty, LLVMBuildInBoundsGEP2(B, ty, part[i], &at, 1, ""), "");
    }
    if (w == 0) {
      for (int i = 0; i < n; i++) v[i] = other[i];
    } else {
      combine(g, ctx, v, other);
    }
  }
  return FC_OK;
}

LLVMBasicBlockRef fc_gpu_team_leader_begin(FcGpuKernel *g, const FcGpuTeam *t) {
  FcKernel *k = &g->k;
  LLVMValueRef c = t->valid;
  if (t->kind != FC_GPU_TEAM_THREAD)
    c = LLVMBuildAnd(k->b, c, LLVMBuildICmp(k->b, LLVMIntEQ, t->lane, fc_cg_const_i64(k, 0), ""), "leader");
  return fc_cg_if_begin(k, c);
}
