/* gpu_simt.c — the SIMT host emulator (frt_gpu_simt): a model's GPU kernels, compiled for the host
 * (FrtGpuModel.host_kernels), run on the CPU one block after another, so their indexing, tiling, barriers and
 * warp shuffles are checked against the CPU kernels on machines without a GPU (POCL's and CuPBoP's approach).
 *
 * Device memory is host memory: an allocation is a 64-byte aligned block behind a 64-byte header that links
 * it into the device's list, so copies and frees of addresses the device never handed out are refused
 * instead of corrupting the heap; upload, download and zero are memcpy and memset; launches run to the end
 * before they return, so sync has nothing to wait for.
 *
 * A launch without FRT_GPU_SYNC calls the kernel once per thread, block by block, in schedule order: no
 * fibers, nothing to switch. With it, every thread of a block is a fiber (gpu_simt_fiber.c) and the
 * scheduler below runs in passes: each pass resumes every runnable thread once, in schedule order, and each
 * runs until it reaches a barrier, a shuffle or its end, then switches straight to the next (one switch
 * per thread, not two through the scheduler). After the pass, a warp whose 32 lanes all wait at a
 * shuffle gets its results (computed for all 32 lanes at once, from the values they deposited, before any of
 * them runs on, so no lane can see a value of the next shuffle; a tensor-core mma is answered the same way,
 * gpu_simt_mma.c computing the warp's product from the fragments its lanes offer), and a block whose threads all wait at a
 * barrier is released. A pass that frees nobody is a deadlock: a thread returned while its block waits at a
 * barrier (or its warp at a shuffle), or the waiting threads wait at different barriers or shuffles
 * (divergent code); the launch stops with a message naming the threads. Every thread counts its barriers
 * and shuffles, so "different" is by count as well as by kind.
 *
 * The order is $FLOWRT_SIMT_SCHEDULE: forward (thread 0 first; the default), reverse, or random[:SEED] (a
 * fresh permutation at every pass, from a splitmix64 generator seeded with SEED, 1 by default, so a failing
 * run can be repeated). Blocks run forward, reverse, or (random) one of the two by a coin flip per launch.
 * A kernel whose result changes with the order has a race: a missing barrier shows up as a test failure.
 *
 * Everything a launch needs (shared memory, per-thread state, argument pointers, fiber stacks) is kept in
 * the device state and grown to the largest launch seen, never allocated per block. Shared memory is filled
 * with 0xff bytes before each block (gpu_simt.h).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowrt_internal.h"
#include "gpu_backend.h"
#include "gpu_simt.h"

/* CUDA's limits, so a launch the emulator accepts also launches on a GPU. */
#define SIMT_MAX_GRID_X 2147483647u
#define SIMT_MAX_GRID_YZ 65535u
#define SIMT_MAX_BLOCK_Z 64u
#define SIMT_MAX_STATIC_SHARED 49152u

enum { SCHED_FORWARD, SCHED_REVERSE, SCHED_RANDOM };
enum { LANE_RUNNABLE, LANE_BARRIER, LANE_SHUFFLE, LANE_DONE };

typedef struct SimtLane {
  FrtSimtThread t;   /* first, so the kernel's thread pointer is the lane's */
  uint8_t state;     /* LANE_* */
  uint32_t barriers; /* barriers reached in this block */
  uint32_t shuffles; /* shuffles reached in this block */
  int32_t mode;      /* the pending shuffle's FRT_SIMT_SHFL_* */
  int32_t operand;   /* ... its source lane, delta or mask */
  uint32_t value;    /* ... the value this lane offers */
  uint32_t result;   /* ... the value it gets */
  const uint32_t *mma_a, *mma_b; /* a pending mma (mode MMA_MODE + kind): the lane's fragments */
  float *mma_cd;
} SimtLane;

/* A lane's pending warp-collective call is a shuffle (mode FRT_SIMT_SHFL_*) or an mma (MMA_MODE + kind). */
enum { MMA_MODE = 16 };

/* The header in front of every device allocation. */
typedef struct SimtBuffer {
  struct SimtBuffer *prev, *next;
  uint64_t bytes;
} SimtBuffer;
#define SIMT_HEADER FRT_ALIGN
_Static_assert(sizeof(SimtBuffer) <= SIMT_HEADER, "the header fits in front of an aligned allocation");

typedef struct SimtDevice {
  const FrtGpuModel *gm;
  int schedule;          /* SCHED_* */
  uint64_t rng;          /* splitmix64 state */
  SimtBuffer buffers;    /* list head of the live allocations */
  /* Grown to the largest launch: */
  void **args;
  int32_t args_cap;
  unsigned char *shared; /* 16-byte aligned (FRT_ALIGN) */
  uint32_t shared_cap;
  SimtLane *lanes;
  uint32_t *order;       /* a pass's permutation (random) */
  uint32_t *arrived;     /* per warp: lanes waiting at a shuffle */
  int32_t lanes_cap;
  FrtFiberPool fibers;
  /* The launch in progress: */
  FrtSimtKernelFn kernel;
  const FrtGpuLaunch *launch;
  bool fibered;          /* its threads are fibers (FRT_GPU_SYNC) */
  int32_t n_threads;
  int32_t at_barrier;    /* threads of the block waiting at a barrier */
  int32_t done;          /* threads of the block that returned */
  int32_t pass_at;       /* the pass's next position in schedule order */
  bool fault;            /* the launch must stop: fault_msg says why */
  FrtStatus fault_status;
  char fault_msg[400];
} SimtDevice;

static uint64_t rng_next(SimtDevice *d) {
  uint64_t z = (d->rng += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* A uniform index below n (n <= 2^32). */
static uint32_t rng_below(SimtDevice *d, uint32_t n) { return (uint32_t)(((rng_next(d) >> 32) * n) >> 32); }

static void fault(SimtDevice *d, FrtStatus st, const char *fmt, ...) FRT_PRINTF(3, 4);
static void fault(SimtDevice *d, FrtStatus st, const char *fmt, ...) {
  if (d->fault)
    return; /* the first reason is the one to report */
  d->fault = true;
  d->fault_status = st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->fault_msg, sizeof d->fault_msg, fmt, ap);
  va_end(ap);
}

/* "kernel conv_3 (node 'conv1' (Conv))": how launch errors start. */
static void describe(const SimtDevice *d, const FrtGpuLaunch *l, char *buf, size_t cap) {
  const FrtGpuModel *gm = d->gm;
  const char *k = l->kernel ? l->kernel : "?";
  if (gm->kernel_names && l->node >= 0 && l->node < gm->n_kernels && gm->kernel_names[l->node])
    snprintf(buf, cap, "kernel %s (%s)", k, gm->kernel_names[l->node]);
  else
    snprintf(buf, cap, "kernel %s (node %d)", k, (int)l->node);
}

/* "(3,0,0)" for thread or block indices. */
static const char *xyz(char *buf, size_t cap, const uint32_t v[3]) {
  snprintf(buf, cap, "(%" PRIu32 ",%" PRIu32 ",%" PRIu32 ")", v[0], v[1], v[2]);
  return buf;
}

/* ---- device memory ---------------------------------------------------------------------------------- */

static uint64_t address_of(SimtBuffer *b) { return (uint64_t)(uintptr_t)b + SIMT_HEADER; }

/* Whether [addr, addr + bytes) lies inside one live allocation. */
static bool inside_allocation(SimtDevice *d, uint64_t addr, uint64_t bytes) {
  for (SimtBuffer *b = d->buffers.next; b != &d->buffers; b = b->next) {
    uint64_t base = address_of(b);
    if (addr >= base && addr - base <= b->bytes && bytes <= b->bytes - (addr - base))
      return true;
  }
  return false;
}

static FrtStatus simt_alloc(void *dev, uint64_t bytes, uint64_t *addr, FrtError *err) {
  SimtDevice *d = dev;
  size_t total;
  if (bytes > SIZE_MAX || frt_add_overflows((size_t)bytes, SIMT_HEADER, &total))
    return frt_errorf(err, FRT_ERR_RESOURCE, "device allocation of %" PRIu64 " bytes: too large", bytes);
  SimtBuffer *b = frt_alloc_aligned(total);
  if (!b)
    return frt_errorf(err, FRT_ERR_RESOURCE, "device allocation of %" PRIu64 " bytes: out of memory", bytes);
  b->bytes = bytes;
  b->prev = &d->buffers;
  b->next = d->buffers.next;
  b->next->prev = b;
  d->buffers.next = b;
  *addr = address_of(b);
  return FRT_OK;
}

static void simt_release(void *dev, uint64_t addr) {
  SimtDevice *d = dev;
  for (SimtBuffer *b = d->buffers.next; b != &d->buffers; b = b->next) {
    if (address_of(b) == addr) {
      b->prev->next = b->next;
      b->next->prev = b->prev;
      free(b);
      return;
    }
  }
}

static FrtStatus simt_upload(void *dev, uint64_t dst, const void *src, uint64_t bytes, FrtError *err) {
  if (!inside_allocation(dev, dst, bytes))
    return frt_errorf(err, FRT_ERR_INPUT,
                      "upload of %" PRIu64 " bytes to 0x%" PRIx64 ": not inside a device allocation", bytes, dst);
  if (bytes)
    memcpy((void *)(uintptr_t)dst, src, (size_t)bytes);
  return FRT_OK;
}

static FrtStatus simt_download(void *dev, void *dst, uint64_t src, uint64_t bytes, FrtError *err) {
  if (!inside_allocation(dev, src, bytes))
    return frt_errorf(err, FRT_ERR_INPUT,
                      "download of %" PRIu64 " bytes from 0x%" PRIx64 ": not inside a device allocation", bytes, src);
  if (bytes)
    memcpy(dst, (const void *)(uintptr_t)src, (size_t)bytes);
  return FRT_OK;
}

static FrtStatus simt_zero(void *dev, uint64_t dst, uint64_t bytes, FrtError *err) {
  if (!inside_allocation(dev, dst, bytes))
    return frt_errorf(err, FRT_ERR_INPUT, "zeroing %" PRIu64 " bytes at 0x%" PRIx64 ": not inside a device allocation",
                      bytes, dst);
  if (bytes)
    memset((void *)(uintptr_t)dst, 0, (size_t)bytes);
  return FRT_OK;
}

/* The rows are checked as one span from the first row's start to the last row's end (pitches may exceed
 * the width, never overlap backwards: both are the tables' re-layouts of one tensor). */
static bool span_inside(SimtDevice *d, uint64_t base, uint64_t pitch, uint64_t width, uint64_t height) {
  if (height == 0 || width == 0)
    return true;
  uint64_t last;
  if (__builtin_mul_overflow(height - 1, pitch, &last) || __builtin_add_overflow(last, width, &last))
    return false;
  return inside_allocation(d, base, last);
}

static FrtStatus simt_copy2d(void *dev, uint64_t dst, uint64_t dst_pitch, uint64_t src, uint64_t src_pitch,
                             uint64_t width, uint64_t height, FrtError *err) {
  if (!span_inside(dev, dst, dst_pitch, width, height) || !span_inside(dev, src, src_pitch, width, height))
    return frt_errorf(err, FRT_ERR_INPUT,
                      "copying %" PRIu64 " rows of %" PRIu64 " bytes from 0x%" PRIx64 " to 0x%" PRIx64
                      ": not inside a device allocation",
                      height, width, src, dst);
  for (uint64_t r = 0; r < height && width; r++)
    memmove((void *)(uintptr_t)(dst + r * dst_pitch), (const void *)(uintptr_t)(src + r * src_pitch), (size_t)width);
  return FRT_OK;
}

/* ---- barriers and shuffles (called by the kernels) -------------------------------------------------- */

static void hand_on(SimtDevice *d);

void frt_simt_barrier(FrtSimtThread *t) {
  SimtDevice *d = t->emu;
  SimtLane *ln = (SimtLane *)t;
  char b[48];
  if (!d->fibered) {
    fault(d, FRT_ERR_INPUT, "thread %s calls a barrier, but its launch lacks FRT_GPU_SYNC",
          xyz(b, sizeof b, t->tid));
    return;
  }
  ln->state = LANE_BARRIER;
  ln->barriers++;
  d->at_barrier++;
  hand_on(d);
}

static uint32_t shuffle(FrtSimtThread *t, uint32_t v, int32_t mode, int32_t operand) {
  SimtDevice *d = t->emu;
  SimtLane *ln = (SimtLane *)t;
  char b[48];
  if (mode < FRT_SIMT_SHFL_IDX || mode > FRT_SIMT_SHFL_XOR) {
    fault(d, FRT_ERR_INPUT, "thread %s shuffles with mode %d", xyz(b, sizeof b, t->tid), (int)mode);
    return v;
  }
  if (!d->fibered) {
    fault(d, FRT_ERR_INPUT, "thread %s shuffles, but its launch lacks FRT_GPU_SYNC", xyz(b, sizeof b, t->tid));
    return v;
  }
  ln->value = v;
  ln->mode = mode;
  ln->operand = operand;
  ln->shuffles++;
  ln->state = LANE_SHUFFLE;
  d->arrived[t->linear / FRT_SIMT_WARP]++;
  hand_on(d);
  return ln->result;
}

float frt_simt_shfl_f32(FrtSimtThread *t, float v, int32_t mode, int32_t operand) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  bits = shuffle(t, bits, mode, operand);
  memcpy(&v, &bits, sizeof v);
  return v;
}

int32_t frt_simt_shfl_i32(FrtSimtThread *t, int32_t v, int32_t mode, int32_t operand) {
  return (int32_t)shuffle(t, (uint32_t)v, mode, operand);
}

void frt_simt_mma(FrtSimtThread *t, int32_t kind, const uint32_t *a, const uint32_t *b, float *cd) {
  SimtDevice *d = t->emu;
  SimtLane *ln = (SimtLane *)t;
  char buf[48];
  if (kind < FRT_SIMT_MMA_F16 || kind > FRT_SIMT_MMA_TF32) {
    fault(d, FRT_ERR_INPUT, "thread %s calls mma of kind %d", xyz(buf, sizeof buf, t->tid), (int)kind);
    return;
  }
  if (!d->fibered) {
    fault(d, FRT_ERR_INPUT, "thread %s calls mma, but its launch lacks FRT_GPU_SYNC", xyz(buf, sizeof buf, t->tid));
    return;
  }
  /* The fragments stay on the lane's fiber stack while it waits, so the warp's product can read and write them. */
  ln->mma_a = a;
  ln->mma_b = b;
  ln->mma_cd = cd;
  ln->mode = MMA_MODE + kind;
  ln->shuffles++;
  ln->state = LANE_SHUFFLE;
  d->arrived[t->linear / FRT_SIMT_WARP]++;
  hand_on(d);
}

/* The lane whose value `lane` gets, as PTX's shfl.sync does with a full warp: the operand's low 5 bits; a
 * source past the warp's end (down) or before its start (up) is the lane itself. */
static uint32_t shuffle_source(uint32_t lane, int32_t mode, int32_t operand) {
  uint32_t b = (uint32_t)operand & (FRT_SIMT_WARP - 1);
  switch (mode) {
  case FRT_SIMT_SHFL_DOWN: return lane + b < FRT_SIMT_WARP ? lane + b : lane;
  case FRT_SIMT_SHFL_UP: return lane >= b ? lane - b : lane;
  case FRT_SIMT_SHFL_XOR: return lane ^ b;
  default: return b;
  }
}

/* ---- the scheduler ---------------------------------------------------------------------------------- */

/* Every fiber's function: run the kernel as its lane's thread, report the end, wait for the next block. */
static void lane_fiber(void *ctx, int32_t i) {
  SimtDevice *d = ctx;
  for (;;) {
    SimtLane *ln = &d->lanes[i]; /* re-read: the lanes move when a larger launch grows them */
    d->kernel(&ln->t, d->args);
    ln->state = LANE_DONE;
    d->done++;
    hand_on(d);
  }
}

/* d->order = the threads in this pass's order: a fresh uniform permutation (Fisher-Yates). */
static void shuffle_order(SimtDevice *d, int32_t n) {
  for (int32_t k = 0; k < n; k++)
    d->order[k] = (uint32_t)k;
  for (int32_t k = n - 1; k > 0; k--) {
    uint32_t j = rng_below(d, (uint32_t)k + 1);
    uint32_t tmp = d->order[k];
    d->order[k] = d->order[j];
    d->order[j] = tmp;
  }
}

/* The k-th thread to run in this pass. */
static int32_t nth(const SimtDevice *d, int32_t n, int32_t k) {
  if (d->schedule == SCHED_FORWARD)
    return k;
  if (d->schedule == SCHED_REVERSE)
    return n - 1 - k;
  return (int32_t)d->order[k];
}

/* The next runnable thread of this pass, -1 at its end. */
static int32_t next_runnable(SimtDevice *d) {
  int32_t n = d->n_threads;
  while (d->pass_at < n) {
    int32_t i = nth(d, n, d->pass_at++);
    if (d->lanes[i].state == LANE_RUNNABLE)
      return i;
  }
  return -1;
}

/* The running thread stops (it waits or returned): the CPU goes straight to the pass's next runnable thread,
 * or back to the scheduler at the pass's end or when the launch must stop. */
static void hand_on(SimtDevice *d) {
  int32_t next = d->fault ? -1 : next_runnable(d);
  if (next >= 0)
    frt_fiber_switch(&d->fibers, next);
  else
    frt_fiber_yield(&d->fibers);
}

static void describe_wait(const SimtLane *ln, char *buf, size_t cap) {
  char b[48];
  if (ln->state == LANE_BARRIER)
    snprintf(buf, cap, "thread %s waits at barrier %" PRIu32, xyz(b, sizeof b, ln->t.tid), ln->barriers);
  else if (ln->state == LANE_SHUFFLE)
    snprintf(buf, cap, "thread %s waits at shuffle %" PRIu32, xyz(b, sizeof b, ln->t.tid), ln->shuffles);
  else
    snprintf(buf, cap, "thread %s returned", xyz(b, sizeof b, ln->t.tid));
}

/* a and b wait at different synchronisation points of the same block (or warp). */
static void fault_mismatch(SimtDevice *d, const SimtLane *a, const SimtLane *b) {
  char wa[96], wb[96], blk[48];
  describe_wait(a, wa, sizeof wa);
  describe_wait(b, wb, sizeof wb);
  fault(d, FRT_ERR_RESOURCE, "block %s deadlocks: %s while %s (a barrier or shuffle not every thread reaches)",
        xyz(blk, sizeof blk, a->t.bid), wa, wb);
}

/* Nothing is runnable and the block is not done: say why. */
static void fault_deadlock(SimtDevice *d, int32_t n) {
  SimtLane *lanes = d->lanes;
  const SimtLane *returned = NULL, *at_barrier = NULL;
  for (int32_t k = 0; k < n && !(returned && at_barrier); k++) {
    if (lanes[k].state == LANE_DONE && !returned)
      returned = &lanes[k];
    if (lanes[k].state == LANE_BARRIER && !at_barrier)
      at_barrier = &lanes[k];
  }
  char t[48], blk[48];
  if (returned && at_barrier) {
    fault(d, FRT_ERR_RESOURCE, "thread %s of block %s returned while its block waits at a barrier",
          xyz(t, sizeof t, returned->t.tid), xyz(blk, sizeof blk, returned->t.bid));
    return;
  }
  for (int32_t w = 0; w < n / FRT_SIMT_WARP; w++) {
    if (d->arrived[w] == 0)
      continue;
    for (int32_t l = 0; l < FRT_SIMT_WARP; l++) {
      const SimtLane *ln = &lanes[w * FRT_SIMT_WARP + l];
      if (ln->state == LANE_DONE) {
        fault(d, FRT_ERR_RESOURCE, "thread %s of block %s returned while its warp waits at a shuffle",
              xyz(t, sizeof t, ln->t.tid), xyz(blk, sizeof blk, ln->t.bid));
        return;
      }
    }
  }
  /* Every thread that has not returned waits, not all at the same point. */
  const SimtLane *first = NULL;
  for (int32_t k = 0; k < n; k++) {
    const SimtLane *ln = &lanes[k];
    if (ln->state == LANE_DONE)
      continue;
    if (!first) {
      first = ln;
    } else if (ln->state != first->state || ln->barriers != first->barriers || ln->shuffles != first->shuffles) {
      fault_mismatch(d, first, ln);
      return;
    }
  }
  fault(d, FRT_ERR_RESOURCE, "block %s deadlocks", xyz(blk, sizeof blk, lanes[0].t.bid));
}

/* Gives the waiting warps and barrier their results; false when nothing could be freed. */
static bool release_waiters(SimtDevice *d, int32_t n) {
  bool freed = false;
  for (int32_t w = 0; w < n / FRT_SIMT_WARP; w++) {
    if (d->arrived[w] != FRT_SIMT_WARP)
      continue;
    SimtLane *warp = &d->lanes[w * FRT_SIMT_WARP];
    for (uint32_t l = 1; l < FRT_SIMT_WARP; l++) {
      if (warp[l].shuffles != warp[0].shuffles || warp[l].mode != warp[0].mode) {
        char wa[96], wb[96], blk[48];
        describe_wait(&warp[0], wa, sizeof wa);
        describe_wait(&warp[l], wb, sizeof wb);
        fault(d, FRT_ERR_RESOURCE,
              "block %s: the lanes of a warp meet at different shuffles: %s (mode %d), %s (mode %d)",
              xyz(blk, sizeof blk, warp[0].t.bid), wa, (int)warp[0].mode, wb, (int)warp[l].mode);
        return false;
      }
    }
    if (warp[0].mode >= MMA_MODE) {
      const uint32_t *a[FRT_SIMT_WARP], *b[FRT_SIMT_WARP];
      float *cd[FRT_SIMT_WARP];
      for (uint32_t l = 0; l < FRT_SIMT_WARP; l++) {
        a[l] = warp[l].mma_a;
        b[l] = warp[l].mma_b;
        cd[l] = warp[l].mma_cd;
      }
      frt_simt_warp_mma(warp[0].mode - MMA_MODE, a, b, cd);
    } else {
      for (uint32_t l = 0; l < FRT_SIMT_WARP; l++)
        warp[l].result = warp[shuffle_source(l, warp[l].mode, warp[l].operand)].value;
    }
    for (uint32_t l = 0; l < FRT_SIMT_WARP; l++)
      warp[l].state = LANE_RUNNABLE;
    d->arrived[w] = 0;
    freed = true;
  }
  if (d->at_barrier == n) {
    for (int32_t k = 1; k < n; k++) {
      if (d->lanes[k].barriers != d->lanes[0].barriers) {
        fault_mismatch(d, &d->lanes[0], &d->lanes[k]);
        return false;
      }
    }
    for (int32_t k = 0; k < n; k++)
      d->lanes[k].state = LANE_RUNNABLE;
    d->at_barrier = 0;
    freed = true;
  }
  return freed;
}

/* One block on fibers; false when the launch must stop (d->fault). */
static bool run_block_fibers(SimtDevice *d, int32_t n) {
  for (int32_t k = 0; k < n; k++) {
    d->lanes[k].state = LANE_RUNNABLE;
    d->lanes[k].barriers = 0;
    d->lanes[k].shuffles = 0;
  }
  for (int32_t w = 0; w < n / FRT_SIMT_WARP; w++)
    d->arrived[w] = 0;
  d->at_barrier = 0;
  d->done = 0;
  for (;;) {
    if (d->schedule == SCHED_RANDOM)
      shuffle_order(d, n);
    /* The pass: the first runnable thread; each hands on to the next (hand_on), the last comes back. */
    d->pass_at = 0;
    int32_t first = next_runnable(d);
    if (first >= 0)
      frt_fiber_resume(&d->fibers, first);
    if (d->fault)
      return false;
    if (d->done == n)
      return true;
    if (!release_waiters(d, n)) {
      if (!d->fault)
        fault_deadlock(d, n);
      return false;
    }
  }
}

/* One block without fibers: each thread runs start to end. */
static bool run_block_plain(SimtDevice *d, int32_t n) {
  if (d->schedule == SCHED_RANDOM)
    shuffle_order(d, n);
  for (int32_t k = 0; k < n; k++) {
    SimtLane *ln = &d->lanes[nth(d, n, k)];
    d->kernel(&ln->t, d->args);
    if (d->fault)
      return false;
  }
  return true;
}

/* ---- launches --------------------------------------------------------------------------------------- */

/* Grows what a launch of n threads, n_args arguments and `shared` bytes of shared memory needs. */
static FrtStatus reserve(SimtDevice *d, int32_t n, int32_t n_args, uint32_t shared, bool fibered, FrtError *err) {
  if (n_args > d->args_cap) {
    void **a = realloc(d->args, (size_t)n_args * sizeof *a);
    if (!a)
      return frt_errorf(err, FRT_ERR_RESOURCE, "out of memory for %d kernel arguments", (int)n_args);
    d->args = a;
    d->args_cap = n_args;
  }
  if (shared > d->shared_cap) {
    unsigned char *s = frt_alloc_aligned(shared);
    if (!s)
      return frt_errorf(err, FRT_ERR_RESOURCE, "out of memory for %" PRIu32 " bytes of shared memory", shared);
    free(d->shared);
    d->shared = s;
    d->shared_cap = shared;
  }
  if (n > d->lanes_cap) {
    SimtLane *lanes = calloc((size_t)n, sizeof *lanes);
    uint32_t *order = calloc((size_t)n, sizeof *order);
    uint32_t *arrived = calloc((size_t)n / FRT_SIMT_WARP + 1, sizeof *arrived);
    if (!lanes || !order || !arrived) {
      free(lanes);
      free(order);
      free(arrived);
      return frt_errorf(err, FRT_ERR_RESOURCE, "out of memory for %d threads", (int)n);
    }
    free(d->lanes);
    free(d->order);
    free(d->arrived);
    d->lanes = lanes;
    d->order = order;
    d->arrived = arrived;
    d->lanes_cap = n;
  }
  if (fibered) {
    if (frt_fibers_reserve(&d->fibers, n, err) != FRT_OK)
      return err ? err->status : FRT_ERR_RESOURCE;
    for (int32_t k = 0; k < n; k++)
      if (!d->fibers.started[k] && frt_fiber_start(&d->fibers, k, err) != FRT_OK)
        return err ? err->status : FRT_ERR_RESOURCE;
  }
  return FRT_OK;
}

/* The launch's shape against the contract (at least 1 everywhere, a block of whole warps, at most
 * FRT_SIMT_MAX_THREADS) and CUDA's limits; *threads = threads per block. */
static FrtStatus check_shape(const char *who, const FrtGpuLaunch *l, int32_t *threads, FrtError *err) {
  const uint32_t *g = l->grid, *b = l->block;
  if (!g[0] || !g[1] || !g[2] || !b[0] || !b[1] || !b[2])
    return frt_errorf(err, FRT_ERR_INPUT,
                      "%s: grid %" PRIu32 "x%" PRIu32 "x%" PRIu32 ", block %" PRIu32 "x%" PRIu32 "x%" PRIu32
                      ": every dimension must be at least 1",
                      who, g[0], g[1], g[2], b[0], b[1], b[2]);
  if (g[0] > SIMT_MAX_GRID_X || g[1] > SIMT_MAX_GRID_YZ || g[2] > SIMT_MAX_GRID_YZ)
    return frt_errorf(err, FRT_ERR_INPUT,
                      "%s: grid %" PRIu32 "x%" PRIu32 "x%" PRIu32 " exceeds CUDA's limits (2147483647x65535x65535)",
                      who, g[0], g[1], g[2]);
  uint64_t n = (uint64_t)b[0] * b[1]; /* both below 2^32: no overflow */
  if (n > FRT_SIMT_MAX_THREADS || (n *= b[2]) > FRT_SIMT_MAX_THREADS || n % FRT_SIMT_WARP != 0 ||
      b[2] > SIMT_MAX_BLOCK_Z)
    return frt_errorf(err, FRT_ERR_INPUT,
                      "%s: a block of %" PRIu32 "x%" PRIu32 "x%" PRIu32
                      " threads: a block must be whole warps of %d threads, at most %d (and at most %u deep)",
                      who, b[0], b[1], b[2], FRT_SIMT_WARP, FRT_SIMT_MAX_THREADS, SIMT_MAX_BLOCK_Z);
  if (l->shared_bytes > SIMT_MAX_STATIC_SHARED)
    return frt_errorf(err, FRT_ERR_INPUT, "%s: %" PRIu32 " bytes of shared memory, more than a block may declare (%u)",
                      who, l->shared_bytes, SIMT_MAX_STATIC_SHARED);
  *threads = (int32_t)n;
  return FRT_OK;
}

static FrtStatus simt_launch(void *dev, int32_t i, const FrtGpuLaunch *l, const uint64_t *args, FrtError *err) {
  SimtDevice *d = dev;
  const FrtGpuModel *gm = d->gm;
  char who[256];
  describe(d, l, who, sizeof who);
  if (i < 0 || i >= gm->n_launches)
    return frt_errorf(err, FRT_ERR_INPUT, "%s: launch %d of a model with %d", who, (int)i, (int)gm->n_launches);
  if (!gm->host_kernels || !gm->host_kernels[i])
    return frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s: no host code for the SIMT emulator", who);
  if (l->n_args < 0 || (l->n_args > 0 && !args))
    return frt_errorf(err, FRT_ERR_INPUT, "%s: %d arguments", who, (int)l->n_args);
  int32_t n = 0;
  FrtStatus st = check_shape(who, l, &n, err);
  if (st != FRT_OK)
    return st;
  bool fibered = (l->flags & FRT_GPU_SYNC) != 0;
  if ((st = reserve(d, n, l->n_args, l->shared_bytes, fibered, err)) != FRT_OK)
    return st;

  for (int32_t a = 0; a < l->n_args; a++)
    d->args[a] = (void *)(uintptr_t)args[a];
  d->kernel = gm->host_kernels[i];
  d->launch = l;
  d->fibered = fibered;
  d->n_threads = n;
  d->fault = false;
  for (int32_t k = 0; k < n; k++) {
    SimtLane *ln = &d->lanes[k];
    ln->t.tid[0] = (uint32_t)k % l->block[0];
    ln->t.tid[1] = (uint32_t)k / l->block[0] % l->block[1];
    ln->t.tid[2] = (uint32_t)k / (l->block[0] * l->block[1]);
    ln->t.shared = l->shared_bytes ? d->shared : NULL;
    ln->t.emu = d;
    ln->t.linear = (uint32_t)k;
  }

  uint64_t gx = l->grid[0], gy = l->grid[1];
  uint64_t n_blocks = gx * gy * l->grid[2]; /* below 2^63: CUDA's limits */
  bool reverse = d->schedule == SCHED_REVERSE || (d->schedule == SCHED_RANDOM && (rng_next(d) & 1));
  bool ok = true;
  for (uint64_t k = 0; k < n_blocks && ok; k++) {
    uint64_t b = reverse ? n_blocks - 1 - k : k;
    uint32_t bid[3] = {(uint32_t)(b % gx), (uint32_t)(b / gx % gy), (uint32_t)(b / (gx * gy))};
    for (int32_t t = 0; t < n; t++)
      memcpy(d->lanes[t].t.bid, bid, sizeof bid);
    if (l->shared_bytes)
      memset(d->shared, 0xff, l->shared_bytes);
    ok = fibered ? run_block_fibers(d, n) : run_block_plain(d, n);
  }
  d->kernel = NULL;
  d->launch = NULL;
  if (ok)
    return FRT_OK;
  /* The threads still mid-kernel are abandoned: their fibers start afresh next time. */
  if (fibered)
    for (int32_t k = 0; k < n; k++)
      if (d->lanes[k].state != LANE_DONE)
        d->fibers.started[k] = false;
  return frt_errorf(err, d->fault_status, "%s: %s", who, d->fault_msg);
}

/* ---- the backend ------------------------------------------------------------------------------------ */

static FrtStatus read_schedule(SimtDevice *d, FrtError *err) {
  const char *s = getenv("FLOWRT_SIMT_SCHEDULE");
  d->schedule = SCHED_FORWARD;
  d->rng = 1;
  if (!s || !*s || strcmp(s, "forward") == 0)
    return FRT_OK;
  if (strcmp(s, "reverse") == 0) {
    d->schedule = SCHED_REVERSE;
    return FRT_OK;
  }
  if (strncmp(s, "random", 6) == 0 && (s[6] == 0 || s[6] == ':')) {
    d->schedule = SCHED_RANDOM;
    if (s[6] == 0)
      return FRT_OK;
    const char *p = s + 7;
    uint64_t seed = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
      if (__builtin_mul_overflow(seed, 10, &seed) || __builtin_add_overflow(seed, (uint64_t)(*p - '0'), &seed))
        break;
    }
    if (p != s + 7 && *p == 0) {
      d->rng = seed;
      return FRT_OK;
    }
  }
  return frt_errorf(err, FRT_ERR_INPUT, "FLOWRT_SIMT_SCHEDULE wants forward, reverse or random[:SEED], got '%s'", s);
}

static void simt_close(void *dev);

static FrtStatus simt_open(const FrtGpuModel *gm, void **dev, FrtError *err) {
  *dev = NULL;
  if (!gm)
    return frt_errorf(err, FRT_ERR_INPUT, "the SIMT emulator needs a model's GPU code");
  if (!gm->host_kernels)
    return frt_errorf(err, FRT_ERR_UNSUPPORTED,
                      "the model has no host code for the SIMT emulator (it was built for a GPU only)");
  if (gm->n_launches < 0 || (gm->n_launches > 0 && !gm->launches))
    return frt_errorf(err, FRT_ERR_INPUT, "malformed GPU code: %d launches", (int)gm->n_launches);
  SimtDevice *d = calloc(1, sizeof *d);
  if (!d)
    return frt_errorf(err, FRT_ERR_RESOURCE, "out of memory for the SIMT emulator");
  d->gm = gm;
  d->buffers.next = d->buffers.prev = &d->buffers;
  FrtStatus st = read_schedule(d, err);
  if (st == FRT_OK)
    st = frt_fibers_init(&d->fibers, lane_fiber, d, err);
  if (st != FRT_OK) {
    simt_close(d);
    return st;
  }
  *dev = d;
  return FRT_OK;
}

static const char *simt_device_name(void *dev) { return "SIMT host emulator"; }

static FrtStatus simt_sync(void *dev, FrtError *err) { return FRT_OK; }

static void simt_close(void *dev) {
  SimtDevice *d = dev;
  if (!d)
    return;
  while (d->buffers.next != &d->buffers)
    simt_release(d, address_of(d->buffers.next));
  frt_fibers_release(&d->fibers);
  free(d->args);
  free(d->shared);
  free(d->lanes);
  free(d->order);
  free(d->arrived);
  free(d);
}

const FrtGpuBackend frt_gpu_simt = {
    .name = "simt",
    .open = simt_open,
    .device_name = simt_device_name,
    .alloc = simt_alloc,
    .release = simt_release,
    .upload = simt_upload,
    .download = simt_download,
    .zero = simt_zero,
    .launch = simt_launch,
    .copy2d = simt_copy2d,
    .sync = simt_sync,
    .close = simt_close,
};
