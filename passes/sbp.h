/* sbp.h — SBP plans: the signatures every op of the top-level graph takes and gives, chosen before the graph
 * is touched, and the one path that turns a plan into each rank's local program (sbp.c). The strategies are
 * plan makers: sbp_data and sbp_tensor walk forward through the rules (sbp.c), sbp_file does the same with a
 * user's assignment (sbp_file.c), sbp_auto searches with the cost model (sbp_auto.c, sbp_cost.h); all of
 * them end in fc_sbp_apply.
 */
#ifndef FLOWC_PASSES_SBP_H
#define FLOWC_PASSES_SBP_H

#include "passes.h"
#include "sbp_rules.h"

/* need[k][i]: the signature op k takes operand i in (the apply path boxes the operand when it arrives in
 * another); out[k][j]: result j's signature. Types are the GLOBAL ones of the graph the plan was made for. */
typedef struct FcSbpPlan {
  FcModule *m;
  FcGraph *g;
  int64_t group;  /* G: every boxing op's group is all ranks */
  int n_ops;
  FcOp **ops;     /* the graph's ops in order, constants and the return included */
  FcSbp **need;
  FcSbp **out;
  FcSbp *input;   /* graph input i's signature: B, or a split sliced once at the top */
  uint32_t n_ids; /* the graph's value ids when the plan was made */
  int32_t *op_of; /* value id -> index of its defining op in ops, -1 for a graph input */
  uint32_t n_op_ids;
  int32_t *index_of; /* op id -> index in ops */
} FcSbpPlan;

/* A plan for m's top-level graph with every op on whole tensors (all B). False when m has no mesh, or a
 * mesh of one rank (*group 1: nothing to distribute) — the caller tells those apart by *group. */
FcStatus fc_sbp_plan_init(FcSbpPlan *p, FcModule *m, FcArena *a, FcDiag *diag);
/* The signature v has under p (its defining op's out, or the graph input's). */
FcSbp fc_sbp_plan_sig(const FcSbpPlan *p, const FcValue *v);
/* The rule context of op k under p: operand signatures as p's producers give them. Arrays from a. */
void fc_sbp_plan_ctx(const FcSbpPlan *p, int k, FcArena *a, FcSbpRuleCtx *c);

/* Fixed strategies, planned forward op by op with the rules (what sbp_data and sbp_tensor do). `want`
 * (indexed by value id, kind -1 = none; may be NULL) forces a value's signature: an input is sliced to it,
 * an op takes the candidate (fc_sbp_candidates) that gives it; FC_ERR_INPUT naming the value when none does. */
typedef enum FcSbpStrategy { FC_SBP_DATA, FC_SBP_TENSOR, FC_SBP_ASSIGNED } FcSbpStrategy;
FcStatus fc_sbp_plan_forward(FcSbpPlan *p, FcSbpStrategy s, const FcSbp *want, FcArena *a, FcDiag *diag);

/* The legal (need, out) pairs of op k when its operands may arrive in any signature: the rule probed with
 * one operand split along each dim (or partial), the tensor-parallel start, and all B; duplicates dropped.
 * Returns the count; arrays from a. */
typedef struct FcSbpChoice {
  FcSbp *need;
  FcSbp *out;
} FcSbpChoice;
int fc_sbp_candidates(const FcSbpPlan *p, int k, FcArena *a, FcSbpChoice **out);

/* Rewrites m's top-level graph into each rank's local program as p says: boxing ops in front of the ops
 * that take an operand in another signature (one per value and signature), local shapes, flow.sbp on
 * every result. */
FcStatus fc_sbp_apply(const FcSbpPlan *p, FcPassContext *pc);

/* sbp_file.c: the plan of the assignment file named by the module attribute flow.sbp_file (left in place). */
FcStatus fc_sbp_file_plan(FcModule *m, FcArena *a, FcSbpPlan *plan, FcDiag *diag);

#endif /* FLOWC_PASSES_SBP_H */
