/* gpu.c — the device runner: a model's GPU half (FrtGpuModel) opened on a backend and run, the same way on
 * every backend (gpu_backend.h: CUDA or the SIMT host emulator).
 *
 * Opening does everything that can fail before the first run: the launch table is checked against the
 * buffers it points into (every argument's input/output index in range and its offset within the buffer,
 * sizes from the tensor descriptors, workspace_size and weights_size, all overflow-checked), so that a
 * malformed table is a one-line error rather than a kernel scribbling over device memory; then the backend
 * starts, one device buffer is allocated per input and output, one for the workspace and one for the
 * weights, the weights are uploaded once, and every launch's arguments are resolved to device addresses in
 * one preallocated array. A run then allocates nothing: zero the status word (the workspace's first 64
 * bytes, an i32 the kernels set to 1 + their kernel index on bad data, as the CPU code returns it), upload
 * the inputs, queue every launch, wait, download the outputs and the status word.
 *
 * Where the backend can record its launches as a graph (CUDA graphs), opening captures every launch once
 * (their arguments never change: one buffer each for the session's life) and every run queues the graph in
 * one call instead of one call per launch. A backend without graphs, or one whose capture fails, runs the
 * launches one by one, with the same results; so does a profiled run, whose per-launch timers need them one
 * by one.
 * An SBP program's boxing ops are entries of the same table that the host runs between the kernels
 * (FrtGpuColl, flowrt.h): frt_coll_* on the device buffers, whose backend (NCCL for CUDA, queued on the
 * runner's own stream, which opening hands to frt_coll_nccl_set_stream; MPI for the emulator's host memory)
 * the program started; re-layouts around them and local_slice are the backend's 2-D copies on the same
 * stream, so everything stays in table order without waiting for the device in between (NCCL's calls wait
 * for their own result). Opening checks that each entry's group has the size the table was laid out for.
 *
 * Profiling adds each launch's device time to its node: through the backend's own timers where it has
 * them (CUDA: an event pair around each launch, read after the run's one synchronisation), else by the
 * wall clock around each launch and a wait for it (which serialises the run: its total is then no
 * longer the unprofiled latency, as on the CPU).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowrt_internal.h"
#include "gpu_backend.h"

#define STATUS_BYTES 64 /* the status word's room at the workspace's start */

struct FrtGpuSession {
  const FrtModel *m;
  const FrtGpuModel *gm;
  const FrtGpuBackend *be;
  void *dev;
  uint64_t *in_addr, *out_addr; /* per input / output: its device buffer (0: not allocated) */
  size_t *in_bytes, *out_bytes;
  uint64_t workspace, weights;
  uint64_t *args;    /* every launch's arguments, resolved, launch after launch */
  double *launch_s;  /* per launch: the last profiled run's seconds */
  double *prof;      /* frt_gpu_set_profile's accumulator (n_kernels entries), or NULL */
  bool backend_timing; /* the backend times launches itself (set_timing succeeded) */
  bool graph;          /* the launches were captured as one graph (graph_capture) */
  bool nccl_stream;    /* handed its stream to the NCCL collectives */
};

static const char *model_name(const FrtModel *m) { return m->name ? m->name : "?"; }

static const char *node_name(const FrtGpuModel *gm, int32_t node) {
  return node >= 0 && node < gm->n_kernels && gm->kernel_names && gm->kernel_names[node] ? gm->kernel_names[node]
                                                                                         : "an unnamed node";
}

/* ---- the launch table's checks ---------------------------------------------------------------------- */

static FrtStatus bad_table(FrtError *err, const FrtModel *m, const char *fmt, const char *detail) {
  return frt_errorf(err, FRT_ERR_INPUT, "model '%s': malformed GPU code: %s%s", model_name(m), fmt, detail);
}

static bool tensor_bytes(const FrtTensorDesc *d, size_t *n) {
  return d->rank >= 0 && d->rank <= FRT_MAX_RANK && (d->rank == 0 || d->dims) &&
         frt_dense_nbytes(d->dtype, d->rank, d->dims, n);
}

/* The size of the buffer an argument points into; false (with a message) for one that does not exist. */
static bool arg_buffer(const FrtModel *m, const FrtGpuArg *a, uint64_t *size, char *why, size_t cap) {
  size_t n = 0;
  switch (a->kind) {
  case FRT_GPU_ARG_INPUT:
  case FRT_GPU_ARG_OUTPUT: {
    bool in = a->kind == FRT_GPU_ARG_INPUT;
    int32_t count = in ? m->n_inputs : m->n_outputs;
    if (a->index < 0 || a->index >= count) {
      snprintf(why, cap, "names %s %d, the model has %d", in ? "input" : "output", (int)a->index, (int)count);
      return false;
    }
    if (!tensor_bytes(in ? &m->inputs[a->index] : &m->outputs[a->index], &n)) {
      snprintf(why, cap, "names %s %d, whose size overflows", in ? "input" : "output", (int)a->index);
      return false;
    }
    *size = n;
    return true;
  }
  case FRT_GPU_ARG_WORKSPACE:
  case FRT_GPU_ARG_WEIGHTS:
    if (a->index != 0) {
      snprintf(why, cap, "names %s %d (there is one)", a->kind == FRT_GPU_ARG_WORKSPACE ? "workspace" : "weights",
               (int)a->index);
      return false;
    }
    *size = a->kind == FRT_GPU_ARG_WORKSPACE ? m->gpu->workspace_size : m->gpu->weights_size;
    return true;
  }
  snprintf(why, cap, "has kind %d (not input, output, workspace or weights)", (int)a->kind);
  return false;
}

static const char *coll_name(int32_t coll) {
  static const char *const names[] = {"kernel", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                      "local_slice"};
  return coll >= 0 && coll <= FRT_GPU_COLL_LOCAL_SLICE ? names[coll] : "?";
}

/* The bytes a collective entry's source, destination and scratch need (see FrtGpuLaunch); false when its
 * fields are inconsistent or the sizes overflow. */
static bool coll_extents(const FrtGpuLaunch *l, uint64_t need[3]) {
  size_t es = frt_dtype_size((FrtDtype)l->dtype);
  uint64_t blk, all, g = (uint64_t)l->group;
  if (!es || l->group < 1 || l->count < 0 || l->send_rows < 1 || l->recv_rows < 1 ||
      __builtin_mul_overflow((uint64_t)l->count, es, &blk) || __builtin_mul_overflow(blk, g, &all) ||
      all > (uint64_t)INT64_MAX || l->count % l->send_rows || l->count % l->recv_rows)
    return false;
  bool packs = l->send_rows > 1, spreads = l->recv_rows > 1;
  switch (l->coll) {
  case FRT_GPU_COLL_ALL_REDUCE:
    need[0] = need[1] = blk, need[2] = 0;
    return !packs && !spreads;
  case FRT_GPU_COLL_ALL_GATHER:
    need[0] = blk, need[1] = all, need[2] = spreads ? all : 0;
    return !packs;
  case FRT_GPU_COLL_REDUCE_SCATTER:
    need[0] = all, need[1] = blk, need[2] = packs ? all : 0;
    return !spreads;
  case FRT_GPU_COLL_ALL_TO_ALL:
    need[0] = need[1] = all, need[2] = (packs ? all : 0) + (spreads ? all : 0);
    return true;
  case FRT_GPU_COLL_LOCAL_SLICE:
    need[0] = all, need[1] = blk, need[2] = 0;
    return !spreads;
  }
  return false;
}

/* A collective entry: its kind and fields, its three arguments inside their buffers, and its group's size
 * against this process's collectives (frt_coll_size: 1 without ranks). */
static FrtStatus check_collective(const FrtModel *m, const FrtGpuLaunch *l, const char *at, size_t *total,
                                  FrtError *err) {
  const FrtGpuModel *gm = m->gpu;
  char d[240];
  uint64_t need[3];
  if (l->coll < 0 || l->coll > FRT_GPU_COLL_LOCAL_SLICE) {
    snprintf(d, sizeof d, "(%s) has collective kind %d", node_name(gm, l->node), (int)l->coll);
    return bad_table(err, m, at, d);
  }
  if (l->n_args != 3 || !l->args || !coll_extents(l, need) ||
      (l->reduce_op != FRT_REDUCE_SUM && l->reduce_op != FRT_REDUCE_MAX && l->reduce_op != FRT_REDUCE_MIN)) {
    snprintf(d, sizeof d, "(%s) is a malformed %s: %d arguments, %lld elements of dtype %d in %d x %d rows, group %d",
             node_name(gm, l->node), coll_name(l->coll), (int)l->n_args, (long long)l->count, (int)l->dtype,
             (int)l->send_rows, (int)l->recv_rows, (int)l->group);
    return bad_table(err, m, at, d);
  }
  static const char *const roles[3] = {"source", "destination", "scratch"};
  for (int j = 0; j < 3; j++) {
    uint64_t size = 0;
    char why[120];
    if (!arg_buffer(m, &l->args[j], &size, why, sizeof why)) {
      snprintf(d, sizeof d, "(%s) %s %s", node_name(gm, l->node), roles[j], why);
      return bad_table(err, m, at, d);
    }
    if (l->args[j].offset > size || need[j] > size - l->args[j].offset) {
      snprintf(d, sizeof d, "(%s) %s needs %llu bytes at %llu of a buffer of %llu", node_name(gm, l->node), roles[j],
               (unsigned long long)need[j], (unsigned long long)l->args[j].offset, (unsigned long long)size);
      return bad_table(err, m, at, d);
    }
  }
  if (frt_add_overflows(*total, 3, total))
    return bad_table(err, m, "the launches' arguments overflow", "");
  return FRT_OK;
}

/* Checks m->gpu for `device`; *total is the number of arguments of all launches. */
static FrtStatus check_gpu_model(const FrtModel *m, FrtDevice device, size_t *total, FrtError *err) {
  const FrtGpuModel *gm = m->gpu;
  char d[200];
  if (m->n_inputs < 0 || m->n_outputs < 0 || (m->n_inputs && !m->inputs) || (m->n_outputs && !m->outputs))
    return bad_table(err, m, "the model's inputs or outputs", "");
  for (int32_t i = 0; i < m->n_inputs + m->n_outputs; i++) {
    bool in = i < m->n_inputs;
    size_t n;
    if (!tensor_bytes(in ? &m->inputs[i] : &m->outputs[i - m->n_inputs], &n)) {
      snprintf(d, sizeof d, "%s %d's size overflows", in ? "input" : "output", (int)(in ? i : i - m->n_inputs));
      return bad_table(err, m, "", d);
    }
  }
  if (gm->workspace_size < STATUS_BYTES) {
    snprintf(d, sizeof d, "a workspace of %llu bytes has no room for the %d-byte status word",
             (unsigned long long)gm->workspace_size, STATUS_BYTES);
    return bad_table(err, m, "", d);
  }
  if (gm->workspace_size > SIZE_MAX || gm->weights_size > SIZE_MAX)
    return bad_table(err, m, "the workspace or the weights do not fit in memory", "");
  if (gm->weights_size && !gm->weights)
    return bad_table(err, m, "weights_size without weights", "");
  if (gm->n_launches < 0 || (gm->n_launches && !gm->launches) || gm->n_kernels < 0 ||
      (gm->n_kernels && !gm->kernel_names))
    return bad_table(err, m, "the launch table's counts", "");
  if (device == FRT_DEVICE_CUDA && !gm->ptx)
    return frt_errorf(err, FRT_ERR_UNSUPPORTED,
                      "model '%s': its GPU code was built for the SIMT host emulator (no PTX), not for CUDA",
                      model_name(m));
  if (device == FRT_DEVICE_SIMT && !gm->host_kernels)
    return frt_errorf(err, FRT_ERR_UNSUPPORTED,
                      "model '%s': its GPU code has no host-compiled kernels for the SIMT emulator", model_name(m));
  *total = 0;
  for (int32_t i = 0; i < gm->n_launches; i++) {
    const FrtGpuLaunch *l = &gm->launches[i];
    char at[64];
    snprintf(at, sizeof at, "launch %d ", (int)i);
    if (!l->kernel || !*l->kernel)
      return bad_table(err, m, at, "has no kernel name");
    if (l->node < 0 || l->node >= gm->n_kernels) {
      snprintf(d, sizeof d, "names node %d, the model has %d", (int)l->node, (int)gm->n_kernels);
      return bad_table(err, m, at, d);
    }
    if (l->coll != FRT_GPU_COLL_NONE) {
      FrtStatus cs = check_collective(m, l, at, total, err);
      if (cs != FRT_OK)
        return cs;
      continue;
    }
    uint64_t threads = (uint64_t)l->block[0] * l->block[1] * l->block[2];
    if (!l->grid[0] || !l->grid[1] || !l->grid[2] || !threads || threads > 1024) {
      snprintf(d, sizeof d, "(%s) has grid %ux%ux%u of blocks %ux%ux%u: empty, or more than 1024 threads a block",
               node_name(gm, l->node), l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2]);
      return bad_table(err, m, at, d);
    }
    if (l->n_args < 0 || (l->n_args && !l->args)) {
      snprintf(d, sizeof d, "(%s) has %d arguments", node_name(gm, l->node), (int)l->n_args);
      return bad_table(err, m, at, d);
    }
    if (frt_add_overflows(*total, (size_t)l->n_args, total))
      return bad_table(err, m, "the launches' arguments overflow", "");
    for (int32_t j = 0; j < l->n_args; j++) {
      const FrtGpuArg *a = &l->args[j];
      uint64_t size = 0;
      char why[120];
      if (!arg_buffer(m, a, &size, why, sizeof why)) {
        snprintf(d, sizeof d, "(%s) argument %d %s", node_name(gm, l->node), (int)j, why);
        return bad_table(err, m, at, d);
      }
      /* A pointer one past the end is allowed (an empty tensor at a buffer's end), none beyond it. */
      if (a->offset > size) {
        snprintf(d, sizeof d, "(%s) argument %d points %llu bytes into a %s of %llu bytes", node_name(gm, l->node),
                 (int)j, (unsigned long long)a->offset,
                 a->kind == FRT_GPU_ARG_INPUT ? "input" : a->kind == FRT_GPU_ARG_OUTPUT ? "output"
                 : a->kind == FRT_GPU_ARG_WORKSPACE ? "workspace" : "weights buffer",
                 (unsigned long long)size);
        return bad_table(err, m, at, d);
      }
    }
  }
  if (frt_mul_overflows(*total, sizeof(uint64_t), &(size_t){0}))
    return bad_table(err, m, "the launches' arguments overflow", "");
  /* A well-formed table, then whether this process's collectives are the ones it was laid out for. */
  for (int32_t i = 0; i < gm->n_launches; i++) {
    const FrtGpuLaunch *l = &gm->launches[i];
    if (l->coll != FRT_GPU_COLL_NONE && frt_coll_size(l->mesh_axis) != l->group)
      return frt_errorf(err, FRT_ERR_INPUT,
                        "model '%s': %s (%s) runs over a group of %d ranks (mesh axis %d), this process has %d: "
                        "start the program's collectives first (under mpirun, %d ranks)",
                        model_name(m), node_name(gm, l->node), coll_name(l->coll), (int)l->group,
                        (int)l->mesh_axis, (int)frt_coll_size(l->mesh_axis), (int)m->n_ranks);
  }
  return FRT_OK;
}

/* ---- open and close ---------------------------------------------------------------------------------- */

void frt_gpu_close(FrtGpuSession *s) {
  if (!s)
    return;
  if (s->nccl_stream)
    frt_coll_nccl_set_stream(NULL);
  if (s->dev) {
    for (int32_t i = 0; i < s->m->n_inputs; i++)
      if (s->in_addr && s->in_addr[i])
        s->be->release(s->dev, s->in_addr[i]);
    for (int32_t i = 0; i < s->m->n_outputs; i++)
      if (s->out_addr && s->out_addr[i])
        s->be->release(s->dev, s->out_addr[i]);
    if (s->workspace)
      s->be->release(s->dev, s->workspace);
    if (s->weights)
      s->be->release(s->dev, s->weights);
    s->be->close(s->dev);
  }
  free(s->in_addr);
  free(s->out_addr);
  free(s->in_bytes);
  free(s->out_bytes);
  free(s->args);
  free(s->launch_s);
  free(s);
}

/* A device buffer of `bytes` (at least 64: a zero-sized allocation is an error on CUDA). */
static FrtStatus device_alloc(FrtGpuSession *s, uint64_t bytes, uint64_t *addr, FrtError *err) {
  return s->be->alloc(s->dev, bytes < FRT_ALIGN ? FRT_ALIGN : bytes, addr, err);
}

static uint64_t buffer_of(const FrtGpuSession *s, const FrtGpuArg *a) {
  switch (a->kind) {
  case FRT_GPU_ARG_INPUT: return s->in_addr[a->index];
  case FRT_GPU_ARG_OUTPUT: return s->out_addr[a->index];
  case FRT_GPU_ARG_WORKSPACE: return s->workspace;
  default: return s->weights;
  }
}

FrtStatus frt_gpu_open_backend(const FrtModel *m, const FrtGpuBackend *be, FrtDevice device, FrtGpuSession **out,
                               FrtError *err) {
  if (!out)
    return frt_errorf(err, FRT_ERR_INPUT, "frt_gpu_open: NULL session pointer");
  *out = NULL;
  if (!m)
    return frt_errorf(err, FRT_ERR_INPUT, "frt_gpu_open: NULL model");
  if (m->abi_version != FRT_ABI_VERSION)
    return frt_errorf(err, FRT_ERR_INPUT, "model '%s' was built for runtime ABI %u, this runtime is ABI %d",
                      model_name(m), (unsigned)m->abi_version, FRT_ABI_VERSION);
  if (!m->gpu)
    return frt_errorf(err, FRT_ERR_UNSUPPORTED, "this model has no GPU code: build it with --device cuda");
  size_t total = 0;
  FrtStatus st = check_gpu_model(m, device, &total, err);
  if (st != FRT_OK)
    return st;
  if (!be)
    return frt_errorf(err, FRT_ERR_UNSUPPORTED,
                      "this program has no SIMT emulator (flowc run and flowc check --device simt have one)");
  const FrtGpuModel *gm = m->gpu;
  FrtGpuSession *s = calloc(1, sizeof *s);
  if (!s)
    return frt_errorf(err, FRT_ERR_RESOURCE, "out of memory");
  s->m = m;
  s->gm = gm;
  s->be = be;
  s->in_addr = calloc((size_t)m->n_inputs + 1, sizeof *s->in_addr);
  s->out_addr = calloc((size_t)m->n_outputs + 1, sizeof *s->out_addr);
  s->in_bytes = calloc((size_t)m->n_inputs + 1, sizeof *s->in_bytes);
  s->out_bytes = calloc((size_t)m->n_outputs + 1, sizeof *s->out_bytes);
  s->args = calloc(total + 1, sizeof *s->args);
  s->launch_s = calloc((size_t)gm->n_launches + 1, sizeof *s->launch_s);
  if (!s->in_addr || !s->out_addr || !s->in_bytes || !s->out_bytes || !s->args || !s->launch_s) {
    frt_gpu_close(s);
    return frt_errorf(err, FRT_ERR_RESOURCE, "out of memory for the launch table of %zu arguments", total);
  }
  if ((st = be->open(gm, &s->dev, err)) != FRT_OK) {
    s->dev = NULL;
    frt_gpu_close(s);
    return st;
  }
  for (int32_t i = 0; i < m->n_inputs && st == FRT_OK; i++)
    if (tensor_bytes(&m->inputs[i], &s->in_bytes[i]))
      st = device_alloc(s, s->in_bytes[i], &s->in_addr[i], err);
  for (int32_t i = 0; i < m->n_outputs && st == FRT_OK; i++)
    if (tensor_bytes(&m->outputs[i], &s->out_bytes[i]))
      st = device_alloc(s, s->out_bytes[i], &s->out_addr[i], err);
  if (st == FRT_OK)
    st = device_alloc(s, gm->workspace_size, &s->workspace, err);
  if (st == FRT_OK)
    st = device_alloc(s, gm->weights_size, &s->weights, err);
  if (st == FRT_OK && gm->weights_size)
    st = be->upload(s->dev, s->weights, gm->weights, gm->weights_size, err);
  if (st != FRT_OK) {
    frt_gpu_close(s);
    return st;
  }
  for (int32_t i = 0; i < gm->n_launches; i++)
    if (gm->launches[i].coll != FRT_GPU_COLL_NONE && be->stream) {
      /* NCCL queues the collectives on the kernels' stream: they run in table order with no host wait. */
      frt_coll_nccl_set_stream(be->stream(s->dev));
      s->nccl_stream = true;
      break;
    }
  size_t at = 0;
  for (int32_t i = 0; i < gm->n_launches; i++)
    for (int32_t j = 0; j < gm->launches[i].n_args; j++) {
      const FrtGpuArg *a = &gm->launches[i].args[j];
      s->args[at++] = buffer_of(s, a) + a->offset;
    }
  /* The arguments never change, so the launches are captured once, here, while opening may still allocate.
   * No graph is not an error: the runs then launch one by one. An SBP program's collective entries run on
   * the host between kernels, which a graph of the kernels alone would skip: such a program launches one by
   * one. */
  bool collectives = false;
  for (int32_t i = 0; i < gm->n_launches; i++) collectives |= gm->launches[i].coll != FRT_GPU_COLL_NONE;
  FrtError ignored;
  s->graph = !collectives && be->graph_capture && be->graph_launch && gm->n_launches > 0 &&
             be->graph_capture(s->dev, s->args, &ignored) == FRT_OK;
  *out = s;
  return FRT_OK;
}

/* The SIMT emulator is in flowc (whose JIT defines the emulator's entry points for host-built kernels), never
 * in a built program: a weak reference, so linking this file does not pull it in. */
extern const FrtGpuBackend frt_gpu_simt __attribute__((weak));

/* Referenced by every model's GPU descriptor (codegen/gpu_emit.c), so a program with GPU code links this
 * file (and through it the CUDA backend), while runtime/main.c's references to the runner are weak and a
 * CPU-only program carries none of it. */
const char frt_gpu_runtime = 1;

FrtStatus frt_gpu_open(const FrtModel *m, FrtDevice device, FrtGpuSession **out, FrtError *err) {
  if (device == FRT_DEVICE_AUTO)
    device = FRT_DEVICE_CUDA;
  if (device != FRT_DEVICE_CUDA && device != FRT_DEVICE_SIMT) {
    if (out)
      *out = NULL;
    return frt_errorf(err, FRT_ERR_INPUT, "frt_gpu_open: device %d is not a GPU (cuda or simt)", (int)device);
  }
  return frt_gpu_open_backend(m, device == FRT_DEVICE_CUDA ? &frt_gpu_cuda : &frt_gpu_simt, device, out, err);
}

const char *frt_gpu_device_name(const FrtGpuSession *s) {
  const char *name = s && s->be->device_name ? s->be->device_name(s->dev) : NULL;
  return name ? name : "?";
}

void frt_gpu_set_profile(FrtGpuSession *s, double *acc, int32_t n) {
  if (!s)
    return;
  if (acc && n != s->gm->n_kernels)
    acc = NULL; /* a table of another size would be written past its end */
  s->prof = acc;
  s->backend_timing = false;
  if (s->be->set_timing && s->be->launch_seconds) {
    FrtError ignored;
    /* A backend that cannot time (no events left) leaves the wall clock: the profile stays right. */
    s->backend_timing = s->be->set_timing(s->dev, acc != NULL, &ignored) == FRT_OK && acc;
  }
}

/* ---- a run -------------------------------------------------------------------------------------------- */

/* G blocks of rows x w bytes between [rows, G, w] (wide, row pitch G * w) and [G, rows, w] (packed). */
static FrtStatus relayout(FrtGpuSession *s, uint64_t dst, uint64_t src, int32_t g, uint64_t rows, uint64_t w,
                          bool to_packed, FrtError *err) {
  FrtStatus st = FRT_OK;
  for (int32_t j = 0; j < g && st == FRT_OK; j++) {
    uint64_t wide = (uint64_t)j * w, packed = (uint64_t)j * rows * w;
    st = to_packed ? s->be->copy2d(s->dev, dst + packed, w, src + wide, (uint64_t)g * w, w, rows, err)
                   : s->be->copy2d(s->dev, dst + wide, (uint64_t)g * w, src + packed, w, w, rows, err);
  }
  return st;
}

static void *dev_ptr(uint64_t a) { return (void *)(uintptr_t)a; }

/* A collective entry (checked at open: extents, group size). */
static FrtStatus run_collective(FrtGpuSession *s, const FrtGpuLaunch *l, const uint64_t *args, FrtError *err) {
  uint64_t src = args[0], dst = args[1], scr = args[2];
  uint64_t blk = (uint64_t)l->count * frt_dtype_size((FrtDtype)l->dtype), all = blk * (uint64_t)l->group;
  uint64_t sr = (uint64_t)l->send_rows, rr = (uint64_t)l->recv_rows;
  FrtStatus st = FRT_OK;
  int rc = 0;
  if (l->count == 0)
    return FRT_OK;
  switch (l->coll) {
  case FRT_GPU_COLL_ALL_REDUCE:
    if (dst != src)
      st = s->be->copy2d(s->dev, dst, blk, src, blk, blk, 1, err);
    if (st == FRT_OK)
      rc = frt_coll_all_reduce(l->mesh_axis, dev_ptr(dst), l->count, l->dtype, l->reduce_op);
    break;
  case FRT_GPU_COLL_ALL_GATHER: {
    uint64_t recv = rr > 1 ? scr : dst;
    rc = frt_coll_all_gather(l->mesh_axis, dev_ptr(src), dev_ptr(recv), l->count, l->dtype);
    if (rc == 0 && rr > 1)
      st = relayout(s, dst, scr, l->group, rr, blk / rr, false, err);
    break;
  }
  case FRT_GPU_COLL_REDUCE_SCATTER: {
    uint64_t send = sr > 1 ? scr : src;
    if (sr > 1)
      st = relayout(s, scr, src, l->group, sr, blk / sr, true, err);
    if (st == FRT_OK)
      rc = frt_coll_reduce_scatter(l->mesh_axis, dev_ptr(send), dev_ptr(dst), l->count, l->dtype, l->reduce_op);
    break;
  }
  case FRT_GPU_COLL_ALL_TO_ALL: {
    uint64_t send = sr > 1 ? scr : src, recv = rr > 1 ? scr + (sr > 1 ? all : 0) : dst;
    if (sr > 1)
      st = relayout(s, scr, src, l->group, sr, blk / sr, true, err);
    if (st == FRT_OK)
      rc = frt_coll_all_to_all(l->mesh_axis, dev_ptr(send), dev_ptr(recv), l->count, l->dtype);
    if (rc == 0 && st == FRT_OK && rr > 1)
      st = relayout(s, dst, recv, l->group, rr, blk / rr, false, err);
    break;
  }
  case FRT_GPU_COLL_LOCAL_SLICE: {
    uint64_t w = blk / sr, at = (uint64_t)frt_coll_rank(l->mesh_axis) * w;
    st = s->be->copy2d(s->dev, dst, w, src + at, (uint64_t)l->group * w, w, sr, err);
    break;
  }
  }
  if (rc != 0)
    return frt_errorf(err, FRT_ERR_RESOURCE, "%s: %s", node_name(s->gm, l->node), frt_coll_last_error());
  if (st != FRT_OK) {
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
    return frt_errorf(err, st, "%s (%s): %s", node_name(s->gm, l->node), coll_name(l->coll), msg);
  }
  return FRT_OK;
}

FrtStatus frt_gpu_run(FrtGpuSession *s, const void *const *inputs, void *const *outputs, FrtError *err) {
  if (!s)
    return frt_errorf(err, FRT_ERR_INPUT, "frt_gpu_run: NULL session");
  const FrtModel *m = s->m;
  const FrtGpuModel *gm = s->gm;
  const FrtGpuBackend *be = s->be;
  if ((m->n_inputs && !inputs) || (m->n_outputs && !outputs))
    return frt_errorf(err, FRT_ERR_INPUT, "model '%s': NULL %s array", model_name(m), !inputs ? "inputs" : "outputs");
  for (int32_t i = 0; i < m->n_inputs; i++)
    if (!inputs[i])
      return frt_errorf(err, FRT_ERR_INPUT, "model '%s': input %d ('%s') is NULL", model_name(m), (int)i,
                        m->inputs[i].name ? m->inputs[i].name : "?");
  for (int32_t i = 0; i < m->n_outputs; i++)
    if (!outputs[i])
      return frt_errorf(err, FRT_ERR_INPUT, "model '%s': output %d ('%s') is NULL", model_name(m), (int)i,
                        m->outputs[i].name ? m->outputs[i].name : "?");
  FrtStatus st = be->zero(s->dev, s->workspace, STATUS_BYTES, err);
  for (int32_t i = 0; i < m->n_inputs && st == FRT_OK; i++)
    if (s->in_bytes[i])
      st = be->upload(s->dev, s->in_addr[i], inputs[i], s->in_bytes[i], err);
  bool wall = s->prof && !s->backend_timing;
  bool graph = !s->prof && s->graph;
  if (graph && st == FRT_OK)
    st = be->graph_launch(s->dev, err);
  const uint64_t *args = s->args;
  for (int32_t i = 0; i < gm->n_launches && st == FRT_OK && !graph; i++) {
    const FrtGpuLaunch *l = &gm->launches[i];
    if (l->coll != FRT_GPU_COLL_NONE) {
      /* Timed by the wall clock alone: the host runs it, and a collective waits for its result anyway. */
      double t0 = s->prof ? frt_now_seconds() : 0;
      st = run_collective(s, l, args, err);
      if (st == FRT_OK && s->prof)
        s->prof[l->node] += frt_now_seconds() - t0;
      args += l->n_args;
      continue;
    }
    double t0 = wall ? frt_now_seconds() : 0;
    st = be->launch(s->dev, i, l, args, err);
    if (st == FRT_OK && wall && (st = be->sync(s->dev, err)) == FRT_OK)
      s->prof[l->node] += frt_now_seconds() - t0;
    args += l->n_args;
  }
  if (st == FRT_OK)
    st = be->sync(s->dev, err);
  if (st == FRT_OK && s->prof && s->backend_timing && (st = be->launch_seconds(s->dev, s->launch_s, err)) == FRT_OK)
    for (int32_t i = 0; i < gm->n_launches; i++)
      s->prof[gm->launches[i].node] += s->launch_s[i];
  for (int32_t i = 0; i < m->n_outputs && st == FRT_OK; i++)
    if (s->out_bytes[i])
      st = be->download(s->dev, outputs[i], s->out_addr[i], s->out_bytes[i], err);
  int32_t status = 0;
  if (st == FRT_OK)
    st = be->download(s->dev, &status, s->workspace, sizeof status, err);
  if (st != FRT_OK) {
    /* The backend's line names the call (and the node, for a launch); say whose model it was. */
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
    return frt_errorf(err, st, "model '%s': %s", model_name(m), msg);
  }
  /* status is 1 + the index of the kernel that found bad data, as the CPU code's return (model.c). */
  if (status >= 1 && status <= gm->n_kernels && gm->kernel_names && gm->kernel_names[status - 1])
    return frt_errorf(err, FRT_ERR_INPUT, "model '%s': %s: bad data at run time (an index out of range, ...)",
                      model_name(m), gm->kernel_names[status - 1]);
  if (status != 0)
    return frt_errorf(err, FRT_ERR_INPUT, "model '%s': run failed in kernel %d", model_name(m), (int)status - 1);
  if (err) {
    err->status = FRT_OK;
    err->msg[0] = 0;
  }
  return FRT_OK;
}
