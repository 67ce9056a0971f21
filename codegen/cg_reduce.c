/* cg_reduce.c — what the CPU reductions (kernel_reduce.c) and the GPU ones (gpu_kernel_reduce.c) share: how a
 * reduce_* op's input dims group into runs of kept and reduced dims, the accumulators' identities and steps,
 * and the load and store that turn elements into accumulator values and back (the integer mean in 64 bits,
 * divided truncating; a float mean of nothing NaN; a quantised mean finished as fc_quant_mean in double). Both
 * kernels then only differ in who walks which run.
 */
#include <math.h>

#include "codegen.h"

FcStatus fc_cg_reduce_plan(FcKernel *k, FcReducePlan *r) {
  FcOp *op = k->op;
  FcArena *arena = &op->graph->module->arena;
  const FcType *t = &op->operands[0].value->type;
  *r = (FcReducePlan){.dt = t->dtype, .cls = fc_dtype_class(t->dtype)};
  switch (op->kind) {
  case FC_OP_REDUCE_SUM: r->kind = FC_ACC_SUM; break;
  case FC_OP_REDUCE_MEAN: r->kind = FC_ACC_SUM; r->mean = true; break;
  case FC_OP_REDUCE_PROD: r->kind = FC_ACC_PROD; break;
  case FC_OP_REDUCE_MAX: r->kind = FC_ACC_MAX; break;
  case FC_OP_REDUCE_MIN: r->kind = FC_ACC_MIN; break;
  default: return fc_cg_error(k, FC_ERR_INTERNAL, "not a reduce_* op");
  }
  if (r->cls == FC_DTC_BOOL) r->cls = FC_DTC_UINT; /* max/min of i1: or/and */
  if (r->mean && op->results[0].type.quant) r->xq = t->quant, r->yq = op->results[0].type.quant;
  r->at = r->mean && r->cls != FC_DTC_FLOAT ? LLVMInt64TypeInContext(k->ctx) : fc_cg_compute_type(k, r->dt);
  FC_ASSERT(fc_type_numel(&op->results[0].type, &r->n_out));
  /* Groups: merged runs of kept or reduced dims (size-1 dims dropped), with their strides. */
  const int64_t *axes;
  int n_axes = fc_op_attr_ints(op, FC_ATTR_AXES, &axes);
  int rank = t->rank, ng = 0;
  r->gd = FC_NEW_ARRAY(arena, int64_t, (size_t)rank + 1);
  r->gs = FC_NEW_ARRAY(arena, int64_t, (size_t)rank + 1);
  r->gr = FC_NEW_ARRAY(arena, bool, (size_t)rank + 1);
  for (int a = 0, ai = 0; a < rank; a++) {
    bool red = ai < n_axes && axes[ai] == a;
    if (red) ai++;
    if (t->dims[a] == 1) continue;
    if (ng > 0 && r->gr[ng - 1] == red) {
      r->gd[ng - 1] *= t->dims[a];
    } else {
      r->gd[ng] = t->dims[a];
      r->gr[ng++] = red;
    }
  }
  if (ng == 0) { /* one element */
    r->gd[0] = 1;
    r->gr[ng++] = true;
  }
  for (int g = ng - 1; g >= 0; g--) r->gs[g] = g == ng - 1 ? 1 : r->gs[g + 1] * r->gd[g + 1];
  r->kept = FC_NEW_ARRAY(arena, int, (size_t)ng);
  r->red = FC_NEW_ARRAY(arena, int, (size_t)ng);
  for (int g = 0; g < ng; g++) {
    if (r->gr[g]) r->red[r->nr++] = g;
    else r->kept[r->nk++] = g;
  }
  r->ng = ng;
  r->count = 1;
  for (int i = 0; i < r->nr; i++) r->count *= r->gd[r->red[i]];
  return FC_OK;
}

LLVMValueRef fc_cg_reduce_offset(FcKernel *k, const FcReducePlan *r, LLVMValueRef off, LLVMValueRef flat,
                                 const int *g, int n) {
  LLVMBuilderRef B = k->b;
  for (int i = n - 1; i >= 0; i--) {
    LLVMValueRef idx = flat;
    if (i > 0) {
      idx = LLVMBuildURem(B, flat, fc_cg_const_i64(k, r->gd[g[i]]), "");
      flat = LLVMBuildUDiv(B, flat, fc_cg_const_i64(k, r->gd[g[i]]), "");
    }
    off = fc_cg_iadd(k, off, fc_cg_imulc(k, idx, r->gs[g[i]]));
  }
  return off;
}

LLVMValueRef fc_cg_acc_init(FcAccKind kind, FcDtypeClass cls, LLVMTypeRef t) {
  if (cls == FC_DTC_FLOAT) {
    double v = kind == FC_ACC_SUM ? 0.0 : kind == FC_ACC_PROD ? 1.0 : kind == FC_ACC_MAX ? -INFINITY : INFINITY;
    return LLVMConstReal(t, v);
  }
  unsigned w = LLVMGetIntTypeWidth(t);
  switch (kind) {
  case FC_ACC_SUM: return LLVMConstInt(t, 0, 0);
  case FC_ACC_PROD: return LLVMConstInt(t, 1, 0);
  case FC_ACC_MAX: return cls == FC_DTC_SINT ? LLVMConstInt(t, 1ull << (w - 1), 0) : LLVMConstInt(t, 0, 0);
  case FC_ACC_MIN: return cls == FC_DTC_SINT ? LLVMConstInt(t, (1ull << (w - 1)) - 1, 0) : LLVMConstAllOnes(t);
  }
  FC_UNREACHABLE();
}

static LLVMValueRef intrinsic2(FcKernel *k, const char *name, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef args[2] = {a, b};
  return fc_cg_intrinsic(k, name, LLVMTypeOf(a), args, 2);
}

LLVMValueRef fc_cg_acc_step(FcKernel *k, FcAccKind kind, FcDtypeClass cls, LLVMValueRef acc, LLVMValueRef v,
                            bool reassociate) {
  LLVMBuilderRef B = k->b;
  bool s = cls == FC_DTC_SINT;
  if (cls == FC_DTC_FLOAT) {
    LLVMValueRef x = NULL;
    switch (kind) {
    case FC_ACC_SUM: x = LLVMBuildFAdd(B, acc, v, ""); break;
    case FC_ACC_PROD: x = LLVMBuildFMul(B, acc, v, ""); break;
    case FC_ACC_MAX: return intrinsic2(k, "llvm.maximum", acc, v);
    case FC_ACC_MIN: return intrinsic2(k, "llvm.minimum", acc, v);
    }
    if (reassociate) LLVMSetFastMathFlags(x, LLVMFastMathAllowReassoc);
    return x;
  }
  switch (kind) {
  case FC_ACC_SUM: return LLVMBuildAdd(B, acc, v, "");
  case FC_ACC_PROD: return LLVMBuildMul(B, acc, v, "");
  case FC_ACC_MAX: return intrinsic2(k, s ? "llvm.smax" : "llvm.umax", acc, v);
  case FC_ACC_MIN: return intrinsic2(k, s ? "llvm.smin" : "llvm.umin", acc, v);
  }
  FC_UNREACHABLE();
}

LLVMValueRef fc_cg_reduce_load(FcKernel *k, const FcReducePlan *r, LLVMValueRef idx) {
  LLVMValueRef v = fc_cg_load(k, r->dt, k->in[0], idx);
  if (r->mean && r->cls != FC_DTC_FLOAT) v = fc_cg_convert(k, v, r->dt, r->cls == FC_DTC_SINT ? FC_DT_I64 : FC_DT_U64);
  return v;
}

/* fc_quant_mean's operations, in its order, on the i64 sum of the storage integers: the integer result (i64). */
static LLVMValueRef quant_mean(FcKernel *k, const FcReducePlan *r, LLVMValueRef sum) {
  LLVMBuilderRef B = k->b;
  LLVMTypeRef f64 = LLVMDoubleTypeInContext(k->ctx);
  uint64_t zsum = (uint64_t)r->count * (uint64_t)r->xq->zero_points[0];
  LLVMValueRef v = LLVMBuildSub(B, sum, LLVMConstInt(r->at, zsum, 0), "");
  v = LLVMBuildFDiv(B, LLVMBuildSIToFP(B, v, f64, ""), LLVMConstReal(f64, (double)r->count), "");
  v = LLVMBuildFMul(B, v, LLVMConstReal(f64, r->xq->scales[0] / r->yq->scales[0]), "");
  LLVMValueRef args[2] = {v, NULL};
  v = fc_cg_intrinsic(k, "llvm.roundeven", f64, args, 1);
  v = LLVMBuildFAdd(B, v, LLVMConstReal(f64, (double)r->yq->zero_points[0]), "");
  args[0] = v, args[1] = LLVMConstReal(f64, (double)r->yq->qmin);
  v = fc_cg_intrinsic(k, "llvm.maxnum", f64, args, 2);
  args[0] = v, args[1] = LLVMConstReal(f64, (double)r->yq->qmax);
  v = fc_cg_intrinsic(k, "llvm.minnum", f64, args, 2);
  return LLVMBuildFPToSI(B, v, r->at, "");
}

void fc_cg_reduce_store(FcKernel *k, const FcReducePlan *r, LLVMValueRef idx, LLVMValueRef acc) {
  LLVMBuilderRef B = k->b;
  if (r->yq) {
    FcDtype out = k->op->results[0].type.dtype;
    fc_cg_store(k, out, k->out[0], idx, fc_cg_convert(k, quant_mean(k, r, acc), FC_DT_I64, out));
    return;
  }
  if (r->mean) {
    if (r->cls == FC_DTC_FLOAT) {
      acc = LLVMBuildFDiv(B, acc, LLVMConstReal(r->at, (double)r->count), "");
    } else {
      /* truncating, as the evaluator; the mean of nothing is defined as 0 */
      LLVMValueRef n = LLVMConstInt(r->at, (unsigned long long)(r->count > 0 ? r->count : 1), 0);
      acc = r->count == 0 ? LLVMConstInt(r->at, 0, 0)
                          : r->cls == FC_DTC_SINT ? LLVMBuildSDiv(B, acc, n, "") : LLVMBuildUDiv(B, acc, n, "");
      acc = fc_cg_convert(k, acc, r->cls == FC_DTC_SINT ? FC_DT_I64 : FC_DT_U64, r->dt);
    }
  }
  fc_cg_store(k, r->dt, k->out[0], idx, acc);
}
