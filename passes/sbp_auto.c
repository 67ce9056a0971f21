/* sbp_auto.c — pass sbp_auto (flowc build --ranks N --sbp auto): chooses every op's signatures for the least
 * predicted time of the whole program under the cost model (sbp_cost.h), then applies the plan (sbp.c).
 *
 * The search is a min-sum dynamic programme over the op order, exact on chains and trees: each value has a
 * few states (the signatures its op's candidates give it: B, S(d) of the dims that divide, P), and each
 * state the least cost of producing the value that way, counted from the graph inputs: the op's own time
 * under the candidate plus, per operand, the cheapest of the operand's states and the boxing from it to what
 * the candidate takes (fc_sbp_candidates, the rules probed). A value with several consumers (a join of the
 * DAG: a residual, the three projections of attention) hands each of them 1/fanout of its cost, so shared
 * work is not counted once per path. Backtracking from the return (which takes B) picks each op's candidate
 * in reverse order; where consumers disagree on a value, the last consumer's wish stands and an earlier
 * consumer's candidate is chosen against it (what it would box from). That is the heuristic on joins. A
 * local search then tries every candidate of every op against the whole plan's cost (the change of that op's
 * time and of the boxing of its operands and results: fc_sbp_value_seconds), keeping improvements, for a
 * few sweeps. Finally the plans of data and tensor (and on a mesh of several axes the per-axis data x tensor
 * plan, sbp_axes) are priced by the same model and the cheapest plan that fits the memory cap is taken, so
 * auto is never predicted slower than any of them. The search itself is flat (one group of all ranks).
 */
#include "sbp_cost.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct State {
  FcSbp sig;
  double cost;
} State;

typedef struct Search {
  const FcSbpCosts *k;
  FcSbpPlan *p;
  FcArena *a;
  State **states; /* by value id */
  int *n_states;
  int *n_choices; /* by op index */
  FcSbpChoice **choices;
  double **cost;    /* [op][choice]: its DP cost */
  int **arg;        /* [op][choice * n_operands + i]: the operand's state taken */
  double **contrib; /* [op][choice * n_operands + i]: that operand's share of cost */
} Search;

static int fanout(const FcValue *v) {
  int n = fc_value_num_uses(v);
  return n > 0 ? n : 1;
}

static int add_state(Search *s, const FcValue *v, FcSbp sig, double cost, int cap) {
  State *st = s->states[v->id];
  int n = s->n_states[v->id];
  for (int i = 0; i < n; i++)
    if (fc_sbp_equal(st[i].sig, sig)) {
      if (cost < st[i].cost) st[i].cost = cost;
      return i;
    }
  if (n >= cap) return -1;
  st[n] = (State){sig, cost};
  s->n_states[v->id] = n + 1;
  return n;
}

static const State *find_state(const Search *s, const FcValue *v, FcSbp sig) {
  for (int i = 0; i < s->n_states[v->id]; i++)
    if (fc_sbp_equal(s->states[v->id][i].sig, sig)) return &s->states[v->id][i];
  return NULL;
}

static void forward(Search *s) {
  FcSbpPlan *p = s->p;
  FcGraph *g = p->g;
  for (int i = 0; i < g->n_inputs; i++) {
    FcValue *x = g->inputs[i];
    s->states[x->id] = FC_NEW_ARRAY(s->a, State, (size_t)x->type.rank + 1);
    add_state(s, x, FC_SBP_BCAST, 0, x->type.rank + 1);
    for (int d = 0; d < x->type.rank && fc_value_has_uses(x); d++) {
      int64_t n = x->type.dims[d];
      if (n < p->group || n % p->group) continue;
      add_state(s, x, FC_SBP_SPLIT(d), fc_sbp_box_seconds(s->k, p->group, &x->type, FC_SBP_BCAST, FC_SBP_SPLIT(d), NULL),
                x->type.rank + 1);
    }
  }
  for (int k = 0; k < p->n_ops; k++) {
    FcOp *op = p->ops[k];
    if (op->kind == FC_OP_RETURN) continue;
    if (op->kind == FC_OP_CONSTANT) {
      s->states[op->results[0].id] = FC_NEW_ARRAY(s->a, State, 1);
      add_state(s, &op->results[0], FC_SBP_BCAST, 0, 1);
      continue;
    }
    int nc = s->n_choices[k] = fc_sbp_candidates(p, k, s->a, &s->choices[k]);
    int n_in = op->n_operands;
    s->cost[k] = FC_NEW_ARRAY(s->a, double, (size_t)nc);
    s->arg[k] = FC_NEW_ARRAY(s->a, int, (size_t)nc * (size_t)n_in + 1);
    s->contrib[k] = FC_NEW_ARRAY(s->a, double, (size_t)nc * (size_t)n_in + 1);
    for (int j = 0; j < op->n_results; j++) s->states[op->results[j].id] = FC_NEW_ARRAY(s->a, State, (size_t)nc);
    for (int c = 0; c < nc; c++) {
      const FcSbpChoice *ch = &s->choices[k][c];
      double cost = fc_sbp_op_seconds(s->k, p, k, ch->need, ch->out, NULL);
      for (int i = 0; i < n_in; i++) {
        const FcValue *v = op->operands[i].value;
        int best = -1;
        double best_cost = HUGE_VAL;
        for (int t = 0; v && t < s->n_states[v->id]; t++) {
          const State *st = &s->states[v->id][t];
          double c2 = st->cost / fanout(v) + fc_sbp_box_seconds(s->k, p->group, &v->type, st->sig, ch->need[i], NULL);
          if (c2 < best_cost) best = t, best_cost = c2;
        }
        s->arg[k][c * n_in + i] = best;
        s->contrib[k][c * n_in + i] = v ? best_cost : 0;
        if (v) cost += best_cost;
      }
      s->cost[k][c] = cost;
      for (int j = 0; j < op->n_results; j++) add_state(s, &op->results[j], ch->out[j], cost, nc);
    }
  }
}

/* Reverse: each op's candidate against the signatures its consumers already asked for. */
static void backtrack(Search *s, int *chosen) {
  FcSbpPlan *p = s->p;
  FcGraph *g = p->g;
  FcSbp *desired = FC_NEW_ARRAY(s->a, FcSbp, (size_t)p->n_ids + 1);
  bool *set = FC_NEW_ARRAY(s->a, bool, (size_t)p->n_ids + 1);
  memset(set, 0, (size_t)p->n_ids + 1);
  for (int k = p->n_ops - 1; k >= 0; k--) {
    FcOp *op = p->ops[k];
    chosen[k] = -1;
    if (op->kind == FC_OP_CONSTANT) continue;
    if (op->kind == FC_OP_RETURN) {
      for (int i = 0; i < op->n_operands; i++) {
        const FcValue *v = op->operands[i].value;
        if (!v || set[v->id]) continue;
        double best = HUGE_VAL;
        for (int t = 0; t < s->n_states[v->id]; t++) {
          const State *st = &s->states[v->id][t];
          double c = st->cost + fc_sbp_box_seconds(s->k, p->group, &v->type, st->sig, FC_SBP_BCAST, NULL);
          if (c < best) best = c, desired[v->id] = st->sig, set[v->id] = true;
        }
      }
      continue;
    }
    int n_in = op->n_operands, best = 0;
    double best_score = HUGE_VAL;
    for (int c = 0; c < s->n_choices[k]; c++) {
      const FcSbpChoice *ch = &s->choices[k][c];
      double score = s->cost[k][c];
      for (int i = 0; i < n_in; i++) {
        const FcValue *v = op->operands[i].value;
        if (!v || !set[v->id]) continue;
        const State *st = find_state(s, v, desired[v->id]);
        score += (st ? st->cost / fanout(v) : 0) +
                 fc_sbp_box_seconds(s->k, p->group, &v->type, desired[v->id], ch->need[i], NULL) -
                 s->contrib[k][c * n_in + i];
      }
      for (int j = 0; j < op->n_results; j++) {
        const FcValue *r = &op->results[j];
        if (set[r->id]) score += fc_sbp_box_seconds(s->k, p->group, &r->type, ch->out[j], desired[r->id], NULL);
      }
      if (score < best_score) best_score = score, best = c;
    }
    chosen[k] = best;
    for (int i = 0; i < n_in; i++) {
      const FcValue *v = op->operands[i].value;
      int t = s->arg[k][best * n_in + i];
      if (!v || set[v->id] || t < 0) continue;
      desired[v->id] = s->states[v->id][t].sig;
      set[v->id] = true;
    }
  }
  for (int i = 0; i < g->n_inputs; i++) {
    const FcValue *x = g->inputs[i];
    p->input[i] = set[x->id] && desired[x->id].kind == FC_SBP_S ? desired[x->id] : FC_SBP_BCAST;
  }
}

/* Op k's share of the plan's cost under choice ch: its time and the boxing of its operands and results. */
static double local_cost(const Search *s, int k, const FcSbpChoice *ch) {
  const FcSbpPlan *p = s->p;
  const FcOp *op = p->ops[k];
  double c = fc_sbp_op_seconds(s->k, p, k, ch->need, ch->out, NULL);
  for (int i = 0; i < op->n_operands; i++) {
    const FcValue *v = op->operands[i].value;
    bool again = false;
    for (int i2 = 0; i2 < i && v; i2++) again |= op->operands[i2].value == v;
    if (!v || again) continue;
    c += fc_sbp_value_seconds(s->k, p, v, fc_sbp_plan_sig(p, v), k, ch->need);
  }
  for (int j = 0; j < op->n_results; j++) c += fc_sbp_value_seconds(s->k, p, &op->results[j], ch->out[j], -1, NULL);
  return c;
}

static void local_search(Search *s) {
  FcSbpPlan *p = s->p;
  int sweeps = p->n_ops > 4000 ? 1 : 4;
  for (int sweep = 0; sweep < sweeps; sweep++) {
    bool improved = false;
    for (int k = 0; k < p->n_ops; k++) {
      FcOp *op = p->ops[k];
      if (op->kind == FC_OP_CONSTANT || op->kind == FC_OP_RETURN) continue;
      FcSbpChoice cur = {p->need[k], p->out[k]};
      double base = local_cost(s, k, &cur);
      int best = -1;
      double best_cost = base;
      for (int c = 0; c < s->n_choices[k]; c++) {
        double lc = local_cost(s, k, &s->choices[k][c]);
        if (lc < best_cost - 1e-12 * (1 + fabs(best_cost))) best = c, best_cost = lc;
      }
      if (best < 0) continue;
      memcpy(p->need[k], s->choices[k][best].need, (size_t)op->n_operands * sizeof *p->need[k]);
      memcpy(p->out[k], s->choices[k][best].out, (size_t)op->n_results * sizeof *p->out[k]);
      improved = true;
    }
    if (!improved) break;
  }
}

static void copy_plan(FcSbpPlan *dst, const FcSbpPlan *src) {
  for (int k = 0; k < src->n_ops; k++) {
    memcpy(dst->need[k], src->need[k], (size_t)src->ops[k]->n_operands * sizeof *dst->need[k]);
    memcpy(dst->out[k], src->out[k], (size_t)src->ops[k]->n_results * sizeof *dst->out[k]);
  }
  memcpy(dst->input, src->input, (size_t)src->g->n_inputs * sizeof *dst->input);
}

FcStatus fc_sbp_auto_plan(FcModule *m, const FcSbpCosts *k, FcArena *a, FcSbpPlan *plan, FcSbpChoiceReport *r,
                          FcDiag *diag) {
  FcSbpPlan data, tensor;
  FcStatus st = fc_sbp_costs_check(k, diag);
  if (st == FC_OK) st = fc_sbp_plan_init(plan, m, a, diag);
  if (st == FC_OK) st = fc_sbp_plan_init(&data, m, a, diag);
  if (st == FC_OK) st = fc_sbp_plan_init(&tensor, m, a, diag);
  if (st == FC_OK) st = fc_sbp_plan_forward(&data, &(FcSbpStrategy){FC_SBP_DATA}, NULL, a, diag);
  if (st == FC_OK) st = fc_sbp_plan_forward(&tensor, &(FcSbpStrategy){FC_SBP_TENSOR}, NULL, a, diag);
  if (st != FC_OK) return st;
  Search s = {.k = k, .p = plan, .a = a};
  s.states = FC_NEW_ARRAY(a, State *, (size_t)plan->n_ids + 1);
  s.n_states = FC_NEW_ARRAY(a, int, (size_t)plan->n_ids + 1);
  memset(s.n_states, 0, ((size_t)plan->n_ids + 1) * sizeof *s.n_states);
  size_t n = (size_t)plan->n_ops + 1;
  s.n_choices = FC_NEW_ARRAY(a, int, n);
  s.choices = FC_NEW_ARRAY(a, FcSbpChoice *, n);
  s.cost = FC_NEW_ARRAY(a, double *, n);
  s.arg = FC_NEW_ARRAY(a, int *, n);
  s.contrib = FC_NEW_ARRAY(a, double *, n);
  int *chosen = FC_NEW_ARRAY(a, int, n);
  forward(&s);
  backtrack(&s, chosen);
  for (int i = 0; i < plan->n_ops; i++) {
    if (chosen[i] < 0) continue;
    const FcSbpChoice *ch = &s.choices[i][chosen[i]];
    memcpy(plan->need[i], ch->need, (size_t)plan->ops[i]->n_operands * sizeof *ch->need);
    memcpy(plan->out[i], ch->out, (size_t)plan->ops[i]->n_results * sizeof *ch->out);
  }
  local_search(&s);
  fc_sbp_estimate(k, &data, a, &r->data);
  fc_sbp_estimate(k, &tensor, a, &r->tensor);
  fc_sbp_estimate(k, plan, a, &r->searched);
  /* The guarantee: the cheapest plan that fits, the fixed strategies included. */
  const FcSbpEstimate *best = r->searched.fits ? &r->searched : NULL;
  r->taken = "search";
  if (r->data.fits && (!best || r->data.total_s < best->total_s)) best = &r->data, r->taken = "data";
  if (r->tensor.fits && (!best || r->tensor.total_s < best->total_s)) best = &r->tensor, r->taken = "tensor";
  /* A mesh of several axes: data parallelism over every axis but the last, tensor over the last, each axis
   * its own group (sbp_axes), priced by the same model. */
  int n_mesh = fc_module_mesh(m, NULL);
  r->axes_list = NULL;
  if (n_mesh >= 2 && n_mesh <= FC_SBP_MAX_AXES) {
    char list[8 * FC_SBP_MAX_AXES] = "";
    for (int i = 0, len = 0; i < n_mesh; i++)
      len += snprintf(list + len, sizeof list - (size_t)len, "%s%s", i ? "," : "", i == n_mesh - 1 ? "tensor" : "data");
    st = fc_sbp_axes_plan(m, list, a, &r->axes_plan, diag);
    if (st != FC_OK) return st;
    r->axes_list = fc_arena_strdup(a, list);
    fc_sbp_estimate(k, &r->axes_plan, a, &r->axes);
    if (r->axes.fits && (!best || r->axes.total_s < best->total_s)) best = &r->axes, r->taken = r->axes_list;
  }
  if (!best)
    return fc_error(diag, FC_ERR_INPUT, "sbp auto: no plan fits in %.2f GiB a rank (data needs %.2f GiB, tensor %.2f GiB)",
                    (double)k->mem_cap_bytes / (1 << 30), (double)(r->data.weight_bytes + r->data.peak_bytes) / (1 << 30),
                    (double)(r->tensor.weight_bytes + r->tensor.peak_bytes) / (1 << 30));
  if (best == &r->data) copy_plan(plan, &data);
  else if (best == &r->tensor) copy_plan(plan, &tensor);
  else if (best == &r->axes) *plan = r->axes_plan; /* per axis: another shape of plan, its arrays from a */
  r->chosen = *best;
  return FC_OK;
}

FcStatus fc_pass_sbp_auto(FcModule *m, FcPassContext *pc) {
  if (m->graph->parent) return FC_OK;
  if (fc_module_mesh(m, NULL) == 0)
    return fc_error(pc->diag, FC_ERR_INPUT, "pass sbp_auto needs the module's mesh (flow.mesh: flowc build --ranks N)");
  int64_t group;
  if (!fc_mesh_group_size(m, -1, &group)) return fc_error(pc->diag, FC_ERR_INPUT, "the mesh has too many ranks");
  if (group == 1) return FC_OK;
  FcSbpPlan plan;
  FcSbpChoiceReport r;
  FcStatus st = fc_sbp_auto_plan(m, &pc->target->sbp, &pc->scratch, &plan, &r, pc->diag);
  return st == FC_OK ? fc_sbp_apply(&plan, pc) : st;
}
