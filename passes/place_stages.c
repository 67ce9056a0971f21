/* place_stages.c — pass place_stages: a pipeline placement of the top-level graph (flowc build --ranks N
 * --sbp pipeline). The module's mesh axis 0 holds the stages: stage s runs on the ranks whose coordinate 0 is
 * s (on a 1-D mesh, rank s alone), and each stage is one contiguous range of the graph's ops in order, every
 * op of it annotated flow.placement = the stage's ranks. Pass split_stages later keeps a rank's own ops and
 * puts the transfers between stages in; pass microbatch (between the two) copies the annotation to the
 * copies of each op, so micro-batch m + 1 runs on stage 0 while m runs on stage 1.
 *
 * The cut: every op (constants aside: a rank holds the constants its own ops read) is priced by the SBP cost
 * model (sbp_cost.h, on whole tensors: compute over the GEMM speed or bytes over memory bandwidth, plus the
 * per-kernel cost), and boundary j goes near the point where the running total reaches j/S of the whole:
 * among the positions whose running total lies within a tenth of a stage's share of that point, the one that
 * moves the fewest bytes across (values made before it and read after it; graph inputs reach every rank),
 * so a cut lands between blocks rather than inside a residual connection when that costs little balance;
 * where no position is that near (a few large ops), the nearest. Each stage gets at least one op. Ops that already carry flow.placement (a dump recompiled) keep it.
 */
#include "passes.h"
#include "sbp.h"
#include "sbp_cost.h"

#include <math.h>
#include <string.h>

/* The bytes of values crossing each cut position q (a value made by op d < q and read by an op at q or
 * later; the return reads at n), into cross[0 .. n]. */
static void crossing_bytes(FcOp **ops, int n, const int32_t *pos_of, FcArena *a, int64_t *cross) {
  int64_t *delta = FC_NEW_ARRAY(a, int64_t, (size_t)n + 2);
  for (int d = 0; d < n; d++) {
    FcOp *op = ops[d];
    for (int j = 0; j < op->n_results; j++) {
      FcValue *v = &op->results[j];
      int last = -1;
      for (FcUse *u = v->first_use; u; u = u->next_use) {
        const FcOp *user = u->user;
        while (user->graph->parent) user = user->graph->parent; /* a use inside a region: its loop or if */
        int at = user->kind == FC_OP_RETURN ? n : pos_of[user->id];
        if (at > last) last = at;
      }
      int64_t bytes;
      if (last <= d || !fc_type_nbytes(&v->type, &bytes)) continue;
      delta[d + 1] += bytes;
      delta[last + 1] -= bytes;
    }
  }
  int64_t run = 0;
  for (int q = 0; q <= n; q++) cross[q] = run += delta[q];
}

/* Ops cut[s] .. cut[s + 1] - 1 placed on stage s's ranks. */
static FcStatus place(FcOp **ops, int64_t stages, int64_t all, const int *cut, FcArena *a) {
  int64_t per_stage = all / stages;
  int64_t *ranks = FC_NEW_ARRAY(a, int64_t, (size_t)per_stage + 1);
  for (int64_t s = 0; s < stages; s++) {
    /* Row-major ranks: stage s holds ranks s * per_stage .. + per_stage - 1 (coordinate 0 is the slowest). */
    for (int64_t r = 0; r < per_stage; r++) ranks[r] = s * per_stage + r;
    FcAnnotValue v = FC_AV_I64S(ranks, (int)per_stage);
    for (int i = cut[s]; i < cut[s + 1]; i++) fc_op_set_annot(ops[i], fc_annot_name(FC_ANNOT_PLACEMENT), &v);
  }
  return FC_OK;
}

/* The user's cut (flowc build --stages A,B,...): stage s >= 1 begins at the first op named by the s-th name,
 * in graph order after the previous stage's start. */
static FcStatus given_cuts(char *list, FcOp **ops, int n, int64_t stages, int *cut, FcDiag *diag) {
  int64_t s = 1;
  for (char *name = list, *next; name; name = next, s++) {
    next = strchr(name, ',');
    if (next) *next++ = '\0';
    if (s >= stages)
      return fc_error(diag, FC_ERR_INPUT, "--stages names more than the %lld stage starts of %lld stages ('%s')",
                      (long long)(stages - 1), (long long)stages, name);
    int q = cut[s - 1] + 1;
    while (q < n && strcmp(fc_op_name(ops[q]), name) != 0) q++;
    if (q >= n) {
      for (int i = 0; i < n; i++)
        if (strcmp(fc_op_name(ops[i]), name) == 0)
          return fc_error(diag, FC_ERR_INPUT, "--stages: node '%s' does not come after the start of stage %lld", name,
                          (long long)(s - 1));
      return fc_error(diag, FC_ERR_INPUT, "--stages: no node named '%s'", name);
    }
    cut[s] = q;
  }
  if (s != stages)
    return fc_error(diag, FC_ERR_INPUT, "--stages names %lld stage start%s; %lld stages need %lld", (long long)(s - 1),
                    s == 2 ? "" : "s", (long long)stages, (long long)(stages - 1));
  return FC_OK;
}

FcStatus fc_pass_place_stages(FcModule *m, FcPassContext *pc) {
  FcGraph *g = m->graph;
  if (g->parent) return FC_OK;
  const int64_t *mesh;
  int n_mesh = fc_module_mesh(m, &mesh);
  if (n_mesh == 0)
    return fc_error(pc->diag, FC_ERR_INPUT, "pass place_stages needs the module's mesh (flow.mesh: flowc build --ranks N)");
  int64_t stages = mesh[0], all;
  if (!fc_mesh_group_size(m, -1, &all)) return fc_error(pc->diag, FC_ERR_INPUT, "the mesh has too many ranks");
  if (stages == 1) return FC_OK;
  FcArena *a = &pc->scratch;
  FcSbpPlan p; /* all B over the stage's ranks: each op priced whole */
  FcStatus st = fc_sbp_plan_init_group(&p, m, 1, a, pc->diag);
  if (st != FC_OK) return st;
  FcOp **ops = FC_NEW_ARRAY(a, FcOp *, (size_t)p.n_ops + 1);
  int32_t *index = FC_NEW_ARRAY(a, int32_t, (size_t)p.n_ops + 1), *pos_of = FC_NEW_ARRAY(a, int32_t, (size_t)g->next_op_id + 1);
  int n = 0;
  bool placed = false;
  for (int k = 0; k < p.n_ops; k++) {
    FcOp *op = p.ops[k];
    if (op->kind == FC_OP_CONSTANT || op->kind == FC_OP_RETURN) continue;
    placed |= fc_op_annot(op, fc_annot_name(FC_ANNOT_PLACEMENT)) != NULL;
    pos_of[op->id] = n;
    index[n] = k;
    ops[n++] = op;
  }
  if (placed) return FC_OK; /* a placement given already (a dump recompiled) stands */
  if (n < stages)
    return fc_error(pc->diag, FC_ERR_INPUT, "a pipeline of %lld stages needs at least as many ops; the model has %d",
                    (long long)stages, n);
  /* cut[s]: the first op of stage s (cut[0] = 0, cut[stages] = n) */
  int *cut = FC_NEW_ARRAY(a, int, (size_t)stages + 1);
  cut[stages] = n;
  const FcAnnotValue *given = fc_annots_get(&m->annots, fc_annot_name(FC_ANNOT_STAGE_STARTS));
  if (given && given->kind == FC_AV_STR && given->s) {
    size_t len = strlen(given->s);
    char *list = FC_NEW_ARRAY(a, char, len + 1);
    memcpy(list, given->s, len + 1);
    fc_annots_remove(&m->annots, fc_annot_name(FC_ANNOT_STAGE_STARTS));
    if ((st = given_cuts(list, ops, n, stages, cut, pc->diag)) != FC_OK) return st;
    return place(ops, stages, all, cut, a);
  }
  double *sum = FC_NEW_ARRAY(a, double, (size_t)n + 1);
  for (int i = 0; i < n; i++) {
    const FcOp *op = ops[i];
    FcSbp *need = FC_NEW_ARRAY(a, FcSbp, (size_t)op->n_operands + 1), *out = FC_NEW_ARRAY(a, FcSbp, (size_t)op->n_results + 1);
    for (int j = 0; j < op->n_operands; j++) need[j] = FC_SBP_BCAST;
    for (int j = 0; j < op->n_results; j++) out[j] = FC_SBP_BCAST;
    sum[i + 1] = sum[i] + fc_sbp_op_seconds(&pc->target->sbp, &p, index[i], need, out, NULL);
  }
  int64_t *cross = FC_NEW_ARRAY(a, int64_t, (size_t)n + 1);
  crossing_bytes(ops, n, pos_of, a, cross);
  double share = sum[n] / (double)stages;
  for (int64_t s = 1; s < stages; s++) {
    double target = share * (double)s, slack = share / 10;
    int lo = cut[s - 1] + 1, hi = n - (int)(stages - s); /* every stage keeps an op */
    int best = -1;
    for (int q = lo; q <= hi; q++) {
      if (sum[q] < target - slack || sum[q] > target + slack) continue;
      if (best < 0 || cross[q] <= cross[best]) best = q; /* ties: the later, so an op's element-wise tail stays with it */
    }
    /* No position near the share (an op outweighs a tenth of it): the one closest to it. */
    for (int q = lo; q <= hi && best < 0; q++)
      if (q == hi || fabs(sum[q + 1] - target) > fabs(sum[q] - target)) best = q;
    cut[s] = best;
  }
  return place(ops, stages, all, cut, a);
}
