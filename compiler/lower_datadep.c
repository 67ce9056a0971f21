/* lower_datadep.c — legalisers of ops whose output shapes depend on input values: NonZero, Unique and
 * NonMaxSuppression.
 *
 * flowc's IR has static shapes only, so these ops are evaluated at import time: every input must be a
 * compile-time constant (an initializer, a chain of pure ops over constants, or a graph input bound with
 * --bind / the bind callback; fc_lx_const_input records the "bind it with --bind" message otherwise).
 * The results are computed here in C as ONNX's reference implementations compute them (op_non_zero.py
 * and op_unique.py on numpy, op_non_max_suppression.py a port of onnxruntime's kernel), and emitted as
 * CONSTANT ops.
 *
 * NonZero: the [rank, nnz] i64 coordinates of the non-zero elements in row-major order (NaN is non-zero;
 * a rank-0 input gives [0, nnz]).
 * Unique: numpy.unique on the flattened input, or on the slices along `axis` compared lexicographically
 * in row-major order of the other dims. A stable sort keeps the first occurrence of each value first, so
 * `indices` are first occurrences; sorted=0 reorders the unique values by first occurrence. Floats compare
 * numerically (-0 equals 0) with NaN after every number and equal to NaN, as numpy's equal_nan.
 * NonMaxSuppression: per batch and class, boxes whose score exceeds score_threshold (when given) are
 * visited by descending score (ties: lower box index first) and selected unless their IoU with an
 * already selected box exceeds iou_threshold, until max_output_boxes_per_class are selected; IoU is
 * computed in f32 exactly as the reference (corners normalised with min/max, or centre + size when
 * center_point_box=1; a non-positive area never suppresses). NaN scores sort after every number.
 */
#include "onnx.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Numel of a constant, already known to fit (its data exists), as a size for loops. */
static int64_t numel_of(const FcTensor *t) {
  int64_t n;
  FC_ASSERT(fc_type_numel(&t->type, &n));
  return n;
}

/* An i64 constant [d0, d1] (or [d0] when rank is 1), refusing sizes beyond the tensor limit before any
 * allocation. Returns its data (zeroed) and sets *t; NULL after recording an error. */
static int64_t *new_i64(FcLower *l, int rank, int64_t d0, int64_t d1, FcTensor **t) {
  int64_t dims[2] = {d0, d1}, bytes;
  if (!fc_checked_mul(d0, rank == 2 ? d1 : 1, &bytes) || !fc_checked_mul(bytes, 8, &bytes) ||
      bytes > FC_DEFAULT_MAX_TENSOR_BYTES) {
    fc_lx_error(l, "result of %lld x %lld elements is too large", (long long)d0, (long long)(rank == 2 ? d1 : 1));
    return NULL;
  }
  *t = fc_tensor_new(fc_lx_arena(l), fc_type_make(fc_lx_arena(l), FC_DT_I64, rank, dims));
  return (int64_t *)(*t)->data;
}

/* ---- NonZero ------------------------------------------------------------------------------------- */

static bool elem_nonzero(const FcTensor *t, int64_t i) {
  switch (fc_dtype_class(t->type.dtype)) {
  case FC_DTC_FLOAT: return fc_tensor_get_f64(t, i) != 0.0; /* NaN != 0 */
  default: return fc_tensor_get_i64(t, i) != 0;               /* u64 keeps its bits: non-zero stays so */
  }
}

FcStatus fc_lower_nonzero(FcLower *l) {
  const FcTensor *x = fc_lx_const_input(l, 0);
  if (!x) return fc_lx_bail(l);
  int rank = x->type.rank;
  int64_t n = numel_of(x), nnz = 0;
  for (int64_t i = 0; i < n; i++) nnz += elem_nonzero(x, i);
  FcTensor *y;
  int64_t *out = new_i64(l, 2, rank, nnz, &y);
  if (!out) return fc_lx_bail(l);
  int64_t c = 0;
  for (int64_t i = 0; i < n && rank > 0; i++) {
    if (!elem_nonzero(x, i)) continue;
    int64_t rest = i;
    for (int k = rank - 1; k >= 0; k--) {
      out[k * nnz + c] = rest % x->type.dims[k];
      rest /= x->type.dims[k];
    }
    c++;
  }
  l->out[0] = fc_b_const_tensor(l->b, y);
  return fc_lx_finish(l);
}

/* ---- Unique -------------------------------------------------------------------------------------- */

/* The input viewed as `count` slices along the unique axis: slice i is the elements
 * (o * count + i) * inner + k for o < outer, k < inner (outer = inner = 1 when flattened). */
typedef struct Slices {
  const FcTensor *x;
  int64_t outer, count, inner;
} Slices;

static int cmp_elem(const FcTensor *x, int64_t a, int64_t b) {
  switch (fc_dtype_class(x->type.dtype)) {
  case FC_DTC_FLOAT: {
    double u = fc_tensor_get_f64(x, a), v = fc_tensor_get_f64(x, b);
    bool un = isnan(u), vn = isnan(v);
    if (un || vn) return un - vn; /* NaN after numbers, equal to NaN */
    return (u > v) - (u < v);
  }
  case FC_DTC_UINT: {
    uint64_t u = (uint64_t)fc_tensor_get_i64(x, a), v = (uint64_t)fc_tensor_get_i64(x, b);
    return (u > v) - (u < v);
  }
  default: {
    int64_t u = fc_tensor_get_i64(x, a), v = fc_tensor_get_i64(x, b);
    return (u > v) - (u < v);
  }
  }
}

static int cmp_slice(const Slices *s, int64_t i, int64_t j) {
  for (int64_t o = 0; o < s->outer; o++)
    for (int64_t k = 0; k < s->inner; k++) {
      int c = cmp_elem(s->x, (o * s->count + i) * s->inner + k, (o * s->count + j) * s->inner + k);
      if (c) return c;
    }
  return 0;
}

/* Stable merge sort of slice indices a[0..n) (tmp: scratch of n). */
static void sort_slices(const Slices *s, int64_t *a, int64_t *tmp, int64_t n) {
  if (n < 2) return;
  int64_t h = n / 2;
  sort_slices(s, a, tmp, h);
  sort_slices(s, a + h, tmp, n - h);
  int64_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = cmp_slice(s, a[j], a[i]) < 0 ? a[j++] : a[i++];
  while (i < h) tmp[k++] = a[i++];
  while (j < n) tmp[k++] = a[j++];
  memcpy(a, tmp, (size_t)n * sizeof *a);
}

static int cmp_i64(const void *pa, const void *pb) {
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  return (a > b) - (a < b);
}

FcStatus fc_lower_unique(FcLower *l) {
  const FcTensor *x = fc_lx_const_input(l, 0);
  if (!x) return fc_lx_bail(l);
  FcArena *a = fc_lx_arena(l);
  int rank = x->type.rank;
  Slices s = {x, 1, numel_of(x), 1};
  int64_t axis = -1;
  if (fc_lx_has_attr(l, "axis")) {
    if (rank < 1) return fc_lx_error(l, "axis needs an input of rank >= 1");
    if (!fc_lx_axis(l, fc_lx_int(l, "axis", 0), rank, &axis)) return fc_lx_bail(l);
    s.count = x->type.dims[axis];
    for (int i = 0; i < rank; i++)
      if ((i < axis && !fc_checked_mul(s.outer, x->type.dims[i], &s.outer)) ||
          (i > axis && !fc_checked_mul(s.inner, x->type.dims[i], &s.inner)))
        return fc_lx_error(l, "input dims around axis %lld are too large", (long long)axis);
  }
  /* With an empty input the slice count is not bounded by the data: bound the six i64 arrays of that
   * length (work arrays and inverse_indices) before allocating them. */
  int64_t work_bytes;
  if (!fc_checked_mul(s.count, 6 * 8, &work_bytes) || work_bytes > FC_DEFAULT_MAX_TENSOR_BYTES)
    return fc_lx_error(l, "%lld slices along axis %lld are too many", (long long)s.count, (long long)axis);
  bool sorted = fc_lx_int(l, "sorted", 1) != 0;
  int64_t n = s.count;
  int64_t *order = FC_NEW_ARRAY(a, int64_t, (size_t)n + 1), *tmp = FC_NEW_ARRAY(a, int64_t, (size_t)n + 1);
  for (int64_t i = 0; i < n; i++) order[i] = i;
  sort_slices(&s, order, tmp, n);

  /* Groups of equal slices in sorted order; first[g] is group g's earliest slice (the sort is stable). */
  int64_t *group_of = FC_NEW_ARRAY(a, int64_t, (size_t)n + 1); /* slice → group */
  int64_t *first = FC_NEW_ARRAY(a, int64_t, (size_t)n + 1), *count = FC_NEW_ARRAY(a, int64_t, (size_t)n + 1);
  int64_t u = 0;
  for (int64_t k = 0; k < n; k++) {
    if (k == 0 || cmp_slice(&s, order[k - 1], order[k]) != 0) first[u++] = order[k];
    group_of[order[k]] = u - 1;
    count[u - 1]++;
  }
  /* pos[g]: position of group g in the outputs. */
  int64_t *pos = FC_NEW_ARRAY(a, int64_t, (size_t)u + 1);
  for (int64_t g = 0; g < u; g++) pos[g] = g;
  if (!sorted) {
    /* First occurrences are distinct slice indices: sorting them orders groups by first occurrence. */
    int64_t *firsts = FC_NEW_ARRAY(a, int64_t, (size_t)u + 1);
    memcpy(firsts, first, (size_t)u * sizeof *first);
    qsort(firsts, (size_t)u, sizeof *firsts, cmp_i64);
    /* group_of the first occurrence names the group at each output position */
    for (int64_t p = 0; p < u; p++) pos[group_of[firsts[p]]] = p;
  }

  /* Y: the first-occurrence slices (elements copied bit for bit) at their positions. */
  int64_t *ydims = FC_NEW_ARRAY(a, int64_t, rank > 0 ? (size_t)rank : 1);
  int yrank = 1;
  if (axis < 0) {
    ydims[0] = u;
  } else {
    yrank = rank;
    memcpy(ydims, x->type.dims, (size_t)rank * sizeof *ydims);
    ydims[axis] = u;
  }
  FcTensor *y = fc_tensor_new(a, fc_type_make(a, x->type.dtype, yrank, ydims));
  size_t es = fc_dtype_size(x->type.dtype);
  for (int64_t g = 0; g < u; g++)
    for (int64_t o = 0; o < s.outer; o++)
      memcpy((unsigned char *)y->data + (size_t)((o * u + pos[g]) * s.inner) * es,
             (const unsigned char *)x->data + (size_t)((o * n + first[g]) * s.inner) * es, (size_t)s.inner * es);

  FcTensor *t_idx, *t_inv, *t_cnt;
  int64_t *o_idx = new_i64(l, 1, u, 1, &t_idx), *o_inv = new_i64(l, 1, n, 1, &t_inv),
          *o_cnt = new_i64(l, 1, u, 1, &t_cnt);
  if (!o_idx || !o_inv || !o_cnt) return fc_lx_bail(l);
  for (int64_t g = 0; g < u; g++) {
    o_idx[pos[g]] = first[g];
    o_cnt[pos[g]] = count[g];
  }
  for (int64_t i = 0; i < n; i++) o_inv[i] = pos[group_of[i]];

  FcTensor *outs[4] = {y, t_idx, t_inv, t_cnt};
  for (int i = 0; i < l->n_out && i < 4; i++)
    if (l->node->output[i] && *l->node->output[i]) l->out[i] = fc_b_const_tensor(l->b, outs[i]);
  return fc_lx_finish(l);
}

/* ---- NonMaxSuppression --------------------------------------------------------------------------- */

/* The one element of optional input i (rank 0 or a single element), of a float or an integer dtype;
 * *present is false when the input is absent. False after recording an error. */
static bool scalar_input(FcLower *l, int i, bool want_float, const FcTensor **out, bool *present) {
  *present = false;
  if (i >= l->n_in || !l->in[i]) return true;
  const FcTensor *t = fc_lx_const_input(l, i);
  if (!t) return false;
  char buf[128];
  if (numel_of(t) != 1 || (want_float ? !fc_dtype_is_float(t->type.dtype) : !fc_dtype_is_int(t->type.dtype))) {
    fc_lx_error(l, "input %d must hold one %s, not %s", i, want_float ? "float" : "integer",
                fc_type_str(&t->type, buf, sizeof buf));
    return false;
  }
  *out = t;
  *present = true;
  return true;
}

typedef struct Cand {
  float score;
  int64_t index;
} Cand;

static int cmp_cand(const void *pa, const void *pb) {
  const Cand *a = pa, *b = pb;
  bool an = isnan(a->score), bn = isnan(b->score);
  if (an != bn) return an - bn;
  if (!an && a->score != b->score) return a->score > b->score ? -1 : 1;
  return (a->index > b->index) - (a->index < b->index);
}

/* The reference's MaxMin, std::max and std::min, spelled out so NaNs go where they go there. */
static void min_max(float a, float b, float *lo, float *hi) {
  if (a >= b) {
    *lo = b;
    *hi = a;
  } else {
    *lo = a;
    *hi = b;
  }
}
static float max2(float a, float b) { return a < b ? b : a; }
static float min2(float a, float b) { return b < a ? b : a; }

/* Box extents as the reference derives them: [y1, x1, y2, x2] corners in any order, or
 * [x_center, y_center, width, height]. */
static void box_extent(const float *bx, int center, float *x0, float *x1, float *y0, float *y1) {
  if (!center) {
    min_max(bx[1], bx[3], x0, x1);
    min_max(bx[0], bx[2], y0, y1);
  } else {
    float wh = bx[2] / 2, hh = bx[3] / 2;
    *x0 = bx[0] - wh;
    *x1 = bx[0] + wh;
    *y0 = bx[1] - hh;
    *y1 = bx[1] + hh;
  }
}

static bool suppress_by_iou(const float *b1, const float *b2, int center, float iou_threshold) {
  float ax0, ax1, ay0, ay1, bx0, bx1, by0, by1;
  box_extent(b1, center, &ax0, &ax1, &ay0, &ay1);
  box_extent(b2, center, &bx0, &bx1, &by0, &by1);
  float ix0 = max2(ax0, bx0), ix1 = min2(ax1, bx1);
  if (ix1 <= ix0) return false;
  float iy0 = max2(ay0, by0), iy1 = min2(ay1, by1);
  if (iy1 <= iy0) return false;
  float inter = (ix1 - ix0) * (iy1 - iy0);
  if (inter <= 0.0f) return false;
  float area1 = (ax1 - ax0) * (ay1 - ay0), area2 = (bx1 - bx0) * (by1 - by0);
  float uni = area1 + area2 - inter;
  if (area1 <= 0.0f || area2 <= 0.0f || uni <= 0.0f) return false;
  return inter / uni > iou_threshold;
}

FcStatus fc_lower_nms(FcLower *l) {
  if (l->n_in < 2) return fc_lx_error(l, "expects inputs boxes and scores");
  const FcTensor *boxes = fc_lx_const_input(l, 0);
  const FcTensor *scores = boxes ? fc_lx_const_input(l, 1) : NULL;
  if (!boxes || !scores) return fc_lx_bail(l);
  char b1[128], b2[128];
  if (boxes->type.rank != 3 || scores->type.rank != 3 || boxes->type.dims[2] != 4 ||
      boxes->type.dims[0] != scores->type.dims[0] || boxes->type.dims[1] != scores->type.dims[2] ||
      boxes->type.dtype != FC_DT_F32 || scores->type.dtype != FC_DT_F32)
    return fc_lx_error(l, "boxes must be f32 [batches, boxes, 4] and scores f32 [batches, classes, boxes], "
                       "have %s and %s", fc_type_str(&boxes->type, b1, sizeof b1),
                       fc_type_str(&scores->type, b2, sizeof b2));
  int64_t center = fc_lx_int(l, "center_point_box", 0);
  if (center != 0 && center != 1) return fc_lx_error(l, "center_point_box must be 0 or 1, is %lld", (long long)center);
  const FcTensor *t_max = NULL, *t_iou = NULL, *t_score = NULL;
  bool has_max, has_iou, has_score;
  if (!scalar_input(l, 2, false, &t_max, &has_max) || !scalar_input(l, 3, true, &t_iou, &has_iou) ||
      !scalar_input(l, 4, true, &t_score, &has_score))
    return fc_lx_bail(l);
  /* Absent or negative max_output_boxes_per_class selects nothing (onnxruntime clamps at 0). */
  int64_t max_out = has_max ? fc_tensor_get_i64(t_max, 0) : 0;
  float iou_f = has_iou ? (float)fc_tensor_get_f64(t_iou, 0) : 0.0f;
  float score_f = has_score ? (float)fc_tensor_get_f64(t_score, 0) : 0.0f;
  if (!(iou_f >= 0.0f && iou_f <= 1.0f)) return fc_lx_error(l, "iou_threshold must be in [0, 1], is %g", (double)iou_f);

  int64_t nb = boxes->type.dims[0], ns = boxes->type.dims[1], nc = scores->type.dims[1];
  const float *bd = boxes->data, *sd = scores->data;
  int64_t limit = max_out < 0 ? 0 : max_out < ns ? max_out : ns;
  /* At most `limit` per batch and class; with limit > 0, nb * nc * limit <= numel(scores), which exists
   * (with no boxes, nb * nc alone may not fit). */
  int64_t cap = limit > 0 ? nb * nc * limit : 0, cap_bytes;
  if (!fc_checked_mul(cap, 3 * 8, &cap_bytes) || cap_bytes > FC_DEFAULT_MAX_TENSOR_BYTES)
    return fc_lx_error(l, "up to %lld selected boxes is too many", (long long)cap);
  FcArena *a = fc_lx_arena(l);
  int64_t *sel = FC_NEW_ARRAY(a, int64_t, (size_t)cap * 3 + 1);
  Cand *cand = FC_NEW_ARRAY(a, Cand, (size_t)ns + 1);
  int64_t *chosen = FC_NEW_ARRAY(a, int64_t, (size_t)limit + 1);
  int64_t n_sel = 0;
  for (int64_t bi = 0; bi < nb && limit > 0; bi++) {
    const float *bb = bd + bi * ns * 4;
    for (int64_t ci = 0; ci < nc; ci++) {
      const float *sc = sd + (bi * nc + ci) * ns;
      int64_t n_cand = 0;
      for (int64_t k = 0; k < ns; k++)
        if (!has_score || sc[k] > score_f) cand[n_cand++] = (Cand){sc[k], k};
      qsort(cand, (size_t)n_cand, sizeof *cand, cmp_cand);
      int64_t n_chosen = 0;
      for (int64_t k = 0; k < n_cand && n_chosen < limit; k++) {
        bool keep = true;
        for (int64_t j = 0; j < n_chosen && keep; j++)
          keep = !suppress_by_iou(bb + cand[k].index * 4, bb + chosen[j] * 4, (int)center, iou_f);
        if (!keep) continue;
        chosen[n_chosen++] = cand[k].index;
        sel[n_sel * 3] = bi;
        sel[n_sel * 3 + 1] = ci;
        sel[n_sel * 3 + 2] = cand[k].index;
        n_sel++;
      }
    }
  }
  int64_t dims[2] = {n_sel, 3};
  l->out[0] = fc_b_const(l->b, FC_DT_I64, 2, dims, sel);
  return fc_lx_finish(l);
}
