/* prune_conv_taps.c — drops the kernel taps of a convolution that read only padding for every output
 * pixel, so that no kernel multiplies them by zeros.
 *
 * A dilated conv on a small map (DeepLabV3's ASPP: 3×3, dilation 24 or 36, pads equal to the dilation,
 * on a 16×16 or 33×33 map) reads, through its off-centre taps, input positions o·s + kk·d - pad that
 * lie outside [0, D) for every output o: they contribute nothing. Shapes are static, so the taps that
 * read the image at least once are known here: along each spatial dim they are kk with some o in
 * [0, O) and 0 <= o·s + kk·d - pad_begin < D. The rewrite keeps, per dim, the range [lo, hi] from the
 * first to the last such tap (taps between them that read only padding stay: they cost the kernels'
 * edge handling, not a product) and
 *     w' = w[:, :, lo..hi]        pad_begin' = pad_begin - lo·d        pad_end' = pad_end - (K-1-hi)·d
 * which leaves every output position reading the same inputs, so the result's shape and values are
 * unchanged (the output size formula sees (K-1)·d shrink by exactly what the pads lose). A dim left with
 * one tap gets dilation 1, its normal form: a conv whose every dim keeps only its centre tap on an
 * unpadded map is then a plain 1×1 conv, and the GEMM kernels take it.
 *
 * Only convs with constant float weights are rewritten (the slice is a new constant); a dim whose new
 * pads would be negative (a stride that jumps over the whole map) is left as it is.
 */
#include "passes.h"
#include "rewrite.h"

enum { MAX_SP = FC_DEFAULT_MAX_RANK };

/* Whether tap kk of a dim (size D, output O, stride s, dilation d, leading pad p) reads inside [0, D)
 * for some output o. */
static bool tap_reads_map(int64_t kk, int64_t D, int64_t O, int64_t s, int64_t d, int64_t p) {
  int64_t off = kk * d - p;                             /* input position of output 0 */
  int64_t o_lo = off >= 0 ? 0 : (-off + s - 1) / s;     /* first o with o·s + off >= 0 */
  if (o_lo >= O) return false;
  return o_lo * s + off < D;
}

static FcStatus prune(FcModule *m, FcOp *op, FcOpStack *scratch, FcDiag *diag) {
  if (op->kind != FC_OP_CONV || op->n_results != 1 || op->n_operands < 2) return FC_OK;
  const FcTensor *w = fc_value_const(op->operands[1].value);
  const FcType *xt = &op->operands[0].value->type, *yt = &op->results[0].type;
  if (!w || !fc_dtype_is_float(w->type.dtype) || fc_type_is_quant(&w->type) || xt->rank != w->type.rank ||
      xt->rank < 3 || xt->rank - 2 > MAX_SP)
    return FC_OK;
  int n = xt->rank - 2;
  const int64_t *s, *d, *p;
  if (fc_op_attr_ints(op, FC_ATTR_STRIDES, &s) != n || fc_op_attr_ints(op, FC_ATTR_DILATIONS, &d) != n ||
      fc_op_attr_ints(op, FC_ATTR_PADS, &p) != 2 * n)
    return FC_OK;
  int64_t numel;
  if (!fc_type_numel(&w->type, &numel) || numel == 0) return FC_OK;
  int64_t *lo = FC_NEW_ARRAY(&m->arena, int64_t, (size_t)n), *kn = FC_NEW_ARRAY(&m->arena, int64_t, (size_t)n + 2);
  int64_t *nd = FC_NEW_ARRAY(&m->arena, int64_t, (size_t)n), *np = FC_NEW_ARRAY(&m->arena, int64_t, 2 * (size_t)n);
  bool changed = false;
  kn[0] = w->type.dims[0];
  kn[1] = w->type.dims[1];
  for (int i = 0; i < n; i++) {
    int64_t K = w->type.dims[2 + i], D = xt->dims[2 + i], O = yt->dims[2 + i], hi = -1;
    lo[i] = K;
    for (int64_t kk = 0; kk < K; kk++)
      if (tap_reads_map(kk, D, O, s[i], d[i], p[i])) {
        if (lo[i] == K) lo[i] = kk;
        hi = kk;
      }
    int64_t pb = p[i] - lo[i] * d[i], pe = p[n + i] - (K - 1 - hi) * d[i];
    if (hi < 0 || pb < 0 || pe < 0) { /* nothing read at all, or a stride past the map: keep the dim */
      lo[i] = 0, hi = K - 1, pb = p[i], pe = p[n + i];
    }
    kn[2 + i] = hi - lo[i] + 1;
    nd[i] = kn[2 + i] == 1 ? 1 : d[i];
    np[i] = pb, np[n + i] = pe;
    changed |= kn[2 + i] != K;
  }
  if (!changed) return FC_OK;

  FcTensor *t = fc_tensor_new(&m->arena, fc_type_make(&m->arena, w->type.dtype, n + 2, kn));
  fc_rw_slice_taps(w, t, n, lo);
  FcBuilder b;
  fc_rw_builder_before(&b, op, diag);
  FcValue *ops[FC_PRODUCT_MAX_OPERANDS];
  for (int i = 0; i < op->n_operands; i++) ops[i] = op->operands[i].value;
  ops[1] = fc_b_const_tensor(&b, t);
  FcAttr *attrs = FC_NEW_ARRAY(&m->arena, FcAttr, (size_t)op->n_attrs);
  for (int i = 0; i < op->n_attrs; i++) {
    attrs[i] = op->attrs[i];
    if (attrs[i].name == FC_ATTR_DILATIONS) attrs[i] = FC_A_INTS(DILATIONS, nd, n);
    if (attrs[i].name == FC_ATTR_PADS) attrs[i] = FC_A_INTS(PADS, np, 2 * n);
  }
  FcValue *y = fc_b_op1(&b, FC_OP_CONV, ops, op->n_operands, attrs, op->n_attrs);
  return fc_rw_replace_built(&b, op, y, scratch);
}

FcStatus fc_pass_prune_conv_taps(FcModule *m, FcPassContext *pc) {
  FcOpStack scratch;
  fc_op_stack_init(&scratch, &m->arena);
  FcStatus st = FC_OK;
  fc_graph_for_each_op_safe(m->graph, op, next) {
    if (st == FC_OK) st = prune(m, op, &scratch, pc->diag);
  }
  return st;
}
