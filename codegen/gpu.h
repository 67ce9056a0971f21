/* gpu.h — the GPU half of codegen: one internal header for codegen/gpu_*.c, a section per file.
 *
 * A module compiled for a GPU target (FcTarget.simt: the NVPTX row of target.c) becomes
 *   - one SIMT kernel per op, built by the op's GPU emitter (gpu_kernels.def) through the builder below, which
 *     emits the same body twice over: for NVPTX (thread indices are PTX special registers, barriers
 *     bar.sync, shuffles shfl.sync, shared memory addrspace(3)) and for the SIMT host backend (indices read
 *     from the emulator's FrtSimtThread, barriers and shuffles calls into runtime/gpu_simt.c), so the host
 *     copy runs every kernel's indexing and synchronisation on machines without a GPU;
 *   - a launch plan (FcGpuPlan): per kernel its grid, block, shared bytes and arguments, each a buffer of the
 *     memory plan (input, output, workspace offset) or of the weights blob, which gathers the constants the
 *     kernels read; runtime/flowrt.h's FrtGpuModel is the plan as data (gpu_emit.c writes it).
 *
 * Kernel ABI: NVPTX `ptx_kernel void gN(ptr a0, ..., ptr an)`, every argument a buffer in the plan's order
 * (operands, then results, then the workspace, whose first bytes are the run's status word); host
 * `void gN(ptr thread, ptr args)` with args an array of the same pointers. Emitters never see the
 * difference: they read FcGpuKernel.in/out and ask the builder for indices.
 *
 * Emitters also use codegen.h's helpers (loads/stores by dtype, conversions, scalar ops, loops) through
 * FcGpuKernel.k, an FcKernel whose target is the GPU's description.
 */
#ifndef FLOWC_GPU_H
#define FLOWC_GPU_H

#include "codegen.h"
#include "memplan.h"

/* ---- gpu_builder.c: what a kernel emitter sees ------------------------------------------------------ */

typedef struct FcGpuKernel {
  FcKernel k;              /* op, ctx, mod, b, fn, target, in, out, diag: as for CPU emitters (k.begin, k.end
                              and k.outer are unused) */
  bool host;               /* the SIMT host build */
  LLVMValueRef thread;     /* host: the FrtSimtThread * of the calling thread */
  /* Set by the emitter (fc_gpu_launch_1d or directly): the launch. */
  uint32_t grid[3], block[3];
  uint32_t shared_bytes;   /* grown by fc_gpu_shared */
  bool sync;               /* set by fc_gpu_barrier and the shuffles */
  LLVMValueRef shared_host;/* host: the block's shared area, loaded once */
  int n_shared;            /* shared arrays declared so far */
} FcGpuKernel;

/* Thread and block indices (i32) along dim 0..2 (x, y, z). */
LLVMValueRef fc_gpu_thread_idx(FcGpuKernel *g, int dim);
LLVMValueRef fc_gpu_block_idx(FcGpuKernel *g, int dim);
/* blockIdx.x * blockDim.x + threadIdx.x as i64 (blockDim from the launch set before the call). */
LLVMValueRef fc_gpu_global_idx_x(FcGpuKernel *g);
/* A 1-D launch covering n items with `threads` threads a block (a multiple of the warp): the grid is
 * ceil(n / threads) blocks (at most 2^31 - 1; FC_ERR_LIMIT beyond, with a message naming the op). */
FcStatus fc_gpu_launch_1d(FcGpuKernel *g, int64_t n, uint32_t threads);
/* __syncthreads(). */
void fc_gpu_barrier(FcGpuKernel *g);
/* Warp shuffles of an f32 or i32 value (full mask; every lane of the warp must execute them):
 * the value of lane ^ mask, of lane + delta (own value past the warp's end), of lane `src` (i32 value). */
LLVMValueRef fc_gpu_shfl_xor(FcGpuKernel *g, LLVMValueRef v, int mask);
LLVMValueRef fc_gpu_shfl_down(FcGpuKernel *g, LLVMValueRef v, int delta);
LLVMValueRef fc_gpu_shfl_idx(FcGpuKernel *g, LLVMValueRef v, LLVMValueRef src);
/* A shared-memory array of `count` elements of type t, 16-byte aligned, for the whole block: a generic
 * pointer to its first element (loads and stores through it work on both builds; NVPTX infers the shared
 * address space). Adds to g->shared_bytes; FC_ERR_LIMIT (returns NULL, message set) past the target's
 * static shared memory. */
LLVMValueRef fc_gpu_shared(FcGpuKernel *g, LLVMTypeRef t, int64_t count, const char *name);
/* The sum / max of an f32 over the warp's 32 lanes (xor butterfly), in every lane. */
LLVMValueRef fc_gpu_warp_sum(FcGpuKernel *g, LLVMValueRef v);
LLVMValueRef fc_gpu_warp_max(FcGpuKernel *g, LLVMValueRef v);
/* A tensor-core mma.sync.aligned.row.col of the warp with f32 accumulation: m16n8k16 for F16 and BF16, m16n8k8
 * for TF32. a[4] and b[2] are the lane's fragment registers (i32: two 16-bit values, low half first, or one
 * tf32 as f32 bits), cd[4] its f32 accumulators, replaced by D = A·B + C; the fragment layouts are the PTX
 * ISA's (restated in runtime/gpu_simt.h). Every lane of the warp executes it, outside divergent code (the
 * host build calls frt_simt_mma, answered for the whole warp at once). The kind's values are FRT_SIMT_MMA_*. */
typedef enum FcGpuMma { FC_GPU_MMA_F16 = 0, FC_GPU_MMA_BF16 = 1, FC_GPU_MMA_TF32 = 2 } FcGpuMma;
void fc_gpu_mma(FcGpuKernel *g, FcGpuMma kind, LLVMValueRef const *a, LLVMValueRef const *b, LLVMValueRef *cd);
/* An error naming the kernel's op (as fc_cg_error). */
FcStatus fc_gpu_error(FcGpuKernel *g, FcStatus st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- gpu_team.c: rows combined by one thread, a warp or a block ------------------------------------- */

/* A team computes one row of a reduction-like op (reduce_*, argmax, softmax, layer_norm): its threads
 * take the row's elements lane, lane + size, ... and then combine their partial results. A thread team
 * (size 1) needs no exchange; a warp's lanes exchange by xor shuffles; a block's warps then meet through
 * shared memory behind one barrier. */
typedef enum FcGpuTeamKind { FC_GPU_TEAM_THREAD, FC_GPU_TEAM_WARP, FC_GPU_TEAM_BLOCK } FcGpuTeamKind;

typedef struct FcGpuTeam {
  FcGpuTeamKind kind;
  int64_t size;       /* threads per row: 1, 32 or FC_GPU_TEAM_BLOCK_THREADS */
  int64_t rows;
  LLVMValueRef row;   /* i64: the thread's row (thread and warp teams: possibly >= rows in the last block) */
  LLVMValueRef lane;  /* i64: the thread's index in its team */
  LLVMValueRef valid; /* i1: row < rows */
} FcGpuTeam;

#define FC_GPU_TEAM_BLOCK_THREADS 256
/* The team for `rows` rows of `len` elements each, contiguous in memory (a thread for short rows, a warp
 * up to a few thousand elements, a block beyond or for few long rows). */
FcGpuTeamKind fc_gpu_team_pick(int64_t rows, int64_t len);
/* Sets the launch (one team per row) and the thread's row and lane; FC_ERR_LIMIT past the grid's size. */
FcStatus fc_gpu_team_begin(FcGpuKernel *g, FcGpuTeamKind kind, int64_t rows, FcGpuTeam *t);
/* The loop over the thread's share of its row of len elements (none for an invalid row): the element
 * index, i64; close it with fc_cg_loop_end. */
LLVMValueRef fc_gpu_team_loop_begin(FcGpuKernel *g, const FcGpuTeam *t, int64_t len, FcLoop *l);
/* Combines n scalars (any integer or float type) over the team with combine(acc, other), which updates
 * acc[0..n) in place and must be commutative and associative (up to rounding); every thread of the team
 * gets the result. Called by every thread of the block, outside any branch (it shuffles and may wait at
 * a barrier). FC_ERR_LIMIT when the block's partials do not fit shared memory. */
typedef void (*FcGpuCombine)(FcGpuKernel *g, const void *ctx, LLVMValueRef *acc, const LLVMValueRef *other);
FcStatus fc_gpu_team_reduce(FcGpuKernel *g, const FcGpuTeam *t, int n, LLVMValueRef *v, FcGpuCombine combine,
                            const void *ctx);
/* if (valid && lane == 0) {: the row's one writer; close with fc_cg_if_end. */
LLVMBasicBlockRef fc_gpu_team_leader_begin(FcGpuKernel *g, const FcGpuTeam *t);
/* fc_gpu_shfl_xor for any integer or float scalar (narrow integers widened, 64-bit ones in two halves). */
LLVMValueRef fc_gpu_shfl_xor_any(FcGpuKernel *g, LLVMValueRef v, int mask);

/* ---- gpu_kernel_matmul.c: the tiled GEMM (flow.matmul; the conv's implicit GEMM) ------------------- */

/* C[z] = A[z] · B[z] for z in [0, batch), A [M, K], B [K, N], computed in compute type ct. The callbacks
 * emit code at the builder's position: begin (may be NULL) once per block for its problem z (i64), before
 * the K loop; load_a / load_b an element (indices i64, always in range) as a ct value; store_c the finished
 * sum of element (m, n) of problem z (in range). ctx is the emitter's. Sets the launch (a 1-D grid of 256-
 * thread blocks, one per 64 x 64 tile); FC_ERR_LIMIT past 2^31-1 blocks. */
typedef struct FcGpuGemm {
  int64_t batch, M, N, K;
  LLVMTypeRef ct;
  void *ctx;
  void (*begin)(FcGpuKernel *g, void *ctx, LLVMValueRef z);
  LLVMValueRef (*load_a)(FcGpuKernel *g, void *ctx, LLVMValueRef z, LLVMValueRef m, LLVMValueRef kk);
  LLVMValueRef (*load_b)(FcGpuKernel *g, void *ctx, LLVMValueRef z, LLVMValueRef kk, LLVMValueRef n);
  void (*store_c)(FcGpuKernel *g, void *ctx, LLVMValueRef z, LLVMValueRef m, LLVMValueRef n, LLVMValueRef v);
} FcGpuGemm;
FcStatus fc_gpu_gemm_emit(FcGpuKernel *g, const FcGpuGemm *p);
/* The same on tensor cores (gpu_gemm_mma.c), which fc_gpu_gemm_emit uses for an f32 compute type when the
 * target's precision is tf32, fp16 or bf16; FC_ERR_UNSUPPORTED on a GPU without them. */
FcStatus fc_gpu_gemm_mma_emit(FcGpuKernel *g, const FcGpuGemm *p);

/* ---- gpu_kernels.def: the GPU emitters -------------------------------------------------------------- */

/* An emitter returns FC_OK after building the kernel and setting its launch, or FC_ERR_UNSUPPORTED (with
 * a reason in the diag) for an instance it does not handle (a dtype, a rank); codegen lists every op no
 * emitter took. */
typedef FcStatus (*FcGpuKernelFn)(FcGpuKernel *g);
#define FC_GPU_KERNEL(kind, fn) FcStatus fn(FcGpuKernel *g);
#include "gpu_kernels.def"
#undef FC_GPU_KERNEL

/* ---- gpu_fallback.c: the long tail ------------------------------------------------------------------- */

/* Whether op kind has a CPU emitter that fc_gpu_fallback can run on the GPU. */
bool fc_gpu_fallback_exists(FcOpKind kind);
/* The op's CPU loop nest as a device function, one GPU thread per outer iteration: for ops without a GPU
 * emitter, or whose emitter refused the instance. FC_ERR_UNSUPPORTED (with the reason) when the CPU kernel
 * needs per-thread scratch, weights re-laid at compile time or a libflowrt call. */
FcStatus fc_gpu_fallback(FcGpuKernel *g);

/* ---- gpu_module.c: the module's kernels and launch plan --------------------------------------------- */

typedef enum FcGpuBuf {
  FC_GPU_BUF_INPUT = 0,     /* the values of FrtGpuArgKind */
  FC_GPU_BUF_OUTPUT = 1,
  FC_GPU_BUF_WORKSPACE = 2,
  FC_GPU_BUF_WEIGHTS = 3,
} FcGpuBuf;

typedef struct FcGpuArg {
  FcGpuBuf buf;
  int index;       /* input/output position */
  int64_t offset;  /* bytes */
} FcGpuArg;

/* An SBP program's boxing ops are not kernels: the host runs them between the kernels through the
 * collectives (the values of FrtGpuColl; flowrt.h describes the fields). */
typedef enum FcGpuColl {
  FC_GPU_COLL_NONE = 0,
  FC_GPU_COLL_ALL_REDUCE = 1,
  FC_GPU_COLL_ALL_GATHER = 2,
  FC_GPU_COLL_REDUCE_SCATTER = 3,
  FC_GPU_COLL_ALL_TO_ALL = 4,
  FC_GPU_COLL_LOCAL_SLICE = 5,
} FcGpuColl;

typedef struct FcGpuLaunchPlan {
  char name[24];   /* the kernel function: "g<N>"; a collective: the op's name */
  int node;        /* index into the plan's kernel_names */
  uint32_t grid[3], block[3], shared_bytes;
  bool sync;
  int n_args;
  FcGpuArg *args;  /* a collective: source, destination, scratch */
  FcGpuColl coll;  /* FC_GPU_COLL_NONE: a kernel; else the fields below (FrtGpuLaunch's) */
  int mesh_axis, group, dtype, reduce_op, send_rows, recv_rows;
  int64_t count;
} FcGpuLaunchPlan;

typedef struct FcGpuPlan {
  FcMemPlan mem;            /* the workspace's layout (the status word first, then the plan's blocks) */
  int64_t workspace_bytes;  /* including the status word */
  unsigned char *weights;   /* the constants kernels read, each at a 64-byte aligned offset (malloc'd) */
  int64_t weights_bytes;
  int n_launches;
  FcGpuLaunchPlan *launches;
  int n_kernels;
  const char **kernel_names; /* "node 'x' (flow.add)" per launch-producing op */
} FcGpuPlan;

/* Builds the GPU kernels of `m` (verified, through the GPU pipeline) into a new LLVM module in ctx for the
 * GPU target `t`: for NVPTX when host is false (the module's triple and data layout are t's), for the SIMT
 * host backend when true (the host's: host_tm). Ops no emitter takes fail with FC_ERR_UNSUPPORTED listing
 * each op kind once ("no GPU kernel for flow.loop, flow.topk"). The plan's arrays live in m's arena but for
 * weights (free with fc_gpu_plan_free). */
FcStatus fc_gpu_codegen_module(FcModule *m, const FcTarget *t, bool host, LLVMTargetMachineRef host_tm,
                               LLVMContextRef ctx, LLVMModuleRef *out, FcGpuPlan *plan, FcDiag *diag);
void fc_gpu_plan_free(FcGpuPlan *plan);

/* ---- gpu_emit.c: PTX, the artefact's GPU object, the SIMT host JIT ---------------------------------- */

/* Optimises the NVPTX module and prints its PTX (malloc'd, NUL-terminated). */
FcStatus fc_gpu_emit_ptx(LLVMModuleRef mod, const FcTarget *t, int opt_level, char **ptx, FcDiag *diag);
/* Assembles `ptx` with ptxas for t's GPU (the CUDA toolkit's: $FLOWC_PTXAS, else ptxas on PATH, else
 * /usr/local/cuda/bin/ptxas) into a temporary file: FC_OK, or FC_ERR_INPUT with ptxas's first error line.
 * FC_ERR_UNSUPPORTED when no ptxas is found. */
FcStatus fc_gpu_ptxas_check(const char *ptx, const FcTarget *t, FcDiag *diag);
/* Adds the FrtGpuModel named `symbol` (the plan, the PTX text, the weights) to `mod`, an object module of
 * the artefact (any CPU module of the host's triple). */
FcStatus fc_gpu_add_descriptor(LLVMModuleRef mod, const FcGpuPlan *plan, const char *ptx, const FcTarget *t,
                               const char *symbol, FcDiag *diag);

#endif /* FLOWC_GPU_H */
