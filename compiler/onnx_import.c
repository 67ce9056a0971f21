/* onnx_import.c — ONNX model → flowc IR module.
 *
 * The importer walks the graph once, in ONNX's (topological) node order. ONNX names are resolved
 * through an open-addressing hash map (name → FcValue) sized up front from the graph, so lookups never
 * rehash. Initializers and Constant nodes become CONSTANT ops; graph inputs become graph inputs unless
 * bound (--bind), which makes them constants too. Each other node is dispatched to its legaliser
 * through the table in onnx_ops.def, sorted once and searched with bsearch.
 *
 * Unsupported ops are collected, never reported one at a time: a scan before the import lists every
 * op type without a table row (subgraphs of If/Loop/Scan included), and nodes whose legaliser says
 * fc_lx_unsupported join that list while the import carries on with the rest of the graph (skipping
 * nodes that consume what an unsupported node would have produced). At the end one FC_ERR_UNSUPPORTED
 * message names every unsupported op type with its count and node names. Any other error stops the
 * import at once, prefixed with the node it concerns.
 *
 * Subgraph attributes (Loop/Scan bodies, If branches) are imported when their legalisers ask
 * (lower_control.c), into the region graphs of the ops built for them, each in a scope of its own: the
 * names a subgraph reads from enclosing scopes are found up front (nested subgraphs included) and
 * mapped to captures (block arguments) or to copies of constants.
 *
 * Legalisers that need an input as a compile-time constant (shapes, axes, k, ...) call
 * fc_lx_const_input: it accepts a constant, folds a chain of pure ops over constants with the
 * reference evaluators (memoised: the folded results' uses are redirected to new constants), or asks
 * the bind callback for a graph input, which then becomes a constant at the start of the graph. Values
 * that get replaced that way are forwarded (by value id), so every later lookup sees the constant.
 */
#include "onnx_file.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The default-domain opsets a model may import: the legalisers handle each older form (Reshape-1's shape
 * attribute, Slice-1, Pad-2, ...), PyTorch's exporters wrote opset 6 for years, and newer exporters write
 * 18 and up. Which of an op's versions its legaliser implements is the op table's last column. */
#define FC_ONNX_OPSET_MIN 1
#define FC_ONNX_OPSET_MAX 21

/* ONNX 1.18 defines IR versions 1 to 11. Files from the next few releases pass (their new fields are
 * unknown fields to protobuf-c, and every op is checked by its opset anyway); far above that the number
 * is not a version but damage or a crafted file. */
#define FC_ONNX_IR_VERSION_LATEST 11
#define FC_ONNX_IR_VERSION_MAX 16

/* At most this many node names are listed per unsupported op type. */
#define FC_UNSUPPORTED_NAMES_PER_TYPE 5

/* ---- the ONNX op table ---------------------------------------------------------------------------- */

typedef struct OnnxOpRow {
  const char *domain; /* "" for ai.onnx */
  const char *op_type;
  FcLowerFn fn;
  int arg;  /* FcLower.arg */
  int upto; /* the newest opset of the domain whose form of the op the legaliser implements */
} OnnxOpRow;

static OnnxOpRow onnx_rows[] = {
#define FC_ONNX_OP(domain, name, fn, arg, upto) {domain, name, fn, arg, upto},
#include "onnx_ops.def"
#undef FC_ONNX_OP
};
static pthread_once_t onnx_rows_once = PTHREAD_ONCE_INIT;

static int row_cmp(const void *a, const void *b) {
  const OnnxOpRow *x = a, *y = b;
  int c = strcmp(x->domain, y->domain);
  return c ? c : strcmp(x->op_type, y->op_type);
}

static void sort_rows(void) { qsort(onnx_rows, sizeof onnx_rows / sizeof onnx_rows[0], sizeof onnx_rows[0], row_cmp); }

static const OnnxOpRow *find_row(const char *domain, const char *op_type) {
  pthread_once(&onnx_rows_once, sort_rows);
  OnnxOpRow key = {domain, op_type, NULL, 0, 0};
  return bsearch(&key, onnx_rows, sizeof onnx_rows / sizeof onnx_rows[0], sizeof onnx_rows[0], row_cmp);
}

/* "" and "ai.onnx" both name the default domain. */
static const char *norm_domain(const char *d) { return !d || !*d || strcmp(d, "ai.onnx") == 0 ? "" : d; }

/* ---- importer state -------------------------------------------------------------------------------- */

typedef struct NameSlot {
  const char *name;  /* NULL: empty slot; points into the model (alive during the import) */
  FcValue *value;    /* NULL when skipped */
  bool skipped;      /* produced by an unsupported node (or one downstream of it) */
  bool initializer;
} NameSlot;

typedef struct Unsupported {
  const char *op;     /* op type as listed: "Loop", "com.example.Foo" */
  const char *node;   /* node name or "<OpType>_<index>" */
  const char *reason; /* what the legaliser said; NULL for op types without a table row */
  size_t seq;         /* order of discovery, to keep names in graph order within a type */
} Unsupported;

typedef struct InputOrig {
  FcValue *value;
  int index; /* position among the model's graph inputs that are not initializers */
} InputOrig;

struct FcImporter {
  FcModule *m;
  FcGraph *g;
  FcArena *a;
  const FcImportOptions *opts;
  FcImportLimits lim;
  FcDiag *diag;
  const char *model_dir;
  const Onnx__ModelProto *model;
  NameSlot *slots;
  size_t cap_slots, n_slots;
  FcValue **fwd; /* by value id: the value that replaced it (a constant), or NULL */
  size_t n_fwd;
  uint8_t *nonconst; /* by op id: NC_* verdicts of earlier folding attempts */
  size_t n_nonconst;
  Unsupported *unsup;
  size_t n_unsup, cap_unsup;
  InputOrig *inputs;
  int n_inputs;
  const char *prefix;  /* labels unnamed nodes of a subgraph: "" or "Loop_0/body/" */
  bool body_skipped;   /* a subgraph just imported reads or yields a value of an unsupported node */
};

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The slot for `name`: its entry, or the empty slot where it would go. */
static NameSlot *slot_for(FcImporter *imp, const char *name) {
  size_t mask = imp->cap_slots - 1, i = (size_t)hash_name(name) & mask;
  while (imp->slots[i].name && strcmp(imp->slots[i].name, name) != 0) i = (i + 1) & mask;
  return &imp->slots[i];
}

static NameSlot *lookup(FcImporter *imp, const char *name) {
  NameSlot *s = slot_for(imp, name);
  return s->name ? s : NULL;
}

static FcValue *resolve(const FcImporter *imp, FcValue *v) {
  while (v && v->id < imp->n_fwd && imp->fwd[v->id]) v = imp->fwd[v->id];
  return v;
}

static void set_forward(FcImporter *imp, FcValue *from, FcValue *to) {
  if (from->id >= imp->n_fwd) {
    size_t n = imp->n_fwd ? imp->n_fwd : 64;
    while (n <= from->id) n *= 2;
    FcValue **f = realloc(imp->fwd, n * sizeof *f);
    if (!f) fc_die(__FILE__, __LINE__, "out of memory");
    memset(f + imp->n_fwd, 0, (n - imp->n_fwd) * sizeof *f);
    imp->fwd = f;
    imp->n_fwd = n;
  }
  imp->fwd[from->id] = to;
}

/* Defines an ONNX name; ONNX graphs are SSA, so a second definition is an error. */
static FcStatus define(FcImporter *imp, const char *name, FcValue *v, bool skipped, const char *node, const char *op) {
  NameSlot *s = slot_for(imp, name);
  if (s->name) {
    if (node) return fc_error_node(imp->diag, FC_ERR_INPUT, node, op, "output '%s' is already defined", name);
    return fc_error(imp->diag, FC_ERR_INPUT, "value '%s' is defined twice", name);
  }
  FC_ASSERT(imp->n_slots + 1 < imp->cap_slots);
  s->name = name;
  s->value = v;
  s->skipped = skipped;
  imp->n_slots++;
  return FC_OK;
}

static void note_unsupported(FcImporter *imp, const char *domain, const char *op_type, const char *node,
                             const char *reason) {
  if (imp->n_unsup == imp->cap_unsup) {
    size_t cap = imp->cap_unsup ? 2 * imp->cap_unsup : 16;
    Unsupported *u = realloc(imp->unsup, cap * sizeof *u);
    if (!u) fc_die(__FILE__, __LINE__, "out of memory");
    imp->unsup = u;
    imp->cap_unsup = cap;
  }
  Unsupported *u = &imp->unsup[imp->n_unsup];
  u->op = *domain ? fc_arena_printf(imp->a, "%s.%s", domain, op_type) : fc_arena_strdup(imp->a, op_type);
  u->node = fc_arena_strdup(imp->a, node);
  u->reason = reason ? fc_arena_strdup(imp->a, reason) : NULL;
  u->seq = imp->n_unsup++;
}

static const char *node_op(const Onnx__NodeProto *n) { return n->op_type ? n->op_type : ""; }

/* ---- the one message listing every unsupported op --------------------------------------------------- */

typedef struct StrBuf {
  char *s;
  size_t n, cap;
} StrBuf;

static void sb_printf(StrBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(StrBuf *b, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    FC_ASSERT(k >= 0);
    if (b->s && b->n + (size_t)k < b->cap) {
      b->n += (size_t)k;
      return;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap <= b->n + (size_t)k) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) fc_die(__FILE__, __LINE__, "out of memory");
    b->s = s;
    b->cap = cap;
  }
}

static int unsup_cmp(const void *a, const void *b) {
  const Unsupported *x = a, *y = b;
  int c = strcmp(x->op, y->op);
  return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static bool same_reason(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* "unsupported ops: Loop x2 ('loop_a', 'loop_b'), Resize x1 ('r': antialias is not supported)" — op
 * types in alphabetical order, their nodes in graph order. */
static FcStatus report_unsupported(FcImporter *imp) {
  qsort(imp->unsup, imp->n_unsup, sizeof *imp->unsup, unsup_cmp);
  StrBuf b = {0};
  sb_printf(&b, "unsupported ops: ");
  for (size_t i = 0; i < imp->n_unsup;) {
    size_t j = i;
    while (j < imp->n_unsup && strcmp(imp->unsup[j].op, imp->unsup[i].op) == 0) j++;
    size_t shown = j - i < FC_UNSUPPORTED_NAMES_PER_TYPE ? j - i : FC_UNSUPPORTED_NAMES_PER_TYPE;
    bool one_reason = true;
    for (size_t k = i + 1; k < i + shown; k++)
      one_reason = one_reason && same_reason(imp->unsup[k].reason, imp->unsup[i].reason);
    sb_printf(&b, "%s%s x%zu (", i ? ", " : "", imp->unsup[i].op, j - i);
    for (size_t k = i; k < i + shown; k++) {
      const Unsupported *u = &imp->unsup[k];
      if (one_reason) sb_printf(&b, "%s'%s'", k > i ? ", " : "", u->node);
      else sb_printf(&b, "%s'%s': %s", k > i ? "; " : "", u->node, u->reason ? u->reason : "no legaliser");
    }
    if (j - i > shown) sb_printf(&b, "%s...", one_reason ? ", " : "; ");
    if (one_reason && imp->unsup[i].reason) sb_printf(&b, ": %s", imp->unsup[i].reason);
    sb_printf(&b, ")");
    i = j;
  }
  FcStatus st = fc_error(imp->diag, FC_ERR_UNSUPPORTED, "%s", b.s);
  free(b.s);
  return st;
}

/* Lists every node (subgraphs included, breadth-first) whose op type has no table row. Unnamed nodes of
 * a subgraph are labelled through their parent ("If_0/then_branch/NonZero_1"), since their indices
 * repeat from one branch to the next. */
typedef struct SubGraph {
  const Onnx__GraphProto *g;
  const char *prefix; /* "" for the main graph */
} SubGraph;

static void scan_unsupported(FcImporter *imp, const Onnx__GraphProto *main_graph) {
  size_t cap = 8, n = 0;
  SubGraph *queue = malloc(cap * sizeof *queue);
  if (!queue) fc_die(__FILE__, __LINE__, "out of memory");
  queue[n++] = (SubGraph){main_graph, ""};
  for (size_t qi = 0; qi < n; qi++) {
    const Onnx__GraphProto *gp = queue[qi].g;
    const char *prefix = queue[qi].prefix;
    for (size_t i = 0; i < gp->n_node; i++) {
      const Onnx__NodeProto *node = gp->node[i];
      const char *dom = norm_domain(node->domain), *op = node_op(node);
      const char *label = node->name && *node->name ? node->name
                                                    : fc_arena_printf(imp->a, "%s%s_%zu", prefix, op, i);
      if (!find_row(dom, op)) note_unsupported(imp, dom, op, label, NULL);
      for (size_t k = 0; k < node->n_attribute; k++) {
        const Onnx__AttributeProto *at = node->attribute[k];
        const char *aname = at->name ? at->name : "";
        size_t extra = (at->g ? 1 : 0) + at->n_graphs;
        if (n + extra > cap) {
          while (n + extra > cap) cap *= 2;
          SubGraph *q = realloc(queue, cap * sizeof *q);
          if (!q) fc_die(__FILE__, __LINE__, "out of memory");
          queue = q;
        }
        if (at->g) queue[n++] = (SubGraph){at->g, fc_arena_printf(imp->a, "%s/%s/", label, aname)};
        for (size_t s = 0; s < at->n_graphs; s++)
          if (at->graphs[s])
            queue[n++] = (SubGraph){at->graphs[s], fc_arena_printf(imp->a, "%s/%s[%zu]/", label, aname, s)};
      }
    }
  }
  free(queue);
}

/* ---- opsets --------------------------------------------------------------------------------------- */

/* The highest version the model imports for a domain; -1 when it imports none. */
static int64_t opset_of(const Onnx__ModelProto *m, const char *domain) {
  int64_t v = -1;
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = m->opset_import[i];
    if (strcmp(norm_domain(o->domain), domain) == 0 && o->has_version && o->version > v) v = o->version;
  }
  return v;
}

static FcStatus check_versions(FcImporter *imp) {
  const Onnx__ModelProto *m = imp->model;
  if (m->has_ir_version && (m->ir_version < 0 || m->ir_version > FC_ONNX_IR_VERSION_MAX))
    return fc_error(imp->diag, FC_ERR_INPUT,
                    "the model's ir_version %lld is not an ONNX IR version (ONNX defines 1 to %d; flowc accepts up to "
                    "%d)", (long long)m->ir_version, FC_ONNX_IR_VERSION_LATEST, FC_ONNX_IR_VERSION_MAX);
  int64_t v = opset_of(imp->model, "");
  if (v >= 0 && (v < FC_ONNX_OPSET_MIN || v > FC_ONNX_OPSET_MAX))
    return fc_error(imp->diag, FC_ERR_UNSUPPORTED, "the model uses ONNX opset %lld; flowc supports opsets %d to %d",
                    (long long)v, FC_ONNX_OPSET_MIN, FC_ONNX_OPSET_MAX);
  return FC_OK;
}

/* ---- value types ------------------------------------------------------------------------------------ */

static const char *type_case_name(Onnx__TypeProto__ValueCase c) {
  switch (c) {
  case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: return "a sequence";
  case ONNX__TYPE_PROTO__VALUE_MAP_TYPE: return "a map";
  case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: return "an optional";
  case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE: return "a sparse tensor";
  default: return "not a tensor";
  }
}

/* Reads a graph input's declared tensor type. With allow_dynamic (bound inputs, whose file supplies the
 * shape), unknown dims come back as -1 and a missing shape as rank -1. */
static FcStatus input_type(FcImporter *imp, const Onnx__ValueInfoProto *vi, bool allow_dynamic, FcType *out) {
  const char *name = vi->name;
  const Onnx__TypeProto *tp = vi->type;
  if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) {
    if (allow_dynamic) {
      *out = (FcType){FC_DT_COUNT, -1, NULL};
      return FC_OK;
    }
    return fc_error(imp->diag, FC_ERR_INPUT, "input '%s' has no type", name);
  }
  if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
    return fc_error(imp->diag, FC_ERR_UNSUPPORTED, "input '%s' is %s; flowc supports tensors only", name,
                    type_case_name(tp->value_case));
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  if (!tt->has_elem_type || tt->elem_type == 0)
    return fc_error(imp->diag, FC_ERR_INPUT, "input '%s' has no element type", name);
  FcDtype dt;
  if (!fc_dtype_from_onnx(tt->elem_type, &dt)) {
    const char *dn = fc_onnx_dtype_name(tt->elem_type);
    if (!dn) return fc_error(imp->diag, FC_ERR_INPUT, "input '%s' has an invalid element type %d", name, (int)tt->elem_type);
    return fc_error(imp->diag, FC_ERR_UNSUPPORTED, "input '%s' has element type %s, which flowc does not support", name, dn);
  }
  if (!tt->shape) {
    if (allow_dynamic) {
      *out = (FcType){dt, -1, NULL};
      return FC_OK;
    }
    return fc_error(imp->diag, FC_ERR_UNSUPPORTED, "input '%s' has no shape (unknown rank); flowc needs static shapes",
                    name);
  }
  if (tt->shape->n_dim > (size_t)imp->lim.max_rank)
    return fc_error(imp->diag, FC_ERR_LIMIT, "input '%s' has rank %zu, over the limit of %d (raise it with --max-rank)",
                    name, tt->shape->n_dim, imp->lim.max_rank);
  int rank = (int)tt->shape->n_dim;
  int64_t *dims = rank ? FC_NEW_ARRAY(imp->a, int64_t, (size_t)rank) : NULL;
  bool dynamic = false;
  for (int i = 0; i < rank; i++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
      if (d->dim_value < 0)
        return fc_error(imp->diag, FC_ERR_INPUT, "input '%s' has a negative dimension %lld", name,
                        (long long)d->dim_value);
      dims[i] = d->dim_value;
      continue;
    }
    const char *param = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param &&
                                *d->dim_param ? d->dim_param : "?";
    if (!allow_dynamic)
      return fc_error(imp->diag, FC_ERR_UNSUPPORTED,
                      "input '%s' has a dynamic dimension '%s'; flowc needs static shapes: give them with --shape %s=DIMS",
                      name, param, name);
    dims[i] = -1;
    dynamic = true;
  }
  FcType t = {dt, rank, dims};
  int64_t nbytes;
  if (!dynamic && (!fc_type_nbytes(&t, &nbytes) || nbytes > FC_DEFAULT_MAX_TENSOR_BYTES))
    return fc_error(imp->diag, FC_ERR_LIMIT, "input '%s' is larger than the limit of %lld bytes", name,
                    (long long)FC_DEFAULT_MAX_TENSOR_BYTES);
  *out = t;
  return FC_OK;
}

/* A bound tensor must agree with what the model declares (unknown parts of the declaration aside). */
static bool type_accepts(const FcType *decl, const FcType *t) {
  if (decl->dtype != FC_DT_COUNT && decl->dtype != t->dtype) return false;
  if (decl->rank < 0) return true;
  if (decl->rank != t->rank) return false;
  for (int i = 0; i < t->rank; i++)
    if (decl->dims[i] >= 0 && decl->dims[i] != t->dims[i]) return false;
  return true;
}

static const char *decl_str(FcArena *a, const FcType *t) {
  if (t->rank < 0)
    return t->dtype == FC_DT_COUNT ? "of any type" : fc_arena_printf(a, "tensor<*x%s>", fc_dtype_name(t->dtype));
  char *s = fc_arena_strdup(a, "tensor<");
  for (int i = 0; i < t->rank; i++)
    s = t->dims[i] < 0 ? fc_arena_printf(a, "%s?x", s) : fc_arena_printf(a, "%s%lldx", s, (long long)t->dims[i]);
  return fc_arena_printf(a, "%s%s>", s, t->dtype == FC_DT_COUNT ? "?" : fc_dtype_name(t->dtype));
}

/* ---- graph set-up: bindings, initializers, inputs --------------------------------------------------- */

static const FcBinding *find_binding(const FcImporter *imp, const char *name) {
  for (int i = 0; i < imp->opts->n_bindings; i++)
    if (strcmp(imp->opts->bindings[i].name, name) == 0) return &imp->opts->bindings[i];
  return NULL;
}

static FcStatus check_bindings(FcImporter *imp, const Onnx__GraphProto *gp) {
  for (int i = 0; i < imp->opts->n_bindings; i++) {
    const FcBinding *bd = &imp->opts->bindings[i];
    if (!bd->name || !bd->path) return fc_error(imp->diag, FC_ERR_INPUT, "--bind needs NAME=FILE");
    for (int j = 0; j < i; j++)
      if (strcmp(imp->opts->bindings[j].name, bd->name) == 0)
        return fc_error(imp->diag, FC_ERR_INPUT, "--bind %s is given twice", bd->name);
    bool found = false;
    for (size_t k = 0; k < gp->n_input && !found; k++)
      found = gp->input[k]->name && strcmp(gp->input[k]->name, bd->name) == 0;
    if (!found)
      return fc_error(imp->diag, FC_ERR_INPUT, "--bind %s: the model has no graph input named '%s'", bd->name, bd->name);
  }
  return FC_OK;
}

static FcValue *add_constant(FcImporter *imp, const FcTensor *t, const char *loc, FcOp *before) {
  FcBuilder b;
  fc_builder_init(&b, imp->g, imp->diag);
  b.loc = loc;
  b.before = before;
  return fc_b_const_tensor(&b, t);
}

static FcStatus import_initializers(FcImporter *imp, const Onnx__GraphProto *gp) {
  if (gp->n_sparse_initializer) {
    const Onnx__SparseTensorProto *sp = gp->sparse_initializer[0];
    const char *name = sp->values && sp->values->name ? sp->values->name : "";
    return fc_error(imp->diag, FC_ERR_UNSUPPORTED, "sparse initializer '%s' is not supported", name);
  }
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *tp = gp->initializer[i];
    if (!tp->name || !*tp->name) return fc_error(imp->diag, FC_ERR_INPUT, "initializer %zu has no name", i);
    if (find_binding(imp, tp->name)) continue; /* an input with a default value, overridden by --bind */
    FcTensor *t;
    FcStatus st = fc_onnx_tensor_to_fc(tp, imp->model_dir, &imp->lim, imp->a, &t, imp->diag);
    if (st != FC_OK) return st;
    FcValue *v = add_constant(imp, t, tp->name, NULL);
    if (!v) return imp->diag->status;
    st = define(imp, tp->name, v, false, NULL, NULL);
    if (st != FC_OK) return st;
    lookup(imp, tp->name)->initializer = true;
  }
  return FC_OK;
}

static const FcInputShape *find_shape(const FcImporter *imp, const char *name) {
  for (int i = 0; i < imp->opts->n_shapes; i++)
    if (strcmp(imp->opts->shapes[i].name, name) == 0) return &imp->opts->shapes[i];
  return NULL;
}

/* Fixes the symbolic dims of an input's declared type to t (from --shape NAME=DIMS, or from the file
 * `flowc run` feeds it); t must agree with what the model declares. `what` starts the messages. */
static FcStatus fix_input_type(FcImporter *imp, const char *what, FcType t, FcType *decl) {
  if (t.rank > imp->lim.max_rank)
    return fc_error(imp->diag, FC_ERR_LIMIT, "%s: rank %d is over the limit of %d (raise it with --max-rank)", what,
                    t.rank, imp->lim.max_rank);
  for (int i = 0; i < t.rank; i++)
    if (t.dims[i] < 0) return fc_error(imp->diag, FC_ERR_INPUT, "%s: dimension %d is negative", what, i);
  if (!type_accepts(decl, &t))
    return fc_error(imp->diag, FC_ERR_INPUT, "%s: %s does not fit the declared %s", what, decl_str(imp->a, &t),
                    decl_str(imp->a, decl));
  int64_t nbytes;
  if (!fc_type_nbytes(&t, &nbytes) || nbytes > FC_DEFAULT_MAX_TENSOR_BYTES)
    return fc_error(imp->diag, FC_ERR_LIMIT, "%s: the input would be larger than the limit of %lld bytes", what,
                    (long long)FC_DEFAULT_MAX_TENSOR_BYTES);
  *decl = t;
  return FC_OK;
}

static bool type_is_static(const FcType *t) {
  if (t->rank < 0 || t->dtype == FC_DT_COUNT) return false;
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i] < 0) return false;
  return true;
}

/* The symbolic dims of a declared input, for messages: "a dynamic dimension 'N'" or "dynamic dimensions
 * 'N', 'T'" (article), else "dimension 'N'" or "dimensions 'N', 'T'". */
static const char *dynamic_dims(FcImporter *imp, const Onnx__ValueInfoProto *vi, bool article) {
  const Onnx__TensorShapeProto *sh = vi->type->tensor_type->shape;
  const char *list = "";
  int n = 0;
  for (size_t i = 0; i < sh->n_dim; i++) {
    const Onnx__TensorShapeProto__Dimension *d = sh->dim[i];
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) continue;
    const char *p = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param &&
                            *d->dim_param ? d->dim_param : "?";
    list = fc_arena_printf(imp->a, "%s%s'%s'", list, n++ ? ", " : "", p);
  }
  const char *what = article ? (n > 1 ? "dynamic dimensions" : "a dynamic dimension")
                             : n > 1 ? "dimensions" : "dimension";
  return fc_arena_printf(imp->a, "%s %s", what, list);
}

/* Every input left with symbolic dims, in one message. */
static FcStatus report_dynamic(FcImporter *imp, int n, const char *const *names,
                               const Onnx__ValueInfoProto *const *infos) {
  const char *hint = !imp->opts->shape_fn ? "" : n == 1 ? " or a file for the input" : " or a file for each";
  if (n == 1)
    return fc_error(imp->diag, FC_ERR_UNSUPPORTED,
                    "input '%s' has %s; flowc needs static shapes: give them with --shape %s=DIMS%s", names[0],
                    dynamic_dims(imp, infos[0], true), names[0], hint);
  const char *list = "", *flags = "";
  for (int i = 0; i < n; i++) {
    list = fc_arena_printf(imp->a, "%s%s'%s' (%s)", list, i == 0 ? "" : i + 1 < n ? ", " : " and ", names[i],
                           dynamic_dims(imp, infos[i], false));
    flags = fc_arena_printf(imp->a, "%s%s--shape %s=DIMS", flags, i ? " " : "", names[i]);
  }
  return fc_error(imp->diag, FC_ERR_UNSUPPORTED,
                  "inputs %s have dynamic dimensions; flowc needs static shapes: give them with %s%s", list, flags,
                  hint);
}

static FcStatus import_inputs(FcImporter *imp, const Onnx__GraphProto *gp) {
  for (int i = 0; i < imp->opts->n_shapes; i++) {
    bool found = false;
    for (size_t k = 0; k < gp->n_input && !found; k++)
      found = gp->input[k]->name && strcmp(gp->input[k]->name, imp->opts->shapes[i].name) == 0;
    if (!found) return fc_error(imp->diag, FC_ERR_INPUT, "--shape names '%s', which is not a graph input", imp->opts->shapes[i].name);
  }
  imp->inputs = gp->n_input ? FC_NEW_ARRAY(imp->a, InputOrig, gp->n_input) : NULL;
  int orig = 0, position = 0, n_dynamic = 0;
  const char **dyn_names = FC_NEW_ARRAY(imp->a, const char *, gp->n_input + 1);
  const Onnx__ValueInfoProto **dyn_infos = FC_NEW_ARRAY(imp->a, const Onnx__ValueInfoProto *, gp->n_input + 1);
  for (size_t i = 0; i < gp->n_input; i++) {
    const Onnx__ValueInfoProto *vi = gp->input[i];
    const char *name = vi->name;
    if (!name || !*name) return fc_error(imp->diag, FC_ERR_INPUT, "graph input %zu has no name", i);
    const FcBinding *bd = find_binding(imp, name);
    /* Old IR versions list every initializer again as an input: those stay constants. */
    const NameSlot *known = lookup(imp, name);
    if (!bd && known && known->initializer) continue;
    bool from_initializer = false;
    for (size_t k = 0; bd && k < gp->n_initializer && !from_initializer; k++)
      from_initializer = gp->initializer[k]->name && strcmp(gp->initializer[k]->name, name) == 0;
    int index = from_initializer ? -1 : orig++;
    const FcInputShape *shape = bd ? NULL : find_shape(imp, name);
    FcType decl;
    FcStatus st = input_type(imp, vi, true, &decl);
    if (st != FC_OK) return st;
    if (shape) {
      FcType t = {decl.dtype, shape->rank, shape->dims};
      if ((st = fix_input_type(imp, fc_arena_printf(imp->a, "--shape %s", name), t, &decl)) != FC_OK) return st;
    } else if (!bd && !type_is_static(&decl)) {
      /* `flowc run` may know the shape from the input's file; the inputs nothing fixes are reported together. */
      FcType t;
      const char *source = NULL;
      FcDiag local;
      fc_diag_init(&local);
      st = imp->opts->shape_fn ? imp->opts->shape_fn(imp->opts->shape_ctx, name, position, imp->a, &t, &source, &local)
                               : FC_ERR_UNSUPPORTED;
      if (st != FC_OK && st != FC_ERR_UNSUPPORTED) return fc_error(imp->diag, st, "%s", local.msg);
      if (st == FC_OK) {
        if (t.dtype == FC_DT_U16 && decl.dtype == FC_DT_BF16) t.dtype = FC_DT_BF16; /* .npy has no bf16 */
        const char *what = fc_arena_printf(imp->a, "input '%s' (%s)", name, source ? source : "its file");
        if ((st = fix_input_type(imp, what, t, &decl)) != FC_OK) return st;
      } else if (decl.rank < 0 || decl.dtype == FC_DT_COUNT) {
        return input_type(imp, vi, false, &decl); /* no shape or no type at all: that error, at once */
      } else {
        dyn_names[n_dynamic] = name;
        dyn_infos[n_dynamic++] = vi;
        position++;
        continue;
      }
    }
    if (!bd) position++;
    FcValue *v;
    if (bd) {
      FcDiag local;
      fc_diag_init(&local);
      FcTensor *t;
      st = fc_read_tensor_file(bd->path, &imp->lim, imp->a, &t, &local);
      if (st != FC_OK) return fc_error(imp->diag, st, "--bind %s: %s", name, local.msg);
      if (!type_accepts(&decl, &t->type)) {
        char have[256];
        return fc_error(imp->diag, FC_ERR_INPUT, "--bind %s: the file holds %s, but input '%s' is declared %s", name,
                        fc_type_str(&t->type, have, sizeof have), name, decl_str(imp->a, &decl));
      }
      v = add_constant(imp, t, name, NULL);
      if (!v) return imp->diag->status;
    } else {
      v = fc_graph_add_input(imp->g, decl, name);
      imp->inputs[imp->n_inputs++] = (InputOrig){v, index};
    }
    st = define(imp, name, v, false, NULL, NULL);
    if (st != FC_OK) return st;
  }
  return n_dynamic ? report_dynamic(imp, n_dynamic, dyn_names, dyn_infos) : FC_OK;
}

/* ---- nodes ---------------------------------------------------------------------------------------- */

static FcStatus skip_node(FcImporter *imp, const Onnx__NodeProto *node, const char *label) {
  for (size_t j = 0; j < node->n_output; j++) {
    if (!node->output[j] || !*node->output[j]) continue;
    FcStatus st = define(imp, node->output[j], NULL, true, label, node_op(node));
    if (st != FC_OK) return st;
  }
  return FC_OK;
}

/* The text after "node '<label>' (<op>): " when `msg` starts with it, else NULL. */
static const char *after_node_prefix(FcArena *a, const char *msg, const char *label, const char *op) {
  const char *prefix = fc_arena_printf(a, "node '%s' (%s): ", label, op);
  size_t n = strlen(prefix);
  return strncmp(msg, prefix, n) == 0 ? msg + n : NULL;
}

static FcStatus import_node(FcImporter *imp, const Onnx__NodeProto *node, size_t index) {
  const char *op = node_op(node), *dom = norm_domain(node->domain);
  const char *label =
      node->name && *node->name ? node->name : fc_arena_printf(imp->a, "%s%s_%zu", imp->prefix, op, index);
  if (!*op) return fc_error(imp->diag, FC_ERR_INPUT, "node '%s' has no op type", label);
  const OnnxOpRow *row = find_row(dom, op);
  /* Ops without a row were listed by the scan; their inputs are not even resolved (the inputs of an If
   * or Loop may name values of an enclosing scope). */
  if (!row) return skip_node(imp, node, label);
  /* Legalisers may read in[i] / write out[i] for the few slots their op defines without checking the
   * node's counts first (a corrupt node can have none): pad both arrays with NULL slots. */
  enum { MIN_SLOTS = 8 };
  FcValue **in = FC_NEW_ARRAY(imp->a, FcValue *, node->n_input > MIN_SLOTS ? node->n_input : MIN_SLOTS);
  bool skip = false;
  for (size_t i = 0; i < node->n_input; i++) {
    const char *name = node->input[i];
    if (!name || !*name) continue; /* an omitted optional input */
    NameSlot *s = lookup(imp, name);
    if (!s)
      return fc_error_node(imp->diag, FC_ERR_INPUT, label, op,
                           "input '%s' is not produced by any earlier node, initializer or graph input", name);
    if (s->skipped) skip = true;
    else in[i] = resolve(imp, s->value);
  }
  if (skip) return skip_node(imp, node, label);
  int64_t opset = opset_of(imp->model, dom);
  if (opset < 0)
    return fc_error_node(imp->diag, FC_ERR_INPUT, label, op, "the model imports no opset for domain '%s'",
                         *dom ? dom : "ai.onnx");
  if (opset > row->upto) {
    /* A newer version of the op may mean something else (Split-18's num_outputs, GroupNormalization-21's
     * per-channel scale): legalising it with the older semantics could be silently wrong. */
    const char *why = fc_arena_printf(imp->a, "opset %lld is not supported for this op (flowc implements it up to "
                                      "opset %d)", (long long)opset, row->upto);
    note_unsupported(imp, dom, op, label, why);
    return skip_node(imp, node, label);
  }

  FcDiag nd;
  fc_diag_init(&nd);
  FcBuilder b;
  fc_builder_init(&b, imp->g, &nd);
  b.loc = label;
  FcValue **out = FC_NEW_ARRAY(imp->a, FcValue *, node->n_output > MIN_SLOTS ? node->n_output : MIN_SLOTS);
  FcLower l = {imp, &b, node, opset > INT_MAX ? INT_MAX : (int)opset, in, (int)node->n_input, out,
               (int)node->n_output, &nd, row->arg};
  imp->body_skipped = false;
  FcStatus st = row->fn(&l);
  /* A subgraph of this node depends on an unsupported node, which is listed already: skip this one too. */
  if (imp->body_skipped) {
    imp->body_skipped = false;
    return skip_node(imp, node, label);
  }
  /* The node's diag holds the first error even when the legaliser returned something else. */
  if (nd.status != FC_OK) st = nd.status;
  else if (st == FC_OK) st = b.status;
  if (st == FC_ERR_UNSUPPORTED) {
    const char *reason = after_node_prefix(imp->a, nd.msg, label, op);
    note_unsupported(imp, dom, op, label, reason ? reason : nd.msg[0] ? nd.msg : "not supported");
    return skip_node(imp, node, label);
  }
  if (st != FC_OK) {
    if (after_node_prefix(imp->a, nd.msg, label, op)) return fc_error(imp->diag, st, "%s", nd.msg);
    return fc_error_node(imp->diag, st, label, op, "%s", nd.msg[0] ? nd.msg : "the legaliser failed without a message");
  }
  for (size_t j = 0; j < node->n_output; j++) {
    const char *name = node->output[j];
    if (!name || !*name) continue;
    if (!out[j])
      return fc_error_node(imp->diag, FC_ERR_INTERNAL, label, op, "the legaliser left output %zu ('%s') unset", j, name);
    st = define(imp, name, out[j], false, label, op);
    if (st != FC_OK) return st;
  }
  return FC_OK;
}

static FcStatus import_outputs(FcImporter *imp, const Onnx__GraphProto *gp) {
  size_t n = gp->n_output;
  FcValue **vals = n ? FC_NEW_ARRAY(imp->a, FcValue *, n) : NULL;
  const char **names = n ? FC_NEW_ARRAY(imp->a, const char *, n) : NULL;
  for (size_t i = 0; i < n; i++) {
    const char *name = gp->output[i]->name;
    if (!name || !*name) return fc_error(imp->diag, FC_ERR_INPUT, "graph output %zu has no name", i);
    NameSlot *s = lookup(imp, name);
    if (!s)
      return fc_error(imp->diag, FC_ERR_INPUT, "graph output '%s' is not produced by any node, initializer or input",
                      name);
    FC_ASSERT(!s->skipped); /* skipped nodes are reported before the outputs are set */
    vals[i] = resolve(imp, s->value);
    if (!vals[i]->name) vals[i]->name = fc_arena_strdup(imp->a, name);
    names[i] = name;
  }
  fc_graph_set_outputs(imp->g, vals, names, (int)n);
  return FC_OK;
}

static FcStatus import_graph(FcImporter *imp) {
  const Onnx__GraphProto *gp = imp->model->graph;
  if (!gp) return fc_error(imp->diag, FC_ERR_INPUT, "the model has no graph");
  FcStatus st = check_versions(imp);
  if (st != FC_OK) return st;
  scan_unsupported(imp, gp);
  size_t names = gp->n_initializer + gp->n_input + 1;
  for (size_t i = 0; i < gp->n_node; i++) names += gp->node[i]->n_output;
  imp->cap_slots = 64;
  while (imp->cap_slots < 2 * names) imp->cap_slots *= 2;
  imp->slots = calloc(imp->cap_slots, sizeof *imp->slots);
  if (!imp->slots) fc_die(__FILE__, __LINE__, "out of memory");

  if ((st = check_bindings(imp, gp)) != FC_OK) return st;
  if ((st = import_initializers(imp, gp)) != FC_OK) return st;
  if ((st = import_inputs(imp, gp)) != FC_OK) return st;
  for (size_t i = 0; i < gp->n_node; i++)
    if ((st = import_node(imp, gp->node[i], i)) != FC_OK) return st;
  if (imp->n_unsup) return report_unsupported(imp);
  return import_outputs(imp, gp);
}

void fc_import_options_default(FcImportOptions *o) {
  memset(o, 0, sizeof *o);
  o->limits.max_file_bytes = FC_DEFAULT_MAX_FILE_BYTES;
  o->limits.max_nesting = FC_DEFAULT_MAX_NESTING;
  o->limits.max_rank = FC_DEFAULT_MAX_RANK;
}

FcStatus fc_onnx_import(const char *path, const FcImportOptions *opts, FcModule **out, FcDiag *diag) {
  *out = NULL;
  FcImportOptions dflt;
  if (!opts) {
    fc_import_options_default(&dflt);
    opts = &dflt;
  }
  Onnx__ModelProto *model;
  FcStatus st = fc_onnx_load_model(path, &opts->limits, &model, diag);
  if (st != FC_OK) return st;
  FcModule *m = fc_module_create(path);
  FcImporter imp = {.m = m, .g = m->graph, .a = &m->arena, .opts = opts, .lim = opts->limits, .diag = diag,
                    .model = model, .prefix = ""};
  imp.model_dir = fc_onnx_path_dir(imp.a, path);
  st = import_graph(&imp);
  free(imp.slots);
  free(imp.fwd);
  free(imp.nonconst);
  free(imp.unsup);
  fc_onnx_model_free(model);
  if (st != FC_OK) {
    fc_module_destroy(m);
    return st;
  }
  *out = m;
  return FC_OK;
}

/* ---- FcLower: attributes ------------------------------------------------------------------------- */

static const char *lx_label(const FcLower *l) { return l->b && l->b->loc ? l->b->loc : ""; }

FcStatus fc_lx_unsupported(FcLower *l, const char *fmt, ...) {
  char what[sizeof l->diag->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return fc_error_node(l->diag, FC_ERR_UNSUPPORTED, lx_label(l), node_op(l->node), "%s", what);
}

FcStatus fc_lx_error(FcLower *l, const char *fmt, ...) {
  char what[sizeof l->diag->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return fc_error_node(l->diag, FC_ERR_INPUT, lx_label(l), node_op(l->node), "%s", what);
}

static const Onnx__AttributeProto *find_attr(const Onnx__NodeProto *n, const char *name) {
  for (size_t i = 0; i < n->n_attribute; i++)
    if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i];
  return NULL;
}

static const char *attr_type_name(Onnx__AttributeProto__AttributeType t) {
  switch (t) {
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return "FLOAT";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return "INT";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return "STRING";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return "TENSOR";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: return "GRAPH";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR: return "SPARSE_TENSOR";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO: return "TYPE_PROTO";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: return "FLOATS";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return "INTS";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: return "STRINGS";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS: return "TENSORS";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS: return "GRAPHS";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS: return "SPARSE_TENSORS";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS: return "TYPE_PROTOS";
  default: return "UNDEFINED";
  }
}

/* The attribute `name` when it has type `t`; NULL when absent or (after recording an error) of another
 * type. Attributes of IR version 1 carry no type: their set field decides. */
static const Onnx__AttributeProto *typed_attr(const FcLower *l, const char *name, Onnx__AttributeProto__AttributeType t) {
  const Onnx__AttributeProto *a = find_attr(l->node, name);
  if (!a) return NULL;
  Onnx__AttributeProto__AttributeType have = a->has_type ? a->type : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
  if (have == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED) {
    if (a->has_f) have = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    else if (a->has_i) have = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    else if (a->has_s) have = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    else if (a->t) have = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    else if (a->g) have = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    else if (a->n_floats) have = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    else if (a->n_ints) have = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    else if (a->n_strings) have = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
  }
  if (have != t) {
    fc_error_node(l->diag, FC_ERR_INPUT, lx_label(l), node_op(l->node), "attribute '%s' must be %s, not %s", name,
                  attr_type_name(t), attr_type_name(have));
    return NULL;
  }
  return a;
}

bool fc_lx_has_attr(const FcLower *l, const char *name) { return find_attr(l->node, name) != NULL; }

int64_t fc_lx_int(const FcLower *l, const char *name, int64_t dflt) {
  const Onnx__AttributeProto *a = typed_attr(l, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  return a ? a->i : dflt;
}

float fc_lx_float(const FcLower *l, const char *name, float dflt) {
  const Onnx__AttributeProto *a = typed_attr(l, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  return a ? a->f : dflt;
}

const char *fc_lx_str(const FcLower *l, const char *name, const char *dflt) {
  const Onnx__AttributeProto *a = typed_attr(l, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
  if (!a) return dflt;
  return fc_arena_strndup(l->imp->a, a->s.data ? (const char *)a->s.data : "", a->s.data ? a->s.len : 0);
}

int fc_lx_ints(const FcLower *l, const char *name, const int64_t **v) {
  *v = NULL;
  const Onnx__AttributeProto *a = typed_attr(l, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  if (!a) return -1;
  if (a->n_ints > INT_MAX) {
    fc_error_node(l->diag, FC_ERR_INPUT, lx_label(l), node_op(l->node), "attribute '%s' has too many elements", name);
    return -1;
  }
  if (a->n_ints) *v = fc_arena_memdup(l->imp->a, a->ints, a->n_ints * sizeof *a->ints, 8);
  return (int)a->n_ints;
}

int fc_lx_floats(const FcLower *l, const char *name, const float **v) {
  *v = NULL;
  const Onnx__AttributeProto *a = typed_attr(l, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
  if (!a) return -1;
  if (a->n_floats > INT_MAX) {
    fc_error_node(l->diag, FC_ERR_INPUT, lx_label(l), node_op(l->node), "attribute '%s' has too many elements", name);
    return -1;
  }
  if (a->n_floats) *v = fc_arena_memdup(l->imp->a, a->floats, a->n_floats * sizeof *a->floats, 4);
  return (int)a->n_floats;
}

const FcTensor *fc_lx_tensor_attr(FcLower *l, const char *name) {
  const Onnx__AttributeProto *a = typed_attr(l, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
  if (!a) return NULL;
  if (!a->t) {
    fc_lx_error(l, "attribute '%s' holds no tensor", name);
    return NULL;
  }
  FcDiag local;
  fc_diag_init(&local);
  FcTensor *t;
  FcStatus st = fc_onnx_tensor_to_fc(a->t, l->imp->model_dir, &l->imp->lim, l->imp->a, &t, &local);
  if (st != FC_OK) {
    fc_error_node(l->diag, st, lx_label(l), node_op(l->node), "attribute '%s': %s", name, local.msg);
    return NULL;
  }
  return t;
}

bool fc_lx_axis(FcLower *l, int64_t axis, int rank, int64_t *out) {
  if (axis < -(int64_t)rank || axis >= rank) {
    fc_lx_error(l, "axis %lld is out of range for rank %d", (long long)axis, rank);
    return false;
  }
  *out = axis < 0 ? axis + rank : axis;
  return true;
}

FcArena *fc_lx_arena(const FcLower *l) { return &l->b->g->module->arena; }

int64_t *fc_lx_dims(FcLower *l, int n) { return FC_NEW_ARRAY(fc_lx_arena(l), int64_t, (size_t)(n > 0 ? n : 1)); }

FcValue *fc_lx_scalar(FcLower *l, const FcValue *like, double v) {
  return like ? fc_b_scalar(l->b, like->type.dtype, v) : NULL;
}

bool fc_lx_out_named(const FcLower *l, int i) {
  return i < l->n_out && l->node->output[i] && l->node->output[i][0] != '\0';
}

FcStatus fc_lx_bail(const FcLower *l) {
  if (l->b->status != FC_OK) return l->b->status;
  return l->diag->status != FC_OK ? l->diag->status : FC_ERR_INPUT;
}

FcStatus fc_lx_need_inputs(FcLower *l, int n) {
  if (l->n_in < n) return fc_lx_error(l, "expects at least %d inputs, has %d", n, l->n_in);
  for (int i = 0; i < n; i++)
    if (!l->in[i]) return fc_lx_error(l, "input %d is required", i);
  return FC_OK;
}

bool fc_lx_need_float(FcLower *l, const FcValue *x) {
  if (fc_dtype_is_float(x->type.dtype)) return true;
  fc_lx_error(l, "input must have a float type, not %s", fc_dtype_name(x->type.dtype));
  return false;
}

FcValue *fc_lx_add(FcLower *l, FcValue *a, FcValue *b) { return fc_b_binary(l->b, FC_OP_ADD, a, b); }
FcValue *fc_lx_sub(FcLower *l, FcValue *a, FcValue *b) { return fc_b_binary(l->b, FC_OP_SUB, a, b); }
FcValue *fc_lx_mul(FcLower *l, FcValue *a, FcValue *b) { return fc_b_binary(l->b, FC_OP_MUL, a, b); }
FcValue *fc_lx_div(FcLower *l, FcValue *a, FcValue *b) { return fc_b_binary(l->b, FC_OP_DIV, a, b); }

FcValue *fc_lx_cast_to(FcLower *l, FcValue *v, FcDtype dt) {
  return v && v->type.dtype != dt ? fc_b_cast(l->b, v, dt) : v;
}

FcTensor *fc_lx_new_tensor(FcLower *l, FcDtype dt, int rank, const int64_t *dims) {
  FcType ty = {dt, rank, dims};
  int64_t nbytes;
  if (!fc_type_nbytes(&ty, &nbytes) || nbytes > FC_DEFAULT_MAX_TENSOR_BYTES) {
    fc_lx_error(l, "a constant of %d dims is too large", rank);
    return NULL;
  }
  return fc_tensor_new(fc_lx_arena(l), ty);
}

FcStatus fc_lx_finish(FcLower *l) {
  if (l->b->status != FC_OK) return l->diag->status != FC_OK ? l->diag->status : l->b->status;
  if (l->diag->status != FC_OK) return l->diag->status;
  for (int i = 0; i < l->n_out; i++) {
    const char *name = l->node->output[i];
    if (name && *name && !l->out[i])
      /* Either the node names more outputs than its op has (bad input) or a legaliser bug. */
      return fc_error_node(l->diag, FC_ERR_INPUT, lx_label(l), node_op(l->node),
                           "output %d ('%s') is not produced: the op does not define it here", i, name);
  }
  return FC_OK;
}

/* ---- FcLower: compile-time constants ------------------------------------------------------------- */

static bool foldable(const FcOp *op) {
  const FcOpInfo *info = fc_op_info(op->kind);
  return op->kind != FC_OP_CONSTANT && (info->flags & FC_OPF_PURE) && info->eval;
}

/* Verdicts of failed folding attempts, kept per op so that probing the same long non-constant chain
 * again (every node of an RNN unrolled over time may ask) costs O(1) instead of a walk to its inputs. */
enum {
  NC_UNKNOWN = 0,
  NC_UNBOUND = 1, /* depends on a graph input; may still fold once that input is bound */
  NC_NEVER = 2,   /* depends on an op that cannot be evaluated at compile time */
};

static uint8_t nc_get(const FcImporter *imp, const FcOp *op) {
  return op->id < imp->n_nonconst ? imp->nonconst[op->id] : NC_UNKNOWN;
}

static void nc_raise(FcImporter *imp, const FcOp *op, uint8_t v) {
  if (op->id >= imp->n_nonconst) {
    size_t n = imp->n_nonconst ? imp->n_nonconst : 64;
    while (n <= op->id) n *= 2;
    uint8_t *a = realloc(imp->nonconst, n);
    if (!a) fc_die(__FILE__, __LINE__, "out of memory");
    memset(a + imp->n_nonconst, 0, n - imp->n_nonconst);
    imp->nonconst = a;
    imp->n_nonconst = n;
  }
  if (imp->nonconst[op->id] < v) imp->nonconst[op->id] = v;
}

/* Points l->in[] (and the import's name map, through forwarding) at `to` instead of `from`. */
static void redirect(FcLower *l, FcValue *from, FcValue *to) {
  fc_value_replace_all_uses(from, to);
  set_forward(l->imp, from, to);
  for (int j = 0; j < l->n_in; j++)
    if (l->in[j] == from) l->in[j] = to;
}

/* Asks the bind callback for graph input `v`; on success the input becomes a constant at the start of
 * the graph (before every user) and leaves the graph's input list. NULL when it stays an input. */
static FcValue *bind_input(FcLower *l, FcValue *v) {
  FcImporter *imp = l->imp;
  /* Inside a loop or if body a value without a defining op is a block argument, never a graph input. */
  if (!imp->opts->bind_fn || imp->g != imp->m->graph) return NULL;
  int orig = -1;
  for (int i = 0; i < imp->n_inputs; i++)
    if (imp->inputs[i].value == v) orig = imp->inputs[i].index;
  FcDiag bd;
  fc_diag_init(&bd);
  FcTensor *t = NULL;
  FcStatus st = imp->opts->bind_fn(imp->opts->bind_ctx, v->name, orig, imp->a, &t, &bd);
  if (st == FC_ERR_UNSUPPORTED) return NULL;
  if (st != FC_OK) {
    fc_error_node(l->diag, st, lx_label(l), node_op(l->node), "binding graph input '%s': %s", v->name, bd.msg);
    return NULL;
  }
  int64_t nbytes;
  if (!t || !t->data || !fc_type_nbytes(&t->type, &nbytes) || nbytes != t->nbytes) {
    fc_error_node(l->diag, FC_ERR_INTERNAL, lx_label(l), node_op(l->node),
                  "the bind callback returned no valid tensor for graph input '%s'", v->name);
    return NULL;
  }
  if (!fc_type_equal(&t->type, &v->type)) {
    char have[256], want[256];
    fc_error_node(l->diag, FC_ERR_INPUT, lx_label(l), node_op(l->node),
                  "the value bound to graph input '%s' is %s, but the input is %s", v->name,
                  fc_type_str(&t->type, have, sizeof have), fc_type_str(&v->type, want, sizeof want));
    return NULL;
  }
  FcBuilder b;
  fc_builder_init(&b, imp->g, l->diag);
  b.loc = v->name;
  b.before = imp->g->first;
  FcValue *c = fc_b_const_tensor(&b, t);
  if (!c) return NULL;
  redirect(l, v, c);
  for (size_t k = 0; k < imp->n_nonconst; k++) /* chains over this input may fold now */
    if (imp->nonconst[k] == NC_UNBOUND) imp->nonconst[k] = NC_UNKNOWN;
  FcGraph *g = imp->g;
  for (int i = 0; i < g->n_inputs; i++) {
    if (g->inputs[i] != v) continue;
    memmove(&g->inputs[i], &g->inputs[i + 1], (size_t)(g->n_inputs - i - 1) * sizeof *g->inputs);
    g->n_inputs--;
    for (int k = i; k < g->n_inputs; k++) g->inputs[k]->index = k;
    break;
  }
  return c;
}

/* Evaluates one pure op whose operands are all constants and redirects its results to new constants
 * placed just before it. False when it cannot be evaluated (an error is recorded unless the evaluator
 * merely does not support it). */
static bool fold_op(FcLower *l, FcOp *op) {
  FcImporter *imp = l->imp;
  FcTensor **res = FC_NEW_ARRAY(imp->a, FcTensor *, (size_t)(op->n_results ? op->n_results : 1));
  FcDiag ed;
  fc_diag_init(&ed);
  FcStatus st = fc_op_eval(op, imp->a, res, &ed);
  if (st == FC_ERR_UNSUPPORTED) return false;
  if (st != FC_OK) {
    fc_error_node(l->diag, st, lx_label(l), node_op(l->node), "evaluating %s at compile time: %s",
                  fc_op_info(op->kind)->full_name, ed.msg);
    return false;
  }
  FcBuilder b;
  fc_builder_init(&b, imp->g, l->diag);
  b.loc = op->loc;
  b.before = op;
  for (int r = 0; r < op->n_results; r++) {
    if (!res[r] || !fc_type_equal(&res[r]->type, &op->results[r].type)) {
      fc_error_node(l->diag, FC_ERR_INTERNAL, lx_label(l), node_op(l->node),
                    "evaluating %s produced a result of the wrong type", fc_op_info(op->kind)->full_name);
      return false;
    }
    FcValue *c = fc_b_const_tensor(&b, res[r]);
    if (!c) return false;
    redirect(l, &op->results[r], c);
  }
  return true;
}

/* The constant behind `v`: itself, a folded chain of pure ops over constants (post-order, with an
 * explicit stack since chains can be long), and with `bind` graph inputs from the bind callback. */
static FcValue *fold_value(FcLower *l, FcValue *v, bool bind) {
  FcImporter *imp = l->imp;
  uint8_t give_up = bind ? NC_NEVER : NC_UNBOUND;
  v = resolve(imp, v);
  if (fc_value_const(v)) return v;
  if (!v->def) return bind ? bind_input(l, v) : NULL;
  if (!foldable(v->def) || nc_get(imp, v->def) >= give_up) return NULL;
  size_t cap = 16, n = 0;
  FcOp **stack = malloc(cap * sizeof *stack);
  if (!stack) fc_die(__FILE__, __LINE__, "out of memory");
  stack[n++] = v->def;
  uint8_t fail = NC_UNKNOWN;
  while (!fail && n > 0) {
    FcOp *op = stack[n - 1];
    if (op->n_results && resolve(imp, &op->results[0]) != &op->results[0]) { /* folded meanwhile */
      n--;
      continue;
    }
    FcOp *pending = NULL;
    for (int i = 0; i < op->n_operands && !fail && !pending; i++) {
      FcValue *u = op->operands[i].value;
      if (!u || fc_value_const(u)) continue;
      if (!u->def) {
        if (!bind) fail = NC_UNBOUND;
        else if (!bind_input(l, u)) fail = NC_NEVER; /* on success this operand now is the constant */
      } else if (!foldable(u->def)) {
        fail = NC_NEVER;
      } else if (nc_get(imp, u->def) >= give_up) {
        fail = nc_get(imp, u->def);
      } else {
        pending = u->def;
      }
    }
    if (fail) break;
    if (pending) {
      if (n == cap) {
        cap *= 2;
        FcOp **st = realloc(stack, cap * sizeof *st);
        if (!st) fc_die(__FILE__, __LINE__, "out of memory");
        stack = st;
      }
      stack[n++] = pending;
      continue;
    }
    n--;
    if (!fold_op(l, op)) {
      stack[n++] = op;
      fail = NC_NEVER;
    }
  }
  /* Everything still on the stack depends on what failed. */
  for (size_t k = 0; fail && k < n; k++) nc_raise(imp, stack[k], fail);
  free(stack);
  if (fail) return NULL;
  v = resolve(imp, v);
  return fc_value_const(v) ? v : NULL;
}

/* The first graph input `v` depends on (for the message telling which input to bind), or NULL. */
static const FcValue *feeding_input(const FcImporter *imp, const FcValue *v) {
  if (!v->def) return v;
  size_t n_ops = imp->g->next_op_id;
  bool *seen = calloc(n_ops ? n_ops : 1, 1);
  size_t cap = 16, n = 0;
  const FcOp **stack = malloc(cap * sizeof *stack);
  if (!seen || !stack) fc_die(__FILE__, __LINE__, "out of memory");
  const FcValue *found = NULL;
  stack[n++] = v->def;
  seen[v->def->id] = true;
  while (n > 0 && !found) {
    const FcOp *op = stack[--n];
    for (int i = 0; i < op->n_operands && !found; i++) {
      const FcValue *u = op->operands[i].value;
      if (!u) continue;
      if (!u->def) {
        found = u;
      } else if (!seen[u->def->id]) {
        seen[u->def->id] = true;
        if (n == cap) {
          cap *= 2;
          const FcOp **s = realloc(stack, cap * sizeof *s);
          if (!s) fc_die(__FILE__, __LINE__, "out of memory");
          stack = s;
        }
        stack[n++] = u->def;
      }
    }
  }
  free(stack);
  free(seen);
  return found;
}

const FcTensor *fc_lx_const_input(FcLower *l, int i) {
  if (i < 0 || i >= l->n_in || !l->in[i]) {
    fc_lx_error(l, "input %d is missing; it must be a compile-time constant", i);
    return NULL;
  }
  FcValue *c = fold_value(l, l->in[i], true);
  if (c) {
    l->in[i] = c;
    return fc_value_const(c);
  }
  if (l->diag->status != FC_OK) return NULL;
  const char *name = l->node->input[i];
  const FcValue *gi = feeding_input(l->imp, resolve(l->imp, l->in[i]));
  if (gi && !gi->name) gi = NULL; /* a block argument of a loop or if body */
  if (gi && gi == resolve(l->imp, l->in[i]))
    fc_lx_unsupported(l, "input %d ('%s') must be a compile-time constant: bind graph input '%s' with --bind %s=FILE", i,
                      name, gi->name, gi->name);
  else if (gi)
    fc_lx_unsupported(l, "input %d ('%s') must be a compile-time constant, but it depends on graph input '%s' (bind it "
                      "with --bind %s=FILE)", i, name, gi->name, gi->name);
  else
    fc_lx_unsupported(l, "input %d ('%s') must be a compile-time constant", i, name);
  return NULL;
}

/* Input i's constant (folding, and with `bind` binding graph inputs), or NULL without an error. */
static const FcTensor *quiet_const_input(FcLower *l, int i, bool bind) {
  if (i < 0 || i >= l->n_in || !l->in[i]) return NULL;
  FcValue *c = fold_value(l, l->in[i], bind);
  if (!c) return NULL;
  l->in[i] = c;
  return fc_value_const(c);
}

/* Unlike fc_lx_const_input this never asks the bind callback: a legaliser probing for a constant (to
 * pick a cheaper lowering) must not turn a real model input into a constant. */
const FcTensor *fc_lx_try_const_input(FcLower *l, int i) { return quiet_const_input(l, i, false); }

const FcTensor *fc_lx_bind_const_input(FcLower *l, int i) { return quiet_const_input(l, i, true); }

int fc_lx_const_ints(FcLower *l, int i, const int64_t **v) {
  *v = NULL;
  const FcTensor *t = fc_lx_const_input(l, i);
  if (!t) return -1;
  char buf[256];
  if (!fc_dtype_is_int(t->type.dtype)) {
    fc_lx_error(l, "input %d must hold integers, not %s", i, fc_type_str(&t->type, buf, sizeof buf));
    return -1;
  }
  int64_t n;
  if (!fc_type_numel(&t->type, &n) || n > INT_MAX) {
    fc_lx_error(l, "input %d has too many elements", i);
    return -1;
  }
  if (n) {
    int64_t *arr = FC_NEW_ARRAY(l->imp->a, int64_t, (size_t)n);
    for (int64_t k = 0; k < n; k++) arr[k] = fc_tensor_get_i64(t, k);
    *v = arr;
  }
  return (int)n;
}

/* ---- Constant nodes --------------------------------------------------------------------------------- */

FcStatus fc_lower_constant(FcLower *l) {
  static const char *const kinds[] = {"value",     "value_float",  "value_floats",  "value_int",
                                      "value_ints", "value_string", "value_strings", "sparse_value"};
  const char *which = NULL;
  int count = 0;
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
    if (find_attr(l->node, kinds[k])) {
      which = kinds[k];
      count++;
    }
  if (count != 1) return fc_lx_error(l, "needs exactly one value attribute, has %d", count);
  if (l->n_out < 1) return fc_lx_error(l, "has no output");
  FcArena *a = l->imp->a;
  const FcTensor *t = NULL;
  if (strcmp(which, "value") == 0) {
    t = fc_lx_tensor_attr(l, "value");
  } else if (strcmp(which, "value_float") == 0 || strcmp(which, "value_int") == 0) {
    bool is_f = which[6] == 'f';
    FcTensor *s = fc_tensor_new(a, fc_type_make(a, is_f ? FC_DT_F32 : FC_DT_I64, 0, NULL));
    if (is_f) fc_tensor_set_f64(s, 0, fc_lx_float(l, which, 0));
    else fc_tensor_set_i64(s, 0, fc_lx_int(l, which, 0));
    t = s;
  } else if (strcmp(which, "value_floats") == 0) {
    const float *v;
    int n = fc_lx_floats(l, which, &v);
    if (n >= 0) {
      int64_t dim = n;
      FcTensor *s = fc_tensor_new(a, fc_type_make(a, FC_DT_F32, 1, &dim));
      if (n) memcpy((void *)s->data, v, (size_t)n * sizeof *v);
      t = s;
    }
  } else if (strcmp(which, "value_ints") == 0) {
    const int64_t *v;
    int n = fc_lx_ints(l, which, &v);
    if (n >= 0) {
      int64_t dim = n;
      FcTensor *s = fc_tensor_new(a, fc_type_make(a, FC_DT_I64, 1, &dim));
      if (n) memcpy((void *)s->data, v, (size_t)n * sizeof *v);
      t = s;
    }
  } else if (strcmp(which, "sparse_value") == 0) {
    return fc_lx_unsupported(l, "sparse constants are not supported");
  } else {
    return fc_lx_unsupported(l, "string constants are not supported");
  }
  if (l->diag->status != FC_OK) return l->diag->status;
  if (!t) return fc_lx_error(l, "attribute '%s' holds no value", which);
  l->out[0] = fc_b_const_tensor(l->b, t);
  return fc_lx_finish(l);
}

/* ---- subgraphs: Loop / Scan bodies and If branches ---------------------------------------------- */

/* An ordered set of names (open addressing over an array kept in insertion order). */
typedef struct NameSet {
  const char **names;
  size_t n, cap;
  size_t *table; /* index + 1 into names; 0: empty */
  size_t tcap;
} NameSet;

static bool ns_has(const NameSet *s, const char *name) {
  if (!s->tcap) return false;
  for (size_t i = (size_t)hash_name(name) & (s->tcap - 1); s->table[i]; i = (i + 1) & (s->tcap - 1))
    if (strcmp(s->names[s->table[i] - 1], name) == 0) return true;
  return false;
}

static void ns_add(NameSet *s, const char *name) {
  if (!name || !*name || ns_has(s, name)) return;
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 16;
    const char **nn = realloc(s->names, s->cap * sizeof *nn);
    if (!nn) fc_die(__FILE__, __LINE__, "out of memory");
    s->names = nn;
  }
  s->names[s->n++] = name;
  if (2 * s->n > s->tcap) {
    free(s->table);
    s->tcap = s->tcap ? 2 * s->tcap : 64;
    while (2 * s->n > s->tcap) s->tcap *= 2;
    s->table = calloc(s->tcap, sizeof *s->table);
    if (!s->table) fc_die(__FILE__, __LINE__, "out of memory");
    for (size_t k = 0; k < s->n; k++) {
      size_t i = (size_t)hash_name(s->names[k]) & (s->tcap - 1);
      while (s->table[i]) i = (i + 1) & (s->tcap - 1);
      s->table[i] = k + 1;
    }
    return;
  }
  size_t i = (size_t)hash_name(name) & (s->tcap - 1);
  while (s->table[i]) i = (i + 1) & (s->tcap - 1);
  s->table[i] = s->n;
}

static void ns_free(NameSet *s) {
  free(s->names);
  free(s->table);
}

/* Adds to `out` the names `gp` reads without defining them (from an enclosing scope), its nested
 * subgraphs' included, in order of first use. Nesting is bounded by the loader's --max-nesting. */
static void free_names(const Onnx__GraphProto *gp, NameSet *out) {
  NameSet defs = {0};
  for (size_t i = 0; i < gp->n_input; i++) ns_add(&defs, gp->input[i]->name);
  for (size_t i = 0; i < gp->n_initializer; i++) ns_add(&defs, gp->initializer[i]->name);
  for (size_t i = 0; i < gp->n_node; i++)
    for (size_t j = 0; j < gp->node[i]->n_output; j++) ns_add(&defs, gp->node[i]->output[j]);
  for (size_t i = 0; i < gp->n_node; i++) {
    const Onnx__NodeProto *node = gp->node[i];
    for (size_t j = 0; j < node->n_input; j++)
      if (node->input[j] && *node->input[j] && !ns_has(&defs, node->input[j])) ns_add(out, node->input[j]);
    for (size_t k = 0; k < node->n_attribute; k++) {
      const Onnx__AttributeProto *at = node->attribute[k];
      for (size_t g = 0; g < (at->g ? 1 : 0) + at->n_graphs; g++) {
        const Onnx__GraphProto *sub = at->g && g == 0 ? at->g : at->graphs[g - (at->g ? 1 : 0)];
        if (!sub) continue;
        NameSet inner = {0};
        free_names(sub, &inner);
        for (size_t f = 0; f < inner.n; f++)
          if (!ns_has(&defs, inner.names[f])) ns_add(out, inner.names[f]);
        ns_free(&inner);
      }
    }
  }
  for (size_t i = 0; i < gp->n_output; i++)
    if (gp->output[i]->name && !ns_has(&defs, gp->output[i]->name)) ns_add(out, gp->output[i]->name);
  ns_free(&defs);
}

FcStatus fc_lx_subgraph(FcLower *l, const char *name, FcLxSubgraph *sg) {
  FcImporter *imp = l->imp;
  memset(sg, 0, sizeof *sg);
  sg->attr = name;
  const Onnx__AttributeProto *a = typed_attr(l, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
  if (!a) return l->diag->status != FC_OK ? l->diag->status : fc_lx_error(l, "attribute '%s' is missing", name);
  if (!a->g) return fc_lx_error(l, "attribute '%s' holds no graph", name);
  sg->gp = a->g;
  NameSet fr = {0};
  free_names(a->g, &fr);
  sg->n_free = (int)fr.n;
  sg->free_names = FC_NEW_ARRAY(imp->a, const char *, fr.n + 1);
  sg->free_vals = FC_NEW_ARRAY(imp->a, FcValue *, fr.n + 1);
  sg->cap_index = FC_NEW_ARRAY(imp->a, int, fr.n + 1);
  sg->caps = FC_NEW_ARRAY(imp->a, FcValue *, fr.n + 1);
  FcStatus st = FC_OK;
  for (size_t i = 0; i < fr.n && st == FC_OK; i++) {
    const char *n = fr.names[i];
    NameSlot *slot = lookup(imp, n);
    if (!slot) {
      st = fc_lx_error(l, "subgraph '%s' reads '%s', which no enclosing scope defines", name, n);
      break;
    }
    if (slot->skipped) { /* depends on an unsupported node, listed already */
      imp->body_skipped = true;
      st = FC_ERR_UNSUPPORTED;
      break;
    }
    FcValue *v = resolve(imp, slot->value);
    sg->free_names[i] = n;
    sg->free_vals[i] = v;
    /* Constants are copied into the body rather than captured, so the body's folding sees them. */
    sg->cap_index[i] = fc_value_const(v) ? -1 : sg->n_caps;
    if (!fc_value_const(v)) sg->caps[sg->n_caps++] = v;
  }
  ns_free(&fr);
  return st;
}

FcStatus fc_lx_import_subgraph(FcLower *l, const FcLxSubgraph *sg, FcGraph *g, FcValue *const *in, int n_in,
                               FcValue *const *cap_args, FcValue **out) {
  FcImporter *imp = l->imp;
  const Onnx__GraphProto *gp = sg->gp;
  if ((size_t)n_in != gp->n_input)
    return fc_lx_error(l, "subgraph '%s' has %zu inputs, expected %d", sg->attr, gp->n_input, n_in);
  int depth = 0;
  for (const FcGraph *p = g; p->parent; p = p->parent->graph) depth++;
  if (depth > FC_MAX_REGION_DEPTH)
    return fc_lx_unsupported(l, "subgraphs nest more than %d deep", FC_MAX_REGION_DEPTH);
  /* A fresh scope: its own name map, and (for a region: ids restart there) its own folding state. */
  NameSlot *saved_slots = imp->slots;
  size_t saved_cap = imp->cap_slots, saved_n = imp->n_slots;
  FcGraph *saved_g = imp->g;
  const char *saved_prefix = imp->prefix;
  FcValue **saved_fwd = imp->fwd;
  uint8_t *saved_nonconst = imp->nonconst;
  size_t saved_n_fwd = imp->n_fwd, saved_n_nonconst = imp->n_nonconst;
  bool region = g != imp->g;
  size_t names = gp->n_initializer + gp->n_input + (size_t)sg->n_free + 1;
  for (size_t i = 0; i < gp->n_node; i++) names += gp->node[i]->n_output;
  imp->cap_slots = 64;
  while (imp->cap_slots < 2 * names) imp->cap_slots *= 2;
  imp->slots = calloc(imp->cap_slots, sizeof *imp->slots);
  if (!imp->slots) fc_die(__FILE__, __LINE__, "out of memory");
  imp->n_slots = 0;
  imp->g = g;
  imp->prefix = fc_arena_printf(imp->a, "%s/%s/", lx_label(l), sg->attr);
  if (region) {
    imp->fwd = NULL;
    imp->n_fwd = 0;
    imp->nonconst = NULL;
    imp->n_nonconst = 0;
  }
  FcStatus st = FC_OK;
  for (int i = 0; i < sg->n_free && st == FC_OK; i++) {
    FcValue *v = sg->free_vals[i];
    if (sg->cap_index[i] >= 0) v = cap_args[sg->cap_index[i]];
    else if (region) v = add_constant(imp, fc_value_const(v), sg->free_names[i], NULL);
    st = v ? define(imp, sg->free_names[i], v, false, NULL, NULL) : imp->diag->status;
  }
  for (size_t i = 0; i < gp->n_input && st == FC_OK; i++) {
    const char *n = gp->input[i]->name;
    if (!n || !*n) st = fc_lx_error(l, "input %zu of subgraph '%s' has no name", i, sg->attr);
    else if (lookup(imp, n)) continue; /* an input that shadows a captured name: the input wins below */
    else st = define(imp, n, in[i], false, NULL, NULL);
  }
  for (size_t i = 0; i < gp->n_input && st == FC_OK; i++) lookup(imp, gp->input[i]->name)->value = in[i];
  if (st == FC_OK) st = import_initializers(imp, gp);
  for (size_t i = 0; i < gp->n_node && st == FC_OK; i++) st = import_node(imp, gp->node[i], i);
  bool skipped = false;
  for (size_t i = 0; i < gp->n_output && st == FC_OK; i++) {
    const char *n = gp->output[i]->name;
    NameSlot *s = n && *n ? lookup(imp, n) : NULL;
    if (!s) st = fc_lx_error(l, "output %zu of subgraph '%s' is not produced inside it", i, sg->attr);
    else if (s->skipped) skipped = true;
    else out[i] = resolve(imp, s->value);
  }
  free(imp->slots);
  imp->slots = saved_slots;
  imp->cap_slots = saved_cap;
  imp->n_slots = saved_n;
  imp->g = saved_g;
  imp->prefix = saved_prefix;
  if (region) {
    free(imp->fwd);
    free(imp->nonconst);
    imp->fwd = saved_fwd;
    imp->n_fwd = saved_n_fwd;
    imp->nonconst = saved_nonconst;
    imp->n_nonconst = saved_n_nonconst;
  }
  if (st == FC_OK && skipped) {
    imp->body_skipped = true;
    st = FC_ERR_UNSUPPORTED;
  }
  return st;
}
