/* test_conv_blocked_plan.c — how codegen/kernel_conv_blocked.c cuts a conv into outer iterations (the
 * tasks of the thread pool: batch item × row block × oc group), read from the generated module.
 *
 * Each case builds a one-op module (flow.conv_blocked with block 8, constant weights and bias), generates
 * code for AVX2 (x86-64-v3, whose register tile the expected counts assume) and reads the outer iteration
 * count the run function passes to frt_parallel_for. With weights of several MiB on a small map (ResNeXt's
 * and ResNet's last stages) a task covers the whole image for its oc group, so that the weights stream
 * from memory once per run rather than once per row block; with small weights rows are still cut into
 * blocks, so that a block's input stays in L2 while the oc groups pass over it. Correctness of the same
 * shapes is tests/lit/codegen/conv_blocked.test's job.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codegen.h"
#include "test_codegen.h"

/* The outer-iteration argument of the module's call to frt_parallel_for (or _max); -1 if none. */
static int64_t parallel_outer(LLVMModuleRef mod) {
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
        if (LLVMGetInstructionOpcode(in) != LLVMCall) continue;
        LLVMValueRef callee = LLVMGetCalledValue(in);
        size_t len;
        const char *name = LLVMGetValueName2(callee, &len);
        if (len >= 16 && strncmp(name, "frt_parallel_for", 16) == 0)
          return (int64_t)LLVMConstIntGetSExtValue(LLVMGetOperand(in, 1));
      }
  return -1;
}

/* Outer iterations of a conv of x [N, C, H, W] (blocked by 8) with M output channels, a K×K kernel,
 * stride s and padding p on every side. */
static int64_t outer_of(int64_t N, int64_t C, int64_t H, int64_t W, int64_t M, int64_t K, int64_t s, int64_t p) {
  int64_t OH = (H + 2 * p - K) / s + 1, OW = (W + 2 * p - K) / s + 1;
  FcModule *m = fc_module_create("plan");
  FcDiag diag;
  fc_diag_init(&diag);
  FcBuilder b;
  fc_builder_init(&b, m->graph, &diag);
  size_t nw = (size_t)(M * C * K * K);
  float *w = calloc(nw, sizeof(float)), *bias = calloc((size_t)M, sizeof(float));
  assert_non_null(w);
  assert_non_null(bias);
  for (size_t i = 0; i < nw; i++) w[i] = (float)(i % 7) - 3.0f;
  int64_t xd[5] = {N, C / 8, H, W, 8}, wd[4] = {M, C, K, K}, yd[5] = {N, M / 8, OH, OW, 8};
  FcValue *ops[3] = {fc_graph_add_input(m->graph, fc_type_make(&m->arena, FC_DT_F32, 5, xd), "x"),
                     fc_b_const(&b, FC_DT_F32, 4, wd, w), fc_b_const(&b, FC_DT_F32, 1, &M, bias)};
  free(w);
  free(bias);
  const int64_t ones[2] = {1, 1}, strides[2] = {s, s}, pads[4] = {p, p, p, p};
  FcAttr attrs[5] = {FC_A_INT(BLOCK, 8), FC_A_INTS(DILATIONS, ones, 2), FC_A_INT(GROUP, 1), FC_A_INTS(PADS, pads, 4),
                     FC_A_INTS(STRIDES, strides, 2)};
  FcValue *yv = fc_b_op1(&b, FC_OP_CONV_BLOCKED, ops, 3, attrs, 5);
  const char *oname = "y";
  fc_graph_set_outputs(m->graph, &yv, &oname, 1);
  assert_int_equal(fc_b_status(&b), FC_OK);
  assert_int_equal(yv->type.rank, 5);
  for (int i = 0; i < 5; i++) assert_int_equal(yv->type.dims[i], yd[i]);
  assert_int_equal(fc_verify(m, &diag), FC_OK);

  FcTarget *target = NULL;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = test_codegen_for_cpu(m, "x86-64-v3", ctx, &target);
  int64_t outer = parallel_outer(mod);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  fc_target_free(target);
  fc_module_destroy(m);
  return outer;
}

/* AVX2's tile: J = 2 blocks of 8 output channels per oc group (J = 3 only for 1×1 convs whose blocks
 * it divides), so the counts below are oc groups × row blocks. */

/* 8 MiB of 1×1 weights on 7×7 (ResNeXt's layer4 conv1, 2048 -> 1024): one task per oc group (64). */
static void test_big_pointwise_7x7(void **state) {
  (void)state;
  assert_int_equal(outer_of(1, 2048, 7, 7, 1024, 1, 1, 0), 64);
}

/* The stride-2 1×1 downsample of the same stage (1024 -> 2048, 14×14 -> 7×7): 128 oc groups, one row
 * block, though 14 input rows of 1024 channels are 784 KiB. */
static void test_big_pointwise_stride2(void **state) {
  (void)state;
  assert_int_equal(outer_of(1, 1024, 14, 14, 2048, 1, 2, 0), 128);
}

/* 3×3, 1024 -> 256 on an odd 13×11 map with padding (9 MiB): 16 oc groups × 1 row block per batch item. */
static void test_big_3x3_small_map(void **state) {
  (void)state;
  assert_int_equal(outer_of(2, 1024, 13, 11, 256, 3, 1, 1), 32);
}

/* Small weights (64 -> 64, 16 KiB) on a large map keep their row blocks: 4 oc groups, cut into at least
 * 4 row blocks each (the pool's minimum of 16 tasks); so do MobileNetV2's last 1×1 (960 -> 320 on 7×7,
 * 1.2 MiB, which stay in L2): 20 oc groups × 2 row blocks of a 7×7 view. */
static void test_small_weights_keep_row_blocks(void **state) {
  (void)state;
  assert_int_equal(outer_of(1, 960, 7, 7, 320, 1, 1, 0), 40);
  assert_true(outer_of(1, 64, 56, 56, 64, 1, 1, 0) >= 16);
  assert_true(outer_of(1, 64, 56, 56, 64, 3, 1, 1) >= 16);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_big_pointwise_7x7),
      cmocka_unit_test(test_big_pointwise_stride2),
      cmocka_unit_test(test_big_3x3_small_map),
      cmocka_unit_test(test_small_weights_keep_row_blocks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
