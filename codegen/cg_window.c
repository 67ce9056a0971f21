/* cg_window.c — row geometry and tap loads shared by the vectorised window kernels (cg_window.h). */
#include "cg_window.h"
#include "flowrt.h"

int fc_win_lanes(const FcKernel *k) {
  int vl = fc_target_lanes(k->target, FC_DT_F32);
  vl = vl < 4 ? 4 : vl > FC_WIN_MAX_VL ? FC_WIN_MAX_VL : vl;
  return vl & ~3;
}

int64_t fc_win_in_col(const FcWinRow *r, int64_t ox, int64_t kw) { return ox * r->sw - r->pw + kw * r->dw; }

void fc_win_load_span(const FcWinRow *r, int64_t ox0, int64_t kw, int64_t *first, int64_t *width, int *phase) {
  *phase = 0;
  *first = fc_win_in_col(r, ox0, kw);
  if (r->sw == 1) {
    *width = r->vl;
  } else if (r->sw == 2) {
    *phase = (int)((kw * r->dw) % 2);
    *first -= *phase;
    *width = 2 * (int64_t)r->vl;
  } else {
    *width = (r->vl - 1) * r->sw + 1;
  }
}

bool fc_win_position_full(const FcWinRow *r, int64_t v) { return fc_win_columns_full(r, v * r->vl); }

bool fc_win_columns_full(const FcWinRow *r, int64_t ox0) {
  if (ox0 < 0 || ox0 + r->vl > r->OW) return false;
  for (int64_t kw = 0; kw < r->KW; kw++) {
    int64_t first, width;
    int phase;
    fc_win_load_span(r, ox0, kw, &first, &width, &phase);
    if (first < 0 || first + width > r->W) return false;
  }
  return true;
}

int64_t fc_win_right_tail(const FcWinRow *r, const FcWinPlan *p) {
  int64_t ox0 = r->OW - r->vl;
  return p->v_hi < p->nv && ox0 <= p->v_hi * r->vl && fc_win_columns_full(r, ox0) ? ox0 : -1;
}

int fc_win_even_lane(int vl, int p) {
  /* p = 4L + q takes element 4L + 2q of the first half for q < 2, element 4L + 2(q - 2) of the second
   * half otherwise */
  int L = p / 4, q = p % 4;
  return (q < 2 ? 0 : vl) + 4 * L + 2 * (q % 2);
}

static LLVMValueRef i32c(FcKernel *k, int64_t v) {
  return LLVMConstInt(LLVMInt32TypeInContext(k->ctx), (unsigned long long)v, 0);
}

LLVMValueRef fc_win_shuffle(FcKernel *k, LLVMValueRef v, const int *idx, int n) {
  if (n == 1) return LLVMBuildExtractElement(k->b, v, i32c(k, idx[0]), "");
  LLVMValueRef m[2 * FC_WIN_MAX_VL];
  for (int i = 0; i < n; i++) m[i] = i32c(k, idx[i]);
  return LLVMBuildShuffleVector(k->b, v, LLVMGetUndef(LLVMTypeOf(v)), LLVMConstVector(m, (unsigned)n), "");
}

static LLVMValueRef splat(LLVMValueRef s, unsigned n) {
  LLVMValueRef e[2 * FC_WIN_MAX_VL];
  for (unsigned i = 0; i < n; i++) e[i] = s;
  return LLVMConstVector(e, n);
}

bool fc_win_plan(const FcWinRow *r, int64_t planes, int64_t OH, int64_t max_edges, int64_t min_tasks, int64_t row_multiple,
                 FcWinPlan *p) {
  p->nv = (r->OW + r->vl - 1) / r->vl;
  /* Full positions form one range: the left condition grows with v, the right one shrinks. */
  p->v_lo = 0;
  while (p->v_lo < p->nv && !fc_win_position_full(r, p->v_lo)) p->v_lo++;
  p->v_hi = p->v_lo;
  while (p->v_hi < p->nv && fc_win_position_full(r, p->v_hi)) p->v_hi++;
  for (int64_t v = p->v_hi; v < p->nv; v++) FC_ASSERT(!fc_win_position_full(r, v));
  if (p->nv - (p->v_hi - p->v_lo) > max_edges) return false;
  fc_win_row_blocks(planes, OH, min_tasks, 0, row_multiple, &p->rb, &p->nrb);
  return true;
}

/* The pool's schedule of `tasks` over T threads, simulated (flowrt.h's chunks and runs): the least busy
 * thread takes its own run's next chunk, else the last chunk of the next thread's run that has one.
 * Returns the busiest thread's cost. */
static double pool_makespan(int64_t tasks, int T, double (*cost)(const void *ctx, int64_t t), const void *ctx) {
  enum { MAX_T = 4 };
  int64_t want = (int64_t)FRT_CHUNKS_PER_THREAD * T, chunks = tasks < want ? tasks : want, front[MAX_T], back[MAX_T];
  double busy[MAX_T];
  for (int t = 0; t < T; t++) {
    front[t] = frt_part_begin(chunks, T, t);
    back[t] = frt_part_begin(chunks, T, t + 1);
    busy[t] = 0;
  }
  for (int64_t left = chunks; left > 0; left--) {
    int t = 0;
    for (int j = 1; j < T; j++)
      if (busy[j] < busy[t]) t = j;
    int64_t c = -1;
    if (front[t] < back[t]) c = front[t]++;
    for (int k = 1; c < 0 && k < T; k++)
      if (front[(t + k) % T] < back[(t + k) % T]) c = --back[(t + k) % T];
    for (int64_t i = frt_part_begin(tasks, chunks, c); i < frt_part_begin(tasks, chunks, c + 1); i++)
      busy[t] += cost(ctx, i);
  }
  double most = 0;
  for (int t = 0; t < T; t++)
    if (busy[t] > most) most = busy[t];
  return most;
}

double fc_win_balance(int64_t tasks, double (*cost)(const void *ctx, int64_t t), const void *ctx) {
  double total = 0;
  for (int64_t t = 0; t < tasks; t++)
    total += cost(ctx, t);
  if (tasks <= 0 || total <= 0) return 1.0;
  return (total / 2 / pool_makespan(tasks, 2, cost, ctx) + total / 4 / pool_makespan(tasks, 4, cost, ctx)) / 2;
}

void fc_win_row_blocks(int64_t planes, int64_t OH, int64_t min_tasks, int64_t max_rows, int64_t row_multiple,
                       int64_t *rb, int64_t *nrb) {
  int64_t n = 1;
  if (planes < min_tasks) {
    int64_t want = (min_tasks + planes - 1) / planes;
    n = want < OH ? want : OH;
  }
  if (max_rows > 0 && (OH + n - 1) / n > max_rows) n = (OH + max_rows - 1) / max_rows;
  int64_t r = (OH + n - 1) / n;
  if (r > 1 && row_multiple > 1 && r % row_multiple) r += row_multiple - r % row_multiple;
  *rb = r;
  *nrb = (OH + r - 1) / r;
}

void fc_win_interior(int64_t W, int64_t OW, int64_t sw, int64_t pw, int64_t span, int64_t *lo, int64_t *hi) {
  int64_t l = (pw + sw - 1) / sw, last = W - 1 + pw - span;
  int64_t h = last < 0 ? 0 : last / sw + 1;
  if (l > OW) l = OW;
  if (h > OW) h = OW;
  *lo = l;
  *hi = h < l ? l : h;
}

bool fc_win_reads_pad_rows(int64_t H, int64_t OH, int64_t sh, int64_t ph, int64_t span) {
  return ph > 0 || (OH - 1) * sh - ph + span >= H;
}

/* &base[off] in elements of et; off may point before base (masked-off lanes only), so not inbounds. */
static LLVMValueRef eptr(FcKernel *k, LLVMTypeRef et, LLVMValueRef base, LLVMValueRef off) {
  return LLVMBuildGEP2(k->b, et, base, &off, 1, "");
}

/* A load of t (elements of et) aligned to one element. */
static LLVMValueRef vload(FcKernel *k, LLVMTypeRef t, LLVMTypeRef et, LLVMValueRef p) {
  LLVMValueRef v = LLVMBuildLoad2(k->b, t, p, "");
  LLVMSetAlignment(v, LLVMGetTypeKind(et) == LLVMFloatTypeKind ? 4 : LLVMGetIntTypeWidth(et) / 8);
  return v;
}

/* llvm.masked.load of type t (n lanes) at p with a constant mask: lanes off read `fill`. */
static LLVMValueRef masked_load(FcKernel *k, LLVMTypeRef t, LLVMValueRef p, const bool *on, unsigned n, LLVMValueRef fill) {
  LLVMTypeRef i1 = LLVMInt1TypeInContext(k->ctx);
  LLVMValueRef bits[2 * FC_WIN_MAX_VL];
  for (unsigned i = 0; i < n; i++) bits[i] = LLVMConstInt(i1, on[i], 0);
  return fc_cg_masked_load(k, t, p, LLVMConstVector(bits, n), splat(fill, n));
}

/* An edge tap of stride 1 or 2 from one plain load: the load's `width` columns moved inside the row (from
 * a = first clamped to [0, W - width]) and one two-source shuffle that takes each on-lane's column from it and
 * every other lane from a splat of `fill`. The load covers every column inside the row that the tap reads:
 * they lie in [first, first + width) ∩ [0, W), inside [a, a + width) whichever side the clamp moved it. Taken
 * for bytes, which have no masked load on AVX2 or SSE (LLVM makes one scalar load and insert per lane of it,
 * which on small maps, where most vectors are edges, costs more than the taps' max); f32 keeps its masked
 * loads (vmaskmovps). NULL where the row is narrower than the load or the stride above 2. */
static LLVMValueRef shifted_edge_load(FcKernel *k, const FcWinRow *r, LLVMValueRef fill, LLVMValueRef rp, int64_t first,
                                      int64_t width, int phase, const bool *on) {
  if (width > r->W || r->sw > 2) return NULL;
  int vl = r->vl, idx[FC_WIN_MAX_VL];
  int64_t a = first < 0 ? 0 : first > r->W - width ? r->W - width : first;
  for (int q = 0; q < vl; q++) {
    int w = r->sw == 1 ? q : fc_win_even_lane(vl, q) + phase; /* lane q's column, from first */
    bool lane_on = on[r->sw == 1 ? q : w / 2];
    FC_ASSERT(!lane_on || (first + w >= a && first + w < a + width));
    idx[q] = lane_on ? (int)(first + w - a) : (int)width; /* width: the fill splat's lane 0 */
  }
  LLVMTypeRef et = LLVMTypeOf(fill), wt = LLVMVectorType(et, (unsigned)width);
  LLVMValueRef x = vload(k, wt, et, eptr(k, et, rp, fc_cg_const_i64(k, a)));
  return fc_cg_shuffle(k, x, splat(fill, (unsigned)width), idx, vl);
}

LLVMValueRef fc_win_tap_vector(FcKernel *k, const FcWinRow *r, LLVMValueRef fill, LLVMValueRef rp, LLVMValueRef ox0v,
                               int64_t ox0, int64_t kw) {
  int vl = r->vl;
  LLVMTypeRef et = LLVMTypeOf(fill), vt = LLVMVectorType(et, (unsigned)vl); /* f32, or 8-bit for max_pool */
  int64_t first, width;
  int phase;
  fc_win_load_span(r, ox0v ? 0 : ox0, kw, &first, &width, &phase);
  bool on[FC_WIN_MAX_VL], all = ox0v != NULL || (first >= 0 && first + width <= r->W);
  int n_on = 0;
  for (int l = 0; l < vl; l++) {
    int64_t ix = fc_win_in_col(r, ox0 + l, kw);
    on[l] = ox0v != NULL || (ox0 + l < r->OW && ix >= 0 && ix < r->W);
    n_on += on[l];
  }
  if (n_on == 0) return NULL;
  LLVMValueRef at = fc_cg_const_i64(k, first);
  if (ox0v) {
    LLVMValueRef x = r->sw == 1 ? ox0v : LLVMBuildMul(k->b, ox0v, fc_cg_const_i64(k, r->sw), "");
    at = LLVMBuildAdd(k->b, x, at, "");
  }
  bool bytes = LLVMGetTypeKind(et) == LLVMIntegerTypeKind;
  LLVMValueRef shifted = !all && bytes ? shifted_edge_load(k, r, fill, rp, first, width, phase, on) : NULL;
  if (shifted) return shifted;
  LLVMValueRef p = eptr(k, et, rp, at);
  if (r->sw == 1) return all ? vload(k, vt, et, p) : masked_load(k, vt, p, on, (unsigned)vl, fill);
  if (r->sw == 2) {
    LLVMTypeRef wt = LLVMVectorType(et, (unsigned)(2 * vl));
    bool won[2 * FC_WIN_MAX_VL] = {false};
    for (int l = 0; l < vl; l++) won[2 * l + phase] = on[l];
    LLVMValueRef wide = all ? vload(k, wt, et, p) : masked_load(k, wt, p, won, (unsigned)(2 * vl), fill);
    int idx[FC_WIN_MAX_VL];
    for (int q = 0; q < vl; q++) idx[q] = fc_win_even_lane(vl, q) + phase;
    return fc_win_shuffle(k, wide, idx, vl);
  }
  LLVMValueRef v = all ? LLVMGetUndef(vt) : splat(fill, (unsigned)vl);
  for (int l = 0; l < vl; l++)
    if (on[l]) v = LLVMBuildInsertElement(k->b, v, vload(k, et, et, eptr(k, et, p, fc_cg_const_i64(k, l * r->sw))), i32c(k, l), "");
  return v;
}

int64_t fc_win_tap_count(int64_t o, int64_t K, int64_t s, int64_t d, int64_t pad, int64_t pad_end, int64_t D,
                         bool include_pad) {
  int64_t start = o * s - pad, n = 0;
  for (int64_t kk = 0; kk < K; kk++) {
    int64_t p = start + kk * d;
    n += include_pad ? p < D + pad_end : p >= 0 && p < D;
  }
  return n;
}

LLVMValueRef fc_win_row_count_table(FcKernel *k, int64_t OH, int64_t KH, int64_t sh, int64_t dh, int64_t ph,
                                    int64_t pe_h, int64_t H, bool include_pad, const char *name) {
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx);
  LLVMValueRef *e = FC_NEW_ARRAY(&k->op->graph->module->arena, LLVMValueRef, (size_t)OH + 1); /* OH = 0: one */
  for (int64_t o = 0; o < OH; o++)
    e[o] = LLVMConstReal(f32, (double)fc_win_tap_count(o, KH, sh, dh, ph, pe_h, H, include_pad));
  return fc_cg_const_table(k, f32, e, OH, name);
}
