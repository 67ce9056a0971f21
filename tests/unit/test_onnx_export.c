/* test_onnx_export.c — compiler/onnx_export.c on modules built in memory: the model it writes is unpacked
 * again with protobuf-c and read field by field (opset, initializers, nodes, names), the opset rises only
 * for ops that need it, a write error is reported, and the --emit onnx pass list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ir.h"
#include "onnx.h"
#include "test_builder.h"

/* Exports t's module and unpacks what was written (free with onnx__model_proto__free_unpacked). */
static Onnx__ModelProto *export_unpack(T *t) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  FcDiag d;
  fc_diag_init(&d);
  FcStatus st = fc_onnx_export(f, t->m, &d);
  assert_int_equal(fclose(f), 0);
  if (st != FC_OK) fail_msg("export failed: %s", d.msg);
  Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, (const uint8_t *)buf);
  free(buf);
  assert_non_null(m);
  return m;
}

static const Onnx__NodeProto *find_node(const Onnx__GraphProto *g, const char *op_type, int k) {
  for (size_t i = 0; i < g->n_node; i++)
    if (strcmp(g->node[i]->op_type, op_type) == 0 && k-- == 0) return g->node[i];
  fail_msg("no node %s", op_type);
  return NULL;
}

static const Onnx__TensorProto *find_init(const Onnx__GraphProto *g, const char *name) {
  for (size_t i = 0; i < g->n_initializer; i++)
    if (strcmp(g->initializer[i]->name, name) == 0) return g->initializer[i];
  fail_msg("no initializer %s", name);
  return NULL;
}

/* x[2, 3] -> reduce_max over axis 1 (an attribute at opset 17) -> add of a constant; a slice with a
 * negative step whose end lies before element 0. */
static void test_core_ops(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = fc_graph_add_input(t.m->graph, fc_type_make(&t.m->arena, FC_DT_F32, 2, (int64_t[]){2, 3}), "x");
  int64_t axes[1] = {1};
  FcValue *r = fc_b_reduce(&t.b, FC_OP_REDUCE_MAX, x, 1, axes, false);
  float c[2] = {1, 2};
  t.b.loc = "bias";
  FcValue *k = fc_b_const(&t.b, FC_DT_F32, 1, (int64_t[]){2}, c);
  t.b.loc = "n";
  FcValue *y = fc_b_binary(&t.b, FC_OP_ADD, r, k);
  FcValue *s = fc_b_slice(&t.b, x, (int64_t[]){0, 2}, (int64_t[]){2, -1}, (int64_t[]){1, -1});
  FcValue *outs[2] = {y, s};
  outputs(&t, outs, 2);
  Onnx__ModelProto *m = export_unpack(&t);
  assert_int_equal(m->ir_version, 8);
  assert_int_equal(m->n_opset_import, 1);
  assert_int_equal(m->opset_import[0]->version, 17);
  const Onnx__GraphProto *g = m->graph;
  assert_int_equal(g->n_input, 1);
  assert_string_equal(g->input[0]->name, "x");
  assert_int_equal(g->input[0]->type->tensor_type->elem_type, 1);
  const Onnx__NodeProto *rm = find_node(g, "ReduceMax", 0);
  assert_int_equal(rm->n_input, 1);
  assert_int_equal(rm->n_attribute, 2); /* keepdims, axes */
  const Onnx__TensorProto *bias = find_init(g, "bias");
  assert_int_equal(bias->data_type, 1);
  assert_true(bias->has_raw_data && bias->raw_data.len == sizeof c && !memcmp(bias->raw_data.data, c, sizeof c));
  const Onnx__NodeProto *add = find_node(g, "Add", 0);
  assert_string_equal(add->input[0], rm->output[0]);
  assert_string_equal(add->input[1], "bias");
  const Onnx__NodeProto *sl = find_node(g, "Slice", 0);
  assert_int_equal(sl->n_input, 5);
  const Onnx__TensorProto *ends = find_init(g, sl->input[2]);
  assert_int_equal(ends->raw_data.len, 2 * sizeof(int64_t));
  int64_t e[2];
  memcpy(e, ends->raw_data.data, sizeof e);
  assert_int_equal(e[0], 2);
  assert_int_equal(e[1], -4); /* -(dim + 1): ONNX clamps it back to -1, before element 0 */
  /* Node names are unique, the outputs unnamed by the model get generated names. */
  assert_string_not_equal(rm->name, add->name);
  assert_int_equal(g->n_output, 2);
  assert_string_equal(g->output[0]->name, add->output[0]);
  onnx__model_proto__free_unpacked(m, NULL);
  fc_module_destroy(t.m);
}

/* bitwise_not has no ONNX op before opset 18; an average pool with dilations none before 19. */
static void test_opset_raised(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = fc_graph_add_input(t.m->graph, fc_type_make(&t.m->arena, FC_DT_I32, 1, (int64_t[]){4}), "x");
  FcValue *y = fc_b_unary(&t.b, FC_OP_BITWISE_NOT, x);
  outputs(&t, &y, 1);
  Onnx__ModelProto *m = export_unpack(&t);
  assert_int_equal(m->opset_import[0]->version, 18);
  assert_int_equal(m->ir_version, 8);
  find_node(m->graph, "BitwiseNot", 0);
  onnx__model_proto__free_unpacked(m, NULL);
  fc_module_destroy(t.m);

  t_init(&t);
  x = fc_graph_add_input(t.m->graph, fc_type_make(&t.m->arena, FC_DT_F32, 4, (int64_t[]){1, 1, 5, 5}), "x");
  int64_t two[2] = {2, 2}, one[2] = {1, 1}, zero[4] = {0, 0, 0, 0};
  FcAttr attrs[] = {FC_A_INT(CEIL_MODE, 0), FC_A_INT(COUNT_INCLUDE_PAD, 0), FC_A_INTS(DILATIONS, two, 2),
                    FC_A_INTS(KERNEL_SHAPE, two, 2), FC_A_INTS(PADS, zero, 4), FC_A_INTS(STRIDES, one, 2)};
  y = fc_b_op1(&t.b, FC_OP_AVG_POOL, &x, 1, attrs, 6);
  outputs(&t, &y, 1);
  m = export_unpack(&t);
  assert_int_equal(m->opset_import[0]->version, 19);
  assert_int_equal(m->ir_version, 9);
  const Onnx__NodeProto *p = find_node(m->graph, "AveragePool", 0);
  bool dil = false;
  for (size_t i = 0; i < p->n_attribute; i++) dil |= strcmp(p->attribute[i]->name, "dilations") == 0;
  assert_true(dil);
  onnx__model_proto__free_unpacked(m, NULL);
  fc_module_destroy(t.m);
}

/* A stream that cannot be written: FC_ERR_IO with a message. */
static void test_write_error(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = fc_graph_add_input(t.m->graph, fc_type_make(&t.m->arena, FC_DT_F32, 1, (int64_t[]){4}), "x");
  FcValue *y = fc_b_unary(&t.b, FC_OP_RELU, x);
  outputs(&t, &y, 1);
  FILE *f = fopen("/dev/null", "r");
  assert_non_null(f);
  FcDiag d;
  fc_diag_init(&d);
  assert_int_equal(fc_onnx_export(f, t.m, &d), FC_ERR_IO);
  assert_string_equal(d.msg, "cannot write the ONNX model");
  fclose(f);
  fc_module_destroy(t.m);
}

static void test_passes(void **state) {
  (void)state;
  char buf[128];
  assert_true(fc_onnx_export_passes("shapes,fold_batchnorm,lower_quant,canonicalize,fuse_epilogue,layout,fold,"
                                    "fuse_elementwise,fuse_casts,dce", buf, sizeof buf));
  assert_string_equal(buf, "shapes,fold_batchnorm,canonicalize,fold,dce");
  assert_true(fc_onnx_export_passes("", buf, sizeof buf));
  assert_string_equal(buf, "");
  assert_true(fc_onnx_export_passes("layout", buf, sizeof buf));
  assert_string_equal(buf, "");
  assert_false(fc_onnx_export_passes("canonicalize,fold", buf, 10)); /* does not fit */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_core_ops),
      cmocka_unit_test(test_opset_raised),
      cmocka_unit_test(test_write_error),
      cmocka_unit_test(test_passes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
