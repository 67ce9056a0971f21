/* cse.c — common-subexpression elimination.
 *
 * One forward walk with a hash table of the pure ops seen so far, keyed by (kind, operands,
 * attributes, result count). An op equal to one already in the table has its results replaced by the
 * earlier op's and is erased. Because the walk goes forward and replaces uses at once, later ops
 * already refer to the surviving values when they are hashed, so chains of duplicates collapse in the
 * same walk.
 *
 * Equality: the same kind; operands that are the same SSA values (for a commutative binary op, in
 * either order — the hash orders the two operand ids first so both orders land in the same bucket);
 * the same attributes, compared bit for bit (floats by their bits, so NaN equals NaN and -0.0 differs
 * from 0.0); and the same result types. Constants are ops like any other: their tensor attribute
 * compares by type and bytes, and their hash covers every byte of the data, so weights that differ
 * only in the middle never pile up in one bucket. A constant whose data was elided in the text form
 * (no data) is never merged: its value is unknown. random_uniform is not pure and is never merged.
 */
#include "passes.h"
#include "rewrite.h"
#include "ew_program.h"

#include <string.h>

#define HASH_SEED 0x9e3779b97f4a7c15ull

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + HASH_SEED + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 32);
}

/* Word-at-a-time hash of a byte buffer (weights can be hundreds of MB; a byte loop would dominate). */
static uint64_t hash_bytes(uint64_t h, const void *p, int64_t n) {
  const unsigned char *b = p;
  uint64_t acc = h ^ ((uint64_t)n * 0x87c37b91114253d5ull);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, b + i, 8);
    acc = (acc ^ w) * 0x9ddfea08eb382d69ull;
    acc ^= acc >> 29;
  }
  uint64_t tail = 0;
  if (i < n) memcpy(&tail, b + i, (size_t)(n - i));
  return mix(acc, tail);
}

static uint64_t hash_type(uint64_t h, const FcType *t) {
  h = mix(h, (uint64_t)t->dtype);
  h = mix(h, (uint64_t)t->rank);
  for (int i = 0; i < t->rank; i++) h = mix(h, (uint64_t)t->dims[i]);
  return h;
}

static uint64_t hash_attr(uint64_t h, const FcAttr *a) {
  h = mix(h, (uint64_t)a->name);
  h = mix(h, (uint64_t)a->kind);
  switch (a->kind) {
  case FC_AK_INT: return mix(h, (uint64_t)a->i);
  case FC_AK_FLOAT: {
    uint32_t bits;
    memcpy(&bits, &a->f, 4);
    return mix(h, bits);
  }
  case FC_AK_STR: return hash_bytes(h, a->s, (int64_t)strlen(a->s));
  case FC_AK_INTS: return hash_bytes(h, a->ints.v, (int64_t)a->ints.n * 8);
  case FC_AK_FLOATS: return hash_bytes(h, a->floats.v, (int64_t)a->floats.n * 4);
  case FC_AK_TYPE: return mix(mix(h, (uint64_t)a->type), a->quant ? (uint64_t)a->quant->n : UINT64_MAX);
  case FC_AK_TENSOR: return hash_bytes(hash_type(h, &a->tensor->type), a->tensor->data, a->tensor->nbytes);
  case FC_AK_PROGRAM:
    for (int i = 0; i < a->prog->n_steps; i++) {
      const FcEwStep *st = &a->prog->steps[i];
      h = mix(mix(h, (uint64_t)st->kind), (uint64_t)st->n_args);
      for (int k = 0; k < st->n_args; k++) h = mix(h, (uint64_t)(int64_t)st->args[k]);
    }
    return h;
  }
  FC_UNREACHABLE();
}

static bool attr_equal(const FcAttr *a, const FcAttr *b) {
  if (a->name != b->name || a->kind != b->kind) return false;
  switch (a->kind) {
  case FC_AK_INT: return a->i == b->i;
  case FC_AK_FLOAT: return memcmp(&a->f, &b->f, 4) == 0;
  case FC_AK_STR: return strcmp(a->s, b->s) == 0;
  case FC_AK_INTS:
    return a->ints.n == b->ints.n && (a->ints.n == 0 || memcmp(a->ints.v, b->ints.v, (size_t)a->ints.n * 8) == 0);
  case FC_AK_FLOATS:
    return a->floats.n == b->floats.n &&
           (a->floats.n == 0 || memcmp(a->floats.v, b->floats.v, (size_t)a->floats.n * 4) == 0);
  case FC_AK_TYPE: return a->type == b->type && fc_quant_equal(a->quant, b->quant);
  case FC_AK_TENSOR: {
    const FcTensor *x = a->tensor, *y = b->tensor;
    return fc_type_equal(&x->type, &y->type) && x->nbytes == y->nbytes && x->data && y->data &&
           (x->nbytes == 0 || memcmp(x->data, y->data, (size_t)x->nbytes) == 0);
  }
  case FC_AK_PROGRAM: return fc_ew_program_equal(a->prog, b->prog);
  }
  FC_UNREACHABLE();
}

static bool is_commutative_pair(const FcOp *op) {
  return (fc_op_info(op->kind)->flags & FC_OPF_COMMUTATIVE) && op->n_operands == 2;
}

enum { MAX_RESULTS = 8 }; /* ops.def allows at most 3; more is a malformed op, left alone */

/* Region ops are never merged: two loops are equal only if their bodies are, which this pass does not
 * compare. */
static bool eligible(const FcOp *op) {
  if (!fc_rw_removable(op) || op->n_regions || op->n_results == 0 || op->n_results > MAX_RESULTS) return false;
  for (int i = 0; i < op->n_operands; i++)
    if (!op->operands[i].value) return false;
  for (int i = 0; i < op->n_attrs; i++)
    if (op->attrs[i].kind == FC_AK_TENSOR && (!op->attrs[i].tensor || !op->attrs[i].tensor->data)) return false;
  return true;
}

static uint64_t hash_op(const FcOp *op) {
  uint64_t h = mix(HASH_SEED, (uint64_t)op->kind);
  h = mix(h, (uint64_t)op->n_operands);
  h = mix(h, (uint64_t)op->n_results);
  if (is_commutative_pair(op)) {
    uint64_t a = op->operands[0].value->id, b = op->operands[1].value->id;
    h = mix(mix(h, a < b ? a : b), a < b ? b : a);
  } else {
    for (int i = 0; i < op->n_operands; i++) h = mix(h, op->operands[i].value->id);
  }
  h = mix(h, (uint64_t)op->n_attrs);
  for (int i = 0; i < op->n_attrs; i++) h = hash_attr(h, &op->attrs[i]);
  return h;
}

static bool op_equal(const FcOp *a, const FcOp *b) {
  if (a->kind != b->kind || a->n_operands != b->n_operands || a->n_results != b->n_results ||
      a->n_attrs != b->n_attrs)
    return false;
  bool same = true;
  for (int i = 0; i < a->n_operands && same; i++) same = a->operands[i].value == b->operands[i].value;
  if (!same && is_commutative_pair(a))
    same = a->operands[0].value == b->operands[1].value && a->operands[1].value == b->operands[0].value;
  if (!same) return false;
  /* Attributes are stored in schema order, so equal sets line up position by position. */
  for (int i = 0; i < a->n_attrs; i++)
    if (!attr_equal(&a->attrs[i], &b->attrs[i])) return false;
  for (int i = 0; i < a->n_results; i++)
    if (!fc_type_equal(&a->results[i].type, &b->results[i].type)) return false;
  /* Ops placed or distributed differently are different computations. */
  return fc_annots_equal(&a->annots, &b->annots);
}

typedef struct Slot {
  uint64_t hash;
  FcOp *op; /* NULL: empty */
} Slot;

FcStatus fc_pass_cse(FcModule *m, FcPassContext *pc) {
  FcGraph *g = m->graph;
  size_t n_ops = 0;
  fc_graph_for_each_op(g, op) n_ops++;
  /* Load factor <= 1/2: open addressing with linear probing stays short. */
  size_t cap = 16;
  while (cap < 2 * n_ops) cap *= 2;
  Slot *table = FC_NEW_ARRAY(&pc->scratch, Slot, cap);
  FcOpStack scratch;
  fc_op_stack_init(&scratch, &m->arena);

  fc_graph_for_each_op_safe(g, op, next) {
    if (!eligible(op)) continue;
    uint64_t h = hash_op(op);
    size_t i = (size_t)h & (cap - 1);
    for (; table[i].op; i = (i + 1) & (cap - 1)) {
      if (table[i].hash != h || !op_equal(table[i].op, op)) continue;
      FcOp *keep = table[i].op;
      FcValue *with[MAX_RESULTS];
      for (int r = 0; r < op->n_results; r++) with[r] = &keep->results[r];
      fc_rw_replace_op(op, with, &scratch);
      break;
    }
    if (!table[i].op) table[i] = (Slot){h, op};
  }
  return FC_OK;
}
