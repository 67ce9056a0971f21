/* kernel_conv_i8_winograd.c — the quantised 3×3 stride-1 conv (qspec §2) by Winograd's F(4×4, 3×3) or F(2×2, 3×3)
 * in exact integer arithmetic, for CPUs whose only byte dot is AVX2's vpmaddubsw, and by F(4×4) alone for those
 * whose VNNI byte dot is slow beside its 16-bit one (AMD Zen 4 and 5; fc_target_i8_winograd).
 *
 * There the direct int8 conv issues vpmaddubsw + vpmaddwd on the two multiply ports per 32 multiply-adds,
 * while F(m×m, 3×3) needs (m+2)² products per m² outputs instead of 9·m² (16 per 4 for m = 2, 36 per 16 for
 * m = 4): with both operands in 16 bits, one vpmaddwd per 16 of them, plus the vpaddd beside it. Every
 * transform is made integer by scaling:
 *   F(2×2): G' = 2G (rows [2,0,0], [1,1,1], [1,-1,1], [0,0,2]); the plain Aᵀ gives 4 times the conv sum, so
 *     the i32 result shifted right by 2 is the sum.
 *   F(4×4): G = D·G' with D = diag(1/12, -1/6, -1/6, 1/24, 1/24, 1/3) and G' rows [3,0,0], [1,1,1], [1,-1,1],
 *     [1,2,4], [1,-2,4], [0,0,3]; D moves into the output transform, A'ᵀ = 24·Aᵀ·D (rows [2,-4,-4,1,1,0],
 *     [0,-4,4,2,-2,0], [0,-4,-4,4,4,0], [0,-4,4,8,-8,8]: powers of two), which gives 576 = 9·64 times the conv sum. The
 *     i32 arithmetic is exact modulo 2^32, so multiplying by 9's inverse modulo 2^32 gives 64 times the sum,
 *     and the arithmetic shift by 6 the sum itself, wherever 64·|sum| fits i32.
 * So the result is bit-identical to the direct kernel's sum (and the requantisation after it, fc_qp_finish,
 * the same code). Bounds: d is the raw u8 input (padding reads zx, the real 0, as in every quantised kernel;
 * the corrections of cg_requant.h then hold); |Bᵀ d B| <= 4·255 (m = 2) or 100·255 (m = 4) and |G' w' G'ᵀ|
 * <= 9·255 or 49·255 fit i16; vpmaddwd's pair sums are exact, and the sums over channels and the output
 * transform wrap modulo 2^32 like any i32 arithmetic, so they are exact whenever the final scaled sum fits:
 * 4·|sum| < 2^31 for m = 2 (checked as 4·9·C·xmax·max|w'|), 64·|sum| < 2^31 for m = 4 (checked per output
 * channel as 64·xmax·Σ|w'|). A conv takes F(4×4) where that bound, its rows of tiles and its transformed
 * weights allow, else F(2×2), else the direct kernel.
 *
 * Layout: tiles of m×m outputs, TW to a tile row; a task is a block of R consecutive tile rows of the batch
 * (across images: R·TW tiles, numbered r·TW + tw) and a range of output channels. It copies the m+2 input rows
 * of each tile row into a zx-padded scratch P [C][R][m+2][m·TWp+2] (xor 0x80 for an i8 x; TWp: TW rounded up
 * to a vector, or TW where 1, 2 or 4 tiles fill a row and 8 / TW rows share a vector), transforms 8 tiles at a
 * time (two loads of 8·m bytes, at the tiles' first column and m past it, hold the window columns of 8 tiles:
 * bytes m·j + q; narrow rows load m·TW bytes each, side by side) into V[ξ][c/2][tile] as s16 pairs of
 * neighbouring channels (one i32 a tile), and then per group of MG tiles of MR output channels: for each of the
 * (m+2)² transform positions ξ and each pair of vectors of 8 tiles, for every m tile of the group in turn (so
 * the pair's V, read from L2 once per group, serves them all from L1), the GEMM Y[ξ][m][tile] =
 * Σ_{c pairs} vpmaddwd(V[ξ][c/2][tile], U[ξ][m][c/2]) on MR × 2 vectors (U, the transformed weights, with the
 * channels' corrections and multipliers after them, made from the weights when the model first runs:
 * runtime/winograd_i8.c, so the artefact keeps 1 byte a weight instead of U's 4 or 8); then per m tile the
 * output transform, the scaling back, the requantisation and the store of
 * each 8 tiles' m×m outputs as m rows of 8·m (a prefix at the right edge; rows past OH dropped). A row's last
 * vector of tiles reaches past its TW tiles into the next row's first, which that row's own step writes
 * afterwards, or into the slack after the block. R makes R·TW a multiple of 16 tiles (whole pairs of vectors)
 * where V stays within twice its budget; a conv of fewer than 4 blocks splits its output channels over tasks,
 * whose consecutive splits of one block reuse its P and V.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cg_conv_i8.h"
#include "flowrt.h"

enum {
  MR = 4,                    /* output channels per GEMM tile: 4 × 2 accumulators, 2 tile vectors, 1 broadcast */
  TV = 8,                    /* tiles per vector (i32 lanes of a ymm) */
  V_BUDGET = 192 * 1024,     /* bytes of a block's transformed input: stays in L2 with Y and U's tile */
  MIN_CHANNELS = 16,         /* fewer input or output channels: the transforms outweigh the GEMM */
  U_BYTES_PER_OUTPUT = 128 << 10, /* transformed weights an output of the batch may account for */
  MAX_A = 6,                 /* the window of F(4×4, 3×3) */
  MIN_F4_PIXELS = 640,       /* output pixels of the batch F(4×4) needs (see tiles_suit) */
  MIN_F4_PIXELS_WIDE = 256,  /* ... where the conv has at least MIN_F4_CHANNELS input and output channels */
  MIN_F4_CHANNELS = 64,
  Y_BUDGET = 96 * 1024,      /* bytes of Y for the m tiles whose GEMMs share each V vector pair (gemm) */
  MAX_MG = 8,                /* at most so many m tiles a group: their U beside the V pair in L1 */
};

static const uint32_t INV9 = 954437177u; /* 9 · INV9 = 1 modulo 2^32 */

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

/* The plan of one conv. */
typedef struct Wino {
  FcConv2 c;
  FcQuantProduct q;
  int m, A;                            /* outputs a tile side (2 or 4) and its window, m + 2 */
  int shift;                           /* s of the output transform's scale 2^s: 2 (F(2×2)), 6 (F(4×4), after 9's inverse) */
  bool folded;                         /* 2^s folded into the corrections and multipliers */
  int64_t TH, TW, TWp, Wp;             /* tile rows, tile columns (TWp: padded_tw), P's row bytes */
  int G;                               /* tile rows a vector of 8 tiles covers (8 / TW for TW of 1, 2 or 4) */
  int64_t NTV;                         /* vectors of tiles per G tile rows */
  int64_t CP, Mp, MT;                  /* channel pairs; output channels padded to MR and their tiles */
  int64_t GR, R, NB, MS;               /* tile rows of the batch, tile rows a block, blocks, output channel splits */
  int64_t TBs;                         /* V's and Y's row of tiles: R·TW rounded up to 2 vectors, + 1 of slack */
  int64_t p_bytes, v_bytes, y_bytes;   /* the task's scratch: P, V, Y (each 64-byte aligned; Y for MG m tiles) */
  int64_t MG;                          /* m tiles whose GEMMs run together (gemm) */
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

/* Bytes of U: (m+2)² positions × output channels padded to MR × channel pairs × an s16 pair. */
static double u_bytes(const FcConv2 *c, int m) {
  return (double)((m + 2) * (m + 2)) * (double)round_up(c->M, MR) * (double)((c->C + 1) / 2) * 4;
}

/* A tile row's tiles as the transforms take them: rows of 1, 2 or 4 tiles share a vector of 8 with the next
 * rows, other rows are whole vectors. */
static int64_t padded_tw(int64_t tw) { return TV % tw == 0 ? tw : round_up(tw, TV); }

/* Whether F(m×m, 3×3) suits the conv's shape: the transforms run on vectors of 8 tiles (padded_tw), at most
 * half of one wasted for F(2×2) and a third for F(4×4), whose transforms weigh more against its smaller GEMM;
 * and the transformed weights, (m+2)²/9 × 2 bytes a weight beside the other variants' shared s8 packing,
 * which stream from memory once a run, are not too many against the outputs: at most 128 KB an output pixel of
 * the batch, which a 7×7 map of 512 channels at batch 1 (ResNet's layer4: 8 MB of U a conv, made at the first
 * run) just meets, while a map of few tiles and more channels keeps the direct kernel. Per multiply-add
 * F(4×4) streams 32/S bytes of them (S: the batch's output pixels in whole tiles), so it needs S >= MIN_F4_PIXELS
 * (1/20 of a byte), or S >= MIN_F4_PIXELS_WIDE (a 14×14 map) where C and M are both at least MIN_F4_CHANNELS:
 * its transforms per tile grow with C and with M, its GEMM with C·M, so on few channels they outweigh the
 * multiply-adds F(4×4) saves (GoogLeNet's 14×14 convs of 32 -> 128 channels ran slower as F(4×4), those of
 * 96 -> 208 and more faster, and ResNet's of 256 channels). */
static bool tiles_suit(const FcConv2 *c, int m) {
  int64_t tw = (c->OW + m - 1) / m;
  if (m == 2 ? padded_tw(tw) > 2 * tw : 2 * padded_tw(tw) > 3 * tw) return false;
  double outputs = (double)c->N * (double)((c->OH + m - 1) / m) * (double)tw * m * m;
  bool wide = c->C >= MIN_F4_CHANNELS && c->M >= MIN_F4_CHANNELS;
  return u_bytes(c, m) <= U_BYTES_PER_OUTPUT * outputs &&
         (m == 2 || outputs >= MIN_F4_PIXELS || (wide && outputs >= MIN_F4_PIXELS_WIDE));
}

/* Whether the target takes F(m×m) (fc_target_i8_winograd) and the conv's shape suits it. */
static bool variant_suits(const FcKernel *k, const FcConv2 *c, int m) {
  return fc_target_i8_winograd(k->target, m) && tiles_suit(c, m);
}

static bool geometry(const FcKernel *k, FcConv2 *c) {
  const FcOp *op = k->op;
  if (!op->operands[0].value->type.quant || !fc_qp_applies(op, 0, NULL, 0) || !fc_conv2_of(op, c)) return false;
  if (op->results[0].type.rank != 4 || c->KH != 3 || c->KW != 3 || c->sh != 1 || c->sw != 1 || c->dh != 1 ||
      c->dw != 1 || c->G != 1 || c->C < MIN_CHANNELS || c->M < MIN_CHANNELS || c->OH < 2)
    return false;
  return variant_suits(k, c, 2) || variant_suits(k, c, 4);
}

bool fc_conv_i8_winograd_applies(const FcKernel *k) {
  FcConv2 c;
  return geometry(k, &c);
}

/* Whether every output channel's scaled sum, 64·|Σ x·w'| with x in [0, xmax], fits i32 (F(4×4)'s bound). */
static bool sums_fit_f4(const FcQuantProduct *q) {
  for (int64_t m = 0; m < q->channels; m++)
    if (64.0 * (double)q->xmax * (double)q->wabs[m] >= 2147483648.0) return false;
  return true;
}

/* Whether the output transform's power-of-two scale 2^s (s = 2 for F(2×2), 6 for F(4×4) after 9's inverse) can
 * stay in the sums: with the corrections times 2^s the result is 2^s·(Σ x·w' + corr) exactly wherever that fits
 * i32 (checked per channel as 2^s·(xmax·Σ|w'| + |corr|) < 2^31), its f32 is 2^s times the unscaled one's, and
 * times the multiplier / 2^s (exact where that is a normal number or 0) the product is the same f32: the
 * shift of every output vector goes away. */
static bool scale_folds(const FcQuantProduct *q, int s) {
  for (int64_t m = 0; m < q->channels; m++) {
    double mult = fabs((double)q->mult[m]) / (double)(1 << s);
    if ((double)(1 << s) * ((double)q->xmax * (double)q->wabs[m] + fabs((double)q->corr[m])) >= 2147483648.0 ||
        !isfinite(mult) || (mult != 0 && mult < FLT_MIN))
      return false;
  }
  return true;
}

/* What U is made from when the model first runs (runtime/winograd_i8.c, which computes U = G' w'_c G'ᵀ per
 * (output channel, input channel) and packs it as [ξ][m tile][channel pair][MR] i32, an s16 pair with the
 * even channel low): w' as [M][C][9] of `*w_bytes` each (1 where every w' fits s8, else 2), then the
 * corrections (i32) and multipliers (f32) of the M channels, which it copies after U (Mp of each). */
static uint8_t *u_source(const Wino *t, int64_t *bytes, int *w_bytes) {
  const FcConv2 *c = &t->c;
  int64_t n = c->M * c->K;
  *w_bytes = t->q.w8 ? 1 : 2;
  *bytes = n * *w_bytes + 8 * c->M;
  uint8_t *src = malloc((size_t)*bytes);
  if (!src) fc_die(__FILE__, __LINE__, "out of memory");
  for (int64_t i = 0; i < n; i++) {
    if (*w_bytes == 1) src[i] = (uint8_t)(int8_t)t->q.w[i];
    else memcpy(src + 2 * i, &t->q.w[i], 2);
  }
  int scale = 1 << t->shift;
  for (int64_t ch = 0; ch < c->M; ch++) {
    int32_t corr = t->folded ? t->q.corr[ch] * scale : t->q.corr[ch]; /* fits: scale_folds */
    float mult = t->folded ? t->q.mult[ch] / (float)scale : t->q.mult[ch];
    memcpy(src + n * *w_bytes + 4 * ch, &corr, 4);
    memcpy(src + n * *w_bytes + 4 * (c->M + ch), &mult, 4);
  }
  return src;
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

/* dst[0 .. len) = zx for a P row (len = Wp >= 4): a loop of 16-byte stores, the last one overlapping the one
 * before it, or two overlapping stores of 8 or 4 bytes. */
static void fill_zx(FcKernel *k, LLVMValueRef dst, int64_t len, LLVMValueRef zx) {
  unsigned n = len >= 16 ? 16 : len >= 8 ? 8 : 4;
  LLVMValueRef row = fc_cg_splat_const(LLVMVectorType(LLVMInt8TypeInContext(k->ctx), n), zx);
  FC_ASSERT(len >= 4);
  FcLoop l;
  LLVMValueRef j = fc_cg_loop_begin(k, &l, c64(k, 0), c64(k, len - (n - 1)), n, "zx_fill");
  store_vec(k, row, gep8(k, dst, j));
  fc_cg_loop_end(k, &l);
  store_vec(k, row, gep8(k, dst, c64(k, len - n)));
}

/* P [C][R][m+2][Wp]: the m+2 input rows of each of the block's tile rows (global tile row gr0 + r: image gr / TH,
 * input rows from m·(gr % TH) - ph), columns from -pw, zx outside x (x ^ 0x80 for an i8 x). */
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
  LLVMValueRef i = fc_cg_loop_begin(k, &li, c64(k, 0), c64(k, t->A), 1, "wi");
  LLVMValueRef pr = fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, ch, t->R), r), t->A), i);
  LLVMValueRef dst = gep8(k, P, fc_cg_imulc(k, pr, t->Wp));
  LLVMValueRef yy = fc_cg_isub(k, fc_cg_iadd(k, fc_cg_imulc(k, th, t->m), i), c64(k, c->ph));
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

/* v · c for a vector v of integers. */
static LLVMValueRef mulc(FcKernel *k, LLVMValueRef v, int64_t c) {
  LLVMTypeRef vt = LLVMTypeOf(v);
  return LLVMBuildMul(k->b, v, fc_cg_splat_const(vt, LLVMConstInt(LLVMGetElementType(vt), (unsigned long long)c, 1)), "");
}

/* Bᵀ · (6 vectors) for the rows of Bᵀ = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0;
 * 0 2 -1 -2 1 0; 0 4 0 -5 0 1], sharing the sums of rows 1 to 4. In i16, where every final value fits (see the
 * top) and the wrapping of a partial sum cancels. */
static void bt6(FcKernel *k, LLVMValueRef *d, LLVMValueRef *o) {
  LLVMBuilderRef b = k->b;
  LLVMValueRef s12 = LLVMBuildAdd(b, d[1], d[2], ""), d12 = LLVMBuildSub(b, d[1], d[2], "");
  LLVMValueRef s34 = LLVMBuildAdd(b, d[4], d[3], ""), d43 = LLVMBuildSub(b, d[4], d[3], "");
  LLVMValueRef d42 = LLVMBuildSub(b, d[4], d[2], ""), d31 = mulc(k, LLVMBuildSub(b, d[3], d[1], ""), 2);
  o[0] = LLVMBuildAdd(b, LLVMBuildSub(b, mulc(k, d[0], 4), mulc(k, d[2], 5), ""), d[4], "");
  o[1] = LLVMBuildSub(b, s34, mulc(k, s12, 4), "");
  o[2] = LLVMBuildAdd(b, d43, mulc(k, d12, 4), "");
  o[3] = LLVMBuildAdd(b, d42, d31, "");
  o[4] = LLVMBuildSub(b, d42, d31, "");
  o[5] = LLVMBuildAdd(b, LLVMBuildSub(b, mulc(k, d[1], 4), mulc(k, d[3], 5), ""), d[5], "");
}

/* The input transform's Bᵀ of the kernel's tile size. */
static void bt(FcKernel *k, const Wino *t, LLVMValueRef *d, LLVMValueRef *o) {
  if (t->m == 4) bt6(k, d, o);
  else bt4(k, d, o);
}

/* The output transform of F(2×2): Aᵀ · (4 vectors) for Aᵀ = [1 1 1 0; 0 1 -1 -1]; of F(4×4): A'ᵀ · (6 vectors)
 * for A'ᵀ = 24·Aᵀ·D (see the top) = [2 -4 -4 1 1 0; 0 -4 4 2 -2 0; 0 -4 -4 4 4 0; 0 -4 4 8 -8 8]: shifts and adds
 * only (D's choice: entries of 6 or 24 became vpmulld, two uops on the two ports that shift and convert). */
static void at(FcKernel *k, const Wino *t, LLVMValueRef *y, LLVMValueRef *o) {
  LLVMBuilderRef b = k->b;
  if (t->m == 2) {
    o[0] = LLVMBuildAdd(b, LLVMBuildAdd(b, y[0], y[1], ""), y[2], "");
    o[1] = LLVMBuildSub(b, LLVMBuildSub(b, y[1], y[2], ""), y[3], "");
    return;
  }
  LLVMValueRef s12 = mulc(k, LLVMBuildAdd(b, y[1], y[2], ""), 4), d21 = mulc(k, LLVMBuildSub(b, y[2], y[1], ""), 4);
  LLVMValueRef s34 = LLVMBuildAdd(b, y[3], y[4], ""), d34 = LLVMBuildSub(b, y[3], y[4], "");
  o[0] = LLVMBuildAdd(b, LLVMBuildSub(b, mulc(k, y[0], 2), s12, ""), s34, "");
  o[1] = LLVMBuildAdd(b, d21, mulc(k, d34, 2), "");
  o[2] = LLVMBuildSub(b, mulc(k, s34, 4), s12, "");
  o[3] = LLVMBuildAdd(b, d21, mulc(k, LLVMBuildAdd(b, d34, y[5], ""), 8), "");
}

/* F(4×4): column q (0..3) of 8 tiles of both channels, from the two channels' 32 loaded bytes (tile j's 4
 * columns in i32 lane j), as V's pairs (lane j: the even channel's byte in bits 0..7, the odd one's in 16..23)
 * by shifts and masks (LLVM makes most of them one vpshufb): a third of the shuffles, blends and widenings that
 * the general pick of two sources takes. */
static LLVMValueRef window_column(FcKernel *k, LLVMValueRef two[2], int q) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx), vi = LLVMVectorType(i32, TV);
  LLVMTypeRef v16w = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), 16);
#define SPLAT(v) fc_cg_splat_const(vi, LLVMConstInt(i32, (v), 0))
  LLVMValueRef even = LLVMBuildBitCast(b, two[0], vi, ""), odd = LLVMBuildBitCast(b, two[1], vi, "");
  if (q) even = LLVMBuildLShr(b, even, SPLAT(8u * (unsigned)q), "");
  if (q < 2) odd = LLVMBuildShl(b, odd, SPLAT(16u - 8u * (unsigned)q), "");
  else if (q == 3) odd = LLVMBuildLShr(b, odd, SPLAT(8), "");
  LLVMValueRef v = LLVMBuildOr(b, LLVMBuildAnd(b, even, SPLAT(0xffu), ""), LLVMBuildAnd(b, odd, SPLAT(0xff0000u), ""), "");
#undef SPLAT
  return LLVMBuildBitCast(b, v, v16w, "");
}

/* V[ξ][cp][tile] for the block's `rows` tile rows (tile r·TW + tw): each step 8 tiles of a tile row and one
 * channel pair, both channels in one vector of 16 i16 (lane 2j: tile j of the even channel, 2j + 1: of the odd
 * one), which is V's layout, so the transforms work on both at once. Window column q of tile j is byte m·j + q
 * of a row: of the 8·m bytes loaded at the tiles' first column (q < m), or at m past it; rows of TW = 8 / G
 * tiles are loaded G at a time (m·TW bytes each) and put side by side. A row's last vector of 8 tiles reaches
 * past its TW tiles into the next row's first, which that row's own step writes afterwards, or into the slack
 * after the block. */
static void transform_input(FcKernel *k, const Wino *t, LLVMValueRef P, LLVMValueRef V, LLVMValueRef rows) {
  LLVMBuilderRef b = k->b;
  int m = t->m, A = t->A;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i16 = LLVMInt16TypeInContext(k->ctx);
  int per_row = TV / t->G; /* tiles a row's loads cover */
  LLVMTypeRef vlb = LLVMVectorType(i8, (unsigned)(per_row * m)), v16w = LLVMVectorType(i16, 16);
  int pick[MAX_A][16]; /* column q of the 8 tiles, both channels: from the pair of loads at 0 (q < m) or at m */
  for (int q = 0; q < A; q++)
    for (int j = 0; j < 8; j++) {
      pick[q][2 * j] = m * j + q % m;
      pick[q][2 * j + 1] = TV * m + m * j + q % m;
    }
  FcLoop lp, lr, lt;
  LLVMValueRef cp = fc_cg_loop_begin(k, &lp, c64(k, 0), c64(k, t->CP), 1, "wcp");
  LLVMValueRef c0 = fc_cg_imulc(k, cp, 2), c1 = fc_cg_smin(k, fc_cg_iadd(k, c0, c64(k, 1)), c64(k, t->c.C - 1));
  LLVMValueRef r = fc_cg_loop_begin(k, &lr, c64(k, 0), rows, t->G, "wr");
  LLVMValueRef tv = fc_cg_loop_begin(k, &lt, c64(k, 0), c64(k, t->NTV), 1, "wtv");
  LLVMValueRef d[MAX_A][MAX_A];
  for (int i = 0; i < A; i++) {
    LLVMValueRef lo[2], hi[2];
    for (int h = 0; h < 2; h++) {
      /* the G rows' loads side by side (the rows of a last group past `rows` read stale bytes of P or the
       * scratch after it: tiles no store reads) */
      LLVMValueRef part[2][8];
      for (int g = 0; g < t->G; g++) {
        LLVMValueRef rg = fc_cg_iadd(k, r, c64(k, g));
        LLVMValueRef pr = fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, h ? c1 : c0, t->R), rg), A), c64(k, i));
        LLVMValueRef at_ = fc_cg_iadd(k, fc_cg_imulc(k, pr, t->Wp), fc_cg_imulc(k, tv, m * TV));
        part[0][g] = load_vec(k, vlb, gep8(k, P, at_));
        part[1][g] = load_vec(k, vlb, gep8(k, P, fc_cg_iadd(k, at_, c64(k, m))));
      }
      lo[h] = fc_cg_concat(k, part[0], t->G);
      hi[h] = fc_cg_concat(k, part[1], t->G);
    }
    for (int q = 0; q < A; q++)
      d[i][q] = m == 4 ? window_column(k, q < m ? lo : hi, q % m)
                       : LLVMBuildZExt(b, q < m ? fc_cg_shuffle(k, lo[0], lo[1], pick[q], 16)
                                                : fc_cg_shuffle(k, hi[0], hi[1], pick[q], 16), v16w, "");
  }
  LLVMValueRef e[MAX_A][MAX_A], col[MAX_A], out[MAX_A];
  for (int q = 0; q < A; q++) {
    for (int i = 0; i < A; i++) col[i] = d[i][q];
    bt(k, t, col, out);
    for (int a = 0; a < A; a++) e[a][q] = out[a];
  }
  LLVMValueRef tile0 = fc_cg_iadd(k, fc_cg_imulc(k, r, t->TW), fc_cg_imulc(k, tv, TV));
  for (int a = 0; a < A; a++) {
    bt(k, t, e[a], out);
    for (int bb = 0; bb < A; bb++) {
      LLVMValueRef pair = fc_cg_iadd(k, c64(k, (a * A + bb) * t->CP), cp);
      LLVMValueRef at_ = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, pair, t->TBs), tile0), 4);
      store_vec(k, out[bb], gep8(k, V, at_));
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

/* Y[ξ] of the m tiles mt0 .. mt0 + count (the j-th at Y + j·y_bytes) for the nv tile vectors from t0: every m
 * tile in turn on the same V vectors, which stay in L1 for all of them. */
static void gemm_group(FcKernel *k, const Wino *t, LLVMValueRef vx, LLVMValueRef Y, LLVMValueRef wp, LLVMValueRef xi,
                       LLVMValueRef mt0, LLVMValueRef count, LLVMValueRef t0, int nv, LLVMValueRef acc) {
  FcLoop lj;
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(k, 0), count, 1, "wmj");
  LLVMValueRef mt = fc_cg_iadd(k, mt0, j);
  LLVMValueRef ux = gep8(k, wp, fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, xi, t->MT), mt), t->CP * MR * 4));
  LLVMValueRef yx = gep8(k, Y, fc_cg_iadd(k, fc_cg_imulc(k, j, t->y_bytes), fc_cg_imulc(k, xi, MR * t->TBs * 4)));
  gemm_vectors(k, t, vx, ux, yx, t0, nv, acc);
  fc_cg_loop_end(k, &lj);
}

/* Y of the m tiles mt0 .. mt0 + count: per position ξ and pair of tile vectors, the whole group (gemm_group), so
 * V streams from L2 once per group of m tiles instead of once per m tile. */
static void gemm(FcKernel *k, const Wino *t, LLVMValueRef V, LLVMValueRef Y, LLVMValueRef wp, LLVMValueRef mt0,
                 LLVMValueRef count, LLVMValueRef tiles, LLVMValueRef acc) {
  LLVMBuilderRef b = k->b;
  FcLoop lx, lt;
  /* whole vectors of 8 tiles (the last one's lanes past the block read the slack), in pairs, then a lone one */
  LLVMValueRef nvec = LLVMBuildSDiv(b, fc_cg_iadd(k, tiles, c64(k, TV - 1)), c64(k, TV), "");
  LLVMValueRef pairs = LLVMBuildSDiv(b, nvec, c64(k, 2), "");
  LLVMValueRef xi = fc_cg_loop_begin(k, &lx, c64(k, 0), c64(k, t->A * t->A), 1, "wxi");
  LLVMValueRef vx = gep8(k, V, fc_cg_imulc(k, xi, t->CP * t->TBs * 4));
  LLVMValueRef tp = fc_cg_loop_begin(k, &lt, c64(k, 0), pairs, 1, "wtp");
  gemm_group(k, t, vx, Y, wp, xi, mt0, count, fc_cg_imulc(k, tp, 2 * TV), 2, acc);
  fc_cg_loop_end(k, &lt);
  LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntNE, LLVMBuildSRem(b, nvec, c64(k, 2), ""),
                                                          c64(k, 0), ""));
  gemm_group(k, t, vx, Y, wp, xi, mt0, count, fc_cg_imulc(k, pairs, 2 * TV), 1, acc);
  fc_cg_if_end(k, cont);
  fc_cg_loop_end(k, &lx);
}

/* An output row's values from ox0 (its tiles' columns in order): the whole vector, or its first `valid`
 * (plain stores of pieces: AVX2, this kernel's target, has no masked byte store). */
static void store_row(FcKernel *k, LLVMValueRef row, LLVMValueRef dst, int64_t valid) {
  if (valid >= (int64_t)LLVMGetVectorSize(LLVMTypeOf(row))) store_vec(k, row, dst);
  else fc_cg_store_prefix(k, row, dst, (unsigned)valid);
}

/* The conv sums from the output transform's scaled ones: s >> 2 for F(2×2); for F(4×4), s = 576·sum modulo
 * 2^32, times 9's inverse modulo 2^32 is 64·sum, which fits i32 (the bound of the top), then >> 6. Where the
 * power of two folds (scale_folds) the shift is left out. */
static LLVMValueRef unscale(FcKernel *k, const Wino *t, LLVMValueRef s) {
  LLVMTypeRef vi = LLVMTypeOf(s), i32 = LLVMGetElementType(vi);
  if (t->m == 4) s = LLVMBuildMul(k->b, s, fc_cg_splat_const(vi, LLVMConstInt(i32, INV9, 0)), "");
  if (t->folded) return s;
  return LLVMBuildAShr(k->b, s, fc_cg_splat_const(vi, LLVMConstInt(i32, (unsigned long long)t->shift, 0)), "");
}

/* Tiles [r][tv] of channel m (the block's tile rows r .. r + G - 1, of global tile rows gr0 + r ..; channel
 * m's plane starts at mplane in image 0): the output transform, the unscaling, the requantisation, then each
 * tile row's m output rows (those of rows inside the block and OH). */
static void output_tiles(FcKernel *k, const Wino *t, LLVMValueRef yi, LLVMValueRef r, LLVMValueRef tv, int64_t valid,
                         LLVMValueRef corr, LLVMValueRef mult, LLVMValueRef mplane, LLVMValueRef gr0, LLVMValueRef rows) {
  const FcConv2 *c = &t->c;
  LLVMBuilderRef b = k->b;
  int m = t->m, A = t->A, per_row = m * TV / t->G;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx), vi = LLVMVectorType(i32, TV);
  LLVMTypeRef et = t->q.out == FC_DT_F32 ? LLVMFloatTypeInContext(k->ctx) : LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef tile0 = fc_cg_iadd(k, fc_cg_imulc(k, r, t->TW), fc_cg_imulc(k, tv, TV));
  LLVMValueRef y[MAX_A * MAX_A], f[4][MAX_A], col[MAX_A], o[4], rowv[4];
  for (int x = 0; x < A * A; x++)
    y[x] = load_vec(k, vi, gep8(k, yi, fc_cg_imulc(k, fc_cg_iadd(k, c64(k, (int64_t)x * MR * t->TBs), tile0), 4)));
  for (int bb = 0; bb < A; bb++) {
    for (int a = 0; a < A; a++) col[a] = y[a * A + bb];
    at(k, t, col, o);
    for (int oo = 0; oo < m; oo++) f[oo][bb] = o[oo];
  }
  /* output column c of tile j at m·j + c: pairs of columns interleaved, then (m = 4) the pairs */
  int inter[16], quad[32];
  for (int j = 0; j < 8; j++) {
    inter[2 * j] = j, inter[2 * j + 1] = 8 + j;
    for (int cc = 0; cc < 4; cc++) quad[4 * j + cc] = (cc < 2 ? 0 : 16) + 2 * j + cc % 2;
  }
  /* where the m columns requantise as one packed vector (8-bit results: column p's tile j at 8p + j) */
  int from_packed[32];
  for (int j = 0; j < 8; j++)
    for (int p = 0; p < m; p++) from_packed[m * j + p] = 8 * p + j;
  LLVMValueRef corrs[4] = {corr, corr, corr, corr}, mults[4] = {mult, mult, mult, mult};
  for (int oo = 0; oo < m; oo++) {
    at(k, t, f[oo], o);
    for (int p = 0; p < m; p++) o[p] = unscale(k, t, o[p]);
    LLVMValueRef packed = fc_qp_finish_packed(k, &t->q, o, m, corrs, mults);
    if (packed) {
      rowv[oo] = fc_cg_shuffle(k, packed, NULL, from_packed, 8 * m);
      continue;
    }
    LLVMValueRef res[4];
    for (int p = 0; p < m; p++) res[p] = fc_qp_finish(k, &t->q, o[p], corr, mult);
    rowv[oo] = fc_cg_shuffle(k, res[0], res[1], inter, 16);
    if (m == 4) rowv[oo] = fc_cg_shuffle(k, rowv[oo], fc_cg_shuffle(k, res[2], res[3], inter, 16), quad, 32);
  }
  for (int g = 0; g < t->G; g++) {
    LLVMValueRef rg = fc_cg_iadd(k, r, c64(k, g));
    LLVMBasicBlockRef in_block = g ? fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntSLT, rg, rows, "")) : NULL;
    LLVMValueRef gr = fc_cg_iadd(k, gr0, rg);
    LLVMValueRef n = LLVMBuildSDiv(b, gr, c64(k, t->TH), ""), th = LLVMBuildSRem(b, gr, c64(k, t->TH), "");
    LLVMValueRef ych = fc_cg_iadd(k, mplane, fc_cg_imulc(k, n, c->M * c->OH * c->OW));
    int idx[32];
    for (int l = 0; l < per_row; l++) idx[l] = g * per_row + l;
    for (int oo = 0; oo < m; oo++) {
      LLVMValueRef row = t->G > 1 ? fc_cg_shuffle(k, rowv[oo], NULL, idx, per_row) : rowv[oo];
      LLVMValueRef oy = fc_cg_iadd(k, fc_cg_imulc(k, th, m), c64(k, oo));
      LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntSLT, oy, c64(k, c->OH), ""));
      LLVMValueRef at_ = fc_cg_iadd(k, ych, fc_cg_iadd(k, fc_cg_imulc(k, oy, c->OW), fc_cg_imulc(k, tv, m * TV)));
      store_row(k, row, LLVMBuildGEP2(b, et, k->out[0], &at_, 1, ""), valid);
      fc_cg_if_end(k, cont);
    }
    if (in_block) fc_cg_if_end(k, in_block);
  }
}

/* Channels mt·MR ..: every tile of the block's rows (global tile rows gr0 ..). */
static void transform_output(FcKernel *k, const Wino *t, LLVMValueRef Y, LLVMValueRef wp, LLVMValueRef mt,
                             LLVMValueRef gr0, LLVMValueRef rows) {
  const FcConv2 *c = &t->c;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx), f32 = LLVMFloatTypeInContext(k->ctx);
  /* whole vectors of a row's outputs, then its last (a prefix); rows sharing vectors store prefixes */
  int64_t nfull = t->G > 1 ? 0 : c->OW / (t->m * TV);
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
    LLVMValueRef mplane = fc_cg_imulc(k, m, c->OH * c->OW);
    FcLoop lr, lt;
    LLVMValueRef r = fc_cg_loop_begin(k, &lr, c64(k, 0), rows, t->G, "wor");
    if (nfull > 0) {
      LLVMValueRef tv = fc_cg_loop_begin(k, &lt, c64(k, 0), c64(k, nfull), 1, "wot");
      output_tiles(k, t, yi, r, tv, t->m * TV, corr, mult, mplane, gr0, rows);
      fc_cg_loop_end(k, &lt);
    }
    if (t->NTV > nfull)
      output_tiles(k, t, yi, r, c64(k, nfull), c->OW - t->m * TV * nfull, corr, mult, mplane, gr0, rows);
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
  /* F(4×4) where its shape, transformed weights and bound allow, else F(2×2) (see the top) */
  t.m = variant_suits(k, c, 4) && sums_fit_f4(&t.q) ? 4 : 2;
  t.shift = t.m == 4 ? 6 : 2;
  t.folded = scale_folds(&t.q, t.shift);
  t.A = t.m + 2;
  int A2 = t.A * t.A;
  t.TH = (c->OH + t.m - 1) / t.m;
  t.TW = (c->OW + t.m - 1) / t.m;
  t.TWp = padded_tw(t.TW);
  t.G = t.TWp < TV ? (int)(TV / t.TWp) : 1;
  t.NTV = t.TWp * t.G / TV;
  t.Wp = t.m * t.TWp + 2;
  t.CP = (c->C + 1) / 2;
  t.Mp = round_up(c->M, MR);
  t.MT = t.Mp / MR;
  /* blocks of R tile rows of the batch (across images), R·TW a multiple of 16 tiles (2 vectors) where that
   * keeps V within twice its budget */
  t.GR = c->N * t.TH;
  double row_v = (double)A2 * (double)t.CP * (double)t.TW * 4;
  int64_t r0 = (int64_t)(V_BUDGET / row_v), step = 16 / gcd(t.TW, 2 * TV);
  r0 = r0 < 1 ? 1 : r0;
  t.R = r0 % step && round_up(r0, step) <= 2 * r0 ? round_up(r0, step) : r0;
  t.R = t.R > t.GR ? t.GR : t.R;
  t.NB = (t.GR + t.R - 1) / t.R;
  t.TBs = round_up(t.R * t.TW, 2 * TV) + TV;
  double blocks = (double)t.NB;
  t.MS = blocks >= 4 ? 1 : t.MT < 4 ? t.MT : 4;
  /* F(2×2): 4·|Σ x·w'| must fit i32 (see the top); the shape suits it; the scratch and packed weights stay
   * modest. P is followed by 64 bytes that F(4×4)'s last loads may reach. */
  double scratch = (double)c->C * t.A * (double)t.R * (double)t.Wp + 64 + A2 * (double)(t.CP + MR) * (double)t.TBs * 4 +
                   Y_BUDGET;
  double ubytes = u_bytes(c, t.m);
  if ((t.m == 2 && (!variant_suits(k, c, 2) ||
                    36.0 * (double)c->C * (double)t.q.xmax * (double)max_abs_w(&t.q) >= 2147483648.0)) ||
      scratch > (64 << 20) || ubytes > (256 << 20) || blocks * (double)t.MS > (double)INT64_MAX / 2) {
    fc_qp_free(&t.q);
    return fc_conv_i8(k);
  }
  t.p_bytes = round_up(c->C * t.A * t.R * t.Wp + 64, 64);
  t.v_bytes = round_up(A2 * t.CP * t.TBs * 4, 64);
  t.y_bytes = A2 * MR * t.TBs * 4;
  int64_t per_budget = Y_BUDGET / t.y_bytes;
  t.MG = per_budget < 1 ? 1 : per_budget > MAX_MG ? MAX_MG : per_budget;
  t.u_bytes = (int64_t)ubytes;
  int64_t bytes;
  int w_bytes;
  uint8_t *src = u_source(&t, &bytes, &w_bytes);
  int64_t params[FRT_WINO_NPARAMS];
  params[FRT_WINO_M] = t.m, params[FRT_WINO_OUT_CH] = c->M, params[FRT_WINO_IN_CH] = c->C;
  params[FRT_WINO_MT] = t.MT, params[FRT_WINO_CP] = t.CP, params[FRT_WINO_MR] = MR;
  params[FRT_WINO_W_BYTES] = w_bytes, params[FRT_WINO_U_BYTES] = t.u_bytes, params[FRT_WINO_MP] = t.Mp;
  LLVMValueRef u = fc_cg_derived_bytes(k, "frt_winograd_i8_weights", src, (size_t)bytes,
                                       (size_t)(t.u_bytes + 8 * t.Mp), params, FRT_WINO_NPARAMS, "wino_u_i8");
  LLVMValueRef wp = fc_kernel_substitute_operand(k, 1, u);
  free(src);
  int64_t outer = t.NB * t.MS;
  fc_kernel_set_outer(k, outer, 2.0 * A2 * (double)t.Mp / (double)t.MS * (double)t.CP * 2 * (double)t.R * (double)t.TW);

  LLVMBuilderRef b = k->b;
  LLVMTypeRef vi = LLVMVectorType(LLVMInt32TypeInContext(k->ctx), TV);
  LLVMValueRef scr = fc_kernel_scratch(k, t.p_bytes + t.v_bytes + t.MG * t.y_bytes);
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
  LLVMValueRef mg = fc_cg_loop_begin(k, &lm, mt0, mt1, t.MG, "wmg");
  LLVMValueRef count = fc_cg_smin(k, c64(k, t.MG), fc_cg_isub(k, mt1, mg));
  gemm(k, &t, V, Y, wp, mg, count, fc_cg_imulc(k, rows, t.TW), acc);
  FcLoop lj;
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(k, 0), count, 1, "wmo");
  transform_output(k, &t, gep8(k, Y, fc_cg_imulc(k, j, t.y_bytes)), wp, fc_cg_iadd(k, mg, j), gr0, rows);
  fc_cg_loop_end(k, &lj);
  fc_cg_loop_end(k, &lm);
  fc_cg_loop_end(k, &lo);
  fc_qp_free(&t.q);
  return FC_OK;
}
