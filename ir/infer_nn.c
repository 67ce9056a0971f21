/* infer_nn.c — inference hooks of the network ops: matmul, conv, conv_transpose, pools, layer_norm,
 * topk, det, grid_sample, roi_align and einsum.
 *
 * Window ops share one reading of their attributes (spatial_attrs): pads/strides/dilations must have
 * one entry per spatial dim (two for pads), strides and dilations positive, pads non-negative. Output
 * sizes go through overflow-checked arithmetic; a window that does not fit its padded input even once
 * is an error rather than a zero or negative dim. einsum parses its equation here with the same rules
 * as numpy (which ONNX's reference follows), so the evaluator can assume a well-formed one.
 * conv and matmul may carry a fused epilogue (an `epilogue` program over extra operands, added by
 * passes/fuse_epilogue.c); check_epilogue validates it against the result type computed first.
 */
#include "ew_program.h"
#include "infer_internal.h"

#include <stdio.h>
#include <string.h>

typedef struct Spatial {
  int n;                  /* spatial dims */
  const int64_t *pads;    /* 2n: begins then ends */
  const int64_t *strides; /* n */
  const int64_t *dils;    /* n */
} Spatial;

static FcStatus spatial_attrs(const FcOp *op, int n, Spatial *s, FcDiag *diag) {
  int np, ns, nd;
  s->n = n;
  FC_ITRY(fc_ih_ints(op, FC_ATTR_PADS, &s->pads, &np, diag));
  FC_ITRY(fc_ih_ints(op, FC_ATTR_STRIDES, &s->strides, &ns, diag));
  FC_ITRY(fc_ih_ints(op, FC_ATTR_DILATIONS, &s->dils, &nd, diag));
  if (np != 2 * n) return fc_ih_fail(op, diag, "pads has %d values, expected %d", np, 2 * n);
  if (ns != n) return fc_ih_fail(op, diag, "strides has %d values, expected %d", ns, n);
  if (nd != n) return fc_ih_fail(op, diag, "dilations has %d values, expected %d", nd, n);
  for (int i = 0; i < n; i++) {
    if (s->strides[i] <= 0) return fc_ih_fail(op, diag, "stride %d is %lld, must be positive", i, (long long)s->strides[i]);
    if (s->dils[i] <= 0) return fc_ih_fail(op, diag, "dilation %d is %lld, must be positive", i, (long long)s->dils[i]);
  }
  for (int i = 0; i < 2 * n; i++)
    if (s->pads[i] < 0) return fc_ih_fail(op, diag, "pad %d is %lld, must be non-negative", i, (long long)s->pads[i]);
  return FC_OK;
}

/* (k - 1) * d + 1, the extent of a dilated window. */
static bool window_extent(int64_t k, int64_t d, int64_t *out) {
  int64_t t;
  return k >= 1 && fc_checked_mul(k - 1, d, &t) && fc_checked_add(t, 1, out);
}

/* Output size of a window op along spatial dim i: floor or ceil((D + pb + pe - extent) / s) + 1. */
static FcStatus window_out(const FcOp *op, const Spatial *s, int i, int64_t in, int64_t k, bool ceil_mode,
                           int64_t *out, FcDiag *diag) {
  int64_t ext, padded;
  if (!window_extent(k, s->dils[i], &ext)) return fc_ih_fail(op, diag, "kernel dim %d (%lld) is invalid", i, (long long)k);
  if (!fc_checked_add(in, s->pads[i], &padded) || !fc_checked_add(padded, s->pads[s->n + i], &padded))
    return fc_ih_fail(op, diag, "padded spatial dim %d overflows", i);
  int64_t st = s->strides[i];
  if (padded < ext) {
    /* In ceil mode ceil((padded - extent) / s) + 1 is still one window, at the start of the padded input, when
     * it overhangs the padded input by less than a stride (ONNX, onnxruntime and PyTorch: a 2x2/2 max pool with
     * ceil mode on a map of 1 row); the kernels clip it like ceil mode's last windows. */
    if (ceil_mode && ext - padded < st && in + s->pads[i] > 0) {
      *out = 1;
      return FC_OK;
    }
    return fc_ih_fail(op, diag, "spatial dim %d: window of extent %lld does not fit padded input of %lld", i,
                         (long long)ext, (long long)padded);
  }
  int64_t num = padded - ext;
  int64_t o = num / st + 1;
  if (ceil_mode && num % st != 0) {
    o++;
    /* ONNX drops a last window that would start inside the end padding (an overflowing start does). */
    int64_t start;
    if (__builtin_mul_overflow(o - 1, st, &start) || start >= in + s->pads[i]) o--;
  }
  *out = o;
  return FC_OK;
}

static FcStatus check_bias(const FcOp *op, int64_t m, FcDiag *diag) {
  if (op->n_operands < 3) return FC_OK;
  const FcType *b = fc_ih_in(op, 2);
  if (b->dtype != fc_ih_in(op, 0)->dtype)
    return fc_ih_fail(op, diag, "bias dtype %s differs from input dtype %s", fc_dtype_name(b->dtype),
                         fc_dtype_name(fc_ih_in(op, 0)->dtype));
  if (b->rank != 1 || b->dims[0] != m)
    return fc_ih_fail(op, diag, "bias must be 1-D of %lld output channels", (long long)m);
  return FC_OK;
}

/* ---- fused epilogues of conv and matmul ----------------------------------------------------------
 * Operands [first, n) are the extras of the op's `epilogue` program (ew_program.h). The program may
 * use 'x', must reference only extras, and keep the result's dtype at every step; each extra
 * has the result's dtype and broadcasts to the result's shape without enlarging it (the epilogue is
 * computed in place over the product). Each step is checked by running its op's own inference hook
 * on rank-0 stand-ins of the result dtype, so "sqrt" on integers or "less" (a bool result) are
 * reported here rather than miscompiled. */

static FcStatus check_step(const FcOp *op, int i, const FcEwStep *st, FcDtype dt, FcArena *arena, FcDiag *diag) {
  const FcOpInfo *info = fc_op_info(st->kind);
  FcValue args[FC_EW_MAX_ARGS], res = {0};
  FcUse uses[FC_EW_MAX_ARGS];
  memset(uses, 0, sizeof uses);
  memset(args, 0, sizeof args);
  FcOp tmp = {.kind = st->kind, .n_operands = st->n_args, .n_results = 1, .operands = uses, .results = &res};
  for (int a = 0; a < st->n_args; a++) {
    args[a].type = (FcType){.dtype = dt, .rank = 0, .dims = NULL};
    uses[a] = (FcUse){.value = &args[a], .user = &tmp, .index = a};
  }
  FcDiag d;
  fc_diag_init(&d);
  if (!info->infer || info->infer(&tmp, arena, &d) != FC_OK)
    return fc_ih_fail(op, diag, "epilogue step %d: %s", i, info->infer ? d.msg : "cannot be inferred");
  if (res.type.dtype != dt)
    return fc_ih_fail(op, diag, "epilogue step %d (%s) gives %s, not the result's %s", i, info->name,
                      fc_dtype_name(res.type.dtype), fc_dtype_name(dt));
  return FC_OK;
}

static FcStatus check_epilogue(FcOp *op, int first, FcDtype dt, int rank, const int64_t *dims, FcArena *arena,
                               FcDiag *diag) {
  if (!fc_op_attr(op, FC_ATTR_EPILOGUE)) {
    if (op->n_operands > first)
      return fc_ih_fail(op, diag, "has %d operands; more than %d need an 'epilogue'", op->n_operands, first);
    return FC_OK;
  }
  const FcEwProgram *p;
  FC_ITRY(fc_ih_program(op, FC_ATTR_EPILOGUE, true, arena, &p, diag));
  for (int i = 0; i < p->n_steps; i++) {
    const FcEwStep *st = &p->steps[i];
    for (int k = 0; k < st->n_args; k++)
      if (st->args[k] >= 0 && st->args[k] < first)
        return fc_ih_fail(op, diag, "epilogue step %d references operand %d; only operands %d.. are extras", i,
                          (int)st->args[k], first);
    FC_ITRY(check_step(op, i, st, dt, arena, diag));
  }
  for (int i = first; i < op->n_operands; i++) {
    const FcType *t = fc_ih_in(op, i);
    if (t->dtype != dt)
      return fc_ih_fail(op, diag, "epilogue operand %d is %s, the result %s", i, fc_dtype_name(t->dtype),
                        fc_dtype_name(dt));
    bool ok = t->rank <= rank;
    for (int k = 0; ok && k < t->rank; k++) {
      int64_t d1 = t->dims[t->rank - 1 - k], d2 = dims[rank - 1 - k];
      ok = d1 == d2 || d1 == 1;
    }
    if (!ok) {
      char s1[256];
      return fc_ih_fail(op, diag, "epilogue operand %d (%s) does not broadcast to the result shape", i,
                        fc_type_str(t, s1, sizeof s1));
    }
  }
  return FC_OK;
}

static FcStatus conv_common(const FcOp *op, bool quantised, int64_t *group, FcDiag *diag) {
  const FcType *x = fc_ih_in(op, 0), *w = fc_ih_in(op, 1);
  if (x->rank < 3) return fc_ih_fail(op, diag, "input must have rank >= 3 (N, C, spatial...), has %d", x->rank);
  if (w->rank != x->rank) return fc_ih_fail(op, diag, "weight has rank %d, input has rank %d", w->rank, x->rank);
  if (w->dtype != x->dtype && !quantised)
    return fc_ih_fail(op, diag, "weight dtype %s differs from input dtype %s", fc_dtype_name(w->dtype),
                         fc_dtype_name(x->dtype));
  if (x->dtype == FC_DT_BOOL) return fc_ih_fail(op, diag, "operand type must be numeric, not i1");
  FC_ITRY(fc_ih_int(op, FC_ATTR_GROUP, group, diag));
  if (*group < 1) return fc_ih_fail(op, diag, "group is %lld, must be positive", (long long)*group);
  return FC_OK;
}

FcStatus fc_infer_conv(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  int64_t g;
  bool quantised;
  FC_ITRY(fc_ih_quant_compute(op, 0, &quantised, diag));
  FC_ITRY(conv_common(op, quantised, &g, diag));
  const FcType *x = fc_ih_in(op, 0), *w = fc_ih_in(op, 1);
  int n = x->rank - 2;
  Spatial s;
  FC_ITRY(spatial_attrs(op, n, &s, diag));
  int64_t c = x->dims[1], m = w->dims[0], cg;
  if (!fc_checked_mul(w->dims[1], g, &cg) || cg != c)
    return fc_ih_fail(op, diag, "weight has %lld input channels per group, input has %lld (group %lld)",
                         (long long)w->dims[1], (long long)c, (long long)g);
  if (m % g != 0)
    return fc_ih_fail(op, diag, "%lld output channels do not split into %lld groups", (long long)m, (long long)g);
  if (!quantised) FC_ITRY(check_bias(op, m, diag));
  int64_t *d = fc_ih_dims(arena, x->rank);
  d[0] = x->dims[0];
  d[1] = m;
  for (int i = 0; i < n; i++) FC_ITRY(window_out(op, &s, i, x->dims[2 + i], w->dims[2 + i], false, &d[2 + i], diag));
  const FcAttr *to = fc_op_attr(op, FC_ATTR_TO);
  if (quantised) {
    FC_ITRY(fc_ih_set_quant_compute(op, arena, m, x->rank, d, diag));
    if (!fc_op_attr(op, FC_ATTR_EPILOGUE)) {
      if (to) return fc_ih_fail(op, diag, "'to' is the result dtype of a quantised conv's epilogue");
      return FC_OK;
    }
    /* the epilogue computes on the f32 product (ops.def), then converts to `to` */
    FC_ITRY(check_epilogue(op, 3, FC_DT_F32, x->rank, d, arena, diag));
    if (to) {
      if (to->kind != FC_AK_TYPE || to->quant || (to->type != FC_DT_U8 && to->type != FC_DT_I8))
        return fc_ih_fail(op, diag, "'to' of a quantised conv's epilogue is u8 or i8");
      fc_ih_set(op, 0, arena, to->type, x->rank, d);
    }
    return FC_OK;
  }
  if (to) return fc_ih_fail(op, diag, "'to' is the result dtype of a quantised conv's epilogue");
  FC_ITRY(check_epilogue(op, 3, x->dtype, x->rank, d, arena, diag));
  fc_ih_set(op, 0, arena, x->dtype, x->rank, d);
  return FC_OK;
}

/* conv_blocked: x blocked [N, C/B, H, W, B] or plain [N, C, H, W]; y [N, M/B, OH, OW, B] (ops.def); the
 * quantised form of block 8, depthwise or 1x1. */
FcStatus fc_infer_conv_blocked(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0), *w = fc_ih_in(op, 1);
  int64_t blk, g;
  bool quantised;
  FC_ITRY(fc_ih_quant_compute(op, 0, &quantised, diag));
  FC_ITRY(fc_ih_int(op, FC_ATTR_BLOCK, &blk, diag));
  if (blk < 1 || blk > 64) return fc_ih_fail(op, diag, "block is %lld, must be in [1, 64]", (long long)blk);
  bool blocked = x->rank == 5;
  if (x->rank != 4 && !blocked)
    return fc_ih_fail(op, diag, "input must be [N, C, H, W] or [N, C/B, H, W, B], has rank %d", x->rank);
  if (blocked && x->dims[4] != blk)
    return fc_ih_fail(op, diag, "input's last dim is %lld, the block %lld", (long long)x->dims[4], (long long)blk);
  if (w->rank != 4 || (!quantised && (w->dtype != FC_DT_F32 || x->dtype != FC_DT_F32)))
    return fc_ih_fail(op, diag, "input and weight must be f32 or quantised, the weight [M, C/group, KH, KW]");
  FC_ITRY(fc_ih_int(op, FC_ATTR_GROUP, &g, diag));
  int64_t c = x->dims[1], m = w->dims[0], cg;
  if (blocked && !fc_checked_mul(c, blk, &c)) return fc_ih_fail(op, diag, "channel count overflows");
  if (g < 1 || !fc_checked_mul(w->dims[1], g, &cg) || cg != c)
    return fc_ih_fail(op, diag, "weight has %lld input channels per group, input has %lld (group %lld)",
                      (long long)w->dims[1], (long long)c, (long long)g);
  if (g != 1 && (m % g != 0 || (!blocked && !quantised)))
    return fc_ih_fail(op, diag, "group %lld: only 1, or one that divides the output channels, over a blocked input",
                      (long long)g);
  if (m % blk != 0)
    return fc_ih_fail(op, diag, "%lld output channels are not a multiple of the block %lld", (long long)m,
                      (long long)blk);
  if (quantised && (blk != 8 || (g != 1 && (g != m || m != c)) || (g == 1 && (!blocked || w->dims[2] != 1 ||
                                                                              w->dims[3] != 1))))
    return fc_ih_fail(op, diag, "a quantised conv_blocked is depthwise or 1x1 over a blocked input, in blocks of 8, "
                      "has group %lld, block %lld", (long long)g, (long long)blk);
  if (!quantised) FC_ITRY(check_bias(op, m, diag));
  Spatial s;
  FC_ITRY(spatial_attrs(op, 2, &s, diag));
  int64_t *d = fc_ih_dims(arena, 5);
  d[0] = x->dims[0];
  d[1] = m / blk;
  for (int i = 0; i < 2; i++) FC_ITRY(window_out(op, &s, i, x->dims[2 + i], w->dims[2 + i], false, &d[2 + i], diag));
  d[4] = blk;
  if (quantised) return fc_ih_set_quant_compute(op, arena, m, 5, d, diag);
  FC_ITRY(check_epilogue(op, 3, x->dtype, 5, d, arena, diag));
  fc_ih_set(op, 0, arena, x->dtype, 5, d);
  return FC_OK;
}

FcStatus fc_infer_conv_transpose(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  int64_t g;
  FC_ITRY(conv_common(op, false, &g, diag));
  const FcType *x = fc_ih_in(op, 0), *w = fc_ih_in(op, 1);
  int n = x->rank - 2;
  Spatial s;
  FC_ITRY(spatial_attrs(op, n, &s, diag));
  const int64_t *opad;
  int nop;
  FC_ITRY(fc_ih_ints(op, FC_ATTR_OUTPUT_PADDING, &opad, &nop, diag));
  if (nop != n) return fc_ih_fail(op, diag, "output_padding has %d values, expected %d", nop, n);
  int64_t c = x->dims[1], m;
  if (w->dims[0] != c)
    return fc_ih_fail(op, diag, "weight has %lld input channels, input has %lld", (long long)w->dims[0], (long long)c);
  if (c % g != 0)
    return fc_ih_fail(op, diag, "%lld input channels do not split into %lld groups", (long long)c, (long long)g);
  if (!fc_checked_mul(w->dims[1], g, &m)) return fc_ih_fail(op, diag, "output channel count overflows");
  FC_ITRY(check_bias(op, m, diag));
  int64_t *d = fc_ih_dims(arena, x->rank);
  d[0] = x->dims[0];
  d[1] = m;
  for (int i = 0; i < n; i++) {
    int64_t in = x->dims[2 + i], k = w->dims[2 + i], ext, o;
    if (opad[i] < 0) return fc_ih_fail(op, diag, "output_padding %d is negative", i);
    if (in < 1) return fc_ih_fail(op, diag, "spatial dim %d of the input is empty", i);
    if (!window_extent(k, s.dils[i], &ext)) return fc_ih_fail(op, diag, "kernel dim %d (%lld) is invalid", i, (long long)k);
    /* s*(in-1) + op + ext - pb - pe */
    if (!fc_checked_mul(s.strides[i], in - 1, &o) || !fc_checked_add(o, opad[i], &o) || !fc_checked_add(o, ext, &o))
      return fc_ih_fail(op, diag, "output dim %d overflows", i);
    if (__builtin_sub_overflow(o, s.pads[i], &o) || __builtin_sub_overflow(o, s.pads[n + i], &o))
      return fc_ih_fail(op, diag, "output dim %d would be negative", i);
    if (o < 0) return fc_ih_fail(op, diag, "output dim %d would be negative (%lld)", i, (long long)o);
    d[2 + i] = o;
  }
  fc_ih_set(op, 0, arena, x->dtype, x->rank, d);
  return FC_OK;
}

FcStatus fc_infer_pool(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  bool is_max = op->kind == FC_OP_MAX_POOL;
  if (x->rank < 3) return fc_ih_fail(op, diag, "input must have rank >= 3 (N, C, spatial...), has %d", x->rank);
  if (is_max ? x->dtype == FC_DT_BOOL : !fc_dtype_is_float(x->dtype))
    return fc_ih_fail(op, diag, "operand type %s is not supported", fc_dtype_name(x->dtype));
  int n = x->rank - 2, nk;
  Spatial s;
  const int64_t *ks;
  int64_t ceil_mode, flag;
  FC_ITRY(fc_ih_ints(op, FC_ATTR_KERNEL_SHAPE, &ks, &nk, diag));
  if (nk != n) return fc_ih_fail(op, diag, "kernel_shape has %d values, expected %d", nk, n);
  FC_ITRY(spatial_attrs(op, n, &s, diag));
  FC_ITRY(fc_ih_flag(op, FC_ATTR_CEIL_MODE, &ceil_mode, diag));
  FC_ITRY(fc_ih_flag(op, is_max ? FC_ATTR_STORAGE_ORDER : FC_ATTR_COUNT_INCLUDE_PAD, &flag, diag));
  if (!is_max && op->n_results != 1) return fc_ih_fail(op, diag, "expects 1 result, has %d", op->n_results);
  int64_t *d = fc_ih_dims(arena, x->rank);
  d[0] = x->dims[0];
  d[1] = x->dims[1];
  for (int i = 0; i < n; i++) {
    int64_t ext;
    if (ks[i] < 1) return fc_ih_fail(op, diag, "kernel_shape %d is %lld, must be positive", i, (long long)ks[i]);
    if (!window_extent(ks[i], s.dils[i], &ext)) return fc_ih_fail(op, diag, "kernel extent %d overflows", i);
    /* A window lying entirely in the padding has no element to pool. */
    if (s.pads[i] >= ext || s.pads[n + i] >= ext)
      return fc_ih_fail(op, diag, "pads of spatial dim %d must be smaller than the kernel extent %lld", i, (long long)ext);
    FC_ITRY(window_out(op, &s, i, x->dims[2 + i], ks[i], ceil_mode != 0, &d[2 + i], diag));
  }
  fc_ih_set(op, 0, arena, x->dtype, x->rank, d);
  if (op->n_results > 1) fc_ih_set(op, 1, arena, FC_DT_I64, x->rank, d);
  return FC_OK;
}

FcStatus fc_infer_matmul(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *a = fc_ih_in(op, 0), *b = fc_ih_in(op, 1);
  if (a->rank < 2 || b->rank < 2)
    return fc_ih_fail(op, diag, "operands must have rank >= 2 (have %d and %d)", a->rank, b->rank);
  bool quantised;
  FC_ITRY(fc_ih_quant_compute(op, 1, &quantised, diag));
  if (quantised && b->rank != 2) return fc_ih_fail(op, diag, "a quantised weight must be a [K, N] matrix");
  /* 8-bit operands (u8 or i8 each, as MatMulInteger's) accumulate exactly into an i32 result; zero points
   * are the lowering's business, as i32 corrections around the op. */
  bool int8 = fc_matmul_is_int8(a->dtype, b->dtype);
  if (a->dtype != b->dtype && !int8)
    return fc_ih_fail(op, diag, "operand dtypes differ (%s and %s)", fc_dtype_name(a->dtype), fc_dtype_name(b->dtype));
  if (a->dtype == FC_DT_BOOL) return fc_ih_fail(op, diag, "operand type must be numeric, not i1");
  FcDtype rdt = int8 ? FC_DT_I32 : a->dtype;
  const FcAttr *to = fc_op_attr(op, FC_ATTR_TO);
  if (to) {
    if (!int8 || quantised || to->kind != FC_AK_TYPE || (to->type != FC_DT_I32 && to->type != FC_DT_F32))
      return fc_ih_fail(op, diag, "'to' is the result dtype of 8-bit operands: i32 or f32");
    rdt = to->type;
  }
  int64_t k1 = a->dims[a->rank - 1], k2 = b->dims[b->rank - 2];
  if (k1 != k2) return fc_ih_fail(op, diag, "contraction dims differ (%lld and %lld)", (long long)k1, (long long)k2);
  FcType ab = {a->dtype, a->rank - 2, a->dims}, bb = {b->dtype, b->rank - 2, b->dims};
  int r;
  const int64_t *bd;
  if (!fc_broadcast_shapes(arena, &ab, &bb, &r, &bd)) {
    char s1[256], s2[256];
    return fc_ih_fail(op, diag, "batch dims of %s and %s do not broadcast", fc_type_str(a, s1, sizeof s1),
                         fc_type_str(b, s2, sizeof s2));
  }
  int64_t *d = fc_ih_dims(arena, r + 2);
  if (r) memcpy(d, bd, (size_t)r * sizeof *d);
  d[r] = a->dims[a->rank - 2];
  d[r + 1] = b->dims[b->rank - 1];
  if (quantised) return fc_ih_set_quant_compute(op, arena, d[r + 1], r + 2, d, diag);
  FC_ITRY(check_epilogue(op, 2, rdt, r + 2, d, arena, diag));
  fc_ih_set(op, 0, arena, rdt, r + 2, d);
  return FC_OK;
}

/* `s` (rank s_rank) must broadcast to `target` (rank t_rank) one way. */
static bool broadcasts_to(const FcType *s, const int64_t *target, int t_rank) {
  if (s->rank > t_rank) return false;
  for (int i = 0; i < s->rank; i++) {
    int64_t sd = s->dims[s->rank - 1 - i], td = target[t_rank - 1 - i];
    if (sd != td && sd != 1) return false;
  }
  return true;
}

FcStatus fc_infer_layer_norm(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  if (!fc_dtype_is_float(x->dtype))
    return fc_ih_fail(op, diag, "operand must have a float type, not %s", fc_dtype_name(x->dtype));
  int64_t axis;
  float eps;
  FC_ITRY(fc_ih_axis(op, FC_ATTR_AXIS, x->rank, &axis, diag));
  FC_ITRY(fc_ih_float(op, FC_ATTR_EPSILON, &eps, diag));
  if (!(eps >= 0)) return fc_ih_fail(op, diag, "epsilon must be non-negative");
  for (int i = 1; i < op->n_operands; i++) {
    const FcType *p = fc_ih_in(op, i);
    const char *what = i == 1 ? "scale" : "bias";
    if (p->dtype != x->dtype)
      return fc_ih_fail(op, diag, "%s dtype %s differs from input dtype %s", what, fc_dtype_name(p->dtype),
                           fc_dtype_name(x->dtype));
    if (!broadcasts_to(p, x->dims + axis, x->rank - (int)axis)) {
      char b1[256], b2[256];
      FcType norm = {x->dtype, x->rank - (int)axis, x->dims + axis};
      return fc_ih_fail(op, diag, "%s %s does not broadcast to the normalised shape %s", what,
                           fc_type_str(p, b1, sizeof b1), fc_type_str(&norm, b2, sizeof b2));
    }
  }
  fc_ih_set(op, 0, arena, x->dtype, x->rank, x->dims);
  int64_t *d = fc_ih_dims(arena, x->rank);
  for (int i = 0; i < x->rank; i++) d[i] = i < axis ? x->dims[i] : 1;
  for (int i = 1; i < op->n_results; i++) fc_ih_set(op, i, arena, x->dtype, x->rank, d);
  return FC_OK;
}

FcStatus fc_infer_topk(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  if (x->rank < 1) return fc_ih_fail(op, diag, "operand must have rank >= 1");
  if (x->dtype == FC_DT_BOOL) return fc_ih_fail(op, diag, "operand type must be numeric, not i1");
  int64_t axis, k, flag;
  FC_ITRY(fc_ih_axis(op, FC_ATTR_AXIS, x->rank, &axis, diag));
  FC_ITRY(fc_ih_int(op, FC_ATTR_K, &k, diag));
  FC_ITRY(fc_ih_flag(op, FC_ATTR_LARGEST, &flag, diag));
  FC_ITRY(fc_ih_flag(op, FC_ATTR_SORTED, &flag, diag));
  if (k < 0 || k > x->dims[axis])
    return fc_ih_fail(op, diag, "k %lld out of range for axis %lld of size %lld", (long long)k, (long long)axis,
                         (long long)x->dims[axis]);
  int64_t *d = fc_ih_dims(arena, x->rank);
  memcpy(d, x->dims, (size_t)x->rank * sizeof *d);
  d[axis] = k;
  fc_ih_set(op, 0, arena, x->dtype, x->rank, d);
  fc_ih_set(op, 1, arena, FC_DT_I64, x->rank, d);
  return FC_OK;
}

FcStatus fc_infer_det(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  if (!fc_dtype_is_float(x->dtype))
    return fc_ih_fail(op, diag, "operand must have a float type, not %s", fc_dtype_name(x->dtype));
  if (x->rank < 2) return fc_ih_fail(op, diag, "operand must have rank >= 2, has %d", x->rank);
  if (x->dims[x->rank - 1] != x->dims[x->rank - 2])
    return fc_ih_fail(op, diag, "matrices are %lldx%lld, not square", (long long)x->dims[x->rank - 2],
                         (long long)x->dims[x->rank - 1]);
  fc_ih_set(op, 0, arena, x->dtype, x->rank - 2, x->dims);
  return FC_OK;
}

FcStatus fc_infer_grid_sample(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0), *g = fc_ih_in(op, 1);
  if (!fc_dtype_is_float(x->dtype) || !fc_dtype_is_float(g->dtype))
    return fc_ih_fail(op, diag, "input and grid must have float types (have %s and %s)", fc_dtype_name(x->dtype),
                         fc_dtype_name(g->dtype));
  if (x->rank != 4 || g->rank != 4)
    return fc_ih_fail(op, diag, "input and grid must have rank 4 (have %d and %d)", x->rank, g->rank);
  if (g->dims[0] != x->dims[0] || g->dims[3] != 2) {
    char b1[256], b2[256];
    return fc_ih_fail(op, diag, "grid %s does not match input %s (expected [N, Ho, Wo, 2])",
                         fc_type_str(g, b1, sizeof b1), fc_type_str(x, b2, sizeof b2));
  }
  FcMode m;
  int64_t flag;
  FC_ITRY(fc_ih_mode(op, FC_ML_GRID_MODE, &m, diag));
  FC_ITRY(fc_ih_mode(op, FC_ML_GRID_PAD, &m, diag));
  FC_ITRY(fc_ih_flag(op, FC_ATTR_ALIGN_CORNERS, &flag, diag));
  int64_t d[4] = {x->dims[0], x->dims[1], g->dims[1], g->dims[2]};
  fc_ih_set(op, 0, arena, x->dtype, 4, d);
  return FC_OK;
}

FcStatus fc_infer_roi_align(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0), *rois = fc_ih_in(op, 1), *bi = fc_ih_in(op, 2);
  if (!fc_dtype_is_float(x->dtype))
    return fc_ih_fail(op, diag, "input must have a float type, not %s", fc_dtype_name(x->dtype));
  if (x->rank != 4) return fc_ih_fail(op, diag, "input must have rank 4, has %d", x->rank);
  if (rois->dtype != x->dtype) return fc_ih_fail(op, diag, "rois dtype %s differs from input dtype %s",
                                                    fc_dtype_name(rois->dtype), fc_dtype_name(x->dtype));
  if (rois->rank != 2 || rois->dims[1] != 4) return fc_ih_fail(op, diag, "rois must have shape [R, 4]");
  if (bi->dtype != FC_DT_I64 && bi->dtype != FC_DT_I32)
    return fc_ih_fail(op, diag, "batch_indices must be i32 or i64, not %s", fc_dtype_name(bi->dtype));
  if (bi->rank != 1 || bi->dims[0] != rois->dims[0])
    return fc_ih_fail(op, diag, "batch_indices must have shape [%lld]", (long long)rois->dims[0]);
  int64_t oh, ow, sr;
  float scale;
  FC_ITRY(fc_ih_int(op, FC_ATTR_OUTPUT_HEIGHT, &oh, diag));
  FC_ITRY(fc_ih_int(op, FC_ATTR_OUTPUT_WIDTH, &ow, diag));
  FC_ITRY(fc_ih_int(op, FC_ATTR_SAMPLING_RATIO, &sr, diag));
  FC_ITRY(fc_ih_float(op, FC_ATTR_SPATIAL_SCALE, &scale, diag));
  if (oh < 1 || ow < 1)
    return fc_ih_fail(op, diag, "output size %lldx%lld must be positive", (long long)oh, (long long)ow);
  if (sr < 0) return fc_ih_fail(op, diag, "sampling_ratio %lld is negative", (long long)sr);
  FcMode m;
  FC_ITRY(fc_ih_mode(op, FC_ML_ROI_MODE, &m, diag));
  FC_ITRY(fc_ih_mode(op, FC_ML_ROI_CTM, &m, diag));
  int64_t d[4] = {rois->dims[0], x->dims[1], oh, ow};
  fc_ih_set(op, 0, arena, x->dtype, 4, d);
  return FC_OK;
}

/* ---- einsum -------------------------------------------------------------------------------------- */

enum { N_LABELS = 52 };
static const char label_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

static int label_index(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= 'A' && c <= 'Z') return c - 'A';
  return -1;
}

/* One term of the equation, spaces removed: labels (indices) and where "..." stands (-1: none). */
typedef struct Term {
  int *labels;
  int n;
  int ellipsis; /* position in labels[] before which the ellipsis dims go, or -1 */
} Term;

static FcStatus parse_term(const FcOp *op, const char *s, size_t len, FcArena *arena, Term *t, FcDiag *diag) {
  t->labels = FC_NEW_ARRAY(arena, int, len + 1);
  t->n = 0;
  t->ellipsis = -1;
  for (size_t i = 0; i < len;) {
    char c = s[i];
    if (c == ' ') {
      i++;
    } else if (c == '.') {
      if (i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.') return fc_ih_fail(op, diag, "equation has a stray '.'");
      if (t->ellipsis >= 0) return fc_ih_fail(op, diag, "a term has two ellipses");
      t->ellipsis = t->n;
      i += 3;
    } else {
      int l = label_index(c);
      if (l < 0) return fc_ih_fail(op, diag, "equation has an invalid character '%c'", c);
      t->labels[t->n++] = l;
      i++;
    }
  }
  return FC_OK;
}

FcStatus fc_infer_einsum(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const char *eq;
  FC_ITRY(fc_ih_str(op, FC_ATTR_EQUATION, &eq, diag));
  FcDtype dt = fc_ih_in(op, 0)->dtype;
  for (int i = 1; i < op->n_operands; i++)
    if (fc_ih_in(op, i)->dtype != dt)
      return fc_ih_fail(op, diag, "operand dtypes differ (%s and %s)", fc_dtype_name(dt),
                           fc_dtype_name(fc_ih_in(op, i)->dtype));
  if (dt == FC_DT_BOOL) return fc_ih_fail(op, diag, "operand type must be numeric, not i1");
  const char *arrow = strstr(eq, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
  if (arrow && strstr(arrow + 2, "->")) return fc_ih_fail(op, diag, "equation has two '->'");

  int64_t ldim[N_LABELS];
  int count[N_LABELS];
  for (int l = 0; l < N_LABELS; l++) {
    ldim[l] = -1;
    count[l] = 0;
  }
  FcType ell = {dt, 0, NULL}; /* broadcast of every operand's ellipsis dims */
  int term_i = 0;
  const char *p = eq;
  for (;;) {
    const char *comma = memchr(p, ',', lhs_len - (size_t)(p - eq));
    size_t tl = comma ? (size_t)(comma - p) : lhs_len - (size_t)(p - eq);
    if (term_i >= op->n_operands)
      return fc_ih_fail(op, diag, "equation \"%s\" has more terms than the %d operands", eq, op->n_operands);
    Term t;
    FC_ITRY(parse_term(op, p, tl, arena, &t, diag));
    const FcType *x = fc_ih_in(op, term_i);
    int n_ell = x->rank - t.n;
    if (t.ellipsis < 0 ? n_ell != 0 : n_ell < 0)
      return fc_ih_fail(op, diag, "term %d of \"%s\" has %d labels, operand has rank %d", term_i, eq, t.n, x->rank);
    int64_t seen[N_LABELS];
    for (int l = 0; l < N_LABELS; l++) seen[l] = -1;
    for (int j = 0; j < t.n; j++) {
      int dim_i = t.ellipsis >= 0 && j >= t.ellipsis ? j + n_ell : j;
      int64_t d = x->dims[dim_i];
      int l = t.labels[j];
      if (seen[l] >= 0 && seen[l] != d)
        return fc_ih_fail(op, diag, "label '%c' repeats in term %d with dims %lld and %lld", label_chars[l],
                             term_i, (long long)seen[l], (long long)d);
      seen[l] = d;
      count[l]++;
      /* Like numpy, a label's dim may be 1 in one operand and broadcast against the others. */
      if (ldim[l] < 0 || ldim[l] == 1) ldim[l] = d;
      else if (d != ldim[l] && d != 1)
        return fc_ih_fail(op, diag, "label '%c' has dims %lld and %lld",
                             label_chars[l], (long long)ldim[l], (long long)d);
    }
    if (t.ellipsis >= 0) {
      FcType e = {dt, n_ell, x->dims + t.ellipsis};
      int r;
      const int64_t *bd;
      if (!fc_broadcast_shapes(arena, &ell, &e, &r, &bd))
        return fc_ih_fail(op, diag, "the ellipsis dims of term %d do not broadcast", term_i);
      ell.rank = r;
      ell.dims = bd;
    }
    term_i++;
    if (!comma) break;
    p = comma + 1;
  }
  if (term_i != op->n_operands)
    return fc_ih_fail(op, diag, "equation \"%s\" has %d terms for %d operands", eq, term_i, op->n_operands);

  Term out;
  if (arrow) {
    FC_ITRY(parse_term(op, arrow + 2, strlen(arrow + 2), arena, &out, diag));
    bool used[N_LABELS] = {false};
    for (int j = 0; j < out.n; j++) {
      int l = out.labels[j];
      char c = label_chars[l];
      if (!count[l]) return fc_ih_fail(op, diag, "output label '%c' is not in any input", c);
      if (used[l]) return fc_ih_fail(op, diag, "output label '%c' appears twice", c);
      used[l] = true;
    }
    if (out.ellipsis < 0 && ell.rank > 0)
      return fc_ih_fail(op, diag, "output of \"%s\" needs '...' for the broadcast dims", eq);
  } else {
    /* Implicit output: the ellipsis dims, then the labels used once, in ASCII order. */
    out.labels = FC_NEW_ARRAY(arena, int, N_LABELS);
    out.n = 0;
    out.ellipsis = 0;
    for (int l = 0; l < N_LABELS; l++)
      if (count[l] == 1) out.labels[out.n++] = l;
  }
  int n_ell_out = out.ellipsis >= 0 ? ell.rank : 0;
  int rank = out.n + n_ell_out;
  int64_t *d = fc_ih_dims(arena, rank);
  int r = 0;
  for (int j = 0; j <= out.n; j++) {
    if (j == out.ellipsis)
      for (int e = 0; e < n_ell_out; e++) d[r++] = ell.dims[e];
    if (j < out.n) d[r++] = ldim[out.labels[j]];
  }
  fc_ih_set(op, 0, arena, dt, rank, d);
  return FC_OK;
}
