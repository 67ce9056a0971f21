/* ranked_main.c — frt_main running a hand-built SBP program, until flowc builds real ones (issue 15).
 *
 * The descriptor is what `flowc build --ranks N` would emit for y = all_reduce_sum((rank + 1) * x) with x
 * and y f32[6], so under `mpirun -np N` every rank's y is x * N(N+1)/2 and rank 0 prints and writes it. The
 * number of ranks comes from $RANKS (default 2) and an optional mesh from $MESH ("2x2"), because the test
 * wants programs compiled for other counts than it starts; $FAIL_RANK makes that rank's collective fail
 * (an axis past the mesh), as a generated kernel whose collective failed does: its run returns 1 + the
 * kernel's index. tests/runtime/mpi.sh runs it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "flowrt.h"

static const int64_t dims[] = {6};
static const FrtTensorDesc x_desc[] = {{"x", FRT_F32, 1, dims}};
static const FrtTensorDesc y_desc[] = {{"y", FRT_F32, 1, dims}};
static const char *const kernels[] = {"node 'scale' (flow.mul)", "node 'sum' (flow.all_reduce)"};

static int run(const void *const *inputs, void *const *outputs, void *workspace, FrtPool *pool) {
  (void)workspace;
  (void)pool;
  const float *x = inputs[0];
  float *y = outputs[0];
  for (int i = 0; i < 6; i++)
    y[i] = x[i] * (float)(frt_coll_rank(-1) + 1);
  const char *fail = getenv("FAIL_RANK");
  int32_t axis = fail && atoi(fail) == frt_coll_rank(-1) ? 7 : -1;
  if (frt_coll_all_reduce(axis, y, 6, FRT_F32, FRT_REDUCE_SUM) != 0)
    return 2; /* 1 + kernel 1 */
  return 0;
}

int main(int argc, char **argv) {
  static int32_t mesh[2];
  const char *ranks = getenv("RANKS"), *m = getenv("MESH");
  int32_t n_axes = 0;
  if (m && sscanf(m, "%dx%d", &mesh[0], &mesh[1]) == 2)
    n_axes = 2;
  FrtModel model = {
      .abi_version = FRT_ABI_VERSION, .name = "ranked", .n_inputs = 1, .n_outputs = 1, .inputs = x_desc,
      .outputs = y_desc, .workspace_size = 0, .run = run, .n_kernels = 2, .kernel_names = kernels,
      .cpu = "generic", .n_ranks = ranks ? atoi(ranks) : 2, .n_mesh_axes = n_axes, .mesh = n_axes ? mesh : NULL,
      .rank = -1, /* every rank's program */
  };
  return frt_main(argc, argv, &model);
}
