/* infer_data.c — inference hooks of the data-movement ops: reshape, transpose, broadcast, concat,
 * slice, pad, gather, gather_elements, gather_nd, one_hot and resize.
 *
 * The importer resolves ONNX's dynamic forms (shape tensors, negative axes, -1 and 0 in Reshape,
 * unclamped slice bounds) before building these ops, so the hooks check that the attributes really are
 * in that resolved form rather than interpreting ONNX's conventions a second time.
 */
#include "infer_internal.h"

#include <string.h>

FcStatus fc_infer_reshape(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  const int64_t *shape;
  int n;
  FC_ITRY(fc_ih_ints(op, FC_ATTR_SHAPE, &shape, &n, diag));
  int64_t in_n, out_n = 1;
  if (!fc_type_numel(x, &in_n)) return fc_ih_fail(op, diag, "operand has too many elements");
  for (int i = 0; i < n; i++) {
    if (shape[i] < 0) return fc_ih_fail(op, diag, "shape dim %d is negative (%lld)", i, (long long)shape[i]);
    if (!fc_checked_mul(out_n, shape[i], &out_n)) return fc_ih_fail(op, diag, "shape has too many elements");
  }
  if (in_n != out_n)
    return fc_ih_fail(op, diag, "cannot reshape %lld elements into %lld", (long long)in_n, (long long)out_n);
  fc_ih_set(op, 0, arena, x->dtype, n, shape);
  return FC_OK;
}

FcStatus fc_infer_transpose(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  const int64_t *perm;
  int n;
  FC_ITRY(fc_ih_ints(op, FC_ATTR_PERM, &perm, &n, diag));
  if (n != x->rank) return fc_ih_fail(op, diag, "perm has %d values, operand has rank %d", n, x->rank);
  bool *seen = FC_NEW_ARRAY(arena, bool, (size_t)(n > 0 ? n : 1));
  int64_t *d = fc_ih_dims(arena, n);
  for (int i = 0; i < n; i++) {
    if (perm[i] < 0 || perm[i] >= n || seen[perm[i]]) return fc_ih_fail(op, diag, "perm is not a permutation of 0..%d", n - 1);
    seen[perm[i]] = true;
    d[i] = x->dims[perm[i]];
  }
  fc_ih_set(op, 0, arena, x->dtype, n, d);
  return FC_OK;
}

FcStatus fc_infer_broadcast(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  const int64_t *shape;
  int n;
  FC_ITRY(fc_ih_shape(op, &shape, &n, diag));
  bool ok = x->rank <= n;
  for (int i = 0; ok && i < x->rank; i++) {
    int64_t xd = x->dims[x->rank - 1 - i], td = shape[n - 1 - i];
    ok = xd == td || xd == 1;
  }
  if (!ok) {
    char b1[256], b2[256];
    FcType t = {x->dtype, n, shape};
    return fc_ih_fail(op, diag, "%s does not broadcast to %s", fc_type_str(x, b1, sizeof b1), fc_type_str(&t, b2, sizeof b2));
  }
  fc_ih_set(op, 0, arena, x->dtype, n, shape);
  return FC_OK;
}

FcStatus fc_infer_concat(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x0 = fc_ih_in(op, 0);
  int64_t axis;
  if (x0->rank < 1) return fc_ih_fail(op, diag, "operands must have rank >= 1");
  FC_ITRY(fc_ih_axis(op, FC_ATTR_AXIS, x0->rank, &axis, diag));
  int64_t total = 0;
  for (int i = 0; i < op->n_operands; i++) {
    const FcType *x = fc_ih_in(op, i);
    char b1[256], b2[256];
    if (x->dtype != x0->dtype)
      return fc_ih_fail(op, diag, "operand %d has dtype %s, operand 0 has %s", i, fc_dtype_name(x->dtype),
                           fc_dtype_name(x0->dtype));
    bool ok = x->rank == x0->rank;
    for (int d = 0; ok && d < x->rank; d++) ok = d == axis || x->dims[d] == x0->dims[d];
    if (!ok)
      return fc_ih_fail(op, diag, "operand %d %s does not match operand 0 %s outside axis %lld", i,
                           fc_type_str(x, b1, sizeof b1), fc_type_str(x0, b2, sizeof b2), (long long)axis);
    if (!fc_checked_add(total, x->dims[axis], &total)) return fc_ih_fail(op, diag, "concatenated dim overflows");
  }
  int64_t *d = fc_ih_dims(arena, x0->rank);
  memcpy(d, x0->dims, (size_t)x0->rank * sizeof *d);
  d[axis] = total;
  fc_ih_set(op, 0, arena, x0->dtype, x0->rank, d);
  return FC_OK;
}

FcStatus fc_infer_slice(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  const int64_t *st, *en, *sp;
  int ns, ne, np;
  FC_ITRY(fc_ih_ints(op, FC_ATTR_STARTS, &st, &ns, diag));
  FC_ITRY(fc_ih_ints(op, FC_ATTR_ENDS, &en, &ne, diag));
  FC_ITRY(fc_ih_ints(op, FC_ATTR_STEPS, &sp, &np, diag));
  if (ns != x->rank || ne != x->rank || np != x->rank)
    return fc_ih_fail(op, diag, "starts/ends/steps have %d/%d/%d values, operand has rank %d", ns, ne, np, x->rank);
  int64_t *d = fc_ih_dims(arena, x->rank);
  for (int i = 0; i < x->rank; i++) {
    int64_t dim = x->dims[i], s = st[i], e = en[i], step = sp[i];
    if (step == 0) return fc_ih_fail(op, diag, "step of axis %d is 0", i);
    /* Clamped ONNX bounds: [0, dim] for a positive step, [-1, dim-1] for a negative one. */
    int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? dim : dim - 1;
    if (s < lo || s > hi || e < lo || e > hi)
      return fc_ih_fail(op, diag, "axis %d: start %lld / end %lld not normalised for dim %lld and step %lld", i,
                           (long long)s, (long long)e, (long long)dim, (long long)step);
    /* Both bounds lie in [-1, dim], so the difference cannot overflow; the count is ceil(diff/|step|). */
    int64_t diff = step > 0 ? e - s : s - e;
    int64_t mag = step > 0 ? step : (step == INT64_MIN ? INT64_MAX : -step);
    d[i] = diff > 0 ? (diff - 1) / mag + 1 : 0;
  }
  fc_ih_set(op, 0, arena, x->dtype, x->rank, d);
  return FC_OK;
}

FcStatus fc_infer_pad(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  static const char *const modes[] = {"constant", "reflect", "edge", "wrap", NULL};
  const char *mode;
  const int64_t *pads;
  int n;
  FC_ITRY(fc_ih_choice(op, FC_ATTR_MODE, modes, &mode, diag));
  FC_ITRY(fc_ih_ints(op, FC_ATTR_PADS, &pads, &n, diag));
  if (n != 2 * x->rank) return fc_ih_fail(op, diag, "pads has %d values, expected %d", n, 2 * x->rank);
  if (op->n_operands == 2) {
    const FcType *v = fc_ih_in(op, 1);
    if (v->dtype != x->dtype || v->rank != 0) {
      char b1[256];
      return fc_ih_fail(op, diag, "pad value must be a rank-0 %s, not %s", fc_dtype_name(x->dtype),
                           fc_type_str(v, b1, sizeof b1));
    }
  }
  bool constant = strcmp(mode, "constant") == 0;
  int64_t *d = fc_ih_dims(arena, x->rank);
  for (int i = 0; i < x->rank; i++) {
    int64_t o;
    if (!fc_ih_add_signed(x->dims[i], pads[i], &o) || !fc_ih_add_signed(o, pads[x->rank + i], &o))
      return fc_ih_fail(op, diag, "padded dim %d overflows", i);
    if (o < 0) return fc_ih_fail(op, diag, "padded dim %d would be negative (%lld)", i, (long long)o);
    /* Edge, reflect and wrap copy from the axis itself: an empty axis has nothing to copy. */
    if (!constant && x->dims[i] == 0 && (pads[i] > 0 || pads[x->rank + i] > 0))
      return fc_ih_fail(op, diag, "mode %s cannot pad the empty axis %d", mode, i);
    d[i] = o;
  }
  fc_ih_set(op, 0, arena, x->dtype, x->rank, d);
  return FC_OK;
}

static FcStatus check_indices_dtype(const FcOp *op, const FcType *idx, FcDiag *diag) {
  if (idx->dtype != FC_DT_I32 && idx->dtype != FC_DT_I64)
    return fc_ih_fail(op, diag, "indices must be i32 or i64, not %s", fc_dtype_name(idx->dtype));
  return FC_OK;
}

FcStatus fc_infer_gather(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0), *idx = fc_ih_in(op, 1);
  FC_ITRY(check_indices_dtype(op, idx, diag));
  if (x->rank < 1) return fc_ih_fail(op, diag, "data must have rank >= 1");
  int64_t axis;
  FC_ITRY(fc_ih_axis(op, FC_ATTR_AXIS, x->rank, &axis, diag));
  int rank = x->rank - 1 + idx->rank, r = 0;
  int64_t *d = fc_ih_dims(arena, rank);
  for (int i = 0; i < axis; i++) d[r++] = x->dims[i];
  for (int i = 0; i < idx->rank; i++) d[r++] = idx->dims[i];
  for (int i = (int)axis + 1; i < x->rank; i++) d[r++] = x->dims[i];
  int64_t numel;
  FcType t = {x->dtype, rank, d};
  if (!fc_type_numel(&t, &numel)) return fc_ih_fail(op, diag, "result has too many elements");
  fc_ih_set(op, 0, arena, x->dtype, rank, d);
  return FC_OK;
}

FcStatus fc_infer_gather_elements(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0), *idx = fc_ih_in(op, 1);
  FC_ITRY(check_indices_dtype(op, idx, diag));
  if (x->rank < 1) return fc_ih_fail(op, diag, "data must have rank >= 1");
  int64_t axis;
  FC_ITRY(fc_ih_axis(op, FC_ATTR_AXIS, x->rank, &axis, diag));
  if (idx->rank != x->rank) return fc_ih_fail(op, diag, "indices have rank %d, data has rank %d", idx->rank, x->rank);
  for (int i = 0; i < x->rank; i++)
    if (i != axis && idx->dims[i] > x->dims[i])
      return fc_ih_fail(op, diag, "indices dim %d is %lld, data has %lld", i, (long long)idx->dims[i],
                           (long long)x->dims[i]);
  fc_ih_set(op, 0, arena, x->dtype, idx->rank, idx->dims);
  return FC_OK;
}

FcStatus fc_infer_gather_nd(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0), *idx = fc_ih_in(op, 1);
  FC_ITRY(check_indices_dtype(op, idx, diag));
  if (x->rank < 1 || idx->rank < 1) return fc_ih_fail(op, diag, "data and indices must have rank >= 1");
  int64_t b;
  FC_ITRY(fc_ih_int(op, FC_ATTR_BATCH_DIMS, &b, diag));
  if (b < 0 || b >= x->rank || b >= idx->rank)
    return fc_ih_fail(op, diag, "batch_dims %lld must be below both ranks (%d and %d)", (long long)b, x->rank, idx->rank);
  for (int i = 0; i < b; i++)
    if (idx->dims[i] != x->dims[i])
      return fc_ih_fail(op, diag, "batch dim %d differs (%lld in indices, %lld in data)", i, (long long)idx->dims[i],
                           (long long)x->dims[i]);
  int64_t k = idx->dims[idx->rank - 1];
  if (k < 1 || k > x->rank - b)
    return fc_ih_fail(op, diag, "indices last dim %lld must be in [1, %lld]", (long long)k, (long long)(x->rank - b));
  int rank = idx->rank - 1 + x->rank - (int)b - (int)k, r = 0;
  int64_t *d = fc_ih_dims(arena, rank);
  for (int i = 0; i < idx->rank - 1; i++) d[r++] = idx->dims[i];
  for (int i = (int)(b + k); i < x->rank; i++) d[r++] = x->dims[i];
  int64_t numel;
  FcType t = {x->dtype, rank, d};
  if (!fc_type_numel(&t, &numel)) return fc_ih_fail(op, diag, "result has too many elements");
  fc_ih_set(op, 0, arena, x->dtype, rank, d);
  return FC_OK;
}

FcStatus fc_infer_one_hot(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *idx = fc_ih_in(op, 0), *vals = fc_ih_in(op, 1);
  if (idx->dtype == FC_DT_BOOL) return fc_ih_fail(op, diag, "indices must be numeric, not i1");
  if (vals->rank != 1 || vals->dims[0] != 2) {
    char b1[256];
    return fc_ih_fail(op, diag, "values must have shape [2], not %s", fc_type_str(vals, b1, sizeof b1));
  }
  int64_t depth;
  FC_ITRY(fc_ih_int(op, FC_ATTR_DEPTH, &depth, diag));
  if (depth < 1) return fc_ih_fail(op, diag, "depth %lld must be positive", (long long)depth);
  int64_t axis;
  FC_ITRY(fc_ih_axis(op, FC_ATTR_AXIS, idx->rank + 1, &axis, diag));
  int rank = idx->rank + 1;
  int64_t *d = fc_ih_dims(arena, rank);
  for (int i = 0, r = 0; i < rank; i++) d[i] = i == axis ? depth : idx->dims[r++];
  int64_t numel;
  FcType t = {vals->dtype, rank, d};
  if (!fc_type_numel(&t, &numel)) return fc_ih_fail(op, diag, "result has too many elements");
  fc_ih_set(op, 0, arena, vals->dtype, rank, d);
  return FC_OK;
}

FcStatus fc_infer_resize(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  FcMode mode, m;
  FC_ITRY(fc_ih_mode(op, FC_ML_RESIZE_MODE, &mode, diag));
  FC_ITRY(fc_ih_mode(op, FC_ML_RESIZE_CTM, &m, diag));
  FC_ITRY(fc_ih_mode(op, FC_ML_RESIZE_NEAREST, &m, diag));
  if (mode == FC_RESIZE_MODE_NEAREST ? x->dtype == FC_DT_BOOL : !fc_dtype_is_float(x->dtype))
    return fc_ih_fail(op, diag, "mode %s does not support %s", fc_mode_name(mode), fc_dtype_name(x->dtype));
  const int64_t *sizes;
  const float *scales, *roi;
  int n, nsc, nroi;
  FC_ITRY(fc_ih_ints(op, FC_ATTR_SIZES, &sizes, &n, diag));
  FC_ITRY(fc_ih_floats(op, FC_ATTR_SCALES, &scales, &nsc, diag));
  FC_ITRY(fc_ih_floats(op, FC_ATTR_ROI, &roi, &nroi, diag));
  if (n != x->rank) return fc_ih_fail(op, diag, "sizes has %d values, operand has rank %d", n, x->rank);
  if (nsc != 0 && nsc != x->rank) return fc_ih_fail(op, diag, "scales has %d values, operand has rank %d", nsc, x->rank);
  if (nroi != 0 && nroi != 2 * x->rank)
    return fc_ih_fail(op, diag, "roi has %d values, expected %d", nroi, 2 * x->rank);
  for (int i = 0; i < nsc; i++)
    if (!(scales[i] > 0)) return fc_ih_fail(op, diag, "scale %d must be positive", i);
  int64_t numel = 1;
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0) return fc_ih_fail(op, diag, "size %d is negative (%lld)", i, (long long)sizes[i]);
    if (sizes[i] > 0 && x->dims[i] == 0) return fc_ih_fail(op, diag, "cannot resize the empty axis %d", i);
    if (!fc_checked_mul(numel, sizes[i], &numel)) return fc_ih_fail(op, diag, "sizes have too many elements");
  }
  fc_ih_set(op, 0, arena, x->dtype, n, sizes);
  return FC_OK;
}
