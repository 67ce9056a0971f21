/* kernel_dwconv.c — depthwise convolution (group == C == M, one filter per channel), f32, 1-D and 2-D.
 *
 * A depthwise conv does KH·KW multiply-adds per output and reuses nothing across channels, so it is
 * bound by loads, shuffles and the latency of its accumulation, not by a GEMM. The kernel computes
 * output rows in explicit vectors of VL lanes along the output width (VL from the target: 8 for AVX2):
 *
 *   - the channel's KH·KW weights are splat into vectors once per task iteration and stay in registers;
 *   - two output rows are computed together: with stride 1 they share KH - 1 of their input rows, and
 *     each input vector is loaded once and feeds both rows; each output row accumulates its taps
 *     round-robin into a few FMA chains (short dependencies), as many as the 16 AVX2 registers allow
 *     beside the weights, and the chains are added at the end;
 *   - vertical padding costs no branches: each input row is a pointer chosen with a select, either into
 *     the input plane or to a constant row of zeros (W floats), so border rows run the same code as
 *     interior ones;
 *   - horizontally, the row is cut at compile time (shapes are static) into vector positions: a
 *     contiguous range of "full" positions, whose every load lies inside [0, W), runs as a loop of plain
 *     vector loads; the few "edge" positions at both ends (left/right padding, a partial last vector) are
 *     emitted straight-line with per-tap lane masks computed here, as masked loads (lanes outside the
 *     row read 0) and a store of only the lanes inside the row;
 *   - stride 1 loads VL contiguous floats per tap. Stride 2 loads 2·VL floats and keeps every other one
 *     with one in-lane shuffle (x86 shufps picks within 128-bit lanes): taps whose columns differ by one
 *     share the load and take the even or the odd lanes. The lanes come out in a fixed permuted order,
 *     the same for every tap, so the accumulation runs permuted and one shuffle per output vector puts
 *     the columns back in order. Larger strides insert VL scalars.
 * The bias and any fused epilogue (cg_epilogue.h) are applied to each vector before it is stored.
 *
 * Outer iterations are (plane, row block) pairs, plane = b·C + c: whole planes when there are enough of
 * them for the thread pool, else planes cut into blocks of rows. Each output element is computed once,
 * in a fixed order, so results do not depend on the thread count.
 * The row geometry and tap loads are shared with the pool kernel (cg_window.h).
 */
#include "cg_epilogue.h"
#include "cg_window.h"
#include "codegen.h"

enum {
  MAX_TAPS = 81,          /* KH·KW handled (9×9); larger filters take the generic conv */
  MAX_EDGES = 16,         /* straight-line edge vectors per row handled */
  MIN_TASKS = 32,         /* planes are cut into row blocks until there are this many outer iterations */
  MAX_VL = FC_WIN_MAX_VL, /* lanes per vector handled */
  MAX_ZERO_ROW = 1 << 16, /* floats in the constant row of zeros (the input width) */
  NR = 2,                 /* output rows computed together */
};

/* The static geometry, everything as a 2-D conv (1-D: H = OH = KH = 1). */
typedef struct Dw {
  int64_t C, planes, H, OH, KH, sh, dh, ph;
  FcWinRow x;         /* the row geometry: W, OW, KW, sw, dw, pw, vl */
  FcWinPlan pl;       /* vector positions and row blocks */
  bool vpad;          /* some output row reads an input row outside [0, H) */
} Dw;

static const FcType *in_type(const FcKernel *k, int i) { return &k->op->operands[i].value->type; }

/* Fills d from the op; false when the op is not a depthwise conv this kernel handles. */
static bool dw_geometry(const FcKernel *k, int vl, Dw *d) {
  const FcOp *op = k->op;
  if (op->kind != FC_OP_CONV || op->n_operands < 2 || op->n_results != 1) return false;
  const FcType *xt = in_type(k, 0), *wt = in_type(k, 1), *yt = &op->results[0].type;
  if (xt->dtype != FC_DT_F32 || wt->dtype != FC_DT_F32 || yt->dtype != FC_DT_F32) return false;
  int n = xt->rank - 2;
  if ((n != 1 && n != 2) || wt->rank != xt->rank || yt->rank != xt->rank) return false;
  int64_t C = xt->dims[1], G = fc_op_attr_int(op, FC_ATTR_GROUP, 1);
  if (G != C || wt->dims[0] != C || wt->dims[1] != 1 || yt->dims[1] != C) return false;
  const int64_t *s, *dl, *p;
  if (fc_op_attr_ints(op, FC_ATTR_STRIDES, &s) != n || fc_op_attr_ints(op, FC_ATTR_DILATIONS, &dl) != n ||
      fc_op_attr_ints(op, FC_ATTR_PADS, &p) != 2 * n)
    return false;
  /* End pads only shape OH and OW (already in the result type): reads past the input are masked. */
  d->x.vl = vl;
  d->C = C;
  d->H = n == 2 ? xt->dims[2] : 1;
  d->x.W = xt->dims[1 + n];
  d->OH = n == 2 ? yt->dims[2] : 1;
  d->x.OW = yt->dims[1 + n];
  d->KH = n == 2 ? wt->dims[2] : 1;
  d->x.KW = wt->dims[1 + n];
  d->sh = n == 2 ? s[0] : 1;
  d->x.sw = s[n - 1];
  d->dh = n == 2 ? dl[0] : 1;
  d->x.dw = dl[n - 1];
  d->ph = n == 2 ? p[0] : 0;
  d->x.pw = p[n - 1];
  if (d->KH < 1 || d->x.KW < 1 || d->KH * d->x.KW > MAX_TAPS) return false;
  if (d->sh < 1 || d->x.sw < 1 || d->dh < 1 || d->x.dw < 1 || d->ph < 0 || d->x.pw < 0) return false;
  /* Column and row arithmetic below stays far from overflow: every term is bounded by a verified
   * tensor's element count or by small attribute products checked here. */
  int64_t t;
  if (!fc_checked_mul(xt->dims[0], C, &d->planes) || !fc_checked_mul(d->x.KW, d->x.dw, &t) ||
      !fc_checked_mul(d->KH, d->dh, &t) || !fc_checked_mul(d->x.OW + vl, d->x.sw, &t) ||
      !fc_checked_mul(d->OH + NR, d->sh, &t) || d->x.pw > INT32_MAX || d->ph > INT32_MAX)
    return false;
  if (d->planes == 0 || d->OH == 0 || d->x.OW == 0) return false; /* empty: the generic kernel does nothing */
  d->vpad = fc_win_reads_pad_rows(d->H, d->OH, d->sh, d->ph, (d->KH - 1) * d->dh);
  if (d->vpad && d->x.W > MAX_ZERO_ROW) return false;
  return fc_win_plan(&d->x, d->planes, d->OH, MAX_EDGES, MIN_TASKS, NR, &d->pl);
}

bool fc_conv_depthwise_applies(const FcKernel *k) {
  Dw d;
  return dw_geometry(k, fc_win_lanes(k), &d);
}

/* ---- emit helpers -------------------------------------------------------------------------------- */

typedef struct DwCtx {
  FcKernel *k;
  const Dw *d;
  LLVMTypeRef f32, vt;          /* float, <vl x float> */
  LLVMValueRef wv[MAX_TAPS];    /* the KH·KW weight splats of the current channel */
  int nr;                       /* output rows of the current group (1 or NR) */
  int n_in;                     /* distinct input rows they read */
  LLVMValueRef in_row[NR * MAX_TAPS]; /* their pointers (or the zero row) */
  int row_of[NR][MAX_TAPS];     /* per output row and kernel row: the index into in_row */
  LLVMValueRef yrow[NR];        /* output row pointers */
  LLVMValueRef col0[NR];        /* i64 oy·OW: the epilogue column of ox = 0 */
  LLVMValueRef plane;           /* i64: the epilogue row */
  FcCgEpilogue *epi;
  int inv[MAX_VL];              /* stride 2: output column c sits in lane inv[c] of a tap vector */
} DwCtx;

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }
static LLVMValueRef i32c(FcKernel *k, int64_t v) {
  return LLVMConstInt(LLVMInt32TypeInContext(k->ctx), (unsigned long long)v, 0);
}

/* &base[off] in floats; off may point before base (masked-off lanes only), so not inbounds. */
static LLVMValueRef fptr(DwCtx *c, LLVMValueRef base, LLVMValueRef off) {
  return LLVMBuildGEP2(c->k->b, c->f32, base, &off, 1, "");
}

/* Computes, finishes (epilogue) and stores outputs ox0 .. ox0 + vl of the current rows: all vl lanes at
 * full positions, the first `lanes` at edges. Input rows are visited in order and each input vector is
 * loaded once and multiplied into every output row that reads it. Chains: three for one row (3×3
 * weights + 3 accumulators + operands fit 16 registers), two per row for a pair (9 + 4 + 2). */
static void emit_vector(DwCtx *c, LLVMValueRef ox0v, int64_t ox0, int lanes) {
  FcKernel *k = c->k;
  const Dw *d = c->d;
  enum { MAX_CHAINS = 3 };
  int64_t KK = d->KH * d->x.KW;
  int nch = c->nr == 1 ? MAX_CHAINS : 2;
  if (nch > KK) nch = (int)KK;
  LLVMValueRef acc[NR][MAX_CHAINS] = {{NULL}};
  for (int i = 0; i < c->n_in; i++)
    for (int64_t kw = 0; kw < d->x.KW; kw++) {
      LLVMValueRef x = NULL;
      bool loaded = false;
      for (int j = 0; j < c->nr; j++)
        for (int64_t kh = 0; kh < d->KH; kh++) {
          if (c->row_of[j][kh] != i) continue;
          if (!loaded) {
            x = fc_win_tap_vector(c->k, &c->d->x, LLVMConstReal(c->f32, 0.0), c->in_row[i], ox0v, ox0, kw);
            loaded = true;
          }
          if (!x) continue;
          int64_t t = kh * d->x.KW + kw;
          LLVMValueRef *a = &acc[j][t % nch];
          *a = *a ? fc_cg_madd(k, c->wv[t], x, *a) : LLVMBuildFMul(k->b, c->wv[t], x, "");
        }
    }
  LLVMValueRef sum[NR] = {NULL};
  for (int j = 0; j < c->nr; j++)
    for (int h = 0; h < nch; h++)
      if (acc[j][h]) sum[j] = sum[j] ? LLVMBuildFAdd(k->b, sum[j], acc[j][h], "") : acc[j][h];
  int order[MAX_VL];
  for (int l = 0; l < lanes; l++) order[l] = d->x.sw == 2 ? c->inv[l] : l;
  bool identity = lanes == d->x.vl && d->x.sw != 2;
  LLVMValueRef at = ox0v ? ox0v : c64(k, ox0);
  for (int j = 0; j < c->nr; j++) {
    LLVMValueRef v = sum[j] ? sum[j] : LLVMConstNull(c->vt); /* every tap of every lane in the padding */
    if (!identity) v = fc_win_shuffle(c->k, v, order, lanes);
    if (c->epi) v = fc_cg_epilogue_value(k, c->epi, v, c->plane, fc_cg_iadd(k, c->col0[j], at));
    LLVMValueRef s = LLVMBuildStore(k->b, v, fptr(c, c->yrow[j], at));
    LLVMSetAlignment(s, 4);
  }
}

/* Emits output rows oy .. oy + nr - 1 of the plane: their input row pointers (zrow, or NULL when no
 * row can lie in the vertical padding), then every vector position (edges straight-line, full
 * positions as a loop). */
static void emit_rows(DwCtx *c, LLVMValueRef xplane, LLVMValueRef yplane, LLVMValueRef zrow, LLVMValueRef oy, int nr) {
  FcKernel *k = c->k;
  const Dw *d = c->d;
  c->nr = nr;
  c->n_in = 0;
  int64_t offs[NR * MAX_TAPS];
  LLVMValueRef iy0 = fc_cg_iadd(k, fc_cg_imulc(k, oy, d->sh), c64(k, -d->ph));
  for (int j = 0; j < nr; j++) {
    for (int64_t kh = 0; kh < d->KH; kh++) {
      int64_t off = j * d->sh + kh * d->dh;
      int i = 0;
      while (i < c->n_in && offs[i] != off) i++;
      if (i == c->n_in) {
        LLVMValueRef iy = fc_cg_iadd(k, iy0, c64(k, off));
        offs[i] = off;
        c->in_row[i] = fptr(c, xplane, fc_cg_imulc(k, iy, d->x.W));
        if (zrow) {
          LLVMValueRef inside = LLVMBuildICmp(k->b, LLVMIntULT, iy, c64(k, d->H), "");
          c->in_row[i] = LLVMBuildSelect(k->b, inside, c->in_row[i], zrow, "row");
        }
        c->n_in++;
      }
      c->row_of[j][kh] = i;
    }
    LLVMValueRef oyj = fc_cg_iadd(k, oy, c64(k, j));
    c->col0[j] = fc_cg_imulc(k, oyj, d->x.OW);
    c->yrow[j] = fptr(c, yplane, c->col0[j]);
  }
  for (int64_t v = 0; v < d->pl.v_lo; v++) {
    int64_t ox0 = v * d->x.vl, left = d->x.OW - ox0;
    emit_vector(c, NULL, ox0, left < d->x.vl ? (int)left : d->x.vl);
  }
  if (d->pl.v_hi > d->pl.v_lo) {
    FcLoop lv;
    LLVMValueRef ox0 = fc_cg_loop_begin(k, &lv, c64(k, d->pl.v_lo * d->x.vl), c64(k, d->pl.v_hi * d->x.vl), d->x.vl, "ox");
    emit_vector(c, ox0, 0, d->x.vl);
    fc_cg_loop_end(k, &lv);
  }
  for (int64_t v = d->pl.v_hi; v < d->pl.nv; v++) {
    int64_t ox0 = v * d->x.vl, left = d->x.OW - ox0;
    emit_vector(c, NULL, ox0, left < d->x.vl ? (int)left : d->x.vl);
  }
}

/* ---- the kernel ---------------------------------------------------------------------------------- */

/* y[b, c, oy, ox] = bias[c] + sum_{kh, kw} w[c, 0, kh, kw] * x[b, c, oy*sh - ph + kh*dh, ox*sw - pw + kw*dw]. */
FcStatus fc_conv_depthwise(FcKernel *k) {
  Dw d;
  if (!dw_geometry(k, fc_win_lanes(k), &d))
    return fc_cg_error(k, FC_ERR_INTERNAL, "the depthwise conv kernel does not apply to this conv");
  int64_t KK = d.KH * d.x.KW;
  fc_kernel_set_outer(k, d.planes * d.pl.nrb, (2.0 * (double)KK + 1.0) * (double)d.pl.rb * (double)d.x.OW);

  DwCtx c = {.k = k, .d = &d, .f32 = LLVMFloatTypeInContext(k->ctx)};
  c.vt = LLVMVectorType(c.f32, (unsigned)d.x.vl);
  for (int p = 0; p < d.x.vl; p++) c.inv[fc_win_even_lane(d.x.vl, p) / 2] = p;
  FcStatus st = fc_cg_epilogue_init(k, in_type(k, 0)->rank - 2, &c.epi);
  if (st != FC_OK) return st;

  /* The row of zeros that taps in the vertical padding read (when any does). */
  LLVMValueRef zrow = NULL;
  if (d.vpad) {
    LLVMTypeRef zt = LLVMArrayType2(c.f32, (uint64_t)d.x.W);
    zrow = LLVMAddGlobal(k->mod, zt, "dw_zero_row");
    LLVMSetInitializer(zrow, LLVMConstNull(zt));
    LLVMSetGlobalConstant(zrow, 1);
    LLVMSetLinkage(zrow, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(zrow, LLVMGlobalUnnamedAddr);
    LLVMSetAlignment(zrow, 64);
  }

  FcLoop lt;
  LLVMValueRef it = fc_cg_loop_begin(k, &lt, k->begin, k->end, 1, "task");
  c.plane = LLVMBuildUDiv(k->b, it, c64(k, d.pl.nrb), "plane");
  LLVMValueRef blk = LLVMBuildURem(k->b, it, c64(k, d.pl.nrb), "");
  LLVMValueRef ch = LLVMBuildURem(k->b, c.plane, c64(k, d.C), "ch");
  LLVMValueRef xplane = fptr(&c, k->in[0], fc_cg_imulc(k, c.plane, d.H * d.x.W));
  LLVMValueRef yplane = fptr(&c, k->out[0], fc_cg_imulc(k, c.plane, d.OH * d.x.OW));
  LLVMValueRef wbase = fc_cg_imulc(k, ch, KK);
  LLVMValueRef zeros = LLVMConstNull(LLVMVectorType(LLVMInt32TypeInContext(k->ctx), (unsigned)d.x.vl));
  for (int64_t t = 0; t < KK; t++) {
    LLVMValueRef w = fc_cg_load(k, FC_DT_F32, k->in[1], fc_cg_iadd(k, wbase, c64(k, t)));
    LLVMValueRef one = LLVMBuildInsertElement(k->b, LLVMGetUndef(c.vt), w, i32c(k, 0), "");
    c.wv[t] = LLVMBuildShuffleVector(k->b, one, LLVMGetUndef(c.vt), zeros, "w");
  }
  LLVMValueRef oy0 = fc_cg_imulc(k, blk, d.pl.rb);
  LLVMValueRef oy1 = fc_cg_iadd(k, oy0, c64(k, d.pl.rb));
  oy1 = LLVMBuildSelect(k->b, LLVMBuildICmp(k->b, LLVMIntSLT, oy1, c64(k, d.OH), ""), oy1, c64(k, d.OH), "");

  /* Row pairs, then the last row of a block with an odd count (blocks hold an even number of rows, but
   * the plane's last may not: then every block gets the single-row code, emitted once). */
  LLVMValueRef tail = oy0;
  if (d.pl.rb >= NR) {
    FcLoop lr;
    LLVMValueRef oy = fc_cg_loop_begin(k, &lr, oy0, fc_cg_iadd(k, oy1, c64(k, 1 - NR)), NR, "oy");
    emit_rows(&c, xplane, yplane, zrow, oy, NR);
    fc_cg_loop_end(k, &lr);
    LLVMValueRef n = LLVMBuildSub(k->b, oy1, oy0, "");
    tail = LLVMBuildSub(k->b, oy1, LLVMBuildURem(k->b, n, c64(k, NR), ""), "");
  }
  if (d.pl.rb < NR || (d.OH - (d.pl.nrb - 1) * d.pl.rb) % NR != 0) {
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(k->b, LLVMIntSLT, tail, oy1, ""));
    emit_rows(&c, xplane, yplane, zrow, tail, 1);
    fc_cg_if_end(k, cont);
  }
  fc_cg_loop_end(k, &lt);
  return FC_OK;
}
