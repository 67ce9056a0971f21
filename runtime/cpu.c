/* cpu.c — does this CPU have the instruction-set features a model was compiled for?
 *
 * A model compiled for a CPU with features this one lacks would die of SIGILL somewhere inside its first
 * kernel. Instead, frt_main, frt_model_run and the generated NAME_run ask frt_cpu_check first, with the
 * feature list flowc recorded in the model (FrtModel.cpu_features, names from cpu_features.def), and
 * refuse with one line naming what is missing.
 *
 * The host's features come from CPUID, and a feature whose registers need OS support (AVX's ymm,
 * AVX-512's zmm and opmasks, AMX's tiles) counts only when XGETBV says the OS saves that state: a CPU
 * with AVX-512 under a kernel that does not enable it faults just the same. AMX's tile data is also off
 * for a process until it asks (Linux's arch_prctl ARCH_REQ_XCOMP_PERM, since 5.16: the state is 8 KiB a
 * thread, so the kernel allocates it only for processes that opt in), so the first detection asks for
 * it, once for the whole process, and AMX counts only when the kernel grants it. The matching itself
 * (frt_cpu_missing) is a pure function of the list and a host bit set, so tests give it made-up hosts.
 * Parsing a model's list costs about a microsecond, a visible share of a small model's run, so the
 * per-run callers use frt_cpu_check_const, which remembers the addresses of constant lists that passed.
 * On other architectures no feature is known and nothing is checked.
 */
#include <stdio.h>
#include <string.h>

#include "flowrt_internal.h"

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define FRT_HAVE_CPUID 1
#endif

typedef struct CpuFeature {
  const char *name;
  uint32_t leaf, subleaf;
  uint8_t reg, bit, state;
} CpuFeature;

static const CpuFeature features[] = {
#define FRT_CPU_FEATURE(name, leaf, subleaf, reg, bit, state) {name, leaf, subleaf, reg, bit, state},
#include "cpu_features.def"
#undef FRT_CPU_FEATURE
};
enum { N_FEATURES = sizeof features / sizeof features[0] };
_Static_assert(N_FEATURES < 64, "the host set is a 64-bit mask with one bit to spare");

/* XCR0 bits each `state` class needs. */
static const uint64_t state_bits[4] = {0, 0x6, 0xe6, 0x60000};

int frt_cpu_feature_index(const char *name, size_t len) {
  for (int i = 0; i < N_FEATURES; i++)
    if (strlen(features[i].name) == len && memcmp(features[i].name, name, len) == 0)
      return i;
  return -1;
}

/* Asks Linux for the AMX tile-data state (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); false where the kernel
 * refuses or is not Linux, and the tile instructions would fault. */
static bool amx_permitted(void) {
#if defined(__linux__) && defined(__x86_64__) && defined(SYS_arch_prctl)
  enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
  return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
  return false;
#endif
}

/* CPUID is slow (a VM exit under virtualisation) and a run checks every time: the set is computed once
 * and kept; racing first callers compute the same value. */
static uint64_t detect(void) {
  uint64_t have = 0;
#ifdef FRT_HAVE_CPUID
  unsigned r[4] = {0}, max_basic = __get_cpuid_max(0, NULL), max_ext = __get_cpuid_max(0x80000000, NULL);
  uint64_t xcr0 = 0;
  if (max_basic >= 1 && __get_cpuid_count(1, 0, &r[0], &r[1], &r[2], &r[3]) && (r[2] >> 27 & 1)) {
    unsigned lo, hi; /* OSXSAVE: XGETBV is available */
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (uint64_t)hi << 32 | lo;
  }
  uint32_t leaf = 0, subleaf = 0;
  bool fetched = false;
  for (int i = 0; i < N_FEATURES; i++) {
    const CpuFeature *f = &features[i];
    if (!fetched || f->leaf != leaf || f->subleaf != subleaf) { /* rows of one leaf are adjacent */
      leaf = f->leaf;
      subleaf = f->subleaf;
      unsigned max = leaf >= 0x80000000u ? max_ext : max_basic;
      fetched = true;
      if (leaf > max || !__get_cpuid_count(leaf, subleaf, &r[0], &r[1], &r[2], &r[3]))
        memset(r, 0, sizeof r);
    }
    if ((r[f->reg] >> f->bit & 1) && (xcr0 & state_bits[f->state]) == state_bits[f->state])
      have |= (uint64_t)1 << i;
  }
  uint64_t amx = 0;
  for (int i = 0; i < N_FEATURES; i++)
    if (features[i].state == 3) amx |= (uint64_t)1 << i;
  if ((have & amx) && !amx_permitted()) have &= ~amx;
#endif
  return have;
}

uint64_t frt_cpu_host_features(void) {
  static _Atomic uint64_t cached; /* the set with bit 63 set once known (fewer than 64 features are) */
  uint64_t v = cached;
  if (!(v >> 63)) {
    v = detect() | (uint64_t)1 << 63;
    cached = v;
  }
  return v & ~((uint64_t)1 << 63);
}

int frt_cpu_missing(const char *required, uint64_t have, char *out, size_t cap) {
  int missing = 0;
  size_t at = 0;
  if (cap)
    out[0] = 0;
  for (const char *p = required ? required : ""; *p;) {
    size_t len = strcspn(p, ",");
    int i = frt_cpu_feature_index(p, len);
    /* A name this runtime does not know cannot be checked; it is not counted against the CPU. */
    if (len && i >= 0 && !(have >> i & 1)) {
      missing++;
      if (at < cap) {
        int n = snprintf(out + at, cap - at, "%s%.*s", at ? ", " : "", (int)len, p);
        at += n > 0 ? (size_t)n : 0;
      }
    }
    p += len + (p[len] == ',');
  }
  return missing;
}

int frt_cpu_check(const char *required, const char *cpu, char *msg, size_t cap) {
  char names[256];
  if (!required || !*required || frt_cpu_missing(required, frt_cpu_host_features(), names, sizeof names) == 0) {
    if (msg && cap)
      msg[0] = 0;
    return 0;
  }
  if (msg && cap)
    snprintf(msg, cap, "this CPU lacks %s, which the model was compiled for (--cpu %s)", names,
             cpu && *cpu ? cpu : "?");
  return -1;
}

int frt_cpu_check_const(const char *required, const char *cpu, char *msg, size_t cap) {
  enum { SLOTS = 8 }; /* models in one process whose lists are remembered; more are only parsed again */
  static _Atomic(const char *) passed[SLOTS];
  static _Atomic unsigned next;
  if (required)
    for (int i = 0; i < SLOTS; i++)
      if (passed[i] == required) {
        if (msg && cap)
          msg[0] = 0;
        return 0;
      }
  int rc = frt_cpu_check(required, cpu, msg, cap);
  if (rc == 0 && required)
    passed[next++ % SLOTS] = required;
  return rc;
}
