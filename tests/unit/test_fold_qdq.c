/* test_fold_qdq.c — unit tests of the fold_qdq pass (passes/fold_qdq.c) on the values it computes.
 *
 * Each graph is a quantised layer written the QDQ way (dequantize -> conv/matmul -> [relu] -> quantize) with
 * a constant input, at awkward sizes (odd channel counts, K not a multiple of 4, stride 2, asymmetric
 * padding, per-channel weight scales and zero points). It is built twice:
 *   - fold_qdq, then fold: the quantised op is evaluated by its reference evaluator. The result must equal,
 *     bit for bit, the integer formula of qspec §2 computed here from the same integers (the bias converted
 *     to i32 by rne(b / (sx*sw[c])), a ReLU's range [zy, qmax]): this checks the parameters the pass chose.
 *   - lower_quant, then fold: the f32 emulation of the same graph (what runs without fold_qdq). The two may
 *     differ by rounding: the emulation sums dequantized f32 products and adds the exact f32 bias, the
 *     integer op adds a bias rounded to units of sx*sw[c] (at most half a unit, i.e. half an output step
 *     times sx*sw[c]/sy < 1 here) and rounds once. So quantised outputs may differ by at most one step; an
 *     f32 output by at most 0.5*sx*sw[c] (the bias rounding) plus 1e-5 of the largest |y| (f32 summation).
 *     A wrong scale, zero point, channel, transposition or bias is off by many steps.
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

static void run(T *t, const char *pass) { t_run_pass(t, pass, target); }

/* A deterministic pseudo-random sequence (LCG), so failures reproduce. */
static uint32_t rng_state;
static uint32_t rnd(void) {
  rng_state = rng_state * 1664525u + 1013904223u;
  return rng_state >> 8;
}

static FcValue *qconst(T *t, const FcQuant *q, int rank, const int64_t *dims, const void *data) {
  FcArena *a = &t->m->arena;
  FcTensor *c = fc_tensor_new(a, fc_type_make_quant(a, q, rank, dims));
  memcpy((void *)c->data, data, (size_t)c->nbytes);
  return fc_b_const_tensor(&t->b, c);
}

/* The number of ops of `kind` carrying a qtype attribute, and of dequantize ops left. */
static int count_quantised(T *t, FcOpKind kind) {
  int n = 0;
  fc_graph_for_each_op(t->m->graph, op) n += op->kind == kind && fc_op_attr(op, FC_ATTR_QTYPE) != NULL;
  return n;
}

static int count_kind(T *t, FcOpKind kind) {
  int n = 0;
  fc_graph_for_each_op(t->m->graph, op) n += op->kind == kind;
  return n;
}

static const FcTensor *output_const(T *t) {
  const FcTensor *c = fc_value_const(fc_graph_output(t->m->graph, 0));
  if (!c) fail_msg("the output did not fold to a constant");
  return c;
}

static int64_t rne_f(float v) { return (int64_t)nearbyintf(v); }
static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ---- conv ---------------------------------------------------------------------------------------------- */

enum { C = 3, H = 7, W = 6, M = 5, KH = 3, KW = 2, SH = 2, SW = 2, OH = 4, OW = 3 };
static const int64_t PADS[4] = {1, 0, 1, 1}; /* top, left, bottom, right: OH = (7+2-3)/2+1, OW = (6+1-2)/2+1 */

static uint8_t cx[C * H * W];
static int8_t cw[M * C * KH * KW];
static float cb[M];
static const double SX = 0.05, SY = 0.07, SWS[M] = {0.011, 0.023, 0.0075, 0.031, 0.019};
static const int64_t ZX = 7, ZY = 11, ZWS[M] = {0, -2, 3, 1, -1};

static void conv_data(void) {
  rng_state = 12345;
  for (int i = 0; i < C * H * W; i++) cx[i] = (uint8_t)(rnd() % 256);
  for (int i = 0; i < M * C * KH * KW; i++) cw[i] = (int8_t)((int)(rnd() % 255) - 127);
  for (int m = 0; m < M; m++) cb[m] = (float)((int)(rnd() % 2001) - 1000) / 400.0f; /* within +-2.5 */
}

/* dequantize(x) -> conv(., dequantize(w), b) -> relu -> quantize (quant_out) or -> relu only (f32). */
static void build_conv(T *t, bool quant_out) {
  t_init(t);
  FcQuant qx = {FC_DT_U8, FC_DT_F32, 0, 255, -1, 1, &SX, &ZX};
  FcQuant qw = {FC_DT_I8, FC_DT_F32, -128, 127, 0, M, SWS, ZWS};
  FcQuant qy = {FC_DT_U8, FC_DT_F32, 0, 255, -1, 1, &SY, &ZY};
  const int64_t xd[4] = {1, C, H, W}, wd[4] = {M, C, KH, KW}, bd[1] = {M};
  FcValue *x = fc_b_dequantize(&t->b, qconst(t, &qx, 4, xd, cx));
  FcValue *w = fc_b_dequantize(&t->b, qconst(t, &qw, 4, wd, cw));
  FcValue *ops[3] = {x, w, fc_b_const(&t->b, FC_DT_F32, 1, bd, cb)};
  const int64_t ones[2] = {1, 1}, strides[2] = {SH, SW};
  FcAttr a[4] = {FC_A_INTS(DILATIONS, ones, 2), FC_A_INT(GROUP, 1), FC_A_INTS(PADS, PADS, 4),
                 FC_A_INTS(STRIDES, strides, 2)};
  FcValue *y = fc_b_unary(&t->b, FC_OP_RELU, fc_b_op1(&t->b, FC_OP_CONV, ops, 3, a, 4));
  if (quant_out) y = fc_b_scast(&t->b, fc_b_quantize(&t->b, y, &qy), NULL);
  outputs(t, &y, 1);
}

/* acc[m, oh, ow] = sum (x - zx)(w - zw[m]) + rne(b[m] / (sx*sw[m])), padding reading x = zx. */
static int64_t conv_acc(int m, int oh, int ow) {
  int64_t acc = (int64_t)nearbyint(cb[m] / (SX * SWS[m]));
  for (int c = 0; c < C; c++)
    for (int kh = 0; kh < KH; kh++)
      for (int kw = 0; kw < KW; kw++) {
        int ih = oh * SH - (int)PADS[0] + kh, iw = ow * SW - (int)PADS[1] + kw;
        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
        acc += (cx[(c * H + ih) * W + iw] - ZX) * (cw[((m * C + c) * KH + kh) * KW + kw] - ZWS[m]);
      }
  return acc;
}

static void test_conv_relu_quantize(void **state) {
  (void)state;
  conv_data();
  T t, e;
  build_conv(&t, true);
  run(&t, "fold_qdq");
  assert_int_equal(count_quantised(&t, FC_OP_CONV), 1);
  assert_int_equal(count_kind(&t, FC_OP_DEQUANTIZE), 0);
  assert_int_equal(count_kind(&t, FC_OP_RELU), 0);
  fc_graph_for_each_op(t.m->graph, op) {
    if (op->kind != FC_OP_CONV) continue;
    const FcQuant *q = op->results[0].type.quant;
    assert_non_null(q);
    assert_int_equal(q->qmin, ZY); /* the relu */
    assert_int_equal(q->qmax, 255);
  }
  run(&t, "fold");
  const uint8_t *got = output_const(&t)->data;

  build_conv(&e, true);
  run(&e, "lower_quant");
  run(&e, "fold");
  const uint8_t *emu = output_const(&e)->data;

  int off_by_one = 0;
  for (int m = 0; m < M; m++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++) {
        int i = (m * OH + oh) * OW + ow;
        float mult = (float)(SX * SWS[m]) / (float)SY;
        int64_t want = clamp64(rne_f((float)conv_acc(m, oh, ow) * mult) + ZY, ZY, 255);
        if (got[i] != want) fail_msg("y[%d, %d, %d] = %d, the integer formula gives %lld", m, oh, ow, got[i], (long long)want);
        int d = abs((int)got[i] - (int)emu[i]);
        if (d > 1) fail_msg("y[%d, %d, %d] = %d, the f32 emulation %d", m, oh, ow, got[i], emu[i]);
        off_by_one += d;
      }
  print_message("conv: %d of %d outputs one step from the f32 emulation\n", off_by_one, M * OH * OW);
  fc_module_destroy(t.m);
  fc_module_destroy(e.m);
}

/* Without a quantize after it the op ends the quantised chain: qtype f32, the relu stays an f32 op. */
static void test_conv_f32_result(void **state) {
  (void)state;
  conv_data();
  T t, e;
  build_conv(&t, false);
  run(&t, "fold_qdq");
  assert_int_equal(count_quantised(&t, FC_OP_CONV), 1);
  assert_int_equal(count_kind(&t, FC_OP_RELU), 1);
  run(&t, "fold");
  const float *got = output_const(&t)->data;
  build_conv(&e, false);
  run(&e, "lower_quant");
  run(&e, "fold");
  const float *emu = output_const(&e)->data;
  float ymax = 0;
  for (int i = 0; i < M * OH * OW; i++) ymax = fmaxf(ymax, fabsf(emu[i]));
  for (int m = 0; m < M; m++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++) {
        int i = (m * OH + oh) * OW + ow;
        float want = fmaxf((float)conv_acc(m, oh, ow) * (float)(SX * SWS[m]), 0.0f);
        if (got[i] != want) fail_msg("y[%d, %d, %d] = %g, the integer formula gives %g", m, oh, ow, got[i], want);
        double tol = 0.5 * SX * SWS[m] + 1e-5 * ymax;
        if (fabs(got[i] - emu[i]) > tol)
          fail_msg("y[%d, %d, %d] = %g, the f32 emulation %g (tolerance %g)", m, oh, ow, got[i], emu[i], tol);
      }
  fc_module_destroy(t.m);
  fc_module_destroy(e.m);
}

/* ---- matmul ---------------------------------------------------------------------------------------------- */

enum { B = 2, MR = 3, K = 7, N = 5 };
static uint8_t ma[B * MR * K];
static int8_t mb[K * N]; /* [K, N]; the transposed case stores it as [N, K] */
static float mbias[N];
static const double SA = 0.031, SYM = 0.043, SBS[N] = {0.02, 0.013, 0.027, 0.009, 0.017};
static const int64_t ZA = 131, ZYM = -3, ZBS[N] = {0, 1, -1, 2, 0};

static void matmul_data(void) {
  rng_state = 777;
  for (int i = 0; i < B * MR * K; i++) ma[i] = (uint8_t)(rnd() % 256);
  for (int i = 0; i < K * N; i++) mb[i] = (int8_t)((int)(rnd() % 255) - 127);
  for (int n = 0; n < N; n++) mbias[n] = (float)((int)(rnd() % 2001) - 1000) / 300.0f;
}

/* dequantize(a) [B, MR, K] x dequantize(b) [K, N] (or transpose(dequantize(b [N, K])), Gemm's transB) + bias,
 * quantized to i8. */
static void build_matmul(T *t, bool transposed) {
  t_init(t);
  FcQuant qa = {FC_DT_U8, FC_DT_F32, 0, 255, -1, 1, &SA, &ZA};
  FcQuant qb = {FC_DT_I8, FC_DT_F32, -128, 127, transposed ? 0 : 1, N, SBS, ZBS};
  FcQuant qy = {FC_DT_I8, FC_DT_F32, -128, 127, -1, 1, &SYM, &ZYM};
  const int64_t ad[3] = {B, MR, K}, bd[2] = {K, N}, btd[2] = {N, K}, nd[1] = {N};
  FcValue *a = fc_b_dequantize(&t->b, qconst(t, &qa, 3, ad, ma)), *b;
  if (transposed) {
    static int8_t bt[N * K];
    for (int k = 0; k < K; k++)
      for (int n = 0; n < N; n++) bt[n * K + k] = mb[k * N + n];
    static const int64_t swap[2] = {1, 0};
    b = fc_b_transpose(&t->b, fc_b_dequantize(&t->b, qconst(t, &qb, 2, btd, bt)), swap);
  } else {
    b = fc_b_dequantize(&t->b, qconst(t, &qb, 2, bd, mb));
  }
  FcValue *y = fc_b_binary(&t->b, FC_OP_MATMUL, a, b);
  y = fc_b_binary(&t->b, FC_OP_ADD, y, fc_b_const(&t->b, FC_DT_F32, 1, nd, mbias));
  y = fc_b_scast(&t->b, fc_b_quantize(&t->b, y, &qy), NULL);
  outputs(t, &y, 1);
}

static void check_matmul(bool transposed) {
  matmul_data();
  T t, e;
  build_matmul(&t, transposed);
  run(&t, "fold_qdq");
  assert_int_equal(count_quantised(&t, FC_OP_MATMUL), 1);
  assert_int_equal(count_kind(&t, FC_OP_ADD), 0);      /* the bias went into the op */
  assert_int_equal(count_kind(&t, FC_OP_TRANSPOSE), 0); /* the weight was transposed at compile time */
  run(&t, "fold");
  const int8_t *got = output_const(&t)->data;
  build_matmul(&e, transposed);
  run(&e, "lower_quant");
  run(&e, "fold");
  const int8_t *emu = output_const(&e)->data;
  for (int r = 0; r < B * MR; r++)
    for (int n = 0; n < N; n++) {
      int64_t acc = (int64_t)nearbyint(mbias[n] / (SA * SBS[n]));
      for (int k = 0; k < K; k++) acc += (ma[r * K + k] - ZA) * (mb[k * N + n] - ZBS[n]);
      int64_t want = clamp64(rne_f((float)acc * (float)(SA * SBS[n] / SYM)) + ZYM, -128, 127);
      int i = r * N + n;
      if (got[i] != want) fail_msg("y[%d, %d] = %d, the integer formula gives %lld", r, n, got[i], (long long)want);
      if (abs(got[i] - emu[i]) > 1) fail_msg("y[%d, %d] = %d, the f32 emulation %d", r, n, got[i], emu[i]);
    }
  fc_module_destroy(t.m);
  fc_module_destroy(e.m);
}

static void test_matmul_bias(void **state) {
  (void)state;
  check_matmul(false);
}

static void test_gemm_transposed_weight(void **state) {
  (void)state;
  check_matmul(true);
}

static float f32_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* The requantisation multiplier rounds twice in f32, as onnxruntime's QLinearConv forms it: in a QDQ
 * ResNet-50 exported by PyTorch (layer1.2.conv1, channel 63) acc = 17445 then gives 41 as onnxruntime does,
 * where the f32 of the exact quotient (0.002321582) gives 17445 · m = 40.5 and rounds to 40. */
static void test_multiplier_rounds_as_onnxruntime(void **state) {
  (void)state;
  double sx = f32_bits(1031049630u), sw = f32_bits(985258977u), sy = f32_bits(1024811291u);
  float m = fc_quant_multiplier(sx, sw, sy), exact = (float)(sx * sw / sy);
  assert_true(m == (float)(sx * sw) / (float)sy);
  assert_true(m != exact);
  assert_int_equal((int)rintf((float)17445 * m), 41);
  assert_int_equal((int)rintf((float)17445 * exact), 40);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_multiplier_rounds_as_onnxruntime),
      cmocka_unit_test(test_conv_relu_quantize),
      cmocka_unit_test(test_conv_f32_result),
      cmocka_unit_test(test_matmul_bias),
      cmocka_unit_test(test_gemm_transposed_weight),
  };
  return cmocka_run_group_tests(tests, setup_target, teardown_target);
}
