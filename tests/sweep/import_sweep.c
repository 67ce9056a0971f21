/* import_sweep.c — imports every ONNX test model and checks the IR round-trips.
 *
 * For each DIR given (a folder holding model.onnx and test_data_set_N/input_N.pb files, as in Debian's
 * libonnx-testdata), the sweep imports the model, binding on demand any graph input a node needs as a
 * compile-time constant (a shape, axes, k, ...) from the test's own test_data_set_0 inputs
 * (fc_testcase_bind, compiler/testcase.c, which `flowc check` uses too); verifies the
 * module; runs the -O2 pipeline and verifies again; and checks that print -> parse -> print is
 * byte-identical for both the imported and the optimised IR (with and without weights). With --dump DIR
 * it writes each IR text to DIR for the mlir-opt check.
 *
 * Each model ends as OK, UNSUPPORTED (import refused it with the unsupported-op message) or FAIL (any
 * other error). The expected-unsupported list (--expect FILE, one "folder/test" per line, '#' comments)
 * is strict: a listed model that imports is an unexpected pass and fails the sweep, so the list stays
 * true. Output: one line per model that is not OK, then per-folder counts and a verdict line.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "ir.h"
#include "onnx.h"
#include "passes.h"

/* Prints the module to a malloc'd string. */
/* The target the -O2 pipeline runs for: x86-64-v3, the artefacts' default, whatever the host (main). */
static FcTarget *target;

static char *print_to_string(FcModule *m, bool weights, FcDiag *diag, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  if (!f) return NULL;
  FcPrintOptions po = {.weights = weights, .inline_limit = FC_PRINT_INLINE_LIMIT_DEFAULT};
  FcStatus st = fc_print_module(f, m, &po, diag);
  fclose(f);
  if (st != FC_OK) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* print -> parse -> print must give the same bytes. */
static bool roundtrip(FcModule *m, bool weights, const char *what, char *why, size_t whycap, char **text_out) {
  FcDiag d;
  fc_diag_init(&d);
  size_t n1 = 0, n2 = 0;
  char *t1 = print_to_string(m, weights, &d, &n1);
  if (!t1) {
    snprintf(why, whycap, "%s: print failed: %s", what, d.msg);
    return false;
  }
  FcModule *m2 = NULL;
  if (fc_parse_module(t1, n1, what, &m2, &d) != FC_OK) {
    snprintf(why, whycap, "%s: parse of printed IR failed: %s", what, d.msg);
    free(t1);
    return false;
  }
  char *t2 = print_to_string(m2, weights, &d, &n2);
  fc_module_destroy(m2);
  bool same = t2 && n1 == n2 && memcmp(t1, t2, n1) == 0;
  if (!same) snprintf(why, whycap, "%s: print -> parse -> print differs", what);
  free(t2);
  if (text_out && same) *text_out = t1;
  else free(t1);
  return same;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

typedef enum { R_OK, R_UNSUPPORTED, R_FAIL } Result;

static Result sweep_one(const char *dir, const char *label, const char *dump_dir, char *why, size_t whycap) {
  char path[8192];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  FcImportOptions opts;
  fc_import_options_default(&opts);
  FcTestCase tc = {.dir = dir, .data_set = 0, .limits = opts.limits};
  opts.bind_fn = fc_testcase_bind;
  opts.bind_ctx = &tc;
  FcDiag d;
  fc_diag_init(&d);
  FcModule *m = NULL;
  FcStatus st = fc_onnx_import(path, &opts, &m, &d);
  if (st != FC_OK) {
    snprintf(why, whycap, "%s", d.msg);
    return st == FC_ERR_UNSUPPORTED ? R_UNSUPPORTED : R_FAIL;
  }
  Result r = R_FAIL;
  char *text = NULL;
  if (fc_verify(m, &d) != FC_OK) {
    snprintf(why, whycap, "verify after import: %s", d.msg);
    goto done;
  }
  if (!roundtrip(m, false, "imported", why, whycap, &text) || !roundtrip(m, true, "imported+weights", why, whycap, NULL))
    goto done;
  if (dump_dir) {
    snprintf(path, sizeof path, "%s/%s.mlir", dump_dir, label);
    write_file(path, text);
  }
  free(text);
  text = NULL;
  FcPipelineOptions po;
  fc_pipeline_options_default(&po);
  po.target = target;
  po.opt_level = 2;
  po.verify_each = true;
  if (fc_pipeline_run(m, &po, &d) != FC_OK) {
    snprintf(why, whycap, "pipeline -O2: %s", d.msg);
    goto done;
  }
  if (!roundtrip(m, false, "optimised", why, whycap, &text)) goto done;
  if (dump_dir) {
    snprintf(path, sizeof path, "%s/%s.O2.mlir", dump_dir, label);
    write_file(path, text);
  }
  r = R_OK;
done:
  free(text);
  fc_module_destroy(m);
  return r;
}

/* The expected-unsupported list: "folder/test" lines. */
typedef struct Expect {
  char **names;
  int n;
  bool *seen;
} Expect;

static void load_expect(const char *path, Expect *e) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "import_sweep: cannot open %s: %s\n", path, strerror(errno));
    exit(2);
  }
  char line[1024];
  int cap = 0;
  while (fgets(line, sizeof line, f)) {
    char *s = line;
    while (*s == ' ' || *s == '\t') s++;
    char *end = s + strcspn(s, "#\r\n");
    while (end > s && (end[-1] == ' ' || end[-1] == '\t')) end--;
    *end = '\0';
    if (!*s) continue;
    if (e->n == cap) {
      cap = cap ? 2 * cap : 64;
      e->names = realloc(e->names, (size_t)cap * sizeof *e->names);
    }
    e->names[e->n++] = strdup(s);
  }
  fclose(f);
  e->seen = calloc((size_t)e->n + 1, 1);
}

static int expect_find(const Expect *e, const char *label) {
  for (int i = 0; i < e->n; i++)
    if (strcmp(e->names[i], label) == 0) return i;
  return -1;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
  const char *expect_path = NULL, *dump_dir = NULL;
  int first = 1;
  for (; first < argc && argv[first][0] == '-'; first++) {
    if (!strcmp(argv[first], "--expect") && first + 1 < argc) expect_path = argv[++first];
    else if (!strcmp(argv[first], "--dump") && first + 1 < argc) dump_dir = argv[++first];
    else {
      fprintf(stderr, "usage: import_sweep [--expect FILE] [--dump DIR] FOLDER...\n");
      return 2;
    }
  }
  FcCodegenOptions co = {.triple = "x86_64-linux-gnu", .opt_level = 2};
  FcDiag td;
  fc_diag_init(&td);
  if (fc_target_resolve(&co, &target, &td) != FC_OK) {
    fprintf(stderr, "import_sweep: %s\n", td.msg);
    return 2;
  }
  Expect ex = {0};
  if (expect_path) load_expect(expect_path, &ex);
  if (dump_dir) mkdir(dump_dir, 0755);
  int bad = 0;
  for (int fi = first; fi < argc; fi++) {
    const char *folder = argv[fi];
    const char *fname = strrchr(folder, '/') ? strrchr(folder, '/') + 1 : folder;
    DIR *dp = opendir(folder);
    if (!dp) {
      fprintf(stderr, "import_sweep: cannot open %s\n", folder);
      return 2;
    }
    char **tests = NULL;
    int nt = 0, cap = 0;
    for (struct dirent *de; (de = readdir(dp));) {
      if (de->d_name[0] == '.') continue;
      if (nt == cap) {
        cap = cap ? 2 * cap : 256;
        tests = realloc(tests, (size_t)cap * sizeof *tests);
      }
      tests[nt++] = strdup(de->d_name);
    }
    closedir(dp);
    qsort(tests, (size_t)nt, sizeof *tests, cmp_str);
    int ok = 0, unsup = 0, fail = 0, unexpected = 0;
    for (int i = 0; i < nt; i++) {
      char dir[4096], label[1024], why[4096];
      snprintf(dir, sizeof dir, "%s/%s", folder, tests[i]);
      snprintf(label, sizeof label, "%s/%s", fname, tests[i]);
      struct stat st;
      char model[4200];
      snprintf(model, sizeof model, "%s/model.onnx", dir);
      if (stat(model, &st) != 0) continue;
      char dump_label[1024];
      snprintf(dump_label, sizeof dump_label, "%s__%s", fname, tests[i]);
      why[0] = '\0';
      Result r = sweep_one(dir, dump_label, dump_dir, why, sizeof why);
      int xi = expect_find(&ex, label);
      if (xi >= 0) ex.seen[xi] = true;
      if (r == R_OK) {
        ok++;
        if (xi >= 0) {
          printf("UNEXPECTED PASS %s (remove it from the expected list)\n", label);
          unexpected++;
        }
      } else if (r == R_UNSUPPORTED) {
        unsup++;
        printf("UNSUPPORTED %s: %s\n", label, why);
        if (expect_path && xi < 0) {
          printf("  ^ not in the expected list\n");
          unexpected++;
        }
      } else {
        fail++;
        printf("FAIL %s: %s\n", label, why);
      }
      free(tests[i]);
    }
    free(tests);
    printf("%s: %d models: %d ok, %d unsupported, %d failed\n", fname, ok + unsup + fail, ok, unsup, fail);
    bad += fail + unexpected;
  }
  for (int i = 0; i < ex.n; i++) free(ex.names[i]);
  free(ex.names);
  free(ex.seen);
  fc_target_free(target);
  printf("sweep: %s\n", bad ? "FAILED" : "passed");
  return bad ? 1 : 0;
}
