/* rewrite.c — helpers shared by the rewriting passes: a scratch op stack, dead-op erasure that follows
 * operand chains, replace-and-erase, constant materialisation, and slicing a conv's kernel taps.
 *
 * Replacing an op carries its annotations over to the ops that now define its values, as far as each
 * annotation's policy says (annots.def: SBP, placement, quantisation and pruning describe the values,
 * which the replacement computes too; other dialects' annotations are dropped). An annotation the
 * replacement already has is left as it is, so CSE keeps the surviving op's own.
 *
 * Erasure is iterative (an explicit stack, not recursion) because an op chain can be as long as the
 * model; a recursive walk would overflow the C stack on a deep graph.
 */
#include "rewrite.h"

#include <string.h>

void fc_op_stack_init(FcOpStack *s, FcArena *arena) {
  memset(s, 0, sizeof *s);
  s->arena = arena;
}

void fc_op_stack_push(FcOpStack *s, FcOp *op) {
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 64;
    FcOp **v = FC_NEW_ARRAY(s->arena, FcOp *, (size_t)cap);
    if (s->n) memcpy(v, s->v, (size_t)s->n * sizeof *v);
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = op;
}

bool fc_rw_removable(const FcOp *op) {
  unsigned f = fc_op_info(op->kind)->flags;
  return (f & FC_OPF_PURE) && !(f & FC_OPF_TERMINATOR);
}

static bool results_unused(const FcOp *op) {
  for (int i = 0; i < op->n_results; i++)
    if (fc_value_has_uses(&op->results[i])) return false;
  return true;
}

int fc_rw_erase_if_dead(FcOp *op, FcOpStack *scratch) {
  int erased = 0, base = scratch->n;
  fc_op_stack_push(scratch, op);
  while (scratch->n > base) {
    FcOp *o = scratch->v[--scratch->n];
    if (o->erased || !fc_rw_removable(o) || !results_unused(o)) continue;
    for (int i = 0; i < o->n_operands; i++) {
      FcValue *v = o->operands[i].value;
      if (v && v->def) fc_op_stack_push(scratch, v->def);
    }
    fc_op_erase(o);
    erased++;
  }
  return erased;
}

void fc_rw_keep_annots(const FcOp *from, FcValue *const *with, int n) {
  if (from->annots.n == 0) return;
  for (int i = 0; i < n; i++) {
    FcOp *to = with[i] ? with[i]->def : NULL;
    if (to && to != from) fc_annots_copy_kept(&to->graph->module->arena, &to->annots, &from->annots);
  }
}

void fc_rw_replace_op(FcOp *op, FcValue *const *with, FcOpStack *scratch) {
  for (int i = 0; i < op->n_results; i++) {
    FC_ASSERT(with[i] && fc_type_equal(&with[i]->type, &op->results[i].type));
    fc_value_replace_all_uses(&op->results[i], with[i]);
  }
  fc_rw_keep_annots(op, with, op->n_results);
  fc_rw_erase_if_dead(op, scratch);
}

bool fc_rw_is_quantised(const FcOp *op) {
  if (fc_op_attr(op, FC_ATTR_QTYPE)) return true;
  for (int i = 0; i < op->n_operands; i++)
    if (op->operands[i].value && op->operands[i].value->type.quant) return true;
  for (int i = 0; i < op->n_results; i++)
    if (op->results[i].type.quant) return true;
  return false;
}

void fc_rw_builder_before(FcBuilder *b, FcOp *op, FcDiag *diag) {
  fc_builder_init(b, op->graph, diag);
  b->before = op;
  b->loc = op->loc;
}

FcStatus fc_rw_replace_built(FcBuilder *b, FcOp *op, FcValue *y, FcOpStack *scratch) {
  if (fc_b_status(b) != FC_OK) return fc_b_status(b);
  fc_rw_replace_op(op, &y, scratch);
  return FC_OK;
}

FcValue *fc_rw_make_constant(FcOp *pos, const FcTensor *t, const char *loc, FcDiag *diag) {
  FcBuilder b;
  fc_builder_init(&b, pos->graph, diag);
  b.before = pos;
  b.loc = loc;
  return fc_b_const_tensor(&b, t);
}

FcStatus fc_rw_op_error(FcDiag *diag, const FcOp *op, FcStatus st, const char *msg) {
  if (strncmp(msg, "node '", 6) == 0) return fc_error(diag, st, "%s", msg);
  const char *mn = fc_op_info(op->kind)->name;
  size_t n = strlen(mn);
  if (strncmp(msg, mn, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ') msg += n + 2;
  return fc_error_node(diag, st, fc_op_name(op), mn, "%s", msg);
}

void fc_rw_slice_taps(const FcTensor *w, FcTensor *t, int n, const int64_t *lo) {
  size_t esize = fc_dtype_size(w->type.dtype);
  const int64_t *K = w->type.dims + 2, *Kn = t->type.dims + 2;
  int64_t outer = w->type.dims[0] * w->type.dims[1], src_taps = 1, dst_taps = 1;
  for (int i = 0; i < n; i++) src_taps *= K[i], dst_taps *= Kn[i];
  const char *src = w->data;
  char *dst = (char *)t->data;
  int64_t idx[FC_DEFAULT_MAX_RANK];
  for (int64_t j = 0; j < dst_taps; j++) {
    int64_t r = j, so = 0;
    for (int i = n - 1; i >= 0; i--) idx[i] = r % Kn[i], r /= Kn[i];
    for (int i = 0; i < n; i++) so = so * K[i] + idx[i] + lo[i];
    for (int64_t q = 0; q < outer; q++)
      memcpy(dst + (size_t)(q * dst_taps + j) * esize, src + (size_t)(q * src_taps + so) * esize, esize);
  }
}

FcValue *fc_rw_to_blocked(FcBuilder *b, FcValue *x, int64_t B) {
  if (!x) return NULL;
  const int64_t *d = x->type.dims;
  int64_t split[5] = {d[0], d[1] / B, B, d[2], d[3]}, perm[5] = {0, 1, 3, 4, 2};
  if (d[2] * d[3] == 1) {
    int64_t blocked[5] = {d[0], d[1] / B, 1, 1, B};
    return fc_b_reshape(b, x, 5, blocked);
  }
  return fc_b_transpose(b, fc_b_reshape(b, x, 5, split), perm);
}

FcValue *fc_rw_from_blocked(FcBuilder *b, FcValue *y) {
  if (!y) return NULL;
  const int64_t *d = y->type.dims;
  int64_t perm[5] = {0, 1, 4, 2, 3}, plain[4] = {d[0], d[1] * d[4], d[2], d[3]};
  return fc_b_reshape(b, d[2] * d[3] == 1 ? y : fc_b_transpose(b, y, perm), 4, plain);
}

FcValue *fc_rw_blocked_source(FcValue *v, int64_t B) {
  FcOp *r = v->def, *t = r && r->kind == FC_OP_RESHAPE ? r->operands[0].value->def : NULL;
  if (!t || t->kind != FC_OP_TRANSPOSE) return NULL;
  FcValue *yb = t->operands[0].value;
  const int64_t *p;
  if (yb->type.rank != 5 || yb->type.dims[4] != B || fc_op_attr_ints(t, FC_ATTR_PERM, &p) != 5) return NULL;
  static const int64_t inverse[5] = {0, 1, 4, 2, 3};
  for (int i = 0; i < 5; i++)
    if (p[i] != inverse[i]) return NULL;
  return v->type.rank == 4 ? yb : NULL;
}
