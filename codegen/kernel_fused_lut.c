/* kernel_fused_lut.c — flow.fused as a table lookup where its value is a function of one byte: a quantised
 * model's float glue of one 8-bit tensor (hardswish, hardsigmoid, ReLU6, a requantisation) has only 256
 * possible inputs, so the program runs once per input value at compile time and the kernel reads
 * out[i] = table[in[i]].
 *
 * It applies when one 8-bit tensor of the result's shape (as one or more operands) is the only operand that is
 * not a one-element constant, the result is stored as 8-bit integers and the program computes in f32 with the
 * exactly rounded IEEE operations only (add, sub, mul, div, min, max, neg, abs, relu, round, floor, ceil): the
 * table comes from the reference evaluator (ir/fused.c), which computes each step in double and rounds it to
 * f32 — the same value as the f32 operation, since binary64 has more than 2·24 + 2 bits — and converts as
 * flow.cast does, so the table holds exactly what the vectorised loop of kernel_fused.c would store.
 * Transcendental steps, whose kernels approximate, keep that loop, as does a program the evaluator declines
 * (the table is made before any code, so that is still a choice).
 *
 * Only where the target can look bytes up in registers (AVX-512 VBMI: two vpermi2b give the two halves of the
 * table, the input's top bit picks one; a 64-byte vector in a handful of instructions where the f32 loop
 * converts, computes a dozen steps and narrows 16 lanes at a time); elsewhere a byte-by-byte lookup would not
 * beat the f32 loop. The bytes are cut into chunks for the thread pool; each chunk runs whole vectors, then a
 * scalar lookup for its last bytes.
 */
#include "codegen.h"

enum { LUT_CHUNK = 16384 }; /* bytes a task */

static bool exact_step(FcOpKind kind) {
  switch (kind) {
  case FC_OP_ADD: case FC_OP_SUB: case FC_OP_MUL: case FC_OP_DIV: case FC_OP_MIN: case FC_OP_MAX:
  case FC_OP_NEG: case FC_OP_ABS: case FC_OP_RELU: case FC_OP_ROUND: case FC_OP_FLOOR: case FC_OP_CEIL: return true;
  default: return false;
  }
}

/* The operand the value is a function of, or -1 when the op is not a lookup (see the top of the file). */
static int byte_operand(const FcKernel *k) {
  const FcOp *op = k->op;
  const FcType *rt = &op->results[0].type;
  const FcAttr *dt = fc_op_attr(op, FC_ATTR_DTYPE);
  const FcEwProgram *p = fc_op_attr_program(op, FC_ATTR_PROGRAM);
  if (!fc_target_has(k->target, FC_FEAT_AVX512VBMI) || !dt || dt->kind != FC_AK_TYPE || dt->type != FC_DT_F32 ||
      !p || rt->quant || !fc_dtype_is_8bit(rt->dtype))
    return -1;
  for (int i = 0; i < p->n_steps; i++)
    if (!exact_step(p->steps[i].kind)) return -1;
  int x = -1;
  for (int j = 0; j < op->n_operands; j++) {
    const FcValue *v = op->operands[j].value;
    const FcTensor *c = v ? fc_value_const(v) : NULL;
    int64_t numel;
    if (!v || v->type.quant || !fc_type_numel(&v->type, &numel)) return -1;
    if ((c && numel == 1) || (x >= 0 && v == op->operands[x].value)) continue;
    if (x >= 0 || !fc_dtype_is_8bit(v->type.dtype) || !fc_shape_equal(&v->type, rt)) return -1;
    x = j;
  }
  return x;
}

/* table[b] = the program's stored result for the input byte b (as unsigned), from the evaluator; false when
 * the evaluator declines the program. */
static bool make_table(FcKernel *k, int x, uint8_t table[256]) {
  const FcOp *op = k->op;
  FcArena *arena = &op->graph->module->arena;
  const FcType *rt = &op->results[0].type;
  int64_t *dims = FC_NEW_ARRAY(arena, int64_t, (size_t)rt->rank + 1);
  for (int d = 0; d < rt->rank; d++) dims[d] = 1;
  dims[rt->rank > 0 ? rt->rank - 1 : 0] = 256;
  int rank = rt->rank > 0 ? rt->rank : 1;
  FcValue res = {.type = {.dtype = rt->dtype, .rank = rank, .dims = dims}};
  FcOp tmp = *op;
  tmp.results = &res;
  tmp.n_results = 1;
  const FcTensor **in = FC_NEW_ARRAY(arena, const FcTensor *, (size_t)op->n_operands);
  const FcValue *xv = op->operands[x].value;
  FcTensor *bytes = fc_tensor_new(arena, (FcType){.dtype = xv->type.dtype, .rank = rank, .dims = dims});
  for (int b = 0; b < 256; b++) ((uint8_t *)bytes->data)[b] = (uint8_t)b; /* i8: the same bits */
  for (int j = 0; j < op->n_operands; j++)
    in[j] = op->operands[j].value == xv ? bytes : fc_value_const(op->operands[j].value);
  FcTensor *y = NULL;
  FcDiag declined;
  fc_diag_init(&declined);
  if (fc_op_info(FC_OP_FUSED)->eval(&tmp, in, &y, arena, &declined) != FC_OK || !y) return false;
  for (int b = 0; b < 256; b++) table[b] = ((const uint8_t *)y->data)[b];
  return true;
}

bool fc_fused_lut(FcKernel *k) {
  int x = byte_operand(k);
  uint8_t table[256];
  if (x < 0 || !make_table(k, x, table)) return false;
  int64_t n;
  FC_ASSERT(fc_type_numel(&k->op->results[0].type, &n));
  int64_t tasks = (n + LUT_CHUNK - 1) / LUT_CHUNK;
  fc_kernel_set_outer(k, tasks, 0.1 * (double)LUT_CHUNK);
  if (n == 0) return true;

  LLVMBuilderRef B = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), v64 = LLVMVectorType(i8, 64);
  LLVMValueRef vals[256];
  for (int b = 0; b < 256; b++) vals[b] = LLVMConstInt(i8, table[b], 0);
  LLVMValueRef tab = fc_cg_const_table(k, i8, vals, 256, "fused_lut");
  LLVMValueRef quarter[4]; /* the table as four 64-byte registers, loaded once a call */
  for (int q = 0; q < 4; q++) {
    LLVMValueRef off = fc_cg_const_i64(k, 64 * q);
    quarter[q] = LLVMBuildLoad2(B, v64, LLVMBuildGEP2(B, i8, tab, &off, 1, ""), "");
    LLVMSetAlignment(quarter[q], 1);
  }

  FcLoop lt;
  LLVMValueRef t = fc_cg_loop_begin(k, &lt, k->begin, k->end, 1, "task");
  LLVMValueRef lo = fc_cg_imulc(k, t, LUT_CHUNK);
  LLVMValueRef hi = fc_cg_smin(k, fc_cg_iadd(k, lo, fc_cg_const_i64(k, LUT_CHUNK)), fc_cg_const_i64(k, n));
  LLVMValueRef whole = fc_cg_iadd(k, lo, LLVMBuildAnd(B, fc_cg_isub(k, hi, lo), fc_cg_const_i64(k, ~(int64_t)63), ""));
  FcLoop lv;
  LLVMValueRef i = fc_cg_loop_begin(k, &lv, lo, whole, 64, "v");
  LLVMValueRef px = LLVMBuildGEP2(B, i8, k->in[x], &i, 1, ""), py = LLVMBuildGEP2(B, i8, k->out[0], &i, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(B, v64, px, "");
  LLVMSetAlignment(v, 1);
  /* vpermi2b: the low 6 bits of each byte pick from the first register, or with bit 6 from the second */
  LLVMValueRef a0[3] = {quarter[0], v, quarter[1]}, a1[3] = {quarter[2], v, quarter[3]};
  LLVMValueRef low = fc_cg_intrinsic(k, "llvm.x86.avx512.vpermi2var.qi.512", NULL, a0, 3);
  LLVMValueRef high = fc_cg_intrinsic(k, "llvm.x86.avx512.vpermi2var.qi.512", NULL, a1, 3);
  LLVMValueRef top = LLVMBuildICmp(B, LLVMIntSLT, v, LLVMConstNull(v64), "");
  LLVMValueRef s = LLVMBuildStore(B, LLVMBuildSelect(B, top, high, low, ""), py);
  LLVMSetAlignment(s, 1);
  fc_cg_loop_end(k, &lv);
  FcLoop ls;
  LLVMValueRef j = fc_cg_loop_begin(k, &ls, whole, hi, 1, "s");
  LLVMValueRef b = LLVMBuildZExt(B, LLVMBuildLoad2(B, i8, LLVMBuildGEP2(B, i8, k->in[x], &j, 1, ""), ""),
                                 LLVMInt64TypeInContext(k->ctx), "");
  LLVMValueRef e = LLVMBuildLoad2(B, i8, LLVMBuildGEP2(B, i8, tab, &b, 1, ""), "");
  LLVMBuildStore(B, e, LLVMBuildGEP2(B, i8, k->out[0], &j, 1, ""));
  fc_cg_loop_end(k, &ls);
  fc_cg_loop_end(k, &lt);
  return true;
}
