/* test_cg_util.c — codegen/cg_util.c and codegen/target.c: the builders every kernel emitter uses.
 *
 * A module of small kernels `void f(const void *src, void *dst, int64_t n)` is built with the helpers
 * (fc_cg_loop_begin/end around fc_cg_load, fc_cg_convert and fc_cg_store), optimised with default<O3>
 * for the host (so the conversions are also checked after vectorisation) and JIT-compiled. Each kernel is
 * compared bit for bit with the C reference the IR's evaluators use (ir/tensor.c, ir/eval_elementwise.c):
 *   - f16 and bf16 → f32 and f64 for all 65536 patterns;
 *   - f32 → f16 and bf16 (through the store and through fc_cg_convert) for 2^24 patterns spread over the
 *     whole range (every 256th) plus every pattern around the rounding boundaries and special values;
 *   - f64 → f16 and bf16 (one rounding, as the reference's round-to-odd gives) for random doubles, values
 *     in f16's range and exact halfway cases;
 *   - ONNX Cast between floats, integers and bool: truncation, saturation, NaN → 0, wrap-around, → bool.
 * fc_cg_store_prefix is checked for every prefix of a 32-byte and a 16-float vector (only the prefix is
 * written). The optimised IR must contain no call at all (the half conversions are bit manipulation, not
 * __truncsfhf2), and strides, broadcast strides and target machines (default CPU, "native", errors for an
 * unknown CPU or triple) are checked directly.
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

#include <llvm-c/Analysis.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>

#include "codegen.h"

typedef void (*ConvFn)(const void *src, void *dst, int64_t n);

/* The kernels: name, source dtype, destination dtype, and whether the value goes through fc_cg_convert
 * (otherwise only through the load and store conversions). */
static const struct {
  const char *name;
  FcDtype from, to;
  bool convert;
} KERNELS[] = {
    {"f16_f32", FC_DT_F16, FC_DT_F32, false},   {"bf16_f32", FC_DT_BF16, FC_DT_F32, false},
    {"f16_f64", FC_DT_F16, FC_DT_F64, true},    {"bf16_f64", FC_DT_BF16, FC_DT_F64, true},
    {"f32_f16", FC_DT_F32, FC_DT_F16, false},   {"f32_bf16", FC_DT_F32, FC_DT_BF16, false},
    {"f32c_f16", FC_DT_F32, FC_DT_F16, true},   {"f32c_bf16", FC_DT_F32, FC_DT_BF16, true},
    {"f64_f16", FC_DT_F64, FC_DT_F16, true},    {"f64_bf16", FC_DT_F64, FC_DT_BF16, true},
    {"f16_bf16", FC_DT_F16, FC_DT_BF16, true},  {"i64_f16", FC_DT_I64, FC_DT_F16, true},
    {"f32_i32", FC_DT_F32, FC_DT_I32, true},    {"f32_u8", FC_DT_F32, FC_DT_U8, true},
    {"f64_i64", FC_DT_F64, FC_DT_I64, true},    {"f32_u64", FC_DT_F32, FC_DT_U64, true},
    {"f32_bool", FC_DT_F32, FC_DT_BOOL, true},  {"i32_i8", FC_DT_I32, FC_DT_I8, true},
    {"i8_u64", FC_DT_I8, FC_DT_U64, true},      {"u8_i32", FC_DT_U8, FC_DT_I32, true},
    {"i64_bool", FC_DT_I64, FC_DT_BOOL, true},  {"bool_f32", FC_DT_BOOL, FC_DT_F32, true},
    {"bool_i64", FC_DT_BOOL, FC_DT_I64, true},  {"u64_f32", FC_DT_U64, FC_DT_F32, true},
};
enum { N_KERNELS = sizeof KERNELS / sizeof KERNELS[0] };

static LLVMOrcLLJITRef jit;
static ConvFn fns[N_KERNELS];

/* fc_cg_store_prefix kernels: prefix_fns[0][n - 1] stores the first n of 32 bytes, prefix_fns[1][n - 1] the
 * first n of 16 floats, loaded from src. */
enum { PREFIX_BYTES = 32, PREFIX_FLOATS = 16 };
static ConvFn prefix_fns[2][PREFIX_BYTES];

static ConvFn fn(const char *name) {
  for (int i = 0; i < N_KERNELS; i++)
    if (strcmp(KERNELS[i].name, name) == 0) return fns[i];
  fail_msg("no kernel %s", name);
  return NULL;
}

static void build(LLVMContextRef ctx, LLVMModuleRef mod, int i) {
  LLVMTypeRef p = LLVMPointerTypeInContext(ctx, 0), i64 = LLVMInt64TypeInContext(ctx);
  LLVMTypeRef ps[3] = {p, p, i64};
  LLVMValueRef f = LLVMAddFunction(mod, KERNELS[i].name, LLVMFunctionType(LLVMVoidTypeInContext(ctx), ps, 3, 0));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, f, "entry"));
  FcKernel k = {.ctx = ctx, .mod = mod, .b = b, .fn = f};
  FcLoop l;
  LLVMValueRef iv = fc_cg_loop_begin(&k, &l, fc_cg_const_i64(&k, 0), LLVMGetParam(f, 2), 1, "i");
  LLVMValueRef v = fc_cg_load(&k, KERNELS[i].from, LLVMGetParam(f, 0), iv);
  /* Without convert, the two dtypes share a compute type (float): only load and store convert. */
  if (KERNELS[i].convert) v = fc_cg_convert(&k, v, KERNELS[i].from, KERNELS[i].to);
  fc_cg_store(&k, KERNELS[i].to, LLVMGetParam(f, 1), iv, v);
  fc_cg_loop_end(&k, &l);
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
}

static void build_prefix(LLVMContextRef ctx, LLVMModuleRef mod, int floats, unsigned n) {
  LLVMTypeRef p = LLVMPointerTypeInContext(ctx, 0), i64 = LLVMInt64TypeInContext(ctx);
  LLVMTypeRef ps[3] = {p, p, i64};
  char name[32];
  snprintf(name, sizeof name, "prefix_%d_%u", floats, n);
  LLVMValueRef f = LLVMAddFunction(mod, name, LLVMFunctionType(LLVMVoidTypeInContext(ctx), ps, 3, 0));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, f, "entry"));
  FcKernel k = {.ctx = ctx, .mod = mod, .b = b, .fn = f};
  LLVMTypeRef vt = floats ? LLVMVectorType(LLVMFloatTypeInContext(ctx), PREFIX_FLOATS)
                          : LLVMVectorType(LLVMInt8TypeInContext(ctx), PREFIX_BYTES);
  LLVMValueRef v = LLVMBuildLoad2(b, vt, LLVMGetParam(f, 0), "");
  LLVMSetAlignment(v, 1);
  fc_cg_store_prefix(&k, v, LLVMGetParam(f, 1), n);
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
}

static bool ir_has_call(LLVMModuleRef mod) {
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
        if (LLVMGetInstructionOpcode(in) != LLVMCall) continue;
        /* Saturating conversions and min/max are instruction-like intrinsics, not library calls. */
        LLVMValueRef callee = LLVMGetCalledValue(in);
        size_t n;
        const char *name = LLVMGetValueName2(callee, &n);
        if (strncmp(name, "llvm.", 5) != 0) return true;
      }
  return false;
}

static int setup(void **state) {
  (void)state;
  FcDiag d;
  fc_diag_init(&d);
  FcCodegenOptions o = {.cpu = "native", .opt_level = 3};
  FcTarget *target;
  if (fc_target_resolve(&o, &target, &d) != FC_OK) {
    fprintf(stderr, "%s\n", d.msg);
    return -1;
  }
  LLVMTargetMachineRef tm = fc_target_tm(target);
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMContextRef ctx = LLVMOrcThreadSafeContextGetContext(tsc);
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("cg_util", ctx);
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(mod, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(mod, td);
  LLVMDisposeTargetData(td);
  for (int i = 0; i < N_KERNELS; i++) build(ctx, mod, i);
  for (unsigned n = 1; n <= PREFIX_BYTES; n++) build_prefix(ctx, mod, 0, n);
  for (unsigned n = 1; n <= PREFIX_FLOATS; n++) build_prefix(ctx, mod, 1, n);
  char *err = NULL;
  if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &err)) {
    fprintf(stderr, "verify: %s\n", err);
    return -1;
  }
  LLVMDisposeMessage(err);
  if (fc_codegen_optimize(mod, tm, 3, &d) != FC_OK) {
    fprintf(stderr, "%s\n", d.msg);
    return -1;
  }
  fc_target_free(target);
  if (ir_has_call(mod)) {
    fprintf(stderr, "the optimised conversions call a function\n");
    return -1;
  }
  if (LLVMOrcCreateLLJIT(&jit, LLVMOrcCreateLLJITBuilder())) return -1;
  if (LLVMOrcLLJITAddLLVMIRModule(jit, LLVMOrcLLJITGetMainJITDylib(jit), LLVMOrcCreateNewThreadSafeModule(mod, tsc)))
    return -1;
  LLVMOrcDisposeThreadSafeContext(tsc);
  for (int i = 0; i < N_KERNELS; i++) {
    LLVMOrcExecutorAddress a = 0;
    if (LLVMOrcLLJITLookup(jit, &a, KERNELS[i].name)) return -1;
    fns[i] = (ConvFn)(uintptr_t)a;
  }
  for (int floats = 0; floats < 2; floats++)
    for (unsigned n = 1; n <= (floats ? PREFIX_FLOATS : PREFIX_BYTES); n++) {
      char name[32];
      snprintf(name, sizeof name, "prefix_%d_%u", floats, n);
      LLVMOrcExecutorAddress a = 0;
      if (LLVMOrcLLJITLookup(jit, &a, name)) return -1;
      prefix_fns[floats][n - 1] = (ConvFn)(uintptr_t)a;
    }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  if (jit) LLVMConsumeError(LLVMOrcDisposeLLJIT(jit));
  return 0;
}

/* ---- half widening ------------------------------------------------------------------------------------- */

static void test_widen_all(void **state) {
  (void)state;
  static uint16_t h[65536];
  static float f[65536];
  static double d[65536];
  for (int i = 0; i < 65536; i++) h[i] = (uint16_t)i;
  fn("f16_f32")(h, f, 65536);
  fn("f16_f64")(h, d, 65536);
  for (int i = 0; i < 65536; i++) {
    float r = fc_f16_to_f32(h[i]);
    assert_memory_equal(&r, &f[i], 4);
    if (isnan(r)) assert_true(isnan(d[i]));
    else assert_true(d[i] == (double)r);
  }
  fn("bf16_f32")(h, f, 65536);
  fn("bf16_f64")(h, d, 65536);
  for (int i = 0; i < 65536; i++) {
    float r = fc_bf16_to_f32(h[i]);
    assert_memory_equal(&r, &f[i], 4);
    if (isnan(r)) assert_true(isnan(d[i]));
    else assert_true(d[i] == (double)r);
  }
}

/* ---- f32 narrowing --------------------------------------------------------------------------------------- */

static void check_f32_patterns(const uint32_t *in, int n) {
  uint16_t *a = malloc((size_t)n * 2), *b = malloc((size_t)n * 2), *c = malloc((size_t)n * 2), *e = malloc((size_t)n * 2);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(c);
  assert_non_null(e);
  fn("f32_f16")(in, a, n);
  fn("f32c_f16")(in, b, n);
  fn("f32_bf16")(in, c, n);
  fn("f32c_bf16")(in, e, n);
  for (int i = 0; i < n; i++) {
    float x;
    memcpy(&x, &in[i], 4);
    uint16_t rh = fc_f32_to_f16(x), rb = fc_f32_to_bf16(x);
    if (a[i] != rh || b[i] != rh || c[i] != rb || e[i] != rb)
      fail_msg("f32 %08x: f16 %04x/%04x (want %04x), bf16 %04x/%04x (want %04x)", in[i], a[i], b[i], rh, c[i], e[i], rb);
  }
  free(a);
  free(b);
  free(c);
  free(e);
}

static void test_narrow_f32(void **state) {
  (void)state;
  enum { N = 1 << 20 };
  uint32_t *in = malloc(N * sizeof *in);
  assert_non_null(in);
  /* Every 256th pattern: 2^24 values, every exponent and sign, both rounding directions. */
  for (uint64_t base = 0; base < (1ull << 32); base += (uint64_t)N * 256) {
    for (int i = 0; i < N; i++) in[i] = (uint32_t)(base + (uint64_t)i * 256 + (uint64_t)(i % 251));
    check_f32_patterns(in, N);
  }
  /* Every pattern near f16's subnormal/normal/overflow boundaries and the specials. */
  static const uint32_t centres[] = {0x00000000, 0x33000000, 0x33800000, 0x387fe000, 0x38800000, 0x477fe000,
                                     0x477ff000, 0x47800000, 0x7f7fffff, 0x7f800000, 0x7fc00000, 0x00800000};
  int n = 0;
  for (size_t c = 0; c < sizeof centres / sizeof centres[0]; c++)
    for (int s = 0; s < 2; s++)
      for (int d = -20000; d <= 20000; d++) {
        uint32_t v = centres[c] + (uint32_t)d;
        in[n++] = s ? v | 0x80000000u : v;
      }
  check_f32_patterns(in, n);
  free(in);
}

/* ---- f64 narrowing --------------------------------------------------------------------------------------- */

/* The reference's one rounding from double: round to odd in f32, then to nearest even. */
static float round_to_odd_f32(double d) {
  float f = (float)d;
  if (d != d || (double)f == d) return f;
  if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f);
  uint32_t bits;
  memcpy(&bits, &f, 4);
  bits |= 1;
  memcpy(&f, &bits, 4);
  return f;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_u64(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void test_narrow_f64(void **state) {
  (void)state;
  enum { N = 1 << 20 };
  double *in = malloc(N * sizeof *in);
  uint16_t *h = malloc(N * 2), *b = malloc(N * 2);
  assert_non_null(in);
  assert_non_null(h);
  assert_non_null(b);
  for (int i = 0; i < N; i++) {
    uint64_t u = next_u64();
    if (i % 3 == 0) { /* f16's exponent range and a little beyond, both signs */
      u = (u & 0x800fffffffffffffull) | ((uint64_t)(1023 - 30 + next_u64() % 50) << 52);
    } else if (i % 3 == 1) { /* exactly halfway between two f16 values, and one ulp either side */
      double x = fc_f16_to_f32((uint16_t)next_u64());
      memcpy(&u, &x, 8);
      u += (1ull << 41) + (uint64_t)((int64_t)(next_u64() % 3) - 1);
    }
    memcpy(&in[i], &u, 8);
  }
  fn("f64_f16")(in, h, N);
  fn("f64_bf16")(in, b, N);
  for (int i = 0; i < N; i++) {
    if (isnan(in[i])) {
      assert_true((h[i] & 0x7c00) == 0x7c00 && (h[i] & 0x3ff));
      assert_true((b[i] & 0x7f80) == 0x7f80 && (b[i] & 0x7f));
      continue;
    }
    uint16_t rh = fc_f32_to_f16(round_to_odd_f32(in[i])), rb = fc_f32_to_bf16(round_to_odd_f32(in[i]));
    if (h[i] != rh || b[i] != rb) fail_msg("f64 %a: f16 %04x (want %04x), bf16 %04x (want %04x)", in[i], h[i], rh, b[i], rb);
  }
  free(in);
  free(h);
  free(b);
}

/* ---- casts ---------------------------------------------------------------------------------------------- */

static void test_casts(void **state) {
  (void)state;
  float fi[10] = {1.9f, -1.9f, NAN, INFINITY, -INFINITY, 3e9f, -3e9f, 255.5f, -0.0f, 1e-30f};
  int32_t i32[10];
  uint8_t u8[10], b8[10];
  uint64_t u64[10];
  fn("f32_i32")(fi, i32, 10);
  fn("f32_u8")(fi, u8, 10);
  fn("f32_bool")(fi, b8, 10);
  fn("f32_u64")(fi, u64, 10);
  const int32_t want_i32[10] = {1, -1, 0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 255, 0, 0};
  const uint8_t want_u8[10] = {1, 0, 0, 255, 0, 255, 0, 255, 0, 0};
  const uint8_t want_b8[10] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 1};
  const uint64_t want_u64[10] = {1, 0, 0, UINT64_MAX, 0, 3000000000u, 0, 255, 0, 0};
  for (int i = 0; i < 10; i++) {
    assert_int_equal(i32[i], want_i32[i]);
    assert_int_equal(u8[i], want_u8[i]);
    assert_int_equal(b8[i], want_b8[i]);
    assert_true(u64[i] == want_u64[i]);
  }
  double dd[4] = {9.3e18, -9.3e18, -2.5, NAN};
  int64_t i64[4];
  fn("f64_i64")(dd, i64, 4);
  assert_true(i64[0] == INT64_MAX && i64[1] == INT64_MIN && i64[2] == -2 && i64[3] == 0);

  int32_t a[4] = {300, -129, 127, -1};
  int8_t s8[4];
  fn("i32_i8")(a, s8, 4);
  assert_true(s8[0] == 44 && s8[1] == 127 && s8[2] == 127 && s8[3] == -1);
  int8_t c[3] = {-1, 5, -128};
  uint64_t w[3];
  fn("i8_u64")(c, w, 3);
  assert_true(w[0] == UINT64_MAX && w[1] == 5 && w[2] == (uint64_t)(int64_t)-128);
  uint8_t u[2] = {200, 7};
  int32_t z[2];
  fn("u8_i32")(u, z, 2);
  assert_true(z[0] == 200 && z[1] == 7);
  int64_t l[3] = {0, -5, INT64_MIN};
  uint8_t lb[3];
  fn("i64_bool")(l, lb, 3);
  assert_true(lb[0] == 0 && lb[1] == 1 && lb[2] == 1);
  uint8_t bools[2] = {0, 1};
  float bf[2];
  int64_t bi[2];
  fn("bool_f32")(bools, bf, 2);
  fn("bool_i64")(bools, bi, 2);
  assert_true(bf[0] == 0.0f && bf[1] == 1.0f && bi[0] == 0 && bi[1] == 1);
  uint64_t big[2] = {UINT64_MAX, 1ull << 63};
  float bigf[2];
  fn("u64_f32")(big, bigf, 2);
  assert_true(bigf[0] == 18446744073709551616.0f && bigf[1] == 9223372036854775808.0f);
  int64_t ints[6] = {0, 1, -1, 65504, 65520, -70000};
  uint16_t ih[6];
  fn("i64_f16")(ints, ih, 6);
  const uint16_t want_ih[6] = {0x0000, 0x3c00, 0xbc00, 0x7bff, 0x7c00, 0xfc00};
  for (int i = 0; i < 6; i++) assert_int_equal(ih[i], want_ih[i]);
  /* f16 → bf16: one value that bf16 cannot hold exactly rounds to nearest even. */
  uint16_t hh[2] = {0x3c01, 0x7e00}, hb[2];
  fn("f16_bf16")(hh, hb, 2);
  assert_int_equal(hb[0], fc_f32_to_bf16(fc_f16_to_f32(0x3c01)));
  assert_true((hb[1] & 0x7fc0) == 0x7fc0);
}

/* ---- strides and targets ------------------------------------------------------------------------------ */

static void test_strides(void **state) {
  (void)state;
  FcArena a;
  fc_arena_init(&a);
  int64_t d4[4] = {2, 3, 4, 5};
  FcType t = {FC_DT_F32, 4, d4};
  const int64_t *s = fc_cg_strides(&a, &t);
  assert_true(s[0] == 60 && s[1] == 20 && s[2] == 5 && s[3] == 1);
  int64_t od[2] = {4, 1};
  FcType o = {FC_DT_F32, 2, od};
  const int64_t *bs = fc_cg_broadcast_strides(&a, &o, &t);
  assert_true(bs[0] == 0 && bs[1] == 0 && bs[2] == 1 && bs[3] == 0);
  FcType scalar = {FC_DT_F32, 0, NULL};
  const int64_t *ss = fc_cg_broadcast_strides(&a, &scalar, &t);
  for (int i = 0; i < 4; i++) assert_int_equal(ss[i], 0);
  fc_arena_free(&a);
}

/* Resolves o, which must succeed. */
static FcTarget *resolve(const FcCodegenOptions *o) {
  FcDiag d;
  fc_diag_init(&d);
  FcTarget *t = NULL;
  if (fc_target_resolve(o, &t, &d) != FC_OK) fail_msg("%s", d.msg);
  return t;
}

/* The description follows the CPU's features (read through LLVM, no CPU-name list): levels, lanes,
 * registers, the GEMM table and the layout block. */
static void test_targets(void **state) {
  (void)state;
  FcCodegenOptions x86 = {.triple = "x86_64-linux-gnu", .opt_level = 2};
  FcTarget *t = resolve(&x86);
  assert_string_equal(t->kind->name, "cpu");
  assert_string_equal(t->cpu, "x86-64-v3");
  assert_string_equal(t->level, "avx2");
  assert_true(fc_target_has(t, FC_FEAT_AVX2) && fc_target_has(t, FC_FEAT_FMA) && fc_target_has(t, FC_FEAT_F16C));
  assert_false(fc_target_has(t, FC_FEAT_AVX512F));
  assert_int_equal(fc_target_lanes(t, FC_DT_F32), 8);
  assert_int_equal(fc_target_lanes(t, FC_DT_F64), 4);
  assert_int_equal(fc_target_lanes(t, FC_DT_F16), 8); /* computed in float */
  assert_int_equal(t->vector_regs, 16);
  assert_int_equal(t->layout.block, 8);
  assert_int_equal(t->layout_narrow.block, 0); /* no second block */
  FcGemmArch g;
  fc_target_gemm_arch(t, &g);
  assert_true(g.vl == 8 && g.mr == 6 && g.nr == 16);
  fc_target_gemm_arch_for_rows(t, 32, false, &g); /* 4-row tiles: 6-row ones would pad 32 rows to 36 */
  assert_true(g.mr == 4 && g.nr == 16);
  fc_target_free(t);

  FcCodegenOptions skx = {.triple = "x86_64-linux-gnu", .cpu = "skylake-avx512", .opt_level = 2};
  t = resolve(&skx);
  assert_string_equal(t->level, "avx512");
  assert_true(fc_target_has(t, FC_FEAT_AVX512F) && fc_target_has(t, FC_FEAT_AVX512BW) &&
              fc_target_has(t, FC_FEAT_AVX512VL));
  assert_false(fc_target_has(t, FC_FEAT_AVX512VNNI)); /* Cascade Lake added it */
  assert_int_equal(fc_target_lanes(t, FC_DT_F32), 8); /* element-wise loops stay at 256 bits */
  assert_int_equal(t->max_vector_bytes, 64);
  assert_int_equal(t->vector_regs, 32);
  assert_int_equal(t->layout.block, 16);
  assert_int_equal(t->layout_narrow.block, 8); /* for regions 16 does not divide */
  fc_target_gemm_arch(t, &g);
  assert_true(g.vl == 16 && g.mr == 14 && g.nr == 32);
  fc_target_free(t);
  FcCodegenOptions clx = {.triple = "x86_64-linux-gnu", .cpu = "cascadelake"};
  t = resolve(&clx);
  assert_true(fc_target_has(t, FC_FEAT_AVX512VNNI));
  fc_target_free(t);
  /* Features given explicitly count as the CPU's own. */
  FcCodegenOptions no_avx2 = {.triple = "x86_64-linux-gnu", .features = "-avx2"};
  t = resolve(&no_avx2);
  assert_string_equal(t->level, "sse");
  assert_int_equal(fc_target_lanes(t, FC_DT_F32), 4);
  fc_target_free(t);
  FcCodegenOptions plus_512 = {.triple = "x86_64-linux-gnu", .features = "+avx512f"};
  t = resolve(&plus_512);
  assert_int_equal(t->layout.block, 16);
  fc_target_free(t);

  FcCodegenOptions arm = {.triple = "aarch64-linux-gnu", .opt_level = 2};
  t = resolve(&arm);
  assert_int_equal(t->arch, FC_ARCH_AARCH64);
  assert_string_equal(t->level, "neon");
  assert_true(fc_target_has(t, FC_FEAT_NEON));
  assert_int_equal(fc_target_lanes(t, FC_DT_F32), 4);
  fc_target_free(t);

  FcDiag d;
  fc_diag_init(&d);
  FcCodegenOptions bad_cpu = {.cpu = "no-such-cpu"};
  assert_int_equal(fc_target_resolve(&bad_cpu, &t, &d), FC_ERR_INPUT);
  assert_null(t);
  assert_non_null(strstr(d.msg, "unknown CPU 'no-such-cpu'"));
  fc_diag_init(&d);
  FcCodegenOptions bad_triple = {.triple = "riscv64-linux-gnu"};
  assert_int_equal(fc_target_resolve(&bad_triple, &t, &d), FC_ERR_INPUT);
  assert_non_null(strstr(d.msg, "unsupported target"));
  fc_diag_init(&d);
  /* "native" describes the host, so it is refused for the other architecture. */
  char *host = LLVMGetDefaultTargetTriple();
  FcCodegenOptions cross_native = {.triple = strncmp(host, "x86_64", 6) == 0 ? "aarch64-linux-gnu" : "x86_64-linux-gnu",
                                   .cpu = "native"};
  LLVMDisposeMessage(host);
  assert_int_equal(fc_target_resolve(&cross_native, &t, &d), FC_ERR_INPUT);
}

/* Every prefix of a vector of 32 bytes and of 16 floats: the first n elements written, nothing after them
 * (the destination's sentinels intact), from an odd address. */
static void test_store_prefix(void **state) {
  (void)state;
  uint8_t src[PREFIX_BYTES + 1], dst[PREFIX_BYTES + 8];
  float fsrc[PREFIX_FLOATS], fdst[PREFIX_FLOATS + 2];
  for (int i = 0; i < PREFIX_BYTES + 1; i++) src[i] = (uint8_t)(17 * i + 3);
  for (int i = 0; i < PREFIX_FLOATS; i++) fsrc[i] = 0.5f * (float)i - 3.25f;
  for (unsigned n = 1; n <= PREFIX_BYTES; n++) {
    memset(dst, 0xa5, sizeof dst);
    prefix_fns[0][n - 1](src + 1, dst + 1, 0);
    for (unsigned i = 0; i < sizeof dst; i++) {
      uint8_t want = i >= 1 && i <= n ? src[i] : 0xa5;
      if (dst[i] != want) fail_msg("bytes, prefix %u: byte %u is %u, expected %u", n, i, dst[i], want);
    }
  }
  for (unsigned n = 1; n <= PREFIX_FLOATS; n++) {
    for (int i = 0; i < PREFIX_FLOATS + 2; i++) fdst[i] = -99.0f;
    prefix_fns[1][n - 1](fsrc, fdst + 1, 0);
    for (unsigned i = 0; i < PREFIX_FLOATS + 2; i++) {
      float want = i >= 1 && i <= n ? fsrc[i - 1] : -99.0f;
      if (fdst[i] != want) fail_msg("floats, prefix %u: element %u is %g, expected %g", n, i, fdst[i], want);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_widen_all), cmocka_unit_test(test_narrow_f32), cmocka_unit_test(test_narrow_f64),
      cmocka_unit_test(test_casts),     cmocka_unit_test(test_strides),    cmocka_unit_test(test_targets),
      cmocka_unit_test(test_store_prefix),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
