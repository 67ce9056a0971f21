/* test_quantize_dynamic.c — unit tests of the quantize_dynamic pass (passes/quantize_dynamic.c).
 *
 * Graphs are built with the FcBuilder; after the pass the IR is checked (the f32 matmul by a large
 * constant is gone, a u8 × i8 matmul replaces it, its weights are the per-column symmetric quantisation
 * with |q| <= 64 for an AVX2 target and <= 127 with VNNI; small matmuls, run-time weights and weights
 * holding a NaN are left alone), the verifier runs, and with a constant A the fold pass evaluates the
 * rewritten graph, whose values are compared against the f32 product within the error bound of the two
 * quantisations (derived in check_within_bound).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "passes.h"

#include "test_builder.h"
#include "test_target.h"

enum { K = 70, N = 65, ZERO_COL = 7 }; /* K·N = 4550 >= the pass's 4096; odd sizes on purpose */

static void run(T *t, const char *pass, const FcTarget *tg) { t_run_pass(t, pass, tg); }

/* B[k, n]: mixed signs, a different range per column, column ZERO_COL all zero. */
static float weight(int k, int n) { return n == ZERO_COL ? 0.0f : (float)((n + 1) * sin(0.37 * k + 1.3 * n)) / 16; }

static FcValue *weights(T *t) {
  static float w[K * N];
  for (int k = 0; k < K; k++)
    for (int n = 0; n < N; n++) w[k * N + n] = weight(k, n);
  const int64_t dims[2] = {K, N};
  return fc_b_const(&t->b, FC_DT_F32, 2, dims, w);
}

/* The matmuls of the graph by operand dtypes. */
static int count_matmuls(T *t, FcDtype a, FcDtype b) {
  int n = 0;
  fc_graph_for_each_op(t->m->graph, op) n += op->kind == FC_OP_MATMUL && op->operands[0].value->type.dtype == a &&
                                             op->operands[1].value->type.dtype == b;
  return n;
}

static const FcTensor *quantized_weights(T *t) {
  fc_graph_for_each_op(t->m->graph, op) {
    if (op->kind == FC_OP_MATMUL && op->operands[1].value->type.dtype == FC_DT_I8) {
      assert_int_equal(op->operands[0].value->type.dtype, FC_DT_U8);
      assert_int_equal(op->results[0].type.dtype, FC_DT_I32);
      const FcTensor *q = fc_value_const(op->operands[1].value);
      assert_non_null(q);
      return q;
    }
  }
  fail_msg("no u8 x i8 matmul after the pass");
  return NULL;
}

/* Column n of q is round(B[:, n] / s_n) with s_n = max |B[:, n]| / qmax: its largest |q| is qmax exactly
 * (0 for the zero column) and every element is within half a step of B / s_n. */
static void check_weights(const FcTensor *q, int qmax) {
  assert_int_equal(q->type.rank, 2);
  assert_int_equal(q->type.dims[0], K);
  assert_int_equal(q->type.dims[1], N);
  for (int n = 0; n < N; n++) {
    double mx = 0;
    int qm = 0;
    for (int k = 0; k < K; k++) mx = fmax(mx, fabs(weight(k, n)));
    for (int k = 0; k < K; k++) {
      int v = (int)fc_tensor_get_i64(q, (int64_t)k * N + n);
      qm = abs(v) > qm ? abs(v) : qm;
      if (mx > 0 && fabs(v - weight(k, n) / (mx / qmax)) > 0.5 + 1e-4)
        fail_msg("q[%d, %d] = %d, want round(%g)", k, n, v, weight(k, n) / (mx / qmax));
    }
    assert_int_equal(qm, n == ZERO_COL ? 0 : qmax);
  }
}

static void test_rewrites_large_matmuls(void **state) {
  (void)state;
  T t;
  t_init(&t);
  const int64_t da[3] = {3, 2, K}, ds[2] = {3, 10}, dsw[2] = {10, 10};
  FcValue *a = fc_graph_add_input(t.m->graph, fc_type_make(&t.m->arena, FC_DT_F32, 3, da), "a");
  FcValue *small = fc_graph_add_input(t.m->graph, fc_type_make(&t.m->arena, FC_DT_F32, 2, ds), "small");
  FcValue *bw = fc_graph_add_input(t.m->graph, fc_type_make(&t.m->arena, FC_DT_F32, 2, (int64_t[]){K, N}), "b");
  static float sw[100];
  FcValue *y[3] = {fc_b_binary(&t.b, FC_OP_MATMUL, a, weights(&t)),
                   fc_b_binary(&t.b, FC_OP_MATMUL, small, fc_b_const(&t.b, FC_DT_F32, 2, dsw, sw)),
                   fc_b_binary(&t.b, FC_OP_MATMUL, a, bw)};
  outputs(&t, y, 3);
  run(&t, "quantize_dynamic", target);
  /* the small product and the one by run-time weights stay f32 */
  assert_int_equal(count_matmuls(&t, FC_DT_F32, FC_DT_F32), 2);
  assert_int_equal(count_matmuls(&t, FC_DT_U8, FC_DT_I8), 1);
  check_weights(quantized_weights(&t), 64);
  /* the result keeps its type: [3, 2, N] f32 */
  const FcType *ty = &fc_graph_output(t.m->graph, 0)->type;
  assert_int_equal(ty->dtype, FC_DT_F32);
  assert_int_equal(ty->rank, 3);
  assert_int_equal(ty->dims[2], N);
  fc_module_destroy(t.m);
}

/* With VNNI (vpdpbusd is exact for every i8) the weights use the full range. */
static void test_full_range_with_vnni(void **state) {
  (void)state;
  FcCodegenOptions o = {.triple = "x86_64-linux-gnu", .cpu = "icelake-server", .opt_level = 2};
  FcTarget *vnni;
  FcDiag d;
  fc_diag_init(&d);
  assert_int_equal(fc_target_resolve(&o, &vnni, &d), FC_OK);
  T t;
  t_init(&t);
  FcValue *a = fc_graph_add_input(t.m->graph, fc_type_make(&t.m->arena, FC_DT_F32, 2, (int64_t[]){5, K}), "a");
  FcValue *y = fc_b_binary(&t.b, FC_OP_MATMUL, a, weights(&t));
  outputs(&t, &y, 1);
  run(&t, "quantize_dynamic", vnni);
  check_weights(quantized_weights(&t), 127);
  fc_module_destroy(t.m);
  fc_target_free(vnni);
}

/* Weights holding a NaN have no scale: the matmul stays f32. */
static void test_keeps_non_finite_weights(void **state) {
  (void)state;
  T t;
  t_init(&t);
  static float w[K * N];
  w[K * N / 2] = NAN;
  FcValue *a = fc_graph_add_input(t.m->graph, fc_type_make(&t.m->arena, FC_DT_F32, 2, (int64_t[]){5, K}), "a");
  FcValue *y = fc_b_binary(&t.b, FC_OP_MATMUL, a, fc_b_const(&t.b, FC_DT_F32, 2, (int64_t[]){K, N}, w));
  outputs(&t, &y, 1);
  run(&t, "quantize_dynamic", target);
  assert_int_equal(count_matmuls(&t, FC_DT_F32, FC_DT_F32), 1);
  assert_int_equal(count_matmuls(&t, FC_DT_U8, FC_DT_I8), 0);
  fc_module_destroy(t.m);
}

enum { M = 4 };

/* A·B for a constant A [M, K] after quantize_dynamic and fold: the folded constant (t is destroyed by the
 * caller). */
static const FcTensor *folded_product(T *t, const float *av) {
  t_init(t);
  FcValue *a = fc_b_const(&t->b, FC_DT_F32, 2, (int64_t[]){M, K}, av);
  FcValue *y = fc_b_binary(&t->b, FC_OP_MATMUL, a, weights(t));
  outputs(t, &y, 1);
  run(t, "quantize_dynamic", target);
  assert_int_equal(count_matmuls(t, FC_DT_U8, FC_DT_I8), 1);
  run(t, "fold", target);
  const FcTensor *c = fc_value_const(fc_graph_output(t->m->graph, 0));
  if (!c) fail_msg("the quantised product did not fold to a constant");
  return c;
}

/* y = A·B for a constant A through the pass and fold. Per element, with â = a + e_a (|e_a| <= s_a/2,
 * s_a = (max(A, 0) - min(A, 0)) / 255) and b̂ = b + e_b (|e_b| <= s_b[n]/2):
 *     |â·b̂ - a·b| <= |e_a|·|b| + |â|·|e_b| <= s_a/2·max|B[:, n]| + (max|A| + s_a/2)·s_b[n]/2,
 * summed over K; the f32 arithmetic adds far less (relative 2^-24 per operation). */
static void check_within_bound(const float *av, int qmax) {
  T t;
  const FcTensor *c = folded_product(&t, av);
  double lo = 0, hi = 0, amax = 0;
  for (int i = 0; i < M * K; i++) {
    lo = fmin(lo, av[i]);
    hi = fmax(hi, av[i]);
    amax = fmax(amax, fabs(av[i]));
  }
  double sa = (hi - lo) / 255;
  for (int n = 0; n < N; n++) {
    double bmax = 0;
    for (int k = 0; k < K; k++) bmax = fmax(bmax, fabs(weight(k, n)));
    double bound = K * (sa / 2 * bmax + (amax + sa / 2) * (bmax / qmax) / 2) + 1e-5;
    for (int m = 0; m < M; m++) {
      double want = 0;
      for (int k = 0; k < K; k++) want += (double)av[m * K + k] * weight(k, n);
      double got = fc_tensor_get_f64(c, (int64_t)m * N + n);
      if (!(fabs(got - want) <= bound)) fail_msg("y[%d, %d] = %g, want %g within %g", m, n, got, want, bound);
    }
  }
  fc_module_destroy(t.m);
}

static void test_values_within_quantisation_error(void **state) {
  (void)state;
  static float av[M * K];
  for (int i = 0; i < M * K; i++) av[i] = (float)(2.5 * cos(0.91 * i) - 0.7); /* asymmetric: zero point != 0 */
  check_within_bound(av, 64);
  for (int i = 0; i < M * K; i++) av[i] = (float)fabs(3 * cos(0.53 * i)); /* non-negative: zero point 0 */
  check_within_bound(av, 64);
}

/* An all-zero A has scale 0 in DynamicQuantizeLinear's formula (0/0 for its zero point and values): the
 * product must still be exactly 0, not NaN (the pass bounds the scale from below; the lit test checks the
 * compiled kernels, whose max/min need not drop a NaN as the evaluator's do). */
static void test_zero_activations(void **state) {
  (void)state;
  static float av[M * K];
  T t;
  const FcTensor *c = folded_product(&t, av);
  for (int i = 0; i < M * N; i++)
    if (fc_tensor_get_f64(c, i) != 0) fail_msg("y[%d] = %g, want 0", i, fc_tensor_get_f64(c, i));
  fc_module_destroy(t.m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rewrites_large_matmuls),
      cmocka_unit_test(test_full_range_with_vnni),
      cmocka_unit_test(test_keeps_non_finite_weights),
      cmocka_unit_test(test_values_within_quantisation_error),
      cmocka_unit_test(test_zero_activations),
  };
  return cmocka_run_group_tests(tests, setup_target, teardown_target);
}
