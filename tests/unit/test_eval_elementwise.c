/* test_eval_elementwise.c — reference evaluators of the element-wise family (ir/eval_elementwise.c,
 * ir/eval_reduce.c) and the fc_op_eval dispatcher (ir/eval.c).
 *
 * Each test builds constants and one op with an FcBuilder, evaluates it with fc_op_eval and compares
 * every element: NaN and infinities exactly, the sign of zero where it matters, integers bit-exactly
 * (wraparound, INT_MIN / -1, values beyond 2^53), and the cases the evaluators must decline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "ir.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define F32S(...) ((const float[]){__VA_ARGS__})
#define F64S(...) ((const double[]){__VA_ARGS__})
#define I64S(...) ((const int64_t[]){__VA_ARGS__})
#define COUNT(T, ...) ((int)(sizeof((const T[]){__VA_ARGS__}) / sizeof(T)))

static FcModule *M;
static FcBuilder B;
static FcDiag D;

static int setup(void **state) {
  (void)state;
  M = fc_module_create("test");
  fc_diag_init(&D);
  fc_builder_init(&B, M->graph, &D);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  fc_module_destroy(M);
  return 0;
}

static FcValue *cnst(FcDtype dt, int rank, const int64_t *dims, const void *data) {
  FcValue *v = fc_b_const(&B, dt, rank, dims, data);
  if (!v) fail_msg("constant failed: %s", D.msg);
  return v;
}

/* 1-D constants of a given dtype from double / int64 lists (converted element-wise). */
static FcValue *vec_f(FcDtype dt, int n, const double *v) {
  FcTensor *t = fc_tensor_new(&M->arena, fc_type_make(&M->arena, dt, 1, (const int64_t[]){n}));
  for (int i = 0; i < n; i++) fc_tensor_set_f64(t, i, v[i]);
  return fc_b_const_tensor(&B, t);
}
static FcValue *vec_i(FcDtype dt, int n, const int64_t *v) {
  FcTensor *t = fc_tensor_new(&M->arena, fc_type_make(&M->arena, dt, 1, (const int64_t[]){n}));
  for (int i = 0; i < n; i++) fc_tensor_set_i64(t, i, v[i]);
  return fc_b_const_tensor(&B, t);
}
#define VF(dt, ...) vec_f(FC_DT_##dt, COUNT(double, __VA_ARGS__), F64S(__VA_ARGS__))
#define VI(dt, ...) vec_i(FC_DT_##dt, COUNT(int64_t, __VA_ARGS__), I64S(__VA_ARGS__))

static FcTensor *outs[3];

static FcTensor *eval(const FcValue *v) {
  if (!v) fail_msg("build failed: %s", D.msg);
  FcStatus st = fc_op_eval(v->def, &M->arena, outs, &D);
  if (st != FC_OK) fail_msg("eval failed (%s): %s", fc_status_name(st), D.msg);
  char b1[128], b2[128];
  assert_string_equal(fc_type_str(&outs[0]->type, b1, sizeof b1), fc_type_str(&v->type, b2, sizeof b2));
  return outs[0];
}

static void expect_unsupported(const FcValue *v, const char *substr) {
  assert_non_null(v);
  assert_int_equal(fc_op_eval(v->def, &M->arena, outs, &D), FC_ERR_UNSUPPORTED);
  if (!strstr(D.msg, substr)) fail_msg("message \"%s\" lacks \"%s\"", D.msg, substr);
  fc_diag_init(&D);
}

/* Doubles compare with a relative tolerance `tol` (0: exact); NaN matches NaN; a wanted -0.0 must be
 * -0.0. */
static void expect_f(const FcTensor *t, int n, const double *want, double tol) {
  int64_t numel;
  assert_true(fc_type_numel(&t->type, &numel));
  assert_int_equal(numel, n);
  for (int i = 0; i < n; i++) {
    double g = fc_tensor_get_f64(t, i), w = want[i];
    bool ok = isnan(w) ? isnan(g) : isinf(w) ? g == w : fabs(g - w) <= tol * fmax(1.0, fabs(w));
    if (ok && w == 0 && tol == 0) ok = signbit(g) == signbit(w);
    if (!ok) fail_msg("element %d: got %.17g, want %.17g", i, g, w);
  }
}
#define EXPECT_F(t, tol, ...) expect_f((t), COUNT(double, __VA_ARGS__), F64S(__VA_ARGS__), (tol))

static void expect_i(const FcTensor *t, int n, const int64_t *want) {
  int64_t numel;
  assert_true(fc_type_numel(&t->type, &numel));
  assert_int_equal(numel, n);
  for (int i = 0; i < n; i++)
    if (fc_tensor_get_i64(t, i) != want[i])
      fail_msg("element %d: got %lld, want %lld", i, (long long)fc_tensor_get_i64(t, i), (long long)want[i]);
}
static void expect_empty(const FcTensor *t) {
  int64_t numel;
  assert_true(fc_type_numel(&t->type, &numel));
  assert_int_equal(numel, 0);
}

#define EXPECT_I(t, ...) expect_i((t), COUNT(int64_t, __VA_ARGS__), I64S(__VA_ARGS__))

static FcValue *bin(FcOpKind k, FcValue *a, FcValue *b) { return fc_b_binary(&B, k, a, b); }

static FcValue *mod(FcValue *a, FcValue *b, int fmod_flag) {
  FcValue *ops[2] = {a, b};
  FcAttr at = FC_A_INT(FMOD, fmod_flag);
  return fc_b_op1(&B, FC_OP_MOD, ops, 2, &at, 1);
}

/* ---- unary ---------------------------------------------------------------------------------------- */

static void test_unary_float(void **state) {
  (void)state;
  FcValue *r = VF(F32, 0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6, -0.0, INFINITY, NAN);
  EXPECT_F(eval(fc_b_unary(&B, FC_OP_ROUND, r)), 0, 0, 2, 2, -0.0, -2, 2, -3, -0.0, INFINITY, NAN);
  EXPECT_F(eval(fc_b_unary(&B, FC_OP_CEIL, VF(F32, -0.5, 1.2))), 0, -0.0, 2);
  EXPECT_F(eval(fc_b_unary(&B, FC_OP_FLOOR, VF(F64, -0.5, 1.2))), 0, -1, 1);
  EXPECT_F(eval(fc_b_unary(&B, FC_OP_SIGN, VF(F32, -3, 0, 5, NAN))), 0, -1, 0, 1, NAN);
  EXPECT_F(eval(fc_b_unary(&B, FC_OP_NEG, VF(F32, 1, -0.0))), 0, -1, 0.0);
  EXPECT_F(eval(fc_b_unary(&B, FC_OP_ABS, VF(F16, -2.5, -INFINITY))), 0, 2.5, INFINITY);
  EXPECT_F(eval(fc_b_unary(&B, FC_OP_SQRT, VF(F32, 4, -1))), 0, 2, NAN);
  EXPECT_F(eval(fc_b_unary(&B, FC_OP_RECIPROCAL, VF(F32, 4, 0, -0.0))), 0, 0.25, INFINITY, -INFINITY);
  EXPECT_F(eval(fc_b_unary(&B, FC_OP_LOG, VF(F64, 1, 0, -1))), 0, 0, -INFINITY, NAN);
  EXPECT_F(eval(fc_b_unary(&B, FC_OP_EXP, VF(F64, 1, -INFINITY, 1000))), 1e-15, M_E, 0, INFINITY);
  EXPECT_F(eval(fc_b_unary(&B, FC_OP_RELU, VF(F32, -1, 2, NAN))), 0, 0, 2, NAN);
  EXPECT_F(eval(fc_b_unary(&B, FC_OP_SIGMOID, VF(F64, 0, 1000, -1000, 2))), 1e-15, 0.5, 1, 0, 1 / (1 + exp(-2.0)));
  EXPECT_F(eval(fc_b_unary(&B, FC_OP_SOFTPLUS, VF(F64, 1000, -1000, 0))), 1e-15, 1000, 0, log(2.0));
  EXPECT_F(eval(fc_b_unary(&B, FC_OP_ERF, VF(F32, 0, 1, -INFINITY))), 1e-7, 0, 0.8427007929497149, -1);
  EXPECT_F(eval(fc_b_unary(&B, FC_OP_TANH, VF(BF16, 0, 100))), 0, 0, 1);
  EXPECT_F(eval(fc_b_unary(&B, FC_OP_ATANH, VF(F64, 1, 2))), 0, INFINITY, NAN);
  EXPECT_F(eval(fc_b_unary(&B, FC_OP_COS, VF(F64, 0))), 0, 1);
  /* f32 maths rounds once to f32: exp(1) as f32. */
  FcTensor *e = eval(fc_b_unary(&B, FC_OP_EXP, VF(F32, 1)));
  float ef;
  memcpy(&ef, e->data, 4);
  assert_true(ef == (float)M_E);

  FcValue *x = VF(F32, 1, -INFINITY, INFINITY, NAN, 0);
  EXPECT_I(eval(fc_b_unary(&B, FC_OP_ISNAN, x)), 0, 0, 0, 1, 0);
  FcAttr neg_only[2] = {FC_A_INT(DETECT_NEGATIVE, 1), FC_A_INT(DETECT_POSITIVE, 0)};
  EXPECT_I(eval(fc_b_op1(&B, FC_OP_ISINF, &x, 1, neg_only, 2)), 0, 1, 0, 0, 0);
  FcAttr both[2] = {FC_A_INT(DETECT_NEGATIVE, 1), FC_A_INT(DETECT_POSITIVE, 1)};
  EXPECT_I(eval(fc_b_op1(&B, FC_OP_ISINF, &x, 1, both, 2)), 0, 1, 1, 0, 0);
}

static void test_unary_int(void **state) {
  (void)state;
  EXPECT_I(eval(fc_b_unary(&B, FC_OP_NEG, VI(I32, INT32_MIN, 5, 0))), INT32_MIN, -5, 0);
  EXPECT_I(eval(fc_b_unary(&B, FC_OP_ABS, VI(I8, INT8_MIN, -7, 7))), INT8_MIN, 7, 7);
  EXPECT_I(eval(fc_b_unary(&B, FC_OP_ABS, VI(I64, INT64_MIN, -9007199254740993))), INT64_MIN, 9007199254740993);
  EXPECT_I(eval(fc_b_unary(&B, FC_OP_SIGN, VI(I64, INT64_MIN, 0, 3))), -1, 0, 1);
  EXPECT_I(eval(fc_b_unary(&B, FC_OP_SIGN, VI(U8, 0, 200))), 0, 1);
  EXPECT_I(eval(fc_b_unary(&B, FC_OP_RELU, VI(I16, -5, 6))), 0, 6);
  EXPECT_I(eval(fc_b_unary(&B, FC_OP_BITWISE_NOT, VI(U8, 0, 0xf0))), 0xff, 0x0f);
  EXPECT_I(eval(fc_b_unary(&B, FC_OP_BITWISE_NOT, VI(I32, 0, -1))), -1, 0);
  FcTensor *u = eval(fc_b_unary(&B, FC_OP_BITWISE_NOT, VI(U64, 0)));
  assert_true((uint64_t)fc_tensor_get_i64(u, 0) == UINT64_MAX);
  EXPECT_I(eval(fc_b_unary(&B, FC_OP_NOT, VI(BOOL, 0, 1))), 1, 0);
  EXPECT_I(eval(fc_b_unary(&B, FC_OP_NEG, VI(U8, 1))), 255);
}

static void test_cast(void **state) {
  (void)state;
  FcValue *f = VF(F32, -2.7, 2.7, NAN, 0, -0.0, 300);
  EXPECT_I(eval(fc_b_cast(&B, f, FC_DT_I32)), -2, 2, 0, 0, 0, 300);
  EXPECT_I(eval(fc_b_cast(&B, f, FC_DT_BOOL)), 1, 1, 1, 0, 0, 1);
  EXPECT_I(eval(fc_b_cast(&B, VI(I32, -1, 256, 257), FC_DT_U8)), 255, 0, 1);
  EXPECT_I(eval(fc_b_cast(&B, VI(U64, -1), FC_DT_I64)), -1);
  EXPECT_I(eval(fc_b_cast(&B, VI(I64, 9007199254740993), FC_DT_I64)), 9007199254740993);
  EXPECT_I(eval(fc_b_cast(&B, VI(I64, 9007199254740993, -3), FC_DT_I32)), 1, -3);
  EXPECT_F(eval(fc_b_cast(&B, VI(BOOL, 1, 0), FC_DT_F16)), 0, 1, 0);
  /* i64 -> f32 rounds once: 2^24 + 1 + 2^-? cannot be exact; 16777217 -> 16777216, 16777219 -> 16777220. */
  EXPECT_F(eval(fc_b_cast(&B, VI(I64, 16777217, 16777219), FC_DT_F32)), 0, 16777216, 16777220);
  /* (2^62 + 2^38 + 1) -> f32: a direct rounding gives 2^62 + 2^39; via double it would tie to 2^62. */
  int64_t big = ((int64_t)1 << 62) + ((int64_t)1 << 38) + 1;
  EXPECT_F(eval(fc_b_cast(&B, VI(I64, big), FC_DT_F32)), 0, ldexp(1, 62) + ldexp(1, 39));
  FcTensor *u = eval(fc_b_cast(&B, VI(U64, -1), FC_DT_F64));
  assert_true(fc_tensor_get_f64(u, 0) == 18446744073709551616.0);
  /* f64 -> f16 with one rounding: 1 + 2^-11 + 2^-40 is above the tie, so it rounds up to 1 + 2^-10;
   * a cast through f32 would see an exact tie and round to 1. */
  FcTensor *h = eval(fc_b_cast(&B, VF(F64, 1 + ldexp(1, -11) + ldexp(1, -40), 65520, -1e-10), FC_DT_F16));
  const uint16_t *hb = h->data;
  assert_int_equal(hb[0], 0x3c01);
  assert_int_equal(hb[1], 0x7c00); /* 65520 rounds to inf */
  assert_int_equal(hb[2], 0x8000); /* -0 */
  EXPECT_I(eval(fc_b_cast(&B, VF(F64, -1e10, 4503599627370495.5), FC_DT_I64)), -10000000000, 4503599627370495);
}

/* ---- binary --------------------------------------------------------------------------------------- */

static void test_binary_float(void **state) {
  (void)state;
  FcValue *a = cnst(FC_DT_F32, 2, DIMS(2, 3), F32S(1, 2, 3, 4, 5, 6)), *b = cnst(FC_DT_F32, 1, DIMS(3), F32S(10, 20, 30));
  EXPECT_F(eval(bin(FC_OP_ADD, a, b)), 0, 11, 22, 33, 14, 25, 36);
  EXPECT_F(eval(bin(FC_OP_SUB, b, a)), 0, 9, 18, 27, 6, 15, 24);
  FcValue *col = cnst(FC_DT_F32, 2, DIMS(2, 1), F32S(2, -1));
  EXPECT_F(eval(bin(FC_OP_MUL, col, b)), 0, 20, 40, 60, -10, -20, -30);
  EXPECT_F(eval(bin(FC_OP_DIV, VF(F32, 1, -1, 0, 1), VF(F32, 0, 0, 0, 3))), 0, INFINITY, -INFINITY, NAN, (float)(1.0 / 3));
  EXPECT_F(eval(bin(FC_OP_MAX, VF(F32, 1, NAN, 3, -0.0), VF(F32, 2, 1, NAN, 0.0))), 0, 2, NAN, NAN, 0.0);
  EXPECT_F(eval(bin(FC_OP_MIN, VF(F64, 1, NAN, 0.0), VF(F64, 2, 1, -0.0))), 0, 1, NAN, -0.0);
  EXPECT_F(eval(bin(FC_OP_POW, VF(F32, 2, -8, 4), VF(F32, 10, 1.0 / 3, 0.5))), 0, 1024, NAN, 2);
  EXPECT_F(eval(bin(FC_OP_POW, VF(F64, 2, 3), VI(I64, 3, -1))), 1e-15, 8, 1.0 / 3);
  EXPECT_F(eval(mod(VF(F32, -7.5, 7.5, 7.5, -7.5), VF(F32, 2, -2, 2, -2), 0)), 0, 0.5, -0.5, 1.5, -1.5);
  EXPECT_F(eval(mod(VF(F32, -7.5, 7.5, 1), VF(F32, 2, -2, 0), 1)), 0, -1.5, 1.5, NAN);
  /* f16 addition rounds once: 1 + 2^-11 is a tie in f16 and goes to even (1). */
  EXPECT_F(eval(bin(FC_OP_ADD, VF(F16, 1, 2048), VF(F16, 0.00048828125, 1))), 0, 1, 2048);
  EXPECT_F(eval(bin(FC_OP_ADD, VF(BF16, 1), VF(BF16, 0.5))), 0, 1.5);

  FcValue *n = VF(F32, 1, NAN, 2, INFINITY);
  FcValue *m = VF(F32, 1, NAN, 3, INFINITY);
  EXPECT_I(eval(bin(FC_OP_EQUAL, n, m)), 1, 0, 0, 1);
  EXPECT_I(eval(bin(FC_OP_LESS, n, m)), 0, 0, 1, 0);
  EXPECT_I(eval(bin(FC_OP_LESS_EQUAL, n, m)), 1, 0, 1, 1);
  EXPECT_I(eval(bin(FC_OP_GREATER, m, n)), 0, 0, 1, 0);
  EXPECT_I(eval(bin(FC_OP_GREATER_EQUAL, n, m)), 1, 0, 0, 1);
}

static void test_binary_int(void **state) {
  (void)state;
  FcValue *a = VI(I32, -7, 7, -7, 7, INT32_MAX), *b = VI(I32, 2, -2, -2, 2, 1);
  EXPECT_I(eval(bin(FC_OP_DIV, a, b)), -3, -3, 3, 3, INT32_MAX);
  EXPECT_I(eval(mod(a, b, 0)), 1, -1, -1, 1, 0);
  EXPECT_I(eval(mod(a, b, 1)), -1, 1, -1, 1, 0);
  EXPECT_I(eval(bin(FC_OP_ADD, a, b)), -5, 5, -9, 9, INT32_MIN); /* wraps */
  EXPECT_I(eval(bin(FC_OP_MUL, VI(I32, INT32_MAX), VI(I32, 2))), -2);
  EXPECT_I(eval(bin(FC_OP_DIV, VI(I32, INT32_MIN), VI(I32, -1))), INT32_MIN);
  EXPECT_I(eval(bin(FC_OP_DIV, VI(I64, INT64_MIN, 9007199254740993), VI(I64, -1, 1))), INT64_MIN, 9007199254740993);
  EXPECT_I(eval(mod(VI(I64, INT64_MIN), VI(I64, -1), 0)), 0);
  EXPECT_I(eval(bin(FC_OP_SUB, VI(I64, INT64_MIN), VI(I64, 1))), INT64_MAX);
  EXPECT_I(eval(bin(FC_OP_ADD, VI(I64, 9007199254740993), VI(I64, 2))), 9007199254740995);
  EXPECT_I(eval(bin(FC_OP_DIV, VI(U8, 250), VI(U8, 7))), 35);
  EXPECT_I(eval(mod(VI(U8, 250), VI(U8, 7), 0)), 5);
  expect_unsupported(bin(FC_OP_DIV, VI(I32, 1, 2), VI(I32, 1, 0)), "div: integer division by zero");
  expect_unsupported(mod(VI(U16, 1), VI(U16, 0), 1), "mod: integer division by zero");

  EXPECT_I(eval(bin(FC_OP_MAX, VI(I64, -5, 3), VI(I64, 2, -9))), 2, 3);
  EXPECT_I(eval(bin(FC_OP_MIN, VI(U64, -1, 3), VI(U64, 1, 9))), 1, 3); /* UINT64_MAX is large, not -1 */
  FcTensor *mx = eval(bin(FC_OP_MAX, VI(U64, -1), VI(U64, 1)));
  assert_true((uint64_t)fc_tensor_get_i64(mx, 0) == UINT64_MAX);

  EXPECT_I(eval(bin(FC_OP_POW, VI(I32, 3, -2, 2, 7), VI(I32, 4, 3, 31, 0))), 81, -8, INT32_MIN, 1);
  EXPECT_I(eval(bin(FC_OP_POW, VI(I64, 3), VI(I64, 39))), 4052555153018976267);
  EXPECT_I(eval(bin(FC_OP_POW, VI(I32, 4, 2), VF(F32, 2.5, 0.5))), 32, 1);
  expect_unsupported(bin(FC_OP_POW, VI(I32, 2), VI(I32, -1)), "pow: integer raised to a negative power");

  EXPECT_I(eval(bin(FC_OP_BITSHIFT_LEFT, VI(U8, 1, 1, 3, 1), VI(U8, 3, 8, 7, 200))), 8, 0, 128, 0);
  EXPECT_I(eval(bin(FC_OP_BITSHIFT_RIGHT, VI(U8, 200, 200, 255), VI(U8, 3, 8, 7))), 25, 0, 1);
  EXPECT_I(eval(bin(FC_OP_BITSHIFT_RIGHT, VI(I32, -16, 16, -1), VI(I32, 2, 2, 40))), -4, 4, -1);
  EXPECT_I(eval(bin(FC_OP_BITSHIFT_LEFT, VI(U64, 1), VI(U64, 63))), INT64_MIN);
  expect_unsupported(bin(FC_OP_BITSHIFT_LEFT, VI(I32, 1), VI(I32, -1)), "shl: negative shift amount");

  EXPECT_I(eval(bin(FC_OP_AND, VI(BOOL, 0, 0, 1, 1), VI(BOOL, 0, 1, 0, 1))), 0, 0, 0, 1);
  EXPECT_I(eval(bin(FC_OP_OR, VI(BOOL, 0, 0, 1, 1), VI(BOOL, 0, 1, 0, 1))), 0, 1, 1, 1);
  EXPECT_I(eval(bin(FC_OP_XOR, VI(BOOL, 0, 0, 1, 1), VI(BOOL, 0, 1, 0, 1))), 0, 1, 1, 0);
  EXPECT_I(eval(bin(FC_OP_XOR, VI(I16, 0x0ff0), VI(I16, -1))), (int16_t)0xf00f);

  EXPECT_I(eval(bin(FC_OP_LESS, VI(I64, -1, INT64_MIN), VI(I64, 0, INT64_MAX))), 1, 1);
  EXPECT_I(eval(bin(FC_OP_GREATER, VI(U64, -1), VI(U64, 1))), 1); /* 2^64-1 > 1 */
  EXPECT_I(eval(bin(FC_OP_EQUAL, VI(I64, 9007199254740993), VI(I64, 9007199254740992))), 0);
  EXPECT_I(eval(bin(FC_OP_EQUAL, VI(BOOL, 1, 0), VI(BOOL, 1, 1))), 1, 0);
}

static void test_select(void **state) {
  (void)state;
  FcValue *c = cnst(FC_DT_BOOL, 2, DIMS(2, 1), (const uint8_t[]){1, 0});
  FcValue *a = cnst(FC_DT_I64, 2, DIMS(1, 3), I64S(1, 2, INT64_MAX));
  FcValue *b = fc_b_scalar(&B, FC_DT_I64, -7);
  EXPECT_I(eval(fc_b_select(&B, c, a, b)), 1, 2, INT64_MAX, -7, -7, -7);
  FcValue *c2 = VI(BOOL, 0, 1, 1);
  EXPECT_F(eval(fc_b_select(&B, c2, VF(F16, 1, 2, 3), VF(F16, 4, NAN, 6))), 0, 4, 2, 3);
}

/* ---- reductions ----------------------------------------------------------------------------------- */

static void test_reduce(void **state) {
  (void)state;
  FcValue *x = cnst(FC_DT_F32, 3, DIMS(2, 2, 3), F32S(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12));
  EXPECT_F(eval(fc_b_reduce(&B, FC_OP_REDUCE_SUM, x, 1, DIMS(1), false)), 0, 5, 7, 9, 17, 19, 21);
  EXPECT_F(eval(fc_b_reduce(&B, FC_OP_REDUCE_SUM, x, 2, DIMS(0, 2), true)), 0, 30, 48);
  FcValue *mean = fc_b_reduce(&B, FC_OP_REDUCE_MEAN, x, 3, DIMS(0, 1, 2), false);
  EXPECT_F(eval(mean), 0, 6.5);
  EXPECT_F(eval(fc_b_reduce(&B, FC_OP_REDUCE_MAX, x, 1, DIMS(2), false)), 0, 3, 6, 9, 12);
  EXPECT_F(eval(fc_b_reduce(&B, FC_OP_REDUCE_MIN, x, 1, DIMS(0), false)), 0, 1, 2, 3, 4, 5, 6);
  EXPECT_F(eval(fc_b_reduce(&B, FC_OP_REDUCE_PROD, x, 1, DIMS(1), false)), 0, 4, 10, 18, 70, 88, 108);
  FcValue *nanv = VF(F64, 1, NAN, 3);
  EXPECT_F(eval(fc_b_reduce(&B, FC_OP_REDUCE_MAX, nanv, 1, DIMS(0), false)), 0, NAN);
  EXPECT_F(eval(fc_b_reduce(&B, FC_OP_REDUCE_MIN, nanv, 1, DIMS(0), false)), 0, NAN);

  /* Reducing an empty axis gives the identities (mean: NaN). */
  FcValue *e = cnst(FC_DT_F32, 2, DIMS(2, 0), NULL);
  EXPECT_F(eval(fc_b_reduce(&B, FC_OP_REDUCE_SUM, e, 1, DIMS(1), false)), 0, 0, 0);
  EXPECT_F(eval(fc_b_reduce(&B, FC_OP_REDUCE_PROD, e, 1, DIMS(1), false)), 0, 1, 1);
  EXPECT_F(eval(fc_b_reduce(&B, FC_OP_REDUCE_MAX, e, 1, DIMS(1), true)), 0, -INFINITY, -INFINITY);
  EXPECT_F(eval(fc_b_reduce(&B, FC_OP_REDUCE_MEAN, e, 1, DIMS(1), false)), 0, NAN, NAN);
  expect_empty(eval(fc_b_reduce(&B, FC_OP_REDUCE_SUM, e, 1, DIMS(0), false)));
  FcValue *ei = cnst(FC_DT_I16, 2, DIMS(1, 0), NULL);
  EXPECT_I(eval(fc_b_reduce(&B, FC_OP_REDUCE_MAX, ei, 1, DIMS(1), false)), INT16_MIN);
  EXPECT_I(eval(fc_b_reduce(&B, FC_OP_REDUCE_MIN, ei, 1, DIMS(1), false)), INT16_MAX);
  expect_unsupported(fc_b_reduce(&B, FC_OP_REDUCE_MEAN, ei, 1, DIMS(1), false), "reduce_mean: integer mean of an empty set");
  FcValue *eu = cnst(FC_DT_U32, 1, DIMS(0), NULL);
  EXPECT_I(eval(fc_b_reduce(&B, FC_OP_REDUCE_MIN, eu, 1, DIMS(0), false)), UINT32_MAX);
  /* A huge empty tensor whose partial dim products overflow int64. */
  FcValue *huge = cnst(FC_DT_F32, 3, DIMS(0, (int64_t)1 << 40, (int64_t)1 << 40), NULL);
  expect_empty(eval(fc_b_reduce(&B, FC_OP_REDUCE_SUM, huge, 2, DIMS(1, 2), false)));
  expect_empty(eval(fc_b_unary(&B, FC_OP_EXP, huge)));
  FcAttr hax = FC_A_INT(AXIS, 0);
  expect_empty(eval(fc_b_op1(&B, FC_OP_SOFTMAX, &huge, 1, &hax, 1)));

  FcValue *xi = cnst(FC_DT_I64, 2, DIMS(2, 2), I64S(INT64_MAX, 1, -3, 9007199254740993));
  EXPECT_I(eval(fc_b_reduce(&B, FC_OP_REDUCE_SUM, xi, 1, DIMS(1), false)), INT64_MIN, 9007199254740990);
  EXPECT_I(eval(fc_b_reduce(&B, FC_OP_REDUCE_MAX, xi, 1, DIMS(0), false)), INT64_MAX, 9007199254740993);
  EXPECT_I(eval(fc_b_reduce(&B, FC_OP_REDUCE_MIN, xi, 1, DIMS(0), false)), -3, 1);
  EXPECT_I(eval(fc_b_reduce(&B, FC_OP_REDUCE_MEAN, VI(I32, -7, 0), 1, DIMS(0), false)), -3);
  EXPECT_I(eval(fc_b_reduce(&B, FC_OP_REDUCE_PROD, VI(U8, 16, 17), 1, DIMS(0), false)), 16);
  EXPECT_I(eval(fc_b_reduce(&B, FC_OP_REDUCE_MAX, VI(U64, 1, -1, 5), 1, DIMS(0), false)), -1);
  EXPECT_I(eval(fc_b_reduce(&B, FC_OP_REDUCE_MAX, VI(BOOL, 0, 1, 0), 1, DIMS(0), false)), 1);
}

static FcValue *argred(FcOpKind k, FcValue *x, int64_t axis, int64_t keep, int64_t last) {
  FcAttr a[3] = {FC_A_INT(AXIS, axis), FC_A_INT(KEEPDIMS, keep), FC_A_INT(SELECT_LAST_INDEX, last)};
  return fc_b_op1(&B, k, &x, 1, a, 3);
}

static void test_argreduce(void **state) {
  (void)state;
  FcValue *x = cnst(FC_DT_F32, 2, DIMS(2, 4), F32S(1, 5, 5, 2, 3, -1, 7, -1));
  EXPECT_I(eval(argred(FC_OP_ARGMAX, x, 1, 0, 0)), 1, 2);
  EXPECT_I(eval(argred(FC_OP_ARGMAX, x, 1, 1, 1)), 2, 2);
  EXPECT_I(eval(argred(FC_OP_ARGMIN, x, 1, 0, 0)), 0, 1);
  EXPECT_I(eval(argred(FC_OP_ARGMIN, x, 1, 0, 1)), 0, 3);
  EXPECT_I(eval(argred(FC_OP_ARGMAX, x, 0, 0, 0)), 1, 0, 1, 0);
  FcValue *n = VF(F64, 1, NAN, 9, NAN);
  EXPECT_I(eval(argred(FC_OP_ARGMAX, n, 0, 0, 0)), 1);
  EXPECT_I(eval(argred(FC_OP_ARGMIN, n, 0, 0, 1)), 3);
  EXPECT_I(eval(argred(FC_OP_ARGMIN, VI(U64, 5, -1, 2), 0, 0, 0)), 2);
  EXPECT_I(eval(argred(FC_OP_ARGMAX, VI(I64, -9007199254740993, -9007199254740992), 0, 0, 0)), 1);
}

static void test_softmax_norm_cumsum(void **state) {
  (void)state;
  FcValue *x = cnst(FC_DT_F64, 2, DIMS(2, 3), F64S(1, 2, 3, 1000, 1000, -INFINITY));
  FcAttr ax = FC_A_INT(AXIS, 1);
  double s = exp(1.0) + exp(2.0) + exp(3.0);
  EXPECT_F(eval(fc_b_op1(&B, FC_OP_SOFTMAX, &x, 1, &ax, 1)), 1e-15, exp(1.0) / s, exp(2.0) / s, exp(3.0) / s, 0.5, 0.5, 0);
  EXPECT_F(eval(fc_b_op1(&B, FC_OP_LOG_SOFTMAX, &x, 1, &ax, 1)), 1e-15, 1 - log(s), 2 - log(s), 3 - log(s), -log(2.0),
           -log(2.0), -INFINITY);
  FcAttr ax0 = FC_A_INT(AXIS, 0);
  EXPECT_F(eval(fc_b_op1(&B, FC_OP_SOFTMAX, &x, 1, &ax0, 1)), 1e-15, exp(-999.0), exp(-998.0), 1, 1, 1, 0);

  FcValue *ln_x = cnst(FC_DT_F32, 2, DIMS(2, 2), F32S(1, 3, 2, 6));
  FcValue *ops[3] = {ln_x, VF(F32, 2, 1), VF(F32, 0.5, 0)};
  FcAttr la[2] = {FC_A_INT(AXIS, 1), FC_A_FLOAT(EPSILON, 0)};
  FcOp *ln = fc_b_op(&B, FC_OP_LAYER_NORM, ops, 3, 3, la, 2);
  assert_non_null(ln);
  assert_int_equal(fc_op_eval(ln, &M->arena, outs, &D), FC_OK);
  EXPECT_F(outs[0], 0, -1.5, 1, -1.5, 1);
  EXPECT_F(outs[1], 0, 2, 4);
  EXPECT_F(outs[2], 0, 1, 0.5);
  FcValue *ops2[2] = {cnst(FC_DT_F32, 3, DIMS(1, 2, 2), F32S(0, 2, 4, 6)), cnst(FC_DT_F32, 2, DIMS(2, 1), F32S(1, 10))};
  FcAttr la2[2] = {FC_A_INT(AXIS, 1), FC_A_FLOAT(EPSILON, 0)};
  /* mean 3, var 5: (x - 3) / sqrt(5) times scale [[1], [10]] broadcast over the last dim */
  double r5 = 1 / sqrt(5.0);
  EXPECT_F(eval(fc_b_op1(&B, FC_OP_LAYER_NORM, ops2, 2, la2, 2)), 1e-6, -3 * r5, -1 * r5, 10 * r5, 30 * r5);

  FcValue *ci = VI(I32, 1, 2, 3, INT32_MAX);
  FcAttr cs[3] = {FC_A_INT(AXIS, 0), FC_A_INT(EXCLUSIVE, 0), FC_A_INT(REVERSE, 0)};
  EXPECT_I(eval(fc_b_op1(&B, FC_OP_CUMSUM, &ci, 1, cs, 3)), 1, 3, 6, INT32_MIN + 5); /* wraps */
  cs[1].i = 1;
  EXPECT_I(eval(fc_b_op1(&B, FC_OP_CUMSUM, &ci, 1, cs, 3)), 0, 1, 3, 6);
  cs[2].i = 1;
  EXPECT_I(eval(fc_b_op1(&B, FC_OP_CUMSUM, &ci, 1, cs, 3)), INT32_MIN + 4, INT32_MIN + 2, INT32_MAX, 0);
  FcValue *cf = cnst(FC_DT_F32, 2, DIMS(2, 2), F32S(1, 2, 3, 4));
  FcAttr cs2[3] = {FC_A_INT(AXIS, 1), FC_A_INT(EXCLUSIVE, 0), FC_A_INT(REVERSE, 1)};
  EXPECT_F(eval(fc_b_op1(&B, FC_OP_CUMSUM, &cf, 1, cs2, 3)), 0, 3, 2, 7, 4);
}

/* ---- dispatcher ----------------------------------------------------------------------------------- */

static void test_dispatch(void **state) {
  (void)state;
  FcValue *in = fc_graph_add_input(M->graph, fc_type_make(&M->arena, FC_DT_F32, 1, DIMS(2)), "in");
  expect_unsupported(fc_b_unary(&B, FC_OP_EXP, in), "exp: operand 0 is not a constant with data");
  FcAttr ra[5] = {FC_A_TYPE(DTYPE, FC_DT_F32), FC_A_FLOAT(HIGH, 1), FC_A_FLOAT(LOW, 0), FC_A_FLOAT(SEED, 1),
                  FC_A_INTS(SHAPE, DIMS(2), 1)};
  expect_unsupported(fc_b_op1(&B, FC_OP_RANDOM_UNIFORM, NULL, 0, ra, 5), "random_uniform: cannot be evaluated");
  FcValue *k = cnst(FC_DT_I32, 1, DIMS(3), (const int32_t[]){4, 5, 6});
  FcTensor *t = eval(k);
  EXPECT_I(t, 4, 5, 6);
  assert_ptr_not_equal(t->data, fc_value_const(k)->data);

  /* A recorded type that disagrees with the operands is reported, not evaluated. */
  FcValue *sum = bin(FC_OP_ADD, VF(F32, 1, 2), VF(F32, 3, 4));
  sum->type = fc_type_make(&M->arena, FC_DT_F32, 1, DIMS(3));
  assert_int_equal(fc_op_eval(sum->def, &M->arena, outs, &D), FC_ERR_INPUT);
  assert_string_equal(D.msg, "result 0 has type tensor<3xf32> but operands imply tensor<2xf32>");
  fc_diag_init(&D);
  sum->type = fc_type_make(&M->arena, FC_DT_F32, 1, DIMS(2));
  EXPECT_F(eval(sum), 0, 4, 6);

  /* A constant whose data was elided cannot be folded. */
  FcTensor *elided = FC_NEW(&M->arena, FcTensor);
  elided->type = fc_type_make(&M->arena, FC_DT_F32, 1, DIMS(2));
  FcValue *ev = fc_b_const_tensor(&B, elided);
  expect_unsupported(fc_b_unary(&B, FC_OP_NEG, ev), "neg: operand 0 is not a constant with data");
  expect_unsupported(ev, "constant: value has no data");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_unary_float, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unary_int, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cast, setup, teardown),
      cmocka_unit_test_setup_teardown(test_binary_float, setup, teardown),
      cmocka_unit_test_setup_teardown(test_binary_int, setup, teardown),
      cmocka_unit_test_setup_teardown(test_select, setup, teardown),
      cmocka_unit_test_setup_teardown(test_reduce, setup, teardown),
      cmocka_unit_test_setup_teardown(test_argreduce, setup, teardown),
      cmocka_unit_test_setup_teardown(test_softmax_norm_cumsum, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dispatch, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
