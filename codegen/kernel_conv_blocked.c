/* kernel_conv_blocked.c — flow.conv_blocked other than depthwise: a dense or grouped f32 2-D convolution
 * whose result is in the blocked layout NCHW8c, by direct convolution over register tiles (oneDNN's
 * jit_avx2_conv "direct blocked" scheme). The block is the op's (8, or 16 on AVX-512: one vector either
 * way); the text below says 8 for it. Register counts are the target's (FcKernel.target).
 *
 * The register tile is R output pixels of one output row × J blocks of 8 output channels: J·R
 * accumulators (<8 x float>), J weight vectors and one broadcast, no more than the vector register file.
 * One step per input channel ic and tap (kh, kw) loads the J weight vectors w[ic][kh][kw][J·8 oc],
 * broadcasts the R input scalars x(ic, ih, iw_r) and issues J·R FMAs. The accumulators live in
 * entry-block allocas that SROA promotes to registers (phis) across the run-time loops. Shapes, from
 * the target's registers (as cg_gemm.c takes them): AVX2 (16): J = 2, R = 6 (12 + 2 + 1 = 15), or J = 3,
 * R = 4 for 1×1 convs whose oc blocks it divides (3 weights + 4 broadcasts per 12 FMAs instead of 2 + 6,
 * fewer loads per FMA; with 3×3 filters the 16 registers it needs spill); AVX-512 (32): J = 4,
 * R = 6; 4-lane SSE, where an 8-lane vector takes two registers: J = 1, R = 6. The last oc group, when J
 * does not divide M/8, gets its own code with fewer blocks and wider tiles (J = 1: R = 12).
 * Straight-line tiles (below) take one pixel less (J = 2: R = 5): there LLVM's scheduler starts the
 * next step's weight loads before the last FMAs of a step, and a full register file then spills an
 * accumulator (the loop's body it leaves alone). The input and weight loads are volatile: stride-1
 * taps read the same input scalar for (pixel r, kw + 1) as for (r + 1, kw), and without it LLVM
 * reuses one broadcast across steps, or hoists all of a step group's weight loads to its top, and
 * either keeps more values live than there are registers, so that every tile spills.
 *
 * Weights are packed on the host into the order the steps read them, contiguously:
 *     [M/(8J) oc groups][C/ICB ic blocks][KH][KW][ICB ic][8J oc]
 * (the last group holds its fewer blocks). ICB is 8 for blocked x; for plain NCHW x (first convs, C = 3)
 * it is the largest divisor of C up to 8. A step group (all KW taps × ICB channels of one (ic block,
 * kh)) is straight-line code; ic blocks and kh are run-time loops. The input is read generically over the
 * two layouts: element (ic, ih, iw) lies at (ic/8)·H·W·8 + (ih·W + iw)·8 + ic%8 (blocked) or
 * ic·H·W + ih·W + iw (plain).
 *
 * Padding. Rows: the kh range whose input rows lie inside the image is computed per output row at run
 * time (constants when no row reads the vertical padding), so taps in the padding are never visited.
 * Columns: the output row is cut at compile time (plan_row) into straight-line tiles at the left edge,
 * a loop over the tiles whose every (pixel, kw) tap lies inside [0, W) (they form one range: the left
 * condition grows with the tile, the right one shrinks), and straight-line tiles for the rest, of
 * balanced widths (7 = 4 + 3, not 6 + 1: a one-pixel tile has J accumulators, too few to hide the FMA
 * latency). In a straight-line tile the validity of each (pixel, kw) is a compile-time constant:
 * invalid taps emit nothing (no loads, no branches). A 1×1, stride-1, unpadded conv reads and writes
 * its pixels in the same order, so its image is viewed as the
 * H' × W' (H'·W' = H·W) whose rows tile best (7×7 as one row of 49).
 *
 * Grouped convs (RegNet's and ResNeXt's 3×3 convs, group widths 4 to 64) run the same tiles: an oc
 * group's output channels read the inputs of their conv groups only, a range of ncb ic blocks from the
 * oc group's first one (grouped_span), and the packed weights hold zeros for the input channels of that
 * range outside a lane's conv group. With group widths that are multiples of 8 an oc group of one conv
 * group reads exactly its inputs; narrower groups (4 channels: two conv groups per block) multiply some
 * zeros, which still beats a loop of tiny GEMMs. J is chosen per conv by that waste against the loads per
 * FMA (choose_grouped_tile).
 *
 * Cache blocking: a group's weights over all of C·KH·KW can exceed L2 (C = 512, 3×3, J = 2: 288 KiB),
 * so the ic blocks are cut into chunks whose weights stay within CHUNK_BYTES; the first chunk starts the
 * tile from zero and stores partial sums into y, later chunks load them, the last adds the bias, runs the
 * fused epilogue (cg_epilogue.h, col_dims 1: one 8-lane vector per result row) and stores the finished
 * tile once. Loop order inside a task: chunk, output row, tile — a chunk's weights are reused from cache
 * by every tile of the task's rows.
 *
 * Outer iterations are (batch item, row block, oc group), oc group fastest, so consecutive iterations
 * (one thread's chunk of the pool's loop) read the same input rows; rows are cut into blocks until there
 * are MIN_TASKS iterations (so that small images, 7×7, still keep the threads busy) and until a block's
 * input rows fit in IN_BLOCK_BYTES, so they stay in L2 while the oc groups pass over them rather than
 * being fetched again for each oc group. Each row block in turn streams every oc group's weights, so
 * convs with BIG_WEIGHT_BYTES of packed weights or more (more than stays in L2, 2 MiB on the largest,
 * from one row block to the next: ResNeXt's and ResNet's last stages, 2 to 9 MiB on 7×7 and 14×14
 * maps) take blocks of up to
 * BIG_IN_BLOCK_BYTES of input: a small map is then one block, whose input stays in L2 while the weights
 * stream from memory once, rather than once per row (a 1×1 conv's view of its image, above, may then be
 * as wide). Every output element is computed by one task in a fixed order: results do not depend on the
 * thread count.
 */
#include <stdlib.h>

#include "cg_epilogue.h"
#include "cg_gemm.h"
#include "cg_window.h"
#include "codegen.h"

enum {
  MAX_J = 4,                 /* oc blocks per register tile */
  MAX_R = 12,                /* pixels per register tile */
  MAX_EDGE_TILES = 32,       /* straight-line tiles per output row handled */
  MIN_TASKS = 16,            /* rows are cut into blocks until there are this many outer iterations */
  POINTWISE_TASKS = 8,       /* outer iterations a 1×1 conv's view of its image should allow */
  SPREAD_MIN_TILES = 4,      /* a 1×1 conv's view is chosen for thread balance from rows this many tiles wide */
  CHUNK_BYTES = 64 * 1024,   /* packed weights of one oc group per ic chunk */
  IN_BLOCK_BYTES = 128 * 1024, /* input rows of one row block, at most */
  BIG_WEIGHT_BYTES = 2048 * 1024,   /* packed weights that do not stay in L2 from one row block to the next */
  BIG_IN_BLOCK_BYTES = 1024 * 1024, /* input rows of one row block, at most, for convs with such weights */
};

/* How an output row is cut into tiles for one register tile shape: straight-line tiles (start, width)
 * with the loop of interior tiles between straight[loop_at - 1] and straight[loop_at]. */
typedef struct CbRow {
  int R;                              /* pixels per tile */
  int64_t ow_lo, ow_hi;               /* the loop's tiles start at ow_lo, ow_lo + R, .. < ow_hi */
  int n_straight, loop_at;
  int64_t start[MAX_EDGE_TILES];
  int width[MAX_EDGE_TILES];
} CbRow;

/* The static geometry. */
typedef struct Cb {
  int B;                    /* the block: channels per block of the layout, lanes per vector (8 or 16) */
  bool blocked;             /* x is [N, C/B, H, W, B] (else plain [N, C, H, W]) */
  int64_t N, C, H, W, M, MB, KH, KW, OH, OW;
  int64_t sh, sw, dh, dw, pt, pl;
  int64_t G, Cg, Mg;        /* the conv's groups, and input and output channels per group */
  int J;                    /* oc blocks per register tile (the last group: Jl) */
  int64_t ngroups;          /* ceil(MB / J) */
  int Jl;                   /* oc blocks of the last group */
  int64_t icb, ncb;         /* input channels per packed ic block, ic blocks an oc group reads */
  int64_t xcb;              /* ic blocks of x (C / 8 blocked; C / icb plain) */
  int64_t chunk, nchunks;   /* ic blocks per chunk, chunks */
  CbRow row, row_l;         /* the row plans of full groups and of the last group */
  int64_t rb, nrb;          /* output rows per task, row blocks */
  int64_t in_block;         /* input bytes of one row block, at most (IN_BLOCK_BYTES or BIG_IN_BLOCK_BYTES) */
} Cb;

static const FcType *in_type(const FcKernel *k, int i) { return &k->op->operands[i].value->type; }

/* Input column of pixel ow through tap kw, and whether it lies inside the row. */
static int64_t in_col(const Cb *g, int64_t ow, int64_t kw) { return ow * g->sw - g->pl + kw * g->dw; }
static bool tap_inside(const Cb *g, int64_t ow, int64_t kw) {
  int64_t iw = in_col(g, ow, kw);
  return iw >= 0 && iw < g->W;
}

/* Whether the w pixels from ow0 all exist and read only columns inside the row. */
static bool tile_interior(const Cb *g, int64_t ow0, int64_t w) {
  return ow0 + w <= g->OW && in_col(g, ow0, 0) >= 0 && in_col(g, ow0 + w - 1, g->KW - 1) < g->W;
}

/* Register file of the target: vector registers, and how many of them one B-lane vector takes. */
static void target_regs(const FcKernel *k, int B, int *per, int *regs) {
  int lanes = k->target->max_vector_bytes / 4;
  *regs = k->target->vector_regs;
  *per = lanes >= B ? 1 : B / lanes;
}

/* Pixels per loop tile with J oc blocks: J·R accumulators + J weights + 1 broadcast in the register
 * file; straight-line tiles take one pixel less (see the top). */
static int tile_pixels(int J, int per, int regs) {
  int r = (regs - 1 - J * per) / (J * per);
  return r > MAX_R ? MAX_R : r < 1 ? 1 : r;
}
static int edge_pixels(int R) { return R > 1 ? R - 1 : 1; }

static bool add_straight(CbRow *p, int64_t start, int64_t width) {
  if (p->n_straight == MAX_EDGE_TILES) return false;
  p->start[p->n_straight] = start;
  p->width[p->n_straight++] = (int)width;
  return true;
}

/* Straight-line tiles over [s, s + n) of at most Re pixels and even widths. */
static bool add_even(CbRow *p, int64_t s, int64_t n, int Re) {
  int64_t t = (n + Re - 1) / Re;
  for (int64_t i = 0; i < t; i++) {
    int64_t w = n / t + (i < n % t);
    if (!add_straight(p, s, w)) return false;
    s += w;
  }
  return true;
}

/* Straight-line tiles over [a, b), first cut where some tap kw turns from padding to inside the row or
 * back, if both sides keep at least (Re + 1) / 2 pixels, then evenly. Large dilations make long runs
 * of pixels with the same valid taps (DeepLab's rate 12 on a 16-wide map: columns 0-3 read taps 1 and 2,
 * 4-11 tap 1, 12-15 taps 0 and 1); a tile inside one run issues every step over all its pixels, where a
 * tile across a change has steps of one or two pixels whose FMAs wait on each other. */
static bool add_cut_span(const Cb *g, CbRow *p, int64_t a, int64_t b, int Re) {
  int64_t min_w = (Re + 1) / 2, from = a;
  for (int64_t ow = a + 1; ow < b; ow++) {
    bool change = false;
    for (int64_t kw = 0; kw < g->KW && !change; kw++) change = tap_inside(g, ow, kw) != tap_inside(g, ow - 1, kw);
    if (change && ow - from >= min_w && b - ow >= min_w) {
      if (!add_even(p, from, ow - from, Re)) return false;
      from = ow;
    }
  }
  return add_even(p, from, b - from, Re);
}

/* Cuts the output row into tiles: straight-line tiles of Re pixels from the left while they read the
 * left padding, the loop over interior tiles of R pixels, and what is left split evenly into
 * straight-line tiles of at most Re (a short last tile would leave the FMA units waiting on too few
 * accumulators: 7 = 4 + 3, not 5 + 2; the tile before joins a rest shorter than Re / 2: 14 = 6 + 4 + 4).
 * A dilated conv's straight-line spans are then re-cut where a tap's validity changes (add_cut_span), the
 * spans of a row without a loop as one. False when more than MAX_EDGE_TILES are straight-line. */
static bool plan_row(const Cb *g, int R, int Re, CbRow *p) {
  p->R = R;
  p->n_straight = 0;
  int64_t s = 0;
  while (s + Re <= g->OW && !tile_interior(g, s, R) && in_col(g, s, 0) < 0) {
    if (!add_straight(p, s, Re)) return false;
    s += Re;
  }
  p->loop_at = p->n_straight;
  p->ow_lo = s;
  while (s + R <= g->OW && tile_interior(g, s, R)) s += R;
  int64_t rem = g->OW - s;
  if (rem > 0 && rem < (Re + 1) / 2) {
    if (s > p->ow_lo) {
      s -= R, rem += R;
    } else if (p->n_straight > 0) { /* no loop: the last left tile joins the rest */
      p->n_straight--;
      p->loop_at = p->n_straight;
      s -= Re, rem += Re;
      p->ow_lo = s;
    }
  }
  p->ow_hi = s;
  if (!add_even(p, s, rem, Re)) return false;
  if (g->dw > 1) { /* dilated: cut the straight-line spans where a tap's validity changes (one without a loop) */
    CbRow q = *p;
    q.n_straight = 0;
    if (q.ow_hi == q.ow_lo) q.ow_lo = q.ow_hi = 0;
    if (add_cut_span(g, &q, 0, q.ow_lo, Re) && (q.loop_at = q.n_straight, add_cut_span(g, &q, q.ow_hi, g->OW, Re)))
      *p = q;
  }
  return true;
}

/* The row blocks of OH output rows over input rows of width W. The oc groups of one row block run one
 * after another (the group is the fastest outer index), so the block's input rows should stay in L2
 * between them. */
static void row_blocks(const Cb *g, int64_t OH, int64_t W, int64_t *rb, int64_t *nrb) {
  int64_t row_bytes = g->sh * W * g->C * 4, rb_max = g->in_block / (row_bytes > 0 ? row_bytes : 1);
  fc_win_row_blocks(g->N * g->ngroups, OH, MIN_TASKS, rb_max < 1 ? 1 : rb_max, 1, rb, nrb);
}

/* Latency-bound share of the FMA throughput a tile of w pixels keeps: Zen 3 and Intel cores run two
 * 4-cycle FMAs per cycle, so 8 independent accumulators keep them busy; fewer leave them waiting. */
static double tile_efficiency(int J, int64_t w) { return J * w >= 8 ? 1.0 : (double)(J * w) / 8.0; }

/* The relative cost of outer iteration t of a view of OH rows cut into nrb blocks of rb: its oc group's
 * blocks (the last group may be narrower) times its row block's rows (the last may be shorter). */
typedef struct TaskCost {
  const Cb *g;
  int64_t OH, rb, nrb;
} TaskCost;

static double task_cost(const void *ctx, int64_t t) {
  const TaskCost *c = ctx;
  int64_t grp = t % c->g->ngroups, blk = t / c->g->ngroups % c->nrb;
  int64_t rows = blk == c->nrb - 1 ? c->OH - blk * c->rb : c->rb;
  return (double)(grp == c->g->ngroups - 1 ? c->g->Jl : c->g->J) * (double)rows;
}

/* A 1×1, stride-1, unpadded conv reads and writes its pixels in the same order in x and y, so the
 * image may be viewed as any H' × W' with H'·W' = H·W. The score of a view: the share of the FMA
 * throughput its tiles keep (7×7 as one row of 49 = 6·7 + 4 + 3 keeps all of it), plus up to 1 for
 * outer iterations, full at POINTWISE_TASKS (a one-row view of a conv with few oc groups leaves the
 * other threads idle). Rows whose input exceeds the row block's budget (in_block) are not considered: the
 * oc groups re-read a row block's input, which should stay in L2. Negative: not a view. */
static double view_score(const Cb *g, int R, int64_t P, int64_t w) {
  if (P % w || (w > 1 && w * g->C * 4 > g->in_block)) return -1.0;
  CbRow row;
  if (!plan_row(&(Cb){.OW = w, .W = w, .KW = 1, .sw = 1, .dw = 1}, R, edge_pixels(R), &row)) return -1.0;
  double eff = (double)(row.ow_hi - row.ow_lo);
  for (int i = 0; i < row.n_straight; i++) eff += (double)row.width[i] * tile_efficiency(g->J, row.width[i]);
  int64_t tasks = g->N * g->ngroups * (P / w);
  return eff / (double)w + (tasks >= POINTWISE_TASKS ? 1.0 : (double)tasks / POINTWISE_TASKS);
}

/* The view: the best score, slightly favouring wider rows; among the views of that same score, the one
 * whose row blocks spread most evenly over threads (fc_win_balance: 112×112 as 7 rows of 1792 in 2 oc
 * groups leaves a thread idle for most of a row at the tail, as 8 rows of 1568 it does not), counting
 * only rows of at least SPREAD_MIN_TILES register tiles, as the score does not count what a row costs
 * besides its tiles (a row of 2 pixels keeps all FMAs by it, but loads a weight vector for every 2
 * FMAs); ties go to wider rows. */
static void pointwise_rows(Cb *g, int R) {
  int64_t P = g->H * g->W, best = g->W;
  double top = -1.0, top_wide = -1.0, best_spread = -1.0;
  for (int64_t w = 1; w <= P; w++) {
    double s = view_score(g, R, P, w), wide = s + (double)w / (double)P * 1e-3;
    if (s >= 0 && wide > top_wide) top_wide = wide, top = s;
  }
  for (int64_t w = 1; w <= P; w++) {
    double s = view_score(g, R, P, w);
    if (s < 0 || s != top) continue;
    double spread = 0.0;
    if (w >= SPREAD_MIN_TILES * R) {
      TaskCost tc = {g, P / w};
      row_blocks(g, P / w, w, &tc.rb, &tc.nrb);
      spread = fc_win_balance(g->N * g->ngroups * tc.nrb, task_cost, &tc);
    }
    if (spread >= best_spread) best_spread = spread, best = w;
  }
  g->W = g->OW = best;
  g->H = g->OH = P / best;
}

/* Grouped convs. The oc group t (J blocks: output channels [t·8J, t·8J + 8J)) spans the conv's groups
 * lo_grp .. hi_grp, whose inputs are the channels [lo_grp·Cg, (hi_grp + 1)·Cg): the ic blocks
 * [lo, hi) covering them. Every oc group reads the same number ncb of ic blocks (the largest span), from
 * its first block ib0 (moved left where the span would pass the last block), so the loops stay those of
 * group 1; the packed weights are 0 where an input channel is not in the output channel's group. */
static void grouped_span(const Cb *g, int J, int64_t t, int64_t *lo, int64_t *hi) {
  int64_t oc0 = t * J * g->B, oc1 = oc0 + J * g->B < g->M ? oc0 + J * g->B : g->M;
  *lo = oc0 / g->Mg * g->Cg / g->B;
  *hi = ((oc1 - 1) / g->Mg + 1) * g->Cg;
  *hi = (*hi + g->B - 1) / g->B;
}

/* The first ic block oc group t reads (group 1: 0). */
static int64_t grouped_ib0(const Cb *g, int64_t t) {
  int64_t lo, hi;
  if (g->G == 1) return 0;
  grouped_span(g, g->J, t, &lo, &hi);
  return lo < g->xcb - g->ncb ? lo : g->xcb - g->ncb;
}

/* J for a grouped conv: oc groups wider than a conv group read ic blocks that most of their lanes
 * multiply by zeros (ncb·8 channels for Cg useful ones), narrower ones load more input per FMA. The cost
 * of J: the FMAs of every oc group over its ncb blocks, times the loads per FMA when they exceed the
 * FMAs' throughput (J weights + R broadcasts per J·R FMAs, both two a cycle); ties go to the larger J. */
static void choose_grouped_tile(Cb *g, int Jmax, int per, int regs) {
  double best = -1;
  for (int J = 1; J <= Jmax && J <= g->MB; J++) {
    int64_t ngroups = (g->MB + J - 1) / J, ncb = 0, lo, hi;
    for (int64_t t = 0; t < ngroups; t++) {
      grouped_span(g, J, t, &lo, &hi);
      if (hi - lo > ncb) ncb = hi - lo;
    }
    int R = tile_pixels(J, per, regs);
    double loads = (double)(J + R) / (double)(J * R);
    double cost = (double)g->MB * (double)ncb * (loads > 1 ? loads : 1);
    if (best < 0 || cost <= best) best = cost, g->J = J, g->ngroups = ngroups, g->ncb = ncb;
  }
}

/* Fills g from the op; false when the op is not a dense conv_blocked this kernel handles. */
static bool cb_geometry(const FcKernel *k, Cb *g) {
  const FcOp *op = k->op;
  if (op->kind != FC_OP_CONV_BLOCKED || op->n_operands < 2 || op->n_results != 1) return false;
  int64_t B = fc_op_attr_int(op, FC_ATTR_BLOCK, 0);
  if (!fc_layout_block_supported(B)) return false;
  g->B = (int)B;
  g->G = fc_op_attr_int(op, FC_ATTR_GROUP, 1);
  const FcType *xt = in_type(k, 0), *wt = in_type(k, 1), *yt = &op->results[0].type;
  if (xt->dtype != FC_DT_F32 || wt->dtype != FC_DT_F32 || yt->dtype != FC_DT_F32) return false;
  if ((xt->rank != 4 && xt->rank != 5) || wt->rank != 4 || yt->rank != 5 || yt->dims[4] != g->B) return false;
  const FcTensor *cw = fc_value_const(op->operands[1].value);
  if (!cw || !cw->data) return false;
  if (op->n_operands > 2 && op->operands[2].value) {
    const FcType *bt = in_type(k, 2);
    if (bt->dtype != FC_DT_F32 || bt->rank != 1 || bt->dims[0] != wt->dims[0]) return false;
  }
  const int64_t *s, *d, *p;
  if (fc_op_attr_ints(op, FC_ATTR_STRIDES, &s) != 2 || fc_op_attr_ints(op, FC_ATTR_DILATIONS, &d) != 2 ||
      fc_op_attr_ints(op, FC_ATTR_PADS, &p) != 4)
    return false;
  g->blocked = xt->rank == 5;
  if (g->blocked && xt->dims[4] != g->B) return false;
  g->N = xt->dims[0];
  g->C = g->blocked ? xt->dims[1] * g->B : xt->dims[1];
  g->H = xt->dims[2];
  g->W = xt->dims[3];
  g->M = wt->dims[0];
  g->KH = wt->dims[2];
  g->KW = wt->dims[3];
  g->MB = yt->dims[1];
  g->OH = yt->dims[2];
  g->OW = yt->dims[3];
  g->sh = s[0], g->sw = s[1], g->dh = d[0], g->dw = d[1], g->pt = p[0], g->pl = p[1];
  if (g->G < 1 || g->C % g->G || g->M % g->G || (g->G > 1 && !g->blocked)) return false;
  g->Cg = g->C / g->G;
  g->Mg = g->M / g->G;
  if (wt->dims[1] != g->Cg || g->M != g->MB * g->B || yt->dims[0] != g->N) return false;
  if (g->sh < 1 || g->sw < 1 || g->dh < 1 || g->dw < 1 || g->pt < 0 || g->pl < 0 || g->KH < 1 || g->KW < 1)
    return false;
  if (g->N == 0 || g->C == 0 || g->MB == 0 || g->OH == 0 || g->OW == 0) return false;
  /* Index arithmetic below stays far from overflow: every term is bounded by a verified tensor's
   * element count or by the small attribute products checked here. */
  int64_t t;
  if (!fc_checked_mul(g->KW, g->dw, &t) || !fc_checked_mul(g->KH, g->dh, &t) ||
      !fc_checked_mul(g->OW + MAX_R, g->sw, &t) || !fc_checked_mul(g->OH, g->sh, &t) || g->pl > INT32_MAX ||
      g->pt > INT32_MAX || !fc_checked_mul(g->C * g->KH, g->KW * g->M, &t))
    return false;

  int per, regs;
  target_regs(k, g->B, &per, &regs);
  /* 16 registers: J = 3 for 1×1 convs whose oc blocks it divides, else J = 2 (see the top; a J = 3
   * tiling that leaves a one-block group loses more than it gains). */
  g->icb = g->B;
  if (!g->blocked)
    while (g->C % g->icb) g->icb--;
  g->xcb = g->C / g->icb;
  if (g->G == 1) {
    g->J = regs >= 32 && per == 1 ? 4 : per > 1 ? 1 : g->MB % 3 == 0 && g->KH * g->KW == 1 ? 3 : 2;
    if (g->J > g->MB) g->J = (int)g->MB;
    g->ngroups = (g->MB + g->J - 1) / g->J;
    g->ncb = g->xcb;
  } else {
    choose_grouped_tile(g, regs >= 32 && per == 1 ? 4 : per > 1 ? 1 : 2, per, regs);
  }
  g->Jl = (int)(g->MB - (g->ngroups - 1) * g->J);
  int64_t per_block = g->icb * g->KH * g->KW * g->B * g->J * 4; /* bytes of one ic block's weights */
  g->chunk = CHUNK_BYTES / per_block;
  if (g->chunk < 1) g->chunk = 1;
  if (g->chunk > g->ncb) g->chunk = g->ncb;
  g->nchunks = (g->ncb + g->chunk - 1) / g->chunk;
  g->chunk = (g->ncb + g->nchunks - 1) / g->nchunks; /* balanced */

  /* The row block's input budget (see the top): larger when the weights stream from memory per block. */
  int64_t wbytes = g->M * g->ncb * g->icb * g->KH * g->KW * 4;
  g->in_block = wbytes >= BIG_WEIGHT_BYTES ? BIG_IN_BLOCK_BYTES : IN_BLOCK_BYTES;
  if (g->KH == 1 && g->KW == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pl == 0 && g->OH == g->H &&
      g->OW == g->W)
    pointwise_rows(g, tile_pixels(g->J, per, regs));
  int R = tile_pixels(g->J, per, regs), Rl = tile_pixels(g->Jl, per, regs);
  if (!plan_row(g, R, edge_pixels(R), &g->row) || !plan_row(g, Rl, edge_pixels(Rl), &g->row_l))
    return false;

  row_blocks(g, g->OH, g->W, &g->rb, &g->nrb);
  return true;
}

bool fc_conv_blocked_dense_applies(const FcKernel *k) {
  Cb g;
  return cb_geometry(k, &g);
}

/* ---- emit helpers -------------------------------------------------------------------------------- */

typedef struct CbCtx {
  FcKernel *k;
  const Cb *g;
  LLVMTypeRef f32, vt;               /* float, <8 x float> */
  LLVMValueRef acc[MAX_J * MAX_R];   /* the accumulators' entry-block slots */
  FcCgEpilogue *epi;
  LLVMValueRef wpk;                  /* the packed weights */
  bool has_bias;
  /* the current task, group, chunk and row */
  int J;                             /* oc blocks of the group being emitted */
  LLVMValueRef n, mb0, wgrp;         /* batch item, first oc block, the group's packed weights */
  LLVMValueRef ib0;                  /* the group's first ic block of x */
  LLVMValueRef cb0, cb1;             /* the chunk's ic blocks [cb0, cb1), from ib0 */
  LLVMValueRef first, last;          /* i1: first / last chunk (NULL: there is one) */
  LLVMValueRef oh, ih0, kh_lo, kh_hi;
  LLVMValueRef yrow;                 /* i64 ((n·MB + mb0)·OH + oh)·OW: y's row index of (mb0, oh, ow 0) */
} CbCtx;

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }
static LLVMValueRef addc(FcKernel *k, LLVMValueRef a, int64_t c) { return c == 0 ? a : fc_cg_iadd(k, a, c64(k, c)); }

/* &base[off] in floats. Every load and store lies inside its buffer, but the row pointers they are
 * offset from need not (the row of ih0 at a tile's first column, before the left padding), so not
 * inbounds. */
static LLVMValueRef fptr(CbCtx *c, LLVMValueRef base, LLVMValueRef off) {
  return LLVMBuildGEP2(c->k->b, c->f32, base, &off, 1, "");
}

static LLVMValueRef vload(CbCtx *c, LLVMValueRef p, unsigned align) {
  LLVMValueRef v = LLVMBuildLoad2(c->k->b, c->vt, p, "");
  LLVMSetAlignment(v, align);
  return v;
}

static LLVMValueRef splat(CbCtx *c, LLVMValueRef s) { return fc_cg_splat(c->k, s, (unsigned)c->g->B); }

/* Offset in floats, from the row pointer of (ic block, ih), of input channel ic of the block at column iw. */
static int64_t x_off(const Cb *g, int64_t ic, int64_t iw) {
  return g->blocked ? iw * g->B + ic : ic * g->H * g->W + iw;
}

/* y's element offset of vector (j, pixel ow) of the current row: (yrow + j·OH·OW + ow)·8. */
static LLVMValueRef y_at(CbCtx *c, int j, LLVMValueRef ow) {
  FcKernel *k = c->k;
  LLVMValueRef row = fc_cg_iadd(k, addc(k, c->yrow, (int64_t)j * c->g->OH * c->g->OW), ow);
  return fptr(c, c->k->out[0], fc_cg_imulc(k, row, c->g->B));
}

/* One tile: pixels ow0 .. ow0 + nr - 1 of the current row (ow0v: the run-time first pixel of a loop
 * tile, every tap inside the row; NULL: an edge tile at the constant ow0, taps checked here). */
static void emit_tile(CbCtx *c, LLVMValueRef ow0v, int64_t ow0, int nr) {
  FcKernel *k = c->k;
  const Cb *g = c->g;
  LLVMBuilderRef b = k->b;
  int J = c->J;
  LLVMValueRef ow = ow0v ? ow0v : c64(k, ow0);
  LLVMValueRef zero = LLVMConstNull(c->vt);

  /* Start: zeros, or the partial sums of the earlier chunks (the first chunk's load reads y before it
   * is written, a valid address whose value the select drops). */
  for (int j = 0; j < J; j++)
    for (int r = 0; r < nr; r++) {
      LLVMValueRef v = zero;
      if (c->first) {
        LLVMValueRef old = vload(c, y_at(c, j, addc(k, ow, r)), 4);
        v = LLVMBuildSelect(b, c->first, zero, old, "");
      }
      LLVMBuildStore(b, v, c->acc[j * MAX_R + r]);
    }

  /* Whether any (pixel, kw) tap reads the row (always, in a loop tile). */
  bool any = ow0v != NULL;
  for (int r = 0; r < nr; r++)
    for (int64_t kw = 0; kw < g->KW; kw++) any |= tap_inside(g, ow0 + r, kw);

  if (any) {
    FcLoop lc, lh;
    LLVMValueRef cb = fc_cg_loop_begin(k, &lc, c->cb0, c->cb1, 1, "icb");
    LLVMValueRef kh = fc_cg_loop_begin(k, &lh, c->kh_lo, c->kh_hi, 1, "kh");
    LLVMValueRef ih = fc_cg_iadd(k, c->ih0, fc_cg_imulc(k, kh, g->dh));
    /* The row pointer of (ic block, ih), at column ow0·sw of this tile. */
    LLVMValueRef xrow;
    if (g->blocked) {
      LLVMValueRef plane = fc_cg_iadd(k, fc_cg_iadd(k, fc_cg_imulc(k, c->n, g->xcb), c->ib0), cb);
      xrow = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, plane, g->H), ih), g->W * g->B);
    } else {
      LLVMValueRef plane = fc_cg_iadd(k, fc_cg_imulc(k, c->n, g->C), fc_cg_imulc(k, cb, g->icb));
      xrow = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, plane, g->H), ih), g->W);
    }
    if (ow0v) xrow = fc_cg_iadd(k, xrow, fc_cg_imulc(k, ow0v, g->sw * (g->blocked ? g->B : 1)));
    LLVMValueRef xp = fptr(c, k->in[0], xrow);
    LLVMValueRef wstep = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, cb, g->KH), kh), g->KW * g->icb * g->B * J);
    LLVMValueRef wp = fptr(c, c->wgrp, wstep);
    LLVMValueRef a[MAX_J * MAX_R];
    for (int j = 0; j < J; j++)
      for (int r = 0; r < nr; r++) a[j * MAX_R + r] = LLVMBuildLoad2(b, c->vt, c->acc[j * MAX_R + r], "");
    int64_t base_ow = ow0v ? 0 : ow0;
    for (int64_t kw = 0; kw < g->KW; kw++) {
      bool need = false;
      for (int r = 0; r < nr; r++) need |= ow0v != NULL || tap_inside(g, ow0 + r, kw);
      if (!need) continue;
      for (int64_t ic = 0; ic < g->icb; ic++) {
        LLVMValueRef wv[MAX_J];
        for (int j = 0; j < J; j++) {
          wv[j] = vload(c, fptr(c, wp, c64(k, ((kw * g->icb + ic) * J + j) * g->B)), 32);
          LLVMSetVolatile(wv[j], 1);
        }
        for (int r = 0; r < nr; r++) {
          if (!(ow0v != NULL || tap_inside(g, ow0 + r, kw))) continue;
          int64_t off = x_off(g, ic, in_col(g, base_ow + r, kw));
          LLVMValueRef xs = LLVMBuildLoad2(b, c->f32, fptr(c, xp, c64(k, off)), "");
          LLVMSetAlignment(xs, 4);
          LLVMSetVolatile(xs, 1); /* one load per step: see the top */
          LLVMValueRef xv = splat(c, xs);
          for (int j = 0; j < J; j++) a[j * MAX_R + r] = fc_cg_madd(k, wv[j], xv, a[j * MAX_R + r]);
        }
      }
    }
    for (int j = 0; j < J; j++)
      for (int r = 0; r < nr; r++) LLVMBuildStore(b, a[j * MAX_R + r], c->acc[j * MAX_R + r]);
    fc_cg_loop_end(k, &lh);
    fc_cg_loop_end(k, &lc);
  }

  /* Finish: partial sums stored as they are, or (last chunk) bias, epilogue and the one store. */
  LLVMBasicBlockRef fin = NULL, join = NULL;
  if (c->last) {
    LLVMBasicBlockRef part = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "partial");
    fin = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "finish");
    join = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "stored");
    LLVMBuildCondBr(b, c->last, fin, part);
    LLVMPositionBuilderAtEnd(b, part);
    for (int j = 0; j < J; j++)
      for (int r = 0; r < nr; r++) {
        LLVMValueRef v = LLVMBuildLoad2(b, c->vt, c->acc[j * MAX_R + r], "");
        LLVMSetAlignment(LLVMBuildStore(b, v, y_at(c, j, addc(k, ow, r))), 4);
      }
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, fin);
  }
  for (int j = 0; j < J; j++) {
    LLVMValueRef bias = NULL;
    if (c->has_bias) bias = vload(c, fptr(c, k->in[2], fc_cg_imulc(k, fc_cg_iadd(k, c->mb0, c64(k, j)), g->B)), 4);
    for (int r = 0; r < nr; r++) {
      LLVMValueRef v = LLVMBuildLoad2(b, c->vt, c->acc[j * MAX_R + r], "");
      if (bias) v = LLVMBuildFAdd(b, v, bias, "");
      LLVMValueRef owr = addc(k, ow, r);
      if (c->epi) {
        LLVMValueRef row = fc_cg_iadd(k, addc(k, c->yrow, (int64_t)j * g->OH * g->OW), owr);
        v = fc_cg_epilogue_value(k, c->epi, v, row, c64(k, 0));
      }
      LLVMSetAlignment(LLVMBuildStore(b, v, y_at(c, j, owr)), 4);
    }
  }
  if (join) {
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, join);
  }
}

/* Every tile of the current output row: left edge tiles, the loop of interior tiles, right edge tiles
 * (the last possibly partial). */
static void emit_row(CbCtx *c, const CbRow *p) {
  FcKernel *k = c->k;
  for (int i = 0; i < p->loop_at; i++) emit_tile(c, NULL, p->start[i], p->width[i]);
  if (p->ow_hi > p->ow_lo) {
    FcLoop lt;
    LLVMValueRef ow0 = fc_cg_loop_begin(k, &lt, c64(k, p->ow_lo), c64(k, p->ow_hi), p->R, "ow");
    emit_tile(c, ow0, 0, p->R);
    fc_cg_loop_end(k, &lt);
  }
  for (int i = p->loop_at; i < p->n_straight; i++) emit_tile(c, NULL, p->start[i], p->width[i]);
}

/* The task's rows [oh0, oh1) for the oc group starting at block mb0 with J blocks, over every chunk. */
static void emit_group(CbCtx *c, int J, LLVMValueRef grp, LLVMValueRef oh0, LLVMValueRef oh1) {
  FcKernel *k = c->k;
  const Cb *g = c->g;
  LLVMBuilderRef b = k->b;
  c->J = J;
  c->mb0 = fc_cg_imulc(k, grp, g->J);
  /* Full groups come first, so the group's packed weights start at grp · (ncb·icb·KH·KW·8·J_full). */
  c->wgrp = fptr(c, c->wpk, fc_cg_imulc(k, grp, g->ncb * g->icb * g->KH * g->KW * g->B * g->J));
  c->ib0 = c64(k, 0);
  if (g->G > 1) { /* grouped_ib0 at run time */
    LLVMValueRef grp0 = LLVMBuildUDiv(b, fc_cg_imulc(k, grp, g->J * g->B), c64(k, g->Mg), "");
    LLVMValueRef lo = LLVMBuildUDiv(b, fc_cg_imulc(k, grp0, g->Cg), c64(k, g->B), "");
    c->ib0 = fc_cg_smin(k, lo, c64(k, g->xcb - g->ncb));
  }
  FcLoop lk;
  LLVMValueRef ci = NULL;
  if (g->nchunks > 1) {
    ci = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, g->nchunks), 1, "chunk");
    c->first = LLVMBuildICmp(b, LLVMIntEQ, ci, c64(k, 0), "first");
    c->last = LLVMBuildICmp(b, LLVMIntEQ, ci, c64(k, g->nchunks - 1), "last");
    c->cb0 = fc_cg_imulc(k, ci, g->chunk);
    c->cb1 = fc_cg_smin(k, addc(k, c->cb0, g->chunk), c64(k, g->ncb));
  } else {
    c->first = c->last = NULL;
    c->cb0 = c64(k, 0);
    c->cb1 = c64(k, g->ncb);
  }
  FcLoop lr;
  c->oh = fc_cg_loop_begin(k, &lr, oh0, oh1, 1, "oh");
  /* Kernel rows whose input row ih0 + kh·dh lies in [0, H): all of them without vertical padding (then
   * constants, so a 1×1 conv's kh loop disappears). */
  c->ih0 = addc(k, fc_cg_imulc(k, c->oh, g->sh), -g->pt);
  if (g->pt == 0 && (g->OH - 1) * g->sh + (g->KH - 1) * g->dh < g->H) {
    c->kh_lo = c64(k, 0);
    c->kh_hi = c64(k, g->KH);
  } else {
    LLVMValueRef neg = LLVMBuildSub(b, c64(k, 0), c->ih0, "");
    LLVMValueRef lo = LLVMBuildSDiv(b, addc(k, neg, g->dh - 1), c64(k, g->dh), "");
    c->kh_lo = fc_cg_smax(k, lo, c64(k, 0));
    LLVMValueRef room = LLVMBuildSub(b, c64(k, g->H), c->ih0, ""); /* rows from ih0 to the bottom */
    LLVMValueRef hi = LLVMBuildSDiv(b, addc(k, fc_cg_smax(k, room, c64(k, 0)), g->dh - 1), c64(k, g->dh), "");
    c->kh_hi = fc_cg_smin(k, hi, c64(k, g->KH));
  }
  LLVMValueRef plane = fc_cg_iadd(k, fc_cg_imulc(k, c->n, g->MB), c->mb0);
  c->yrow = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, plane, g->OH), c->oh), g->OW);
  emit_row(c, J == g->J ? &g->row : &g->row_l);
  fc_cg_loop_end(k, &lr);
  if (ci) fc_cg_loop_end(k, &lk);
}

/* ---- the kernel ---------------------------------------------------------------------------------- */

/* Packs the [M, Cg, KH, KW] weights as [group][ic block][kh][kw][ic][8J oc] (see the top), zeros
 * where input channel c is not in output channel oc's conv group. */
static float *pack_weights(const Cb *g, const float *w) {
  int64_t n = g->M * g->ncb * g->icb * g->KH * g->KW;
  float *dst = malloc((size_t)n * sizeof(float) + 1);
  if (!dst) return NULL;
  int64_t at = 0;
  for (int64_t grp = 0; grp < g->ngroups; grp++) {
    int64_t J = grp == g->ngroups - 1 ? g->Jl : g->J, oc0 = grp * g->J * g->B, ib0 = grouped_ib0(g, grp);
    for (int64_t cb = 0; cb < g->ncb; cb++)
      for (int64_t kh = 0; kh < g->KH; kh++)
        for (int64_t kw = 0; kw < g->KW; kw++)
          for (int64_t ic = 0; ic < g->icb; ic++)
            for (int64_t o = 0; o < J * g->B; o++) {
              int64_t oc = oc0 + o, c = (ib0 + cb) * g->icb + ic;
              dst[at++] = c / g->Cg != oc / g->Mg ? 0.0f : w[((oc * g->Cg + c % g->Cg) * g->KH + kh) * g->KW + kw];
            }
  }
  FC_ASSERT(at == n);
  return dst;
}

/* y[n, m/8, oh, ow, m%8] = epilogue(bias[m] + Σ_{c, kh, kw} w[m, c, kh, kw] · x(n, c, oh·sh - pt + kh·dh,
 * ow·sw - pl + kw·dw)). */
FcStatus fc_conv_blocked_dense(FcKernel *k) {
  Cb g;
  if (!cb_geometry(k, &g))
    return fc_cg_error(k, FC_ERR_INTERNAL, "the dense blocked conv kernel does not apply to this conv");
  fc_kernel_set_outer(k, g.N * g.nrb * g.ngroups,
                      2.0 * (double)g.rb * (double)g.OW * (double)(g.J * g.B) *
                          (double)(g.ncb * g.icb * g.KH * g.KW));

  CbCtx c = {.k = k, .g = &g, .f32 = LLVMFloatTypeInContext(k->ctx)};
  c.vt = LLVMVectorType(c.f32, (unsigned)g.B);
  c.has_bias = k->op->n_operands > 2 && k->in[2] != NULL;
  FcStatus st = fc_cg_epilogue_init(k, 1, &c.epi);
  if (st != FC_OK) return st;
  float *packed = pack_weights(&g, fc_value_const(k->op->operands[1].value)->data);
  if (!packed) return fc_cg_error(k, FC_ERR_LIMIT, "out of memory packing the weights");
  size_t count = (size_t)(g.M * g.ncb * g.icb * g.KH * g.KW);
  LLVMValueRef gv = fc_cg_const_f32(k, k->op->operands[1].value, packed, count, "conv_blocked_w");
  free(packed);
  c.wpk = fc_kernel_substitute_operand(k, 1, gv);
  for (int j = 0; j < g.J; j++)
    for (int r = 0; r < MAX_R; r++) c.acc[j * MAX_R + r] = fc_cg_entry_alloca(k, c.vt, "acc");

  LLVMBuilderRef b = k->b;
  FcLoop lt;
  LLVMValueRef it = fc_cg_loop_begin(k, &lt, k->begin, k->end, 1, "task");
  LLVMValueRef grp = LLVMBuildURem(b, it, c64(k, g.ngroups), "grp");
  LLVMValueRef rest = LLVMBuildUDiv(b, it, c64(k, g.ngroups), "");
  LLVMValueRef blk = LLVMBuildURem(b, rest, c64(k, g.nrb), "rblk");
  c.n = LLVMBuildUDiv(b, rest, c64(k, g.nrb), "n");
  LLVMValueRef oh0 = fc_cg_imulc(k, blk, g.rb);
  LLVMValueRef oh1 = fc_cg_smin(k, addc(k, oh0, g.rb), c64(k, g.OH));
  if (g.Jl != g.J) {
    LLVMValueRef is_last = LLVMBuildICmp(b, LLVMIntEQ, grp, c64(k, g.ngroups - 1), "");
    LLVMBasicBlockRef full = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "full_group");
    LLVMBasicBlockRef part = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "last_group");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "group_done");
    LLVMBuildCondBr(b, is_last, part, full);
    LLVMPositionBuilderAtEnd(b, part);
    emit_group(&c, g.Jl, grp, oh0, oh1);
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, full);
    emit_group(&c, g.J, grp, oh0, oh1);
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, join);
  } else {
    emit_group(&c, g.J, grp, oh0, oh1);
  }
  fc_cg_loop_end(k, &lt);
  return FC_OK;
}
