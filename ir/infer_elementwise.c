/* infer_elementwise.c — inference hooks of element-wise ops, casts, selects and reductions.
 *
 * Element-wise results keep their operand's shape (unary) or the NumPy broadcast of the operands'
 * shapes (binary, select); the dtype rules follow ONNX's type constraints, checked here so the
 * evaluators and code generators can rely on them. Ops that share the `same` hook but carry an axis
 * (cumsum) or extra operands (scatter, reverse_sequence) are validated per kind, since their result
 * type is the first operand's whatever else holds.
 */
#include "infer_internal.h"

static FcStatus check_dtype_not_bool(const FcOp *op, const FcType *t, FcDiag *diag) {
  if (t->dtype == FC_DT_BOOL) return fc_ih_fail(op, diag, "operand type must be numeric, not i1");
  return FC_OK;
}

static bool is_index_dtype(FcDtype dt) { return dt == FC_DT_I32 || dt == FC_DT_I64; }

static FcStatus check_scatter(FcOp *op, FcDiag *diag) {
  const FcType *x = fc_ih_in(op, 0), *idx = fc_ih_in(op, 1), *upd = fc_ih_in(op, 2);
  char b1[256], b2[256];
  if (!is_index_dtype(idx->dtype))
    return fc_ih_fail(op, diag, "indices must be i32 or i64, not %s", fc_dtype_name(idx->dtype));
  if (upd->dtype != x->dtype)
    return fc_ih_fail(op, diag, "updates dtype %s differs from data dtype %s", fc_dtype_name(upd->dtype),
                         fc_dtype_name(x->dtype));
  static const char *const reductions[] = {"none", "add", "mul", "max", "min", NULL};
  const char *red;
  FC_ITRY(fc_ih_choice(op, FC_ATTR_REDUCTION, reductions, &red, diag));
  if (op->kind == FC_OP_SCATTER_ELEMENTS) {
    int64_t axis;
    if (x->rank < 1) return fc_ih_fail(op, diag, "data must have rank >= 1");
    FC_ITRY(fc_ih_axis(op, FC_ATTR_AXIS, x->rank, &axis, diag));
    if (idx->rank != x->rank || !fc_shape_equal(idx, upd))
      return fc_ih_fail(op, diag, "indices %s and updates %s must have one shape of data's rank %d",
                           fc_type_str(idx, b1, sizeof b1), fc_type_str(upd, b2, sizeof b2), x->rank);
    for (int i = 0; i < x->rank; i++)
      if (i != axis && idx->dims[i] > x->dims[i])
        return fc_ih_fail(op, diag, "indices dim %d is %lld, data has %lld", i, (long long)idx->dims[i],
                             (long long)x->dims[i]);
    return FC_OK;
  }
  /* scatter_nd: updates = indices.shape[:-1] + data.shape[k:], k = indices.shape[-1] */
  if (x->rank < 1 || idx->rank < 1) return fc_ih_fail(op, diag, "data and indices must have rank >= 1");
  int64_t k = idx->dims[idx->rank - 1];
  if (k < 1 || k > x->rank)
    return fc_ih_fail(op, diag, "indices last dim %lld must be in [1, %d]", (long long)k, x->rank);
  int want_rank = idx->rank - 1 + x->rank - (int)k;
  bool ok = upd->rank == want_rank;
  for (int i = 0; ok && i < idx->rank - 1; i++) ok = upd->dims[i] == idx->dims[i];
  for (int i = 0; ok && i < x->rank - (int)k; i++) ok = upd->dims[idx->rank - 1 + i] == x->dims[k + i];
  if (!ok)
    return fc_ih_fail(op, diag, "updates %s do not match indices %s and data", fc_type_str(upd, b1, sizeof b1),
                         fc_type_str(idx, b2, sizeof b2));
  return FC_OK;
}

static FcStatus check_reverse_sequence(FcOp *op, FcDiag *diag) {
  const FcType *x = fc_ih_in(op, 0), *lens = fc_ih_in(op, 1);
  if (x->rank < 2) return fc_ih_fail(op, diag, "input must have rank >= 2, has %d", x->rank);
  int64_t ba, ta;
  FC_ITRY(fc_ih_axis(op, FC_ATTR_BATCH_AXIS, x->rank, &ba, diag));
  FC_ITRY(fc_ih_axis(op, FC_ATTR_TIME_AXIS, x->rank, &ta, diag));
  if (ba == ta) return fc_ih_fail(op, diag, "batch_axis and time_axis are both %lld", (long long)ba);
  if (!is_index_dtype(lens->dtype))
    return fc_ih_fail(op, diag, "sequence lengths must be i32 or i64, not %s", fc_dtype_name(lens->dtype));
  if (lens->rank != 1 || lens->dims[0] != x->dims[ba])
    return fc_ih_fail(op, diag, "sequence lengths must be 1-D of the batch size %lld", (long long)x->dims[ba]);
  return FC_OK;
}

FcStatus fc_infer_same(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  switch (op->kind) {
  case FC_OP_NEG: case FC_OP_ABS: case FC_OP_SIGN: case FC_OP_RELU:
    FC_ITRY(check_dtype_not_bool(op, x, diag));
    break;
  case FC_OP_CUMSUM: {
    int64_t axis, flag;
    FC_ITRY(check_dtype_not_bool(op, x, diag));
    FC_ITRY(fc_ih_axis(op, FC_ATTR_AXIS, x->rank, &axis, diag));
    FC_ITRY(fc_ih_flag(op, FC_ATTR_EXCLUSIVE, &flag, diag));
    FC_ITRY(fc_ih_flag(op, FC_ATTR_REVERSE, &flag, diag));
    break;
  }
  case FC_OP_SCATTER_ELEMENTS: case FC_OP_SCATTER_ND: FC_ITRY(check_scatter(op, diag)); break;
  case FC_OP_REVERSE_SEQUENCE: FC_ITRY(check_reverse_sequence(op, diag)); break;
  default: break;
  }
  fc_ih_set(op, 0, arena, x->dtype, x->rank, x->dims);
  return FC_OK;
}

FcStatus fc_infer_same_float(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  if (!fc_dtype_is_float(x->dtype))
    return fc_ih_fail(op, diag, "operand must have a float type, not %s", fc_dtype_name(x->dtype));
  if (op->kind == FC_OP_SOFTMAX || op->kind == FC_OP_LOG_SOFTMAX) {
    int64_t axis;
    FC_ITRY(fc_ih_axis(op, FC_ATTR_AXIS, x->rank, &axis, diag));
  }
  fc_ih_set(op, 0, arena, x->dtype, x->rank, x->dims);
  return FC_OK;
}

FcStatus fc_infer_same_int(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  if (!fc_dtype_is_int(x->dtype))
    return fc_ih_fail(op, diag, "operand must have an integer type, not %s", fc_dtype_name(x->dtype));
  fc_ih_set(op, 0, arena, x->dtype, x->rank, x->dims);
  return FC_OK;
}

FcStatus fc_infer_same_bool(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  if (x->dtype != FC_DT_BOOL) return fc_ih_fail(op, diag, "operand must be i1, not %s", fc_dtype_name(x->dtype));
  fc_ih_set(op, 0, arena, x->dtype, x->rank, x->dims);
  return FC_OK;
}

FcStatus fc_infer_to_bool(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  if (!fc_dtype_is_float(x->dtype))
    return fc_ih_fail(op, diag, "operand must have a float type, not %s", fc_dtype_name(x->dtype));
  if (op->kind == FC_OP_ISINF) {
    int64_t flag;
    FC_ITRY(fc_ih_flag(op, FC_ATTR_DETECT_NEGATIVE, &flag, diag));
    FC_ITRY(fc_ih_flag(op, FC_ATTR_DETECT_POSITIVE, &flag, diag));
  }
  fc_ih_set(op, 0, arena, FC_DT_BOOL, x->rank, x->dims);
  return FC_OK;
}

FcStatus fc_infer_cast(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcAttr *to = fc_op_attr(op, FC_ATTR_TO);
  if (!to) return fc_ih_fail(op, diag, "missing attribute 'to'");
  if (to->kind != FC_AK_TYPE || (unsigned)to->type >= FC_DT_COUNT)
    return fc_ih_fail(op, diag, "attribute 'to' must be an element type");
  const FcType *x = fc_ih_in(op, 0);
  fc_ih_set(op, 0, arena, to->type, x->rank, x->dims);
  return FC_OK;
}

/* Broadcasts operands [0, n) into result 0's shape with dtype `dt`. */
static FcStatus set_broadcast(FcOp *op, FcArena *arena, int first, int n, FcDtype dt, FcDiag *diag) {
  FcType acc = *fc_ih_in(op, first);
  for (int i = first + 1; i < first + n; i++) {
    const FcType *y = fc_ih_in(op, i);
    int r;
    const int64_t *d;
    if (!fc_broadcast_shapes(arena, &acc, y, &r, &d)) {
      char b1[256], b2[256];
      FcType xs = acc, ys = *y;
      xs.dtype = ys.dtype = fc_ih_in(op, first)->dtype;
      return fc_ih_fail(op, diag, "shapes %s and %s do not broadcast", fc_type_str(&xs, b1, sizeof b1),
                           fc_type_str(&ys, b2, sizeof b2));
    }
    acc.rank = r;
    acc.dims = d;
  }
  fc_ih_set(op, 0, arena, dt, acc.rank, acc.dims);
  return FC_OK;
}

static FcStatus check_same_dtype(const FcOp *op, FcDiag *diag) {
  FcDtype a = fc_ih_in(op, 0)->dtype, b = fc_ih_in(op, 1)->dtype;
  if (a != b) return fc_ih_fail(op, diag, "operand dtypes differ (%s and %s)", fc_dtype_name(a), fc_dtype_name(b));
  return FC_OK;
}

FcStatus fc_infer_binary(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  FC_ITRY(check_same_dtype(op, diag));
  FcDtype dt = fc_ih_in(op, 0)->dtype;
  FC_ITRY(check_dtype_not_bool(op, fc_ih_in(op, 0), diag));
  if (op->kind == FC_OP_MOD) {
    int64_t fmod;
    FC_ITRY(fc_ih_flag(op, FC_ATTR_FMOD, &fmod, diag));
  }
  return set_broadcast(op, arena, 0, 2, dt, diag);
}

FcStatus fc_infer_pow(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  FC_ITRY(check_dtype_not_bool(op, fc_ih_in(op, 0), diag));
  FC_ITRY(check_dtype_not_bool(op, fc_ih_in(op, 1), diag));
  return set_broadcast(op, arena, 0, 2, fc_ih_in(op, 0)->dtype, diag);
}

FcStatus fc_infer_binary_int(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  FC_ITRY(check_same_dtype(op, diag));
  FcDtype dt = fc_ih_in(op, 0)->dtype;
  if (!fc_dtype_is_int(dt)) return fc_ih_fail(op, diag, "operands must have an integer type, not %s", fc_dtype_name(dt));
  return set_broadcast(op, arena, 0, 2, dt, diag);
}

/* and/or/xor are logical on i1 and bitwise on integers (ONNX BitwiseAnd/Or/Xor lower to them). */
FcStatus fc_infer_binary_bool(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  FC_ITRY(check_same_dtype(op, diag));
  FcDtype dt = fc_ih_in(op, 0)->dtype;
  if (dt != FC_DT_BOOL && !fc_dtype_is_int(dt))
    return fc_ih_fail(op, diag, "operands must be i1 or integers, not %s", fc_dtype_name(dt));
  return set_broadcast(op, arena, 0, 2, dt, diag);
}

FcStatus fc_infer_compare(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  FC_ITRY(check_same_dtype(op, diag));
  return set_broadcast(op, arena, 0, 2, FC_DT_BOOL, diag);
}

FcStatus fc_infer_select(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *c = fc_ih_in(op, 0), *a = fc_ih_in(op, 1), *b = fc_ih_in(op, 2);
  if (c->dtype != FC_DT_BOOL) return fc_ih_fail(op, diag, "condition must be i1, not %s", fc_dtype_name(c->dtype));
  if (a->dtype != b->dtype)
    return fc_ih_fail(op, diag, "operand dtypes differ (%s and %s)", fc_dtype_name(a->dtype), fc_dtype_name(b->dtype));
  return set_broadcast(op, arena, 0, 3, a->dtype, diag);
}

FcStatus fc_infer_reduce(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  if (x->dtype == FC_DT_BOOL && op->kind != FC_OP_REDUCE_MAX && op->kind != FC_OP_REDUCE_MIN)
    return fc_ih_fail(op, diag, "operand type must be numeric, not i1");
  const int64_t *axes;
  int n;
  int64_t keep;
  FC_ITRY(fc_ih_ints(op, FC_ATTR_AXES, &axes, &n, diag));
  FC_ITRY(fc_ih_flag(op, FC_ATTR_KEEPDIMS, &keep, diag));
  if (n == 0) return fc_ih_fail(op, diag, "axes is empty");
  for (int i = 0; i < n; i++) {
    if (axes[i] < 0 || axes[i] >= x->rank)
      return fc_ih_fail(op, diag, "axis %lld out of range for rank %d", (long long)axes[i], x->rank);
    if (i > 0 && axes[i] <= axes[i - 1]) return fc_ih_fail(op, diag, "axes must be sorted and distinct");
  }
  int64_t *d = fc_ih_dims(arena, x->rank), count = 1;
  int r = 0, k = 0;
  for (int i = 0; i < x->rank; i++) {
    bool reduced = k < n && axes[k] == i;
    if (reduced) k++, count = x->dims[i] == 0 ? 0 : count;
    if (!reduced) d[r++] = x->dims[i];
    else if (keep) d[r++] = 1;
  }
  if (x->quant || fc_op_attr(op, FC_ATTR_QTYPE)) return fc_ih_set_quant_mean(op, arena, count, r, d, diag);
  fc_ih_set(op, 0, arena, x->dtype, r, d);
  return FC_OK;
}

FcStatus fc_infer_argreduce(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  int64_t axis, keep, last;
  if (x->rank < 1) return fc_ih_fail(op, diag, "operand must have rank >= 1");
  FC_ITRY(fc_ih_axis(op, FC_ATTR_AXIS, x->rank, &axis, diag));
  FC_ITRY(fc_ih_flag(op, FC_ATTR_KEEPDIMS, &keep, diag));
  FC_ITRY(fc_ih_flag(op, FC_ATTR_SELECT_LAST_INDEX, &last, diag));
  if (x->dims[axis] == 0) return fc_ih_fail(op, diag, "cannot reduce an empty axis %lld", (long long)axis);
  int64_t *d = fc_ih_dims(arena, x->rank);
  int r = 0;
  for (int i = 0; i < x->rank; i++) {
    if (i != axis) d[r++] = x->dims[i];
    else if (keep) d[r++] = 1;
  }
  fc_ih_set(op, 0, arena, FC_DT_I64, r, d);
  return FC_OK;
}
