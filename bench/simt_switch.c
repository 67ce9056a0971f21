/* simt_switch.c — how fast the SIMT host emulator (runtime/gpu_simt.c) switches between a block's threads.
 *
 * Three kernels, launched through frt_gpu_simt as the runner does: K barriers in a loop, K xor shuffles in
 * a loop (both FRT_GPU_SYNC: every thread is a fiber) and a plain kernel (no FRT_GPU_SYNC: one call per
 * thread, no fibers). A "stop" is one thread reaching a barrier, a shuffle or its end; each costs one fiber
 * switch (a waiting thread hands the CPU straight to the next), plus one per pass back to the scheduler.
 * Each case is launched once to warm up (stacks mapped, memory grown), then timed once: a probe, not a
 * benchmark with statistics.
 *
 * Build (against the uninstrumented runtime of any build folder):
 *   cc -O2 -D_GNU_SOURCE -Iruntime bench/simt_switch.c BUILD/runtime/libflowrt.a -lm -pthread -o simt_switch
 *   ./simt_switch; FLOWRT_SIMT_FIBERS=ucontext ./simt_switch
 * Under ASan: add -fsanitize=address,undefined and link BUILD/runtime/libflowrt_host.a of a sanitizer build.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "flowrt.h"
#include "gpu_backend.h"
#include "gpu_simt.h"

enum { K = 200 };

static void k_barriers(void *thr, void *const *args) {
  FrtSimtThread *t = thr;
  for (int i = 0; i < K; i++)
    frt_simt_barrier(t);
}

static void k_shuffles(void *thr, void *const *args) {
  FrtSimtThread *t = thr;
  uint32_t v = t->linear;
  for (int i = 0; i < K; i++)
    v += (uint32_t)frt_simt_shfl_i32(t, (int32_t)v, FRT_SIMT_SHFL_XOR, i & 31);
  ((uint32_t *)args[0])[t->linear] = v;
}

static void k_plain(void *thr, void *const *args) {
  FrtSimtThread *t = thr;
  ((uint32_t *)args[0])[t->linear] += t->bid[0];
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void probe(const char *name, FrtSimtKernelFn fn, uint32_t blocks, uint32_t threads, uint32_t flags,
                  double stops_per_thread) {
  FrtGpuLaunch l = {.kernel = name, .grid = {blocks, 1, 1}, .block = {threads, 1, 1}, .flags = flags, .n_args = 1};
  FrtSimtKernelFn fns[] = {fn};
  const char *names[] = {name};
  FrtGpuModel gm = {.n_launches = 1, .launches = &l, .n_kernels = 1, .kernel_names = names, .host_kernels = fns};
  void *dev;
  uint64_t buf;
  FrtError err = {0};
  if (frt_gpu_simt.open(&gm, &dev, &err) != FRT_OK || frt_gpu_simt.alloc(dev, 4096, &buf, &err) != FRT_OK ||
      frt_gpu_simt.zero(dev, buf, 4096, &err) != FRT_OK || frt_gpu_simt.launch(dev, 0, &l, &buf, &err) != FRT_OK) {
    fprintf(stderr, "%s: %s\n", name, err.msg);
    exit(1);
  }
  double t0 = now();
  if (frt_gpu_simt.launch(dev, 0, &l, &buf, &err) != FRT_OK) {
    fprintf(stderr, "%s: %s\n", name, err.msg);
    exit(1);
  }
  double dt = now() - t0, stops = (double)blocks * threads * stops_per_thread;
  printf("%-28s %7.3f s  %7.1f M stops/s  %6.1f ns a stop\n", name, dt, stops / dt / 1e6, dt / stops * 1e9);
  frt_gpu_simt.close(dev);
}

int main(void) {
  const char *f = getenv("FLOWRT_SIMT_FIBERS");
  printf("fibers: %s\n", f && *f ? f : "native");
  probe("barriers, 20 x 1024 threads", k_barriers, 20, 1024, FRT_GPU_SYNC, K + 1);
  probe("barriers, 640 x 32 threads", k_barriers, 640, 32, FRT_GPU_SYNC, K + 1);
  probe("shuffles, 20 x 1024 threads", k_shuffles, 20, 1024, FRT_GPU_SYNC, K + 1);
  probe("plain, 20000 x 1024 threads", k_plain, 20000, 1024, 0, 1);
  return 0;
}
