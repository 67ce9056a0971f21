/* kernel_dwconv_i8.c — the quantised flow.conv of qspec §2 when it is depthwise (group == C, one input channel
 * per group, M = C · multiplier), 1-D and 2-D NCHW, on x86's integer SIMD.
 *
 * A depthwise conv reuses nothing across channels, so the integer GEMM (kernel_conv_i8.c) has no channel tile
 * to fill; this kernel vectorises over the output pixels of a row instead, as the f32 one (kernel_dwconv.c)
 * does. One outer iteration is one output plane (image n, channel m, reading input channel m / multiplier):
 *   1. the input plane is copied into a padded byte plane in the task's scratch: ph rows above, pw columns to
 *      the left and whatever the taps of the last vectors reach to the right and below hold zx (the real 0),
 *      so every tap is an in-bounds read, the borders run the same code as the interior, and the folded
 *      zero-point correction stays exact (acc = Σ x·w' + corr; a padding tap adds zx·w', which corr already
 *      subtracts). The padding bytes never change, so they are written once per kernel call (one memset)
 *      and each task copies only its H input rows;
 *   2. (stride 1) the byte plane becomes a pair plane: P[r][j] holds the 16-bit pair (x[r][j], x[r][j + dw])
 *      in one i32 — the inputs of two horizontally adjacent taps (kw, kw + 1) of output column j - kw·dw —
 *      built with vector loads and widening once per input pixel instead of once per tap;
 *   3. each output row is computed nv vectors of `lanes` pixels at a time, in i32 lanes, with vpmaddwd on
 *      pairs of taps against the pair's weights (w'_a, w'_b) broadcast as an i32: exact for every w' in
 *      [-255, 255] and 8-bit x (an i8 x is sign-extended to 16 bits, so the correction folds its own zero
 *      point: no flip). Stride 1 pairs (kh, kw, kw + 1) of a kernel row: one load of P at a constant offset
 *      and one vpmaddwd per pair, an odd last kw paired with weight 0. Larger strides would build the pair
 *      plane from sw times as many input pixels as there are outputs (measured slower at stride 2), so they
 *      pair consecutive taps t, t + 1 straight from the byte plane: two loads of sw·lanes bytes and one
 *      shuffle that keeps every sw-th byte of each and interleaves them (an odd last tap meets weight 0);
 *   4. the i32 vectors are requantised (cg_requant.h: correction, multiplier, rne, clamp, zero point) and
 *      stored as bytes; a row's partial last step stores whole vectors too when the excess lands in the
 *      plane's next row (rewritten right after), else it goes through fc_qp_store_tile's stack tile.
 * Rows of at most 8 output pixels use 8 lanes even where the target has 16. Small maps and, with AVX2, strided
 * rows of any width (channel multiplier 1) go to kernel_dwconv_i8_channels.c instead, which puts 8 channels in
 * the lanes.
 * The packed constant holds per channel the weight pairs as i32 words, then the corrections and multipliers.
 *
 * On AVX512-VNNI targets (fc_target_i8_byte_permute) the pair planes give way to quads of taps gathered from
 * bytes: with s8 weights (every w' in [-128, 127]) and x in its u8 view (an i8 x flipped by one xor after the
 * gather, so the u8 view's correction applies), vpdpbusd adds four exact products per i32 lane, 3 instructions
 * for a 3x3 filter where vpmaddwd takes 6 and an add each. Lane i of the quad vector for kernel row kh and
 * quad qi holds the bytes of taps 4qi .. 4qi + 3 of its output pixel (a tap past the row repeats tap 4qi and
 * meets weight 0): one vpermb from a 64-byte window (vpermt2b from 128; without VBMI a vpermd gives each
 * 128-bit lane the 16 bytes its 4 pixels read and a vpshufb picks them). A block of R vectors (R output rows
 * of 16 pixels, or of whole rows when they are at most 4 wide) gathers each input row's quads once for every
 * output row that reads them (stride 1, 3x3, R = 4: 6 gathers for 12 products); the correction is the
 * accumulator's start. The last block of a plane and the last column step of a row move back to end at the
 * plane's last row and the row's end (recomputing a few outputs, identically), so every store is whole; only
 * vectors narrower than 16 pixels store under a constant mask. The windows come from the padded plane of
 * step 1, or, for strided convs and rows of one vector (where the copy costs most per output), straight from
 * x: plain loads inside it and loads under a mask at its borders, whose masked-off bytes read zx.
 * A fused epilogue (a quantised conv's with qtype f32, cg_requant.h) runs in fc_qp_finish after a block's
 * products; the gathered kernel puts the used lanes of as many narrow vectors as one holds through it at once.
 * Each output element is computed in a fixed order, so results do not depend on the thread count.
 */
#include <stdlib.h>

#include "cg_conv_i8.h"

enum {
  MAX_SCRATCH = 1 << 20, /* the padded and pair planes in each task's scratch (16 slots: 16 MiB of workspace) */
  MAX_PAIRS = 81,        /* tap pairs: at most 81 taps (fc_target_i8_depthwise), 81 pairs for an 81x1 filter */
};

/* The static geometry, everything as a 2-D conv (1-D: H = OH = KH = 1). */
typedef struct DwI8 {
  int64_t N, C, M, mult, H, W, OH, OW, KH, KW, sh, sw, dh, dw, ph, pw;
  bool planes;             /* stride 1: tap pairs from the pair plane */
  int64_t KK, rpairs, npairs; /* taps, tap pairs per kernel row (pair plane) and in all */
  int lanes, nv;          /* i32 lanes per vector, vectors per step */
  int64_t NR, full_steps; /* pixels per step, whole steps per row */
  int64_t Hp, Wp;         /* the padded byte plane */
  int64_t Wq;             /* the columns of the pair plane (a multiple of lanes; 0 without one) */
} DwI8;

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

static bool dw_geometry(const FcKernel *k, DwI8 *d) {
  const FcOp *op = k->op;
  if (op->kind != FC_OP_CONV || op->n_results != 1) return false;
  const FcType *x = &op->operands[0].value->type, *w = &op->operands[1].value->type, *y = &op->results[0].type;
  int n = x->rank - 2;
  const int64_t *s, *dl, *p;
  if (n < 1 || n > 2 || w->rank != x->rank || y->rank != x->rank || fc_op_attr_ints(op, FC_ATTR_STRIDES, &s) != n ||
      fc_op_attr_ints(op, FC_ATTR_DILATIONS, &dl) != n || fc_op_attr_ints(op, FC_ATTR_PADS, &p) != 2 * n)
    return false;
  bool two = n == 2;
  *d = (DwI8){.N = x->dims[0], .C = x->dims[1], .M = w->dims[0], .H = two ? x->dims[2] : 1, .W = x->dims[n + 1],
              .OH = two ? y->dims[2] : 1, .OW = y->dims[n + 1], .KH = two ? w->dims[2] : 1, .KW = w->dims[n + 1],
              .sh = two ? s[0] : 1, .sw = s[n - 1], .dh = two ? dl[0] : 1, .dw = dl[n - 1], .ph = two ? p[0] : 0,
              .pw = p[n - 1]};
  if (fc_op_attr_int(op, FC_ATTR_GROUP, 1) != d->C || w->dims[1] != 1 || d->C < 1 || d->M % d->C) return false;
  if (d->N < 1 || d->OH < 1 || d->OW < 1 || d->KH < 1 || d->KW < 1 || d->sh < 1 || d->sw < 1 || d->dh < 1 ||
      d->dw < 1 || d->ph < 0 || d->pw < 0 || d->sw > 4)
    return false;
  d->mult = d->M / d->C;
  d->KK = d->KH * d->KW;
  if (!fc_target_i8_depthwise(k->target, n, d->KK, d->H * d->W)) return false;
  FcI8Gemm g;
  fc_target_i8_gemm(k->target, &g);
  /* rows of at most 8 pixels (MobileNet's 7x7 maps) waste less of 8 lanes than of 16 */
  d->lanes = d->OW <= 8 ? 8 : g.lanes;
  d->nv = d->OW > d->lanes && d->lanes < 16 ? 2 : 1;
  d->NR = (int64_t)d->nv * d->lanes;
  d->full_steps = d->OW / d->NR;
  d->planes = d->sw == 1;
  d->rpairs = (d->KW + 1) / 2;
  d->npairs = d->planes ? d->KH * d->rpairs : (d->KK + 1) / 2;
  /* Every factor is bounded: OW, OH, H and W are dims of verified tensors; KH·dh and KW·dw come from a conv
   * whose result type is consistent, but check the products that size the planes anyway. */
  int64_t steps = (d->OW + d->NR - 1) / d->NR, span_w, span_h, need_h, bytes, pairs = 0;
  if (!fc_checked_mul(d->KW - 1, d->dw, &span_w) || !fc_checked_mul(d->OH - 1, d->sh, &need_h) ||
      !fc_checked_mul(d->KH - 1, d->dh, &span_h) || span_w > INT32_MAX || need_h > INT32_MAX ||
      span_h > INT32_MAX || d->pw > INT32_MAX || d->ph > INT32_MAX || d->dw > INT32_MAX)
    return false;
  if (d->planes) {
    d->Wq = (steps * d->NR + span_w + d->lanes - 1) / d->lanes * d->lanes;
    d->Wp = d->Wq + d->dw; /* the pair plane reads columns up to Wq + dw - 1 */
  } else {
    d->Wq = 0;
    d->Wp = steps * d->NR * d->sw + span_w; /* the last vector's loads end there */
  }
  if (d->Wp < d->pw + d->W) d->Wp = d->pw + d->W;
  d->Hp = need_h + span_h + 1;
  if (d->Hp < d->ph + d->H) d->Hp = d->ph + d->H;
  return fc_checked_mul(d->Hp, d->Wp, &bytes) && fc_checked_mul(d->Hp, d->Wq * 4, &pairs) &&
         bytes + pairs <= MAX_SCRATCH;
}

bool fc_conv_dw_i8_applies(const FcKernel *k) {
  const FcOp *op = k->op;
  DwI8 d;
  return op->operands[0].value->type.quant && fc_qp_applies(op, 0, NULL, 0) && dw_geometry(k, &d);
}

/* [M][npairs] i32 weight pairs, the first tap of each in the low 16 bits | corr: i32 × M | mult: f32 × M.
 * The corrections are for x read in its storage type (sign-extended when i8), so they fold zx itself. */
static int32_t *pack(const DwI8 *d, const FcQuantProduct *q, int64_t *bytes) {
  int64_t words = d->M * d->npairs + 2 * d->M;
  *bytes = words * 4;
  int32_t *pk = calloc((size_t)words, 4);
  if (!pk) fc_die(__FILE__, __LINE__, "out of memory");
  int32_t *corr = pk + d->M * d->npairs;
  float *mult = (float *)(corr + d->M);
  for (int64_t m = 0; m < d->M; m++) {
    int64_t wsum = 0;
    for (int64_t kh = 0; kh < d->KH; kh++)
      for (int64_t kw = 0; kw < d->KW; kw++) {
        int16_t v = q->w[m * d->KK + kh * d->KW + kw];
        wsum += v;
        /* pair plane: (kh, kw = 2i, 2i + 1 or weight 0 past the row); else taps t = 2p, 2p + 1 (or 0) */
        int64_t t = kh * d->KW + kw, at = d->planes ? kh * d->rpairs + kw / 2 : t / 2;
        int hi = d->planes ? kw % 2 : t % 2;
        uint32_t *word = (uint32_t *)&pk[m * d->npairs + at];
        *word |= (uint32_t)(uint16_t)v << (16 * hi);
      }
    /* q->corr folds the u8 view's zx (+128 for i8 x); the storage view's is 128 less */
    int64_t c = (int64_t)q->corr[m] + (q->flip ? 128 * wsum : 0);
    corr[m] = (int32_t)(uint32_t)(uint64_t)c;
    mult[m] = q->mult[m];
  }
  return pk;
}

typedef struct DwCtx {
  FcKernel *k;
  const DwI8 *d;
  const FcQuantProduct *q;
  LLVMTypeRef i8, i32, vi;
  LLVMValueRef wpair[MAX_PAIRS]; /* the channel's weight pairs, each an i32 splat over lanes */
  LLVMValueRef corr, mult;       /* the channel's, splat over lanes */
  int64_t poff[MAX_PAIRS];       /* pair plane: per pair, its i32 offset from the output row's start */
  int64_t toff[2 * MAX_PAIRS];   /* byte plane: per tap, its byte offset from the output row's start */
  LLVMValueRef edge;             /* the stack tile of a partial step */
} DwCtx;

/* Step 2 for every row of the byte plane `bp`: the pair plane at `pp` (stride 1). */
static void build_pairs(DwCtx *c, LLVMValueRef bp, LLVMValueRef pp) {
  FcKernel *k = c->k;
  const DwI8 *d = c->d;
  LLVMBuilderRef b = k->b;
  unsigned L = (unsigned)d->lanes;
  LLVMTypeRef vb = LLVMVectorType(c->i8, L), vw = LLVMVectorType(c->i32, L);
  LLVMTypeRef vh = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), 2 * L);
  FcLoop lr, lj;
  LLVMValueRef r = fc_cg_loop_begin(k, &lr, c64(k, 0), c64(k, d->Hp), 1, "pr");
  LLVMValueRef j0 = fc_cg_loop_begin(k, &lj, c64(k, 0), c64(k, d->Wq), L, "pj");
  LLVMValueRef at = fc_cg_iadd(k, fc_cg_imulc(k, r, d->Wp), j0);
  LLVMValueRef half[2];
  for (int h = 0; h < 2; h++) {
    LLVMValueRef off = h ? fc_cg_iadd(k, at, c64(k, d->dw)) : at;
    half[h] = LLVMBuildLoad2(b, vb, LLVMBuildGEP2(b, c->i8, bp, &off, 1, ""), "");
    LLVMSetAlignment(half[h], 1);
  }
  /* the bytes interleaved (x[j], x[j + dw], ...: one vpunpcklbw), then each widened to 16 bits (i8 x
   * sign-extended: one vpmovzxbw or vpmovsxbw), so pixel j's i32 holds x[j] low and x[j + dw] high in half the
   * instructions of widening each load to i32 and shifting and or-ing them */
  int idx[32];
  for (unsigned i = 0; i < L; i++) idx[2 * i] = (int)i, idx[2 * i + 1] = (int)(L + i);
  LLVMValueRef v = fc_cg_shuffle(k, half[0], half[1], idx, (int)(2 * L));
  v = c->q->flip ? LLVMBuildSExt(b, v, vh, "") : LLVMBuildZExt(b, v, vh, "");
  LLVMValueRef dst = fc_cg_iadd(k, fc_cg_imulc(k, r, d->Wq), j0);
  LLVMValueRef st = LLVMBuildStore(b, LLVMBuildBitCast(b, v, vw, "pairs"), LLVMBuildGEP2(b, c->i32, pp, &dst, 1, ""));
  LLVMSetAlignment(st, 4);
  fc_cg_loop_end(k, &lj);
  fc_cg_loop_end(k, &lr);
}

/* Without a pair plane: tap t's bytes for output columns ox .. ox + lanes of the output row whose byte-plane
 * row starts at `row`: sw·lanes bytes, every sw-th used. */
static LLVMValueRef tap_bytes(DwCtx *c, LLVMValueRef bp, LLVMValueRef row, int64_t t, LLVMValueRef ox) {
  FcKernel *k = c->k;
  LLVMTypeRef vt = LLVMVectorType(c->i8, (unsigned)(c->d->sw * c->d->lanes));
  LLVMValueRef off = fc_cg_iadd(k, row, fc_cg_iadd(k, c64(k, c->toff[t]), fc_cg_imulc(k, ox, c->d->sw)));
  LLVMValueRef v = LLVMBuildLoad2(k->b, vt, LLVMBuildGEP2(k->b, c->i8, bp, &off, 1, ""), "");
  LLVMSetAlignment(v, 1);
  return v;
}

/* acc + the products of every tap for output columns ox .. ox + lanes. */
static LLVMValueRef taps(DwCtx *c, LLVMValueRef pp, LLVMValueRef bp, LLVMValueRef row, LLVMValueRef ox) {
  FcKernel *k = c->k;
  const DwI8 *d = c->d;
  LLVMBuilderRef b = k->b;
  LLVMValueRef acc = LLVMConstNull(c->vi);
  if (d->planes) {
    for (int64_t p = 0; p < d->npairs; p++) {
      LLVMValueRef off = fc_cg_iadd(k, fc_cg_iadd(k, row, ox), c64(k, c->poff[p]));
      LLVMValueRef x = LLVMBuildLoad2(b, c->vi, LLVMBuildGEP2(b, c->i32, pp, &off, 1, ""), "");
      LLVMSetAlignment(x, 4);
      acc = fc_i8_dot(k, FC_I8DOT_WIDEN, d->lanes, acc, x, c->wpair[p]);
    }
    return acc;
  }
  unsigned L = (unsigned)d->lanes, S = (unsigned)d->sw;
  /* [x_t[0], x_u[0], x_t[1], x_u[1], ...]: lane j of a tap vector is byte j·sw of its load */
  LLVMValueRef mask[32];
  for (unsigned j = 0; j < L; j++) {
    mask[2 * j] = LLVMConstInt(c->i32, j * S, 0);
    mask[2 * j + 1] = LLVMConstInt(c->i32, S * L + j * S, 0);
  }
  LLVMValueRef pick = LLVMConstVector(mask, 2 * L);
  LLVMTypeRef v16 = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), 2 * L);
  for (int64_t p = 0; p < d->npairs; p++) {
    int64_t t0 = 2 * p, t1 = 2 * p + 1 < d->KK ? 2 * p + 1 : 2 * p; /* an odd last tap meets weight 0 */
    LLVMValueRef a0 = tap_bytes(c, bp, row, t0, ox), a1 = t1 == t0 ? a0 : tap_bytes(c, bp, row, t1, ox);
    LLVMValueRef pair = LLVMBuildShuffleVector(b, a0, a1, pick, "");
    pair = c->q->flip ? LLVMBuildSExt(b, pair, v16, "") : LLVMBuildZExt(b, pair, v16, "");
    acc = fc_i8_dot(k, FC_I8DOT_WIDEN, d->lanes, acc, pair, c->wpair[p]);
  }
  return acc;
}

/* Steps 3-4: output columns ox0 .. ox0 + nvec·lanes of the output row whose pair-plane (i32) or byte-plane row
 * starts at `row`, requantised and stored at y[yrow + ox]; `cols` (NULL for a whole step) is how many to store. */
static void emit_step(DwCtx *c, LLVMValueRef pp, LLVMValueRef bp, LLVMValueRef row, LLVMValueRef yrow,
                      LLVMValueRef ox0, LLVMValueRef cols, int nvec) {
  FcKernel *k = c->k;
  const DwI8 *d = c->d;
  LLVMBuilderRef b = k->b;
  LLVMValueRef out[2], acc[2], corr[2] = {c->corr, c->corr}, mult[2] = {c->mult, c->mult};
  for (int v = 0; v < nvec; v++)
    acc[v] = taps(c, pp, bp, row, fc_cg_iadd(k, ox0, c64(k, (int64_t)v * d->lanes)));
  int nv = fc_qp_finish_tile(k, c->q, acc, 1, nvec, corr, mult, out); /* stored vectors */
  int64_t w = nvec * d->lanes / nv;
  LLVMTypeRef et = c->q->out == FC_DT_F32 ? LLVMFloatTypeInContext(k->ctx) : c->i8;
  if (!cols) {
    for (int v = 0; v < nv; v++) {
      LLVMValueRef at = fc_cg_iadd(k, yrow, fc_cg_iadd(k, ox0, c64(k, (int64_t)v * w)));
      LLVMValueRef st = LLVMBuildStore(b, out[v], LLVMBuildGEP2(b, et, k->out[0], &at, 1, ""));
      LLVMSetAlignment(st, 1);
    }
    return;
  }
  fc_qp_store_tile(k, et, out, 1, nv, (int)w, c->edge, yrow, c64(k, 0), c64(k, 1), 0, ox0, cols);
}

/* ---- the byte-permute path (AVX512-VBMI + VNNI) ----------------------------------------------------------- */

enum {
  PERM_LANES = 16,   /* i32 lanes of a zmm: output pixels per vector */
  PERM_MAX_ROWS = 4, /* vectors stacked per block (sharing the quads of their common input rows) */
  PERM_MAX_WIN = 128 /* bytes one permute gathers from (vpermt2b's two registers) */
};

/* The geometry of the byte-permute path: vectors of k whole output rows (OW <= 8) or of `cols` columns of one
 * row, R of them stacked per block. */
typedef struct DwPerm {
  int64_t k, cols, R;  /* output rows per vector, columns per vector, vectors per block */
  int64_t blocks;      /* blocks per plane (the last one moved up to end at the plane's last row) */
  int64_t col_steps;   /* vectors across a row (the last one moved left to end at the row's end) */
  int64_t qrow, nq;    /* tap quads per kernel row, in all */
  int64_t win;         /* bytes loaded per quad vector: 64 (vpermb) or 128 (vpermt2b) */
  bool vbmi;           /* vpermb; else each 128-bit lane's bytes come from one vpermd and vpshufb */
  bool direct;         /* one row per vector and 64-byte windows: read x itself, no padded plane */
  int64_t used;        /* the bytes of a window that a vector's quads read */
  int64_t Hp, Wp;      /* the padded byte plane */
} DwPerm;

/* The bytes a vector of k rows x cols columns spans for one quad: where the gather's window must reach. */
static int64_t perm_span(const DwI8 *d, int64_t Wp, int64_t k, int64_t cols) {
  return (k - 1) * d->sh * Wp + (cols - 1) * d->sw + (d->KW - 1) * d->dw + 1;
}

/* The input rows (of the padded plane, relative to the block's first) that a block of R vectors reads. */
static int64_t perm_rows(const DwI8 *d, int64_t k, int64_t R) {
  bool seen[4 * PERM_MAX_ROWS * 8 + 256] = {false};
  int64_t n = 0, lim = (int64_t)(sizeof seen / sizeof seen[0]);
  for (int64_t v = 0; v < R; v++)
    for (int64_t kh = 0; kh < d->KH; kh++) {
      int64_t r = v * k * d->sh + kh * d->dh;
      if (r >= lim) return R * d->KH; /* sparse (large dilation): count every use */
      if (!seen[r]) seen[r] = true, n++;
    }
  return n;
}

/* The byte of the window (which starts at tap 4qi of the vector's first pixel) that lane i's byte t reads:
 * tap 4qi + t of its pixel (past the kernel row: tap 4qi again, which meets weight 0); lanes past the
 * vector's pixels read what its last pixel reads. */
static int64_t quad_byte(const DwI8 *d, const DwPerm *p, int64_t qi, int64_t i, int64_t t) {
  if (i >= p->k * p->cols) i = p->k * p->cols - 1;
  int64_t r = i / p->cols, c = i % p->cols, kw = 4 * qi + t < d->KW ? t : 0;
  return r * d->sh * p->Wp + c * d->sw + kw * d->dw;
}

/* Without VBMI: the first dword of the window that each 128-bit lane's vpermd takes (start[4]), so that the
 * lane's 4 pixels x 4 taps lie in its 16 bytes; false when they do not fit. */
static bool lane_starts(const DwI8 *d, const DwPerm *p, int64_t qi, int64_t *start) {
  for (int64_t l = 0; l < PERM_LANES / 4; l++) {
    int64_t lo = INT64_MAX, hi = 0;
    for (int64_t i = 4 * l; i < 4 * l + 4; i++)
      for (int64_t t = 0; t < 4; t++) {
        int64_t at = quad_byte(d, p, qi, i, t);
        lo = at < lo ? at : lo;
        hi = at > hi ? at : hi;
      }
    if (hi - lo / 4 * 4 >= 16 || lo / 4 + 4 > 16) return false;
    if (start) start[l] = lo / 4;
  }
  return true;
}

/* Whether the byte-permute path takes this conv: the target, s8 weights (vpdpbusd's signed operand), a window
 * of at most 128 bytes, and the plane in the scratch limit. */
static bool perm_geometry(const FcKernel *k, const DwI8 *d, const FcQuantProduct *q, DwPerm *p) {
  if (!fc_target_i8_byte_permute(k->target) || !q->w8) return false;
  int64_t span_w = (d->OW - 1) * d->sw + (d->KW - 1) * d->dw + 1, span_h = (d->OH - 1) * d->sh + (d->KH - 1) * d->dh + 1;
  *p = (DwPerm){.Wp = d->pw + d->W > span_w ? d->pw + d->W : span_w, .Hp = d->ph + d->H > span_h ? d->ph + d->H : span_h};
  int64_t row_bytes; /* several rows per vector only when a row step of the plane fits the window */
  p->vbmi = fc_target_has(k->target, FC_FEAT_AVX512VBMI);
  /* Whole rows per vector only for rows of at most 4 pixels: at 7 wide, one row per vector read from x itself
   * measured 26% faster than two rows per vector from the padded plane (MobileNetV2's 960 x 7 x 7: 17.7 vs
   * 23.9 us); narrower rows would waste three quarters of each vector or more. */
  p->k = d->OW <= PERM_LANES / 4 && p->vbmi ? PERM_LANES / d->OW : 1;
  if (p->k > d->OH) p->k = d->OH;
  if (!fc_checked_mul(d->sh, p->Wp, &row_bytes) || row_bytes > PERM_MAX_WIN) p->k = 1;
  p->cols = d->OW < PERM_LANES ? d->OW : PERM_LANES;
  while (p->k > 1 && perm_span(d, p->Wp, p->k, p->cols) > PERM_MAX_WIN) p->k--;
  int64_t span = perm_span(d, p->Wp, p->k, p->cols), bytes;
  if (span > PERM_MAX_WIN) return false;
  p->win = span <= 64 ? 64 : 128;
  p->used = span;
  p->qrow = (d->KW + 3) / 4;
  p->col_steps = (d->OW + p->cols - 1) / p->cols;
  /* x itself, where its copy would cost the most per output: strided convs (sh·sw input pixels copied per
   * output) and rows of one vector (a copy per row as dear as the row's vectors). Elsewhere (stride 1, rows of
   * 2-3 vectors: MobileNetV2's 28- and 56-wide maps) most column steps touch the padding, whose masked loads
   * measured 10-15% slower than the copy (the 112-wide map: even). */
  p->direct = p->k == 1 && p->win == 64 && (d->sh > 1 || d->sw > 1 || p->col_steps == 1);
  if (!p->vbmi && (p->win > 64 || !lane_starts(d, p, 0, NULL) || !lane_starts(d, p, p->qrow - 1, NULL)))
    return false;
  p->nq = d->KH * p->qrow;
  /* R by a cost per block in instructions: a dot per quad and ~8 to requantise and store per vector, one
   * load and permute per distinct input row and quad; blocks of the plane's last rows overlap the one before */
  double best = 0;
  for (int64_t R = 1; R <= PERM_MAX_ROWS && R * p->k <= d->OH; R++) {
    int64_t blocks = (d->OH + R * p->k - 1) / (R * p->k);
    double gather = p->vbmi ? 1 : 2;
    double cost = (double)blocks * ((double)R * (double)(p->nq + 8) + gather * (double)(perm_rows(d, p->k, R) * p->qrow));
    if (R == 1 || cost < best) best = cost, p->R = R, p->blocks = blocks;
  }
  return p->direct || (fc_checked_mul(p->Hp, p->Wp, &bytes) && bytes + PERM_MAX_WIN <= MAX_SCRATCH);
}

/* [M][nq] i32 of 4 s8 weights (taps 4i .. 4i + 3 of a kernel row, 0 past it) | corr: i32 × M | mult: f32 × M.
 * The corrections are the u8 view's (an i8 x is flipped as it is gathered). */
static int32_t *perm_pack(const DwI8 *d, const DwPerm *p, const FcQuantProduct *q, int64_t *bytes) {
  int64_t words = d->M * p->nq + 2 * d->M;
  *bytes = words * 4;
  int32_t *pk = calloc((size_t)words, 4);
  if (!pk) fc_die(__FILE__, __LINE__, "out of memory");
  int32_t *corr = pk + d->M * p->nq;
  float *mult = (float *)(corr + d->M);
  for (int64_t m = 0; m < d->M; m++) {
    for (int64_t kh = 0; kh < d->KH; kh++)
      for (int64_t kw = 0; kw < d->KW; kw++) {
        uint32_t *word = (uint32_t *)&pk[m * p->nq + kh * p->qrow + kw / 4];
        *word |= (uint32_t)(uint8_t)(int8_t)q->w[m * d->KK + kh * d->KW + kw] << (8 * (kw % 4));
      }
    corr[m] = q->corr[m];
    mult[m] = q->mult[m];
  }
  return pk;
}

/* The quad vector of tap quad qi for the vector whose window starts at byte `at` of the plane: lane i holds
 * the bytes of taps 4qi .. 4qi + 3 (past the row: tap 4qi again, which meets weight 0) for its output pixel,
 * in the u8 view. */
static LLVMValueRef perm_quad(FcKernel *k, const DwI8 *d, const DwPerm *p, const FcQuantProduct *q, LLVMValueRef at,
                              LLVMValueRef valid, LLVMValueRef pad, int64_t qi) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef v64 = LLVMVectorType(i8, 64);
  LLVMValueRef half[2];
  for (int h = 0; h < (p->win > 64 ? 2 : 1); h++) {
    LLVMValueRef ptr = h ? LLVMBuildGEP2(b, i8, at, (LLVMValueRef[]){c64(k, 64)}, 1, "") : at;
    if (valid) {
      /* the bytes outside x's row read the padding value (vmovdqu8 under a mask: the others are not touched) */
      static const char name[] = "llvm.masked.load";
      unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
      FC_ASSERT(id != 0);
      LLVMTypeRef over[2] = {v64, LLVMTypeOf(ptr)};
      LLVMValueRef args[4] = {ptr, LLVMConstInt(i32, 1, 0), valid, pad};
      half[h] = LLVMBuildCall2(b, LLVMIntrinsicGetType(k->ctx, id, over, 2),
                               LLVMGetIntrinsicDeclaration(k->mod, id, over, 2), args, 4, "");
    } else {
      half[h] = LLVMBuildLoad2(b, v64, ptr, "");
      LLVMSetAlignment(half[h], 1);
    }
  }
  LLVMValueRef mask[64], v;
  if (p->vbmi) {
    for (int64_t i = 0; i < PERM_LANES; i++)
      for (int64_t t = 0; t < 4; t++) mask[4 * i + t] = LLVMConstInt(i32, (unsigned long long)quad_byte(d, p, qi, i, t), 0);
    v = LLVMBuildShuffleVector(b, half[0], p->win > 64 ? half[1] : LLVMGetPoison(v64), LLVMConstVector(mask, 64),
                               "quad");
  } else {
    /* vpermd brings each 128-bit lane the 16 bytes its pixels read, vpshufb picks them within the lane */
    int64_t start[PERM_LANES / 4];
    FC_ASSERT(lane_starts(d, p, qi, start));
    LLVMTypeRef vd = LLVMVectorType(i32, PERM_LANES);
    for (int64_t l = 0; l < PERM_LANES / 4; l++)
      for (int64_t j = 0; j < 4; j++) mask[4 * l + j] = LLVMConstInt(i32, (unsigned long long)(start[l] + j), 0);
    LLVMValueRef dw = LLVMBuildShuffleVector(b, LLVMBuildBitCast(b, half[0], vd, ""), LLVMGetPoison(vd),
                                             LLVMConstVector(mask, PERM_LANES), "");
    for (int64_t i = 0; i < PERM_LANES; i++)
      for (int64_t t = 0; t < 4; t++)
        mask[4 * i + t] = LLVMConstInt(i8, (unsigned long long)(quad_byte(d, p, qi, i, t) - 4 * start[i / 4]), 0);
    LLVMValueRef args[2] = {LLVMBuildBitCast(b, dw, v64, ""), LLVMConstVector(mask, 64)};
    v = fc_cg_intrinsic(k, "llvm.x86.avx512.pshuf.b.512", NULL, args, 2);
  }
  if (q->flip) v = LLVMBuildXor(b, v, fc_cg_splat_const(v64, LLVMConstInt(i8, 0x80, 0)), "");
  return LLVMBuildBitCast(b, v, LLVMVectorType(i32, PERM_LANES), "");
}

/* A byte (or f32) store of the first n lanes of v at p, n < lanes (vmovdqu8 / vmovups under a constant mask). */
static void perm_store_first(FcKernel *k, LLVMValueRef v, LLVMValueRef ptr, int64_t n) {
  LLVMTypeRef i1 = LLVMInt1TypeInContext(k->ctx);
  LLVMValueRef bits[PERM_LANES];
  for (int64_t i = 0; i < PERM_LANES; i++) bits[i] = LLVMConstInt(i1, i < n, 0);
  static const char name[] = "llvm.masked.store";
  unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
  FC_ASSERT(id != 0);
  LLVMTypeRef over[2] = {LLVMTypeOf(v), LLVMTypeOf(ptr)};
  LLVMValueRef args[4] = {v, ptr, LLVMConstInt(LLVMInt32TypeInContext(k->ctx), 1, 0), LLVMConstVector(bits, PERM_LANES)};
  LLVMBuildCall2(k->b, LLVMIntrinsicGetType(k->ctx, id, over, 2), LLVMGetIntrinsicDeclaration(k->mod, id, over, 2),
                 args, 4, "");
}

/* What one block's emission needs: the channel's splat weights, correction and multiplier. */
typedef struct PermEmit {
  FcKernel *k;
  const DwI8 *d;
  const DwPerm *p;
  const FcQuantProduct *q;
  LLVMValueRef w[MAX_PAIRS], corr, mult, zero, pad; /* pad: x's zero point in its storage type, every byte */
  LLVMValueRef yplane; /* the output plane's first element */
  LLVMTypeRef et;      /* the output element type */
  bool packed;         /* requantise the block's rows together (perm_finish_rows) */
} PermEmit;

/* The requantisation of a block's R rows of 16 pixels (R <= 4; a row's first `cols` stored) at once, for 8-bit
 * results when every multiplier is finite: fc_qp_finish_packed on the 4 rows (a short block repeats its last
 * row, which is not stored), then each row's 16 bytes stored. */
static void perm_finish_rows(PermEmit *e, LLVMValueRef oy0, LLVMValueRef ox0, LLVMValueRef *accs) {
  FcKernel *k = e->k;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef vi = LLVMVectorType(i32, PERM_LANES);
  LLVMValueRef r[4], corr[4], mult[4];
  for (int64_t v = 0; v < 4; v++) {
    r[v] = v < e->p->R ? accs[v] : r[v - 1];
    corr[v] = e->zero, mult[v] = e->mult;
  }
  LLVMValueRef y = fc_qp_finish_packed(k, e->q, r, 4, corr, mult);
  FC_ASSERT(y != NULL); /* e->packed holds fc_qp_finish_packed's conditions */
  y = LLVMBuildBitCast(b, y, vi, "");
  for (int64_t v = 0; v < e->p->R; v++) {
    LLVMValueRef part[4];
    for (unsigned j = 0; j < 4; j++) part[j] = LLVMConstInt(i32, (unsigned long long)(4 * v + j), 0);
    LLVMValueRef row16 = LLVMBuildShuffleVector(b, y, LLVMGetPoison(vi), LLVMConstVector(part, 4), "");
    LLVMValueRef row = fc_cg_iadd(k, oy0, c64(k, v));
    LLVMValueRef at = fc_cg_iadd(k, e->yplane, fc_cg_iadd(k, fc_cg_imulc(k, row, e->d->OW), ox0));
    LLVMValueRef ptr = LLVMBuildGEP2(b, i8, k->out[0], &at, 1, "");
    row16 = LLVMBuildBitCast(b, row16, LLVMVectorType(i8, PERM_LANES), "");
    if (e->p->cols < PERM_LANES) {
      perm_store_first(k, row16, ptr, e->p->cols);
    } else {
      LLVMValueRef st = LLVMBuildStore(b, row16, ptr);
      LLVMSetAlignment(st, 1);
    }
  }
}

/* Where the window of (block input row `row`, quad qi) starts and, for a border block of the direct path, which
 * of its bytes lie in x (NULL: all of them). Plane: bp[(oy0·sh + row)·Wp + ox0·sw + 4qi·dw]. Direct: x's
 * row iy = oy0·sh - ph + row at column ix = ox0·sw - pw + 4qi·dw, bytes j with 0 <= ix + j < W (j < used) of
 * a row 0 <= iy < H. */
typedef struct PermSrc {
  LLVMValueRef base;   /* plane: bp; direct: x's plane */
  LLVMValueRef oy0, ox0;
  bool masked;
} PermSrc;

static LLVMValueRef perm_window(PermEmit *e, const PermSrc *src, int64_t row, int64_t qi, LLVMValueRef *mask) {
  FcKernel *k = e->k;
  const DwI8 *d = e->d;
  const DwPerm *p = e->p;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i64 = fc_cg_i64(k);
  *mask = NULL;
  if (!p->direct) {
    LLVMValueRef at = fc_cg_iadd(k, fc_cg_imulc(k, src->oy0, d->sh * p->Wp), fc_cg_imulc(k, src->ox0, d->sw));
    at = fc_cg_iadd(k, at, c64(k, row * p->Wp + 4 * qi * d->dw));
    return LLVMBuildGEP2(b, i8, src->base, &at, 1, "");
  }
  LLVMValueRef iy = fc_cg_iadd(k, fc_cg_imulc(k, src->oy0, d->sh), c64(k, row - d->ph));
  LLVMValueRef ix = fc_cg_iadd(k, fc_cg_imulc(k, src->ox0, d->sw), c64(k, 4 * qi * d->dw - d->pw));
  LLVMValueRef at = fc_cg_iadd(k, fc_cg_imulc(k, iy, d->W), ix);
  if (src->masked) {
    /* bits [lo, hi) of 64: lo = max(0, -ix), hi = min(used, W - ix), none when the row is padding */
    LLVMValueRef ones = LLVMConstAllOnes(i64);
    LLVMValueRef lo = fc_cg_smin(k, fc_cg_smax(k, LLVMBuildNeg(b, ix, ""), c64(k, 0)), c64(k, 64));
    LLVMValueRef hi = fc_cg_smax(k, fc_cg_smin(k, fc_cg_isub(k, c64(k, d->W), ix), c64(k, p->used)), c64(k, 0));
    LLVMValueRef below_hi = fc_cg_select(k, LLVMBuildICmp(b, LLVMIntSGE, hi, c64(k, 64), ""), ones,
                                         LLVMBuildSub(b, LLVMBuildShl(b, c64(k, 1), fc_cg_smin(k, hi, c64(k, 63)), ""),
                                                      c64(k, 1), ""));
    LLVMValueRef from_lo = fc_cg_select(k, LLVMBuildICmp(b, LLVMIntSGE, lo, c64(k, 64), ""), c64(k, 0),
                                        LLVMBuildShl(b, ones, fc_cg_smin(k, lo, c64(k, 63)), ""));
    LLVMValueRef in_rows = LLVMBuildICmp(b, LLVMIntULT, iy, c64(k, d->H), "");
    LLVMValueRef bits = fc_cg_select(k, in_rows, LLVMBuildAnd(b, below_hi, from_lo, ""), c64(k, 0));
    *mask = LLVMBuildBitCast(b, bits, LLVMVectorType(LLVMInt1TypeInContext(k->ctx), 64), "");
    at = fc_cg_select(k, in_rows, at, c64(k, 0)); /* nothing is read from a padding row: keep the address sane */
  }
  return LLVMBuildGEP2(b, i8, src->base, &at, 1, "");
}

/* The R vectors of one block at output row oy0, column ox0: quads gathered once per (input row, quad) and
 * shared by every vector that reads them, vpdpbusd, requantised and stored. */
static void perm_block(PermEmit *e, const PermSrc *src) {
  FcKernel *k = e->k;
  const DwI8 *d = e->d;
  const DwPerm *p = e->p;
  LLVMBuilderRef b = k->b;
  enum { MEMO = PERM_MAX_ROWS * MAX_PAIRS };
  int64_t memo_row[MEMO], memo_q[MEMO];
  LLVMValueRef memo_v[MEMO];
  int nmemo = 0;
  LLVMValueRef accs[PERM_MAX_ROWS];
  for (int64_t v = 0; v < p->R; v++) {
    LLVMValueRef acc = e->corr; /* the correction is the accumulator's start (the same i32 sum, wrapping) */
    for (int64_t kh = 0; kh < d->KH; kh++)
      for (int64_t qi = 0; qi < p->qrow; qi++) {
        int64_t row = v * p->k * d->sh + kh * d->dh;
        LLVMValueRef quad = NULL;
        for (int i = 0; i < nmemo && !quad; i++)
          if (memo_row[i] == row && memo_q[i] == qi) quad = memo_v[i];
        if (!quad) {
          LLVMValueRef mask, at = perm_window(e, src, row, qi, &mask);
          quad = perm_quad(k, d, p, e->q, at, mask, e->pad, qi);
          FC_ASSERT(nmemo < MEMO);
          memo_row[nmemo] = row, memo_q[nmemo] = qi, memo_v[nmemo++] = quad;
        }
        acc = fc_i8_dot(k, FC_I8DOT_VNNI, PERM_LANES, acc, quad, e->w[kh * p->qrow + qi]);
      }
    accs[v] = acc;
  }
  if (e->packed) {
    perm_finish_rows(e, src->oy0, src->ox0, accs);
    return;
  }
  /* Every vector's products first: an epilogue's temporaries (SiLU's) between them pushed the shared
   * quads out of the registers. An epilogue (position-free: fc_qp_applies) runs on the used lanes of as
   * many vectors as one holds, gathered (7-wide rows: 2), where one vector each wasted over half its
   * lanes on its exp and divisions. */
  int n = (int)(p->k * p->cols), per = e->q->ep ? PERM_LANES / n : 1, idx[PERM_LANES];
  for (int64_t v0 = 0; v0 < p->R; v0 += per) {
    int cnt = (int)(p->R - v0 < per ? p->R - v0 : per);
    LLVMValueRef all = accs[v0];
    for (int j = 1; j < cnt; j++) { /* lanes [0, j·n) of all, then the first n of vector v0 + j */
      for (int i = 0; i < PERM_LANES; i++) idx[i] = i < j * n ? i : i < (j + 1) * n ? PERM_LANES + i - j * n : 0;
      all = fc_cg_shuffle(k, all, accs[v0 + j], idx, PERM_LANES);
    }
    all = fc_qp_finish(k, e->q, all, e->zero, e->mult);
    for (int j = 0; j < cnt; j++) {
      LLVMValueRef out = all;
      if (j > 0) {
        for (int i = 0; i < PERM_LANES; i++) idx[i] = i < n ? j * n + i : 0;
        out = fc_cg_shuffle(k, all, NULL, idx, PERM_LANES);
      }
      LLVMValueRef row = fc_cg_iadd(k, src->oy0, c64(k, (v0 + j) * p->k));
      LLVMValueRef at = fc_cg_iadd(k, e->yplane, fc_cg_iadd(k, fc_cg_imulc(k, row, d->OW), src->ox0));
      LLVMValueRef ptr = LLVMBuildGEP2(b, e->et, k->out[0], &at, 1, "");
      if (n == PERM_LANES) {
        LLVMValueRef st = LLVMBuildStore(b, out, ptr);
        LLVMSetAlignment(st, 1);
      } else {
        perm_store_first(k, out, ptr, n);
      }
    }
  }
}

static FcStatus conv_dw_i8_perm(FcKernel *k, const DwI8 *d, const DwPerm *p, FcQuantProduct *q) {
  int64_t bytes;
  int32_t *pk = perm_pack(d, p, q, &bytes);
  LLVMValueRef wp = fc_qp_packed_weights(k, q, pk, bytes, 0, "packed_dw_i8q");
  fc_kernel_set_outer(k, d->N * d->M, (2.0 * (double)d->KK + 4.0) * (double)d->OH * (double)d->OW);
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), f32 = LLVMFloatTypeInContext(k->ctx);
  PermEmit e = {.k = k, .d = d, .p = p, .q = q, .et = q->out == FC_DT_F32 ? f32 : i8};
  LLVMValueRef zx8 = fc_qp_zx_byte(k, q, true), bp = NULL; /* the padding: zx in x's storage type */
  e.pad = fc_cg_splat(k, zx8, 64);
  int64_t plane_bytes = p->Hp * p->Wp + PERM_MAX_WIN; /* a window may reach past the last row */
  if (!p->direct) {
    bp = fc_kernel_scratch(k, plane_bytes);
    LLVMBuildMemSet(b, bp, zx8, c64(k, plane_bytes), 16); /* the padding, once per call */
  }

  FcLoop lt;
  LLVMValueRef plane = fc_cg_loop_begin(k, &lt, k->begin, k->end, 1, "plane"); /* n·M + m */
  LLVMValueRef m = LLVMBuildURem(b, plane, c64(k, d->M), "m");
  LLVMValueRef n = LLVMBuildUDiv(b, plane, c64(k, d->M), "n");
  LLVMValueRef xch = fc_cg_iadd(k, fc_cg_imulc(k, n, d->C), LLVMBuildUDiv(b, m, c64(k, d->mult), ""));
  LLVMValueRef xplane = fc_cg_imulc(k, xch, d->H * d->W);
  if (!p->direct) {
    FcLoop lr;
    LLVMValueRef ih = fc_cg_loop_begin(k, &lr, c64(k, 0), c64(k, d->H), 1, "ih");
    LLVMValueRef from = fc_cg_iadd(k, xplane, fc_cg_imulc(k, ih, d->W));
    LLVMValueRef to = fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, ih, c64(k, d->ph)), p->Wp), c64(k, d->pw));
    LLVMBuildMemCpy(b, LLVMBuildGEP2(b, i8, bp, &to, 1, ""), 1, LLVMBuildGEP2(b, i8, k->in[0], &from, 1, ""), 1,
                    c64(k, d->W));
    fc_cg_loop_end(k, &lr);
  }
  for (int64_t i = 0; i < p->nq; i++)
    e.w[i] = fc_cg_splat(k, fc_cg_load(k, FC_DT_I32, wp, fc_cg_iadd(k, fc_cg_imulc(k, m, p->nq), c64(k, i))),
                         PERM_LANES);
  LLVMValueRef corr = fc_cg_load(k, FC_DT_I32, wp, fc_cg_iadd(k, c64(k, d->M * p->nq), m));
  LLVMValueRef mbits = fc_cg_load(k, FC_DT_I32, wp, fc_cg_iadd(k, c64(k, d->M * p->nq + d->M), m));
  e.corr = fc_cg_splat(k, corr, PERM_LANES);
  e.mult = fc_cg_splat(k, LLVMBuildBitCast(b, mbits, f32, ""), PERM_LANES);
  e.zero = LLVMConstNull(LLVMTypeOf(e.corr));
  e.yplane = fc_cg_imulc(k, plane, d->OH * d->OW);
  /* not for rows of at most 8: MobileNetV2's 7-wide maps measured 44% slower this way on Sapphire Rapids
   * (25.5 vs 17.7 us; 9% faster on Cascade Lake), its 14-wide ones 5% faster on both */
  e.packed = q->out != FC_DT_F32 && !q->ep && q->mult_finite && p->k == 1 && p->cols > PERM_LANES / 2 &&
             fc_target_i8_pack_lanes(k->target) == PERM_LANES;

  FcLoop lb, lc;
  LLVMValueRef blk = fc_cg_loop_begin(k, &lb, c64(k, 0), c64(k, p->blocks), 1, "blk");
  LLVMValueRef oy0 = fc_cg_smin(k, fc_cg_imulc(k, blk, p->R * p->k), c64(k, d->OH - p->R * p->k));
  LLVMValueRef step = fc_cg_loop_begin(k, &lc, c64(k, 0), c64(k, p->col_steps), 1, "cs");
  LLVMValueRef ox0 = fc_cg_smin(k, fc_cg_imulc(k, step, p->cols), c64(k, d->OW - p->cols));
  if (!p->direct) {
    perm_block(&e, &(PermSrc){.base = bp, .oy0 = oy0, .ox0 = ox0});
  } else {
    /* A block whose windows lie inside x's rows (and whose 64-byte loads end inside x) reads x with plain
     * loads; one that touches the padding or x's end takes masked loads. */
    LLVMValueRef xbase = LLVMBuildGEP2(b, i8, k->in[0], &xplane, 1, "");
    LLVMValueRef iy0 = fc_cg_iadd(k, fc_cg_imulc(k, oy0, d->sh), c64(k, -d->ph));
    LLVMValueRef ix0 = fc_cg_iadd(k, fc_cg_imulc(k, ox0, d->sw), c64(k, -d->pw));
    int64_t rows = (p->R - 1) * d->sh + (d->KH - 1) * d->dh; /* the block's last input row, from its first */
    int64_t reach = 4 * (p->qrow - 1) * d->dw + 64;           /* the last quad's load, from the first's */
    LLVMValueRef iy1 = fc_cg_iadd(k, iy0, c64(k, rows)), ix1 = fc_cg_iadd(k, ix0, c64(k, 4 * (p->qrow - 1) * d->dw));
    LLVMValueRef end = fc_cg_iadd(k, fc_cg_iadd(k, xplane, fc_cg_imulc(k, iy1, d->W)), fc_cg_iadd(k, ix0, c64(k, reach)));
    LLVMValueRef inside = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSGE, iy0, c64(k, 0), ""),
                                       LLVMBuildICmp(b, LLVMIntSLT, iy1, c64(k, d->H), ""), "");
    inside = LLVMBuildAnd(b, inside, LLVMBuildICmp(b, LLVMIntSGE, ix0, c64(k, 0), ""), "");
    inside = LLVMBuildAnd(b, inside, LLVMBuildICmp(b, LLVMIntSLE, fc_cg_iadd(k, ix1, c64(k, p->used)), c64(k, d->W), ""), "");
    inside = LLVMBuildAnd(b, inside, LLVMBuildICmp(b, LLVMIntSLE, end, c64(k, d->N * d->C * d->H * d->W), ""), "");
    LLVMBasicBlockRef in_bb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "pin");
    LLVMBasicBlockRef edge_bb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "pedge");
    LLVMBasicBlockRef done_bb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "pdone");
    LLVMBuildCondBr(b, inside, in_bb, edge_bb);
    LLVMPositionBuilderAtEnd(b, in_bb);
    perm_block(&e, &(PermSrc){.base = xbase, .oy0 = oy0, .ox0 = ox0});
    LLVMBuildBr(b, done_bb);
    LLVMPositionBuilderAtEnd(b, edge_bb);
    perm_block(&e, &(PermSrc){.base = xbase, .oy0 = oy0, .ox0 = ox0, .masked = true});
    LLVMBuildBr(b, done_bb);
    LLVMPositionBuilderAtEnd(b, done_bb);
  }
  fc_cg_loop_end(k, &lc);
  fc_cg_loop_end(k, &lb);
  fc_cg_loop_end(k, &lt);
  return FC_OK;
}

FcStatus fc_conv_dw_i8(FcKernel *k) {
  DwI8 d;
  FC_ASSERT(dw_geometry(k, &d));
  FC_ASSERT(d.npairs <= MAX_PAIRS && d.KK <= 2 * MAX_PAIRS);
  FcQuantProduct q;
  FcStatus st = fc_qp_init(k, 0, d.KK, d.M, &q);
  if (st != FC_OK) return st;
  DwPerm perm;
  if (perm_geometry(k, &d, &q, &perm)) {
    st = conv_dw_i8_perm(k, &d, &perm, &q);
    fc_qp_free(&q);
    return st;
  }
  if (fc_conv_dw_i8_channels_applies(k, &q)) {
    st = fc_conv_dw_i8_channels(k, &q);
    fc_qp_free(&q);
    return st;
  }
  int64_t bytes;
  int32_t *pk = pack(&d, &q, &bytes);
  LLVMValueRef wp = fc_qp_packed_weights(k, &q, pk, bytes, 0, "packed_dw_i8");
  fc_kernel_set_outer(k, d.N * d.M, (2.0 * (double)d.KK + 4.0) * (double)d.OH * (double)d.OW);

  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx);
  DwCtx c = {.k = k, .d = &d, .q = &q, .i8 = i8, .i32 = i32, .vi = LLVMVectorType(i32, (unsigned)d.lanes)};
  LLVMTypeRef et = q.out == FC_DT_F32 ? f32 : i8;
  c.edge = fc_cg_tile_new(k, et, d.NR, "edge");
  /* scratch: the pair plane (Hp · Wq i32, stride 1), then the byte plane (Hp · Wp) */
  int64_t pair_bytes = d.Hp * d.Wq * 4, plane_bytes = d.Hp * d.Wp;
  LLVMValueRef pp = fc_kernel_scratch(k, pair_bytes + plane_bytes);
  LLVMValueRef bp = LLVMBuildGEP2(b, i8, pp, (LLVMValueRef[]){c64(k, pair_bytes)}, 1, "bytes");
  /* the padding, once per call: zx in x's storage type */
  LLVMBuildMemSet(b, bp, fc_qp_zx_byte(k, &q, true), c64(k, plane_bytes), 16);
  for (int64_t kh = 0; kh < d.KH; kh++) {
    for (int64_t i = 0; d.planes && i < d.rpairs; i++) c.poff[kh * d.rpairs + i] = kh * d.dh * d.Wq + 2 * i * d.dw;
    for (int64_t kw = 0; kw < d.KW; kw++) c.toff[kh * d.KW + kw] = kh * d.dh * d.Wp + kw * d.dw;
  }

  FcLoop lt;
  LLVMValueRef plane = fc_cg_loop_begin(k, &lt, k->begin, k->end, 1, "plane"); /* n·M + m */
  LLVMValueRef m = LLVMBuildURem(b, plane, c64(k, d.M), "m");
  LLVMValueRef n = LLVMBuildUDiv(b, plane, c64(k, d.M), "n");
  LLVMValueRef xch = fc_cg_iadd(k, fc_cg_imulc(k, n, d.C), LLVMBuildUDiv(b, m, c64(k, d.mult), ""));
  LLVMValueRef xplane = fc_cg_imulc(k, xch, d.H * d.W);
  /* 1. the input rows into the byte plane */
  FcLoop lr;
  LLVMValueRef ih = fc_cg_loop_begin(k, &lr, c64(k, 0), c64(k, d.H), 1, "ih");
  LLVMValueRef src = fc_cg_iadd(k, xplane, fc_cg_imulc(k, ih, d.W));
  LLVMValueRef dst = fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, ih, c64(k, d.ph)), d.Wp), c64(k, d.pw));
  LLVMBuildMemCpy(b, LLVMBuildGEP2(b, i8, bp, &dst, 1, ""), 1, LLVMBuildGEP2(b, i8, k->in[0], &src, 1, ""), 1,
                  c64(k, d.W));
  fc_cg_loop_end(k, &lr);
  /* 2. the pair plane */
  if (d.planes) build_pairs(&c, bp, pp);
  /* the channel's weights, correction and multiplier */
  for (int64_t p = 0; p < d.npairs; p++) {
    LLVMValueRef w = fc_cg_load(k, FC_DT_I32, wp, fc_cg_iadd(k, fc_cg_imulc(k, m, d.npairs), c64(k, p)));
    c.wpair[p] = fc_cg_splat(k, w, (unsigned)d.lanes);
  }
  LLVMValueRef corr = fc_cg_load(k, FC_DT_I32, wp, fc_cg_iadd(k, c64(k, d.M * d.npairs), m));
  LLVMValueRef mbits = fc_cg_load(k, FC_DT_I32, wp, fc_cg_iadd(k, c64(k, d.M * d.npairs + d.M), m));
  c.corr = fc_cg_splat(k, corr, (unsigned)d.lanes);
  c.mult = fc_cg_splat(k, LLVMBuildBitCast(b, mbits, f32, ""), (unsigned)d.lanes);
  /* 3-4. the output rows */
  LLVMValueRef yplane = fc_cg_imulc(k, plane, d.OH * d.OW);
  FcLoop ly;
  LLVMValueRef oy = fc_cg_loop_begin(k, &ly, c64(k, 0), c64(k, d.OH), 1, "oy");
  LLVMValueRef row = fc_cg_imulc(k, oy, d.sh * (d.planes ? d.Wq : d.Wp));
  LLVMValueRef yrow = fc_cg_iadd(k, yplane, fc_cg_imulc(k, oy, d.OW));
  if (d.full_steps > 0) {
    FcLoop lx;
    LLVMValueRef ox0 = fc_cg_loop_begin(k, &lx, c64(k, 0), c64(k, d.full_steps * d.NR), d.NR, "ox");
    emit_step(&c, pp, bp, row, yrow, ox0, NULL, d.nv);
    fc_cg_loop_end(k, &lx);
  }
  if (d.OW % d.NR) {
    /* A row's partial last step computes one vector where the rest of the row fits it, and may store whole
     * vectors when what they write past the row lies inside the next row of the same plane, which this task
     * computes next and overwrites; the plane's last row goes through the stack tile. */
    int64_t tail = d.OW % d.NR;
    int nvec = tail <= d.lanes ? 1 : d.nv;
    int64_t span = (int64_t)nvec * d.lanes;
    LLVMValueRef cols = c64(k, tail);
    if (span - tail <= d.OW)
      cols = fc_cg_select(k, LLVMBuildICmp(b, LLVMIntSLT, oy, c64(k, d.OH - 1), ""), c64(k, span), cols);
    emit_step(&c, pp, bp, row, yrow, c64(k, d.full_steps * d.NR), cols, nvec);
  }
  fc_cg_loop_end(k, &ly);
  fc_cg_loop_end(k, &lt);
  fc_qp_free(&q);
  return FC_OK;
}
