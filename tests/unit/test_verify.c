/* test_verify.c — fc_verify: every rule fires on a module broken by hand.
 *
 * Each test builds the same small valid module with an FcBuilder (it verifies), breaks one thing the
 * way a buggy pass could (counts, attributes, types, SSA order, use lists, the RETURN, limits), and
 * checks the status and the one-line "node '<loc>' (<mnemonic>): <what>" message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ir.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

typedef struct Base {
  FcModule *m;
  FcValue *x;               /* input 2x3 f32 */
  FcOp *cst, *add, *soft, *topk, *relu, *ret;
} Base;

static FcOp *def_op(FcValue *v) { return v ? v->def : NULL; }

/* x:2x3 → add(x, c) → softmax(axis 1) → topk:2 → relu(values) → return relu, indices. */
static Base build(void) {
  Base b = {0};
  b.m = fc_module_create("v");
  FcDiag d;
  fc_diag_init(&d);
  FcBuilder bl;
  fc_builder_init(&bl, b.m->graph, &d);
  FcType tx = {FC_DT_F32, 2, DIMS(2, 3)};
  b.x = fc_graph_add_input(b.m->graph, tx, "x");
  static const float c[3] = {1, 2, 3};
  bl.loc = "c";
  b.cst = def_op(fc_b_const(&bl, FC_DT_F32, 1, DIMS(3), c));
  bl.loc = "add";
  FcValue *a = fc_b_binary(&bl, FC_OP_ADD, b.x, &b.cst->results[0]);
  b.add = def_op(a);
  bl.loc = "soft";
  FcAttr ax = FC_A_INT(AXIS, 1);
  FcValue *s = fc_b_op1(&bl, FC_OP_SOFTMAX, &a, 1, &ax, 1);
  b.soft = def_op(s);
  bl.loc = "topk";
  FcAttr tk[] = {FC_A_INT(AXIS, 1), FC_A_INT(K, 2), FC_A_INT(LARGEST, 1), FC_A_INT(SORTED, 1)};
  b.topk = fc_b_op(&bl, FC_OP_TOPK, &s, 1, 2, tk, 4);
  bl.loc = "relu";
  b.relu = def_op(fc_b_unary(&bl, FC_OP_RELU, b.topk ? &b.topk->results[0] : NULL));
  if (fc_b_status(&bl) != FC_OK) fail_msg("building: %s", d.msg);
  FcValue *outs[] = {&b.relu->results[0], &b.topk->results[1]};
  const char *names[] = {"y", "i"};
  b.ret = fc_graph_set_outputs(b.m->graph, outs, names, 2);
  b.ret->loc = "ret";
  return b;
}

static void expect_verify(Base *b, const char *want) {
  FcDiag d;
  fc_diag_init(&d);
  FcStatus st = fc_verify(b->m, &d);
  if (st == FC_OK) fail_msg("module verified, expected \"%s\"", want);
  assert_int_equal(st, FC_ERR_INTERNAL);
  assert_int_equal(d.status, FC_ERR_INTERNAL);
  if (!strstr(d.msg, want)) fail_msg("message \"%s\" lacks \"%s\"", d.msg, want);
  assert_null(strchr(d.msg, '\n'));
  fc_module_destroy(b->m);
}

static void test_valid(void **state) {
  (void)state;
  Base b = build();
  FcDiag d;
  fc_diag_init(&d);
  if (fc_verify(b.m, &d) != FC_OK) fail_msg("%s", d.msg);
  /* A dead op erased properly keeps the module valid. */
  FcBuilder bl;
  fc_builder_init(&bl, b.m->graph, &d);
  bl.before = b.ret;
  FcValue *dead = fc_b_unary(&bl, FC_OP_NEG, b.x);
  assert_non_null(dead);
  assert_int_equal(fc_verify(b.m, &d), FC_OK);
  fc_op_erase(dead->def);
  assert_int_equal(fc_verify(b.m, &d), FC_OK);
  fc_module_destroy(b.m);
}

static void test_counts(void **state) {
  (void)state;
  Base b = build();
  FcValue *two[] = {b.x, b.x};
  FcOp *op = fc_op_create(b.m->graph, FC_OP_RELU, two, 2, 1);
  op->results[0].type = b.x->type;
  op->loc = "bad";
  fc_op_insert_before(b.ret, op);
  expect_verify(&b, "node 'bad' (relu): has 2 operands, expected 1");

  b = build();
  op = fc_op_create(b.m->graph, FC_OP_RELU, &b.x, 1, 2);
  op->loc = "bad";
  fc_op_insert_before(b.ret, op);
  expect_verify(&b, "node 'bad' (relu): has 2 results, expected 1");
}

static void test_attributes(void **state) {
  (void)state;
  Base b = build();
  b.soft->n_attrs = 0;
  expect_verify(&b, "node 'soft' (softmax): missing attribute 'axis'");

  b = build();
  b.soft->attrs[0].kind = FC_AK_FLOAT;
  expect_verify(&b, "node 'soft' (softmax): attribute 'axis' is float, expected int");

  b = build();
  fc_op_set_attr(b.relu, FC_A_INT(AXIS, 0));
  expect_verify(&b, "node 'relu' (relu): unknown attribute 'axis'");

  b = build();
  b.soft->attrs[0].name = FC_ATTR_COUNT_INCLUDE_PAD;
  expect_verify(&b, "node 'soft' (softmax): unknown attribute 'count_include_pad'");

  b = build();
  b.topk->attrs[1] = b.topk->attrs[0];
  expect_verify(&b, "node 'topk' (topk): duplicate attribute 'axis'");

  b = build();
  b.soft->attrs[0].name = (FcAttrName)9999;
  expect_verify(&b, "node 'soft' (softmax): has an attribute with an invalid name");

  b = build();
  FcTensor *t = (FcTensor *)fc_op_attr(b.cst, FC_ATTR_VALUE)->tensor;
  t->nbytes = 4;
  expect_verify(&b, "node 'c' (constant): attribute 'value' records 4 bytes for a tensor of 12 bytes");
}

static void test_types(void **state) {
  (void)state;
  Base b = build();
  b.soft->results[0].type.dtype = FC_DT_F64;
  expect_verify(&b, "node 'soft' (softmax): result 0 has type tensor<2x3xf64> but operands imply tensor<2x3xf32>");

  b = build();
  static const int64_t wrong[] = {2, 1};
  b.topk->results[1].type.dims = wrong;
  expect_verify(&b, "node 'topk' (topk): result 1 has type tensor<2x1xi64> but operands imply tensor<2x2xi64>");

  /* The constant's result must match its value. */
  b = build();
  b.cst->results[0].type.dtype = FC_DT_I32;
  expect_verify(&b, "node 'c' (constant): result 0 has type tensor<3xi32>");
}

static void test_limits(void **state) {
  (void)state;
  static const int64_t dims17[17] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  Base b = build();
  b.relu->results[0].type.rank = 17;
  b.relu->results[0].type.dims = dims17;
  expect_verify(&b, "node 'relu' (relu): result 0 has a type with a rank above the limit of 16");

  b = build();
  static const int64_t huge[] = {(int64_t)1 << 40, (int64_t)1 << 40};
  b.x->type.dims = huge;
  expect_verify(&b, "graph @main: input 0 ('x') has a type with an element count or byte size that overflows");

  b = build();
  static const int64_t big_bytes[] = {(int64_t)1 << 31, (int64_t)1 << 31}; /* 2^62 elements, 2^64 bytes */
  b.relu->results[0].type.dims = big_bytes;
  expect_verify(&b, "node 'relu' (relu): result 0 has a type with an element count or byte size that overflows");

  b = build();
  static const int64_t neg[] = {2, -3};
  b.x->type.dims = neg;
  expect_verify(&b, "input 0 ('x') has a type with a negative dimension");

  b = build();
  b.relu->results[0].type.dtype = (FcDtype)77;
  expect_verify(&b, "node 'relu' (relu): result 0 has a type with an invalid element type");

  /* Just at the limit is fine. */
  b = build();
  FcType t16 = {FC_DT_F32, 16, dims17};
  FcValue *in16 = fc_graph_add_input(b.m->graph, t16, "r16");
  (void)in16;
  FcDiag d;
  fc_diag_init(&d);
  if (fc_verify(b.m, &d) != FC_OK) fail_msg("%s", d.msg);
  fc_module_destroy(b.m);
}

static void test_ssa_order(void **state) {
  (void)state;
  /* An op using a result defined later in the list. */
  Base b = build();
  FcOp *early = fc_op_create(b.m->graph, FC_OP_NEG, (FcValue *[]){&b.relu->results[0]}, 1, 1);
  early->results[0].type = b.relu->results[0].type;
  early->loc = "early";
  fc_op_insert_before(b.m->graph->first, early);
  expect_verify(&b, "node 'early' (neg): operand 0 is not defined before its use");

  /* A use of a value whose op was erased. */
  b = build();
  FcDiag d;
  fc_diag_init(&d);
  FcBuilder bl;
  fc_builder_init(&bl, b.m->graph, &d);
  bl.before = b.ret;
  bl.loc = "e";
  FcValue *e = fc_b_unary(&bl, FC_OP_NEG, b.x);
  bl.loc = "user";
  FcValue *u = fc_b_unary(&bl, FC_OP_ABS, e);
  fc_op_set_operand(u->def, 0, b.x);
  fc_op_erase(e->def);
  fc_op_set_operand(u->def, 0, e);
  expect_verify(&b, "node 'user' (abs): operand 0 is a result of an erased op");

  /* A value from an op never inserted. */
  b = build();
  FcOp *loose = fc_op_create(b.m->graph, FC_OP_NEG, &b.x, 1, 1);
  loose->results[0].type = b.x->type;
  fc_op_set_operand(b.relu, 0, &loose->results[0]);
  b.relu->results[0].type = b.x->type;
  expect_verify(&b, "node 'relu' (relu): operand 0 is not defined before its use");

  /* A missing operand. */
  b = build();
  fc_op_set_operand(b.add, 1, NULL);
  expect_verify(&b, "node 'add' (add): operand 1 is missing");
}

static void test_use_lists(void **state) {
  (void)state;
  /* An operand missing from its value's list. */
  Base b = build();
  b.soft->results[0].first_use = NULL;
  expect_verify(&b, "node 'topk' (topk): operand 0 is missing from its value's use list");

  /* A list entry whose slot names another value. */
  b = build();
  b.add->operands[1].value = b.x; /* not relinked: x's list lacks it, c's list still has it */
  expect_verify(&b, "node 'c' (constant): the use list of result 0 holds a stale or foreign use");

  /* A cycle. */
  b = build();
  FcUse *u = b.x->first_use;
  u->next_use = u;
  expect_verify(&b, "graph @main: the use list of input 0 holds a stale or foreign use");

  /* A broken prev link. */
  b = build();
  FcUse *fake_prev = &b.relu->operands[0];
  b.cst->results[0].first_use->prev_use = fake_prev;
  expect_verify(&b, "node 'c' (constant): the use list of result 0 holds a stale or foreign use");

  /* A use by an op that was erased but is still listed. */
  b = build();
  FcOp *ghost = fc_op_create(b.m->graph, FC_OP_NEG, &b.x, 1, 1); /* links into x's list, never inserted */
  ghost->results[0].type = b.x->type;
  expect_verify(&b, "graph @main: the use list of input 0 holds a stale or foreign use");
}

static void test_return(void **state) {
  (void)state;
  /* No RETURN. */
  FcModule *m = fc_module_create("r");
  FcType t = {FC_DT_F32, 1, DIMS(2)};
  fc_graph_add_input(m->graph, t, "x");
  Base b = {.m = m};
  expect_verify(&b, "graph @main: no func.return at the end");

  /* An op after the RETURN. */
  b = build();
  FcOp *late = fc_op_create(b.m->graph, FC_OP_NEG, &b.x, 1, 1);
  late->results[0].type = b.x->type;
  fc_op_insert_after(b.ret, late);
  expect_verify(&b, "node 'ret' (return): func.return is not the last op");

  /* Two RETURNs. */
  b = build();
  FcOp *r2 = fc_op_create(b.m->graph, FC_OP_RETURN, NULL, 0, 0);
  fc_op_insert_before(b.ret, r2);
  expect_verify(&b, "node '' (return): func.return is not the last op");

  /* Output names out of step with the outputs. */
  b = build();
  b.m->graph->n_output_names = 1;
  expect_verify(&b, "graph @main: 2 outputs but 1 output names");
}

static void test_list_structure(void **state) {
  (void)state;
  Base b = build();
  b.soft->erased = true;
  expect_verify(&b, "node 'soft' (softmax): is erased but still in the op list");

  b = build();
  b.soft->prev = NULL;
  expect_verify(&b, "node 'soft' (softmax): its prev link does not point at the previous op");

  b = build();
  b.relu->next = b.add; /* a cycle in the op list */
  expect_verify(&b, "node 'add' (add): its prev link does not point at the previous op");

  b = build();
  b.m->graph->last = b.relu;
  expect_verify(&b, "graph @main: its last-op link is wrong");

  b = build();
  b.soft->results[0].id = b.add->results[0].id;
  expect_verify(&b, "node 'soft' (softmax): result 0 has an id that is out of range or reused");

  b = build();
  b.m->graph->inputs[0]->index = 3;
  expect_verify(&b, "graph @main: input 0 is not a proper graph input");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid),     cmocka_unit_test(test_counts),    cmocka_unit_test(test_attributes),
      cmocka_unit_test(test_types),     cmocka_unit_test(test_limits),    cmocka_unit_test(test_ssa_order),
      cmocka_unit_test(test_use_lists), cmocka_unit_test(test_return),    cmocka_unit_test(test_list_structure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
