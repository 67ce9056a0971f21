/* corrupt_sweep.c — feeds damaged copies of every model to the importer.
 *
 * For each model.onnx under the given folders it writes variants to a scratch file and imports each
 * one (then verifies and prints it when the import succeeds). Classes of damage:
 *   truncated   cut at seven points and one byte short;
 *   flipped     eight copies with 1..4 bytes flipped at positions from a fixed xorshift sequence;
 *   claim       the first initializer's dims replaced by [2^30]: data far smaller than its claim;
 *   ir_version  an absurd ir_version (2^40).
 * Every outcome must be a status with a one-line message or a valid module (the last two classes must
 * fail); a crash, a sanitizer report (the suite runs under ASan + UBSan, which abort on the first
 * report), a large allocation (refused: ASan's allocation limit, or an address-space limit without
 * ASan) or a multi-line/empty message fails the sweep. Prints the number of variants and how they ended.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir.h"
#include "onnx.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t xorshift(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static unsigned char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc(len > 0 ? (size_t)len : 1);
  *n = len > 0 ? fread(buf, 1, (size_t)len, f) : 0;
  fclose(f);
  return buf;
}

/* A claim must be compared with the data before anything is allocated for it: a variant that makes the
 * importer allocate a gigabyte crashes the sweep. */
#if defined(__SANITIZE_ADDRESS__)
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "max_allocation_size_mb=1024"; }
#define LIMIT_ADDRESS_SPACE 0
#else
#define LIMIT_ADDRESS_SPACE 1
#endif

static long counts[8];
static int bad;

static void try_variant(const char *scratch, const unsigned char *data, size_t n, const char *label, bool must_fail) {
  FILE *f = fopen(scratch, "wb");
  if (!f) {
    perror(scratch);
    exit(2);
  }
  if (n) fwrite(data, 1, n, f);
  fclose(f);
  FcImportOptions opts;
  fc_import_options_default(&opts);
  FcDiag d;
  fc_diag_init(&d);
  FcModule *m = NULL;
  FcStatus st = fc_onnx_import(scratch, &opts, &m, &d);
  if (st == FC_OK) {
    st = fc_verify(m, &d);
    FILE *null = fopen("/dev/null", "w");
    FcPrintOptions po = {.weights = false, .inline_limit = FC_PRINT_INLINE_LIMIT_DEFAULT};
    if (st == FC_OK) st = fc_print_module(null, m, &po, &d);
    fclose(null);
    fc_module_destroy(m);
    if (st != FC_OK) {
      printf("BAD %s: imported but then failed: %s\n", label, d.msg);
      bad++;
    } else if (must_fail) {
      printf("BAD %s: imported, but it must be refused\n", label);
      bad++;
    }
  } else if (st == FC_ERR_INTERNAL) {
    printf("BAD %s: internal error on bad input: %s\n", label, d.msg);
    bad++;
  } else if (m != NULL || d.msg[0] == '\0' || strchr(d.msg, '\n')) {
    printf("BAD %s: status %d without a one-line message\n", label, (int)st);
    bad++;
  }
  counts[st < 8 ? st : 7]++;
}

/* A variant made by editing the unpacked model: packed again, it must be refused. */
static void try_packed(const char *scratch, const Onnx__ModelProto *mp, const char *label) {
  size_t n = onnx__model_proto__get_packed_size(mp);
  unsigned char *buf = malloc(n ? n : 1);
  if (!buf) {
    perror("malloc");
    exit(2);
  }
  onnx__model_proto__pack(mp, buf);
  try_variant(scratch, buf, n, label, true);
  free(buf);
}

static void sweep_model(const char *path, const char *scratch) {
  size_t n;
  unsigned char *data = read_all(path, &n);
  if (!data) return;
  char label[4200];
  for (int k = 1; k <= 8; k++) {
    size_t cut = k < 8 ? n * (size_t)k / 8 : (n ? n - 1 : 0);
    snprintf(label, sizeof label, "%s truncated at %zu", path, cut);
    try_variant(scratch, data, cut, label, false);
  }
  unsigned char *copy = malloc(n ? n : 1);
  for (int v = 0; v < 8 && n; v++) {
    memcpy(copy, data, n);
    int flips = 1 + (int)(xorshift() % 4);
    for (int i = 0; i < flips; i++) copy[xorshift() % n] ^= (unsigned char)(1 + xorshift() % 255);
    snprintf(label, sizeof label, "%s flipped (variant %d)", path, v);
    try_variant(scratch, copy, n, label, false);
  }
  free(copy);
  Onnx__ModelProto *mp = n ? onnx__model_proto__unpack(NULL, n, data) : NULL;
  if (mp) {
    /* Fields are swapped for the packing and restored before protobuf-c frees the message. */
    Onnx__TensorProto *init = mp->graph && mp->graph->n_initializer ? mp->graph->initializer[0] : NULL;
    if (init) {
      int64_t claim[1] = {(int64_t)1 << 30}, *dims = init->dims;
      size_t n_dims = init->n_dims;
      init->dims = claim;
      init->n_dims = 1;
      snprintf(label, sizeof label, "%s claiming 2^30 elements for initializer '%s'", path,
               init->name ? init->name : "");
      try_packed(scratch, mp, label);
      init->dims = dims;
      init->n_dims = n_dims;
    }
    protobuf_c_boolean had = mp->has_ir_version;
    int64_t version = mp->ir_version;
    mp->has_ir_version = 1;
    mp->ir_version = (int64_t)1 << 40;
    snprintf(label, sizeof label, "%s with ir_version 2^40", path);
    try_packed(scratch, mp, label);
    mp->has_ir_version = had;
    mp->ir_version = version;
    onnx__model_proto__free_unpacked(mp, NULL);
  }
  free(data);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: corrupt_sweep FOLDER...\n");
    return 2;
  }
  char scratch[] = "/tmp/flowc-corrupt-XXXXXX";
  int fd = mkstemp(scratch);
  if (fd < 0) {
    perror("mkstemp");
    return 2;
  }
  close(fd);
  if (LIMIT_ADDRESS_SPACE) {
    struct rlimit lim = {(rlim_t)4 << 30, (rlim_t)4 << 30};
    setrlimit(RLIMIT_AS, &lim);
  }
  long models = 0;
  for (int fi = 1; fi < argc; fi++) {
    DIR *dp = opendir(argv[fi]);
    if (!dp) continue;
    char **names = NULL;
    int nn = 0, cap = 0;
    for (struct dirent *de; (de = readdir(dp));) {
      if (de->d_name[0] == '.') continue;
      if (nn == cap) {
        cap = cap ? 2 * cap : 256;
        names = realloc(names, (size_t)cap * sizeof *names);
      }
      names[nn++] = strdup(de->d_name);
    }
    closedir(dp);
    qsort(names, (size_t)nn, sizeof *names, cmp_str);
    for (int i = 0; i < nn; i++) {
      char path[4096];
      struct stat st;
      snprintf(path, sizeof path, "%s/%s/model.onnx", argv[fi], names[i]);
      if (stat(path, &st) == 0) {
        sweep_model(path, scratch);
        models++;
      }
      free(names[i]);
    }
    free(names);
  }
  unlink(scratch);
  long total = 0;
  for (int i = 0; i < 8; i++) total += counts[i];
  printf("corruption sweep: %ld models, %ld variants: %ld imported, %ld invalid input, %ld unsupported, "
         "%ld over a limit, %ld i/o, %ld internal; %d bad outcomes, 0 crashes\n",
         models, total, counts[FC_OK], counts[FC_ERR_INPUT], counts[FC_ERR_UNSUPPORTED], counts[FC_ERR_LIMIT],
         counts[FC_ERR_IO], counts[FC_ERR_INTERNAL], bad);
  return bad ? 1 : 0;
}
