/* eval.c — the entry point of compile-time evaluation (constant folding, import-time shape maths).
 *
 * fc_op_eval gathers the constant tensors behind an op's operands and calls the op's reference
 * evaluator (ops.def `eval` column). Before that it re-runs type inference on the op (fc_op_infer), so
 * every evaluator may rely on validated attributes and on result types that agree with the operands:
 * a malformed op gives a message, never an out-of-bounds read. FC_ERR_UNSUPPORTED (with a message in
 * `diag`) means "leave this op alone": an operand that is not a constant with data, an op that is not
 * pure or has no evaluator, a result beyond the tensor size limit, or a value the evaluator declines
 * (integer division by zero, ...). Callers that fold opportunistically pass a scratch FcDiag, since the
 * first message recorded in a diag wins.
 */
#include "ir.h"

#include <string.h>

FcStatus fc_eval_none(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  return fc_error(diag, FC_ERR_UNSUPPORTED, "%s: cannot be evaluated at compile time", fc_op_info(op->kind)->name);
}

FcStatus fc_eval_constant(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  const FcAttr *a = fc_op_attr(op, FC_ATTR_VALUE);
  if (!a || a->kind != FC_AK_TENSOR || !a->tensor || !a->tensor->data)
    return fc_error(diag, FC_ERR_UNSUPPORTED, "constant: value has no data");
  FcTensor *t = fc_tensor_new(arena, op->results[0].type);
  if (t->nbytes != a->tensor->nbytes) return fc_error(diag, FC_ERR_INPUT, "constant: value size disagrees with its type");
  if (t->nbytes) memcpy((void *)t->data, a->tensor->data, (size_t)t->nbytes);
  out[0] = t;
  return FC_OK;
}

FcStatus fc_op_eval(const FcOp *op, FcArena *arena, FcTensor **out, FcDiag *diag) {
  const FcOpInfo *info = fc_op_info(op->kind);
  if (!info->eval) return fc_error(diag, FC_ERR_UNSUPPORTED, "%s: cannot be evaluated at compile time", info->name);
  if (!(info->flags & FC_OPF_PURE))
    return fc_error(diag, FC_ERR_UNSUPPORTED, "%s: has side effects and is not evaluated", info->name);
  /* Re-inference checks counts and attributes and that the recorded types match the operands; it
   * restores the recorded types, so the op is left as it was. */
  FcStatus st = fc_op_infer((FcOp *)op, diag);
  if (st != FC_OK) return st;

  int n_in = op->n_operands > info->in_max ? op->n_operands : info->in_max;
  const FcTensor **in = FC_NEW_ARRAY(arena, const FcTensor *, (size_t)(n_in > 0 ? n_in : 1));
  for (int i = 0; i < op->n_operands; i++) {
    const FcValue *v = op->operands[i].value;
    const FcTensor *t = fc_value_const(v);
    if (!t) return fc_error(diag, FC_ERR_UNSUPPORTED, "%s: operand %d is not a constant with data", info->name, i);
    if (!fc_type_equal(&t->type, &v->type)) {
      char b1[256], b2[256];
      return fc_error(diag, FC_ERR_INPUT, "%s: operand %d holds %s but has type %s", info->name, i,
                      fc_type_str(&t->type, b1, sizeof b1), fc_type_str(&v->type, b2, sizeof b2));
    }
    in[i] = t;
  }
  for (int i = 0; i < op->n_results; i++) {
    int64_t nbytes;
    if (!fc_type_nbytes(&op->results[i].type, &nbytes) || nbytes > FC_DEFAULT_MAX_TENSOR_BYTES)
      return fc_error(diag, FC_ERR_UNSUPPORTED, "%s: result %d is too large to evaluate", info->name, i);
    out[i] = NULL;
  }
  st = info->eval(op, in, out, arena, diag);
  if (st != FC_OK) return st;
  for (int i = 0; i < op->n_results; i++) {
    FC_ASSERT(out[i]);
    FC_ASSERT(fc_type_equal(&out[i]->type, &op->results[i].type));
  }
  return FC_OK;
}
