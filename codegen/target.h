/* target.h — the target description: what passes and kernel emitters ask about the machine they generate
 * code for. No LLVM types here, so passes include it (codegen.h adds the LLVM side).
 *
 * A description (FcTarget) is resolved once per compile from the options' triple, CPU and features
 * (fc_target_resolve, target.c): LLVM turns the CPU name ("skylake-avx512", "x86-64-v3", "native") into
 * its feature set, and flowc reads the features it cares about into a bitset. Everything else is derived
 * from that by tables, not by CPU names: the target kind's row (FcTargetKind: CPU today, NVPTX next) and,
 * within the CPU, the first vector level (target.c: AVX-512, AVX2, SSE, NEON) whose features the target
 * has, which fixes the vector widths, the register count, the GEMM tile table, the layout pass's block
 * and cost constants. Passes get the description in their FcPassContext (passes.h), emitters in
 * FcKernel.target; nothing re-derives it from the triple string.
 *
 * Decisions that a pass and codegen must agree on are made once, here: whether a convolution goes through
 * Winograd (fc_conv_winograd_variant, implemented beside the Winograd kernel whose cost model it is).
 */
#ifndef FLOWC_TARGET_H
#define FLOWC_TARGET_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"

/* CPU features flowc asks about, by LLVM's names. FC_FEATURE(ID, "llvm-name"). */
#define FC_TARGET_FEATURES(X)                                                                                        \
  X(SSE41, "sse4.1")                                                                                                 \
  X(SSE42, "sse4.2")                                                                                                 \
  X(AVX, "avx")                                                                                                      \
  X(AVX2, "avx2")                                                                                                    \
  X(FMA, "fma")                                                                                                      \
  X(F16C, "f16c")                                                                                                    \
  X(AVX512F, "avx512f")                                                                                              \
  X(AVX512BW, "avx512bw")                                                                                            \
  X(AVX512DQ, "avx512dq")                                                                                            \
  X(AVX512VL, "avx512vl")                                                                                            \
  X(AVX512VNNI, "avx512vnni")                                                                                        \
  X(AVX512VBMI, "avx512vbmi")                                                                                        \
  X(AVX512BF16, "avx512bf16")                                                                                        \
  X(AVXVNNI, "avxvnni")                                                                                              \
  X(AMXTILE, "amx-tile")                                                                                             \
  X(AMXINT8, "amx-int8")                                                                                             \
  X(NEON, "neon")                                                                                                    \
  X(FULLFP16, "fullfp16")                                                                                            \
  X(DOTPROD, "dotprod")                                                                                              \
  X(FASTDPWSSD, "fast-dpwssd") /* a tuning flag, not an instruction set: LLVM's AMD Zen 4 and 5 */

typedef enum FcFeature {
#define X(id, name) FC_FEAT_##id,
  FC_TARGET_FEATURES(X)
#undef X
      FC_FEAT_COUNT
} FcFeature;
typedef uint64_t FcFeatureSet; /* bit FC_FEAT_x */
#define FC_FEAT_BIT(f) ((FcFeatureSet)1 << (f))

typedef enum FcArch { FC_ARCH_X86_64, FC_ARCH_AARCH64, FC_ARCH_NVPTX64 } FcArch;

/* A long compile's progress, reported to whoever asked (the command line draws it on a terminal:
 * compiler/progress.h); library code calls this, it never prints. `phase` names the stage ("passes",
 * "codegen", "LLVM optimisation", ...), `item` what it is on (a pass name) or NULL, and step of total
 * counts its items (1-based; 0 of 0 when it has none). A NULL fn reports nothing. */
typedef void (*FcProgressFn)(void *ctx, const char *phase, const char *item, int step, int total);
typedef struct FcProgress {
  FcProgressFn fn;
  void *ctx;
} FcProgress;

static inline void fc_progress(const FcProgress *p, const char *phase, const char *item, int step, int total) {
  if (p && p->fn) p->fn(p->ctx, phase, item, step, total);
}

/* Build options the target is resolved from (and codegen's other options). */
typedef struct FcCodegenOptions {
  const char *triple;     /* NULL: the host's */
  const char *cpu;        /* NULL: the kind's default_cpu ("x86-64-v3" on x86-64); "native": the host CPU */
  const char *features;   /* extra "+avx512f,..." or NULL */
  int opt_level;          /* 0..3: LLVM pipeline default<Ox> */
  const char *model_name; /* symbol prefix for --emit lib/obj headers; default "flowc" */
  bool share_constants;   /* one variant of a multiversioned artefact: large constants are content-addressed
                             where the target's object format allows (FcTarget.shared_constants) */
  FcProgress progress;    /* codegen, LLVM's pipeline, object, link */
  /* --device cuda: the GPU half (codegen/gpu.h), whose FrtGpuModel `gpu_symbol` the artefact's main object
   * defines (fc_gpu_add_descriptor) and every CPU variant's descriptor points at; NULL: a CPU-only model. */
  const char *gpu_symbol;
  const struct FcGpuPlan *gpu_plan;
  const char *gpu_ptx;
  const struct FcTarget *gpu_target;
} FcCodegenOptions;

/* A register tile of the GEMM microkernel: mr rows × nv vectors. */
typedef struct FcGemmTile {
  int mr, nv;
} FcGemmTile;

/* The GEMM's blocking for one target: f32 lanes, the register tiles that fit its register file (the first
 * is the default, the others serve row counts the default would pad), and the cache blocks. */
typedef struct FcGemmTable {
  int vl;                  /* f32 lanes per vector (4, 8, 16) */
  const FcGemmTile *tiles; /* mr·nv accumulators + nv B vectors + 1 broadcast fit the registers */
  int n_tiles;
  int64_t kc;              /* K-block: an A and a B sliver stay in L1 */
  int mc_panels;           /* M-block = mr · mc_panels */
  int nc_panels;           /* N-block = nr · nc_panels (the packed B block stays in L2) */
} FcGemmTable;

/* One choice of the GEMM's shape (cg_gemm.h). */
typedef struct FcGemmArch {
  int vl;         /* f32 lanes per vector (4, 8, 16) */
  int mr, nr;     /* microkernel tile: nr = nv * vl */
  int64_t kc;     /* K-block */
  int64_t mc, nc; /* M- and N-blocks (multiples of mr and nr) */
} FcGemmArch;

/* Classes of convolution the layout pass tells apart (passes/layout.c). */
typedef enum FcConvClass {
  FC_CONV_DEPTHWISE,   /* group = C = M */
  FC_CONV_FIRST,       /* dense over fewer channels than a block (colour planes) */
  FC_CONV_DENSE,       /* dense, K > 1 or stride > 1 */
  FC_CONV_POINTWISE,   /* dense 1×1 stride 1 */
  FC_CONV_GROUPED,     /* 1 < group, not depthwise (RegNet, ResNeXt) */
  FC_CONV_CLASS_COUNT
} FcConvClass;

/* The layout pass's block and cost model: expected speeds of the NCHW and the blocked kernels per
 * class (GFLOP/s per core; equal speeds: no gain counted) and the cost of a layout change. */
typedef struct FcLayoutCosts {
  int block;                                      /* channels per block of NCHW<block>c: f32 lanes of a vector */
  double nchw_gflops[FC_CONV_CLASS_COUNT];        /* the NCHW kernels */
  double blocked_gflops[FC_CONV_CLASS_COUNT];     /* the blocked kernels */
  double edge_bytes_per_us;                       /* a layout change's bandwidth */
  double edge_fixed_us;                           /* and its fixed cost: one more kernel on the pool */
} FcLayoutCosts;

/* --precision: the inputs of the GPU's matmuls and convs (including the conv's implicit GEMM) are rounded to
 * this precision and multiplied on tensor cores with f32 accumulation (tf32: mma m16n8k8; fp16, bf16: m16n8k16);
 * fp32 is the SIMT f32 GEMM. Other ops compute in f32 whatever the precision. */
typedef enum FcGpuPrecision { FC_GPU_FP32 = 0, FC_GPU_TF32, FC_GPU_FP16, FC_GPU_BF16 } FcGpuPrecision;
/* "fp32", "tf32", "fp16", "bf16" → *p; false for anything else. */
bool fc_gpu_precision_parse(const char *s, FcGpuPrecision *p);
const char *fc_gpu_precision_name(FcGpuPrecision p);

/* What a GPU target (the NVPTX row) tells its kernel emitters and passes (codegen/gpu.h). */
typedef struct FcGpuDesc {
  int sm;                   /* compute capability × 10: 80 for sm_80 */
  int warp;                 /* threads of a warp (32) */
  int max_block_threads;    /* threads a block may have (1024) */
  int64_t max_static_shared;/* bytes of statically declared shared memory a block may use (48 KiB) */
  bool mma_f16;             /* tensor-core mma.sync for f16/bf16 inputs with f32 accumulation (sm_80 on) */
  FcGpuPrecision precision; /* --precision (FC_GPU_FP32 unless the caller sets it after fc_target_resolve) */
  double gflops;            /* f32 FMA throughput the cost models assume (GFLOP/s) */
  double mem_gbs;           /* device memory bandwidth they assume (GB/s) */
} FcGpuDesc;

/* The SBP cost model's constants (passes/sbp_cost.c): one rank's compute and memory speeds and the link between
 * ranks, measured on the machine bench/RESULTS.md names (the link: MPI over shared memory, bench/mpi_link.c). */
typedef struct FcSbpCosts {
  double gemm_gflops;      /* f32 matmul/conv GFLOP/s of one rank (one thread) on large products */
  double weight_gbps;      /* GB/s at which a matmul/conv reads its constant weights from beyond L2, per run */
  double pack_gbps;        /* GB/s at which a matmul packs a right operand that is no constant, per run */
  double transcendental_ns; /* per element of an op that evaluates exp, log, tanh, erf ... (softmax included) */
  double mem_gbps;         /* GB/s of bytes touched by memory-bound ops (element-wise, copies, slices) */
  double mem_cold_gbps;    /* GB/s of bytes touched out of cache: a split weight's slice, copied and packed per run */
  double op_us;            /* fixed cost of one kernel or collective */
  double link_latency_us;  /* per step of a collective's algorithm */
  double link_gbps;        /* GB/s a rank sends or receives over the link */
  int64_t mem_cap_bytes;   /* memory a rank may hold (weights + peak activations): larger plans are refused */
  int cores;               /* cores the ranks share (0: one each); more ranks than cores slow down in proportion */
  double crowd_extra;      /* and by this factor more (>= 1: caches and the scheduler shared, bench/sbp_calibrate.py) */
  double crowd_sync_us;    /* and each collective among them waits this long for its ranks to be scheduled */
} FcSbpCosts;

typedef struct FcTarget FcTarget;
/* A kind of target: one row of target.c's table. A new kind (NVPTX) is a new row. */
typedef struct FcTargetKind {
  const char *name;                                 /* "cpu" */
  bool (*arch_of)(const char *triple, FcArch *arch); /* false: not a triple of this kind */
  const char *(*default_cpu)(const char *triple);   /* the CPU when --cpu is not given */
  /* The CPUs an artefact (exe, obj, lib, so) is compiled for when --cpu is not given, as a --cpu list
   * ("A,B": one variant each, the best chosen at run time), or NULL for default_cpu alone. */
  const char *(*default_artefact_cpus)(const char *triple);
  /* The same for a model with integer kernels (quantised), where a CPU's 8-bit dot-product instructions
   * (VNNI) are worth a variant of their own; NULL: default_artefact_cpus. */
  const char *(*default_int8_artefact_cpus)(const char *triple);
  FcStatus (*describe)(FcTarget *t, FcDiag *diag);  /* fills in the rest from t->arch and t->features */
} FcTargetKind;

struct FcTarget {
  const FcTargetKind *kind; /* the row: "cpu" or "nvptx" */
  bool simt;                /* a GPU: ops become SIMT kernels over grids (codegen/gpu_*.c); the CPU's layout,
                               Winograd and packing decisions do not apply, `gpu` describes the device */
  FcGpuDesc gpu;            /* simt only */
  FcArch arch;
  const char *triple;       /* normalised, as LLVM was given it */
  const char *cpu;          /* the CPU name (for "native", the host's) */
  const char *level;        /* the vector level chosen: "avx512", "avx2", "sse", "neon" */
  FcFeatureSet features;    /* what the CPU (and the --features string) enable */
  int vector_bytes;         /* vectors element-wise loops use (256-bit on AVX-512: LLVM prefers them too) */
  int max_vector_bytes;     /* the widest registers (GEMM and blocked kernels use them) */
  int vector_regs;          /* vector registers */
  bool shared_constants;    /* the object format merges COMDAT groups at link time (ELF, COFF; not Mach-O):
                               large constants are content-addressed, so the CPU variants of one artefact
                               that pack a weight alike keep one copy (cg_module.c) */
  FcGemmTable gemm;
  FcLayoutCosts layout;
  FcLayoutCosts layout_narrow; /* a narrower block for regions the block does not divide (block 0: none) */
  FcSbpCosts sbp;           /* the SBP cost model's constants (sbp_auto, flowc info --ranks) */
  void *llvm_tm;            /* the LLVMTargetMachineRef codegen uses (codegen.h: fc_target_tm) */
  char *owned;              /* the strings above */
};

/* Resolves the description for the options (host triple and CPU defaults, "native"): FC_ERR_INPUT with a
 * one-line message for an unknown triple, CPU or feature. Free with fc_target_free. */
FcStatus fc_target_resolve(const FcCodegenOptions *o, FcTarget **out, FcDiag *diag);
void fc_target_free(FcTarget *t);
/* The --cpu list an artefact for `triple` (NULL: the host's) gets by default: "x86-64-v3,x86-64-v4" on
 * x86-64, so AVX-512 machines run AVX-512 code and AVX2 machines still run the model; NULL where one CPU
 * (default_cpu) is the default, or for a triple no kind generates for (fc_target_resolve reports it). */
const char *fc_target_default_artefact_cpus(const char *triple);
/* The list for a model that runs integer kernels: on x86-64 also "cascadelake", whose AVX512-VNNI vpdpbusd
 * multiplies u8 x s8 quadruples in one instruction (x86-64-v4 has no VNNI: vpmaddubsw + vpmaddwd there). */
const char *fc_target_default_int8_artefact_cpus(const char *triple);

bool fc_target_has(const FcTarget *t, FcFeature f);
/* The name of a feature ("avx512vnni"). */
const char *fc_feature_name(FcFeature f);
/* Whether the target converts f16 to f32 in hardware (F16C's vcvtph2ps on x86-64, always on AArch64). */
bool fc_target_converts_f16(const FcTarget *t);
/* Lanes of the vectors element-wise loops use for dt (computed type: f16/bf16 compute in f32); 1: scalar. */
int fc_target_lanes(const FcTarget *t, FcDtype dt);
/* The lanes of dt for an element-wise loop that stores 8-bit integers (a quantised model's float glue between
 * its integer kernels: residual adds, the input's quantisation): the widest registers, which those kernels use
 * already, so the wider loop costs no clock (fc_target_lanes keeps 256 bits on AVX-512 for the others). */
int fc_target_lanes_8bit_glue(const FcTarget *t, FcDtype dt);

/* The GEMM's default shape, and the tile for an M-row product (pow2_panels: only panels of 2^k vectors). */
void fc_target_gemm_arch(const FcTarget *t, FcGemmArch *g);
void fc_target_gemm_arch_for_rows(const FcTarget *t, int64_t M, bool pow2_panels, FcGemmArch *g);

/* Block sizes the blocked kernels (NCHW<b>c) handle: 8 and 16 (FC_LAYOUT_MAX_BLOCK). */
#define FC_LAYOUT_MAX_BLOCK 16
bool fc_layout_block_supported(int64_t b);

/* A 2-D convolution's shapes and attributes, as the Winograd decision reads them. */
typedef struct FcConvShape {
  FcDtype dtype;
  int64_t N, C, H, W, M, KH, KW, OH, OW;
  int64_t group, stride[2], dilation[2], pads[4];
} FcConvShape;
/* f32 or not, the shapes of a flow.conv with rank-4 x, w and y; false for anything else. */
bool fc_conv_shape_of(const FcOp *op, FcConvShape *s);
/* Whether a conv of these shapes goes through Winograd on target t, and which: 4 for F(4×4, 3×3), 2 for
 * F(2×2, 3×3), 0 for none (codegen/kernel_winograd.c's cost model). The layout pass leaves such convs in
 * NCHW; codegen uses it to choose the kernel. */
int fc_conv_winograd_variant(const FcTarget *t, const FcConvShape *s);
/* How many times faster than the direct NCHW kernel that model expects Winograd to be (1 when it does
 * not apply): the layout pass weighs it against the layout changes a Winograd conv costs in a region. */
double fc_conv_winograd_speedup(const FcTarget *t, const FcConvShape *s);

/* The u8 × s8 → i32 dot products of the integer GEMM (codegen/kernel_matmul_i8.c): how 4 adjacent bytes
 * of an A row meet 4 bytes of a B column on this target, the vector width and the register tile. */
typedef enum FcI8Dot {
  FC_I8DOT_NONE,    /* not x86: the generic loop nest */
  FC_I8DOT_VNNI,    /* vpdpbusd (AVX512-VNNI at 512 bits, AVX-VNNI at 256): exact, one instruction */
  FC_I8DOT_MADDUBS, /* vpmaddubsw + vpmaddwd by ones: saturates i16 pair sums, exact while no pair of B can
                     * (every |b| <= 64, say); the kernel falls back to FC_I8DOT_WIDEN otherwise */
  FC_I8DOT_WIDEN,   /* vpmaddwd on bytes widened to i16 in registers (the same s8 packing; i16 pairs only
                     * where B - zb leaves s8): exact for every B; the one dot of x86 without AVX2 (SSE2's
                     * pmaddwd on each 128-bit half of the kernels' 256-bit vectors) */
} FcI8Dot;
typedef struct FcI8Gemm {
  FcI8Dot dot;
  int lanes;  /* i32 lanes per vector (8: 256-bit, two xmm registers without AVX2; 16: 512-bit) */
  int mr, nv; /* register tile: mr rows × nv vectors of i32 accumulators */
  int64_t col_bytes; /* packed activations a task builds and re-reads from L2 (kernel_conv_i8.c's im2col block) */
} FcI8Gemm;
void fc_target_i8_gemm(const FcTarget *t, FcI8Gemm *g);
/* Whether the target has AMX tiles with 8-bit dot products (Sapphire Rapids and later): the integer GEMMs
 * then run on tile registers (cg_amx.h); the runtime also asks the OS for the tile state (runtime/cpu.c). */
bool fc_target_i8_amx(const FcTarget *t);
/* Whether an integer product of `rows` x k (both padded to whole tiles: 16 rows, 64 bytes of k) gains from the
 * tiles: enough rows and k that the padding wastes at most a third of the tile work. Small products (a GEMV,
 * a pointwise conv of 16 channels) stay on the vector kernels, which pad nothing. */
bool fc_target_i8_amx_worth(const FcTarget *t, int64_t rows, int64_t k);
/* The im2col block a task of the AMX conv builds (bytes of interleaved columns): far larger than the vector
 * kernels' L2-sized one, because with products at tile speed the block's per-row set-up dominates unless a
 * block spans many pixels (a whole small map: its rows then come from padded planes). */
int64_t fc_target_i8_amx_col_bytes(const FcTarget *t);
/* The same for the AMX conv's direct im2col of small K (kernel_conv_i8.c's stems, built in one pass from
 * phase planes): L2-sized, like the vector kernels' blocks. */
int64_t fc_target_i8_amx_direct_col_bytes(const FcTarget *t);
/* The same for the quantised conv (kernel_conv_i8.c), whose register tile may differ from the matmul's. */
void fc_target_i8_conv(const FcTarget *t, FcI8Gemm *g);
/* The register tile of the few-pixel quantised conv (kernel_conv_i8_few_pixels.c: output channels in the
 * lanes) for P output pixels and Mg channels a group with the dot `dot`: g->mr pixels (one broadcast each) ×
 * g->nv vectors of g->lanes channels, the one of least modelled time (padded tiles × the cycles of a k step,
 * the dots' or the loads', whichever bound it) among those whose accumulators, weight vectors and the
 * dot's temporaries fit the vector registers. */
void fc_target_i8_conv_few_pixels_tile(const FcTarget *t, FcI8Dot dot, int64_t P, int64_t Mg, FcI8Gemm *g);
/* Whether a quantised 1-D/2-D conv with `out_per_group` output channels per group runs on the integer GEMM
 * (kernel_conv_i8.c): a dot instruction, and groups of at least 2 channels. Others
 * (depthwise: kernel_dwconv_i8.c, see fc_target_i8_depthwise) take the direct loop nest, slower than the
 * f32 kernels: fold_qdq leaves them in float. */
bool fc_target_i8_conv_tiles(const FcTarget *t, int spatial_rank, int64_t out_per_group);
/* Whether a quantised depthwise 1-D/2-D conv (one input channel per group) with `taps` kernel taps over input
 * planes of `plane` pixels runs on the integer depthwise kernel (kernel_dwconv_i8.c): the 16-bit dot
 * (vpmaddwd; vpdpbusd on byte quads where fc_target_i8_byte_permute holds; AVX2 and up), at most 81 taps (its
 * weights stay in registers) and planes of at most 256 × 256 pixels (a padded copy of one sits in each task's
 * scratch).
 * fold_qdq folds such convs into their quantised form. */
bool fc_target_i8_depthwise(const FcTarget *t, int spatial_rank, int64_t taps, int64_t plane);
/* Whether 3×3 stride-1 quantised convs run by exact integer Winograd F(m×m, 3×3), m = 2 or 4, on 16-bit
 * products (kernel_conv_i8_winograd.c). On AVX2 whose only byte dot is vpmaddubsw (two multiply uops per 32
 * products), vpmaddwd's 16 products in one uop over 2.25× (F(2×2)) or 4× (F(4×4)) fewer products win. Where
 * VNNI's vpdpbusd makes 32 in one uop they win only if that uop is slow: on the CPUs LLVM tunes with
 * fast-dpwssd (AMD Zen 4 and 5, whose 512-bit operations are double-pumped, so vpdpbusd makes 64
 * multiply-adds a cycle, where Intel's server cores with two 512-bit units make 128) F(4×4)'s 4× fewer
 * products, at half vpdpbusd's products an instruction, still halve the dot's cycles; F(2×2)'s 2.25× would not
 * pay for its transforms. With AMX neither wins, and AVX-512 without VNNI is not tuned for it yet. */
bool fc_target_i8_winograd(const FcTarget *t, int m);
/* Whether the channel-lane quantised conv (kernel_conv_i8_few_pixels.c) also takes maps beyond 16×16 (up to
 * 64×64, kernels wider than 1×1, K >= 256): where the byte dot is VNNI's one instruction (and no AMX), a
 * pixel's broadcast quad against vectors of channels beats the pixel kernel's L2-sized im2col blocks, which
 * stream the weights once a block (ResNet-18's 56×56 and 28×28 3×3 convs on cascadelake code, about 840 →
 * 650 and 865 → 580 µs on Zen 4); with AVX2's two-instruction dot and its run-time dual paths it loses
 * (Inception-v3 61 → 71 ms). */
bool fc_target_i8_channel_lanes_large(const FcTarget *t);
/* Whether that kernel gathers each output pixel's byte quad of taps straight from the padded plane and multiplies
 * it with vpdpbusd (AVX512-VNNI: Cascade Lake, Ice Lake server, Sapphire Rapids): one vpermb / vpermt2b per
 * gather where the target has AVX512-VBMI (it asks FC_FEAT_AVX512VBMI), else a vpermd and a vpshufb. Without
 * VNNI a quad costs as much as two vpmaddwd pairs, so other CPUs keep the pair planes. */
bool fc_target_i8_byte_permute(const FcTarget *t);
/* The lanes of the i32 vectors whose requantised bytes the target narrows with saturating packs (vpackssdw,
 * vpackuswb; cg_requant.c's fc_qp_finish_packed): 16 with AVX-512BW, 8 with AVX2, else 0. */
int fc_target_i8_pack_lanes(const FcTarget *t);
/* The most output pixels of a quantised conv that passes/layout_i8.c puts in the blocked layout NCHW8c (its
 * depthwise kernel, kernel_dwconv_i8_channels.c, and the integer GEMM over pixels for its 1x1 convs then read
 * and write blocks of 8 channel bytes), 0 for none. AVX2 whose byte dot is vpmaddubsw: there the depthwise
 * kernel of small maps would otherwise transpose each block of 8 channel planes in and out; maps of up to
 * 28x28 (larger ones keep NCHW, whose 1x1 conv kernel is faster there: bench/RESULTS.md). */
int64_t fc_target_i8_blocked_pixels(const FcTarget *t);

#endif /* FLOWC_TARGET_H */
