/* fake_cuda.c — a fake libcuda.so.1 for test_gpu_runtime: the driver API entry points the CUDA backend
 * (runtime/gpu_cuda.c) resolves, over host memory, so the backend and the runner run end to end on a machine
 * without a GPU (FLOWRT_CUDA_LIBRARY points at this library).
 *
 * "Device" memory is malloc'd (a CUdeviceptr is the host address); a module's "PTX" is any text, and its
 * kernels are the few host functions below, looked up by name; a launch runs the kernel at once, one call
 * per thread of the grid (x only). Events read a fake clock that each cuEventRecord advances by 0.5 ms, so a
 * launch between two events takes exactly 0.5 ms. Knobs (read at each call): FAKE_CUDA_CC=75 makes the
 * device sm_75 (default sm_90); FAKE_CUDA_NO_DEVICE=1 makes it report no device. A PTX text containing
 * "SYNTAX ERROR" fails to load with a two-line JIT log. fake_cuda_live() counts allocations not yet freed.
 *
 * Stream capture (CUDA graphs): between cuStreamBeginCapture_v2 and cuStreamEndCapture a launch is recorded
 * (kernel, threads, its parameters' values) instead of run; cuGraphInstantiateWithFlags copies the record and
 * cuGraphLaunch replays it. Any other stream work during a capture (a copy, a memset, an event, a wait) is
 * refused with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture, so the tests see that
 * nothing but launches goes into the graph. FAKE_CUDA_GRAPH_FAIL=begin|launch|end|instantiate makes that step
 * fail. Built with -DFAKE_CUDA_WITHOUT_GRAPHS the library has no graph entry points at all (a dlsym'd symbol
 * cannot be hidden by an environment variable, so that is a second build: fake_cuda_nographs).
 * fake_cuda_counts() reads how many kernels ran one by one, how many graph launches ran, how many captures
 * began.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef uint64_t CUdeviceptr;

enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, INVALID_PTX = 218, NOT_FOUND = 500, ILLEGAL_ADDRESS = 700 };

typedef void (*FakeKernel)(uint32_t t, void **params);

enum { STREAM_CAPTURE_UNSUPPORTED = 900, STREAM_CAPTURE_INVALIDATED = 901, NOT_SUPPORTED = 801, ILLEGAL_STATE = 401 };

#define MAX_PARAMS 4

static int live;
static CUresult pending; /* a fault that the next synchronisation reports */
static double clock_ms;
static int direct_launches, graph_launches, captures;

int fake_cuda_live(void);
int fake_cuda_live(void) { return live; }

/* counts[0]: kernels launched one by one (and run), [1]: graph launches, [2]: captures begun. */
void fake_cuda_counts(int counts[3]);
void fake_cuda_counts(int counts[3]) {
  counts[0] = direct_launches;
  counts[1] = graph_launches;
  counts[2] = captures;
}

/* y[t] = x[t] + 1 (params: x, y) */
static void add_one(uint32_t t, void **params) {
  const float *x = (const float *)(uintptr_t) * (CUdeviceptr *)params[0];
  float *y = (float *)(uintptr_t) * (CUdeviceptr *)params[1];
  y[t] = x[t] + 1.0f;
}

/* y[t] *= w[0] (params: y, weights) */
static void scale_w(uint32_t t, void **params) {
  float *y = (float *)(uintptr_t) * (CUdeviceptr *)params[0];
  const float *w = (const float *)(uintptr_t) * (CUdeviceptr *)params[1];
  y[t] *= w[0];
}

/* status = 2 (kernel index 1, plus 1) when idx[t] is outside [0, 4) (params: status word, idx) */
static void check_index(uint32_t t, void **params) {
  int32_t *status = (int32_t *)(uintptr_t) * (CUdeviceptr *)params[0];
  const int64_t *idx = (const int64_t *)(uintptr_t) * (CUdeviceptr *)params[1];
  if (idx[t] < 0 || idx[t] >= 4)
    *status = 2;
}

static void fault(uint32_t t, void **params) {
  (void)t;
  (void)params;
  pending = ILLEGAL_ADDRESS;
}

typedef struct FakeEntry {
  const char *name;
  FakeKernel fn;
  int n_params; /* each a CUdeviceptr, as a capture copies them */
} FakeEntry;

static const FakeEntry kernels[] = {
    {"add_one", add_one, 2}, {"scale_w", scale_w, 2}, {"check_index", check_index, 2}, {"fault", fault, 0}};

static const char *env(const char *name) {
  const char *s = getenv(name);
  return s && *s ? s : NULL;
}

static int graph_fails(const char *step) {
  const char *s = env("FAKE_CUDA_GRAPH_FAIL");
  return s && strcmp(s, step) == 0;
}

/* ---- captured launches ---- */

typedef struct FakeNode {
  const FakeEntry *k;
  uint32_t threads;
  CUdeviceptr params[MAX_PARAMS];
} FakeNode;

typedef struct FakeGraph {
  int n, cap;
  FakeNode *nodes;
} FakeGraph;

static FakeGraph *capture; /* the graph being captured, or NULL */
static int capture_broken; /* something was refused during the capture */

/* Stream work other than a launch while capturing: refused, and the capture is invalidated. */
static int refuse_in_capture(void) {
  if (!capture)
    return 0;
  capture_broken = 1;
  return 1;
}

static void run_kernel(const FakeEntry *k, uint32_t threads, void **params) {
  for (uint32_t t = 0; t < threads; t++)
    k->fn(t, params);
}

CUresult cuInit(unsigned flags);
CUresult cuInit(unsigned flags) { return flags ? INVALID_VALUE : OK; }

CUresult cuDeviceGetCount(int *n);
CUresult cuDeviceGetCount(int *n) {
  *n = env("FAKE_CUDA_NO_DEVICE") ? 0 : 1;
  return OK;
}

CUresult cuDeviceGet(int *dev, int ordinal);
CUresult cuDeviceGet(int *dev, int ordinal) {
  *dev = ordinal;
  return ordinal == 0 ? OK : 101;
}

CUresult cuDeviceGetName(char *name, int len, int dev);
CUresult cuDeviceGetName(char *name, int len, int dev) {
  snprintf(name, (size_t)len, "Fake GPU");
  return OK;
}

CUresult cuDeviceGetAttribute(int *v, int attr, int dev);
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
  int cc = env("FAKE_CUDA_CC") ? atoi(env("FAKE_CUDA_CC")) : 90;
  if (attr == 75)
    *v = cc / 10;
  else if (attr == 76)
    *v = cc % 10;
  else
    return INVALID_VALUE;
  return OK;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev);
CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev) {
  *bytes = (size_t)16 << 30;
  return OK;
}

static int ctx_object;

CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev);
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  *ctx = &ctx_object;
  live++;
  return OK;
}

CUresult cuDevicePrimaryCtxRelease_v2(int dev);
CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
  live--;
  return OK;
}

CUresult cuCtxSetCurrent(void *ctx);
CUresult cuCtxSetCurrent(void *ctx) { return ctx == &ctx_object ? OK : 201; }

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  if (n == 0)
    return INVALID_VALUE;
  void *m = malloc(n);
  if (!m)
    return OUT_OF_MEMORY;
  memset(m, 0xcd, n); /* device memory starts as garbage */
  *p = (CUdeviceptr)(uintptr_t)m;
  live++;
  return OK;
}

CUresult cuMemFree_v2(CUdeviceptr p);
CUresult cuMemFree_v2(CUdeviceptr p) {
  free((void *)(uintptr_t)p);
  live--;
  return OK;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *stream);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *stream) {
  if (refuse_in_capture())
    return STREAM_CAPTURE_UNSUPPORTED;
  memcpy((void *)(uintptr_t)dst, src, n);
  return OK;
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *stream);
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *stream) {
  if (refuse_in_capture())
    return STREAM_CAPTURE_UNSUPPORTED;
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return OK;
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, void *stream);
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, void *stream) {
  if (refuse_in_capture())
    return STREAM_CAPTURE_UNSUPPORTED;
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  return OK;
}

/* CUDA_MEMCPY2D's layout (cuda.h), device to device only. */
typedef struct FakeMemcpy2D {
  size_t src_x, src_y;
  int src_type;
  const void *src_host;
  CUdeviceptr src_device;
  void *src_array;
  size_t src_pitch, dst_x, dst_y;
  int dst_type;
  void *dst_host;
  CUdeviceptr dst_device;
  void *dst_array;
  size_t dst_pitch, width, height;
} FakeMemcpy2D;

CUresult cuMemcpy2DAsync_v2(const FakeMemcpy2D *c, void *stream);
CUresult cuMemcpy2DAsync_v2(const FakeMemcpy2D *c, void *stream) {
  for (size_t r = 0; r < c->height; r++)
    memmove((void *)(uintptr_t)(c->dst_device + r * c->dst_pitch),
            (const void *)(uintptr_t)(c->src_device + r * c->src_pitch), c->width);
  return OK;
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, void *stream);
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, void *stream) {
  if (refuse_in_capture())
    return STREAM_CAPTURE_UNSUPPORTED;
  memset((void *)(uintptr_t)dst, v, n);
  return OK;
}

static int module_object;

CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *options, void **values);
CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *options, void **values) {
  if (!strstr((const char *)image, "SYNTAX ERROR")) {
    *mod = &module_object;
    live++;
    return OK;
  }
  char *log = NULL;
  size_t cap = 0;
  for (unsigned i = 0; i < n; i++) {
    if (options[i] == 5)
      log = values[i];
    else if (options[i] == 6)
      cap = (size_t)(uintptr_t)values[i];
  }
  if (log && cap)
    snprintf(log, cap, "ptxas application ptx input, line 5; error   : syntax error\nptxas fatal   : aborted");
  return INVALID_PTX;
}

CUresult cuModuleUnload(void *mod);
CUresult cuModuleUnload(void *mod) {
  live--;
  return OK;
}

CUresult cuModuleGetFunction(void **fn, void *mod, const char *name);
CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
    if (strcmp(kernels[i].name, name) == 0) {
      *fn = (void *)&kernels[i];
      return OK;
    }
  return NOT_FOUND;
}

CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params, void **extra);
CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params, void **extra) {
  if (!fn || extra || gy != 1 || gz != 1 || by != 1 || bz != 1)
    return INVALID_VALUE;
  const FakeEntry *k = fn;
  if (capture) {
    if (graph_fails("launch")) {
      capture_broken = 1;
      return STREAM_CAPTURE_INVALIDATED;
    }
    if (capture->n == capture->cap) {
      int cap = capture->cap ? 2 * capture->cap : 8;
      FakeNode *nodes = realloc(capture->nodes, (size_t)cap * sizeof *nodes);
      if (!nodes)
        return OUT_OF_MEMORY;
      capture->nodes = nodes;
      capture->cap = cap;
    }
    FakeNode *node = &capture->nodes[capture->n++];
    memset(node, 0, sizeof *node);
    node->k = k;
    node->threads = gx * bx;
    for (int j = 0; j < k->n_params && j < MAX_PARAMS; j++)
      node->params[j] = *(CUdeviceptr *)params[j]; /* by value, as the driver copies kernelParams */
    return OK;
  }
  direct_launches++;
  run_kernel(k, gx * bx, params);
  return OK;
}

#ifndef FAKE_CUDA_WITHOUT_GRAPHS

static void free_graph(FakeGraph *g) {
  if (!g)
    return;
  free(g->nodes);
  free(g);
  live--;
}

CUresult cuStreamBeginCapture_v2(void *stream, int mode);
CUresult cuStreamBeginCapture_v2(void *stream, int mode) {
  if (capture)
    return ILLEGAL_STATE;
  if (mode < 0 || mode > 2)
    return INVALID_VALUE;
  if (graph_fails("begin"))
    return NOT_SUPPORTED;
  if (!(capture = calloc(1, sizeof *capture)))
    return OUT_OF_MEMORY;
  live++;
  captures++;
  capture_broken = 0;
  return OK;
}

CUresult cuStreamEndCapture(void *stream, void **graph);
CUresult cuStreamEndCapture(void *stream, void **graph) {
  if (!capture)
    return ILLEGAL_STATE;
  FakeGraph *g = capture;
  capture = NULL;
  *graph = NULL;
  if (capture_broken || graph_fails("end")) {
    free_graph(g);
    return STREAM_CAPTURE_INVALIDATED;
  }
  *graph = g;
  return OK;
}

CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags);
CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
  const FakeGraph *g = graph;
  if (!g || flags)
    return INVALID_VALUE;
  if (graph_fails("instantiate"))
    return NOT_SUPPORTED;
  FakeGraph *e = calloc(1, sizeof *e);
  if (!e || (g->n && !(e->nodes = malloc((size_t)g->n * sizeof *e->nodes)))) {
    free(e);
    return OUT_OF_MEMORY;
  }
  if (g->n)
    memcpy(e->nodes, g->nodes, (size_t)g->n * sizeof *e->nodes);
  e->n = e->cap = g->n;
  live++;
  *exec = e;
  return OK;
}

CUresult cuGraphLaunch(void *exec, void *stream);
CUresult cuGraphLaunch(void *exec, void *stream) {
  if (!exec)
    return INVALID_VALUE;
  if (refuse_in_capture())
    return STREAM_CAPTURE_UNSUPPORTED;
  const FakeGraph *e = exec;
  graph_launches++;
  for (int i = 0; i < e->n; i++) {
    FakeNode *node = &e->nodes[i];
    void *params[MAX_PARAMS];
    for (int j = 0; j < MAX_PARAMS; j++)
      params[j] = &node->params[j];
    run_kernel(node->k, node->threads, params);
  }
  return OK;
}

CUresult cuGraphExecDestroy(void *exec);
CUresult cuGraphExecDestroy(void *exec) {
  free_graph(exec);
  return OK;
}

CUresult cuGraphDestroy(void *graph);
CUresult cuGraphDestroy(void *graph) {
  free_graph(graph);
  return OK;
}

#endif /* FAKE_CUDA_WITHOUT_GRAPHS */

static int stream_object;

CUresult cuStreamCreate(void **s, unsigned flags);
CUresult cuStreamCreate(void **s, unsigned flags) {
  *s = &stream_object;
  live++;
  return OK;
}

CUresult cuStreamDestroy_v2(void *s);
CUresult cuStreamDestroy_v2(void *s) {
  live--;
  return OK;
}

CUresult cuStreamSynchronize(void *s);
CUresult cuStreamSynchronize(void *s) {
  if (refuse_in_capture())
    return STREAM_CAPTURE_UNSUPPORTED;
  CUresult r = pending;
  pending = OK;
  return r;
}

CUresult cuEventCreate(void **e, unsigned flags);
CUresult cuEventCreate(void **e, unsigned flags) {
  double *t = calloc(1, sizeof *t);
  if (!t)
    return OUT_OF_MEMORY;
  *e = t;
  live++;
  return OK;
}

CUresult cuEventDestroy_v2(void *e);
CUresult cuEventDestroy_v2(void *e) {
  free(e);
  live--;
  return OK;
}

CUresult cuEventRecord(void *e, void *s);
CUresult cuEventRecord(void *e, void *s) {
  if (refuse_in_capture())
    return STREAM_CAPTURE_UNSUPPORTED;
  clock_ms += 0.5;
  *(double *)e = clock_ms;
  return OK;
}

CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b);
CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) {
  *ms = (float)(*(double *)b - *(double *)a);
  return OK;
}

CUresult cuGetErrorName(CUresult r, const char **s);
CUresult cuGetErrorName(CUresult r, const char **s) {
  switch (r) {
  case INVALID_PTX: *s = "CUDA_ERROR_INVALID_PTX"; return OK;
  case NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; return OK;
  case ILLEGAL_ADDRESS: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; return OK;
  case STREAM_CAPTURE_INVALIDATED: *s = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"; return OK;
  }
  return INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult r, const char **s);
CUresult cuGetErrorString(CUresult r, const char **s) {
  switch (r) {
  case INVALID_PTX: *s = "a PTX JIT compilation failed"; return OK;
  case NOT_FOUND: *s = "named symbol not found"; return OK;
  case ILLEGAL_ADDRESS: *s = "an illegal memory access was encountered"; return OK;
  }
  return INVALID_VALUE;
}
