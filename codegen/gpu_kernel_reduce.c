/* gpu_kernel_reduce.c — GPU kernels of reduce_{sum,mean,max,min,prod} and argmax/argmin, computing what
 * codegen/kernel_reduce.c computes.
 *
 * A reduction first merges neighbouring input dims of the same kind (kept or reduced; size-1 dims
 * dropped), as the CPU kernel does, which leaves alternating groups such as [K0, R0, K1, R1]. Each output
 * element is a row of a team (gpu_team.c). When the innermost group is reduced (and the row is not tiny),
 * a warp or a block takes each output: its lanes walk the reduced elements in order, so consecutive lanes
 * read consecutive addresses, and their partials meet through shuffles (and shared memory for a block).
 * When the innermost group is kept, a thread takes each output and loops over the reduced elements:
 * consecutive threads are consecutive outputs, so every step of the loop is one coalesced load per warp.
 * Accumulators and identities are the CPU's: floats in their compute type (f16/bf16 in f32; max/min with
 * llvm.maximum/minimum, which propagate NaN), integers wrapping in their own type (associative, so the
 * tree order gives the CPU's bits), the integer mean summed in 64 bits and divided truncating; an empty
 * reduction gives the identity (a float mean of nothing NaN, an integer one 0).
 *
 * argmax/argmin view the input as [outer, n, inner]: a row is one (outer, inner) column, a warp or block
 * per row when inner == 1, a thread per column otherwise. Each thread scans its elements keeping a
 * (value, index) pair, and pairs combine by one total order that reproduces the CPU's scan from the
 * preferred end: a NaN beats every number, of two NaNs or two equal values the index nearer the preferred
 * end (the first, or the last with select_last_index) wins, otherwise the larger (smaller) value.
 */
#include <math.h>

#include "gpu.h"

typedef enum AccKind { ACC_SUM, ACC_PROD, ACC_MAX, ACC_MIN } AccKind;

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

static LLVMValueRef intrinsic2(FcKernel *k, const char *name, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef args[2] = {a, b};
  return fc_cg_intrinsic(k, name, LLVMTypeOf(a), args, 2);
}

static LLVMValueRef acc_init(AccKind kind, FcDtypeClass cls, LLVMTypeRef t) {
  if (cls == FC_DTC_FLOAT) {
    double v = kind == ACC_SUM ? 0.0 : kind == ACC_PROD ? 1.0 : kind == ACC_MAX ? -INFINITY : INFINITY;
    return LLVMConstReal(t, v);
  }
  unsigned w = LLVMGetIntTypeWidth(t);
  switch (kind) {
  case ACC_SUM: return LLVMConstInt(t, 0, 0);
  case ACC_PROD: return LLVMConstInt(t, 1, 0);
  case ACC_MAX: return cls == FC_DTC_SINT ? LLVMConstInt(t, 1ull << (w - 1), 0) : LLVMConstInt(t, 0, 0);
  case ACC_MIN: return cls == FC_DTC_SINT ? LLVMConstInt(t, (1ull << (w - 1)) - 1, 0) : LLVMConstAllOnes(t);
  }
  FC_UNREACHABLE();
}

static LLVMValueRef acc_step(FcKernel *k, AccKind kind, FcDtypeClass cls, LLVMValueRef acc, LLVMValueRef v) {
  LLVMBuilderRef B = k->b;
  bool s = cls == FC_DTC_SINT;
  if (cls == FC_DTC_FLOAT) {
    switch (kind) {
    case ACC_SUM: return LLVMBuildFAdd(B, acc, v, "");
    case ACC_PROD: return LLVMBuildFMul(B, acc, v, "");
    case ACC_MAX: return intrinsic2(k, "llvm.maximum", acc, v);
    case ACC_MIN: return intrinsic2(k, "llvm.minimum", acc, v);
    }
  }
  switch (kind) {
  case ACC_SUM: return LLVMBuildAdd(B, acc, v, "");
  case ACC_PROD: return LLVMBuildMul(B, acc, v, "");
  case ACC_MAX: return intrinsic2(k, s ? "llvm.smax" : "llvm.umax", acc, v);
  case ACC_MIN: return intrinsic2(k, s ? "llvm.smin" : "llvm.umin", acc, v);
  }
  FC_UNREACHABLE();
}

/* ---- reduce_* -------------------------------------------------------------------------------------- */

typedef struct Reduce {
  FcDtype dt;
  FcDtypeClass cls;
  AccKind kind;
  bool mean;
  LLVMTypeRef at; /* accumulator type */
  int64_t count;  /* elements per output */
} Reduce;

static void reduce_combine(FcGpuKernel *g, const void *ctx, LLVMValueRef *acc, const LLVMValueRef *other) {
  const Reduce *r = ctx;
  acc[0] = acc_step(&g->k, r->kind, r->cls, acc[0], other[0]);
}

/* Adds to `off` the offset of flat index `flat` over groups g[0..n) (outermost first) with sizes gd[] and
 * strides gs[]. */
static LLVMValueRef decompose(FcKernel *k, LLVMValueRef off, LLVMValueRef flat, const int *g, int n,
                              const int64_t *gd, const int64_t *gs) {
  LLVMBuilderRef B = k->b;
  for (int i = n - 1; i >= 0; i--) {
    LLVMValueRef idx = flat;
    if (i > 0) {
      idx = LLVMBuildURem(B, flat, c64(k, gd[g[i]]), "");
      flat = LLVMBuildUDiv(B, flat, c64(k, gd[g[i]]), "");
    }
    off = fc_cg_iadd(k, off, fc_cg_imulc(k, idx, gs[g[i]]));
  }
  return off;
}

static void reduce_store(FcKernel *k, const Reduce *r, LLVMValueRef idx, LLVMValueRef acc) {
  LLVMBuilderRef B = k->b;
  if (r->mean) {
    if (r->cls == FC_DTC_FLOAT) {
      acc = LLVMBuildFDiv(B, acc, LLVMConstReal(r->at, (double)r->count), "");
    } else {
      LLVMValueRef n = LLVMConstInt(r->at, (unsigned long long)(r->count > 0 ? r->count : 1), 0);
      acc = r->count == 0 ? LLVMConstInt(r->at, 0, 0)
                          : r->cls == FC_DTC_SINT ? LLVMBuildSDiv(B, acc, n, "") : LLVMBuildUDiv(B, acc, n, "");
      acc = fc_cg_convert(k, acc, r->cls == FC_DTC_SINT ? FC_DT_I64 : FC_DT_U64, r->dt);
    }
  }
  fc_cg_store(k, r->dt, k->out[0], idx, acc);
}

FcStatus fc_gpu_reduce(FcGpuKernel *g) {
  FcKernel *k = &g->k;
  FcOp *op = k->op;
  FcArena *arena = &op->graph->module->arena;
  const FcType *t = &op->operands[0].value->type;
  Reduce r = {.dt = t->dtype, .cls = fc_dtype_class(t->dtype)};
  switch (op->kind) {
  case FC_OP_REDUCE_SUM: r.kind = ACC_SUM; break;
  case FC_OP_REDUCE_MEAN: r.kind = ACC_SUM; r.mean = true; break;
  case FC_OP_REDUCE_PROD: r.kind = ACC_PROD; break;
  case FC_OP_REDUCE_MAX: r.kind = ACC_MAX; break;
  case FC_OP_REDUCE_MIN: r.kind = ACC_MIN; break;
  default: FC_UNREACHABLE();
  }
  if (r.cls == FC_DTC_BOOL) r.cls = FC_DTC_UINT; /* max/min of i1: or/and */
  r.at = r.mean && r.cls != FC_DTC_FLOAT ? LLVMInt64TypeInContext(k->ctx) : fc_cg_compute_type(k, r.dt);
  int64_t n_out;
  FC_ASSERT(fc_type_numel(&op->results[0].type, &n_out));
  if (n_out == 0) return fc_gpu_launch_1d(g, 0, 32);

  /* Groups: merged runs of kept or reduced dims, with their strides (as the CPU kernel). */
  const int64_t *axes;
  int n_axes = fc_op_attr_ints(op, FC_ATTR_AXES, &axes);
  int rank = t->rank, ng = 0;
  int64_t *gd = FC_NEW_ARRAY(arena, int64_t, (size_t)rank + 1), *gs = FC_NEW_ARRAY(arena, int64_t, (size_t)rank + 1);
  bool *gr = FC_NEW_ARRAY(arena, bool, (size_t)rank + 1);
  for (int a = 0, ai = 0; a < rank; a++) {
    bool red = ai < n_axes && axes[ai] == a;
    if (red) ai++;
    if (t->dims[a] == 1) continue;
    if (ng > 0 && gr[ng - 1] == red) {
      gd[ng - 1] *= t->dims[a];
    } else {
      gd[ng] = t->dims[a];
      gr[ng++] = red;
    }
  }
  if (ng == 0) {
    gd[0] = 1;
    gr[ng++] = true;
  }
  for (int i = ng - 1; i >= 0; i--) gs[i] = i == ng - 1 ? 1 : gs[i + 1] * gd[i + 1];
  int *kept = FC_NEW_ARRAY(arena, int, (size_t)ng), *red = FC_NEW_ARRAY(arena, int, (size_t)ng);
  int nk = 0, nr = 0;
  for (int i = 0; i < ng; i++) {
    if (gr[i]) red[nr++] = i;
    else kept[nk++] = i;
  }
  r.count = 1;
  for (int i = 0; i < nr; i++) r.count *= gd[red[i]];

  /* A contiguous innermost run goes to a warp or block; strided ones to a thread per output. */
  FcGpuTeamKind kind = gr[ng - 1] ? fc_gpu_team_pick(n_out, r.count) : FC_GPU_TEAM_THREAD;
  FcGpuTeam team;
  FcStatus st = fc_gpu_team_begin(g, kind, n_out, &team);
  if (st != FC_OK) return st;
  LLVMBuilderRef B = k->b;
  LLVMValueRef acc = fc_cg_entry_alloca(k, r.at, "acc");
  LLVMBuildStore(B, acc_init(r.kind, r.cls, r.at), acc);
  FcLoop l;
  LLVMValueRef base = decompose(k, c64(k, 0), team.row, kept, nk, gd, gs);
  LLVMValueRef s = fc_gpu_team_loop_begin(g, &team, r.count, &l);
  LLVMValueRef v = fc_cg_load(k, r.dt, k->in[0], decompose(k, base, s, red, nr, gd, gs));
  if (r.mean && r.cls != FC_DTC_FLOAT) v = fc_cg_convert(k, v, r.dt, r.cls == FC_DTC_SINT ? FC_DT_I64 : FC_DT_U64);
  LLVMBuildStore(B, acc_step(k, r.kind, r.cls, LLVMBuildLoad2(B, r.at, acc, ""), v), acc);
  fc_cg_loop_end(k, &l);
  LLVMValueRef total = LLVMBuildLoad2(B, r.at, acc, "");
  if ((st = fc_gpu_team_reduce(g, &team, 1, &total, reduce_combine, &r)) != FC_OK) return st;
  LLVMBasicBlockRef done = fc_gpu_team_leader_begin(g, &team);
  reduce_store(k, &r, team.row, total);
  fc_cg_if_end(k, done);
  return FC_OK;
}

/* ---- argmax / argmin ------------------------------------------------------------------------------ */

typedef struct Arg {
  FcDtypeClass cls;
  bool is_max, last;
} Arg;

/* True where (v, i) beats (w, j); j < 0 marks an empty candidate, which everything beats. */
static LLVMValueRef arg_better(FcKernel *k, const Arg *a, LLVMValueRef v, LLVMValueRef i, LLVMValueRef w,
                               LLVMValueRef j) {
  LLVMBuilderRef B = k->b;
  LLVMValueRef zero = c64(k, 0);
  LLVMValueRef none = LLVMBuildICmp(B, LLVMIntSLT, j, zero, ""), some = LLVMBuildICmp(B, LLVMIntSGE, i, zero, "");
  LLVMValueRef pref = LLVMBuildICmp(B, a->last ? LLVMIntSGT : LLVMIntSLT, i, j, "");
  LLVMValueRef wins;
  if (a->cls == FC_DTC_FLOAT) {
    LLVMValueRef v_nan = LLVMBuildFCmp(B, LLVMRealUNO, v, v, ""), w_num = LLVMBuildFCmp(B, LLVMRealORD, w, w, "");
    LLVMValueRef gt = LLVMBuildFCmp(B, a->is_max ? LLVMRealOGT : LLVMRealOLT, v, w, "");
    LLVMValueRef tie = LLVMBuildAnd(B, LLVMBuildFCmp(B, LLVMRealOEQ, v, w, ""), pref, "");
    LLVMValueRef if_nan = LLVMBuildOr(B, w_num, pref, "");
    LLVMValueRef if_num = LLVMBuildAnd(B, w_num, LLVMBuildOr(B, gt, tie, ""), "");
    wins = LLVMBuildSelect(B, v_nan, if_nan, if_num, "");
  } else {
    bool sg = a->cls == FC_DTC_SINT;
    LLVMValueRef gt = LLVMBuildICmp(B, a->is_max ? (sg ? LLVMIntSGT : LLVMIntUGT) : (sg ? LLVMIntSLT : LLVMIntULT), v, w, "");
    wins = LLVMBuildOr(B, gt, LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntEQ, v, w, ""), pref, ""), "");
  }
  return LLVMBuildOr(B, none, LLVMBuildAnd(B, some, wins, ""), "");
}

static void arg_combine(FcGpuKernel *g, const void *ctx, LLVMValueRef *acc, const LLVMValueRef *other) {
  FcKernel *k = &g->k;
  LLVMValueRef b = arg_better(k, ctx, other[0], other[1], acc[0], acc[1]);
  acc[0] = LLVMBuildSelect(k->b, b, other[0], acc[0], "");
  acc[1] = LLVMBuildSelect(k->b, b, other[1], acc[1], "");
}

FcStatus fc_gpu_argreduce(FcGpuKernel *g) {
  FcKernel *k = &g->k;
  FcOp *op = k->op;
  const FcType *t = &op->operands[0].value->type;
  FcDtype dt = t->dtype;
  int axis = (int)fc_op_attr_int(op, FC_ATTR_AXIS, 0);
  Arg a = {.cls = fc_dtype_class(dt), .is_max = op->kind == FC_OP_ARGMAX,
           .last = fc_op_attr_int(op, FC_ATTR_SELECT_LAST_INDEX, 0) != 0};
  int64_t outer = 1, inner = 1, n = t->dims[axis];
  for (int i = 0; i < axis; i++) outer *= t->dims[i];
  for (int i = axis + 1; i < t->rank; i++) inner *= t->dims[i];
  if (outer == 0 || inner == 0) return fc_gpu_launch_1d(g, 0, 32);
  if (n == 0) return fc_gpu_error(g, FC_ERR_INPUT, "cannot reduce an empty axis");

  int64_t rows = outer * inner;
  FcGpuTeam team;
  FcStatus st = fc_gpu_team_begin(g, inner == 1 ? fc_gpu_team_pick(rows, n) : FC_GPU_TEAM_THREAD, rows, &team);
  if (st != FC_OK) return st;
  LLVMBuilderRef B = k->b;
  LLVMTypeRef ct = fc_cg_compute_type(k, dt), i64 = fc_cg_i64(k);
  /* row r is column r % inner of outer row r / inner */
  LLVMValueRef base = fc_cg_imulc(k, team.row, n);
  if (inner > 1)
    base = fc_cg_iadd(k, fc_cg_imulc(k, LLVMBuildUDiv(B, team.row, c64(k, inner), ""), n * inner),
                      LLVMBuildURem(B, team.row, c64(k, inner), ""));
  LLVMValueRef bv = fc_cg_entry_alloca(k, ct, "best"), bi = fc_cg_entry_alloca(k, i64, "besti");
  LLVMBuildStore(B, LLVMConstNull(ct), bv);
  LLVMBuildStore(B, c64(k, -1), bi);
  FcLoop l;
  LLVMValueRef s = fc_gpu_team_loop_begin(g, &team, n, &l);
  LLVMValueRef v = fc_cg_load(k, dt, k->in[0], fc_cg_iadd(k, base, fc_cg_imulc(k, s, inner)));
  LLVMValueRef cur[2] = {LLVMBuildLoad2(B, ct, bv, ""), LLVMBuildLoad2(B, i64, bi, "")}, cand[2] = {v, s};
  arg_combine(g, &a, cur, cand);
  LLVMBuildStore(B, cur[0], bv);
  LLVMBuildStore(B, cur[1], bi);
  fc_cg_loop_end(k, &l);
  LLVMValueRef best[2] = {LLVMBuildLoad2(B, ct, bv, ""), LLVMBuildLoad2(B, i64, bi, "")};
  if ((st = fc_gpu_team_reduce(g, &team, 2, best, arg_combine, &a)) != FC_OK) return st;
  LLVMBasicBlockRef done = fc_gpu_team_leader_begin(g, &team);
  fc_cg_store(k, FC_DT_I64, k->out[0], team.row, best[1]);
  fc_cg_if_end(k, done);
  return FC_OK;
}
