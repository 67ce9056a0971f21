/* gpu_kernel_conv.c — GPU kernels of flow.conv (any number of spatial dims up to the importer's rank
 * limit; groups, dilations, strides, pads, bias and the fused epilogue as the CPU's fc_kernel_conv).
 *
 * y[b, m, o..] = bias[m] + sum_{c, kk..} w[m, c, kk..] * x[b, grp*Cg + c, o*s + kk*d - pad], zero outside.
 *
 * Dense and grouped convs are an implicit GEMM on the tiled GEMM of gpu_kernel_matmul.c: one problem per
 * (image, group), C [Mg, O] = W_grp [Mg, Cg·ksz] · X' [Cg·ksz, O], where X' is im2col of the image and is
 * never built: the B-tile loader splits its row into (channel, tap) and its column into the output
 * position by constant divisions, computes the input coordinate and loads 0 where it falls in the
 * padding (a select over a clamped, in-range address, so no branch sits between the GEMM's barriers).
 * Consecutive threads load consecutive output positions of one tap: contiguous input for stride 1.
 *
 * Depthwise convs (one input channel per group) have K = ksz, too little to tile: a direct kernel, one
 * thread per output element (consecutive threads along the output row) summing its taps.
 *
 * Both apply the bias and the epilogue per element (cg_epilogue.h: the result viewed as [N·M, O]) in
 * f32; other dtypes add the bias (and carry no epilogue, as on the CPU). Quantised convs are refused.
 */
#include "cg_epilogue.h"
#include "gpu.h"

enum { THREADS = 256, MAX_SP = FC_DEFAULT_MAX_RANK };

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

typedef struct ConvCtx {
  int n;                         /* spatial dims */
  const int64_t *D, *KS, *O;     /* input, kernel and output spatial dims */
  int64_t s[MAX_SP], d[MAX_SP], pad[MAX_SP];
  int64_t ds[MAX_SP];            /* input spatial strides */
  int64_t isz, osz, ksz;
  int64_t C, M, G, Cg, Mg, Kc;   /* Kc = Cg * ksz: a filter's elements */
  FcDtype dt;
  FcCgEpilogue *e;               /* f32: bias and epilogue */
  bool add_bias;                 /* other dtypes: the bias, added directly */
  LLVMValueRef xbase, wbase, row0; /* per problem: the image+group's first input element, filter, result row */
} ConvCtx;

static FcStatus conv_init(FcGpuKernel *g, ConvCtx *c) {
  FcKernel *k = &g->k;
  FcOp *op = k->op;
  const FcType *xt = &op->operands[0].value->type, *wt = &op->operands[1].value->type, *yt = &op->results[0].type;
  if (xt->quant || wt->quant || yt->quant) return fc_gpu_error(g, FC_ERR_UNSUPPORTED, "a quantised conv has no GPU kernel yet");
  int n = xt->rank - 2;
  if (n < 1 || n > MAX_SP) return fc_gpu_error(g, FC_ERR_UNSUPPORTED, "%d spatial dims are not supported", n);
  const int64_t *s, *d, *p;
  if (fc_op_attr_ints(op, FC_ATTR_STRIDES, &s) != n || fc_op_attr_ints(op, FC_ATTR_DILATIONS, &d) != n ||
      fc_op_attr_ints(op, FC_ATTR_PADS, &p) != 2 * n)
    return fc_gpu_error(g, FC_ERR_INTERNAL, "strides, dilations or pads do not match %d spatial dims", n);
  c->n = n;
  c->D = xt->dims + 2;
  c->KS = wt->dims + 2;
  c->O = yt->dims + 2;
  c->isz = c->osz = c->ksz = 1;
  for (int i = n - 1; i >= 0; i--) {
    c->s[i] = s[i];
    c->d[i] = d[i];
    c->pad[i] = p[i];
    c->ds[i] = c->isz;
    c->isz *= c->D[i]; /* dims of verified types: no overflow */
    c->osz *= c->O[i];
    c->ksz *= c->KS[i];
  }
  c->dt = yt->dtype;
  if (c->dt == FC_DT_BOOL) return fc_gpu_error(g, FC_ERR_UNSUPPORTED, "an i1 conv");
  c->C = xt->dims[1];
  c->M = wt->dims[0];
  c->G = fc_op_attr_int(op, FC_ATTR_GROUP, 1);
  FC_ASSERT(c->G >= 1 && c->C % c->G == 0 && c->M % c->G == 0);
  c->Cg = c->C / c->G;
  c->Mg = c->M / c->G;
  c->Kc = c->Cg * c->ksz;
  if (c->dt == FC_DT_F32) return fc_cg_epilogue_init(k, n, &c->e);
  if (op->n_operands > 3 || fc_op_attr(op, FC_ATTR_EPILOGUE))
    return fc_gpu_error(g, FC_ERR_UNSUPPORTED, "a fused epilogue on a %s conv", fc_dtype_name(c->dt));
  c->add_bias = op->n_operands > 2 && k->in[2];
  return FC_OK;
}

/* The finished sum v of result element (row = b·M + m, position pos): bias, epilogue, store. */
static void store_result(FcKernel *k, const ConvCtx *c, LLVMValueRef row, LLVMValueRef m, LLVMValueRef pos,
                         LLVMValueRef v) {
  if (c->e) {
    v = fc_cg_epilogue_value(k, c->e, v, row, pos);
  } else if (c->add_bias) {
    FcOp add = {.kind = FC_OP_ADD};
    v = fc_cg_scalar_op(k, &add, c->dt, v, fc_cg_load(k, c->dt, k->in[2], m), NULL);
  }
  fc_cg_store(k, c->dt, k->out[0], fc_cg_iadd(k, fc_cg_imulc(k, row, c->osz), pos), v);
}

/* The input element of spatial output position pos (coordinates o[]) and kernel tap kc[]: its offset
 * from the channel's first element (clamped in range) and whether it lies inside the image. */
static LLVMValueRef tap_offset(FcKernel *k, const ConvCtx *c, LLVMValueRef const *o, LLVMValueRef const *kc,
                               LLVMValueRef *inside) {
  LLVMBuilderRef b = k->b;
  LLVMValueRef off = c64(k, 0), ok = LLVMConstInt(LLVMInt1TypeInContext(k->ctx), 1, 0);
  for (int i = 0; i < c->n; i++) {
    LLVMValueRef q = fc_cg_iadd(k, fc_cg_imulc(k, o[i], c->s[i]), fc_cg_imulc(k, kc[i], c->d[i]));
    if (c->pad[i]) q = fc_cg_iadd(k, q, c64(k, -c->pad[i]));
    ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntULT, q, c64(k, c->D[i]), ""), "");
    off = fc_cg_iadd(k, off, fc_cg_imulc(k, q, c->ds[i]));
  }
  *inside = ok;
  return LLVMBuildSelect(b, ok, off, c64(k, 0), "");
}

/* ---- implicit GEMM ------------------------------------------------------------------------------- */

static void cv_begin(FcGpuKernel *g, void *ctx, LLVMValueRef z) {
  ConvCtx *c = ctx;
  FcKernel *k = &g->k;
  LLVMValueRef img = LLVMBuildUDiv(k->b, z, c64(k, c->G), ""), grp = LLVMBuildURem(k->b, z, c64(k, c->G), "");
  c->xbase = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, img, c->C), fc_cg_imulc(k, grp, c->Cg)), c->isz);
  c->wbase = fc_cg_imulc(k, grp, c->Mg * c->Kc);
  c->row0 = fc_cg_iadd(k, fc_cg_imulc(k, img, c->M), fc_cg_imulc(k, grp, c->Mg));
}

static LLVMValueRef cv_load_a(FcGpuKernel *g, void *ctx, LLVMValueRef z, LLVMValueRef m, LLVMValueRef kk) {
  (void)z;
  ConvCtx *c = ctx;
  FcKernel *k = &g->k;
  return fc_cg_load(k, c->dt, k->in[1], fc_cg_iadd(k, c->wbase, fc_cg_iadd(k, fc_cg_imulc(k, m, c->Kc), kk)));
}

static LLVMValueRef cv_load_b(FcGpuKernel *g, void *ctx, LLVMValueRef z, LLVMValueRef kk, LLVMValueRef pos) {
  (void)z;
  ConvCtx *c = ctx;
  FcKernel *k = &g->k;
  LLVMValueRef ch = LLVMBuildUDiv(k->b, kk, c64(k, c->ksz), ""), tap = LLVMBuildURem(k->b, kk, c64(k, c->ksz), "");
  LLVMValueRef kc[MAX_SP], o[MAX_SP], inside;
  fc_cg_unflatten(k, tap, c->KS, c->n, kc);
  fc_cg_unflatten(k, pos, c->O, c->n, o);
  LLVMValueRef off = tap_offset(k, c, o, kc, &inside);
  off = fc_cg_iadd(k, fc_cg_iadd(k, c->xbase, fc_cg_imulc(k, ch, c->isz)), off);
  LLVMValueRef v = fc_cg_load(k, c->dt, k->in[0], off);
  return LLVMBuildSelect(k->b, inside, v, LLVMConstNull(LLVMTypeOf(v)), "");
}

static void cv_store_c(FcGpuKernel *g, void *ctx, LLVMValueRef z, LLVMValueRef m, LLVMValueRef pos, LLVMValueRef v) {
  (void)z;
  ConvCtx *c = ctx;
  FcKernel *k = &g->k;
  LLVMValueRef row = fc_cg_iadd(k, c->row0, m);
  store_result(k, c, row, LLVMBuildURem(k->b, row, c64(k, c->M), ""), pos, v);
}

/* ---- direct (depthwise) -------------------------------------------------------------------------- */

static FcStatus conv_direct(FcGpuKernel *g, ConvCtx *c) {
  FcKernel *k = &g->k;
  LLVMBuilderRef b = k->b;
  int64_t numel;
  if (!fc_type_numel(&k->op->results[0].type, &numel)) return fc_gpu_error(g, FC_ERR_LIMIT, "result is too large");
  FcStatus st = fc_gpu_launch_1d(g, numel, THREADS);
  if (st != FC_OK || numel == 0) return st;
  LLVMValueRef i = fc_gpu_global_idx_x(g);
  LLVMBasicBlockRef done = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntSLT, i, c64(k, numel), "in"));
  LLVMValueRef row = LLVMBuildUDiv(b, i, c64(k, c->osz), "row"), pos = LLVMBuildURem(b, i, c64(k, c->osz), "pos");
  LLVMValueRef img = LLVMBuildUDiv(b, row, c64(k, c->M), ""), m = LLVMBuildURem(b, row, c64(k, c->M), "m");
  LLVMValueRef grp = LLVMBuildUDiv(b, m, c64(k, c->Mg), "");
  LLVMValueRef xbase = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, img, c->C), fc_cg_imulc(k, grp, c->Cg)), c->isz);
  LLVMValueRef wbase = fc_cg_imulc(k, m, c->Kc);
  LLVMValueRef o[MAX_SP];
  fc_cg_unflatten(k, pos, c->O, c->n, o);
  LLVMTypeRef ct = fc_cg_compute_type(k, c->dt);
  LLVMValueRef acc = fc_cg_tile_new(k, ct, 1, "acc");
  LLVMBuildStore(b, LLVMConstNull(ct), acc);
  FcLoop lc, lt;
  LLVMValueRef ch = fc_cg_loop_begin(k, &lc, c64(k, 0), c64(k, c->Cg), 1, "c");
  LLVMValueRef tap = fc_cg_loop_begin(k, &lt, c64(k, 0), c64(k, c->ksz), 1, "tap");
  LLVMValueRef kc[MAX_SP], inside;
  fc_cg_unflatten(k, tap, c->KS, c->n, kc);
  LLVMValueRef off = tap_offset(k, c, o, kc, &inside);
  LLVMBasicBlockRef skip = fc_cg_if_begin(k, inside);
  LLVMValueRef xv = fc_cg_load(k, c->dt, k->in[0], fc_cg_iadd(k, fc_cg_iadd(k, xbase, fc_cg_imulc(k, ch, c->isz)), off));
  LLVMValueRef wv = fc_cg_load(k, c->dt, k->in[1], fc_cg_iadd(k, wbase, fc_cg_iadd(k, fc_cg_imulc(k, ch, c->ksz), tap)));
  LLVMBuildStore(b, fc_cg_madd(k, wv, xv, LLVMBuildLoad2(b, ct, acc, "")), acc);
  fc_cg_if_end(k, skip);
  fc_cg_loop_end(k, &lt);
  fc_cg_loop_end(k, &lc);
  store_result(k, c, row, m, pos, LLVMBuildLoad2(b, ct, acc, ""));
  fc_cg_if_end(k, done);
  return FC_OK;
}

FcStatus fc_gpu_conv(FcGpuKernel *g) {
  ConvCtx c = {0};
  FcStatus st = conv_init(g, &c);
  if (st != FC_OK) return st;
  if (c.Cg == 1) return conv_direct(g, &c);
  int64_t batch;
  if (!fc_checked_mul(g->k.op->operands[0].value->type.dims[0], c.G, &batch)) return fc_gpu_error(g, FC_ERR_LIMIT, "too many problems");
  FcGpuGemm p = {.batch = batch, .M = c.Mg, .N = c.osz, .K = c.Kc, .ct = fc_cg_compute_type(&g->k, c.dt), .ctx = &c,
                 .begin = cv_begin, .load_a = cv_load_a, .load_b = cv_load_b, .store_c = cv_store_c};
  return fc_gpu_gemm_emit(g, &p);
}
