/* cg_requant.c — compile-time folding of a quantised conv's or matmul's zero points and bias, and the
 * requantising store shared by the integer kernels (cg_requant.h has the arithmetic).
 *
 * Everything per channel is computed here on the host once: the shifted weights w' (int16, kept in the
 * op's element order so each kernel packs them its own way), the i32 correction and the f32 multiplier.
 * The emitted part is a handful of vector instructions applied to an accumulator vector just before it is
 * stored, so no i32 tensor is ever written to memory.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_requant.h"

static bool fail(char *why, size_t cap, const char *msg) {
  if (why && cap) snprintf(why, cap, "%s", msg);
  return false;
}

/* Whether every operand after the bias is a one-element f32 constant: all a quantised conv's epilogue may read
 * (the kernels apply it in fc_qp_finish, where nothing tells an element's position). */
static bool epilogue_reads_immediates(const FcOp *op) {
  for (int i = 3; i < op->n_operands; i++)
    if (!fc_value_scalar_f32(op->operands[i].value)) return false;
  return true;
}

bool fc_qp_applies(const FcOp *op, int chan_axis, char *why, size_t cap) {
  bool epilogue = fc_op_attr(op, FC_ATTR_EPILOGUE) != NULL;
  if (op->n_operands < 2 || (op->n_operands > 3 && !epilogue) || op->n_results != 1)
    return fail(why, cap, "operand count");
  if (epilogue && (op->kind != FC_OP_CONV || !epilogue_reads_immediates(op)))
    return fail(why, cap, "a fused epilogue that reads more than one-element constants on a quantised product");
  const FcType *x = &op->operands[0].value->type, *w = &op->operands[1].value->type, *y = &op->results[0].type;
  if (!x->quant || x->quant->axis >= 0 || x->quant->n != 1 || !fc_dtype_is_8bit(x->quant->storage))
    return fail(why, cap, "the input must be per-tensor quantised u8 or i8");
  if (!w->quant || !fc_dtype_is_8bit(w->quant->storage) || chan_axis >= w->rank)
    return fail(why, cap, "the weights must be quantised u8 or i8");
  const FcTensor *wc = fc_value_const(op->operands[1].value);
  if (!wc || !wc->data) return fail(why, cap, "the weights must be a constant with data");
  int64_t channels = w->dims[chan_axis];
  if (w->quant->axis >= 0 ? (w->quant->axis != chan_axis || w->quant->n != channels) : w->quant->n != 1)
    return fail(why, cap, "the weights must be quantised per tensor or per output channel");
  if (op->n_operands >= 3 && op->operands[2].value) {
    const FcType *b = &op->operands[2].value->type;
    const FcTensor *bc = fc_value_const(op->operands[2].value);
    if (b->quant || b->dtype != FC_DT_I32 || b->rank != 1 || b->dims[0] != channels || !bc || !bc->data)
      return fail(why, cap, "the bias must be a constant plain i32 vector of one value per output channel");
  }
  if (y->quant ? (y->quant->axis >= 0 || y->quant->n != 1 || !fc_dtype_is_8bit(y->quant->storage))
              : y->dtype != FC_DT_F32 && !(epilogue && fc_dtype_is_8bit(y->dtype)))
    return fail(why, cap, "the result must be per-tensor quantised u8 or i8, or f32");
  return true;
}

FcStatus fc_qp_init(FcKernel *k, int chan_axis, int64_t K, int64_t channels, FcQuantProduct *q) {
  const FcOp *op = k->op;
  const FcQuant *xq = op->operands[0].value->type.quant, *wq = op->operands[1].value->type.quant;
  const FcQuant *yq = op->results[0].type.quant;
  const FcTensor *wc = fc_value_const(op->operands[1].value);
  const FcTensor *bc = op->n_operands >= 3 && op->operands[2].value ? fc_value_const(op->operands[2].value) : NULL;
  int64_t numel;
  if (!fc_checked_mul(K, channels, &numel) || numel != wc->nbytes)
    return fc_cg_error(k, FC_ERR_INTERNAL, "weights of %lld bytes are not %lld x %lld", (long long)wc->nbytes,
                       (long long)channels, (long long)K);
  *q = (FcQuantProduct){.K = K, .channels = channels, .chan_axis = chan_axis, .w8 = true};
  q->flip = xq->storage == FC_DT_I8;
  q->zx = (int32_t)xq->zero_points[0] + (q->flip ? 128 : 0);
  q->xmax = (int32_t)xq->qmax + (q->flip ? 128 : 0);
  q->w = malloc((size_t)(numel ? numel : 1) * sizeof *q->w);
  q->corr = malloc((size_t)(channels ? channels : 1) * sizeof *q->corr);
  q->mult = malloc((size_t)(channels ? channels : 1) * sizeof *q->mult);
  q->bias = malloc((size_t)(channels ? channels : 1) * sizeof *q->bias);
  q->wabs = calloc((size_t)(channels ? channels : 1), sizeof *q->wabs);
  if (!q->w || !q->corr || !q->mult || !q->bias || !q->wabs) fc_die(__FILE__, __LINE__, "out of memory");
  const uint8_t *wb = wc->data;
  bool w_signed = wq->storage == FC_DT_I8;
  int64_t *wsum = calloc((size_t)(channels ? channels : 1), sizeof *wsum);
  if (!wsum) fc_die(__FILE__, __LINE__, "out of memory");
  for (int64_t i = 0; i < numel; i++) {
    int64_t c = chan_axis == 0 ? i / K : i % channels;
    int v = w_signed ? (int8_t)wb[i] : wb[i];
    int wv = v - (int)wq->zero_points[wq->n == 1 ? 0 : c];
    q->w[i] = (int16_t)wv;
    if (wv < -128 || wv > 127) q->w8 = false;
    wsum[c] += wv;
    q->wabs[c] += abs(wv);
  }
  const int32_t *bias = bc ? bc->data : NULL;
  q->product_in_i32 = true;
  for (int64_t c = 0; c < channels; c++) {
    /* Σ_k w' is at most 255 · K in magnitude and K is a tensor dim, so the product cannot overflow int64;
     * the i32 result wraps like the accumulator it corrects. */
    int64_t b = bias ? bias[c] : 0, corr = b - (int64_t)q->zx * wsum[c];
    q->corr[c] = (int32_t)(uint32_t)(uint64_t)corr;
    q->bias[c] = (int32_t)b;
    double sw = wq->scales[wq->n == 1 ? 0 : c], sx = xq->scales[0];
    q->mult[c] = yq ? fc_quant_multiplier(sx, sw, yq->scales[0]) : (float)(sx * sw);
    /* whether every product f32(acc) · m[c] lies inside i32's range, so fc_qp_finish_packed's packs alone
     * saturate it at qmax: |acc| <= 255 · Σ|w'| + |b - zx·Σw'| (or + |b|, for kernels that subtract zx
     * themselves) where that stays below 2^31, else |acc| <= 2^31 (it wraps in i32); the factor covers
     * the f32 roundings of acc and of the product */
    double bound = fmin(255.0 * (double)q->wabs[c] + fmax(fabs((double)corr), fabs((double)b)), 2147483648.0);
    if (!(bound * fabs((double)q->mult[c]) * 1.001 < 2147483000.0)) q->product_in_i32 = false;
  }
  free(wsum);
  q->mult_finite = true;
  for (int64_t c = 0; c < channels; c++) q->mult_finite &= isfinite(q->mult[c]) != 0;
  if (yq) {
    q->out = yq->storage;
    q->zy = (int32_t)yq->zero_points[0];
    q->lo = (int32_t)(yq->qmin - q->zy);
    q->hi = (int32_t)(yq->qmax - q->zy);
  } else {
    q->out = op->results[0].type.dtype; /* f32, or an epilogue's `to` */
  }
  if (fc_op_attr(op, FC_ATTR_EPILOGUE)) return fc_cg_epilogue_init_dequantised(k, &q->ep);
  return FC_OK;
}

void fc_qp_free(FcQuantProduct *q) {
  free(q->w);
  free(q->corr);
  free(q->mult);
  free(q->bias);
  free(q->wabs);
  q->bias = NULL;
  q->wabs = NULL;
  q->w = NULL;
  q->corr = NULL;
  q->mult = NULL;
}

LLVMValueRef fc_qp_packed_weights(FcKernel *k, FcQuantProduct *q, void *pk, int64_t bytes, int64_t head,
                                  const char *name) {
  int64_t at = (bytes + 3) / 4 * 4;
  uint8_t *grown = realloc(pk, (size_t)(at + 4));
  if (!grown) fc_die(__FILE__, __LINE__, "out of memory");
  memset(grown + bytes, 0, (size_t)(at + 4 - bytes));
  grown[at] = (uint8_t)(q->zx & 0xff);
  q->zx_base =
      fc_kernel_substitute_operand(k, 1, fc_cg_packed_weights_bytes(k, grown, (size_t)(at + 4), (size_t)head, name));
  q->zx_at = at;
  free(grown);
  return q->zx_base;
}

LLVMValueRef fc_qp_zx_byte(FcKernel *k, const FcQuantProduct *q, bool storage) {
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef v = LLVMConstInt(i8, (unsigned long long)(q->zx & 0xff), 0);
  if (q->zx_base) {
    LLVMValueRef off = fc_cg_const_i64(k, q->zx_at);
    v = LLVMBuildLoad2(k->b, i8, LLVMBuildGEP2(k->b, i8, q->zx_base, &off, 1, ""), "zx");
  }
  return storage && q->flip ? LLVMBuildXor(k->b, v, LLVMConstInt(i8, 0x80, 0), "") : v;
}

bool fc_qp_pairs_exact(const FcQuantProduct *q) {
  if (!q->w8) return false;
  int64_t ks = q->chan_axis == 0 ? 1 : q->channels, cs = q->chan_axis == 0 ? q->K : 1;
  for (int64_t c = 0; c < q->channels; c++)
    for (int64_t kk = 0; kk + 1 < q->K; kk += 2) {
      int w1 = q->w[kk * ks + c * cs], w2 = q->w[(kk + 1) * ks + c * cs];
      /* Opposite signs stay within xmax · 128 <= 32640; equal signs reach xmax · (|w1| + |w2|). */
      if ((w1 > 0) == (w2 > 0) && w1 != 0 && w2 != 0 && (int64_t)q->xmax * (abs(w1) + abs(w2)) > 32767)
        return false;
    }
  return true;
}

bool fc_qp_narrow_at_run_time(const FcQuantProduct *q) {
  return q->w8 && !q->flip && q->zx < 0x80 && !fc_qp_pairs_exact(q);
}

/* acc |= the n bytes at p (n = 16 or 32; 16 bytes fill the low half of acc's 32). */
static void or_bytes(FcKernel *k, LLVMValueRef acc, LLVMValueRef p, unsigned n) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), v32 = LLVMVectorType(i8, 32);
  LLVMValueRef v = LLVMBuildLoad2(b, LLVMVectorType(i8, n), p, "");
  LLVMSetAlignment(v, 1);
  if (n == 16) {
    LLVMValueRef m[32];
    for (unsigned i = 0; i < 32; i++) m[i] = LLVMConstInt(LLVMInt32TypeInContext(k->ctx), i, 0);
    v = LLVMBuildShuffleVector(b, v, LLVMConstNull(LLVMTypeOf(v)), LLVMConstVector(m, 32), "");
  }
  LLVMBuildStore(b, LLVMBuildOr(b, LLVMBuildLoad2(b, v32, acc, ""), v, ""), acc);
}

LLVMValueRef fc_i8_runs_below_0x80(FcKernel *k, LLVMValueRef base, LLVMValueRef rows, int64_t stride,
                                   LLVMValueRef len) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), v32 = LLVMVectorType(i8, 32);
  LLVMValueRef acc = fc_cg_entry_alloca(k, v32, "or_bytes"), acc1 = fc_cg_entry_alloca(k, i8, "or_byte");
  LLVMBuildStore(b, LLVMConstNull(v32), acc);
  LLVMBuildStore(b, LLVMConstInt(i8, 0, 0), acc1);
  FcLoop lr, lj;
  LLVMValueRef r = fc_cg_loop_begin(k, &lr, fc_cg_const_i64(k, 0), rows, 1, "or_run");
  LLVMValueRef at = fc_cg_imulc(k, r, stride), run = LLVMBuildGEP2(b, i8, base, &at, 1, "");
  /* whole vectors, then one ending at the run's end (over bytes already OR-ed: harmless) */
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, fc_cg_const_i64(k, 0), fc_cg_isub(k, len, fc_cg_const_i64(k, 31)), 32, "or_vec");
  or_bytes(k, acc, LLVMBuildGEP2(b, i8, run, &j, 1, ""), 32);
  fc_cg_loop_end(k, &lj);
  LLVMValueRef tail[2] = {fc_cg_isub(k, len, fc_cg_const_i64(k, 32)), fc_cg_isub(k, len, fc_cg_const_i64(k, 16))};
  LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntSGE, len, fc_cg_const_i64(k, 32), ""));
  or_bytes(k, acc, LLVMBuildGEP2(b, i8, run, &tail[0], 1, ""), 32);
  fc_cg_if_end(k, cont);
  /* runs of 16 to 31 bytes: two 16-byte halves that overlap; shorter ones byte by byte */
  cont = fc_cg_if_begin(k, LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSGE, len, fc_cg_const_i64(k, 16), ""),
                                        LLVMBuildICmp(b, LLVMIntSLT, len, fc_cg_const_i64(k, 32), ""), ""));
  or_bytes(k, acc, run, 16);
  or_bytes(k, acc, LLVMBuildGEP2(b, i8, run, &tail[1], 1, ""), 16);
  fc_cg_if_end(k, cont);
  LLVMValueRef short_end = fc_cg_select(k, LLVMBuildICmp(b, LLVMIntSLT, len, fc_cg_const_i64(k, 16), ""), len,
                                        fc_cg_const_i64(k, 0));
  j = fc_cg_loop_begin(k, &lj, fc_cg_const_i64(k, 0), short_end, 1, "or_byte");
  LLVMValueRef v = LLVMBuildLoad2(b, i8, LLVMBuildGEP2(b, i8, run, &j, 1, ""), "");
  LLVMBuildStore(b, LLVMBuildOr(b, LLVMBuildLoad2(b, i8, acc1, ""), v, ""), acc1);
  fc_cg_loop_end(k, &lj);
  fc_cg_loop_end(k, &lr);
  LLVMValueRef all = fc_cg_intrinsic(k, "llvm.vector.reduce.or", v32, (LLVMValueRef[]){LLVMBuildLoad2(b, v32, acc, "")}, 1);
  all = LLVMBuildOr(b, all, LLVMBuildLoad2(b, i8, acc1, ""), "");
  return LLVMBuildICmp(b, LLVMIntULT, all, LLVMConstInt(i8, 0x80, 0), "narrow");
}

/* f32 v rounded to nearest even as i32 (type ty, v's shape) by llvm.lrint: one vcvtps2dq on x86 in the default
 * rounding mode, which the runtime never changes. */
static LLVMValueRef round_to_i32(FcKernel *k, LLVMValueRef v, LLVMTypeRef ty) {
  unsigned id = LLVMLookupIntrinsicID("llvm.lrint", 10);
  FC_ASSERT(id != 0);
  LLVMTypeRef over[2] = {ty, LLVMTypeOf(v)};
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(k->mod, id, over, 2);
  return LLVMBuildCall2(k->b, LLVMIntrinsicGetType(k->ctx, id, over, 2), fn, &v, 1, "");
}

LLVMValueRef fc_qp_finish(FcKernel *k, const FcQuantProduct *q, LLVMValueRef acc, LLVMValueRef corr,
                          LLVMValueRef mult) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef ty = LLVMTypeOf(acc);
  bool vec = LLVMGetTypeKind(ty) == LLVMVectorTypeKind;
  unsigned n = vec ? LLVMGetVectorSize(ty) : 1;
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef fty = vec ? LLVMVectorType(f32, n) : f32;
  LLVMValueRef v = LLVMBuildFMul(b, LLVMBuildSIToFP(b, LLVMBuildAdd(b, acc, corr, ""), fty, ""), mult, "");
  if (q->ep) { /* the epilogue reads no operand (fc_qp_applies), so any position stands for the element's */
    LLVMValueRef zero = fc_cg_const_i64(k, 0);
    v = fc_cg_epilogue_value(k, q->ep, v, zero, zero);
    return fc_cg_convert(k, v, FC_DT_F32, q->out);
  }
  if (q->out == FC_DT_F32) return v;
  /* Clamped first, then rounded to nearest even by llvm.lrint (one vcvtps2dq on x86 in the default
   * rounding mode, which the runtime never changes): the bounds are integers, so rne(clamp(v)) is
   * clamp(rne(v)), and the clamp keeps the conversion in range. */
  LLVMValueRef lo[2] = {v, fc_cg_splat_const(fty, LLVMConstReal(f32, q->lo))};
  v = fc_cg_intrinsic(k, "llvm.maxnum", fty, lo, 2);
  LLVMValueRef hi[2] = {v, fc_cg_splat_const(fty, LLVMConstReal(f32, q->hi))};
  v = fc_cg_intrinsic(k, "llvm.minnum", fty, hi, 2);
  LLVMValueRef iv = round_to_i32(k, v, ty);
  iv = LLVMBuildAdd(b, iv, fc_cg_splat_const(ty, LLVMConstInt(i32, (unsigned long long)(int64_t)q->zy, 1)), "");
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  return LLVMBuildTrunc(b, iv, vec ? LLVMVectorType(i8, n) : i8, "");
}

LLVMValueRef fc_qp_packs_in_order(FcKernel *k, LLVMValueRef bytes, int g, int w) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx);
  /* 128-bit lane l of the packed bytes holds dword l of each of its g vectors (dword: 4 results) */
  int parts = w / 4, words = g * parts, idx[64];
  for (int d = 0; d < words; d++) idx[d] = 4 * (d % parts) + d / parts;
  LLVMValueRef dw = LLVMBuildBitCast(k->b, bytes, LLVMVectorType(i32, (unsigned)w), "");
  LLVMValueRef y = fc_cg_shuffle(k, dw, NULL, idx, words);
  return LLVMBuildBitCast(k->b, y, LLVMVectorType(LLVMInt8TypeInContext(k->ctx), (unsigned)(g * w)), "");
}

/* Why the packs give fc_qp_finish's bytes exactly: at most hi after the min, the rounded value plus zy is at
 * most qmax and passes the packs unchanged; at least lo it is exact too. Where every product is known to lie
 * inside i32 (product_in_i32) the f32 min is left out: a rounded value above hi saturates to the type's
 * largest value in the packs, and a byte min brings it to a smaller qmax (a folded ReLU6's, say). Below lo, vcvtps2dq's value (or its
 * 0x80000000 for a product beyond i32) stays below qmin through the saturating packs (i16, then the 8-bit
 * type), so the byte max with qmin (where qmin is above the type's least value) gives what clamping first
 * gave. The max with lo in f32 was also what turned a NaN into lo; a finite multiplier never makes a NaN
 * from an i32 (an infinite product is clamped by the min, or packs to qmin). */
LLVMValueRef fc_qp_finish_packed(FcKernel *k, const FcQuantProduct *q, const LLVMValueRef *acc, int n,
                                 const LLVMValueRef *corr, const LLVMValueRef *mult) {
  LLVMTypeRef ty = LLVMTypeOf(acc[0]);
  int w = LLVMGetTypeKind(ty) == LLVMVectorTypeKind ? (int)LLVMGetVectorSize(ty) : 1;
  int g = n % 4 == 0 ? 4 : 2; /* vectors packed together */
  bool shape = n >= 2 && n <= 16 && n % 2 == 0 && ((n / g) & (n / g - 1)) == 0;
  /* not with an epilogue: measured 5-9% slower on EfficientNet-B0 with AVX-512 (4 vectors' SiLU at once),
   * within 1% with AVX2 */
  if (q->out == FC_DT_F32 || q->ep || !q->mult_finite || !shape || w != fc_target_i8_pack_lanes(k->target))
    return NULL;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i16 = LLVMInt16TypeInContext(k->ctx);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx);
  LLVMTypeRef vf = LLVMVectorType(f32, (unsigned)w), vw = LLVMVectorType(i16, 2 * (unsigned)w);
  LLVMTypeRef vb = LLVMVectorType(i8, 4 * (unsigned)w);
  bool u8 = q->out == FC_DT_U8, wide = w == 16;
  const char *pack_w = wide ? "llvm.x86.avx512.packssdw.512" : "llvm.x86.avx2.packssdw";
  const char *pack_b = u8 ? (wide ? "llvm.x86.avx512.packuswb.512" : "llvm.x86.avx2.packuswb")
                          : (wide ? "llvm.x86.avx512.packsswb.512" : "llvm.x86.avx2.packsswb");
  LLVMValueRef hi = fc_cg_splat_const(vf, LLVMConstReal(f32, q->hi));
  int32_t qmin = q->lo + q->zy, qmax = q->hi + q->zy;
  LLVMValueRef groups[8];
  for (int s = 0; s < n / g; s++) {
    LLVMValueRef r[4];
    for (int v = 0; v < g; v++) {
      int i = s * g + v;
      LLVMValueRef a = LLVMBuildAdd(b, acc[i], corr[i], "");
      LLVMValueRef f = LLVMBuildFMul(b, LLVMBuildSIToFP(b, a, vf, ""), mult[i], "");
      LLVMValueRef mn[2] = {f, hi};
      if (!q->product_in_i32) f = fc_cg_intrinsic(k, "llvm.minnum", vf, mn, 2);
      r[v] = round_to_i32(k, f, ty);
    }
    /* i16 words of vectors 2j, 2j + 1 plus zy; 2 vectors pack their words with themselves */
    LLVMValueRef h[2];
    for (int j = 0; j < g / 2; j++) {
      LLVMValueRef args[2] = {r[2 * j], r[2 * j + 1]};
      h[j] = fc_cg_intrinsic(k, pack_w, NULL, args, 2);
      if (q->zy) {
        LLVMValueRef za[2] = {h[j], fc_cg_splat_const(vw, LLVMConstInt(i16, (unsigned long long)(int64_t)q->zy, 1))};
        h[j] = fc_cg_intrinsic(k, "llvm.sadd.sat", vw, za, 2);
      }
    }
    if (g == 2) h[1] = h[0];
    LLVMValueRef y = fc_cg_intrinsic(k, pack_b, NULL, h, 2);
    if (qmin > (u8 ? 0 : -128)) {
      LLVMValueRef mx[2] = {y, fc_cg_splat_const(vb, LLVMConstInt(i8, (unsigned long long)(int64_t)qmin, 1))};
      y = fc_cg_intrinsic(k, u8 ? "llvm.umax" : "llvm.smax", vb, mx, 2);
    }
    if (q->product_in_i32 && qmax < (u8 ? 255 : 127)) {
      LLVMValueRef mn[2] = {y, fc_cg_splat_const(vb, LLVMConstInt(i8, (unsigned long long)(int64_t)qmax, 1))};
      y = fc_cg_intrinsic(k, u8 ? "llvm.umin" : "llvm.smin", vb, mn, 2);
    }
    groups[s] = fc_qp_packs_in_order(k, y, g, w);
  }
  return fc_cg_concat(k, groups, n / g);
}

/* Rows of fewer than 4 vectors are packed 4 vectors at a time across rows (nv = 2: rows i and i + 1), so the
 * saturating packs take their full width and one vpermd orders 4 vectors instead of 2 (rows of 16 pixels, as
 * the stems' tiles of 2 vectors on AVX2 are: 4 shuffles per 32 results where row by row took 8); each row is
 * then the matching half of the packed vector, a register half that the store takes as it is. */
static bool finish_rows_together(FcKernel *k, const FcQuantProduct *q, const LLVMValueRef *acc, int mr, int nv,
                                 const LLVMValueRef *corr, const LLVMValueRef *mult, LLVMValueRef *out) {
  int rows = nv == 1 || nv == 2 ? 4 / nv : 0;
  if (!rows || mr % rows) return false;
  LLVMValueRef packed[16] = {0};
  for (int i = 0; i < mr; i += rows)
    if (!(packed[i / rows] = fc_qp_finish_packed(k, q, acc + i * nv, 4, corr + i * nv, mult + i * nv))) return false;
  unsigned row_bytes = LLVMGetVectorSize(LLVMTypeOf(packed[0])) / (unsigned)rows;
  int idx[64];
  for (int i = 0; i < mr; i++) {
    for (unsigned e = 0; e < row_bytes; e++) idx[e] = (int)((unsigned)(i % rows) * row_bytes + e);
    out[i] = fc_cg_shuffle(k, packed[i / rows], LLVMGetUndef(LLVMTypeOf(packed[0])), idx, (int)row_bytes);
  }
  return true;
}

int fc_qp_finish_tile(FcKernel *k, const FcQuantProduct *q, const LLVMValueRef *acc, int mr, int nv,
                      const LLVMValueRef *corr, const LLVMValueRef *mult, LLVMValueRef *out) {
  if (mr <= 16 && finish_rows_together(k, q, acc, mr, nv, corr, mult, out)) return 1;
  int per_row = nv;
  for (int i = 0; i < mr; i++) {
    LLVMValueRef row = fc_qp_finish_packed(k, q, acc + i * nv, nv, corr + i * nv, mult + i * nv);
    per_row = row ? 1 : nv;
    if (row) out[i] = row;
    for (int v = 0, j = i * nv; v < nv && !row; v++, j++) out[j] = fc_qp_finish(k, q, acc[j], corr[j], mult[j]);
  }
  return per_row;
}

/* A full tile stored transposed: output row col0 + c gets the tile's column c (mr elements, adjacent there).
 * Per vector of columns the mr vectors are concatenated (a tree of shuffles, padded to a power of two),
 * reordered column-major by one shuffle, and each column's mr elements stored as one small vector. */
static void store_columns(FcKernel *k, LLVMTypeRef et, const LLVMValueRef *out, int mr, int nv, int w, LLVMValueRef base,
                          LLVMValueRef row0, int64_t row_stride, LLVMValueRef col0) {
  LLVMBuilderRef b = k->b;
  int n2 = 1, idx[256];
  while (n2 < mr) n2 *= 2;
  FC_ASSERT(n2 * w <= 256);
  for (int v = 0; v < nv; v++) {
    LLVMValueRef part[16];
    for (int i = 0; i < n2; i++) part[i] = i < mr ? out[i * nv + v] : LLVMGetUndef(LLVMTypeOf(out[0]));
    for (int len = w; len < n2 * w; len *= 2) { /* pairs of len-element parts into 2·len */
      for (int e = 0; e < 2 * len; e++) idx[e] = e;
      for (int i = 0; 2 * i * len < n2 * w; i++)
        part[i] = fc_cg_shuffle(k, part[2 * i], part[2 * i + 1], idx, 2 * len);
    }
    /* part[0][i·w + j] = row i, column j  ->  column-major [j·mr + i] */
    for (int j = 0; j < w; j++)
      for (int i = 0; i < mr; i++) idx[j * mr + i] = i * w + j;
    LLVMValueRef tr = fc_cg_shuffle(k, part[0], LLVMGetUndef(LLVMTypeOf(part[0])), idx, w * mr);
    for (int j = 0; j < w; j++) {
      for (int i = 0; i < mr; i++) idx[i] = j * mr + i;
      LLVMValueRef px = mr == 1 ? LLVMBuildExtractElement(b, tr, fc_cg_const_i64(k, j), "")
                                : fc_cg_shuffle(k, tr, LLVMGetUndef(LLVMTypeOf(tr)), idx, mr);
      LLVMValueRef col = fc_cg_iadd(k, col0, fc_cg_const_i64(k, (int64_t)v * w + j));
      LLVMValueRef at = fc_cg_iadd(k, base, fc_cg_iadd(k, fc_cg_imulc(k, col, row_stride), row0));
      LLVMValueRef st = LLVMBuildStore(b, px, LLVMBuildGEP2(b, et, k->out[0], &at, 1, ""));
      LLVMSetAlignment(st, 1);
    }
  }
}

/* fc_qp_store_tile and its transposed form: `stride` is the output's row stride, or (transposed) the stride
 * of its rows that the tile's columns are. */
static void store_tile(FcKernel *k, LLVMTypeRef et, const LLVMValueRef *out, int mr, int nv, int w, LLVMValueRef edge,
                       LLVMValueRef base, LLVMValueRef row0, LLVMValueRef rows, int64_t row_stride, LLVMValueRef col0,
                       LLVMValueRef cols, bool transposed, FcCgEpilogue *e) {
  LLVMBuilderRef b = k->b;
  int64_t nr = (int64_t)nv * w;
  LLVMValueRef full = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, rows, fc_cg_const_i64(k, mr), ""),
                                   LLVMBuildICmp(b, LLVMIntEQ, cols, fc_cg_const_i64(k, nr), ""), "");
  LLVMBasicBlockRef edge_bb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "qedge");
  LLVMBasicBlockRef full_bb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "qfull");
  LLVMBasicBlockRef done_bb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "qdone");
  LLVMBuildCondBr(b, full, full_bb, edge_bb);
  LLVMPositionBuilderAtEnd(b, full_bb);
  if (transposed) store_columns(k, et, out, mr, nv, w, base, row0, row_stride, col0);
  for (int i = 0; i < mr && !transposed; i++)
    for (int v = 0; v < nv; v++) {
      LLVMValueRef row = fc_cg_iadd(k, row0, fc_cg_const_i64(k, i));
      LLVMValueRef col = fc_cg_iadd(k, col0, fc_cg_const_i64(k, (int64_t)v * w));
      LLVMValueRef at = fc_cg_iadd(k, base, fc_cg_iadd(k, fc_cg_imulc(k, row, row_stride), col));
      LLVMValueRef val = e ? fc_cg_epilogue_value(k, e, out[i * nv + v], row, col) : out[i * nv + v];
      LLVMValueRef s = LLVMBuildStore(b, val, LLVMBuildGEP2(b, et, k->out[0], &at, 1, ""));
      LLVMSetAlignment(s, 1);
    }
  LLVMBuildBr(b, done_bb);
  LLVMPositionBuilderAtEnd(b, edge_bb);
  for (int i = 0; i < mr * nv; i++) {
    LLVMValueRef s = LLVMBuildStore(b, out[i], fc_cg_tile_at(k, et, edge, fc_cg_const_i64(k, (int64_t)i * w)));
    LLVMSetAlignment(s, 1);
  }
  FcLoop li, lj;
  LLVMValueRef i = fc_cg_loop_begin(k, &li, fc_cg_const_i64(k, 0), rows, 1, "er");
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, fc_cg_const_i64(k, 0), cols, 1, "ec");
  LLVMValueRef v = LLVMBuildLoad2(b, et, fc_cg_tile_at(k, et, edge, fc_cg_iadd(k, fc_cg_imulc(k, i, nr), j)), "");
  LLVMValueRef r = fc_cg_iadd(k, row0, i), c = fc_cg_iadd(k, col0, j);
  if (e) v = fc_cg_epilogue_value(k, e, v, r, c);
  LLVMValueRef at = fc_cg_iadd(k, base, transposed ? fc_cg_iadd(k, fc_cg_imulc(k, c, row_stride), r)
                                                   : fc_cg_iadd(k, fc_cg_imulc(k, r, row_stride), c));
  LLVMBuildStore(b, v, LLVMBuildGEP2(b, et, k->out[0], &at, 1, ""));
  fc_cg_loop_end(k, &lj);
  fc_cg_loop_end(k, &li);
  LLVMBuildBr(b, done_bb);
  LLVMPositionBuilderAtEnd(b, done_bb);
}
void fc_qp_store_tile(FcKernel *k, LLVMTypeRef et, const LLVMValueRef *out, int mr, int nv, int w, LLVMValueRef edge,
                      LLVMValueRef base, LLVMValueRef row0, LLVMValueRef rows, int64_t row_stride, LLVMValueRef col0,
                      LLVMValueRef cols) {
  store_tile(k, et, out, mr, nv, w, edge, base, row0, rows, row_stride, col0, cols, false, NULL);
}

void fc_qp_store_tile_epilogue(FcKernel *k, FcCgEpilogue *e, const LLVMValueRef *out, int mr, int nv, int w,
                               LLVMValueRef edge, LLVMValueRef row0, LLVMValueRef rows, int64_t row_stride,
                               LLVMValueRef col0, LLVMValueRef cols) {
  store_tile(k, LLVMFloatTypeInContext(k->ctx), out, mr, nv, w, edge, fc_cg_const_i64(k, 0), row0, rows, row_stride,
             col0, cols, false, e);
}

void fc_qp_store_tile_transposed(FcKernel *k, LLVMTypeRef et, const LLVMValueRef *out, int mr, int nv, int w,
                                 LLVMValueRef edge, LLVMValueRef base, LLVMValueRef row0, LLVMValueRef rows,
                                 int64_t col_stride, LLVMValueRef col0, LLVMValueRef cols) {
  store_tile(k, et, out, mr, nv, w, edge, base, row0, rows, col_stride, col0, cols, true, NULL);
}
