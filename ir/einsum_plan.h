/* einsum_plan.h — an einsum equation compiled against static operand types (einsum_plan.c).
 *
 * Shared by the reference evaluator (ir/eval_nn.c) and the kernel emitter (codegen/kernel_sample.c):
 * both walk the same loop nest — the output labels in result order, then the contracted labels — with
 * per-operand element strides for every loop label. */
#ifndef FLOWC_EINSUM_PLAN_H
#define FLOWC_EINSUM_PLAN_H

#include "ir.h"

enum {
  FC_EIN_LETTERS = 52,       /* label ids: 0..51 for A-Z a-z, then the dims an ellipsis stands for */
  FC_EIN_MAX_RANK = 64,      /* operand rank the planner accepts */
  FC_EIN_MAX_LABELS = FC_EIN_LETTERS + FC_EIN_MAX_RANK,
  FC_EIN_MAX_OPS = 64,
};

typedef struct FcEinsumPlan {
  int nops;
  int n_out;                              /* loop labels [0, n_out) are the result's dims, in order */
  int nl;                                 /* loop labels [n_out, nl) are summed */
  int64_t dims[FC_EIN_MAX_LABELS];        /* size of each loop label */
  int64_t (*strides)[FC_EIN_MAX_LABELS];  /* strides[k][i]: element step of operand k along loop label
                                           * i (summed over repeated labels, which walks the diagonal;
                                           * 0 where the operand lacks the label or broadcasts it) */
} FcEinsumPlan;

/* Compiles `equation` (explicit "->" or implicit form, "..." ellipsis, numpy's size-1 broadcasting of
 * labels) for operands `in[0..nops)` and checks it against the result type `rt`. On failure returns
 * FC_ERR_INPUT (or FC_ERR_UNSUPPORTED past the planner's limits) and writes a one-line reason to `why`. */
FcStatus fc_einsum_plan(const char *equation, int nops, const FcType *const *in, const FcType *rt, FcArena *arena,
                        FcEinsumPlan *plan, char *why, size_t whycap);

#endif /* FLOWC_EINSUM_PLAN_H */
