/* test_region.c — region ops (flow.loop, flow.if): the builder API, result inference from the yields
 * and scan_len, the graph walk over nested regions, and the contract checks of the inference hooks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ir.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

typedef struct Loop {
  FcModule *m;
  FcOp *loop;
  FcDiag d;
} Loop;

/* h[1x4] carried, w[4x4] captured: body h2 = h*w; yields cond, h2, scan h2 (scan_len 5). */
static Loop build_loop(int n_scan, bool with_scan_len) {
  Loop l = {0};
  l.m = fc_module_create("r");
  fc_diag_init(&l.d);
  FcBuilder b;
  fc_builder_init(&b, l.m->graph, &l.d);
  FcValue *trip = fc_graph_add_input(l.m->graph, (FcType){FC_DT_I64, 0, NULL}, "trip");
  FcValue *h0 = fc_graph_add_input(l.m->graph, (FcType){FC_DT_F32, 2, DIMS(1, 4)}, "h0");
  FcValue *w = fc_graph_add_input(l.m->graph, (FcType){FC_DT_F32, 2, DIMS(4, 4)}, "w");
  FcValue *cond = fc_b_scalar(&b, FC_DT_BOOL, 1);
  FcValue *ops[4] = {trip, cond, h0, w};
  FcAttr at[2] = {FC_A_INT(CARRIED, 1), FC_A_INT(SCAN_LEN, 5)};
  b.loc = "loop";
  l.loop = fc_b_region_op(&b, FC_OP_LOOP, ops, 4, 1 + n_scan, at, with_scan_len ? 2 : 1);
  assert_non_null(l.loop);
  FcGraph *body = l.loop->regions[0];
  assert_ptr_equal(body->parent, l.loop);
  assert_int_equal(body->n_inputs, 4);
  assert_int_equal(body->inputs[0]->type.dtype, FC_DT_I64);
  assert_int_equal(body->inputs[1]->type.dtype, FC_DT_BOOL);
  FcBuilder bb;
  fc_builder_init(&bb, body, &l.d);
  FcValue *h2 = fc_b_op1(&bb, FC_OP_MATMUL, (FcValue *[]){body->inputs[2], body->inputs[3]}, 2, NULL, 0);
  assert_non_null(h2);
  FcValue *ys[3] = {body->inputs[1], h2, h2};
  fc_graph_set_yield(body, ys, 2 + n_scan);
  fc_b_region_op_finish(&b, l.loop);
  if (fc_b_status(&b) == FC_OK) fc_graph_set_outputs(l.m->graph, (FcValue *[]){&l.loop->results[0], &l.loop->results[1]}, NULL, l.loop->n_results);
  return l;
}

static void test_loop_infer(void **state) {
  (void)state;
  Loop l = build_loop(1, true);
  assert_int_equal(l.d.status, FC_OK);
  assert_int_equal(l.loop->results[0].type.rank, 2);
  assert_int_equal(l.loop->results[1].type.rank, 3);
  assert_int_equal(l.loop->results[1].type.dims[0], 5);
  assert_int_equal(l.loop->results[1].type.dims[2], 4);
  assert_int_equal(fc_loop_num_carried(l.loop), 1);
  assert_int_equal(fc_loop_num_scan(l.loop), 1);
  assert_int_equal(fc_verify(l.m, &l.d), FC_OK);
  FcGraph *gs[4];
  assert_int_equal(fc_module_graphs(l.m, gs, 4), 2);
  assert_ptr_equal(gs[0], l.m->graph);
  assert_ptr_equal(gs[1], l.loop->regions[0]);
  assert_ptr_equal(fc_graph_return(gs[1])->kind, FC_OP_YIELD);
  fc_module_destroy(l.m);
}

static void test_loop_missing_scan_len(void **state) {
  (void)state;
  Loop l = build_loop(1, false);
  assert_int_equal(l.d.status, FC_ERR_INPUT);
  assert_non_null(strstr(l.d.msg, "loop: missing attribute 'scan_len'"));
  fc_module_destroy(l.m);
}

static void test_loop_without_scan(void **state) {
  (void)state;
  Loop l = build_loop(0, false);
  assert_int_equal(l.d.status, FC_OK);
  assert_int_equal(l.loop->n_results, 1);
  assert_int_equal(fc_verify(l.m, &l.d), FC_OK);
  fc_module_destroy(l.m);
}

/* A module with inputs c: i1 and x: 3xf32 and an if(c, x) of one result whose regions are still empty. */
typedef struct If {
  FcModule *m;
  FcDiag d;
  FcBuilder b;
  FcOp *op;
} If;

static void build_if(If *t) {
  t->m = fc_module_create("r");
  fc_diag_init(&t->d);
  fc_builder_init(&t->b, t->m->graph, &t->d);
  FcValue *c = fc_graph_add_input(t->m->graph, (FcType){FC_DT_BOOL, 0, NULL}, "c");
  FcValue *x = fc_graph_add_input(t->m->graph, (FcType){FC_DT_F32, 1, DIMS(3)}, "x");
  t->op = fc_b_region_op(&t->b, FC_OP_IF, (FcValue *[]){c, x}, 2, 1, NULL, 0);
  assert_non_null(t->op);
  assert_int_equal(t->op->n_regions, 2);
}

/* if(c, x): then yields x+x, else yields x. */
static void test_if_infer(void **state) {
  (void)state;
  If t;
  build_if(&t);
  FcOp *op = t.op;
  FcBuilder bt;
  fc_builder_init(&bt, op->regions[0], &t.d);
  FcValue *v = fc_b_binary(&bt, FC_OP_ADD, op->regions[0]->inputs[0], op->regions[0]->inputs[0]);
  fc_graph_set_yield(op->regions[0], &v, 1);
  fc_graph_set_yield(op->regions[1], &op->regions[1]->inputs[0], 1);
  assert_non_null(fc_b_region_op_finish(&t.b, op));
  assert_int_equal(op->results[0].type.dims[0], 3);
  fc_graph_set_outputs(t.m->graph, (FcValue *[]){&op->results[0]}, NULL, 1);
  assert_int_equal(fc_verify(t.m, &t.d), FC_OK);
  fc_module_destroy(t.m);
}

/* An else branch yielding fewer values than the then branch. */
static void test_if_mismatch(void **state) {
  (void)state;
  If t;
  build_if(&t);
  fc_graph_set_yield(t.op->regions[0], &t.op->regions[0]->inputs[0], 1);
  fc_graph_set_yield(t.op->regions[1], &t.op->regions[1]->inputs[0], 0);
  assert_null(fc_b_region_op_finish(&t.b, t.op));
  assert_non_null(strstr(t.d.msg, "if: has 1 results, but its regions yield 1 (then) and 0 (else) values"));
  fc_module_destroy(t.m);
}

/* A pass that wires an outer value into a body breaks isolation: the verifier names the user and the loop. */
static void test_verify_isolation(void **state) {
  (void)state;
  Loop l = build_loop(1, true);
  assert_int_equal(l.d.status, FC_OK);
  FcOp *mm = l.loop->regions[0]->first;
  assert_int_equal(mm->kind, FC_OP_MATMUL);
  fc_op_set_operand(mm, 1, l.m->graph->inputs[2]); /* w itself instead of the block argument */
  assert_int_equal(fc_verify(l.m, &l.d), FC_ERR_INTERNAL);
  assert_non_null(strstr(l.d.msg, "node '' (matmul): operand 1 is defined outside the region of 'loop' (flow.loop)"));
  fc_module_destroy(l.m);
}

/* A yield inside the function, and a region that lost its yield. */
static void test_verify_terminators(void **state) {
  (void)state;
  Loop l = build_loop(1, true);
  FcOp *y = l.loop->regions[0]->last;
  assert_int_equal(y->kind, FC_OP_YIELD);
  y->kind = FC_OP_RETURN;
  assert_int_equal(fc_verify(l.m, &l.d), FC_ERR_INTERNAL);
  assert_non_null(strstr(l.d.msg, "(return): func.return inside a region"));
  fc_module_destroy(l.m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_loop_infer),       cmocka_unit_test(test_loop_missing_scan_len),
      cmocka_unit_test(test_loop_without_scan), cmocka_unit_test(test_if_infer),
      cmocka_unit_test(test_if_mismatch),      cmocka_unit_test(test_verify_isolation),
      cmocka_unit_test(test_verify_terminators),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
