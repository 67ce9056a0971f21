/* main.c — frt_main, the command line of every executable flowc builds:
 *
 *   OUT [FILE ...] [--input NAME=FILE ...] [--output-dir DIR] [--output-format npy|pb] [--threads N]
 *       [--bench N] [--profile] [--print] [--device cuda|cpu|auto]
 *
 * The steps run in a fixed order so that everything that can fail on the user's input fails before the
 * model runs, and nothing allocates in between runs: parse the arguments (exit 2 on bad usage), bind
 * files to inputs (positional FILE k is input k), read and check each one against the model's
 * FrtTensorDesc, allocate outputs, workspace and the timing buffer, start the pool; then run (once, or a
 * warm-up plus N timed runs); then write outputs and print. Every failure is one line
 * `<prog>: error: <what>` on stderr and exit 1.
 *
 * Outputs are written only when --output-dir is given (so a run with --print or --bench leaves no files
 * behind); a run asking for neither files, --print, --bench nor --profile prints, so it always shows its
 * result. --profile times every kernel (frt_pool_set_profile) over the timed runs, or over the one run
 * without --bench, and prints a table of the kernels by time.
 * numpy has no bf16, so a .npy holding ui16 bits feeds a bf16 input, and bf16 outputs go out as <u2.
 *
 * A model with GPU code (FrtModel.gpu, flowc build --device cuda) runs on the GPU by default (--device auto):
 * the session (runtime/gpu.c) is opened after the inputs are read, in place of the workspace and the pool;
 * when it cannot be (no driver, no GPU, a PTX the driver refuses) auto says why once on stderr and runs
 * the CPU code, while --device cuda fails. The run loop, --bench and --profile (per-node device times) are
 * the same for both. --device simt runs the GPU code on the SIMT host emulator (a model built for it).
 *
 * A model of N > 1 ranks (an SBP program, FrtModel.n_ranks) runs under mpirun: frt_coll_init starts MPI
 * and refuses a wrong number of processes; rank 0 reads the input files and broadcasts them (an SBP
 * program's inputs are whole tensors on every rank; its graph slices them); every rank runs the model;
 * rank 0 writes and prints what a single process would. Every rank parses the same arguments, so an error
 * in them is printed by rank 0 alone; any other error is printed by the rank that meets it, prefixed with
 * "rank K: ". Where the ranks can disagree (rank 0's input files, each rank's allocations) they agree
 * first, with an all-reduce of the exit status, so all end together and none is left waiting; an error
 * while the model runs may leave the others waiting in a collective, so it aborts the job (MPI_Abort).
 * A GPU SBP program's ranks (--device cuda, or auto) start the NCCL collectives, which the GPU runner uses on
 * device memory (frt_main's own agreement and broadcast stay on MPI's host memory: frt_coll_host_*); where
 * NCCL cannot start on every rank, auto falls back to the CPU program over the MPI already running, rank 0
 * saying why once, and cuda fails with one line on every rank. The collectives start before the arguments
 * are parsed (so that rank 0 alone reports usage errors): --device is read ahead (device_option). The
 * variant of a program built per rank (FrtModel.rank) is chosen once the collectives know this rank.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "flowrt_internal.h"

/* The GPU runner (gpu.c) is linked only into programs with GPU code, whose descriptor references it
 * (frt_gpu_runtime); in a CPU-only program these stay null, and m->gpu is NULL there anyway. */
#pragma weak frt_gpu_open
#pragma weak frt_gpu_run
#pragma weak frt_gpu_close
#pragma weak frt_gpu_device_name
#pragma weak frt_gpu_set_profile
/* The NCCL collectives come with the GPU runner (gpu.c uses them); a CPU-only SBP program has MPI's alone. */
#pragma weak frt_coll_nccl
#pragma weak frt_coll_nccl_keep_mpi

#define EXIT_INPUT 1
#define EXIT_USAGE 2
#define PRINT_VALUES 8

typedef struct Cli {
  const char *prog;
  const FrtModel *m;   /* what runs: the model, or the variant of a multiversioned one chosen for this CPU */
  const FrtModel *top; /* the model frt_main was given */
  const char **bound; /* per input: the file bound to it, or NULL */
  int n_positional;
  const char *out_dir;
  bool pb;
  int threads;
  long bench;
  bool profile;
  bool print;
  FrtDevice device;
  const FrtModel *gpu_model; /* the descriptor whose gpu field the GPU runs (the model or its variant) */
  bool ranked;  /* an SBP program running under mpirun */
  bool nccl;    /* ... whose collectives run on the GPUs (NCCL) */
  int32_t rank; /* this process's rank (ranked) */
  bool shared;  /* the step now running fails alike on every rank: rank 0 alone reports */
} Cli;

static int fail(const Cli *c, int code, const char *fmt, ...) FRT_PRINTF(3, 4);

static int fail(const Cli *c, int code, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (char *p = msg; *p; p++)
    if ((unsigned char)*p < 0x20)
      *p = '?';
  if (!c->ranked)
    fprintf(stderr, "%s: error: %s\n", c->prog, msg);
  else if (!c->shared || c->rank == 0)
    fprintf(stderr, "rank %d: %s: error: %s\n", (int)c->rank, c->prog, msg);
  return code;
}

static const char *desc_name(const FrtTensorDesc *d) { return d->name ? d->name : "?"; }

static void desc_type(char *buf, size_t cap, const FrtTensorDesc *d) {
  frt_format_type(buf, cap, d->dtype, d->rank, d->dims);
}

/* Written once: `flowc run` passes these options through to frt_main and prints this text in its help. */
const char frt_run_options_help[] =
    "  FILE                   a .npy or ONNX TensorProto .pb file; the k-th FILE binds the k-th input\n"
    "  --input NAME=FILE      bind the input named NAME to FILE\n"
    "  --output-dir DIR       write the outputs as DIR/output_<i>.npy (or .pb), creating DIR if missing\n"
    "  --output-format F      npy (the default) or pb\n"
    "  --threads N            threads, the calling one included (default 0: one per online core)\n"
    "  --bench N              run once to warm up, then N timed runs; print min and median latency\n"
    "  --profile              time every kernel (over the --bench runs, else over the one run) and\n"
    "                         print them by time: microseconds a run, share, GFLOP/s, node and op\n"
    "  --print                print each output's shape, dtype, first values and argmax\n"
    "                         (the default without --output-dir, --bench and --profile)\n"
    "  --device D             where a model with GPU code runs: cuda (the GPU, or fail), cpu, simt\n"
    "                         (the SIMT host emulator), or auto (the default: the GPU when one is\n"
    "                         usable, else the CPU, saying why on stderr)\n";

static void usage(const Cli *c, FILE *out) {
  const FrtModel *m = c->m;
  fprintf(out,
          "usage: %s [FILE ...] [--input NAME=FILE ...] [--output-dir DIR] [--output-format npy|pb]\n"
          "       [--threads N] [--bench N] [--profile] [--print] [--device cuda|cpu|auto]\n"
          "Runs the model '%s' compiled by flowc.\n"
          "%s"
          "  --help                 this text\n",
          c->prog, m->name ? m->name : "?", frt_run_options_help);
  if (c->top->n_variants > 0)
    fprintf(out, "cpu: %s (chosen for this CPU among %s; FLOWRT_CPU_VARIANT=NAME forces one)\n",
            m->cpu ? m->cpu : "?", c->top->cpu ? c->top->cpu : "?");
  else
    fprintf(out, "cpu: %s\n", m->cpu ? m->cpu : "?");
  char ty[256];
  fprintf(out, "inputs:%s\n", m->n_inputs ? "" : " none");
  for (int32_t i = 0; i < m->n_inputs; i++) {
    desc_type(ty, sizeof ty, &m->inputs[i]);
    fprintf(out, "  %d '%s': %s\n", (int)i, desc_name(&m->inputs[i]), ty);
  }
  fprintf(out, "outputs:\n");
  for (int32_t i = 0; i < m->n_outputs; i++) {
    desc_type(ty, sizeof ty, &m->outputs[i]);
    fprintf(out, "  %d '%s': %s\n", (int)i, desc_name(&m->outputs[i]), ty);
  }
  if (c->gpu_model)
    fprintf(out, "gpu: %s (--device auto, the default, runs on it when one is usable)\n",
            c->gpu_model->gpu->arch ? c->gpu_model->gpu->arch : "?");
  if (m->n_ranks > 1) {
    fprintf(out, "ranks: %d", (int)m->n_ranks);
    for (int32_t k = 0; k < m->n_mesh_axes && m->mesh; k++)
      fprintf(out, "%s%d", k ? "x" : " (mesh ", (int)m->mesh[k]);
    fprintf(out, "%s: run it with mpirun -np %d %s ...; rank 0 reads the inputs and writes the outputs\n",
            m->n_mesh_axes > 0 ? ")" : "", (int)m->n_ranks, c->prog);
  }
  fprintf(out, "exit status: 0 success, 1 bad input (files, shapes, dtypes, bindings), 2 bad usage\n");
}

static bool parse_count(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

/* Fills c from argv. Returns -1 to go on, else the exit status (0 after --help). */
static int parse_args(Cli *c, int argc, char **argv) {
  const FrtModel *m = c->m;
  bool only_files = false;
  bool explicit_print = false, device_given = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (only_files || a[0] != '-' || a[1] == 0) {
      if (c->n_positional >= m->n_inputs)
        return fail(c, EXIT_INPUT, "too many input files: the model takes %d input%s, '%s' is one more",
                    (int)m->n_inputs, m->n_inputs == 1 ? "" : "s", a);
      if (c->bound[c->n_positional])
        return fail(c, EXIT_INPUT, "input '%s' is bound twice ('%s' and '%s')",
                    desc_name(&m->inputs[c->n_positional]), c->bound[c->n_positional], a);
      c->bound[c->n_positional++] = a;
      continue;
    }
    if (strcmp(a, "--") == 0) {
      only_files = true;
      continue;
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      if (!c->ranked || c->rank == 0)
        usage(c, stdout);
      return 0;
    }
    if (strcmp(a, "--print") == 0) {
      explicit_print = true;
      continue;
    }
    if (strcmp(a, "--profile") == 0) {
      c->profile = true;
      continue;
    }
    static const char *const with_value[] = {"--input", "--output-dir", "--output-format", "--threads",
                                             "--bench", "--device"};
    const char *opt = NULL, *val = NULL;
    for (size_t k = 0; k < sizeof with_value / sizeof with_value[0] && !opt; k++) {
      size_t n = strlen(with_value[k]);
      if (strncmp(a, with_value[k], n) == 0 && (a[n] == 0 || a[n] == '=')) {
        opt = with_value[k];
        val = a[n] == '=' ? a + n + 1 : NULL;
      }
    }
    if (!opt)
      return fail(c, EXIT_USAGE, "unknown option '%s' (see --help)", a);
    if (!val) {
      if (i + 1 >= argc)
        return fail(c, EXIT_USAGE, "option %s needs a value (see --help)", opt);
      val = argv[++i];
    }
    long v;
    if (strcmp(opt, "--input") == 0) {
      const char *eq = strchr(val, '=');
      if (!eq || eq == val || eq[1] == 0)
        return fail(c, EXIT_USAGE, "--input wants NAME=FILE, got '%s'", val);
      size_t n = (size_t)(eq - val);
      int32_t k = 0;
      while (k < m->n_inputs && !(m->inputs[k].name && strlen(m->inputs[k].name) == n &&
                                  memcmp(m->inputs[k].name, val, n) == 0))
        k++;
      if (k == m->n_inputs)
        return fail(c, EXIT_INPUT, "the model has no input named '%.*s'", (int)(n < 200 ? n : 200), val);
      if (c->bound[k])
        return fail(c, EXIT_INPUT, "input '%s' is bound twice ('%s' and '%s')", desc_name(&m->inputs[k]),
                    c->bound[k], eq + 1);
      c->bound[k] = eq + 1;
    } else if (strcmp(opt, "--output-dir") == 0) {
      if (!*val)
        return fail(c, EXIT_USAGE, "--output-dir wants a directory");
      c->out_dir = val;
    } else if (strcmp(opt, "--output-format") == 0) {
      if (strcmp(val, "npy") != 0 && strcmp(val, "pb") != 0)
        return fail(c, EXIT_USAGE, "--output-format wants npy or pb, got '%s'", val);
      c->pb = strcmp(val, "pb") == 0;
    } else if (strcmp(opt, "--threads") == 0) {
      if (!parse_count(val, 0, 1024, &v))
        return fail(c, EXIT_USAGE, "--threads wants a count from 0 to 1024, got '%s'", val);
      c->threads = (int)v;
    } else if (strcmp(opt, "--device") == 0) {
      static const char *const names[] = {"cpu", "cuda", "simt", "auto"}; /* FrtDevice order */
      int k = 0;
      while (k < 4 && strcmp(val, names[k]) != 0)
        k++;
      if (k == 4)
        return fail(c, EXIT_USAGE, "--device wants cuda, cpu or auto, got '%s'", val);
      c->device = (FrtDevice)k;
      device_given = true;
    } else {
      if (!parse_count(val, 1, 1000000000L, &v))
        return fail(c, EXIT_USAGE, "--bench wants a positive count, got '%s'", val);
      c->bench = v;
    }
  }
  c->print = explicit_print || (!c->out_dir && !c->bench && !c->profile);
  if (!device_given)
    c->device = c->gpu_model ? FRT_DEVICE_AUTO : FRT_DEVICE_CPU;
  bool gpu = c->device == FRT_DEVICE_CUDA || c->device == FRT_DEVICE_SIMT;
  if (gpu && !c->gpu_model)
    return fail(c, EXIT_USAGE, "this model has no GPU code: build it with --device cuda");
  if (c->device == FRT_DEVICE_SIMT && m->n_ranks > 1)
    return fail(c, EXIT_USAGE, "an SBP program's ranks run on cuda or cpu, not on the SIMT emulator");
  if (c->device == FRT_DEVICE_AUTO && !c->gpu_model)
    c->device = FRT_DEVICE_CPU;
  /* Ranks: the collectives started before the arguments were parsed decided (start_ranks). */
  if (c->ranked && c->device == FRT_DEVICE_AUTO)
    c->device = c->nccl ? FRT_DEVICE_CUDA : FRT_DEVICE_CPU;
  return -1;
}

/* ---- model description ------------------------------------------------------------------------------ */

static bool desc_ok(const FrtTensorDesc *d, size_t *nbytes) {
  return d->rank >= 0 && d->rank <= FRT_MAX_RANK && (d->rank == 0 || d->dims) &&
         frt_dense_nbytes(d->dtype, d->rank, d->dims, nbytes);
}

static int check_model(Cli *c) {
  const FrtModel *m = c->m;
  if (m->abi_version != FRT_ABI_VERSION)
    return fail(c, EXIT_INPUT, "the model was built for runtime ABI %u, this runtime is ABI %d",
                (unsigned)m->abi_version, FRT_ABI_VERSION);
  FrtError err;
  if (!(m = c->m = frt_model_variant(m, &err)))
    return fail(c, EXIT_INPUT, "%s", err.msg);
  if (m->abi_version != FRT_ABI_VERSION)
    return fail(c, EXIT_INPUT, "malformed model description");
  if (m->n_inputs < 0 || m->n_outputs < 0 || (m->n_inputs && !m->inputs) || (m->n_outputs && !m->outputs) ||
      !m->run)
    return fail(c, EXIT_INPUT, "malformed model description");
  char cpu_msg[512];
  if (frt_cpu_check_const(m->cpu_features, m->cpu, cpu_msg, sizeof cpu_msg) != 0)
    return fail(c, EXIT_INPUT, "%s", cpu_msg);
  size_t n;
  for (int32_t i = 0; i < m->n_inputs; i++)
    if (!desc_ok(&m->inputs[i], &n))
      return fail(c, EXIT_INPUT, "malformed model description of input %d", (int)i);
  for (int32_t i = 0; i < m->n_outputs; i++)
    if (!desc_ok(&m->outputs[i], &n))
      return fail(c, EXIT_INPUT, "malformed model description of output %d", (int)i);
  return -1;
}

static int check_bound(const Cli *c) {
  const FrtModel *m = c->m;
  char list[512];
  size_t at = 0;
  int missing = 0;
  list[0] = 0;
  for (int32_t i = 0; i < m->n_inputs; i++) {
    if (c->bound[i])
      continue;
    if (at < sizeof list) {
      int k = snprintf(list + at, sizeof list - at, "%s'%s'", missing ? ", " : "", desc_name(&m->inputs[i]));
      at += k > 0 ? (size_t)k : 0;
    }
    missing++;
  }
  if (!missing)
    return -1;
  bool one = missing == 1;
  return fail(c, EXIT_INPUT, "%s %s %s not bound: give %s as FILE or --input NAME=FILE",
              one ? "input" : "inputs", list, one ? "is" : "are", one ? "it" : "them");
}

/* Reads input i into t and checks it against the model's description. */
static int read_input(const Cli *c, int32_t i, FrtTensor *t) {
  const FrtTensorDesc *d = &c->m->inputs[i];
  FrtError err = {0};
  if (frt_tensor_read_max(c->bound[i], frt_tensor_file_max_bytes(d), t, &err) != FRT_OK)
    return fail(c, EXIT_INPUT, "input '%s': %s", desc_name(d), err.msg);
  /* numpy has no bf16: a .npy of bf16 bits holds '<u2', which feeds a bf16 input as it is. */
  if (d->dtype == FRT_BF16 && t->dtype == FRT_U16)
    t->dtype = FRT_BF16;
  bool same = t->dtype == d->dtype && t->rank == d->rank;
  for (int32_t k = 0; same && k < d->rank; k++)
    same = t->dims[k] == d->dims[k];
  if (same)
    return -1;
  char have[256], want[256];
  frt_format_type(have, sizeof have, t->dtype, t->rank, t->dims);
  desc_type(want, sizeof want, d);
  return fail(c, EXIT_INPUT, "input '%s': file %s holds %s, the model needs %s", desc_name(d), c->bound[i],
              have, want);
}

/* ---- outputs ----------------------------------------------------------------------------------------- */

/* mkdir -p. */
static int make_dir(const Cli *c, const char *dir) {
  char *p = strdup(dir);
  if (!p)
    return fail(c, EXIT_INPUT, "out of memory");
  int rc = -1;
  for (char *s = p + 1;; s++) {
    bool last = *s == 0;
    if (*s != '/' && !last)
      continue;
    *s = 0;
    struct stat st;
    if (mkdir(p, 0777) != 0 && !(errno == EEXIST && stat(p, &st) == 0 && S_ISDIR(st.st_mode))) {
      rc = fail(c, EXIT_INPUT, "cannot create the output directory %s: %s", p,
                errno == EEXIST ? "not a directory" : strerror(errno));
      break;
    }
    if (last)
      break;
    *s = '/';
  }
  free(p);
  return rc;
}

static int write_outputs(const Cli *c, void *const *outs) {
  int rc = make_dir(c, c->out_dir);
  if (rc >= 0)
    return rc;
  const FrtModel *m = c->m;
  size_t cap = strlen(c->out_dir) + 32;
  char *path = malloc(cap);
  if (!path)
    return fail(c, EXIT_INPUT, "out of memory");
  for (int32_t i = 0; i < m->n_outputs && rc < 0; i++) {
    const FrtTensorDesc *d = &m->outputs[i];
    FrtTensor t = {.dtype = d->dtype, .rank = d->rank, .data = outs[i]};
    if (d->rank > 0)
      memcpy(t.dims, d->dims, sizeof d->dims[0] * (size_t)d->rank);
    frt_dense_nbytes(d->dtype, d->rank, d->dims, &t.nbytes);
    snprintf(path, cap, "%s/output_%d.%s", c->out_dir, (int)i, c->pb ? "pb" : "npy");
    FrtError err = {0};
    FrtStatus st = c->pb ? frt_tensor_write_pb(path, &t, desc_name(d), &err)
                         : frt_tensor_write_npy(path, &t, &err);
    if (st != FRT_OK)
      rc = fail(c, EXIT_INPUT, "output '%s': %s", desc_name(d), err.msg);
  }
  free(path);
  return rc;
}

static double value_at(FrtDtype dt, const void *data, size_t i) {
  const uint8_t *p = (const uint8_t *)data + i * frt_dtype_size(dt);
  union {
    float f; double d; int8_t i8; uint8_t u8; int16_t i16; uint16_t u16; int32_t i32; uint32_t u32;
    int64_t i64; uint64_t u64;
  } v;
  memcpy(&v, p, frt_dtype_size(dt));
  switch (dt) {
  case FRT_F32: return v.f;
  case FRT_F64: return v.d;
  case FRT_F16: return frt_f16_to_f32(v.u16);
  case FRT_BF16: return frt_bf16_to_f32(v.u16);
  case FRT_I8: return v.i8;
  case FRT_U8: case FRT_BOOL: return v.u8;
  case FRT_I16: return v.i16;
  case FRT_U16: return v.u16;
  case FRT_I32: return v.i32;
  case FRT_U32: return v.u32;
  case FRT_I64: return (double)v.i64;
  case FRT_U64: return (double)v.u64;
  }
  return 0;
}

static void print_value(FrtDtype dt, const void *data, size_t i) {
  const uint8_t *p = (const uint8_t *)data + i * frt_dtype_size(dt);
  int64_t s;
  uint64_t u;
  switch (dt) {
  case FRT_BOOL: fputs(*p ? "true" : "false", stdout); return;
  case FRT_I64: memcpy(&s, p, 8); printf("%lld", (long long)s); return;
  case FRT_U64: memcpy(&u, p, 8); printf("%llu", (unsigned long long)u); return;
  case FRT_F32: case FRT_F64: case FRT_F16: case FRT_BF16: printf("%.6g", value_at(dt, data, i)); return;
  default: printf("%.0f", value_at(dt, data, i)); return;
  }
}

/* numpy's argmax: the first maximum, or the first NaN if there is one. Exact for 64-bit integers. */
static size_t argmax(FrtDtype dt, const void *data, size_t begin, size_t n) {
  size_t best = begin;
  for (size_t i = begin + 1; i < begin + n; i++) {
    if (dt == FRT_I64 || dt == FRT_U64) {
      const uint8_t *p = data;
      int64_t a, b;
      memcpy(&a, p + 8 * i, 8);
      memcpy(&b, p + 8 * best, 8);
      if (dt == FRT_I64 ? a > b : (uint64_t)a > (uint64_t)b)
        best = i;
      continue;
    }
    double a = value_at(dt, data, i), b = value_at(dt, data, best);
    if (b != b)
      return best;
    if (a > b || a != a)
      best = i;
  }
  return best;
}

static void print_output(const FrtTensorDesc *d, int32_t index, const void *data) {
  char ty[256];
  desc_type(ty, sizeof ty, d);
  size_t nbytes;
  frt_dense_nbytes(d->dtype, d->rank, d->dims, &nbytes);
  size_t numel = nbytes / frt_dtype_size(d->dtype);
  printf("output %d '%s': %s\n  values: [", (int)index, desc_name(d), ty);
  for (size_t i = 0; i < numel && i < PRINT_VALUES; i++) {
    if (i)
      fputs(", ", stdout);
    print_value(d->dtype, data, i);
  }
  printf(numel > PRINT_VALUES ? ", ...] (%zu values)\n" : "]\n", numel);
  /* A vector of scores: rank 1, or one row per batch element at rank 2. */
  if (d->dtype == FRT_BOOL || numel == 0 || (d->rank != 1 && d->rank != 2))
    return;
  size_t rows = d->rank == 2 ? (size_t)d->dims[0] : 1, cols = numel / rows;
  for (size_t r = 0; r < rows; r++) {
    size_t best = argmax(d->dtype, data, r * cols, cols);
    if (d->rank == 1 || rows == 1)
      printf("  argmax: %zu (", best - r * cols);
    else
      printf("  argmax[%zu]: %zu (", r, best - r * cols);
    print_value(d->dtype, data, best);
    fputs(")\n", stdout);
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The --profile table: kernels by time (ties by index), per run. */
static const double *profile_acc;

static int cmp_by_time(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  double tx = profile_acc[x], ty = profile_acc[y];
  return tx != ty ? (tx < ty) - (tx > ty) : (x > y) - (x < y);
}

/* n kernels named by names (flops per kernel, or NULL); `where`: "2 threads", "NVIDIA H200 (sm_90, ...)". */
static void print_profile(int32_t n, const char *const *names, const double *kernel_flops, const double *acc,
                          int32_t *order, long runs, const char *where, const double *comm) {
  double total = 0;
  for (int32_t k = 0; k < n; k++) {
    order[k] = k;
    total += acc[k];
  }
  profile_acc = acc;
  if (n > 0)
    qsort(order, (size_t)n, sizeof *order, cmp_by_time);
  printf("profile: %d kernels, %.4f ms a run in kernels (mean of %ld run%s, %s)\n", (int)n,
         total / (double)runs * 1e3, runs, runs == 1 ? "" : "s", where);
  printf("%10s %7s %7s %8s  %s\n", "us/run", "share", "cumul", "GFLOP/s", "kernel");
  double cumul = 0;
  for (int32_t i = 0; i < n; i++) {
    int32_t k = order[i];
    cumul += acc[k];
    const char *name = names && names[k] ? names[k] : "?";
    double flops = kernel_flops ? kernel_flops[k] : 0;
    char rate[32] = "-";
    if (flops > 0 && acc[k] > 0)
      snprintf(rate, sizeof rate, "%.1f", flops * (double)runs / acc[k] * 1e-9);
    printf("%10.1f %6.1f%% %6.1f%% %8s  %s\n", acc[k] / (double)runs * 1e6, total > 0 ? 100 * acc[k] / total : 0.0,
           total > 0 ? 100 * cumul / total : 0.0, rate, name);
  }
  /* Rank 0's time inside collectives (waiting for the others included), part of the kernels' time above. */
  if (comm)
    printf("communication: %.4f ms a run in collectives (rank 0)\n", *comm / (double)runs * 1e3);
}

/* ---- ranks ------------------------------------------------------------------------------------------ */

/* --help needs no ranks: it prints without MPI, so a user can read it before running mpirun. */
static bool asks_help(int argc, char **argv) {
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
      return true;
  return false;
}

/* The last --device value of argv (as parse_args reads it), or `dflt`: the collectives start before the
 * arguments are parsed, and a GPU program's ranks need NCCL's. An invalid value is parse_args's to report. */
static FrtDevice device_option(int argc, char **argv, FrtDevice dflt) {
  static const char *const names[] = {"cpu", "cuda", "simt", "auto"}; /* FrtDevice order */
  FrtDevice d = dflt;
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
    const char *val = NULL;
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
      val = argv[++i];
    else if (strncmp(argv[i], "--device=", 9) == 0)
      val = argv[i] + 9;
    for (int k = 0; val && k < 4; k++)
      if (strcmp(val, names[k]) == 0)
        d = (FrtDevice)k;
  }
  return d;
}

/* Starts the collectives of an SBP program: NCCL's for --device cuda, and for auto (a model with GPU code
 * and no --device) when every rank has a GPU, NCCL and a driver; else MPI's, auto saying why once (rank 0).
 * Returns -1 to go on, else the exit status (reported). */
static int start_ranks(Cli *c, int argc, char **argv) {
  const FrtModel *m = c->m;
  FrtDevice want = c->gpu_model ? device_option(argc, argv, FRT_DEVICE_AUTO) : FRT_DEVICE_CPU;
  FrtError cerr = {0};
  FrtStatus st;
  bool nccl = (want == FRT_DEVICE_CUDA || want == FRT_DEVICE_AUTO) && &frt_coll_nccl;
  frt_coll_defer_refusal(true);
  if (nccl) {
    /* MPI is kept through a failed start: auto starts the MPI backend on it, cuda ends it only after this
     * rank's line is out (MPI_Finalize waits for every rank: mpirun kills the job at the first exit). */
    frt_coll_nccl_keep_mpi(true);
    st = frt_coll_init_with(&frt_coll_nccl, m->n_ranks, m->n_mesh_axes, m->mesh, &cerr);
    frt_coll_nccl_keep_mpi(false);
    if (st == FRT_ERR_UNSUPPORTED && want == FRT_DEVICE_CUDA) {
      /* Every rank's own line: the ranks agreed on the first failed rank's message. */
      int32_t launched = frt_coll_launch_rank();
      if (launched >= 0)
        fprintf(stderr, "rank %d: %s: error: --device cuda: %s\n", (int)launched, c->prog, cerr.msg);
      else
        fprintf(stderr, "%s: error: --device cuda: %s\n", c->prog, cerr.msg);
      fflush(stderr);
      frt_coll_mpi.finalize();
      return EXIT_INPUT;
    }
    if (st == FRT_ERR_UNSUPPORTED) {
      if (frt_coll_launch_rank() <= 0)
        fprintf(stderr, "%s: no usable GPU for the ranks (%s): running the CPU code over MPI\n", c->prog, cerr.msg);
      nccl = false;
      cerr = (FrtError){0};
      st = frt_coll_init(m->n_ranks, m->n_mesh_axes, m->mesh, &cerr);
    }
  } else {
    st = frt_coll_init(m->n_ranks, m->n_mesh_axes, m->mesh, &cerr);
  }
  if (st != FRT_OK) {
    /* Every rank meets these alike (no MPI, the wrong number of ranks, a bad setting): rank 0 says it, and
     * only then does any rank end MPI (frt_coll_end_refused) and exit. */
    int32_t launched = frt_coll_launch_rank();
    if (cerr.status == FRT_ERR_RESOURCE && launched >= 0)
      fprintf(stderr, "rank %d: %s: error: %s\n", (int)launched, c->prog, cerr.msg);
    else if (launched <= 0)
      fail(c, EXIT_INPUT, "%s", cerr.msg);
    fflush(stderr);
    frt_coll_end_refused();
    return EXIT_INPUT;
  }
  c->ranked = true;
  c->nccl = nccl;
  c->rank = frt_coll_rank(-1);
  return -1;
}

/* Every rank passes its own status (-1: going on; else its exit status, already reported); all get the
 * largest, so a failure on one rank ends every rank at the same step. */
static int agree(Cli *c, int rc) {
  int32_t v = rc;
  if (frt_coll_host_all_reduce(&v, 1, FRT_I32, FRT_REDUCE_MAX) != 0) {
    c->shared = false;
    fail(c, EXIT_INPUT, "%s", frt_coll_last_error());
    frt_coll_abort(EXIT_INPUT);
    return EXIT_INPUT;
  }
  return v;
}

/* Ranks other than 0: buffers for the inputs that rank 0 broadcasts. */
static int alloc_input(const Cli *c, int32_t i, FrtTensor *t) {
  const FrtTensorDesc *d = &c->m->inputs[i];
  *t = (FrtTensor){.dtype = d->dtype, .rank = d->rank};
  if (d->rank > 0)
    memcpy(t->dims, d->dims, sizeof d->dims[0] * (size_t)d->rank);
  frt_dense_nbytes(d->dtype, d->rank, d->dims, &t->nbytes);
  if (!(t->data = frt_alloc_aligned(t->nbytes)))
    return fail(c, EXIT_INPUT, "out of memory for input '%s' (%zu bytes)", desc_name(d), t->nbytes);
  return -1;
}

/* ---- main --------------------------------------------------------------------------------------------- */

int frt_main(int argc, char **argv, const FrtModel *m) {
  Cli c = {0};
  c.prog = argc > 0 && argv[0] && argv[0][0] ? argv[0] : "model";
  const char *slash = strrchr(c.prog, '/');
  if (slash && slash[1])
    c.prog = slash + 1;
  c.m = c.top = m;
  if (!m) {
    fprintf(stderr, "%s: error: no model\n", c.prog);
    return EXIT_INPUT;
  }
  int rc = check_model(&c);
  if (rc >= 0)
    return rc;
  m = c.m;
  c.gpu_model = c.top->gpu ? c.top : m->gpu ? m : NULL;
  if (m->n_ranks > 1 && !asks_help(argc, argv) && (rc = start_ranks(&c, argc, argv)) >= 0)
    return rc;
  /* An SBP program built per rank runs this rank's variant: chosen again now that the collectives know the
   * rank (check_model's choice, made before, was rank 0's). A failure is agreed on below, so all ranks end. */
  int rank_rc = -1;
  if (c.ranked) {
    FrtError verr;
    const FrtModel *v = frt_model_variant(c.top, &verr);
    if (v)
      m = c.m = v;
    else
      rank_rc = fail(&c, EXIT_INPUT, "%s", verr.msg);
  }

  int32_t ni = m->n_inputs, no = m->n_outputs;
  FrtTensor *ins = calloc((size_t)ni + 1, sizeof *ins);
  c.bound = calloc((size_t)ni + 1, sizeof *c.bound);
  const void **in_ptrs = calloc((size_t)ni + 1, sizeof *in_ptrs);
  void **outs = calloc((size_t)no + 1, sizeof *outs);
  void *ws = NULL;
  double *times = NULL, *prof = NULL;
  int32_t *prof_order = NULL;
  FrtPool *pool = NULL;
  FrtGpuSession *gpu = NULL;
  int32_t n_prof = 0;
  char where[256] = "";
  if (!ins || !c.bound || !in_ptrs || !outs) {
    rc = fail(&c, EXIT_INPUT, "out of memory");
    goto allocated;
  }
  if ((rc = rank_rc) >= 0)
    goto allocated;
  c.shared = true;
  if ((rc = parse_args(&c, argc, argv)) >= 0 || (rc = check_bound(&c)) >= 0)
    goto allocated; /* the same on every rank, but a rank short of memory above may not have got here */
  c.shared = false;
  for (int32_t i = 0; i < ni; i++) {
    if ((rc = !c.ranked || c.rank == 0 ? read_input(&c, i, &ins[i]) : alloc_input(&c, i, &ins[i])) >= 0)
      goto allocated;
    in_ptrs[i] = ins[i].data;
  }

  /* Everything the runs need is allocated here, before the first run. */
  for (int32_t i = 0; i < no; i++) {
    size_t nbytes;
    frt_dense_nbytes(m->outputs[i].dtype, m->outputs[i].rank, m->outputs[i].dims, &nbytes);
    outs[i] = frt_alloc_aligned(nbytes);
    if (!outs[i]) {
      rc = fail(&c, EXIT_INPUT, "out of memory for output '%s' (%zu bytes)", desc_name(&m->outputs[i]),
                nbytes);
      goto allocated;
    }
    memset(outs[i], 0, nbytes);
  }
  FrtError err = {0};
  if (c.device != FRT_DEVICE_CPU && frt_gpu_open(c.gpu_model, c.device, &gpu, &err) != FRT_OK) {
    if (c.device != FRT_DEVICE_AUTO) {
      rc = fail(&c, EXIT_INPUT, "%s", err.msg);
      goto allocated;
    }
    fprintf(stderr, "%s: no usable GPU (%s): running on the CPU\n", c.prog, err.msg);
    c.device = FRT_DEVICE_CPU;
  }
  n_prof = gpu ? c.gpu_model->gpu->n_kernels : m->n_kernels;
  if (gpu)
    snprintf(where, sizeof where, "on %s", frt_gpu_device_name(gpu));
  size_t ws_size = frt_model_workspace_size(m);
  if (gpu) {
    /* The device holds the workspace; no pool either. */
  } else if (m->workspace_size > SIZE_MAX || !(ws = frt_alloc_aligned(ws_size))) {
    rc = fail(&c, EXIT_INPUT, "out of memory for the workspace (%llu bytes)",
              (unsigned long long)m->workspace_size);
    goto allocated;
  }
  if (c.bench && !(times = calloc((size_t)c.bench, sizeof *times))) {
    rc = fail(&c, EXIT_INPUT, "out of memory for %ld timings", c.bench);
    goto allocated;
  }
  if (c.profile && n_prof > 0 &&
      (!(prof = calloc((size_t)n_prof, sizeof *prof)) || !(prof_order = calloc((size_t)n_prof, sizeof *prof_order)))) {
    rc = fail(&c, EXIT_INPUT, "out of memory for the profile of %d kernels", (int)n_prof);
    goto allocated;
  }
  /* Ranks on one machine share its cores unless told otherwise. */
  int threads = c.threads;
  if (c.ranked && threads == 0 && (threads = frt_default_threads() / frt_coll_local_size()) < 1)
    threads = 1;
  if (!gpu && !(pool = frt_pool_create(threads, &err))) {
    rc = fail(&c, EXIT_INPUT, "%s", err.msg);
    goto allocated;
  }
  if (!gpu)
    snprintf(where, sizeof where, "%d thread%s", frt_pool_threads(pool), frt_pool_threads(pool) == 1 ? "" : "s");

allocated:
  if (c.ranked && (rc = agree(&c, rc)) < 0)
    for (int32_t i = 0; i < ni && rc < 0; i++) {
      size_t count = ins[i].nbytes / frt_dtype_size(ins[i].dtype);
      if (frt_coll_host_broadcast(ins[i].data, (int64_t)count, ins[i].dtype, 0) != 0) {
        rc = fail(&c, EXIT_INPUT, "input '%s': %s", desc_name(&m->inputs[i]), frt_coll_last_error());
        frt_coll_abort(rc);
      }
    }
  if (rc >= 0)
    goto done;

  double comm0 = 0;
  for (long r = c.bench ? -1 : 0; r < (c.bench ? c.bench : 1); r++) {
    if (r == 0 && prof && gpu) /* the warm-up run is not profiled */
      frt_gpu_set_profile(gpu, prof, n_prof);
    else if (r == 0 && prof)
      frt_pool_set_profile(pool, prof, m->n_kernels);
    if (r == 0)
      comm0 = frt_coll_seconds();
    double t0 = frt_now_seconds();
    if ((gpu ? frt_gpu_run(gpu, in_ptrs, outs, &err) : frt_model_run(m, in_ptrs, outs, ws, pool, &err)) != FRT_OK) {
      rc = fail(&c, EXIT_INPUT, "%s", err.msg);
      frt_coll_abort(rc); /* the other ranks may be waiting for this one in a collective */
      goto done;
    }
    if (r >= 0 && c.bench)
      times[r] = frt_now_seconds() - t0;
  }

  double comm = frt_coll_seconds() - comm0;
  if (c.ranked && c.rank != 0) {
    rc = 0; /* rank 0 writes and prints */
    goto done;
  }
  if (c.out_dir && (rc = write_outputs(&c, outs)) >= 0)
    goto done;
  if (c.print)
    for (int32_t i = 0; i < no; i++)
      print_output(&m->outputs[i], i, outs[i]);
  if (c.bench) {
    qsort(times, (size_t)c.bench, sizeof *times, cmp_double);
    size_t k = (size_t)c.bench;
    double median = k % 2 ? times[k / 2] : (times[k / 2 - 1] + times[k / 2]) / 2;
    printf("latency: min %.4f ms, median %.4f ms (%ld runs after 1 warm-up, %s)\n", times[0] * 1e3,
           median * 1e3, c.bench, where);
  }
  if (c.profile && gpu)
    print_profile(n_prof, c.gpu_model->gpu->kernel_names, NULL, prof, prof_order, c.bench ? c.bench : 1, where, NULL);
  else if (c.profile)
    print_profile(m->n_kernels, m->kernel_names, m->kernel_flops, prof, prof_order, c.bench ? c.bench : 1, where,
                  c.ranked ? &comm : NULL);
  fflush(stdout);
  rc = 0;

done:
  if (gpu) frt_gpu_close(gpu);
  frt_pool_destroy(pool);
  free(times);
  free(prof);
  free(prof_order);
  free(ws);
  if (outs)
    for (int32_t i = 0; i < no; i++)
      free(outs[i]);
  if (ins)
    for (int32_t i = 0; i < ni; i++)
      frt_tensor_free(&ins[i]);
  free(outs);
  free(in_ptrs);
  free(ins);
  free(c.bound);
  frt_coll_finalize();
  return rc;
}
