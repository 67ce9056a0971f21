/* cg_requant.h — the quantised conv and matmul of qspec §2 as the integer kernels see them: the zero points
 * and bias folded at compile time into one i32 correction per output channel, and the requantising store.
 *
 * An op with quantised operands computes acc[c] = Σ (x - zx)(w - zw[c]) + b[c] exactly in i32 and then
 *   quantised result: y = clamp(rne(f32(acc) · m[c]) + zy, qmin, qmax), m[c] = f32(f32(sx · sw[c]) / sy)
 *   f32 result:       y = f32(acc) · (float)(sx · sw[c]);
 *   with an epilogue (a conv's, of one-element constants: the f32 result's activation and the next
 *   quantisation as float steps), its program over that f32 y, converted to `to` (u8/i8) if the op has one.
 * The kernels multiply bytes as u8 × s8 (x86's vpdpbusd / vpmaddubsw) or u16 × s16 (vpmaddwd), so:
 *   - an i8 x is read with its top bit flipped (x ^ 0x80 = x + 128 as u8), and zx becomes zx + 128;
 *   - the weights' zero points are subtracted at compile time: w' = w - zw[c] lies in [-255, 255]; when
 *     every w' fits in s8 the byte kernels take it, otherwise only the exact 16-bit path (WIDEN) does;
 *   - then acc = Σ x·w' - zx·Σ_k w'[c, k] + b[c], where the last two terms are a per-channel constant
 *     (corr[c]); padding taps read zx (the real 0), which keeps this identity exact at the borders.
 * The arithmetic wraps modulo 2^32 like the spec's i32, so the identity holds bit for bit.
 * The requantisation is vectorised over lanes that share or vary the channel (a conv row shares it, a
 * matmul row varies it along N); the f32 product is one fmul (never contracted), rne is llvm.roundeven
 * and the clamp happens on the rounded value, so the result equals the scalar definition exactly.
 */
#ifndef FLOWC_CG_REQUANT_H
#define FLOWC_CG_REQUANT_H

#include "cg_epilogue.h"
#include "codegen.h"

typedef struct FcQuantProduct {
  /* activations */
  bool flip;            /* x has i8 storage: bytes are read xor 0x80 */
  int32_t zx;           /* x's zero point in the u8 view (zx + 128 when flipped) */
  int32_t xmax;         /* the largest u8-view value x can hold (its qmax, + 128 when flipped) */
  /* weights, as a [K, channels] (chan_axis 1, matmul) or [channels, K] (chan_axis 0, conv) matrix */
  int64_t K, channels;
  int chan_axis;
  int16_t *w;           /* w' = w - zw[c] in the weights' element order (malloc'd: fc_qp_free) */
  bool w8;              /* every w' lies in [-128, 127] */
  int64_t *wabs;        /* per channel Σ_k |w'[c, k]| (malloc'd: fc_qp_free) */
  /* per channel */
  int32_t *corr;        /* b[c] - zx · Σ_k w'[c, k], wrapped to i32 */
  int32_t *bias;        /* b[c] alone (0 without a bias): for kernels that subtract zx from x themselves */
  float *mult;          /* m[c] (quantised result) or sx · sw[c] (f32 result) */
  bool mult_finite;     /* every m[c] is finite (fc_qp_finish_packed's condition) */
  bool product_in_i32;  /* f32(acc) · m[c] stays inside i32's range for every input (bounded at compile time) */
  /* result */
  FcDtype out;          /* U8, I8 (requantised, or an epilogue's `to`) or F32 */
  int32_t zy, lo, hi;   /* requantised: zero point and the clamp bounds of rne(·) before adding zy */
  FcCgEpilogue *ep;     /* a conv's epilogue over the f32 product (then converted to out), or NULL */
  /* x's zero point as data: zx_at bytes into the kernel's constant zx_base (fc_qp_packed_weights), or
   * zx_base is NULL and the emitters write zx as a constant */
  LLVMValueRef zx_base;
  int64_t zx_at;
} FcQuantProduct;

/* Whether op (a flow.conv or flow.matmul) is a quantised product of qspec §2: x per-tensor u8/i8, weights
 * a constant with data, u8/i8, per tensor or per axis along chan_axis (conv: 0, matmul's B: 1), an optional
 * constant plain i32 bias [channels], result per-tensor u8/i8 or plain f32. why (may be NULL) gets the
 * reason when it is not. */
bool fc_qp_applies(const FcOp *op, int chan_axis, char *why, size_t cap);
/* Fills q for such an op (fc_qp_applies must hold) whose weights are `channels` × K along chan_axis. */
FcStatus fc_qp_init(FcKernel *k, int chan_axis, int64_t K, int64_t channels, FcQuantProduct *q);
void fc_qp_free(FcQuantProduct *q);
/* Stores a register tile of mr rows x nv vectors of w elements (out[i * nv + v], element type et) at row
 * row0 + i, column col0 + v * w of the row-major output base + row * row_stride + col: whole vectors when the
 * tile is full (rows == mr, cols == nv * w), else through the stack tile `edge` (mr * nv * w elements) and
 * element by element for the valid rows x cols. */
void fc_qp_store_tile(FcKernel *k, LLVMTypeRef et, const LLVMValueRef *out, int mr, int nv, int w, LLVMValueRef edge,
                      LLVMValueRef base, LLVMValueRef row0, LLVMValueRef rows, int64_t row_stride, LLVMValueRef col0,
                      LLVMValueRef cols);
/* fc_qp_store_tile of f32 values with a matmul's fused epilogue e (cg_epilogue.h, over the result's [rows, N]
 * view: base 0, row_stride N) applied to each value stored: to whole vectors in a full tile, element by element
 * at an edge, so that no extra operand is read outside the result. */
void fc_qp_store_tile_epilogue(FcKernel *k, FcCgEpilogue *e, const LLVMValueRef *out, int mr, int nv, int w,
                               LLVMValueRef edge, LLVMValueRef row0, LLVMValueRef rows, int64_t row_stride,
                               LLVMValueRef col0, LLVMValueRef cols);
/* The bytes of x86's saturating packs (vpackssdw, then vpackuswb or vpacksswb) of g = 2 or 4 vectors of w i32
 * lanes (w = 8 or 16; with g = 2 the second pack reads its first operand twice), as <w x i32>: reordered into
 * the g vectors' element order, <g·w x i8>. */
LLVMValueRef fc_qp_packs_in_order(FcKernel *k, LLVMValueRef bytes, int g, int w);
/* The same for a tile whose columns are output rows: tile element (i, j) goes to base + (col0 + j) · col_stride
 * + row0 + i (the few-pixel conv's pixels × channels into NCHW); a full tile by shuffles, each output row's
 * mr elements one small vector. */
void fc_qp_store_tile_transposed(FcKernel *k, LLVMTypeRef et, const LLVMValueRef *out, int mr, int nv, int w,
                                 LLVMValueRef edge, LLVMValueRef base, LLVMValueRef row0, LLVMValueRef rows,
                                 int64_t col_stride, LLVMValueRef col0, LLVMValueRef cols);

/* x's zero point as data rather than code, so that kernels of the same shape whose ops differ only in it
 * share one function (cg_module.c compares kernel texts): the padding of an input of zero point 66 and of
 * one of 59 would otherwise make two kernels of 1 300 instructions (MobileNetV2 has 7 such copies). The
 * packing gets 4 more bytes (at its size rounded up to 4: every op of one shape has the same offset) and
 * fc_qp_zx_byte loads it at each use (fills and memsets outside the tile loops). zy and the clamp bounds stay constants: loaded in the requantisation inside the tile loops they
 * made MobileNetV2's 1x1 convs 10-20% slower on AVX2, whether the loads were plain, !invariant.load,
 * volatile (never hoisted) or of whole 64-byte splats (no broadcast): why was not found. */
/* The kernel's packed weights pk (bytes, malloc'd; freed here, the first `head` of them made from the weights
 * alone: fc_cg_packed_weights_bytes) with zx after them, as the global that operand 1 (the weights) becomes
 * (fc_kernel_substitute_operand): returns its pointer, and q reads zx there. */
LLVMValueRef fc_qp_packed_weights(FcKernel *k, FcQuantProduct *q, void *pk, int64_t bytes, int64_t head,
                                  const char *name);
/* zx as an i8: the u8 view, or (storage) the byte x's own type stores for it (the padding of kernels that
 * read x unflipped). */
LLVMValueRef fc_qp_zx_byte(FcKernel *k, const FcQuantProduct *q, bool storage);

/* Whether vpmaddubsw's i16 pair sums a1·w1 + a2·w2 (a in [0, xmax]) can never saturate for pairs of
 * consecutive k (2p, 2p + 1) of every channel. */
bool fc_qp_pairs_exact(const FcQuantProduct *q);
/* Whether q's kernels may choose vpmaddubsw at run time where fc_qp_pairs_exact does not hold: s8 weights,
 * u8 x (an i8 x's bytes are flipped: below 0x80 only for negative x) and a zero point below 0x80 (the
 * padding taps read it). Activations of 7 bits (PyTorch's x86 qconfig keeps them in [0, 127] to avoid this
 * very saturation) then make every pair sum exact whatever the weights: |a1·w1 + a2·w2| <= 2·127·128 =
 * 32512. The kernels test the bytes (fc_i8_runs_below_0x80) and run the exact 16-bit dot otherwise. */
bool fc_qp_narrow_at_run_time(const FcQuantProduct *q);
/* Emits that test: an i1, whether every byte of the runs base + r·stride + [0, len) for r in [0, rows) is
 * below 0x80 (true where len <= 0): 32-byte vectors OR-ed together, the last one of a run overlapping. */
LLVMValueRef fc_i8_runs_below_0x80(FcKernel *k, LLVMValueRef base, LLVMValueRef rows, int64_t stride,
                                   LLVMValueRef len);

/* Emission. acc: <n x i32> (or i32 when n is 1); corr: i32 of the same shape (added, wrapping); mult: f32
 * of the same shape. Returns the result values, <n x i8> for U8/I8 (the storage bits) or <n x float>. */
LLVMValueRef fc_qp_finish(FcKernel *k, const FcQuantProduct *q, LLVMValueRef acc, LLVMValueRef corr,
                          LLVMValueRef mult);

/* fc_qp_finish of n vectors acc[0 .. n) of <w x i32> (vector v with corr[v] and mult[v]), returned as one
 * <n·w x i8> vector in their order, for whole output rows: where the target packs i32 vectors of w lanes
 * (fc_target_i8_pack_lanes), the result has 8 bits, every multiplier is finite and n is 2, 4, 8 or 16. Per
 * vector the f32 product, its min with hi and vcvtps2dq; then 4 vectors (2 where n is 2) are narrowed
 * together by the saturating packs and one vpermd restores their order, where each on its own takes a
 * truncation (vpmovdb: 2 instructions per 16 results on AVX-512; 4 per 8 on AVX2) and a max. NULL where it
 * does not apply; the caller then finishes vector by vector. */
LLVMValueRef fc_qp_finish_packed(FcKernel *k, const FcQuantProduct *q, const LLVMValueRef *acc, int n,
                                 const LLVMValueRef *corr, const LLVMValueRef *mult);

/* A register tile of mr rows x nv vectors requantised for fc_qp_store_tile: vector (i, v) is acc[i·nv + v]
 * with corr[i·nv + v] and mult[i·nv + v]. Each row packed into one vector where
 * fc_qp_finish_packed applies (out[i]; returns 1), else vector by vector (out[i·nv + v]; returns nv): the
 * vectors per row to store. */
int fc_qp_finish_tile(FcKernel *k, const FcQuantProduct *q, const LLVMValueRef *acc, int mr, int nv,
                      const LLVMValueRef *corr, const LLVMValueRef *mult, LLVMValueRef *out);

/* kernel_matmul_i8.c: acc + the products of 4 bytes of u8 a with 4 bytes of s8 b per i32 lane (for WIDEN:
 * 2 u16 of a with 2 s16 of b), by the target's instruction; a, b: any 32·lanes-bit vectors, acc <lanes x i32>. */
LLVMValueRef fc_i8_dot(FcKernel *k, FcI8Dot dot, int lanes, LLVMValueRef acc, LLVMValueRef a, LLVMValueRef b);
/* kernel_matmul_i8.c: acc + two quads' products by vpmaddubsw at once (a0 with b0, a1 with b1, as
 * fc_i8_dot's MADDUBS), their i16 lanes added before vpmaddwd widens them: exact only where every lane's sum
 * fits i16 (cg_quad_pairs.c decides where). */
LLVMValueRef fc_i8_dot_pair(FcKernel *k, int lanes, LLVMValueRef acc, LLVMValueRef a0, LLVMValueRef b0, LLVMValueRef a1,
                           LLVMValueRef b1);
/* WIDEN from s8 packings: the 4 bytes of the i32 q32 sign- (sign) or zero-extended to 4 i16 and repeated
 * over <2·lanes x i16> (vpbroadcastd + vpmovsxbw / vpmovzxbw), the operand that meets a vector of
 * lanes/2 quads widened to i16: vpmaddwd then leaves each quad's two partial sums in adjacent i32 lanes. */
LLVMValueRef fc_i8_quad_widen(FcKernel *k, LLVMValueRef q32, int lanes, bool sign);
/* The <lanes x i32> of those partial sums added pairwise: lane j = (lo ++ hi)[2j] + (lo ++ hi)[2j + 1]. */
LLVMValueRef fc_i8_pair_sums(FcKernel *k, int lanes, LLVMValueRef lo, LLVMValueRef hi);

/* kernel_matmul_i8.c: the plain form's (MatMulInteger lowered: u8 A x i8 B -> i32) constant B as a
 * product without zero points or corrections (xmax 255), for the integer GEMM kernels. */
void fc_i8_plain_weights(const FcOp *op, int64_t K, int64_t N, FcQuantProduct *q);
/* kernel_matmul_i8.c: the one s8 packing of a constant B [K, N] (w' of q) that every integer GEMM variant
 * reads: unit panels of 16 columns, kgp groups of 4 k each (fc_i8_panel_groups(K): ceil(K/4) rounded up to
 * whole 64-byte chunks, which the AMX kernel reads; a packing no AMX kernel reads may take ceil(K/4)), then
 * the quantised form's corrections and multipliers over the npad padded columns. NULL when a size
 * overflows; *bytes is the panels' size. */
int64_t fc_i8_panel_groups(int64_t K);
int8_t *fc_i8_pack_panels(const FcQuantProduct *q, bool quant, int64_t K, int64_t N, int64_t kgp, int64_t *bytes,
                          int64_t *npad, int64_t *total);

#endif /* FLOWC_CG_REQUANT_H */
