/* lower_loss.c — legalisers of NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
 *
 * Both follow ONNX's reference implementation. For input [N, C, d1..dk] and target [N, d1..dk]:
 *   picked[n, d] = input[n, target[n, d], d]   (gather_elements along axis 1 with target as [N, 1, d..])
 *   loss = -picked, times weight[target] when class weights are given;
 *   with ignore_index, ignored positions get loss 0 and weight 0, and gather with index 0 instead
 *   (ignore_index may lie outside [0, C)), so no out-of-range index reaches gather.
 * reduction: none keeps loss; sum adds it up; mean divides the sum by the sum of the weights when
 * weights or ignore_index are in play (the reference's weighted mean) and is a plain mean otherwise.
 * SoftmaxCrossEntropyLoss is the same on log_softmax(scores) along axis 1, which it may also return.
 */
#include "onnx.h"

#include <string.h>

/* A rank-0 integer constant holding `v` exactly; false when `v` does not fit `dt`. */
static bool int_scalar(FcLower *l, FcDtype dt, int64_t v, FcValue **out) {
  if (dt == FC_DT_I32 && (v < INT32_MIN || v > INT32_MAX)) return false;
  FcArena *a = &l->b->g->module->arena;
  FcTensor *t = fc_tensor_new(a, fc_type_make(a, dt, 0, NULL));
  fc_tensor_set_i64(t, 0, v);
  *out = fc_b_const_tensor(l->b, t);
  return true;
}

/* The loss of `input` (log-probabilities [N, C, d..]) against `target`, reduced as the node says. */
static FcValue *nll(FcLower *l, FcValue *input, FcValue *target, FcValue *weight) {
  FcBuilder *b = l->b;
  if (!input) return NULL;
  const FcType *it = &input->type, *tt = &target->type;
  if (!fc_dtype_is_float(it->dtype)) {
    fc_lx_error(l, "input must have a float type, not %s", fc_dtype_name(it->dtype));
    return NULL;
  }
  if (tt->dtype != FC_DT_I32 && tt->dtype != FC_DT_I64) {
    fc_lx_error(l, "target must be int32 or int64, not %s", fc_dtype_name(tt->dtype));
    return NULL;
  }
  bool shapes_ok = it->rank >= 2 && tt->rank == it->rank - 1 && tt->dims[0] == it->dims[0];
  for (int i = 1; shapes_ok && i < tt->rank; i++) shapes_ok = tt->dims[i] == it->dims[i + 1];
  if (!shapes_ok) {
    char b1[256], b2[256];
    fc_lx_error(l, "target %s does not match input %s (expects [N, d1..] for [N, C, d1..])",
                fc_type_str(tt, b1, sizeof b1), fc_type_str(it, b2, sizeof b2));
    return NULL;
  }
  if (weight && (weight->type.rank != 1 || weight->type.dims[0] != it->dims[1] || weight->type.dtype != it->dtype)) {
    fc_lx_error(l, "weight must be 1-D of the %lld classes in the input's dtype", (long long)it->dims[1]);
    return NULL;
  }
  const char *reduction = fc_lx_str(l, "reduction", "mean");
  if (strcmp(reduction, "none") != 0 && strcmp(reduction, "sum") != 0 && strcmp(reduction, "mean") != 0) {
    fc_lx_error(l, "reduction must be none, sum or mean, is \"%s\"", reduction);
    return NULL;
  }

  FcValue *idx = target, *ignored = NULL, *ii;
  if (fc_lx_has_attr(l, "ignore_index") && int_scalar(l, tt->dtype, fc_lx_int(l, "ignore_index", 0), &ii)) {
    ignored = fc_b_binary(b, FC_OP_EQUAL, target, ii);
    FcValue *zero;
    int_scalar(l, tt->dtype, 0, &zero);
    idx = fc_b_select(b, ignored, zero, target);
  }
  int64_t *gdims = fc_lx_dims(l, it->rank);
  gdims[0] = tt->dims[0];
  gdims[1] = 1;
  for (int i = 1; i < tt->rank; i++) gdims[i + 1] = tt->dims[i];
  FcValue *ops[2] = {input, fc_b_reshape(b, idx, it->rank, gdims)};
  FcAttr axis1 = FC_A_INT(AXIS, 1);
  FcValue *picked = fc_b_op1(b, FC_OP_GATHER_ELEMENTS, ops, 2, &axis1, 1);
  FcValue *loss = fc_b_unary(b, FC_OP_NEG, fc_b_reshape(b, picked, tt->rank, tt->dims));

  FcValue *w = NULL;
  if (weight) {
    FcValue *wops[2] = {weight, idx};
    FcAttr axis0 = FC_A_INT(AXIS, 0);
    w = fc_b_op1(b, FC_OP_GATHER, wops, 2, &axis0, 1);
  }
  if (ignored) {
    /* zero the loss itself too: the index-0 stand-in may pick an infinite log-probability */
    loss = fc_b_select(b, ignored, fc_lx_scalar(l, input, 0), loss);
    FcValue *keep = w ? w : fc_lx_scalar(l, input, 1);
    w = fc_b_select(b, ignored, fc_lx_scalar(l, input, 0), keep);
  }
  if (weight) loss = fc_b_binary(b, FC_OP_MUL, loss, w);
  if (strcmp(reduction, "none") == 0) return loss;

  int64_t *all = fc_lx_dims(l, tt->rank);
  for (int i = 0; i < tt->rank; i++) all[i] = i;
  if (strcmp(reduction, "sum") == 0) return fc_b_reduce(b, FC_OP_REDUCE_SUM, loss, tt->rank, all, false);
  if (!w) return fc_b_reduce(b, FC_OP_REDUCE_MEAN, loss, tt->rank, all, false);
  FcValue *num = fc_b_reduce(b, FC_OP_REDUCE_SUM, loss, tt->rank, all, false);
  FcValue *den = fc_b_reduce(b, FC_OP_REDUCE_SUM, w, w->type.rank, all, false);
  return fc_b_binary(b, FC_OP_DIV, num, den);
}

static bool need_two(FcLower *l) {
  if (l->n_in >= 2 && l->in[0] && l->in[1]) return true;
  fc_lx_error(l, "expects an input and a target");
  return false;
}

FcStatus fc_lower_nll_loss(FcLower *l) {
  if (!need_two(l)) return FC_ERR_INPUT;
  FcValue *w = l->n_in > 2 ? l->in[2] : NULL;
  l->out[0] = nll(l, l->in[0], l->in[1], w);
  if (!l->out[0]) return fc_lx_bail(l);
  return fc_lx_finish(l);
}

FcStatus fc_lower_softmax_cross_entropy(FcLower *l) {
  if (!need_two(l)) return FC_ERR_INPUT;
  FcValue *x = l->in[0], *w = l->n_in > 2 ? l->in[2] : NULL;
  if (x->type.rank < 2) return fc_lx_error(l, "scores must have rank >= 2 (N, C, ...), has %d", x->type.rank);
  FcAttr axis1 = FC_A_INT(AXIS, 1);
  FcValue *log_prob = fc_b_op1(l->b, FC_OP_LOG_SOFTMAX, &x, 1, &axis1, 1);
  l->out[0] = nll(l, log_prob, l->in[1], w);
  if (!l->out[0]) return fc_lx_bail(l);
  if (fc_lx_out_named(l, 1)) l->out[1] = log_prob;
  return fc_lx_finish(l);
}
