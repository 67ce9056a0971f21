/* infer_quant.c — type inference of quantisation: quantize, dequantize, scast, and the checks of the
 * quantised forms of conv, matmul and reduce_mean (ops.def).
 *
 * A quantised value's type carries its parameters (FcQuant); an op that produces one takes them from its
 * `qtype` attribute, which holds an element type (a !quant.uniform, or a plain dtype for the ops that end a
 * quantised chain). Ops that only move storage integers around (reshape, transpose, max_pool, slice,
 * concat) pass a per-tensor type through: infer.c gives their result the operand's parameters after their
 * own hook inferred the storage type.
 */
#include "infer_internal.h"

/* The qtype attribute as an element type (rank -1), or an error. */
static FcStatus qtype_attr(const FcOp *op, FcType *out, FcDiag *diag) {
  const FcAttr *a = fc_op_attr(op, FC_ATTR_QTYPE);
  if (!a) return fc_ih_fail(op, diag, "missing attribute 'qtype'");
  if (a->kind != FC_AK_TYPE || (unsigned)a->type >= FC_DT_COUNT || (a->quant && a->quant->storage != a->type))
    return fc_ih_fail(op, diag, "attribute 'qtype' must be an element type");
  *out = (FcType){.dtype = a->type, .rank = -1, .quant = a->quant};
  return FC_OK;
}

/* Sets result 0 to x's shape with element type q, checking q against that shape (per-axis sizes). */
static FcStatus set_quant_result(FcOp *op, FcArena *arena, const FcQuant *q, int rank, const int64_t *dims,
                                 FcDiag *diag) {
  FcType t = fc_type_make_quant(arena, q, rank, dims);
  char why[512];
  if (fc_quant_problem(q, &t, why, sizeof why)) return fc_ih_fail(op, diag, "qtype: %s", why);
  op->results[0].type = t;
  return FC_OK;
}

FcStatus fc_infer_quantize(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  FcType q = {0};
  FC_ITRY(qtype_attr(op, &q, diag));
  if (x->dtype != FC_DT_F32) return fc_ih_fail(op, diag, "input must be f32, not %s", fc_dtype_name(x->dtype));
  if (!q.quant) return fc_ih_fail(op, diag, "qtype must be a quantised type, not %s", fc_dtype_name(q.dtype));
  if (q.quant->expressed != FC_DT_F32) return fc_ih_fail(op, diag, "qtype must express f32");
  return set_quant_result(op, arena, q.quant, x->rank, x->dims, diag);
}

FcStatus fc_infer_dequantize(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  if (!x->quant) return fc_ih_fail(op, diag, "input must be quantised, not %s", fc_dtype_name(x->dtype));
  if (x->quant->expressed != FC_DT_F32) return fc_ih_fail(op, diag, "input must express f32");
  fc_ih_set(op, 0, arena, FC_DT_F32, x->rank, x->dims);
  return FC_OK;
}

FcStatus fc_infer_scast(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  FcType q = {0};
  FC_ITRY(qtype_attr(op, &q, diag));
  if (x->quant) {
    if (q.quant || q.dtype != x->dtype)
      return fc_ih_fail(op, diag, "a quantised input casts to its storage type %s", fc_dtype_name(x->dtype));
    fc_ih_set(op, 0, arena, x->dtype, x->rank, x->dims);
    return FC_OK;
  }
  if (!q.quant || q.quant->storage != x->dtype)
    return fc_ih_fail(op, diag, "a plain %s input casts to a quantised type stored as %s", fc_dtype_name(x->dtype),
                      fc_dtype_name(x->dtype));
  return set_quant_result(op, arena, q.quant, x->rank, x->dims, diag);
}

FcStatus fc_ih_quant_compute(const FcOp *op, int w_axis, bool *quantised, FcDiag *diag) {
  const FcType *x = fc_ih_in(op, 0), *w = fc_ih_in(op, 1);
  const FcAttr *qa = fc_op_attr(op, FC_ATTR_QTYPE);
  *quantised = x->quant || w->quant || qa;
  if (!*quantised) return FC_OK;
  if (!x->quant || !w->quant || !qa)
    return fc_ih_fail(op, diag, "a quantised form needs quantised input and weight and a qtype");
  if (!fc_dtype_is_8bit(x->dtype) || x->quant->axis >= 0 || x->quant->expressed != FC_DT_F32)
    return fc_ih_fail(op, diag, "the input must be quantised per tensor, 8-bit, expressing f32");
  if (!fc_dtype_is_8bit(w->dtype) || (w->quant->axis >= 0 && w->quant->axis != w_axis) ||
      w->quant->expressed != FC_DT_F32)
    return fc_ih_fail(op, diag, "the weight must be quantised 8-bit, per tensor or along dim %d, expressing f32",
                      w_axis);
  bool epilogue = fc_op_attr(op, FC_ATTR_EPILOGUE) != NULL;
  if (epilogue && op->kind != FC_OP_CONV) return fc_ih_fail(op, diag, "only a quantised conv takes an epilogue");
  if (op->n_operands > 3 && !epilogue)
    return fc_ih_fail(op, diag, "a quantised form takes at most a bias after its operands");
  if (op->n_operands >= 3) {
    const FcType *b = fc_ih_in(op, 2);
    if (b->quant || b->dtype != FC_DT_I32 || b->rank != 1)
      return fc_ih_fail(op, diag, "the bias of a quantised form must be a 1-D i32 tensor");
  }
  FcType q = {0};
  FC_ITRY(qtype_attr(op, &q, diag));
  if (q.quant ? !fc_dtype_is_8bit(q.dtype) || q.quant->axis >= 0 || q.quant->expressed != FC_DT_F32
              : q.dtype != FC_DT_F32)
    return fc_ih_fail(op, diag, "qtype must be f32 or quantised per tensor, 8-bit, expressing f32");
  if (epilogue && q.quant) return fc_ih_fail(op, diag, "a quantised conv with an epilogue has qtype f32");
  return FC_OK;
}

FcStatus fc_ih_set_quant_compute(FcOp *op, FcArena *arena, int64_t channels, int rank, const int64_t *dims,
                                 FcDiag *diag) {
  if (op->n_operands == 3 && fc_ih_in(op, 2)->dims[0] != channels)
    return fc_ih_fail(op, diag, "the bias must have %lld elements, one per output channel", (long long)channels);
  FcType q = {0};
  FC_ITRY(qtype_attr(op, &q, diag));
  if (!q.quant) {
    fc_ih_set(op, 0, arena, FC_DT_F32, rank, dims);
    return FC_OK;
  }
  return set_quant_result(op, arena, q.quant, rank, dims, diag);
}

FcStatus fc_ih_set_quant_mean(FcOp *op, FcArena *arena, int64_t count, int rank, const int64_t *dims, FcDiag *diag) {
  const FcType *x = fc_ih_in(op, 0);
  if (op->kind != FC_OP_REDUCE_MEAN) return fc_ih_fail(op, diag, "only reduce_mean has a quantised form");
  if (!x->quant || !fc_dtype_is_8bit(x->dtype) || x->quant->axis >= 0 || x->quant->expressed != FC_DT_F32)
    return fc_ih_fail(op, diag, "the input must be quantised per tensor, 8-bit, expressing f32");
  FcType q = {0};
  FC_ITRY(qtype_attr(op, &q, diag));
  if (!q.quant || !fc_dtype_is_8bit(q.dtype) || q.quant->axis >= 0 || q.quant->expressed != FC_DT_F32)
    return fc_ih_fail(op, diag, "qtype must be quantised per tensor, 8-bit, expressing f32");
  if (count == 0) return fc_ih_fail(op, diag, "a quantised mean of no elements");
  return set_quant_result(op, arena, q.quant, rank, dims, diag);
}
