/* sbp_rules.h — the SBP signature rules of the core ops (sbp_rules.def, sbp_rules.c), used by the sbp pass.
 *
 * A signature says how a tensor of an SBP program lies on the ranks of one group of size G: B (every rank
 * holds all of it), S(d) (rank r holds chunk r of G equal chunks along dim d) or P(op) (every rank holds a
 * tensor of the full shape, and the element-wise op over the ranks is the value). A rule looks at the
 * signatures an op's operands have and picks the ones it takes (the pass boxes an operand whose signature
 * differs) and the ones its results then have; an op without a rule, or a rule that finds no split it can
 * keep, takes B everywhere. Rules see GLOBAL types (the whole tensors): the pass rewrites to local shapes
 * after the rule has chosen.
 */
#ifndef FLOWC_PASSES_SBP_RULES_H
#define FLOWC_PASSES_SBP_RULES_H

#include "ir.h"

typedef enum FcSbpKind { FC_SBP_B, FC_SBP_S, FC_SBP_P } FcSbpKind;
typedef enum FcSbpReduce { FC_SBP_SUM, FC_SBP_MAX, FC_SBP_MIN } FcSbpReduce;

typedef struct FcSbp {
  FcSbpKind kind;
  int dim;            /* S: the split dim */
  FcSbpReduce reduce; /* P: how the ranks' tensors combine */
} FcSbp;

#define FC_SBP_BCAST ((FcSbp){.kind = FC_SBP_B})
#define FC_SBP_SPLIT(d) ((FcSbp){.kind = FC_SBP_S, .dim = (d)})
#define FC_SBP_PARTIAL(r) ((FcSbp){.kind = FC_SBP_P, .reduce = (r)})

bool fc_sbp_equal(FcSbp a, FcSbp b);
/* "B", "S(2)", "P(sum)" into buf; returns buf. */
const char *fc_sbp_str(FcSbp s, char *buf, size_t cap);
const char *fc_sbp_reduce_name(FcSbpReduce r); /* "sum", "max", "min": the boxing ops' reduce attribute */

/* What a rule sees and fills. need[] and out[] start as all B; a rule that returns false must leave them so. */
typedef struct FcSbpRuleCtx {
  const FcOp *op;
  int64_t g;                    /* group size */
  const FcType *const *in_type; /* operand i's global type (NULL: an absent optional operand) */
  const FcType *out_type;       /* result j's global type, out_type[j] */
  const FcSbp *in;              /* operand i's signature */
  FcSbp *need;                  /* the signature operand i is taken in */
  FcSbp *out;                   /* result j's signature */
} FcSbpRuleCtx;

typedef bool (*FcSbpRuleFn)(FcSbpRuleCtx *c);

/* The rule of an op kind (sbp_rules.def), or NULL: B in, B out. */
FcSbpRuleFn fc_sbp_rule(FcOpKind kind);

/* Tensor parallelism (flowc build --sbp tensor), Megatron's column-then-row split: the signatures to
 * prefer for an op whose operands are all B, where a split of its constant weight starts a parallel region
 * (matmul by a constant [K, N] weight: weight S(1), result S(last); conv by a constant weight: output
 * channels, weight and bias S(0), result S(1)). False: nothing to start here. */
bool fc_sbp_tensor_start(FcSbpRuleCtx *c);

#endif /* FLOWC_PASSES_SBP_RULES_H */
