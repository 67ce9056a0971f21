/* split_conv_bands.c — cuts a quantised convolution whose taps read mostly padding (a dilated conv on a small
 * map: DeepLabV3's ASPP conv at dilation 12 on a 16×16 map) into rectangles of output pixels that read the
 * same taps, each a conv of only those taps over the slice of the input they read, concatenated back.
 *
 * The integer kernels compute every tap of every output pixel (their im2col reads zx, the real 0, where a
 * tap falls in the padding): a 3×3 conv at dilation 12 on 16×16 does 9 taps' work where 2.25 reach the image
 * on average. prune_conv_taps drops the taps that read only padding for every output; this pass takes those
 * that do for some. Along a spatial dim, output o reads through tap kk the input position
 * o·s + kk·d - p_begin, inside [0, D) for a contiguous range of taps [a(o), b(o)] (positions grow with kk);
 * consecutive outputs with the same range form a band. A rectangle, a row band [o0, o1) with taps [a, b]
 * times a column band [q0, q1) with taps [a', b'], is
 *     y[:, :, o0:o1, q0:q1] = conv(x[:, :, r0:r1, c0:c1], w[:, :, a..b, a'..b'], bias)   pads 0, same strides
 * with r0 = o0·s + a·d - p_begin, the first row a tap of the band reads, and r1 = (o1 - 1)·s + b·d - p_begin + 1
 * (likewise the columns; a dim left with one tap gets dilation 1, its normal form): every output reads the
 * inputs it read before, without the padding. The rectangles of a row band are concatenated along the width,
 * the bands along the height. The integer sums are unchanged (a padding tap added (zx - zx)·w = 0, and each
 * kernel's zero-point correction covers its own taps), so the result's bytes are the same.
 *
 * Float convs are left alone: the blocked f32 kernels skip the taps outside the row already, and a float
 * sum without its zero products could differ in the sign of a zero, or where a weight is infinite.
 * Which convs: 2-D, quantised, constant weights, no operand past the bias (this runs before fuse_epilogue),
 * every output reading the image through some tap, at most MAX_BANDS bands a dim, where the rectangles' taps
 * total at most three quarters of the conv's and save at least MIN_SAVED_MACS multiply-adds: each rectangle
 * is a kernel of its own with its own im2col, so a small conv would lose what it gains to their set-up.
 */
#include "passes.h"
#include "rewrite.h"

#include <string.h>

enum {
  MAX_BANDS = 5,                  /* per dim: 3 for a dilated 3×3, 5 for a 5×5 */
  MIN_SAVED_MACS = 1 << 23,       /* about 80 µs of AVX2 integer dot; a rectangle's launch and im2col ~µs */
};

typedef struct Band {
  int64_t o0, o1; /* outputs [o0, o1) */
  int64_t a, b;   /* the taps they all read the image through */
} Band;

/* The bands of one dim (size D, K taps, O outputs, stride s, dilation d, leading pad p) into out[]; their
 * count, or 0 where an output reads only padding or there are more than MAX_BANDS. */
static int bands_of(int64_t D, int64_t K, int64_t O, int64_t s, int64_t d, int64_t p, Band *out) {
  int n = 0;
  for (int64_t o = 0; o < O; o++) {
    int64_t a = -1, b = -1;
    for (int64_t kk = 0; kk < K; kk++) {
      int64_t at = o * s + kk * d - p;
      if (at < 0 || at >= D) continue;
      if (a < 0) a = kk;
      b = kk;
    }
    if (a < 0) return 0;
    if (n > 0 && out[n - 1].a == a && out[n - 1].b == b) {
      out[n - 1].o1 = o + 1;
      continue;
    }
    if (n == MAX_BANDS) return 0;
    out[n++] = (Band){.o0 = o, .o1 = o + 1, .a = a, .b = b};
  }
  return n;
}

/* Tap-pixels of one dim's bands: sum of (outputs × taps). */
static int64_t band_work(const Band *bd, int n) {
  int64_t t = 0;
  for (int i = 0; i < n; i++) t += (bd[i].o1 - bd[i].o0) * (bd[i].b - bd[i].a + 1);
  return t;
}

/* w[:, :, rb.a..rb.b, cb.a..cb.b] as a new constant of w's (quantised) element type. */
static FcTensor *slice_weights(FcModule *m, const FcTensor *w, const Band *rb, const Band *cb) {
  int64_t nd[4] = {w->type.dims[0], w->type.dims[1], rb->b - rb->a + 1, cb->b - cb->a + 1}, lo[2] = {rb->a, cb->a};
  FcTensor *out = fc_tensor_new(&m->arena, fc_type_make_quant(&m->arena, w->type.quant, 4, nd));
  fc_rw_slice_taps(w, out, 2, lo);
  return out;
}

static FcStatus split(FcModule *m, FcOp *op, FcOpStack *scratch, FcDiag *diag) {
  if (op->kind != FC_OP_CONV || op->n_results != 1 || op->n_operands < 2 || op->n_operands > 3 ||
      !fc_rw_is_quantised(op) || fc_op_attr(op, FC_ATTR_EPILOGUE))
    return FC_OK;
  const FcTensor *w = fc_value_const(op->operands[1].value);
  const FcType *xt = &op->operands[0].value->type, *yt = &op->results[0].type;
  if (!w || !fc_type_is_quant(&w->type) || xt->rank != 4 || w->type.rank != 4 || yt->rank != 4 ||
      (op->n_operands == 3 && !op->operands[2].value))
    return FC_OK;
  const int64_t *s, *d, *p;
  if (fc_op_attr_ints(op, FC_ATTR_STRIDES, &s) != 2 || fc_op_attr_ints(op, FC_ATTR_DILATIONS, &d) != 2 ||
      fc_op_attr_ints(op, FC_ATTR_PADS, &p) != 4)
    return FC_OK;
  Band rows[MAX_BANDS], cols[MAX_BANDS];
  int nr = bands_of(xt->dims[2], w->type.dims[2], yt->dims[2], s[0], d[0], p[0], rows);
  int nc = bands_of(xt->dims[3], w->type.dims[3], yt->dims[3], s[1], d[1], p[1], cols);
  if (nr == 0 || nc == 0 || (nr == 1 && nc == 1)) return FC_OK;
  /* work in tap-pixels, then multiply-adds (all factors are dims of verified types, checked anyway) */
  int64_t full, part, per, saved;
  if (!fc_checked_mul(yt->dims[2] * yt->dims[3], w->type.dims[2] * w->type.dims[3], &full) ||
      !fc_checked_mul(band_work(rows, nr), band_work(cols, nc), &part) ||
      !fc_checked_mul(yt->dims[0] * w->type.dims[0], w->type.dims[1], &per) ||
      !fc_checked_mul(full - part, per, &saved) || part > full - full / 4 || saved < MIN_SAVED_MACS)
    return FC_OK;

  FcBuilder b;
  fc_rw_builder_before(&b, op, diag);
  FcValue *x = op->operands[0].value, *bias = op->n_operands == 3 ? op->operands[2].value : NULL;
  int na = op->n_attrs;
  FcValue *row_vals[MAX_BANDS], *cells[MAX_BANDS];
  /* input slices made so far, by their rows and columns: symmetric bands read the same rectangle */
  int64_t seen[MAX_BANDS * MAX_BANDS][4];
  FcValue *seen_val[MAX_BANDS * MAX_BANDS];
  int n_seen = 0;
  for (int i = 0; i < nr; i++) {
    for (int j = 0; j < nc; j++) {
      const Band *rb = &rows[i], *cb = &cols[j];
      int64_t r0 = rb->o0 * s[0] + rb->a * d[0] - p[0], r1 = (rb->o1 - 1) * s[0] + rb->b * d[0] - p[0] + 1;
      int64_t c0 = cb->o0 * s[1] + cb->a * d[1] - p[1], c1 = (cb->o1 - 1) * s[1] + cb->b * d[1] - p[1] + 1;
      FcValue *xs = r0 == 0 && r1 == xt->dims[2] && c0 == 0 && c1 == xt->dims[3] ? x : NULL;
      for (int k = 0; k < n_seen && !xs; k++)
        if (seen[k][0] == r0 && seen[k][1] == r1 && seen[k][2] == c0 && seen[k][3] == c1) xs = seen_val[k];
      if (!xs) {
        int64_t st[4] = {0, 0, r0, c0}, en[4] = {xt->dims[0], xt->dims[1], r1, c1}, sp[4] = {1, 1, 1, 1};
        xs = seen_val[n_seen] = fc_b_slice(&b, x, st, en, sp);
        memcpy(seen[n_seen++], (int64_t[4]){r0, r1, c0, c1}, sizeof seen[0]);
      }
      FcValue *ops[3] = {xs, fc_b_const_tensor(&b, slice_weights(m, w, rb, cb)), bias};
      int64_t *nd = FC_NEW_ARRAY(&m->arena, int64_t, 2), *np = FC_NEW_ARRAY(&m->arena, int64_t, 4);
      nd[0] = rb->a == rb->b ? 1 : d[0];
      nd[1] = cb->a == cb->b ? 1 : d[1];
      FcAttr *attrs = FC_NEW_ARRAY(&m->arena, FcAttr, (size_t)na);
      for (int k = 0; k < na; k++) {
        attrs[k] = op->attrs[k];
        if (attrs[k].name == FC_ATTR_DILATIONS) attrs[k] = FC_A_INTS(DILATIONS, nd, 2);
        if (attrs[k].name == FC_ATTR_PADS) attrs[k] = FC_A_INTS(PADS, np, 4);
      }
      cells[j] = fc_b_op1(&b, FC_OP_CONV, ops, op->n_operands, attrs, na);
    }
    row_vals[i] = nc > 1 ? fc_b_concat(&b, cells, nc, 3) : cells[0];
  }
  FcValue *y = nr > 1 ? fc_b_concat(&b, row_vals, nr, 2) : row_vals[0];
  return fc_rw_replace_built(&b, op, y, scratch);
}

FcStatus fc_pass_split_conv_bands(FcModule *m, FcPassContext *pc) {
  FcOpStack scratch;
  fc_op_stack_init(&scratch, &m->arena);
  FcStatus st = FC_OK;
  fc_graph_for_each_op_safe(m->graph, op, next) {
    if (st == FC_OK) st = split(m, op, &scratch, pc->diag);
  }
  return st;
}
