/* gpu_cuda.c — the CUDA backend of the GPU runner (FrtGpuBackend frt_gpu_cuda): the driver API, loaded at
 * run time.
 *
 * libcuda.so.1 is opened with dlopen ($FLOWRT_CUDA_LIBRARY names another file: the tests point it at the
 * toolkit's stub or at a fake driver), never linked, so every program flowc builds starts on a machine
 * without a GPU and says why it cannot use one. cuda.h is not included either: the few types, enums and
 * entry points below are declared here and follow the driver API's ABI (CUresult and CUdevice are ints,
 * CUdeviceptr a 64-bit integer, contexts, modules, functions, streams and events opaque pointers; the enum
 * values are cuda.h's). Entry points are resolved with dlsym by the versioned names cuda.h maps the plain
 * ones to (cuMemAlloc -> cuMemAlloc_v2, ...), which every driver since CUDA 11 exports.
 *
 * The driver is loaded and initialised once per process and kept (a library whose cuInit succeeded is never
 * closed); a library that failed to load or initialise is closed again, so a later open retries, and one
 * named by another FLOWRT_CUDA_LIBRARY is loaded afresh. A model opens on the device $FLOWRT_CUDA_DEVICE
 * names (an ordinal; default 0) in its primary context (shared with any CUDA library of the process, as
 * the runtime API does), after checking the device's compute capability against the PTX's target; the PTX
 * is JIT-compiled with an error log whose first line becomes the message. All work goes to one stream:
 * copies and launches are queued, and the runner waits once, at the end of a run.
 *
 * CUDA graphs: where the driver has stream capture (cuStreamBeginCapture_v2, cuStreamEndCapture,
 * cuGraphInstantiateWithFlags, cuGraphLaunch, cuGraphExecDestroy, cuGraphDestroy; optional entry points, all
 * or none), graph_capture records the model's launches on the stream, without running them, into a graph
 * that is instantiated once, and each run then queues it with one cuGraphLaunch: one driver call a run
 * instead of one per kernel. The copies stay outside the graph (the inputs' host addresses change from run
 * to run, and pageable host memory does not belong in a graph). Capture uses the thread-local mode, so
 * other threads of the process may keep calling the driver meanwhile. FLOWRT_CUDA_GRAPHS=0 turns graphs off
 * (read at open); a failed capture is no error: the runner launches one by one. The capture happens at open
 * (gpu.c), so a run still allocates nothing.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowrt_internal.h"
#include "gpu_backend.h"

#define CUDA_LIBRARY "libcuda.so.1"

/* The driver API's types (cuda.h's ABI). */
typedef int CUresult;
typedef int CUdevice;
typedef uint64_t CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

/* CUresult values the messages name without the driver's help (the stub's cuGetErrorName fails). */
#define CUDA_SUCCESS 0
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_STUB_LIBRARY 34
#define CUDA_ERROR_NO_DEVICE 100
/* CUdevice_attribute, CUjit_option. */
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
/* CUstreamCaptureMode: only this thread is kept from calls that would break the capture. */
#define CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1

#define JIT_LOG_BYTES 4096

/* CUDA_MEMCPY2D (cuda.h; its layout is the driver ABI's): device to device only here. */
typedef struct CudaMemcpy2D {
  size_t src_x_bytes, src_y;
  int src_memory_type; /* CUmemorytype */
  const void *src_host;
  CUdeviceptr src_device;
  void *src_array;
  size_t src_pitch;
  size_t dst_x_bytes, dst_y;
  int dst_memory_type;
  void *dst_host;
  CUdeviceptr dst_device;
  void *dst_array;
  size_t dst_pitch;
  size_t width_bytes, height;
} CudaMemcpy2D;
#define CU_MEMORYTYPE_DEVICE 2
#define CU_MAX_PITCH 2147483647ull /* cuMemcpy2D refuses pitches beyond CU_DEVICE_ATTRIBUTE_MAX_PITCH (2^31 - 1) */

/* Every entry point: one row each (return, field, parameters, symbol). */
#define CUDA_FUNCTIONS(X)                                                                                        \
  X(CUresult, init, (unsigned), "cuInit")                                                                        \
  X(CUresult, device_get_count, (int *), "cuDeviceGetCount")                                                     \
  X(CUresult, device_get, (CUdevice *, int), "cuDeviceGet")                                                      \
  X(CUresult, device_get_name, (char *, int, CUdevice), "cuDeviceGetName")                                       \
  X(CUresult, device_get_attribute, (int *, int, CUdevice), "cuDeviceGetAttribute")                              \
  X(CUresult, device_total_mem, (size_t *, CUdevice), "cuDeviceTotalMem_v2")                                     \
  X(CUresult, primary_ctx_retain, (CUcontext *, CUdevice), "cuDevicePrimaryCtxRetain")                           \
  X(CUresult, primary_ctx_release, (CUdevice), "cuDevicePrimaryCtxRelease_v2")                                   \
  X(CUresult, ctx_set_current, (CUcontext), "cuCtxSetCurrent")                                                   \
  X(CUresult, mem_alloc, (CUdeviceptr *, size_t), "cuMemAlloc_v2")                                               \
  X(CUresult, mem_free, (CUdeviceptr), "cuMemFree_v2")                                                           \
  X(CUresult, memcpy_htod, (CUdeviceptr, const void *, size_t, CUstream), "cuMemcpyHtoDAsync_v2")               \
  X(CUresult, memcpy_dtoh, (void *, CUdeviceptr, size_t, CUstream), "cuMemcpyDtoHAsync_v2")                     \
  X(CUresult, memcpy_async, (CUdeviceptr, CUdeviceptr, size_t, CUstream), "cuMemcpyAsync")                     \
  X(CUresult, memset_d8, (CUdeviceptr, unsigned char, size_t, CUstream), "cuMemsetD8Async")                     \
  X(CUresult, memcpy_2d_async, (const CudaMemcpy2D *, CUstream), "cuMemcpy2DAsync_v2")                           \
  X(CUresult, module_load, (CUmodule *, const void *, unsigned, int *, void **), "cuModuleLoadDataEx")          \
  X(CUresult, module_unload, (CUmodule), "cuModuleUnload")                                                       \
  X(CUresult, module_get_function, (CUfunction *, CUmodule, const char *), "cuModuleGetFunction")               \
  X(CUresult, launch_kernel,                                                                                     \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **,        \
     void **),                                                                                                   \
    "cuLaunchKernel")                                                                                            \
  X(CUresult, stream_create, (CUstream *, unsigned), "cuStreamCreate")                                           \
  X(CUresult, stream_destroy, (CUstream), "cuStreamDestroy_v2")                                                  \
  X(CUresult, stream_synchronize, (CUstream), "cuStreamSynchronize")                                             \
  X(CUresult, event_create, (CUevent *, unsigned), "cuEventCreate")                                              \
  X(CUresult, event_destroy, (CUevent), "cuEventDestroy_v2")                                                     \
  X(CUresult, event_record, (CUevent, CUstream), "cuEventRecord")

static struct {
  pthread_mutex_t mu;
  void *lib;       /* the loaded, initialised driver, or NULL */
  char path[256];  /* the file it came from */
#define FIELD(ret, field, params, sym) ret(*field) params;
  CUDA_FUNCTIONS(FIELD)
  CUresult (*event_elapsed)(float *, CUevent, CUevent); /* cuEventElapsedTime_v2, or the unversioned one */
  CUresult (*get_error_name)(CUresult, const char **);  /* optional: the messages fall back on a table */
  CUresult (*get_error_string)(CUresult, const char **);
#define CUDA_GRAPH_FUNCTIONS(X)                                                                                  \
  X(CUresult, begin_capture, (CUstream, int), "cuStreamBeginCapture_v2")                                         \
  X(CUresult, end_capture, (CUstream, CUgraph *), "cuStreamEndCapture")                                          \
  X(CUresult, graph_instantiate, (CUgraphExec *, CUgraph, unsigned long long), "cuGraphInstantiateWithFlags")  \
  X(CUresult, graph_launch, (CUgraphExec, CUstream), "cuGraphLaunch")                                            \
  X(CUresult, graph_exec_destroy, (CUgraphExec), "cuGraphExecDestroy")                                           \
  X(CUresult, graph_destroy, (CUgraph), "cuGraphDestroy")
  CUDA_GRAPH_FUNCTIONS(FIELD) /* optional: all NULL unless the driver has every one */
  bool graphs;
} cu = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ---- messages ----------------------------------------------------------------------------------------- */

static const char *error_name(CUresult r) {
  const char *s = NULL;
  if (cu.get_error_name && cu.get_error_name(r, &s) == CUDA_SUCCESS && s)
    return s;
  switch (r) {
  case 1: return "CUDA_ERROR_INVALID_VALUE";
  case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
  case 3: return "CUDA_ERROR_NOT_INITIALIZED";
  case 34: return "CUDA_ERROR_STUB_LIBRARY";
  case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
  case 46: return "CUDA_ERROR_DEVICES_UNAVAILABLE";
  case 100: return "CUDA_ERROR_NO_DEVICE";
  case 101: return "CUDA_ERROR_INVALID_DEVICE";
  case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
  case 218: return "CUDA_ERROR_INVALID_PTX";
  case 222: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
  case 400: return "CUDA_ERROR_INVALID_HANDLE";
  case 500: return "CUDA_ERROR_NOT_FOUND";
  case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
  case 701: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
  case 702: return "CUDA_ERROR_LAUNCH_TIMEOUT";
  case 719: return "CUDA_ERROR_LAUNCH_FAILED";
  case 801: return "CUDA_ERROR_NOT_SUPPORTED";
  case 900: return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
  case 901: return "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
  case 999: return "CUDA_ERROR_UNKNOWN";
  }
  return NULL;
}

/* "<what>: CUDA_ERROR_OUT_OF_MEMORY (out of memory)" into msg. */
static void describe(char *msg, size_t cap, CUresult r, const char *what) {
  const char *name = error_name(r), *text = NULL;
  if (!cu.get_error_string || cu.get_error_string(r, &text) != CUDA_SUCCESS)
    text = NULL;
  if (r == CUDA_ERROR_STUB_LIBRARY)
    text = "the stub library, not a driver: no GPU driver is installed";
  char code[32];
  if (!name) {
    snprintf(code, sizeof code, "CUDA error %d", (int)r);
    name = code;
  }
  if (text)
    snprintf(msg, cap, "%s: %s (%s)", what, name, text);
  else
    snprintf(msg, cap, "%s: %s", what, name);
}

static FrtStatus cu_fail(FrtError *err, FrtStatus st, CUresult r, const char *fmt, ...) FRT_PRINTF(4, 5);

static FrtStatus cu_fail(FrtError *err, FrtStatus st, CUresult r, const char *fmt, ...) {
  char what[300], msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  describe(msg, sizeof msg, r, what);
  return frt_errorf(err, r == CUDA_ERROR_OUT_OF_MEMORY ? FRT_ERR_RESOURCE : st, "%s", msg);
}

/* ---- the driver ------------------------------------------------------------------------------------------ */

static void unload_locked(void) {
  if (cu.lib)
    dlclose(cu.lib);
  cu.lib = NULL;
  cu.path[0] = 0;
}

/* Loads and initialises the driver (once per process and path). Returns 0, or -1 with one line in msg. */
static int load_driver(char *msg, size_t cap) {
  const char *path = getenv("FLOWRT_CUDA_LIBRARY");
  if (!path || !*path)
    path = CUDA_LIBRARY;
  pthread_mutex_lock(&cu.mu);
  if (cu.lib && strcmp(cu.path, path) == 0) {
    pthread_mutex_unlock(&cu.mu);
    return 0;
  }
  unload_locked();
  int rc = -1;
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    snprintf(msg, cap, "no CUDA driver: %s", why ? why : path);
    goto out;
  }
  cu.lib = lib;
  snprintf(cu.path, sizeof cu.path, "%s", path);
#define LOAD(ret, field, params, sym)                                                                            \
  if (!(cu.field = (ret(*) params)dlsym(lib, sym))) {                                                            \
    snprintf(msg, cap, "%s lacks %s: not a CUDA driver of version 11 or later", path, sym);                       \
    goto out;                                                                                                    \
  }
  CUDA_FUNCTIONS(LOAD)
  if (!(cu.event_elapsed = (CUresult(*)(float *, CUevent, CUevent))dlsym(lib, "cuEventElapsedTime_v2")) &&
      !(cu.event_elapsed = (CUresult(*)(float *, CUevent, CUevent))dlsym(lib, "cuEventElapsedTime"))) {
    snprintf(msg, cap, "%s lacks cuEventElapsedTime: not a CUDA driver", path);
    goto out;
  }
  cu.get_error_name = (CUresult(*)(CUresult, const char **))dlsym(lib, "cuGetErrorName");
  cu.get_error_string = (CUresult(*)(CUresult, const char **))dlsym(lib, "cuGetErrorString");
  /* Graphs are optional: a driver without one of their entry points runs the launches one by one. */
  cu.graphs = true;
#define LOAD_OPTIONAL(ret, field, params, sym)                                                                   \
  if (!(cu.field = (ret(*) params)dlsym(lib, sym)))                                                              \
    cu.graphs = false;
  CUDA_GRAPH_FUNCTIONS(LOAD_OPTIONAL)
  CUresult r = cu.init(0);
  if (r == CUDA_ERROR_NO_DEVICE)
    snprintf(msg, cap, "no CUDA GPU found");
  else if (r != CUDA_SUCCESS)
    describe(msg, cap, r, "cuInit");
  else
    rc = 0;
out:
  if (rc != 0)
    unload_locked();
  pthread_mutex_unlock(&cu.mu);
  return rc;
}

/* The device $FLOWRT_CUDA_DEVICE names (default `fallback`), its primary context retained and current. */
static int open_device(int fallback, CUdevice *dev, CUcontext *ctx, char *msg, size_t cap) {
  if (load_driver(msg, cap) != 0)
    return -1;
  int count = 0;
  CUresult r = cu.device_get_count(&count);
  if (r != CUDA_SUCCESS)
    return describe(msg, cap, r, "cuDeviceGetCount"), -1;
  if (count <= 0)
    return snprintf(msg, cap, "no CUDA GPU found"), -1;
  long ordinal = fallback;
  const char *s = getenv("FLOWRT_CUDA_DEVICE");
  if (s && *s) {
    char *end;
    errno = 0;
    ordinal = strtol(s, &end, 10);
    if (errno || end == s || *end || ordinal < 0)
      return snprintf(msg, cap, "FLOWRT_CUDA_DEVICE wants a device number, got '%s'", s), -1;
  }
  if (ordinal >= count)
    return snprintf(msg, cap, "there is no CUDA device %ld: %d found", ordinal, count), -1;
  if ((r = cu.device_get(dev, (int)ordinal)) != CUDA_SUCCESS)
    return describe(msg, cap, r, "cuDeviceGet"), -1;
  if ((r = cu.primary_ctx_retain(ctx, *dev)) != CUDA_SUCCESS)
    return describe(msg, cap, r, "cuDevicePrimaryCtxRetain"), -1;
  if ((r = cu.ctx_set_current(*ctx)) != CUDA_SUCCESS) {
    cu.primary_ctx_release(*dev);
    return describe(msg, cap, r, "cuCtxSetCurrent"), -1;
  }
  return 0;
}

/* The GPU of this rank of an SBP program (frt_cuda_bind_device, below), which the runner opens too:
 * open_device(fallback) names the same device again ($FLOWRT_CUDA_DEVICE, else the local rank's). */
static struct {
  bool bound;
  int fallback;
  CUdevice dev;
  CUcontext ctx;
} rank_device;

/* ---- the backend ------------------------------------------------------------------------------------------ */

typedef struct CudaDev {
  const FrtGpuModel *gm;
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUstream stream;
  CUfunction *fn;   /* per launch */
  void **params;    /* the widest launch's parameter pointers (cuLaunchKernel's kernelParams) */
  CUevent *events;  /* per launch, a pair around it (timing), or NULL */
  bool timing;
  bool graphs_off;       /* FLOWRT_CUDA_GRAPHS=0 */
  CUgraphExec graph;     /* the launches captured as one graph (graph_capture), or NULL */
  char name[192];
} CudaDev;

static const char *node_of(const FrtGpuModel *gm, int32_t node) {
  return node >= 0 && node < gm->n_kernels && gm->kernel_names && gm->kernel_names[node] ? gm->kernel_names[node]
                                                                                         : "an unnamed node";
}

/* The context belongs to the device, the calls may come from any thread: make it current first. */
static FrtStatus bind(CudaDev *d, FrtError *err) {
  CUresult r = cu.ctx_set_current(d->ctx);
  return r == CUDA_SUCCESS ? FRT_OK : cu_fail(err, FRT_ERR_RESOURCE, r, "cuCtxSetCurrent");
}

static void destroy_events(CudaDev *d) {
  if (!d->events)
    return;
  for (int32_t i = 0; i < 2 * d->gm->n_launches; i++)
    if (d->events[i])
      cu.event_destroy(d->events[i]);
  free(d->events);
  d->events = NULL;
}

static void cuda_close(void *dev) {
  CudaDev *d = dev;
  if (!d)
    return;
  if (d->ctx) { /* else the device never opened, and the driver may not be loaded */
    cu.ctx_set_current(d->ctx);
    destroy_events(d);
    if (d->graph)
      cu.graph_exec_destroy(d->graph);
    if (d->stream)
      cu.stream_destroy(d->stream);
    if (d->mod)
      cu.module_unload(d->mod);
    cu.primary_ctx_release(d->dev);
  }
  free(d->fn);
  free(d->params);
  free(d);
}

/* "sm_80" -> 80, "sm_90a" -> 90 with *exact (features of that GPU alone); -1 for anything else. */
static int parse_arch(const char *arch, bool *exact) {
  *exact = false;
  if (!arch || strncmp(arch, "sm_", 3) != 0 || arch[3] < '1' || arch[3] > '9')
    return -1;
  int v = 0;
  const char *p = arch + 3;
  for (; *p >= '0' && *p <= '9' && v < 10000; p++)
    v = v * 10 + (*p - '0');
  if (*p == 'a' || *p == 'f') {
    *exact = true;
    p++;
  }
  return *p ? -1 : v;
}

static FrtStatus check_arch(CudaDev *d, FrtError *err) {
  int major = 0, minor = 0;
  CUresult r = cu.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->dev);
  if (r == CUDA_SUCCESS)
    r = cu.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->dev);
  if (r != CUDA_SUCCESS)
    return cu_fail(err, FRT_ERR_UNSUPPORTED, r, "cuDeviceGetAttribute (compute capability)");
  int have = major * 10 + minor;
  bool exact;
  int want = parse_arch(d->gm->arch, &exact);
  if (want < 0)
    return frt_errorf(err, FRT_ERR_INPUT, "malformed GPU code: the PTX's target '%s' is not sm_NN",
                      d->gm->arch ? d->gm->arch : "(none)");
  /* PTX JIT-compiles for its own GPU and every later one, except the architecture-specific sm_NNa. */
  if (have < want || (exact && have != want))
    return frt_errorf(err, FRT_ERR_UNSUPPORTED,
                      "the GPU is sm_%d but the model's PTX was compiled for %s: rebuild with --gpu sm_%d", have,
                      d->gm->arch, have);
  size_t mem = 0;
  char name[128] = "";
  if (cu.device_get_name(name, (int)sizeof name - 1, d->dev) != CUDA_SUCCESS || !name[0])
    snprintf(name, sizeof name, "CUDA device");
  name[sizeof name - 1] = 0;
  if (cu.device_total_mem(&mem, d->dev) == CUDA_SUCCESS)
    snprintf(d->name, sizeof d->name, "%s (sm_%d, %.0f GiB)", name, have, (double)mem / (1024.0 * 1024 * 1024));
  else
    snprintf(d->name, sizeof d->name, "%s (sm_%d)", name, have);
  return FRT_OK;
}

static FrtStatus load_module(CudaDev *d, FrtError *err) {
  char log[JIT_LOG_BYTES] = "";
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, (void *)(uintptr_t)sizeof log};
  CUresult r = cu.module_load(&d->mod, d->gm->ptx, 2, options, values);
  if (r != CUDA_SUCCESS) {
    d->mod = NULL;
    log[sizeof log - 1] = 0;
    char *nl = strchr(log, '\n');
    if (nl)
      *nl = 0;
    if (log[0])
      return frt_errorf(err, FRT_ERR_UNSUPPORTED, "loading the PTX: %s", log);
    return cu_fail(err, FRT_ERR_UNSUPPORTED, r, "loading the PTX");
  }
  int32_t widest = 0;
  for (int32_t i = 0; i < d->gm->n_launches; i++) {
    const FrtGpuLaunch *l = &d->gm->launches[i];
    if (l->coll != FRT_GPU_COLL_NONE)
      continue; /* the host runs it (gpu.c), no kernel */
    if ((r = cu.module_get_function(&d->fn[i], d->mod, l->kernel)) != CUDA_SUCCESS)
      return cu_fail(err, FRT_ERR_UNSUPPORTED, r, "%s: the PTX has no kernel '%s'", node_of(d->gm, l->node),
                     l->kernel);
    if (l->n_args > widest)
      widest = l->n_args;
  }
  if (!(d->params = calloc((size_t)widest + 1, sizeof *d->params)))
    return frt_errorf(err, FRT_ERR_RESOURCE, "out of memory");
  return FRT_OK;
}

static FrtStatus cuda_open(const FrtGpuModel *gm, void **out, FrtError *err) {
  *out = NULL;
  CudaDev *d = calloc(1, sizeof *d);
  if (!d || !(d->fn = calloc((size_t)gm->n_launches + 1, sizeof *d->fn))) {
    free(d);
    return frt_errorf(err, FRT_ERR_RESOURCE, "out of memory");
  }
  d->gm = gm;
  const char *graphs = getenv("FLOWRT_CUDA_GRAPHS");
  d->graphs_off = graphs && strcmp(graphs, "0") == 0;
  char msg[480];
  /* A rank of an SBP program runs on the GPU its collectives were bound to (frt_cuda_bind_device). */
  if (open_device(rank_device.bound ? rank_device.fallback : 0, &d->dev, &d->ctx, msg, sizeof msg) != 0) {
    d->ctx = NULL;
    cuda_close(d);
    return frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s", msg);
  }
  FrtStatus st = check_arch(d, err);
  if (st == FRT_OK)
    st = load_module(d, err);
  CUresult r;
  if (st == FRT_OK && (r = cu.stream_create(&d->stream, 0)) != CUDA_SUCCESS) {
    d->stream = NULL;
    st = cu_fail(err, FRT_ERR_RESOURCE, r, "cuStreamCreate");
  }
  if (st != FRT_OK) {
    cuda_close(d);
    return st;
  }
  *out = d;
  return FRT_OK;
}

static const char *cuda_device_name(void *dev) { return ((CudaDev *)dev)->name; }

static FrtStatus cuda_alloc(void *dev, uint64_t bytes, uint64_t *addr, FrtError *err) {
  CudaDev *d = dev;
  FrtStatus st = bind(d, err);
  if (st != FRT_OK)
    return st;
  if (bytes > SIZE_MAX)
    return frt_errorf(err, FRT_ERR_RESOURCE, "cuMemAlloc of %llu bytes: too large", (unsigned long long)bytes);
  CUdeviceptr p = 0;
  CUresult r = cu.mem_alloc(&p, (size_t)bytes);
  if (r != CUDA_SUCCESS)
    return cu_fail(err, FRT_ERR_RESOURCE, r, "cuMemAlloc of %llu bytes", (unsigned long long)bytes);
  *addr = p;
  return FRT_OK;
}

static void cuda_release(void *dev, uint64_t addr) {
  CudaDev *d = dev;
  cu.ctx_set_current(d->ctx);
  cu.mem_free(addr);
}

static FrtStatus cuda_upload(void *dev, uint64_t dst, const void *src, uint64_t bytes, FrtError *err) {
  CudaDev *d = dev;
  FrtStatus st = bind(d, err);
  if (st != FRT_OK)
    return st;
  /* From pageable memory the driver stages the bytes before it returns, so src may change after. */
  CUresult r = cu.memcpy_htod(dst, src, (size_t)bytes, d->stream);
  return r == CUDA_SUCCESS ? FRT_OK
                           : cu_fail(err, FRT_ERR_RESOURCE, r, "copying %llu bytes to the GPU", (unsigned long long)bytes);
}

static FrtStatus cuda_download(void *dev, void *dst, uint64_t src, uint64_t bytes, FrtError *err) {
  CudaDev *d = dev;
  FrtStatus st = bind(d, err);
  if (st != FRT_OK)
    return st;
  CUresult r = cu.memcpy_dtoh(dst, src, (size_t)bytes, d->stream);
  if (r == CUDA_SUCCESS)
    r = cu.stream_synchronize(d->stream);
  return r == CUDA_SUCCESS
             ? FRT_OK
             : cu_fail(err, FRT_ERR_RESOURCE, r, "copying %llu bytes from the GPU", (unsigned long long)bytes);
}

static FrtStatus cuda_zero(void *dev, uint64_t dst, uint64_t bytes, FrtError *err) {
  CudaDev *d = dev;
  FrtStatus st = bind(d, err);
  if (st != FRT_OK)
    return st;
  CUresult r = cu.memset_d8(dst, 0, (size_t)bytes, d->stream);
  return r == CUDA_SUCCESS ? FRT_OK : cu_fail(err, FRT_ERR_RESOURCE, r, "cuMemsetD8 of %llu bytes", (unsigned long long)bytes);
}

static FrtStatus cuda_launch(void *dev, int32_t i, const FrtGpuLaunch *l, const uint64_t *args, FrtError *err) {
  CudaDev *d = dev;
  /* kernelParams points at each parameter's value: the resolved addresses themselves. */
  for (int32_t j = 0; j < l->n_args; j++)
    d->params[j] = (void *)&args[j];
  CUresult r = CUDA_SUCCESS;
  if (d->timing)
    r = cu.event_record(d->events[2 * i], d->stream);
  if (r == CUDA_SUCCESS)
    r = cu.launch_kernel(d->fn[i], l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2], 0,
                         d->stream, d->params, NULL);
  if (r == CUDA_SUCCESS && d->timing)
    r = cu.event_record(d->events[2 * i + 1], d->stream);
  return r == CUDA_SUCCESS ? FRT_OK
                           : cu_fail(err, FRT_ERR_RESOURCE, r, "%s: launching %s", node_of(d->gm, l->node), l->kernel);
}

static FrtStatus cuda_sync(void *dev, FrtError *err) {
  CudaDev *d = dev;
  FrtStatus st = bind(d, err);
  if (st != FRT_OK)
    return st;
  CUresult r = cu.stream_synchronize(d->stream);
  /* A fault is reported by whichever call waits first, not by the launch that caused it. */
  return r == CUDA_SUCCESS ? FRT_OK
                           : cu_fail(err, FRT_ERR_RESOURCE, r,
                                     "the GPU failed while running the kernels (CUDA_LAUNCH_BLOCKING=1 names the node)");
}

static FrtStatus cuda_copy2d(void *dev, uint64_t dst, uint64_t dst_pitch, uint64_t src, uint64_t src_pitch,
                             uint64_t width, uint64_t height, FrtError *err) {
  CudaDev *d = dev;
  FrtStatus st = bind(d, err);
  if (st != FRT_OK || !width || !height)
    return st;
  CUresult r = CUDA_SUCCESS;
  if (height == 1 || dst_pitch > CU_MAX_PITCH || src_pitch > CU_MAX_PITCH || width > dst_pitch ||
      width > src_pitch) {
    for (uint64_t i = 0; i < height && r == CUDA_SUCCESS; i++)
      r = cu.memcpy_async(dst + i * dst_pitch, src + i * src_pitch, (size_t)width, d->stream);
  } else {
    CudaMemcpy2D c = {.src_memory_type = CU_MEMORYTYPE_DEVICE, .src_device = src, .src_pitch = (size_t)src_pitch,
                      .dst_memory_type = CU_MEMORYTYPE_DEVICE, .dst_device = dst, .dst_pitch = (size_t)dst_pitch,
                      .width_bytes = (size_t)width, .height = (size_t)height};
    r = cu.memcpy_2d_async(&c, d->stream);
  }
  return r == CUDA_SUCCESS ? FRT_OK
                           : cu_fail(err, FRT_ERR_RESOURCE, r, "copying %llu rows of %llu bytes on the GPU",
                                     (unsigned long long)height, (unsigned long long)width);
}

static void *cuda_stream(void *dev) { return ((CudaDev *)dev)->stream; }

static FrtStatus cuda_set_timing(void *dev, bool on, FrtError *err) {
  CudaDev *d = dev;
  d->timing = false;
  if (!on)
    return FRT_OK;
  FrtStatus st = bind(d, err);
  if (st != FRT_OK)
    return st;
  int32_t n = 2 * d->gm->n_launches;
  if (!d->events) {
    if (!(d->events = calloc((size_t)n + 1, sizeof *d->events)))
      return frt_errorf(err, FRT_ERR_RESOURCE, "out of memory");
    for (int32_t i = 0; i < n; i++) {
      CUresult r = cu.event_create(&d->events[i], 0);
      if (r != CUDA_SUCCESS) {
        d->events[i] = NULL;
        destroy_events(d);
        return cu_fail(err, FRT_ERR_RESOURCE, r, "cuEventCreate");
      }
    }
  }
  d->timing = true;
  return FRT_OK;
}

static FrtStatus cuda_launch_seconds(void *dev, double *seconds, FrtError *err) {
  CudaDev *d = dev;
  for (int32_t i = 0; i < d->gm->n_launches; i++) {
    float ms = 0;
    if (d->gm->launches[i].coll != FRT_GPU_COLL_NONE) { /* the host ran it: no events (gpu.c times it) */
      seconds[i] = 0;
      continue;
    }
    CUresult r = d->events ? cu.event_elapsed(&ms, d->events[2 * i], d->events[2 * i + 1]) : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS)
      return cu_fail(err, FRT_ERR_RESOURCE, r, "cuEventElapsedTime");
    seconds[i] = ms * 1e-3;
  }
  return FRT_OK;
}

/* Records every launch on the stream in capture mode (nothing runs) and instantiates the graph. The stream
 * is drained first, so the capture starts on an idle stream (at open, the weights' upload may be queued). */
static FrtStatus cuda_graph_capture(void *dev, const uint64_t *args, FrtError *err) {
  CudaDev *d = dev;
  if (d->graphs_off)
    return frt_errorf(err, FRT_ERR_UNSUPPORTED, "CUDA graphs are off (FLOWRT_CUDA_GRAPHS=0)");
  if (!cu.graphs)
    return frt_errorf(err, FRT_ERR_UNSUPPORTED, "the CUDA driver has no stream capture");
  if (d->timing) /* the events around each launch are not the graph's business */
    return frt_errorf(err, FRT_ERR_UNSUPPORTED, "no CUDA graph while the launches are timed");
  FrtStatus st = bind(d, err);
  if (st != FRT_OK)
    return st;
  if (d->graph) {
    cu.graph_exec_destroy(d->graph);
    d->graph = NULL;
  }
  CUresult r = cu.stream_synchronize(d->stream);
  if (r != CUDA_SUCCESS)
    return cu_fail(err, FRT_ERR_RESOURCE, r, "cuStreamSynchronize before a capture");
  if ((r = cu.begin_capture(d->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)) != CUDA_SUCCESS)
    return cu_fail(err, FRT_ERR_UNSUPPORTED, r, "cuStreamBeginCapture");
  const uint64_t *a = args;
  for (int32_t i = 0; i < d->gm->n_launches && st == FRT_OK; i++) {
    st = cuda_launch(d, i, &d->gm->launches[i], a, err);
    a += d->gm->launches[i].n_args;
  }
  /* Ended whatever happened, so that the stream leaves capture mode; a failed capture may still hand back a
   * graph, which is destroyed. */
  CUgraph graph = NULL;
  r = cu.end_capture(d->stream, &graph);
  if (st == FRT_OK && r != CUDA_SUCCESS)
    st = cu_fail(err, FRT_ERR_UNSUPPORTED, r, "cuStreamEndCapture");
  if (st == FRT_OK && !graph)
    st = frt_errorf(err, FRT_ERR_UNSUPPORTED, "cuStreamEndCapture returned no graph");
  if (st == FRT_OK && (r = cu.graph_instantiate(&d->graph, graph, 0)) != CUDA_SUCCESS) {
    d->graph = NULL;
    st = cu_fail(err, FRT_ERR_UNSUPPORTED, r, "cuGraphInstantiateWithFlags");
  }
  /* The executable graph no longer needs the graph it was made from. */
  if (graph)
    cu.graph_destroy(graph);
  return st;
}

static FrtStatus cuda_graph_launch(void *dev, FrtError *err) {
  CudaDev *d = dev;
  FrtStatus st = bind(d, err);
  if (st != FRT_OK)
    return st;
  if (!d->graph)
    return frt_errorf(err, FRT_ERR_UNSUPPORTED, "cuGraphLaunch: no graph was captured");
  CUresult r = cu.graph_launch(d->graph, d->stream);
  return r == CUDA_SUCCESS ? FRT_OK
                           : cu_fail(err, FRT_ERR_RESOURCE, r, "cuGraphLaunch (the model's %d launches as one graph)",
                                     (int)d->gm->n_launches);
}

const FrtGpuBackend frt_gpu_cuda = {
    .name = "cuda",
    .open = cuda_open,
    .device_name = cuda_device_name,
    .alloc = cuda_alloc,
    .release = cuda_release,
    .upload = cuda_upload,
    .download = cuda_download,
    .zero = cuda_zero,
    .launch = cuda_launch,
    .copy2d = cuda_copy2d,
    .stream = cuda_stream,
    .sync = cuda_sync,
    .close = cuda_close,
    .set_timing = cuda_set_timing,
    .launch_seconds = cuda_launch_seconds,
    .graph_capture = cuda_graph_capture,
    .graph_launch = cuda_graph_launch,
};

/* ---- for the NCCL collectives (coll_nccl.c) --------------------------------------------------------------- */

int frt_cuda_bind_device(int32_t local_rank, char *msg, size_t cap) {
  if (rank_device.bound)
    return 0;
  int count = 0;
  /* Ranks on one machine take one GPU each: local rank k the k-th (modulo the GPUs there). */
  if (load_driver(msg, cap) != 0)
    return -1;
  CUresult r = cu.device_get_count(&count);
  if (r != CUDA_SUCCESS)
    return describe(msg, cap, r, "cuDeviceGetCount"), -1;
  if (count <= 0)
    return snprintf(msg, cap, "no CUDA GPU found"), -1;
  if (open_device(local_rank % count, &rank_device.dev, &rank_device.ctx, msg, cap) != 0)
    return -1;
  rank_device.fallback = local_rank % count;
  rank_device.bound = true;
  return 0;
}

int frt_cuda_stream_sync(void *stream, char *msg, size_t cap) {
  if (!rank_device.bound)
    return snprintf(msg, cap, "no GPU is bound to this rank"), -1;
  CUresult r = cu.ctx_set_current(rank_device.ctx);
  if (r == CUDA_SUCCESS)
    r = cu.stream_synchronize((CUstream)stream);
  if (r != CUDA_SUCCESS)
    return describe(msg, cap, r, "cuStreamSynchronize"), -1;
  return 0;
}

int frt_cuda_copy(void *dst, const void *src, size_t bytes, void *stream, char *msg, size_t cap) {
  if (!rank_device.bound)
    return snprintf(msg, cap, "no GPU is bound to this rank"), -1;
  CUresult r = cu.ctx_set_current(rank_device.ctx);
  if (r == CUDA_SUCCESS)
    r = cu.memcpy_async((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes, (CUstream)stream);
  if (r == CUDA_SUCCESS)
    r = cu.stream_synchronize((CUstream)stream);
  if (r != CUDA_SUCCESS)
    return describe(msg, cap, r, "cuMemcpyAsync"), -1;
  return 0;
}

void frt_cuda_unbind_device(void) {
  if (!rank_device.bound)
    return;
  cu.primary_ctx_release(rank_device.dev);
  rank_device.bound = false;
}
