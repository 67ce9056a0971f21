/* kernel_nn.c — kernel emitters of the network ops: matmul, conv, conv_transpose, max_pool and avg_pool.
 *
 * Every kernel here is a direct loop nest over the op's definition, shaped so that LLVM vectorises its
 * innermost loop: that loop always runs over a unit- or constant-stride row of the result (matmul's N,
 * the output width of convolutions and pools) and accumulates into a small tile of at most TILE
 * elements on the stack, in the compute type (f16/bf16 accumulate in f32). The tile is private to the
 * kernel call, so LLVM knows it aliases nothing and can keep the accumulation vectorised; the result is
 * stored (and rounded to the storage dtype) once per element. Padding is never materialised: the valid
 * range of the innermost loop for each kernel tap along the last spatial dim is a compile-time table
 * (shapes are static), and taps along the outer spatial dims are skipped with one compare each.
 *
 * Outer iterations (parallelised over the thread pool) are result rows: batch×M for matmul,
 * N×M×(outer output dims) for convolutions, N×C×(outer output dims) for pools. Each is independent, so
 * results do not depend on the thread count.
 *
 * These loop nests are the general case. The fast paths are chosen first: f32 matmul goes through the
 * packed GEMM (kernel_matmul.c), u8 × constant i8 matmul through the integer GEMM (kernel_matmul_i8.c);
 * f32 convolutions through the depthwise kernel (kernel_dwconv.c), Winograd (kernel_winograd.c) or the
 * implicit-im2col GEMM (kernel_conv_gemm.c) when they apply; f32
 * 1-D/2-D pools without indices through kernel_pool.c. An f32 conv that stays here applies its bias and
 * fused epilogue through cg_epilogue.h after each row.
 *
 * Quantised conv and matmul (qspec §2: quantised x, constant quantised weights, a qtype result) go to the
 * integer kernels (kernel_conv_i8.c, kernel_dwconv_i8.c, kernel_matmul_i8.c) where they apply; the rest
 * (narrow groups, 3-D, targets without an x86 integer dot) run these loop nests on i32: x in its u8 view, weights
 * w - zw from a compile-time table, then the requantising store of cg_requant.h per row.
 */
#include "cg_epilogue.h"
#include "cg_requant.h"
#include "codegen.h"

#include <stdlib.h>
#include <string.h>

#include <float.h>

enum {
  TILE = 256,                     /* elements of the innermost accumulation tile */
  MAX_SP = FC_DEFAULT_MAX_RANK,   /* spatial dims handled (rank limit of the importer) */
};

/* ---- small emit helpers ------------------------------------------------------------------------- */

static const FcType *in_type(const FcKernel *k, int i) { return &k->op->operands[i].value->type; }

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

/* floor(a / s) and ceil(a / s) for a constant s > 0 and any sign of a. */
static LLVMValueRef floor_divc(FcKernel *k, LLVMValueRef a, int64_t s) {
  if (s == 1) return a;
  LLVMValueRef neg = LLVMBuildICmp(k->b, LLVMIntSLT, a, c64(k, 0), "");
  LLVMValueRef adj = LLVMBuildSelect(k->b, neg, c64(k, s - 1), c64(k, 0), "");
  return LLVMBuildSDiv(k->b, fc_cg_isub(k, a, adj), c64(k, s), "");
}
static LLVMValueRef ceil_divc(FcKernel *k, LLVMValueRef a, int64_t s) {
  return s == 1 ? a : floor_divc(k, fc_cg_iadd(k, a, c64(k, s - 1)), s);
}

static LLVMValueRef tload(FcKernel *k, LLVMValueRef table, LLVMValueRef i) { return fc_cg_load(k, FC_DT_I64, table, i); }

static int64_t prod(const int64_t *d, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= d[i]; /* callers pass dims of a type whose numel was checked */
  return p;
}

/* Stores tile[0..tn) to dst[at ..) converted to dt. */
/* Stores tile[0..tn) (compute type ct of dtype from) at dst[at ..) as dt. */
static void tile_store(FcKernel *k, FcDtype from, FcDtype dt, LLVMTypeRef ct, LLVMValueRef tile, LLVMValueRef tn,
                       LLVMValueRef dst, LLVMValueRef at) {
  FcLoop l;
  LLVMValueRef j = fc_cg_loop_begin(k, &l, c64(k, 0), tn, 1, "st");
  LLVMValueRef v = LLVMBuildLoad2(k->b, ct, fc_cg_tile_at(k, ct, tile, j), "");
  fc_cg_store(k, dt, dst, fc_cg_iadd(k, at, j), fc_cg_convert(k, v, from, dt));
  fc_cg_loop_end(k, &l);
}

static void tile_fill(FcKernel *k, LLVMTypeRef ct, LLVMValueRef tile, LLVMValueRef tn, LLVMValueRef v) {
  FcLoop l;
  LLVMValueRef j = fc_cg_loop_begin(k, &l, c64(k, 0), tn, 1, "fill");
  LLVMBuildStore(k->b, v, fc_cg_tile_at(k, ct, tile, j));
  fc_cg_loop_end(k, &l);
}

/* ---- quantised products (qspec §2) on the direct loop nests -------------------------------------------- */

/* The weights w' (the op's element order: i8 where every w' fits, as with symmetric i8 weights, so that the
 * artefact keeps a byte a weight; else i16) followed by one i32 and one f32 per channel (bias or correction,
 * multiplier), substituted for operand 1 (cg_requant.h); *tab gets the byte offset of the i32s. */
static LLVMValueRef quant_table(FcKernel *k, const FcQuantProduct *q, const int32_t *add, int64_t *tab) {
  int64_t n = q->K * q->channels, es = q->w8 ? 1 : 2, wb = (es * n + 3) / 4 * 4, bytes = wb + 8 * q->channels;
  char *blob = calloc((size_t)bytes, 1);
  if (!blob) fc_die(__FILE__, __LINE__, "out of memory");
  if (q->w8)
    for (int64_t i = 0; i < n; i++) blob[i] = (char)(int8_t)q->w[i];
  else
    memcpy(blob, q->w, (size_t)n * 2);
  memcpy(blob + wb, add, (size_t)q->channels * 4);
  memcpy(blob + wb + 4 * q->channels, q->mult, (size_t)q->channels * 4);
  LLVMValueRef g = fc_kernel_substitute_operand(k, 1, fc_cg_const_bytes(k, blob, (size_t)bytes, "quant_w"));
  free(blob);
  *tab = wb;
  return g;
}

/* x's element idx in the u8 view as i32, less zx when sub_zx. */
static LLVMValueRef quant_x(FcKernel *k, const FcQuantProduct *q, FcDtype dt, LLVMValueRef idx, bool sub_zx) {
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMValueRef v = fc_cg_load(k, dt, k->in[0], idx);
  if (q->flip) v = LLVMBuildXor(k->b, v, LLVMConstInt(i8, 0x80, 0), "");
  v = LLVMBuildZExt(k->b, v, i32, "");
  return sub_zx ? LLVMBuildSub(k->b, v, LLVMConstInt(i32, (unsigned)q->zx, 0), "") : v;
}

static LLVMValueRef quant_w(FcKernel *k, const FcQuantProduct *q, LLVMValueRef idx) {
  LLVMValueRef w = fc_cg_load(k, q->w8 ? FC_DT_I8 : FC_DT_I16, k->in[1], idx);
  return LLVMBuildSExt(k->b, w, LLVMInt32TypeInContext(k->ctx), "");
}

/* Channel ch's i32 (at byte tab) and f32 (after `channels` of them) from the substituted table. */
static void quant_channel(FcKernel *k, int64_t tab, int64_t channels, LLVMValueRef ch, LLVMValueRef *add,
                          LLVMValueRef *mult) {
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef ao = fc_cg_iadd(k, c64(k, tab), fc_cg_imulc(k, ch, 4)), mo = fc_cg_iadd(k, ao, c64(k, 4 * channels));
  *add = LLVMBuildLoad2(k->b, LLVMInt32TypeInContext(k->ctx), LLVMBuildGEP2(k->b, i8, k->in[1], &ao, 1, ""), "");
  *mult = LLVMBuildLoad2(k->b, LLVMFloatTypeInContext(k->ctx), LLVMBuildGEP2(k->b, i8, k->in[1], &mo, 1, ""), "");
  LLVMSetAlignment(*add, 4);
  LLVMSetAlignment(*mult, 4);
}

/* Requantises acc tile[0..tn) (i32) and stores it at dst[at ..) as q->out: with one channel's add and mult,
 * or (ch0 not NULL) element j of channel ch0 + j (a matmul row, from the table at qtab). */
static void quant_tile_store(FcKernel *k, const FcQuantProduct *q, LLVMValueRef tile, LLVMValueRef tn,
                             LLVMValueRef add, LLVMValueRef mult, LLVMValueRef at, LLVMValueRef ch0, int64_t qtab) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef et = q->out == FC_DT_F32 ? LLVMFloatTypeInContext(k->ctx) : LLVMInt8TypeInContext(k->ctx);
  FcLoop l;
  LLVMValueRef j = fc_cg_loop_begin(k, &l, c64(k, 0), tn, 1, "qst");
  if (ch0) quant_channel(k, qtab, q->channels, fc_cg_iadd(k, ch0, j), &add, &mult);
  LLVMValueRef v = fc_qp_finish(k, q, LLVMBuildLoad2(k->b, i32, fc_cg_tile_at(k, i32, tile, j), ""), add, mult);
  LLVMValueRef idx = fc_cg_iadd(k, at, j);
  LLVMBuildStore(k->b, v, LLVMBuildGEP2(k->b, et, k->out[0], &idx, 1, ""));
  fc_cg_loop_end(k, &l);
}

/* ---- matmul -------------------------------------------------------------------------------------- */

static FcStatus matmul_direct(FcKernel *k, const FcQuantProduct *q, int64_t qtab);

/* 8-bit operands into an f32 result (`to`): the i32 sums converted, then the fused epilogue if any. */
static bool int8_to_f32(FcKernel *k) {
  return fc_matmul_is_int8(in_type(k, 0)->dtype, in_type(k, 1)->dtype) && k->op->results[0].type.dtype == FC_DT_F32;
}

/* C[b, i, :] = sum_k A[b, i, k] * B[b, k, :], one outer iteration per (b, i), loop order k-j with the
 * j loop (a TILE-wide slice of the row) innermost. */
FcStatus fc_kernel_matmul(FcKernel *k) {
  if (fc_matmul_gemm_applies(k)) return fc_matmul_gemm(k);
  if (fc_matmul_amx_applies(k)) return fc_matmul_amx(k);
  if (fc_matmul_i8_applies(k)) return fc_matmul_i8(k);
  FcQuantProduct qp, *q = NULL;
  int64_t qtab = 0;
  if (in_type(k, 0)->quant) {
    /* qspec §2 without the integer GEMM (no x86 dot): A in the u8 view times w' = w - zw in i32, then the
     * folded correction and the requantisation per column */
    char why[160];
    if (!fc_qp_applies(k->op, 1, why, sizeof why) || in_type(k, 1)->rank != 2)
      return fc_cg_error(k, FC_ERR_UNSUPPORTED, "quantised matmul: %s", in_type(k, 1)->rank != 2 ? "B must be 2-D" : why);
    FcStatus qst = fc_qp_init(k, 1, in_type(k, 1)->dims[0], in_type(k, 1)->dims[1], &qp);
    if (qst != FC_OK) return qst;
    q = &qp;
    quant_table(k, q, q->corr, &qtab);
  } else if ((k->op->n_operands > 2 || fc_op_attr(k->op, FC_ATTR_EPILOGUE)) && !int8_to_f32(k)) {
    return fc_cg_error(k, FC_ERR_UNSUPPORTED, "a fused epilogue on a %s matmul", fc_dtype_name(k->op->results[0].type.dtype));
  }
  FcStatus st = matmul_direct(k, q, qtab);
  if (q) fc_qp_free(q);
  return st;
}

static FcStatus matmul_direct(FcKernel *k, const FcQuantProduct *q, int64_t qtab) {
  const FcType *at = in_type(k, 0), *bt = in_type(k, 1), *rt = &k->op->results[0].type;
  int r = rt->rank, nb = r - 2;
  if (r < 2 || r > FC_DEFAULT_MAX_RANK) return fc_cg_error(k, FC_ERR_UNSUPPORTED, "rank %d is not supported", r);
  FcDtype dt = rt->dtype;
  int64_t M = rt->dims[r - 2], N = rt->dims[r - 1], K = at->dims[at->rank - 1], numel;
  if (!fc_type_numel(rt, &numel)) return fc_cg_error(k, FC_ERR_LIMIT, "result is too large");
  /* Batch strides in matrices; broadcast (size-1 or missing) dims have stride 0. */
  int64_t as[FC_DEFAULT_MAX_RANK], bs[FC_DEFAULT_MAX_RANK], sa, sb;
  fc_cg_matmul_batch_strides(at, bt, rt, as, bs, &sa, &sb);
  int64_t rows = numel == 0 ? 0 : numel / N;
  fc_kernel_set_outer(k, rows, 2.0 * (double)K * (double)N + (double)N);
  if (rows == 0) return FC_OK;

  /* 8-bit operands accumulate in i32 (an f32 result converts the sums: int8_to_f32) */
  FcDtype acc_dt = q || fc_matmul_is_int8(at->dtype, bt->dtype) ? FC_DT_I32 : dt;
  FcCgEpilogue *e = NULL;
  if (!q && dt != acc_dt) {
    FcStatus st = fc_cg_epilogue_init(k, 1, &e);
    if (st != FC_OK) return st;
  }
  LLVMTypeRef ct = fc_cg_compute_type(k, acc_dt);
  int64_t T = N < TILE ? N : TILE;
  LLVMValueRef tile = fc_cg_tile_new(k, ct, T, "acc");
  FcLoop lr;
  LLVMValueRef row = fc_cg_loop_begin(k, &lr, k->begin, k->end, 1, "row");
  LLVMValueRef bi = LLVMBuildUDiv(k->b, row, c64(k, M), ""), i = LLVMBuildURem(k->b, row, c64(k, M), "");
  LLVMValueRef idx[FC_DEFAULT_MAX_RANK], aoff = c64(k, 0), boff = c64(k, 0);
  fc_cg_unflatten(k, bi, rt->dims, nb, idx);
  for (int d = 0; d < nb; d++) {
    if (as[d]) aoff = fc_cg_iadd(k, aoff, fc_cg_imulc(k, idx[d], as[d]));
    if (bs[d]) boff = fc_cg_iadd(k, boff, fc_cg_imulc(k, idx[d], bs[d]));
  }
  aoff = fc_cg_iadd(k, fc_cg_imulc(k, aoff, M * K), fc_cg_imulc(k, i, K));
  boff = fc_cg_imulc(k, boff, K * N);

  FcLoop lt;
  LLVMValueRef j0 = fc_cg_loop_begin(k, &lt, c64(k, 0), c64(k, N), T, "j0");
  LLVMValueRef tn = fc_cg_smin(k, c64(k, T), fc_cg_isub(k, c64(k, N), j0));
  tile_fill(k, ct, tile, tn, LLVMConstNull(ct));
  FcLoop lk;
  LLVMValueRef kk = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, K), 1, "k");
  /* 8-bit operands (an integer matmul with an i32 result) widen exactly to i32 */
  FcDtype adt = at->dtype, bdt = bt->dtype;
  LLVMValueRef ai = fc_cg_iadd(k, aoff, kk);
  LLVMValueRef a = q ? quant_x(k, q, adt, ai, false) : fc_cg_convert(k, fc_cg_load(k, adt, k->in[0], ai), adt, acc_dt);
  LLVMValueRef brow = fc_cg_iadd(k, fc_cg_iadd(k, boff, fc_cg_imulc(k, kk, N)), j0);
  FcLoop lj;
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(k, 0), tn, 1, "j");
  LLVMValueRef p = fc_cg_tile_at(k, ct, tile, j);
  LLVMValueRef bi_ = fc_cg_iadd(k, brow, j);
  LLVMValueRef bv = q ? quant_w(k, q, bi_) : fc_cg_convert(k, fc_cg_load(k, bdt, k->in[1], bi_), bdt, acc_dt);
  LLVMBuildStore(k->b, fc_cg_madd(k, a, bv, LLVMBuildLoad2(k->b, ct, p, "")), p);
  fc_cg_loop_end(k, &lj);
  fc_cg_loop_end(k, &lk);
  if (q)
    quant_tile_store(k, q, tile, tn, NULL, NULL, fc_cg_iadd(k, fc_cg_imulc(k, row, N), j0), j0, qtab);
  else
    tile_store(k, acc_dt, dt, ct, tile, tn, k->out[0], fc_cg_iadd(k, fc_cg_imulc(k, row, N), j0));
  if (e) fc_cg_epilogue_row(k, e, k->out[0], row, j0, tn);
  fc_cg_loop_end(k, &lt);
  fc_cg_loop_end(k, &lr);
  return FC_OK;
}

/* ---- convolution geometry ------------------------------------------------------------------------- */

/* The static geometry of a conv, conv_transpose or pool over n spatial dims. For conv and pools
 * D are the input dims and O the output dims; the tap at kernel index kk of output o reads input
 * o*s + kk*d - pad. conv_transpose is the same relation read the other way round (input i feeds output
 * i*s + kk*d - pad). */
typedef struct Geom {
  int n;
  const int64_t *D, *K, *O;
  int64_t s[MAX_SP], d[MAX_SP], pad[MAX_SP], pad_end[MAX_SP];
  int64_t ds[MAX_SP];     /* row-major strides of the input's spatial dims */
  int64_t ks[MAX_SP];     /* row-major strides of the kernel's spatial dims */
  int64_t isz, osz, ksz;  /* spatial element counts */
  int64_t rows_sp;        /* output rows per plane: product of O[0..n-1) */
} Geom;

static FcStatus geom_init(FcKernel *k, Geom *g, int n, const int64_t *D, const int64_t *K, const int64_t *O) {
  if (n < 1 || n > MAX_SP) return fc_cg_error(k, FC_ERR_UNSUPPORTED, "%d spatial dims are not supported", n);
  const int64_t *s, *d, *p;
  if (fc_op_attr_ints(k->op, FC_ATTR_STRIDES, &s) != n || fc_op_attr_ints(k->op, FC_ATTR_DILATIONS, &d) != n ||
      fc_op_attr_ints(k->op, FC_ATTR_PADS, &p) != 2 * n)
    return fc_cg_error(k, FC_ERR_INTERNAL, "strides, dilations or pads do not match %d spatial dims", n);
  g->n = n;
  g->D = D;
  g->K = K;
  g->O = O;
  for (int i = 0; i < n; i++) {
    g->s[i] = s[i];
    g->d[i] = d[i];
    g->pad[i] = p[i];
    g->pad_end[i] = p[n + i];
    FC_ASSERT(s[i] >= 1 && d[i] >= 1 && p[i] >= 0 && p[n + i] >= 0);
  }
  g->ds[n - 1] = g->ks[n - 1] = 1;
  for (int i = n - 2; i >= 0; i--) {
    g->ds[i] = g->ds[i + 1] * D[i + 1];
    g->ks[i] = g->ks[i + 1] * K[i + 1];
  }
  g->isz = prod(D, n);
  g->osz = prod(O, n);
  g->ksz = prod(K, n);
  g->rows_sp = prod(O, n - 1);
  return FC_OK;
}

/* Valid range [lo, hi) of j in [0, count) with 0 <= j*s + off < limit. */
static void stride_range(int64_t count, int64_t s, int64_t off, int64_t limit, int64_t *lo, int64_t *hi) {
  int64_t l = off >= 0 ? 0 : (-off + s - 1) / s, top = limit - 1 - off;
  int64_t h = top < 0 ? 0 : top / s + 1;
  *lo = l > count ? count : l;
  *hi = h > count ? count : h;
  if (*hi < *lo) *hi = *lo;
}

/* Per kernel tap along the last spatial dim: the range of output positions whose input lies inside
 * (forward ops), or of input positions whose output lies inside (conv_transpose). */
static void last_dim_tables(FcKernel *k, const Geom *g, bool transpose, LLVMValueRef *lo, LLVMValueRef *hi) {
  int l = g->n - 1;
  int64_t KL = g->K[l];
  int64_t *vlo = FC_NEW_ARRAY(&k->op->graph->module->arena, int64_t, (size_t)KL);
  int64_t *vhi = FC_NEW_ARRAY(&k->op->graph->module->arena, int64_t, (size_t)KL);
  for (int64_t kk = 0; kk < KL; kk++) {
    int64_t off = kk * g->d[l] - g->pad[l];
    if (transpose) stride_range(g->D[l], g->s[l], off, g->O[l], &vlo[kk], &vhi[kk]);
    else stride_range(g->O[l], g->s[l], off, g->D[l], &vlo[kk], &vhi[kk]);
  }
  *lo = fc_cg_i64_table(k, vlo, KL, "tap_lo");
  *hi = fc_cg_i64_table(k, vhi, KL, "tap_hi");
}

/* The per-row state of a conv-like kernel: the row's output coordinates along the outer spatial dims,
 * the current tile [t0, t0 + tn) of the last dim, and the accumulation tile. */
typedef struct Row {
  LLVMValueRef o[MAX_SP];
  LLVMValueRef t0, tn;
  LLVMValueRef tile, itile; /* itile: max_pool's index tile (or NULL) */
  LLVMTypeRef ct;
} Row;

/* ---- conv ---------------------------------------------------------------------------------------- */

typedef struct ConvCtx {
  FcKernel *k;
  const Geom *g;
  FcDtype dt;
  LLVMValueRef lo_tab, hi_tab;
  Row *row;
  const FcQuantProduct *q; /* a quantised conv: x - zx and w' = w - zw as i32 (see quant_table) */
} ConvCtx;

/* Emits the taps of spatial dim i onwards: xo/wo are the input and weight offsets so far. */
static void conv_taps(ConvCtx *c, int i, LLVMValueRef xo, LLVMValueRef wo) {
  FcKernel *k = c->k;
  const Geom *g = c->g;
  Row *rw = c->row;
  int l = g->n - 1;
  if (i < l) {
    FcLoop lk;
    LLVMValueRef kk = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, g->K[i]), 1, "kd");
    LLVMValueRef p = fc_cg_iadd(k, fc_cg_imulc(k, rw->o[i], g->s[i]), c64(k, -g->pad[i]));
    p = fc_cg_iadd(k, p, fc_cg_imulc(k, kk, g->d[i]));
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(k->b, LLVMIntULT, p, c64(k, g->D[i]), ""));
    conv_taps(c, i + 1, fc_cg_iadd(k, xo, fc_cg_imulc(k, p, g->ds[i])),
              fc_cg_iadd(k, wo, fc_cg_imulc(k, kk, g->ks[i])));
    fc_cg_if_end(k, cont);
    fc_cg_loop_end(k, &lk);
    return;
  }
  FcLoop lk;
  LLVMValueRef kk = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, g->K[l]), 1, "kl");
  LLVMValueRef lo = fc_cg_smax(k, tload(k, c->lo_tab, kk), rw->t0);
  LLVMValueRef hi = fc_cg_smin(k, tload(k, c->hi_tab, kk), fc_cg_iadd(k, rw->t0, rw->tn));
  LLVMValueRef off = fc_cg_iadd(k, fc_cg_imulc(k, kk, g->d[l]), c64(k, -g->pad[l]));
  LLVMValueRef wi = fc_cg_iadd(k, wo, kk);
  LLVMValueRef wv = c->q ? quant_w(k, c->q, wi) : fc_cg_load(k, c->dt, k->in[1], wi);
  LLVMValueRef xrow = fc_cg_iadd(k, xo, off);
  FcLoop lj;
  LLVMValueRef ow = fc_cg_loop_begin(k, &lj, lo, hi, 1, "ow");
  LLVMValueRef xi = fc_cg_iadd(k, xrow, fc_cg_imulc(k, ow, g->s[l]));
  LLVMValueRef xv = c->q ? quant_x(k, c->q, c->dt, xi, true) : fc_cg_load(k, c->dt, k->in[0], xi);
  LLVMValueRef p = fc_cg_tile_at(k, rw->ct, rw->tile, fc_cg_isub(k, ow, rw->t0));
  LLVMBuildStore(k->b, fc_cg_madd(k, wv, xv, LLVMBuildLoad2(k->b, rw->ct, p, "")), p);
  fc_cg_loop_end(k, &lj);
  fc_cg_loop_end(k, &lk);
}

static FcStatus conv_direct(FcKernel *k, const FcQuantProduct *q, int64_t qtab);

/* y[b, m, o..] = bias[m] + sum_{c, kk} w[m, c, kk] * x[b, g*Cg + c, o*s + kk*d - pad]. */
FcStatus fc_kernel_conv(FcKernel *k) {
  FcQuantProduct qp, *q = NULL;
  int64_t qtab = 0;
  if (in_type(k, 0)->quant) {
    /* qspec §2: the integer GEMM where it applies, else this loop nest on x - zx and w - zw in i32 (padding
     * taps are skipped: they add (zx - zx)·w = 0), which vectorises over the output row (depthwise above all) */
    if (fc_conv_i8_winograd_applies(k)) return fc_conv_i8_winograd(k);
    if (fc_conv_i8_few_pixels_applies(k)) return fc_conv_i8_few_pixels(k);
    if (fc_conv_i8_applies(k)) return fc_conv_i8(k);
    if (fc_conv_dw_i8_applies(k)) return fc_conv_dw_i8(k);
    char why[160];
    if (!fc_qp_applies(k->op, 0, why, sizeof why)) return fc_cg_error(k, FC_ERR_UNSUPPORTED, "quantised conv: %s", why);
    const FcType *wt = in_type(k, 1);
    int64_t K = 1;
    for (int i = 1; i < wt->rank; i++) K *= wt->dims[i]; /* dims of a checked constant */
    FcStatus qst = fc_qp_init(k, 0, K, wt->dims[0], &qp);
    if (qst != FC_OK) return qst;
    q = &qp;
    quant_table(k, q, q->bias, &qtab);
  }
  FcStatus st0 = FC_OK;
  if (!q) {
    if (fc_conv_depthwise_applies(k)) return fc_conv_depthwise(k);
    if (fc_conv_winograd_applies(k)) return fc_conv_winograd(k);
    if (fc_conv_few_pixels_applies(k)) return fc_conv_few_pixels(k);
    if (fc_conv_gemm_applies(k)) return fc_conv_gemm(k);
  }
  st0 = conv_direct(k, q, qtab);
  if (q) fc_qp_free(q);
  return st0;
}

static FcStatus conv_direct(FcKernel *k, const FcQuantProduct *q, int64_t qtab) {
  const FcType *xt = in_type(k, 0), *wt = in_type(k, 1), *yt = &k->op->results[0].type;
  int n = xt->rank - 2;
  Geom g;
  FcStatus st = geom_init(k, &g, n, xt->dims + 2, wt->dims + 2, yt->dims + 2);
  if (st != FC_OK) return st;
  FcDtype dt = xt->dtype;
  int64_t C = xt->dims[1], M = wt->dims[0], G = fc_op_attr_int(k->op, FC_ATTR_GROUP, 1), numel;
  FC_ASSERT(G >= 1 && C % G == 0 && M % G == 0);
  int64_t Cg = C / G, Mg = M / G, OL = g.O[n - 1];
  if (!fc_type_numel(yt, &numel)) return fc_cg_error(k, FC_ERR_LIMIT, "result is too large");
  int64_t rows = numel == 0 ? 0 : numel / OL;
  fc_kernel_set_outer(k, rows, 2.0 * (double)Cg * (double)g.ksz * (double)OL + (double)OL);
  if (rows == 0) return FC_OK;

  /* f32: bias and fused epilogue through cg_epilogue.h, per output row after the tile is stored; other
   * dtypes never carry an epilogue (fuse-epilogue is f32-only) and start from the bias. */
  FcCgEpilogue *epi = NULL;
  if (q) {
    /* no epilogue: qspec §2's products have none */
  } else if (dt == FC_DT_F32) {
    FcStatus est = fc_cg_epilogue_init(k, n, &epi);
    if (est != FC_OK) return est;
  } else if (k->op->n_operands > 3 || fc_op_attr(k->op, FC_ATTR_EPILOGUE)) {
    return fc_cg_error(k, FC_ERR_UNSUPPORTED, "a fused epilogue on a %s conv", fc_dtype_name(dt));
  }
  ConvCtx c = {.k = k, .g = &g, .dt = dt, .q = q};
  last_dim_tables(k, &g, false, &c.lo_tab, &c.hi_tab);
  Row rw = {.ct = q ? LLVMInt32TypeInContext(k->ctx) : fc_cg_compute_type(k, dt)};
  c.row = &rw;
  int64_t T = OL < TILE ? OL : TILE;
  rw.tile = fc_cg_tile_new(k, rw.ct, T, "acc");
  bool has_bias = k->op->n_operands > 2 && k->in[2] && dt != FC_DT_F32 && !q;

  FcLoop lr;
  LLVMValueRef row = fc_cg_loop_begin(k, &lr, k->begin, k->end, 1, "row");
  LLVMValueRef sp = LLVMBuildURem(k->b, row, c64(k, g.rows_sp), "");
  LLVMValueRef plane = LLVMBuildUDiv(k->b, row, c64(k, g.rows_sp), "");
  LLVMValueRef m = LLVMBuildURem(k->b, plane, c64(k, M), ""), b = LLVMBuildUDiv(k->b, plane, c64(k, M), "");
  fc_cg_unflatten(k, sp, g.O, n - 1, rw.o);
  LLVMValueRef grp = LLVMBuildUDiv(k->b, m, c64(k, Mg), "");
  LLVMValueRef xbase = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, b, C), fc_cg_imulc(k, grp, Cg)), g.isz);
  LLVMValueRef wbase = fc_cg_imulc(k, m, Cg * g.ksz);
  LLVMValueRef init = has_bias ? fc_cg_load(k, dt, k->in[2], m) : LLVMConstNull(rw.ct);
  LLVMValueRef qadd = NULL, qmult = NULL;
  if (q) quant_channel(k, qtab, M, m, &qadd, &qmult);

  FcLoop lt;
  rw.t0 = fc_cg_loop_begin(k, &lt, c64(k, 0), c64(k, OL), T, "t0");
  rw.tn = fc_cg_smin(k, c64(k, T), fc_cg_isub(k, c64(k, OL), rw.t0));
  tile_fill(k, rw.ct, rw.tile, rw.tn, init);
  FcLoop lc;
  LLVMValueRef ci = fc_cg_loop_begin(k, &lc, c64(k, 0), c64(k, Cg), 1, "c");
  conv_taps(&c, 0, fc_cg_iadd(k, xbase, fc_cg_imulc(k, ci, g.isz)), fc_cg_iadd(k, wbase, fc_cg_imulc(k, ci, g.ksz)));
  fc_cg_loop_end(k, &lc);
  if (q)
    quant_tile_store(k, q, rw.tile, rw.tn, qadd, qmult, fc_cg_iadd(k, fc_cg_imulc(k, row, OL), rw.t0), NULL, 0);
  else
    tile_store(k, dt, dt, rw.ct, rw.tile, rw.tn, k->out[0], fc_cg_iadd(k, fc_cg_imulc(k, row, OL), rw.t0));
  if (epi) fc_cg_epilogue_row(k, epi, k->out[0], plane, fc_cg_iadd(k, fc_cg_imulc(k, sp, OL), rw.t0), rw.tn);
  fc_cg_loop_end(k, &lt);
  fc_cg_loop_end(k, &lr);
  return FC_OK;
}

/* ---- conv_transpose ------------------------------------------------------------------------------- */

/* Taps of spatial dim i onwards for one output row: along an outer dim, output o takes input
 * i = (o + pad - kk*d) / s where that division is exact and i is inside; along the last dim each tap
 * scatters a contiguous input run into the tile with stride s. */
static void convt_taps(ConvCtx *c, int i, LLVMValueRef xo, LLVMValueRef wo) {
  FcKernel *k = c->k;
  const Geom *g = c->g;
  Row *rw = c->row;
  int l = g->n - 1;
  if (i < l) {
    FcLoop lk;
    LLVMValueRef kk = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, g->K[i]), 1, "kd");
    LLVMValueRef q = fc_cg_isub(k, fc_cg_iadd(k, rw->o[i], c64(k, g->pad[i])), fc_cg_imulc(k, kk, g->d[i]));
    LLVMValueRef iq = g->s[i] == 1 ? q : LLVMBuildUDiv(k->b, q, c64(k, g->s[i]), "");
    LLVMValueRef ok = LLVMBuildICmp(k->b, LLVMIntSGE, q, c64(k, 0), "");
    if (g->s[i] > 1)
      ok = LLVMBuildAnd(k->b, ok,
                        LLVMBuildICmp(k->b, LLVMIntEQ, LLVMBuildURem(k->b, q, c64(k, g->s[i]), ""), c64(k, 0), ""), "");
    ok = LLVMBuildAnd(k->b, ok, LLVMBuildICmp(k->b, LLVMIntULT, iq, c64(k, g->D[i]), ""), "");
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, ok);
    convt_taps(c, i + 1, fc_cg_iadd(k, xo, fc_cg_imulc(k, iq, g->ds[i])),
               fc_cg_iadd(k, wo, fc_cg_imulc(k, kk, g->ks[i])));
    fc_cg_if_end(k, cont);
    fc_cg_loop_end(k, &lk);
    return;
  }
  int64_t s = g->s[l];
  FcLoop lk;
  LLVMValueRef kk = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, g->K[l]), 1, "kl");
  LLVMValueRef off = fc_cg_iadd(k, fc_cg_imulc(k, kk, g->d[l]), c64(k, -g->pad[l]));
  /* Inputs whose output i*s + off lies in the tile [t0, t0 + tn). */
  LLVMValueRef lo = fc_cg_smax(k, tload(k, c->lo_tab, kk), ceil_divc(k, fc_cg_isub(k, rw->t0, off), s));
  LLVMValueRef end = fc_cg_isub(k, fc_cg_iadd(k, rw->t0, rw->tn), off);
  LLVMValueRef hi = fc_cg_smin(k, tload(k, c->hi_tab, kk), ceil_divc(k, end, s));
  LLVMValueRef wv = fc_cg_load(k, c->dt, k->in[1], fc_cg_iadd(k, wo, kk));
  LLVMValueRef toff = fc_cg_isub(k, off, rw->t0);
  FcLoop lj;
  LLVMValueRef ix = fc_cg_loop_begin(k, &lj, lo, hi, 1, "ix");
  LLVMValueRef xv = fc_cg_load(k, c->dt, k->in[0], fc_cg_iadd(k, xo, ix));
  LLVMValueRef p = fc_cg_tile_at(k, rw->ct, rw->tile, fc_cg_iadd(k, fc_cg_imulc(k, ix, s), toff));
  LLVMBuildStore(k->b, fc_cg_madd(k, wv, xv, LLVMBuildLoad2(k->b, rw->ct, p, "")), p);
  fc_cg_loop_end(k, &lj);
  fc_cg_loop_end(k, &lk);
}

/* flow.conv_blocked: only the layout passes make it, for convs these kernels handle (passes/layout.c and, the
 * quantised form, layout_i8.c keep within their limits); an op written by hand beyond them is refused. */
FcStatus fc_kernel_conv_blocked(FcKernel *k) {
  if (k->op->operands[0].value->type.quant)
    return fc_op_attr_int(k->op, FC_ATTR_GROUP, 1) > 1 ? fc_conv_dw_i8_blocked(k) : fc_matmul_i8_blocked(k);
  if (fc_conv_blocked_depthwise_applies(k)) return fc_conv_blocked_depthwise(k);
  if (fc_conv_blocked_dense_applies(k)) return fc_conv_blocked_dense(k);
  return fc_cg_error(k, FC_ERR_UNSUPPORTED,
                     "no kernel for this conv_blocked: the kernels need f32, block 8 or 16, constant weights, "
                     "a blocked input when grouped (depthwise: up to 81 taps), pads and dilated kernel spans "
                     "of at most 32");
}

/* y[b, m, o..] = bias[m] + sum over (c in m's group, kk, i) with i*s + kk*d - pad = o of
 * x[b, c, i] * w[c, m % Mg, kk]; computed per output row (a gather), so rows are independent. */
FcStatus fc_kernel_conv_transpose(FcKernel *k) {
  const FcType *xt = in_type(k, 0), *wt = in_type(k, 1), *yt = &k->op->results[0].type;
  int n = xt->rank - 2;
  Geom g;
  FcStatus st = geom_init(k, &g, n, xt->dims + 2, wt->dims + 2, yt->dims + 2);
  if (st != FC_OK) return st;
  FcDtype dt = xt->dtype;
  int64_t C = xt->dims[1], G = fc_op_attr_int(k->op, FC_ATTR_GROUP, 1), Mg = wt->dims[1], numel;
  FC_ASSERT(G >= 1 && C % G == 0);
  int64_t Cg = C / G, M = Mg * G, OL = g.O[n - 1];
  if (!fc_type_numel(yt, &numel)) return fc_cg_error(k, FC_ERR_LIMIT, "result is too large");
  int64_t rows = numel == 0 ? 0 : numel / OL;
  /* Each output element gathers about ksz / prod(s) taps per input channel. */
  double taps = (double)g.ksz;
  for (int i = 0; i < n; i++) taps /= (double)g.s[i];
  fc_kernel_set_outer(k, rows, 2.0 * (double)Cg * (taps < 1 ? 1 : taps) * (double)OL + (double)OL);
  if (rows == 0) return FC_OK;

  ConvCtx c = {.k = k, .g = &g, .dt = dt};
  last_dim_tables(k, &g, true, &c.lo_tab, &c.hi_tab);
  Row rw = {.ct = fc_cg_compute_type(k, dt)};
  c.row = &rw;
  int64_t T = OL < TILE ? OL : TILE;
  rw.tile = fc_cg_tile_new(k, rw.ct, T, "acc");
  bool has_bias = k->op->n_operands > 2 && k->in[2];

  FcLoop lr;
  LLVMValueRef row = fc_cg_loop_begin(k, &lr, k->begin, k->end, 1, "row");
  LLVMValueRef sp = LLVMBuildURem(k->b, row, c64(k, g.rows_sp), "");
  LLVMValueRef plane = LLVMBuildUDiv(k->b, row, c64(k, g.rows_sp), "");
  LLVMValueRef m = LLVMBuildURem(k->b, plane, c64(k, M), ""), b = LLVMBuildUDiv(k->b, plane, c64(k, M), "");
  fc_cg_unflatten(k, sp, g.O, n - 1, rw.o);
  LLVMValueRef grp = LLVMBuildUDiv(k->b, m, c64(k, Mg), ""), mg = LLVMBuildURem(k->b, m, c64(k, Mg), "");
  LLVMValueRef c0 = fc_cg_imulc(k, grp, Cg); /* first input channel of the group */
  LLVMValueRef init = has_bias ? fc_cg_load(k, dt, k->in[2], m) : LLVMConstNull(rw.ct);

  FcLoop lt;
  rw.t0 = fc_cg_loop_begin(k, &lt, c64(k, 0), c64(k, OL), T, "t0");
  rw.tn = fc_cg_smin(k, c64(k, T), fc_cg_isub(k, c64(k, OL), rw.t0));
  tile_fill(k, rw.ct, rw.tile, rw.tn, init);
  FcLoop lc;
  LLVMValueRef ci = fc_cg_iadd(k, c0, fc_cg_loop_begin(k, &lc, c64(k, 0), c64(k, Cg), 1, "c"));
  LLVMValueRef xo = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, b, C), ci), g.isz);
  LLVMValueRef wo = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, ci, Mg), mg), g.ksz);
  convt_taps(&c, 0, xo, wo);
  fc_cg_loop_end(k, &lc);
  tile_store(k, dt, dt, rw.ct, rw.tile, rw.tn, k->out[0], fc_cg_iadd(k, fc_cg_imulc(k, row, OL), rw.t0));
  fc_cg_loop_end(k, &lt);
  fc_cg_loop_end(k, &lr);
  return FC_OK;
}

/* ---- pools --------------------------------------------------------------------------------------- */

typedef struct PoolCtx {
  FcKernel *k;
  const Geom *g;
  FcDtype dt;
  bool is_max, want_idx, is_float, is_unsigned;
  int64_t ist[MAX_SP];     /* strides of the spatial coordinates in max_pool's flat index */
  LLVMValueRef lo_tab, hi_tab;
  Row *row;
} PoolCtx;

/* The max update of one element: NaN never wins (and the accumulator starts as NaN, meaning "no
 * element yet"); ties keep the first. Integers start at the dtype's minimum; with indices wanted the
 * first element is taken even when it equals that minimum (index -1 means none yet). */
static LLVMValueRef max_cond(PoolCtx *c, LLVMValueRef v, LLVMValueRef acc, LLVMValueRef idx) {
  FcKernel *k = c->k;
  if (c->is_float) {
    LLVMValueRef gt = LLVMBuildFCmp(k->b, LLVMRealOGT, v, acc, "");
    LLVMValueRef none = LLVMBuildAnd(k->b, LLVMBuildFCmp(k->b, LLVMRealUNO, acc, acc, ""),
                                     LLVMBuildFCmp(k->b, LLVMRealORD, v, v, ""), "");
    return LLVMBuildOr(k->b, gt, none, "");
  }
  LLVMValueRef gt = LLVMBuildICmp(k->b, c->is_unsigned ? LLVMIntUGT : LLVMIntSGT, v, acc, "");
  if (idx) gt = LLVMBuildOr(k->b, gt, LLVMBuildICmp(k->b, LLVMIntSLT, idx, c64(k, 0), ""), "");
  return gt;
}

/* Taps of spatial dim i onwards: xo is the input offset (plane included), lin the flat index so far. */
static void pool_taps(PoolCtx *c, int i, LLVMValueRef xo, LLVMValueRef lin) {
  FcKernel *k = c->k;
  const Geom *g = c->g;
  Row *rw = c->row;
  int l = g->n - 1;
  if (i < l) {
    FcLoop lk;
    LLVMValueRef kk = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, g->K[i]), 1, "kd");
    LLVMValueRef p = fc_cg_iadd(k, fc_cg_iadd(k, fc_cg_imulc(k, rw->o[i], g->s[i]), c64(k, -g->pad[i])),
                                fc_cg_imulc(k, kk, g->d[i]));
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(k->b, LLVMIntULT, p, c64(k, g->D[i]), ""));
    pool_taps(c, i + 1, fc_cg_iadd(k, xo, fc_cg_imulc(k, p, g->ds[i])),
              fc_cg_iadd(k, lin, fc_cg_imulc(k, p, c->ist[i])));
    fc_cg_if_end(k, cont);
    fc_cg_loop_end(k, &lk);
    return;
  }
  FcLoop lk;
  LLVMValueRef kk = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, g->K[l]), 1, "kl");
  LLVMValueRef lo = fc_cg_smax(k, tload(k, c->lo_tab, kk), rw->t0);
  LLVMValueRef hi = fc_cg_smin(k, tload(k, c->hi_tab, kk), fc_cg_iadd(k, rw->t0, rw->tn));
  LLVMValueRef off = fc_cg_iadd(k, fc_cg_imulc(k, kk, g->d[l]), c64(k, -g->pad[l]));
  LLVMValueRef xrow = fc_cg_iadd(k, xo, off);
  LLVMValueRef lrow = fc_cg_iadd(k, lin, fc_cg_imulc(k, off, c->ist[l]));
  FcLoop lj;
  LLVMValueRef ow = fc_cg_loop_begin(k, &lj, lo, hi, 1, "ow");
  LLVMValueRef v = fc_cg_load(k, c->dt, k->in[0], fc_cg_iadd(k, xrow, fc_cg_imulc(k, ow, g->s[l])));
  LLVMValueRef tj = fc_cg_isub(k, ow, rw->t0);
  LLVMValueRef p = fc_cg_tile_at(k, rw->ct, rw->tile, tj);
  LLVMValueRef acc = LLVMBuildLoad2(k->b, rw->ct, p, "");
  if (!c->is_max) {
    LLVMBuildStore(k->b, c->is_float ? LLVMBuildFAdd(k->b, acc, v, "") : LLVMBuildAdd(k->b, acc, v, ""), p);
  } else {
    LLVMValueRef ip = rw->itile ? fc_cg_tile_at(k, fc_cg_i64(k), rw->itile, tj) : NULL;
    LLVMValueRef idx = ip ? LLVMBuildLoad2(k->b, fc_cg_i64(k), ip, "") : NULL;
    LLVMValueRef take = max_cond(c, v, acc, idx);
    LLVMBuildStore(k->b, LLVMBuildSelect(k->b, take, v, acc, ""), p);
    if (ip) {
      LLVMValueRef at = fc_cg_iadd(k, lrow, fc_cg_imulc(k, ow, g->s[l] * c->ist[l]));
      LLVMBuildStore(k->b, LLVMBuildSelect(k->b, take, at, idx, ""), ip);
    }
  }
  fc_cg_loop_end(k, &lj);
  fc_cg_loop_end(k, &lk);
}

/* The most negative finite value of a float dtype: what max_pool gives a window without a number
 * (ONNX Runtime's initial max, which the reference evaluator keeps too). */
static double lowest_finite(FcDtype dt) {
  switch (dt) {
  case FC_DT_F16: return -65504.0;
  case FC_DT_BF16: return -3.3895313892515355e38;
  case FC_DT_F64: return -DBL_MAX;
  default: return -FLT_MAX;
  }
}

/* Windows over the spatial dims of x[N, C, D..]. avg_pool divides by the taps inside the input, or with
 * count_include_pad by the taps inside the padded input (separable per dim, so a product of per-dim
 * counts from tables); max_pool optionally writes each max's flat index into x (row-major over
 * N, C, D.., or column-major over the spatial dims with storage_order 1). */
FcStatus fc_kernel_pool(FcKernel *k) {
  if (fc_pool_blocked_applies(k)) return fc_pool_blocked(k);
  if (fc_pool_window_applies(k)) return fc_pool_window(k);
  const FcType *xt = in_type(k, 0), *yt = &k->op->results[0].type;
  int n = xt->rank - 2;
  const int64_t *K;
  if (n < 1 || fc_op_attr_ints(k->op, FC_ATTR_KERNEL_SHAPE, &K) != n)
    return fc_cg_error(k, FC_ERR_INTERNAL, "kernel_shape does not match the input rank");
  Geom g;
  FcStatus st = geom_init(k, &g, n, xt->dims + 2, K, yt->dims + 2);
  if (st != FC_OK) return st;
  FcDtype dt = xt->dtype;
  PoolCtx c = {.k = k, .g = &g, .dt = dt};
  c.is_max = k->op->kind == FC_OP_MAX_POOL;
  c.want_idx = c.is_max && k->op->n_results > 1;
  c.is_float = fc_dtype_is_float(dt);
  c.is_unsigned = fc_dtype_class(dt) == FC_DTC_UINT;
  if (!c.is_float && !c.is_max) return fc_cg_error(k, FC_ERR_UNSUPPORTED, "avg_pool on %s", fc_dtype_name(dt));
  if (dt == FC_DT_BOOL) return fc_cg_error(k, FC_ERR_UNSUPPORTED, "max_pool on i1");
  bool col_major = fc_op_attr_int(k->op, FC_ATTR_STORAGE_ORDER, 0) != 0;
  bool include_pad = fc_op_attr_int(k->op, FC_ATTR_COUNT_INCLUDE_PAD, 0) != 0;
  for (int i = 0; i < n; i++) c.ist[i] = g.ds[i];
  if (col_major) {
    c.ist[0] = 1;
    for (int i = 1; i < n; i++) c.ist[i] = c.ist[i - 1] * g.D[i - 1];
  }
  int64_t numel, OL = g.O[n - 1];
  if (!fc_type_numel(yt, &numel)) return fc_cg_error(k, FC_ERR_LIMIT, "result is too large");
  int64_t rows = numel == 0 ? 0 : numel / OL;
  fc_kernel_set_outer(k, rows, 2.0 * (double)g.ksz * (double)OL + 2.0 * (double)OL);
  if (rows == 0) return FC_OK;

  /* Per dim and output position: the divisor count (avg_pool). */
  LLVMValueRef cnt_tab[MAX_SP] = {0};
  if (!c.is_max)
    for (int i = 0; i < n; i++) {
      int64_t *cnt = FC_NEW_ARRAY(&k->op->graph->module->arena, int64_t, (size_t)g.O[i]);
      for (int64_t o = 0; o < g.O[i]; o++) {
        int64_t start = o * g.s[i] - g.pad[i], lo, hi;
        stride_range(g.K[i], g.d[i], start, g.D[i], &lo, &hi);
        if (include_pad) {
          /* Taps up to the end of the end padding (a ceil-mode window may run past it). */
          int64_t span = g.D[i] + g.pad_end[i] - start;
          int64_t cn = span <= 0 ? 0 : (span + g.d[i] - 1) / g.d[i];
          cnt[o] = cn > g.K[i] ? g.K[i] : cn;
        } else {
          cnt[o] = hi - lo;
        }
      }
      cnt_tab[i] = fc_cg_i64_table(k, cnt, g.O[i], "pool_cnt");
    }
  last_dim_tables(k, &g, false, &c.lo_tab, &c.hi_tab);
  Row rw = {.ct = fc_cg_compute_type(k, dt)};
  c.row = &rw;
  int64_t T = OL < TILE ? OL : TILE;
  rw.tile = fc_cg_tile_new(k, rw.ct, T, "acc");
  if (c.want_idx) rw.itile = fc_cg_tile_new(k, fc_cg_i64(k), T, "idx");
  LLVMValueRef init;
  if (!c.is_max) init = LLVMConstNull(rw.ct);
  else if (c.is_float) init = LLVMConstReal(rw.ct, __builtin_nan(""));
  else if (c.is_unsigned) init = LLVMConstNull(rw.ct);
  else init = LLVMConstInt(rw.ct, 1ull << (LLVMGetIntTypeWidth(rw.ct) - 1), 0);

  FcLoop lr;
  LLVMValueRef row = fc_cg_loop_begin(k, &lr, k->begin, k->end, 1, "row");
  LLVMValueRef sp = LLVMBuildURem(k->b, row, c64(k, g.rows_sp), "");
  LLVMValueRef plane = LLVMBuildUDiv(k->b, row, c64(k, g.rows_sp), "");
  fc_cg_unflatten(k, sp, g.O, n - 1, rw.o);
  LLVMValueRef pbase = fc_cg_imulc(k, plane, g.isz);
  LLVMValueRef rowcnt = c64(k, 1);
  if (!c.is_max)
    for (int i = 0; i < n - 1; i++) rowcnt = fc_cg_imul(k, rowcnt, tload(k, cnt_tab[i], rw.o[i]));

  FcLoop lt;
  rw.t0 = fc_cg_loop_begin(k, &lt, c64(k, 0), c64(k, OL), T, "t0");
  rw.tn = fc_cg_smin(k, c64(k, T), fc_cg_isub(k, c64(k, OL), rw.t0));
  tile_fill(k, rw.ct, rw.tile, rw.tn, init);
  if (rw.itile) tile_fill(k, fc_cg_i64(k), rw.itile, rw.tn, c64(k, -1));
  pool_taps(&c, 0, pbase, pbase);

  /* Finish and store the tile. */
  LLVMValueRef at = fc_cg_iadd(k, fc_cg_imulc(k, row, OL), rw.t0);
  FcLoop ls;
  LLVMValueRef j = fc_cg_loop_begin(k, &ls, c64(k, 0), rw.tn, 1, "st");
  LLVMValueRef v = LLVMBuildLoad2(k->b, rw.ct, fc_cg_tile_at(k, rw.ct, rw.tile, j), "");
  if (!c.is_max) {
    LLVMValueRef cnt = fc_cg_imul(k, rowcnt, tload(k, cnt_tab[n - 1], fc_cg_iadd(k, rw.t0, j)));
    v = LLVMBuildFDiv(k->b, v, LLVMBuildSIToFP(k->b, cnt, rw.ct, ""), "");
  } else if (c.is_float) {
    v = LLVMBuildSelect(k->b, LLVMBuildFCmp(k->b, LLVMRealUNO, v, v, ""), LLVMConstReal(rw.ct, lowest_finite(dt)), v,
                        "");
  }
  fc_cg_store(k, dt, k->out[0], fc_cg_iadd(k, at, j), v);
  if (rw.itile)
    fc_cg_store(k, FC_DT_I64, k->out[1], fc_cg_iadd(k, at, j),
                LLVMBuildLoad2(k->b, fc_cg_i64(k), fc_cg_tile_at(k, fc_cg_i64(k), rw.itile, j), ""));
  fc_cg_loop_end(k, &ls);
  fc_cg_loop_end(k, &lt);
  fc_cg_loop_end(k, &lr);
  return FC_OK;
}
