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
 * Only where the target can look bytes up in registers; a byte-by-byte lookup (or AVX2's gathers) would not
 * beat the f32 loop:
 *   AVX-512 VBMI: two vpermi2b give the two halves of the table, the input's top bit picks one; a 64-byte
 *     vector in a handful of instructions where the f32 loop converts, computes a dozen steps and narrows;
 *   AVX2: vpshufb looks up 16-byte tables by the low 4 bits of each byte and yields 0 where the index byte's
 *     top bit is set. With T_h the 16 entries of high nibble h, D_0 = T_0 and D_h = T_h ^ T_(h-1) (h = 1..7),
 *     r = XOR over h = 0..7 of vpshufb(D_h, x -s 16h) is T_(x>>4)[x & 15] for x < 128: x -s 16h keeps x's low
 *     nibble and is negative (top bit set: 0) exactly when h > x >> 4, and the XOR of D_0 .. D_(x>>4)
 *     telescopes to T_(x>>4). Signed saturating subtraction keeps every x >= 128 (negative as a byte)
 *     negative, so those contribute nothing; the same chain on x ^ 0x80 with D_8 = T_8, D_h = T_h ^ T_(h-1)
 *     (h = 9..15) gives the upper half. 16 vpshufb, 16 xors and 15 subtractions a 32-byte vector.
 * The bytes are cut into chunks for the thread pool; each chunk runs whole vectors, then a scalar lookup for
 * its last bytes.
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
  bool lookup = fc_target_has(k->target, FC_FEAT_AVX512VBMI) || fc_target_has(k->target, FC_FEAT_AVX2);
  if (!lookup || !dt || dt->kind != FC_AK_TYPE || dt->type != FC_DT_F32 || !p || rt->quant ||
      !fc_dtype_is_8bit(rt->dtype))
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

/* 64 bytes of x looked up in the table's four 64-byte quarters (VBMI). */
static LLVMValueRef lookup_vbmi(FcKernel *k, LLVMValueRef quarter[4], LLVMValueRef v) {
  LLVMBuilderRef B = k->b;
  /* vpermi2b: the low 6 bits of each byte pick from the first register, or with bit 6 from the second */
  LLVMValueRef a0[3] = {quarter[0], v, quarter[1]}, a1[3] = {quarter[2], v, quarter[3]};
  LLVMValueRef low = fc_cg_intrinsic(k, "llvm.x86.avx512.vpermi2var.qi.512", NULL, a0, 3);
  LLVMValueRef high = fc_cg_intrinsic(k, "llvm.x86.avx512.vpermi2var.qi.512", NULL, a1, 3);
  LLVMValueRef top = LLVMBuildICmp(B, LLVMIntSLT, v, LLVMConstNull(LLVMTypeOf(v)), "");
  return LLVMBuildSelect(B, top, high, low, "");
}

/* 32 bytes of x looked up through the 16 XOR-differenced 16-byte tables d[h] (AVX2; see the top). */
static LLVMValueRef lookup_pshufb(FcKernel *k, LLVMValueRef d[16], LLVMValueRef v) {
  LLVMBuilderRef B = k->b;
  LLVMTypeRef v32 = LLVMTypeOf(v);
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef sixteen = fc_cg_splat_const(v32, LLVMConstInt(i8, 16, 0));
  LLVMValueRef r = NULL;
  for (int half = 0; half < 2; half++) {
    LLVMValueRef idx = half ? LLVMBuildXor(B, v, fc_cg_splat_const(v32, LLVMConstInt(i8, 0x80, 0)), "") : v;
    for (int h = 0; h < 8; h++) {
      if (h) {
        LLVMValueRef a[2] = {idx, sixteen};
        idx = fc_cg_intrinsic(k, "llvm.ssub.sat", v32, a, 2);
      }
      LLVMValueRef a[2] = {d[8 * half + h], idx};
      LLVMValueRef part = fc_cg_intrinsic(k, "llvm.x86.avx2.pshuf.b", NULL, a, 2);
      r = r ? LLVMBuildXor(B, r, part, "") : part;
    }
  }
  return r;
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
  bool vbmi = fc_target_has(k->target, FC_FEAT_AVX512VBMI);
  int width = vbmi ? 64 : 32;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), vt = LLVMVectorType(i8, (unsigned)width);
  LLVMValueRef vals[512];
  for (int b = 0; b < 256; b++) vals[b] = LLVMConstInt(i8, table[b], 0);
  LLVMValueRef tab = fc_cg_const_table(k, i8, vals, 256, "fused_lut");
  LLVMValueRef regs[16]; /* VBMI: the table as four 64-byte registers; AVX2: the 16 D_h, each in both lanes */
  if (!vbmi) {
    for (int h = 0; h < 16; h++)
      for (int l = 0; l < 32; l++) {
        int e = 16 * h + l % 16;
        vals[32 * h + l] = LLVMConstInt(i8, table[e] ^ (h % 8 ? table[e - 16] : 0), 0);
      }
  }
  LLVMValueRef diff = vbmi ? NULL : fc_cg_const_table(k, i8, vals, 512, "fused_lut_diff");
  for (int q = 0; q < (vbmi ? 4 : 16); q++) { /* loaded once a call */
    LLVMValueRef off = fc_cg_const_i64(k, width * q);
    regs[q] = LLVMBuildLoad2(B, vt, LLVMBuildGEP2(B, i8, vbmi ? tab : diff, &off, 1, ""), "");
    LLVMSetAlignment(regs[q], 1);
  }

  FcLoop lt;
  LLVMValueRef t = fc_cg_loop_begin(k, &lt, k->begin, k->end, 1, "task");
  LLVMValueRef lo = fc_cg_imulc(k, t, LUT_CHUNK);
  LLVMValueRef hi = fc_cg_smin(k, fc_cg_iadd(k, lo, fc_cg_const_i64(k, LUT_CHUNK)), fc_cg_const_i64(k, n));
  LLVMValueRef whole =
      fc_cg_iadd(k, lo, LLVMBuildAnd(B, fc_cg_isub(k, hi, lo), fc_cg_const_i64(k, ~(int64_t)(width - 1)), ""));
  FcLoop lv;
  LLVMValueRef i = fc_cg_loop_begin(k, &lv, lo, whole, width, "v");
  LLVMValueRef px = LLVMBuildGEP2(B, i8, k->in[x], &i, 1, ""), py = LLVMBuildGEP2(B, i8, k->out[0], &i, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(B, vt, px, "");
  LLVMSetAlignment(v, 1);
  LLVMValueRef s = LLVMBuildStore(B, vbmi ? lookup_vbmi(k, regs, v) : lookup_pshufb(k, regs, v), py);
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
