/* cg_quad_pairs.c — vpmaddubsw on two k quads at once where their sums cannot leave i16: the dual and
 * pair-exact dots of the quantised GEMM convs (kernel_conv_i8.c, kernel_conv_i8_few_pixels.c) and of the
 * blocked 1x1 conv (kernel_matmul_i8.c) without VNNI.
 *
 * vpmaddubsw leaves per i16 lane the sum of two u8 × s8 products, and vpmaddwd with ones adds lane pairs into
 * i32: three instructions per 4 k (two on the multiply ports). Two quads q0, q1 whose i16 lanes may be added
 * first (vpaddw) take five for 8 k, three of them multiplies: a sixth fewer instructions and a quarter fewer
 * multiplies. vpaddw wraps, so the sum is exact where every lane's true value fits i16: lane L of channel c
 * holds Σ x·w over the bytes 2L, 2L + 1 of both quads, with x in [0, A] (A: 127 on the bytes the dual
 * kernels run vpmaddubsw on, the type's largest u8 value where pairs are exact anyway), so it lies in
 * [-A·S-, A·S+] with S+ (S-) the sum of those four weights' positive parts (magnitudes of negative parts):
 * A·S+ <= 32767 and A·S- <= 32768 make it exact, whatever the activations. The weights are constants, so
 * which quads pair is decided here, at compile time, for the 16 channels of a unit (the kernels' channel
 * tiles lie inside one) and each chunk of 16 quads (the chunked Col's unit of layout, so the dual kernels'
 * mixed chunks keep their own dots).
 *
 * The pairs follow fixed patterns: a chunk pairs every quad a with a ^ d for one d of 1, 2, 8 (the first that
 * holds for all its pairs and the unit's channels), or runs its quads one at a time; one byte per (group,
 * unit, chunk) follows the packed weights in their constant, the same bytes for every CPU variant of an
 * artefact (VNNI and AMX ignore them). fc_quad_xor_chunk emits a chunk's loops with every address a
 * constant of an iteration: an arbitrary matching read from a table (per pair step an index byte and its
 * offsets) cost the kernels about what the pairs save. The three patterns cover nearly every chunk of real
 * networks' wide layers (ResNet-18's 3×3 convs, MobileNetV2's projections) and some of the expansions' (a
 * fourth to a half of MobileNetV2's deepest).
 */
#include <stdlib.h>

#include "cg_conv_i8.h"

/* w' of channel m, k (q's [channels, K] matrix, or [K, channels] for a matmul's B), or 0 past K. */
static int weight_at(const FcQuantProduct *q, int64_t m, int64_t kk) {
  if (kk >= q->K) return 0;
  return q->chan_axis == 1 ? q->w[kk * q->channels + m] : q->w[m * q->K + kk];
}

/* Quads a and b of channel m may share an i16 lane: both lanes' sums stay within i16 for x in [0, xbound]. */
static bool quads_pair(const FcQuantProduct *q, int64_t m, int64_t a, int64_t b, int xbound) {
  for (int lane = 0; lane < 2; lane++) {
    int64_t pos = 0, neg = 0;
    for (int j = 0; j < 2; j++) {
      int wa = weight_at(q, m, 4 * a + 2 * lane + j), wb = weight_at(q, m, 4 * b + 2 * lane + j);
      pos += (wa > 0 ? wa : 0) + (wb > 0 ? wb : 0);
      neg += (wa < 0 ? -wa : 0) + (wb < 0 ? -wb : 0);
    }
    if (pos * xbound > 32767 || neg * xbound > 32768) return false;
  }
  return true;
}

/* The largest activation byte q's vpmaddubsw dots meet: the type's where fc_qp_pairs_exact holds, 127 for the
 * dual kernels' narrow bytes; 0 where they never run vpmaddubsw. */
static int activation_bound(const FcQuantProduct *q) {
  if (!q->w8) return 0;
  if (fc_qp_pairs_exact(q)) return q->xmax;
  return fc_qp_narrow_at_run_time(q) ? 127 : 0;
}

/* Chunk h of channels [m0, m1) pairs every quad a with a ^ d, for all those channels. */
static bool chunk_pairs_at(const FcQuantProduct *q, int64_t m0, int64_t m1, int64_t h, int d, int xbound) {
  for (int a = 0; a < 16; a++)
    if (!(a & d))
      for (int64_t m = m0; m < m1; m++)
        if (!quads_pair(q, m, 16 * h + a, 16 * h + (a ^ d), xbound)) return false;
  return true;
}

/* the patterns' distances; each of a pattern's 4 iterations takes two pairs, its quads relative to the
 * iteration's first quad (xor_step quads after the one before) */
static const int xor_dist[FC_QUAD_XOR_PATTERNS] = {1, 2, 8};
static const int xor_step[FC_QUAD_XOR_PATTERNS] = {4, 4, 2};
static const int xor_pairs[FC_QUAD_XOR_PATTERNS][2][2] = {{{0, 1}, {2, 3}}, {{0, 2}, {1, 3}}, {{0, 8}, {1, 9}}};

int64_t fc_quad_xor_chunks(int64_t K) { return K / 64; }

uint8_t *fc_quad_xor_pairs_plan(const FcQuantProduct *q, int64_t G, int64_t Mg, int64_t K, int64_t *bytes) {
  int xbound = activation_bound(q);
  int64_t units = (Mg + 15) / 16, chunks = fc_quad_xor_chunks(K), paired = 0;
  *bytes = 0;
  if (!xbound || !chunks) return NULL;
  uint8_t *codes = calloc((size_t)(G * units * chunks), 1);
  if (!codes) fc_die(__FILE__, __LINE__, "out of memory");
  for (int64_t g = 0; g < G; g++)
    for (int64_t u = 0; u < units; u++) {
      int64_t m0 = g * Mg + 16 * u, m1 = m0 + 16 < (g + 1) * Mg ? m0 + 16 : (g + 1) * Mg;
      uint8_t *row = codes + (g * units + u) * chunks;
      for (int64_t h = 0; h < chunks; h++)
        for (int p = 0; p < FC_QUAD_XOR_PATTERNS && !row[h]; p++)
          if (chunk_pairs_at(q, m0, m1, h, xor_dist[p], xbound)) {
            row[h] = (uint8_t)(p + 1);
            paired++;
          }
    }
  if (!paired) {
    free(codes);
    return NULL;
  }
  *bytes = G * units * chunks;
  return codes;
}

void fc_quad_xor_chunk(FcKernel *k, LLVMValueRef code, LLVMValueRef h, FcQuadXorStep step, void *ctx) {
  LLVMValueRef q0 = fc_cg_imulc(k, h, 16);
  FcLoop li;
  for (int p = 0; p <= FC_QUAD_XOR_PATTERNS; p++) {
    LLVMBasicBlockRef in = fc_cg_if_begin(k, LLVMBuildICmp(k->b, LLVMIntEQ, code, fc_cg_const_i64(k, p), ""));
    if (p == 0) { /* the chunk's quads one by one, two an iteration */
      LLVMValueRef i = fc_cg_loop_begin(k, &li, fc_cg_const_i64(k, 0), fc_cg_const_i64(k, 8), 1, "quads");
      LLVMValueRef at = fc_cg_iadd(k, q0, fc_cg_imulc(k, i, 2));
      for (int j = 0; j < 2; j++) step(k, ctx, at, &j, 1);
    } else {
      LLVMValueRef i = fc_cg_loop_begin(k, &li, fc_cg_const_i64(k, 0), fc_cg_const_i64(k, 4), 1, "pairs");
      LLVMValueRef at = fc_cg_iadd(k, q0, fc_cg_imulc(k, i, xor_step[p - 1]));
      for (int j = 0; j < 2; j++) step(k, ctx, at, xor_pairs[p - 1][j], 2);
    }
    fc_cg_loop_end(k, &li);
    fc_cg_if_end(k, in);
  }
}
