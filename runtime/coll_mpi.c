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
 *
 * Ranks on one machine: Open MPI's MPI_Allreduce of 256 KiB on 2 ranks takes 45-60 us here (its reduction
 * copies through the vader BTL at ~5 GB/s; the shared segment's takes 31-35 us, bench/mpi_link.c on the
 * loaded 2-core machine), so a group whose members all share a node (MPI_Comm_split_type
 * MPI_COMM_TYPE_SHARED gives the node's part of it) runs all_reduce, all_gather, reduce_scatter,
 * all_to_all and broadcast through a shared segment of its own (coll_shm.c) instead: reductions in a fixed
 * order, rank 0 to G-1, the same bits on every rank. The segment is made at the group's first collective
 * (which every member calls alike): rank 0 creates a POSIX shared-memory object, broadcasts its name, the
 * others map it, the ranks agree (MPI_Allreduce) that all of them have, and rank 0 unlinks it, so nothing
 * is left behind, whatever ends the job. It grows at a collective that needs more, up to a slot of
 * $FLOWRT_COLL_SHM_BYTES a rank (default 1 MiB; the tests set it small), and larger calls run in chunks of
 * that. A group whose segment cannot be made (no /dev/shm, no room) stays on MPI, all members alike.
 * all_gather, all_to_all and broadcast, which only move data, take the segment up to SHM_MOVE_MAX_BYTES
 * received a rank and MPI beyond: there Open MPI's single-copy transfers (CMA) beat the segment's two
 * copies (bench/mpi_link.c, 2 ranks: all_gather of 16 KiB 2.2 us against MPI's 2.4, of 64 KiB 7.2 against
 * 4.2; all_to_all 1.4 against 2.3, and 4.1 against 3.0), while all_reduce's and reduce_scatter's
 * arithmetic keeps them on the segment at every size (all_reduce of 256 KiB: 33 us against 51).
 * $FLOWRT_COLL_SHM=0 keeps every group on MPI (the tests run both paths). send and recv always use MPI.
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
typedef void *MpiInfo;
typedef struct MpiStatus { /* Open MPI's MPI_Status */
  int source, tag, error, cancelled;
  size_t ucount;
} MpiStatus;

#define MPI_SUCCESS 0
#define MPI_IN_PLACE ((void *)1)
#define MPI_MAX_ERROR_STRING 256
#define MPI_THREAD_SERIALIZED 2
#define MPI_COMM_TYPE_SHARED 0 /* the first of Open MPI's enum of split types */
#define SHM_MOVE_MAX_BYTES (32 << 10) /* the most an all_gather, all_to_all or broadcast moves by the segment */

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
  X(int, comm_split_type, (MpiComm, int, int, MpiInfo, MpiComm *), "MPI_Comm_split_type")                      \
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
  X(info_null, "ompi_mpi_info_null")                                                                             \
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
  /* The intra-node path (coll_shm.c): per group that has had a collective, whether it uses a segment. */
  bool shm_enabled;      /* $FLOWRT_COLL_SHM is not 0 */
  size_t shm_slot_cap;   /* the largest slot a rank, bytes ($FLOWRT_COLL_SHM_BYTES) */
  int n_shm;
  struct {
    MpiComm comm;
    int32_t size;        /* the group's members */
    bool on_mpi;         /* not on one node, or no segment could be made */
    FrtShm seg;          /* seg.base NULL: not made yet */
  } shm[17];             /* the world and the groups */
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
  /* Objects are looked up in the global scope first: a program linked against libmpi itself (which may
   * have called MPI_Init) holds copies of them (copy relocations), and those are the ones libmpi uses. */
#define LOAD_OBJ(field, sym)                                                                                     \
  if (!(mpi.field = dlsym(RTLD_DEFAULT, sym)) && !(mpi.field = dlsym(mpi.lib, sym)))                             \
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

/* FLOWRT_COLL_SHM (0: MPI only; 1, the default: the segment where a group shares a node) and
 * FLOWRT_COLL_SHM_BYTES (a slot's bytes, at most). */
static int read_shm_settings(char *msg, size_t cap) {
  mpi.shm_enabled = true;
  mpi.shm_slot_cap = (size_t)1 << 20;
  const char *s = getenv("FLOWRT_COLL_SHM");
  if (s && *s) {
    if (strcmp(s, "0") != 0 && strcmp(s, "1") != 0)
      return frt_coll_fail(msg, cap, "FLOWRT_COLL_SHM wants 0 (MPI only) or 1 (shared memory on one node), got '%s'", s);
    mpi.shm_enabled = s[0] == '1';
  }
  s = getenv("FLOWRT_COLL_SHM_BYTES");
  if (s && *s) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 64 || v > (1LL << 30))
      return frt_coll_fail(msg, cap, "FLOWRT_COLL_SHM_BYTES wants bytes from 64 to 1073741824, got '%s'", s);
    mpi.shm_slot_cap = (size_t)v;
  }
  return 0;
}

static int mpi_init(int32_t n_ranks, int32_t *rank, int32_t *size, void **world, char *msg, size_t cap) {
  /* Open MPI's mpirun sets these in every rank it starts; without them MPI_Init would start a lone
   * "singleton" rank, which can never be what a program compiled for N ranks wants. */
  if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK"))
    return frt_coll_fail(msg, cap, "this program was compiled for %d ranks: run it with mpirun -np %d", (int)n_ranks,
                (int)n_ranks);
  if (read_max_count(msg, cap) != 0 || read_shm_settings(msg, cap) != 0)
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
  mpi.n_shm = 0;
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
  for (int i = 0; i < mpi.n_shm; i++)
    frt_shm_unmap(&mpi.shm[i].seg);
  mpi.n_shm = 0;
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

/* ---- the intra-node path: a shared segment per group (coll_shm.c) ----------------------------------------- */

/* Makes entry i's segment with slots of slot_bytes, replacing a smaller one; collective over its group.
 * Where it cannot be made, every member alike keeps the old segment or, without one, stays on MPI. */
static int shm_make(int i, size_t slot_bytes, char *msg, size_t cap) {
  MpiComm c = mpi.shm[i].comm;
  int r = 0, g = 0, rc;
  if ((rc = mpi.comm_rank(c, &r)) != MPI_SUCCESS || (rc = mpi.comm_size(c, &g)) != MPI_SUCCESS)
    return mpi_fail(msg, cap, "MPI on a group", rc);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  bool crowded = cpus > 0 && mpi_local_size() > cpus;
  struct {
    int32_t ok;
    char name[60];
  } ann;
  memset(&ann, 0, sizeof ann);
  char why[200];
  FrtShm seg;
  memset(&seg, 0, sizeof seg);
  if (r == 0) {
    static unsigned serial;
    snprintf(ann.name, sizeof ann.name, "/flowrt-%ld-%u", (long)getpid(), serial++);
    ann.ok = frt_shm_map(&seg, ann.name, true, r, g, slot_bytes, crowded, why, sizeof why) == 0;
  }
  if ((rc = mpi.bcast(&ann, (int)sizeof ann, mpi.t_uint8, 0, c)) != MPI_SUCCESS)
    return mpi_fail(msg, cap, "MPI_Bcast", rc);
  if (ann.ok) {
    ann.name[sizeof ann.name - 1] = 0;
    int32_t all = r == 0 || frt_shm_map(&seg, ann.name, false, r, g, slot_bytes, crowded, why, sizeof why) == 0;
    rc = mpi.allreduce(MPI_IN_PLACE, &all, 1, mpi.t_int32, mpi.op_min, c);
    if (r == 0)
      frt_shm_unlink(ann.name);
    if (rc != MPI_SUCCESS) {
      frt_shm_unmap(&seg);
      return mpi_fail(msg, cap, "MPI_Allreduce", rc);
    }
    if (all) {
      frt_shm_unmap(&mpi.shm[i].seg);
      mpi.shm[i].seg = seg;
      return 0;
    }
    frt_shm_unmap(&seg);
  }
  if (!mpi.shm[i].seg.base)
    mpi.shm[i].on_mpi = true;
  return 0;
}

/* The segment of a group for a call that wants slots of `want` bytes (less where the segment is smaller:
 * the call then runs in chunks); *seg NULL: the group is on MPI. Collective at a group's first call and
 * where the segment grows: every member decides alike, from the same arguments. */
static int shm_for(MpiComm c, size_t want, FrtShm **seg, char *msg, size_t cap) {
  *seg = NULL;
  if (!mpi.shm_enabled)
    return 0;
  int i = 0;
  while (i < mpi.n_shm && mpi.shm[i].comm != c)
    i++;
  if (i == mpi.n_shm) {
    if (i == (int)(sizeof mpi.shm / sizeof mpi.shm[0]))
      return 0;
    memset(&mpi.shm[i], 0, sizeof mpi.shm[i]);
    mpi.shm[i].comm = c;
    mpi.n_shm++;
    MpiComm node = NULL;
    int g = 0, n = 0, rc;
    if ((rc = mpi.comm_split_type(c, MPI_COMM_TYPE_SHARED, 0, mpi.info_null, &node)) != MPI_SUCCESS)
      return mpi_fail(msg, cap, "MPI_Comm_split_type", rc);
    rc = mpi.comm_size(node, &n);
    if (rc == MPI_SUCCESS)
      rc = mpi.comm_size(c, &g);
    mpi.comm_free(&node);
    if (rc != MPI_SUCCESS)
      return mpi_fail(msg, cap, "MPI_Comm_size", rc);
    mpi.shm[i].size = g;
    mpi.shm[i].on_mpi = n != g; /* alike on every member: each sees its node's part smaller than the group */
  }
  if (mpi.shm[i].on_mpi)
    return 0;
  /* Slots of whole cache lines, with room for one element of the widest type per rank (a reduce_scatter's
   * chunk needs one of each section). */
  int32_t g = mpi.shm[i].size;
  size_t least = ((size_t)g * 8 + 63) & ~(size_t)63, most = mpi.shm_slot_cap & ~(size_t)63;
  if (most < least)
    most = least;
  size_t need = want > most ? most : want < least ? least : (want + 63) & ~(size_t)63;
  if (need > mpi.shm[i].seg.slot_bytes && shm_make(i, need, msg, cap) != 0)
    return -1;
  *seg = mpi.shm[i].seg.base ? &mpi.shm[i].seg : NULL;
  return 0;
}

/* ---- the collectives ------------------------------------------------------------------------------------ */

/* A group's size, for the slot a reduce_scatter or all_to_all wants (a section for every member). */
static int32_t shm_members(MpiComm c) {
  int g = 1;
  return mpi.comm_size(c, &g) == MPI_SUCCESS && g > 0 ? g : 1;
}

static int too_many(char *msg, size_t cap, const char *call, int64_t count) {
  return frt_coll_fail(msg, cap, "%lld elements a rank are more than one %s takes (%lld); split the tensor",
              (long long)count, call, (long long)mpi.max_count);
}

static int mpi_all_reduce(void *group, void *buf, int64_t count, FrtDtype dt, FrtReduceOp op, char *msg, size_t cap) {
  MpiOp mop = NULL;
  if (reduction(dt, op, &mop, msg, cap) != 0)
    return -1;
  size_t es = frt_dtype_size(dt);
  FrtShm *seg;
  if (shm_for(group, (size_t)count * es, &seg, msg, cap) != 0)
    return -1;
  if (seg)
    return frt_shm_all_reduce(seg, buf, count, dt, op);
  for (int64_t at = 0; at < count; at += mpi.max_count) {
    int n = (int)(count - at < mpi.max_count ? count - at : mpi.max_count);
    int rc = mpi.allreduce(MPI_IN_PLACE, (char *)buf + (size_t)at * es, n, datatype(dt), mop, group);
    if (rc != MPI_SUCCESS)
      return mpi_fail(msg, cap, "MPI_Allreduce", rc);
  }
  return 0;
}

static int mpi_all_gather(void *group, const void *send, void *recv, int64_t count, FrtDtype dt, char *msg, size_t cap) {
  FrtShm *seg = NULL;
  size_t bytes = (size_t)count * frt_dtype_size(dt);
  if (bytes * (size_t)shm_members(group) <= SHM_MOVE_MAX_BYTES && shm_for(group, bytes, &seg, msg, cap) != 0)
    return -1;
  if (seg)
    return frt_shm_all_gather(seg, send, recv, count, dt);
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
  FrtShm *seg;
  if (shm_for(group, (size_t)count * frt_dtype_size(dt) * (size_t)shm_members(group), &seg, msg, cap) != 0)
    return -1;
  if (seg)
    return frt_shm_reduce_scatter(seg, send, recv, count, dt, op);
  if (count > mpi.max_count)
    return too_many(msg, cap, "MPI_Reduce_scatter_block", count);
  int rc = mpi.reduce_scatter(send, recv, (int)count, datatype(dt), mop, group);
  return rc == MPI_SUCCESS ? 0 : mpi_fail(msg, cap, "MPI_Reduce_scatter_block", rc);
}

static int mpi_all_to_all(void *group, const void *send, void *recv, int64_t count, FrtDtype dt, char *msg, size_t cap) {
  FrtShm *seg = NULL;
  size_t bytes = (size_t)count * frt_dtype_size(dt) * (size_t)shm_members(group);
  if (bytes <= SHM_MOVE_MAX_BYTES && shm_for(group, bytes, &seg, msg, cap) != 0)
    return -1;
  if (seg)
    return frt_shm_all_to_all(seg, send, recv, count, dt);
  if (count > mpi.max_count)
    return too_many(msg, cap, "MPI_Alltoall", count);
  int rc = mpi.alltoall(send, (int)count, datatype(dt), recv, (int)count, datatype(dt), group);
  return rc == MPI_SUCCESS ? 0 : mpi_fail(msg, cap, "MPI_Alltoall", rc);
}

static int mpi_broadcast(void *group, void *buf, int64_t count, FrtDtype dt, int32_t root, char *msg, size_t cap) {
  size_t es = frt_dtype_size(dt);
  FrtShm *seg = NULL;
  if ((size_t)count * es <= SHM_MOVE_MAX_BYTES && shm_for(group, (size_t)count * es, &seg, msg, cap) != 0)
    return -1;
  if (seg)
    return frt_shm_broadcast(seg, buf, count, dt, root);
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
