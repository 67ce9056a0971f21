/* check.c — `flowc check`: ONNX backend test cases through generated code.
 *
 * Per case (compiler/testcase.c describes the layout): import model.onnx, binding only the inputs a
 * node needs at compile time from the data set (everything else stays a graph input, so kernels compute
 * it), compile in memory (run.c), then for every data set run the model and compare each output with
 * output_<i>.pb: dtype and shape exactly, integers and bools exactly, floats within
 * |got - want| <= atol + rtol * |want| with NaN equal to NaN and infinities equal only to themselves.
 * A failure names the worst element (largest error relative to its tolerance), its index, both values
 * and the errors, and how many elements differ. When inputs were bound and a case has several data
 * sets, each set is compiled with its own bound values. One data quirk is accepted: the test data stores
 * bfloat16 tensors as raw bits typed UINT16, which are read as bf16 where the model has bf16.
 *
 * Outcomes: PASS; FAIL; UNSUPPORTED (the importer or code generation refused the model as unsupported);
 * CONSTANT (it passed, but every output was a constant after the passes — all inputs had to be bound and
 * folding computed the answer — so no kernel was tested; counted apart from PASS).
 *
 * Isolation: each case runs in a child process that reports its line through a pipe and its outcome as
 * the exit status, so a crash, a sanitizer report or a hang (alarm) in generated code fails that case
 * and the run goes on. With jobs > 1 several children run at once; lines are still printed in case order.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "codegen.h"
#include "flowrt.h"
#include "passes.h"

enum { R_PASS = 40, R_FAIL, R_UNSUPPORTED, R_CONSTANT }; /* child exit statuses: unlike 1, 23 or a signal */
enum { LINE_CAP = 4096 };

void fc_check_options_default(FcCheckOptions *o) {
  *o = (FcCheckOptions){
      .limits = {FC_DEFAULT_MAX_FILE_BYTES, FC_DEFAULT_MAX_NESTING, FC_DEFAULT_MAX_RANK},
      .opt_level = 2,
      .threads = 1,
      .rtol = 1e-3,
      .atol = 1e-7,
      .timeout_s = 600,
      .jobs = 1,
  };
}

/* ---- one case (in the child) ------------------------------------------------------------------------ */

typedef struct Case {
  const char *dir, *name;
  const FcCheckOptions *o;
  char line[LINE_CAP]; /* the outcome line, without the newline */
} Case;

static int outcome(Case *c, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int outcome(Case *c, int r, const char *fmt, ...) {
  static const char *const words[] = {"PASS", "FAIL", "UNSUPPORTED", "CONSTANT"};
  int n = snprintf(c->line, sizeof c->line, "%s %s", words[r - R_PASS], c->name);
  if (fmt && n > 0 && (size_t)n < sizeof c->line) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->line + n, sizeof c->line - (size_t)n, fmt, ap);
    va_end(ap);
  }
  for (char *p = c->line; *p; p++)
    if ((unsigned char)*p < 0x20) *p = ' ';
  return r;
}

static int from_status(Case *c, FcStatus st, const char *stage, const FcDiag *d) {
  if (st == FC_ERR_UNSUPPORTED) return outcome(c, R_UNSUPPORTED, ": %s", d->msg);
  return outcome(c, R_FAIL, ": %s: %s", stage, d->msg[0] ? d->msg : fc_status_name(st));
}

/* Imports the case with inputs bound from data set `set` and compiles it. */
static FcStatus import_case(Case *c, int set, FcModule **m, int *n_bound, FcDiag *d) {
  FcTestCase tc = {.dir = c->dir, .data_set = set, .limits = c->o->limits};
  FcImportOptions imp;
  fc_import_options_default(&imp);
  imp.limits = c->o->limits;
  imp.bind_fn = fc_testcase_bind;
  imp.bind_ctx = &tc;
  char path[8192];
  snprintf(path, sizeof path, "%s/model.onnx", c->dir);
  FcStatus st = fc_onnx_import(path, &imp, m, d);
  *n_bound = tc.n_bound;
  return st;
}

static FcStatus compile_cpu(Case *c, int set, FcModule **m, FcJit **jit, int *n_bound, const char **stage,
                            FcDiag *d);

/* Imports the case with inputs bound from data set `set` and compiles it; with --device simt also the GPU
 * kernels' SIMT host build, from a second import (the CPU build's descriptor describes the inputs). */
static FcStatus compile_case(Case *c, int set, FcModule **m, FcJit **jit, FcModule **gm, FcSimt **simt,
                             int *n_bound, const char **stage, FcDiag *d) {
  FcStatus st = compile_cpu(c, set, m, jit, n_bound, stage, d);
  if (st != FC_OK || !c->o->simt) return st;
  int unused;
  *stage = "import";
  if ((st = import_case(c, set, gm, &unused, d)) != FC_OK) return st;
  FcPipelineOptions po;
  fc_pipeline_options_default(&po);
  po.opt_level = c->o->opt_level;
  *stage = "SIMT compile";
  return fc_simt_compile(*gm, &po, c->o->precision, simt, d);
}

static FcStatus compile_cpu(Case *c, int set, FcModule **m, FcJit **jit, int *n_bound, const char **stage,
                            FcDiag *d) {
  *stage = "import";
  FcStatus st = import_case(c, set, m, n_bound, d);
  if (st != FC_OK) return st;
  FcPipelineOptions po;
  fc_pipeline_options_default(&po);
  po.opt_level = c->o->opt_level;
  FcCodegenOptions co = {.cpu = c->o->cpu, .opt_level = c->o->opt_level};
  *stage = "compile";
  return fc_compile_jit(*m, &po, &co, jit, d);
}

static bool all_outputs_constant(FcModule *m) {
  FcGraph *g = m->graph;
  int n = fc_graph_num_outputs(g);
  for (int i = 0; i < n; i++) {
    const FcValue *v = fc_graph_output(g, i);
    if (!v->def || v->def->kind != FC_OP_CONSTANT) return false;
  }
  return n > 0;
}

static void type_str(char *buf, size_t cap, FcDtype dt, int rank, const int64_t *dims) {
  FcType t = {dt, rank, dims};
  fc_type_str(&t, buf, cap);
}

/* libonnx-testdata stores bfloat16 tensors as their raw bits with data type UINT16; such a tensor, where the
 * model has bf16, is taken as bf16 (same bytes). Anything else keeps its dtype. */
static const FcTensor *bf16_quirk(const FrtTensorDesc *d, const FcTensor *t, FcArena *arena) {
  if (d->dtype != FRT_BF16 || t->type.dtype != FC_DT_U16) return t;
  FcTensor *v = FC_NEW(arena, FcTensor);
  *v = *t;
  v->type.dtype = FC_DT_BF16;
  return v;
}

static bool desc_matches(const FrtTensorDesc *d, const FcTensor *t) {
  if (d->dtype != (FrtDtype)fc_dtype_to_onnx(t->type.dtype) || d->rank != t->type.rank) return false;
  for (int i = 0; i < d->rank; i++)
    if (d->dims[i] != t->type.dims[i]) return false;
  return true;
}

static void desc_str(char *buf, size_t cap, const FrtTensorDesc *d) {
  FcDtype dt = FC_DT_F32;
  fc_dtype_from_onnx((int)d->dtype, &dt);
  type_str(buf, cap, dt, d->rank, d->dims);
}

/* "[3,1]" for flat index i of a shape. */
static void index_str(char *buf, size_t cap, const FcType *t, int64_t i) {
  int64_t idx[FC_DEFAULT_MAX_RANK * 4];
  int rank = t->rank < (int)(sizeof idx / sizeof idx[0]) ? t->rank : (int)(sizeof idx / sizeof idx[0]);
  for (int d = rank - 1; d >= 0; d--) {
    int64_t n = t->dims[d] > 0 ? t->dims[d] : 1;
    idx[d] = i % n;
    i /= n;
  }
  size_t len = (size_t)snprintf(buf, cap, "[");
  for (int d = 0; d < rank && len < cap; d++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%lld", d ? "," : "", (long long)idx[d]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
}

/* Compares output `k` (got, laid out as `want`'s type, read from `file`) and fills `why` on a mismatch. */
static bool compare(const Case *c, int k, const char *file, const void *got_data, const FcTensor *want, char *why,
                    size_t cap) {
  FcTensor got = {.type = want->type, .data = got_data, .nbytes = want->nbytes};
  int64_t n = 0;
  fc_type_numel(&want->type, &n);
  bool is_float = fc_dtype_is_float(want->type.dtype);
  int64_t bad = 0, worst = -1;
  double worst_score = -1;
  for (int64_t i = 0; i < n; i++) {
    if (is_float) {
      double g = fc_tensor_get_f64(&got, i), w = fc_tensor_get_f64(want, i);
      if (isnan(g) && isnan(w)) continue;
      if (isinf(w) || isinf(g)) {
        if (g == w) continue;
        bad++;
        if (worst_score < INFINITY || worst < 0) worst = i, worst_score = INFINITY;
        continue;
      }
      double err = fabs(g - w), tol = c->o->atol + c->o->rtol * fabs(w);
      if (err <= tol) continue;
      double score = isnan(err) ? INFINITY : err / tol;
      bad++;
      if (score > worst_score || worst < 0) worst = i, worst_score = score;
    } else {
      if (fc_tensor_get_i64(&got, i) == fc_tensor_get_i64(want, i)) continue;
      if (bad++ == 0) worst = i;
    }
  }
  if (!bad) return true;
  char idx[256];
  index_str(idx, sizeof idx, &want->type, worst);
  if (is_float) {
    double g = fc_tensor_get_f64(&got, worst), w = fc_tensor_get_f64(want, worst);
    snprintf(why, cap, "output %d (%s) element %s: got %.9g expected %.9g (abs err %.3g, rel err %.3g); %lld of %lld "
             "elements differ", k, file, idx, g, w, fabs(g - w), w != 0 ? fabs(g - w) / fabs(w) : INFINITY,
             (long long)bad, (long long)n);
  } else {
    snprintf(why, cap, "output %d (%s) element %s: got %lld expected %lld; %lld of %lld elements differ", k, file, idx,
             (long long)fc_tensor_get_i64(&got, worst), (long long)fc_tensor_get_i64(want, worst), (long long)bad,
             (long long)n);
  }
  return false;
}

/* Failures name the file of expected values (relative to the case), so the reader knows what was
 * compared with what. */
static void out_file(char *buf, size_t cap, int set, int k) {
  snprintf(buf, cap, "test_data_set_%d/output_%d.pb", set, k);
}

/* Runs data set `set` on the compiled model; returns R_PASS or a FAIL outcome. */
static int run_set(Case *c, const FrtModel *model, int set, int n_sets, FrtPool *pool, FcArena *arena) {
  FcTestCase tc = {.dir = c->dir, .limits = c->o->limits};
  FcDiag d;
  fc_diag_init(&d);
  char where[32] = "";
  if (n_sets > 1) snprintf(where, sizeof where, "data set %d: ", set);
  FcTestTensor *ins, *outs;
  int n_in, n_out;
  if (fc_testcase_read_set(&tc, set, "input", arena, &ins, &n_in, &d) != FC_OK ||
      fc_testcase_read_set(&tc, set, "output", arena, &outs, &n_out, &d) != FC_OK)
    return outcome(c, R_FAIL, ": %s%s", where, d.msg);
  const char **real = NULL;
  int n_real = 0;
  bool real_loaded = false;
  const void **in_ptrs = FC_NEW_ARRAY(arena, const void *, (size_t)model->n_inputs + 1);
  for (int i = 0; i < model->n_inputs; i++) {
    const FrtTensorDesc *desc = &model->inputs[i];
    int found = -1;
    for (int j = 0; j < n_in && found < 0; j++)
      if (ins[j].name && strcmp(ins[j].name, desc->name) == 0) found = j;
    if (found < 0) {
      /* No file names the input: its position among the model's real inputs is the file's. */
      if (!real_loaded && fc_testcase_real_inputs(&tc, arena, &real, &n_real, &d) != FC_OK)
        return outcome(c, R_FAIL, ": %s%s", where, d.msg);
      real_loaded = true;
      for (int j = 0; j < n_real && found < 0; j++)
        if (strcmp(real[j], desc->name) == 0 && j < n_in) found = j;
    }
    if (found < 0) return outcome(c, R_FAIL, ": %sno data for input '%s'", where, desc->name);
    const FcTensor *t = bf16_quirk(desc, ins[found].t, arena);
    if (!desc_matches(desc, t)) {
      char a[128], b[128];
      desc_str(a, sizeof a, desc);
      fc_type_str(&t->type, b, sizeof b);
      return outcome(c, R_FAIL, ": %sinput '%s' is %s in the data set but %s in the compiled model", where, desc->name,
                     b, a);
    }
    /* Kernels assume natural alignment only; a 64-byte copy also gives empty tensors a valid pointer. */
    void *p = fc_arena_alloc(arena, (size_t)(t->nbytes ? t->nbytes : 1), 64);
    if (t->nbytes) memcpy(p, t->data, (size_t)t->nbytes);
    in_ptrs[i] = p;
  }
  if (n_out != model->n_outputs)
    return outcome(c, R_FAIL, ": %sthe data set has %d outputs, the model %d", where, n_out, (int)model->n_outputs);
  void **out_ptrs = FC_NEW_ARRAY(arena, void *, (size_t)n_out + 1);
  char file[64];
  for (int k = 0; k < n_out; k++) {
    out_file(file, sizeof file, set, k);
    const FrtTensorDesc *desc = &model->outputs[k];
    outs[k].t = bf16_quirk(desc, outs[k].t, arena);
    if (!desc_matches(desc, outs[k].t)) {
      char a[128], b[128];
      desc_str(a, sizeof a, desc);
      fc_type_str(&outs[k].t->type, b, sizeof b);
      return outcome(c, R_FAIL, ": %soutput %d is %s, expected %s (%s)", where, k, a, b, file);
    }
    size_t nb = (size_t)outs[k].t->nbytes;
    out_ptrs[k] = fc_arena_alloc(arena, nb ? nb : 1, 64);
    memset(out_ptrs[k], 0xA5, nb); /* garbage, so an output nobody writes cannot pass by luck */
  }
  void *ws = fc_arena_alloc(arena, (size_t)(model->workspace_size ? model->workspace_size : 1), 64);
  FrtError err = {0};
  if (model->gpu) {
    FrtGpuSession *s = NULL;
    FrtStatus rs = frt_gpu_open(model, FRT_DEVICE_SIMT, &s, &err);
    if (rs == FRT_OK) rs = frt_gpu_run(s, in_ptrs, out_ptrs, &err);
    frt_gpu_close(s);
    if (rs != FRT_OK) return outcome(c, R_FAIL, ": %srun on the SIMT backend: %s", where, err.msg);
  } else if (frt_model_run(model, in_ptrs, out_ptrs, ws, pool, &err) != FRT_OK) {
    return outcome(c, R_FAIL, ": %srun: %s", where, err.msg);
  }
  char why[1024];
  for (int k = 0; k < n_out; k++) {
    out_file(file, sizeof file, set, k);
    if (!compare(c, k, file, out_ptrs[k], outs[k].t, why, sizeof why)) return outcome(c, R_FAIL, ": %s%s", where, why);
  }
  return R_PASS;
}

static int check_case(Case *c) {
  int n_sets = fc_testcase_count_sets(c->dir);
  if (n_sets == 0) return outcome(c, R_FAIL, ": no test_data_set_0 folder");
  FrtError err = {0};
  FrtPool *pool = frt_pool_create(c->o->threads, &err);
  if (!pool) return outcome(c, R_FAIL, ": %s", err.msg);
  int r = R_PASS;
  bool constant = true;
  FcModule *m = NULL, *gm = NULL;
  FcJit *jit = NULL;
  FcSimt *simt = NULL;
  int n_bound = 0;
  for (int set = 0; set < n_sets && r == R_PASS; set++) {
    if (set == 0 || n_bound > 0) { /* bound inputs may differ between data sets */
      fc_simt_free(simt);
      fc_module_destroy(gm);
      fc_jit_destroy(jit);
      fc_module_destroy(m);
      jit = NULL;
      m = gm = NULL;
      simt = NULL;
      FcDiag d;
      fc_diag_init(&d);
      const char *stage = "";
      FcStatus st = compile_case(c, set, &m, &jit, &gm, &simt, &n_bound, &stage, &d);
      if (st != FC_OK) {
        r = from_status(c, st, stage, &d);
        break;
      }
      constant = constant && all_outputs_constant(m);
    }
    FcArena arena;
    fc_arena_init(&arena);
    FrtModel model = *fc_jit_model(jit);
    if (simt) model.gpu = fc_simt_model(simt);
    r = run_set(c, &model, set, n_sets, pool, &arena);
    fc_arena_free(&arena);
  }
  fc_simt_free(simt);
  fc_module_destroy(gm);
  fc_jit_destroy(jit);
  fc_module_destroy(m);
  frt_pool_destroy(pool);
  if (r == R_PASS) return outcome(c, constant ? R_CONSTANT : R_PASS, NULL);
  return r;
}

/* ---- the parent: children, order, counts ------------------------------------------------------------- */

typedef struct Child {
  Case c;
  pid_t pid;
  int fd; /* read end of the child's pipe */
} Child;

static FcStatus start_child(Child *ch, FcDiag *diag) {
  int p[2];
  if (pipe(p) != 0) return fc_error(diag, FC_ERR_IO, "cannot create a pipe: %s", strerror(errno));
  fflush(NULL); /* nothing buffered may be written twice */
  pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return fc_error(diag, FC_ERR_IO, "cannot fork: %s", strerror(errno));
  }
  if (pid == 0) {
    close(p[0]);
    if (ch->c.o->timeout_s > 0) alarm((unsigned)ch->c.o->timeout_s);
    int r = check_case(&ch->c);
    size_t len = strlen(ch->c.line);
    const char *s = ch->c.line;
    while (len > 0) {
      ssize_t w = write(p[1], s, len);
      if (w <= 0) break;
      s += w;
      len -= (size_t)w;
    }
    close(p[1]);
    /* exit, not _exit: LeakSanitizer checks the case at exit in sanitizer builds. */
    exit(r);
  }
  close(p[1]);
  ch->pid = pid;
  ch->fd = p[0];
  return FC_OK;
}

/* Waits for a child, then prints its line and counts it. */
static void finish_child(FILE *out, Child *ch, FcCheckSummary *sum) {
  char buf[LINE_CAP];
  size_t len = 0;
  for (;;) {
    ssize_t r = read(ch->fd, buf + len, sizeof buf - 1 - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    len += (size_t)r;
    if (len == sizeof buf - 1) break;
  }
  buf[len] = '\0';
  close(ch->fd);
  int status = 0;
  while (waitpid(ch->pid, &status, 0) < 0 && errno == EINTR) {
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code >= R_PASS && code <= R_CONSTANT && len > 0) {
    fprintf(out, "%s\n", buf);
    if (code == R_PASS) sum->passed++;
    else if (code == R_FAIL) sum->failed++;
    else if (code == R_UNSUPPORTED) sum->skipped++;
    else sum->constant++;
  } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
    fprintf(out, "FAIL %s: timed out after %d s\n", ch->c.name, ch->c.o->timeout_s);
    sum->failed++;
  } else if (WIFSIGNALED(status)) {
    fprintf(out, "FAIL %s: crashed (%s)\n", ch->c.name, strsignal(WTERMSIG(status)));
    sum->failed++;
  } else {
    fprintf(out, "FAIL %s: exited with status %d (see the messages above)\n", ch->c.name, code);
    sum->failed++;
  }
  fflush(out);
}

static bool has_model(const char *dir) {
  char path[8192];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The cases a DIR names: itself, or its subfolders holding a model.onnx, in name order (malloc'd). */
static FcStatus list_cases(const char *dir_arg, char ***out, int *n, FcDiag *diag) {
  *out = NULL;
  *n = 0;
  size_t dl = strlen(dir_arg);
  while (dl > 1 && dir_arg[dl - 1] == '/') dl--; /* "node/test_add/" names the case "node/test_add" */
  char *dir = strndup(dir_arg, dl);
  if (!dir) fc_die(__FILE__, __LINE__, "out of memory");
  if (has_model(dir)) {
    char **v = malloc(sizeof *v);
    if (!v) fc_die(__FILE__, __LINE__, "out of memory");
    v[0] = dir;
    *out = v;
    *n = 1;
    return FC_OK;
  }
  DIR *dp = opendir(dir);
  if (!dp) {
    FcStatus st = fc_error(diag, FC_ERR_IO, "%s: cannot open: %s", dir, strerror(errno));
    free(dir);
    return st;
  }
  char **v = NULL;
  int cnt = 0, cap = 0;
  for (struct dirent *de; (de = readdir(dp));) {
    if (de->d_name[0] == '.') continue;
    size_t len = strlen(dir) + strlen(de->d_name) + 2;
    char *p = malloc(len);
    if (!p) fc_die(__FILE__, __LINE__, "out of memory");
    snprintf(p, len, "%s/%s", dir, de->d_name);
    if (!has_model(p)) {
      free(p);
      continue;
    }
    if (cnt == cap) {
      cap = cap ? 2 * cap : 64;
      char **nv = realloc(v, (size_t)cap * sizeof *nv);
      if (!nv) fc_die(__FILE__, __LINE__, "out of memory");
      v = nv;
    }
    v[cnt++] = p;
  }
  closedir(dp);
  if (cnt == 0) {
    free(v);
    FcStatus st = fc_error(diag, FC_ERR_INPUT, "%s: neither a test case (no model.onnx) nor a folder of test cases", dir);
    free(dir);
    return st;
  }
  free(dir);
  qsort(v, (size_t)cnt, sizeof *v, cmp_str);
  *out = v;
  *n = cnt;
  return FC_OK;
}

/* "node/test_add" for ".../node/test_add": the case and the folder it is in. */
static const char *case_name(const char *dir) {
  const char *p = dir + strlen(dir), *start = dir;
  int slashes = 0;
  while (p > dir) {
    if (p[-1] == '/' && ++slashes == 2) {
      start = p;
      break;
    }
    p--;
  }
  if (start[0] == '.' && start[1] == '/') start += 2;
  return start;
}

FcStatus fc_check_dirs(FILE *out, const char *const *dirs, int n_dirs, const FcCheckOptions *o, FcCheckSummary *sum,
                       FcDiag *diag) {
  *sum = (FcCheckSummary){0};
  int jobs = o->jobs > 0 ? o->jobs : 1;
  Child *running = calloc((size_t)jobs, sizeof *running);
  if (!running) fc_die(__FILE__, __LINE__, "out of memory");
  int head = 0, count = 0; /* a ring of running children, oldest at head */
  FcStatus st = FC_OK;
  for (int di = 0; di < n_dirs && st == FC_OK; di++) {
    char **cases;
    int n;
    st = list_cases(dirs[di], &cases, &n, diag);
    for (int i = 0; i < n; i++) {
      if (st == FC_OK) {
        if (count == jobs) {
          finish_child(out, &running[head], sum);
          free((char *)running[head].c.dir);
          head = (head + 1) % jobs;
          count--;
        }
        Child *ch = &running[(head + count) % jobs];
        *ch = (Child){.c = {.dir = cases[i], .name = case_name(cases[i]), .o = o}};
        st = start_child(ch, diag);
        if (st == FC_OK) {
          count++;
          continue;
        }
      }
      free(cases[i]);
    }
    free(cases);
  }
  for (; count > 0; count--, head = (head + 1) % jobs) {
    finish_child(out, &running[head], sum);
    free((char *)running[head].c.dir);
  }
  free(running);
  if (st != FC_OK) return st;
  if (sum->constant)
    fprintf(out, "%d constant (every output was computed at compile time; not counted below)\n", sum->constant);
  fprintf(out, "%d passed, %d failed, %d skipped\n", sum->passed, sum->failed, sum->skipped);
  fflush(out);
  return ferror(out) ? fc_error(diag, FC_ERR_IO, "cannot write the results") : FC_OK;
}
