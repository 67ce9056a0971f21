/* test_winograd.c — codegen/kernel_winograd.c: 3×3 stride-1 convolutions through Winograd F(4×4, 3×3)
 * and F(2×2, 3×3), compiled and run, against a convolution computed in double precision here.
 *
 * Each case builds a one-conv module (constant weights and bias; optionally a residual operand and a
 * fused epilogue "add x o3; relu s0"), generates code for AVX2 (x86-64-v3, which every host that runs
 * the tests has: the tile size is chosen per target), checks from the LLVM module that the Winograd
 * kernel was chosen and with which tile size (the transformed filters are one global, `wino_u`, of
 * a²·packed-size floats: a² = 36 for F(4×4), 16 for F(2×2)), JIT-compiles and runs it on 1 and on 2
 * threads. The outputs of the two runs must be bit-identical (each output has one task and a
 * fixed summation order), and every element must lie within a bound of the exact result scaled by the
 * output's magnitude: Winograd's transforms amplify rounding, more for F(4×4) than for F(2×2), so the
 * bounds are 2e-5 and 5e-6 of the largest |output| (the ResNet-18 end-to-end test is the accuracy test
 * at scale; these bounds catch any wrong tap, tile, mask or transform, which errs by O(1)).
 *
 * The shapes cover: tile rows of even and odd length (F(4×4) loads adjacent tile pairs as one vector
 * only when they are), tiles cut by the right and bottom edges, no padding and asymmetric padding,
 * batches whose tile blocks cross images, an image smaller than one tile, output channels not a multiple
 * of the microkernel's rows, channels beyond one K-block (256), and M-blocks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <math.h>

#include "codegen.h"
#include "flowrt.h"

typedef struct Case {
  int64_t N, C, H, W, M;
  int64_t pads[4]; /* top, left, bottom, right */
  bool residual;   /* a fourth operand added before a ReLU, as a fused epilogue */
  int variant;     /* 4 or 2: the tile size the kernel must have chosen */
} Case;

/* Deterministic values in [-1, 1). */
static uint64_t rng_state;
static float rnd(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(rng_state >> 40) / (double)(1ull << 23) - 1.0);
}

static FcAttr ints_attr(FcAttrName n, const int64_t *v, int count) {
  FcAttr a = {.name = n, .kind = FC_AK_INTS};
  a.ints.v = v;
  a.ints.n = count;
  return a;
}

/* The number of floats of the `wino_u` global, 0 if there is none. */
static int64_t wino_floats(LLVMModuleRef mod) {
  LLVMValueRef g = LLVMGetNamedGlobal(mod, "wino_u");
  if (!g) return 0;
  return (int64_t)LLVMGetArrayLength2(LLVMTypeOf(LLVMGetInitializer(g))) / 4;
}

static void conv_ref(const Case *c, const float *x, const float *w, const float *bias, const float *res,
                     int64_t OH, int64_t OW, double *y) {
  for (int64_t n = 0; n < c->N; n++)
    for (int64_t m = 0; m < c->M; m++)
      for (int64_t oy = 0; oy < OH; oy++)
        for (int64_t ox = 0; ox < OW; ox++) {
          double s = bias[m];
          for (int64_t ci = 0; ci < c->C; ci++)
            for (int ky = 0; ky < 3; ky++)
              for (int kx = 0; kx < 3; kx++) {
                int64_t iy = oy + ky - c->pads[0], ix = ox + kx - c->pads[1];
                if (iy < 0 || iy >= c->H || ix < 0 || ix >= c->W) continue;
                s += (double)w[((m * c->C + ci) * 3 + ky) * 3 + kx] * x[((n * c->C + ci) * c->H + iy) * c->W + ix];
              }
          int64_t at = ((n * c->M + m) * OH + oy) * OW + ox;
          if (c->residual) {
            s += res[at];
            if (s < 0) s = 0;
          }
          y[at] = s;
        }
}

static void run_case(const Case *c) {
  int64_t OH = c->H + c->pads[0] + c->pads[2] - 2, OW = c->W + c->pads[1] + c->pads[3] - 2;
  int64_t nx = c->N * c->C * c->H * c->W, nw = c->M * c->C * 9, ny = c->N * c->M * OH * OW;
  float *x = malloc((size_t)nx * 4), *w = malloc((size_t)nw * 4), *bias = malloc((size_t)c->M * 4);
  float *res = malloc((size_t)ny * 4), *y1 = malloc((size_t)ny * 4), *y2 = malloc((size_t)ny * 4);
  double *ref = malloc((size_t)ny * sizeof *ref);
  assert_non_null(x);
  assert_non_null(w);
  assert_non_null(bias);
  assert_non_null(res);
  assert_non_null(y1);
  assert_non_null(y2);
  assert_non_null(ref);
  rng_state = (uint64_t)(c->C * 1000003 + c->H * 1009 + c->M);
  for (int64_t i = 0; i < nx; i++) x[i] = rnd();
  /* He-like scale, so outputs are O(1) whatever C is */
  for (int64_t i = 0; i < nw; i++) w[i] = rnd() * (float)sqrt(6.0 / (9.0 * (double)c->C));
  for (int64_t i = 0; i < c->M; i++) bias[i] = rnd();
  for (int64_t i = 0; i < ny; i++) res[i] = rnd();
  conv_ref(c, x, w, bias, res, OH, OW, ref);

  FcModule *m = fc_module_create("winograd");
  FcDiag diag;
  fc_diag_init(&diag);
  FcBuilder b;
  fc_builder_init(&b, m->graph, &diag);
  int64_t xd[4] = {c->N, c->C, c->H, c->W}, wd[4] = {c->M, c->C, 3, 3}, yd[4] = {c->N, c->M, OH, OW};
  FcValue *xv = fc_graph_add_input(m->graph, fc_type_make(&m->arena, FC_DT_F32, 4, xd), "x");
  FcValue *ops[4] = {xv, fc_b_const(&b, FC_DT_F32, 4, wd, w), fc_b_const(&b, FC_DT_F32, 1, &c->M, bias), NULL};
  int nops = 3;
  if (c->residual) ops[nops++] = fc_graph_add_input(m->graph, fc_type_make(&m->arena, FC_DT_F32, 4, yd), "r");
  static const int64_t ones[2] = {1, 1};
  FcAttr attrs[5];
  int na = 0;
  attrs[na++] = ints_attr(FC_ATTR_DILATIONS, ones, 2);
  FcEwProgram add_relu;
  assert_null(fc_ew_program_parse("add x o3; relu s0", &add_relu));
  if (c->residual) attrs[na++] = FC_A_PROGRAM(EPILOGUE, &add_relu);
  attrs[na++] = (FcAttr){.name = FC_ATTR_GROUP, .kind = FC_AK_INT, .i = 1};
  attrs[na++] = ints_attr(FC_ATTR_PADS, c->pads, 4);
  attrs[na++] = ints_attr(FC_ATTR_STRIDES, ones, 2);
  FcValue *yv = fc_b_op1(&b, FC_OP_CONV, ops, nops, attrs, na);
  const char *oname = "y";
  fc_graph_set_outputs(m->graph, &yv, &oname, 1);
  assert_int_equal(fc_b_status(&b), FC_OK);
  assert_int_equal(fc_verify(m, &diag), FC_OK);

  /* AVX2 explicitly: the cost model picks the variant per target, and the expected variants are AVX2's */
  FcCodegenOptions o = {.cpu = "x86-64-v3", .opt_level = 2};
  FcTarget *target = NULL;
  assert_int_equal(fc_target_resolve(&o, &target, &diag), FC_OK);
  /* The decision the layout pass asks is the one codegen takes. */
  FcConvShape shape;
  assert_true(fc_conv_shape_of(yv->def, &shape));
  assert_int_equal(fc_conv_winograd_variant(target, &shape), c->variant);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  FcStatus st = fc_codegen_module(m, &o, ctx, target, &mod, &diag);
  if (st != FC_OK) fail_msg("codegen: %s", diag.msg);
  int64_t uf = wino_floats(mod);
  /* a² · ceil(M / mr) · mr · C floats, for some microkernel height mr in 4..16 */
  int64_t a2 = (int64_t)(c->variant + 2) * (c->variant + 2), per = uf / (a2 * c->C);
  if (uf == 0 || uf % (a2 * c->C) != 0 || per < c->M || per >= c->M + 16)
    fail_msg("N%lld C%lld %lldx%lld M%lld: expected F(%d×%d) (wino_u of %lld floats)", (long long)c->N,
             (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->M, c->variant, c->variant,
             (long long)uf);
  assert_int_equal(fc_codegen_optimize(mod, fc_target_tm(target), 2, &diag), FC_OK);
  fc_target_free(target);
  FcJit *jit = NULL;
  st = fc_jit_create(mod, ctx, &jit, &diag);
  if (st != FC_OK) fail_msg("jit: %s", diag.msg);
  const FrtModel *model = fc_jit_model(jit);
  size_t wsz = frt_model_workspace_size(model);
  void *ws = aligned_alloc(64, (wsz + 63) / 64 * 64 + 64);
  assert_non_null(ws);
  const void *in[2] = {x, res};
  for (int threads = 1; threads <= 2; threads++) {
    FrtError err;
    FrtPool *pool = frt_pool_create(threads, &err);
    assert_non_null(pool);
    void *out[1] = {threads == 1 ? y1 : y2};
    if (frt_model_run(model, in, out, ws, pool, &err) != FRT_OK) fail_msg("run: %s", err.msg);
    frt_pool_destroy(pool);
  }
  assert_memory_equal(y1, y2, (size_t)ny * 4);

  double scale = 0, worst = 0;
  int64_t at = 0;
  for (int64_t i = 0; i < ny; i++) scale = fmax(scale, fabs(ref[i]));
  for (int64_t i = 0; i < ny; i++) {
    double e = fabs((double)y1[i] - ref[i]);
    if (!(e <= worst)) {
      worst = e;
      at = i;
    }
  }
  double bound = (c->variant == 4 ? 2e-5 : 5e-6) * scale;
  if (!(worst <= bound))
    fail_msg("N%lld C%lld %lldx%lld M%lld F(%d): element %lld is %.9g, want %.9g (error %.3g > %.3g)", (long long)c->N,
             (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->M, c->variant, (long long)at,
             (double)y1[at], ref[at], worst, bound);
  free(ws);
  fc_jit_destroy(jit);
  fc_module_destroy(m);
  free(x);
  free(w);
  free(bias);
  free(res);
  free(y1);
  free(y2);
  free(ref);
}

/* F(4×4): tile rows of even length (pairs always adjacent), odd length (pairs checked per group), rows cut
 * by the right and bottom edges, batches, epilogue. */
static void test_f4(void **state) {
  (void)state;
  static const Case cases[] = {
      {.N = 1, .C = 32, .H = 16, .W = 16, .M = 32, .pads = {1, 1, 1, 1}, .variant = 4},
      {.N = 2, .C = 24, .H = 20, .W = 20, .M = 20, .pads = {1, 1, 1, 1}, .variant = 4},
      {.N = 1, .C = 40, .H = 17, .W = 13, .M = 28, .pads = {0, 2, 1, 0}, .variant = 4},
      {.N = 3, .C = 32, .H = 14, .W = 14, .M = 40, .pads = {1, 1, 1, 1}, .residual = true, .variant = 4},
      {.N = 1, .C = 48, .H = 26, .W = 30, .M = 24, .pads = {0, 0, 0, 0}, .variant = 4},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}

/* F(2×2): small images with many channels (F(4×4)'s tiles would be mostly padding), more than one
 * K-block of channels, images smaller than a tile. */
static void test_f2(void **state) {
  (void)state;
  static const Case cases[] = {
      {.N = 1, .C = 192, .H = 7, .W = 7, .M = 200, .pads = {1, 1, 1, 1}, .residual = true, .variant = 2},
      {.N = 1, .C = 320, .H = 6, .W = 6, .M = 64, .pads = {1, 1, 1, 1}, .variant = 2},
      {.N = 4, .C = 128, .H = 3, .W = 5, .M = 96, .pads = {1, 2, 0, 1}, .variant = 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}

/* Channels beyond one K-block of the microkernel, with F(4×4). */
static void test_kblocks(void **state) {
  (void)state;
  static const Case c = {.N = 1, .C = 288, .H = 12, .W = 12, .M = 36, .pads = {1, 1, 1, 1}, .variant = 4};
  run_case(&c);
}

/* The decision alone, on the AVX-512 target: transformed filters of several MiB per conv stream from
 * memory, so AlexNet's 13×13 convs (4-7 MiB of them in F(2×2), read once per 32-tile block) go to the
 * direct kernels, while VGG's and ResNet's 14×14 convs, whose GEMMs are longer per byte of filter, and
 * small filters that stay in L3 keep Winograd. */
static int variant_on(FcTarget *t, int64_t C, int64_t HW, int64_t M) {
  FcConvShape s = {.dtype = FC_DT_F32, .N = 1, .C = C, .H = HW, .W = HW, .M = M, .KH = 3, .KW = 3, .OH = HW,
                   .OW = HW, .group = 1, .stride = {1, 1}, .dilation = {1, 1}, .pads = {1, 1, 1, 1}};
  return fc_conv_winograd_variant(t, &s);
}

static void test_decision_avx512(void **state) {
  (void)state;
  FcCodegenOptions o = {.cpu = "x86-64-v4", .opt_level = 2};
  FcTarget *t = NULL;
  FcDiag diag;
  fc_diag_init(&diag);
  assert_int_equal(fc_target_resolve(&o, &t, &diag), FC_OK);
  assert_int_equal(variant_on(t, 192, 13, 384), 0);
  assert_int_equal(variant_on(t, 384, 13, 256), 0);
  assert_int_equal(variant_on(t, 256, 13, 256), 0);
  assert_int_equal(variant_on(t, 512, 14, 512), 2);
  assert_int_equal(variant_on(t, 256, 14, 256), 2);
  assert_int_equal(variant_on(t, 64, 13, 256), 2);  /* SqueezeNet's: 1 MiB of filters */
  assert_int_equal(variant_on(t, 64, 56, 64), 4);
  fc_target_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decision_avx512),
      cmocka_unit_test(test_f4),
      cmocka_unit_test(test_f2),
      cmocka_unit_test(test_kblocks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
