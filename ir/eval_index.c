/* eval_index.c — reference evaluators of the ops driven by indices in tensor data: gather,
 * gather_elements, gather_nd, scatter_elements, scatter_nd, topk and one_hot.
 *
 * Every index read from data is checked against its dim before any element moves (negative ones count
 * from the end, as ONNX allows): a bad index is an FC_ERR_INPUT message naming the index and the range,
 * never a read outside the tensor. Elements move as bytes of the dtype's size, so all dtypes work;
 * scatter reductions compute floats in double and integers with wraparound, and max/min keep the chosen
 * element's bytes. topk sorts each slice with a stable merge sort (ties: lower index first; NaN ranks
 * above every number, as numpy's sort-based ONNX reference does).
 */
#include "eval_struct.h"

#include <string.h>

/* Checks an integer index tensor and returns its values normalised against `dim` (scratch). */
static FcStatus load_indices(const FcOp *op, const FcTensor *t, int64_t dim, FcArena *scratch, int64_t **out,
                             FcDiag *diag) {
  if (!fc_dtype_is_int(t->type.dtype))
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "indices must be integers, not %s", fc_dtype_name(t->type.dtype));
  int64_t n = fc_ev_numel(&t->type);
  int64_t *v = FC_NEW_ARRAY(scratch, int64_t, (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) {
    int64_t raw = fc_tensor_get_i64(t, i);
    if (t->type.dtype == FC_DT_U64 && raw < 0) return fc_ev_bad_index(op, diag, "", INT64_MAX, dim);
    if (!fc_ev_index(raw, dim, &v[i])) return fc_ev_bad_index(op, diag, "", raw, dim);
  }
  *out = v;
  return FC_OK;
}

static FcStatus want_result(const FcOp *op, int i, FcDtype dt, int rank, const int64_t *dims, FcDiag *diag) {
  const FcType *rt = &op->results[i].type;
  FcType want = {dt, rank, dims};
  if (!fc_type_equal(rt, &want)) {
    char have[256], exp[256];
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "result %d is %s, operands imply %s", i,
                      fc_type_str(rt, have, sizeof have), fc_type_str(&want, exp, sizeof exp));
  }
  return FC_OK;
}

FcStatus fc_eval_gather(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 2, diag));
  const FcType *xt = &in[0]->type, *it = &in[1]->type;
  int64_t axis = fc_op_attr_int(op, FC_ATTR_AXIS, 0);
  if (axis < 0 || axis >= xt->rank)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "axis %lld out of range", (long long)axis);
  int rr = xt->rank + it->rank - 1;
  if (rr > FC_EV_MAX_RANK) return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "result rank %d too large", rr);
  int64_t dims[FC_EV_MAX_RANK];
  int k = 0;
  for (int d = 0; d < axis; d++) dims[k++] = xt->dims[d];
  for (int d = 0; d < it->rank; d++) dims[k++] = it->dims[d];
  for (int d = (int)axis + 1; d < xt->rank; d++) dims[k++] = xt->dims[d];
  FC_EV_TRY(want_result(op, 0, xt->dtype, rr, dims, diag));
  FcArena scratch;
  fc_arena_init(&scratch);
  int64_t *ix;
  FcStatus st = load_indices(op, in[1], xt->dims[axis], &scratch, &ix, diag);
  if (st == FC_OK) {
    fc_ev_make_results(op, out, arena);
    int64_t outer = 1, inner = 1, n = fc_ev_numel(it);
    if (fc_ev_numel(&op->results[0].type) > 0) {
      for (int d = 0; d < axis; d++) outer *= xt->dims[d];
      for (int d = (int)axis + 1; d < xt->rank; d++) inner *= xt->dims[d];
      size_t blk = (size_t)inner * fc_dtype_size(xt->dtype);
      const unsigned char *src = in[0]->data;
      unsigned char *o = (unsigned char *)out[0]->data;
      for (int64_t a = 0; a < outer; a++)
        for (int64_t j = 0; j < n; j++, o += blk)
          memcpy(o, src + ((size_t)(a * xt->dims[axis] + ix[j])) * blk, blk);
    }
  }
  fc_arena_free(&scratch);
  return st;
}

/* Shared shape check of gather_elements/scatter_elements: same rank, indices no larger off the axis. */
static FcStatus elements_shape(const FcOp *op, const FcType *xt, const FcType *it, int64_t axis, FcDiag *diag) {
  if (axis < 0 || axis >= xt->rank)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "axis %lld out of range", (long long)axis);
  if (it->rank != xt->rank)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "indices rank %d differs from data rank %d", it->rank, xt->rank);
  for (int d = 0; d < xt->rank; d++)
    if (d != axis && it->dims[d] > xt->dims[d])
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "indices dim %d (%lld) exceeds the data's (%lld)", d,
                        (long long)it->dims[d], (long long)xt->dims[d]);
  return FC_OK;
}

/* Element offsets into data addressed by an elements-style index tensor (the index replaces the
 * coordinate along `axis`). */
static int64_t *elements_offsets(const FcType *xt, const FcType *it, int64_t axis, const int64_t *ix,
                                 FcArena *scratch) {
  int64_t n = fc_ev_numel(it), xs[FC_EV_MAX_RANK], idx[FC_EV_MAX_RANK] = {0};
  int64_t *off = FC_NEW_ARRAY(scratch, int64_t, (size_t)(n > 0 ? n : 1));
  fc_ev_strides(xt, xs);
  for (int64_t i = 0; i < n; i++) {
    int64_t o = 0;
    for (int d = 0; d < xt->rank; d++) o += (d == axis ? ix[i] : idx[d]) * xs[d];
    off[i] = o;
    fc_ev_next(idx, it->dims, it->rank);
  }
  return off;
}

FcStatus fc_eval_gather_elements(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena,
                                 FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 2, diag));
  const FcType *xt = &in[0]->type, *it = &in[1]->type;
  int64_t axis = fc_op_attr_int(op, FC_ATTR_AXIS, 0);
  FC_EV_TRY(elements_shape(op, xt, it, axis, diag));
  FC_EV_TRY(want_result(op, 0, xt->dtype, it->rank, it->dims, diag));
  FcArena scratch;
  fc_arena_init(&scratch);
  int64_t *ix;
  FcStatus st = load_indices(op, in[1], xt->dims[axis], &scratch, &ix, diag);
  if (st == FC_OK) {
    fc_ev_make_results(op, out, arena);
    int64_t *off = elements_offsets(xt, it, axis, ix, &scratch), n = fc_ev_numel(it);
    size_t es = fc_dtype_size(xt->dtype);
    for (int64_t i = 0; i < n; i++) memcpy(fc_ev_at(out[0], i), fc_ev_at(in[0], off[i]), es);
  }
  fc_arena_free(&scratch);
  return st;
}

/* The batch/tuple/slice decomposition of gather_nd and scatter_nd: indices[B..., T..., m] address
 * slices of data[B..., D(m)..., S...]. */
typedef struct NdPlan {
  int64_t batches, tuples, m, slice; /* element counts */
  int64_t batch_stride;              /* elements of data per batch */
  int64_t tuple_strides[FC_EV_MAX_RANK], tuple_dims[FC_EV_MAX_RANK];
} NdPlan;

static FcStatus nd_plan(const FcOp *op, const FcType *xt, const FcType *it, int64_t b, NdPlan *p, FcDiag *diag) {
  int r = xt->rank, q = it->rank;
  if (q < 1) return fc_ev_fail(op, diag, FC_ERR_INPUT, "indices must have rank >= 1");
  int64_t m = it->dims[q - 1];
  if (b < 0 || b >= q || b > r || m < 0 || m > r - b)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "batch_dims %lld and index depth %lld are invalid for data rank %d",
                      (long long)b, (long long)m, r);
  int64_t xs[FC_EV_MAX_RANK];
  fc_ev_strides(xt, xs);
  p->batches = 1;
  for (int d = 0; d < b; d++) {
    if (it->dims[d] != xt->dims[d])
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "batch dim %d differs between indices and data", d);
    p->batches *= xt->dims[d];
  }
  p->tuples = 1;
  for (int d = (int)b; d < q - 1; d++) p->tuples *= it->dims[d];
  p->m = m;
  p->slice = 1;
  for (int d = (int)(b + m); d < r; d++) p->slice *= xt->dims[d];
  p->batch_stride = b > 0 ? xs[b - 1] : 0;
  for (int k = 0; k < m; k++) {
    p->tuple_dims[k] = xt->dims[b + k];
    p->tuple_strides[k] = xs[b + k];
  }
  return FC_OK;
}

/* Element offset of every addressed slice, batch-major then tuple order. */
static FcStatus nd_offsets(const FcOp *op, const FcTensor *indices, const NdPlan *p, FcArena *scratch, int64_t **out,
                           FcDiag *diag) {
  if (!fc_dtype_is_int(indices->type.dtype))
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "indices must be integers, not %s", fc_dtype_name(indices->type.dtype));
  int64_t n = p->batches * p->tuples;
  int64_t *off = FC_NEW_ARRAY(scratch, int64_t, (size_t)(n > 0 ? n : 1));
  for (int64_t t = 0; t < n; t++) {
    int64_t o = (t / (p->tuples ? p->tuples : 1)) * p->batch_stride;
    for (int64_t k = 0; k < p->m; k++) {
      int64_t raw = fc_tensor_get_i64(indices, t * p->m + k), v;
      if (indices->type.dtype == FC_DT_U64 && raw < 0) raw = INT64_MAX;
      if (!fc_ev_index(raw, p->tuple_dims[k], &v)) return fc_ev_bad_index(op, diag, "", raw, p->tuple_dims[k]);
      o += v * p->tuple_strides[k];
    }
    off[t] = o;
  }
  *out = off;
  return FC_OK;
}

FcStatus fc_eval_gather_nd(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 2, diag));
  const FcType *xt = &in[0]->type, *it = &in[1]->type;
  int64_t b = fc_op_attr_int(op, FC_ATTR_BATCH_DIMS, 0);
  NdPlan p;
  FC_EV_TRY(nd_plan(op, xt, it, b, &p, diag));
  int64_t dims[FC_EV_MAX_RANK];
  int k = 0;
  for (int d = 0; d < it->rank - 1; d++) dims[k++] = it->dims[d];
  for (int d = (int)(b + p.m); d < xt->rank; d++) dims[k++] = xt->dims[d];
  if (k > FC_EV_MAX_RANK) return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "result rank too large");
  FC_EV_TRY(want_result(op, 0, xt->dtype, k, dims, diag));
  FcArena scratch;
  fc_arena_init(&scratch);
  int64_t *off;
  FcStatus st = nd_offsets(op, in[1], &p, &scratch, &off, diag);
  if (st == FC_OK) {
    fc_ev_make_results(op, out, arena);
    size_t es = fc_dtype_size(xt->dtype), blk = (size_t)p.slice * es;
    unsigned char *o = (unsigned char *)out[0]->data;
    if (blk)
      for (int64_t t = 0; t < p.batches * p.tuples; t++, o += blk) memcpy(o, fc_ev_at(in[0], off[t]), blk);
  }
  fc_arena_free(&scratch);
  return st;
}

typedef enum Reduction { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } Reduction;

static FcStatus get_reduction(const FcOp *op, Reduction *r, FcDiag *diag) {
  *r = RED_NONE;
  const char *s = fc_op_attr_str(op, FC_ATTR_REDUCTION, "none");
  static const char *const names[] = {"none", "add", "mul", "max", "min"};
  for (int i = 0; i < 5; i++)
    if (strcmp(s, names[i]) == 0) {
      *r = (Reduction)i;
      return FC_OK;
    }
  return fc_ev_fail(op, diag, FC_ERR_INPUT, "unknown reduction \"%s\"", s);
}

/* dst = reduce(dst, src) for one element. numpy semantics: max/min propagate NaN; bool add is or and
 * bool mul is and; integer add/mul wrap around. */
static void reduce_elem(FcDtype dt, Reduction r, unsigned char *dst, const unsigned char *src) {
  size_t es = fc_dtype_size(dt);
  if (r == RED_NONE) {
    memcpy(dst, src, es);
    return;
  }
  if (r == RED_MAX || r == RED_MIN) {
    if (fc_ev_is_nan(dt, dst)) return;
    int c = fc_ev_cmp(dt, src, dst);
    if (fc_ev_is_nan(dt, src) || (r == RED_MAX ? c > 0 : c < 0)) memcpy(dst, src, es);
    return;
  }
  FcTensor td = {.type = {dt, 0, NULL}, .data = dst, .nbytes = (int64_t)es};
  FcTensor ts = {.type = {dt, 0, NULL}, .data = src, .nbytes = (int64_t)es};
  if (dt == FC_DT_BOOL) {
    *dst = r == RED_ADD ? (*dst | *src) != 0 : (*dst & *src) != 0;
  } else if (fc_dtype_is_float(dt)) {
    double a = fc_tensor_get_f64(&td, 0), b = fc_tensor_get_f64(&ts, 0);
    fc_ev_store_f64(&td, 0, r == RED_ADD ? a + b : a * b);
  } else {
    uint64_t a = (uint64_t)fc_tensor_get_i64(&td, 0), b = (uint64_t)fc_tensor_get_i64(&ts, 0);
    fc_ev_store_u64(&td, 0, r == RED_ADD ? a + b : a * b);
  }
}

FcStatus fc_eval_scatter_elements(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena,
                                  FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 3, diag));
  const FcType *xt = &in[0]->type, *it = &in[1]->type, *ut = &in[2]->type;
  int64_t axis = fc_op_attr_int(op, FC_ATTR_AXIS, 0);
  Reduction red;
  FC_EV_TRY(get_reduction(op, &red, diag));
  FC_EV_TRY(elements_shape(op, xt, it, axis, diag));
  if (!fc_shape_equal(it, ut) || ut->dtype != xt->dtype)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "updates must have the indices' shape and the data's dtype");
  FC_EV_TRY(want_result(op, 0, xt->dtype, xt->rank, xt->dims, diag));
  FcArena scratch;
  fc_arena_init(&scratch);
  int64_t *ix;
  FcStatus st = load_indices(op, in[1], xt->dims[axis], &scratch, &ix, diag);
  if (st == FC_OK) {
    fc_ev_make_results(op, out, arena);
    if (in[0]->nbytes) memcpy((void *)out[0]->data, in[0]->data, (size_t)in[0]->nbytes);
    int64_t *off = elements_offsets(xt, it, axis, ix, &scratch), n = fc_ev_numel(it);
    for (int64_t i = 0; i < n; i++) reduce_elem(xt->dtype, red, fc_ev_at(out[0], off[i]), fc_ev_at(in[2], i));
  }
  fc_arena_free(&scratch);
  return st;
}

FcStatus fc_eval_scatter_nd(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 3, diag));
  const FcType *xt = &in[0]->type, *it = &in[1]->type, *ut = &in[2]->type;
  Reduction red;
  FC_EV_TRY(get_reduction(op, &red, diag));
  NdPlan p;
  FC_EV_TRY(nd_plan(op, xt, it, 0, &p, diag));
  /* updates = indices.shape[:-1] + data.shape[m:] */
  bool ok = ut->dtype == xt->dtype && ut->rank == it->rank - 1 + xt->rank - (int)p.m;
  for (int d = 0; ok && d < ut->rank; d++)
    ok = ut->dims[d] == (d < it->rank - 1 ? it->dims[d] : xt->dims[d - (it->rank - 1) + p.m]);
  if (!ok) return fc_ev_fail(op, diag, FC_ERR_INPUT, "updates shape must be indices.shape[:-1] + data.shape[m:]");
  FC_EV_TRY(want_result(op, 0, xt->dtype, xt->rank, xt->dims, diag));
  FcArena scratch;
  fc_arena_init(&scratch);
  int64_t *off;
  FcStatus st = nd_offsets(op, in[1], &p, &scratch, &off, diag);
  if (st == FC_OK) {
    fc_ev_make_results(op, out, arena);
    if (in[0]->nbytes) memcpy((void *)out[0]->data, in[0]->data, (size_t)in[0]->nbytes);
    for (int64_t t = 0; t < p.tuples; t++)
      for (int64_t e = 0; e < p.slice; e++)
        reduce_elem(xt->dtype, red, fc_ev_at(out[0], off[t] + e), fc_ev_at(in[2], t * p.slice + e));
  }
  fc_arena_free(&scratch);
  return st;
}

/* ---- topk ---------------------------------------------------------------------------------------- */

typedef struct TopkOrder {
  const FcTensor *x;
  int64_t base, stride; /* element offset of the slice's first element and step along the axis */
  bool largest;
} TopkOrder;

/* True if position a ranks strictly before position b. */
static bool topk_before(const TopkOrder *t, int64_t a, int64_t b) {
  int c = fc_ev_cmp(t->x->type.dtype, fc_ev_at(t->x, t->base + a * t->stride), fc_ev_at(t->x, t->base + b * t->stride));
  if (c != 0) return t->largest ? c > 0 : c < 0;
  return a < b;
}

/* Bottom-up merge sort of v[0..n) by topk_before, through tmp[0..n). */
static void topk_sort(const TopkOrder *t, int64_t *v, int64_t *tmp, int64_t n) {
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) tmp[k++] = topk_before(t, v[j], v[i]) ? v[j++] : v[i++];
      while (i < mid) tmp[k++] = v[i++];
      while (j < hi) tmp[k++] = v[j++];
    }
    memcpy(v, tmp, (size_t)n * sizeof *v);
  }
}

FcStatus fc_eval_topk(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 1, diag));
  const FcType *xt = &in[0]->type;
  int64_t axis = fc_op_attr_int(op, FC_ATTR_AXIS, -1), k = fc_op_attr_int(op, FC_ATTR_K, -1);
  bool largest = fc_op_attr_int(op, FC_ATTR_LARGEST, 1) != 0;
  if (axis < 0 || axis >= xt->rank)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "axis %lld out of range", (long long)axis);
  if (k < 0 || k > xt->dims[axis])
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "k %lld out of range [0, %lld]", (long long)k, (long long)xt->dims[axis]);
  if (op->n_results != 2) return fc_ev_fail(op, diag, FC_ERR_INPUT, "expects 2 results");
  int64_t dims[FC_EV_MAX_RANK];
  memcpy(dims, xt->dims, (size_t)xt->rank * sizeof *dims);
  dims[axis] = k;
  FC_EV_TRY(want_result(op, 0, xt->dtype, xt->rank, dims, diag));
  FC_EV_TRY(want_result(op, 1, FC_DT_I64, xt->rank, dims, diag));
  fc_ev_make_results(op, out, arena);
  int64_t n = xt->dims[axis], outer = 1, inner = 1;
  if (fc_ev_numel(xt) == 0 || k == 0) return FC_OK;
  for (int d = 0; d < axis; d++) outer *= xt->dims[d];
  for (int d = (int)axis + 1; d < xt->rank; d++) inner *= xt->dims[d];
  FcArena scratch;
  fc_arena_init(&scratch);
  int64_t *v = FC_NEW_ARRAY(&scratch, int64_t, (size_t)n), *tmp = FC_NEW_ARRAY(&scratch, int64_t, (size_t)n);
  size_t es = fc_dtype_size(xt->dtype);
  for (int64_t a = 0; a < outer; a++)
    for (int64_t c = 0; c < inner; c++) {
      TopkOrder t = {in[0], a * n * inner + c, inner, largest};
      for (int64_t i = 0; i < n; i++) v[i] = i;
      topk_sort(&t, v, tmp, n);
      for (int64_t i = 0; i < k; i++) {
        int64_t o = a * k * inner + i * inner + c;
        memcpy(fc_ev_at(out[0], o), fc_ev_at(in[0], t.base + v[i] * inner), es);
        fc_tensor_set_i64(out[1], o, v[i]);
      }
    }
  fc_arena_free(&scratch);
  return FC_OK;
}

/* one_hot follows ONNX: an index outside [-depth, depth) gives a row of off values (not an error);
 * float indices are truncated toward zero first. */
FcStatus fc_eval_one_hot(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 2, diag));
  const FcType *it = &in[0]->type, *vt = &in[1]->type, *rt = &op->results[0].type;
  int64_t axis = fc_op_attr_int(op, FC_ATTR_AXIS, -1), depth = fc_op_attr_int(op, FC_ATTR_DEPTH, -1);
  if (axis < 0 || axis > it->rank) return fc_ev_fail(op, diag, FC_ERR_INPUT, "axis %lld out of range", (long long)axis);
  if (depth < 0) return fc_ev_fail(op, diag, FC_ERR_INPUT, "depth %lld is negative", (long long)depth);
  if (fc_ev_numel(vt) != 2 || it->dtype == FC_DT_BOOL)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "values must hold [off, on] and indices must be numbers");
  if (it->rank + 1 > FC_EV_MAX_RANK) return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "result rank too large");
  int64_t dims[FC_EV_MAX_RANK];
  for (int d = 0, k = 0; d <= it->rank; d++) dims[d] = d == axis ? depth : it->dims[k++];
  FC_EV_TRY(want_result(op, 0, vt->dtype, it->rank + 1, dims, diag));
  fc_ev_make_results(op, out, arena);
  int64_t n = fc_ev_numel(rt), inner = 1;
  if (n == 0) return FC_OK;
  for (int d = (int)axis; d < it->rank; d++) inner *= it->dims[d];
  size_t es = fc_dtype_size(vt->dtype);
  const unsigned char *off = in[1]->data, *on = off + es;
  for (int64_t i = 0; i < n; i++) memcpy(fc_ev_at(out[0], i), off, es);
  int64_t m = fc_ev_numel(it);
  for (int64_t i = 0; i < m; i++) {
    int64_t raw = fc_tensor_get_i64(in[0], i), v;
    if (it->dtype == FC_DT_U64 && raw < 0) continue;
    if (!fc_ev_index(raw, depth, &v)) continue;
    int64_t a = i / inner, c = i % inner;
    memcpy(fc_ev_at(out[0], (a * depth + v) * inner + c), on, es);
  }
  return FC_OK;
}
