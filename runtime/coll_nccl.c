/* coll_nccl.c — the NCCL backend of the collectives (FrtCollBackend frt_coll_nccl), for a GPU program's
 * ranks: its buffers are device memory.
 *
 * libnccl.so.2 is opened with dlopen ($FLOWRT_NCCL_LIBRARY names another file) and nccl.h is not included:
 * the handful of entry points and enum values below follow NCCL 2's ABI (ncclResult_t, ncclDataType_t and
 * ncclRedOp_t are ints, a communicator an opaque pointer, ncclUniqueId 128 bytes). NCCL needs a way to
 * exchange its unique id, so the backend starts MPI first (frt_coll_mpi, which also gives the ranks and
 * the job's size): every rank binds its GPU (gpu_cuda.c: local rank k takes GPU k modulo the GPUs
 * there), rank 0 makes the id and broadcasts it over MPI, and all join with ncclCommInitRank; a mesh
 * axis's group is an ncclCommSplit of that world. After each step that can fail on one rank alone the
 * ranks agree over MPI (the first failed rank's message goes to all), so they fail together and none is
 * left waiting in the next step.
 *
 * NCCL only queues work on a stream, while this interface's calls return with their results in place:
 * each call is queued on the stream frt_coll_nccl_set_stream gave (the legacy default stream until then,
 * which waits for every other blocking stream's work) and waited for. Reductions map f32, f16, bf16, f64,
 * i8, u8 (and i1), i32, u32, i64 and u64 to NCCL's types (i16 and ui16 have none: refused); everything
 * that moves data without arithmetic moves bytes, so every dtype goes. NCCL's send and receive have no
 * tags: messages between two ranks arrive in the order they were sent, which is what the generated code
 * relies on, and a receive of another size than the send is not detected. all_to_all is one group of
 * sends and receives (ncclAlltoAll is too new to rely on).
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowrt_internal.h"

#define NCCL_LIBRARY "libnccl.so.2"
#define NCCL_UNIQUE_ID_BYTES 128

typedef int NcclResult;
typedef struct NcclComm *NcclComm;
typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } NcclUniqueId;

/* ncclDataType_t, ncclRedOp_t (nccl.h). */
enum { NCCL_INT8 = 0, NCCL_UINT8 = 1, NCCL_INT32 = 2, NCCL_UINT32 = 3, NCCL_INT64 = 4, NCCL_UINT64 = 5,
       NCCL_FLOAT16 = 6, NCCL_FLOAT32 = 7, NCCL_FLOAT64 = 8, NCCL_BFLOAT16 = 9 };
enum { NCCL_SUM = 0, NCCL_MAX = 2, NCCL_MIN = 3 };

#define NCCL_FUNCTIONS(X)                                                                                        \
  X(NcclResult, get_version, (int *), "ncclGetVersion")                                                          \
  X(const char *, get_error_string, (NcclResult), "ncclGetErrorString")                                          \
  X(NcclResult, get_unique_id, (NcclUniqueId *), "ncclGetUniqueId")                                              \
  X(NcclResult, comm_init_rank, (NcclComm *, int, NcclUniqueId, int), "ncclCommInitRank")                       \
  X(NcclResult, comm_split, (NcclComm, int, int, NcclComm *, void *), "ncclCommSplit")                          \
  X(NcclResult, comm_destroy, (NcclComm), "ncclCommDestroy")                                                     \
  X(NcclResult, comm_abort, (NcclComm), "ncclCommAbort")                                                         \
  X(NcclResult, all_reduce, (const void *, void *, size_t, int, int, NcclComm, void *), "ncclAllReduce")        \
  X(NcclResult, reduce_scatter, (const void *, void *, size_t, int, int, NcclComm, void *), "ncclReduceScatter") \
  X(NcclResult, all_gather, (const void *, void *, size_t, int, NcclComm, void *), "ncclAllGather")             \
  X(NcclResult, broadcast, (const void *, void *, size_t, int, int, NcclComm, void *), "ncclBroadcast")         \
  X(NcclResult, send, (const void *, size_t, int, int, NcclComm, void *), "ncclSend")                           \
  X(NcclResult, recv, (void *, size_t, int, int, NcclComm, void *), "ncclRecv")                                 \
  X(NcclResult, group_start, (void), "ncclGroupStart")                                                           \
  X(NcclResult, group_end, (void), "ncclGroupEnd")

#define NCCL_SPLIT_NOCOLOR (-1)
#define MAX_GROUPS 16

static struct {
  void *lib;
#define FIELD(ret, field, params, sym) ret(*field) params;
  NCCL_FUNCTIONS(FIELD)
  int version;          /* ncclGetVersion's code: 22809 is 2.28.9 */
  bool mpi_started;
  void *mpi_world;
  int32_t rank, size;
  NcclComm world;
  NcclComm groups[MAX_GROUPS];
  int n_groups;
  void *stream;         /* a CUstream; NULL: the legacy default stream */
  bool keep_mpi;        /* frt_coll_nccl_keep_mpi */
} nccl;

void frt_coll_nccl_set_stream(void *stream) { nccl.stream = stream; }

void frt_coll_nccl_keep_mpi(bool keep) { nccl.keep_mpi = keep; }

static void *nccl_host_world(void) { return nccl.mpi_world; }

/* "ncclAllReduce failed: unhandled cuda error (run with NCCL_DEBUG=INFO for details)" */
static int nccl_fail(char *msg, size_t cap, const char *call, NcclResult r) {
  const char *s = nccl.get_error_string ? nccl.get_error_string(r) : NULL;
  return s ? frt_coll_fail(msg, cap, "%s failed: %s", call, s) : frt_coll_fail(msg, cap, "%s failed: NCCL error %d", call, (int)r);
}

/* Queues nothing more: waits for what the call queued, so its result is in place. */
static int finish(NcclResult r, const char *call, char *msg, size_t cap) {
  if (r != 0)
    return nccl_fail(msg, cap, call, r);
  char why[300];
  if (frt_cuda_stream_sync(nccl.stream, why, sizeof why) != 0)
    return frt_coll_fail(msg, cap, "%s: %s", call, why);
  return 0;
}

/* ---- start and end ------------------------------------------------------------------------------------- */

static int load(char *msg, size_t cap) {
  if (nccl.lib)
    return 0;
  const char *path = getenv("FLOWRT_NCCL_LIBRARY");
  if (!path || !*path)
    path = NCCL_LIBRARY;
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    return frt_coll_fail(msg, cap,
                "this program's ranks need NCCL, which cannot be loaded: %s (FLOWRT_NCCL_LIBRARY=PATH names "
                "another libnccl.so.2)",
                why ? why : path);
  }
#define LOAD(ret, field, params, sym)                                                                            \
  if (!(nccl.field = (ret(*) params)dlsym(lib, sym))) {                                                          \
    dlclose(lib);                                                                                                \
    return frt_coll_fail(msg, cap, "%s lacks %s: not NCCL 2.12 or later", path, sym);                                     \
  }
  NCCL_FUNCTIONS(LOAD)
  nccl.version = 0;
  if (nccl.get_version(&nccl.version) != 0)
    nccl.version = 0;
  nccl.lib = lib; /* kept: NCCL starts threads that live in it */
  return 0;
}

/* "2.28.9" */
static const char *version_text(char *buf, size_t cap) {
  int v = nccl.version;
  if (v >= 10000)
    snprintf(buf, cap, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
  else
    snprintf(buf, cap, "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
  return buf;
}

/* Every rank passes whether its last step worked (0) or not (-1, its message in msg); all get -1 when any
 * failed, with the first failed rank's message (prefixed with its rank on the others). */
static int agree(int rc, char *msg, size_t cap) {
  int32_t first = rc == 0 ? INT32_MAX : nccl.rank;
  char why[400];
  if (frt_coll_mpi.all_reduce(nccl.mpi_world, &first, 1, FRT_I32, FRT_REDUCE_MIN, why, sizeof why) != 0)
    return frt_coll_fail(msg, cap, "agreeing on NCCL's start over MPI: %s", why);
  if (first == INT32_MAX)
    return 0;
  char text[400];
  snprintf(text, sizeof text, "%s", first == nccl.rank ? msg : "");
  if (frt_coll_mpi.broadcast(nccl.mpi_world, text, (int64_t)sizeof text, FRT_U8, first, why, sizeof why) != 0)
    return frt_coll_fail(msg, cap, "agreeing on NCCL's start over MPI: %s", why);
  text[sizeof text - 1] = 0;
  if (first != nccl.rank)
    frt_coll_fail(msg, cap, "rank %d: %s", (int)first, text);
  return -1;
}

static void nccl_finalize(void);

static int32_t local_rank(void) {
  const char *s = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  long v = s ? strtol(s, NULL, 10) : 0;
  return v >= 0 && v <= INT32_MAX ? (int32_t)v : 0;
}

static int nccl_init(int32_t n_ranks, int32_t *rank, int32_t *size, void **world, char *msg, size_t cap) {
  if (frt_coll_mpi.init(n_ranks, &nccl.rank, &nccl.size, &nccl.mpi_world, msg, cap) != 0)
    return -1;
  nccl.mpi_started = true;
  char ver[32], why[400];
  int rc = load(msg, cap);
  if (rc == 0 && frt_cuda_bind_device(local_rank(), why, sizeof why) != 0)
    rc = frt_coll_fail(msg, cap, "NCCL %s needs a GPU: %s", version_text(ver, sizeof ver), why);
  if (agree(rc, msg, cap) != 0)
    goto failed;
  NcclUniqueId id;
  memset(&id, 0, sizeof id);
  NcclResult r = 0;
  rc = nccl.rank == 0 && (r = nccl.get_unique_id(&id)) != 0 ? nccl_fail(msg, cap, "ncclGetUniqueId", r) : 0;
  if (agree(rc, msg, cap) != 0)
    goto failed;
  if (frt_coll_mpi.broadcast(nccl.mpi_world, &id, (int64_t)sizeof id, FRT_U8, 0, why, sizeof why) != 0) {
    frt_coll_fail(msg, cap, "broadcasting NCCL's unique id over MPI: %s", why);
    goto failed;
  }
  nccl.world = NULL;
  if ((r = nccl.comm_init_rank(&nccl.world, nccl.size, id, nccl.rank)) != 0) {
    nccl.world = NULL;
    rc = nccl_fail(msg, cap, "ncclCommInitRank", r);
  }
  if (agree(rc, msg, cap) != 0)
    goto failed;
  nccl.n_groups = 0;
  *rank = nccl.rank;
  *size = nccl.size;
  *world = nccl.world;
  return 0;
failed:
  if (nccl.keep_mpi)
    nccl.mpi_started = false; /* everything but MPI ends: the caller starts the MPI backend on it */
  nccl_finalize();
  return -1;
}

static int nccl_split(void *world, int32_t color, int32_t key, void **group, char *msg, size_t cap) {
  if (nccl.n_groups == MAX_GROUPS)
    return frt_coll_fail(msg, cap, "too many groups");
  NcclComm c = NULL;
  NcclResult r = nccl.comm_split((NcclComm)world, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &c, NULL);
  if (r != 0)
    return nccl_fail(msg, cap, "ncclCommSplit", r);
  nccl.groups[nccl.n_groups++] = c;
  *group = c;
  return 0;
}

static void nccl_finalize(void) {
  for (int i = 0; i < nccl.n_groups; i++)
    if (nccl.groups[i])
      nccl.comm_destroy(nccl.groups[i]);
  nccl.n_groups = 0;
  if (nccl.world)
    nccl.comm_destroy(nccl.world);
  nccl.world = NULL;
  frt_cuda_unbind_device();
  if (nccl.mpi_started)
    frt_coll_mpi.finalize();
  nccl.mpi_started = false;
}

static void nccl_abort(int status) {
  for (int i = 0; i < nccl.n_groups; i++)
    if (nccl.groups[i])
      nccl.comm_abort(nccl.groups[i]);
  if (nccl.world)
    nccl.comm_abort(nccl.world);
  frt_coll_mpi.abort(status);
}

static int32_t nccl_local_size(void) { return frt_coll_mpi.local_size(); }
static int32_t nccl_launch_rank(void) { return frt_coll_mpi.launch_rank(); }

/* ---- the collectives ------------------------------------------------------------------------------------ */

/* NCCL's type for a reduction of dt, or -1 (i16 and ui16: NCCL has none). */
static int reduce_type(FrtDtype dt) {
  switch (dt) {
  case FRT_F32: return NCCL_FLOAT32;
  case FRT_F16: return NCCL_FLOAT16;
  case FRT_BF16: return NCCL_BFLOAT16;
  case FRT_F64: return NCCL_FLOAT64;
  case FRT_I8: return NCCL_INT8;
  case FRT_U8: case FRT_BOOL: return NCCL_UINT8;
  case FRT_I32: return NCCL_INT32;
  case FRT_U32: return NCCL_UINT32;
  case FRT_I64: return NCCL_INT64;
  case FRT_U64: return NCCL_UINT64;
  case FRT_I16: case FRT_U16: return -1;
  }
  return -1;
}

static int reduction(FrtDtype dt, FrtReduceOp op, int *type, int *nop, char *msg, size_t cap) {
  if ((*type = reduce_type(dt)) < 0)
    return frt_coll_fail(msg, cap, "NCCL cannot reduce %s (no such NCCL type); reduce in i32", frt_dtype_name(dt));
  *nop = op == FRT_REDUCE_SUM ? NCCL_SUM : op == FRT_REDUCE_MAX ? NCCL_MAX : NCCL_MIN;
  return 0;
}

/* count elements of dt as bytes (coll.c checked the product fits). */
static size_t bytes_of(int64_t count, FrtDtype dt) { return (size_t)count * frt_dtype_size(dt); }

static int nccl_all_reduce(void *group, void *buf, int64_t count, FrtDtype dt, FrtReduceOp op, char *msg, size_t cap) {
  int type = 0, nop = 0;
  if (reduction(dt, op, &type, &nop, msg, cap) != 0)
    return -1;
  return finish(nccl.all_reduce(buf, buf, (size_t)count, type, nop, (NcclComm)group, nccl.stream), "ncclAllReduce",
                msg, cap);
}

static int nccl_all_gather(void *group, const void *send, void *recv, int64_t count, FrtDtype dt, char *msg,
                           size_t cap) {
  return finish(nccl.all_gather(send, recv, bytes_of(count, dt), NCCL_UINT8, (NcclComm)group, nccl.stream),
                "ncclAllGather", msg, cap);
}

static int nccl_reduce_scatter(void *group, const void *send, void *recv, int64_t count, FrtDtype dt, FrtReduceOp op,
                               char *msg, size_t cap) {
  int type = 0, nop = 0;
  if (reduction(dt, op, &type, &nop, msg, cap) != 0)
    return -1;
  return finish(nccl.reduce_scatter(send, recv, (size_t)count, type, nop, (NcclComm)group, nccl.stream),
                "ncclReduceScatter", msg, cap);
}

/* The group's size is not kept per handle: coll.c's group of this handle has it, but the backend interface
 * does not pass it, so all_to_all asks NCCL (ncclCommCount is in every NCCL 2). */
static int group_size(void *group, int *n, char *msg, size_t cap) {
  static NcclResult (*comm_count)(NcclComm, int *);
  if (!comm_count && !(comm_count = (NcclResult(*)(NcclComm, int *))dlsym(nccl.lib, "ncclCommCount")))
    return frt_coll_fail(msg, cap, "the NCCL library lacks ncclCommCount");
  NcclResult r = comm_count((NcclComm)group, n);
  return r == 0 ? 0 : nccl_fail(msg, cap, "ncclCommCount", r);
}

static int nccl_all_to_all(void *group, const void *send, void *recv, int64_t count, FrtDtype dt, char *msg,
                           size_t cap) {
  int n = 0;
  if (group_size(group, &n, msg, cap) != 0)
    return -1;
  size_t block = bytes_of(count, dt);
  NcclResult r = nccl.group_start();
  for (int peer = 0; peer < n && r == 0; peer++) {
    r = nccl.send((const char *)send + (size_t)peer * block, block, NCCL_UINT8, peer, (NcclComm)group, nccl.stream);
    if (r == 0)
      r = nccl.recv((char *)recv + (size_t)peer * block, block, NCCL_UINT8, peer, (NcclComm)group, nccl.stream);
  }
  NcclResult end = nccl.group_end(); /* always closes the group it opened */
  return finish(r != 0 ? r : end, "ncclGroupEnd (all_to_all)", msg, cap);
}

static int nccl_broadcast(void *group, void *buf, int64_t count, FrtDtype dt, int32_t root, char *msg, size_t cap) {
  return finish(nccl.broadcast(buf, buf, bytes_of(count, dt), NCCL_UINT8, root, (NcclComm)group, nccl.stream),
                "ncclBroadcast", msg, cap);
}

static int nccl_send(void *world, const void *buf, int64_t count, FrtDtype dt, int32_t peer, int32_t tag, char *msg,
                     size_t cap) {
  (void)tag; /* NCCL keeps the order of one pair's messages instead */
  return finish(nccl.send(buf, bytes_of(count, dt), NCCL_UINT8, peer, (NcclComm)world, nccl.stream), "ncclSend",
                msg, cap);
}

static int nccl_recv(void *world, void *buf, int64_t count, FrtDtype dt, int32_t peer, int32_t tag, char *msg,
                     size_t cap) {
  (void)tag;
  return finish(nccl.recv(buf, bytes_of(count, dt), NCCL_UINT8, peer, (NcclComm)world, nccl.stream), "ncclRecv",
                msg, cap);
}

static int nccl_copy(void *dst, const void *src, size_t bytes, char *msg, size_t cap) {
  return frt_cuda_copy(dst, src, bytes, nccl.stream, msg, cap);
}

const FrtCollBackend frt_coll_nccl = {
    .name = "nccl",
    .init = nccl_init,
    .split = nccl_split,
    .all_reduce = nccl_all_reduce,
    .all_gather = nccl_all_gather,
    .reduce_scatter = nccl_reduce_scatter,
    .all_to_all = nccl_all_to_all,
    .broadcast = nccl_broadcast,
    .send = nccl_send,
    .recv = nccl_recv,
    .local_size = nccl_local_size,
    .launch_rank = nccl_launch_rank,
    .finalize = nccl_finalize,
    .abort = nccl_abort,
    .copy = nccl_copy,
    .host = &frt_coll_mpi,
    .host_world = nccl_host_world,
};
