/* sbp.h — SBP plans: the signatures every op of the top-level graph takes and gives, chosen before the graph
 * is touched, and the one path that turns a plan into each rank's local program (sbp.c). The strategies are
 * plan makers: sbp_data and sbp_tensor walk forward through the rules (sbp.c), sbp_axes does it with one
 * strategy per mesh axis (sbp.c), sbp_file does the same with a user's assignment (sbp_file.c), sbp_auto
 * searches with the cost model (sbp_auto.c, sbp_cost.h); all of them end in fc_sbp_apply.
 *
 * A plan is flat (n_axes 1: one signature per value over one group of all ranks, boxing ops with mesh_axis
 * -1, flow.sbp repeating the signature per mesh axis) or per axis (n_axes = the mesh's axes: one signature
 * per value and axis, each axis its own group; sbp_axes.c has the per-axis helpers).
 */
#ifndef FLOWC_PASSES_SBP_H
#define FLOWC_PASSES_SBP_H

#include "passes.h"
#include "sbp_rules.h"

#define FC_SBP_MAX_AXES 8 /* as many mesh axes as flowc build --mesh and the runtime take */

/* need[k][i * n_axes + a]: the signature op k takes operand i in on plan axis a (the apply path boxes the
 * operand when it arrives in another); out[k][j * n_axes + a]: result j's. A flat plan (n_axes 1) indexes
 * need[k][i] as before. Types are the GLOBAL ones of the graph the plan was made for. */
typedef struct FcSbpPlan {
  FcModule *m;
  FcGraph *g;
  int64_t group;  /* G: all ranks */
  int n_axes;     /* 1: flat, one group of all ranks; else the mesh's axes */
  int64_t axis_group[FC_SBP_MAX_AXES]; /* plan axis a's group size (flat: G) */
  int n_ops;
  FcOp **ops;     /* the graph's ops in order, constants and the return included */
  FcSbp **need;
  FcSbp **out;
  FcSbp *input;   /* graph input i's signature on axis a, input[i * n_axes + a]: B, or a split sliced at the top */
  uint32_t n_ids; /* the graph's value ids when the plan was made */
  int32_t *op_of; /* value id -> index of its defining op in ops, -1 for a graph input */
  uint32_t n_op_ids;
  int32_t *index_of; /* op id -> index in ops */
  int64_t rank;      /* the module's flow.rank (a rank's own program: fold_rank folds a slice of a constant
                        to its chunk at compile time, so the cost model prices none per run), else -1 */
} FcSbpPlan;

/* A flat plan for m's top-level graph with every op on whole tensors (all B). FC_ERR_INPUT when m has no
 * mesh; p->group 1 (a mesh of one rank) means nothing to distribute. */
FcStatus fc_sbp_plan_init(FcSbpPlan *p, FcModule *m, FcArena *a, FcDiag *diag);
/* The same, per axis: one signature per value and mesh axis (n_axes = the mesh's axes). */
FcStatus fc_sbp_plan_init_axes(FcSbpPlan *p, FcModule *m, FcArena *a, FcDiag *diag);
/* A flat plan over `group` parts whatever the module's mesh (it may have none): microbatch.c plans the
 * micro-batches of a pipeline as data parallelism over them. */
FcStatus fc_sbp_plan_init_group(FcSbpPlan *p, FcModule *m, int64_t group, FcArena *a, FcDiag *diag);
/* The signature v has under p on plan axis 0 (its defining op's out, or the graph input's). */
FcSbp fc_sbp_plan_sig(const FcSbpPlan *p, const FcValue *v);
/* The same on plan axis `axis`. */
FcSbp fc_sbp_plan_sig_at(const FcSbpPlan *p, const FcValue *v, int axis);
/* The rule context of op k under p on plan axis 0: operand signatures as p's producers give them. Arrays
 * from a. */
void fc_sbp_plan_ctx(const FcSbpPlan *p, int k, FcArena *a, FcSbpRuleCtx *c);
/* The same on plan axis `axis`: the group is that axis's, and the types are local to the axes before it
 * (operands as op k takes them there, results as it gives them), so a split of a dim that an earlier axis
 * splits too is nested (chunk index coord0 * size1 + coord1) and must divide again. */
void fc_sbp_plan_ctx_at(const FcSbpPlan *p, int k, int axis, FcArena *a, FcSbpRuleCtx *c);

/* Fixed strategies, planned forward op by op with the rules (what sbp_data and sbp_tensor do), axis by axis
 * for a per-axis plan: s[a] is plan axis a's strategy. `want` (indexed by value id * n_axes + axis, kind -1 =
 * none; may be NULL) forces a value's signature: an input is sliced to it, an op takes the candidate
 * (fc_sbp_candidates_at) that gives it; FC_ERR_INPUT naming the value when none does. */
typedef enum FcSbpStrategy { FC_SBP_DATA, FC_SBP_TENSOR, FC_SBP_ASSIGNED } FcSbpStrategy;
FcStatus fc_sbp_plan_forward(FcSbpPlan *p, const FcSbpStrategy *s, const FcSbp *want, FcArena *a, FcDiag *diag);

/* The legal (need, out) pairs of op k when its operands may arrive in any signature: the rule probed with
 * one operand split along each dim (or partial), the tensor-parallel start, and all B; duplicates dropped.
 * Returns the count; arrays from a. */
typedef struct FcSbpChoice {
  FcSbp *need;
  FcSbp *out;
} FcSbpChoice;
int fc_sbp_candidates(const FcSbpPlan *p, int k, FcArena *a, FcSbpChoice **out);
/* The same on plan axis `axis` (fc_sbp_plan_ctx_at: the axes before it as p has them): 1-D need and out. */
int fc_sbp_candidates_at(const FcSbpPlan *p, int k, int axis, FcArena *a, FcSbpChoice **out);

/* Rewrites m's top-level graph into each rank's local program as p says: boxing ops in front of the ops
 * that take an operand in another signature (one per value and signature), local shapes, flow.sbp on
 * every result. */
FcStatus fc_sbp_apply(const FcSbpPlan *p, FcPassContext *pc);

/* The shape attributes of op that spell its result's dims (reshape's shape, slice's ends) rewritten to its
 * local result `local`, split as the n_axes signatures sig say; arrays from a. */
void fc_sbp_localize_attrs(FcOp *op, const FcType *local, const FcSbp *sig, int n_axes, FcArena *a);

/* sbp_file.c: the plan of the assignment file named by the module attribute flow.sbp_file (left in place). */
FcStatus fc_sbp_file_plan(FcModule *m, FcArena *a, FcSbpPlan *plan, FcDiag *diag);

/* sbp.c: a per-axis plan by the strategies of a list such as "data,tensor" (one of data, tensor per mesh
 * axis); FC_ERR_INPUT for a bad list. */
FcStatus fc_sbp_axes_plan(FcModule *m, const char *list, FcArena *a, FcSbpPlan *plan, FcDiag *diag);

/* ---- sbp_axes.c: per-axis signatures ------------------------------------------------------------------ */

/* The mesh_axis of plan axis a's boxing ops: -1 for a flat plan (every rank), else a. */
int fc_sbp_plan_mesh_axis(const FcSbpPlan *p, int a);
/* Dims of global type t as one rank holds them under the n signatures sig[] of plan axes 0..n-1 (each split
 * divides its dim by that axis's group); into dims (t->rank entries). */
void fc_sbp_local_dims(const FcSbpPlan *p, const FcType *t, const FcSbp *sig, int n, int64_t *dims);
/* The same as a type, dims from a. */
FcType fc_sbp_local_type(const FcSbpPlan *p, const FcType *t, const FcSbp *sig, int n, FcArena *a);
/* Whether the per-axis signatures a and b (p->n_axes each) are the same. */
bool fc_sbp_sigs_equal(const FcSbpPlan *p, const FcSbp *a, const FcSbp *b);

/* One boxing step: plan axis `axis` goes from `from` to `to` (a 1-D box over that axis's group), the other
 * axes staying as they are. */
typedef struct FcSbpStep {
  int axis;
  FcSbp from, to;
} FcSbpStep;
/* The steps that box a value from signatures `from` to `to` (p->n_axes each), in order, into steps
 * (2 * FC_SBP_MAX_AXES room); returns their count, or -1 when `to` asks for a partial value on an axis where
 * `from` is not partial (no box makes one). A gather, slice or all-to-all along axis k needs every later
 * axis not to split the dims it moves (nested chunks are ordered by axis), so such axes are gathered first
 * and split again after; a single changed axis uses the direct collective (all_to_all, reduce_scatter). */
int fc_sbp_steps(const FcSbpPlan *p, const FcSbp *from, const FcSbp *to, FcSbpStep *steps);

#endif /* FLOWC_PASSES_SBP_H */
