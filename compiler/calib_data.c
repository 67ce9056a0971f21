/* calib_data.c — the calibration folder of `flowc build --quantize int8 --calibrate DIR`: which files feed
 * which model input, checked before anything runs.
 *
 * Two layouts, told apart by what DIR holds (both at once is refused):
 *   - one sub-folder per sample (DIR/<sample>/...), each holding one file per model input: the layout of
 *     ONNX's test_data_set_<k>/input_<i>.pb folders, which onnxruntime's onnx_test_runner and perf_test
 *     read and which tools dump their inputs in, so an existing test set calibrates as it is;
 *   - one file per model input directly in DIR, holding many samples stacked along dim 0: what a NumPy user
 *     writes with np.save (and what Polygraphy's and TensorRT's calibrators consume as batches). A file
 *     [N, ...] feeds a model input [B, ...] as N / B runs (N a multiple of B).
 * A file is <input name>.npy / .pb, or input_<i>.npy / .pb for the model's i-th input (names holding a '/'
 * cannot be file names); names starting with '.' are ignored. Every input needs exactly one file, every file
 * must name an input, and dtype and shape must be the input's (dims after the first, in the stacked
 * layout): each mistake is a one-line error naming the file. Sample folders are read in name order, each
 * file once to check it and again when its sample runs (a folder of samples may be larger than memory);
 * stacked files are read once and kept.
 */
#include "cli.h"
#include "flowrt.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct FcCalibData {
  const char *dir;
  FcGraph *g;           /* the model whose inputs are fed */
  size_t max_bytes;     /* per file */
  bool stacked;         /* one file per input in DIR, samples along dim 0 */
  int n_samples;
  char **sample_paths;  /* per sample folder and input: [n_samples * n_inputs] (sub-folder layout) */
  FrtTensor *stacks;    /* per input (stacked layout) */
  int64_t *sample_bytes; /* per input: bytes of one sample */
};

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The entries of `dir` (no '.'-names), sorted; *n of them. */
static FcStatus list_dir(const char *dir, char ***out, int *n, FcDiag *diag) {
  DIR *d = opendir(dir);
  if (!d) return fc_error(diag, FC_ERR_IO, "%s: cannot read the calibration folder: %s", dir, strerror(errno));
  char **v = NULL;
  int cnt = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    if (cnt == cap) {
      cap = cap ? 2 * cap : 16;
      char **nv = realloc(v, (size_t)cap * sizeof *v);
      if (!nv) fc_die(__FILE__, __LINE__, "out of memory");
      v = nv;
    }
    v[cnt] = strdup(e->d_name);
    if (!v[cnt]) fc_die(__FILE__, __LINE__, "out of memory");
    cnt++;
  }
  closedir(d);
  if (cnt) qsort(v, (size_t)cnt, sizeof *v, cmp_str);
  *out = v;
  *n = cnt;
  return FC_OK;
}

static void free_list(char **v, int n) {
  for (int i = 0; i < n; i++) free(v[i]);
  free(v);
}

static char *join(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *p = malloc(n);
  if (!p) fc_die(__FILE__, __LINE__, "out of memory");
  snprintf(p, n, "%s/%s", a, b);
  return p;
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The model input a file name stands for (-1: none): <name>.npy/.pb or input_<i>.npy/.pb. */
static int input_of(const FcGraph *g, const char *file) {
  const char *dot = strrchr(file, '.');
  if (!dot || (strcmp(dot, ".npy") != 0 && strcmp(dot, ".pb") != 0)) return -1;
  size_t n = (size_t)(dot - file);
  for (int i = 0; i < g->n_inputs; i++) {
    const char *name = g->inputs[i]->name;
    if (name && strlen(name) == n && strncmp(name, file, n) == 0) return i;
  }
  if (n > 6 && strncmp(file, "input_", 6) == 0) {
    int k = 0;
    for (size_t j = 6; j < n; j++) {
      if (file[j] < '0' || file[j] > '9' || k > 100000) return -1;
      k = k * 10 + (file[j] - '0');
    }
    if (k < g->n_inputs && (n == 7 || file[6] != '0')) return k;
  }
  return -1;
}

static const char *input_name(const FcGraph *g, int i) { return g->inputs[i]->name ? g->inputs[i]->name : "?"; }

/* "1x28x28xf32" of a file's tensor, for messages. */
static void file_type_str(const FrtTensor *t, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < t->rank && len < cap; i++) len += (size_t)snprintf(buf + len, cap - len, "%lldx", (long long)t->dims[i]);
  if (len < cap) snprintf(buf + len, cap - len, "%s", frt_dtype_name(t->dtype));
}

/* Checks a file's tensor against input i: the same dtype, and the same shape (`stacked`: the same dims
 * after dim 0, whose size is a multiple of the input's). */
static FcStatus check_tensor(const FcGraph *g, int i, const char *path, const FrtTensor *t, bool stacked, FcDiag *diag) {
  const FcType *ty = &g->inputs[i]->type;
  char want[256], got[256];
  fc_type_str(ty, want, sizeof want);
  file_type_str(t, got, sizeof got);
  if ((int)t->dtype != fc_dtype_to_onnx(ty->dtype))
    return fc_error(diag, FC_ERR_INPUT, "%s: holds %s, but input '%s' is %s (the element types differ)", path, got,
                    input_name(g, i), want);
  bool ok = t->rank == ty->rank;
  for (int d = stacked ? 1 : 0; ok && d < ty->rank; d++) ok = t->dims[d] == ty->dims[d];
  if (ok && stacked) ok = ty->rank > 0 && ty->dims[0] > 0 && t->dims[0] >= ty->dims[0] && t->dims[0] % ty->dims[0] == 0;
  if (!ok) {
    if (stacked)
      return fc_error(diag, FC_ERR_INPUT,
                      "%s: holds %s, but input '%s' is %s (a file directly in the calibration folder stacks samples "
                      "along dim 0: N x the input's shape, N a multiple of its dim 0)",
                      path, got, input_name(g, i), want);
    return fc_error(diag, FC_ERR_INPUT, "%s: holds %s, but input '%s' is %s (the shapes differ)", path, got,
                    input_name(g, i), want);
  }
  return FC_OK;
}

static FcStatus read_tensor(const FcCalibData *c, const char *path, FrtTensor *t, FcDiag *diag) {
  FrtError err = {0};
  if (frt_tensor_read_max(path, c->max_bytes, t, &err) != FRT_OK)
    return fc_error(diag, err.status == FRT_ERR_IO ? FC_ERR_IO : FC_ERR_INPUT, "%s", err.msg);
  return FC_OK;
}

/* Assigns the files of one folder (`where`) to the inputs: paths[i] becomes the file of input i. */
static FcStatus assign_files(FcCalibData *c, const char *where, char **names, int n, char **paths, FcDiag *diag) {
  const FcGraph *g = c->g;
  for (int k = 0; k < n; k++) {
    char *path = join(where, names[k]);
    int i = input_of(g, names[k]);
    if (i < 0 || paths[i]) {
      FcStatus st = i < 0 ? fc_error(diag, FC_ERR_INPUT,
                                     "%s: names no model input (expected <input>.npy, <input>.pb or input_<i>.npy/.pb "
                                     "for the inputs %s%s%s)",
                                     path, input_name(g, 0), g->n_inputs > 1 ? ", " : "",
                                     g->n_inputs > 1 ? input_name(g, 1) : "")
                          : fc_error(diag, FC_ERR_INPUT, "%s: a second file for input '%s' (the first is %s)", path,
                                     input_name(g, i), paths[i]);
      free(path);
      return st;
    }
    paths[i] = path;
  }
  for (int i = 0; i < g->n_inputs; i++)
    if (!paths[i])
      return fc_error(diag, FC_ERR_INPUT, "%s: no file for input '%s' (expected %s.npy, %s.pb or input_%d.npy/.pb)",
                      where, input_name(g, i), input_name(g, i), input_name(g, i), i);
  return FC_OK;
}

FcStatus fc_calib_data_open(const char *dir, FcGraph *g, int64_t max_file_bytes, FcCalibData **out, FcDiag *diag) {
  *out = NULL;
  if (g->n_inputs == 0) return fc_error(diag, FC_ERR_INPUT, "the model has no inputs to calibrate with");
  FcCalibData *c = calloc(1, sizeof *c);
  if (!c) fc_die(__FILE__, __LINE__, "out of memory");
  c->dir = dir;
  c->g = g;
  c->max_bytes = max_file_bytes > 0 ? (size_t)max_file_bytes : SIZE_MAX;
  c->sample_bytes = calloc((size_t)g->n_inputs, sizeof *c->sample_bytes);
  if (!c->sample_bytes) fc_die(__FILE__, __LINE__, "out of memory");
  for (int i = 0; i < g->n_inputs; i++)
    if (!fc_type_nbytes(&g->inputs[i]->type, &c->sample_bytes[i]) || g->inputs[i]->type.quant)
      return fc_calib_data_free(c), fc_error(diag, FC_ERR_UNSUPPORTED, "input '%s' cannot be calibrated with", input_name(g, i));
  char **names = NULL;
  int n = 0;
  FcStatus st = list_dir(dir, &names, &n, diag);
  if (st != FC_OK) {
    fc_calib_data_free(c);
    return st;
  }
  int n_dirs = 0;
  for (int k = 0; k < n; k++) {
    char *p = join(dir, names[k]);
    n_dirs += is_dir(p);
    free(p);
  }
  if (n == 0) {
    st = fc_error(diag, FC_ERR_INPUT,
                  "%s: the calibration folder is empty (expected one sub-folder per sample holding <input>.npy or "
                  "input_<i>.pb files, or one <input>.npy per input with the samples along dim 0)",
                  dir);
  } else if (n_dirs != 0 && n_dirs != n) {
    st = fc_error(diag, FC_ERR_INPUT,
                  "%s: holds both files and folders (expected one sub-folder per sample, or one file per input)", dir);
  } else if (n_dirs == 0) { /* stacked: one file per input */
    c->stacked = true;
    char **paths = calloc((size_t)g->n_inputs, sizeof *paths);
    c->stacks = calloc((size_t)g->n_inputs, sizeof *c->stacks);
    if (!paths || !c->stacks) fc_die(__FILE__, __LINE__, "out of memory");
    st = assign_files(c, dir, names, n, paths, diag);
    for (int i = 0; st == FC_OK && i < g->n_inputs; i++) {
      st = read_tensor(c, paths[i], &c->stacks[i], diag);
      if (st == FC_OK) st = check_tensor(g, i, paths[i], &c->stacks[i], true, diag);
      if (st != FC_OK) break;
      int64_t count = c->stacks[i].dims[0] / g->inputs[i]->type.dims[0];
      if (count > INT32_MAX) st = fc_error(diag, FC_ERR_LIMIT, "%s: more than %d samples", paths[i], INT32_MAX);
      else if (i == 0) c->n_samples = (int)count;
      else if (count != c->n_samples)
        st = fc_error(diag, FC_ERR_INPUT, "%s: holds %lld runs of input '%s', but %s holds %d of input '%s'", paths[i],
                      (long long)count, input_name(g, i), paths[0], c->n_samples, input_name(g, 0));
    }
    for (int i = 0; i < g->n_inputs; i++) free(paths[i]);
    free(paths);
  } else { /* one sub-folder per sample */
    c->n_samples = n;
    c->sample_paths = calloc(fc_size_mul_or_die((size_t)n, (size_t)g->n_inputs), sizeof *c->sample_paths);
    if (!c->sample_paths) fc_die(__FILE__, __LINE__, "out of memory");
    for (int s = 0; st == FC_OK && s < n; s++) {
      char *where = join(dir, names[s]);
      char **files = NULL;
      int nf = 0;
      st = list_dir(where, &files, &nf, diag);
      char **paths = c->sample_paths + (size_t)s * (size_t)g->n_inputs;
      if (st == FC_OK) st = assign_files(c, where, files, nf, paths, diag);
      for (int i = 0; st == FC_OK && i < g->n_inputs; i++) {
        FrtTensor t;
        st = read_tensor(c, paths[i], &t, diag);
        if (st != FC_OK) break;
        st = check_tensor(g, i, paths[i], &t, false, diag);
        frt_tensor_free(&t);
      }
      free_list(files, nf);
      free(where);
    }
  }
  free_list(names, n);
  if (st != FC_OK) {
    fc_calib_data_free(c);
    return st;
  }
  *out = c;
  return FC_OK;
}

int fc_calib_data_count(const FcCalibData *c) { return c->n_samples; }

FcStatus fc_calib_data_fill(const FcCalibData *c, int k, void *const *bufs, FcDiag *diag) {
  FC_ASSERT(k >= 0 && k < c->n_samples);
  const FcGraph *g = c->g;
  for (int i = 0; i < g->n_inputs; i++) {
    size_t nb = (size_t)c->sample_bytes[i];
    if (c->stacked) {
      memcpy(bufs[i], (const char *)c->stacks[i].data + (size_t)k * nb, nb);
      continue;
    }
    const char *path = c->sample_paths[(size_t)k * (size_t)g->n_inputs + (size_t)i];
    FrtTensor t;
    FcStatus st = read_tensor(c, path, &t, diag);
    /* The file was checked when the folder was opened; it may have changed since. */
    if (st == FC_OK) st = check_tensor(g, i, path, &t, false, diag);
    if (st == FC_OK) memcpy(bufs[i], t.data, nb);
    frt_tensor_free(&t);
    if (st != FC_OK) return st;
  }
  return FC_OK;
}

void fc_calib_data_free(FcCalibData *c) {
  if (!c) return;
  if (c->sample_paths)
    for (size_t i = 0; i < (size_t)c->n_samples * (size_t)c->g->n_inputs; i++) free(c->sample_paths[i]);
  free(c->sample_paths);
  if (c->stacks)
    for (int i = 0; i < c->g->n_inputs; i++) frt_tensor_free(&c->stacks[i]);
  free(c->stacks);
  free(c->sample_bytes);
  free(c);
}
