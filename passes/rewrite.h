/* rewrite.h — small helpers shared by the rewriting passes (canonicalize, fold, cse, dce, layout, ...).
 *
 * Kept apart from passes.h, which is the registry/driver interface, so that passes.h stays the one
 * header other folders include; only the pass sources include this one.
 */
#ifndef FLOWC_PASSES_REWRITE_H
#define FLOWC_PASSES_REWRITE_H

#include "ir.h"

/* A growable stack of ops in the module arena (scratch for worklists; grows by doubling, so the
 * memory left behind in the arena is at most twice the largest size it reached). */
typedef struct FcOpStack {
  FcArena *arena;
  FcOp **v;
  int n, cap;
} FcOpStack;

void fc_op_stack_init(FcOpStack *s, FcArena *arena);
void fc_op_stack_push(FcOpStack *s, FcOp *op);

/* True when `op` may be removed once its results are unused: pure and not a terminator. */
bool fc_rw_removable(const FcOp *op);
/* Erases `op` if it is removable and none of its results is used, then does the same, transitively,
 * for the producers of its operands (which may have just lost their last use). Returns how many ops
 * were erased. Only ops at or before `op` are touched, so a forward walk may hold a pointer to the
 * op after `op`. */
int fc_rw_erase_if_dead(FcOp *op, FcOpStack *scratch);
/* Replaces every use of op's results with `with[i]` and erases op (and operand producers left dead).
 * Each with[i] must have exactly the type of result i (asserted: a rewrite that changes a type is a
 * flowc bug). op's annotations go to the with[i]'s defining ops as fc_rw_keep_annots says. */
void fc_rw_replace_op(FcOp *op, FcValue *const *with, FcOpStack *scratch);
/* Copies the annotations of `from` whose policy is FC_ANNOT_KEEP (annots.def) to the op defining each
 * with[i] (not to graph inputs), unless that op has the name already. For rewrites that replace uses
 * themselves instead of calling fc_rw_replace_op. */
void fc_rw_keep_annots(const FcOp *from, FcValue *const *with, int n);
/* True when op computes on quantised values: a quantised operand or result, or a `qtype` attribute (a
 * quantised conv/matmul whose result is f32). Passes that rewrite conv/matmul by their f32 semantics
 * (weights scaled, epilogues fused, layouts changed) leave these alone: their kernels are integer ones. */
bool fc_rw_is_quantised(const FcOp *op);
/* Starts a builder that inserts before `op`, at op's location. */
void fc_rw_builder_before(FcBuilder *b, FcOp *op, FcDiag *diag);
/* Replaces op's one result by `y`, built with `b` (fc_rw_replace_op), unless building failed: then b's
 * status. */
FcStatus fc_rw_replace_built(FcBuilder *b, FcOp *op, FcValue *y, FcOpStack *scratch);
/* Appends a CONSTANT op holding `t` (shared, must live in the module arena) just before `pos`, with
 * loc `loc`; returns its result, or NULL with an error in `diag`. */
FcValue *fc_rw_make_constant(FcOp *pos, const FcTensor *t, const char *loc, FcDiag *diag);

/* A conv's kernel taps [lo[i], lo[i] + t's K'[i]) along each of its n spatial dims: copies them from w
 * (dims [M, Cg, K...]) into t (dims [M, Cg, K'...], of w's element type), for the passes that drop taps. */
void fc_rw_slice_taps(const FcTensor *w, FcTensor *t, int n, const int64_t *lo);

/* The blocked layout NCHW<B>c of passes/layout.c and layout_i8.c: x [N, C, H, W] (C % B == 0) as
 * [N, C/B, H, W, B] by a reshape and a transpose (a reshape alone when H = W = 1), y [N, M/B, H, W, B] back,
 * and the blocked value that v is fc_rw_from_blocked of (a reshape of a transpose (0, 1, 4, 2, 3) of a
 * [N, C/B, H, W, B] value), or NULL. NULL in, NULL out (a failed builder's value). */
FcValue *fc_rw_to_blocked(FcBuilder *b, FcValue *x, int64_t B);
FcValue *fc_rw_from_blocked(FcBuilder *b, FcValue *y);
FcValue *fc_rw_blocked_source(FcValue *v, int64_t B);
/* Records `msg` (from an inference hook or evaluator about `op`) in the verifier's form
 * "node '<loc>' (<mnemonic>): <what>", dropping the "<mnemonic>: " the hooks start with; a message
 * that already names its node is kept as it is. Returns `st`. */
FcStatus fc_rw_op_error(FcDiag *diag, const FcOp *op, FcStatus st, const char *msg);

#endif /* FLOWC_PASSES_REWRITE_H */
