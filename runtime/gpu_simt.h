/* gpu_simt.h — what host-compiled GPU kernels (the SIMT host backend's) see of the emulator: the calling
 * thread's indices, its block's shared memory, and the calls that stand for barriers and warp shuffles.
 *
 * codegen/gpu_builder.c emits the same kernel body for NVPTX and for the host; on the host every read of a
 * thread or block index is a load from FrtSimtThread (the offsets below are part of the contract: the
 * generated code reads them directly), __syncthreads() is a call of frt_simt_barrier and a shuffle a call of
 * frt_simt_shfl_*. Blocks have at most FRT_SIMT_MAX_THREADS threads; warps are 32 consecutive threads in
 * x-fastest order, as on NVIDIA GPUs.
 *
 * Scheduling (runtime/gpu_simt.c): the threads of a block run one at a time on fibers; each runs until it
 * reaches a barrier (or a shuffle, which synchronises its warp), then the next runs. The order in which
 * threads are resumed between two synchronisation points is $FLOWRT_SIMT_SCHEDULE: `forward` (thread 0
 * first, the default), `reverse`, or `random[:SEED]` (a fresh permutation each time); a kernel whose result
 * depends on it has a race. Blocks run one after the other, in forward or reverse order to match.
 */
#ifndef FLOWRT_GPU_SIMT_H
#define FLOWRT_GPU_SIMT_H

#include <stddef.h>
#include <stdint.h>

#define FRT_SIMT_MAX_THREADS 1024
#define FRT_SIMT_WARP 32

typedef struct FrtSimtThread {
  uint32_t tid[3];  /* offset 0: threadIdx.x, .y, .z */
  uint32_t bid[3];  /* offset 12: blockIdx.x, .y, .z */
  void *shared;     /* offset 24: the block's shared memory (FrtGpuLaunch.shared_bytes, 16-byte aligned;
                       filled with 0xff bytes before each block, a NaN or -1, so a kernel that reads what it
                       never wrote gets garbage, as on a GPU) */
  void *emu;        /* the emulator's own state */
  uint32_t linear;  /* the thread's index in its block, x fastest */
} FrtSimtThread;

_Static_assert(offsetof(FrtSimtThread, tid) == 0, "codegen reads tid at offset 0");
_Static_assert(offsetof(FrtSimtThread, bid) == 12, "codegen reads bid at offset 12");
_Static_assert(offsetof(FrtSimtThread, shared) == 24, "codegen reads shared at offset 24");

/* __syncthreads(): returns when every thread of the block has called it (a thread that returns from the
 * kernel without reaching it is an error the emulator reports as a deadlock). */
void frt_simt_barrier(FrtSimtThread *t);

/* Warp shuffles over the 32 lanes of the caller's warp (every lane of it calls, as __shfl_*_sync with a
 * full mask): the value of lane `src` (idx), lane + delta (down; its own value past the last lane),
 * lane - delta (up; its own before lane 0) or lane ^ mask (xor). */
enum { FRT_SIMT_SHFL_IDX = 0, FRT_SIMT_SHFL_DOWN = 1, FRT_SIMT_SHFL_UP = 2, FRT_SIMT_SHFL_XOR = 3 };
float frt_simt_shfl_f32(FrtSimtThread *t, float v, int32_t mode, int32_t operand);
int32_t frt_simt_shfl_i32(FrtSimtThread *t, int32_t v, int32_t mode, int32_t operand);

/* Tensor-core mma.sync.aligned.row.col with f32 accumulation, warp-collective like the shuffles (every lane of
 * the warp calls it with the same kind; the warp's product is computed once all 32 have arrived): cd = A·B + cd
 * for the 16 x 8 tile whose operands are spread over the lanes' registers exactly as the PTX ISA's fragment
 * layouts say (groupID = lane / 4, tig = lane % 4):
 *   F16, BF16 (m16n8k16): a[4] hold two 16-bit values each (low half first): a[0] = A[g][2t, 2t+1],
 *     a[1] = A[g+8][2t, 2t+1], a[2] = A[g][2t+8, 2t+9], a[3] = A[g+8][2t+8, 2t+9]; b[0] = B[2t, 2t+1][g],
 *     b[1] = B[2t+8, 2t+9][g];
 *   TF32 (m16n8k8): one value each, the f32 bit pattern whose low 13 bits are ignored: a[0] = A[g][t],
 *     a[1] = A[g+8][t], a[2] = A[g][t+4], a[3] = A[g+8][t+4]; b[0] = B[t][g], b[1] = B[t+4][g];
 *   cd (all kinds): cd[0] = C[g][2t], cd[1] = C[g][2t+1], cd[2] = C[g+8][2t], cd[3] = C[g+8][2t+1].
 * Products are exact and summed in double, then rounded to f32 once (a GPU's order and rounding of the sum
 * differ within f32's precision). */
enum { FRT_SIMT_MMA_F16 = 0, FRT_SIMT_MMA_BF16 = 1, FRT_SIMT_MMA_TF32 = 2 };
void frt_simt_mma(FrtSimtThread *t, int32_t kind, const uint32_t *a, const uint32_t *b, float *cd);

#endif /* FLOWRT_GPU_SIMT_H */
