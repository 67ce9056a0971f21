/* split_sliced_matmul.c — a matmul by a constant weight whose result (or that result plus a constant bias)
 * is read only by slices along its last axis becomes one matmul per slice, by that slice's columns of the
 * weight (and of the bias).
 *
 * PyTorch exports attention's query/key/value projection as one MatMul by the concatenated [d, 3d] weight
 * and three Slices of the last axis. For tensor parallelism the fused product is what hurts: a column split
 * of [d, 3d] gives rank 0 all the queries and half the keys, so no slice can keep the split, and the product
 * is gathered whole on every rank each run. As three matmuls, each is split by its own columns (its heads),
 * the attention below runs head-parallel, and the output projection's row split ends the block with one
 * all-reduce (Megatron). The rewrite is exact: every output element is the same dot product of the same
 * values. It runs in --ranks builds, just before the sbp pass (compiler/main.c); the single-process
 * pipeline keeps the fused product.
 */
#include "passes.h"
#include "rewrite.h"

#include <string.h>

/* Whether `s` takes [.., lo:hi] of its operand's last axis and everything of the other axes, step 1. */
static bool last_axis_slice(const FcOp *s, int64_t *lo, int64_t *hi) {
  const FcType *x = &s->operands[0].value->type;
  const int64_t *st, *en, *sp;
  if (s->kind != FC_OP_SLICE || fc_op_attr_ints(s, FC_ATTR_STARTS, &st) != x->rank ||
      fc_op_attr_ints(s, FC_ATTR_ENDS, &en) != x->rank || fc_op_attr_ints(s, FC_ATTR_STEPS, &sp) != x->rank)
    return false;
  int last = x->rank - 1;
  for (int i = 0; i < x->rank; i++)
    if (sp[i] != 1 || (i < last && (st[i] != 0 || en[i] != x->dims[i]))) return false;
  *lo = st[last];
  *hi = en[last];
  return 0 <= *lo && *lo < *hi && *hi <= x->dims[last];
}

/* Columns [lo, hi) of a row-major constant of shape [rows, n] (a bias: rows 1, rank 1). */
static FcTensor *columns(FcModule *m, const FcTensor *t, int64_t lo, int64_t hi) {
  const FcType *ty = &t->type;
  int64_t n = ty->dims[ty->rank - 1], rows = ty->rank == 2 ? ty->dims[0] : 1;
  int64_t dims[2] = {rows, hi - lo};
  FcTensor *out = fc_tensor_new(&m->arena, fc_type_make(&m->arena, ty->dtype, ty->rank, ty->rank == 2 ? dims : dims + 1));
  size_t es = fc_dtype_size(ty->dtype), row = (size_t)(hi - lo) * es;
  for (int64_t r = 0; r < rows; r++)
    memcpy((char *)out->data + (size_t)r * row, (const char *)t->data + (size_t)(r * n + lo) * es, row);
  return out;
}

static const FcTensor *float_const(const FcValue *v) {
  const FcTensor *t = v->def && v->def->kind == FC_OP_CONSTANT ? fc_value_const(v) : NULL;
  return t && t->data && !t->type.quant && fc_dtype_is_float(t->type.dtype) ? t : NULL;
}

static FcStatus split(FcModule *m, FcOp *mm, FcOpStack *scratch, FcDiag *diag) {
  if (mm->n_operands != 2 || mm->n_results != 1 || fc_op_attr(mm, FC_ATTR_EPILOGUE) || fc_rw_is_quantised(mm))
    return FC_OK;
  const FcTensor *w = float_const(mm->operands[1].value);
  FcValue *y = &mm->results[0];
  if (!w || w->type.rank != 2 || y->type.rank < 2 || !y->first_use) return FC_OK;
  int64_t n = w->type.dims[1];
  /* an add of a constant [n] bias, the product's one use, is split with it */
  FcOp *add = y->first_use->user;
  const FcTensor *bias = NULL;
  int bias_at = -1;
  if (!y->first_use->next_use && add->kind == FC_OP_ADD && add->n_operands == 2) {
    bias_at = 1 - y->first_use->index;
    bias = float_const(add->operands[bias_at].value);
    if (bias && (bias->type.rank != 1 || bias->type.dims[0] != n || bias->type.dtype != y->type.dtype)) bias = NULL;
    if (bias) y = &add->results[0];
  }
  int slices = 0;
  for (FcUse *u = y->first_use; u; u = u->next_use) {
    int64_t lo, hi;
    if (!last_axis_slice(u->user, &lo, &hi)) return FC_OK;
    slices++;
  }
  if (slices < 2) return FC_OK;
  while (y->first_use) {
    FcOp *s = y->first_use->user;
    int64_t lo, hi;
    last_axis_slice(s, &lo, &hi);
    FcBuilder b;
    fc_rw_builder_before(&b, s, diag);
    b.loc = mm->loc;
    FcValue *part = fc_b_binary(&b, FC_OP_MATMUL, mm->operands[0].value, fc_b_const_tensor(&b, columns(m, w, lo, hi)));
    if (bias) {
      b.loc = add->loc;
      FcValue *bv = fc_b_const_tensor(&b, columns(m, bias, lo, hi));
      part = bias_at == 1 ? fc_b_binary(&b, FC_OP_ADD, part, bv) : fc_b_binary(&b, FC_OP_ADD, bv, part);
    }
    FcStatus st = fc_rw_replace_built(&b, s, part, scratch);
    if (st != FC_OK) return st;
  }
  return FC_OK;
}

FcStatus fc_pass_split_sliced_matmul(FcModule *m, FcPassContext *pc) {
  /* the matmuls first: a rewrite erases the slices, the bias add and the matmul, any of which may be the
   * next op of a walk */
  FcOpStack todo, scratch;
  fc_op_stack_init(&todo, &pc->scratch);
  fc_op_stack_init(&scratch, &m->arena);
  fc_graph_for_each_op(m->graph, op) {
    if (op->kind == FC_OP_MATMUL) fc_op_stack_push(&todo, op);
  }
  FcStatus st = FC_OK;
  for (int i = 0; st == FC_OK && i < todo.n; i++)
    if (!todo.v[i]->erased) st = split(m, todo.v[i], &scratch, pc->diag);
  return st;
}
