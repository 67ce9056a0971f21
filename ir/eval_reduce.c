/* eval_reduce.c — reference evaluators of the ops that combine elements along axes: reduce_*,
 * argmax/argmin, softmax/log_softmax, layer_norm and cumsum.
 *
 * Reductions visit, for each result element, the input elements of its reduced sub-box by decomposing
 * a running index over the reduced dims, so no scratch proportional to the tensor is needed. Floats
 * accumulate in double; integers accumulate with wraparound in uint64_t (sums and products) or compare
 * in their signed/unsigned domain (max, min). Empty reductions give the identity: 0 for sum, 1 for
 * prod, the dtype's lowest/highest value for max/min (-inf/+inf for floats), NaN for a float mean; an
 * integer mean of nothing is declined (FC_ERR_UNSUPPORTED); a quantised mean sums the storage integers and
 * finishes with fc_quant_mean (ops.def). NaN propagates through max/min and is the
 * winner of argmax/argmin (first occurrence, or last with select_last_index), as NumPy does.
 */
#include "eval_ew.h"

#include <math.h>

/* Lowest / highest value of an integer dtype, as the bits fc_ee_setu stores. */
static uint64_t int_lowest(FcDtype dt) {
  FcEeDomain d = fc_ee_domain(dt);
  unsigned w = (unsigned)fc_dtype_size(dt) * 8;
  if (d != FC_EE_SINT) return 0;
  return (uint64_t)0 - ((uint64_t)1 << (w - 1));
}

static uint64_t int_highest(FcDtype dt) {
  FcEeDomain d = fc_ee_domain(dt);
  unsigned w = (unsigned)fc_dtype_size(dt) * 8;
  if (dt == FC_DT_BOOL) return 1;
  if (d == FC_EE_SINT) return ((uint64_t)1 << (w - 1)) - 1;
  return w == 64 ? UINT64_MAX : ((uint64_t)1 << w) - 1;
}

FcStatus fc_eval_reduce(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  const FcTensor *x = in[0];
  FcTensor *y = fc_tensor_new(arena, op->results[0].type);
  const FcType *t = &x->type;
  const int64_t *axes;
  int n_axes = fc_op_attr_ints(op, FC_ATTR_AXES, &axes);
  int r = t->rank;
  int64_t *kd = FC_NEW_ARRAY(arena, int64_t, (size_t)r + 1), *ks = FC_NEW_ARRAY(arena, int64_t, (size_t)r + 1);
  int64_t *rd = FC_NEW_ARRAY(arena, int64_t, (size_t)r + 1), *rs = FC_NEW_ARRAY(arena, int64_t, (size_t)r + 1);
  int nk = 0, nr = 0, ai = 0;
  int64_t *strides = FC_NEW_ARRAY(arena, int64_t, (size_t)r + 1);
  for (int a = r - 1; a >= 0; a--) strides[a] = fc_ee_prod(t->dims + a + 1, r - a - 1);
  for (int a = 0; a < r; a++) {
    if (ai < n_axes && axes[ai] == a) {
      rd[nr] = t->dims[a];
      rs[nr++] = strides[a];
      ai++;
    } else {
      kd[nk] = t->dims[a];
      ks[nk++] = strides[a];
    }
  }
  /* n_out * count = numel(x), so neither saturates unless the other is 0 (and then x is not read). */
  int64_t n_out = fc_ee_numel(&y->type), count = fc_ee_prod(rd, nr);
  if (n_out == 0) {
    out[0] = y;
    return FC_OK;
  }

  FcOpKind k = op->kind;
  FcEeDomain dom = fc_ee_domain(t->dtype);
  if (k == FC_OP_REDUCE_MEAN && dom != FC_EE_FLOAT && count == 0)
    return fc_ee_fail(op, diag, FC_ERR_UNSUPPORTED, "integer mean of an empty set");
  for (int64_t o = 0; o < n_out; o++) {
    int64_t base = 0, rem = o;
    for (int a = nk - 1; a >= 0; a--) {
      base += (rem % kd[a]) * ks[a];
      rem /= kd[a];
    }
    double facc = k == FC_OP_REDUCE_PROD ? 1.0 : k == FC_OP_REDUCE_MAX ? -INFINITY : k == FC_OP_REDUCE_MIN ? INFINITY : 0.0;
    uint64_t iacc = k == FC_OP_REDUCE_PROD ? 1 : k == FC_OP_REDUCE_MAX ? int_lowest(t->dtype)
                  : k == FC_OP_REDUCE_MIN ? int_highest(t->dtype) : 0;
    for (int64_t j = 0; j < count; j++) {
      int64_t off = base, jr = j;
      for (int a = nr - 1; a >= 0; a--) {
        off += (jr % rd[a]) * rs[a];
        jr /= rd[a];
      }
      if (dom == FC_EE_FLOAT) {
        double v = fc_ee_getf(x, off);
        switch (k) {
        case FC_OP_REDUCE_SUM: case FC_OP_REDUCE_MEAN: facc += v; break;
        case FC_OP_REDUCE_PROD: facc *= v; break;
        /* -0 below +0, as the kernels' llvm.maximum/minimum and the element-wise max/min order them */
        case FC_OP_REDUCE_MAX:
          facc = isnan(facc) || isnan(v) ? NAN : v > facc || (v == facc && !signbit(v)) ? v : facc;
          break;
        case FC_OP_REDUCE_MIN:
          facc = isnan(facc) || isnan(v) ? NAN : v < facc || (v == facc && signbit(v)) ? v : facc;
          break;
        default: FC_UNREACHABLE();
        }
      } else {
        uint64_t v = fc_ee_getu(x, off);
        bool gt = dom == FC_EE_SINT ? (int64_t)v > (int64_t)iacc : v > iacc;
        bool lt = dom == FC_EE_SINT ? (int64_t)v < (int64_t)iacc : v < iacc;
        switch (k) {
        case FC_OP_REDUCE_SUM: case FC_OP_REDUCE_MEAN: iacc += v; break;
        case FC_OP_REDUCE_PROD: iacc *= v; break;
        case FC_OP_REDUCE_MAX: if (gt) iacc = v; break;
        case FC_OP_REDUCE_MIN: if (lt) iacc = v; break;
        default: FC_UNREACHABLE();
        }
      }
    }
    if (dom == FC_EE_FLOAT) {
      fc_ee_setf(y, o, k == FC_OP_REDUCE_MEAN ? facc / (double)count : facc);
    } else {
      if (y->type.quant) { /* the quantised mean: iacc is the wrapped sum of the storage integers */
        fc_tensor_set_i64(y, o, fc_quant_mean(t->quant, y->type.quant, (int64_t)iacc, count));
        continue;
      }
      if (k == FC_OP_REDUCE_MEAN) /* truncating, like NumPy's float mean cast back to the integer dtype */
        iacc = dom == FC_EE_SINT ? (uint64_t)((int64_t)iacc / count) : iacc / (uint64_t)count;
      fc_ee_setu(y, o, iacc);
    }
  }
  out[0] = y;
  return FC_OK;
}

FcStatus fc_eval_argreduce(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  const FcTensor *x = in[0];
  FcTensor *y = fc_tensor_new(arena, op->results[0].type);
  int axis = (int)fc_op_attr_int(op, FC_ATTR_AXIS, 0);
  bool last = fc_op_attr_int(op, FC_ATTR_SELECT_LAST_INDEX, 0) != 0, is_max = op->kind == FC_OP_ARGMAX;
  FcEeAxis s = fc_ee_axis_split(&x->type, axis);
  FcEeDomain dom = fc_ee_domain(x->type.dtype);
  if (s.n == 0) return fc_ee_fail(op, diag, FC_ERR_INPUT, "cannot reduce an empty axis");
  if (fc_ee_numel(&x->type) == 0) {
    out[0] = y;
    return FC_OK;
  }
  for (int64_t o = 0; o < s.outer; o++)
    for (int64_t in_i = 0; in_i < s.inner; in_i++) {
      int64_t base = o * s.n * s.inner + in_i;
      int64_t best = last ? s.n - 1 : 0;
      /* Walk from the preferred end; only a strictly better element replaces the current best. */
      for (int64_t step = 1; step < s.n; step++) {
        int64_t j = last ? s.n - 1 - step : step;
        int64_t pj = base + j * s.inner, pb = base + best * s.inner;
        bool better;
        if (dom == FC_EE_FLOAT) {
          double v = fc_ee_getf(x, pj), b = fc_ee_getf(x, pb);
          better = !isnan(b) && (isnan(v) || (is_max ? v > b : v < b));
        } else {
          uint64_t v = fc_ee_getu(x, pj), b = fc_ee_getu(x, pb);
          if (dom == FC_EE_SINT) better = is_max ? (int64_t)v > (int64_t)b : (int64_t)v < (int64_t)b;
          else better = is_max ? v > b : v < b;
        }
        if (better) best = j;
      }
      fc_ee_setu(y, o * s.inner + in_i, (uint64_t)best);
    }
  out[0] = y;
  return FC_OK;
}

FcStatus fc_eval_softmax(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  const FcTensor *x = in[0];
  FcTensor *y = fc_tensor_new(arena, op->results[0].type);
  FcEeAxis s = fc_ee_axis_split(&x->type, (int)fc_op_attr_int(op, FC_ATTR_AXIS, 0));
  bool log_form = op->kind == FC_OP_LOG_SOFTMAX;
  if (fc_ee_numel(&x->type) == 0) {
    out[0] = y;
    return FC_OK;
  }
  for (int64_t o = 0; o < s.outer; o++)
    for (int64_t in_i = 0; in_i < s.inner; in_i++) {
      int64_t base = o * s.n * s.inner + in_i;
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < s.n; j++) {
        double v = fc_ee_getf(x, base + j * s.inner);
        if (v > mx || isnan(v)) mx = isnan(mx) ? mx : v;
      }
      for (int64_t j = 0; j < s.n; j++) sum += exp(fc_ee_getf(x, base + j * s.inner) - mx);
      for (int64_t j = 0; j < s.n; j++) {
        double d = fc_ee_getf(x, base + j * s.inner) - mx;
        fc_ee_setf(y, base + j * s.inner, log_form ? d - log(sum) : exp(d) / sum);
      }
    }
  out[0] = y;
  return FC_OK;
}

FcStatus fc_eval_layer_norm(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  const FcTensor *x = in[0], *scale = in[1], *bias = op->n_operands > 2 ? in[2] : NULL;
  int axis = (int)fc_op_attr_int(op, FC_ATTR_AXIS, 0);
  double eps = (double)fc_op_attr_float(op, FC_ATTR_EPSILON, 1e-5f);
  for (int i = 0; i < op->n_results; i++) out[i] = fc_tensor_new(arena, op->results[i].type);
  /* An empty x still has mean/inv_std_dev rows when a normalised dim is 0 (they are NaN); when a
   * leading dim is 0 there is nothing at all. */
  int64_t outer = fc_ee_prod(x->type.dims, axis), inner = fc_ee_prod(x->type.dims + axis, x->type.rank - axis);
  if (outer == 0 || (inner == 0 && op->n_results == 1)) return FC_OK;
  FcType norm = {x->type.dtype, x->type.rank - axis, x->type.dims + axis};
  const FcType *ts[2] = {&scale->type, bias ? &bias->type : &scale->type};
  FcEeBcast it;
  fc_ee_bcast_init(&it, arena, &norm, ts, 2);
  for (int64_t o = 0; o < outer; o++) {
    const int64_t base = o * inner;
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < inner; j++) sum += fc_ee_getf(x, base + j);
    double mean = sum / (double)inner;
    for (int64_t j = 0; j < inner; j++) {
      double d = fc_ee_getf(x, base + j) - mean;
      sq += d * d;
    }
    double inv = 1.0 / sqrt(sq / (double)inner + eps);
    for (int64_t j = 0; j < inner; j++, fc_ee_bcast_next(&it)) {
      double v = (fc_ee_getf(x, base + j) - mean) * inv * fc_ee_getf(scale, it.off[0]);
      if (bias) v += fc_ee_getf(bias, it.off[1]);
      fc_ee_setf(out[0], base + j, v);
    }
    if (op->n_results > 1) fc_ee_setf(out[1], o, mean);
    if (op->n_results > 2) fc_ee_setf(out[2], o, inv);
  }
  return FC_OK;
}

FcStatus fc_eval_cumsum(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  const FcTensor *x = in[0];
  FcTensor *y = fc_tensor_new(arena, op->results[0].type);
  FcEeAxis s = fc_ee_axis_split(&x->type, (int)fc_op_attr_int(op, FC_ATTR_AXIS, 0));
  bool excl = fc_op_attr_int(op, FC_ATTR_EXCLUSIVE, 0) != 0, rev = fc_op_attr_int(op, FC_ATTR_REVERSE, 0) != 0;
  bool is_float = fc_ee_domain(x->type.dtype) == FC_EE_FLOAT;
  if (fc_ee_numel(&x->type) == 0) {
    out[0] = y;
    return FC_OK;
  }
  for (int64_t o = 0; o < s.outer; o++)
    for (int64_t in_i = 0; in_i < s.inner; in_i++) {
      int64_t base = o * s.n * s.inner + in_i;
      double facc = 0;
      uint64_t iacc = 0;
      for (int64_t step = 0; step < s.n; step++) {
        int64_t p = base + (rev ? s.n - 1 - step : step) * s.inner;
        if (is_float) {
          double v = fc_ee_getf(x, p);
          if (!excl) facc += v;
          fc_ee_setf(y, p, facc);
          if (excl) facc += v;
        } else {
          uint64_t v = fc_ee_getu(x, p);
          if (!excl) iacc += v;
          fc_ee_setu(y, p, iacc);
          if (excl) iacc += v;
        }
      }
    }
  out[0] = y;
  return FC_OK;
}
