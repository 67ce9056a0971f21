/* test_gpu_runtime.c — the GPU runner (runtime/gpu.c), the CUDA backend (runtime/gpu_cuda.c), frt_main's
 * --device and the NCCL backend's refusals, without a GPU.
 *
 * The runner runs end to end over a host backend table defined here (its kernels are host functions looked
 * up by name), which also counts the calls, so the checks see that a run allocates nothing and that every
 * argument is its buffer plus its offset. The CUDA backend runs against a fake driver (fake_cuda.c, built
 * as a shared module: $FRT_TEST_FAKE_CUDA), against the toolkit's stub (CUDA_ERROR_STUB_LIBRARY) and
 * against no library at all; CUDA graphs against the fake's stream capture (and a build of it without the
 * graph entry points: fake_cuda_nographs, $FRT_TEST_FAKE_CUDA_NOGRAPHS). The model: y = (x + 1) * w[0] over 64 floats, with a check that the four
 * indices idx are in [0, 4), as a gather would check them.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "flowrt.h"
#include "flowrt_internal.h"
#include "gpu_backend.h"

#define STUB_LIBRARY "/usr/local/cuda/lib64/stubs/libcuda.so"
#define N 64

/* ---- the model ----------------------------------------------------------------------------------------- */

static const int64_t x_dims[] = {N}, idx_dims[] = {4};
static const FrtTensorDesc inputs[] = {{"x", FRT_F32, 1, x_dims}, {"idx", FRT_I64, 1, idx_dims}};
static const FrtTensorDesc outputs[] = {{"y", FRT_F32, 1, x_dims}};
static const char *const names[] = {"node 'add' (add)", "node 'gather' (gather)", "node 'mul' (mul)"};
static const float weights[2] = {2.0f, 0.0f};

static const FrtGpuArg check_args[] = {{FRT_GPU_ARG_WORKSPACE, 0, 0}, {FRT_GPU_ARG_INPUT, 1, 0}};
static const FrtGpuArg add_args[] = {{FRT_GPU_ARG_INPUT, 0, 0}, {FRT_GPU_ARG_OUTPUT, 0, 0}};
static const FrtGpuArg scale_args[] = {{FRT_GPU_ARG_OUTPUT, 0, 0}, {FRT_GPU_ARG_WEIGHTS, 0, 0}};
static const FrtGpuLaunch launches[] = {
    {"check_index", 1, {1, 1, 1}, {4, 1, 1}, 0, 0, 2, check_args},
    {"add_one", 0, {2, 1, 1}, {32, 1, 1}, 0, 0, 2, add_args},
    {"scale_w", 2, {2, 1, 1}, {32, 1, 1}, 0, 0, 2, scale_args},
};

static const FrtGpuModel gpu_code = {
    .arch = "sm_80",
    .ptx = "// fake PTX: the kernels are the fake driver's\n",
    .weights = (const unsigned char *)weights,
    .weights_size = sizeof weights,
    .workspace_size = 128,
    .n_launches = 3,
    .launches = launches,
    .n_kernels = 3,
    .kernel_names = names,
};

/* The CPU code: y = (x + 1) * 2 + 1000, so a test tells which device ran. */
static int cpu_run(const void *const *in, void *const *out, void *ws, FrtPool *pool) {
  const float *x = in[0];
  const int64_t *idx = in[1];
  float *y = out[0];
  for (int i = 0; i < 4; i++)
    if (idx[i] < 0 || idx[i] >= 4)
      return 2;
  for (int i = 0; i < N; i++)
    y[i] = (x[i] + 1.0f) * 2.0f + 1000.0f;
  return 0;
}

static const FrtModel cpu_model = {FRT_ABI_VERSION, "gpu_add", 2, 1, inputs, outputs, 0, cpu_run, 3, names};

static FrtModel gpu_model(void) {
  FrtModel m = cpu_model;
  m.gpu = &gpu_code;
  return m;
}

static float x[N];
static int64_t good_idx[4] = {0, 1, 2, 3}, bad_idx[4] = {0, 1, 9, 3};

static void fill_x(void) {
  for (int i = 0; i < N; i++)
    x[i] = (float)i * 0.5f;
}

static void expect_y(const float *y) {
  for (int i = 0; i < N; i++)
    if (y[i] != (x[i] + 1.0f) * 2.0f)
      fail_msg("y[%d] = %g, wanted %g", i, (double)y[i], (double)((x[i] + 1.0f) * 2.0f));
}

/* ---- a host backend -------------------------------------------------------------------------------------- */

typedef struct HostCounts {
  int opens, allocs, releases, uploads, downloads, zeros, launches, syncs, closes;
  uint64_t zero_addr, zero_bytes;
  uint64_t first_arg[8]; /* launch i's first argument in the last run */
  bool fail_alloc;
} HostCounts;

static HostCounts hc;
static const FrtGpuModel *host_gm;

static FrtStatus host_open(const FrtGpuModel *gm, void **dev, FrtError *err) {
  hc.opens++;
  host_gm = gm;
  *dev = &hc;
  return FRT_OK;
}

static const char *host_name(void *dev) { return "host test backend"; }

static FrtStatus host_alloc(void *dev, uint64_t bytes, uint64_t *addr, FrtError *err) {
  if (hc.fail_alloc)
    return frt_errorf(err, FRT_ERR_RESOURCE, "alloc of %llu bytes: out of memory", (unsigned long long)bytes);
  void *p = malloc(bytes);
  if (!p)
    return frt_errorf(err, FRT_ERR_RESOURCE, "out of memory");
  memset(p, 0xcd, bytes);
  hc.allocs++;
  *addr = (uintptr_t)p;
  return FRT_OK;
}

static void host_release(void *dev, uint64_t addr) {
  hc.releases++;
  free((void *)(uintptr_t)addr);
}

static FrtStatus host_upload(void *dev, uint64_t dst, const void *src, uint64_t bytes, FrtError *err) {
  hc.uploads++;
  memcpy((void *)(uintptr_t)dst, src, bytes);
  return FRT_OK;
}

static FrtStatus host_download(void *dev, void *dst, uint64_t src, uint64_t bytes, FrtError *err) {
  hc.downloads++;
  memcpy(dst, (const void *)(uintptr_t)src, bytes);
  return FRT_OK;
}

static FrtStatus host_zero(void *dev, uint64_t dst, uint64_t bytes, FrtError *err) {
  hc.zeros++;
  hc.zero_addr = dst;
  hc.zero_bytes = bytes;
  memset((void *)(uintptr_t)dst, 0, bytes);
  return FRT_OK;
}

static FrtStatus host_launch(void *dev, int32_t i, const FrtGpuLaunch *l, const uint64_t *args, FrtError *err) {
  hc.launches++;
  if (i < 8)
    hc.first_arg[i] = args[0];
  uint32_t threads = l->grid[0] * l->block[0];
  if (strcmp(l->kernel, "check_index") == 0) {
    int32_t *status = (int32_t *)(uintptr_t)args[0];
    const int64_t *idx = (const int64_t *)(uintptr_t)args[1];
    for (uint32_t t = 0; t < threads; t++)
      if (idx[t] < 0 || idx[t] >= 4)
        *status = 2;
  } else if (strcmp(l->kernel, "add_one") == 0) {
    const float *in = (const float *)(uintptr_t)args[0];
    float *out = (float *)(uintptr_t)args[1];
    for (uint32_t t = 0; t < threads; t++)
      out[t] = in[t] + 1.0f;
  } else if (strcmp(l->kernel, "scale_w") == 0) {
    float *out = (float *)(uintptr_t)args[0];
    const float *w = (const float *)(uintptr_t)args[1];
    for (uint32_t t = 0; t < threads; t++)
      out[t] *= w[0];
  } else {
    return frt_errorf(err, FRT_ERR_RESOURCE, "%s: no kernel '%s'", host_gm->kernel_names[l->node], l->kernel);
  }
  return FRT_OK;
}

static FrtStatus host_sync(void *dev, FrtError *err) {
  hc.syncs++;
  return FRT_OK;
}

static void host_close(void *dev) { hc.closes++; }

static const FrtGpuBackend host_backend = {
    .name = "host", .open = host_open, .device_name = host_name, .alloc = host_alloc, .release = host_release,
    .upload = host_upload, .download = host_download, .zero = host_zero, .launch = host_launch, .sync = host_sync,
    .close = host_close,
};

/* ---- the runner over the host backend -------------------------------------------------------------------- */

static void test_runner_end_to_end(void **state) {
  fill_x();
  memset(&hc, 0, sizeof hc);
  FrtModel m = gpu_model();
  FrtGpuSession *s = NULL;
  FrtError err = {0};
  assert_int_equal(frt_gpu_open_backend(&m, &host_backend, FRT_DEVICE_CUDA, &s, &err), FRT_OK);
  assert_string_equal(frt_gpu_device_name(s), "host test backend");
  /* One buffer per input and output, the workspace, the weights; the weights uploaded once. */
  assert_int_equal(hc.allocs, 5);
  assert_int_equal(hc.uploads, 1);
  float y[N];
  const void *ins[] = {x, good_idx};
  void *outs[] = {y};
  for (int run = 0; run < 3; run++) {
    memset(y, 0, sizeof y);
    assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
    expect_y(y);
  }
  assert_int_equal(hc.allocs, 5); /* nothing allocated by the runs */
  assert_int_equal(hc.zeros, 3);
  assert_int_equal(hc.zero_bytes, 64); /* the status word's 64 bytes, at the workspace's start */
  assert_int_equal(hc.zero_addr, hc.first_arg[0]);
  assert_int_equal(hc.launches, 9);
  assert_int_equal(hc.uploads, 1 + 3 * 2);
  assert_int_equal(hc.downloads, 3 * 2); /* the output and the status word */

  /* Bad data: the status word names the kernel, as model.c words the CPU's. */
  const void *bad[] = {x, bad_idx};
  assert_int_equal(frt_gpu_run(s, bad, outs, &err), FRT_ERR_INPUT);
  assert_string_equal(err.msg,
                      "model 'gpu_add': node 'gather' (gather): bad data at run time (an index out of range, ...)");
  /* The next run starts with a clean status word. */
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
  expect_y(y);
  assert_int_equal(frt_gpu_run(s, NULL, outs, &err), FRT_ERR_INPUT);
  const void *null_in[] = {x, NULL};
  assert_int_equal(frt_gpu_run(s, null_in, outs, &err), FRT_ERR_INPUT);
  assert_string_equal(err.msg, "model 'gpu_add': input 1 ('idx') is NULL");

  /* Profile without backend timers: the wall clock, one sync per launch, every node counted. */
  double acc[3] = {-1, -1, -1};
  acc[0] = acc[1] = acc[2] = 0;
  frt_gpu_set_profile(s, acc, 3);
  int syncs = hc.syncs;
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
  assert_int_equal(hc.syncs - syncs, 3 + 1);
  for (int k = 0; k < 3; k++)
    assert_true(acc[k] >= 0);
  frt_gpu_set_profile(s, NULL, 0);
  syncs = hc.syncs;
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
  assert_int_equal(hc.syncs - syncs, 1);
  frt_gpu_set_profile(s, acc, 2); /* the wrong size: ignored rather than overrun */
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
  frt_gpu_close(s);
  assert_int_equal(hc.releases, 5);
  assert_int_equal(hc.closes, 1);

  /* A failed allocation: one line, everything released. */
  memset(&hc, 0, sizeof hc);
  hc.fail_alloc = true;
  assert_int_equal(frt_gpu_open_backend(&m, &host_backend, FRT_DEVICE_CUDA, &s, &err), FRT_ERR_RESOURCE);
  assert_null(s);
  assert_string_equal(err.msg, "alloc of 256 bytes: out of memory");
  assert_int_equal(hc.closes, 1);
}

/* Offsets: each argument is its buffer's address plus its offset. */
static void test_runner_offsets(void **state) {
  static const FrtGpuArg args[] = {{FRT_GPU_ARG_WORKSPACE, 0, 64}, {FRT_GPU_ARG_INPUT, 1, 8}};
  static const FrtGpuArg args0[] = {{FRT_GPU_ARG_WORKSPACE, 0, 0}, {FRT_GPU_ARG_INPUT, 1, 0}};
  static const FrtGpuLaunch two[] = {{"check_index", 1, {1, 1, 1}, {1, 1, 1}, 0, 0, 2, args0},
                                     {"check_index", 1, {1, 1, 1}, {3, 1, 1}, 0, 0, 2, args}};
  FrtGpuModel g = gpu_code;
  g.launches = two;
  g.n_launches = 2;
  FrtModel m = gpu_model();
  m.gpu = &g;
  memset(&hc, 0, sizeof hc);
  FrtGpuSession *s = NULL;
  FrtError err;
  assert_int_equal(frt_gpu_open_backend(&m, &host_backend, FRT_DEVICE_CUDA, &s, &err), FRT_OK);
  float y[N];
  const void *ins[] = {x, good_idx};
  void *outs[] = {y};
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
  assert_int_equal(hc.first_arg[1], hc.first_arg[0] + 64);
  /* The second launch checks idx[1..3] and flags past the status word: the run is clean. */
  const void *bad1[] = {x, (int64_t[]){0, 9, 2, 3}};
  assert_int_equal(frt_gpu_run(s, bad1, outs, &err), FRT_OK);
  const void *bad0[] = {x, (int64_t[]){7, 1, 2, 3}};
  assert_int_equal(frt_gpu_run(s, bad0, outs, &err), FRT_ERR_INPUT); /* the first launch sees idx[0] */
  frt_gpu_close(s);
}

/* ---- the runner's graphs, over the host backend with graph entries ----------------------------------------- */

static struct {
  int captures, graph_launches;
  bool fail_capture;
  const uint64_t *args; /* what the capture was given */
} hg;

static FrtStatus host_graph_capture(void *dev, const uint64_t *args, FrtError *err) {
  hg.captures++;
  if (hg.fail_capture)
    return frt_errorf(err, FRT_ERR_UNSUPPORTED, "no graphs today");
  hg.args = args;
  return FRT_OK;
}

/* Replays the captured launches through host_launch, as a driver replays a graph's kernel nodes. */
static FrtStatus host_graph_launch(void *dev, FrtError *err) {
  hg.graph_launches++;
  const uint64_t *args = hg.args;
  for (int32_t i = 0; i < host_gm->n_launches; i++) {
    FrtStatus st = host_launch(dev, i, &host_gm->launches[i], args, err);
    if (st != FRT_OK)
      return st;
    args += host_gm->launches[i].n_args;
  }
  return FRT_OK;
}

static void test_runner_graphs(void **state) {
  FrtGpuBackend be = host_backend;
  be.graph_capture = host_graph_capture;
  be.graph_launch = host_graph_launch;
  fill_x();
  memset(&hc, 0, sizeof hc);
  memset(&hg, 0, sizeof hg);
  FrtModel m = gpu_model();
  FrtGpuSession *s = NULL;
  FrtError err = {0};
  assert_int_equal(frt_gpu_open_backend(&m, &be, FRT_DEVICE_CUDA, &s, &err), FRT_OK);
  assert_int_equal(hg.captures, 1); /* captured at open, where allocating is allowed */
  assert_int_equal(hc.launches, 0);  /* and not run */
  float y[N];
  const void *ins[] = {x, good_idx}, *bad[] = {x, bad_idx};
  void *outs[] = {y};
  for (int run = 0; run < 3; run++) {
    memset(y, 0, sizeof y);
    assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
    expect_y(y);
  }
  assert_int_equal(hg.captures, 1);
  assert_int_equal(hg.graph_launches, 3);
  assert_int_equal(hc.launches, 9); /* all of them through the graph */
  assert_int_equal(hc.syncs, 3);
  /* Bad data through the graph: the status word still names the node, and the next run is clean. */
  assert_int_equal(frt_gpu_run(s, bad, outs, &err), FRT_ERR_INPUT);
  assert_string_equal(err.msg,
                      "model 'gpu_add': node 'gather' (gather): bad data at run time (an index out of range, ...)");
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
  assert_int_equal(hg.graph_launches, 5);
  /* Profiling: launch by launch (the wall clock waits after each), the graph kept for later. */
  double acc[3] = {0, 0, 0};
  frt_gpu_set_profile(s, acc, 3);
  int syncs = hc.syncs;
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
  expect_y(y);
  assert_int_equal(hg.graph_launches, 5);
  assert_int_equal(hc.syncs - syncs, 3 + 1);
  frt_gpu_set_profile(s, NULL, 0);
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
  assert_int_equal(hg.graph_launches, 6);
  assert_int_equal(hg.captures, 1);
  frt_gpu_close(s);

  /* A capture that fails: no error, launch by launch, and no second try. */
  memset(&hc, 0, sizeof hc);
  memset(&hg, 0, sizeof hg);
  hg.fail_capture = true;
  assert_int_equal(frt_gpu_open_backend(&m, &be, FRT_DEVICE_CUDA, &s, &err), FRT_OK);
  for (int run = 0; run < 2; run++) {
    memset(y, 0, sizeof y);
    assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
    expect_y(y);
  }
  assert_int_equal(hg.captures, 1);
  assert_int_equal(hg.graph_launches, 0);
  assert_int_equal(hc.launches, 6);
  frt_gpu_close(s);

  /* Profiled from the first run: launch by launch until the profile is off. */
  memset(&hc, 0, sizeof hc);
  memset(&hg, 0, sizeof hg);
  assert_int_equal(frt_gpu_open_backend(&m, &be, FRT_DEVICE_CUDA, &s, &err), FRT_OK);
  frt_gpu_set_profile(s, acc, 3);
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
  assert_int_equal(hg.graph_launches, 0);
  assert_int_equal(hc.launches, 3);
  frt_gpu_set_profile(s, NULL, 0);
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
  expect_y(y);
  assert_int_equal(hg.captures, 1);
  assert_int_equal(hg.graph_launches, 1);
  frt_gpu_close(s);

  /* A model without launches has nothing to capture. */
  FrtGpuModel none = gpu_code;
  none.n_launches = 0;
  m.gpu = &none;
  memset(&hg, 0, sizeof hg);
  assert_int_equal(frt_gpu_open_backend(&m, &be, FRT_DEVICE_CUDA, &s, &err), FRT_OK);
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
  assert_int_equal(hg.captures, 0);
  assert_int_equal(hg.graph_launches, 0);
  frt_gpu_close(s);
}

/* ---- malformed launch tables ------------------------------------------------------------------------------ */

static void expect_bad(const FrtModel *m, const char *want) {
  FrtGpuSession *s = (FrtGpuSession *)1;
  FrtError err = {0};
  memset(&hc, 0, sizeof hc);
  FrtStatus st = frt_gpu_open_backend(m, &host_backend, FRT_DEVICE_CUDA, &s, &err);
  if (st == FRT_OK || s || strcmp(err.msg, want) != 0 || strchr(err.msg, '\n'))
    fail_msg("status %d, '%s'; wanted '%s'", (int)st, err.msg, want);
  assert_int_equal(hc.opens, 0); /* refused before the device starts */
}

static void test_malformed_tables(void **state) {
  FrtModel m = gpu_model();
  FrtGpuModel g;
  FrtGpuLaunch l[3];
  FrtGpuArg a[2];
#define RESET()                                                                                                  \
  do {                                                                                                           \
    g = gpu_code;                                                                                                \
    memcpy(l, launches, sizeof l);                                                                               \
    memcpy(a, add_args, sizeof a);                                                                               \
    l[1].args = a;                                                                                               \
    g.launches = l;                                                                                              \
    m = gpu_model();                                                                                             \
    m.gpu = &g;                                                                                                  \
  } while (0)
  RESET();
  a[0].index = 2;
  expect_bad(&m, "model 'gpu_add': malformed GPU code: launch 1 (node 'add' (add)) argument 0 names input 2, the "
                 "model has 2");
  RESET();
  a[1].index = -1;
  expect_bad(&m, "model 'gpu_add': malformed GPU code: launch 1 (node 'add' (add)) argument 1 names output -1, the "
                 "model has 1");
  RESET();
  a[1].offset = 4 * N + 1;
  expect_bad(&m, "model 'gpu_add': malformed GPU code: launch 1 (node 'add' (add)) argument 1 points 257 bytes into "
                 "a output of 256 bytes");
  RESET();
  a[0].offset = UINT64_MAX; /* base + offset would wrap */
  expect_bad(&m, "model 'gpu_add': malformed GPU code: launch 1 (node 'add' (add)) argument 0 points "
                 "18446744073709551615 bytes into a input of 256 bytes");
  RESET();
  a[1] = (FrtGpuArg){FRT_GPU_ARG_WEIGHTS, 0, 9};
  expect_bad(&m, "model 'gpu_add': malformed GPU code: launch 1 (node 'add' (add)) argument 1 points 9 bytes into a "
                 "weights buffer of 8 bytes");
  RESET();
  a[1] = (FrtGpuArg){FRT_GPU_ARG_WORKSPACE, 1, 0};
  expect_bad(&m, "model 'gpu_add': malformed GPU code: launch 1 (node 'add' (add)) argument 1 names workspace 1 "
                 "(there is one)");
  RESET();
  a[1].kind = 9;
  expect_bad(&m, "model 'gpu_add': malformed GPU code: launch 1 (node 'add' (add)) argument 1 has kind 9 (not input, "
                 "output, workspace or weights)");
  RESET();
  l[2].node = 3;
  expect_bad(&m, "model 'gpu_add': malformed GPU code: launch 2 names node 3, the model has 3");
  RESET();
  l[1].block[0] = 2048;
  expect_bad(&m, "model 'gpu_add': malformed GPU code: launch 1 (node 'add' (add)) has grid 2x1x1 of blocks "
                 "2048x1x1: empty, or more than 1024 threads a block");
  RESET();
  l[1].grid[2] = 0;
  expect_bad(&m, "model 'gpu_add': malformed GPU code: launch 1 (node 'add' (add)) has grid 2x1x0 of blocks "
                 "32x1x1: empty, or more than 1024 threads a block");
  RESET();
  l[1].block[0] = l[1].block[1] = l[1].block[2] = 0x80000; /* the product overflows 32 bits */
  expect_bad(&m, "model 'gpu_add': malformed GPU code: launch 1 (node 'add' (add)) has grid 2x1x1 of blocks "
                 "524288x524288x524288: empty, or more than 1024 threads a block");
  RESET();
  l[0].n_args = -1;
  expect_bad(&m, "model 'gpu_add': malformed GPU code: launch 0 (node 'gather' (gather)) has -1 arguments");
  RESET();
  l[0].kernel = NULL;
  expect_bad(&m, "model 'gpu_add': malformed GPU code: launch 0 has no kernel name");
  RESET();
  g.workspace_size = 32;
  expect_bad(&m, "model 'gpu_add': malformed GPU code: a workspace of 32 bytes has no room for the 64-byte status "
                 "word");
  RESET();
  g.weights = NULL;
  expect_bad(&m, "model 'gpu_add': malformed GPU code: weights_size without weights");
  RESET();
  g.n_launches = -2;
  expect_bad(&m, "model 'gpu_add': malformed GPU code: the launch table's counts");
  /* A tensor whose size overflows. */
  static const int64_t huge[] = {INT64_MAX / 2, 4};
  FrtTensorDesc ins[2] = {inputs[0], {"idx", FRT_I64, 2, huge}};
  RESET();
  m.inputs = ins;
  expect_bad(&m, "model 'gpu_add': malformed GPU code: input 1's size overflows");
  /* The code a device needs. */
  RESET();
  g.ptx = NULL;
  expect_bad(&m, "model 'gpu_add': its GPU code was built for the SIMT host emulator (no PTX), not for CUDA");
  RESET();
  FrtGpuSession *s = NULL;
  FrtError err;
  assert_int_equal(frt_gpu_open_backend(&m, &host_backend, FRT_DEVICE_SIMT, &s, &err), FRT_ERR_UNSUPPORTED);
  assert_string_equal(err.msg, "model 'gpu_add': its GPU code has no host-compiled kernels for the SIMT emulator");
  /* A launch table that is fine opens. */
  RESET();
  a[1].offset = 4 * N; /* one past the end: allowed */
  assert_int_equal(frt_gpu_open_backend(&m, &host_backend, FRT_DEVICE_CUDA, &s, &err), FRT_OK);
  frt_gpu_close(s);
#undef RESET
}

static void test_no_gpu_code(void **state) {
  FrtGpuSession *s = (FrtGpuSession *)1;
  FrtError err;
  assert_int_equal(frt_gpu_open(&cpu_model, FRT_DEVICE_CUDA, &s, &err), FRT_ERR_UNSUPPORTED);
  assert_null(s);
  assert_string_equal(err.msg, "this model has no GPU code: build it with --device cuda");
  FrtModel m = gpu_model();
  assert_int_equal(frt_gpu_open(&m, FRT_DEVICE_CPU, &s, &err), FRT_ERR_INPUT);
  assert_int_equal(frt_gpu_open(NULL, FRT_DEVICE_CUDA, &s, &err), FRT_ERR_INPUT);
  m.abi_version = 5;
  assert_int_equal(frt_gpu_open(&m, FRT_DEVICE_CUDA, &s, &err), FRT_ERR_INPUT);
  assert_string_equal(err.msg, "model 'gpu_add' was built for runtime ABI 5, this runtime is ABI 8");
  frt_gpu_close(NULL);
}

/* ---- the CUDA backend: no driver, the stub, the fake driver ----------------------------------------------- */

static FrtStatus open_cuda(const char *library, FrtGpuSession **s, FrtError *err) {
  setenv("FLOWRT_CUDA_LIBRARY", library, 1);
  FrtModel m = gpu_model();
  static FrtModel keep; /* the session keeps the model's address */
  keep = m;
  return frt_gpu_open(&keep, FRT_DEVICE_CUDA, s, err);
}

static void test_cuda_no_driver(void **state) {
  FrtGpuSession *s = NULL;
  FrtError err;
  assert_int_equal(open_cuda("/nonexistent/libcuda.so.1", &s, &err), FRT_ERR_UNSUPPORTED);
  assert_null(s);
  assert_string_equal(err.msg, "no CUDA driver: /nonexistent/libcuda.so.1: cannot open shared object file: No such "
                               "file or directory");
  /* The default name, where this machine has no driver (the message a user without one sees). */
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  void *real = h ? h : dlopen("libcuda.so.1", RTLD_NOW);
  if (real) {
    dlclose(real);
    return;
  }
  unsetenv("FLOWRT_CUDA_LIBRARY");
  assert_int_equal(frt_gpu_open(&(FrtModel){0}, FRT_DEVICE_CUDA, &s, &err), FRT_ERR_INPUT); /* ABI 0 */
  FrtModel m = gpu_model();
  assert_int_equal(frt_gpu_open(&m, FRT_DEVICE_CUDA, &s, &err), FRT_ERR_UNSUPPORTED);
  assert_string_equal(err.msg,
                      "no CUDA driver: libcuda.so.1: cannot open shared object file: No such file or directory");
}

static void test_cuda_stub(void **state) {
  if (access(STUB_LIBRARY, R_OK) != 0)
    skip();
  FrtGpuSession *s = NULL;
  FrtError err;
  assert_int_equal(open_cuda(STUB_LIBRARY, &s, &err), FRT_ERR_UNSUPPORTED);
  assert_null(s);
  assert_string_equal(err.msg, "cuInit: CUDA_ERROR_STUB_LIBRARY (the stub library, not a driver: no GPU driver is "
                               "installed)");
  /* Failed loads are not kept: the next open tries again, with the same words. */
  assert_int_equal(open_cuda(STUB_LIBRARY, &s, &err), FRT_ERR_UNSUPPORTED);
  assert_non_null(strstr(err.msg, "CUDA_ERROR_STUB_LIBRARY"));
}

static const char *fake_library(void) {
  const char *p = getenv("FRT_TEST_FAKE_CUDA");
  return p && *p ? p : NULL;
}

static int fake_live_of(const char *library) {
  void *h = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(h);
  int (*live)(void) = (int (*)(void))dlsym(h, "fake_cuda_live");
  assert_non_null(live);
  int n = live();
  dlclose(h);
  return n;
}

static int fake_live(void) { return fake_live_of(fake_library()); }

/* The fake's counters: kernels run one by one, graph launches, captures begun (cumulative while loaded). */
typedef struct FakeCounts {
  int direct, graphs, captures;
} FakeCounts;

static FakeCounts fake_counts_of(const char *library) {
  void *h = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(h);
  void (*counts)(int *) = (void (*)(int *))dlsym(h, "fake_cuda_counts");
  assert_non_null(counts);
  int c[3];
  counts(c);
  dlclose(h);
  return (FakeCounts){c[0], c[1], c[2]};
}

static void test_cuda_fake_driver(void **state) {
  if (!fake_library())
    skip();
  fill_x();
  FrtGpuSession *s = NULL;
  FrtError err;
  setenv("FAKE_CUDA_NO_DEVICE", "1", 1);
  assert_int_equal(open_cuda(fake_library(), &s, &err), FRT_ERR_UNSUPPORTED);
  assert_string_equal(err.msg, "no CUDA GPU found");
  unsetenv("FAKE_CUDA_NO_DEVICE");

  assert_int_equal(open_cuda(fake_library(), &s, &err), FRT_OK);
  assert_string_equal(frt_gpu_device_name(s), "Fake GPU (sm_90, 16 GiB)");
  float y[N];
  const void *ins[] = {x, good_idx};
  void *outs[] = {y};
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
  expect_y(y);
  const void *bad[] = {x, bad_idx};
  assert_int_equal(frt_gpu_run(s, bad, outs, &err), FRT_ERR_INPUT);
  assert_string_equal(err.msg,
                      "model 'gpu_add': node 'gather' (gather): bad data at run time (an index out of range, ...)");
  /* Events: the fake clock makes every launch 0.5 ms. */
  double acc[3] = {0, 0, 0};
  frt_gpu_set_profile(s, acc, 3);
  for (int r = 0; r < 2; r++)
    assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
  for (int k = 0; k < 3; k++)
    assert_true(acc[k] > 0.00099 && acc[k] < 0.00101);
  frt_gpu_set_profile(s, NULL, 0);
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
  assert_true(acc[0] > 0.00099 && acc[0] < 0.00101);
  expect_y(y);
  frt_gpu_close(s);
  assert_int_equal(fake_live(), 0); /* buffers, events, stream, module and context all released */

  /* An older GPU than the PTX's. */
  setenv("FAKE_CUDA_CC", "75", 1);
  assert_int_equal(open_cuda(fake_library(), &s, &err), FRT_ERR_UNSUPPORTED);
  assert_string_equal(err.msg, "the GPU is sm_75 but the model's PTX was compiled for sm_80: rebuild with --gpu sm_75");
  unsetenv("FAKE_CUDA_CC");
  assert_int_equal(fake_live(), 0);

  /* The JIT's log: its first line. A kernel the module lacks names its node. A fault names the driver's words. */
  static FrtGpuModel g;
  static FrtGpuLaunch l[3];
  static FrtModel m;
  g = gpu_code;
  g.ptx = "// SYNTAX ERROR here\n";
  m = gpu_model();
  m.gpu = &g;
  assert_int_equal(frt_gpu_open(&m, FRT_DEVICE_CUDA, &s, &err), FRT_ERR_UNSUPPORTED);
  assert_string_equal(err.msg, "loading the PTX: ptxas application ptx input, line 5; error   : syntax error");
  g = gpu_code;
  memcpy(l, launches, sizeof l);
  l[2].kernel = "nope";
  g.launches = l;
  assert_int_equal(frt_gpu_open(&m, FRT_DEVICE_CUDA, &s, &err), FRT_ERR_UNSUPPORTED);
  assert_string_equal(err.msg, "node 'mul' (mul): the PTX has no kernel 'nope': CUDA_ERROR_NOT_FOUND (named symbol "
                               "not found)");
  l[2].kernel = "fault";
  assert_int_equal(frt_gpu_open(&m, FRT_DEVICE_CUDA, &s, &err), FRT_OK);
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_ERR_RESOURCE);
  assert_string_equal(err.msg, "model 'gpu_add': the GPU failed while running the kernels (CUDA_LAUNCH_BLOCKING=1 "
                               "names the node): CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was "
                               "encountered)");
  frt_gpu_close(s);
  g.arch = "compute_80";
  assert_int_equal(frt_gpu_open(&m, FRT_DEVICE_CUDA, &s, &err), FRT_ERR_INPUT);
  assert_string_equal(err.msg, "malformed GPU code: the PTX's target 'compute_80' is not sm_NN");
  assert_int_equal(fake_live(), 0);
}

/* ---- CUDA graphs on the fake driver ---------------------------------------------------------------------------- */

/* Opens the model on `library`, runs it `runs` times on good data (each checked) and returns the change in
 * the fake's counters; y holds the last run's output. The session is closed and nothing is left allocated. */
static FakeCounts run_on(const char *library, int runs, float *y) {
  FrtGpuSession *s = NULL;
  FrtError err;
  /* Loaded first, so that the counters before the open are this library's. */
  if (open_cuda(library, &s, &err) != FRT_OK)
    fail_msg("open on %s: %s", library, err.msg);
  frt_gpu_close(s);
  FakeCounts before = fake_counts_of(library);
  if (open_cuda(library, &s, &err) != FRT_OK)
    fail_msg("open on %s: %s", library, err.msg);
  const void *ins[] = {x, good_idx};
  void *outs[] = {y};
  for (int r = 0; r < runs; r++) {
    memset(y, 0, N * sizeof *y);
    if (frt_gpu_run(s, ins, outs, &err) != FRT_OK)
      fail_msg("run %d on %s: %s", r, library, err.msg);
    expect_y(y);
  }
  FakeCounts after = fake_counts_of(library);
  frt_gpu_close(s);
  assert_int_equal(fake_live_of(library), 0);
  return (FakeCounts){after.direct - before.direct, after.graphs - before.graphs, after.captures - before.captures};
}

static void test_cuda_graphs(void **state) {
  if (!fake_library())
    skip();
  fill_x();
  unsetenv("FLOWRT_CUDA_GRAPHS");
  unsetenv("FAKE_CUDA_GRAPH_FAIL");
  /* With graphs: one capture, then one graph launch a run and no kernel launched by itself. */
  float with[N], without[N];
  FakeCounts c = run_on(fake_library(), 4, with);
  assert_int_equal(c.captures, 1);
  assert_int_equal(c.graphs, 4);
  assert_int_equal(c.direct, 0);
  /* FLOWRT_CUDA_GRAPHS=0: the three launches one by one, the same results. Other values leave them on. */
  setenv("FLOWRT_CUDA_GRAPHS", "0", 1);
  c = run_on(fake_library(), 4, without);
  assert_int_equal(c.captures, 0);
  assert_int_equal(c.graphs, 0);
  assert_int_equal(c.direct, 4 * 3);
  assert_memory_equal(with, without, sizeof with);
  setenv("FLOWRT_CUDA_GRAPHS", "1", 1);
  c = run_on(fake_library(), 2, with);
  assert_int_equal(c.graphs, 2);
  unsetenv("FLOWRT_CUDA_GRAPHS");

  /* A capture that fails at any step: no error, launch by launch, no graph left behind (run_on checks). */
  static const char *const steps[] = {"begin", "launch", "end", "instantiate"};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    setenv("FAKE_CUDA_GRAPH_FAIL", steps[i], 1);
    c = run_on(fake_library(), 3, without);
    if (c.graphs != 0 || c.direct != 3 * 3 || c.captures != (strcmp(steps[i], "begin") == 0 ? 0 : 1))
      fail_msg("failing at %s: %d graph launches, %d direct, %d captures", steps[i], c.graphs, c.direct, c.captures);
    assert_memory_equal(with, without, sizeof with);
  }
  unsetenv("FAKE_CUDA_GRAPH_FAIL");

  /* Through the graph: bad data names its node, and a fault surfaces at the run's wait. */
  FrtGpuSession *s = NULL;
  FrtError err;
  float y[N];
  const void *ins[] = {x, good_idx}, *bad[] = {x, bad_idx};
  void *outs[] = {y};
  FakeCounts before = fake_counts_of(fake_library());
  assert_int_equal(open_cuda(fake_library(), &s, &err), FRT_OK);
  assert_int_equal(frt_gpu_run(s, bad, outs, &err), FRT_ERR_INPUT);
  assert_string_equal(err.msg,
                      "model 'gpu_add': node 'gather' (gather): bad data at run time (an index out of range, ...)");
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
  expect_y(y);
  /* Profiling: per-launch events, so launch by launch; the graph again once the profile is off. */
  double acc[3] = {0, 0, 0};
  frt_gpu_set_profile(s, acc, 3);
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
  expect_y(y);
  for (int k = 0; k < 3; k++)
    assert_true(acc[k] > 0.00049 && acc[k] < 0.00051);
  frt_gpu_set_profile(s, NULL, 0);
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_OK);
  expect_y(y);
  FakeCounts after = fake_counts_of(fake_library());
  assert_int_equal(after.captures - before.captures, 1);
  assert_int_equal(after.graphs - before.graphs, 3);
  assert_int_equal(after.direct - before.direct, 3);
  frt_gpu_close(s);

  static FrtGpuModel g;
  static FrtGpuLaunch l[3];
  static FrtModel m;
  g = gpu_code;
  memcpy(l, launches, sizeof l);
  l[2].kernel = "fault";
  g.launches = l;
  m = gpu_model();
  m.gpu = &g;
  assert_int_equal(frt_gpu_open(&m, FRT_DEVICE_CUDA, &s, &err), FRT_OK);
  before = fake_counts_of(fake_library());
  assert_int_equal(frt_gpu_run(s, ins, outs, &err), FRT_ERR_RESOURCE);
  assert_non_null(strstr(err.msg, "the GPU failed while running the kernels"));
  assert_int_equal(fake_counts_of(fake_library()).graphs - before.graphs, 1);
  frt_gpu_close(s);
  assert_int_equal(fake_live(), 0);

  /* A driver without the graph entry points: launch by launch, the same results. */
  const char *old = getenv("FRT_TEST_FAKE_CUDA_NOGRAPHS");
  if (old && *old) {
    c = run_on(old, 3, without);
    assert_int_equal(c.graphs, 0);
    assert_int_equal(c.captures, 0);
    assert_int_equal(c.direct, 3 * 3);
    assert_memory_equal(with, without, sizeof with);
  }
}

/* ---- frt_main --device ------------------------------------------------------------------------------------- */

static char tmpdir[64];

typedef struct Run {
  int rc;
  char out[4096], err[4096];
} Run;

static void slurp(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
  buf[n] = 0;
  if (f)
    fclose(f);
}

/* Runs frt_main with stdout and stderr captured. */
static void run_main(Run *r, const FrtModel *m, const char *const *args) {
  char *argv[32], po[128], pe[128];
  int argc = 0;
  argv[argc++] = "/some/where/model";
  for (; args[argc - 1]; argc++)
    argv[argc] = (char *)args[argc - 1];
  argv[argc] = NULL;
  snprintf(po, sizeof po, "%s/stdout", tmpdir);
  snprintf(pe, sizeof pe, "%s/stderr", tmpdir);
  fflush(stdout);
  fflush(stderr);
  int so = dup(1), se = dup(2);
  int fo = open(po, O_WRONLY | O_CREAT | O_TRUNC, 0644), fe = open(pe, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fo, 1);
  dup2(fe, 2);
  r->rc = frt_main(argc, argv, m);
  fflush(stdout);
  fflush(stderr);
  dup2(so, 1);
  dup2(se, 2);
  close(so);
  close(se);
  close(fo);
  close(fe);
  slurp(po, r->out, sizeof r->out);
  slurp(pe, r->err, sizeof r->err);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static char x_path[128], idx_path[128], bad_path[128];

static int setup_files(void **state) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/test_gpu_runtime.XXXXXX");
  if (!mkdtemp(tmpdir))
    return -1;
  fill_x();
  snprintf(x_path, sizeof x_path, "%s/x.npy", tmpdir);
  snprintf(idx_path, sizeof idx_path, "%s/idx.npy", tmpdir);
  snprintf(bad_path, sizeof bad_path, "%s/bad.npy", tmpdir);
  FrtTensor tx = {.dtype = FRT_F32, .rank = 1, .dims = {N}, .data = x, .nbytes = sizeof x};
  FrtTensor ti = {.dtype = FRT_I64, .rank = 1, .dims = {4}, .data = good_idx, .nbytes = sizeof good_idx};
  FrtTensor tb = ti;
  tb.data = bad_idx;
  FrtError err;
  return frt_tensor_write_npy(x_path, &tx, &err) || frt_tensor_write_npy(idx_path, &ti, &err) ||
         frt_tensor_write_npy(bad_path, &tb, &err);
}

static int teardown_files(void **state) {
  char p[160];
  const char *files[] = {"x.npy", "idx.npy", "bad.npy", "stdout", "stderr"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", tmpdir, files[i]);
    unlink(p);
  }
  rmdir(tmpdir);
  return 0;
}

static void expect_run(const Run *r, int rc, const char *out_part, const char *err_text) {
  if (r->rc != rc || (out_part && !strstr(r->out, out_part)) || (err_text && strcmp(r->err, err_text) != 0))
    fail_msg("exit %d, stdout '%s', stderr '%s'; wanted %d, '%s' in stdout, stderr '%s'", r->rc, r->out, r->err, rc,
             out_part ? out_part : "", err_text ? err_text : "(any)");
}

static void test_main_device(void **state) {
  static Run r;
  FrtModel m = gpu_model();
  /* CPU code: y = (x + 1) * 2 + 1000, so 1002 first. */
  run_main(&r, &m, ARGS(x_path, idx_path, "--device", "cpu"));
  expect_run(&r, 0, "values: [1002, 1003, 1004,", "");
  run_main(&r, &m, ARGS(x_path, idx_path, "--device", "tpu"));
  expect_run(&r, 2, NULL, "model: error: --device wants cuda, cpu or auto, got 'tpu'\n");
  run_main(&r, &cpu_model, ARGS(x_path, idx_path, "--device", "cuda"));
  expect_run(&r, 2, NULL, "model: error: this model has no GPU code: build it with --device cuda\n");
  run_main(&r, &cpu_model, ARGS(x_path, idx_path, "--device=auto")); /* auto without GPU code: the CPU, silently */
  expect_run(&r, 0, "values: [1002,", "");
  run_main(&r, &cpu_model, ARGS(x_path, idx_path)); /* a model without GPU code runs as it always did */
  expect_run(&r, 0, "values: [1002,", "");

  /* No driver: auto runs on the CPU and says why once; cuda fails. */
  setenv("FLOWRT_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  run_main(&r, &m, ARGS(x_path, idx_path));
  expect_run(&r, 0, "values: [1002,",
             "model: no usable GPU (no CUDA driver: /nonexistent/libcuda.so.1: cannot open shared object file: No "
             "such file or directory): running on the CPU\n");
  run_main(&r, &m, ARGS(x_path, idx_path, "--device", "cuda"));
  expect_run(&r, 1, NULL,
             "model: error: no CUDA driver: /nonexistent/libcuda.so.1: cannot open shared object file: No such file "
             "or directory\n");
  run_main(&r, &m, ARGS("--help"));
  expect_run(&r, 0, "gpu: sm_80 (--device auto", "");
  assert_non_null(strstr(r.out, "--device D"));
  run_main(&r, &m, ARGS(x_path, idx_path, "--device", "simt"));
  expect_run(&r, 1, NULL, "model: error: model 'gpu_add': its GPU code has no host-compiled kernels for the SIMT "
                          "emulator\n");

  if (!fake_library())
    return;
  /* The fake driver: the GPU's results ((x + 1) * 2: 2 first), its profile, its data errors. */
  setenv("FLOWRT_CUDA_LIBRARY", fake_library(), 1);
  run_main(&r, &m, ARGS(x_path, idx_path));
  expect_run(&r, 0, "values: [2, 3, 4, 5, 6, 7, 8, 9, ...] (64 values)", "");
  run_main(&r, &m, ARGS(x_path, idx_path, "--device", "cuda", "--bench", "3", "--profile"));
  expect_run(&r, 0, "latency: min ", "");
  assert_non_null(strstr(r.out, "(3 runs after 1 warm-up, on Fake GPU (sm_90, 16 GiB))"));
  assert_non_null(strstr(r.out, "profile: 3 kernels, 1.5000 ms a run in kernels (mean of 3 runs, on Fake GPU"));
  assert_non_null(strstr(r.out, "     500.0   33.3%"));
  assert_non_null(strstr(r.out, "node 'gather' (gather)"));
  run_main(&r, &m, ARGS(x_path, bad_path, "--device", "cuda"));
  expect_run(&r, 1, NULL,
             "model: error: model 'gpu_add': node 'gather' (gather): bad data at run time (an index out of range, "
             "...)\n");
  setenv("FAKE_CUDA_CC", "75", 1);
  run_main(&r, &m, ARGS(x_path, idx_path, "--print"));
  expect_run(&r, 0, "values: [1002,",
             "model: no usable GPU (the GPU is sm_75 but the model's PTX was compiled for sm_80: rebuild with --gpu "
             "sm_75): running on the CPU\n");
  unsetenv("FAKE_CUDA_CC");
  assert_int_equal(fake_live(), 0);
}

/* ---- NCCL ---------------------------------------------------------------------------------------------------- */

/* Outside mpirun the NCCL backend refuses as MPI's does (the refusals under mpirun: tests/runtime/mpi.sh nccl). */
static void test_nccl_needs_mpirun(void **state) {
  if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK"))
    skip();
  FrtError err;
  assert_int_equal(frt_coll_init_with(&frt_coll_nccl, 2, 0, NULL, &err), FRT_ERR_UNSUPPORTED);
  assert_string_equal(err.msg, "this program was compiled for 2 ranks: run it with mpirun -np 2");
  assert_int_equal(frt_coll_active(), 0);
  /* One rank: nothing to start. */
  assert_int_equal(frt_coll_init_with(&frt_coll_nccl, 1, 0, NULL, &err), FRT_OK);
  frt_coll_finalize();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_runner_end_to_end), cmocka_unit_test(test_runner_offsets),
      cmocka_unit_test(test_runner_graphs),     cmocka_unit_test(test_cuda_graphs),
      cmocka_unit_test(test_malformed_tables),  cmocka_unit_test(test_no_gpu_code),
      cmocka_unit_test(test_cuda_no_driver),    cmocka_unit_test(test_cuda_stub),
      cmocka_unit_test(test_cuda_fake_driver),  cmocka_unit_test(test_main_device),
      cmocka_unit_test(test_nccl_needs_mpirun),
  };
  return cmocka_run_group_tests(tests, setup_files, teardown_files);
}
