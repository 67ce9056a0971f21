/* quantize_dynamic.c — dynamic int8 quantisation of matmuls by constant weights (`--quantize
 * int8-dynamic`), as onnxruntime's quantize_dynamic does for transformers and MLPs: no calibration data.
 *
 * y = A·B with A f32 at run time and B a constant [K, N] becomes
 *     a_q, s_a, z_a = dynamic_quantize(A)                  per tensor, asymmetric u8, at run time
 *                                                          (A times 1 / s_a: one division per run)
 *     b_q[k, n]     = round(B[k, n] / s_b[n])              per output column, symmetric i8, here
 *     acc           = a_q · b_q                            i32, the integer GEMM (exact)
 *     y             = (f32(acc) - z_a · colsum(b_q)) · (s_a · s_b)    colsum a constant, s_b [N]
 * since sum_k (a_q - z_a)·s_a · b_q·s_b = s_a·s_b·(sum_k a_q·b_q - z_a·sum_k b_q). The zero-point
 * correction is applied in f32, so that it joins the scaling (and the bias and activation after it) in the
 * GEMM's epilogue (fuse_epilogue gives the matmul an f32 result: no i32 tensor is written), with z_a·colsum
 * and s_a·s_b computed once per run as [N] vectors; f32 rounds acc and z_a·colsum only above 2^24, by a
 * relative 2^-24, far below the quantisation step (2^-8 of the range).
 *
 * The weight range is REDUCED, |b_q| <= 64 (s_b[n] = max_k |B[k, n]| / 64), unless the target's integer GEMM is
 * exact for every i8 (vpdpbusd with VNNI, pmaddwd where it is the only dot: x86 without AVX2, or the generic loop
 * nest): vpmaddubsw adds two u8·i8 products into a saturating i16, and 255·64·2 < 32767 keeps every pair exact, so
 * the fast AVX2/AVX-512 path applies instead of the widening one (onnxruntime's reduce_range is the same trade). A
 * dynamic range of 128 levels per column instead of 255 costs one bit of weight precision. A multiversioned artefact
 * decides by its most portable variant (FcQuantOptions.int8_target): one model for all variants, the same results on
 * every CPU and one copy of the weights (the AVX2 variant's exact 16-bit path for ±127 weights is 1.6x slower than
 * vpmaddubsw on them, which would leave int8 slower than f32 there).
 *
 * Only matmuls without an epilogue are rewritten (the pass runs before fuse_epilogue, which then fuses
 * the bias and activations onto the ops that end the new chain), with a rank >= 2 f32 A, and B large
 * enough (K·N >= FC_QDYN_MIN_WEIGHTS) that the integer GEMM pays for quantising A. A B holding a
 * non-finite value stays f32 (no scale represents it), and so does a K whose i32 accumulator could
 * overflow (K·255·127 > INT32_MAX). An all-zero A gets a tiny scale instead of 0 (fc_b_dynamic_quantize),
 * so it quantises to zeros; an all-zero column of B gets scale 1 and zero weights.
 */
#include "passes.h"
#include "rewrite.h"

#include <float.h>
#include <math.h>
#include <stdint.h>

#define FC_QDYN_MIN_WEIGHTS 4096

/* The largest |b_q| the target's integer GEMM multiplies exactly at full speed. */
static int weight_qmax(const FcTarget *t) {
  FcI8Gemm g;
  fc_target_i8_gemm(t, &g);
  return g.dot == FC_I8DOT_MADDUBS ? 64 : 127;
}

static bool rewritable(const FcOp *op) {
  if (op->kind != FC_OP_MATMUL || op->n_operands != 2 || op->n_results != 1 || fc_op_attr(op, FC_ATTR_EPILOGUE) ||
      fc_rw_is_quantised(op))
    return false;
  const FcValue *a = op->operands[0].value, *b = op->operands[1].value;
  const FcTensor *w = fc_value_const(b);
  if (a->type.dtype != FC_DT_F32 || a->type.rank < 2 || b->type.dtype != FC_DT_F32 || b->type.rank != 2 || !w ||
      !w->data)
    return false;
  int64_t K = b->type.dims[0], N = b->type.dims[1];
  return K > 0 && N > 0 && K * N >= FC_QDYN_MIN_WEIGHTS && K <= INT32_MAX / (255 * 127);
}

/* The quantised weights of w [K, N] f32: b_q [K, N] i8, s_b [N] f32 and colsum(b_q) [N] f32, in the module
 * arena. False (nothing usable) when w holds a non-finite value. */
typedef struct QWeights {
  FcTensor *q, *scale, *colsum;
} QWeights;

static bool quantize_weights(FcArena *arena, const FcTensor *w, int qmax, QWeights *qw) {
  int64_t K = w->type.dims[0], N = w->type.dims[1];
  const float *src = w->data;
  int64_t dn[1] = {N};
  qw->q = fc_tensor_new(arena, fc_type_make(arena, FC_DT_I8, 2, w->type.dims));
  qw->scale = fc_tensor_new(arena, fc_type_make(arena, FC_DT_F32, 1, dn));
  qw->colsum = fc_tensor_new(arena, fc_type_make(arena, FC_DT_F32, 1, dn));
  float *s = (float *)qw->scale->data;
  int8_t *q = (int8_t *)qw->q->data;
  float *cs = (float *)qw->colsum->data;
  for (int64_t k = 0; k < K; k++)
    for (int64_t n = 0; n < N; n++) {
      float v = src[k * N + n];
      if (!isfinite(v)) return false;
      s[n] = fmaxf(s[n], fabsf(v)); /* the tensor starts zeroed */
    }
  for (int64_t n = 0; n < N; n++) s[n] = s[n] > 0 ? s[n] / (float)qmax : 1.0f;
  for (int64_t k = 0; k < K; k++)
    for (int64_t n = 0; n < N; n++) {
      float r = nearbyintf(src[k * N + n] / s[n]);
      int v = (int)fminf(fmaxf(r, (float)-qmax), (float)qmax);
      q[k * N + n] = (int8_t)v;
      cs[n] += (float)v; /* exact: |colsum| <= K·127 < 2^24, K bounded by rewritable() */
    }
  return true;
}

static FcStatus rewrite(FcModule *m, FcOp *op, int qmax, FcOpStack *scratch, FcDiag *diag) {
  QWeights qw;
  if (!quantize_weights(&m->arena, fc_value_const(op->operands[1].value), qmax, &qw)) return FC_OK;
  FcBuilder b;
  fc_rw_builder_before(&b, op, diag);
  FcValue *sa, *za;
  FcValue *aq = fc_b_dynamic_quantize(&b, op->operands[0].value, FLT_MIN, true, &sa, &za);
  FcValue *acc = fc_b_binary(&b, FC_OP_MATMUL, aq, fc_b_const_tensor(&b, qw.q));
  FcValue *corr = fc_b_binary(&b, FC_OP_MUL, fc_b_cast(&b, za, FC_DT_F32), fc_b_const_tensor(&b, qw.colsum));
  FcValue *mult = fc_b_binary(&b, FC_OP_MUL, sa, fc_b_const_tensor(&b, qw.scale));
  FcValue *y = fc_b_binary(&b, FC_OP_MUL, fc_b_binary(&b, FC_OP_SUB, fc_b_cast(&b, acc, FC_DT_F32), corr), mult);
  return fc_rw_replace_built(&b, op, y, scratch);
}

FcStatus fc_quantize_matmul_dynamic(FcModule *m, FcOp *op, FcPassContext *pc) {
  if (!rewritable(op)) return FC_OK;
  FcOpStack scratch;
  fc_op_stack_init(&scratch, &pc->scratch);
  return rewrite(m, op, weight_qmax(fc_pass_int8_target(pc)), &scratch, pc->diag);
}

FcStatus fc_pass_quantize_dynamic(FcModule *m, FcPassContext *pc) {
  FcStatus st = FC_OK;
  fc_graph_for_each_op_safe(m->graph, op, next) {
    if (st == FC_OK) st = fc_quantize_matmul_dynamic(m, op, pc);
  }
  return st;
}
