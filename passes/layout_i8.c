/* layout_i8.c — puts the quantised depthwise-separable blocks of small maps in the blocked layout NCHW8c,
 * bytes, where the target's integer kernels are faster that way (fc_target_i8_blocked_pixels: AVX2 whose
 * byte dot is vpmaddubsw), with layout changes only where a region is left from a 1x1 conv.
 *
 * In NCHW the integer depthwise kernel that these maps take (codegen/kernel_dwconv_i8_channels.c: 8 channels
 * in the lanes of a vector) transposes each block of 8 channel planes into [pixel][8 channels] bytes and its
 * results back; in NCHW8c a block's plane is already that, so it copies rows and stores its results as they
 * are. A 1x1 conv over NCHW8c bytes is the integer GEMM of each image's pixels by the weights
 * (codegen/kernel_matmul_i8.c's blocked form): a pixel's 4 channel bytes are one broadcast quad, and 4 pixels'
 * results for a block of 8 output channels are one 32-byte store.
 *
 * passes/layout.c's blocked layout with B = 8 (fc_rw_to_blocked, fc_rw_from_blocked). Converted, in op
 * order, ops whose result map has at most the target's pixels:
 *   - a quantised depthwise conv (group = C = M, C % 8 == 0, a u8/i8 result, no epilogue) within its
 *     kernel's limits becomes a quantised flow.conv_blocked (ops.def), reading the blocked form of its
 *     input where one exists and the NCHW input itself otherwise (the kernel transposes it in: a region's
 *     entry costs no layout change);
 *   - a quantised 1x1 conv (stride 1, no padding, group 1, C and M multiples of 8, no epilogue) whose input
 *     has a blocked form becomes a quantised 1x1 flow.conv_blocked;
 *   - an element-wise op or scast whose image operands (the result's shape) all have blocked forms runs on
 *     those (a residual add's dequantize, add and quantize), its one-element operands as they are.
 * Which of them (choose): a region is left only from 1x1 convs, where the result's layout changes back — a
 * block's projection, the block's smallest tensor. Ops whose results something outside reads are excluded
 * otherwise (a depthwise conv read by a squeeze-and-excitation's pool, element-wise glue read by a float op
 * or a model output, a 1x1 conv that no converted op reads and that does not narrow the channels), and what
 * they fed is chosen again without them, until nothing changes.
 * Each converted op's result is fc_rw_from_blocked(op'(...)); the next converted op finds the blocked value
 * under it, and dce removes the layout changes that nothing reads. The rewrite is exact: the kernels compute
 * the same integers as in NCHW.
 */
#include "passes.h"
#include "rewrite.h"

#include <string.h>

enum {
  B = 8,               /* channels a block: the kernels' i32 lanes */
  DW_MAX_TAPS = 81,    /* kernel_dwconv_i8_channels.c: its weight pairs' bound, */
  DW_MAX_ROW = 28,     /* the widest output row at stride 1 (any width at stride 2), */
  DW_MIN_ROW = 4,      /* rows of 4 output pixels a step, planes of 8 pixels, */
  DW_MAX_SPAN = 32,    /* and pads and dilated spans kept small (its scratch) */
};

typedef struct LayoutI8 {
  FcModule *m;
  FcDiag *diag;
  FcOpStack scratch;
  bool *blocked;       /* by value id: the value will have a blocked form */
  bool *chosen;        /* by op id: the op is converted */
  uint32_t n_ops, n_values; /* the maps' sizes */
  int64_t max_pixels;
} LayoutI8;

static bool conv_attrs(const FcOp *op, const int64_t **s, const int64_t **d, const int64_t **p) {
  return fc_op_attr_ints(op, FC_ATTR_STRIDES, s) == 2 && fc_op_attr_ints(op, FC_ATTR_DILATIONS, d) == 2 &&
         fc_op_attr_ints(op, FC_ATTR_PADS, p) == 4;
}

/* A quantised 2-D conv with a per-tensor 8-bit result and no epilogue, constant weights and bias, on a map of
 * at most the target's pixels, C and M multiples of the block. */
static bool blockable_conv(const LayoutI8 *l, const FcOp *op) {
  if (op->kind != FC_OP_CONV || op->n_results != 1 || op->n_operands < 2 || op->n_operands > 3) return false;
  const FcType *x = &op->operands[0].value->type, *y = &op->results[0].type;
  if (x->rank != 4 || !x->quant || x->quant->axis >= 0 || !y->quant || y->quant->axis >= 0 ||
      !fc_dtype_is_8bit(y->dtype) || fc_op_attr(op, FC_ATTR_EPILOGUE) || fc_op_attr(op, FC_ATTR_TO) ||
      x->dims[1] % B || y->dims[1] % B || y->dims[2] * y->dims[3] > l->max_pixels)
    return false;
  const FcTensor *w = fc_value_const(op->operands[1].value);
  if (!w || !w->data || !w->type.quant) return false;
  return op->n_operands < 3 || fc_value_const(op->operands[2].value);
}

static bool is_depthwise(const LayoutI8 *l, const FcOp *op) {
  if (!blockable_conv(l, op)) return false;
  const FcType *x = &op->operands[0].value->type, *w = &op->operands[1].value->type, *y = &op->results[0].type;
  const int64_t *s, *d, *p;
  int64_t C = x->dims[1];
  if (!conv_attrs(op, &s, &d, &p) || fc_op_attr_int(op, FC_ATTR_GROUP, 1) != C || w->dims[0] != C ||
      w->dims[1] != 1)
    return false;
  if (s[0] < 1 || s[1] < 1 || s[1] > 2 || w->dims[2] * w->dims[3] > DW_MAX_TAPS || y->dims[3] < DW_MIN_ROW ||
      x->dims[3] < DW_MIN_ROW || x->dims[2] * x->dims[3] < B || y->dims[2] * y->dims[3] < B ||
      (s[1] == 1 && y->dims[3] > DW_MAX_ROW))
    return false;
  for (int i = 0; i < 2; i++)
    if (p[i] < 0 || p[i] > DW_MAX_SPAN || p[2 + i] < 0 || p[2 + i] > DW_MAX_SPAN || d[i] < 1 ||
        (w->dims[2 + i] - 1) * d[i] > DW_MAX_SPAN)
      return false;
  return true;
}

static bool is_pointwise(const LayoutI8 *l, const FcOp *op) {
  if (!blockable_conv(l, op)) return false;
  const FcType *w = &op->operands[1].value->type;
  const int64_t *s, *d, *p;
  if (!conv_attrs(op, &s, &d, &p) || fc_op_attr_int(op, FC_ATTR_GROUP, 1) != 1 || w->dims[2] != 1 ||
      w->dims[3] != 1 || s[0] != 1 || s[1] != 1)
    return false;
  for (int i = 0; i < 4; i++)
    if (p[i] != 0) return false;
  return true;
}

/* An operand of element-wise op `op`: 1, an image (the result's shape); 0, of one element (broadcast the same
 * in either layout); -1, neither. */
static int operand_role(const FcOp *op, const FcValue *v) {
  const FcType *t = &v->type, *y = &op->results[0].type;
  int64_t n;
  if (fc_type_numel(t, &n) && n == 1 && t->rank <= 4) return 0;
  if (t->rank != 4) return -1;
  for (int i = 0; i < 4; i++)
    if (t->dims[i] != y->dims[i]) return -1;
  return 1;
}

/* An element-wise op or scast on 4-D images whose images all have blocked forms. */
static bool is_carrier(const LayoutI8 *l, const FcOp *op) {
  if (op->n_results != 1 || op->results[0].type.rank != 4 || op->regions || op->kind == FC_OP_FUSED ||
      (op->kind != FC_OP_SCAST && !(fc_op_info(op->kind)->flags & FC_OPF_ELEMENTWISE)))
    return false;
  int images = 0;
  for (int i = 0; i < op->n_operands; i++) {
    const FcValue *v = op->operands[i].value;
    int role = operand_role(op, v);
    if (role < 0 || (role == 1 && !l->blocked[v->id])) return false;
    images += role;
  }
  return images > 0;
}

static bool read_by_chosen(const LayoutI8 *l, const FcValue *v, bool all) {
  for (FcUse *u = v->first_use; u; u = u->next_use)
    if (l->chosen[u->user->id] != all) return !all;
  return all;
}

/* Marks the ops to convert (the top comment): forwards, the convs and the carriers whose inputs are marked,
 * excluded ops left out; then backwards, every marked op whose result leaves the region other than from a 1x1
 * conv is excluded, and the marking starts again while that excludes any. */
static void choose(LayoutI8 *l, bool *excluded) {
  FcGraph *g = l->m->graph;
  for (bool again = true; again;) {
    again = false;
    memset(l->chosen, 0, (size_t)l->n_ops);
    memset(l->blocked, 0, (size_t)l->n_values);
    fc_graph_for_each_op(g, op) {
      if (excluded[op->id]) continue;
      bool dw = is_depthwise(l, op);
      bool pw = !dw && is_pointwise(l, op) && l->blocked[op->operands[0].value->id];
      if (dw || pw || is_carrier(l, op)) l->chosen[op->id] = l->blocked[op->results[0].id] = true;
    }
    for (FcOp *op = g->last; op; op = op->prev) {
      if (!l->chosen[op->id] || read_by_chosen(l, &op->results[0], true)) continue;
      const FcType *x = &op->operands[0].value->type, *y = &op->results[0].type;
      bool conv = op->kind == FC_OP_CONV, dw = conv && fc_op_attr_int(op, FC_ATTR_GROUP, 1) > 1;
      bool none = !read_by_chosen(l, &op->results[0], false);
      if (!conv || dw || (none && y->dims[1] >= x->dims[1])) excluded[op->id] = again = true;
    }
  }
}

static FcValue *blocked_of(FcBuilder *b, FcValue *v) {
  FcValue *src = fc_rw_blocked_source(v, B);
  return src ? src : fc_rw_to_blocked(b, v, B);
}

/* A conv as a quantised conv_blocked (block 8): x (blocked, or plain NCHW where a depthwise conv reads it),
 * its weights and bias (zeros where it has none: conv_blocked requires one) and attributes. */
static FcStatus rewrite_conv(LayoutI8 *l, FcOp *op, bool depthwise) {
  FcBuilder b;
  fc_rw_builder_before(&b, op, l->diag);
  FcValue *x = op->operands[0].value;
  int64_t M = op->results[0].type.dims[1];
  FcValue *ops[3] = {depthwise && !fc_rw_blocked_source(x, B) ? x : blocked_of(&b, x), op->operands[1].value,
                     op->n_operands > 2 ? op->operands[2].value : NULL};
  if (!ops[2]) {
    FcArena *a = &l->m->arena;
    FcTensor *t = fc_tensor_new(a, fc_type_make(a, FC_DT_I32, 1, &M));
    memset((void *)t->data, 0, (size_t)t->nbytes);
    ops[2] = fc_b_const_tensor(&b, t);
  }
  FcAttr attrs[6];
  int na = 0;
  attrs[na++] = FC_A_INT(BLOCK, B);
  attrs[na++] = FC_A_INT(GROUP, fc_op_attr_int(op, FC_ATTR_GROUP, 1));
  const FcAttrName copied[4] = {FC_ATTR_STRIDES, FC_ATTR_PADS, FC_ATTR_DILATIONS, FC_ATTR_QTYPE};
  for (int i = 0; i < 4; i++) attrs[na++] = *fc_op_attr(op, copied[i]);
  FcValue *y = fc_b_op1(&b, FC_OP_CONV_BLOCKED, ops, 3, attrs, na);
  return fc_rw_replace_built(&b, op, fc_rw_from_blocked(&b, y), &l->scratch);
}

static FcStatus rewrite_carrier(LayoutI8 *l, FcOp *op) {
  FcBuilder b;
  fc_rw_builder_before(&b, op, l->diag);
  FcValue **ops = FC_NEW_ARRAY(&l->m->arena, FcValue *, (size_t)op->n_operands);
  for (int i = 0; i < op->n_operands; i++) {
    FcValue *v = op->operands[i].value;
    ops[i] = operand_role(op, v) == 1 ? blocked_of(&b, v) : v;
  }
  FcValue *y = fc_b_op1(&b, op->kind, ops, op->n_operands, op->attrs, op->n_attrs);
  return fc_rw_replace_built(&b, op, fc_rw_from_blocked(&b, y), &l->scratch);
}

FcStatus fc_pass_layout_i8(FcModule *m, FcPassContext *pc) {
  /* loop and if bodies keep NCHW, as in passes/layout.c */
  if (m->graph->parent) return FC_OK;
  LayoutI8 l = {.m = m, .diag = pc->diag, .max_pixels = fc_target_i8_blocked_pixels(pc->target)};
  if (l.max_pixels <= 0) return FC_OK;
  uint32_t max_op = 0, n_ids = m->graph->next_value_id;
  fc_graph_for_each_op(m->graph, op) if (op->id > max_op) max_op = op->id;
  l.n_ops = max_op + 1, l.n_values = n_ids + 1;
  l.blocked = FC_NEW_ARRAY(&pc->scratch, bool, l.n_values);
  l.chosen = FC_NEW_ARRAY(&pc->scratch, bool, l.n_ops);
  bool *excluded = FC_NEW_ARRAY(&pc->scratch, bool, l.n_ops);
  memset(excluded, 0, l.n_ops);
  choose(&l, excluded);
  FcOpStack todo;
  fc_op_stack_init(&todo, &pc->scratch);
  fc_graph_for_each_op(m->graph, op) if (l.chosen[op->id]) fc_op_stack_push(&todo, op);
  fc_op_stack_init(&l.scratch, &m->arena);
  FcStatus st = FC_OK;
  for (int i = 0; i < todo.n && st == FC_OK; i++) {
    FcOp *op = todo.v[i];
    st = op->kind != FC_OP_CONV ? rewrite_carrier(&l, op)
                                : rewrite_conv(&l, op, fc_op_attr_int(op, FC_ATTR_GROUP, 1) > 1);
  }
  return st;
}
