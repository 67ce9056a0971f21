/* coll_mpi.c — the Open MPI backend of the collectives (FrtCollBackend), loaded at run time.
 *
 * libmpi.so.40 is opened with dlopen, never linked, so a program built without --ranks needs only libc,
 * libm and libpthread, and one built with it starts on a machine without MPI to say so ($FLOWRT_MPI_LIBRARY
 * names the library where it is not on the loader's path). mpi.h is not
 * included either: Open MPI's handles are pointers to its own global objects (MPI_COMM_WORLD is
 * &ompi_mpi_comm_world, MPI_FLOAT &ompi_mpi_float, MPI_SUM &ompi_mpi_op_sum), which dlsym finds by those
 * names, and every function takes them as opaque pointers. RTLD_GLOBAL because Open MPI's own plugins,
 * which it dlopens in MPI_Init, resolve libmpi's symbols through the global scope.
 *
 * MPI counts are int: a call of more than INT_MAX elements (or $FLOWRT_COLL_MPI_MAX_COUNT, which the tests
 * set small to exercise this) is split into several where the pieces are independent — all_reduce,
 * broadcast, send and recv, element-wise or in order — and refused for all_gather, reduce_scatter and
 * all_to_all, whose pieces would interleave. Reductions of f16 and bf16 are refused: MPI has no such
 * types. Errors return (MPI_ERRORS_RETURN on the world, inherited by the groups split from it) and become
 * the message of MPI_Error_string.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flowrt_internal.h"

#define MPI_LIBRARY "libmpi.so.40" /* Open MPI 4 and 5 */

typedef void *MpiComm; /* MPI_Comm, MPI_Datatype, MPI_Op, MPI_Errhandler: pointers to Open MPI's objects */
typedef void *MpiDatatype;
typedef void *MpiOp;
typedef void *MpiErrhandler;
typedef struct MpiStatus { /* Open MPI's MPI_Status */
  int source, tag, error, cancelled;
  size_t ucount;
} MpiStatus;

#define MPI_SUCCESS 0
#define MPI_IN_PLACE ((void *)1)
#define MPI_MAX_ERROR_STRING 256
#define MPI_THREAD_SERIALIZED 2

/* Every function and object the backend uses: one row each (kind, field, symbol). */
#define MPI_FUNCTIONS(X)                                                                                         \
  X(int, initialized, (int *), "MPI_Initialized")                                                              \
  X(int, finalized, (int *), "MPI_Finalized")                                                                  \
  X(int, init_thread, (int *, char ***, int, int *), "MPI_Init_thread")                                         \
  X(int, finalize, (void), "MPI_Finalize")                                                                     \
  X(int, abort, (MpiComm, int), "MPI_Abort")                                                                   \
  X(int, comm_rank, (MpiComm, int *), "MPI_Comm_rank")                                                         \
  X(int, comm_size, (MpiComm, int *), "MPI_Comm_size")                                                         \
  X(int, comm_split, (MpiComm, int, int, MpiComm *), "MPI_Comm_split")                                         \
  X(int, comm_free, (MpiComm *), "MPI_Comm_free")                                                              \
  X(int, set_errhandler, (MpiComm, MpiErrhandler), "MPI_Comm_set_errhandler")                                  \
  X(int, error_string, (int, char *, int *), "MPI_Error_string")                                               \
  X(int, allreduce, (const void *, void *, int, MpiDatatype, MpiOp, MpiComm), "MPI_Allreduce")                 \
  X(int, allgather, (const void *, int, MpiDatatype, void *, int, MpiDatatype, MpiComm), "MPI_Allgather")      \
  X(int, reduce_scatter, (const void *, void *, int, MpiDatatype, MpiOp, MpiComm), "MPI_Reduce_scatter_block") \
  X(int, alltoall, (const void *, int, MpiDatatype, void *, int, MpiDatatype, MpiComm), "MPI_Alltoall")        \
  X(int, bcast, (void *, int, MpiDatatype, int, MpiComm), "MPI_Bcast")                                         \
  X(int, send, (const void *, int, MpiDatatype, int, int, MpiComm), "MPI_Send")                                \
  X(int, recv, (void *, int, MpiDatatype, int, int, MpiComm, MpiStatus *), "MPI_Recv")                         \
  X(int, get_count, (const MpiStatus *, MpiDatatype, int *), "MPI_Get_count")

#define MPI_OBJECTS(X)                                                                                           \
  X(comm_world, "ompi_mpi_comm_world")                                                                           \
  X(errors_return, "ompi_mpi_errors_return")                                                                     \
  X(t_float, "ompi_mpi_float")                                                                                   \
  X(t_double, "ompi_mpi_double")                                                                                 \
  X(t_int8, "ompi_mpi_int8_t")                                                                                   \
  X(t_uint8, "ompi_mpi_uint8_t")                                                                                 \
  X(t_int16, "ompi_mpi_int16_t")                                                                                 \
  X(t_uint16, "ompi_mpi_uint16_t")                                                                               \
  X(t_int32, "ompi_mpi_int32_t")                                                                                 \
  X(t_uint32, "ompi_mpi_uint32_t")                                                                               \
  X(t_int64, "ompi_mpi_int64_t")                                                                                 \
  X(t_uint64, "ompi_mpi_uint64_t")                                                                               \
  X(op_sum, "ompi_mpi_op_sum")                                                                                   \
  X(op_max, "ompi_mpi_op_max")                                                                                   \
  X(op_min, "ompi_mpi_op_min")

static struct {
  void *lib;
  bool owned;     /* this backend called MPI_Init (an embedding program may have done it itself) */
  int64_t max_count; /* elements one MPI call takes */
  int n_groups;
  MpiComm groups[16]; /* the groups split off the world, freed at finalize */
#define FIELD_FN(ret, field, params, sym) ret(*field) params;
  MPI_FUNCTIONS(FIELD_FN)
#define FIELD_OBJ(field, sym) void *field;
  MPI_OBJECTS(FIELD_OBJ)
} mpi;

/* "MPI_Bcast failed: <Open MPI's words>" */
static int mpi_fail(char *msg, size_t cap, const char *call, int rc) {
  char s[MPI_MAX_ERROR_STRING + 1] = "";
  int len = 0;
  if (mpi.error_string(rc, s, &len) != MPI_SUCCESS || len < 0 || len > MPI_MAX_ERROR_STRING)
    snprintf(s, sizeof s, "error %d", rc);
  else
    s[len] = 0;
  return frt_coll_fail(msg, cap, "%s failed: %s", call, s);
}

static MpiDatatype datatype(FrtDtype dt) {
  switch (dt) {
  case FRT_F32: return mpi.t_float;
  case FRT_F64: return mpi.t_double;
  case FRT_I8: return mpi.t_int8;
  case FRT_U8: case FRT_BOOL: return mpi.t_uint8;
  case FRT_I16: return mpi.t_int16;
  case FRT_U16: case FRT_F16: case FRT_BF16: return mpi.t_uint16; /* moved as bits, never reduced */
  case FRT_I32: return mpi.t_int32;
  case FRT_U32: return mpi.t_uint32;
  case FRT_I64: return mpi.t_int64;
  case FRT_U64: return mpi.t_uint64;
  }
  return NULL;
}

static int reduction(FrtDtype dt, FrtReduceOp op, MpiOp *out, char *msg, size_t cap) {
  if (dt == FRT_F16 || dt == FRT_BF16)
    return frt_coll_fail(msg, cap, "MPI cannot reduce %s (no such MPI type); reduce in f32", frt_dtype_name(dt));
  *out = op == FRT_REDUCE_SUM ? mpi.op_sum : op == FRT_REDUCE_MAX ? mpi.op_max : mpi.op_min;
  return 0;
}

/* ---- start and end ------------------------------------------------------------------------------------- */

static int resolve(char *msg, size_t cap) {
#define LOAD_FN(ret, field, params, sym)                                                                          \
  if (!(mpi.field = (ret(*) params)dlsym(mpi.lib, sym)))                                                         \
    return frt_coll_fail(msg, cap, MPI_LIBRARY " lacks %s: not Open MPI 4 or later?", sym);
  MPI_FUNCTIONS(LOAD_FN)
#define LOAD_OBJ(field, sym)                                                                                     \
  if (!(mpi.field = dlsym(mpi.lib, sym)))                                                                        \
    return frt_coll_fail(msg, cap, MPI_LIBRARY " lacks %s: not Open MPI 4 or later?", sym);
  MPI_OBJECTS(LOAD_OBJ)
  return 0;
}

static int read_max_count(char *msg, size_t cap) {
  mpi.max_count = INT_MAX;
  const char *s = getenv("FLOWRT_COLL_MPI_MAX_COUNT");
  if (!s || !*s)
    return 0;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < 1 || v > INT_MAX)
    return frt_coll_fail(msg, cap, "FLOWRT_COLL_MPI_MAX_COUNT wants a count from 1 to %d, got '%s'", INT_MAX, s);
  mpi.max_count = v;
  return 0;
}

static int mpi_init(int32_t n_ranks, int32_t *rank, int32_t *size, void **world, char *msg, size_t cap) {
  /* Open MPI's mpirun sets these in every rank it starts; without them MPI_Init would start a lone
   * "singleton" rank, which can never be what a program compiled for N ranks wants. */
  if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK"))
    return frt_coll_fail(msg, cap, "this program was compiled for %d ranks: run it with mpirun -np %d", (int)n_ranks,
                (int)n_ranks);
  if (read_max_count(msg, cap) != 0)
    return -1;
  const char *path = getenv("FLOWRT_MPI_LIBRARY");
  if (!path || !*path)
    path = MPI_LIBRARY;
  if (!mpi.lib && !(mpi.lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL))) {
    const char *why = dlerror();
    return frt_coll_fail(msg, cap,
                "this program was compiled for %d ranks and needs Open MPI, which cannot be loaded: %s "
                "(Debian: apt-get install openmpi-bin; FLOWRT_MPI_LIBRARY=PATH names another libmpi.so.40)",
                (int)n_ranks, why ? why : path);
  }
  if (resolve(msg, cap) != 0)
    return -1;
  int flag = 0, rc;
  if ((rc = mpi.finalized(&flag)) != MPI_SUCCESS || flag)
    return frt_coll_fail(msg, cap, "MPI was already finalized in this process");
  if ((rc = mpi.initialized(&flag)) != MPI_SUCCESS)
    return mpi_fail(msg, cap, "MPI_Initialized", rc);
  if (!flag) {
    /* Serialized: collectives come from whichever thread runs the model, one at a time, while the pool's
     * and the watchdog's threads never call MPI. */
    int provided = 0;
    if ((rc = mpi.init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided)) != MPI_SUCCESS)
      return frt_coll_fail(msg, cap, "MPI_Init_thread failed (error %d)", rc);
    mpi.owned = true;
  }
  int r = 0, n = 0;
  if ((rc = mpi.set_errhandler(mpi.comm_world, mpi.errors_return)) != MPI_SUCCESS ||
      (rc = mpi.comm_rank(mpi.comm_world, &r)) != MPI_SUCCESS || (rc = mpi.comm_size(mpi.comm_world, &n)) != MPI_SUCCESS)
    return mpi_fail(msg, cap, "MPI on the world communicator", rc);
  *rank = r;
  *size = n;
  *world = mpi.comm_world;
  mpi.n_groups = 0;
  return 0;
}

static int mpi_split(void *world, int32_t color, int32_t key, void **group, char *msg, size_t cap) {
  if (mpi.n_groups == (int)(sizeof mpi.groups / sizeof mpi.groups[0]))
    return frt_coll_fail(msg, cap, "too many groups");
  MpiComm c = NULL;
  int rc = mpi.comm_split(world, color, key, &c);
  if (rc != MPI_SUCCESS)
    return mpi_fail(msg, cap, "MPI_Comm_split", rc);
  mpi.groups[mpi.n_groups++] = c;
  *group = c;
  return 0;
}

static int32_t mpi_local_size(void) {
  const char *s = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  long v = s ? strtol(s, NULL, 10) : 1;
  return v >= 1 && v <= INT32_MAX ? (int32_t)v : 1;
}

static int32_t mpi_launch_rank(void) {
  const char *s = getenv("OMPI_COMM_WORLD_RANK");
  if (!s)
    s = getenv("PMIX_RANK");
  long v = s ? strtol(s, NULL, 10) : -1;
  return v >= 0 && v <= INT32_MAX ? (int32_t)v : -1;
}

static void mpi_finalize(void) {
  if (!mpi.lib)
    return;
  for (int i = 0; i < mpi.n_groups; i++)
    mpi.comm_free(&mpi.groups[i]);
  mpi.n_groups = 0;
  int done = 1;
  if (mpi.owned && mpi.finalized(&done) == MPI_SUCCESS && !done)
    mpi.finalize();
  mpi.owned = false;
  /* libmpi stays loaded: Open MPI cannot be initialised twice in a process, and its atexit handlers
   * live in it. */
}

static void mpi_abort(int status) {
  fflush(stdout);
  fflush(stderr);
  mpi.abort(mpi.comm_world, status);
  _exit(status ? status : 1); /* MPI_Abort does not return; if it did, this rank still ends */
}

/* ---- the collectives ------------------------------------------------------------------------------------ */

static int too_many(char *msg, size_t cap, const char *call, int64_t count) {
  return frt_coll_fail(msg, cap, "%lld elements a rank are more than one %s takes (%lld); split the tensor",
              (long long)count, call, (long long)mpi.max_count);
}

static int mpi_all_reduce(void *group, void *buf, int64_t count, FrtDtype dt, FrtReduceOp op, char *msg, size_t cap) {
  MpiOp mop = NULL;
  if (reduction(dt, op, &mop, msg, cap) != 0)
    return -1;
  size_t es = frt_dtype_size(dt);
  for (int64_t at = 0; at < count; at += mpi.max_count) {
    int n = (int)(count - at < mpi.max_count ? count - at : mpi.max_count);
    int rc = mpi.allreduce(MPI_IN_PLACE, (char *)buf + (size_t)at * es, n, datatype(dt), mop, group);
    if (rc != MPI_SUCCESS)
      return mpi_fail(msg, cap, "MPI_Allreduce", rc);
  }
  return 0;
}

static int mpi_all_gather(void *group, const void *send, void *recv, int64_t count, FrtDtype dt, char *msg, size_t cap) {
  if (count > mpi.max_count)
    return too_many(msg, cap, "MPI_Allgather", count);
  int rc = mpi.allgather(send, (int)count, datatype(dt), recv, (int)count, datatype(dt), group);
  return rc == MPI_SUCCESS ? 0 : mpi_fail(msg, cap, "MPI_Allgather", rc);
}

static int mpi_reduce_scatter(void *group, const void *send, void *recv, int64_t count, FrtDtype dt, FrtReduceOp op,
                              char *msg, size_t cap) {
  MpiOp mop = NULL;
  if (reduction(dt, op, &mop, msg, cap) != 0)
    return -1;
  if (count > mpi.max_count)
    return too_many(msg, cap, "MPI_Reduce_scatter_block", count);
  int rc = mpi.reduce_scatter(send, recv, (int)count, datatype(dt), mop, group);
  return rc == MPI_SUCCESS ? 0 : mpi_fail(msg, cap, "MPI_Reduce_scatter_block", rc);
}

static int mpi_all_to_all(void *group, const void *send, void *recv, int64_t count, FrtDtype dt, char *msg, size_t cap) {
  if (count > mpi.max_count)
    return too_many(msg, cap, "MPI_Alltoall", count);
  int rc = mpi.alltoall(send, (int)count, datatype(dt), recv, (int)count, datatype(dt), group);
  return rc == MPI_SUCCESS ? 0 : mpi_fail(msg, cap, "MPI_Alltoall", rc);
}

static int mpi_broadcast(void *group, void *buf, int64_t count, FrtDtype dt, int32_t root, char *msg, size_t cap) {
  size_t es = frt_dtype_size(dt);
  for (int64_t at = 0; at < count; at += mpi.max_count) {
    int n = (int)(count - at < mpi.max_count ? count - at : mpi.max_count);
    int rc = mpi.bcast((char *)buf + (size_t)at * es, n, datatype(dt), root, group);
    if (rc != MPI_SUCCESS)
      return mpi_fail(msg, cap, "MPI_Bcast", rc);
  }
  return 0;
}

/* A message of count elements goes as the same pieces on both sides; MPI keeps messages of one sender
 * and tag in order. A message of 0 elements is still sent, so a recv of 0 matches it. */
static int mpi_send(void *world, const void *buf, int64_t count, FrtDtype dt, int32_t peer, int32_t tag, char *msg,
                    size_t cap) {
  size_t es = frt_dtype_size(dt);
  int64_t at = 0;
  do {
    int n = (int)(count - at < mpi.max_count ? count - at : mpi.max_count);
    int rc = mpi.send((const char *)buf + (size_t)at * es, n, datatype(dt), peer, tag, world);
    if (rc != MPI_SUCCESS)
      return mpi_fail(msg, cap, "MPI_Send", rc);
    at += n;
  } while (at < count);
  return 0;
}

static int mpi_recv(void *world, void *buf, int64_t count, FrtDtype dt, int32_t peer, int32_t tag, char *msg,
                    size_t cap) {
  size_t es = frt_dtype_size(dt);
  int64_t at = 0;
  do {
    int n = (int)(count - at < mpi.max_count ? count - at : mpi.max_count);
    MpiStatus st;
    memset(&st, 0, sizeof st);
    int rc = mpi.recv((char *)buf + (size_t)at * es, n, datatype(dt), peer, tag, world, &st);
    if (rc != MPI_SUCCESS)
      return mpi_fail(msg, cap, "MPI_Recv", rc);
    int got = 0;
    if ((rc = mpi.get_count(&st, datatype(dt), &got)) != MPI_SUCCESS)
      return mpi_fail(msg, cap, "MPI_Get_count", rc);
    if (got != n)
      return frt_coll_fail(msg, cap, "rank %d sent %lld elements of %s with tag %d, %lld were expected", (int)peer,
                  (long long)(at + got), frt_dtype_name(dt), (int)tag, (long long)count);
    at += n;
  } while (at < count);
  return 0;
}

const FrtCollBackend frt_coll_mpi = {
    .name = "mpi",
    .init = mpi_init,
    .split = mpi_split,
    .all_reduce = mpi_all_reduce,
    .all_gather = mpi_all_gather,
    .reduce_scatter = mpi_reduce_scatter,
    .all_to_all = mpi_all_to_all,
    .broadcast = mpi_broadcast,
    .send = mpi_send,
    .recv = mpi_recv,
    .local_size = mpi_local_size,
    .launch_rank = mpi_launch_rank,
    .finalize = mpi_finalize,
    .abort = mpi_abort,
};
