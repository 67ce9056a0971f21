/* target.c — the target description (target.h): the table of target kinds, the CPU's vector levels, and
 * the LLVM target machine a description is resolved through.
 *
 * A target kind is a row of target_kinds (FcTargetKind: which triples it takes, its default CPU, and how
 * it fills in a description); today there is one, the CPU, which covers x86-64 and AArch64 triples.
 * NVPTX becomes a second row without touching passes or kernels. Within the CPU, the description comes
 * from the first row of cpu_levels whose features the CPU has: vector widths, registers, the GEMM's
 * tiles and blocks, the layout pass's block and costs. The features are LLVM's (target_llvm.cpp reads
 * what the CPU name implies), so no list of CPU names is kept here.
 *
 * Target machines: the triple defaults to the host's; the CPU defaults to the portable "x86-64-v3" for
 * x86-64 (AVX2 + FMA, what every x86 server of the last decade runs) and "generic" for AArch64; "native"
 * asks LLVM for the host's CPU name and feature string, which only makes sense for the host's own
 * architecture. LLVM accepts an unknown CPU or feature name with a warning on stderr and silently
 * generates generic code; a misspelt --cpu must be an error instead, so the warning is captured while the
 * target machine is created and turned into a one-line FC_ERR_INPUT. Objects are position independent,
 * because Debian's toolchain links executables as PIE.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/Target.h>

#include "codegen.h"

/* ---- the table of target kinds, and the CPU's vector levels ---------------------------------------------- */

static bool has_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }
static bool triple_is_x86_64(const char *t) { return has_prefix(t, "x86_64") || has_prefix(t, "amd64"); }
static bool triple_is_aarch64(const char *t) { return has_prefix(t, "aarch64") || has_prefix(t, "arm64"); }

/* Register tiles of the GEMM microkernel (cg_gemm.h) that fit 16 and 32 vector registers. Tiles with a
 * power-of-two panel width come first among the alternatives: callers that gather B lanes (im2col) take
 * only those, since gathers and masks of 24 lanes split badly. */
static const FcGemmTile tiles16[] = {{6, 2}, {5, 2}, {4, 2}, {4, 3}};
static const FcGemmTile tiles32[] = {{14, 2}, {12, 2}, {8, 2}, {8, 3}, {6, 4}};
#define TILES(t) t, (int)(sizeof t / sizeof t[0])

/* The layout pass's model on AVX2 (8-lane blocks): GFLOP/s per core of the NCHW and the blocked kernels
 * per class of conv, and a layout change's bandwidth (bytes per µs) after the fixed cost (µs) of starting
 * one more kernel on the thread pool; measured model parameters (see bench/RESULTS.md for the machine).
 * The blocked kernels gain most on depthwise convs (stride-2 ones and small images the most) and on a first
 * conv over fewer than 8 channels (direct tiles against an im2col GEMM with K = 27 or 147); dense 1×1
 * stride 1 has equal speeds: no gain is counted for it. A grouped conv in NCHW runs the generic loop nest
 * (kernel_nn.c); its blocked speed is a dense conv's over the channels it reads, zeros included (the
 * layout pass scales it by that waste). */
static const FcLayoutCosts layout_avx2 = {
    .block = 8,
    .nchw_gflops = {[FC_CONV_DEPTHWISE] = 40, [FC_CONV_FIRST] = 55, [FC_CONV_DENSE] = 70, [FC_CONV_POINTWISE] = 93,
                    [FC_CONV_GROUPED] = 8},
    .blocked_gflops = {[FC_CONV_DEPTHWISE] = 90, [FC_CONV_FIRST] = 90, [FC_CONV_DENSE] = 95, [FC_CONV_POINTWISE] = 93,
                       [FC_CONV_GROUPED] = 90},
    .edge_bytes_per_us = 10000,
    .edge_fixed_us = 2,
};
/* AVX-512: 16-channel blocks, one 16-lane vector. The speeds are AVX2's scaled by the doubled lanes for
 * both kernel families (an assumption, not a measurement: the ratios, which decide, stay AVX2's); the
 * layout change costs the same. */
static const FcLayoutCosts layout_avx512 = {
    .block = 16,
    .nchw_gflops = {[FC_CONV_DEPTHWISE] = 80, [FC_CONV_FIRST] = 110, [FC_CONV_DENSE] = 140, [FC_CONV_POINTWISE] = 186,
                    [FC_CONV_GROUPED] = 16},
    .blocked_gflops = {[FC_CONV_DEPTHWISE] = 180, [FC_CONV_FIRST] = 180, [FC_CONV_DENSE] = 190,
                       [FC_CONV_POINTWISE] = 186, [FC_CONV_GROUPED] = 180},
    .edge_bytes_per_us = 10000,
    .edge_fixed_us = 2,
};
/* AVX-512's second block, 8 channels (one 256-bit vector), for the regions whose channel counts 16 does not
 * divide (RegNetY's 104, 208 and 440; EfficientNet's 24 and 40), which 16-channel blocks would leave in NCHW:
 * its blocked kernels run at AVX2's speeds (8 lanes, twice the registers unused), the NCHW ones at AVX-512's. */
static const FcLayoutCosts layout_avx512_narrow = {
    .block = 8,
    .nchw_gflops = {[FC_CONV_DEPTHWISE] = 80, [FC_CONV_FIRST] = 110, [FC_CONV_DENSE] = 140, [FC_CONV_POINTWISE] = 186,
                    [FC_CONV_GROUPED] = 16},
    .blocked_gflops = {[FC_CONV_DEPTHWISE] = 90, [FC_CONV_FIRST] = 90, [FC_CONV_DENSE] = 95, [FC_CONV_POINTWISE] = 93,
                       [FC_CONV_GROUPED] = 90},
    .edge_bytes_per_us = 10000,
    .edge_fixed_us = 2,
};

/* The SBP cost model (passes/sbp_cost.c) on one core of the machine of bench/RESULTS.md (Xeon, AVX-512), as
 * bench/sbp_calibrate.py measured it on the idle machine (2026-12-03 19:22, load average 0.27 at the start; it
 * says how each is measured): the GEMM's speed at one thread from the slope of a [512, K] x [K, 256] product in
 * K (169 GFLOP/s), a model's constant weights streamed from beyond L2 once per run (85 GB/s, from a chain of two
 * 1024 x 1024 products at 8..64 rows, extrapolated to none), a run-time right operand packed (7.4 GB/s), a
 * transcendental element (0.68 ns: flowc's 0.5-ulp exp inside Softmax), an element-wise op's bytes per second on
 * cache-resident tensors (113 GB/s; 29 out of cache, which a split weight's per-run slice copy and packing
 * see), a kernel's fixed cost inline (0.02 us), and the link from bench/mpi_link.c at 2 ranks through libflowrt,
 * as programs run it (the shared segment of runtime/coll_shm.c for all_reduce, MPI's single-copy transfers for
 * all_gather and all_to_all; the geometric mean of the three at 256 KiB: 11.3 GB/s; 0.15 us a step, from a 16 B
 * all_reduce). Crowded ranks (more than the cores) lose 2% beyond their share (crowd_extra: 4 copies of the MLP
 * and of the transformer on the 2 cores against one alone, wall time) and each collective among them waits
 * 3 us more (crowd_sync_us: 4 ranks that compute 60 us to 1 ms between all_reduces, the median; runs on a busy
 * machine gave 0 to 20). AVX2: the GEMM at half the lanes, the same memory, link and element-wise loops
 * (256-bit on AVX-512 too); narrower: half of everything but the link. The cap: 16 GiB a rank.
 */
static const FcSbpCosts sbp_avx512 = {
    .gemm_gflops = 169, .weight_gbps = 85, .pack_gbps = 7.4, .transcendental_ns = 0.68, .mem_gbps = 113,
    .mem_cold_gbps = 29, .op_us = 0.02, .link_latency_us = 0.15, .link_gbps = 11.3, .crowd_extra = 1.02,
    .crowd_sync_us = 3, .mem_cap_bytes = (int64_t)16 << 30,
};
static const FcSbpCosts sbp_avx2 = {
    .gemm_gflops = 85, .weight_gbps = 85, .pack_gbps = 7.4, .transcendental_ns = 0.68, .mem_gbps = 113,
    .mem_cold_gbps = 29, .op_us = 0.02, .link_latency_us = 0.15, .link_gbps = 11.3, .crowd_extra = 1.02,
    .crowd_sync_us = 3, .mem_cap_bytes = (int64_t)16 << 30,
};
static const FcSbpCosts sbp_narrow = {
    .gemm_gflops = 42, .weight_gbps = 43, .pack_gbps = 3.7, .transcendental_ns = 1.4, .mem_gbps = 56,
    .mem_cold_gbps = 15, .op_us = 0.02, .link_latency_us = 0.15, .link_gbps = 11.3, .crowd_extra = 1.02,
    .crowd_sync_us = 3, .mem_cap_bytes = (int64_t)16 << 30,
};

/* A CPU vector level: the first row whose arch matches and whose features the target has all of wins.
 * Element-wise loops use 256-bit vectors on AVX-512 too (LLVM prefers them there: 512-bit code lowers the
 * clock), except a quantised model's glue (fc_target_lanes_8bit_glue); the GEMM and the blocked kernels use
 * the full registers. */
typedef struct CpuLevel {
  const char *name;
  FcArch arch;
  FcFeatureSet needs;
  int vector_bytes, max_vector_bytes, regs;
  FcGemmTable gemm; /* vl, tiles, n_tiles, kc, mc_panels, nc_panels */
  const FcLayoutCosts *layout;
  const FcLayoutCosts *layout_narrow; /* a second, narrower block, or NULL */
  const FcSbpCosts *sbp;
} CpuLevel;

static const CpuLevel cpu_levels[] = {
    {"avx512", FC_ARCH_X86_64, FC_FEAT_BIT(FC_FEAT_AVX512F) | FC_FEAT_BIT(FC_FEAT_AVX2), 32, 64, 32,
     {16, TILES(tiles32), 256, 8, 4}, &layout_avx512, &layout_avx512_narrow, &sbp_avx512},
    {"avx2", FC_ARCH_X86_64, FC_FEAT_BIT(FC_FEAT_AVX2), 32, 32, 16, {8, TILES(tiles16), 256, 20, 8}, &layout_avx2, NULL, &sbp_avx2},
    {"sse", FC_ARCH_X86_64, 0, 16, 16, 16, {4, TILES(tiles16), 256, 20, 8}, &layout_avx2, NULL, &sbp_narrow},
    /* NEON has 32 registers; the GEMM keeps the 16-register tiles it was written with. */
    {"neon", FC_ARCH_AARCH64, 0, 16, 16, 32, {4, TILES(tiles16), 256, 20, 8}, &layout_avx2, NULL, &sbp_narrow},
};

static FcStatus cpu_describe(FcTarget *t, FcDiag *diag) {
  for (size_t i = 0; i < sizeof cpu_levels / sizeof cpu_levels[0]; i++) {
    const CpuLevel *l = &cpu_levels[i];
    if (l->arch != t->arch || (t->features & l->needs) != l->needs) continue;
    t->level = l->name;
    t->vector_bytes = l->vector_bytes;
    t->max_vector_bytes = l->max_vector_bytes;
    t->vector_regs = l->regs;
    t->gemm = l->gemm;
    t->layout = *l->layout;
    t->layout_narrow = l->layout_narrow ? *l->layout_narrow : (FcLayoutCosts){.block = 0};
    t->sbp = *l->sbp;
    return FC_OK;
  }
  return fc_error(diag, FC_ERR_INTERNAL, "no vector level for target '%s'", t->triple);
}

static const char *cpu_default(const char *triple) { return triple_is_x86_64(triple) ? "x86-64-v3" : "generic"; }

/* x86-64 artefacts carry an AVX-512 variant beside the portable AVX2 one: the blocked kernels and the GEMM
 * use twice the lanes there, so a model built without --cpu is not held to half the machine it runs on. */
static const char *cpu_default_artefact(const char *triple) {
  return triple_is_x86_64(triple) ? "x86-64-v3,x86-64-v4" : NULL;
}

/* Quantised models add the integer dot products' generations: AVX512-VNNI (vpdpbusd, cascadelake), AMX
 * tiles (sapphirerapids: tdpbusd/tdpbsud, several times VNNI's rate: cg_amx.h), and AMD's AVX-512 (znver4,
 * which Zen 5 runs too: the same VNNI, but its 3×3 convs take the 16-bit Winograd kernel, fc_target_i8_winograd;
 * its sse4a keeps it from Intel CPUs, AMX keeps sapphirerapids from AMD's). */
static const char *cpu_default_int8_artefact(const char *triple) {
  return triple_is_x86_64(triple) ? "x86-64-v3,x86-64-v4,cascadelake,znver4,sapphirerapids" : NULL;
}

/* The architecture of a triple this kind generates for; false for others. */
static bool cpu_arch(const char *triple, FcArch *arch) {
  if (triple_is_x86_64(triple)) *arch = FC_ARCH_X86_64;
  else if (triple_is_aarch64(triple)) *arch = FC_ARCH_AARCH64;
  else return false;
  return true;
}

/* ---- NVIDIA GPUs: PTX through LLVM's NVPTX backend ---------------------------------------------------------- */

static bool nvptx_arch(const char *triple, FcArch *arch) {
  if (strncmp(triple, "nvptx64", 7) != 0) return false;
  *arch = FC_ARCH_NVPTX64;
  return true;
}

static const char *nvptx_default(const char *triple) {
  (void)triple;
  return "sm_80";
}

/* Per compute capability: what the kernels may use and what the cost models assume (an A100 for sm_80, an
 * H100 for sm_90: their f32 FMA peaks and memory bandwidths, from the vendors' data sheets). */
typedef struct GpuRow {
  int sm;
  double gflops, mem_gbs;
} GpuRow;
static const GpuRow gpu_rows[] = {{80, 19500, 1555}, {86, 35600, 936}, {89, 82600, 1008}, {90, 66900, 3350}};

static FcStatus nvptx_describe(FcTarget *t, FcDiag *diag) {
  int sm = 0;
  if (sscanf(t->cpu, "sm_%d", &sm) != 1 || sm < 80)
    return fc_error(diag, FC_ERR_INPUT, "unsupported GPU '%s' (flowc generates code for sm_80 and newer: sm_80, sm_90)",
                    t->cpu);
  const GpuRow *row = &gpu_rows[0];
  for (size_t i = 0; i < sizeof gpu_rows / sizeof gpu_rows[0]; i++)
    if (gpu_rows[i].sm <= sm) row = &gpu_rows[i];
  t->simt = true;
  t->level = "simt";
  /* One thread computes scalars; vector types would only be split again by the NVPTX backend. */
  t->vector_bytes = t->max_vector_bytes = 4;
  t->vector_regs = 0;
  t->gemm = (FcGemmTable){.vl = 1, .tiles = NULL, .n_tiles = 0, .kc = 0, .mc_panels = 0, .nc_panels = 0};
  t->layout = (FcLayoutCosts){.block = 0};
  t->layout_narrow = (FcLayoutCosts){.block = 0};
  t->shared_constants = false;
  t->gpu = (FcGpuDesc){.sm = sm, .warp = 32, .max_block_threads = 1024, .max_static_shared = 48 * 1024,
                       .mma_f16 = sm >= 80, .gflops = row->gflops, .mem_gbs = row->mem_gbs};
  return FC_OK;
}

static const char *const precision_names[] = {"fp32", "tf32", "fp16", "bf16"};

bool fc_gpu_precision_parse(const char *s, FcGpuPrecision *p) {
  for (int i = 0; i < 4; i++)
    if (strcmp(s, precision_names[i]) == 0) {
      *p = (FcGpuPrecision)i;
      return true;
    }
  return false;
}

const char *fc_gpu_precision_name(FcGpuPrecision p) { return p >= 0 && p < 4 ? precision_names[p] : "?"; }

static const FcTargetKind target_kinds[] = {
    {.name = "cpu", .arch_of = cpu_arch, .default_cpu = cpu_default, .default_artefact_cpus = cpu_default_artefact,
     .default_int8_artefact_cpus = cpu_default_int8_artefact, .describe = cpu_describe},
    {.name = "nvptx", .arch_of = nvptx_arch, .default_cpu = nvptx_default, .describe = nvptx_describe},
};

static const FcTargetKind *kind_for_triple(const char *triple, FcArch *arch) {
  for (size_t i = 0; i < sizeof target_kinds / sizeof target_kinds[0]; i++)
    if (target_kinds[i].arch_of(triple, arch)) return &target_kinds[i];
  return NULL;
}

static const char *default_cpus(const char *triple, bool int8) {
  char *host = LLVMGetDefaultTargetTriple();
  char *norm = LLVMNormalizeTargetTriple(triple ? triple : host);
  FcArch arch;
  const FcTargetKind *kind = kind_for_triple(norm, &arch);
  const char *cpus = NULL;
  if (kind && int8 && kind->default_int8_artefact_cpus) cpus = kind->default_int8_artefact_cpus(norm);
  if (kind && !cpus && kind->default_artefact_cpus) cpus = kind->default_artefact_cpus(norm);
  LLVMDisposeMessage(norm);
  LLVMDisposeMessage(host);
  return cpus;
}

const char *fc_target_default_artefact_cpus(const char *triple) { return default_cpus(triple, false); }
const char *fc_target_default_int8_artefact_cpus(const char *triple) { return default_cpus(triple, true); }

/* ---- questions to the description ----------------------------------------------------------------------- */

static const char *const feature_names[] = {
#define X(id, name) name,
    FC_TARGET_FEATURES(X)
#undef X
};

const char *fc_feature_name(FcFeature f) { return f >= 0 && f < FC_FEAT_COUNT ? feature_names[f] : "?"; }

bool fc_target_has(const FcTarget *t, FcFeature f) { return (t->features & FC_FEAT_BIT(f)) != 0; }

bool fc_target_converts_f16(const FcTarget *t) {
  return t->arch == FC_ARCH_AARCH64 || fc_target_has(t, FC_FEAT_F16C);
}

int fc_target_lanes(const FcTarget *t, FcDtype dt) {
  size_t elem = dt == FC_DT_F16 || dt == FC_DT_BF16 ? 4 : fc_dtype_size(dt); /* the compute type's size */
  int w = elem ? t->vector_bytes / (int)elem : 1;
  return w > 0 ? w : 1;
}

int fc_target_lanes_8bit_glue(const FcTarget *t, FcDtype dt) {
  size_t elem = dt == FC_DT_F16 || dt == FC_DT_BF16 ? 4 : fc_dtype_size(dt);
  int w = elem ? t->max_vector_bytes / (int)elem : 1;
  return w > 0 ? w : 1;
}

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

static void set_shape(const FcGemmTable *tab, const FcGemmTile *tile, FcGemmArch *g) {
  g->vl = tab->vl;
  g->mr = tile->mr;
  g->nr = tile->nv * tab->vl;
  g->kc = tab->kc;
  g->mc = (int64_t)g->mr * tab->mc_panels;
  g->nc = (int64_t)g->nr * tab->nc_panels;
}

void fc_target_gemm_arch(const FcTarget *t, FcGemmArch *g) { set_shape(&t->gemm, &t->gemm.tiles[0], g); }

void fc_target_gemm_arch_for_rows(const FcTarget *t, int64_t M, bool pow2_panels, FcGemmArch *g) {
  const FcGemmTable *tab = &t->gemm;
  int best = 0;
  int64_t best_pad = round_up(M, tab->tiles[0].mr) - M;
  if (best_pad * 10 > M)
    for (int i = 1; i < tab->n_tiles; i++) {
      int nv = tab->tiles[i].nv;
      if (pow2_panels && (nv & (nv - 1))) continue;
      int64_t pad = round_up(M, tab->tiles[i].mr) - M;
      if (pad < best_pad) best_pad = pad, best = i;
    }
  set_shape(tab, &tab->tiles[best], g);
}

/* AVX-512BW gives 512-bit byte and word arithmetic (32 registers: an 8 × 2 tile); AVX2 256-bit (16
 * registers: 4 × 2, leaving room for the B vectors, the broadcast and the widened operands). VNNI is
 * AVX512-VNNI at 512 bits or AVX-VNNI at 256 (x86-64-v4 has neither; icelake-server has the first,
 * alderlake the second). */
void fc_target_i8_gemm(const FcTarget *t, FcI8Gemm *g) {
  /* 128 KiB of im2col columns per task: well inside the 1-2 MiB L2 of current x86 cores (and half of an
   * older 256 KiB one), which every channel tile of the block reads again. */
  enum { COL_BYTES = 128 << 10 };
  *g = (FcI8Gemm){FC_I8DOT_NONE, 8, 4, 2, COL_BYTES};
  if (t->arch != FC_ARCH_X86_64) return;
  if (fc_target_has(t, FC_FEAT_AVX512BW)) {
    *g = (FcI8Gemm){fc_target_has(t, FC_FEAT_AVX512VNNI) ? FC_I8DOT_VNNI : FC_I8DOT_MADDUBS, 16, 8, 2, COL_BYTES};
  } else if (fc_target_has(t, FC_FEAT_AVX2)) {
    *g = (FcI8Gemm){fc_target_has(t, FC_FEAT_AVXVNNI) ? FC_I8DOT_VNNI : FC_I8DOT_MADDUBS, 8, 4, 2, COL_BYTES};
  } else {
    /* SSE2 only (x86-64 before AVX2): the kernels' 256-bit vectors are pairs of xmm registers and the dot
     * is pmaddwd on each half (fc_i8_dot): the exact WIDEN path, which needs nothing past SSE2 and issues
     * as many multiply-adds per instruction as pmaddubsw + pmaddwd would. Half the registers of AVX2 in
     * vectors of 8 lanes: a 2 x 2 tile. */
    *g = (FcI8Gemm){FC_I8DOT_WIDEN, 8, 2, 2, COL_BYTES};
  }
}

bool fc_target_i8_amx(const FcTarget *t) {
  return t->arch == FC_ARCH_X86_64 && fc_target_has(t, FC_FEAT_AMXTILE) && fc_target_has(t, FC_FEAT_AMXINT8);
}

bool fc_target_i8_amx_worth(const FcTarget *t, int64_t rows, int64_t k) {
  if (!fc_target_i8_amx(t) || rows < 16 || k < 64) return false;
  double padded = (double)((rows + 15) / 16 * 16) * (double)((k + 63) / 64 * 64);
  return padded <= 1.5 * (double)rows * (double)k;
}

int64_t fc_target_i8_amx_col_bytes(const FcTarget *t) {
  (void)t;
  return 4 << 20; /* twice a Sapphire Rapids core's L2: the tiles stream the block once per channel-tile pair */
}

int64_t fc_target_i8_amx_direct_col_bytes(const FcTarget *t) {
  (void)t;
  /* an eighth of a Sapphire Rapids core's L2: the stems' one-pass im2col (no per-row set-up to amortise)
   * gains from its Col staying in L2 for the tiles (ResNet-18's stem: 0.26 ms at 128-512 KiB, 0.29 at 1 MiB,
   * 0.33 at 4 MiB), and smaller blocks spread more evenly over the threads (10 blocks of 12 rows there) */
  return 256 << 10;
}

bool fc_layout_block_supported(int64_t b) { return b == 8 || b == FC_LAYOUT_MAX_BLOCK; }

bool fc_conv_shape_of(const FcOp *op, FcConvShape *s) {
  if (op->kind != FC_OP_CONV || op->n_operands < 2 || op->n_results != 1) return false;
  const FcType *x = &op->operands[0].value->type, *w = &op->operands[1].value->type, *y = &op->results[0].type;
  const int64_t *st, *d, *p;
  if (x->rank != 4 || w->rank != 4 || y->rank != 4 || fc_op_attr_ints(op, FC_ATTR_STRIDES, &st) != 2 ||
      fc_op_attr_ints(op, FC_ATTR_DILATIONS, &d) != 2 || fc_op_attr_ints(op, FC_ATTR_PADS, &p) != 4)
    return false;
  if (w->dtype != x->dtype || y->dtype != x->dtype) return false;
  *s = (FcConvShape){.dtype = x->dtype,
                     .N = x->dims[0], .C = x->dims[1], .H = x->dims[2], .W = x->dims[3],
                     .M = w->dims[0], .KH = w->dims[2], .KW = w->dims[3], .OH = y->dims[2], .OW = y->dims[3],
                     .group = fc_op_attr_int(op, FC_ATTR_GROUP, 1),
                     .stride = {st[0], st[1]}, .dilation = {d[0], d[1]}, .pads = {p[0], p[1], p[2], p[3]}};
  return true;
}

/* ---- target machines ---------------------------------------------------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_llvm_targets(void) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  LLVMInitializeAArch64TargetInfo();
  LLVMInitializeAArch64Target();
  LLVMInitializeAArch64TargetMC();
  LLVMInitializeAArch64AsmPrinter();
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}


/* Creates the target machine with LLVM's stderr diagnostics redirected into a temporary file, and
 * returns what LLVM printed (malloc'd, possibly empty; NULL when nothing could be captured). */
static LLVMTargetMachineRef create_tm_capturing(LLVMTargetRef target, const char *triple, const char *cpu,
                                                const char *features, LLVMCodeGenOptLevel level, char **printed) {
  *printed = NULL;
  FILE *tmp = tmpfile();
  int saved = tmp ? dup(2) : -1;
  fflush(stderr);
  bool captured = saved >= 0 && dup2(fileno(tmp), 2) >= 0;
  LLVMTargetMachineRef tm =
      LLVMCreateTargetMachine(target, triple, cpu, features, level, LLVMRelocPIC, LLVMCodeModelDefault);
  if (captured) {
    dup2(saved, 2);
    long n = fseek(tmp, 0, SEEK_END) == 0 ? ftell(tmp) : -1;
    if (n >= 0 && n < (1 << 20)) {
      char *buf = malloc((size_t)n + 1);
      if (buf) {
        rewind(tmp);
        size_t got = fread(buf, 1, (size_t)n, tmp);
        buf[got] = '\0';
        *printed = buf;
      }
    }
  }
  if (saved >= 0) close(saved);
  if (tmp) fclose(tmp);
  return tm;
}

/* The first line of what LLVM printed, for our message. */
static void first_line(const char *s, char *out, size_t cap) {
  size_t n = strcspn(s, "\r\n");
  if (n >= cap) n = cap - 1;
  memcpy(out, s, n);
  out[n] = '\0';
}

/* Reads the features flowc knows from LLVM's list of the enabled ones ("avx,avx2,fma,"). */
static FcFeatureSet parse_features(const char *list) {
  FcFeatureSet set = 0;
  for (const char *p = list; p && *p;) {
    size_t n = strcspn(p, ",");
    for (int f = 0; f < FC_FEAT_COUNT; f++)
      if (strlen(feature_names[f]) == n && memcmp(feature_names[f], p, n) == 0) set |= FC_FEAT_BIT(f);
    p += n + (p[n] == ',');
  }
  return set;
}

/* Creates the target machine for the options; *kind_out, *arch_out: the row for its triple. */
static FcStatus create_machine(const FcCodegenOptions *o, LLVMTargetMachineRef *out, const FcTargetKind **kind_out,
                               FcArch *arch_out, FcDiag *diag) {
  *out = NULL;
  pthread_once(&init_once, init_llvm_targets);
  char *host = LLVMGetDefaultTargetTriple();
  char *triple = LLVMNormalizeTargetTriple(o->triple ? o->triple : host);
  char *cpu_owned = NULL, *features_owned = NULL;
  FcStatus st = FC_OK;
  LLVMTargetRef target = NULL;
  char *err = NULL;
  FcArch host_arch;
  const FcTargetKind *kind = kind_for_triple(triple, arch_out);
  *kind_out = kind;
  if (!kind) {
    st = fc_error(diag, FC_ERR_INPUT, "unsupported target '%s' (flowc generates code for x86_64, aarch64 and nvptx64 triples)",
                  o->triple ? o->triple : triple);
    goto done;
  }
  if (LLVMGetTargetFromTriple(triple, &target, &err)) {
    st = fc_error(diag, FC_ERR_INPUT, "unsupported target '%s': %s", triple, err ? err : "unknown triple");
    goto done;
  }
  const char *cpu = o->cpu;
  const char *features = o->features ? o->features : "";
  if (cpu && strcmp(cpu, "native") == 0) {
    if (kind_for_triple(host, &host_arch) != kind || host_arch != *arch_out) {
      st = fc_error(diag, FC_ERR_INPUT, "--cpu native needs the host's architecture, but the target is '%s'", triple);
      goto done;
    }
    cpu_owned = LLVMGetHostCPUName();
    char *host_features = LLVMGetHostCPUFeatures();
    size_t n = strlen(host_features) + strlen(features) + 2;
    features_owned = malloc(n);
    if (!features_owned) fc_die(__FILE__, __LINE__, "out of memory");
    snprintf(features_owned, n, "%s%s%s", host_features, *features && *host_features ? "," : "", features);
    LLVMDisposeMessage(host_features);
    cpu = cpu_owned;
    features = features_owned;
  } else if (!cpu) {
    cpu = kind->default_cpu(triple);
  }
  int lvl = o->opt_level < 0 ? 0 : o->opt_level > 3 ? 3 : o->opt_level;
  static const LLVMCodeGenOptLevel levels[4] = {LLVMCodeGenLevelNone, LLVMCodeGenLevelLess, LLVMCodeGenLevelDefault,
                                                LLVMCodeGenLevelAggressive};
  char *printed = NULL;
  LLVMTargetMachineRef tm = create_tm_capturing(target, triple, cpu, features, levels[lvl], &printed);
  if (!tm) {
    st = fc_error(diag, FC_ERR_INPUT, "cannot create a target machine for '%s' (cpu '%s')", triple, cpu);
  } else if (printed && (strstr(printed, "not a recognized processor") || strstr(printed, "not a recognized feature"))) {
    char line[512];
    first_line(printed, line, sizeof line);
    st = strstr(printed, "not a recognized processor")
             ? fc_error(diag, FC_ERR_INPUT, "unknown %s '%s' for target '%s'", kind->arch_of == nvptx_arch ? "GPU" : "CPU",
                        cpu, triple)
             : fc_error(diag, FC_ERR_INPUT, "unknown CPU feature in '%s' for target '%s' (%s)", features, triple, line);
    LLVMDisposeTargetMachine(tm);
  } else {
    if (printed && *printed) fputs(printed, stderr); /* anything else LLVM said goes where it would have */
    *out = tm;
  }
  free(printed);
done:
  if (err) LLVMDisposeMessage(err);
  free(features_owned);
  if (cpu_owned) LLVMDisposeMessage(cpu_owned);
  LLVMDisposeMessage(triple);
  LLVMDisposeMessage(host);
  return st;
}

FcStatus fc_target_resolve(const FcCodegenOptions *o, FcTarget **out, FcDiag *diag) {
  *out = NULL;
  LLVMTargetMachineRef tm;
  const FcTargetKind *kind;
  FcArch arch;
  FcStatus st = create_machine(o, &tm, &kind, &arch, diag);
  if (st != FC_OK) return st;
  FcTarget *t = calloc(1, sizeof *t);
  char *triple = LLVMGetTargetMachineTriple(tm), *cpu = LLVMGetTargetMachineCPU(tm);
  char *enabled = fc_llvm_tm_features(tm);
  size_t nt = strlen(triple) + 1, nc = strlen(cpu) + 1;
  char *owned = malloc(nt + nc);
  if (!t || !owned || !enabled) fc_die(__FILE__, __LINE__, "out of memory");
  memcpy(owned, triple, nt);
  memcpy(owned + nt, cpu, nc);
  t->kind = kind;
  t->arch = arch;
  t->triple = owned;
  t->cpu = owned + nt;
  t->owned = owned;
  t->features = parse_features(enabled);
  t->llvm_tm = tm;
  t->shared_constants = !strstr(t->triple, "apple") && !strstr(t->triple, "darwin");
  LLVMDisposeMessage(triple);
  LLVMDisposeMessage(cpu);
  free(enabled);
  st = kind->describe(t, diag);
  if (st != FC_OK) {
    fc_target_free(t);
    return st;
  }
  *out = t;
  return FC_OK;
}

void fc_target_free(FcTarget *t) {
  if (!t) return;
  if (t->llvm_tm) LLVMDisposeTargetMachine((LLVMTargetMachineRef)t->llvm_tm);
  free(t->owned);
  free(t);
}

LLVMTargetMachineRef fc_target_tm(const FcTarget *t) { return (LLVMTargetMachineRef)t->llvm_tm; }

/* The conv's tile keeps 4 output channels at every vector width (512-bit: 4 × 4 vectors of pixels, as fast
 * as 8 × 2 on ResNet-18 and MobileNetV2; the exact vpmaddwd path halves it). The weights' packing does not
 * depend on the tile (kernel_conv_i8.c: 16-channel tiles that a tile of any divisor of 16 reads), so every
 * variant of one artefact packs them into the same bytes, which the artefact then stores once (cg_module.c). */
void fc_target_i8_conv(const FcTarget *t, FcI8Gemm *g) {
  fc_target_i8_gemm(t, g);
  if (g->lanes == 16) {
    g->mr = 4;
    g->nv = 4;
  }
}

/* A k step of an mr × nv tile issues mr·nv dots on the two vector multiply ports (vpdpbusd: one uop each;
 * vpmaddubsw + vpmaddwd: two; vpmaddwd on pre-widened weights: one, its add on a third port) and mr + nv
 * loads (broadcasts and weight vectors) on two load ports; a step takes the longer of the two. Registers:
 * the accumulators, the nv weight vectors, one broadcast and the dot's temporaries (vpmaddubsw's product and
 * its vector of ones; vpmaddwd's product). Ties go to the larger tile (fewer loads a dot). */
void fc_target_i8_conv_few_pixels_tile(const FcTarget *t, FcI8Dot dot, int64_t P, int64_t Mg, FcI8Gemm *g) {
  fc_target_i8_conv(t, g);
  g->dot = dot;
  int regs = g->lanes == 16 ? 32 : fc_target_has(t, FC_FEAT_AVX2) ? 16 : 8; /* SSE2: 16 xmm, 8 vectors */
  int spare = dot == FC_I8DOT_VNNI ? 1 : dot == FC_I8DOT_MADDUBS ? 3 : 2;
  double dot_cycles = dot == FC_I8DOT_MADDUBS ? 1.0 : 0.5, best = 0;
  int best_mr = 1, best_nv = 1;
  for (int nv = 1; nv <= (g->lanes == 16 ? 4 : 2); nv++)
    for (int mr = 1; mr <= 16 && mr * nv + nv + spare <= regs; mr++) {
      double step = (double)(mr * nv) * dot_cycles, loads = (mr + nv) / 2.0;
      if (loads > step) step = loads;
      double cost = (double)((P + mr - 1) / mr) * (double)((Mg + nv * g->lanes - 1) / (nv * g->lanes)) * step;
      if (best == 0 || cost < best || (cost == best && mr * nv > best_mr * best_nv)) best = cost, best_mr = mr, best_nv = nv;
    }
  g->mr = best_mr;
  g->nv = best_nv;
}

bool fc_target_i8_winograd(const FcTarget *t, int m) {
  if (t->arch != FC_ARCH_X86_64 || !fc_target_has(t, FC_FEAT_AVX2) || fc_target_i8_amx(t)) return false;
  bool vnni = fc_target_has(t, FC_FEAT_AVX512VNNI) || fc_target_has(t, FC_FEAT_AVXVNNI);
  if (!vnni) return !fc_target_has(t, FC_FEAT_AVX512BW);
  return m == 4 && fc_target_has(t, FC_FEAT_FASTDPWSSD);
}

bool fc_target_i8_channel_lanes_large(const FcTarget *t) {
  FcI8Gemm g;
  fc_target_i8_conv(t, &g);
  return g.dot == FC_I8DOT_VNNI && !fc_target_i8_amx(t);
}

bool fc_target_i8_conv_tiles(const FcTarget *t, int spatial_rank, int64_t out_per_group) {
  FcI8Gemm g;
  fc_target_i8_conv(t, &g);
  /* at least 2 channels a group: half the 4-channel tile of AVX2 and AVX-512 (SSE2 has 2-channel tiles, but
   * one channel a group, a depthwise conv, wastes most of its 16-channel weight tiles: f32 runs it faster) */
  return g.dot != FC_I8DOT_NONE && spatial_rank >= 1 && spatial_rank <= 2 && out_per_group >= 2;
}

bool fc_target_i8_depthwise(const FcTarget *t, int spatial_rank, int64_t taps, int64_t plane) {
  enum { MAX_TAPS = 81, MAX_PLANE = 256 * 256 };
  FcI8Gemm g;
  fc_target_i8_gemm(t, &g);
  /* not on SSE2's pairs of 128-bit halves: its pair planes and per-tap pmaddwd run 2.5-3x slower than the f32
   * depthwise kernel there, which the conv then keeps (passes/fold_qdq.c) */
  return g.dot != FC_I8DOT_NONE && fc_target_has(t, FC_FEAT_AVX2) && spatial_rank >= 1 && spatial_rank <= 2 &&
         taps >= 1 && taps <= MAX_TAPS && plane >= 1 && plane <= MAX_PLANE;
}

int fc_target_i8_pack_lanes(const FcTarget *t) {
  if (t->arch != FC_ARCH_X86_64) return 0;
  return fc_target_has(t, FC_FEAT_AVX512BW) ? 16 : fc_target_has(t, FC_FEAT_AVX2) ? 8 : 0;
}

int64_t fc_target_i8_blocked_pixels(const FcTarget *t) {
  FcI8Gemm g;
  fc_target_i8_gemm(t, &g);
  return g.dot == FC_I8DOT_MADDUBS && g.lanes == 8 && fc_target_i8_pack_lanes(t) == 8 ? 28 * 28 : 0;
}

bool fc_target_i8_byte_permute(const FcTarget *t) {
  FcI8Gemm g;
  fc_target_i8_gemm(t, &g);
  return g.dot == FC_I8DOT_VNNI && g.lanes == 16;
}
