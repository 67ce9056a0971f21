/* infer.c — the entry point of shape/dtype inference and the helpers every hook shares.
 *
 * fc_op_infer re-runs an op's hook (ops.def `infer` column) and compares what it computes with the
 * types recorded on the results: the verifier and the shape pass use it to catch a pass or a
 * hand-written module whose types disagree with its operands. The recorded types are restored
 * whatever the outcome, so a failed check leaves the op exactly as it was.
 *
 * The hooks live in infer_elementwise.c (element-wise ops, reductions), infer_nn.c (matmul, conv,
 * pools, norms, einsum, ...) and infer_data.c (data movement); the small ones with no operands
 * (constant, random, return) are here.
 */
#include "ew_program.h"
#include "infer_internal.h"
#include "resize_map.h"

#include <stdio.h>
#include <string.h>

FcStatus fc_ih_fail(const FcOp *op, FcDiag *diag, const char *fmt, ...) {
  char msg[sizeof diag->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fc_error(diag, FC_ERR_INPUT, "%s: %s", fc_op_info(op->kind)->name, msg);
}

FcStatus fc_ih_counts(const FcOp *op, FcDiag *diag) {
  const FcOpInfo *info = fc_op_info(op->kind);
  if (op->n_operands < info->in_min || (info->in_max >= 0 && op->n_operands > info->in_max)) {
    if (info->in_max < 0)
      return fc_ih_fail(op, diag, "expects at least %d operands, has %d", info->in_min, op->n_operands);
    if (info->in_min == info->in_max)
      return fc_ih_fail(op, diag, "expects %d operands, has %d", info->in_min, op->n_operands);
    return fc_ih_fail(op, diag, "expects %d to %d operands, has %d", info->in_min, info->in_max,
                         op->n_operands);
  }
  if (op->n_results < info->out_min || op->n_results > info->out_max) {
    if (info->out_min == info->out_max)
      return fc_ih_fail(op, diag, "expects %d results, has %d", info->out_min, op->n_results);
    return fc_ih_fail(op, diag, "expects %d to %d results, has %d", info->out_min, info->out_max,
                         op->n_results);
  }
  for (int i = 0; i < op->n_operands; i++)
    if (!op->operands[i].value) return fc_ih_fail(op, diag, "operand %d is missing", i);
  return FC_OK;
}

static FcStatus get_attr(const FcOp *op, FcAttrName n, FcAttrKind kind, const FcAttr **out, FcDiag *diag) {
  const FcAttr *a = fc_op_attr(op, n);
  if (!a) return fc_ih_fail(op, diag, "missing attribute '%s'", fc_attr_name_str(n));
  if (a->kind != kind)
    return fc_ih_fail(op, diag, "attribute '%s' must be %s, not %s", fc_attr_name_str(n), fc_attr_kind_str(kind),
                         fc_attr_kind_str(a->kind));
  *out = a;
  return FC_OK;
}

FcStatus fc_ih_int(const FcOp *op, FcAttrName n, int64_t *out, FcDiag *diag) {
  const FcAttr *a = NULL;
  FC_ITRY(get_attr(op, n, FC_AK_INT, &a, diag));
  *out = a->i;
  return FC_OK;
}

FcStatus fc_ih_flag(const FcOp *op, FcAttrName n, int64_t *out, FcDiag *diag) {
  FC_ITRY(fc_ih_int(op, n, out, diag));
  if (*out != 0 && *out != 1)
    return fc_ih_fail(op, diag, "attribute '%s' must be 0 or 1, got %lld", fc_attr_name_str(n), (long long)*out);
  return FC_OK;
}

FcStatus fc_ih_ints(const FcOp *op, FcAttrName n, const int64_t **v, int *count, FcDiag *diag) {
  const FcAttr *a = NULL;
  FC_ITRY(get_attr(op, n, FC_AK_INTS, &a, diag));
  *v = a->ints.v;
  *count = a->ints.n;
  if (*count < 0 || (*count > 0 && !*v)) return fc_ih_fail(op, diag, "attribute '%s' is malformed", fc_attr_name_str(n));
  return FC_OK;
}

FcStatus fc_ih_shape(const FcOp *op, const int64_t **shape, int *rank, FcDiag *diag) {
  FC_ITRY(fc_ih_ints(op, FC_ATTR_SHAPE, shape, rank, diag));
  int64_t numel = 1;
  for (int i = 0; i < *rank; i++) {
    if ((*shape)[i] < 0) return fc_ih_fail(op, diag, "shape dim %d is negative (%lld)", i, (long long)(*shape)[i]);
    if (!fc_checked_mul(numel, (*shape)[i], &numel)) return fc_ih_fail(op, diag, "shape has too many elements");
  }
  return FC_OK;
}

FcStatus fc_ih_dtype(const FcOp *op, FcAttrName n, FcDtype *out, FcDiag *diag) {
  const FcAttr *a = fc_op_attr(op, n);
  if (!a || a->kind != FC_AK_TYPE || (unsigned)a->type >= FC_DT_COUNT)
    return fc_ih_fail(op, diag, "attribute '%s' must be an element type", fc_attr_name_str(n));
  *out = a->type;
  return FC_OK;
}

FcStatus fc_ih_floats(const FcOp *op, FcAttrName n, const float **v, int *count, FcDiag *diag) {
  const FcAttr *a = NULL;
  FC_ITRY(get_attr(op, n, FC_AK_FLOATS, &a, diag));
  *v = a->floats.v;
  *count = a->floats.n;
  if (*count < 0 || (*count > 0 && !*v)) return fc_ih_fail(op, diag, "attribute '%s' is malformed", fc_attr_name_str(n));
  return FC_OK;
}

FcStatus fc_ih_float(const FcOp *op, FcAttrName n, float *out, FcDiag *diag) {
  const FcAttr *a = NULL;
  FC_ITRY(get_attr(op, n, FC_AK_FLOAT, &a, diag));
  *out = a->f;
  return FC_OK;
}

FcStatus fc_ih_str(const FcOp *op, FcAttrName n, const char **out, FcDiag *diag) {
  const FcAttr *a = NULL;
  FC_ITRY(get_attr(op, n, FC_AK_STR, &a, diag));
  *out = a->s ? a->s : "";
  return FC_OK;
}

FcStatus fc_ih_program(const FcOp *op, FcAttrName n, bool allow_x, FcArena *arena, const FcEwProgram **out,
                       FcDiag *diag) {
  const FcAttr *a = NULL;
  FC_ITRY(get_attr(op, n, FC_AK_PROGRAM, &a, diag));
  if (!a->prog) return fc_ih_fail(op, diag, "attribute '%s' is malformed", fc_attr_name_str(n));
  const char *why = fc_ew_program_check(a->prog, op->n_operands, allow_x);
  if (why)
    return fc_ih_fail(op, diag, "%s: element-wise program \"%s\": %s", fc_attr_name_str(n),
                      fc_ew_program_format(a->prog, arena), why);
  *out = a->prog;
  return FC_OK;
}

FcStatus fc_ih_choice(const FcOp *op, FcAttrName n, const char *const *choices, const char **out, FcDiag *diag) {
  const char *s;
  FC_ITRY(fc_ih_str(op, n, &s, diag));
  for (int i = 0; choices[i]; i++)
    if (strcmp(s, choices[i]) == 0) {
      *out = choices[i];
      return FC_OK;
    }
  char list[512];
  size_t len = 0;
  list[0] = '\0';
  for (int i = 0; choices[i] && len < sizeof list; i++)
    len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? "|" : "", choices[i]);
  return fc_ih_fail(op, diag, "attribute '%s' is \"%s\", expected %s", fc_attr_name_str(n), s, list);
}

FcStatus fc_ih_mode(const FcOp *op, FcModeList l, FcMode *out, FcDiag *diag) {
  const char *s;
  FcAttrName n = fc_mode_attr(l);
  FC_ITRY(fc_ih_str(op, n, &s, diag));
  if (fc_mode_parse(l, s, out)) return FC_OK;
  char list[256];
  return fc_ih_fail(op, diag, "attribute '%s' is \"%s\", expected %s", fc_attr_name_str(n), s,
                    fc_mode_list_str(l, list, sizeof list));
}

FcStatus fc_ih_axis(const FcOp *op, FcAttrName n, int rank, int64_t *axis, FcDiag *diag) {
  FC_ITRY(fc_ih_int(op, n, axis, diag));
  if (*axis < 0 || *axis >= rank)
    return fc_ih_fail(op, diag, "%s %lld out of range for rank %d", fc_attr_name_str(n), (long long)*axis, rank);
  return FC_OK;
}

void fc_ih_set(FcOp *op, int i, FcArena *arena, FcDtype dt, int rank, const int64_t *dims) {
  FC_ASSERT(i >= 0 && i < op->n_results);
  op->results[i].type = fc_type_make(arena, dt, rank, dims);
}

int64_t *fc_ih_dims(FcArena *arena, int rank) { return FC_NEW_ARRAY(arena, int64_t, (size_t)(rank > 0 ? rank : 1)); }

bool fc_ih_add_signed(int64_t a, int64_t b, int64_t *out) { return !__builtin_add_overflow(a, b, out); }

/* ---- the hooks of ops without operands ---------------------------------------------------------- */

FcStatus fc_infer_none(FcOp *op, FcArena *arena, FcDiag *diag) { return fc_ih_counts(op, diag); }

FcStatus fc_infer_constant(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcAttr *a = fc_op_attr(op, FC_ATTR_VALUE);
  if (!a) return fc_ih_fail(op, diag, "missing attribute 'value'");
  if (a->kind != FC_AK_TENSOR || !a->tensor) return fc_ih_fail(op, diag, "attribute 'value' must be a tensor");
  const FcType *t = &a->tensor->type;
  if ((unsigned)t->dtype >= FC_DT_COUNT || t->rank < 0 || (t->rank > 0 && !t->dims))
    return fc_ih_fail(op, diag, "attribute 'value' has a malformed type");
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i] < 0) return fc_ih_fail(op, diag, "value dim %d is negative (%lld)", i, (long long)t->dims[i]);
  int64_t nbytes;
  if (!fc_type_nbytes(t, &nbytes)) return fc_ih_fail(op, diag, "value is too large");
  if (a->tensor->data && a->tensor->nbytes != nbytes)
    return fc_ih_fail(op, diag, "value holds %lld bytes, its type needs %lld", (long long)a->tensor->nbytes,
                         (long long)nbytes);
  if (t->quant) {
    char why[512];
    if (fc_quant_problem(t->quant, t, why, sizeof why)) return fc_ih_fail(op, diag, "value type: %s", why);
    int64_t numel = 0;
    fc_type_numel(t, &numel);
    for (int64_t i = 0; a->tensor->data && i < numel; i++) {
      int64_t q = fc_tensor_get_i64(a->tensor, i);
      if (q < t->quant->qmin || q > t->quant->qmax)
        return fc_ih_fail(op, diag, "value element %lld is %lld, outside the storage range [%lld, %lld]", (long long)i,
                          (long long)q, (long long)t->quant->qmin, (long long)t->quant->qmax);
    }
  }
  op->results[0].type = fc_type_copy(arena, t); /* keeps a quantised type's parameters */
  return FC_OK;
}

FcStatus fc_infer_random(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcAttr *dt = fc_op_attr(op, FC_ATTR_DTYPE);
  if (!dt) return fc_ih_fail(op, diag, "missing attribute 'dtype'");
  if (dt->kind != FC_AK_TYPE || (unsigned)dt->type >= FC_DT_COUNT)
    return fc_ih_fail(op, diag, "attribute 'dtype' must be an element type");
  if (!fc_dtype_is_float(dt->type))
    return fc_ih_fail(op, diag, "dtype must be a float type, not %s", fc_dtype_name(dt->type));
  float low, high;
  FC_ITRY(fc_ih_float(op, FC_ATTR_LOW, &low, diag));
  FC_ITRY(fc_ih_float(op, FC_ATTR_HIGH, &high, diag));
  if (!(low <= high)) return fc_ih_fail(op, diag, "low %g is above high %g", (double)low, (double)high);
  const int64_t *shape;
  int n;
  FC_ITRY(fc_ih_shape(op, &shape, &n, diag));
  fc_ih_set(op, 0, arena, dt->type, n, shape);
  return FC_OK;
}

/* ---- fc_op_infer --------------------------------------------------------------------------------- */

bool fc_op_passes_quant_through(const FcOp *op) {
  FcOpKind k = op->kind;
  return k == FC_OP_RESHAPE || k == FC_OP_TRANSPOSE || k == FC_OP_MAX_POOL || k == FC_OP_SLICE || k == FC_OP_CONCAT ||
         (k == FC_OP_RESIZE && fc_resize_moves_data(op));
}

/* Only the ops of quantisation, the quantised forms of conv, conv_blocked, matmul and reduce_mean (their hooks
 * check the operands) and the pass-through ops take quantised operands; every other op refuses them here,
 * before its hook runs: a hook would otherwise read the storage dtype (i8) as the data and infer integer
 * arithmetic on it. */
static FcStatus check_quant_operands(const FcOp *op, FcDiag *diag) {
  FcOpKind k = op->kind;
  if ((fc_op_info(k)->flags & FC_OPF_TERMINATOR) || k == FC_OP_DEQUANTIZE || k == FC_OP_SCAST || k == FC_OP_CONV ||
      k == FC_OP_CONV_BLOCKED || k == FC_OP_MATMUL || k == FC_OP_REDUCE_MEAN)
    return FC_OK;
  if (fc_op_passes_quant_through(op) && op->n_operands > 0 && op->operands[0].value) {
    const FcQuant *q = op->operands[0].value->type.quant;
    for (int i = 0; q && i < op->n_operands; i++) {
      const FcValue *v = op->operands[i].value;
      if (q->axis >= 0 || !v || !fc_quant_equal(v->type.quant, q))
        return fc_ih_fail(op, diag, "quantised operands must share one per-tensor quantised type");
    }
    for (int i = 0; !q && i < op->n_operands; i++)
      if (op->operands[i].value && op->operands[i].value->type.quant)
        return fc_ih_fail(op, diag, "quantised operands must share one per-tensor quantised type");
    return FC_OK;
  }
  for (int i = 0; i < op->n_operands; i++) {
    const FcValue *v = op->operands[i].value;
    if (v && v->type.quant) {
      char buf[256];
      return fc_ih_fail(op, diag, "operand %d has the quantised type %s, which this op does not take", i,
                        fc_type_str(&v->type, buf, sizeof buf));
    }
  }
  return FC_OK;
}

FcStatus fc_op_infer_results(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(check_quant_operands(op, diag));
  FC_ITRY(fc_op_info(op->kind)->infer(op, arena, diag));
  if (fc_op_passes_quant_through(op) && op->n_operands > 0 && op->operands[0].value->type.quant)
    op->results[0].type.quant = fc_quant_copy(arena, op->operands[0].value->type.quant);
  /* One place for the per-tensor limit: a hook computes a shape (Pad's pads, OneHot's depth, Tile's
   * repeats, ...) and whatever it computes, no result may need more bytes than a tensor may have. */
  for (int i = 0; i < op->n_results; i++) {
    const FcType *t = &op->results[i].type;
    bool known = true;
    for (int d = 0; d < t->rank && known; d++) known = t->dims[d] >= 0;
    int64_t nbytes;
    if (known && (!fc_type_nbytes(t, &nbytes) || nbytes > FC_DEFAULT_MAX_TENSOR_BYTES)) {
      char ty[256];
      return fc_error(diag, FC_ERR_LIMIT, "%s: result %d (%s) is larger than the limit of %lld bytes",
                      fc_op_info(op->kind)->name, i, fc_type_str(t, ty, sizeof ty),
                      (long long)FC_DEFAULT_MAX_TENSOR_BYTES);
    }
  }
  return FC_OK;
}

FcStatus fc_op_infer(FcOp *op, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  FcArena *arena = &op->graph->module->arena;
  FcType *saved = op->n_results ? FC_NEW_ARRAY(arena, FcType, (size_t)op->n_results) : NULL;
  for (int i = 0; i < op->n_results; i++) saved[i] = op->results[i].type;
  FcStatus st = fc_op_infer_results(op, arena, diag);
  int bad = -1;
  FcType implied = {0};
  if (st == FC_OK)
    for (int i = 0; i < op->n_results && bad < 0; i++)
      if (!fc_type_equal(&saved[i], &op->results[i].type)) {
        bad = i;
        implied = op->results[i].type;
      }
  for (int i = 0; i < op->n_results; i++) op->results[i].type = saved[i];
  if (st != FC_OK) return st;
  if (bad >= 0) {
    char have[256], want[256];
    return fc_error(diag, FC_ERR_INPUT, "result %d has type %s but operands imply %s", bad,
                    fc_type_str(&saved[bad], have, sizeof have), fc_type_str(&implied, want, sizeof want));
  }
  return FC_OK;
}
