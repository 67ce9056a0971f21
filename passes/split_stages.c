/* split_stages.c — pass split_stages: one rank's program of a pipeline placement (ops annotated flow.placement
 * by place_stages; the module attribute flow.rank = r: the build compiles one program per rank). The rank
 * keeps the ops placed on it. An op placed elsewhere whose results it reads becomes a recv from the rank that
 * computes them, and an op of its own whose result another rank reads is followed by a send there; every
 * other op placed elsewhere goes, and with it the constants only those ops read, so a rank holds only its
 * stage's weights.
 *
 * Pairing: a value made on placement P and read on rank q outside P comes from P's rank q mod |P| (a stage
 * of place_stages is |P| consecutive ranks, so that is the rank at q's coordinates on the mesh's other
 * axes; on a 1-D mesh P's one rank). Order: every rank's program is the graph's op order filtered, with a
 * value's sends right after its op and the matching recv at that op's place, so all ranks meet their
 * transfers in one global order and blocking sends and receives cannot deadlock; a stage computes micro-batch
 * m + 1 (microbatch.c) while the next stage computes m. Tags count the transfers in that order (mod 32768;
 * MPI matches the messages between two ranks in order in any case, the tag only checks it).
 * An op without a placement (the boxing ops of the sbp pass, the slices and concats of others) runs where
 * its first placed consumer runs, else where the producer of its first operand runs, else on every rank.
 * Graph outputs are read by every rank (frt_main's rank 0 writes them; a library user has them on each
 * rank). A quantised value crosses as its storage integers: scast to them before the send, and back to the
 * quantised type after the recv (a recv's type is a plain element type).
 */
#include "passes.h"
#include "rewrite.h"

#include <string.h>

typedef struct Place {
  const int64_t *ranks; /* NULL: every rank */
  int n;
} Place;

typedef struct Split {
  FcModule *m;
  FcDiag *diag;
  FcArena *a;
  int64_t rank, all;
  uint32_t n_op_ids; /* op ids before the pass: the sends and recvs it adds come after */
  Place *at;      /* by op id */
  bool *resolved; /* by op id */
  int tag;
} Split;

static bool on(const Place *p, int64_t r) {
  if (!p->ranks) return true;
  for (int i = 0; i < p->n; i++)
    if (p->ranks[i] == r) return true;
  return false;
}

static const FcOp *top_op(const FcOp *op) {
  while (op->graph->parent) op = op->graph->parent;
  return op;
}

/* Placements from the annotations, then for the unplaced ops from their consumers (backward) or producers. */
static FcStatus resolve(Split *s) {
  FcGraph *g = s->m->graph;
  fc_graph_for_each_op(g, op) {
    const FcAnnotValue *v = fc_op_annot(op, fc_annot_name(FC_ANNOT_PLACEMENT));
    if (!v || op->kind == FC_OP_CONSTANT || op->kind == FC_OP_RETURN) continue;
    for (int i = 0; i < v->ints.n; i++)
      if (v->ints.v[i] >= s->all)
        return fc_error_node(s->diag, FC_ERR_INPUT, fc_op_name(op), fc_op_info(op->kind)->name,
                             "placed on rank %lld of a %lld-rank mesh", (long long)v->ints.v[i], (long long)s->all);
    s->at[op->id] = (Place){v->ints.v, v->ints.n};
    s->resolved[op->id] = true;
  }
  for (FcOp *op = g->last; op; op = op->prev) {
    if (s->resolved[op->id] || op->kind == FC_OP_CONSTANT || op->kind == FC_OP_RETURN) continue;
    for (int j = 0; j < op->n_results && !s->resolved[op->id]; j++)
      for (FcUse *u = op->results[j].first_use; u; u = u->next_use) {
        const FcOp *user = top_op(u->user);
        if (user->kind == FC_OP_RETURN || !s->resolved[user->id]) continue;
        s->at[op->id] = s->at[user->id];
        s->resolved[op->id] = true;
        break;
      }
  }
  fc_graph_for_each_op(g, op) {
    if (s->resolved[op->id] || op->kind == FC_OP_CONSTANT || op->kind == FC_OP_RETURN) continue;
    const FcValue *x = op->n_operands ? op->operands[0].value : NULL;
    if (x && x->def && s->resolved[x->def->id]) s->at[op->id] = s->at[x->def->id];
    s->resolved[op->id] = true; /* else every rank: at is {NULL, 0} */
  }
  return FC_OK;
}

/* Whether rank q reads v (a graph output: every rank does). */
static bool reads(const Split *s, const FcValue *v, int64_t q) {
  for (FcUse *u = v->first_use; u; u = u->next_use) {
    const FcOp *user = top_op(u->user);
    if (user->id >= s->n_op_ids) continue; /* a send of this pass */
    if (user->kind == FC_OP_RETURN || on(&s->at[user->id], q)) return true;
  }
  return false;
}

/* The transfers of op's results to the ranks outside its placement that read them, in rank order: this rank
 * sends its own and receives the ones meant for it; every rank counts them all, so tags agree. */
static FcStatus transfer(Split *s, FcOp *op) {
  const Place *p = &s->at[op->id];
  if (!p->ranks) return FC_OK; /* computed on every rank */
  bool mine = on(p, s->rank);
  FcOp *after = op->next;
  bool *to = FC_NEW_ARRAY(s->a, bool, (size_t)s->all);
  for (int j = 0; j < op->n_results; j++) {
    FcValue *v = &op->results[j];
    /* Every reader first: a recv takes over v's uses here, and every rank must count the same transfers. */
    for (int64_t q = 0; q < s->all; q++) to[q] = !on(p, q) && reads(s, v, q);
    for (int64_t q = 0; q < s->all; q++) {
      if (!to[q]) continue;
      int64_t from = p->ranks[q % p->n];
      int tag = s->tag++ % 32768;
      if (from != s->rank && q != s->rank) continue;
      FcBuilder b;
      fc_rw_builder_before(&b, mine ? after : op, s->diag);
      b.loc = op->loc;
      if (mine) {
        /* A quantised value travels as its storage integers (scast: a view) and is cast back on arrival. */
        FcValue *x = v->type.quant ? fc_b_scast(&b, v, NULL) : v;
        FcAttr at[2] = {FC_A_INT(PEER, q), FC_A_INT(TAG, tag)};
        if (x) fc_b_op(&b, FC_OP_SEND, &x, 1, 0, at, 2);
      } else {
        FcAttr at[4] = {FC_A_TYPE(DTYPE, v->type.dtype), FC_A_INT(PEER, from), FC_A_INTS(SHAPE, v->type.dims, v->type.rank),
                        FC_A_INT(TAG, tag)};
        FcValue *y = fc_b_op1(&b, FC_OP_RECV, NULL, 0, at, 4);
        if (y && v->type.quant) y = fc_b_scast(&b, y, v->type.quant);
        if (y) fc_value_replace_all_uses(v, y);
      }
      if (fc_b_status(&b) != FC_OK) return fc_b_status(&b);
    }
  }
  return FC_OK;
}

FcStatus fc_pass_split_stages(FcModule *m, FcPassContext *pc) {
  FcGraph *g = m->graph;
  if (g->parent) return FC_OK;
  Split s = {.m = m, .diag = pc->diag, .a = &pc->scratch, .rank = fc_module_rank(m)};
  if (!fc_mesh_group_size(m, -1, &s.all))
    return fc_error(pc->diag, FC_ERR_INPUT, "pass split_stages needs the module's mesh (flow.mesh: flowc build --ranks N)");
  if (s.rank < 0)
    return fc_error(pc->diag, FC_ERR_INPUT, "pass split_stages needs one program per rank (flow.rank: a pipeline "
                    "placement is built rank by rank)");
  s.n_op_ids = g->next_op_id;
  s.at = FC_NEW_ARRAY(s.a, Place, (size_t)g->next_op_id + 1);
  s.resolved = FC_NEW_ARRAY(s.a, bool, (size_t)g->next_op_id + 1);
  FcStatus st = resolve(&s);
  if (st != FC_OK) return st;
  int n = 0;
  fc_graph_for_each_op(g, op) n++;
  FcOp **ops = FC_NEW_ARRAY(s.a, FcOp *, (size_t)n + 1);
  n = 0;
  fc_graph_for_each_op(g, op) ops[n++] = op;
  for (int i = 0; i < n; i++)
    if (ops[i]->kind != FC_OP_CONSTANT && ops[i]->kind != FC_OP_RETURN && (st = transfer(&s, ops[i])) != FC_OK) return st;
  /* Drop what another rank computes (its results read here now come from recvs), then the constants left
   * unread. */
  for (int i = n - 1; i >= 0; i--) {
    FcOp *op = ops[i];
    if (op->kind == FC_OP_RETURN) continue;
    if (op->kind == FC_OP_CONSTANT ? !fc_value_has_uses(&op->results[0]) : !on(&s.at[op->id], s.rank)) fc_op_erase(op);
  }
  return FC_OK;
}
