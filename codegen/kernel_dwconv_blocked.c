/* kernel_dwconv_blocked.c — depthwise flow.conv_blocked (group == C == M) over a blocked input, f32.
 * The block is the op's (8, or 16 on AVX-512: one vector either way); the text below says 8 for it.
 *
 * In the blocked layout NCHW8c the 8 channels of one channel block sit next to each other for every
 * pixel, so a depthwise tap is one 8-lane vector load x[cb][ih][iw][0..7] times one weight vector
 * w[cb][kh][kw][0..7]: no shuffles, no lane masks, and stride 2 costs what stride 1 does (it only
 * changes which pixel a load reads). The kernel:
 *
 *   - repacks constant weights at compile time to [C/8][KH][KW][8] (a global substituted for operand 1,
 *     so ops of the same shape share one kernel); run-time weights are gathered into the same vectors
 *     once per task;
 *   - per channel block, keeps the KH·KW weight vectors in registers (where they fit: 3×3 takes 9 of
 *     the 16 AVX2 registers) and computes a tile of R output pixels along the row, one accumulator per
 *     pixel starting from the bias vector. Taps are visited by kernel row and then by input column, so
 *     each input vector is loaded once per tile and feeds every pixel that reads it (with stride 1 and a
 *     3-wide kernel, R + 2 loads feed 3·R multiply-adds). Every pixel sums its taps in the same order
 *     (kh, then kw) wherever it lies, so results do not depend on how rows or tiles are cut;
 *   - vertical padding costs no branches: each kernel row's input row is a pointer chosen with a select,
 *     into the input plane or to a constant row of zeros (W·8 floats);
 *   - horizontally the row is cut at compile time (shapes are static) into the interior pixels, whose
 *     every tap lies inside [0, W), run as a loop of whole tiles, and the rest (left and right edge
 *     pixels, the interior's last partial tile), emitted straight-line with the taps that fall outside
 *     the row left out: a whole vector is either in or out, so no masks are needed. An edge longer than
 *     MAX_STRAIGHT pixels (a padding or dilation far larger than usual) is a loop instead, one pixel at
 *     a time, each tap outside the row reading a vector of zeros;
 *   - the bias starts each accumulator and the fused epilogue (cg_epilogue.h, viewing the result as rows
 *     of 8 lanes) is applied to each vector before its one store.
 * Outer iterations are (batch, channel block, row block) triples: whole planes when there are enough of
 * them for the thread pool, else planes cut into blocks of rows, so small-channel layers with large
 * images still spread over the threads.
 */
#include <stdlib.h>

#include "cg_epilogue.h"
#include "cg_window.h"
#include "codegen.h"

enum {
  MAX_TAPS = 81,             /* KH·KW handled (9×9) */
  MAX_R = 8,                 /* output pixels per tile, at most */
  MAX_STRAIGHT = 32,         /* pixels of a row's edge emitted straight-line; a longer edge is a loop */
  MIN_TASKS = 32,            /* planes are cut into row blocks until there are this many outer iterations */
  MAX_ZERO_FLOATS = 1 << 16, /* floats in the constant row of zeros (W·8) */
};

/* The static geometry. */
typedef struct Dwb {
  int64_t B;                  /* channels per block (the vector): 8 or 16 */
  int64_t CB, planes;         /* channel blocks, batch × channel blocks */
  int64_t H, W, OH, OW, KH, KW;
  int64_t sh, sw, dh, dw, ph, pw;
  int R;                      /* pixels per tile */
  int64_t lo, hi;             /* the looped interior pixels [lo, hi): every tap inside the row, whole tiles */
  int64_t rb, nrb;            /* output rows per task, row blocks per plane */
  bool vpad;                  /* some output row reads an input row outside [0, H) */
  bool empty;                 /* no output: nothing to emit */
} Dwb;

static const FcType *in_type(const FcKernel *k, int i) { return &k->op->operands[i].value->type; }

/* Pixels per tile for KH·KW taps: the weights, the bias, the accumulators and one input vector fill the
 * 16 AVX2 registers (9 + 1 + 5 + 1 for 3×3); with more taps the weights are reloaded from L1 anyway.
 * For 3×3 the exact width (4 to 8 pixels) matters little, since out-of-order execution overlaps the
 * chains of consecutive tiles: stride-1 layers run near the FMA peak, and the large stride-2 ones are
 * bound by the bandwidth of their input's reads. */
static int tile_pixels(int64_t taps) {
  int64_t r = 14 - taps;
  return r < 4 ? 4 : r > MAX_R ? MAX_R : (int)r;
}

/* Fills d from the op; false when the op is not a depthwise conv_blocked this kernel handles. */
static bool dwb_geometry(const FcKernel *k, Dwb *d) {
  const FcOp *op = k->op;
  if (op->kind != FC_OP_CONV_BLOCKED || op->n_operands < 3 || op->n_results != 1) return false;
  for (int i = 0; i < 3; i++)
    if (!op->operands[i].value) return false; /* the bias is required (ops.def) */
  const FcType *xt = in_type(k, 0), *wt = in_type(k, 1), *bt = in_type(k, 2), *yt = &op->results[0].type;
  d->B = fc_op_attr_int(op, FC_ATTR_BLOCK, 0);
  if (!fc_layout_block_supported(d->B)) return false;
  if (xt->dtype != FC_DT_F32 || wt->dtype != FC_DT_F32 || bt->dtype != FC_DT_F32 || yt->dtype != FC_DT_F32) return false;
  if (xt->rank != 5 || wt->rank != 4 || bt->rank != 1 || yt->rank != 5 || xt->dims[4] != d->B || yt->dims[4] != d->B)
    return false;
  int64_t C;
  if (!fc_checked_mul(xt->dims[1], d->B, &C)) return false;
  if (fc_op_attr_int(op, FC_ATTR_GROUP, 1) != C || wt->dims[0] != C || wt->dims[1] != 1 || bt->dims[0] != C ||
      yt->dims[0] != xt->dims[0] || yt->dims[1] != xt->dims[1])
    return false;
  const int64_t *s, *dl, *p;
  if (fc_op_attr_ints(op, FC_ATTR_STRIDES, &s) != 2 || fc_op_attr_ints(op, FC_ATTR_DILATIONS, &dl) != 2 ||
      fc_op_attr_ints(op, FC_ATTR_PADS, &p) != 4)
    return false;
  d->CB = xt->dims[1];
  d->H = xt->dims[2];
  d->W = xt->dims[3];
  d->OH = yt->dims[2];
  d->OW = yt->dims[3];
  d->KH = wt->dims[2];
  d->KW = wt->dims[3];
  d->sh = s[0];
  d->sw = s[1];
  d->dh = dl[0];
  d->dw = dl[1];
  d->ph = p[0]; /* the end pads only shape OH and OW, already in the result type */
  d->pw = p[1];
  if (d->KH < 1 || d->KW < 1 || d->KH * d->KW > MAX_TAPS) return false;
  if (d->sh < 1 || d->sw < 1 || d->dh < 1 || d->dw < 1 || d->ph < 0 || d->pw < 0) return false;
  /* Every offset computed below, at compile time or run time, is bounded by the products checked here:
   * input rows below OH·sh + (KH - 1)·dh times the row's W·8 floats, input columns below
   * (OW + MAX_R)·sw + (KW - 1)·dw + pw times 8, and plane offsets by x's and y's element counts. */
  int64_t xn, yn, span_h, span_w, rows, cols, t;
  if (!fc_type_numel(xt, &xn) || !fc_type_numel(yt, &yn) || !fc_checked_mul(xt->dims[0], d->CB, &d->planes) ||
      !fc_checked_mul(d->KH - 1, d->dh, &span_h) || !fc_checked_mul(d->KW - 1, d->dw, &span_w) ||
      !fc_checked_mul(d->OH, d->sh, &rows) || !fc_checked_add(rows, span_h, &rows) ||
      !fc_checked_add(rows, d->ph, &rows) || !fc_checked_mul(rows, d->W * d->B, &t) ||
      !fc_checked_add(d->OW, MAX_R, &cols) || !fc_checked_mul(cols, d->sw, &cols) ||
      !fc_checked_add(cols, span_w, &cols) || !fc_checked_add(cols, d->pw, &cols) || !fc_checked_add(cols, d->W, &cols) ||
      !fc_checked_mul(cols, d->B, &t))
    return false;
  d->empty = yn == 0;
  if (d->empty) return true;

  d->R = tile_pixels(d->KH * d->KW);
  int64_t lo, hi;
  fc_win_interior(d->W, d->OW, d->sw, d->pw, span_w, &lo, &hi);
  d->lo = lo;
  d->hi = lo + (hi - lo) / d->R * d->R;

  d->vpad = fc_win_reads_pad_rows(d->H, d->OH, d->sh, d->ph, span_h);
  if (d->vpad && d->W > MAX_ZERO_FLOATS / d->B) return false;
  fc_win_row_blocks(d->planes, d->OH, MIN_TASKS, 0, 1, &d->rb, &d->nrb);
  return true;
}

bool fc_conv_blocked_depthwise_applies(const FcKernel *k) {
  Dwb d;
  return dwb_geometry(k, &d);
}

/* ---- emit helpers -------------------------------------------------------------------------------- */

typedef struct DwbCtx {
  FcKernel *k;
  const Dwb *d;
  LLVMTypeRef f32, vt;        /* float, <8 x float> */
  LLVMValueRef wv[MAX_TAPS];  /* the current channel block's weight vectors, tap kh·KW + kw */
  LLVMValueRef bias;          /* its bias vector */
  LLVMValueRef row[MAX_TAPS]; /* per kernel row: the input row (or the row of zeros) */
  LLVMValueRef yrow;          /* the output row */
  LLVMValueRef erow;          /* i64: the epilogue row of pixel 0 of the output row */
  LLVMValueRef zvec;          /* 8 zeros, read by checked tiles' taps outside the row */
  FcCgEpilogue *epi;
} DwbCtx;

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

/* &base[off] in floats; off may point outside base only for the row of a padding row (never read). */
static LLVMValueRef fptr(DwbCtx *c, LLVMValueRef base, LLVMValueRef off) {
  return LLVMBuildGEP2(c->k->b, c->f32, base, &off, 1, "");
}

static LLVMValueRef vload(DwbCtx *c, LLVMValueRef p) {
  LLVMValueRef v = LLVMBuildLoad2(c->k->b, c->vt, p, "");
  LLVMSetAlignment(v, 4);
  return v;
}

/* n floats of zeros (the row padding rows read, the vector of a checked tap): one global per size,
 * shared by every kernel that needs it (so kernels of the same shape stay identical and are shared,
 * cg_module.c). */
static LLVMValueRef zeros(DwbCtx *c, int64_t n) {
  FcKernel *k = c->k;
  char name[48];
  snprintf(name, sizeof name, "dwb_zeros_%lld", (long long)n);
  LLVMValueRef g = LLVMGetNamedGlobal(k->mod, name);
  if (g) return g;
  LLVMTypeRef zt = LLVMArrayType2(c->f32, (uint64_t)n);
  g = LLVMAddGlobal(k->mod, zt, name);
  LLVMSetInitializer(g, LLVMConstNull(zt));
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  LLVMSetAlignment(g, 64);
  return g;
}

/* Output pixels ow0 .. ow0 + n - 1 of the current row: ow0v is the run-time first pixel of an interior
 * tile (every tap inside the row), or NULL for a straight-line tile at the constant ow0, whose taps
 * outside the row are left out. A checked tile (run-time ow0v on a long edge) reads a vector of zeros
 * for each tap outside the row, chosen with a select. Taps go by kernel row, then by input column
 * relative to the tile's first (rel = r·sw + kw·dw for pixel r, kernel column kw), so each input vector
 * is loaded once and each pixel still adds its taps in kh, kw order. */
static void emit_tile(DwbCtx *c, LLVMValueRef ow0v, int64_t ow0, int n, bool checked) {
  FcKernel *k = c->k;
  const Dwb *d = c->d;
  LLVMValueRef acc[MAX_R];
  for (int r = 0; r < n; r++) acc[r] = c->bias;
  /* The input column of tile pixel 0's tap kw = 0, in floats from the row start. */
  LLVMValueRef col0 = ow0v ? fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, ow0v, d->sw), c64(k, -d->pw)), d->B) : NULL;
  int64_t max_rel = (int64_t)(n - 1) * d->sw + (d->KW - 1) * d->dw;
  for (int64_t kh = 0; kh < d->KH; kh++)
    for (int64_t rel = 0; rel <= max_rel; rel++) {
      LLVMValueRef x = NULL;
      for (int r = 0; r < n; r++) {
        int64_t q = rel - r * d->sw;
        if (q < 0 || q % d->dw != 0 || q / d->dw >= d->KW) continue;
        int64_t kw = q / d->dw;
        if (!ow0v) {
          int64_t ix = (ow0 + r) * d->sw - d->pw + kw * d->dw;
          if (ix < 0 || ix >= d->W) continue;
        }
        if (!x) {
          LLVMValueRef at = ow0v ? fc_cg_iadd(k, col0, c64(k, rel * d->B)) : c64(k, ((ow0 * d->sw - d->pw) + rel) * d->B);
          LLVMValueRef p = fptr(c, c->row[kh], at);
          if (checked) {
            LLVMValueRef ix = fc_cg_iadd(k, fc_cg_imulc(k, ow0v, d->sw), c64(k, rel - d->pw));
            LLVMValueRef inside = LLVMBuildICmp(k->b, LLVMIntULT, ix, c64(k, d->W), "");
            p = LLVMBuildSelect(k->b, inside, p, c->zvec, "");
          }
          x = vload(c, p);
        }
        acc[r] = fc_cg_madd(k, c->wv[kh * d->KW + kw], x, acc[r]);
      }
    }
  for (int r = 0; r < n; r++) {
    LLVMValueRef ow = ow0v ? fc_cg_iadd(k, ow0v, c64(k, r)) : c64(k, ow0 + r);
    LLVMValueRef v = acc[r];
    if (c->epi) v = fc_cg_epilogue_value(k, c->epi, v, fc_cg_iadd(k, c->erow, ow), c64(k, 0));
    LLVMValueRef s = LLVMBuildStore(k->b, v, fptr(c, c->yrow, fc_cg_imulc(k, ow, d->B)));
    LLVMSetAlignment(s, 4);
  }
}

/* The edge pixels [from, to): straight-line tiles, or when there are more than MAX_STRAIGHT of them (a
 * large padding or dilation) a loop of checked one-pixel tiles. */
static void emit_edge(DwbCtx *c, int64_t from, int64_t to) {
  if (to - from > MAX_STRAIGHT) {
    if (!c->zvec) c->zvec = zeros(c, c->d->B);
    FcLoop l;
    LLVMValueRef ow = fc_cg_loop_begin(c->k, &l, c64(c->k, from), c64(c->k, to), 1, "edge");
    emit_tile(c, ow, 0, 1, true);
    fc_cg_loop_end(c->k, &l);
    return;
  }
  for (int64_t ow = from; ow < to; ow += c->d->R) {
    int64_t n = to - ow < c->d->R ? to - ow : c->d->R;
    emit_tile(c, NULL, ow, (int)n, false);
  }
}

/* Output row oy of the plane: its input rows, then its pixels. */
static void emit_row(DwbCtx *c, LLVMValueRef xplane, LLVMValueRef yplane, LLVMValueRef zrow, LLVMValueRef plane,
                     LLVMValueRef oy) {
  FcKernel *k = c->k;
  const Dwb *d = c->d;
  LLVMValueRef iy0 = fc_cg_iadd(k, fc_cg_imulc(k, oy, d->sh), c64(k, -d->ph));
  for (int64_t kh = 0; kh < d->KH; kh++) {
    LLVMValueRef iy = fc_cg_iadd(k, iy0, c64(k, kh * d->dh));
    c->row[kh] = fptr(c, xplane, fc_cg_imulc(k, iy, d->W * d->B));
    if (zrow) {
      LLVMValueRef inside = LLVMBuildICmp(k->b, LLVMIntULT, iy, c64(k, d->H), "");
      c->row[kh] = LLVMBuildSelect(k->b, inside, c->row[kh], zrow, "row");
    }
  }
  c->erow = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, plane, d->OH), oy), d->OW);
  c->yrow = fptr(c, yplane, fc_cg_imulc(k, oy, d->OW * d->B));
  emit_edge(c, 0, d->lo);
  if (d->hi > d->lo) {
    FcLoop l;
    LLVMValueRef ow0 = fc_cg_loop_begin(k, &l, c64(k, d->lo), c64(k, d->hi), d->R, "ow");
    emit_tile(c, ow0, 0, d->R, false);
    fc_cg_loop_end(k, &l);
  }
  emit_edge(c, d->hi, d->OW);
}

/* The weights repacked to [C/8][KH][KW][8] as a constant global, or NULL when they are not constant. */
static LLVMValueRef packed_weights(FcKernel *k, const Dwb *d) {
  const FcTensor *cw = fc_value_const(k->op->operands[1].value);
  if (!cw || !cw->data) return NULL;
  int64_t taps = d->KH * d->KW, n = d->CB * d->B * taps;
  const float *w = cw->data;
  float *buf = malloc((size_t)n * sizeof(float) + 1);
  if (!buf) fc_die(__FILE__, __LINE__, "out of memory");
  for (int64_t cb = 0; cb < d->CB; cb++)
    for (int64_t t = 0; t < taps; t++)
      for (int64_t l = 0; l < d->B; l++) buf[(cb * taps + t) * d->B + l] = w[(cb * d->B + l) * taps + t];
  LLVMValueRef g = fc_cg_const_f32(k, k->op->operands[1].value, buf, (size_t)n, "dwb_w");
  free(buf);
  return fc_kernel_substitute_operand(k, 1, g);
}

/* ---- the kernel ---------------------------------------------------------------------------------- */

/* y[n, cb, oy, ox, l] = bias[c] + sum_{kh, kw} w[c, 0, kh, kw] * x[n, cb, oy·sh - ph + kh·dh, ox·sw - pw + kw·dw, l],
 * c = cb·8 + l, taps outside the input reading 0; then the epilogue. */
FcStatus fc_conv_blocked_depthwise(FcKernel *k) {
  Dwb d;
  if (!dwb_geometry(k, &d))
    return fc_cg_error(k, FC_ERR_INTERNAL, "the blocked depthwise conv kernel does not apply to this conv");
  if (d.empty) {
    fc_kernel_set_outer(k, 0, 0);
    return FC_OK;
  }
  int64_t taps = d.KH * d.KW;
  fc_kernel_set_outer(k, d.planes * d.nrb, 2.0 * (double)taps * d.B * (double)d.rb * (double)d.OW);

  DwbCtx c = {.k = k, .d = &d, .f32 = LLVMFloatTypeInContext(k->ctx)};
  c.vt = LLVMVectorType(c.f32, (unsigned)d.B);
  FcStatus st = fc_cg_epilogue_init(k, 1, &c.epi);
  if (st != FC_OK) return st;
  LLVMValueRef wpacked = packed_weights(k, &d);
  LLVMValueRef zrow = d.vpad ? zeros(&c, d.W * d.B) : NULL;

  FcLoop lt;
  LLVMValueRef it = fc_cg_loop_begin(k, &lt, k->begin, k->end, 1, "task");
  LLVMValueRef plane = LLVMBuildUDiv(k->b, it, c64(k, d.nrb), "plane");
  LLVMValueRef blk = LLVMBuildURem(k->b, it, c64(k, d.nrb), "");
  LLVMValueRef cb = LLVMBuildURem(k->b, plane, c64(k, d.CB), "cb");
  LLVMValueRef xplane = fptr(&c, k->in[0], fc_cg_imulc(k, plane, d.H * d.W * d.B));
  LLVMValueRef yplane = fptr(&c, k->out[0], fc_cg_imulc(k, plane, d.OH * d.OW * d.B));
  LLVMValueRef wbase = fc_cg_imulc(k, cb, taps * d.B);
  for (int64_t t = 0; t < taps; t++) {
    if (wpacked) {
      c.wv[t] = vload(&c, fptr(&c, wpacked, fc_cg_iadd(k, wbase, c64(k, t * d.B))));
      continue;
    }
    /* Run-time weights [C, 1, KH, KW]: lane l of tap t is w[(cb·8 + l)·taps + t]. */
    LLVMValueRef v = LLVMGetUndef(c.vt);
    for (int l = 0; l < d.B; l++) {
      LLVMValueRef w = fc_cg_load(k, FC_DT_F32, k->in[1], fc_cg_iadd(k, wbase, c64(k, l * taps + t)));
      v = LLVMBuildInsertElement(k->b, v, w, c64(k, l), "");
    }
    c.wv[t] = v;
  }
  c.bias = vload(&c, fptr(&c, k->in[2], fc_cg_imulc(k, cb, d.B)));
  LLVMValueRef oy0 = fc_cg_imulc(k, blk, d.rb);
  LLVMValueRef oy1 = fc_cg_iadd(k, oy0, c64(k, d.rb));
  oy1 = LLVMBuildSelect(k->b, LLVMBuildICmp(k->b, LLVMIntSLT, oy1, c64(k, d.OH), ""), oy1, c64(k, d.OH), "");
  FcLoop lr;
  LLVMValueRef oy = fc_cg_loop_begin(k, &lr, oy0, oy1, 1, "oy");
  emit_row(&c, xplane, yplane, zrow, plane, oy);
  fc_cg_loop_end(k, &lr);
  fc_cg_loop_end(k, &lt);
  return FC_OK;
}
