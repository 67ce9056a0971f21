/* kernel_matmul_i8.c — the integer GEMM: flow.matmul of a run-time 8-bit A [.., M, K] and a constant 8-bit
 * B [K, N], in two forms:
 *   - plain: u8 A × i8 B into i32, exactly (the lowering of MatMulInteger / QLinearMatMul puts its operands
 *     in these types and applies the zero points around it: compiler/lower_quant.c), or into f32 (`to`: the
 *     i32 sums converted in the store, where a fused epilogue then applies: the dynamic quantisation's
 *     dequantize, bias and activation, passes/fuse_epilogue.c);
 *   - quantised (qspec §2): A per-tensor u8/i8, B per tensor or per column, an optional i32 bias, the result
 *     requantised to u8/i8 or scaled to f32 in the store (cg_requant.h folds zero points and bias into one
 *     i32 correction per column; B's zero points are subtracted from B at compile time).
 *
 * The x86 instructions that multiply bytes (vpdpbusd, vpmaddubsw) take 4 (2) adjacent bytes of u8 A against
 * 4 (2) adjacent bytes of s8 B and add their products into one i32 (i16) lane. So B (s8 after its zero point)
 * is packed at compile time in ONE layout that every CPU variant (AVX2, AVX-512, VNNI or not, and a later AMX
 * kernel) reads, so that a multiversioned artefact stores it once (content-hashed blobs, cg_module.c): unit
 * panels of 16 columns in which the 4 consecutive k of a column are adjacent, byte
 * ((n/16 · KG + k/4) · 16 + n%16) · 4 + k%4 holds B[k][n] (KG = ceil(K/4) rounded up to a multiple of 16,
 * whole 64-byte rows of AMX tiles: kernel_matmul_amx.c; zeros past K and past N, which is padded to a
 * multiple of 16). A register tile of nr = 16 or 32 columns reads one or two unit panels (its
 * vector of columns c.. at unit panel c/16, byte (c%16)·4 of the panel's 64-byte row); the second unit panel
 * of the last 32-wide tile may not exist, it then reads the first again (those columns are dropped). A is
 * read in place: 4 bytes of a row (one i32) broadcast to every lane meet one row of B vectors; an i8 A is
 * flipped to u8 on the way (xor 0x80). The register tile is mr rows × nv vectors of i32 accumulators (the
 * target's: fc_target_i8_gemm), kept in a stack tile indexed by constants, which LLVM promotes to registers.
 * The dot step per target:
 *   VNNI:     vpdpbusd (AVX512-VNNI 512-bit, AVX-VNNI 256-bit), exact.
 *   MADDUBS:  vpmaddubsw (pair sums saturate at i16) then vpmaddwd by ones. B is known here, so this is
 *             chosen when no pair of it can saturate (fc_qp_pairs_exact: every |b| <= 64 is enough,
 *             2·255·64 = 32640; a narrowed A range admits more), and otherwise at run time (the dual kernel,
 *             fc_qp_narrow_at_run_time): a row tile whose A bytes are all below 0x80 cannot saturate it
 *             whatever B (2·127·128 = 32512), so each tests its rows and takes MADDUBS, or WIDEN on two
 *             half-height tiles.
 *   WIDEN:    exact for any s8 B, from the same bytes: a vector of w/2 columns' quads (2w bytes) is sign-
 *             extended to i16 (vpmovsxbw), A's 4 bytes are zero-extended to 4 u16 and broadcast as 64 bits
 *             (vpbroadcastd + vpmovzxbw), and one vpmaddwd gives per column two i32 partial sums in adjacent
 *             lanes (k0k1, k2k3; u8·s8 products fit i16, their pair sums i32). The tile keeps twice the
 *             accumulator vectors for half the rows (mr/2) and adds the lane pairs once, before the
 *             requantisation.
 *   WIDEN16:  the one case outside s8: an asymmetric weight zero point can leave B - zb in [-255, 255]. Then
 *             B is packed as i16 in panels of the tile's nr columns with 2 consecutive k of a column
 *             adjacent (byte ((panel·KG2 + k/2)·nr + j)·4 + 2·(k%2), KG2 = ceil(K/2)), 2 bytes of A are
 *             zero-extended to an i16 pair and one vpmaddwd per vector adds both products (every variant
 *             packs these by its own nr: rare, so not shared).
 * Rows past M read row M-1 (their results are dropped); a K that is not a multiple of the group ends with
 * one group assembled from its remaining bytes. Outer iterations are (panel, row tile) pairs, row tiles fastest, so
 * a thread's consecutive tiles reuse one B panel and the threads split N. The quantised form's per-column
 * corrections (i32) and multipliers (f32), one per column up to the padded N, follow the packed panels in the
 * same constant (so kernels of equal shape and zero points are shared, and equal in every variant), and each
 * finished vector is requantised before its one store.
 * The same kernel runs the quantised 1x1 flow.conv_blocked of passes/layout_i8.c (NCHW8c bytes, 8 lanes): per
 * image, A's rows are the pixels, k's byte at (k/8·M + row)·8 + k%8, and a tile's vector of 8 columns is one
 * block of its rows' results, [rows][8] bytes side by side in y, requantised together into one store. Its
 * packing has KG = ceil(K/4): only the AVX2 variant without VNNI runs the blocked form, so no AMX kernel reads
 * it. Where M is not a multiple of the tile's rows the last row tile starts at M - mr and stores only the rows
 * after the tile before it: every tile reads its rows at one stride from one address (clamped row addresses
 * take registers from the k loop). Its MADDUBS tiles take two quads at once (fc_i8_dot_pair: their i16 sums
 * added before vpmaddwd) in each full chunk of 64 k whose weights allow one of cg_quad_pairs.c's fixed XOR
 * patterns for the tile's 16 columns (a byte per unit and chunk after the packing): a fixed pattern keeps
 * every address a constant of the chunk's loop, where a per-chunk order read from a table cost what the
 * pairs save.
 */
#include <stdlib.h>
#include <string.h>

#include "cg_conv_i8.h"
#include "cg_requant.h"
#include "codegen.h"

enum { FEW_ROWS_NV = 4 }; /* the widest register tile (vectors of columns) for an A of fewer rows than the tile */

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

/* u8 A x i8 B into i32, or into f32 (`to`: the i32 sums converted, then any fused epilogue). */
static bool plain_form(const FcOp *op) {
  const FcType *at = &op->operands[0].value->type, *bt = &op->operands[1].value->type, *rt = &op->results[0].type;
  bool f32 = rt->dtype == FC_DT_F32;
  return (op->n_operands == 2 || f32) && !at->quant && !bt->quant && !rt->quant && at->dtype == FC_DT_U8 &&
         bt->dtype == FC_DT_I8 && (rt->dtype == FC_DT_I32 || f32);
}

bool fc_matmul_i8_applies(const FcKernel *k) {
  const FcOp *op = k->op;
  /* an epilogue only on the plain form's f32 result (an i32 one's would be dropped) */
  bool f32 = op->results[0].type.dtype == FC_DT_F32;
  if (op->n_operands < 2 || (fc_op_attr(op, FC_ATTR_EPILOGUE) && !(plain_form(op) && f32))) return false;
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



/* pmaddwd of two <2·lanes x i16> vectors: one instruction at 512 and 256 bits; without AVX2 (SSE2 targets,
 * fc_target_i8_gemm's 8 lanes in pairs of xmm registers) one 128-bit pmaddwd per half. */
static LLVMValueRef maddwd(FcKernel *k, int lanes, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef args[2] = {a, b};
  if (lanes == 16) return fc_cg_intrinsic(k, "llvm.x86.avx512.pmaddw.d.512", NULL, args, 2);
  if (fc_target_has(k->target, FC_FEAT_AVX2)) return fc_cg_intrinsic(k, "llvm.x86.avx2.pmadd.wd", NULL, args, 2);
  FC_ASSERT(lanes == 8);
  int lo[8], hi[8];
  for (int i = 0; i < 8; i++) lo[i] = i, hi[i] = 8 + i;
  LLVMValueRef half[2];
  for (int h = 0; h < 2; h++) {
    LLVMValueRef part[2] = {fc_cg_shuffle(k, a, NULL, h ? hi : lo, 8), fc_cg_shuffle(k, b, NULL, h ? hi : lo, 8)};
    half[h] = fc_cg_intrinsic(k, "llvm.x86.sse2.pmadd.wd", NULL, part, 2);
  }
  return fc_cg_concat(k, half, 2);
}

LLVMValueRef fc_i8_dot(FcKernel *k, FcI8Dot dot, int lanes, LLVMValueRef acc, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef bld = k->b;
  bool z = lanes == 16;
  LLVMTypeRef vi = LLVMVectorType(LLVMInt32TypeInContext(k->ctx), (unsigned)lanes);
  LLVMTypeRef vw = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), (unsigned)(2 * lanes));
  /* only the exact pmaddwd path runs without AVX2 (fc_target_i8_gemm) */
  FC_ASSERT(dot == FC_I8DOT_WIDEN || z || fc_target_has(k->target, FC_FEAT_AVX2));
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
    return LLVMBuildAdd(bld, acc, maddwd(k, lanes, p16, fc_cg_splat_const(vw, one)), "");
  }
  default:
    /* a: u16 pairs, b: s16 pairs (the WIDEN packing) */
    return LLVMBuildAdd(bld, acc, maddwd(k, lanes, LLVMBuildBitCast(bld, a, vw, ""), LLVMBuildBitCast(bld, b, vw, "")),
                        "");
  }
}

LLVMValueRef fc_i8_dot_pair(FcKernel *k, int lanes, LLVMValueRef acc, LLVMValueRef a0, LLVMValueRef b0, LLVMValueRef a1,
                           LLVMValueRef b1) {
  LLVMBuilderRef bld = k->b;
  bool z = lanes == 16;
  LLVMTypeRef vb = LLVMVectorType(LLVMInt8TypeInContext(k->ctx), (unsigned)(4 * lanes));
  LLVMTypeRef vw = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), (unsigned)(2 * lanes));
  const char *maddubs = z ? "llvm.x86.avx512.pmaddubs.w.512" : "llvm.x86.avx2.pmadd.ub.sw";
  LLVMValueRef ab0[2] = {LLVMBuildBitCast(bld, a0, vb, ""), LLVMBuildBitCast(bld, b0, vb, "")};
  LLVMValueRef ab1[2] = {LLVMBuildBitCast(bld, a1, vb, ""), LLVMBuildBitCast(bld, b1, vb, "")};
  LLVMValueRef sum = LLVMBuildAdd(bld, fc_cg_intrinsic(k, maddubs, NULL, ab0, 2), fc_cg_intrinsic(k, maddubs, NULL, ab1, 2), "");
  LLVMValueRef ones = fc_cg_splat_const(vw, LLVMConstInt(LLVMInt16TypeInContext(k->ctx), 1, 0));
  return LLVMBuildAdd(bld, acc, maddwd(k, lanes, sum, ones), "");
}

LLVMValueRef fc_i8_quad_widen(FcKernel *k, LLVMValueRef q32, int lanes, bool sign) {
  LLVMBuilderRef bld = k->b;
  LLVMTypeRef vb = LLVMVectorType(LLVMInt8TypeInContext(k->ctx), (unsigned)(2 * lanes));
  LLVMTypeRef vw = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), (unsigned)(2 * lanes));
  LLVMValueRef bytes = LLVMBuildBitCast(bld, fc_cg_splat(k, q32, (unsigned)(lanes / 2)), vb, "");
  return sign ? LLVMBuildSExt(bld, bytes, vw, "") : LLVMBuildZExt(bld, bytes, vw, "");
}

LLVMValueRef fc_i8_pair_sums(FcKernel *k, int lanes, LLVMValueRef lo, LLVMValueRef hi) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMValueRef ev[16], od[16];
  for (int j = 0; j < lanes; j++) {
    ev[j] = LLVMConstInt(i32, (unsigned)(2 * j), 0);
    od[j] = LLVMConstInt(i32, (unsigned)(2 * j + 1), 0);
  }
  LLVMValueRef e = LLVMBuildShuffleVector(k->b, lo, hi, LLVMConstVector(ev, (unsigned)lanes), "");
  LLVMValueRef o = LLVMBuildShuffleVector(k->b, lo, hi, LLVMConstVector(od, (unsigned)lanes), "");
  return LLVMBuildAdd(k->b, e, o, "");
}

/* How the kernel reads B: the dot, the tile and the packing (see the top comment). */
typedef struct I8Tile {
  FcI8Gemm g;
  bool sext;              /* WIDEN from the s8 packing */
  bool wide16;            /* WIDEN16: B - zb outside s8, packed as i16 pairs */
  int nb, cb;             /* B vectors per k step of the tile, and the bytes of one */
  int kg;                 /* k per step: 4, or 2 for WIDEN16 */
  int64_t kstride;        /* bytes from one k step of a B vector to the next */
  LLVMTypeRef vi;         /* <lanes x i32> */
  LLVMValueRef acc;       /* stack tile of mr·nb accumulator vectors */
} I8Tile;

static LLVMValueRef acc_at(FcKernel *k, const I8Tile *t, int i) { return fc_cg_tile_at(k, t->vi, t->acc, c64(k, i)); }

/* n (1, or 2: a pair of cg_quad_pairs.c's) k steps at once for every row of the tile: a32[h][i] (i32: 4 bytes
 * of row i, or a u16 pair for WIDEN16) against the B vectors at bvec[c] + off[h]. */
static void tile_step_n(FcKernel *k, const I8Tile *t, LLVMValueRef a32[][16], const LLVMValueRef *bvec,
                        const LLVMValueRef *off, int n) {
  LLVMBuilderRef bld = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  int w = t->g.lanes;
  LLVMValueRef bv[2][8];
  for (int h = 0; h < n; h++)
    for (int c = 0; c < t->nb; c++) {
      LLVMValueRef o = off[h], at = LLVMBuildGEP2(bld, i8, bvec[c], &o, 1, "");
      bv[h][c] = LLVMBuildLoad2(bld, LLVMVectorType(i8, (unsigned)t->cb), at, "");
      LLVMSetAlignment(bv[h][c], (unsigned)(t->cb < 64 ? t->cb : 64));
      if (t->sext)
        bv[h][c] = LLVMBuildSExt(bld, bv[h][c], LLVMVectorType(LLVMInt16TypeInContext(k->ctx), (unsigned)t->cb), "");
    }
  for (int i = 0; i < t->g.mr; i++) {
    LLVMValueRef a[2];
    for (int h = 0; h < n; h++)
      a[h] = t->sext ? fc_i8_quad_widen(k, a32[h][i], w, false) : fc_cg_splat(k, a32[h][i], (unsigned)w);
    for (int c = 0; c < t->nb; c++) {
      LLVMValueRef p = acc_at(k, t, i * t->nb + c), acc = LLVMBuildLoad2(bld, t->vi, p, "");
      acc = n == 2 ? fc_i8_dot_pair(k, w, acc, a[0], bv[0][c], a[1], bv[1][c])
                   : fc_i8_dot(k, t->g.dot, w, acc, a[0], bv[0][c]);
      LLVMBuildStore(bld, acc, p);
    }
  }
}

static void tile_step(FcKernel *k, const I8Tile *t, LLVMValueRef *a32, LLVMValueRef *bvec, LLVMValueRef off) {
  LLVMValueRef rows[1][16];
  memcpy(rows[0], a32, (size_t)t->g.mr * sizeof *a32);
  tile_step_n(k, t, rows, bvec, &off, 1);
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

int64_t fc_i8_panel_groups(int64_t K) { return (K + 63) / 64 * 16; }

int8_t *fc_i8_pack_panels(const FcQuantProduct *q, bool quant, int64_t K, int64_t N, int64_t kgp, int64_t *bytes,
                          int64_t *npad, int64_t *total) {
  int64_t units = (N + 15) / 16;
  if (!fc_checked_mul(units, kgp, bytes) || !fc_checked_mul(*bytes, 64, bytes) || !fc_checked_mul(units, 16, npad) ||
      *bytes > INT64_MAX / 2 - 8 * *npad)
    return NULL;
  *total = *bytes + (quant ? 8 * *npad : 0);
  int8_t *pk = calloc((size_t)*total, 1);
  if (!pk) fc_die(__FILE__, __LINE__, "out of memory");
  for (int64_t kk = 0; kk < K; kk++)
    for (int64_t j = 0; j < N; j++) pk[((j / 16 * kgp + kk / 4) * 16 + j % 16) * 4 + kk % 4] = (int8_t)q->w[kk * N + j];
  if (quant) {
    memcpy(pk + *bytes, q->corr, (size_t)N * 4);
    memcpy(pk + *bytes + 4 * *npad, q->mult, (size_t)N * 4);
  }
  return pk;
}

/* The packed constant: the shared s8 layout (fc_i8_pack_panels), or for WIDEN16 (w' outside s8) panels of nr
 * columns of little-endian s16 pairs; then [corr: i32 × npad | mult: f32 × npad] (the quantised form only).
 * *bytes gets the size of the B part; NULL when a size overflows. */
static int8_t *pack_b(const I8Tile *t, const FcQuantProduct *q, bool quant, int64_t K, int64_t N, int64_t kgp,
                      int64_t *bytes, int64_t *npad, int64_t *total) {
  if (!t->wide16) return fc_i8_pack_panels(q, quant, K, N, kgp, bytes, npad, total);
  int64_t unit = (int64_t)t->g.nv * t->g.lanes; /* columns per panel */
  int64_t KGs = (K + 1) / 2, panels = (N + unit - 1) / unit;
  if (!fc_checked_mul(panels, KGs, bytes) || !fc_checked_mul(*bytes, 4 * unit, bytes) ||
      !fc_checked_mul(panels, unit, npad) || *bytes > INT64_MAX / 2 - 8 * *npad)
    return NULL;
  *total = *bytes + (quant ? 8 * *npad : 0);
  int8_t *pk = calloc((size_t)*total, 1);
  if (!pk) fc_die(__FILE__, __LINE__, "out of memory");
  for (int64_t kk = 0; kk < K; kk++)
    for (int64_t j = 0; j < N; j++) {
      int64_t at = (((j / unit) * KGs + kk / 2) * unit + j % unit) * 4;
      int16_t v = q->w[kk * N + j]; /* little-endian s16 */
      pk[at + 2 * (kk % 2)] = (int8_t)(v & 0xff);
      pk[at + 2 * (kk % 2) + 1] = (int8_t)(v >> 8);
    }
  if (quant) {
    memcpy(pk + *bytes, q->corr, (size_t)N * 4);
    memcpy(pk + *bytes + 4 * *npad, q->mult, (size_t)N * 4);
  }
  return pk;
}

/* What every tile of the kernel shares. */
typedef struct I8Mm {
  int64_t K, N, M, units, kgp, bytes, npad; /* units: unit panels of the s8 packing, of kgp k groups each; bytes:
                                             * the B part; npad: N padded */
  /* a quantised 1x1 flow.conv_blocked (block 8): per image, A is x [K/8][M][8] (M: its pixels) and the
   * result y [N/8][M][8], at abase and cbase (the image's) */
  bool blocked, rows_in_range; /* rows_in_range: no tile's row passes M (the last one shifted back) */
  LLVMValueRef abase, cbase, first; /* first: the first row the task's tile stores */
  bool quant;
  FcCgEpilogue *e; /* the plain form's f32 result: its epilogue, or NULL */
  bool to_f32;     /* the plain form with an f32 result */
  LLVMValueRef xor_codes; /* the blocked form's pattern codes (fc_quad_xor_pairs_plan) where its tile reads
                           * them, or NULL */
  const FcQuantProduct *q;
  LLVMValueRef bp, ctile;
  LLVMTypeRef et;
} I8Mm;

/* The configuration t's dot asks for (t->g set): the packing's view, the B vectors a step and their bytes. */
static void plan_tile(I8Tile *t, bool wide16) {
  t->wide16 = wide16;
  t->sext = t->g.dot == FC_I8DOT_WIDEN && !t->wide16;
  /* WIDEN's accumulators hold half a column each: half the rows keep the register count */
  if (t->sext && t->g.mr > 1) t->g.mr /= 2;
  t->kg = t->wide16 ? 2 : 4;
  t->nb = t->sext ? 2 * t->g.nv : t->g.nv;
  t->cb = t->sext ? 2 * t->g.lanes : 4 * t->g.lanes;
  t->kstride = t->wide16 ? (int64_t)t->g.nv * t->g.lanes * 4 : 64;
}

/* The blocked form's store: vector v of the tile's rows is one block of 8 channels of mr pixels, which lie side by
 * side in y ([N/8][M][8]): packed together (fc_qp_finish_packed: 8·mr bytes) into one store, or through the
 * stack tile where the tile has fewer rows; a vector past N (a 16-column tile over 8 last channels) is dropped. */
static void store_blocked(FcKernel *k, const I8Mm *m, const I8Tile *t, LLVMValueRef *accs, LLVMValueRef *corr,
                          LLVMValueRef *mult, LLVMValueRef m0, LLVMValueRef n0) {
  LLVMBuilderRef bld = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  int w = t->g.lanes, mr = t->g.mr, nv = t->g.nv;
  /* rows lo .. hi - 1 are stored: from the first of the task's tile (m->first) to M */
  LLVMValueRef lo = fc_cg_smax(k, m->first, m0), hi = fc_cg_smin(k, fc_cg_iadd(k, m0, c64(k, mr)), c64(k, m->M));
  LLVMValueRef skip = fc_cg_imulc(k, fc_cg_isub(k, lo, m0), 8);
  LLVMValueRef bytes = fc_cg_imulc(k, fc_cg_smax(k, fc_cg_isub(k, hi, lo), c64(k, 0)), 8);
  LLVMValueRef is_full = LLVMBuildICmp(bld, LLVMIntEQ, bytes, c64(k, 8 * mr), "");
  for (int v = 0; v < nv; v++) {
    LLVMValueRef a[16], co[16], mu[16], parts[16];
    for (int i = 0; i < mr; i++) a[i] = accs[i * nv + v], co[i] = corr[i * nv + v], mu[i] = mult[i * nv + v];
    LLVMValueRef col = fc_cg_iadd(k, n0, c64(k, v * w));
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(bld, LLVMIntSLT, col, c64(k, m->N), ""));
    LLVMValueRef y = mr > 1 ? fc_qp_finish_packed(k, m->q, a, mr, co, mu) : NULL;
    if (!y) {
      for (int i = 0; i < mr; i++) parts[i] = fc_qp_finish(k, m->q, a[i], co[i], mu[i]);
      y = mr > 1 ? fc_cg_concat(k, parts, mr) : parts[0];
    }
    LLVMValueRef blk = LLVMBuildLShr(bld, col, c64(k, 3), "");
    LLVMValueRef at = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, blk, m->M), m0), 8);
    LLVMValueRef dst = LLVMBuildGEP2(bld, i8, m->cbase, &at, 1, "");
    LLVMBasicBlockRef in = fc_cg_if_begin(k, is_full);
    LLVMSetAlignment(LLVMBuildStore(bld, y, dst), 1);
    fc_cg_if_end(k, in);
    in = fc_cg_if_begin(k, LLVMBuildNot(bld, is_full, ""));
    LLVMBuildStore(bld, y, m->ctile);
    LLVMValueRef from = LLVMBuildGEP2(bld, i8, m->ctile, &skip, 1, "");
    LLVMBuildMemCpy(bld, LLVMBuildGEP2(bld, i8, dst, &skip, 1, ""), 1, from, 1, bytes);
    fc_cg_if_end(k, in);
    fc_cg_if_end(k, cont);
  }
}

/* Each row's k group at byte koff of its row (arow[i]) into a32[i]: 4 bytes as an i32 (an i8 A flipped to
 * u8), or WIDEN16's 2 bytes zero-extended to a u16 pair. */
static void load_groups(FcKernel *k, const I8Mm *m, const I8Tile *t, const LLVMValueRef *arow, LLVMValueRef koff,
                        LLVMValueRef *a32) {
  LLVMBuilderRef bld = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef v2i8 = LLVMVectorType(i8, 2), v2i16 = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), 2);
  LLVMValueRef flip = t->wide16 ? fc_cg_splat_const(v2i8, LLVMConstInt(i8, 0x80, 0)) : LLVMConstInt(i32, 0x80808080u, 0);
  for (int i = 0; i < t->g.mr; i++) {
    a32[i] = LLVMBuildLoad2(bld, t->wide16 ? v2i8 : i32, LLVMBuildGEP2(bld, i8, arow[i], &koff, 1, ""), "");
    LLVMSetAlignment(a32[i], 1);
    if (m->q->flip) a32[i] = LLVMBuildXor(bld, a32[i], flip, "");
    if (t->wide16) a32[i] = LLVMBuildBitCast(bld, LLVMBuildZExt(bld, a32[i], v2i16, ""), i32, "");
  }
}

/* A chunk's quads on the blocked form (fc_quad_xor_chunk's step): quad q's 4 bytes of each row at
 * (q/2)·8M + (q%2)·4, its B row q of the unit panel. */
typedef struct XorTile {
  const I8Mm *m;
  const I8Tile *t;
  const LLVMValueRef *arow, *bvec;
} XorTile;

static void blocked_quads(FcKernel *k, void *ctx, LLVMValueRef quad0, const int *quad, int n) {
  const XorTile *x = ctx;
  LLVMValueRef a32[2][16], boff[2];
  for (int h = 0; h < n; h++) { /* quad0 is even: quad0 + q is in block quad0/2 + q/2 */
    LLVMValueRef b = fc_cg_iadd(k, LLVMBuildLShr(k->b, quad0, c64(k, 1), ""), c64(k, quad[h] / 2));
    load_groups(k, x->m, x->t, x->arow, fc_cg_iadd(k, fc_cg_imulc(k, b, x->m->M * 8), c64(k, quad[h] % 2 * 4)),
                a32[h]);
    boff[h] = fc_cg_imulc(k, fc_cg_iadd(k, quad0, c64(k, quad[h])), x->t->kstride);
  }
  tile_step_n(k, x->t, a32, x->bvec, boff, n);
}

/* One register tile: rows m0 .. m0 + mr - 1 of A (rows past M read row M - 1, their results dropped; a blocked
 * A's tiles lie inside M, rows_in_range) against the columns of panel qp (nr = nv·lanes of them), over the
 * whole K, then requantised (or not) and stored. */
static void emit_tile(FcKernel *k, const I8Mm *m, const I8Tile *t, LLVMValueRef m0, LLVMValueRef qp) {
  LLVMBuilderRef bld = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx);
  const FcQuantProduct *q = m->q;
  int64_t K = m->K;
  int w = t->g.lanes, mr = t->g.mr, nv = t->g.nv, nr = nv * w;
  int64_t KG = (K + t->kg - 1) / t->kg;
  LLVMValueRef n0 = fc_cg_imulc(k, qp, nr);
  LLVMValueRef arow[16];
  for (int i = 0; i < mr; i++) {
    LLVMValueRef row = fc_cg_iadd(k, m0, c64(k, i));
    if (!m->rows_in_range) row = fc_cg_smin(k, row, c64(k, m->M - 1));
    LLVMValueRef off = fc_cg_imulc(k, row, m->blocked ? 8 : K);
    arow[i] = LLVMBuildGEP2(bld, i8, m->blocked ? m->abase : k->in[0], &off, 1, "");
  }
  /* each B vector's first byte: its columns' panel (a unit panel clamped to the last one) and row offset */
  LLVMValueRef bvec[8];
  for (int c = 0; c < t->nb; c++) {
    int64_t cw = t->cb / 4, col = (int64_t)c * cw; /* columns per vector, first column within the tile */
    LLVMValueRef off;
    if (t->wide16) {
      off = fc_cg_iadd(k, fc_cg_imulc(k, qp, KG * nr * 4), c64(k, col * 4));
    } else {
      LLVMValueRef u = fc_cg_smin(k, fc_cg_iadd(k, fc_cg_imulc(k, qp, nr / 16), c64(k, col / 16)), c64(k, m->units - 1));
      off = fc_cg_iadd(k, fc_cg_imulc(k, u, m->kgp * 64), c64(k, col % 16 * 4));
    }
    bvec[c] = LLVMBuildGEP2(bld, i8, m->bp, &off, 1, "");
  }
  for (int i = 0; i < mr * t->nb; i++) LLVMBuildStore(bld, LLVMConstNull(t->vi), acc_at(k, t, i));

  LLVMValueRef a32[16];
  FcLoop lk;
  if (m->blocked) {
    /* a block of 8 k a step: its groups at constant offsets from the block's address; before them, where the
     * weights pair, the full chunks of 64 k */
    int per = 8 / t->kg;
    int64_t b0 = 0;
    if (m->xor_codes && t->g.dot == FC_I8DOT_MADDUBS) {
      XorTile x = {m, t, arow, bvec};
      int64_t coded = fc_quad_xor_chunks(K);
      LLVMValueRef h = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, coded), 1, "chunk");
      LLVMValueRef at = fc_cg_iadd(k, fc_cg_imulc(k, qp, coded), h);
      LLVMValueRef code = fc_cg_load(k, FC_DT_U8, m->xor_codes, at);
      fc_quad_xor_chunk(k, LLVMBuildZExt(bld, code, LLVMInt64TypeInContext(k->ctx), ""), h, blocked_quads, &x);
      fc_cg_loop_end(k, &lk);
      b0 = coded * 8;
    }
    LLVMValueRef b = fc_cg_loop_begin(k, &lk, c64(k, b0), c64(k, K / 8), 1, "kblock");
    for (int j = 0; j < per; j++) {
      load_groups(k, m, t, arow, fc_cg_iadd(k, fc_cg_imulc(k, b, m->M * 8), c64(k, j * t->kg)), a32);
      tile_step(k, t, a32, bvec, fc_cg_iadd(k, fc_cg_imulc(k, b, per * t->kstride), c64(k, j * t->kstride)));
    }
  } else {
    LLVMValueRef g = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, K / t->kg), 1, "kg");
    load_groups(k, m, t, arow, fc_cg_imulc(k, g, t->kg), a32);
    tile_step(k, t, a32, bvec, fc_cg_imulc(k, g, t->kstride));
  }
  fc_cg_loop_end(k, &lk);
  if (K % t->kg) {
    /* The last group's bytes one by one (the row may end there), zero-extended to 32 / kg bits each; B is
     * zero past K. */
    for (int i = 0; i < mr; i++) {
      a32[i] = LLVMConstInt(i32, 0, 0);
      for (int64_t b = 0; b < K % t->kg; b++) {
        LLVMValueRef off = c64(k, K / t->kg * t->kg + b);
        LLVMValueRef p = LLVMBuildGEP2(bld, i8, arow[i], &off, 1, "");
        LLVMValueRef byte = LLVMBuildLoad2(bld, i8, p, "");
        if (q->flip) byte = LLVMBuildXor(bld, byte, LLVMConstInt(i8, 0x80, 0), "");
        LLVMValueRef sh = LLVMConstInt(i32, (unsigned)(32 / t->kg * b), 0);
        a32[i] = LLVMBuildOr(bld, a32[i], LLVMBuildShl(bld, LLVMBuildZExt(bld, byte, i32, ""), sh, ""), "");
      }
    }
    tile_step(k, t, a32, bvec, c64(k, K / t->kg * t->kstride));
  }

  /* The finished vectors (WIDEN: the lane pairs of two accumulators added), requantised (corrections and
   * multipliers of the vector's columns, clamped into the tables for a dropped vector past them) or as
   * they are. */
  LLVMValueRef outv[64], accs[64], corr[64], mult[64], vcorr = NULL, vmult = NULL;
  for (int v = 0; v < nv; v++) {
    if (m->quant) {
      LLVMValueRef col = fc_cg_smin(k, fc_cg_iadd(k, n0, c64(k, v * w)), c64(k, m->npad - w));
      LLVMValueRef co = fc_cg_iadd(k, c64(k, m->bytes), fc_cg_imulc(k, col, 4));
      LLVMValueRef mo = fc_cg_iadd(k, co, c64(k, 4 * m->npad));
      vcorr = LLVMBuildLoad2(bld, t->vi, LLVMBuildGEP2(bld, i8, m->bp, &co, 1, ""), "");
      vmult = LLVMBuildLoad2(bld, LLVMVectorType(f32, (unsigned)w), LLVMBuildGEP2(bld, i8, m->bp, &mo, 1, ""), "");
      LLVMSetAlignment(vcorr, 4);
      LLVMSetAlignment(vmult, 4);
    }
    for (int i = 0; i < mr; i++) {
      LLVMValueRef a;
      if (t->sext)
        a = fc_i8_pair_sums(k, w, LLVMBuildLoad2(bld, t->vi, acc_at(k, t, i * t->nb + 2 * v), ""),
                            LLVMBuildLoad2(bld, t->vi, acc_at(k, t, i * t->nb + 2 * v + 1), ""));
      else
        a = LLVMBuildLoad2(bld, t->vi, acc_at(k, t, i * t->nb + v), "");
      accs[i * nv + v] = outv[i * nv + v] = a;
      corr[i * nv + v] = vcorr, mult[i * nv + v] = vmult;
    }
  }
  if (m->blocked) {
    store_blocked(k, m, t, accs, corr, mult, m0, n0);
    return;
  }
  int per_row = m->quant ? fc_qp_finish_tile(k, q, accs, mr, nv, corr, mult, outv) : nv;

  /* Full tiles store their vectors; edge tiles go through a stack tile and copy the valid part. */
  LLVMValueRef rows = fc_cg_smin(k, c64(k, mr), fc_cg_isub(k, c64(k, m->M), m0));
  LLVMValueRef cols = fc_cg_smin(k, c64(k, nr), fc_cg_isub(k, c64(k, m->N), n0));
  if (m->to_f32) {
    for (int i = 0; i < mr * nv; i++) outv[i] = LLVMBuildSIToFP(bld, outv[i], LLVMVectorType(f32, (unsigned)w), "");
    fc_qp_store_tile_epilogue(k, m->e, outv, mr, nv, w, m->ctile, m0, rows, m->N, n0, cols);
    return;
  }
  fc_qp_store_tile(k, m->et, outv, mr, per_row, nv * w / per_row, m->ctile, c64(k, 0), m0, rows, m->N, n0, cols);
}

/* Whether the bytes of a row tile of a blocked A (rows·8 bytes at base + b·stride for b < blocks) are all below
 * 0x80: a full tile ORs one vector of 8·mr bytes a block, a tile of fewer rows takes fc_i8_runs_below_0x80. */
static LLVMValueRef blocked_rows_narrow(FcKernel *k, LLVMValueRef base, int64_t blocks, int64_t stride,
                                       LLVMValueRef rows, int mr) {
  LLVMBuilderRef bld = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), vt = LLVMVectorType(i8, (unsigned)(8 * mr));
  LLVMValueRef flag = fc_cg_entry_alloca(k, LLVMInt1TypeInContext(k->ctx), "narrow");
  LLVMValueRef full = LLVMBuildICmp(bld, LLVMIntEQ, rows, c64(k, mr), "");
  LLVMBasicBlockRef in = fc_cg_if_begin(k, full);
  LLVMValueRef acc = fc_cg_entry_alloca(k, vt, "or_rows");
  LLVMBuildStore(bld, LLVMConstNull(vt), acc);
  FcLoop lb;
  LLVMValueRef b = fc_cg_loop_begin(k, &lb, c64(k, 0), c64(k, blocks), 1, "or_block");
  LLVMValueRef off = fc_cg_imulc(k, b, stride);
  LLVMValueRef v = LLVMBuildLoad2(bld, vt, LLVMBuildGEP2(bld, i8, base, &off, 1, ""), "");
  LLVMSetAlignment(v, 1);
  LLVMBuildStore(bld, LLVMBuildOr(bld, LLVMBuildLoad2(bld, vt, acc, ""), v, ""), acc);
  fc_cg_loop_end(k, &lb);
  /* no byte's top bit set: the sign mask (vpmovmskb) is 0 */
  LLVMValueRef neg = LLVMBuildICmp(bld, LLVMIntSLT, LLVMBuildLoad2(bld, vt, acc, ""), LLVMConstNull(vt), "");
  LLVMTypeRef mask_t = LLVMIntTypeInContext(k->ctx, (unsigned)(8 * mr));
  LLVMValueRef mask = LLVMBuildBitCast(bld, neg, mask_t, "");
  LLVMBuildStore(bld, LLVMBuildICmp(bld, LLVMIntEQ, mask, LLVMConstInt(mask_t, 0, 0), ""), flag);
  fc_cg_if_end(k, in);
  in = fc_cg_if_begin(k, LLVMBuildNot(bld, full, ""));
  LLVMBuildStore(bld, fc_i8_runs_below_0x80(k, base, c64(k, blocks), stride, fc_cg_imulc(k, rows, 8)), flag);
  fc_cg_if_end(k, in);
  return LLVMBuildLoad2(bld, LLVMInt1TypeInContext(k->ctx), flag, "");
}

/* The kernel over `images` products of M rows each (one for a matmul: its rows are all of A's), q filled. */
static FcStatus matmul_i8(FcKernel *k, int64_t K, int64_t N, int64_t M, int64_t images, bool blocked, bool quant,
                         FcQuantProduct q) {
  const FcOp *op = k->op;
  const FcType *rt = &op->results[0].type;
  I8Tile t = {0};
  fc_target_i8_gemm(k->target, &t.g);
  /* Fewer rows than the tile's (a batch-1 classifier: M = 1) take a tile of as few rows, a power of two, and
   * wider by as much, up to FEW_ROWS_NV vectors (WIDEN's doubled B vectors stay within tile_step's 8): the
   * rows past M would repeat row M - 1's products. Without VNNI the B vectors may be widened per tile
   * (WIDEN), which a tile of fewer rows does for fewer rows, and the dual kernel's WIDEN tiles past M are
   * skipped anyway: there it pays only where at least 3/4 of the rows would be repeats (measured on Zen 4). */
  if (M < t.g.mr && (t.g.dot == FC_I8DOT_VNNI || 4 * M <= t.g.mr)) {
    int mr = 1;
    while (mr < M) mr *= 2;
    int nv = t.g.nv * t.g.mr / mr;
    t.g.nv = nv < FEW_ROWS_NV ? nv : FEW_ROWS_NV;
    t.g.mr = mr;
  }
  /* The dual kernel (kernel_conv_i8.c's): where vpmaddubsw could saturate only on activations above 127,
   * each row tile tests its rows of A and runs vpmaddubsw (t) or the exact WIDEN on two half-height tiles
   * (tw), which keep WIDEN's register count. */
  bool dual = t.g.dot == FC_I8DOT_MADDUBS && fc_qp_narrow_at_run_time(&q);
  if (!q.w8 || (t.g.dot == FC_I8DOT_MADDUBS && !dual && !fc_qp_pairs_exact(&q))) t.g.dot = FC_I8DOT_WIDEN;
  plan_tile(&t, !q.w8);
  I8Tile tw = t;
  tw.g.dot = FC_I8DOT_WIDEN;
  plan_tile(&tw, false);
  int w = t.g.lanes, mr = t.g.mr, nv = t.g.nv, nr = nv * w;
  FC_ASSERT(t.wide16 || nr % 16 == 0);
  int64_t panels = (N + nr - 1) / nr, mtiles = (M + mr - 1) / mr;
  I8Mm m = {.K = K, .N = N, .M = M, .units = (N + 15) / 16, .quant = quant, .q = &q, .blocked = blocked};
  /* A blocked A's last row tile starts at M - mr (storing its rows from the tile's own first), so every tile
   * reads mr rows at one stride from its first: one address register for them all. */
  m.rows_in_range = blocked && M >= mr;
  /* the blocked form runs only where no AMX kernel reads its packing (passes/layout_i8.c): its K unpadded */
  m.kgp = blocked ? (K + 3) / 4 : fc_i8_panel_groups(K);
  m.to_f32 = !quant && rt->dtype == FC_DT_F32;
  if (m.to_f32) {
    FcStatus st = fc_cg_epilogue_init(k, 1, &m.e);
    if (st != FC_OK) {
      fc_qp_free(&q);
      return st;
    }
  }
  int64_t total;
  int8_t *pk = pack_b(&t, &q, quant, K, N, m.kgp, &m.bytes, &m.npad, &total);
  if (!pk) {
    fc_qp_free(&q);
    return fc_cg_error(k, FC_ERR_LIMIT, "packed weights are too large");
  }
  /* Without VNNI the blocked form's vpmaddubsw takes two quads at once where the weights keep their i16 sums
   * exact; the chunks' pattern codes follow its packing. */
  int64_t code_bytes = 0;
  uint8_t *codes = blocked && !t.wide16 ? fc_quad_xor_pairs_plan(&q, 1, N, K, &code_bytes) : NULL;
  if (codes) {
    int8_t *grown = realloc(pk, (size_t)(total + code_bytes));
    if (!grown) fc_die(__FILE__, __LINE__, "out of memory");
    pk = grown;
    memcpy(pk + total, codes, (size_t)code_bytes);
  }
  free(codes);
  if (blocked) {
    /* byte for byte the few-pixel kernel's constant for this conv (weights, corrections, multipliers, pair
     * patterns, x's zero point: kernel_conv_i8_few_pixels.c), which an artefact's other variants run on the
     * maps of up to 16x16: one stored copy */
    m.bp = fc_qp_packed_weights(k, &q, pk, total + code_bytes, m.bytes, "packed_w_i8_fewpx");
  } else {
    m.bp = fc_kernel_substitute_operand(
        k, 1, fc_cg_packed_weights_bytes(k, pk, (size_t)total, (size_t)m.bytes, "packed_b_i8"));
    free(pk);
  }
  /* a tile of one unit of 16 columns reads its unit's codes */
  if (code_bytes && t.g.dot == FC_I8DOT_MADDUBS && nr == 16)
    m.xor_codes = LLVMBuildGEP2(k->b, LLVMInt8TypeInContext(k->ctx), m.bp, (LLVMValueRef[]){c64(k, total)}, 1, "");
  fc_kernel_set_outer(k, images * panels * mtiles, 2.0 * mr * nr * (double)K);

  LLVMBuilderRef bld = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  t.vi = tw.vi = LLVMVectorType(i32, (unsigned)w);
  /* one stack tile for both: WIDEN's has half the rows (but a one-row tile keeps its row) and twice the vectors */
  int64_t acc_vectors = (int64_t)mr * t.nb, widen_vectors = (int64_t)tw.g.mr * tw.nb;
  if (widen_vectors > acc_vectors) acc_vectors = widen_vectors;
  t.acc = tw.acc = fc_cg_tile_new(k, t.vi, acc_vectors, "acc");
  /* the result's element: i32 (plain), the storage byte (requantised) or f32 */
  FcDtype odt = quant ? q.out : rt->dtype;
  m.et = odt == FC_DT_I32 ? i32 : odt == FC_DT_F32 ? LLVMFloatTypeInContext(k->ctx) : i8;
  m.ctile = fc_cg_tile_new(k, m.et, (int64_t)mr * nr, "edge");

  FcLoop lo;
  LLVMValueRef it = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "tile");
  LLVMValueRef img = LLVMBuildSDiv(bld, it, c64(k, panels * mtiles), "");
  it = LLVMBuildSRem(bld, it, c64(k, panels * mtiles), "");
  LLVMValueRef qp = LLVMBuildSDiv(bld, it, c64(k, mtiles), ""), mt = LLVMBuildSRem(bld, it, c64(k, mtiles), "");
  LLVMValueRef m0 = fc_cg_imulc(k, mt, mr);
  m.first = m0;
  if (m.rows_in_range) m0 = fc_cg_smin(k, m0, c64(k, M - mr));
  if (blocked) { /* quantised: 8-bit results */
    LLVMValueRef ia = fc_cg_imulc(k, img, K * M), ic = fc_cg_imulc(k, img, N * M);
    m.abase = LLVMBuildGEP2(bld, i8, k->in[0], &ia, 1, "");
    m.cbase = LLVMBuildGEP2(bld, i8, k->out[0], &ic, 1, "");
  }
  if (dual) {
    LLVMValueRef rows = fc_cg_smin(k, c64(k, mr), fc_cg_isub(k, c64(k, M), m0));
    LLVMValueRef off = fc_cg_imulc(k, m0, blocked ? 8 : K);
    LLVMValueRef base = LLVMBuildGEP2(bld, i8, blocked ? m.abase : k->in[0], &off, 1, "");
    /* the tile's bytes: its rows (blocked: a run of 8·mr bytes in each block of 8 channels) */
    LLVMValueRef narrow = blocked ? blocked_rows_narrow(k, base, K / 8, M * 8, rows, mr)
                                  : fc_i8_runs_below_0x80(k, base, rows, K, c64(k, K));
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, narrow);
    emit_tile(k, &m, &t, m0, qp);
    fc_cg_if_end(k, cont);
    cont = fc_cg_if_begin(k, LLVMBuildNot(bld, narrow, ""));
    for (int64_t h = 0; h < mr; h += tw.g.mr) {
      LLVMValueRef r0 = fc_cg_iadd(k, m0, c64(k, h));
      LLVMBasicBlockRef in = fc_cg_if_begin(k, LLVMBuildICmp(bld, LLVMIntSLT, r0, c64(k, M), ""));
      emit_tile(k, &m, &tw, r0, qp);
      fc_cg_if_end(k, in);
    }
    fc_cg_if_end(k, cont);
  } else {
    emit_tile(k, &m, &t, m0, qp);
  }
  fc_cg_loop_end(k, &lo);
  fc_qp_free(&q);
  return FC_OK;
}

FcStatus fc_matmul_i8(FcKernel *k) {
  const FcOp *op = k->op;
  const FcType *bt = &op->operands[1].value->type, *rt = &op->results[0].type;
  int64_t K = bt->dims[0], N = bt->dims[1], numel;
  FC_ASSERT(fc_type_numel(rt, &numel));
  FcQuantProduct q;
  bool quant = !plain_form(op);
  if (quant) {
    FcStatus st = fc_qp_init(k, 1, K, N, &q);
    if (st != FC_OK) return st;
  } else {
    fc_i8_plain_weights(op, K, N, &q);
  }
  return matmul_i8(k, K, N, numel / N, 1, false, quant, q);
}

FcStatus fc_matmul_i8_blocked(FcKernel *k) {
  FcConv2 c;
  FcI8Gemm g;
  fc_target_i8_gemm(k->target, &g);
  const FcType *yt = &k->op->results[0].type;
  if (!fc_conv2_of(k->op, &c) || !fc_qp_applies(k->op, 0, NULL, 0) || !yt->quant || c.G != 1 || c.KH != 1 ||
      c.KW != 1 || c.sh != 1 || c.sw != 1 || c.ph != 0 || c.pw != 0 || c.H != c.OH || c.W != c.OW || c.C % 8 ||
      c.M % 8 || yt->dims[4] != 8 || k->op->operands[0].value->type.rank != 5 || g.dot == FC_I8DOT_NONE ||
      g.lanes != 8 || fc_target_i8_pack_lanes(k->target) != 8)
    return fc_cg_error(k, FC_ERR_UNSUPPORTED,
                       "no kernel for this quantised conv_blocked: a 1x1 one needs blocks of 8 channels in and out, "
                       "stride 1, no padding, a u8/i8 result and a target whose integer vectors have 8 lanes");
  FcQuantProduct q;
  FcStatus st = fc_qp_init(k, 0, c.C, c.M, &q);
  if (st != FC_OK) return st;
  /* the conv's weights [M, C] as the GEMM's B [C, M] (per-channel data stays per channel) */
  int16_t *wt = malloc((size_t)(c.C * c.M) * sizeof *wt);
  if (!wt) fc_die(__FILE__, __LINE__, "out of memory");
  for (int64_t mm = 0; mm < c.M; mm++)
    for (int64_t kk = 0; kk < c.C; kk++) wt[kk * c.M + mm] = q.w[mm * c.C + kk];
  free(q.w);
  q.w = wt;
  q.chan_axis = 1;
  return matmul_i8(k, c.C, c.M, c.P, c.N, true, true, q);
}
