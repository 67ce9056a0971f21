/* region.c — ops that own regions (flow.loop, flow.if) and the graphs nested in them.
 *
 * A region is an ordinary FcGraph in the module arena whose `parent` is the op owning it: its inputs
 * are the block arguments and its last op is YIELD. Regions are isolated from above (ir.h), so code
 * that handles one graph handles a body too; what changes is that a module now holds a tree of graphs,
 * which fc_graph_walk and fc_module_graphs visit in pre-order (a graph before the regions of its ops).
 */
#include "ir.h"

#include <string.h>

FcGraph *fc_region_new(FcModule *m) {
  FcGraph *r = FC_NEW(&m->arena, FcGraph);
  r->module = m;
  r->name = "region";
  return r;
}

void fc_op_set_regions(FcOp *op, FcGraph *const *regions, int n) {
  FcArena *a = &op->graph->module->arena;
  FC_ASSERT(n >= 0 && !op->n_regions);
  op->n_regions = n;
  op->regions = n ? FC_NEW_ARRAY(a, FcGraph *, (size_t)n) : NULL;
  for (int r = 0; r < n; r++) {
    op->regions[r] = regions[r];
    regions[r]->parent = op;
    regions[r]->name = op->kind == FC_OP_IF ? (r == 0 ? "then" : "else") : "body";
  }
}

FcOp *fc_op_create_with_regions(FcGraph *g, FcOpKind kind, FcValue *const *operands, int n_operands, int n_results,
                                int n_regions) {
  FC_ASSERT(n_regions >= 0);
  FcOp *op = fc_op_create(g, kind, operands, n_operands, n_results);
  FcGraph **r = n_regions ? FC_NEW_ARRAY(&g->module->arena, FcGraph *, (size_t)n_regions) : NULL;
  for (int i = 0; i < n_regions; i++) r[i] = fc_region_new(g->module);
  fc_op_set_regions(op, r, n_regions);
  return op;
}

void fc_op_add_block_args(FcOp *op) {
  FcArena *a = &op->graph->module->arena;
  if (op->kind == FC_OP_LOOP && op->n_regions == 1) {
    FcGraph *body = op->regions[0];
    fc_graph_add_input(body, fc_type_make(a, FC_DT_I64, 0, NULL), NULL);
    fc_graph_add_input(body, fc_type_make(a, FC_DT_BOOL, 0, NULL), NULL);
    for (int i = 2; i < op->n_operands; i++) fc_graph_add_input(body, op->operands[i].value->type, NULL);
  } else if (op->kind == FC_OP_IF) {
    for (int r = 0; r < op->n_regions; r++)
      for (int i = 1; i < op->n_operands; i++) fc_graph_add_input(op->regions[r], op->operands[i].value->type, NULL);
  }
}

int fc_region_op_first_capture(const FcOp *op) {
  FC_ASSERT(op->kind == FC_OP_LOOP || op->kind == FC_OP_IF);
  return op->kind == FC_OP_LOOP ? 2 + fc_loop_num_carried(op) : 1;
}

void fc_region_op_drop_capture(FcOp *op, int i) {
  int first = fc_region_op_first_capture(op);
  FC_ASSERT(i >= first && i < op->n_operands);
  /* A loop body's inputs line up with the loop's operands; an if's regions take the captures only. */
  int arg = op->kind == FC_OP_LOOP ? i : i - 1;
  for (int r = 0; r < op->n_regions; r++) {
    FcGraph *g = op->regions[r];
    FC_ASSERT(arg < g->n_inputs && !fc_value_has_uses(g->inputs[arg]));
    for (int j = arg; j + 1 < g->n_inputs; j++) {
      g->inputs[j] = g->inputs[j + 1];
      g->inputs[j]->index = j;
    }
    g->n_inputs--;
  }
  for (int j = i; j + 1 < op->n_operands; j++) fc_op_set_operand(op, j, op->operands[j + 1].value);
  fc_op_set_operand(op, op->n_operands - 1, NULL);
  op->n_operands--;
}

FcOp *fc_graph_set_yield(FcGraph *region, FcValue *const *vals, int n) {
  FC_ASSERT(region->parent && !fc_graph_return(region));
  FcOp *y = fc_op_create(region, FC_OP_YIELD, vals, n, 0);
  fc_op_insert_before(NULL, y);
  return y;
}

FcStatus fc_graph_walk(FcGraph *g, FcStatus (*fn)(FcGraph *g, void *ctx), void *ctx) {
  FcStatus st = fn(g, ctx);
  if (st != FC_OK) return st;
  /* Regions of an op that fn erased are not visited: they are no longer part of the module. */
  fc_graph_for_each_op(g, op) for (int r = 0; r < op->n_regions; r++) {
    st = fc_graph_walk(op->regions[r], fn, ctx);
    if (st != FC_OK) return st;
  }
  return FC_OK;
}

typedef struct GraphList {
  FcGraph **out;
  int cap, n;
} GraphList;

static FcStatus collect(FcGraph *g, void *ctx) {
  GraphList *l = ctx;
  if (l->n < l->cap) l->out[l->n] = g;
  l->n++;
  return FC_OK;
}

int fc_module_graphs(FcModule *m, FcGraph **out, int cap) {
  GraphList l = {out, cap, 0};
  fc_graph_walk(m->graph, collect, &l);
  return l.n;
}

int fc_loop_num_carried(const FcOp *loop) {
  int64_t k = fc_op_attr_int(loop, FC_ATTR_CARRIED, 0);
  return k >= 0 && k <= loop->n_operands - 2 ? (int)k : 0;
}

int fc_loop_num_scan(const FcOp *loop) {
  if (loop->n_regions < 1) return 0;
  FcOp *y = fc_graph_return(loop->regions[0]);
  int s = y ? y->n_operands - 1 - fc_loop_num_carried(loop) : 0;
  return s > 0 ? s : 0;
}

int64_t fc_loop_scan_len(const FcOp *loop) { return fc_op_attr_int(loop, FC_ATTR_SCAN_LEN, 0); }
