/* coll.c — the collectives of an SBP program (flowc build --ranks N), above a backend table.
 *
 * The generated code names a group by a mesh axis; this file turns the axis into a group handle of the
 * backend (FrtCollBackend in flowrt_internal.h), checks every argument so each backend sees only sane calls,
 * and turns a backend's failure into one thread-local line that frt_coll_last_error returns. The groups are
 * made once, in frt_coll_init: for mesh axis k the ranks that share every coordinate but k, split from the
 * world with color = the rank with coordinate k zeroed and key = coordinate k, so a group's order is the
 * coordinate along its axis. A group of one member (no ranks at all, or a mesh axis of size 1) never reaches
 * the backend: its collectives are copies.
 *
 * A blocked collective cannot tell a slow peer from a hung one, and a peer that hangs (stopped, or looping
 * outside any collective) is not something mpirun notices. So each call records when it entered; a watchdog
 * thread, started with the backend, ends the process when one call has waited $FLOWRT_COLL_TIMEOUT seconds
 * (default 60), printing the rank and the collective. The process exits with _exit(1) rather than calling
 * the backend's abort: MPI runs serialized, so the watchdog may not call it while the model's thread waits
 * inside it, and mpirun ends the job's other ranks when one exits without finalising. A peer that dies is
 * noticed by mpirun itself (Open MPI 4.1 here: about a second after a kill -9, naming the rank, exit 137).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flowrt_internal.h"

#define MAX_AXES 8
#define DEFAULT_TIMEOUT_S 60

static struct {
  const FrtCollBackend *be; /* NULL: not started (one process) */
  int32_t rank, size;
  int32_t n_axes;            /* >= 1 while started: a 1-D mesh has one axis of n_ranks */
  int32_t dims[MAX_AXES], coord[MAX_AXES];
  void *world;
  void *group[MAX_AXES];     /* per axis: the backend's group, NULL for an axis of size 1 */
  double seconds;            /* spent in collectives since init */
  /* The watchdog. */
  long timeout_s;            /* 0: none */
  bool watching;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool stop;
} coll = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The collective now waiting (its name, a string literal) and since when (milliseconds of frt_now_seconds, 0:
 * none), shared with the watchdog. */
static _Atomic(const char *) wait_what;
static atomic_int wait_axis;
static atomic_llong wait_since_ms;

static _Thread_local char last_error[512];

const char *frt_coll_last_error(void) { return last_error; }

void frt_coll_clear_error(void) { last_error[0] = 0; }

static int set_error(const char *fmt, ...) FRT_PRINTF(1, 2);

static int set_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  frt_one_line(last_error);
  return -1;
}

int frt_coll_active(void) { return coll.be != NULL; }

double frt_coll_seconds(void) { return coll.seconds; }

int32_t frt_coll_local_size(void) {
  int32_t n = coll.be && coll.be->local_size ? coll.be->local_size() : 1;
  return n > 0 ? n : 1;
}

int32_t frt_coll_launch_rank(void) { return frt_coll_mpi.launch_rank(); }

int32_t frt_coll_rank(int32_t axis) {
  if (!coll.be)
    return 0;
  if (axis == -1)
    return coll.rank;
  return axis >= 0 && axis < coll.n_axes ? coll.coord[axis] : 0;
}

int32_t frt_coll_size(int32_t axis) {
  if (!coll.be)
    return 1;
  if (axis == -1)
    return coll.size;
  return axis >= 0 && axis < coll.n_axes ? coll.dims[axis] : 1;
}

/* ---- the watchdog -------------------------------------------------------------------------------------- */

static long long now_ms(void) { return (long long)(frt_now_seconds() * 1e3) + 1; /* never 0 */ }

static void *watchdog(void *arg) {
  (void)arg;
  pthread_mutex_lock(&coll.mu);
  while (!coll.stop) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 1;
    pthread_cond_timedwait(&coll.cv, &coll.mu, &until);
    long long since = atomic_load(&wait_since_ms);
    if (coll.stop || !since || now_ms() - since < coll.timeout_s * 1000)
      continue;
    const char *what = atomic_load(&wait_what);
    int axis = atomic_load(&wait_axis);
    char group[48];
    if (axis == -1)
      snprintf(group, sizeof group, "all ranks");
    else if (axis == -2)
      snprintf(group, sizeof group, "a peer");
    else
      snprintf(group, sizeof group, "the group of mesh axis %d", axis);
    fprintf(stderr,
            "rank %d: error: %s has waited %ld s for %s (FLOWRT_COLL_TIMEOUT): a rank has hung or died; "
            "ending this one\n",
            (int)coll.rank, what ? what : "a collective", coll.timeout_s, group);
    fflush(stderr);
    fflush(stdout);
    _exit(1);
  }
  pthread_mutex_unlock(&coll.mu);
  return NULL;
}

/* FLOWRT_COLL_TIMEOUT: whole seconds, 0 for none. */
static FrtStatus read_timeout(long *out, FrtError *err) {
  const char *s = getenv("FLOWRT_COLL_TIMEOUT");
  *out = DEFAULT_TIMEOUT_S;
  if (!s || !*s)
    return FRT_OK;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < 0 || v > 86400 * 365)
    return frt_errorf(err, FRT_ERR_INPUT, "FLOWRT_COLL_TIMEOUT wants whole seconds (0: none), got '%s'", s);
  *out = v;
  return FRT_OK;
}

static FrtStatus start_watchdog(FrtError *err) {
  if (coll.timeout_s == 0)
    return FRT_OK;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  int rc = pthread_cond_init(&coll.cv, &ca);
  pthread_condattr_destroy(&ca);
  if (rc != 0)
    return frt_errorf(err, FRT_ERR_RESOURCE, "cannot start the collectives' watchdog: %s", strerror(rc));
  coll.stop = false;
  if ((rc = pthread_create(&coll.thread, NULL, watchdog, NULL)) != 0) {
    pthread_cond_destroy(&coll.cv);
    return frt_errorf(err, FRT_ERR_RESOURCE, "cannot start the collectives' watchdog: %s", strerror(rc));
  }
  coll.watching = true;
  return FRT_OK;
}

static void stop_watchdog(void) {
  if (!coll.watching)
    return;
  pthread_mutex_lock(&coll.mu);
  coll.stop = true;
  pthread_cond_signal(&coll.cv);
  pthread_mutex_unlock(&coll.mu);
  pthread_join(coll.thread, NULL);
  pthread_cond_destroy(&coll.cv);
  coll.watching = false;
}

/* ---- init and finalize --------------------------------------------------------------------------------- */

FrtStatus frt_coll_init(int32_t n_ranks, int32_t n_mesh_axes, const int32_t *mesh, FrtError *err) {
  return frt_coll_init_with(&frt_coll_mpi, n_ranks, n_mesh_axes, mesh, err);
}

/* A refused process count (frt_coll_init_with) leaves the backend running when deferred, so that the program's
 * rank 0 prints the refusal before any rank finalizes: MPI_Finalize waits for every rank, and mpirun ends the
 * whole job (rank 0 with it, its line unwritten) as soon as one rank exits non-zero. */
static bool defer_refusal;
static const FrtCollBackend *refused_be;

void frt_coll_defer_refusal(bool defer) { defer_refusal = defer; }

void frt_coll_end_refused(void) {
  if (refused_be)
    refused_be->finalize();
  refused_be = NULL;
}

FrtStatus frt_coll_init_with(const FrtCollBackend *be, int32_t n_ranks, int32_t n_mesh_axes, const int32_t *mesh,
                             FrtError *err) {
  if (coll.be)
    return frt_errorf(err, FRT_ERR_INPUT, "the collectives are already started");
  if (n_ranks < 0 || n_mesh_axes < 0 || n_mesh_axes > MAX_AXES || (n_mesh_axes > 0 && !mesh))
    return frt_errorf(err, FRT_ERR_INPUT, "malformed model description: %d ranks on a mesh of %d axes",
                      (int)n_ranks, (int)n_mesh_axes);
  int32_t dims[MAX_AXES], n_axes = n_mesh_axes ? n_mesh_axes : 1;
  int64_t product = 1;
  for (int32_t k = 0; k < n_axes; k++) {
    dims[k] = n_mesh_axes ? mesh[k] : n_ranks;
    if (dims[k] < 1 || (product *= dims[k]) > INT32_MAX)
      return frt_errorf(err, FRT_ERR_INPUT, "malformed model description: mesh axis %d has size %d", (int)k,
                        (int)dims[k]);
  }
  if (n_ranks <= 1 && n_mesh_axes == 0)
    return FRT_OK; /* one process: nothing to start */
  if (product != n_ranks)
    return frt_errorf(err, FRT_ERR_INPUT, "malformed model description: a mesh of %lld ranks for %d ranks",
                      (long long)product, (int)n_ranks);
  if (n_ranks <= 1)
    return FRT_OK;
  long timeout;
  if (read_timeout(&timeout, err) != FRT_OK)
    return err ? err->status : FRT_ERR_INPUT;

  char msg[480] = "";
  int32_t rank = 0, size = 0;
  void *world = NULL;
  if (be->init(n_ranks, &rank, &size, &world, msg, sizeof msg) != 0)
    return frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s", msg);
  /* Every rank sees the same size, so every rank refuses alike and none waits for another. */
  if (size != n_ranks) {
    if (defer_refusal)
      refused_be = be; /* ended by frt_coll_end_refused once rank 0 has said why */
    else
      be->finalize();
    return frt_errorf(err, FRT_ERR_INPUT,
                      "this program was compiled for %d ranks; it was started with %d: run it with mpirun -np %d",
                      (int)n_ranks, (int)size, (int)n_ranks);
  }
  memset(coll.group, 0, sizeof coll.group);
  coll.rank = rank;
  coll.size = size;
  coll.n_axes = n_axes;
  coll.world = world;
  int32_t stride = 1;
  for (int32_t k = n_axes - 1; k >= 0; k--) {
    coll.dims[k] = dims[k];
    coll.coord[k] = rank / stride % dims[k];
    stride *= dims[k];
  }
  stride = 1;
  for (int32_t k = n_axes - 1; k >= 0; k--) {
    if (dims[k] == size) {
      coll.group[k] = world;
    } else if (dims[k] > 1 &&
               be->split(world, rank - coll.coord[k] * stride, coll.coord[k], &coll.group[k], msg, sizeof msg) != 0) {
      be->finalize();
      return frt_errorf(err, FRT_ERR_RESOURCE, "cannot make the group of mesh axis %d: %s", (int)k, msg);
    }
    stride *= dims[k];
  }
  coll.be = be;
  coll.seconds = 0;
  coll.timeout_s = timeout;
  if (start_watchdog(err) != FRT_OK) {
    coll.be = NULL;
    be->finalize();
    return err ? err->status : FRT_ERR_RESOURCE;
  }
  return FRT_OK;
}

void frt_coll_finalize(void) {
  if (!coll.be)
    return;
  stop_watchdog();
  const FrtCollBackend *be = coll.be;
  coll.be = NULL;
  be->finalize();
}

void frt_coll_abort(int status) {
  if (coll.be)
    coll.be->abort(status);
}

/* ---- the collectives ------------------------------------------------------------------------------------ */

/* More ranks on this machine than CPUs (mpirun --oversubscribe), at the model's first collective: bind the
 * rank to one CPU of those it may use, its rank modulo their count, unless the launcher bound it already
 * (one CPU allowed) or FLOWRT_BIND=0. Unbound, the scheduler now and then stacks three crowded ranks on one
 * core while the other idles, and a collective then waits for all three in turn; bound, the ranks of a core
 * take turns at each collective (coll_shm.c's waiters yield to them): 4 ranks on 2 cores ran 10-30% faster
 * and far steadier (2026-12-03, the bench MLP and transformer, data and tensor). Not at start, nor for
 * frt_main's own collectives: a pipeline's stages only send and receive, and ran 30% slower bound (the MLP
 * on 4 stages), the stages busy at once being stuck on one core. */
static bool host_call; /* frt_main's own collectives on the model's path (a backend without host ones) */

static void bind_if_crowded(void) {
  static bool done;
  if (done)
    return;
  done = true;
  const char *env = getenv("FLOWRT_BIND");
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if ((env && strcmp(env, "0") == 0) || cpus < 1 || frt_coll_local_size() <= cpus ||
      sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2)
    return;
  int want = (int)(coll.rank % CPU_COUNT(&allowed));
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, &allowed) || want-- > 0)
      continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    sched_setaffinity(0, sizeof one, &one); /* a refusal leaves the rank unbound, as before */
    return;
  }
}

/* A group by axis; *g NULL: a group of this process alone. */
static int group_of(const char *what, int32_t axis, void **g, int32_t *size, int32_t *rank) {
  if (axis < -1 || (coll.be && axis >= coll.n_axes))
    return coll.be ? set_error("%s: mesh axis %d does not exist (the mesh has %d)", what, (int)axis, (int)coll.n_axes)
                   : set_error("%s: mesh axis %d does not exist", what, (int)axis);
  *g = NULL;
  *size = 1;
  *rank = 0;
  if (coll.be && axis == -1) {
    *g = coll.world;
    *size = coll.size;
    *rank = coll.rank;
  } else if (coll.be) {
    *g = coll.group[axis];
    *size = coll.dims[axis];
    *rank = coll.coord[axis];
  }
  if (*size == 1)
    *g = NULL;
  if (*g && !host_call)
    bind_if_crowded();
  return 0;
}

/* Bytes of count elements of dtype times `times`; fails with a message naming the collective. */
static int check_buffer(const char *what, int64_t count, int32_t dtype, int64_t times, size_t *bytes) {
  size_t es = frt_dtype_size((FrtDtype)dtype);
  if (!es)
    return set_error("%s: unknown dtype code %d", what, (int)dtype);
  if (count < 0)
    return set_error("%s: negative count %lld", what, (long long)count);
  if ((uint64_t)count > SIZE_MAX || frt_mul_overflows((size_t)count, es, bytes) ||
      frt_mul_overflows(*bytes, (size_t)times, bytes) || *bytes > (size_t)INT64_MAX)
    return set_error("%s: %lld elements of %s overflow the address space", what, (long long)count,
                     frt_dtype_name((FrtDtype)dtype));
  return 0;
}

static int check_op(const char *what, int32_t dtype, int32_t op) {
  if (op != FRT_REDUCE_SUM && op != FRT_REDUCE_MAX && op != FRT_REDUCE_MIN)
    return set_error("%s: unknown reduction %d", what, (int)op);
  if (op == FRT_REDUCE_SUM && dtype == FRT_BOOL)
    return set_error("%s: a sum of booleans (i1) is not defined; use max (or) or min (and)", what);
  return 0;
}

static double enter(const char *what, int32_t axis) {
  atomic_store(&wait_what, what);
  atomic_store(&wait_axis, axis);
  atomic_store(&wait_since_ms, now_ms());
  return frt_now_seconds();
}

/* Ends the watch of a collective; prefixes a backend's message with the collective and the group. */
static int leave(double t0, int rc, const char *what, int32_t axis, const char *msg) {
  atomic_store(&wait_since_ms, 0);
  coll.seconds += frt_now_seconds() - t0;
  if (rc == 0)
    return 0;
  if (axis >= 0)
    return set_error("%s over mesh axis %d: %s", what, (int)axis, msg);
  return set_error("%s: %s", what, msg);
}

#define NEED(ptr, name)                                                                                          \
  do {                                                                                                           \
    if (bytes && !(ptr))                                                                                         \
      return set_error("%s: NULL %s buffer", what, name);                                                        \
  } while (0)

int frt_coll_all_reduce(int32_t axis, void *buf, int64_t count, int32_t dtype, int32_t op) {
  const char *what = "all_reduce";
  void *g = NULL;
  int32_t n = 1, me = 0;
  size_t bytes;
  if (group_of(what, axis, &g, &n, &me) || check_buffer(what, count, dtype, 1, &bytes) || check_op(what, dtype, op))
    return -1;
  NEED(buf, "data");
  if (!g || count == 0)
    return 0;
  char msg[400];
  double t0 = enter(what, axis);
  int rc = coll.be->all_reduce(g, buf, count, (FrtDtype)dtype, (FrtReduceOp)op, msg, sizeof msg);
  return leave(t0, rc, what, axis, msg);
}

/* The part all_gather, reduce_scatter and all_to_all share after their checks: -1 (a message recorded) or 0
 * when nothing is left to do (a group of one copies its send buffer, the same bytes as the result;
 * nothing to send), 1 when the backend must run. */
static int exchange_prologue(const char *what, void *g, const void *send, void *recv, int64_t count, size_t bytes) {
  NEED(send, "send");
  NEED(recv, "receive");
  if (!g) {
    char msg[400];
    if (bytes && send != recv && coll.be && coll.be->copy) {
      if (coll.be->copy(recv, send, bytes, msg, sizeof msg) != 0)
        return set_error("%s: %s", what, msg);
    } else if (bytes && send != recv) {
      memmove(recv, send, bytes);
    }
    return 0;
  }
  if (count == 0)
    return 0;
  if (send == recv)
    return set_error("%s: the send and receive buffers are the same", what);
  return 1;
}

int frt_coll_all_gather(int32_t axis, const void *send, void *recv, int64_t count, int32_t dtype) {
  const char *what = "all_gather";
  void *g = NULL;
  int32_t n = 1, me = 0;
  size_t bytes, all;
  if (group_of(what, axis, &g, &n, &me) || check_buffer(what, count, dtype, 1, &bytes) ||
      check_buffer(what, count, dtype, n, &all))
    return -1;
  int go = exchange_prologue(what, g, send, recv, count, bytes);
  if (go <= 0)
    return go;
  char msg[400];
  double t0 = enter(what, axis);
  int rc = coll.be->all_gather(g, send, recv, count, (FrtDtype)dtype, msg, sizeof msg);
  return leave(t0, rc, what, axis, msg);
}

int frt_coll_reduce_scatter(int32_t axis, const void *send, void *recv, int64_t count, int32_t dtype, int32_t op) {
  const char *what = "reduce_scatter";
  void *g = NULL;
  int32_t n = 1, me = 0;
  size_t bytes, all;
  if (group_of(what, axis, &g, &n, &me) || check_buffer(what, count, dtype, 1, &bytes) ||
      check_buffer(what, count, dtype, n, &all) || check_op(what, dtype, op))
    return -1;
  int go = exchange_prologue(what, g, send, recv, count, bytes);
  if (go <= 0)
    return go;
  char msg[400];
  double t0 = enter(what, axis);
  int rc = coll.be->reduce_scatter(g, send, recv, count, (FrtDtype)dtype, (FrtReduceOp)op, msg, sizeof msg);
  return leave(t0, rc, what, axis, msg);
}

int frt_coll_all_to_all(int32_t axis, const void *send, void *recv, int64_t count, int32_t dtype) {
  const char *what = "all_to_all";
  void *g = NULL;
  int32_t n = 1, me = 0;
  size_t bytes, all;
  if (group_of(what, axis, &g, &n, &me) || check_buffer(what, count, dtype, 1, &bytes) ||
      check_buffer(what, count, dtype, n, &all))
    return -1;
  int go = exchange_prologue(what, g, send, recv, count, bytes);
  if (go <= 0)
    return go;
  char msg[400];
  double t0 = enter(what, axis);
  int rc = coll.be->all_to_all(g, send, recv, count, (FrtDtype)dtype, msg, sizeof msg);
  return leave(t0, rc, what, axis, msg);
}

int frt_coll_broadcast(int32_t axis, void *buf, int64_t count, int32_t dtype, int32_t root) {
  const char *what = "broadcast";
  void *g = NULL;
  int32_t n = 1, me = 0;
  size_t bytes;
  if (group_of(what, axis, &g, &n, &me) || check_buffer(what, count, dtype, 1, &bytes))
    return -1;
  if (root < 0 || root >= n)
    return set_error("%s: root %d is not in the group of %d", what, (int)root, (int)n);
  NEED(buf, "data");
  if (!g || count == 0)
    return 0;
  char msg[400];
  double t0 = enter(what, axis);
  int rc = coll.be->broadcast(g, buf, count, (FrtDtype)dtype, root, msg, sizeof msg);
  return leave(t0, rc, what, axis, msg);
}

/* ---- host memory among the ranks (frt_main) --------------------------------------------------------------- */

int frt_coll_host_all_reduce(void *buf, int64_t count, int32_t dtype, int32_t op) {
  if (!coll.be || !coll.be->host) {
    host_call = true;
    int rc = frt_coll_all_reduce(-1, buf, count, dtype, op);
    host_call = false;
    return rc;
  }
  const char *what = "all_reduce (host)";
  size_t bytes;
  if (check_buffer(what, count, dtype, 1, &bytes) || check_op(what, dtype, op))
    return -1;
  NEED(buf, "data");
  if (coll.size == 1 || count == 0)
    return 0;
  char msg[400];
  double t0 = enter(what, -1);
  int rc = coll.be->host->all_reduce(coll.be->host_world(), buf, count, (FrtDtype)dtype, (FrtReduceOp)op, msg,
                                     sizeof msg);
  return leave(t0, rc, what, -1, msg);
}

int frt_coll_host_broadcast(void *buf, int64_t count, int32_t dtype, int32_t root) {
  if (!coll.be || !coll.be->host) {
    host_call = true;
    int rc = frt_coll_broadcast(-1, buf, count, dtype, root);
    host_call = false;
    return rc;
  }
  const char *what = "broadcast (host)";
  size_t bytes;
  if (check_buffer(what, count, dtype, 1, &bytes))
    return -1;
  if (root < 0 || root >= coll.size)
    return set_error("%s: root %d is not in the group of %d", what, (int)root, (int)coll.size);
  NEED(buf, "data");
  if (coll.size == 1 || count == 0)
    return 0;
  char msg[400];
  double t0 = enter(what, -1);
  int rc = coll.be->host->broadcast(coll.be->host_world(), buf, count, (FrtDtype)dtype, root, msg, sizeof msg);
  return leave(t0, rc, what, -1, msg);
}

/* send and recv: peers are global ranks; a message to oneself would wait for ever (both calls block). */
static int check_peer(const char *what, int32_t peer, int32_t tag) {
  if (!coll.be)
    return set_error("%s: rank %d does not exist: this process runs alone (no mpirun)", what, (int)peer);
  if (peer < 0 || peer >= coll.size)
    return set_error("%s: rank %d does not exist (%d ranks)", what, (int)peer, (int)coll.size);
  if (peer == coll.rank)
    return set_error("%s: rank %d cannot %s itself", what, (int)peer, what[0] == 's' ? "send to" : "receive from");
  if (tag < 0)
    return set_error("%s: negative tag %d", what, (int)tag);
  return 0;
}

int frt_coll_send(const void *buf, int64_t count, int32_t dtype, int32_t peer, int32_t tag) {
  const char *what = "send";
  size_t bytes;
  if (check_buffer(what, count, dtype, 1, &bytes) || check_peer(what, peer, tag))
    return -1;
  NEED(buf, "data");
  char msg[400];
  double t0 = enter(what, -2);
  int rc = coll.be->send(coll.world, buf, count, (FrtDtype)dtype, peer, tag, msg, sizeof msg);
  return leave(t0, rc, what, -1, msg);
}

int frt_coll_recv(void *buf, int64_t count, int32_t dtype, int32_t peer, int32_t tag) {
  const char *what = "recv";
  size_t bytes;
  if (check_buffer(what, count, dtype, 1, &bytes) || check_peer(what, peer, tag))
    return -1;
  NEED(buf, "data");
  char msg[400];
  double t0 = enter(what, -2);
  int rc = coll.be->recv(coll.world, buf, count, (FrtDtype)dtype, peer, tag, msg, sizeof msg);
  return leave(t0, rc, what, -1, msg);
}
