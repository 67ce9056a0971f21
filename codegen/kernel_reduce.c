/* kernel_reduce.c — kernels that combine elements along axes: reduce_{sum,mean,max,min,prod},
 * argmax/argmin, softmax/log_softmax, layer_norm, cumsum and topk.
 *
 * Reductions first merge neighbouring input dims of the same kind (kept or reduced), which leaves
 * alternating groups such as [K0, R0, K1, R1]. When the innermost group is reduced, each output element
 * is one outer iteration whose innermost loop walks a contiguous run: a vectorisable reduction (float
 * sums and products carry `reassoc`, max/min use llvm.maximum/minimum, which propagate NaN and order -0
 * below +0 as the evaluator does; long f32 runs of max/min take kernel_reduce_minmax.c's cheaper loop, with
 * the same results). When the innermost group is kept, a block of up to RD_BLOCK neighbouring outputs
 * shares each reduced step: they accumulate in a stack array, and the inner loop over the block is
 * unit-stride. Floats accumulate in their compute type (f16/bf16 in f32); integers wrap in their own
 * type, except the mean, which sums in 64 bits as the evaluator does before dividing. Empty reductions
 * give the identity (a float mean of nothing is NaN; an integer one is defined as 0).
 *
 * The single-axis ops view the input as [outer, n, inner] and use the same blocking: one outer iteration
 * is one (outer row, block of inner columns), and each pass over the axis updates per-column state in
 * stack arrays with an inner loop over the block, so it vectorises when inner > 1 and is a plain loop
 * over the axis (a vectorisable reduction for max and sum) when inner == 1. Softmax makes three passes
 * (max, sum of exp(x - max), write) and reuses the stored exponentials when the result dtype keeps them
 * exactly (f32, f64). layer_norm computes mean, then the variance of the deviations (two passes, no
 * cancellation), then writes with scale/bias broadcast over the normalised dims. topk keeps, per column,
 * the indices of the best k seen so far in the index result, sorted, and inserts each new element by
 * shifting (ties keep the lower index first, NaN ranks above every number, as the evaluator orders).
 */
#include <math.h>
#include <string.h>

#include "codegen.h"
#include "fcmath.h"

enum {
  RD_BLOCK = 256,  /* per-column state arrays: elements per block */
  MINMAX_RUN = 64, /* contiguous f32 runs at least this long take kernel_reduce_minmax.c's max/min */
};

/* ---- small builders ------------------------------------------------------------------------------ */

static LLVMValueRef intrinsic(FcKernel *k, const char *name, LLVMValueRef *args, unsigned n) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  FC_ASSERT(id != 0);
  LLVMTypeRef t = LLVMTypeOf(args[0]);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(k->mod, id, &t, 1);
  return LLVMBuildCall2(k->b, LLVMIntrinsicGetType(k->ctx, id, &t, 1), fn, args, n, "");
}

static LLVMValueRef intrinsic2(FcKernel *k, const char *name, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef args[2] = {a, b};
  return intrinsic(k, name, args, 2);
}

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

/* A stack slot (or array of n) in the kernel's entry block, where SROA and the vectoriser expect it. */
static LLVMValueRef entry_alloca(FcKernel *k, LLVMTypeRef t, int64_t n, const char *name) {
  LLVMBuilderRef b = LLVMCreateBuilderInContext(k->ctx);
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(k->fn);
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first) LLVMPositionBuilderBefore(b, first);
  else LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef a = LLVMBuildAlloca(b, n > 1 ? LLVMArrayType2(t, (uint64_t)n) : t, name);
  LLVMSetAlignment(a, 64);
  LLVMDisposeBuilder(b);
  return a;
}

static LLVMValueRef slot(FcKernel *k, LLVMTypeRef t, LLVMValueRef arr, LLVMValueRef j) {
  return LLVMBuildInBoundsGEP2(k->b, t, arr, &j, 1, "");
}
static LLVMValueRef ld(FcKernel *k, LLVMTypeRef t, LLVMValueRef arr, LLVMValueRef j) {
  return LLVMBuildLoad2(k->b, t, slot(k, t, arr, j), "");
}
static void st(FcKernel *k, LLVMTypeRef t, LLVMValueRef arr, LLVMValueRef j, LLVMValueRef v) {
  LLVMBuildStore(k->b, v, slot(k, t, arr, j));
}

static LLVMValueRef mul(FcKernel *k, LLVMValueRef a, int64_t c) {
  return c == 1 ? a : LLVMBuildMul(k->b, a, c64(k, c), "");
}

static LLVMValueRef min64(FcKernel *k, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(k->b, LLVMBuildICmp(k->b, LLVMIntSLT, a, b, ""), a, b, "");
}

static LLVMValueRef reassoc(LLVMValueRef v) {
  LLVMSetFastMathFlags(v, LLVMFastMathAllowReassoc);
  return v;
}

static LLVMValueRef math1(FcKernel *k, FcMathFn fn, LLVMValueRef x) {
  return fc_math_emit(k->mod, k->b, fn, x, NULL);
}

static int64_t prod(const int64_t *d, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= d[i]; /* a verified type's element count fits int64 */
  return p;
}

FcStatus fc_kernel_reduce(FcKernel *k) {
  FcReducePlan r;
  FcStatus st0 = fc_cg_reduce_plan(k, &r);
  if (st0 != FC_OK) return st0;
  int64_t n_out = r.n_out;
  if (n_out == 0) {
    fc_kernel_set_outer(k, 0, 0);
    return FC_OK;
  }
  int ng = r.ng, nk = r.nk, nr = r.nr;
  const int64_t *gd = r.gd;
  const bool *gr = r.gr;
  const int *kept = r.kept, *red = r.red;

  LLVMBuilderRef B = k->b;
  FcLoop lo, lr, lj;
  if (gr[ng - 1]) {
    /* Innermost group reduced: one output per outer iteration, a contiguous inner reduction. */
    int64_t rin = gd[ng - 1], rout = r.count / rin;
    fc_kernel_set_outer(k, n_out, (double)r.count);
    LLVMValueRef acc = entry_alloca(k, r.at, 1, "acc");
    LLVMValueRef o = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "o");
    LLVMValueRef base = fc_cg_reduce_offset(k, &r, c64(k, 0), o, kept, nk);
    if (nr == 1 && rin >= MINMAX_RUN && r.dt == FC_DT_F32 && (r.kind == FC_ACC_MAX || r.kind == FC_ACC_MIN)) {
      fc_cg_reduce_store(k, &r, o, fc_cg_reduce_minmax_f32(k, r.kind == FC_ACC_MAX, base, rin));
      fc_cg_loop_end(k, &lo);
      return FC_OK;
    }
    LLVMBuildStore(B, fc_cg_acc_init(r.kind, r.cls, r.at), acc);
    LLVMValueRef rbase = base;
    if (nr > 1) {
      LLVMValueRef ro = fc_cg_loop_begin(k, &lr, c64(k, 0), c64(k, rout), 1, "r");
      rbase = fc_cg_reduce_offset(k, &r, base, ro, red, nr - 1);
    }
    LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(k, 0), c64(k, rin), 1, "j");
    LLVMValueRef v = fc_cg_reduce_load(k, &r, fc_cg_iadd(k, rbase, j));
    LLVMBuildStore(B, fc_cg_acc_step(k, r.kind, r.cls, LLVMBuildLoad2(B, r.at, acc, ""), v, true), acc);
    fc_cg_loop_end(k, &lj);
    if (nr > 1) fc_cg_loop_end(k, &lr);
    fc_cg_reduce_store(k, &r, o, LLVMBuildLoad2(B, r.at, acc, ""));
    fc_cg_loop_end(k, &lo);
    return FC_OK;
  }

  /* Innermost group kept: blocks of neighbouring outputs accumulate side by side. */
  int64_t kin = gd[ng - 1], bk = kin < RD_BLOCK ? kin : RD_BLOCK, nch = (kin + bk - 1) / bk;
  fc_kernel_set_outer(k, n_out / kin * nch, (double)(r.count * bk));
  LLVMValueRef acc = entry_alloca(k, r.at, bk, "acc");
  LLVMValueRef o = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "o");
  LLVMValueRef row = o, col0 = c64(k, 0), len = c64(k, bk);
  if (nch > 1) {
    row = LLVMBuildUDiv(B, o, c64(k, nch), "row");
    col0 = mul(k, LLVMBuildURem(B, o, c64(k, nch), ""), bk);
    len = min64(k, c64(k, bk), LLVMBuildSub(B, c64(k, kin), col0, ""));
  }
  LLVMValueRef base = fc_cg_iadd(k, fc_cg_reduce_offset(k, &r, c64(k, 0), row, kept, nk - 1), col0);
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(k, 0), len, 1, "j");
  st(k, r.at, acc, j, fc_cg_acc_init(r.kind, r.cls, r.at));
  fc_cg_loop_end(k, &lj);
  /* (with no reduced group left, e.g. only size-1 dims reduced, count is 1 and this copies) */
  LLVMValueRef ri = fc_cg_loop_begin(k, &lr, c64(k, 0), c64(k, r.count), 1, "r");
  LLVMValueRef rbase = fc_cg_reduce_offset(k, &r, base, ri, red, nr);
  j = fc_cg_loop_begin(k, &lj, c64(k, 0), len, 1, "j");
  LLVMValueRef v = fc_cg_reduce_load(k, &r, fc_cg_iadd(k, rbase, j));
  st(k, r.at, acc, j, fc_cg_acc_step(k, r.kind, r.cls, ld(k, r.at, acc, j), v, true));
  fc_cg_loop_end(k, &lj);
  fc_cg_loop_end(k, &lr);
  LLVMValueRef obase = fc_cg_iadd(k, mul(k, row, kin), col0);
  j = fc_cg_loop_begin(k, &lj, c64(k, 0), len, 1, "j");
  fc_cg_reduce_store(k, &r, fc_cg_iadd(k, obase, j), ld(k, r.at, acc, j));
  fc_cg_loop_end(k, &lj);
  fc_cg_loop_end(k, &lo);
  return FC_OK;
}

/* ---- [outer, n, inner] iteration shared by the single-axis ops ----------------------------------- */

typedef struct AxisIter {
  int64_t outer, n, inner, bk, nch;
  FcLoop lo;
  LLVMValueRef row, col0, len; /* outer row, first inner column of the block, columns in the block */
} AxisIter;

static void axis_split(const FcType *t, int axis, AxisIter *a) {
  a->outer = prod(t->dims, axis);
  a->n = t->dims[axis];
  a->inner = prod(t->dims + axis + 1, t->rank - axis - 1);
}

/* Declares outer × blocks iterations and opens the loop over them; false (and nothing emitted) when
 * there is nothing to do. */
static bool axis_begin(FcKernel *k, AxisIter *a, double work_per_column) {
  if (a->outer == 0 || a->inner == 0) {
    fc_kernel_set_outer(k, 0, 0);
    return false;
  }
  a->bk = a->inner < RD_BLOCK ? a->inner : RD_BLOCK;
  a->nch = (a->inner + a->bk - 1) / a->bk;
  fc_kernel_set_outer(k, a->outer * a->nch, work_per_column * (double)a->bk);
  LLVMValueRef o = fc_cg_loop_begin(k, &a->lo, k->begin, k->end, 1, "o");
  a->row = o;
  a->col0 = c64(k, 0);
  a->len = c64(k, a->bk);
  if (a->nch > 1) {
    a->row = LLVMBuildUDiv(k->b, o, c64(k, a->nch), "row");
    a->col0 = mul(k, LLVMBuildURem(k->b, o, c64(k, a->nch), ""), a->bk);
    a->len = min64(k, c64(k, a->bk), LLVMBuildSub(k->b, c64(k, a->inner), a->col0, ""));
  }
  return true;
}

static void axis_end(FcKernel *k, AxisIter *a) { fc_cg_loop_end(k, &a->lo); }

/* Element (step s along the axis, column j of the block) of a tensor viewed as [outer, n, inner]. */
static LLVMValueRef axis_at(FcKernel *k, const AxisIter *a, int64_t n, LLVMValueRef s, LLVMValueRef j) {
  LLVMValueRef i = fc_cg_iadd(k, mul(k, a->row, n * a->inner), a->col0);
  return fc_cg_iadd(k, fc_cg_iadd(k, i, mul(k, s, a->inner)), j);
}

/* The loop over the block's columns; a block of one column needs none (j is 0). */
static LLVMValueRef block_begin(FcKernel *k, const AxisIter *a, FcLoop *l) {
  if (a->bk == 1) return c64(k, 0);
  return fc_cg_loop_begin(k, l, c64(k, 0), a->len, 1, "j");
}
static void block_end(FcKernel *k, const AxisIter *a, FcLoop *l) {
  if (a->bk != 1) fc_cg_loop_end(k, l);
}

/* ---- argmax / argmin ------------------------------------------------------------------------------ */

FcStatus fc_kernel_argreduce(FcKernel *k) {
  FcOp *op = k->op;
  const FcType *t = &op->operands[0].value->type;
  FcDtype dt = t->dtype;
  FcDtypeClass cls = fc_dtype_class(dt);
  int axis = (int)fc_op_attr_int(op, FC_ATTR_AXIS, 0);
  bool last = fc_op_attr_int(op, FC_ATTR_SELECT_LAST_INDEX, 0) != 0, is_max = op->kind == FC_OP_ARGMAX;
  AxisIter a;
  axis_split(t, axis, &a);
  if (a.n == 0 && a.outer > 0 && a.inner > 0)
    return fc_error_node(k->diag, FC_ERR_INPUT, fc_op_name(op), fc_op_info(op->kind)->name,
                         "cannot reduce an empty axis");
  if (!axis_begin(k, &a, 2.0 * (double)a.n)) return FC_OK;
  LLVMBuilderRef B = k->b;
  LLVMTypeRef ct = fc_cg_compute_type(k, dt), i64 = fc_cg_i64(k);
  LLVMValueRef bv = entry_alloca(k, ct, a.bk, "best"), bi = entry_alloca(k, i64, a.bk, "besti");
  int64_t start = last ? a.n - 1 : 0;
  FcLoop lj, ls;
  LLVMValueRef j = block_begin(k, &a, &lj);
  st(k, ct, bv, j, fc_cg_load(k, dt, k->in[0], axis_at(k, &a, a.n, c64(k, start), j)));
  st(k, i64, bi, j, c64(k, start));
  block_end(k, &a, &lj);
  /* Walk away from the preferred end; only a strictly better element (or the first NaN) wins. */
  LLVMValueRef step = fc_cg_loop_begin(k, &ls, c64(k, 1), c64(k, a.n), 1, "s");
  LLVMValueRef s = last ? LLVMBuildSub(B, c64(k, a.n - 1), step, "") : step;
  j = block_begin(k, &a, &lj);
  LLVMValueRef v = fc_cg_load(k, dt, k->in[0], axis_at(k, &a, a.n, s, j)), b = ld(k, ct, bv, j), better;
  if (cls == FC_DTC_FLOAT) {
    LLVMValueRef cmp = LLVMBuildFCmp(B, is_max ? LLVMRealOGT : LLVMRealOLT, v, b, "");
    better = LLVMBuildOr(B, cmp, LLVMBuildFCmp(B, LLVMRealUNO, v, v, ""), "");
    better = LLVMBuildAnd(B, better, LLVMBuildFCmp(B, LLVMRealORD, b, b, ""), "");
  } else {
    bool sg = cls == FC_DTC_SINT;
    better = LLVMBuildICmp(B, is_max ? (sg ? LLVMIntSGT : LLVMIntUGT) : (sg ? LLVMIntSLT : LLVMIntULT), v, b, "");
  }
  st(k, ct, bv, j, LLVMBuildSelect(B, better, v, b, ""));
  st(k, i64, bi, j, LLVMBuildSelect(B, better, s, ld(k, i64, bi, j), ""));
  block_end(k, &a, &lj);
  fc_cg_loop_end(k, &ls);
  j = block_begin(k, &a, &lj);
  fc_cg_store(k, FC_DT_I64, k->out[0], axis_at(k, &a, 1, c64(k, 0), j), ld(k, i64, bi, j));
  block_end(k, &a, &lj);
  axis_end(k, &a);
  return FC_OK;
}

/* ---- softmax / log_softmax ------------------------------------------------------------------------ */

/* One vector of the row at element i: a plain load, or (mask non-NULL) the row's ragged end with `fill`
 * in the lanes past it. */
static LLVMValueRef row_load(FcKernel *k, LLVMTypeRef vt, LLVMValueRef base, LLVMValueRef i, LLVMValueRef mask,
                             LLVMValueRef fill) {
  LLVMValueRef p = fc_cg_gep(k, FC_DT_F32, base, i);
  if (mask) return fc_cg_masked_load(k, vt, p, mask, fill);
  LLVMValueRef v = LLVMBuildLoad2(k->b, vt, p, "");
  LLVMSetAlignment(v, 4);
  return v;
}

static void row_store(FcKernel *k, LLVMValueRef v, LLVMValueRef base, LLVMValueRef i, LLVMValueRef mask) {
  LLVMValueRef p = fc_cg_gep(k, FC_DT_F32, base, i);
  if (mask) {
    fc_cg_masked_store(k, v, p, mask);
    return;
  }
  LLVMSetAlignment(LLVMBuildStore(k->b, v, p), 4);
}

static LLVMValueRef reduce_vec(FcKernel *k, const char *name, LLVMValueRef v, LLVMValueRef start) {
  LLVMValueRef args[2] = {start, v};
  return fc_cg_intrinsic(k, name, LLVMTypeOf(v), start ? args : args + 1, start ? 2 : 1);
}

/* x > m ? x : m, one compare-select (x86's maxps): a NaN x leaves m. The max of a softmax row needs no NaN
 * of its own: a NaN element's exponential is NaN, so is the row's sum, and so every output of the row, as
 * when the max is NaN; nor the sign of a zero max (x - 0 and x - -0 are equal but for a zero x, whose exp
 * is 1 either way). */
static LLVMValueRef greater(FcKernel *k, LLVMValueRef x, LLVMValueRef m) {
  return LLVMBuildSelect(k->b, LLVMBuildFCmp(k->b, LLVMRealOGT, x, m, ""), x, m, "");
}

/* f32 softmax along a contiguous axis (inner == 1: attention's scores, rows of 64 to a few hundred) in
 * explicit vectors of the widest registers, the row's ragged end through masked loads and stores, and one
 * reciprocal of the sum per row instead of a division per element (the products differ from the quotients
 * by at most an ulp). The general path below leaves these rows to LLVM's loop vectoriser, which on
 * AVX-512 picks half-width vectors, adds run-time checks and a scalar remainder to every pass of every
 * row, and divides. Three passes as there: max, e = exp(x - max) stored with its sum, e * (1 / sum). */
static void softmax_rows(FcKernel *k, AxisIter *a, int vl) {
  LLVMBuilderRef B = k->b;
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx), vt = LLVMVectorType(f32, (unsigned)vl);
  int64_t n = a->n, full = n / vl * vl, rem = n - full;
  LLVMValueRef mask = NULL;
  if (rem) {
    LLVMTypeRef i1 = LLVMInt1TypeInContext(k->ctx);
    LLVMValueRef bits[64];
    for (int l = 0; l < vl; l++) bits[l] = LLVMConstInt(i1, l < rem, 0);
    mask = LLVMConstVector(bits, (unsigned)vl);
  }
  LLVMValueRef neg_inf = fc_cg_splat_const(vt, LLVMConstReal(f32, -INFINITY));
  LLVMValueRef zero = LLVMConstNull(vt);
  LLVMValueRef in = fc_cg_gep(k, FC_DT_F32, k->in[0], mul(k, a->row, n));
  LLVMValueRef out = fc_cg_gep(k, FC_DT_F32, k->out[0], mul(k, a->row, n));
  LLVMValueRef acc = fc_cg_entry_alloca(k, vt, "acc");
  FcLoop l;

  LLVMBuildStore(B, neg_inf, acc);
  if (full) {
    LLVMValueRef i = fc_cg_loop_begin(k, &l, c64(k, 0), c64(k, full), vl, "v");
    LLVMBuildStore(B, greater(k, row_load(k, vt, in, i, NULL, NULL), LLVMBuildLoad2(B, vt, acc, "")), acc);
    fc_cg_loop_end(k, &l);
  }
  LLVMValueRef m = LLVMBuildLoad2(B, vt, acc, "");
  if (rem) m = greater(k, row_load(k, vt, in, c64(k, full), mask, neg_inf), m);
  /* m holds no NaN (greater never takes one), so its lanes fold by plain max instructions */
  LLVMValueRef mlane = reduce_vec(k, "llvm.vector.reduce.fmax", m, NULL);
  LLVMSetFastMathFlags(mlane, LLVMFastMathNoNaNs);
  LLVMValueRef mx = fc_cg_splat(k, mlane, (unsigned)vl);

  LLVMBuildStore(B, zero, acc);
  if (full) {
    LLVMValueRef i = fc_cg_loop_begin(k, &l, c64(k, 0), c64(k, full), vl, "v");
    LLVMValueRef e = math1(k, FC_MATH_EXP, LLVMBuildFSub(B, row_load(k, vt, in, i, NULL, NULL), mx, ""));
    row_store(k, e, out, i, NULL);
    LLVMBuildStore(B, LLVMBuildFAdd(B, LLVMBuildLoad2(B, vt, acc, ""), e, ""), acc);
    fc_cg_loop_end(k, &l);
  }
  LLVMValueRef s = LLVMBuildLoad2(B, vt, acc, "");
  if (rem) {
    LLVMValueRef e = math1(k, FC_MATH_EXP, LLVMBuildFSub(B, row_load(k, vt, in, c64(k, full), mask, neg_inf), mx, ""));
    e = LLVMBuildSelect(B, mask, e, zero, ""); /* lanes past the row: exp(-inf - max), 0 unless max is -inf */
    row_store(k, e, out, c64(k, full), mask);
    s = LLVMBuildFAdd(B, s, e, "");
  }
  LLVMValueRef sum = reassoc(reduce_vec(k, "llvm.vector.reduce.fadd", s, LLVMConstReal(f32, -0.0)));
  LLVMValueRef r = LLVMBuildFDiv(B, LLVMConstReal(f32, 1.0), sum, "rsum");
  LLVMValueRef rv = fc_cg_splat(k, r, (unsigned)vl);
  if (full) {
    LLVMValueRef i = fc_cg_loop_begin(k, &l, c64(k, 0), c64(k, full), vl, "v");
    row_store(k, LLVMBuildFMul(B, row_load(k, vt, out, i, NULL, NULL), rv, ""), out, i, NULL);
    fc_cg_loop_end(k, &l);
  }
  if (rem) {
    LLVMValueRef i = c64(k, full);
    row_store(k, LLVMBuildFMul(B, row_load(k, vt, out, i, mask, zero), rv, ""), out, i, mask);
  }
}

FcStatus fc_kernel_softmax(FcKernel *k) {
  FcOp *op = k->op;
  const FcType *t = &op->operands[0].value->type;
  FcDtype dt = t->dtype;
  bool log_form = op->kind == FC_OP_LOG_SOFTMAX;
  /* the exponentials stored in the result are exact only where storage keeps the compute precision */
  bool reuse = !log_form && (dt == FC_DT_F32 || dt == FC_DT_F64);
  AxisIter a;
  axis_split(t, (int)fc_op_attr_int(op, FC_ATTR_AXIS, 0), &a);
  if (a.n == 0 || !axis_begin(k, &a, 40.0 * (double)a.n)) {
    if (a.n == 0) fc_kernel_set_outer(k, 0, 0);
    return FC_OK;
  }
  int vl = k->target->max_vector_bytes / 4;
  if (dt == FC_DT_F32 && !log_form && a.inner == 1 && vl >= 4 && vl <= 64) {
    softmax_rows(k, &a, vl);
    axis_end(k, &a);
    return FC_OK;
  }
  LLVMBuilderRef B = k->b;
  LLVMTypeRef ct = fc_cg_compute_type(k, dt);
  LLVMValueRef mx = entry_alloca(k, ct, a.bk, "max"), sum = entry_alloca(k, ct, a.bk, "sum");
  FcLoop lj, ls;
  LLVMValueRef j = block_begin(k, &a, &lj);
  st(k, ct, mx, j, LLVMConstReal(ct, -INFINITY));
  st(k, ct, sum, j, LLVMConstReal(ct, 0.0));
  block_end(k, &a, &lj);

  LLVMValueRef s = fc_cg_loop_begin(k, &ls, c64(k, 0), c64(k, a.n), 1, "s");
  j = block_begin(k, &a, &lj);
  LLVMValueRef x = fc_cg_load(k, dt, k->in[0], axis_at(k, &a, a.n, s, j));
  st(k, ct, mx, j, intrinsic2(k, "llvm.maximum", ld(k, ct, mx, j), x));
  block_end(k, &a, &lj);
  fc_cg_loop_end(k, &ls);

  s = fc_cg_loop_begin(k, &ls, c64(k, 0), c64(k, a.n), 1, "s");
  j = block_begin(k, &a, &lj);
  LLVMValueRef idx = axis_at(k, &a, a.n, s, j);
  x = fc_cg_load(k, dt, k->in[0], idx);
  LLVMValueRef e = math1(k, FC_MATH_EXP, LLVMBuildFSub(B, x, ld(k, ct, mx, j), ""));
  st(k, ct, sum, j, reassoc(LLVMBuildFAdd(B, ld(k, ct, sum, j), e, "")));
  if (reuse) fc_cg_store(k, dt, k->out[0], idx, e);
  block_end(k, &a, &lj);
  fc_cg_loop_end(k, &ls);

  if (log_form) {
    j = block_begin(k, &a, &lj);
    st(k, ct, sum, j, math1(k, FC_MATH_LOG, ld(k, ct, sum, j)));
    block_end(k, &a, &lj);
  }

  s = fc_cg_loop_begin(k, &ls, c64(k, 0), c64(k, a.n), 1, "s");
  j = block_begin(k, &a, &lj);
  idx = axis_at(k, &a, a.n, s, j);
  LLVMValueRef y;
  if (log_form) {
    x = fc_cg_load(k, dt, k->in[0], idx);
    y = LLVMBuildFSub(B, LLVMBuildFSub(B, x, ld(k, ct, mx, j), ""), ld(k, ct, sum, j), "");
  } else {
    if (reuse) {
      e = fc_cg_load(k, dt, k->out[0], idx);
    } else {
      x = fc_cg_load(k, dt, k->in[0], idx);
      e = math1(k, FC_MATH_EXP, LLVMBuildFSub(B, x, ld(k, ct, mx, j), ""));
    }
    y = LLVMBuildFDiv(B, e, ld(k, ct, sum, j), "");
  }
  fc_cg_store(k, dt, k->out[0], idx, y);
  block_end(k, &a, &lj);
  fc_cg_loop_end(k, &ls);
  axis_end(k, &a);
  return FC_OK;
}

/* ---- cumsum ---------------------------------------------------------------------------------------- */

FcStatus fc_kernel_cumsum(FcKernel *k) {
  FcOp *op = k->op;
  const FcType *t = &op->operands[0].value->type;
  FcDtype dt = t->dtype;
  bool excl = fc_op_attr_int(op, FC_ATTR_EXCLUSIVE, 0) != 0, rev = fc_op_attr_int(op, FC_ATTR_REVERSE, 0) != 0;
  bool is_float = fc_dtype_is_float(dt);
  AxisIter a;
  axis_split(t, (int)fc_op_attr_int(op, FC_ATTR_AXIS, 0), &a);
  if (a.n == 0 || !axis_begin(k, &a, 2.0 * (double)a.n)) {
    if (a.n == 0) fc_kernel_set_outer(k, 0, 0);
    return FC_OK;
  }
  LLVMBuilderRef B = k->b;
  /* Floats run in double: every prefix is an output, so rounding errors may not average out, and a
   * prefix near zero after cancellation keeps the evaluator's accuracy only with the wider sum. */
  FcDtype at = is_float ? FC_DT_F64 : dt;
  LLVMTypeRef ct = fc_cg_compute_type(k, at);
  LLVMValueRef acc = entry_alloca(k, ct, a.bk, "acc");
  LLVMValueRef zero = is_float ? LLVMConstReal(ct, 0.0) : LLVMConstInt(ct, 0, 0);
  FcLoop lj, ls;
  LLVMValueRef j = block_begin(k, &a, &lj);
  st(k, ct, acc, j, zero);
  block_end(k, &a, &lj);
  LLVMValueRef step = fc_cg_loop_begin(k, &ls, c64(k, 0), c64(k, a.n), 1, "s");
  LLVMValueRef s = rev ? LLVMBuildSub(B, c64(k, a.n - 1), step, "") : step;
  j = block_begin(k, &a, &lj);
  LLVMValueRef idx = axis_at(k, &a, a.n, s, j);
  LLVMValueRef v = fc_cg_convert(k, fc_cg_load(k, dt, k->in[0], idx), dt, at), prev = ld(k, ct, acc, j);
  LLVMValueRef next = is_float ? LLVMBuildFAdd(B, prev, v, "") : LLVMBuildAdd(B, prev, v, "");
  st(k, ct, acc, j, next);
  fc_cg_store(k, dt, k->out[0], idx, fc_cg_convert(k, excl ? prev : next, at, dt));
  block_end(k, &a, &lj);
  fc_cg_loop_end(k, &ls);
  axis_end(k, &a);
  return FC_OK;
}

/* ---- layer_norm ------------------------------------------------------------------------------------ */

FcStatus fc_kernel_layer_norm(FcKernel *k) {
  FcOp *op = k->op;
  FcArena *arena = &op->graph->module->arena;
  const FcType *t = &op->operands[0].value->type;
  FcDtype dt = t->dtype;
  int axis = (int)fc_op_attr_int(op, FC_ATTR_AXIS, 0), nn = t->rank - axis;
  bool has_bias = op->n_operands > 2 && k->in[2] != NULL;
  int64_t outer = prod(t->dims, axis), inner = prod(t->dims + axis, nn);
  if (outer == 0 || (inner == 0 && op->n_results == 1)) {
    fc_kernel_set_outer(k, 0, 0);
    return FC_OK;
  }
  fc_kernel_set_outer(k, outer, 8.0 * (double)inner);

  /* The normalised dims, collapsed for x (contiguous), scale and bias (broadcast). */
  FcType norm = {dt, nn, t->dims + axis};
  int np = has_bias ? 2 : 1;
  const int64_t *ps[2];
  for (int p = 0; p < np; p++) ps[p] = fc_cg_broadcast_strides(arena, &op->operands[1 + p].value->type, &norm);
  int64_t *cd = FC_NEW_ARRAY(arena, int64_t, (size_t)nn + 1), *cx = FC_NEW_ARRAY(arena, int64_t, (size_t)nn + 1);
  int64_t *cs[2] = {FC_NEW_ARRAY(arena, int64_t, (size_t)nn + 1), FC_NEW_ARRAY(arena, int64_t, (size_t)nn + 1)};
  int cr = 0;
  for (int d = 0; d < nn; d++) {
    int64_t xs = prod(norm.dims + d + 1, nn - d - 1);
    if (norm.dims[d] == 1) continue;
    bool merge = cr > 0;
    for (int p = 0; merge && p < np; p++) merge = cs[p][cr - 1] == ps[p][d] * norm.dims[d];
    if (merge) {
      cd[cr - 1] *= norm.dims[d];
      cx[cr - 1] = xs;
      for (int p = 0; p < np; p++) cs[p][cr - 1] = ps[p][d];
    } else {
      cd[cr] = norm.dims[d];
      cx[cr] = xs;
      for (int p = 0; p < np; p++) cs[p][cr] = ps[p][d];
      cr++;
    }
  }

  LLVMBuilderRef B = k->b;
  LLVMTypeRef ct = fc_cg_compute_type(k, dt);
  LLVMValueRef acc = entry_alloca(k, ct, 1, "acc");
  FcLoop lo, lj;
  LLVMValueRef o = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "o");
  LLVMValueRef base = mul(k, o, inner);
  LLVMValueRef cnt = LLVMConstReal(ct, (double)inner);

  LLVMBuildStore(B, LLVMConstReal(ct, 0.0), acc);
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(k, 0), c64(k, inner), 1, "j");
  LLVMValueRef x = fc_cg_load(k, dt, k->in[0], fc_cg_iadd(k, base, j));
  LLVMBuildStore(B, reassoc(LLVMBuildFAdd(B, LLVMBuildLoad2(B, ct, acc, ""), x, "")), acc);
  fc_cg_loop_end(k, &lj);
  LLVMValueRef mean = LLVMBuildFDiv(B, LLVMBuildLoad2(B, ct, acc, ""), cnt, "mean");

  LLVMBuildStore(B, LLVMConstReal(ct, 0.0), acc);
  j = fc_cg_loop_begin(k, &lj, c64(k, 0), c64(k, inner), 1, "j");
  LLVMValueRef d = LLVMBuildFSub(B, fc_cg_load(k, dt, k->in[0], fc_cg_iadd(k, base, j)), mean, "");
  LLVMBuildStore(B, reassoc(LLVMBuildFAdd(B, LLVMBuildLoad2(B, ct, acc, ""), LLVMBuildFMul(B, d, d, ""), "")), acc);
  fc_cg_loop_end(k, &lj);
  LLVMValueRef var = LLVMBuildFDiv(B, LLVMBuildLoad2(B, ct, acc, ""), cnt, "");
  var = LLVMBuildFAdd(B, var, LLVMConstReal(ct, (double)fc_op_attr_float(op, FC_ATTR_EPSILON, 1e-5f)), "");
  LLVMValueRef inv = LLVMBuildFDiv(B, LLVMConstReal(ct, 1.0), intrinsic(k, "llvm.sqrt", &var, 1), "inv");

  /* y = (x - mean) · inv · scale (+ bias), over the collapsed normalised dims */
  if (inner > 0) {
    FcLoop *ln = FC_NEW_ARRAY(arena, FcLoop, (size_t)cr + 1);
    LLVMValueRef xo = base, po[2] = {c64(k, 0), c64(k, 0)};
    for (int c = 0; c < cr; c++) {
      LLVMValueRef iv = fc_cg_loop_begin(k, &ln[c], c64(k, 0), c64(k, cd[c]), 1, "n");
      xo = fc_cg_iadd(k, xo, mul(k, iv, cx[c]));
      for (int p = 0; p < np; p++)
        if (cs[p][c] != 0) po[p] = fc_cg_iadd(k, po[p], mul(k, iv, cs[p][c]));
    }
    LLVMValueRef y = LLVMBuildFSub(B, fc_cg_load(k, dt, k->in[0], xo), mean, "");
    y = LLVMBuildFMul(B, LLVMBuildFMul(B, y, inv, ""), fc_cg_load(k, dt, k->in[1], po[0]), "");
    if (has_bias) y = LLVMBuildFAdd(B, y, fc_cg_load(k, dt, k->in[2], po[1]), "");
    fc_cg_store(k, dt, k->out[0], xo, y);
    for (int c = cr - 1; c >= 0; c--) fc_cg_loop_end(k, &ln[c]);
  }
  if (op->n_results > 1) fc_cg_store(k, dt, k->out[1], o, mean);
  if (op->n_results > 2) fc_cg_store(k, dt, k->out[2], o, inv);
  fc_cg_loop_end(k, &lo);
  return FC_OK;
}

/* ---- topk ------------------------------------------------------------------------------------------ */

/* True where a ranks strictly before b: larger (or smaller) first, NaN above every number. */
static LLVMValueRef topk_before(FcKernel *k, FcDtypeClass cls, bool largest, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = k->b;
  if (cls == FC_DTC_FLOAT) {
    LLVMValueRef a_nan = LLVMBuildFCmp(B, LLVMRealUNO, a, a, ""), b_nan = LLVMBuildFCmp(B, LLVMRealUNO, b, b, "");
    if (largest)
      return LLVMBuildSelect(B, a_nan, LLVMBuildNot(B, b_nan, ""), LLVMBuildFCmp(B, LLVMRealOGT, a, b, ""), "");
    return LLVMBuildSelect(B, b_nan, LLVMBuildNot(B, a_nan, ""), LLVMBuildFCmp(B, LLVMRealOLT, a, b, ""), "");
  }
  bool s = cls == FC_DTC_SINT;
  return LLVMBuildICmp(B, largest ? (s ? LLVMIntSGT : LLVMIntUGT) : (s ? LLVMIntSLT : LLVMIntULT), a, b, "");
}

FcStatus fc_kernel_topk(FcKernel *k) {
  FcOp *op = k->op;
  const FcType *t = &op->operands[0].value->type;
  FcDtype dt = t->dtype;
  FcDtypeClass cls = fc_dtype_class(dt);
  int axis = (int)fc_op_attr_int(op, FC_ATTR_AXIS, -1);
  int64_t kk = fc_op_attr_int(op, FC_ATTR_K, 0);
  bool largest = fc_op_attr_int(op, FC_ATTR_LARGEST, 1) != 0;
  AxisIter a;
  axis_split(t, axis, &a);
  if (a.outer == 0 || a.inner == 0 || kk == 0) {
    fc_kernel_set_outer(k, 0, 0);
    return FC_OK;
  }
  fc_kernel_set_outer(k, a.outer * a.inner, 4.0 * (double)a.n * (kk < 8 ? 1.0 : (double)kk / 8));

  LLVMBuilderRef B = k->b;
  LLVMTypeRef i64 = fc_cg_i64(k);
  LLVMValueRef fn = k->fn;
  LLVMValueRef cnt = entry_alloca(k, i64, 1, "cnt"), pos = entry_alloca(k, i64, 1, "pos");
  FcLoop lo, lj;
  LLVMValueRef o = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "o");
  LLVMValueRef row = o, col = c64(k, 0);
  if (a.inner > 1) {
    row = LLVMBuildUDiv(B, o, c64(k, a.inner), "row");
    col = LLVMBuildURem(B, o, c64(k, a.inner), "col");
  }
  LLVMValueRef xb = fc_cg_iadd(k, mul(k, row, a.n * a.inner), col), yb = fc_cg_iadd(k, mul(k, row, kk * a.inner), col);
#define X_AT(i) fc_cg_load(k, dt, k->in[0], fc_cg_iadd(k, xb, mul(k, (i), a.inner)))
#define IDX_AT(p) fc_cg_load(k, FC_DT_I64, k->out[1], fc_cg_iadd(k, yb, mul(k, (p), a.inner)))
#define IDX_SET(p, v) fc_cg_store(k, FC_DT_I64, k->out[1], fc_cg_iadd(k, yb, mul(k, (p), a.inner)), (v))
  LLVMBuildStore(B, c64(k, 0), cnt);
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(k, 0), c64(k, a.n), 1, "j");
  LLVMValueRef vj = X_AT(j);
  LLVMBasicBlockRef check = LLVMAppendBasicBlockInContext(k->ctx, fn, "full");
  LLVMBasicBlockRef grow = LLVMAppendBasicBlockInContext(k->ctx, fn, "grow");
  LLVMBasicBlockRef replace = LLVMAppendBasicBlockInContext(k->ctx, fn, "replace");
  LLVMBasicBlockRef shift_hdr = LLVMAppendBasicBlockInContext(k->ctx, fn, "shift");
  LLVMBasicBlockRef shift_cmp = LLVMAppendBasicBlockInContext(k->ctx, fn, "shift_cmp");
  LLVMBasicBlockRef shift_body = LLVMAppendBasicBlockInContext(k->ctx, fn, "shift_body");
  LLVMBasicBlockRef place = LLVMAppendBasicBlockInContext(k->ctx, fn, "place");
  LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(k->ctx, fn, "next");
  LLVMValueRef c = LLVMBuildLoad2(B, i64, cnt, "");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, c, c64(k, kk), ""), check, grow);
  /* full list: j enters only if it ranks before the current last, which it then replaces */
  LLVMPositionBuilderAtEnd(B, check);
  LLVMBuildCondBr(B, topk_before(k, cls, largest, vj, X_AT(IDX_AT(c64(k, kk - 1)))), replace, next);
  LLVMPositionBuilderAtEnd(B, replace);
  LLVMBuildStore(B, c64(k, kk - 1), pos);
  LLVMBuildBr(B, shift_hdr);
  LLVMPositionBuilderAtEnd(B, grow);
  LLVMBuildStore(B, c, pos);
  LLVMBuildStore(B, fc_cg_iadd(k, c, c64(k, 1)), cnt);
  LLVMBuildBr(B, shift_hdr);
  /* move worse entries down one place while j ranks before them (equal ones have lower indices) */
  LLVMPositionBuilderAtEnd(B, shift_hdr);
  LLVMValueRef p = LLVMBuildLoad2(B, i64, pos, "");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSGT, p, c64(k, 0), ""), shift_cmp, place);
  LLVMPositionBuilderAtEnd(B, shift_cmp);
  LLVMValueRef pm1 = LLVMBuildSub(B, p, c64(k, 1), "");
  LLVMValueRef prev = IDX_AT(pm1);
  LLVMBuildCondBr(B, topk_before(k, cls, largest, vj, X_AT(prev)), shift_body, place);
  LLVMPositionBuilderAtEnd(B, shift_body);
  IDX_SET(p, prev);
  LLVMBuildStore(B, pm1, pos);
  LLVMBuildBr(B, shift_hdr);
  LLVMPositionBuilderAtEnd(B, place);
  IDX_SET(LLVMBuildLoad2(B, i64, pos, ""), j);
  LLVMBuildBr(B, next);
  LLVMPositionBuilderAtEnd(B, next);
  fc_cg_loop_end(k, &lj);
  /* values in the order of the indices */
  LLVMValueRef q = fc_cg_loop_begin(k, &lj, c64(k, 0), c64(k, kk), 1, "q");
  fc_cg_store(k, dt, k->out[0], fc_cg_iadd(k, yb, mul(k, q, a.inner)), X_AT(IDX_AT(q)));
  fc_cg_loop_end(k, &lj);
#undef X_AT
#undef IDX_AT
#undef IDX_SET
  fc_cg_loop_end(k, &lo);
  return FC_OK;
}
