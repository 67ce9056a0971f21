/* mpi_link.c — the SBP cost model's link constants (codegen/target.c FcSbpCosts): times all_reduce, all_gather and
 * all_to_all of float buffers over all ranks, 16 B..16 MiB, best of 5 batches, as a program built by flowc runs them
 * (libflowrt's frt_coll_*: on one machine its shared segment, runtime/coll_shm.c) and as plain MPI_Allreduce,
 * MPI_Allgather and MPI_Alltoall; prints "kind ranks bytes us", kind allreduce|allgather|alltoall for libflowrt's
 * and mpi_allreduce|mpi_allgather|mpi_alltoall for MPI's (bench/sbp_calibrate.py reads the former); then
 * "crowd ranks bytes work_us iteration_us" rows, ranks that compute between all_reduces (crowd_rows below). 
 *     mpicc -O2 bench/mpi_link.c -Iruntime build/runtime/libflowrt.a -lm -lpthread -o /tmp/mpi_link &&
 *     mpirun --allow-run-as-root --oversubscribe -np 2 /tmp/mpi_link
 * (FLOWRT_COLL_SHM=0 puts libflowrt's rows on MPI too.)
 * Measured here, MPI (2 ranks): all_reduce 16 MiB 3.34 ms (ring factor 1: 5.0 GB/s), 16 B 0.36 us; all_gather 16 MiB
 * 1.32 ms; 4 ranks on 2 cores: all_reduce 16 MiB 12.7 ms, 16 B 2.4 us. libflowrt on 2 ranks with its shared segment
 * against MPI in the same runs (a machine at load average 10, so both slow): all_reduce 256 KiB 31-35 us against
 * 45-53, 16 KiB 4.4 against 9-11, 16 B 0.55 against 0.40; all_gather and all_to_all the same as MPI's above 32 KiB
 * (they use MPI there), a little faster below. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "flowrt.h"

/* One call of collective `kind` (0 all_reduce, 1 all_gather, 2 all_to_all) of n floats in all, on MPI or
 * libflowrt. libflowrt's all_reduce is in place: on zeros, so its values stay put. */
static int once(int flowrt, int kind, float *a, float *b, float *z, size_t n, int g) {
  if (!flowrt) {
    if (kind == 0) return MPI_Allreduce(a, b, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (kind == 1) return MPI_Allgather(a, (int)(n / g), MPI_FLOAT, b, (int)(n / g), MPI_FLOAT, MPI_COMM_WORLD);
    return MPI_Alltoall(a, (int)(n / g / g), MPI_FLOAT, b, (int)(n / g / g), MPI_FLOAT, MPI_COMM_WORLD);
  }
  if (kind == 0) return frt_coll_all_reduce(-1, z, (int64_t)n, FRT_F32, FRT_REDUCE_SUM);
  if (kind == 1) return frt_coll_all_gather(-1, a, b, (int64_t)(n / g), FRT_F32);
  return frt_coll_all_to_all(-1, a, b, (int64_t)(n / g / g), FRT_F32);
}

/* About `iters` steps of dependent float arithmetic on a few cache lines: compute that touches no memory. */
static volatile float work_sink;
static void work(long iters, float *v) {
  float s = 0;
  for (long i = 0; i < iters; i++) {
    s += v[i & 63] * 1.0001f;
    v[i & 63] = s * 0.5f;
  }
  work_sink = s;
}

static double median5(double *t) {
  for (int i = 0; i < 5; i++)
    for (int j = i + 1; j < 5; j++)
      if (t[j] < t[i]) { double x = t[i]; t[i] = t[j]; t[j] = x; }
  return t[2];
}

/* Ranks that compute between collectives, as a program's do: per work size, each rank's work timed alone
 * (one rank at a time, the others waiting in a barrier), then a loop of work + libflowrt's all_reduce of
 * 16 B and of 128 KiB on every rank at once; prints "crowd ranks bytes work_us iteration_us" (medians of 5).
 * On more ranks than cores this is what the cost model's crowding must account for: the iteration against
 * work × ranks / cores and the collective's own time (bench/sbp_calibrate.py, crowd_sync_us). */
static void crowd_rows(int r, int g, float *z) {
  static const long iters[] = {100000, 400000, 1600000};
  static const size_t counts[] = {4, 32768};
  float v[64];
  for (int i = 0; i < 64; i++) v[i] = 1.0f;
  for (size_t w = 0; w < sizeof iters / sizeof iters[0]; w++) {
    double alone[5], mine = 0;
    for (int t = 0; t < 5; t++) {
      for (int m = 0; m < g; m++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (m == r) {
          double t0 = MPI_Wtime();
          work(iters[w], v);
          alone[t] = MPI_Wtime() - t0;
        }
      }
    }
    mine = median5(alone);
    double slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
      double it[5];
      int reps = 40;
      for (int t = 0; t < 5; t++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < reps; i++) {
          work(iters[w], v);
          if (frt_coll_all_reduce(-1, z, (int64_t)counts[c], FRT_F32, FRT_REDUCE_SUM) != 0) {
            fprintf(stderr, "mpi_link: %s\n", frt_coll_last_error());
            MPI_Abort(MPI_COMM_WORLD, 1);
          }
        }
        it[t] = (MPI_Wtime() - t0) / reps;
      }
      double m = median5(it);
      if (r == 0) printf("crowd %d %zu %.3f %.3f\n", g, counts[c] * 4, slowest * 1e6, m * 1e6);
    }
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, g;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &g);
  FrtError err = {0};
  if (frt_coll_init(g, 0, NULL, &err) != FRT_OK) { /* MPI is up already: libflowrt uses it */
    fprintf(stderr, "mpi_link: %s\n", err.msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  size_t maxn = 4u << 20;
  float *a = malloc(maxn * 4), *b = malloc(maxn * 4), *z = calloc(maxn, 4);
  if (!a || !b || !z) MPI_Abort(MPI_COMM_WORLD, 1);
  for (size_t i = 0; i < maxn; i++) a[i] = 1.0f;
  for (size_t n = 4; n <= maxn; n *= 4) {
    for (int flowrt = 1; flowrt >= 0; flowrt--) {
      for (int kind = 0; kind < 3; kind++) {
        int reps = n < 65536 ? 200 : 20;
        double best = 1e9;
        for (int t = 0; t < 5; t++) {
          MPI_Barrier(MPI_COMM_WORLD);
          double t0 = MPI_Wtime();
          for (int i = 0; i < reps; i++)
            if (once(flowrt, kind, a, b, z, n, g) != 0) {
              fprintf(stderr, "mpi_link: %s\n", flowrt ? frt_coll_last_error() : "an MPI collective failed");
              MPI_Abort(MPI_COMM_WORLD, 1);
            }
          double dt = (MPI_Wtime() - t0) / reps;
          MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          if (dt < best) best = dt;
        }
        static const char *kinds[] = {"allreduce", "allgather", "alltoall"};
        if (r == 0) printf("%s%s %d %zu %.3f\n", flowrt ? "" : "mpi_", kinds[kind], g, n * 4, best * 1e6);
      }
    }
  }
  crowd_rows(r, g, z);
  frt_coll_finalize();
  MPI_Finalize();
  return 0;
}
