/* gpu_kernel_elementwise.c — GPU kernels of the element-wise ops (with NumPy broadcasting) and of flow.fused
 * (an element-wise program, ir/ew_program.h): one thread per result element.
 *
 * The iteration space is the result's with size-1 dims dropped and neighbours merged wherever every
 * operand steps through them as one (as the CPU kernels do), so a thread splits its linear index over
 * few dims, by constant divisors. Consecutive threads of a warp take consecutive result elements, so
 * the stores and the loads of every operand that varies along the last dim coalesce; an operand constant
 * along it (a per-channel bias) is one broadcast load per warp. Each thread reads all its operands before
 * it writes, so the memory plan's in-place results are correct as on the CPU.
 */
#include "gpu.h"

enum { THREADS = 256 };

enum { MAX_IN = 8 }; /* operands of a fused op this kernel takes */

typedef struct Space {
  int n_in, cr;
  int64_t *cd;         /* merged dims, outermost first */
  int64_t *cs[MAX_IN]; /* operand j's strides over them */
} Space;

/* The merged iteration space of op's result over its first n_in operands (n_in <= MAX_IN). */
static void merge_dims(FcOp *op, int n_in, FcArena *arena, Space *sp) {
  const FcType *rt = &op->results[0].type;
  const int64_t *st[MAX_IN];
  sp->cd = FC_NEW_ARRAY(arena, int64_t, (size_t)rt->rank + 1);
  for (int j = 0; j < n_in; j++) {
    st[j] = fc_cg_broadcast_strides(arena, &op->operands[j].value->type, rt);
    sp->cs[j] = FC_NEW_ARRAY(arena, int64_t, (size_t)rt->rank + 1);
  }
  int cr = 0;
  for (int a = 0; a < rt->rank; a++) {
    if (rt->dims[a] == 1) continue;
    bool merge = cr > 0;
    for (int j = 0; merge && j < n_in; j++) merge = sp->cs[j][cr - 1] == st[j][a] * rt->dims[a];
    if (merge) {
      sp->cd[cr - 1] *= rt->dims[a];
      for (int j = 0; j < n_in; j++) sp->cs[j][cr - 1] = st[j][a];
    } else {
      sp->cd[cr] = rt->dims[a];
      for (int j = 0; j < n_in; j++) sp->cs[j][cr] = st[j][a];
      cr++;
    }
  }
  if (cr == 0) {
    sp->cd[0] = 1;
    for (int j = 0; j < n_in; j++) sp->cs[j][0] = 0;
    cr = 1;
  }
  sp->n_in = n_in;
  sp->cr = cr;
}

/* Operand j's element index for result element i (i64). */
static void operand_offsets(FcGpuKernel *g, const Space *sp, LLVMValueRef i, LLVMValueRef *off) {
  FcKernel *k = &g->k;
  LLVMBuilderRef B = k->b;
  for (int j = 0; j < sp->n_in; j++) off[j] = fc_cg_const_i64(k, 0);
  LLVMValueRef rem = i;
  for (int a = sp->cr - 1; a >= 0; a--) {
    LLVMValueRef idx = rem;
    if (a > 0) {
      idx = LLVMBuildURem(B, rem, fc_cg_const_i64(k, sp->cd[a]), "");
      rem = LLVMBuildUDiv(B, rem, fc_cg_const_i64(k, sp->cd[a]), "");
    }
    for (int j = 0; j < sp->n_in; j++)
      if (sp->cs[j][a] != 0) off[j] = fc_cg_iadd(k, off[j], fc_cg_imulc(k, idx, sp->cs[j][a]));
  }
}

/* The common frame: the launch over numel elements, the guard, and the offsets; returns false (nothing
 * to build beyond an empty kernel) for an empty result. Leaves the builder inside the guard. */
static FcStatus begin(FcGpuKernel *g, int n_in, Space *sp, LLVMValueRef *i, LLVMValueRef *off,
                      LLVMBasicBlockRef *done, bool *empty) {
  FcOp *op = g->k.op;
  int64_t numel;
  FC_ASSERT(fc_type_numel(&op->results[0].type, &numel));
  FcStatus st = fc_gpu_launch_1d(g, numel, THREADS);
  if (st != FC_OK) return st;
  *empty = numel == 0;
  if (*empty) return FC_OK;
  merge_dims(op, n_in, &op->graph->module->arena, sp);
  *i = fc_gpu_global_idx_x(g);
  *done = fc_cg_if_begin(&g->k, LLVMBuildICmp(g->k.b, LLVMIntSLT, *i, fc_cg_const_i64(&g->k, numel), "in"));
  operand_offsets(g, sp, *i, off);
  return FC_OK;
}

FcStatus fc_gpu_elementwise(FcGpuKernel *g) {
  FcKernel *k = &g->k;
  FcOp *op = k->op;
  int n_in = op->n_operands;
  FC_ASSERT(n_in >= 1 && n_in <= 3);
  Space sp;
  LLVMValueRef i, off[MAX_IN], v[3] = {NULL, NULL, NULL};
  LLVMBasicBlockRef done;
  bool empty;
  FcStatus st = begin(g, n_in, &sp, &i, off, &done, &empty);
  if (st != FC_OK || empty) return st;
  for (int j = 0; j < n_in; j++) v[j] = fc_cg_load(k, op->operands[j].value->type.dtype, k->in[j], off[j]);
  LLVMValueRef r = fc_cg_scalar_op(k, op, op->operands[0].value->type.dtype, v[0], v[1], v[2]);
  fc_cg_store(k, op->results[0].type.dtype, k->out[0], i, r);
  fc_cg_if_end(k, done);
  return FC_OK;
}

FcStatus fc_gpu_fused(FcGpuKernel *g) {
  FcKernel *k = &g->k;
  FcOp *op = k->op;
  const FcAttr *dta = fc_op_attr(op, FC_ATTR_DTYPE);
  if (!dta || dta->kind != FC_AK_TYPE) return fc_gpu_error(g, FC_ERR_INPUT, "attribute 'dtype' is missing");
  const FcEwProgram *prog = fc_op_attr_program(op, FC_ATTR_PROGRAM);
  if (!prog) return fc_gpu_error(g, FC_ERR_INPUT, "attribute 'program' is missing");
  if (op->n_operands > MAX_IN) return fc_gpu_error(g, FC_ERR_UNSUPPORTED, "more than %d operands", MAX_IN);
  FcDtype dt = dta->type, rdt = op->results[0].type.dtype;
  FcCgStep *steps;
  FcStatus st = fc_cg_program_steps(k, prog, dt, "program", &steps);
  if (st != FC_OK) return st;
  for (int j = 0; j < op->n_operands; j++)
    if (!op->operands[j].value) return fc_gpu_error(g, FC_ERR_INPUT, "operand %d is missing", j);
  Space sp;
  LLVMValueRef i, off[MAX_IN], in[MAX_IN], vals[FC_EW_MAX_STEPS];
  LLVMBasicBlockRef done;
  bool empty;
  if ((st = begin(g, op->n_operands, &sp, &i, off, &done, &empty)) != FC_OK || empty) return st;
  for (int j = 0; j < op->n_operands; j++) {
    FcDtype odt = op->operands[j].value->type.dtype;
    in[j] = fc_cg_convert(k, fc_cg_load(k, odt, k->in[j], off[j]), odt, dt);
  }
  for (int s = 0; s < prog->n_steps; s++) {
    const FcEwStep *step = &prog->steps[s];
    LLVMValueRef a[FC_EW_MAX_ARGS] = {NULL, NULL, NULL};
    for (int j = 0; j < step->n_args; j++) {
      int32_t r = step->args[j];
      a[j] = FC_EW_IS_STEP_REF(r) ? vals[FC_EW_STEP_OF(r)] : in[r];
    }
    vals[s] = fc_cg_scalar_op(k, &steps[s].op, dt, a[0], a[1], a[2]);
  }
  fc_cg_store(k, rdt, k->out[0], i, fc_cg_convert(k, vals[prog->n_steps - 1], dt, rdt));
  fc_cg_if_end(k, done);
  return FC_OK;
}
