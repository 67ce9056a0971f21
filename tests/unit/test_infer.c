/* test_infer.c — shape/dtype inference hooks (ir/infer*.c) through the builder and fc_op_infer.
 *
 * Each test builds small graphs with an FcBuilder and checks the inferred result types, or the status
 * and the one-line message a malformed op produces. `reset()` starts a fresh builder so one test can
 * check several failures in a row.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ir.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))

static FcModule *M;
static FcBuilder B;
static FcDiag D;

static void reset(void) {
  fc_diag_init(&D);
  fc_builder_init(&B, M->graph, &D);
}

static int setup(void **state) {
  (void)state;
  M = fc_module_create("test");
  reset();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  fc_module_destroy(M);
  return 0;
}

static FcValue *input(FcDtype dt, int rank, const int64_t *dims) {
  FcType t = {dt, rank, dims};
  return fc_graph_add_input(M->graph, t, "x");
}
#define IN(dt, ...) input(FC_DT_##dt, NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))
#define IN0(dt) input(FC_DT_##dt, 0, NULL)

static void expect_type(const FcValue *v, const char *want) {
  if (!v) fail_msg("op failed: %s", D.msg);
  char buf[256];
  assert_string_equal(fc_type_str(&v->type, buf, sizeof buf), want);
}

static void expect_err(const void *v, const char *substr) {
  if (v) fail_msg("op succeeded, expected an error with \"%s\"", substr);
  assert_int_equal(D.status, FC_ERR_INPUT);
  if (!strstr(D.msg, substr)) fail_msg("message \"%s\" lacks \"%s\"", D.msg, substr);
  reset();
}

static FcValue *op1(FcOpKind k, FcValue *const *ops, int n, const FcAttr *attrs, int na) {
  return fc_b_op1(&B, k, ops, n, attrs, na);
}

/* ---- element-wise ------------------------------------------------------------------------------- */

static void test_unary(void **state) {
  (void)state;
  FcValue *f = IN(F32, 2, 3), *i = IN(I32, 4), *b = IN(BOOL, 5);
  expect_type(fc_b_unary(&B, FC_OP_NEG, f), "tensor<2x3xf32>");
  expect_type(fc_b_unary(&B, FC_OP_ABS, i), "tensor<4xi32>");
  expect_type(fc_b_unary(&B, FC_OP_EXP, f), "tensor<2x3xf32>");
  expect_type(fc_b_unary(&B, FC_OP_NOT, b), "tensor<5xi1>");
  expect_type(fc_b_unary(&B, FC_OP_BITWISE_NOT, i), "tensor<4xi32>");
  expect_type(fc_b_unary(&B, FC_OP_ISNAN, f), "tensor<2x3xi1>");
  expect_type(fc_b_cast(&B, f, FC_DT_I64), "tensor<2x3xi64>");
  FcAttr inf[2] = {FC_A_INT(DETECT_NEGATIVE, 1), FC_A_INT(DETECT_POSITIVE, 1)};
  expect_type(op1(FC_OP_ISINF, &f, 1, inf, 2), "tensor<2x3xi1>");
  expect_err(op1(FC_OP_ISINF, &f, 1, inf, 1), "isinf: missing attribute 'detect_positive'");
  expect_err(fc_b_unary(&B, FC_OP_EXP, i), "exp: operand must have a float type, not i32");
  expect_err(fc_b_unary(&B, FC_OP_NOT, f), "not: operand must be i1, not f32");
  expect_err(fc_b_unary(&B, FC_OP_BITWISE_NOT, f), "bitwise_not: operand must have an integer type");
  expect_err(fc_b_unary(&B, FC_OP_NEG, b), "neg: operand type must be numeric");
  expect_err(fc_b_unary(&B, FC_OP_ISNAN, i), "isnan: operand must have a float type");
  FcAttr ax = FC_A_INT(AXIS, 1);
  expect_type(op1(FC_OP_SOFTMAX, &f, 1, &ax, 1), "tensor<2x3xf32>");
  FcAttr ax2 = FC_A_INT(AXIS, 2);
  expect_err(op1(FC_OP_SOFTMAX, &f, 1, &ax2, 1), "softmax: axis 2 out of range for rank 2");
  expect_err(op1(FC_OP_SOFTMAX, &f, 1, NULL, 0), "softmax: missing attribute 'axis'");
  FcAttr cs[3] = {FC_A_INT(AXIS, 0), FC_A_INT(EXCLUSIVE, 0), FC_A_INT(REVERSE, 1)};
  expect_type(op1(FC_OP_CUMSUM, &f, 1, cs, 3), "tensor<2x3xf32>");
  cs[2].i = 2;
  expect_err(op1(FC_OP_CUMSUM, &f, 1, cs, 3), "cumsum: attribute 'reverse' must be 0 or 1, got 2");
  /* Wrong counts through the builder are caught by the hook, not by a crash. */
  FcValue *two[2] = {f, f};
  expect_err(op1(FC_OP_EXP, two, 2, NULL, 0), "exp: expects 1 operands, has 2");
  expect_err(fc_b_op(&B, FC_OP_EXP, &f, 1, 2, NULL, 0), "exp: expects 1 results, has 2");
}

static void test_binary(void **state) {
  (void)state;
  FcValue *a = IN(F32, 2, 1, 3), *b = IN(F32, 4, 1), *c = IN(F32, 3, 2), *s = IN0(F32);
  FcValue *i = IN(I32, 4, 1), *bo = IN(BOOL, 3), *u = IN(U8, 3);
  expect_type(fc_b_binary(&B, FC_OP_ADD, a, b), "tensor<2x4x3xf32>");
  expect_type(fc_b_binary(&B, FC_OP_MUL, s, a), "tensor<2x1x3xf32>");
  expect_type(fc_b_binary(&B, FC_OP_MUL, s, s), "tensor<f32>");
  expect_type(fc_b_binary(&B, FC_OP_LESS, a, b), "tensor<2x4x3xi1>");
  expect_type(fc_b_binary(&B, FC_OP_POW, a, i), "tensor<2x4x3xf32>");
  expect_type(fc_b_binary(&B, FC_OP_AND, bo, bo), "tensor<3xi1>");
  expect_type(fc_b_binary(&B, FC_OP_XOR, u, u), "tensor<3xui8>");
  expect_type(fc_b_binary(&B, FC_OP_BITSHIFT_LEFT, u, u), "tensor<3xui8>");
  expect_err(fc_b_binary(&B, FC_OP_ADD, a, c), "add: shapes tensor<2x1x3xf32> and tensor<3x2xf32> do not broadcast");
  expect_err(fc_b_binary(&B, FC_OP_ADD, a, i), "add: operand dtypes differ (f32 and i32)");
  expect_err(fc_b_binary(&B, FC_OP_ADD, bo, bo), "add: operand type must be numeric, not i1");
  expect_err(fc_b_binary(&B, FC_OP_BITSHIFT_RIGHT, a, a), "shr: operands must have an integer type, not f32");
  expect_err(fc_b_binary(&B, FC_OP_OR, a, a), "or: operands must be i1 or integers, not f32");
  expect_err(fc_b_binary(&B, FC_OP_EQUAL, a, i), "equal: operand dtypes differ");
  expect_err(fc_b_binary(&B, FC_OP_MOD, a, a), "mod: missing attribute 'fmod'");
  FcValue *ops[2] = {i, i};
  FcAttr fm = FC_A_INT(FMOD, 0);
  expect_type(op1(FC_OP_MOD, ops, 2, &fm, 1), "tensor<4x1xi32>");
  FcAttr wrong = FC_A_FLOAT(FMOD, 1.0f);
  expect_err(op1(FC_OP_MOD, ops, 2, &wrong, 1), "mod: attribute 'fmod' must be int, not float");

  FcValue *cond = IN(BOOL, 4, 1);
  expect_type(fc_b_select(&B, cond, a, s), "tensor<2x4x3xf32>");
  expect_err(fc_b_select(&B, a, a, a), "select: condition must be i1, not f32");
  expect_err(fc_b_select(&B, cond, a, i), "select: operand dtypes differ (f32 and i32)");
  expect_err(fc_b_select(&B, cond, c, IN(F32, 5)), "do not broadcast");
}

static void test_reduce(void **state) {
  (void)state;
  FcValue *x = IN(F32, 2, 3, 4), *b = IN(BOOL, 2, 3);
  expect_type(fc_b_reduce(&B, FC_OP_REDUCE_SUM, x, 2, DIMS(0, 2), false), "tensor<3xf32>");
  expect_type(fc_b_reduce(&B, FC_OP_REDUCE_MEAN, x, 2, DIMS(0, 2), true), "tensor<1x3x1xf32>");
  expect_type(fc_b_reduce(&B, FC_OP_REDUCE_MAX, x, 3, DIMS(0, 1, 2), false), "tensor<f32>");
  expect_type(fc_b_reduce(&B, FC_OP_REDUCE_MIN, b, 1, DIMS(1), false), "tensor<2xi1>");
  expect_err(fc_b_reduce(&B, FC_OP_REDUCE_SUM, b, 1, DIMS(1), false), "reduce_sum: operand type must be numeric");
  expect_err(fc_b_reduce(&B, FC_OP_REDUCE_SUM, x, 2, DIMS(2, 0), false), "reduce_sum: axes must be sorted and distinct");
  expect_err(fc_b_reduce(&B, FC_OP_REDUCE_SUM, x, 2, DIMS(1, 1), false), "axes must be sorted and distinct");
  expect_err(fc_b_reduce(&B, FC_OP_REDUCE_PROD, x, 1, DIMS(3), false), "reduce_prod: axis 3 out of range for rank 3");
  expect_err(fc_b_reduce(&B, FC_OP_REDUCE_SUM, x, 0, NULL, false), "reduce_sum: axes is empty");
  FcAttr ka = FC_A_INT(KEEPDIMS, 1);
  expect_err(op1(FC_OP_REDUCE_SUM, &x, 1, &ka, 1), "reduce_sum: missing attribute 'axes'");

  FcAttr ar[3] = {FC_A_INT(AXIS, 1), FC_A_INT(KEEPDIMS, 0), FC_A_INT(SELECT_LAST_INDEX, 0)};
  expect_type(op1(FC_OP_ARGMAX, &x, 1, ar, 3), "tensor<2x4xi64>");
  ar[1].i = 1;
  expect_type(op1(FC_OP_ARGMIN, &x, 1, ar, 3), "tensor<2x1x4xi64>");
  ar[0].i = -1;
  expect_err(op1(FC_OP_ARGMIN, &x, 1, ar, 3), "argmin: axis -1 out of range for rank 3");
  FcValue *e = IN(F32, 2, 0);
  ar[0].i = 1;
  expect_err(op1(FC_OP_ARGMAX, &e, 1, ar, 3), "argmax: cannot reduce an empty axis 1");
}

/* ---- nn ------------------------------------------------------------------------------------------ */

static FcValue *conv(FcValue *x, FcValue *w, FcValue *bias, int64_t group, int n, const int64_t *pads,
                     const int64_t *strides, const int64_t *dils) {
  FcValue *ops[3] = {x, w, bias};
  FcAttr a[4] = {FC_A_INTS(DILATIONS, dils, n), FC_A_INT(GROUP, group), FC_A_INTS(PADS, pads, 2 * n),
                 FC_A_INTS(STRIDES, strides, n)};
  return op1(FC_OP_CONV, ops, bias ? 3 : 2, a, 4);
}

static FcValue *conv_blocked(FcValue *x, FcValue *w, FcValue *bias, int64_t group, int64_t block, int64_t stride) {
  FcValue *ops[3] = {x, w, bias};
  const int64_t *d = DIMS(1, 1), *p = DIMS(1, 1, 1, 1), *s = DIMS(stride, stride);
  FcAttr a[5] = {FC_A_INT(BLOCK, block), FC_A_INTS(DILATIONS, d, 2), FC_A_INT(GROUP, group), FC_A_INTS(PADS, p, 4),
                 FC_A_INTS(STRIDES, s, 2)};
  return op1(FC_OP_CONV_BLOCKED, ops, bias ? 3 : 2, a, 5);
}

/* conv_blocked: a blocked [N, C/8, H, W, 8] or plain NCHW input, a [N, M/8, OH, OW, 8] result. */
static void test_conv_blocked(void **state) {
  (void)state;
  FcValue *xb = IN(F32, 1, 2, 9, 9, 8), *xp = IN(F32, 1, 3, 9, 9), *w = IN(F32, 24, 16, 3, 3), *b = IN(F32, 24);
  expect_type(conv_blocked(xb, w, b, 1, 8, 2), "tensor<1x3x5x5x8xf32>");
  expect_type(conv_blocked(xp, IN(F32, 16, 3, 3, 3), IN(F32, 16), 1, 8, 1), "tensor<1x2x9x9x8xf32>");
  expect_type(conv_blocked(xb, IN(F32, 16, 1, 3, 3), IN(F32, 16), 16, 8, 1), "tensor<1x2x9x9x8xf32>");
  expect_err(conv_blocked(xb, w, NULL, 1, 8, 1), "conv_blocked: expects 3 to 12 operands, has 2");
  expect_err(conv_blocked(xb, w, b, 1, 4, 1), "input's last dim is 8, the block 4");
  expect_err(conv_blocked(xb, w, b, 1, 0, 1), "block is 0, must be in [1, 64]");
  expect_err(conv_blocked(xb, IN(F32, 20, 16, 3, 3), IN(F32, 20), 1, 8, 1), "20 output channels are not a multiple of the block 8");
  expect_err(conv_blocked(xb, IN(F32, 24, 8, 3, 3), b, 1, 8, 1), "weight has 8 input channels per group, input has 16 (group 1)");
  expect_type(conv_blocked(xb, IN(F32, 24, 4, 3, 3), IN(F32, 24), 4, 8, 1), "tensor<1x3x9x9x8xf32>");
  expect_err(conv_blocked(xb, IN(F32, 24, 1, 3, 3), IN(F32, 24), 16, 8, 1), "group 16: only 1, or one that divides");
  expect_err(conv_blocked(xp, IN(F32, 3, 1, 3, 3), IN(F32, 3), 3, 8, 1), "group 3: only 1, or one that divides");
  expect_err(conv_blocked(IN(F32, 1, 2, 9, 8), w, b, 1, 8, 1), "weight has 16 input channels per group, input has 2");
  expect_err(conv_blocked(IN(F32, 1, 2, 9, 9, 9, 8), w, b, 1, 8, 1), "input must be [N, C, H, W] or [N, C/B, H, W, B]");
  expect_err(conv_blocked(IN(F16, 1, 2, 9, 9, 8), w, b, 1, 8, 1), "input and weight must be f32");
  expect_err(conv_blocked(xb, w, IN(F32, 16), 1, 8, 1), "bias must be 1-D of 24 output channels");
}

static void test_conv(void **state) {
  (void)state;
  FcValue *x = IN(F32, 1, 3, 32, 32), *w = IN(F32, 8, 3, 3, 3), *bias = IN(F32, 8);
  expect_type(conv(x, w, bias, 1, 2, DIMS(1, 1, 1, 1), DIMS(2, 2), DIMS(1, 1)), "tensor<1x8x16x16xf32>");
  expect_type(conv(x, w, NULL, 1, 2, DIMS(0, 0, 0, 0), DIMS(1, 1), DIMS(2, 2)), "tensor<1x8x28x28xf32>");
  FcValue *w4 = IN(F32, 8, 4, 3, 3);
  expect_err(conv(x, w4, NULL, 1, 2, DIMS(0, 0, 0, 0), DIMS(1, 1), DIMS(1, 1)),
             "conv: weight has 4 input channels per group, input has 3 (group 1)");
  FcValue *xg = IN(F32, 2, 6, 5, 5), *wg = IN(F32, 4, 3, 5, 5);
  expect_type(conv(xg, wg, NULL, 2, 2, DIMS(0, 0, 0, 0), DIMS(1, 1), DIMS(1, 1)), "tensor<2x4x1x1xf32>");
  FcValue *wg3 = IN(F32, 3, 3, 1, 1);
  expect_err(conv(xg, wg3, NULL, 2, 2, DIMS(0, 0, 0, 0), DIMS(1, 1), DIMS(1, 1)), "3 output channels do not split into 2 groups");
  expect_err(conv(x, w, IN(F32, 4), 1, 2, DIMS(0, 0, 0, 0), DIMS(1, 1), DIMS(1, 1)), "bias must be 1-D of 8 output channels");
  expect_err(conv(x, w, NULL, 1, 2, DIMS(0, 0, 0, 0), DIMS(0, 1), DIMS(1, 1)), "conv: stride 0 is 0, must be positive");
  expect_err(conv(x, w, NULL, 1, 1, DIMS(0, 0), DIMS(1), DIMS(1)), "conv: pads has 2 values, expected 4");
  expect_err(conv(x, w, NULL, 0, 2, DIMS(0, 0, 0, 0), DIMS(1, 1), DIMS(1, 1)), "conv: group is 0, must be positive");
  FcValue *small = IN(F32, 1, 3, 2, 2);
  expect_err(conv(small, w, NULL, 1, 2, DIMS(0, 0, 0, 0), DIMS(1, 1), DIMS(1, 1)),
             "conv: spatial dim 0: window of extent 3 does not fit padded input of 2");
  expect_err(conv(IN(F32, 3, 32), w, NULL, 1, 0, NULL, NULL, NULL), "conv: input must have rank >= 3");
  FcValue *huge = IN(F32, 1, 3, 4, 4), *hw = IN(F32, 1, 3, 1, 1);
  expect_err(conv(huge, hw, NULL, 1, 2, DIMS(INT64_MAX, 0, 0, 0), DIMS(1, 1), DIMS(1, 1)), "padded spatial dim 0 overflows");
  expect_err(conv(huge, IN(F32, 1, 3, 3, 3), NULL, 1, 2, DIMS(0, 0, 0, 0), DIMS(1, 1), DIMS(INT64_MAX, 1)),
             "kernel dim 0 (3) is invalid");
  FcValue *ops[2] = {x, w};
  expect_err(op1(FC_OP_CONV, ops, 2, NULL, 0), "conv: missing attribute 'group'");

  /* conv_transpose: out = s*(in-1) + op + (k-1)*d + 1 - pb - pe = 2*4 + 1 + 3 - 2 = 10 */
  FcValue *tx = IN(F32, 1, 4, 5, 5), *tw = IN(F32, 4, 2, 3, 3);
  FcValue *tops[2] = {tx, tw};
  FcAttr ta[5] = {FC_A_INTS(DILATIONS, DIMS(1, 1), 2), FC_A_INT(GROUP, 2), FC_A_INTS(OUTPUT_PADDING, DIMS(1, 0), 2),
                  FC_A_INTS(PADS, DIMS(1, 1, 1, 1), 4), FC_A_INTS(STRIDES, DIMS(2, 2), 2)};
  expect_type(op1(FC_OP_CONV_TRANSPOSE, tops, 2, ta, 5), "tensor<1x4x10x9xf32>");
  ta[3] = FC_A_INTS(PADS, DIMS(10, 0, 10, 0), 4);
  expect_err(op1(FC_OP_CONV_TRANSPOSE, tops, 2, ta, 5), "conv_transpose: output dim 0 would be negative (-8)");
  ta[3] = FC_A_INTS(PADS, DIMS(INT64_MAX, 0, INT64_MAX, 0), 4);
  expect_err(op1(FC_OP_CONV_TRANSPOSE, tops, 2, ta, 5), "conv_transpose: output dim 0 would be negative");
  FcValue *tw2 = IN(F32, 3, 2, 3, 3);
  FcValue *tops2[2] = {tx, tw2};
  expect_err(op1(FC_OP_CONV_TRANSPOSE, tops2, 2, ta, 5), "weight has 3 input channels, input has 4");
}

static FcValue *pool(FcOpKind k, FcValue *x, int n_results, int64_t ceil_mode, int n, const int64_t *ks,
                     const int64_t *pads, const int64_t *strides) {
  FcAttr a[6] = {FC_A_INT(CEIL_MODE, ceil_mode), FC_A_INTS(DILATIONS, DIMS(1, 1, 1), n), FC_A_INTS(KERNEL_SHAPE, ks, n),
                 FC_A_INTS(PADS, pads, 2 * n), FC_A_INTS(STRIDES, strides, n),
                 k == FC_OP_MAX_POOL ? FC_A_INT(STORAGE_ORDER, 0) : FC_A_INT(COUNT_INCLUDE_PAD, 0)};
  FcOp *op = fc_b_op(&B, k, &x, 1, n_results, a, 6);
  return op ? &op->results[n_results - 1] : NULL;
}

static void test_pool(void **state) {
  (void)state;
  FcValue *x = IN(F32, 1, 2, 6, 5);
  expect_type(pool(FC_OP_MAX_POOL, x, 1, 0, 2, DIMS(3, 2), DIMS(0, 1, 0, 1), DIMS(2, 2)), "tensor<1x2x2x3xf32>");
  /* ceil: dim 0 (6-3)/2 -> 1.5 -> 2, +1 = 3; dim 1: padded 7, (7-2)/2 -> 3, +1 = 4, but the 4th window would
   * start at 6 >= 5 + 1 (inside the end padding) and is dropped -> 3. */
  expect_type(pool(FC_OP_MAX_POOL, x, 1, 1, 2, DIMS(3, 2), DIMS(0, 1, 0, 1), DIMS(2, 2)), "tensor<1x2x3x3xf32>");
  expect_type(pool(FC_OP_MAX_POOL, x, 2, 1, 2, DIMS(3, 2), DIMS(0, 1, 0, 1), DIMS(2, 2)), "tensor<1x2x3x3xi64>");
  expect_type(pool(FC_OP_AVG_POOL, x, 1, 0, 2, DIMS(2, 2), DIMS(0, 0, 0, 0), DIMS(1, 1)), "tensor<1x2x5x4xf32>");
  expect_err(pool(FC_OP_AVG_POOL, x, 2, 0, 2, DIMS(2, 2), DIMS(0, 0, 0, 0), DIMS(1, 1)), "avg_pool: expects 1 results, has 2");
  expect_err(pool(FC_OP_AVG_POOL, IN(I32, 1, 1, 4, 4), 1, 0, 2, DIMS(2, 2), DIMS(0, 0, 0, 0), DIMS(1, 1)),
             "avg_pool: operand type i32 is not supported");
  expect_err(pool(FC_OP_MAX_POOL, x, 1, 0, 2, DIMS(7, 2), DIMS(0, 0, 0, 0), DIMS(1, 1)),
             "max_pool: spatial dim 0: window of extent 7 does not fit padded input of 6");
  /* ceil mode on a map smaller than the window: ceil((1 - 2) / 2) + 1 = 1 window where it overhangs by less
   * than a stride (onnxruntime and PyTorch agree), none (an error) at stride 1 */
  FcValue *row = IN(F32, 1, 2, 1, 3);
  expect_type(pool(FC_OP_MAX_POOL, row, 1, 1, 2, DIMS(2, 2), DIMS(0, 0, 0, 0), DIMS(2, 2)), "tensor<1x2x1x2xf32>");
  expect_type(pool(FC_OP_AVG_POOL, row, 1, 1, 2, DIMS(3, 2), DIMS(1, 0, 0, 0), DIMS(2, 2)), "tensor<1x2x1x2xf32>");
  expect_err(pool(FC_OP_MAX_POOL, row, 1, 1, 2, DIMS(2, 2), DIMS(0, 0, 0, 0), DIMS(1, 1)),
             "max_pool: spatial dim 0: window of extent 2 does not fit padded input of 1");
  expect_err(pool(FC_OP_MAX_POOL, row, 1, 0, 2, DIMS(2, 2), DIMS(0, 0, 0, 0), DIMS(2, 2)),
             "max_pool: spatial dim 0: window of extent 2 does not fit padded input of 1");
  expect_err(pool(FC_OP_MAX_POOL, x, 1, 0, 2, DIMS(2, 2), DIMS(2, 0, 0, 0), DIMS(1, 1)),
             "pads of spatial dim 0 must be smaller than the kernel extent 2");
  expect_err(pool(FC_OP_MAX_POOL, x, 1, 0, 2, DIMS(0, 2), DIMS(0, 0, 0, 0), DIMS(1, 1)), "kernel_shape 0 is 0");
  /* ceil mode with a stride near 2^62: the start of the extra window overflows and the window is dropped. */
  int64_t big = ((int64_t)1 << 62) + 1;
  expect_type(pool(FC_OP_MAX_POOL, IN(F32, 1, 1, big + 1, 1), 1, 1, 2, DIMS(1, 1), DIMS(0, 0, 0, 0), DIMS(big - 1, 1)),
              "tensor<1x1x2x1xf32>");
  expect_err(pool(FC_OP_MAX_POOL, x, 1, 0, 1, DIMS(2), DIMS(0, 0), DIMS(1)), "max_pool: kernel_shape has 1 values, expected 2");
}

static void test_matmul_norm(void **state) {
  (void)state;
  FcValue *a = IN(F32, 2, 1, 3, 4), *b = IN(F32, 5, 4, 6), *v = IN(F32, 4);
  expect_type(fc_b_binary(&B, FC_OP_MATMUL, a, b), "tensor<2x5x3x6xf32>");
  expect_type(fc_b_binary(&B, FC_OP_MATMUL, IN(I32, 3, 4), IN(I32, 4, 2)), "tensor<3x2xi32>");
  expect_err(fc_b_binary(&B, FC_OP_MATMUL, b, a), "matmul: contraction dims differ (6 and 3)");
  expect_err(fc_b_binary(&B, FC_OP_MATMUL, a, v), "matmul: operands must have rank >= 2 (have 4 and 1)");
  expect_err(fc_b_binary(&B, FC_OP_MATMUL, IN(F32, 3, 2, 4), IN(F32, 2, 4, 1)), "batch dims");

  FcValue *x = IN(F32, 2, 3, 4), *sc = IN(F32, 4), *bi = IN(F32, 3, 1);
  FcValue *ops[3] = {x, sc, bi};
  FcAttr la[2] = {FC_A_INT(AXIS, 1), FC_A_FLOAT(EPSILON, 1e-5f)};
  FcOp *ln = fc_b_op(&B, FC_OP_LAYER_NORM, ops, 3, 3, la, 2);
  assert_non_null(ln);
  expect_type(&ln->results[0], "tensor<2x3x4xf32>");
  expect_type(&ln->results[1], "tensor<2x1x1xf32>");
  expect_type(&ln->results[2], "tensor<2x1x1xf32>");
  la[0].i = 2;
  expect_err(fc_b_op(&B, FC_OP_LAYER_NORM, ops, 3, 1, la, 2), "layer_norm: bias tensor<3x1xf32> does not broadcast to the normalised shape tensor<4xf32>");
  expect_err(fc_b_op(&B, FC_OP_LAYER_NORM, ops, 3, 4, la, 2), "layer_norm: expects 1 to 3 results, has 4");
  expect_err(fc_b_op(&B, FC_OP_LAYER_NORM, ops, 2, 1, la, 1), "layer_norm: missing attribute 'epsilon'");

  FcAttr tk[4] = {FC_A_INT(AXIS, 1), FC_A_INT(K, 2), FC_A_INT(LARGEST, 1), FC_A_INT(SORTED, 1)};
  FcOp *t = fc_b_op(&B, FC_OP_TOPK, &x, 1, 2, tk, 4);
  assert_non_null(t);
  expect_type(&t->results[0], "tensor<2x2x4xf32>");
  expect_type(&t->results[1], "tensor<2x2x4xi64>");
  tk[1].i = 4;
  expect_err(fc_b_op(&B, FC_OP_TOPK, &x, 1, 2, tk, 4), "topk: k 4 out of range for axis 1 of size 3");
  expect_err(fc_b_op(&B, FC_OP_TOPK, &x, 1, 1, tk, 4), "topk: expects 2 results, has 1");

  expect_type(fc_b_unary(&B, FC_OP_DET, IN(F64, 5, 3, 3)), "tensor<5xf64>");
  expect_type(fc_b_unary(&B, FC_OP_DET, IN(F32, 2, 2)), "tensor<f32>");
  expect_err(fc_b_unary(&B, FC_OP_DET, IN(F32, 2, 3)), "det: matrices are 2x3, not square");

  FcValue *gx = IN(F32, 2, 3, 8, 8), *grid = IN(F32, 2, 5, 6, 2);
  FcValue *gops[2] = {gx, grid};
  FcAttr ga[3] = {FC_A_INT(ALIGN_CORNERS, 0), FC_A_STR(MODE, "bilinear"), FC_A_STR(PADDING_MODE, "zeros")};
  expect_type(op1(FC_OP_GRID_SAMPLE, gops, 2, ga, 3), "tensor<2x3x5x6xf32>");
  ga[1] = FC_A_STR(MODE, "linear");
  expect_err(op1(FC_OP_GRID_SAMPLE, gops, 2, ga, 3), "grid_sample: attribute 'mode' is \"linear\", expected bilinear|nearest|bicubic");

  FcValue *rois = IN(F32, 7, 4), *bidx = IN(I64, 7);
  FcValue *rops[3] = {gx, rois, bidx};
  FcAttr ra[6] = {FC_A_STR(COORDINATE_TRANSFORMATION_MODE, "half_pixel"), FC_A_STR(MODE, "avg"), FC_A_INT(OUTPUT_HEIGHT, 2),
                  FC_A_INT(OUTPUT_WIDTH, 3), FC_A_INT(SAMPLING_RATIO, 0), FC_A_FLOAT(SPATIAL_SCALE, 0.5f)};
  expect_type(op1(FC_OP_ROI_ALIGN, rops, 3, ra, 6), "tensor<7x3x2x3xf32>");
  rops[2] = IN(I64, 6);
  expect_err(op1(FC_OP_ROI_ALIGN, rops, 3, ra, 6), "roi_align: batch_indices must have shape [7]");
}

static FcValue *einsum(const char *eq, FcValue *a, FcValue *b) {
  FcValue *ops[2] = {a, b};
  FcAttr e = FC_A_STR(EQUATION, eq);
  return op1(FC_OP_EINSUM, ops, b ? 2 : 1, &e, 1);
}

static void test_einsum(void **state) {
  (void)state;
  FcValue *a = IN(F32, 2, 3), *b = IN(F32, 3, 4), *sq = IN(F32, 3, 3);
  FcValue *ba = IN(F32, 5, 1, 2, 3), *bb = IN(F32, 7, 3, 4);
  expect_type(einsum("ij,jk->ik", a, b), "tensor<2x4xf32>");
  expect_type(einsum("ij,jk", a, b), "tensor<2x4xf32>");
  expect_type(einsum(" i j , j k -> k i ", a, b), "tensor<4x2xf32>");
  expect_type(einsum("ij->", a, NULL), "tensor<f32>");
  expect_type(einsum("ii->i", sq, NULL), "tensor<3xf32>");
  expect_type(einsum("ii", sq, NULL), "tensor<f32>");
  expect_type(einsum("ji", a, NULL), "tensor<3x2xf32>"); /* implicit output is alphabetical: "ij" */
  expect_type(einsum("...ij,...jk->...ik", ba, bb), "tensor<5x7x2x4xf32>");
  expect_type(einsum("...ij,...jk", ba, bb), "tensor<5x7x2x4xf32>");
  expect_type(einsum("Ab,bc->cA", a, b), "tensor<4x2xf32>");
  /* As in numpy, a label of dim 1 broadcasts against the other operands' dim. */
  expect_type(einsum("ij,jk->ijk", IN(F32, 2, 1), b), "tensor<2x3x4xf32>");
  expect_err(einsum("ij,jk->ik", a, a), "einsum: label 'j' has dims 3 and 2");
  expect_err(einsum("ijk,jk->ik", a, b), "einsum: term 0 of \"ijk,jk->ik\" has 3 labels, operand has rank 2");
  expect_err(einsum("ij,jk,kl->il", a, b), "more terms than the 2 operands");
  expect_err(einsum("ij->iz", a, NULL), "einsum: output label 'z' is not in any input");
  expect_err(einsum("ij->ii", a, NULL), "einsum: output label 'i' appears twice");
  expect_err(einsum("i1->i", a, NULL), "einsum: equation has an invalid character '1'");
  expect_err(einsum("i..j->ij", a, NULL), "einsum: equation has a stray '.'");
  expect_err(einsum("...ij->ij", ba, NULL), "needs '...' for the broadcast dims");
  expect_err(einsum("ij->i->j", a, NULL), "einsum: equation has two '->'");
  expect_err(einsum("ij", sq, sq), "einsum: equation \"ij\" has 1 terms for 2 operands");
}

/* ---- data movement ------------------------------------------------------------------------------- */

static void test_data(void **state) {
  (void)state;
  FcValue *x = IN(F32, 2, 3, 4);
  expect_type(fc_b_reshape(&B, x, 2, DIMS(6, 4)), "tensor<6x4xf32>");
  expect_type(fc_b_reshape(&B, IN(F32, 1), 0, NULL), "tensor<f32>");
  expect_err(fc_b_reshape(&B, x, 2, DIMS(5, 4)), "reshape: cannot reshape 24 elements into 20");
  expect_err(fc_b_reshape(&B, x, 2, DIMS(-1, 4)), "reshape: shape dim 0 is negative (-1)");
  expect_err(fc_b_reshape(&B, IN(F32, 0), 2, DIMS(INT64_MAX, 4)), "reshape: shape has too many elements");
  expect_type(fc_b_transpose(&B, x, DIMS(2, 0, 1)), "tensor<4x2x3xf32>");
  expect_err(fc_b_transpose(&B, x, DIMS(2, 0, 2)), "transpose: perm is not a permutation of 0..2");
  expect_err(fc_b_transpose(&B, x, DIMS(3, 0, 1)), "perm is not a permutation");
  expect_err(op1(FC_OP_TRANSPOSE, &x, 1, NULL, 0), "transpose: missing attribute 'perm'");
  expect_type(fc_b_broadcast(&B, IN(F32, 3, 1), 3, DIMS(2, 3, 5)), "tensor<2x3x5xf32>");
  expect_type(fc_b_broadcast(&B, IN(F32, 1), 1, DIMS(0)), "tensor<0xf32>");
  expect_err(fc_b_broadcast(&B, IN(F32, 3, 2), 2, DIMS(3, 5)), "broadcast: tensor<3x2xf32> does not broadcast to tensor<3x5xf32>");
  expect_err(fc_b_broadcast(&B, IN(F32, 3), 2, DIMS(INT64_MAX, 3)), "broadcast: shape has too many elements");

  FcValue *cs[3] = {x, IN(F32, 2, 5, 4), IN(F32, 2, 1, 4)};
  expect_type(fc_b_concat(&B, cs, 3, 1), "tensor<2x9x4xf32>");
  expect_err(fc_b_concat(&B, cs, 3, 0), "concat: operand 1 tensor<2x5x4xf32> does not match operand 0 tensor<2x3x4xf32> outside axis 0");
  expect_err(fc_b_concat(&B, cs, 3, 3), "concat: axis 3 out of range for rank 3");
  FcValue *big[2] = {IN(F32, INT64_MAX - 1, 0), IN(F32, 2, 0)};
  expect_err(fc_b_concat(&B, big, 2, 0), "concat: concatenated dim overflows");

  expect_type(fc_b_slice(&B, x, DIMS(0, 1, 3), DIMS(2, 3, -1), DIMS(1, 1, -1)), "tensor<2x2x4xf32>");
  expect_type(fc_b_slice(&B, x, DIMS(0, 0, 0), DIMS(2, 3, 4), DIMS(2, 2, 3)), "tensor<1x2x2xf32>");
  expect_type(fc_b_slice(&B, x, DIMS(1, 2, 0), DIMS(1, 0, 4), DIMS(1, 1, INT64_MAX)), "tensor<0x0x1xf32>");
  expect_type(fc_b_slice(&B, x, DIMS(0, 0, 3), DIMS(2, 3, -1), DIMS(1, 1, INT64_MIN)), "tensor<2x3x1xf32>");
  expect_err(fc_b_slice(&B, x, DIMS(0, 0, 0), DIMS(2, 3, 5), DIMS(1, 1, 1)), "slice: axis 2: start 0 / end 5 not normalised for dim 4 and step 1");
  expect_err(fc_b_slice(&B, x, DIMS(0, 0, 4), DIMS(2, 3, 0), DIMS(1, 1, -1)), "not normalised");
  expect_err(fc_b_slice(&B, x, DIMS(0, 0, 0), DIMS(2, 3, 4), DIMS(1, 0, 1)), "slice: step of axis 1 is 0");

  FcAttr pa[2] = {FC_A_STR(MODE, "constant"), FC_A_INTS(PADS, DIMS(1, 0, -1, 2, 0, -1), 6)};
  FcValue *pv[2] = {x, IN0(F32)};
  expect_type(op1(FC_OP_PAD, pv, 2, pa, 2), "tensor<5x3x2xf32>");
  pa[1] = FC_A_INTS(PADS, DIMS(0, 0, -3, 0, 0, -2), 6);
  expect_err(op1(FC_OP_PAD, pv, 2, pa, 2), "pad: padded dim 2 would be negative (-1)");
  pa[1] = FC_A_INTS(PADS, DIMS(0, 0), 2);
  expect_err(op1(FC_OP_PAD, pv, 2, pa, 2), "pad: pads has 2 values, expected 6");
  pa[0] = FC_A_STR(MODE, "mirror");
  expect_err(op1(FC_OP_PAD, pv, 2, pa, 2), "pad: attribute 'mode' is \"mirror\", expected constant|reflect|edge|wrap");
  pa[0] = FC_A_STR(MODE, "constant");
  pa[1] = FC_A_INTS(PADS, DIMS(0, 0, 0, 0, 0, 0), 6);
  pv[1] = IN0(I32);
  expect_err(op1(FC_OP_PAD, pv, 2, pa, 2), "pad: pad value must be a rank-0 f32, not tensor<i32>");

  FcValue *idx = IN(I64, 5, 6), *gv[2] = {x, idx};
  FcAttr ax = FC_A_INT(AXIS, 1);
  expect_type(op1(FC_OP_GATHER, gv, 2, &ax, 1), "tensor<2x5x6x4xf32>");
  gv[1] = IN0(I32);
  expect_type(op1(FC_OP_GATHER, gv, 2, &ax, 1), "tensor<2x4xf32>");
  gv[1] = IN(F32, 2);
  expect_err(op1(FC_OP_GATHER, gv, 2, &ax, 1), "gather: indices must be i32 or i64, not f32");
  gv[1] = IN(I64, 2, 2, 4);
  expect_type(op1(FC_OP_GATHER_ELEMENTS, gv, 2, &ax, 1), "tensor<2x2x4xf32>");
  gv[1] = IN(I64, 2, 2, 5);
  expect_err(op1(FC_OP_GATHER_ELEMENTS, gv, 2, &ax, 1), "gather_elements: indices dim 2 is 5, data has 4");
  FcAttr bd = FC_A_INT(BATCH_DIMS, 1);
  gv[1] = IN(I64, 2, 7, 1);
  expect_type(op1(FC_OP_GATHER_ND, gv, 2, &bd, 1), "tensor<2x7x4xf32>");
  gv[1] = IN(I64, 2, 3);
  expect_err(op1(FC_OP_GATHER_ND, gv, 2, &bd, 1), "gather_nd: indices last dim 3 must be in [1, 2]");
  gv[1] = IN(I64, 3, 1);
  expect_err(op1(FC_OP_GATHER_ND, gv, 2, &bd, 1), "gather_nd: batch dim 0 differs (3 in indices, 2 in data)");

  FcValue *oh[2] = {IN(I64, 2, 3), IN(F32, 2)};
  FcAttr oa[2] = {FC_A_INT(AXIS, 2), FC_A_INT(DEPTH, 10)};
  expect_type(op1(FC_OP_ONE_HOT, oh, 2, oa, 2), "tensor<2x3x10xf32>");
  oa[0].i = 0;
  expect_type(op1(FC_OP_ONE_HOT, oh, 2, oa, 2), "tensor<10x2x3xf32>");
  oa[0].i = 3;
  expect_err(op1(FC_OP_ONE_HOT, oh, 2, oa, 2), "one_hot: axis 3 out of range for rank 3");
  oa[0].i = 0;
  oa[1].i = 0;
  expect_err(op1(FC_OP_ONE_HOT, oh, 2, oa, 2), "one_hot: depth 0 must be positive");

  FcValue *rx = IN(F32, 1, 3, 4, 4);
  FcAttr rs[9] = {FC_A_STR(COORDINATE_TRANSFORMATION_MODE, "half_pixel"), FC_A_FLOAT(CUBIC_COEFF_A, -0.75f),
                  FC_A_INT(EXCLUDE_OUTSIDE, 0), FC_A_FLOAT(EXTRAPOLATION_VALUE, 0), FC_A_STR(MODE, "linear"),
                  FC_A_STR(NEAREST_MODE, "floor"), FC_A_FLOATS(ROI, NULL, 0), FC_A_FLOATS(SCALES, ((const float[]){1, 1, 2, 2}), 4),
                  FC_A_INTS(SIZES, DIMS(1, 3, 8, 8), 4)};
  expect_type(op1(FC_OP_RESIZE, &rx, 1, rs, 9), "tensor<1x3x8x8xf32>");
  rs[8] = FC_A_INTS(SIZES, DIMS(1, 3, 8), 3);
  expect_err(op1(FC_OP_RESIZE, &rx, 1, rs, 9), "resize: sizes has 3 values, operand has rank 4");
}

static void test_misc(void **state) {
  (void)state;
  float data[6] = {1, 2, 3, 4, 5, 6};
  expect_type(fc_b_const(&B, FC_DT_F32, 2, DIMS(2, 3), data), "tensor<2x3xf32>");
  expect_type(fc_b_scalar(&B, FC_DT_I64, 7), "tensor<i64>");
  expect_err(op1(FC_OP_CONSTANT, NULL, 0, NULL, 0), "constant: missing attribute 'value'");

  FcAttr ra[5] = {FC_A_TYPE(DTYPE, FC_DT_F16), FC_A_FLOAT(HIGH, 1), FC_A_FLOAT(LOW, 0), FC_A_FLOAT(SEED, 3),
                  FC_A_INTS(SHAPE, DIMS(4, 5), 2)};
  expect_type(op1(FC_OP_RANDOM_UNIFORM, NULL, 0, ra, 5), "tensor<4x5xf16>");
  expect_err(op1(FC_OP_RANDOM_UNIFORM, NULL, 0, ra, 4), "random_uniform: missing attribute 'shape'");
  ra[0] = FC_A_TYPE(DTYPE, FC_DT_I32);
  expect_err(op1(FC_OP_RANDOM_UNIFORM, NULL, 0, ra, 5), "random_uniform: dtype must be a float type, not i32");

  /* fc_op_infer compares against the recorded types and restores them. */
  FcValue *a = IN(F32, 2, 4), *s = IN(F32, 4);
  FcValue *sum = fc_b_binary(&B, FC_OP_ADD, a, s);
  assert_non_null(sum);
  assert_int_equal(fc_op_infer(sum->def, &D), FC_OK);
  FcType good = sum->type;
  sum->type = fc_type_make(&M->arena, FC_DT_F32, 2, DIMS(2, 3));
  assert_int_equal(fc_op_infer(sum->def, &D), FC_ERR_INPUT);
  assert_string_equal(D.msg, "result 0 has type tensor<2x3xf32> but operands imply tensor<2x4xf32>");
  char buf[64];
  assert_string_equal(fc_type_str(&sum->type, buf, sizeof buf), "tensor<2x3xf32>");
  sum->type = good;
  reset();
  /* A failing hook leaves the recorded types alone too. */
  fc_op_set_operand(sum->def, 1, IN(F32, 3));
  assert_int_equal(fc_op_infer(sum->def, &D), FC_ERR_INPUT);
  assert_non_null(strstr(D.msg, "add: shapes tensor<2x4xf32> and tensor<3xf32> do not broadcast"));
  assert_string_equal(fc_type_str(&sum->type, buf, sizeof buf), "tensor<2x4xf32>");
  reset();

  FcValue *outs[1] = {sum};
  FcOp *ret = fc_graph_set_outputs(M->graph, outs, NULL, 1);
  assert_int_equal(fc_op_infer(ret, &D), FC_OK);
}

/* Every op's results are held to the per-tensor limit where inference finishes, whatever the hook
 * computed: a broadcast, a pad and a tile whose results would need 2^42 bytes are refused as over a
 * limit; the same ops just under it build. */
static void test_result_size_limit(void **state) {
  (void)state;
  FcValue *x = IN(F32, 1);
  FcAttr big = FC_A_INTS(SHAPE, DIMS((int64_t)1 << 40), 1);
  assert_null(op1(FC_OP_BROADCAST, &x, 1, &big, 1));
  assert_int_equal(D.status, FC_ERR_LIMIT);
  assert_non_null(strstr(D.msg, "broadcast: result 0 (tensor<1099511627776xf32>) is larger than the limit of"));
  reset();
  FcAttr fits = FC_A_INTS(SHAPE, DIMS((int64_t)1 << 32), 1); /* 16 GiB: exactly the limit */
  expect_type(op1(FC_OP_BROADCAST, &x, 1, &fits, 1), "tensor<4294967296xf32>");
  FcAttr pad[2] = {FC_A_STR(MODE, "constant"), FC_A_INTS(PADS, DIMS(0, (int64_t)1 << 40), 2)};
  assert_null(op1(FC_OP_PAD, &x, 1, pad, 2));
  assert_int_equal(D.status, FC_ERR_LIMIT);
  reset();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_unary, setup, teardown),
      cmocka_unit_test_setup_teardown(test_binary, setup, teardown),
      cmocka_unit_test_setup_teardown(test_reduce, setup, teardown),
      cmocka_unit_test_setup_teardown(test_conv, setup, teardown),
      cmocka_unit_test_setup_teardown(test_conv_blocked, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pool, setup, teardown),
      cmocka_unit_test_setup_teardown(test_matmul_norm, setup, teardown),
      cmocka_unit_test_setup_teardown(test_einsum, setup, teardown),
      cmocka_unit_test_setup_teardown(test_data, setup, teardown),
      cmocka_unit_test_setup_teardown(test_misc, setup, teardown),
      cmocka_unit_test_setup_teardown(test_result_size_limit, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
