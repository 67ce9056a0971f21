/* kernel_conv_i8_few_pixels.c — the quantised flow.conv of qspec §2 on a small output map (ResNet's and
 * MobileNetV2's 7×7 and 14×14 stages), with the output CHANNELS in the vector lanes: per group Y[Mg, P]ᵀ =
 * Col[K, P]ᵀ · W'[Mg, K]ᵀ, the f32 few-pixel conv's orientation (kernel_conv_few_pixels.c) on the integer dots.
 *
 * kernel_conv_i8.c puts the pixels in the lanes: 49 pixels fill four 16-pixel panels (a quarter padding),
 * and its L2-sized im2col blocks of 16 pixels make the weights (2.4 MB at ResNet's layer4) stream from memory
 * once per block. Here a tile is mr pixels × nv vectors of channels (fc_target_i8_conv_few_pixels_tile: 7 × 1
 * or 5 × 2 on AVX2, 7 × 2 on AVX-512 for 49 pixels: almost no padding, as channel counts are multiples of 16
 * in real networks). Each k step broadcasts a pixel's 4-byte quad of Col (i32) and meets nv vectors of
 * channels' quads with the target's dot — kernel_matmul_i8.c's orientation, a pixel being an A row. Col is
 * the pixel kernel's interleaved im2col (cg_conv_i8.h: Col[k/kg][p][4 bytes]), built once per image and group
 * for all its pixels (a task keeps it for its following channel panels: fc_kernel_cached_key), so the weights are
 * read once per image. A task is one panel of 16·U channels (U = the 16-channel units a tile spans) against
 * every pixel tile: the panel's weights stay in L2 while the tiles stream Col from it, and each tile prefetches
 * its share of the next panel's weights into L2.
 * Weights: per group, units of 16 channels, K quads major, channels inner: byte
 * ((g·MT + m/16)·KQ + k/4)·64 + (m%16)·4 + k%4 holds W'[g][m][k] (MT = ceil(Mg/16), KQ = ceil(K/4), zeros
 * past Mg and K), then the corrections (i32) and multipliers (f32) of the G·MT·16 padded channels, so a
 * vector of 8 or 16 channels' quads, and of their corrections and multipliers, is one load. The layout depends
 * on the shape only, and so does the choice of this kernel (fc_conv_i8_few_pixels_applies) on every target
 * without AMX for maps of up to 16×16: the variants of a multiversioned artefact read one stored copy (the
 * larger maps that VNNI variants alone take here are packed twice). An AMX variant keeps the
 * pixel kernel's tiles (not bound by pixel vectors) and its packing: a second copy there.
 * Dots: vpdpbusd; vpmaddubsw + vpmaddwd where no weight pair can saturate it; else WIDEN: Col as u16 pairs
 * (kg = 2), the task's panel sign-extended once into its scratch as i16 pairs ([pair][16·U channels][2 × i16])
 * and one vpmaddwd per pixel and vector. Where 7-bit activations would make vpmaddubsw exact, both (the dual
 * form of kernel_conv_i8.c: real activations exceed 127 in a few channels only): the Col is built by chunks
 * of 64 k, each as quads for vpmaddubsw where all its bytes are below 0x80, else as u16 pairs (cg_conv_i8.h's
 * chunked Col; plain quads where no chunk needs pairs), and a tile's k loop takes each chunk with its dot,
 * into the same i32 accumulators. One wide byte makes its whole chunk WIDEN for every pixel, and MobileNetV2's
 * linear bottlenecks have one in most images, so where the wide columns (the pixels whose column holds such a
 * byte) are at most an eighth of the image the Col is plain quads anyway and, after a panel's tiles, each wide
 * column's outputs are recomputed exactly: its quads split into the bytes' low 7 bits and their 0x80s, two
 * vpmaddubsw dots that cannot saturate (fix_wide_columns). All of them accumulate exactly in i32 the products the pixel kernel
 * does, and the requantisation (cg_requant.h) is the same per element with the channel varying along the
 * lanes, so the results are bit-identical. Where vpmaddubsw runs on tiles of at most 16 channels, the quads
 * go two at a time in each chunk of 64 k whose weights allow one of cg_quad_pairs.c's fixed patterns, as in
 * the pixel kernel. Weights outside s8 (an
 * asymmetric weight zero point) stay on the pixel kernel. A finished tile is stored to Y (NCHW) transposed (fc_qp_store_tile_transposed): each
 * channel's mr pixels are adjacent there.
 */
#include <stdlib.h>
#include <string.h>

#include "cg_conv_i8.h"

/* At most this many output pixels, and bytes of the interleaved Col of one image (counted at its widest, 2
 * bytes a k): it stays in L2 while every channel panel streams it (ResNet-18's 7×7 convs: 295 KB at
 * K = 4608, 590 KB as u16 pairs; with the byte rows and padded planes a task's scratch is about 1.5 times it).
 * Where the target's dot is one instruction (fc_target_i8_channel_lanes_large), convs with kernels wider
 * than 1×1 and K of at least LARGE_MIN_K take this kernel on maps up to LARGE_MAX_PIXELS too, their Col up to
 * LARGE_MAX_COL_BYTES (ResNet-18's 56×56 3×3 convs: 3.6 MB, from L3). */
enum {
  MAX_PIXELS = 256,
  MAX_COL_BYTES = 1 << 20,
  LARGE_MAX_PIXELS = 64 * 64,
  LARGE_MAX_COL_BYTES = 8 << 20,
  LARGE_MIN_K = 256,
};

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* Whether every w - zw of op's weights fits s8 (fc_qp_init's w8, without building the tables). */
static bool weights_fit_s8(const FcOp *op) {
  const FcValue *wv = op->operands[1].value;
  const FcQuant *wq = wv->type.quant;
  const FcTensor *wc = fc_value_const(wv);
  const uint8_t *wb = wc->data;
  int64_t per = wq->n > 1 ? wc->nbytes / wq->n : wc->nbytes; /* bytes a channel (axis 0) */
  for (int64_t i = 0; i < wc->nbytes; i++) {
    int v = wq->storage == FC_DT_I8 ? (int8_t)wb[i] : wb[i];
    int d = v - (int)wq->zero_points[wq->n > 1 ? i / per : 0];
    if (d < -128 || d > 127) return false;
  }
  return true;
}

/* Whether a conv's map (its size checked by the caller: MAX_PIXELS, or LARGE_MAX_PIXELS on VNNI) pads its
 * tiles here no more than the pixel kernel's, at 8 and at 16 lanes (AVX2 and AVX-512) both, so the choice for
 * small maps is the same on every target without AMX (one packing in a multiversioned artefact). Not only the
 * padding pays: the pixel kernel streams the weights once per L2-sized block of pixels (5 blocks at ResNet's
 * 14×14 3×3 convs, where both orientations pad alike), this one once per image (measured faster at 7×7 and
 * 14×14, the same at worst). Larger maps keep the pixel kernel except on VNNI (see the enum above). */
static bool few_pixels_pays(const FcConv2 *c) {
  static const int widths[2][2] = {{8, 2}, {16, 4}}; /* lanes, the pixel kernel's most pixel vectors */
  for (int i = 0; i < 2; i++) {
    int lanes = widths[i][0];
    /* the pixel kernel (fc_conv_i8_pixel_tile): 4 channels × the 2 .. max vectors of pixels that pad P least */
    int64_t pix = round_up(c->P, 2 * lanes);
    for (int nv = 3; nv <= widths[i][1]; nv++)
      if (round_up(c->P, (int64_t)nv * lanes) < pix) pix = round_up(c->P, (int64_t)nv * lanes);
    double plain = (double)pix * (double)round_up(c->Mg, 4), few = 0;
    /* this one: the best of 1..7 pixels × 1 or 2 vectors of channels */
    for (int nv = 1; nv <= 2; nv++)
      for (int mr = 1; mr <= 7; mr++) {
        double a = (double)round_up(c->P, mr) * (double)round_up(c->Mg, (int64_t)nv * lanes);
        if (few == 0 || a < few) few = a;
      }
    if (few > plain) return false;
  }
  return true;
}

bool fc_conv_i8_few_pixels_applies(const FcKernel *k) {
  const FcOp *op = k->op;
  FcConv2 c;
  if (!fc_conv_i8_applies(k) || !fc_conv2_of(op, &c)) return false;
  bool w8 = weights_fit_s8(op);
  /* AMX tiles (the pixel kernel's) where they are worth it; WIDEN16 (weights outside s8) stays there too */
  if (!w8 || fc_target_i8_amx_worth(k->target, c.Mg, c.K)) return false;
  /* the whole image's Col at its widest (u16 pairs: 2 bytes a k) for pixels padded to 16 */
  int64_t col;
  if (!fc_checked_mul(2 * c.K, round_up(c.P, 16), &col)) return false;
  if ((c.P > MAX_PIXELS || col > MAX_COL_BYTES) &&
      (!fc_target_i8_channel_lanes_large(k->target) || c.KH * c.KW == 1 || c.K < LARGE_MIN_K ||
       c.P > LARGE_MAX_PIXELS || col > LARGE_MAX_COL_BYTES))
    return false;
  return few_pixels_pays(&c);
}

/* The kernel's plan: the pixel kernel's state (Col, dot, tile: g.mr pixels × g.nv vectors of channels) and
 * the panels. */
typedef struct FewPx {
  FcConvI8 t;
  int64_t MT, KQ;         /* 16-channel units a group, k quads */
  int64_t U, PW, NP;      /* units a panel, its channels (16·U), panels a group */
  int64_t wbytes;         /* the packed weights before the tables */
  int64_t tiles;          /* pixel tiles: ceil(P / mr) */
  int64_t lines;          /* 64-byte lines of the packed weights (G·MT·KQ) */
  int64_t pf_lines;       /* a tile's share of the next panel's lines */
  LLVMValueRef wp, wide;  /* the packed constant; WIDEN's widened panel in the scratch */
  LLVMValueRef codes;     /* the pair patterns (fc_quad_xor_pairs_plan) where the tiles read them, or NULL */
} FewPx;

/* The packed constant: weights [G][MT][KQ][16][4] | corr: i32 × G·MT·16 | mult: f32 × G·MT·16. */
static int8_t *pack_weights(const FewPx *f, const uint8_t *pairs, int64_t pair_bytes, int64_t *bytes) {
  const FcConv2 *c = &f->t.c;
  int64_t chans = c->G * f->MT * 16;
  *bytes = f->wbytes + 8 * chans + (pairs ? pair_bytes : 0);
  int8_t *pk = calloc((size_t)*bytes, 1);
  int32_t *corr = calloc((size_t)chans, 4);
  float *mult = calloc((size_t)chans, 4);
  if (!pk || !corr || !mult) fc_die(__FILE__, __LINE__, "out of memory");
  for (int64_t m = 0; m < c->M; m++) {
    int64_t grp = m / c->Mg, ml = m % c->Mg, at = grp * f->MT * 16 + ml;
    for (int64_t kk = 0; kk < c->K; kk++)
      pk[((grp * f->MT + ml / 16) * f->KQ + kk / 4) * 64 + (ml % 16) * 4 + kk % 4] = (int8_t)f->t.q.w[m * c->K + kk];
    corr[at] = f->t.q.corr[m];
    mult[at] = f->t.q.mult[m];
  }
  memcpy(pk + f->wbytes, corr, (size_t)chans * 4);
  memcpy(pk + f->wbytes + 4 * chans, mult, (size_t)chans * 4);
  if (pairs) memcpy(pk + f->wbytes + 8 * chans, pairs, (size_t)pair_bytes);
  free(corr);
  free(mult);
  return pk;
}

/* WIDEN: panel pn of group grp sign-extended into f->wide as i16 pairs: pair j of channel slot s (of the
 * panel's 16·U) at (j·PW + s)·4. Units past the group's last read its last unit again (their channels are
 * past Mg: dropped). */
static void widen_panel(FcKernel *k, const FewPx *f, LLVMValueRef grp, LLVMValueRef pn) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef v64 = LLVMVectorType(i8, 64), w64 = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), 64);
  LLVMTypeRef d32 = LLVMVectorType(i32, 32);
  LLVMValueRef ev[16], od[16];
  for (int j = 0; j < 16; j++) {
    ev[j] = LLVMConstInt(i32, (unsigned)(2 * j), 0);
    od[j] = LLVMConstInt(i32, (unsigned)(2 * j + 1), 0);
  }
  FcLoop lq;
  LLVMValueRef q = fc_cg_loop_begin(k, &lq, c64(k, 0), c64(k, f->KQ), 1, "widen");
  for (int64_t s = 0; s < f->U; s++) {
    LLVMValueRef u = fc_cg_smin(k, fc_cg_iadd(k, fc_cg_imulc(k, pn, f->U), c64(k, s)), c64(k, f->MT - 1));
    LLVMValueRef so = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, grp, f->MT), u), f->KQ), q), 64);
    LLVMValueRef v = LLVMBuildLoad2(b, v64, LLVMBuildGEP2(b, i8, f->wp, &so, 1, ""), "");
    LLVMSetAlignment(v, 64);
    LLVMValueRef d = LLVMBuildBitCast(b, LLVMBuildSExt(b, v, w64, ""), d32, "");
    for (int h = 0; h < 2; h++) { /* pair h of the quad: the even (odd) i32 lanes */
      LLVMValueRef half = LLVMBuildShuffleVector(b, d, LLVMGetUndef(d32), LLVMConstVector(h ? od : ev, 16), "");
      LLVMValueRef dof = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, q, 2), c64(k, h)), f->PW), c64(k, 16 * s)), 4);
      LLVMValueRef st = LLVMBuildStore(b, half, LLVMBuildGEP2(b, i8, f->wide, &dof, 1, ""));
      LLVMSetAlignment(st, 64);
    }
  }
  fc_cg_loop_end(k, &lq);
}

/* llvm.prefetch of the line at p into L2 (prefetcht1: the tile's Col and weights keep L1). */
static void prefetch_l2(FcKernel *k, LLVMValueRef p) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx), ptr = LLVMPointerTypeInContext(k->ctx, 0);
  LLVMValueRef args[4] = {p, LLVMConstInt(i32, 0, 0), LLVMConstInt(i32, 2, 0), LLVMConstInt(i32, 1, 0)};
  fc_cg_intrinsic(k, "llvm.prefetch", ptr, args, 4);
}

/* One k group of a tile with the dot `dot`: mr pixels' quads (pairs) at pcol + coff[0] + 4i (coff: g·PB·4)
 * broadcast against the nv weight vectors at wbase[v] + woff[0] (g·wstep). With n = 2, two quads at once by
 * fc_i8_dot_pair (cg_quad_pairs.c's pairs only). */
static void k_step_n(FcKernel *k, const FewPx *f, FcI8Dot dot, LLVMValueRef acc, LLVMValueRef pcol,
                     const LLVMValueRef *wbase, const LLVMValueRef *coff, const LLVMValueRef *woff, int n) {
  const FcConvI8 *t = &f->t;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  int w = t->g.lanes, mr = t->g.mr, nv = t->g.nv;
  LLVMTypeRef vi = LLVMVectorType(i32, (unsigned)w), vb = LLVMVectorType(i8, (unsigned)(4 * w));
  LLVMValueRef wv[2][4] = {{0}}, arow[2] = {0};
  for (int h = 0; h < n; h++) {
    arow[h] = LLVMBuildGEP2(b, i8, pcol, (LLVMValueRef[]){coff[h]}, 1, "");
    for (int v = 0; v < nv; v++) {
      wv[h][v] = LLVMBuildLoad2(b, vb, LLVMBuildGEP2(b, i8, wbase[v], (LLVMValueRef[]){woff[h]}, 1, ""), "");
      LLVMSetAlignment(wv[h][v], (unsigned)(4 * w));
    }
  }
  for (int i = 0; i < mr; i++) {
    LLVMValueRef a[2] = {0};
    for (int h = 0; h < n; h++) {
      LLVMValueRef a32 = LLVMBuildLoad2(b, i32, LLVMBuildGEP2(b, i8, arow[h], (LLVMValueRef[]){c64(k, 4 * i)}, 1, ""), "");
      LLVMSetAlignment(a32, 4);
      a[h] = LLVMBuildBitCast(b, fc_cg_splat(k, a32, (unsigned)w), vb, "");
    }
    for (int v = 0; v < nv; v++) {
      LLVMValueRef p = fc_cg_tile_at(k, vi, acc, c64(k, i * nv + v)), s = LLVMBuildLoad2(b, vi, p, "");
      LLVMBuildStore(b, n == 2 ? fc_i8_dot_pair(k, w, s, a[0], wv[0][v], a[1], wv[1][v]) : fc_i8_dot(k, dot, w, s, a[0], wv[0][v]), p);
    }
  }
}

static void k_step(FcKernel *k, const FewPx *f, FcI8Dot dot, LLVMValueRef acc, LLVMValueRef pcol,
                   const LLVMValueRef *wbase, int64_t wstep, LLVMValueRef g) {
  LLVMValueRef coff = fc_cg_imulc(k, g, f->t.PB * 4), woff = fc_cg_imulc(k, g, wstep);
  k_step_n(k, f, dot, acc, pcol, wbase, &coff, &woff, 1);
}

/* A chunk's quads on vpmaddubsw by its pair pattern (fc_quad_xor_chunk's step): the tile, its Col at pcol and
 * its weights at wbase[v] (quad g: + g·PB·4 and + 64g). */
typedef struct XorChunk {
  const FewPx *f;
  LLVMValueRef acc, pcol;
  const LLVMValueRef *wbase;
} XorChunk;

static void xor_step(FcKernel *k, void *ctx, LLVMValueRef quad0, const int *quads, int n) {
  const XorChunk *x = ctx;
  LLVMValueRef coff[2], woff[2];
  for (int h = 0; h < n; h++) {
    LLVMValueRef g = fc_cg_iadd(k, quad0, c64(k, quads[h]));
    coff[h] = fc_cg_imulc(k, g, x->f->t.PB * 4);
    woff[h] = fc_cg_imulc(k, g, 64);
  }
  k_step_n(k, x->f, FC_I8DOT_MADDUBS, x->acc, x->pcol, x->wbase, coff, woff, n);
}

/* Chunk h (of `quads` quads, a constant, so LLVM unrolls its loop) of a tile over a chunked Col
 * (cg_conv_i8.h): its quads with vpmaddubsw against the s8 packing (wbase) where flags[h] says its bytes
 * allow, else its pairs with vpmaddwd against the widened panel (wide_base). */
static void chunk_k_steps(FcKernel *k, const FewPx *f, LLVMValueRef acc, LLVMValueRef pcol, const LLVMValueRef *wbase,
                          const LLVMValueRef *wide_base, LLVMValueRef h, int64_t quads) {
  const FcConvI8 *t = &f->t;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef hcol = LLVMBuildGEP2(b, i8, pcol, (LLVMValueRef[]){fc_cg_imulc(k, h, 128 * t->PB)}, 1, "");
  LLVMValueRef hw[4] = {0};
  LLVMValueRef flag = LLVMBuildLoad2(b, i8, LLVMBuildGEP2(b, i8, t->flags, &h, 1, ""), "");
  LLVMValueRef narrow = LLVMBuildICmp(b, LLVMIntNE, flag, LLVMConstInt(i8, 0, 0), "");
  FcLoop lk;
  LLVMBasicBlockRef cont = fc_cg_if_begin(k, narrow);
  for (int v = 0; v < t->g.nv; v++) hw[v] = LLVMBuildGEP2(b, i8, wbase[v], (LLVMValueRef[]){fc_cg_imulc(k, h, 16 * 64)}, 1, "");
  /* (an image with a WIDEN chunk is rare: its quads one by one, without the pair table's loops) */
  LLVMValueRef g = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, quads), 1, "quad");
  k_step(k, f, FC_I8DOT_MADDUBS, acc, hcol, hw, 64, g);
  fc_cg_loop_end(k, &lk);
  fc_cg_if_end(k, cont);
  cont = fc_cg_if_begin(k, LLVMBuildNot(b, narrow, ""));
  for (int v = 0; v < t->g.nv; v++)
    hw[v] = LLVMBuildGEP2(b, i8, wide_base[v], (LLVMValueRef[]){fc_cg_imulc(k, h, 32 * f->PW * 4)}, 1, "");
  g = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, 2 * quads), 1, "pair");
  k_step(k, f, FC_I8DOT_WIDEN, acc, hcol, hw, f->PW * 4, g);
  fc_cg_loop_end(k, &lk);
  fc_cg_if_end(k, cont);
}

/* The k loop of a tile by chunks of 16 quads: a chunked Col's (chunk_k_steps: the whole chunks, then the last
 * one's real quads), or (plain) plain quads on vpmaddubsw in the pair table's order (every chunk by one loop;
 * unit: the table's row, group · MT + the tile's unit). Each chunk first prefetches its share of the tile's
 * pf_lines lines of the next panel's weights. */
static void chunked_k_loop(FcKernel *k, const FewPx *f, LLVMValueRef acc, LLVMValueRef pcol, const LLVMValueRef *wbase,
                           const LLVMValueRef *wide_base, LLVMValueRef unit, LLVMValueRef pf_line, bool plain) {
  const FcConvI8 *t = &f->t;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  int64_t per_chunk = (f->pf_lines + t->NH - 1) / t->NH;
  FcLoop lh;
  LLVMValueRef h = fc_cg_loop_begin(k, &lh, c64(k, 0), c64(k, t->NH), 1, "kchunk");
  for (int64_t i = 0; i < per_chunk; i++) {
    LLVMValueRef nth = fc_cg_smin(k, fc_cg_iadd(k, fc_cg_imulc(k, h, per_chunk), c64(k, i)), c64(k, f->pf_lines - 1));
    LLVMValueRef line = fc_cg_smin(k, fc_cg_iadd(k, pf_line, nth), c64(k, f->lines - 1));
    prefetch_l2(k, LLVMBuildGEP2(b, i8, f->wp, (LLVMValueRef[]){fc_cg_imulc(k, line, 64)}, 1, ""));
  }
  if (plain) {
    /* a chunk with a code (fc_quad_xor_chunks: 64 whole k) by its pair pattern, the rest (the last chunk, and
     * a whole one whose last quad is partial) by their real quads one by one */
    XorChunk x = {f, acc, pcol, wbase};
    int64_t coded = fc_quad_xor_chunks(t->c.K);
    LLVMValueRef has_code = LLVMBuildICmp(b, LLVMIntSLT, h, c64(k, coded), "");
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, has_code);
    LLVMValueRef at = fc_cg_iadd(k, fc_cg_imulc(k, unit, coded), h);
    LLVMValueRef code = LLVMBuildZExt(b, fc_cg_load(k, FC_DT_U8, f->codes, at), LLVMInt64TypeInContext(k->ctx), "");
    fc_quad_xor_chunk(k, code, h, xor_step, &x);
    fc_cg_if_end(k, cont);
    if (t->NH > coded) {
      cont = fc_cg_if_begin(k, LLVMBuildNot(b, has_code, ""));
      FcLoop lq;
      LLVMValueRef q0 = fc_cg_imulc(k, h, 16);
      LLVMValueRef end = fc_cg_smin(k, fc_cg_iadd(k, q0, c64(k, 16)), c64(k, f->KQ));
      LLVMValueRef g = fc_cg_loop_begin(k, &lq, q0, end, 1, "quad");
      k_step(k, f, FC_I8DOT_MADDUBS, acc, pcol, wbase, 64, g);
      fc_cg_loop_end(k, &lq);
      fc_cg_if_end(k, cont);
    }
  } else if (f->KQ % 16) {
    LLVMValueRef whole = LLVMBuildICmp(b, LLVMIntSLT, h, c64(k, f->KQ / 16), "");
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, whole);
    chunk_k_steps(k, f, acc, pcol, wbase, wide_base, h, 16);
    fc_cg_if_end(k, cont);
    cont = fc_cg_if_begin(k, LLVMBuildNot(b, whole, ""));
    chunk_k_steps(k, f, acc, pcol, wbase, wide_base, h, f->KQ % 16);
    fc_cg_if_end(k, cont);
  } else {
    chunk_k_steps(k, f, acc, pcol, wbase, wide_base, h, 16);
  }
  fc_cg_loop_end(k, &lh);
}

/* The k loop of a tile over a Col of one layout: its KG groups (quads, or pairs for WIDEN) with the dot
 * `dot`, a pixel's at cols + (g·PB + p)·4, a vector's weights wstep apart; by chunks of `every` groups, each
 * after one prefetch of the tile's share of the next panel's weights. */
static void plain_k_loop(FcKernel *k, const FewPx *f, FcI8Dot dot, int64_t KG, int64_t wstep, LLVMValueRef acc,
                         LLVMValueRef pcol, const LLVMValueRef *wbase, LLVMValueRef pf_line) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  int64_t every = KG / f->pf_lines > 1 ? KG / f->pf_lines : 1, chunks = KG / every;
  FcLoop lh, lk;
  LLVMValueRef h = fc_cg_loop_begin(k, &lh, c64(k, 0), c64(k, chunks), 1, "kchunk");
  LLVMValueRef line = fc_cg_smin(k, fc_cg_iadd(k, pf_line, fc_cg_smin(k, h, c64(k, f->pf_lines - 1))), c64(k, f->lines - 1));
  prefetch_l2(k, LLVMBuildGEP2(b, i8, f->wp, (LLVMValueRef[]){fc_cg_imulc(k, line, 64)}, 1, ""));
  LLVMValueRef g0 = fc_cg_imulc(k, h, every);
  LLVMValueRef g = fc_cg_loop_begin(k, &lk, g0, fc_cg_iadd(k, g0, c64(k, every)), 1, "kg");
  k_step(k, f, dot, acc, pcol, wbase, wstep, g);
  fc_cg_loop_end(k, &lk);
  fc_cg_loop_end(k, &lh);
  if (KG % every) {
    g = fc_cg_loop_begin(k, &lk, c64(k, chunks * every), c64(k, KG), 1, "kgrem");
    k_step(k, f, dot, acc, pcol, wbase, wstep, g);
    fc_cg_loop_end(k, &lk);
  }
}

/* The channel tile at c0 of the group (slot c0 - pn·PW of panel pn): per vector v its first channel cv[v],
 * kept inside the padded units (a vector wholly past them is dropped, so it may read any of them), and where
 * its weights start in the s8 packing (wbase) and in the widened panel (wide_base; wbase too for WIDEN). */
static void channel_bases(FcKernel *k, const FewPx *f, LLVMValueRef grp, LLVMValueRef pn, LLVMValueRef c0,
                          LLVMValueRef *cv, LLVMValueRef *wbase, LLVMValueRef *wide_base) {
  const FcConvI8 *t = &f->t;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  int w = t->g.lanes;
  for (int v = 0; v < t->g.nv; v++) {
    cv[v] = fc_cg_smin(k, fc_cg_iadd(k, c0, c64(k, (int64_t)v * w)), c64(k, f->MT * 16 - w));
    /* its slot in the widened panel (a clamped vector's too: the panel holds unit MT - 1) */
    LLVMValueRef slot = fc_cg_isub(k, cv[v], fc_cg_imulc(k, pn, f->PW));
    wide_base[v] = LLVMBuildGEP2(b, i8, f->wide, (LLVMValueRef[]){fc_cg_imulc(k, slot, 4)}, 1, "");
    LLVMValueRef u = LLVMBuildSDiv(b, cv[v], c64(k, 16), ""), r = LLVMBuildSRem(b, cv[v], c64(k, 16), "");
    LLVMValueRef off = fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, grp, f->MT), u), f->KQ * 64), fc_cg_imulc(k, r, 4));
    wbase[v] = t->sext ? wide_base[v] : LLVMBuildGEP2(b, i8, f->wp, &off, 1, "");
  }
}

/* outv[j] = fc_qp_finish(acc[j]) for j < n, 4 vectors at a time through fc_qp_finish_packed where it applies
 * (its saturating packs instead of a clamp and a truncation per vector), each vector then the matching quarter
 * of the packed bytes. */
static void finish_vectors(FcKernel *k, const FcQuantProduct *q, const LLVMValueRef *acc, const LLVMValueRef *corr,
                           const LLVMValueRef *mult, int n, int w, LLVMValueRef *outv) {
  int j = 0;
  for (LLVMValueRef packed; j + 4 <= n && (packed = fc_qp_finish_packed(k, q, acc + j, 4, corr + j, mult + j)); j += 4)
    for (int u = 0; u < 4; u++) {
      int idx[16];
      for (int e = 0; e < w; e++) idx[e] = u * w + e;
      outv[j + u] = fc_cg_shuffle(k, packed, LLVMGetUndef(LLVMTypeOf(packed)), idx, w);
    }
  for (; j < n; j++) outv[j] = fc_qp_finish(k, q, acc[j], corr[j], mult[j]);
}

/* The first mr·nv accumulators (mr pixels from p0, the channel tile at c0 with its vectors at cv[]) requantised
 * per lane (a vector of channels' corrections and multipliers: the tables after the weights) and stored to Y
 * at ybase + channel·P + pixel, transposed. */
static void finish_tile(FcKernel *k, const FewPx *f, int mr, LLVMValueRef acc, LLVMValueRef edge, LLVMValueRef grp,
                        LLVMValueRef ybase, const LLVMValueRef *cv, LLVMValueRef c0, LLVMValueRef p0) {
  const FcConvI8 *t = &f->t;
  const FcConv2 *c = &t->c;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx);
  int w = t->g.lanes, nv = t->g.nv;
  LLVMTypeRef vi = LLVMVectorType(i32, (unsigned)w), vf = LLVMVectorType(f32, (unsigned)w);
  LLVMTypeRef et = t->q.out == FC_DT_F32 ? f32 : i8;
  int64_t chans = c->G * f->MT * 16;
  LLVMValueRef corr[4], mult[4];
  for (int v = 0; v < nv; v++) {
    LLVMValueRef at = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, grp, f->MT * 16), cv[v]), 4);
    LLVMValueRef co = fc_cg_iadd(k, c64(k, f->wbytes), at), mo = fc_cg_iadd(k, c64(k, f->wbytes + 4 * chans), at);
    corr[v] = LLVMBuildLoad2(b, vi, LLVMBuildGEP2(b, i8, f->wp, &co, 1, ""), "");
    mult[v] = LLVMBuildLoad2(b, vf, LLVMBuildGEP2(b, i8, f->wp, &mo, 1, ""), "");
    LLVMSetAlignment(corr[v], 4);
    LLVMSetAlignment(mult[v], 4);
  }
  LLVMValueRef outv[64], accv[64], cor[64], mul[64];
  for (int i = 0; i < mr; i++)
    for (int v = 0; v < nv; v++) {
      accv[i * nv + v] = LLVMBuildLoad2(b, vi, fc_cg_tile_at(k, vi, acc, c64(k, i * nv + v)), "");
      cor[i * nv + v] = corr[v], mul[i * nv + v] = mult[v];
    }
  finish_vectors(k, &t->q, accv, cor, mul, mr * nv, w, outv);
  LLVMValueRef npx = fc_cg_smin(k, c64(k, mr), fc_cg_isub(k, c64(k, c->P), p0));
  LLVMValueRef nch = fc_cg_smin(k, c64(k, t->nr), fc_cg_isub(k, c64(k, c->Mg), c0));
  fc_qp_store_tile_transposed(k, et, outv, mr, nv, w, edge, ybase, p0, npx, c->P, c0, nch);
}

/* One tile: pixels [p0, p0 + mr) × the group's channels [c0, c0 + nv·lanes) (c0 at slot cs of panel pn), over
 * the whole K, requantised and stored to Y at ybase + channel·P + pixel. On the way it prefetches into L2
 * its share of the next panel's weights: lines [pf_line, pf_line + f->pf_lines) of the packing (see
 * fc_conv_i8_few_pixels), spread over its k groups (plain_k_loop, chunked_k_loop). */
static void tile(FcKernel *k, const FewPx *f, LLVMValueRef acc, LLVMValueRef edge, LLVMValueRef grp,
                 LLVMValueRef ybase, LLVMValueRef pn, LLVMValueRef cs, LLVMValueRef p0, LLVMValueRef pf_line) {
  const FcConvI8 *t = &f->t;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  int w = t->g.lanes, mr = t->g.mr, nv = t->g.nv;
  LLVMTypeRef vi = LLVMVectorType(i32, (unsigned)w);
  LLVMValueRef c0 = fc_cg_iadd(k, fc_cg_imulc(k, pn, f->PW), cs);
  LLVMValueRef cv[4], wbase[4], wide_base[4];
  channel_bases(k, f, grp, pn, c0, cv, wbase, wide_base);
  for (int i = 0; i < mr * nv; i++) LLVMBuildStore(b, LLVMConstNull(vi), fc_cg_tile_at(k, vi, acc, c64(k, i)));
  LLVMValueRef pcol = LLVMBuildGEP2(b, i8, t->cols, (LLVMValueRef[]){fc_cg_imulc(k, p0, 4)}, 1, "");
  /* the pair table's row: the tile's channels lie in one unit of 16 (t->pairs set only then) */
  LLVMValueRef unit = fc_cg_iadd(k, fc_cg_imulc(k, grp, f->MT), LLVMBuildSDiv(b, cv[0], c64(k, 16), ""));
  bool paired = f->codes != NULL;
  if (t->chunked) {
    /* an image without a WIDEN chunk has its Col as plain quads (interleave_chunks) */
    LLVMValueRef any = LLVMBuildGEP2(b, i8, t->flags, (LLVMValueRef[]){c64(k, t->NH)}, 1, "");
    LLVMValueRef mixed = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildLoad2(b, i8, any, ""), LLVMConstInt(i8, 0, 0), "");
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, mixed);
    chunked_k_loop(k, f, acc, pcol, wbase, wide_base, unit, pf_line, false);
    fc_cg_if_end(k, cont);
    cont = fc_cg_if_begin(k, LLVMBuildNot(b, mixed, ""));
    if (paired)
      chunked_k_loop(k, f, acc, pcol, wbase, wide_base, unit, pf_line, true);
    else
      plain_k_loop(k, f, FC_I8DOT_MADDUBS, f->KQ, 64, acc, pcol, wbase, pf_line);
    fc_cg_if_end(k, cont);
  } else if (paired) {
    chunked_k_loop(k, f, acc, pcol, wbase, wide_base, unit, pf_line, true);
  } else {
    plain_k_loop(k, f, t->g.dot, t->KG, t->sext ? f->PW * 4 : 64, acc, pcol, wbase, pf_line);
  }
  finish_tile(k, f, mr, acc, edge, grp, ybase, cv, c0, p0);
}

/* Pixel p's outputs of the panel's ctiles channel tiles recomputed exactly over what its vpmaddubsw tiles
 * stored: its column (plain quads) split into the bytes' low 7 bits and their 0x80s, each with vpmaddubsw
 * into the same accumulators (a pair of products stays within i16 for either: 127 · 128 · 2 and 128 · 128 · 2
 * at most, the latter -32768 exactly), which sum to the exact dot. */
static void fix_column(FcKernel *k, const FewPx *f, LLVMValueRef acc, LLVMValueRef edge, LLVMValueRef grp,
                       LLVMValueRef ybase, LLVMValueRef pn, LLVMValueRef ctiles, LLVMValueRef p) {
  const FcConvI8 *t = &f->t;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  int w = t->g.lanes, nv = t->g.nv;
  LLVMTypeRef vi = LLVMVectorType(i32, (unsigned)w), vb = LLVMVectorType(i8, (unsigned)(4 * w));
  FcLoop lc, lq;
  LLVMValueRef ct = fc_cg_loop_begin(k, &lc, c64(k, 0), ctiles, 1, "fix_ct");
  LLVMValueRef c0 = fc_cg_iadd(k, fc_cg_imulc(k, pn, f->PW), fc_cg_imulc(k, ct, t->nr));
  LLVMValueRef cv[4], wbase[4], wide_base[4];
  channel_bases(k, f, grp, pn, c0, cv, wbase, wide_base);
  for (int v = 0; v < nv; v++) LLVMBuildStore(b, LLVMConstNull(vi), fc_cg_tile_at(k, vi, acc, c64(k, v)));
  LLVMValueRef q = fc_cg_loop_begin(k, &lq, c64(k, 0), c64(k, f->KQ), 1, "fix_q");
  LLVMValueRef at = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, q, t->PB), p), 4);
  LLVMValueRef a32 = LLVMBuildLoad2(b, i32, LLVMBuildGEP2(b, i8, t->cols, &at, 1, ""), "");
  LLVMSetAlignment(a32, 4);
  LLVMValueRef lo = LLVMBuildBitCast(b, fc_cg_splat(k, LLVMBuildAnd(b, a32, LLVMConstInt(i32, 0x7f7f7f7f, 0), ""), (unsigned)w), vb, "");
  LLVMValueRef hi = LLVMBuildBitCast(b, fc_cg_splat(k, LLVMBuildAnd(b, a32, LLVMConstInt(i32, 0x80808080u, 0), ""), (unsigned)w), vb, "");
  for (int v = 0; v < nv; v++) {
    LLVMValueRef wv = LLVMBuildLoad2(b, vb, LLVMBuildGEP2(b, i8, wbase[v], (LLVMValueRef[]){fc_cg_imulc(k, q, 64)}, 1, ""), "");
    LLVMSetAlignment(wv, (unsigned)(4 * w));
    LLVMValueRef pa = fc_cg_tile_at(k, vi, acc, c64(k, v));
    LLVMValueRef sum = fc_i8_dot(k, FC_I8DOT_MADDUBS, w, LLVMBuildLoad2(b, vi, pa, ""), lo, wv);
    LLVMBuildStore(b, fc_i8_dot(k, FC_I8DOT_MADDUBS, w, sum, hi, wv), pa);
  }
  fc_cg_loop_end(k, &lq);
  finish_tile(k, f, 1, acc, edge, grp, ybase, cv, c0, p);
  fc_cg_loop_end(k, &lc);
}

/* Where the Col build chose the fix-up (flags[NH + 1]: a few wide columns, plain quads), each wide pixel's
 * outputs of panel pn recomputed (fix_column). */
static void fix_wide_columns(FcKernel *k, const FewPx *f, LLVMValueRef acc, LLVMValueRef edge, LLVMValueRef grp,
                             LLVMValueRef ybase, LLVMValueRef pn, LLVMValueRef ctiles) {
  const FcConvI8 *t = &f->t;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef fix = LLVMBuildLoad2(b, i8, LLVMBuildGEP2(b, i8, t->flags, (LLVMValueRef[]){c64(k, t->NH + 1)}, 1, ""), "");
  LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntNE, fix, LLVMConstInt(i8, 0, 0), ""));
  FcWideLoop w;
  LLVMValueRef p = fc_conv_i8_wide_loop_begin(k, t, &w);
  fix_column(k, f, acc, edge, grp, ybase, pn, ctiles, p);
  fc_conv_i8_wide_loop_end(k, &w);
  fc_cg_if_end(k, cont);
}

/* f's k groups (t->g and t->chunked set): kg, KG and NH. A chunked Col takes the sizes of its widest layout
 * (cg_conv_i8.h). */
static void plan_dot(FewPx *f) {
  FcConvI8 *t = &f->t;
  t->sext = !t->chunked && t->g.dot == FC_I8DOT_WIDEN;
  t->NH = (f->KQ + 15) / 16;
  t->kg = t->sext || t->chunked ? 2 : 4;
  t->KG = t->chunked ? 32 * t->NH : (t->c.K + t->kg - 1) / t->kg;
}

/* Panel pn of (image, group) ng, its Col built: the panel's channel tiles inside the group, each against every
 * pixel tile (WIDEN first widens the panel's weights; a chunked Col where any chunk is WIDEN). */
static void run_panel(FcKernel *k, const FewPx *f, LLVMValueRef acc, LLVMValueRef edge, LLVMValueRef pn,
                      LLVMValueRef ng) {
  const FcConv2 *c = &f->t.c;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  int64_t nr = f->t.nr;
  LLVMValueRef grp = LLVMBuildSRem(b, ng, c64(k, c->G), "");
  if (f->t.sext) {
    widen_panel(k, f, grp, pn);
  } else if (f->t.chunked) {
    LLVMValueRef any = LLVMBuildGEP2(b, i8, f->t.flags, (LLVMValueRef[]){c64(k, f->t.NH)}, 1, "");
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntNE, LLVMBuildLoad2(b, i8, any, ""), LLVMConstInt(i8, 0, 0), ""));
    widen_panel(k, f, grp, pn);
    fc_cg_if_end(k, cont);
  }
  LLVMValueRef left = fc_cg_isub(k, c64(k, c->Mg), fc_cg_imulc(k, pn, f->PW));
  LLVMValueRef ctiles = fc_cg_smin(k, c64(k, f->PW / nr), LLVMBuildSDiv(b, fc_cg_iadd(k, left, c64(k, nr - 1)), c64(k, nr), ""));
  LLVMValueRef ybase = fc_cg_imulc(k, ng, c->Mg * c->P);
  /* the next outer iteration's first unit: the group's next panel, or the next group's (image's) first */
  LLVMValueRef next = fc_cg_select(k, LLVMBuildICmp(b, LLVMIntSLT, pn, c64(k, f->NP - 1), ""),
                                   fc_cg_iadd(k, fc_cg_imulc(k, grp, f->MT), fc_cg_imulc(k, fc_cg_iadd(k, pn, c64(k, 1)), f->U)),
                                   fc_cg_imulc(k, LLVMBuildSRem(b, fc_cg_iadd(k, grp, c64(k, 1)), c64(k, c->G), ""), f->MT));
  FcLoop lc, lp;
  LLVMValueRef ct = fc_cg_loop_begin(k, &lc, c64(k, 0), ctiles, 1, "ctile");
  LLVMValueRef pt = fc_cg_loop_begin(k, &lp, c64(k, 0), c64(k, f->tiles), 1, "ptile");
  LLVMValueRef share = fc_cg_iadd(k, fc_cg_imulc(k, ct, f->tiles), pt);
  LLVMValueRef pf_line = fc_cg_iadd(k, fc_cg_imulc(k, next, f->KQ), fc_cg_imulc(k, share, f->pf_lines));
  tile(k, f, acc, edge, grp, ybase, pn, fc_cg_imulc(k, ct, nr), fc_cg_imulc(k, pt, f->t.g.mr), pf_line);
  fc_cg_loop_end(k, &lp);
  fc_cg_loop_end(k, &lc);
  if (f->t.wide_cols) fix_wide_columns(k, f, acc, edge, grp, ybase, pn, ctiles);
}

FcStatus fc_conv_i8_few_pixels(FcKernel *k) {
  FewPx f = {0};
  FcConvI8 *t = &f.t;
  FcConv2 *c = &t->c;
  if (!fc_conv2_of(k->op, c)) return fc_cg_error(k, FC_ERR_INTERNAL, "the few-pixel int8 conv does not apply");
  FcStatus st = fc_qp_init(k, 0, c->K, c->M, &t->q);
  if (st != FC_OK) return st;
  if (!t->q.w8) {
    fc_qp_free(&t->q);
    return fc_cg_error(k, FC_ERR_INTERNAL, "the few-pixel int8 conv needs weights in s8");
  }
  FcI8Gemm base;
  fc_target_i8_conv(k->target, &base);
  /* The dual form: a chunked Col, each chunk of 64 k on vpmaddubsw where its bytes are all below 0x80 and on
   * the exact WIDEN otherwise (real activations exceed 127 in a few channels, rarely: measured 1-5 channels
   * at 0.001-0.004% of the bytes in PyTorch's 7-bit ResNet-18), on the MADDUBS tile (fewer spare registers
   * than WIDEN's). */
  t->chunked = base.dot == FC_I8DOT_MADDUBS && fc_qp_narrow_at_run_time(&t->q);
  FcI8Dot dot = base.dot == FC_I8DOT_MADDUBS && !t->chunked && !fc_qp_pairs_exact(&t->q) ? FC_I8DOT_WIDEN : base.dot;
  fc_target_i8_conv_few_pixels_tile(k->target, dot, c->P, c->Mg, &t->g);
  int w = t->g.lanes, mr = t->g.mr, nv = t->g.nv;
  int64_t nr = (int64_t)nv * w;
  t->pointwise = c->K == c->Cg && c->sh == 1 && c->sw == 1 && c->OH == c->H && c->OW == c->W;
  t->PB = round_up(round_up(c->P, mr), 16); /* every tile's pixels, whole 16-pixel steps of the interleave */
  t->nr = nr;
  f.MT = (c->Mg + 15) / 16;
  f.KQ = (c->K + 3) / 4;
  f.U = (nr + 15) / 16;
  f.PW = 16 * f.U;
  f.NP = (c->Mg + f.PW - 1) / f.PW;
  f.tiles = (c->P + mr - 1) / mr;
  /* Streaming the weights from memory: a panel's are read from L3 or DRAM by its first pixel tile only (the
   * others find them in L2), at the pace of the dots (a line every k group or two: more than a core's share
   * of memory bandwidth). So every tile of a panel prefetches its share of the next panel's into L2, one
   * line every few k groups, and the reads spread over the whole panel's work (the f32 GEMM's streaming
   * B, cg_gemm.c). */
  int64_t panel_tiles = f.PW / nr * f.tiles;
  f.pf_lines = (f.U * f.KQ + panel_tiles - 1) / panel_tiles;
  plan_dot(&f);
  /* the scratch: the Col build's (fc_conv_i8_cols_layout); WIDEN's widened panel (2·KQ pairs × PW × 4 bytes)
   * after the Col, over the byte rows and planes: they are dead once the Col is built, and each panel is
   * widened after that; a chunked Col's flags last */
  int64_t outer, end, wide_bytes = 0, flags_at, bytes;
  if (!fc_checked_mul(c->N * c->G, f.NP, &outer) || !fc_conv_i8_cols_layout(t, &end) ||
      ((t->sext || t->chunked) && !fc_checked_mul(f.KQ * 8, f.PW, &wide_bytes)) || wide_bytes > INT64_MAX / 2 - t->col_bytes ||
      !fc_checked_mul(c->G * f.MT * 64, f.KQ, &f.wbytes) || f.wbytes > INT64_MAX / 2 - 8 * c->G * f.MT * 16) {
    fc_qp_free(&t->q);
    return fc_cg_error(k, FC_ERR_LIMIT, "the few-pixel int8 conv's blocks are too large");
  }
  flags_at = round_up(end > t->col_bytes + wide_bytes ? end : t->col_bytes + wide_bytes, 64);
  /* the pair patterns follow the packing where they pay on some variant (the same bytes for all); this one
   * reads them where its dot is vpmaddubsw and its tiles lie inside units of 16 channels */
  int64_t pair_bytes = 0;
  uint8_t *pairs = fc_quad_xor_pairs_plan(&t->q, c->G, c->Mg, c->K, &pair_bytes);
  int8_t *pk = pack_weights(&f, pairs, pair_bytes, &bytes);
  f.wp = fc_qp_packed_weights(k, &t->q, pk, bytes, f.wbytes, "packed_w_i8_fewpx");
  if (pairs && t->g.dot == FC_I8DOT_MADDUBS && nr <= 16)
    f.codes = LLVMBuildGEP2(k->b, LLVMInt8TypeInContext(k->ctx), f.wp,
                            (LLVMValueRef[]){c64(k, f.wbytes + 8 * c->G * f.MT * 16)}, 1, "pair_codes");
  free(pairs);
  fc_kernel_set_outer(k, outer, 2.0 * (double)c->P * (double)f.PW * (double)c->K);
  fc_conv_i8_cols_tables(k, t);
  f.lines = f.wbytes / 64;

  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  /* a chunked Col's flags (NH + 2 bytes) and its wide columns' masks (PB / 16 i16) last */
  int64_t masks_at = flags_at + round_up(t->NH + 2, 64);
  LLVMValueRef scr = fc_kernel_scratch(k, t->chunked ? masks_at + round_up(t->PB / 8, 64) : flags_at);
  fc_conv_i8_cols_at(k, t, scr);
  f.wide = t->rows;
  t->flags = LLVMBuildGEP2(b, i8, scr, (LLVMValueRef[]){c64(k, flags_at)}, 1, "flags");
  if (t->chunked) t->wide_cols = LLVMBuildGEP2(b, i8, scr, (LLVMValueRef[]){c64(k, masks_at)}, 1, "wide_cols");
  LLVMValueRef cached = fc_kernel_cached_key(k); /* the (image, group) whose Col the scratch holds */
  LLVMValueRef acc = fc_cg_tile_new(k, LLVMVectorType(i32, (unsigned)w), mr * nv, "acc");
  LLVMTypeRef et = t->q.out == FC_DT_F32 ? LLVMFloatTypeInContext(k->ctx) : i8;
  LLVMValueRef edge = fc_cg_tile_new(k, et, mr * nr, "edge");

  FcLoop lo;
  LLVMValueRef it = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "panel");
  LLVMValueRef pn = LLVMBuildSRem(b, it, c64(k, f.NP), ""), ng = LLVMBuildSDiv(b, it, c64(k, f.NP), "");
  LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntNE, ng, LLVMBuildLoad2(b, fc_cg_i64(k), cached, ""), ""));
  LLVMValueRef xoff = fc_cg_imulc(k, ng, c->Cg * c->H * c->W); /* image n, group grp's first channel */
  fc_conv_i8_build_cols(k, t, LLVMBuildGEP2(b, i8, k->in[0], &xoff, 1, ""), c64(k, 0), c64(k, 0), c64(k, c->P));
  LLVMBuildStore(b, ng, cached);
  fc_cg_if_end(k, cont);
  run_panel(k, &f, acc, edge, pn, ng);
  fc_cg_loop_end(k, &lo);
  fc_qp_free(&t->q);
  return FC_OK;
}
