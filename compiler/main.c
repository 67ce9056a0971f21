/* main.c — the `flowc` command line: `flowc build`, `flowc info`, `flowc run` and `flowc check`.
 *
 * This is the only place that prints errors and exits. The flow of `build` is flat: parse and check
 * every option first (a bad flag or pass name is reported before the model is read), load the model by
 * its content (ONNX or IR text), verify it, run the pass pipeline (-O2 unless -O or --passes says
 * otherwise), then open the output and emit. Nothing is written to -o FILE unless the model got that far.
 * Artefacts (--emit exe, the default, obj, lib and so) go through cg_emit.h's fc_emit_artifact instead: code
 * generation, LLVM, then link or archive; their -o, --target and --cpu are checked with the flags.
 * `info` stops after the verifier and summarises the imported module. `run` compiles in memory (run.c)
 * and hands the model, with the arguments flowc does not consume, to the runtime's own command line
 * (frt_main), so `flowc run MODEL ARGS` behaves as `./built-model ARGS`. `check` runs ONNX backend test
 * cases (check.c) and exits 1 if any failed.
 *
 * Exit status: 0 success; 1 the input was rejected (one line `flowc: error: <file>: <what>` on stderr);
 * 2 the command line is wrong (one line `flowc: error: <what>`).
 *
 * --split-input-file (IR text only) processes each `// -----` separated part as its own module and
 * joins the outputs with `// -----` lines, continuing after a part that fails; lit tests use it to keep
 * several small cases in one file.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cg_emit.h"
#include "gpu.h"
#include "cli.h"
#include "codegen.h"
#include "flowrt.h"
#include "passes.h"
#include "progress.h"

#ifndef FLOWC_VERSION
#define FLOWC_VERSION "unknown"
#endif

enum { EXIT_INPUT = 1, EXIT_USAGE = 2 };
#define MAX_RANK_FLAG 1024 /* --max-rank above this is refused: types that large are not a real model */

#define FC_CLI_MAX_CPUS 8 /* --cpu A,B,...: CPUs of one multiversioned artefact */

typedef enum Cmd { CMD_BUILD, CMD_INFO, CMD_RUN, CMD_CHECK } Cmd;

/* A --quantize mode: the pass it adds to the -O pipeline, and where (after that pass list entry; NULL: at
 * the end, after every pass that makes or re-lays-out constants). */
typedef struct QuantizeMode {
  const char *name, *pass, *after;
} QuantizeMode;

static const QuantizeMode quantize_modes[] = {
    {"int8", "quantize_static", "fold_batchnorm,"}, /* calibrated: calibrated_pipeline places it */
    {"int8-dynamic", "quantize_dynamic", "fold_batchnorm,"},
    {"fp16", "store_weights_f16", NULL},
    {"bf16", "store_weights_bf16", NULL},
};
#define QUANTIZE_MODES "int8, int8-dynamic, fp16, bf16"

static const QuantizeMode *quantize_mode(const char *name) {
  for (size_t i = 0; i < sizeof quantize_modes / sizeof quantize_modes[0]; i++)
    if (strcmp(quantize_modes[i].name, name) == 0) return &quantize_modes[i];
  return NULL;
}

/* --rank-specialise: whether a --ranks build compiles one program per rank (when its plan splits a constant:
 * specialise_decide). auto stops at RANK_SPECIALISE_MAX_RANKS ranks, since the build compiles the model once
 * per rank and CPU; beyond it the ranks slice their weights at run time. */
typedef enum RankSpecialise { RANK_SPECIALISE_AUTO, RANK_SPECIALISE_ON, RANK_SPECIALISE_OFF } RankSpecialise;
#define RANK_SPECIALISE_MAX_RANKS 8

typedef struct Cli {
  const char *cmd;   /* "build", "info", "run" or "check" */
  Cmd kind;
  const char *model;
  const char *output; /* NULL or "-": stdout */
  const char *emit;   /* "ir", "dot", "onnx", or an artefact: "exe" (default), "obj", "lib", "so" */
  const char *aot_triple, *aot_cpu; /* build: --target, --cpu (the passes' target and the artefact's) */
  char aot_name[128];  /* build: the artefact's symbol prefix, from -o (cg_emit.h) */
  FcTarget *target;    /* build: resolved once from --target/--cpu, for the passes and codegen */
  FcTarget *variants[FC_CLI_MAX_CPUS]; /* build --cpu A,B,...: one target per CPU, best first (target: the first) */
  int n_variants;      /* 0: a single-CPU build */
  bool default_variants; /* the variants are the target's default list (no --cpu) */
  bool weights, split;
  int opt_level;
  const char *passes, *print_before, *print_after;
  const QuantizeMode *quantize; /* build, run: --quantize */
  char quant_passes[1024]; /* the -O pipeline with the mode's pass in it, when --quantize is given */
  /* build --quantize int8: static quantisation calibrated on --calibrate DIR (calibrate.c, quantize_static) */
  bool int8_static;
  FcCalibOptions calib_opt;
  const char *calib_method;   /* --calibrate-method as given */
  bool percentile_given;      /* --calibrate-percentile */
  FcQuantOptions quant_opt;
  char **skip;                /* --quantize-skip names (malloc'd) */
  int n_skip;
  bool quant_report;          /* --quantize-report */
  const char *static_flag;    /* the first option of static quantisation given (they need --quantize int8) */
  bool reported;              /* the report was printed (once, for the first CPU variant) */
  char calib_prefix[1024], calib_rest[1024], calib_quant[1024]; /* the -O pipeline cut after fold_batchnorm */
  FcCalib *calib;             /* the ranges, collected once and written on every CPU variant's module */
  char onnx_passes[1024];  /* --emit onnx: the pipeline without the passes that make ops ONNX lacks */
  bool verify_each;
  FcImportOptions imp;
  FcBinding *binds;
  int n_binds;
  FcInputShape *shapes;
  int n_shapes;
  const char *cpu;    /* run, check: --cpu */
  char gpu_symbol[160]; /* build --device cuda: NAME_gpu, the FrtGpuModel's symbol */
  char **rt_argv;     /* run: argv for the runtime's command line ("flowc" + what flowc does not consume) */
  int rt_argc;
  const char **dirs;  /* check: the test case folders */
  int n_dirs;
  int threads, jobs, timeout_s; /* check */
  /* build --ranks N [--mesh AxB] [--sbp data|tensor|auto|A,B|FILE]: an SBP program (passes/sbp.c) */
  int64_t ranks;            /* 0: one process */
  int64_t mesh[8];          /* --mesh dims (n_mesh 0: a 1-D mesh of ranks) */
  int n_mesh;
  const char *sbp;          /* "data" (default) or "tensor" */
  char sbp_passes[2048];    /* the pipeline with the sbp pass in it */
  char sbp_prefix[2048];    /* its start, through the sbp pass: what decides whether the build specialises */
  RankSpecialise rank_specialise; /* --rank-specialise */
  int64_t micro_batches;    /* --micro-batches M of --sbp pipeline; 0: auto (the stages, where the batch divides) */
  const char *stage_starts; /* --stages A,B,...: the nodes that begin stages 1.. (NULL: the cost model's cut) */
  bool micro_batches_given;
  bool rank_specialise_given;
  bool specialised;         /* build: one program per rank (decided once, by specialise_decide) */
  /* build --device cuda [--gpu sm_XX]: the GPU half beside the CPU code (gpu_build.c); run, check --device simt */
  const char *device;       /* "cpu" (default), "cuda" (build), "simt" (run, check) */
  const char *gpu_arch;     /* --gpu */
  const char *precision;    /* --precision (NULL: fp32) */
  FcGpuPrecision gpu_precision;
  FcTarget *gpu_target;     /* build --device cuda: the NVPTX description */
  FcModule *gpu_module;     /* the module the GPU half was compiled from (owns the plan's arrays) */
  FcGpuPlan gpu_plan;
  char *gpu_ptx;
  bool quiet;               /* build, run: no progress line */
  FcProgressLine *progress; /* build, run: the progress line (NULL when not drawn) */
} Cli;

static void cli_free(Cli *c) {
  for (int i = 0; i < c->n_skip; i++) free(c->skip[i]);
  free(c->skip);
  c->skip = NULL;
  c->n_skip = 0;
  fc_calib_free(c->calib);
  c->calib = NULL;
  for (int i = 0; i < c->n_binds; i++) free((char *)c->binds[i].name);
  free(c->binds);
  for (int i = 0; i < c->n_shapes; i++) {
    free((char *)c->shapes[i].name);
    free((int64_t *)c->shapes[i].dims);
  }
  free(c->shapes);
  free(c->rt_argv);
  free(c->dirs);
  fc_progress_line_free(c->progress);
  c->progress = NULL;
  fc_gpu_plan_free(&c->gpu_plan);
  free(c->gpu_ptx);
  c->gpu_ptx = NULL;
  fc_module_destroy(c->gpu_module);
  c->gpu_module = NULL;
  fc_target_free(c->gpu_target);
  c->gpu_target = NULL;
  if (!c->n_variants) fc_target_free(c->target);
  for (int i = 0; i < c->n_variants; i++) fc_target_free(c->variants[i]);
  c->target = NULL;
  c->n_variants = 0;
  c->quant_opt.int8_target = NULL;
}

/* Appends to a NULL-terminated malloc'd array of strings. */
static void push_arg(char ***v, int *n, const char *a) {
  char **nv = realloc(*v, (size_t)(*n + 2) * sizeof *nv);
  if (!nv) fc_die(__FILE__, __LINE__, "out of memory");
  nv[(*n)++] = (char *)a;
  nv[*n] = NULL;
  *v = nv;
}

static int usage_error(Cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int usage_error(Cli *c, const char *fmt, ...) {
  fflush(stdout);
  va_list ap;
  va_start(ap, fmt);
  fputs("flowc: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  cli_free(c);
  return EXIT_USAGE;
}

/* Writes s with control characters as '?': a file name must not split the one-line message. */
static void put_line_safe(const char *s, FILE *f) {
  for (; *s; s++) fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
}

/* Prints the diagnostic for `file`. Messages that already start with "<file>:" (parser positions,
 * "<file>:<line>:<col>: ...") are not prefixed twice. */
static void report(const char *file, const FcDiag *d) {
  fflush(stdout);
  const char *msg = d->msg[0] ? d->msg : fc_status_name(d->status);
  size_t n = strlen(file);
  fputs("flowc: error: ", stderr);
  if (strncmp(msg, file, n) != 0 || msg[n] != ':') {
    put_line_safe(file, stderr);
    fputs(": ", stderr);
  }
  put_line_safe(msg, stderr);
  fputc('\n', stderr);
}

/* ---- help ----------------------------------------------------------------------------------------- */

static void print_main_help(void) {
  puts("usage: flowc <command> MODEL [options]\n"
       "       flowc --help | --version\n"
       "\n"
       "flowc compiles neural-network models ahead of time.\n"
       "\n"
       "commands:\n"
       "  build MODEL   compile a model to a program, object or library (or write its IR or a graph)\n"
       "  info MODEL    summarise a model: inputs, outputs, op histogram, parameters, FLOPs\n"
       "  run MODEL     compile a model in memory and run it on input files\n"
       "  check DIR...  compile and run ONNX backend test cases, comparing with their expected outputs\n"
       "\n"
       "Run 'flowc <command> --help' for the options of a command.\n"
       "\n"
       "MODEL is an ONNX protobuf file or an IR text file (such as 'flowc build --emit ir --weights' writes);\n"
       "the format is recognised from the content.\n"
       "\n"
       "exit status: 0 success; 1 the input was rejected ('flowc: error: <file>: <what>' on stderr);\n"
       "2 the command line is wrong ('flowc: error: <what>').");
}

/* Option help that several commands share is written once, here. */
#define LIMITS_HELP                                                                                        \
  "  --max-file-size=N      refuse model and data files above N bytes (suffix K, M or G; default 2G)\n"      \
  "  --max-nesting=N        refuse protobuf messages nested deeper than N (default 64; at most 1000, as\n"   \
  "                         protobuf-c unpacks recursively and deeper models would overflow the stack)\n"  \
  "  --max-rank=N           refuse tensors of rank above N (default 16)\n"
#define OPT_LEVEL_HELP "  -O0, -O1, -O2, -O3     the pass pipeline and LLVM's optimisation level (default -O2)\n"
#define QUANTIZE_HELP                                                                                      \
  "  --quantize MODE        int8-dynamic: matmuls by constant weights (K*N >= 4096)\n"                        \
  "                         run as u8 x i8 integer GEMMs, the weights quantised per output column to int8\n" \
  "                         at compile time (|q| <= 64 unless the CPU has VNNI), the activations per tensor\n" \
  "                         to uint8 at run time, as onnxruntime's quantize_dynamic (the quantize_dynamic\n" \
  "                         pass, after fold_batchnorm in the -O pipeline)\n"                               \
  "                         fp16, bf16: f32 weights (constants of >= 256 elements) stored in 16 bits, about\n" \
  "                         half the artefact, rounded to nearest even (relative error 2^-11 for fp16, 2^-8\n" \
  "                         for bf16) and expanded to f32 once before the first run; computed in f32 (the\n" \
  "                         store_weights_f16 / store_weights_bf16 pass, at the end of the -O pipeline)\n"
#define INT8_HELP                                                                                          \
  "  --quantize int8        static int8 quantisation (build only): convs and matmuls by constant weights run\n" \
  "                         on u8 activations x i8 weights, with ranges calibrated on --calibrate DIR\n"      \
  "  --calibrate DIR        the samples to calibrate on: one sub-folder per sample holding one file per model\n" \
  "                         input (<input>.npy, <input>.pb or input_<i>.pb, as ONNX's test_data_set_<k>\n"    \
  "                         folders), or one <input>.npy per input with the samples stacked along dim 0\n"    \
  "                         (N x the input's shape, N a multiple of its dim 0)\n"                             \
  "  --calibrate-method M   minmax (default: every calibration value stays representable; the most accurate\n" \
  "                         on the Fashion-MNIST example, README), percentile or entropy (TensorRT's KL)\n"  \
  "  --calibrate-percentile P  the share of values the range keeps, in percent (default 99.99; implies\n"     \
  "                         --calibrate-method percentile)\n"                                                 \
  "  --quantize-per-tensor  one weight scale per tensor (default: one per output channel)\n"                  \
  "  --quantize-activations asym|sym  u8 with a zero point (default) or i8 with zero point 0\n"               \
  "  --quantize-reduce-range weights|activations  what gives up a bit on CPUs without VNNI, whose u8 x i8\n"  \
  "                         dot (vpmaddubsw) saturates at full range (default: weights, to [-64, 64])\n"      \
  "  --quantize-skip N,...  keep these ONNX nodes (by name) in float\n"                                       \
  "  --quantize-report      print per quantised activation and model output the range, the scale and the\n" \
  "                         SNR and largest error of the int8 model against the float one on DIR\n"
#define QUIET_HELP                                                                                         \
  "  --quiet                no progress line: a compile that runs past 2 s otherwise shows its phase\n"  \
  "                         (passes, codegen kernel i of N, LLVM, object, link) on stderr when that is\n" \
  "                         a terminal\n"
/* run and check compile for this process, so their CPU defaults to the host's (build's to x86-64-v3). */
#define JIT_CPU_HELP "  --cpu NAME             the CPU to generate code for (default: native, this machine's)\n" \
                     "  --device simt          run the GPU kernels (as --device cuda builds them) on the SIMT\n" \
                     "                         host emulator instead of the CPU code (tests GPU kernels here)\n" \
                     "  --precision P          with --device simt: the GPU matmul/conv precision, as for build\n"

static const char input_help[] =
    "  --bind NAME=FILE       make graph input NAME the constant in FILE (.npy or ONNX TensorProto .pb);\n"
    "                         repeatable\n"
    "  --shape NAME=DIMS      fix the symbolic dims of graph input NAME, e.g. --shape image=64x1x28x28\n"
    "                         (DIMS may be empty for a scalar); repeatable\n" LIMITS_HELP;

static void print_build_help(void) {
  puts("usage: flowc build MODEL [options]\n"
       "\n"
       "Imports MODEL, runs the verifier, runs the pass pipeline (-O2 unless told otherwise) and writes the\n"
       "result. IR dumps of --print-before/--print-after go to stderr.\n"
       "\n"
       "output:\n"
       "  --emit KIND            exe (default): a standalone program with the weights inside, linked with\n"
       "                         libflowrt (needs only libc, libm and libpthread; run it with --help);\n"
       "                         obj: an object file and a C header FILE.h (FILE without .o) beside it;\n"
       "                         lib: a static library (model + libflowrt) and a C header NAME.h beside it\n"
       "                         (-o libNAME.a); so: a shared library with the same functions and header\n"
       "                         (-o libNAME.so; position-independent, needs only libc, libm and libpthread)\n"
       "                         for dlopen or Python's ctypes (see examples/python_ctypes.py); ir: the IR\n"
       "                         as MLIR generic-operation text; dot: a Graphviz graph; onnx: the model after\n"
       "                         the passes as ONNX (opset 17, or 18/19 where an op needs it), quantised\n"
       "                         conv/matmul as QDQ node groups; the -O pipeline runs without fuse_epilogue,\n"
       "                         layout, fuse_elementwise and fuse_casts (their ops have no ONNX form) and lower_quant\n"
       "                         (ONNX has QuantizeLinear/DequantizeLinear). obj, lib and so name their\n"
       "                         symbols NAME_run, NAME_workspace_size and NAME_model after the file name\n"
       "  -o FILE                write to FILE (exe, obj, lib, so and onnx need it; ir and dot default to\n"
       "                         standard output)\n"
       "  --device cuda          add the GPU half: every op as a PTX kernel for NVIDIA GPUs, embedded beside the\n"
       "                         CPU code (exe, lib, so); the program runs on the GPU when a driver and GPU are\n"
       "                         found, on its CPU code otherwise. Ops without a GPU kernel are listed\n"
       "  --gpu sm_XX            the GPU generation the PTX is for (default sm_80; sm_90); ptxas checks it\n"
       "                         when the CUDA toolkit is installed\n"
       "  --precision P          with --device cuda: the inputs of GPU matmuls and convs rounded to P and\n"
       "                         multiplied with f32 accumulation: fp32 (default; SIMT f32 arithmetic), tf32,\n"
       "                         fp16 or bf16 (tensor cores, mma.sync)\n"
       "  --emit ptx             with --device cuda: the GPU kernels as PTX text\n"
       "  --target TRIPLE        generate code for TRIPLE (default: this machine's, e.g. x86_64-linux-gnu)\n"
       "  --cpu NAME             the CPU to tune for and whose instructions to use: native (this machine's)\n"
       "                         or an LLVM CPU name; the passes use it too (with AVX-512 the layout blocks\n"
       "                         16 channels). Default: x86-64-v3 for ir and dot on x86-64, generic elsewhere\n"
       "  --cpu A,B,...          x86-64 exe, obj, lib and so: compile the whole model once per CPU into one\n"
       "                         artefact that runs the best variant this machine supports (the default for\n"
       "                         x86-64 artefacts is x86-64-v3,x86-64-v4: AVX2, and AVX-512 where the machine\n"
       "                         has it; FLOWRT_CPU_VARIANT=NAME forces one at run time)\n"
       "  --weights              write every constant's data, so the IR text is a complete model\n"
       "\n"
       "passes:\n"
       OPT_LEVEL_HELP
       QUANTIZE_HELP
       INT8_HELP
       "  --passes=a,b,c         run exactly these passes, in this order, instead of a pipeline\n"
       "  --ranks N              an SBP program for N processes (run it with mpirun -np N): each rank holds\n"
       "                         its part of every tensor and collectives move data where ops need it; rank\n"
       "                         0 writes whole outputs (the sbp_data or sbp_tensor pass runs after the\n"
       "                         first clean-up round of -O2, before any fusion)\n"
       "  --mesh AxB...          the ranks as a mesh (product N; default a 1-D mesh of N)\n"
       "  --rank-specialise=auto|on|off\n"
       "                         compile one program per rank where the plan splits a constant weight, its\n"
       "                         chunk then a compile-time constant (packed once, not copied per run): auto\n"
       "                         (default) up to 8 ranks, on for any number, off never\n"
       "  --sbp data|tensor|auto|pipeline|A,B|FILE\n"
       "                         data (default): inputs split along dim 0 (batch), weights whole; tensor:\n"
       "                         matmul/conv weights split (Megatron: columns, then rows and one all-reduce);\n"
       "                         auto: the cost model's plan; pipeline: rank s runs stage s of N consecutive\n"
       "                         ranges of layers (balanced by the cost model), send/recv between them, one\n"
       "                         program per rank; A,B: one of data/tensor per mesh axis, such as --mesh 2x2\n"
       "                         --sbp data,tensor; FILE: 'name: S(0)' lines (README)\n"
       "                         (--mesh SxT --sbp pipeline,data|tensor: S stages, each split over T ranks)\n"
       "  --stages A,B,...       with --sbp pipeline: the nodes that begin stages 1, 2, ... (the user's cut;\n"
       "                         default: the cost model's)\n"
       "  --micro-batches auto|M with --sbp pipeline: the batch cut into M micro-batches so that the stages\n"
       "                         overlap (auto, the default: as many as stages where the batch divides, else 1)\n"
       "  --print-before=NAME    dump the IR before each run of pass NAME ('all': before every pass)\n"
       "  --print-after=NAME     dump the IR after each run of pass NAME ('all': after every pass)\n"
       "  --verify-each          run the verifier after every pass\n"
       QUIET_HELP
       "\n"
       "input:");
  fputs(input_help, stdout);
  puts("  --split-input-file     IR text only: treat each part between '// -----' lines as its own model;\n"
       "                         the outputs are joined with '// -----' lines\n"
       "\n"
       "registered passes:");
  int width = 0;
  for (int i = 0; i < fc_pass_count(); i++) {
    int w = (int)strlen(fc_pass_at(i)->name);
    if (w > width) width = w;
  }
  for (int i = 0; i < fc_pass_count(); i++)
    printf("  %-*s  %s\n", width, fc_pass_at(i)->name, fc_pass_at(i)->help);
  puts("\npipelines:");
  for (int l = 0; l <= 3; l++) {
    const char *p = fc_pipeline_for_level(l);
    printf("  -O%d  %s\n", l, p && *p ? p : "(no passes)");
  }
  puts("\nexit status: 0 success; 1 the input was rejected; 2 the command line is wrong.");
}

static void print_run_help(void) {
  puts("usage: flowc run MODEL [FILE ...] [--input NAME=FILE ...] [options]\n"
       "\n"
       "Compiles MODEL in memory (the pass pipeline, code generation for this CPU, LLVM's optimiser and a\n"
       "JIT) and runs it as the executable 'flowc build' would make:\n"
       "\n"
       "run (the options of frt_main, which a built program takes too; an input's symbolic dims take the\n"
       "shape of its file, so no --shape is needed):");
  fputs(frt_run_options_help, stdout);
  puts("\n"
       "compile:\n"
       OPT_LEVEL_HELP
       QUANTIZE_HELP
       JIT_CPU_HELP
       QUIET_HELP
       "\n"
       "input:");
  fputs(input_help, stdout);
  puts("\nexit status: 0 success; 1 the model or an input was rejected; 2 the command line is wrong.");
}

static void print_check_help(void) {
  puts("usage: flowc check DIR ... [options]\n"
       "\n"
       "Each DIR is an ONNX backend test case (model.onnx and test_data_set_<k>/ folders of input_<i>.pb and\n"
       "output_<i>.pb), or a folder of such cases. Inputs that the model needs at compile time (shapes, axes,\n"
       "counts) are bound from the data set; the others stay inputs, so generated kernels compute every\n"
       "output. Each data set runs and its outputs are compared: dtypes and shapes exactly, integers and\n"
       "bools exactly, floats within rtol 1e-3 and atol 1e-7 (NaN equals NaN).\n"
       "\n"
       "One line per case: 'PASS name', 'FAIL name: <worst element and its error>', 'UNSUPPORTED name: <op\n"
       "or reason>', or 'CONSTANT name' (it passed, but every output was computed at compile time, so no\n"
       "kernel ran; counted apart). The last line is 'N passed, N failed, N skipped'.\n"
       "\n"
       "options:\n"
       OPT_LEVEL_HELP
       JIT_CPU_HELP
       "  --threads N            threads each model runs on (default 1; 0: one per online core)\n"
       "  -j N, --jobs N         check N cases at once, each in its own process (default 1)\n"
       "  --timeout N            fail a case that runs longer than N seconds (default 600; 0: no limit)\n"
       LIMITS_HELP
       "\n"
       "exit status: 0 no case failed; 1 a case failed or a DIR could not be read; 2 the command line is wrong.");
}

static void print_info_help(void) {
  puts("usage: flowc info MODEL [options]\n"
       "\n"
       "Imports and verifies MODEL (no passes run) and prints one block: graph inputs and outputs with\n"
       "their types, the ops by kind, the parameters (elements and bytes of all constants) and the FLOPs\n"
       "(2 per multiply-accumulate of conv, conv_transpose and matmul).\n"
       "\n"
       "distribution:\n"
       "  --ranks N [--mesh AxB] [--sbp data|tensor|auto|pipeline|FILE]\n"
       "                         as for flowc build: the sbp rows predict each strategy's time, FLOPs, bytes\n"
       "                         moved and memory per rank, list the collectives and the ops left on whole\n"
       "                         tensors; the workspace is per rank\n"
       "\n"
       "input:");
  fputs(input_help, stdout);
  puts("\nexit status: 0 success; 1 the input was rejected; 2 the command line is wrong.");
}

/* ---- option parsing -------------------------------------------------------------------------------- */

/* Whether --sbp is a list of per-axis strategies ("data,tensor": one of data, tensor per mesh axis; the first
 * may be pipeline: the stages on mesh axis 0). */
static bool sbp_is_axes(const char *sbp) {
  if (!strchr(sbp, ',')) return false;
  for (const char *c = sbp;;) {
    size_t len = strcspn(c, ",");
    if (!((len == 4 && strncmp(c, "data", 4) == 0) || (len == 6 && strncmp(c, "tensor", 6) == 0) ||
          (c == sbp && len == 8 && strncmp(c, "pipeline", 8) == 0)))
      return false;
    if (!c[len]) return true;
    c += len + 1;
  }
}

/* The sbp pass of --sbp X: sbp_auto, sbp_data, sbp_tensor, sbp_axes for a per-axis list, or sbp_file for an
 * assignment file (set_mesh); "pipeline" for --sbp pipeline (place_stages and split_stages, no sbp pass). */
static const char *sbp_pass_mode(const char *sbp) {
  if (sbp_is_axes(sbp)) return "axes";
  return strcmp(sbp, "auto") == 0 || strcmp(sbp, "data") == 0 || strcmp(sbp, "tensor") == 0 || strcmp(sbp, "pipeline") == 0
             ? sbp
             : "file";
}

/* --sbp pipeline, or pipeline,X on a mesh: stages on mesh axis 0 (and X within each stage). */
static bool is_pipeline(const Cli *c) {
  return c->sbp && (strcmp(c->sbp, "pipeline") == 0 || (strncmp(c->sbp, "pipeline,", 9) == 0 && sbp_is_axes(c->sbp)));
}

/* --ranks, --mesh, --sbp: checked against each other, and the sbp pass put early in the pipeline (every
 * later pass then works on the local graph). Returns -1 to go on or the usage error's exit status. */
static int check_sbp_options(Cli *c) {
  if (!c->ranks) {
    if (c->n_mesh || c->sbp || c->rank_specialise_given)
      return usage_error(c, "%s needs --ranks N", c->n_mesh ? "--mesh" : c->sbp ? "--sbp" : "--rank-specialise");
    return -1;
  }
  if (!c->n_mesh) c->mesh[c->n_mesh++] = c->ranks;
  int64_t prod = 1;
  for (int i = 0; i < c->n_mesh; i++)
    if (!fc_checked_mul(prod, c->mesh[i], &prod) || prod > INT32_MAX) prod = -1;
  if (prod != c->ranks)
    return usage_error(c, "--mesh has %lld ranks in all, but --ranks is %lld", (long long)prod, (long long)c->ranks);
  if (!c->sbp) c->sbp = "data";
  if (sbp_is_axes(c->sbp)) {
    int n = 1;
    for (const char *q = c->sbp; *q; q++) n += *q == ',';
    if (n != c->n_mesh)
      return usage_error(c, "--sbp %s names %d strategies, one per mesh axis, but --mesh has %d axes", c->sbp, n, c->n_mesh);
  }
  if (c->int8_static) return usage_error(c, "--ranks with --quantize int8 is not supported (calibration runs one process)");
  if (c->micro_batches_given && !is_pipeline(c)) return usage_error(c, "--micro-batches needs --sbp pipeline");
  if (c->stage_starts && !is_pipeline(c)) return usage_error(c, "--stages needs --sbp pipeline");
  if (strchr(c->sbp, ',') && strstr(c->sbp, "pipeline") && !is_pipeline(c))
    return usage_error(c, "--sbp %s: pipeline can only be the first strategy (the stages are on mesh axis 0)", c->sbp);
  if (is_pipeline(c)) {
    if (c->n_mesh > 1 && !strchr(c->sbp, ','))
      return usage_error(c, "--sbp pipeline on a mesh of %d axes: name a strategy for each axis after it, such as "
                         "--mesh 2x2 --sbp pipeline,data", c->n_mesh);
    if (c->rank_specialise == RANK_SPECIALISE_OFF)
      return usage_error(c, "--sbp pipeline compiles one program per rank (each its own stage): it cannot be "
                         "--rank-specialise=off");
    if (c->device && strcmp(c->device, "cuda") == 0)
      return usage_error(c, "--sbp pipeline with --device cuda is not supported yet (the GPU half is one program for every rank)");
    /* int8-dynamic takes each activation's range per run over the whole tensor: per micro-batch it would take
     * another range, and the outputs would differ from the one-process program's. auto keeps one; a given
     * count is the user's choice (README). */
    if (!c->micro_batches_given && c->quantize && strcmp(c->quantize->name, "int8-dynamic") == 0) c->micro_batches = 1;
  }
  if (strcmp(c->emit, "onnx") == 0) return usage_error(c, "--ranks with --emit onnx: ONNX has no collective ops");
  if (c->split) return usage_error(c, "--ranks does not apply to --split-input-file");
  /* After the first clean-up round of -O2/-O3 (a Gemm's transposed weight is a constant by then, which
   * tensor parallelism splits), before any fusion (the rules know plain ops, not epilogues); first in a
   * list that does not start with that round. */
  const char *list = c->passes ? c->passes : fc_pipeline_for_level(c->opt_level);
  static const char round[] = "shapes,canonicalize,fold,cse,";
  size_t cut = strncmp(list, round, strlen(round)) == 0 ? strlen(round) : 0;
  /* fold_rank right after: in a rank's own program (flow.rank) the slices of constants become constants. */
  /* split_sliced_matmul right before: a fused q/k/v projection becomes three matmuls the plan splits by heads. */
  /* --sbp pipeline: the stages placed on the whole graph, then its micro-batches (the copies keep their
   * placement), and each rank's own program cut out right away, before any fusion. */
  /* pipeline,X: the plan of the other axes within each stage (sbp_axes) before the ranks' programs are cut. */
  bool axes = strchr(c->sbp, ',') != NULL;
  int n = is_pipeline(c) ? snprintf(c->sbp_prefix, sizeof c->sbp_prefix, "%.*splace_stages,microbatch%s", (int)cut, list,
                                    axes ? ",split_sliced_matmul,sbp_axes" : "")
                         : snprintf(c->sbp_prefix, sizeof c->sbp_prefix, "%.*ssplit_sliced_matmul,sbp_%s", (int)cut,
                                    list, sbp_pass_mode(c->sbp));
  if (n >= 0 && (size_t)n < sizeof c->sbp_prefix)
    n = snprintf(c->sbp_passes, sizeof c->sbp_passes, "%s,%s%s%s", c->sbp_prefix,
                 is_pipeline(c) ? (axes ? "split_stages,fold_rank" : "split_stages") : "fold_rank", list[cut] ? "," : "",
                 list + cut);
  if (n < 0 || (size_t)n >= sizeof c->sbp_passes) return usage_error(c, "--passes list too long for --ranks");
  c->passes = c->sbp_passes;
  return -1;
}

/* The artefact an --emit kind asks for (cg_emit.h), or -1 for ir, dot and onnx. */
static int emit_kind(const char *e) {
  if (strcmp(e, "exe") == 0) return FC_EMIT_EXE;
  if (strcmp(e, "obj") == 0) return FC_EMIT_OBJ;
  if (strcmp(e, "lib") == 0) return FC_EMIT_LIB;
  if (strcmp(e, "so") == 0) return FC_EMIT_SO;
  return -1;
}

/* One target per CPU of the comma-separated list, ordered best first (c->target: the best). */
static FcStatus resolve_variants(Cli *c, const char *cpus, FcDiag *d) {
  FcCodegenOptions co = {.triple = c->aot_triple, .opt_level = c->opt_level};
  for (int i = 0; i < c->n_variants; i++) fc_target_free(c->variants[i]);
  c->n_variants = 0;
  c->quant_opt.int8_target = NULL;
  for (const char *p = cpus;; p += strcspn(p, ",") + 1) {
    size_t n = strcspn(p, ",");
    char cpu[128];
    if (n == 0 || n >= sizeof cpu) return fc_error(d, FC_ERR_INPUT, "--cpu %s: an empty or overlong CPU name in the list", cpus);
    if (c->n_variants == FC_CLI_MAX_CPUS) return fc_error(d, FC_ERR_INPUT, "--cpu lists more than %d CPUs", FC_CLI_MAX_CPUS);
    memcpy(cpu, p, n);
    cpu[n] = '\0';
    co.cpu = cpu;
    if (fc_target_resolve(&co, &c->variants[c->n_variants], d) != FC_OK) return d->status;
    c->n_variants++;
    if (!p[n]) break;
  }
  if (fc_emit_order_variants(c->variants, c->n_variants, d) != FC_OK) return d->status;
  c->target = c->variants[0];
  c->quant_opt.int8_target = c->variants[c->n_variants - 1]; /* quantised alike for every variant */
  return FC_OK;
}

/* Whether a model computes on quantised integers: quantize/dequantize ops (QDQ and QOperator models) or
 * 8-bit integer matmuls (MatMulInteger), in any graph. */
static bool module_is_quantised(FcModule *m) {
  int n = fc_module_graphs(m, NULL, 0);
  FcGraph **gs = FC_NEW_ARRAY(&m->arena, FcGraph *, (size_t)(n ? n : 1));
  fc_module_graphs(m, gs, n);
  for (int i = 0; i < n; i++) fc_graph_for_each_op(gs[i], op) {
      if (op->kind == FC_OP_QUANTIZE || op->kind == FC_OP_DEQUANTIZE) return true;
      if (op->kind == FC_OP_MATMUL && fc_matmul_is_int8(op->operands[0].value->type.dtype, op->operands[1].value->type.dtype))
        return true;
    }
  return false;
}

/* --device cuda [--gpu sm_XX] and --emit ptx: the GPU's description resolved, combinations that are not
 * written yet refused; returns -1 to go on or the usage error's exit status. */
static int check_gpu_options(Cli *c, int kind) {
  bool cuda = c->device && strcmp(c->device, "cuda") == 0;
  if (!cuda) {
    if (c->gpu_arch) return usage_error(c, "--gpu needs --device cuda");
    if (c->precision) return usage_error(c, "--precision needs --device cuda");
    if (strcmp(c->emit, "ptx") == 0) return usage_error(c, "--emit ptx needs --device cuda");
    return -1;
  }
  if (strcmp(c->emit, "onnx") == 0) return usage_error(c, "--emit onnx does not apply to --device cuda");
  if (c->split && strcmp(c->emit, "ptx") == 0) return usage_error(c, "--split-input-file applies to --emit ir and dot only");
  if (kind == FC_EMIT_OBJ) return usage_error(c, "--device cuda needs --emit exe, lib or so (the GPU half is a second object)");
  FcDiag d;
  fc_diag_init(&d);
  FcCodegenOptions go = {.triple = "nvptx64-nvidia-cuda", .cpu = c->gpu_arch, .opt_level = c->opt_level};
  if (fc_target_resolve(&go, &c->gpu_target, &d) != FC_OK) return usage_error(c, "--gpu: %s", d.msg);
  c->gpu_target->gpu.precision = c->gpu_precision;
  return -1;
}

/* Checks the build options of an artefact (-o, --target, --cpu, the symbol prefix) before any model is
 * read; returns -1 to go on or the usage error's exit status. */
static int check_artefact_options(Cli *c) {
  FcDiag d;
  fc_diag_init(&d);
  /* A misspelt triple or CPU is a command-line mistake: find it before the model is read. The passes
   * ask the target too (the layout's block), so --target and --cpu apply to --emit ir and dot as well. */
  FcCodegenOptions co = {.triple = c->aot_triple, .cpu = c->aot_cpu, .opt_level = c->opt_level};
  int kind = emit_kind(c->emit);
  /* Without --cpu an artefact gets the target's default list (x86-64: AVX2 and AVX-512 variants); the IR and
   * dot dumps show the single default CPU's pipeline. */
  const char *cpus = c->aot_cpu;
  if (!cpus && kind >= 0) cpus = fc_target_default_artefact_cpus(c->aot_triple);
  if (cpus && strchr(cpus, ',')) {
    if (kind < 0) return usage_error(c, "--cpu lists several CPUs, which needs --emit exe, obj, lib or so");
    c->default_variants = !c->aot_cpu;
    if (resolve_variants(c, cpus, &d) != FC_OK) return usage_error(c, "%s", d.msg);
  } else if (fc_target_resolve(&co, &c->target, &d) != FC_OK) {
    return usage_error(c, "%s", d.msg);
  }
  int rg = check_gpu_options(c, kind);
  if (rg >= 0 || kind < 0) return rg;
  if (!c->output || strcmp(c->output, "-") == 0)
    return usage_error(c, "--emit %s writes a file: give -o FILE", c->emit);
  if (c->split) return usage_error(c, "--split-input-file applies to --emit ir and dot only");
  if (c->weights) return usage_error(c, "--weights applies to --emit ir only");
  if (kind != FC_EMIT_EXE && !fc_emit_model_name(c->output, (FcEmitKind)kind, c->aot_name, sizeof c->aot_name, &d))
    return usage_error(c, "-o %s: %s", c->output, d.msg);
  snprintf(c->gpu_symbol, sizeof c->gpu_symbol, "%s_gpu", kind != FC_EMIT_EXE ? c->aot_name : "flowc");
  return -1;
}

/* Matches `--name=VALUE` or `--name VALUE` (and `-o FILE`, `-oFILE` for the one-letter form). Returns
 * 0 if argv[*i] is not this option, 1 with *val set, -1 if the value is missing. */
static int take_value(int argc, char **argv, int *i, const char *name, const char **val) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return 0;
  if (a[n] == '=' && name[1] == '-') {
    *val = a + n + 1;
    return 1;
  }
  if (a[n] != '\0') {
    if (name[1] != '-') { /* -oFILE */
      *val = a + n;
      return 1;
    }
    return 0;
  }
  if (*i + 1 >= argc) return -1;
  *val = argv[++*i];
  return 1;
}

/* A non-negative decimal integer, optionally with a K/M/G (binary) suffix when `suffixes`. */
static bool parse_count(const char *s, bool suffixes, int64_t max, int64_t *out) {
  if (!*s) return false;
  int64_t v = 0;
  const char *p = s;
  for (; *p >= '0' && *p <= '9'; p++)
    if (!fc_checked_mul(v, 10, &v) || !fc_checked_add(v, *p - '0', &v)) return false;
  if (p == s) return false;
  if (suffixes && *p) {
    int shift = *p == 'K' || *p == 'k' ? 10 : *p == 'M' || *p == 'm' ? 20 : *p == 'G' || *p == 'g' ? 30 : -1;
    if (shift < 0 || !fc_checked_mul(v, (int64_t)1 << shift, &v)) return false;
    p++;
  }
  if (*p || v > max) return false;
  *out = v;
  return true;
}

static bool is_pass_or_all(const char *name) { return strcmp(name, "all") == 0 || fc_pass_lookup(name); }

/* The runtime's options, passed through by `flowc run` to frt_main, which checks their values: --print,
 * --profile and those taking a value (`--name VALUE` or `--name=VALUE`). Returns true if argv[*i] is one. */
static bool is_runtime_option(int argc, char **argv, int *i, Cli *c) {
  static const char *const with_value[] = {"--input", "--output-dir", "--output-format", "--threads", "--bench"};
  const char *a = argv[*i];
  if (strcmp(a, "--print") == 0 || strcmp(a, "--profile") == 0) {
    push_arg(&c->rt_argv, &c->rt_argc, a);
    return true;
  }
  for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++) {
    size_t n = strlen(with_value[k]);
    if (strncmp(a, with_value[k], n) != 0 || (a[n] != '\0' && a[n] != '=')) continue;
    push_arg(&c->rt_argv, &c->rt_argc, a);
    if (a[n] == '\0' && *i + 1 < argc) push_arg(&c->rt_argv, &c->rt_argc, argv[++*i]);
    return true;
  }
  return false;
}

/* The -O pipeline with the --quantize mode's pass in it: after `after` (the end where the level lacks it or
 * `after` is NULL). */
static void quantized_pipeline(Cli *c) {
  const char *p = fc_pipeline_for_level(c->opt_level), *pass = c->quantize->pass, *after = c->quantize->after;
  const char *at = after ? strstr(p, after) : NULL;
  int n;
  if (at)
    n = snprintf(c->quant_passes, sizeof c->quant_passes, "%.*s%s,%s", (int)(at - p + strlen(after)), p, pass,
                 at + strlen(after));
  else
    n = snprintf(c->quant_passes, sizeof c->quant_passes, "%s%s%s", p, *p ? "," : "", pass);
  FC_ASSERT(n > 0 && (size_t)n < sizeof c->quant_passes);
  c->passes = c->quant_passes;
}

/* --quantize int8: the -O pipeline cut after fold_batchnorm (so batch norms are in the weights that get
 * quantised): the prefix runs, then calibration, then quantize_static and the rest. A level without
 * fold_batchnorm calibrates before any pass. */
static void calibrated_pipeline(Cli *c) {
  static const char after[] = "fold_batchnorm";
  const char *p = fc_pipeline_for_level(c->opt_level), *at = strstr(p, after);
  size_t cut = at ? (size_t)(at - p) + strlen(after) : 0;
  const char *rest = p + cut + (p[cut] == ',');
  int n1 = snprintf(c->calib_prefix, sizeof c->calib_prefix, "%.*s", (int)cut, p);
  int n2 = snprintf(c->calib_rest, sizeof c->calib_rest, "%s", rest);
  int n3 = snprintf(c->calib_quant, sizeof c->calib_quant, "quantize_static%s%s", *rest ? "," : "", rest);
  FC_ASSERT(n1 >= 0 && (size_t)n1 < sizeof c->calib_prefix && n2 >= 0 && (size_t)n2 < sizeof c->calib_rest && n3 > 0 &&
            (size_t)n3 < sizeof c->calib_quant);
  c->quant_opt.skip = (const char *const *)c->skip;
  c->quant_opt.n_skip = c->n_skip;
  c->calib_opt.quant = &c->quant_opt;
  c->calib_opt.opt_level = c->opt_level;
  c->calib_opt.rest_passes = c->calib_rest;
  c->calib_opt.quant_passes = c->calib_quant;
  c->calib_opt.max_file_bytes = c->imp.limits.max_file_bytes;
}

/* --emit onnx writes a binary file (-o), one module, and runs the -O pipeline (with --quantize's pass) without
 * the passes whose ops ONNX lacks; an explicit --passes list runs as given. Returns -1 to go on. */
static int check_onnx_options(Cli *c, bool explicit_passes) {
  if (!c->output || strcmp(c->output, "-") == 0) return usage_error(c, "--emit onnx writes a file: give -o FILE");
  if (c->split) return usage_error(c, "--split-input-file applies to --emit ir and dot only");
  if (c->weights) return usage_error(c, "--weights applies to --emit ir only");
  if (explicit_passes) return -1;
  if (c->int8_static) {
    /* the calibrated pipeline's two halves after calibration, filtered the same way */
    char tmp[1024];
    FC_ASSERT(fc_onnx_export_passes(c->calib_rest, tmp, sizeof tmp));
    snprintf(c->calib_rest, sizeof c->calib_rest, "%s", tmp);
    FC_ASSERT(fc_onnx_export_passes(c->calib_quant, tmp, sizeof tmp));
    snprintf(c->calib_quant, sizeof c->calib_quant, "%s", tmp);
    return -1;
  }
  const char *list = c->passes ? c->passes : fc_pipeline_for_level(c->opt_level);
  FC_ASSERT(fc_onnx_export_passes(list, c->onnx_passes, sizeof c->onnx_passes));
  c->passes = c->onnx_passes;
  return -1;
}

/* Parses argv[2..]; returns -1 to go on, or an exit status (help printed, or a usage error). */
static int parse_args(Cli *c, int argc, char **argv) {
  bool build = c->kind == CMD_BUILD, run = c->kind == CMD_RUN, check = c->kind == CMD_CHECK, info = c->kind == CMD_INFO;
  bool options_done = false;
  if (run) push_arg(&c->rt_argv, &c->rt_argc, "flowc");
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r;
    if (options_done || a[0] != '-' || strcmp(a, "-") == 0) {
      if (check) {
        c->dirs = realloc(c->dirs, (size_t)(c->n_dirs + 1) * sizeof *c->dirs);
        if (!c->dirs) fc_die(__FILE__, __LINE__, "out of memory");
        c->dirs[c->n_dirs++] = a;
        continue;
      }
      if (run && c->model) {
        push_arg(&c->rt_argv, &c->rt_argc, a); /* an input FILE for the runtime */
        continue;
      }
      if (c->model) return usage_error(c, "more than one model given ('%s' and '%s')", c->model, a);
      c->model = a;
      continue;
    }
    if (strcmp(a, "--") == 0) {
      options_done = true;
      if (run) push_arg(&c->rt_argv, &c->rt_argc, a);
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      if (build) print_build_help();
      else if (run) print_run_help();
      else if (check) print_check_help();
      else print_info_help();
      cli_free(c);
      return 0;
    } else if (check && (strncmp(a, "--bind", 6) == 0 || strncmp(a, "--shape", 7) == 0)) {
      return usage_error(c, "'flowc check' binds inputs from each test's data set itself; %s is not an option of check",
                         strncmp(a, "--bind", 6) == 0 ? "--bind" : "--shape");
    } else if ((r = take_value(argc, argv, &i, "--bind", &v)) != 0) {
      if (r < 0) return usage_error(c, "--bind needs NAME=FILE");
      const char *eq = strchr(v, '=');
      if (!eq || eq == v || !eq[1]) return usage_error(c, "--bind needs NAME=FILE, got '%s'", v);
      for (int k = 0; k < c->n_binds; k++)
        if (strlen(c->binds[k].name) == (size_t)(eq - v) && strncmp(c->binds[k].name, v, (size_t)(eq - v)) == 0)
          return usage_error(c, "input '%s' is bound twice", c->binds[k].name);
      FcBinding *nb = realloc(c->binds, (size_t)(c->n_binds + 1) * sizeof *nb);
      char *name = strndup(v, (size_t)(eq - v));
      if (!nb || !name) fc_die(__FILE__, __LINE__, "out of memory");
      c->binds = nb;
      c->binds[c->n_binds++] = (FcBinding){name, eq + 1};
    } else if ((r = take_value(argc, argv, &i, "--shape", &v)) != 0) {
      if (r < 0) return usage_error(c, "--shape needs NAME=DIMS");
      const char *eq = strchr(v, '=');
      if (!eq || eq == v) return usage_error(c, "--shape needs NAME=DIMS (such as image=1x3x224x224), got '%s'", v);
      for (int k = 0; k < c->n_shapes; k++)
        if (strlen(c->shapes[k].name) == (size_t)(eq - v) && strncmp(c->shapes[k].name, v, (size_t)(eq - v)) == 0)
          return usage_error(c, "input '%s' is given two shapes", c->shapes[k].name);
      int64_t dims[64];
      int rank = 0;
      for (const char *p = eq + 1; *p;) {
        char *end;
        errno = 0;
        long long d = strtoll(p, &end, 10);
        if (end == p || errno || d < 0 || rank == 64 || (*end && *end != 'x'))
          return usage_error(c, "--shape %s: bad dimensions '%s' (want sizes joined by 'x', such as 1x3x224x224)",
                             v, eq + 1);
        dims[rank++] = d;
        p = *end ? end + 1 : end;
        if (*end && !*p) return usage_error(c, "--shape %s: trailing 'x'", v);
      }
      FcInputShape *ns = realloc(c->shapes, (size_t)(c->n_shapes + 1) * sizeof *ns);
      char *name = strndup(v, (size_t)(eq - v));
      int64_t *d = malloc(rank ? (size_t)rank * sizeof *d : 1);
      if (!ns || !name || !d) fc_die(__FILE__, __LINE__, "out of memory");
      if (rank) memcpy(d, dims, (size_t)rank * sizeof *d);
      c->shapes = ns;
      c->shapes[c->n_shapes++] = (FcInputShape){name, rank, d};
    } else if ((r = take_value(argc, argv, &i, "--max-file-size", &v)) != 0) {
      int64_t n;
      if (r < 0 || !parse_count(v, true, INT64_MAX, &n))
        return usage_error(c, "--max-file-size needs a byte count (such as 4096, 64M or 2G)");
      c->imp.limits.max_file_bytes = n;
    } else if ((r = take_value(argc, argv, &i, "--max-nesting", &v)) != 0) {
      int64_t n;
      if (r < 0 || !parse_count(v, false, FC_MAX_NESTING_CAP, &n) || n < 1)
        return usage_error(c, "--max-nesting needs a count from 1 to %d (protobuf-c unpacks nested messages "
                           "recursively: deeper models would overflow the stack)", FC_MAX_NESTING_CAP);
      c->imp.limits.max_nesting = (int)n;
    } else if ((r = take_value(argc, argv, &i, "--max-rank", &v)) != 0) {
      int64_t n;
      if (r < 0 || !parse_count(v, false, MAX_RANK_FLAG, &n))
        return usage_error(c, "--max-rank needs a rank from 0 to %d", MAX_RANK_FLAG);
      c->imp.limits.max_rank = (int)n;
    } else if ((build || run) && strcmp(a, "--quiet") == 0) {
      c->quiet = true;
    } else if ((build || run) && (r = take_value(argc, argv, &i, "--quantize", &v)) != 0) {
      c->quantize = r < 0 ? NULL : quantize_mode(v);
      if (!c->quantize)
        return usage_error(c, "--quantize %s%s%s(supported: %s)", r < 0 ? "needs a mode " : "'", r < 0 ? "" : v,
                           r < 0 ? "" : "' is not supported ", QUANTIZE_MODES);
      if (c->quantize && run && strcmp(c->quantize->name, "int8") == 0)
        return usage_error(c, "--quantize int8 calibrates at build time: use 'flowc build' (or int8-dynamic)");
      c->int8_static = c->quantize && strcmp(c->quantize->name, "int8") == 0;
    } else if ((run || check) && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && !a[3]) {
      c->opt_level = a[2] - '0';
    } else if ((run || check) && (r = take_value(argc, argv, &i, "--cpu", &v)) != 0) {
      if (r < 0 || !*v) return usage_error(c, "--cpu needs a CPU name (such as native, x86-64-v3 or skylake)");
      c->cpu = v;
    } else if ((build || info) && (r = take_value(argc, argv, &i, "--ranks", &v)) != 0) {
      int64_t n;
      if (r < 0 || !parse_count(v, false, INT32_MAX, &n) || n < 1)
        return usage_error(c, "--ranks needs a number of processes from 1 to %d", INT32_MAX);
      c->ranks = n;
    } else if ((build || info) && (r = take_value(argc, argv, &i, "--mesh", &v)) != 0) {
      c->n_mesh = 0;
      for (const char *p = r < 0 ? "" : v;; p += strcspn(p, "x") + 1) {
        int64_t n;
        char dim[32];
        size_t len = strcspn(p, "x");
        if (len == 0 || len >= sizeof dim || c->n_mesh == 8) return usage_error(c, "--mesh needs up to 8 sizes joined by 'x', such as 2x2");
        memcpy(dim, p, len);
        dim[len] = '\0';
        if (!parse_count(dim, false, INT32_MAX, &n) || n < 1) return usage_error(c, "--mesh %s: '%s' is not a size >= 1", v, dim);
        c->mesh[c->n_mesh++] = n;
        if (!p[len]) break;
      }
    } else if ((build || info) && (r = take_value(argc, argv, &i, "--rank-specialise", &v)) != 0) {
      if (r > 0 && strcmp(v, "auto") == 0) c->rank_specialise = RANK_SPECIALISE_AUTO;
      else if (r > 0 && strcmp(v, "on") == 0) c->rank_specialise = RANK_SPECIALISE_ON;
      else if (r > 0 && strcmp(v, "off") == 0) c->rank_specialise = RANK_SPECIALISE_OFF;
      else return usage_error(c, "--rank-specialise needs auto, on or off");
      c->rank_specialise_given = true;
    } else if ((build || info) && (r = take_value(argc, argv, &i, "--sbp", &v)) != 0) {
      if (r < 0 || !*v) return usage_error(c, "--sbp needs auto, data, tensor, pipeline or an assignment file");
      c->sbp = v;
    } else if ((build || info) && (r = take_value(argc, argv, &i, "--micro-batches", &v)) != 0) {
      int64_t n = 0;
      if (r < 0 || (strcmp(v, "auto") != 0 && (!parse_count(v, false, INT32_MAX, &n) || n < 1)))
        return usage_error(c, "--micro-batches needs auto or a count >= 1");
      c->micro_batches = n;
      c->micro_batches_given = true;
    } else if ((build || info) && (r = take_value(argc, argv, &i, "--stages", &v)) != 0) {
      if (r < 0 || !*v || v[0] == ',' || v[strlen(v) - 1] == ',' || strstr(v, ",,"))
        return usage_error(c, "--stages needs node names joined by ',' (the first node of each stage after the first)");
      c->stage_starts = v;
    } else if ((run || check) && (r = take_value(argc, argv, &i, "--device", &v)) != 0) {
      if (r < 0 || (strcmp(v, "simt") != 0 && strcmp(v, "cpu") != 0))
        return usage_error(c, "--device needs simt (the GPU kernels on the SIMT host emulator) or cpu");
      c->device = v;
    } else if ((run || check) && (strncmp(a, "--ranks", 7) == 0 || strncmp(a, "--mesh", 6) == 0 || strncmp(a, "--sbp", 5) == 0)) {
      return usage_error(c, "flowc %s runs one process: build an SBP program with 'flowc build MODEL --ranks N -o prog' "
                         "and start it with 'mpirun -np N ./prog'", c->cmd);
    } else if (run && is_runtime_option(argc, argv, &i, c)) {
      /* passed through to the runtime */
    } else if (check && ((r = take_value(argc, argv, &i, "--threads", &v)) != 0)) {
      int64_t n;
      if (r < 0 || !parse_count(v, false, 1024, &n)) return usage_error(c, "--threads needs a count from 0 to 1024");
      c->threads = (int)n;
    } else if (check && ((r = take_value(argc, argv, &i, "--jobs", &v)) != 0 || (r = take_value(argc, argv, &i, "-j", &v)) != 0)) {
      int64_t n;
      if (r < 0 || !parse_count(v, false, 256, &n) || n < 1) return usage_error(c, "--jobs needs a count from 1 to 256");
      c->jobs = (int)n;
    } else if (check && ((r = take_value(argc, argv, &i, "--timeout", &v)) != 0)) {
      int64_t n;
      if (r < 0 || !parse_count(v, false, 86400, &n)) return usage_error(c, "--timeout needs seconds from 0 to 86400");
      c->timeout_s = (int)n;
    } else if ((build || run || check) && (r = take_value(argc, argv, &i, "--precision", &v)) != 0) {
      if (r < 0 || !fc_gpu_precision_parse(v, &c->gpu_precision))
        return usage_error(c, "--precision needs fp32, tf32, fp16 or bf16");
      c->precision = v;
    } else if (!build) {
      return usage_error(c, "unknown option '%s' for 'flowc %s' (see 'flowc %s --help')", a, c->cmd, c->cmd);
    } else if ((r = take_value(argc, argv, &i, "--calibrate-method", &v)) != 0) {
      if (!c->static_flag) c->static_flag = "--calibrate-method";
      if (r < 0) return usage_error(c, "--calibrate-method needs minmax, percentile or entropy");
      if (strcmp(v, "minmax") == 0) c->calib_opt.method = FC_CALIB_MINMAX;
      else if (strcmp(v, "percentile") == 0) c->calib_opt.method = FC_CALIB_PERCENTILE;
      else if (strcmp(v, "entropy") == 0) c->calib_opt.method = FC_CALIB_ENTROPY;
      else return usage_error(c, "unknown --calibrate-method '%s' (expected minmax, percentile or entropy)", v);
      c->calib_method = v;
    } else if ((r = take_value(argc, argv, &i, "--calibrate-percentile", &v)) != 0) {
      if (!c->static_flag) c->static_flag = "--calibrate-percentile";
      char *end = NULL;
      double pc = r < 0 ? 0 : strtod(v, &end);
      if (r < 0 || end == v || *end || !(pc > 50 && pc <= 100))
        return usage_error(c, "--calibrate-percentile needs a percentage above 50 and at most 100 (such as 99.99)");
      c->calib_opt.percentile = pc;
      c->percentile_given = true;
    } else if ((r = take_value(argc, argv, &i, "--calibrate", &v)) != 0) {
      if (!c->static_flag) c->static_flag = "--calibrate";
      if (r < 0 || !*v) return usage_error(c, "--calibrate needs a folder of samples");
      c->calib_opt.dir = v;
    } else if (strcmp(a, "--quantize-per-tensor") == 0) {
      if (!c->static_flag) c->static_flag = a;
      c->quant_opt.per_tensor_weights = true;
    } else if (strcmp(a, "--quantize-report") == 0) {
      if (!c->static_flag) c->static_flag = a;
      c->quant_report = true;
    } else if ((r = take_value(argc, argv, &i, "--quantize-activations", &v)) != 0) {
      if (!c->static_flag) c->static_flag = "--quantize-activations";
      if (r < 0 || (strcmp(v, "asym") != 0 && strcmp(v, "sym") != 0))
        return usage_error(c, "--quantize-activations needs asym (u8 with a zero point) or sym (i8)");
      c->quant_opt.activations = strcmp(v, "sym") == 0 ? FC_QACT_SYM_I8 : FC_QACT_ASYM_U8;
    } else if ((r = take_value(argc, argv, &i, "--quantize-reduce-range", &v)) != 0) {
      if (!c->static_flag) c->static_flag = "--quantize-reduce-range";
      if (r < 0 || (strcmp(v, "activations") != 0 && strcmp(v, "weights") != 0))
        return usage_error(c, "--quantize-reduce-range needs weights or activations");
      c->quant_opt.reduce = strcmp(v, "weights") == 0 ? FC_QREDUCE_WEIGHTS : FC_QREDUCE_ACTIVATIONS;
    } else if ((r = take_value(argc, argv, &i, "--quantize-skip", &v)) != 0) {
      if (!c->static_flag) c->static_flag = "--quantize-skip";
      if (r < 0 || !*v) return usage_error(c, "--quantize-skip needs node names separated by commas");
      for (const char *p = v;; p += strcspn(p, ",") + 1) {
        size_t n = strcspn(p, ",");
        if (n == 0) return usage_error(c, "--quantize-skip %s: an empty node name", v);
        char **ns = realloc(c->skip, (size_t)(c->n_skip + 1) * sizeof *ns);
        char *name = strndup(p, n);
        if (!ns || !name) fc_die(__FILE__, __LINE__, "out of memory");
        c->skip = ns;
        c->skip[c->n_skip++] = name;
        if (!p[n]) break;
      }
    } else if ((r = take_value(argc, argv, &i, "--emit", &v)) != 0) {
      if (r < 0) return usage_error(c, "--emit needs a kind: exe, obj, lib, so, ir, dot, onnx or ptx");
      if (strcmp(v, "ir") != 0 && strcmp(v, "dot") != 0 && strcmp(v, "onnx") != 0 && strcmp(v, "ptx") != 0 &&
          emit_kind(v) < 0)
        return usage_error(c, "unknown --emit kind '%s' (expected exe, obj, lib, so, ir, dot, onnx or ptx)", v);
      c->emit = v;
    } else if ((r = take_value(argc, argv, &i, "--device", &v)) != 0) {
      if (r < 0 || (strcmp(v, "cuda") != 0 && strcmp(v, "cpu") != 0))
        return usage_error(c, "--device needs cuda or cpu (the GPU half: NVIDIA GPUs through PTX)");
      c->device = v;
    } else if ((r = take_value(argc, argv, &i, "--gpu", &v)) != 0) {
      if (r < 0 || strncmp(v, "sm_", 3) != 0) return usage_error(c, "--gpu needs a GPU architecture such as sm_80 or sm_90");
      c->gpu_arch = v;
    } else if ((r = take_value(argc, argv, &i, "--target", &v)) != 0) {
      if (r < 0 || !*v) return usage_error(c, "--target needs a target triple (such as x86_64-linux-gnu)");
      c->aot_triple = v;
    } else if ((r = take_value(argc, argv, &i, "--cpu", &v)) != 0) {
      if (r < 0 || !*v) return usage_error(c, "--cpu needs a CPU name (such as native, x86-64-v3 or skylake)");
      c->aot_cpu = v;
    } else if ((r = take_value(argc, argv, &i, "-o", &v)) != 0) {
      if (r < 0 || !*v) return usage_error(c, "-o needs a file name");
      c->output = v;
    } else if ((r = take_value(argc, argv, &i, "--passes", &v)) != 0) {
      if (r < 0) return usage_error(c, "--passes needs a list such as --passes=fold,dce");
      FcDiag d;
      fc_diag_init(&d);
      if (fc_pipeline_check(v, &d) != FC_OK) return usage_error(c, "--passes: %s", d.msg);
      c->passes = v;
    } else if ((r = take_value(argc, argv, &i, "--print-after", &v)) != 0) {
      if (r < 0 || !is_pass_or_all(v))
        return usage_error(c, "--print-after needs a registered pass name or 'all'%s%s%s", r < 0 ? "" : ", not '",
                           r < 0 ? "" : v, r < 0 ? "" : "'");
      c->print_after = v;
    } else if ((r = take_value(argc, argv, &i, "--print-before", &v)) != 0) {
      if (r < 0 || !is_pass_or_all(v))
        return usage_error(c, "--print-before needs a registered pass name or 'all'%s%s%s", r < 0 ? "" : ", not '",
                           r < 0 ? "" : v, r < 0 ? "" : "'");
      c->print_before = v;
    } else if (a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && !a[3]) {
      c->opt_level = a[2] - '0';
    } else if (strcmp(a, "--verify-each") == 0) {
      c->verify_each = true;
    } else if (strcmp(a, "--weights") == 0) {
      c->weights = true;
    } else if (strcmp(a, "--split-input-file") == 0) {
      c->split = true;
    } else {
      return usage_error(c, "unknown option '%s' for 'flowc build' (see 'flowc build --help')", a);
    }
  }
  if (check) {
    if (!c->n_dirs) return usage_error(c, "no test case given (usage: flowc check DIR ... [options])");
    return -1;
  }
  if (!c->model) return usage_error(c, "no model given (usage: flowc %s MODEL [options])", c->cmd);
  bool explicit_passes = c->passes != NULL;
  if (c->static_flag && !c->int8_static)
    return usage_error(c, "%s is an option of static quantisation: it needs --quantize int8", c->static_flag);
  if (c->int8_static) {
    if (c->passes) return usage_error(c, "--quantize int8 with --passes: quantize_static needs the calibrated -O pipeline");
    if (!c->calib_opt.dir) return usage_error(c, "--quantize int8 needs --calibrate DIR (sample inputs to calibrate on)");
    if (c->percentile_given && c->calib_method && c->calib_opt.method != FC_CALIB_PERCENTILE)
      return usage_error(c, "--calibrate-percentile goes with --calibrate-method percentile, not %s", c->calib_method);
    if (c->percentile_given) c->calib_opt.method = FC_CALIB_PERCENTILE;
    if (c->split) return usage_error(c, "--quantize int8 does not apply to --split-input-file");
    calibrated_pipeline(c);
  } else if (c->quantize) {
    if (c->passes)
      return usage_error(c, "--quantize with --passes: put %s in the --passes list instead", c->quantize->pass);
    quantized_pipeline(c);
  }
  if (build || info) {
    int rs = check_sbp_options(c);
    if (rs >= 0) return rs;
  }
  if (strcmp(c->model, "-") == 0) return usage_error(c, "reading a model from standard input is not supported");
  if (build && strcmp(c->emit, "onnx") == 0) {
    int ro = check_onnx_options(c, explicit_passes);
    if (ro >= 0) return ro;
  }
  if (build) {
    int ra = check_artefact_options(c);
    if (ra >= 0) return ra;
  }
  c->imp.bindings = c->binds;
  c->imp.n_bindings = c->n_binds;
  c->imp.shapes = c->shapes;
  c->imp.n_shapes = c->n_shapes;
  return -1;
}

/* ---- build ---------------------------------------------------------------------------------------- */

/* The output stream, opened on first use so a model that fails leaves no file behind. */
typedef struct Output {
  const char *path; /* NULL: stdout */
  FILE *f;
  bool regular;     /* the output is a regular file (only such a file is removed after a failure) */
} Output;

static const char *output_name(const Output *o) { return o->path ? o->path : "<stdout>"; }

static FcStatus output_open(Output *o, FcDiag *d) {
  if (o->f) return FC_OK;
  if (!o->path) {
    o->f = stdout;
    return FC_OK;
  }
  o->f = fopen(o->path, "w");
  if (!o->f) return fc_error(d, FC_ERR_IO, "cannot write: %s", strerror(errno));
  struct stat st;
  o->regular = fstat(fileno(o->f), &st) == 0 && S_ISREG(st.st_mode);
  return FC_OK;
}

/* Closes the output; FC_ERR_IO if any write failed. */
static FcStatus output_close(Output *o, FcDiag *d) {
  if (!o->f) return FC_OK;
  bool ok = fflush(o->f) == 0 && !ferror(o->f);
  int e = errno;
  if (o->f != stdout && fclose(o->f) != 0 && ok) {
    ok = false;
    e = errno;
  }
  o->f = NULL;
  return ok ? FC_OK : fc_error(d, FC_ERR_IO, "cannot write: %s", strerror(e));
}

/* Which file a failure is about: the model, or the output. */
typedef enum Blame { BLAME_MODEL, BLAME_OUTPUT } Blame;

static FcCodegenOptions codegen_options(const Cli *c) {
  int kind = emit_kind(c->emit);
  return (FcCodegenOptions){.triple = c->aot_triple, .cpu = c->aot_cpu, .opt_level = c->opt_level,
                            .model_name = kind >= 0 && kind != FC_EMIT_EXE ? c->aot_name : NULL,
                            .progress = fc_progress_line_hook(c->progress),
                            .gpu_symbol = c->gpu_ptx ? c->gpu_symbol : NULL,
                            .gpu_plan = c->gpu_ptx ? &c->gpu_plan : NULL, .gpu_ptx = c->gpu_ptx,
                            .gpu_target = c->gpu_target};
}

/* The pass pipeline the options ask for (or `passes`, when not NULL), for target t. */
static FcStatus run_passes(const Cli *c, FcModule *m, const FcTarget *t, const char *passes, FcDiag *d) {
  FcPipelineOptions po;
  fc_pipeline_options_default(&po);
  po.target = t;
  po.opt_level = c->opt_level;
  po.passes = passes ? passes : c->passes;
  po.quant = &c->quant_opt;
  po.print_before = c->print_before;
  po.print_after = c->print_after;
  po.verify_each = c->verify_each;
  po.progress = fc_progress_line_hook(c->progress);
  /* Dumps share stderr with messages: flush what went to stdout so 2>&1 keeps the order. */
  fflush(stdout);
  return fc_pipeline_run(m, &po, d);
}

/* FcCalibLoadFn (ctx: Cli): the model loaded again, verified and put through the pipeline's prefix, silently. */
static FcStatus load_calib_copy(void *ctx, FcModule **out, FcDiag *d) {
  const Cli *c = ctx;
  *out = NULL;
  FcModule *m = NULL;
  FcStatus st = fc_load_model(c->model, &c->imp, &m, NULL, d);
  if (st == FC_OK) st = fc_verify(m, d);
  FcPipelineOptions po;
  fc_pipeline_options_default(&po);
  po.target = c->target;
  po.opt_level = c->opt_level;
  po.passes = c->calib_prefix;
  po.quant = &c->quant_opt;
  if (st == FC_OK) st = fc_pipeline_run(m, &po, d);
  if (st != FC_OK) {
    fc_module_destroy(m);
    return st;
  }
  *out = m;
  return FC_OK;
}

/* Every --quantize-skip name must be a node of the model: a misspelt one would quantise what it meant to keep. */
static FcStatus check_skip_names(const Cli *c, FcModule *m, FcDiag *d) {
  for (int i = 0; i < c->n_skip; i++) {
    bool found = false;
    fc_graph_for_each_op(m->graph, op) found = found || (op->loc && strcmp(op->loc, c->skip[i]) == 0);
    if (!found) return fc_error(d, FC_ERR_INPUT, "--quantize-skip: the model has no node named '%s'", c->skip[i]);
  }
  return FC_OK;
}

/* The pipeline for target t; with --quantize int8 cut in two around calibration: the ranges are collected
 * once (the first CPU variant) and written on each variant's module before quantize_static runs. */
static FcStatus run_pipeline(Cli *c, FcModule *m, const FcTarget *t, FcDiag *d) {
  if (!c->int8_static) return run_passes(c, m, t, NULL, d);
  FcStatus st = run_passes(c, m, t, c->calib_prefix, d);
  if (st == FC_OK) st = check_skip_names(c, m, d);
  c->calib_opt.target = c->target;
  if (st == FC_OK && !c->calib) {
    fc_progress_line_phase(c->progress, "calibration");
    st = fc_calib_collect(&c->calib_opt, load_calib_copy, c, &c->calib, d);
  }
  if (st == FC_OK && c->quant_report && !c->reported) {
    c->reported = true;
    fc_progress_line_phase(c->progress, "calibration report");
    fflush(stdout);
    /* The report goes to stdout unless the IR or graph does. */
    bool ir_to_stdout = emit_kind(c->emit) < 0 && (!c->output || strcmp(c->output, "-") == 0);
    st = fc_calib_report(c->calib, load_calib_copy, c, ir_to_stdout ? stderr : stdout, d);
  }
  if (st == FC_OK) st = fc_calib_annotate(c->calib, m, d);
  if (st == FC_OK) st = run_passes(c, m, t, c->calib_quant, d);
  return st;
}

/* --ranks: the mesh (flow.mesh) that the sbp pass and codegen read, on a module that has none yet; rank >= 0
 * makes it that rank's own program (flow.rank: a rank-specialised build). */
static FcStatus set_mesh(const Cli *c, FcModule *m, int64_t rank, FcDiag *d) {
  if (!c->ranks) return FC_OK;
  if (fc_module_mesh(m, NULL))
    return fc_error(d, FC_ERR_INPUT, "the module is an SBP program already (flow.mesh): compile it without --ranks");
  FcAnnotValue mesh = FC_AV_I64S(c->mesh, c->n_mesh), file = FC_AV_STRING(c->sbp), r = FC_AV_I64(rank);
  fc_annots_set(&m->arena, &m->annots, fc_annot_name(FC_ANNOT_MESH), &mesh);
  if (rank >= 0) fc_annots_set(&m->arena, &m->annots, fc_annot_name(FC_ANNOT_RANK), &r);
  if (strcmp(sbp_pass_mode(c->sbp), "file") == 0) fc_annots_set(&m->arena, &m->annots, fc_annot_name(FC_ANNOT_SBP_FILE), &file);
  if (strcmp(sbp_pass_mode(c->sbp), "axes") == 0) fc_annots_set(&m->arena, &m->annots, fc_annot_name(FC_ANNOT_SBP_AXES), &file);
  if (is_pipeline(c)) {
    FcAnnotValue mb = FC_AV_I64(c->micro_batches), starts = FC_AV_STRING(c->stage_starts);
    fc_annots_set(&m->arena, &m->annots, fc_annot_name(FC_ANNOT_MICRO_BATCHES), &mb);
    if (c->stage_starts) fc_annots_set(&m->arena, &m->annots, fc_annot_name(FC_ANNOT_STAGE_STARTS), &starts);
  }
  return FC_OK;
}

/* Whether --rank-specialise lets this build compile one program per rank (its plan permitting). */
static bool specialise_allowed(const Cli *c) {
  /* The GPU half of --device cuda is one program for every rank (its slices run on the device). */
  return c->ranks > 1 && !c->gpu_target && c->rank_specialise != RANK_SPECIALISE_OFF &&
         (c->rank_specialise == RANK_SPECIALISE_ON || c->ranks <= RANK_SPECIALISE_MAX_RANKS);
}

/* c->specialised: whether the build compiles one program per rank, which pays only where the plan slices a
 * constant (a weight split by tensor parallelism). The plan is made on a copy of the model, loaded and put
 * through the pipeline up to the sbp pass silently, as rank 0's program (the cost model then knows the
 * slices of constants are free, as they will be, so sbp_auto chooses as it will in the build); nothing in
 * the planning depends on the rank, so every rank's program has that plan. */
static FcStatus specialise_decide(Cli *c, FcDiag *d) {
  c->specialised = false;
  if (is_pipeline(c) && c->ranks > 1) { /* each rank runs its own stage: always one program per rank */
    c->specialised = true;
    if (c->ranks * (c->n_variants ? c->n_variants : 1) > FC_MULTI_MAX_VARIANTS)
      return fc_error(d, FC_ERR_INPUT, "--sbp pipeline: %lld ranks x %d CPUs is more than %d programs; use fewer CPUs (--cpu)",
                      (long long)c->ranks, c->n_variants ? c->n_variants : 1, FC_MULTI_MAX_VARIANTS);
    return FC_OK;
  }
  if (!specialise_allowed(c)) return FC_OK;
  FcModule *m = NULL;
  FcStatus st = fc_load_model(c->model, &c->imp, &m, NULL, d);
  if (st == FC_OK) st = fc_verify(m, d);
  if (st == FC_OK) st = set_mesh(c, m, 0, d);
  /* flowc info has no target of its own: the default one (the plan does not depend on it). */
  FcTarget *own = NULL;
  FcCodegenOptions co = {.opt_level = c->opt_level};
  if (st == FC_OK && !c->target) st = fc_target_resolve(&co, &own, d);
  FcPipelineOptions po;
  fc_pipeline_options_default(&po);
  po.target = c->target ? c->target : own;
  po.opt_level = c->opt_level;
  po.passes = c->sbp_prefix;
  po.quant = &c->quant_opt;
  if (st == FC_OK) st = fc_pipeline_run(m, &po, d);
  if (st == FC_OK) {
    fc_graph_for_each_op(m->graph, op) {
      const FcValue *x = op->kind == FC_OP_LOCAL_SLICE ? op->operands[0].value : NULL;
      if (x && x->def && x->def->kind == FC_OP_CONSTANT) c->specialised = true;
    }
  }
  fc_module_destroy(m);
  fc_target_free(own);
  if (st == FC_OK && c->specialised && c->ranks * (c->n_variants ? c->n_variants : 1) > FC_MULTI_MAX_VARIANTS)
    st = fc_error(d, FC_ERR_INPUT, "--rank-specialise=on: %lld ranks x %d CPUs is more than %d programs; use fewer "
                  "CPUs (--cpu) or --rank-specialise=off", (long long)c->ranks, c->n_variants ? c->n_variants : 1,
                  FC_MULTI_MAX_VARIANTS);
  return st;
}

/* Verifies, runs the pipeline and emits one module. Does not free it. */
static FcStatus build_module(Cli *c, FcModule *m, Output *out, Blame *blame, FcDiag *d) {
  *blame = BLAME_MODEL;
  FcStatus st = fc_verify(m, d);
  if (st != FC_OK) return st;
  /* A rank-specialised build's IR, graph or single artefact is rank 0's program. */
  st = set_mesh(c, m, c->specialised ? 0 : -1, d);
  if (st != FC_OK) return st;
  /* The target the passes ask is the one codegen then generates for. */
  int kind = emit_kind(c->emit);
  FcCodegenOptions co = codegen_options(c);
  /* --emit ir, dot and ptx of --device cuda show the GPU's pipeline; an artefact's CPU code gets the CPU's. */
  st = run_pipeline(c, m, c->gpu_target && kind < 0 ? c->gpu_target : c->target, d);
  if (st == FC_OK && strcmp(c->emit, "ptx") == 0) {
    st = fc_gpu_compile(m, c->gpu_target, c->opt_level, &c->gpu_plan, &c->gpu_ptx, d);
    if (st != FC_OK) return st;
    fc_progress_line_finish(c->progress);
    *blame = BLAME_OUTPUT;
    if ((st = output_open(out, d)) == FC_OK && fputs(c->gpu_ptx, out->f) < 0)
      st = fc_error(d, FC_ERR_IO, "cannot write the PTX");
    return st;
  }
  if (st == FC_OK && kind >= 0) {
    st = fc_emit_artifact(m, &co, c->target, (FcEmitKind)kind, c->output, d);
    *blame = st == FC_ERR_IO ? BLAME_OUTPUT : BLAME_MODEL;
  }
  if (st != FC_OK || kind >= 0) return st;
  fc_progress_line_finish(c->progress); /* the IR or graph may go to the same terminal */
  *blame = BLAME_OUTPUT;
  st = output_open(out, d);
  if (st != FC_OK) return st;
  if (strcmp(c->emit, "dot") == 0) st = fc_dot_print(out->f, m, d);
  else if (strcmp(c->emit, "onnx") == 0) st = fc_onnx_export(out->f, m, d);
  else {
    if (c->specialised && is_pipeline(c))
      fprintf(out->f, "// rank 0's program of %lld (flow.rank): the build compiles one per rank, each its own pipeline "
              "stage\n", (long long)c->ranks);
    else if (c->specialised)
      fprintf(out->f, "// rank 0's program of %lld (flow.rank): the build compiles one per rank, each with its own "
              "chunks of the split constants (--rank-specialise=off: the one program of every rank)\n",
              (long long)c->ranks);
    FcPrintOptions pr = {.weights = c->weights, .inline_limit = FC_PRINT_INLINE_LIMIT_DEFAULT};
    st = fc_print_module(out->f, m, &pr, d);
  }
  if (st != FC_ERR_IO) *blame = BLAME_MODEL;
  return st;
}

/* A message about the calibration folder or one of its files starts with that path: it is blamed on that
 * file, not on the model. */
static bool calibration_blamed(const Cli *c, const FcDiag *d) {
  const char *dir = c->calib_opt.dir;
  size_t n = dir ? strlen(dir) : 0;
  return n && strncmp(d->msg, dir, n) == 0 && (d->msg[n] == ':' || d->msg[n] == '/');
}

static const char *model_or_calibration(const Cli *c, const FcDiag *d) {
  if (!calibration_blamed(c, d)) return c->model;
  static char file[sizeof d->msg];
  size_t n = strcspn(d->msg, ":");
  snprintf(file, sizeof file, "%.*s", (int)n, d->msg);
  return file;
}

static int run_build_one(Cli *c, Output *out) {
  FcDiag d;
  fc_diag_init(&d);
  FcModule *m = NULL;
  Blame blame = BLAME_MODEL;
  fc_progress_line_phase(c->progress, "import");
  FcStatus st = fc_load_model(c->model, &c->imp, &m, NULL, &d);
  if (st == FC_OK) st = build_module(c, m, out, &blame, &d);
  fc_progress_line_finish(c->progress);
  fc_module_destroy(m);
  if (output_close(out, &d) != FC_OK && st == FC_OK) {
    st = d.status;
    blame = BLAME_OUTPUT;
  }
  if (st == FC_OK) return 0;
  /* A half-written output is worse than none; -o /dev/... is left alone. */
  if (out->regular) remove(out->path);
  report(blame == BLAME_OUTPUT ? output_name(out) : model_or_calibration(c, &d), &d);
  return EXIT_INPUT;
}

/* --cpu A,B,...: the model is loaded and put through the pipeline once per CPU (the layout, memory plan and
 * packed constants differ), each variant joining one artefact (cg_dispatch.c); a rank-specialised build
 * (c->specialised) once per CPU and rank, CPU-major, each rank's module with its flow.rank (the IR dumps
 * of --print-before/after are rank 0's). A failure is the model's unless the artefact could not be
 * written. */
static int run_build_multi(Cli *c) {
  FcDiag d;
  fc_diag_init(&d);
  FcCodegenOptions co = codegen_options(c);
  FcMultiBuild *mb = NULL;
  FcModule *m = NULL;
  fc_progress_line_phase(c->progress, "import");
  FcStatus st = fc_load_model(c->model, &c->imp, &m, NULL, &d);
  bool model_failed = st != FC_OK; /* an unreadable model is the model's failure, not the output's */
  /* A quantised model (or --quantize int8...) gets the target's integer variants by default: a VNNI one on
   * x86-64. */
  bool int8 = st == FC_OK && (module_is_quantised(m) || (c->quantize && strncmp(c->quantize->name, "int8", 4) == 0));
  if (st == FC_OK && c->default_variants && int8)
    st = resolve_variants(c, fc_target_default_int8_artefact_cpus(c->aot_triple), &d);
  /* A single-CPU build that specialises per rank has its one target. */
  int n_cpus = c->n_variants ? c->n_variants : 1;
  FcTarget *const *cpus = c->n_variants ? c->variants : &c->target;
  int64_t n_ranks = c->specialised ? c->ranks : 1;
  int total = n_cpus * (int)n_ranks;
  if (st == FC_OK) st = fc_multi_begin(&co, (FcEmitKind)emit_kind(c->emit), total, &mb, &d);
  const char *print_before = c->print_before, *print_after = c->print_after;
  for (int k = 0; st == FC_OK && k < total; k++) {
    const FcTarget *t = cpus[k / n_ranks];
    int64_t rank = c->specialised ? k % n_ranks : -1;
    c->print_before = rank <= 0 ? print_before : NULL;
    c->print_after = rank <= 0 ? print_after : NULL;
    if (k > 0) {
      fc_module_destroy(m);
      m = NULL;
      fc_progress_line_phase(c->progress, "import");
      st = fc_load_model(c->model, &c->imp, &m, NULL, &d);
      model_failed = st != FC_OK;
    }
    if (st == FC_OK) st = fc_verify(m, &d);
    if (st == FC_OK) st = set_mesh(c, m, rank, &d);
    if (st == FC_OK) st = run_pipeline(c, m, t, &d);
    if (st == FC_OK) st = fc_multi_add(mb, m, t, &d);
  }
  c->print_before = print_before;
  c->print_after = print_after;
  if (st == FC_OK) {
    st = fc_multi_finish(mb, m, c->output, &d);
    mb = NULL;
  }
  fc_progress_line_finish(c->progress);
  fc_multi_abort(mb);
  fc_module_destroy(m);
  if (st == FC_OK) return 0;
  report(st == FC_ERR_IO && !model_failed && !calibration_blamed(c, &d) ? c->output : model_or_calibration(c, &d), &d);
  return EXIT_INPUT;
}

static int run_build_split(Cli *c, Output *out) {
  FcDiag d;
  fc_diag_init(&d);
  FcModelFormat fmt;
  char *text = NULL;
  size_t len = 0;
  FcStatus st = fc_model_format_of(c->model, &fmt, &d);
  if (st == FC_OK && fmt != FC_FORMAT_TEXT)
    st = fc_error(&d, FC_ERR_INPUT, "--split-input-file needs IR text input, not an ONNX model");
  if (st == FC_OK) st = fc_read_file(c->model, c->imp.limits.max_file_bytes, &text, &len, &d);
  if (st != FC_OK) {
    report(c->model, &d);
    return EXIT_INPUT;
  }
  FcChunk *chunks;
  int n = fc_split_input(text, len, &chunks);
  free(text);
  int status = 0;
  for (int i = 0; i < n; i++) {
    fc_diag_init(&d);
    FcModule *m = NULL;
    Blame blame = BLAME_MODEL;
    /* The separator goes out even for a part that fails, so part k of the output is part k of the input. */
    if (i) {
      st = output_open(out, &d);
      if (st != FC_OK) {
        report(output_name(out), &d);
        status = EXIT_INPUT;
        break;
      }
      fputs("// -----\n", out->f);
    }
    st = fc_load_text(chunks[i].text, chunks[i].len, c->model, &c->imp, &m, &d);
    if (st == FC_OK) st = build_module(c, m, out, &blame, &d);
    fc_module_destroy(m);
    if (st != FC_OK) {
      report(blame == BLAME_OUTPUT ? output_name(out) : c->model, &d);
      status = EXIT_INPUT;
      if (blame == BLAME_OUTPUT) break; /* nothing more can be written */
    }
  }
  fc_chunks_free(chunks, n);
  fc_diag_init(&d);
  if (output_close(out, &d) != FC_OK && status == 0) {
    report(output_name(out), &d);
    status = EXIT_INPUT;
  }
  return status;
}

/* -o must not name the model, nor may an artefact's header be the model or the artefact itself (--emit lib
 * -o m.h): flowc would overwrite its input, or one output with another. Paths are compared by device and
 * inode when the files exist (links, other spellings), by name otherwise. Returns -1 to go on. */
static int check_output_paths(Cli *c, const Output *out) {
  if (!out->path) return -1;
  int kind = emit_kind(c->emit);
  bool has_header = kind >= 0 && kind != FC_EMIT_EXE;
  char *header = has_header ? fc_emit_header_path(out->path, (FcEmitKind)kind, c->aot_name) : NULL;
  FcDiag d;
  fc_diag_init(&d);
  if (fc_emit_same_file(out->path, c->model))
    fc_error(&d, FC_ERR_INPUT, "-o names the input model; flowc does not overwrite its input");
  else if (header && fc_emit_same_file(header, c->model))
    fc_error(&d, FC_ERR_INPUT, "the header %s would overwrite the input model; choose another -o", header);
  else if (header && fc_emit_same_file(header, out->path))
    fc_error(&d, FC_ERR_INPUT, "the header would overwrite the %s itself; choose another -o (such as %s)",
             kind == FC_EMIT_LIB ? "library" : "artefact", kind == FC_EMIT_LIB ? "libNAME.a" : "NAME.o");
  free(header);
  if (d.status == FC_OK) return -1;
  report(out->path, &d);
  return EXIT_INPUT;
}

/* The progress line of build and run: on a terminal, without --quiet; FLOWC_PROGRESS_DELAY (seconds, for
 * tests) replaces the 2 s a compile runs before the line appears. */
static void progress_start(Cli *c) {
  const char *env = getenv("FLOWC_PROGRESS_DELAY");
  char *end = NULL;
  double delay = env ? strtod(env, &end) : 2.0;
  if (!env || end == env || *end || !(delay >= 0)) delay = 2.0;
  c->progress = fc_progress_line_start(stderr, !c->quiet && isatty(STDERR_FILENO), delay);
}

/* --device cuda, an artefact: the model loaded once more and put through the GPU's pipeline, its kernels
 * compiled to PTX and planned (kept in c for the CPU build, whose main object then carries them). */
static int build_gpu_half(Cli *c) {
  FcDiag d;
  fc_diag_init(&d);
  fc_progress_line_phase(c->progress, "import");
  FcStatus st = fc_load_model(c->model, &c->imp, &c->gpu_module, NULL, &d);
  if (st == FC_OK) st = fc_verify(c->gpu_module, &d);
  if (st == FC_OK) st = set_mesh(c, c->gpu_module, -1, &d); /* --ranks: the same SBP program as the CPU half's */
  if (st == FC_OK) st = run_pipeline(c, c->gpu_module, c->gpu_target, &d);
  if (st == FC_OK) {
    fc_progress_line_phase(c->progress, "GPU codegen");
    st = fc_gpu_compile(c->gpu_module, c->gpu_target, c->opt_level, &c->gpu_plan, &c->gpu_ptx, &d);
  }
  if (st == FC_OK) return -1;
  fc_progress_line_finish(c->progress);
  report(model_or_calibration(c, &d), &d);
  return EXIT_INPUT;
}

static int run_build(Cli *c) {
  Output out = {.path = c->output && strcmp(c->output, "-") != 0 ? c->output : NULL};
  /* Split parts and IR dumps print to the terminal during the compile: no line there. */
  if (!c->split && !c->print_before && !c->print_after) progress_start(c);
  int status = check_output_paths(c, &out);
  if (status < 0 && c->gpu_target && emit_kind(c->emit) >= 0) status = build_gpu_half(c);
  if (status < 0) {
    FcDiag d;
    fc_diag_init(&d);
    if (specialise_decide(c, &d) != FC_OK) {
      fc_progress_line_finish(c->progress);
      report(c->model, &d);
      status = EXIT_INPUT;
    }
  }
  /* One program per rank is a multiversioned artefact even for one CPU; IR and graphs are rank 0's. */
  bool multi = c->n_variants || (c->specialised && emit_kind(c->emit) >= 0);
  if (status < 0 && c->split) status = run_build_split(c, &out);
  else if (status < 0) status = multi ? run_build_multi(c) : run_build_one(c, &out);
  cli_free(c);
  return status;
}

/* ---- info ----------------------------------------------------------------------------------------- */

static int run_info(Cli *c) {
  FcDiag d;
  fc_diag_init(&d);
  FcModule *m = NULL;
  FcModelFormat fmt = FC_FORMAT_ONNX;
  Blame blame = BLAME_MODEL;
  FcStatus st = fc_load_model(c->model, &c->imp, &m, &fmt, &d);
  if (st == FC_OK) st = fc_verify(m, &d);
  /* Where the build would specialise per rank, rank 0's program: the cost model then prices the slices of
   * constants as the build has them (folded), and the summary counts what is left. */
  if (st == FC_OK) st = set_mesh(c, m, specialise_allowed(c) ? 0 : -1, &d);
  /* What flowc build with these options would compile: one program per rank or one for all. */
  if (st == FC_OK && c->ranks > 1) st = specialise_decide(c, &d);
  if (st == FC_OK) {
    blame = BLAME_OUTPUT;
    st = fc_info_print(stdout, m, c->model, fmt, c->ranks ? c->passes : NULL, &d);
  }
  if (st == FC_OK && c->ranks > 1) {
    if (c->specialised && is_pipeline(c))
      printf("rank builds    one program per rank (%lld, each for every CPU of the artefact): each rank runs its own "
             "pipeline stage\n", (long long)c->ranks);
    else if (c->specialised)
      printf("rank builds    one program per rank (%lld, each for every CPU of the artefact): the --sbp %s plan "
             "splits constant weights, folded to each rank's chunk at compile time (--rank-specialise)\n",
             (long long)c->ranks, c->sbp);
    else
      printf("rank builds    one program for all ranks%s\n",
             specialise_allowed(c) ? ": the plan slices no constant" :
             c->rank_specialise == RANK_SPECIALISE_OFF ? " (--rank-specialise=off)" :
             " (more than 8 ranks: --rank-specialise=on to compile one per rank)");
  }
  fc_module_destroy(m);
  int status = 0;
  if (st != FC_OK) {
    report(blame == BLAME_OUTPUT ? "<stdout>" : c->model, &d);
    status = EXIT_INPUT;
  }
  cli_free(c);
  return status;
}

/* ---- run ------------------------------------------------------------------------------------------ */

static int run_run(Cli *c) {
  FcDiag d;
  fc_diag_init(&d);
  FcModule *m = NULL;
  FcJit *jit = NULL;
  FcRunArgs files = {c->rt_argc, c->rt_argv}; /* symbolic input dims take the shapes of these files */
  if (c->precision && !(c->device && strcmp(c->device, "simt") == 0))
    return usage_error(c, "--precision needs --device simt");
  c->imp.shape_fn = fc_run_input_type;
  c->imp.shape_ctx = &files;
  progress_start(c);
  fc_progress_line_phase(c->progress, "import");
  FcStatus st = fc_load_model(c->model, &c->imp, &m, NULL, &d);
  if (st == FC_OK) {
    FcPipelineOptions po;
    fc_pipeline_options_default(&po);
    po.opt_level = c->opt_level;
    po.passes = c->passes;
    po.progress = fc_progress_line_hook(c->progress);
    FcCodegenOptions co = {.cpu = c->cpu, .opt_level = c->opt_level, .progress = po.progress};
    st = fc_compile_jit(m, &po, &co, &jit, &d);
  }
  /* --device simt: the GPU kernels' host build from a second copy of the model, run instead of the CPU
   * code (whose descriptor still describes the inputs and outputs). */
  FcModule *gm = NULL;
  FcSimt *simt = NULL;
  bool on_simt = c->device && strcmp(c->device, "simt") == 0;
  if (st == FC_OK && on_simt) {
    fc_progress_line_phase(c->progress, "SIMT build");
    st = fc_load_model(c->model, &c->imp, &gm, NULL, &d);
    FcPipelineOptions po;
    fc_pipeline_options_default(&po);
    po.opt_level = c->opt_level;
    po.passes = c->passes;
    if (st == FC_OK) st = fc_simt_compile(gm, &po, c->gpu_precision, &simt, &d);
  }
  fc_progress_line_finish(c->progress);
  int status;
  if (st != FC_OK) {
    report(c->model, &d);
    status = EXIT_INPUT;
  } else {
    fflush(stdout);
    FrtModel model = *fc_jit_model(jit);
    if (on_simt) {
      model.gpu = fc_simt_model(simt);
      push_arg(&c->rt_argv, &c->rt_argc, "--device");
      push_arg(&c->rt_argv, &c->rt_argc, "simt");
    }
    status = frt_main(c->rt_argc, c->rt_argv, &model);
  }
  fc_simt_free(simt);
  fc_module_destroy(gm);
  fc_jit_destroy(jit);
  fc_module_destroy(m);
  cli_free(c);
  return status;
}

/* ---- check ---------------------------------------------------------------------------------------- */

static int run_check(Cli *c) {
  FcCheckOptions o;
  fc_check_options_default(&o);
  o.simt = c->device && strcmp(c->device, "simt") == 0;
  if (c->precision && !o.simt) return usage_error(c, "--precision needs --device simt");
  o.precision = c->gpu_precision;
  o.limits = c->imp.limits;
  o.opt_level = c->opt_level;
  o.threads = c->threads;
  o.jobs = c->jobs;
  o.timeout_s = c->timeout_s;
  o.cpu = c->cpu;
  FcDiag d;
  fc_diag_init(&d);
  FcCheckSummary sum;
  FcStatus st = fc_check_dirs(stdout, c->dirs, c->n_dirs, &o, &sum, &d);
  cli_free(c);
  if (st != FC_OK) {
    fflush(stdout);
    fputs("flowc: error: ", stderr);
    put_line_safe(d.msg, stderr);
    fputc('\n', stderr);
    return EXIT_INPUT;
  }
  return sum.failed ? EXIT_INPUT : 0;
}

int main(int argc, char **argv) {
  Cli c = {.emit = "exe", .opt_level = 2, .threads = 1, .jobs = 1, .timeout_s = 600};
  c.calib_opt.method = FC_CALIB_MINMAX;
  c.calib_opt.percentile = 99.99;
  fc_import_options_default(&c.imp);
  if (argc < 2) return usage_error(&c, "no command given (see 'flowc --help')");
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    print_main_help();
    return 0;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("flowc %s\n", FLOWC_VERSION);
    return 0;
  }
  static const char *const cmds[] = {"build", "info", "run", "check"};
  int k = 0;
  while (k < 4 && strcmp(cmd, cmds[k]) != 0) k++;
  if (k == 4) {
    if (cmd[0] == '-') return usage_error(&c, "unknown option '%s' (see 'flowc --help')", cmd);
    return usage_error(&c, "unknown command '%s' (commands: build, info, run, check; see 'flowc --help')", cmd);
  }
  c.cmd = cmd;
  c.kind = (Cmd)k;
  int r = parse_args(&c, argc, argv);
  if (r >= 0) return r;
  switch (c.kind) {
  case CMD_BUILD: return run_build(&c);
  case CMD_INFO: return run_info(&c);
  case CMD_RUN: return run_run(&c);
  case CMD_CHECK: return run_check(&c);
  }
  FC_UNREACHABLE();
}
