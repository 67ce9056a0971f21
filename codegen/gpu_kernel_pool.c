/* gpu_kernel_pool.c — GPU kernels of flow.max_pool (with its optional index result) and flow.avg_pool over
 * any number of spatial dims, with the CPU's semantics (kernel_nn.c fc_kernel_pool): dilations, strides,
 * pads, the output size the IR inferred (ceil mode included), count_include_pad, storage_order.
 *
 * One thread per output element, consecutive threads along the output row (so a warp's loads of one tap
 * are s elements apart and its stores contiguous). The thread walks its window's taps as one flat loop
 * (tap coordinates by constant divisions), skipping taps outside the input. max_pool: NaN never wins and
 * ties keep the first tap (row-major tap order, as the CPU), a window without a number gives the dtype's
 * lowest finite value; integer maxima start at the dtype's minimum, and with indices the first tap is
 * taken even when it equals it. avg_pool divides by the product over dims of per-position counts from
 * compile-time tables (taps inside the input, or inside the padded input with count_include_pad).
 */
#include <float.h>

#include "gpu.h"

enum { THREADS = 256, MAX_SP = FC_DEFAULT_MAX_RANK };

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

/* Count of j in [0, count) with 0 <= j*s + off < limit. */
static int64_t taps_inside(int64_t count, int64_t s, int64_t off, int64_t limit) {
  int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s, top = limit - 1 - off;
  int64_t hi = top < 0 ? 0 : top / s + 1;
  if (lo > count) lo = count;
  if (hi > count) hi = count;
  return hi > lo ? hi - lo : 0;
}

static double lowest_finite(FcDtype dt) {
  switch (dt) {
  case FC_DT_F16: return -65504.0;
  case FC_DT_BF16: return -3.3895313892515355e38;
  case FC_DT_F64: return -DBL_MAX;
  default: return -FLT_MAX;
  }
}

FcStatus fc_gpu_pool(FcGpuKernel *g) {
  FcKernel *k = &g->k;
  FcOp *op = k->op;
  LLVMBuilderRef b = k->b;
  const FcType *xt = &op->operands[0].value->type, *yt = &op->results[0].type;
  int n = xt->rank - 2;
  const int64_t *KS, *s, *d, *p;
  if (xt->quant) return fc_gpu_error(g, FC_ERR_UNSUPPORTED, "a quantised pool has no GPU kernel yet");
  if (n < 1 || n > MAX_SP) return fc_gpu_error(g, FC_ERR_UNSUPPORTED, "%d spatial dims are not supported", n);
  if (fc_op_attr_ints(op, FC_ATTR_KERNEL_SHAPE, &KS) != n || fc_op_attr_ints(op, FC_ATTR_STRIDES, &s) != n ||
      fc_op_attr_ints(op, FC_ATTR_DILATIONS, &d) != n || fc_op_attr_ints(op, FC_ATTR_PADS, &p) != 2 * n)
    return fc_gpu_error(g, FC_ERR_INTERNAL, "kernel_shape, strides, dilations or pads do not match the input rank");
  FcDtype dt = xt->dtype;
  bool is_max = op->kind == FC_OP_MAX_POOL, want_idx = is_max && op->n_results > 1 && k->out[1];
  bool is_float = fc_dtype_is_float(dt), is_unsigned = fc_dtype_class(dt) == FC_DTC_UINT;
  if (!is_float && !is_max) return fc_gpu_error(g, FC_ERR_UNSUPPORTED, "avg_pool on %s", fc_dtype_name(dt));
  if (dt == FC_DT_BOOL) return fc_gpu_error(g, FC_ERR_UNSUPPORTED, "max_pool on i1");
  bool col_major = fc_op_attr_int(op, FC_ATTR_STORAGE_ORDER, 0) != 0;
  bool include_pad = fc_op_attr_int(op, FC_ATTR_COUNT_INCLUDE_PAD, 0) != 0;
  const int64_t *D = xt->dims + 2, *O = yt->dims + 2;
  int64_t ds[MAX_SP], ist[MAX_SP], isz = 1, osz = 1, ksz = 1;
  for (int i = n - 1; i >= 0; i--) {
    ds[i] = isz;
    isz *= D[i];
    osz *= O[i];
    ksz *= KS[i];
  }
  for (int i = 0; i < n; i++) ist[i] = ds[i];
  if (col_major) {
    ist[0] = 1;
    for (int i = 1; i < n; i++) ist[i] = ist[i - 1] * D[i - 1];
  }
  int64_t numel;
  if (!fc_type_numel(yt, &numel)) return fc_gpu_error(g, FC_ERR_LIMIT, "result is too large");
  FcStatus st = fc_gpu_launch_1d(g, numel, THREADS);
  if (st != FC_OK || numel == 0) return st;

  LLVMValueRef cnt_tab[MAX_SP] = {0};
  if (!is_max)
    for (int i = 0; i < n; i++) {
      int64_t *cnt = FC_NEW_ARRAY(&op->graph->module->arena, int64_t, (size_t)O[i] + 1);
      for (int64_t o = 0; o < O[i]; o++) {
        int64_t start = o * s[i] - p[i];
        if (include_pad) {
          int64_t span = D[i] + p[n + i] - start; /* taps up to the end of the end padding */
          int64_t cn = span <= 0 ? 0 : (span + d[i] - 1) / d[i];
          cnt[o] = cn > KS[i] ? KS[i] : cn;
        } else {
          cnt[o] = taps_inside(KS[i], d[i], start, D[i]);
        }
      }
      cnt_tab[i] = fc_cg_i64_table(k, cnt, O[i], "pool_cnt");
    }

  LLVMValueRef i = fc_gpu_global_idx_x(g);
  LLVMBasicBlockRef done = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntSLT, i, c64(k, numel), "in"));
  LLVMValueRef plane = LLVMBuildUDiv(b, i, c64(k, osz), ""), pos = LLVMBuildURem(b, i, c64(k, osz), "");
  LLVMValueRef o[MAX_SP], kc[MAX_SP];
  fc_cg_unflatten(k, pos, O, n, o);
  LLVMValueRef pbase = fc_cg_imulc(k, plane, isz);
  LLVMTypeRef ct = fc_cg_compute_type(k, dt), i64 = fc_cg_i64(k);
  LLVMValueRef acc = fc_cg_tile_new(k, ct, 1, "acc"), idx = want_idx ? fc_cg_tile_new(k, i64, 1, "idx") : NULL;
  LLVMValueRef init;
  if (!is_max) init = LLVMConstNull(ct);
  else if (is_float) init = LLVMConstReal(ct, __builtin_nan(""));
  else if (is_unsigned) init = LLVMConstNull(ct);
  else init = LLVMConstInt(ct, 1ull << (LLVMGetIntTypeWidth(ct) - 1), 0);
  LLVMBuildStore(b, init, acc);
  if (idx) LLVMBuildStore(b, c64(k, -1), idx);

  FcLoop lt;
  LLVMValueRef tap = fc_cg_loop_begin(k, &lt, c64(k, 0), c64(k, ksz), 1, "tap");
  fc_cg_unflatten(k, tap, KS, n, kc);
  LLVMValueRef inside = LLVMConstInt(LLVMInt1TypeInContext(k->ctx), 1, 0), off = pbase, lin = pbase;
  for (int ax = 0; ax < n; ax++) {
    LLVMValueRef q = fc_cg_iadd(k, fc_cg_iadd(k, fc_cg_imulc(k, o[ax], s[ax]), c64(k, -p[ax])), fc_cg_imulc(k, kc[ax], d[ax]));
    inside = LLVMBuildAnd(b, inside, LLVMBuildICmp(b, LLVMIntULT, q, c64(k, D[ax]), ""), "");
    off = fc_cg_iadd(k, off, fc_cg_imulc(k, q, ds[ax]));
    lin = fc_cg_iadd(k, lin, fc_cg_imulc(k, q, ist[ax]));
  }
  LLVMBasicBlockRef skip = fc_cg_if_begin(k, inside);
  LLVMValueRef v = fc_cg_load(k, dt, k->in[0], off), a = LLVMBuildLoad2(b, ct, acc, "");
  if (!is_max) {
    LLVMBuildStore(b, LLVMBuildFAdd(b, a, v, ""), acc);
  } else {
    LLVMValueRef take;
    if (is_float) {
      LLVMValueRef none = LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealUNO, a, a, ""), LLVMBuildFCmp(b, LLVMRealORD, v, v, ""), "");
      take = LLVMBuildOr(b, LLVMBuildFCmp(b, LLVMRealOGT, v, a, ""), none, "");
    } else {
      take = LLVMBuildICmp(b, is_unsigned ? LLVMIntUGT : LLVMIntSGT, v, a, "");
      if (idx) take = LLVMBuildOr(b, take, LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildLoad2(b, i64, idx, ""), c64(k, 0), ""), "");
    }
    LLVMBuildStore(b, LLVMBuildSelect(b, take, v, a, ""), acc);
    if (idx) LLVMBuildStore(b, LLVMBuildSelect(b, take, lin, LLVMBuildLoad2(b, i64, idx, ""), ""), idx);
  }
  fc_cg_if_end(k, skip);
  fc_cg_loop_end(k, &lt);

  LLVMValueRef r = LLVMBuildLoad2(b, ct, acc, "");
  if (!is_max) {
    LLVMValueRef cnt = c64(k, 1);
    for (int ax = 0; ax < n; ax++) cnt = fc_cg_imul(k, cnt, fc_cg_load(k, FC_DT_I64, cnt_tab[ax], o[ax]));
    r = LLVMBuildFDiv(b, r, LLVMBuildSIToFP(b, cnt, ct, ""), "");
  } else if (is_float) {
    r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, r, r, ""), LLVMConstReal(ct, lowest_finite(dt)), r, "");
  }
  fc_cg_store(k, dt, k->out[0], i, r);
  if (idx) fc_cg_store(k, FC_DT_I64, k->out[1], i, LLVMBuildLoad2(b, i64, idx, ""));
  fc_cg_if_end(k, done);
  return FC_OK;
}
