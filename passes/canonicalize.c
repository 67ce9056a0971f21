/* canonicalize.c — local rewrites to a normal form.
 *
 * Patterns, each keeping every result type identical (checked before a value is replaced):
 *   identities   reshape/broadcast to the operand's own type, transpose by the identity perm, cast to
 *                the operand's dtype, slice taking every element in order, pad with all-zero pads,
 *                concat of one operand, neg(neg x), not(not x), bitwise_not(bitwise_not x)  -> x
 *   chains       reshape(reshape x) -> reshape x;  broadcast(broadcast x) -> broadcast x (NumPy
 *                broadcasting composes);  transpose(transpose(x, p1), p2) -> transpose(x, q) with
 *                q[j] = p1[p2[j]] (then the identity rule removes it if q is the identity);
 *                cast(cast(x, T1), T2) -> cast(x, T2) when x -> T1 is exact for every value of x's
 *                dtype (widening: i8->i32, u8->i16, i16->f32, f16->f32, bool->anything, ...), since
 *                then the second cast sees the very value the first one read
 *   constants    reshape of a constant with data -> a constant of the new shape sharing the bytes
 *                (no copy, so this applies to weights of any size, unlike fold's bounded results)
 *   normal form  a commutative binary op with a constant first and a non-constant second operand gets
 *                its operands swapped, so later patterns and CSE only look at the second operand
 *
 * Driver: forward walks over the graph, applying patterns to each op until none matches, until a walk
 * changes nothing. Producers come before users, so most chains collapse in the first walk; the second
 * confirms the fixpoint. Ops that a rewrite leaves unused (the inner reshape of a chain, an operand
 * constant) are erased at once; ops that were dead before are left to dce.
 */
#include "passes.h"
#include "rewrite.h"

#include <string.h>

/* Safety nets against a pattern set that stops converging: each pattern shortens a chain, removes an
 * op or moves a constant right, so real inputs stop long before these. */
enum { MAX_WALKS = 32, MAX_REWRITES_PER_OP = 64 };

typedef struct Canon {
  FcModule *m;
  FcDiag *diag;
  FcOpStack scratch;
} Canon;

static FcOp *def_of(const FcOp *op, int i, FcOpKind kind) {
  FcValue *v = op->operands[i].value;
  return v && v->def && v->def->kind == kind && !v->def->erased ? v->def : NULL;
}

static bool is_constant(const FcValue *v) { return v->def && v->def->kind == FC_OP_CONSTANT; }

static bool identity_perm(const int64_t *p, int n) {
  for (int i = 0; i < n; i++)
    if (p[i] != i) return false;
  return true;
}

/* The value that `op` merely passes through unchanged, or NULL. */
static FcValue *identity_of(const FcOp *op) {
  if (op->n_results != 1 || op->n_operands < 1) return NULL;
  FcValue *x = op->operands[0].value;
  const FcType *t = &x->type;
  const int64_t *a, *b, *s;
  int n;
  switch (op->kind) {
  case FC_OP_RESHAPE:
  case FC_OP_BROADCAST:
  case FC_OP_CAST: return x;
  case FC_OP_TRANSPOSE:
    n = fc_op_attr_ints(op, FC_ATTR_PERM, &a);
    return n == t->rank && identity_perm(a, n) ? x : NULL;
  case FC_OP_SLICE: {
    n = fc_op_attr_ints(op, FC_ATTR_STARTS, &a);
    if (n != t->rank || fc_op_attr_ints(op, FC_ATTR_ENDS, &b) != n || fc_op_attr_ints(op, FC_ATTR_STEPS, &s) != n)
      return NULL;
    /* With equal shapes (checked by the caller) a dim of size <= 1 is taken whole whatever the step. */
    for (int i = 0; i < n; i++)
      if (t->dims[i] > 1 && (s[i] != 1 || a[i] != 0)) return NULL;
    return x;
  }
  case FC_OP_PAD:
    n = fc_op_attr_ints(op, FC_ATTR_PADS, &a);
    if (n != 2 * t->rank) return NULL;
    for (int i = 0; i < n; i++)
      if (a[i] != 0) return NULL;
    return x;
  case FC_OP_CONCAT: return op->n_operands == 1 ? x : NULL;
  case FC_OP_NEG:
  case FC_OP_NOT:
  case FC_OP_BITWISE_NOT: {
    FcOp *inner = def_of(op, 0, op->kind);
    return inner && inner->n_operands == 1 ? inner->operands[0].value : NULL;
  }
  default: return NULL;
  }
}

static int int_bits(FcDtype dt) { return (int)fc_dtype_size(dt) * 8 - (fc_dtype_class(dt) == FC_DTC_SINT); }

/* Significand bits (with the implicit one) of a float dtype. */
static int float_precision(FcDtype dt) {
  switch (dt) {
  case FC_DT_F16: return 11;
  case FC_DT_BF16: return 8;
  case FC_DT_F32: return 24;
  case FC_DT_F64: return 53;
  default: return 0;
  }
}

/* Exponent bits of a float dtype (range: a wider one holds every finite value of a narrower one). */
static int float_exp_bits(FcDtype dt) {
  switch (dt) {
  case FC_DT_F16: return 5;
  case FC_DT_BF16: return 8;
  case FC_DT_F32: return 8;
  case FC_DT_F64: return 11;
  default: return 0;
  }
}

/* True when converting every value of `from` to `to` is exact (no rounding, wrapping or saturation). */
static bool cast_exact(FcDtype from, FcDtype to) {
  if (from == to || from == FC_DT_BOOL) return true;
  if (to == FC_DT_BOOL) return false;
  FcDtypeClass cf = fc_dtype_class(from), ct = fc_dtype_class(to);
  if (cf == FC_DTC_FLOAT)
    return ct == FC_DTC_FLOAT && float_precision(to) >= float_precision(from) &&
           float_exp_bits(to) >= float_exp_bits(from);
  if (ct == FC_DTC_FLOAT) return int_bits(from) <= float_precision(to); /* |v| <= 2^p is exact */
  if (cf == FC_DTC_SINT && ct == FC_DTC_UINT) return false;             /* negatives wrap */
  return int_bits(to) >= int_bits(from);
}

/* reshape(const) -> const sharing the data. */
static FcStatus reshape_constant(Canon *c, FcOp *op, bool *changed) {
  const FcTensor *src = fc_value_const(op->operands[0].value);
  if (!src || src->nbytes < 0) return FC_OK;
  FcTensor *t = FC_NEW(&c->m->arena, FcTensor);
  const FcType *rt = &op->results[0].type;
  t->type = fc_type_copy(&c->m->arena, rt); /* keeps a quantised type's parameters */
  int64_t nb;
  if (!fc_type_nbytes(&t->type, &nb) || nb != src->nbytes) return FC_OK;
  t->data = src->data;
  t->nbytes = src->nbytes;
  FcValue *v = fc_rw_make_constant(op, t, op->loc, c->diag);
  if (!v) return c->diag->status ? c->diag->status : FC_ERR_INTERNAL;
  fc_rw_replace_op(op, &v, &c->scratch);
  *changed = true;
  return FC_OK;
}

/* Points operand 0 of `op` at operand 0 of `inner` (the op it used to read), erasing `inner` if that
 * was its last use. */
static void bypass(Canon *c, FcOp *op, FcOp *inner) {
  fc_op_set_operand(op, 0, inner->operands[0].value);
  fc_rw_erase_if_dead(inner, &c->scratch);
}

/* Applies the first pattern that matches `op`; *changed says whether one did. `op` may be erased. */
static FcStatus canon_op(Canon *c, FcOp *op, bool *changed) {
  *changed = false;
  if (op->n_results != 1 || op->n_operands < 1 || !fc_rw_removable(op) || op->kind == FC_OP_CONSTANT) return FC_OK;
  for (int i = 0; i < op->n_operands; i++)
    if (!op->operands[i].value) return FC_OK;

  FcValue *id = identity_of(op);
  if (id && fc_type_equal(&id->type, &op->results[0].type)) {
    fc_rw_replace_op(op, &id, &c->scratch);
    *changed = true;
    return FC_OK;
  }

  FcOp *inner;
  switch (op->kind) {
  case FC_OP_RESHAPE:
    if ((inner = def_of(op, 0, FC_OP_RESHAPE))) {
      bypass(c, op, inner);
      *changed = true;
      return FC_OK;
    }
    return reshape_constant(c, op, changed);
  case FC_OP_BROADCAST:
    if ((inner = def_of(op, 0, FC_OP_BROADCAST))) {
      bypass(c, op, inner);
      *changed = true;
    }
    return FC_OK;
  case FC_OP_SCAST: {
    /* scast(scast(y)) is y when it restores y's type (a quantize's storage read back as the same type), and
     * scast(y) from plain y to any quantised type. */
    if (!(inner = def_of(op, 0, FC_OP_SCAST))) return FC_OK;
    FcValue *y = inner->operands[0].value;
    if (fc_type_equal(&y->type, &op->results[0].type)) {
      fc_rw_replace_op(op, &y, &c->scratch);
      fc_rw_erase_if_dead(inner, &c->scratch);
      *changed = true;
    } else if (!y->type.quant) {
      bypass(c, op, inner);
      *changed = true;
    }
    return FC_OK;
  }
  case FC_OP_TRANSPOSE: {
    const int64_t *p1, *p2;
    if (!(inner = def_of(op, 0, FC_OP_TRANSPOSE))) return FC_OK;
    int n2 = fc_op_attr_ints(op, FC_ATTR_PERM, &p2), n1 = fc_op_attr_ints(inner, FC_ATTR_PERM, &p1);
    if (n1 != n2 || n1 != inner->operands[0].value->type.rank) return FC_OK;
    int64_t q[FC_DEFAULT_MAX_RANK];
    if (n1 > FC_DEFAULT_MAX_RANK) return FC_OK;
    for (int j = 0; j < n1; j++) {
      if (p2[j] < 0 || p2[j] >= n1) return FC_OK;
      q[j] = p1[p2[j]];
    }
    fc_op_set_attr(op, FC_A_INTS(PERM, q, n1));
    bypass(c, op, inner);
    *changed = true;
    return FC_OK;
  }
  case FC_OP_CAST:
    if ((inner = def_of(op, 0, FC_OP_CAST)) &&
        cast_exact(inner->operands[0].value->type.dtype, inner->results[0].type.dtype)) {
      bypass(c, op, inner);
      *changed = true;
    }
    return FC_OK;
  default: break;
  }

  if ((fc_op_info(op->kind)->flags & FC_OPF_COMMUTATIVE) && op->n_operands == 2) {
    FcValue *a = op->operands[0].value, *b = op->operands[1].value;
    if (is_constant(a) && !is_constant(b)) {
      fc_op_set_operand(op, 0, b);
      fc_op_set_operand(op, 1, a);
      *changed = true;
    }
  }
  return FC_OK;
}

FcStatus fc_pass_canonicalize(FcModule *m, FcPassContext *pc) {
  FcDiag *diag = pc->diag;
  Canon c = {.m = m, .diag = diag};
  fc_op_stack_init(&c.scratch, &m->arena);
  for (int walk = 0; walk < MAX_WALKS; walk++) {
    bool any = false;
    fc_graph_for_each_op_safe(m->graph, op, next) {
      bool changed = true;
      for (int k = 0; changed && !op->erased && k < MAX_REWRITES_PER_OP; k++) {
        FcStatus st = canon_op(&c, op, &changed);
        if (st != FC_OK) return st;
        any |= changed;
      }
    }
    if (!any) break;
  }
  return FC_OK;
}
