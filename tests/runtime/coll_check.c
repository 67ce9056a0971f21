/* coll_check.c — libflowrt's collectives (runtime/coll.c over Open MPI) against values computed here.
 *
 *   mpirun -np N coll_check N [AxB...]   every collective, on every mesh axis and on all ranks
 *   coll_check 1                         the same without MPI: every group has one member
 *   mpirun -np N coll_check loop DIR     all_reduce for ever, after writing DIR/pid.<rank> (tests/runtime/faults.sh)
 *   mpirun -np N coll_check hang         rank 1 stops itself before the second all_reduce (the watchdog's test)
 *   mpirun -np N coll_check slow         rank 1 sleeps 2 s before an all_reduce: slow, not hung, so it passes
 *
 * Every rank fills its buffers from a formula of (global rank, index), and computes what each collective
 * must give from the same formula applied to the members of its group, found here from the mesh's
 * row-major strides, independently of coll.c's communicators. Values are small non-negative integers, so
 * every reduction is exact in every dtype and the order of a sum does not matter. Counts 0, 1, odd and
 * larger than a small $FLOWRT_COLL_MPI_MAX_COUNT (which makes the MPI backend split or refuse calls: the
 * checks expect either). Besides the results, every refusal the API promises is checked for its message.
 *
 * Floating-point sums whose order matters (check_order): values of mixed sign and magnitude, so a sum
 * rounds differently in another order. On the shared-memory path ($FLOWRT_COLL_SHM not 0) all_reduce and
 * reduce_scatter must give, bit for bit, the sum in the group's rank order, ((x_0 + x_1) + x_2) + ...,
 * computed here; on either path every member of a group must hold the same bits (a hash of the result,
 * compared through max and min all_reduces of it). Counts 1, 7 (not a multiple of the ranks), 1000 and
 * 300001 (more than a default 1 MiB slot; with $FLOWRT_COLL_SHM_BYTES, which the tests set to 64 so
 * that every count past a few elements runs in chunks, not 300001).
 * Prints `rank K: N checks passed` or one line per failure; exit status 0 only when all passed.
 */
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flowrt.h"

static int me_world, n_world, n_axes = 1, dims[8], checks, failures;
static long long max_count = INT_MAX; /* FLOWRT_COLL_MPI_MAX_COUNT */
static bool shm_path = true;          /* FLOWRT_COLL_SHM is not 0: reductions in rank order */

static void failf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "rank %d: FAIL ", me_world);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  failures++;
}

/* ---- values ------------------------------------------------------------------------------------------ */

static int64_t value(int rank, int64_t i, int salt) { return (rank * 7 + i * 3 + salt) % 11; }

static void put(int32_t dt, void *p, int64_t i, int64_t v) {
  switch (dt) {
  case FRT_F32: ((float *)p)[i] = (float)v; break;
  case FRT_F64: ((double *)p)[i] = (double)v; break;
  case FRT_I8: ((int8_t *)p)[i] = (int8_t)v; break;
  case FRT_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
  case FRT_BOOL: ((uint8_t *)p)[i] = (uint8_t)(v & 1); break;
  case FRT_I16: ((int16_t *)p)[i] = (int16_t)v; break;
  case FRT_F16: case FRT_BF16: case FRT_U16: ((uint16_t *)p)[i] = (uint16_t)(v * 257); break; /* bits */
  case FRT_I32: ((int32_t *)p)[i] = (int32_t)v; break;
  case FRT_I64: ((int64_t *)p)[i] = v * 1000000007LL; break; /* beyond 32 bits */
  }
}

/* What put(dt, p, i, v) stores, as an integer: so expected values go through the same conversions. */
static int64_t stored(int32_t dt, int64_t v) {
  switch (dt) {
  case FRT_BOOL: return v & 1;
  case FRT_F16: case FRT_BF16: case FRT_U16: return (uint16_t)(v * 257);
  case FRT_I64: return v * 1000000007LL;
  }
  return v;
}

static int64_t get(int32_t dt, const void *p, int64_t i) {
  switch (dt) {
  case FRT_F32: return (int64_t)((const float *)p)[i];
  case FRT_F64: return (int64_t)((const double *)p)[i];
  case FRT_I8: return ((const int8_t *)p)[i];
  case FRT_U8: case FRT_BOOL: return ((const uint8_t *)p)[i];
  case FRT_I16: return ((const int16_t *)p)[i];
  case FRT_F16: case FRT_BF16: case FRT_U16: return ((const uint16_t *)p)[i];
  case FRT_I32: return ((const int32_t *)p)[i];
  case FRT_I64: return ((const int64_t *)p)[i];
  }
  return -1;
}

static int64_t combine(int32_t op, int64_t a, int64_t b) {
  return op == FRT_REDUCE_SUM ? a + b : op == FRT_REDUCE_MAX ? (a > b ? a : b) : (a < b ? a : b);
}

/* ---- groups, computed here from the mesh ------------------------------------------------------------ */

static int stride_of(int axis) {
  int s = 1;
  for (int k = n_axes - 1; k > axis; k--)
    s *= dims[k];
  return s;
}
static int coord_of(int rank, int axis) { return rank / stride_of(axis) % dims[axis]; }
static int group_size(int axis) { return axis < 0 ? n_world : dims[axis]; }
static int my_index(int axis) { return axis < 0 ? me_world : coord_of(me_world, axis); }
/* The global rank of the c-th member of this rank's group along axis. */
static int member(int axis, int c) {
  return axis < 0 ? c : me_world + (c - coord_of(me_world, axis)) * stride_of(axis);
}

/* ---- checks ------------------------------------------------------------------------------------------- */

static const char *dt_name(int32_t dt) { return frt_dtype_name((FrtDtype)dt); }
static const char *op_name(int32_t op) { return op == 0 ? "sum" : op == 1 ? "max" : "min"; }

static void expect_ok(int rc, const char *what, int32_t dt, int64_t count, int axis) {
  checks++;
  if (rc != 0)
    failf("%s %s count %lld axis %d returned %d: %s", what, dt_name(dt), (long long)count, axis, rc,
          frt_coll_last_error());
}

/* A refusal: non-zero and a message containing `words`. */
static void expect_refused(int rc, const char *words, const char *what) {
  checks++;
  if (rc == 0)
    failf("%s: accepted, should be refused (\"%s\")", what, words);
  else if (!strstr(frt_coll_last_error(), words))
    failf("%s: message \"%s\" lacks \"%s\"", what, frt_coll_last_error(), words);
}

static void compare(const char *what, int32_t dt, int64_t count, int axis, const void *got, const int64_t *want,
                    int64_t n) {
  checks++;
  for (int64_t i = 0; i < n; i++)
    if (get(dt, got, i) != want[i]) {
      failf("%s %s count %lld axis %d: element %lld is %lld, want %lld", what, dt_name(dt), (long long)count, axis,
            (long long)i, (long long)get(dt, got, i), (long long)want[i]);
      return;
    }
}

static bool reduces(int32_t dt, int32_t op) {
  if (dt == FRT_F16 || dt == FRT_BF16)
    return false;
  return !(dt == FRT_BOOL && op == FRT_REDUCE_SUM);
}

/* The MPI backend splits all_reduce/broadcast/send/recv into calls of max_count and refuses the others. */
static bool split_refused(int64_t count, int axis) { return group_size(axis) > 1 && count > max_count; }

static void check_axis(int axis, int32_t dt, int64_t count, unsigned char *a, unsigned char *b, int64_t *want) {
  int n = group_size(axis), me = my_index(axis);
  /* all_reduce, every op */
  for (int32_t op = 0; op < 3; op++) {
    if (!reduces(dt, op))
      continue;
    for (int64_t i = 0; i < count; i++) {
      put(dt, a, i, value(me_world, i, op));
      int64_t w = stored(dt, value(member(axis, 0), i, op));
      for (int c = 1; c < n; c++)
        w = combine(op, w, stored(dt, value(member(axis, c), i, op)));
      want[i] = w;
    }
    expect_ok(frt_coll_all_reduce(axis, a, count, dt, op), op_name(op), dt, count, axis);
    compare(op == 0 ? "all_reduce sum" : op == 1 ? "all_reduce max" : "all_reduce min", dt, count, axis, a, want,
            count);
  }
  /* all_gather: recv[c][i] = member c's send[i] */
  for (int64_t i = 0; i < count; i++)
    put(dt, a, i, value(me_world, i, 5));
  for (int c = 0; c < n; c++)
    for (int64_t i = 0; i < count; i++)
      want[c * count + i] = stored(dt, value(member(axis, c), i, 5));
  int rc = frt_coll_all_gather(axis, a, b, count, dt);
  if (split_refused(count, axis)) {
    expect_refused(rc, "more than one MPI_Allgather takes", "all_gather over max count");
  } else {
    expect_ok(rc, "all_gather", dt, count, axis);
    compare("all_gather", dt, count, axis, b, want, n * count);
  }
  /* reduce_scatter: recv[i] = op over members m of m's send[me * count + i] */
  for (int32_t op = 0; op < 3; op++) {
    if (!reduces(dt, op))
      continue;
    for (int64_t i = 0; i < n * count; i++)
      put(dt, a, i, value(me_world, i, 10 + op));
    for (int64_t i = 0; i < count; i++) {
      int64_t w = stored(dt, value(member(axis, 0), me * count + i, 10 + op));
      for (int c = 1; c < n; c++)
        w = combine(op, w, stored(dt, value(member(axis, c), me * count + i, 10 + op)));
      want[i] = w;
    }
    rc = frt_coll_reduce_scatter(axis, a, b, count, dt, op);
    if (split_refused(count, axis)) {
      expect_refused(rc, "more than one MPI_Reduce_scatter_block takes", "reduce_scatter over max count");
    } else {
      expect_ok(rc, "reduce_scatter", dt, count, axis);
      compare(op == 0 ? "reduce_scatter sum" : op == 1 ? "reduce_scatter max" : "reduce_scatter min", dt, count, axis,
              b, want, count);
    }
  }
  /* all_to_all: recv[c][i] = member c's send[me][i] */
  for (int64_t i = 0; i < n * count; i++)
    put(dt, a, i, value(me_world, i, 20));
  for (int c = 0; c < n; c++)
    for (int64_t i = 0; i < count; i++)
      want[c * count + i] = stored(dt, value(member(axis, c), me * count + i, 20));
  rc = frt_coll_all_to_all(axis, a, b, count, dt);
  if (split_refused(count, axis)) {
    expect_refused(rc, "more than one MPI_Alltoall takes", "all_to_all over max count");
  } else {
    expect_ok(rc, "all_to_all", dt, count, axis);
    compare("all_to_all", dt, count, axis, b, want, n * count);
  }
  /* broadcast from every root */
  for (int root = 0; root < n; root++) {
    for (int64_t i = 0; i < count; i++) {
      put(dt, a, i, value(me_world, i, 30 + root));
      want[i] = stored(dt, value(member(axis, root), i, 30 + root));
    }
    expect_ok(frt_coll_broadcast(axis, a, count, dt, root), "broadcast", dt, count, axis);
    compare("broadcast", dt, count, axis, a, want, count);
  }
}

/* A ring of send/recv over all ranks: even ranks send first, odd ones receive first, so no rank waits for
 * one that waits for it. */
static void check_send_recv(int32_t dt, int64_t count, unsigned char *a, unsigned char *b, int64_t *want) {
  if (n_world == 1) {
    expect_refused(frt_coll_send(a, count, dt, 0, 1), frt_coll_active() ? "cannot send to itself" : "runs alone",
                   "send to oneself");
    expect_refused(frt_coll_recv(a, count, dt, 0, 1), frt_coll_active() ? "cannot receive from itself" : "runs alone",
                   "recv from oneself");
    return;
  }
  int next = (me_world + 1) % n_world, prev = (me_world + n_world - 1) % n_world;
  for (int64_t i = 0; i < count; i++) {
    put(dt, a, i, value(me_world, i, 40));
    want[i] = stored(dt, value(prev, i, 40));
  }
  int tag = (int)(count % 100) + 1;
  if (me_world % 2 == 0) {
    expect_ok(frt_coll_send(a, count, dt, next, tag), "send", dt, count, -1);
    expect_ok(frt_coll_recv(b, count, dt, prev, tag), "recv", dt, count, -1);
  } else {
    expect_ok(frt_coll_recv(b, count, dt, prev, tag), "recv", dt, count, -1);
    expect_ok(frt_coll_send(a, count, dt, next, tag), "send", dt, count, -1);
  }
  compare("send/recv", dt, count, -1, b, want, count);
}

/* Refusals that are decided before any communication, so every rank meets them alike. */
static void check_refusals(void) {
  float x[4] = {0}, y[4] = {0};
  if (frt_coll_active()) /* without ranks there is no mesh to be past */
    expect_refused(frt_coll_all_reduce(n_axes, x, 1, FRT_F32, FRT_REDUCE_SUM), "does not exist", "axis past the mesh");
  expect_refused(frt_coll_all_reduce(-2, x, 1, FRT_F32, FRT_REDUCE_SUM), "mesh axis -2 does not exist", "axis -2");
  expect_refused(frt_coll_all_reduce(-1, x, -1, FRT_F32, FRT_REDUCE_SUM), "negative count", "negative count");
  expect_refused(frt_coll_all_reduce(-1, x, 1, 99, FRT_REDUCE_SUM), "unknown dtype code 99", "unknown dtype");
  expect_refused(frt_coll_all_reduce(-1, x, 1, FRT_F32, 7), "unknown reduction 7", "unknown op");
  expect_refused(frt_coll_all_reduce(-1, x, 1, FRT_BOOL, FRT_REDUCE_SUM), "sum of booleans", "bool sum");
  expect_refused(frt_coll_reduce_scatter(-1, x, x, 1, FRT_BOOL, FRT_REDUCE_SUM), "sum of booleans", "bool sum rs");
  expect_refused(frt_coll_all_reduce(-1, NULL, 1, FRT_F32, FRT_REDUCE_SUM), "NULL data buffer", "NULL buffer");
  expect_refused(frt_coll_all_gather(-1, x, NULL, 1, FRT_F32), "NULL receive buffer", "NULL receive");
  expect_refused(frt_coll_broadcast(-1, x, 1, FRT_F32, n_world), "is not in the group", "root past the group");
  expect_refused(frt_coll_broadcast(-1, x, 1, FRT_F32, -1), "root -1 is not in the group", "negative root");
  expect_refused(frt_coll_all_reduce(-1, x, INT64_MAX / 2, FRT_F32, FRT_REDUCE_SUM), "overflow", "huge count");
  expect_refused(frt_coll_send(x, 1, FRT_F32, n_world, 0), "does not exist", "send past the ranks");
  expect_refused(frt_coll_recv(x, 1, FRT_F32, -1, 0), "does not exist", "recv from rank -1");
  if (n_world > 1) {
    expect_refused(frt_coll_send(x, 1, FRT_F32, (me_world + 1) % n_world, -3), "negative tag", "negative tag");
    expect_refused(frt_coll_all_reduce(-1, x, 2, FRT_F16, FRT_REDUCE_SUM), "MPI cannot reduce f16", "f16 sum");
    expect_refused(frt_coll_reduce_scatter(-1, x, y, 1, FRT_BF16, FRT_REDUCE_MAX), "MPI cannot reduce bf16",
                   "bf16 max");
    expect_refused(frt_coll_all_to_all(-1, x, x, 1, FRT_F32), "buffers are the same", "all_to_all in place");
    expect_refused(frt_coll_all_gather(-1, x, x, 1, FRT_F32), "buffers are the same", "all_gather in place");
    expect_refused(frt_coll_reduce_scatter(-1, x, x, 1, FRT_F32, FRT_REDUCE_SUM), "buffers are the same",
                   "reduce_scatter in place");
  }
  /* rank and size */
  checks++;
  if (frt_coll_rank(-1) != me_world || frt_coll_size(-1) != n_world)
    failf("rank/size of all ranks: %d/%d, want %d/%d", frt_coll_rank(-1), frt_coll_size(-1), me_world, n_world);
  for (int k = 0; k < n_axes; k++) {
    checks++;
    if (frt_coll_rank(k) != my_index(k) || frt_coll_size(k) != dims[k])
      failf("rank/size of axis %d: %d/%d, want %d/%d", k, frt_coll_rank(k), frt_coll_size(k), my_index(k), dims[k]);
  }
}

/* ---- the order of floating-point sums ---------------------------------------------------------------- */

/* Mixed signs and magnitudes 2^-20..2^20 with 11 significant bits, from a hash of (rank, i): sums of them
 * round, so their order shows in the bits. */
static double fvalue(int rank, int64_t i) {
  uint64_t h = (uint64_t)(rank + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)i * 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  double m = (double)(int64_t)(h % 4095) - 2047.0;
  int e = (int)((h >> 12) % 41) - 20;
  return m * (e < 0 ? 1.0 / (double)(1LL << -e) : (double)(1LL << e));
}

static void fput(int32_t dt, void *p, int64_t i, double v) {
  if (dt == FRT_F32)
    ((float *)p)[i] = (float)v;
  else
    ((double *)p)[i] = v;
}

static uint64_t hash_bytes(const void *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
  return h;
}

/* The same bits on every member of the group of axis: the max and the min of a hash of them agree. */
static void expect_same_bits(const char *what, int32_t dt, int64_t count, int axis, const void *p, size_t bytes) {
  int64_t h = (int64_t)(hash_bytes(p, bytes) >> 1), hi = h, lo = h;
  checks++;
  if (frt_coll_all_reduce(axis, &hi, 1, FRT_I64, FRT_REDUCE_MAX) != 0 ||
      frt_coll_all_reduce(axis, &lo, 1, FRT_I64, FRT_REDUCE_MIN) != 0)
    failf("%s %s count %lld axis %d: comparing across ranks: %s", what, dt_name(dt), (long long)count, axis,
          frt_coll_last_error());
  else if (hi != lo)
    failf("%s %s count %lld axis %d: the ranks of the group hold different bits", what, dt_name(dt), (long long)count,
          axis);
}

/* want[i] (as the dtype's bits) against got[i]. */
static void compare_bits(const char *what, int32_t dt, int64_t count, int axis, const void *got, const void *want) {
  checks++;
  size_t es = dt == FRT_F32 ? 4 : 8;
  for (int64_t i = 0; i < count; i++)
    if (memcmp((const char *)got + (size_t)i * es, (const char *)want + (size_t)i * es, es) != 0) {
      double g = dt == FRT_F32 ? ((const float *)got)[i] : ((const double *)got)[i];
      double w = dt == FRT_F32 ? ((const float *)want)[i] : ((const double *)want)[i];
      failf("%s %s count %lld axis %d: element %lld is %.17g, the sum in rank order is %.17g", what, dt_name(dt),
            (long long)count, axis, (long long)i, g, w);
      return;
    }
}

/* The sum in rank order of fvalue over the group's members at index `at + i`, in dt, into want. */
static void ordered_sum(int32_t dt, int axis, int64_t at, int64_t count, void *want) {
  int n = group_size(axis);
  for (int64_t i = 0; i < count; i++) {
    if (dt == FRT_F32) {
      float w = (float)fvalue(member(axis, 0), at + i);
      for (int c = 1; c < n; c++)
        w += (float)fvalue(member(axis, c), at + i);
      ((float *)want)[i] = w;
    } else {
      double w = fvalue(member(axis, 0), at + i);
      for (int c = 1; c < n; c++)
        w += fvalue(member(axis, c), at + i);
      ((double *)want)[i] = w;
    }
  }
}

static int check_order(void) {
  static const int64_t counts[] = {1, 7, 1000, 300001};
  static const int32_t dtypes[] = {FRT_F32, FRT_F64};
  int64_t most = 300001 * (int64_t)n_world;
  unsigned char *a = malloc((size_t)most * 8), *b = malloc((size_t)most * 8), *want = malloc((size_t)most * 8);
  if (!a || !b || !want) {
    fprintf(stderr, "rank %d: out of memory\n", me_world);
    free(a);
    free(b);
    free(want);
    return -1;
  }
  /* With slots of a few bytes ($FLOWRT_COLL_SHM_BYTES), 7 and 1000 are past the segment already, and
   * 300001 would take tens of thousands of chunks. */
  const char *slot = getenv("FLOWRT_COLL_SHM_BYTES");
  size_t n_counts = slot && *slot ? 3 : 4;
  for (size_t d = 0; d < 2; d++)
    for (size_t c = 0; c < n_counts; c++)
      for (int axis = -1; axis < n_axes; axis++) {
        int32_t dt = dtypes[d];
        int64_t count = counts[c];
        size_t es = dt == FRT_F32 ? 4 : 8;
        int n = group_size(axis), me = my_index(axis);
        /* all_reduce: the same bits everywhere, and (shared memory) the sum in rank order */
        for (int64_t i = 0; i < count; i++)
          fput(dt, a, i, fvalue(me_world, i));
        expect_ok(frt_coll_all_reduce(axis, a, count, dt, FRT_REDUCE_SUM), "all_reduce (order)", dt, count, axis);
        expect_same_bits("all_reduce sum", dt, count, axis, a, (size_t)count * es);
        if (shm_path) {
          ordered_sum(dt, axis, 0, count, want);
          compare_bits("all_reduce sum", dt, count, axis, a, want);
        }
        /* reduce_scatter: this rank's section, summed in rank order */
        for (int64_t i = 0; i < n * count; i++)
          fput(dt, a, i, fvalue(me_world, i));
        int rc = frt_coll_reduce_scatter(axis, a, b, count, dt, FRT_REDUCE_SUM);
        if (split_refused(count, axis)) {
          expect_refused(rc, "more than one MPI_Reduce_scatter_block takes", "reduce_scatter over max count");
          continue;
        }
        expect_ok(rc, "reduce_scatter (order)", dt, count, axis);
        if (shm_path || n == 1) {
          ordered_sum(dt, axis, (int64_t)me * count, count, want);
          compare_bits("reduce_scatter sum", dt, count, axis, b, want);
        }
      }
  free(a);
  free(b);
  free(want);
  return 0;
}

static int run_checks(void) {
  static const int32_t dtypes[] = {FRT_F32, FRT_I32, FRT_I64, FRT_U8, FRT_F64, FRT_I8, FRT_I16, FRT_F16, FRT_BF16,
                                   FRT_BOOL};
  static const int64_t counts[] = {0, 1, 7, 1000};
  int64_t most = 1000 * (int64_t)n_world;
  unsigned char *a = malloc((size_t)most * 8), *b = malloc((size_t)most * 8);
  int64_t *want = malloc((size_t)most * sizeof *want);
  if (!a || !b || !want) {
    fprintf(stderr, "rank %d: out of memory\n", me_world);
    return 1;
  }
  check_refusals();
  if (check_order() != 0)
    return 1;
  for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
      for (int axis = -1; axis < n_axes; axis++)
        check_axis(axis, dtypes[d], counts[c], a, b, want);
      check_send_recv(dtypes[d], counts[c], a, b, want);
    }
  free(a);
  free(b);
  free(want);
  if (!failures)
    printf("rank %d: %d checks passed (%d ranks, %d mesh axes, %.3f s in collectives)\n", me_world, checks, n_world,
           n_axes, frt_coll_seconds());
  return failures != 0;
}

/* ---- fault modes ---------------------------------------------------------------------------------------- */

static int loop(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/pid.%d", dir, me_world);
  FILE *f = fopen(path, "w");
  if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) != 0) {
    fprintf(stderr, "rank %d: cannot write %s\n", me_world, path);
    return 1;
  }
  float x[256];
  for (long it = 0;; it++) {
    for (int i = 0; i < 256; i++)
      x[i] = 1;
    if (frt_coll_all_reduce(-1, x, 256, FRT_F32, FRT_REDUCE_SUM) != 0) {
      fprintf(stderr, "rank %d: error: %s\n", me_world, frt_coll_last_error());
      frt_coll_abort(1);
      return 1;
    }
  }
}

static int hang(void) {
  /* One collective first, so that the one that hangs waits where a running program would: on the shared
   * segment made by the first (or in MPI, with FLOWRT_COLL_SHM=0). */
  float x = 1;
  if (frt_coll_all_reduce(-1, &x, 1, FRT_F32, FRT_REDUCE_SUM) != 0) {
    fprintf(stderr, "rank %d: error: %s\n", me_world, frt_coll_last_error());
    return 1;
  }
  if (me_world == 1)
    raise(SIGSTOP); /* hung, not dead: mpirun sees nothing */
  if (frt_coll_all_reduce(-1, &x, 1, FRT_F32, FRT_REDUCE_SUM) != 0)
    fprintf(stderr, "rank %d: error: %s\n", me_world, frt_coll_last_error());
  return 1; /* the watchdog should have ended this rank */
}

static int slow(void) {
  if (me_world == 1)
    sleep(2);
  float x = 1;
  if (frt_coll_all_reduce(-1, &x, 1, FRT_F32, FRT_REDUCE_SUM) != 0) {
    fprintf(stderr, "rank %d: error: %s\n", me_world, frt_coll_last_error());
    return 1;
  }
  if (x != (float)n_world) {
    fprintf(stderr, "rank %d: FAIL all_reduce after a wait: %g, want %d\n", me_world, x, n_world);
    return 1;
  }
  printf("rank %d: waited for a slow rank\n", me_world);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: coll_check N [AxB...] | loop DIR | hang | slow\n");
    return 2;
  }
  const char *mode = argv[1];
  bool fault = strcmp(mode, "loop") == 0 || strcmp(mode, "hang") == 0 || strcmp(mode, "slow") == 0;
  const char *s = getenv("FLOWRT_COLL_MPI_MAX_COUNT");
  if (s && *s)
    max_count = atoll(s);
  s = getenv("FLOWRT_COLL_SHM");
  shm_path = !(s && strcmp(s, "0") == 0);
  int32_t ranks = fault ? 2 : atoi(mode), mesh[8];
  n_axes = 1;
  dims[0] = ranks;
  int32_t mesh_axes = 0;
  if (!fault && argc > 2) {
    for (char *p = argv[2]; *p && mesh_axes < 8; p += *p == 'x') {
      mesh[mesh_axes++] = (int32_t)strtol(p, &p, 10);
      if (*p && *p != 'x')
        break;
    }
    n_axes = mesh_axes;
    for (int k = 0; k < n_axes; k++)
      dims[k] = mesh[k];
  }
  FrtError err = {0};
  if (frt_coll_init(ranks, mesh_axes, mesh_axes ? mesh : NULL, &err) != FRT_OK) {
    fprintf(stderr, "coll_check: error: %s\n", err.msg);
    frt_coll_finalize();
    return 1;
  }
  me_world = frt_coll_rank(-1);
  n_world = frt_coll_size(-1);
  int rc = strcmp(mode, "loop") == 0   ? loop(argc > 2 ? argv[2] : ".")
           : strcmp(mode, "hang") == 0 ? hang()
           : strcmp(mode, "slow") == 0 ? slow()
                                       : run_checks();
  frt_coll_finalize();
  return rc;
}
