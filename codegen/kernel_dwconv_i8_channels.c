/* kernel_dwconv_i8_channels.c — the quantised depthwise conv of kernel_dwconv_i8.c (group == C == M) with 8
 * channels in the i32 lanes, for the small maps and (AVX2) the stride-2 rows where that kernel's pixel vectors
 * cost the most: targets whose integer dot is vpmaddwd on tap pairs (AVX2, AVX-512 without VNNI).
 *
 * Vectors of a plane's pixels pay per plane for its copy, its pair plane, the broadcast weights and a row's
 * partial vector: on a 7x7 or 14x14 map that is most of the work. Here a vector holds one output pixel of 8 channels, as the f32 blocked
 * kernel's does, and the layout change happens inside the kernel. One outer iteration is (image, block of 8
 * channels; the last block starts at C - 8 and recomputes what the one before wrote, identically):
 *   1. the 8 input planes are transposed into the task's byte plane T[Hp][Wp][8] (a pixel's 8 channel bytes
 *      side by side) by 8x8 byte transposes of 8 columns of a row; its padding holds zx (the real 0, as in
 *      kernel_dwconv_i8.c), written once per call, since each block rewrites only the image's pixels;
 *   2. the pair plane P[Hp][Wq] of <8 x i32>: lane c of column j holds the 16-bit pair
 *      (x_c[r][j·sw], x_c[r][j·sw + dw]) (an i8 x sign-extended): the taps kw, kw + 1 of output column
 *      j - kw·dw/sw. A pair's first tap kw = 2i is an even column offset, so with stride 2 only the even
 *      columns are built;
 *   3. 4 output pixels at a time: per tap pair one vpmaddwd of a P vector (a memory operand) with the 8
 *      channels' weight pairs (an odd last tap meets weight 0), requantised together (4 vectors packed into 32
 *      bytes: fc_qp_finish_packed; an f32 result or an epilogue vector by vector) into the output plane
 *      O[OH·OW][8]; a row's last step moves back to end at the row's end;
 *   4. O is transposed back into the 8 output planes by 8x8 transposes (of bytes, or of floats) of 8
 *      consecutive pixels (the last moves back to end at the plane's end).
 * The arithmetic is kernel_dwconv_i8.c's pair plane path's (the same i32 sums, the same requantisation), so
 * the two give the same bytes. The quantised flow.conv_blocked of passes/layout_i8.c (block 8, NCHW8c bytes:
 * a block's plane is [H][W][8], T without its padding, and [OH][OW][8], O itself) runs the same steps with
 * step 1 a copy of the block plane's rows (or the transposes, where its input is still NCHW), step 3 storing
 * into the result's block plane and no step 4.
 */
#include <stdlib.h>

#include "cg_conv_i8.h"

enum {
  LANES = 8,             /* channels per vector (i32 lanes of a ymm) */
  STEP = 4,              /* output pixels per step: 4 vectors requantised and packed together */
  MAX_ROW_8 = 28,        /* the widest output row taken at stride 1 where pixel vectors have 8 lanes */
  MAX_TAPS = 81,         /* fc_target_i8_depthwise's bound */
  MAX_SCRATCH = 1 << 20, /* T, P and O in each task's scratch */
};

typedef struct DwCh {
  FcConv2 c;
  int64_t rpairs, npairs; /* tap pairs per kernel row, in all */
  int64_t Hp, Wp, Wq;     /* the padded byte plane (pixels) and the pair plane's columns */
  int64_t t_bytes, p_bytes, o_bytes;
  int es;                 /* the result's element bytes: 1 (u8/i8) or 4 (f32) */
  bool x_blocked, y_blocked; /* NCHW8c input, result (a quantised flow.conv_blocked of block 8) */
} DwCh;

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

static bool geometry(const FcKernel *k, const FcQuantProduct *q, DwCh *d) {
  FcConv2 *c = &d->c;
  if (!fc_conv2_of(k->op, c) || c->G != c->C || c->Cg != 1 || c->M != c->C || c->C < LANES) return false;
  d->y_blocked = k->op->kind == FC_OP_CONV_BLOCKED;
  d->x_blocked = d->y_blocked && k->op->operands[0].value->type.rank == 5;
  if (d->y_blocked && (c->C % LANES || k->op->results[0].type.dims[4] != LANES)) return false;
  int64_t taps;
  if (c->sw < 1 || c->sw > 2 || c->sh < 1 || c->dh < 1 || c->dw < 1 || c->ph < 0 ||
      c->pw < 0 || !fc_checked_mul(c->KH, c->KW, &taps) || taps > MAX_TAPS)
    return false;
  /* the transposes' and the steps' reach: rows of 4 pixels or more, planes of 8 */
  if (c->W < 4 || c->OW < STEP || c->H * c->W < LANES || c->P < LANES) return false;
  FcI8Gemm g;
  fc_target_i8_gemm(k->target, &g);
  if (g.dot == FC_I8DOT_NONE || fc_target_i8_byte_permute(k->target) || fc_target_i8_pack_lanes(k->target) == 0)
    return false;
  d->rpairs = (c->KW + 1) / 2;
  d->npairs = c->KH * d->rpairs;
  /* Where this kernel beats the pixel vectors (both timed per layer on MobileNet's and EfficientNet's maps):
   * rows of at most 8 outputs, which the pixel kernel runs on 8 lanes; with vectors of 8 pixels (AVX2) also
   * rows of up to 28 outputs at stride 1 and rows of any width at stride 2, where the pixel vectors gather
   * every other byte of two loads per tap pair and this kernel builds its pair plane for the even columns
   * only (whatever fits the scratch: MobileNetV2's 112x112 and 56x56 maps, and the 33x33, 38x38, 75x75 and
   * 150x150 that other input sizes give, all measured faster; at stride 1 the pixel kernel keeps rows from
   * 29 on), for filters of any size: beyond 3x3 the weight pairs no longer stay in registers beside the 4
   * pixels' accumulators, but their reloads from the stack cost less than the pixel kernel's per-tap work
   * (5x5, 7x7 and 9x9 filters measured 1.1-2x faster on Zen 4, stride 2 the most). */
  bool wide_ok = g.lanes <= LANES;
  if (c->OW > (!wide_ok ? LANES : c->sw == 1 ? MAX_ROW_8 : MAX_SCRATCH)) return false;
  /* OW and the dilation are bounded, and so Wq and Wp; heights are checked. */
  int64_t span_h, need_h;
  if (c->dw > MAX_SCRATCH || c->pw > MAX_SCRATCH || c->ph > MAX_SCRATCH || c->H > MAX_SCRATCH || c->W > MAX_SCRATCH ||
      !fc_checked_mul(c->KH - 1, c->dh, &span_h) || !fc_checked_mul(c->OH - 1, c->sh, &need_h) ||
      span_h > MAX_SCRATCH || need_h > MAX_SCRATCH)
    return false;
  d->Wq = c->OW + (d->rpairs - 1) * 2 * c->dw / c->sw;
  d->Wp = (d->Wq - 1) * c->sw + c->dw + 1; /* the last pair's second tap (weight 0 when KW is odd) */
  if (d->Wp < c->pw + c->W) d->Wp = c->pw + c->W;
  d->Hp = need_h + span_h + 1;
  if (d->Hp < c->ph + c->H) d->Hp = c->ph + c->H;
  int64_t px, pq;
  if (!fc_checked_mul(d->Hp, d->Wp, &px) || !fc_checked_mul(d->Hp, d->Wq, &pq) || px > MAX_SCRATCH ||
      pq > MAX_SCRATCH)
    return false;
  d->t_bytes = px * LANES;
  d->p_bytes = pq * LANES * 4;
  d->es = q->out == FC_DT_F32 ? 4 : 1;
  d->o_bytes = d->y_blocked ? 0 : c->P * LANES * d->es;
  return d->t_bytes + d->p_bytes + d->o_bytes <= MAX_SCRATCH;
}

bool fc_conv_dw_i8_channels_applies(const FcKernel *k, const FcQuantProduct *q) {
  DwCh d;
  return geometry(k, q, &d);
}

/* [npairs][C] i32 weight pairs (the first tap in the low 16 bits) | corr: i32 × C | mult: f32 × C; the
 * corrections for x read in its storage type (sign-extended when i8, as kernel_dwconv_i8.c's pack). */
static int32_t *pack(const DwCh *d, const FcQuantProduct *q, int64_t *bytes) {
  const FcConv2 *c = &d->c;
  int64_t words = (d->npairs + 2) * c->C;
  *bytes = words * 4;
  int32_t *pk = calloc((size_t)words, 4);
  if (!pk) fc_die(__FILE__, __LINE__, "out of memory");
  int32_t *corr = pk + d->npairs * c->C;
  float *mult = (float *)(corr + c->C);
  for (int64_t m = 0; m < c->C; m++) {
    int64_t wsum = 0;
    for (int64_t kh = 0; kh < c->KH; kh++)
      for (int64_t kw = 0; kw < c->KW; kw++) {
        int16_t v = q->w[(m * c->KH + kh) * c->KW + kw];
        wsum += v;
        uint32_t *word = (uint32_t *)&pk[(kh * d->rpairs + kw / 2) * c->C + m];
        *word |= (uint32_t)(uint16_t)v << (16 * (kw % 2));
      }
    corr[m] = (int32_t)(uint32_t)(uint64_t)((int64_t)q->corr[m] + (q->flip ? 128 * wsum : 0));
    mult[m] = q->mult[m];
  }
  return pk;
}

/* The 8x8 byte matrix rows[0 .. 8) (<8 x i8> each) transposed: out[i] (<16 x i8>) holds its rows 2i, 2i + 1.
 * Three rounds of interleaves (bytes, then 16-bit and 32-bit pieces): punpckl/h on the target. */
static void transpose8x8(FcKernel *k, LLVMValueRef *rows, LLVMValueRef *out) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef v16 = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), 8);
  LLVMTypeRef v32 = LLVMVectorType(LLVMInt32TypeInContext(k->ctx), 4);
  LLVMTypeRef v8 = LLVMVectorType(LLVMInt8TypeInContext(k->ctx), 16);
  int lo8[16], lo[8], hi[8], lo4[4], hi4[4];
  for (int i = 0; i < 8; i++) lo8[2 * i] = i, lo8[2 * i + 1] = 8 + i;
  for (int i = 0; i < 4; i++) lo[2 * i] = i, lo[2 * i + 1] = 8 + i, hi[2 * i] = 4 + i, hi[2 * i + 1] = 12 + i;
  for (int i = 0; i < 2; i++) lo4[2 * i] = i, lo4[2 * i + 1] = 4 + i, hi4[2 * i] = 2 + i, hi4[2 * i + 1] = 6 + i;
  LLVMValueRef s1[4], s2[4];
  for (int i = 0; i < 4; i++) /* rows 2i, 2i + 1 byte by byte: column j's pair at bytes 2j, 2j + 1 */
    s1[i] = LLVMBuildBitCast(b, fc_cg_shuffle(k, rows[2 * i], rows[2 * i + 1], lo8, 16), v16, "");
  for (int i = 0; i < 2; i++) { /* columns 0-3 (lo) and 4-7 (hi) of rows 4i .. 4i + 3 */
    s2[2 * i] = LLVMBuildBitCast(b, fc_cg_shuffle(k, s1[2 * i], s1[2 * i + 1], lo, 8), v32, "");
    s2[2 * i + 1] = LLVMBuildBitCast(b, fc_cg_shuffle(k, s1[2 * i], s1[2 * i + 1], hi, 8), v32, "");
  }
  for (int h = 0; h < 2; h++) { /* columns 4h .. 4h + 3 of all 8 rows, two columns a vector */
    out[2 * h] = LLVMBuildBitCast(b, fc_cg_shuffle(k, s2[h], s2[2 + h], lo4, 4), v8, "");
    out[2 * h + 1] = LLVMBuildBitCast(b, fc_cg_shuffle(k, s2[h], s2[2 + h], hi4, 4), v8, "");
  }
}

static LLVMValueRef load_bytes(FcKernel *k, unsigned n, LLVMValueRef base, LLVMValueRef at) {
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef v = LLVMBuildLoad2(k->b, LLVMVectorType(i8, n), LLVMBuildGEP2(k->b, i8, base, &at, 1, ""), "");
  LLVMSetAlignment(v, 1);
  return v;
}

/* <8 x i32> at i32 index `at` of the packed constant. */
static LLVMValueRef load_words(FcKernel *k, LLVMValueRef base, LLVMValueRef at) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMValueRef v = LLVMBuildLoad2(k->b, LLVMVectorType(i32, LANES), LLVMBuildGEP2(k->b, i32, base, &at, 1, ""), "");
  LLVMSetAlignment(v, 4);
  return v;
}

static void store_bytes(FcKernel *k, LLVMValueRef v, LLVMValueRef base, LLVMValueRef at) {
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMSetAlignment(LLVMBuildStore(k->b, v, LLVMBuildGEP2(k->b, i8, base, &at, 1, "")), 1);
}

/* Step 1 for 8 columns of input row `ih` read from column j0 of the 8 planes at `xb` (plane stride H·W):
 * columns first .. first + count - 1 of the 8 read land in T at column pw + j0 + first of row ph + ih. */
static void transpose_in(FcKernel *k, const DwCh *d, LLVMValueRef xb, LLVMValueRef tp, LLVMValueRef ih,
                         LLVMValueRef j0, int first, int count) {
  const FcConv2 *c = &d->c;
  LLVMValueRef rows[8], out[4];
  LLVMValueRef src = fc_cg_iadd(k, fc_cg_imulc(k, ih, c->W), j0);
  for (int ch = 0; ch < 8; ch++) rows[ch] = load_bytes(k, 8, xb, fc_cg_iadd(k, src, c64(k, ch * c->H * c->W)));
  transpose8x8(k, rows, out);
  LLVMValueRef all = fc_cg_concat(k, out, 4); /* <64 x i8>: column i's 8 channel bytes at 8i */
  LLVMValueRef col = fc_cg_iadd(k, j0, c64(k, c->pw + first));
  LLVMValueRef dst = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, ih, c64(k, c->ph)), d->Wp), col), LANES);
  if (first == 0 && count == 8) {
    store_bytes(k, all, tp, dst);
    return;
  }
  int idx[64];
  for (int i = 0; i < 64; i++) idx[i] = (8 * first + i) % 64;
  LLVMValueRef to = LLVMBuildGEP2(k->b, LLVMInt8TypeInContext(k->ctx), tp, &dst, 1, "");
  fc_cg_store_prefix(k, fc_cg_shuffle(k, all, NULL, idx, 64), to, (unsigned)(8 * count));
}

/* Step 1: the block's 8 input planes (at xb) into T. Rows of 8 columns or more take whole 8-column groups, the
 * last moved back to end at the row's end; narrower rows (4 to 7: MobileNet's 7x7 maps) read 8 bytes that
 * end at the row's end (the first row: that start there), which stay inside the plane. */
static void build_t(FcKernel *k, const DwCh *d, LLVMValueRef xb, LLVMValueRef tp) {
  const FcConv2 *c = &d->c;
  FcLoop lr, lj;
  int64_t W = c->W;
  if (W < 8) {
    transpose_in(k, d, xb, tp, c64(k, 0), c64(k, 0), 0, (int)W);
    if (c->H > 1) {
      LLVMValueRef ih = fc_cg_loop_begin(k, &lr, c64(k, 1), c64(k, c->H), 1, "tr");
      /* bytes [W - 8, W) of row ih: its columns sit at 8 - W .. 7 of the 8 */
      transpose_in(k, d, xb, tp, ih, c64(k, W - 8), (int)(8 - W), (int)W);
      fc_cg_loop_end(k, &lr);
    }
    return;
  }
  LLVMValueRef ih = fc_cg_loop_begin(k, &lr, c64(k, 0), c64(k, c->H), 1, "tr");
  LLVMValueRef j0 = fc_cg_loop_begin(k, &lj, c64(k, 0), c64(k, W / 8 * 8), 8, "tj");
  transpose_in(k, d, xb, tp, ih, j0, 0, 8);
  fc_cg_loop_end(k, &lj);
  if (W % 8) transpose_in(k, d, xb, tp, ih, c64(k, W - 8), 0, 8);
  fc_cg_loop_end(k, &lr);
}

/* Step 1 from a blocked input (xb: the block's plane, [H][W][8]): its rows copied. */
static void copy_rows(FcKernel *k, const DwCh *d, LLVMValueRef xb, LLVMValueRef tp) {
  const FcConv2 *c = &d->c;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  FcLoop lr;
  LLVMValueRef ih = fc_cg_loop_begin(k, &lr, c64(k, 0), c64(k, c->H), 1, "tr");
  LLVMValueRef src = fc_cg_imulc(k, ih, c->W * LANES);
  LLVMValueRef row = fc_cg_imulc(k, fc_cg_iadd(k, ih, c64(k, c->ph)), d->Wp);
  LLVMValueRef dst = fc_cg_imulc(k, fc_cg_iadd(k, row, c64(k, c->pw)), LANES);
  LLVMBuildMemCpy(k->b, LLVMBuildGEP2(k->b, i8, tp, &dst, 1, ""), 1, LLVMBuildGEP2(k->b, i8, xb, &src, 1, ""), 1,
                  c64(k, c->W * LANES));
  fc_cg_loop_end(k, &lr);
}

/* Step 2: P from T, every row. */
static void build_pairs(FcKernel *k, const DwCh *d, const FcQuantProduct *q, LLVMValueRef tp, LLVMValueRef pp) {
  const FcConv2 *c = &d->c;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef v16 = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), 16);
  int mix[16];
  for (int i = 0; i < 8; i++) mix[2 * i] = i, mix[2 * i + 1] = 8 + i;
  FcLoop lr, lj;
  LLVMValueRef r = fc_cg_loop_begin(k, &lr, c64(k, 0), c64(k, d->Hp), 1, "pr");
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(k, 0), c64(k, d->Wq), 1, "pj");
  LLVMValueRef at = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, r, d->Wp), fc_cg_imulc(k, j, c->sw)), LANES);
  /* pixel j's 8 channel bytes, then pixel j + dw's, interleaved channel by channel */
  LLVMValueRef pair;
  if (c->dw == 1) {
    pair = fc_cg_shuffle(k, load_bytes(k, 16, tp, at), NULL, mix, 16);
  } else {
    LLVMValueRef second = load_bytes(k, 8, tp, fc_cg_iadd(k, at, c64(k, c->dw * LANES)));
    pair = fc_cg_shuffle(k, load_bytes(k, 8, tp, at), second, mix, 16);
  }
  pair = q->flip ? LLVMBuildSExt(b, pair, v16, "") : LLVMBuildZExt(b, pair, v16, "");
  store_bytes(k, LLVMBuildBitCast(b, pair, LLVMVectorType(LLVMInt8TypeInContext(k->ctx), 32), ""), pp,
              fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, r, d->Wq), j), LANES * 4));
  fc_cg_loop_end(k, &lj);
  fc_cg_loop_end(k, &lr);
}

typedef struct ChCtx {
  FcKernel *k;
  const DwCh *d;
  const FcQuantProduct *q;
  LLVMValueRef w[2 * MAX_TAPS]; /* the block's weight pairs, <8 x i32> */
  int64_t poff[2 * MAX_TAPS];   /* pair p's offset in P (vectors) from the output pixel's first pair */
  LLVMValueRef corr, mult;      /* the block's, <8 x i32> and <8 x float> */
} ChCtx;

/* Step 3 for output pixels ox0 .. ox0 + 3 of row oy: into O at (oy·OW + ox0)·8. */
static void emit_step(ChCtx *x, LLVMValueRef pp, LLVMValueRef op, LLVMValueRef oy, LLVMValueRef ox0) {
  FcKernel *k = x->k;
  const DwCh *d = x->d;
  const FcConv2 *c = &d->c;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx), vi = LLVMVectorType(i32, LANES);
  LLVMValueRef row = fc_cg_iadd(k, fc_cg_imulc(k, oy, c->sh * d->Wq), ox0);
  LLVMValueRef acc[STEP], corr[STEP], mult[STEP];
  for (int u = 0; u < STEP; u++) {
    acc[u] = LLVMConstNull(vi);
    corr[u] = x->corr, mult[u] = x->mult;
    for (int64_t p = 0; p < d->npairs; p++) {
      LLVMValueRef at = fc_cg_iadd(k, row, c64(k, x->poff[p] + u));
      LLVMValueRef v = LLVMBuildLoad2(b, vi, LLVMBuildGEP2(b, vi, pp, &at, 1, ""), "");
      LLVMSetAlignment(v, 32);
      acc[u] = fc_i8_dot(k, FC_I8DOT_WIDEN, LANES, acc[u], v, x->w[p]);
    }
  }
  LLVMValueRef out = d->es == 1 ? fc_qp_finish_packed(k, x->q, acc, STEP, corr, mult) : NULL;
  if (!out) {
    LLVMValueRef parts[STEP];
    for (int u = 0; u < STEP; u++) parts[u] = fc_qp_finish(k, x->q, acc[u], corr[u], mult[u]);
    out = fc_cg_concat(k, parts, STEP);
  }
  store_bytes(k, out, op, fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, oy, c->OW), ox0), LANES * d->es));
}

/* The 8x8 f32 matrix rows[0 .. 8) transposed into out[0 .. 8): unpcklps/unpckhps, shufps, vperm2f128. */
static void transpose8x8_f32(FcKernel *k, LLVMValueRef *rows, LLVMValueRef *out) {
  static const int ulo[8] = {0, 8, 1, 9, 4, 12, 5, 13}, uhi[8] = {2, 10, 3, 11, 6, 14, 7, 15};
  static const int slo[8] = {0, 1, 8, 9, 4, 5, 12, 13}, shi[8] = {2, 3, 10, 11, 6, 7, 14, 15};
  static const int plo[8] = {0, 1, 2, 3, 8, 9, 10, 11}, phi[8] = {4, 5, 6, 7, 12, 13, 14, 15};
  LLVMValueRef t[8], u[8];
  for (int i = 0; i < 4; i++) { /* rows 2i, 2i + 1 interleaved: columns 0, 1, 4, 5 (lo) and 2, 3, 6, 7 (hi) */
    t[2 * i] = fc_cg_shuffle(k, rows[2 * i], rows[2 * i + 1], ulo, 8);
    t[2 * i + 1] = fc_cg_shuffle(k, rows[2 * i], rows[2 * i + 1], uhi, 8);
  }
  for (int h = 0; h < 2; h++) /* rows 4h .. 4h + 3 of column j in lanes 0-3 and of column j + 4 in lanes 4-7 */
    for (int j = 0; j < 2; j++) {
      u[4 * h + 2 * j] = fc_cg_shuffle(k, t[4 * h + j], t[4 * h + 2 + j], slo, 8);
      u[4 * h + 2 * j + 1] = fc_cg_shuffle(k, t[4 * h + j], t[4 * h + 2 + j], shi, 8);
    }
  for (int j = 0; j < 4; j++) {
    out[j] = fc_cg_shuffle(k, u[j], u[4 + j], plo, 8);
    out[j + 4] = fc_cg_shuffle(k, u[j], u[4 + j], phi, 8);
  }
}

/* Step 4: 8 pixels of O from pixel f into the 8 output planes at yb (plane stride OH·OW elements). */
static void transpose_out(FcKernel *k, const DwCh *d, LLVMValueRef op, LLVMValueRef yb, LLVMValueRef f) {
  LLVMValueRef rows[8], out[8];
  if (d->es == 4) {
    LLVMTypeRef vf = LLVMVectorType(LLVMFloatTypeInContext(k->ctx), 8);
    for (int i = 0; i < 8; i++) {
      LLVMValueRef at = fc_cg_imulc(k, fc_cg_iadd(k, f, c64(k, i)), LANES * 4);
      rows[i] = LLVMBuildLoad2(k->b, vf, LLVMBuildGEP2(k->b, LLVMInt8TypeInContext(k->ctx), op, &at, 1, ""), "");
      LLVMSetAlignment(rows[i], 32);
    }
    transpose8x8_f32(k, rows, out);
    for (int ch = 0; ch < 8; ch++)
      store_bytes(k, out[ch], yb, fc_cg_imulc(k, fc_cg_iadd(k, f, c64(k, ch * d->c.P)), 4));
    return;
  }
  for (int i = 0; i < 8; i++) rows[i] = load_bytes(k, 8, op, fc_cg_imulc(k, fc_cg_iadd(k, f, c64(k, i)), LANES));
  transpose8x8(k, rows, out);
  int lo[8], hi[8];
  for (int i = 0; i < 8; i++) lo[i] = i, hi[i] = 8 + i;
  for (int ch = 0; ch < 8; ch++) {
    LLVMValueRef v = fc_cg_shuffle(k, out[ch / 2], NULL, ch % 2 ? hi : lo, 8);
    store_bytes(k, v, yb, fc_cg_iadd(k, f, c64(k, ch * d->c.P)));
  }
}

FcStatus fc_conv_dw_i8_channels(FcKernel *k, FcQuantProduct *q) {
  DwCh d;
  FC_ASSERT(geometry(k, q, &d));
  const FcConv2 *c = &d.c;
  int64_t bytes;
  int32_t *pk = pack(&d, q, &bytes);
  LLVMValueRef wp = fc_qp_packed_weights(k, q, pk, bytes, 0, "packed_dw_i8c");
  int64_t blocks = (c->C + LANES - 1) / LANES;
  fc_kernel_set_outer(k, c->N * blocks, (2.0 * (double)(c->KH * c->KW) + 4.0) * (double)c->P * LANES);
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMTypeRef vf = LLVMVectorType(LLVMFloatTypeInContext(k->ctx), LANES);
  /* scratch: P and O (32-byte vectors, so first), then T */
  LLVMValueRef pp = fc_kernel_scratch(k, d.p_bytes + d.t_bytes + d.o_bytes);
  LLVMValueRef op = LLVMBuildGEP2(b, i8, pp, (LLVMValueRef[]){c64(k, d.p_bytes)}, 1, "o");
  LLVMValueRef tp = LLVMBuildGEP2(b, i8, op, (LLVMValueRef[]){c64(k, d.o_bytes)}, 1, "t");
  LLVMBuildMemSet(b, tp, fc_qp_zx_byte(k, q, true), c64(k, d.t_bytes), 16); /* the padding: zx in x's storage type */
  ChCtx x = {.k = k, .d = &d, .q = q};
  for (int64_t kh = 0; kh < c->KH; kh++)
    for (int64_t i = 0; i < d.rpairs; i++) x.poff[kh * d.rpairs + i] = kh * c->dh * d.Wq + 2 * i * c->dw / c->sw;

  FcLoop lo;
  LLVMValueRef it = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "blk"); /* n·blocks + block */
  LLVMValueRef n = LLVMBuildUDiv(b, it, c64(k, blocks), "n");
  LLVMValueRef blk = LLVMBuildURem(b, it, c64(k, blocks), "");
  LLVMValueRef c0 = fc_cg_smin(k, fc_cg_imulc(k, blk, LANES), c64(k, c->C - LANES));
  LLVMValueRef plane0 = fc_cg_iadd(k, fc_cg_imulc(k, n, c->C), c0);
  LLVMValueRef xb = LLVMBuildGEP2(b, i8, k->in[0], (LLVMValueRef[]){fc_cg_imulc(k, plane0, c->H * c->W)}, 1, "");
  LLVMValueRef yb = LLVMBuildGEP2(b, i8, k->out[0], (LLVMValueRef[]){fc_cg_imulc(k, plane0, c->P * d.es)}, 1, "");
  if (d.x_blocked) copy_rows(k, &d, xb, tp);
  else build_t(k, &d, xb, tp);
  if (d.y_blocked) op = yb; /* the block's result plane is O itself */
  build_pairs(k, &d, q, tp, pp);
  for (int64_t p = 0; p < d.npairs; p++)
    x.w[p] = load_words(k, wp, fc_cg_iadd(k, c64(k, p * c->C), c0));
  x.corr = load_words(k, wp, fc_cg_iadd(k, c64(k, d.npairs * c->C), c0));
  x.mult = LLVMBuildBitCast(b, load_words(k, wp, fc_cg_iadd(k, c64(k, (d.npairs + 1) * c->C), c0)), vf, "");
  FcLoop ly, lx;
  LLVMValueRef oy = fc_cg_loop_begin(k, &ly, c64(k, 0), c64(k, c->OH), 1, "oy");
  LLVMValueRef ox = fc_cg_loop_begin(k, &lx, c64(k, 0), c64(k, c->OW / STEP * STEP), STEP, "ox");
  emit_step(&x, pp, op, oy, ox);
  fc_cg_loop_end(k, &lx);
  if (c->OW % STEP) emit_step(&x, pp, op, oy, c64(k, c->OW - STEP));
  fc_cg_loop_end(k, &ly);
  if (d.y_blocked) {
    fc_cg_loop_end(k, &lo);
    return FC_OK;
  }
  FcLoop lf;
  LLVMValueRef f = fc_cg_loop_begin(k, &lf, c64(k, 0), c64(k, c->P / 8 * 8), 8, "of");
  transpose_out(k, &d, op, yb, f);
  fc_cg_loop_end(k, &lf);
  if (c->P % 8) transpose_out(k, &d, op, yb, c64(k, c->P - 8));
  fc_cg_loop_end(k, &lo);
  return FC_OK;
}

FcStatus fc_conv_dw_i8_blocked(FcKernel *k) {
  FcConv2 c;
  char why[160] = "";
  if (!fc_conv2_of(k->op, &c) || !fc_qp_applies(k->op, 0, why, sizeof why))
    return fc_cg_error(k, FC_ERR_UNSUPPORTED, "no kernel for this quantised conv_blocked%s%s", *why ? ": " : "", why);
  FcQuantProduct q;
  FcStatus st = fc_qp_init(k, 0, c.KH * c.KW, c.M, &q);
  if (st != FC_OK) return st;
  if (fc_conv_dw_i8_channels_applies(k, &q)) st = fc_conv_dw_i8_channels(k, &q);
  else
    st = fc_cg_error(k, FC_ERR_UNSUPPORTED,
                     "no kernel for this quantised depthwise conv_blocked: the channel-lane kernel needs a target "
                     "with the 8-lane 16-bit dot, blocks of 8 channels, strides 1 or 2, at most 81 taps and rows "
                     "of 4 to 28 outputs (any width at stride 2)");
  fc_qp_free(&q);
  return st;
}
