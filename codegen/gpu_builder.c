/* gpu_builder.c — the SIMT primitives GPU kernel emitters build with (gpu.h), each emitted two ways: NVPTX
 * intrinsics for the GPU, and for the SIMT host backend loads from the emulator's FrtSimtThread
 * (runtime/gpu_simt.h: tid at byte 0, bid at 12, the block's shared area at 24) and calls of its barrier and
 * shuffle functions. Launch dimensions are compile-time constants of the launch (shapes are static), so
 * blockDim and gridDim are never read at run time.
 *
 * Tensor cores: mma.sync through NVVM's llvm.nvvm.mma.* intrinsics on NVPTX; on the host a call of
 * frt_simt_mma with the lane's fragments in stack slots, answered for the whole warp like a shuffle.
 *
 * Shared memory: on NVPTX one internal addrspace(3) global per array (the kernel's static shared memory,
 * which ptxas checks against the device's limit), used through a generic pointer (LLVM's address-space
 * inference turns the accesses back into ld.shared/st.shared); on the host, consecutive 16-byte aligned
 * slices of the block's area, whose size the launch carries.
 */
#include <stdarg.h>
#include <stdio.h>

#include "gpu.h"

enum { THREAD_TID = 0, THREAD_BID = 12, THREAD_SHARED = 24 };

static LLVMTypeRef i32_of(FcGpuKernel *g) { return LLVMInt32TypeInContext(g->k.ctx); }

static LLVMValueRef call0(FcGpuKernel *g, const char *name, LLVMTypeRef ret) {
  LLVMTypeRef fty = LLVMFunctionType(ret, NULL, 0, 0);
  LLVMValueRef f = LLVMGetNamedFunction(g->k.mod, name);
  if (!f) f = LLVMAddFunction(g->k.mod, name, fty);
  return LLVMBuildCall2(g->k.b, fty, f, NULL, 0, "");
}

static LLVMValueRef host_u32(FcGpuKernel *g, int byte) {
  LLVMValueRef off = LLVMConstInt(LLVMInt64TypeInContext(g->k.ctx), (unsigned long long)byte, 0);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(g->k.b, LLVMInt8TypeInContext(g->k.ctx), g->thread, &off, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(g->k.b, i32_of(g), p, "");
  LLVMSetAlignment(v, 4);
  return v;
}

static LLVMValueRef sreg(FcGpuKernel *g, const char *what, int dim) {
  FC_ASSERT(dim >= 0 && dim < 3);
  char name[64];
  snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s.%c", what, "xyz"[dim]);
  return call0(g, name, i32_of(g));
}

LLVMValueRef fc_gpu_thread_idx(FcGpuKernel *g, int dim) {
  if (g->block[dim] == 1) return LLVMConstInt(i32_of(g), 0, 0);
  return g->host ? host_u32(g, THREAD_TID + 4 * dim) : sreg(g, "tid", dim);
}

LLVMValueRef fc_gpu_block_idx(FcGpuKernel *g, int dim) {
  if (g->grid[dim] == 1) return LLVMConstInt(i32_of(g), 0, 0);
  return g->host ? host_u32(g, THREAD_BID + 4 * dim) : sreg(g, "ctaid", dim);
}

LLVMValueRef fc_gpu_global_idx_x(FcGpuKernel *g) {
  LLVMTypeRef i64 = LLVMInt64TypeInContext(g->k.ctx);
  LLVMValueRef b = LLVMBuildZExt(g->k.b, fc_gpu_block_idx(g, 0), i64, "");
  LLVMValueRef t = LLVMBuildZExt(g->k.b, fc_gpu_thread_idx(g, 0), i64, "");
  return LLVMBuildAdd(g->k.b, LLVMBuildMul(g->k.b, b, LLVMConstInt(i64, g->block[0], 0), ""), t, "gid");
}

FcStatus fc_gpu_launch_1d(FcGpuKernel *g, int64_t n, uint32_t threads) {
  FC_ASSERT(threads >= 32 && threads % 32 == 0);
  int64_t blocks = n <= 0 ? 1 : (n - 1) / threads + 1;
  if (blocks > INT32_MAX)
    return fc_gpu_error(g, FC_ERR_LIMIT, "%lld elements need more than 2^31-1 blocks of %u threads", (long long)n,
                        threads);
  /* A small n gets one block of just enough warps. */
  if (blocks == 1 && n > 0 && n < threads) threads = (uint32_t)((n + 31) / 32 * 32);
  g->grid[0] = (uint32_t)blocks;
  g->grid[1] = g->grid[2] = 1;
  g->block[0] = threads;
  g->block[1] = g->block[2] = 1;
  return FC_OK;
}

void fc_gpu_barrier(FcGpuKernel *g) {
  g->sync = true;
  if (!g->host) {
    call0(g, "llvm.nvvm.barrier0", LLVMVoidTypeInContext(g->k.ctx));
    return;
  }
  LLVMTypeRef ptr = LLVMPointerTypeInContext(g->k.ctx, 0);
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(g->k.ctx), &ptr, 1, 0);
  LLVMValueRef f = LLVMGetNamedFunction(g->k.mod, "frt_simt_barrier");
  if (!f) f = LLVMAddFunction(g->k.mod, "frt_simt_barrier", fty);
  LLVMBuildCall2(g->k.b, fty, f, &g->thread, 1, "");
}

/* mode: FRT_SIMT_SHFL_* (idx 0, down 1, up 2, xor 3); NVVM's names and clamp operands for the same. */
static LLVMValueRef shuffle(FcGpuKernel *g, LLVMValueRef v, int mode, LLVMValueRef operand) {
  g->sync = true;
  LLVMTypeRef vt = LLVMTypeOf(v), i32 = i32_of(g);
  bool is_f32 = LLVMGetTypeKind(vt) == LLVMFloatTypeKind;
  FC_ASSERT(is_f32 || vt == i32);
  if (g->host) {
    LLVMTypeRef ptr = LLVMPointerTypeInContext(g->k.ctx, 0);
    LLVMTypeRef params[4] = {ptr, vt, i32, i32};
    LLVMTypeRef fty = LLVMFunctionType(vt, params, 4, 0);
    const char *name = is_f32 ? "frt_simt_shfl_f32" : "frt_simt_shfl_i32";
    LLVMValueRef f = LLVMGetNamedFunction(g->k.mod, name);
    if (!f) f = LLVMAddFunction(g->k.mod, name, fty);
    LLVMValueRef args[4] = {g->thread, v, LLVMConstInt(i32, (unsigned long long)mode, 0), operand};
    return LLVMBuildCall2(g->k.b, fty, f, args, 4, "");
  }
  static const char *const kinds[4] = {"idx", "down", "up", "bfly"};
  char name[64];
  snprintf(name, sizeof name, "llvm.nvvm.shfl.sync.%s.%s", kinds[mode], is_f32 ? "f32" : "i32");
  LLVMTypeRef params[4] = {i32, vt, i32, i32};
  LLVMTypeRef fty = LLVMFunctionType(vt, params, 4, 0);
  LLVMValueRef f = LLVMGetNamedFunction(g->k.mod, name);
  if (!f) f = LLVMAddFunction(g->k.mod, name, fty);
  /* The clamp operand: 0x1f (segments of the whole warp) for idx, down and xor; 0 for up. */
  LLVMValueRef args[4] = {LLVMConstInt(i32, 0xffffffffu, 0), v, operand, LLVMConstInt(i32, mode == 2 ? 0 : 0x1f, 0)};
  return LLVMBuildCall2(g->k.b, fty, f, args, 4, "");
}

LLVMValueRef fc_gpu_shfl_xor(FcGpuKernel *g, LLVMValueRef v, int mask) {
  return shuffle(g, v, 3, LLVMConstInt(i32_of(g), (unsigned long long)mask, 0));
}

LLVMValueRef fc_gpu_shfl_down(FcGpuKernel *g, LLVMValueRef v, int delta) {
  return shuffle(g, v, 1, LLVMConstInt(i32_of(g), (unsigned long long)delta, 0));
}

LLVMValueRef fc_gpu_shfl_idx(FcGpuKernel *g, LLVMValueRef v, LLVMValueRef src) { return shuffle(g, v, 0, src); }

static LLVMValueRef warp_reduce(FcGpuKernel *g, LLVMValueRef v, bool max) {
  for (int mask = 16; mask >= 1; mask /= 2) {
    LLVMValueRef o = fc_gpu_shfl_xor(g, v, mask);
    v = max ? fc_cg_intrinsic(&g->k, "llvm.maxnum", LLVMTypeOf(v), (LLVMValueRef[]){v, o}, 2)
            : LLVMBuildFAdd(g->k.b, v, o, "");
  }
  return v;
}

LLVMValueRef fc_gpu_warp_sum(FcGpuKernel *g, LLVMValueRef v) { return warp_reduce(g, v, false); }
LLVMValueRef fc_gpu_warp_max(FcGpuKernel *g, LLVMValueRef v) { return warp_reduce(g, v, true); }

void fc_gpu_mma(FcGpuKernel *g, FcGpuMma kind, LLVMValueRef const *a, LLVMValueRef const *b, LLVMValueRef *cd) {
  g->sync = true;
  FcKernel *k = &g->k;
  LLVMContextRef c = k->ctx;
  LLVMTypeRef i32 = i32_of(g), f32 = LLVMFloatTypeInContext(c);
  if (g->host) {
    /* The fragments go through the lane's stack: the emulator reads every lane's before it writes any D. */
    LLVMValueRef at = fc_cg_tile_new(k, i32, 4, "mma_a"), bt = fc_cg_tile_new(k, i32, 2, "mma_b");
    LLVMValueRef ct = fc_cg_tile_new(k, f32, 4, "mma_cd");
    for (int i = 0; i < 4; i++) {
      LLVMBuildStore(k->b, a[i], fc_cg_tile_at(k, i32, at, fc_cg_const_i64(k, i)));
      LLVMBuildStore(k->b, cd[i], fc_cg_tile_at(k, f32, ct, fc_cg_const_i64(k, i)));
    }
    for (int i = 0; i < 2; i++) LLVMBuildStore(k->b, b[i], fc_cg_tile_at(k, i32, bt, fc_cg_const_i64(k, i)));
    LLVMTypeRef ptr = LLVMPointerTypeInContext(c, 0);
    LLVMTypeRef params[5] = {ptr, i32, ptr, ptr, ptr};
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(c), params, 5, 0);
    LLVMValueRef f = LLVMGetNamedFunction(k->mod, "frt_simt_mma");
    if (!f) f = LLVMAddFunction(k->mod, "frt_simt_mma", fty);
    LLVMValueRef args[5] = {g->thread, LLVMConstInt(i32, (unsigned long long)kind, 0), at, bt, ct};
    LLVMBuildCall2(k->b, fty, f, args, 5, "");
    for (int i = 0; i < 4; i++) cd[i] = LLVMBuildLoad2(k->b, f32, fc_cg_tile_at(k, f32, ct, fc_cg_const_i64(k, i)), "");
    return;
  }
  static const char *const names[3] = {"llvm.nvvm.mma.m16n8k16.row.col.f32.f32", "llvm.nvvm.mma.m16n8k16.row.col.bf16",
                                       "llvm.nvvm.mma.m16n8k8.row.col.tf32"};
  /* f16 fragments are <2 x half> to NVVM; bf16 and tf32 ones plain i32. */
  LLVMTypeRef ft = kind == FC_GPU_MMA_F16 ? LLVMVectorType(LLVMHalfTypeInContext(c), 2) : i32;
  LLVMTypeRef params[10], fields[4] = {f32, f32, f32, f32};
  LLVMValueRef args[10];
  for (int i = 0; i < 6; i++) {
    params[i] = ft;
    LLVMValueRef v = i < 4 ? a[i] : b[i - 4];
    args[i] = ft == i32 ? v : LLVMBuildBitCast(k->b, v, ft, "");
  }
  for (int i = 0; i < 4; i++) {
    params[6 + i] = f32;
    args[6 + i] = cd[i];
  }
  LLVMTypeRef ret = LLVMStructTypeInContext(c, fields, 4, 0);
  LLVMTypeRef fty = LLVMFunctionType(ret, params, 10, 0);
  LLVMValueRef f = LLVMGetNamedFunction(k->mod, names[kind]);
  if (!f) f = LLVMAddFunction(k->mod, names[kind], fty);
  LLVMValueRef d = LLVMBuildCall2(k->b, fty, f, args, 10, "mma");
  for (int i = 0; i < 4; i++) cd[i] = LLVMBuildExtractValue(k->b, d, (unsigned)i, "");
}

LLVMValueRef fc_gpu_shared(FcGpuKernel *g, LLVMTypeRef t, int64_t count, const char *name) {
  LLVMTargetDataRef dl = LLVMGetModuleDataLayout(g->k.mod);
  int64_t bytes;
  if (count < 1) count = 1;
  if (!fc_checked_mul(count, (int64_t)LLVMABISizeOfType(dl, t), &bytes) ||
      bytes > g->k.target->gpu.max_static_shared - (int64_t)g->shared_bytes) {
    fc_gpu_error(g, FC_ERR_LIMIT, "shared memory of %lld elements does not fit the GPU's %lld bytes", (long long)count,
                 (long long)g->k.target->gpu.max_static_shared);
    return NULL;
  }
  uint32_t at = (g->shared_bytes + 15u) & ~15u;
  g->shared_bytes = at + (uint32_t)bytes;
  g->n_shared++;
  LLVMContextRef c = g->k.ctx;
  if (g->host) {
    LLVMValueRef off = LLVMConstInt(LLVMInt64TypeInContext(c), at, 0);
    return LLVMBuildInBoundsGEP2(g->k.b, LLVMInt8TypeInContext(c), g->shared_host, &off, 1, name);
  }
  char gname[96];
  snprintf(gname, sizeof gname, "%s.%s.%d", LLVMGetValueName(g->k.fn), name, g->n_shared);
  LLVMTypeRef arr = LLVMArrayType2(t, (uint64_t)count);
  LLVMValueRef gv = LLVMAddGlobalInAddressSpace(g->k.mod, arr, gname, 3);
  LLVMSetInitializer(gv, LLVMGetUndef(arr));
  LLVMSetLinkage(gv, LLVMInternalLinkage);
  LLVMSetAlignment(gv, 16);
  return LLVMBuildAddrSpaceCast(g->k.b, gv, LLVMPointerTypeInContext(c, 0), name);
}

FcStatus fc_gpu_error(FcGpuKernel *g, FcStatus st, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fc_cg_error(&g->k, st, "%s", msg);
}
