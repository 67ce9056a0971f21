/* cg_conv_i8.h — what the two quantised GEMM convs share: kernel_conv_i8.c (output pixels in the vector lanes)
 * and kernel_conv_i8_few_pixels.c (output channels in the lanes, for small output maps).
 *
 * Both compute a group's Y[Mg, P] = W'[Mg, K] · Col[K, P] from the same interleaved im2col block, built by
 * kernel_conv_i8.c (its top comment): Col[k/kg][p][4 bytes], the kg = 4 consecutive k of a pixel as a byte
 * quad (or kg = 2 as two zero-extended u16 for the exact 16-bit dot), taps in the padding reading zx. The
 * pixel kernel reads a vector of pixels' quads from it; the few-pixel kernel broadcasts one pixel's quad.
 */
#ifndef FLOWC_CG_CONV_I8_H
#define FLOWC_CG_CONV_I8_H

#include "cg_requant.h"
#include "codegen.h"

/* The conv as 2-D: x [N, C, H, W], w [M, Cg, KH, KW], y [N, M, OH, OW] (1-D has H = KH = OH = 1). */
typedef struct FcConv2 {
  int64_t N, C, H, W, M, KH, KW, OH, OW, G, Cg, Mg, K, P;
  int64_t sh, sw, dh, dw, ph, pw;
} FcConv2;

/* op's geometry when it is a 1-D or 2-D flow.conv (any dtype) of consistent groups, or a flow.conv_blocked (its
 * channels counted over the blocks); false otherwise. */
bool fc_conv2_of(const FcOp *op, FcConv2 *c);

/* cg_quad_pairs.c (its top comment): which k quads vpmaddubsw may take two at a time. For q's weights
 * ([channels, K], or a matmul's [K, channels]) in G groups of Mg channels, per (group, unit of 16 channels,
 * full chunk of 16 quads) one byte, 0 where its quads run one by one, else p + 1 where every quad a of the
 * chunk pairs with a ^ d (d = 1, 2, 8 for pattern p = 0, 1, 2) for each of the unit's channels. Depends on q
 * alone, so every variant of a packing appends the same bytes. NULL where no chunk pairs (or no kernel runs
 * vpmaddubsw on q, and then *bytes is 0); malloc'd, *bytes long (G · units · fc_quad_xor_chunks(K)). */
enum { FC_QUAD_XOR_PATTERNS = 3 };
uint8_t *fc_quad_xor_pairs_plan(const FcQuantProduct *q, int64_t G, int64_t Mg, int64_t K, int64_t *bytes);
/* The chunks a row of the plan codes: those of 64 whole k (K/64). A kernel's chunk of 16 quads whose last quad
 * is partial (K = 64n - 3 .. 64n - 1) has no code: it runs quad by quad. */
int64_t fc_quad_xor_chunks(int64_t K);
/* Emits chunk h's (an i64) k loop by its code (an i64): step(.., quad0, quads, n) with n quads (2: a pair, or
 * 1) at quad0 + quads[j] (quad0 an i64 from the chunk's first quad 16h, quads constants), so that every
 * address is a constant of an iteration. */
typedef void (*FcQuadXorStep)(FcKernel *k, void *ctx, LLVMValueRef quad0, const int *quads, int n);
void fc_quad_xor_chunk(FcKernel *k, LLVMValueRef code, LLVMValueRef h, FcQuadXorStep step, void *ctx);

typedef struct FcConvI8 {
  FcConv2 c;
  FcQuantProduct q;
  FcI8Gemm g;
  bool sext;              /* WIDEN from the s8 packing: Col as u16 pairs, each channel tile's weights widened
                           * to i16 pairs in the task's scratch once per block */
  bool wide16;            /* WIDEN16: w' outside s8, weights packed as i16 pairs by tiles of mr channels */
  bool pointwise;         /* 1x1, stride 1, no padding: full blocks interleave x's channel planes in place */
  int kg;                 /* k per 4-byte group of a column: 4, or 2 (u16 pairs) for WIDEN and WIDEN16 */
  int64_t KG, MT, PB;     /* k groups, channel tiles per group (of 16 channels; WIDEN16: of mr), pixels per
                           * block (a multiple of 16 and of nr) */
  int64_t NH;             /* 64-byte chunks (16 quads) of a channel's K in the s8 packing */
  int64_t wrow;           /* WIDEN: bytes of one channel's widened row (NH chunks of 64 i16) */
  int64_t nr;
  LLVMValueRef tab_lo, tab_hi; /* per kw: the output columns whose tap lies inside the input */
  bool direct;            /* Col built in one pass from phase planes (build_cols_direct), blocks of RB rows */
  int64_t RB, Rin, Wph;   /* direct: output rows per block, padded input rows and phase-row bytes it reads */
  LLVMValueRef tab_src;   /* direct: per k (KG·kg of them), its tap's offset in the phase planes */
  int64_t col_bytes, row_bytes, pad_bytes; /* the block's scratch (fc_conv_i8_cols_layout) */
  LLVMValueRef cols, rows, pad; /* where in it the Col, the byte rows and the planes lie (fc_conv_i8_cols_at) */
  bool chunked;           /* the Col by chunks of 64 k, each in the layout its own bytes allow (the dual
                           * kernels without VNNI, fc_qp_narrow_at_run_time): chunk h's slot of 32·PB·4 bytes at h·128·PB holds 16 quads
                           * where all its bytes are below 0x80 (flags[h] = 1: vpmaddubsw is exact on them),
                           * else 32 u16 pairs (WIDEN); flags[NH] = 1 where any chunk is WIDEN. Where none
                           * is, the Col is plain quads instead (Col[k/4][p][4], the fast path). Set kg = 2
                           * and KG = 32·NH, the sizes of the widest layout, and no direct build */
  LLVMValueRef flags;     /* chunked: NH + 1 bytes the build writes (NH + 2 with wide_cols) */
  LLVMValueRef wide_cols; /* set by a kernel that fixes wide columns up: PB / 16 i16 masks of the block's
                           * pixels whose column holds a byte above 0x7f, which the build writes. Chunked
                           * (the few-pixel kernel): where they are at most 1/FC_CONV_I8_FIX_SHARE of the
                           * pixels the build writes plain quads (flags[NH] = 0) and flags[NH + 1] = 1, else
                           * chunks and flags[NH + 1] = 0. Plain quads (the pixel kernel's pointwise
                           * fix-up): the interleave marks them as it goes */
  LLVMValueRef pair_codes; /* the s8 packing's pair patterns (fc_quad_xor_pairs_plan), or NULL where the
                           * kernel runs every quad alone */
} FcConvI8;

/* A kernel that runs vpmaddubsw over a few wide columns recomputes each of them with two exact vpmaddubsw
 * dots (its bytes' low 7 bits, then their 0x80s: cg_conv_i8.h's callers), about twice a column's work,
 * where the chunked WIDEN path costs about a third more on every column: worth it up to an eighth of them. */
enum { FC_CONV_I8_FIX_SHARE = 8 };

/* The pixel kernel's register tile for P output pixels: fc_target_i8_conv's, with fewer pixel vectors where
 * that pads P less. */
void fc_conv_i8_pixel_tile(const FcTarget *t, int64_t P, FcI8Gemm *g);
/* Lays out the scratch a block's Col takes, from t's c, kg, KG, PB and direct (with RB, Rin, Wph): the
 * interleaved Col (KG·4·PB bytes) at offset 0, then step 1's byte rows, the padded input planes (or the
 * direct build's phase planes) and their slack. Sets t->col_bytes, row_bytes and pad_bytes; *end gets the
 * bytes in all, a multiple of 64. false when a size overflows. */
bool fc_conv_i8_cols_layout(FcConvI8 *t, int64_t *end);
/* The constant tables the Col build reads (per kw tap ranges; the direct build's tap offsets). */
void fc_conv_i8_cols_tables(FcKernel *k, FcConvI8 *t);
/* Sets t->cols, rows and pad for the task's scratch scr laid out so (emitted where the scratch is taken). */
void fc_conv_i8_cols_at(FcKernel *k, FcConvI8 *t, LLVMValueRef scr);
/* Emits the build of the Col of pixels [p0, p0 + npix) (block blk: p0 = blk·PB, or blk·RB·OW for the direct
 * build) of image n, group g at t->cols; xg: x's first channel of the group in image n. Pixels [npix, PB)
 * and the k past K get zx. */
void fc_conv_i8_build_cols(FcKernel *k, const FcConvI8 *t, LLVMValueRef xg, LLVMValueRef blk, LLVMValueRef p0,
                           LLVMValueRef npix);
/* Whether every byte of x that the block of pixels [p0, p0 + npix) of one (image, group) reads is below 0x80
 * (an i1; xg as above): whole input rows of the group's planes, from the block's first output row's first
 * tap row to its last one's last, a superset of the taps. The dual kernels' choice of vpmaddubsw
 * (fc_qp_narrow_at_run_time); the padding taps read zx, which that checked. */
LLVMValueRef fc_conv_i8_block_narrow(FcKernel *k, const FcConv2 *c, LLVMValueRef xg, LLVMValueRef p0,
                                     LLVMValueRef npix);

/* dst[0 .. len) = src[0 .. len) (xor 0x80 where flip: an i8 x) for a length known here: 16-byte vectors (a
 * loop of them from 64 bytes on), the last one overlapping the one before it, or two overlapping 8- or 4-byte
 * ones (bytes below 4). */
void fc_conv_i8_copy_bytes(FcKernel *k, bool flip, LLVMValueRef src, LLVMValueRef dst, int64_t len);

/* Channel ml0 + i of group grp's correction and multiplier (a row past the group reads its last channel's),
 * from the tables after packed weights of wbytes (wp + wbytes: i32 × M, then f32 × M), splat to `lanes`. */
void fc_conv_i8_channel_scales(FcKernel *k, const FcConvI8 *t, LLVMValueRef wp, int64_t wbytes, LLVMValueRef grp,
                               LLVMValueRef ml0, int i, unsigned lanes, LLVMValueRef *corr, LLVMValueRef *mult);
/* kernel_conv_i8_amx_taps.c: whether its AMX conv without an im2col takes t (c and q set; an AMX target with
 * VBMI, s8 weights, output rows of 32 pixels or more, kernel rows of 3 taps or more whose 16-pixel windows
 * fit 64 bytes, 16 channels a group or more), and the kernel itself (it frees t->q). */
bool fc_conv_i8_amx_taps_applies(const FcKernel *k, const FcConvI8 *t);
FcStatus fc_conv_i8_amx_taps(FcKernel *k, FcConvI8 *t);

/* kernel_conv_i8_fixup.c: the dual kernel's pointwise and direct blocks with a few bytes above 0x7f. Whether
 * t (planned) takes it: pointwise or direct, u8 x. The block's Col is then built as quads with t->wide_cols
 * set (its wide pixels' masks: interleave_from, or fc_conv_i8_mark_wide_quads after the direct build); their
 * count (an i64) from the masks; and, after the block ran on vpmaddubsw, those pixels' outputs recomputed
 * exactly and stored over what it wrote (p0: the block's first pixel). */
typedef struct FcConvI8Fixup {
  LLVMValueRef wp;   /* the s8 packing (then corrections and multipliers at wbytes) */
  int64_t wbytes;
  LLVMValueRef grp;  /* the group */
  LLVMValueRef yb;   /* the image's group's first output channel, elements of et */
  LLVMTypeRef et;
} FcConvI8Fixup;
bool fc_conv_i8_fixup_applies(const FcConvI8 *t);
/* The direct build's Col has no byte rows to mark its wide pixels as it goes: they are marked from the
 * built Col of quads instead (the pixels past the block read zx, below 0x80). */
void fc_conv_i8_mark_wide_quads(FcKernel *k, const FcConvI8 *t);
LLVMValueRef fc_conv_i8_count_wide_pixels(FcKernel *k, const FcConvI8 *t);
void fc_conv_i8_fix_wide_pixels(FcKernel *k, const FcConvI8 *t, const FcConvI8Fixup *f, LLVMValueRef p0);
/* Loops over the pixels marked in t->wide_cols (the block's, from 0; set bits of the PB / 16 masks in order):
 * begin returns the current one (an i64), end closes the loops. */
typedef struct FcWideLoop {
  FcLoop lj, lp;
} FcWideLoop;
LLVMValueRef fc_conv_i8_wide_loop_begin(FcKernel *k, const FcConvI8 *t, FcWideLoop *w);
void fc_conv_i8_wide_loop_end(FcKernel *k, FcWideLoop *w);

/* kernel_dwconv_i8_channels.c: the quantised depthwise conv (kernel_dwconv_i8.c's op, channel multiplier 1)
 * with 8 channels in the lanes, for small maps where the integer dot is vpmaddwd on tap pairs; q is the op's
 * (fc_qp_init): the kernel records where its constant holds zx (fc_qp_packed_weights) and leaves freeing q to
 * the caller. */
bool fc_conv_dw_i8_channels_applies(const FcKernel *k, const FcQuantProduct *q);
FcStatus fc_conv_dw_i8_channels(FcKernel *k, FcQuantProduct *q);

#endif /* FLOWC_CG_CONV_I8_H */
