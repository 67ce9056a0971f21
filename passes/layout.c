/* layout.c — puts CPU convolutions in the blocked layout NCHW<B>c (flow.conv_blocked) where its kernels
 * are the faster ones, with layout changes only at the edges of blocked regions.
 *
 * The block B, the cost constants and the Winograd decision are the target's (pc->target, target.h):
 * B = 8 with AVX2 (NCHW8c), 16 with AVX-512 (NCHW16c), one vector of f32 lanes either way; AVX-512 also
 * has a narrower block, 8, for the convs still in NCHW after the regions of 16 are chosen (channel counts
 * that 16 does not divide: RegNetY's 104, 208, 440), chosen the same way with its own costs (fc_pass_layout
 * at the end). Below, 8 stands for B. In NCHW8c a tensor [N, C, H, W] is stored as [N, C/8, H, W, 8]:
 * the 8 channels of a block sit side by side at each pixel, one vector. A depthwise tap is then one vector
 * load times one weight vector (no shuffles, no lane masks, any stride), and a dense direct convolution
 * broadcasts input scalars against vectors of 8 output channels, with no im2col and no packing at run time.
 *
 * Each f32 2-D conv the blocked kernels handle, and where they are expected to win, becomes
 *     y = from_blocked(conv_blocked(to_blocked(x), w, bias, blocked(extra)...))
 * where to_blocked is reshape [N, C/8, 8, H, W] + transpose (0, 1, 3, 4, 2) and from_blocked its inverse,
 * ordinary ops. Between two converted convs the pair from_blocked → to_blocked is a transpose, a
 * reshape, a reshape and the inverse transpose, which canonicalize (run after this pass) merges away:
 * the layout changes that survive are the ones at real boundaries (a graph input or output, an op with
 * no blocked form). The epilogue's extra operands are blocked the same way when they vary per channel
 * (a residual: its producer's from_blocked cancels), reshaped when they do not (scalars stay as they
 * are), and fold turns the layout change of a constant into a constant.
 *
 * Which convs: f32, 2-D, constant weights and bias (or none), M % 8 == 0, and either group 1 over
 * C % 8 == 0 channels (blocked input), group 1 over fewer than 8 channels (a first conv over colour
 * planes reads its plain NCHW input, only the result is blocked), depthwise (group = C = M,
 * C % 8 == 0), or grouped over C % 8 == 0 channels (RegNet, ResNeXt: the dense kernel's tiles read their
 * groups' inputs; the cost model counts the lanes a group narrower than a block wastes), within the
 * kernels' limits (pads up to 32; depthwise: dilated kernel spans up to 32, up to 81 taps, images up to
 * 8192 wide; dense and grouped: spans up to 80, ASPP's dilation 24, whose kernel skips the taps in the
 * padding). Convs that codegen gives Winograd (fc_conv_winograd_variant, the one decision both ask) stay
 * in NCHW: Winograd does them with fewer multiplications than any direct kernel, so they would only add
 * layout changes.
 * Max and average pools between such convs join them (is_carrier), and a global average pool (reduce
 * over axes {2, 3}) of a blocked conv's result is moved before the layout change, which is then a
 * reshape of [N, C/8, 1, 1, 8]. A channel scale (mul by a [N, C, 1, 1] tensor: a squeeze-and-excitation
 * block's gate) joins them too, its gate reshaped to [N, C/8, 1, 1, 8], and so do concats along the
 * channels of whole blocks and other element-wise ops whose non-image operands are constant over the
 * pixels (DenseNet's pre-activation batch norm and relu). Which regions are converted is a cost estimate
 * (see "regions" below). Limits: a concat with a channel count that is not a multiple of 8 and other
 * ops without a blocked form are a region's edge; Winograd convs too, unless the two layout changes
 * they would cause between converted members cost more than Winograd saves (winograd_between).
 */
#include "passes.h"
#include "rewrite.h"

#include <stdbool.h>
#include <stdint.h>

enum {
  MAX_PAD = 32,        /* the kernels' limits: pads, */
  MAX_SPAN = 32,       /* (K - 1) * dilation (depthwise), */
  MAX_DENSE_SPAN = 80, /* and for the dense and grouped kernel: its straight-line edge tiles, at least 5
                        * pixels wide, stay within its 32 per row (pads 32 / 5 left, span + 6 / 5 right) */
  MAX_DW_TAPS = 81,    /* depthwise taps (kept in registers) */
  MAX_DW_WIDTH = 8192, /* and depthwise input width (its row of zeros) */
};

/* f32 tensor type of rank 4. */
static bool is_f32_4d(const FcType *t) { return t->dtype == FC_DT_F32 && t->rank == 4; }

/* The extra operand e of a conv with result [N, M, OH, OW] can be blocked: it broadcasts to the result
 * (the verifier checked) with its channel dim either 1 or M. */
static bool extra_ok(const FcType *t) { return t->dtype == FC_DT_F32 && t->rank <= 4; }

/* group = C = M, one weight channel per group. */
static bool is_depthwise(const FcOp *op) {
  int64_t C = op->operands[0].value->type.dims[1], M = op->operands[1].value->type.dims[0];
  return fc_op_attr_int(op, FC_ATTR_GROUP, 1) == C && M == C && op->operands[1].value->type.dims[1] == 1;
}

/* The conv op has a blocked kernel on target t. */
static bool has_blocked_kernel(const FcTarget *t, const FcOp *op) {
  int64_t B = t->layout.block;
  if (op->kind != FC_OP_CONV || op->n_operands < 2 || op->n_results != 1 || fc_rw_is_quantised(op)) return false;
  const FcType *x = &op->operands[0].value->type, *w = &op->operands[1].value->type;
  if (!is_f32_4d(x) || !is_f32_4d(w) || !is_f32_4d(&op->results[0].type)) return false;
  if (!fc_value_const(op->operands[1].value)) return false;
  if (op->n_operands > 2 && !fc_value_const(op->operands[2].value)) return false;
  for (int i = 3; i < op->n_operands; i++)
    if (!extra_ok(&op->operands[i].value->type)) return false;
  int64_t C = x->dims[1], M = w->dims[0], g = fc_op_attr_int(op, FC_ATTR_GROUP, 1), n;
  if (M % B != 0 || !fc_type_numel(&op->results[0].type, &n) || n == 0 || C == 0) return false;
  const int64_t *s, *d, *p;
  if (fc_op_attr_ints(op, FC_ATTR_STRIDES, &s) != 2 || fc_op_attr_ints(op, FC_ATTR_DILATIONS, &d) != 2 ||
      fc_op_attr_ints(op, FC_ATTR_PADS, &p) != 4)
    return false;
  /* The kernels' limits: edges they emit straight-line, depthwise taps they keep in registers and the
   * row of zeros it reads for vertical padding. */
  for (int i = 0; i < 4; i++)
    if (p[i] > MAX_PAD) return false;
  int64_t span = (w->dims[2] - 1) * d[0] > (w->dims[3] - 1) * d[1] ? (w->dims[2] - 1) * d[0] : (w->dims[3] - 1) * d[1];
  if (g != 1 && is_depthwise(op))
    return span <= MAX_SPAN && w->dims[2] * w->dims[3] <= MAX_DW_TAPS && x->dims[3] <= MAX_DW_WIDTH;
  if (span > MAX_DENSE_SPAN) return false;
  if (g != 1) /* grouped: kernel_conv_blocked.c over a blocked input */
    return C % B == 0 && M % g == 0 && w->dims[1] * g == C;
  return C % B == 0 || C < B;
}

/* How many times faster than the direct NCHW kernel codegen's Winograd is expected to be on conv op
 * (1: Winograd does not apply). */
static double winograd_speedup(const FcTarget *t, const FcOp *op) {
  FcConvShape cs;
  return fc_conv_shape_of(op, &cs) ? fc_conv_winograd_speedup(t, &cs) : 1;
}

/* The conv op is one this pass rewrites on target t. Winograd convs stay in NCHW (but see
 * winograd_between). */
static bool wants_blocked(const FcTarget *t, const FcOp *op) {
  return has_blocked_kernel(t, op) && winograd_speedup(t, op) == 1;
}

/* A pool that can join a region: a 2-D f32 max_pool (without indices) or avg_pool over C % 8 == 0
 * channels. On the blocked tensor it is the same pool with a third spatial dim of window 1 (the 8
 * channels of a block), which kernel_pool_blocked.c runs on vectors. It saves nothing by itself, but
 * lets a conv before it and one after it share a region instead of each changing layout. */
static bool is_pool_carrier(const FcTarget *t, const FcOp *op) {
  if ((op->kind != FC_OP_MAX_POOL && op->kind != FC_OP_AVG_POOL) || op->n_results != 1) return false;
  const FcType *x = &op->operands[0].value->type;
  const int64_t *k, *p;
  if (!is_f32_4d(x) || x->dims[1] % t->layout.block != 0 || x->dims[1] == 0 ||
      fc_op_attr_ints(op, FC_ATTR_KERNEL_SHAPE, &k) != 2 || fc_op_attr_ints(op, FC_ATTR_PADS, &p) != 4)
    return false;
  for (int i = 0; i < 4; i++)
    if (p[i] > MAX_PAD) return false;
  return k[0] * k[1] <= MAX_DW_TAPS && x->dims[3] <= MAX_DW_WIDTH; /* kernel_pool_blocked.c's limits */
}

/* A channel scale: mul(x, s) or mul(s, x) with x an f32 [N, C, H, W] (C % 8 == 0) and s [N or 1, C, 1, 1]
 * — the last step of a squeeze-and-excitation block. The index of x, or -1. On the blocked tensor it is
 * the same mul with s reshaped to [N, C/8, 1, 1, 8]; like a pool, it lets the conv before it (whose result
 * the block also pools) and the one after it share a region. */
static int scaled_operand(const FcTarget *t, const FcOp *op) {
  if (op->kind != FC_OP_MUL || op->n_operands != 2 || op->n_results != 1) return -1;
  for (int i = 0; i < 2; i++) {
    const FcType *x = &op->operands[i].value->type, *s = &op->operands[1 - i].value->type;
    if (!is_f32_4d(x) || !is_f32_4d(s) || !fc_type_equal(x, &op->results[0].type)) continue;
    if (x->dims[1] == 0 || x->dims[1] % t->layout.block != 0 || s->dims[1] != x->dims[1]) continue;
    if ((s->dims[0] == 1 || s->dims[0] == x->dims[0]) && s->dims[2] == 1 && s->dims[3] == 1) return i;
  }
  return -1;
}

/* A channel concat: axis 1 of f32 [N, C_i, H, W] operands, each C_i a non-zero multiple of 8. On blocked
 * operands it is the concat along axis 1 of [N, C_i/8, H, W, 8]: whole blocks side by side, which the
 * memory plan still turns into producers writing their slices (N = 1). DenseNet's blocks and Inception's
 * branches meet in these, so without them every concat is a region's edge. */
static bool is_concat_carrier(const FcTarget *t, const FcOp *op) {
  if (op->kind != FC_OP_CONCAT || op->n_results != 1 || !is_f32_4d(&op->results[0].type)) return false;
  int64_t axis = fc_op_attr_int(op, FC_ATTR_AXIS, 0);
  if (axis != 1 && axis != -3) return false;
  for (int i = 0; i < op->n_operands; i++) {
    const FcType *x = &op->operands[i].value->type;
    if (!is_f32_4d(x) || x->dims[1] == 0 || x->dims[1] % t->layout.block != 0) return false;
  }
  return true;
}

/* Operand type x of an element-wise op with result y [N, C, H, W] is an image: y's own shape. */
static bool is_image_of(const FcType *x, const FcType *y) { return fc_type_equal(x, y); }

/* An element-wise op over f32 [N, C, H, W] (C % 8 == 0) whose operands are f32 images of that shape or
 * constant over the pixels (per-channel or per-image values, scalars: [C, 1, 1], [N, 1, 1, 1], ...),
 * with one image at least: DenseNet's pre-activation batch norm (mul and add by [C, 1, 1]) and its relu
 * before each conv, an activation outside an epilogue. On blocked images it is the same op, the other
 * operands blocked as a conv's epilogue extras are (block_extra: a reshape). */
static bool is_channel_elementwise(const FcTarget *t, const FcOp *op) {
  if (!(fc_op_info(op->kind)->flags & FC_OPF_ELEMENTWISE) || op->n_results != 1) return false;
  const FcType *y = &op->results[0].type;
  if (!is_f32_4d(y) || y->dims[1] == 0 || y->dims[1] % t->layout.block != 0) return false;
  bool image = false;
  for (int i = 0; i < op->n_operands; i++) {
    const FcType *x = &op->operands[i].value->type;
    if (x->dtype != FC_DT_F32 || x->rank > 4) return false;
    if (is_image_of(x, y)) {
      image = true;
      continue;
    }
    int64_t d[4];
    for (int k = 0; k < 4; k++) d[k] = k < 4 - x->rank ? 1 : x->dims[k - (4 - x->rank)];
    if (d[2] != 1 || d[3] != 1 || (d[1] != 1 && d[1] != y->dims[1]) || (d[0] != 1 && d[0] != y->dims[0]))
      return false;
  }
  return image;
}

/* The operand of a carrier or conv that is read in the blocked layout first (its image). */
static int image_operand(const FcTarget *t, const FcOp *op) {
  int i = scaled_operand(t, op);
  if (i < 0 && is_channel_elementwise(t, op))
    for (i = 0; !is_image_of(&op->operands[i].value->type, &op->results[0].type); i++) continue;
  return i < 0 ? 0 : i;
}

/* A member that converts nothing by itself: a pool, a channel scale, a concat or another element-wise op. */
static bool is_carrier(const FcTarget *t, const FcOp *op) {
  return is_pool_carrier(t, op) || scaled_operand(t, op) >= 0 || is_concat_carrier(t, op) ||
         is_channel_elementwise(t, op);
}

/* Whether member op reads its operand i in the blocked layout (changes its layout, unless it comes
 * blocked from another member): a conv its image and the extras of its epilogue, a pool its image, a
 * channel scale its image, a concat every operand, another element-wise op its images. */
static bool reads_operand_blocked(const FcTarget *t, const FcOp *op, int i) {
  if (scaled_operand(t, op) >= 0) return i == scaled_operand(t, op);
  if (is_concat_carrier(t, op)) return true;
  if (is_channel_elementwise(t, op)) return is_image_of(&op->operands[i].value->type, &op->results[0].type);
  return i != 1 && i != 2;
}

/* A region member: a conv to convert or a carrier to carry along. */
static bool is_member(const FcTarget *t, const FcOp *op, bool wide) {
  if (!wide && (is_concat_carrier(t, op) || (is_channel_elementwise(t, op) && scaled_operand(t, op) < 0)))
    return false;
  return wants_blocked(t, op) || is_carrier(t, op);
}

/* The rewrite's state: the blocked form made for each value so far (by value id), so a value read
 * by several converted convs (a block's input, also its residual) changes layout once; a converted
 * conv's result is read in its blocked form directly. */
typedef struct Rewriter {
  FcModule *m;
  int64_t B;          /* the target's block */
  FcOpStack scratch;
  FcValue **blocked;
  uint32_t n_ids;
  FcDiag *diag;
} Rewriter;

static FcValue *to_blocked_once(Rewriter *rw, FcBuilder *b, FcValue *v) {
  FcValue *src = fc_rw_blocked_source(v, rw->B);
  if (src) return src;
  if (v->id < rw->n_ids && rw->blocked[v->id]) return rw->blocked[v->id];
  FcValue *vb = fc_rw_to_blocked(b, v, rw->B);
  if (vb && v->id < rw->n_ids) rw->blocked[v->id] = vb;
  return vb;
}

/* An extra operand e (broadcasting to [N, M, OH, OW]) as one broadcasting to the blocked result. */
static FcValue *block_extra(Rewriter *rw, FcBuilder *b, FcValue *e) {
  const FcType *t = &e->type;
  if (t->rank == 0) return e;
  int64_t d[4];
  for (int i = 0; i < 4; i++) d[i] = i < 4 - t->rank ? 1 : t->dims[i - (4 - t->rank)];
  if (d[1] == 1) {
    int64_t r[5] = {d[0], 1, d[2], d[3], 1};
    return fc_b_reshape(b, e, 5, r);
  }
  return t->rank == 4 ? to_blocked_once(rw, b, e) : fc_rw_to_blocked(b, fc_b_reshape(b, e, 4, d), rw->B);
}

/* A 2-D pool's spatial attribute (2 values; pads: 4, begins then ends) extended by the block's dim with
 * value v (pads: 0 at both ends). */
static FcAttr extend_attr(const FcOp *op, FcAttrName name, int64_t v, int64_t *buf) {
  const int64_t *a;
  int n = fc_op_attr_ints(op, name, &a);
  if (n == 4) {
    int64_t p[6] = {a[0], a[1], 0, a[2], a[3], 0};
    for (int i = 0; i < 6; i++) buf[i] = p[i];
  } else {
    buf[0] = n > 0 ? a[0] : v;
    buf[1] = n > 1 ? a[1] : v;
    buf[2] = v;
  }
  return (FcAttr){.name = name, .kind = FC_AK_INTS, .ints = {buf, n == 4 ? 6 : 3}};
}

static FcStatus rewrite_pool(Rewriter *rw, FcOp *op) {
  FcBuilder b;
  fc_rw_builder_before(&b, op, rw->diag);
  FcValue *xb = to_blocked_once(rw, &b, op->operands[0].value);
  int64_t ks[3], st[3], dl[3], pd[6];
  FcAttr attrs[7];
  int na = 0;
  attrs[na++] = extend_attr(op, FC_ATTR_KERNEL_SHAPE, 1, ks);
  attrs[na++] = extend_attr(op, FC_ATTR_STRIDES, 1, st);
  attrs[na++] = extend_attr(op, FC_ATTR_DILATIONS, 1, dl);
  attrs[na++] = extend_attr(op, FC_ATTR_PADS, 0, pd);
  const FcAttrName copied[3] = {FC_ATTR_CEIL_MODE, FC_ATTR_COUNT_INCLUDE_PAD, FC_ATTR_STORAGE_ORDER};
  for (int i = 0; i < 3; i++) {
    const FcAttr *a = fc_op_attr(op, copied[i]);
    if (a) attrs[na++] = *a;
  }
  FcValue *y = fc_rw_from_blocked(&b, fc_b_op1(&b, op->kind, &xb, 1, attrs, na));
  return fc_rw_replace_built(&b, op, y, &rw->scratch);
}

/* mul(x, s) with x blocked and s [N, C, 1, 1] reshaped to [N, C/8, 1, 1, 8] (xi: x's operand index). */
static FcStatus rewrite_scale(Rewriter *rw, FcOp *op, int xi) {
  FcBuilder b;
  fc_rw_builder_before(&b, op, rw->diag);
  FcValue *ops[2], *s = op->operands[1 - xi].value;
  const int64_t *d = s->type.dims;
  int64_t blocked[5] = {d[0], d[1] / rw->B, 1, 1, rw->B};
  ops[xi] = to_blocked_once(rw, &b, op->operands[xi].value);
  ops[1 - xi] = fc_b_reshape(&b, s, 5, blocked);
  FcValue *y = fc_rw_from_blocked(&b, fc_b_op1(&b, FC_OP_MUL, ops, 2, NULL, 0));
  return fc_rw_replace_built(&b, op, y, &rw->scratch);
}

/* A concat of blocked operands along axis 1, or an element-wise op on blocked images with its other
 * operands blocked as epilogue extras; the op's attributes are kept. */
static FcStatus rewrite_carried(Rewriter *rw, FcOp *op, bool concat) {
  FcBuilder b;
  fc_rw_builder_before(&b, op, rw->diag);
  FcValue **ops = FC_NEW_ARRAY(&rw->m->arena, FcValue *, (size_t)op->n_operands);
  for (int i = 0; i < op->n_operands; i++) {
    FcValue *v = op->operands[i].value;
    bool image = concat || is_image_of(&v->type, &op->results[0].type);
    ops[i] = image ? to_blocked_once(rw, &b, v) : block_extra(rw, &b, v);
  }
  FcAttr axis = FC_A_INT(AXIS, 1);
  FcValue *y = fc_rw_from_blocked(&b, fc_b_op1(&b, op->kind, ops, op->n_operands, concat ? &axis : op->attrs,
                                         concat ? 1 : op->n_attrs));
  return fc_rw_replace_built(&b, op, y, &rw->scratch);
}

static FcStatus rewrite(Rewriter *rw, FcOp *op) {
  FcBuilder b;
  fc_rw_builder_before(&b, op, rw->diag);
  FcValue *x = op->operands[0].value, *w = op->operands[1].value;
  int64_t M = w->type.dims[0];
  FcValue *ops[FC_PRODUCT_MAX_OPERANDS];
  int n = op->n_operands;
  ops[0] = x->type.dims[1] % rw->B == 0 ? to_blocked_once(rw, &b, x) : x;
  ops[1] = w;
  if (n > 2) {
    ops[2] = op->operands[2].value;
  } else {
    FcArena *a = &rw->m->arena;
    ops[2] = fc_b_const_tensor(&b, fc_tensor_new(a, fc_type_make(a, FC_DT_F32, 1, &M)));
    n = 3;
  }
  for (int i = 3; i < n; i++) ops[i] = block_extra(rw, &b, op->operands[i].value);
  FcAttr attrs[6];
  int na = 0;
  attrs[na++] = FC_A_INT(BLOCK, rw->B);
  attrs[na++] = FC_A_INT(GROUP, fc_op_attr_int(op, FC_ATTR_GROUP, 1));
  const FcAttrName copied[4] = {FC_ATTR_STRIDES, FC_ATTR_PADS, FC_ATTR_DILATIONS, FC_ATTR_EPILOGUE};
  for (int i = 0; i < 4; i++) {
    const FcAttr *a = fc_op_attr(op, copied[i]);
    if (a) attrs[na++] = *a;
  }
  FcValue *yb = fc_b_op1(&b, FC_OP_CONV_BLOCKED, ops, n, attrs, na);
  FcValue *y = fc_rw_from_blocked(&b, yb);
  return fc_rw_replace_built(&b, op, y, &rw->scratch);
}

/* A reduction over the spatial dims with keepdims, which sink_spatial_reduce moves into a region. */
static bool is_spatial_reduce(const FcOp *op) {
  if ((op->kind != FC_OP_REDUCE_MEAN && op->kind != FC_OP_REDUCE_MAX && op->kind != FC_OP_REDUCE_SUM) ||
      fc_op_attr(op, FC_ATTR_QTYPE)) /* a quantised mean reads bytes, never a blocked f32 map */
    return false;
  const int64_t *axes;
  return fc_op_attr_ints(op, FC_ATTR_AXES, &axes) == 2 && axes[0] == 2 && axes[1] == 3 &&
         fc_op_attr_int(op, FC_ATTR_KEEPDIMS, 1) == 1;
}

/* A reduction over the spatial dims (axes {2, 3}, keepdims) of a blocked value's from_blocked — global
 * average pooling — runs on the blocked value, so only its small [N, C/8, 1, 1, 8] result changes
 * layout, by a reshape. */
static FcStatus sink_spatial_reduce(FcOp *op, int64_t B, FcOpStack *scratch, FcDiag *diag) {
  FcValue *yb = is_spatial_reduce(op) ? fc_rw_blocked_source(op->operands[0].value, B) : NULL;
  if (!yb) return FC_OK;
  static const int64_t axes[2] = {2, 3};
  FcBuilder b;
  fc_rw_builder_before(&b, op, diag);
  FcValue *y = fc_rw_from_blocked(&b, fc_b_reduce(&b, op->kind, yb, 2, axes, true));
  return fc_rw_replace_built(&b, op, y, scratch);
}

/* ---- regions ----------------------------------------------------------------------------------------
 * Candidate convs joined by values (one's result is another's input or epilogue extra) form regions,
 * found with union-find over the candidates' positions in `cand`. A region is converted when the time
 * its convs are expected to save exceeds the time of the layout changes at its edges: inputs from
 * outside it and results used outside it (constants fold, a first conv reads plain NCHW, a global
 * average pool moves below the change, so none of these count), each value once. The estimates are the
 * target's (FcLayoutCosts, target.c): the speeds of the NCHW and the blocked kernels per class of conv,
 * and a layout change's bandwidth after a fixed cost of starting one more kernel. With AVX2's numbers
 * a chain of depthwise-separable blocks is always taken (no edges at all), a strided conv whose input
 * and result change layout is taken when its work is large against its tensors (ResNet-18's stride-2
 * convs), and a first conv followed by a max pool only when the conv outweighs moving the pool's
 * result. */

/* The layout pass's class of a candidate conv. */
static FcConvClass conv_class(const FcTarget *t, const FcOp *op) {
  const FcType *x = &op->operands[0].value->type, *w = &op->operands[1].value->type;
  const int64_t *s;
  fc_op_attr_ints(op, FC_ATTR_STRIDES, &s);
  if (fc_op_attr_int(op, FC_ATTR_GROUP, 1) > 1) return is_depthwise(op) ? FC_CONV_DEPTHWISE : FC_CONV_GROUPED;
  if (x->dims[1] < t->layout.block) return FC_CONV_FIRST;
  if (w->dims[2] * w->dims[3] > 1 || s[0] * s[1] > 1) return FC_CONV_DENSE;
  return FC_CONV_POINTWISE;
}

/* Microseconds per MFLOP (= 1000 / GFLOP/s) saved by the blocked kernel for conv op. */
static double saved_us_per_mflop(const FcTarget *t, const FcOp *op) {
  FcConvClass c = conv_class(t, op);
  double nchw = t->layout.nchw_gflops[c], blocked = t->layout.blocked_gflops[c];
  if (c == FC_CONV_GROUPED) { /* lanes that multiply zeros: a group narrower than a block, or straddling two */
    int64_t B = t->layout.block, Cg = op->operands[1].value->type.dims[1];
    blocked /= Cg >= B ? (Cg % B == 0 ? 1.0 : 2.0) : (double)B / (double)Cg;
  }
  return nchw >= blocked ? 0 : 1000.0 / nchw - 1000.0 / blocked;
}

typedef struct Regions {
  const FcTarget *t;
  FcOp **cand;
  int n;
  int *parent;
  double *cost_us, *gain_us; /* per root */
  int *index_of;             /* op id -> candidate index or -1 */
  uint32_t max_id;
  bool *edge_counted;        /* value id -> its layout change is counted already */
  uint32_t n_values;
} Regions;

static int find(Regions *r, int i) {
  while (r->parent[i] != i) i = r->parent[i] = r->parent[r->parent[i]];
  return i;
}

static int cand_of(const Regions *r, const FcOp *op) {
  return op && op->id <= r->max_id ? r->index_of[op->id] : -1;
}

/* The microseconds of changing v's layout, the first time it is asked for (0 after). */
static double edge_cost_us(const FcTarget *t, const FcValue *v) {
  int64_t n;
  return fc_type_numel(&v->type, &n) ? t->layout.edge_fixed_us + 4.0 * (double)n / t->layout.edge_bytes_per_us : 1e30;
}
static double edge_us(Regions *r, const FcValue *v) {
  if (v->id < r->n_values && r->edge_counted[v->id]) return 0;
  if (v->id < r->n_values) r->edge_counted[v->id] = true;
  return edge_cost_us(r->t, v);
}

/* Joins candidate i with the candidate producing v, or returns the cost of v's layout change (0 for
 * constants and values with one channel, which need none). */
static double link_input(Regions *r, int i, const FcValue *v) {
  int j = cand_of(r, v->def);
  if (j >= 0) {
    r->parent[find(r, i)] = find(r, j);
    return 0;
  }
  if (fc_value_const(v) || v->type.rank < 4 || v->type.dims[1] == 1) return 0;
  return edge_us(r, v);
}

/* Whether the result of member op is read in the blocked layout (by a member, as its input or an
 * extra, or by a spatial reduction), and whether it is read in NCHW (by anything else). */
static bool reads_blocked(const Regions *r, const FcUse *u) {
  return (cand_of(r, u->user) >= 0 && reads_operand_blocked(r->t, u->user, u->index)) || is_spatial_reduce(u->user);
}
static bool used_inside(const Regions *r, const FcOp *op) {
  for (const FcUse *u = op->results[0].first_use; u; u = u->next_use)
    if (reads_blocked(r, u)) return true;
  return false;
}
static bool used_outside(const Regions *r, const FcOp *op) {
  for (const FcUse *u = op->results[0].first_use; u; u = u->next_use)
    if (!reads_blocked(r, u)) return true;
  return false;
}

/* Drops, repeatedly, the members that gain nothing (a 1×1 stride-1 conv, a pool) and would only move
 * a layout change from their input to a result at least as large that no member reads: SqueezeNet's
 * expand 1×1 after a blocked squeeze (its result goes to a concat) stays in NCHW, the squeeze, whose
 * result is 4 times smaller than its input, stays blocked. */
static void prune_members(Regions *r) {
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = 0; i < r->n; i++) {
      FcOp *op = r->cand[i];
      if (r->index_of[op->id] < 0 || (!is_carrier(r->t, op) && saved_us_per_mflop(r->t, op) > 0) || used_inside(r, op))
        continue;
      int64_t in, out;
      const FcType *xt = &op->operands[image_operand(r->t, op)].value->type;
      if (!fc_type_numel(xt, &in) || !fc_type_numel(&op->results[0].type, &out) || out >= in) {
        r->index_of[op->id] = -1;
        changed = true;
      }
    }
  }
}

/* Whether value v is read only in the blocked layout by ops marked in chosen (by op id up to max_id),
 * but for the use by op skip (NULL: none). */
static bool read_blocked_only(const FcTarget *t, const bool *chosen, uint32_t max_id, const FcValue *v,
                              const FcOp *skip) {
  for (const FcUse *u = v->first_use; u; u = u->next_use) {
    if (u->user == skip) continue;
    if (u->user->id > max_id || !chosen[u->user->id] || !reads_operand_blocked(t, u->user, u->index)) return false;
  }
  return true;
}

/* A Winograd conv op (no epilogue extras) between converted members: its input is the result of one,
 * which nothing else reads in NCHW, and only converted members read its result, blocked. Left in NCHW
 * it costs those two layout changes; converted, the time the blocked direct kernel takes over
 * Winograd's (the Winograd cost model's speed-up over the NCHW direct kernel). DenseNet's 3x3 convs sit
 * so, between the 1x1 conv before them and the concat after; with 32 output channels, Winograd's
 * transforms weigh much against its products, and the layout changes cost more than it saves. */
static bool winograd_between(const FcTarget *t, const bool *chosen, uint32_t max_id, const FcOp *op) {
  if (op->n_operands > 3 || !has_blocked_kernel(t, op)) return false;
  double speedup = winograd_speedup(t, op);
  const FcValue *x = op->operands[0].value;
  const FcOp *p = x->def;
  if (speedup == 1 || !p || p->id > max_id || !chosen[p->id] || !read_blocked_only(t, chosen, max_id, x, op) ||
      !read_blocked_only(t, chosen, max_id, &op->results[0], NULL) || !op->results[0].first_use)
    return false;
  int64_t macs;
  const FcLayoutCosts *c = &t->layout;
  double loss = 1000.0 / c->blocked_gflops[FC_CONV_DENSE] - 1000.0 / (c->nchw_gflops[FC_CONV_DENSE] * speedup);
  return fc_op_macs(op, &macs) && 2e-6 * (double)macs * loss < edge_cost_us(t, x) + edge_cost_us(t, &op->results[0]);
}

/* Marks in chosen (by op id up to max_id) the candidates of the regions worth converting (tables in the
 * pass's scratch arena a); concats and element-wise ops but channel scales are members only when wide. */
static void choose_regions(FcModule *m, const FcTarget *t, FcArena *a, bool wide, bool *chosen) {
  Regions r = {.t = t};
  fc_graph_for_each_op(m->graph, op) {
    if (op->id > r.max_id) r.max_id = op->id;
    if (is_member(t, op, wide)) r.n++;
  }
  if (r.n == 0) return;
  r.cand = FC_NEW_ARRAY(a, FcOp *, (size_t)r.n);
  r.parent = FC_NEW_ARRAY(a, int, (size_t)r.n);
  r.cost_us = FC_NEW_ARRAY(a, double, (size_t)r.n);
  r.gain_us = FC_NEW_ARRAY(a, double, (size_t)r.n);
  r.index_of = FC_NEW_ARRAY(a, int, (size_t)r.max_id + 1);
  r.n_values = m->graph->next_value_id;
  r.edge_counted = FC_NEW_ARRAY(a, bool, (size_t)r.n_values + 1);
  for (uint32_t i = 0; i <= r.n_values; i++) r.edge_counted[i] = false;
  for (uint32_t i = 0; i <= r.max_id; i++) r.index_of[i] = -1;
  int n = 0;
  fc_graph_for_each_op(m->graph, op) {
    if (!is_member(t, op, wide)) continue;
    r.index_of[op->id] = n;
    r.parent[n] = n;
    r.cand[n++] = op;
  }
  prune_members(&r);
  /* Per candidate, before the roots are final: its own edges and gain. */
  double *own_cost = FC_NEW_ARRAY(a, double, (size_t)r.n), *own_gain = FC_NEW_ARRAY(a, double, (size_t)r.n);
  for (int i = 0; i < r.n; i++) {
    FcOp *op = r.cand[i];
    own_cost[i] = own_gain[i] = r.cost_us[i] = r.gain_us[i] = 0;
    if (r.index_of[op->id] < 0) continue;
    if (is_carrier(t, op) && scaled_operand(t, op) < 0 && !is_pool_carrier(t, op)) {
      for (int k = 0; k < op->n_operands; k++)
        if (reads_operand_blocked(t, op, k)) own_cost[i] += link_input(&r, i, op->operands[k].value);
    } else {
      const FcValue *x = op->operands[image_operand(t, op)].value;
      own_cost[i] = x->type.dims[1] % t->layout.block == 0 ? link_input(&r, i, x) : 0;
      for (int k = 3; k < op->n_operands && !is_carrier(t, op); k++)
        own_cost[i] += link_input(&r, i, op->operands[k].value);
    }
    if (used_outside(&r, op)) own_cost[i] += edge_us(&r, &op->results[0]);
    int64_t macs = 0;
    own_gain[i] = !is_carrier(t, op) && fc_op_macs(op, &macs) ? 2e-6 * (double)macs * saved_us_per_mflop(t, op) : 0;
  }
  for (int i = 0; i < r.n; i++) {
    int root = find(&r, i);
    r.cost_us[root] += own_cost[i];
    r.gain_us[root] += own_gain[i];
  }
  for (int i = 0; i < r.n; i++) {
    int root = find(&r, i);
    if (r.index_of[r.cand[i]->id] >= 0 && r.gain_us[root] > r.cost_us[root]) chosen[r.cand[i]->id] = true;
  }
}

/* Fills todo, in op order, with the ops to convert: the regions chosen with concats and element-wise ops
 * as members (DenseNet and Inception become one region each) and those chosen without them (a region
 * joined through a concat to ones that do not pay may still pay by itself: every region's estimate
 * assumes that what it does not hold stays in NCHW, so converting both sets costs at most the sum of the
 * estimates), then the Winograd convs between them that are worth converting. */
static void choose(FcModule *m, const FcTarget *t, FcArena *a, FcOpStack *todo) {
  uint32_t max_id = 0;
  fc_graph_for_each_op(m->graph, op) if (op->id > max_id) max_id = op->id;
  bool *chosen = FC_NEW_ARRAY(a, bool, (size_t)max_id + 1);
  for (uint32_t i = 0; i <= max_id; i++) chosen[i] = false;
  choose_regions(m, t, a, true, chosen);
  choose_regions(m, t, a, false, chosen);
  fc_graph_for_each_op(m->graph, op) {
    if (chosen[op->id] || winograd_between(t, chosen, max_id, op)) chosen[op->id] = true, fc_op_stack_push(todo, op);
  }
}

/* Chooses and converts the regions worth converting with the blocks of target t (t->layout). */
static FcStatus convert_regions(FcModule *m, FcPassContext *pc, const FcTarget *t) {
  FcDiag *diag = pc->diag;
  FcOpStack todo;
  fc_op_stack_init(&todo, &pc->scratch);
  choose(m, t, &pc->scratch, &todo);
  Rewriter rw = {.m = m, .B = t->layout.block, .n_ids = m->graph->next_value_id, .diag = diag};
  fc_op_stack_init(&rw.scratch, &m->arena);
  rw.blocked = FC_NEW_ARRAY(&pc->scratch, FcValue *, (size_t)rw.n_ids + 1);
  for (uint32_t i = 0; i <= rw.n_ids; i++) rw.blocked[i] = NULL;
  FcStatus st = FC_OK;
  for (int i = 0; i < todo.n && st == FC_OK; i++) {
    FcOp *op = todo.v[i];
    int xi = scaled_operand(t, op);
    if (xi >= 0) st = rewrite_scale(&rw, op, xi);
    else if (is_pool_carrier(t, op)) st = rewrite_pool(&rw, op);
    else if (is_concat_carrier(t, op) || is_channel_elementwise(t, op))
      st = rewrite_carried(&rw, op, op->kind == FC_OP_CONCAT);
    else st = rewrite(&rw, op);
  }
  fc_graph_for_each_op_safe(m->graph, op, next) {
    if (st == FC_OK) st = sink_spatial_reduce(op, rw.B, &rw.scratch, diag);
  }
  return st;
}

/* The target's block first; then, where the target has a narrower one (AVX-512: 8 beside 16), the same
 * choice among the convs still in NCHW with that block and its costs, so a region whose channel counts
 * the wide block does not divide (RegNetY's 104, 208, 440) is blocked too. Converted convs are no longer
 * candidates, and a value between a wide and a narrow region changes layout once, counted as an edge. */
FcStatus fc_pass_layout(FcModule *m, FcPassContext *pc) {
  /* Loop and if bodies keep the plain layout: their convs run once per iteration on small maps (an RNN
   * step has none), and a blocked value crossing the region boundary would need a layout on the block
   * arguments too. */
  if (m->graph->parent) return FC_OK;
  const FcTarget *t = pc->target;
  if (t->layout.block == 0) return FC_OK; /* no blocked kernels on this target (a GPU) */
  FcStatus st = convert_regions(m, pc, t);
  if (st != FC_OK || t->layout_narrow.block == 0) return st;
  FcTarget narrow = *t;
  narrow.layout = t->layout_narrow;
  return convert_regions(m, pc, &narrow);
}
