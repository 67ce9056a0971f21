/* flowrt.h — libflowrt, the small runtime linked into every program flowc builds.
 *
 * A worked example: a program running a model that `flowc build model.onnx --emit lib -o libmodel.a`
 * compiled (tests/lit/aot/flowrt_example.test builds and runs it with examples/fashion_cnn.onnx). The
 * symbols are named after the output file (model_run, model_workspace_size, model_model), and the header
 * flowc writes beside the library declares them and documents each input and output.
 *
 *     #include <stdio.h>
 *     #include <stdlib.h>
 *     #include "model.h"   // generated beside libmodel.a
 *     #include "flowrt.h"
 *
 *     int main(void) {
 *       FrtError err = {0};
 *       FrtPool *pool = frt_pool_create(0, &err);   // 0: one thread per online core
 *       void *ws = aligned_alloc(64, model_workspace_size());
 *       static float image[1 * 1 * 28 * 28], logits[10];
 *       const void *inputs[] = {image};
 *       void *outputs[] = {logits};
 *       FrtStatus st = frt_model_run(&model_model, inputs, outputs, ws, pool, &err);
 *       if (st != FRT_OK) fprintf(stderr, "%s\n", err.msg);
 *       frt_pool_destroy(pool);
 *       free(ws);
 *       return st != FRT_OK;
 *     }
 *
 * Build it with `cc app.c libmodel.a -lm -lpthread`; a `--emit obj` model links with the installed
 * runtime instead: `cc app.c model.o $(pkg-config --cflags --libs flowrt)`. model_run(inputs, outputs,
 * ws, pool) is the same call without the checks and the message.
 *
 * Everything returns a status and fills an FrtError with one line; nothing exits, aborts or prints on
 * bad input. frt_model_run never allocates: the workspace (sized by the memory plan) is the caller's.
 * Tensor files (.npy, ONNX TensorProto .pb) are read and written by frt_tensor_* before and after runs.
 */
#ifndef FLOWRT_H
#define FLOWRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status -------------------------------------------------------------------------------------- */

typedef enum FrtStatus {
  FRT_OK = 0,
  FRT_ERR_INPUT,       /* bad input: wrong shape/dtype, corrupt file, missing input */
  FRT_ERR_IO,          /* cannot open/read/write a file */
  FRT_ERR_UNSUPPORTED, /* valid but not handled (a dtype the writer lacks, ...) */
  FRT_ERR_RESOURCE,    /* out of memory, cannot start threads */
} FrtStatus;

typedef struct FrtError {
  FrtStatus status;
  char msg[512]; /* one line, no trailing newline */
} FrtError;

/* ---- dtypes (the same codes as ONNX TensorProto.DataType) ----------------------------------------- */

typedef enum FrtDtype {
  FRT_F32 = 1, FRT_U8 = 2, FRT_I8 = 3, FRT_U16 = 4, FRT_I16 = 5, FRT_I32 = 6, FRT_I64 = 7,
  FRT_BOOL = 9, FRT_F16 = 10, FRT_F64 = 11, FRT_U32 = 12, FRT_U64 = 13, FRT_BF16 = 16,
} FrtDtype;

size_t frt_dtype_size(FrtDtype dt);      /* 0 for an unknown code */
const char *frt_dtype_name(FrtDtype dt); /* the IR's spelling: "f32", "i64", "ui8", "i1" (bool), "?" */

#define FRT_MAX_RANK 16

/* ---- the compiled model's description (emitted by flowc's codegen) ------------------------------- */

typedef struct FrtTensorDesc {
  const char *name;     /* ONNX name */
  FrtDtype dtype;
  int32_t rank;
  const int64_t *dims;
} FrtTensorDesc;

typedef struct FrtPool FrtPool;

/* The generated entry point: inputs/outputs are dense row-major buffers of the described types; the
 * workspace is at least workspace_size bytes, 64-byte aligned. Returns 0, or 1 + the index of the first
 * kernel that found bad data (an index out of range, ...): kernel_names[index] describes it. */
typedef int (*FrtRunFn)(const void *const *inputs, void *const *outputs, void *workspace, FrtPool *pool);

typedef struct FrtModel {
  uint32_t abi_version;     /* FRT_ABI_VERSION */
  const char *name;
  int32_t n_inputs, n_outputs;
  const FrtTensorDesc *inputs, *outputs;
  uint64_t workspace_size;  /* bytes */
  FrtRunFn run;
  int32_t n_kernels;
  const char *const *kernel_names; /* "node '<name>' (<op>)", for run-time data errors */
  const double *kernel_flops;      /* per kernel: 2 per multiply-accumulate of conv and matmul, 0 for
                                      other ops (the --profile table's GFLOP/s); NULL: not counted */
  const char *cpu;                 /* the CPU the code was compiled for (--cpu), for messages */
  const char *cpu_features;        /* instruction-set features the code uses, comma-separated in LLVM's
                                      spelling ("avx,avx2,fma,..."), checked by frt_cpu_check; NULL or
                                      "": none checked (other architectures) */
  int32_t n_variants;              /* 0, or a multiversioned model (flowc build --cpu A,B,...): the model
                                      compiled once per CPU (and per rank, for a rank-specialised SBP
                                      program), best CPU first; this descriptor's run calls the one
                                      frt_model_variant picks, its workspace_size is the largest variant's,
                                      cpu lists the CPUs and cpu_features is the last's */
  const struct FrtModel *const *variants;
  int32_t n_ranks;                 /* 0 or 1: one process; N: an SBP program for N ranks (flowc build
                                      --ranks N), which frt_main runs under mpirun -np N */
  int32_t n_mesh_axes;             /* 0: a 1-D mesh of n_ranks; else the number of entries of mesh */
  const int32_t *mesh;             /* mesh dims, row-major (last axis fastest), product n_ranks */
  const struct FrtGpuModel *gpu;   /* NULL, or the model's GPU code (flowc build --device cuda): frt_main
                                      runs it with --device cuda|auto (runtime/gpu.c) */
  int32_t rank;                    /* -1: any rank's program; r >= 0: rank r's own program of an SBP program
                                      built per rank (flowc build --ranks N: its split constant weights are
                                      rank r's chunks), a variant that frt_model_variant gives rank r only */
} FrtModel;

#define FRT_ABI_VERSION 8

/* ---- the GPU half of a model (flowc build --device cuda) -------------------------------------------- *
 *
 * The GPU code is PTX text that the CUDA driver JIT-compiles when the model is opened, plus a launch table
 * the host walks: every launch is one kernel over a fixed grid, its arguments device pointers, each one
 * buffer base + a byte offset. Shapes are static, so no launch takes a scalar. The device holds one
 * allocation per input and output, one workspace (laid out by the same memory plan as the CPU's: its first
 * 64 bytes are the run's status word, which kernels set on bad data, as on the CPU) and one weights buffer
 * uploaded once when the model is opened. The same table drives the SIMT host backend (runtime/gpu_simt.c),
 * which runs host-compiled copies of the kernels (host_kernels) with each block's threads as fibers. */
typedef enum FrtGpuArgKind {
  FRT_GPU_ARG_INPUT = 0,     /* the index-th input's device copy */
  FRT_GPU_ARG_OUTPUT = 1,    /* the index-th output's device buffer */
  FRT_GPU_ARG_WORKSPACE = 2, /* the device workspace */
  FRT_GPU_ARG_WEIGHTS = 3,   /* the device weights */
} FrtGpuArgKind;

typedef struct FrtGpuArg {
  int32_t kind;    /* FrtGpuArgKind */
  int32_t index;   /* INPUT, OUTPUT: which; otherwise 0 */
  uint64_t offset; /* bytes from the buffer's start */
} FrtGpuArg;

#define FRT_GPU_SYNC 1u /* FrtGpuLaunch.flags: the kernel uses barriers or warp shuffles */

/* An SBP program's boxing ops (flowc build --device cuda --ranks N) are launch-table entries that the host
 * executes between the kernels, in table order, through the collectives (frt_coll_*) on device buffers:
 * the NCCL backend on a GPU (queued on the runner's stream, so they order with the kernels), the MPI
 * backend on the SIMT emulator's host memory. Such an entry's arguments are [source, destination,
 * scratch] (scratch: workspace bytes of its own, unused when both row counts are 1); its kernel field
 * names the op for messages and no PTX entry. The collective moves `count` elements of `dtype` per rank
 * block. Views of a tensor around the dim that is split: send_rows is the number of rows of the source
 * when it is [send_rows, group, count / send_rows] rather than the [group, ...] order the collective
 * needs (the runner packs it into scratch first), recv_rows the same for the destination (received into
 * scratch, then spread); 1 means contiguous. local_slice copies this rank's block (frt_coll_rank of the
 * axis) of each of send_rows rows of the [send_rows, group, count / send_rows] source: count is the
 * destination's elements. all_reduce copies the source to the destination and reduces it in place. */
typedef enum FrtGpuColl {
  FRT_GPU_COLL_NONE = 0, /* a kernel */
  FRT_GPU_COLL_ALL_REDUCE = 1,
  FRT_GPU_COLL_ALL_GATHER = 2,
  FRT_GPU_COLL_REDUCE_SCATTER = 3,
  FRT_GPU_COLL_ALL_TO_ALL = 4,
  FRT_GPU_COLL_LOCAL_SLICE = 5,
} FrtGpuColl;

typedef struct FrtGpuLaunch {
  const char *kernel;     /* the PTX entry's name */
  int32_t node;           /* index into FrtGpuModel.kernel_names, for errors and --profile */
  uint32_t grid[3];       /* blocks */
  uint32_t block[3];      /* threads per block (a multiple of 32 in all) */
  uint32_t shared_bytes;  /* shared memory per block the kernel declares (statically, in its PTX) */
  uint32_t flags;         /* FRT_GPU_SYNC */
  int32_t n_args;
  const FrtGpuArg *args;  /* the kernel's parameters, all pointers, in order */
  int32_t coll;           /* FrtGpuColl: FRT_GPU_COLL_NONE for a kernel; the fields below are the rest's */
  int32_t mesh_axis;      /* the group, as frt_coll_*'s axis: -1 all ranks, k mesh axis k */
  int32_t group;          /* the group's size the table was laid out for (checked against the run's) */
  int32_t dtype;          /* FrtDtype of the elements */
  int32_t reduce_op;      /* FrtReduceOp (all_reduce, reduce_scatter) */
  int32_t send_rows, recv_rows; /* see above; 1: contiguous */
  int64_t count;          /* elements per rank block */
} FrtGpuLaunch;

/* A kernel compiled for the SIMT host backend: `thread` is the emulator's state of the calling GPU thread
 * (runtime/gpu_simt.h), `args` the launch's arguments resolved to host pointers. */
typedef void (*FrtSimtKernelFn)(void *thread, void *const *args);

typedef struct FrtGpuModel {
  const char *arch;                 /* the GPU the PTX targets ("sm_80") */
  const char *ptx;                  /* NUL-terminated PTX text; NULL in a SIMT host build */
  const unsigned char *weights;     /* the constants the kernels read, laid out by codegen */
  uint64_t weights_size;
  uint64_t workspace_size;          /* the device workspace, status word included */
  int32_t n_launches;
  const FrtGpuLaunch *launches;     /* in run order */
  int32_t n_kernels;
  const char *const *kernel_names;  /* "node '<name>' (<op>)" */
  const FrtSimtKernelFn *host_kernels; /* per launch, the SIMT host build's functions; NULL in artefacts */
} FrtGpuModel;

size_t frt_model_workspace_size(const FrtModel *m);
/* The descriptor that runs m on this CPU: m itself without variants; for a multiversioned model the
 * variant that $FLOWRT_CPU_VARIANT names (by its cpu, for tests and comparisons), else the first (the
 * best) whose cpu_features this CPU has. Never a variant this CPU lacks features for: NULL then, with
 * frt_cpu_check's message in err (which may be NULL), as for an unknown FLOWRT_CPU_VARIANT. Of an SBP
 * program built per rank (FrtModel.rank), only this process's rank's variants are candidates: the rank of
 * the started collectives (frt_coll_init), else 0; NULL when there is none. Its kernel_names are the ones a
 * non-zero return of m->run indexes. */
const FrtModel *frt_model_variant(const FrtModel *m, FrtError *err);
/* 0 when m (or a variant of it) can run on this CPU, else -1 and frt_model_variant's or frt_cpu_check's
 * message in msg (cap bytes, NUL-terminated; msg may be NULL). The generated NAME_check_cpu of a
 * multiversioned --emit lib/obj/so calls it. */
int frt_model_check_cpu(const FrtModel *m, char *msg, size_t cap);
/* Runs the model once. Checks the ABI version, that this CPU has m->cpu_features (FRT_ERR_UNSUPPORTED
 * naming the missing ones otherwise: the code would die of an illegal instruction), that no buffer is
 * NULL and that the workspace is 64-byte aligned, nothing about the buffers' contents; never allocates.
 * A non-zero return of m->run becomes FRT_ERR_INPUT naming kernel_names[rc - 1], or FRT_ERR_RESOURCE with
 * frt_coll_last_error's message when a collective failed. */
FrtStatus frt_model_run(const FrtModel *m, const void *const *inputs, void *const *outputs, void *workspace,
                        FrtPool *pool, FrtError *err);

/* 0 when this CPU has every feature of the comma-separated `required` list (FrtModel.cpu_features;
 * NULL or "" needs none); otherwise -1 and, when msg is not NULL, one line in msg (cap bytes, always
 * NUL-terminated): "this CPU lacks avx512f, avx512bw, which the model was compiled for (--cpu
 * skylake-avx512)". Features come from CPUID, counted only where the OS enables their registers (XGETBV).
 * Never prints or exits; the generated NAME_run and NAME_check_cpu of --emit lib/obj call it. */
int frt_cpu_check(const char *required, const char *cpu, char *msg, size_t cap);
/* frt_cpu_check for a list that never changes at its address (a model's cpu_features, a constant): a
 * list that passed is remembered by its address and not parsed again, so the check costs nothing per run.
 * frt_model_run, frt_main and the generated NAME_run use this one. */
int frt_cpu_check_const(const char *required, const char *cpu, char *msg, size_t cap);

/* ---- thread pool (called by generated code) ------------------------------------------------------ */

/* n_threads 0: one per online core (the CPUs this process may run on); at most 1024. Threads start once
 * and wait; parallel_for never starts threads or allocates. */
FrtPool *frt_pool_create(int n_threads, FrtError *err);
/* The threads frt_pool_create(0, ...) starts: the CPUs this process may run on (its affinity), at most 1024. */
int frt_default_threads(void);
void frt_pool_destroy(FrtPool *pool);
int frt_pool_threads(const FrtPool *pool);
/* Calls fn(ctx, begin, end) over [0, n) split into contiguous chunks across the pool's threads (the
 * caller's thread takes part; each thread owns a contiguous run of the chunks and, once through it,
 * takes chunks from the back of the others' runs, so uneven work balances); returns when all are done.
 * pool NULL or 1 thread: runs inline. There are min(FRT_CHUNKS_PER_THREAD * threads, n) chunks; chunk i
 * starts at frt_part_begin(n, chunks, i), and thread t's run at frt_part_begin(chunks, threads, t): the
 * same for the same (n, threads). Code generators that model the schedule use the same two.
 * A call from inside a task, or while another thread is using the pool, runs inline (no deadlock). */
#define FRT_CHUNKS_PER_THREAD 4
/* Part i of [0, n) cut into `parts` contiguous parts, the first n % parts of them one longer. */
static inline int64_t frt_part_begin(int64_t n, int64_t parts, int64_t i) {
  int64_t q = n / parts, r = n % parts;
  return i * q + (i < r ? i : r);
}
typedef void (*FrtTaskFn)(void *ctx, int64_t begin, int64_t end);
void frt_parallel_for(FrtPool *pool, int64_t n, FrtTaskFn fn, void *ctx);
/* The same with at most max_chunks chunks (>= 1): for tasks that use one of max_chunks scratch slots, or
 * that keep per-chunk state and want one chunk per thread (max_chunks = frt_pool_threads(pool)). */
void frt_parallel_for_max(FrtPool *pool, int64_t n, int max_chunks, FrtTaskFn fn, void *ctx);
/* Inside a task: its chunk index, in [0, chunks) of the running parallel_for (0 outside any task, and
 * for a nested call, which runs inline as part of its caller's chunk). Generated kernels index their
 * per-task scratch with it. */
int frt_task_index(void);

/* Calls init() the first time any thread of the process asks for *state (a zero-initialised word of the
 * generated code), then sets *state to 1; a thread that asks while another runs init waits until it is
 * done. The generated run function of a model whose weights are stored in 16 bits (flowc build --quantize
 * fp16|bf16) or derived at run time (frt_winograd_i8_weights) calls it, while its word is 0, to expand them
 * into their buffers before the first run. */
void frt_once(int32_t *state, void (*init)(void));

/* The transformed weights of flowc's integer Winograd conv, made from the weights in src into the zeroed
 * dst by the generated code's one-time expansion (winograd_i8.c); p[FRT_WINO_NPARAMS]: the tile size m, the
 * output and input channels, U's output-channel tiles, channel pairs and tile height, the bytes of a weight
 * in src (1 or 2), U's bytes, and the output channels padded to whole tiles. */
enum { FRT_WINO_M, FRT_WINO_OUT_CH, FRT_WINO_IN_CH, FRT_WINO_MT, FRT_WINO_CP, FRT_WINO_MR, FRT_WINO_W_BYTES,
       FRT_WINO_U_BYTES, FRT_WINO_MP, FRT_WINO_NPARAMS };
void frt_winograd_i8_weights(void *dst, const void *src, const int64_t *p);

/* Per-kernel timing (the executables' --profile). While a profile is set, the generated run function
 * adds each kernel's wall time, in seconds, to acc[kernel index] (acc has n entries, the model's
 * n_kernels): it calls frt_profile_tick(pool, -1) before its first kernel and frt_profile_tick(pool, k)
 * after kernel k. acc NULL turns profiling off. A tick without a profile (or with pool NULL) only loads
 * one pointer. The profile belongs to whichever run uses the pool: do not share a profiled pool between
 * concurrent runs. */
void frt_pool_set_profile(FrtPool *pool, double *acc, int32_t n);
void frt_profile_tick(FrtPool *pool, int32_t k);

/* ---- tensors and tensor files ---------------------------------------------------------------------- */

typedef struct FrtTensor {
  FrtDtype dtype;
  int32_t rank;
  int64_t dims[FRT_MAX_RANK];
  void *data;     /* owned when read from a file: free with frt_tensor_free */
  size_t nbytes;
} FrtTensor;

/* .npy (v1/v2/v3, little-endian, C order) or ONNX TensorProto .pb, chosen by content. The data is
 * 64-byte aligned; bools read as 0/1. .npy has no bf16: such files hold '<u2' and read as FRT_U16 (the
 * caller decides). Errors name the file: "x.npy: the shape needs 24 bytes of data, the file holds 20".
 * The writers produce what numpy.save and onnx.numpy_helper.from_array(t, name) produce (bf16 goes to
 * .npy as '<u2'; a NULL or empty name is omitted). */
FrtStatus frt_tensor_read(const char *path, FrtTensor *out, FrtError *err);
/* frt_tensor_read refusing a file of more than max_bytes bytes: a regular file by its size, before reading
 * it; a pipe or device after reading at most max_bytes + 1 bytes, so /dev/zero or an endless writer cannot
 * make it read without end. frt_main bounds each input by frt_tensor_file_max_bytes of its description. */
FrtStatus frt_tensor_read_max(const char *path, size_t max_bytes, FrtTensor *out, FrtError *err);
/* The most bytes a .npy or .pb file of a tensor described by d can take in any encoding (SIZE_MAX if its
 * dims are unknown or overflow). */
size_t frt_tensor_file_max_bytes(const FrtTensorDesc *d);
FrtStatus frt_tensor_write_npy(const char *path, const FrtTensor *t, FrtError *err);
FrtStatus frt_tensor_write_pb(const char *path, const FrtTensor *t, const char *name, FrtError *err);
void frt_tensor_free(FrtTensor *t);

/* ---- time ------------------------------------------------------------------------------------------ */

double frt_now_seconds(void); /* monotonic */

/* ---- collectives (runtime/coll.c, an SBP program's communication) ------------------------------------ */

typedef enum FrtReduceOp { FRT_REDUCE_SUM = 0, FRT_REDUCE_MAX = 1, FRT_REDUCE_MIN = 2 } FrtReduceOp;
/* Collectives of an SBP program (flowc build --ranks N). `axis` names the group: -1 all ranks; k >= 0 the ranks
 * that differ from this one only in mesh coordinate k (the mesh is row-major: rank = sum coord[i]*stride[i],
 * last axis fastest). Buffers are contiguous; `count` is in elements of `dtype` (FrtDtype codes); group order
 * is the coordinate along the axis. Each returns 0, or non-zero after recording a one-line message that
 * frt_coll_last_error() returns (thread-local; the generated run then returns its kernel's index and
 * frt_main reports "node X (op): <message>"). Without frt_coll_init (one process) every group has one
 * member: the collectives copy or do nothing, and send/recv fail. The MPI backend refuses reductions of
 * f16/bf16 and all_gather, reduce_scatter and all_to_all of more than 2^31-1 elements a rank (it splits
 * the others); a sum of booleans is refused everywhere, and so are the same send and receive buffer of
 * all_gather, reduce_scatter and all_to_all in a group of more than one. Call them from one thread at a
 * time (any thread: MPI is started for serialized calls), in the same order on every rank of a group. */
int frt_coll_all_reduce(int32_t axis, void *buf, int64_t count, int32_t dtype, int32_t op);          /* in place */
int frt_coll_all_gather(int32_t axis, const void *send, void *recv, int64_t count, int32_t dtype);  /* recv: group_size*count */
int frt_coll_reduce_scatter(int32_t axis, const void *send, void *recv, int64_t count, int32_t dtype, int32_t op); /* send: group_size*count, recv: count */
int frt_coll_all_to_all(int32_t axis, const void *send, void *recv, int64_t count, int32_t dtype);  /* count per peer */
int frt_coll_broadcast(int32_t axis, void *buf, int64_t count, int32_t dtype, int32_t root);         /* root: coordinate in the group */
int frt_coll_send(const void *buf, int64_t count, int32_t dtype, int32_t peer, int32_t tag);          /* peer: global rank */
int frt_coll_recv(void *buf, int64_t count, int32_t dtype, int32_t peer, int32_t tag);
int32_t frt_coll_rank(int32_t axis);   /* coordinate along axis; axis -1: global rank; 0 without ranks */
int32_t frt_coll_size(int32_t axis);   /* group size; 1 without ranks */
const char *frt_coll_last_error(void);

/* Starts the collectives of a program for n_ranks ranks on a mesh of n_mesh_axes dims (0: a 1-D mesh of
 * n_ranks), the fields of FrtModel; n_ranks 0 or 1 starts nothing. Loads Open MPI (libmpi.so.40, or the
 * file $FLOWRT_MPI_LIBRARY names) with dlopen, so a program that never calls this needs no MPI library. Fails with one line when MPI is missing,
 * the process was not started by mpirun, or mpirun started another number of ranks ("this program was
 * compiled for 4 ranks; it was started with 2: run it with mpirun -np 4"); call frt_coll_finalize after a
 * failure too. While a rank waits in one collective for more than $FLOWRT_COLL_TIMEOUT seconds (default 60;
 * 0: wait for ever), a watchdog prints "rank K: error: ..." and ends the process with status 1, so mpirun
 * ends the others: a peer that hangs cannot hang the job. A peer that dies is mpirun's to notice. */
FrtStatus frt_coll_init(int32_t n_ranks, int32_t n_mesh_axes, const int32_t *mesh, FrtError *err);
int frt_coll_active(void);           /* 1 between a successful frt_coll_init (of N > 1 ranks) and finalize */
void frt_coll_finalize(void);        /* MPI_Finalize; nothing when not started */
void frt_coll_abort(int status);     /* ends every rank with status (MPI_Abort); returns only when not started */
/* Seconds this process has spent in collectives since frt_coll_init (the --profile communication line). */
double frt_coll_seconds(void);
/* The number of ranks of this job on this machine (Open MPI's local size); 1 when not started. frt_main
 * shares the cores among them when --threads is not given. */
int32_t frt_coll_local_size(void);

/* ---- running the GPU half (runtime/gpu.c) ------------------------------------------------------------ */

typedef enum FrtDevice {
  FRT_DEVICE_CPU = 0,  /* the model's CPU code */
  FRT_DEVICE_CUDA = 1, /* the first NVIDIA GPU, through libcuda (dlopen) */
  FRT_DEVICE_SIMT = 2, /* the SIMT host emulator (a model compiled by flowc run/check --device simt) */
  FRT_DEVICE_AUTO = 3, /* CUDA when the model has GPU code and a driver and a GPU are found, else the CPU */
} FrtDevice;

/* A model's GPU code opened on a device: its buffers allocated and its weights uploaded. */
typedef struct FrtGpuSession FrtGpuSession;
/* Opens m->gpu on `device` (CUDA or SIMT; AUTO means CUDA). libcuda.so.1 is loaded with dlopen
 * ($FLOWRT_CUDA_LIBRARY names another file) and the model opens on GPU $FLOWRT_CUDA_DEVICE (default 0). FRT_ERR_UNSUPPORTED with one line when m has no GPU code, when
 * libcuda cannot be loaded ("no CUDA driver: ..."), when no GPU is found, or when the driver cannot load the
 * PTX (its log's first line); FRT_ERR_RESOURCE when device memory runs out. */
FrtStatus frt_gpu_open(const FrtModel *m, FrtDevice device, FrtGpuSession **out, FrtError *err);
/* One run: the inputs copied to the device, every launch in order (on CUDA, one CUDA graph of all of them,
 * captured at open, unless $FLOWRT_CUDA_GRAPHS is 0, the driver lacks graphs or the run is profiled), the
 * outputs copied back. A kernel that found bad data (the status word) is FRT_ERR_INPUT naming its node; a
 * device error FRT_ERR_RESOURCE naming the launch's node (or the graph) and the driver's words. Allocates
 * nothing. */
FrtStatus frt_gpu_run(FrtGpuSession *s, const void *const *inputs, void *const *outputs, FrtError *err);
/* "NVIDIA H200 (sm_90)", "SIMT host emulator". */
const char *frt_gpu_device_name(const FrtGpuSession *s);
/* While acc is set (n = m->gpu->n_kernels entries), each run adds each node's device time in seconds to
 * acc[node] (CUDA: events around each launch; SIMT: wall time). NULL turns it off. */
void frt_gpu_set_profile(FrtGpuSession *s, double *acc, int32_t n);
void frt_gpu_close(FrtGpuSession *s);

/* ---- the standalone program's main (runtime/main.c) ------------------------------------------------ */

/* Implements `OUT [FILE ...] [--input NAME=FILE ...] [--output-dir DIR] [--output-format npy|pb]
 * [--threads N] [--bench N] [--profile] [--print] [--device cuda|cpu|simt|auto]` for `m`; a model with GPU
 * code runs on the GPU by default (auto), or on the CPU after one line on stderr saying why no GPU is usable; returns the process exit status: 0, 1 on bad input (one
 * line `<prog>: error: <what>` on stderr), 2 on bad usage. Outputs are written only with --output-dir;
 * without it and without --bench, --print is implied. A model of m->n_ranks > 1 runs under `mpirun -np N`
 * (frt_coll_init): rank 0 reads the inputs and broadcasts them, every rank runs, rank 0 writes and prints;
 * a rank's own error reads `rank K: <prog>: error: <what>`, and one during a run ends every rank. */
int frt_main(int argc, char **argv, const FrtModel *m);
/* The help lines of frt_main's options (FILE, --input, ... --print), one option a line. */
extern const char frt_run_options_help[];

#ifdef __cplusplus
}
#endif

#endif /* FLOWRT_H */
