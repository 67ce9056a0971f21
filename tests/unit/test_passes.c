/* test_passes.c — unit tests for passes/: the registry, the pipeline driver and every pass.
 *
 * Each test builds a small graph with the FcBuilder, runs one pass through the registry, checks the
 * rewrite programmatically (op counts, which value an output now is, constant data) and then runs the
 * verifier, so a pass that leaves a broken graph fails here even when the rewrite looks right.
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
#include "passes.h"

#include "test_builder.h"
#include "test_target.h"

/* Runs one pass as the pipeline does: a context for `target`, its scratch arena released after. */
static FcStatus run_pass(FcPassFn fn, FcModule *m, FcDiag *d) {
  FcPassContext pc = {.target = target, .opt_level = 2, .diag = d};
  fc_arena_init(&pc.scratch);
  FcStatus st = fn(m, &pc);
  fc_arena_free(&pc.scratch);
  return st;
}

/* ---- helpers ------------------------------------------------------------------------------------- */

static FcValue *input(T *t, const char *name, FcDtype dt, int rank, const int64_t *dims) {
  return fc_graph_add_input(t->m->graph, fc_type_make(&t->m->arena, dt, rank, dims), name);
}

static void verify_ok(T *t) {
  FcDiag d;
  fc_diag_init(&d);
  if (fc_verify(t->m, &d) != FC_OK) fail_msg("verifier after pass: %s", d.msg);
}

static void run(T *t, const char *pass) {
  const FcPassInfo *p = fc_pass_lookup(pass);
  assert_non_null(p);
  FcDiag d;
  fc_diag_init(&d);
  FcStatus st = run_pass(p->fn, t->m, &d);
  if (st != FC_OK) fail_msg("pass %s failed: %s", pass, d.msg);
  verify_ok(t);
}

static int count(T *t, FcOpKind k) {
  int n = 0;
  fc_graph_for_each_op(t->m->graph, op) n += op->kind == k;
  return n;
}

static int count_all(T *t) {
  int n = 0;
  fc_graph_for_each_op(t->m->graph, op) n++;
  return n;
}

static FcValue *out(T *t, int i) { return fc_graph_output(t->m->graph, i); }

static const FcTensor *out_const(T *t, int i) {
  const FcTensor *c = fc_value_const(out(t, i));
  if (!c) fail_msg("output %d is not a constant", i);
  return c;
}

static void t_free(T *t) { fc_module_destroy(t->m); }

static const int64_t d1_2[] = {2}, d1_3[] = {3}, d2_23[] = {2, 3}, d2_22[] = {2, 2};

static FcValue *cf32(T *t, int rank, const int64_t *dims, const float *v) { return fc_b_const(&t->b, FC_DT_F32, rank, dims, v); }
static FcValue *ci32(T *t, int rank, const int64_t *dims, const int32_t *v) { return fc_b_const(&t->b, FC_DT_I32, rank, dims, v); }
static FcValue *cbool(T *t, int rank, const int64_t *dims, const uint8_t *v) { return fc_b_const(&t->b, FC_DT_BOOL, rank, dims, v); }

static void expect_f32(const FcTensor *c, int n, const float *want) {
  assert_int_equal(c->type.dtype, FC_DT_F32);
  for (int i = 0; i < n; i++)
    if (fc_tensor_get_f64(c, i) != want[i]) fail_msg("element %d: %g, want %g", i, fc_tensor_get_f64(c, i), (double)want[i]);
}

static void expect_i64s(const FcTensor *c, int n, const int64_t *want) {
  for (int i = 0; i < n; i++)
    if (fc_tensor_get_i64(c, i) != want[i])
      fail_msg("element %d: %lld, want %lld", i, (long long)fc_tensor_get_i64(c, i), (long long)want[i]);
}

/* ---- registry and pipeline ----------------------------------------------------------------------- */

static void test_registry(void **state) {
  (void)state;
  static const char *names[] = {"shapes",          "canonicalize",    "fold",
                                "cse",             "dce",             "fold_batchnorm",
                                "fuse_epilogue",   "fuse_layer_norm", "eliminate_transpose",
                                "fuse_elementwise", "fuse_casts", "layout", "layout_i8", "decompose_conv_transpose", "prune_conv_taps", "split_conv_bands",
                                "hoist_avg_pool",  "sink_constants",  "fold_qdq",
                                "lower_quant",     "quantize_dynamic", "quantize_static",
                                "store_weights_f16", "store_weights_bf16", "sbp_data",
                                "sbp_tensor",      "sbp_auto",        "sbp_axes",        "split_sliced_matmul", "fold_rank",
                                "place_stages",    "microbatch",      "split_stages",    "sbp_file"};
  enum { N = sizeof names / sizeof names[0] };
  assert_int_equal(fc_pass_count(), N);
  for (int i = 0; i < N; i++) {
    const FcPassInfo *p = fc_pass_lookup(names[i]);
    assert_non_null(p);
    assert_string_equal(p->name, names[i]);
    assert_ptr_equal(fc_pass_at(i), p);
    assert_non_null(p->fn);
    assert_true(p->help && *p->help);
  }
  assert_ptr_equal(fc_pass_lookup("fold")->fn, fc_pass_fold);
  assert_null(fc_pass_lookup("folds"));
  assert_null(fc_pass_lookup(""));
  assert_null(fc_pass_lookup(NULL));
  assert_null(fc_pass_at(-1));
  assert_null(fc_pass_at(N));
}

static void test_pipeline_levels(void **state) {
  (void)state;
  FcDiag d;
  assert_string_equal(fc_pipeline_for_level(0), "lower_quant");
  assert_string_equal(fc_pipeline_for_level(1), "lower_quant,canonicalize,fold,dce");
  assert_string_equal(fc_pipeline_for_level(2), "shapes,canonicalize,fold,cse,sink_constants,canonicalize,fold,cse,"
                                                "fuse_layer_norm,eliminate_transpose,canonicalize,decompose_conv_transpose,prune_conv_taps,fold_batchnorm,"
                                                "fold_qdq,split_conv_bands,lower_quant,canonicalize,fold,fuse_epilogue,"
                                                "hoist_avg_pool,layout,layout_i8,canonicalize,fold,fuse_elementwise,fuse_casts,dce");
  assert_string_equal(fc_pipeline_for_level(3), fc_pipeline_for_level(2));
  assert_string_equal(fc_pipeline_for_level(-4), fc_pipeline_for_level(0));
  assert_string_equal(fc_pipeline_for_level(99), fc_pipeline_for_level(3));
  for (int l = 0; l <= 3; l++) {
    fc_diag_init(&d);
    assert_int_equal(fc_pipeline_check(fc_pipeline_for_level(l), &d), FC_OK);
  }
  fc_diag_init(&d);
  assert_int_equal(fc_pipeline_check(" fold , dce ", &d), FC_OK);
  fc_diag_init(&d);
  assert_int_equal(fc_pipeline_check("", &d), FC_OK);
  fc_diag_init(&d);
  assert_int_equal(fc_pipeline_check("fold,bogus,dce", &d), FC_ERR_INPUT);
  assert_non_null(strstr(d.msg, "'bogus'"));
  fc_diag_init(&d);
  assert_int_equal(fc_pipeline_check("fold,,dce", &d), FC_ERR_INPUT);
  fc_diag_init(&d);
  assert_int_equal(fc_pipeline_check("fold,", &d), FC_ERR_INPUT);
  fc_diag_init(&d);
  assert_int_equal(fc_pipeline_check("fol", &d), FC_ERR_INPUT);

  FcPipelineOptions o;
  fc_pipeline_options_default(&o);
  o.target = target;
  assert_null(o.passes);
  assert_false(o.verify_each);
  assert_int_equal(o.print.inline_limit, FC_PRINT_INLINE_LIMIT_DEFAULT);
}

/* x -> neg -> neg -> out: canonicalize removes both negs. */
static void build_double_neg(T *t) {
  t_init(t);
  FcValue *x = input(t, "x", FC_DT_F32, 1, d1_3);
  FcValue *y = fc_b_unary(&t->b, FC_OP_NEG, fc_b_unary(&t->b, FC_OP_NEG, x));
  outputs(t, &y, 1);
}

static void test_pipeline_run_dumps(void **state) {
  (void)state;
  T t;
  build_double_neg(&t);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  FcPipelineOptions o;
  fc_pipeline_options_default(&o);
  o.target = target;
  o.passes = "canonicalize,dce";
  o.print_before = "canonicalize";
  o.print_after = "all";
  o.verify_each = true;
  o.dump = f;
  FcDiag d;
  fc_diag_init(&d);
  assert_int_equal(fc_pipeline_run(t.m, &o, &d), FC_OK);
  fclose(f);
  const char *before = strstr(buf, "// -----// IR Dump Before canonicalize //----- //\n");
  const char *after = strstr(buf, "// -----// IR Dump After canonicalize //----- //\n");
  const char *after_dce = strstr(buf, "// -----// IR Dump After dce //----- //\n");
  assert_non_null(before);
  assert_non_null(after);
  assert_non_null(after_dce);
  assert_true(before < after && after < after_dce);
  assert_null(strstr(buf, "Before dce"));
  /* The dump before canonicalize shows the negs, the one after does not. */
  const char *neg = strstr(buf, "flow.neg");
  assert_true(neg && neg > before && neg < after);
  assert_null(strstr(after, "flow.neg"));
  free(buf);
  assert_int_equal(count(&t, FC_OP_NEG), 0);
  assert_ptr_equal(out(&t, 0), t.m->graph->inputs[0]);
  t_free(&t);
}

static void test_pipeline_rejects_before_running(void **state) {
  (void)state;
  T t;
  build_double_neg(&t);
  FcPipelineOptions o;
  fc_pipeline_options_default(&o);
  o.target = target;
  o.passes = "canonicalize,nosuchpass";
  FcDiag d;
  fc_diag_init(&d);
  assert_int_equal(fc_pipeline_run(t.m, &o, &d), FC_ERR_INPUT);
  assert_int_equal(count(&t, FC_OP_NEG), 2); /* nothing ran */

  o.passes = "canonicalize";
  o.print_after = "canon";
  fc_diag_init(&d);
  assert_int_equal(fc_pipeline_run(t.m, &o, &d), FC_ERR_INPUT);
  assert_non_null(strstr(d.msg, "--print-after"));
  assert_int_equal(count(&t, FC_OP_NEG), 2);

  /* -O1 through opt_level when no list is given. */
  fc_pipeline_options_default(&o);
  o.target = target;
  o.opt_level = 1;
  fc_diag_init(&d);
  assert_int_equal(fc_pipeline_run(t.m, &o, &d), FC_OK);
  assert_int_equal(count(&t, FC_OP_NEG), 0);
  t_free(&t);
}

/* A recorded result type that disagrees with inference: dce keeps it (the verifier then reports
 * FC_ERR_INTERNAL naming the pass), shapes repairs it. */
static void test_pipeline_verify_each(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 1, d1_3);
  FcValue *y = fc_b_unary(&t.b, FC_OP_RELU, x);
  outputs(&t, &y, 1);
  y->type = fc_type_make(&t.m->arena, FC_DT_F32, 1, d1_2);

  FcPipelineOptions o;
  fc_pipeline_options_default(&o);
  o.target = target;
  o.passes = "dce";
  o.verify_each = true;
  FcDiag d;
  fc_diag_init(&d);
  assert_int_equal(fc_pipeline_run(t.m, &o, &d), FC_ERR_INTERNAL);
  assert_true(strncmp(d.msg, "after pass 'dce': ", 18) == 0);

  o.verify_each = false;
  fc_diag_init(&d);
  assert_int_equal(fc_pipeline_run(t.m, &o, &d), FC_OK);

  o.passes = "shapes";
  o.verify_each = true;
  fc_diag_init(&d);
  assert_int_equal(fc_pipeline_run(t.m, &o, &d), FC_OK);
  assert_int_equal(y->type.dims[0], 3);
  t_free(&t);
}

/* ---- shapes -------------------------------------------------------------------------------------- */

static void test_shapes(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 2, d2_23);
  FcValue *y = input(&t, "y", FC_DT_F32, 1, d1_3);
  FcValue *s = fc_b_binary(&t.b, FC_OP_ADD, x, y);
  FcValue *r = fc_b_unary(&t.b, FC_OP_RELU, s);
  int64_t axes[] = {1};
  FcValue *sum = fc_b_reduce(&t.b, FC_OP_REDUCE_SUM, r, 1, axes, false);
  FcValue *o2[] = {r, sum};
  outputs(&t, o2, 2);

  /* A new batch size on the input flows to every result and the graph outputs. */
  static const int64_t d2_53[] = {5, 3};
  x->type = fc_type_make(&t.m->arena, FC_DT_F32, 2, d2_53);
  run(&t, "shapes");
  assert_int_equal(out(&t, 0)->type.rank, 2);
  assert_int_equal(out(&t, 0)->type.dims[0], 5);
  assert_int_equal(out(&t, 0)->type.dims[1], 3);
  assert_int_equal(out(&t, 1)->type.rank, 1);
  assert_int_equal(out(&t, 1)->type.dims[0], 5);

  /* An inconsistent change is an input error, not a crash. */
  static const int64_t d1_4[] = {4};
  y->type = fc_type_make(&t.m->arena, FC_DT_F32, 1, d1_4);
  FcDiag d;
  fc_diag_init(&d);
  assert_int_equal(run_pass(fc_pass_shapes, t.m, &d), FC_ERR_INPUT);
  assert_true(d.msg[0] != '\0');
  assert_true(strncmp(d.msg, "node 'n' (add): ", 16) == 0);
  t_free(&t);
}

/* ---- dce ----------------------------------------------------------------------------------------- */

static void test_dce(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 1, d1_3);
  input(&t, "unused", FC_DT_F32, 1, d1_3);
  fc_b_unary(&t.b, FC_OP_NEG, x);                                          /* dead */
  fc_b_unary(&t.b, FC_OP_EXP, fc_b_unary(&t.b, FC_OP_ABS, x));             /* dead chain */
  float cv[] = {1, 2, 3};
  fc_b_binary(&t.b, FC_OP_MUL, cf32(&t, 1, d1_3, cv), x);                  /* dead, with a constant */
  int64_t shape[] = {2};
  FcAttr ra[] = {FC_A_TYPE(DTYPE, FC_DT_F32), FC_A_FLOAT(HIGH, 1.0f), FC_A_FLOAT(LOW, 0.0f), FC_A_INTS(SHAPE, shape, 1)};
  fc_b_op1(&t.b, FC_OP_RANDOM_UNIFORM, NULL, 0, ra, 4);                    /* unused but impure */
  FcValue *y = fc_b_unary(&t.b, FC_OP_SQRT, x);
  outputs(&t, &y, 1);
  assert_int_equal(count_all(&t), 8);
  run(&t, "dce");
  assert_int_equal(count(&t, FC_OP_NEG), 0);
  assert_int_equal(count(&t, FC_OP_ABS), 0);
  assert_int_equal(count(&t, FC_OP_EXP), 0);
  assert_int_equal(count(&t, FC_OP_MUL), 0);
  assert_int_equal(count(&t, FC_OP_CONSTANT), 0);
  assert_int_equal(count(&t, FC_OP_RANDOM_UNIFORM), 1);
  assert_int_equal(count(&t, FC_OP_SQRT), 1);
  assert_int_equal(count(&t, FC_OP_RETURN), 1);
  assert_int_equal(count_all(&t), 3);
  assert_int_equal(t.m->graph->n_inputs, 2);
  /* Idempotent. */
  run(&t, "dce");
  assert_int_equal(count_all(&t), 3);
  t_free(&t);
}

/* ---- cse ----------------------------------------------------------------------------------------- */

static void test_cse(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 2, d2_23);
  FcValue *y = input(&t, "y", FC_DT_F32, 2, d2_23);
  FcValue *a1 = fc_b_binary(&t.b, FC_OP_ADD, x, y);
  FcValue *a2 = fc_b_binary(&t.b, FC_OP_ADD, y, x);     /* commutative: same as a1 */
  FcValue *s1 = fc_b_binary(&t.b, FC_OP_SUB, x, y);
  FcValue *s2 = fc_b_binary(&t.b, FC_OP_SUB, y, x);     /* not commutative: stays */
  FcValue *m1 = fc_b_binary(&t.b, FC_OP_MUL, a1, s1);
  FcValue *m2 = fc_b_binary(&t.b, FC_OP_MUL, s1, a2);   /* equal to m1 once a2 is a1 */
  float v1[] = {1, 2, 3}, v3[] = {1, 2, 4};
  int32_t iv[] = {1, 2, 3};
  FcValue *c1 = cf32(&t, 1, d1_3, v1);
  FcValue *c2 = cf32(&t, 1, d1_3, v1);                  /* same type and bytes as c1 */
  FcValue *c3 = cf32(&t, 1, d1_3, v3);                  /* differs in one element */
  FcValue *c4 = ci32(&t, 1, d1_3, iv);                  /* other dtype */
  int64_t sh32[] = {3, 2}, sh6[] = {6};
  FcValue *r1 = fc_b_reshape(&t.b, x, 2, sh32);
  FcValue *r2 = fc_b_reshape(&t.b, x, 1, sh6);          /* other attribute */
  FcValue *r3 = fc_b_reshape(&t.b, x, 2, sh32);         /* same as r1 */
  int64_t shape[] = {2};
  FcAttr ra[] = {FC_A_TYPE(DTYPE, FC_DT_F32), FC_A_FLOAT(HIGH, 1.0f), FC_A_FLOAT(LOW, 0.0f), FC_A_INTS(SHAPE, shape, 1)};
  FcValue *u1 = fc_b_op1(&t.b, FC_OP_RANDOM_UNIFORM, NULL, 0, ra, 4);
  FcValue *u2 = fc_b_op1(&t.b, FC_OP_RANDOM_UNIFORM, NULL, 0, ra, 4); /* impure: never merged */
  FcValue *outs[] = {a1, a2, s1, s2, m1, m2, c1, c2, c3, c4, r1, r2, r3, u1, u2};
  outputs(&t, outs, 15);
  run(&t, "cse");
  assert_int_equal(count(&t, FC_OP_ADD), 1);
  assert_int_equal(count(&t, FC_OP_SUB), 2);
  assert_int_equal(count(&t, FC_OP_MUL), 1);
  assert_int_equal(count(&t, FC_OP_CONSTANT), 3);
  assert_int_equal(count(&t, FC_OP_RESHAPE), 2);
  assert_int_equal(count(&t, FC_OP_RANDOM_UNIFORM), 2);
  assert_ptr_equal(out(&t, 1), a1);
  assert_ptr_not_equal(out(&t, 3), s1);
  assert_ptr_equal(out(&t, 5), m1);
  assert_ptr_equal(out(&t, 7), c1);
  assert_ptr_not_equal(out(&t, 8), c1);
  assert_ptr_not_equal(out(&t, 9), c1);
  assert_ptr_equal(out(&t, 12), r1);
  assert_ptr_not_equal(out(&t, 11), r1);
  assert_ptr_not_equal(out(&t, 14), u1);
  t_free(&t);
}

/* Floats compare by bits: -0.0 and 0.0 are different constants; equal NaNs are the same one. */
static void test_cse_float_bits(void **state) {
  (void)state;
  T t;
  t_init(&t);
  float pz[] = {0.0f}, nz[] = {-0.0f}, nan1[] = {__builtin_nanf("")}, nan2[] = {__builtin_nanf("")};
  FcValue *a = cf32(&t, 0, NULL, pz), *b = cf32(&t, 0, NULL, nz);
  FcValue *c = cf32(&t, 0, NULL, nan1), *d = cf32(&t, 0, NULL, nan2);
  FcValue *outs[] = {a, b, c, d};
  outputs(&t, outs, 4);
  run(&t, "cse");
  assert_ptr_not_equal(out(&t, 1), out(&t, 0));
  assert_ptr_equal(out(&t, 3), out(&t, 2));
  t_free(&t);
}

/* ---- fold ---------------------------------------------------------------------------------------- */

/* Runs fold on a module whose single output should become one constant, and checks nothing else
 * is left: the operand constants went with the folded ops. */
static const FcTensor *fold_to_const(T *t) {
  run(t, "fold");
  assert_int_equal(count_all(t), 2); /* the constant and the return */
  return out_const(t, 0);
}

static void test_fold_elementwise(void **state) {
  (void)state;
  T t;
  float a[] = {1, -2, 3}, sq[] = {4, 9, 16};

  t_init(&t); /* unary */
  FcValue *y = fc_b_unary(&t.b, FC_OP_NEG, fc_b_unary(&t.b, FC_OP_SQRT, cf32(&t, 1, d1_3, sq)));
  outputs(&t, &y, 1);
  expect_f32(fold_to_const(&t), 3, (float[]){-2, -3, -4});
  t_free(&t);

  t_init(&t); /* cast truncates toward zero */
  float c[] = {1.7f, -1.7f, 2.5f};
  y = fc_b_cast(&t.b, cf32(&t, 1, d1_3, c), FC_DT_I32);
  outputs(&t, &y, 1);
  const FcTensor *r = fold_to_const(&t);
  assert_int_equal(r->type.dtype, FC_DT_I32);
  expect_i64s(r, 3, (int64_t[]){1, -1, 2});
  t_free(&t);

  t_init(&t); /* binary with broadcasting */
  int32_t m[] = {1, 2, 3, 4, 5, 6}, v[] = {10, 20, 30};
  y = fc_b_binary(&t.b, FC_OP_ADD, ci32(&t, 2, d2_23, m), ci32(&t, 1, d1_3, v));
  outputs(&t, &y, 1);
  r = fold_to_const(&t);
  assert_int_equal(r->type.rank, 2);
  expect_i64s(r, 6, (int64_t[]){11, 22, 33, 14, 25, 36});
  t_free(&t);

  t_init(&t); /* integer division truncates */
  int32_t n[] = {7, -7}, dv[] = {2, 2};
  y = fc_b_binary(&t.b, FC_OP_DIV, ci32(&t, 1, d1_2, n), ci32(&t, 1, d1_2, dv));
  outputs(&t, &y, 1);
  expect_i64s(fold_to_const(&t), 2, (int64_t[]){3, -3});
  t_free(&t);

  t_init(&t); /* comparison and select */
  float l[] = {1, 5, 3}, rr[] = {3, 3, 3};
  FcValue *cond = fc_b_binary(&t.b, FC_OP_LESS, cf32(&t, 1, d1_3, l), cf32(&t, 1, d1_3, rr));
  y = fc_b_select(&t.b, cond, cf32(&t, 1, d1_3, a), cf32(&t, 1, d1_3, sq));
  outputs(&t, &y, 1);
  expect_f32(fold_to_const(&t), 3, (float[]){1, 9, 16});
  t_free(&t);
}

static void test_fold_structural(void **state) {
  (void)state;
  T t;
  float m[] = {1, 2, 3, 4, 5, 6};

  t_init(&t); /* reduction */
  int64_t axes[] = {1};
  FcValue *y = fc_b_reduce(&t.b, FC_OP_REDUCE_SUM, cf32(&t, 2, d2_23, m), 1, axes, false);
  outputs(&t, &y, 1);
  expect_f32(fold_to_const(&t), 2, (float[]){6, 15});
  t_free(&t);

  t_init(&t); /* matmul */
  float p[] = {1, 2, 3, 4}, q[] = {5, 6, 7, 8};
  FcValue *mm[] = {cf32(&t, 2, d2_22, p), cf32(&t, 2, d2_22, q)};
  y = fc_b_op1(&t.b, FC_OP_MATMUL, mm, 2, NULL, 0);
  outputs(&t, &y, 1);
  expect_f32(fold_to_const(&t), 4, (float[]){19, 22, 43, 50});
  t_free(&t);

  t_init(&t); /* transpose, then slice, then concat */
  int64_t perm[] = {1, 0};
  FcValue *tr = fc_b_transpose(&t.b, cf32(&t, 2, d2_23, m), perm); /* [[1,4],[2,5],[3,6]] */
  int64_t st[] = {1, 0}, en[] = {3, 2}, sp[] = {1, 1};
  FcValue *sl = fc_b_slice(&t.b, tr, st, en, sp);                  /* [[2,5],[3,6]] */
  FcValue *cc[] = {sl, cf32(&t, 2, d2_22, p)};
  y = fc_b_concat(&t.b, cc, 2, 0);                                  /* 4x2 */
  outputs(&t, &y, 1);
  const FcTensor *r = fold_to_const(&t);
  assert_int_equal(r->type.dims[0], 4);
  assert_int_equal(r->type.dims[1], 2);
  expect_f32(r, 8, (float[]){2, 5, 3, 6, 1, 2, 3, 4});
  t_free(&t);
}

static void test_fold_keeps_loc_and_inputs(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 1, d1_3);
  float a[] = {1, 2, 3};
  FcValue *c = cf32(&t, 1, d1_3, a);
  t.b.loc = "the_node";
  FcValue *folded = fc_b_unary(&t.b, FC_OP_NEG, c);
  FcValue *y = fc_b_binary(&t.b, FC_OP_ADD, x, folded); /* a graph input: never folded */
  outputs(&t, &y, 1);
  run(&t, "fold");
  assert_int_equal(count(&t, FC_OP_NEG), 0);
  assert_int_equal(count(&t, FC_OP_ADD), 1);
  FcValue *k = out(&t, 0)->def->operands[1].value;
  assert_int_equal(k->def->kind, FC_OP_CONSTANT);
  assert_string_equal(k->def->loc, "the_node");
  expect_f32(fc_value_const(k), 3, (float[]){-1, -2, -3});
  t_free(&t);
}

/* Broadcasting a [4096] f32 (16 KiB) constant: up to 16x (256 KiB) folds, more does not; a scalar
 * broadcast folds while the result is at most 64 KiB. */
static void test_fold_size_bound(void **state) {
  (void)state;
  T t;
  t_init(&t);
  float *v = calloc(4096, sizeof *v);
  int64_t d4096[] = {4096}, d16[] = {16, 4096}, d17[] = {17, 4096}, small[] = {16384}, big[] = {16385};
  FcValue *c = cf32(&t, 1, d4096, v);
  float one = 1.0f;
  FcValue *s = cf32(&t, 0, NULL, &one);
  FcValue *ys[] = {fc_b_broadcast(&t.b, c, 2, d16), fc_b_broadcast(&t.b, c, 2, d17),
                   fc_b_broadcast(&t.b, s, 1, small), fc_b_broadcast(&t.b, s, 1, big)};
  outputs(&t, ys, 4);
  free(v);
  run(&t, "fold");
  assert_non_null(fc_value_const(out(&t, 0)));
  assert_int_equal(out(&t, 1)->def->kind, FC_OP_BROADCAST);
  assert_non_null(fc_value_const(out(&t, 2)));
  assert_int_equal(out(&t, 3)->def->kind, FC_OP_BROADCAST);
  t_free(&t);
}

static void test_fold_identities(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *xi = input(&t, "xi", FC_DT_I32, 1, d1_3);
  FcValue *xf = input(&t, "xf", FC_DT_F32, 1, d1_3);
  FcValue *yf = input(&t, "yf", FC_DT_F32, 1, d1_3);
  FcValue *xb = input(&t, "xb", FC_DT_BOOL, 1, d1_3);
  FcValue *cb = input(&t, "cb", FC_DT_BOOL, 1, d1_3);
  int32_t z3[] = {0, 0, 0}, one_i = 1, zero_i = 0;
  float pz = 0.0f, nz = -0.0f, one = 1.0f, ones6[] = {1, 1, 1, 1, 1, 1};
  uint8_t t1 = 1, f1 = 0;
  FcValue *o[] = {
      fc_b_binary(&t.b, FC_OP_ADD, xi, ci32(&t, 1, d1_3, z3)),     /* 0  -> xi */
      fc_b_binary(&t.b, FC_OP_ADD, ci32(&t, 0, NULL, &zero_i), xi), /* 1  -> xi */
      fc_b_binary(&t.b, FC_OP_ADD, xf, cf32(&t, 0, NULL, &pz)),     /* 2  stays: -0.0 + 0.0 = 0.0 */
      fc_b_binary(&t.b, FC_OP_ADD, xf, cf32(&t, 0, NULL, &nz)),     /* 3  -> xf */
      fc_b_binary(&t.b, FC_OP_SUB, xf, cf32(&t, 0, NULL, &pz)),     /* 4  -> xf */
      fc_b_binary(&t.b, FC_OP_SUB, xf, cf32(&t, 0, NULL, &nz)),     /* 5  stays */
      fc_b_binary(&t.b, FC_OP_MUL, cf32(&t, 0, NULL, &one), xf),    /* 6  -> xf */
      fc_b_binary(&t.b, FC_OP_MUL, xf, cf32(&t, 0, NULL, &pz)),     /* 7  stays: NaN * 0 */
      fc_b_binary(&t.b, FC_OP_MUL, xi, ci32(&t, 0, NULL, &zero_i)), /* 8  -> zeros */
      fc_b_binary(&t.b, FC_OP_MUL, xf, cf32(&t, 2, d2_23, ones6)),  /* 9  stays: broadcasts to 2x3 */
      fc_b_binary(&t.b, FC_OP_DIV, xi, ci32(&t, 0, NULL, &one_i)),  /* 10 -> xi */
      fc_b_binary(&t.b, FC_OP_AND, xb, cbool(&t, 0, NULL, &t1)),    /* 11 -> xb */
      fc_b_binary(&t.b, FC_OP_AND, cbool(&t, 0, NULL, &f1), xb),    /* 12 -> false */
      fc_b_binary(&t.b, FC_OP_OR, xb, cbool(&t, 0, NULL, &t1)),     /* 13 -> true */
      fc_b_binary(&t.b, FC_OP_OR, xb, cbool(&t, 0, NULL, &f1)),     /* 14 -> xb */
      fc_b_binary(&t.b, FC_OP_XOR, xb, cbool(&t, 0, NULL, &f1)),    /* 15 -> xb */
      fc_b_select(&t.b, cbool(&t, 0, NULL, &t1), xf, yf),           /* 16 -> xf */
      fc_b_select(&t.b, cbool(&t, 0, NULL, &f1), xf, yf),           /* 17 -> yf */
      fc_b_select(&t.b, cb, yf, yf),                                /* 18 -> yf */
      fc_b_select(&t.b, cb, xf, yf),                                /* 19 stays */
  };
  enum { N = sizeof o / sizeof o[0] };
  outputs(&t, o, N);
  run(&t, "fold");
  FcValue *want[N] = {xi, xi, NULL, xf, xf, NULL, xf, NULL, NULL, NULL, xi, xb, NULL, NULL, xb, xb, xf, yf, yf, NULL};
  for (int i = 0; i < N; i++)
    if (want[i] && out(&t, i) != want[i]) fail_msg("output %d was not replaced by its operand", i);
  assert_int_equal(out(&t, 2)->def->kind, FC_OP_ADD);
  assert_int_equal(out(&t, 5)->def->kind, FC_OP_SUB);
  assert_int_equal(out(&t, 7)->def->kind, FC_OP_MUL);
  assert_int_equal(out(&t, 9)->def->kind, FC_OP_MUL);
  assert_int_equal(out(&t, 19)->def->kind, FC_OP_SELECT);
  const FcTensor *zeros = out_const(&t, 8);
  assert_int_equal(zeros->type.dtype, FC_DT_I32);
  expect_i64s(zeros, 3, (int64_t[]){0, 0, 0});
  expect_i64s(out_const(&t, 12), 3, (int64_t[]){0, 0, 0});
  expect_i64s(out_const(&t, 13), 3, (int64_t[]){1, 1, 1});
  t_free(&t);
}

/* ---- canonicalize -------------------------------------------------------------------------------- */

static void test_canonicalize_chains(void **state) {
  (void)state;
  T t;
  t_init(&t);
  static const int64_t d3_234[] = {2, 3, 4};
  FcValue *x = input(&t, "x", FC_DT_F32, 2, d2_23);
  FcValue *z = input(&t, "z", FC_DT_F32, 3, d3_234);
  int64_t s6[] = {6}, s32[] = {3, 2};
  FcValue *rr = fc_b_reshape(&t.b, fc_b_reshape(&t.b, x, 1, s6), 2, s32);          /* one reshape of x */
  int64_t p1[] = {1, 2, 0}, p2[] = {2, 0, 1};
  FcValue *tid = fc_b_transpose(&t.b, fc_b_transpose(&t.b, z, p1), p2);            /* identity: z */
  int64_t q1[] = {1, 0, 2}, q2[] = {0, 2, 1};
  FcValue *tq = fc_b_transpose(&t.b, fc_b_transpose(&t.b, z, q1), q2);             /* transpose(z, 1,2,0) */
  FcValue *outs[] = {rr, tid, tq};
  outputs(&t, outs, 3);
  run(&t, "canonicalize");
  assert_int_equal(count(&t, FC_OP_RESHAPE), 1);
  assert_int_equal(out(&t, 0)->def->kind, FC_OP_RESHAPE);
  assert_ptr_equal(out(&t, 0)->def->operands[0].value, x);
  assert_ptr_equal(out(&t, 1), z);
  FcOp *tr = out(&t, 2)->def;
  assert_int_equal(tr->kind, FC_OP_TRANSPOSE);
  assert_ptr_equal(tr->operands[0].value, z);
  const int64_t *perm;
  assert_int_equal(fc_op_attr_ints(tr, FC_ATTR_PERM, &perm), 3);
  assert_int_equal(perm[0], 1);
  assert_int_equal(perm[1], 2);
  assert_int_equal(perm[2], 0);
  assert_int_equal(count(&t, FC_OP_TRANSPOSE), 1);
  t_free(&t);
}

static void test_canonicalize_casts_and_involutions(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x8 = input(&t, "x8", FC_DT_I8, 1, d1_3);
  FcValue *xf = input(&t, "xf", FC_DT_F32, 1, d1_3);
  FcValue *xb = input(&t, "xb", FC_DT_BOOL, 1, d1_3);
  FcValue *xi = input(&t, "xi", FC_DT_I32, 1, d1_3);
  FcValue *o[] = {
      fc_b_cast(&t.b, fc_b_cast(&t.b, x8, FC_DT_I32), FC_DT_I64),  /* 0 cast(x8, i64) */
      fc_b_cast(&t.b, fc_b_cast(&t.b, x8, FC_DT_I32), FC_DT_I8),   /* 1 x8 */
      fc_b_cast(&t.b, fc_b_cast(&t.b, xf, FC_DT_I32), FC_DT_F32),  /* 2 stays: truncation */
      fc_b_cast(&t.b, fc_b_cast(&t.b, xi, FC_DT_F32), FC_DT_I64),  /* 3 stays: i32 -> f32 rounds */
      fc_b_cast(&t.b, fc_b_cast(&t.b, xi, FC_DT_I16), FC_DT_I32),  /* 4 stays: narrowing */
      fc_b_cast(&t.b, xf, FC_DT_F32),                              /* 5 xf */
      fc_b_unary(&t.b, FC_OP_NEG, fc_b_unary(&t.b, FC_OP_NEG, xf)), /* 6 xf */
      fc_b_unary(&t.b, FC_OP_NOT, fc_b_unary(&t.b, FC_OP_NOT, xb)), /* 7 xb */
      fc_b_unary(&t.b, FC_OP_NEG, fc_b_unary(&t.b, FC_OP_NEG, fc_b_unary(&t.b, FC_OP_NEG, xf))), /* 8 neg xf */
  };
  outputs(&t, o, 9);
  run(&t, "canonicalize");
  FcOp *c0 = out(&t, 0)->def;
  assert_int_equal(c0->kind, FC_OP_CAST);
  assert_ptr_equal(c0->operands[0].value, x8);
  assert_ptr_equal(out(&t, 1), x8);
  assert_int_equal(out(&t, 2)->def->operands[0].value->def->kind, FC_OP_CAST);
  assert_int_equal(out(&t, 3)->def->operands[0].value->def->kind, FC_OP_CAST);
  assert_int_equal(out(&t, 4)->def->operands[0].value->def->kind, FC_OP_CAST);
  assert_ptr_equal(out(&t, 5), xf);
  assert_ptr_equal(out(&t, 6), xf);
  assert_ptr_equal(out(&t, 7), xb);
  assert_int_equal(out(&t, 8)->def->kind, FC_OP_NEG);
  assert_ptr_equal(out(&t, 8)->def->operands[0].value, xf);
  assert_int_equal(count(&t, FC_OP_NEG), 1);
  assert_int_equal(count(&t, FC_OP_NOT), 0);
  t_free(&t);
}

static void test_canonicalize_identities(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 2, d2_23);
  int64_t st0[] = {0, 0}, en[] = {2, 3}, sp1[] = {1, 1}, st1[] = {1, 0};
  int64_t pads0[] = {0, 0, 0, 0}, pads1[] = {0, 1, 0, 0};
  int64_t perm01[] = {0, 1};
  FcAttr pad0[] = {FC_A_STR(MODE, "constant"), FC_A_INTS(PADS, pads0, 4)};
  FcAttr pad1[] = {FC_A_STR(MODE, "constant"), FC_A_INTS(PADS, pads1, 4)};
  FcValue *o[] = {
      fc_b_slice(&t.b, x, st0, en, sp1),              /* 0 x */
      fc_b_slice(&t.b, x, st1, en, sp1),              /* 1 stays */
      fc_b_op1(&t.b, FC_OP_PAD, &x, 1, pad0, 2),      /* 2 x */
      fc_b_op1(&t.b, FC_OP_PAD, &x, 1, pad1, 2),      /* 3 stays */
      fc_b_concat(&t.b, &x, 1, 1),                    /* 4 x */
      fc_b_broadcast(&t.b, x, 2, d2_23),              /* 5 x */
      fc_b_transpose(&t.b, x, perm01),                /* 6 x */
      fc_b_reshape(&t.b, x, 2, d2_23),                /* 7 x */
  };
  outputs(&t, o, 8);
  run(&t, "canonicalize");
  assert_ptr_equal(out(&t, 0), x);
  assert_int_equal(out(&t, 1)->def->kind, FC_OP_SLICE);
  assert_ptr_equal(out(&t, 2), x);
  assert_int_equal(out(&t, 3)->def->kind, FC_OP_PAD);
  for (int i = 4; i < 8; i++) assert_ptr_equal(out(&t, i), x);
  assert_int_equal(count_all(&t), 3);
  t_free(&t);
}

static void test_canonicalize_constants(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 1, d1_3);
  float a[] = {1, 2, 3, 4, 5, 6}, b[] = {1, 2, 3};
  int64_t s32[] = {3, 2};
  FcValue *r = fc_b_reshape(&t.b, cf32(&t, 2, d2_23, a), 2, s32);  /* constant 3x2 */
  FcValue *k = cf32(&t, 1, d1_3, b);
  FcValue *add = fc_b_binary(&t.b, FC_OP_ADD, k, x);               /* operands swap */
  FcValue *sub = fc_b_binary(&t.b, FC_OP_SUB, k, x);               /* not commutative: stays */
  FcValue *o[] = {r, add, sub};
  outputs(&t, o, 3);
  run(&t, "canonicalize");
  const FcTensor *c = out_const(&t, 0);
  assert_int_equal(c->type.rank, 2);
  assert_int_equal(c->type.dims[0], 3);
  assert_int_equal(c->type.dims[1], 2);
  expect_f32(c, 6, a);
  assert_int_equal(count(&t, FC_OP_RESHAPE), 0);
  assert_ptr_equal(out(&t, 1)->def->operands[0].value, x);
  assert_ptr_equal(out(&t, 1)->def->operands[1].value, k);
  assert_ptr_equal(out(&t, 2)->def->operands[0].value, k);
  /* The old 2x3 constant lost its only use and went with the reshape. */
  assert_int_equal(count(&t, FC_OP_CONSTANT), 2);
  t_free(&t);
}

/* The -O2 pipeline end to end: shape chains, duplicate subexpressions and constant subgraphs. */
static void test_o2_pipeline(void **state) {
  (void)state;
  T t;
  t_init(&t);
  FcValue *x = input(&t, "x", FC_DT_F32, 1, d1_3);
  float a[] = {1, 2, 3};
  FcValue *c = fc_b_unary(&t.b, FC_OP_NEG, cf32(&t, 1, d1_3, a));  /* folds */
  FcValue *e1 = fc_b_binary(&t.b, FC_OP_ADD, c, x);
  FcValue *e2 = fc_b_binary(&t.b, FC_OP_ADD, x, c);                /* cse with e1 after the swap */
  FcValue *y = fc_b_binary(&t.b, FC_OP_MUL, e1, e2);
  outputs(&t, &y, 1);
  FcPipelineOptions o;
  fc_pipeline_options_default(&o);
  o.target = target;
  o.opt_level = 2;
  o.verify_each = true;
  FcDiag d;
  fc_diag_init(&d);
  assert_int_equal(fc_pipeline_run(t.m, &o, &d), FC_OK);
  /* neg folded, the two adds merged by cse, then add and mul fused into one loop whose mul squares the
   * one add. */
  assert_int_equal(count(&t, FC_OP_ADD), 0);
  assert_int_equal(count(&t, FC_OP_MUL), 0);
  assert_int_equal(count(&t, FC_OP_NEG), 0);
  assert_int_equal(count(&t, FC_OP_CONSTANT), 1);
  assert_int_equal(count(&t, FC_OP_FUSED), 1);
  FcOp *fused = out(&t, 0)->def;
  assert_int_equal(fused->kind, FC_OP_FUSED);
  const FcEwProgram *p = fc_op_attr_program(fused, FC_ATTR_PROGRAM);
  assert_non_null(p);
  char prog[FC_EW_TEXT_MAX];
  fc_ew_program_print(p, prog, sizeof prog);
  assert_true(strcmp(prog, "add o0 o1; mul s0 s0") == 0 || strcmp(prog, "add o1 o0; mul s0 s0") == 0);
  t_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registry),
      cmocka_unit_test(test_pipeline_levels),
      cmocka_unit_test(test_pipeline_run_dumps),
      cmocka_unit_test(test_pipeline_rejects_before_running),
      cmocka_unit_test(test_pipeline_verify_each),
      cmocka_unit_test(test_shapes),
      cmocka_unit_test(test_dce),
      cmocka_unit_test(test_cse),
      cmocka_unit_test(test_cse_float_bits),
      cmocka_unit_test(test_fold_elementwise),
      cmocka_unit_test(test_fold_structural),
      cmocka_unit_test(test_fold_keeps_loc_and_inputs),
      cmocka_unit_test(test_fold_size_bound),
      cmocka_unit_test(test_fold_identities),
      cmocka_unit_test(test_canonicalize_chains),
      cmocka_unit_test(test_canonicalize_casts_and_involutions),
      cmocka_unit_test(test_canonicalize_identities),
      cmocka_unit_test(test_canonicalize_constants),
      cmocka_unit_test(test_o2_pipeline),
  };
  return cmocka_run_group_tests(tests, setup_target, teardown_target);
}
