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
 * which quads may pair is decided here, at compile time, for the 16 channels of a unit (the channel tiles of
 * the kernels lie inside one), within each chunk of 16 quads (the chunked Col's unit of layout, so the dual
 * kernels' mixed chunks keep their own dots). The pixel kernel (a channel's weights broadcast, pixels in the
 * lanes) reads a table of pairs: a greedy matching that takes the quad with the fewest partners
 * first, which pairs all of a chunk's quads in real networks' wide layers (MobileNetV2's 7-bit QDQ model:
 * nearly every quad of its 1×1 convs of K >= 64; a quarter to nine tenths at K = 16..32).
 *
 * Where three quarters of the quads pair or more, the table follows the packed weights in their constant,
 * the same bytes for every CPU variant of an artefact (the VNNI and AMX ones ignore it; the decision depends
 * on the weights and the activations' type alone): per (group, unit, chunk) entry e, 8 bytes of quad indices
 * within the chunk, two a byte (low nibble first), the pairs first (pair j: byte j), then the single quads;
 * then one byte per entry, np. fc_quad_pairs_chunk emits a chunk's k loop from it.
 *
 * The kernels with the channels in the lanes (the few-pixel conv, the blocked 1x1 conv) broadcast each
 * pixel's quad from an address the k loop computes; there the table's per-pair order costs about what the
 * pairs save. They read fixed patterns instead (fc_quad_xor_pairs_plan): a full chunk of a unit pairs every
 * quad a with a ^ d for one d of 1, 2, 8 (the first that holds for all its pairs and channels), or runs its
 * quads one at a time; one byte per (group, unit, chunk), after the packing like the table, and
 * fc_quad_xor_chunk emits the chunk's loops with every address a constant of an iteration. The three
 * patterns cover nearly every chunk of real networks' wide layers (ResNet-18's 3×3 convs, MobileNetV2's
 * projections) and some of the expansions' (a fourth to a half of MobileNetV2's deepest).
 */
#include <stdlib.h>
#include <string.h>

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

/* One entry: the chunk's n quads (from q0) for channels [m0, m1): the order and the pair count. */
static int plan_chunk(const FcQuantProduct *q, int64_t m0, int64_t m1, int64_t q0, int n, int xbound,
                      uint8_t *order) {
  uint16_t ok[16] = {0}; /* ok[i] bit j: quads i and j pair for every channel */
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      bool all = true;
      for (int64_t m = m0; m < m1 && all; m++) all = quads_pair(q, m, q0 + i, q0 + j, xbound);
      if (all) ok[i] |= (uint16_t)(1u << j), ok[j] |= (uint16_t)(1u << i);
    }
  uint16_t left = (uint16_t)((1u << n) - 1);
  int np = 0;
  for (;;) {
    /* the unpaired quad with the fewest unpaired partners, with its partner of fewest partners */
    int best = -1, best_deg = 17;
    for (int i = 0; i < n; i++) {
      int deg = __builtin_popcount(ok[i] & left);
      if ((left >> i & 1) && deg > 0 && deg < best_deg) best = i, best_deg = deg;
    }
    if (best < 0) break;
    int mate = -1, mate_deg = 17;
    for (int j = 0; j < n; j++) {
      int deg = __builtin_popcount(ok[j] & left);
      if ((ok[best] & left) >> j & 1 && deg < mate_deg) mate = j, mate_deg = deg;
    }
    order[2 * np] = (uint8_t)best;
    order[2 * np + 1] = (uint8_t)mate;
    np++;
    left &= (uint16_t) ~((1u << best) | (1u << mate));
  }
  int at = 2 * np;
  for (int i = 0; i < n; i++)
    if (left >> i & 1) order[at++] = (uint8_t)i;
  return np;
}

/* The table's shape for conv c: units of 16 channels a group, k quads, chunks of 16 quads; and the quads of
 * chunk h. */
static void table_shape(const FcConv2 *c, int64_t *units, int64_t *KQ, int64_t *chunks) {
  *units = (c->Mg + 15) / 16;
  *KQ = (c->K + 3) / 4;
  *chunks = (*KQ + 15) / 16;
}
static int chunk_quads(int64_t KQ, int64_t h) { return (int)(KQ - 16 * h < 16 ? KQ - 16 * h : 16); }

/* The largest activation byte q's vpmaddubsw dots meet: the type's where fc_qp_pairs_exact holds, 127 for the
 * dual kernels' narrow bytes; 0 where they never run vpmaddubsw. */
static int activation_bound(const FcQuantProduct *q) {
  if (!q->w8) return 0;
  if (fc_qp_pairs_exact(q)) return q->xmax;
  return fc_qp_narrow_at_run_time(q) ? 127 : 0;
}

uint8_t *fc_quad_pairs_plan(const FcQuantProduct *q, const FcConv2 *c, int64_t *bytes) {
  int xbound = activation_bound(q);
  if (!xbound) return NULL;
  int64_t units, KQ, chunks;
  table_shape(c, &units, &KQ, &chunks);
  int64_t entries = c->G * units * chunks, paired = 0;
  *bytes = entries * (FC_QUAD_PAIRS_ENTRY + 1);
  uint8_t *table = calloc((size_t)*bytes, 1);
  if (!table) fc_die(__FILE__, __LINE__, "out of memory");
  for (int64_t g = 0; g < c->G; g++)
    for (int64_t u = 0; u < units; u++)
      for (int64_t h = 0; h < chunks; h++) {
        int64_t e = (g * units + u) * chunks + h, m0 = g * c->Mg + u * 16;
        int64_t m1 = m0 + 16 < (g + 1) * c->Mg ? m0 + 16 : (g + 1) * c->Mg;
        int n = chunk_quads(KQ, h);
        uint8_t order[16], *enc = table + e * FC_QUAD_PAIRS_ENTRY;
        int np = plan_chunk(q, m0, m1, 16 * h, n, xbound, order);
        for (int i = 0; i < n; i++) /* two quad indices a byte: the pairs', then the singles' */
          enc[i / 2] |= (uint8_t)(order[i] << (4 * (i % 2)));
        table[entries * FC_QUAD_PAIRS_ENTRY + e] = (uint8_t)np;
        paired += 2 * np;
      }
  /* the table's loops cost about what the pairs save where a third of the quads stay single (MobileNetV2's
   * K = 24: 4 of 6 paired, 10% slower; K = 32, 5 of 6 or more: 6-8% faster) */
  if (4 * paired < 3 * c->G * units * KQ) {
    free(table);
    return NULL;
  }
  return table;
}

FcQuadPairs fc_quad_pairs_use(FcKernel *k, const FcConv2 *c, const uint8_t *table, LLVMValueRef wp, int64_t at,
                              int64_t col_stride, int64_t w_stride) {
  int64_t units, KQ, chunks;
  table_shape(c, &units, &KQ, &chunks);
  FcQuadPairs p = {NULL, NULL, c->G * units * chunks, chunks, false};
  for (int64_t e = 0; e < p.entries; e++) p.singles |= 2 * table[p.entries * FC_QUAD_PAIRS_ENTRY + e] < chunk_quads(KQ, e % chunks);
  p.table = LLVMBuildGEP2(k->b, LLVMInt8TypeInContext(k->ctx), wp, (LLVMValueRef[]){fc_cg_const_i64(k, at)}, 1, "pairs");
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMValueRef offs[32];
  for (int q = 0; q < 16; q++) {
    offs[q] = LLVMConstInt(i32, (unsigned long long)(q * col_stride), 1);
    offs[16 + q] = LLVMConstInt(i32, (unsigned long long)(q * w_stride), 1);
  }
  p.offsets = fc_cg_const_table(k, i32, offs, 32, "pair_offsets");
  return p;
}

/* Quad q's (an i64 index in its chunk) Col and weight offsets, from the offset table: loads, which keep the
 * integer multiply port free for the dots. */
static void quad_offsets(FcKernel *k, const FcQuadPairs *p, LLVMValueRef q, LLVMValueRef *coff, LLVMValueRef *woff) {
  LLVMTypeRef i64 = LLVMInt64TypeInContext(k->ctx);
  *coff = LLVMBuildSExt(k->b, fc_cg_load(k, FC_DT_I32, p->offsets, q), i64, "");
  *woff = LLVMBuildSExt(k->b, fc_cg_load(k, FC_DT_I32, p->offsets, fc_cg_iadd(k, q, fc_cg_const_i64(k, 16))), i64, "");
}

/* Byte at of the entry at order (an i64), zero-extended. */
static LLVMValueRef entry_byte(FcKernel *k, LLVMValueRef order, LLVMValueRef at) {
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  return LLVMBuildZExt(k->b, LLVMBuildLoad2(k->b, i8, LLVMBuildGEP2(k->b, i8, order, &at, 1, ""), ""),
                       LLVMInt64TypeInContext(k->ctx), "");
}

void fc_quad_pairs_chunk(FcKernel *k, const FcQuadPairs *p, LLVMValueRef unit, LLVMValueRef h, LLVMValueRef n,
                         FcQuadStep step, void *ctx) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef e = fc_cg_iadd(k, fc_cg_imulc(k, unit, p->chunks), h);
  LLVMValueRef order = LLVMBuildGEP2(b, i8, p->table, (LLVMValueRef[]){fc_cg_imulc(k, e, FC_QUAD_PAIRS_ENTRY)}, 1, "");
  LLVMValueRef at = fc_cg_iadd(k, fc_cg_const_i64(k, p->entries * FC_QUAD_PAIRS_ENTRY), e);
  LLVMValueRef np = entry_byte(k, p->table, at);
  /* pair j: byte j, its low nibble and its high one */
  FcLoop lp, ls;
  LLVMValueRef j = fc_cg_loop_begin(k, &lp, fc_cg_const_i64(k, 0), np, 1, "qpair");
  LLVMValueRef byte = entry_byte(k, order, j), coff[2], woff[2];
  quad_offsets(k, p, LLVMBuildAnd(b, byte, fc_cg_const_i64(k, 15), ""), &coff[0], &woff[0]);
  quad_offsets(k, p, LLVMBuildLShr(b, byte, fc_cg_const_i64(k, 4), ""), &coff[1], &woff[1]);
  step(k, ctx, coff, woff, 2);
  fc_cg_loop_end(k, &lp);
  if (!p->singles) return; /* no code for single quads where the table has none */
  /* single i (from 2·np): nibble i % 2 of byte i / 2 */
  LLVMValueRef i = fc_cg_loop_begin(k, &ls, fc_cg_imulc(k, np, 2), n, 1, "qsingle");
  byte = entry_byte(k, order, LLVMBuildLShr(b, i, fc_cg_const_i64(k, 1), ""));
  LLVMValueRef sh = LLVMBuildShl(b, LLVMBuildAnd(b, i, fc_cg_const_i64(k, 1), ""), fc_cg_const_i64(k, 2), "");
  quad_offsets(k, p, LLVMBuildAnd(b, LLVMBuildLShr(b, byte, sh, ""), fc_cg_const_i64(k, 15), ""), &coff[0], &woff[0]);
  step(k, ctx, coff, woff, 1);
  fc_cg_loop_end(k, &ls);
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

uint8_t *fc_quad_xor_pairs_plan(const FcQuantProduct *q, int64_t G, int64_t Mg, int64_t K, int64_t *bytes) {
  int xbound = activation_bound(q);
  int64_t units = (Mg + 15) / 16, chunks = K / 64, paired = 0;
  if (!xbound || !chunks) return NULL;
  *bytes = G * units * chunks;
  uint8_t *codes = calloc((size_t)*bytes, 1);
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
