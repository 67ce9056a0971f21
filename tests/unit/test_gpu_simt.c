/* test_gpu_simt.c — the SIMT host emulator (runtime/gpu_simt.c) through its backend table, frt_gpu_simt.
 *
 * Kernels are written by hand with the FrtSimtKernelFn signature, reading their indices from the
 * FrtSimtThread and calling frt_simt_barrier / frt_simt_shfl_*; each test builds a one-launch FrtGpuModel and
 * drives it as the runner does: open, alloc, upload, launch, download, close. The schedule
 * ($FLOWRT_SIMT_SCHEDULE) is varied: correct kernels must give the same result under every order, and a
 * reduction with a barrier removed must give a wrong one under at least one (the point of the emulator).
 * The fiber tests run twice, with the hand-written switch and with $FLOWRT_SIMT_FIBERS=ucontext.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flowrt.h"
#include "gpu_backend.h"
#include "gpu_simt.h"

static const char *const schedules[] = {"forward", "reverse", "random", "random:7", "random:12345"};
#define N_SCHEDULES (sizeof schedules / sizeof schedules[0])

typedef struct Shape {
  uint32_t grid[3], block[3], shared, flags;
} Shape;

static const char *const node_names[] = {"node 'n0' (Test)"};

/* A one-launch model of fn. */
typedef struct Rig {
  FrtGpuLaunch launch;
  FrtSimtKernelFn fn[1];
  FrtGpuModel gm;
} Rig;

static void rig_init(Rig *r, FrtSimtKernelFn fn, const Shape *s, int32_t n_args) {
  memset(r, 0, sizeof *r);
  r->launch.kernel = "k";
  r->launch.node = 0;
  memcpy(r->launch.grid, s->grid, sizeof s->grid);
  memcpy(r->launch.block, s->block, sizeof s->block);
  r->launch.shared_bytes = s->shared;
  r->launch.flags = s->flags;
  r->launch.n_args = n_args;
  r->fn[0] = fn;
  r->gm.n_launches = 1;
  r->gm.launches = &r->launch;
  r->gm.n_kernels = 1;
  r->gm.kernel_names = node_names;
  r->gm.host_kernels = r->fn;
}

static void *open_device(const FrtGpuModel *gm, const char *schedule) {
  if (schedule)
    setenv("FLOWRT_SIMT_SCHEDULE", schedule, 1);
  else
    unsetenv("FLOWRT_SIMT_SCHEDULE");
  void *dev = NULL;
  FrtError err = {0};
  FrtStatus st = frt_gpu_simt.open(gm, &dev, &err);
  if (st != FRT_OK)
    fail_msg("open: %s", err.msg);
  return dev;
}

/* One launch of fn on a fresh device under `schedule` (NULL: the default); the n host buffers are copied in
 * before and out after (when the launch succeeds). */
static FrtStatus run(FrtSimtKernelFn fn, const Shape *s, const char *schedule, int n, void **bufs,
                     const size_t *sizes, FrtError *err) {
  Rig r;
  rig_init(&r, fn, s, n);
  void *dev = open_device(&r.gm, schedule);
  uint64_t addr[8] = {0};
  assert_true(n <= 8);
  for (int i = 0; i < n; i++) {
    assert_int_equal(frt_gpu_simt.alloc(dev, sizes[i], &addr[i], err), FRT_OK);
    assert_int_equal(addr[i] % 64, 0);
    assert_int_equal(frt_gpu_simt.upload(dev, addr[i], bufs[i], sizes[i], err), FRT_OK);
  }
  FrtStatus st = frt_gpu_simt.launch(dev, 0, &r.launch, addr, err);
  if (st == FRT_OK)
    assert_int_equal(frt_gpu_simt.sync(dev, err), FRT_OK);
  for (int i = 0; i < n; i++) {
    if (st == FRT_OK)
      assert_int_equal(frt_gpu_simt.download(dev, bufs[i], addr[i], sizes[i], err), FRT_OK);
    frt_gpu_simt.release(dev, addr[i]);
  }
  frt_gpu_simt.close(dev);
  return st;
}

static void run_ok(FrtSimtKernelFn fn, const Shape *s, const char *schedule, int n, void **bufs, const size_t *sizes) {
  FrtError err = {0};
  if (run(fn, s, schedule, n, bufs, sizes, &err) != FRT_OK)
    fail_msg("launch under %s: %s", schedule ? schedule : "(default)", err.msg);
}

static void expect_error(FrtSimtKernelFn fn, const Shape *s, FrtStatus want, const char *needle) {
  uint32_t buf[4096];
  void *bufs[] = {buf};
  size_t sizes[] = {sizeof buf};
  FrtError err = {0};
  FrtStatus st = run(fn, s, NULL, 1, bufs, sizes, &err);
  if (st != want || !strstr(err.msg, needle))
    fail_msg("status %d, message '%s'; wanted %d with '%s'", (int)st, err.msg, (int)want, needle);
  assert_null(strchr(err.msg, '\n'));
}

/* ---- a 3-D grid of 3-D blocks writes its indices ---------------------------------------------------- */

enum { GX = 3, GY = 2, GZ = 2, BX = 8, BY = 2, BZ = 4, BT = BX * BY * BZ };

static uint32_t global_index(const FrtSimtThread *t) {
  uint32_t block = (t->bid[2] * GY + t->bid[1]) * GX + t->bid[0];
  return block * BT + (t->tid[2] * BY + t->tid[1]) * BX + t->tid[0];
}

static void k_ids(void *thr, void *const *args) {
  FrtSimtThread *t = thr;
  uint32_t *out = args[0];
  uint32_t g = global_index(t);
  for (int k = 0; k < 3; k++) {
    out[g * 8 + k] = t->bid[k];
    out[g * 8 + 3 + k] = t->tid[k];
  }
  out[g * 8 + 6] = t->linear;
  out[g * 8 + 7] += 1; /* exactly once each */
}

static void check_ids(const uint32_t *out) {
  for (uint32_t bz = 0; bz < GZ; bz++)
    for (uint32_t by = 0; by < GY; by++)
      for (uint32_t bx = 0; bx < GX; bx++)
        for (uint32_t tz = 0; tz < BZ; tz++)
          for (uint32_t ty = 0; ty < BY; ty++)
            for (uint32_t tx = 0; tx < BX; tx++) {
              uint32_t lin = (tz * BY + ty) * BX + tx;
              const uint32_t *o = out + (((bz * GY + by) * GX + bx) * BT + lin) * 8;
              uint32_t want[8] = {bx, by, bz, tx, ty, tz, lin, 1};
              assert_memory_equal(o, want, sizeof want);
            }
}

static void test_ids(void **state) {
  for (int sync = 0; sync < 2; sync++) {
    for (size_t s = 0; s < N_SCHEDULES; s++) {
      static uint32_t out[GX * GY * GZ * BT * 8];
      memset(out, 0, sizeof out);
      Shape sh = {{GX, GY, GZ}, {BX, BY, BZ}, 0, sync ? FRT_GPU_SYNC : 0};
      void *bufs[] = {out};
      size_t sizes[] = {sizeof out};
      run_ok(k_ids, &sh, schedules[s], 1, bufs, sizes);
      check_ids(out);
    }
  }
}

/* A full block of 1024 threads (32x4x8) exchanges values through shared memory across a barrier. */
static void k_mirror(void *thr, void *const *args) {
  FrtSimtThread *t = thr;
  uint32_t *s = t->shared, *out = args[0];
  s[t->linear] = t->linear * 3 + t->bid[0];
  frt_simt_barrier(t);
  out[t->bid[0] * 1024 + t->linear] = s[1023 - t->linear];
}

static void test_full_block_barrier(void **state) {
  static uint32_t out[2 * 1024];
  for (size_t s = 0; s < N_SCHEDULES; s++) {
    memset(out, 0, sizeof out);
    Shape sh = {{2, 1, 1}, {32, 4, 8}, 4096, FRT_GPU_SYNC};
    void *bufs[] = {out};
    size_t sizes[] = {sizeof out};
    run_ok(k_mirror, &sh, schedules[s], 1, bufs, sizes);
    for (uint32_t b = 0; b < 2; b++)
      for (uint32_t i = 0; i < 1024; i++)
        assert_int_equal(out[b * 1024 + i], (1023 - i) * 3 + b);
  }
}

/* ---- the schedule ----------------------------------------------------------------------------------- */

/* Records the order threads and blocks run in (the emulator runs one thread at a time, so a plain counter
 * in the buffer is enough): out[0] the counter, out[1 + b * 64 + t] thread t's turn before the barrier,
 * out[1 + 192 + b * 64 + t] after it (fibers only), out[1 + 384 + b] block b's turn. */
static void k_order(void *thr, void *const *args) {
  FrtSimtThread *t = thr;
  uint32_t *out = args[0], b = t->bid[0];
  if (t->linear == 0)
    out[1 + 384 + b] = out[0]++;
  out[1 + b * 64 + t->linear] = out[0]++;
  if (args[1]) {
    frt_simt_barrier(t);
    out[1 + 192 + b * 64 + t->linear] = out[0]++;
  }
}

static void k_order_plain(void *thr, void *const *args) {
  void *const a[] = {args[0], NULL};
  k_order(thr, a);
}

/* The rank of each thread within its block's pass: 0 = first. */
static void ranks(const uint32_t *turns, uint32_t *rank) {
  for (int i = 0; i < 64; i++) {
    rank[i] = 0;
    for (int j = 0; j < 64; j++)
      rank[i] += turns[j] < turns[i];
  }
}

static void test_schedule_order(void **state) {
  uint32_t dummy = 0;
  for (int sync = 0; sync < 2; sync++) {
    for (size_t s = 0; s < N_SCHEDULES; s++) {
      uint32_t out[1 + 384 + 3];
      memset(out, 0, sizeof out);
      void *bufs[] = {out, &dummy};
      size_t sizes[] = {sizeof out, sizeof dummy};
      Shape sh = {{3, 1, 1}, {64, 1, 1}, 0, sync ? FRT_GPU_SYNC : 0};
      run_ok(sync ? k_order : k_order_plain, &sh, schedules[s], 2, bufs, sizes);
      bool random = strncmp(schedules[s], "random", 6) == 0, reverse = strcmp(schedules[s], "reverse") == 0;
      /* Blocks one after the other: forward, reverse, or (random) either. */
      uint32_t *blocks = out + 1 + 384;
      bool fwd_blocks = blocks[0] < blocks[1] && blocks[1] < blocks[2];
      bool rev_blocks = blocks[0] > blocks[1] && blocks[1] > blocks[2];
      assert_true(random ? fwd_blocks || rev_blocks : reverse ? rev_blocks : fwd_blocks);
      for (int pass = 0; pass < (sync ? 2 : 1); pass++) {
        uint32_t first[64], rank[64];
        for (int b = 0; b < 3; b++) {
          ranks(out + 1 + pass * 192 + b * 64, rank);
          if (b == 0 && pass == 0)
            memcpy(first, rank, sizeof rank);
          int identity = 0, reversed = 0;
          for (int i = 0; i < 64; i++) {
            identity += rank[i] == (uint32_t)i;
            reversed += rank[i] == (uint32_t)(63 - i);
          }
          if (random) {
            /* A fresh permutation: neither order, and not the first block's first one again. */
            assert_true(identity < 64 && reversed < 64);
            if (b || pass)
              assert_memory_not_equal(rank, first, sizeof rank);
          } else {
            assert_int_equal(reverse ? reversed : identity, 64);
          }
        }
      }
    }
  }
}

/* ---- a block-wide tree reduction in shared memory --------------------------------------------------- */

enum { RED_THREADS = 256, RED_BLOCKS = 5 };

/* missing: 0 = correct; 1 = no barrier after the loads; 2 = no barrier inside the tree loop. */
static void reduce(FrtSimtThread *t, void *const *args, int missing) {
  float *s = t->shared;
  const float *in = args[0];
  float *out = args[1];
  uint32_t i = t->tid[0];
  s[i] = in[t->bid[0] * RED_THREADS + i];
  if (missing != 1)
    frt_simt_barrier(t);
  for (uint32_t stride = RED_THREADS / 2; stride > 0; stride >>= 1) {
    if (i < stride)
      s[i] += s[i + stride];
    if (missing != 2)
      frt_simt_barrier(t);
  }
  if (i == 0)
    out[t->bid[0]] = s[0];
}

static void k_reduce(void *thr, void *const *args) { reduce(thr, args, 0); }
static void k_reduce_no_first_barrier(void *thr, void *const *args) { reduce(thr, args, 1); }
static void k_reduce_no_loop_barrier(void *thr, void *const *args) { reduce(thr, args, 2); }

static float red_in[RED_BLOCKS * RED_THREADS];
static float red_want[RED_BLOCKS];

static void reduce_inputs(void) {
  for (int b = 0; b < RED_BLOCKS; b++) {
    red_want[b] = 0;
    for (int i = 0; i < RED_THREADS; i++) {
      /* Small integers: every order of additions gives the same float. */
      float v = (float)((b * 37 + i * 11) % 19) - 6.0f;
      red_in[b * RED_THREADS + i] = v;
      red_want[b] += v;
    }
  }
}

/* Runs a reduction kernel; true when every block's sum is right. */
static bool reduce_right(FrtSimtKernelFn fn, const char *schedule) {
  float in[RED_BLOCKS * RED_THREADS], out[RED_BLOCKS] = {0};
  memcpy(in, red_in, sizeof in);
  Shape sh = {{RED_BLOCKS, 1, 1}, {RED_THREADS, 1, 1}, RED_THREADS * sizeof(float), FRT_GPU_SYNC};
  void *bufs[] = {in, out};
  size_t sizes[] = {sizeof in, sizeof out};
  run_ok(fn, &sh, schedule, 2, bufs, sizes);
  for (int b = 0; b < RED_BLOCKS; b++)
    if (out[b] != red_want[b])
      return false;
  return true;
}

static void test_reduction(void **state) {
  reduce_inputs();
  for (size_t s = 0; s < N_SCHEDULES; s++)
    if (!reduce_right(k_reduce, schedules[s]))
      fail_msg("the correct reduction is wrong under %s", schedules[s]);
}

/* The property the emulator exists for: drop a barrier and some schedule gets a wrong sum. */
static void test_missing_barrier_fails(void **state) {
  reduce_inputs();
  FrtSimtKernelFn racy[] = {k_reduce_no_first_barrier, k_reduce_no_loop_barrier};
  for (size_t k = 0; k < 2; k++) {
    int wrong = 0;
    for (size_t s = 0; s < N_SCHEDULES; s++)
      wrong += !reduce_right(racy[k], schedules[s]);
    if (wrong == 0)
      fail_msg("reduction %zu without a barrier is right under every schedule", k + 1);
  }
}

/* ---- warp shuffles ---------------------------------------------------------------------------------- */

enum { SH_THREADS = 96 }; /* 3 warps */

static int32_t lane_of(const FrtSimtThread *t) { return (int32_t)(t->linear % FRT_SIMT_WARP); }

/* xor butterfly (every lane gets the warp's sum) and down (lane 0 gets it) over f32 and i32. */
static void k_shfl_reduce(void *thr, void *const *args) {
  FrtSimtThread *t = thr;
  int32_t *out = args[0];
  int32_t base = (int32_t)t->linear * 7 % 23 + (int32_t)t->bid[0];
  int32_t x = base;
  for (int32_t m = 16; m > 0; m >>= 1)
    x += frt_simt_shfl_i32(t, x, FRT_SIMT_SHFL_XOR, m);
  float f = (float)base;
  for (int32_t m = 16; m > 0; m >>= 1)
    f += frt_simt_shfl_f32(t, f, FRT_SIMT_SHFL_XOR, m);
  int32_t dn = base;
  for (int32_t d = 16; d > 0; d >>= 1)
    dn += frt_simt_shfl_i32(t, dn, FRT_SIMT_SHFL_DOWN, d);
  int32_t *o = out + (t->bid[0] * SH_THREADS + t->linear) * 3;
  o[0] = x;
  o[1] = (int32_t)f;
  o[2] = dn;
}

static void test_shuffle_reductions(void **state) {
  for (size_t s = 0; s < N_SCHEDULES; s++) {
    int32_t out[2 * SH_THREADS * 3];
    memset(out, 0, sizeof out);
    Shape sh = {{2, 1, 1}, {SH_THREADS, 1, 1}, 0, FRT_GPU_SYNC};
    void *bufs[] = {out};
    size_t sizes[] = {sizeof out};
    run_ok(k_shfl_reduce, &sh, schedules[s], 1, bufs, sizes);
    for (int b = 0; b < 2; b++) {
      for (int w = 0; w < SH_THREADS / 32; w++) {
        /* Reference: the same steps over the warp's 32 values, CUDA's semantics. */
        int32_t v[32], sum = 0;
        for (int l = 0; l < 32; l++) {
          v[l] = (w * 32 + l) * 7 % 23 + b;
          sum += v[l];
        }
        for (int d = 16; d > 0; d >>= 1) {
          int32_t nv[32];
          for (int l = 0; l < 32; l++)
            nv[l] = v[l] + (l + d < 32 ? v[l + d] : v[l]);
          memcpy(v, nv, sizeof v);
        }
        for (int l = 0; l < 32; l++) {
          const int32_t *o = out + (b * SH_THREADS + w * 32 + l) * 3;
          assert_int_equal(o[0], sum);
          assert_int_equal(o[1], sum);
          assert_int_equal(o[2], v[l]);
        }
        assert_int_equal(v[0], sum);
      }
    }
  }
}

/* The edges: idx with sources mod 32 (33 is lane 1, -1 is lane 31), up and down past the ends (own value),
 * xor with 0; and 40 shuffles in a row, each lane checking it never sees another round's value. */
enum { EDGE_CASES = 8 };
static void k_shfl_edges(void *thr, void *const *args) {
  FrtSimtThread *t = thr;
  int32_t *out = (int32_t *)args[0] + (size_t)t->linear * EDGE_CASES;
  int32_t lane = lane_of(t), mine = 1000 + (int32_t)t->linear;
  out[0] = frt_simt_shfl_i32(t, mine, FRT_SIMT_SHFL_IDX, 31 - lane);
  out[1] = frt_simt_shfl_i32(t, mine, FRT_SIMT_SHFL_IDX, 33);
  out[2] = frt_simt_shfl_i32(t, mine, FRT_SIMT_SHFL_IDX, -1);
  out[3] = frt_simt_shfl_i32(t, mine, FRT_SIMT_SHFL_UP, 3);
  out[4] = frt_simt_shfl_i32(t, mine, FRT_SIMT_SHFL_DOWN, 5);
  out[5] = (int32_t)frt_simt_shfl_f32(t, (float)mine, FRT_SIMT_SHFL_XOR, 0);
  out[6] = (int32_t)frt_simt_shfl_f32(t, (float)mine, FRT_SIMT_SHFL_UP, 0);
  int32_t bad = 0;
  for (int32_t r = 0; r < 40; r++) {
    int32_t src = (lane * 5 + r) & 31;
    int32_t got = frt_simt_shfl_i32(t, r * 100000 + mine, FRT_SIMT_SHFL_IDX, src);
    int32_t want = r * 100000 + 1000 + (int32_t)(t->linear - (uint32_t)lane) + src;
    bad += got != want;
  }
  out[7] = bad;
}

static void test_shuffle_edges(void **state) {
  for (size_t s = 0; s < N_SCHEDULES; s++) {
    int32_t out[64 * EDGE_CASES];
    memset(out, 0x55, sizeof out);
    Shape sh = {{1, 1, 1}, {16, 4, 1}, 0, FRT_GPU_SYNC}; /* 2 warps, each spanning 2 rows of y */
    void *bufs[] = {out};
    size_t sizes[] = {sizeof out};
    run_ok(k_shfl_edges, &sh, schedules[s], 1, bufs, sizes);
    for (int32_t i = 0; i < 64; i++) {
      int32_t lane = i % 32, warp0 = 1000 + i - lane;
      const int32_t *o = out + i * EDGE_CASES;
      assert_int_equal(o[0], warp0 + 31 - lane);
      assert_int_equal(o[1], warp0 + 1);
      assert_int_equal(o[2], warp0 + 31);
      assert_int_equal(o[3], lane < 3 ? 1000 + i : 1000 + i - 3);
      assert_int_equal(o[4], lane + 5 > 31 ? 1000 + i : 1000 + i + 5);
      assert_int_equal(o[5], 1000 + i);
      assert_int_equal(o[6], 1000 + i);
      assert_int_equal(o[7], 0);
    }
  }
}

/* ---- deadlocks and misuse --------------------------------------------------------------------------- */

static void k_early_return(void *thr, void *const *args) {
  FrtSimtThread *t = thr;
  if (t->linear == 0 && t->bid[0] == 1)
    return;
  frt_simt_barrier(t);
  ((uint32_t *)args[0])[t->linear] = 1;
}

static void k_warp_gone(void *thr, void *const *args) {
  FrtSimtThread *t = thr;
  if (t->linear == 37)
    return;
  ((int32_t *)args[0])[t->linear] = frt_simt_shfl_i32(t, 1, FRT_SIMT_SHFL_XOR, 1);
}

static void k_divergent_kinds(void *thr, void *const *args) {
  FrtSimtThread *t = thr;
  if (t->linear < 16)
    frt_simt_barrier(t);
  else
    frt_simt_shfl_i32(t, 1, FRT_SIMT_SHFL_DOWN, 1);
}

static void k_divergent_shuffles(void *thr, void *const *args) {
  FrtSimtThread *t = thr;
  frt_simt_barrier(t);
  if (t->linear < 16)
    frt_simt_shfl_i32(t, 1, FRT_SIMT_SHFL_DOWN, 1);
  else
    frt_simt_shfl_i32(t, 1, FRT_SIMT_SHFL_XOR, 1);
}

static void test_deadlocks(void **state) {
  expect_error(k_early_return, &(Shape){{3, 1, 1}, {64, 1, 1}, 0, FRT_GPU_SYNC}, FRT_ERR_RESOURCE,
               "kernel k (node 'n0' (Test)): thread (0,0,0) of block (1,0,0) returned while its block waits at a "
               "barrier");
  expect_error(k_warp_gone, &(Shape){{1, 1, 1}, {64, 1, 1}, 0, FRT_GPU_SYNC}, FRT_ERR_RESOURCE,
               "thread (37,0,0) of block (0,0,0) returned while its warp waits at a shuffle");
  expect_error(k_divergent_kinds, &(Shape){{1, 1, 1}, {32, 1, 1}, 0, FRT_GPU_SYNC}, FRT_ERR_RESOURCE,
               "block (0,0,0) deadlocks: thread (0,0,0) waits at barrier 1 while thread (16,0,0) waits at shuffle 1");
  expect_error(k_divergent_shuffles, &(Shape){{1, 1, 1}, {32, 1, 1}, 0, FRT_GPU_SYNC}, FRT_ERR_RESOURCE,
               "the lanes of a warp meet at different shuffles");
}

/* After a launch stopped by a deadlock the device still works: the abandoned fibers start afresh. */
static void test_device_survives_deadlock(void **state) {
  reduce_inputs();
  Rig r;
  Shape sh = {{RED_BLOCKS, 1, 1}, {RED_THREADS, 1, 1}, RED_THREADS * sizeof(float), FRT_GPU_SYNC};
  rig_init(&r, k_reduce, &sh, 2);
  void *dev = open_device(&r.gm, "random:3");
  FrtError err = {0};
  uint64_t addr[2];
  assert_int_equal(frt_gpu_simt.alloc(dev, sizeof red_in, &addr[0], &err), FRT_OK);
  assert_int_equal(frt_gpu_simt.alloc(dev, sizeof red_want, &addr[1], &err), FRT_OK);
  for (int round = 0; round < 3; round++) {
    r.fn[0] = k_early_return; /* the model's host code, read at each launch */
    assert_int_equal(frt_gpu_simt.launch(dev, 0, &r.launch, addr, &err), FRT_ERR_RESOURCE);
    assert_non_null(strstr(err.msg, "returned while its block waits at a barrier"));
    r.fn[0] = k_reduce;
    /* k_early_return's block 0 finished, writing over the input. */
    assert_int_equal(frt_gpu_simt.upload(dev, addr[0], red_in, sizeof red_in, &err), FRT_OK);
    assert_int_equal(frt_gpu_simt.zero(dev, addr[1], sizeof red_want, &err), FRT_OK);
    assert_int_equal(frt_gpu_simt.launch(dev, 0, &r.launch, addr, &err), FRT_OK);
    float out[RED_BLOCKS];
    assert_int_equal(frt_gpu_simt.download(dev, out, addr[1], sizeof out, &err), FRT_OK);
    assert_memory_equal(out, red_want, sizeof out);
  }
  frt_gpu_simt.close(dev);
}

static void k_barrier_unsynced(void *thr, void *const *args) { frt_simt_barrier(thr); }
static void k_shuffle_unsynced(void *thr, void *const *args) { frt_simt_shfl_f32(thr, 1.0f, FRT_SIMT_SHFL_XOR, 1); }
static void k_shuffle_bad_mode(void *thr, void *const *args) { frt_simt_shfl_i32(thr, 1, 9, 1); }

static void test_misuse(void **state) {
  expect_error(k_barrier_unsynced, &(Shape){{1, 1, 1}, {32, 1, 1}, 0, 0}, FRT_ERR_INPUT,
               "kernel k (node 'n0' (Test)): thread (0,0,0) calls a barrier, but its launch lacks FRT_GPU_SYNC");
  expect_error(k_shuffle_unsynced, &(Shape){{1, 1, 1}, {32, 1, 1}, 0, 0}, FRT_ERR_INPUT,
               "shuffles, but its launch lacks FRT_GPU_SYNC");
  expect_error(k_shuffle_bad_mode, &(Shape){{1, 1, 1}, {32, 1, 1}, 0, FRT_GPU_SYNC}, FRT_ERR_INPUT,
               "thread (0,0,0) shuffles with mode 9");
}

/* ---- shared memory ---------------------------------------------------------------------------------- */

/* Every block reads shared memory before writing it: all 0xff, though the previous block wrote it. */
static void k_poison(void *thr, void *const *args) {
  FrtSimtThread *t = thr;
  uint32_t *s = t->shared, *out = args[0];
  float *f = t->shared;
  uint32_t g = t->bid[0] * 64 + t->linear;
  out[g] = s[t->linear];
  out[3 * 64 + g] = isnan(f[64 + t->linear]);
  out[6 * 64 + g] = (uint32_t)((uintptr_t)t->shared % 16);
  frt_simt_barrier(t);
  s[t->linear] = 0;
  s[64 + t->linear] = 0;
}

static void test_shared_poisoned(void **state) {
  for (size_t s = 0; s < N_SCHEDULES; s++) {
    uint32_t out[9 * 64];
    memset(out, 0, sizeof out);
    void *bufs[] = {out};
    size_t sizes[] = {sizeof out};
    run_ok(k_poison, &(Shape){{3, 1, 1}, {64, 1, 1}, 128 * 4, FRT_GPU_SYNC}, schedules[s], 1, bufs, sizes);
    for (int i = 0; i < 3 * 64; i++) {
      assert_int_equal(out[i], 0xffffffffu);
      assert_int_equal(out[3 * 64 + i], 1);
      assert_int_equal(out[6 * 64 + i], 0);
    }
  }
}

/* ---- launch shapes and memory ----------------------------------------------------------------------- */

static void k_nothing(void *thr, void *const *args) {}

static void test_bad_shapes(void **state) {
  const char *who = "kernel k (node 'n0' (Test)): ";
  char want[256];
  snprintf(want, sizeof want, "%sa block of 33x1x1 threads", who);
  expect_error(k_nothing, &(Shape){{1, 1, 1}, {33, 1, 1}, 0, 0}, FRT_ERR_INPUT, want);
  expect_error(k_nothing, &(Shape){{1, 1, 1}, {32, 33, 1}, 0, FRT_GPU_SYNC}, FRT_ERR_INPUT, "a block of 32x33x1");
  expect_error(k_nothing, &(Shape){{1, 1, 1}, {1024, 2, 1}, 0, 0}, FRT_ERR_INPUT, "at most 1024");
  expect_error(k_nothing, &(Shape){{1, 1, 1}, {65536, 65536, 1}, 0, 0}, FRT_ERR_INPUT, "a block of 65536x65536x1");
  expect_error(k_nothing, &(Shape){{1, 1, 1}, {1, 1, 128}, 0, 0}, FRT_ERR_INPUT, "a block of 1x1x128");
  expect_error(k_nothing, &(Shape){{1, 0, 1}, {32, 1, 1}, 0, 0}, FRT_ERR_INPUT, "must be at least 1");
  expect_error(k_nothing, &(Shape){{1, 1, 1}, {32, 1, 0}, 0, 0}, FRT_ERR_INPUT, "must be at least 1");
  expect_error(k_nothing, &(Shape){{1, 70000, 1}, {32, 1, 1}, 0, 0}, FRT_ERR_INPUT, "exceeds CUDA's limits");
  expect_error(k_nothing, &(Shape){{1, 1, 1}, {32, 1, 1}, 49153, 0}, FRT_ERR_INPUT, "49153 bytes of shared memory");
}

static void test_open_and_memory_errors(void **state) {
  FrtError err = {0};
  void *dev = NULL;
  Rig r;
  rig_init(&r, k_nothing, &(Shape){{1, 1, 1}, {32, 1, 1}, 0, 0}, 0);
  r.gm.host_kernels = NULL;
  assert_int_equal(frt_gpu_simt.open(&r.gm, &dev, &err), FRT_ERR_UNSUPPORTED);
  assert_null(dev);
  rig_init(&r, k_nothing, &(Shape){{1, 1, 1}, {32, 1, 1}, 0, 0}, 0);
  const char *bad[] = {"sideways", "random:", "random:x", "random7", "random:99999999999999999999999"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    setenv("FLOWRT_SIMT_SCHEDULE", bad[k], 1);
    assert_int_equal(frt_gpu_simt.open(&r.gm, &dev, &err), FRT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "FLOWRT_SIMT_SCHEDULE wants forward, reverse or random[:SEED]"));
  }
  dev = open_device(&r.gm, NULL);
  assert_string_equal(frt_gpu_simt.device_name(dev), "SIMT host emulator");
  assert_string_equal(frt_gpu_simt.name, "simt");
  uint64_t a, b;
  char host[100] = {0};
  assert_int_equal(frt_gpu_simt.alloc(dev, 100, &a, &err), FRT_OK);
  assert_int_equal(frt_gpu_simt.alloc(dev, 0, &b, &err), FRT_OK);
  assert_int_equal(frt_gpu_simt.upload(dev, a + 50, host, 50, &err), FRT_OK);
  assert_int_equal(frt_gpu_simt.upload(dev, a + 50, host, 51, &err), FRT_ERR_INPUT);
  assert_non_null(strstr(err.msg, "upload of 51 bytes to 0x"));
  assert_int_equal(frt_gpu_simt.download(dev, host, a - 1, 10, &err), FRT_ERR_INPUT);
  assert_int_equal(frt_gpu_simt.zero(dev, 12345, 1, &err), FRT_ERR_INPUT);
  assert_int_equal(frt_gpu_simt.alloc(dev, UINT64_MAX - 8, &b, &err), FRT_ERR_RESOURCE);
  frt_gpu_simt.release(dev, 12345); /* not the device's: ignored */
  frt_gpu_simt.release(dev, a);
  assert_int_equal(frt_gpu_simt.upload(dev, a, host, 1, &err), FRT_ERR_INPUT);
  frt_gpu_simt.close(dev); /* frees the zero-byte allocation still live */
  unsetenv("FLOWRT_SIMT_SCHEDULE");
}

/* Each thread records its shared memory and the frame it runs in; over many launches (smaller ones after a
 * large one) neither moves: nothing is allocated per launch or per block. */
static void k_where(void *thr, void *const *args) {
  FrtSimtThread *t = thr;
  uint64_t *out = args[0];
  if (t->bid[0] == 0) {
    out[t->linear * 2] = (uint64_t)(uintptr_t)t->shared;
    out[t->linear * 2 + 1] = (uint64_t)(uintptr_t)__builtin_frame_address(0);
  }
  frt_simt_barrier(t);
}

static void test_memory_reused(void **state) {
  Rig r;
  rig_init(&r, k_where, &(Shape){{4, 1, 1}, {256, 1, 1}, 8192, FRT_GPU_SYNC}, 1);
  void *dev = open_device(&r.gm, "random:5");
  FrtError err = {0};
  uint64_t a;
  static uint64_t first[256 * 2], now[256 * 2];
  assert_int_equal(frt_gpu_simt.alloc(dev, sizeof now, &a, &err), FRT_OK);
  for (int k = 0; k < 60; k++) {
    /* Alternate smaller launches: fewer threads, less shared memory. */
    r.launch.block[0] = k % 2 ? 64 : 256;
    r.launch.shared_bytes = k % 2 ? 16 : 8192;
    assert_int_equal(frt_gpu_simt.launch(dev, 0, &r.launch, &a, &err), FRT_OK);
    assert_int_equal(frt_gpu_simt.download(dev, k ? now : first, a, sizeof now, &err), FRT_OK);
    if (k)
      for (uint32_t i = 0; i < r.launch.block[0] * 2; i++)
        assert_int_equal(now[i], first[i]);
  }
  for (int i = 0; i < 256; i++) {
    assert_int_equal(first[2 * i], first[0]);
    if (i)
      assert_int_not_equal(first[2 * i + 1], first[2 * i - 1]); /* each thread its own stack */
  }
  frt_gpu_simt.close(dev);
}

/* ---- tensor-core mma (frt_simt_mma) -------------------------------------------------------------------- */

/* Two warps, each multiplying its own 16 x K by K x 8 problem. The fragments are packed here, register by
 * register, from the PTX ISA's layout tables for mma.m16n8k16 (.f16/.bf16) and mma.m16n8k8 (.tf32), and the
 * result compared with a plain product. Values are multiples of 1/2 up to 4, exact in every input format,
 * so the sums are exact and the comparison is too. A wrong packing (A's registers 1 and 2 swapped) must
 * give a different product. */
enum { MMA_WARPS = 2, MMA_M = 16, MMA_N = 8, MMA_K = 16 };

typedef struct MmaArgs {
  uint32_t a[MMA_WARPS * 32][4], b[MMA_WARPS * 32][2];
  float cd[MMA_WARPS * 32][4];
  int32_t kind, kind_lane0; /* lane 0 of warp 0 may call another kind (a mismatch) */
} MmaArgs;

static void k_mma(void *thr, void *const *args) {
  FrtSimtThread *t = thr;
  MmaArgs *m = args[0];
  uint32_t a[4], b[2];
  float cd[4];
  memcpy(a, m->a[t->linear], sizeof a);
  memcpy(b, m->b[t->linear], sizeof b);
  memcpy(cd, m->cd[t->linear], sizeof cd);
  frt_simt_mma(t, t->linear == 0 ? m->kind_lane0 : m->kind, a, b, cd);
  memcpy(m->cd[t->linear], cd, sizeof cd);
}

/* v (a multiple of 1/2 in [-8, 8]) as f16 bits. */
static uint32_t f16_bits(float v) {
  if (v == 0)
    return 0;
  int e;
  float f = frexpf(fabsf(v), &e); /* v = f * 2^e, f in [0.5, 1) */
  uint32_t mant = (uint32_t)((f * 2 - 1) * 1024);
  return (v < 0 ? 0x8000u : 0) | (uint32_t)(e - 1 + 15) << 10 | mant;
}

static uint32_t f32_bits(float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  return u;
}

/* One input element in the kind's format; tf32 gets noise in the 13 bits the hardware ignores. */
static uint32_t encode(int32_t kind, float v, uint32_t noise) {
  if (kind == FRT_SIMT_MMA_F16)
    return f16_bits(v);
  if (kind == FRT_SIMT_MMA_BF16)
    return f32_bits(v) >> 16;
  return f32_bits(v) | (noise & 0x1fffu);
}

static void mma_pack(int32_t kind, bool wrong, float A[MMA_WARPS][MMA_M][MMA_K], float B[MMA_WARPS][MMA_K][MMA_N],
                     float C[MMA_WARPS][MMA_M][MMA_N], MmaArgs *m) {
  for (int w = 0; w < MMA_WARPS; w++)
    for (int l = 0; l < 32; l++) {
      int g = l / 4, t = l % 4, i = w * 32 + l;
      for (int r = 0; r < 4; r++) {
        int ra = wrong && (r == 1 || r == 2) ? 3 - r : r; /* the wrong packing swaps registers 1 and 2 */
        int row = g + 8 * (ra % 2);
        if (kind == FRT_SIMT_MMA_TF32) {
          m->a[i][r] = encode(kind, A[w][row][t + 4 * (ra / 2)], (uint32_t)(i * 97 + r));
        } else {
          int col = 2 * t + 8 * (ra / 2);
          m->a[i][r] = encode(kind, A[w][row][col], 0) | encode(kind, A[w][row][col + 1], 0) << 16;
        }
        m->cd[i][r] = C[w][g + 8 * (r / 2)][2 * t + r % 2];
      }
      for (int r = 0; r < 2; r++) {
        if (kind == FRT_SIMT_MMA_TF32) {
          m->b[i][r] = encode(kind, B[w][t + 4 * r][g], (uint32_t)(i * 31 + r));
        } else {
          int k0 = 2 * t + 8 * r;
          m->b[i][r] = encode(kind, B[w][k0][g], 0) | encode(kind, B[w][k0 + 1][g], 0) << 16;
        }
      }
    }
}

/* Runs the mma of `kind` (packed right or wrong); true when every lane got the plain product. */
static bool mma_matches(int32_t kind, bool wrong, const char *schedule) {
  static float A[MMA_WARPS][MMA_M][MMA_K], B[MMA_WARPS][MMA_K][MMA_N], C[MMA_WARPS][MMA_M][MMA_N];
  int K = kind == FRT_SIMT_MMA_TF32 ? 8 : 16;
  uint32_t seed = 12345;
  for (int w = 0; w < MMA_WARPS; w++) {
    for (int i = 0; i < MMA_M; i++)
      for (int k = 0; k < K; k++)
        A[w][i][k] = (float)((int)((seed = seed * 1103515245u + 12345u) >> 16) % 17 - 8) / 2;
    for (int k = 0; k < K; k++)
      for (int j = 0; j < MMA_N; j++)
        B[w][k][j] = (float)((int)((seed = seed * 1103515245u + 12345u) >> 16) % 17 - 8) / 2;
    for (int i = 0; i < MMA_M; i++)
      for (int j = 0; j < MMA_N; j++)
        C[w][i][j] = (float)(i - j + w);
  }
  static MmaArgs m;
  memset(&m, 0, sizeof m);
  m.kind = m.kind_lane0 = kind;
  mma_pack(kind, wrong, A, B, C, &m);
  void *bufs[] = {&m};
  size_t sizes[] = {sizeof m};
  run_ok(k_mma, &(Shape){{1, 1, 1}, {MMA_WARPS * 32, 1, 1}, 0, FRT_GPU_SYNC}, schedule, 1, bufs, sizes);
  bool same = true;
  for (int w = 0; w < MMA_WARPS; w++)
    for (int l = 0; l < 32; l++)
      for (int r = 0; r < 4; r++) {
        int g = l / 4, t = l % 4, row = g + 8 * (r / 2), col = 2 * t + r % 2;
        float want = C[w][row][col];
        for (int k = 0; k < K; k++)
          want += A[w][row][k] * B[w][k][col];
        same = same && m.cd[w * 32 + l][r] == want;
      }
  return same;
}

static void test_mma(void **state) {
  static const int32_t kinds[] = {FRT_SIMT_MMA_F16, FRT_SIMT_MMA_BF16, FRT_SIMT_MMA_TF32};
  for (size_t s = 0; s < N_SCHEDULES; s++)
    for (int i = 0; i < 3; i++) {
      if (!mma_matches(kinds[i], false, schedules[s]))
        fail_msg("mma kind %d under %s: not the plain product", (int)kinds[i], schedules[s]);
      if (mma_matches(kinds[i], true, schedules[s]))
        fail_msg("mma kind %d under %s: a wrong fragment layout gave the right product", (int)kinds[i], schedules[s]);
    }
}

/* The lanes of a warp must agree on the kind, as on the instruction. */
static void test_mma_kind_mismatch(void **state) {
  static MmaArgs m;
  memset(&m, 0, sizeof m);
  m.kind = FRT_SIMT_MMA_BF16;
  m.kind_lane0 = FRT_SIMT_MMA_F16;
  void *bufs[] = {&m};
  size_t sizes[] = {sizeof m};
  FrtError err = {0};
  assert_int_not_equal(run(k_mma, &(Shape){{1, 1, 1}, {32, 1, 1}, 0, FRT_GPU_SYNC}, NULL, 1, bufs, sizes, &err), FRT_OK);
  assert_non_null(strstr(err.msg, "different shuffles"));
  m.kind = m.kind_lane0 = 7;
  assert_int_not_equal(run(k_mma, &(Shape){{1, 1, 1}, {32, 1, 1}, 0, FRT_GPU_SYNC}, NULL, 1, bufs, sizes, &err), FRT_OK);
  assert_non_null(strstr(err.msg, "mma of kind 7"));
}

/* ---- the ucontext fallback --------------------------------------------------------------------------- */

static int use_ucontext(void **state) { return setenv("FLOWRT_SIMT_FIBERS", "ucontext", 1); }
static int use_native(void **state) { return unsetenv("FLOWRT_SIMT_FIBERS"); }

static void test_bad_fibers_setting(void **state) {
  Rig r;
  rig_init(&r, k_nothing, &(Shape){{1, 1, 1}, {32, 1, 1}, 0, 0}, 0);
  setenv("FLOWRT_SIMT_FIBERS", "threads", 1);
  unsetenv("FLOWRT_SIMT_SCHEDULE");
  void *dev = NULL;
  FrtError err = {0};
  assert_int_equal(frt_gpu_simt.open(&r.gm, &dev, &err), FRT_ERR_INPUT);
  assert_string_equal(err.msg, "FLOWRT_SIMT_FIBERS wants native or ucontext, got 'threads'");
  unsetenv("FLOWRT_SIMT_FIBERS");
}

/* Each fiber test under both switches; named apart in cmocka's output. */
#define FIBER_TEST(f, mode) {#f " (" #mode ")", f, use_##mode, use_native, NULL}
#define FIBER_TESTS(mode)                                                                                      \
  FIBER_TEST(test_full_block_barrier, mode), FIBER_TEST(test_reduction, mode),                               \
      FIBER_TEST(test_missing_barrier_fails, mode), FIBER_TEST(test_shuffle_reductions, mode),               \
      FIBER_TEST(test_shuffle_edges, mode), FIBER_TEST(test_deadlocks, mode),                                \
      FIBER_TEST(test_device_survives_deadlock, mode), FIBER_TEST(test_shared_poisoned, mode),               \
      FIBER_TEST(test_memory_reused, mode), FIBER_TEST(test_mma, mode), FIBER_TEST(test_mma_kind_mismatch, mode)

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ids),
      cmocka_unit_test(test_schedule_order),
      cmocka_unit_test(test_misuse),
      cmocka_unit_test(test_bad_shapes),
      cmocka_unit_test(test_open_and_memory_errors),
      cmocka_unit_test(test_bad_fibers_setting),
      FIBER_TESTS(native),
      FIBER_TESTS(ucontext),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
