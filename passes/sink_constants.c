/* sink_constants.c — captured constants of loops and ifs become constants inside their regions.
 *
 * Regions are isolated from above (ir.h), so a body reads an outer constant through a block argument,
 * and to every kernel in the body that argument is a run-time buffer: a recurrent layer's R (the
 * [H, G*H] weight of h_{t-1} R^T, captured by the loop lower_rnn builds) would be re-read unpacked by
 * the matmul on every time step. Here a captured operand defined by a constant is replaced, in each
 * region that reads it, by a constant op at the top of that region sharing the same tensor; the
 * capture and its block argument are then dropped. Inside the body the matmul sees a constant weight
 * and packs it once at compile time, and fold and the epilogue fusions see the constant too.
 *
 * Code generation gives each graph its own constant globals, so a constant that stays in use outside,
 * or that two regions of an if both read, would be stored twice: it is sunk only when it is small
 * (SMALL_BYTES: scalars, biases) or when this region op is its only user and only one region reads
 * it. A capture no region reads is dropped whatever it is.
 */
#include "passes.h"
#include "rewrite.h"

enum { SMALL_BYTES = 4096 };

/* The block argument of operand i in a region (a loop body's inputs line up with its operands). */
static FcValue *block_arg(const FcOp *op, int r, int i) {
  return op->regions[r]->inputs[op->kind == FC_OP_LOOP ? i : i - 1];
}

/* Sinks or drops captured operand i of op if it may; false on error. */
static bool sink_capture(FcOp *op, int i, FcDiag *diag) {
  FcValue *v = op->operands[i].value;
  int readers = 0;
  for (int r = 0; r < op->n_regions; r++) readers += fc_value_has_uses(block_arg(op, r, i));
  if (readers > 0) {
    const FcTensor *t = v ? fc_value_const(v) : NULL;
    if (!t || !(t->nbytes <= SMALL_BYTES || (readers == 1 && fc_value_num_uses(v) == 1))) return true;
    for (int r = 0; r < op->n_regions; r++) {
      FcValue *arg = block_arg(op, r, i);
      if (!fc_value_has_uses(arg)) continue;
      FcValue *c = fc_rw_make_constant(op->regions[r]->first, t, v->def->loc, diag);
      if (!c) return false;
      fc_value_replace_all_uses(arg, c);
    }
  }
  fc_region_op_drop_capture(op, i);
  return true;
}

FcStatus fc_pass_sink_constants(FcModule *m, FcPassContext *pc) {
  fc_graph_for_each_op(m->graph, op) {
    if (op->kind != FC_OP_LOOP && op->kind != FC_OP_IF) continue;
    for (int i = op->n_operands - 1; i >= fc_region_op_first_capture(op); i--)
      if (!sink_capture(op, i, pc->diag)) return pc->diag->status;
  }
  return FC_OK;
}
