/* fused.c — shape inference and reference evaluation of flow.fused (an element-wise program over
 * broadcast operands, ew_program.h).
 *
 * The result's dtype and shape are attributes (the fusion pass copies them from the chain's last op), so
 * inference checks rather than derives: the program (kept parsed on the op) uses operand references
 * only, every operand broadcasts to the shape and has the result's dtype (fused chains never change
 * dtype). Evaluation runs the program step by step with the element-wise evaluators (fc_ew_program_eval).
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
  FC_ITRY(fc_ih_ints(op, FC_ATTR_SHAPE, &shape, &n, diag));
  if (n > FC_DEFAULT_MAX_RANK) return fc_ih_fail(op, diag, "rank %d is too large", n);
  int64_t numel = 1;
  for (int i = 0; i < n; i++) {
    if (shape[i] < 0) return fc_ih_fail(op, diag, "shape dim %d is negative (%lld)", i, (long long)shape[i]);
    if (!fc_checked_mul(numel, shape[i], &numel)) return fc_ih_fail(op, diag, "shape has too many elements");
  }
  FcType rt = {.dtype = dt->type, .rank = n, .dims = shape};
  for (int i = 0; i < op->n_operands; i++) {
    const FcType *t = fc_ih_in(op, i);
    if (t->dtype != dt->type)
      return fc_ih_fail(op, diag, "operand %d is %s, the result %s", i, fc_dtype_name(t->dtype), fc_dtype_name(dt->type));
    int r;
    const int64_t *d;
    if (!fc_broadcast_shapes(arena, t, &rt, &r, &d) || r != n)
      return fc_ih_fail(op, diag, "operand %d does not broadcast to the result shape", i);
    for (int j = 0; j < n; j++)
      if (d[j] != shape[j]) return fc_ih_fail(op, diag, "operand %d does not broadcast to the result shape", i);
  }
  const FcEwProgram *p;
  FC_ITRY(fc_ih_program(op, FC_ATTR_PROGRAM, false, arena, &p, diag));
  fc_ih_set(op, 0, arena, dt->type, n, shape);
  return FC_OK;
}

FcStatus fc_eval_fused(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  const FcEwProgram *p = fc_op_attr_program(op, FC_ATTR_PROGRAM);
  if (!p) return fc_ih_fail(op, diag, "attribute 'program' is missing");
  return fc_ew_program_eval(op, p, &op->results[0].type, NULL, in, out, arena, diag);
}
