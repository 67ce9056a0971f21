/* build.c — the op builder used by the importer and by passes.
 *
 * A builder appends ops at an insertion point, infers each op's result types through the op table's
 * hook, and keeps the first error (sticky): after a failure every call returns NULL and does nothing,
 * so a legaliser can chain a dozen calls and check fc_b_status() once.
 */
#include "ir.h"

#include <string.h>

void fc_builder_init(FcBuilder *b, FcGraph *g, FcDiag *diag) {
  memset(b, 0, sizeof *b);
  b->g = g;
  b->diag = diag;
}

FcStatus fc_b_status(const FcBuilder *b) { return b->status; }

FcValue *fc_b_fail(FcBuilder *b, FcStatus st, const char *fmt, ...) {
  if (b->status == FC_OK) {
    b->status = st;
    va_list ap;
    va_start(ap, fmt);
    fc_verror(b->diag, st, fmt, ap);
    va_end(ap);
  }
  return NULL;
}

/* Creates op `kind` with its regions and attributes, not yet inferred nor inserted; NULL after an error or
 * when an operand is missing. */
static FcOp *create_op(FcBuilder *b, FcOpKind kind, FcValue *const *operands, int n_operands, int n_results,
                       const FcAttr *attrs, int n_attrs, int n_regions) {
  if (b->status != FC_OK) return NULL;
  for (int i = 0; i < n_operands; i++)
    if (!operands[i]) {
      fc_b_fail(b, FC_ERR_INTERNAL, "builder: operand %d of %s is missing", i, fc_op_info(kind)->name);
      return NULL;
    }
  FcOp *op = fc_op_create_with_regions(b->g, kind, operands, n_operands, n_results, n_regions);
  op->loc = b->loc ? fc_arena_strdup(&b->g->module->arena, b->loc) : NULL;
  for (int i = 0; i < n_attrs; i++) fc_op_set_attr(op, attrs[i]);
  return op;
}

/* Infers op's results and inserts it; on failure detaches its operands again so use lists stay exact
 * (the op itself stays in the arena). */
static FcOp *infer_insert(FcBuilder *b, FcOp *op) {
  FcStatus st = fc_op_infer_results(op, &b->g->module->arena, b->diag);
  if (st != FC_OK) {
    b->status = st;
    for (int i = 0; i < op->n_operands; i++) fc_op_set_operand(op, i, NULL);
    return NULL;
  }
  fc_op_insert_before(b->before, op);
  return op;
}

FcOp *fc_b_op(FcBuilder *b, FcOpKind kind, FcValue *const *operands, int n_operands, int n_results,
              const FcAttr *attrs, int n_attrs) {
  FcOp *op = create_op(b, kind, operands, n_operands, n_results, attrs, n_attrs, 0);
  return op ? infer_insert(b, op) : NULL;
}

FcOp *fc_b_region_op(FcBuilder *b, FcOpKind kind, FcValue *const *operands, int n_operands, int n_results,
                     const FcAttr *attrs, int n_attrs) {
  int n_regions = kind == FC_OP_LOOP ? 1 : kind == FC_OP_IF ? 2 : 0;
  FC_ASSERT(n_regions > 0);
  if (kind == FC_OP_LOOP && n_operands < 2) {
    fc_b_fail(b, FC_ERR_INTERNAL, "builder: loop needs trip and cond operands");
    return NULL;
  }
  FcOp *op = create_op(b, kind, operands, n_operands, n_results, attrs, n_attrs, n_regions);
  if (op) fc_op_add_block_args(op);
  return op;
}

FcOp *fc_b_region_op_finish(FcBuilder *b, FcOp *op) {
  if (b->status != FC_OK || !op) return NULL;
  return infer_insert(b, op);
}

FcValue *fc_b_op1(FcBuilder *b, FcOpKind kind, FcValue *const *operands, int n_operands,
                  const FcAttr *attrs, int n_attrs) {
  FcOp *op = fc_b_op(b, kind, operands, n_operands, 1, attrs, n_attrs);
  return op ? &op->results[0] : NULL;
}

FcValue *fc_b_unary(FcBuilder *b, FcOpKind kind, FcValue *x) { return fc_b_op1(b, kind, &x, 1, NULL, 0); }

FcValue *fc_b_binary(FcBuilder *b, FcOpKind kind, FcValue *x, FcValue *y) {
  FcValue *ops[2] = {x, y};
  return fc_b_op1(b, kind, ops, 2, NULL, 0);
}

FcValue *fc_b_select(FcBuilder *b, FcValue *cond, FcValue *x, FcValue *y) {
  FcValue *ops[3] = {cond, x, y};
  return fc_b_op1(b, FC_OP_SELECT, ops, 3, NULL, 0);
}

FcValue *fc_b_cast(FcBuilder *b, FcValue *x, FcDtype to) {
  FcAttr a = FC_A_TYPE(TO, to);
  return fc_b_op1(b, FC_OP_CAST, &x, 1, &a, 1);
}

FcValue *fc_b_reshape(FcBuilder *b, FcValue *x, int rank, const int64_t *dims) {
  FcAttr a = FC_A_INTS(SHAPE, dims, rank);
  return fc_b_op1(b, FC_OP_RESHAPE, &x, 1, &a, 1);
}

FcValue *fc_b_transpose(FcBuilder *b, FcValue *x, const int64_t *perm) {
  if (!x) return NULL;
  FcAttr a = FC_A_INTS(PERM, perm, x->type.rank);
  return fc_b_op1(b, FC_OP_TRANSPOSE, &x, 1, &a, 1);
}

FcValue *fc_b_broadcast(FcBuilder *b, FcValue *x, int rank, const int64_t *dims) {
  FcAttr a = FC_A_INTS(SHAPE, dims, rank);
  return fc_b_op1(b, FC_OP_BROADCAST, &x, 1, &a, 1);
}

FcValue *fc_b_reduce(FcBuilder *b, FcOpKind kind, FcValue *x, int n_axes, const int64_t *axes, bool keepdims) {
  FcAttr a[2] = {FC_A_INTS(AXES, axes, n_axes), FC_A_INT(KEEPDIMS, keepdims ? 1 : 0)};
  return fc_b_op1(b, kind, &x, 1, a, 2);
}

FcValue *fc_b_slice(FcBuilder *b, FcValue *x, const int64_t *starts, const int64_t *ends, const int64_t *steps) {
  if (!x) return NULL;
  int r = x->type.rank;
  FcAttr a[3] = {FC_A_INTS(ENDS, ends, r), FC_A_INTS(STARTS, starts, r), FC_A_INTS(STEPS, steps, r)};
  return fc_b_op1(b, FC_OP_SLICE, &x, 1, a, 3);
}

FcValue *fc_b_concat(FcBuilder *b, FcValue *const *xs, int n, int64_t axis) {
  FcAttr a = FC_A_INT(AXIS, axis);
  return fc_b_op1(b, FC_OP_CONCAT, xs, n, &a, 1);
}

FcValue *fc_b_const_tensor(FcBuilder *b, const FcTensor *t) {
  FcAttr a = {.name = FC_ATTR_VALUE, .kind = FC_AK_TENSOR, .tensor = t};
  return fc_b_op1(b, FC_OP_CONSTANT, NULL, 0, &a, 1);
}

FcValue *fc_b_const(FcBuilder *b, FcDtype dt, int rank, const int64_t *dims, const void *data) {
  if (b->status != FC_OK) return NULL;
  FcArena *a = &b->g->module->arena;
  FcType ty = fc_type_make(a, dt, rank, dims);
  int64_t nbytes;
  if (!fc_type_nbytes(&ty, &nbytes) || nbytes > FC_DEFAULT_MAX_TENSOR_BYTES)
    return fc_b_fail(b, FC_ERR_LIMIT, "constant of %d dims is too large", rank);
  FcTensor *t = fc_tensor_new(a, ty);
  if (nbytes) memcpy((void *)t->data, data, (size_t)nbytes);
  return fc_b_const_tensor(b, t);
}

FcValue *fc_b_scalar(FcBuilder *b, FcDtype dt, double v) {
  if (b->status != FC_OK) return NULL;
  FcTensor *t = fc_tensor_new(&b->g->module->arena, fc_type_make(&b->g->module->arena, dt, 0, NULL));
  fc_tensor_set_f64(t, 0, v);
  return fc_b_const_tensor(b, t);
}

FcValue *fc_b_const_i64(FcBuilder *b, int n, const int64_t *v) {
  int64_t dims[1] = {n};
  return fc_b_const(b, FC_DT_I64, 1, dims, v);
}
