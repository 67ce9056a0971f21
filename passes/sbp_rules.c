/* sbp_rules.c — the SBP signature rules of the core ops (the table is sbp_rules.def; sbp_rules.h says what a
 * signature is and what a rule sees).
 *
 * Rules are forward and local: given the signatures the operands arrive with, a rule keeps a split when the
 * op computes each output chunk from the matching input chunks alone, and says which operands must then be
 * split the same way (the pass slices those, B -> S being a local copy without communication) or whole
 * (a broadcast operand, a weight). A split is kept only when the dim divides by the group size, so every
 * rank's chunk has the same shape and the local program is one graph. When no split survives, the rule
 * returns false and the op runs on whole tensors. Partial values (P) are only kept through ops that are
 * linear in them; everywhere else the pass reduces them first. The choice is greedy per op (the first split
 * operand wins); the cost-model search over whole graphs (--sbp auto) is not written yet.
 */
#include "sbp_rules.h"

#include <stdio.h>
#include <string.h>

bool fc_sbp_equal(FcSbp a, FcSbp b) {
  if (a.kind != b.kind) return false;
  if (a.kind == FC_SBP_S) return a.dim == b.dim;
  if (a.kind == FC_SBP_P) return a.reduce == b.reduce;
  return true;
}

const char *fc_sbp_reduce_name(FcSbpReduce r) { return r == FC_SBP_MAX ? "max" : r == FC_SBP_MIN ? "min" : "sum"; }

const char *fc_sbp_str(FcSbp s, char *buf, size_t cap) {
  if (s.kind == FC_SBP_S) snprintf(buf, cap, "S(%d)", s.dim);
  else if (s.kind == FC_SBP_P) snprintf(buf, cap, "P(%s)", fc_sbp_reduce_name(s.reduce));
  else snprintf(buf, cap, "B");
  return buf;
}

/* A dim of n elements splits into g equal non-empty chunks. */
static bool divides(const FcSbpRuleCtx *c, int64_t n) { return n >= c->g && n % c->g == 0; }

static bool is_split(FcSbp s) { return s.kind == FC_SBP_S; }

/* ---- element-wise ---------------------------------------------------------------------------------- */

/* P(sum) survives neg, add/sub of two P(sum) operands and mul/div of a P(sum) numerator by a B operand:
 * each is linear in the partial values (broadcasting included: sum_r bcast(x_r) = bcast(sum_r x_r)). */
static bool partial_elementwise(FcSbpRuleCtx *c) {
  const FcOp *op = c->op;
  int n = op->n_operands;
  bool p0 = c->in[0].kind == FC_SBP_P && c->in[0].reduce == FC_SBP_SUM;
  bool p1 = n > 1 && c->in[1].kind == FC_SBP_P && c->in[1].reduce == FC_SBP_SUM;
  bool b1 = n > 1 && c->in[1].kind == FC_SBP_B;
  bool b0 = c->in[0].kind == FC_SBP_B;
  switch (op->kind) {
  case FC_OP_NEG: if (!p0) return false; break;
  case FC_OP_ADD:
  case FC_OP_SUB: if (!(p0 && p1)) return false; break;
  case FC_OP_MUL: if (!((p0 && b1) || (b0 && p1))) return false; break;
  case FC_OP_DIV: if (!(p0 && b1)) return false; break;
  default: return false;
  }
  for (int i = 0; i < n; i++) c->need[i] = c->in[i];
  c->out[0] = FC_SBP_PARTIAL(FC_SBP_SUM);
  return true;
}

static bool rule_elementwise(FcSbpRuleCtx *c) {
  if (partial_elementwise(c)) return true;
  const FcType *rt = &c->out_type[0];
  for (int i = 0; i < c->op->n_operands; i++) {
    const FcType *t = c->in_type[i];
    if (!is_split(c->in[i]) || !t) continue;
    int rd = c->in[i].dim + rt->rank - t->rank; /* NumPy broadcasting aligns trailing dims */
    if (t->dims[c->in[i].dim] != rt->dims[rd] || !divides(c, rt->dims[rd])) continue;
    for (int j = 0; j < c->op->n_operands; j++) {
      const FcType *u = c->in_type[j];
      int ud = rd - (rt->rank - u->rank);
      c->need[j] = ud >= 0 && u->dims[ud] == rt->dims[rd] ? FC_SBP_SPLIT(ud) : FC_SBP_BCAST;
    }
    c->out[0] = FC_SBP_SPLIT(rd);
    return true;
  }
  return false;
}

/* ---- reductions and ops along one axis --------------------------------------------------------------- */

static bool rule_reduce(FcSbpRuleCtx *c) {
  if (!is_split(c->in[0])) return false;
  int d = c->in[0].dim;
  const int64_t *axes;
  int n = fc_op_attr_ints(c->op, FC_ATTR_AXES, &axes);
  bool keep = fc_op_attr_int(c->op, FC_ATTR_KEEPDIMS, 1) != 0, reduced = false;
  int before = 0;
  for (int i = 0; i < n; i++) {
    if (axes[i] == d) reduced = true;
    if (axes[i] < d) before++;
  }
  if (!reduced) {
    c->need[0] = c->in[0];
    c->out[0] = FC_SBP_SPLIT(keep ? d : d - before);
    return true;
  }
  FcSbpReduce r;
  switch (c->op->kind) {
  case FC_OP_REDUCE_SUM: r = FC_SBP_SUM; break;
  case FC_OP_REDUCE_MAX: r = FC_SBP_MAX; break;
  case FC_OP_REDUCE_MIN: r = FC_SBP_MIN; break;
  default: return false; /* a mean or product of partial results is not their sum */
  }
  c->need[0] = c->in[0];
  c->out[0] = FC_SBP_PARTIAL(r);
  return true;
}

/* softmax, log_softmax, cumsum, argmax, argmin: any split but along `axis`. */
static bool rule_along_axis(FcSbpRuleCtx *c) {
  if (!is_split(c->in[0])) return false;
  int d = c->in[0].dim;
  int64_t axis = fc_op_attr_int(c->op, FC_ATTR_AXIS, -1);
  if (d == axis) return false;
  bool drops = (c->op->kind == FC_OP_ARGMAX || c->op->kind == FC_OP_ARGMIN) &&
               fc_op_attr_int(c->op, FC_ATTR_KEEPDIMS, 1) == 0;
  c->need[0] = c->in[0];
  c->out[0] = FC_SBP_SPLIT(drops && d > axis ? d - 1 : d);
  return true;
}

static bool rule_layer_norm(FcSbpRuleCtx *c) {
  if (!is_split(c->in[0])) return false;
  int d = c->in[0].dim;
  if (d >= fc_op_attr_int(c->op, FC_ATTR_AXIS, 0)) return false;
  c->need[0] = c->in[0];
  for (int j = 0; j < c->op->n_results; j++) c->out[j] = c->in[0]; /* mean and inv_std_dev keep x's leading dims */
  return true;
}

/* ---- matmul and conv ------------------------------------------------------------------------------- */

static bool rule_matmul(FcSbpRuleCtx *c) {
  const FcOp *op = c->op;
  if (op->n_operands != 2 || fc_op_attr(op, FC_ATTR_EPILOGUE) || fc_op_attr(op, FC_ATTR_QTYPE)) return false;
  const FcType *a = c->in_type[0], *b = c->in_type[1], *r = &c->out_type[0];
  int ra = a->rank, rb = b->rank, rr = r->rank;
  FcSbp sa = c->in[0], sb = c->in[1];
  if (is_split(sa) && sa.dim < ra - 2) { /* a batch dim: b follows unless it broadcasts there */
    int rd = sa.dim + rr - ra, bd = rd - (rr - rb);
    if (a->dims[sa.dim] != r->dims[rd] || !divides(c, r->dims[rd])) return false;
    c->need[0] = sa;
    c->need[1] = bd >= 0 && bd < rb - 2 && b->dims[bd] == r->dims[rd] ? FC_SBP_SPLIT(bd) : FC_SBP_BCAST;
    c->out[0] = FC_SBP_SPLIT(rd);
    return true;
  }
  if (is_split(sa) && sa.dim == ra - 2 && divides(c, a->dims[ra - 2])) { /* rows of a: S(M) x B */
    c->need[0] = sa;
    c->out[0] = FC_SBP_SPLIT(rr - 2);
    return true;
  }
  int64_t k = a->dims[ra - 1];
  if (((is_split(sa) && sa.dim == ra - 1) || (is_split(sb) && sb.dim == rb - 2)) && divides(c, k)) {
    /* Each rank multiplies its slice of K: partial sums (Megatron's row-parallel matmul). */
    c->need[0] = FC_SBP_SPLIT(ra - 1);
    c->need[1] = FC_SBP_SPLIT(rb - 2);
    c->out[0] = FC_SBP_PARTIAL(FC_SBP_SUM);
    return true;
  }
  if (is_split(sb) && sb.dim == rb - 1 && divides(c, b->dims[rb - 1])) { /* columns of b: B x S(N) */
    c->need[1] = sb;
    c->out[0] = FC_SBP_SPLIT(rr - 1);
    return true;
  }
  return false;
}

static bool rule_conv(FcSbpRuleCtx *c) {
  const FcOp *op = c->op;
  if (op->n_operands > 3 || fc_op_attr(op, FC_ATTR_EPILOGUE) || fc_op_attr(op, FC_ATTR_QTYPE)) return false;
  const FcType *x = c->in_type[0], *w = c->in_type[1];
  if (is_split(c->in[0]) && c->in[0].dim == 0 && divides(c, x->dims[0])) { /* batch */
    c->need[0] = c->in[0];
    c->out[0] = FC_SBP_SPLIT(0);
    return true;
  }
  if (is_split(c->in[0]) && c->in[0].dim == 1 && op->n_operands == 2 && fc_op_attr_int(op, FC_ATTR_GROUP, 1) == 1 &&
      divides(c, x->dims[1])) {
    /* Input channels: each rank sums its channels' taps, partial sums. Not with a bias, which every rank
     * would add. */
    c->need[0] = FC_SBP_SPLIT(1);
    c->need[1] = FC_SBP_SPLIT(1);
    c->out[0] = FC_SBP_PARTIAL(FC_SBP_SUM);
    return true;
  }
  if (is_split(c->in[1]) && c->in[1].dim == 0 && fc_op_attr_int(op, FC_ATTR_GROUP, 1) == 1 &&
      divides(c, w->dims[0])) { /* output channels */
    c->need[1] = FC_SBP_SPLIT(0);
    if (op->n_operands > 2 && c->in_type[2]) c->need[2] = FC_SBP_SPLIT(0);
    c->out[0] = FC_SBP_SPLIT(1);
    return true;
  }
  return false;
}

bool fc_sbp_tensor_start(FcSbpRuleCtx *c) {
  const FcOp *op = c->op;
  for (int i = 0; i < op->n_operands; i++)
    if (c->in_type[i] && c->in[i].kind != FC_SBP_B) return false;
  if (op->kind == FC_OP_MATMUL && op->n_operands == 2 && !fc_op_attr(op, FC_ATTR_EPILOGUE) &&
      !fc_op_attr(op, FC_ATTR_QTYPE) && fc_value_const(op->operands[1].value) && c->in_type[1]->rank == 2 &&
      divides(c, c->in_type[1]->dims[1])) {
    c->need[1] = FC_SBP_SPLIT(1);
    c->out[0] = FC_SBP_SPLIT(c->out_type[0].rank - 1);
    return true;
  }
  if (op->kind == FC_OP_CONV && op->n_operands <= 3 && !fc_op_attr(op, FC_ATTR_EPILOGUE) &&
      !fc_op_attr(op, FC_ATTR_QTYPE) && fc_op_attr_int(op, FC_ATTR_GROUP, 1) == 1 &&
      fc_value_const(op->operands[1].value) && divides(c, c->in_type[1]->dims[0])) {
    c->need[1] = FC_SBP_SPLIT(0);
    if (op->n_operands > 2 && c->in_type[2]) c->need[2] = FC_SBP_SPLIT(0);
    c->out[0] = FC_SBP_SPLIT(1);
    return true;
  }
  return false;
}

/* max_pool with its index result keeps B: the indices are flat positions in the whole tensor. */
static bool rule_pool(FcSbpRuleCtx *c) {
  if (!is_split(c->in[0]) || c->in[0].dim > 1 || c->op->n_results != 1) return false;
  c->need[0] = c->in[0];
  c->out[0] = c->in[0];
  return true;
}

/* ---- data movement --------------------------------------------------------------------------------- */

/* The product of d[0..n), or -1 when it overflows (a tensor with a 0 dim may have huge others). */
static int64_t prod(const int64_t *d, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; i++)
    if (!fc_checked_mul(p, d[i], &p)) return -1;
  return p;
}

/* A split of dim d of x = [pre, n, inner] (pre, inner: the products of the dims before and after d) gives
 * each rank (n/G)·inner consecutive elements of every one of the pre rows. An output dim e after exactly pre
 * elements, [pre, m, inner'] with m·inner' = n·inner, split into G chunks cuts every row at the same places
 * when G divides m: the split dim may keep its size, or be cut into (heads, head_dim) or merged back (m = 4
 * heads of a 256-wide projection split in 2: each rank holds 2 heads). */
static bool rule_reshape(FcSbpRuleCtx *c) {
  if (!is_split(c->in[0])) return false;
  const FcType *x = c->in_type[0], *r = &c->out_type[0];
  int d = c->in[0].dim;
  int64_t before = prod(x->dims, d);
  if (!divides(c, x->dims[d])) return false; /* (a planner's candidate split the dim cannot take) */
  for (int e = 0; before >= 0 && e < r->rank; e++)
    if (prod(r->dims, e) == before && divides(c, r->dims[e])) {
      c->need[0] = c->in[0];
      c->out[0] = FC_SBP_SPLIT(e);
      return true;
    }
  return false;
}

static bool rule_transpose(FcSbpRuleCtx *c) {
  if (!is_split(c->in[0])) return false;
  const int64_t *perm;
  int n = fc_op_attr_ints(c->op, FC_ATTR_PERM, &perm);
  for (int j = 0; j < n; j++)
    if (perm[j] == c->in[0].dim) {
      c->need[0] = c->in[0];
      c->out[0] = FC_SBP_SPLIT(j);
      return true;
    }
  return false;
}

static bool rule_concat(FcSbpRuleCtx *c) {
  int64_t axis = fc_op_attr_int(c->op, FC_ATTR_AXIS, -1);
  for (int i = 0; i < c->op->n_operands; i++) {
    if (!is_split(c->in[i]) || c->in[i].dim == axis || !divides(c, c->out_type[0].dims[c->in[i].dim])) continue;
    for (int j = 0; j < c->op->n_operands; j++) c->need[j] = c->in[i];
    c->out[0] = c->in[i];
    return true;
  }
  return false;
}

/* A slice that keeps the whole split dim (start 0, step 1, every element). */
static bool rule_slice(FcSbpRuleCtx *c) {
  if (!is_split(c->in[0])) return false;
  int d = c->in[0].dim;
  const int64_t *st, *en, *sp;
  int ns = fc_op_attr_ints(c->op, FC_ATTR_STARTS, &st), ne = fc_op_attr_ints(c->op, FC_ATTR_ENDS, &en),
      np = fc_op_attr_ints(c->op, FC_ATTR_STEPS, &sp);
  if (d >= ns || d >= ne || d >= np || st[d] != 0 || sp[d] != 1 || en[d] != c->in_type[0]->dims[d]) return false;
  c->need[0] = c->in[0];
  c->out[0] = c->in[0];
  return true;
}

static bool rule_pad(FcSbpRuleCtx *c) {
  if (!is_split(c->in[0])) return false;
  int d = c->in[0].dim, r = c->in_type[0]->rank;
  const int64_t *pads;
  int n = fc_op_attr_ints(c->op, FC_ATTR_PADS, &pads);
  if (n != 2 * r || pads[d] != 0 || pads[d + r] != 0) return false;
  c->need[0] = c->in[0];
  if (c->op->n_operands > 1 && c->in_type[1]) c->need[1] = FC_SBP_BCAST;
  c->out[0] = c->in[0];
  return true;
}

/* gather(data, indices) along axis a: result dims data[:a] + indices + data[a+1:]. */
static bool rule_gather(FcSbpRuleCtx *c) {
  int64_t a = fc_op_attr_int(c->op, FC_ATTR_AXIS, -1);
  int ri = c->in_type[1]->rank;
  if (is_split(c->in[0]) && c->in[0].dim != a) {
    int d = c->in[0].dim;
    c->need[0] = c->in[0];
    c->out[0] = FC_SBP_SPLIT(d < a ? d : d + ri - 1);
    return true;
  }
  if (is_split(c->in[1])) {
    c->need[1] = c->in[1];
    c->out[0] = FC_SBP_SPLIT((int)a + c->in[1].dim);
    return true;
  }
  return false;
}

static const FcSbpRuleFn rules[FC_OP_COUNT] = {
#define FC_SBP_RULE(kind, fn) [FC_OP_##kind] = fn,
#include "sbp_rules.def"
#undef FC_SBP_RULE
};

FcSbpRuleFn fc_sbp_rule(FcOpKind kind) { return (unsigned)kind < FC_OP_COUNT ? rules[kind] : NULL; }
