/* graph.c — modules, graphs, ops and use lists.
 *
 * Ops live in a doubly linked list per graph; the RETURN op is the last one and its operands are the
 * graph outputs. Each operand is an FcUse linked into its value's use list, so replacing all uses and
 * finding dead values never scans the graph. Attributes are kept in the op's schema order; setting one
 * copies its arrays and strings into the module arena.
 */
#include "ew_program.h"

#include <stdlib.h>
#include <string.h>

FcModule *fc_module_create(const char *source) {
  FcModule *m = calloc(1, sizeof *m);
  if (!m) fc_die(__FILE__, __LINE__, "out of memory");
  fc_arena_init(&m->arena);
  m->source = source ? fc_arena_strdup(&m->arena, source) : "<memory>";
  m->graph = FC_NEW(&m->arena, FcGraph);
  m->graph->module = m;
  m->graph->name = "main";
  return m;
}

void fc_module_destroy(FcModule *m) {
  if (!m) return;
  fc_arena_free(&m->arena);
  free(m);
}

FcValue *fc_graph_add_input(FcGraph *g, FcType type, const char *name) {
  FcArena *a = &g->module->arena;
  if (g->n_inputs == g->cap_inputs) {
    int cap = g->cap_inputs ? 2 * g->cap_inputs : 8;
    FcValue **n = FC_NEW_ARRAY(a, FcValue *, (size_t)cap);
    if (g->n_inputs) memcpy(n, g->inputs, (size_t)g->n_inputs * sizeof *n);
    g->inputs = n;
    g->cap_inputs = cap;
  }
  FcValue *v = FC_NEW(a, FcValue);
  v->type = fc_type_copy(a, &type);
  v->index = g->n_inputs;
  v->id = g->next_value_id++;
  v->name = fc_arena_strdup(a, name);
  g->inputs[g->n_inputs++] = v;
  return v;
}

FcOp *fc_graph_return(FcGraph *g) {
  return g->last && (fc_op_info(g->last->kind)->flags & FC_OPF_TERMINATOR) ? g->last : NULL;
}

int fc_graph_num_outputs(FcGraph *g) {
  FcOp *r = fc_graph_return(g);
  return r ? r->n_operands : 0;
}

FcValue *fc_graph_output(FcGraph *g, int i) { return fc_graph_return(g)->operands[i].value; }

const char *fc_graph_output_name(FcGraph *g, int i) {
  return i >= 0 && i < g->n_output_names ? g->output_names[i] : NULL;
}

FcOp *fc_graph_set_outputs(FcGraph *g, FcValue *const *outputs, const char *const *names, int n) {
  FcArena *a = &g->module->arena;
  FC_ASSERT(!fc_graph_return(g));
  FcOp *ret = fc_op_create(g, FC_OP_RETURN, outputs, n, 0);
  fc_op_insert_before(NULL, ret);
  g->output_names = n ? FC_NEW_ARRAY(a, const char *, (size_t)n) : NULL;
  for (int i = 0; i < n; i++) g->output_names[i] = fc_arena_strdup(a, names && names[i] ? names[i] : "");
  g->n_output_names = n;
  return ret;
}

static void use_link(FcUse *u, FcValue *v) {
  u->value = v;
  u->prev_use = NULL;
  u->next_use = v ? v->first_use : NULL;
  if (v) {
    if (v->first_use) v->first_use->prev_use = u;
    v->first_use = u;
  }
}

static void use_unlink(FcUse *u) {
  FcValue *v = u->value;
  if (!v) return;
  if (u->prev_use) u->prev_use->next_use = u->next_use;
  else v->first_use = u->next_use;
  if (u->next_use) u->next_use->prev_use = u->prev_use;
  u->value = NULL;
  u->prev_use = u->next_use = NULL;
}

FcOp *fc_op_create(FcGraph *g, FcOpKind kind, FcValue *const *operands, int n_operands, int n_results) {
  FcArena *a = &g->module->arena;
  FC_ASSERT(n_operands >= 0 && n_results >= 0);
  FcOp *op = FC_NEW(a, FcOp);
  op->kind = kind;
  op->graph = g;
  op->id = g->next_op_id++;
  op->n_operands = n_operands;
  op->n_results = n_results;
  op->operands = n_operands ? FC_NEW_ARRAY(a, FcUse, (size_t)n_operands) : NULL;
  for (int i = 0; i < n_operands; i++) {
    op->operands[i].user = op;
    op->operands[i].index = i;
    use_link(&op->operands[i], operands[i]);
  }
  op->results = n_results ? FC_NEW_ARRAY(a, FcValue, (size_t)n_results) : NULL;
  for (int i = 0; i < n_results; i++) {
    op->results[i].def = op;
    op->results[i].index = i;
    op->results[i].id = g->next_value_id++;
  }
  const FcOpInfo *info = fc_op_info(kind);
  op->attrs = info->n_attrs ? FC_NEW_ARRAY(a, FcAttr, (size_t)info->n_attrs) : NULL;
  return op;
}

static FcAttr copy_attr(FcArena *a, FcAttr at) {
  switch (at.kind) {
  case FC_AK_STR: at.s = fc_arena_strdup(a, at.s ? at.s : ""); break;
  case FC_AK_INTS:
    at.ints.v = at.ints.n ? fc_arena_memdup(a, at.ints.v, (size_t)at.ints.n * sizeof(int64_t), 8) : NULL;
    break;
  case FC_AK_FLOATS:
    at.floats.v = at.floats.n ? fc_arena_memdup(a, at.floats.v, (size_t)at.floats.n * sizeof(float), 4) : NULL;
    break;
  case FC_AK_PROGRAM:
    if (at.prog) at.prog = fc_arena_memdup(a, at.prog, sizeof *at.prog, _Alignof(FcEwProgram));
    break;
  case FC_AK_TYPE:
    if (at.quant) at.quant = fc_quant_copy(a, at.quant);
    break;
  default: break;
  }
  return at;
}

/* Attributes are stored sorted by their slot in the op's schema; names outside the schema are kept
 * after them (the verifier reports those). */
static int schema_slot(const FcOpInfo *info, FcAttrName name) {
  for (int i = 0; i < info->n_attrs; i++)
    if (info->attrs[i].name == name) return i;
  return info->n_attrs + (int)name;
}

void fc_op_set_attr(FcOp *op, FcAttr attr) {
  FcArena *a = &op->graph->module->arena;
  const FcOpInfo *info = fc_op_info(op->kind);
  attr = copy_attr(a, attr);
  for (int i = 0; i < op->n_attrs; i++)
    if (op->attrs[i].name == attr.name) {
      op->attrs[i] = attr;
      return;
    }
  /* Grow when an out-of-schema attribute arrives (only the parser does that, for the verifier). */
  if (op->n_attrs >= info->n_attrs) {
    FcAttr *n = FC_NEW_ARRAY(a, FcAttr, (size_t)op->n_attrs + 1);
    if (op->n_attrs) memcpy(n, op->attrs, (size_t)op->n_attrs * sizeof *n);
    op->attrs = n;
  }
  int slot = schema_slot(info, attr.name), pos = op->n_attrs;
  while (pos > 0 && schema_slot(info, op->attrs[pos - 1].name) > slot) {
    op->attrs[pos] = op->attrs[pos - 1];
    pos--;
  }
  op->attrs[pos] = attr;
  op->n_attrs++;
}

const FcAttr *fc_op_attr(const FcOp *op, FcAttrName name) {
  for (int i = 0; i < op->n_attrs; i++)
    if (op->attrs[i].name == name) return &op->attrs[i];
  return NULL;
}

int64_t fc_op_attr_int(const FcOp *op, FcAttrName name, int64_t dflt) {
  const FcAttr *a = fc_op_attr(op, name);
  return a && a->kind == FC_AK_INT ? a->i : dflt;
}

float fc_op_attr_float(const FcOp *op, FcAttrName name, float dflt) {
  const FcAttr *a = fc_op_attr(op, name);
  return a && a->kind == FC_AK_FLOAT ? a->f : dflt;
}

const char *fc_op_attr_str(const FcOp *op, FcAttrName name, const char *dflt) {
  const FcAttr *a = fc_op_attr(op, name);
  return a && a->kind == FC_AK_STR ? a->s : dflt;
}

const FcEwProgram *fc_op_attr_program(const FcOp *op, FcAttrName name) {
  const FcAttr *a = fc_op_attr(op, name);
  return a && a->kind == FC_AK_PROGRAM ? a->prog : NULL;
}

int fc_op_attr_ints(const FcOp *op, FcAttrName name, const int64_t **v) {
  const FcAttr *a = fc_op_attr(op, name);
  if (!a || a->kind != FC_AK_INTS) {
    *v = NULL;
    return 0;
  }
  *v = a->ints.v;
  return a->ints.n;
}

int fc_op_attr_floats(const FcOp *op, FcAttrName name, const float **v) {
  const FcAttr *a = fc_op_attr(op, name);
  if (!a || a->kind != FC_AK_FLOATS) {
    *v = NULL;
    return 0;
  }
  *v = a->floats.v;
  return a->floats.n;
}

void fc_op_insert_before(FcOp *pos, FcOp *op) {
  FcGraph *g = op->graph;
  FC_ASSERT(!op->prev && !op->next && g->first != op);
  if (!pos) {
    op->prev = g->last;
    if (g->last) g->last->next = op;
    else g->first = op;
    g->last = op;
    return;
  }
  FC_ASSERT(pos->graph == g);
  op->next = pos;
  op->prev = pos->prev;
  if (pos->prev) pos->prev->next = op;
  else g->first = op;
  pos->prev = op;
}

void fc_op_insert_after(FcOp *pos, FcOp *op) {
  FC_ASSERT(pos);
  fc_op_insert_before(pos->next, op);
}

void fc_op_erase(FcOp *op) {
  FcGraph *g = op->graph;
  for (int i = 0; i < op->n_results; i++) FC_ASSERT(!op->results[i].first_use);
  for (int i = 0; i < op->n_operands; i++) use_unlink(&op->operands[i]);
  if (op->prev) op->prev->next = op->next;
  else if (g->first == op) g->first = op->next;
  if (op->next) op->next->prev = op->prev;
  else if (g->last == op) g->last = op->prev;
  op->prev = op->next = NULL;
  op->erased = true;
}

void fc_op_set_operand(FcOp *op, int i, FcValue *v) {
  FC_ASSERT(i >= 0 && i < op->n_operands);
  use_unlink(&op->operands[i]);
  use_link(&op->operands[i], v);
}

void fc_value_replace_all_uses(FcValue *from, FcValue *to) {
  if (from == to) return;
  while (from->first_use) {
    FcUse *u = from->first_use;
    use_unlink(u);
    use_link(u, to);
  }
}

bool fc_value_has_uses(const FcValue *v) { return v->first_use != NULL; }

int fc_value_num_uses(const FcValue *v) {
  int n = 0;
  for (const FcUse *u = v->first_use; u; u = u->next_use) n++;
  return n;
}

const char *fc_op_name(const FcOp *op) { return op->loc ? op->loc : ""; }
