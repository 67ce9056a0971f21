/* kernel_winograd.c — 2-D f32 convolution with 3×3 filters, stride 1, dilation 1, group 1, by Winograd's
 * minimal filtering F(m×m, 3×3): each m×m tile of the output comes from an a×a tile of the input
 * (a = m + 2) with a² multiplies per (input, output) channel pair instead of 9·m², i.e. 4× fewer for
 * F(4×4, 3×3) and 2.25× fewer for F(2×2, 3×3):
 *
 *     Y = Aᵀ [ Σ_c (G g_{m,c} Gᵀ) ⊙ (Bᵀ d_c B) ] A.
 *
 * The matrices come from the Toom-Cook construction over a-1 interpolation points and ∞ (wino_init), so
 * both variants are tables, not hand-written code. F(4×4) uses the points 0, ±1, 1/2, -2, which halve
 * the rounding error of the textbook 0, ±1, ±2 (Barabasz et al., "Error analysis and improving the
 * accuracy of Winograd convolution for deep neural networks", 2020).
 *
 * The sum over c is a batch of a² GEMMs, one per transform position ξ: Y_ξ[M × tiles] = U_ξ[M × C] ·
 * V_ξ[C × tiles]. The filter transforms U_ξ are computed on the host in double precision and packed
 * as the A operand of cg_gemm.h (one constant global for all ξ). The kernel's outer iterations are
 * (tile block, M-block) pairs; a tile block is nr consecutive tiles in (batch, tile row, tile column)
 * order, so blocks cross tile rows and images freely and no GEMM column is wasted except at the very
 * end. For each tile block, the task
 *
 *   1. transforms the input tiles of all C channels straight into the packed-B layout of V_ξ (skipped
 *      when the previous iteration of the same chunk already did it for this block). The transforms run
 *      on vectors of 8 tiles, in the lane order [t0 t2 t4 t6 | t1 t3 t5 t7] that V, Y and step 3 share:
 *      per row of the a×a windows, each pair of tiles (2q, 2q+1) gives 8-float vectors of 4 window
 *      columns each: one masked load with F(4×4) when the tile rows have an even length (every pair
 *      then lies side by side in one row, and neighbouring windows start 4 columns apart), else two
 *      4-float masked loads. Lanes outside the
 *      image or past the last tile read 0 (the masks, computed once per group of 8 tiles, are reused by
 *      every channel), so padding costs no branch. An in-lane 4×4 transpose turns four such vectors into
 *      one vector per window column; the row transform's results are staged in scratch and the column
 *      transform writes V. Both transforms are sums over vectors emitted from the matrix with its ±
 *      symmetries shared (lin_map);
 *   2. runs the microkernel over K = C for each ξ and each mr-row panel of its M-block into Y_ξ;
 *   3. applies Aᵀ · A to each (output channel, 8 tiles), transposes back to rows of tiles (staged on
 *      the stack per pair of tiles), and writes them with the bias and fused epilogue (cg_epilogue.h)
 *      applied: the rows of two whole tiles side by side as one 2m-float vector, a lone whole tile's
 *      as m floats, a tile cut by the image's right or bottom edge element by element.
 * Scratch per task: V (a²·C·nr floats), one M-block of Y (a²·Mb·nr, sized to stay in L2), the staged
 * rows and the masks. V_ξ and Y_ξ are one cache line further apart than their size, so the a² vectors
 * stored or loaded together never share an L1 set at strides that are multiples of 4 KiB.
 *
 * Code size: the transforms of one window row or column, and the stores of one pair of tiles, are each
 * emitted once, inside loops that LLVM is told not to unroll (loop_begin): straight-line code for all of
 * them would take far longer to compile and run no faster.
 *
 * fc_conv_winograd_variant (target.h: the layout pass asks it too, so a conv it leaves in NCHW for
 * Winograd is one codegen then gives Winograd) picks, per shape, F(4×4), F(2×2) or neither with a cost
 * model (wino_cost against direct_cost) of GEMM work including the tiles cut by the edges and the
 * padding of the last tile block, the transforms, and the streaming of the transformed filters, which are a²/9 times the
 * size of the original ones (and never more than U_MAX_BYTES). Small images favour F(2×2): a 7×7
 * output is 4 tiles of F(4×4) in a 16-column panel but 16 of F(2×2).
 * Every output element is computed by one task in a fixed order: results do not depend on the thread
 * count. As in every Winograd convolution, an Inf or NaN in the input spreads to the whole output tile
 * whose window holds it, not only to the outputs that read it directly.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/DebugInfo.h> /* LLVMTemporaryMDNode: self-referential loop metadata */

#include "cg_epilogue.h"
#include "cg_gemm.h"

enum {
  R = 3,                  /* filter size */
  MAX_M = 4,              /* largest output tile */
  MAX_A = MAX_M + R - 1,  /* largest input tile */
  LANES = 8,              /* tiles per vector in the transforms */
  MIN_TASKS = 8,          /* M is cut into more blocks while there are fewer outer iterations */
  Y_BUDGET = 192 * 1024,  /* bytes of Y per task: its M-block stays in L2 beside V */
};
/* Larger transformed filters (a²/9 times the weights) cost more memory than the time they save; a
 * larger V (all input channels of one tile block) would be a task's scratch on every thread. */
#define U_MAX_BYTES (64.0 * 1024 * 1024)
#define V_MAX_BYTES (8.0 * 1024 * 1024)
/* Transformed filters up to this size are expected to stream from L3 between runs; larger ones from memory. */
#define U_L3_BYTES (2.0 * 1024 * 1024)

/* ---- the transform matrices --------------------------------------------------------------------- */

typedef struct Wino {
  int m, a;                 /* output tile m×m, input tile a×a */
  double AT[MAX_M][MAX_A];  /* output transform Aᵀ */
  double G[MAX_A][R];       /* filter transform */
  double BT[MAX_A][MAX_A];  /* input transform Bᵀ */
} Wino;

/* Toom-Cook for the correlation y_i = Σ_k g_k d_{i+k}: with the finite points p_0..p_{a-2} and ∞,
 * Aᵀ[i][j] = p_j^i (last column e_{m-1}), G[j][k] = p_j^k / f_j with f_j = Π_{l≠j} (p_j - p_l) (last row
 * e_{R-1}), and row j of Bᵀ holds the coefficients of Π_{l≠j} (x - p_l) (last row: Π_l (x - p_l)). */
static void wino_init(Wino *w, int m, const double *pts) {
  int a = m + R - 1;
  memset(w, 0, sizeof *w);
  w->m = m;
  w->a = a;
  for (int j = 0; j < a; j++) {
    double poly[MAX_A + 1] = {1}, f = 1;
    int deg = 0;
    for (int l = 0; l < a - 1; l++) {
      if (l == j) continue;
      /* poly *= (x - p_l) */
      for (int t = ++deg; t >= 0; t--) poly[t] = (t ? poly[t - 1] : 0) - pts[l] * poly[t];
      if (j < a - 1) f *= pts[j] - pts[l];
    }
    for (int t = 0; t < a; t++) w->BT[j][t] = poly[t];
    for (int k = 0; k < R; k++) w->G[j][k] = j < a - 1 ? pow(pts[j], k) / f : (k == R - 1);
  }
  for (int i = 0; i < m; i++)
    for (int j = 0; j < a; j++) w->AT[i][j] = j < a - 1 ? pow(pts[j], i) : (i == m - 1);
}

/* F(4×4, 3×3) with the points 0, ±1, 1/2, -2, or F(2×2, 3×3) with 0, ±1. */
static void wino_variant(Wino *w, int m) {
  static const double p4[] = {0, 1, -1, 0.5, -2}, p2[] = {0, 1, -1};
  wino_init(w, m, m == 4 ? p4 : p2);
}

/* ---- the plan: tiles, blocks, cost -------------------------------------------------------------- */

typedef struct Plan {
  Wino w;
  FcGemmArch g;
  int64_t Nb, C, H, W, M, OH, OW, pt, pl;
  int64_t TH, TW, TT, NT;  /* tile rows and columns per image, tiles per image, tiles in all */
  int64_t T;               /* tiles per block: one nr-wide GEMM panel */
  int64_t ntb;             /* tile blocks */
  int64_t Mb, nmb;         /* rows per M-block (a multiple of mr), M-blocks */
  int64_t kblocks;         /* K-blocks of the microkernel calls */
  int64_t vstride, ystride; /* floats from V_ξ to V_ξ+1 and from Y_ξ to Y_ξ+1 */
} Plan;

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static bool numel4(int64_t a, int64_t b, int64_t c, int64_t d, int64_t *n) {
  return fc_checked_mul(a, b, n) && fc_checked_mul(*n, c, n) && fc_checked_mul(*n, d, n);
}

/* The shape test of the decision: f32, 3×3, stride 1, dilation 1, group 1, non-empty, within the sizes
 * the index arithmetic allows. */
static bool shape_ok(const FcConvShape *s) {
  if (s->dtype != FC_DT_F32 || s->KH != R || s->KW != R || s->group != 1) return false;
  if (s->stride[0] != 1 || s->stride[1] != 1 || s->dilation[0] != 1 || s->dilation[1] != 1) return false;
  int64_t xn, yn, wn;
  if (!numel4(s->N, s->C, s->H, s->W, &xn) || !numel4(s->N, s->M, s->OH, s->OW, &yn) ||
      !numel4(s->M, s->C, R, R, &wn))
    return false;
  /* The transformed filters hold (a²/9)·wn floats; the tile count and the scratch stay far below 2^62. */
  return xn > 0 && yn > 0 && wn > 0 && wn <= (INT64_C(1) << 40) && yn <= (INT64_C(1) << 50);
}

static void plan_init(const FcTarget *t, const FcConvShape *s, int m, Plan *p) {
  memset(p, 0, sizeof *p);
  wino_variant(&p->w, m);
  fc_target_gemm_arch(t, &p->g);
  p->Nb = s->N;
  p->C = s->C;
  p->H = s->H;
  p->W = s->W;
  p->M = s->M;
  p->OH = s->OH;
  p->OW = s->OW;
  p->pt = s->pads[0];
  p->pl = s->pads[1];
  p->TH = cdiv(p->OH, m);
  p->TW = cdiv(p->OW, m);
  p->TT = p->TH * p->TW;
  p->NT = p->Nb * p->TT;
  p->T = p->g.nr;
  p->ntb = cdiv(p->NT, p->T);
  int64_t a2 = (int64_t)p->w.a * p->w.a, mr = p->g.mr;
  int64_t panels = cdiv(p->M, mr);
  int64_t per_block = Y_BUDGET / (a2 * p->T * 4 * mr); /* panels of Y that fit the budget */
  if (per_block < 1) per_block = 1;
  int64_t nmb = cdiv(panels, per_block);
  while (p->ntb * nmb < MIN_TASKS && panels / (nmb + 1) >= 2) nmb++;
  int64_t pb = cdiv(panels, nmb);
  p->Mb = pb * mr;
  p->nmb = cdiv(panels, pb);
  p->kblocks = cdiv(p->C, p->g.kc);
  /* One cache line more than the matrix: a² vectors stored or loaded at once at a stride that is a
   * multiple of 4 KiB would all fall into one L1 set. */
  p->vstride = p->C * p->T + 16;
  p->ystride = p->Mb * p->T + 16;
}

/* The bytes of the transformed filters (which the executable carries and a run reads). */
static double filter_bytes(const Plan *p) {
  return (double)p->w.a * p->w.a * (double)cdiv(p->M, p->g.mr) * p->g.mr * (double)p->C * 4;
}

/* Estimated cycles; the constants are measured model parameters (AVX2, see bench/RESULTS.md for the
 * machine): the microkernel reaches ~85% of the FMA peak
 * (2 pipes × vl lanes per cycle) on the a² products; the input transform costs ~33 (F(4×4)) or ~12
 * (F(2×2)) cycles per (tile, input channel) and the output transform ~20 or ~5 per (tile, output
 * channel), on 8-lane vectors (twice that with 4-lane ones); the transformed filters stream once per tile
 * block when they do not fit in L2: at ~8 bytes per cycle up to U_L3_BYTES (they stay in L3), at ~2.5
 * when larger (AlexNet's 13×13 convs, 4-7 MiB each in F(2×2): in the whole model, beside 230 MiB of
 * fully connected weights, they come from memory, and the GEMM over 49 tiles waits on them). */
static double wino_cost(const Plan *p) {
  double a2 = (double)p->w.a * p->w.a, fma = 2.0 * p->g.vl, xs = p->g.vl >= LANES ? 1.0 : 2.0;
  double tiles = (double)p->ntb * (double)p->T, C = (double)p->C;
  double mp = (double)cdiv(p->M, p->g.mr) * p->g.mr;
  double gemm = a2 * C * mp * tiles / (0.85 * fma);
  double in = p->w.m == 4 ? 33 : 12, out = p->w.m == 4 ? 20 : 5;
  double xf = xs * tiles * (C * in + (double)p->M * out);
  double ubytes = filter_bytes(p);
  double rate = ubytes > U_L3_BYTES ? 2.5 : 8.0;
  double stream = ubytes > 512.0 * 1024 ? (double)p->ntb * ubytes / rate : 0;
  return (gemm > stream ? gemm : stream) + xf;
}

/* The packed im2col GEMM (kernel_conv_gemm.c): 9·C·M FMAs per output at ~80% of the peak. */
static double direct_cost(const Plan *p) {
  double fma = 2.0 * p->g.vl, outs = (double)p->Nb * (double)p->OH * (double)p->OW;
  return (double)R * R * (double)p->C * (double)p->M * outs / (0.8 * fma);
}

/* The variant to use (4 or 2), or 0 when the direct GEMM is expected to be about as fast. */
static bool fits(const Plan *p) {
  return filter_bytes(p) <= U_MAX_BYTES && (double)p->w.a * p->w.a * (double)p->vstride * 4 <= V_MAX_BYTES;
}

/* The variant (4 or 2, or 0: none) and, in *speedup, the direct GEMM's estimated time over its. */
static int variant(const FcTarget *t, const FcConvShape *s, double *speedup) {
  *speedup = 1;
  if (!shape_ok(s)) return 0;
  Plan p4, p2;
  plan_init(t, s, 4, &p4);
  plan_init(t, s, 2, &p2);
  double c4 = fits(&p4) ? wino_cost(&p4) : HUGE_VAL, c2 = fits(&p2) ? wino_cost(&p2) : HUGE_VAL;
  int best = c4 <= c2 ? 4 : 2;
  double cb = best == 4 ? c4 : c2, direct = direct_cost(&p4);
  if (cb >= 0.9 * direct) return 0;
  *speedup = direct / cb;
  return best;
}

int fc_conv_winograd_variant(const FcTarget *t, const FcConvShape *s) {
  double speedup;
  return variant(t, s, &speedup);
}

double fc_conv_winograd_speedup(const FcTarget *t, const FcConvShape *s) {
  double speedup;
  variant(t, s, &speedup);
  return speedup;
}

/* The variant codegen uses for the kernel's op: the decision above, for a conv with constant weights
 * (transformed at compile time). */
static int choose(const FcKernel *k, FcConvShape *s) {
  const FcTensor *cw = k->op->n_operands >= 2 ? fc_value_const(k->op->operands[1].value) : NULL;
  if (!cw || !cw->data || !fc_conv_shape_of(k->op, s)) return 0;
  return fc_conv_winograd_variant(k->target, s);
}

bool fc_conv_winograd_applies(const FcKernel *k) {
  FcConvShape s;
  return choose(k, &s) != 0;
}

/* ---- emit helpers --------------------------------------------------------------------------------- */

typedef struct Ctx {
  FcKernel *k;
  LLVMBuilderRef b;
  const Plan *p;
  const Wino *w;
  LLVMTypeRef f32, i1, i32, i64, v8, ptr;
  FcCgEpilogue *epi;
} Ctx;

static LLVMValueRef c64(Ctx *c, int64_t v) { return fc_cg_const_i64(c->k, v); }
static LLVMValueRef i32c(Ctx *c, int v) { return LLVMConstInt(c->i32, (unsigned long long)v, 1); }
static LLVMValueRef add(Ctx *c, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(c->b, a, b, ""); }
static LLVMValueRef mulc(Ctx *c, LLVMValueRef a, int64_t v) { return v == 1 ? a : LLVMBuildMul(c->b, a, c64(c, v), ""); }
static LLVMValueRef smin(Ctx *c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, a, b, ""), a, b, "");
}
static LLVMValueRef fptr(Ctx *c, LLVMValueRef base, LLVMValueRef idx) { return LLVMBuildGEP2(c->b, c->f32, base, &idx, 1, ""); }

static LLVMValueRef shuffle(Ctx *c, LLVMValueRef x, LLVMValueRef y, const int *idx, int n) {
  LLVMValueRef m[16];
  for (int i = 0; i < n; i++) m[i] = i32c(c, idx[i]);
  return LLVMBuildShuffleVector(c->b, x, y ? y : LLVMGetUndef(LLVMTypeOf(x)), LLVMConstVector(m, (unsigned)n), "");
}

static LLVMValueRef splat_i1(Ctx *c, LLVMValueRef s, int n) {
  LLVMTypeRef vt = LLVMVectorType(c->i1, (unsigned)n);
  LLVMValueRef v = LLVMBuildInsertElement(c->b, LLVMGetUndef(vt), s, i32c(c, 0), "");
  return LLVMBuildShuffleVector(c->b, v, LLVMGetUndef(vt), LLVMConstNull(LLVMVectorType(c->i32, (unsigned)n)), "");
}

static LLVMValueRef fconst(Ctx *c, LLVMTypeRef vt, double v) {
  LLVMValueRef s = LLVMConstReal(c->f32, v), lanes[16];
  unsigned n = LLVMGetVectorSize(vt);
  for (unsigned i = 0; i < n; i++) lanes[i] = s;
  return LLVMConstVector(lanes, n);
}

/* A counted loop [lo, hi) (fc_cg_loop_begin, step 1) that LLVM must not unroll. Every loop here either
 * has a large body (vectors of transforms, microkernel calls, a fused epilogue) or runs over elements
 * of a cut tile: unrolling gains nothing, while analysing and copying these bodies would dominate the
 * kernel's compile time. */
static LLVMValueRef loop_begin(Ctx *c, FcLoop *l, LLVMValueRef lo, LLVMValueRef hi, const char *name) {
  LLVMValueRef iv = fc_cg_loop_begin(c->k, l, lo, hi, 1, name);
  LLVMContextRef ctx = c->k->ctx;
  static const char dis[] = "llvm.loop.unroll.disable";
  LLVMMetadataRef s = LLVMMDStringInContext2(ctx, dis, sizeof dis - 1);
  LLVMMetadataRef ops[2] = {LLVMTemporaryMDNode(ctx, NULL, 0), LLVMMDNodeInContext2(ctx, &s, 1)};
  LLVMMetadataRef loop = LLVMMDNodeInContext2(ctx, ops, 2);
  LLVMMetadataReplaceAllUsesWith(ops[0], loop); /* the loop ID refers to itself */
  LLVMSetMetadata(LLVMGetBasicBlockTerminator(l->latch), LLVMGetMDKindIDInContext(ctx, "llvm.loop", 9),
                  LLVMMetadataAsValue(ctx, loop));
  return iv;
}

/* ---- linear maps over vectors ----------------------------------------------------------------------- */

/* One term of a sum: coef · x. */
typedef struct Term {
  double coef;
  LLVMValueRef x;
} Term;

/* Σ coef·x over n terms (zeros already dropped): the ±1 terms first, as adds and subtracts, the rest
 * as fused multiply-adds. */
static LLVMValueRef sum_terms(Ctx *c, Term *t, int n, LLVMTypeRef vt) {
  if (n == 0) return LLVMConstNull(vt);
  /* Start from a +1 term if there is one, else any unit term, else a product. */
  int first = -1;
  for (int i = 0; i < n && first < 0; i++)
    if (t[i].coef == 1) first = i;
  for (int i = 0; i < n && first < 0; i++)
    if (t[i].coef == -1) first = i;
  LLVMValueRef acc;
  if (first < 0) {
    first = 0;
    acc = LLVMBuildFMul(c->b, fconst(c, vt, t[0].coef), t[0].x, "");
  } else {
    acc = t[first].coef == 1 ? t[first].x : LLVMBuildFNeg(c->b, t[first].x, "");
  }
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < n; i++) {
      if (i == first) continue;
      bool unit = fabs(t[i].coef) == 1;
      if (unit != (pass == 0)) continue;
      if (t[i].coef == 1) acc = LLVMBuildFAdd(c->b, acc, t[i].x, "");
      else if (t[i].coef == -1) acc = LLVMBuildFSub(c->b, acc, t[i].x, "");
      else acc = fc_cg_madd(c->k, fconst(c, vt, t[i].coef), t[i].x, acc);
    }
  return acc;
}

/* Whether u and v are equal up to one sign per entry (zeros in the same places); *same and *opp count
 * the nonzero entries with equal and with opposite signs. */
static bool signed_match(const double *u, const double *v, int n, int su, int sv, int *same, int *opp) {
  *same = *opp = 0;
  for (int i = 0; i < n; i++) {
    double x = u[i * su], y = v[i * sv];
    if (fabs(x) != fabs(y)) return false;
    if (x == 0) continue;
    if (x == y) (*same)++;
    else (*opp)++;
  }
  return true;
}

/* out[i] = Σ_j T[i][j] · in[j] for i < rows, j < cols (T row-major with row stride ld), on vectors of
 * type vt. Winograd matrices pair up: two columns equal up to signs (Aᵀ's p and -p columns) are replaced
 * by their sum and difference, and two rows equal up to signs (Bᵀ's) are computed as E ± O from their
 * common even and odd parts, which roughly halves the operations of the textbook matrices. */
static void lin_map(Ctx *c, const double *T, int ld, int rows, int cols, LLVMValueRef *in, LLVMValueRef *out) {
  LLVMTypeRef vt = LLVMTypeOf(in[0]);
  /* The working matrix over the (possibly combined) inputs. */
  enum { MAXC = 2 * MAX_A };
  double Cm[MAX_A][MAXC];
  LLVMValueRef X[MAXC];
  int nx = 0;
  bool used[MAX_A] = {false};
  for (int j = 0; j < cols; j++) {
    if (used[j]) continue;
    int pair = -1, same = 0, opp = 0;
    for (int j2 = j + 1; j2 < cols && pair < 0; j2++) {
      if (used[j2] || !signed_match(T + j, T + j2, rows, ld, ld, &same, &opp)) continue;
      if (same + opp > 2) pair = j2;
    }
    if (pair < 0) {
      for (int i = 0; i < rows; i++) Cm[i][nx] = T[i * ld + j];
      X[nx++] = in[j];
      continue;
    }
    used[pair] = true;
    signed_match(T + j, T + pair, rows, ld, ld, &same, &opp);
    if (same) {
      for (int i = 0; i < rows; i++) Cm[i][nx] = T[i * ld + j] == T[i * ld + pair] ? T[i * ld + j] : 0;
      X[nx++] = LLVMBuildFAdd(c->b, in[j], in[pair], "");
    }
    if (opp) {
      for (int i = 0; i < rows; i++) Cm[i][nx] = T[i * ld + j] != T[i * ld + pair] ? T[i * ld + j] : 0;
      X[nx++] = LLVMBuildFSub(c->b, in[j], in[pair], "");
    }
  }
  bool done[MAX_A] = {false};
  for (int i = 0; i < rows; i++) {
    if (done[i]) continue;
    int mate = -1, same = 0, opp = 0;
    for (int i2 = i + 1; i2 < rows && mate < 0; i2++)
      if (!done[i2] && signed_match(Cm[i], Cm[i2], nx, 1, 1, &same, &opp) && same && opp) mate = i2;
    Term e[MAXC], o[MAXC], all[MAXC];
    int ne = 0, no = 0, na = 0;
    if (mate < 0) {
      for (int j = 0; j < nx; j++)
        if (Cm[i][j] != 0) all[na++] = (Term){Cm[i][j], X[j]};
      out[i] = sum_terms(c, all, na, vt);
      done[i] = true;
      continue;
    }
    for (int j = 0; j < nx; j++) {
      if (Cm[i][j] == 0) continue;
      if (Cm[i][j] == Cm[mate][j]) e[ne++] = (Term){Cm[i][j], X[j]};
      else o[no++] = (Term){Cm[i][j], X[j]};
    }
    LLVMValueRef E = sum_terms(c, e, ne, vt), O = sum_terms(c, o, no, vt);
    out[i] = LLVMBuildFAdd(c->b, E, O, "");
    out[mate] = LLVMBuildFSub(c->b, E, O, "");
    done[i] = done[mate] = true;
  }
}

/* ---- the filter transform (host) --------------------------------------------------------------------- */

/* U_ξ = G g Gᵀ at position ξ for every (m, c), in double, packed per ξ as the GEMM's A operand (M × C):
 * one global of a²·packed_a_size floats. */
static FcStatus filter_global(Ctx *c, LLVMValueRef *out) {
  const Plan *p = c->p;
  const Wino *w = c->w;
  const float *g = fc_value_const(c->k->op->operands[1].value)->data;
  int a = w->a;
  int64_t MC = p->M * p->C, pa = fc_gemm_packed_a_size(&p->g, p->M, p->C);
  float *u = malloc((size_t)MC * (size_t)a * (size_t)a * sizeof *u);
  float *packed = malloc((size_t)pa * (size_t)a * (size_t)a * sizeof *packed);
  if (!u || !packed) {
    free(u);
    free(packed);
    return fc_cg_error(c->k, FC_ERR_LIMIT, "out of memory for the Winograd filter transform");
  }
  for (int64_t mc = 0; mc < MC; mc++) {
    const float *f = g + mc * R * R;
    double t[MAX_A][R]; /* G g */
    for (int i = 0; i < a; i++)
      for (int l = 0; l < R; l++) {
        double s = 0;
        for (int kk = 0; kk < R; kk++) s += w->G[i][kk] * f[kk * R + l];
        t[i][l] = s;
      }
    for (int i = 0; i < a; i++)
      for (int j = 0; j < a; j++) {
        double s = 0;
        for (int l = 0; l < R; l++) s += t[i][l] * w->G[j][l];
        u[(int64_t)(i * a + j) * MC + mc] = (float)s;
      }
  }
  for (int xi = 0; xi < a * a; xi++) fc_gemm_pack_a_host(&p->g, u + xi * MC, p->M, p->C, p->C, 1, packed + xi * pa);
  *out = fc_cg_const_f32(c->k, c->k->op->operands[1].value, packed, (size_t)pa * (size_t)(a * a), "wino_u");
  free(u);
  free(packed);
  return FC_OK;
}

/* ---- per-lane tile geometry --------------------------------------------------------------------------- */

/* Tile j's coordinates: image b, tile row ty, tile column tx; `valid` is j < NT (lanes past the last
 * tile compute zeros and store nothing). */
typedef struct Lane {
  LLVMValueRef valid, b, ty, tx;
} Lane;

static Lane lane_at(Ctx *c, LLVMValueRef j) {
  const Plan *p = c->p;
  Lane l;
  l.valid = LLVMBuildICmp(c->b, LLVMIntSLT, j, c64(c, p->NT), "");
  LLVMValueRef jj = LLVMBuildSelect(c->b, l.valid, j, c64(c, 0), "");
  l.b = LLVMBuildUDiv(c->b, jj, c64(c, p->TT), "");
  LLVMValueRef r = LLVMBuildURem(c->b, jj, c64(c, p->TT), "");
  l.ty = LLVMBuildUDiv(c->b, r, c64(c, p->TW), "");
  l.tx = LLVMBuildURem(c->b, r, c64(c, p->TW), "");
  return l;
}

/* ---- 1. input transform --------------------------------------------------------------------------- */

/* The transforms keep 8 tiles per vector in the order the pairs (0,1) (2,3) (4,5) (6,7) transpose into:
 * tile t sits in lane (t % 2)·4 + t / 2, i.e. lanes [t0 t2 t4 t6 | t1 t3 t5 t7]. V, Y and the output
 * transform all use this order. */

static LLVMValueRef concat(Ctx *c, LLVMValueRef lo, LLVMValueRef hi) {
  static const int idx[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  return shuffle(c, lo, hi, idx, 8);
}

/* The in-lane 4×4 transpose of four 8-float vectors (x86 unpck/shuf, no lane crossing): element q of
 * output t's low half is element t of input q's low half, and likewise for the high halves. */
static void transpose4(Ctx *c, LLVMValueRef *v, LLVMValueRef *t, int nout) {
  static const int lo[8] = {0, 8, 1, 9, 4, 12, 5, 13}, hi[8] = {2, 10, 3, 11, 6, 14, 7, 15};
  static const int ll[8] = {0, 1, 8, 9, 4, 5, 12, 13}, hh[8] = {2, 3, 10, 11, 6, 7, 14, 15};
  LLVMValueRef t0 = shuffle(c, v[0], v[1], lo, 8), t2 = shuffle(c, v[2], v[3], lo, 8);
  t[0] = shuffle(c, t0, t2, ll, 8);
  if (nout > 1) t[1] = shuffle(c, t0, t2, hh, 8);
  if (nout > 2) {
    LLVMValueRef t1 = shuffle(c, v[0], v[1], hi, 8), t3 = shuffle(c, v[2], v[3], hi, 8);
    t[2] = shuffle(c, t1, t3, ll, 8);
    if (nout > 3) t[3] = shuffle(c, t1, t3, hh, 8);
  }
}

/* The input geometry of one tile: its window's top-left corner (y0, x0) and the offset of that corner
 * in x (which may lie outside the image: masked lanes never touch it). */
typedef struct Win {
  LLVMValueRef valid, y0, x0, off;
} Win;

static Win win_at(Ctx *c, LLVMValueRef j) {
  const Plan *p = c->p;
  Lane ln = lane_at(c, j);
  Win w;
  w.valid = ln.valid;
  w.y0 = LLVMBuildSub(c->b, mulc(c, ln.ty, c->w->m), c64(c, p->pt), "");
  w.x0 = LLVMBuildSub(c->b, mulc(c, ln.tx, c->w->m), c64(c, p->pl), "");
  w.off = add(c, add(c, mulc(c, ln.b, p->C * p->H * p->W), mulc(c, w.y0, p->W)), w.x0);
  return w;
}

/* <n x i32> all-ones where x0 + first[q] lies in [0, W) and on[q], else 0 (a masked load's mask). */
static LLVMValueRef col_mask(Ctx *c, LLVMValueRef x0, const int *first, const bool *on, LLVMValueRef valid, int n) {
  LLVMTypeRef vi64 = LLVMVectorType(c->i64, (unsigned)n), vi32 = LLVMVectorType(c->i32, (unsigned)n);
  LLVMValueRef xs = LLVMBuildInsertElement(c->b, LLVMGetUndef(vi64), x0, i32c(c, 0), "");
  xs = LLVMBuildShuffleVector(c->b, xs, LLVMGetUndef(vi64), LLVMConstNull(vi32), "");
  LLVMValueRef d[8], wl[8], en[8];
  for (int q = 0; q < n; q++) {
    d[q] = c64(c, first[q]);
    wl[q] = c64(c, c->p->W);
    en[q] = LLVMConstInt(c->i1, on[q], 0);
  }
  xs = add(c, xs, LLVMConstVector(d, (unsigned)n));
  LLVMValueRef in = LLVMBuildICmp(c->b, LLVMIntULT, xs, LLVMConstVector(wl, (unsigned)n), "");
  in = LLVMBuildAnd(c->b, in, LLVMConstVector(en, (unsigned)n), "");
  in = LLVMBuildAnd(c->b, in, splat_i1(c, valid, n), "");
  return LLVMBuildSExt(c->b, in, vi32, "");
}

/* n floats at p under the sign-bit mask `m` (<n x i32>): lanes off read 0 and touch no memory. */
static LLVMValueRef masked_load(Ctx *c, LLVMValueRef p, LLVMValueRef m, int n) {
  static const char name[] = "llvm.masked.load";
  unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
  FC_ASSERT(id != 0);
  LLVMTypeRef vt = LLVMVectorType(c->f32, (unsigned)n);
  LLVMTypeRef over[2] = {vt, c->ptr};
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->k->mod, id, over, 2);
  LLVMValueRef mask = LLVMBuildICmp(c->b, LLVMIntSLT, m, LLVMConstNull(LLVMTypeOf(m)), "");
  LLVMValueRef args[4] = {p, i32c(c, 4), mask, LLVMConstNull(vt)};
  return LLVMBuildCall2(c->b, LLVMIntrinsicGetType(c->k->ctx, id, over, 2), fn, args, 4, "");
}

/* Scratch of the input transform beside V and Y: the row-transformed tile rows of one channel (a²
 * vectors) and the load masks of one group (at most 8·2·MAX_A vectors of 4 lanes). */
enum { MASK_BYTES = LANES * 2 * MAX_A * 16 };

typedef struct InCtx {
  LLVMValueRef xin, vbuf, hbuf, mtab, grp;
  Win t[LANES];
  bool pairs;     /* adjacent tiles 2p, 2p+1 load as one 8-float vector (F(4×4) only) */
} InCtx;

/* Mask table entry i: <n x i32> at mtab + 16·i·(n / 4) bytes; entry (r·units + unit)·nw + window
 * masks window row r of one tile (unit of the 4-lane loads) or pair (unit of the 8-lane ones). */
static LLVMValueRef mask_ptr(Ctx *c, LLVMValueRef mtab, int i, int n) { return fptr(c, mtab, c64(c, (int64_t)i * n)); }

/* Fills the mask table for the group: per (tile or pair, window, row) the columns inside the image and
 * the tile(s) valid, cleared where the row is outside. */
static void group_masks(Ctx *c, InCtx *ic) {
  const Plan *p = c->p;
  int a = c->w->a, nw = (a + 3) / 4;
  int units = ic->pairs ? LANES / 2 : LANES, n = ic->pairs ? 8 : 4;
  LLVMTypeRef vi32 = LLVMVectorType(c->i32, (unsigned)n);
  for (int u = 0; u < units; u++) {
    Win *t = &ic->t[ic->pairs ? 2 * u : u];
    for (int wi = 0; wi < nw; wi++) {
      int first[8];
      bool on[8];
      for (int q = 0; q < n; q++) {
        int b = 4 * wi + q % 4; /* window column of this lane */
        first[q] = 4 * wi + q;  /* pairs: lanes 4-7 read the right tile's window (x0 + m, m = 4) */
        on[q] = b < a;
      }
      LLVMValueRef cm = col_mask(c, t->x0, first, on, t->valid, n);
      if (ic->pairs) { /* the right tile's lanes also need that tile to exist */
        static const int mix[8] = {0, 1, 2, 3, 12, 13, 14, 15};
        cm = shuffle(c, cm, col_mask(c, t->x0, first, on, ic->t[2 * u + 1].valid, n), mix, 8);
      }
      for (int r = 0; r < a; r++) {
        LLVMValueRef ok = LLVMBuildICmp(c->b, LLVMIntULT, add(c, t->y0, c64(c, r)), c64(c, p->H), "");
        LLVMValueRef m = LLVMBuildSelect(c->b, ok, cm, LLVMConstNull(vi32), "");
        LLVMValueRef st = LLVMBuildStore(c->b, m, mask_ptr(c, ic->mtab, (r * units + u) * nw + wi, n));
        LLVMSetAlignment(st, 16);
      }
    }
  }
}

/* V_ξ[c][8·grp .. +8) for every channel c: per row r of the windows, 8-float vectors of two tiles
 * (one masked load for an adjacent pair, two 4-float ones otherwise), transposed into one vector per
 * window column and row-transformed into hbuf; then the column transform from hbuf into V. */
static void input_channels(Ctx *c, InCtx *ic) {
  const Plan *p = c->p;
  const Wino *w = c->w;
  int a = w->a, nw = (a + 3) / 4, units = ic->pairs ? LANES / 2 : LANES, n = ic->pairs ? 8 : 4;
  LLVMBuilderRef b = c->b;
  LLVMTypeRef vm = LLVMVectorType(c->i32, (unsigned)n);
  FcLoop lc;
  LLVMValueRef ci = loop_begin(c, &lc, c64(c, 0), c64(c, p->C), "wc");
  LLVMValueRef cbase = mulc(c, ci, p->H * p->W);
  /* Rows of the windows (a loop: straight-line code for all a² vectors would be large to compile and
   * gain nothing, the loop overhead being a few instructions against ~100). */
  FcLoop lr;
  LLVMValueRef r = loop_begin(c, &lr, c64(c, 0), c64(c, a), "wr");
  LLVMValueRef rbase = add(c, cbase, mulc(c, r, p->W));
  LLVMValueRef mrow = fptr(c, ic->mtab, mulc(c, r, (int64_t)units * nw * n));
  LLVMValueRef e[8];
  for (int wi = 0; wi < nw; wi++) {
    LLVMValueRef P[4];
    for (int q = 0; q < 4; q++) {
      LLVMValueRef X[2];
      for (int h = 0; h < (ic->pairs ? 1 : 2); h++) {
        int u = ic->pairs ? q : 2 * q + h;
        LLVMValueRef m = LLVMBuildLoad2(b, vm, fptr(c, mrow, c64(c, (int64_t)(u * nw + wi) * n)), "");
        LLVMSetAlignment(m, 16);
        LLVMValueRef at = add(c, add(c, ic->t[ic->pairs ? 2 * q : u].off, rbase), c64(c, 4 * wi));
        X[h] = masked_load(c, fptr(c, ic->xin, at), m, n);
      }
      P[q] = ic->pairs ? X[0] : concat(c, X[0], X[1]);
    }
    transpose4(c, P, e + 4 * wi, a - 4 * wi < 4 ? a - 4 * wi : 4);
  }
  LLVMValueRef h[MAX_A];
  lin_map(c, &w->BT[0][0], MAX_A, a, a, e, h);
  LLVMValueRef hrow = fptr(c, ic->hbuf, mulc(c, r, (int64_t)a * LANES));
  for (int col = 0; col < a; col++) {
    LLVMValueRef st = LLVMBuildStore(b, h[col], fptr(c, hrow, c64(c, (int64_t)col * LANES)));
    LLVMSetAlignment(st, 32);
  }
  fc_cg_loop_end(c->k, &lr);
  /* Columns: V_ξ for ξ = r·a + col, [C][T] with the group's 8 lanes at 8·grp. */
  FcLoop lcol;
  LLVMValueRef col = loop_begin(c, &lcol, c64(c, 0), c64(c, a), "wcol");
  LLVMValueRef in[MAX_A], o[MAX_A];
  LLVMValueRef hcol = fptr(c, ic->hbuf, mulc(c, col, LANES));
  for (int rr = 0; rr < a; rr++) {
    in[rr] = LLVMBuildLoad2(b, c->v8, fptr(c, hcol, c64(c, (int64_t)rr * a * LANES)), "");
    LLVMSetAlignment(in[rr], 32);
  }
  lin_map(c, &w->BT[0][0], MAX_A, a, a, in, o);
  LLVMValueRef vcol = fptr(c, ic->vbuf, add(c, add(c, mulc(c, col, p->vstride), mulc(c, ci, p->T)), mulc(c, ic->grp, LANES)));
  for (int rr = 0; rr < a; rr++) {
    LLVMValueRef st = LLVMBuildStore(b, o[rr], fptr(c, vcol, c64(c, (int64_t)rr * a * p->vstride)));
    LLVMSetAlignment(st, 32);
  }
  fc_cg_loop_end(c->k, &lcol);
  fc_cg_loop_end(c->k, &lc);
}

/* The input transform of the group of 8 tiles starting at tile jg. F(4×4) loads the pairs (2q, 2q + 1)
 * as one vector when the tile rows have an even length: groups start at multiples of 8, so then no pair
 * crosses a row or an image. (With odd rows most groups would hold a pair that does.) */
static void input_group(Ctx *c, LLVMValueRef xin, LLVMValueRef vbuf, LLVMValueRef hbuf, LLVMValueRef mtab,
                        LLVMValueRef jg, LLVMValueRef grp) {
  const Plan *p = c->p;
  InCtx ic = {.xin = xin, .vbuf = vbuf, .hbuf = hbuf, .mtab = mtab, .grp = grp};
  for (int l = 0; l < LANES; l++) ic.t[l] = win_at(c, add(c, jg, c64(c, l)));
  ic.pairs = c->w->m == 4 && p->TW % 2 == 0;
  group_masks(c, &ic);
  input_channels(c, &ic);
}

/* ---- 2. the products ----------------------------------------------------------------------------------- */

/* Y_ξ[0, mlen) × [0, T) = U_ξ[m0 .., :] · V_ξ for every ξ; rows past M come out 0 (A's padding). */
static void products(Ctx *c, LLVMValueRef ug, LLVMValueRef vbuf, LLVMValueRef ybuf, LLVMValueRef m0, LLVMValueRef mlen) {
  const Plan *p = c->p;
  const FcGemmArch *g = &p->g;
  int a = c->w->a;
  int64_t pa = fc_gemm_packed_a_size(g, p->M, p->C), kc = cdiv(p->C, p->kblocks);
  LLVMValueRef panel0 = LLVMBuildSDiv(c->b, m0, c64(c, g->mr), "");
  LLVMValueRef npan = LLVMBuildSDiv(c->b, add(c, mlen, c64(c, g->mr - 1)), c64(c, g->mr), "");
  FcLoop lx;
  LLVMValueRef xi = loop_begin(c, &lx, c64(c, 0), c64(c, (int64_t)a * a), "wxi");
  LLVMValueRef ub = fptr(c, ug, mulc(c, xi, pa));
  LLVMValueRef vb = fptr(c, vbuf, mulc(c, xi, p->vstride));
  LLVMValueRef yb = fptr(c, ybuf, mulc(c, xi, p->ystride));
  FcLoop lp;
  LLVMValueRef ip = loop_begin(c, &lp, c64(c, 0), npan, "wip");
  LLVMValueRef ap = fptr(c, ub, mulc(c, add(c, panel0, ip), p->C * g->mr));
  LLVMValueRef cp = fptr(c, yb, mulc(c, ip, g->mr * p->T));
  for (int64_t kb = 0; kb < p->kblocks; kb++) {
    int64_t k0 = kb * kc, kn = p->C - k0 < kc ? p->C - k0 : kc;
    fc_gemm_call_ukr(c->k, g, c64(c, kn), fptr(c, ap, c64(c, k0 * g->mr)), fptr(c, vb, c64(c, k0 * p->T)), cp,
                     c64(c, p->T), LLVMConstInt(c->i1, kb > 0, 0));
  }
  fc_cg_loop_end(c->k, &lp);
  fc_cg_loop_end(c->k, &lx);
}

/* ---- 3. output transform ----------------------------------------------------------------------------------- */

/* Stores v (one value or a run of them along a row of the output plane) at row `orow` (b·M + channel),
 * column `col` of the result viewed as [N·M, OH·OW], through the epilogue. */
static void store_row(Ctx *c, LLVMValueRef out, LLVMValueRef v, LLVMValueRef orow, LLVMValueRef col) {
  const Plan *p = c->p;
  if (c->epi) v = fc_cg_epilogue_value(c->k, c->epi, v, orow, col);
  LLVMValueRef st = LLVMBuildStore(c->b, v, fptr(c, out, add(c, mulc(c, orow, p->OH * p->OW), col)));
  LLVMSetAlignment(st, 4);
}

/* Per-group arrays of the output side (entry-block allocas, indexed at run time by tile or pair). */
typedef struct OutArrays {
  LLVMValueRef rowb, colb, vrows, vcols; /* [8 x i64] per tile: b·M, first output column, rows, columns */
  LLVMValueRef pair;                     /* [4 x i64] per pair: 1 when both tiles are whole, side by side */
  LLVMValueRef rows;                     /* staged rows: [pair][tile row][2m floats] */
} OutArrays;

static LLVMValueRef arr_at(Ctx *c, LLVMValueRef arr, LLVMValueRef i) { return LLVMBuildGEP2(c->b, c->i64, arr, &i, 1, ""); }

static LLVMValueRef arr_load(Ctx *c, LLVMValueRef arr, LLVMValueRef i) {
  return LLVMBuildLoad2(c->b, c->i64, arr_at(c, arr, i), "");
}

/* Stores the staged row run `v` (n floats from the stage at `src`) of tile row i through the epilogue. */
static void store_run(Ctx *c, LLVMValueRef out, LLVMValueRef src, int n, LLVMValueRef orow, LLVMValueRef col) {
  LLVMValueRef v = LLVMBuildLoad2(c->b, n > 1 ? LLVMVectorType(c->f32, (unsigned)n) : c->f32, src, "");
  LLVMSetAlignment(v, 4);
  store_row(c, out, v, orow, col);
}

/* The output tiles of the group of 8 tiles at jg for the M-block rows [m0, m0 + mlen): per output
 * channel, Aᵀ Y A on the 8 tiles' vectors, transposed into rows of tiles and staged (two tiles' rows,
 * 2m floats, per pair and tile row); then per pair one loop body stores them: each row of the pair as
 * one vector when both tiles are whole and side by side, else tile by tile, element by element for a
 * tile cut by the image's edge (or past the last tile: no rows). */
static void output_group(Ctx *c, LLVMValueRef out, LLVMValueRef ybuf, LLVMValueRef jg, LLVMValueRef grp,
                         LLVMValueRef m0, LLVMValueRef mlen, const OutArrays *oa) {
  const Plan *p = c->p;
  const Wino *w = c->w;
  int a = w->a, m = w->m;
  LLVMBuilderRef b = c->b;
  LLVMValueRef full[LANES], adj = NULL;
  for (int l = 0; l < LANES; l++) {
    Lane ln = lane_at(c, add(c, jg, c64(c, l)));
    LLVMValueRef oy = mulc(c, ln.ty, m), ox = mulc(c, ln.tx, m), li = c64(c, l);
    LLVMValueRef rr = smin(c, c64(c, m), LLVMBuildSub(b, c64(c, p->OH), oy, ""));
    LLVMValueRef cc = smin(c, c64(c, m), LLVMBuildSub(b, c64(c, p->OW), ox, ""));
    rr = LLVMBuildSelect(b, ln.valid, rr, c64(c, 0), "");
    LLVMBuildStore(b, mulc(c, ln.b, p->M), arr_at(c, oa->rowb, li));
    LLVMBuildStore(b, add(c, mulc(c, oy, p->OW), ox), arr_at(c, oa->colb, li));
    LLVMBuildStore(b, rr, arr_at(c, oa->vrows, li));
    LLVMBuildStore(b, cc, arr_at(c, oa->vcols, li));
    full[l] = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, rr, c64(c, m), ""), LLVMBuildICmp(b, LLVMIntEQ, cc, c64(c, m), ""), "");
    if (l % 2 == 0) adj = LLVMBuildICmp(b, LLVMIntNE, ln.tx, c64(c, p->TW - 1), "");
    if (l % 2 == 1) {
      LLVMValueRef pf = LLVMBuildAnd(b, full[l - 1], full[l], "");
      if (p->TW % 2) pf = LLVMBuildAnd(b, pf, adj, "");
      LLVMBuildStore(b, LLVMBuildZExt(b, pf, c->i64, ""), arr_at(c, oa->pair, c64(c, l / 2)));
    }
  }
  FcLoop lm;
  LLVMValueRef mi = loop_begin(c, &lm, c64(c, 0), mlen, "wm");
  LLVMValueRef mm = add(c, m0, mi);
  LLVMValueRef Yv[MAX_A * MAX_A];
  for (int xi = 0; xi < a * a; xi++) {
    LLVMValueRef at = add(c, add(c, c64(c, (int64_t)xi * p->ystride), mulc(c, mi, p->T)), mulc(c, grp, LANES));
    Yv[xi] = LLVMBuildLoad2(b, c->v8, fptr(c, ybuf, at), "");
    LLVMSetAlignment(Yv[xi], 32);
  }
  /* Z = Aᵀ Y (m × a), O = Z A (m × m) */
  LLVMValueRef Z[MAX_M][MAX_A], O[MAX_M][MAX_M];
  for (int col = 0; col < a; col++) {
    LLVMValueRef in[MAX_A], o[MAX_M];
    for (int r = 0; r < a; r++) in[r] = Yv[r * a + col];
    lin_map(c, &w->AT[0][0], MAX_A, m, a, in, o);
    for (int i = 0; i < m; i++) Z[i][col] = o[i];
  }
  for (int i = 0; i < m; i++) lin_map(c, &w->AT[0][0], MAX_A, m, a, Z[i], O[i]);
  /* Stage per tile row i and pair q: [tile 2q's row i | tile 2q + 1's row i]. */
  for (int i = 0; i < m; i++) {
    LLVMValueRef run[LANES / 2];
    if (m == 4) {
      transpose4(c, O[i], run, 4); /* [lane q's row | lane q + 4's row] */
    } else {
      /* tl = [lanes 0 1 | 4 5], th = [lanes 2 3 | 6 7], two floats each; pair q = lanes q, q + 4 */
      static const int lo[8] = {0, 8, 1, 9, 4, 12, 5, 13}, hi[8] = {2, 10, 3, 11, 6, 14, 7, 15};
      LLVMValueRef tl = shuffle(c, O[i][0], O[i][1], lo, 8), th = shuffle(c, O[i][0], O[i][1], hi, 8);
      for (int q = 0; q < LANES / 2; q++) {
        int base = 2 * (q % 2), idx[4] = {base, base + 1, base + 4, base + 5};
        run[q] = shuffle(c, q < 2 ? tl : th, NULL, idx, 4);
      }
    }
    for (int q = 0; q < LANES / 2; q++) {
      LLVMValueRef st = LLVMBuildStore(b, run[q], fptr(c, oa->rows, c64(c, (int64_t)(q * m + i) * 2 * m)));
      LLVMSetAlignment(st, 4);
    }
  }
  FcLoop lq;
  LLVMValueRef q = loop_begin(c, &lq, c64(c, 0), c64(c, LANES / 2), "wq");
  LLVMValueRef t0 = mulc(c, q, 2), stage = fptr(c, oa->rows, mulc(c, q, 2 * m * m));
  LLVMValueRef pf = LLVMBuildICmp(b, LLVMIntNE, arr_load(c, oa->pair, q), c64(c, 0), "");
  LLVMBasicBlockRef both = LLVMAppendBasicBlockInContext(c->k->ctx, c->k->fn, "wpair");
  LLVMBasicBlockRef apart = LLVMAppendBasicBlockInContext(c->k->ctx, c->k->fn, "wpair_apart");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->k->ctx, c->k->fn, "wpair_done");
  LLVMBuildCondBr(b, pf, both, apart);
  LLVMPositionBuilderAtEnd(b, both);
  {
    LLVMValueRef orow = add(c, arr_load(c, oa->rowb, t0), mm), colb = arr_load(c, oa->colb, t0);
    for (int i = 0; i < m; i++)
      store_run(c, out, fptr(c, stage, c64(c, (int64_t)i * 2 * m)), 2 * m, orow, add(c, colb, c64(c, i * p->OW)));
  }
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, apart);
  {
    FcLoop lh;
    LLVMValueRef h = loop_begin(c, &lh, c64(c, 0), c64(c, 2), "wh");
    LLVMValueRef t = add(c, t0, h), tst = fptr(c, stage, mulc(c, h, m));
    LLVMValueRef orow = add(c, arr_load(c, oa->rowb, t), mm), colb = arr_load(c, oa->colb, t);
    LLVMValueRef vr = arr_load(c, oa->vrows, t), vc = arr_load(c, oa->vcols, t);
    LLVMValueRef whole = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, vr, c64(c, m), ""),
                                      LLVMBuildICmp(b, LLVMIntEQ, vc, c64(c, m), ""), "");
    LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(c->k->ctx, c->k->fn, "wtile");
    LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(c->k->ctx, c->k->fn, "wtile_edge");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(c->k->ctx, c->k->fn, "wtile_done");
    LLVMBuildCondBr(b, whole, fast, slow);
    LLVMPositionBuilderAtEnd(b, fast);
    for (int i = 0; i < m; i++)
      store_run(c, out, fptr(c, tst, c64(c, (int64_t)i * 2 * m)), m, orow, add(c, colb, c64(c, i * p->OW)));
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, slow);
    FcLoop li, lj;
    LLVMValueRef i = loop_begin(c, &li, c64(c, 0), vr, "wei");
    LLVMValueRef j = loop_begin(c, &lj, c64(c, 0), vc, "wej");
    store_run(c, out, fptr(c, tst, add(c, mulc(c, i, 2 * m), j)), 1, orow, add(c, colb, add(c, mulc(c, i, p->OW), j)));
    fc_cg_loop_end(c->k, &lj);
    fc_cg_loop_end(c->k, &li);
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, join);
    fc_cg_loop_end(c->k, &lh);
  }
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
  fc_cg_loop_end(c->k, &lq);
  fc_cg_loop_end(c->k, &lm);
}

/* ---- the kernel ------------------------------------------------------------------------------------------- */

FcStatus fc_conv_winograd(FcKernel *k) {
  FcConvShape s;
  int m = choose(k, &s);
  if (m == 0) return fc_cg_error(k, FC_ERR_INTERNAL, "the Winograd convolution does not apply to this op");
  Plan p;
  plan_init(k->target, &s, m, &p);
  Ctx c = {.k = k, .b = k->b, .p = &p, .w = &p.w};
  c.f32 = LLVMFloatTypeInContext(k->ctx);
  c.i1 = LLVMInt1TypeInContext(k->ctx);
  c.i32 = LLVMInt32TypeInContext(k->ctx);
  c.i64 = fc_cg_i64(k);
  c.v8 = LLVMVectorType(c.f32, LANES);
  c.ptr = LLVMPointerTypeInContext(k->ctx, 0);
  FC_ASSERT(p.T % LANES == 0);
  int a = p.w.a;
  int64_t a2 = (int64_t)a * a;
  double work = 2.0 * (double)a2 * (double)p.C * (double)p.Mb * (double)p.T;
  fc_kernel_set_outer(k, p.ntb * p.nmb, work);
  /* With several M-blocks per tile block, a chunk of the pool's usual size (a task or two) would
   * transform the same input tiles again in every chunk, so small images (one tile block, many
   * M-blocks: ResNet-18's 14x14 and 7x7 layers) would gain nothing from more threads. One contiguous
   * chunk per thread transforms each tile block once per thread. */
  if (p.nmb > 1) fc_kernel_one_chunk_per_thread(k);
  FcStatus st = fc_cg_epilogue_init(k, 2, &c.epi);
  if (st != FC_OK) return st;
  LLVMValueRef ug = NULL;
  st = filter_global(&c, &ug);
  if (st != FC_OK) return st;
  /* The kernel reads U only, through operand 1's slot: the weights need not be in the artefact, and
   * convolutions of the same shape share this kernel's code. */
  ug = fc_kernel_substitute_operand(k, 1, ug);

  int64_t vfloats = a2 * p.vstride, yfloats = a2 * p.ystride, hfloats = a2 * LANES;
  LLVMValueRef scr = fc_kernel_scratch(k, (vfloats + yfloats + hfloats) * 4 + MASK_BYTES);
  LLVMValueRef vbuf = scr, ybuf = fptr(&c, scr, c64(&c, vfloats));
  LLVMValueRef hbuf = fptr(&c, ybuf, c64(&c, yfloats)), mtab = fptr(&c, hbuf, c64(&c, hfloats));
  LLVMTypeRef i64a8 = LLVMArrayType2(c.i64, LANES);
  OutArrays oa = {.rowb = fc_cg_entry_alloca(k, i64a8, "wino_rowb"), .colb = fc_cg_entry_alloca(k, i64a8, "wino_colb"),
                  .vrows = fc_cg_entry_alloca(k, i64a8, "wino_vrows"), .vcols = fc_cg_entry_alloca(k, i64a8, "wino_vcols"),
                  .pair = fc_cg_entry_alloca(k, LLVMArrayType2(c.i64, LANES / 2), "wino_pair"),
                  .rows = fc_cg_tile_new(k, c.f32, (int64_t)LANES * m * m, "wino_rows")};
  LLVMValueRef last = fc_cg_entry_alloca(k, c.i64, "wino_tb");
  LLVMBuildStore(c.b, c64(&c, -1), last);

  FcLoop lo;
  LLVMValueRef it = loop_begin(&c, &lo, k->begin, k->end, "wblk");
  LLVMValueRef tb = LLVMBuildSDiv(c.b, it, c64(&c, p.nmb), "");
  LLVMValueRef mb = LLVMBuildSRem(c.b, it, c64(&c, p.nmb), "");
  LLVMValueRef j0 = mulc(&c, tb, p.T);
  /* 1. V for this tile block, unless this chunk's previous iteration made it. */
  LLVMValueRef fresh = LLVMBuildICmp(c.b, LLVMIntNE, LLVMBuildLoad2(c.b, c.i64, last, ""), tb, "");
  LLVMBasicBlockRef cont = fc_cg_if_begin(k, fresh);
  {
    FcLoop lg;
    LLVMValueRef grp = loop_begin(&c, &lg, c64(&c, 0), c64(&c, p.T / LANES), "wgi");
    input_group(&c, k->in[0], vbuf, hbuf, mtab, add(&c, j0, mulc(&c, grp, LANES)), grp);
    fc_cg_loop_end(k, &lg);
    LLVMBuildStore(c.b, tb, last);
  }
  fc_cg_if_end(k, cont);
  /* 2. Y for this M-block. */
  LLVMValueRef m0 = mulc(&c, mb, p.Mb);
  LLVMValueRef mlen = smin(&c, c64(&c, p.Mb), LLVMBuildSub(c.b, c64(&c, p.M), m0, ""));
  products(&c, ug, vbuf, ybuf, m0, mlen);
  /* 3. The output tiles. */
  {
    FcLoop lg;
    LLVMValueRef grp = loop_begin(&c, &lg, c64(&c, 0), c64(&c, p.T / LANES), "wgo");
    output_group(&c, k->out[0], ybuf, add(&c, j0, mulc(&c, grp, LANES)), grp, m0, mlen, &oa);
    fc_cg_loop_end(k, &lg);
  }
  fc_cg_loop_end(k, &lo);
  return FC_OK;
}
