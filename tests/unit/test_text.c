/* test_text.c — the MLIR text form: fc_print_module and fc_parse_module.
 *
 * Modules built with an FcBuilder cover every attribute kind, every dtype of constant (inline, splat,
 * 0-d, zero-size, elided, and as weight blobs), multi-result ops and awkward names; each must print,
 * parse back, verify, and print again byte-identically, with and without weights. Error cases check
 * the status and the one-line "<source>:<line>:<col>: <what>" message. A robustness loop parses every
 * truncation of a complete text, and the text with bytes replaced at every position: the parser must
 * fail cleanly or return a module that verifies and round-trips.
 *
 * With FLOWC_TEXT_DUMP=<dir> in the environment, every printed text is also written there as
 * <dir>/text_<n>.mlir, for tests/mlir/check_mlir_opt.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ew_program.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))

static int dump_count;
static bool dump_off; /* the robustness loop's many prints are not dumped */

static void dump_text(const char *text) {
  const char *dir = getenv("FLOWC_TEXT_DUMP");
  if (dump_off || !dir || !*dir) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/text_%03d.mlir", dir, dump_count++);
  FILE *f = fopen(path, "w");
  if (!f) fail_msg("cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

static char *print_text(FcModule *m, bool weights, int64_t inline_limit) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  FcPrintOptions o = {.weights = weights, .inline_limit = inline_limit};
  FcDiag d;
  fc_diag_init(&d);
  assert_int_equal(fc_print_module(f, m, &o, &d), FC_OK);
  fclose(f);
  dump_text(buf);
  return buf;
}

/* Parses `text` (copied into an exact-size buffer so over-reads show under ASan). */
static FcStatus parse_text(const char *text, size_t len, FcModule **out, FcDiag *d) {
  char *copy = malloc(len ? len : 1);
  memcpy(copy, text, len);
  fc_diag_init(d);
  FcStatus st = fc_parse_module(copy, len, "t.mlir", out, d);
  free(copy);
  return st;
}

static FcModule *parse_ok(const char *text) {
  FcModule *m;
  FcDiag d;
  if (parse_text(text, strlen(text), &m, &d) != FC_OK) fail_msg("parse failed: %s\n--- text ---\n%s", d.msg, text);
  FcDiag v;
  fc_diag_init(&v);
  if (fc_verify(m, &v) != FC_OK) fail_msg("parsed module does not verify: %s", v.msg);
  return m;
}

/* print → parse → verify → print must reproduce the text; returns the parsed module. */
static FcModule *roundtrip(FcModule *m, bool weights, int64_t limit) {
  char *t1 = print_text(m, weights, limit);
  FcModule *m2 = parse_ok(t1);
  char *t2 = print_text(m2, weights, limit);
  assert_string_equal(t1, t2);
  free(t1);
  free(t2);
  return m2;
}

static const FcValue *nth_op_result(FcModule *m, int n) {
  int i = 0;
  fc_graph_for_each_op(m->graph, op) if (i++ == n) return &op->results[0];
  fail_msg("no op %d", n);
  return NULL;
}

/* ---- round trips ------------------------------------------------------------------------------------ */

/* A module with every attribute kind, multi-result ops, 0-d and empty tensors, odd names. */
static FcModule *build_all_kinds(void) {
  FcModule *m = fc_module_create("all");
  FcDiag d;
  fc_diag_init(&d);
  FcBuilder b;
  fc_builder_init(&b, m->graph, &d);
  FcType tx = {FC_DT_F32, 4, DIMS(1, 1, 2, 2)};
  FcValue *x = fc_graph_add_input(m->graph, tx, "in\"put\\ \n\t\x01 é");
  FcType ts = {FC_DT_F32, 0, NULL};
  FcValue *s = fc_graph_add_input(m->graph, ts, "");
  FcType te = {FC_DT_I64, 2, DIMS(0, 3)};
  FcValue *e = fc_graph_add_input(m->graph, te, NULL);

  b.loc = "/resize \"q\" \\ \n";
  const float scales[] = {1, 1, 2, 2};
  FcAttr ra[] = {
      FC_A_STR(COORDINATE_TRANSFORMATION_MODE, "half_pixel"),
      FC_A_FLOAT(CUBIC_COEFF_A, -0.75f),
      FC_A_INT(EXCLUDE_OUTSIDE, 0),
      FC_A_FLOAT(EXTRAPOLATION_VALUE, __builtin_nanf("")),
      FC_A_STR(MODE, "linear"),
      FC_A_STR(NEAREST_MODE, "floor"),
      FC_A_FLOATS(ROI, NULL, 0),
      FC_A_FLOATS(SCALES, scales, 4),
      FC_A_INTS(SIZES, DIMS(1, 1, 4, 4), 4),
  };
  FcValue *r = fc_b_op1(&b, FC_OP_RESIZE, &x, 1, ra, 9);
  b.loc = "cast";
  FcValue *c = fc_b_cast(&b, r, FC_DT_F16);
  b.loc = NULL;
  FcValue *c2 = fc_b_cast(&b, c, FC_DT_BF16);
  FcAttr rnd[] = {FC_A_TYPE(DTYPE, FC_DT_F32), FC_A_FLOAT(HIGH, 1.0f), FC_A_FLOAT(LOW, -1.0f),
                  FC_A_FLOAT(SEED, 3.0e-45f), FC_A_INTS(SHAPE, DIMS(2, 0), 2)};
  b.loc = "";
  FcValue *rv = fc_b_op1(&b, FC_OP_RANDOM_UNIFORM, NULL, 0, rnd, 5);
  b.loc = "topk";
  FcAttr tk[] = {FC_A_INT(AXIS, 3), FC_A_INT(K, 2), FC_A_INT(LARGEST, 1), FC_A_INT(SORTED, 1)};
  FcOp *top = fc_b_op(&b, FC_OP_TOPK, &r, 1, 2, tk, 4);
  FcAttr mp[] = {FC_A_INT(CEIL_MODE, 0),         FC_A_INTS(DILATIONS, DIMS(1, 1), 2),
                 FC_A_INTS(KERNEL_SHAPE, DIMS(2, 2), 2), FC_A_INTS(PADS, DIMS(0, 0, 0, 0), 4),
                 FC_A_INT(STORAGE_ORDER, 0),     FC_A_INTS(STRIDES, DIMS(1, 1), 2)};
  FcOp *pool = fc_b_op(&b, FC_OP_MAX_POOL, &r, 1, 2, mp, 6);
  b.loc = "reshape0d";
  FcValue *one = fc_b_reshape(&b, fc_b_scalar(&b, FC_DT_F32, 2.5), 0, NULL);
  FcValue *sum = fc_b_binary(&b, FC_OP_ADD, one, s);
  b.loc = "i64";
  fc_b_const_i64(&b, 3, (const int64_t[]){INT64_MIN, INT64_MAX, -1});
  FcValue *neg = fc_b_unary(&b, FC_OP_NEG, e);
  if (fc_b_status(&b) != FC_OK) fail_msg("building: %s", d.msg);
  FcValue *outs[] = {c2, rv, top ? &top->results[1] : NULL, pool ? &pool->results[1] : NULL, sum, neg, &top->results[0]};
  const char *names[] = {"o\"1", "o2", "idx", "pool_idx", "sum", "empty", ""};
  fc_graph_set_outputs(m->graph, outs, names, 7);
  return m;
}

static void test_roundtrip_all_kinds(void **state) {
  (void)state;
  FcModule *m = build_all_kinds();
  FcDiag d;
  fc_diag_init(&d);
  if (fc_verify(m, &d) != FC_OK) fail_msg("verify: %s", d.msg);
  for (int w = 0; w < 2; w++) fc_module_destroy(roundtrip(m, w, FC_PRINT_INLINE_LIMIT_DEFAULT));
  char *t = print_text(m, false, 16);
  assert_non_null(strstr(t, "%arg0: tensor<1x1x2x2xf32> {flow.name = \"in\\22put\\\\ \\0A\\09\\01 \\C3\\A9\"}"));
  assert_non_null(strstr(t, "%arg1: tensor<f32> {flow.name = \"\"}"));
  assert_non_null(strstr(t, "%arg2: tensor<0x3xi64>)"));
  assert_non_null(strstr(t, "extrapolation_value = 0x7FC00000 : f32"));
  assert_non_null(strstr(t, "cubic_coeff_a = -7.500000e-01 : f32"));
  assert_non_null(strstr(t, "roi = array<f32>, scales = array<f32: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>"));
  assert_non_null(strstr(t, "sizes = array<i64: 1, 1, 4, 4>"));
  assert_non_null(strstr(t, "loc(\"/resize \\22q\\22 \\\\ \\0A\")"));
  assert_non_null(strstr(t, "{to = f16}"));
  assert_non_null(strstr(t, "seed = 2.802597e-45 : f32")); /* denormal: fewest digits that read back */
  assert_non_null(strstr(t, "shape = array<i64>"));
  assert_non_null(strstr(t, "%4:2 = \"flow.topk\""));
  assert_non_null(strstr(t, "%5:2 = \"flow.max_pool\""));
  assert_non_null(strstr(t, "-> tensor<2x0xf32> loc(\"\")\n"));
  assert_non_null(strstr(t, "\"func.return\"(%2, %3, %4#1, %5#1, %8, %10, %4#0)"));
  free(t);
  fc_module_destroy(m);
}

/* One constant of each dtype with `n` elements of the given raw bytes. */
static FcModule *build_consts(int rank, const int64_t *dims, const void *const *data) {
  FcModule *m = fc_module_create("consts");
  FcDiag d;
  fc_diag_init(&d);
  FcBuilder b;
  fc_builder_init(&b, m->graph, &d);
  FcValue *outs[FC_DT_COUNT];
  const char *names[FC_DT_COUNT];
  for (int dt = 0; dt < FC_DT_COUNT; dt++) {
    b.loc = fc_dtype_name((FcDtype)dt);
    outs[dt] = fc_b_const(&b, (FcDtype)dt, rank, dims, data[dt]);
    names[dt] = fc_dtype_name((FcDtype)dt);
  }
  if (fc_b_status(&b) != FC_OK) fail_msg("building: %s", d.msg);
  fc_graph_set_outputs(m->graph, outs, names, FC_DT_COUNT);
  return m;
}

static void check_const_data(FcModule *a, FcModule *b) {
  FcOp *x = a->graph->first, *y = b->graph->first;
  for (; x && y; x = x->next, y = y->next) {
    if (x->kind != FC_OP_CONSTANT) continue;
    const FcTensor *t = fc_value_const(&x->results[0]), *u = fc_value_const(&y->results[0]);
    assert_non_null(t);
    assert_non_null(u);
    assert_true(fc_type_equal(&t->type, &u->type));
    assert_int_equal(t->nbytes, u->nbytes);
    if (t->type.dtype == FC_DT_BOOL) {
      for (int64_t i = 0; i < t->nbytes; i++)
        assert_int_equal(((const uint8_t *)t->data)[i] != 0, ((const uint8_t *)u->data)[i]);
    } else if (t->nbytes && memcmp(t->data, u->data, (size_t)t->nbytes) != 0) {
      fail_msg("constant %s changed in the round trip", fc_op_name(x));
    }
  }
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* Random bit patterns (NaN payloads, infinities, denormals, -0 included) survive inline printing,
 * splats and weight blobs bit-exactly. */
static void test_roundtrip_const_bits(void **state) {
  (void)state;
  static uint8_t buf[FC_DT_COUNT][64 * 8];
  const void *data[FC_DT_COUNT];
  const int64_t shapes[][3] = {{2, 3, 2}, {1, 1, 16}, {4, 4, 4}};
  for (int round = 0; round < 40; round++) {
    for (int dt = 0; dt < FC_DT_COUNT; dt++) {
      for (size_t i = 0; i < sizeof buf[dt]; i++) buf[dt][i] = (uint8_t)rng();
      if (dt == FC_DT_BOOL)
        for (size_t i = 0; i < sizeof buf[dt]; i++) buf[dt][i] &= 1;
      /* Special values in the first slots. */
      if (dt == FC_DT_F32) {
        const uint32_t sp[] = {0x7f800000u, 0xff800000u, 0x7fc00001u, 0x80000000u, 0x00000001u, 0x7f7fffffu};
        memcpy(buf[dt], sp, sizeof sp);
      } else if (dt == FC_DT_F64) {
        const uint64_t sp[] = {0x7ff0000000000000ull, 0xfff8000000000001ull, 0x8000000000000000ull, 1, 0x7fefffffffffffffull};
        memcpy(buf[dt], sp, sizeof sp);
      } else if (dt == FC_DT_F16 || dt == FC_DT_BF16) {
        const uint16_t sp[] = {0x7c00, 0xfc00, 0x7e01, 0x8000, 0x0001, 0x7bff, 0x7f80, 0xff81};
        memcpy(buf[dt], sp, sizeof sp);
      }
      data[dt] = buf[dt];
    }
    const int64_t *shape = shapes[round % 3];
    FcModule *m = build_consts(3, shape, data);
    for (int w = 0; w < 2; w++) {
      FcModule *m2 = roundtrip(m, true, w ? 0 : 64);
      check_const_data(m, m2);
      fc_module_destroy(m2);
    }
    fc_module_destroy(m);
  }
}

static void test_consts_forms(void **state) {
  (void)state;
  static uint8_t zeros[8 * 32], ones[FC_DT_COUNT][8 * 32];
  const void *zd[FC_DT_COUNT], *od[FC_DT_COUNT];
  for (int dt = 0; dt < FC_DT_COUNT; dt++) {
    zd[dt] = zeros;
    FcTensor t = {.type = {(FcDtype)dt, 1, DIMS(32)}, .data = ones[dt]};
    for (int i = 0; i < 32; i++) fc_tensor_set_f64(&t, i, 1.0);
    od[dt] = ones[dt];
  }
  /* 0-d constants print as scalars. */
  FcModule *m = build_consts(0, NULL, od);
  char *t = print_text(m, false, 16);
  assert_non_null(strstr(t, "dense<1.000000e+00> : tensor<f32>"));
  assert_non_null(strstr(t, "dense<true> : tensor<i1>"));
  assert_non_null(strstr(t, "dense<1> : tensor<ui64>"));
  assert_non_null(strstr(t, "dense<1.000000e+00> : tensor<bf16>"));
  free(t);
  fc_module_destroy(roundtrip(m, false, 16));
  fc_module_destroy(m);
  /* Zero-size tensors print as dense<>. */
  m = build_consts(2, DIMS(3, 0), zd);
  t = print_text(m, true, 0);
  assert_non_null(strstr(t, "dense<> : tensor<3x0xi1>"));
  assert_null(strstr(t, "dialect_resources"));
  free(t);
  fc_module_destroy(roundtrip(m, true, 0));
  fc_module_destroy(m);
  /* Splats print inline whatever their size; 32 distinct-free elements over the limit otherwise. */
  m = build_consts(2, DIMS(4, 8), od);
  t = print_text(m, false, 16);
  assert_non_null(strstr(t, "dense<1> : tensor<4x8xi8>"));
  assert_null(strstr(t, "__elided__"));
  free(t);
  FcModule *m2 = roundtrip(m, false, 16);
  check_const_data(m, m2);
  fc_module_destroy(m2);
  fc_module_destroy(m);
}

/* Constants over the inline limit: elided without weights (data NULL after parsing, printing the
 * same again, also with weights on), blobs with weights. */
static void test_weights_on_off(void **state) {
  (void)state;
  static int32_t big[40];
  static uint8_t bytes[FC_DT_COUNT][40 * 8];
  const void *data[FC_DT_COUNT];
  for (int i = 0; i < 40; i++) big[i] = i * 7 - 100;
  for (int dt = 0; dt < FC_DT_COUNT; dt++) {
    FcTensor t = {.type = {(FcDtype)dt, 1, DIMS(40)}, .data = bytes[dt]};
    for (int i = 0; i < 40; i++) fc_tensor_set_f64(&t, i, dt == FC_DT_BOOL ? i % 3 : big[i] * 0.25);
    data[dt] = bytes[dt];
  }
  FcModule *m = build_consts(2, DIMS(5, 8), data);
  char *t = print_text(m, false, 16);
  assert_non_null(strstr(t, "dense_resource<__elided__> : tensor<5x8xf32>"));
  assert_null(strstr(t, "{-#"));
  FcModule *el = parse_ok(t);
  fc_graph_for_each_op(el->graph, op) if (op->kind == FC_OP_CONSTANT) {
    const FcAttr *a = fc_op_attr(op, FC_ATTR_VALUE);
    assert_null(a->tensor->data);
    assert_null(fc_value_const(&op->results[0]));
  }
  char *t2 = print_text(el, true, 16); /* no data to write: stays elided */
  assert_string_equal(t, t2);
  free(t2);
  free(t);
  fc_module_destroy(el);

  t = print_text(m, true, 16);
  assert_non_null(strstr(t, "dense_resource<c0> : tensor<5x8xf32>"));
  assert_non_null(strstr(t, "\n{-#\n  dialect_resources: {\n    builtin: {\n      c0: \"0x04000000"));
  assert_non_null(strstr(t, "c12: \"0x02000000"));   /* bf16, the 13th dtype */
  assert_non_null(strstr(t, "c7: \"0x01000000000101000101")); /* i1: bytes 0/1 */
  assert_non_null(strstr(t, "    }\n  }\n#-}\n"));
  free(t);
  FcModule *m2 = roundtrip(m, true, 16);
  check_const_data(m, m2);
  fc_module_destroy(m2);
  fc_module_destroy(m);
}

static void test_empty_graph(void **state) {
  (void)state;
  FcModule *m = fc_module_create("empty");
  fc_graph_set_outputs(m->graph, NULL, NULL, 0);
  char *t = print_text(m, false, 16);
  assert_string_equal(t, "module {\n  func.func @main() -> () {\n    \"func.return\"() : () -> ()\n  }\n}\n");
  free(t);
  fc_module_destroy(roundtrip(m, false, 16));
  fc_module_destroy(m);
}

/* Text that MLIR writes, or a person: custom return, comments, other locations, hex dense, groups. */
static void test_parse_other_forms(void **state) {
  (void)state;
  const char *text =
      "// a comment\n"
      "func.func @main(%x: tensor<2xf32> {flow.name = \"x\"} loc(\"a.onnx\":1:2)) -> tensor<2xf32> {\n"
      "  %c = \"flow.constant\"() {\"value\" = dense<\"0x0000803F00000040\"> : tensor<2xf32>} : () -> tensor<2xf32> loc(unknown)\n"
      "  %s = \"flow.constant\"() {value = dense<\"0x0000803F\"> : tensor<2xf32>} : () -> tensor<2xf32> loc(fused[\"a\", \"b\"])\n"
      "  %a, %t = \"flow.topk\"(%c) {axis = 0, k = 0x1, largest = 1 : i64, sorted = 1 : i64} : (tensor<2xf32>) -> (tensor<1xf32>, tensor<1xi64>)\n"
      "  %r = \"flow.add\"(%x, %s) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc(\"n\"(\"child\"))\n"
      "  return %r : tensor<2xf32> // the end\n"
      "} loc(unknown)\n";
  FcModule *m = parse_ok(text);
  char *t = print_text(m, false, 16);
  assert_non_null(strstr(t, "%0 = \"flow.constant\"() {value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>}"));
  assert_non_null(strstr(t, "%1 = \"flow.constant\"() {value = dense<1.000000e+00> : tensor<2xf32>} : () -> tensor<2xf32>\n"));
  assert_non_null(strstr(t, "%3 = \"flow.add\"(%arg0, %1) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> loc(\"n\")"));
  assert_non_null(strstr(t, "-> (tensor<2xf32> {flow.name = \"\"})"));
  free(t);
  fc_module_destroy(m);
}

/* ---- errors ----------------------------------------------------------------------------------------- */

/* A small valid body; cases splice one broken line into it. */
#define HEAD "module {\n  func.func @main(%arg0: tensor<2x3xf32> {flow.name = \"x\"}) -> (tensor<2x3xf32> {flow.name = \"y\"}) {\n"
#define TAIL "    \"func.return\"(%arg0) : (tensor<2x3xf32>) -> ()\n  }\n}\n"

static void expect_parse_error(const char *text, FcStatus want_st, const char *want) {
  FcModule *m = NULL;
  FcDiag d;
  FcStatus st = parse_text(text, strlen(text), &m, &d);
  if (st == FC_OK) fail_msg("parsed, expected \"%s\"\n%s", want, text);
  assert_null(m);
  assert_int_equal(d.status, st);
  if (st != want_st) fail_msg("status %s for \"%s\", expected %s", fc_status_name(st), d.msg, fc_status_name(want_st));
  if (!strstr(d.msg, want)) fail_msg("message \"%s\" lacks \"%s\"", d.msg, want);
  assert_null(strchr(d.msg, '\n'));
  assert_int_equal(strncmp(d.msg, "t.mlir:", 7), 0);
}

static void splice(char *out, size_t cap, const char *lines) { snprintf(out, cap, "%s%s%s", HEAD, lines, TAIL); }

static void expect_body_error(const char *lines, const char *want) {
  char text[8192];
  splice(text, sizeof text, lines);
  expect_parse_error(text, FC_ERR_INPUT, want);
}

static void test_parse_errors_ops(void **state) {
  (void)state;
  expect_body_error("    %0 = \"flow.foo\"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n",
                    "t.mlir:3:10: unknown operation 'flow.foo'");
  expect_body_error("    %0 = \"flow.softmax\"(%arg0) {axis = 1 : i64, bogus = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>\n",
                    "t.mlir:3:49: unknown attribute 'bogus'");
  expect_body_error("    %0 = \"flow.relu\"(%arg0) {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>\n",
                    "flow.relu has no attribute 'axis'");
  expect_body_error("    %0 = \"flow.softmax\"(%arg0) {axis = 1.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>\n",
                    "attribute 'axis' of flow.softmax must be int, got float");
  expect_body_error("    %0 = \"flow.softmax\"(%arg0) {axis = 1, axis = 1} : (tensor<2x3xf32>) -> tensor<2x3xf32>\n",
                    "duplicate attribute 'axis'");
  expect_body_error("    %0 = \"flow.softmax\"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n",
                    "flow.softmax is missing its attribute 'axis'");
  expect_body_error("    %0 = \"flow.relu\"(%1) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n"
                    "    %1 = \"flow.relu\"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n",
                    "t.mlir:3:22: use of undefined value %1");
  expect_body_error("    %0 = \"flow.relu\"(%arg0) : (tensor<3x2xf32>) -> tensor<3x2xf32>\n",
                    "t.mlir:3:22: operand %arg0 is used as tensor<3x2xf32> but has type tensor<2x3xf32>");
  expect_body_error("    %0 = \"flow.relu\"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n"
                    "    %0 = \"flow.relu\"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n",
                    "t.mlir:4:5: redefinition of %0 (first defined at 3:5)");
  expect_body_error("    %arg0 = \"flow.relu\"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n", "redefinition of %arg0");
  expect_body_error("    %0 = \"flow.add\"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n", "flow.add takes 2 operands, got 1");
  expect_body_error("    %0 = \"flow.conv\"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n", "flow.conv takes 2 to 12 operands, got 1");
  expect_body_error("    %0:2 = \"flow.relu\"(%arg0) : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)\n",
                    "flow.relu takes 1 results, got 2");
  expect_body_error("    %0 = \"flow.relu\"(%arg0) : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)\n",
                    "1 result names bound for 2 results");
  expect_body_error("    %0 = \"flow.concat\"(%arg0, %arg0) {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<4x3xf32>\n",
                    "2 operands but 1 operand types");
  expect_body_error("    %0 = \"flow.relu\"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xi32>\n",
                    "t.mlir:3:10: flow.relu: result 0 has type tensor<2x3xi32> but operands imply tensor<2x3xf32>");
  expect_body_error("    %0:2 = \"flow.topk\"(%arg0) {axis = 1 : i64, k = 2 : i64, largest = 1 : i64, sorted = 1 : i64} : "
                    "(tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x2xi64>)\n"
                    "    %1 = \"flow.relu\"(%0) : (tensor<2x2xf32>) -> tensor<2x2xf32>\n",
                    "%0 names 2 results; use %0#0 .. %0#1");
  expect_body_error("    %0:2 = \"flow.topk\"(%arg0) {axis = 1 : i64, k = 2 : i64, largest = 1 : i64, sorted = 1 : i64} : "
                    "(tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x2xi64>)\n"
                    "    %1 = \"flow.relu\"(%0#2) : (tensor<2x2xf32>) -> tensor<2x2xf32>\n",
                    "%0 has no result #2");
  expect_body_error("    %0 = \"flow.relu\"(%arg0) ({}) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n", "flow.relu takes no regions");
  expect_body_error("    %0 = \"flow.relu\"(%arg0) : (tensor<?x3xf32>) -> tensor<2x3xf32>\n", "dynamic or unranked shapes");
  expect_body_error("    %0 = \"flow.relu\"(%arg0) : (tensor<2x3xf33>) -> tensor<2x3xf32>\n", "unsupported element type 'f33'");
  expect_body_error("    %0 = \"flow.relu\"(%arg0) : (i32) -> tensor<2x3xf32>\n", "expected a tensor type, got 'i32'");
  expect_body_error("    %0 = flow.relu(%arg0)\n", "expected an operation, got 'flow.relu'");
  expect_body_error("    %0 = \"flow.relu\"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc(#loc1)\n",
                    "location aliases are not supported");
}

/* Element-wise programs are parsed once, by the IR parser, into FC_AK_PROGRAM attributes: the op keeps
 * the structure, the printer writes the canonical text back, and errors in the text point at the
 * string; what depends on the op (operand numbers, 'x') is the op's inference's, at the op. */
#define FUSED(prog) "    %0 = \"flow.fused\"(%arg0) {dtype = f32, program = \"" prog "\", shape = array<i64: 2, 3>} : " \
                    "(tensor<2x3xf32>) -> tensor<2x3xf32>\n"

static void test_program_attrs(void **state) {
  (void)state;
  char text[8192];
  splice(text, sizeof text, FUSED("mul o0 o0;relu s0 ;  sub s1 o0"));
  FcModule *m = parse_ok(text);
  const FcOp *op = nth_op_result(m, 0)->def;
  const FcAttr *a = fc_op_attr(op, FC_ATTR_PROGRAM);
  assert_non_null(a);
  assert_int_equal(a->kind, FC_AK_PROGRAM);
  const FcEwProgram *p = fc_op_attr_program(op, FC_ATTR_PROGRAM);
  assert_ptr_equal(p, a->prog);
  assert_int_equal(p->n_steps, 3);
  assert_int_equal(p->steps[0].kind, FC_OP_MUL);
  assert_int_equal(p->steps[1].kind, FC_OP_RELU);
  assert_int_equal(p->steps[1].n_args, 1);
  assert_int_equal(p->steps[1].args[0], FC_EW_STEP_REF(0));
  assert_int_equal(p->steps[2].kind, FC_OP_SUB);
  assert_int_equal(p->steps[2].args[0], FC_EW_STEP_REF(1));
  assert_int_equal(p->steps[2].args[1], 0);
  assert_null(fc_op_attr_str(op, FC_ATTR_PROGRAM, NULL)); /* not a string any more */
  char *t = print_text(m, false, 16);
  assert_non_null(strstr(t, "program = \"mul o0 o0; relu s0; sub s1 o0\""));
  fc_module_destroy(roundtrip(m, false, 16));
  fc_module_destroy(m);
  free(t);

  /* the text's own errors, at the string (column 54) */
  expect_body_error(FUSED("addd o0"), "t.mlir:3:54: flow.fused: program: element-wise program \"addd o0\": not an "
                                      "element-wise op without attributes");
  expect_body_error(FUSED("relu s0"), "t.mlir:3:54: flow.fused: program: element-wise program \"relu s0\": bad reference");
  expect_body_error(FUSED("add o0"), "t.mlir:3:54: flow.fused: program: element-wise program \"add o0\": wrong operand count");
  expect_body_error(FUSED("relu o0;"), "t.mlir:3:54: flow.fused: program: element-wise program \"relu o0;\": empty step");
  expect_body_error(FUSED("cast o0"), "t.mlir:3:54: flow.fused: program: element-wise program \"cast o0\": not an");
  /* the op's rules, at the op (column 10) */
  expect_body_error(FUSED("add o0 o1"), "t.mlir:3:10: flow.fused: program: element-wise program \"add o0 o1\": bad reference");
  expect_body_error(FUSED("relu x"), "t.mlir:3:10: flow.fused: program: element-wise program \"relu x\": bad reference");
  expect_body_error("    %0 = \"flow.fused\"(%arg0) {dtype = f32, program = 1 : i64, shape = array<i64: 2, 3>} : "
                    "(tensor<2x3xf32>) -> tensor<2x3xf32>\n",
                    "attribute 'program' of flow.fused must be program, got int");
}

/* A program built in memory (by a pass) is checked by the verifier as one from text is. */
static void test_program_verify(void **state) {
  (void)state;
  FcModule *m = fc_module_create("p");
  FcDiag d;
  fc_diag_init(&d);
  FcBuilder b;
  fc_builder_init(&b, m->graph, &d);
  FcType t = {FC_DT_F32, 1, DIMS(4)};
  FcValue *x = fc_graph_add_input(m->graph, t, "x");
  FcEwProgram p;
  assert_null(fc_ew_program_parse("neg o0; add s0 o0", &p));
  FcAttr attrs[3] = {FC_A_TYPE(DTYPE, FC_DT_F32), FC_A_PROGRAM(PROGRAM, &p), FC_A_INTS(SHAPE, DIMS(4), 1)};
  FcOp *op = fc_b_op(&b, FC_OP_FUSED, &x, 1, 1, attrs, 3);
  assert_non_null(op);
  assert_ptr_not_equal(fc_op_attr_program(op, FC_ATTR_PROGRAM), &p); /* copied into the module */
  FcValue *y = &op->results[0];
  fc_graph_set_outputs(m->graph, &y, (const char *[]){"y"}, 1);
  assert_int_equal(fc_verify(m, &d), FC_OK);
  p.steps[1].args[1] = 3; /* operand 3 of a one-operand op */
  fc_op_set_attr(op, FC_A_PROGRAM(PROGRAM, &p));
  fc_diag_init(&d);
  assert_int_equal(fc_verify(m, &d), FC_ERR_INTERNAL); /* a pass built it */
  assert_non_null(strstr(d.msg, "program: element-wise program \"neg o0; add s0 o3\": bad reference"));
  fc_module_destroy(m);
}

static void test_parse_errors_constants(void **state) {
  (void)state;
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<[1.0, 2.0, 3.0]> : tensor<2xf32>} : () -> tensor<2xf32>\n",
                    "t.mlir:3:43: dense literal has 3 values, tensor<2xf32> has 2 elements");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<[[1.0, 2.0, 3.0], [4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>\n",
                    "t.mlir:3:55: dense literal has more than 2 elements in dimension 1");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<[[1.0], [2.0, 3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>\n",
                    "t.mlir:3:44: dense literal has 1 elements in dimension 1, its type has 2");
  /* A short text cannot make the parser allocate what its type claims (12 GB here). */
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<[1.0]> : tensor<3000000000xf32>} : () -> tensor<3000000000xf32>\n",
                    "dense literal has 1 values, tensor<3000000000xf32> has 3000000000 elements");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<\"0x0000803F0000803F\"> : tensor<3000000000xf32>} : () -> tensor<3000000000xf32>\n",
                    "hexadecimal dense literal has 8 bytes, its type needs 12000000000");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<[1.0]> : tensor<f32>} : () -> tensor<f32>\n",
                    "rank-0 tensor must be a single value");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<[[1.0, 2.0]]> : tensor<2xf32>} : () -> tensor<2xf32>\n",
                    "nested deeper than the rank");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<> : tensor<2xf32>} : () -> tensor<2xf32>\n",
                    "empty dense literal for tensor<2xf32> with 2 elements");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<[1, 2]> : tensor<2xf32>} : () -> tensor<2xf32>\n",
                    "expected a floating-point literal (with '.'), got integer '1'");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<[256, 2]> : tensor<2xui8>} : () -> tensor<2xui8>\n",
                    "integer literal 256 out of range for ui8");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<[-129, 2]> : tensor<2xi8>} : () -> tensor<2xi8>\n",
                    "integer literal -129 out of range for i8");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<[-1, 2]> : tensor<2xui16>} : () -> tensor<2xui16>\n",
                    "integer literal -1 out of range for ui16");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<[2, 1]> : tensor<2xi1>} : () -> tensor<2xi1>\n",
                    "integer literal 2 out of range for i1");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<99999999999999999999> : tensor<i64>} : () -> tensor<i64>\n",
                    "integer literal too large");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<0x123456789> : tensor<f32>} : () -> tensor<f32>\n",
                    "hexadecimal literal too wide for f32");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<1.0e99> : tensor<f32>} : () -> tensor<f32>\n",
                    "float literal out of range for f32");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<1.0e6> : tensor<f16>} : () -> tensor<f16>\n",
                    "float literal out of range for f16");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<\"0x0000\"> : tensor<2xf32>} : () -> tensor<2xf32>\n",
                    "hexadecimal dense literal has 2 bytes, its type needs 8");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<3xf32>\n",
                    "flow.constant: result 0 has type tensor<3xf32>");
  expect_body_error("    %0 = \"flow.constant\"() {value = dense_resource<c0> : tensor<2xf32>} : () -> tensor<2xf32>\n",
                    "t.mlir:3:52: dense_resource has no data");
  /* Limits: FC_ERR_LIMIT. */
  char text[8192];
  splice(text, sizeof text, "    %0 = \"flow.relu\"(%arg0) : (tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1xf32>) -> tensor<2x3xf32>\n");
  expect_parse_error(text, FC_ERR_LIMIT, "tensor rank exceeds the limit of 16");
  splice(text, sizeof text, "    %0 = \"flow.relu\"(%arg0) : (tensor<4294967296x4294967296xf32>) -> tensor<2x3xf32>\n");
  expect_parse_error(text, FC_ERR_LIMIT, "tensor type has too many elements");
  splice(text, sizeof text, "    %0 = \"flow.relu\"(%arg0) : (tensor<99999999999999999999xf32>) -> tensor<2x3xf32>\n");
  expect_parse_error(text, FC_ERR_INPUT, "dimension too large");
  splice(text, sizeof text, "    %0 = \"flow.constant\"() {value = dense<1.0> : tensor<8589934592xf32>} : () -> tensor<8589934592xf32>\n");
  expect_parse_error(text, FC_ERR_LIMIT, "constant of 34359738368 bytes exceeds the limit");
  /* A splat is the one literal whose size the text does not bound: it may fill at most 256 MiB. */
  splice(text, sizeof text, "    %0 = \"flow.constant\"() {value = dense<1.0> : tensor<67108865xf32>} : () -> tensor<67108865xf32>\n");
  expect_parse_error(text, FC_ERR_LIMIT, "splat dense literal for tensor<67108865xf32> would be 268435460 bytes, over the limit of 268435456");
  /* Just under the rank limit parses. */
  splice(text, sizeof text, "    %0 = \"flow.constant\"() {value = dense<[[[[[[[[[[[[[[[[1.0]]]]]]]]]]]]]]]]> : "
                "tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1xf32>} : () -> tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1xf32>\n");
  FcModule *m = parse_ok(text);
  fc_module_destroy(m);
  /* Deep nesting is bounded before any recursion. */
  char *deep = malloc(300000);
  int n = snprintf(deep, 300000, "%s    %%0 = \"flow.constant\"() {value = dense<", HEAD);
  for (int i = 0; i < 100000; i++) deep[n++] = '[';
  snprintf(deep + n, 300000 - (size_t)n, "1.0> : tensor<f32>} : () -> tensor<f32>\n%s", TAIL);
  expect_parse_error(deep, FC_ERR_LIMIT, "dense literal nested deeper than the rank limit of 16");
  n = snprintf(deep, 300000, "%s    %%0 = \"flow.relu\"(%%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc(", HEAD);
  for (int i = 0; i < 100000; i++) deep[n++] = '(';
  snprintf(deep + n, 300000 - (size_t)n, "\n%s", TAIL);
  expect_parse_error(deep, FC_ERR_INPUT, "unterminated location");
  free(deep);
}

static void test_parse_errors_structure(void **state) {
  (void)state;
  expect_parse_error("", FC_ERR_INPUT, "t.mlir:1:1: expected 'func.func', got end of input");
  expect_parse_error("module {", FC_ERR_INPUT, "t.mlir:1:9: expected 'func.func'");
  expect_parse_error(HEAD, FC_ERR_INPUT, "unexpected end of input in the body of @main");
  expect_parse_error(HEAD "  }\n}\n", FC_ERR_INPUT, "t.mlir:3:3: the body of @main does not end with func.return");
  expect_parse_error(HEAD TAIL "garbage", FC_ERR_INPUT, "t.mlir:6:1: expected end of input, got 'garbage'");
  expect_parse_error(HEAD "    \"func.return\"(%arg0) : (tensor<2x3xf32>) -> ()\n    \"func.return\"(%arg0) : (tensor<2x3xf32>) -> ()\n  }\n}\n",
                     FC_ERR_INPUT, "t.mlir:4:5: operations after func.return");
  expect_parse_error(HEAD "    \"func.return\"() : () -> ()\n  }\n}\n", FC_ERR_INPUT,
                     "func.return returns 0 values but @main declares 1 results");
  expect_parse_error("func.func @main(%a: tensor<2xf32>) -> tensor<3xf32> {\n  return %a : tensor<2xf32>\n}\n", FC_ERR_INPUT,
                     "t.mlir:2:10: returned value has type tensor<2xf32> but @main declares result 0 as tensor<3xf32>");
  expect_parse_error("func.func @main(%a: tensor<2xf32> {flow.nam = \"a\"}) {\n  return\n}\n", FC_ERR_INPUT,
                     "t.mlir:1:36: unknown annotation 'flow.nam'");
  expect_parse_error("func.func @main() -> (tensor<2xf32> {flow.sbp = [\"B\"]}) {\n  return\n}\n", FC_ERR_INPUT,
                     "unsupported result attribute 'flow.sbp' (only flow.name)");
  expect_parse_error("func.func @main() {\n  return\n}\nfunc.func @f() {\n  return\n}\n", FC_ERR_INPUT,
                     "t.mlir:4:1: only one function is supported");
  expect_parse_error("func.func @main(%a: tensor<2xf32> {flow.name = \"a\\00b\"}) {\n  return\n}\n", FC_ERR_INPUT,
                     "strings may not contain NUL bytes");
  expect_parse_error("func.func @main(%a: tensor<2xf32> {flow.name = \"ab}) {\n  return\n}\n", FC_ERR_INPUT,
                     "t.mlir:1:48: unterminated string");
  expect_parse_error("func.func @main(%a: tensor<2xf32> {flow.name = \"a\\qb\"}) {\n  return\n}\n", FC_ERR_INPUT,
                     "t.mlir:1:50: invalid escape in string");
  expect_parse_error("func.func @main() {\n  return\n}\n\x01", FC_ERR_INPUT, "t.mlir:4:1: unexpected byte 0x01");
  expect_parse_error("func.func @main() {\n  return\n}\n{-# dialect_resources: { builtin: { c0: \"0x04000000\" } } #-}\n{-#",
                     FC_ERR_INPUT, "t.mlir:5:1: expected end of input");
  /* Resource sections. */
  const char *res_head = "func.func @main() -> tensor<2xf32> {\n"
                         "  %0 = \"flow.constant\"() {value = dense_resource<c0> : tensor<2xf32>} : () -> tensor<2xf32>\n"
                         "  return %0 : tensor<2xf32>\n}\n";
  char text[4096];
  snprintf(text, sizeof text, "%s{-#\n  dialect_resources: {\n    builtin: {\n      c0: \"0x040000000000803F\"\n    }\n  }\n#-}\n",
           res_head);
  expect_parse_error(text, FC_ERR_INPUT, "t.mlir:8:11: resource 'c0' has 4 bytes but tensor<2xf32> (line 2) needs 8");
  snprintf(text, sizeof text, "%s{-# dialect_resources: { builtin: { c0: \"0x030000000000803F0000803F\" } } #-}\n", res_head);
  expect_parse_error(text, FC_ERR_INPUT, "resource blob alignment 3 is not a power of two");
  snprintf(text, sizeof text, "%s{-# dialect_resources: { builtin: { c0: \"0x04000000zz00803F0000803F\" } } #-}\n", res_head);
  expect_parse_error(text, FC_ERR_INPUT, "malformed resource blob");
  snprintf(text, sizeof text,
           "%s{-# dialect_resources: { builtin: { c0: \"0x040000000000803F0000803F\", c0: \"0x040000000000803F0000803F\" } } #-}\n",
           res_head);
  expect_parse_error(text, FC_ERR_INPUT, "duplicate resource 'c0'");
  snprintf(text, sizeof text, "%s{-# dialect_resources: { foo: { c0: \"0x040000000000803F0000803F\" } } #-}\n", res_head);
  expect_parse_error(text, FC_ERR_INPUT, "resources of dialect 'foo' are not supported");
  snprintf(text, sizeof text, "%s{-# external_resources: {} #-}\n", res_head);
  expect_parse_error(text, FC_ERR_INPUT, "unsupported resource section 'external_resources'");
  snprintf(text, sizeof text, "%s{-# dialect_resources: { builtin: { c0: \"0x040000000000803F0000803F\", c9: \"0x01000000\" } } #-}\n",
           res_head);
  FcModule *m = parse_ok(text);
  const FcTensor *t = fc_value_const(nth_op_result(m, 0));
  assert_non_null(t);
  assert_true(((const float *)t->data)[1] == 1.0f);
  fc_module_destroy(m);
}

/* ---- robustness ------------------------------------------------------------------------------------- */

/* Whatever the parser accepts must verify and print stably. */
static void check_accepted(const char *text, size_t len) {
  FcModule *m;
  FcDiag d;
  FcStatus st = parse_text(text, len, &m, &d);
  if (st != FC_OK) {
    assert_true(st == FC_ERR_INPUT || st == FC_ERR_LIMIT);
    assert_int_equal(strncmp(d.msg, "t.mlir:", 7), 0);
    assert_null(m);
    return;
  }
  FcDiag v;
  fc_diag_init(&v);
  if (fc_verify(m, &v) != FC_OK) fail_msg("accepted text does not verify: %s\n%.*s", v.msg, (int)len, text);
  char *t1 = print_text(m, true, 16);
  FcModule *m2 = parse_ok(t1);
  char *t2 = print_text(m2, true, 16);
  assert_string_equal(t1, t2);
  free(t1);
  free(t2);
  fc_module_destroy(m2);
  fc_module_destroy(m);
}

/* Every truncation of `text` and every one-byte replacement: the parser fails cleanly or returns a module
 * that verifies and round-trips. */
static void sweep_text(const char *text) {
  size_t len = strlen(text);
  dump_off = true;
  for (size_t cut = 0; cut < len; cut++) {
    FcModule *p;
    FcDiag pd;
    FcStatus st = parse_text(text, cut, &p, &pd);
    if (st == FC_OK) {
      /* Only the trailing newline may go. */
      assert_true(cut + 1 == len);
      fc_module_destroy(p);
    } else {
      assert_null(p);
      assert_int_equal(strncmp(pd.msg, "t.mlir:", 7), 0);
    }
  }
  static const char repl[] = {'(', '"', '\\', '%', '#', '9', '-', '>', ',', 'x', '\0', '\n', '[', '^', '{', '}'};
  char *copy = malloc(len);
  size_t accepted = 0;
  for (size_t i = 0; i < len; i++) {
    for (size_t r = 0; r < sizeof repl; r++) {
      if (text[i] == repl[r]) continue;
      memcpy(copy, text, len);
      copy[i] = repl[r];
      FcModule *p;
      FcDiag pd;
      if (parse_text(copy, len, &p, &pd) == FC_OK) {
        accepted++;
        fc_module_destroy(p);
        check_accepted(copy, len);
      } else {
        assert_null(p);
        assert_int_equal(strncmp(pd.msg, "t.mlir:", 7), 0);
      }
    }
  }
  dump_off = false;
  print_message("[ info ] %zu bytes, %zu truncations, %zu flipped texts accepted\n", len, len, accepted);
  free(copy);
}

static void test_truncations_and_flips(void **state) {
  (void)state;
  FcModule *m = build_all_kinds();
  FcBuilder b;
  FcDiag d;
  fc_diag_init(&d);
  fc_builder_init(&b, m->graph, &d);
  b.before = fc_graph_return(m->graph);
  static float w[20];
  for (int i = 0; i < 20; i++) w[i] = (float)i * 0.5f;
  fc_b_const(&b, FC_DT_F32, 2, DIMS(4, 5), w); /* a weight blob in the text */
  assert_int_equal(fc_b_status(&b), FC_OK);
  char *text = print_text(m, true, 16);
  sweep_text(text);
  free(text);
  fc_module_destroy(m);
}

/* ---- regions ---------------------------------------------------------------------------------------- */

/* A loop whose body holds an if (nested regions, sibling regions reusing names as mlir-opt writes them). */
static const char REGIONS[] =
    "func.func @main(%t: tensor<i64>, %x: tensor<2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>) {\n"
    "  %c = \"flow.constant\"() {value = dense<true> : tensor<i1>} : () -> tensor<i1>\n"
    "  %r:2 = \"flow.loop\"(%t, %c, %x) ({\n"
    "  ^bb0(%i: tensor<i64>, %cc: tensor<i1>, %h: tensor<2xf32>):\n"
    "    %s = \"flow.if\"(%cc, %h) ({\n"
    "    ^bb0(%a: tensor<2xf32>):\n"
    "      %n = \"flow.neg\"(%a) : (tensor<2xf32>) -> tensor<2xf32>\n"
    "      \"flow.yield\"(%n) : (tensor<2xf32>) -> ()\n"
    "    }, {\n"
    "    ^bb0(%a: tensor<2xf32>):\n"
    "      \"flow.yield\"(%a) : (tensor<2xf32>) -> ()\n"
    "    }) : (tensor<i1>, tensor<2xf32>) -> tensor<2xf32>\n"
    "    \"flow.yield\"(%cc, %s, %h) : (tensor<i1>, tensor<2xf32>, tensor<2xf32>) -> ()\n"
    "  }) {carried = 1 : i64, scan_len = 3 : i64} : (tensor<i64>, tensor<i1>, tensor<2xf32>) -> "
    "(tensor<2xf32>, tensor<3x2xf32>)\n"
    "  return %r#0, %r#1 : tensor<2xf32>, tensor<3x2xf32>\n"
    "}\n";

static void test_regions(void **state) {
  (void)state;
  FcModule *m = parse_ok(REGIONS);
  FcOp *loop = m->graph->first->next;
  assert_int_equal(loop->kind, FC_OP_LOOP);
  assert_int_equal(loop->regions[0]->first->kind, FC_OP_IF);
  assert_ptr_equal(loop->regions[0]->first->regions[1]->parent, loop->regions[0]->first);
  FcModule *m2 = roundtrip(m, false, 16);
  char *text = print_text(m2, false, 16);
  assert_non_null(strstr(text, "^bb0(%b1_0: tensor<2xf32>)"));
  assert_non_null(strstr(text, "^bb0(%b2_0: tensor<2xf32>)"));
  sweep_text(text);
  free(text);
  fc_module_destroy(m2);
  fc_module_destroy(m);
}

/* Regions nested deeper than FC_MAX_REGION_DEPTH are refused as a limit, not by running out of stack. */
static void test_regions_depth(void **state) {
  (void)state;
  enum { N = FC_MAX_REGION_DEPTH + 1 };
  size_t cap = 300 * (size_t)N + 400, n = 0;
  char *t = malloc(cap);
  n += (size_t)snprintf(t + n, cap - n, "func.func @main() {\n");
  for (int i = 0; i < N; i++)
    n += (size_t)snprintf(t + n, cap - n,
                          "%%c%d = \"flow.constant\"() {value = dense<true> : tensor<i1>} : () -> tensor<i1>\n"
                          "\"flow.if\"(%%c%d) ({\n^bb0:\n", i, i);
  for (int i = 0; i < N; i++)
    n += (size_t)snprintf(t + n, cap - n, "\"flow.yield\"() : () -> ()\n}, {\n\"flow.yield\"() : () -> ()\n}) : "
                                          "(tensor<i1>) -> ()\n");
  snprintf(t + n, cap - n, "return\n}\n");
  FcModule *m;
  FcDiag d;
  FcStatus st = parse_text(t, strlen(t), &m, &d);
  if (st != FC_ERR_LIMIT) fail_msg("%s", d.msg);
  assert_non_null(strstr(d.msg, "regions nest deeper than 64"));
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundtrip_all_kinds),  cmocka_unit_test(test_roundtrip_const_bits),
      cmocka_unit_test(test_consts_forms),         cmocka_unit_test(test_weights_on_off),
      cmocka_unit_test(test_empty_graph),          cmocka_unit_test(test_parse_other_forms),
      cmocka_unit_test(test_parse_errors_ops),     cmocka_unit_test(test_parse_errors_constants),
      cmocka_unit_test(test_program_attrs),        cmocka_unit_test(test_program_verify),
      cmocka_unit_test(test_parse_errors_structure), cmocka_unit_test(test_truncations_and_flips),
      cmocka_unit_test(test_regions),              cmocka_unit_test(test_regions_depth),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
