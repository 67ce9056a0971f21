/* test_annot.c — the C API of quantised element types (types.c) and annotations (annot.c): what the
 * quantisation and SBP passes will call. Text round trips are in tests/lit/ir; here the types and lists
 * are built by hand, checked, compared, printed, broken the way a buggy pass could break them (the
 * verifier names the op), and carried through fc_rw_replace_op by policy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "ir.h"
#include "rewrite.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

static const double scales3[3] = {0.1, 0.2, 0.3};
static const int64_t zps3[3] = {0, -1, 5};

static FcQuant per_axis(void) {
  return (FcQuant){.storage = FC_DT_I8, .expressed = FC_DT_F32, .qmin = -127, .qmax = 127, .axis = 1, .n = 3,
                   .scales = scales3, .zero_points = zps3};
}

static void expect_problem(const FcQuant *q, const FcType *t, const char *want) {
  char why[512] = "";
  assert_true(fc_quant_problem(q, t, why, sizeof why));
  if (!strstr(why, want)) fail_msg("message \"%s\" lacks \"%s\"", why, want);
}

static void test_quant_type(void **state) {
  (void)state;
  FcArena a;
  fc_arena_init(&a);
  FcQuant q = per_axis();
  FcType t = fc_type_make_quant(&a, &q, 2, DIMS(2, 3));
  assert_int_equal(t.dtype, FC_DT_I8);
  assert_true(fc_type_is_quant(&t));
  assert_ptr_not_equal(t.quant, &q); /* copied into the arena */
  char why[256];
  assert_false(fc_quant_problem(t.quant, &t, why, sizeof why));
  int64_t nbytes;
  assert_true(fc_type_nbytes(&t, &nbytes));
  assert_int_equal(nbytes, 6); /* the storage integers */

  char buf[256];
  assert_string_equal(fc_type_str(&t, buf, sizeof buf),
                      "tensor<2x3x!quant.uniform<i8<-127:127>:f32:1, {1.000000e-01,2.000000e-01:-1,3.000000e-01:5}>>");
  /* A short buffer truncates and stays terminated. */
  assert_string_equal(fc_type_str(&t, buf, 12), "tensor<2x3x");

  /* Equality looks at the parameters, not at where they live; the storage view drops them. */
  FcType u = fc_type_copy(&a, &t);
  assert_ptr_not_equal(u.quant, t.quant);
  assert_true(fc_type_equal(&t, &u));
  FcType plain = fc_type_storage(&t);
  assert_false(fc_type_equal(&t, &plain));
  assert_null(plain.quant);
  FcQuant q2 = q;
  double s2[3] = {0.1, 0.2, 0.30000000000000004};
  q2.scales = s2;
  FcType w = fc_type_make_quant(&a, &q2, 2, DIMS(2, 3));
  assert_false(fc_type_equal(&t, &w));

  /* Per tensor, unsigned storage prints as u8 and a zero point of 0 is left out. */
  static const double s1[1] = {0.5};
  static const int64_t z0[1] = {0};
  FcQuant pt = {.storage = FC_DT_U8, .expressed = FC_DT_F16, .qmin = 0, .qmax = 255, .axis = -1, .n = 1,
                .scales = s1, .zero_points = z0};
  FcType v = fc_type_make_quant(&a, &pt, 1, DIMS(4));
  assert_string_equal(fc_type_str(&v, buf, sizeof buf), "tensor<4x!quant.uniform<u8:f16, 5.000000e-01>>");
  fc_arena_free(&a);
}

static void test_quant_problems(void **state) {
  (void)state;
  FcType t = {FC_DT_I8, 2, DIMS(2, 3)};
  FcQuant q = per_axis();
  q.axis = 2;
  expect_problem(&q, &t, "quantised axis 2 is out of range for rank 2");
  q = per_axis();
  q.axis = 0;
  expect_problem(&q, &t, "3 scales for axis 0 of size 2");
  q = per_axis();
  q.qmin = -200;
  expect_problem(&q, &t, "storage range [-200, 127]");
  q = per_axis();
  int64_t zp[3] = {0, 0, 128};
  q.zero_points = zp;
  expect_problem(&q, &t, "zero point 128 is outside the storage range [-127, 127]");
  q = per_axis();
  double sc[3] = {0.1, 0.0 / 0.0, 0.3};
  q.scales = sc;
  expect_problem(&q, &t, "must be positive, finite");
  q = per_axis();
  q.storage = FC_DT_I64;
  expect_problem(&q, &t, "storage type i64");
  q = per_axis();
  q.expressed = FC_DT_I32;
  expect_problem(&q, &t, "expressed type i32");
  q = per_axis();
  q.axis = -1;
  expect_problem(&q, NULL, "3 scales without a quantised axis");
  FcType f = {FC_DT_U8, 2, DIMS(2, 3)};
  q = per_axis();
  expect_problem(&q, &f, "element type ui8 differs from the storage type i8");
  /* The element type alone (no tensor) skips the shape checks. */
  q = per_axis();
  q.axis = 7;
  char why[128];
  assert_false(fc_quant_problem(&q, NULL, why, sizeof why));
}

static void test_annot_lists(void **state) {
  (void)state;
  FcModule *m = fc_module_create("a");
  FcArena *a = &m->arena;
  FcAnnots l = {0};
  const char *sbp[2] = {"S(0)", "B"};
  FcAnnotValue items[2] = {FC_AV_STRING(sbp[0]), FC_AV_STRING(sbp[1])};
  FcAnnotValue list = FC_AV_LIST(items, 2);
  fc_annots_set(a, &l, "zz.last", &FC_AV_I64(3));
  fc_annots_set(a, &l, "flow.sbp", &list);
  int64_t devs[2] = {0, 1};
  fc_annots_set(a, &l, "flow.placement", &FC_AV_I64S(devs, 2));
  /* Sorted by name whatever the order of insertion; values are copies. */
  assert_int_equal(l.n, 3);
  assert_string_equal(l.v[0].name, "flow.placement");
  assert_string_equal(l.v[1].name, "flow.sbp");
  assert_string_equal(l.v[2].name, "zz.last");
  devs[0] = 9;
  items[0].s = "B";
  const FcAnnotValue *p = fc_annots_get(&l, "flow.placement");
  assert_non_null(p);
  assert_int_equal(p->ints.v[0], 0);
  assert_string_equal(fc_annots_get(&l, "flow.sbp")->array.v[0].s, "S(0)");
  assert_null(fc_annots_get(&l, "flow.quant"));

  /* Replacing keeps one entry; equality is by name and value. */
  FcAnnots l2 = {0};
  fc_annots_set(a, &l2, "zz.last", &FC_AV_I64(3));
  fc_annots_set(a, &l2, "flow.placement", &FC_AV_I64S(DIMS(0, 1), 2));
  items[0].s = "S(0)";
  fc_annots_set(a, &l2, "flow.sbp", &list);
  assert_true(fc_annots_equal(&l, &l2));
  fc_annots_set(a, &l2, "zz.last", &FC_AV_I64(4));
  assert_int_equal(l2.n, 3);
  assert_false(fc_annots_equal(&l, &l2));
  assert_true(fc_annots_remove(&l2, "zz.last"));
  assert_false(fc_annots_remove(&l2, "zz.last"));
  assert_int_equal(l2.n, 2);
  assert_true(fc_annots_subset(&l2, &l));
  assert_false(fc_annots_subset(&l, &l2));
  assert_true(fc_annots_subset(&(FcAnnots){0}, &l2));

  /* The known table: checks against a subject type, and the rewrite policy. */
  FcType t = {FC_DT_F32, 2, DIMS(4, 8)};
  char why[256];
  assert_true(fc_annot_check("flow.sbp", &list, &t, why, sizeof why));
  FcAnnotValue bad_items[1] = {FC_AV_STRING("S(2)")};
  FcAnnotValue bad = FC_AV_LIST(bad_items, 1);
  assert_false(fc_annot_check("flow.sbp", &bad, &t, why, sizeof why));
  assert_string_equal(why, "flow.sbp: \"S(2)\" splits axis 2 of a rank-2 tensor");
  assert_true(fc_annot_check("flow.sbp", &bad, NULL, why, sizeof why)); /* no subject: no shape check */
  assert_false(fc_annot_check("flow.sbq", &list, &t, why, sizeof why));
  assert_string_equal(why, "unknown annotation 'flow.sbq'");
  assert_true(fc_annot_check("other.sbq", &bad, &t, why, sizeof why));
  assert_false(fc_annot_name_valid("flow", 4));
  assert_false(fc_annot_name_valid("flow.", 5));
  assert_false(fc_annot_name_valid(".x", 2));
  assert_true(fc_annot_name_valid("my_dialect.a.b", 14));
  assert_int_equal(fc_annot_policy(fc_annot_name(FC_ANNOT_SBP)), FC_ANNOT_KEEP);
  assert_int_equal(fc_annot_policy("other.sbp"), FC_ANNOT_DROP);
  fc_module_destroy(m);
}

/* flow.calib_range (calibrate.c writes it, quantize_static reads it): two finite f64, lo <= hi, on a float value
 * or a quantised one expressing floats (a calibrated conv after fold_qdq, as --emit ir writes it). */
static void test_calib_range(void **state) {
  (void)state;
  FcType f = {FC_DT_F32, 1, DIMS(4)}, i = {FC_DT_I32, 1, DIMS(4)};
  char why[256];
  double ok[2] = {-1.5, 3}, point[2] = {2, 2}, reversed[2] = {3, -1}, nan[2] = {0, NAN}, three[3] = {0, 1, 2};
  FcAnnotValue v = {.kind = FC_AV_DENSE, .dtype = FC_DT_F64, .floats = {ok, 2}};
  assert_true(fc_annot_check("flow.calib_range", &v, &f, why, sizeof why));
  v.floats.v = point;
  assert_true(fc_annot_check("flow.calib_range", &v, &f, why, sizeof why));
  v.floats.v = reversed;
  assert_false(fc_annot_check("flow.calib_range", &v, &f, why, sizeof why));
  assert_string_equal(why, "flow.calib_range: [3, -1] is not a finite range");
  v.floats.v = nan;
  assert_false(fc_annot_check("flow.calib_range", &v, &f, why, sizeof why));
  v.floats.v = three;
  v.floats.n = 3;
  assert_false(fc_annot_check("flow.calib_range", &v, &f, why, sizeof why));
  assert_string_equal(why, "flow.calib_range must be array<f64: lo, hi>: the calibrated range of result 0 (or of the "
                           "graph input), lo <= hi, finite");
  v.floats.v = ok;
  v.floats.n = 2;
  assert_false(fc_annot_check("flow.calib_range", &v, &i, why, sizeof why));
  assert_string_equal(why, "flow.calib_range: the subject's element type i32 is not a float type");
  double scale = 0.5;
  int64_t zp = 3;
  FcQuant q = {.storage = FC_DT_U8, .expressed = FC_DT_F32, .qmin = 0, .qmax = 255, .axis = -1, .n = 1,
               .scales = &scale, .zero_points = &zp};
  FcType u = {FC_DT_U8, 1, DIMS(4), .quant = &q};
  assert_true(fc_annot_check("flow.calib_range", &v, &u, why, sizeof why));
  FcAnnotValue ints = FC_AV_I64S(((int64_t[]){0, 1}), 2);
  assert_false(fc_annot_check("flow.calib_range", &ints, &f, why, sizeof why));
  assert_int_equal(fc_annot_policy("flow.calib_range"), FC_ANNOT_KEEP);
}

/* x -> neg -> neg -> return, the inner neg annotated. */
static FcModule *neg_neg(FcOp **inner, FcOp **outer) {
  FcModule *m = fc_module_create("n");
  FcDiag d;
  fc_diag_init(&d);
  FcBuilder b;
  fc_builder_init(&b, m->graph, &d);
  FcValue *x = fc_graph_add_input(m->graph, (FcType){FC_DT_F32, 2, DIMS(2, 3)}, "x");
  b.loc = "n1";
  FcValue *n1 = fc_b_unary(&b, FC_OP_NEG, x);
  b.loc = "n2";
  FcValue *n2 = fc_b_unary(&b, FC_OP_NEG, n1);
  fc_graph_set_outputs(m->graph, &n2, (const char *const[]){"y"}, 1);
  assert_int_equal(fc_b_status(&b), FC_OK);
  *inner = n1->def;
  *outer = n2->def;
  return m;
}

static void test_verifier_names_the_op(void **state) {
  (void)state;
  FcOp *n1, *n2;
  FcModule *m = neg_neg(&n1, &n2);
  FcDiag d;
  fc_diag_init(&d);
  fc_op_set_annot(n1, "flow.placement", &FC_AV_I64S(DIMS(0, -3), 2));
  assert_int_equal(fc_verify(m, &d), FC_ERR_INTERNAL);
  assert_string_equal(d.msg, "node 'n1' (neg): flow.placement: device id -3 is negative");
  fc_op_set_annot(n1, "flow.placement", &FC_AV_I64S(DIMS(0, 3), 2));
  fc_diag_init(&d);
  assert_int_equal(fc_verify(m, &d), FC_OK);

  /* A graph input's annotations are checked against the input's type. */
  fc_input_set_annot(m->graph, m->graph->inputs[0], "flow.sbp",
                     &FC_AV_LIST(((FcAnnotValue[]){FC_AV_STRING("S(5)")}), 1));
  assert_int_equal(fc_verify(m, &d), FC_ERR_INTERNAL);
  assert_string_equal(d.msg, "graph @main: input 0 ('x'): flow.sbp: \"S(5)\" splits axis 5 of a rank-2 tensor");
  fc_module_destroy(m);

  /* A quantised type broken after it was made is reported against its op. */
  m = neg_neg(&n1, &n2);
  FcQuant q = per_axis();
  n2->results[0].type = fc_type_make_quant(&m->arena, &q, 2, DIMS(2, 3));
  ((FcQuant *)n2->results[0].type.quant)->qmax = 300;
  fc_diag_init(&d);
  assert_int_equal(fc_verify(m, &d), FC_ERR_INTERNAL);
  assert_string_equal(d.msg, "node 'n2' (neg): result 0 has an invalid quantised type: storage range [-127, 300] is "
                             "not a non-empty part of i8's [-128, 127]");
  fc_module_destroy(m);
}

static void test_builder_refuses_quantised_operands(void **state) {
  (void)state;
  FcModule *m = fc_module_create("q");
  FcQuant q = per_axis();
  FcValue *x = fc_graph_add_input(m->graph, fc_type_make_quant(&m->arena, &q, 2, DIMS(2, 3)), "x");
  assert_true(fc_type_is_quant(&x->type)); /* fc_graph_add_input keeps the parameters */
  FcDiag d;
  fc_diag_init(&d);
  FcBuilder b;
  fc_builder_init(&b, m->graph, &d);
  assert_null(fc_b_unary(&b, FC_OP_RELU, x));
  assert_int_equal(fc_b_status(&b), FC_ERR_INPUT);
  assert_non_null(strstr(d.msg, "relu: operand 0 has the quantised type tensor<2x3x!quant.uniform<i8<-127:127>"));
  fc_module_destroy(m);
}

/* fc_rw_replace_op moves the flow annotations (policy keep) to the replacement and drops the others. */
static void test_replace_keeps_by_policy(void **state) {
  (void)state;
  FcOp *n1, *n2;
  FcModule *m = neg_neg(&n1, &n2);
  fc_op_set_annot(n2, "flow.placement", &FC_AV_I64S(DIMS(4), 1));
  fc_op_set_annot(n2, "other.note", &FC_AV_STRING("drop me"));
  fc_op_set_annot(n1, "flow.sbp", &FC_AV_LIST(((FcAnnotValue[]){FC_AV_STRING("B")}), 1));
  fc_op_set_annot(n2, "flow.sbp", &FC_AV_LIST(((FcAnnotValue[]){FC_AV_STRING("S(1)")}), 1));
  /* Replace n2 by n1's value, as a rewrite would with a value equal to n2's. */
  FcOpStack s;
  fc_op_stack_init(&s, &m->arena);
  FcValue *with = &n1->results[0];
  fc_rw_replace_op(n2, &with, &s);
  assert_true(n2->erased);
  const FcAnnotValue *p = fc_op_annot(n1, "flow.placement");
  assert_non_null(p);
  assert_int_equal(p->ints.v[0], 4);
  assert_null(fc_op_annot(n1, "other.note"));
  /* An annotation the replacement has already stays its own. */
  assert_string_equal(fc_op_annot(n1, "flow.sbp")->array.v[0].s, "B");
  FcDiag d;
  fc_diag_init(&d);
  assert_int_equal(fc_verify(m, &d), FC_OK);
  fc_module_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_quant_type),
      cmocka_unit_test(test_quant_problems),
      cmocka_unit_test(test_annot_lists),
      cmocka_unit_test(test_calib_range),
      cmocka_unit_test(test_verifier_names_the_op),
      cmocka_unit_test(test_builder_refuses_quantised_operands),
      cmocka_unit_test(test_replace_keeps_by_policy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
