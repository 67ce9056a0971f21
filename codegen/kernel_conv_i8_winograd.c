/* kernel_conv_i8_winograd.c — the quantised 3×3 stride-1 conv (qspec §2) by Winograd's F(2×2, 3×3) in exact
 * integer arithmetic, for CPUs whose only byte dot is AVX2's vpmaddubsw (fc_target_i8_winograd).
 *
 * There the direct int8 conv issues vpmaddubsw + vpmaddwd on the two multiply ports per 32 multiply-adds,
 * while F(2×2, 3×3) needs 16 products per 4 outputs instead of 36: with both operands in 16 bits, one
 * vpmaddwd per 16 of them. With G' = 2G (integer rows [2,0,0], [1,1,1], [1,-1,1], [0,0,2]) every transform is
 * an integer one and the result is 4 times the conv sum:
 *     4·Σ_c Σ_taps x·w' = Aᵀ [ Σ_c (G' w'_c G'ᵀ) ⊙ (Bᵀ d_c B) ] A,
 * so the i32 sums, shifted right by 2, are exactly the direct kernel's (and the requantisation after them,
 * fc_qp_finish, the same code): outputs are bit-identical. Bounds: d is the raw u8 input (padding reads zx,
 * the real 0, as in every quantised kernel; the corrections of cg_requant.h then hold), |Bᵀ d B| <= 4·255 and
 * |G' w' G'ᵀ| <= 9·255 fit i16; vpmaddwd's pair sums are exact, and the sums over channels and the output
 * transform wrap modulo 2^32 like any i32 arithmetic, so they are exact whenever 4·|conv sum| fits i32
 * (4·9·C·xmax·max|w'| below 2^31, checked from the weights; other convs take the direct kernel).
 *
 * Layout: tiles of 2×2 outputs, TW to a tile row; a task is a block of R consecutive tile rows of the batch
 * (across images: R·TW tiles, numbered r·TW + tw) and a range of output channels. It copies the 4 input rows of
 * each tile row into a zx-padded scratch P [C][R][4][2·TWp+2] (xor 0x80 for an i8 x; TWp: TW rounded up to a
 * vector), transforms 8 tiles of a tile row at a time (one 16-byte load gives the window columns of 8 tiles:
 * even and odd bytes; a row's last vector spills into the next row's tiles, which are written after it) into
 * V[ξ][c/2][tile] as s16 pairs of neighbouring channels (one i32 a tile), and then per tile of MR output
 * channels: for each of the 16 transform positions ξ the GEMM Y[ξ][m][tile] = Σ_{c pairs} vpmaddwd(V[ξ][c/2]
 * [tile], U[ξ][m][c/2]) on MR × 2 vectors of 8 tiles (U, the transformed weights, packed at compile time with
 * the channels' corrections and multipliers after them), then the output transform, the shift, the
 * requantisation and the store of each 8 tiles' 2×2 outputs as two rows of 16 (a prefix at the right edge; rows
 * past OH dropped). R makes R·TW a multiple of 16 tiles (whole pairs of vectors) where V stays within twice
 * its budget; a conv of fewer than 4 blocks splits its output channels over tasks, whose consecutive splits of
 * one block reuse its P and V.
 */
#include <stdlib.h>
#include <string.h>

#include "cg_conv_i8.h"

enum {
  MR = 4,                    /* output channels per GEMM tile: 4 × 2 accumulators, 2 tile vectors, 1 broadcast */
  TV = 8,                    /* tiles per vector (i32 lanes of a ymm) */
  V_BUDGET = 192 * 1024,     /* bytes of a block's transformed input: stays in L2 with Y and U's tile */
  MIN_CHANNELS = 16,         /* fewer input or output channels: the transforms outweigh the GEMM */
  U_BYTES_PER_TILE = 64 << 10, /* transformed weights a tile of the batch may account for */
};

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

/* The plan of one conv. */
typedef struct Wino {
  FcConv2 c;
  FcQuantProduct q;
  int64_t TH, TW, TWp, Wp;             /* tile rows, tile columns (TWp: padded to vectors), P's row bytes */
  int64_t CP, Mp, MT;                  /* channel pairs; output channels padded to MR and their tiles */
  int64_t GR, R, NB, MS;               /* tile rows of the batch, tile rows a block, blocks, output channel splits */
  int64_t TBs;                         /* V's and Y's row of tiles: R·TW rounded up to 2 vectors, + 1 of slack */
  int64_t p_bytes, v_bytes, y_bytes;   /* the task's scratch: P, V, Y (each 64-byte aligned) */
  int64_t u_bytes;                     /* U in the packed constant; corrections (i32 × Mp) and multipliers follow */
} Wino;

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
static int64_t gcd(int64_t a, int64_t b) { return b ? gcd(b, a % b) : a; }

/* The max of |w'| over the weights. */
static int32_t max_abs_w(const FcQuantProduct *q) {
  int32_t m = 0;
  for (int64_t i = 0; i < q->K * q->channels; i++) m = abs(q->w[i]) > m ? abs(q->w[i]) : m;
  return m;
}

/* Bytes of U: 16 positions × output channels padded to MR × channel pairs × an s16 pair. */
static double u_bytes(const FcConv2 *c) { return 16.0 * (double)round_up(c->M, MR) * (double)((c->C + 1) / 2) * 4; }

static bool geometry(const FcKernel *k, FcConv2 *c) {
  const FcOp *op = k->op;
  if (!op->operands[0].value->type.quant || !fc_qp_applies(op, 0, NULL, 0) || !fc_conv2_of(op, c)) return false;
  if (op->results[0].type.rank != 4 || c->KH != 3 || c->KW != 3 || c->sh != 1 || c->sw != 1 || c->dh != 1 ||
      c->dw != 1 || c->G != 1 || c->C < MIN_CHANNELS || c->M < MIN_CHANNELS || c->OH < 2)
    return false;
  /* the input transform runs on whole vectors of a tile row: at most half of one wasted */
  int64_t tw = (c->OW + 1) / 2;
  if (round_up(tw, TV) > 2 * tw) return false;
  /* The transformed weights take 16/9 × 2 bytes a weight beside the other variants' shared s8 packing, and
   * stream from memory once a run: only where each tile has enough of them (a map of few tiles, e.g. 7×7,
   * keeps the direct kernel: ResNet-18's layer4 would add 25 MB to the artefact for 0.5 ms) */
  double tiles = (double)c->N * (double)((c->OH + 1) / 2) * (double)tw;
  return u_bytes(c) <= U_BYTES_PER_TILE * tiles;
}

bool fc_conv_i8_winograd_applies(const FcKernel *k) {
  FcConv2 c;
  return fc_target_i8_winograd(k->target) && geometry(k, &c);
}

/* U = G' w'_c G'ᵀ per (output channel, input channel), packed as [ξ][m tile][channel pair][MR] i32 (an s16 pair:
 * the even channel low); then the corrections (i32) and multipliers (f32) of Mp channels (zeros past M). */
static int8_t *pack_u(const Wino *t, int64_t *bytes) {
  static const int G[4][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};
  const FcConv2 *c = &t->c;
  *bytes = t->u_bytes + 8 * t->Mp;
  int8_t *pk = calloc((size_t)*bytes, 1);
  if (!pk) fc_die(__FILE__, __LINE__, "out of memory");
  int16_t *u = (int16_t *)pk;
  for (int64_t m = 0; m < c->M; m++)
    for (int64_t ch = 0; ch < c->C; ch++) {
      const int16_t *g = t->q.w + m * c->K + ch * 9;
      int tmp[4][3];
      for (int a = 0; a < 4; a++)
        for (int j = 0; j < 3; j++) tmp[a][j] = G[a][0] * g[j] + G[a][1] * g[3 + j] + G[a][2] * g[6 + j];
      for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++) {
          int v = G[b][0] * tmp[a][0] + G[b][1] * tmp[a][1] + G[b][2] * tmp[a][2];
          int64_t at = ((((int64_t)(a * 4 + b) * t->MT + m / MR) * t->CP + ch / 2) * MR + m % MR) * 2 + ch % 2;
          u[at] = (int16_t)v; /* |v| <= 9·255 */
        }
    }
  memcpy(pk + t->u_bytes, t->q.corr, (size_t)c->M * 4);
  memcpy(pk + t->u_bytes + 4 * t->Mp, t->q.mult, (size_t)c->M * 4);
  return pk;
}

static LLVMValueRef gep8(FcKernel *k, LLVMValueRef p, LLVMValueRef off) {
  return LLVMBuildGEP2(k->b, LLVMInt8TypeInContext(k->ctx), p, &off, 1, "");
}

static LLVMValueRef load_vec(FcKernel *k, LLVMTypeRef vt, LLVMValueRef p) {
  LLVMValueRef v = LLVMBuildLoad2(k->b, vt, p, "");
  LLVMSetAlignment(v, 1);
  return v;
}

static void store_vec(FcKernel *k, LLVMValueRef v, LLVMValueRef p) { LLVMSetAlignment(LLVMBuildStore(k->b, v, p), 1); }

/* dst[0 .. len) = zx for a P row (len = Wp >= 18): a loop of 16-byte stores, the last one overlapping the one
 * before it. */
static void fill_zx(FcKernel *k, LLVMValueRef dst, int64_t len, LLVMValueRef zx) {
  LLVMValueRef row = fc_cg_splat_const(LLVMVectorType(LLVMInt8TypeInContext(k->ctx), 16), zx);
  FcLoop l;
  LLVMValueRef j = fc_cg_loop_begin(k, &l, c64(k, 0), c64(k, len - 15), 16, "zx16");
  store_vec(k, row, gep8(k, dst, j));
  fc_cg_loop_end(k, &l);
  store_vec(k, row, gep8(k, dst, c64(k, len - 16)));
}

/* P [C][R][4][Wp]: the 4 input rows of each of the block's tile rows (global tile row gr0 + r: image gr / TH,
 * input rows from 2·(gr % TH) - ph), columns from -pw, zx outside x (x ^ 0x80 for an i8 x). */
static void fill_p(FcKernel *k, const Wino *t, LLVMValueRef P, LLVMValueRef gr0, LLVMValueRef rows) {
  const FcConv2 *c = &t->c;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef zx = LLVMConstInt(i8, (unsigned)t->q.zx, 0);
  FcLoop lc, lr, li;
  LLVMValueRef ch = fc_cg_loop_begin(k, &lc, c64(k, 0), c64(k, c->C), 1, "wc");
  LLVMValueRef r = fc_cg_loop_begin(k, &lr, c64(k, 0), rows, 1, "wr");
  LLVMValueRef gr = fc_cg_iadd(k, gr0, r);
  LLVMValueRef n = LLVMBuildSDiv(b, gr, c64(k, t->TH), ""), th = LLVMBuildSRem(b, gr, c64(k, t->TH), "");
  LLVMValueRef plane = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, n, c->C), ch), c->H * c->W);
  LLVMValueRef i = fc_cg_loop_begin(k, &li, c64(k, 0), c64(k, 4), 1, "wi");
  LLVMValueRef pr = fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, ch, t->R), r), 4), i);
  LLVMValueRef dst = gep8(k, P, fc_cg_imulc(k, pr, t->Wp));
  LLVMValueRef yy = fc_cg_isub(k, fc_cg_iadd(k, fc_cg_imulc(k, th, 2), i), c64(k, c->ph));
  LLVMValueRef in = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSGE, yy, c64(k, 0), ""),
                                 LLVMBuildICmp(b, LLVMIntSLT, yy, c64(k, c->H), ""), "");
  /* the row all zx, then (inside the input) x over its middle: vector stores of lengths known here */
  fill_zx(k, dst, t->Wp, zx);
  LLVMBasicBlockRef cont = fc_cg_if_begin(k, in);
  LLVMValueRef src = gep8(k, k->in[0], fc_cg_iadd(k, plane, fc_cg_imulc(k, yy, c->W)));
  fc_conv_i8_copy_bytes(k, t->q.flip, src, gep8(k, dst, c64(k, c->pw)), c->W);
  fc_cg_if_end(k, cont);
  fc_cg_loop_end(k, &li);
  fc_cg_loop_end(k, &lr);
  fc_cg_loop_end(k, &lc);
}

/* Bᵀ · (4 vectors) for the rows of Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]. */
static void bt4(FcKernel *k, LLVMValueRef *d, LLVMValueRef *o) {
  LLVMBuilderRef b = k->b;
  o[0] = LLVMBuildSub(b, d[0], d[2], "");
  o[1] = LLVMBuildAdd(b, d[1], d[2], "");
  o[2] = LLVMBuildSub(b, d[2], d[1], "");
  o[3] = LLVMBuildSub(b, d[1], d[3], "");
}

/* Aᵀ · (4 vectors) for Aᵀ = [1 1 1 0; 0 1 -1 -1]. */
static void at4(FcKernel *k, LLVMValueRef *y, LLVMValueRef *o) {
  LLVMBuilderRef b = k->b;
  o[0] = LLVMBuildAdd(b, LLVMBuildAdd(b, y[0], y[1], ""), y[2], "");
  o[1] = LLVMBuildSub(b, LLVMBuildSub(b, y[1], y[2], ""), y[3], "");
}

/* V[ξ][cp][tile] for the block's `rows` tile rows (tile r·TW + tw): each step 8 tiles of a tile row and one
 * channel pair, both channels in one vector of 16 i16 (lane 2j: tile j of the even channel, 2j + 1: of the odd
 * one), which is V's layout, so the transforms work on both at once. A row's last vector reaches past its TW
 * tiles into the next row's first, which that row's own step writes afterwards, or into the slack after the
 * block. */
static void transform_input(FcKernel *k, const Wino *t, LLVMValueRef P, LLVMValueRef V, LLVMValueRef rows) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i16 = LLVMInt16TypeInContext(k->ctx);
  LLVMTypeRef v16b = LLVMVectorType(i8, 16), v16w = LLVMVectorType(i16, 16);
  int even[16], odd[16];
  for (int j = 0; j < 8; j++) {
    even[2 * j] = 2 * j, even[2 * j + 1] = 16 + 2 * j;
    odd[2 * j] = 2 * j + 1, odd[2 * j + 1] = 17 + 2 * j;
  }
  FcLoop lp, lr, lt;
  LLVMValueRef cp = fc_cg_loop_begin(k, &lp, c64(k, 0), c64(k, t->CP), 1, "wcp");
  LLVMValueRef c0 = fc_cg_imulc(k, cp, 2), c1 = fc_cg_smin(k, fc_cg_iadd(k, c0, c64(k, 1)), c64(k, t->c.C - 1));
  LLVMValueRef r = fc_cg_loop_begin(k, &lr, c64(k, 0), rows, 1, "wr");
  LLVMValueRef tv = fc_cg_loop_begin(k, &lt, c64(k, 0), c64(k, t->TWp / TV), 1, "wtv");
  LLVMValueRef d[4][4];
  for (int i = 0; i < 4; i++) {
    LLVMValueRef lo[2], hi[2];
    for (int h = 0; h < 2; h++) {
      LLVMValueRef pr = fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, h ? c1 : c0, t->R), r), 4), c64(k, i));
      LLVMValueRef at = fc_cg_iadd(k, fc_cg_imulc(k, pr, t->Wp), fc_cg_imulc(k, tv, 2 * TV));
      lo[h] = load_vec(k, v16b, gep8(k, P, at));
      hi[h] = load_vec(k, v16b, gep8(k, P, fc_cg_iadd(k, at, c64(k, 2))));
    }
    /* window column q of tile j is byte 2j + q: even and odd bytes of the loads at 0 and at 2 */
    d[i][0] = LLVMBuildZExt(b, fc_cg_shuffle(k, lo[0], lo[1], even, 16), v16w, "");
    d[i][1] = LLVMBuildZExt(b, fc_cg_shuffle(k, lo[0], lo[1], odd, 16), v16w, "");
    d[i][2] = LLVMBuildZExt(b, fc_cg_shuffle(k, hi[0], hi[1], even, 16), v16w, "");
    d[i][3] = LLVMBuildZExt(b, fc_cg_shuffle(k, hi[0], hi[1], odd, 16), v16w, "");
  }
  LLVMValueRef e[4][4], col[4], out[4];
  for (int q = 0; q < 4; q++) {
    for (int i = 0; i < 4; i++) col[i] = d[i][q];
    bt4(k, col, out);
    for (int a = 0; a < 4; a++) e[a][q] = out[a];
  }
  LLVMValueRef tile0 = fc_cg_iadd(k, fc_cg_imulc(k, r, t->TW), fc_cg_imulc(k, tv, TV));
  for (int a = 0; a < 4; a++) {
    bt4(k, e[a], out);
    for (int bb = 0; bb < 4; bb++) {
      LLVMValueRef pair = fc_cg_iadd(k, c64(k, (a * 4 + bb) * t->CP), cp);
      LLVMValueRef at = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, pair, t->TBs), tile0), 4);
      store_vec(k, out[bb], gep8(k, V, at));
    }
  }
  fc_cg_loop_end(k, &lt);
  fc_cg_loop_end(k, &lr);
  fc_cg_loop_end(k, &lp);
}

/* One channel pair cp of the GEMM: acc[i][j] (+)= vpmaddwd(V[cp][t0 + 8j ..], U[cp][i]); the first pair sets the
 * accumulators instead of adding to zeros. */
static void gemm_step(FcKernel *k, const Wino *t, LLVMValueRef vx, LLVMValueRef ux, LLVMValueRef t0, LLVMValueRef cp,
                      int nv, LLVMValueRef acc, bool first) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx), vi = LLVMVectorType(i32, TV);
  LLVMTypeRef vw = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), 2 * TV);
  LLVMValueRef vv[2];
  for (int j = 0; j < nv; j++) {
    LLVMValueRef tile = fc_cg_iadd(k, fc_cg_imulc(k, cp, t->TBs), fc_cg_iadd(k, t0, c64(k, TV * j)));
    vv[j] = load_vec(k, vw, gep8(k, vx, fc_cg_imulc(k, tile, 4)));
  }
  for (int i = 0; i < MR; i++) {
    LLVMValueRef at = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, cp, MR), c64(k, i)), 4);
    LLVMValueRef u = LLVMBuildLoad2(b, i32, gep8(k, ux, at), "");
    LLVMSetAlignment(u, 4);
    LLVMValueRef uw = LLVMBuildBitCast(b, fc_cg_splat(k, u, TV), vw, "");
    for (int j = 0; j < nv; j++) {
      LLVMValueRef p = fc_cg_tile_at(k, vi, acc, c64(k, i * nv + j));
      LLVMValueRef args[2] = {vv[j], uw};
      LLVMValueRef prod = fc_cg_intrinsic(k, "llvm.x86.avx2.pmadd.wd", NULL, args, 2);
      LLVMBuildStore(b, first ? prod : LLVMBuildAdd(b, LLVMBuildLoad2(b, vi, p, ""), prod, ""), p);
    }
  }
}

/* Y[ξ][i][t0 .. t0 + 8·nv) for the MR channels of one m tile (U at ux): Σ over channel pairs of vpmaddwd. */
static void gemm_vectors(FcKernel *k, const Wino *t, LLVMValueRef vx, LLVMValueRef ux, LLVMValueRef yx,
                         LLVMValueRef t0, int nv, LLVMValueRef acc) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef vi = LLVMVectorType(LLVMInt32TypeInContext(k->ctx), TV);
  gemm_step(k, t, vx, ux, t0, c64(k, 0), nv, acc, true);
  FcLoop l;
  LLVMValueRef cp = fc_cg_loop_begin(k, &l, c64(k, 1), c64(k, t->CP), 1, "wk");
  gemm_step(k, t, vx, ux, t0, cp, nv, acc, false);
  fc_cg_loop_end(k, &l);
  for (int i = 0; i < MR; i++)
    for (int j = 0; j < nv; j++) {
      LLVMValueRef at = fc_cg_imulc(k, fc_cg_iadd(k, c64(k, i * t->TBs + TV * j), t0), 4);
      store_vec(k, LLVMBuildLoad2(b, vi, fc_cg_tile_at(k, vi, acc, c64(k, i * nv + j)), ""), gep8(k, yx, at));
    }
}

static void gemm(FcKernel *k, const Wino *t, LLVMValueRef V, LLVMValueRef Y, LLVMValueRef wp, LLVMValueRef mt,
                 LLVMValueRef tiles, LLVMValueRef acc) {
  LLVMBuilderRef b = k->b;
  FcLoop lx, lt;
  LLVMValueRef xi = fc_cg_loop_begin(k, &lx, c64(k, 0), c64(k, 16), 1, "wxi");
  LLVMValueRef vx = gep8(k, V, fc_cg_imulc(k, xi, t->CP * t->TBs * 4));
  LLVMValueRef ux = gep8(k, wp, fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, xi, t->MT), mt), t->CP * MR * 4));
  LLVMValueRef yx = gep8(k, Y, fc_cg_imulc(k, xi, MR * t->TBs * 4));
  /* whole vectors of 8 tiles (the last one's lanes past the block read the slack), in pairs, then a lone one */
  LLVMValueRef nvec = LLVMBuildSDiv(b, fc_cg_iadd(k, tiles, c64(k, TV - 1)), c64(k, TV), "");
  LLVMValueRef pairs = LLVMBuildSDiv(b, nvec, c64(k, 2), "");
  LLVMValueRef tp = fc_cg_loop_begin(k, &lt, c64(k, 0), pairs, 1, "wtp");
  gemm_vectors(k, t, vx, ux, yx, fc_cg_imulc(k, tp, 2 * TV), 2, acc);
  fc_cg_loop_end(k, &lt);
  LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntNE, LLVMBuildSRem(b, nvec, c64(k, 2), ""),
                                                          c64(k, 0), ""));
  gemm_vectors(k, t, vx, ux, yx, fc_cg_imulc(k, pairs, 2 * TV), 1, acc);
  fc_cg_if_end(k, cont);
  fc_cg_loop_end(k, &lx);
}

/* Output row oy's 16 values from ox0 (two tiles' columns interleaved): a whole vector, or the first `valid`
 * (plain stores of pieces: AVX2, this kernel's target, has no masked byte store). */
static void store_row(FcKernel *k, LLVMValueRef row, LLVMValueRef dst, int64_t valid) {
  if (valid >= 2 * TV) store_vec(k, row, dst);
  else fc_cg_store_prefix(k, row, dst, (unsigned)valid);
}

/* Tiles [r][tv] of channel m (tile row th of its image, whose channel plane starts at ych): Aᵀ Y A, the shift,
 * the requantisation, two output rows. */
static void output_tiles(FcKernel *k, const Wino *t, LLVMValueRef yi, LLVMValueRef r, LLVMValueRef tv, int64_t valid,
                         LLVMValueRef corr, LLVMValueRef mult, LLVMValueRef ych, LLVMValueRef th) {
  const FcConv2 *c = &t->c;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx), vi = LLVMVectorType(i32, TV);
  LLVMTypeRef et = t->q.out == FC_DT_F32 ? LLVMFloatTypeInContext(k->ctx) : LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef tile0 = fc_cg_iadd(k, fc_cg_imulc(k, r, t->TW), fc_cg_imulc(k, tv, TV));
  LLVMValueRef y[16], f[2][4], col[4], o[2];
  for (int x = 0; x < 16; x++)
    y[x] = load_vec(k, vi, gep8(k, yi, fc_cg_imulc(k, fc_cg_iadd(k, c64(k, (int64_t)x * MR * t->TBs), tile0), 4)));
  for (int bb = 0; bb < 4; bb++) {
    for (int a = 0; a < 4; a++) col[a] = y[a * 4 + bb];
    at4(k, col, o);
    f[0][bb] = o[0];
    f[1][bb] = o[1];
  }
  int inter[16];
  for (int j = 0; j < 8; j++) inter[2 * j] = j, inter[2 * j + 1] = 8 + j;
  LLVMValueRef two = fc_cg_splat_const(vi, LLVMConstInt(i32, 2, 0));
  for (int oo = 0; oo < 2; oo++) {
    at4(k, f[oo], o);
    LLVMValueRef res[2];
    for (int p = 0; p < 2; p++) res[p] = fc_qp_finish(k, &t->q, LLVMBuildAShr(b, o[p], two, ""), corr, mult);
    LLVMValueRef oy = fc_cg_iadd(k, fc_cg_imulc(k, th, 2), c64(k, oo));
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntSLT, oy, c64(k, c->OH), ""));
    LLVMValueRef at = fc_cg_iadd(k, ych, fc_cg_iadd(k, fc_cg_imulc(k, oy, c->OW), fc_cg_imulc(k, tv, 2 * TV)));
    store_row(k, fc_cg_shuffle(k, res[0], res[1], inter, 16), LLVMBuildGEP2(b, et, k->out[0], &at, 1, ""), valid);
    fc_cg_if_end(k, cont);
  }
}

/* Channels mt·MR ..: every tile of the block's rows (global tile rows gr0 ..). */
static void transform_output(FcKernel *k, const Wino *t, LLVMValueRef Y, LLVMValueRef wp, LLVMValueRef mt,
                             LLVMValueRef gr0, LLVMValueRef rows) {
  const FcConv2 *c = &t->c;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx), f32 = LLVMFloatTypeInContext(k->ctx);
  int64_t ntv = t->TWp / TV, nfull = c->OW / (2 * TV);
  for (int i = 0; i < MR; i++) {
    LLVMValueRef m = fc_cg_iadd(k, fc_cg_imulc(k, mt, MR), c64(k, i));
    LLVMBasicBlockRef in = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntSLT, m, c64(k, c->M), ""));
    LLVMValueRef m4 = fc_cg_imulc(k, m, 4);
    LLVMValueRef co = LLVMBuildLoad2(b, i32, gep8(k, wp, fc_cg_iadd(k, c64(k, t->u_bytes), m4)), "");
    LLVMValueRef mu = LLVMBuildLoad2(b, f32, gep8(k, wp, fc_cg_iadd(k, c64(k, t->u_bytes + 4 * t->Mp), m4)), "");
    LLVMSetAlignment(co, 4);
    LLVMSetAlignment(mu, 4);
    LLVMValueRef corr = fc_cg_splat(k, co, TV), mult = fc_cg_splat(k, mu, TV);
    LLVMValueRef yi = gep8(k, Y, c64(k, (int64_t)i * t->TBs * 4));
    FcLoop lr, lt;
    LLVMValueRef r = fc_cg_loop_begin(k, &lr, c64(k, 0), rows, 1, "wor");
    LLVMValueRef gr = fc_cg_iadd(k, gr0, r);
    LLVMValueRef n = LLVMBuildSDiv(b, gr, c64(k, t->TH), ""), th = LLVMBuildSRem(b, gr, c64(k, t->TH), "");
    LLVMValueRef ych = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, n, c->M), m), c->OH * c->OW);
    if (nfull > 0) {
      LLVMValueRef tv = fc_cg_loop_begin(k, &lt, c64(k, 0), c64(k, nfull), 1, "wot");
      output_tiles(k, t, yi, r, tv, 2 * TV, corr, mult, ych, th);
      fc_cg_loop_end(k, &lt);
    }
    if (ntv > nfull) output_tiles(k, t, yi, r, c64(k, nfull), c->OW - 2 * TV * nfull, corr, mult, ych, th);
    fc_cg_loop_end(k, &lr);
    fc_cg_if_end(k, in);
  }
}

FcStatus fc_conv_i8_winograd(FcKernel *k) {
  Wino t = {0};
  FC_ASSERT(geometry(k, &t.c));
  const FcConv2 *c = &t.c;
  FcStatus st = fc_qp_init(k, 0, c->K, c->M, &t.q);
  if (st != FC_OK) return st;
  t.TH = (c->OH + 1) / 2;
  t.TW = (c->OW + 1) / 2;
  t.TWp = round_up(t.TW, TV);
  t.Wp = 2 * t.TWp + 2;
  t.CP = (c->C + 1) / 2;
  t.Mp = round_up(c->M, MR);
  t.MT = t.Mp / MR;
  /* blocks of R tile rows of the batch (across images), R·TW a multiple of 16 tiles (2 vectors) where that
   * keeps V within twice its budget */
  t.GR = c->N * t.TH;
  double row_v = 16.0 * (double)t.CP * (double)t.TW * 4;
  int64_t r0 = (int64_t)(V_BUDGET / row_v), step = 16 / gcd(t.TW, 2 * TV);
  r0 = r0 < 1 ? 1 : r0;
  t.R = r0 % step && round_up(r0, step) <= 2 * r0 ? round_up(r0, step) : r0;
  t.R = t.R > t.GR ? t.GR : t.R;
  t.NB = (t.GR + t.R - 1) / t.R;
  t.TBs = round_up(t.R * t.TW, 2 * TV) + TV;
  double blocks = (double)t.NB;
  t.MS = blocks >= 4 ? 1 : t.MT < 4 ? t.MT : 4;
  /* 4·|Σ x·w'| must fit i32 (see the top), and the scratch and packed weights stay modest */
  double scratch = (double)c->C * 4.0 * (double)t.R * (double)t.Wp + 16.0 * (double)(t.CP + MR) * (double)t.TBs * 4;
  double ubytes = u_bytes(c);
  if (36.0 * (double)c->C * (double)t.q.xmax * (double)max_abs_w(&t.q) >= 2147483648.0 || scratch > (64 << 20) ||
      ubytes > (256 << 20) || blocks * (double)t.MS > (double)INT64_MAX / 2) {
    fc_qp_free(&t.q);
    return fc_conv_i8(k);
  }
  t.p_bytes = round_up(c->C * 4 * t.R * t.Wp, 64);
  t.v_bytes = round_up(16 * t.CP * t.TBs * 4, 64);
  t.y_bytes = 16 * MR * t.TBs * 4;
  t.u_bytes = (int64_t)ubytes;
  int64_t bytes;
  int8_t *pk = pack_u(&t, &bytes);
  LLVMValueRef wp = fc_kernel_substitute_operand(k, 1, fc_cg_const_bytes(k, pk, (size_t)bytes, "wino_u_i8"));
  free(pk);
  int64_t outer = t.NB * t.MS;
  fc_kernel_set_outer(k, outer, 2.0 * 16.0 * (double)t.Mp / (double)t.MS * (double)t.CP * 2 * (double)t.R * (double)t.TW);

  LLVMBuilderRef b = k->b;
  LLVMTypeRef vi = LLVMVectorType(LLVMInt32TypeInContext(k->ctx), TV);
  LLVMValueRef scr = fc_kernel_scratch(k, t.p_bytes + t.v_bytes + t.y_bytes);
  LLVMValueRef P = scr, V = gep8(k, scr, c64(k, t.p_bytes)), Y = gep8(k, scr, c64(k, t.p_bytes + t.v_bytes));
  LLVMValueRef acc = fc_cg_tile_new(k, vi, MR * 2, "wacc");
  FcLoop lo, lm;
  LLVMValueRef it = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "wblk");
  LLVMValueRef ms = LLVMBuildSRem(b, it, c64(k, t.MS), ""), blk = LLVMBuildSDiv(b, it, c64(k, t.MS), "");
  LLVMValueRef gr0 = fc_cg_imulc(k, blk, t.R);
  LLVMValueRef rows = fc_cg_smin(k, c64(k, t.R), fc_cg_isub(k, c64(k, t.GR), gr0));
  /* a task's consecutive m splits of one block build its P and V once */
  LLVMBasicBlockRef built = fc_cg_if_begin(k, LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntEQ, it, k->begin, ""),
                                                          LLVMBuildICmp(b, LLVMIntEQ, ms, c64(k, 0), ""), ""));
  fill_p(k, &t, P, gr0, rows);
  transform_input(k, &t, P, V, rows);
  fc_cg_if_end(k, built);
  LLVMValueRef mt0 = LLVMBuildSDiv(b, fc_cg_imulc(k, ms, t.MT), c64(k, t.MS), "");
  LLVMValueRef mt1 = LLVMBuildSDiv(b, fc_cg_imulc(k, fc_cg_iadd(k, ms, c64(k, 1)), t.MT), c64(k, t.MS), "");
  LLVMValueRef mt = fc_cg_loop_begin(k, &lm, mt0, mt1, 1, "wmt");
  gemm(k, &t, V, Y, wp, mt, fc_cg_imulc(k, rows, t.TW), acc);
  transform_output(k, &t, Y, wp, mt, gr0, rows);
  fc_cg_loop_end(k, &lm);
  fc_cg_loop_end(k, &lo);
  fc_qp_free(&t.q);
  return FC_OK;
}
