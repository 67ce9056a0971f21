/* kernel_conv_i8.c — the quantised flow.conv of qspec §2 (1-D and 2-D, NCHW, dense or grouped with at least a
 * few output channels per group) as an integer GEMM over an im2col block, requantised in the store.
 *
 * Per group the conv is Y[Mg, P] = W'[Mg, K] · Col[K, P] (K = Cg·KH·KW, P = OH·OW output pixels), with the
 * zero points and bias folded into one i32 correction per channel (cg_requant.h). One outer iteration is
 * (image, group, block of PB pixels); it builds the block's Col in its scratch in two steps:
 *   1. rows: Col[k][p] for every k = (c, kh, kw) as plain byte rows, contiguous over the block's pixels: for
 *      each output row the block touches, the taps outside the input read zx (the real 0: that keeps the
 *      folded correction exact at the borders) and the rest copy x (xor 0x80 for i8 x), a loop LLVM
 *      vectorises (strided for stride 2);
 *   2. interleave: 4 rows at a time become [k/4][p][4] (2 rows as u16 pairs for WIDEN and WIDEN16), so the
 *      consecutive k of one pixel are adjacent, by vector shuffles.
 * A pointwise conv (1x1, stride 1, no padding) skips step 1 for full blocks: its rows are x's channel planes.
 * A conv of small K (the stems: K <= 256) with output rows of 16 pixels or more skips both steps: its blocks
 * are whole output rows, built in one pass from phase planes (build_cols_direct).
 * The register tile is mr output channels × nv vectors of pixels: each weight group of 4 bytes (one channel,
 * 4 k) is broadcast and meets nv vectors of Col with the target's dot (vpdpbusd; vpmaddubsw + vpmaddwd where
 * no weight pair can saturate it, given the activation range) — the same steps as kernel_matmul_i8.c with the
 * broadcast and the vector operands swapped.
 * The weights (s8 after the zero points) are packed at compile time in ONE layout that every CPU variant
 * reads, so a multiversioned artefact stores them once (content-hashed blobs, cg_module.c): per group, tiles
 * of 16 output channels, K in chunks of 64 bytes (16 quads), each chunk 16 rows (channels) × 64 bytes: byte
 * ((((g·MT + m/16)·NH + q/16)·16 + m%16)·64 + (q%16)·4 + k%4 holds W'[g][m][k] (q = k/4, MT = ceil(Mg/16),
 * NH = ceil(ceil(K/4)/16), zeros for m >= Mg and k >= K), followed in the same constant by the channels'
 * corrections (i32 × M) and multipliers (f32 × M). A register tile of mr (a divisor of 16) channels is rows
 * m%16 .. +mr-1 of one 16-channel tile, 64 bytes apart; the k loop runs over the chunks and the real quads of
 * each (not the padding of the last), so its addresses are increments.
 * The dual kernel (AVX2 and AVX-512 without VNNI, where vpmaddubsw could saturate on activations the type
 * admits but not on 7-bit ones: fc_qp_narrow_at_run_time). PyTorch's x86 qconfig quantises activations to 7
 * bits for this very reason, but values beyond the calibrated range still reach 128..255 here and there, so
 * the choice is made at run time, exactly: each block's byte rows are tested by chunks of 64 k (the chunked
 * Col of cg_conv_i8.h): a block with no byte above 0x7f interleaves plain quads and runs vpmaddubsw in the
 * MADDUBS order; one with such bytes lays out each chunk for its own dot and runs WIDEN's order (channel
 * tiles widened once) with a k loop that takes each chunk with its dot, into the same accumulators. The
 * pointwise and direct builds, which have a MADDUBS and a WIDEN variant of the whole kernel on the same
 * blocks (WIDEN's take MADDUBS's pixels) in the same scratch, mark a block's wide pixels (a byte above 0x7f
 * in their column) instead: the pointwise interleave as it goes, the direct build from its Col where the
 * block's input rows hold such a byte (fc_conv_i8_block_narrow); where they are at most 1/32 of the block,
 * it runs on MADDUBS and recomputes those (kernel_conv_i8_fixup.c), else its Col is built again for WIDEN.
 * An image's few outliers past the calibrated range thus cost a stem their pixels' recomputation, not the
 * 16-bit path for its whole block of rows. Wherever vpmaddubsw runs, the quads whose
 * weights allow it are taken two at a time, their i16 lanes added before vpmaddwd (cg_quad_pairs.c: a byte
 * after the packing gives the chunk's fixed pattern, per 16 channels and chunk of 64 k).
 * WIDEN (the exact path where vpmaddubsw could saturate: u8 activations 0..255 with full-range s8 weights,
 * the common case on AVX2 and AVX-512 without VNNI): Col is interleaved as u16 pairs (2 k of a pixel
 * zero-extended, 4 bytes), and each channel tile's weights are sign-extended from the s8 packing ONCE per
 * block into the task's scratch (widen_tile: mr rows of NH·64 i16 in k order, mr·NH·128 bytes: 9 KiB for
 * K = 1152 on 4 channels, 36 KiB at ResNet's largest K = 4608, so it stays in L1/L2). The inner loop is then
 * that of stored i16 weights: per pair of k one broadcast i16 pair per channel and one vpmaddwd per Col
 * vector, on the full mr (u8·s8 products fit i16, their pair sums i32: exact). Its loop order is block ->
 * channel tile (widened) -> pixel panels, so widening costs about 2/PB of the tile's work (and its Col
 * gets twice the L2 budget for more pixels a block); the other dots keep panels -> channel tiles (a panel's
 * Col stays in L1 while the weights stream).
 * WIDEN16, the one case outside s8 (an asymmetric weight zero point leaves w - zw in [-255, 255], rare): the
 * weights are packed as i16 pairs by tiles of mr channels ([G][ceil(Mg/mr)][KG2][mr][4] bytes) and Col as
 * u16 pairs of 2 k, one vpmaddwd per vector; that packing depends on the tile, so it is not shared.
 * A finished tile is requantised per channel (one multiplier per output row) and stored as whole vectors of
 * output pixels; the last channel tile and pixel panel go through a stack tile.
 * AMX (targets with AMX-INT8, where the padding to whole tiles is cheap: fc_target_i8_amx_worth): the s8
 * packing's 16-channel × 64-byte chunks are tdpbsud's A tiles as they are, and the block's Col (k padded to
 * whole chunks, the rows past K zx) gives B tiles of 16 quads × 16 pixels at a row stride of PB·4 bytes; each
 * block runs 32-pixel panels against pairs of channel tiles on 2 × 2 tiles (cg_amx.h; an odd last tile alone)
 * and requantises the stored accumulators like the vector tiles. Its blocks are far larger
 * (fc_target_i8_amx_col_bytes): at tile speed the im2col's per-row work is what costs. A conv that is one
 * block in all is split in two outer iterations by channel tiles, so 2 threads share it (see `splits`).
 * Convs whose output rows hold 32 pixels or more and whose kernel rows 3 taps or more skip the im2col on AMX
 * altogether (kernel_conv_i8_amx_taps.c: B tiles gathered by vpermb from the padded input rows).
 */
#include <stdlib.h>
#include <string.h>

#include "cg_amx.h"
#include "cg_conv_i8.h"

enum {
  DIRECT_MAX_K = 256, /* the direct im2col's bound on K (build_cols_direct: stems of up to 3 channels of 9x9 taps, say) */
  MIN_OUTER = 16,     /* pixel blocks a pointwise conv's images are cut into at least, where they allow */
  MIN_BLOCK_TILES = 4, /* ... but never blocks narrower than this many register tiles of pixels */
};

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

bool fc_conv2_of(const FcOp *op, FcConv2 *c) {
  const FcType *x = &op->operands[0].value->type, *w = &op->operands[1].value->type, *y = &op->results[0].type;
  bool blocked = op->kind == FC_OP_CONV_BLOCKED;
  int n = w->rank - 2;
  const int64_t *s, *d, *p;
  if (n < 1 || n > 2 || (blocked ? n != 2 || y->rank != 5 || (x->rank != 4 && x->rank != 5)
                                 : x->rank != w->rank || y->rank != x->rank) ||
      fc_op_attr_ints(op, FC_ATTR_STRIDES, &s) != n || fc_op_attr_ints(op, FC_ATTR_DILATIONS, &d) != n ||
      fc_op_attr_ints(op, FC_ATTR_PADS, &p) != 2 * n)
    return false;
  bool two = n == 2;
  *c = (FcConv2){.N = x->dims[0], .C = x->dims[1], .H = two ? x->dims[2] : 1, .W = x->dims[n + 1],
               .M = w->dims[0], .Cg = w->dims[1], .KH = two ? w->dims[2] : 1, .KW = w->dims[n + 1],
               .OH = two ? y->dims[2] : 1, .OW = y->dims[n + 1], .G = fc_op_attr_int(op, FC_ATTR_GROUP, 1),
               .sh = two ? s[0] : 1, .sw = s[n - 1], .dh = two ? d[0] : 1, .dw = d[n - 1],
               .ph = two ? p[0] : 0, .pw = p[n - 1]};
  /* conv_blocked: [N, C/B, H, W, B] (or a plain x), the checked dims' products stay tensor sizes */
  if (blocked && x->rank == 5) c->C = x->dims[1] * x->dims[4];
  if (blocked && y->dims[1] * y->dims[4] != c->M) return false;
  if (c->G < 1 || c->C != c->G * c->Cg || c->M % c->G) return false;
  c->Mg = c->M / c->G;
  /* every factor is a dim of a checked tensor, and K and P are below a tensor's element count */
  c->K = c->Cg * c->KH * c->KW;
  c->P = c->OH * c->OW;
  return c->N > 0 && c->K > 0 && c->P > 0 && c->M > 0;
}

bool fc_conv_i8_applies(const FcKernel *k) {
  const FcOp *op = k->op;
  FcConv2 c;
  if (!op->operands[0].value->type.quant || !fc_qp_applies(op, 0, NULL, 0) || !fc_conv2_of(op, &c)) return false;
  /* a group of fewer channels than half a register tile (depthwise above all) wastes most of the tile: the
   * direct loop nest (kernel_nn.c) vectorises over pixels instead */
  return fc_target_i8_conv_tiles(k->target, op->results[0].type.rank - 2, c.Mg);
}

/* Valid range [lo, hi) of j in [0, count) with 0 <= j*s + off < limit. */
static void stride_range(int64_t count, int64_t s, int64_t off, int64_t limit, int64_t *lo, int64_t *hi) {
  int64_t l = off >= 0 ? 0 : (-off + s - 1) / s, top = limit - 1 - off;
  int64_t h = top < 0 ? 0 : top / s + 1;
  *lo = l > count ? count : l;
  *hi = h > count ? count : h;
  if (*hi < *lo) *hi = *lo;
}

/* dst[j .. j + n) = src[j .. j + n) (xor 0x80 where flip: an i8 x): one unaligned vector. */
static void copy_vec(FcKernel *k, bool flip, LLVMValueRef src, LLVMValueRef dst, LLVMValueRef j, unsigned n) {
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), v16 = LLVMVectorType(i8, n);
  LLVMValueRef v = LLVMBuildLoad2(k->b, v16, LLVMBuildGEP2(k->b, i8, src, &j, 1, ""), "");
  LLVMSetAlignment(v, 1);
  if (flip) v = LLVMBuildXor(k->b, v, fc_cg_splat_const(v16, LLVMConstInt(i8, 0x80, 0)), "");
  LLVMValueRef st = LLVMBuildStore(k->b, v, LLVMBuildGEP2(k->b, i8, dst, &j, 1, ""));
  LLVMSetAlignment(st, 1);
}

/* dst[0 .. len) = src[0 .. len) for a length known here, by vectors: whole 16-byte ones and, for the rest,
 * one more ending at len (overlapping the last, rewriting the same bytes) or two overlapping 8- or 4-byte
 * ones; bytes below 4. With `spill`, the last vector may instead run up to 15 bytes past len (on both
 * sides: the caller allows it). */
static void copy_fixed(FcKernel *k, bool flip, LLVMValueRef src, LLVMValueRef dst, int64_t len, bool spill) {
  int64_t j = 0;
  for (; j + 16 <= len; j += 16) copy_vec(k, flip, src, dst, c64(k, j), 16);
  if (j == len) return;
  if (spill) {
    copy_vec(k, flip, src, dst, c64(k, j), 16);
  } else if (len >= 16) {
    copy_vec(k, flip, src, dst, c64(k, len - 16), 16);
  } else if (len >= 4) {
    unsigned n = len >= 8 ? 8 : 4;
    copy_vec(k, flip, src, dst, c64(k, 0), n);
    copy_vec(k, flip, src, dst, c64(k, len - n), n);
  } else {
    for (; j < len; j++) copy_vec(k, flip, src, dst, c64(k, j), 1);
  }
}

void fc_conv_i8_copy_bytes(FcKernel *k, bool flip, LLVMValueRef src, LLVMValueRef dst, int64_t len) {
  if (len < 64) {
    copy_fixed(k, flip, src, dst, len, false);
    return;
  }
  FcLoop l;
  LLVMValueRef j = fc_cg_loop_begin(k, &l, c64(k, 0), c64(k, len - 15), 16, "copy16");
  copy_vec(k, flip, src, dst, j, 16);
  fc_cg_loop_end(k, &l);
  copy_vec(k, flip, src, dst, c64(k, len - 16), 16);
}

/* Whether step 1 builds a whole image's rows from padded planes (build_rows_padded): stride 1 along W, one
 * block per image. */
static bool rows_from_padded(const FcConvI8 *t) { return t->c.sw == 1 && t->PB >= t->c.P; }

/* The padded planes' rows and columns: exactly the window the taps read (stride 1 along W). */
static int64_t padded_h(const FcConv2 *c) { return (c->OH - 1) * c->sh + (c->KH - 1) * c->dh + 1; }
static int64_t padded_w(const FcConv2 *c) { return c->OW + (c->KW - 1) * c->dw; }

/* dst[at .. at + 15] = bytes first, first + 2, .. first + 30 of src + from (one 32-byte load and a shuffle;
 * i8 x flipped): 16 outputs of a stride-2 row. */
static void copy_every_other(FcKernel *k, bool flip, LLVMValueRef src, LLVMValueRef from, int first, LLVMValueRef dst,
                             LLVMValueRef at) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), v32 = LLVMVectorType(i8, 32);
  LLVMValueRef lanes[16];
  for (int l = 0; l < 16; l++) lanes[l] = LLVMConstInt(LLVMInt32TypeInContext(k->ctx), (unsigned)(2 * l + first), 0);
  LLVMValueRef w = LLVMBuildLoad2(b, v32, LLVMBuildGEP2(b, i8, src, &from, 1, ""), "");
  LLVMSetAlignment(w, 1);
  LLVMValueRef v = LLVMBuildShuffleVector(b, w, LLVMGetUndef(v32), LLVMConstVector(lanes, 16), "");
  if (flip) v = LLVMBuildXor(b, v, fc_cg_splat_const(LLVMTypeOf(v), LLVMConstInt(i8, 0x80, 0)), "");
  LLVMValueRef st = LLVMBuildStore(b, v, LLVMBuildGEP2(b, i8, dst, &at, 1, ""));
  LLVMSetAlignment(st, 1);
}

/* Step 1 for a whole image (small maps: 7x7 to ~20x20, where a row is a few bytes and the bounds logic of
 * build_rows would cost more than the copies). The group's Cg planes first go to `pad` with zx around
 * them (Hp x Wp bytes each, i8 x flipped here); then row k = (c, kh, kw) is OH copies of OW bytes at fixed
 * offsets, by 16-byte vectors that may run past the output row: the spill lands in the next output row,
 * written after it, or in the pixels past P, filled with zx after the copies, or (the last row of all) in
 * the slack after the rows. No bound is tested per row. */
static void build_rows_padded(FcKernel *k, const FcConvI8 *t, LLVMValueRef rows, LLVMValueRef pad, LLVMValueRef xg) {
  const FcConv2 *c = &t->c;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef zx = fc_qp_zx_byte(k, &t->q, false);
  int64_t Hp = padded_h(c), Wp = padded_w(c);
  int64_t s0 = c->pw < Wp ? c->pw : Wp, s1 = c->pw + c->W < Wp ? c->pw + c->W : Wp; /* columns with x */
  FcLoop lc, lr;
  LLVMValueRef ci = fc_cg_loop_begin(k, &lc, c64(k, 0), c64(k, c->Cg), 1, "pc");
  LLVMValueRef r = fc_cg_loop_begin(k, &lr, c64(k, 0), c64(k, Hp), 1, "pr");
  LLVMValueRef at = fc_cg_iadd(k, fc_cg_imulc(k, ci, Hp * Wp), fc_cg_imulc(k, r, Wp));
  LLVMValueRef drow = LLVMBuildGEP2(b, i8, pad, &at, 1, "");
  fc_cg_fill_bytes(k, drow, c64(k, 0), c64(k, Wp), zx);
  LLVMValueRef ih = fc_cg_iadd(k, r, c64(k, -c->ph));
  if (s1 > s0) {
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntULT, ih, c64(k, c->H), ""));
    LLVMValueRef so = fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, ci, c->H), ih), c->W), c64(k, s0 - c->pw));
    LLVMValueRef d0 = c64(k, s0);
    copy_fixed(k, t->q.flip, LLVMBuildGEP2(b, i8, xg, &so, 1, ""), LLVMBuildGEP2(b, i8, drow, &d0, 1, ""), s1 - s0,
               false);
    fc_cg_if_end(k, cont);
  }
  fc_cg_loop_end(k, &lr);
  fc_cg_loop_end(k, &lc);

  FcLoop lk, lh, lw, lo;
  ci = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, c->Cg), 1, "c");
  LLVMValueRef kh = fc_cg_loop_begin(k, &lh, c64(k, 0), c64(k, c->KH), 1, "kh");
  LLVMValueRef kw = fc_cg_loop_begin(k, &lw, c64(k, 0), c64(k, c->KW), 1, "kw");
  LLVMValueRef kk = fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, ci, c->KH), kh), c->KW), kw);
  LLVMValueRef row = fc_cg_imulc(k, kk, t->PB);
  row = LLVMBuildGEP2(b, i8, rows, &row, 1, "");
  LLVMValueRef src0 = fc_cg_iadd(k, fc_cg_iadd(k, fc_cg_imulc(k, ci, Hp * Wp), fc_cg_imulc(k, kh, c->dh * Wp)),
                                 fc_cg_imulc(k, kw, c->dw));
  src0 = LLVMBuildGEP2(b, i8, pad, &src0, 1, "");
  LLVMValueRef oh = fc_cg_loop_begin(k, &lo, c64(k, 0), c64(k, c->OH), 1, "oh");
  LLVMValueRef so = fc_cg_imulc(k, oh, c->sh * Wp), dof = fc_cg_imulc(k, oh, c->OW);
  copy_fixed(k, false, LLVMBuildGEP2(b, i8, src0, &so, 1, ""), LLVMBuildGEP2(b, i8, row, &dof, 1, ""), c->OW, true);
  fc_cg_loop_end(k, &lo);
  fc_cg_fill_bytes(k, row, c64(k, c->P), c64(k, t->PB), zx);
  fc_cg_loop_end(k, &lw);
  fc_cg_loop_end(k, &lh);
  fc_cg_loop_end(k, &lk);
}

/* dst[j] = src[j·sw] (xor 0x80 where flip: an i8 x) for j in [lo, hi): one run of a tap's row (build_rows) or
 * a phase row (build_phases), every read inside [src + lo·sw, src + (hi - 1)·sw]. */
static void copy_run(FcKernel *k, const FcConvI8 *t, LLVMValueRef src, LLVMValueRef dst, LLVMValueRef lo,
                     LLVMValueRef hi) {
  const FcConv2 *c = &t->c;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef len = fc_cg_isub(k, hi, lo);
  LLVMValueRef lo_scalar = lo;
  if (c->sw == 1) {
    /* Runs of 16 bytes or more (a row of a 56-wide map): 16-byte copies, the last one overlapping the one
     * before it (it rewrites the same bytes) instead of a scalar tail. Runs of 4 to 15 bytes (the rows of
     * 7- and 14-wide maps, which a batch repeats for every tap) are two overlapping copies of 8 or 4 bytes;
     * only shorter ones take the byte loop. */
    LLVMValueRef long_run = LLVMBuildICmp(b, LLVMIntSGE, len, c64(k, 16), "");
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, long_run);
    FcLoop lv;
    LLVMValueRef j = fc_cg_loop_begin(k, &lv, lo, fc_cg_isub(k, hi, c64(k, 15)), 16, "ow16");
    copy_vec(k, t->q.flip, src, dst, j, 16);
    fc_cg_loop_end(k, &lv);
    copy_vec(k, t->q.flip, src, dst, fc_cg_isub(k, hi, c64(k, 16)), 16);
    fc_cg_if_end(k, cont);
    for (unsigned n = 8; n >= 4; n /= 2) {
      LLVMValueRef fits = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSGE, len, c64(k, n), ""),
                                       LLVMBuildICmp(b, LLVMIntSLT, len, c64(k, 2 * n), ""), "");
      cont = fc_cg_if_begin(k, fits);
      copy_vec(k, t->q.flip, src, dst, lo, n);
      copy_vec(k, t->q.flip, src, dst, fc_cg_isub(k, hi, c64(k, n)), n);
      fc_cg_if_end(k, cont);
    }
    lo_scalar = fc_cg_select(k, LLVMBuildICmp(b, LLVMIntSGE, len, c64(k, 4), ""), hi, lo);
  } else if (c->sw == 2) {
    /* Stride 2 (the stems of ResNet and MobileNet: a 224-wide image, every tap): 16 outputs from one
     * 32-byte load, its even bytes kept. Only while column j + 16 is inside too, so the load's last byte
     * (input 2j + 31, one short of j + 16's) stays inside the row; the rest takes the byte loop. */
    LLVMValueRef end = fc_cg_isub(k, hi, c64(k, 16));
    FcLoop lv;
    LLVMValueRef j = fc_cg_loop_begin(k, &lv, lo, end, 16, "ow2x16");
    copy_every_other(k, t->q.flip, src, fc_cg_imulc(k, j, 2), 0, dst, j);
    fc_cg_loop_end(k, &lv);
    LLVMValueRef done = fc_cg_iadd(k, lo, LLVMBuildAnd(b, fc_cg_iadd(k, fc_cg_isub(k, end, lo), c64(k, 15)), c64(k, ~(int64_t)15), ""));
    lo_scalar = fc_cg_select(k, LLVMBuildICmp(b, LLVMIntSGT, end, lo, ""), done, lo);
    /* The last 16 outputs of a run of 17 or more: one more load, ending at the run's last input (2hi - 2)
     * and starting one past an input of the run (2hi - 33 >= 2lo + 1), its odd bytes kept; it rewrites
     * the loop's last bytes with the same values instead of up to 16 byte copies. */
    LLVMValueRef tail = LLVMBuildICmp(b, LLVMIntSGE, len, c64(k, 17), "");
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, tail);
    LLVMValueRef jt = fc_cg_isub(k, hi, c64(k, 16));
    copy_every_other(k, t->q.flip, src, fc_cg_isub(k, fc_cg_imulc(k, jt, 2), c64(k, 1)), 1, dst, jt);
    fc_cg_if_end(k, cont);
    lo_scalar = fc_cg_select(k, tail, hi, lo_scalar);
  }
  FcLoop lj;
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, lo_scalar, hi, 1, "ow");
  LLVMValueRef sj = fc_cg_imulc(k, j, c->sw);
  LLVMValueRef v = LLVMBuildLoad2(b, i8, LLVMBuildGEP2(b, i8, src, &sj, 1, ""), "");
  if (t->q.flip) v = LLVMBuildXor(b, v, LLVMConstInt(i8, 0x80, 0), "");
  LLVMBuildStore(b, v, LLVMBuildGEP2(b, i8, dst, &j, 1, ""));
  fc_cg_loop_end(k, &lj);
}

/* Step 1 for the block [p0, p0 + npix) of image n, group grp: rows[k][0 .. PB) (pixels past npix: zx). */
static void build_rows(FcKernel *k, const FcConvI8 *t, LLVMValueRef rows, LLVMValueRef xg, LLVMValueRef p0,
                       LLVMValueRef npix) {
  const FcConv2 *c = &t->c;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef zx = fc_qp_zx_byte(k, &t->q, false);
  LLVMValueRef oh0 = LLVMBuildSDiv(b, p0, c64(k, c->OW), "");
  LLVMValueRef oh1 = LLVMBuildSDiv(b, fc_cg_iadd(k, p0, fc_cg_isub(k, npix, c64(k, 1))), c64(k, c->OW), "");
  FcLoop lc, lh, lw, lo;
  LLVMValueRef ci = fc_cg_loop_begin(k, &lc, c64(k, 0), c64(k, c->Cg), 1, "c");
  LLVMValueRef kh = fc_cg_loop_begin(k, &lh, c64(k, 0), c64(k, c->KH), 1, "kh");
  LLVMValueRef kw = fc_cg_loop_begin(k, &lw, c64(k, 0), c64(k, c->KW), 1, "kw");
  LLVMValueRef kk = fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, ci, c->KH), kh), c->KW), kw);
  LLVMValueRef row = fc_cg_imulc(k, kk, t->PB);
  row = LLVMBuildGEP2(b, i8, rows, &row, 1, "");
  fc_cg_fill_bytes(k, row, npix, c64(k, t->PB), zx);
  LLVMValueRef lo_kw = fc_cg_load(k, FC_DT_I64, t->tab_lo, kw), hi_kw = fc_cg_load(k, FC_DT_I64, t->tab_hi, kw);
  LLVMValueRef woff = fc_cg_iadd(k, fc_cg_imulc(k, kw, c->dw), c64(k, -c->pw));
  LLVMValueRef oh = fc_cg_loop_begin(k, &lo, oh0, fc_cg_iadd(k, oh1, c64(k, 1)), 1, "oh");
  /* this output row's part of the block: columns [a, e), at dst[oh·OW + ow - p0] */
  LLVMValueRef rstart = fc_cg_isub(k, fc_cg_imulc(k, oh, c->OW), p0);
  LLVMValueRef a = fc_cg_smax(k, c64(k, 0), LLVMBuildNeg(b, rstart, ""));
  LLVMValueRef e = fc_cg_smin(k, c64(k, c->OW), fc_cg_isub(k, npix, rstart));
  LLVMValueRef dst = LLVMBuildGEP2(b, i8, row, &rstart, 1, "");
  LLVMValueRef ih = fc_cg_iadd(k, fc_cg_iadd(k, fc_cg_imulc(k, oh, c->sh), c64(k, -c->ph)), fc_cg_imulc(k, kh, c->dh));
  LLVMValueRef inside = LLVMBuildICmp(b, LLVMIntULT, ih, c64(k, c->H), "");
  LLVMValueRef lo_ = fc_cg_select(k, inside, fc_cg_smin(k, fc_cg_smax(k, lo_kw, a), e), e);
  LLVMValueRef hi_ = fc_cg_select(k, inside, fc_cg_smax(k, fc_cg_smin(k, hi_kw, e), lo_), e);
  fc_cg_fill_bytes(k, dst, a, lo_, zx);
  fc_cg_fill_bytes(k, dst, hi_, e, zx);
  LLVMValueRef src = fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, ci, c->H), fc_cg_smin(k, ih, c64(k, c->H - 1))), c->W), woff);
  src = LLVMBuildGEP2(b, i8, xg, &src, 1, "");
  copy_run(k, t, src, dst, lo_, hi_);
  fc_cg_loop_end(k, &lo);
  fc_cg_loop_end(k, &lw);
  fc_cg_loop_end(k, &lh);
  fc_cg_loop_end(k, &lc);
}

static void interleave_from(FcKernel *k, const FcConvI8 *t, LLVMValueRef rows, int64_t stride, bool from_x,
                            LLVMValueRef cols);

/* The 64 bytes of 16 pixels' group from the kg vectors r[] of 16 pixels (one per k of the group): 4 bytes
 * of a quad, or (WIDEN, WIDEN16) 2 bytes of a pair each zero-extended to u16. */
static LLVMValueRef interleave_vecs(FcKernel *k, const FcConvI8 *t, const LLVMValueRef *r) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef v32 = LLVMVectorType(i8, 32);
  LLVMValueRef m32[32], m64[64];
  for (int i = 0; i < 32; i++) m32[i] = LLVMConstInt(i32, (unsigned)i, 0);
  LLVMValueRef out;
  if (t->kg == 4) {
    LLVMValueRef lo = LLVMBuildShuffleVector(b, r[0], r[1], LLVMConstVector(m32, 32), "");
    LLVMValueRef hi = LLVMBuildShuffleVector(b, r[2], r[3], LLVMConstVector(m32, 32), "");
    for (int j = 0; j < 16; j++)
      for (int s = 0; s < 4; s++) m64[4 * j + s] = LLVMConstInt(i32, (unsigned)(16 * s + j), 0);
    out = LLVMBuildShuffleVector(b, lo, hi, LLVMConstVector(m64, 64), "");
  } else {
    /* u16 pairs: [r0[j], 0, r1[j], 0] per pixel */
    LLVMValueRef two = LLVMBuildShuffleVector(b, r[0], r[1], LLVMConstVector(m32, 32), "");
    for (int j = 0; j < 16; j++) {
      m64[4 * j] = LLVMConstInt(i32, (unsigned)j, 0);
      m64[4 * j + 1] = m64[4 * j + 3] = LLVMConstInt(i32, 32, 0);
      m64[4 * j + 2] = LLVMConstInt(i32, (unsigned)(16 + j), 0);
    }
    out = LLVMBuildShuffleVector(b, two, LLVMConstNull(v32), LLVMConstVector(m64, 64), "");
  }
  return out;
}

/* Step 2: cols[g][p][4 bytes] from rows (kg rows per group; 16 pixels per step): 4 bytes of a quad, or
 * (WIDEN, WIDEN16) 2 bytes of a pair each zero-extended to u16. */
static void interleave(FcKernel *k, const FcConvI8 *t, LLVMValueRef rows, LLVMValueRef cols) {
  interleave_from(k, t, rows, t->PB, false, cols);
}

/* Step 2 of a chunked Col (cg_conv_i8.h): per chunk of 64 rows, whether its bytes are all below 0x80
 * (flags[h], and flags[NH] whether any chunk is not); then, where one is not, each chunk's 16 quads or 32
 * u16 pairs into its slot, else the plain quads of every row (the kernel's fast path). */
static void interleave_by_chunks(FcKernel *k, const FcConvI8 *t, LLVMValueRef rows, LLVMValueRef cols) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i1 = LLVMInt1TypeInContext(k->ctx);
  FcConvI8 quads = *t, pairs = *t, all = *t;
  quads.kg = all.kg = 4;
  quads.KG = 16;
  all.KG = (t->c.K + 3) / 4;
  pairs.kg = 2;
  pairs.KG = 32;
  LLVMValueRef any_wide = fc_cg_entry_alloca(k, i1, "any_wide");
  LLVMBuildStore(b, LLVMConstInt(i1, 0, 0), any_wide);
  FcLoop lh;
  LLVMValueRef h = fc_cg_loop_begin(k, &lh, c64(k, 0), c64(k, t->NH), 1, "chunk_check");
  LLVMValueRef ro = fc_cg_imulc(k, h, 64 * t->PB);
  LLVMValueRef narrow = fc_i8_runs_below_0x80(k, LLVMBuildGEP2(b, i8, rows, &ro, 1, ""), c64(k, 1), 0, c64(k, 64 * t->PB));
  LLVMBuildStore(b, LLVMBuildZExt(b, narrow, i8, ""), LLVMBuildGEP2(b, i8, t->flags, &h, 1, ""));
  LLVMBuildStore(b, LLVMBuildOr(b, LLVMBuildLoad2(b, i1, any_wide, ""), LLVMBuildNot(b, narrow, ""), ""), any_wide);
  fc_cg_loop_end(k, &lh);
  LLVMValueRef mixed = LLVMBuildLoad2(b, i1, any_wide, ""), last = c64(k, t->NH);
  LLVMBuildStore(b, LLVMBuildZExt(b, mixed, i8, ""), LLVMBuildGEP2(b, i8, t->flags, &last, 1, ""));
  LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildNot(b, mixed, ""));
  interleave(k, &all, rows, cols);
  fc_cg_if_end(k, cont);
  cont = fc_cg_if_begin(k, mixed);
  h = fc_cg_loop_begin(k, &lh, c64(k, 0), c64(k, t->NH), 1, "chunk");
  ro = fc_cg_imulc(k, h, 64 * t->PB);
  LLVMValueRef co = fc_cg_imulc(k, h, 128 * t->PB);
  LLVMValueRef crows = LLVMBuildGEP2(b, i8, rows, &ro, 1, ""), ccols = LLVMBuildGEP2(b, i8, cols, &co, 1, "");
  narrow = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildLoad2(b, i8, LLVMBuildGEP2(b, i8, t->flags, &h, 1, ""), ""),
                         LLVMConstInt(i8, 0, 0), "");
  LLVMBasicBlockRef in = fc_cg_if_begin(k, narrow);
  interleave(k, &quads, crows, ccols);
  fc_cg_if_end(k, in);
  in = fc_cg_if_begin(k, LLVMBuildNot(b, narrow, ""));
  interleave(k, &pairs, crows, ccols);
  fc_cg_if_end(k, in);
  fc_cg_loop_end(k, &lh);
  fc_cg_if_end(k, cont);
}

/* Marks [first, first + count·n) of the block's pixels by vectors of n (16 or 32) pixels: the OR of their K
 * byte rows, whose sign bits (vpmovmskb) are stored as n / 16 of the i16 masks at t->wide_cols (n bits at the
 * first pixel's mask: little-endian), their popcounts added to *count (an i64 alloca). */
static void mark_wide_runs(FcKernel *k, const FcConvI8 *t, LLVMValueRef rows, int64_t first, int64_t count, unsigned n,
                           LLVMValueRef total) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), in = LLVMIntTypeInContext(k->ctx, n), i64 = fc_cg_i64(k);
  LLVMTypeRef vn = LLVMVectorType(i8, n);
  LLVMValueRef acc = fc_cg_entry_alloca(k, vn, "wide_or");
  FcLoop lj, lk;
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(k, 0), c64(k, count), 1, "wide_j");
  LLVMValueRef p = fc_cg_iadd(k, c64(k, first), fc_cg_imulc(k, j, n));
  LLVMBuildStore(b, LLVMConstNull(vn), acc);
  LLVMValueRef kk = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, t->c.K), 1, "wide_k");
  LLVMValueRef at = fc_cg_iadd(k, fc_cg_imulc(k, kk, t->PB), p);
  LLVMValueRef v = LLVMBuildLoad2(b, vn, LLVMBuildGEP2(b, i8, rows, &at, 1, ""), "");
  LLVMSetAlignment(v, 16);
  LLVMBuildStore(b, LLVMBuildOr(b, LLVMBuildLoad2(b, vn, acc, ""), v, ""), acc);
  fc_cg_loop_end(k, &lk);
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildLoad2(b, vn, acc, ""), LLVMConstNull(vn), "");
  LLVMValueRef bits = LLVMBuildBitCast(b, neg, in, "");
  LLVMValueRef m16 = LLVMBuildSDiv(b, p, c64(k, 16), "");
  LLVMValueRef st = LLVMBuildStore(b, bits, LLVMBuildGEP2(b, LLVMInt16TypeInContext(k->ctx), t->wide_cols, &m16, 1, ""));
  LLVMSetAlignment(st, 2);
  LLVMValueRef c = LLVMBuildZExt(b, fc_cg_intrinsic(k, "llvm.ctpop", in, &bits, 1), i64, "");
  LLVMBuildStore(b, LLVMBuildAdd(b, LLVMBuildLoad2(b, i64, total, ""), c, ""), total);
  fc_cg_loop_end(k, &lj);
}

/* The block's wide columns (a byte above 0x7f among the K rows of its pixel), from the byte rows, as PB / 16
 * i16 masks at t->wide_cols (32 pixels a vector, the last 16 alone where PB is an odd multiple of 16);
 * returns how many there are (an i64). The pixels past the block's read zx. */
static LLVMValueRef mark_wide_columns(FcKernel *k, const FcConvI8 *t, LLVMValueRef rows) {
  LLVMValueRef count = fc_cg_entry_alloca(k, fc_cg_i64(k), "wide_cols");
  LLVMBuildStore(k->b, c64(k, 0), count);
  mark_wide_runs(k, t, rows, 0, t->PB / 32, 32, count);
  if (t->PB % 32) mark_wide_runs(k, t, rows, t->PB / 32 * 32, 1, 16, count);
  return LLVMBuildLoad2(k->b, fc_cg_i64(k), count, "wide_columns");
}

/* Step 2 of a chunked Col. Where the kernel fixes wide columns up (t->wide_cols) and the block has at most
 * 1/FIX_SHARE of them, the plain quads of every row (flags[NH] = 0) with flags[NH + 1] = 1: the kernel runs
 * vpmaddubsw on all and recomputes those columns; otherwise (flags[NH + 1] = 0) by chunks. */
static void interleave_chunks(FcKernel *k, const FcConvI8 *t, LLVMValueRef rows, LLVMValueRef cols) {
  if (!t->wide_cols) {
    interleave_by_chunks(k, t, rows, cols);
    return;
  }
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  FcConvI8 all = *t;
  all.kg = 4;
  all.KG = (t->c.K + 3) / 4;
  LLVMValueRef n = mark_wide_columns(k, t, rows);
  LLVMValueRef few = LLVMBuildICmp(b, LLVMIntSLE, fc_cg_imulc(k, n, FC_CONV_I8_FIX_SHARE), c64(k, t->c.P), "few_wide");
  LLVMBuildStore(b, LLVMBuildZExt(b, few, i8, ""), LLVMBuildGEP2(b, i8, t->flags, (LLVMValueRef[]){c64(k, t->NH + 1)}, 1, ""));
  LLVMBasicBlockRef cont = fc_cg_if_begin(k, few);
  LLVMBuildStore(b, LLVMConstInt(i8, 0, 0), LLVMBuildGEP2(b, i8, t->flags, (LLVMValueRef[]){c64(k, t->NH)}, 1, ""));
  interleave(k, &all, rows, cols);
  fc_cg_if_end(k, cont);
  cont = fc_cg_if_begin(k, LLVMBuildNot(b, few, ""));
  interleave_by_chunks(k, t, rows, cols);
  fc_cg_if_end(k, cont);
}

/* The same from rows of `stride` bytes: the block's rows themselves, or (from_x) x's channel planes of a
 * pointwise conv read in place: rows past K repeat row K - 1 (their weights are 0) and i8 x is flipped here.
 * Where the kernel fixes wide columns up (t->wide_cols, a Col of quads), the loops run pixels outer, k inner,
 * OR the rows each 16 pixels read and store the sign bits (vpmovmskb) as their i16 mask: the test costs
 * three ORs a step where a pass of its own would load every byte again (the rows a step reads stay in L1
 * for the next 16 pixels: 16 bytes of each row's line a step). */
static void interleave_from(FcKernel *k, const FcConvI8 *t, LLVMValueRef rows, int64_t stride, bool from_x,
                            LLVMValueRef cols) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), v16 = LLVMVectorType(i8, 16), i16 = LLVMInt16TypeInContext(k->ctx);
  bool marks = t->wide_cols && !t->chunked && t->kg == 4;
  LLVMValueRef acc = marks ? fc_cg_entry_alloca(k, v16, "wide_or") : NULL;
  FcLoop lg, lp;
  LLVMValueRef g, pp;
  if (marks) {
    pp = fc_cg_loop_begin(k, &lp, c64(k, 0), c64(k, t->PB), 16, "pp");
    LLVMBuildStore(b, LLVMConstNull(v16), acc);
    g = fc_cg_loop_begin(k, &lg, c64(k, 0), c64(k, t->KG), 1, "g");
  } else {
    g = fc_cg_loop_begin(k, &lg, c64(k, 0), c64(k, t->KG), 1, "g");
    pp = fc_cg_loop_begin(k, &lp, c64(k, 0), c64(k, t->PB), 16, "pp");
  }
  LLVMValueRef r[4];
  for (int i = 0; i < t->kg; i++) {
    LLVMValueRef row = fc_cg_iadd(k, fc_cg_imulc(k, g, t->kg), c64(k, i));
    if (from_x) row = fc_cg_smin(k, row, c64(k, t->c.K - 1));
    LLVMValueRef off = fc_cg_iadd(k, fc_cg_imulc(k, row, stride), pp);
    r[i] = LLVMBuildLoad2(b, v16, LLVMBuildGEP2(b, i8, rows, &off, 1, ""), "");
    LLVMSetAlignment(r[i], from_x ? 1 : 16);
    if (from_x && t->q.flip) r[i] = LLVMBuildXor(b, r[i], fc_cg_splat_const(v16, LLVMConstInt(i8, 0x80, 0)), "");
  }
  if (marks) {
    LLVMValueRef any = LLVMBuildOr(b, LLVMBuildOr(b, r[0], r[1], ""), LLVMBuildOr(b, r[2], r[3], ""), "");
    LLVMBuildStore(b, LLVMBuildOr(b, LLVMBuildLoad2(b, v16, acc, ""), any, ""), acc);
  }
  LLVMValueRef out = interleave_vecs(k, t, r);
  LLVMValueRef off = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, g, t->PB), pp), 4);
  LLVMValueRef st = LLVMBuildStore(b, out, LLVMBuildGEP2(b, i8, cols, &off, 1, ""));
  LLVMSetAlignment(st, 64);
  if (marks) {
    fc_cg_loop_end(k, &lg);
    LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildLoad2(b, v16, acc, ""), LLVMConstNull(v16), "");
    LLVMValueRef j = LLVMBuildSDiv(b, pp, c64(k, 16), "");
    LLVMBuildStore(b, LLVMBuildBitCast(b, neg, i16, ""), LLVMBuildGEP2(b, i16, t->wide_cols, &j, 1, ""));
    fc_cg_loop_end(k, &lp);
  } else {
    fc_cg_loop_end(k, &lp);
    fc_cg_loop_end(k, &lg);
  }
}

/* The direct im2col (small K with output rows of 16 pixels or more: the stems, C = 1..3 into 7x7 or 3x3
 * taps at stride 2, where the two passes of build_rows and interleave cost several times the product).
 * A block is RB whole output rows. Its input rows (Rin of them, padding included) are first split by the
 * column's phase modulo sw into phase planes ([Cg][sw][Rin][Wph] bytes, zx around the image, i8 x flipped):
 * padded column col = j·sw + φ goes to phase φ, byte j. Tap (c, kh, kw) of output (oh, ow) then reads
 * phase (kw·dw) % sw at row oh·sh + kh·dh, byte ow + (kw·dw) / sw: for one tap and output row a contiguous
 * run of OW bytes (a stride-2 deinterleave done once per input row instead of once per tap). So Col's group
 * g of 16 pixels is kg 16-byte loads (from a per-k table of offsets) and one interleave, stored in place:
 * one pass, no byte rows. */

/* The phase planes of the block whose first output row is oh0 (see above). */
static void build_phases(FcKernel *k, const FcConvI8 *t, LLVMValueRef planes, LLVMValueRef xg, LLVMValueRef oh0) {
  const FcConv2 *c = &t->c;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef zx = fc_qp_zx_byte(k, &t->q, false);
  FcLoop lc, lr;
  LLVMValueRef ci = fc_cg_loop_begin(k, &lc, c64(k, 0), c64(k, c->Cg), 1, "phc");
  LLVMValueRef rl = fc_cg_loop_begin(k, &lr, c64(k, 0), c64(k, t->Rin), 1, "phr");
  LLVMValueRef ih = fc_cg_iadd(k, fc_cg_iadd(k, fc_cg_imulc(k, oh0, c->sh), rl), c64(k, -c->ph));
  LLVMValueRef inside = LLVMBuildICmp(b, LLVMIntULT, ih, c64(k, c->H), "");
  /* x's row ih (a clamped row where outside: not read then) */
  LLVMValueRef xrow = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, ci, c->H), fc_cg_smin(k, fc_cg_smax(k, ih, c64(k, 0)), c64(k, c->H - 1))), c->W);
  for (int64_t ph = 0; ph < c->sw; ph++) {
    LLVMValueRef at = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, ci, c->sw * t->Rin), fc_cg_iadd(k, c64(k, ph * t->Rin), rl)), t->Wph);
    LLVMValueRef dst = LLVMBuildGEP2(b, i8, planes, &at, 1, "");
    int64_t lo, hi; /* bytes j of this phase whose column j·sw + ph - pw lies inside x's row */
    stride_range(t->Wph, c->sw, ph - c->pw, c->W, &lo, &hi);
    fc_cg_fill_bytes(k, dst, c64(k, 0), c64(k, lo), zx);
    fc_cg_fill_bytes(k, dst, c64(k, hi), c64(k, t->Wph), zx);
    if (hi > lo) { /* x's bytes, or zx in a padding row */
      fc_cg_fill_bytes(k, dst, fc_cg_select(k, inside, c64(k, hi), c64(k, lo)), c64(k, hi), zx);
      LLVMValueRef so = fc_cg_iadd(k, xrow, c64(k, ph - c->pw));
      copy_run(k, t, LLVMBuildGEP2(b, i8, xg, &so, 1, ""), dst, fc_cg_select(k, inside, c64(k, lo), c64(k, hi)), c64(k, hi));
    }
  }
  fc_cg_loop_end(k, &lr);
  fc_cg_loop_end(k, &lc);
}

/* The group's quads of 16·nl pixels (nl = 2 or 4 128-bit lanes a vector) from 4 vectors r[] of 16·nl bytes,
 * as 4 vectors out[] of 16·nl bytes (pixels in order): the in-lane unpacks of bytes and then of 16-bit pairs
 * (vpunpck[lh]bw, vpunpck[lh]wd: lane L of q[s] holds the quads of pixels 16L + 4s .. + 3), then a transpose of
 * 128-bit lanes (vshufi64x2 / vperm2i128): 4 shuffles a 64-byte store instead of the 11 that 16 pixels at a
 * time take. */
static void interleave_lanes(FcKernel *k, LLVMValueRef const *r, int nl, LLVMValueRef *out) {
  LLVMBuilderRef b = k->b;
  int n = 16 * nl, idx[64];
  LLVMTypeRef v16 = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), (unsigned)(n / 2));
  LLVMTypeRef v64 = LLVMVectorType(LLVMInt64TypeInContext(k->ctx), (unsigned)(n / 8));
  LLVMTypeRef vb = LLVMVectorType(LLVMInt8TypeInContext(k->ctx), (unsigned)n);
  LLVMValueRef p[4], q[4];
  for (int h = 0; h < 2; h++) { /* bytes: pairs (r0, r1) and (r2, r3), low and high halves of each lane */
    for (int L = 0; L < nl; L++)
      for (int i = 0; i < 8; i++) {
        idx[16 * L + 2 * i] = 16 * L + 8 * h + i;
        idx[16 * L + 2 * i + 1] = n + 16 * L + 8 * h + i;
      }
    p[h] = LLVMBuildBitCast(b, fc_cg_shuffle(k, r[0], r[1], idx, n), v16, "");
    p[2 + h] = LLVMBuildBitCast(b, fc_cg_shuffle(k, r[2], r[3], idx, n), v16, "");
  }
  for (int s = 0; s < 4; s++) { /* 16-bit pairs: q[s] = pixels 4s .. 4s + 3 of each lane */
    int h = s / 2, hw = s % 2;
    for (int L = 0; L < nl; L++)
      for (int i = 0; i < 4; i++) {
        idx[8 * L + 2 * i] = 8 * L + 4 * hw + i;
        idx[8 * L + 2 * i + 1] = n / 2 + 8 * L + 4 * hw + i;
      }
    q[s] = LLVMBuildBitCast(b, fc_cg_shuffle(k, p[h], p[2 + h], idx, n / 2), v64, "");
  }
  /* out[m] chunk c (128 bits) = 4-pixel group g = m·nl + c: q[g % 4]'s lane g / 4 */
  if (nl == 2) {
    for (int m = 0; m < 4; m++) {
      int s0 = (2 * m) % 4, L = m / 2;
      int id[4] = {2 * L, 2 * L + 1, 4 + 2 * L, 4 + 2 * L + 1};
      out[m] = LLVMBuildBitCast(b, fc_cg_shuffle(k, q[s0], q[s0 + 1], id, 4), vb, "");
    }
  } else {
    LLVMValueRef t[4]; /* t[2j + u]: lanes 2u, 2u + 1 of q[2j] and q[2j + 1], interleaved by lane */
    for (int j = 0; j < 2; j++)
      for (int u = 0; u < 2; u++) {
        int id[8] = {4 * u, 4 * u + 1, 8 + 4 * u, 8 + 4 * u + 1, 4 * u + 2, 4 * u + 3, 8 + 4 * u + 2, 8 + 4 * u + 3};
        t[2 * j + u] = fc_cg_shuffle(k, q[2 * j], q[2 * j + 1], id, 8);
      }
    for (int m = 0; m < 4; m++) { /* lane m: (q0, q1) from t[m / 2], (q2, q3) from t[2 + m / 2] */
      int o = 4 * (m % 2), id[8] = {o, o + 1, o + 2, o + 3, 8 + o, 8 + o + 1, 8 + o + 2, 8 + o + 3};
      out[m] = LLVMBuildBitCast(b, fc_cg_shuffle(k, t[m / 2], t[2 + m / 2], id, 8), vb, "");
    }
  }
}

/* Col of the block (nrow output rows from the phase planes, npix = nrow·OW pixels): for each group of k and
 * output row, 16 pixels at a time (the last 16 of a row overlap the ones before: same bytes again); the
 * pixels [npix, PB) get zx. */
static void build_cols_direct(FcKernel *k, const FcConvI8 *t, LLVMValueRef cols, LLVMValueRef planes,
                              LLVMValueRef nrow, LLVMValueRef npix) {
  const FcConv2 *c = &t->c;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), v16 = LLVMVectorType(i8, 16);
  FcLoop lg, lr, lp;
  int64_t real = (c->K + t->kg - 1) / t->kg; /* the groups past it (AMX's whole chunks) meet zero weights */
  LLVMValueRef pad_at = c64(k, real * t->PB * 4);
  fc_cg_fill_bytes(k, LLVMBuildGEP2(b, i8, cols, &pad_at, 1, ""), c64(k, 0), c64(k, (t->KG - real) * t->PB * 4),
             fc_qp_zx_byte(k, &t->q, false));
  LLVMValueRef g = fc_cg_loop_begin(k, &lg, c64(k, 0), c64(k, real), 1, "dg");
  LLVMValueRef src[4];
  for (int i = 0; i < t->kg; i++) {
    LLVMValueRef off = fc_cg_load(k, FC_DT_I64, t->tab_src, fc_cg_iadd(k, fc_cg_imulc(k, g, t->kg), c64(k, i)));
    src[i] = LLVMBuildGEP2(b, i8, planes, &off, 1, "");
  }
  LLVMValueRef grow = fc_cg_imulc(k, g, t->PB * 4);
  grow = LLVMBuildGEP2(b, i8, cols, &grow, 1, "");
  /* pixels a step: 16 per 128-bit lane of the target's vectors, where the row holds that many */
  int nl = t->g.lanes / 4;
  if (nl < 2 || c->OW < 16 * nl) nl = 1;
  int64_t n = 16 * nl;
  LLVMTypeRef vn = LLVMVectorType(i8, (unsigned)n);
  LLVMValueRef ol = fc_cg_loop_begin(k, &lr, c64(k, 0), nrow, 1, "dr");
  LLVMValueRef rin = fc_cg_imulc(k, ol, c->sh * t->Wph), pout = fc_cg_imulc(k, ol, c->OW);
  LLVMValueRef jj = fc_cg_loop_begin(k, &lp, c64(k, 0), c64(k, c->OW), n, "dp");
  LLVMValueRef ow = fc_cg_smin(k, jj, c64(k, c->OW - n)), r[4];
  LLVMValueRef so = fc_cg_iadd(k, rin, ow);
  for (int i = 0; i < t->kg; i++) {
    r[i] = LLVMBuildLoad2(b, nl == 1 ? v16 : vn, LLVMBuildGEP2(b, i8, src[i], &so, 1, ""), "");
    LLVMSetAlignment(r[i], 1);
  }
  LLVMValueRef off = fc_cg_imulc(k, fc_cg_iadd(k, pout, ow), 4);
  LLVMValueRef dst = LLVMBuildGEP2(b, i8, grow, &off, 1, "");
  if (nl == 1) {
    LLVMValueRef st = LLVMBuildStore(b, interleave_vecs(k, t, r), dst);
    LLVMSetAlignment(st, 4);
  } else {
    /* WIDEN's u16 pairs [r0, 0, r1, 0] are the quads of (r0, 0, r1, 0) */
    LLVMValueRef quad[4] = {r[0], r[1], r[2], r[3]}, out[4];
    if (t->kg == 2) {
      quad[1] = quad[3] = LLVMConstNull(vn);
      quad[2] = r[1];
    }
    interleave_lanes(k, quad, nl, out);
    for (int m = 0; m < 4; m++) {
      LLVMValueRef at = c64(k, m * n);
      LLVMValueRef st = LLVMBuildStore(b, out[m], LLVMBuildGEP2(b, i8, dst, &at, 1, ""));
      LLVMSetAlignment(st, 4);
    }
  }
  fc_cg_loop_end(k, &lp);
  fc_cg_loop_end(k, &lr);
  fc_cg_fill_bytes(k, grow, fc_cg_imulc(k, npix, 4), c64(k, t->PB * 4), fc_qp_zx_byte(k, &t->q, false));
  fc_cg_loop_end(k, &lg);
}

/* The phase-plane offset of each k's tap for output (0, 0), k = (c, kh, kw); the k past K (the last group's
 * padding, zero weights) repeat K - 1's. */
static int64_t *direct_offsets(const FcConvI8 *t) {
  const FcConv2 *c = &t->c;
  int64_t n = t->KG * t->kg, *off = malloc((size_t)n * sizeof *off);
  if (!off) fc_die(__FILE__, __LINE__, "out of memory");
  for (int64_t kk = 0; kk < n; kk++) {
    int64_t q = kk < c->K ? kk : c->K - 1;
    int64_t ci = q / (c->KH * c->KW), kh = q / c->KW % c->KH, kw = q % c->KW;
    int64_t col = kw * c->dw;
    off[kk] = ((ci * c->sw + col % c->sw) * t->Rin + kh * c->dh) * t->Wph + col / c->sw;
  }
  return off;
}

void fc_conv_i8_pixel_tile(const FcTarget *target, int64_t P, FcI8Gemm *g) {
  fc_target_i8_conv(target, g);
  /* Fewer pixel vectors per tile where that pads the image's pixels less (ResNet's 7x7 = 49 and the seed
   * CNN's 14x14 = 196 against 64-pixel panels): the weights are packed by channel rows, so this choice is
   * free per conv, and 2 vectors of 4 channels still keep the dot unit busier than the loads. */
  for (int v = g->nv - 1; v >= 2; v--) {
    int64_t cur = (int64_t)g->nv * g->lanes, alt = (int64_t)v * g->lanes;
    if ((P + alt - 1) / alt * alt < (P + cur - 1) / cur * cur) g->nv = v;
  }
}

/* cols | rows | 64 bytes of slack (build_rows_padded's last spill) | the padded planes | 64 bytes of slack
 * (the spills' reads past the last plane: bytes that only reach the spilled-over positions); the direct
 * build has no rows and phase planes instead of the padded ones. */
bool fc_conv_i8_cols_layout(FcConvI8 *t, int64_t *end) {
  const FcConv2 *c = &t->c;
  int64_t phase_bytes = 0;
  if (!fc_checked_mul(t->KG * 4, t->PB, &t->col_bytes) ||
      (t->direct && (!fc_checked_mul(c->Cg * c->sw, t->Rin, &phase_bytes) || !fc_checked_mul(phase_bytes, t->Wph, &phase_bytes))) ||
      !fc_checked_mul(t->direct ? 0 : t->KG * t->kg, t->PB, &t->row_bytes))
    return false;
  /* the padded planes are below x's plane bytes */
  t->pad_bytes = !t->direct && rows_from_padded(t) ? c->Cg * padded_h(c) * padded_w(c) + 64 : phase_bytes;
  if (t->col_bytes > INT64_MAX / 4 || t->row_bytes > INT64_MAX / 4 || t->pad_bytes > INT64_MAX / 4) return false;
  *end = (t->col_bytes + t->row_bytes + 64 + t->pad_bytes + 63) / 64 * 64;
  return true;
}

void fc_conv_i8_cols_tables(FcKernel *k, FcConvI8 *t) {
  const FcConv2 *c = &t->c;
  int64_t *vlo = malloc((size_t)c->KW * sizeof *vlo), *vhi = malloc((size_t)c->KW * sizeof *vhi);
  if (!vlo || !vhi) fc_die(__FILE__, __LINE__, "out of memory");
  for (int64_t kw = 0; kw < c->KW; kw++) stride_range(c->OW, c->sw, kw * c->dw - c->pw, c->W, &vlo[kw], &vhi[kw]);
  if (t->direct) {
    int64_t *off = direct_offsets(t);
    t->tab_src = fc_cg_i64_table(k, off, t->KG * t->kg, "tap_src");
    free(off);
  }
  t->tab_lo = fc_cg_i64_table(k, vlo, c->KW, "tap_lo");
  t->tab_hi = fc_cg_i64_table(k, vhi, c->KW, "tap_hi");
  free(vlo);
  free(vhi);
}

void fc_conv_i8_cols_at(FcKernel *k, FcConvI8 *t, LLVMValueRef scr) {
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  t->cols = scr;
  t->rows = LLVMBuildGEP2(k->b, i8, scr, (LLVMValueRef[]){c64(k, t->col_bytes)}, 1, "rows");
  t->pad = LLVMBuildGEP2(k->b, i8, scr, (LLVMValueRef[]){c64(k, t->col_bytes + t->row_bytes + 64)}, 1, "pad");
}

void fc_conv_i8_build_cols(FcKernel *k, const FcConvI8 *t, LLVMValueRef xg, LLVMValueRef blk, LLVMValueRef p0,
                           LLVMValueRef npix) {
  const FcConv2 *c = &t->c;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef cols = t->cols, rows = t->rows, pad = t->pad;
  /* A pointwise conv's Col rows are x's channel planes: a full block interleaves them in place (a partial
   * last block would read past the plane, so it copies them like any other conv). */
  LLVMBasicBlockRef done_cols = NULL;
  if (t->pointwise && !t->chunked) {
    LLVMValueRef full_blk = LLVMBuildICmp(b, LLVMIntEQ, npix, c64(k, t->PB), "");
    LLVMBasicBlockRef in_place = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "pw_in_place");
    LLVMBasicBlockRef copied = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "pw_copied");
    done_cols = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "pw_done");
    LLVMBuildCondBr(b, full_blk, in_place, copied);
    LLVMPositionBuilderAtEnd(b, in_place);
    interleave_from(k, t, LLVMBuildGEP2(b, i8, xg, &p0, 1, ""), c->P, true, cols);
    LLVMBuildBr(b, done_cols);
    LLVMPositionBuilderAtEnd(b, copied);
  }
  if (t->direct) {
    LLVMValueRef oh0 = fc_cg_imulc(k, blk, t->RB);
    build_phases(k, t, pad, xg, oh0);
    build_cols_direct(k, t, cols, pad, fc_cg_smin(k, c64(k, t->RB), fc_cg_isub(k, c64(k, c->OH), oh0)), npix);
  } else {
    if (rows_from_padded(t)) build_rows_padded(k, t, rows, pad, xg);
    else build_rows(k, t, rows, xg, p0, npix);
    if (t->KG * t->kg > c->K) { /* the rows of the last group past K meet zero weights: any defined bytes */
      LLVMValueRef r = c64(k, c->K * t->PB);
      fc_cg_fill_bytes(k, LLVMBuildGEP2(b, i8, rows, &r, 1, ""), c64(k, 0), c64(k, (t->KG * t->kg - c->K) * t->PB),
                 fc_qp_zx_byte(k, &t->q, false));
    }
    if (t->chunked) interleave_chunks(k, t, rows, cols);
    else interleave(k, t, rows, cols);
  }
  if (t->pointwise && !t->chunked) {
    LLVMBuildBr(b, done_cols);
    LLVMPositionBuilderAtEnd(b, done_cols);
  }
}

/* The packed weights and tables: the s8 packing ([G][MT][NH][16 channels][64 bytes], see the top comment)
 * or WIDEN16's [G][MT][KG][mr][4] bytes of i16 pairs | corr: i32 × M | mult: f32 × M. */
static int8_t *pack_weights(const FcConvI8 *t, int64_t wbytes, const uint8_t *pairs, int64_t pair_bytes,
                            int64_t *bytes) {
  const FcConv2 *c = &t->c;
  int mr = t->g.mr;
  *bytes = wbytes + 8 * c->M + (pairs ? pair_bytes : 0);
  int8_t *pk = calloc((size_t)*bytes, 1);
  if (!pk) fc_die(__FILE__, __LINE__, "out of memory");
  for (int64_t m = 0; m < c->M; m++) {
    int64_t grp = m / c->Mg, ml = m % c->Mg;
    for (int64_t kk = 0; kk < c->K; kk++) {
      int16_t v = t->q.w[m * c->K + kk];
      if (t->wide16) {
        int64_t at = (((grp * t->MT + ml / mr) * t->KG + kk / 2) * mr + ml % mr) * 4;
        pk[at + 2 * (kk % 2)] = (int8_t)(v & 0xff);
        pk[at + 2 * (kk % 2) + 1] = (int8_t)(v >> 8);
      } else {
        int64_t q = kk / 4;
        pk[((((grp * t->MT + ml / 16) * t->NH + q / 16) * 16 + ml % 16) * 64) + (q % 16) * 4 + kk % 4] = (int8_t)v;
      }
    }
  }
  memcpy(pk + wbytes, t->q.corr, (size_t)c->M * 4);
  memcpy(pk + wbytes + 4 * c->M, t->q.mult, (size_t)c->M * 4);
  if (pairs) memcpy(pk + wbytes + 8 * c->M, pairs, (size_t)pair_bytes);
  return pk;
}

void fc_conv_i8_channel_scales(FcKernel *k, const FcConvI8 *t, LLVMValueRef wp, int64_t wbytes, LLVMValueRef grp,
                               LLVMValueRef ml0, int i, unsigned lanes, LLVMValueRef *corr, LLVMValueRef *mult) {
  LLVMBuilderRef b = k->b;
  const FcConv2 *c = &t->c;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef ml = fc_cg_smin(k, fc_cg_iadd(k, ml0, c64(k, i)), c64(k, c->Mg - 1));
  LLVMValueRef m = fc_cg_iadd(k, fc_cg_imulc(k, grp, c->Mg), ml);
  LLVMValueRef co = fc_cg_iadd(k, c64(k, wbytes), fc_cg_imulc(k, m, 4)), mo = fc_cg_iadd(k, co, c64(k, 4 * c->M));
  *corr = LLVMBuildLoad2(b, LLVMInt32TypeInContext(k->ctx), LLVMBuildGEP2(b, i8, wp, &co, 1, ""), "");
  *mult = LLVMBuildLoad2(b, LLVMFloatTypeInContext(k->ctx), LLVMBuildGEP2(b, i8, wp, &mo, 1, ""), "");
  LLVMSetAlignment(*corr, 4);
  LLVMSetAlignment(*mult, 4);
  *corr = fc_cg_splat(k, *corr, lanes);
  *mult = fc_cg_splat(k, *mult, lanes);
}

/* What one k step of the register tile reads: the tile, the block's Col, and the weights: the tile's first
 * channel at wp + wrow, the next ones wchan bytes apart (64 in the s8 packing, 4 in WIDEN16's, a widened row
 * in WIDEN's scratch). */
typedef struct KStep {
  const FcConvI8 *t;
  LLVMValueRef acc, cols, wp, pcol;
  LLVMTypeRef vi, vb;
  int64_t wchan;
  FcI8Dot dot;
} KStep;

/* One k group (a quad; WIDEN and WIDEN16: a pair) of the tile, its Col row at byte coff[0] (g·PB·4): nv
 * Col vectors of the panel at pcol against the 4 bytes of each of the mr channels at wrow[0], broadcast.
 * With n = 2, two quads at once by fc_i8_dot_pair (cg_quad_pairs.c's pairs only). */
static void k_step_n(FcKernel *k, const KStep *s, const LLVMValueRef *coff, const LLVMValueRef *wrow, int n) {
  const FcConvI8 *t = s->t;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  int w = t->g.lanes, mr = t->g.mr, nv = t->g.nv;
  LLVMValueRef cv[2][8] = {{0}};
  for (int h = 0; h < n; h++)
    for (int v = 0; v < nv; v++) {
      LLVMValueRef off = fc_cg_iadd(k, coff[h], fc_cg_imulc(k, fc_cg_iadd(k, s->pcol, c64(k, v * w)), 4));
      cv[h][v] = LLVMBuildLoad2(b, s->vb, LLVMBuildGEP2(b, i8, s->cols, &off, 1, ""), "");
      LLVMSetAlignment(cv[h][v], 32);
    }
  for (int i = 0; i < mr; i++) {
    LLVMValueRef wv[2] = {0};
    for (int h = 0; h < n; h++) {
      LLVMValueRef off = fc_cg_iadd(k, wrow[h], c64(k, s->wchan * i));
      LLVMValueRef w32 = LLVMBuildLoad2(b, i32, LLVMBuildGEP2(b, i8, s->wp, &off, 1, ""), "");
      LLVMSetAlignment(w32, 4);
      wv[h] = LLVMBuildBitCast(b, fc_cg_splat(k, w32, (unsigned)w), s->vb, "");
    }
    for (int v = 0; v < nv; v++) {
      LLVMValueRef p = fc_cg_tile_at(k, s->vi, s->acc, c64(k, i * nv + v)), a = LLVMBuildLoad2(b, s->vi, p, "");
      LLVMBuildStore(b, n == 2 ? fc_i8_dot_pair(k, w, a, cv[0][v], wv[0], cv[1][v], wv[1]) : fc_i8_dot(k, s->dot, w, a, cv[0][v], wv[0]), p);
    }
  }
}

static void k_step(FcKernel *k, const KStep *s, LLVMValueRef g, LLVMValueRef wrow) {
  LLVMValueRef coff = fc_cg_imulc(k, g, s->t->PB * 4);
  k_step_n(k, s, &coff, &wrow, 1);
}

/* A chunk's quads by its pair pattern (fc_quad_xor_chunk's step): chunk h's weights at hrow (quad g of the
 * chunk: + 4(g - 16h)), the Col's quad g at g·PB·4. */
typedef struct XorChunk {
  const KStep *ks;
  LLVMValueRef h, hrow;
} XorChunk;

static void xor_step(FcKernel *k, void *ctx, LLVMValueRef quad0, const int *quads, int n) {
  const XorChunk *x = ctx;
  LLVMValueRef c[2], wrow[2];
  for (int h = 0; h < n; h++) {
    LLVMValueRef g = fc_cg_iadd(k, quad0, c64(k, quads[h]));
    c[h] = fc_cg_imulc(k, g, x->ks->t->PB * 4);
    wrow[h] = fc_cg_iadd(k, x->hrow, fc_cg_imulc(k, fc_cg_isub(k, g, fc_cg_imulc(k, x->h, 16)), 4));
  }
  k_step_n(k, x->ks, c, wrow, n);
}

/* The n quads (a constant) from k group g0 one by one, their weights from hrow (quad j: + 4j). */
static void quad_loop(FcKernel *k, const KStep *ks, LLVMValueRef g0, LLVMValueRef hrow, int64_t n) {
  FcLoop lq;
  LLVMValueRef qq = fc_cg_loop_begin(k, &lq, c64(k, 0), c64(k, n), 1, "quad");
  k_step(k, ks, fc_cg_iadd(k, g0, qq), fc_cg_iadd(k, hrow, fc_cg_imulc(k, qq, 4)));
  fc_cg_loop_end(k, &lq);
}

/* What the vector register tiles of one block share. */
typedef struct VecBlock {
  LLVMValueRef wp, wide, cols, acc, grp, wgrp, ybase, npix, edge;
  LLVMTypeRef vi, vb, et;
  int64_t wbytes;
} VecBlock;

/* WIDEN: the channel tile ct (channels ct·mr .. + mr - 1 of the group) sign-extended from the s8 packing
 * into the scratch: channel i's row of i16 at wide + i·wrow in k order (so pair g, k = 2g and 2g + 1, is the
 * 4 bytes at 4g), by whole 64-byte chunks (vpmovsxbw). Channels past Mg read the packing's zero rows. */
static void widen_tile(FcKernel *k, const FcConvI8 *t, const VecBlock *a, LLVMValueRef ct) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), v64 = LLVMVectorType(i8, 64);
  LLVMTypeRef w64 = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), 64);
  LLVMValueRef ml0 = fc_cg_imulc(k, ct, t->g.mr);
  LLVMValueRef t16 = LLVMBuildSDiv(b, ml0, c64(k, 16), ""), r16 = LLVMBuildSRem(b, ml0, c64(k, 16), "");
  LLVMValueRef src0 = fc_cg_iadd(k, a->wgrp, fc_cg_iadd(k, fc_cg_imulc(k, t16, t->NH * 1024), fc_cg_imulc(k, r16, 64)));
  FcLoop lh;
  LLVMValueRef h = fc_cg_loop_begin(k, &lh, c64(k, 0), c64(k, t->NH), 1, "widen");
  for (int i = 0; i < t->g.mr; i++) {
    LLVMValueRef so = fc_cg_iadd(k, src0, fc_cg_iadd(k, fc_cg_imulc(k, h, 1024), c64(k, 64 * i)));
    LLVMValueRef v = LLVMBuildLoad2(b, v64, LLVMBuildGEP2(b, i8, a->wp, &so, 1, ""), "");
    LLVMSetAlignment(v, 64);
    LLVMValueRef dof = fc_cg_iadd(k, fc_cg_imulc(k, h, 128), c64(k, t->wrow * i));
    LLVMValueRef st = LLVMBuildStore(b, LLVMBuildSExt(b, v, w64, ""), LLVMBuildGEP2(b, i8, a->wide, &dof, 1, ""));
    LLVMSetAlignment(st, 64);
  }
  fc_cg_loop_end(k, &lh);
}

/* One register tile: channel tile ct of the group against the pixel panel at pcol of the block, over the
 * whole K, then requantised and stored. */
static void vec_tile(FcKernel *k, const FcConvI8 *t, const VecBlock *a, LLVMValueRef ct, LLVMValueRef pcol) {
  LLVMBuilderRef b = k->b;
  const FcConv2 *c = &t->c;
  int w = t->g.lanes, mr = t->g.mr, nv = t->g.nv;
  /* the tile's first channel: WIDEN16's tile ct, or row (ct·mr) % 16 of the s8 packing's 16-channel tile */
  LLVMValueRef ml0 = fc_cg_imulc(k, ct, mr);
  /* the accumulators start at their channel's correction (one vpaddd less per vector in the requantisation,
   * which is most of a small-K conv's work; the i32 sum wraps the same either way) */
  for (int i = 0; i < mr; i++) {
    LLVMValueRef corr, mult;
    fc_conv_i8_channel_scales(k, t, a->wp, a->wbytes, a->grp, ml0, i, (unsigned)w, &corr, &mult);
    for (int v = 0; v < nv; v++) LLVMBuildStore(b, corr, fc_cg_tile_at(k, a->vi, a->acc, c64(k, i * nv + v)));
  }
  KStep ks = {t, a->acc, a->cols, a->wp, pcol, a->vi, a->vb, t->wide16 ? 4 : 64, t->g.dot};
  if (t->chunked) {
    /* a chunked Col with a WIDEN chunk (a block without one runs the plain quads: vec_block): per chunk of
     * 16 quads, vpmaddubsw on the s8 packing or vpmaddwd on the tile's widened rows (widen_tile), the slot's
     * group j at g = 32h + j either way; the last chunk over its real quads */
    LLVMValueRef t16 = LLVMBuildSDiv(b, ml0, c64(k, 16), ""), r16 = LLVMBuildSRem(b, ml0, c64(k, 16), "");
    LLVMValueRef wtile = fc_cg_iadd(k, a->wgrp, fc_cg_iadd(k, fc_cg_imulc(k, t16, t->NH * 1024), fc_cg_imulc(k, r16, 64)));
    int64_t KQ = (c->K + 3) / 4;
    for (int last = 0; last < 2; last++) {
      int64_t quads = last ? KQ % 16 : 16;
      if (quads == 0 || (!last && KQ < 16)) continue;
      FcLoop lh, lq;
      LLVMValueRef h = last ? c64(k, KQ / 16) : fc_cg_loop_begin(k, &lh, c64(k, 0), c64(k, KQ / 16), 1, "chunk");
      LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
      LLVMValueRef flag = LLVMBuildLoad2(b, i8, LLVMBuildGEP2(b, i8, t->flags, &h, 1, ""), "");
      LLVMValueRef narrow = LLVMBuildICmp(b, LLVMIntNE, flag, LLVMConstInt(i8, 0, 0), "");
      LLVMValueRef g0 = fc_cg_imulc(k, h, 32);
      LLVMBasicBlockRef cont = fc_cg_if_begin(k, narrow);
      ks.dot = FC_I8DOT_MADDUBS;
      ks.wp = a->wp;
      ks.wchan = 64;
      /* (a block with a WIDEN chunk is rare: its quads one by one, which keeps the code smaller) */
      quad_loop(k, &ks, g0, fc_cg_iadd(k, wtile, fc_cg_imulc(k, h, 1024)), quads);
      fc_cg_if_end(k, cont);
      cont = fc_cg_if_begin(k, LLVMBuildNot(b, narrow, ""));
      ks.dot = FC_I8DOT_WIDEN;
      ks.wp = a->wide;
      ks.wchan = t->wrow;
      LLVMValueRef jj = fc_cg_loop_begin(k, &lq, c64(k, 0), c64(k, 2 * quads), 1, "pair");
      k_step(k, &ks, fc_cg_iadd(k, g0, jj), fc_cg_iadd(k, fc_cg_imulc(k, h, 128), fc_cg_imulc(k, jj, 4)));
      fc_cg_loop_end(k, &lq);
      fc_cg_if_end(k, cont);
      if (!last) fc_cg_loop_end(k, &lh);
    }
  } else if (t->sext) {
    /* WIDEN: the tile's widened rows (widen_tile), one pair of k per step */
    ks.wp = a->wide;
    ks.wchan = t->wrow;
    FcLoop lk;
    LLVMValueRef g = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, t->KG), 1, "kg");
    k_step(k, &ks, g, fc_cg_imulc(k, g, 4));
    fc_cg_loop_end(k, &lk);
  } else if (t->wide16) {
    LLVMValueRef wtile = fc_cg_iadd(k, a->wgrp, fc_cg_imulc(k, ct, t->KG * mr * 4));
    FcLoop lk;
    LLVMValueRef g = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, t->KG), 1, "kg");
    k_step(k, &ks, g, fc_cg_iadd(k, wtile, fc_cg_imulc(k, g, mr * 4)));
    fc_cg_loop_end(k, &lk);
  } else {
    /* the s8 packing: over its chunks of 16 quads and the quads of a chunk (the last chunk only over the
     * real ones), so the addresses are plain increments */
    LLVMValueRef t16 = LLVMBuildSDiv(b, ml0, c64(k, 16), ""), r16 = LLVMBuildSRem(b, ml0, c64(k, 16), "");
    LLVMValueRef wtile = fc_cg_iadd(k, a->wgrp, fc_cg_iadd(k, fc_cg_imulc(k, t16, t->NH * 1024), fc_cg_imulc(k, r16, 64)));
    /* whole chunks: by their pair patterns (the tile's unit's row of codes) where the kernel reads them and
     * the plan has a code (fc_quad_xor_chunks), else quad by quad */
    int64_t coded = t->pair_codes ? fc_quad_xor_chunks(c->K) : 0;
    FcLoop lh;
    if (coded > 0) {
      LLVMValueRef h = fc_cg_loop_begin(k, &lh, c64(k, 0), c64(k, coded), 1, "chunk");
      LLVMValueRef unit = fc_cg_iadd(k, fc_cg_imulc(k, a->grp, t->MT), t16);
      LLVMValueRef code = fc_cg_load(k, FC_DT_U8, t->pair_codes, fc_cg_iadd(k, fc_cg_imulc(k, unit, coded), h));
      XorChunk x = {&ks, h, fc_cg_iadd(k, wtile, fc_cg_imulc(k, h, 1024))};
      fc_quad_xor_chunk(k, LLVMBuildZExt(b, code, LLVMInt64TypeInContext(k->ctx), ""), h, xor_step, &x);
      fc_cg_loop_end(k, &lh);
    }
    if (t->KG / 16 > coded) {
      LLVMValueRef h = fc_cg_loop_begin(k, &lh, c64(k, coded), c64(k, t->KG / 16), 1, "chunk");
      quad_loop(k, &ks, fc_cg_imulc(k, h, 16), fc_cg_iadd(k, wtile, fc_cg_imulc(k, h, 1024)), 16);
      fc_cg_loop_end(k, &lh);
    }
    if (t->KG % 16)
      quad_loop(k, &ks, c64(k, t->KG / 16 * 16), fc_cg_iadd(k, wtile, c64(k, t->KG / 16 * 1024)), t->KG % 16);
  }

  /* requantise: one multiplier per channel row (rows past the group read its last channel); the correction
   * is in the accumulators already */
  LLVMValueRef outv[64], acc[64], corr[64], mult[64];
  for (int i = 0; i < mr; i++) {
    fc_conv_i8_channel_scales(k, t, a->wp, a->wbytes, a->grp, ml0, i, (unsigned)w, &corr[i * nv], &mult[i * nv]);
    for (int v = 0; v < nv; v++) {
      acc[i * nv + v] = LLVMBuildLoad2(b, a->vi, fc_cg_tile_at(k, a->vi, a->acc, c64(k, i * nv + v)), "");
      corr[i * nv + v] = LLVMConstNull(a->vi), mult[i * nv + v] = mult[i * nv];
    }
  }
  int per_row = fc_qp_finish_tile(k, &t->q, acc, mr, nv, corr, mult, outv);
  LLVMValueRef nrows = fc_cg_smin(k, c64(k, mr), fc_cg_isub(k, c64(k, c->Mg), ml0));
  LLVMValueRef ncols = fc_cg_smin(k, c64(k, t->nr), fc_cg_isub(k, a->npix, pcol));
  fc_qp_store_tile(k, a->et, outv, mr, per_row, nv * w / per_row, a->edge, a->ybase, ml0, nrows, c->P, pcol, ncols);
}

typedef struct AmxBlock {
  LLVMValueRef wp, cols, grp, ybase, pcol, npix, ctile, edge;
  LLVMTypeRef et;
  int64_t wbytes;
} AmxBlock;

/* Channels ct0 * 16 .. of tiles na (1 or 2) x pixels pcol .. pcol + 31 of the block: the tile product of the
 * weight rows and the interleaved Col (a B tile is 16 groups x 16 pixels, rows PB * 4 bytes apart), then each
 * channel row requantised and stored like the vector tiles. */
static void amx_block(FcKernel *k, const FcConvI8 *t, const AmxBlock *a, LLVMValueRef ct0, int na) {
  LLVMBuilderRef b = k->b;
  const FcConv2 *c = &t->c;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef vi = LLVMVectorType(i32, 16);
  int64_t nh = t->NH;
  FcAmxGemm g = {.dot = FC_AMX_BSUD, .na = na, .nb = 2, .chunks = nh, .c = a->ctile};
  g.a.stride = FC_AMX_ROW_BYTES;
  g.a.chunk_step = FC_AMX_ROWS * FC_AMX_ROW_BYTES;
  for (int i = 0; i < na; i++) {
    LLVMValueRef tile = fc_cg_iadd(k, fc_cg_imulc(k, a->grp, t->MT), fc_cg_iadd(k, ct0, c64(k, i)));
    LLVMValueRef off = fc_cg_imulc(k, tile, nh * FC_AMX_ROWS * FC_AMX_ROW_BYTES);
    g.a.base[i] = LLVMBuildGEP2(b, i8, a->wp, &off, 1, "");
  }
  g.b.stride = t->PB * 4;
  g.b.chunk_step = FC_AMX_ROWS * t->PB * 4;
  for (int j = 0; j < 2; j++) {
    LLVMValueRef off = fc_cg_imulc(k, fc_cg_iadd(k, a->pcol, c64(k, 16 * j)), 4);
    g.b.base[j] = LLVMBuildGEP2(b, i8, a->cols, &off, 1, "");
  }
  fc_amx_gemm(k, &g);
  LLVMValueRef m0 = fc_cg_imulc(k, ct0, 16), outv[64], acc[64], corr[64], mult[64];
  for (int i = 0; i < 16 * na; i++) {
    fc_conv_i8_channel_scales(k, t, a->wp, a->wbytes, a->grp, m0, i, 16, &corr[i * 2], &mult[i * 2]);
    for (int v = 0; v < 2; v++) {
      int64_t off = ((int64_t)((i / 16) * 2 + v) * 16 + i % 16) * FC_AMX_ROW_BYTES;
      acc[i * 2 + v] = LLVMBuildLoad2(b, vi, LLVMBuildGEP2(b, i8, a->ctile, (LLVMValueRef[]){c64(k, off)}, 1, ""), "");
      LLVMSetAlignment(acc[i * 2 + v], 64);
      corr[i * 2 + v] = corr[i * 2], mult[i * 2 + v] = mult[i * 2];
    }
  }
  int per_row = fc_qp_finish_tile(k, &t->q, acc, 16 * na, 2, corr, mult, outv);
  LLVMValueRef nrows = fc_cg_smin(k, c64(k, 16 * na), fc_cg_isub(k, c64(k, c->Mg), m0));
  LLVMValueRef ncols = fc_cg_smin(k, c64(k, 32), fc_cg_isub(k, a->npix, a->pcol));
  fc_qp_store_tile(k, a->et, outv, 16 * na, per_row, 32 / per_row, a->edge, a->ybase, m0, nrows, c->P, a->pcol, ncols);
}

/* The block's tiles on AMX: 32-pixel panels, and in each the 16-channel tiles [ct0, ct1) by pairs (the last
 * one alone where their count is odd: tile shapes are fixed, cg_amx.h; `odd`: whether it can be). */
static void amx_tiles(FcKernel *k, const FcConvI8 *t, AmxBlock *a, LLVMValueRef ct0, LLVMValueRef ct1, bool odd) {
  LLVMBuilderRef b = k->b;
  LLVMValueRef panels = LLVMBuildSDiv(b, fc_cg_iadd(k, a->npix, c64(k, 31)), c64(k, 32), "");
  FcLoop lp, lc;
  LLVMValueRef pn = fc_cg_loop_begin(k, &lp, c64(k, 0), panels, 1, "panel");
  a->pcol = fc_cg_imulc(k, pn, 32);
  LLVMValueRef n = fc_cg_isub(k, ct1, ct0);
  LLVMValueRef cp = fc_cg_loop_begin(k, &lc, c64(k, 0), LLVMBuildSDiv(b, n, c64(k, 2), ""), 1, "ctiles");
  amx_block(k, t, a, fc_cg_iadd(k, ct0, fc_cg_imulc(k, cp, 2)), 2);
  fc_cg_loop_end(k, &lc);
  if (odd) {
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntNE, LLVMBuildSRem(b, n, c64(k, 2), ""), c64(k, 0), ""));
    amx_block(k, t, a, fc_cg_isub(k, ct1, c64(k, 1)), 1);
    fc_cg_if_end(k, cont);
  }
  fc_cg_loop_end(k, &lp);
}

/* t's blocking for its dot (t->g, t->q, t->pointwise and t->direct set): kg, KG, MT, NH, wrow, nr, PB and,
 * for the direct build, RB, Rin and Wph. *blocks gets the blocks of one (image, group). With `like`, t takes
 * its pixels (rows) per block instead: the dual kernel's WIDEN variant runs its MADDUBS twin's blocks, so
 * both share the outer iterations (about the same bytes: twice the Col a pixel in twice the budget). */
static void plan_blocks(const FcKernel *k, FcConvI8 *t, bool amx, const FcConvI8 *like, int64_t *blocks) {
  const FcConv2 *c = &t->c;
  t->nr = (int64_t)t->g.nv * t->g.lanes;
  t->kg = t->g.dot == FC_I8DOT_WIDEN ? 2 : 4;
  t->KG = (c->K + t->kg - 1) / t->kg;
  t->MT = t->wide16 ? (c->Mg + t->g.mr - 1) / t->g.mr : (c->Mg + 15) / 16;
  t->NH = ((c->K + 3) / 4 + 15) / 16;
  t->wrow = t->NH * 128;
  if (amx) t->KG = t->NH * 16; /* AMX: whole chunks of k; the rows past K are zx, their weights 0 */
  int64_t per_px = t->KG * 4, ppad = (c->P + t->nr - 1) / t->nr * t->nr;
  /* The interleaved Col of a block stays in L2 (target.c). WIDEN's doubles that budget: its Col takes 2 bytes
   * a k, and each block widens every channel tile once (about 2/PB of the tile's work, measured 5-15% at
   * PB = 16..64), so more pixels a block pay for it; 256 KiB stays well inside the 1-2 MiB L2 of the
   * AVX-512 and recent AVX2 cores this path runs on. */
  t->PB = like ? like->PB : (t->sext ? 2 * t->g.col_bytes : t->g.col_bytes) / per_px / t->nr * t->nr;
  if (t->PB < t->nr) t->PB = t->nr;
  if (t->PB > ppad) t->PB = ppad;
  /* A pointwise conv of small K fits a whole image in one block (MobileNetV2's expand convs: K = 24 at 56x56,
   * 75 KiB), which left the second thread idle; its blocks read x's planes in place, so cutting the pixels
   * into more blocks costs only each block's pass over the weights. Blocks of a few hundred pixels measured
   * faster still (MobileNetV2: 4% less CPU time on AVX2, where the dual kernel's 16-bit path then runs only
   * in the blocks that hold a byte above 0x7f, and 2.5% with VNNI, than at 4 blocks an image). */
  int64_t images = c->N * c->G;
  if (t->pointwise && !amx && !like && images * ((c->P + t->PB - 1) / t->PB) < MIN_OUTER) {
    int64_t want = (MIN_OUTER + images - 1) / images;
    int64_t pb = ((ppad + want - 1) / want + t->nr - 1) / t->nr * t->nr;
    if (pb < MIN_BLOCK_TILES * t->nr) pb = MIN_BLOCK_TILES * t->nr;
    if (pb < t->PB) t->PB = pb;
  }
  *blocks = (c->P + t->PB - 1) / t->PB;
  if (t->direct) {
    /* whole output rows a block, its Col in L2 also for AMX (fc_target_i8_amx_direct_col_bytes): the
     * one-pass build has no per-row set-up to amortise, and more blocks spread over the threads */
    int64_t budget = amx ? fc_target_i8_amx_direct_col_bytes(k->target) : t->sext ? 2 * t->g.col_bytes : t->g.col_bytes;
    int64_t row_col;
    t->RB = like ? like->RB : fc_checked_mul(per_px, c->OW, &row_col) ? budget / row_col : 1;
    if (t->RB < 1) t->RB = 1;
    if (t->RB > c->OH) t->RB = c->OH;
    t->PB = (t->RB * c->OW + t->nr - 1) / t->nr * t->nr;
    *blocks = (c->OH + t->RB - 1) / t->RB;
    t->Rin = (t->RB - 1) * c->sh + (c->KH - 1) * c->dh + 1;
    t->Wph = c->OW + (c->KW - 1) * c->dw / c->sw;
  }
}

/* t's scratch: the Col build's (fc_conv_i8_cols_layout), then WIDEN's widened channel tile (mr rows of
 * NH·128 bytes: 9 KiB for K = 1152 on 4 channels, 36 KiB at K = 4608) at *wide_at, and a chunked Col's
 * flags; *end: the bytes in all. false when a size overflows. */
static bool scratch_layout(FcConvI8 *t, int64_t *wide_at, int64_t *end) {
  int64_t wide_bytes = 0;
  if (!fc_conv_i8_cols_layout(t, wide_at) || ((t->sext || t->chunked) && !fc_checked_mul(t->wrow, t->g.mr, &wide_bytes)) ||
      wide_bytes > INT64_MAX / 2 - *wide_at)
    return false;
  *end = *wide_at + wide_bytes + (t->chunked ? (t->NH + 1 + 63) / 64 * 64 : 0); /* a chunked Col's flags last */
  return true;
}

LLVMValueRef fc_conv_i8_block_narrow(FcKernel *k, const FcConv2 *c, LLVMValueRef xg, LLVMValueRef p0,
                                     LLVMValueRef npix) {
  LLVMBuilderRef b = k->b;
  LLVMValueRef oh0 = LLVMBuildSDiv(b, p0, c64(k, c->OW), "");
  LLVMValueRef oh1 = LLVMBuildSDiv(b, fc_cg_iadd(k, p0, fc_cg_isub(k, npix, c64(k, 1))), c64(k, c->OW), "");
  LLVMValueRef ih0 = fc_cg_smax(k, c64(k, 0), fc_cg_iadd(k, fc_cg_imulc(k, oh0, c->sh), c64(k, -c->ph)));
  LLVMValueRef ih1 = fc_cg_smin(k, c64(k, c->H), fc_cg_iadd(k, fc_cg_imulc(k, oh1, c->sh), c64(k, (c->KH - 1) * c->dh + 1 - c->ph)));
  LLVMValueRef at = fc_cg_imulc(k, ih0, c->W);
  return fc_i8_runs_below_0x80(k, LLVMBuildGEP2(b, LLVMInt8TypeInContext(k->ctx), xg, &at, 1, ""), c64(k, c->Cg),
                               c->H * c->W, fc_cg_imulc(k, fc_cg_smax(k, c64(k, 0), fc_cg_isub(k, ih1, ih0)), c->W));
}

/* The vector tiles of one block on t's dot, its Col built: for each pixel panel every channel tile (the
 * panel's Col stays in L1 while the weights stream), except for WIDEN and a chunked Col (which has WIDEN
 * chunks: vec_block), which widen each channel tile once (widen_tile) and run every panel of the block
 * against it: block -> channel tile -> panels. */
static void vec_tiles(FcKernel *k, const FcConvI8 *t, VecBlock *a) {
  LLVMBuilderRef b = k->b;
  const FcConv2 *c = &t->c;
  LLVMValueRef panels = LLVMBuildSDiv(b, fc_cg_iadd(k, a->npix, c64(k, t->nr - 1)), c64(k, t->nr), "");
  LLVMValueRef ctiles = c64(k, (c->Mg + t->g.mr - 1) / t->g.mr);
  FcLoop lp, lt;
  if (t->sext || t->chunked) {
    LLVMValueRef ct = fc_cg_loop_begin(k, &lt, c64(k, 0), ctiles, 1, "ctile");
    widen_tile(k, t, a, ct);
    LLVMValueRef pn = fc_cg_loop_begin(k, &lp, c64(k, 0), panels, 1, "panel");
    vec_tile(k, t, a, ct, fc_cg_imulc(k, pn, t->nr));
    fc_cg_loop_end(k, &lp);
    fc_cg_loop_end(k, &lt);
  } else {
    LLVMValueRef pn = fc_cg_loop_begin(k, &lp, c64(k, 0), panels, 1, "panel");
    LLVMValueRef ct = fc_cg_loop_begin(k, &lt, c64(k, 0), ctiles, 1, "ctile");
    vec_tile(k, t, a, ct, fc_cg_imulc(k, pn, t->nr));
    fc_cg_loop_end(k, &lt);
    fc_cg_loop_end(k, &lp);
  }
}

/* One block on t's dot: its Col, then its tiles (vec_tiles); a chunked Col whose chunks are all quads runs
 * as plain quads. */
static void vec_block(FcKernel *k, const FcConvI8 *t, VecBlock *a, LLVMValueRef xg, LLVMValueRef blk, LLVMValueRef p0) {
  LLVMBuilderRef b = k->b;
  fc_conv_i8_build_cols(k, t, xg, blk, p0, a->npix);
  a->cols = t->cols;
  if (!t->chunked) {
    vec_tiles(k, t, a);
    return;
  }
  /* a chunked Col: plain quads on vpmaddubsw where no chunk is WIDEN, else its chunks in WIDEN's order */
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  FcConvI8 plain = *t;
  plain.chunked = false;
  plain.kg = 4;
  plain.KG = (t->c.K + 3) / 4;
  LLVMValueRef any = LLVMBuildGEP2(b, i8, t->flags, (LLVMValueRef[]){c64(k, t->NH)}, 1, "");
  LLVMValueRef mixed = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildLoad2(b, i8, any, ""), LLVMConstInt(i8, 0, 0), "");
  LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildNot(b, mixed, ""));
  vec_tiles(k, &plain, a);
  fc_cg_if_end(k, cont);
  cont = fc_cg_if_begin(k, mixed);
  vec_tiles(k, t, a);
  fc_cg_if_end(k, cont);
}

FcStatus fc_conv_i8(FcKernel *k) {
  FcConvI8 t = {0};
  FC_ASSERT(fc_conv2_of(k->op, &t.c));
  const FcConv2 *c = &t.c;
  FcStatus st = fc_qp_init(k, 0, c->K, c->M, &t.q);
  if (st != FC_OK) return st;
  fc_conv_i8_pixel_tile(k->target, c->P, &t.g);
  /* AMX's tdpbsud multiplies s8 weights by u8 Col bytes exactly: 2 x 2 tiles of 16 channels x 16 pixels */
  t.pointwise = c->K == c->Cg && c->sh == 1 && c->sw == 1 && c->OH == c->H && c->OW == c->W;
  t.direct = !t.pointwise && c->K <= DIRECT_MAX_K && c->OW >= 16;
  bool amx = fc_target_i8_amx_worth(k->target, c->Mg, c->K) && t.q.w8;
  if (amx && !t.pointwise && fc_conv_i8_amx_taps_applies(k, &t)) return fc_conv_i8_amx_taps(k, &t);
  if (amx) t.g = (FcI8Gemm){FC_I8DOT_VNNI, 16, 16, 2, fc_target_i8_amx_col_bytes(k->target)};
  /* The dual kernel: vpmaddubsw could saturate on some activations the type admits, but not on 7-bit ones.
   * A block's Col is chunked (cg_conv_i8.h): vpmaddubsw on the chunks of 64 k whose bytes are all below 0x80,
   * the exact WIDEN on the others. The direct build (no byte rows to test) and the pointwise one (x's planes
   * interleaved in place: copying them into rows to test costs more than the few WIDEN blocks save, measured
   * on MobileNetV2's 1x1 convs of K = 16..96) instead run the MADDUBS variant (t) and fix the block's wide
   * pixels up where they are few (kernel_conv_i8_fixup.c), else the WIDEN one (tw) on all of it. */
  bool dual = t.g.dot == FC_I8DOT_MADDUBS && fc_qp_narrow_at_run_time(&t.q);
  if (!t.q.w8 || (t.g.dot == FC_I8DOT_MADDUBS && !dual && !fc_qp_pairs_exact(&t.q))) t.g.dot = FC_I8DOT_WIDEN;
  t.wide16 = !t.q.w8;
  t.sext = t.g.dot == FC_I8DOT_WIDEN && !t.wide16;
  FC_ASSERT(t.g.mr >= 1 && 16 % t.g.mr == 0);
  int w = t.g.lanes, mr = t.g.mr, nv = t.g.nv;
  int64_t blocks, outer, wbytes, wide_at, end, wide_at_w = 0, end_w = 0;
  plan_blocks(k, &t, amx, NULL, &blocks);
  if (dual && !t.direct && !t.pointwise) {
    t.chunked = true;
    t.kg = 2;
    t.KG = 32 * t.NH; /* the widest layout's sizes */
    dual = false;
  }
  FcConvI8 tw = t;
  if (dual) {
    tw.g.dot = FC_I8DOT_WIDEN;
    tw.sext = true;
    plan_blocks(k, &tw, false, &t, &blocks);
  }
  if (!fc_checked_mul(c->N * c->G, blocks, &outer) || !scratch_layout(&t, &wide_at, &end) ||
      (dual && !scratch_layout(&tw, &wide_at_w, &end_w)) ||
      !fc_checked_mul(t.MT * (t.wide16 ? t.KG * mr * 4 : t.NH * 1024), c->G, &wbytes) ||
      wbytes > INT64_MAX / 2 - 8 * c->M) {
    fc_qp_free(&t.q);
    return fc_cg_error(k, FC_ERR_LIMIT, "the im2col blocks are too large");
  }
  /* AMX: a conv of one block in all (a small map of a batch of 1: ResNet-18's at 28x28 and below) is two
   * outer iterations, each half the channel tiles, so 2 threads share it. Both build the block's Col; the
   * second iteration of a task reuses the first's (they are adjacent: the pool's chunks are contiguous), so
   * one thread builds it once, as before. Only where that Col stays in L2 for the second half's tiles
   * (ResNet's 56x56 3x3 convs, 1.8 MB: 3% slower on 1 thread, 10% faster on 2; 14x14: 40% faster on 2). */
  int64_t splits = amx && outer == 1 && t.MT >= 2 && t.col_bytes <= (1 << 20) ? 2 : 1;
  outer *= splits;
  /* the pair patterns follow the packing where they pay on some variant (the same bytes for all); this one
   * reads them where its dot is vpmaddubsw */
  int64_t bytes, pair_bytes = 0;
  uint8_t *pairs = t.wide16 ? NULL : fc_quad_xor_pairs_plan(&t.q, c->G, c->Mg, c->K, &pair_bytes);
  int8_t *pk = pack_weights(&t, wbytes, pairs, pair_bytes, &bytes);
  LLVMValueRef wp = fc_qp_packed_weights(k, &t.q, pk, bytes, wbytes, "packed_w_i8");
  tw.q.zx_base = t.q.zx_base, tw.q.zx_at = t.q.zx_at;
  if (pairs && t.g.dot == FC_I8DOT_MADDUBS)
    t.pair_codes = LLVMBuildGEP2(k->b, LLVMInt8TypeInContext(k->ctx), wp, (LLVMValueRef[]){c64(k, wbytes + 8 * c->M)}, 1,
                                 "pair_codes");
  free(pairs);
  fc_kernel_set_outer(k, outer, 2.0 * (double)c->Mg * (double)c->K * (double)t.PB / (double)splits);

  fc_conv_i8_cols_tables(k, &t);
  if (dual) fc_conv_i8_cols_tables(k, &tw);

  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx);
  /* the variants' scratch layouts overlay each other: a block uses one of them */
  int64_t masks_at = end > end_w ? end : end_w; /* the fix-up's masks of wide pixels: PB / 16 i16 */
  bool fixup = dual; /* (a dual kernel's build is pointwise or direct: the others' Col is chunked) */
  FC_ASSERT(!fixup || (fc_conv_i8_fixup_applies(&t) && t.PB % 16 == 0));
  LLVMValueRef scr = fc_kernel_scratch(k, masks_at + (fixup ? (t.PB / 8 + 63) / 64 * 64 : 0)), cols = scr;
  LLVMValueRef masks = fixup ? LLVMBuildGEP2(b, i8, scr, (LLVMValueRef[]){c64(k, masks_at)}, 1, "wide_masks") : NULL;
  fc_conv_i8_cols_at(k, &t, scr);
  LLVMValueRef wide = LLVMBuildGEP2(b, i8, scr, (LLVMValueRef[]){c64(k, wide_at)}, 1, "wide"), wide_w = NULL;
  if (dual) {
    fc_conv_i8_cols_at(k, &tw, scr);
    wide_w = LLVMBuildGEP2(b, i8, scr, (LLVMValueRef[]){c64(k, wide_at_w)}, 1, "wide_w");
  }
  if (t.chunked) /* scratch_layout put its flags last */
    t.flags = LLVMBuildGEP2(b, i8, scr, (LLVMValueRef[]){c64(k, end - (t.NH + 1 + 63) / 64 * 64)}, 1, "flags");
  LLVMTypeRef vi = LLVMVectorType(i32, (unsigned)w), vb = LLVMVectorType(i8, (unsigned)(4 * w));
  LLVMValueRef acc = fc_cg_tile_new(k, vi, mr * nv, "acc");
  LLVMTypeRef et = t.q.out == FC_DT_F32 ? f32 : i8;
  LLVMValueRef ctile = fc_cg_tile_new(k, et, mr * t.nr, "edge");

  FcLoop lo;
  LLVMValueRef it = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "blk");
  LLVMValueRef split = LLVMBuildSRem(b, it, c64(k, splits), ""), bit = LLVMBuildSDiv(b, it, c64(k, splits), "");
  LLVMValueRef blk = LLVMBuildSRem(b, bit, c64(k, blocks), "");
  LLVMValueRef ng = LLVMBuildSDiv(b, bit, c64(k, blocks), ""); /* n·G + grp */
  LLVMValueRef grp = LLVMBuildSRem(b, ng, c64(k, c->G), "");
  LLVMValueRef p0 = fc_cg_imulc(k, blk, t.direct ? t.RB * c->OW : t.PB);
  LLVMValueRef npix = fc_cg_smin(k, c64(k, t.direct ? t.RB * c->OW : t.PB), fc_cg_isub(k, c64(k, c->P), p0));
  LLVMValueRef xoff = fc_cg_imulc(k, ng, c->Cg * c->H * c->W); /* image n, group grp's first channel */
  LLVMValueRef xg = LLVMBuildGEP2(b, i8, k->in[0], &xoff, 1, "");
  /* y's first element of this (n, grp) for channel ml of the group and pixel p: ybase + ml·P + p */
  LLVMValueRef ybase = fc_cg_iadd(k, fc_cg_imulc(k, ng, c->Mg * c->P), p0);
  if (amx) {
    /* the block's Col is already in the scratch on a task's later channel splits */
    LLVMBasicBlockRef built = fc_cg_if_begin(k, LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntEQ, it, k->begin, ""),
                                                            LLVMBuildICmp(b, LLVMIntEQ, split, c64(k, 0), ""), ""));
    fc_conv_i8_build_cols(k, &t, xg, blk, p0, npix);
    fc_cg_if_end(k, built);
    AmxBlock ab = {.wp = wp, .cols = cols, .grp = grp, .ybase = ybase, .npix = npix, .et = et, .wbytes = wbytes,
                   .ctile = fc_cg_tile_new(k, i32, 4 * 16 * 16, "amx_c"), .edge = fc_cg_tile_new(k, et, 32 * 32, "edge")};
    /* split s of S: channel tiles [s·MT / S, (s + 1)·MT / S) */
    LLVMValueRef ct0 = LLVMBuildSDiv(b, fc_cg_imulc(k, split, t.MT), c64(k, splits), "");
    LLVMValueRef ct1 = LLVMBuildSDiv(b, fc_cg_imulc(k, fc_cg_iadd(k, split, c64(k, 1)), t.MT), c64(k, splits), "");
    bool odd = t.MT % 2 || (splits == 2 && (t.MT / 2) % 2);
    amx_tiles(k, &t, &ab, ct0, ct1, odd);
    fc_cg_loop_end(k, &lo);
    fc_qp_free(&t.q);
    return FC_OK;
  }
  VecBlock vb_ = {.wp = wp, .wide = wide, .acc = acc, .grp = grp, .wgrp = fc_cg_imulc(k, grp, wbytes / c->G),
                  .ybase = ybase, .npix = npix, .edge = ctile, .vi = vi, .vb = vb, .et = et, .wbytes = wbytes};
  if (fixup) {
    /* the Col as quads, its wide pixels marked; at most 1/32 of the block's pixels wide: vpmaddubsw, then
     * those pixels again (kernel_conv_i8_fixup.c); else the Col again as pairs, for WIDEN */
    FcConvI8 tf = t;
    tf.wide_cols = masks;
    fc_conv_i8_build_cols(k, &tf, xg, blk, p0, npix);
    if (t.direct) {
      /* the block's input rows are a smaller pass than its Col (K bytes a pixel): most blocks have no wide
       * byte there, and then no pixel to mark */
      LLVMBuildMemSet(b, masks, LLVMConstInt(i8, 0, 0), c64(k, t.PB / 8), 2);
      LLVMValueRef narrow = fc_conv_i8_block_narrow(k, c, xg, p0, npix);
      LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildNot(b, narrow, ""));
      fc_conv_i8_mark_wide_quads(k, &tf);
      fc_cg_if_end(k, cont);
    }
    LLVMValueRef nwide = fc_conv_i8_count_wide_pixels(k, &tf);
    LLVMValueRef few = LLVMBuildICmp(b, LLVMIntSLE, fc_cg_imulc(k, nwide, 32), npix, "few_wide");
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, few);
    vb_.cols = tf.cols;
    vec_tiles(k, &tf, &vb_);
    LLVMBasicBlockRef fixed = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntSGT, nwide, c64(k, 0), ""));
    LLVMValueRef yoff = fc_cg_imulc(k, ng, c->Mg * c->P);
    FcConvI8Fixup fx = {.wp = wp, .wbytes = wbytes, .grp = grp, .et = et,
                        .yb = LLVMBuildGEP2(b, et, k->out[0], &yoff, 1, "")};
    fc_conv_i8_fix_wide_pixels(k, &tf, &fx, p0);
    fc_cg_if_end(k, fixed);
    fc_cg_if_end(k, cont);
    cont = fc_cg_if_begin(k, LLVMBuildNot(b, few, ""));
    vb_.wide = wide_w;
    vec_block(k, &tw, &vb_, xg, blk, p0);
    fc_cg_if_end(k, cont);
  } else {
    vec_block(k, &t, &vb_, xg, blk, p0);
  }
  fc_cg_loop_end(k, &lo);
  fc_qp_free(&t.q);
  return FC_OK;
}
