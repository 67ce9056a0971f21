/* test_cli.c — unit tests for the CLI's library part (compiler/load.c, info.c, dot.c).
 *
 * The lit tests in tests/lit/cli drive these through `flowc`; here the pieces that are hard to reach
 * from the command line are checked directly: format sniffing on odd prefixes, `// -----` splitting
 * (chunk boundaries and the blank-line padding that keeps line numbers), MAC counting including
 * overflow, and the exact text of `info` and `--emit dot` on a graph built in memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli.h"
#include "test_builder.h"

#define SNIFF(lit) fc_looks_like_ir_text((lit), sizeof(lit) - 1)

static void test_sniff(void **state) {
  (void)state;
  assert_true(SNIFF("module {\n}"));
  assert_true(SNIFF("module"));
  assert_true(SNIFF("\n\n  \t// RUN: flowc %s\n// CHECK: x\nmodule @m {"));
  assert_true(SNIFF("\"builtin.module\"() ({"));
  assert_true(SNIFF("\xEF\xBB\xBFmodule {"));
  assert_true(SNIFF("// comment at the end without newline\nmodule{"));
  assert_false(SNIFF(""));
  assert_false(SNIFF("// only a comment"));
  assert_false(SNIFF("modules {"));
  assert_false(SNIFF("module.x {"));
  assert_false(SNIFF("/ module"));
  assert_false(SNIFF("func.func @main() {"));
  assert_false(SNIFF("\x08\x07\x12\x04test"));     /* the start of an ONNX ModelProto */
  assert_false(SNIFF("\"builtin.modulex\"() ({"));
}

static void test_split(void **state) {
  (void)state;
  FcChunk *c;
  static const char one[] = "module {}\n";
  int n = fc_split_input(one, sizeof one - 1, &c);
  assert_int_equal(n, 1);
  assert_string_equal(c[0].text, one);
  assert_int_equal(c[0].first_line, 1);
  fc_chunks_free(c, n);

  /* Line 3 and line 6 separate; the second part starts on line 4, the third on line 7. "// -----//"
   * (an IR dump header) and an indented marker with trailing blanks are handled as MLIR does. */
  static const char three[] = "a\nb\n// -----\nc\n// -----// IR Dump\n  // -----  \r\nd";
  n = fc_split_input(three, sizeof three - 1, &c);
  assert_int_equal(n, 3);
  assert_int_equal(c[0].first_line, 1);
  assert_string_equal(c[0].text, "a\nb\n");
  assert_int_equal(c[1].first_line, 4);
  assert_string_equal(c[1].text, "\n\n\nc\n// -----// IR Dump\n");
  assert_int_equal(c[1].len, strlen(c[1].text));
  assert_int_equal(c[2].first_line, 7);
  assert_string_equal(c[2].text, "\n\n\n\n\n\nd");
  fc_chunks_free(c, n);

  /* A trailing separator leaves an empty last part; a leading one an empty first part. */
  static const char edges[] = "// -----\nx\n// -----\n";
  n = fc_split_input(edges, sizeof edges - 1, &c);
  assert_int_equal(n, 3);
  assert_string_equal(c[0].text, "");
  assert_string_equal(c[1].text, "\nx\n");
  assert_string_equal(c[2].text, "\n\n\n");
  fc_chunks_free(c, n);
}

/* ---- a small module built in memory --------------------------------------------------------------- */

static FcValue *input(T *t, const char *name, int rank, const int64_t *dims) {
  return fc_graph_add_input(t->m->graph, fc_type_make(&t->m->arena, FC_DT_F32, rank, dims), name);
}

/* x[1,2,5,5] -conv(w[4,2,3,3], b[4], pads 1)-> [1,4,5,5] -reshape-> [4,25] -matmul(m[25,3])-> [4,3] */
static void build_net(T *t) {
  FcValue *x = input(t, "x", 4, (const int64_t[]){1, 2, 5, 5});
  static const float w[4 * 2 * 3 * 3], bias[4], mat[25 * 3];
  t->b.loc = "w";
  FcValue *wv = fc_b_const(&t->b, FC_DT_F32, 4, (const int64_t[]){4, 2, 3, 3}, w);
  t->b.loc = "b";
  FcValue *bv = fc_b_const(&t->b, FC_DT_F32, 1, (const int64_t[]){4}, bias);
  t->b.loc = "m";
  FcValue *mv = fc_b_const(&t->b, FC_DT_F32, 2, (const int64_t[]){25, 3}, mat);
  t->b.loc = "conv \"1\"";
  FcAttr attrs[] = {
      FC_A_INTS(DILATIONS, ((const int64_t[]){1, 1}), 2), FC_A_INT(GROUP, 1),
      FC_A_INTS(PADS, ((const int64_t[]){1, 1, 1, 1}), 4), FC_A_INTS(STRIDES, ((const int64_t[]){1, 1}), 2)};
  FcValue *c = fc_b_op1(&t->b, FC_OP_CONV, (FcValue *[]){x, wv, bv}, 3, attrs, 4);
  t->b.loc = "flat";
  FcValue *r = fc_b_reshape(&t->b, c, 2, (const int64_t[]){4, 25});
  t->b.loc = "mm";
  FcValue *y = fc_b_binary(&t->b, FC_OP_MATMUL, r, mv);
  assert_int_equal(fc_b_status(&t->b), FC_OK);
  fc_graph_set_outputs(t->m->graph, &y, (const char *[]){"y"}, 1);
  assert_int_equal(fc_verify(t->m, &t->d), FC_OK);
}

static FcOp *find_op(FcModule *m, FcOpKind k) {
  fc_graph_for_each_op(m->graph, op) if (op->kind == k) return op;
  return NULL;
}

static void test_macs(void **state) {
  (void)state;
  T t;
  t_init(&t);
  build_net(&t);
  int64_t macs;
  /* conv: 1*4*5*5 outputs x 2*3*3 products. */
  assert_true(fc_op_macs(find_op(t.m, FC_OP_CONV), &macs));
  assert_int_equal(macs, 100 * 18);
  /* matmul: 4*3 outputs x 25 products. */
  assert_true(fc_op_macs(find_op(t.m, FC_OP_MATMUL), &macs));
  assert_int_equal(macs, 12 * 25);
  assert_true(fc_op_macs(find_op(t.m, FC_OP_RESHAPE), &macs));
  assert_int_equal(macs, 0);

  /* A matmul whose output count times K does not fit int64 (types made directly, as no importer or
   * builder would accept them) reports overflow instead of wrapping. */
  FcValue *a = input(&t, "a", 2, (const int64_t[]){(int64_t)1 << 31, (int64_t)1 << 31});
  FcValue *bb = input(&t, "bb", 2, (const int64_t[]){(int64_t)1 << 31, (int64_t)1 << 31});
  FcOp *op = fc_op_create(t.m->graph, FC_OP_MATMUL, (FcValue *[]){a, bb}, 2, 1);
  op->results[0].type = a->type;
  assert_false(fc_op_macs(op, &macs));
  fc_module_destroy(t.m);
}

/* Runs `print` into a memory stream and returns the text (malloc'd). */
static char *capture(FcStatus (*print)(FILE *, FcModule *, FcDiag *), FcModule *m) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  FcDiag d;
  fc_diag_init(&d);
  assert_int_equal(print(f, m, &d), FC_OK);
  fclose(f);
  return buf;
}

static FcStatus info_print(FILE *f, FcModule *m, FcDiag *d) { return fc_info_print(f, m, "net.mlir", FC_FORMAT_TEXT, NULL, d); }

static void test_info(void **state) {
  (void)state;
  T t;
  t_init(&t);
  build_net(&t);
  char *s = capture(info_print, t.m);
  /* 72 + 4 + 75 = 151 parameters of 4 bytes; (1800 + 300) MACs x 2 = 4200 FLOPs. The conv result
   * (1x4x5x5 f32, 400 bytes, 448 aligned) is the one workspace block: the reshape views it, while the
   * naive sum counts both. */
  assert_string_equal(s, "model       net.mlir\n"
                         "format      ir text\n"
                         "inputs      1\n"
                         "  x         tensor<1x2x5x5xf32>\n"
                         "outputs     1\n"
                         "  y         tensor<4x3xf32>\n"
                         "ops         6\n"
                         "  constant  3\n"
                         "  conv      1\n"
                         "  matmul    1\n"
                         "  reshape   1\n"
                         "parameters  151 in 3 constants, 604 bytes\n"
                         "flops       4200 (4.20 K; 2 per multiply-accumulate of conv, conv_transpose and matmul)\n"
                         "quantised   none of 2 conv/matmul ops (a float model: build with --quantize to quantise it)\n"
                         "workspace   448 bytes planned after -O2 (448 B); 896 bytes if every intermediate had its own\n");
  free(s);
  fc_module_destroy(t.m);
}

static void test_dot(void **state) {
  (void)state;
  T t;
  t_init(&t);
  build_net(&t);
  char *s = capture(fc_dot_print, t.m);
  FcOp *conv = find_op(t.m, FC_OP_CONV);
  char want[256];
  snprintf(want, sizeof want, "  op%u [label=\"conv\\nconv \\\"1\\\"\"];\n", conv->id);
  assert_non_null(strstr(s, want));
  snprintf(want, sizeof want, "  in0 -> op%u [label=\"1x2x5x5 f32\"];\n", conv->id);
  assert_non_null(strstr(s, want));
  snprintf(want, sizeof want, "  op%u -> out0 [label=\"4x3 f32\"];\n", find_op(t.m, FC_OP_MATMUL)->id);
  assert_non_null(strstr(s, want));
  assert_non_null(strstr(s, "[label=\"constant\\nw\", shape=box, style=filled, fillcolor=\"#dddddd\""));
  assert_non_null(strstr(s, "out0 [label=\"y\", shape=ellipse"));
  assert_int_equal(strncmp(s, "digraph \"main\" {\n", 17), 0);
  assert_string_equal(s + strlen(s) - 2, "}\n");
  free(s);
  fc_module_destroy(t.m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sniff), cmocka_unit_test(test_split), cmocka_unit_test(test_macs),
      cmocka_unit_test(test_info),  cmocka_unit_test(test_dot),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
