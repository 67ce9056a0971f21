/* sbp_cost.h — the SBP cost model (sbp_cost.c): the predicted time of a plan (sbp.h) on the target's ranks,
 * its bytes moved and its memory per rank, from the constants of the target description (FcSbpCosts in
 * target.h). sbp_auto searches with it; flowc info prints it.
 */
#ifndef FLOWC_PASSES_SBP_COST_H
#define FLOWC_PASSES_SBP_COST_H

#include "sbp.h"

/* A plan's prediction, per rank and per run. */
typedef struct FcSbpEstimate {
  double compute_s;      /* ops: FLOPs over the GEMM speed or bytes over memory bandwidth, whichever is longer,
                            plus weights streamed, run-time operands packed and transcendental elements */
  double comm_s;         /* collectives (latency steps + bytes over the link) and local slices */
  double total_s;        /* compute_s + comm_s */
  int64_t flops;         /* 2 per multiply-accumulate of matmul and conv, on this rank */
  int64_t sent_bytes;    /* bytes a rank sends over the link (the algorithms' factors applied) */
  int n_collectives;     /* all_gather, all_reduce, reduce_scatter, all_to_all */
  int n_slices;          /* local slices (B -> S, no communication) */
  int64_t weight_bytes;  /* constants a rank holds (whole: a rank's program stores every weight) */
  int64_t peak_bytes;    /* the most bytes of values live at once (boxed copies included) */
  bool fits;             /* weight_bytes + peak_bytes within the target's cap */
} FcSbpEstimate;

/* False (with a message) when the target has no SBP constants. */
FcStatus fc_sbp_costs_check(const FcSbpCosts *k, FcDiag *diag);

/* Seconds of op `k` of p run as choice (need, out: p->n_axes signatures per operand and result, as in the
 * plan) on one rank; *flops (may be NULL) its FLOPs there. */
double fc_sbp_op_seconds(const FcSbpCosts *k, const FcSbpPlan *p, int op, const FcSbp *need, const FcSbp *out,
                         int64_t *flops);
/* Seconds to box a value of global type t from `from` to `to` over p's group (a collective or a local
 * slice); *sent (may be NULL) the bytes a rank sends. HUGE_VAL for a box that does not exist (to P). */
double fc_sbp_box_seconds(const FcSbpCosts *k, int64_t group, const FcType *t, FcSbp from, FcSbp to, int64_t *sent);
/* The same for signatures `from` and `to` of plan p (one per plan axis; per axis the steps of fc_sbp_steps,
 * each over its axis's group, crowded by all of p's ranks). */
double fc_sbp_box_plan_seconds(const FcSbpCosts *k, const FcSbpPlan *p, const FcType *t, const FcSbp *from,
                               const FcSbp *to, int64_t *sent);
/* Seconds of boxing value v (a flat plan's): one box per distinct signature its consumers take it in (sbp.c reuses a boxed
 * value), v having signature `sig`. The consumer op `ov_op` (-1: none) is taken as choosing `ov_need`. */
double fc_sbp_value_seconds(const FcSbpCosts *k, const FcSbpPlan *p, const FcValue *v, FcSbp sig, int ov_op,
                            const FcSbp *ov_need);

/* The whole plan's prediction. */
void fc_sbp_estimate(const FcSbpCosts *k, const FcSbpPlan *p, FcArena *scratch, FcSbpEstimate *e);

/* ---- stage_cost.c: pipeline placements ------------------------------------------------------------------ */

typedef struct FcStageCost {
  double busy_s;          /* the stage's ops, per run */
  int n_ops;
  const FcOp *first, *last; /* its first and last op in graph order */
  int64_t weight_bytes;   /* the constants its ops read (what its ranks hold) */
  int64_t sent_bytes;     /* to other stages, per run */
  int sends;
} FcStageCost;

typedef struct FcStageEstimate {
  int n_stages;           /* the mesh's axis 0 */
  FcStageCost *stage;
  double total_s;         /* a run: the replayed schedule's end */
  double one_rank_s;      /* the same ops back to back on one uncrowded rank (a 2-D mesh: a stage's rank's local ops) */
} FcStageEstimate;

/* The prediction for m's pipeline placement (ops annotated flow.placement by place_stages, micro-batches
 * already cut): the schedule the ranks run, replayed with k's op and link costs. Arrays from a. */
FcStatus fc_stage_estimate(const FcSbpCosts *k, FcModule *m, FcArena *a, FcStageEstimate *e, FcDiag *diag);

#endif /* FLOWC_PASSES_SBP_COST_H */

/* ---- sbp_auto.c: the search ------------------------------------------------------------------------------ */

/* The strategies compared for one module: the plan --sbp auto applies and what each would cost. */
typedef struct FcSbpChoiceReport {
  FcSbpEstimate data, tensor, searched; /* the fixed strategies and the search's own plan */
  FcSbpEstimate axes;                   /* on a mesh of 2+ axes: the per-axis plan of axes_list */
  const char *axes_list;                /* "data,tensor" (data on every axis but the last); NULL: none */
  FcSbpPlan axes_plan;                  /* that plan (valid when axes_list is set) */
  FcSbpEstimate chosen;                 /* the plan taken: the cheapest that fits */
  const char *taken;                    /* "search", "data", "tensor" or axes_list */
} FcSbpChoiceReport;

/* Plans m's top-level graph (which has a mesh of more than one rank) for the least predicted time under k:
 * the search's plan (flat: one group of all ranks), or data's or tensor's, or on a mesh of 2+ axes the
 * per-axis data x tensor plan, where the model predicts one of them no slower, so auto is never predicted
 * slower than any of them. FC_ERR_INPUT when no plan fits the memory cap. */
FcStatus fc_sbp_auto_plan(FcModule *m, const FcSbpCosts *k, FcArena *a, FcSbpPlan *plan, FcSbpChoiceReport *r,
                          FcDiag *diag);
