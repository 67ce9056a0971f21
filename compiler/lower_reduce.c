/* lower_reduce.c — legalisers of reductions (Reduce*), ArgMax/ArgMin, the softmax family (Softmax,
 * LogSoftmax, Hardmax) and CumSum.
 *
 * Reduce* ops share one path: read the axes (the `axes` attribute, or the axes input for ReduceSum >= 13
 * and every Reduce* >= 18), normalise them (non-negative, sorted, distinct; none = all axes unless
 * noop_with_empty_axes), then build core reduce ops around an element-wise pre/post step:
 *   L1 = sum(|x|), L2 = sqrt(sum(x*x)), SumSquare = sum(x*x), LogSum = log(sum(x)),
 *   LogSumExp = m + log(sum(exp(x - m))) with m = max(x) over the axes (0 where m is infinite), which
 *   cannot overflow where the naive form does.
 * When nothing is reduced (rank-0 input, or noop_with_empty_axes with no axes) only the element-wise
 * part remains. Integer inputs of L2/LogSum/LogSumExp go through f64, as ONNX's reference computes
 * them in floating point and converts back.
 *
 * Softmax, LogSoftmax and Hardmax before opset 13 work on the input coerced to 2-D at `axis`
 * ([d0*..*d(axis-1), d(axis)*..*d(n-1)]); from 13 on they work along the single axis. Hardmax is
 * argmax compared with an iota along the axis, cast to the input's dtype (ties pick the first index).
 */
#include "onnx.h"

#include <stdlib.h>
#include <string.h>

static bool need_input(FcLower *l) {
  if (l->n_in >= 1 && l->in[0]) return true;
  fc_lx_error(l, "input 0 is required");
  return false;
}

/* ---- Reduce* ----------------------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Normalises `n` axes for `rank` into a new arena array: non-negative, sorted, distinct. Returns the
 * count, -1 on an out-of-range axis (error recorded). */
static int normalise_axes(FcLower *l, const int64_t *v, int n, int rank, int64_t **out) {
  int64_t *a = fc_lx_dims(l, n);
  for (int i = 0; i < n; i++)
    if (!fc_lx_axis(l, v[i], rank, &a[i])) return -1;
  qsort(a, (size_t)n, sizeof *a, cmp_i64);
  int m = 0;
  for (int i = 0; i < n; i++)
    if (m == 0 || a[i] != a[m - 1]) a[m++] = a[i];
  *out = a;
  return m;
}

/* The axes to reduce, or 0 axes when nothing is reduced. */
static int reduce_axes(FcLower *l, int rank, int64_t **out) {
  const int64_t *v = NULL;
  int n;
  if (l->n_in > 1 && l->in[1]) {
    n = fc_lx_const_ints(l, 1, &v);
    if (n < 0) return -1;
  } else {
    n = fc_lx_ints(l, "axes", &v);
    if (n < 0) n = 0;
  }
  if (n == 0) {
    if (fc_lx_int(l, "noop_with_empty_axes", 0) != 0) return 0;
    int64_t *all = fc_lx_dims(l, rank);
    for (int i = 0; i < rank; i++) all[i] = i;
    *out = all;
    return rank;
  }
  return normalise_axes(l, v, n, rank, out);
}

FcStatus fc_lower_reduce(FcLower *l) {
  FcLxReduce k = (FcLxReduce)l->arg; /* the table row's */
  if (!need_input(l)) return FC_ERR_INPUT;
  FcValue *x = l->in[0];
  FcDtype dt = x->type.dtype;
  int64_t *axes = NULL;
  int n = reduce_axes(l, x->type.rank, &axes);
  if (n < 0) return fc_lx_bail(l);
  bool keep = fc_lx_int(l, "keepdims", 1) != 0;
  FcBuilder *b = l->b;

  bool via_f64 = (k == FC_LX_REDUCE_L2 || k == FC_LX_REDUCE_LOGSUM || k == FC_LX_REDUCE_LOGSUMEXP) &&
                 !fc_dtype_is_float(dt);
  if (via_f64) {
    if (dt == FC_DT_BOOL) return fc_lx_error(l, "input must be numeric, not bool");
    x = fc_b_cast(b, x, FC_DT_F64);
  }
  FcValue *y;
  switch (k) {
  case FC_LX_REDUCE_SUM: case FC_LX_REDUCE_MEAN: case FC_LX_REDUCE_MAX: case FC_LX_REDUCE_MIN: case FC_LX_REDUCE_PROD: {
    static const FcOpKind core[] = {FC_OP_REDUCE_SUM, FC_OP_REDUCE_MEAN, FC_OP_REDUCE_MAX, FC_OP_REDUCE_MIN,
                                    FC_OP_REDUCE_PROD};
    y = n ? fc_b_reduce(b, core[k], x, n, axes, keep) : x;
    break;
  }
  case FC_LX_REDUCE_L1:
    y = fc_b_unary(b, FC_OP_ABS, x);
    if (n) y = fc_b_reduce(b, FC_OP_REDUCE_SUM, y, n, axes, keep);
    break;
  case FC_LX_REDUCE_L2:
    if (!n) {
      y = fc_b_unary(b, FC_OP_ABS, x);
      break;
    }
    y = fc_b_reduce(b, FC_OP_REDUCE_SUM, fc_b_binary(b, FC_OP_MUL, x, x), n, axes, keep);
    y = fc_b_unary(b, FC_OP_SQRT, y);
    break;
  case FC_LX_REDUCE_SUMSQ:
    y = fc_b_binary(b, FC_OP_MUL, x, x);
    if (n) y = fc_b_reduce(b, FC_OP_REDUCE_SUM, y, n, axes, keep);
    break;
  case FC_LX_REDUCE_LOGSUM:
    y = n ? fc_b_reduce(b, FC_OP_REDUCE_SUM, x, n, axes, keep) : x;
    y = fc_b_unary(b, FC_OP_LOG, y);
    break;
  case FC_LX_REDUCE_LOGSUMEXP: {
    if (!n) {
      y = x;
      break;
    }
    /* m is kept with reduced dims of size 1 so it broadcasts against x; an infinite m (all -inf, or a
     * +inf element) is replaced by 0 so x - m stays free of inf - inf. */
    FcValue *m = fc_b_reduce(b, FC_OP_REDUCE_MAX, x, n, axes, true);
    FcAttr inf_attrs[2] = {FC_A_INT(DETECT_NEGATIVE, 1), FC_A_INT(DETECT_POSITIVE, 1)};
    FcValue *isinf = fc_b_op1(b, FC_OP_ISINF, &m, 1, inf_attrs, 2);
    m = fc_b_select(b, isinf, fc_lx_scalar(l, m, 0), m);
    FcValue *e = fc_b_unary(b, FC_OP_EXP, fc_b_binary(b, FC_OP_SUB, x, m));
    y = fc_b_unary(b, FC_OP_LOG, fc_b_reduce(b, FC_OP_REDUCE_SUM, e, n, axes, keep));
    if (y && !keep) m = fc_b_reshape(b, m, y->type.rank, y->type.dims);
    y = fc_b_binary(b, FC_OP_ADD, y, m);
    break;
  }
  default: FC_UNREACHABLE();
  }
  if (via_f64) y = fc_b_cast(b, y, dt);
  l->out[0] = y;
  return fc_lx_finish(l);
}

/* ---- ArgMax / ArgMin --------------------------------------------------------------------------------- */

FcStatus fc_lower_argreduce(FcLower *l) {
  if (!need_input(l)) return FC_ERR_INPUT;
  FcOpKind k = (FcOpKind)l->arg; /* ARGMAX or ARGMIN, the table row's */
  FcValue *x = l->in[0];
  if (x->type.rank < 1) return fc_lx_error(l, "input must have rank >= 1");
  int64_t axis;
  if (!fc_lx_axis(l, fc_lx_int(l, "axis", 0), x->type.rank, &axis)) return fc_lx_bail(l);
  FcAttr a[3] = {FC_A_INT(AXIS, axis), FC_A_INT(KEEPDIMS, fc_lx_int(l, "keepdims", 1) != 0),
                 FC_A_INT(SELECT_LAST_INDEX, fc_lx_int(l, "select_last_index", 0) != 0)};
  l->out[0] = fc_b_op1(l->b, k, &x, 1, a, 3);
  return fc_lx_finish(l);
}

/* ---- Softmax / LogSoftmax / Hardmax ------------------------------------------------------------------ */

/* The input as the ops see it: before opset 13 coerced to 2-D at `axis` (unless axis is already the
 * last dim, where the 2-D view changes nothing), from 13 on unchanged. Sets *op_axis to the axis to
 * work along; returns NULL after an error. */
static FcValue *softmax_view(FcLower *l, FcValue *x, int64_t *op_axis) {
  int rank = x->type.rank;
  if (rank < 1) {
    fc_lx_error(l, "input must have rank >= 1");
    return NULL;
  }
  int64_t axis;
  if (!fc_lx_axis(l, fc_lx_int(l, "axis", l->opset < 13 ? 1 : -1), rank, &axis)) return NULL;
  if (l->opset >= 13 || axis == rank - 1) {
    *op_axis = axis;
    return x;
  }
  int64_t dims[2] = {1, 1};
  for (int i = 0; i < rank; i++)
    if (!fc_checked_mul(dims[i >= axis], x->type.dims[i], &dims[i >= axis])) {
      fc_lx_error(l, "input has too many elements");
      return NULL;
    }
  *op_axis = 1;
  return fc_b_reshape(l->b, x, 2, dims);
}

static FcValue *undo_view(FcLower *l, FcValue *y, const FcValue *x) {
  if (!y || y->type.rank == x->type.rank) return y;
  return fc_b_reshape(l->b, y, x->type.rank, x->type.dims);
}

FcStatus fc_lower_softmax(FcLower *l) {
  if (!need_input(l)) return FC_ERR_INPUT;
  FcOpKind k = (FcOpKind)l->arg; /* SOFTMAX or LOG_SOFTMAX, the table row's */
  int64_t axis;
  FcValue *v = softmax_view(l, l->in[0], &axis);
  if (!v) return fc_lx_bail(l);
  FcAttr a = FC_A_INT(AXIS, axis);
  l->out[0] = undo_view(l, fc_b_op1(l->b, k, &v, 1, &a, 1), l->in[0]);
  return fc_lx_finish(l);
}

FcStatus fc_lower_hardmax(FcLower *l) {
  if (!need_input(l)) return FC_ERR_INPUT;
  int64_t axis;
  FcValue *x = l->in[0], *v = softmax_view(l, x, &axis);
  if (!v) return fc_lx_bail(l);
  int rank = v->type.rank;
  int64_t d = v->type.dims[axis];
  if (d == 0) {
    l->out[0] = x; /* nothing to pick from: the (empty) input is its own result */
    return fc_lx_finish(l);
  }
  FcAttr a[3] = {FC_A_INT(AXIS, axis), FC_A_INT(KEEPDIMS, 1), FC_A_INT(SELECT_LAST_INDEX, 0)};
  FcValue *am = fc_b_op1(l->b, FC_OP_ARGMAX, &v, 1, a, 3);
  /* iota of shape [1, .., d, .., 1] along the axis */
  int64_t *shape = fc_lx_dims(l, rank);
  for (int i = 0; i < rank; i++) shape[i] = i == axis ? d : 1;
  FcArena *arena = &l->b->g->module->arena;
  FcType iota_t = fc_type_make(arena, FC_DT_I64, rank, shape);
  int64_t nbytes;
  if (!fc_type_nbytes(&iota_t, &nbytes) || nbytes > FC_DEFAULT_MAX_TENSOR_BYTES)
    return fc_lx_error(l, "axis of %lld elements is too long", (long long)d);
  FcTensor *iota = fc_tensor_new(arena, iota_t);
  for (int64_t i = 0; i < d; i++) fc_tensor_set_i64(iota, i, i);
  FcValue *hit = fc_b_binary(l->b, FC_OP_EQUAL, am, fc_b_const_tensor(l->b, iota));
  l->out[0] = undo_view(l, fc_b_cast(l->b, hit, x->type.dtype), x);
  return fc_lx_finish(l);
}

/* ---- CumSum -------------------------------------------------------------------------------------- */

FcStatus fc_lower_cumsum(FcLower *l) {
  if (l->n_in < 2 || !l->in[0] || !l->in[1]) return fc_lx_error(l, "expects inputs x and axis");
  FcValue *x = l->in[0];
  const int64_t *v;
  int n = fc_lx_const_ints(l, 1, &v);
  if (n < 0) return fc_lx_bail(l);
  if (n != 1) return fc_lx_error(l, "axis must hold one value, holds %d", n);
  if (x->type.rank < 1) return fc_lx_error(l, "input must have rank >= 1");
  int64_t axis;
  if (!fc_lx_axis(l, v[0], x->type.rank, &axis)) return fc_lx_bail(l);
  FcAttr a[3] = {FC_A_INT(AXIS, axis), FC_A_INT(EXCLUSIVE, fc_lx_int(l, "exclusive", 0) != 0),
                 FC_A_INT(REVERSE, fc_lx_int(l, "reverse", 0) != 0)};
  l->out[0] = fc_b_op1(l->b, FC_OP_CUMSUM, &x, 1, a, 3);
  return fc_lx_finish(l);
}
