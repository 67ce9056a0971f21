/* eval_data.c — reference evaluators of the data-movement ops: reshape, transpose, broadcast, concat,
 * slice, pad and reverse_sequence.
 *
 * None of them computes on values, so they work for every dtype by copying elements of the dtype's
 * size. Transpose, broadcast and slice are strided views of their operand (permuted, zero, or stepped
 * strides) copied by fc_ev_copy_view; pad maps each output coordinate per axis to an input coordinate
 * (or to the pad value) and so handles every mode and negative pads (crops) with one loop.
 */
#include "eval_struct.h"

#include <string.h>

FcStatus fc_eval_reshape(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 1, diag));
  const FcType *rt = &op->results[0].type;
  if (rt->dtype != in[0]->type.dtype || fc_ev_numel(rt) != fc_ev_numel(&in[0]->type))
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "result type does not hold the operand's elements");
  fc_ev_make_results(op, out, arena);
  if (in[0]->nbytes) memcpy((void *)out[0]->data, in[0]->data, (size_t)in[0]->nbytes);
  return FC_OK;
}

FcStatus fc_eval_transpose(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 1, diag));
  const FcType *xt = &in[0]->type, *rt = &op->results[0].type;
  int r = xt->rank;
  int64_t perm[FC_EV_MAX_RANK], xs[FC_EV_MAX_RANK], ss[FC_EV_MAX_RANK];
  bool seen[FC_EV_MAX_RANK] = {false};
  const FcAttr *a = fc_op_attr(op, FC_ATTR_PERM);
  if (!a || a->kind != FC_AK_INTS || a->ints.n != r || rt->rank != r || rt->dtype != xt->dtype)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "perm does not match the operand's rank %d", r);
  for (int d = 0; d < r; d++) {
    perm[d] = a->ints.v[d];
    if (perm[d] < 0 || perm[d] >= r || seen[perm[d]] || rt->dims[d] != xt->dims[perm[d]])
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "perm is not a permutation matching the result shape");
    seen[perm[d]] = true;
  }
  fc_ev_strides(xt, xs);
  for (int d = 0; d < r; d++) ss[d] = xs[perm[d]];
  fc_ev_make_results(op, out, arena);
  fc_ev_copy_view((void *)out[0]->data, in[0]->data, fc_dtype_size(xt->dtype), 0, r, rt->dims, ss);
  return FC_OK;
}

FcStatus fc_eval_broadcast(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 1, diag));
  const FcType *xt = &in[0]->type, *rt = &op->results[0].type;
  int r = rt->rank, lead = rt->rank - xt->rank;
  if (lead < 0 || rt->dtype != xt->dtype)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "cannot broadcast rank %d to rank %d", xt->rank, rt->rank);
  int64_t xs[FC_EV_MAX_RANK], ss[FC_EV_MAX_RANK];
  fc_ev_strides(xt, xs);
  for (int d = 0; d < r; d++) {
    if (d < lead) {
      ss[d] = 0;
      continue;
    }
    int64_t xd = xt->dims[d - lead];
    if (xd != rt->dims[d] && xd != 1)
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "dim %d of size %lld cannot broadcast to %lld", d - lead,
                        (long long)xd, (long long)rt->dims[d]);
    ss[d] = xd == 1 ? 0 : xs[d - lead];
  }
  fc_ev_make_results(op, out, arena);
  fc_ev_copy_view((void *)out[0]->data, in[0]->data, fc_dtype_size(xt->dtype), 0, r, rt->dims, ss);
  return FC_OK;
}

FcStatus fc_eval_concat(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, op->n_operands, diag));
  const FcType *rt = &op->results[0].type;
  int r = rt->rank;
  int64_t axis = fc_op_attr_int(op, FC_ATTR_AXIS, -1);
  if (axis < 0 || axis >= r) return fc_ev_fail(op, diag, FC_ERR_INPUT, "axis %lld out of range", (long long)axis);
  int64_t total = 0;
  for (int i = 0; i < op->n_operands; i++) {
    const FcType *t = &in[i]->type;
    if (t->rank != r || t->dtype != rt->dtype)
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "operand %d does not match the result's rank and dtype", i);
    for (int d = 0; d < r; d++)
      if (d != axis && t->dims[d] != rt->dims[d])
        return fc_ev_fail(op, diag, FC_ERR_INPUT, "operand %d differs from the result in dim %d", i, d);
    total += t->dims[axis];
  }
  if (total != rt->dims[axis])
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "operands add up to %lld along axis %lld, result has %lld",
                      (long long)total, (long long)axis, (long long)rt->dims[axis]);
  fc_ev_make_results(op, out, arena);
  if (fc_ev_numel(rt) == 0) return FC_OK;
  size_t es = fc_dtype_size(rt->dtype);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; d++) outer *= rt->dims[d];
  for (int d = (int)axis + 1; d < r; d++) inner *= rt->dims[d];
  size_t out_row = (size_t)(rt->dims[axis] * inner) * es;
  unsigned char *o = (unsigned char *)out[0]->data;
  size_t col = 0;
  for (int i = 0; i < op->n_operands; i++) {
    size_t row = (size_t)(in[i]->type.dims[axis] * inner) * es;
    const unsigned char *s = in[i]->data;
    if (row)
      for (int64_t k = 0; k < outer; k++) memcpy(o + (size_t)k * out_row + col, s + (size_t)k * row, row);
    col += row;
  }
  return FC_OK;
}

/* Elements a normalised slice takes from one axis; false if the attributes are inconsistent. */
static bool slice_count(int64_t start, int64_t end, int64_t step, int64_t *count) {
  int64_t span;
  if (step > 0) {
    if (__builtin_sub_overflow(end, start, &span)) return false;
  } else if (step < 0) {
    if (__builtin_sub_overflow(start, end, &span) || step == INT64_MIN) return false;
    step = -step;
  } else {
    return false;
  }
  *count = span <= 0 ? 0 : (span - 1) / step + 1;
  return true;
}

FcStatus fc_eval_slice(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 1, diag));
  const FcType *xt = &in[0]->type, *rt = &op->results[0].type;
  int r = xt->rank;
  if (rt->rank != r || rt->dtype != xt->dtype)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "result rank/dtype differs from the operand's");
  int64_t starts[FC_EV_MAX_RANK], ends[FC_EV_MAX_RANK], steps[FC_EV_MAX_RANK], xs[FC_EV_MAX_RANK],
      ss[FC_EV_MAX_RANK];
  FC_EV_TRY(fc_ev_ints(op, FC_ATTR_STARTS, r, 0, starts, diag));
  FC_EV_TRY(fc_ev_ints(op, FC_ATTR_ENDS, r, 0, ends, diag));
  FC_EV_TRY(fc_ev_ints(op, FC_ATTR_STEPS, r, 1, steps, diag));
  fc_ev_strides(xt, xs);
  int64_t base = 0;
  bool empty = false;
  for (int d = 0; d < r; d++) {
    int64_t n = rt->dims[d], count, last;
    if (!slice_count(starts[d], ends[d], steps[d], &count) || count != n)
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "axis %d: start %lld, end %lld, step %lld do not give %lld elements", d,
                        (long long)starts[d], (long long)ends[d], (long long)steps[d], (long long)n);
    if (n == 0) {
      empty = true;
      continue;
    }
    /* Both ends of the taken range must lie inside the axis: the copy then never leaves the data. */
    if (starts[d] < 0 || starts[d] >= xt->dims[d] || __builtin_mul_overflow(n - 1, steps[d], &last) ||
        __builtin_add_overflow(last, starts[d], &last) || last < 0 || last >= xt->dims[d])
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "axis %d: slice leaves the dim of size %lld", d,
                        (long long)xt->dims[d]);
    base += starts[d] * xs[d];
    ss[d] = steps[d] * xs[d];
  }
  fc_ev_make_results(op, out, arena);
  if (!empty) fc_ev_copy_view((void *)out[0]->data, in[0]->data, fc_dtype_size(xt->dtype), base, r, rt->dims, ss);
  return FC_OK;
}

typedef enum PadMode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } PadMode;

/* Input coordinate feeding output coordinate `j - begin` of one axis, or -1 for the pad value. The
 * modes follow numpy.pad, which ONNX's reference uses: reflect mirrors without repeating the edge and
 * keeps mirroring past the first reflection; wrap repeats the axis periodically. */
static int64_t pad_source(PadMode m, int64_t j, int64_t n) {
  if (j >= 0 && j < n) return j;
  switch (m) {
  case PAD_CONSTANT: return -1;
  case PAD_EDGE: return j < 0 ? 0 : n - 1;
  case PAD_WRAP: return ((j % n) + n) % n;
  case PAD_REFLECT: {
    if (n == 1) return 0;
    int64_t p = 2 * (n - 1), k = ((j % p) + p) % p;
    return k < n ? k : p - k;
  }
  }
  FC_UNREACHABLE();
}

FcStatus fc_eval_pad(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 1, diag));
  const FcType *xt = &in[0]->type, *rt = &op->results[0].type;
  int r = xt->rank;
  if (rt->rank != r || rt->dtype != xt->dtype)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "result rank/dtype differs from the operand's");
  int64_t pads[2 * FC_EV_MAX_RANK];
  FC_EV_TRY(fc_ev_ints(op, FC_ATTR_PADS, 2 * r, 0, pads, diag));
  const char *ms = fc_op_attr_str(op, FC_ATTR_MODE, "constant");
  PadMode mode;
  if (strcmp(ms, "constant") == 0) mode = PAD_CONSTANT;
  else if (strcmp(ms, "reflect") == 0) mode = PAD_REFLECT;
  else if (strcmp(ms, "edge") == 0) mode = PAD_EDGE;
  else if (strcmp(ms, "wrap") == 0) mode = PAD_WRAP;
  else return fc_ev_fail(op, diag, FC_ERR_INPUT, "unknown mode \"%s\"", ms);
  size_t es = fc_dtype_size(xt->dtype);
  const void *value = NULL;
  if (op->n_operands > 1 && in[1]) {
    if (in[1]->type.dtype != xt->dtype || fc_ev_numel(&in[1]->type) != 1)
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "pad value must be one element of the operand's dtype");
    value = in[1]->data;
  }
  for (int d = 0; d < r; d++) {
    int64_t want;
    if (__builtin_add_overflow(xt->dims[d], pads[d], &want) || __builtin_add_overflow(want, pads[r + d], &want) ||
        want != rt->dims[d])
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "pads of axis %d do not give the result dim %lld", d,
                        (long long)rt->dims[d]);
    if (mode != PAD_CONSTANT && xt->dims[d] == 0 && rt->dims[d] > 0)
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "cannot pad the empty axis %d in %s mode", d, ms);
  }
  fc_ev_make_results(op, out, arena);
  int64_t n = fc_ev_numel(rt);
  if (n == 0) return FC_OK;

  FcArena scratch;
  fc_arena_init(&scratch);
  int64_t *map[FC_EV_MAX_RANK], xs[FC_EV_MAX_RANK], idx[FC_EV_MAX_RANK] = {0};
  fc_ev_strides(xt, xs);
  for (int d = 0; d < r; d++) {
    map[d] = FC_NEW_ARRAY(&scratch, int64_t, (size_t)rt->dims[d]);
    for (int64_t o = 0; o < rt->dims[d]; o++) {
      int64_t s = pad_source(mode, o - pads[d], xt->dims[d]);
      map[d][o] = s < 0 ? -1 : s * xs[d];
    }
  }
  unsigned char *o = (unsigned char *)out[0]->data;
  const unsigned char *src = in[0]->data;
  for (int64_t i = 0; i < n; i++, o += es) {
    int64_t off = 0;
    for (int d = 0; d < r && off >= 0; d++) off = map[d][idx[d]] < 0 ? -1 : off + map[d][idx[d]];
    if (off >= 0) memcpy(o, src + (size_t)off * es, es);
    else if (value) memcpy(o, value, es);
    fc_ev_next(idx, rt->dims, r);
  }
  fc_arena_free(&scratch);
  return FC_OK;
}

FcStatus fc_eval_reverse_sequence(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena,
                                  FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 2, diag));
  const FcType *xt = &in[0]->type, *lt = &in[1]->type;
  int r = xt->rank;
  int64_t ba = fc_op_attr_int(op, FC_ATTR_BATCH_AXIS, 1), ta = fc_op_attr_int(op, FC_ATTR_TIME_AXIS, 0);
  if (r < 2 || ba < 0 || ba >= r || ta < 0 || ta >= r || ba == ta)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "batch_axis %lld and time_axis %lld are invalid for rank %d",
                      (long long)ba, (long long)ta, r);
  if (!fc_type_equal(&op->results[0].type, xt))
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "result type differs from the operand's");
  if (!fc_dtype_is_int(lt->dtype) || fc_ev_numel(lt) != xt->dims[ba])
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "sequence lengths must be %lld integers", (long long)xt->dims[ba]);
  int64_t T = xt->dims[ta];
  for (int64_t b = 0; b < xt->dims[ba]; b++) {
    int64_t len = fc_tensor_get_i64(in[1], b);
    if (lt->dtype == FC_DT_U64 && len < 0) len = INT64_MAX;
    if (len < 0 || len > T)
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "sequence length %lld of batch %lld out of range [0, %lld]",
                        (long long)len, (long long)b, (long long)T);
  }
  fc_ev_make_results(op, out, arena);
  int64_t n = fc_ev_numel(xt), xs[FC_EV_MAX_RANK], idx[FC_EV_MAX_RANK] = {0};
  fc_ev_strides(xt, xs);
  size_t es = fc_dtype_size(xt->dtype);
  const unsigned char *src = in[0]->data;
  unsigned char *o = (unsigned char *)out[0]->data;
  for (int64_t i = 0; i < n; i++, o += es) {
    int64_t len = fc_tensor_get_i64(in[1], idx[ba]), t = idx[ta];
    int64_t from = i + (t < len ? (len - 1 - 2 * t) * xs[ta] : 0);
    memcpy(o, src + (size_t)from * es, es);
    fc_ev_next(idx, xt->dims, r);
  }
  return FC_OK;
}
