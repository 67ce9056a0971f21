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

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

static void reduce_combine(FcGpuKernel *g, const void *ctx, LLVMValueRef *acc, const LLVMValueRef *other) {
  const FcReducePlan *r = ctx;
  acc[0] = fc_cg_acc_step(&g->k, r->kind, r->cls, acc[0], other[0], false);
}

FcStatus fc_gpu_reduce(FcGpuKernel *g) {
  FcKernel *k = &g->k;
  FcReducePlan r;
  FcStatus st = fc_cg_reduce_plan(k, &r);
  if (st != FC_OK) return st;
  int64_t n_out = r.n_out;
  if (n_out == 0) return fc_gpu_launch_1d(g, 0, 32);

  /* A contiguous innermost run goes to a warp or block; strided ones to a thread per output. */
  FcGpuTeamKind kind = r.gr[r.ng - 1] ? fc_gpu_team_pick(n_out, r.count) : FC_GPU_TEAM_THREAD;
  FcGpuTeam team;
  st = fc_gpu_team_begin(g, kind, n_out, &team);
  if (st != FC_OK) return st;
  LLVMBuilderRef B = k->b;
  LLVMValueRef acc = fc_cg_entry_alloca(k, r.at, "acc");
  LLVMBuildStore(B, fc_cg_acc_init(r.kind, r.cls, r.at), acc);
  FcLoop l;
  LLVMValueRef base = fc_cg_reduce_offset(k, &r, c64(k, 0), team.row, r.kept, r.nk);
  LLVMValueRef s = fc_gpu_team_loop_begin(g, &team, r.count, &l);
  LLVMValueRef v = fc_cg_reduce_load(k, &r, fc_cg_reduce_offset(k, &r, base, s, r.red, r.nr));
  LLVMBuildStore(B, fc_cg_acc_step(k, r.kind, r.cls, LLVMBuildLoad2(B, r.at, acc, ""), v, false), acc);
  fc_cg_loop_end(k, &l);
  LLVMValueRef total = LLVMBuildLoad2(B, r.at, acc, "");
  if ((st = fc_gpu_team_reduce(g, &team, 1, &total, reduce_combine, &r)) != FC_OK) return st;
  LLVMBasicBlockRef done = fc_gpu_team_leader_begin(g, &team);
  fc_cg_reduce_store(k, &r, team.row, total);
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
