/* test_cpu_features.c — the CPU-feature check of built programs: the runtime's matching of a model's
 * required list against a host set (runtime/cpu.c), with made-up hosts so it does not depend on the
 * machine, and the features codegen records for a --cpu (codegen/cg_cpu_features.cpp). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cg_private.h"
#include "flowrt_internal.h"

/* A host set holding the named features (comma-separated). */
static uint64_t host(const char *names) {
  uint64_t have = 0;
  for (const char *p = names; *p;) {
    size_t len = strcspn(p, ",");
    int i = frt_cpu_feature_index(p, len);
    assert_true(i >= 0);
    have |= (uint64_t)1 << i;
    p += len + (p[len] == ',');
  }
  return have;
}

static void test_missing(void **state) {
  (void)state;
  char out[256];
  uint64_t avx2_host = host("sse4.2,avx,avx2,fma,f16c,bmi,bmi2");
  assert_int_equal(frt_cpu_missing("avx,avx2,fma", avx2_host, out, sizeof out), 0);
  assert_string_equal(out, "");
  /* skylake-avx512 code on an AVX2-only host (a Zen 3) */
  assert_int_equal(frt_cpu_missing("avx,avx2,fma,avx512f,avx512bw,avx512dq,avx512vl", avx2_host, out, sizeof out), 4);
  assert_string_equal(out, "avx512f, avx512bw, avx512dq, avx512vl");
  /* sapphirerapids code on an AVX-512 host without AMX and FP16 (an Ice Lake) */
  uint64_t icx = avx2_host | host("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni");
  assert_int_equal(frt_cpu_missing("avx512f,avx512vnni,avx512fp16,amx-tile", icx, out, sizeof out), 2);
  assert_string_equal(out, "avx512fp16, amx-tile");
  /* Names are matched whole: "avx" is not "avx2", and a name this runtime does not know is not held
   * against the CPU. */
  assert_int_equal(frt_cpu_missing("avx2", host("avx"), out, sizeof out), 1);
  assert_int_equal(frt_cpu_missing("avx", host("avx2"), out, sizeof out), 1);
  assert_int_equal(frt_cpu_missing("avx2,future-feature,,", avx2_host, out, sizeof out), 0);
  assert_int_equal(frt_cpu_missing("", 0, out, sizeof out), 0);
  assert_int_equal(frt_cpu_missing(NULL, 0, out, sizeof out), 0);
  /* A small buffer is cut, never overrun; the count stays right. */
  char tiny[8];
  assert_int_equal(frt_cpu_missing("avx512f,avx512bw,avx512dq", 0, tiny, sizeof tiny), 3);
  assert_true(strlen(tiny) < sizeof tiny);
}

static void test_check_host(void **state) {
  (void)state;
  char msg[512];
  assert_int_equal(frt_cpu_check(NULL, "x", msg, sizeof msg), 0);
  assert_int_equal(frt_cpu_check("", "x", msg, sizeof msg), 0);
  /* What the host has passes; the host's set is the same on every call. */
  uint64_t have = frt_cpu_host_features();
  assert_true(have == frt_cpu_host_features());
  char list[1024] = "";
  for (int i = 0; i < 64; i++)
    if (have >> i & 1) {
      static const char *const names[] = {
#define FRT_CPU_FEATURE(name, leaf, subleaf, reg, bit, state) name,
#include "cpu_features.def"
#undef FRT_CPU_FEATURE
      };
      strcat(list, *list ? "," : "");
      strcat(list, names[i]);
    }
  assert_int_equal(frt_cpu_check(list, "native", msg, sizeof msg), 0);
  assert_string_equal(msg, "");
}

/* The features recorded for a CPU name: those the CPU implies, within the runtime's list. */
static void features_of(const char *triple, const char *cpu, char *buf, size_t cap) {
  FcCodegenOptions o = {.triple = triple, .cpu = cpu, .opt_level = 2};
  FcTarget *t = NULL;
  FcDiag d;
  fc_diag_init(&d);
  assert_int_equal(fc_target_resolve(&o, &t, &d), FC_OK);
  fc_cg_cpu_features(t, buf, cap);
  fc_target_free(t);
}

static bool listed(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && memcmp(p, name, n) == 0) return true;
    p += len + (p[len] == ',');
  }
  return false;
}

static void test_recorded(void **state) {
  (void)state;
  char f[1024];
  features_of("x86_64-pc-linux-gnu", "x86-64-v3", f, sizeof f);
  assert_true(listed(f, "avx2") && listed(f, "fma") && listed(f, "avx") && listed(f, "bmi2"));
  assert_false(listed(f, "avx512f"));
  features_of("x86_64-pc-linux-gnu", "skylake-avx512", f, sizeof f);
  assert_true(listed(f, "avx512f") && listed(f, "avx512bw") && listed(f, "avx512vl") && listed(f, "avx2"));
  assert_false(listed(f, "amx-tile") || listed(f, "avx512fp16"));
  features_of("x86_64-pc-linux-gnu", "sapphirerapids", f, sizeof f);
  assert_true(listed(f, "amx-tile") && listed(f, "avx512fp16"));
  /* The matching agrees: skylake-avx512 code needs exactly the AVX-512 features of an AVX2 host. */
  char out[256];
  features_of("x86_64-pc-linux-gnu", "skylake-avx512", f, sizeof f);
  char v3[1024];
  features_of("x86_64-pc-linux-gnu", "x86-64-v3", v3, sizeof v3);
  uint64_t v3_host = 0;
  for (const char *p = v3; *p;) {
    size_t len = strcspn(p, ",");
    v3_host |= (uint64_t)1 << frt_cpu_feature_index(p, len);
    p += len + (p[len] == ',');
  }
  assert_true(frt_cpu_missing(f, v3_host, out, sizeof out) > 0);
  assert_non_null(strstr(out, "avx512f"));
  /* Other architectures record nothing (the runtime checks x86-64 only). */
  features_of("aarch64-linux-gnu", "generic", f, sizeof f);
  assert_string_equal(f, "");
}

/* A multiversioned model's descriptor (runtime/model.c, frt_model_variant): made-up variants, one needing
 * a feature this host lacks (when there is one), one needing what the host has, one needing nothing. */
static int ran; /* which variant's run ran: 1 have, 2 plain */
static int run_have(const void *const *in, void *const *out, void *ws, FrtPool *pool) {
  (void)in, (void)out, (void)ws, (void)pool;
  ran = 1;
  return 0;
}
static int run_plain(const void *const *in, void *const *out, void *ws, FrtPool *pool) {
  (void)in, (void)out, (void)ws, (void)pool;
  ran = 2;
  return 0;
}

static void test_variant(void **state) {
  (void)state;
  static const char *const names[] = {
#define FRT_CPU_FEATURE(name, leaf, subleaf, reg, bit, state) name,
#include "cpu_features.def"
#undef FRT_CPU_FEATURE
  };
  uint64_t have = frt_cpu_host_features();
  static char have_list[1024];
  const char *lacked = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (have >> i & 1) {
      strcat(have_list, *have_list ? "," : "");
      strcat(have_list, names[i]);
    } else if (!lacked) {
      lacked = names[i];
    }
  }
  FrtModel v_have = {.abi_version = FRT_ABI_VERSION, .name = "m", .run = run_have, .cpu = "have",
                     .cpu_features = have_list};
  FrtModel v_plain = {.abi_version = FRT_ABI_VERSION, .name = "m", .run = run_plain, .cpu = "plain",
                      .cpu_features = ""};
  FrtModel v_lack = {.abi_version = FRT_ABI_VERSION, .name = "m", .run = run_have, .cpu = "lack",
                     .cpu_features = lacked};
  const FrtModel *both[] = {&v_have, &v_plain}, *lack_first[] = {&v_lack, &v_plain}, *only_lack[] = {&v_lack};
  FrtModel top = {.abi_version = FRT_ABI_VERSION, .name = "m", .run = run_plain, .cpu = "have,plain", .n_variants = 2,
                  .variants = both};
  FrtError err;
  char msg[512];
  unsetenv("FLOWRT_CPU_VARIANT");
  /* Without variants: the model itself; with: the first this host runs. */
  assert_ptr_equal(frt_model_variant(&v_plain, &err), &v_plain);
  assert_ptr_equal(frt_model_variant(&top, &err), &v_have);
  ran = 0;
  assert_int_equal(frt_model_run(&top, NULL, NULL, NULL, NULL, &err), FRT_OK);
  assert_int_equal(ran, 1);
  /* FLOWRT_CPU_VARIANT forces one by its cpu; a name that is none of them is an error. */
  setenv("FLOWRT_CPU_VARIANT", "plain", 1);
  assert_ptr_equal(frt_model_variant(&top, &err), &v_plain);
  assert_int_equal(frt_model_run(&top, NULL, NULL, NULL, NULL, &err), FRT_OK);
  assert_int_equal(ran, 2);
  setenv("FLOWRT_CPU_VARIANT", "nope", 1);
  assert_null(frt_model_variant(&top, &err));
  assert_int_equal(err.status, FRT_ERR_INPUT);
  assert_string_equal(err.msg, "FLOWRT_CPU_VARIANT=nope names none of the model's CPUs (have,plain)");
  assert_int_equal(frt_model_check_cpu(&top, msg, sizeof msg), -1);
  assert_string_equal(msg, err.msg);
  unsetenv("FLOWRT_CPU_VARIANT");
  assert_int_equal(frt_model_check_cpu(&top, msg, sizeof msg), 0);
  /* A malformed list is refused, not followed. */
  top.variants = NULL;
  assert_null(frt_model_variant(&top, NULL));
  if (!lacked) return; /* this host has every feature the runtime knows */
  /* A variant this host lacks a feature of is never chosen, even listed first... */
  top.variants = lack_first;
  top.cpu = "lack,plain";
  assert_ptr_equal(frt_model_variant(&top, &err), &v_plain);
  /* ...nor when forced, nor when it is the only one: the check's message says why. */
  char want[256];
  snprintf(want, sizeof want, "this CPU lacks %s, which the model was compiled for (--cpu lack)", lacked);
  setenv("FLOWRT_CPU_VARIANT", "lack", 1);
  assert_null(frt_model_variant(&top, &err));
  assert_int_equal(err.status, FRT_ERR_UNSUPPORTED);
  assert_string_equal(err.msg, want);
  unsetenv("FLOWRT_CPU_VARIANT");
  top.variants = only_lack;
  top.n_variants = 1;
  assert_null(frt_model_variant(&top, &err));
  assert_string_equal(err.msg, want);
  ran = 0;
  assert_int_equal(frt_model_run(&top, NULL, NULL, NULL, NULL, &err), FRT_ERR_UNSUPPORTED);
  assert_int_equal(ran, 0);
  assert_int_equal(frt_model_check_cpu(&top, msg, sizeof msg), -1);
  assert_string_equal(msg, want);
}

/* A collectives backend that only says which rank this process is (no collective is called here). */
static int32_t fake_rank;
static int fake_init(int32_t n_ranks, int32_t *rank, int32_t *size, void **world, char *msg, size_t cap) {
  (void)msg, (void)cap;
  static int token;
  *rank = fake_rank;
  *size = n_ranks;
  *world = &token;
  return 0;
}
static int32_t fake_launch_rank(void) { return fake_rank; }
static void fake_finalize(void) {}
static const FrtCollBackend fake_coll = {.name = "fake", .init = fake_init, .launch_rank = fake_launch_rank,
                                         .finalize = fake_finalize};

/* An SBP program built per rank (FrtModel.rank): variants per CPU and rank, best CPU first; the choice is
 * the first of this process's rank that the CPU runs: rank 0 without collectives, else the started ones'. */
static void test_variant_rank(void **state) {
  (void)state;
  unsetenv("FLOWRT_CPU_VARIANT");
  /* Two CPUs this host runs (no features), "best" listed first, each with rank 0's and rank 1's program. */
  FrtModel b0 = {.abi_version = FRT_ABI_VERSION, .name = "m", .run = run_plain, .cpu = "best", .cpu_features = "",
                 .n_ranks = 2, .rank = 0};
  FrtModel b1 = b0, p0 = b0, p1 = b0, any = b0;
  b1.rank = p1.rank = 1;
  p0.cpu = p1.cpu = "plain";
  any.rank = -1;
  const FrtModel *list[] = {&b0, &b1, &p0, &p1};
  FrtModel top = {.abi_version = FRT_ABI_VERSION, .name = "m", .run = run_plain, .cpu = "best,plain", .n_variants = 4,
                  .variants = list, .n_ranks = 2, .rank = -1};
  FrtError err;
  /* No collectives: this process is rank 0. */
  assert_ptr_equal(frt_model_variant(&top, &err), &b0);
  /* A single program of rank 0 runs as rank 0 only; one of any rank anywhere. */
  assert_ptr_equal(frt_model_variant(&b0, &err), &b0);
  assert_ptr_equal(frt_model_variant(&any, &err), &any);
  setenv("FLOWRT_COLL_TIMEOUT", "0", 1);
  fake_rank = 1;
  assert_int_equal(frt_coll_init_with(&fake_coll, 2, 0, NULL, &err), FRT_OK);
  assert_int_equal(frt_coll_rank(-1), 1);
  assert_ptr_equal(frt_model_variant(&top, &err), &b1);
  assert_null(frt_model_variant(&b0, &err));
  assert_int_equal(err.status, FRT_ERR_INPUT);
  assert_string_equal(err.msg, "this is rank 0's program of an SBP program built per rank; it cannot run as rank 1");
  assert_ptr_equal(frt_model_variant(&any, &err), &any);
  /* FLOWRT_CPU_VARIANT picks among this rank's. */
  setenv("FLOWRT_CPU_VARIANT", "plain", 1);
  assert_ptr_equal(frt_model_variant(&top, &err), &p1);
  unsetenv("FLOWRT_CPU_VARIANT");
  /* A model without this rank's program says so. */
  top.variants = (const FrtModel *[]){&b0, &p0};
  top.n_variants = 2;
  assert_null(frt_model_variant(&top, &err));
  assert_int_equal(err.status, FRT_ERR_INPUT);
  assert_string_equal(err.msg, "the model has no program for rank 1 (it was built per rank for 2 ranks)");
  frt_coll_finalize();
  unsetenv("FLOWRT_COLL_TIMEOUT");
  /* Collectives ended: rank 0 again. */
  assert_ptr_equal(frt_model_variant(&top, &err), &b0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_missing),
      cmocka_unit_test(test_check_host),
      cmocka_unit_test(test_recorded),
      cmocka_unit_test(test_variant),
      cmocka_unit_test(test_variant_rank),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
