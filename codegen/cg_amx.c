/* cg_amx.c — the AMX tile product of cg_amx.h.
 *
 * x86_amx values come only from the .internal intrinsics (whose operands carry the shapes), and the
 * accumulators cross the k loop as x86_amx phis, the form LLVM's X86LowerAMXCast makes of what clang emits
 * (<256 x i32> loop phis with llvm.x86.cast.{tile.to.vector,vector.to.tile} around them). We build that form
 * directly: with the casts, LLVM 19's combine re-queues its live casts into the vector it is iterating, which
 * reallocates once 9 or more are live (4 accumulators), a use-after-free inside LLVM that valgrind shows
 * and that crashed compiles where freed memory was overwritten. A function that uses tiles gets its
 * ldtilecfg from LLVM and a tilerelease at its return, so a thread holds no tile state between kernels.
 * LLVM also reloads the configuration after every call in such a function (a callee may have changed it),
 * about 50 ns each: an im2col's border fills, which LoopIdiomRecognize turns into memset calls, made ResNet's
 * convs 15x slower. So a function with tiles is marked "no-builtins" (its fill and copy loops stay loops,
 * vectorised) and callers emit no calls of their own there.
 * Within a chunk the B tiles are loaded first and then one A tile at a time: 4 accumulators, 2 B tiles and
 * 1 A tile are 7 of the 8 tile registers.
 */
#include "cg_amx.h"

static LLVMValueRef i16c(FcKernel *k, int64_t v) { return LLVMConstInt(LLVMInt16TypeInContext(k->ctx), (unsigned long long)v, 0); }

static LLVMValueRef tile_load(FcKernel *k, LLVMValueRef p, int64_t stride) {
  LLVMValueRef args[4] = {i16c(k, FC_AMX_ROWS), i16c(k, FC_AMX_ROW_BYTES), p, fc_cg_const_i64(k, stride)};
  return fc_cg_intrinsic(k, "llvm.x86.tileloadd64.internal", NULL, args, 4);
}

static LLVMValueRef at(FcKernel *k, LLVMValueRef base, LLVMValueRef off) {
  return LLVMBuildGEP2(k->b, LLVMInt8TypeInContext(k->ctx), base, &off, 1, "");
}

/* Chunk h of every tile product (A from a[] at stride a_stride): each accumulator acc[] becomes its sum. */
static void chunk_step(FcKernel *k, const FcAmxGemm *g, LLVMValueRef *acc, LLVMValueRef h, const LLVMValueRef *a,
                       int64_t a_stride, int64_t a_step) {
  LLVMValueRef tb[FC_AMX_MAX_TILES];
  for (int j = 0; j < g->nb; j++) tb[j] = tile_load(k, at(k, g->b.base[j], fc_cg_imulc(k, h, g->b.chunk_step)), g->b.stride);
  const char *dp = g->dot == FC_AMX_BUSD ? "llvm.x86.tdpbusd.internal" : "llvm.x86.tdpbsud.internal";
  for (int i = 0; i < g->na; i++) {
    LLVMValueRef ta = tile_load(k, at(k, a[i], fc_cg_imulc(k, h, a_step)), a_stride);
    for (int j = 0; j < g->nb; j++) {
      LLVMValueRef args[6] = {i16c(k, FC_AMX_ROWS), i16c(k, FC_AMX_ROW_BYTES), i16c(k, FC_AMX_ROW_BYTES),
                              acc[i * g->nb + j], ta, tb[j]};
      acc[i * g->nb + j] = fc_cg_intrinsic(k, dp, NULL, args, 6);
    }
  }
}

void fc_amx_gemm(FcKernel *k, const FcAmxGemm *g) {
  FC_ASSERT(g->na >= 1 && g->na <= FC_AMX_MAX_TILES && g->nb >= 1 && g->nb <= FC_AMX_MAX_TILES && g->chunks >= 1);
  LLVMBuilderRef b = k->b;
  static const char nb[] = "no-builtins";
  LLVMAddAttributeAtIndex(k->fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(k->ctx, nb, sizeof nb - 1, "", 0));
  int n = g->na * g->nb;
  LLVMValueRef acc[FC_AMX_MAX_TILES * FC_AMX_MAX_TILES];
  for (int i = 0; i < n; i++) {
    LLVMValueRef z[2] = {i16c(k, FC_AMX_ROWS), i16c(k, FC_AMX_ROW_BYTES)};
    acc[i] = fc_cg_intrinsic(k, "llvm.x86.tilezero.internal", NULL, z, 2);
  }
  int64_t in_place = g->a_last[0] ? g->chunks - 1 : g->chunks;
  if (in_place > 0) {
    /* the accumulators cross the loop as x86_amx phis in its header, where the loop exits */
    FcLoop lh;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
    LLVMValueRef h = fc_cg_loop_begin(k, &lh, fc_cg_const_i64(k, 0), fc_cg_const_i64(k, in_place), 1, "amx_k");
    LLVMBasicBlockRef body = LLVMGetInsertBlock(b);
    LLVMValueRef phi[FC_AMX_MAX_TILES * FC_AMX_MAX_TILES];
    LLVMPositionBuilderBefore(b, LLVMGetNextInstruction(LLVMGetFirstInstruction(lh.header))); /* after the iv */
    for (int i = 0; i < n; i++) {
      phi[i] = LLVMBuildPhi(b, LLVMX86AMXTypeInContext(k->ctx), "amx_acc");
      LLVMAddIncoming(phi[i], &acc[i], &pre, 1);
      acc[i] = phi[i];
    }
    LLVMPositionBuilderAtEnd(b, body);
    chunk_step(k, g, acc, h, g->a.base, g->a.stride, g->a.chunk_step);
    for (int i = 0; i < n; i++) LLVMAddIncoming(phi[i], &acc[i], &lh.latch, 1);
    fc_cg_loop_end(k, &lh);
    for (int i = 0; i < n; i++) acc[i] = phi[i];
  }
  if (g->a_last[0]) chunk_step(k, g, acc, fc_cg_const_i64(k, g->chunks - 1), g->a_last, g->a_last_stride, 0);
  for (int i = 0; i < n; i++) {
    LLVMValueRef off = fc_cg_const_i64(k, (int64_t)i * FC_AMX_ROWS * FC_AMX_ROW_BYTES);
    LLVMValueRef args[5] = {i16c(k, FC_AMX_ROWS), i16c(k, FC_AMX_ROW_BYTES), at(k, g->c, off),
                            fc_cg_const_i64(k, FC_AMX_ROW_BYTES), acc[i]};
    fc_cg_intrinsic(k, "llvm.x86.tilestored64.internal", NULL, args, 5);
  }
}
