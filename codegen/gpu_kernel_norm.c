/* gpu_kernel_norm.c — GPU kernels of softmax, log_softmax and layer_norm, computing what
 * codegen/kernel_reduce.c computes.
 *
 * softmax views its input as [outer, n, inner]; each (outer, inner) column is a row of a team
 * (gpu_team.c): a warp per row when the axis is contiguous (inner == 1; a block for rows of more than a few
 * thousand elements), a thread per column otherwise (consecutive threads, consecutive columns: coalesced).
 * Three passes over the row, as the CPU's: the maximum (NaN-propagating), the sum of exp(x - max), then
 * exp(x - max) / sum, or x - max - log(sum) for log_softmax; each pass's partials combine over the team. A
 * thread writes only elements it alone read in the last pass, and every read of the earlier passes is
 * behind the team's exchange, so a result computed in place of its operand is still correct.
 *
 * layer_norm normalises contiguous rows (the dims from axis on). One pass over the row computes mean and
 * variance without cancellation: each thread runs Welford's update over its elements, and the team's
 * partial (count, mean, M2) triples meet by Chan's pairwise formula; then a second pass writes
 * (x - mean) · (1 / sqrt(var + epsilon)) · scale (+ bias), scale and bias broadcast over the normalised
 * dims through their merged strides. The optional results are the mean and the inverse deviation per row.
 * f16/bf16 compute in f32, f64 in f64.
 */
#include <math.h>

#include "fcmath.h"
#include "gpu.h"

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

static LLVMValueRef math1(FcKernel *k, FcMathFn fn, LLVMValueRef x) { return fc_math_emit(k->mod, k->b, fn, x, NULL); }

/* ---- softmax / log_softmax ------------------------------------------------------------------------ */

static void max_combine(FcGpuKernel *g, const void *ctx, LLVMValueRef *acc, const LLVMValueRef *other) {
  (void)ctx;
  LLVMValueRef args[2] = {acc[0], other[0]};
  acc[0] = fc_cg_intrinsic(&g->k, "llvm.maximum", LLVMTypeOf(acc[0]), args, 2);
}

static void sum_combine(FcGpuKernel *g, const void *ctx, LLVMValueRef *acc, const LLVMValueRef *other) {
  (void)ctx;
  acc[0] = LLVMBuildFAdd(g->k.b, acc[0], other[0], "");
}

FcStatus fc_gpu_softmax(FcGpuKernel *g) {
  FcKernel *k = &g->k;
  FcOp *op = k->op;
  const FcType *t = &op->operands[0].value->type;
  FcDtype dt = t->dtype;
  bool log_form = op->kind == FC_OP_LOG_SOFTMAX;
  int axis = (int)fc_op_attr_int(op, FC_ATTR_AXIS, 0);
  int64_t outer = 1, inner = 1, n = t->dims[axis];
  for (int i = 0; i < axis; i++) outer *= t->dims[i];
  for (int i = axis + 1; i < t->rank; i++) inner *= t->dims[i];
  if (outer == 0 || inner == 0 || n == 0) return fc_gpu_launch_1d(g, 0, 32);

  int64_t rows = outer * inner;
  FcGpuTeam team;
  FcStatus st = fc_gpu_team_begin(g, inner == 1 ? fc_gpu_team_pick(rows, n) : FC_GPU_TEAM_THREAD, rows, &team);
  if (st != FC_OK) return st;
  LLVMBuilderRef B = k->b;
  LLVMTypeRef ct = fc_cg_compute_type(k, dt);
  LLVMValueRef base = fc_cg_imulc(k, team.row, n);
  if (inner > 1)
    base = fc_cg_iadd(k, fc_cg_imulc(k, LLVMBuildUDiv(B, team.row, c64(k, inner), ""), n * inner),
                      LLVMBuildURem(B, team.row, c64(k, inner), ""));
  LLVMValueRef acc = fc_cg_entry_alloca(k, ct, "acc");
  FcLoop l;
#define AT(s) fc_cg_iadd(k, base, fc_cg_imulc(k, (s), inner))

  LLVMBuildStore(B, LLVMConstReal(ct, -INFINITY), acc);
  LLVMValueRef s = fc_gpu_team_loop_begin(g, &team, n, &l);
  LLVMValueRef args[2] = {LLVMBuildLoad2(B, ct, acc, ""), fc_cg_load(k, dt, k->in[0], AT(s))};
  LLVMBuildStore(B, fc_cg_intrinsic(k, "llvm.maximum", ct, args, 2), acc);
  fc_cg_loop_end(k, &l);
  LLVMValueRef mx = LLVMBuildLoad2(B, ct, acc, "");
  if ((st = fc_gpu_team_reduce(g, &team, 1, &mx, max_combine, NULL)) != FC_OK) return st;

  LLVMBuildStore(B, LLVMConstReal(ct, 0.0), acc);
  s = fc_gpu_team_loop_begin(g, &team, n, &l);
  LLVMValueRef e = math1(k, FC_MATH_EXP, LLVMBuildFSub(B, fc_cg_load(k, dt, k->in[0], AT(s)), mx, ""));
  LLVMBuildStore(B, LLVMBuildFAdd(B, LLVMBuildLoad2(B, ct, acc, ""), e, ""), acc);
  fc_cg_loop_end(k, &l);
  LLVMValueRef sum = LLVMBuildLoad2(B, ct, acc, "");
  if ((st = fc_gpu_team_reduce(g, &team, 1, &sum, sum_combine, NULL)) != FC_OK) return st;
  if (log_form) sum = math1(k, FC_MATH_LOG, sum);

  s = fc_gpu_team_loop_begin(g, &team, n, &l);
  LLVMValueRef idx = AT(s);
  LLVMValueRef d = LLVMBuildFSub(B, fc_cg_load(k, dt, k->in[0], idx), mx, "");
  LLVMValueRef y = log_form ? LLVMBuildFSub(B, d, sum, "") : LLVMBuildFDiv(B, math1(k, FC_MATH_EXP, d), sum, "");
  fc_cg_store(k, dt, k->out[0], idx, y);
  fc_cg_loop_end(k, &l);
#undef AT
  return FC_OK;
}

/* ---- layer_norm ------------------------------------------------------------------------------------ */

/* Chan et al.'s combination of two (count, mean, M2) summaries; an empty side leaves the other. */
static void welford_combine(FcGpuKernel *g, const void *ctx, LLVMValueRef *acc, const LLVMValueRef *other) {
  (void)ctx;
  LLVMBuilderRef B = g->k.b;
  LLVMTypeRef ct = LLVMTypeOf(acc[0]);
  LLVMValueRef n = LLVMBuildFAdd(B, acc[0], other[0], "");
  LLVMValueRef f = LLVMBuildFDiv(B, other[0], n, "");
  f = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT, n, LLVMConstReal(ct, 0.0), ""), f, LLVMConstReal(ct, 0.0), "");
  LLVMValueRef delta = LLVMBuildFSub(B, other[1], acc[1], "");
  LLVMValueRef mean = LLVMBuildFAdd(B, acc[1], LLVMBuildFMul(B, delta, f, ""), "");
  LLVMValueRef m2 = LLVMBuildFAdd(B, acc[2], other[2], "");
  m2 = LLVMBuildFAdd(B, m2, LLVMBuildFMul(B, LLVMBuildFMul(B, delta, delta, ""), LLVMBuildFMul(B, acc[0], f, ""), ""), "");
  acc[0] = n;
  acc[1] = mean;
  acc[2] = m2;
}

FcStatus fc_gpu_layer_norm(FcGpuKernel *g) {
  FcKernel *k = &g->k;
  FcOp *op = k->op;
  FcArena *arena = &op->graph->module->arena;
  const FcType *t = &op->operands[0].value->type;
  FcDtype dt = t->dtype;
  int axis = (int)fc_op_attr_int(op, FC_ATTR_AXIS, 0), nn = t->rank - axis;
  bool has_bias = op->n_operands > 2 && k->in[2] != NULL;
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; i++) outer *= t->dims[i];
  for (int i = axis; i < t->rank; i++) inner *= t->dims[i];
  if (outer == 0 || (inner == 0 && op->n_results == 1)) return fc_gpu_launch_1d(g, 0, 32);

  /* The normalised dims merged where scale and bias step through them as one (as the CPU kernel). */
  FcType norm = {dt, nn, t->dims + axis};
  int np = has_bias ? 2 : 1;
  const int64_t *ps[2];
  for (int p = 0; p < np; p++) ps[p] = fc_cg_broadcast_strides(arena, &op->operands[1 + p].value->type, &norm);
  int64_t *cd = FC_NEW_ARRAY(arena, int64_t, (size_t)nn + 1);
  int64_t *cs[2] = {FC_NEW_ARRAY(arena, int64_t, (size_t)nn + 1), FC_NEW_ARRAY(arena, int64_t, (size_t)nn + 1)};
  int cr = 0;
  for (int d = 0; d < nn; d++) {
    if (norm.dims[d] == 1) continue;
    bool merge = cr > 0;
    for (int p = 0; merge && p < np; p++) merge = cs[p][cr - 1] == ps[p][d] * norm.dims[d];
    if (merge) {
      cd[cr - 1] *= norm.dims[d];
      for (int p = 0; p < np; p++) cs[p][cr - 1] = ps[p][d];
    } else {
      cd[cr] = norm.dims[d];
      for (int p = 0; p < np; p++) cs[p][cr] = ps[p][d];
      cr++;
    }
  }

  FcGpuTeam team;
  FcStatus st = fc_gpu_team_begin(g, fc_gpu_team_pick(outer, inner), outer, &team);
  if (st != FC_OK) return st;
  LLVMBuilderRef B = k->b;
  LLVMTypeRef ct = fc_cg_compute_type(k, dt);
  LLVMValueRef zero = LLVMConstReal(ct, 0.0), one = LLVMConstReal(ct, 1.0);
  LLVMValueRef base = fc_cg_imulc(k, team.row, inner);
  LLVMValueRef sc = fc_cg_entry_alloca(k, ct, "cnt"), sm = fc_cg_entry_alloca(k, ct, "mean");
  LLVMValueRef s2 = fc_cg_entry_alloca(k, ct, "m2");
  LLVMBuildStore(B, zero, sc);
  LLVMBuildStore(B, zero, sm);
  LLVMBuildStore(B, zero, s2);
  FcLoop l;
  LLVMValueRef j = fc_gpu_team_loop_begin(g, &team, inner, &l);
  LLVMValueRef x = fc_cg_load(k, dt, k->in[0], fc_cg_iadd(k, base, j));
  LLVMValueRef cnt = LLVMBuildFAdd(B, LLVMBuildLoad2(B, ct, sc, ""), one, "");
  LLVMValueRef m = LLVMBuildLoad2(B, ct, sm, "");
  LLVMValueRef d = LLVMBuildFSub(B, x, m, "");
  m = LLVMBuildFAdd(B, m, LLVMBuildFDiv(B, d, cnt, ""), "");
  LLVMValueRef m2 = LLVMBuildFAdd(B, LLVMBuildLoad2(B, ct, s2, ""), LLVMBuildFMul(B, d, LLVMBuildFSub(B, x, m, ""), ""), "");
  LLVMBuildStore(B, cnt, sc);
  LLVMBuildStore(B, m, sm);
  LLVMBuildStore(B, m2, s2);
  fc_cg_loop_end(k, &l);
  LLVMValueRef w[3] = {LLVMBuildLoad2(B, ct, sc, ""), LLVMBuildLoad2(B, ct, sm, ""), LLVMBuildLoad2(B, ct, s2, "")};
  if ((st = fc_gpu_team_reduce(g, &team, 3, w, welford_combine, NULL)) != FC_OK) return st;
  /* An empty row: the CPU's 0 / 0 mean and variance. */
  LLVMValueRef mean = inner > 0 ? w[1] : LLVMConstReal(ct, NAN);
  LLVMValueRef var = inner > 0 ? LLVMBuildFDiv(B, w[2], LLVMConstReal(ct, (double)inner), "") : LLVMConstReal(ct, NAN);
  var = LLVMBuildFAdd(B, var, LLVMConstReal(ct, (double)fc_op_attr_float(op, FC_ATTR_EPSILON, 1e-5f)), "");
  LLVMValueRef inv = LLVMBuildFDiv(B, one, fc_cg_intrinsic(k, "llvm.sqrt", ct, &var, 1), "inv");

  if (inner > 0) {
    j = fc_gpu_team_loop_begin(g, &team, inner, &l);
    LLVMValueRef po[2] = {c64(k, 0), c64(k, 0)}, rem = j;
    for (int c = cr - 1; c >= 0; c--) {
      LLVMValueRef idx = rem;
      if (c > 0) {
        idx = LLVMBuildURem(B, rem, c64(k, cd[c]), "");
        rem = LLVMBuildUDiv(B, rem, c64(k, cd[c]), "");
      }
      for (int p = 0; p < np; p++)
        if (cs[p][c] != 0) po[p] = fc_cg_iadd(k, po[p], fc_cg_imulc(k, idx, cs[p][c]));
    }
    LLVMValueRef xo = fc_cg_iadd(k, base, j);
    LLVMValueRef y = LLVMBuildFSub(B, fc_cg_load(k, dt, k->in[0], xo), mean, "");
    y = LLVMBuildFMul(B, LLVMBuildFMul(B, y, inv, ""), fc_cg_load(k, dt, k->in[1], po[0]), "");
    if (has_bias) y = LLVMBuildFAdd(B, y, fc_cg_load(k, dt, k->in[2], po[1]), "");
    fc_cg_store(k, dt, k->out[0], xo, y);
    fc_cg_loop_end(k, &l);
  }
  if (op->n_results > 1) {
    LLVMBasicBlockRef done = fc_gpu_team_leader_begin(g, &team);
    fc_cg_store(k, dt, k->out[1], team.row, mean);
    if (op->n_results > 2) fc_cg_store(k, dt, k->out[2], team.row, inv);
    fc_cg_if_end(k, done);
  }
  return FC_OK;
}
