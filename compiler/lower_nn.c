/* lower_nn.c — legalisers for convolution, pooling and matrix products.
 *
 * Conv, ConvTranspose and the pools map one-to-one onto core ops once their attributes are made
 * explicit: every default (strides, dilations, kernel_shape from the weight) is filled in and
 * auto_pad is resolved into concrete [begin.., end..] pads here, because shapes are static and the core
 * ops carry only explicit padding. Gemm becomes transpose + matmul + scalar muls + add; MatMul with 1-D
 * operands goes through reshapes to the 2-D form (NumPy semantics); the global pools are keepdims
 * reductions over the spatial axes; MaxUnpool scatters the flattened values into a zero tensor at the
 * flat indices MaxPool produced.
 *
 * Attribute values are user input: each is range-checked before it reaches arithmetic, and every size
 * derived from them goes through the checked helpers.
 */
#include "onnx.h"

#include <string.h>

/* Attribute `name` as exactly n ints each in [lo, hi], or `dflt` everywhere when absent. */
static FcStatus ints_attr(FcLower *l, const char *name, int n, int64_t lo, int64_t hi, int64_t dflt, int64_t *out) {
  const int64_t *v;
  int k = fc_lx_ints(l, name, &v);
  if (k < 0) {
    for (int i = 0; i < n; i++) out[i] = dflt;
    return FC_OK;
  }
  if (k != n) return fc_lx_error(l, "attribute '%s' has %d values, expected %d", name, k, n);
  for (int i = 0; i < n; i++) {
    if (v[i] < lo || v[i] > hi)
      return fc_lx_error(l, "attribute '%s' value %lld is out of range [%lld, %lld]", name, (long long)v[i],
                         (long long)lo, (long long)hi);
    out[i] = v[i];
  }
  return FC_OK;
}

/* Window attributes are bounded so that the shape arithmetic below stays far from int64 overflow. */
#define WIN_MAX ((int64_t)1 << 31)

/* ---- auto_pad ------------------------------------------------------------------------------------- */

typedef enum { AP_NOTSET, AP_SAME_UPPER, AP_SAME_LOWER, AP_VALID } AutoPad;

static FcStatus get_auto_pad(FcLower *l, AutoPad *ap) {
  const char *s = fc_lx_str(l, "auto_pad", "NOTSET");
  if (!strcmp(s, "NOTSET") || !*s) *ap = AP_NOTSET;
  else if (!strcmp(s, "SAME_UPPER")) *ap = AP_SAME_UPPER;
  else if (!strcmp(s, "SAME_LOWER")) *ap = AP_SAME_LOWER;
  else if (!strcmp(s, "VALID")) *ap = AP_VALID;
  else return fc_lx_error(l, "unknown auto_pad '%s'", s);
  return FC_OK;
}

/* Explicit pads [begin_1..begin_n, end_1..end_n] for a strided window over the n spatial dims `in`
 * (conv and pools): SAME_* pads so that out = ceil(in / stride), the odd unit going to the end for
 * SAME_UPPER and to the beginning for SAME_LOWER. */
static FcStatus window_pads(FcLower *l, AutoPad ap, int n, const int64_t *in, const int64_t *kernel,
                            const int64_t *strides, const int64_t *dilations, int64_t *pads) {
  if (ap == AP_NOTSET) return ints_attr(l, "pads", 2 * n, 0, WIN_MAX, 0, pads);
  for (int i = 0; i < n; i++) {
    pads[i] = pads[n + i] = 0;
    if (ap == AP_VALID) continue;
    int64_t out = in[i] / strides[i] + (in[i] % strides[i] != 0), ext = (kernel[i] - 1) * dilations[i] + 1, need;
    if (!fc_checked_mul(out > 0 ? out - 1 : 0, strides[i], &need) || !fc_checked_add(need, ext, &need))
      return fc_lx_error(l, "padded size overflows");
    int64_t total = need > in[i] ? need - in[i] : 0;
    int64_t small = total / 2, big = total - small;
    pads[i] = ap == AP_SAME_UPPER ? small : big;
    pads[n + i] = ap == AP_SAME_UPPER ? big : small;
  }
  return FC_OK;
}

/* ---- Conv ----------------------------------------------------------------------------------------- */

/* group must split the input channels evenly; the weight's channel dim is checked by the infer hook. */
static FcStatus conv_group(FcLower *l, const FcValue *x, int64_t *group) {
  *group = fc_lx_int(l, "group", 1);
  int64_t c = x->type.dims[1];
  if (*group < 1 || (c > 0 && (*group > c || c % *group != 0)))
    return fc_lx_error(l, "group %lld does not divide the %lld input channels", (long long)*group, (long long)c);
  return FC_OK;
}

/* Spatial rank of a conv-like op: x is [N, C, D1..Dn] with n >= 1 and w has the same rank. */
static FcStatus conv_rank(FcLower *l, const FcValue *x, const FcValue *w, int *n) {
  if (x->type.rank < 3) return fc_lx_error(l, "input must have rank >= 3, got %d", x->type.rank);
  if (w->type.rank != x->type.rank)
    return fc_lx_error(l, "weight rank %d differs from input rank %d", w->type.rank, x->type.rank);
  *n = x->type.rank - 2;
  return FC_OK;
}

/* kernel_shape, when given, must agree with the weight's spatial dims (the weight is authoritative). */
static FcStatus conv_kernel(FcLower *l, const FcValue *w, int n, int64_t *kernel) {
  for (int i = 0; i < n; i++) {
    kernel[i] = w->type.dims[2 + i];
    if (kernel[i] < 1 || kernel[i] > WIN_MAX) return fc_lx_error(l, "kernel dimension %d is out of range", i);
  }
  const int64_t *v;
  int k = fc_lx_ints(l, "kernel_shape", &v);
  if (k < 0) return FC_OK;
  if (k != n) return fc_lx_error(l, "kernel_shape has %d values, expected %d", k, n);
  for (int i = 0; i < n; i++)
    if (v[i] != kernel[i])
      return fc_lx_error(l, "kernel_shape[%d] = %lld disagrees with the weight's %lld", i, (long long)v[i],
                         (long long)kernel[i]);
  return FC_OK;
}

FcStatus fc_lower_conv(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 2);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0], *w = l->in[1], *bias = l->n_in > 2 ? l->in[2] : NULL;
  int n = 0;
  if ((st = conv_rank(l, x, w, &n)) != FC_OK) return st;
  int64_t *kernel = fc_lx_dims(l, n), *strides = fc_lx_dims(l, n), *dil = fc_lx_dims(l, n),
          *pads = fc_lx_dims(l, 2 * n);
  AutoPad ap;
  if ((st = conv_kernel(l, w, n, kernel)) != FC_OK ||
      (st = ints_attr(l, "strides", n, 1, WIN_MAX, 1, strides)) != FC_OK ||
      (st = ints_attr(l, "dilations", n, 1, WIN_MAX, 1, dil)) != FC_OK || (st = get_auto_pad(l, &ap)) != FC_OK ||
      (st = window_pads(l, ap, n, x->type.dims + 2, kernel, strides, dil, pads)) != FC_OK)
    return st;
  int64_t group;
  if ((st = conv_group(l, x, &group)) != FC_OK) return st;
  FcAttr a[4] = {FC_A_INTS(DILATIONS, dil, n), FC_A_INT(GROUP, group), FC_A_INTS(PADS, pads, 2 * n),
                 FC_A_INTS(STRIDES, strides, n)};
  FcValue *ops[3] = {x, w, bias};
  l->out[0] = fc_b_op1(l->b, FC_OP_CONV, ops, bias ? 3 : 2, a, 4);
  return fc_lx_finish(l);
}

/* ConvTranspose: pads come from `pads`, from auto_pad (target out = in * stride) or from output_shape,
 * following the spec's total_padding equations. A negative total padding (an output larger than the
 * natural one) becomes extra output_padding, which by definition only appends elements at the end. */
FcStatus fc_lower_conv_transpose(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 2);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0], *w = l->in[1], *bias = l->n_in > 2 ? l->in[2] : NULL;
  int n = 0;
  if ((st = conv_rank(l, x, w, &n)) != FC_OK) return st;
  int64_t *kernel = fc_lx_dims(l, n), *strides = fc_lx_dims(l, n), *dil = fc_lx_dims(l, n),
          *pads = fc_lx_dims(l, 2 * n),
          *opad = fc_lx_dims(l, n), *target = fc_lx_dims(l, n);
  AutoPad ap;
  if ((st = conv_kernel(l, w, n, kernel)) != FC_OK ||
      (st = ints_attr(l, "strides", n, 1, WIN_MAX, 1, strides)) != FC_OK ||
      (st = ints_attr(l, "dilations", n, 1, WIN_MAX, 1, dil)) != FC_OK ||
      (st = ints_attr(l, "output_padding", n, 0, WIN_MAX, 0, opad)) != FC_OK || (st = get_auto_pad(l, &ap)) != FC_OK)
    return st;
  int64_t group;
  if ((st = conv_group(l, x, &group)) != FC_OK) return st;

  const int64_t *oshape;
  int k = fc_lx_ints(l, "output_shape", &oshape);
  bool have_target = false;
  if (k >= 0) {
    if (k != n && k != n + 2) return fc_lx_error(l, "output_shape has %d values, expected %d", k, n);
    for (int i = 0; i < n; i++) {
      target[i] = oshape[k - n + i];
      if (target[i] < 0 || target[i] > ((int64_t)1 << 40)) return fc_lx_error(l, "output_shape value out of range");
    }
    have_target = true;
  } else if (ap == AP_SAME_UPPER || ap == AP_SAME_LOWER) {
    for (int i = 0; i < n; i++)
      if (!fc_checked_mul(x->type.dims[2 + i], strides[i], &target[i])) return fc_lx_error(l, "output size overflows");
    have_target = true;
  }
  if (have_target) {
    for (int i = 0; i < n; i++) {
      int64_t full, ext = (kernel[i] - 1) * dil[i] + 1;
      int64_t in = x->type.dims[2 + i];
      if (!fc_checked_mul(in > 0 ? in - 1 : 0, strides[i], &full) || !fc_checked_add(full, opad[i], &full) ||
          !fc_checked_add(full, ext, &full))
        return fc_lx_error(l, "output size overflows");
      int64_t total = full - target[i];
      if (total < 0) {
        opad[i] -= total;
        total = 0;
      }
      int64_t small = total / 2, big = total - small;
      pads[i] = ap == AP_SAME_UPPER ? small : big;
      pads[n + i] = ap == AP_SAME_UPPER ? big : small;
    }
  } else if (ap == AP_VALID) {
    for (int i = 0; i < 2 * n; i++) pads[i] = 0;
  } else if ((st = ints_attr(l, "pads", 2 * n, 0, WIN_MAX, 0, pads)) != FC_OK) {
    return st;
  }
  FcAttr a[5] = {FC_A_INTS(DILATIONS, dil, n), FC_A_INT(GROUP, group), FC_A_INTS(OUTPUT_PADDING, opad, n),
                 FC_A_INTS(PADS, pads, 2 * n), FC_A_INTS(STRIDES, strides, n)};
  FcValue *ops[3] = {x, w, bias};
  l->out[0] = fc_b_op1(l->b, FC_OP_CONV_TRANSPOSE, ops, bias ? 3 : 2, a, 5);
  return fc_lx_finish(l);
}

/* Col2Im (18): input [N, C * K, L] of K = prod(block_shape) columns per channel, summed back into an image
 * [N, C, image_shape...]. That is the adjoint of im2col, so it is a grouped conv_transpose (group C) of the
 * input viewed as [N, C * K, L1, L2, ...] (L split by the block-position counts) with a constant one-hot
 * weight [C * K, 1, block...]: column k of channel c lands on block offset k; strides, dilations and pads
 * carry over, and output_padding covers the rows a stride leaves after the last block. */
FcStatus fc_lower_col2im(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 3);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  if (x->type.rank != 3) return fc_lx_error(l, "input must have rank 3 (N, C * prod(block_shape), L)");
  if (!fc_lx_need_float(l, x)) return FC_ERR_INPUT;
  const int64_t *img, *blk;
  int n = fc_lx_const_ints(l, 1, &img);
  if (n < 0) return fc_lx_bail(l);
  if (fc_lx_const_ints(l, 2, &blk) != n || n < 1 || n > 8)
    return l->diag->status != FC_OK ? fc_lx_bail(l)
                                    : fc_lx_error(l, "image_shape and block_shape must have 1 to 8 equal values");
  int64_t *strides = fc_lx_dims(l, n), *dil = fc_lx_dims(l, n), *pads = fc_lx_dims(l, 2 * n), *opad = fc_lx_dims(l, n),
          *cols = fc_lx_dims(l, n + 2), *wd = fc_lx_dims(l, n + 2);
  if ((st = ints_attr(l, "strides", n, 1, WIN_MAX, 1, strides)) != FC_OK ||
      (st = ints_attr(l, "dilations", n, 1, WIN_MAX, 1, dil)) != FC_OK ||
      (st = ints_attr(l, "pads", 2 * n, 0, WIN_MAX, 0, pads)) != FC_OK)
    return st;
  int64_t k = 1, blocks = 1;
  for (int i = 0; i < n; i++) {
    if (blk[i] < 1 || blk[i] > WIN_MAX || img[i] < 1 || img[i] > ((int64_t)1 << 40))
      return fc_lx_error(l, "image_shape and block_shape values must be positive");
    int64_t span = img[i] + pads[i] + pads[n + i] - dil[i] * (blk[i] - 1) - 1;
    if (span < 0) return fc_lx_error(l, "block %d does not fit the padded image", i);
    cols[2 + i] = span / strides[i] + 1;
    opad[i] = span % strides[i];
    if (!fc_checked_mul(k, blk[i], &k) || !fc_checked_mul(blocks, cols[2 + i], &blocks))
      return fc_lx_error(l, "block_shape or image_shape is too large");
  }
  int64_t ck = x->type.dims[1], c = ck / k, numel;
  if (ck % k != 0)
    return fc_lx_error(l, "dim 1 (%lld) is not a multiple of prod(block_shape) = %lld", (long long)ck, (long long)k);
  if (x->type.dims[2] != blocks)
    return fc_lx_error(l, "dim 2 (%lld) is not the %lld block positions image_shape, block_shape, pads, strides and "
                          "dilations give", (long long)x->type.dims[2], (long long)blocks);
  if (!fc_checked_mul(ck, k, &numel) || numel > ((int64_t)1 << 26))
    return fc_lx_error(l, "the block weights are too large");
  /* the one-hot weight: row c * K + j has its 1 at block offset j (row-major over block_shape) */
  float *w = FC_NEW_ARRAY(fc_lx_arena(l), float, (size_t)numel);
  for (int64_t r = 0; r < ck; r++) w[r * k + r % k] = 1;
  cols[0] = x->type.dims[0], cols[1] = ck, wd[0] = ck, wd[1] = 1;
  for (int i = 0; i < n; i++) wd[2 + i] = blk[i];
  FcValue *ops[2] = {fc_b_reshape(l->b, x, n + 2, cols),
                     fc_lx_cast_to(l, fc_b_const(l->b, FC_DT_F32, n + 2, wd, w), x->type.dtype)};
  FcAttr a[5] = {FC_A_INTS(DILATIONS, dil, n), FC_A_INT(GROUP, c), FC_A_INTS(OUTPUT_PADDING, opad, n),
                 FC_A_INTS(PADS, pads, 2 * n), FC_A_INTS(STRIDES, strides, n)};
  l->out[0] = fc_b_op1(l->b, FC_OP_CONV_TRANSPOSE, ops, 2, a, 5);
  return fc_lx_finish(l);
}

/* ---- pools ---------------------------------------------------------------------------------------- */

/* MaxPool and AveragePool. Attributes that an older opset lacks take the value that opset implied:
 * no dilations before MaxPool-10 and AveragePool-19, no ceil_mode before 10, no
 * storage_order before MaxPool-8, no count_include_pad before AveragePool-7. */
FcStatus fc_lower_pool(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  bool is_max = l->arg == FC_OP_MAX_POOL; /* else AVG_POOL: the table row's */
  FcValue *x = l->in[0];
  if (x->type.rank < 3) return fc_lx_error(l, "input must have rank >= 3, got %d", x->type.rank);
  int n = x->type.rank - 2;
  int64_t *kernel = fc_lx_dims(l, n), *strides = fc_lx_dims(l, n), *dil = fc_lx_dims(l, n),
          *pads = fc_lx_dims(l, 2 * n);
  if (!fc_lx_has_attr(l, "kernel_shape")) return fc_lx_error(l, "attribute 'kernel_shape' is required");
  AutoPad ap;
  if ((st = ints_attr(l, "kernel_shape", n, 1, WIN_MAX, 1, kernel)) != FC_OK ||
      (st = ints_attr(l, "strides", n, 1, WIN_MAX, 1, strides)) != FC_OK)
    return st;
  if (l->opset >= (is_max ? 10 : 19)) {
    if ((st = ints_attr(l, "dilations", n, 1, WIN_MAX, 1, dil)) != FC_OK) return st;
  } else {
    for (int i = 0; i < n; i++) dil[i] = 1;
  }
  if ((st = get_auto_pad(l, &ap)) != FC_OK ||
      (st = window_pads(l, ap, n, x->type.dims + 2, kernel, strides, dil, pads)) != FC_OK)
    return st;
  int64_t ceil_mode = l->opset >= 10 ? fc_lx_int(l, "ceil_mode", 0) : 0;
  if (ceil_mode != 0 && ceil_mode != 1) return fc_lx_error(l, "ceil_mode must be 0 or 1");
  if (is_max) {
    int64_t order = l->opset >= 8 ? fc_lx_int(l, "storage_order", 0) : 0;
    if (order != 0 && order != 1) return fc_lx_error(l, "storage_order must be 0 or 1");
    FcAttr a[6] = {FC_A_INT(CEIL_MODE, ceil_mode), FC_A_INTS(DILATIONS, dil, n), FC_A_INTS(KERNEL_SHAPE, kernel, n),
                   FC_A_INTS(PADS, pads, 2 * n), FC_A_INT(STORAGE_ORDER, order), FC_A_INTS(STRIDES, strides, n)};
    bool indices = fc_lx_out_named(l, 1);
    FcOp *op = fc_b_op(l->b, FC_OP_MAX_POOL, &x, 1, indices ? 2 : 1, a, 6);
    if (op) {
      l->out[0] = &op->results[0];
      if (indices) l->out[1] = &op->results[1];
    }
  } else {
    int64_t cip = l->opset >= 7 ? fc_lx_int(l, "count_include_pad", 0) : 0;
    if (cip != 0 && cip != 1) return fc_lx_error(l, "count_include_pad must be 0 or 1");
    FcAttr a[6] = {FC_A_INT(CEIL_MODE, ceil_mode), FC_A_INT(COUNT_INCLUDE_PAD, cip), FC_A_INTS(DILATIONS, dil, n),
                   FC_A_INTS(KERNEL_SHAPE, kernel, n), FC_A_INTS(PADS, pads, 2 * n), FC_A_INTS(STRIDES, strides, n)};
    l->out[0] = fc_b_op1(l->b, FC_OP_AVG_POOL, &x, 1, a, 6);
  }
  return fc_lx_finish(l);
}

FcStatus fc_lower_global_pool(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  if (x->type.rank < 2) return fc_lx_error(l, "input must have rank >= 2, got %d", x->type.rank);
  int n = x->type.rank - 2;
  if (n == 0) { /* no spatial axes: each window is a single element */
    l->out[0] = x;
    return fc_lx_finish(l);
  }
  int64_t *axes = fc_lx_dims(l, n);
  for (int i = 0; i < n; i++) axes[i] = 2 + i;
  FcOpKind k = (FcOpKind)l->arg; /* REDUCE_MAX or REDUCE_MEAN, the table row's */
  l->out[0] = fc_b_reduce(l->b, k, x, n, axes, true);
  return fc_lx_finish(l);
}

/* MaxUnpool: y = zeros(inferred); y.flat[I.flat[i]] = X.flat[i], where `inferred` is the pre-pool shape
 * (in - 1) * stride + kernel - pads, whose flat positions MaxPool's indices are. One 1-D scatter does
 * it. An output_shape larger than that gets the extra zeros at the end of each axis, as the ONNX
 * reference implementation places the unpooled block at the origin of the requested shape. */
FcStatus fc_lower_max_unpool(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 2);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0], *idx = l->in[1];
  FcBuilder *b = l->b;
  if (x->type.rank < 3) return fc_lx_error(l, "input must have rank >= 3, got %d", x->type.rank);
  if (!fc_shape_equal(&x->type, &idx->type)) return fc_lx_error(l, "indices shape differs from the input shape");
  if (idx->type.dtype != FC_DT_I64 && idx->type.dtype != FC_DT_I32) return fc_lx_error(l, "indices must be int64");
  int r = x->type.rank, n = r - 2;
  int64_t *kernel = fc_lx_dims(l, n), *strides = fc_lx_dims(l, n), *pads = fc_lx_dims(l, 2 * n),
          *shape = fc_lx_dims(l, r);
  if (!fc_lx_has_attr(l, "kernel_shape")) return fc_lx_error(l, "attribute 'kernel_shape' is required");
  if ((st = ints_attr(l, "kernel_shape", n, 1, WIN_MAX, 1, kernel)) != FC_OK ||
      (st = ints_attr(l, "strides", n, 1, WIN_MAX, 1, strides)) != FC_OK ||
      (st = ints_attr(l, "pads", 2 * n, 0, WIN_MAX, 0, pads)) != FC_OK)
    return st;
  shape[0] = x->type.dims[0];
  shape[1] = x->type.dims[1];
  for (int i = 0; i < n; i++) {
    int64_t in = x->type.dims[2 + i], v;
    if (!fc_checked_mul(in > 0 ? in - 1 : 0, strides[i], &v) || !fc_checked_add(v, kernel[i], &v))
      return fc_lx_error(l, "output size overflows");
    v -= pads[i] + pads[n + i];
    if (v < 0) return fc_lx_error(l, "pads exceed the output size along spatial axis %d", i);
    shape[2 + i] = v;
  }
  int64_t *extra = NULL; /* pad op's [begin.., end..] when output_shape is larger */
  if (l->n_in > 2 && l->in[2]) {
    const int64_t *os;
    int k = fc_lx_const_ints(l, 2, &os);
    if (k < 0) return fc_lx_bail(l);
    if (k != r) return fc_lx_error(l, "output_shape has %d values, expected %d", k, r);
    for (int i = 0; i < r; i++) {
      if (os[i] < shape[i] || os[i] > ((int64_t)1 << 40))
        return fc_lx_error(l, "output_shape[%d] = %lld is smaller than the unpooled size %lld", i, (long long)os[i],
                           (long long)shape[i]);
      if (os[i] == shape[i]) continue;
      if (!extra) extra = fc_lx_dims(l, 2 * r);
      extra[r + i] = os[i] - shape[i];
    }
  }
  FcType out_ty = {x->type.dtype, r, shape};
  int64_t total, count;
  if (!fc_type_numel(&out_ty, &total) || !fc_type_numel(&x->type, &count) || total > FC_DEFAULT_MAX_TENSOR_BYTES)
    return fc_lx_error(l, "output is too large");
  FcValue *zero = fc_b_scalar(b, x->type.dtype, 0);
  FcValue *flat = fc_b_broadcast(b, zero, 1, &total);
  FcValue *xs = fc_b_reshape(b, x, 1, &count), *is = fc_b_reshape(b, idx, 1, &count);
  FcValue *ops[3] = {flat, is, xs};
  FcAttr a[2] = {FC_A_INT(AXIS, 0), FC_A_STR(REDUCTION, "none")};
  FcValue *y = fc_b_reshape(b, fc_b_op1(b, FC_OP_SCATTER_ELEMENTS, ops, 3, a, 2), r, shape);
  if (extra) {
    FcAttr pa[2] = {FC_A_STR(MODE, "constant"), FC_A_INTS(PADS, extra, 2 * r)};
    y = fc_b_op1(b, FC_OP_PAD, &y, 1, pa, 2);
  }
  l->out[0] = y;
  return fc_lx_finish(l);
}

/* ---- matrix products ------------------------------------------------------------------------------ */

/* Gemm: Y = alpha * A' B' + beta * C, with C (optional since opset 11) broadcast to [M, N]. The old
 * `broadcast` attribute (opset < 7) only restricted which C shapes were legal, so NumPy broadcasting
 * with a check that it does not grow Y covers every opset. */
FcStatus fc_lower_gemm(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 2);
  if (st != FC_OK) return st;
  FcBuilder *b = l->b;
  FcValue *a = l->in[0], *bm = l->in[1], *c = l->n_in > 2 ? l->in[2] : NULL;
  if (l->opset < 11 && !c) return fc_lx_error(l, "input C is required before opset 11");
  if (a->type.rank != 2 || bm->type.rank != 2)
    return fc_lx_error(l, "A and B must be 2-D, got ranks %d and %d", a->type.rank, bm->type.rank);
  static const int64_t swap[2] = {1, 0};
  if (fc_lx_int(l, "transA", 0)) a = fc_b_transpose(b, a, swap);
  if (fc_lx_int(l, "transB", 0)) bm = fc_b_transpose(b, bm, swap);
  FcValue *y = fc_b_binary(b, FC_OP_MATMUL, a, bm);
  float alpha = fc_lx_float(l, "alpha", 1.0f), beta = fc_lx_float(l, "beta", 1.0f);
  if (y && alpha != 1.0f) y = fc_b_binary(b, FC_OP_MUL, y, fc_b_scalar(b, y->type.dtype, alpha));
  if (y && c) {
    if (beta != 1.0f) c = fc_b_binary(b, FC_OP_MUL, c, fc_b_scalar(b, c->type.dtype, beta));
    FcValue *sum = fc_b_binary(b, FC_OP_ADD, y, c);
    if (sum && !fc_shape_equal(&sum->type, &y->type))
      return fc_lx_error(l, "C does not broadcast to the [M, N] result");
    y = sum;
  }
  l->out[0] = y;
  return fc_lx_finish(l);
}

/* MatMul with NumPy semantics: a 1-D left operand is a row [1, K], a 1-D right one a column [K, 1],
 * and the inserted dim is removed from the result again. */
FcStatus fc_lower_matmul(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 2);
  if (st != FC_OK) return st;
  FcBuilder *b = l->b;
  FcValue *a = l->in[0], *bm = l->in[1];
  int ra = a->type.rank, rb = bm->type.rank;
  if (ra < 1 || rb < 1) return fc_lx_error(l, "operands must have rank >= 1, got %d and %d", ra, rb);
  if (ra == 1) {
    int64_t d[2] = {1, a->type.dims[0]};
    a = fc_b_reshape(b, a, 2, d);
  }
  if (rb == 1) {
    int64_t d[2] = {bm->type.dims[0], 1};
    bm = fc_b_reshape(b, bm, 2, d);
  }
  FcValue *y = fc_b_binary(b, FC_OP_MATMUL, a, bm);
  if (y && (ra == 1 || rb == 1)) {
    int r = y->type.rank;
    int64_t *d = fc_lx_dims(l, r);
    int k = 0;
    for (int i = 0; i < r; i++) {
      if (ra == 1 && i == r - 2) continue;
      if (rb == 1 && i == r - 1) continue;
      d[k++] = y->type.dims[i];
    }
    y = fc_b_reshape(b, y, k, d);
  }
  l->out[0] = y;
  return fc_lx_finish(l);
}

/* Einsum maps onto the core op; the equation is kept with its spaces removed (ONNX allows them). */
FcStatus fc_lower_einsum(FcLower *l) {
  if (l->n_in < 1) return fc_lx_error(l, "at least one input is required");
  FcStatus st = fc_lx_need_inputs(l, l->n_in);
  if (st != FC_OK) return st;
  if (!fc_lx_has_attr(l, "equation")) return fc_lx_error(l, "attribute 'equation' is required");
  const char *eq = fc_lx_str(l, "equation", "");
  size_t len = strlen(eq);
  char *s = fc_arena_strndup(fc_lx_arena(l), eq, len);
  size_t k = 0;
  for (size_t i = 0; i < len; i++)
    if (eq[i] != ' ') s[k++] = eq[i];
  s[k] = '\0';
  FcAttr a = FC_A_STR(EQUATION, s);
  l->out[0] = fc_b_op1(l->b, FC_OP_EINSUM, l->in, l->n_in, &a, 1);
  return fc_lx_finish(l);
}
