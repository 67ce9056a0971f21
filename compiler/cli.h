/* cli.h — what the `flowc` command line needs from the library, one section per file:
 *
 * load.c   opens a model by its content (ONNX protobuf or IR text), applies the import limits and
 *          --bind to text input too, and splits text on `// -----` lines (--split-input-file).
 * info.c   `flowc info`: inputs, outputs, op histogram, parameters, FLOPs as one aligned block.
 * dot.c    `--emit dot`: the graph for Graphviz.
 * run.c    compiling a module in memory (passes, codegen, LLVM, ORC JIT) for `flowc run` and `check`.
 * testcase.c  ONNX backend test cases (model.onnx + test_data_set_N/): binding inputs, reading data sets.
 * check.c  `flowc check`: compiles each test case, runs its data sets and compares the outputs.
 * calib_data.c  the calibration folder of --calibrate DIR: its layout, files matched to model inputs.
 * calibrate.c   runs the float model on those samples and records per observation point the range that
 *               quantize_static quantises with (flow.calib_range); the --quantize-report table.
 *
 * Everything here returns a status and fills an FcDiag; only compiler/main.c prints errors and exits.
 */
#ifndef FLOWC_CLI_H
#define FLOWC_CLI_H

#include <stdio.h>

#include "ir.h"
#include "onnx.h"

/* ---- load.c -------------------------------------------------------------------------------------- */

typedef enum FcModelFormat {
  FC_FORMAT_ONNX, /* protobuf ModelProto */
  FC_FORMAT_TEXT, /* the IR's MLIR text form */
} FcModelFormat;

const char *fc_model_format_name(FcModelFormat f); /* "onnx", "ir text" */

/* True when `text` is the IR text form: after whitespace and `//` comment lines it starts with `module`
 * or `"builtin.module"`. */
bool fc_looks_like_ir_text(const char *text, size_t len);

/* Decides the format of `path` from its first significant bytes (streamed, so a binary model is not read
 * twice); a file that does not look like text but is named *.mlir is text, so the parser reports it. */
FcStatus fc_model_format_of(const char *path, FcModelFormat *out, FcDiag *diag);

/* Reads a whole regular file (at most max_bytes) into a malloc'd, NUL-terminated buffer; free() it. */
FcStatus fc_read_file(const char *path, int64_t max_bytes, char **out, size_t *len, FcDiag *diag);

/* Parses IR text, then applies opts: the rank limit to every value and the bindings (each named graph
 * input becomes a constant read from its file; the types must match). bind_fn is not consulted: text
 * has no node that asks for a constant input. */
FcStatus fc_load_text(const char *text, size_t len, const char *source, const FcImportOptions *opts,
                      FcModule **out, FcDiag *diag);

/* Loads `path` in whichever format it is in. */
FcStatus fc_load_model(const char *path, const FcImportOptions *opts, FcModule **out, FcModelFormat *format,
                       FcDiag *diag);

/* One `// -----` separated part of a text file. `text` is a malloc'd copy preceded by as many newlines
 * as there are lines before the part, so the parser's line numbers are those of the whole file. */
typedef struct FcChunk {
  char *text;
  size_t len;
  int first_line; /* 1-based line of the part's first line in the file */
} FcChunk;

/* Splits at lines that are exactly `// -----` (trailing spaces allowed). Returns the number of chunks
 * (>= 1) and a malloc'd array in *out; free with fc_chunks_free. */
int fc_split_input(const char *text, size_t len, FcChunk **out);
void fc_chunks_free(FcChunk *chunks, int n);

/* ---- info.c -------------------------------------------------------------------------------------- */

/* Prints the `flowc info` block for a module loaded from `path` in `format`, its workspace planned after
 * `passes` (NULL: the -O2 pipeline; flowc info --ranks N: the SBP pipeline). FC_ERR_IO if writing fails. */
FcStatus fc_info_print(FILE *out, FcModule *m, const char *path, FcModelFormat format, const char *passes,
                       FcDiag *diag);

/* ---- dot.c --------------------------------------------------------------------------------------- */

/* Above this many constants, constants are listed inside their users' labels instead of being drawn. */
#define FC_DOT_MAX_CONST_VERTICES 64

/* Writes the graph as a Graphviz digraph: one vertex per op (op name, node name), graph inputs and
 * outputs as distinct vertices, edges labelled with the tensor type. FC_ERR_IO if writing fails. */
FcStatus fc_dot_print(FILE *out, FcModule *m, FcDiag *diag);

/* ---- run.c -------------------------------------------------------------------------------------- */

struct FcJit;
struct FcCodegenOptions;
struct FcPipelineOptions;

/* Compiles a loaded module for this process: verify, the pass pipeline of `po`, code generation and
 * LLVM's pipeline (co->opt_level) for the host, then the JIT. co->cpu NULL means "native": JIT code only
 * ever runs here. The module is left as the passes made it (check looks at its outputs afterwards). */
FcStatus fc_compile_jit(FcModule *m, const struct FcPipelineOptions *po, const struct FcCodegenOptions *co,
                        struct FcJit **out, FcDiag *diag);

/* The runtime's command line that `flowc run` hands to frt_main ("flowc" FILE ... --input NAME=FILE ...). */
typedef struct FcRunArgs {
  int argc;
  char **argv;
} FcRunArgs;

/* An FcShapeFn for `flowc run` (ctx: FcRunArgs): the type of the file that will feed input `name`, the
 * index-th positional FILE or the one --input NAME=FILE names, read as frt_main will read it. */
FcStatus fc_run_input_type(void *ctx, const char *name, int index, FcArena *arena, FcType *out,
                           const char **source, FcDiag *diag);

/* ---- testcase.c ---------------------------------------------------------------------------------- */

/* One ONNX backend test case: `dir` holds model.onnx and test_data_set_<k>/{input,output}_<i>.pb. */
typedef struct FcTestCase {
  const char *dir;
  int data_set;          /* the set the bind callback reads inputs from */
  FcImportLimits limits; /* applied to every data file */
  int n_bound;           /* how many inputs the callback bound (counted by fc_testcase_bind) */
} FcTestCase;

/* An FcBindFn (ctx: FcTestCase *): finds graph input `name` in test_data_set_<data_set> by the
 * TensorProto's own name first, then by position `index` among the model's real inputs. */
FcStatus fc_testcase_bind(void *ctx, const char *name, int index, FcArena *arena, FcTensor **out, FcDiag *diag);

/* The number of test_data_set_<k> folders, k = 0, 1, ... without gaps. */
int fc_testcase_count_sets(const char *dir);

/* The tensors of one data set, `kind` "input" or "output": input_0.pb, input_1.pb, ... in order, with
 * the TensorProto's name (NULL if it has none). Arrays in `arena`. */
typedef struct FcTestTensor {
  const char *name;
  const FcTensor *t;
} FcTestTensor;
FcStatus fc_testcase_read_set(const FcTestCase *tc, int set, const char *kind, FcArena *arena, FcTestTensor **out,
                              int *n, FcDiag *diag);

/* The model's real graph inputs (ONNX graph inputs that are not initializers), by name, in order. */
FcStatus fc_testcase_real_inputs(const FcTestCase *tc, FcArena *arena, const char ***names, int *n, FcDiag *diag);

/* ---- check.c ------------------------------------------------------------------------------------- */

typedef struct FcCheckOptions {
  FcImportLimits limits;
  int opt_level;     /* -O: the pass pipeline and LLVM's */
  int threads;       /* the pool the models run on; 0: one per online core */
  double rtol, atol; /* float comparison: |got - want| <= atol + rtol * |want| */
  int timeout_s;     /* per case; 0: none */
  int jobs;          /* cases checked at the same time (each in its own process) */
  const char *cpu;   /* NULL: native */
  bool simt;         /* --device simt: run the GPU kernels on the SIMT host backend instead of the CPU code */
  int precision;     /* --precision with simt: an FcGpuPrecision */
} FcCheckOptions;

void fc_check_options_default(FcCheckOptions *o); /* -O2, rtol 1e-3, atol 1e-7, 600 s, 1 thread, 1 job */

typedef struct FcCheckSummary {
  int passed, failed, skipped, constant;
} FcCheckSummary;

/* Checks each DIR (a test case, or a folder of test cases, checked in name order), printing one line per
 * case to `out` — `PASS name`, `FAIL name: <why>`, `UNSUPPORTED name: <op or reason>` or `CONSTANT name`
 * (every output was computed at compile time, so no kernel was tested) — and then the summary lines.
 * Each case runs in a child process, so a crash or a hang in generated code fails that case only; lines
 * come out in case order whatever `jobs` is.
 * FC_ERR_IO (with a message) if a DIR cannot be read or the output cannot be written. */
FcStatus fc_check_dirs(FILE *out, const char *const *dirs, int n_dirs, const FcCheckOptions *o, FcCheckSummary *sum,
                       FcDiag *diag);

/* ---- calib_data.c ---------------------------------------------------------------------------------- */

/* The samples of a calibration folder for the inputs of graph g (which must outlive it). */
typedef struct FcCalibData FcCalibData;

/* Checks the folder: its layout, that each file names a model input and each input has a file, and every
 * file's dtype and shape; one-line FC_ERR_INPUT naming the file (or folder) otherwise. */
FcStatus fc_calib_data_open(const char *dir, FcGraph *g, int64_t max_file_bytes, FcCalibData **out, FcDiag *diag);
/* The number of model runs the folder feeds (samples, or stacked samples / the input's dim 0). */
int fc_calib_data_count(const FcCalibData *c);
/* Copies run k's inputs into bufs[i] (each the input's size). */
FcStatus fc_calib_data_fill(const FcCalibData *c, int k, void *const *bufs, FcDiag *diag);
void fc_calib_data_free(FcCalibData *c);

/* ---- calibrate.c ------------------------------------------------------------------------------------ */

struct FcQuantOptions;
struct FcTarget;
struct FcJit;
struct FrtModel;
struct FrtPool;

typedef enum FcCalibMethod { FC_CALIB_MINMAX, FC_CALIB_PERCENTILE, FC_CALIB_ENTROPY } FcCalibMethod;
const char *fc_calib_method_name(FcCalibMethod m);

typedef struct FcCalibOptions {
  const char *dir;          /* the calibration folder */
  FcCalibMethod method;
  double percentile;        /* percentile: the share of values kept, in percent (99.99) */
  const struct FcQuantOptions *quant; /* quantize_static's options (activation type, skip list) */
  const struct FcTarget *target; /* the build's: the report's quantize_static decides as the artefact's does
                                    (its JIT still runs native code); NULL: this machine's */
  int opt_level;            /* the float probe's -O level (codegen and LLVM) */
  const char *rest_passes;  /* the float pipeline after fold_batchnorm, which compiles the probe */
  const char *quant_passes; /* the pipeline after fold_batchnorm with quantisation (the report's model),
                               starting with quantize_static */
  int threads;              /* the probe's pool; 0: one per core */
  int64_t max_file_bytes;   /* per calibration file */
} FcCalibOptions;

/* Makes a fresh copy of the module being built, as the pipeline has made it up to fold_batchnorm. */
typedef FcStatus (*FcCalibLoadFn)(void *ctx, FcModule **out, FcDiag *diag);

typedef struct FcCalib FcCalib;
/* Loads a probe, runs it on every sample of o->dir and chooses the range of every observation point. */
FcStatus fc_calib_collect(const FcCalibOptions *o, FcCalibLoadFn load, void *ctx, FcCalib **out, FcDiag *diag);
/* Writes the ranges as flow.calib_range annotations on m (a copy made as the loader makes them). */
FcStatus fc_calib_annotate(const FcCalib *c, FcModule *m, FcDiag *diag);
/* The --quantize-report table: a quantised copy (from load, annotated, through o->quant_passes) against the
 * float probe on every sample: per quantised activation and per model output, the range, the scale, the SNR
 * in dB and the largest error. */
FcStatus fc_calib_report(FcCalib *c, FcCalibLoadFn load, void *ctx, FILE *out, FcDiag *diag);
int fc_calib_runs(const FcCalib *c);
void fc_calib_free(FcCalib *c);

/* Helpers shared by the probe and the report (calibrate.c): compile m for this CPU with `passes` and
 * allocate its input/output buffers and workspace; run it once; free the buffers. */
FcStatus fc_calib_jit(FcModule *m, const FcCalibOptions *o, const char *passes, struct FcJit **jit, void ***in,
                      void ***out, void **ws, FcDiag *diag);
FcStatus fc_calib_run_model(const struct FrtModel *model, void *const *in, void *const *out, void *ws,
                            struct FrtPool *pool, FcDiag *diag);
void fc_calib_buffers_free(const struct FrtModel *model, void **in, void **out, void *ws);

/* ---- gpu_build.c ------------------------------------------------------------------------------------ */

struct FcGpuPlan;
/* The GPU half of module m (verified, through the pipeline for `gpu`, a GPU target): its kernels as PTX
 * (malloc'd) and the launch plan (arrays in m's arena, so m must outlive the plan; free with
 * fc_gpu_plan_free); ptxas checks the PTX when it is installed. */
FcStatus fc_gpu_compile(FcModule *m, const struct FcTarget *gpu, int opt_level, struct FcGpuPlan *plan, char **ptx,
                        FcDiag *diag);

/* The SIMT host backend's build of m (verified here and put through po's pipeline for the GPU's description,
 * sm_80): the kernels' host copies
 * JIT-compiled for this machine and the FrtGpuModel that runs them (host_kernels set, no PTX), which
 * frt_gpu_open(FRT_DEVICE_SIMT) takes as a model's `gpu`. m must outlive it. */
typedef struct FcSimt FcSimt;
struct FrtGpuModel;
FcStatus fc_simt_compile(FcModule *m, const struct FcPipelineOptions *po, int precision, FcSimt **out,
                         FcDiag *diag);
const struct FrtGpuModel *fc_simt_model(const FcSimt *s);
void fc_simt_free(FcSimt *s);

#endif /* FLOWC_CLI_H */
