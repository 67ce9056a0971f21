/* kernel_sample.c — kernel emitters of the resampling ops (resize, grid_sample, roi_align) and of the
 * remaining structural ops (einsum, det, random_uniform).
 *
 * They follow the reference evaluators (ir/eval_sample.c, ir/eval_nn.c) step for step, moving as much
 * as the static shapes allow to compile time:
 *   - resize computes, per axis, the taps (input indices premultiplied by the axis stride) and weights of
 *     every output coordinate with the evaluator's tables (ir/resize_map.c), and emits them as constant
 *     tables; the kernel is then a gather (nearest) or a sum over the tensor product of the per-axis taps
 *     (linear, cubic), last axis innermost, in the compute type. An output coordinate without taps is
 *     tf_crop_and_resize's extrapolation. A float linear or cubic resize of the last two axes (the
 *     others identities, no extrapolation: upsampled segmentation logits, feature pyramids) instead runs
 *     separably over rows (resize_rows): each input row is resampled to the output width once into a
 *     small cache, and output rows are vector sums of cached rows, with the same arithmetic.
 *   - grid_sample and roi_align read coordinates at run time; their coordinate arithmetic runs in double
 *     as the evaluators' does. roi_align's batch indices and boxes are data: an index outside [0, N), a
 *     box that is not finite or needs more than ROI_MAX_SAMPLES samples per bin flags a run-time error
 *     (fc_cg_flag_error) and the roi is then computed from batch 0 with no samples.
 *   - einsum is compiled into one loop nest over all labels: output labels outermost (rows of the
 *     result are the parallel iterations), contracted labels inside, the result's last label innermost
 *     over a tile, each operand addressed with per-label strides (repeated labels walk diagonals,
 *     broadcast ones have stride 0).
 *   - det is LU with partial pivoting per matrix, in double, on a stack copy.
 *   - random_uniform is counter based: element i of the result is a function of (key, i) only
 *     (splitmix64's finaliser applied to key + (i + 1) * golden gamma), so results are the same for any
 *     thread count and split. The key is derived from the seed attribute; without one it is a fixed
 *     default (RANDOM_DEFAULT_KEY) mixed with the op's id, so unseeded ops in one model differ from each
 *     other but every run of a program repeats its numbers (the runtime offers no per-run entropy).
 */
#include "codegen.h"
#include "einsum_plan.h"
#include "resize_map.h"
#include "sample_modes.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum {
  TILE = 256,                        /* elements of the innermost accumulation tile */
  DET_MAX_N = 64,                    /* det copies one matrix (n*n doubles) to the stack */
};
/* roi_align: a bin with more samples than this is bad data (a runaway box would otherwise hang). */
#define ROI_MAX_SAMPLES ((double)(1 << 22))
#define RANDOM_DEFAULT_KEY 0x666c6f77632e726eull /* "flowc.rn" */

/* ---- small emit helpers (the shared ones are in cg_util.c) --------------------------------------- */

static const FcType *in_type(const FcKernel *k, int i) { return &k->op->operands[i].value->type; }
static FcArena *arena(FcKernel *k) { return &k->op->graph->module->arena; }

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }
static LLVMValueRef add(FcKernel *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(k->b, a, b, ""); }
static LLVMValueRef sub(FcKernel *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildSub(k->b, a, b, ""); }
static LLVMValueRef mul(FcKernel *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildMul(k->b, a, b, ""); }
static LLVMValueRef mulc(FcKernel *k, LLVMValueRef a, int64_t c) { return c == 1 ? a : mul(k, a, c64(k, c)); }
static LLVMValueRef smin(FcKernel *k, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(k->b, LLVMBuildICmp(k->b, LLVMIntSLT, a, b, ""), a, b, "");
}
static LLVMValueRef smax(FcKernel *k, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(k->b, LLVMBuildICmp(k->b, LLVMIntSGT, a, b, ""), a, b, "");
}
static LLVMValueRef sel(FcKernel *k, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(k->b, c, a, b, "");
}
static LLVMValueRef or1(FcKernel *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildOr(k->b, a, b, ""); }
static LLVMValueRef and1(FcKernel *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAnd(k->b, a, b, ""); }
static LLVMValueRef icmp(FcKernel *k, LLVMIntPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildICmp(k->b, p, a, b, "");
}

/* Double-precision helpers for the coordinate arithmetic. */
static LLVMTypeRef f64t(FcKernel *k) { return LLVMDoubleTypeInContext(k->ctx); }
static LLVMValueRef cd(FcKernel *k, double v) { return LLVMConstReal(f64t(k), v); }
static LLVMValueRef dadd(FcKernel *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFAdd(k->b, a, b, ""); }
static LLVMValueRef dsub(FcKernel *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFSub(k->b, a, b, ""); }
static LLVMValueRef dmul(FcKernel *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFMul(k->b, a, b, ""); }
static LLVMValueRef ddiv(FcKernel *k, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFDiv(k->b, a, b, ""); }
static LLVMValueRef fcmp(FcKernel *k, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFCmp(k->b, p, a, b, "");
}
static LLVMValueRef i2d(FcKernel *k, LLVMValueRef v) { return LLVMBuildSIToFP(k->b, v, f64t(k), ""); }

static LLVMValueRef fun1(FcKernel *k, const char *name, LLVMValueRef x) {
  return fc_cg_intrinsic(k, name, LLVMTypeOf(x), &x, 1);
}

/* A value of float dtype `dt` (already in its compute type) widened to double, and back. */
static LLVMValueRef to_f64(FcKernel *k, LLVMValueRef v) {
  return LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMDoubleTypeKind ? v : LLVMBuildFPExt(k->b, v, f64t(k), "");
}
static LLVMValueRef from_f64(FcKernel *k, LLVMValueRef v, LLVMTypeRef ct) {
  return LLVMGetTypeKind(ct) == LLVMDoubleTypeKind ? v : LLVMBuildFPTrunc(k->b, v, ct, "");
}

static bool is_int_type(LLVMTypeRef t) { return LLVMGetTypeKind(t) == LLVMIntegerTypeKind; }

/* A mutable scalar (promoted to SSA by LLVM). */
static LLVMValueRef var_get(FcKernel *k, LLVMTypeRef t, LLVMValueRef v) { return LLVMBuildLoad2(k->b, t, v, ""); }
static void var_set(FcKernel *k, LLVMValueRef var, LLVMValueRef x) { LLVMBuildStore(k->b, x, var); }

/* A table of reals in type t (float or double), read with LLVMBuildLoad2 through real_at. */
static LLVMValueRef real_table(FcKernel *k, LLVMTypeRef t, const double *v, int64_t n, const char *name) {
  LLVMValueRef *vals = FC_NEW_ARRAY(arena(k), LLVMValueRef, (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) vals[i] = LLVMConstReal(t, v[i]);
  return fc_cg_const_table(k, t, vals, n, name);
}
static LLVMValueRef tload(FcKernel *k, LLVMValueRef table, LLVMValueRef i) { return fc_cg_load(k, FC_DT_I64, table, i); }
static LLVMValueRef rload(FcKernel *k, LLVMTypeRef t, LLVMValueRef table, LLVMValueRef i) {
  return LLVMBuildLoad2(k->b, t, LLVMBuildInBoundsGEP2(k->b, t, table, &i, 1, ""), "");
}

/* if (cond) {A} else {B}: if_else_begin enters A, if_else_mid moves to B, fc_cg_if_end joins. */
typedef struct IfElse {
  LLVMBasicBlockRef other, cont;
} IfElse;
static void if_else_begin(FcKernel *k, IfElse *f, LLVMValueRef cond) {
  LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "then");
  f->other = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "else");
  f->cont = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "endif");
  LLVMBuildCondBr(k->b, cond, then, f->other);
  LLVMPositionBuilderAtEnd(k->b, then);
}
static void if_else_mid(FcKernel *k, IfElse *f) {
  LLVMBuildBr(k->b, f->cont);
  LLVMPositionBuilderAtEnd(k->b, f->other);
}

/* ---- resize: the kernel ----------------------------------------------------------------------------- */

typedef struct ResizeAxis {
  const FcResizeAxis *m;
  LLVMValueRef tap0, idx, w; /* tables; idx premultiplied by the axis stride */
  int64_t stride;
} ResizeAxis;

typedef struct ResizeCtx {
  FcKernel *k;
  FcDtype dt;
  LLVMTypeRef ct;
  int r;
  ResizeAxis ax[FC_DEFAULT_MAX_RANK];
  LLVMValueRef o[FC_DEFAULT_MAX_RANK]; /* the row's output coordinates (all but the last axis) */
  LLVMValueRef tile, t0, tn;
  LLVMValueRef sum; /* scalar slot for the last axis's taps */
} ResizeCtx;

/* Taps of axis d onwards (d < r - 1): off is the input offset so far, w the product of weights. */
static void resize_taps(ResizeCtx *c, int d, LLVMValueRef off, LLVMValueRef w) {
  FcKernel *k = c->k;
  int last = c->r - 1;
  if (d < last) {
    ResizeAxis *a = &c->ax[d];
    if (a->m->identity) {
      resize_taps(c, d + 1, add(k, off, mulc(k, c->o[d], a->stride)), w);
      return;
    }
    FcLoop lt;
    LLVMValueRef lo = tload(k, a->tap0, c->o[d]), hi = tload(k, a->tap0, add(k, c->o[d], c64(k, 1)));
    LLVMValueRef t = fc_cg_loop_begin(k, &lt, lo, hi, 1, "tap");
    resize_taps(c, d + 1, add(k, off, tload(k, a->idx, t)), LLVMBuildFMul(k->b, w, rload(k, c->ct, a->w, t), ""));
    fc_cg_loop_end(k, &lt);
    return;
  }
  ResizeAxis *a = &c->ax[last];
  FcLoop lj;
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(k, 0), c->tn, 1, "j");
  LLVMValueRef ow = add(k, c->t0, j), v;
  if (a->m->identity) {
    v = fc_cg_load(k, c->dt, k->in[0], add(k, off, ow));
  } else {
    var_set(k, c->sum, LLVMConstNull(c->ct));
    FcLoop lt;
    LLVMValueRef lo = tload(k, a->tap0, ow), hi = tload(k, a->tap0, add(k, ow, c64(k, 1)));
    LLVMValueRef t = fc_cg_loop_begin(k, &lt, lo, hi, 1, "tap");
    LLVMValueRef x = fc_cg_load(k, c->dt, k->in[0], add(k, off, tload(k, a->idx, t)));
    var_set(k, c->sum, fc_cg_madd(k, rload(k, c->ct, a->w, t), x, var_get(k, c->ct, c->sum)));
    fc_cg_loop_end(k, &lt);
    v = var_get(k, c->ct, c->sum);
  }
  LLVMValueRef p = fc_cg_tile_at(k, c->ct, c->tile, j);
  LLVMBuildStore(k->b, fc_cg_madd(k, w, v, LLVMBuildLoad2(k->b, c->ct, p, "")), p);
  fc_cg_loop_end(k, &lj);
}

/* ---- resize: separable rows (linear and cubic over the last two axes) ------------------------------ */

enum {
  ROWS_MAX_SCRATCH = 256 * 1024, /* bytes of cached horizontal rows per task */
};

/* Ring slots of the horizontal-row cache: an output row's taps lie within `per` consecutive input rows
 * (clamped at the borders), so input row ih can live in slot ih % per without two taps of one output
 * row colliding. 0 when some output's taps span more (never, by fc_resize_axis_map's construction). */
static int64_t rows_slots(const FcResizeAxis *m, int64_t per) {
  if (m->identity) return 1;
  for (int64_t o = 0; o < m->out; o++) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t t = m->tap0[o]; t < m->tap0[o + 1]; t++) {
      lo = m->idx[t] < lo ? m->idx[t] : lo;
      hi = m->idx[t] > hi ? m->idx[t] : hi;
    }
    if (lo <= hi && hi - lo >= per) return 0;
  }
  return per;
}

/* The separable kernel applies to a float linear or cubic resize whose outer axes (all but the last
 * two) are identities, without extrapolation, whose cache of horizontal rows fits ROWS_MAX_SCRATCH. */
static bool resize_rows_applies(const FcKernel *k, const FcResizeParams *p, const FcResizeAxis *maps) {
  const FcType *xt = in_type(k, 0);
  int r = xt->rank;
  if (r < 2 || (xt->dtype != FC_DT_F32 && xt->dtype != FC_DT_F64)) return false;
  if (p->mode != FC_RESIZE_MODE_LINEAR && p->mode != FC_RESIZE_MODE_CUBIC) return false;
  for (int d = 0; d < r - 2; d++)
    if (!maps[d].identity) return false;
  for (int d = r - 2; d < r; d++)
    for (int64_t o = 0; o < maps[d].out; o++)
      if (maps[d].extrap[o]) return false;
  int64_t slots = rows_slots(&maps[r - 2], fc_resize_taps_per(p->mode));
  int64_t vl = fc_target_lanes(k->target, xt->dtype), owp = (maps[r - 1].out + vl - 1) / vl * vl;
  return slots > 0 && owp <= ROWS_MAX_SCRATCH / slots / (int64_t)fc_dtype_size(xt->dtype);
}

/* The tables of an axis for the row kernel: unscaled input indices, and for an identity axis the
 * one-tap map o -> o of weight 1 (the generic kernel's product of weights starts at 1 too). */
static void rows_tables(FcKernel *k, LLVMTypeRef ct, const FcResizeAxis *m, const char *axis, LLVMValueRef *tap0,
                        LLVMValueRef *idx, LLVMValueRef *w) {
  const int64_t *t0 = m->tap0, *ix = m->idx;
  const double *wv = m->w;
  if (m->identity) {
    int64_t *seq = FC_NEW_ARRAY(arena(k), int64_t, (size_t)m->out + 1);
    double *one = FC_NEW_ARRAY(arena(k), double, (size_t)m->out + 1);
    for (int64_t o = 0; o <= m->out; o++) {
      seq[o] = o;
      one[o] = 1.0;
    }
    t0 = ix = seq;
    wv = one;
  }
  char name[32];
  snprintf(name, sizeof name, "rs_rows_%s_tap0", axis);
  *tap0 = fc_cg_i64_table(k, t0, m->out + 1, name);
  snprintf(name, sizeof name, "rs_rows_%s_idx", axis);
  *idx = fc_cg_i64_table(k, ix, t0[m->out], name);
  snprintf(name, sizeof name, "rs_rows_%s_w", axis);
  *w = real_table(k, ct, wv, t0[m->out], name);
}

/* The vertical step of output columns [ow0, ow0 + lanes) of one row: the sum over the row's taps t in
 * [lo, hi) of w[t] · cache row of idx[t], each a vector of vl columns, stored with a mask when the
 * vector is cut by the row's end. */
static void rows_vertical(FcKernel *k, LLVMTypeRef vt, LLVMValueRef acc, LLVMValueRef lo, LLVMValueRef hi,
                          LLVMValueRef htab[3], LLVMValueRef scr, int64_t slots, int64_t owp, LLVMValueRef ow0,
                          LLVMValueRef out_at, int64_t lanes) {
  LLVMTypeRef ct = LLVMGetElementType(vt);
  unsigned vl = LLVMGetVectorSize(vt);
  LLVMBuildStore(k->b, LLVMConstNull(vt), acc);
  FcLoop lt;
  LLVMValueRef t = fc_cg_loop_begin(k, &lt, lo, hi, 1, "vtap");
  LLVMValueRef slot = LLVMBuildURem(k->b, tload(k, htab[1], t), c64(k, slots), "");
  LLVMValueRef src = LLVMBuildInBoundsGEP2(k->b, ct, scr, (LLVMValueRef[]){add(k, mulc(k, slot, owp), ow0)}, 1, "");
  LLVMValueRef s = LLVMBuildLoad2(k->b, vt, src, "");
  LLVMSetAlignment(s, (unsigned)LLVMABISizeOfType(LLVMGetModuleDataLayout(k->mod), ct));
  LLVMValueRef w = rload(k, ct, htab[2], t);
  LLVMValueRef wv = LLVMBuildShuffleVector(k->b, LLVMBuildInsertElement(k->b, LLVMGetUndef(vt), w, c64(k, 0), ""),
                                           LLVMGetUndef(vt), LLVMConstNull(LLVMVectorType(LLVMInt32TypeInContext(k->ctx), vl)), "");
  LLVMBuildStore(k->b, fc_cg_madd(k, wv, s, LLVMBuildLoad2(k->b, vt, acc, "")), acc);
  fc_cg_loop_end(k, &lt);
  LLVMValueRef v = LLVMBuildLoad2(k->b, vt, acc, "");
  LLVMValueRef dst = LLVMBuildInBoundsGEP2(k->b, ct, k->out[0], (LLVMValueRef[]){add(k, out_at, ow0)}, 1, "");
  if (lanes == vl) {
    LLVMValueRef st = LLVMBuildStore(k->b, v, dst);
    LLVMSetAlignment(st, (unsigned)LLVMABISizeOfType(LLVMGetModuleDataLayout(k->mod), ct));
    return;
  }
  LLVMValueRef bits[64];
  for (unsigned i = 0; i < vl; i++) bits[i] = LLVMConstInt(LLVMInt1TypeInContext(k->ctx), i < (unsigned)lanes, 0);
  fc_cg_masked_store(k, v, dst, LLVMConstVector(bits, vl));
}

/* A float linear or cubic resize of the last two axes (H, W) as two 1-D passes: the horizontal pass
 * resamples whole input rows to the output width into a cache of `slots` rows (scratch), the vertical
 * pass combines the cached rows an output row reads, a vector of output columns at a time. Consecutive
 * output rows of an upsampling read the same input rows, so each input row is resampled horizontally
 * about once per task instead of once per output row and tap. The arithmetic is the generic kernel's,
 * operation for operation (the horizontal sum from zero over the row's W taps, then the vertical sum
 * from zero of weight times that), so the results are the same bit for bit. Outer iterations are output
 * rows of all planes, one chunk per thread so that the cache carries over from row to row. */
static FcStatus resize_rows(FcKernel *k, const FcResizeParams *p, const FcResizeAxis *maps) {
  const FcType *xt = in_type(k, 0);
  int r = xt->rank;
  FcDtype dt = xt->dtype;
  LLVMTypeRef ct = fc_cg_compute_type(k, dt), i64 = fc_cg_i64(k);
  const FcResizeAxis *mh = &maps[r - 2], *mw = &maps[r - 1];
  int64_t IH = mh->in, IW = mw->in, OH = mh->out, OW = mw->out, planes = 1;
  for (int d = 0; d < r - 2; d++) planes *= xt->dims[d]; /* the result's, as the outer axes are identities */
  int64_t per = fc_resize_taps_per(p->mode), slots = rows_slots(mh, per);
  int64_t vl = fc_target_lanes(k->target, dt), owp = (OW + vl - 1) / vl * vl;
  double hwork = mh->identity ? 1.0 : (double)OW * (2.0 * (double)per + 2.0) / (double)(OH > IH ? OH / IH : 1);
  fc_kernel_set_outer(k, planes * OH, (double)OW * (2.0 * (double)per + 2.0) + hwork);
  fc_kernel_one_chunk_per_thread(k);
  LLVMValueRef scr = fc_kernel_scratch(k, slots * owp * (int64_t)fc_dtype_size(dt));
  LLVMValueRef keys = fc_cg_tile_new(k, i64, slots, "rs_rows_key"); /* slot s holds row keys[s] (-1: none) */
  for (int64_t s = 0; s < slots; s++) LLVMBuildStore(k->b, c64(k, -1), fc_cg_tile_at(k, i64, keys, c64(k, s)));
  LLVMValueRef sum = fc_cg_entry_alloca(k, ct, "sum");
  LLVMTypeRef vt = LLVMVectorType(ct, (unsigned)vl);
  LLVMValueRef acc = fc_cg_entry_alloca(k, vt, "acc");
  LLVMValueRef htab[3], wtab[3];
  rows_tables(k, ct, mh, "h", &htab[0], &htab[1], &htab[2]);
  rows_tables(k, ct, mw, "w", &wtab[0], &wtab[1], &wtab[2]);

  FcLoop lr;
  LLVMValueRef row = fc_cg_loop_begin(k, &lr, k->begin, k->end, 1, "row");
  LLVMValueRef plane = LLVMBuildUDiv(k->b, row, c64(k, OH), "plane"), oh = LLVMBuildURem(k->b, row, c64(k, OH), "oh");
  LLVMValueRef lo = tload(k, htab[0], oh), hi = tload(k, htab[0], add(k, oh, c64(k, 1)));
  /* Horizontal pass for the rows this output row reads that the cache lacks. */
  FcLoop lt;
  LLVMValueRef t = fc_cg_loop_begin(k, &lt, lo, hi, 1, "htap");
  LLVMValueRef ih = tload(k, htab[1], t), slot = LLVMBuildURem(k->b, ih, c64(k, slots), "");
  LLVMValueRef key = add(k, mulc(k, plane, IH), ih), keyp = fc_cg_tile_at(k, i64, keys, slot);
  LLVMBasicBlockRef have = fc_cg_if_begin(k, icmp(k, LLVMIntNE, LLVMBuildLoad2(k->b, i64, keyp, ""), key));
  {
    LLVMValueRef xrow = mulc(k, add(k, mulc(k, plane, IH), ih), IW), srow = mulc(k, slot, owp);
    FcLoop lw;
    LLVMValueRef ow = fc_cg_loop_begin(k, &lw, c64(k, 0), c64(k, OW), 1, "ow");
    LLVMValueRef v;
    if (mw->identity) {
      v = fc_cg_load(k, dt, k->in[0], add(k, xrow, ow));
    } else {
      var_set(k, sum, LLVMConstNull(ct));
      FcLoop lx;
      LLVMValueRef tw = fc_cg_loop_begin(k, &lx, tload(k, wtab[0], ow), tload(k, wtab[0], add(k, ow, c64(k, 1))), 1, "wtap");
      LLVMValueRef x = fc_cg_load(k, dt, k->in[0], add(k, xrow, tload(k, wtab[1], tw)));
      var_set(k, sum, fc_cg_madd(k, rload(k, ct, wtab[2], tw), x, var_get(k, ct, sum)));
      fc_cg_loop_end(k, &lx);
      v = var_get(k, ct, sum);
    }
    LLVMBuildStore(k->b, v, LLVMBuildInBoundsGEP2(k->b, ct, scr, (LLVMValueRef[]){add(k, srow, ow)}, 1, ""));
    fc_cg_loop_end(k, &lw);
    LLVMBuildStore(k->b, key, keyp);
  }
  fc_cg_if_end(k, have);
  fc_cg_loop_end(k, &lt);
  /* Vertical pass: whole vectors, then the cut one. */
  LLVMValueRef out_at = mulc(k, row, OW);
  int64_t full = OW / vl * vl;
  if (full > 0) {
    FcLoop lv;
    LLVMValueRef ow0 = fc_cg_loop_begin(k, &lv, c64(k, 0), c64(k, full), vl, "ow0");
    rows_vertical(k, vt, acc, lo, hi, htab, scr, slots, owp, ow0, out_at, vl);
    fc_cg_loop_end(k, &lv);
  }
  if (full < OW) rows_vertical(k, vt, acc, lo, hi, htab, scr, slots, owp, c64(k, full), out_at, OW - full);
  fc_cg_loop_end(k, &lr);
  return FC_OK;
}

/* True (i1) when output coordinate o of axis a has no taps (extrapolation). */
static LLVMValueRef resize_extrap(FcKernel *k, const ResizeAxis *a, LLVMValueRef o) {
  return icmp(k, LLVMIntEQ, tload(k, a->tap0, o), tload(k, a->tap0, add(k, o, c64(k, 1))));
}

/* resize(x) to the static `sizes`: see the file comment. When any axis extrapolates, the output is the
 * extrapolation value (the separable reference gives it times a sum of weights, 1 up to rounding). */
FcStatus fc_kernel_resize(FcKernel *k) {
  const FcOp *op = k->op;
  const FcType *xt = in_type(k, 0), *rt = &op->results[0].type;
  int r = xt->rank;
  FcDtype dt = xt->dtype;
  if (r > FC_DEFAULT_MAX_RANK) return fc_cg_error(k, FC_ERR_UNSUPPORTED, "rank %d is not supported", r);
  FcResizeParams p;
  const char *an, *av;
  if (!fc_resize_params(op, &p, &an, &av)) return fc_cg_error(k, FC_ERR_INPUT, "unknown %s \"%s\"", an, av);
  double extrap = fc_op_attr_float(op, FC_ATTR_EXTRAPOLATION_VALUE, 0.0f);
  if (p.mode != FC_RESIZE_MODE_NEAREST && !fc_dtype_is_float(dt))
    return fc_cg_error(k, FC_ERR_UNSUPPORTED, "%s mode on %s", fc_mode_name(p.mode), fc_dtype_name(dt));
  if (dt == FC_DT_BOOL) return fc_cg_error(k, FC_ERR_UNSUPPORTED, "resize of i1");
  const float *scales, *roi;
  int ns = fc_op_attr_floats(op, FC_ATTR_SCALES, &scales), nr = fc_op_attr_floats(op, FC_ATTR_ROI, &roi);
  if ((ns && ns != r) || (nr && nr != 2 * r))
    return fc_cg_error(k, FC_ERR_INPUT, "scales and roi must have one entry per axis (roi two)");
  int64_t numel;
  if (!fc_type_numel(rt, &numel)) return fc_cg_error(k, FC_ERR_LIMIT, "result is too large");
  LLVMTypeRef ct = fc_cg_compute_type(k, dt);
  if (r == 0) {
    fc_kernel_set_outer(k, 1, 1);
    fc_cg_store(k, dt, k->out[0], c64(k, 0), fc_cg_load(k, dt, k->in[0], c64(k, 0)));
    return FC_OK;
  }
  int64_t OL = rt->dims[r - 1], rows = numel == 0 ? 0 : numel / OL;
  int64_t taps_per = fc_resize_taps_per(p.mode);
  double taps_all = 1;
  ResizeCtx c = {.k = k, .dt = dt, .ct = ct, .r = r};
  FcResizeAxis *maps = FC_NEW_ARRAY(arena(k), FcResizeAxis, (size_t)r);
  int64_t stride = 1;
  for (int d = r - 1; d >= 0; d--) {
    if (xt->dims[d] == 0 && rt->dims[d] > 0) return fc_cg_error(k, FC_ERR_INPUT, "cannot resize the empty axis %d", d);
    double scale = ns ? (double)scales[d] : xt->dims[d] ? (double)rt->dims[d] / (double)xt->dims[d] : 1.0;
    if (!(scale > 0) || !isfinite(scale))
      return fc_cg_error(k, FC_ERR_INPUT, "scale %g of axis %d must be positive", scale, d);
    maps[d].in = xt->dims[d];
    maps[d].out = rt->dims[d];
    if (numel > 0) fc_resize_axis_map(&p, scale, nr ? roi[d] : 0.0f, nr ? roi[r + d] : 1.0f, &maps[d], arena(k));
    c.ax[d].m = &maps[d];
    c.ax[d].stride = stride;
    stride *= xt->dims[d] > 0 ? xt->dims[d] : 1;
    if (numel > 0 && !maps[d].identity) taps_all *= (double)taps_per;
  }
  if (rows > 0 && resize_rows_applies(k, &p, maps)) return resize_rows(k, &p, maps);
  fc_kernel_set_outer(k, rows, (double)OL * (2.0 * taps_all + 4.0));
  if (rows == 0) return FC_OK;

  for (int d = 0; d < r; d++) {
    const FcResizeAxis *m = &maps[d];
    ResizeAxis *a = &c.ax[d];
    if (m->identity) continue;
    int64_t nt = m->tap0[m->out];
    int64_t *scaled = FC_NEW_ARRAY(arena(k), int64_t, (size_t)(nt > 0 ? nt : 1));
    for (int64_t t = 0; t < nt; t++) scaled[t] = m->idx[t] * a->stride;
    a->tap0 = fc_cg_i64_table(k, m->tap0, m->out + 1, "rs_tap0");
    a->idx = fc_cg_i64_table(k, scaled, nt, "rs_idx");
    if (p.mode != FC_RESIZE_MODE_NEAREST) a->w = real_table(k, ct, m->w, nt, "rs_w");
  }
  LLVMValueRef ev = fc_dtype_is_float(dt) ? LLVMConstReal(ct, extrap)
                                          : fc_cg_convert(k, LLVMConstReal(LLVMFloatTypeInContext(k->ctx), extrap),
                                                          FC_DT_F32, dt);
  int64_t T = OL < TILE ? OL : TILE;
  c.tile = fc_cg_tile_new(k, ct, T, "acc");
  c.sum = fc_cg_entry_alloca(k, ct, "sum");

  FcLoop lr;
  LLVMValueRef row = fc_cg_loop_begin(k, &lr, k->begin, k->end, 1, "row");
  fc_cg_unflatten(k, row, rt->dims, r - 1, c.o);
  LLVMValueRef row_ex = LLVMConstInt(LLVMInt1TypeInContext(k->ctx), 0, 0);
  for (int d = 0; d < r - 1; d++)
    if (!maps[d].identity) row_ex = or1(k, row_ex, resize_extrap(k, &c.ax[d], c.o[d]));
  LLVMValueRef out_at = mulc(k, row, OL);
  ResizeAxis *la = &c.ax[r - 1];

  if (p.mode == FC_RESIZE_MODE_NEAREST) {
    /* One gather: the row's base offset from the outer axes, the last axis from its table. */
    LLVMValueRef base = c64(k, 0);
    for (int d = 0; d < r - 1; d++) {
      ResizeAxis *a = &c.ax[d];
      base = add(k, base, a->m->identity ? mulc(k, c.o[d], a->stride) : tload(k, a->idx, tload(k, a->tap0, c.o[d])));
    }
    FcLoop lj;
    LLVMValueRef ow = fc_cg_loop_begin(k, &lj, c64(k, 0), c64(k, OL), 1, "ow");
    LLVMValueRef ex = row_ex, off = ow;
    if (!la->m->identity) {
      /* An extrapolated ow has no tap of its own: its tap0 is the next one's, or the end. */
      ex = or1(k, ex, resize_extrap(k, la, ow));
      LLVMValueRef t = smin(k, tload(k, la->tap0, ow), c64(k, la->m->tap0[la->m->out] - 1));
      off = tload(k, la->idx, smax(k, t, c64(k, 0)));
    }
    LLVMValueRef at = sel(k, ex, c64(k, 0), add(k, base, off));
    fc_cg_store(k, dt, k->out[0], add(k, out_at, ow), sel(k, ex, ev, fc_cg_load(k, dt, k->in[0], at)));
    fc_cg_loop_end(k, &lj);
  } else {
    IfElse f;
    if_else_begin(k, &f, row_ex);
    {
      FcLoop lj;
      LLVMValueRef ow = fc_cg_loop_begin(k, &lj, c64(k, 0), c64(k, OL), 1, "ow");
      fc_cg_store(k, dt, k->out[0], add(k, out_at, ow), ev);
      fc_cg_loop_end(k, &lj);
    }
    if_else_mid(k, &f);
    {
      FcLoop lt;
      c.t0 = fc_cg_loop_begin(k, &lt, c64(k, 0), c64(k, OL), T, "t0");
      c.tn = smin(k, c64(k, T), sub(k, c64(k, OL), c.t0));
      FcLoop lf;
      LLVMValueRef j = fc_cg_loop_begin(k, &lf, c64(k, 0), c.tn, 1, "fill");
      LLVMBuildStore(k->b, LLVMConstNull(ct), fc_cg_tile_at(k, ct, c.tile, j));
      fc_cg_loop_end(k, &lf);
      resize_taps(&c, 0, c64(k, 0), LLVMConstReal(ct, 1.0));
      FcLoop ls;
      j = fc_cg_loop_begin(k, &ls, c64(k, 0), c.tn, 1, "st");
      LLVMValueRef ow = add(k, c.t0, j);
      LLVMValueRef val = LLVMBuildLoad2(k->b, ct, fc_cg_tile_at(k, ct, c.tile, j), "");
      if (!la->m->identity) val = sel(k, resize_extrap(k, la, ow), ev, val);
      fc_cg_store(k, dt, k->out[0], add(k, out_at, ow), val);
      fc_cg_loop_end(k, &ls);
      fc_cg_loop_end(k, &lt);
    }
    fc_cg_if_end(k, f.cont);
  }
  fc_cg_loop_end(k, &lr);
  return FC_OK;
}

/* ---- grid_sample ------------------------------------------------------------------------------------ */

/* Reflects x into [lo, hi] by the nearer border until it fits (ONNX Runtime's GsReflect). */
static LLVMValueRef gs_reflect(FcKernel *k, LLVMValueRef x, double lo, double hi) {
  double range = hi - lo;
  if (!(range > 0)) return cd(k, lo); /* a one-pixel axis: everything reflects onto it, NaN included */
  LLVMValueRef below = fcmp(k, LLVMRealOLT, x, cd(k, lo)), above = fcmp(k, LLVMRealOGT, x, cd(k, hi));
  LLVMValueRef res[2];
  for (int side = 0; side < 2; side++) {
    LLVMValueRef dx = side == 0 ? dsub(k, cd(k, lo), x) : dsub(k, x, cd(k, hi));
    LLVMValueRef n = fun1(k, "llvm.floor", ddiv(k, dx, cd(k, range)));
    LLVMValueRef rem = dsub(k, dx, dmul(k, n, cd(k, range)));
    /* fmod(n, 2) == 0 for the integral n >= 0 */
    LLVMValueRef half = fun1(k, "llvm.floor", dmul(k, n, cd(k, 0.5)));
    LLVMValueRef even = fcmp(k, LLVMRealOEQ, dsub(k, n, dmul(k, half, cd(k, 2.0))), cd(k, 0.0));
    LLVMValueRef near = side == 0 ? dadd(k, cd(k, lo), rem) : dsub(k, cd(k, hi), rem);
    LLVMValueRef far = side == 0 ? dsub(k, cd(k, hi), rem) : dadd(k, cd(k, lo), rem);
    res[side] = sel(k, even, near, far);
  }
  return sel(k, below, res[0], sel(k, above, res[1], x));
}

/* Coordinates beyond the integer range are pinned far outside the plane (the evaluator's gs_int). */
static LLVMValueRef gs_int(FcKernel *k, LLVMValueRef v) {
  v = sel(k, fcmp(k, LLVMRealOGT, v, cd(k, -1e15)), v, cd(k, -1e15));
  v = sel(k, fcmp(k, LLVMRealOGT, v, cd(k, 1e15)), cd(k, 1e15), v);
  return LLVMBuildFPToSI(k->b, v, fc_cg_i64(k), "");
}

static LLVMValueRef clampi(FcKernel *k, LLVMValueRef v, int64_t lo, int64_t hi) {
  return smin(k, smax(k, v, c64(k, lo)), c64(k, hi));
}

typedef struct GsTap {
  LLVMValueRef pos;   /* y * W + x inside the plane (0 where invalid) */
  LLVMValueRef valid; /* i1: false for a zeros-padded pixel outside */
  LLVMValueRef w;     /* double weight */
} GsTap;

typedef struct GsGeom {
  int64_t H, W;
  FcMode pad; /* FC_GRID_PAD_* */
  double lo_x, hi_x, lo_y, hi_y;
} GsGeom;

/* The pixel (py, px) of the plane under the padding mode (the evaluator's gs_pixel). */
static GsTap gs_tap(FcKernel *k, const GsGeom *g, LLVMValueRef py, LLVMValueRef px, LLVMValueRef w) {
  GsTap t = {.w = w, .valid = LLVMConstInt(LLVMInt1TypeInContext(k->ctx), 1, 0)};
  switch (g->pad) {
  case FC_GRID_PAD_ZEROS:
    t.valid = and1(k, icmp(k, LLVMIntULT, px, c64(k, g->W)), icmp(k, LLVMIntULT, py, c64(k, g->H)));
    break;
  case FC_GRID_PAD_BORDER:
    px = clampi(k, px, 0, g->W - 1);
    py = clampi(k, py, 0, g->H - 1);
    break;
  default: /* FC_GRID_PAD_REFLECTION */
    px = LLVMBuildFPToSI(k->b, gs_reflect(k, i2d(k, px), g->lo_x, g->hi_x), fc_cg_i64(k), "");
    py = LLVMBuildFPToSI(k->b, gs_reflect(k, i2d(k, py), g->lo_y, g->hi_y), fc_cg_i64(k), "");
    px = clampi(k, px, 0, g->W - 1);
    py = clampi(k, py, 0, g->H - 1);
    break;
  }
  t.pos = sel(k, t.valid, add(k, mulc(k, py, g->W), px), c64(k, 0));
  return t;
}

static void gs_cubic_coeffs(FcKernel *k, LLVMValueRef t, LLVMValueRef *c) {
  const double A = -0.75;
  LLVMValueRef x = fun1(k, "llvm.fabs", t);
  LLVMValueRef x1 = dadd(k, x, cd(k, 1)), q = dsub(k, cd(k, 1), x), q2 = dsub(k, cd(k, 2), x);
  /* ((A*u - 5A)*u + 8A)*u - 4A for the outer taps, ((A+2)*u - (A+3))*u*u + 1 for the inner ones */
  LLVMValueRef u[4] = {x1, x, q, q2};
  for (int i = 0; i < 4; i++) {
    if (i == 0 || i == 3) {
      LLVMValueRef v = dsub(k, dmul(k, cd(k, A), u[i]), cd(k, 5 * A));
      v = dadd(k, dmul(k, v, u[i]), cd(k, 8 * A));
      c[i] = dsub(k, dmul(k, v, u[i]), cd(k, 4 * A));
    } else {
      LLVMValueRef v = dsub(k, dmul(k, cd(k, A + 2), u[i]), cd(k, A + 3));
      c[i] = dadd(k, dmul(k, dmul(k, v, u[i]), u[i]), cd(k, 1));
    }
  }
}

/* grid_sample(x[N,C,H,W], grid[N,Ho,Wo,2]): one outer iteration per (n, ho); per output position the
 * taps are computed once and applied to every channel. */
FcStatus fc_kernel_grid_sample(FcKernel *k) {
  const FcOp *op = k->op;
  const FcType *xt = in_type(k, 0), *gt = in_type(k, 1), *rt = &op->results[0].type;
  if (xt->rank != 4 || gt->rank != 4) return fc_cg_error(k, FC_ERR_UNSUPPORTED, "only 2-D sampling is supported");
  FcDtype dt = xt->dtype, gdt = gt->dtype;
  int64_t N = xt->dims[0], C = xt->dims[1], H = xt->dims[2], W = xt->dims[3], Ho = gt->dims[1], Wo = gt->dims[2];
  FcMode mode, pad;
  const char *s;
  if (!fc_op_mode(op, FC_ML_GRID_MODE, &mode, &s)) return fc_cg_error(k, FC_ERR_INPUT, "unknown mode \"%s\"", s);
  if (!fc_op_mode(op, FC_ML_GRID_PAD, &pad, &s)) return fc_cg_error(k, FC_ERR_INPUT, "unknown padding_mode \"%s\"", s);
  bool align = fc_op_attr_int(op, FC_ATTR_ALIGN_CORNERS, 0) != 0;
  int ntaps = mode == FC_GRID_MODE_NEAREST ? 1 : mode == FC_GRID_MODE_BILINEAR ? 4 : 16;
  int64_t numel;
  if (!fc_type_numel(rt, &numel)) return fc_cg_error(k, FC_ERR_LIMIT, "result is too large");
  int64_t rows = numel == 0 ? 0 : N * Ho;
  fc_kernel_set_outer(k, rows, (double)Wo * ((double)C * (2.0 * ntaps + 1) + 30.0 * ntaps));
  if (rows == 0) return FC_OK;
  LLVMTypeRef ct = fc_cg_compute_type(k, dt);
  bool empty = H == 0 || W == 0;
  if (empty && pad != FC_GRID_PAD_ZEROS)
    return fc_cg_error(k, FC_ERR_INPUT, "cannot sample an empty image with padding");
  GsGeom g = {.H = H, .W = W, .pad = pad};
  g.lo_x = align ? 0.0 : -0.5;
  g.hi_x = align ? (double)W - 1 : (double)W - 0.5;
  g.lo_y = align ? 0.0 : -0.5;
  g.hi_y = align ? (double)H - 1 : (double)H - 0.5;

  FcLoop lr;
  LLVMValueRef row = fc_cg_loop_begin(k, &lr, k->begin, k->end, 1, "row");
  LLVMValueRef b = LLVMBuildUDiv(k->b, row, c64(k, Ho), ""), ho = LLVMBuildURem(k->b, row, c64(k, Ho), "");
  FcLoop lw;
  LLVMValueRef wo = fc_cg_loop_begin(k, &lw, c64(k, 0), c64(k, Wo), 1, "wo");
  LLVMValueRef obase = add(k, mulc(k, mulc(k, b, C), Ho * Wo), add(k, mulc(k, ho, Wo), wo)); /* channel 0 */
  if (empty) {
    /* No pixel: every zeros-padded sample is 0. */
    FcLoop lc;
    LLVMValueRef ch = fc_cg_loop_begin(k, &lc, c64(k, 0), c64(k, C), 1, "c");
    fc_cg_store(k, dt, k->out[0], add(k, obase, mulc(k, ch, Ho * Wo)), LLVMConstNull(ct));
    fc_cg_loop_end(k, &lc);
    fc_cg_loop_end(k, &lw);
    fc_cg_loop_end(k, &lr);
    return FC_OK;
  }
  LLVMValueRef gi = mulc(k, add(k, mulc(k, row, Wo), wo), 2);
  LLVMValueRef nx = to_f64(k, fc_cg_load(k, gdt, k->in[1], gi));
  LLVMValueRef ny = to_f64(k, fc_cg_load(k, gdt, k->in[1], add(k, gi, c64(k, 1))));
  LLVMValueRef x, y;
  if (align) {
    x = dmul(k, ddiv(k, dadd(k, nx, cd(k, 1)), cd(k, 2)), cd(k, (double)(W - 1)));
    y = dmul(k, ddiv(k, dadd(k, ny, cd(k, 1)), cd(k, 2)), cd(k, (double)(H - 1)));
  } else {
    x = ddiv(k, dsub(k, dmul(k, dadd(k, nx, cd(k, 1)), cd(k, (double)W)), cd(k, 1)), cd(k, 2));
    y = ddiv(k, dsub(k, dmul(k, dadd(k, ny, cd(k, 1)), cd(k, (double)H)), cd(k, 1)), cd(k, 2));
  }
  if (mode == FC_GRID_MODE_NEAREST) { /* nearest rounds half to even, before padding */
    x = fun1(k, "llvm.roundeven", x);
    y = fun1(k, "llvm.roundeven", y);
  }
  LLVMValueRef outside = or1(k, or1(k, fcmp(k, LLVMRealOLT, x, cd(k, g.lo_x)), fcmp(k, LLVMRealOGT, x, cd(k, g.hi_x))),
                             or1(k, fcmp(k, LLVMRealOLT, y, cd(k, g.lo_y)), fcmp(k, LLVMRealOGT, y, cd(k, g.hi_y))));
  if (pad == FC_GRID_PAD_BORDER) {
    LLVMValueRef xb = sel(k, fcmp(k, LLVMRealOLT, x, cd(k, 0)), cd(k, 0),
                          sel(k, fcmp(k, LLVMRealOGT, x, cd(k, (double)(W - 1))), cd(k, (double)(W - 1)), x));
    LLVMValueRef yb = sel(k, fcmp(k, LLVMRealOLT, y, cd(k, 0)), cd(k, 0),
                          sel(k, fcmp(k, LLVMRealOGT, y, cd(k, (double)(H - 1))), cd(k, (double)(H - 1)), y));
    x = sel(k, outside, xb, x);
    y = sel(k, outside, yb, y);
  } else if (pad == FC_GRID_PAD_REFLECTION) {
    x = sel(k, outside, gs_reflect(k, x, g.lo_x, g.hi_x), x);
    y = sel(k, outside, gs_reflect(k, y, g.lo_y, g.hi_y), y);
  }
  LLVMValueRef is_nan = or1(k, fcmp(k, LLVMRealUNO, x, x), fcmp(k, LLVMRealUNO, y, y));
  GsTap taps[16];
  if (mode == FC_GRID_MODE_NEAREST) {
    taps[0] = gs_tap(k, &g, gs_int(k, y), gs_int(k, x), cd(k, 1.0));
  } else if (mode == FC_GRID_MODE_BILINEAR) {
    LLVMValueRef x1 = gs_int(k, fun1(k, "llvm.floor", x)), y1 = gs_int(k, fun1(k, "llvm.floor", y));
    LLVMValueRef dx2 = dsub(k, i2d(k, add(k, x1, c64(k, 1))), x), dx1 = dsub(k, x, i2d(k, x1));
    LLVMValueRef dy2 = dsub(k, i2d(k, add(k, y1, c64(k, 1))), y), dy1 = dsub(k, y, i2d(k, y1));
    LLVMValueRef x2 = add(k, x1, c64(k, 1)), y2 = add(k, y1, c64(k, 1));
    taps[0] = gs_tap(k, &g, y1, x1, dmul(k, dy2, dx2));
    taps[1] = gs_tap(k, &g, y1, x2, dmul(k, dy2, dx1));
    taps[2] = gs_tap(k, &g, y2, x1, dmul(k, dy1, dx2));
    taps[3] = gs_tap(k, &g, y2, x2, dmul(k, dy1, dx1));
  } else {
    LLVMValueRef x0 = sub(k, gs_int(k, fun1(k, "llvm.floor", x)), c64(k, 1));
    LLVMValueRef y0 = sub(k, gs_int(k, fun1(k, "llvm.floor", y)), c64(k, 1));
    LLVMValueRef cx[4], cy[4];
    gs_cubic_coeffs(k, dsub(k, dsub(k, x, i2d(k, x0)), cd(k, 1)), cx);
    gs_cubic_coeffs(k, dsub(k, dsub(k, y, i2d(k, y0)), cd(k, 1)), cy);
    for (int h = 0; h < 4; h++)
      for (int w = 0; w < 4; w++)
        taps[h * 4 + w] = gs_tap(k, &g, add(k, y0, c64(k, h)), add(k, x0, c64(k, w)), dmul(k, cy[h], cx[w]));
  }
  FcLoop lc;
  LLVMValueRef ch = fc_cg_loop_begin(k, &lc, c64(k, 0), c64(k, C), 1, "c");
  LLVMValueRef plane = mulc(k, add(k, mulc(k, b, C), ch), H * W);
  LLVMValueRef acc = cd(k, 0.0);
  for (int t = 0; t < ntaps; t++) {
    LLVMValueRef px = to_f64(k, fc_cg_load(k, dt, k->in[0], add(k, plane, taps[t].pos)));
    px = sel(k, taps[t].valid, px, cd(k, 0.0));
    acc = t == 0 ? dmul(k, taps[t].w, px) : dadd(k, acc, dmul(k, taps[t].w, px));
  }
  acc = sel(k, is_nan, cd(k, NAN), acc);
  fc_cg_store(k, dt, k->out[0], add(k, obase, mulc(k, ch, Ho * Wo)), from_f64(k, acc, ct));
  fc_cg_loop_end(k, &lc);
  fc_cg_loop_end(k, &lw);
  fc_cg_loop_end(k, &lr);
  return FC_OK;
}

/* ---- roi_align ---------------------------------------------------------------------------------------- */

/* std::max as ONNX Runtime's kernel uses it: the first argument unless the second is larger. */
static LLVMValueRef std_max(FcKernel *k, LLVMValueRef a, LLVMValueRef b) {
  return sel(k, fcmp(k, LLVMRealOLT, a, b), b, a);
}

static LLVMValueRef is_finite(FcKernel *k, LLVMValueRef v) {
  return fcmp(k, LLVMRealOLT, fun1(k, "llvm.fabs", v), cd(k, INFINITY));
}

/* roi_align(x[N,C,H,W], rois[R,4], batch_indices[R]): one outer iteration per (roi, channel). The
 * sampling grid of a bin is gh x gw samples (sampling_ratio, or ceil(roi size / output size) when it
 * is 0, known only at run time); each sample is the bilinear interpolation of its four neighbours
 * (ONNX Runtime's pre_calc, with samples more than a pixel outside contributing zero). */
FcStatus fc_kernel_roi_align(FcKernel *k) {
  const FcOp *op = k->op;
  const FcType *xt = in_type(k, 0), *bt = in_type(k, 1), *it = in_type(k, 2), *rt = &op->results[0].type;
  FcDtype dt = xt->dtype;
  int64_t oh = fc_op_attr_int(op, FC_ATTR_OUTPUT_HEIGHT, 1), ow = fc_op_attr_int(op, FC_ATTR_OUTPUT_WIDTH, 1);
  int64_t ratio = fc_op_attr_int(op, FC_ATTR_SAMPLING_RATIO, 0);
  double spatial_scale = fc_op_attr_float(op, FC_ATTR_SPATIAL_SCALE, 1.0f);
  FcMode mode, ctm;
  const char *s;
  if (!fc_op_mode(op, FC_ML_ROI_MODE, &mode, &s)) return fc_cg_error(k, FC_ERR_INPUT, "unknown mode \"%s\"", s);
  if (!fc_op_mode(op, FC_ML_ROI_CTM, &ctm, &s))
    return fc_cg_error(k, FC_ERR_INPUT, "unknown coordinate_transformation_mode \"%s\"", s);
  bool is_max = mode == FC_ROI_MODE_MAX, half_pixel = ctm == FC_ROI_CTM_HALF_PIXEL;
  if (xt->rank != 4 || bt->rank != 2 || it->rank != 1 || oh < 1 || ow < 1 || ratio < 0)
    return fc_cg_error(k, FC_ERR_INTERNAL, "operands or attributes are malformed");
  int64_t N = xt->dims[0], C = xt->dims[1], H = xt->dims[2], W = xt->dims[3], R = bt->dims[0], numel;
  if (!fc_type_numel(rt, &numel)) return fc_cg_error(k, FC_ERR_LIMIT, "result is too large");
  int64_t rows = numel == 0 ? 0 : R * C;
  double per_bin = ratio > 0 ? (double)(ratio * ratio) : 4.0;
  fc_kernel_set_outer(k, rows, (double)(oh * ow) * per_bin * 24.0 + 40.0);
  if (rows == 0) return FC_OK;
  if (H == 0 || W == 0) return fc_cg_error(k, FC_ERR_INPUT, "cannot align rois on an empty feature map");
  LLVMTypeRef ct = fc_cg_compute_type(k, dt), i64 = fc_cg_i64(k);
  LLVMValueRef acc = fc_cg_entry_alloca(k, f64t(k), "acc");

  FcLoop lr;
  LLVMValueRef row = fc_cg_loop_begin(k, &lr, k->begin, k->end, 1, "row");
  LLVMValueRef ri = LLVMBuildUDiv(k->b, row, c64(k, C), ""), ch = LLVMBuildURem(k->b, row, c64(k, C), "");
  LLVMValueRef bidx = fc_cg_convert(k, fc_cg_load(k, it->dtype, k->in[2], ri), it->dtype, FC_DT_I64);
  LLVMValueRef bad_b = icmp(k, LLVMIntUGE, bidx, c64(k, N));
  bidx = sel(k, bad_b, c64(k, 0), bidx);
  double offset = half_pixel ? 0.5 : 0.0;
  LLVMValueRef coord[4];
  for (int q = 0; q < 4; q++) {
    LLVMValueRef v = to_f64(k, fc_cg_load(k, bt->dtype, k->in[1], add(k, mulc(k, ri, 4), c64(k, q))));
    coord[q] = dsub(k, dmul(k, v, cd(k, spatial_scale)), cd(k, offset));
  }
  LLVMValueRef sw = coord[0], sh = coord[1];
  LLVMValueRef rw = dsub(k, coord[2], sw), rh = dsub(k, coord[3], sh);
  if (!half_pixel) { /* malformed rois are forced to 1x1 */
    rw = std_max(k, rw, cd(k, 1.0));
    rh = std_max(k, rh, cd(k, 1.0));
  }
  LLVMValueRef finite = and1(k, and1(k, is_finite(k, rw), is_finite(k, rh)), and1(k, is_finite(k, sw), is_finite(k, sh)));
  LLVMValueRef bh = ddiv(k, rh, cd(k, (double)oh)), bw = ddiv(k, rw, cd(k, (double)ow));
  LLVMValueRef ghd = ratio > 0 ? cd(k, (double)ratio) : fun1(k, "llvm.ceil", bh);
  LLVMValueRef gwd = ratio > 0 ? cd(k, (double)ratio) : fun1(k, "llvm.ceil", bw);
  ghd = sel(k, fcmp(k, LLVMRealOGT, ghd, cd(k, 0)), ghd, cd(k, 0));
  gwd = sel(k, fcmp(k, LLVMRealOGT, gwd, cd(k, 0)), gwd, cd(k, 0));
  LLVMValueRef too_many = LLVMBuildNot(k->b, fcmp(k, LLVMRealOLE, dmul(k, ghd, gwd), cd(k, ROI_MAX_SAMPLES)), "");
  LLVMValueRef bad_box = or1(k, LLVMBuildNot(k->b, finite, ""), too_many);
  fc_cg_flag_error(k, or1(k, bad_b, bad_box));
  ghd = sel(k, bad_box, cd(k, 0), ghd);
  gwd = sel(k, bad_box, cd(k, 0), gwd);
  /* Bounded by ROI_MAX_SAMPLES now, so the conversions are exact. */
  LLVMValueRef gh = LLVMBuildFPToSI(k->b, sel(k, fcmp(k, LLVMRealOLE, ghd, cd(k, ROI_MAX_SAMPLES)), ghd, cd(k, 0)), i64, "");
  LLVMValueRef gw = LLVMBuildFPToSI(k->b, sel(k, fcmp(k, LLVMRealOLE, gwd, cd(k, ROI_MAX_SAMPLES)), gwd, cd(k, 0)), i64, "");
  LLVMValueRef ghw = mul(k, gh, gw);
  LLVMValueRef count = i2d(k, smax(k, ghw, c64(k, 1)));
  LLVMValueRef ghf = i2d(k, gh), gwf = i2d(k, gw);
  LLVMValueRef plane = mulc(k, add(k, mulc(k, bidx, C), ch), H * W);
  LLVMValueRef obase = mulc(k, row, oh * ow);

  FcLoop lph;
  LLVMValueRef ph = fc_cg_loop_begin(k, &lph, c64(k, 0), c64(k, oh), 1, "ph");
  FcLoop lpw;
  LLVMValueRef pw = fc_cg_loop_begin(k, &lpw, c64(k, 0), c64(k, ow), 1, "pw");
  var_set(k, acc, cd(k, 0.0));
  FcLoop liy;
  LLVMValueRef iy = fc_cg_loop_begin(k, &liy, c64(k, 0), gh, 1, "iy");
  LLVMValueRef y = dadd(k, dadd(k, sh, dmul(k, i2d(k, ph), bh)),
                        ddiv(k, dmul(k, dadd(k, i2d(k, iy), cd(k, 0.5)), bh), ghf));
  FcLoop lix;
  LLVMValueRef ix = fc_cg_loop_begin(k, &lix, c64(k, 0), gw, 1, "ix");
  LLVMValueRef x = dadd(k, dadd(k, sw, dmul(k, i2d(k, pw), bw)),
                        ddiv(k, dmul(k, dadd(k, i2d(k, ix), cd(k, 0.5)), bw), gwf));
  /* The sample's four taps (the evaluator's roi_sample). */
  LLVMValueRef out = or1(k, or1(k, fcmp(k, LLVMRealOLT, y, cd(k, -1.0)), fcmp(k, LLVMRealOGT, y, cd(k, (double)H))),
                         or1(k, fcmp(k, LLVMRealOLT, x, cd(k, -1.0)), fcmp(k, LLVMRealOGT, x, cd(k, (double)W))));
  LLVMValueRef yc = sel(k, fcmp(k, LLVMRealOGT, y, cd(k, 0)), y, cd(k, 0));
  LLVMValueRef xc = sel(k, fcmp(k, LLVMRealOGT, x, cd(k, 0)), x, cd(k, 0));
  /* Clamp before converting so out-of-range samples (masked below) convert safely. */
  LLVMValueRef yl = LLVMBuildFPToSI(k->b, sel(k, fcmp(k, LLVMRealOLT, yc, cd(k, (double)H)), yc, cd(k, (double)H)), i64, "");
  LLVMValueRef xl = LLVMBuildFPToSI(k->b, sel(k, fcmp(k, LLVMRealOLT, xc, cd(k, (double)W)), xc, cd(k, (double)W)), i64, "");
  LLVMValueRef yedge = icmp(k, LLVMIntSGE, yl, c64(k, H - 1)), xedge = icmp(k, LLVMIntSGE, xl, c64(k, W - 1));
  yl = sel(k, yedge, c64(k, H - 1), yl);
  xl = sel(k, xedge, c64(k, W - 1), xl);
  LLVMValueRef yh = sel(k, yedge, yl, add(k, yl, c64(k, 1))), xh = sel(k, xedge, xl, add(k, xl, c64(k, 1)));
  yc = sel(k, yedge, i2d(k, yl), yc);
  xc = sel(k, xedge, i2d(k, xl), xc);
  LLVMValueRef ly = dsub(k, yc, i2d(k, yl)), lx = dsub(k, xc, i2d(k, xl));
  LLVMValueRef hy = dsub(k, cd(k, 1.0), ly), hx = dsub(k, cd(k, 1.0), lx);
  LLVMValueRef pos[4] = {add(k, mulc(k, yl, W), xl), add(k, mulc(k, yl, W), xh), add(k, mulc(k, yh, W), xl),
                         add(k, mulc(k, yh, W), xh)};
  LLVMValueRef wt[4] = {dmul(k, hy, hx), dmul(k, hy, lx), dmul(k, ly, hx), dmul(k, ly, lx)};
  LLVMValueRef t[4];
  for (int q = 0; q < 4; q++) {
    LLVMValueRef p = sel(k, out, c64(k, 0), pos[q]), w = sel(k, out, cd(k, 0.0), wt[q]);
    t[q] = dmul(k, w, to_f64(k, fc_cg_load(k, dt, k->in[0], add(k, plane, p))));
  }
  LLVMValueRef a = var_get(k, f64t(k), acc);
  if (!is_max) {
    var_set(k, acc, dadd(k, a, dadd(k, dadd(k, dadd(k, t[0], t[1]), t[2]), t[3])));
  } else {
    LLVMValueRef v = std_max(k, std_max(k, std_max(k, t[0], t[1]), t[2]), t[3]);
    LLVMValueRef first = and1(k, icmp(k, LLVMIntEQ, iy, c64(k, 0)), icmp(k, LLVMIntEQ, ix, c64(k, 0)));
    var_set(k, acc, sel(k, first, v, std_max(k, a, v)));
  }
  fc_cg_loop_end(k, &lix);
  fc_cg_loop_end(k, &liy);
  LLVMValueRef res = var_get(k, f64t(k), acc);
  if (!is_max) res = ddiv(k, res, count);
  fc_cg_store(k, dt, k->out[0], add(k, obase, add(k, mulc(k, ph, ow), pw)), from_f64(k, res, ct));
  fc_cg_loop_end(k, &lpw);
  fc_cg_loop_end(k, &lph);
  fc_cg_loop_end(k, &lr);
  return FC_OK;
}

/* ---- einsum ------------------------------------------------------------------------------------------ */

/* The equation compiled (ir/einsum_plan.c, shared with the evaluator): loop labels in order (output
 * labels first), their sizes, and per operand the element stride of each loop label. */
typedef FcEinsumPlan Ein;

static FcStatus ein_compile(FcKernel *k, Ein *e) {
  const FcOp *op = k->op;
  int nops = op->n_operands;
  if (nops > FC_EIN_MAX_OPS) return fc_cg_error(k, FC_ERR_UNSUPPORTED, "more than %d operands", FC_EIN_MAX_OPS);
  const FcType *types[FC_EIN_MAX_OPS];
  for (int i = 0; i < nops; i++) types[i] = in_type(k, i);
  char why[512];
  FcStatus st = fc_einsum_plan(fc_op_attr_str(op, FC_ATTR_EQUATION, ""), nops, types, &op->results[0].type,
                               arena(k), e, why, sizeof why);
  return st == FC_OK ? FC_OK : fc_cg_error(k, st, "%s", why);
}

typedef struct EinCtx {
  FcKernel *k;
  const Ein *e;
  FcDtype dt;
  LLVMTypeRef ct;
  LLVMValueRef tile, t0, tn;
} EinCtx;

/* Contracted loop j (n_out <= j < nl) onwards: off[i] is operand i's offset so far. */
static void ein_loops(EinCtx *c, int j, LLVMValueRef *off) {
  FcKernel *k = c->k;
  const Ein *e = c->e;
  if (j < e->nl) {
    FcLoop l;
    LLVMValueRef v = fc_cg_loop_begin(k, &l, c64(k, 0), c64(k, e->dims[j]), 1, "sum");
    LLVMValueRef next[FC_EIN_MAX_OPS];
    for (int i = 0; i < e->nops; i++) next[i] = e->strides[i][j] ? add(k, off[i], mulc(k, v, e->strides[i][j])) : off[i];
    ein_loops(c, j + 1, next);
    fc_cg_loop_end(k, &l);
    return;
  }
  /* Innermost: the tile along the result's last label (stride 0 in every operand without it). */
  int last = e->n_out - 1;
  FcLoop lj;
  LLVMValueRef jj = fc_cg_loop_begin(k, &lj, c64(k, 0), c->tn, 1, "j");
  LLVMValueRef pos = add(k, c->t0, jj), prod = NULL;
  for (int i = 0; i < e->nops; i++) {
    LLVMValueRef at = off[i];
    if (last >= 0 && e->strides[i][last]) at = add(k, at, mulc(k, pos, e->strides[i][last]));
    LLVMValueRef x = fc_cg_load(k, c->dt, k->in[i], at);
    prod = prod ? (is_int_type(c->ct) ? mul(k, prod, x) : LLVMBuildFMul(k->b, prod, x, "")) : x;
  }
  LLVMValueRef p = fc_cg_tile_at(k, c->ct, c->tile, jj), acc = LLVMBuildLoad2(k->b, c->ct, p, "");
  LLVMBuildStore(k->b, is_int_type(c->ct) ? add(k, acc, prod) : LLVMBuildFAdd(k->b, acc, prod, ""), p);
  fc_cg_loop_end(k, &lj);
}

/* einsum: one outer iteration per row of the result (all output labels but the last). */
FcStatus fc_kernel_einsum(FcKernel *k) {
  Ein e;
  FcStatus st = ein_compile(k, &e);
  if (st != FC_OK) return st;
  const FcType *rt = &k->op->results[0].type;
  FcDtype dt = rt->dtype;
  if (dt == FC_DT_BOOL) return fc_cg_error(k, FC_ERR_UNSUPPORTED, "einsum on i1");
  int64_t numel, con = 1;
  if (!fc_type_numel(rt, &numel)) return fc_cg_error(k, FC_ERR_LIMIT, "result is too large");
  for (int j = e.n_out; j < e.nl; j++)
    if (!fc_checked_mul(con, e.dims[j], &con)) return fc_cg_error(k, FC_ERR_LIMIT, "too many contracted elements");
  int64_t L = e.n_out > 0 ? rt->dims[e.n_out - 1] : 1;
  int64_t rows = numel == 0 ? 0 : numel / L;
  fc_kernel_set_outer(k, rows, (double)L * ((double)con * (double)(e.nops + 1) + 1.0));
  if (rows == 0) return FC_OK;
  EinCtx c = {.k = k, .e = &e, .dt = dt, .ct = fc_cg_compute_type(k, dt)};
  int64_t T = L < TILE ? L : TILE;
  c.tile = fc_cg_tile_new(k, c.ct, T, "acc");

  FcLoop lr;
  LLVMValueRef row = fc_cg_loop_begin(k, &lr, k->begin, k->end, 1, "row");
  LLVMValueRef idx[FC_EIN_MAX_LABELS], off[FC_EIN_MAX_OPS];
  int nrow = e.n_out > 0 ? e.n_out - 1 : 0;
  fc_cg_unflatten(k, row, rt->dims, nrow, idx);
  for (int i = 0; i < e.nops; i++) {
    off[i] = c64(k, 0);
    for (int j = 0; j < nrow; j++)
      if (e.strides[i][j]) off[i] = add(k, off[i], mulc(k, idx[j], e.strides[i][j]));
  }
  FcLoop lt;
  c.t0 = fc_cg_loop_begin(k, &lt, c64(k, 0), c64(k, L), T, "t0");
  c.tn = smin(k, c64(k, T), sub(k, c64(k, L), c.t0));
  FcLoop lf;
  LLVMValueRef j = fc_cg_loop_begin(k, &lf, c64(k, 0), c.tn, 1, "fill");
  LLVMBuildStore(k->b, LLVMConstNull(c.ct), fc_cg_tile_at(k, c.ct, c.tile, j));
  fc_cg_loop_end(k, &lf);
  ein_loops(&c, e.n_out, off);
  LLVMValueRef at = add(k, mulc(k, row, L), c.t0);
  FcLoop ls;
  j = fc_cg_loop_begin(k, &ls, c64(k, 0), c.tn, 1, "st");
  fc_cg_store(k, dt, k->out[0], add(k, at, j), LLVMBuildLoad2(k->b, c.ct, fc_cg_tile_at(k, c.ct, c.tile, j), ""));
  fc_cg_loop_end(k, &ls);
  fc_cg_loop_end(k, &lt);
  fc_cg_loop_end(k, &lr);
  return FC_OK;
}

/* ---- det -------------------------------------------------------------------------------------------- */

/* Determinant of each trailing n x n matrix: LU with partial pivoting (the largest magnitude in the
 * column, the first on ties), as LAPACK's getrf that numpy uses; the signed product of the pivots, 0 as
 * soon as a pivot is exactly 0. One outer iteration per matrix. */
FcStatus fc_kernel_det(FcKernel *k) {
  const FcType *xt = in_type(k, 0), *rt = &k->op->results[0].type;
  FcDtype dt = xt->dtype;
  if (!fc_dtype_is_float(dt) || xt->rank < 2)
    return fc_cg_error(k, FC_ERR_INTERNAL, "operand must be [..., n, n] floats");
  int64_t n = xt->dims[xt->rank - 1], batches;
  if (!fc_type_numel(rt, &batches)) return fc_cg_error(k, FC_ERR_LIMIT, "result is too large");
  if (n > DET_MAX_N)
    return fc_cg_error(k, FC_ERR_UNSUPPORTED, "determinants of %lldx%lld matrices (at most %dx%d)", (long long)n,
                (long long)n, DET_MAX_N, DET_MAX_N);
  fc_kernel_set_outer(k, batches, (double)n * (double)n * (double)n + 2.0 * (double)n * (double)n);
  if (batches == 0) return FC_OK;
  LLVMTypeRef d = f64t(k), i64 = fc_cg_i64(k);
  LLVMValueRef a = fc_cg_tile_new(k, d, n * n, "lu");
  LLVMValueRef det = fc_cg_entry_alloca(k, d, "det");
  LLVMValueRef zero = fc_cg_entry_alloca(k, LLVMInt1TypeInContext(k->ctx), "zero");
  LLVMValueRef piv = fc_cg_entry_alloca(k, i64, "piv");
#define A(i, j) fc_cg_tile_at(k, d, a, add(k, mulc(k, (i), n), (j)))

  FcLoop lb;
  LLVMValueRef bi = fc_cg_loop_begin(k, &lb, k->begin, k->end, 1, "mat");
  LLVMValueRef base = mulc(k, bi, n * n);
  {
    FcLoop lc;
    LLVMValueRef i = fc_cg_loop_begin(k, &lc, c64(k, 0), c64(k, n * n), 1, "cp");
    LLVMBuildStore(k->b, to_f64(k, fc_cg_load(k, dt, k->in[0], add(k, base, i))), fc_cg_tile_at(k, d, a, i));
    fc_cg_loop_end(k, &lc);
  }
  var_set(k, det, cd(k, 1.0));
  var_set(k, zero, LLVMConstInt(LLVMInt1TypeInContext(k->ctx), 0, 0));
  FcLoop lk;
  LLVMValueRef kk = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, n), 1, "k");
  LLVMBasicBlockRef live = fc_cg_if_begin(k, LLVMBuildNot(k->b, var_get(k, LLVMInt1TypeInContext(k->ctx), zero), ""));
  {
    var_set(k, piv, kk);
    FcLoop li;
    LLVMValueRef i = fc_cg_loop_begin(k, &li, add(k, kk, c64(k, 1)), c64(k, n), 1, "p");
    LLVMValueRef best = var_get(k, i64, piv);
    LLVMValueRef better = fcmp(k, LLVMRealOGT, fun1(k, "llvm.fabs", LLVMBuildLoad2(k->b, d, A(i, kk), "")),
                               fun1(k, "llvm.fabs", LLVMBuildLoad2(k->b, d, A(best, kk), "")));
    var_set(k, piv, sel(k, better, i, best));
    fc_cg_loop_end(k, &li);
    LLVMValueRef p = var_get(k, i64, piv);
    LLVMValueRef pv = LLVMBuildLoad2(k->b, d, A(p, kk), "");
    IfElse f;
    if_else_begin(k, &f, fcmp(k, LLVMRealOEQ, pv, cd(k, 0.0)));
    var_set(k, zero, LLVMConstInt(LLVMInt1TypeInContext(k->ctx), 1, 0));
    if_else_mid(k, &f);
    {
      LLVMBasicBlockRef swapped = fc_cg_if_begin(k, icmp(k, LLVMIntNE, p, kk));
      FcLoop lj;
      LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(k, 0), c64(k, n), 1, "sw");
      LLVMValueRef pk = A(kk, j), pp = A(p, j);
      LLVMValueRef vk = LLVMBuildLoad2(k->b, d, pk, ""), vp = LLVMBuildLoad2(k->b, d, pp, "");
      LLVMBuildStore(k->b, vp, pk);
      LLVMBuildStore(k->b, vk, pp);
      fc_cg_loop_end(k, &lj);
      var_set(k, det, LLVMBuildFNeg(k->b, var_get(k, d, det), ""));
      fc_cg_if_end(k, swapped);
      var_set(k, det, dmul(k, var_get(k, d, det), pv));
      FcLoop lr;
      LLVMValueRef r = fc_cg_loop_begin(k, &lr, add(k, kk, c64(k, 1)), c64(k, n), 1, "r");
      LLVMValueRef fct = ddiv(k, LLVMBuildLoad2(k->b, d, A(r, kk), ""), pv);
      FcLoop lj2;
      LLVMValueRef j2 = fc_cg_loop_begin(k, &lj2, add(k, kk, c64(k, 1)), c64(k, n), 1, "e");
      LLVMValueRef pr = A(r, j2);
      LLVMValueRef upd = dsub(k, LLVMBuildLoad2(k->b, d, pr, ""), dmul(k, fct, LLVMBuildLoad2(k->b, d, A(kk, j2), "")));
      LLVMBuildStore(k->b, upd, pr);
      fc_cg_loop_end(k, &lj2);
      fc_cg_loop_end(k, &lr);
    }
    fc_cg_if_end(k, f.cont);
  }
  fc_cg_if_end(k, live);
  fc_cg_loop_end(k, &lk);
  LLVMValueRef res = sel(k, var_get(k, LLVMInt1TypeInContext(k->ctx), zero), cd(k, 0.0), var_get(k, d, det));
  fc_cg_store(k, dt, k->out[0], bi, from_f64(k, res, fc_cg_compute_type(k, dt)));
  fc_cg_loop_end(k, &lb);
#undef A
  return FC_OK;
}

/* ---- random_uniform ------------------------------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t z) {
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ull;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

enum { RANDOM_CHUNK = 4096 };

/* random_uniform: element i = low + u_i * (high - low), u_i = the top `bits` bits of
 * splitmix64(key + (i + 1) * gamma) / 2^bits, where bits is the dtype's significand (so u_i < 1 holds
 * after rounding to the dtype). */
FcStatus fc_kernel_random_uniform(FcKernel *k) {
  const FcOp *op = k->op;
  const FcType *rt = &op->results[0].type;
  FcDtype dt = rt->dtype;
  if (!fc_dtype_is_float(dt)) return fc_cg_error(k, FC_ERR_INTERNAL, "dtype must be a float type");
  int64_t numel;
  if (!fc_type_numel(rt, &numel)) return fc_cg_error(k, FC_ERR_LIMIT, "result is too large");
  int64_t chunks = numel / RANDOM_CHUNK + (numel % RANDOM_CHUNK != 0);
  fc_kernel_set_outer(k, chunks, RANDOM_CHUNK * 16.0);
  if (chunks == 0) return FC_OK;
  uint64_t key;
  const FcAttr *sa = fc_op_attr(op, FC_ATTR_SEED);
  if (sa) {
    double seed = (double)sa->f;
    uint64_t bits;
    memcpy(&bits, &seed, sizeof bits);
    key = splitmix64(bits);
  } else {
    key = splitmix64(RANDOM_DEFAULT_KEY ^ ((uint64_t)op->id * 0x9e3779b97f4a7c15ull));
  }
  int bits = dt == FC_DT_F64 ? 53 : dt == FC_DT_F32 ? 24 : dt == FC_DT_F16 ? 11 : 8;
  LLVMTypeRef ct = fc_cg_compute_type(k, dt), i64 = fc_cg_i64(k);
  double low = fc_op_attr_float(op, FC_ATTR_LOW, 0.0f), high = fc_op_attr_float(op, FC_ATTR_HIGH, 1.0f);

  FcLoop lc;
  LLVMValueRef chunk = fc_cg_loop_begin(k, &lc, k->begin, k->end, 1, "chunk");
  LLVMValueRef lo = mulc(k, chunk, RANDOM_CHUNK);
  LLVMValueRef hi = smin(k, add(k, lo, c64(k, RANDOM_CHUNK)), c64(k, numel));
  FcLoop li;
  LLVMValueRef i = fc_cg_loop_begin(k, &li, lo, hi, 1, "i");
  LLVMValueRef z = add(k, LLVMConstInt(i64, key, 0), mul(k, add(k, i, c64(k, 1)), LLVMConstInt(i64, 0x9e3779b97f4a7c15ull, 0)));
  z = LLVMBuildXor(k->b, z, LLVMBuildLShr(k->b, z, c64(k, 30), ""), "");
  z = mul(k, z, LLVMConstInt(i64, 0xbf58476d1ce4e5b9ull, 0));
  z = LLVMBuildXor(k->b, z, LLVMBuildLShr(k->b, z, c64(k, 27), ""), "");
  z = mul(k, z, LLVMConstInt(i64, 0x94d049bb133111ebull, 0));
  z = LLVMBuildXor(k->b, z, LLVMBuildLShr(k->b, z, c64(k, 31), ""), "");
  LLVMValueRef top = LLVMBuildLShr(k->b, z, c64(k, 64 - bits), "");
  LLVMValueRef u = LLVMBuildFMul(k->b, LLVMBuildUIToFP(k->b, top, ct, ""), LLVMConstReal(ct, ldexp(1.0, -bits)), "");
  LLVMValueRef v = LLVMBuildFAdd(k->b, LLVMConstReal(ct, low), LLVMBuildFMul(k->b, u, LLVMConstReal(ct, high - low), ""), "");
  fc_cg_store(k, dt, k->out[0], i, v);
  fc_cg_loop_end(k, &li);
  fc_cg_loop_end(k, &lc);
  return FC_OK;
}
