/* dce.c — dead-code elimination.
 *
 * One walk from the RETURN backwards: an op is removed when it is pure (not random_uniform, not the
 * terminator) and none of its results is used. Users always come after their operands' producers, so
 * by the time the walk reaches an op every one of its users has already been seen and, if dead,
 * removed: the single reverse walk reaches the fixpoint. Graph inputs are never removed (they are the
 * function's signature).
 */
#include "passes.h"
#include "rewrite.h"

FcStatus fc_pass_dce(FcModule *m, FcPassContext *pc) {
  (void)pc;
  FcGraph *g = m->graph;
  for (FcOp *op = g->last, *prev; op; op = prev) {
    prev = op->prev;
    if (!fc_rw_removable(op)) continue;
    bool used = false;
    for (int i = 0; i < op->n_results && !used; i++) used = fc_value_has_uses(&op->results[i]);
    if (!used) fc_op_erase(op);
  }
  return FC_OK;
}
