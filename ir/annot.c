/* annot.c — annotations: namespaced, discardable attributes on ops and graph inputs.
 *
 * A list is a small array sorted by name, in the module arena; setting a name replaces its value, and
 * values are deep-copied (arrays, strings, types; a constant tensor is shared, since tensors are
 * immutable once in the arena). Lists are short (a handful of names), so lookups are linear.
 *
 * The flow dialect's names come from annots.def: each row fixes what a rewrite does with the annotation
 * (its policy) and the value it must have, checked by one function per row here. A flow.* name that is
 * not in the table is refused, so a misspelt annotation cannot be silently kept and ignored; other
 * dialects' names pass through untouched. The checks are written against a "subject" type (an op's first
 * result, or the graph input), because most annotations only make sense relative to a shape.
 */
#include "ir.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

static const struct {
  const char *name;
  FcAnnotPolicy policy;
  const char *doc;
} annot_table[FC_ANNOT_COUNT] = {
#define FC_ANNOT(E, name, policy, doc) [FC_ANNOT_##E] = {name, policy, doc},
#include "annots.def"
#undef FC_ANNOT
};

const char *fc_annot_name(FcAnnotId id) { return (unsigned)id < FC_ANNOT_COUNT ? annot_table[id].name : "?"; }

static int known_id(const char *name) {
  for (int i = 0; i < FC_ANNOT_COUNT; i++)
    if (strcmp(annot_table[i].name, name) == 0) return i;
  return -1;
}

static bool in_flow_namespace(const char *name) { return strncmp(name, "flow.", 5) == 0; }

bool fc_annot_name_valid(const char *s, size_t n) {
  if (n == 0 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_')) return false;
  bool dot = false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
              c == '.';
    if (!ok) return false;
    if (c == '.') {
      if (i + 1 == n) return false;
      dot = true;
    }
  }
  return dot;
}

FcAnnotPolicy fc_annot_policy(const char *name) {
  int id = known_id(name);
  return id >= 0 ? annot_table[id].policy : FC_ANNOT_DROP;
}

/* ---- value checks, one per row of annots.def ----------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static bool fail(char *why, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (cap) vsnprintf(why, cap, fmt, ap);
  va_end(ap);
  return false;
}

static bool check_calib_range(const FcAnnotValue *v, const FcType *subject, char *why, size_t cap) {
  if (v->kind != FC_AV_DENSE || v->dtype != FC_DT_F64 || v->floats.n != 2) return false;
  double lo = v->floats.v[0], hi = v->floats.v[1];
  if (!isfinite(lo) || !isfinite(hi) || lo > hi) return fail(why, cap, "[%g, %g] is not a finite range", lo, hi);
  /* a quantised result (a calibrated model's conv, once fold_qdq made it integer) keeps the range of the reals
   * it expresses */
  bool real = subject && (fc_dtype_is_float(subject->dtype) ||
                          (subject->quant && fc_dtype_is_float(subject->quant->expressed)));
  if (subject && !real)
    return fail(why, cap, "the subject's element type %s is not a float type", fc_dtype_name(subject->dtype));
  return true;
}

static bool check_mesh(const FcAnnotValue *v, const FcType *subject, char *why, size_t cap) {
  (void)subject;
  if (v->kind != FC_AV_DENSE || v->dtype != FC_DT_I64 || v->ints.n < 1) return false;
  int64_t n = 1;
  for (int i = 0; i < v->ints.n; i++) {
    if (v->ints.v[i] < 1) return fail(why, cap, "mesh dim %" PRId64 " is not positive", v->ints.v[i]);
    /* The runtime numbers ranks with int32 (FrtModel.n_ranks, frt_coll_rank). */
    if (!fc_checked_mul(n, v->ints.v[i], &n) || n > INT32_MAX) return fail(why, cap, "the mesh has too many ranks");
  }
  return true;
}

/* A rank number; that it is below the mesh's product is checked with the module (fc_verify). */
static bool check_rank(const FcAnnotValue *v, const FcType *subject, char *why, size_t cap) {
  (void)subject;
  if (v->kind != FC_AV_INT) return false;
  if (v->i < 0 || v->i > INT32_MAX) return fail(why, cap, "rank %" PRId64 " is out of range", v->i);
  return true;
}

static bool check_micro_batches(const FcAnnotValue *v, const FcType *subject, char *why, size_t cap) {
  (void)subject;
  if (v->kind != FC_AV_INT) return false;
  if (v->i < 0 || v->i > INT32_MAX) return fail(why, cap, "%" PRId64 " micro-batches is out of range", v->i);
  return true;
}

static bool check_placement(const FcAnnotValue *v, const FcType *subject, char *why, size_t cap) {
  (void)subject;
  if (v->kind != FC_AV_DENSE || v->dtype != FC_DT_I64 || v->ints.n < 1) return false;
  for (int i = 0; i < v->ints.n; i++)
    if (v->ints.v[i] < 0) return fail(why, cap, "device id %" PRId64 " is negative", v->ints.v[i]);
  return true;
}

static bool check_prune_mask(const FcAnnotValue *v, const FcType *subject, char *why, size_t cap) {
  if (v->kind != FC_AV_TENSOR || !v->tensor || v->tensor->type.dtype != FC_DT_BOOL || v->tensor->type.quant)
    return false;
  const FcType *m = &v->tensor->type;
  if (!subject) return true;
  char a[256], b[256];
  bool ok = m->rank == subject->rank;
  for (int i = 0; ok && i < m->rank; i++) ok = m->dims[i] == 1 || m->dims[i] == subject->dims[i];
  if (!ok)
    return fail(why, cap, "mask %s does not broadcast to %s", fc_type_str(m, a, sizeof a),
                fc_type_str(subject, b, sizeof b));
  return true;
}

/* A non-empty string: flow.quant_note and flow.sbp_note. */
static bool check_quant_note(const FcAnnotValue *v, const FcType *subject, char *why, size_t cap) {
  (void)subject;
  (void)why;
  (void)cap;
  return v->kind == FC_AV_STR && v->s && *v->s;
}

static bool check_quant(const FcAnnotValue *v, const FcType *subject, char *why, size_t cap) {
  if (v->kind != FC_AV_TYPE || v->type.rank >= 0 || !v->type.quant) return false;
  const FcQuant *q = v->type.quant;
  char msg[512];
  if (fc_quant_problem(q, NULL, msg, sizeof msg)) return fail(why, cap, "%s", msg);
  if (!subject) return true;
  if (subject->dtype != q->expressed)
    return fail(why, cap, "expressed type %s differs from the result's element type %s", fc_dtype_name(q->expressed),
                fc_dtype_name(subject->dtype));
  /* The per-axis checks are those of the quantised type the result would get. */
  FcType quantised = *subject;
  quantised.dtype = q->storage;
  if (fc_quant_problem(q, &quantised, msg, sizeof msg)) return fail(why, cap, "%s", msg);
  return true;
}

/* "B", "S(k)" with k a dim of the subject, "P(sum)", "P(max)" or "P(min)". */
static bool sbp_entry_ok(const char *s, const FcType *subject, char *why, size_t cap) {
  if (strcmp(s, "B") == 0 || strcmp(s, "P(sum)") == 0 || strcmp(s, "P(max)") == 0 || strcmp(s, "P(min)") == 0)
    return true;
  if (s[0] == 'S' && s[1] == '(') {
    int64_t k = 0;
    const char *p = s + 2;
    if (*p < '0' || *p > '9') return false;
    while (*p >= '0' && *p <= '9' && k <= INT32_MAX) k = k * 10 + (*p++ - '0');
    if (p[0] != ')' || p[1] != '\0') return false;
    if (subject && k >= subject->rank)
      return fail(why, cap, "\"%s\" splits axis %" PRId64 " of a rank-%d tensor", s, k, subject->rank);
    return true;
  }
  return false;
}

static bool check_sbp(const FcAnnotValue *v, const FcType *subject, char *why, size_t cap) {
  if (v->kind != FC_AV_ARRAY || v->array.n < 1) return false;
  for (int i = 0; i < v->array.n; i++) {
    const FcAnnotValue *e = &v->array.v[i];
    if (e->kind != FC_AV_STR || !e->s) return false;
    if (!sbp_entry_ok(e->s, subject, why, cap)) return false;
  }
  return true;
}

/* "f16" or "bf16", on an f32 result: codegen stores the data of an f32 constant so (fc_op_storage_dtype). */
static bool check_storage(const FcAnnotValue *v, const FcType *subject, char *why, size_t cap) {
  if (v->kind != FC_AV_STR || !v->s || (strcmp(v->s, "f16") != 0 && strcmp(v->s, "bf16") != 0)) return false;
  if (subject && (subject->dtype != FC_DT_F32 || subject->quant))
    return fail(why, cap, "the data of an f32 constant is stored in 16 bits, not that of %s",
                fc_dtype_name(subject->dtype));
  return true;
}

typedef bool (*CheckFn)(const FcAnnotValue *v, const FcType *subject, char *why, size_t cap);
static const CheckFn checks[FC_ANNOT_COUNT] = {
    [FC_ANNOT_CALIB_RANGE] = check_calib_range,
    [FC_ANNOT_MESH] = check_mesh,
    [FC_ANNOT_MICRO_BATCHES] = check_micro_batches,
    [FC_ANNOT_PLACEMENT] = check_placement,
    [FC_ANNOT_PRUNE_MASK] = check_prune_mask,
    [FC_ANNOT_QUANT] = check_quant,
    [FC_ANNOT_QUANT_NOTE] = check_quant_note,
    [FC_ANNOT_RANK] = check_rank,
    [FC_ANNOT_SBP] = check_sbp,
    [FC_ANNOT_SBP_AXES] = check_quant_note,
    [FC_ANNOT_SBP_FILE] = check_quant_note,
    [FC_ANNOT_SBP_NOTE] = check_quant_note,
    [FC_ANNOT_STAGE_STARTS] = check_quant_note,
    [FC_ANNOT_STORAGE] = check_storage,
};

bool fc_annot_check(const char *name, const FcAnnotValue *v, const FcType *subject, char *why, size_t cap) {
  if (!fc_annot_name_valid(name, strlen(name))) return fail(why, cap, "'%s' is not a namespaced name", name);
  if (!in_flow_namespace(name)) return true;
  int id = known_id(name);
  if (id < 0) return fail(why, cap, "unknown annotation '%s'", name);
  if (subject && subject->rank < 0) subject = NULL;
  char detail[512] = "";
  if (checks[id](v, subject, detail, sizeof detail)) return true;
  if (detail[0]) return fail(why, cap, "%s: %s", name, detail);
  return fail(why, cap, "%s must be %s", name, annot_table[id].doc);
}

/* ---- lists ------------------------------------------------------------------------------------------ */

static FcAnnotValue copy_value(FcArena *a, const FcAnnotValue *v) {
  FcAnnotValue c = *v;
  switch (v->kind) {
  case FC_AV_STR: c.s = fc_arena_strdup(a, v->s ? v->s : ""); break;
  case FC_AV_ARRAY: {
    FcAnnotValue *arr = v->array.n > 0 ? FC_NEW_ARRAY(a, FcAnnotValue, (size_t)v->array.n) : NULL;
    /* Nesting is bounded by the parser (and by what a pass builds), so the recursion is shallow. */
    for (int i = 0; i < v->array.n; i++) arr[i] = copy_value(a, &v->array.v[i]);
    c.array.v = arr;
    break;
  }
  case FC_AV_DENSE:
    if (fc_dtype_is_float(v->dtype))
      c.floats.v = v->floats.n > 0 ? fc_arena_memdup(a, v->floats.v, (size_t)v->floats.n * sizeof(double), 8) : NULL;
    else
      c.ints.v = v->ints.n > 0 ? fc_arena_memdup(a, v->ints.v, (size_t)v->ints.n * sizeof(int64_t), 8) : NULL;
    break;
  case FC_AV_TYPE: c.type = fc_type_copy(a, &v->type); break;
  case FC_AV_DICT: {
    FcAnnot *d = v->dict.n > 0 ? FC_NEW_ARRAY(a, FcAnnot, (size_t)v->dict.n) : NULL;
    for (int i = 0; i < v->dict.n; i++) d[i] = (FcAnnot){fc_arena_strdup(a, v->dict.v[i].name), copy_value(a, &v->dict.v[i].value)};
    c.dict.v = d;
    break;
  }
  default: break;
  }
  return c;
}

static int find(const FcAnnots *list, const char *name) {
  for (int i = 0; i < list->n; i++)
    if (strcmp(list->v[i].name, name) == 0) return i;
  return -1;
}

void fc_annots_set(FcArena *a, FcAnnots *list, const char *name, const FcAnnotValue *v) {
  FC_ASSERT(fc_annot_name_valid(name, strlen(name)));
  FcAnnotValue c = copy_value(a, v);
  int i = find(list, name);
  if (i >= 0) {
    list->v[i].value = c;
    return;
  }
  /* The arena never frees, so the list grows by copying; lists stay a few entries long. */
  FcAnnot *n = FC_NEW_ARRAY(a, FcAnnot, (size_t)list->n + 1);
  int pos = 0;
  while (pos < list->n && strcmp(list->v[pos].name, name) < 0) pos++;
  if (pos) memcpy(n, list->v, (size_t)pos * sizeof *n);
  n[pos] = (FcAnnot){fc_arena_strdup(a, name), c};
  if (list->n > pos) memcpy(n + pos + 1, list->v + pos, (size_t)(list->n - pos) * sizeof *n);
  list->v = n;
  list->n++;
}

const FcAnnotValue *fc_annots_get(const FcAnnots *list, const char *name) {
  int i = find(list, name);
  return i >= 0 ? &list->v[i].value : NULL;
}

bool fc_annots_remove(FcAnnots *list, const char *name) {
  int i = find(list, name);
  if (i < 0) return false;
  memmove(list->v + i, list->v + i + 1, (size_t)(list->n - i - 1) * sizeof *list->v);
  list->n--;
  return true;
}

bool fc_annot_value_equal(const FcAnnotValue *a, const FcAnnotValue *b) {
  if (a->kind != b->kind) return false;
  switch (a->kind) {
  case FC_AV_UNIT: return true;
  case FC_AV_BOOL: return a->b == b->b;
  case FC_AV_INT: return a->dtype == b->dtype && a->i == b->i;
  case FC_AV_FLOAT: return a->dtype == b->dtype && memcmp(&a->f, &b->f, sizeof a->f) == 0;
  case FC_AV_STR: return strcmp(a->s, b->s) == 0;
  case FC_AV_ARRAY:
    if (a->array.n != b->array.n) return false;
    for (int i = 0; i < a->array.n; i++)
      if (!fc_annot_value_equal(&a->array.v[i], &b->array.v[i])) return false;
    return true;
  case FC_AV_DENSE:
    if (a->dtype != b->dtype) return false;
    if (fc_dtype_is_float(a->dtype))
      return a->floats.n == b->floats.n &&
             (a->floats.n == 0 || memcmp(a->floats.v, b->floats.v, (size_t)a->floats.n * sizeof(double)) == 0);
    return a->ints.n == b->ints.n &&
           (a->ints.n == 0 || memcmp(a->ints.v, b->ints.v, (size_t)a->ints.n * sizeof(int64_t)) == 0);
  case FC_AV_TYPE: return a->type.rank == b->type.rank && (a->type.rank < 0 ? a->type.dtype == b->type.dtype &&
                                                               fc_quant_equal(a->type.quant, b->type.quant)
                                                                             : fc_type_equal(&a->type, &b->type));
  case FC_AV_DICT:
    if (a->dict.n != b->dict.n) return false;
    for (int i = 0; i < a->dict.n; i++)
      if (strcmp(a->dict.v[i].name, b->dict.v[i].name) != 0 ||
          !fc_annot_value_equal(&a->dict.v[i].value, &b->dict.v[i].value))
        return false;
    return true;
  case FC_AV_TENSOR: {
    const FcTensor *x = a->tensor, *y = b->tensor;
    if (x == y) return true;
    return x && y && fc_type_equal(&x->type, &y->type) && x->nbytes == y->nbytes && x->data && y->data &&
           (x->nbytes == 0 || memcmp(x->data, y->data, (size_t)x->nbytes) == 0);
  }
  }
  return false;
}

bool fc_annots_equal(const FcAnnots *a, const FcAnnots *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++)
    if (strcmp(a->v[i].name, b->v[i].name) != 0 || !fc_annot_value_equal(&a->v[i].value, &b->v[i].value))
      return false;
  return true;
}

bool fc_annots_subset(const FcAnnots *a, const FcAnnots *b) {
  for (int i = 0; i < a->n; i++) {
    const FcAnnotValue *v = fc_annots_get(b, a->v[i].name);
    if (!v || !fc_annot_value_equal(&a->v[i].value, v)) return false;
  }
  return true;
}

void fc_annots_copy_kept(FcArena *a, FcAnnots *to, const FcAnnots *from) {
  if (to == from) return;
  for (int i = 0; i < from->n; i++)
    if (fc_annot_policy(from->v[i].name) == FC_ANNOT_KEEP && find(to, from->v[i].name) < 0)
      fc_annots_set(a, to, from->v[i].name, &from->v[i].value);
}

/* ---- ops and graph inputs ---------------------------------------------------------------------------- */

void fc_op_set_annot(FcOp *op, const char *name, const FcAnnotValue *v) {
  fc_annots_set(&op->graph->module->arena, &op->annots, name, v);
}

const FcAnnotValue *fc_op_annot(const FcOp *op, const char *name) { return fc_annots_get(&op->annots, name); }

FcDtype fc_op_storage_dtype(const FcOp *op) {
  const FcAnnotValue *v = op->kind == FC_OP_CONSTANT && op->n_results == 1 && op->results[0].type.dtype == FC_DT_F32 &&
                                  !op->results[0].type.quant
                              ? fc_op_annot(op, fc_annot_name(FC_ANNOT_STORAGE))
                              : NULL;
  if (!v || v->kind != FC_AV_STR || !v->s) return FC_DT_F32;
  return strcmp(v->s, "f16") == 0 ? FC_DT_F16 : strcmp(v->s, "bf16") == 0 ? FC_DT_BF16 : FC_DT_F32;
}

void fc_input_set_annot(FcGraph *g, FcValue *input, const char *name, const FcAnnotValue *v) {
  FC_ASSERT(!input->def);
  fc_annots_set(&g->module->arena, &input->annots, name, v);
}
