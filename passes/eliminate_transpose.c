/* eliminate_transpose.c — removes transposes, or moves them to where they cancel.
 *
 * Rules, applied in forward walks over the graph until a walk changes nothing:
 *   layout-free  a transpose that only moves dims of size 1 (the other dims keep their order) moves no
 *                data: it becomes a reshape, which the memory plan makes a view. PyTorch's
 *                nn.MultiheadAttention exports two per layer ([1, L, E] <-> [L, 1, E]).
 *   compose      transpose(transpose(x, p1), p2) -> transpose(x, q), q[j] = p1[p2[j]]; the identity
 *                permutation leaves x itself (canonicalize has the same rule; here it finishes what the
 *                next rule starts).
 *   sink         an element-wise op E whose operands are transposes by one permutation p (rank equal to
 *                E's), scalars (one element: they broadcast the same either way), constants (transposed
 *                here, at compile time, by the inverse of p, after padding their rank with leading 1s) or
 *                other values (which then need a transpose by the inverse of p) is rewritten as
 *                transpose(E'(untransposed operands), p). That pays when it removes more transposes than
 *                it adds: each transpose operand whose only user is E disappears, the new transpose after
 *                E' costs one, unless it will meet another transpose (E's only user is a transpose, or a
 *                chain of single-use element-wise ops with scalar, constant or p-transposed other operands
 *                that ends in one: the new transpose then sinks step by step and composes there), and each
 *                "other" operand costs one. So add(transpose(a, p), transpose(b, p)) becomes
 *                transpose(add(a, b), p), and transpose(max(mul(transpose(x, p), c), 0), inverse p)
 *                becomes max(mul(x, c'), 0).
 * Element-wise ops keep their attributes (cast, isinf, mod): their meaning does not depend on the
 * position of an element. Constants are permuted directly (a strided copy of their bytes), so the pass
 * does not rely on fold running after it.
 */
#include "passes.h"
#include "rewrite.h"

#include <string.h>

enum {
  MAX_WALKS = 16,  /* forward walks until nothing changes (each rewrite removes a transpose) */
  MAX_CHAIN = 64,  /* element-wise ops followed from a sink candidate towards a transpose */
};

typedef struct Elim {
  FcModule *m;
  FcDiag *diag;
  FcOpStack scratch;
} Elim;

static const int64_t *perm_of(const FcOp *t, int rank) {
  const int64_t *p;
  return fc_op_attr_ints(t, FC_ATTR_PERM, &p) == rank ? p : NULL;
}

/* ---- layout-free and compose ------------------------------------------------------------------------ */

static bool layout_free(const FcOp *t) {
  const FcType *xt = &t->operands[0].value->type;
  const int64_t *p = perm_of(t, xt->rank);
  if (!p) return false;
  int64_t last = -1;
  for (int j = 0; j < xt->rank; j++) {
    if (xt->dims[p[j]] == 1) continue;
    if (p[j] < last) return false;
    last = p[j];
  }
  return true;
}

static FcStatus rewrite_transpose(Elim *e, FcOp *t, bool *changed) {
  FcValue *x = t->operands[0].value;
  const FcType *rt = &t->results[0].type;
  FcOp *inner = x->def;
  if (inner && inner->kind == FC_OP_TRANSPOSE) {
    const int64_t *p1 = perm_of(inner, rt->rank), *p2 = perm_of(t, rt->rank);
    if (!p1 || !p2 || rt->rank > FC_DEFAULT_MAX_RANK) return FC_OK;
    int64_t q[FC_DEFAULT_MAX_RANK];
    for (int j = 0; j < rt->rank; j++) q[j] = p1[p2[j]];
    fc_op_set_attr(t, FC_A_INTS(PERM, q, rt->rank));
    fc_op_set_operand(t, 0, inner->operands[0].value);
    fc_rw_erase_if_dead(inner, &e->scratch);
    *changed = true;
    x = t->operands[0].value;
  }
  if (!layout_free(t)) return FC_OK;
  FcValue *y = x;
  if (!fc_type_equal(&x->type, rt)) {
    FcBuilder b;
    fc_builder_init(&b, t->graph, e->diag);
    b.before = t;
    b.loc = t->loc;
    y = fc_b_reshape(&b, x, rt->rank, rt->dims);
    if (fc_b_status(&b) != FC_OK) return fc_b_status(&b);
  }
  fc_rw_replace_op(t, &y, &e->scratch);
  *changed = true;
  return FC_OK;
}

/* ---- sink ----------------------------------------------------------------------------------------------- */

typedef enum Kind { OP_TRANSPOSED, OP_SCALAR, OP_CONST, OP_OTHER } Kind;

static int64_t numel_of(const FcValue *v) {
  int64_t n;
  return fc_type_numel(&v->type, &n) ? n : -1;
}

/* Transposes constant c (rank <= r, padded with leading 1s to rank r) by perm q: result dim k is dim q[k]
 * of the padded input. */
static FcTensor *permute_const(FcArena *a, const FcTensor *c, const int64_t *q, int r) {
  int64_t in_dims[FC_DEFAULT_MAX_RANK], out_dims[FC_DEFAULT_MAX_RANK], in_st[FC_DEFAULT_MAX_RANK];
  int lead = r - c->type.rank;
  for (int i = 0; i < r; i++) in_dims[i] = i < lead ? 1 : c->type.dims[i - lead];
  int64_t s = 1;
  for (int i = r - 1; i >= 0; i--) {
    in_st[i] = s;
    s *= in_dims[i]; /* a verified constant's element count fits int64 */
  }
  for (int k = 0; k < r; k++) out_dims[k] = in_dims[q[k]];
  FcTensor *t = fc_tensor_new(a, fc_type_make(a, c->type.dtype, r, out_dims));
  size_t es = fc_dtype_size(c->type.dtype);
  int64_t n = s, idx[FC_DEFAULT_MAX_RANK] = {0};
  const char *src = c->data;
  char *dst = (char *)t->data;
  for (int64_t o = 0; o < n; o++) {
    int64_t off = 0;
    for (int k = 0; k < r; k++) off += idx[k] * in_st[q[k]];
    memcpy(dst + (size_t)o * es, src + (size_t)off * es, es);
    for (int k = r - 1; k >= 0; k--) {
      if (++idx[k] < out_dims[k]) break;
      idx[k] = 0;
    }
  }
  return t;
}

/* True when v's only user is a transpose, or an element-wise op whose other operands are scalars,
 * constants or transposes by p and whose result continues such a chain: a transpose sunk below v then
 * travels down the chain (each step pays for itself) and composes with the transpose at its end. */
static bool chain_ends_in_transpose(const FcValue *v, const int64_t *p, int r) {
  for (int depth = 0; depth < MAX_CHAIN; depth++) {
    if (fc_value_num_uses(v) != 1) return false;
    const FcOp *u = v->first_use->user;
    if (u->kind == FC_OP_TRANSPOSE) return true;
    if (!(fc_op_info(u->kind)->flags & FC_OPF_ELEMENTWISE) || u->n_results != 1 || u->results[0].type.rank != r)
      return false;
    for (int i = 0; i < u->n_operands; i++) {
      const FcValue *w = u->operands[i].value;
      if (w == v) continue;
      const int64_t *pw;
      bool ok = w && w->type.rank <= r && (numel_of(w) == 1 || fc_value_const(w));
      if (!ok && w && w->def && w->def->kind == FC_OP_TRANSPOSE && w->type.rank == r && (pw = perm_of(w->def, r)))
        ok = memcmp(pw, p, (size_t)r * sizeof *p) == 0;
      if (!ok) return false;
    }
    v = &u->results[0];
  }
  return false;
}

static FcStatus sink(Elim *e, FcOp *op, bool *changed) {
  const FcType *rt = &op->results[0].type;
  int r = rt->rank, n = op->n_operands;
  if (r < 2 || r > FC_DEFAULT_MAX_RANK || n > 3) return FC_OK;
  const int64_t *p = NULL;
  Kind kind[3];
  for (int i = 0; i < n; i++) {
    FcValue *v = op->operands[i].value;
    if (!v) return FC_OK;
    FcOp *d = v->def;
    const int64_t *pi;
    if (d && d->kind == FC_OP_TRANSPOSE && v->type.rank == r && (pi = perm_of(d, r)) && (!p || !memcmp(p, pi, (size_t)r * sizeof *p))) {
      p = pi;
      kind[i] = OP_TRANSPOSED;
    } else if (numel_of(v) == 1 && v->type.rank <= r) {
      kind[i] = OP_SCALAR;
    } else if (fc_value_const(v) && v->type.rank <= r) {
      kind[i] = OP_CONST;
    } else if (v->type.rank == r) {
      kind[i] = OP_OTHER;
    } else {
      return FC_OK;
    }
  }
  if (!p) return FC_OK;
  /* profit: transposes removed minus transposes added */
  int gain = -1;
  const FcValue *res = &op->results[0];
  if (chain_ends_in_transpose(res, p, r)) gain++;
  for (int i = 0; i < n; i++) {
    FcValue *v = op->operands[i].value;
    if (kind[i] == OP_OTHER) gain--;
    if (kind[i] != OP_TRANSPOSED) continue;
    bool first = true, only_e = true;
    for (int j = 0; j < i; j++) first &= op->operands[j].value != v;
    for (const FcUse *u = v->first_use; u; u = u->next_use) only_e &= u->user == op;
    if (first && only_e) gain++;
  }
  if (gain <= 0) return FC_OK;

  int64_t pinv[FC_DEFAULT_MAX_RANK], pc[FC_DEFAULT_MAX_RANK];
  for (int j = 0; j < r; j++) pinv[p[j]] = j;
  memcpy(pc, p, (size_t)r * sizeof *p); /* p lives in an attribute of an op that may be erased below */
  FcBuilder b;
  fc_builder_init(&b, op->graph, e->diag);
  b.before = op;
  b.loc = op->loc;
  FcValue *ops[3];
  for (int i = 0; i < n; i++) {
    FcValue *v = op->operands[i].value;
    switch (kind[i]) {
    case OP_TRANSPOSED: ops[i] = v->def->operands[0].value; break;
    case OP_SCALAR: ops[i] = v; break;
    case OP_CONST: ops[i] = fc_b_const_tensor(&b, permute_const(&e->m->arena, fc_value_const(v), pinv, r)); break;
    case OP_OTHER: ops[i] = fc_b_transpose(&b, v, pinv); break;
    }
  }
  FcOp *e2 = fc_b_op(&b, op->kind, ops, n, 1, op->attrs, op->n_attrs);
  FcValue *y = e2 ? fc_b_transpose(&b, &e2->results[0], pc) : NULL;
  if (fc_b_status(&b) != FC_OK) return fc_b_status(&b);
  fc_rw_replace_op(op, &y, &e->scratch);
  *changed = true;
  return FC_OK;
}

FcStatus fc_pass_eliminate_transpose(FcModule *m, FcPassContext *pc) {
  FcDiag *diag = pc->diag;
  Elim e = {.m = m, .diag = diag};
  fc_op_stack_init(&e.scratch, &m->arena);
  for (int walk = 0; walk < MAX_WALKS; walk++) {
    bool any = false;
    fc_graph_for_each_op_safe(m->graph, op, next) {
      if (op->erased || op->n_results != 1) continue;
      bool changed = false;
      FcStatus st = FC_OK;
      if (op->kind == FC_OP_TRANSPOSE) st = rewrite_transpose(&e, op, &changed);
      else if ((fc_op_info(op->kind)->flags & FC_OPF_ELEMENTWISE) && op->kind != FC_OP_FUSED) st = sink(&e, op, &changed);
      if (st != FC_OK) return st;
      any |= changed;
    }
    if (!any) break;
  }
  return FC_OK;
}
