/* store_weights_16bit.c — `--quantize fp16` / `--quantize bf16`: the large f32 constants (the weights) are
 * stored in 16 bits in the artefact and computed with in f32. Two registry rows share this file, one per
 * format: store_weights_f16 and store_weights_bf16.
 *
 * The pass only decides and rounds; codegen does the storing. Each chosen constant gets the annotation
 * `{flow.storage = "f16"}` (or "bf16") and its data is replaced by the same values rounded to the format
 * (to nearest even, as the hardware converts), so the IR, the evaluator and the artefact all compute with
 * the values the artefact holds: the only numerical change is this one rounding of each weight, a relative
 * error of at most 2^-11 (f16) or 2^-8 (bf16). Codegen (cg_module.c) stores every blob derived from an
 * annotated constant (the constant itself, packed GEMM panels, blocked or Winograd-transformed filters) in
 * 16 bits and expands it into an f32 buffer once, before the model's first run.
 *
 * Chosen: f32 constants of at least FC_W16_MIN_ELEMENTS elements (1 KiB). Each stored blob costs a table
 * entry in the artefact (two pointers and a count, plus two relocations in a position-independent one:
 * about 70 bytes), so a few hundred elements are needed before 2 bytes saved per element pay for it; the
 * small constants left alone are biases, per-channel scales and shape-like tables, where f32 costs
 * almost nothing and an error would add straight to an output. A constant holding a value the format
 * cannot hold stays f32 as a whole: NaN or an infinity (kept exactly in f32; only the format's finite
 * range is a faithful rounding) and, for f16, a magnitude that rounds above 65504 (it would become an
 * infinity). f16 flushes magnitudes below 2^-25 to zero and keeps those below 2^-14 with fewer bits
 * (subnormals): an absolute error of at most 2^-25, far below what a weight of that size contributes.
 *
 * The pass belongs at the end of a pipeline (the CLI appends it): a constant made by a later pass (fold,
 * fold_batchnorm, layout's re-laid-out filters) would not be annotated. Integer and quantised constants
 * are never touched.
 */
#include "passes.h"

#include <math.h>
#include <string.h>

#define FC_W16_MIN_ELEMENTS 256

/* v rounded to the 16-bit format dt and back; false when the result is not finite. */
static bool round_to(FcDtype dt, float v, float *out) {
  *out = dt == FC_DT_F16 ? fc_f16_to_f32(fc_f32_to_f16(v)) : fc_bf16_to_f32(fc_f32_to_bf16(v));
  return isfinite(*out);
}

/* The rounded copy of op's data (in the module arena), or NULL when op is not a constant the pass stores. */
static FcTensor *rounded_copy(FcModule *m, const FcOp *op, FcDtype dt) {
  if (op->kind != FC_OP_CONSTANT || op->n_results != 1) return NULL;
  const FcValue *r = &op->results[0];
  const FcTensor *t = fc_value_const(r);
  int64_t n;
  if (!t || r->type.dtype != FC_DT_F32 || r->type.quant || !fc_type_numel(&r->type, &n) || n < FC_W16_MIN_ELEMENTS ||
      t->nbytes != n * (int64_t)sizeof(float))
    return NULL;
  const float *src = t->data;
  for (int64_t i = 0; i < n; i++) {
    float v;
    if (!isfinite(src[i]) || !round_to(dt, src[i], &v)) return NULL;
  }
  FcTensor *c = fc_tensor_new(&m->arena, t->type);
  float *dst = (float *)c->data;
  for (int64_t i = 0; i < n; i++) round_to(dt, src[i], &dst[i]);
  return c;
}

static FcStatus store_weights(FcModule *m, FcDtype dt) {
  FcAnnotValue storage = FC_AV_STRING(fc_dtype_name(dt));
  fc_graph_for_each_op(m->graph, op) {
    FcTensor *c = rounded_copy(m, op, dt);
    if (!c) continue;
    /* A new tensor, not the old one rounded in place: tensors are shared once in the arena. */
    fc_op_set_attr(op, (FcAttr){.name = FC_ATTR_VALUE, .kind = FC_AK_TENSOR, .tensor = c});
    fc_op_set_annot(op, fc_annot_name(FC_ANNOT_STORAGE), &storage);
  }
  return FC_OK;
}

FcStatus fc_pass_store_weights_f16(FcModule *m, FcPassContext *pc) {
  (void)pc;
  return store_weights(m, FC_DT_F16);
}

FcStatus fc_pass_store_weights_bf16(FcModule *m, FcPassContext *pc) {
  (void)pc;
  return store_weights(m, FC_DT_BF16);
}
