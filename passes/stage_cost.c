/* stage_cost.c — the predicted time of a pipeline placement (place_stages.c, after microbatch.c), for flowc
 * info: a replay of the schedule the ranks will run.
 *
 * Each rank runs its ops in graph order, so the replay walks the graph once keeping each stage's clock: an op
 * starts when its stage is free and its operands are there, and takes the SBP cost model's time for it on
 * whole tensors (fc_sbp_op_seconds). A value read on another stage moves at its producer's place in the order,
 * as split_stages.c puts the send and recv there: a blocking transfer, which starts when both the sender and
 * the receiver have reached it and holds both for the link's latency plus bytes over its bandwidth. Graph
 * outputs go to every other stage. The run's time is the last clock. Beside it: each stage's busy time, ops,
 * the weights it holds (the constants its ops read) and the bytes it sends, and the same ops on one rank.
 */
#include "sbp_cost.h"

#include <string.h>

/* The stage of an op from its flow.placement (stage = first rank / ranks per stage), else from its operand
 * 0's producer, else 0. */
static int stage_of(const FcOp *op, const int *stage_by_id, int64_t per_stage) {
  const FcAnnotValue *v = fc_op_annot(op, fc_annot_name(FC_ANNOT_PLACEMENT));
  if (v && v->kind == FC_AV_DENSE && v->ints.n > 0) return (int)(v->ints.v[0] / per_stage);
  const FcValue *x = op->n_operands ? op->operands[0].value : NULL;
  return x && x->def ? stage_by_id[x->def->id] : 0;
}

FcStatus fc_stage_estimate(const FcSbpCosts *k, FcModule *m, FcArena *a, FcStageEstimate *e, FcDiag *diag) {
  memset(e, 0, sizeof *e);
  const int64_t *mesh;
  int64_t all;
  if (fc_module_mesh(m, &mesh) == 0 || !fc_mesh_group_size(m, -1, &all))
    return fc_error(diag, FC_ERR_INPUT, "a pipeline estimate needs the module's mesh");
  FcStatus st = fc_sbp_costs_check(k, diag);
  if (st != FC_OK) return st;
  int n = (int)mesh[0];
  int64_t per_stage = all / mesh[0];
  FcSbpPlan p;
  if ((st = fc_sbp_plan_init_group(&p, m, 1, a, diag)) != FC_OK) return st;
  e->n_stages = n;
  e->stage = FC_NEW_ARRAY(a, FcStageCost, (size_t)n);
  double *clock = FC_NEW_ARRAY(a, double, (size_t)n), *ready = FC_NEW_ARRAY(a, double, (size_t)p.n_ids + 1);
  int *stage_by_id = FC_NEW_ARRAY(a, int, (size_t)m->graph->next_op_id + 1);
  bool **reads = FC_NEW_ARRAY(a, bool *, (size_t)n); /* reads[s][constant op id] */
  for (int s = 0; s < n; s++) reads[s] = FC_NEW_ARRAY(a, bool, (size_t)m->graph->next_op_id + 1);
  for (int i = 0; i < p.n_ops; i++) {
    const FcOp *op = p.ops[i];
    if (op->kind == FC_OP_CONSTANT) continue;
    bool ret = op->kind == FC_OP_RETURN;
    int s = ret ? 0 : stage_of(op, stage_by_id, per_stage);
    if (s < 0 || s >= n) s = 0;
    stage_by_id[op->id] = s;
    FcSbp *need = FC_NEW_ARRAY(a, FcSbp, (size_t)op->n_operands + 1), *out = FC_NEW_ARRAY(a, FcSbp, (size_t)op->n_results + 1);
    double start = ret ? 0 : clock[s];
    for (int j = 0; j < op->n_operands; j++) {
      need[j] = FC_SBP_BCAST;
      const FcValue *v = op->operands[j].value;
      if (!v || !v->def) continue;
      if (v->def->kind == FC_OP_CONSTANT) {
        if (!ret && !reads[s][v->def->id]) {
          int64_t bytes = 0;
          reads[s][v->def->id] = true;
          if (fc_type_nbytes(&v->type, &bytes)) e->stage[s].weight_bytes += bytes;
        }
        continue;
      }
      if (!ret && ready[v->id] > start) start = ready[v->id];
    }
    if (ret) continue;
    for (int j = 0; j < op->n_results; j++) out[j] = FC_SBP_BCAST;
    double t = fc_sbp_op_seconds(k, &p, i, need, out, NULL);
    clock[s] = start + t;
    e->stage[s].busy_s += t;
    e->one_rank_s += t;
    if (e->stage[s].n_ops++ == 0) e->stage[s].first = op;
    e->stage[s].last = op;
    /* Transfers at the op's place: to each other stage that reads a result (outputs: every stage). */
    for (int j = 0; j < op->n_results; j++) {
      const FcValue *v = &op->results[j];
      int64_t bytes = 0;
      fc_type_nbytes(&v->type, &bytes);
      for (int q = 0; q < n; q++) {
        if (q == s) continue;
        bool used = false;
        for (const FcUse *u = v->first_use; u && !used; u = u->next_use) {
          const FcOp *user = u->user;
          while (user->graph->parent) user = user->graph->parent;
          used = user->kind == FC_OP_RETURN || stage_of(user, stage_by_id, per_stage) == q;
        }
        if (!used) continue;
        double x = k->link_latency_us * 1e-6 + (double)bytes / (k->link_gbps * 1e9);
        double at = (clock[s] > clock[q] ? clock[s] : clock[q]) + x;
        clock[s] = clock[q] = at;
        e->stage[s].sent_bytes += bytes;
        e->stage[s].sends++;
      }
      ready[v->id] = clock[s]; /* a reader on stage q waits for q's clock, which the transfer set */
    }
  }
  for (int s = 0; s < n; s++)
    if (clock[s] > e->total_s) e->total_s = clock[s];
  return FC_OK;
}
