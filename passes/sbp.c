/* sbp.c — SBP plans and the one path that applies them (sbp.h), and the fixed strategies: passes sbp_data and
 * sbp_tensor (flowc build --ranks N --sbp data|tensor).
 *
 * A plan (sbp.h) is made on the untouched graph: for every op of the top-level graph, the signature it takes
 * each operand in and the signature of each result, from the rules (sbp_rules.def). The fixed strategies make
 * it forward in op order: each op's rule sees the signatures its operands were planned with and keeps what
 * split it can (sbp_data slices each graph input whose dim 0 divides by G; sbp_tensor also starts a split at
 * each matmul/conv by a constant weight, fc_sbp_tensor_start). sbp_file and sbp_auto make plans their own
 * way and apply them here too.
 *
 * Applying a plan is one forward walk. Every value keeps its GLOBAL type beside its signature in a table of
 * this file. Where an operand arrives with another signature than the op takes, a boxing op goes in front of
 * the op (B -> S local_slice, S -> B all_gather, P -> B all_reduce, P -> S reduce_scatter, S -> S
 * all_to_all); a value boxed to one signature once is reused by later ops that take it so (an all_reduce
 * for two consumers runs once). The op's shape attributes (reshape's shape, slice's ends) are then rewritten
 * to the local chunk and its result types re-inferred from its now local operands, and checked against the
 * global types split as planned. Afterwards every value has its LOCAL type, so the later passes, the kernels
 * and the memory plan see an ordinary graph with a few collective ops. Every result gets its signature as
 * flow.sbp (one entry per mesh axis); an op that runs on whole tensors although an operand arrived split
 * gets flow.sbp_note, which flowc info lists.
 *
 * The group of every boxing op is all ranks (mesh_axis -1: G = the product of the mesh, row-major rank
 * order), so on a 2-D mesh a split is over all its ranks and the annotation repeats the signature per axis
 * (splitting dim d along axis 0 and then along axis 1 gives the same chunks in the same order). Graph
 * inputs arrive whole on every rank (frt_main broadcasts them) and every graph output is gathered to B, so
 * rank 0 writes whole outputs.
 *
 * A constant taken split along a dim other than 0 is stored re-laid as [G, ..., n/G, ...] (rank r's chunk
 * contiguous at r * chunk), so its local_slice is one contiguous copy of 1/G of the weight per run, not a
 * strided gather; a dim-0 split is contiguous already. (A view at offset rank*chunk would save that copy,
 * but then the GEMM kernels could no longer pack the weight at compile time either way; a per-rank build
 * would, and is left for later.)
 */
#include "sbp.h"

#include <string.h>

#include "rewrite.h"

/* ---- plans ---------------------------------------------------------------------------------------------- */

FcStatus fc_sbp_plan_init(FcSbpPlan *p, FcModule *m, FcArena *a, FcDiag *diag) {
  memset(p, 0, sizeof *p);
  p->m = m;
  p->g = m->graph;
  if (fc_module_mesh(m, NULL) == 0)
    return fc_error(diag, FC_ERR_INPUT, "an SBP plan needs the module's mesh (flow.mesh: flowc build --ranks N)");
  if (!fc_mesh_group_size(m, -1, &p->group)) return fc_error(diag, FC_ERR_INPUT, "the mesh has too many ranks");
  FcGraph *g = p->g;
  fc_graph_for_each_op(g, op) p->n_ops++;
  p->ops = FC_NEW_ARRAY(a, FcOp *, (size_t)p->n_ops + 1);
  p->need = FC_NEW_ARRAY(a, FcSbp *, (size_t)p->n_ops + 1);
  p->out = FC_NEW_ARRAY(a, FcSbp *, (size_t)p->n_ops + 1);
  p->input = FC_NEW_ARRAY(a, FcSbp, (size_t)g->n_inputs + 1);
  p->n_ids = g->next_value_id;
  p->op_of = FC_NEW_ARRAY(a, int32_t, (size_t)p->n_ids + 1);
  for (uint32_t i = 0; i < p->n_ids; i++) p->op_of[i] = -1;
  for (int i = 0; i < g->n_inputs; i++) p->input[i] = FC_SBP_BCAST;
  p->n_op_ids = g->next_op_id;
  p->index_of = FC_NEW_ARRAY(a, int32_t, (size_t)p->n_op_ids + 1);
  int k = 0;
  fc_graph_for_each_op(g, op) {
    p->ops[k] = op;
    p->index_of[op->id] = k;
    p->need[k] = FC_NEW_ARRAY(a, FcSbp, (size_t)op->n_operands + 1);
    p->out[k] = FC_NEW_ARRAY(a, FcSbp, (size_t)op->n_results + 1);
    for (int i = 0; i < op->n_operands; i++) p->need[k][i] = FC_SBP_BCAST;
    for (int j = 0; j < op->n_results; j++) {
      p->out[k][j] = FC_SBP_BCAST;
      p->op_of[op->results[j].id] = k;
    }
    k++;
  }
  return FC_OK;
}

FcSbp fc_sbp_plan_sig(const FcSbpPlan *p, const FcValue *v) {
  if (v->id >= p->n_ids) return FC_SBP_BCAST;
  if (!v->def) return v->index < p->g->n_inputs ? p->input[v->index] : FC_SBP_BCAST;
  int32_t k = p->op_of[v->id];
  return k >= 0 ? p->out[k][v->index] : FC_SBP_BCAST;
}

void fc_sbp_plan_ctx(const FcSbpPlan *p, int k, FcArena *a, FcSbpRuleCtx *c) {
  const FcOp *op = p->ops[k];
  int n_in = op->n_operands, n_out = op->n_results;
  const FcType **in_type = FC_NEW_ARRAY(a, const FcType *, (size_t)n_in + 1);
  FcSbp *in = FC_NEW_ARRAY(a, FcSbp, (size_t)n_in + 1), *need = FC_NEW_ARRAY(a, FcSbp, (size_t)n_in + 1);
  FcType *out_type = FC_NEW_ARRAY(a, FcType, (size_t)n_out + 1);
  FcSbp *out = FC_NEW_ARRAY(a, FcSbp, (size_t)n_out + 1);
  for (int i = 0; i < n_in; i++) {
    const FcValue *v = op->operands[i].value;
    in_type[i] = v ? &v->type : NULL;
    in[i] = v ? fc_sbp_plan_sig(p, v) : FC_SBP_BCAST;
    need[i] = FC_SBP_BCAST;
  }
  for (int j = 0; j < n_out; j++) {
    out_type[j] = op->results[j].type;
    out[j] = FC_SBP_BCAST;
  }
  *c = (FcSbpRuleCtx){op, p->group, in_type, out_type, in, need, out};
}

/* Whether the rules may split op at all: regions run whole on every rank (their loop or if has no rule), and
 * quantised ops keep B (their scales are per tensor, not per chunk). */
static bool splittable(const FcOp *op) {
  return op->kind != FC_OP_CONSTANT && op->kind != FC_OP_RETURN && op->n_regions == 0 && !fc_rw_is_quantised(op);
}

static bool choice_equal(const FcOp *op, const FcSbp *na, const FcSbp *oa, const FcSbp *nb, const FcSbp *ob) {
  for (int i = 0; i < op->n_operands; i++)
    if (!fc_sbp_equal(na[i], nb[i])) return false;
  for (int j = 0; j < op->n_results; j++)
    if (!fc_sbp_equal(oa[j], ob[j])) return false;
  return true;
}

/* Adds the rule's answer for the probe in c->in (and resets need/out to B for the next probe). */
static void add_probe(FcSbpRuleCtx *c, bool start, FcArena *a, FcSbpChoice *list, int *n) {
  const FcOp *op = c->op;
  FcSbpRuleFn rule = fc_sbp_rule(op->kind);
  bool kept = start ? fc_sbp_tensor_start(c) : rule && rule(c);
  if (kept) {
    bool dup = false;
    for (int i = 0; i < *n && !dup; i++) dup = choice_equal(op, list[i].need, list[i].out, c->need, c->out);
    if (!dup) {
      FcSbpChoice *ch = &list[(*n)++];
      ch->need = FC_NEW_ARRAY(a, FcSbp, (size_t)op->n_operands + 1);
      ch->out = FC_NEW_ARRAY(a, FcSbp, (size_t)op->n_results + 1);
      memcpy(ch->need, c->need, (size_t)op->n_operands * sizeof *c->need);
      memcpy(ch->out, c->out, (size_t)op->n_results * sizeof *c->out);
    }
  }
  for (int i = 0; i < op->n_operands; i++) c->need[i] = FC_SBP_BCAST;
  for (int j = 0; j < op->n_results; j++) c->out[j] = FC_SBP_BCAST;
}

int fc_sbp_candidates(const FcSbpPlan *p, int k, FcArena *a, FcSbpChoice **out) {
  const FcOp *op = p->ops[k];
  FcSbpRuleCtx c;
  fc_sbp_plan_ctx(p, k, a, &c);
  FcSbp *in = (FcSbp *)c.in;
  int n_in = op->n_operands, cap = 2;
  for (int i = 0; i < n_in; i++) cap += (c.in_type[i] ? c.in_type[i]->rank : 0) + 1;
  cap += 1;
  FcSbpChoice *list = FC_NEW_ARRAY(a, FcSbpChoice, (size_t)cap + 1);
  int n = 0;
  if (splittable(op)) {
    for (int i = 0; i < n_in; i++) in[i] = FC_SBP_BCAST;
    add_probe(&c, true, a, list, &n);
    for (int i = 0; i < n_in; i++) {
      if (!c.in_type[i]) continue;
      for (int d = 0; d < c.in_type[i]->rank; d++) {
        in[i] = FC_SBP_SPLIT(d);
        add_probe(&c, false, a, list, &n);
      }
      in[i] = FC_SBP_PARTIAL(FC_SBP_SUM);
      add_probe(&c, false, a, list, &n);
      in[i] = FC_SBP_BCAST;
    }
    for (int i = 0; i < n_in; i++) in[i] = c.in_type[i] ? FC_SBP_PARTIAL(FC_SBP_SUM) : FC_SBP_BCAST;
    if (n_in > 1) add_probe(&c, false, a, list, &n);
  }
  /* All B is always legal: the op runs on whole tensors. */
  FcSbpChoice *ch = &list[n++];
  ch->need = FC_NEW_ARRAY(a, FcSbp, (size_t)n_in + 1);
  ch->out = FC_NEW_ARRAY(a, FcSbp, (size_t)op->n_results + 1);
  for (int i = 0; i < n_in; i++) ch->need[i] = FC_SBP_BCAST;
  for (int j = 0; j < op->n_results; j++) ch->out[j] = FC_SBP_BCAST;
  *out = list;
  return n;
}

/* The signature a graph input may be sliced to: a split of a dim that divides by G (P never). */
static bool input_sig_ok(const FcSbpPlan *p, const FcValue *x, FcSbp s) {
  if (s.kind == FC_SBP_B) return true;
  if (s.kind != FC_SBP_S || s.dim < 0 || s.dim >= x->type.rank) return false;
  int64_t n = x->type.dims[s.dim];
  return n >= p->group && n % p->group == 0;
}

static bool wanted(const FcSbp *want, const FcValue *v) { return want && (int)want[v->id].kind >= 0; }

FcStatus fc_sbp_plan_forward(FcSbpPlan *p, FcSbpStrategy s, const FcSbp *want, FcArena *a, FcDiag *diag) {
  FcGraph *g = p->g;
  for (int i = 0; i < g->n_inputs; i++) {
    FcValue *x = g->inputs[i];
    FcSbp sig = FC_SBP_BCAST;
    if (wanted(want, x)) sig = want[x->id];
    else if (s == FC_SBP_DATA && x->type.rank >= 1 && fc_value_has_uses(x)) sig = FC_SBP_SPLIT(0);
    if (!input_sig_ok(p, x, sig)) {
      if (wanted(want, x)) {
        char b[32];
        return fc_error(diag, FC_ERR_INPUT, "graph input '%s' cannot be %s on %lld ranks", x->name ? x->name : "?",
                        fc_sbp_str(sig, b, sizeof b), (long long)p->group);
      }
      sig = FC_SBP_BCAST; /* an indivisible batch runs whole on every rank */
    }
    p->input[i] = sig;
  }
  for (int k = 0; k < p->n_ops; k++) {
    FcOp *op = p->ops[k];
    if (op->kind == FC_OP_CONSTANT) continue; /* B; the apply path slices a constant a consumer takes split */
    if (op->kind == FC_OP_RETURN) continue;   /* takes B: outputs are written whole */
    int forced = -1;
    for (int j = 0; j < op->n_results && forced < 0; j++)
      if (wanted(want, &op->results[j])) forced = j;
    if (forced >= 0) {
      /* The candidate that gives the wanted signature with the fewest operands boxed. */
      FcSbpChoice *list;
      int n = fc_sbp_candidates(p, k, a, &list), best = -1, best_boxed = 0;
      for (int c = 0; c < n; c++) {
        bool ok = true;
        for (int j = 0; j < op->n_results && ok; j++)
          if (wanted(want, &op->results[j]) && !fc_sbp_equal(list[c].out[j], want[op->results[j].id])) ok = false;
        if (!ok) continue;
        int boxed = 0;
        for (int i = 0; i < op->n_operands; i++)
          if (op->operands[i].value && !fc_sbp_equal(list[c].need[i], fc_sbp_plan_sig(p, op->operands[i].value))) boxed++;
        if (best < 0 || boxed < best_boxed) best = c, best_boxed = boxed;
      }
      if (best < 0) {
        char b[32];
        return fc_error_node(diag, FC_ERR_INPUT, fc_op_name(op), fc_op_info(op->kind)->name,
                             "no SBP rule of this op gives its result %d as %s", forced,
                             fc_sbp_str(want[op->results[forced].id], b, sizeof b));
      }
      memcpy(p->need[k], list[best].need, (size_t)op->n_operands * sizeof *p->need[k]);
      memcpy(p->out[k], list[best].out, (size_t)op->n_results * sizeof *p->out[k]);
      continue;
    }
    if (!splittable(op)) continue;
    FcSbpRuleCtx c;
    fc_sbp_plan_ctx(p, k, a, &c);
    c.need = p->need[k];
    c.out = p->out[k];
    bool kept = s == FC_SBP_TENSOR && fc_sbp_tensor_start(&c);
    FcSbpRuleFn rule = fc_sbp_rule(op->kind);
    if (!kept && rule) kept = rule(&c);
    if (!kept) {
      for (int i = 0; i < op->n_operands; i++) c.need[i] = FC_SBP_BCAST;
      for (int j = 0; j < op->n_results; j++) c.out[j] = FC_SBP_BCAST;
    }
  }
  return FC_OK;
}

/* ---- applying a plan ------------------------------------------------------------------------------------ */

typedef struct Boxed {
  FcSbp to;
  FcValue *y;
  struct Boxed *next;
} Boxed;

typedef struct ValueInfo {
  FcSbp sig;
  FcType global; /* the value's type in the one-process program */
  bool set;
  Boxed *boxed;  /* the value boxed to other signatures so far */
} ValueInfo;

typedef struct Sbp {
  const FcSbpPlan *p;
  FcModule *m;
  FcGraph *g;
  FcDiag *diag;
  FcArena *scratch;
  int64_t group; /* G: every rank */
  int n_axes;    /* of the mesh: entries per flow.sbp */
  ValueInfo *info;
  uint32_t cap;
} Sbp;

static ValueInfo *info_of(Sbp *s, const FcValue *v) {
  if (v->id >= s->cap) {
    uint32_t cap = s->cap ? s->cap : 64;
    while (cap <= v->id) cap *= 2;
    ValueInfo *n = FC_NEW_ARRAY(s->scratch, ValueInfo, cap);
    if (s->cap) memcpy(n, s->info, s->cap * sizeof *n);
    s->info = n;
    s->cap = cap;
  }
  return &s->info[v->id];
}

/* Records v's signature and global type; result 0 of an op and a graph input carry it as flow.sbp. */
static void set_sig(Sbp *s, FcValue *v, FcSbp sig, const FcType *global) {
  ValueInfo *vi = info_of(s, v);
  vi->sig = sig;
  vi->global = *global;
  vi->set = true;
  char buf[32];
  fc_sbp_str(sig, buf, sizeof buf);
  FcAnnotValue *e = FC_NEW_ARRAY(s->scratch, FcAnnotValue, (size_t)s->n_axes);
  for (int i = 0; i < s->n_axes; i++) e[i] = FC_AV_STRING(buf);
  FcAnnotValue list = FC_AV_LIST(e, s->n_axes);
  if (!v->def) fc_input_set_annot(s->g, v, fc_annot_name(FC_ANNOT_SBP), &list);
  else if (v->index == 0) fc_op_set_annot(v->def, fc_annot_name(FC_ANNOT_SBP), &list);
}

static FcValue *boxing_op(FcBuilder *b, FcOpKind kind, FcValue *x, int64_t dim, int64_t dim2, FcSbpReduce r) {
  FcAttr attrs[3];
  int n = 0;
  switch (kind) {
  case FC_OP_LOCAL_SLICE:
  case FC_OP_ALL_GATHER: attrs[n++] = FC_A_INT(DIM, dim); break;
  case FC_OP_ALL_REDUCE: attrs[n++] = FC_A_STR(REDUCE, fc_sbp_reduce_name(r)); break;
  case FC_OP_REDUCE_SCATTER:
    attrs[n++] = FC_A_INT(DIM, dim);
    attrs[n++] = FC_A_STR(REDUCE, fc_sbp_reduce_name(r));
    break;
  case FC_OP_ALL_TO_ALL:
    attrs[n++] = FC_A_INT(CONCAT_DIM, dim2);
    attrs[n++] = FC_A_INT(SPLIT_DIM, dim);
    break;
  default: FC_UNREACHABLE();
  }
  attrs[n++] = FC_A_INT(MESH_AXIS, -1);
  return fc_b_op1(b, kind, &x, 1, attrs, n);
}

/* A constant taken S(d), d > 0: a constant [G, D0.., D(d)/G, ..] holding rank r's chunk at index r, its
 * local_slice along dim 0 and a reshape to the local type. NULL: take the plain local_slice. */
static FcValue *split_constant(Sbp *s, FcBuilder *b, FcValue *v, int d) {
  const FcTensor *t = fc_value_const(v);
  /* nbytes > 0: every dim is positive, so the products below are at most the element count. */
  if (!t || t->type.quant || d == 0 || t->type.rank >= FC_DEFAULT_MAX_RANK || t->nbytes <= 0) return NULL;
  const FcType *ty = &t->type;
  int64_t g = s->group, c = ty->dims[d] / g, outer = 1, inner = 1;
  for (int i = 0; i < d; i++) outer *= ty->dims[i];
  for (int i = d + 1; i < ty->rank; i++) inner *= ty->dims[i];
  int64_t dims[FC_DEFAULT_MAX_RANK + 1], local[FC_DEFAULT_MAX_RANK];
  dims[0] = g;
  for (int i = 0; i < ty->rank; i++) dims[i + 1] = local[i] = i == d ? c : ty->dims[i];
  FcTensor *nt = fc_tensor_new(&s->m->arena, fc_type_make(&s->m->arena, ty->dtype, ty->rank + 1, dims));
  size_t es = fc_dtype_size(ty->dtype), run = (size_t)(c * inner) * es;
  for (int64_t r = 0; r < g; r++)
    for (int64_t o = 0; o < outer; o++)
      memcpy((char *)nt->data + (size_t)((r * outer + o) * c * inner) * es,
             (const char *)t->data + (size_t)((o * ty->dims[d] + r * c) * inner) * es, run);
  FcValue *k = fc_b_const_tensor(b, nt);
  if (!k) return NULL;
  set_sig(s, k, FC_SBP_BCAST, &k->type);
  FcValue *sl = boxing_op(b, FC_OP_LOCAL_SLICE, k, 0, 0, FC_SBP_SUM);
  if (!sl) return NULL;
  set_sig(s, sl, FC_SBP_SPLIT(0), &k->type);
  FcValue *y = fc_b_reshape(b, sl, ty->rank, local);
  if (y) set_sig(s, y, FC_SBP_SPLIT(d), ty);
  return y;
}

static FcValue *box_new(Sbp *s, FcValue *v, FcSbp from, FcSbp to, FcOp *before);

/* v (signature `from`) as signature `to`, boxed in front of `before`; NULL after an error. */
static FcValue *box(Sbp *s, FcValue *v, FcSbp from, FcSbp to, FcOp *before) {
  if (fc_sbp_equal(from, to)) return v;
  /* Boxed for an earlier op already: that op precedes `before`, so the boxed value dominates it. */
  for (Boxed *bx = info_of(s, v)->boxed; bx; bx = bx->next)
    if (fc_sbp_equal(bx->to, to)) return bx->y;
  FcValue *y = box_new(s, v, from, to, before);
  if (y) {
    Boxed *bx = FC_NEW(s->scratch, Boxed);
    *bx = (Boxed){to, y, info_of(s, v)->boxed};
    info_of(s, v)->boxed = bx;
  }
  return y;
}

static FcValue *box_new(Sbp *s, FcValue *v, FcSbp from, FcSbp to, FcOp *before) {
  FcBuilder b;
  fc_rw_builder_before(&b, before, s->diag);
  FcType global = info_of(s, v)->global;
  FcValue *y = NULL;
  if (to.kind == FC_SBP_P) {
    /* No rule asks for a partial operand that does not arrive partial. */
    fc_error(s->diag, FC_ERR_INTERNAL, "sbp: node '%s': cannot box to a partial value", fc_op_name(before));
    return NULL;
  }
  switch (from.kind) {
  case FC_SBP_B:
    if ((y = split_constant(s, &b, v, to.dim))) return y;
    if (fc_b_status(&b) != FC_OK) return NULL;
    y = boxing_op(&b, FC_OP_LOCAL_SLICE, v, to.dim, 0, FC_SBP_SUM);
    break;
  case FC_SBP_S:
    y = to.kind == FC_SBP_B ? boxing_op(&b, FC_OP_ALL_GATHER, v, from.dim, 0, FC_SBP_SUM)
                            : boxing_op(&b, FC_OP_ALL_TO_ALL, v, to.dim, from.dim, FC_SBP_SUM);
    break;
  case FC_SBP_P:
    y = to.kind == FC_SBP_B ? boxing_op(&b, FC_OP_ALL_REDUCE, v, 0, 0, from.reduce)
                            : boxing_op(&b, FC_OP_REDUCE_SCATTER, v, to.dim, 0, from.reduce);
    break;
  }
  if (!y) return NULL;
  set_sig(s, y, to, &global);
  return y;
}

/* The local type of a value of global type t with signature sig. */
static FcType local_type(Sbp *s, const FcType *t, FcSbp sig) {
  if (sig.kind != FC_SBP_S) return *t;
  int64_t *d = FC_NEW_ARRAY(s->scratch, int64_t, (size_t)(t->rank > 0 ? t->rank : 1));
  memcpy(d, t->dims, (size_t)t->rank * sizeof *d);
  d[sig.dim] /= s->group;
  FcType l = *t;
  l.dims = d;
  return l;
}

/* Shape attributes that spell the result's dims, rewritten to the local result. */
static void localize_attrs(Sbp *s, FcOp *op, const FcType *local, int split) {
  if (op->kind == FC_OP_RESHAPE) {
    fc_op_set_attr(op, FC_A_INTS(SHAPE, local->dims, local->rank));
  } else if (op->kind == FC_OP_SLICE) {
    const int64_t *ends;
    int n = fc_op_attr_ints(op, FC_ATTR_ENDS, &ends);
    int64_t *e = FC_NEW_ARRAY(s->scratch, int64_t, (size_t)(n > 0 ? n : 1));
    if (n) memcpy(e, ends, (size_t)n * sizeof *e);
    /* rule_slice keeps a split only through a whole dim (start 0, step 1), whose end is then the local dim;
     * the other dims are sliced as before. */
    if (split < n) e[split] = local->dims[split];
    fc_op_set_attr(op, FC_A_INTS(ENDS, e, n));
  }
}

static FcStatus distribute_op(Sbp *s, int k) {
  FcOp *op = s->p->ops[k];
  const FcSbp *need = s->p->need[k], *out = s->p->out[k];
  int n_in = op->n_operands, n_out = op->n_results;
  FcType *global = FC_NEW_ARRAY(s->scratch, FcType, (size_t)n_out + 1);
  bool any_split_in = false, kept = false;
  for (int i = 0; i < n_in; i++) {
    FcValue *v = op->operands[i].value;
    if (!v) continue;
    FC_ASSERT(info_of(s, v)->set);
    any_split_in |= info_of(s, v)->sig.kind == FC_SBP_S;
    kept |= need[i].kind != FC_SBP_B;
  }
  for (int j = 0; j < n_out; j++) {
    global[j] = op->results[j].type;
    kept |= out[j].kind != FC_SBP_B;
  }
  if (op->kind != FC_OP_RETURN && !kept && any_split_in) {
    /* Only a gathered split is worth a note: reducing partial sums before a non-linear op (a bias add after a
     * row-parallel matmul) is the plan, not a loss. */
    FcAnnotValue note = FC_AV_STRING(fc_sbp_rule(op->kind) ? "no split of these operands carries through this op: it runs on whole tensors"
                                                            : "no SBP rule for this op: it runs on whole tensors");
    fc_op_set_annot(op, fc_annot_name(FC_ANNOT_SBP_NOTE), &note);
  }
  for (int i = 0; i < n_in; i++) {
    FcValue *v = op->operands[i].value;
    if (!v || fc_sbp_equal(info_of(s, v)->sig, need[i])) continue;
    FcValue *y = box(s, v, info_of(s, v)->sig, need[i], op);
    if (!y) return s->diag->status != FC_OK ? s->diag->status : FC_ERR_INTERNAL;
    fc_op_set_operand(op, i, y);
  }
  if (op->kind == FC_OP_RETURN) return FC_OK;
  FcType *local = FC_NEW_ARRAY(s->scratch, FcType, (size_t)n_out + 1);
  for (int j = 0; j < n_out; j++) local[j] = local_type(s, &global[j], out[j]);
  if (n_out && out[0].kind == FC_SBP_S) localize_attrs(s, op, &local[0], out[0].dim);
  FcStatus st = fc_op_infer_results(op, &s->m->arena, s->diag);
  if (st != FC_OK) return st;
  for (int j = 0; j < n_out; j++) {
    if (!fc_type_equal(&op->results[j].type, &local[j])) {
      char a[256], b[256];
      return fc_error_node(s->diag, FC_ERR_INTERNAL, fc_op_name(op), fc_op_info(op->kind)->name,
                           "sbp: result %d is %s on a rank, expected %s", j, fc_type_str(&op->results[j].type, a, sizeof a),
                           fc_type_str(&local[j], b, sizeof b));
    }
    set_sig(s, &op->results[j], out[j], &global[j]);
  }
  return FC_OK;
}

FcStatus fc_sbp_apply(const FcSbpPlan *p, FcPassContext *pc) {
  FcModule *m = p->m;
  Sbp s = {.p = p, .m = m, .g = p->g, .diag = pc->diag, .scratch = &pc->scratch, .group = p->group};
  s.n_axes = fc_module_mesh(m, NULL);
  if (s.group == 1) return FC_OK; /* one rank: the program is the one-process program */
  FcGraph *g = p->g;
  FC_ASSERT(g->next_value_id == p->n_ids); /* the plan is for this graph as it is */
  for (int i = 0; i < g->n_inputs; i++) {
    FcValue *x = g->inputs[i];
    set_sig(&s, x, FC_SBP_BCAST, &x->type);
  }
  for (int k = 0; k < p->n_ops; k++)
    if (p->ops[k]->kind == FC_OP_CONSTANT) set_sig(&s, &p->ops[k]->results[0], FC_SBP_BCAST, &p->ops[k]->results[0].type);
  /* Inputs planned split are sliced once, at the top, named after the input (not after the op they went in
   * front of). */
  for (int i = 0; i < g->n_inputs && g->first; i++) {
    FcValue *x = g->inputs[i];
    if (p->input[i].kind == FC_SBP_B || !fc_value_has_uses(x)) continue;
    FcValue *y = box(&s, x, FC_SBP_BCAST, p->input[i], g->first);
    if (!y) return pc->diag->status != FC_OK ? pc->diag->status : FC_ERR_INTERNAL;
    fc_value_replace_all_uses(x, y);
    fc_op_set_operand(y->def, 0, x);
    y->def->loc = x->name;
  }
  for (int k = 0; k < p->n_ops; k++) {
    if (p->ops[k]->kind == FC_OP_CONSTANT) continue;
    FcStatus st = distribute_op(&s, k);
    if (st != FC_OK) return st;
  }
  return FC_OK;
}

/* ---- the fixed strategies ------------------------------------------------------------------------------- */

static FcStatus run_fixed(FcModule *m, FcPassContext *pc, FcSbpStrategy strategy, const char *name) {
  if (m->graph->parent) return FC_OK;
  if (fc_module_mesh(m, NULL) == 0)
    return fc_error(pc->diag, FC_ERR_INPUT, "pass %s needs the module's mesh (flow.mesh: flowc build --ranks N)", name);
  FcSbpPlan p;
  FcStatus st = fc_sbp_plan_init(&p, m, &pc->scratch, pc->diag);
  if (st == FC_OK && p.group > 1) st = fc_sbp_plan_forward(&p, strategy, NULL, &pc->scratch, pc->diag);
  if (st == FC_OK) st = fc_sbp_apply(&p, pc);
  return st;
}

FcStatus fc_pass_sbp_data(FcModule *m, FcPassContext *pc) { return run_fixed(m, pc, FC_SBP_DATA, "sbp_data"); }
FcStatus fc_pass_sbp_tensor(FcModule *m, FcPassContext *pc) { return run_fixed(m, pc, FC_SBP_TENSOR, "sbp_tensor"); }
