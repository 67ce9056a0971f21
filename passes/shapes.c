/* shapes.c — shape and dtype inference over the whole graph.
 *
 * Walks the ops in order and re-runs each op's inference hook from ops.def, overwriting the recorded
 * result types. Operands are defined before use, so every hook sees operand types that are already
 * final: one forward walk propagates a changed graph-input type (or a rewrite that changed an operand
 * type) through the whole graph. The graph outputs are the RETURN's operands, so their types — and the
 * function signature printed from them — follow without extra work.
 */
#include "passes.h"
#include "rewrite.h"

FcStatus fc_pass_shapes(FcModule *m, FcDiag *diag) {
  fc_graph_for_each_op(m->graph, op) {
    FcDiag d;
    fc_diag_init(&d);
    FcStatus st = fc_op_infer_types(op, &m->arena, &d);
    if (st != FC_OK) return fc_rw_op_error(diag, op, st, d.msg);
  }
  return FC_OK;
}
