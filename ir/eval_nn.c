/* eval_nn.c — reference evaluators of the arithmetic structural ops: matmul, conv, conv_transpose,
 * max_pool/avg_pool, einsum and det.
 *
 * Operands are loaded once into one arithmetic domain (eval_struct.h): double for float dtypes, with a
 * single correctly rounded store per result element, or uint64_t for integer dtypes, whose wraparound
 * is the dtype's after truncation. Loops are the direct definitions (no im2col, no blocking) written so
 * the innermost loop runs over a contiguous or fixed-stride row with its valid range computed up front,
 * never testing bounds per element; padding is never materialised. Every evaluation first checks its
 * multiply-add count against FC_EV_MAX_WORK. A conv's or matmul's fused epilogue runs afterwards over
 * the stored result with the element-wise evaluators (fc_ew_program_eval), exactly as the unfused ops did.
 */
#include "einsum_plan.h"
#include "eval_struct.h"
#include "ew_program.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* floor(a / b) and ceil(a / b) for b > 0 and any sign of a. */
static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

/* The operands of an arithmetic op in its domain. */
typedef struct Num {
  FcEvDomain dom;
  const double *f;
  const uint64_t *u;
} Num;

static Num num_load(FcArena *scratch, const FcTensor *t, FcEvDomain dom) {
  Num n = {dom, NULL, NULL};
  if (dom == FC_EVD_F64) n.f = fc_ev_load_f64(scratch, t);
  else n.u = fc_ev_load_u64(scratch, t);
  return n;
}

/* An accumulator buffer in the domain (zeroed). */
typedef struct Acc {
  double *f;
  uint64_t *u;
} Acc;

static Acc acc_new(FcArena *scratch, FcEvDomain dom, int64_t n) {
  Acc a = {NULL, NULL};
  if (dom == FC_EVD_F64) a.f = FC_NEW_ARRAY(scratch, double, (size_t)(n > 0 ? n : 1));
  else a.u = FC_NEW_ARRAY(scratch, uint64_t, (size_t)(n > 0 ? n : 1));
  return a;
}

static void acc_store(const Acc *a, FcTensor *t, int64_t at, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    if (a->f) fc_ev_store_f64(t, at + i, a->f[i]);
    else fc_ev_store_u64(t, at + i, a->u[i]);
  }
}

/* y[j*ys] += a * x[j*xs] for j in [0, n): the one inner loop of conv and conv_transpose. */
static void axpy(FcEvDomain dom, Acc y, int64_t yo, int64_t ys, Num x, int64_t xo, int64_t xs, int64_t n,
                 int64_t a_index, Num a) {
  if (dom == FC_EVD_F64) {
    double av = a.f[a_index], *yp = y.f + yo;
    const double *xp = x.f + xo;
    for (int64_t j = 0; j < n; j++) yp[j * ys] += av * xp[j * xs];
  } else {
    uint64_t av = a.u[a_index], *yp = y.u + yo;
    const uint64_t *xp = x.u + xo;
    for (int64_t j = 0; j < n; j++) yp[j * ys] += av * xp[j * xs];
  }
}

/* Product of n dims into *out; FC_ERR_UNSUPPORTED on overflow (dims of an empty tensor may multiply past
 * int64 even though the tensor holds nothing). */
static FcStatus dims_product(const FcOp *op, const int64_t *dims, int n, int64_t *out, FcDiag *diag) {
  int64_t p = 1;
  *out = 0;
  for (int i = 0; i < n; i++)
    if (!fc_checked_mul(p, dims[i], &p)) return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "dims too large to evaluate");
  *out = p;
  return FC_OK;
}

static FcStatus arith_domain(const FcOp *op, FcDtype dt, bool ints_ok, FcEvDomain *dom, FcDiag *diag) {
  *dom = fc_ev_domain(dt, ints_ok);
  if (*dom == FC_EVD_NONE)
    return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "cannot evaluate on %s", fc_dtype_name(dt));
  return FC_OK;
}

/* A fused epilogue (ops.def: conv and matmul): runs the `epilogue` program over the plain result
 * out[0] ('x') and the extra operands, replacing out[0]. Nothing to do without the attribute. */
static FcStatus apply_epilogue(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena,
                               FcDiag *diag) {
  const FcEwProgram *p = fc_op_attr_program(op, FC_ATTR_EPILOGUE);
  if (!p) return FC_OK;
  FcTensor *y = NULL;
  FC_EV_TRY(fc_ew_program_eval(op, p, &op->results[0].type, out[0], in, &y, arena, diag));
  out[0] = y;
  return FC_OK;
}

/* ---- matmul -------------------------------------------------------------------------------------- */

FcStatus fc_eval_matmul(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 2, diag));
  if (in[0]->type.quant) return fc_eval_quant_matmul(op, in, out, arena, diag);
  const FcType *at = &in[0]->type, *bt = &in[1]->type, *rt = &op->results[0].type;
  FcEvDomain dom;
  FC_EV_TRY(arith_domain(op, at->dtype, true, &dom, diag));
  int r = rt->rank;
  /* 8-bit operands widen exactly (u64 domain: sign- or zero-extended) and accumulate into i32, which an f32
   * result (`to`) takes converted. */
  bool int8 = fc_matmul_is_int8(at->dtype, bt->dtype) && (rt->dtype == FC_DT_I32 || rt->dtype == FC_DT_F32);
  if (at->rank < 2 || bt->rank < 2 || r != (at->rank > bt->rank ? at->rank : bt->rank) ||
      (!int8 && (bt->dtype != at->dtype || rt->dtype != at->dtype)))
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "operands must be matrices of one dtype");
  int64_t M = at->dims[at->rank - 2], K = at->dims[at->rank - 1], N = bt->dims[bt->rank - 1];
  if (bt->dims[bt->rank - 2] != K || rt->dims[r - 2] != M || rt->dims[r - 1] != N)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "inner dims %lld and %lld differ", (long long)K,
                      (long long)bt->dims[bt->rank - 2]);
  /* Batch strides in matrices; a broadcast (size-1 or missing) dim has stride 0. */
  int nb = r - 2;
  int64_t as[FC_EV_MAX_RANK], bs[FC_EV_MAX_RANK], sa = 1, sb = 1;
  for (int d = nb - 1; d >= 0; d--) {
    int da = d - (r - at->rank), db = d - (r - bt->rank);
    int64_t ad = da >= 0 ? at->dims[da] : 1, bd = db >= 0 ? bt->dims[db] : 1;
    if ((ad != rt->dims[d] && ad != 1) || (bd != rt->dims[d] && bd != 1) || (ad != rt->dims[d] && bd != rt->dims[d]))
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "batch dim %d does not broadcast", d);
    as[d] = ad == 1 ? 0 : sa;
    bs[d] = bd == 1 ? 0 : sb;
    sa *= ad;
    sb *= bd;
  }
  int64_t batches;
  FC_EV_TRY(dims_product(op, rt->dims, nb, &batches, diag));
  int64_t work[4] = {batches, M, N, K};
  FC_EV_TRY(fc_ev_work(op, diag, 4, work));
  fc_ev_make_results(op, out, arena);
  if (fc_ev_numel(rt) == 0) return FC_OK;

  FcArena scratch;
  fc_arena_init(&scratch);
  Num A = num_load(&scratch, in[0], dom), B = num_load(&scratch, in[1], dom);
  Acc row = acc_new(&scratch, dom, N);
  int64_t idx[FC_EV_MAX_RANK] = {0};
  for (int64_t bi = 0; bi < batches; bi++) {
    int64_t ao = 0, bo = 0;
    for (int d = 0; d < nb; d++) {
      ao += idx[d] * as[d];
      bo += idx[d] * bs[d];
    }
    ao *= M * K;
    bo *= K * N;
    for (int64_t i = 0; i < M; i++) {
      if (row.f) memset(row.f, 0, (size_t)N * sizeof *row.f);
      else memset(row.u, 0, (size_t)N * sizeof *row.u);
      for (int64_t k = 0; k < K; k++) axpy(dom, row, 0, 1, B, bo + k * N, 1, N, ao + i * K + k, A);
      if (int8 && rt->dtype == FC_DT_F32)
        for (int64_t j = 0; j < N; j++) row.u[j] = (uint64_t)(int64_t)(int32_t)(uint32_t)row.u[j]; /* the i32 sum */
      acc_store(&row, out[0], (bi * M + i) * N, N);
    }
    fc_ev_next(idx, rt->dims, nb);
  }
  fc_arena_free(&scratch);
  return apply_epilogue(op, in, out, arena, diag);
}

/* ---- conv and conv_transpose --------------------------------------------------------------------- */

/* The spatial attributes of a conv-like op with `n` spatial dims. */
typedef struct ConvAttrs {
  int n;
  int64_t group;
  int64_t strides[FC_EV_MAX_RANK], dilations[FC_EV_MAX_RANK], pads[2 * FC_EV_MAX_RANK];
  int64_t out_pad[FC_EV_MAX_RANK];
} ConvAttrs;

static FcStatus conv_attrs(const FcOp *op, int n, ConvAttrs *c, FcDiag *diag) {
  c->n = n;
  c->group = fc_op_attr_int(op, FC_ATTR_GROUP, 1);
  FC_EV_TRY(fc_ev_ints(op, FC_ATTR_STRIDES, n, 1, c->strides, diag));
  FC_EV_TRY(fc_ev_ints(op, FC_ATTR_DILATIONS, n, 1, c->dilations, diag));
  FC_EV_TRY(fc_ev_ints(op, FC_ATTR_PADS, 2 * n, 0, c->pads, diag));
  for (int i = 0; i < n; i++) c->out_pad[i] = 0;
  if (op->kind == FC_OP_CONV_TRANSPOSE) FC_EV_TRY(fc_ev_ints(op, FC_ATTR_OUTPUT_PADDING, n, 0, c->out_pad, diag));
  if (c->group < 1) return fc_ev_fail(op, diag, FC_ERR_INPUT, "group %lld must be positive", (long long)c->group);
  for (int i = 0; i < n; i++) {
    /* Bounds keep every coordinate computed below far inside int64. */
    if (c->strides[i] < 1 || c->dilations[i] < 1 || c->strides[i] > (1 << 30) || c->dilations[i] > (1 << 30) ||
        c->pads[i] < 0 || c->pads[n + i] < 0 || c->pads[i] > ((int64_t)1 << 40) ||
        c->pads[n + i] > ((int64_t)1 << 40) ||
        c->out_pad[i] < 0 || c->out_pad[i] > ((int64_t)1 << 40))
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "strides, dilations or pads of spatial dim %d are invalid", i);
  }
  return FC_OK;
}

/* Valid range [lo, hi) of j in [0, count) with 0 <= j*s + off < limit. */
static void stride_range(int64_t count, int64_t s, int64_t off, int64_t limit, int64_t *lo, int64_t *hi) {
  int64_t l = ceil_div(-off, s), h = floor_div(limit - 1 - off, s) + 1;
  *lo = l < 0 ? 0 : l;
  *hi = h > count ? count : h;
  if (*hi < *lo) *hi = *lo;
}

static FcStatus conv_bias(const FcOp *op, const FcTensor *const *in, int64_t M, FcDtype dt, FcDiag *diag) {
  if (op->n_operands < 3 || !in[2]) return FC_OK;
  if (in[2]->type.dtype != dt || in[2]->type.rank != 1 || in[2]->type.dims[0] != M)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "bias must be [%lld] of the input's dtype", (long long)M);
  return FC_OK;
}

/* Per output channel: fill acc with the bias (or zero). */
static void fill_bias(FcEvDomain dom, Acc acc, int64_t n, const Num *bias, int64_t m) {
  for (int64_t i = 0; i < n; i++) {
    if (dom == FC_EVD_F64) acc.f[i] = bias ? bias->f[m] : 0.0;
    else acc.u[i] = bias ? bias->u[m] : 0;
  }
}

/* The convolution of in[0] by in[1] (+ in[2], the bias, when present) into a new tensor of type *rt,
 * before any epilogue: flow.conv's whole arithmetic, and conv_blocked's on plain NCHW views. */
static FcStatus conv_plain(const FcOp *op, const FcTensor *const *in, const FcType *rt, FcTensor **y,
                           FcArena *arena, FcDiag *diag) {
  const FcType *xt = &in[0]->type, *wt = &in[1]->type;
  FcEvDomain dom;
  FC_EV_TRY(arith_domain(op, xt->dtype, true, &dom, diag));
  int n = xt->rank - 2;
  if (n < 1 || wt->rank != xt->rank || rt->rank != xt->rank || wt->dtype != xt->dtype || rt->dtype != xt->dtype)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "x and w must be [N, C, spatial...] tensors of one dtype");
  ConvAttrs ca;
  FC_EV_TRY(conv_attrs(op, n, &ca, diag));
  int64_t N = xt->dims[0], C = xt->dims[1], M = wt->dims[0], G = ca.group;
  if (C % G || M % G || wt->dims[1] != C / G || rt->dims[0] != N || rt->dims[1] != M)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "channels (x %lld, w [%lld, %lld], group %lld) do not match",
                      (long long)C, (long long)M, (long long)wt->dims[1], (long long)G);
  FC_EV_TRY(conv_bias(op, in, M, xt->dtype, diag));
  int64_t Cg = C / G, Mg = M / G, osz = 1, ksz = 1, isz = 1;
  const int64_t *D = xt->dims + 2, *K = wt->dims + 2, *O = rt->dims + 2;
  for (int i = 0; i < n; i++) {
    if (K[i] > ((int64_t)1 << 32) || D[i] > ((int64_t)1 << 40))
      return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "spatial dim %d too large to evaluate", i);
    int64_t span = D[i] + ca.pads[i] + ca.pads[n + i] - ((K[i] - 1) * ca.dilations[i] + 1);
    int64_t want = floor_div(span, ca.strides[i]) + 1;
    if (want < 0) want = 0;
    if (O[i] != want)
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "spatial dim %d of the result is %lld, attributes give %lld", i,
                        (long long)O[i], (long long)want);
  }
  FC_EV_TRY(dims_product(op, O, n, &osz, diag));
  FC_EV_TRY(dims_product(op, K, n, &ksz, diag));
  FC_EV_TRY(dims_product(op, D, n, &isz, diag));
  int64_t work[5] = {N, M, Cg, ksz, osz};
  FC_EV_TRY(fc_ev_work(op, diag, 5, work));
  *y = fc_tensor_new(arena, *rt);
  if (fc_ev_numel(rt) == 0) return FC_OK;

  FcArena scratch;
  fc_arena_init(&scratch);
  Num X = num_load(&scratch, in[0], dom), W = num_load(&scratch, in[1], dom), B;
  bool has_bias = op->n_operands > 2 && in[2];
  if (has_bias) B = num_load(&scratch, in[2], dom);
  Acc acc = acc_new(&scratch, dom, osz);
  int64_t ds[FC_EV_MAX_RANK], os[FC_EV_MAX_RANK];
  ds[n - 1] = os[n - 1] = 1;
  for (int i = n - 2; i >= 0; i--) {
    ds[i] = ds[i + 1] * D[i + 1];
    os[i] = os[i + 1] * O[i + 1];
  }
  int64_t rows = osz / O[n - 1];
  for (int64_t b = 0; b < N; b++)
    for (int64_t m = 0; m < M; m++) {
      int64_t g = m / Mg;
      fill_bias(dom, acc, osz, has_bias ? &B : NULL, m);
      for (int64_t c = 0; c < Cg; c++) {
        int64_t xbase = (b * C + g * Cg + c) * isz, wbase = (m * Cg + c) * ksz;
        int64_t kidx[FC_EV_MAX_RANK] = {0};
        for (int64_t kp = 0; kp < ksz; kp++, fc_ev_next(kidx, K, n)) {
          /* Input coordinate of output o along dim i: o*s + k*d - pad_begin. */
          int64_t off[FC_EV_MAX_RANK], lo, hi;
          for (int i = 0; i < n; i++) off[i] = kidx[i] * ca.dilations[i] - ca.pads[i];
          stride_range(O[n - 1], ca.strides[n - 1], off[n - 1], D[n - 1], &lo, &hi);
          if (lo >= hi) continue;
          int64_t oidx[FC_EV_MAX_RANK] = {0};
          for (int64_t row = 0; row < rows; row++, fc_ev_next(oidx, O, n - 1)) {
            int64_t xo = xbase, oo = 0;
            bool inside = true;
            for (int i = 0; i < n - 1 && inside; i++) {
              int64_t p = oidx[i] * ca.strides[i] + off[i];
              inside = p >= 0 && p < D[i];
              xo += p * ds[i];
              oo += oidx[i] * os[i];
            }
            if (!inside) continue;
            axpy(dom, acc, oo + lo, 1, X, xo + lo * ca.strides[n - 1] + off[n - 1], ca.strides[n - 1], hi - lo,
                 wbase + kp, W);
          }
        }
      }
      acc_store(&acc, *y, (b * M + m) * osz, osz);
    }
  fc_arena_free(&scratch);
  return FC_OK;
}

/* The quantised form (ops.def): the i32 conv of the shifted operands (its zero padding is the input's zero
 * point), then requantised per output channel into *y (the op's result type, its elements in the plain
 * order of rt: conv's own result, conv_blocked's unblocked one). */
static FcStatus conv_quant(const FcOp *op, const FcTensor *const *in, const FcType *rt, FcTensor **y, FcArena *arena,
                           FcDiag *diag) {
  FcArena scratch;
  fc_arena_init(&scratch);
  const FcTensor *shifted[3] = {fc_ev_quant_shifted(&scratch, in[0]), fc_ev_quant_shifted(&scratch, in[1]),
                                op->n_operands > 2 ? in[2] : NULL};
  FcType at = fc_type_make(&scratch, FC_DT_I32, rt->rank, rt->dims);
  FcTensor *acc = NULL;
  FcStatus st = conv_plain(op, shifted, &at, &acc, &scratch, diag);
  if (st == FC_OK) {
    int64_t nm = rt->dims[0] * rt->dims[1]; /* conv_plain checked the sizes */
    int64_t inner = nm ? fc_ev_numel(rt) / nm : 1;
    *y = fc_ev_requantize(op, arena, acc->data, in[0]->type.quant, in[1]->type.quant, inner);
  }
  fc_arena_free(&scratch);
  return st;
}

/* with an epilogue, the f32 product goes through it and is converted to the result dtype (`to`) as flow.cast
 * converts. */
static FcStatus conv_quant_epilogue(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena,
                                    FcDiag *diag) {
  const FcType *rt = &op->results[0].type;
  FC_EV_TRY(conv_quant(op, in, rt, &out[0], arena, diag));
  const FcEwProgram *p = fc_op_attr_program(op, FC_ATTR_EPILOGUE);
  if (!p) return FC_OK;
  FcTensor *y = NULL;
  FC_EV_TRY(fc_ew_program_eval(op, p, &out[0]->type, out[0], in, &y, arena, diag));
  const FcTensor *r = NULL;
  FC_EV_TRY(fc_ew_cast_to(op, y, rt->dtype, &r, arena, diag));
  out[0] = (FcTensor *)r;
  return FC_OK;
}

FcStatus fc_eval_conv(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 2, diag));
  if (in[0]->type.quant) return conv_quant_epilogue(op, in, out, arena, diag);
  FC_EV_TRY(conv_plain(op, in, &op->results[0].type, &out[0], arena, diag));
  return apply_epilogue(op, in, out, arena, diag);
}

/* Copies elements of es bytes between plain [N, C, S] (S = spatial size) and blocked [N, C/B, S, B] order. */
static void reblock(uint8_t *dst, const uint8_t *src, size_t es, int64_t N, int64_t C, int64_t S, int64_t B,
                    bool to_blocked) {
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t i = 0; i < S; i++) {
        int64_t p = (n * C + c) * S + i, q = ((n * (C / B) + c / B) * S + i) * B + c % B;
        if (to_blocked) memcpy(dst + (size_t)q * es, src + (size_t)p * es, es);
        else memcpy(dst + (size_t)p * es, src + (size_t)q * es, es);
      }
}

/* conv_blocked: the plain conv of the unblocked input (the quantised form's too), blocked, then the epilogue
 * over the 5-D result. */
FcStatus fc_eval_conv_blocked(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena,
                              FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 3, diag));
  const FcType *xt = &in[0]->type, *rt = &op->results[0].type;
  int64_t B = rt->rank == 5 ? rt->dims[4] : 0;
  bool quant = xt->quant != NULL;
  if ((quant ? !rt->quant && rt->dtype != FC_DT_F32 : xt->dtype != FC_DT_F32 || rt->dtype != FC_DT_F32) || B < 1 ||
      (xt->rank != 4 && xt->rank != 5) || (xt->rank == 5 && xt->dims[4] != B))
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "x must be f32 or quantised [N, C, H, W] or [N, C/B, H, W, B]");
  FcType xp, yp;
  int64_t S, OS, C, M;
  if (!fc_checked_mul(xt->dims[2], xt->dims[3], &S) || !fc_checked_mul(rt->dims[2], rt->dims[3], &OS) ||
      !fc_checked_mul(xt->dims[1], xt->rank == 5 ? B : 1, &C) || !fc_checked_mul(rt->dims[1], B, &M))
    return fc_ev_fail(op, diag, FC_ERR_LIMIT, "tensor sizes overflow");
  const FcTensor *args[3] = {in[0], in[1], in[2]};
  size_t xes = fc_dtype_size(xt->dtype), yes = fc_dtype_size(rt->dtype);
  if (xt->rank == 5) {
    int64_t dims[4] = {xt->dims[0], C, xt->dims[2], xt->dims[3]};
    xp = fc_type_make(arena, xt->dtype, 4, dims);
    xp.quant = xt->quant;
    FcTensor *x = fc_tensor_new(arena, xp);
    reblock((uint8_t *)x->data, in[0]->data, xes, xt->dims[0], dims[1], S, B, false);
    args[0] = x;
  }
  int64_t ydims[4] = {rt->dims[0], M, rt->dims[2], rt->dims[3]};
  yp = fc_type_make(arena, quant ? FC_DT_I32 : FC_DT_F32, 4, ydims);
  FcTensor *y = NULL;
  if (quant) FC_EV_TRY(conv_quant(op, args, &yp, &y, arena, diag));
  else FC_EV_TRY(conv_plain(op, args, &yp, &y, arena, diag));
  fc_ev_make_results(op, out, arena);
  reblock((uint8_t *)out[0]->data, y->data, yes, ydims[0], M, OS, B, true);
  return quant ? FC_OK : apply_epilogue(op, in, out, arena, diag);
}

FcStatus fc_eval_conv_transpose(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena,
                                FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 2, diag));
  const FcType *xt = &in[0]->type, *wt = &in[1]->type, *rt = &op->results[0].type;
  FcEvDomain dom;
  FC_EV_TRY(arith_domain(op, xt->dtype, true, &dom, diag));
  int n = xt->rank - 2;
  if (n < 1 || wt->rank != xt->rank || rt->rank != xt->rank || wt->dtype != xt->dtype || rt->dtype != xt->dtype)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "x and w must be [N, C, spatial...] tensors of one dtype");
  ConvAttrs ca;
  FC_EV_TRY(conv_attrs(op, n, &ca, diag));
  int64_t N = xt->dims[0], C = xt->dims[1], G = ca.group, Mg = wt->dims[1], M = Mg * G;
  if (C % G || wt->dims[0] != C || rt->dims[0] != N || rt->dims[1] != M)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "channels (x %lld, w [%lld, %lld], group %lld) do not match",
                      (long long)C, (long long)wt->dims[0], (long long)Mg, (long long)G);
  FC_EV_TRY(conv_bias(op, in, M, xt->dtype, diag));
  int64_t Cg = C / G, osz = 1, ksz = 1, isz = 1;
  const int64_t *D = xt->dims + 2, *K = wt->dims + 2, *O = rt->dims + 2;
  for (int i = 0; i < n; i++) {
    if (K[i] > ((int64_t)1 << 32) || D[i] > ((int64_t)1 << 40))
      return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "spatial dim %d too large to evaluate", i);
    int64_t want = ca.strides[i] * (D[i] - 1) + ca.out_pad[i] + (K[i] - 1) * ca.dilations[i] + 1 - ca.pads[i] -
                   ca.pads[n + i];
    if (want < 0) want = 0;
    if (O[i] != want)
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "spatial dim %d of the result is %lld, attributes give %lld", i,
                        (long long)O[i], (long long)want);
  }
  FC_EV_TRY(dims_product(op, O, n, &osz, diag));
  FC_EV_TRY(dims_product(op, K, n, &ksz, diag));
  FC_EV_TRY(dims_product(op, D, n, &isz, diag));
  int64_t work[5] = {N, M, Cg, ksz, isz};
  FC_EV_TRY(fc_ev_work(op, diag, 5, work));
  fc_ev_make_results(op, out, arena);
  if (fc_ev_numel(rt) == 0) return FC_OK;

  FcArena scratch;
  fc_arena_init(&scratch);
  Num X = num_load(&scratch, in[0], dom), W = num_load(&scratch, in[1], dom), B;
  bool has_bias = op->n_operands > 2 && in[2];
  if (has_bias) B = num_load(&scratch, in[2], dom);
  Acc acc = acc_new(&scratch, dom, osz);
  int64_t ds[FC_EV_MAX_RANK], os[FC_EV_MAX_RANK];
  ds[n - 1] = os[n - 1] = 1;
  for (int i = n - 2; i >= 0; i--) {
    ds[i] = ds[i + 1] * D[i + 1];
    os[i] = os[i + 1] * O[i + 1];
  }
  int64_t rows = D[n - 1] ? isz / D[n - 1] : 0;
  for (int64_t b = 0; b < N; b++)
    for (int64_t m = 0; m < M; m++) {
      int64_t g = m / Mg, mg = m % Mg;
      fill_bias(dom, acc, osz, has_bias ? &B : NULL, m);
      for (int64_t c = 0; c < Cg; c++) {
        int64_t xbase = (b * C + g * Cg + c) * isz, wbase = ((g * Cg + c) * Mg + mg) * ksz;
        int64_t kidx[FC_EV_MAX_RANK] = {0};
        for (int64_t kp = 0; kp < ksz; kp++, fc_ev_next(kidx, K, n)) {
          /* Input i feeds output i*s + k*d - pad_begin. */
          int64_t off[FC_EV_MAX_RANK], lo, hi;
          for (int i = 0; i < n; i++) off[i] = kidx[i] * ca.dilations[i] - ca.pads[i];
          stride_range(D[n - 1], ca.strides[n - 1], off[n - 1], O[n - 1], &lo, &hi);
          if (lo >= hi) continue;
          int64_t iidx[FC_EV_MAX_RANK] = {0};
          for (int64_t row = 0; row < rows; row++, fc_ev_next(iidx, D, n - 1)) {
            int64_t xo = xbase, oo = 0;
            bool inside = true;
            for (int i = 0; i < n - 1 && inside; i++) {
              int64_t p = iidx[i] * ca.strides[i] + off[i];
              inside = p >= 0 && p < O[i];
              oo += p * os[i];
              xo += iidx[i] * ds[i];
            }
            if (!inside) continue;
            axpy(dom, acc, oo + lo * ca.strides[n - 1] + off[n - 1], ca.strides[n - 1], X, xo + lo, 1, hi - lo,
                 wbase + kp, W);
          }
        }
      }
      acc_store(&acc, out[0], (b * M + m) * osz, osz);
    }
  fc_arena_free(&scratch);
  return FC_OK;
}

/* ---- pools --------------------------------------------------------------------------------------- */

/* Per spatial dim and output coordinate: the kernel taps inside the input [klo, khi) and, for
 * count_include_pad, the taps inside the padded input (the end padding included, windows running past
 * it in ceil mode not). */
typedef struct PoolDim {
  int64_t *klo, *khi, *cnt;
} PoolDim;

/* The most negative finite value of a float dtype: ONNX Runtime's initial max, kept for windows
 * without an element (or with only NaN). */
static double lowest_finite(FcDtype dt) {
  switch (dt) {
  case FC_DT_F16: return -65504.0;
  case FC_DT_BF16: return -3.3895313892515355e38;
  case FC_DT_F64: return -DBL_MAX;
  default: return -FLT_MAX;
  }
}

/* Order key for integer max: unsigned 64-bit values are shifted into signed order. */
static int64_t int_key(const FcTensor *t, int64_t i) {
  int64_t v = fc_tensor_get_i64(t, i);
  return t->type.dtype == FC_DT_U64 ? (int64_t)((uint64_t)v ^ 0x8000000000000000u) : v;
}

FcStatus fc_eval_pool(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 1, diag));
  const FcType *xt = &in[0]->type, *rt = &op->results[0].type;
  bool is_max = op->kind == FC_OP_MAX_POOL;
  int n = xt->rank - 2;
  if (n < 1 || rt->rank != xt->rank || rt->dtype != xt->dtype || rt->dims[0] != xt->dims[0] ||
      rt->dims[1] != xt->dims[1])
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "x must be [N, C, spatial...] and the result alike");
  FcEvDomain dom = fc_ev_domain(xt->dtype, is_max);
  if (dom == FC_EVD_NONE)
    return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "cannot evaluate on %s", fc_dtype_name(xt->dtype));
  bool want_idx = is_max && op->n_results > 1;
  if (want_idx && (op->results[1].type.dtype != FC_DT_I64 || !fc_shape_equal(&op->results[1].type, rt)))
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "indices result must be i64 of the result's shape");
  int64_t K[FC_EV_MAX_RANK], S[FC_EV_MAX_RANK], Dl[FC_EV_MAX_RANK], P[2 * FC_EV_MAX_RANK];
  const int64_t *kv;
  if (fc_op_attr_ints(op, FC_ATTR_KERNEL_SHAPE, &kv) != n)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "kernel_shape must have %d entries", n);
  memcpy(K, kv, (size_t)n * sizeof *K);
  FC_EV_TRY(fc_ev_ints(op, FC_ATTR_STRIDES, n, 1, S, diag));
  FC_EV_TRY(fc_ev_ints(op, FC_ATTR_DILATIONS, n, 1, Dl, diag));
  FC_EV_TRY(fc_ev_ints(op, FC_ATTR_PADS, 2 * n, 0, P, diag));
  bool ceil_mode = fc_op_attr_int(op, FC_ATTR_CEIL_MODE, 0) != 0;
  bool include_pad = fc_op_attr_int(op, FC_ATTR_COUNT_INCLUDE_PAD, 0) != 0;
  bool col_major = fc_op_attr_int(op, FC_ATTR_STORAGE_ORDER, 0) != 0;
  const int64_t *D = xt->dims + 2, *O = rt->dims + 2;
  int64_t osz = 1, isz = 1;
  for (int i = 0; i < n; i++) {
    if (K[i] < 1 || S[i] < 1 || Dl[i] < 1 || P[i] < 0 || P[n + i] < 0 || K[i] > (1 << 30) || S[i] > (1 << 30) ||
        D[i] > ((int64_t)1 << 40) ||
        Dl[i] > (1 << 30) || P[i] > ((int64_t)1 << 40) || P[n + i] > ((int64_t)1 << 40))
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "kernel, strides, dilations or pads of spatial dim %d are invalid", i);
    int64_t span = D[i] + P[i] + P[n + i] - ((K[i] - 1) * Dl[i] + 1);
    int64_t want = (ceil_mode ? ceil_div(span, S[i]) : floor_div(span, S[i])) + 1;
    if (ceil_mode && want > 0 && (want - 1) * S[i] >= D[i] + P[i]) want--;
    if (want < 0) want = 0;
    if (O[i] != want)
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "spatial dim %d of the result is %lld, attributes give %lld", i,
                        (long long)O[i], (long long)want);
  }
  FC_EV_TRY(dims_product(op, O, n, &osz, diag));
  FC_EV_TRY(dims_product(op, D, n, &isz, diag));
  fc_ev_make_results(op, out, arena);
  int64_t planes;
  FC_EV_TRY(dims_product(op, xt->dims, 2, &planes, diag));
  if (planes == 0 || osz == 0) return FC_OK;

  FcArena scratch;
  fc_arena_init(&scratch);
  PoolDim pd[FC_EV_MAX_RANK];
  int64_t window_work = 1;
  for (int i = 0; i < n; i++) {
    pd[i].klo = FC_NEW_ARRAY(&scratch, int64_t, (size_t)O[i]);
    pd[i].khi = FC_NEW_ARRAY(&scratch, int64_t, (size_t)O[i]);
    pd[i].cnt = FC_NEW_ARRAY(&scratch, int64_t, (size_t)O[i]);
    int64_t widest = 0;
    for (int64_t o = 0; o < O[i]; o++) {
      int64_t start = o * S[i] - P[i];
      stride_range(K[i], Dl[i], start, D[i], &pd[i].klo[o], &pd[i].khi[o]);
      int64_t c = ceil_div(D[i] + P[n + i] - start, Dl[i]);
      pd[i].cnt[o] = c < 0 ? 0 : c > K[i] ? K[i] : c;
      if (pd[i].khi[o] - pd[i].klo[o] > widest) widest = pd[i].khi[o] - pd[i].klo[o];
    }
    window_work *= widest;
  }
  int64_t work[3] = {planes, osz, window_work};
  FcStatus st = fc_ev_work(op, diag, 3, work);
  if (st != FC_OK) {
    fc_arena_free(&scratch);
    return st;
  }
  int64_t ds[FC_EV_MAX_RANK], cms[FC_EV_MAX_RANK];
  ds[n - 1] = 1;
  for (int i = n - 2; i >= 0; i--) ds[i] = ds[i + 1] * D[i + 1];
  cms[0] = 1;
  for (int i = 1; i < n; i++) cms[i] = cms[i - 1] * D[i - 1];
  const double *xf = dom == FC_EVD_F64 ? fc_ev_load_f64(&scratch, in[0]) : NULL;
  size_t es = fc_dtype_size(xt->dtype);
  int64_t oidx[FC_EV_MAX_RANK] = {0};
  for (int64_t oi = 0; oi < osz; oi++, fc_ev_next(oidx, O, n)) {
    /* The window's taps inside the input, as ranges of kernel indices per dim. */
    int64_t lo[FC_EV_MAX_RANK], hi[FC_EV_MAX_RANK], base = 0, taps = 1, padded = 1;
    for (int i = 0; i < n; i++) {
      lo[i] = pd[i].klo[oidx[i]];
      hi[i] = pd[i].khi[oidx[i]];
      taps *= hi[i] - lo[i];
      padded *= pd[i].cnt[oidx[i]];
      base += (oidx[i] * S[i] - P[i]) * ds[i];
    }
    for (int64_t p = 0; p < planes; p++) {
      int64_t pbase = p * isz + base, best = -1;
      double sum = 0.0, bestf = 0.0;
      int64_t bestk = 0;
      int64_t k[FC_EV_MAX_RANK];
      for (int i = 0; i < n; i++) k[i] = lo[i];
      for (int64_t t = 0; t < taps; t++) {
        int64_t at = pbase;
        for (int i = 0; i < n; i++) at += k[i] * Dl[i] * ds[i];
        if (!is_max) {
          sum += xf[at];
        } else if (dom == FC_EVD_F64) {
          /* NaN never wins (ONNX Runtime and ONNX's reference skip it); ties keep the first. */
          if (xf[at] == xf[at] && (best < 0 || xf[at] > bestf)) {
            best = at;
            bestf = xf[at];
          }
        } else {
          int64_t key = int_key(in[0], at);
          if (best < 0 || key > bestk) {
            best = at;
            bestk = key;
          }
        }
        for (int i = n - 1; i >= 0; i--) {
          if (++k[i] < hi[i]) break;
          k[i] = lo[i];
        }
      }
      int64_t o = p * osz + oi;
      if (!is_max) {
        fc_ev_store_f64(out[0], o, sum / (double)(include_pad ? padded : taps));
        continue;
      }
      if (best >= 0) {
        memcpy(fc_ev_at(out[0], o), fc_ev_at(in[0], best), es);
      } else if (dom == FC_EVD_F64) {
        fc_ev_store_f64(out[0], o, lowest_finite(xt->dtype));
      } else {
        fc_ev_store_u64(out[0], o, fc_dtype_class(xt->dtype) == FC_DTC_UINT ? 0 : (uint64_t)1 << (8 * es - 1));
      }
      if (want_idx) {
        int64_t flat = -1;
        if (best >= 0) {
          int64_t rem = best - p * isz, sp = 0;
          for (int i = 0; i < n; i++) {
            int64_t c = rem / ds[i];
            rem %= ds[i];
            sp += c * (col_major ? cms[i] : ds[i]);
          }
          flat = p * isz + sp;
        }
        fc_tensor_set_i64(out[1], o, flat);
      }
    }
  }
  fc_arena_free(&scratch);
  return FC_OK;
}

/* ---- einsum -------------------------------------------------------------------------------------- */

/* The equation is compiled by ir/einsum_plan.c, shared with the kernel emitter. */
FcStatus fc_eval_einsum(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  int nops = op->n_operands;
  FC_EV_TRY(fc_ev_check(op, in, nops, diag));
  const FcType *rt = &op->results[0].type;
  if (nops > FC_EIN_MAX_OPS) return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "more than %d operands", FC_EIN_MAX_OPS);
  FcEvDomain dom;
  FC_EV_TRY(arith_domain(op, rt->dtype, true, &dom, diag));
  for (int k = 0; k < nops; k++)
    if (in[k]->type.dtype != rt->dtype)
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "operands must share the result dtype");
  FcArena scratch;
  fc_arena_init(&scratch);
  const FcType *types[FC_EIN_MAX_OPS];
  for (int k = 0; k < nops; k++) types[k] = &in[k]->type;
  FcEinsumPlan plan;
  char why[512];
  FcStatus st = fc_einsum_plan(fc_op_attr_str(op, FC_ATTR_EQUATION, ""), nops, types, rt, &scratch, &plan, why,
                               sizeof why);
  if (st != FC_OK) {
    fc_arena_free(&scratch);
    return fc_ev_fail(op, diag, st, "%s", why);
  }
  int nl = plan.nl, n_out = plan.n_out;
  const int64_t *dims = plan.dims;
  int64_t(*strides)[FC_EIN_MAX_LABELS] = plan.strides;
  int64_t total_out = 1, total_con = 1;
  for (int i = 0; i < nl; i++) {
    if (i < n_out) total_out *= dims[i];
    else if (!fc_checked_mul(total_con, dims[i], &total_con)) {
      fc_arena_free(&scratch);
      return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "too much work to evaluate at compile time");
    }
  }
  int64_t work[3] = {total_out, total_con, nops};
  st = fc_ev_work(op, diag, 3, work);
  if (st != FC_OK) {
    fc_arena_free(&scratch);
    return st;
  }
  fc_ev_make_results(op, out, arena);
  if (total_out == 0) {
    fc_arena_free(&scratch);
    return FC_OK;
  }
  Num vals[FC_EIN_MAX_OPS];
  for (int k = 0; k < nops; k++) vals[k] = num_load(&scratch, in[k], dom);
  int64_t idx[FC_EIN_MAX_LABELS] = {0}, off[FC_EIN_MAX_OPS] = {0};
  for (int64_t o = 0; o < total_out; o++) {
    double accf = 0.0;
    uint64_t accu = 0;
    for (int64_t c = 0; c < total_con; c++) {
      if (dom == FC_EVD_F64) {
        double prod = 1.0;
        for (int k = 0; k < nops; k++) prod *= vals[k].f[off[k]];
        accf += prod;
      } else {
        uint64_t prod = 1;
        for (int k = 0; k < nops; k++) prod *= vals[k].u[off[k]];
        accu += prod;
      }
      for (int i = nl - 1; i >= n_out; i--) {
        for (int k = 0; k < nops; k++) off[k] += strides[k][i];
        if (++idx[i] < dims[i]) break;
        for (int k = 0; k < nops; k++) off[k] -= strides[k][i] * dims[i];
        idx[i] = 0;
      }
    }
    if (dom == FC_EVD_F64) fc_ev_store_f64(out[0], o, accf);
    else fc_ev_store_u64(out[0], o, accu);
    for (int i = n_out - 1; i >= 0; i--) {
      for (int k = 0; k < nops; k++) off[k] += strides[k][i];
      if (++idx[i] < dims[i]) break;
      for (int k = 0; k < nops; k++) off[k] -= strides[k][i] * dims[i];
      idx[i] = 0;
    }
  }
  fc_arena_free(&scratch);
  return FC_OK;
}

/* ---- det ----------------------------------------------------------------------------------------- */

/* LU decomposition with partial pivoting (the largest magnitude in the column), as LAPACK's getrf that
 * numpy uses; the determinant is the signed product of the pivots. */
static double det_lu(double *a, int64_t n) {
  double det = 1.0;
  for (int64_t k = 0; k < n; k++) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; i++)
      if (fabs(a[i * n + k]) > fabs(a[p * n + k])) p = i;
    if (a[p * n + k] == 0.0) return 0.0;
    if (p != k) {
      for (int64_t j = 0; j < n; j++) {
        double t = a[k * n + j];
        a[k * n + j] = a[p * n + j];
        a[p * n + j] = t;
      }
      det = -det;
    }
    double piv = a[k * n + k];
    det *= piv;
    for (int64_t i = k + 1; i < n; i++) {
      double f = a[i * n + k] / piv;
      for (int64_t j = k + 1; j < n; j++) a[i * n + j] -= f * a[k * n + j];
    }
  }
  return det;
}

FcStatus fc_eval_det(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 1, diag));
  const FcType *xt = &in[0]->type, *rt = &op->results[0].type;
  FcEvDomain dom;
  FC_EV_TRY(arith_domain(op, xt->dtype, false, &dom, diag));
  int r = xt->rank;
  if (r < 2 || xt->dims[r - 1] != xt->dims[r - 2] || rt->rank != r - 2 || rt->dtype != xt->dtype)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "operand must be [..., n, n]");
  for (int d = 0; d < r - 2; d++)
    if (rt->dims[d] != xt->dims[d]) return fc_ev_fail(op, diag, FC_ERR_INPUT, "result dims must be the batch dims");
  int64_t n = xt->dims[r - 1], batches = fc_ev_numel(rt);
  int64_t work[4] = {batches, n, n, n};
  FC_EV_TRY(fc_ev_work(op, diag, 4, work));
  fc_ev_make_results(op, out, arena);
  if (batches == 0) return FC_OK;
  FcArena scratch;
  fc_arena_init(&scratch);
  double *a = FC_NEW_ARRAY(&scratch, double, (size_t)(n * n > 0 ? n * n : 1));
  for (int64_t b = 0; b < batches; b++) {
    for (int64_t i = 0; i < n * n; i++) a[i] = fc_tensor_get_f64(in[0], b * n * n + i);
    fc_ev_store_f64(out[0], b, det_lu(a, n));
  }
  fc_arena_free(&scratch);
  return FC_OK;
}
