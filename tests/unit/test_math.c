/* test_math.c — codegen/fcmath.h: accuracy, special cases and shape of the emitted elementwise math.
 *
 * One LLVM module holds, for every function, four kernels `void k(x, y, out, n)` that map arrays
 * through fc_math_emit: on <8 x float>, on <4 x double>, and as scalar float/double loops (which the
 * loop vectoriser must be able to vectorise). The module is optimised with "default<O3>" for the host
 * and JIT-compiled with ORC LLJIT; each kernel is compared with the C library (double for f32, long
 * double for f64) over: every special value (NaN, ±Inf, ±0, subnormals, overflow and underflow
 * thresholds, range-reduction boundaries), exactly as Annex F prescribes; evenly spaced bit patterns
 * across the whole range (2^22 floats for the functions computed in f32, 2^20 for those rounded from
 * double, 2^18 doubles); focused random ranges; and for pow, pairs of special values, random pairs and
 * pairs near overflow. The maximum error in ulp per function and type is printed and must stay within
 * fc_math_max_ulp. The optimised IR must call no function but a few instruction-like intrinsics, and
 * on x86-64 the assembly for the baseline CPU (no FMA, SSE2 only) must contain no call at all; that
 * baseline build is also JIT-compiled and checked for accuracy on a smaller sample, since without FMA
 * llvm.fmuladd rounds twice.
 *
 * FC_MATH_EXHAUSTIVE=1 in the environment sweeps all 2^32 floats for every f32 function instead, and
 * 2^24 doubles (minutes per function, on all cores); FC_MATH_ONLY=exp,log,... limits the accuracy tests
 * to the functions named; FC_MATH_IR=FILE writes the optimised host IR to FILE.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "fcmath.h"

/* fc_math_emit_exp_nonpos's bounds in ulp, with FMA and without (x86-64 baseline), as fcmath.h says. */
#define EXPNP_ULP 1
#define EXPNP_ULP_BASE 1.25

enum { K_V8F32, K_V4F64, K_F32, K_F64, K_COUNT };
static const struct {
  const char *tag;
  bool f64;
  unsigned lanes; /* 0: a scalar loop */
} KINDS[K_COUNT] = {{"v8f32", false, 8}, {"v4f64", true, 4}, {"f32", false, 0}, {"f64", true, 0}};

typedef void (*Kernel)(const void *x, const void *y, void *out, int64_t n);

/* Kernel slots after the FcMathFn ones: math_fast.c's forms, f32 kinds only. */
enum { ERFC_FAST = FC_MATH_COUNT, EXP_NONPOS, N_SLOTS };
static const char *const FAST_NAME[] = {"erfc_fast", "exp_nonpos"};

typedef struct Jit {
  LLVMOrcLLJITRef jit;
  Kernel k[N_SLOTS][K_COUNT];
} Jit;

static Jit host, base;
static int failures; /* bounds exceeded so far; each accuracy test fails at its end, after reporting all */
static bool have_base;

/* ---- building, optimising and JIT-compiling the kernels ------------------------------------------ */

static void kernel_name(char *buf, size_t n, FcMathFn fn, int kind)
{
  snprintf(buf, n, "m_%s_%s", fn >= FC_MATH_COUNT ? FAST_NAME[fn - FC_MATH_COUNT] : fc_math_name(fn), KINDS[kind].tag);
}

static void build_kernel(LLVMModuleRef mod, LLVMContextRef ctx, FcMathFn fn, int kind)
{
  LLVMTypeRef ef = KINDS[kind].f64 ? LLVMDoubleTypeInContext(ctx) : LLVMFloatTypeInContext(ctx);
  unsigned lanes = KINDS[kind].lanes, w = lanes ? lanes : 1;
  LLVMTypeRef vt = lanes ? LLVMVectorType(ef, lanes) : ef;
  LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0), i64 = LLVMInt64TypeInContext(ctx);
  LLVMTypeRef params[4] = {ptr, ptr, ptr, i64};
  char name[64];
  kernel_name(name, sizeof name, fn, kind);
  LLVMValueRef f = LLVMAddFunction(mod, name, LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, 4, 0));
  unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
  for (unsigned i = 1; i <= 3; i++) LLVMAddAttributeAtIndex(f, i, LLVMCreateEnumAttribute(ctx, noalias, 0));
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ctx, f, "entry");
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(ctx, f, "loop");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ctx, f, "done");
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef n = LLVMGetParam(f, 3), zero = LLVMConstInt(i64, 0, 0);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGT, n, zero, ""), loop, done);
  LLVMPositionBuilderAtEnd(b, loop);
  LLVMValueRef i = LLVMBuildPhi(b, i64, "i");
  unsigned align = KINDS[kind].f64 ? 8 : 4;
  LLVMValueRef px = LLVMBuildGEP2(b, ef, LLVMGetParam(f, 0), &i, 1, "");
  LLVMValueRef x = LLVMBuildLoad2(b, vt, px, "");
  LLVMSetAlignment(x, align);
  LLVMValueRef y = NULL;
  if (fn < FC_MATH_COUNT && fc_math_arity(fn) == 2) {
    LLVMValueRef py = LLVMBuildGEP2(b, ef, LLVMGetParam(f, 1), &i, 1, "");
    y = LLVMBuildLoad2(b, vt, py, "");
    LLVMSetAlignment(y, align);
  }
  LLVMValueRef r = (int)fn == ERFC_FAST    ? fc_math_emit_erfc_fast(mod, b, x)
                   : (int)fn == EXP_NONPOS ? fc_math_emit_exp_nonpos(mod, b, x)
                                           : fc_math_emit(mod, b, fn, x, y);
  assert_true(LLVMTypeOf(r) == vt);
  LLVMValueRef po = LLVMBuildGEP2(b, ef, LLVMGetParam(f, 2), &i, 1, "");
  LLVMSetAlignment(LLVMBuildStore(b, r, po), align);
  LLVMValueRef next = LLVMBuildAdd(b, i, LLVMConstInt(i64, w, 0), "");
  LLVMValueRef inc[2] = {zero, next};
  LLVMBasicBlockRef from[2] = {entry, loop};
  LLVMAddIncoming(i, inc, from, 2);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, n, ""), loop, done);
  LLVMPositionBuilderAtEnd(b, done);
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
}

static LLVMTargetMachineRef make_tm(const char *cpu, const char *features)
{
  char *triple = LLVMGetDefaultTargetTriple(), *err = NULL;
  LLVMTargetRef t;
  if (LLVMGetTargetFromTriple(triple, &t, &err)) fail_msg("no target for %s: %s", triple, err);
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(t, triple, cpu, features, LLVMCodeGenLevelAggressive,
                                                    LLVMRelocPIC, LLVMCodeModelJITDefault);
  LLVMDisposeMessage(triple);
  assert_non_null(tm);
  return tm;
}

static void check_error(LLVMErrorRef e, const char *what)
{
  if (!e) return;
  char *msg = LLVMGetErrorMessage(e);
  fail_msg("%s: %s", what, msg);
}

/* Intrinsics that are single instructions (or short inline sequences) on every target. */
static bool call_allowed(const char *callee)
{
  static const char *const ok[] = {"llvm.fmuladd.", "llvm.fabs.", "llvm.copysign.", "llvm.sqrt.",
                                   "llvm.masked.gather.", "llvm.smax.", "llvm.smin.", "llvm.umax.",
                                   "llvm.umin.", "llvm.abs.", "llvm.is.fpclass."};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    if (!strncmp(callee, ok[i], strlen(ok[i]))) return true;
  return false;
}

/* Every `call` in the optimised IR goes to an allowed intrinsic; the scalar f32/f64 loops were
 * vectorised (their bodies mention a vector type). */
static void check_ir(LLVMModuleRef mod, const char *cfg, bool scalar_loops)
{
  char *ir = LLVMPrintModuleToString(mod);
  const char *dump = getenv("FC_MATH_IR"); /* FC_MATH_IR=file writes the host's optimised IR there */
  if (dump && *dump && scalar_loops) {
    FILE *f = fopen(dump, "w");
    if (!f) fail_msg("cannot write %s", dump);
    fputs(ir, f);
    fclose(f);
  }
  int calls = 0;
  for (const char *p = ir; (p = strstr(p, " call ")) != NULL; p++) {
    const char *at = strchr(p, '@');
    const char *eol = strchr(p, '\n');
    if (!at || (eol && at > eol)) continue;
    char callee[128] = {0};
    size_t len = strcspn(at + 1, "(");
    memcpy(callee, at + 1, len < sizeof callee - 1 ? len : sizeof callee - 1);
    if (!call_allowed(callee)) fail_msg("%s: optimised IR calls @%s", cfg, callee);
    calls++;
  }
  assert_true(calls > 0); /* the scan sees the intrinsics, so it would see a libcall */
  /* Every scalar loop but sin/cos/tan's, whose vectorisation depends on the target's gather cost. */
  for (int fn = 0; fn < (scalar_loops ? FC_MATH_COUNT : 0); fn++) {
    if (fn == FC_MATH_SIN || fn == FC_MATH_COS || fn == FC_MATH_TAN) continue;
    for (int kind = K_F32; kind <= K_F64; kind++) {
      char name[64], def[80];
      kernel_name(name, sizeof name, (FcMathFn)fn, kind);
      snprintf(def, sizeof def, "@%s(", name);
      const char *body = strstr(ir, def);
      assert_non_null(body);
      const char *end = strstr(body, "\n}");
      assert_non_null(end);
      const char *vec = strstr(body, KINDS[kind].f64 ? "x double>" : "x float>");
      if (!vec || vec > end) fail_msg("%s: scalar loop %s was not vectorised", cfg, name);
    }
  }
  LLVMDisposeMessage(ir);
}

/* No call instruction at all in the generated assembly. */
static void check_asm(LLVMTargetMachineRef tm, LLVMModuleRef mod, const char *cfg)
{
  char *err = NULL;
  LLVMMemoryBufferRef buf;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &err, &buf))
    fail_msg("%s: cannot emit assembly: %s", cfg, err);
  const char *s = LLVMGetBufferStart(buf);
  size_t n = LLVMGetBufferSize(buf);
  char *text = malloc(n + 1);
  memcpy(text, s, n);
  text[n] = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    while (*line == ' ' || *line == '\t') line++;
    if (!strncmp(line, "call", 4) || !strncmp(line, "jmp\t", 4) || !strncmp(line, "bl\t", 3))
      if (strncmp(line, "jmp\t.", 5)) fail_msg("%s: assembly has a call: %s", cfg, line);
  }
  free(text);
  LLVMDisposeMemoryBuffer(buf);
}

static void optimise(LLVMModuleRef mod, LLVMTargetMachineRef tm, const char *cfg)
{
  char *err = NULL;
  if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &err)) fail_msg("%s: invalid IR: %s", cfg, err);
  LLVMDisposeMessage(err);
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  check_error(LLVMRunPasses(mod, "default<O3>", tm, opts), "LLVMRunPasses");
  LLVMDisposePassBuilderOptions(opts);
}

/* Builds every kernel, optimises for (cpu, features), checks the IR (and the assembly when asked),
 * JIT-compiles and looks the kernels up. */
static void make_jit(Jit *j, const char *cpu, const char *features, bool baseline, const char *cfg)
{
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMContextRef ctx = LLVMOrcThreadSafeContextGetContext(tsc);
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("fcmath_test", ctx);
  LLVMTargetMachineRef tm = make_tm(cpu, features);
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(mod, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(mod, dl);
  LLVMDisposeTargetData(dl);
  /* The baseline build (checked for calls in its assembly) has the vector kernels only: it exists to
   * run the algorithms without FMA, which the scalar loops would not add to. */
  int nkinds = baseline ? K_V4F64 + 1 : K_COUNT;
  for (int fn = 0; fn < N_SLOTS; fn++)
    for (int kind = 0; kind < nkinds; kind++)
      if (fn < FC_MATH_COUNT || !KINDS[kind].f64) build_kernel(mod, ctx, (FcMathFn)fn, kind);
  optimise(mod, tm, cfg);
  check_ir(mod, cfg, !baseline);
  if (baseline) {
    LLVMModuleRef clone = LLVMCloneModule(mod);
    check_asm(tm, clone, cfg);
    LLVMDisposeModule(clone);
  }
  LLVMOrcLLJITBuilderRef jb = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(jb, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
  check_error(LLVMOrcCreateLLJIT(&j->jit, jb), "LLVMOrcCreateLLJIT");
  LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsc);
  check_error(LLVMOrcLLJITAddLLVMIRModule(j->jit, LLVMOrcLLJITGetMainJITDylib(j->jit), tsm), "add module");
  LLVMOrcDisposeThreadSafeContext(tsc);
  for (int fn = 0; fn < N_SLOTS; fn++) {
    for (int kind = 0; kind < nkinds; kind++) {
      if (fn >= FC_MATH_COUNT && KINDS[kind].f64) continue;
      char name[64];
      kernel_name(name, sizeof name, (FcMathFn)fn, kind);
      LLVMOrcExecutorAddress addr = 0;
      check_error(LLVMOrcLLJITLookup(j->jit, &addr, name), name);
      j->k[fn][kind] = (Kernel)(uintptr_t)addr;
    }
  }
}

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int setup(void **state)
{
  (void)state;
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
  char *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
  double t0 = now();
  make_jit(&host, cpu, features, false, "host");
  printf("  host kernels built, optimised and compiled in %.2f s\n", now() - t0);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
#if defined(__x86_64__)
  t0 = now();
  make_jit(&base, "x86-64", "", true, "x86-64 baseline");
  printf("  x86-64 baseline kernels built, checked and compiled in %.2f s\n", now() - t0);
  have_base = true;
#endif
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  if (host.jit) LLVMOrcDisposeLLJIT(host.jit);
  if (base.jit) LLVMOrcDisposeLLJIT(base.jit);
  return 0;
}

/* ---- references and error measure ------------------------------------------------------------------ */

static long double ref_fn(FcMathFn fn, long double x, long double y, bool f64)
{
  if (!f64) { /* double libm for float arguments: far below a float ulp */
    double d = (double)x, e = (double)y;
    switch (fn) {
    case FC_MATH_EXP: return exp(d);
    case FC_MATH_EXPM1: return expm1(d);
    case FC_MATH_LOG: return log(d);
    case FC_MATH_LOG1P: return log1p(d);
    case FC_MATH_TANH: return tanh(d);
    case FC_MATH_SIGMOID: return 1 / (1 + exp(-d));
    case FC_MATH_SOFTPLUS: return d > 0 ? d + log1p(exp(-d)) : log1p(exp(d));
    case FC_MATH_ERF: return erf(d);
    case FC_MATH_SIN: return sin(d);
    case FC_MATH_COS: return cos(d);
    case FC_MATH_TAN: return tan(d);
    case FC_MATH_ASIN: return asin(d);
    case FC_MATH_ACOS: return acos(d);
    case FC_MATH_ATAN: return atan(d);
    case FC_MATH_SINH: return sinh(d);
    case FC_MATH_COSH: return cosh(d);
    case FC_MATH_ASINH: return asinh(d);
    case FC_MATH_ACOSH: return acosh(d);
    case FC_MATH_ATANH: return atanh(d);
    case FC_MATH_POW: return pow(d, e);
    case FC_MATH_COUNT: break;
    }
  } else {
    switch (fn) {
    case FC_MATH_EXP: return expl(x);
    case FC_MATH_EXPM1: return expm1l(x);
    case FC_MATH_LOG: return logl(x);
    case FC_MATH_LOG1P: return log1pl(x);
    case FC_MATH_TANH: return tanhl(x);
    case FC_MATH_SIGMOID: return 1 / (1 + expl(-x));
    case FC_MATH_SOFTPLUS: return x > 0 ? x + log1pl(expl(-x)) : log1pl(expl(x));
    case FC_MATH_ERF: return erfl(x);
    case FC_MATH_SIN: return sinl(x);
    case FC_MATH_COS: return cosl(x);
    case FC_MATH_TAN: return tanl(x);
    case FC_MATH_ASIN: return asinl(x);
    case FC_MATH_ACOS: return acosl(x);
    case FC_MATH_ATAN: return atanl(x);
    case FC_MATH_SINH: return sinhl(x);
    case FC_MATH_COSH: return coshl(x);
    case FC_MATH_ASINH: return asinhl(x);
    case FC_MATH_ACOSH: return acoshl(x);
    case FC_MATH_ATANH: return atanhl(x);
    case FC_MATH_POW: return powl(x, y);
    case FC_MATH_COUNT: break;
    }
  }
  return NAN;
}

/* Error of got against the exact-ish ref in ulps of the target format; INFINITY for a wrong NaN, a wrong
 * infinity or a zero of the wrong sign. Values beyond the format's range count as 2^(emax+1). */
static double ulp_err(long double got, long double ref, bool f64)
{
  if (isnan(ref)) return isnan(got) ? 0 : INFINITY;
  if (isnan(got)) return INFINITY;
  if (isinf(ref)) return got == ref ? 0 : INFINITY;
  if (ref == 0 && got == 0) return signbit(ref) == signbit(got) ? 0 : INFINITY;
  int prec = f64 ? 53 : 24, emin = f64 ? -1074 : -149;
  long double big = f64 ? 0x1p1024L : 0x1p128L;
  long double r = fabsl(ref) >= big ? copysignl(big, ref) : ref;
  long double g = isinf(got) ? copysignl(big, got) : got;
  int e = 0;
  if (r != 0) frexpl(r, &e);
  int ue = r != 0 && e - prec > emin ? e - prec : emin;
  return (double)(fabsl(g - r) / ldexpl(1, ue));
}

typedef struct Stat {
  double max_ulp;
  long double x, y, got, ref; /* the worst case */
  long n;
} Stat;

static void stat_add(Stat *s, long double x, long double y, long double got, long double ref, bool f64)
{
  double e = ulp_err(got, ref, f64);
  s->n++;
  if (e > s->max_ulp || (isnan(e) && !isnan(s->max_ulp))) {
    s->max_ulp = e;
    s->x = x;
    s->y = y;
    s->got = got;
    s->ref = ref;
  }
}

static void stat_merge(Stat *a, const Stat *b)
{
  a->n += b->n;
  if (b->max_ulp > a->max_ulp) {
    long n = a->n;
    *a = *b;
    a->n = n;
  }
}

/* Runs kernel `kind` of fn on n inputs (y may be NULL) and folds the errors into s. */
static void run_batch(const Jit *j, FcMathFn fn, int kind, const void *x, const void *y, size_t n, Stat *s)
{
  bool f64 = KINDS[kind].f64;
  size_t es = f64 ? 8 : 4;
  void *out = malloc(n * es);
  void *yy = y ? (void *)y : calloc(n, es);
  j->k[fn][kind](x, yy, out, (int64_t)n);
  for (size_t i = 0; i < n; i++) {
    long double xv = f64 ? ((const double *)x)[i] : ((const float *)x)[i];
    long double yv = f64 ? ((const double *)yy)[i] : ((const float *)yy)[i];
    long double got = f64 ? ((double *)out)[i] : ((float *)out)[i];
    stat_add(s, xv, yv, got, ref_fn(fn, xv, yv, f64), f64);
  }
  if (!y) free(yy);
  free(out);
}

static int nthreads(void)
{
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}

/* ---- inputs ------------------------------------------------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void)
{
  uint64_t x = rng_state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return rng_state = x;
}

static double uniform(double lo, double hi)
{
  return lo + (hi - lo) * (double)(rng() >> 11) * 0x1p-53;
}

/* Special values, both signs: zeros, subnormals, limits and the boundaries of the algorithms' ranges. */
static size_t specials(double *v, bool f64)
{
  static const double seeds[] = {0, 0x1p-1074, 0x1p-1022, 0x1p-149, 0x1p-126, 0x1.fffffcp-127, 1e-300, 1e-30,
                                1e-10, 0x1p-12, 0x1p-28, 0.1, 0.25, 0.5, 0.34657359027997264, 0.6,
                                0.625, 0.75, 1, 1.25, 1.5, 2, 2.5, 3, 3.92, 3.93, 4, 5.92, 5.95, 6,
                                M_PI_4, M_PI_2, M_PI, 2 * M_PI, 9, 10, 19, 20, 22, 30, 50, 87.3, 88.5,
                                88.72283935546875, 88.7228394, 89, 89.4, 90, 100, 103.9, 104, 105, 500,
                                709.78, 709.79, 710, 710.5, 745, 745.2, 746, 750, 1e5, 1e6, 8388608.5,
                                16777216, 1e10, 0x1p28, 0x1p40, 1e22, 1e30, 3.4e38, 1e300, DBL_MAX, FLT_MAX,
                                INFINITY, NAN};
  size_t n = 0;
  for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
    double b = f64 ? seeds[i] : (double)(float)seeds[i];
    double nb = nextafter(b, INFINITY), pb = nextafter(b, 0);
    if (!f64) {
      nb = nextafterf((float)b, INFINITY);
      pb = nextafterf((float)b, 0);
    }
    double cand[3] = {b, nb, pb};
    for (int c = 0; c < (isfinite(b) && b != 0 ? 3 : 1); c++) {
      v[n++] = cand[c];
      v[n++] = -cand[c];
    }
  }
  return n;
}

/* ---- the checks ------------------------------------------------------------------------------------- */

typedef struct Sweep {
  const Jit *j;
  FcMathFn fn;
  uint64_t start, count, stride;
  Stat s;
} Sweep;

/* f32 kernels over bit patterns start + i*stride (mod 2^32). */
static void *sweep_f32(void *arg)
{
  Sweep *w = arg;
  enum { BATCH = 1 << 14 };
  float *x = malloc(BATCH * sizeof *x);
  for (uint64_t i = 0; i < w->count; i += BATCH) {
    size_t n = w->count - i < BATCH ? (size_t)(w->count - i) : BATCH;
    for (size_t q = 0; q < n; q++) {
      uint32_t bits = (uint32_t)(w->start + (i + q) * w->stride);
      memcpy(&x[q], &bits, 4);
    }
    run_batch(w->j, w->fn, K_V8F32, x, NULL, n - n % 8, &w->s);
  }
  free(x);
  return NULL;
}

static void sweep_all_f32(const Jit *j, FcMathFn fn, uint64_t count, Stat *s)
{
  int nt = nthreads();
  Sweep w[16];
  pthread_t th[16];
  uint64_t per = count / (uint64_t)nt;
  uint64_t stride = count >= (UINT64_C(1) << 32) ? 1 : (UINT64_C(1) << 32) / count | 1;
  for (int t = 0; t < nt; t++) {
    w[t] = (Sweep){.j = j, .fn = fn, .start = (uint64_t)t * per * stride, .count = per, .stride = stride};
    if (pthread_create(&th[t], NULL, sweep_f32, &w[t])) fail_msg("pthread_create");
  }
  for (int t = 0; t < nt; t++) {
    pthread_join(th[t], NULL);
    stat_merge(s, &w[t].s);
  }
}

/* Focused f64 (and f32) inputs: uniform in [-a, a] for several a, and log-uniform magnitudes. */
static size_t focused(double *v, size_t n, double a, bool f64)
{
  for (size_t i = 0; i < n; i++) {
    double x = a > 0 ? uniform(-a, a) : copysign(exp2(uniform(-a, a)), uniform(-1, 1));
    v[i] = f64 ? x : (double)(float)x;
  }
  return n;
}

static void to_kind(const double *v, size_t n, bool f64, void *out)
{
  for (size_t i = 0; i < n; i++) {
    if (f64)
      ((double *)out)[i] = v[i];
    else
      ((float *)out)[i] = (float)v[i];
  }
}

typedef struct Slice {
  const Jit *j;
  FcMathFn fn;
  int kind;
  const void *x, *y;
  size_t n;
  Stat s;
} Slice;

static void *run_slice(void *arg)
{
  Slice *sl = arg;
  run_batch(sl->j, sl->fn, sl->kind, sl->x, sl->y, sl->n, &sl->s);
  return NULL;
}

/* Runs fn's kernel `kind` on the double values v (rounded to float for f32 kinds), on all cores. */
static void run_values(const Jit *j, FcMathFn fn, int kind, const double *v, const double *yv, size_t n, Stat *s)
{
  bool f64 = KINDS[kind].f64;
  size_t w = KINDS[kind].lanes ? KINDS[kind].lanes : 1, es = f64 ? 8 : 4;
  n -= n % w;
  char *x = malloc(n * 8), *y = yv ? malloc(n * 8) : NULL;
  to_kind(v, n, f64, x);
  if (yv) to_kind(yv, n, f64, y);
  int nt = n < 4096 ? 1 : nthreads();
  size_t per = (n / (size_t)nt) / w * w;
  Slice sl[16];
  pthread_t th[16];
  for (int t = 0; t < nt; t++) {
    size_t off = (size_t)t * per, cnt = t == nt - 1 ? n - off : per;
    sl[t] = (Slice){.j = j, .fn = fn, .kind = kind, .x = x + off * es, .y = y ? y + off * es : NULL, .n = cnt};
    if (pthread_create(&th[t], NULL, run_slice, &sl[t])) fail_msg("pthread_create");
  }
  for (int t = 0; t < nt; t++) {
    pthread_join(th[t], NULL);
    stat_merge(s, &sl[t].s);
  }
  free(x);
  free(y);
}

/* Unary function inputs: specials (padded to a multiple of 8) plus focused ranges. */
static size_t unary_inputs(FcMathFn fn, double *v, size_t cap, bool f64, size_t per_range)
{
  size_t n = specials(v, f64);
  static const double ranges[] = {1, 4, 12, 40, 120, 800, -1100};
  double dom = fn == FC_MATH_ASIN || fn == FC_MATH_ACOS || fn == FC_MATH_ATANH ? 1.0 : 0;
  for (size_t r = 0; r < sizeof ranges / sizeof ranges[0] && n + per_range <= cap; r++) {
    double a = dom != 0 ? (r < 2 ? dom : -100) : ranges[r];
    n += focused(v + n, per_range, a, f64);
  }
  if (fn == FC_MATH_ACOSH)
    for (size_t i = 0; i < n; i++) v[i] = fabs(v[i]) + (i % 3 == 0 ? 1 : 0);
  if ((fn == FC_MATH_SIN || fn == FC_MATH_COS || fn == FC_MATH_TAN) && n + per_range <= cap) {
    /* Doubles nearest to k pi/2: the hardest cases for the reduction. */
    for (size_t i = 0; i < per_range; i++) {
      long double k = (long double)(rng() % (f64 ? (UINT64_C(1) << 27) : (UINT64_C(1) << 40)));
      double x = (double)(k * 1.57079632679489661923132169163975144L);
      v[n++] = f64 ? x : (double)(float)x;
    }
  }
  return n;
}

static void report(const char *cfg, FcMathFn fn, int kind, const Stat *s)
{
  bool f64 = KINDS[kind].f64;
  double bound = fc_math_max_ulp(fn, f64);
  printf("  %-16s %-8s %-6s max %7.3f ulp (bound %g) over %ld values", cfg, fc_math_name(fn), KINDS[kind].tag,
         s->max_ulp, bound, s->n);
  if (s->max_ulp > 0) {
    printf("; worst at x=%.17Lg", s->x);
    if (fn == FC_MATH_POW) printf(" y=%.17Lg", s->y);
    printf(": got %.17Lg want %.17Lg", s->got, s->ref);
  }
  printf("%s\n", s->max_ulp <= bound ? "" : "  <-- EXCEEDS THE BOUND");
  fflush(stdout);
  if (!(s->max_ulp <= bound)) failures++;
}

/* Vector kernels get the dense sweeps (when `full`); the scalar loops, which compute bit-identical
 * results (test_scalar_vector_agree), get the special values and a small focused sample. */
static void check_unary(const Jit *j, const char *cfg, FcMathFn fn, bool full)
{
  int nkinds = j == &base ? K_V4F64 + 1 : K_COUNT;
  for (int kind = 0; kind < nkinds; kind++) {
    bool f64 = KINDS[kind].f64, dense = full && KINDS[kind].lanes;
    size_t per = dense ? (f64 ? 1 << 16 : 1 << 15) : 1 << 12;
    size_t cap = 1024 + 9 * per;
    double *v = malloc(cap * sizeof *v);
    size_t n = unary_inputs(fn, v, cap, f64, per);
    Stat s = {0};
    run_values(j, fn, kind, v, NULL, n, &s);
    const char *ex = getenv("FC_MATH_EXHAUSTIVE");
    bool exhaustive = ex && *ex == '1';
    if (dense && !f64) {
      /* 2^22 patterns for the functions computed in f32, 2^20 for those rounded from double (their
       * error is 0.5 ulp plus double rounding's 2^-29 wherever they are accurate at all). */
      bool in_f32 = fn <= FC_MATH_ERF; /* exp ... erf: the enum lists them first */
      sweep_all_f32(j, fn, exhaustive ? UINT64_C(1) << 32 : UINT64_C(1) << (in_f32 ? 22 : 20), &s);
    }
    if (dense && f64) {
      /* 2^18 bit patterns spread over all doubles (2^24 in exhaustive mode); most land where results
       * saturate, so the focused ranges above carry the weight. */
      size_t m = exhaustive ? 1 << 24 : 1 << 18;
      double *p = malloc(m * sizeof *p);
      for (size_t i = 0; i < m; i++) {
        uint64_t bits = (uint64_t)i * (UINT64_MAX / m + 1 + 0x9e3779b97) + 0x123456789;
        memcpy(&p[i], &bits, 8);
      }
      run_values(j, fn, kind, p, NULL, m, &s);
      free(p);
    }
    report(cfg, fn, kind, &s);
    free(v);
  }
}

static void check_pow(const Jit *j, const char *cfg, bool full)
{
  int nkinds = j == &base ? K_V4F64 + 1 : K_COUNT;
  for (int kind = 0; kind < nkinds; kind++) {
    bool f64 = KINDS[kind].f64;
    double sp[512];
    size_t ns = specials(sp, f64);
    size_t per = full && KINDS[kind].lanes ? 1 << 16 : 1 << 12;
    size_t cap = ns * ns + 4 * per;
    double *x = malloc(cap * sizeof *x), *y = malloc(cap * sizeof *y);
    size_t n = 0;
    for (size_t a = 0; a < ns; a++)
      for (size_t b = 0; b < ns; b++) {
        x[n] = sp[a];
        y[n++] = sp[b];
      }
    double lim = f64 ? 1000 : 120;
    for (size_t i = 0; i < per; i++, n++) { /* random magnitudes and exponents */
      x[n] = exp2(uniform(-30, 30));
      y[n] = uniform(-lim / 30, lim / 30);
    }
    for (size_t i = 0; i < per; i++, n++) { /* negative bases with integer exponents */
      x[n] = -exp2(uniform(-8, 8));
      y[n] = nearbyint(uniform(-lim / 8, lim / 8));
    }
    for (size_t i = 0; i < per; i++, n++) { /* results near overflow and underflow */
      x[n] = uniform(0.5, 2);
      double l2 = log2(x[n]);
      double target = (i & 1 ? 1 : -1) * (f64 ? uniform(1015, 1080) : uniform(120, 152));
      y[n] = fabs(l2) > 1e-3 ? target / l2 : 2;
    }
    for (size_t i = 0; i < per; i++, n++) { /* bases near 1, large exponents */
      x[n] = 1 + uniform(-1e-3, 1e-3);
      y[n] = uniform(-1e6, 1e6);
    }
    if (!f64)
      for (size_t i = 0; i < n; i++) {
        x[i] = (float)x[i];
        y[i] = (float)y[i];
      }
    Stat s = {0};
    run_values(j, FC_MATH_POW, kind, x, y, n, &s);
    report(cfg, FC_MATH_POW, kind, &s);
    free(x);
    free(y);
  }
}

/* The scalar and vector kernels of one type compute bit-identical results. */
static void check_scalar_matches_vector(const Jit *j, FcMathFn fn)
{
  for (int f64 = 0; f64 <= 1; f64++) {
    size_t n = 4096, es = f64 ? 8 : 4;
    double v[4096], w[4096];
    focused(v, n / 2, 30, f64);
    focused(v + n / 2, n / 2, -60, f64);
    focused(w, n, 3, f64);
    void *x = malloc(n * es), *y = malloc(n * es), *o1 = malloc(n * es), *o2 = malloc(n * es);
    to_kind(v, n, f64, x);
    to_kind(w, n, f64, y);
    j->k[fn][f64 ? K_V4F64 : K_V8F32](x, y, o1, (int64_t)n);
    j->k[fn][f64 ? K_F64 : K_F32](x, y, o2, (int64_t)n);
    for (size_t i = 0; i < n; i++) {
      bool same = !memcmp((char *)o1 + i * es, (char *)o2 + i * es, es);
      double a = f64 ? ((double *)o1)[i] : ((float *)o1)[i], b = f64 ? ((double *)o2)[i] : ((float *)o2)[i];
      if (!same && !(isnan(a) && isnan(b)))
        fail_msg("%s %s: vector %.17g, scalar %.17g at x=%.17g", fc_math_name(fn), f64 ? "f64" : "f32", a, b,
                 v[i]);
    }
    free(x);
    free(y);
    free(o1);
    free(o2);
  }
}

/* FC_MATH_ONLY=exp,log,... restricts the accuracy tests to the named functions. */
static bool selected(int fn)
{
  const char *only = getenv("FC_MATH_ONLY");
  if (!only || !*only) return true;
  const char *name = fc_math_name((FcMathFn)fn);
  size_t len = strlen(name);
  for (const char *p = only; (p = strstr(p, name)) != NULL; p += len)
    if ((p == only || p[-1] == ',') && (p[len] == ',' || p[len] == 0)) return true;
  return false;
}

static void test_accuracy_host(void **state)
{
  (void)state;
  failures = 0;
  for (int fn = 0; fn < FC_MATH_COUNT; fn++) {
    if (!selected(fn)) continue;
    if (fn == FC_MATH_POW)
      check_pow(&host, "host", true);
    else
      check_unary(&host, "host", (FcMathFn)fn, true);
  }
  if (failures) fail_msg("%d function/type pairs exceed their documented bound", failures);
}

static void test_accuracy_baseline(void **state)
{
  (void)state;
  if (!have_base) skip();
  failures = 0;
  for (int fn = 0; fn < FC_MATH_COUNT; fn++) {
    if (!selected(fn)) continue;
    if (fn == FC_MATH_POW)
      check_pow(&base, "x86-64", false);
    else
      check_unary(&base, "x86-64", (FcMathFn)fn, false);
  }
  if (failures) fail_msg("%d function/type pairs exceed their documented bound", failures);
}

static void test_scalar_vector_agree(void **state)
{
  (void)state;
  for (int fn = 0; fn < FC_MATH_COUNT; fn++) check_scalar_matches_vector(&host, (FcMathFn)fn);
}

/* Informational: nanoseconds per element of the vector kernels. */
static void test_throughput(void **state)
{
  (void)state;
  enum { N = 1 << 14, REPS = 16 };
  static float xf[N], yf[N], of[N];
  static double xd[N], yd[N], od[N];
  for (int i = 0; i < N; i++) {
    xf[i] = (float)uniform(0.01, 4);
    yf[i] = (float)uniform(-3, 3);
    xd[i] = uniform(0.01, 4);
    yd[i] = uniform(-3, 3);
  }
  printf("  ns/element      v8f32   v4f64\n");
  for (int fn = 0; fn < FC_MATH_COUNT; fn++) {
    double t[2];
    for (int kind = 0; kind < 2; kind++) {
      double t0 = now();
      for (int r = 0; r < REPS; r++) {
        if (kind == 0) host.k[fn][K_V8F32](xf, yf, of, N);
        if (kind == 1) host.k[fn][K_V4F64](xd, yd, od, N);
      }
      t[kind] = (now() - t0) / ((double)N * REPS) * 1e9;
    }
    printf("  %-12s %7.2f %7.2f\n", fc_math_name((FcMathFn)fn), t[0], t[1]);
  }
  for (int i = 0; i < N; i++) yf[i] = -xf[i] * 20; /* exp_nonpos's domain */
  for (int fn = ERFC_FAST; fn < N_SLOTS; fn++) {
    double t0 = now();
    for (int r = 0; r < REPS; r++) host.k[fn][K_V8F32](fn == EXP_NONPOS ? yf : xf, NULL, of, N);
    printf("  %-12s %7.2f\n", FAST_NAME[fn - FC_MATH_COUNT], (now() - t0) / ((double)N * REPS) * 1e9);
  }
}

/* fc_math_emit_erfc_fast against double erfc: a dense sweep of [-6, 6], every 256th float bit pattern
 * and the special values; absolute error everywhere and relative error where erfc(x) >= 1e-2 and
 * where erfc(x) >= 1e-7 (it grows with |log erfc|), the bounds fcmath.h states; NaN, +-inf, zeros and
 * subnormals exactly. */
static void check_erfc_fast(const Jit *j, const char *cfg, int kind)
{
  enum { DENSE = 1 << 22, STRIDED = 1 << 24 };
  double sp[512];
  size_t ns = specials(sp, false), n = ns + DENSE + STRIDED;
  float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
  for (size_t i = 0; i < ns; i++) x[i] = (float)sp[i];
  for (size_t i = 0; i < DENSE; i++) x[ns + i] = (float)(-6 + 12 * (double)i / DENSE);
  for (size_t i = 0; i < STRIDED; i++) {
    uint32_t bits = (uint32_t)i << 8 | (uint32_t)(i & 0xff);
    memcpy(&x[ns + DENSE + i], &bits, 4);
  }
  j->k[ERFC_FAST][kind](x, NULL, y, (int64_t)n);
  double max_abs = 0, max_rel[2] = {0, 0}, at_abs = 0, at_rel[2] = {0, 0};
  for (size_t i = 0; i < n; i++) {
    double xv = x[i], ref = erfc(xv), got = y[i];
    if (isnan(xv)) {
      if (!isnan(got)) fail_msg("%s erfc_fast(NaN) = %g", cfg, got);
      continue;
    }
    if ((isinf(xv) || fabs(xv) < 0x1p-126) && got != ref)
      fail_msg("%s erfc_fast(%a) = %.9g, want %.9g", cfg, xv, got, ref);
    double ea = fabs(got - ref);
    if (!(ea <= max_abs)) max_abs = ea, at_abs = xv;
    for (int r = 0; r < 2; r++) {
      double er = ref >= (r ? 1e-7 : 1e-2) ? ea / ref : 0;
      if (!(er <= max_rel[r])) max_rel[r] = er, at_rel[r] = xv;
    }
  }
  printf("  %-16s erfc_fast %-6s max abs error %.3g at x=%.9g; max rel error %.3g at x=%.9g (erfc >= 1e-2), "
         "%.3g at x=%.9g (erfc >= 1e-7)\n", cfg, KINDS[kind].tag, max_abs, at_abs, max_rel[0], at_rel[0],
         max_rel[1], at_rel[1]);
  fflush(stdout);
  assert_true(max_abs <= 2e-7);
  assert_true(max_rel[0] <= 8e-7);
  assert_true(max_rel[1] <= 4e-6);
  free(x);
  free(y);
}

static void test_erfc_fast(void **state)
{
  (void)state;
  check_erfc_fast(&host, "host", K_V8F32);
  check_erfc_fast(&host, "host", K_F32);
  if (have_base) check_erfc_fast(&base, "x86-64", K_V8F32);
}

/* fc_math_emit_exp_nonpos against double exp in ulp: 2^22 points evenly over [-110, 0], every 256th bit
 * pattern of a negative float, and the special values of its domain (x <= 0, NaN), within the bound
 * fcmath.h states. */
static void check_exp_nonpos(const Jit *j, const char *cfg, int kind, double bound)
{
  enum { DENSE = 1 << 22, STRIDED = 1 << 23 };
  double sp[512];
  size_t ns = specials(sp, false), n = 0;
  float *x = malloc((ns + DENSE + STRIDED) * sizeof *x), *y = malloc((ns + DENSE + STRIDED) * sizeof *y);
  for (size_t i = 0; i < ns; i++)
    if (!(sp[i] > 0)) x[n++] = (float)sp[i];
  for (size_t i = 0; i < DENSE; i++) x[n++] = (float)(-110 * (double)i / DENSE);
  for (size_t i = 0; i < STRIDED; i++) {
    uint32_t bits = 0x80000000u | (uint32_t)i << 8 | (uint32_t)(i & 0xff);
    memcpy(&x[n++], &bits, 4);
  }
  j->k[EXP_NONPOS][kind](x, NULL, y, (int64_t)n);
  Stat s = {0};
  for (size_t i = 0; i < n; i++) stat_add(&s, x[i], 0, y[i], exp((double)x[i]), false);
  printf("  %-16s exp_nonpos %-6s max %.3f ulp (bound %g) over %ld values", cfg, KINDS[kind].tag, s.max_ulp, bound,
         s.n);
  if (s.max_ulp > 0) printf("; worst at x=%.9Lg: got %.9Lg want %.9Lg", s.x, s.got, s.ref);
  printf("\n");
  fflush(stdout);
  assert_true(s.max_ulp <= bound);
  free(x);
  free(y);
}

static void test_exp_nonpos(void **state)
{
  (void)state;
  check_exp_nonpos(&host, "host", K_V8F32, EXPNP_ULP);
  check_exp_nonpos(&host, "host", K_F32, EXPNP_ULP);
  if (have_base) check_exp_nonpos(&base, "x86-64", K_V8F32, EXPNP_ULP_BASE);
}

static void test_names(void **state)
{
  (void)state;
  for (int fn = 0; fn < FC_MATH_COUNT; fn++) {
    assert_non_null(fc_math_name((FcMathFn)fn));
    assert_true(fc_math_max_ulp((FcMathFn)fn, false) >= 0.5 && fc_math_max_ulp((FcMathFn)fn, true) >= 0.5);
  }
  assert_int_equal(fc_math_arity(FC_MATH_POW), 2);
  assert_int_equal(fc_math_arity(FC_MATH_EXP), 1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_scalar_vector_agree),
      cmocka_unit_test(test_throughput),
      cmocka_unit_test(test_erfc_fast),
      cmocka_unit_test(test_exp_nonpos),
      cmocka_unit_test(test_accuracy_host),
      cmocka_unit_test(test_accuracy_baseline),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
