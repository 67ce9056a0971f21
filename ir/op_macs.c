/* op_macs.c — the work of one op as multiply-accumulates, the convention of `flowc info` and of the
 * executables' --profile (FLOPs = 2 × MACs): conv, conv_transpose and matmul count one per product term,
 * every other op 0 (bias additions, activations and other elementwise work are not counted). A fused
 * conv or matmul counts as its conv or matmul; a Winograd conv counts the direct convolution's products.
 */
#include "ir.h"

/* Product of dims[from..rank) with overflow checks. */
static bool dims_product(const FcType *t, int from, int64_t *out) {
  int64_t p = 1;
  for (int i = from; i < t->rank; i++)
    if (!fc_checked_mul(p, t->dims[i], &p)) return false;
  *out = p;
  return true;
}

bool fc_op_macs(const FcOp *op, int64_t *out) {
  *out = 0;
  int64_t n, per;
  switch (op->kind) {
  case FC_OP_CONV:
  case FC_OP_CONV_BLOCKED: {
    /* Each output element sums C/group x K1..Kn products: the weight's dims after the first. */
    if (op->n_operands < 2 || op->n_results < 1) return true;
    if (!fc_type_numel(&op->results[0].type, &n)) return false;
    if (!dims_product(&op->operands[1].value->type, 1, &per)) return false;
    return fc_checked_mul(n, per, out);
  }
  case FC_OP_CONV_TRANSPOSE: {
    /* Each input element is scattered to M/group x K1..Kn outputs: again the weight's dims after the first. */
    if (op->n_operands < 2) return true;
    if (!fc_type_numel(&op->operands[0].value->type, &n)) return false;
    if (!dims_product(&op->operands[1].value->type, 1, &per)) return false;
    return fc_checked_mul(n, per, out);
  }
  case FC_OP_MATMUL: {
    /* [..., M, K] x [..., K, N]: each output element sums K products. */
    if (op->n_operands < 2 || op->n_results < 1) return true;
    const FcType *a = &op->operands[0].value->type;
    if (a->rank < 1) return true;
    if (!fc_type_numel(&op->results[0].type, &n)) return false;
    return fc_checked_mul(n, a->dims[a->rank - 1], out);
  }
  default: return true;
  }
}
