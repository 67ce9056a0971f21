/* kernel_pool.c — max_pool (without indices) and avg_pool over f32 1-D and 2-D windows, and max_pool over
 * 8-bit integers (a quantised model's pools run on the storage bytes), vectorised along the output width.
 * fc_kernel_pool (kernel_nn.c) calls it when fc_pool_window_applies.
 *
 * The loop structure is the depthwise conv's (kernel_dwconv.c) with no weights, and the row geometry and
 * tap loads are the ones both share (cg_window.h): one output row at a time in explicit vectors of VL
 * lanes (VL from the target: 8 f32 for AVX2; 8-bit rows see pool_lanes). Each input row of the window is
 * a pointer chosen with a select, either into the input plane or to a constant row of padding (W
 * floats), so rows in the vertical padding cost no branches. Along the width the row is cut at compile
 * time into a contiguous range of "full" vector positions, whose every tap reads inside [0, W), run as
 * a loop of plain loads, and a few "edge" positions emitted straight-line with per-tap lane masks
 * (masked loads; lanes outside the row read the padding value; 8-bit rows, which AVX2 cannot load
 * masked, one plain load moved inside the row and a shuffle that puts the padding in), or, where every tap
 * of the row's last VL columns reads inside it, that one plain vector (fc_win_right_tail; the overlap
 * recomputes a few outputs identically). Stride 2 loads 2·VL floats and keeps every other one with one in-lane shuffle (shufps); the lanes come out in a
 * fixed permuted order, the same for every tap, and one shuffle per output vector restores it. Larger
 * strides insert VL scalars.
 *
 * The padding value makes padded taps neutral. max_pool pads with NaN and combines with llvm.maxnum, so
 * NaN never wins, as in the reference: a window with no number (only padding or NaN) ends as NaN and is
 * stored as the lowest finite float. On u8 / i8 it pads with the type's minimum and combines with
 * llvm.umax / llvm.smax: exact, and a window of only padding gives the minimum, as in the reference. max is exact, so the taps are combined in two chains. avg_pool
 * pads with 0 and adds the taps in one chain in the reference order (kernel rows, then columns), then
 * divides by the window's count: a per-row count (a table indexed by the output row) times a per-column
 * count (VL constants at edges; KW at full positions, whose taps all lie inside the input), the counts
 * of kernel_nn.c's pool (taps inside the input, or with count_include_pad inside the padded input).
 *
 * Outer iterations are (plane, row block) pairs, plane = n·C + c: whole planes when there are enough of
 * them for the thread pool, else planes cut into blocks of rows.
 */
#include <float.h>
#include <math.h>

#include "cg_window.h"
#include "codegen.h"

enum {
  MAX_TAPS = 64,          /* KH·KW handled; larger windows take the generic pool */
  MAX_EDGES = 16,         /* straight-line edge vectors per row handled */
  MIN_TASKS = 32,         /* planes are cut into row blocks until there are this many outer iterations */
  MAX_VL = FC_WIN_MAX_VL, /* lanes per vector handled */
  MAX_PAD_ROW = 1 << 16,  /* floats in the constant padding row (the input width) */
};

/* The static geometry, everything as a 2-D pool (1-D: H = OH = KH = 1). */
typedef struct Pw {
  bool is_max, include_pad;
  int64_t planes, H, OH, KH, sh, dh, ph, pe_h, pe_w;
  FcWinRow x;         /* the row geometry: W, OW, KW, sw, dw, pw, vl */
  FcWinPlan pl;       /* vector positions and row blocks */
  bool vpad;          /* some output row reads an input row outside [0, H) */
} Pw;

static bool pool_geometry(const FcKernel *k, int vl, Pw *g) {
  const FcOp *op = k->op;
  if ((op->kind != FC_OP_MAX_POOL && op->kind != FC_OP_AVG_POOL) || op->n_results != 1) return false;
  const FcType *xt = &op->operands[0].value->type, *yt = &op->results[0].type;
  bool bytes = op->kind == FC_OP_MAX_POOL && (xt->dtype == FC_DT_U8 || xt->dtype == FC_DT_I8);
  if ((xt->dtype != FC_DT_F32 && !bytes) || yt->dtype != xt->dtype || xt->rank != yt->rank) return false;
  int n = xt->rank - 2;
  if (n != 1 && n != 2) return false;
  const int64_t *K, *s, *dl, *p;
  if (fc_op_attr_ints(op, FC_ATTR_KERNEL_SHAPE, &K) != n || fc_op_attr_ints(op, FC_ATTR_STRIDES, &s) != n ||
      fc_op_attr_ints(op, FC_ATTR_DILATIONS, &dl) != n || fc_op_attr_ints(op, FC_ATTR_PADS, &p) != 2 * n)
    return false;
  g->is_max = op->kind == FC_OP_MAX_POOL;
  g->include_pad = !g->is_max && fc_op_attr_int(op, FC_ATTR_COUNT_INCLUDE_PAD, 0) != 0;
  g->x.vl = vl;
  g->H = n == 2 ? xt->dims[2] : 1;
  g->x.W = xt->dims[1 + n];
  g->OH = n == 2 ? yt->dims[2] : 1;
  g->x.OW = yt->dims[1 + n];
  g->KH = n == 2 ? K[0] : 1;
  g->x.KW = K[n - 1];
  g->sh = n == 2 ? s[0] : 1;
  g->x.sw = s[n - 1];
  g->dh = n == 2 ? dl[0] : 1;
  g->x.dw = dl[n - 1];
  g->ph = n == 2 ? p[0] : 0;
  g->x.pw = p[n - 1];
  g->pe_h = n == 2 ? p[n] : 0;
  g->pe_w = p[2 * n - 1];
  if (g->KH < 1 || g->x.KW < 1 || g->KH * g->x.KW > MAX_TAPS) return false;
  if (g->sh < 1 || g->x.sw < 1 || g->dh < 1 || g->x.dw < 1 || g->ph < 0 || g->x.pw < 0) return false;
  int64_t t;
  if (!fc_checked_mul(xt->dims[0], xt->dims[1], &g->planes) || !fc_checked_mul(g->x.KW, g->x.dw, &t) ||
      !fc_checked_mul(g->KH, g->dh, &t) || !fc_checked_mul(g->x.OW + vl, g->x.sw, &t) ||
      !fc_checked_mul(g->OH + 1, g->sh, &t) || g->x.pw > INT32_MAX || g->ph > INT32_MAX || g->pe_h > INT32_MAX ||
      g->pe_w > INT32_MAX)
    return false;
  if (g->planes == 0 || g->OH == 0 || g->x.OW == 0) return false; /* empty: the generic kernel does nothing */
  g->vpad = fc_win_reads_pad_rows(g->H, g->OH, g->sh, g->ph, (g->KH - 1) * g->dh);
  if (g->vpad && g->x.W > MAX_PAD_ROW) return false;
  return fc_win_plan(&g->x, g->planes, g->OH, MAX_EDGES, MIN_TASKS, 1, &g->pl);
}

/* f32 rows take the target's f32 lanes; 8-bit rows twice as many (16 bytes are one xmm on AVX2), halved down
 * to 4 while the row has fewer outputs, so that a short row (7 or 14 wide) is plain vectors and a tail
 * (fc_win_right_tail) rather than a vector with masked-off lanes. */
static int pool_lanes(const FcKernel *k) {
  int vl = fc_win_lanes(k);
  const FcType *xt = &k->op->operands[0].value->type, *yt = &k->op->results[0].type;
  if (xt->dtype == FC_DT_F32 || yt->rank < 3) return vl;
  vl = 2 * vl > MAX_VL ? MAX_VL : 2 * vl;
  while (vl > 4 && yt->dims[yt->rank - 1] < vl) vl /= 2;
  return vl;
}

bool fc_pool_window_applies(const FcKernel *k) {
  Pw g;
  return pool_geometry(k, pool_lanes(k), &g);
}

/* ---- emit helpers -------------------------------------------------------------------------------- */

typedef struct PwCtx {
  FcKernel *k;
  const Pw *g;
  FcDtype dt;                    /* f32, or u8 / i8 (max only) */
  LLVMTypeRef f32, et, vt;       /* float, the element type, <vl x et> */
  LLVMValueRef pad;              /* the padding value: NaN (max) or 0 (avg); the type's minimum (8-bit) */
  LLVMValueRef rows[MAX_TAPS];   /* the KH input row pointers of the current output row */
  LLVMValueRef yrow;             /* the output row */
  LLVMValueRef row_cnt;          /* avg: <vl x float> count of the current output row's window rows */
  int perm_inv[MAX_VL];          /* stride 2: output column c sits in lane perm_inv[c] */
} PwCtx;

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }
static LLVMValueRef i32c(FcKernel *k, int64_t v) {
  return LLVMConstInt(LLVMInt32TypeInContext(k->ctx), (unsigned long long)v, 0);
}

static LLVMValueRef fptr(PwCtx *c, LLVMValueRef base, LLVMValueRef off) {
  return LLVMBuildGEP2(c->k->b, c->et, base, &off, 1, ""); /* may point before base: not inbounds */
}

static LLVMValueRef vload(PwCtx *c, LLVMTypeRef t, LLVMValueRef p) {
  LLVMValueRef v = LLVMBuildLoad2(c->k->b, t, p, "");
  LLVMSetAlignment(v, (unsigned)fc_dtype_size(c->dt));
  return v;
}

static LLVMValueRef splat(PwCtx *c, LLVMValueRef s, unsigned n) {
  LLVMValueRef e[2 * MAX_VL];
  for (unsigned i = 0; i < n; i++) e[i] = s;
  return LLVMConstVector(e, n);
}

static LLVMValueRef vmax(PwCtx *c, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef args[2] = {a, b};
  const char *name = c->dt == FC_DT_F32 ? "llvm.maxnum" : c->dt == FC_DT_U8 ? "llvm.umax" : "llvm.smax";
  return fc_cg_intrinsic(c->k, name, c->vt, args, 2);
}

/* Computes, finishes and stores outputs ox0 .. ox0 + vl of the current row (the first `lanes`). */
static void emit_vector(PwCtx *c, LLVMValueRef ox0v, int64_t ox0, int lanes) {
  FcKernel *k = c->k;
  const Pw *g = c->g;
  int vl = g->x.vl, nch = g->is_max ? 2 : 1;
  LLVMValueRef acc[2] = {NULL, NULL};
  int t = 0;
  for (int64_t kh = 0; kh < g->KH; kh++)
    for (int64_t kw = 0; kw < g->x.KW; kw++) {
      LLVMValueRef x = fc_win_tap_vector(c->k, &c->g->x, c->pad, c->rows[kh], ox0v, ox0, kw);
      if (!x) continue;
      LLVMValueRef *a = &acc[t++ % nch];
      *a = !*a ? x : g->is_max ? vmax(c, *a, x) : LLVMBuildFAdd(k->b, *a, x, "");
    }
  LLVMValueRef v = acc[1] ? vmax(c, acc[0], acc[1]) : acc[0] ? acc[0] : splat(c, c->pad, (unsigned)vl);
  if (g->is_max && c->dt != FC_DT_F32) {
    /* integers: nothing to finish */
  } else if (g->is_max) {
    LLVMValueRef none = LLVMBuildFCmp(k->b, LLVMRealUNO, v, v, "");
    v = LLVMBuildSelect(k->b, none, splat(c, LLVMConstReal(c->f32, -FLT_MAX), (unsigned)vl), v, "");
  } else {
    LLVMValueRef cw[MAX_VL]; /* per lane (stride 2: still in even_lane's order), the column count */
    for (int l = 0; l < vl; l++) {
      int64_t ox = ox0 + (g->x.sw == 2 ? fc_win_even_lane(vl, l) / 2 : l), n = g->x.KW;
      if (!ox0v) n = ox < g->x.OW ? fc_win_tap_count(ox, g->x.KW, g->x.sw, g->x.dw, g->x.pw, g->pe_w, g->x.W, g->include_pad) : 1;
      cw[l] = LLVMConstReal(c->f32, (double)n);
    }
    v = LLVMBuildFDiv(k->b, v, LLVMBuildFMul(k->b, c->row_cnt, LLVMConstVector(cw, (unsigned)vl), ""), "");
  }
  int order[MAX_VL];
  for (int l = 0; l < lanes; l++) order[l] = g->x.sw == 2 ? c->perm_inv[l] : l;
  if (lanes < vl || g->x.sw == 2) v = fc_win_shuffle(c->k, v, order, lanes);
  LLVMValueRef s = LLVMBuildStore(k->b, v, fptr(c, c->yrow, ox0v ? ox0v : c64(k, ox0)));
  LLVMSetAlignment(s, (unsigned)fc_dtype_size(c->dt));
}

/* ---- the kernel ---------------------------------------------------------------------------------- */

/* y[p, oy, ox] = max or mean over the window taps (kh, kw) inside the input of
 * x[p, oy*sh - ph + kh*dh, ox*sw - pw + kw*dw], p = n·C + c. */
FcStatus fc_pool_window(FcKernel *k) {
  Pw g;
  if (!pool_geometry(k, pool_lanes(k), &g))
    return fc_cg_error(k, FC_ERR_INTERNAL, "the vectorised pool kernel does not apply to this pool");
  fc_kernel_set_outer(k, g.planes * g.pl.nrb, (double)(g.KH * g.x.KW + 2) * (double)g.pl.rb * (double)g.x.OW);

  PwCtx c = {.k = k, .g = &g, .dt = k->op->operands[0].value->type.dtype, .f32 = LLVMFloatTypeInContext(k->ctx)};
  c.et = c.dt == FC_DT_F32 ? c.f32 : LLVMInt8TypeInContext(k->ctx);
  c.vt = LLVMVectorType(c.et, (unsigned)g.x.vl);
  c.pad = c.dt == FC_DT_F32 ? LLVMConstReal(c.f32, g.is_max ? NAN : 0.0)
                            : LLVMConstInt(c.et, c.dt == FC_DT_U8 ? 0 : (unsigned long long)-128, 1);
  for (int p = 0; p < g.x.vl; p++) c.perm_inv[fc_win_even_lane(g.x.vl, p) / 2] = p;

  LLVMValueRef prow = NULL; /* the padding row that taps in the vertical padding read */
  if (g.vpad) {
    LLVMValueRef *e = FC_NEW_ARRAY(&k->op->graph->module->arena, LLVMValueRef, (size_t)g.x.W);
    for (int64_t i = 0; i < g.x.W; i++) e[i] = c.pad;
    prow = fc_cg_const_table(k, c.et, e, g.x.W, "pool_pad_row");
  }
  LLVMValueRef cnt_tab = NULL; /* avg: per output row, the window's row count, as float */
  if (!g.is_max)
    cnt_tab = fc_win_row_count_table(k, g.OH, g.KH, g.sh, g.dh, g.ph, g.pe_h, g.H, g.include_pad, "pool_row_cnt");

  FcLoop lt;
  LLVMValueRef it = fc_cg_loop_begin(k, &lt, k->begin, k->end, 1, "task");
  LLVMValueRef plane = LLVMBuildUDiv(k->b, it, c64(k, g.pl.nrb), "plane");
  LLVMValueRef blk = LLVMBuildURem(k->b, it, c64(k, g.pl.nrb), "");
  LLVMValueRef xplane = fptr(&c, k->in[0], fc_cg_imulc(k, plane, g.H * g.x.W));
  LLVMValueRef yplane = fptr(&c, k->out[0], fc_cg_imulc(k, plane, g.OH * g.x.OW));
  LLVMValueRef oy0 = fc_cg_imulc(k, blk, g.pl.rb);
  LLVMValueRef oy1 = fc_cg_iadd(k, oy0, c64(k, g.pl.rb));
  oy1 = LLVMBuildSelect(k->b, LLVMBuildICmp(k->b, LLVMIntSLT, oy1, c64(k, g.OH), ""), oy1, c64(k, g.OH), "");

  FcLoop lr;
  LLVMValueRef oy = fc_cg_loop_begin(k, &lr, oy0, oy1, 1, "oy");
  LLVMValueRef iy0 = fc_cg_iadd(k, fc_cg_imulc(k, oy, g.sh), c64(k, -g.ph));
  for (int64_t kh = 0; kh < g.KH; kh++) {
    LLVMValueRef iy = fc_cg_iadd(k, iy0, c64(k, kh * g.dh));
    c.rows[kh] = fptr(&c, xplane, fc_cg_imulc(k, iy, g.x.W));
    if (prow) {
      LLVMValueRef inside = LLVMBuildICmp(k->b, LLVMIntULT, iy, c64(k, g.H), "");
      c.rows[kh] = LLVMBuildSelect(k->b, inside, c.rows[kh], prow, "row");
    }
  }
  c.yrow = fptr(&c, yplane, fc_cg_imulc(k, oy, g.x.OW));
  if (cnt_tab) {
    LLVMValueRef n = vload(&c, c.f32, fptr(&c, cnt_tab, oy));
    LLVMValueRef one = LLVMBuildInsertElement(k->b, LLVMGetUndef(c.vt), n, i32c(k, 0), "");
    LLVMValueRef zeros = LLVMConstNull(LLVMVectorType(LLVMInt32TypeInContext(k->ctx), (unsigned)g.x.vl));
    c.row_cnt = LLVMBuildShuffleVector(k->b, one, LLVMGetUndef(c.vt), zeros, "");
  }
  for (int64_t v = 0; v < g.pl.v_lo; v++) {
    int64_t ox0 = v * g.x.vl, left = g.x.OW - ox0;
    emit_vector(&c, NULL, ox0, left < g.x.vl ? (int)left : g.x.vl);
  }
  if (g.pl.v_hi > g.pl.v_lo) {
    FcLoop lv;
    LLVMValueRef ox0 = fc_cg_loop_begin(k, &lv, c64(k, g.pl.v_lo * g.x.vl), c64(k, g.pl.v_hi * g.x.vl), g.x.vl, "ox");
    emit_vector(&c, ox0, 0, g.x.vl);
    fc_cg_loop_end(k, &lv);
  }
  int64_t tail = fc_win_right_tail(&g.x, &g.pl);
  if (tail >= 0) emit_vector(&c, c64(k, tail), 0, g.x.vl);
  for (int64_t v = g.pl.v_hi; v < g.pl.nv && tail < 0; v++) {
    int64_t ox0 = v * g.x.vl, left = g.x.OW - ox0;
    emit_vector(&c, NULL, ox0, left < g.x.vl ? (int)left : g.x.vl);
  }
  fc_cg_loop_end(k, &lr);
  fc_cg_loop_end(k, &lt);
  return FC_OK;
}
