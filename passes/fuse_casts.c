/* fuse_casts.c — folds the casts around element-wise float code into it: a flow.fused (or a lone
 * element-wise op, which becomes one) reads an integer operand through its own load instead of a cast's
 * f32 copy, and stores its value as the integer type a single cast consumer wants.
 *
 * This is the float glue of a quantised model: what lower_quant writes for the quantize/dequantize ops
 * that no integer kernel took (a residual add between two quantised convs, the scale before a float conv)
 * is cast(u8 -> f32), arithmetic, round and clamp, cast(f32 -> u8). As separate kernels each u8 element
 * costs a 4-byte write and read per cast; folded in, one pass reads the bytes and writes the bytes.
 * flow.fused converts as flow.cast does (ops.def), with the same code (codegen's fc_cg_convert), so the
 * results are unchanged. Operands cast from an integer type no wider than the compute type are read
 * directly (the i32 -> f32 cast of an integer GEMM's accumulators before the dynamic quantisation's dequantize
 * then costs no pass of its own); a result is stored directly only as a narrower integer type. Runs after
 * fuse_elementwise, before dce (which removes the casts left without uses). */
#include "ew_program.h"
#include "passes.h"
#include "rewrite.h"

/* The compute dtype of a flow.fused without `to`, or of an element-wise op without attributes whose
 * operands and result share one float dtype; FC_DT_COUNT for anything else. */
static FcDtype member_dtype(const FcOp *op) {
  if (op->erased || op->n_results != 1) return FC_DT_COUNT;
  FcDtype d = op->results[0].type.dtype;
  if (d != FC_DT_F32 && d != FC_DT_F64) return FC_DT_COUNT;
  if (op->kind == FC_OP_FUSED) {
    const FcAttr *dt = fc_op_attr(op, FC_ATTR_DTYPE);
    if (fc_op_attr(op, FC_ATTR_TO) || !dt || dt->type != d || !fc_op_attr_program(op, FC_ATTR_PROGRAM)) return FC_DT_COUNT;
  } else {
    const FcOpInfo *info = fc_op_info(op->kind);
    if (!(info->flags & FC_OPF_ELEMENTWISE) || info->n_attrs != 0 || op->kind == FC_OP_CAST ||
        op->n_operands > FC_EW_MAX_ARGS)
      return FC_DT_COUNT;
  }
  for (int i = 0; i < op->n_operands; i++)
    if (!op->operands[i].value || op->operands[i].value->type.dtype != d) return FC_DT_COUNT;
  return d;
}

static bool narrower_int(FcDtype from, FcDtype than) {
  return fc_dtype_is_int(from) && fc_dtype_size(from) < fc_dtype_size(than);
}

/* The source of operand v when it is a cast to dt from an integer type no wider than dt, else NULL. */
static FcValue *narrow_source(const FcValue *v, FcDtype dt) {
  const FcOp *c = v->def;
  if (!c || c->kind != FC_OP_CAST || !c->operands[0].value) return NULL;
  FcValue *src = c->operands[0].value;
  return fc_dtype_is_int(src->type.dtype) && fc_dtype_size(src->type.dtype) <= fc_dtype_size(dt) ? src : NULL;
}

/* The one cast consuming op's result, when it casts to a narrower integer type; else NULL. */
static FcOp *narrow_store(const FcOp *op, FcDtype dt) {
  const FcValue *y = &op->results[0];
  if (fc_value_num_uses(y) != 1) return NULL;
  FcOp *c = y->first_use->user;
  if (c->kind != FC_OP_CAST || c->erased) return NULL;
  return narrower_int(c->results[0].type.dtype, dt) ? c : NULL;
}

static FcStatus fold_casts(FcModule *m, FcOp *op, FcDtype dt, FcOpStack *scratch, FcDiag *diag) {
  FcOp *store = narrow_store(op, dt);
  bool any = store != NULL;
  for (int i = 0; i < op->n_operands && !any; i++) any = narrow_source(op->operands[i].value, dt) != NULL;
  if (!any) return FC_OK;
  FcEwProgram one = {.n_steps = 1};
  const FcEwProgram *p = &one;
  if (op->kind == FC_OP_FUSED) {
    p = fc_op_attr_program(op, FC_ATTR_PROGRAM);
  } else {
    one.steps[0] = (FcEwStep){.kind = op->kind, .n_args = op->n_operands};
    for (int i = 0; i < op->n_operands; i++) one.steps[0].args[i] = i;
  }
  FcValue **ins = FC_NEW_ARRAY(&m->arena, FcValue *, (size_t)op->n_operands);
  for (int i = 0; i < op->n_operands; i++) {
    FcValue *src = narrow_source(op->operands[i].value, dt);
    ins[i] = src ? src : op->operands[i].value;
  }
  const FcType *rt = &op->results[0].type;
  FcAttr attrs[4] = {
      FC_A_TYPE(DTYPE, dt),
      FC_A_PROGRAM(PROGRAM, p),
      FC_A_INTS(SHAPE, rt->dims, rt->rank),
      FC_A_TYPE(TO, store ? store->results[0].type.dtype : dt),
  };
  FcBuilder b;
  fc_rw_builder_before(&b, store ? store : op, diag);
  b.loc = op->loc;
  FcOp *fused = fc_b_op(&b, FC_OP_FUSED, ins, op->n_operands, 1, attrs, store ? 4 : 3);
  if (!fused) return diag->status != FC_OK ? diag->status : FC_ERR_INTERNAL;
  FcValue *y = &fused->results[0];
  /* With a store the fused op takes the cast's place (after every operand); the op, then without uses,
   * goes with it, and so does any operand cast left without uses. */
  fc_rw_replace_op(store ? store : op, &y, scratch);
  return FC_OK;
}

FcStatus fc_pass_fuse_casts(FcModule *m, FcPassContext *pc) {
  FcOpStack scratch;
  fc_op_stack_init(&scratch, &m->arena);
  int n = 0;
  fc_graph_for_each_op(m->graph, op) n++;
  FcOp **ops = FC_NEW_ARRAY(&pc->scratch, FcOp *, (size_t)(n ? n : 1));
  n = 0;
  fc_graph_for_each_op(m->graph, op) ops[n++] = op;
  for (int i = 0; i < n; i++) {
    FcDtype dt = ops[i]->erased ? FC_DT_COUNT : member_dtype(ops[i]);
    if (dt == FC_DT_COUNT) continue;
    FcStatus st = fold_casts(m, ops[i], dt, &scratch, pc->diag);
    if (st != FC_OK) return st;
  }
  return FC_OK;
}
