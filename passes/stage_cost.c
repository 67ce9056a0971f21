/* stage_cost.c — the predicted time of a pipeline placement (place_stages.c, after microbatch.c), for flowc
 * info: a replay of the schedule the ranks will run.
 *
 * Each rank runs its ops in graph order, so the replay walks the graph once keeping each stage's clock: an op
 * starts when its stage is free and its operands are there, and takes the SBP cost model's time for it on
 * whole tensors (fc_sbp_op_seconds; on a 2-D mesh the ops are a rank's local ones and a boxing op within a
 * stage is its collective over the link, fc_sbp_box_seconds). A value read on another stage moves at its producer's place in the order,
 * as split_stages.c puts the send and recv there: a blocking transfer, which starts when both the sender and
 * the receiver have reached it and holds both for the link's latency plus bytes over its bandwidth. Graph
 * outputs go to every other stage. Ranks beyond the cores they share slow down in proportion (as in
 * sbp_cost.c), but only as many as compute at once: a stage waiting for its inputs leaves its core to the
 * others, so the schedule is replayed once uncrowded, and again slowed by its busy ranks on average over
 * the cores. The run's time is the last clock. Beside it: each stage's busy time, ops,
 * the weights it holds (the constants its ops read) and the bytes it sends, and the same ops on one rank.
 */
#include "sbp_cost.h"

#include <string.h>

static const FcOp *top_op(const FcOp *op) {
  while (op->graph->parent) op = op->graph->parent;
  return op;
}

/* Each op's stage, as split_stages.c places it: from its flow.placement (first rank / ranks per stage), else
 * its first placed consumer's, else its operand 0's producer's, else 0. */
static void stages_of(const FcGraph *g, int64_t per_stage, int n, int *stage, bool *known) {
  fc_graph_for_each_op(g, op) {
    const FcAnnotValue *v = fc_op_annot(op, fc_annot_name(FC_ANNOT_PLACEMENT));
    if (!v || v->kind != FC_AV_DENSE || v->ints.n < 1) continue;
    int s = (int)(v->ints.v[0] / per_stage);
    stage[op->id] = s >= 0 && s < n ? s : 0;
    known[op->id] = true;
  }
  for (const FcOp *op = g->last; op; op = op->prev)
    for (int j = 0; j < op->n_results && !known[op->id]; j++)
      for (const FcUse *u = op->results[j].first_use; u && !known[op->id]; u = u->next_use) {
        const FcOp *user = top_op(u->user);
        if (user->kind != FC_OP_RETURN && known[user->id]) stage[op->id] = stage[user->id], known[op->id] = true;
      }
  fc_graph_for_each_op(g, op) {
    const FcValue *x = op->n_operands ? op->operands[0].value : NULL;
    if (!known[op->id] && x && x->def) stage[op->id] = stage[x->def->id];
    known[op->id] = true;
  }
}

/* A boxing op of a stage split over the mesh's other axes (pipeline,data|tensor): the collective over its
 * group by the link model; -1 for any other op. */
static double collective_seconds(const FcSbpCosts *k, const FcModule *m, const FcOp *op) {
  int64_t g, d = fc_op_attr_int(op, FC_ATTR_DIM, 0);
  if (!fc_mesh_group_size(m, fc_op_attr_int(op, FC_ATTR_MESH_AXIS, -2), &g)) return -1;
  const FcType *x = &op->operands[0].value->type;
  switch (op->kind) {
  case FC_OP_ALL_REDUCE: return fc_sbp_box_seconds(k, g, x, FC_SBP_PARTIAL(FC_SBP_SUM), FC_SBP_BCAST, NULL);
  case FC_OP_REDUCE_SCATTER: return fc_sbp_box_seconds(k, g, x, FC_SBP_PARTIAL(FC_SBP_SUM), FC_SBP_SPLIT(d), NULL);
  case FC_OP_ALL_GATHER: return fc_sbp_box_seconds(k, g, &op->results[0].type, FC_SBP_SPLIT(d), FC_SBP_BCAST, NULL);
  case FC_OP_ALL_TO_ALL:
    return fc_sbp_box_seconds(k, g, x, FC_SBP_SPLIT(fc_op_attr_int(op, FC_ATTR_CONCAT_DIM, 0)),
                              FC_SBP_SPLIT(fc_op_attr_int(op, FC_ATTR_SPLIT_DIM, 0)), NULL);
  default: return -1;
  }
}

/* One replay of the schedule with every op and transfer slowed by `crowded`; fills e. */
static void replay(const FcSbpCosts *k, FcModule *m, FcSbpPlan *p, const int *stage_by_id, int n, double crowded,
                   FcArena *a, FcStageEstimate *e) {
  e->n_stages = n;
  e->total_s = e->one_rank_s = 0;
  /* fresh arrays each replay (the arena hands out zeroed memory) */
  e->stage = FC_NEW_ARRAY(a, FcStageCost, (size_t)n);
  double *clock = FC_NEW_ARRAY(a, double, (size_t)n), *ready = FC_NEW_ARRAY(a, double, (size_t)p->n_ids + 1);
  bool **reads = FC_NEW_ARRAY(a, bool *, (size_t)n); /* reads[s][constant op id] */
  for (int s = 0; s < n; s++) reads[s] = FC_NEW_ARRAY(a, bool, (size_t)m->graph->next_op_id + 1);
  for (int i = 0; i < p->n_ops; i++) {
    const FcOp *op = p->ops[i];
    if (op->kind == FC_OP_CONSTANT) continue;
    bool ret = op->kind == FC_OP_RETURN;
    int s = ret ? 0 : stage_by_id[op->id];
    const FcValue *x0 = op->n_operands ? op->operands[0].value : NULL;
    if (op->kind == FC_OP_LOCAL_SLICE && x0 && x0->def && x0->def->kind == FC_OP_CONSTANT) {
      /* A slice of a weight: fold_rank makes it the rank's chunk, which is what the stage holds. */
      int64_t bytes = 0;
      if (fc_type_nbytes(&op->results[0].type, &bytes)) e->stage[s].weight_bytes += bytes;
      continue;
    }
    FcSbp *need = FC_NEW_ARRAY(a, FcSbp, (size_t)op->n_operands + 1), *out = FC_NEW_ARRAY(a, FcSbp, (size_t)op->n_results + 1);
    double start = ret ? 0 : clock[s];
    for (int j = 0; j < op->n_operands; j++) {
      need[j] = FC_SBP_BCAST;
      const FcValue *v = op->operands[j].value;
      if (!v || !v->def) continue;
      if (v->def->kind == FC_OP_CONSTANT) {
        if (!ret && !reads[s][v->def->id] && op->kind != FC_OP_LOCAL_SLICE) {
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
    double t = collective_seconds(k, m, op);
    if (t < 0) t = fc_sbp_op_seconds(k, p, i, need, out, NULL);
    t *= crowded; /* ranks beyond the cores take turns, as sbp_cost.c prices them */
    clock[s] = start + t;
    e->stage[s].busy_s += t;
    e->one_rank_s += t / crowded;
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
          const FcOp *user = top_op(u->user);
          used = user->kind == FC_OP_RETURN || stage_by_id[user->id] == q;
        }
        if (!used) continue;
        double x = (k->link_latency_us * 1e-6 + (double)bytes / (k->link_gbps * 1e9)) * crowded;
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
  int *stage_by_id = FC_NEW_ARRAY(a, int, (size_t)m->graph->next_op_id + 1);
  stages_of(m->graph, per_stage, n, stage_by_id, FC_NEW_ARRAY(a, bool, (size_t)m->graph->next_op_id + 1));
  /* Ranks beyond the cores slow down only while they compute at once, and a stage waiting for its inputs
   * computes nothing: the uncrowded replay's busy ranks on average (each stage's busy time times its ranks,
   * over the run) are what share the cores; the replay again slowed by that many over the cores. */
  replay(k, m, &p, stage_by_id, n, 1.0, a, e);
  double busy = 0;
  for (int s = 0; s < n; s++) busy += e->stage[s].busy_s * (double)per_stage;
  double at_once = e->total_s > 0 ? busy / e->total_s : 1;
  if (k->cores > 0 && at_once > k->cores)
    replay(k, m, &p, stage_by_id, n, at_once / k->cores * (k->crowd_extra >= 1 ? k->crowd_extra : 1), a, e);
  return FC_OK;
}
