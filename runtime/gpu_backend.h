/* gpu_backend.h — the devices a model's GPU half runs on, behind one table of functions (ggml's backends):
 * the runner (gpu.c) never branches on which device it has.
 *
 *   frt_gpu_cuda  (gpu_cuda.c)  an NVIDIA GPU through the CUDA driver API; libcuda.so.1 is loaded with dlopen,
 *                               so a program that never opens a GPU needs no CUDA library;
 *   frt_gpu_simt  (gpu_simt.c)  the SIMT host emulator: host-compiled copies of the kernels
 *                               (FrtGpuModel.host_kernels) run block by block, the threads of a block as fibers
 *                               that switch at barriers and warp shuffles, in an order that tests vary
 *                               ($FLOWRT_SIMT_SCHEDULE), so a missing barrier changes the result.
 *
 * Device memory is named by a 64-bit address (a CUdeviceptr; a host pointer for the emulator). Every
 * function returns FRT_OK or fills err with one line naming what failed ("cuMemAlloc of 123 bytes: out of
 * memory"); launch errors name the launch's node (FrtGpuModel.kernel_names[l->node]).
 */
#ifndef FLOWRT_GPU_BACKEND_H
#define FLOWRT_GPU_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "flowrt.h"

typedef struct FrtGpuBackend {
  const char *name; /* "cuda", "simt" */
  /* Starts the device for gm and keeps what its launches need (CUDA: driver, first device, context, the
   * module JIT-compiled from gm->ptx, one function per launch); *dev is the backend's state. */
  FrtStatus (*open)(const FrtGpuModel *gm, void **dev, FrtError *err);
  /* "NVIDIA H200 (sm_90, 139 GiB)", "SIMT host emulator": for the line that says where a model runs. */
  const char *(*device_name)(void *dev);
  FrtStatus (*alloc)(void *dev, uint64_t bytes, uint64_t *addr, FrtError *err);
  void (*release)(void *dev, uint64_t addr);
  FrtStatus (*upload)(void *dev, uint64_t dst, const void *src, uint64_t bytes, FrtError *err);
  FrtStatus (*download)(void *dev, void *dst, uint64_t src, uint64_t bytes, FrtError *err);
  FrtStatus (*zero)(void *dev, uint64_t dst, uint64_t bytes, FrtError *err);
  /* Launch i of gm->launches (l), its parameters resolved to addresses (l->n_args of them); may return
   * before the kernel finishes (CUDA: queued on the device's stream). */
  FrtStatus (*launch)(void *dev, int32_t i, const FrtGpuLaunch *l, const uint64_t *args, FrtError *err);
  /* Copies height rows of width bytes between two device buffers (row r from src + r * src_pitch to dst +
   * r * dst_pitch), ordered after everything launched before it; the collective entries' re-layouts. */
  FrtStatus (*copy2d)(void *dev, uint64_t dst, uint64_t dst_pitch, uint64_t src, uint64_t src_pitch, uint64_t width,
                      uint64_t height, FrtError *err);
  /* Optional: the stream the launches are queued on (CUDA: a CUstream), on which the NCCL collectives
   * are queued too (frt_coll_nccl_set_stream); NULL: the launches have finished when launch returns. */
  void *(*stream)(void *dev);
  /* Waits for everything launched; a kernel's fault surfaces here or at the next call. */
  FrtStatus (*sync)(void *dev, FrtError *err);
  void (*close)(void *dev);
  /* Optional (NULL: the runner times each launch by the wall clock, waiting for it). While on, the backend
   * times every launch on the device (CUDA: an event before and after each); after the run's sync,
   * launch_seconds fills seconds[i] with launch i's time in that run. */
  FrtStatus (*set_timing)(void *dev, bool on, FrtError *err);
  FrtStatus (*launch_seconds)(void *dev, double *seconds, FrtError *err);
  /* Optional (NULL: every run queues its launches one by one). graph_capture records every launch of
   * gm->launches, args resolved as for launch (all of them, launch after launch), as one replayable graph
   * without running them (CUDA: stream capture, instantiated); an error means no graph, and the runner
   * launches one by one, as without these entries (the error is not the user's). graph_launch then queues
   * the whole run's launches at once. The runner captures once, at open, and does not use the graph while
   * profiling (per-launch timers need the launches one by one). */
  FrtStatus (*graph_capture)(void *dev, const uint64_t *args, FrtError *err);
  FrtStatus (*graph_launch)(void *dev, FrtError *err);
} FrtGpuBackend;

extern const FrtGpuBackend frt_gpu_cuda;
extern const FrtGpuBackend frt_gpu_simt;

/* frt_gpu_open on a given backend (gpu.c): the tests run the runner over a table of their own. `device`
 * says which code the backend needs (FRT_DEVICE_CUDA: gm->ptx; FRT_DEVICE_SIMT: gm->host_kernels). */
FrtStatus frt_gpu_open_backend(const FrtModel *m, const FrtGpuBackend *be, FrtDevice device,
                               FrtGpuSession **out, FrtError *err);

#endif /* FLOWRT_GPU_BACKEND_H */
