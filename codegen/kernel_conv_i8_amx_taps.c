/* kernel_conv_i8_amx_taps.c — the quantised flow.conv on AMX tiles without an im2col: B tiles gathered by
 * vpermb straight from a padded copy of the input rows, for convs whose output rows hold 32 pixels or more.
 *
 * kernel_conv_i8.c's AMX path multiplies the weights by an im2col block whose k quads are 4 consecutive k of
 * (c, kh, kw) order: building it (byte rows, then a 4-way interleave) takes most of a conv's time at tile
 * speed (the commit that added this file has the measurements). Here the k order is (c, kh, quad of kw):
 * group g = (c·KH + kh)·nq + q holds the taps kw = 4q .. 4q + 3 of one input row of one channel
 * (nq = ceil(KW/4); taps past KW meet weight 0), so a B tile row — 16 output pixels × the 4 bytes of their
 * quad — is a sliding window over one input row: pixel p, tap t reads byte p·sw + t·dw of the 64 bytes at
 * the window's start, one load and one vpermb per 64 bytes of B. 3x3 kernels pad a quarter of the k (4 taps
 * for 3), which the tile products absorb: at AMX's rate they are not the cost.
 * One outer iteration is (image, group, block of RB output rows). Its input rows (all Cg channels, Rin rows,
 * Wp bytes each: every byte of a tap that the block reads) are copied into the task's scratch with zx (the
 * u8 view's real 0; an i8 x is flipped by the copy) around them, so the padding taps keep the folded
 * correction exact (cg_requant.h) and every window is a plain load; 64 bytes of slack follow the last row.
 * Each output row runs panels of 32 pixels (the last one moves back to end at the row's end, recomputing a
 * few outputs identically; narrower rows stay with the im2col, whose blocks span rows), builds the panel's
 * B tiles once ([chunk][16 groups][64 bytes] per 16 pixels; the groups past G are zero bytes against zero
 * weights) and meets every pair of 16-channel tiles on 2 x 2 tiles (cg_amx.h), whose accumulators are
 * requantised and stored like kernel_conv_i8.c's.
 * The weights are packed at compile time as A tiles: byte (((grp·MT + m/16)·NHq + g/16)·16 + m%16)·64 +
 * (g%16)·4 + t holds W'[grp][m][c][kh][4q + t]; then the corrections and multipliers as in the other
 * packings, and the vpermb indices of each quad.
 */
#include <stdlib.h>
#include <string.h>

#include "cg_amx.h"
#include "cg_conv_i8.h"

/* The scratch a block's input rows may take: a slice of L2 that the B windows read over and over. A panel is
 * NB tiles of 16 pixels (2 x 2 tiles with a pair of channel tiles). */
enum { PLANE_BUDGET = 256 << 10, NB = 2, PANEL = 16 * NB };

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

typedef struct Taps {
  const FcConvI8 *t;
  int64_t nq;          /* quads of kw taps per kernel row */
  int64_t G;           /* k groups: Cg · KH · nq */
  int64_t NHq;         /* 64-byte chunks of 16 groups */
  int64_t MT;          /* 16-channel tiles of a group */
  int64_t RB, Rin, Wp; /* output rows a block, the padded input rows it reads, bytes of a padded row */
  int64_t plane;       /* bytes of one channel's padded rows (Rin · Wp) */
  int64_t wbytes;      /* packed weights (before the tables) */
} Taps;

bool fc_conv_i8_amx_taps_applies(const FcKernel *k, const FcConvI8 *t) {
  const FcConv2 *c = &t->c;
  int64_t used = c->KW < 4 ? c->KW : 4;
  return fc_target_i8_amx(k->target) && fc_target_has(k->target, FC_FEAT_AVX512VBMI) && t->q.w8 && c->OW >= 32 &&
         c->KW >= 3 && 15 * c->sw + (used - 1) * c->dw <= 63 && c->Mg >= 16;
}

/* Byte 4p + t of a B row of quad q: pixel p's tap 4q + t at p·sw + t·dw of its window (a tap past KW, which
 * meets weight 0, reads the pixel's first byte, inside the window). */
static uint8_t quad_byte(const FcConv2 *c, int64_t q, int64_t p, int64_t t) {
  return (uint8_t)(p * c->sw + (4 * q + t < c->KW ? t * c->dw : 0));
}

static int8_t *pack_weights(const Taps *s, int64_t *bytes) {
  const FcConvI8 *t = s->t;
  const FcConv2 *c = &t->c;
  *bytes = s->wbytes + 8 * c->M + 64 * s->nq;
  int8_t *pk = calloc((size_t)*bytes, 1);
  if (!pk) fc_die(__FILE__, __LINE__, "out of memory");
  for (int64_t m = 0; m < c->M; m++) {
    int64_t grp = m / c->Mg, ml = m % c->Mg;
    for (int64_t ch = 0; ch < c->Cg; ch++)
      for (int64_t kh = 0; kh < c->KH; kh++)
        for (int64_t kw = 0; kw < c->KW; kw++) {
          int64_t g = (ch * c->KH + kh) * s->nq + kw / 4;
          int64_t at = (((grp * s->MT + ml / 16) * s->NHq + g / 16) * 16 + ml % 16) * 64 + (g % 16) * 4 + kw % 4;
          pk[at] = (int8_t)t->q.w[((m * c->Cg + ch) * c->KH + kh) * c->KW + kw];
        }
  }
  memcpy(pk + s->wbytes, t->q.corr, (size_t)c->M * 4);
  memcpy(pk + s->wbytes + 4 * c->M, t->q.mult, (size_t)c->M * 4);
  for (int64_t q = 0; q < s->nq; q++)
    for (int64_t i = 0; i < 64; i++) pk[s->wbytes + 8 * c->M + 64 * q + i] = (int8_t)quad_byte(c, q, i / 4, i % 4);
  return pk;
}

/* Stores of <64 x i8> v at dst + j for j in [0, n) step 64, the last one under a mask when n is not whole. */
static void store_run(FcKernel *k, LLVMValueRef dst, LLVMValueRef src, int64_t n, bool flip, LLVMValueRef fill) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i1 = LLVMInt1TypeInContext(k->ctx);
  LLVMTypeRef v64 = LLVMVectorType(i8, 64);
  LLVMValueRef flip_v = fc_cg_splat_const(v64, LLVMConstInt(i8, 0x80, 0));
  for (int pass = 0; pass < 2; pass++) {
    int64_t whole = n / 64;
    if (pass == 1 && n % 64 == 0) break;
    LLVMValueRef j;
    FcLoop l;
    if (pass == 0) {
      if (whole == 0) continue;
      j = fc_cg_imulc(k, fc_cg_loop_begin(k, &l, c64(k, 0), c64(k, whole), 1, "run"), 64);
    } else {
      j = c64(k, whole * 64);
    }
    LLVMValueRef to = LLVMBuildGEP2(b, i8, dst, &j, 1, "");
    LLVMValueRef mask = NULL;
    if (pass == 1) {
      LLVMValueRef bits[64];
      for (int64_t i = 0; i < 64; i++) bits[i] = LLVMConstInt(i1, i < n % 64, 0);
      mask = LLVMConstVector(bits, 64);
    }
    LLVMValueRef v = fill;
    if (src) {
      LLVMValueRef from = LLVMBuildGEP2(b, i8, src, &j, 1, "");
      if (mask) {
        v = fc_cg_masked_load(k, v64, from, mask, LLVMGetPoison(v64));
      } else {
        v = LLVMBuildLoad2(b, v64, from, "");
        LLVMSetAlignment(v, 1);
      }
      if (flip) v = LLVMBuildXor(b, v, flip_v, "");
    }
    if (mask) fc_cg_masked_store(k, v, to, mask);
    else LLVMSetAlignment(LLVMBuildStore(b, v, to), 1);
    if (pass == 0) fc_cg_loop_end(k, &l);
  }
}

/* The block's padded input rows at `plane` ([Cg][Rin][Wp], zx around x's bytes): input row iy0 + r is plane
 * row r, input column ix is plane column ix + pw. */
static void build_plane(FcKernel *k, const Taps *s, LLVMValueRef plane, LLVMValueRef xg, LLVMValueRef iy0) {
  const FcConv2 *c = &s->t->c;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef zx = fc_cg_splat_const(LLVMVectorType(i8, 64), LLVMConstInt(i8, (unsigned long long)s->t->q.zx, 0));
  store_run(k, plane, NULL, c->Cg * s->plane, false, zx);
  int64_t ncopy = c->W < s->Wp - c->pw ? c->W : s->Wp - c->pw; /* columns past Wp are never read */
  if (ncopy <= 0) return;
  /* plane rows r with 0 <= iy0 + r < H */
  LLVMValueRef r0 = fc_cg_smax(k, c64(k, 0), fc_cg_isub(k, c64(k, 0), iy0));
  LLVMValueRef r1 = fc_cg_smax(k, r0, fc_cg_smin(k, c64(k, s->Rin), fc_cg_isub(k, c64(k, c->H), iy0)));
  FcLoop lc, lr;
  LLVMValueRef ch = fc_cg_loop_begin(k, &lc, c64(k, 0), c64(k, c->Cg), 1, "pch");
  LLVMValueRef r = fc_cg_loop_begin(k, &lr, r0, r1, 1, "prow");
  LLVMValueRef from = fc_cg_iadd(k, fc_cg_imulc(k, ch, c->H * c->W), fc_cg_imulc(k, fc_cg_iadd(k, iy0, r), c->W));
  LLVMValueRef to = fc_cg_iadd(k, fc_cg_imulc(k, ch, s->plane), fc_cg_iadd(k, fc_cg_imulc(k, r, s->Wp), c64(k, c->pw)));
  store_run(k, LLVMBuildGEP2(b, i8, plane, &to, 1, ""), LLVMBuildGEP2(b, i8, xg, &from, 1, ""), ncopy,
            s->t->q.flip, NULL);
  fc_cg_loop_end(k, &lr);
  fc_cg_loop_end(k, &lc);
}

/* The B tiles of the panel of pixels ox0 .. ox0 + PANEL - 1 of block row `row`: tile j at bt + j·NHq·1024,
 * group g's 64 bytes at g·64. masks[q]: quad q's vpermb indices, loaded from the packed constant: a constant
 * shuffle mask would let LLVM lower these sliding windows as a dozen unpacks instead of one vpermb. */
static void build_b(FcKernel *k, const Taps *s, LLVMValueRef plane, LLVMValueRef bt, LLVMValueRef row,
                    LLVMValueRef ox0, const LLVMValueRef *masks) {
  const FcConv2 *c = &s->t->c;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), v64 = LLVMVectorType(i8, 64);
  FcLoop lc;
  LLVMValueRef ch = fc_cg_loop_begin(k, &lc, c64(k, 0), c64(k, c->Cg), 1, "bch");
  LLVMValueRef rbase = fc_cg_iadd(k, fc_cg_imulc(k, ch, s->plane), fc_cg_imulc(k, row, c->sh * s->Wp));
  LLVMValueRef gbase = fc_cg_imulc(k, ch, c->KH * s->nq * 64);
  for (int j = 0; j < NB; j++) {
    LLVMValueRef col = fc_cg_imulc(k, fc_cg_iadd(k, ox0, c64(k, 16 * j)), c->sw);
    for (int64_t kh = 0; kh < c->KH; kh++)
      for (int64_t q = 0; q < s->nq; q++) {
        LLVMValueRef at = fc_cg_iadd(k, rbase, fc_cg_iadd(k, col, c64(k, kh * c->dh * s->Wp + 4 * q * c->dw)));
        LLVMValueRef win = LLVMBuildLoad2(b, v64, LLVMBuildGEP2(b, i8, plane, &at, 1, ""), "win");
        LLVMSetAlignment(win, 1);
        LLVMValueRef args[2] = {win, masks[q]};
        LLVMValueRef quad = fc_cg_intrinsic(k, "llvm.x86.avx512.permvar.qi.512", NULL, args, 2);
        LLVMValueRef to = fc_cg_iadd(k, gbase, c64(k, (int64_t)j * s->NHq * 1024 + (kh * s->nq + q) * 64));
        LLVMSetAlignment(LLVMBuildStore(b, quad, LLVMBuildGEP2(b, i8, bt, &to, 1, "")), 64);
      }
  }
  fc_cg_loop_end(k, &lc);
}

typedef struct Panel {
  LLVMValueRef wp, bt, grp, ybase, col0, ctile, edge;
  LLVMTypeRef et;
} Panel;

/* Channel tiles ct .. ct + na - 1 of the group against the panel's B tiles, requantised and stored. */
static void panel_tiles(FcKernel *k, const Taps *s, const Panel *p, LLVMValueRef ct, int na) {
  const FcConvI8 *t = s->t;
  const FcConv2 *c = &t->c;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), vi = LLVMVectorType(LLVMInt32TypeInContext(k->ctx), 16);
  FcAmxGemm g = {.dot = FC_AMX_BSUD, .na = na, .nb = NB, .chunks = s->NHq, .c = p->ctile};
  g.a.stride = g.b.stride = FC_AMX_ROW_BYTES;
  g.a.chunk_step = g.b.chunk_step = FC_AMX_ROWS * FC_AMX_ROW_BYTES;
  for (int i = 0; i < na; i++) {
    LLVMValueRef tile = fc_cg_iadd(k, fc_cg_imulc(k, p->grp, s->MT), fc_cg_iadd(k, ct, c64(k, i)));
    LLVMValueRef off = fc_cg_imulc(k, tile, s->NHq * 1024);
    g.a.base[i] = LLVMBuildGEP2(b, i8, p->wp, &off, 1, "");
  }
  for (int j = 0; j < NB; j++)
    g.b.base[j] = LLVMBuildGEP2(b, i8, p->bt, (LLVMValueRef[]){c64(k, (int64_t)j * s->NHq * 1024)}, 1, "");
  fc_amx_gemm(k, &g);
  LLVMValueRef m0 = fc_cg_imulc(k, ct, 16), outv[64], acc[64], corr[64], mult[64];
  for (int i = 0; i < 16 * na; i++) {
    fc_conv_i8_channel_scales(k, t, p->wp, s->wbytes, p->grp, m0, i, 16, &corr[i * NB], &mult[i * NB]);
    for (int v = 0; v < NB; v++) {
      int64_t off = ((int64_t)((i / 16) * NB + v) * 16 + i % 16) * FC_AMX_ROW_BYTES;
      LLVMValueRef at = LLVMBuildGEP2(b, i8, p->ctile, (LLVMValueRef[]){c64(k, off)}, 1, "");
      acc[i * NB + v] = LLVMBuildLoad2(b, vi, at, "");
      LLVMSetAlignment(acc[i * NB + v], 64);
      corr[i * NB + v] = corr[i * NB], mult[i * NB + v] = mult[i * NB];
    }
  }
  int per_row = fc_qp_finish_tile(k, &t->q, acc, 16 * na, NB, corr, mult, outv);
  LLVMValueRef nrows = fc_cg_smin(k, c64(k, 16 * na), fc_cg_isub(k, c64(k, c->Mg), m0));
  fc_qp_store_tile(k, p->et, outv, 16 * na, per_row, 16 * NB / per_row, p->edge, p->ybase, m0, nrows, c->P,
                   p->col0, c64(k, 16 * NB));
}

FcStatus fc_conv_i8_amx_taps(FcKernel *k, FcConvI8 *t) {
  const FcConv2 *c = &t->c;
  Taps s = {.t = t, .nq = (c->KW + 3) / 4, .MT = (c->Mg + 15) / 16};
  s.G = c->Cg * c->KH * s.nq; /* dims of checked tensors: no overflow below the checks that follow */
  s.NHq = (s.G + 15) / 16;
  s.Wp = (c->OW - 1) * c->sw + (c->KW - 1) * c->dw + 1;
  int64_t row_bytes, blocks, outer, bt_bytes;
  bool ok = fc_checked_mul(c->Cg * c->sh, s.Wp, &row_bytes) &&
            fc_checked_mul(s.MT * s.NHq * 1024, c->G, &s.wbytes) && s.wbytes <= INT64_MAX / 2 - 8 * c->M &&
            fc_checked_mul(NB * s.NHq, 1024, &bt_bytes);
  /* rows a block: the plane within its budget, and at least 8 blocks of an image where it has the rows, so
   * threads share a batch of 1 */
  s.RB = ok && row_bytes > 0 ? PLANE_BUDGET / row_bytes : 1;
  if (s.RB > (c->OH + 7) / 8) s.RB = (c->OH + 7) / 8;
  if (s.RB < 1) s.RB = 1;
  s.Rin = (s.RB - 1) * c->sh + (c->KH - 1) * c->dh + 1;
  int64_t plane_all;
  ok = ok && fc_checked_mul(s.Rin, s.Wp, &s.plane) && fc_checked_mul(s.plane, c->Cg, &plane_all) &&
       plane_all <= INT64_MAX / 2 - bt_bytes;
  blocks = (c->OH + s.RB - 1) / s.RB;
  if (!ok || !fc_checked_mul(c->N * c->G, blocks, &outer)) {
    fc_qp_free(&t->q);
    return fc_cg_error(k, FC_ERR_LIMIT, "the conv's input rows are too large");
  }
  int64_t bytes;
  int8_t *pk = pack_weights(&s, &bytes);
  LLVMValueRef wp = fc_kernel_substitute_operand(
      k, 1, fc_cg_packed_weights_bytes(k, pk, (size_t)bytes, (size_t)s.wbytes, "packed_w_i8_taps"));
  free(pk);
  fc_kernel_set_outer(k, outer, 2.0 * (double)c->Mg * (double)c->K * (double)(s.RB * c->OW));

  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef et = t->q.out == FC_DT_F32 ? LLVMFloatTypeInContext(k->ctx) : i8;
  /* scratch: the B tiles (64-byte aligned), then the plane and its slack */
  int64_t plane_at = bt_bytes;
  LLVMValueRef scr = fc_kernel_scratch(k, plane_at + (plane_all + 64 + 63) / 64 * 64 + 64);
  LLVMValueRef bt = scr, plane = LLVMBuildGEP2(b, i8, scr, (LLVMValueRef[]){c64(k, plane_at)}, 1, "plane");
  /* the groups past G: zero bytes (against zero weights), once per call */
  if (s.NHq * 16 > s.G)
    for (int j = 0; j < NB; j++)
      store_run(k, LLVMBuildGEP2(b, i8, bt, (LLVMValueRef[]){c64(k, j * s.NHq * 1024 + s.G * 64)}, 1, ""), NULL,
                (s.NHq * 16 - s.G) * 64, false, LLVMConstNull(LLVMVectorType(i8, 64)));
  LLVMValueRef masks[16];
  FC_ASSERT(s.nq <= 16);
  for (int64_t q = 0; q < s.nq; q++) {
    LLVMValueRef at = c64(k, s.wbytes + 8 * c->M + 64 * q);
    masks[q] = LLVMBuildLoad2(b, LLVMVectorType(i8, 64), LLVMBuildGEP2(b, i8, wp, &at, 1, ""), "quad_idx");
    LLVMSetAlignment(masks[q], 1);
  }
  Panel p = {.wp = wp, .bt = bt, .et = et, .ctile = fc_cg_tile_new(k, i32, 4 * 16 * 16, "amx_c"),
             .edge = fc_cg_tile_new(k, et, 32 * PANEL, "edge")};

  FcLoop lo, lr, lp, lcp;
  LLVMValueRef it = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "blk");
  LLVMValueRef blk = LLVMBuildSRem(b, it, c64(k, blocks), "");
  LLVMValueRef ng = LLVMBuildSDiv(b, it, c64(k, blocks), ""); /* n·G + grp */
  p.grp = LLVMBuildSRem(b, ng, c64(k, c->G), "");
  LLVMValueRef xoff = fc_cg_imulc(k, ng, c->Cg * c->H * c->W);
  LLVMValueRef xg = LLVMBuildGEP2(b, i8, k->in[0], &xoff, 1, "");
  p.ybase = fc_cg_imulc(k, ng, c->Mg * c->P);
  LLVMValueRef oy0 = fc_cg_imulc(k, blk, s.RB);
  build_plane(k, &s, plane, xg, fc_cg_iadd(k, fc_cg_imulc(k, oy0, c->sh), c64(k, -c->ph)));
  LLVMValueRef rows = fc_cg_smin(k, c64(k, s.RB), fc_cg_isub(k, c64(k, c->OH), oy0));
  LLVMValueRef row = fc_cg_loop_begin(k, &lr, c64(k, 0), rows, 1, "orow");
  int64_t panels = (c->OW + PANEL - 1) / PANEL;
  LLVMValueRef pn = fc_cg_loop_begin(k, &lp, c64(k, 0), c64(k, panels), 1, "panel");
  LLVMValueRef ox0 = fc_cg_smin(k, fc_cg_imulc(k, pn, PANEL), c64(k, c->OW - PANEL));
  build_b(k, &s, plane, bt, row, ox0, masks);
  p.col0 = fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, oy0, row), c->OW), ox0);
  LLVMValueRef cp = fc_cg_loop_begin(k, &lcp, c64(k, 0), c64(k, s.MT / 2), 1, "ctiles");
  panel_tiles(k, &s, &p, fc_cg_imulc(k, cp, 2), 2);
  fc_cg_loop_end(k, &lcp);
  if (s.MT % 2) panel_tiles(k, &s, &p, c64(k, s.MT - 1), 1);
  fc_cg_loop_end(k, &lp);
  fc_cg_loop_end(k, &lr);
  fc_cg_loop_end(k, &lo);
  fc_qp_free(&t->q);
  return FC_OK;
}
