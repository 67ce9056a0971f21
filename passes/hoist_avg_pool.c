/* hoist_avg_pool.c — moves an average pool above the 1×1 convolution that feeds it, so that the conv
 * runs on the pooled, smaller map.
 *
 * A 1×1 conv with stride 1, no padding and no epilogue is, at each pixel, the same affine map of the
 * channels: y[p] = W·x[p] + b. An average pool is, per channel, a weighted sum of pixels whose weights
 * add up to 1 in every window. The two commute: avg(W·x + b) = W·avg(x) + b, so
 *     avg_pool(conv1x1(x)) = conv1x1(avg_pool(x))
 * with the same attributes on both sides. DenseNet's transition layers (conv 1×1 halving the channels,
 * then a 2×2 stride-2 average pool) then do a quarter of their multiplications, and the pool reads the
 * conv's input instead of its output (twice the channels there: a pass over memory against three
 * quarters of a GEMM).
 *
 * The window weights add up to 1 when the pool does not count padding (count_include_pad = 0: each
 * window divides by the elements it holds), or when there is no padding and no ceil-mode overhang.
 * Only f32 2-D convs whose result nothing else reads are rewritten, and only when the pool makes the map
 * smaller (else nothing is saved).
 */
#include "passes.h"
#include "rewrite.h"

/* All n values of the int-list attribute name are v (absent: true). */
static bool ints_all(const FcOp *op, FcAttrName name, int64_t v) {
  const int64_t *a;
  int n = fc_op_attr_ints(op, name, &a);
  for (int i = 0; i < n; i++)
    if (a[i] != v) return false;
  return true;
}

/* conv is a 1×1, stride-1, unpadded, undilated, ungrouped f32 conv with no epilogue: an affine map of the
 * channels at every pixel. */
static bool is_pointwise_affine(const FcOp *conv) {
  if (conv->kind != FC_OP_CONV || conv->n_operands > 3 || conv->n_results != 1 || fc_op_attr(conv, FC_ATTR_EPILOGUE) ||
      fc_rw_is_quantised(conv))
    return false;
  const FcType *x = &conv->operands[0].value->type, *w = &conv->operands[1].value->type;
  return x->dtype == FC_DT_F32 && x->rank == 4 && w->rank == 4 && w->dims[2] == 1 && w->dims[3] == 1 &&
         fc_op_attr_int(conv, FC_ATTR_GROUP, 1) == 1 && ints_all(conv, FC_ATTR_STRIDES, 1) &&
         ints_all(conv, FC_ATTR_DILATIONS, 1) && ints_all(conv, FC_ATTR_PADS, 0);
}

/* pool is a 2-D average pool whose window weights add up to 1 and that makes its input smaller. */
static bool averages(const FcOp *pool) {
  if (pool->kind != FC_OP_AVG_POOL || pool->n_results != 1 || pool->operands[0].value->type.rank != 4) return false;
  bool exact = fc_op_attr_int(pool, FC_ATTR_COUNT_INCLUDE_PAD, 0) == 0 ||
               (ints_all(pool, FC_ATTR_PADS, 0) && fc_op_attr_int(pool, FC_ATTR_CEIL_MODE, 0) == 0);
  const FcType *x = &pool->operands[0].value->type, *y = &pool->results[0].type;
  return exact && y->dims[2] * y->dims[3] < x->dims[2] * x->dims[3];
}

static FcStatus hoist(FcOp *pool, FcOpStack *scratch, FcDiag *diag) {
  FcValue *c = pool->operands[0].value;
  FcOp *conv = c->def;
  if (!averages(pool) || !conv || !is_pointwise_affine(conv) || c->first_use->next_use) return FC_OK;
  FcBuilder b;
  fc_rw_builder_before(&b, pool, diag);
  FcValue *ops[3];
  for (int i = 0; i < conv->n_operands; i++) ops[i] = conv->operands[i].value;
  ops[0] = fc_b_op1(&b, FC_OP_AVG_POOL, ops, 1, pool->attrs, pool->n_attrs);
  b.loc = conv->loc;
  FcValue *y = fc_b_op1(&b, FC_OP_CONV, ops, conv->n_operands, conv->attrs, conv->n_attrs);
  return fc_rw_replace_built(&b, pool, y, scratch);
}

FcStatus fc_pass_hoist_avg_pool(FcModule *m, FcPassContext *pc) {
  FcOpStack scratch;
  fc_op_stack_init(&scratch, &m->arena);
  FcStatus st = FC_OK;
  fc_graph_for_each_op_safe(m->graph, op, next) {
    if (st == FC_OK && op->kind == FC_OP_AVG_POOL) st = hoist(op, &scratch, pc->diag);
  }
  return st;
}
