/* fold_batchnorm.c — folds per-channel affine ops into the conv (or matmul) before them, and composes
 * chains of affine ops with constant operands.
 *
 * An affine op is mul/add/sub/div of a value y by a constant c (with data, f32) whose result has y's
 * type (c broadcasts without enlarging): y*c, c*y, y+c, c+y, y-c, c-y, y/c. Each maps (a, b) in
 * "result = x*a + b" to new (a, b), elementwise over the constants' broadcast shape, in double.
 *
 * 1. absorption. An inference BatchNormalization lowers to mul(x, s[C,1,1]) then add(., t[C,1,1])
 *    (compiler/lower_norm.c); scale layers and biases give the same shapes. A f32 conv with constant
 *    weights and a constant (or absent) bias, whose result has one use, absorbs the longest chain of
 *    single-use affine ops with per-output-channel constants (dims 1 except, possibly, the channel
 *    dim): with the chain's (a[m], b[m]), w'[m, ...] = w[m, ...] * a[m] and bias'[m] = bias[m] * a[m] +
 *    b[m], each rounded to f32 once. A conv whose weights are not constant absorbs only the bias-only
 *    prefix (adds, subtractions of a constant). A matmul with constant weights absorbs a per-column
 *    chain's scales into its weights (Gemm's alpha, BatchNorm1d after a Linear); the shift remains as
 *    one add, which fuse_epilogue then takes in as the matmul's bias.
 * 2. chain composition. Any other maximal chain of single-use affine ops of one type collapses to at
 *    most mul(x, A) then add(., B) when that is fewer ops (BN after BN, a bias then a scale); a chain
 *    already that short is left exactly as it is, so rounding only changes where ops go away.
 *
 * Absorption runs first, so a chain that a conv can take is never rewritten into a form it cannot.
 * Ops with an `epilogue` (after fuse_epilogue) are left alone: their result is no longer the product; so are
 * quantised ones (fc_rw_is_quantised): their weights are integers and their bias is i32.
 * Ops left unused are erased at once.
 */
#include "passes.h"
#include "rewrite.h"

#include <string.h>

typedef struct Affine {
  FcOpKind kind;
  FcValue *y;         /* the non-constant operand */
  const FcTensor *c;  /* the constant operand */
  bool c_first;       /* c is operand 0 (c + y, c - y) */
} Affine;

/* `t` broadcasts to dims[0..rank) without enlarging it. */
static bool fits(const FcType *t, int rank, const int64_t *dims) {
  if (t->rank > rank) return false;
  for (int i = 0; i < t->rank; i++) {
    int64_t d = t->dims[t->rank - 1 - i];
    if (d != 1 && d != dims[rank - 1 - i]) return false;
  }
  return true;
}

static bool affine_of(const FcOp *op, Affine *out) {
  if (op->erased || op->n_operands != 2 || op->n_results != 1 || op->n_attrs != 0) return false;
  if (op->kind != FC_OP_MUL && op->kind != FC_OP_ADD && op->kind != FC_OP_SUB && op->kind != FC_OP_DIV) return false;
  const FcType *rt = &op->results[0].type;
  if (rt->dtype != FC_DT_F32) return false;
  const FcTensor *c0 = fc_value_const(op->operands[0].value), *c1 = fc_value_const(op->operands[1].value);
  if ((c0 != NULL) == (c1 != NULL)) return false; /* both constant: fold's business */
  out->kind = op->kind;
  out->c_first = c0 != NULL;
  out->c = c0 ? c0 : c1;
  out->y = op->operands[c0 ? 1 : 0].value;
  if (out->c_first && op->kind == FC_OP_DIV) return false; /* c / y is not affine */
  return out->c->type.dtype == FC_DT_F32 && fc_type_equal(&out->y->type, rt) &&
         fits(&out->c->type, rt->rank, rt->dims);
}

/* Element i of `c` broadcast to shape dims[0..rank) (c fits it). */
static double bcast_get(const FcTensor *c, int rank, const int64_t *dims, int64_t i) {
  int64_t off = 0, stride = 1;
  for (int d = rank - 1, cd = c->type.rank - 1; d >= 0; d--, cd--) {
    int64_t idx = i % dims[d];
    i /= dims[d];
    if (cd < 0) continue;
    if (c->type.dims[cd] != 1) off += idx * stride;
    stride *= c->type.dims[cd];
  }
  float v;
  memcpy(&v, (const unsigned char *)c->data + off * 4, 4);
  return v;
}

/* Applies one affine op to (a[i], b[i]) for i in [0, n), over the shape dims[0..rank). */
static void compose(const Affine *af, double *a, double *b, int64_t n, int rank, const int64_t *dims) {
  for (int64_t i = 0; i < n; i++) {
    double c = bcast_get(af->c, rank, dims, i);
    switch (af->kind) {
    case FC_OP_MUL: a[i] *= c; b[i] *= c; break;
    case FC_OP_ADD: b[i] += c; break;
    case FC_OP_SUB:
      if (af->c_first) {
        a[i] = -a[i];
        b[i] = c - b[i];
      } else {
        b[i] -= c;
      }
      break;
    case FC_OP_DIV: a[i] /= c; b[i] /= c; break;
    default: FC_UNREACHABLE();
    }
  }
}

/* The only user of v, or NULL when v has no use or several. */
static FcOp *single_user(const FcValue *v) {
  return v->first_use && !v->first_use->next_use ? v->first_use->user : NULL;
}

static float *f32_data(const FcTensor *t) { return (float *)t->data; }

/* ---- 1. absorption into the producer ------------------------------------------------------------ */

static bool bias_only(const Affine *af) {
  return af->kind == FC_OP_ADD || (af->kind == FC_OP_SUB && !af->c_first);
}

/* The longest chain of single-use affine ops after x whose constants fit `shape` (the per-channel or
 * per-column shape), composed into a[0..n), b[0..n) (a starts at 1, b at 0); bias-only ops only when
 * `weights_fixed`. Returns the chain's last op, or NULL for an empty chain. */
static FcOp *collect_chain(FcValue *x, int rank, const int64_t *shape, int64_t n, bool weights_fixed, double *a,
                           double *b) {
  for (int64_t i = 0; i < n; i++) {
    a[i] = 1.0;
    b[i] = 0.0;
  }
  FcOp *last = NULL;
  for (FcOp *u; (u = single_user(x)) != NULL; x = &u->results[0]) {
    Affine af;
    if (!affine_of(u, &af) || af.y != x || !fits(&af.c->type, rank, shape)) break;
    if (weights_fixed && !bias_only(&af)) break;
    compose(&af, a, b, n, rank, shape);
    last = u;
  }
  return last;
}

/* A copy of the f32 weights w scaled by a[(i / inner) % n] at element i. */
static FcTensor *scaled(FcModule *m, const FcTensor *w, const double *a, int64_t n, int64_t inner) {
  FcTensor *t = fc_tensor_new(&m->arena, w->type);
  int64_t numel = t->nbytes / 4;
  const float *src = f32_data(w);
  float *dst = f32_data(t);
  for (int64_t i = 0; i < numel; i++) dst[i] = (float)((double)src[i] * a[(i / inner) % n]);
  return t;
}

/* A conv absorbs the per-output-channel chain after it into its weights and bias (see the top). */
static FcStatus absorb_into_conv(FcModule *m, FcOp *conv, FcOpStack *scratch, FcDiag *diag) {
  if (conv->erased || conv->n_results != 1 || fc_op_attr(conv, FC_ATTR_EPILOGUE) || conv->n_operands > 3 ||
      fc_rw_is_quantised(conv))
    return FC_OK;
  FcValue *x = &conv->results[0];
  const FcType *rt = &x->type;
  if (rt->dtype != FC_DT_F32 || rt->rank < 3 || !single_user(x)) return FC_OK;
  const FcTensor *w = fc_value_const(conv->operands[1].value);
  const FcTensor *bias = conv->n_operands == 3 ? fc_value_const(conv->operands[2].value) : NULL;
  if (conv->n_operands == 3 && !bias) return FC_OK;
  int64_t M = rt->dims[1], sz = M > 0 ? M : 1;
  int64_t *pc = FC_NEW_ARRAY(&m->arena, int64_t, (size_t)rt->rank); /* [1, M, 1, ..., 1] */
  for (int i = 0; i < rt->rank; i++) pc[i] = i == 1 ? M : 1;
  double *a = FC_NEW_ARRAY(&m->arena, double, (size_t)sz), *b = FC_NEW_ARRAY(&m->arena, double, (size_t)sz);
  FcOp *last = collect_chain(x, rt->rank, pc, M, !w, a, b);
  if (!last) return FC_OK;

  FcBuilder bl;
  fc_builder_init(&bl, conv->graph, diag);
  bl.before = conv;
  bl.loc = conv->loc;
  FcValue *ops[3] = {conv->operands[0].value, conv->operands[1].value, NULL};
  bool scales = false, need_bias = bias != NULL;
  for (int64_t i = 0; i < M; i++) {
    scales |= a[i] != 1.0;
    need_bias |= b[i] != 0.0;
  }
  if (scales) ops[1] = fc_b_const_tensor(&bl, scaled(m, w, a, M, w->nbytes / 4 / M));
  if (need_bias) {
    FcTensor *nb = fc_tensor_new(&m->arena, fc_type_make(&m->arena, FC_DT_F32, 1, &M));
    for (int64_t i = 0; i < M; i++) f32_data(nb)[i] = (float)((bias ? (double)f32_data(bias)[i] : 0.0) * a[i] + b[i]);
    ops[2] = fc_b_const_tensor(&bl, nb);
  }
  FcValue *y = fc_b_op1(&bl, FC_OP_CONV, ops, need_bias ? 3 : 2, conv->attrs, conv->n_attrs);
  FcStatus st = fc_b_status(&bl);
  if (st != FC_OK) return st;
  fc_rw_replace_op(last, &y, scratch);
  return FC_OK;
}

/* A matmul with constant f32 weights b[.., K, N] absorbs the scales of a per-column chain after it
 * (Gemm's alpha, a BatchNorm1d after a Linear): w'[.., k, n] = w[.., k, n] * a[n]; the shift stays
 * as one add of a [N] constant after it (a matmul has no bias operand). A chain without a scale is
 * left to the chain composition. */
static FcStatus absorb_into_matmul(FcModule *m, FcOp *mm, FcOpStack *scratch, FcDiag *diag) {
  if (mm->erased || mm->n_results != 1 || mm->n_operands != 2 || fc_op_attr(mm, FC_ATTR_EPILOGUE) ||
      fc_rw_is_quantised(mm))
    return FC_OK;
  FcValue *x = &mm->results[0];
  const FcType *rt = &x->type;
  const FcTensor *w = fc_value_const(mm->operands[1].value);
  if (rt->dtype != FC_DT_F32 || !w || !single_user(x)) return FC_OK;
  int64_t N = rt->dims[rt->rank - 1], sz = N > 0 ? N : 1;
  int64_t *pc = FC_NEW_ARRAY(&m->arena, int64_t, (size_t)rt->rank); /* [1, ..., 1, N] */
  for (int i = 0; i < rt->rank; i++) pc[i] = i == rt->rank - 1 ? N : 1;
  double *a = FC_NEW_ARRAY(&m->arena, double, (size_t)sz), *b = FC_NEW_ARRAY(&m->arena, double, (size_t)sz);
  FcOp *last = collect_chain(x, rt->rank, pc, N, false, a, b);
  bool scales = false, shifts = false;
  for (int64_t i = 0; i < N; i++) {
    scales |= a[i] != 1.0;
    shifts |= b[i] != 0.0;
  }
  if (!last || !scales) return FC_OK;

  FcBuilder bl;
  fc_builder_init(&bl, mm->graph, diag);
  bl.before = last;
  bl.loc = mm->loc;
  FcValue *ops[2] = {mm->operands[0].value, fc_b_const_tensor(&bl, scaled(m, w, a, N, 1))};
  FcValue *y = fc_b_op1(&bl, FC_OP_MATMUL, ops, 2, mm->attrs, mm->n_attrs);
  if (shifts) {
    FcTensor *t = fc_tensor_new(&m->arena, fc_type_make(&m->arena, FC_DT_F32, 1, &N));
    for (int64_t i = 0; i < N; i++) f32_data(t)[i] = (float)b[i];
    bl.loc = last->loc;
    y = fc_b_binary(&bl, FC_OP_ADD, y, fc_b_const_tensor(&bl, t));
  }
  FcStatus st = fc_b_status(&bl);
  if (st != FC_OK) return st;
  fc_rw_replace_op(last, &y, scratch);
  return FC_OK;
}

/* ---- 2. chain composition ------------------------------------------------------------------------ */

/* The affine op that continues a chain ending at `op` (op's result has exactly that one use). */
static FcOp *chain_next(FcOp *op, Affine *af) {
  FcOp *u = single_user(&op->results[0]);
  return u && affine_of(u, af) && af->y == &op->results[0] ? u : NULL;
}

static FcStatus compose_chain(FcModule *m, FcOp *head, FcOpStack *scratch, FcDiag *diag) {
  Affine first;
  if (!affine_of(head, &first)) return FC_OK;
  /* Only heads: an op that continues a chain is handled from its chain's head. */
  FcValue *x = first.y;
  if (x->def) {
    Affine prev;
    if (affine_of(x->def, &prev) && single_user(x) == head) return FC_OK;
  }
  int n = 1;
  FcOp *last = head;
  Affine af;
  for (FcOp *u; (u = chain_next(last, &af)) != NULL; last = u) n++;
  if (n < 2) return FC_OK;

  /* The constants' broadcast shape (each fits rt, so the broadcast does too). */
  FcType shape = {FC_DT_F32, 0, NULL};
  for (FcOp *op = head;; op = single_user(&op->results[0])) {
    affine_of(op, &af);
    int r;
    const int64_t *d;
    FC_ASSERT(fc_broadcast_shapes(&m->arena, &shape, &af.c->type, &r, &d));
    shape = (FcType){FC_DT_F32, r, d};
    if (op == last) break;
  }
  int64_t numel;
  FC_ASSERT(fc_type_numel(&shape, &numel));
  double *a = FC_NEW_ARRAY(&m->arena, double, (size_t)(numel > 0 ? numel : 1));
  double *b = FC_NEW_ARRAY(&m->arena, double, (size_t)(numel > 0 ? numel : 1));
  for (int64_t i = 0; i < numel; i++) a[i] = 1.0;
  for (FcOp *op = head;; op = single_user(&op->results[0])) {
    affine_of(op, &af);
    compose(&af, a, b, numel, shape.rank, shape.dims);
    if (op == last) break;
  }
  FcTensor *ta = fc_tensor_new(&m->arena, shape), *tb = fc_tensor_new(&m->arena, shape);
  bool need_a = false, need_b = false;
  for (int64_t i = 0; i < numel; i++) {
    f32_data(ta)[i] = (float)a[i];
    f32_data(tb)[i] = (float)b[i];
    need_a |= f32_data(ta)[i] != 1.0f;
    need_b |= f32_data(tb)[i] != 0.0f;
  }
  if ((int)need_a + (int)need_b >= n) return FC_OK;

  FcBuilder bl;
  fc_builder_init(&bl, head->graph, diag);
  bl.before = last;
  bl.loc = last->loc;
  FcValue *y = x;
  if (need_a) y = fc_b_binary(&bl, FC_OP_MUL, y, fc_b_const_tensor(&bl, ta));
  if (need_b) y = fc_b_binary(&bl, FC_OP_ADD, y, fc_b_const_tensor(&bl, tb));
  FcStatus st = fc_b_status(&bl);
  if (st != FC_OK) return st;
  fc_rw_replace_op(last, &y, scratch);
  return FC_OK;
}

FcStatus fc_pass_fold_batchnorm(FcModule *m, FcPassContext *pc) {
  FcDiag *diag = pc->diag;
  FcGraph *g = m->graph;
  FcOpStack scratch, producers, heads;
  fc_op_stack_init(&scratch, &m->arena);
  fc_op_stack_init(&producers, &pc->scratch);
  fc_op_stack_init(&heads, &pc->scratch);
  fc_graph_for_each_op(g, op) {
    if (op->kind == FC_OP_CONV || op->kind == FC_OP_MATMUL) fc_op_stack_push(&producers, op);
  }
  FcStatus st = FC_OK;
  for (int i = 0; i < producers.n && st == FC_OK; i++) {
    FcOp *p = producers.v[i];
    st = p->kind == FC_OP_CONV ? absorb_into_conv(m, p, &scratch, diag) : absorb_into_matmul(m, p, &scratch, diag);
  }
  if (st != FC_OK) return st;
  fc_graph_for_each_op(g, op) {
    Affine af;
    if (affine_of(op, &af)) fc_op_stack_push(&heads, op);
  }
  for (int i = 0; i < heads.n; i++)
    if (!heads.v[i]->erased && (st = compose_chain(m, heads.v[i], &scratch, diag)) != FC_OK) return st;
  return FC_OK;
}
