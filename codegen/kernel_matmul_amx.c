/* kernel_matmul_amx.c — the integer GEMM of kernel_matmul_i8.c (u8 A [.., M, K] × constant 8-bit B [K, N],
 * plain i32, plain f32 with its fused epilogue, or quantised with the requantising store) on AMX tiles
 * (cg_amx.h), for targets with AMX-INT8.
 *
 * B has the one s8 packing every variant reads (fc_i8_pack_panels: unit panels of 16 columns with 4
 * consecutive k of a column adjacent, k padded to whole 64-byte chunks, then the per-column corrections and
 * multipliers), so a multiversioned artefact stores it once and 16 groups of a unit panel are one 1 KiB B
 * tile with 64-byte rows, read in place. A is read in place too (a row tile is 16 rows at stride K), except where a tile would reach
 * past a row's K or past row M: the last chunk of a row that is not a multiple of 64 bytes comes from a
 * zero-padded copy of the block's tails, and a last block of fewer than 32 rows from a zero-padded copy of
 * its rows (every tile is 16 x 64 bytes: cg_amx.h). One outer iteration is a block of 32 rows x 32 columns
 * (2 x 2 tiles), row blocks fastest so a thread's consecutive blocks reuse the B panels; a last column block
 * of one unit panel takes one column tile. The accumulators go through a 4 KiB stack tile into
 * fc_qp_finish and fc_qp_store_tile, as the vector kernel's do.
 * Applies where tdpbusd computes the spec's product directly: A u8 (an i8 A would need its own correction
 * here), K a multiple of 4 (a tile row of the last chunk reads whole groups, and A's last row ends the
 * buffer), and every weight minus its zero point in s8; other matmuls take kernel_matmul_i8.c.
 */
#include <stdlib.h>
#include <string.h>

#include "cg_amx.h"
#include "cg_requant.h"

enum { BLOCK = 2 * FC_AMX_ROWS };

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

bool fc_matmul_amx_applies(const FcKernel *k) {
  const FcOp *op = k->op;
  if (!fc_target_i8_amx(k->target) || !fc_matmul_i8_applies(k)) return false;
  const FcType *at = &op->operands[0].value->type, *bt = &op->operands[1].value->type;
  int64_t numel;
  if (at->dtype != FC_DT_U8 || bt->dims[0] % 4 || !fc_type_numel(at, &numel)) return false;
  return fc_target_i8_amx_worth(k->target, numel / bt->dims[0], bt->dims[0]);
}

typedef struct AmxMatmul {
  int64_t M, K, N, KG, chunks, npad, wbytes;
  bool quant;
  bool to_f32;     /* the plain form with an f32 result (kernel_matmul_i8.c) */
  FcCgEpilogue *e; /* its fused epilogue, or NULL */
  FcQuantProduct q;
  LLVMValueRef bp, ctile, edge, scratch;
  LLVMTypeRef et;
} AmxMatmul;

/* dst [32 rows][width bytes] = the first n bytes of `rows` rows of src (src_stride apart), zeros elsewhere: byte
 * loops LLVM vectorises (no memcpy/memset calls in a tile function: cg_amx.c). */
static void copy_padded(FcKernel *k, LLVMValueRef dst, int64_t width, LLVMValueRef src, int64_t src_stride, int rows,
                        int64_t n) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  FcLoop lr, lj;
  LLVMValueRef r = fc_cg_loop_begin(k, &lr, c64(k, 0), c64(k, BLOCK), 1, "cr");
  LLVMValueRef in = LLVMBuildICmp(b, LLVMIntSLT, r, c64(k, rows), "");
  LLVMValueRef srow = fc_cg_imulc(k, fc_cg_smin(k, r, c64(k, rows - 1)), src_stride);
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(k, 0), c64(k, width), 1, "cj");
  LLVMValueRef take = LLVMBuildAnd(b, in, LLVMBuildICmp(b, LLVMIntSLT, j, c64(k, n), ""), "");
  LLVMValueRef sj = fc_cg_iadd(k, srow, fc_cg_smin(k, j, c64(k, n - 1)));
  LLVMValueRef v = LLVMBuildLoad2(b, i8, LLVMBuildGEP2(b, i8, src, &sj, 1, ""), "");
  v = LLVMBuildSelect(b, take, v, LLVMConstInt(i8, 0, 0), "");
  LLVMValueRef dj = fc_cg_iadd(k, fc_cg_imulc(k, r, width), j);
  LLVMBuildStore(b, v, LLVMBuildGEP2(b, i8, dst, &dj, 1, ""));
  fc_cg_loop_end(k, &lj);
  fc_cg_loop_end(k, &lr);
}

/* One 32 x 32 block (or the static shape of a last one) at rows m0, columns n0: the tile product, then the
 * requantised (or plain) rows stored. */
static void block(FcKernel *k, const AmxMatmul *t, LLVMValueRef m0, LLVMValueRef n0, int rows, int nb) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef vi = LLVMVectorType(i32, 16), vf = LLVMVectorType(LLVMFloatTypeInContext(k->ctx), 16);
  FcAmxGemm g = {.dot = FC_AMX_BUSD, .na = rows > FC_AMX_ROWS ? 2 : 1, .nb = nb, .chunks = t->chunks, .c = t->ctile};
  LLVMValueRef a0 = LLVMBuildGEP2(b, i8, k->in[0], (LLVMValueRef[]){fc_cg_imulc(k, m0, t->K)}, 1, "");
  int64_t kp = t->chunks * FC_AMX_ROW_BYTES;
  if (rows < BLOCK) { /* the last rows: all of them from a zero-padded copy, rows kp bytes apart */
    copy_padded(k, t->scratch, kp, a0, t->K, rows, t->K);
    a0 = t->scratch;
    g.a.stride = kp;
  } else {
    g.a.stride = t->K;
    if (t->K % FC_AMX_ROW_BYTES) { /* the last chunk of each row from a zero-padded copy, rows 64 bytes apart */
      int64_t from = (t->chunks - 1) * FC_AMX_ROW_BYTES;
      copy_padded(k, t->scratch, FC_AMX_ROW_BYTES, LLVMBuildGEP2(b, i8, a0, (LLVMValueRef[]){c64(k, from)}, 1, ""), t->K,
                  BLOCK, t->K - from);
      for (int i = 0; i < g.na; i++)
        g.a_last[i] = LLVMBuildGEP2(b, i8, t->scratch, (LLVMValueRef[]){c64(k, i * FC_AMX_ROWS * FC_AMX_ROW_BYTES)}, 1, "");
      g.a_last_stride = FC_AMX_ROW_BYTES;
    }
  }
  g.a.chunk_step = FC_AMX_ROW_BYTES;
  for (int i = 0; i < g.na; i++)
    g.a.base[i] = LLVMBuildGEP2(b, i8, a0, (LLVMValueRef[]){c64(k, i * FC_AMX_ROWS * g.a.stride)}, 1, "");
  g.b.stride = FC_AMX_ROW_BYTES;
  g.b.chunk_step = FC_AMX_ROWS * FC_AMX_ROW_BYTES;
  for (int j = 0; j < nb; j++) { /* unit panel n0/16 + j */
    LLVMValueRef off = fc_cg_imulc(k, fc_cg_iadd(k, LLVMBuildSDiv(b, n0, c64(k, 16), ""), c64(k, j)), t->KG * 64);
    g.b.base[j] = LLVMBuildGEP2(b, i8, t->bp, &off, 1, "");
  }
  fc_amx_gemm(k, &g);

  LLVMValueRef outv[BLOCK * 2], accs[BLOCK * 2], corr[BLOCK * 2], mult[BLOCK * 2], vcorr = NULL, vmult = NULL;
  for (int v = 0; v < nb; v++) {
    if (t->quant) {
      LLVMValueRef co = fc_cg_iadd(k, c64(k, t->wbytes), fc_cg_imulc(k, fc_cg_iadd(k, n0, c64(k, 16 * v)), 4));
      LLVMValueRef mo = fc_cg_iadd(k, co, c64(k, 4 * t->npad));
      vcorr = LLVMBuildLoad2(b, vi, LLVMBuildGEP2(b, i8, t->bp, &co, 1, ""), "");
      vmult = LLVMBuildLoad2(b, vf, LLVMBuildGEP2(b, i8, t->bp, &mo, 1, ""), "");
      LLVMSetAlignment(vcorr, 4);
      LLVMSetAlignment(vmult, 4);
    }
    for (int i = 0; i < rows; i++) {
      int64_t off = ((int64_t)((i / FC_AMX_ROWS) * nb + v) * FC_AMX_ROWS + i % FC_AMX_ROWS) * FC_AMX_ROW_BYTES;
      LLVMValueRef p = LLVMBuildGEP2(b, i8, t->ctile, (LLVMValueRef[]){c64(k, off)}, 1, "");
      LLVMValueRef a = LLVMBuildLoad2(b, vi, p, "");
      LLVMSetAlignment(a, 64);
      accs[i * nb + v] = outv[i * nb + v] = a;
      corr[i * nb + v] = vcorr, mult[i * nb + v] = vmult;
    }
  }
  int per_row = t->quant ? fc_qp_finish_tile(k, &t->q, accs, rows, nb, corr, mult, outv) : nb;
  LLVMValueRef cols = fc_cg_smin(k, c64(k, 16 * nb), fc_cg_isub(k, c64(k, t->N), n0));
  if (t->to_f32) {
    for (int i = 0; i < rows * nb; i++) outv[i] = LLVMBuildSIToFP(b, outv[i], vf, "");
    fc_qp_store_tile_epilogue(k, t->e, outv, rows, nb, 16, t->edge, m0, c64(k, rows), t->N, n0, cols);
    return;
  }
  fc_qp_store_tile(k, t->et, outv, rows, per_row, 16 * nb / per_row, t->edge, c64(k, 0), m0, c64(k, rows), t->N, n0,
                   cols);
}

/* Branches to a block of `rows` rows when `last_rows` holds (the last row block, M % 32 rows), else to full
 * blocks, each with nb column tiles. */
static void rows_split(FcKernel *k, const AmxMatmul *t, LLVMValueRef last_row, LLVMValueRef m0, LLVMValueRef n0, int nb) {
  int tail = (int)(t->M % BLOCK);
  if (!tail) {
    block(k, t, m0, n0, BLOCK, nb);
    return;
  }
  LLVMBasicBlockRef part = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "amx_last_rows");
  LLVMBasicBlockRef full = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "amx_full_rows");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "amx_rows_done");
  LLVMBuildCondBr(k->b, last_row, part, full);
  LLVMPositionBuilderAtEnd(k->b, part);
  block(k, t, m0, n0, tail, nb);
  LLVMBuildBr(k->b, done);
  LLVMPositionBuilderAtEnd(k->b, full);
  block(k, t, m0, n0, BLOCK, nb);
  LLVMBuildBr(k->b, done);
  LLVMPositionBuilderAtEnd(k->b, done);
}

FcStatus fc_matmul_amx(FcKernel *k) {
  const FcOp *op = k->op;
  const FcType *at = &op->operands[0].value->type, *bt = &op->operands[1].value->type, *rt = &op->results[0].type;
  AmxMatmul t = {.K = bt->dims[0], .N = bt->dims[1]};
  int64_t numel;
  FC_ASSERT(fc_type_numel(rt, &numel));
  t.M = numel / t.N;
  t.quant = at->quant != NULL;
  if (t.quant) {
    FcStatus st = fc_qp_init(k, 1, t.K, t.N, &t.q);
    if (st != FC_OK) return st;
  } else {
    fc_i8_plain_weights(op, t.K, t.N, &t.q);
  }
  if (!t.q.w8 || t.q.flip) { /* outside what tdpbusd computes as is (see the top) */
    fc_qp_free(&t.q);
    return fc_matmul_i8(k);
  }
  t.KG = fc_i8_panel_groups(t.K);
  t.chunks = t.KG / 16;
  int64_t units = (t.N + 15) / 16, total;
  int8_t *pk = fc_i8_pack_panels(&t.q, t.quant, t.K, t.N, t.KG, &t.wbytes, &t.npad, &total);
  if (!pk) {
    fc_qp_free(&t.q);
    return fc_cg_error(k, FC_ERR_LIMIT, "packed weights are too large");
  }
  t.bp = fc_kernel_substitute_operand(
      k, 1, fc_cg_packed_weights_bytes(k, pk, (size_t)total, (size_t)t.wbytes, "packed_b_i8"));
  free(pk);
  int64_t rblocks = (t.M + BLOCK - 1) / BLOCK, cblocks = (t.N + BLOCK - 1) / BLOCK;
  fc_kernel_set_outer(k, rblocks * cblocks, 2.0 * BLOCK * BLOCK * (double)t.K);

  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx);
  FcDtype odt = t.quant ? t.q.out : rt->dtype;
  t.to_f32 = !t.quant && odt == FC_DT_F32;
  if (t.to_f32) {
    FcStatus st = fc_cg_epilogue_init(k, 1, &t.e);
    if (st != FC_OK) {
      fc_qp_free(&t.q);
      return st;
    }
  }
  t.et = odt == FC_DT_I32 ? i32 : odt == FC_DT_F32 ? LLVMFloatTypeInContext(k->ctx) : LLVMInt8TypeInContext(k->ctx);
  t.ctile = fc_cg_tile_new(k, i32, 4 * FC_AMX_ROWS * 16, "amx_c");
  t.edge = fc_cg_tile_new(k, t.et, BLOCK * BLOCK, "edge");
  if (t.M % BLOCK || t.K % FC_AMX_ROW_BYTES)
    t.scratch = fc_kernel_scratch(k, BLOCK * (t.M % BLOCK ? t.chunks * FC_AMX_ROW_BYTES : FC_AMX_ROW_BYTES));

  LLVMBuilderRef b = k->b;
  FcLoop lo;
  LLVMValueRef it = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "blk");
  LLVMValueRef cb = LLVMBuildSDiv(b, it, c64(k, rblocks), ""), rb = LLVMBuildSRem(b, it, c64(k, rblocks), "");
  LLVMValueRef m0 = fc_cg_imulc(k, rb, BLOCK), n0 = fc_cg_imulc(k, cb, BLOCK);
  LLVMValueRef last_row = LLVMBuildICmp(b, LLVMIntEQ, rb, c64(k, rblocks - 1), "");
  if (units % 2) { /* the last column block has one unit panel */
    LLVMBasicBlockRef one = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "amx_one_col");
    LLVMBasicBlockRef two = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "amx_two_cols");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "amx_cols_done");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, cb, c64(k, cblocks - 1), ""), one, two);
    LLVMPositionBuilderAtEnd(b, one);
    rows_split(k, &t, last_row, m0, n0, 1);
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, two);
    rows_split(k, &t, last_row, m0, n0, 2);
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
  } else {
    rows_split(k, &t, last_row, m0, n0, 2);
  }
  fc_cg_loop_end(k, &lo);
  fc_qp_free(&t.q);
  return FC_OK;
}
