/* target.c — the targets flowc generates code for, and LLVM target machines for them.
 *
 * A target is a row of function pointers (FcTarget); today there is one, the CPU, which covers x86-64 and
 * AArch64 triples. NVPTX becomes a second row without touching passes or kernels.
 *
 * Target machines: the triple defaults to the host's; the CPU defaults to the portable "x86-64-v3" for
 * x86-64 (AVX2 + FMA, what every x86 server of the last decade runs) and "generic" for AArch64; "native"
 * asks LLVM for the host's CPU name and feature string, which only makes sense for the host's own
 * architecture. LLVM accepts an unknown CPU or feature name with a warning on stderr and silently
 * generates generic code; a misspelt --cpu must be an error instead, so the warning is captured while the
 * target machine is created and turned into a one-line FC_ERR_INPUT. Objects are position independent,
 * because Debian's toolchain links executables as PIE.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/Target.h>

#include "codegen.h"

/* ---- the CPU target ----------------------------------------------------------------------------------- */

static bool has_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }
static bool triple_is_x86_64(const char *t) { return has_prefix(t, "x86_64") || has_prefix(t, "amd64"); }
static bool triple_is_aarch64(const char *t) { return has_prefix(t, "aarch64") || has_prefix(t, "arm64"); }

static bool cpu_accepts(const char *triple) { return triple_is_x86_64(triple) || triple_is_aarch64(triple); }

/* x86 CPUs whose widest profitable vectors are 256 bits (AVX2). AVX-512 parts are counted here too:
 * LLVM itself prefers 256-bit vectors on them (prefer-256-bit), since 512-bit code lowers the clock. */
static const char *const avx2_cpus[] = {
    "x86-64-v3", "x86-64-v4", "haswell", "broadwell", "skylake", "skylake-avx512", "cascadelake",
    "cooperlake", "cannonlake", "icelake-client", "icelake-server", "tigerlake", "rocketlake", "alderlake",
    "raptorlake", "meteorlake", "sapphirerapids", "emeraldrapids", "graniterapids", "znver1", "znver2",
    "znver3", "znver4", "znver5",
};

static int cpu_vector_width(const FcTarget *t, LLVMTargetMachineRef tm, FcDtype dt) {
  (void)t;
  int bytes = 16; /* SSE2 / NEON */
  char *cpu = LLVMGetTargetMachineCPU(tm);
  char *features = LLVMGetTargetMachineFeatureString(tm);
  char *triple = LLVMGetTargetMachineTriple(tm);
  if (triple_is_x86_64(triple)) {
    if (strstr(features, "+avx2") || strstr(features, "+avx512f")) bytes = 32;
    for (size_t i = 0; i < sizeof avx2_cpus / sizeof avx2_cpus[0]; i++)
      if (strcmp(cpu, avx2_cpus[i]) == 0) bytes = 32;
    if (strstr(features, "-avx2") || strstr(features, "-avx,")) bytes = 16;
  }
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
  LLVMDisposeMessage(triple);
  size_t elem = dt == FC_DT_F16 || dt == FC_DT_BF16 ? 4 : fc_dtype_size(dt); /* compute type size */
  int w = bytes / (int)elem;
  return w > 0 ? w : 1;
}

static const FcTarget cpu_target = {.name = "cpu", .accepts = cpu_accepts, .vector_width = cpu_vector_width};

static const FcTarget *const targets[] = {&cpu_target};

const FcTarget *fc_target_for_triple(const char *triple) {
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++)
    if (targets[i]->accepts(triple)) return targets[i];
  return NULL;
}

/* ---- target machines ---------------------------------------------------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_llvm_targets(void) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  LLVMInitializeAArch64TargetInfo();
  LLVMInitializeAArch64Target();
  LLVMInitializeAArch64TargetMC();
  LLVMInitializeAArch64AsmPrinter();
}

/* The architecture part of a triple ("x86_64" of "x86_64-pc-linux-gnu"), as a comparable class. */
static int arch_class(const char *triple) { return triple_is_x86_64(triple) ? 1 : triple_is_aarch64(triple) ? 2 : 0; }

/* Creates the target machine with LLVM's stderr diagnostics redirected into a temporary file, and
 * returns what LLVM printed (malloc'd, possibly empty; NULL when nothing could be captured). */
static LLVMTargetMachineRef create_tm_capturing(LLVMTargetRef target, const char *triple, const char *cpu,
                                                const char *features, LLVMCodeGenOptLevel level, char **printed) {
  *printed = NULL;
  FILE *tmp = tmpfile();
  int saved = tmp ? dup(2) : -1;
  fflush(stderr);
  bool captured = saved >= 0 && dup2(fileno(tmp), 2) >= 0;
  LLVMTargetMachineRef tm =
      LLVMCreateTargetMachine(target, triple, cpu, features, level, LLVMRelocPIC, LLVMCodeModelDefault);
  if (captured) {
    dup2(saved, 2);
    long n = fseek(tmp, 0, SEEK_END) == 0 ? ftell(tmp) : -1;
    if (n >= 0 && n < (1 << 20)) {
      char *buf = malloc((size_t)n + 1);
      if (buf) {
        rewind(tmp);
        size_t got = fread(buf, 1, (size_t)n, tmp);
        buf[got] = '\0';
        *printed = buf;
      }
    }
  }
  if (saved >= 0) close(saved);
  if (tmp) fclose(tmp);
  return tm;
}

/* The first line of what LLVM printed, for our message. */
static void first_line(const char *s, char *out, size_t cap) {
  size_t n = strcspn(s, "\r\n");
  if (n >= cap) n = cap - 1;
  memcpy(out, s, n);
  out[n] = '\0';
}

FcStatus fc_target_machine(const FcCodegenOptions *o, LLVMTargetMachineRef *out, FcDiag *diag) {
  *out = NULL;
  pthread_once(&init_once, init_llvm_targets);
  char *host = LLVMGetDefaultTargetTriple();
  char *triple = LLVMNormalizeTargetTriple(o->triple ? o->triple : host);
  char *cpu_owned = NULL, *features_owned = NULL;
  FcStatus st = FC_OK;
  LLVMTargetRef target = NULL;
  char *err = NULL;
  if (!fc_target_for_triple(triple)) {
    st = fc_error(diag, FC_ERR_INPUT, "unsupported target '%s' (flowc generates code for x86_64 and aarch64 triples)",
                  o->triple ? o->triple : triple);
    goto done;
  }
  if (LLVMGetTargetFromTriple(triple, &target, &err)) {
    st = fc_error(diag, FC_ERR_INPUT, "unsupported target '%s': %s", triple, err ? err : "unknown triple");
    goto done;
  }
  const char *cpu = o->cpu;
  const char *features = o->features ? o->features : "";
  if (cpu && strcmp(cpu, "native") == 0) {
    if (arch_class(triple) != arch_class(host)) {
      st = fc_error(diag, FC_ERR_INPUT, "--cpu native needs the host's architecture, but the target is '%s'", triple);
      goto done;
    }
    cpu_owned = LLVMGetHostCPUName();
    char *host_features = LLVMGetHostCPUFeatures();
    size_t n = strlen(host_features) + strlen(features) + 2;
    features_owned = malloc(n);
    if (!features_owned) fc_die(__FILE__, __LINE__, "out of memory");
    snprintf(features_owned, n, "%s%s%s", host_features, *features && *host_features ? "," : "", features);
    LLVMDisposeMessage(host_features);
    cpu = cpu_owned;
    features = features_owned;
  } else if (!cpu) {
    cpu = triple_is_x86_64(triple) ? "x86-64-v3" : "generic";
  }
  int lvl = o->opt_level < 0 ? 0 : o->opt_level > 3 ? 3 : o->opt_level;
  static const LLVMCodeGenOptLevel levels[4] = {LLVMCodeGenLevelNone, LLVMCodeGenLevelLess, LLVMCodeGenLevelDefault,
                                                LLVMCodeGenLevelAggressive};
  char *printed = NULL;
  LLVMTargetMachineRef tm = create_tm_capturing(target, triple, cpu, features, levels[lvl], &printed);
  if (!tm) {
    st = fc_error(diag, FC_ERR_INPUT, "cannot create a target machine for '%s' (cpu '%s')", triple, cpu);
  } else if (printed && (strstr(printed, "not a recognized processor") || strstr(printed, "not a recognized feature"))) {
    char line[512];
    first_line(printed, line, sizeof line);
    st = strstr(printed, "not a recognized processor")
             ? fc_error(diag, FC_ERR_INPUT, "unknown CPU '%s' for target '%s'", cpu, triple)
             : fc_error(diag, FC_ERR_INPUT, "unknown CPU feature in '%s' for target '%s' (%s)", features, triple, line);
    LLVMDisposeTargetMachine(tm);
  } else {
    if (printed && *printed) fputs(printed, stderr); /* anything else LLVM said goes where it would have */
    *out = tm;
  }
  free(printed);
done:
  if (err) LLVMDisposeMessage(err);
  free(features_owned);
  if (cpu_owned) LLVMDisposeMessage(cpu_owned);
  LLVMDisposeMessage(triple);
  LLVMDisposeMessage(host);
  return st;
}
