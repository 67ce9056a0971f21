/* infer_region.c — result types of the region ops (flow.loop, flow.if) and their region contract.
 *
 * A region op's results follow from its operands and its regions' yields: a loop's carried results
 * have its carried operands' types and each scan output is its yielded type with a leading scan_len
 * dim; an if's results are what both branches yield. The hooks also check the block arguments and the
 * yields against the contract in ir.h, so the builder, the parser and the verifier (through
 * fc_op_infer) all refuse a malformed region op with one message naming it. Isolation from above needs
 * a walk over the body and lives in the verifier.
 */
#include "infer_internal.h"

#include <stdio.h>

static bool is_scalar_of(const FcType *t, FcDtype dt) { return t->dtype == dt && t->rank == 0 && !t->quant; }

/* Region r of op must exist, end in YIELD and have `n_args` block arguments whose types are given by
 * want[] (NULL entries are checked by the caller). */
static FcStatus check_region(const FcOp *op, int r, const FcType *const *want, int n_args, FcOp **yield,
                             FcDiag *diag) {
  const char *what = op->kind == FC_OP_IF ? (r == 0 ? "then region" : "else region") : "body";
  FcGraph *g = op->regions[r];
  FcOp *y = g->last;
  if (!y || y->kind != FC_OP_YIELD) return fc_ih_fail(op, diag, "%s does not end in flow.yield", what);
  if (g->n_inputs != n_args)
    return fc_ih_fail(op, diag, "%s has %d block arguments, expected %d", what, g->n_inputs, n_args);
  for (int i = 0; i < n_args; i++)
    if (want[i] && !fc_type_equal(&g->inputs[i]->type, want[i])) {
      char have[256], exp[256];
      return fc_ih_fail(op, diag, "%s argument %d has type %s, expected %s", what, i,
                        fc_type_str(&g->inputs[i]->type, have, sizeof have), fc_type_str(want[i], exp, sizeof exp));
    }
  for (int i = 0; i < y->n_operands; i++)
    if (!y->operands[i].value) return fc_ih_fail(op, diag, "%s yield operand %d is missing", what, i);
  *yield = y;
  return FC_OK;
}

static FcStatus yield_type_is(const FcOp *op, const char *what, const FcOp *y, int i, const FcType *want,
                              FcDiag *diag) {
  const FcType *have = &y->operands[i].value->type;
  if (fc_type_equal(have, want)) return FC_OK;
  char h[256], w[256];
  return fc_ih_fail(op, diag, "%s yields %s as value %d, expected %s", what, fc_type_str(have, h, sizeof h), i,
                    fc_type_str(want, w, sizeof w));
}

FcStatus fc_infer_loop(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  if (op->n_regions != 1) return fc_ih_fail(op, diag, "expects 1 region, has %d", op->n_regions);
  int64_t k;
  FC_ITRY(fc_ih_int(op, FC_ATTR_CARRIED, &k, diag));
  if (k < 0 || k > op->n_operands - 2)
    return fc_ih_fail(op, diag, "carried = %lld, but the loop has %d operands after trip and cond", (long long)k,
                      op->n_operands - 2);
  char buf[256];
  if (!is_scalar_of(fc_ih_in(op, 0), FC_DT_I64))
    return fc_ih_fail(op, diag, "trip count has type %s, expected tensor<i64>",
                      fc_type_str(fc_ih_in(op, 0), buf, sizeof buf));
  if (!is_scalar_of(fc_ih_in(op, 1), FC_DT_BOOL))
    return fc_ih_fail(op, diag, "condition has type %s, expected tensor<i1>",
                      fc_type_str(fc_ih_in(op, 1), buf, sizeof buf));
  const FcType **want = FC_NEW_ARRAY(arena, const FcType *, (size_t)op->n_operands);
  want[0] = fc_ih_in(op, 0);
  want[1] = fc_ih_in(op, 1);
  for (int i = 2; i < op->n_operands; i++) want[i] = fc_ih_in(op, i);
  FcOp *y;
  FC_ITRY(check_region(op, 0, want, op->n_operands, &y, diag));
  if (y->n_operands < 1 + k)
    return fc_ih_fail(op, diag, "body yields %d values, expected at least %lld (cond and the carried values)",
                      y->n_operands, (long long)(1 + k));
  FC_ITRY(yield_type_is(op, "body", y, 0, fc_ih_in(op, 1), diag));
  for (int i = 0; i < k; i++) FC_ITRY(yield_type_is(op, "body", y, 1 + i, fc_ih_in(op, 2 + i), diag));
  int s = y->n_operands - 1 - (int)k;
  if (op->n_results != k + s)
    return fc_ih_fail(op, diag, "has %d results, but carries %lld values and yields %d scan outputs", op->n_results,
                      (long long)k, s);
  int64_t len = 0;
  if (s > 0 || fc_op_attr(op, FC_ATTR_SCAN_LEN)) { /* required with scan outputs */
    FC_ITRY(fc_ih_int(op, FC_ATTR_SCAN_LEN, &len, diag));
    if (len < 0) return fc_ih_fail(op, diag, "scan_len is negative (%lld)", (long long)len);
  }
  for (int i = 0; i < k; i++) op->results[i].type = fc_type_copy(arena, fc_ih_in(op, 2 + i));
  for (int j = 0; j < s; j++) {
    const FcType *t = &y->operands[1 + k + j].value->type;
    if (t->quant) return fc_ih_fail(op, diag, "scan output %d has a quantised type", j);
    if (t->rank + 1 > FC_DEFAULT_MAX_RANK)
      return fc_ih_fail(op, diag, "scan output %d has rank %d; with the scan dim it exceeds %d", j, t->rank,
                        FC_DEFAULT_MAX_RANK);
    int64_t *dims = fc_ih_dims(arena, t->rank + 1);
    dims[0] = len;
    for (int d = 0; d < t->rank; d++) dims[d + 1] = t->dims[d];
    fc_ih_set(op, (int)k + j, arena, t->dtype, t->rank + 1, dims);
  }
  return FC_OK;
}

FcStatus fc_infer_if(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  if (op->n_regions != 2) return fc_ih_fail(op, diag, "expects 2 regions, has %d", op->n_regions);
  char buf[256];
  if (!is_scalar_of(fc_ih_in(op, 0), FC_DT_BOOL))
    return fc_ih_fail(op, diag, "condition has type %s, expected tensor<i1>",
                      fc_type_str(fc_ih_in(op, 0), buf, sizeof buf));
  int n_args = op->n_operands - 1;
  const FcType **want = FC_NEW_ARRAY(arena, const FcType *, (size_t)(n_args ? n_args : 1));
  for (int i = 0; i < n_args; i++) want[i] = fc_ih_in(op, 1 + i);
  FcOp *yt, *ye;
  FC_ITRY(check_region(op, 0, want, n_args, &yt, diag));
  FC_ITRY(check_region(op, 1, want, n_args, &ye, diag));
  if (yt->n_operands != op->n_results || ye->n_operands != op->n_results)
    return fc_ih_fail(op, diag, "has %d results, but its regions yield %d (then) and %d (else) values", op->n_results,
                      yt->n_operands, ye->n_operands);
  for (int i = 0; i < op->n_results; i++) {
    FC_ITRY(yield_type_is(op, "else region", ye, i, &yt->operands[i].value->type, diag));
    if (yt->operands[i].value->type.quant) return fc_ih_fail(op, diag, "result %d has a quantised type", i);
    op->results[i].type = fc_type_copy(arena, &yt->operands[i].value->type);
  }
  return FC_OK;
}
