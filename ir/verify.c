/* verify.c — checks that a module is well formed (after import, after parsing, and with
 * --verify-each after every pass).
 *
 * One walk over the op list checks each op against the op table (operand/result counts, attribute
 * names, kinds and presence), checks that every operand is a graph input or a result of an earlier,
 * live op (SSA dominance in a single block), that every type is within the rank limit and has an
 * element count and byte size that fit int64, and finally re-runs the op's inference hook through
 * fc_op_infer so recorded result types must equal inferred ones. Inference runs only once the op's
 * shape is sound, because hooks may rely on the counts and attributes the table promises. Quantised
 * types are checked like the parser checks them (fc_quant_problem), and annotations against annot.c's
 * table, relative to the op's first result (or the graph input) they describe.
 *
 * Use lists are checked without a hash set: every use found in a value's list must be a real operand
 * slot of a live op that names that value, and the lists together must hold exactly as many uses as
 * there are operands. Since a slot names one value, it can sit in one list only, and a finite linked
 * list holds no slot twice; so the counts agree only if every operand is in its value's list. List walks
 * are bounded by that count, so a corrupted (cyclic) list is reported instead of looping.
 *
 * Regions (flow.loop, flow.if) are verified as graphs of their own, each with its own Verifier, before
 * the op owning them is re-inferred (its hook reads their yields): each must end in flow.yield, point
 * back at its op, and use only its block arguments and its own values, since regions are isolated from
 * above; a use of an outer value is reported naming both the user and the region op. The function
 * ends in func.return, a region never does. Nesting is bounded by FC_MAX_REGION_DEPTH.
 *
 * Every failure is a bug in flowc (the importer and the parser refuse bad input themselves), so the
 * status is FC_ERR_INTERNAL; messages read "node '<loc>' (<mnemonic>): <what>".
 */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Verifier {
  FcGraph *g;
  int depth;               /* region nesting of g (0: the function) */
  FcDiag *diag;
  uint32_t n_value_ids, n_op_ids;
  const FcValue **defined; /* value id -> the value, once defined in walk order */
  const FcOp **live;       /* op id -> the op, for ops in the graph's list */
  int64_t *listed;         /* op id -> uses of this op found in use lists */
} Verifier;

static void *vcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) fc_die(__FILE__, __LINE__, "out of memory");
  return p;
}

__attribute__((format(printf, 3, 4))) static bool node_err(Verifier *vr, const FcOp *op, const char *fmt, ...) {
  char what[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  fc_error_node(vr->diag, FC_ERR_INTERNAL, fc_op_name(op), fc_op_info(op->kind)->name, "%s", what);
  return false;
}

__attribute__((format(printf, 2, 3))) static bool graph_err(Verifier *vr, const char *fmt, ...) {
  char what[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  fc_error(vr->diag, FC_ERR_INTERNAL, "graph @%s: %s", vr->g->name ? vr->g->name : "?", what);
  return false;
}

/* Why a type is unusable, or NULL if it is fine. */
static const char *type_problem(const FcType *t) {
  if ((unsigned)t->dtype >= FC_DT_COUNT) return "an invalid element type";
  if (t->rank < 0) return "a negative rank";
  if (t->rank > FC_DEFAULT_MAX_RANK) return "a rank above the limit of 16";
  if (t->rank > 0 && !t->dims) return "no dimensions";
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i] < 0) return "a negative dimension";
  int64_t nbytes;
  if (!fc_type_nbytes(t, &nbytes)) return "an element count or byte size that overflows";
  return NULL;
}

/* Why a well-formed type's quantisation is malformed (into buf), or NULL. */
static const char *quant_problem(const FcType *t, char *buf, size_t cap) {
  if (!t->quant) return NULL;
  if (t->dtype != t->quant->storage) return "a quantised element type whose storage differs from its dtype";
  return fc_quant_problem(t->quant, t, buf, cap) ? buf : NULL;
}

/* The annotations of an op (subject: its first result) or a graph input, against annot.c's table. */
static bool check_annots(Verifier *vr, const FcOp *op, int input, const FcAnnots *l, const FcType *subject) {
  if (l->n < 0 || (l->n > 0 && !l->v)) {
    if (op) return node_err(vr, op, "has a bad annotation list");
    return graph_err(vr, "input %d has a bad annotation list", input);
  }
  for (int i = 0; i < l->n; i++) {
    char why[1024];
    bool ok = l->v[i].name && fc_annot_check(l->v[i].name, &l->v[i].value, subject, why, sizeof why);
    if (!l->v[i].name) snprintf(why, sizeof why, "an annotation has no name");
    else if (ok && i > 0 && strcmp(l->v[i - 1].name, l->v[i].name) >= 0)
      ok = false, snprintf(why, sizeof why, "annotations are not sorted by name at '%s'", l->v[i].name);
    else if (ok && (strcmp(l->v[i].name, fc_annot_name(FC_ANNOT_MESH)) == 0 ||
                    strcmp(l->v[i].name, fc_annot_name(FC_ANNOT_RANK)) == 0))
      ok = false, snprintf(why, sizeof why, "%s belongs on the module, not on a value", l->v[i].name);
    else if (ok && strcmp(l->v[i].name, fc_annot_name(FC_ANNOT_SBP)) == 0) {
      /* One signature per axis of the module's mesh (when it has one: a hand-annotated module without a
       * mesh is only checked for spelling), so a boxing op's mesh_axis names the entry it changes. */
      int axes = fc_module_mesh(vr->g->module, NULL);
      int n = l->v[i].value.array.n;
      if (axes > 0 && axes != n)
        ok = false, snprintf(why, sizeof why, "flow.sbp has %d entries but the module's mesh has %d axes", n, axes);
    }
    if (ok) continue;
    if (op) return node_err(vr, op, "%s", why);
    return graph_err(vr, "input %d ('%s'): %s", input, vr->g->inputs[input]->name ? vr->g->inputs[input]->name : "",
                     why);
  }
  return true;
}

static bool check_attr_value(Verifier *vr, const FcOp *op, const FcAttr *a) {
  const char *an = fc_attr_name_str(a->name);
  switch (a->kind) {
  case FC_AK_STR:
    if (!a->s) return node_err(vr, op, "attribute '%s' has no string", an);
    return true;
  case FC_AK_PROGRAM:
    if (!a->prog) return node_err(vr, op, "attribute '%s' has no program", an);
    return true;
  case FC_AK_INTS:
    if (a->ints.n < 0 || (a->ints.n > 0 && !a->ints.v)) return node_err(vr, op, "attribute '%s' has a bad array", an);
    return true;
  case FC_AK_FLOATS:
    if (a->floats.n < 0 || (a->floats.n > 0 && !a->floats.v))
      return node_err(vr, op, "attribute '%s' has a bad array", an);
    return true;
  case FC_AK_TYPE: {
    if ((unsigned)a->type >= FC_DT_COUNT) return node_err(vr, op, "attribute '%s' is an invalid element type", an);
    char why[512];
    if (a->quant && (a->quant->storage != a->type || fc_quant_problem(a->quant, NULL, why, sizeof why)))
      return node_err(vr, op, "attribute '%s' is an invalid quantised type", an);
    return true;
  }
  case FC_AK_TENSOR: {
    if (!a->tensor) return node_err(vr, op, "attribute '%s' has no tensor", an);
    const char *why = type_problem(&a->tensor->type);
    if (why) return node_err(vr, op, "attribute '%s' has a tensor type with %s", an, why);
    int64_t nbytes;
    fc_type_nbytes(&a->tensor->type, &nbytes);
    if (a->tensor->nbytes != nbytes)
      return node_err(vr, op, "attribute '%s' records %lld bytes for a tensor of %lld bytes", an,
                      (long long)a->tensor->nbytes, (long long)nbytes);
    return true;
  }
  default: return true;
  }
}

/* "2", "2 to 3" or "at least 1". */
static const char *range_str(int lo, int hi, char *buf, size_t cap) {
  if (hi < 0) snprintf(buf, cap, "at least %d", lo);
  else if (lo == hi) snprintf(buf, cap, "%d", lo);
  else snprintf(buf, cap, "%d to %d", lo, hi);
  return buf;
}

/* Counts and attributes against the op table. */
static bool check_schema(Verifier *vr, const FcOp *op) {
  const FcOpInfo *info = fc_op_info(op->kind);
  char r[64];
  if (op->n_operands < info->in_min || (info->in_max >= 0 && op->n_operands > info->in_max))
    return node_err(vr, op, "has %d operands, expected %s", op->n_operands, range_str(info->in_min, info->in_max, r, sizeof r));
  if (op->n_results < info->out_min || op->n_results > info->out_max)
    return node_err(vr, op, "has %d results, expected %s", op->n_results, range_str(info->out_min, info->out_max, r, sizeof r));
  if (op->n_attrs < 0 || (op->n_attrs > 0 && !op->attrs)) return node_err(vr, op, "has a bad attribute array");
  for (int i = 0; i < op->n_attrs; i++) {
    const FcAttr *a = &op->attrs[i];
    if ((unsigned)a->name >= FC_ATTR_NAME_COUNT) return node_err(vr, op, "has an attribute with an invalid name");
    const char *an = fc_attr_name_str(a->name);
    const FcAttrSpec *spec = NULL;
    for (int k = 0; k < info->n_attrs; k++)
      if (info->attrs[k].name == a->name) spec = &info->attrs[k];
    if (!spec) return node_err(vr, op, "unknown attribute '%s'", an);
    for (int k = 0; k < i; k++)
      if (op->attrs[k].name == a->name) return node_err(vr, op, "duplicate attribute '%s'", an);
    if (a->kind != spec->kind)
      return node_err(vr, op, "attribute '%s' is %s, expected %s", an, fc_attr_kind_str(a->kind), fc_attr_kind_str(spec->kind));
    if (!check_attr_value(vr, op, a)) return false;
  }
  for (int k = 0; k < info->n_attrs; k++)
    if (!info->attrs[k].optional && !fc_op_attr(op, info->attrs[k].name))
      return node_err(vr, op, "missing attribute '%s'", fc_attr_name_str(info->attrs[k].name));
  return true;
}

static bool check_operands(Verifier *vr, const FcOp *op) {
  if (op->n_operands > 0 && !op->operands) return node_err(vr, op, "has no operand array");
  for (int i = 0; i < op->n_operands; i++) {
    const FcUse *u = &op->operands[i];
    const FcValue *v = u->value;
    if (!v) return node_err(vr, op, "operand %d is missing", i);
    if (u->user != op || u->index != i) return node_err(vr, op, "operand %d has a use record of another slot", i);
    if (v->id >= vr->n_value_ids || vr->defined[v->id] != v) {
      if (v->def && v->def->erased) return node_err(vr, op, "operand %d is a result of an erased op", i);
      bool foreign = v->def ? v->def->graph != vr->g
                            : !(v->index >= 0 && v->index < vr->g->n_inputs && vr->g->inputs[v->index] == v);
      if (foreign && vr->g->parent)
        return node_err(vr, op, "operand %d is defined outside the region of '%s' (%s); regions are isolated from "
                        "above, so it must be passed as an operand", i, fc_op_name(vr->g->parent),
                        fc_op_info(vr->g->parent->kind)->full_name);
      return node_err(vr, op, "operand %d is not defined before its use", i);
    }
  }
  return true;
}

static bool define_results(Verifier *vr, const FcOp *op) {
  if (op->n_results > 0 && !op->results) return node_err(vr, op, "has no result array");
  for (int i = 0; i < op->n_results; i++) {
    const FcValue *v = &op->results[i];
    const char *why = type_problem(&v->type);
    if (why) return node_err(vr, op, "result %d has a type with %s", i, why);
    char qbuf[512];
    if ((why = quant_problem(&v->type, qbuf, sizeof qbuf)))
      return node_err(vr, op, "result %d has an invalid quantised type: %s", i, why);
    if (v->def != op || v->index != i) return node_err(vr, op, "result %d does not point back at its op", i);
    if (v->id >= vr->n_value_ids || vr->defined[v->id])
      return node_err(vr, op, "result %d has an id that is out of range or reused", i);
    vr->defined[v->id] = v;
  }
  return true;
}

/* Re-infers result types (fc_op_infer restores the recorded ones either way). */
static bool check_infer(Verifier *vr, FcOp *op) {
  FcDiag d;
  fc_diag_init(&d);
  if (fc_op_infer(op, &d) == FC_OK) return true;
  const char *mn = fc_op_info(op->kind)->name, *msg = d.msg;
  size_t n = strlen(mn);
  if (strncmp(msg, mn, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ') msg += n + 2; /* hooks prefix the mnemonic */
  return node_err(vr, op, "%s", msg);
}

/* The op list itself: links, membership, ids. */
static bool check_list(Verifier *vr) {
  FcGraph *g = vr->g;
  const FcOp *prev = NULL;
  uint32_t n = 0;
  for (FcOp *op = g->first; op; prev = op, op = op->next) {
    if (++n > vr->n_op_ids)
      return graph_err(vr, "the op list is longer than the ops ever created (a cycle)");
    if ((unsigned)op->kind >= FC_OP_COUNT)
      return graph_err(vr, "op %u has an invalid kind", (unsigned)op->id);
    if (op->prev != prev) return node_err(vr, op, "its prev link does not point at the previous op");
    if (op->graph != g) return node_err(vr, op, "belongs to another graph");
    if (op->erased) return node_err(vr, op, "is erased but still in the op list");
    if (op->id >= vr->n_op_ids || vr->live[op->id]) return node_err(vr, op, "has an id that is out of range or reused");
    vr->live[op->id] = op;
  }
  if (g->last != prev) return graph_err(vr, "its last-op link is wrong");
  return true;
}

static bool check_inputs(Verifier *vr) {
  FcGraph *g = vr->g;
  for (int i = 0; i < g->n_inputs; i++) {
    const FcValue *v = g->inputs[i];
    if (!v || v->def || v->index != i)
      return graph_err(vr, "input %d is not a proper graph input", i);
    const char *why = type_problem(&v->type);
    if (why)
      return graph_err(vr, "input %d ('%s') has a type with %s", i,
                      v->name ? v->name : "", why);
    char qbuf[512];
    if ((why = quant_problem(&v->type, qbuf, sizeof qbuf)))
      return graph_err(vr, "input %d ('%s') has an invalid quantised type: %s", i, v->name ? v->name : "", why);
    if (!check_annots(vr, NULL, i, &v->annots, &v->type)) return false;
    if (v->id >= vr->n_value_ids || vr->defined[v->id])
      return graph_err(vr, "input %d has an id that is out of range or reused", i);
    vr->defined[v->id] = v;
  }
  return true;
}

/* Walks one value's use list; every entry must be a live operand slot naming `v`. */
static bool check_use_list(Verifier *vr, const FcValue *v, int64_t total, int64_t *seen) {
  const FcUse *prev = NULL;
  for (const FcUse *u = v->first_use; u; prev = u, u = u->next_use) {
    const FcOp *user = u->user;
    const FcOp *owner = v->def;
    if (++*seen > total)
      return graph_err(vr, "use lists hold more uses than there are operands (a cycle?)");
    if (u->prev_use != prev || u->value != v || !user || user->id >= vr->n_op_ids || vr->live[user->id] != user ||
        u->index < 0 || u->index >= user->n_operands || &user->operands[u->index] != u) {
      if (owner) return node_err(vr, owner, "the use list of result %d holds a stale or foreign use", v->index);
      return graph_err(vr, "the use list of input %d holds a stale or foreign use", v->index);
    }
    vr->listed[user->id]++;
  }
  return true;
}

static bool in_list(const FcUse *u) {
  for (const FcUse *x = u->value->first_use; x; x = x->next_use)
    if (x == u) return true;
  return false;
}

static bool check_uses(Verifier *vr) {
  FcGraph *g = vr->g;
  int64_t total = 0, seen = 0;
  fc_graph_for_each_op(g, op) total += op->n_operands;
  for (int i = 0; i < g->n_inputs; i++)
    if (!check_use_list(vr, g->inputs[i], total, &seen)) return false;
  fc_graph_for_each_op(g, op) {
    for (int i = 0; i < op->n_results; i++)
      if (!check_use_list(vr, &op->results[i], total, &seen)) return false;
  }
  if (seen == total) return true;
  /* Some operand is missing from its value's list; find it (lists are sound here, so walks end). */
  fc_graph_for_each_op(g, op) {
    if (vr->listed[op->id] == op->n_operands) continue;
    for (int i = 0; i < op->n_operands; i++)
      if (!in_list(&op->operands[i])) return node_err(vr, op, "operand %d is missing from its value's use list", i);
  }
  return graph_err(vr, "use lists and operands disagree");
}

static bool verify_graph(Verifier *vr);

static bool run_verifier(FcGraph *g, int depth, FcDiag *diag) {
  Verifier vr = {.g = g, .depth = depth, .diag = diag, .n_value_ids = g->next_value_id, .n_op_ids = g->next_op_id};
  vr.defined = vcalloc(vr.n_value_ids, sizeof *vr.defined);
  vr.live = vcalloc(vr.n_op_ids, sizeof *vr.live);
  vr.listed = vcalloc(vr.n_op_ids, sizeof *vr.listed);
  bool ok = verify_graph(&vr);
  free(vr.defined);
  free(vr.live);
  free(vr.listed);
  return ok;
}

/* The regions of op: as many as its kind owns, each pointing back at it, each a sound graph. */
static bool check_regions(Verifier *vr, const FcOp *op) {
  int want = op->kind == FC_OP_LOOP ? 1 : op->kind == FC_OP_IF ? 2 : 0;
  if (op->n_regions != want) return node_err(vr, op, "has %d regions, expected %d", op->n_regions, want);
  if (want && vr->depth + 1 > FC_MAX_REGION_DEPTH)
    return node_err(vr, op, "regions nest deeper than %d", FC_MAX_REGION_DEPTH);
  for (int r = 0; r < op->n_regions; r++) {
    FcGraph *body = op->regions ? op->regions[r] : NULL;
    if (!body || body->parent != op || body->module != vr->g->module)
      return node_err(vr, op, "region %d does not point back at its op", r);
    if (!run_verifier(body, vr->depth + 1, vr->diag)) return false;
  }
  return true;
}

static bool verify_graph(Verifier *vr) {
  FcGraph *g = vr->g;
  if (!check_list(vr) || !check_inputs(vr)) return false;
  FcOpKind term = g->parent ? FC_OP_YIELD : FC_OP_RETURN;
  const char *term_name = fc_op_info(term)->full_name;
  int n_terms = 0;
  fc_graph_for_each_op(g, op) {
    if (!check_schema(vr, op) || !check_operands(vr, op)) return false;
    if (op->kind == FC_OP_RETURN || op->kind == FC_OP_YIELD) {
      if (op->kind != term)
        return node_err(vr, op, "%s %s", fc_op_info(op->kind)->full_name,
                        g->parent ? "inside a region" : "outside a region");
      n_terms++;
      if (op != g->last) return node_err(vr, op, "%s is not the last op", term_name);
    }
    if (!check_regions(vr, op) || !define_results(vr, op) || !check_infer(vr, op)) return false;
    if (!check_annots(vr, op, -1, &op->annots, op->n_results ? &op->results[0].type : NULL)) return false;
  }
  if (n_terms == 0) {
    if (g->parent)
      return node_err(vr, g->parent, "a region of '%s' does not end in flow.yield", fc_op_name(g->parent));
    return graph_err(vr, "no func.return at the end");
  }
  if (!g->parent && g->n_output_names != g->last->n_operands)
    return graph_err(vr, "%d outputs but %d output names", g->last->n_operands,
                    g->n_output_names);
  return check_uses(vr);
}

FcStatus fc_verify(FcModule *m, FcDiag *diag) {
  FcDiag local;
  fc_diag_init(&local);
  for (int i = 0; i < m->annots.n; i++) {
    char why[1024];
    if (!fc_annot_check(m->annots.v[i].name, &m->annots.v[i].value, NULL, why, sizeof why))
      return fc_error(diag, FC_ERR_INPUT, "module attribute: %s", why);
  }
  const FcAnnotValue *rank = fc_annots_get(&m->annots, fc_annot_name(FC_ANNOT_RANK));
  int64_t ranks;
  if (rank && (!fc_mesh_group_size(m, -1, &ranks) || rank->i >= ranks))
    return fc_error(diag, FC_ERR_INPUT, "module attribute: flow.rank = %lld needs a flow.mesh of more ranks",
                    (long long)rank->i);
  if (run_verifier(m->graph, 0, &local)) return FC_OK;
  return fc_error(diag, local.status, "%s", local.msg);
}
