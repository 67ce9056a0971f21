/* fused.c — shape inference and reference evaluation of flow.fused (an element-wise program over
 * broadcast operands, ew_program.h).
 *
 * The compute dtype and the shape are attributes (the fusion pass copies them from the chain's last op),
 * so inference checks rather than derives: the program (kept parsed on the op) uses operand references
 * only and every operand broadcasts to the shape. Operands of another dtype than the compute one, and the
 * optional `to` of the result, are conversions with flow.cast's meaning (passes/fuse_casts.c folds the
 * casts of a quantised model's float glue in). Evaluation converts with the cast evaluator, then runs the
 * program step by step with the element-wise evaluators (fc_ew_program_eval).
 */
#include "ew_program.h"
#include "infer_internal.h"

FcStatus fc_infer_fused(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcAttr *dt = fc_op_attr(op, FC_ATTR_DTYPE);
  if (!dt || dt->kind != FC_AK_TYPE || (unsigned)dt->type >= FC_DT_COUNT)
    return fc_ih_fail(op, diag, "attribute 'dtype' must be an element type");
  const int64_t *shape;
  int n;
  FC_ITRY(fc_ih_shape(op, &shape, &n, diag));
  if (n > FC_DEFAULT_MAX_RANK) return fc_ih_fail(op, diag, "rank %d is too large", n);
  FcType rt = {.dtype = dt->type, .rank = n, .dims = shape};
  for (int i = 0; i < op->n_operands; i++) {
    const FcType *t = fc_ih_in(op, i);
    int r;
    const int64_t *d;
    if (!fc_broadcast_shapes(arena, t, &rt, &r, &d) || r != n)
      return fc_ih_fail(op, diag, "operand %d does not broadcast to the result shape", i);
    for (int j = 0; j < n; j++)
      if (d[j] != shape[j]) return fc_ih_fail(op, diag, "operand %d does not broadcast to the result shape", i);
  }
  const FcEwProgram *p;
  FC_ITRY(fc_ih_program(op, FC_ATTR_PROGRAM, false, arena, &p, diag));
  const FcAttr *to = fc_op_attr(op, FC_ATTR_TO);
  if (to && (to->kind != FC_AK_TYPE || (unsigned)to->type >= FC_DT_COUNT))
    return fc_ih_fail(op, diag, "attribute 'to' must be an element type");
  fc_ih_set(op, 0, arena, to ? to->type : dt->type, n, shape);
  return FC_OK;
}

FcStatus fc_eval_fused(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  const FcEwProgram *p = fc_op_attr_program(op, FC_ATTR_PROGRAM);
  if (!p) return fc_ih_fail(op, diag, "attribute 'program' is missing");
  FcDtype dt = fc_op_attr(op, FC_ATTR_DTYPE)->type;
  const FcTensor **conv = FC_NEW_ARRAY(arena, const FcTensor *, (size_t)(op->n_operands ? op->n_operands : 1));
  for (int i = 0; i < op->n_operands; i++) {
    FcStatus st = fc_ew_cast_to(op, in[i], dt, &conv[i], arena, diag);
    if (st != FC_OK) return st;
  }
  FcType ct = op->results[0].type;
  ct.dtype = dt;
  FcTensor *y = NULL;
  FcStatus st = fc_ew_program_eval(op, p, &ct, NULL, conv, &y, arena, diag);
  if (st != FC_OK) return st;
  const FcTensor *r = NULL;
  st = fc_ew_cast_to(op, y, op->results[0].type.dtype, &r, arena, diag);
  *out = (FcTensor *)r;
  return st;
}
