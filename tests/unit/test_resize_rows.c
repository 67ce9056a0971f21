/* test_resize_rows.c — linear and cubic resizes of the last two axes take the separable row kernel of
 * codegen/kernel_sample.c (a horizontal pass into a cache of rows, then vertical vectors), compiled and run.
 *
 * Each case builds a one-resize module (x a run-time input), generates code for AVX2 (x86-64-v3: 8-lane
 * vectors, so widths below, at and above one vector and with a cut last vector all occur), checks from the
 * LLVM module whether the row kernel was chosen (its tables are the globals `rs_rows_*`; the generic kernel
 * has none), JIT-compiles and runs it on 1 and 2 threads. The two runs must agree bit for bit (every output
 * row is computed by one task in a fixed order), and every element must lie within 2e-6 · (1 + |want|) of
 * a float64 reference written here from the ONNX definition (one f32 rounding of weights and sums).
 *
 * The shapes cover: DeepLab's integral upsampling (×8, half_pixel), odd ratios up and down in one resize
 * (7×5 → 17×3), align_corners and pytorch_half_pixel, cubic with exclude_outside, a resize of one axis only
 * (the other an identity), rank 2 and 3, f64, several planes split across tasks. Zero-weight taps must stay
 * dropped: align_corners puts outputs exactly on inputs, which then read one input with weight 1, so an
 * infinity there stays an infinity and does not spread to its neighbours' exact samples as 0 · inf = NaN.
 * tf_crop_and_resize with extrapolation and nearest take the generic kernel.
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
#include "test_codegen.h"
#include "flowrt.h"

typedef struct Case {
  const char *mode, *ctm;
  FcDtype dt;
  int rank;
  int64_t in[4], out[4];
  float cubic_a;
  int exclude_outside;
  const float *roi; /* 2·rank or NULL */
  bool rows;        /* the row kernel must be chosen */
} Case;

/* Deterministic values in [-1, 1). */
static uint64_t rng_state;
static double rnd(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng_state >> 40) / (double)(1ull << 23) - 1.0;
}

/* x_original of output o along an axis of n_in → n_out (scale n_out / n_in, as with `sizes`). */
static double source(const Case *c, double o, int64_t n_in, int64_t n_out) {
  double scale = (double)n_out / (double)n_in;
  if (!strcmp(c->ctm, "align_corners")) return n_out == 1 ? 0.0 : o * (double)(n_in - 1) / (double)(n_out - 1);
  if (!strcmp(c->ctm, "asymmetric")) return o / scale;
  if (!strcmp(c->ctm, "pytorch_half_pixel")) return n_out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  return (o + 0.5) / scale - 0.5; /* half_pixel */
}

/* The taps of output o: input indices (clamped) and weights, 2 (linear) or 4 (cubic). */
static int taps(const Case *c, int64_t o, int64_t n_in, int64_t n_out, int64_t *idx, double *w) {
  double xo = source(c, (double)o, n_in, n_out), fl = floor(xo);
  double ratio = xo - fl;
  int64_t l = (int64_t)fl;
  if (!strcmp(c->mode, "linear")) {
    w[0] = 1 - ratio;
    w[1] = ratio;
    idx[0] = l;
    idx[1] = l + 1;
  } else {
    double A = c->cubic_a, d[4] = {1 + ratio, ratio, 1 - ratio, 2 - ratio};
    for (int t = 0; t < 4; t++) {
      double s = d[t];
      w[t] = s <= 1 ? ((A + 2) * s - (A + 3)) * s * s + 1 : ((A * s - 5 * A) * s + 8 * A) * s - 4 * A;
      idx[t] = l - 1 + t;
    }
  }
  int n = !strcmp(c->mode, "linear") ? 2 : 4;
  double sum = 0;
  for (int t = 0; t < n; t++) {
    if (c->exclude_outside && (idx[t] < 0 || idx[t] >= n_in)) w[t] = 0;
    sum += w[t];
    idx[t] = idx[t] < 0 ? 0 : idx[t] >= n_in ? n_in - 1 : idx[t];
  }
  if (c->exclude_outside)
    for (int t = 0; t < n; t++) w[t] /= sum;
  return n;
}

static void reference(const Case *c, const double *x, double *y) {
  int r = c->rank;
  int64_t IH = r >= 2 ? c->in[r - 2] : 1, IW = c->in[r - 1], OH = r >= 2 ? c->out[r - 2] : 1, OW = c->out[r - 1];
  int64_t planes = 1;
  for (int d = 0; d < r - 2; d++) planes *= c->in[d];
  for (int64_t p = 0; p < planes; p++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        int64_t hi[4], wi[4];
        double hw[4], ww[4];
        int nh = taps(c, oh, IH, OH, hi, hw), nw = taps(c, ow, IW, OW, wi, ww);
        double s = 0;
        for (int a = 0; a < nh; a++)
          for (int b = 0; b < nw; b++) s += hw[a] * ww[b] * x[(p * IH + hi[a]) * IW + wi[b]];
        y[(p * OH + oh) * OW + ow] = s;
      }
}

static int64_t numel(int rank, const int64_t *d) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= d[i];
  return n;
}

/* Builds, compiles and runs the case on 1 and 2 threads: y1, y2 (malloc'd, the result's dtype) from x. */
static void run(const Case *c, const void *x, void **y1, void **y2) {
  FcModule *m = fc_module_create("resize");
  FcDiag diag;
  fc_diag_init(&diag);
  FcBuilder b;
  fc_builder_init(&b, m->graph, &diag);
  FcValue *xv = fc_graph_add_input(m->graph, fc_type_make(&m->arena, c->dt, c->rank, c->in), "x");
  FcAttr a[9] = {FC_A_STR(COORDINATE_TRANSFORMATION_MODE, c->ctm), FC_A_FLOAT(CUBIC_COEFF_A, c->cubic_a),
                 FC_A_INT(EXCLUDE_OUTSIDE, c->exclude_outside), FC_A_FLOAT(EXTRAPOLATION_VALUE, -7.5f),
                 FC_A_STR(MODE, c->mode), FC_A_STR(NEAREST_MODE, "round_prefer_floor"),
                 FC_A_FLOATS(ROI, c->roi, c->roi ? 2 * c->rank : 0), FC_A_FLOATS(SCALES, NULL, 0),
                 FC_A_INTS(SIZES, c->out, c->rank)};
  FcValue *yv = fc_b_op1(&b, FC_OP_RESIZE, &xv, 1, a, 9);
  const char *oname = "y";
  fc_graph_set_outputs(m->graph, &yv, &oname, 1);
  assert_int_equal(fc_b_status(&b), FC_OK);
  assert_int_equal(fc_verify(m, &diag), FC_OK);

  FcTarget *target = NULL;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = test_codegen_for_cpu(m, "x86-64-v3", ctx, &target);
  bool rows = LLVMGetNamedGlobal(mod, "rs_rows_h_tap0") != NULL;
  if (rows != c->rows)
    fail_msg("%s %s %lldx%lld -> %lldx%lld: the row kernel was %s", c->mode, c->ctm, (long long)c->in[c->rank - 2],
             (long long)c->in[c->rank - 1], (long long)c->out[c->rank - 2], (long long)c->out[c->rank - 1],
             rows ? "chosen" : "not chosen");
  assert_int_equal(fc_codegen_optimize(mod, fc_target_tm(target), 2, &diag), FC_OK);
  fc_target_free(target);
  FcJit *jit = NULL;
  if (fc_jit_create(mod, ctx, &jit, &diag) != FC_OK) fail_msg("jit: %s", diag.msg);
  const FrtModel *model = fc_jit_model(jit);
  size_t wsz = frt_model_workspace_size(model), ny = (size_t)numel(c->rank, c->out) * fc_dtype_size(c->dt);
  void *ws = aligned_alloc(64, (wsz + 63) / 64 * 64 + 64);
  *y1 = malloc(ny);
  *y2 = malloc(ny);
  assert_non_null(ws);
  assert_non_null(*y1);
  assert_non_null(*y2);
  for (int threads = 1; threads <= 2; threads++) {
    FrtError err;
    FrtPool *pool = frt_pool_create(threads, &err);
    assert_non_null(pool);
    void *out[1] = {threads == 1 ? *y1 : *y2};
    const void *in[1] = {x};
    if (frt_model_run(model, in, out, ws, pool, &err) != FRT_OK) fail_msg("run: %s", err.msg);
    frt_pool_destroy(pool);
  }
  assert_memory_equal(*y1, *y2, ny);
  free(ws);
  fc_jit_destroy(jit);
  fc_module_destroy(m);
}

static void check_case(const Case *c) {
  int64_t nx = numel(c->rank, c->in), ny = numel(c->rank, c->out);
  double *xd = malloc((size_t)nx * sizeof *xd), *ref = malloc((size_t)ny * sizeof *ref);
  void *x = malloc((size_t)nx * 8), *y1, *y2;
  assert_non_null(xd);
  assert_non_null(ref);
  assert_non_null(x);
  rng_state = (uint64_t)(nx * 1009 + ny);
  for (int64_t i = 0; i < nx; i++) {
    xd[i] = rnd();
    if (c->dt == FC_DT_F32) {
      ((float *)x)[i] = (float)xd[i];
      xd[i] = (double)(float)xd[i];
    } else {
      ((double *)x)[i] = xd[i];
    }
  }
  run(c, x, &y1, &y2);
  if (c->rows) { /* the generic cases are the conformance tests' */
    reference(c, xd, ref);
    for (int64_t i = 0; i < ny; i++) {
      double got = c->dt == FC_DT_F32 ? (double)((float *)y1)[i] : ((double *)y1)[i];
      if (!(fabs(got - ref[i]) <= 2e-6 * (1 + fabs(ref[i]))))
        fail_msg("%s %s case (%lld -> %lld elements): element %lld is %.9g, want %.9g", c->mode, c->ctm,
                 (long long)nx, (long long)ny, (long long)i, got, ref[i]);
    }
  }
  free(xd);
  free(ref);
  free(x);
  free(y1);
  free(y2);
}

static const float crop_roi[8] = {0, 0, -0.2f, 0.1f, 1, 1, 1.3f, 0.9f};

static void test_rows_modes(void **state) {
  (void)state;
  static const Case cases[] = {
      /* DeepLab's logits: ×8 in both axes, 3 planes */
      {"linear", "half_pixel", FC_DT_F32, 4, {1, 3, 5, 4}, {1, 3, 40, 32}, -0.75f, 0, NULL, true},
      /* up in H, down in W at odd ratios, 2 batch items (rows of several planes per task) */
      {"linear", "half_pixel", FC_DT_F32, 4, {2, 3, 7, 5}, {2, 3, 17, 3}, -0.75f, 0, NULL, true},
      {"linear", "align_corners", FC_DT_F32, 4, {1, 2, 6, 9}, {1, 2, 11, 4}, -0.75f, 0, NULL, true},
      {"linear", "pytorch_half_pixel", FC_DT_F32, 3, {4, 7, 3}, {4, 1, 10}, -0.75f, 0, NULL, true},
      {"linear", "asymmetric", FC_DT_F32, 4, {1, 2, 33, 50}, {1, 2, 10, 17}, -0.75f, 0, NULL, true},
      {"cubic", "half_pixel", FC_DT_F32, 4, {1, 2, 5, 6}, {1, 2, 9, 14}, -0.5f, 1, NULL, true},
      {"cubic", "asymmetric", FC_DT_F32, 4, {2, 1, 8, 8}, {2, 1, 5, 21}, -0.75f, 0, NULL, true},
      /* one axis only: W (H an identity), then H (W an identity, the horizontal pass a copy) */
      {"linear", "half_pixel", FC_DT_F32, 4, {1, 2, 6, 5}, {1, 2, 6, 11}, -0.75f, 0, NULL, true},
      {"linear", "half_pixel", FC_DT_F32, 4, {1, 2, 6, 5}, {1, 2, 13, 5}, -0.75f, 0, NULL, true},
      {"linear", "half_pixel", FC_DT_F64, 2, {9, 11}, {20, 27}, -0.75f, 0, NULL, true},
      /* the generic kernel: extrapolation (a crop box reaching outside the input), nearest */
      {"linear", "tf_crop_and_resize", FC_DT_F32, 4, {1, 1, 4, 4}, {1, 1, 3, 5}, -0.75f, 0,
       crop_roi, false},
      {"nearest", "half_pixel", FC_DT_F32, 4, {1, 1, 4, 4}, {1, 1, 7, 9}, -0.75f, 0, NULL, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
}

/* align_corners 3×3 → 5×5 puts even outputs exactly on inputs (one tap, weight 1) and odd ones halfway. With
 * an infinity at input (1, 1): outputs (2, 2) (exactly it) and the halfway ones that read it are inf;
 * outputs (0..4, 0) and (0, 0..4) read row 0 or column 0 only, and stay finite, as does (4, 4). */
static void test_rows_inf_stays_put(void **state) {
  (void)state;
  static const Case c = {"linear", "align_corners", FC_DT_F32, 4, {1, 1, 3, 3}, {1, 1, 5, 5}, -0.75f, 0, NULL, true};
  float x[9] = {1, 2, 3, 4, INFINITY, 6, 7, 8, 9};
  void *y1, *y2;
  run(&c, x, &y1, &y2);
  const float *y = y1;
  for (int i = 0; i < 25; i++) {
    int oh = i / 5, ow = i % 5;
    bool reads_inf = oh >= 1 && oh <= 3 && ow >= 1 && ow <= 3;
    if (reads_inf ? !(isinf(y[i]) && y[i] > 0) : !isfinite(y[i]))
      fail_msg("output (%d, %d) is %g", oh, ow, (double)y[i]);
  }
  assert_true(y[0] == 1.0f && y[4] == 3.0f && y[20] == 7.0f && y[24] == 9.0f && y[2] == 2.0f);
  free(y1);
  free(y2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows_modes),
      cmocka_unit_test(test_rows_inf_stays_put),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
