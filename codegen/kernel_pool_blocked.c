/* kernel_pool_blocked.c — f32 max_pool (without indices) and avg_pool over the blocked layout NCHW8c.
 * The block is the input's last dim (8, or 16 on AVX-512: one vector either way); the text says 8.
 *
 * The layout pass moves a 2-D pool into a blocked region as the same op on the rank-5 tensor
 * x[N, C/8, H, W, 8] with a third spatial dim of kernel 1, stride 1, dilation 1 and no padding: the 2-D
 * pool applied to each of the 8 channels of a block at once. The 8 channels of a pixel sit next to each
 * other, so a tap is one 8-lane vector load x[n][cb][ih][iw][0..7], whatever the stride. The loop
 * structure is the blocked depthwise conv's (kernel_dwconv_blocked.c) without weights:
 *
 *   - a tile of MAX_R output pixels along the row, one accumulator per pixel; taps are visited by kernel row
 *     and then by input column relative to the tile's first, so each input vector is loaded once per tile
 *     and feeds every pixel whose window holds it, and every pixel still combines its taps in (kh, kw)
 *     order, the order of kernel_pool.c and of the reference;
 *   - vertical padding costs no branches: each kernel row's input row is a pointer chosen with a select,
 *     into the input plane or to a constant row of the padding value (NaN for max, 0 for avg);
 *   - horizontally the row is cut at compile time into the interior pixels, whose every tap lies inside
 *     [0, W), run as a loop of whole tiles, and the edge pixels (and the interior's last partial tile),
 *     emitted straight-line with the taps outside the row left out. Windows that run past the end (ceil
 *     mode, end padding) are edge pixels like the others. An edge longer than MAX_STRAIGHT pixels (a
 *     padding far larger than any real pool's) is left to the generic pool.
 * The semantics are kernel_pool.c's: for max NaN never wins and a window with no number (only padding or
 * NaN) is stored as the lowest finite float. llvm.maxnum costs three instructions on x86, so a tile
 * first runs x > acc ? x : acc from -inf (one vmaxps, which skips NaN; ties keep the first tap, as in the
 * reference) and is recomputed with maxnum only when some lane comes out -inf (no number, or only -inf:
 * never on finite data). avg adds the taps in (kh, kw) order and divides by the window's count, the
 * product of a per-row count (a table indexed by the output row) and a per-column count (a constant: KW
 * in the interior), with count_include_pad counting the taps inside the padded input. Adding the
 * padding's zeros changes no sum, so results are bit-identical to kernel_pool.c's and the reference's
 * (but for the sign of a zero sum).
 * Outer iterations are (batch, channel block, row block) triples: whole planes when there are enough of
 * them for the thread pool, else planes cut into blocks of rows.
 */
#include <float.h>
#include <math.h>

#include "cg_window.h"
#include "codegen.h"

enum {
  MAX_TAPS = 81,            /* KH·KW handled (9×9); larger windows take the generic pool */
  MAX_R = 8,                /* output pixels per tile */
  MAX_STRAIGHT = 32,        /* pixels of a row's edge emitted straight-line; longer: the generic pool */
  MIN_TASKS = 32,           /* planes are cut into row blocks until there are this many outer iterations */
  MAX_PAD_FLOATS = 1 << 16, /* floats in the constant padding row (W·8) */
};

/* The static geometry. */
typedef struct Pb {
  int64_t B;                  /* channels per block (the vector): 8 or 16, the input's last dim */
  bool is_max, include_pad;
  int64_t CB, planes;         /* channel blocks, batch × channel blocks */
  int64_t H, W, OH, OW, KH, KW;
  int64_t sh, sw, dh, dw, ph, pw, pe_h, pe_w;
  int64_t lo, hi;             /* the looped interior pixels [lo, hi): every tap inside the row, whole tiles */
  int64_t rb, nrb;            /* output rows per task, row blocks per plane */
  bool vpad;                  /* some output row reads an input row outside [0, H) */
  bool empty;                 /* no output: nothing to emit */
} Pb;

/* Fills g from the op; false when the op is not a blocked pool this kernel handles. */
static bool pb_geometry(const FcKernel *k, Pb *g) {
  const FcOp *op = k->op;
  if ((op->kind != FC_OP_MAX_POOL && op->kind != FC_OP_AVG_POOL) || op->n_operands < 1 || op->n_results != 1 ||
      !op->operands[0].value)
    return false;
  const FcType *xt = &op->operands[0].value->type, *yt = &op->results[0].type;
  if (xt->dtype != FC_DT_F32 || yt->dtype != FC_DT_F32 || xt->rank != 5 || yt->rank != 5) return false;
  g->B = xt->dims[4];
  if (!fc_layout_block_supported(g->B) || yt->dims[4] != g->B || yt->dims[0] != xt->dims[0] ||
      yt->dims[1] != xt->dims[1])
    return false;
  const int64_t *K, *s, *dl, *p;
  if (fc_op_attr_ints(op, FC_ATTR_KERNEL_SHAPE, &K) != 3 || fc_op_attr_ints(op, FC_ATTR_STRIDES, &s) != 3 ||
      fc_op_attr_ints(op, FC_ATTR_DILATIONS, &dl) != 3 || fc_op_attr_ints(op, FC_ATTR_PADS, &p) != 6)
    return false;
  if (K[2] != 1 || s[2] != 1 || dl[2] != 1 || p[2] != 0 || p[5] != 0) return false;
  g->is_max = op->kind == FC_OP_MAX_POOL;
  g->include_pad = !g->is_max && fc_op_attr_int(op, FC_ATTR_COUNT_INCLUDE_PAD, 0) != 0;
  g->CB = xt->dims[1];
  g->H = xt->dims[2];
  g->W = xt->dims[3];
  g->OH = yt->dims[2];
  g->OW = yt->dims[3];
  g->KH = K[0];
  g->KW = K[1];
  g->sh = s[0];
  g->sw = s[1];
  g->dh = dl[0];
  g->dw = dl[1];
  g->ph = p[0];
  g->pw = p[1];
  g->pe_h = p[3];
  g->pe_w = p[4];
  if (g->KH < 1 || g->KW < 1 || g->KH > MAX_TAPS || g->KW > MAX_TAPS || g->KH * g->KW > MAX_TAPS) return false;
  if (g->sh < 1 || g->sw < 1 || g->dh < 1 || g->dw < 1 || g->ph < 0 || g->pw < 0 || g->pe_h < 0 || g->pe_w < 0)
    return false;
  if (g->ph > INT32_MAX || g->pw > INT32_MAX || g->pe_h > INT32_MAX || g->pe_w > INT32_MAX) return false;
  /* Every offset computed below, at compile time or run time, is bounded by the products checked here:
   * input rows below OH·sh + (KH - 1)·dh times the row's W·8 floats, input columns below
   * (OW + MAX_R)·sw + (KW - 1)·dw + pw + W times 8, plane offsets by x's and y's element counts, and the
   * counts' loops by the output sizes. */
  int64_t xn, yn, span_h, span_w, rows, cols, t;
  if (!fc_type_numel(xt, &xn) || !fc_type_numel(yt, &yn) || !fc_checked_mul(xt->dims[0], g->CB, &g->planes) ||
      !fc_checked_mul(g->KH - 1, g->dh, &span_h) || !fc_checked_mul(g->KW - 1, g->dw, &span_w) ||
      !fc_checked_mul(g->OH, g->sh, &rows) || !fc_checked_add(rows, span_h, &rows) ||
      !fc_checked_add(rows, g->ph, &rows) || !fc_checked_mul(rows, g->W * g->B, &t) ||
      !fc_checked_add(g->OW, MAX_R, &cols) || !fc_checked_mul(cols, g->sw, &cols) ||
      !fc_checked_add(cols, span_w, &cols) || !fc_checked_add(cols, g->pw, &cols) ||
      !fc_checked_add(cols, g->W, &cols) || !fc_checked_mul(cols, g->B, &t))
    return false;
  g->empty = yn == 0;
  if (g->empty) return true;

  int64_t lo, hi;
  fc_win_interior(g->W, g->OW, g->sw, g->pw, span_w, &lo, &hi);
  g->lo = lo;
  g->hi = lo + (hi - lo) / MAX_R * MAX_R;
  if (g->lo > MAX_STRAIGHT || g->OW - g->hi > MAX_STRAIGHT + MAX_R) return false;

  g->vpad = fc_win_reads_pad_rows(g->H, g->OH, g->sh, g->ph, span_h);
  if (g->vpad && g->W > MAX_PAD_FLOATS / g->B) return false;
  fc_win_row_blocks(g->planes, g->OH, MIN_TASKS, 0, 1, &g->rb, &g->nrb);
  return true;
}

bool fc_pool_blocked_applies(const FcKernel *k) {
  Pb g;
  return pb_geometry(k, &g);
}

/* ---- emit helpers -------------------------------------------------------------------------------- */

typedef struct PbCtx {
  FcKernel *k;
  const Pb *g;
  LLVMTypeRef f32, vt;        /* float, <8 x float> */
  LLVMValueRef pad;           /* the padding value: NaN (max) or 0 (avg) */
  LLVMValueRef row[MAX_TAPS]; /* per kernel row: the input row (or the padding row) */
  LLVMValueRef yrow;          /* the output row */
  LLVMValueRef row_cnt;       /* avg: the current output row's window row count, splat */
} PbCtx;

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

/* &base[off] in floats; off may point outside base only for a padding row's row (never read). */
static LLVMValueRef fptr(PbCtx *c, LLVMValueRef base, LLVMValueRef off) {
  return LLVMBuildGEP2(c->k->b, c->f32, base, &off, 1, "");
}

static LLVMValueRef vload(PbCtx *c, LLVMTypeRef t, LLVMValueRef p) {
  LLVMValueRef v = LLVMBuildLoad2(c->k->b, t, p, "");
  LLVMSetAlignment(v, 4);
  return v;
}

static LLVMValueRef splat(PbCtx *c, double v) {
  LLVMValueRef e[FC_LAYOUT_MAX_BLOCK];
  for (int i = 0; i < c->g->B; i++) e[i] = LLVMConstReal(c->f32, v);
  return LLVMConstVector(e, (unsigned)c->g->B);
}

/* The row of n padding values that taps in the vertical padding read: one global per value and size,
 * shared by every kernel that needs it (so kernels of the same shape stay identical and are shared,
 * cg_module.c). */
static LLVMValueRef pad_row(PbCtx *c, int64_t n) {
  FcKernel *k = c->k;
  char name[48];
  snprintf(name, sizeof name, "pbk_%s_%lld", c->g->is_max ? "nan" : "zeros", (long long)n);
  LLVMValueRef g = LLVMGetNamedGlobal(k->mod, name);
  if (g) return g;
  LLVMValueRef *e = FC_NEW_ARRAY(&k->op->graph->module->arena, LLVMValueRef, (size_t)n + 1); /* n = 0: one */
  for (int64_t i = 0; i < n; i++) e[i] = c->pad;
  return fc_cg_const_table(k, c->f32, e, n, name);
}

/* How a tile combines its taps. */
typedef enum Comb {
  COMB_SUM,     /* avg: fadd, starting from the first tap */
  COMB_MAX_NUM, /* max: llvm.maxnum from the first tap (NaN never wins; no number leaves NaN) */
  COMB_MAX_FAST /* max: x > acc ? x : acc from -inf (one vmaxps; NaN is skipped; no number leaves -inf) */
} Comb;

/* The tile's accumulators acc[0 .. n): output pixels ow0 .. ow0 + n - 1 of the current row. ow0v is the
 * run-time first pixel of an interior tile (every tap inside the row), or NULL for a straight-line tile
 * at the constant ow0, whose taps outside the row are left out. Taps go by kernel row, then by input
 * column relative to the tile's first (rel = r·sw + kw·dw for pixel r, kernel column kw), so each input
 * vector is loaded once and each pixel still combines its taps in kh, kw order. A pixel without taps
 * gets the combination's empty value (NaN for COMB_MAX_NUM, 0 for COMB_SUM, -inf for COMB_MAX_FAST). */
static void tile_taps(PbCtx *c, LLVMValueRef ow0v, int64_t ow0, int n, Comb comb, LLVMValueRef *acc) {
  FcKernel *k = c->k;
  const Pb *g = c->g;
  for (int r = 0; r < n; r++) acc[r] = comb == COMB_MAX_FAST ? splat(c, -INFINITY) : NULL;
  LLVMValueRef col0 = ow0v ? fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, ow0v, g->sw), c64(k, -g->pw)), g->B) : NULL;
  int64_t max_rel = (int64_t)(n - 1) * g->sw + (g->KW - 1) * g->dw;
  for (int64_t kh = 0; kh < g->KH; kh++)
    for (int64_t rel = 0; rel <= max_rel; rel++) {
      LLVMValueRef x = NULL;
      for (int r = 0; r < n; r++) {
        int64_t q = rel - r * g->sw;
        if (q < 0 || q % g->dw != 0 || q / g->dw >= g->KW) continue;
        if (!ow0v) {
          int64_t ix = (ow0 + r) * g->sw - g->pw + q;
          if (ix < 0 || ix >= g->W) continue;
        }
        if (!x) {
          LLVMValueRef at = ow0v ? fc_cg_iadd(k, col0, c64(k, rel * g->B)) : c64(k, ((ow0 * g->sw - g->pw) + rel) * g->B);
          x = vload(c, c->vt, fptr(c, c->row[kh], at));
        }
        if (comb == COMB_MAX_FAST) {
          LLVMValueRef gt = LLVMBuildFCmp(k->b, LLVMRealOGT, x, acc[r], "");
          acc[r] = LLVMBuildSelect(k->b, gt, x, acc[r], "");
        } else if (!acc[r]) {
          acc[r] = x;
        } else if (comb == COMB_MAX_NUM) {
          LLVMValueRef args[2] = {acc[r], x};
          acc[r] = fc_cg_intrinsic(k, "llvm.maxnum", c->vt, args, 2);
        } else {
          acc[r] = LLVMBuildFAdd(k->b, acc[r], x, "");
        }
      }
    }
  for (int r = 0; r < n; r++)
    if (!acc[r]) acc[r] = splat(c, comb == COMB_MAX_NUM ? NAN : 0.0); /* a pixel that sees only padding */
}

static void store_pixel(PbCtx *c, LLVMValueRef ow0v, int64_t ow, LLVMValueRef v) {
  FcKernel *k = c->k;
  LLVMValueRef at = ow0v ? fc_cg_iadd(k, ow0v, c64(k, ow)) : c64(k, ow);
  LLVMValueRef s = LLVMBuildStore(k->b, v, fptr(c, c->yrow, fc_cg_imulc(k, at, c->g->B)));
  LLVMSetAlignment(s, 4);
}

/* Computes and stores a tile (tile_taps' arguments). avg divides each pixel's sum by its count. max
 * runs the fast combination (one vmaxps a tap instead of maxnum's three instructions), whose -inf is
 * ambiguous: the window's numbers may all be -inf, or it may hold no number, which must store the lowest
 * finite float. So when any lane of the tile comes out -inf, which real data (after a ReLU, or any
 * finite input) never does, the tile is recomputed with maxnum, whose NaN marks the windows without a
 * number, and stored again. */
static void emit_tile(PbCtx *c, LLVMValueRef ow0v, int64_t ow0, int n) {
  FcKernel *k = c->k;
  const Pb *g = c->g;
  LLVMValueRef acc[MAX_R];
  if (!g->is_max) {
    tile_taps(c, ow0v, ow0, n, COMB_SUM, acc);
    for (int r = 0; r < n; r++) {
      int64_t cw = g->KW;
      if (!ow0v) cw = fc_win_tap_count(ow0 + r, g->KW, g->sw, g->dw, g->pw, g->pe_w, g->W, g->include_pad);
      LLVMValueRef cnt = LLVMBuildFMul(k->b, c->row_cnt, splat(c, (double)cw), "");
      store_pixel(c, ow0v, ow0 + r, LLVMBuildFDiv(k->b, acc[r], cnt, ""));
    }
    return;
  }
  tile_taps(c, ow0v, ow0, n, COMB_MAX_FAST, acc);
  LLVMValueRef low = NULL; /* the tile's lowest lanes (no NaN: the fast combination never keeps one) */
  for (int r = 0; r < n; r++) {
    store_pixel(c, ow0v, ow0 + r, acc[r]);
    low = !low ? acc[r] : LLVMBuildSelect(k->b, LLVMBuildFCmp(k->b, LLVMRealOLT, acc[r], low, ""), acc[r], low, "");
  }
  LLVMTypeRef ib = LLVMIntTypeInContext(k->ctx, (unsigned)g->B); /* one bit per lane */
  LLVMValueRef bits = LLVMBuildBitCast(k->b, LLVMBuildFCmp(k->b, LLVMRealOEQ, low, splat(c, -INFINITY), ""), ib, "");
  LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(k->b, LLVMIntNE, bits, LLVMConstInt(ib, 0, 0), ""));
  tile_taps(c, ow0v, ow0, n, COMB_MAX_NUM, acc);
  for (int r = 0; r < n; r++) {
    LLVMValueRef none = LLVMBuildFCmp(k->b, LLVMRealUNO, acc[r], acc[r], "");
    store_pixel(c, ow0v, ow0 + r, LLVMBuildSelect(k->b, none, splat(c, -FLT_MAX), acc[r], ""));
  }
  fc_cg_if_end(k, cont);
}

/* The straight-line pixels [from, to) in tiles of MAX_R. */
static void emit_edge(PbCtx *c, int64_t from, int64_t to) {
  for (int64_t ow = from; ow < to; ow += MAX_R) {
    int64_t n = to - ow < MAX_R ? to - ow : MAX_R;
    emit_tile(c, NULL, ow, (int)n);
  }
}

/* Output row oy of the plane: its input rows and count, then its pixels. */
static void emit_row(PbCtx *c, LLVMValueRef xplane, LLVMValueRef yplane, LLVMValueRef prow, LLVMValueRef cnt_tab,
                     LLVMValueRef oy) {
  FcKernel *k = c->k;
  const Pb *g = c->g;
  LLVMValueRef iy0 = fc_cg_iadd(k, fc_cg_imulc(k, oy, g->sh), c64(k, -g->ph));
  for (int64_t kh = 0; kh < g->KH; kh++) {
    LLVMValueRef iy = fc_cg_iadd(k, iy0, c64(k, kh * g->dh));
    c->row[kh] = fptr(c, xplane, fc_cg_imulc(k, iy, g->W * g->B));
    if (prow) {
      LLVMValueRef inside = LLVMBuildICmp(k->b, LLVMIntULT, iy, c64(k, g->H), "");
      c->row[kh] = LLVMBuildSelect(k->b, inside, c->row[kh], prow, "row");
    }
  }
  if (cnt_tab) {
    LLVMValueRef n = vload(c, c->f32, fptr(c, cnt_tab, oy));
    LLVMValueRef one = LLVMBuildInsertElement(k->b, LLVMGetUndef(c->vt), n, c64(k, 0), "");
    LLVMValueRef zeros = LLVMConstNull(LLVMVectorType(LLVMInt32TypeInContext(k->ctx), (unsigned)g->B));
    c->row_cnt = LLVMBuildShuffleVector(k->b, one, LLVMGetUndef(c->vt), zeros, "");
  }
  c->yrow = fptr(c, yplane, fc_cg_imulc(k, oy, g->OW * g->B));
  emit_edge(c, 0, g->lo);
  if (g->hi > g->lo) {
    FcLoop l;
    LLVMValueRef ow0 = fc_cg_loop_begin(k, &l, c64(k, g->lo), c64(k, g->hi), MAX_R, "ow");
    emit_tile(c, ow0, 0, MAX_R);
    fc_cg_loop_end(k, &l);
  }
  emit_edge(c, g->hi, g->OW);
}

/* ---- the kernel ---------------------------------------------------------------------------------- */

/* y[n, cb, oy, ox, l] = max or mean over the window taps (kh, kw) inside the input of
 * x[n, cb, oy·sh - ph + kh·dh, ox·sw - pw + kw·dw, l]. */
FcStatus fc_pool_blocked(FcKernel *k) {
  Pb g;
  if (!pb_geometry(k, &g))
    return fc_cg_error(k, FC_ERR_INTERNAL, "the blocked pool kernel does not apply to this pool");
  if (g.empty) {
    fc_kernel_set_outer(k, 0, 0);
    return FC_OK;
  }
  fc_kernel_set_outer(k, g.planes * g.nrb, (double)(g.KH * g.KW + 2) * g.B * (double)g.rb * (double)g.OW);

  PbCtx c = {.k = k, .g = &g, .f32 = LLVMFloatTypeInContext(k->ctx)};
  c.vt = LLVMVectorType(c.f32, (unsigned)g.B);
  c.pad = LLVMConstReal(c.f32, g.is_max ? NAN : 0.0);
  LLVMValueRef prow = g.vpad ? pad_row(&c, g.W * g.B) : NULL;
  LLVMValueRef cnt_tab = NULL; /* avg: per output row, the window's row count, as float */
  if (!g.is_max)
    cnt_tab = fc_win_row_count_table(k, g.OH, g.KH, g.sh, g.dh, g.ph, g.pe_h, g.H, g.include_pad, "pbk_row_cnt");

  FcLoop lt;
  LLVMValueRef it = fc_cg_loop_begin(k, &lt, k->begin, k->end, 1, "task");
  LLVMValueRef plane = LLVMBuildUDiv(k->b, it, c64(k, g.nrb), "plane");
  LLVMValueRef blk = LLVMBuildURem(k->b, it, c64(k, g.nrb), "");
  LLVMValueRef xplane = fptr(&c, k->in[0], fc_cg_imulc(k, plane, g.H * g.W * g.B));
  LLVMValueRef yplane = fptr(&c, k->out[0], fc_cg_imulc(k, plane, g.OH * g.OW * g.B));
  LLVMValueRef oy0 = fc_cg_imulc(k, blk, g.rb);
  LLVMValueRef oy1 = fc_cg_iadd(k, oy0, c64(k, g.rb));
  oy1 = LLVMBuildSelect(k->b, LLVMBuildICmp(k->b, LLVMIntSLT, oy1, c64(k, g.OH), ""), oy1, c64(k, g.OH), "");
  FcLoop lr;
  LLVMValueRef oy = fc_cg_loop_begin(k, &lr, oy0, oy1, 1, "oy");
  emit_row(&c, xplane, yplane, prow, cnt_tab, oy);
  fc_cg_loop_end(k, &lr);
  fc_cg_loop_end(k, &lt);
  return FC_OK;
}
