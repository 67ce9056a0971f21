/* gpu_coll_check.c — the GPU runner's collective entries (FrtGpuLaunch.coll, runtime/gpu.c) run for real:
 * a hand-made GPU model on the SIMT emulator, its boxing ops executed by the runner through the MPI
 * backend on the emulator's (host) device memory, on 2 ranks under mpirun (tests/runtime/mpi.sh, mode
 * gpu-coll). The table is what codegen/gpu_module.c lays out for an SBP program: kernels and collective
 * entries in one order, re-layouts through scratch at the workspace's end.
 *
 * x [4, 6] f32 (whole on every rank), r = this rank of 2:
 *   kernel    A = x * (r + 1)                 (partial sums: a P tensor)
 *   all_reduce(sum)  A -> B = 3x
 *   local_slice dim 1    B -> C [4, 3] = B[:, 3r : 3r + 3]     (4 rows: a strided copy)
 *   all_gather dim 1     C -> D [4, 6] = B                       (received into scratch, spread)
 *   reduce_scatter dim 1 D -> E [4, 3] = 2 B[:, 3r : 3r + 3]    (packed into scratch first)
 *   all_to_all split 0, concat 1  E -> F [2, 6] = 2 B[2r : 2r + 2, :]  (received into scratch, spread)
 *   all_gather dim 0     F -> output 0 [4, 6] = 2 B = 6x      (contiguous)
 *   all_reduce(max)  A -> output 1 = 2x        (x > 0)
 * Every rank checks both outputs exactly (small integers: every order of summing gives the same floats)
 * and prints "rank K: GPU collectives passed". `gpu_coll_check 1` runs alone (no mpirun): opening the
 * model must refuse, naming the group of 2 the table needs, and a malformed entry must be refused too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowrt_internal.h"
#include "gpu_backend.h"
#include "gpu_simt.h"

#define R 4
#define C 6
#define N (R * C)

/* The kernel of launch 0: A[i] = x[i] * (rank + 1), one thread an element. */
static void scale_kernel(void *thread, void *const *args) {
  const FrtSimtThread *t = thread;
  uint32_t i = t->tid[0];
  if (i < N)
    ((float *)args[1])[i] = ((const float *)args[0])[i] * (float)(frt_coll_rank(-1) + 1);
}

static const int64_t x_dims[2] = {R, C};
static const FrtTensorDesc inputs[1] = {{"x", FRT_F32, 2, x_dims}};
static const FrtTensorDesc outputs[2] = {{"y", FRT_F32, 2, x_dims}, {"m", FRT_F32, 2, x_dims}};

/* Workspace offsets: the status word's 64 bytes, then A..F, then the collectives' scratch. */
enum { A = 64, B = 192, CC = 320, D = 384, E = 512, F = 576, SCRATCH = 640, WORKSPACE = 768 };

#define WS(off) {FRT_GPU_ARG_WORKSPACE, 0, (off)}
static const FrtGpuArg scale_args[3] = {{FRT_GPU_ARG_INPUT, 0, 0}, WS(A), WS(0)};
static const FrtGpuArg ar_args[3] = {WS(A), WS(B), WS(SCRATCH)};
static const FrtGpuArg ls_args[3] = {WS(B), WS(CC), WS(SCRATCH)};
static const FrtGpuArg ag_args[3] = {WS(CC), WS(D), WS(SCRATCH)};
static const FrtGpuArg rs_args[3] = {WS(D), WS(E), WS(SCRATCH)};
static const FrtGpuArg a2a_args[3] = {WS(E), WS(F), WS(SCRATCH)};
static const FrtGpuArg out_args[3] = {WS(F), {FRT_GPU_ARG_OUTPUT, 0, 0}, WS(SCRATCH)};
static const FrtGpuArg max_args[3] = {WS(A), {FRT_GPU_ARG_OUTPUT, 1, 0}, WS(SCRATCH)};

#define COLL(name, node, kind, args, op, send_rows, recv_rows, count)                                            \
  {name, node, {1, 1, 1}, {1, 1, 1}, 0, 0, 3, args, kind, -1, 2, FRT_F32, op, send_rows, recv_rows, count}

static FrtGpuLaunch launches[8] = {
    {"scale", 0, {1, 1, 1}, {32, 1, 1}, 0, 0, 3, scale_args, FRT_GPU_COLL_NONE, 0, 0, 0, 0, 0, 0, 0},
    COLL("all_reduce", 1, FRT_GPU_COLL_ALL_REDUCE, ar_args, FRT_REDUCE_SUM, 1, 1, N),
    COLL("local_slice", 2, FRT_GPU_COLL_LOCAL_SLICE, ls_args, 0, R, 1, N / 2),
    COLL("all_gather", 3, FRT_GPU_COLL_ALL_GATHER, ag_args, 0, 1, R, N / 2),
    COLL("reduce_scatter", 4, FRT_GPU_COLL_REDUCE_SCATTER, rs_args, FRT_REDUCE_SUM, R, 1, N / 2),
    COLL("all_to_all", 5, FRT_GPU_COLL_ALL_TO_ALL, a2a_args, 0, 1, 2, N / 4),
    COLL("all_gather", 6, FRT_GPU_COLL_ALL_GATHER, out_args, 0, 1, 1, N / 2),
    COLL("all_reduce", 7, FRT_GPU_COLL_ALL_REDUCE, max_args, FRT_REDUCE_MAX, 1, 1, N),
};
static const FrtSimtKernelFn host_kernels[8] = {scale_kernel};
static const char *const names[8] = {"node 'scale' (test)",       "node 'ar' (flow.all_reduce)",
                                     "node 'ls' (flow.local_slice)", "node 'ag' (flow.all_gather)",
                                     "node 'rs' (flow.reduce_scatter)", "node 'a2a' (flow.all_to_all)",
                                     "node 'out' (flow.all_gather)", "node 'max' (flow.all_reduce)"};
static const FrtGpuModel gpu = {"simt", NULL, NULL, 0, WORKSPACE, 8, launches, 8, names, host_kernels};
static const FrtModel model = {.abi_version = FRT_ABI_VERSION, .name = "gpu_coll_check", .n_inputs = 1,
                               .n_outputs = 2, .inputs = inputs, .outputs = outputs, .workspace_size = 0,
                               .n_ranks = 2, .gpu = &gpu, .rank = -1};

static int alone(void) {
  FrtGpuSession *s = NULL;
  FrtError err = {0};
  int bad = 0;
  if (frt_gpu_open_backend(&model, &frt_gpu_simt, FRT_DEVICE_SIMT, &s, &err) == FRT_OK ||
      !strstr(err.msg, "runs over a group of 2 ranks")) {
    printf("FAIL: opened without ranks, or said: %s\n", err.msg);
    bad++;
  }
  frt_gpu_close(s);
  launches[4].count = N; /* reduce_scatter's source would need 2N elements: past D's end into the scratch */
  launches[4].args = (const FrtGpuArg[3]){WS(SCRATCH), WS(E), WS(SCRATCH)};
  if (frt_gpu_open_backend(&model, &frt_gpu_simt, FRT_DEVICE_SIMT, &s, &err) == FRT_OK ||
      !strstr(err.msg, "malformed GPU code") || !strstr(err.msg, "source needs 192 bytes")) {
    printf("FAIL: a reduce_scatter reading past the workspace opened, or said: %s\n", err.msg);
    bad++;
  }
  frt_gpu_close(s);
  if (!bad)
    printf("GPU collectives refused alone\n");
  return bad != 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "1") == 0)
    return alone();
  FrtError err = {0};
  if (frt_coll_init(2, 0, NULL, &err) != FRT_OK) {
    printf("FAIL: %s\n", err.msg);
    frt_coll_finalize();
    return 1;
  }
  int rank = (int)frt_coll_rank(-1), bad = 0;
  static float x[N], y[N], mx[N];
  for (int i = 0; i < N; i++)
    x[i] = (float)(i + 1);
  FrtGpuSession *s = NULL;
  const void *ins[1] = {x};
  void *outs[2] = {y, mx};
  if (frt_gpu_open_backend(&model, &frt_gpu_simt, FRT_DEVICE_SIMT, &s, &err) != FRT_OK ||
      frt_gpu_run(s, ins, outs, &err) != FRT_OK) {
    printf("rank %d: FAIL: %s\n", rank, err.msg);
    bad++;
  }
  for (int i = 0; i < N && !bad; i++)
    if (y[i] != 6 * x[i] || mx[i] != 2 * x[i]) {
      printf("rank %d: FAIL: element %d: y %g (want %g), max %g (want %g)\n", rank, i, y[i], 6 * x[i], mx[i],
             2 * x[i]);
      bad++;
    }
  frt_gpu_close(s);
  if (!bad)
    printf("rank %d: GPU collectives passed\n", rank);
  frt_coll_finalize();
  return bad != 0;
}
