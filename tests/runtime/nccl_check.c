/* nccl_check.c — starts the NCCL collectives backend (runtime/coll_nccl.c) on the ranks mpirun started and
 * says how it went, one line a rank: "rank K: NCCL started" or "rank K: NCCL failed: <message>" (exit 3).
 * tests/runtime/mpi.sh's nccl mode runs it where the machine has no GPU (the refusals) or has them. */
#include <stdio.h>
#include <stdlib.h>

#include "flowrt_internal.h"

int main(int argc, char **argv) {
  int32_t n = argc > 1 ? (int32_t)atoi(argv[1]) : 2;
  FrtError err = {0};
  /* MPI is kept through a failed start and finalised only after this rank's line is out: MPI_Finalize waits
   * for every rank, and mpirun ends the job at the first non-zero exit (as frt_main does it). */
  frt_coll_nccl_keep_mpi(true);
  FrtStatus st = frt_coll_init_with(&frt_coll_nccl, n, 0, NULL, &err);
  frt_coll_nccl_keep_mpi(false);
  int rank = (int)frt_coll_launch_rank();
  if (st != FRT_OK) {
    printf("rank %d: NCCL failed: %s\n", rank, err.msg);
    fflush(stdout);
    frt_coll_mpi.finalize();
    return 3;
  }
  printf("rank %d: NCCL started on %d ranks\n", rank, (int)frt_coll_size(-1));
  frt_coll_finalize();
  return 0;
}
