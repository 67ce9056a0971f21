/* kernel_matmul_i8.c — the integer GEMM: flow.matmul of a run-time u8 A [.., M, K] and a constant i8 B [K, N]
 * into i32, exactly (the lowering of MatMulInteger / QLinearMatMul puts its operands in these types and
 * applies the zero points around it: compiler/lower_quant.c).
 *
 * The x86 instructions that multiply bytes (vpdpbusd, vpmaddubsw) take 4 (2) adjacent bytes of u8 A against
 * 4 (2) adjacent bytes of s8 B and add their products into one i32 (i16) lane. So B is packed at compile time
 * into panels of nr = nv·lanes columns in which the 4 consecutive k of a column are adjacent: byte
 * ((panel·KG + g)·nr + j)·4 + t holds B[4g + t, panel·nr + j], zeros past K and N (KG = ceil(K / 4)). A is
 * read in place: 4 bytes of a row (one i32) broadcast to every lane meet one panel row of nv vectors. The
 * register tile is mr rows × nv vectors of i32 accumulators (the target's: fc_target_i8_gemm), kept in a
 * stack tile indexed by constants, which LLVM promotes to registers. The dot step per target:
 *   VNNI:     vpdpbusd (AVX512-VNNI 512-bit, AVX-VNNI 256-bit), exact.
 *   MADDUBS:  vpmaddubsw (pair sums saturate at i16) then vpmaddwd by ones. B is known here, so this is
 *             chosen only when no pair of it can saturate (pairs_cannot_saturate: every |b| <= 64 is
 *             enough, 2·255·64 = 32640).
 *   WIDEN:    exact for any B: B is packed as i16 with 2 consecutive k of a column adjacent (the same 4
 *             bytes per column and group, half the k), 2 bytes of A are zero-extended to an i16 pair, and
 *             one vpmaddwd per vector adds both products into the i32 lane: as many instructions per k as
 *             MADDUBS, no shuffles.
 * Rows past M read row M-1 (their results are dropped); a K that is not a multiple of the group ends with
 * one group assembled from its remaining bytes. Outer iterations are (panel, row tile) pairs, row tiles fastest, so
 * a thread's consecutive tiles reuse one B panel and the threads split N.
 */
#include <stdlib.h>
#include <string.h>

#include "codegen.h"

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

bool fc_matmul_i8_applies(const FcKernel *k) {
  const FcOp *op = k->op;
  if (op->n_operands != 2 || fc_op_attr(op, FC_ATTR_EPILOGUE)) return false;
  const FcType *at = &op->operands[0].value->type, *bt = &op->operands[1].value->type, *rt = &op->results[0].type;
  if (at->dtype != FC_DT_U8 || bt->dtype != FC_DT_I8 || rt->dtype != FC_DT_I32 || at->rank < 2 || bt->rank != 2)
    return false;
  const FcTensor *cb = fc_value_const(op->operands[1].value);
  int64_t numel;
  if (!(cb && cb->data) || !fc_type_numel(rt, &numel) || numel == 0 || bt->dims[0] == 0) return false;
  FcI8Gemm g;
  fc_target_i8_gemm(k->target, &g);
  return g.dot != FC_I8DOT_NONE;
}

typedef struct I8Tile {
  FcI8Gemm g;
  LLVMTypeRef vi, vb, vw; /* <lanes x i32>, <4·lanes x i8>, <2·lanes x i16> */
  LLVMValueRef acc;       /* stack tile of mr·nv accumulator vectors */
} I8Tile;

static LLVMValueRef acc_at(FcKernel *k, const I8Tile *t, int i) { return fc_cg_tile_at(k, t->vi, t->acc, c64(k, i)); }

/* acc + the dot product of lane c's 4 bytes of a and b (<4·lanes x i8>): u8 × s8 quadruples, or for WIDEN
 * u16 × s16 pairs. */
static LLVMValueRef dot4(FcKernel *k, const I8Tile *t, LLVMValueRef acc, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef bld = k->b;
  int w = t->g.lanes;
  bool z = w == 16;
  const char *maddwd = z ? "llvm.x86.avx512.pmaddw.d.512" : "llvm.x86.avx2.pmadd.wd";
  switch (t->g.dot) {
  case FC_I8DOT_VNNI: {
    LLVMValueRef args[3] = {acc, LLVMBuildBitCast(bld, a, t->vi, ""), LLVMBuildBitCast(bld, b, t->vi, "")};
    return fc_cg_intrinsic(k, z ? "llvm.x86.avx512.vpdpbusd.512" : "llvm.x86.avx512.vpdpbusd.256", NULL, args, 3);
  }
  case FC_I8DOT_MADDUBS: {
    LLVMValueRef ab[2] = {a, b};
    const char *maddubs = z ? "llvm.x86.avx512.pmaddubs.w.512" : "llvm.x86.avx2.pmadd.ub.sw";
    LLVMValueRef p16 = fc_cg_intrinsic(k, maddubs, NULL, ab, 2);
    LLVMValueRef one = LLVMConstInt(LLVMInt16TypeInContext(k->ctx), 1, 0);
    LLVMValueRef pw[2] = {p16, fc_cg_splat_const(t->vw, one)};
    return LLVMBuildAdd(bld, acc, fc_cg_intrinsic(k, maddwd, NULL, pw, 2), "");
  }
  default: {
    /* a: u16 pairs, b: s16 pairs (the WIDEN packing) */
    LLVMValueRef args[2] = {LLVMBuildBitCast(bld, a, t->vw, ""), LLVMBuildBitCast(bld, b, t->vw, "")};
    return LLVMBuildAdd(bld, acc, fc_cg_intrinsic(k, maddwd, NULL, args, 2), "");
  }
  }
}

/* One k group for every row of the tile: a32[i] (i32, 4 bytes of row i) against the panel row at bp. */
static void tile_step(FcKernel *k, const I8Tile *t, LLVMValueRef *a32, LLVMValueRef bp) {
  LLVMBuilderRef bld = k->b;
  int nv = t->g.nv, w = t->g.lanes;
  LLVMValueRef bv[4];
  for (int v = 0; v < nv; v++) {
    LLVMValueRef off = c64(k, (int64_t)v * 4 * w);
    bv[v] = LLVMBuildLoad2(bld, t->vb, LLVMBuildGEP2(bld, LLVMInt8TypeInContext(k->ctx), bp, &off, 1, ""), "");
    LLVMSetAlignment(bv[v], (unsigned)(4 * w));
  }
  for (int i = 0; i < t->g.mr; i++) {
    LLVMValueRef a = LLVMBuildBitCast(bld, fc_cg_splat(k, a32[i], (unsigned)w), t->vb, "");
    for (int v = 0; v < nv; v++) {
      LLVMValueRef p = acc_at(k, t, i * nv + v);
      LLVMBuildStore(bld, dot4(k, t, LLVMBuildLoad2(bld, t->vi, p, ""), a, bv[v]), p);
    }
  }
}

/* Whether vpmaddubsw's pair sums a1·b1 + a2·b2 (a in [0, 255], the pairs k = 2p, 2p + 1 of a column) stay
 * within i16 for every A: with opposite signs the sum is at most 255·128 = 32640 in magnitude; with equal
 * signs it is 255·(|b1| + |b2|), so |b1| + |b2| <= 128 is needed. Every |b| <= 64 is the simple sufficient
 * case; this also admits weights up to ±128 that are paired with small or opposite-signed ones. */
static bool pairs_cannot_saturate(const int8_t *B, int64_t K, int64_t N) {
  for (int64_t kk = 0; kk + 1 < K; kk += 2)
    for (int64_t j = 0; j < N; j++) {
      int b1 = B[kk * N + j], b2 = B[(kk + 1) * N + j];
      if ((b1 > 0) == (b2 > 0) && b1 != 0 && b2 != 0 && abs(b1) + abs(b2) > 128) return false;
    }
  return true;
}

FcStatus fc_matmul_i8(FcKernel *k) {
  const FcOp *op = k->op;
  const FcType *bt = &op->operands[1].value->type, *rt = &op->results[0].type;
  const int8_t *B = fc_value_const(op->operands[1].value)->data;
  int64_t K = bt->dims[0], N = bt->dims[1], numel;
  FC_ASSERT(fc_type_numel(rt, &numel));
  int64_t M = numel / N;
  I8Tile t;
  fc_target_i8_gemm(k->target, &t.g);
  if (t.g.dot == FC_I8DOT_MADDUBS && !pairs_cannot_saturate(B, K, N)) t.g.dot = FC_I8DOT_WIDEN;
  int w = t.g.lanes, mr = t.g.mr, nv = t.g.nv, nr = nv * w;
  bool widen = t.g.dot == FC_I8DOT_WIDEN;
  int kg = widen ? 2 : 4; /* k per 4-byte group of a column */
  int64_t KG = (K + kg - 1) / kg, panels = (N + nr - 1) / nr, mtiles = (M + mr - 1) / mr, bytes;
  if (!fc_checked_mul(panels, KG, &bytes) || !fc_checked_mul(bytes, 4 * (int64_t)nr, &bytes))
    return fc_cg_error(k, FC_ERR_LIMIT, "packed weights are too large");
  int8_t *pk = calloc((size_t)bytes, 1);
  if (!pk) fc_die(__FILE__, __LINE__, "out of memory");
  for (int64_t kk = 0; kk < K; kk++)
    for (int64_t j = 0; j < N; j++) {
      int64_t at = (((j / nr) * KG + kk / kg) * nr + j % nr) * 4;
      int8_t v = B[kk * N + j];
      if (widen) { /* little-endian s16 */
        pk[at + 2 * (kk % 2)] = v;
        pk[at + 2 * (kk % 2) + 1] = v < 0 ? -1 : 0;
      } else {
        pk[at + kk % 4] = v;
      }
    }
  LLVMValueRef bp = fc_kernel_substitute_operand(k, 1, fc_cg_const_bytes(k, pk, (size_t)bytes, "packed_b_i8"));
  free(pk);
  fc_kernel_set_outer(k, panels * mtiles, 2.0 * mr * nr * (double)K);

  LLVMBuilderRef bld = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  t.vi = LLVMVectorType(i32, (unsigned)w);
  t.vb = LLVMVectorType(i8, (unsigned)(4 * w));
  t.vw = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), (unsigned)(2 * w));
  t.acc = fc_cg_tile_new(k, t.vi, mr * nv, "acc");
  LLVMValueRef ctile = fc_cg_tile_new(k, i32, (int64_t)mr * nr, "edge");

  FcLoop lo;
  LLVMValueRef it = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "tile");
  LLVMValueRef q = LLVMBuildSDiv(bld, it, c64(k, mtiles), ""), mt = LLVMBuildSRem(bld, it, c64(k, mtiles), "");
  LLVMValueRef m0 = fc_cg_imulc(k, mt, mr), n0 = fc_cg_imulc(k, q, nr);
  LLVMValueRef arow[16];
  for (int i = 0; i < mr; i++) {
    LLVMValueRef row = fc_cg_smin(k, fc_cg_iadd(k, m0, c64(k, i)), c64(k, M - 1));
    LLVMValueRef off = fc_cg_imulc(k, row, K);
    arow[i] = LLVMBuildGEP2(bld, i8, k->in[0], &off, 1, "");
  }
  LLVMValueRef poff = fc_cg_imulc(k, q, KG * nr * 4);
  LLVMValueRef panel = LLVMBuildGEP2(bld, i8, bp, &poff, 1, "");
  for (int i = 0; i < mr * nv; i++) LLVMBuildStore(bld, LLVMConstNull(t.vi), acc_at(k, &t, i));

  LLVMValueRef a32[16];
  FcLoop lk;
  LLVMValueRef g = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, K / kg), 1, "kg");
  LLVMValueRef koff = fc_cg_imulc(k, g, kg);
  LLVMTypeRef v2i8 = LLVMVectorType(i8, 2), v2i16 = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), 2);
  for (int i = 0; i < mr; i++) {
    a32[i] = LLVMBuildLoad2(bld, widen ? v2i8 : i32, LLVMBuildGEP2(bld, i8, arow[i], &koff, 1, ""), "");
    LLVMSetAlignment(a32[i], 1);
    if (widen) a32[i] = LLVMBuildBitCast(bld, LLVMBuildZExt(bld, a32[i], v2i16, ""), i32, "");
  }
  LLVMValueRef boff = fc_cg_imulc(k, g, (int64_t)nr * 4);
  tile_step(k, &t, a32, LLVMBuildGEP2(bld, i8, panel, &boff, 1, ""));
  fc_cg_loop_end(k, &lk);
  if (K % kg) {
    /* The last group's bytes one by one (the row may end there), zero-extended to 32 / kg bits each; B is
     * zero past K. */
    for (int i = 0; i < mr; i++) {
      a32[i] = LLVMConstInt(i32, 0, 0);
      for (int64_t b = 0; b < K % kg; b++) {
        LLVMValueRef off = c64(k, K / kg * kg + b);
        LLVMValueRef p = LLVMBuildGEP2(bld, i8, arow[i], &off, 1, "");
        LLVMValueRef byte = LLVMBuildZExt(bld, LLVMBuildLoad2(bld, i8, p, ""), i32, "");
        LLVMValueRef sh = LLVMConstInt(i32, (unsigned)(32 / kg * b), 0);
        a32[i] = LLVMBuildOr(bld, a32[i], LLVMBuildShl(bld, byte, sh, ""), "");
      }
    }
    LLVMValueRef off = c64(k, K / kg * nr * 4);
    tile_step(k, &t, a32, LLVMBuildGEP2(bld, i8, panel, &off, 1, ""));
  }

  /* Full tiles store their vectors; edge tiles go through a stack tile and copy the valid part. */
  LLVMValueRef rows = fc_cg_smin(k, c64(k, mr), fc_cg_isub(k, c64(k, M), m0));
  LLVMValueRef cols = fc_cg_smin(k, c64(k, nr), fc_cg_isub(k, c64(k, N), n0));
  LLVMValueRef full = LLVMBuildAnd(bld, LLVMBuildICmp(bld, LLVMIntEQ, rows, c64(k, mr), ""),
                                   LLVMBuildICmp(bld, LLVMIntEQ, cols, c64(k, nr), ""), "");
  LLVMBasicBlockRef edge_bb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "i8edge");
  LLVMBasicBlockRef full_bb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "i8full");
  LLVMBasicBlockRef done_bb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "i8done");
  LLVMBuildCondBr(bld, full, full_bb, edge_bb);
  LLVMPositionBuilderAtEnd(bld, full_bb);
  for (int i = 0; i < mr; i++)
    for (int v = 0; v < nv; v++) {
      LLVMValueRef row = fc_cg_iadd(k, m0, c64(k, i));
      LLVMValueRef at = fc_cg_iadd(k, fc_cg_imulc(k, row, N), fc_cg_iadd(k, n0, c64(k, v * w)));
      LLVMValueRef st = LLVMBuildStore(bld, LLVMBuildLoad2(bld, t.vi, acc_at(k, &t, i * nv + v), ""),
                                       LLVMBuildGEP2(bld, i32, k->out[0], &at, 1, ""));
      LLVMSetAlignment(st, 4);
    }
  LLVMBuildBr(bld, done_bb);
  LLVMPositionBuilderAtEnd(bld, edge_bb);
  for (int i = 0; i < mr * nv; i++) {
    LLVMValueRef st = LLVMBuildStore(bld, LLVMBuildLoad2(bld, t.vi, acc_at(k, &t, i), ""),
                                     fc_cg_tile_at(k, i32, ctile, c64(k, (int64_t)i * w)));
    LLVMSetAlignment(st, 4);
  }
  FcLoop li, lj;
  LLVMValueRef i = fc_cg_loop_begin(k, &li, c64(k, 0), rows, 1, "er");
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(k, 0), cols, 1, "ec");
  LLVMValueRef v = LLVMBuildLoad2(bld, i32, fc_cg_tile_at(k, i32, ctile, fc_cg_iadd(k, fc_cg_imulc(k, i, nr), j)), "");
  LLVMValueRef at = fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, m0, i), N), fc_cg_iadd(k, n0, j));
  fc_cg_store(k, FC_DT_I32, k->out[0], at, v);
  fc_cg_loop_end(k, &lj);
  fc_cg_loop_end(k, &li);
  LLVMBuildBr(bld, done_bb);
  LLVMPositionBuilderAtEnd(bld, done_bb);
  fc_cg_loop_end(k, &lo);
  return FC_OK;
}
