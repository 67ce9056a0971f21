/* cg_gemm.h — packed, register-blocked f32 GEMM for the kernels that reduce to matrix products
 * (matmul, conv as implicit im2col or 1×1, Winograd's batched products).
 *
 * The BLIS structure: C[M, N] += A[M, K] · B[K, N] is cut into K-blocks of kc (A and B slivers stay in
 * L1), N-blocks of nc (the packed B block stays in L2) and M-blocks of mc; the innermost piece is the
 * microkernel, an mr × nr register tile (mr rows of A broadcast, nr = 2 vectors of B, mr·2
 * accumulators) updated by rank-1 FMAs over kc. Its shape comes from the target: AVX-512 (32 vector
 * registers, 16 lanes): 14 × 32; AVX2/FMA (16 registers, 8 lanes): 6 × 16; SSE: 6 × 8.
 *
 * Packed layouts (both built by the host at compile time for constant operands, or by generated code
 * into per-task scratch for run-time operands):
 *   A packed: panels of mr rows; element (i, k) at ((i / mr) * K + k) * mr + i % mr; rows past M are 0.
 *   B packed: panels of nr columns; element (k, j) at ((j / nr) * K + k) * nr + j % nr; columns past N 0.
 * A panel's K-block [k0, k0 + kc) is contiguous at panel + k0 * mr (resp. k0 * nr), so one packing serves
 * every kc.
 *
 * The microkernel is one internal function per module and arch (fc_gemm_ukr):
 *     void ukr(i64 kc, ptr a, ptr b, ptr c, i64 ldc, i64 accumulate)
 * computes C[0..mr)[0..nr) (row stride ldc floats) = (accumulate ? C : 0) + Σ_k a[k*mr + i] · b[k*nr + j].
 * The edge variant takes the valid rows and columns and touches nothing else of C.
 */
#ifndef FLOWC_CG_GEMM_H
#define FLOWC_CG_GEMM_H

#include "codegen.h"

/* FcGemmArch (vl, mr × nr tile, kc/mc/nc blocks) and the tile tables are the target's (target.h). */

/* The arch for the kernel's target (its GEMM table: AVX-512, AVX2/FMA, else SSE/NEON). */
void fc_gemm_arch(const FcKernel *k, FcGemmArch *g);
/* The same, with another register tile when the default's mr would pad an M-row product by more than a
 * tenth (AVX2: 6×16, else 5×16, 4×16 or 4×24; AVX-512: 14×32, else 12×32, 8×32, 8×48 or 6×64): M = 32
 * takes 4-row tiles rather than five 6-row tiles and an edge tile. pow2_panels: only panels of 2^k
 * vectors (for callers that gather B lanes). */
void fc_gemm_arch_for_rows(const FcKernel *k, int64_t M, bool pow2_panels, FcGemmArch *g);

/* Adjusts g for a product whose B (K × N) is a packed constant streamed panel by panel and whose A each task
 * packs once for all of K (kernel_matmul's activations × weights): K-blocks of up to 1024, and shorter
 * m-blocks when M is split anyway, so the longer A slivers of a block still share L2 with a B sliver; a B
 * too large to stay in cache gets one m-block of every row where their A slice fits L2, so it is read once. */
void fc_gemm_arch_stream_b(FcGemmArch *g, int64_t M, int64_t K, int64_t N);

/* Packing on the host (constants): element (i, k) of A is A[i * rs + k * cs]; (k, j) of B is
 * B[k * rs + j * cs]. Sizes in floats; FC_ERR_LIMIT-free: callers pass shapes of checked tensors. */
int64_t fc_gemm_packed_a_size(const FcGemmArch *g, int64_t M, int64_t K);
int64_t fc_gemm_packed_b_size(const FcGemmArch *g, int64_t K, int64_t N);
void fc_gemm_pack_a_host(const FcGemmArch *g, const float *A, int64_t M, int64_t K, int64_t rs, int64_t cs, float *dst);
void fc_gemm_pack_b_host(const FcGemmArch *g, const float *B, int64_t K, int64_t N, int64_t rs, int64_t cs, float *dst);

/* Calls of the module's microkernels (created on first use). kc, ldc: i64; a, b, c: ptr; accumulate: i1.
 * The edge call also takes the valid rows (<= mr) and columns (<= nr), i64. */
void fc_gemm_call_ukr(FcKernel *k, const FcGemmArch *g, LLVMValueRef kc, LLVMValueRef a, LLVMValueRef b,
                      LLVMValueRef c, LLVMValueRef ldc, LLVMValueRef accumulate);
void fc_gemm_call_ukr_edge(FcKernel *k, const FcGemmArch *g, LLVMValueRef kc, LLVMValueRef a, LLVMValueRef b,
                           LLVMValueRef c, LLVMValueRef ldc, LLVMValueRef accumulate, LLVMValueRef rows,
                           LLVMValueRef cols);
/* Either of the above: the full call when rows == mr and cols == nr are known constants, else a run-time
 * choice. */
void fc_gemm_call_tile(FcKernel *k, const FcGemmArch *g, LLVMValueRef kc, LLVMValueRef a, LLVMValueRef b,
                       LLVMValueRef c, LLVMValueRef ldc, LLVMValueRef accumulate, LLVMValueRef rows,
                       LLVMValueRef cols);

#endif /* FLOWC_CG_GEMM_H */

/* ---- the blocked driver: one (m-block, n-block) of C = A · B over all of K ------------------------------ */

/* An operand of the product: a constant packed at compile time (`packed`, the global of the whole
 * packed matrix, in the layout above) or packed at run time by `pack`, which must emit code writing the
 * panel that starts at row i0 of A (column i0 of B) for k in [k0, k0 + kc) into dst in packed layout
 * (dst[k * mr + i] for A, dst[k * nr + j] for B; zeros past the matrix). */
typedef struct FcGemmOperand {
  LLVMValueRef packed;
  /* A only: `packed` holds just this block's rows (panels numbered from the block's first row), packed
   * by the caller before fc_gemm_emit_block, e.g. once for several blocks that share those rows. */
  bool block_local;
  /* B only: `user` is a row-major FcGemmMatrix that full panels read in place (the microkernel takes B's
   * row stride), so only a partial last panel is packed, by `pack`. For B operands that are already
   * plain matrices (a 1×1 convolution's input, a run-time matmul operand). */
  bool direct;
  /* B only, with `packed`: B is too large to stay in cache between runs (a Linear layer's weights), so
   * every full tile also prefetches its share of the next sliver into L2 while it computes (cg_gemm.c). */
  bool stream;
  void (*pack)(FcKernel *k, void *user, LLVMValueRef dst, LLVMValueRef i0, LLVMValueRef k0, LLVMValueRef kc);
  void *user;
} FcGemmOperand;

typedef struct FcGemmBlock {
  const FcGemmArch *g;
  int64_t M, N, K;
  int64_t mc, nc;        /* this op's block sizes (blocks start at multiples of mr and nr; nc need not be one) */
  FcGemmOperand a, b;
  LLVMValueRef c;        /* ptr to C[0, 0] (this batch) */
  int64_t ldc;           /* row stride of C in floats */
  LLVMValueRef scratch;  /* >= fc_gemm_block_scratch_bytes: per-task packing buffers */
  /* Called once per finished row m (i64) of the block with the block's columns [n0, n0 + n): applies the
   * op's epilogue. NULL: none. */
  void (*finish_row)(FcKernel *k, void *user, LLVMValueRef m, LLVMValueRef n0, LLVMValueRef n);
  /* Optional, with finish_row: the epilogue of one accumulator vector v (vl lanes) at C(m, n ..). Then
   * full tiles of the last K-block run the microkernel inline in the op's kernel and finish its
   * registers before the one store (no second pass over C); edge tiles use finish_row. */
  LLVMValueRef (*finish_value)(FcKernel *k, void *user, LLVMValueRef v, LLVMValueRef m, LLVMValueRef n);
  void *finish_user;
} FcGemmBlock;

/* Run-time packing of a row-major f32 matrix (the `user` of FcGemmOperand): A rows [i0, i0 + mr) or B
 * columns [j0, j0 + nr), each for k in [k0, k0 + kc), zeros past rows / cols. */
typedef struct FcGemmMatrix {
  LLVMValueRef base;   /* ptr to element (0, 0) */
  int64_t rows, cols;  /* A: M × K; B: K × N */
  int64_t ld;          /* row stride in floats */
  int width;           /* mr for A, nr for B */
} FcGemmMatrix;
void fc_gemm_pack_a_rowmajor(FcKernel *k, void *user, LLVMValueRef dst, LLVMValueRef i0, LLVMValueRef k0, LLVMValueRef kc);
void fc_gemm_pack_b_rowmajor(FcKernel *k, void *user, LLVMValueRef dst, LLVMValueRef j0, LLVMValueRef k0, LLVMValueRef kc);

/* Packs rows [m0, m0 + rows) of a run-time A (i64 values), every panel and all of K, into dst in the
 * block-local packed layout (FcGemmOperand.block_local: panels numbered from m0), through `pack` (an A
 * packer such as fc_gemm_pack_a_rowmajor, or any function with its contract). For kernels that pack a
 * block's A once and keep it for several column blocks. */
void fc_gemm_pack_a_block(FcKernel *k, const FcGemmArch *g,
                          void (*pack)(FcKernel *k, void *user, LLVMValueRef dst, LLVMValueRef i0, LLVMValueRef k0, LLVMValueRef kc),
                          void *user, LLVMValueRef dst, LLVMValueRef m0, LLVMValueRef rows, int64_t K);

/* The op's fused epilogue (cg_epilogue.h) as the block's finishing functions: C's row m of the block is
 * result row row0 + m of `out` (row0: the batch item's first row). fe must outlive the emission. */
struct FcCgEpilogue;
typedef struct FcGemmEpilogue {
  struct FcCgEpilogue *e;
  LLVMValueRef out, row0;
} FcGemmEpilogue;
void fc_gemm_use_epilogue(FcGemmBlock *t, FcGemmEpilogue *fe);

/* The block outer iteration `it` (i64) computes when a product is cut into batch × mblocks × nblocks
 * blocks, N fastest: returns its batch item; *mb (unless NULL) and *nb get its M- and N-block indices. */
LLVMValueRef fc_gemm_block_of(FcKernel *k, LLVMValueRef it, int64_t mblocks, int64_t nblocks, LLVMValueRef *mb,
                              LLVMValueRef *nb);

/* Scratch bytes one task needs for the run-time packed operands of `t`. */
int64_t fc_gemm_block_scratch_bytes(const FcGemmBlock *t);
/* Emits the block of C starting at (m0, n0) (i64 values, multiples of mr / nr; the block is clipped to
 * the matrix). */
void fc_gemm_emit_block(FcKernel *k, const FcGemmBlock *t, LLVMValueRef m0, LLVMValueRef n0);
/* Block sizes for an M × N product: balanced so the blocks are even, and small enough that batch ×
 * blocks gives at least `min_tasks` tasks where the matrix allows. With a_packed_per_task (A packed at
 * run time, B a constant) a block spans all of N and M is split (at most the arch's mc per block);
 * otherwise a block spans all of M and at most nc columns, and further tasks split N or M, whichever
 * re-reads less: A (M·K) per N-block or B (K·N · b_weight) per M-block. b_weight: the relative cost of
 * B per element, 1 when B is read in place or constant, more when each task gathers it (im2col). */
void fc_gemm_choose_blocks(const FcGemmArch *g, int64_t batch, int64_t M, int64_t N, int64_t min_tasks,
                           bool a_packed_per_task, int64_t b_weight, int64_t *mc, int64_t *nc);
/* Packs a constant f32 matrix (count matrices of rows × cols, each contiguous, element (r, c) at r * rs
 * + c * cs within a matrix of `stride` floats: the data of constant `src`) on the host as A (as_a) or B and
 * returns the global (fc_cg_const_f32: stored as src says). */
LLVMValueRef fc_gemm_const_packed(FcKernel *k, const FcGemmArch *g, bool as_a, const FcValue *src, const float *data,
                                  int64_t count, int64_t stride, int64_t rows, int64_t cols, int64_t rs, int64_t cs);
