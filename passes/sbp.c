/* sbp.c — distributes the graph over the ranks of the module's mesh (flow.mesh): passes sbp_data and
 * sbp_tensor (flowc build --ranks N --sbp data|tensor).
 *
 * One forward walk in op order. Every value gets a signature (sbp_rules.h) and keeps its GLOBAL type beside
 * it in a table of this pass; the rule of each op (sbp_rules.def) chooses from its operands' signatures the
 * ones it takes and those of its results. Where an operand arrives with another signature than the op
 * takes, a boxing op goes in front of the op (B -> S local_slice, S -> B all_gather, P -> B all_reduce,
 * P -> S reduce_scatter, S -> S all_to_all). The op's shape attributes (reshape's shape, slice's ends) are
 * then rewritten to the local chunk and its result types re-inferred from its now local operands, and checked
 * against the global types split as chosen. Afterwards every value has its LOCAL type, so the later passes,
 * the kernels and the memory plan see an ordinary graph with a few collective ops. Every result gets its
 * signature as flow.sbp (one entry per mesh axis); an op that has no rule, or whose rule keeps no split, but
 * that received split or partial operands gets flow.sbp_note, which flowc info lists.
 *
 * The group of every boxing op is all ranks (mesh_axis -1: G = the product of the mesh, row-major rank
 * order), so on a 2-D mesh a split is over all its ranks and the annotation repeats the signature per axis
 * (splitting dim d along axis 0 and then along axis 1 gives the same chunks in the same order). Graph
 * inputs arrive whole on every rank (frt_main broadcasts them); sbp_data slices each input whose dim 0
 * divides by G (others stay B: an indivisible batch runs whole on every rank), and every graph output is
 * gathered to B, so rank 0 writes whole outputs. sbp_tensor leaves inputs whole and starts a split at each
 * matmul/conv by a constant weight (fc_sbp_tensor_start): column split, then the rules carry it through
 * element-wise ops, and the next matmul's K split gives P(sum), reduced once before anything non-linear (a
 * bias add included, so the bias is added once).
 *
 * A constant taken split along a dim other than 0 is stored re-laid as [G, ..., n/G, ...] (rank r's chunk
 * contiguous at r * chunk), so its local_slice is one contiguous copy of 1/G of the weight per run, not a
 * strided gather; a dim-0 split is contiguous already. (A view at offset rank*chunk would save that copy,
 * but then the GEMM kernels could no longer pack the weight at compile time either way; a per-rank build
 * would, and is left for later.)
 */
#include <string.h>

#include "passes.h"
#include "rewrite.h"
#include "sbp_rules.h"

typedef struct ValueInfo {
  FcSbp sig;
  FcType global; /* the value's type in the one-process program */
  bool set;
} ValueInfo;

typedef struct Sbp {
  FcModule *m;
  FcGraph *g;
  FcDiag *diag;
  FcArena *scratch;
  bool tensor;   /* sbp_tensor: start splits at weights */
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

/* v (signature `from`) as signature `to`, boxed in front of `before`; NULL after an error. */
static FcValue *box(Sbp *s, FcValue *v, FcSbp from, FcSbp to, FcOp *before) {
  if (fc_sbp_equal(from, to)) return v;
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

static FcStatus distribute_op(Sbp *s, FcOp *op) {
  int n_in = op->n_operands, n_out = op->n_results;
  const FcType **in_type = FC_NEW_ARRAY(s->scratch, const FcType *, (size_t)n_in + 1);
  FcSbp *in = FC_NEW_ARRAY(s->scratch, FcSbp, (size_t)n_in + 1), *need = FC_NEW_ARRAY(s->scratch, FcSbp, (size_t)n_in + 1);
  FcType *global = FC_NEW_ARRAY(s->scratch, FcType, (size_t)n_out + 1);
  FcSbp *out = FC_NEW_ARRAY(s->scratch, FcSbp, (size_t)n_out + 1);
  bool any_split_in = false;
  for (int i = 0; i < n_in; i++) {
    FcValue *v = op->operands[i].value;
    if (!v) continue;
    ValueInfo *vi = info_of(s, v);
    FC_ASSERT(vi->set);
    in_type[i] = &vi->global;
    in[i] = vi->sig;
    any_split_in |= vi->sig.kind == FC_SBP_S;
  }
  for (int j = 0; j < n_out; j++) global[j] = op->results[j].type;
  FcSbpRuleCtx c = {op, s->group, in_type, global, in, need, out};
  bool kept = false;
  if (op->kind != FC_OP_RETURN && op->n_regions == 0 && !fc_rw_is_quantised(op)) {
    if (s->tensor) kept = fc_sbp_tensor_start(&c);
    FcSbpRuleFn rule = fc_sbp_rule(op->kind);
    if (!kept && rule) kept = rule(&c);
    if (!kept) {
      for (int i = 0; i < n_in; i++) need[i] = FC_SBP_BCAST;
      for (int j = 0; j < n_out; j++) out[j] = FC_SBP_BCAST;
    }
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
    if (!v || fc_sbp_equal(in[i], need[i])) continue;
    FcValue *y = box(s, v, in[i], need[i], op);
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

static FcStatus run(FcModule *m, FcPassContext *pc, bool tensor) {
  /* Regions run whole on every rank: their loop or if takes B operands (it has no rule). */
  if (m->graph->parent) return FC_OK;
  const int64_t *mesh;
  Sbp s = {.m = m, .g = m->graph, .diag = pc->diag, .scratch = &pc->scratch, .tensor = tensor};
  s.n_axes = fc_module_mesh(m, &mesh);
  if (s.n_axes == 0)
    return fc_error(pc->diag, FC_ERR_INPUT, "pass sbp_%s needs the module's mesh (flow.mesh: flowc build --ranks N)",
                    tensor ? "tensor" : "data");
  if (!fc_mesh_group_size(m, -1, &s.group)) return fc_error(pc->diag, FC_ERR_INPUT, "the mesh has too many ranks");
  if (s.group == 1) return FC_OK; /* one rank: the program is the one-process program */
  FcGraph *g = m->graph;
  for (int i = 0; i < g->n_inputs; i++) {
    FcValue *x = g->inputs[i];
    set_sig(&s, x, FC_SBP_BCAST, &x->type);
  }
  fc_graph_for_each_op(g, op)
    if (op->kind == FC_OP_CONSTANT) set_sig(&s, &op->results[0], FC_SBP_BCAST, &op->results[0].type);
  if (!tensor && g->first) {
    for (int i = 0; i < g->n_inputs; i++) {
      FcValue *x = g->inputs[i];
      if (x->type.rank < 1 || x->type.dims[0] < s.group || x->type.dims[0] % s.group || !fc_value_has_uses(x)) continue;
      FcValue *y = box(&s, x, FC_SBP_BCAST, FC_SBP_SPLIT(0), g->first);
      if (!y) return pc->diag->status != FC_OK ? pc->diag->status : FC_ERR_INTERNAL;
      fc_value_replace_all_uses(x, y);
      fc_op_set_operand(y->def, 0, x);
      y->def->loc = x->name; /* named after the input, not after the op it went in front of */
    }
  }
  fc_graph_for_each_op(g, op) {
    if (op->kind == FC_OP_CONSTANT || (op->n_results && info_of(&s, &op->results[0])->set)) continue; /* inserted by this pass */
    FcStatus st = distribute_op(&s, op);
    if (st != FC_OK) return st;
  }
  return FC_OK;
}

FcStatus fc_pass_sbp_data(FcModule *m, FcPassContext *pc) { return run(m, pc, false); }
FcStatus fc_pass_sbp_tensor(FcModule *m, FcPassContext *pc) { return run(m, pc, true); }
