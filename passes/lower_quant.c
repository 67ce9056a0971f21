/* lower_quant.c — the quantize and dequantize ops that no integer kernel took, written as core ops.
 *
 * fold_qdq gives the quantised conv/matmul patterns to integer kernels; every quantize/dequantize left after
 * it (a QDQ pair around an op without an integer kernel, a model's input quantisation, the dequantize that
 * ends a chain) becomes f32 element-wise ops on the storage integers (ir/build_quant.c: div, round, add,
 * clamp, cast; cast, sub, mul), which fold when the operand is constant and fuse_elementwise merges with
 * their neighbours into one loop. The results are the evaluator's bit for bit. Codegen has no kernel for
 * quantize/dequantize, so every pipeline runs this pass (-O0 too).
 */
#include "passes.h"
#include "rewrite.h"

static FcStatus lower(FcOp *op, FcOpStack *scratch, FcDiag *diag) {
  FcBuilder b;
  fc_rw_builder_before(&b, op, diag);
  FcValue *x = op->operands[0].value;
  FcValue *y = op->kind == FC_OP_QUANTIZE ? fc_b_quantize_core(&b, x, op->results[0].type.quant)
                                          : fc_b_dequantize_core(&b, x);
  return fc_rw_replace_built(&b, op, y, scratch);
}

FcStatus fc_pass_lower_quant(FcModule *m, FcPassContext *pc) {
  FcOpStack scratch;
  fc_op_stack_init(&scratch, &m->arena);
  FcStatus st = FC_OK;
  fc_graph_for_each_op_safe(m->graph, op, next) {
    if (st == FC_OK && (op->kind == FC_OP_QUANTIZE || op->kind == FC_OP_DEQUANTIZE)) st = lower(op, &scratch, pc->diag);
  }
  return st;
}
