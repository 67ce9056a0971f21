/* lower_gather.c — legalisers for indexing ops.
 *
 * Gather, GatherElements, GatherND, ScatterElements (and its opset <= 10 alias Scatter), ScatterND,
 * OneHot, TopK and ReverseSequence each map onto one core op; the legaliser's job is to normalise axes
 * to [0, rank), fill in the defaults older opsets implied, and turn inputs the core op takes as
 * attributes (TopK's k, OneHot's depth) into constants. Compress with a constant condition is a gather
 * with the constant list of selected positions.
 */
#include "onnx.h"

#include <string.h>

static FcStatus int_indices(FcLower *l, const FcValue *idx) {
  if (idx->type.dtype != FC_DT_I32 && idx->type.dtype != FC_DT_I64)
    return fc_lx_error(l, "indices must be int32 or int64, got %s", fc_dtype_name(idx->type.dtype));
  return FC_OK;
}

/* Gather and GatherElements: the core op (the table row's) takes the data, the indices and `axis`. */
FcStatus fc_lower_gather(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 2);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  if (x->type.rank < 1) return fc_lx_error(l, "data must have rank >= 1");
  if ((st = int_indices(l, l->in[1])) != FC_OK) return st;
  int64_t axis;
  if (!fc_lx_axis(l, fc_lx_int(l, "axis", 0), x->type.rank, &axis)) return fc_lx_bail(l);
  FcAttr a = FC_A_INT(AXIS, axis);
  l->out[0] = fc_b_op1(l->b, (FcOpKind)l->arg, l->in, 2, &a, 1);
  return fc_lx_finish(l);
}

FcStatus fc_lower_gather_nd(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 2);
  if (st != FC_OK) return st;
  if ((st = int_indices(l, l->in[1])) != FC_OK) return st;
  int64_t bd = l->opset >= 12 ? fc_lx_int(l, "batch_dims", 0) : 0;
  int r = l->in[0]->type.rank, q = l->in[1]->type.rank;
  if (bd < 0 || bd >= r || bd >= q)
    return fc_lx_error(l, "batch_dims %lld must be below both ranks (%d, %d)", (long long)bd, r, q);
  FcAttr a = FC_A_INT(BATCH_DIMS, bd);
  l->out[0] = fc_b_op1(l->b, FC_OP_GATHER_ND, l->in, 2, &a, 1);
  return fc_lx_finish(l);
}

/* reduction: "none" before opset 16, then the attribute (max/min arrive in opset 18; the core op has them
 * too, so they are accepted). */
static FcStatus reduction_attr(FcLower *l, const char **red) {
  *red = l->opset >= 16 ? fc_lx_str(l, "reduction", "none") : "none";
  if (strcmp(*red, "none") && strcmp(*red, "add") && strcmp(*red, "mul") && strcmp(*red, "max") && strcmp(*red, "min"))
    return fc_lx_error(l, "unknown reduction '%s'", *red);
  return FC_OK;
}

/* ScatterElements, and Scatter (deprecated in opset 11, same semantics). */
FcStatus fc_lower_scatter_elements(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 3);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  if (x->type.rank < 1) return fc_lx_error(l, "data must have rank >= 1");
  if ((st = int_indices(l, l->in[1])) != FC_OK) return st;
  int64_t axis;
  if (!fc_lx_axis(l, fc_lx_int(l, "axis", 0), x->type.rank, &axis)) return fc_lx_bail(l);
  const char *red;
  if ((st = reduction_attr(l, &red)) != FC_OK) return st;
  FcAttr a[2] = {FC_A_INT(AXIS, axis), FC_A_STR(REDUCTION, red)};
  l->out[0] = fc_b_op1(l->b, FC_OP_SCATTER_ELEMENTS, l->in, 3, a, 2);
  return fc_lx_finish(l);
}

FcStatus fc_lower_scatter_nd(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 3);
  if (st != FC_OK) return st;
  if ((st = int_indices(l, l->in[1])) != FC_OK) return st;
  const char *red;
  if ((st = reduction_attr(l, &red)) != FC_OK) return st;
  FcAttr a = FC_A_STR(REDUCTION, red);
  l->out[0] = fc_b_op1(l->b, FC_OP_SCATTER_ND, l->in, 3, &a, 1);
  return fc_lx_finish(l);
}

/* OneHot: depth becomes the core op's attribute (cast to int64 as the spec says, whatever its dtype);
 * non-integer indices are cast to int64; axis indexes the result (rank r + 1). */
FcStatus fc_lower_one_hot(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 3);
  if (st != FC_OK) return st;
  FcValue *idx = l->in[0], *values = l->in[2];
  const FcTensor *dt = fc_lx_const_input(l, 1);
  if (!dt) return fc_lx_bail(l);
  int64_t n;
  if (!fc_type_numel(&dt->type, &n) || n != 1 || dt->type.rank > 1) return fc_lx_error(l, "depth must be a scalar");
  int64_t depth = fc_tensor_get_i64(dt, 0);
  if (depth < 1 || depth > ((int64_t)1 << 40)) return fc_lx_error(l, "depth %lld is out of range", (long long)depth);
  if (values->type.rank != 1 || values->type.dims[0] != 2)
    return fc_lx_error(l, "values must be a 1-D tensor of 2 elements");
  int64_t axis;
  if (!fc_lx_axis(l, fc_lx_int(l, "axis", -1), idx->type.rank + 1, &axis)) return fc_lx_bail(l);
  if (!fc_dtype_is_int(idx->type.dtype)) idx = fc_b_cast(l->b, idx, FC_DT_I64);
  FcValue *ops[2] = {idx, values};
  FcAttr a[2] = {FC_A_INT(AXIS, axis), FC_A_INT(DEPTH, depth)};
  l->out[0] = fc_b_op1(l->b, FC_OP_ONE_HOT, ops, 2, a, 2);
  return fc_lx_finish(l);
}

/* TopK: k from the attribute (opset 1) or a constant one-element input (10+); largest/sorted from 11. */
FcStatus fc_lower_topk(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, l->opset < 10 ? 1 : 2);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  if (x->type.rank < 1) return fc_lx_error(l, "input must have rank >= 1");
  int64_t k;
  if (l->opset < 10) {
    if (!fc_lx_has_attr(l, "k")) return fc_lx_error(l, "attribute 'k' is required");
    k = fc_lx_int(l, "k", 0);
  } else {
    const int64_t *kv;
    int n = fc_lx_const_ints(l, 1, &kv);
    if (n < 0) return fc_lx_bail(l);
    if (n != 1) return fc_lx_error(l, "k must hold one value, got %d", n);
    k = kv[0];
  }
  int64_t axis;
  if (!fc_lx_axis(l, fc_lx_int(l, "axis", -1), x->type.rank, &axis)) return fc_lx_bail(l);
  if (k < 0 || k > x->type.dims[axis])
    return fc_lx_error(l, "k = %lld is out of range for an axis of %lld", (long long)k, (long long)x->type.dims[axis]);
  int64_t largest = l->opset >= 11 ? fc_lx_int(l, "largest", 1) : 1,
          sorted = l->opset >= 11 ? fc_lx_int(l, "sorted", 1) : 1;
  FcAttr a[4] = {FC_A_INT(AXIS, axis), FC_A_INT(K, k), FC_A_INT(LARGEST, largest != 0), FC_A_INT(SORTED, sorted != 0)};
  FcOp *op = fc_b_op(l->b, FC_OP_TOPK, &x, 1, 2, a, 4);
  if (op) {
    l->out[0] = &op->results[0];
    if (l->n_out > 1) l->out[1] = &op->results[1];
  }
  return fc_lx_finish(l);
}

FcStatus fc_lower_reverse_sequence(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 2);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  if (x->type.rank < 2) return fc_lx_error(l, "input must have rank >= 2");
  int64_t ba = fc_lx_int(l, "batch_axis", 1), ta = fc_lx_int(l, "time_axis", 0);
  if (!((ba == 0 && ta == 1) || (ba == 1 && ta == 0)))
    return fc_lx_error(l, "batch_axis and time_axis must be 0 and 1 in some order");
  if ((st = int_indices(l, l->in[1])) != FC_OK) return st;
  FcAttr a[2] = {FC_A_INT(BATCH_AXIS, ba), FC_A_INT(TIME_AXIS, ta)};
  l->out[0] = fc_b_op1(l->b, FC_OP_REVERSE_SEQUENCE, l->in, 2, a, 2);
  return fc_lx_finish(l);
}

/* Compress with a constant condition: gather(x, positions where condition is true) along axis, or
 * along the flattened input when no axis is given. A condition shorter than the axis selects nothing
 * beyond its end; a true entry beyond the axis is an error (as in numpy.compress). */
FcStatus fc_lower_compress(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 2);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  if (x->type.rank < 1) return fc_lx_error(l, "input must have rank >= 1");
  const FcTensor *cond = fc_lx_const_input(l, 1);
  if (!cond) return fc_lx_bail(l);
  if (cond->type.rank != 1) return fc_lx_error(l, "condition must be 1-D");
  int64_t axis = 0;
  if (fc_lx_has_attr(l, "axis")) {
    if (!fc_lx_axis(l, fc_lx_int(l, "axis", 0), x->type.rank, &axis)) return fc_lx_bail(l);
  } else {
    int64_t numel;
    if (!fc_type_numel(&x->type, &numel)) return fc_lx_error(l, "input is too large");
    x = fc_b_reshape(l->b, x, 1, &numel);
    if (!x) return fc_lx_finish(l);
  }
  int64_t dim = x->type.dims[axis], len = cond->type.dims[0], count = 0;
  for (int64_t i = 0; i < len; i++)
    if (fc_tensor_get_f64(cond, i) != 0) {
      if (i >= dim)
        return fc_lx_error(l, "condition selects index %lld beyond the axis size %lld", (long long)i, (long long)dim);
      count++;
    }
  int64_t *pos = FC_NEW_ARRAY(fc_lx_arena(l), int64_t, (size_t)(count > 0 ? count : 1));
  for (int64_t i = 0, k = 0; i < len; i++)
    if (fc_tensor_get_f64(cond, i) != 0) pos[k++] = i;
  FcValue *idx = fc_b_const(l->b, FC_DT_I64, 1, &count, pos);
  FcValue *ops[2] = {x, idx};
  FcAttr a = FC_A_INT(AXIS, axis);
  l->out[0] = fc_b_op1(l->b, FC_OP_GATHER, ops, 2, &a, 1);
  return fc_lx_finish(l);
}
