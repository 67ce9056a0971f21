/* kernel_dwconv_i8.c — the quantised flow.conv of qspec §2 when it is depthwise (group == C, one input channel
 * per group, M = C · multiplier), 1-D and 2-D NCHW, on x86's integer SIMD.
 *
 * A depthwise conv reuses nothing across channels, so the integer GEMM (kernel_conv_i8.c) has no channel tile
 * to fill; this kernel vectorises over the output pixels of a row instead, as the f32 one (kernel_dwconv.c)
 * does. One outer iteration is one output plane (image n, channel m, reading input channel m / multiplier):
 *   1. the input plane is copied into a padded plane in the task's scratch: ph rows above, pw columns to the
 *      left and whatever the taps of the last vectors reach to the right and below all hold zx (the real 0),
 *      so every tap of every output vector is a plain in-bounds load, the borders run the same code as the
 *      interior, and the folded zero-point correction stays exact (acc = Σ x·w' + corr, with padding taps
 *      contributing zx·w' that corr already subtracts). The padding bytes never change, so they are written
 *      once per kernel call (one memset when the call starts) and each task copies only the H input rows;
 *   2. each output row is computed nv vectors of `lanes` pixels at a time: the KH·KW taps are taken in pairs
 *      (t, t+1); for each pair the two byte vectors of input (sw·lanes bytes each, every sw-th byte kept)
 *      are interleaved by one shuffle into 16-bit pairs [x_t[p], x_t+1[p]] and multiplied with the pair of
 *      weights (w'_t, w'_t+1) broadcast as one i32 by vpmaddwd, which is exact for every w' in [-255, 255]
 *      and every 8-bit x (an i8 x is sign-extended, so the correction uses its own zero point: no flip);
 *      an odd last tap pairs with a zero weight;
 *   3. the i32 vectors are requantised (cg_requant.h: correction, multiplier, rne, clamp, zero point) and
 *      stored as bytes; a row's last, partial step stores whole vectors too when the excess lands in the
 *      plane's next row (rewritten right after), else it goes through fc_qp_store_tile's stack tile.
 * Rows of at most 8 output pixels use 8 lanes even where the target has 16.
 * The packed constant holds per channel the weight pairs as i32 words, then the corrections and multipliers.
 * Each output element is computed once in a fixed order, so results do not depend on the thread count.
 */
#include <stdlib.h>

#include "cg_requant.h"
#include "codegen.h"

enum {
  MAX_PLANE_BYTES = 1 << 20, /* the padded plane in each task's scratch (16 slots: 16 MiB of workspace) */
};

/* The static geometry, everything as a 2-D conv (1-D: H = OH = KH = 1). */
typedef struct DwI8 {
  int64_t N, C, M, mult, H, W, OH, OW, KH, KW, sh, sw, dh, dw, ph, pw;
  int64_t KK, npairs;     /* taps, tap pairs */
  int lanes, nv;          /* i32 lanes per vector, vectors per step */
  int64_t NR, full_steps; /* pixels per step, whole steps per row */
  int64_t Hp, Wp;         /* the padded plane */
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
  d->npairs = (d->KK + 1) / 2;
  /* Every factor is bounded: OW, OH, H and W are dims of verified tensors; KH·dh and KW·dw come from a conv
   * whose result type is consistent, but check the products that size the plane anyway. */
  int64_t steps = (d->OW + d->NR - 1) / d->NR, span_w, span_h, need_w, need_h;
  if (!fc_checked_mul(steps * d->NR, d->sw, &need_w) || !fc_checked_mul(d->KW - 1, d->dw, &span_w) ||
      !fc_checked_mul(d->OH - 1, d->sh, &need_h) || !fc_checked_mul(d->KH - 1, d->dh, &span_h) ||
      need_w > INT32_MAX || span_w > INT32_MAX || need_h > INT32_MAX || span_h > INT32_MAX ||
      d->pw > INT32_MAX || d->ph > INT32_MAX)
    return false;
  d->Wp = need_w + span_w;
  if (d->Wp < d->pw + d->W) d->Wp = d->pw + d->W;
  d->Hp = need_h + span_h + 1;
  if (d->Hp < d->ph + d->H) d->Hp = d->ph + d->H;
  return d->Wp * d->Hp <= MAX_PLANE_BYTES;
}

bool fc_conv_dw_i8_applies(const FcKernel *k) {
  const FcOp *op = k->op;
  DwI8 d;
  return op->operands[0].value->type.quant && fc_qp_applies(op, 0, NULL, 0) && dw_geometry(k, &d);
}

/* [M][npairs] i32 weight pairs (w'_2p low 16 bits, w'_2p+1 high) | corr: i32 × M | mult: f32 × M. The
 * corrections are for x read in its storage type (sign-extended when i8), so they fold zx itself. */
static int32_t *pack(const DwI8 *d, const FcQuantProduct *q, int64_t *bytes) {
  int64_t words = d->M * d->npairs + 2 * d->M;
  *bytes = words * 4;
  int32_t *pk = calloc((size_t)words, 4);
  if (!pk) fc_die(__FILE__, __LINE__, "out of memory");
  int32_t *corr = pk + d->M * d->npairs;
  float *mult = (float *)(corr + d->M);
  for (int64_t m = 0; m < d->M; m++) {
    int64_t wsum = 0;
    for (int64_t t = 0; t < d->KK; t++) {
      int16_t v = q->w[m * d->KK + t];
      wsum += v;
      uint32_t *word = (uint32_t *)&pk[m * d->npairs + t / 2];
      *word |= (uint32_t)(uint16_t)v << (16 * (t % 2));
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
  LLVMTypeRef i8, vi;
  LLVMValueRef wpair[128]; /* the channel's weight pairs, each an i32 splat over lanes */
  LLVMValueRef corr, mult; /* the channel's, splat over lanes */
  LLVMValueRef *toff;      /* per tap: its byte offset in the padded plane (kh·dh·Wp + kw·dw) */
  LLVMValueRef edge;       /* the stack tile of a partial step */
} DwCtx;

/* The lanes input pixels of tap t for output columns ox .. ox + lanes of the row at `row` (the padded
 * plane's row oy·sh): sw·lanes bytes, every sw-th used. */
static LLVMValueRef tap_bytes(DwCtx *c, LLVMValueRef row, int64_t t, LLVMValueRef ox) {
  FcKernel *k = c->k;
  LLVMTypeRef vt = LLVMVectorType(c->i8, (unsigned)(c->d->sw * c->d->lanes));
  LLVMValueRef off = fc_cg_iadd(k, c->toff[t], fc_cg_imulc(k, ox, c->d->sw));
  LLVMValueRef v = LLVMBuildLoad2(k->b, vt, LLVMBuildGEP2(k->b, c->i8, row, &off, 1, ""), "");
  LLVMSetAlignment(v, 1);
  return v;
}

/* One step: output columns ox0 .. ox0 + NR of row oy (its padded-plane row `row`), requantised and stored at
 * y[yrow + ox]; `cols` (NULL for a whole step) is how many columns are inside the row. */
static void emit_step(DwCtx *c, LLVMValueRef row, LLVMValueRef yrow, LLVMValueRef ox0, LLVMValueRef cols) {
  FcKernel *k = c->k;
  const DwI8 *d = c->d;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx), i16 = LLVMInt16TypeInContext(k->ctx);
  unsigned L = (unsigned)d->lanes, S = (unsigned)d->sw;
  LLVMTypeRef v16 = LLVMVectorType(i16, 2 * L);
  /* [x_t[0], x_u[0], x_t[1], x_u[1], ...]: lane j of a tap vector is byte j·sw of its load */
  LLVMValueRef mask[64];
  for (unsigned j = 0; j < L; j++) {
    mask[2 * j] = LLVMConstInt(i32, j * S, 0);
    mask[2 * j + 1] = LLVMConstInt(i32, S * L + j * S, 0);
  }
  LLVMValueRef pick = LLVMConstVector(mask, 2 * L);
  LLVMValueRef acc[2], out[2];
  for (int v = 0; v < d->nv; v++) {
    acc[v] = LLVMConstNull(c->vi);
    LLVMValueRef ox = fc_cg_iadd(k, ox0, c64(k, (int64_t)v * d->lanes));
    for (int64_t p = 0; p < d->npairs; p++) {
      int64_t t0 = 2 * p, t1 = 2 * p + 1 < d->KK ? 2 * p + 1 : 2 * p; /* an odd last tap meets weight 0 */
      LLVMValueRef a0 = tap_bytes(c, row, t0, ox), a1 = t1 == t0 ? a0 : tap_bytes(c, row, t1, ox);
      LLVMValueRef pair = LLVMBuildShuffleVector(b, a0, a1, pick, "");
      pair = c->q->flip ? LLVMBuildSExt(b, pair, v16, "") : LLVMBuildZExt(b, pair, v16, "");
      acc[v] = fc_i8_dot(k, FC_I8DOT_WIDEN, d->lanes, acc[v], pair, c->wpair[p]);
    }
    out[v] = fc_qp_finish(k, c->q, acc[v], c->corr, c->mult);
  }
  LLVMTypeRef et = c->q->out == FC_DT_F32 ? LLVMFloatTypeInContext(k->ctx) : c->i8;
  if (!cols) {
    for (int v = 0; v < d->nv; v++) {
      LLVMValueRef at = fc_cg_iadd(k, yrow, fc_cg_iadd(k, ox0, c64(k, (int64_t)v * d->lanes)));
      LLVMValueRef st = LLVMBuildStore(b, out[v], LLVMBuildGEP2(b, et, k->out[0], &at, 1, ""));
      LLVMSetAlignment(st, 1);
    }
    return;
  }
  fc_qp_store_tile(k, et, out, 1, d->nv, d->lanes, c->edge, yrow, c64(k, 0), c64(k, 1), 0, ox0, cols);
}

FcStatus fc_conv_dw_i8(FcKernel *k) {
  DwI8 d;
  FC_ASSERT(dw_geometry(k, &d));
  FcQuantProduct q;
  FcStatus st = fc_qp_init(k, 0, d.KK, d.M, &q);
  if (st != FC_OK) return st;
  int64_t bytes;
  int32_t *pk = pack(&d, &q, &bytes);
  LLVMValueRef wp = fc_kernel_substitute_operand(k, 1, fc_cg_const_bytes(k, pk, (size_t)bytes, "packed_dw_i8"));
  free(pk);
  fc_kernel_set_outer(k, d.N * d.M, (2.0 * (double)d.KK + 4.0) * (double)d.OH * (double)d.OW);

  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx);
  DwCtx c = {.k = k, .d = &d, .q = &q, .i8 = i8, .vi = LLVMVectorType(i32, (unsigned)d.lanes)};
  LLVMTypeRef et = q.out == FC_DT_F32 ? f32 : i8;
  c.edge = fc_cg_tile_new(k, et, d.NR, "edge");
  LLVMValueRef plane_buf = fc_kernel_scratch(k, d.Hp * d.Wp);
  /* the padding, once per call: zx in x's storage type */
  int zx = q.zx - (q.flip ? 128 : 0);
  LLVMBuildMemSet(b, plane_buf, LLVMConstInt(i8, (unsigned)(zx & 0xff), 0), c64(k, d.Hp * d.Wp), 64);
  LLVMValueRef toff[128 * 2];
  for (int64_t kh = 0; kh < d.KH; kh++)
    for (int64_t kw = 0; kw < d.KW; kw++) toff[kh * d.KW + kw] = c64(k, kh * d.dh * d.Wp + kw * d.dw);
  c.toff = toff;

  FcLoop lt;
  LLVMValueRef plane = fc_cg_loop_begin(k, &lt, k->begin, k->end, 1, "plane"); /* n·M + m */
  LLVMValueRef m = LLVMBuildURem(b, plane, c64(k, d.M), "m");
  LLVMValueRef n = LLVMBuildUDiv(b, plane, c64(k, d.M), "n");
  LLVMValueRef xch = fc_cg_iadd(k, fc_cg_imulc(k, n, d.C), LLVMBuildUDiv(b, m, c64(k, d.mult), ""));
  LLVMValueRef xplane = fc_cg_imulc(k, xch, d.H * d.W);
  /* 1. the input rows into the padded plane */
  FcLoop lr;
  LLVMValueRef ih = fc_cg_loop_begin(k, &lr, c64(k, 0), c64(k, d.H), 1, "ih");
  LLVMValueRef src = fc_cg_iadd(k, xplane, fc_cg_imulc(k, ih, d.W));
  LLVMValueRef dst = fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, ih, c64(k, d.ph)), d.Wp), c64(k, d.pw));
  LLVMBuildMemCpy(b, LLVMBuildGEP2(b, i8, plane_buf, &dst, 1, ""), 1, LLVMBuildGEP2(b, i8, k->in[0], &src, 1, ""), 1,
                  c64(k, d.W));
  fc_cg_loop_end(k, &lr);
  /* the channel's weights, correction and multiplier */
  for (int64_t p = 0; p < d.npairs; p++) {
    LLVMValueRef w = fc_cg_load(k, FC_DT_I32, wp, fc_cg_iadd(k, fc_cg_imulc(k, m, d.npairs), c64(k, p)));
    c.wpair[p] = fc_cg_splat(k, w, (unsigned)d.lanes);
  }
  LLVMValueRef corr = fc_cg_load(k, FC_DT_I32, wp, fc_cg_iadd(k, c64(k, d.M * d.npairs), m));
  LLVMValueRef mbits = fc_cg_load(k, FC_DT_I32, wp, fc_cg_iadd(k, c64(k, d.M * d.npairs + d.M), m));
  c.corr = fc_cg_splat(k, corr, (unsigned)d.lanes);
  c.mult = fc_cg_splat(k, LLVMBuildBitCast(b, mbits, f32, ""), (unsigned)d.lanes);
  /* 2-3. the output rows */
  LLVMValueRef yplane = fc_cg_imulc(k, plane, d.OH * d.OW);
  FcLoop ly;
  LLVMValueRef oy = fc_cg_loop_begin(k, &ly, c64(k, 0), c64(k, d.OH), 1, "oy");
  LLVMValueRef roff = fc_cg_imulc(k, oy, d.sh * d.Wp);
  LLVMValueRef row = LLVMBuildGEP2(b, i8, plane_buf, &roff, 1, "row");
  LLVMValueRef yrow = fc_cg_iadd(k, yplane, fc_cg_imulc(k, oy, d.OW));
  if (d.full_steps > 0) {
    FcLoop lx;
    LLVMValueRef ox0 = fc_cg_loop_begin(k, &lx, c64(k, 0), c64(k, d.full_steps * d.NR), d.NR, "ox");
    emit_step(&c, row, yrow, ox0, NULL);
    fc_cg_loop_end(k, &lx);
  }
  if (d.OW % d.NR) {
    /* A row's partial last step may store whole vectors when what they write past the row lies inside the
     * next row of the same plane, which this task computes next and overwrites; the plane's last row goes
     * through the stack tile. */
    int64_t tail = d.OW % d.NR;
    LLVMValueRef cols = c64(k, tail);
    if (d.NR - tail <= d.OW)
      cols = fc_cg_select(k, LLVMBuildICmp(b, LLVMIntSLT, oy, c64(k, d.OH - 1), ""), c64(k, d.NR), cols);
    emit_step(&c, row, yrow, c64(k, d.full_steps * d.NR), cols);
  }
  fc_cg_loop_end(k, &ly);
  fc_cg_loop_end(k, &lt);
  fc_qp_free(&q);
  return FC_OK;
}
