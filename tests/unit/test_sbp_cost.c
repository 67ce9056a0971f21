/* test_sbp_cost.c — unit tests for the SBP cost model's terms (passes/sbp_cost.c): each constant of
 * FcSbpCosts adds exactly its own term to the ops or collectives it prices, and nothing to the others.
 *
 * A module built in memory (x · W with W constant, exp of the product, the product times its own transpose)
 * is planned over one part (every value whole) and its ops priced under a base set of constants and under
 * the same set with one constant changed; the differences are checked against the term computed by hand.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "sbp_cost.h"

#include "test_builder.h"

enum { ROWS = 64, DEPTH = 256, COLS = 512 };

static const FcSbpCosts base = {.gemm_gflops = 100, .mem_gbps = 50, .mem_cold_gbps = 20, .op_us = 0.5,
                                .link_latency_us = 1, .link_gbps = 10, .mem_cap_bytes = (int64_t)1 << 40};

typedef struct Model {
  T t;
  FcArena a;
  FcSbpPlan p;
  int weighted, exp, runtime; /* op indices in the plan: x · W, exp, y · yT */
} Model;

static int index_of(const FcSbpPlan *p, FcOpKind kind, int nth) {
  for (int i = 0; i < p->n_ops; i++)
    if (p->ops[i]->kind == kind && nth-- == 0) return i;
  fail_msg("no op of kind %d", (int)kind);
  return -1;
}

static void build(Model *md) {
  T *t = &md->t;
  t_init(t);
  FcValue *x = fc_graph_add_input(t->m->graph, fc_type_make(&t->m->arena, FC_DT_F32, 2, (int64_t[]){ROWS, DEPTH}), "x");
  float *w = calloc((size_t)DEPTH * COLS, sizeof *w);
  assert_non_null(w);
  FcValue *wv = fc_b_const(&t->b, FC_DT_F32, 2, (int64_t[]){DEPTH, COLS}, w);
  free(w);
  FcValue *y = fc_b_binary(&t->b, FC_OP_MATMUL, x, wv);
  FcValue *e = fc_b_unary(&t->b, FC_OP_EXP, y);
  FcValue *yt = fc_b_transpose(&t->b, y, (int64_t[]){1, 0});
  FcValue *r = fc_b_binary(&t->b, FC_OP_MATMUL, y, yt);
  outputs(t, (FcValue *[]){e, r}, 2);
  fc_arena_init(&md->a);
  FcDiag d;
  fc_diag_init(&d);
  assert_int_equal(fc_sbp_plan_init_group(&md->p, t->m, 1, &md->a, &d), FC_OK);
  md->weighted = index_of(&md->p, FC_OP_MATMUL, 0);
  md->runtime = index_of(&md->p, FC_OP_MATMUL, 1);
  md->exp = index_of(&md->p, FC_OP_EXP, 0);
}

static void release(Model *md) {
  fc_arena_free(&md->a);
  fc_module_destroy(md->t.m);
}

static double op_s(const FcSbpCosts *k, const Model *md, int idx) {
  return fc_sbp_op_seconds(k, &md->p, idx, md->p.need[idx], md->p.out[idx], NULL);
}

/* The change of op idx's price when `changed` replaces `base`. */
static double delta(const Model *md, const FcSbpCosts *changed, int idx) {
  return op_s(changed, md, idx) - op_s(&base, md, idx);
}

static void assert_near(double got, double want) {
  if (fabs(got - want) > 1e-12 + 1e-9 * fabs(want)) fail_msg("got %.12g s, want %.12g s", got, want);
}

/* A constant right operand is streamed once per run at weight_gbps: 4·DEPTH·COLS bytes, on that matmul only. */
static void test_weight_stream(void **state) {
  (void)state;
  Model md;
  build(&md);
  FcSbpCosts k = base;
  k.weight_gbps = 8;
  assert_near(delta(&md, &k, md.weighted), 4.0 * DEPTH * COLS / 8e9);
  assert_near(delta(&md, &k, md.runtime), 0);
  assert_near(delta(&md, &k, md.exp), 0);
  release(&md);
}

/* A right operand computed at run time is packed at pack_gbps: y's transpose, 4·COLS·ROWS bytes. */
static void test_runtime_pack(void **state) {
  (void)state;
  Model md;
  build(&md);
  FcSbpCosts k = base;
  k.pack_gbps = 5;
  assert_near(delta(&md, &k, md.runtime), 4.0 * COLS * ROWS / 5e9);
  assert_near(delta(&md, &k, md.weighted), 0);
  release(&md);
}

/* exp pays transcendental_ns per element of its result; the matmuls do not. */
static void test_transcendental(void **state) {
  (void)state;
  Model md;
  build(&md);
  FcSbpCosts k = base;
  k.transcendental_ns = 1.5;
  assert_near(delta(&md, &k, md.exp), (double)ROWS * COLS * 1.5e-9);
  assert_near(delta(&md, &k, md.weighted), 0);
  assert_near(delta(&md, &k, md.runtime), 0);
  release(&md);
}

/* Ranks beyond the cores: every collective waits crowd_sync_us more, a local slice (no exchange) does not,
 * and ranks that each have a core wait nothing. */
static void test_crowd_sync(void **state) {
  (void)state;
  FcArena a;
  fc_arena_init(&a);
  FcType t = fc_type_make(&a, FC_DT_F32, 2, (int64_t[]){ROWS, COLS});
  FcSbpCosts crowded = base, synced;
  crowded.cores = 2;
  synced = crowded;
  synced.crowd_sync_us = 40;
  FcSbp s0 = {.kind = FC_SBP_S, .dim = 0}, b = FC_SBP_BCAST;
  assert_near(fc_sbp_box_seconds(&synced, 4, &t, s0, b, NULL) - fc_sbp_box_seconds(&crowded, 4, &t, s0, b, NULL), 40e-6);
  assert_near(fc_sbp_box_seconds(&synced, 4, &t, b, s0, NULL) - fc_sbp_box_seconds(&crowded, 4, &t, b, s0, NULL), 0);
  assert_near(fc_sbp_box_seconds(&synced, 2, &t, s0, b, NULL) - fc_sbp_box_seconds(&crowded, 2, &t, s0, b, NULL), 0);
  fc_arena_free(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_weight_stream),
      cmocka_unit_test(test_runtime_pack),
      cmocka_unit_test(test_transcendental),
      cmocka_unit_test(test_crowd_sync),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
