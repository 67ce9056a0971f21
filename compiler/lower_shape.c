/* lower_shape.c — legalisers for shapes and data movement.
 *
 * Shapes are static, so everything about a shape is decided here: Shape, Size, ConstantOfShape, Range,
 * EyeLike and Trilu's mask become constants; Reshape, Flatten, Squeeze and Unsqueeze become one core
 * reshape with the full result shape; Slice is normalised to a full-rank core slice whose starts, ends
 * and steps are clamped exactly as the ONNX spec says (so the core op never sees a negative index or an
 * out-of-range bound); Split is a list of such slices; Tile is reshape → broadcast → reshape;
 * DepthToSpace/SpaceToDepth are reshape → transpose → reshape as the spec writes them.
 *
 * Inputs that feed a shape (Reshape's shape, Slice's starts, ...) must be compile-time constants and
 * are read with fc_lx_const_ints, which reports "bind it with --bind" otherwise; the one exception is a
 * Slice x[s:s+c] with a run-time start and a constant length (loop bodies index so), a gather. Each opset's form is
 * handled: attributes before the opset that turned them into inputs (Slice-10, Pad-11, Reshape-5,
 * Squeeze/Unsqueeze/Split-13, Tile-6).
 */
#include "onnx.h"

#include <math.h>
#include <string.h>

static bool has_input(const FcLower *l, int i) { return i < l->n_in && l->in[i] != NULL; }

/* Product of dims[lo..hi); false on overflow. */
static bool dims_product(const int64_t *dims, int lo, int hi, int64_t *out) {
  int64_t p = 1;
  for (int i = lo; i < hi; i++)
    if (!fc_checked_mul(p, dims[i], &p)) return false;
  *out = p;
  return true;
}

/* Axes from an attribute (opset < `input_since`) or from constant input `idx`; *n = -1 when absent. */
static FcStatus axes_arg(FcLower *l, int input_since, int idx, const int64_t **axes, int *n) {
  if (l->opset < input_since) {
    *n = fc_lx_ints(l, "axes", axes);
    return FC_OK;
  }
  *n = -1;
  if (!has_input(l, idx)) return FC_OK;
  *n = fc_lx_const_ints(l, idx, axes);
  return *n < 0 ? fc_lx_bail(l) : FC_OK;
}

/* ---- identity, reshape family --------------------------------------------------------------------- */

FcStatus fc_lower_identity(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  l->out[0] = l->in[0];
  return fc_lx_finish(l);
}

/* Reshape: 0 copies the input dim (unless allowzero, opset 14), one -1 is inferred. */
FcStatus fc_lower_reshape(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, l->opset < 5 ? 1 : 2);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  const int64_t *shape;
  int n;
  if (l->opset < 5) {
    n = fc_lx_ints(l, "shape", &shape);
    if (n < 0) return fc_lx_error(l, "attribute 'shape' is required");
  } else if ((n = fc_lx_const_ints(l, 1, &shape)) < 0) {
    return fc_lx_bail(l);
  }
  bool allowzero = l->opset >= 14 && fc_lx_int(l, "allowzero", 0) != 0;
  int64_t *dims = fc_lx_dims(l, n), known = 1, numel;
  int infer = -1;
  for (int i = 0; i < n; i++) {
    int64_t v = shape[i];
    if (v == 0 && !allowzero) {
      if (i >= x->type.rank) return fc_lx_error(l, "shape[%d] = 0 copies a dim the input does not have", i);
      v = x->type.dims[i];
    } else if (v == -1) {
      if (infer >= 0) return fc_lx_error(l, "shape has more than one -1");
      infer = i;
      dims[i] = 1;
      continue;
    } else if (v < 0) {
      return fc_lx_error(l, "shape[%d] = %lld is negative", i, (long long)v);
    }
    dims[i] = v;
    if (!fc_checked_mul(known, v, &known)) return fc_lx_error(l, "shape is too large");
  }
  if (!fc_type_numel(&x->type, &numel)) return fc_lx_error(l, "input is too large");
  if (infer >= 0) {
    if (known == 0 || numel % known != 0)
      return fc_lx_error(l, "cannot infer the -1 dim: %lld elements into a multiple of %lld", (long long)numel,
                         (long long)known);
    dims[infer] = numel / known;
  } else if (known != numel) {
    return fc_lx_error(l, "shape has %lld elements, the input %lld", (long long)known, (long long)numel);
  }
  l->out[0] = fc_b_reshape(l->b, x, n, dims);
  return fc_lx_finish(l);
}

/* Flatten to [prod(d[0:axis]), prod(d[axis:])]; axis in [-r, r] (negative from opset 11). */
FcStatus fc_lower_flatten(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  int r = x->type.rank;
  int64_t axis = fc_lx_int(l, "axis", 1);
  if (axis < 0 && l->opset >= 11) axis += r;
  if (axis < 0 || axis > r)
    return fc_lx_error(l, "axis %lld is out of range for rank %d", (long long)fc_lx_int(l, "axis", 1), r);
  int64_t d[2];
  if (!dims_product(x->type.dims, 0, (int)axis, &d[0]) || !dims_product(x->type.dims, (int)axis, r, &d[1]))
    return fc_lx_error(l, "input is too large");
  l->out[0] = fc_b_reshape(l->b, x, 2, d);
  return fc_lx_finish(l);
}

/* Squeeze: the listed axes (each of size 1), or every size-1 axis when none are given (an empty axes
 * list counts as none, as in onnxruntime). */
FcStatus fc_lower_squeeze(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  int r = x->type.rank, n;
  const int64_t *axes;
  if ((st = axes_arg(l, 13, 1, &axes, &n)) != FC_OK) return st;
  bool *drop = FC_NEW_ARRAY(fc_lx_arena(l), bool, (size_t)(r > 0 ? r : 1));
  if (n <= 0) {
    for (int i = 0; i < r; i++) drop[i] = x->type.dims[i] == 1;
  } else {
    for (int i = 0; i < n; i++) {
      int64_t a;
      if (!fc_lx_axis(l, axes[i], r, &a)) return fc_lx_bail(l);
      if (x->type.dims[a] != 1)
        return fc_lx_error(l, "cannot squeeze axis %lld of size %lld", (long long)axes[i], (long long)x->type.dims[a]);
      drop[a] = true;
    }
  }
  int64_t *dims = fc_lx_dims(l, r);
  int k = 0;
  for (int i = 0; i < r; i++)
    if (!drop[i]) dims[k++] = x->type.dims[i];
  l->out[0] = fc_b_reshape(l->b, x, k, dims);
  return fc_lx_finish(l);
}

/* Unsqueeze: axes index the result (rank r + len(axes)) and may not repeat. */
FcStatus fc_lower_unsqueeze(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  int n;
  const int64_t *axes;
  if ((st = axes_arg(l, 13, 1, &axes, &n)) != FC_OK) return st;
  if (n < 0) return fc_lx_error(l, "axes are required");
  int64_t rr;
  if (!fc_checked_add(x->type.rank, n, &rr) || rr > 1 << 20) return fc_lx_error(l, "too many axes");
  int R = (int)rr;
  bool *ins = FC_NEW_ARRAY(fc_lx_arena(l), bool, (size_t)(R > 0 ? R : 1));
  for (int i = 0; i < n; i++) {
    int64_t a;
    if (!fc_lx_axis(l, axes[i], R, &a)) return fc_lx_bail(l);
    if (ins[a]) return fc_lx_error(l, "axis %lld is repeated", (long long)axes[i]);
    ins[a] = true;
  }
  int64_t *dims = fc_lx_dims(l, R);
  for (int i = 0, k = 0; i < R; i++) dims[i] = ins[i] ? 1 : x->type.dims[k++];
  l->out[0] = fc_b_reshape(l->b, x, R, dims);
  return fc_lx_finish(l);
}

/* ---- transpose, concat, split, slice -------------------------------------------------------------- */

FcStatus fc_lower_transpose(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  int r = x->type.rank;
  int64_t *perm = fc_lx_dims(l, r);
  const int64_t *p;
  int n = fc_lx_ints(l, "perm", &p);
  if (n < 0) {
    for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
  } else {
    if (n != r) return fc_lx_error(l, "perm has %d values for rank %d", n, r);
    bool *seen = FC_NEW_ARRAY(fc_lx_arena(l), bool, (size_t)(r > 0 ? r : 1));
    for (int i = 0; i < r; i++) {
      if (p[i] < 0 || p[i] >= r || seen[p[i]]) return fc_lx_error(l, "perm is not a permutation of 0..%d", r - 1);
      seen[p[i]] = true;
      perm[i] = p[i];
    }
  }
  l->out[0] = fc_b_transpose(l->b, x, perm);
  return fc_lx_finish(l);
}

FcStatus fc_lower_concat(FcLower *l) {
  if (l->n_in < 1) return fc_lx_error(l, "at least one input is required");
  FcStatus st = fc_lx_need_inputs(l, l->n_in);
  if (st != FC_OK) return st;
  if (l->opset >= 4 && !fc_lx_has_attr(l, "axis")) return fc_lx_error(l, "attribute 'axis' is required");
  int r = l->in[0]->type.rank;
  if (r < 1) return fc_lx_error(l, "inputs must have rank >= 1");
  int64_t axis;
  if (!fc_lx_axis(l, fc_lx_int(l, "axis", 1), r, &axis)) return fc_lx_bail(l);
  l->out[0] = fc_b_concat(l->b, l->in, l->n_in, axis);
  return fc_lx_finish(l);
}

/* A full-rank slice of x taking [start, start+len) along `axis` and everything elsewhere. */
static FcValue *slice_axis(FcLower *l, FcValue *x, int axis, int64_t start, int64_t len) {
  int r = x->type.rank;
  int64_t *s = fc_lx_dims(l, r), *e = fc_lx_dims(l, r), *st = fc_lx_dims(l, r);
  for (int i = 0; i < r; i++) {
    s[i] = 0;
    e[i] = x->type.dims[i];
    st[i] = 1;
  }
  s[axis] = start;
  e[axis] = start + len;
  return fc_b_slice(l->b, x, s, e, st);
}

/* Split into given sizes (attribute before opset 13, also an optional input in opset 1, an input from
 * 13) or, without sizes, into one part per output: equal parts before opset 18, then num_outputs parts
 * of ceil(dim / num_outputs) with a smaller last one. */
FcStatus fc_lower_split(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  int r = x->type.rank, n = l->n_out;
  if (r < 1) return fc_lx_error(l, "input must have rank >= 1");
  if (n < 1) return fc_lx_error(l, "at least one output is required");
  int64_t axis;
  if (!fc_lx_axis(l, fc_lx_int(l, "axis", 0), r, &axis)) return fc_lx_bail(l);
  int64_t dim = x->type.dims[axis];
  const int64_t *split = NULL;
  int k = -1;
  if ((l->opset >= 13 || l->opset < 2) && has_input(l, 1)) {
    if ((k = fc_lx_const_ints(l, 1, &split)) < 0) return fc_lx_bail(l);
  } else if (l->opset < 13) {
    k = fc_lx_ints(l, "split", &split);
  }
  int64_t *sizes = fc_lx_dims(l, n);
  if (k >= 0) {
    if (k != n) return fc_lx_error(l, "split has %d sizes for %d outputs", k, n);
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
      if (split[i] < 0 || !fc_checked_add(sum, split[i], &sum))
        return fc_lx_error(l, "split size %lld is invalid", (long long)split[i]);
      sizes[i] = split[i];
    }
    if (sum != dim)
      return fc_lx_error(l, "split sizes add up to %lld, the axis has %lld", (long long)sum, (long long)dim);
  } else if (l->opset >= 18) {
    /* num_outputs (required without split): parts of ceil(dim / n), the last one smaller */
    int64_t want = fc_lx_int(l, "num_outputs", -1);
    if (want < 1) return fc_lx_error(l, "either the split input or the num_outputs attribute is required");
    if (want != n) return fc_lx_error(l, "num_outputs is %lld but the node has %d outputs", (long long)want, n);
    int64_t part = dim / n + (dim % n != 0);
    if (part * (n - 1) >= dim && n > 1)
      return fc_lx_error(l, "axis of size %lld cannot split into %d parts of %lld", (long long)dim, n, (long long)part);
    for (int i = 0; i < n; i++) sizes[i] = i < n - 1 ? part : dim - part * (n - 1);
  } else {
    if (dim % n != 0) return fc_lx_error(l, "axis of size %lld does not split into %d equal parts", (long long)dim, n);
    for (int i = 0; i < n; i++) sizes[i] = dim / n;
  }
  int64_t off = 0;
  for (int i = 0; i < n; i++) {
    if (fc_lx_out_named(l, i)) l->out[i] = n == 1 ? x : slice_axis(l, x, (int)axis, off, sizes[i]);
    off += sizes[i];
  }
  return fc_lx_finish(l);
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The value v stands for, looking through reshapes (Unsqueeze, Squeeze, Flatten): same elements. */
static const FcValue *through_reshapes(const FcValue *v) {
  while (v->def && v->def->kind == FC_OP_RESHAPE) v = v->def->operands[0].value;
  return v;
}

/* Slice-10+ of one range whose start is a run-time value s and whose end is s + c for a constant c, the
 * form x[i:i+c] takes inside a loop body: a gather of x along the axis at s' + [0, c), with s' the start
 * made non-negative and clamped to [0, d - c] so that the c elements are always in bounds (ONNX would
 * return fewer elements there, a shape only known at run time). NULL, with nothing recorded, when the
 * slice has another form. */
static FcValue *run_time_slice(FcLower *l) {
  FcValue *x = l->in[0], *sv = l->in[1], *ev = l->in[2];
  if (sv->type.rank != 1 || sv->type.dims[0] != 1 || !fc_dtype_is_int(sv->type.dtype) || x->type.rank < 1) return NULL;
  const FcValue *base = through_reshapes(sv), *end = through_reshapes(ev);
  if (!end->def || end->def->kind != FC_OP_ADD) return NULL;
  const FcValue *p = end->def->operands[0].value, *q = end->def->operands[1].value;
  const FcTensor *c = through_reshapes(p) == base   ? fc_value_const(q)
                      : through_reshapes(q) == base ? fc_value_const(p)
                                                    : NULL;
  int64_t n;
  if (!c || !fc_type_numel(&c->type, &n) || n != 1) return NULL;
  int64_t axis = 0, len = fc_tensor_get_i64(c, 0);
  if (has_input(l, 3)) {
    const FcTensor *a = fc_lx_try_const_input(l, 3);
    if (!a || !fc_type_numel(&a->type, &n) || n != 1) return NULL;
    axis = fc_tensor_get_i64(a, 0);
  }
  if (has_input(l, 4)) {
    const FcTensor *t = fc_lx_try_const_input(l, 4);
    if (!t || !fc_type_numel(&t->type, &n) || n != 1 || fc_tensor_get_i64(t, 0) != 1) return NULL;
  }
  int64_t a;
  if (!fc_lx_axis(l, axis, x->type.rank, &a)) return NULL;
  int64_t d = x->type.dims[a];
  if (len < 1 || len > d) return NULL;
  FcBuilder *b = l->b;
  FcValue *s = fc_b_reshape(b, sv, 0, NULL);
  s = fc_lx_cast_to(l, s, FC_DT_I64);
  FcValue *neg = fc_b_binary(b, FC_OP_LESS, s, fc_b_scalar(b, FC_DT_I64, 0));
  FcValue *wrapped = fc_b_binary(b, FC_OP_ADD, s, fc_b_scalar(b, FC_DT_I64, (double)d));
  s = fc_b_select(b, neg, wrapped, s);
  FcValue *hi = fc_b_binary(b, FC_OP_MIN, s, fc_b_scalar(b, FC_DT_I64, (double)(d - len)));
  s = fc_b_binary(b, FC_OP_MAX, hi, fc_b_scalar(b, FC_DT_I64, 0));
  int64_t *iota = fc_lx_dims(l, (int)len);
  for (int64_t i = 0; i < len; i++) iota[i] = i;
  FcValue *idx = fc_b_binary(b, FC_OP_ADD, s, fc_b_const(b, FC_DT_I64, 1, &len, iota));
  FcValue *ops[2] = {x, idx};
  FcAttr at = FC_A_INT(AXIS, a);
  return fc_b_op1(b, FC_OP_GATHER, ops, 2, &at, 1);
}

/* Slice: starts/ends/axes (attributes before opset 10, inputs after, plus steps) normalised per the
 * spec: negative indices get the dim added, then starts clamp to [0, d] (step > 0) or [0, d-1]
 * (step < 0), ends to [0, d] or [-1, d-1]. An empty range becomes [0, 0) with step 1 and a one-element
 * range gets step +-1 (same elements), so equal slices have one canonical form. */
FcStatus fc_lower_slice(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, l->opset < 10 ? 1 : 3);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  int r = x->type.rank;
  const int64_t *starts, *ends, *axes = NULL, *steps = NULL;
  int ns, ne, na = -1, nt = -1;
  if (l->opset < 10) {
    ns = fc_lx_ints(l, "starts", &starts);
    ne = fc_lx_ints(l, "ends", &ends);
    if (ns < 0 || ne < 0) return fc_lx_error(l, "attributes 'starts' and 'ends' are required");
    na = fc_lx_ints(l, "axes", &axes);
  } else {
    if (!fc_lx_bind_const_input(l, 1) && l->diag->status == FC_OK && (l->out[0] = run_time_slice(l)) != NULL)
      return fc_lx_finish(l);
    if ((ns = fc_lx_const_ints(l, 1, &starts)) < 0 || (ne = fc_lx_const_ints(l, 2, &ends)) < 0) return fc_lx_bail(l);
    if (has_input(l, 3) && (na = fc_lx_const_ints(l, 3, &axes)) < 0) return fc_lx_bail(l);
    if (has_input(l, 4) && (nt = fc_lx_const_ints(l, 4, &steps)) < 0) return fc_lx_bail(l);
  }
  if (ne != ns || (na >= 0 && na != ns) || (nt >= 0 && nt != ns))
    return fc_lx_error(l, "starts, ends, axes and steps must have the same length");
  if (ns > r) return fc_lx_error(l, "%d slice ranges for rank %d", ns, r);
  int64_t *s = fc_lx_dims(l, r), *e = fc_lx_dims(l, r), *t = fc_lx_dims(l, r);
  bool *seen = FC_NEW_ARRAY(fc_lx_arena(l), bool, (size_t)(r > 0 ? r : 1));
  for (int i = 0; i < r; i++) {
    s[i] = 0;
    e[i] = x->type.dims[i];
    t[i] = 1;
  }
  for (int j = 0; j < ns; j++) {
    int64_t a;
    if (!fc_lx_axis(l, na >= 0 ? axes[j] : j, r, &a)) return fc_lx_bail(l);
    if (seen[a]) return fc_lx_error(l, "axis %lld is repeated", (long long)(na >= 0 ? axes[j] : j));
    seen[a] = true;
    int64_t d = x->type.dims[a], step = nt >= 0 ? steps[j] : 1, b = starts[j], en = ends[j];
    if (step == 0) return fc_lx_error(l, "steps cannot be 0");
    if (b < 0) b += d; /* d >= 0, so no overflow */
    if (en < 0) en += d;
    int64_t len;
    if (step > 0) {
      b = clamp64(b, 0, d);
      en = clamp64(en, 0, d);
      len = en > b ? (en - b - 1) / step + 1 : 0;
    } else {
      b = clamp64(b, 0, d - 1);
      en = clamp64(en, -1, d - 1);
      len = b > en ? (b - en - 1) / (step == INT64_MIN ? INT64_MAX : -step) + 1 : 0;
    }
    if (len == 0) {
      b = en = 0;
      step = 1;
    } else if (len == 1) {
      en = step > 0 ? b + 1 : b - 1;
      step = step > 0 ? 1 : -1;
    }
    s[a] = b;
    e[a] = en;
    t[a] = step;
  }
  l->out[0] = fc_b_slice(l->b, x, s, e, t);
  return fc_lx_finish(l);
}

/* ---- pad, tile, expand ---------------------------------------------------------------------------- */

/* Pad-19's wrap mode, one axis at a time: negative pads crop first (as for the other modes), then the
 * axis becomes concat(x[d-pre:], x, x[:post]). Pads larger than the (cropped) axis would wrap around
 * more than once; they are refused. */
static FcValue *pad_wrap(FcLower *l, FcValue *x, const int64_t *pads) {
  int r = x->type.rank;
  for (int a = 0; a < r && x; a++) {
    int64_t pre = pads[a], post = pads[a + r], d = x->type.dims[a];
    if (pre < 0 || post < 0) {
      int64_t lo = pre < 0 ? -pre : 0, hi = d - (post < 0 ? -post : 0);
      if (hi < lo) {
        fc_lx_error(l, "negative pads remove more than axis %d holds", a);
        return NULL;
      }
      x = slice_axis(l, x, a, lo, hi - lo);
      d = hi - lo;
    }
    pre = pre > 0 ? pre : 0;
    post = post > 0 ? post : 0;
    if (!pre && !post) continue;
    if (pre > d || post > d) {
      fc_lx_unsupported(l, "wrap pads larger than the axis (%lld) are not supported", (long long)d);
      return NULL;
    }
    FcValue *parts[3];
    int n = 0;
    if (pre) parts[n++] = slice_axis(l, x, a, d - pre, pre);
    parts[n++] = x;
    if (post) parts[n++] = slice_axis(l, x, a, 0, post);
    x = fc_b_concat(l->b, parts, n, a);
  }
  return x;
}

/* Pad-18's axes input: the pads given for those axes (begins, then ends), zero for the others. Returns
 * the full 2 * rank pads, NULL after an error. */
static const int64_t *pads_for_axes(FcLower *l, const int64_t *pads, int n, int r) {
  const int64_t *axes;
  int na = fc_lx_const_ints(l, 3, &axes);
  if (na < 0) return NULL;
  if (n != 2 * na) {
    fc_lx_error(l, "pads has %d values for %d axes", n, na);
    return NULL;
  }
  int64_t *full = fc_lx_dims(l, 2 * r), *seen = fc_lx_dims(l, r);
  for (int i = 0; i < 2 * r; i++) full[i] = 0;
  for (int i = 0; i < r; i++) seen[i] = 0;
  for (int i = 0; i < na; i++) {
    int64_t a;
    if (!fc_lx_axis(l, axes[i], r, &a)) return NULL;
    if (seen[a]) {
      fc_lx_error(l, "axis %lld is repeated", (long long)axes[i]);
      return NULL;
    }
    seen[a] = 1;
    full[a] = pads[i];
    full[a + r] = pads[i + na];
  }
  return full;
}

/* Pad: pads from `paddings` (opset 1), `pads` (2..10) or a constant input (11+), for the axes of the
 * optional axes input (18+) or all axes; the constant fill value from the `value` attribute (< 11) or
 * the optional third input, passed to the core op as a rank-0 operand (it need not be a compile-time
 * constant). Modes constant, reflect and edge are the core op's; wrap (19+) is built from slices. */
FcStatus fc_lower_pad(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, l->opset < 11 ? 1 : 2);
  if (st != FC_OK) return st;
  FcBuilder *b = l->b;
  FcValue *x = l->in[0], *value = NULL;
  int r = x->type.rank;
  const char *mode = fc_lx_str(l, "mode", "constant");
  bool wrap = l->opset >= 19 && !strcmp(mode, "wrap");
  if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge") && !wrap)
    return fc_lx_error(l, "unknown mode '%s'", mode);
  const int64_t *pads;
  int n;
  if (l->opset < 11) {
    n = fc_lx_ints(l, l->opset < 2 ? "paddings" : "pads", &pads);
    if (n < 0) return fc_lx_error(l, "attribute '%s' is required", l->opset < 2 ? "paddings" : "pads");
  } else if ((n = fc_lx_const_ints(l, 1, &pads)) < 0) {
    return fc_lx_bail(l);
  }
  if (l->opset >= 18 && has_input(l, 3)) {
    if (!(pads = pads_for_axes(l, pads, n, r))) return fc_lx_bail(l);
    n = 2 * r;
  }
  if (n != 2 * r) return fc_lx_error(l, "pads has %d values for rank %d", n, r);
  for (int i = 0; i < n; i++)
    if (pads[i] < -((int64_t)1 << 40) || pads[i] > ((int64_t)1 << 40)) return fc_lx_error(l, "pads value out of range");
  if (wrap) {
    l->out[0] = pad_wrap(l, x, pads);
    return l->out[0] ? fc_lx_finish(l) : fc_lx_bail(l);
  }
  if (!strcmp(mode, "constant")) {
    if (l->opset < 11) {
      float v = fc_lx_float(l, "value", 0.0f);
      if (v != 0.0f) value = fc_b_scalar(b, x->type.dtype, v);
    } else if (has_input(l, 2)) {
      value = l->in[2];
      int64_t numel;
      if (!fc_type_numel(&value->type, &numel) || numel != 1)
        return fc_lx_error(l, "constant_value must hold one element");
      if (value->type.dtype != x->type.dtype) return fc_lx_error(l, "constant_value's dtype differs from the input's");
      if (value->type.rank != 0) value = fc_b_reshape(b, value, 0, NULL);
    }
  }
  FcAttr a[2] = {FC_A_STR(MODE, mode), FC_A_INTS(PADS, pads, n)};
  FcValue *ops[2] = {x, value};
  l->out[0] = fc_b_op1(b, FC_OP_PAD, ops, value ? 2 : 1, a, 2);
  return fc_lx_finish(l);
}

/* CenterCropPad (18): each listed axis (all by default) is cropped or zero-padded to the given size
 * around its centre; an odd difference puts the extra element at the end. A slice, then a constant pad. */
FcStatus fc_lower_center_crop_pad(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 2);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  int r = x->type.rank;
  const int64_t *shape, *axes = NULL;
  int n = fc_lx_const_ints(l, 1, &shape);
  if (n < 0) return fc_lx_bail(l);
  int na = fc_lx_ints(l, "axes", &axes);
  if (na < 0) na = r;
  if (n != na) return fc_lx_error(l, "shape has %d values for %d axes", n, na);
  int64_t *pads = fc_lx_dims(l, 2 * r > 0 ? 2 * r : 1), *seen = fc_lx_dims(l, r > 0 ? r : 1);
  for (int i = 0; i < 2 * r; i++) pads[i] = 0;
  for (int i = 0; i < r; i++) seen[i] = 0;
  bool pad = false;
  for (int i = 0; i < na && x; i++) {
    int64_t a = i;
    if (axes && !fc_lx_axis(l, axes[i], r, &a)) return fc_lx_bail(l);
    if (seen[a]++) return fc_lx_error(l, "axis %lld is repeated", (long long)a);
    int64_t dim = x->type.dims[a], want = shape[i];
    if (want < 0 || want > ((int64_t)1 << 40))
      return fc_lx_error(l, "shape value %lld is out of range", (long long)want);
    if (want < dim) x = slice_axis(l, x, (int)a, (dim - want) / 2, want);
    if (want > dim) {
      pads[a] = (want - dim) / 2;
      pads[a + r] = want - dim - pads[a];
      pad = true;
    }
  }
  if (x && pad) {
    FcAttr at[2] = {FC_A_STR(MODE, "constant"), FC_A_INTS(PADS, pads, 2 * r)};
    x = fc_b_op1(l->b, FC_OP_PAD, &x, 1, at, 2);
  }
  l->out[0] = x;
  return fc_lx_finish(l);
}

/* Tile: x[d0, d1] → reshape [1, d0, 1, d1] → broadcast [r0, d0, r1, d1] → reshape [r0*d0, r1*d1]; the
 * output index along each axis is copy * d + i, which is exactly that row-major layout. Axes repeated
 * once get no extra dim. Tile-1 takes a single (tiles, axis) pair as inputs. */
FcStatus fc_lower_tile(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, l->opset < 6 ? 3 : 2);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  int r = x->type.rank;
  int64_t *rep = fc_lx_dims(l, r);
  if (l->opset < 6) {
    const int64_t *tiles, *axis;
    if (fc_lx_const_ints(l, 1, &tiles) != 1 || fc_lx_const_ints(l, 2, &axis) != 1) {
      if (l->diag->status != FC_OK) return fc_lx_bail(l);
      return fc_lx_error(l, "tiles and axis must be scalars");
    }
    int64_t a;
    if (!fc_lx_axis(l, axis[0], r, &a)) return fc_lx_bail(l);
    for (int i = 0; i < r; i++) rep[i] = i == a ? tiles[0] : 1;
  } else {
    const int64_t *v;
    int n = fc_lx_const_ints(l, 1, &v);
    if (n < 0) return fc_lx_bail(l);
    if (n != r) return fc_lx_error(l, "repeats has %d values for rank %d", n, r);
    memcpy(rep, v, (size_t)r * sizeof *rep);
  }
  int k = 0;
  for (int i = 0; i < r; i++) {
    if (rep[i] < 0) return fc_lx_error(l, "repeats[%d] = %lld is negative", i, (long long)rep[i]);
    k += rep[i] != 1;
  }
  if (k == 0) {
    l->out[0] = x;
    return fc_lx_finish(l);
  }
  int64_t *split = fc_lx_dims(l, r + k), *bcast = fc_lx_dims(l, r + k), *final = fc_lx_dims(l, r);
  for (int i = 0, j = 0; i < r; i++) {
    int64_t d = x->type.dims[i];
    if (rep[i] != 1) {
      split[j] = 1;
      bcast[j++] = rep[i];
    }
    split[j] = d;
    bcast[j++] = d;
    if (!fc_checked_mul(rep[i], d, &final[i])) return fc_lx_error(l, "output is too large");
  }
  FcType out_ty = {x->type.dtype, r, final};
  int64_t nbytes;
  if (!fc_type_nbytes(&out_ty, &nbytes) || nbytes > FC_DEFAULT_MAX_TENSOR_BYTES)
    return fc_lx_error(l, "output is too large");
  FcValue *y = fc_b_reshape(l->b, x, r + k, split);
  y = fc_b_broadcast(l->b, y, r + k, bcast);
  l->out[0] = fc_b_reshape(l->b, y, r, final);
  return fc_lx_finish(l);
}

/* Expand: broadcast x to the NumPy broadcast of its shape and the given one (a 1 in `shape` keeps x's
 * dim, so the result may be larger than `shape`). */
FcStatus fc_lower_expand(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 2);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  const int64_t *shape;
  int n = fc_lx_const_ints(l, 1, &shape);
  if (n < 0) return fc_lx_bail(l);
  for (int i = 0; i < n; i++)
    if (shape[i] < 0) return fc_lx_error(l, "shape[%d] = %lld is negative", i, (long long)shape[i]);
  FcType want = {x->type.dtype, n, shape};
  int rank;
  const int64_t *dims;
  if (!fc_broadcast_shapes(fc_lx_arena(l), &x->type, &want, &rank, &dims))
    return fc_lx_error(l, "shape does not broadcast with the input shape");
  FcType out_ty = {x->type.dtype, rank, dims};
  int64_t nbytes;
  if (!fc_type_nbytes(&out_ty, &nbytes) || nbytes > FC_DEFAULT_MAX_TENSOR_BYTES)
    return fc_lx_error(l, "output is too large");
  l->out[0] = fc_shape_equal(&out_ty, &x->type) ? x : fc_b_broadcast(l->b, x, rank, dims);
  return fc_lx_finish(l);
}

/* ---- depth/space ---------------------------------------------------------------------------------- */

static FcStatus blocksize_4d(FcLower *l, const FcValue *x, int64_t *bs) {
  *bs = 1;
  if (x->type.rank != 4) return fc_lx_error(l, "input must be 4-D, got rank %d", x->type.rank);
  if (!fc_lx_has_attr(l, "blocksize")) return fc_lx_error(l, "attribute 'blocksize' is required");
  *bs = fc_lx_int(l, "blocksize", 0);
  if (*bs < 1 || *bs > ((int64_t)1 << 20)) return fc_lx_error(l, "blocksize %lld is out of range", (long long)*bs);
  return FC_OK;
}

FcStatus fc_lower_depth_to_space(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  int64_t bs;
  if ((st = blocksize_4d(l, x, &bs)) != FC_OK) return st;
  const int64_t *d = x->type.dims;
  const char *mode = l->opset >= 11 ? fc_lx_str(l, "mode", "DCR") : "DCR";
  bool crd = !strcmp(mode, "CRD");
  if (!crd && strcmp(mode, "DCR")) return fc_lx_error(l, "unknown mode '%s'", mode);
  if (d[1] % (bs * bs) != 0) return fc_lx_error(l, "channels %lld are not a multiple of blocksize^2", (long long)d[1]);
  int64_t c = d[1] / (bs * bs), hb, wb;
  if (!fc_checked_mul(d[2], bs, &hb) || !fc_checked_mul(d[3], bs, &wb)) return fc_lx_error(l, "output is too large");
  int64_t dcr[6] = {d[0], bs, bs, c, d[2], d[3]}, crd_s[6] = {d[0], c, bs, bs, d[2], d[3]};
  static const int64_t dcr_perm[6] = {0, 3, 4, 1, 5, 2}, crd_perm[6] = {0, 1, 4, 2, 5, 3};
  int64_t out[4] = {d[0], c, hb, wb};
  FcValue *y = fc_b_reshape(l->b, x, 6, crd ? crd_s : dcr);
  y = fc_b_transpose(l->b, y, crd ? crd_perm : dcr_perm);
  l->out[0] = fc_b_reshape(l->b, y, 4, out);
  return fc_lx_finish(l);
}

FcStatus fc_lower_space_to_depth(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  int64_t bs;
  if ((st = blocksize_4d(l, x, &bs)) != FC_OK) return st;
  const int64_t *d = x->type.dims;
  if (d[2] % bs != 0 || d[3] % bs != 0) return fc_lx_error(l, "spatial dims are not multiples of blocksize");
  int64_t c;
  if (!fc_checked_mul(d[1], bs * bs, &c)) return fc_lx_error(l, "output is too large");
  int64_t split[6] = {d[0], d[1], d[2] / bs, bs, d[3] / bs, bs};
  static const int64_t perm[6] = {0, 3, 5, 1, 2, 4};
  int64_t out[4] = {d[0], c, d[2] / bs, d[3] / bs};
  FcValue *y = fc_b_reshape(l->b, x, 6, split);
  y = fc_b_transpose(l->b, y, perm);
  l->out[0] = fc_b_reshape(l->b, y, 4, out);
  return fc_lx_finish(l);
}

/* ---- compile-time constants ----------------------------------------------------------------------- */

FcStatus fc_lower_shape(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  int64_t r = x->type.rank, start = 0, end = r;
  if (l->opset >= 15) {
    start = fc_lx_int(l, "start", 0);
    end = fc_lx_has_attr(l, "end") ? fc_lx_int(l, "end", r) : r;
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = clamp64(start, 0, r);
    end = clamp64(end, 0, r);
  }
  int n = end > start ? (int)(end - start) : 0;
  l->out[0] = fc_b_const_i64(l->b, n, n ? x->type.dims + start : NULL);
  return fc_lx_finish(l);
}

FcStatus fc_lower_size(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  int64_t numel;
  if (!fc_type_numel(&l->in[0]->type, &numel)) return fc_lx_error(l, "input is too large");
  l->out[0] = fc_b_const(l->b, FC_DT_I64, 0, NULL, &numel);
  return fc_lx_finish(l);
}

/* Results above this many bytes become a broadcast scalar instead of a materialised constant, so a
 * model asking for a huge filled tensor does not put it in the arena (folding may still expand it). */
#define FILL_CONST_MAX_BYTES ((int64_t)1 << 20)

/* ConstantOfShape: `value` (a one-element tensor, default f32 0) filled into the given shape. */
FcStatus fc_lower_constant_of_shape(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  const int64_t *shape;
  int n = fc_lx_const_ints(l, 0, &shape);
  if (n < 0) return fc_lx_bail(l);
  for (int i = 0; i < n; i++)
    if (shape[i] < 0) return fc_lx_error(l, "shape[%d] = %lld is negative", i, (long long)shape[i]);
  const FcTensor *v = NULL;
  if (fc_lx_has_attr(l, "value")) {
    if (!(v = fc_lx_tensor_attr(l, "value"))) return fc_lx_bail(l);
    int64_t numel;
    if (!fc_type_numel(&v->type, &numel) || numel != 1 || !v->data)
      return fc_lx_error(l, "attribute 'value' must hold exactly one element");
  }
  FcDtype dt = v ? v->type.dtype : FC_DT_F32;
  FcType ty = {dt, n, shape};
  int64_t nbytes, numel;
  if (!fc_type_nbytes(&ty, &nbytes) || nbytes > FC_DEFAULT_MAX_TENSOR_BYTES)
    return fc_lx_error(l, "output is too large");
  fc_type_numel(&ty, &numel);
  size_t es = fc_dtype_size(dt);
  if (nbytes > FILL_CONST_MAX_BYTES) {
    FcValue *s = fc_b_const(l->b, dt, 0, NULL, v ? v->data : (const void *)"\0\0\0\0");
    l->out[0] = fc_b_broadcast(l->b, s, n, shape);
    return fc_lx_finish(l);
  }
  FcTensor *t = fc_lx_new_tensor(l, dt, n, shape);
  if (!t) return fc_lx_bail(l);
  if (v)
    for (int64_t i = 0; i < numel; i++) memcpy((char *)t->data + (size_t)i * es, v->data, es);
  l->out[0] = fc_b_const_tensor(l->b, t);
  return fc_lx_finish(l);
}

/* Range: max(ceil((limit - start) / delta), 0) elements start + i * delta, in the inputs' dtype. The
 * count is computed in unsigned arithmetic for integers (limit - start may not fit int64). */
FcStatus fc_lower_range(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 3);
  if (st != FC_OK) return st;
  const FcTensor *t[3];
  for (int i = 0; i < 3; i++) {
    if (!(t[i] = fc_lx_const_input(l, i))) return fc_lx_bail(l);
    int64_t numel;
    if (!fc_type_numel(&t[i]->type, &numel) || numel != 1) return fc_lx_error(l, "input %d must be a scalar", i);
    if (t[i]->type.dtype != t[0]->type.dtype) return fc_lx_error(l, "inputs must share one dtype");
  }
  FcDtype dt = t[0]->type.dtype;
  int64_t count;
  if (fc_dtype_is_float(dt)) {
    double s = fc_tensor_get_f64(t[0], 0), lim = fc_tensor_get_f64(t[1], 0), d = fc_tensor_get_f64(t[2], 0);
    if (d == 0 || !isfinite(s) || !isfinite(lim) || !isfinite(d))
      return fc_lx_error(l, "start, limit and delta must be finite and delta non-zero");
    /* the difference is taken in the element type, as runtimes do */
    double diff = dt == FC_DT_F64 ? lim - s : (double)((float)lim - (float)s);
    double c = ceil(diff / d);
    if (c > 1e12) return fc_lx_error(l, "range is too large");
    count = c > 0 ? (int64_t)c : 0;
  } else if (fc_dtype_is_int(dt)) {
    int64_t s = fc_tensor_get_i64(t[0], 0), lim = fc_tensor_get_i64(t[1], 0), d = fc_tensor_get_i64(t[2], 0);
    if (d == 0) return fc_lx_error(l, "delta must be non-zero");
    uint64_t diff, step;
    if (d > 0) {
      diff = lim > s ? (uint64_t)lim - (uint64_t)s : 0;
      step = (uint64_t)d;
    } else {
      diff = s > lim ? (uint64_t)s - (uint64_t)lim : 0;
      step = (uint64_t)0 - (uint64_t)d;
    }
    uint64_t c = diff / step + (diff % step != 0);
    if (c > ((uint64_t)1 << 40)) return fc_lx_error(l, "range is too large");
    count = (int64_t)c;
  } else {
    return fc_lx_error(l, "unsupported dtype %s", fc_dtype_name(dt));
  }
  FcTensor *out = fc_lx_new_tensor(l, dt, 1, &count);
  if (!out) return fc_lx_bail(l);
  if (fc_dtype_is_float(dt)) {
    double s = fc_tensor_get_f64(t[0], 0), d = fc_tensor_get_f64(t[2], 0);
    for (int64_t i = 0; i < count; i++) fc_tensor_set_f64(out, i, s + (double)i * d);
  } else {
    /* start + i * delta stays between start and limit, so wrapping unsigned arithmetic is exact */
    uint64_t s = (uint64_t)fc_tensor_get_i64(t[0], 0), d = (uint64_t)fc_tensor_get_i64(t[2], 0);
    for (int64_t i = 0; i < count; i++) fc_tensor_set_i64(out, i, (int64_t)(s + (uint64_t)i * d));
  }
  l->out[0] = fc_b_const_tensor(l->b, out);
  return fc_lx_finish(l);
}

/* EyeLike: ones on diagonal k of a 2-D tensor shaped like the input, dtype from `dtype` or the input. */
FcStatus fc_lower_eye_like(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  if (x->type.rank != 2) return fc_lx_error(l, "input must be 2-D, got rank %d", x->type.rank);
  FcDtype dt = x->type.dtype;
  if (fc_lx_has_attr(l, "dtype")) {
    int64_t code = fc_lx_int(l, "dtype", 0);
    if (code < 0 || code > 1000 || !fc_dtype_from_onnx((int)code, &dt))
      return fc_lx_error(l, "unsupported dtype %lld", (long long)code);
  }
  int64_t k = fc_lx_int(l, "k", 0), rows = x->type.dims[0], cols = x->type.dims[1];
  FcTensor *t = fc_lx_new_tensor(l, dt, 2, x->type.dims);
  if (!t) return fc_lx_bail(l);
  if (k <= cols && k >= -rows) /* otherwise the diagonal lies outside (and i + k could overflow) */
    for (int64_t i = 0; i < rows; i++) {
      int64_t j = i + k;
      if (j >= 0 && j < cols) fc_tensor_set_f64(t, i * cols + j, 1.0);
    }
  l->out[0] = fc_b_const_tensor(l->b, t);
  return fc_lx_finish(l);
}

/* Trilu: select(mask, x, 0) with a constant [N, M] mask: j - i >= k keeps the upper part, j - i <= k
 * the lower one. */
FcStatus fc_lower_trilu(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  int r = x->type.rank;
  if (r < 2) return fc_lx_error(l, "input must have rank >= 2, got %d", r);
  int64_t k = 0;
  if (has_input(l, 1)) {
    const int64_t *kv;
    int n = fc_lx_const_ints(l, 1, &kv);
    if (n < 0) return fc_lx_bail(l);
    if (n != 1) return fc_lx_error(l, "k must be a scalar");
    k = kv[0];
  }
  bool upper = fc_lx_int(l, "upper", 1) != 0;
  int64_t rows = x->type.dims[r - 2], cols = x->type.dims[r - 1];
  FcTensor *m = fc_lx_new_tensor(l, FC_DT_BOOL, 2, x->type.dims + r - 2);
  if (!m) return fc_lx_bail(l);
  unsigned char *p = (unsigned char *)m->data;
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) p[i * cols + j] = upper ? j - i >= k : j - i <= k;
  FcValue *mask = fc_b_const_tensor(l->b, m);
  l->out[0] = fc_b_select(l->b, mask, x, fc_b_scalar(l->b, x->type.dtype, 0));
  return fc_lx_finish(l);
}
