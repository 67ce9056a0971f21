/* kernel_matmul_i8.c — the integer GEMM: flow.matmul of a run-time 8-bit A [.., M, K] and a constant 8-bit
 * B [K, N], in two forms:
 *   - plain: u8 A × i8 B into i32, exactly (the lowering of MatMulInteger / QLinearMatMul puts its operands
 *     in these types and applies the zero points around it: compiler/lower_quant.c);
 *   - quantised (qspec §2): A per-tensor u8/i8, B per tensor or per column, an optional i32 bias, the result
 *     requantised to u8/i8 or scaled to f32 in the store (cg_requant.h folds zero points and bias into one
 *     i32 correction per column; B's zero points are subtracted from B at compile time).
 *
 * The x86 instructions that multiply bytes (vpdpbusd, vpmaddubsw) take 4 (2) adjacent bytes of u8 A against
 * 4 (2) adjacent bytes of s8 B and add their products into one i32 (i16) lane. So B is packed at compile time
 * into panels of nr = nv·lanes columns in which the 4 consecutive k of a column are adjacent: byte
 * ((panel·KG + g)·nr + j)·4 + t holds B[4g + t, panel·nr + j], zeros past K and N (KG = ceil(K / 4)). A is
 * read in place: 4 bytes of a row (one i32) broadcast to every lane meet one panel row of nv vectors; an i8 A
 * is flipped to u8 on the way (xor 0x80). The register tile is mr rows × nv vectors of i32 accumulators (the
 * target's: fc_target_i8_gemm), kept in a stack tile indexed by constants, which LLVM promotes to registers.
 * The dot step per target:
 *   VNNI:     vpdpbusd (AVX512-VNNI 512-bit, AVX-VNNI 256-bit), exact.
 *   MADDUBS:  vpmaddubsw (pair sums saturate at i16) then vpmaddwd by ones. B is known here, so this is
 *             chosen only when no pair of it can saturate (fc_qp_pairs_exact: every |b| <= 64 is enough,
 *             2·255·64 = 32640; a narrowed A range admits more).
 *   WIDEN:    exact for any B within i16 (also the quantised B - zb outside s8): B is packed as i16 with 2
 *             consecutive k of a column adjacent (the same 4 bytes per column and group, half the k), 2 bytes
 *             of A are zero-extended to an i16 pair, and one vpmaddwd per vector adds both products into
 *             the i32 lane: as many instructions per k as MADDUBS, no shuffles.
 * Rows past M read row M-1 (their results are dropped); a K that is not a multiple of the group ends with
 * one group assembled from its remaining bytes. Outer iterations are (panel, row tile) pairs, row tiles fastest, so
 * a thread's consecutive tiles reuse one B panel and the threads split N. The quantised form's per-column
 * corrections and multipliers follow the packed panels in the same constant (so kernels of equal shape and
 * zero points are shared), and each finished vector is requantised before its one store.
 */
#include <stdlib.h>
#include <string.h>

#include "cg_requant.h"
#include "codegen.h"

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

static bool plain_form(const FcOp *op) {
  const FcType *at = &op->operands[0].value->type, *bt = &op->operands[1].value->type, *rt = &op->results[0].type;
  return op->n_operands == 2 && !at->quant && !bt->quant && !rt->quant && at->dtype == FC_DT_U8 &&
         bt->dtype == FC_DT_I8 && rt->dtype == FC_DT_I32;
}

bool fc_matmul_i8_applies(const FcKernel *k) {
  const FcOp *op = k->op;
  if (op->n_operands < 2 || fc_op_attr(op, FC_ATTR_EPILOGUE)) return false;
  const FcType *at = &op->operands[0].value->type, *bt = &op->operands[1].value->type, *rt = &op->results[0].type;
  if (at->rank < 2 || bt->rank != 2) return false;
  if (!plain_form(op) && !(at->quant && fc_qp_applies(op, 1, NULL, 0))) return false;
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

LLVMValueRef fc_i8_dot(FcKernel *k, FcI8Dot dot, int lanes, LLVMValueRef acc, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef bld = k->b;
  bool z = lanes == 16;
  LLVMTypeRef vi = LLVMVectorType(LLVMInt32TypeInContext(k->ctx), (unsigned)lanes);
  LLVMTypeRef vw = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), (unsigned)(2 * lanes));
  const char *maddwd = z ? "llvm.x86.avx512.pmaddw.d.512" : "llvm.x86.avx2.pmadd.wd";
  switch (dot) {
  case FC_I8DOT_VNNI: {
    LLVMValueRef args[3] = {acc, LLVMBuildBitCast(bld, a, vi, ""), LLVMBuildBitCast(bld, b, vi, "")};
    return fc_cg_intrinsic(k, z ? "llvm.x86.avx512.vpdpbusd.512" : "llvm.x86.avx512.vpdpbusd.256", NULL, args, 3);
  }
  case FC_I8DOT_MADDUBS: {
    LLVMTypeRef vb = LLVMVectorType(LLVMInt8TypeInContext(k->ctx), (unsigned)(4 * lanes));
    LLVMValueRef ab[2] = {LLVMBuildBitCast(bld, a, vb, ""), LLVMBuildBitCast(bld, b, vb, "")};
    const char *maddubs = z ? "llvm.x86.avx512.pmaddubs.w.512" : "llvm.x86.avx2.pmadd.ub.sw";
    LLVMValueRef p16 = fc_cg_intrinsic(k, maddubs, NULL, ab, 2);
    LLVMValueRef one = LLVMConstInt(LLVMInt16TypeInContext(k->ctx), 1, 0);
    LLVMValueRef pw[2] = {p16, fc_cg_splat_const(vw, one)};
    return LLVMBuildAdd(bld, acc, fc_cg_intrinsic(k, maddwd, NULL, pw, 2), "");
  }
  default: {
    /* a: u16 pairs, b: s16 pairs (the WIDEN packing) */
    LLVMValueRef args[2] = {LLVMBuildBitCast(bld, a, vw, ""), LLVMBuildBitCast(bld, b, vw, "")};
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
      LLVMBuildStore(bld, fc_i8_dot(k, t->g.dot, w, LLVMBuildLoad2(bld, t->vi, p, ""), a, bv[v]), p);
    }
  }
}

/* The weights as int16 [K, N] and, for the quantised form, the folded corrections (q->w8 and the pair test
 * decide the dot kind). The plain form is its own w' with xmax 255 and no corrections. */
void fc_i8_plain_weights(const FcOp *op, int64_t K, int64_t N, FcQuantProduct *q) {
  const int8_t *B = fc_value_const(op->operands[1].value)->data;
  *q = (FcQuantProduct){.xmax = 255, .K = K, .channels = N, .chan_axis = 1, .w8 = true, .out = FC_DT_I32};
  q->w = malloc((size_t)(K * N) * sizeof *q->w);
  if (!q->w) fc_die(__FILE__, __LINE__, "out of memory");
  for (int64_t i = 0; i < K * N; i++) q->w[i] = B[i];
}

FcStatus fc_matmul_i8(FcKernel *k) {
  const FcOp *op = k->op;
  const FcType *bt = &op->operands[1].value->type, *rt = &op->results[0].type;
  int64_t K = bt->dims[0], N = bt->dims[1], numel;
  FC_ASSERT(fc_type_numel(rt, &numel));
  int64_t M = numel / N;
  FcQuantProduct q;
  bool quant = !plain_form(op);
  if (quant) {
    FcStatus st = fc_qp_init(k, 1, K, N, &q);
    if (st != FC_OK) return st;
  } else {
    fc_i8_plain_weights(op, K, N, &q);
  }
  I8Tile t;
  fc_target_i8_gemm(k->target, &t.g);
  if (!q.w8 || (t.g.dot == FC_I8DOT_MADDUBS && !fc_qp_pairs_exact(&q))) t.g.dot = FC_I8DOT_WIDEN;
  int w = t.g.lanes, mr = t.g.mr, nv = t.g.nv, nr = nv * w;
  bool widen = t.g.dot == FC_I8DOT_WIDEN;
  int kg = widen ? 2 : 4; /* k per 4-byte group of a column */
  int64_t KG = (K + kg - 1) / kg, panels = (N + nr - 1) / nr, mtiles = (M + mr - 1) / mr, bytes, npad;
  if (!fc_checked_mul(panels, KG, &bytes) || !fc_checked_mul(bytes, 4 * (int64_t)nr, &bytes) ||
      !fc_checked_mul(panels, nr, &npad) || bytes > INT64_MAX / 2 - 8 * npad) {
    fc_qp_free(&q);
    return fc_cg_error(k, FC_ERR_LIMIT, "packed weights are too large");
  }
  /* [packed B | corr: i32 × npad | mult: f32 × npad] (the tables only for the quantised form) */
  int64_t total = bytes + (quant ? 8 * npad : 0);
  int8_t *pk = calloc((size_t)total, 1);
  if (!pk) fc_die(__FILE__, __LINE__, "out of memory");
  for (int64_t kk = 0; kk < K; kk++)
    for (int64_t j = 0; j < N; j++) {
      int64_t at = (((j / nr) * KG + kk / kg) * nr + j % nr) * 4;
      int16_t v = q.w[kk * N + j];
      if (widen) { /* little-endian s16 */
        pk[at + 2 * (kk % 2)] = (int8_t)(v & 0xff);
        pk[at + 2 * (kk % 2) + 1] = (int8_t)(v >> 8);
      } else {
        pk[at + kk % 4] = (int8_t)v;
      }
    }
  if (quant) {
    memcpy(pk + bytes, q.corr, (size_t)N * 4);
    memcpy(pk + bytes + 4 * npad, q.mult, (size_t)N * 4);
  }
  LLVMValueRef bp = fc_kernel_substitute_operand(k, 1, fc_cg_const_bytes(k, pk, (size_t)total, "packed_b_i8"));
  free(pk);
  fc_kernel_set_outer(k, panels * mtiles, 2.0 * mr * nr * (double)K);

  LLVMBuilderRef bld = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx);
  t.vi = LLVMVectorType(i32, (unsigned)w);
  t.vb = LLVMVectorType(i8, (unsigned)(4 * w));
  t.vw = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), (unsigned)(2 * w));
  t.acc = fc_cg_tile_new(k, t.vi, mr * nv, "acc");
  /* the result's element: i32 (plain), the storage byte (requantised) or f32 */
  FcDtype odt = quant ? q.out : FC_DT_I32;
  LLVMTypeRef et = odt == FC_DT_I32 ? i32 : odt == FC_DT_F32 ? f32 : i8;
  LLVMValueRef ctile = fc_cg_tile_new(k, et, (int64_t)mr * nr, "edge");

  FcLoop lo;
  LLVMValueRef it = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "tile");
  LLVMValueRef qp = LLVMBuildSDiv(bld, it, c64(k, mtiles), ""), mt = LLVMBuildSRem(bld, it, c64(k, mtiles), "");
  LLVMValueRef m0 = fc_cg_imulc(k, mt, mr), n0 = fc_cg_imulc(k, qp, nr);
  LLVMValueRef arow[16];
  for (int i = 0; i < mr; i++) {
    LLVMValueRef row = fc_cg_smin(k, fc_cg_iadd(k, m0, c64(k, i)), c64(k, M - 1));
    LLVMValueRef off = fc_cg_imulc(k, row, K);
    arow[i] = LLVMBuildGEP2(bld, i8, k->in[0], &off, 1, "");
  }
  LLVMValueRef poff = fc_cg_imulc(k, qp, KG * nr * 4);
  LLVMValueRef panel = LLVMBuildGEP2(bld, i8, bp, &poff, 1, "");
  for (int i = 0; i < mr * nv; i++) LLVMBuildStore(bld, LLVMConstNull(t.vi), acc_at(k, &t, i));

  LLVMValueRef a32[16];
  FcLoop lk;
  LLVMValueRef g = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, K / kg), 1, "kg");
  LLVMValueRef koff = fc_cg_imulc(k, g, kg);
  LLVMTypeRef v2i8 = LLVMVectorType(i8, 2), v2i16 = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), 2);
  LLVMValueRef flip = widen ? fc_cg_splat_const(v2i8, LLVMConstInt(i8, 0x80, 0)) : LLVMConstInt(i32, 0x80808080u, 0);
  for (int i = 0; i < mr; i++) {
    a32[i] = LLVMBuildLoad2(bld, widen ? v2i8 : i32, LLVMBuildGEP2(bld, i8, arow[i], &koff, 1, ""), "");
    LLVMSetAlignment(a32[i], 1);
    if (q.flip) a32[i] = LLVMBuildXor(bld, a32[i], flip, "");
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
        LLVMValueRef byte = LLVMBuildLoad2(bld, i8, p, "");
        if (q.flip) byte = LLVMBuildXor(bld, byte, LLVMConstInt(i8, 0x80, 0), "");
        LLVMValueRef sh = LLVMConstInt(i32, (unsigned)(32 / kg * b), 0);
        a32[i] = LLVMBuildOr(bld, a32[i], LLVMBuildShl(bld, LLVMBuildZExt(bld, byte, i32, ""), sh, ""), "");
      }
    }
    LLVMValueRef off = c64(k, K / kg * nr * 4);
    tile_step(k, &t, a32, LLVMBuildGEP2(bld, i8, panel, &off, 1, ""));
  }

  /* The finished vectors: requantised (corrections and multipliers of the panel's columns) or as they are. */
  LLVMValueRef outv[64];
  for (int v = 0; v < nv; v++) {
    LLVMValueRef corr = NULL, mult = NULL;
    if (quant) {
      LLVMValueRef col = fc_cg_iadd(k, n0, c64(k, v * w));
      LLVMValueRef co = fc_cg_iadd(k, c64(k, bytes), fc_cg_imulc(k, col, 4));
      LLVMValueRef mo = fc_cg_iadd(k, co, c64(k, 4 * npad));
      corr = LLVMBuildLoad2(bld, t.vi, LLVMBuildGEP2(bld, i8, bp, &co, 1, ""), "");
      mult = LLVMBuildLoad2(bld, LLVMVectorType(f32, (unsigned)w), LLVMBuildGEP2(bld, i8, bp, &mo, 1, ""), "");
      LLVMSetAlignment(corr, 4);
      LLVMSetAlignment(mult, 4);
    }
    for (int i = 0; i < mr; i++) {
      LLVMValueRef a = LLVMBuildLoad2(bld, t.vi, acc_at(k, &t, i * nv + v), "");
      outv[i * nv + v] = quant ? fc_qp_finish(k, &q, a, corr, mult) : a;
    }
  }
  fc_qp_free(&q);

  /* Full tiles store their vectors; edge tiles go through a stack tile and copy the valid part. */
  LLVMValueRef rows = fc_cg_smin(k, c64(k, mr), fc_cg_isub(k, c64(k, M), m0));
  LLVMValueRef cols = fc_cg_smin(k, c64(k, nr), fc_cg_isub(k, c64(k, N), n0));
  fc_qp_store_tile(k, et, outv, mr, nv, w, ctile, c64(k, 0), m0, rows, N, n0, cols);
  fc_cg_loop_end(k, &lo);
  return FC_OK;
}
