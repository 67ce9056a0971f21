/* test_memplan.c — unit tests for the static memory planner (passes/memplan.c).
 *
 * The heart is check_plan, a checker that knows nothing of how the planner works: it recomputes every
 * live range from the graph and then checks, for every pair of values whose bytes overlap, that no
 * value is written while another one sharing its bytes is still needed (the one exception being the
 * operand an in-place elementwise op overwrites, read at that very op); that nothing is written into an
 * input or a constant; that views and in-place results obey their rules; that outputs land where the
 * contract says; and that the totals are right (workspace_bytes <= naive_bytes, both multiples of 64,
 * and the workspace no smaller than the largest set of blocks live at one position). It runs on every
 * small graph below — which also pin exact offsets — and on every model of the ONNX test data after
 * import and after -O2, with and without in-place/views.
 */
#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "memplan.h"
#include "onnx.h"
#include "passes.h"

#include "test_target.h"

/* ---- the checker ---------------------------------------------------------------------------------- */

typedef struct Ck {
  const FcModule *m;
  const FcMemPlan *p;
  const FcValue **vals; /* by id; NULL for ids of no live value */
  int *first, *last;    /* by id, recomputed */
  int *out_pos;         /* by id: the first output position returning it, -1 if none */
  char *why;
  size_t cap;
} Ck;

static bool ck_fail(Ck *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool ck_fail(Ck *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->why, c->cap, fmt, ap);
  va_end(ap);
  return false;
}

static int64_t round64(int64_t n) { return (n + 63) / 64 * 64; }

static bool writes(const FcBufAssign *a) {
  return a->kind == FC_BUF_WORKSPACE || a->kind == FC_BUF_OUTPUT || (a->kind == FC_BUF_ALIAS && !a->is_view);
}

/* Whether bytes [off, off + size) of a buffer intersect value b's. */
static bool overlap_range(FcBufKind storage, int index, int64_t off, int64_t size, const FcBufAssign *b) {
  if (storage != b->storage || size == 0 || b->size == 0) return false;
  if (storage != FC_BUF_WORKSPACE && index != b->index) return false;
  if (storage == FC_BUF_WORKSPACE || storage == FC_BUF_OUTPUT) return off < b->offset + b->size && b->offset < off + size;
  return true;
}

/* Whether the bytes of two values intersect. */
static bool overlap(const FcBufAssign *a, const FcBufAssign *b) {
  return overlap_range(a->storage, a->index, a->offset, a->size, b);
}

static bool is_part_of(const FcMemPlan *p, const FcOp *concat, const FcValue *x) {
  const FcBufAssign *a = &p->by_value[x->id];
  return a->kind == FC_BUF_ALIAS && a->is_part && a->alias_of == concat->results[0].id;
}

/* Whether the bytes that value `ia` is written to at its definition intersect value b's: all of its
 * bytes, but for a concat only the slices of operands that are not parts (those are written by their
 * own ops). */
static bool written_overlap(const Ck *c, uint32_t ia, const FcBufAssign *b) {
  const FcBufAssign *a = &c->p->by_value[ia];
  const FcOp *def = c->vals[ia]->def;
  if (!def || def->kind != FC_OP_CONCAT) return overlap(a, b);
  int64_t at = 0;
  for (int j = 0; j < def->n_operands; j++) {
    const FcValue *x = def->operands[j].value;
    int64_t size = c->p->by_value[x->id].size;
    if (!is_part_of(c->p, def, x) && overlap_range(a->storage, a->index, a->offset + at, size, b)) return true;
    at += size;
  }
  return false;
}

/* Checks concat part v (kind ALIAS, is_part): its concat, slice position and alignment. */
static bool check_part(Ck *c, const FcValue *v) {
  const FcMemPlan *p = c->p;
  const FcBufAssign *a = &p->by_value[v->id];
  uint32_t id = v->id, rid = a->alias_of;
  const FcValue *r = rid < p->n_values ? c->vals[rid] : NULL;
  if (!r || !r->def || r->def->kind != FC_OP_CONCAT || v->def == r->def)
    return ck_fail(c, "v%u: part of v%u, which is not a concat result", id, rid);
  const FcOp *cat = r->def;
  int64_t axis = fc_op_attr_int(cat, FC_ATTR_AXIS, -1), at = 0, want = -1;
  for (int d = 0; d < axis; d++)
    if (r->type.dims[d] != 1) return ck_fail(c, "v%u: part of v%u, whose slices are not contiguous", id, rid);
  int seen = 0;
  for (int j = 0; j < cat->n_operands; j++) {
    if (cat->operands[j].value == v) {
      seen++;
      want = at;
    }
    at += p->by_value[cat->operands[j].value->id].size;
  }
  if (seen != 1) return ck_fail(c, "v%u: part of v%u, but an operand of it %d times", id, rid, seen);
  const FcBufAssign *ra = &p->by_value[rid];
  if (ra->kind != FC_BUF_WORKSPACE && ra->kind != FC_BUF_OUTPUT)
    return ck_fail(c, "v%u: part of v%u, which does not own its bytes", id, rid);
  if (a->root != rid || a->at != want || a->storage != ra->kind || a->index != ra->index ||
      a->offset != ra->offset + want || want % 64 != 0)
    return ck_fail(c, "v%u: part of v%u at %lld (offset %lld), want its slice at %lld", id, rid, (long long)a->at,
                   (long long)a->offset, (long long)want);
  return true;
}

static bool is_operand(const FcOp *op, uint32_t id) {
  for (int i = 0; i < op->n_operands; i++)
    if (op->operands[i].value && op->operands[i].value->id == id) return true;
  return false;
}

/* Per-value checks of kind, storage and alias rules. */
static bool check_value(Ck *c, const FcValue *v) {
  const FcMemPlan *p = c->p;
  const FcBufAssign *a = &p->by_value[v->id];
  uint32_t id = v->id;
  int64_t size;
  if (!fc_type_nbytes(&v->type, &size) || a->size != size) return ck_fail(c, "v%u: size %lld", id, (long long)a->size);
  if (a->first != c->first[id] || a->last != c->last[id])
    return ck_fail(c, "v%u: live [%d, %d], want [%d, %d]", id, a->first, a->last, c->first[id], c->last[id]);
  const FcOp *def = v->def;
  if (!def) {
    if (a->kind != FC_BUF_INPUT || a->storage != FC_BUF_INPUT || a->index != v->index)
      return ck_fail(c, "v%u: graph input %d not planned as input", id, v->index);
    return true;
  }
  if (def->kind == FC_OP_CONSTANT) {
    if (a->kind != FC_BUF_CONSTANT || a->storage != FC_BUF_CONSTANT || a->index < 0)
      return ck_fail(c, "v%u: constant not planned as constant", id);
    return true;
  }
  if (c->out_pos[id] >= 0) {
    if (a->kind != FC_BUF_OUTPUT || a->storage != FC_BUF_OUTPUT || a->index != c->out_pos[id])
      return ck_fail(c, "v%u: output %d not computed into its buffer", id, c->out_pos[id]);
    return true;
  }
  switch (a->kind) {
  case FC_BUF_WORKSPACE:
    if (a->storage != FC_BUF_WORKSPACE || a->root != id || a->offset < 0 || a->offset % 64 != 0)
      return ck_fail(c, "v%u: bad workspace block (offset %lld)", id, (long long)a->offset);
    if (a->size > 0 && a->offset + round64(a->size) > p->workspace_bytes)
      return ck_fail(c, "v%u: block [%lld, +%lld) beyond the workspace", id, (long long)a->offset, (long long)a->size);
    return true;
  case FC_BUF_ALIAS: {
    if (a->is_part) return check_part(c, v);
    if (a->alias_of >= p->n_values || !c->vals[a->alias_of] || !is_operand(def, a->alias_of))
      return ck_fail(c, "v%u: alias of v%u, which is not an operand of its op", id, a->alias_of);
    uint32_t r = a->alias_of;
    for (int steps = 0; p->by_value[r].kind == FC_BUF_ALIAS; steps++) {
      if (steps > (int)p->n_values) return ck_fail(c, "v%u: alias cycle", id);
      r = p->by_value[r].alias_of;
    }
    /* A view (reshape, or scast: the same integers under another type) or an in-place result has exactly
     * the bytes of the value it aliases (which may itself be a concat part, inside a larger root). */
    const FcBufAssign *ra = &p->by_value[r], *xa = &p->by_value[a->alias_of];
    if (a->root != r || a->storage != ra->kind || a->size != xa->size)
      return ck_fail(c, "v%u: alias root v%u / storage / size mismatch", id, r);
    if (a->offset != xa->offset || a->index != xa->index || a->at != xa->at)
      return ck_fail(c, "v%u: alias location differs from that of v%u", id, a->alias_of);
    const FcValue *x = c->vals[a->alias_of];
    if (a->is_view) {
      if ((def->kind != FC_OP_RESHAPE && def->kind != FC_OP_SCAST) || def->operands[0].value != x)
        return ck_fail(c, "v%u: view made by a %s", id, fc_op_info(def->kind)->name);
      return true;
    }
    if (!(fc_op_info(def->kind)->flags & FC_OPF_ELEMENTWISE) && def->kind != FC_OP_FUSED)
      return ck_fail(c, "v%u: in place over a non-elementwise %s", id, fc_op_info(def->kind)->name);
    if (a->storage != FC_BUF_WORKSPACE) return ck_fail(c, "v%u: in place over a read-only buffer", id);
    if (!fc_shape_equal(&x->type, &v->type) || fc_dtype_size(x->type.dtype) != fc_dtype_size(v->type.dtype))
      return ck_fail(c, "v%u: in place over v%u of another shape or element size", id, x->id);
    return true;
  }
  default: return ck_fail(c, "v%u: op result planned as kind %d", id, (int)a->kind);
  }
}

/* Whether the bytes of `a`, written at its definition, may overlap those of `b`. */
static bool check_pair(Ck *c, uint32_t ia, uint32_t ib) {
  const FcBufAssign *a = &c->p->by_value[ia], *b = &c->p->by_value[ib];
  if (!writes(a) || !written_overlap(c, ia, b)) return true;
  if (a->storage == FC_BUF_INPUT || a->storage == FC_BUF_CONSTANT)
    return ck_fail(c, "v%u is written into a read-only buffer", ia);
  if (b->first == a->first && writes(b)) return ck_fail(c, "v%u and v%u are written by one op into the same bytes", ia, ib);
  if (b->first < a->first) {
    if (b->last > a->first) return ck_fail(c, "v%u is overwritten by v%u while still live (live to %d, written at %d)", ib, ia, b->last, a->first);
    if (b->last == a->first && !(a->kind == FC_BUF_ALIAS && !a->is_view && a->alias_of == ib))
      return ck_fail(c, "v%u is read by the op that overwrites it with v%u, which is not in place over it", ib, ia);
  }
  return true;
}

/* The whole check; false with a message in `why`. */
static bool check_plan(const FcModule *m, const FcMemPlan *p, char *why, size_t cap) {
  FcGraph *g = m->graph;
  Ck c = {.m = m, .p = p, .why = why, .cap = cap};
  bool ok = false;
  uint32_t n = g->next_value_id;
  c.vals = calloc(n + 1, sizeof *c.vals);
  c.first = calloc(n + 1, sizeof *c.first);
  c.last = calloc(n + 1, sizeof *c.last);
  c.out_pos = calloc(n + 1, sizeof *c.out_pos);
  int *pos = calloc((size_t)g->next_op_id + 1, sizeof *pos);
  uint32_t *ids = calloc(n + 1, sizeof *ids);
  int n_ids = 0, n_ops = 0;
  int64_t *busy = NULL;
  if (p->n_values != n) {
    ck_fail(&c, "n_values %u, want %u", p->n_values, n);
    goto done;
  }
  fc_graph_for_each_op(g, op) pos[op->id] = n_ops++;
  if (p->n_ops != n_ops) {
    ck_fail(&c, "n_ops %d, want %d", p->n_ops, n_ops);
    goto done;
  }
  for (uint32_t i = 0; i < n; i++) c.out_pos[i] = -1;
  for (int i = 0; i < g->n_inputs; i++) {
    c.vals[g->inputs[i]->id] = g->inputs[i];
    c.first[g->inputs[i]->id] = -1;
    ids[n_ids++] = g->inputs[i]->id;
  }
  fc_graph_for_each_op(g, op)
    for (int i = 0; i < op->n_results; i++) {
      c.vals[op->results[i].id] = &op->results[i];
      c.first[op->results[i].id] = pos[op->id];
      ids[n_ids++] = op->results[i].id;
    }
  for (int k = 0; k < n_ids; k++) {
    const FcValue *v = c.vals[ids[k]];
    c.last[v->id] = c.first[v->id];
    for (const FcUse *u = v->first_use; u; u = u->next_use)
      if (pos[u->user->id] > c.last[v->id]) c.last[v->id] = pos[u->user->id];
  }
  int copies = 0;
  for (int i = 0; i < fc_graph_num_outputs(g); i++) {
    const FcValue *v = fc_graph_output(g, i);
    bool copy = !v->def || v->def->kind == FC_OP_CONSTANT || c.out_pos[v->id] >= 0;
    if (!copy) c.out_pos[v->id] = i;
    copies += copy;
    if (fc_memplan_output_is_copy(m, p, i) != copy) {
      ck_fail(&c, "output %d: is_copy %d, want %d", i, !copy, copy);
      goto done;
    }
  }
  if (copies != p->n_outputs_copied) {
    ck_fail(&c, "n_outputs_copied %d, want %d", p->n_outputs_copied, copies);
    goto done;
  }
  int64_t naive = 0, top = 0;
  int n_ws = 0, n_alias = 0;
  for (int k = 0; k < n_ids; k++) {
    if (!check_value(&c, c.vals[ids[k]])) goto done;
    const FcBufAssign *a = &p->by_value[ids[k]];
    if (a->kind == FC_BUF_WORKSPACE || a->kind == FC_BUF_ALIAS) naive += round64(a->size);
    if (a->kind == FC_BUF_WORKSPACE && a->size > 0 && a->offset + round64(a->size) > top) top = a->offset + round64(a->size);
    n_ws += a->kind == FC_BUF_WORKSPACE;
    n_alias += a->kind == FC_BUF_ALIAS;
  }
  for (uint32_t id = 0; id < n; id++)
    if (!c.vals[id] && p->by_value[id].kind != FC_BUF_NONE) {
      ck_fail(&c, "v%u: not a live value but planned", id);
      goto done;
    }
  if (naive != p->naive_bytes || top != p->workspace_bytes || n_ws != p->n_workspace_values || n_alias != p->n_aliases) {
    ck_fail(&c, "totals: naive %lld (want %lld), workspace %lld (want the top block end %lld), blocks %d/%d, aliases %d/%d",
            (long long)p->naive_bytes, (long long)naive, (long long)p->workspace_bytes, (long long)top,
            p->n_workspace_values, n_ws, p->n_aliases, n_alias);
    goto done;
  }
  if (p->workspace_bytes > p->naive_bytes || p->workspace_bytes % 64 != 0) {
    ck_fail(&c, "workspace %lld > naive %lld or unaligned", (long long)p->workspace_bytes, (long long)p->naive_bytes);
    goto done;
  }
  for (int x = 0; x < n_ids; x++)
    for (int y = 0; y < n_ids; y++)
      if (x != y && !check_pair(&c, ids[x], ids[y])) goto done;
  /* Lower bound: the blocks busy at one position are pairwise disjoint. A block is busy from its
   * root's definition to the last use of anything that aliases it. */
  busy = calloc((size_t)n_ops + 1, sizeof *busy);
  for (int k = 0; k < n_ids; k++) {
    const FcBufAssign *a = &p->by_value[ids[k]];
    if (a->kind != FC_BUF_WORKSPACE || a->size == 0) continue;
    int begin = a->first, end = a->last;
    for (int j = 0; j < n_ids; j++) {
      const FcBufAssign *member = &p->by_value[ids[j]];
      if (member->root != ids[k]) continue;
      if (member->last > end) end = member->last;
      if (member->first >= 0 && member->first < begin) begin = member->first; /* a concat part, defined before its root */
    }
    for (int q = begin; q <= end; q++) busy[q] += round64(a->size);
  }
  for (int q = 0; q < n_ops; q++)
    if (busy[q] > p->workspace_bytes) {
      ck_fail(&c, "position %d needs %lld bytes, workspace %lld", q, (long long)busy[q], (long long)p->workspace_bytes);
      goto done;
    }
  ok = true;
done:
  free(c.vals);
  free(c.first);
  free(c.last);
  free(c.out_pos);
  free(pos);
  free(ids);
  free(busy);
  return ok;
}

/* ---- helpers for built graphs --------------------------------------------------------------------- */

typedef struct T {
  FcModule *m;
  FcBuilder b;
  FcDiag d;
  FcMemPlan p;
} T;

static void t_init(T *t) {
  t->m = fc_module_create("test");
  fc_diag_init(&t->d);
  fc_builder_init(&t->b, t->m->graph, &t->d);
  t->b.loc = "n";
}

static void t_free(T *t) { fc_module_destroy(t->m); }

static FcValue *input(T *t, const char *name, FcDtype dt, int rank, const int64_t *dims) {
  return fc_graph_add_input(t->m->graph, fc_type_make(&t->m->arena, dt, rank, dims), name);
}

static void outputs(T *t, FcValue *const *v, int n) {
  if (fc_b_status(&t->b) != FC_OK) fail_msg("building the test graph: %s", t->d.msg);
  for (int i = 0; i < n; i++) assert_non_null(v[i]);
  fc_graph_set_outputs(t->m->graph, v, NULL, n);
  FcDiag d;
  fc_diag_init(&d);
  if (fc_verify(t->m, &d) != FC_OK) fail_msg("module built by the test does not verify: %s", d.msg);
}

/* Plans with the given switches and runs the checker. */
static void plan_with(T *t, bool in_place, bool views, bool parts) {
  FcMemPlanOptions o = {.in_place = in_place, .reshape_view = views, .concat_parts = parts};
  FcDiag d;
  fc_diag_init(&d);
  if (fc_memplan(t->m, &o, &t->m->arena, &t->p, &d) != FC_OK) fail_msg("memplan: %s", d.msg);
  char why[512];
  if (!check_plan(t->m, &t->p, why, sizeof why)) {
    fc_memplan_print(stderr, t->m, &t->p);
    fail_msg("plan check: %s", why);
  }
}

static void plan(T *t, bool in_place, bool views) { plan_with(t, in_place, views, true); }

static const FcBufAssign *at(T *t, const FcValue *v) { return &t->p.by_value[v->id]; }

static void expect_ws(T *t, const FcValue *v, int64_t off) {
  const FcBufAssign *a = at(t, v);
  if (a->kind != FC_BUF_WORKSPACE || a->offset != off)
    fail_msg("v%u: kind %d offset %lld, want a workspace block at %lld", v->id, (int)a->kind, (long long)a->offset,
             (long long)off);
}

static void expect_alias(T *t, const FcValue *v, const FcValue *of, bool view) {
  const FcBufAssign *a = at(t, v);
  if (a->kind != FC_BUF_ALIAS || a->alias_of != of->id || a->is_view != view)
    fail_msg("v%u: kind %d alias_of v%u view %d, want %s of v%u", v->id, (int)a->kind, a->alias_of, a->is_view,
             view ? "a view" : "in place", of->id);
}

static const int64_t d_1024[] = {1024}, d_256[] = {256}, d_4x256[] = {4, 256}, d_16[] = {16}, d_1x16[] = {1, 16};

/* ---- small graphs with known plans ---------------------------------------------------------------- */

/* x -> exp -> neg -> sin -> cos (output): without in-place the dead block of the first is reused by the
 * third; with it the chain runs in one block. */
static void test_chain(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 1, d_1024);
  FcValue *a = fc_b_unary(&t.b, FC_OP_EXP, x);
  FcValue *b = fc_b_unary(&t.b, FC_OP_NEG, a);
  FcValue *c = fc_b_unary(&t.b, FC_OP_SIN, b);
  FcValue *d = fc_b_unary(&t.b, FC_OP_COS, c);
  outputs(&t, &d, 1);
  plan(&t, false, false);
  expect_ws(&t, a, 0);
  expect_ws(&t, b, 4096);
  expect_ws(&t, c, 0);
  assert_int_equal(at(&t, d)->kind, FC_BUF_OUTPUT);
  assert_int_equal(at(&t, d)->index, 0);
  assert_int_equal(at(&t, x)->kind, FC_BUF_INPUT);
  assert_int_equal(t.p.workspace_bytes, 8192);
  assert_int_equal(t.p.naive_bytes, 3 * 4096);
  assert_int_equal(at(&t, b)->first, 1);
  assert_int_equal(at(&t, b)->last, 2);
  assert_int_equal(at(&t, x)->first, -1);
  assert_int_equal(at(&t, d)->last, 4); /* the return */
  plan(&t, true, true);
  expect_ws(&t, a, 0); /* x is the caller's: exp cannot run in place over it */
  expect_alias(&t, b, a, false);
  expect_alias(&t, c, b, false);
  assert_int_equal(at(&t, c)->root, a->id);
  assert_int_equal(t.p.workspace_bytes, 4096);
  assert_int_equal(t.p.naive_bytes, 3 * 4096);
  assert_int_equal(t.p.n_aliases, 2);
  assert_int_equal(t.p.n_workspace_values, 1);
  t_free(&t);
}

/* a = exp(x); b = sin(a); c = cos(a); d = b + c: a is still needed after sin, so only cos (its last
 * user) may take a's block over. */
static void test_diamond(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 1, d_1024);
  FcValue *a = fc_b_unary(&t.b, FC_OP_EXP, x);
  FcValue *b = fc_b_unary(&t.b, FC_OP_SIN, a);
  FcValue *c = fc_b_unary(&t.b, FC_OP_COS, a);
  FcValue *d = fc_b_binary(&t.b, FC_OP_ADD, b, c);
  outputs(&t, &d, 1);
  plan(&t, false, false);
  expect_ws(&t, a, 0);
  expect_ws(&t, b, 4096);
  expect_ws(&t, c, 8192);
  assert_int_equal(t.p.workspace_bytes, 12288);
  plan(&t, true, true);
  expect_ws(&t, a, 0);
  expect_ws(&t, b, 4096);
  expect_alias(&t, c, a, false);
  assert_int_equal(at(&t, c)->offset, 0);
  assert_int_equal(t.p.workspace_bytes, 8192);
  t_free(&t);
}

/* A long-lived value beside short-lived big ones: the second big block reuses the first's bytes, and a
 * small value reuses a dead small one's. Greedy by size places the 4 KiB blocks first. */
static void test_long_lived(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 1, d_256);
  static const int64_t ax0[] = {0};
  FcValue *a = fc_b_unary(&t.b, FC_OP_EXP, x);                  /* 1 KiB, live [0, 5] */
  FcValue *b = fc_b_broadcast(&t.b, a, 2, d_4x256);             /* 4 KiB, [1, 2] */
  FcValue *c = fc_b_reduce(&t.b, FC_OP_REDUCE_SUM, b, 1, ax0, false); /* 1 KiB, [2, 3] */
  FcValue *f = fc_b_broadcast(&t.b, c, 2, d_4x256);             /* 4 KiB, [3, 4] */
  FcValue *gv = fc_b_reduce(&t.b, FC_OP_REDUCE_MAX, f, 1, ax0, false); /* 1 KiB, [4, 5] */
  FcValue *e = fc_b_binary(&t.b, FC_OP_ADD, a, gv);
  outputs(&t, &e, 1);
  for (int ip = 0; ip < 2; ip++) {
    plan(&t, ip, ip);
    expect_ws(&t, b, 0);
    expect_ws(&t, f, 0);
    expect_ws(&t, a, 4096);
    expect_ws(&t, c, 5120);
    expect_ws(&t, gv, 5120);
    assert_int_equal(at(&t, a)->last, 5);
    assert_int_equal(t.p.workspace_bytes, 6144);
    assert_int_equal(t.p.naive_bytes, 11264);
  }
  t_free(&t);
}

/* Best fit: when e is placed, two gaps lie between blocks live with it — 2 KiB at 0 (under a, dead by
 * then) and 1 KiB at 3072 (under c, dead too): e takes the smaller one, where first fit would take 0.
 *   p0 a = cast(x, f64)  2 KiB [0, 3]     p3 d = pow(c, a)  1 KiB [3, 5]
 *   p1 b = exp(x)        1 KiB [1, 5]     p4 e = cos(x)     1 KiB [4, 6]
 *   p2 c = sin(x)        1 KiB [2, 3]     p5 s = b + d      1 KiB [5, 6]    p6 out = s + e */
static void test_best_fit(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 1, d_256);
  FcValue *a = fc_b_cast(&t.b, x, FC_DT_F64);
  FcValue *b = fc_b_unary(&t.b, FC_OP_EXP, x);
  FcValue *c = fc_b_unary(&t.b, FC_OP_SIN, x);
  FcValue *d = fc_b_binary(&t.b, FC_OP_POW, c, a);
  FcValue *e = fc_b_unary(&t.b, FC_OP_COS, x);
  FcValue *s = fc_b_binary(&t.b, FC_OP_ADD, b, d);
  FcValue *o = fc_b_binary(&t.b, FC_OP_ADD, s, e);
  outputs(&t, &o, 1);
  plan(&t, false, false);
  expect_ws(&t, a, 0);
  expect_ws(&t, b, 2048);
  expect_ws(&t, c, 3072);
  expect_ws(&t, d, 4096);
  expect_ws(&t, e, 3072);
  expect_ws(&t, s, 0);
  assert_int_equal(t.p.workspace_bytes, 5120);
  assert_int_equal(t.p.naive_bytes, 7168);
  t_free(&t);
}

/* Reshape views: of an input (read-only, so the exp after it gets its own block), of a workspace value
 * (the view extends the block's life and may itself be overwritten in place by its last user), and of an
 * output value; a reshape that is itself an output is computed into the output buffer. */
static void test_reshape_views(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 2, d_4x256);
  FcValue *r = fc_b_reshape(&t.b, x, 1, d_1024);      /* view of input 0 */
  FcValue *a = fc_b_unary(&t.b, FC_OP_EXP, r);        /* own block */
  FcValue *v = fc_b_reshape(&t.b, a, 2, d_4x256);     /* view of a */
  FcValue *b = fc_b_unary(&t.b, FC_OP_NEG, v);        /* in place over v, so over a's block */
  FcValue *o0 = fc_b_unary(&t.b, FC_OP_SIN, b);       /* output 0 */
  FcValue *w = fc_b_reshape(&t.b, o0, 1, d_1024);     /* view of output 0 */
  FcValue *c = fc_b_unary(&t.b, FC_OP_COS, w);        /* cannot write over an output: own block */
  FcValue *o1 = fc_b_reshape(&t.b, c, 2, d_4x256);    /* output 1: computed into its buffer */
  FcValue *outs[] = {o0, o1};
  outputs(&t, outs, 2);
  plan(&t, true, true);
  expect_alias(&t, r, x, true);
  assert_int_equal(at(&t, r)->storage, FC_BUF_INPUT);
  assert_int_equal(at(&t, r)->index, 0);
  expect_ws(&t, a, 0);
  expect_alias(&t, v, a, true);
  expect_alias(&t, b, v, false);
  assert_int_equal(at(&t, b)->root, a->id);
  assert_int_equal(at(&t, b)->storage, FC_BUF_WORKSPACE);
  assert_int_equal(at(&t, o0)->kind, FC_BUF_OUTPUT);
  expect_alias(&t, w, o0, true);
  assert_int_equal(at(&t, w)->storage, FC_BUF_OUTPUT);
  assert_int_equal(at(&t, w)->index, 0);
  expect_ws(&t, c, 0); /* a's group is dead by then (its last member, b, dies at sin) */
  assert_int_equal(at(&t, o1)->kind, FC_BUF_OUTPUT);
  assert_int_equal(at(&t, o1)->index, 1);
  assert_int_equal(t.p.workspace_bytes, 4096);
  assert_int_equal(t.p.n_outputs_copied, 0);
  plan(&t, true, false); /* reshapes copy: r is a workspace value, so exp may run in place over it */
  expect_ws(&t, r, 0);
  expect_alias(&t, a, r, false);
  expect_ws(&t, v, 4096); /* the reshape reads a while writing v */
  expect_alias(&t, b, v, false);
  assert_int_equal(t.p.workspace_bytes, 8192);
  plan(&t, false, false);
  assert_int_equal(t.p.n_aliases, 0);
  t_free(&t);
}

/* In place is refused when another operand of the op shares the candidate's bytes under another shape,
 * and allowed when the same value is both operands. */
static void test_in_place_rules(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 1, d_16);
  FcValue *a = fc_b_unary(&t.b, FC_OP_EXP, x);
  FcValue *v = fc_b_reshape(&t.b, a, 2, d_1x16);
  FcValue *s = fc_b_binary(&t.b, FC_OP_ADD, v, a);   /* v and a are one buffer read at different shapes */
  FcValue *q = fc_b_binary(&t.b, FC_OP_MUL, s, s);   /* same value twice: fine */
  FcValue *k = fc_b_cast(&t.b, q, FC_DT_I32);        /* same element size: in place */
  FcValue *h = fc_b_cast(&t.b, k, FC_DT_F16);        /* smaller elements: own block */
  FcValue *eq = fc_b_binary(&t.b, FC_OP_EQUAL, h, h); /* bool result: own block */
  FcValue *n = fc_b_unary(&t.b, FC_OP_NOT, eq);
  outputs(&t, &n, 1);
  plan(&t, true, true);
  expect_ws(&t, a, 0);
  expect_alias(&t, v, a, true);
  expect_ws(&t, s, 64);
  expect_alias(&t, q, s, false);
  expect_alias(&t, k, q, false);
  assert_int_equal(at(&t, h)->kind, FC_BUF_WORKSPACE);
  assert_int_equal(at(&t, eq)->kind, FC_BUF_WORKSPACE);
  assert_int_equal(at(&t, n)->kind, FC_BUF_OUTPUT);
  t_free(&t);
}

/* Outputs that are an input, a constant, or returned twice are copies; the first position returning a
 * computed value gets it directly. */
static void test_output_copies(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 1, d_16);
  static const float cdata[16] = {1, 2, 3};
  FcValue *k = fc_b_const(&t.b, FC_DT_F32, 1, d_16, cdata);
  FcValue *a = fc_b_binary(&t.b, FC_OP_ADD, x, k);
  FcValue *outs[] = {x, k, a, a, x};
  outputs(&t, outs, 5);
  plan(&t, true, true);
  assert_int_equal(t.p.n_outputs_copied, 4);
  assert_int_equal(at(&t, a)->kind, FC_BUF_OUTPUT);
  assert_int_equal(at(&t, a)->index, 2);
  assert_int_equal(at(&t, k)->kind, FC_BUF_CONSTANT);
  assert_int_equal(at(&t, k)->index, 0);
  assert_int_equal(at(&t, x)->kind, FC_BUF_INPUT);
  bool want[] = {true, true, false, true, true};
  for (int i = 0; i < 5; i++) assert_int_equal(fc_memplan_output_is_copy(t.m, &t.p, i), want[i]);
  assert_int_equal(t.p.workspace_bytes, 0);
  assert_int_equal(t.p.naive_bytes, 0);
  t_free(&t);
}

/* Zero-size values take no space and sit at offset 0; the non-empty ones are planned as usual. */
static void expect_part(T *t, const FcValue *v, const FcValue *of, int64_t slice_at) {
  const FcBufAssign *a = at(t, v);
  if (a->kind != FC_BUF_ALIAS || !a->is_part || a->alias_of != of->id || a->at != slice_at)
    fail_msg("v%u: kind %d part %d of v%u at %lld, want a part of v%u at %lld", v->id, (int)a->kind, a->is_part,
             a->alias_of, (long long)a->at, of->id, (long long)slice_at);
}

static const int64_t d_1x4x16[] = {1, 4, 16}, d_1x2x16[] = {1, 2, 16}, d_1x7x16[] = {1, 7, 16};

/* Concat parts: exp(x) and neg(y) are computed into their slices of r (at 0 and 256), the input x is
 * copied by the concat; r's block is busy from exp's definition. Then: the same graph with r returned
 * (the parts land in the output buffer at their offsets), and without parts (three blocks). */
static void test_concat_parts(void **state) {
  (void)state;
  for (int as_output = 0; as_output < 2; as_output++) {
    T t;
    t_init(&t);
    FcValue *x = input(&t, "x", FC_DT_F32, 3, d_1x4x16);
    FcValue *y = input(&t, "y", FC_DT_F32, 3, d_1x2x16);
    FcValue *a = fc_b_unary(&t.b, FC_OP_EXP, x);     /* p0, 256 B */
    FcValue *b = fc_b_unary(&t.b, FC_OP_NEG, y);     /* p1, 128 B */
    FcValue *parts[] = {a, b, x};
    FcValue *r = fc_b_concat(&t.b, parts, 3, 1);     /* p2, 1x10x16: 640 B */
    FcValue *o = as_output ? r : fc_b_unary(&t.b, FC_OP_SIN, r);
    FcValue *u = fc_b_binary(&t.b, FC_OP_ADD, a, a); /* a read after the concat as well */
    FcValue *outs[] = {o, u};
    outputs(&t, outs, 2);
    plan(&t, true, true);
    expect_part(&t, a, r, 0);
    expect_part(&t, b, r, 256);
    assert_false(fc_memplan_is_concat_part(&t.p, r->def, 2)); /* x is the caller's: copied */
    assert_true(fc_memplan_is_concat_part(&t.p, r->def, 0));
    assert_false(fc_memplan_op_is_free(&t.p, r->def));
    if (as_output) {
      assert_int_equal(at(&t, r)->kind, FC_BUF_OUTPUT);
      assert_int_equal(at(&t, b)->storage, FC_BUF_OUTPUT);
      assert_int_equal(at(&t, b)->offset, 256);
      assert_int_equal(t.p.workspace_bytes, 0);
    } else {
      expect_ws(&t, r, 0);
      assert_int_equal(at(&t, b)->offset, 256);
      assert_int_equal(at(&t, r)->first, 2);
    }
    plan_with(&t, true, true, false);
    assert_int_equal(at(&t, a)->kind, FC_BUF_WORKSPACE);
    assert_int_equal(at(&t, b)->kind, FC_BUF_WORKSPACE);
    t_free(&t);
  }
}

/* Where parts are refused: a slice that does not start at a multiple of 64 bytes (7x16 floats, then a
 * part would start at 448 B: fine; 1x3 floats at 12 B: not), an operand used twice by the concat, an
 * operand with a view of it, a concat whose slices are not contiguous (dim 0 is 2), and a concat of
 * parts only, which needs no code. */
static void test_concat_part_rules(void **state) {
  (void)state;
  static const int64_t d_1x3[] = {1, 3}, d_2x16[] = {2, 16};
  T t;
  t_init(&t);
  FcValue *x3 = input(&t, "x3", FC_DT_F32, 2, d_1x3);
  FcValue *x7 = input(&t, "x7", FC_DT_F32, 3, d_1x7x16);
  FcValue *x2 = input(&t, "x2", FC_DT_F32, 2, d_2x16);
  FcValue *e3 = fc_b_unary(&t.b, FC_OP_EXP, x3), *f3 = fc_b_unary(&t.b, FC_OP_SIN, x3);
  FcValue *odd[] = {e3, f3};
  FcValue *r_odd = fc_b_concat(&t.b, odd, 2, 1); /* e3 at 0 is a part; f3 at 12 is not */
  FcValue *e7 = fc_b_unary(&t.b, FC_OP_EXP, x7);
  FcValue *twice[] = {e7, e7};
  FcValue *r_twice = fc_b_concat(&t.b, twice, 2, 1);
  FcValue *e2 = fc_b_unary(&t.b, FC_OP_EXP, x2), *g2 = fc_b_unary(&t.b, FC_OP_COS, x2);
  FcValue *rows[] = {e2, g2};
  FcValue *r_rows = fc_b_concat(&t.b, rows, 2, 1); /* 2x32: each operand is two runs */
  FcValue *h7 = fc_b_unary(&t.b, FC_OP_COS, x7);
  FcValue *h7_flat = fc_b_reshape(&t.b, h7, 1, (const int64_t[]){112});
  FcValue *k7 = fc_b_unary(&t.b, FC_OP_SIN, x7);
  FcValue *viewed[] = {h7, k7};
  FcValue *r_viewed = fc_b_concat(&t.b, viewed, 2, 1); /* h7 has a view: not a part; k7 is */
  FcValue *p7 = fc_b_unary(&t.b, FC_OP_NEG, x7), *q7 = fc_b_unary(&t.b, FC_OP_ABS, x7);
  FcValue *all[] = {p7, q7};
  FcValue *r_all = fc_b_concat(&t.b, all, 2, 1);
  FcValue *s = fc_b_reshape(&t.b, r_all, 1, (const int64_t[]){224});
  FcValue *outs[] = {fc_b_unary(&t.b, FC_OP_NEG, r_odd), fc_b_unary(&t.b, FC_OP_NEG, r_twice),
                     fc_b_unary(&t.b, FC_OP_NEG, r_rows), fc_b_unary(&t.b, FC_OP_NEG, r_viewed),
                     fc_b_unary(&t.b, FC_OP_NEG, s), fc_b_unary(&t.b, FC_OP_NEG, h7_flat)};
  outputs(&t, outs, 6);
  plan(&t, true, true);
  expect_part(&t, e3, r_odd, 0);
  assert_int_equal(at(&t, f3)->kind, FC_BUF_WORKSPACE);
  assert_int_equal(at(&t, e7)->kind, FC_BUF_WORKSPACE);
  assert_int_equal(at(&t, e2)->kind, FC_BUF_WORKSPACE);
  assert_int_equal(at(&t, g2)->kind, FC_BUF_WORKSPACE);
  assert_int_equal(at(&t, h7)->kind, FC_BUF_WORKSPACE);
  expect_part(&t, k7, r_viewed, 448);
  expect_part(&t, p7, r_all, 0);
  expect_part(&t, q7, r_all, 448);
  assert_true(fc_memplan_op_is_free(&t.p, r_all->def));
  assert_false(fc_memplan_op_is_free(&t.p, r_odd->def));
  expect_alias(&t, s, r_all, true);
  t_free(&t);
}

static void test_zero_size(void **state) {
  (void)state;
  T t;
  t_init(&t);
  static const int64_t d_0x4[] = {0, 4};
  FcValue *x = input(&t, "x", FC_DT_F32, 2, d_0x4);
  FcValue *y = input(&t, "y", FC_DT_F32, 1, d_16);
  FcValue *a = fc_b_unary(&t.b, FC_OP_EXP, x);
  FcValue *b = fc_b_unary(&t.b, FC_OP_EXP, y);
  FcValue *c = fc_b_unary(&t.b, FC_OP_SIN, a);
  FcValue *d = fc_b_unary(&t.b, FC_OP_SIN, b);
  FcValue *e = fc_b_binary(&t.b, FC_OP_ADD, b, d);
  FcValue *outs[] = {c, e};
  outputs(&t, outs, 2);
  plan(&t, false, false);
  expect_ws(&t, a, 0);
  assert_int_equal(at(&t, a)->size, 0);
  expect_ws(&t, b, 0);
  expect_ws(&t, d, 64);
  assert_int_equal(t.p.workspace_bytes, 128);
  assert_int_equal(t.p.naive_bytes, 128);
  t_free(&t);
}

/* Both results of a two-result op are planned, including the one nobody uses (the kernel writes it). */
static void test_multi_result(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 1, d_1024);
  FcValue *a = fc_b_unary(&t.b, FC_OP_EXP, x);
  FcAttr attrs[] = {FC_A_INT(AXIS, 0), FC_A_INT(K, 16), FC_A_INT(LARGEST, 1), FC_A_INT(SORTED, 1)};
  FcOp *tk = fc_b_op(&t.b, FC_OP_TOPK, &a, 1, 2, attrs, 4);
  assert_non_null(tk);
  FcValue *s = fc_b_unary(&t.b, FC_OP_NEG, &tk->results[0]);
  outputs(&t, &s, 1);
  plan(&t, true, true);
  const FcBufAssign *vi = at(&t, &tk->results[1]);
  assert_int_equal(vi->kind, FC_BUF_WORKSPACE);
  assert_int_equal(vi->first, 1);
  assert_int_equal(vi->last, 1);
  expect_ws(&t, a, 0);
  expect_ws(&t, &tk->results[1], 4096); /* 16 x i64 = 128 bytes: placed before the 64-byte values */
  expect_ws(&t, &tk->results[0], 4096 + 128);
  t_free(&t);
}

/* Errors: no return; a size or a workspace that overflows int64. */
static void test_errors(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcMemPlan p;
  FcDiag d;
  fc_diag_init(&d);
  input(&t, "x", FC_DT_F32, 1, d_16);
  assert_int_equal(fc_memplan(t.m, NULL, &t.m->arena, &p, &d), FC_ERR_INPUT);
  assert_non_null(strstr(d.msg, "no return"));
  t_free(&t);

  t_init(&t);
  static const int64_t huge[] = {(int64_t)1 << 62, 4};
  FcValue *x = input(&t, "x", FC_DT_F32, 2, huge);
  fc_graph_set_outputs(t.m->graph, &x, NULL, 1);
  fc_diag_init(&d);
  assert_int_equal(fc_memplan(t.m, NULL, &t.m->arena, &p, &d), FC_ERR_LIMIT);
  assert_non_null(strstr(d.msg, "overflows"));
  t_free(&t);

  /* Two 2^62-byte intermediates: each fits in int64, their sum does not. The builder refuses results above
   * the per-tensor limit, so the graph is built small and its types are then widened by hand. */
  t_init(&t);
  static const int64_t small[] = {4}, big[] = {(int64_t)1 << 60};
  x = input(&t, "x", FC_DT_F32, 1, small);
  FcValue *a = fc_b_unary(&t.b, FC_OP_EXP, x);
  FcValue *b = fc_b_unary(&t.b, FC_OP_EXP, x);
  FcValue *f = fc_b_binary(&t.b, FC_OP_ADD, a, b);
  fc_graph_set_outputs(t.m->graph, &f, NULL, 1);
  assert_int_equal(fc_b_status(&t.b), FC_OK);
  FcValue *widen[] = {x, a, b, f};
  for (int i = 0; i < 4; i++) widen[i]->type = fc_type_make(&t.m->arena, FC_DT_F32, 1, big);
  fc_diag_init(&d);
  FcStatus st = fc_memplan(t.m, NULL, &t.m->arena, &p, &d);
  assert_int_equal(st, FC_ERR_LIMIT);
  assert_non_null(strstr(d.msg, "overflows"));
  t_free(&t);
}

/* The debug dump: a header and one line per value. */
static void test_print(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 1, d_1024);
  FcValue *a = fc_b_unary(&t.b, FC_OP_EXP, x);
  FcValue *b = fc_b_unary(&t.b, FC_OP_NEG, a);
  FcValue *c = fc_b_reshape(&t.b, b, 2, d_4x256);
  FcValue *d = fc_b_unary(&t.b, FC_OP_SIN, c);
  outputs(&t, &d, 1);
  plan(&t, true, true);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  fc_memplan_print(f, t.m, &t.p);
  fclose(f);
  int lines = 0;
  for (size_t i = 0; i < len; i++) lines += buf[i] == '\n';
  assert_int_equal(lines, 1 + 5);
  assert_non_null(strstr(buf, "workspace 4096 bytes, naive 12288 bytes"));
  assert_non_null(strstr(buf, "in place of v"));
  assert_non_null(strstr(buf, "view of v"));
  assert_non_null(strstr(buf, "workspace @0  live [0, 1]"));
  assert_non_null(strstr(buf, "output #0"));
  free(buf);
  t_free(&t);
}

/* The checker itself must fail on broken plans: each mutation of a good plan is caught. */
static void expect_rejected(T *t, const char *what, void (*mutate)(T *, FcMemPlan *)) {
  FcMemPlan bad = t->p;
  bad.by_value = malloc(t->p.n_values * sizeof *bad.by_value);
  assert_non_null(bad.by_value);
  memcpy(bad.by_value, t->p.by_value, t->p.n_values * sizeof *bad.by_value);
  mutate(t, &bad);
  char why[512];
  if (check_plan(t->m, &bad, why, sizeof why)) fail_msg("checker accepted a plan with %s", what);
  free(bad.by_value);
}

/* Chain x -> a -> b -> c -> d (output), planned without sharing: a@0, b@4096, c@0. */
static void mut_overlap_live(T *t, FcMemPlan *p) { (void)t, p->by_value[3].offset = 3072; }
static void mut_unaligned(T *t, FcMemPlan *p) { (void)t, p->by_value[3].offset = 8192 + 64 - 8; }
static void mut_beyond(T *t, FcMemPlan *p) { (void)t, p->workspace_bytes = 4096; }
static void mut_over_input(T *t, FcMemPlan *p) {
  (void)t;
  FcBufAssign *a = &p->by_value[1];
  *a = (FcBufAssign){.kind = FC_BUF_ALIAS, .storage = FC_BUF_INPUT, .index = 0, .alias_of = 0, .root = 0,
                     .size = a->size, .first = a->first, .last = a->last};
  p->n_workspace_values--;
  p->n_aliases++;
}
static void mut_in_place_live(T *t, FcMemPlan *p) {
  /* b in place over a while c, which reads b, is placed over a as well */
  (void)t;
  p->by_value[2] = (FcBufAssign){.kind = FC_BUF_ALIAS, .storage = FC_BUF_WORKSPACE, .offset = 0, .index = -1,
                                 .alias_of = 1, .root = 1, .size = 4096, .first = 1, .last = 2};
  p->n_workspace_values--;
  p->n_aliases++;
  p->workspace_bytes = 4096;
}
static void mut_output(T *t, FcMemPlan *p) {
  (void)t;
  p->by_value[4].index = 1;
}
static void mut_naive(T *t, FcMemPlan *p) { (void)t, p->naive_bytes += 64; }
static void mut_range(T *t, FcMemPlan *p) { (void)t, p->by_value[2].last = 1; }

static void test_checker_catches(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 1, d_1024);
  FcValue *a = fc_b_unary(&t.b, FC_OP_EXP, x);
  FcValue *b = fc_b_unary(&t.b, FC_OP_NEG, a);
  FcValue *c = fc_b_unary(&t.b, FC_OP_SIN, b);
  FcValue *d = fc_b_unary(&t.b, FC_OP_COS, c);
  outputs(&t, &d, 1);
  assert_int_equal(x->id, 0);
  assert_int_equal(a->id, 1);
  assert_int_equal(b->id, 2);
  assert_int_equal(c->id, 3);
  assert_int_equal(d->id, 4);
  plan(&t, false, false);
  expect_rejected(&t, "c over the live b", mut_overlap_live);
  expect_rejected(&t, "an unaligned block", mut_unaligned);
  expect_rejected(&t, "a block beyond the workspace", mut_beyond);
  expect_rejected(&t, "a result written over an input", mut_over_input);
  expect_rejected(&t, "an in-place result whose bytes another live value shares", mut_in_place_live);
  expect_rejected(&t, "an output in the wrong buffer", mut_output);
  expect_rejected(&t, "a wrong naive total", mut_naive);
  expect_rejected(&t, "a wrong live range", mut_range);
  t_free(&t);
}

/* Concat parts: a = exp(x) p0 and b = neg(tmp) p2 are parts of r = concat(a, b) p3 (512 B at 0, a at
 * 0, b at 256); tmp = sin(x) p1 lives in a block of its own at 512. */
static void mut_temp_over_part(T *t, FcMemPlan *p) { (void)t, p->by_value[2].offset = 0; }
static void mut_part_slice(T *t, FcMemPlan *p) {
  (void)t;
  p->by_value[3].at = 0;
  p->by_value[3].offset = 0;
}
static void mut_part_of_wrong(T *t, FcMemPlan *p) {
  (void)t;
  p->by_value[1].alias_of = 3; /* a "part" of b */
}

static void test_checker_catches_parts(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 3, d_1x4x16);
  FcValue *a = fc_b_unary(&t.b, FC_OP_EXP, x);
  FcValue *tmp = fc_b_unary(&t.b, FC_OP_SIN, x);
  FcValue *b = fc_b_unary(&t.b, FC_OP_NEG, tmp);
  FcValue *ab[] = {a, b};
  FcValue *r = fc_b_concat(&t.b, ab, 2, 1);
  FcValue *o = fc_b_unary(&t.b, FC_OP_COS, r);
  outputs(&t, &o, 1);
  assert_int_equal(a->id, 1);
  assert_int_equal(tmp->id, 2);
  assert_int_equal(b->id, 3);
  plan(&t, false, false);
  expect_part(&t, a, r, 0);
  expect_part(&t, b, r, 256);
  expect_ws(&t, r, 0);
  expect_ws(&t, tmp, 512);
  expect_rejected(&t, "a temporary written over a live part", mut_temp_over_part);
  expect_rejected(&t, "a part in another part's slice", mut_part_slice);
  expect_rejected(&t, "a part of a value that is no concat", mut_part_of_wrong);
  t_free(&t);
}

/* ---- the ONNX test data and the example model ----------------------------------------------------- */

static const char *const data_root = "/usr/share/libonnx-testdata/data";

static bool is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Binds a graph input that a node needs as a constant from the case's test_data_set_0: by the
 * TensorProto's own name first, then by position (as tests/sweep/import_sweep.c does). */
static FcStatus bind_from_test_data(void *ctx, const char *name, int index, FcArena *arena, FcTensor **out,
                                    FcDiag *diag) {
  const char *dir = ctx;
  char path[PATH_MAX + 64];
  FcImportLimits lim = {FC_DEFAULT_MAX_FILE_BYTES, FC_DEFAULT_MAX_NESTING, FC_DEFAULT_MAX_RANK};
  for (int i = 0; i < 64; i++) {
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, i);
    FILE *f = fopen(path, "rb");
    if (!f) break;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = n > 0 ? malloc((size_t)n) : NULL;
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    Onnx__TensorProto *tp = buf && got == (size_t)n ? onnx__tensor_proto__unpack(NULL, (size_t)n, buf) : NULL;
    free(buf);
    bool match = tp && tp->name && strcmp(tp->name, name) == 0;
    if (tp) onnx__tensor_proto__free_unpacked(tp, NULL);
    if (match) return fc_read_tensor_file(path, &lim, arena, out, diag);
  }
  snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, index);
  if (index >= 0 && is_file(path)) return fc_read_tensor_file(path, &lim, arena, out, diag);
  return FC_ERR_UNSUPPORTED;
}

typedef struct Totals {
  int models, parts;
  int64_t planned, naive, planned_no_reuse_in_place;
} Totals;

/* Plans `m` with every combination of the switches and checks each plan; adds the default plan's totals
 * (and the one without in-place/views) to *tot. */
static void plan_and_check(FcModule *m, const char *label, Totals *tot) {
  for (int mode = 0; mode < 8; mode++) {
    FcMemPlanOptions o = {.in_place = mode & 1, .reshape_view = (mode >> 1) & 1, .concat_parts = (mode >> 2) & 1};
    FcArena arena;
    fc_arena_init(&arena);
    FcMemPlan p;
    FcDiag d;
    fc_diag_init(&d);
    if (fc_memplan(m, &o, &arena, &p, &d) != FC_OK) fail_msg("%s: memplan: %s", label, d.msg);
    char why[512];
    if (!check_plan(m, &p, why, sizeof why)) {
      fc_memplan_print(stderr, m, &p);
      fail_msg("%s (in_place %d, views %d, parts %d): %s", label, o.in_place, o.reshape_view, o.concat_parts, why);
    }
    if (tot && mode == 7) {
      tot->planned += p.workspace_bytes;
      tot->naive += p.naive_bytes;
      for (uint32_t id = 0; id < p.n_values; id++) tot->parts += p.by_value[id].is_part;
    }
    if (tot && mode == 0) tot->planned_no_reuse_in_place += p.workspace_bytes;
    fc_arena_free(&arena);
  }
  if (tot) tot->models++;
}

/* Imports one test case (skipping what the importer does not support), then plans and checks it as
 * imported and after -O2. */
static void sweep_case(const char *dir, const char *label, Totals *tot) {
  char path[2 * PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  FcImportOptions opts;
  fc_import_options_default(&opts);
  opts.bind_fn = bind_from_test_data;
  opts.bind_ctx = (void *)dir;
  FcDiag d;
  fc_diag_init(&d);
  FcModule *m = NULL;
  if (fc_onnx_import(path, &opts, &m, &d) != FC_OK) return; /* the import sweep reports these */
  plan_and_check(m, label, NULL);
  FcPipelineOptions po;
  fc_pipeline_options_default(&po);
  po.target = target;
  po.opt_level = 2;
  if (fc_pipeline_run(m, &po, &d) != FC_OK) fail_msg("%s: -O2: %s", label, d.msg);
  plan_and_check(m, label, tot);
  fc_module_destroy(m);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void sweep_folder(const char *folder, Totals *tot) {
  char dirpath[PATH_MAX];
  snprintf(dirpath, sizeof dirpath, "%s/%s", data_root, folder);
  DIR *dp = opendir(dirpath);
  if (!dp) return;
  char **names = NULL;
  int n = 0, cap = 0;
  for (struct dirent *de; (de = readdir(dp));) {
    if (de->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 256;
      names = realloc(names, (size_t)cap * sizeof *names);
      assert_non_null(names);
    }
    names[n++] = strdup(de->d_name);
  }
  closedir(dp);
  if (n) qsort(names, (size_t)n, sizeof *names, cmp_str);
  for (int i = 0; i < n; i++) {
    char dir[2 * PATH_MAX], label[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", dirpath, names[i]);
    snprintf(label, sizeof label, "%s/%s", folder, names[i]);
    sweep_case(dir, label, tot);
    free(names[i]);
  }
  free(names);
}

static void test_onnx_test_data(void **state) {
  (void)state;
  static const char *const folders[] = {"node", "pytorch-converted", "pytorch-operator"};
  if (!is_file("/usr/share/libonnx-testdata/data/node/test_add/model.onnx")) skip();
  int models = 0;
  for (int i = 0; i < 3; i++) {
    Totals tot = {0};
    sweep_folder(folders[i], &tot);
    print_message("memplan %-18s %4d models: planned %lld bytes, naive %lld bytes (%.1f%%); "
                  "without in-place/views/parts %lld bytes; %d concat parts\n",
                  folders[i], tot.models, (long long)tot.planned, (long long)tot.naive,
                  tot.naive ? 100.0 * (double)tot.planned / (double)tot.naive : 0.0,
                  (long long)tot.planned_no_reuse_in_place, tot.parts);
    assert_true(tot.planned <= tot.naive);
    models += tot.models;
  }
  /* 890 + 82 + 35 import today; the checker must have seen nearly all of them. */
  assert_true(models >= 1000);
}

/* examples/fashion_cnn.onnx, found from this file's path (absolute in meson builds) or
 * FLOWC_SOURCE_ROOT. */
static bool find_example(char *out, size_t cap) {
  const char *env = getenv("FLOWC_SOURCE_ROOT");
  if (env) {
    snprintf(out, cap, "%s/examples/fashion_cnn.onnx", env);
    return is_file(out);
  }
  const char *suffix = "tests/unit/test_memplan.c";
  const char *file = __FILE__;
  size_t flen = strlen(file), slen = strlen(suffix);
  if (flen < slen || strcmp(file + flen - slen, suffix) != 0) return false;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  char root[2 * PATH_MAX];
  if (file[0] == '/' || n <= 0) {
    snprintf(root, sizeof root, "%.*s", (int)(flen - slen), file);
  } else {
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    snprintf(root, sizeof root, "%s/../../%.*s", exe, (int)(flen - slen), file);
  }
  snprintf(out, cap, "%sexamples/fashion_cnn.onnx", root);
  return is_file(out);
}

/* The seed CNN at batch 1 and 64: the plan must reuse memory (a chain of convolutions needs only two
 * activations at a time), and it is what `flowc info` reports. */
static void test_fashion_cnn(void **state) {
  (void)state;
  char path[3 * PATH_MAX];
  if (!find_example(path, sizeof path)) skip();
  static const int64_t batches[] = {1, 64};
  for (int i = 0; i < 2; i++) {
    int64_t dims[] = {batches[i], 1, 28, 28};
    FcInputShape shape = {.name = "image", .rank = 4, .dims = dims};
    FcImportOptions opts;
    fc_import_options_default(&opts);
    opts.shapes = &shape;
    opts.n_shapes = 1;
    FcDiag d;
    fc_diag_init(&d);
    FcModule *m = NULL;
    if (fc_onnx_import(path, &opts, &m, &d) != FC_OK) fail_msg("%s: %s", path, d.msg);
    FcPipelineOptions po;
    fc_pipeline_options_default(&po);
    po.target = target;
    po.opt_level = 2;
    if (fc_pipeline_run(m, &po, &d) != FC_OK) fail_msg("-O2: %s", d.msg);
    plan_and_check(m, "fashion_cnn", NULL);
    FcMemPlan p;
    if (fc_memplan(m, NULL, &m->arena, &p, &d) != FC_OK) fail_msg("memplan: %s", d.msg);
    print_message("memplan fashion_cnn batch %lld: planned %lld bytes, naive %lld bytes\n", (long long)batches[i],
                  (long long)p.workspace_bytes, (long long)p.naive_bytes);
    if (getenv("FLOWC_MEMPLAN_DUMP")) fc_memplan_print(stdout, m, &p);
    /* conv1's output (32x28x28 f32 per image) is the largest activation; the plan must not need much
     * more than two of the largest at once. */
    int64_t conv1 = batches[i] * 32 * 28 * 28 * 4;
    assert_true(p.workspace_bytes < p.naive_bytes);
    assert_true(p.workspace_bytes >= conv1);
    assert_true(p.workspace_bytes <= 2 * conv1 + 4096);
    fc_module_destroy(m);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chain),
      cmocka_unit_test(test_diamond),
      cmocka_unit_test(test_long_lived),
      cmocka_unit_test(test_best_fit),
      cmocka_unit_test(test_reshape_views),
      cmocka_unit_test(test_in_place_rules),
      cmocka_unit_test(test_output_copies),
      cmocka_unit_test(test_concat_parts),
      cmocka_unit_test(test_concat_part_rules),
      cmocka_unit_test(test_zero_size),
      cmocka_unit_test(test_multi_result),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_print),
      cmocka_unit_test(test_checker_catches),
      cmocka_unit_test(test_checker_catches_parts),
      cmocka_unit_test(test_onnx_test_data),
      cmocka_unit_test(test_fashion_cnn),
  };
  return cmocka_run_group_tests(tests, setup_target, teardown_target);
}
