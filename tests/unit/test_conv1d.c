/* test_conv1d.c — 1-D convolutions (Conv1d over embeddings and audio) take the packed-GEMM kernel
 * (codegen/kernel_conv_gemm.c as a single-row 2-D convolution), not the direct loop nest of kernel_nn.c.
 *
 * Each case builds a one-conv module of rank 3 with constant weights, generates code for AVX2
 * (x86-64-v3, explicitly: the tile height is the target's) and checks from the LLVM module that the
 * weights were packed as the GEMM's A operand: a `packed_a` global of ceil(M / mr) · mr · C · KW floats
 * for a microkernel height mr in 4..16. The direct loop nest reads the weights in place and makes no such
 * global. Results are checked against a NumPy reference at awkward sizes in tests/lit/codegen/
 * conv_gemm.test (odd lengths, strides, dilations, padding, one input channel).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "codegen.h"

typedef struct Case {
  int64_t C, L, M, KW, stride, dilation, pads[2];
} Case;

static FcAttr ints_attr(FcAttrName n, const int64_t *v, int count) {
  FcAttr a = {.name = n, .kind = FC_AK_INTS};
  a.ints.v = v;
  a.ints.n = count;
  return a;
}

static void check_case(const Case *c) {
  int64_t OL = (c->L + c->pads[0] + c->pads[1] - c->dilation * (c->KW - 1) - 1) / c->stride + 1;
  int64_t nw = c->M * c->C * c->KW;
  float *w = calloc((size_t)nw, sizeof *w);
  assert_non_null(w);
  for (int64_t i = 0; i < nw; i++) w[i] = (float)(i % 7) - 3.0f;
  FcModule *m = fc_module_create("conv1d");
  FcDiag diag;
  fc_diag_init(&diag);
  FcBuilder b;
  fc_builder_init(&b, m->graph, &diag);
  int64_t xd[3] = {1, c->C, c->L}, wd[3] = {c->M, c->C, c->KW};
  FcValue *ops[2] = {fc_graph_add_input(m->graph, fc_type_make(&m->arena, FC_DT_F32, 3, xd), "x"),
                     fc_b_const(&b, FC_DT_F32, 3, wd, w)};
  FcAttr attrs[4] = {ints_attr(FC_ATTR_DILATIONS, &c->dilation, 1), {.name = FC_ATTR_GROUP, .kind = FC_AK_INT, .i = 1},
                     ints_attr(FC_ATTR_PADS, c->pads, 2), ints_attr(FC_ATTR_STRIDES, &c->stride, 1)};
  FcValue *yv = fc_b_op1(&b, FC_OP_CONV, ops, 2, attrs, 4);
  const char *oname = "y";
  fc_graph_set_outputs(m->graph, &yv, &oname, 1);
  assert_int_equal(fc_b_status(&b), FC_OK);
  assert_int_equal(fc_verify(m, &diag), FC_OK);
  assert_int_equal(yv->type.dims[2], OL);

  FcCodegenOptions o = {.cpu = "x86-64-v3", .opt_level = 2};
  FcTarget *target = NULL;
  assert_int_equal(fc_target_resolve(&o, &target, &diag), FC_OK);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  if (fc_codegen_module(m, &o, ctx, target, &mod, &diag) != FC_OK) fail_msg("codegen: %s", diag.msg);
  LLVMValueRef g = LLVMGetNamedGlobal(mod, "packed_a");
  int64_t floats = g ? (int64_t)LLVMGetArrayLength2(LLVMTypeOf(LLVMGetInitializer(g))) / 4 : 0;
  int64_t K = c->C * c->KW, rows = floats / (K ? K : 1);
  if (floats == 0 || floats % K != 0 || rows < c->M || rows >= c->M + 16)
    fail_msg("C%lld L%lld M%lld k%lld: no packed weights of %lld rows x %lld (packed_a of %lld floats)",
             (long long)c->C, (long long)c->L, (long long)c->M, (long long)c->KW, (long long)c->M, (long long)K,
             (long long)floats);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  fc_target_free(target);
  fc_module_destroy(m);
  free(w);
}

/* Text front ends (128 channels, k = 3 and 5, padded), an odd length with stride 2 and dilation 3, and an
 * audio front end (one channel, 80 taps, stride 4). */
static void test_conv1d_takes_gemm(void **state) {
  (void)state;
  static const Case cases[] = {
      {.C = 128, .L = 64, .M = 128, .KW = 3, .stride = 1, .dilation = 1, .pads = {1, 1}},
      {.C = 128, .L = 257, .M = 100, .KW = 5, .stride = 1, .dilation = 1, .pads = {2, 2}},
      {.C = 13, .L = 99, .M = 17, .KW = 3, .stride = 2, .dilation = 3, .pads = {3, 1}},
      {.C = 1, .L = 1601, .M = 64, .KW = 80, .stride = 4, .dilation = 1, .pads = {0, 0}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv1d_takes_gemm),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
