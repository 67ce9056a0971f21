/* mpi_link.c — the SBP cost model's link constants (codegen/target.c FcSbpCosts): times MPI_Allreduce, MPI_Allgather
 * and MPI_Alltoall of float buffers over all ranks, 16 B..16 MiB, best of 5 batches; prints "kind ranks bytes us".
 *     mpicc -O2 bench/mpi_link.c -o /tmp/mpi_link && mpirun --allow-run-as-root --oversubscribe -np 2 /tmp/mpi_link
 * Measured here (2 ranks): all_reduce 16 MiB 3.34 ms (ring factor 1: 5.0 GB/s), 16 B 0.36 us; all_gather 16 MiB
 * 1.32 ms; 4 ranks on 2 cores: all_reduce 16 MiB 12.7 ms, 16 B 2.4 us. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, g;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &g);
  size_t maxn = 4u << 20;
  float *a = malloc(maxn * 4), *b = malloc(maxn * 4);
  for (size_t i = 0; i < maxn; i++) a[i] = 1.0f;
  for (size_t n = 4; n <= maxn; n *= 4) {
    for (int kind = 0; kind < 3; kind++) {
      int reps = n < 65536 ? 200 : 20;
      double best = 1e9;
      for (int t = 0; t < 5; t++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < reps; i++) {
          if (kind == 0) MPI_Allreduce(a, b, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
          else if (kind == 1) MPI_Allgather(a, (int)(n / g), MPI_FLOAT, b, (int)(n / g), MPI_FLOAT, MPI_COMM_WORLD);
          else MPI_Alltoall(a, (int)(n / g / g), MPI_FLOAT, b, (int)(n / g / g), MPI_FLOAT, MPI_COMM_WORLD);
        }
        double dt = (MPI_Wtime() - t0) / reps;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (dt < best) best = dt;
      }
      if (r == 0) printf("%s %d %zu %.3f\n", kind == 0 ? "allreduce" : kind == 1 ? "allgather" : "alltoall", g, n * 4, best * 1e6);
    }
  }
  MPI_Finalize();
  return 0;
}
