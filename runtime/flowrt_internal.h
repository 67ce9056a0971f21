/* flowrt_internal.h — what libflowrt's files share and its users never see; one section per .c file.
 *
 * The runtime is little-endian only (x86-64 and AArch64, the targets flowc emits code for): tensor files
 * store little-endian data and the readers hand bytes straight to generated code.
 */
#ifndef FLOWRT_INTERNAL_H
#define FLOWRT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flowrt.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libflowrt assumes a little-endian target"
#endif

#if defined(__GNUC__) || defined(__clang__)
#define FRT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define FRT_PRINTF(f, a)
#endif

/* Buffers handed to generated code (tensor data, workspace) are aligned for the widest vector loads. */
#define FRT_ALIGN 64

/* ---- util.c ----------------------------------------------------------------------------------------- */

/* Fills err (when not NULL) with one line — control characters (a newline in a path) become '?' — and
 * returns st. */
FrtStatus frt_errorf(FrtError *err, FrtStatus st, const char *fmt, ...) FRT_PRINTF(3, 4);
/* Makes s one line in place: control characters and DEL become '?'. */
void frt_one_line(char *s);
/* A collective backend's failure: formats one line into msg (cap bytes) and returns -1, the backends'
 * failure value (coll_mpi.c, coll_nccl.c). */
int frt_coll_fail(char *msg, size_t cap, const char *fmt, ...) FRT_PRINTF(3, 4);

bool frt_mul_overflows(size_t a, size_t b, size_t *out);
bool frt_add_overflows(size_t a, size_t b, size_t *out);
/* Bytes of a dense tensor; false when a dim is negative or the product does not fit in size_t/int64. */
bool frt_dense_nbytes(FrtDtype dt, int32_t rank, const int64_t *dims, size_t *nbytes);
/* FRT_ALIGN-aligned allocation of at least n bytes (at least FRT_ALIGN); free with free(). */
void *frt_alloc_aligned(size_t n);
/* "tensor<2x3xf32>" (rank 0: "tensor<f32>"); always NUL-terminated, truncated to cap. */
void frt_format_type(char *buf, size_t cap, FrtDtype dt, int32_t rank, const int64_t *dims);
float frt_f16_to_f32(uint16_t h);
float frt_bf16_to_f32(uint16_t h);

/* ---- npy.c ------------------------------------------------------------------------------------------ */

/* Parses a whole .npy file held in buf (FRT_ALIGN-aligned, len bytes, owned by the caller). On success
 * out->data is buf itself, the array moved to its front (the caller must not free buf then). */
FrtStatus frt_npy_parse(const char *path, uint8_t *buf, size_t len, FrtTensor *out, FrtError *err);
/* The v1 header numpy writes for t (magic to newline); returns its length, 0 if cap is too small. */
size_t frt_npy_header(const FrtTensor *t, char *buf, size_t cap);

/* ---- pb.c ------------------------------------------------------------------------------------------- */

/* Parses a serialised ONNX TensorProto held in buf (FRT_ALIGN-aligned, owned by the caller). On success
 * out->data is either buf (raw_data moved to its front) or a new allocation (typed fields decoded). */
FrtStatus frt_pb_parse(const char *path, uint8_t *buf, size_t len, FrtTensor *out, FrtError *err);
/* Serialises the TensorProto header of t (dims, data_type, name, raw_data's key and length) into buf;
 * the raw bytes follow it in the file. Returns the length, 0 if cap is too small. */
size_t frt_pb_header(const FrtTensor *t, const char *name, uint8_t *buf, size_t cap);

/* ---- cpu.c ------------------------------------------------------------------------------------------ */

/* Index of feature name[0..len) in cpu_features.def (bit i of a host set), or -1. */
int frt_cpu_feature_index(const char *name, size_t len);
/* This CPU's features as a bit set over cpu_features.def (0 on other architectures). */
uint64_t frt_cpu_host_features(void);
/* How many features of the comma-separated `required` list are not in the set `have` (names this
 * runtime does not know are not counted); their names, ", "-separated, go to out (cap bytes). */
int frt_cpu_missing(const char *required, uint64_t have, char *out, size_t cap);

/* ---- io.c ------------------------------------------------------------------------------------------- */

/* Validates a caller-built tensor before writing (dtype, rank, dims, nbytes, data). */
FrtStatus frt_tensor_check(const char *path, const FrtTensor *t, FrtError *err);

/* ---- coll.c / coll_mpi.c ---------------------------------------------------------------------------- */

/* A collectives backend: a table of functions over opaque group handles, as ggml's backends are, so that
 * coll.c (groups per mesh axis, argument checks, messages, the watchdog) stays the same for MPI and, later,
 * NCCL. coll.c has checked every argument (dtype known, count >= 0, buffers, root and peer in range, a group
 * of more than one member) before it calls one; each returns 0 or -1 with one line in msg (cap bytes), which
 * coll.c prefixes with the collective's name and group. Counts are in elements; buffers never overlap
 * except all_reduce's, which is in place. */
typedef struct FrtCollBackend {
  const char *name;
  /* Starts the backend for a job meant to have n_ranks ranks: this process's rank and the job's size, and
   * the group of all ranks (its order: the global rank). */
  int (*init)(int32_t n_ranks, int32_t *rank, int32_t *size, void **world, char *msg, size_t cap);
  /* The group of the ranks of `world` with the same color, ordered by key (MPI_Comm_split). Collective. */
  int (*split)(void *world, int32_t color, int32_t key, void **group, char *msg, size_t cap);
  int (*all_reduce)(void *group, void *buf, int64_t count, FrtDtype dt, FrtReduceOp op, char *msg, size_t cap);
  int (*all_gather)(void *group, const void *send, void *recv, int64_t count, FrtDtype dt, char *msg, size_t cap);
  int (*reduce_scatter)(void *group, const void *send, void *recv, int64_t count, FrtDtype dt, FrtReduceOp op,
                        char *msg, size_t cap);
  int (*all_to_all)(void *group, const void *send, void *recv, int64_t count, FrtDtype dt, char *msg, size_t cap);
  int (*broadcast)(void *group, void *buf, int64_t count, FrtDtype dt, int32_t root, char *msg, size_t cap);
  int (*send)(void *world, const void *buf, int64_t count, FrtDtype dt, int32_t peer, int32_t tag, char *msg,
              size_t cap);
  int (*recv)(void *world, void *buf, int64_t count, FrtDtype dt, int32_t peer, int32_t tag, char *msg,
              size_t cap);
  int32_t (*local_size)(void);  /* ranks of the job on this machine */
  int32_t (*launch_rank)(void); /* the rank the launcher gave this process, before init; -1: none */
  void (*finalize)(void);      /* releases the groups and ends the backend */
  void (*abort)(int status);   /* ends every rank of the job; does not return */
  /* Optional: copies bytes between two of the backend's buffers (a group of one member's all_gather, ...);
   * NULL: they are host memory and coll.c copies them itself. NCCL's are on the GPU. */
  int (*copy)(void *dst, const void *src, size_t bytes, char *msg, size_t cap);
  /* Optional: where this backend's buffers are device memory, the backend (and its world group) that
   * moves host memory among the same ranks, for frt_coll_host_*; NULL: this one. NCCL's is the MPI it
   * started on. */
  const struct FrtCollBackend *host;
  void *(*host_world)(void);
} FrtCollBackend;

/* The Open MPI backend (coll_mpi.c): host buffers. */
extern const FrtCollBackend frt_coll_mpi;
/* The NCCL backend (coll_nccl.c): device buffers, so only a GPU program's collectives use it. It starts MPI
 * (frt_coll_mpi) to bootstrap: rank 0's ncclGetUniqueId is broadcast over MPI, every rank binds the GPU of
 * its local rank (modulo the GPUs there) and joins with ncclCommInitRank; each mesh axis's group is an
 * ncclCommSplit of the world. Calls are queued on frt_coll_nccl_set_stream's stream (default: the legacy
 * default stream) and waited for, so each returns with its result in place, as MPI's do. */
extern const FrtCollBackend frt_coll_nccl;
void frt_coll_nccl_set_stream(void *stream); /* a CUstream of the GPU the rank is bound to */
/* While set, a failed start of the NCCL backend leaves MPI running (finalising it would forbid another
 * start), so that frt_coll_init can start the MPI backend instead: frt_main's --device auto on ranks
 * without a usable GPU. The ranks agree on NCCL's failure, so all of them fall back together. */
void frt_coll_nccl_keep_mpi(bool keep);
/* frt_main: keep the backend through a refused process count until frt_coll_end_refused (coll.c). */
void frt_coll_defer_refusal(bool defer);
void frt_coll_end_refused(void);
/* frt_main's own collectives over all ranks on host memory (agreeing on a status, broadcasting the inputs):
 * the backend's own, or its host backend's (NCCL: MPI). Same contract as frt_coll_all_reduce and
 * frt_coll_broadcast with axis -1. */
int frt_coll_host_all_reduce(void *buf, int64_t count, int32_t dtype, int32_t op);
int frt_coll_host_broadcast(void *buf, int64_t count, int32_t dtype, int32_t root);
/* frt_coll_init on a given backend: frt_coll_init is frt_coll_init_with(&frt_coll_mpi, ...); the GPU runner
 * starts a GPU program's collectives with &frt_coll_nccl. */
FrtStatus frt_coll_init_with(const FrtCollBackend *be, int32_t n_ranks, int32_t n_mesh_axes, const int32_t *mesh,
                             FrtError *err);
/* Clears this thread's frt_coll_last_error (frt_model_run does before each run, so a message after it
 * belongs to that run). */
void frt_coll_clear_error(void);
/* The rank the launcher (mpirun) gave this process, known before and without frt_coll_init: -1 when not
 * started by one. frt_main prints an error that every rank meets alike (no MPI library, the wrong number of
 * ranks) from rank 0 alone. */
int32_t frt_coll_launch_rank(void);

/* ---- coll_shm.c: the MPI backend's path among the ranks of one machine ------------------------------- */

/* The largest all_reduce that every rank of a segment reduces whole (coll_shm.c's top comment). */
#define FRT_SHM_REPLICATED_MAX_BYTES (8u << 10)

/* A group's shared segment (coll_shm.c's top comment has its layout and protocol), mapped by each member. */
typedef struct FrtShm {
  unsigned char *base; /* the mapping: NULL when none */
  size_t map_bytes;
  size_t slot_bytes;   /* one rank's slot in one of the two regions: a chunk's bytes, a multiple of 64 */
  int32_t rank, size;  /* this process's place in the group, and the group's size (>= 2) */
  uint64_t epoch;      /* barriers this rank has passed on the segment */
  uint64_t chunks;     /* chunks run: chunk k uses region k % 2 */
  bool crowded;        /* more ranks on the machine than CPUs: wait by yielding soon, not by spinning */
} FrtShm;

/* Bytes of a segment for `size` ranks and slots of slot_bytes; true on overflow. */
bool frt_shm_map_bytes(int32_t size, size_t slot_bytes, size_t *out);
/* Creates (create: O_EXCL, its pages reserved) or opens the POSIX shared-memory object `name` and maps it;
 * 0, or -1 with one line in msg. The creator unlinks it (frt_shm_unlink) once every member has mapped it. */
int frt_shm_map(FrtShm *s, const char *name, bool create, int32_t rank, int32_t size, size_t slot_bytes,
                bool crowded, char *msg, size_t cap);
void frt_shm_unlink(const char *name);
void frt_shm_unmap(FrtShm *s);
/* The collectives of FrtCollBackend on a segment, every member calling with the same arguments (no f16 or
 * bf16 reductions: the caller refuses them, as MPI does); they cannot fail (a member that never arrives is the watchdog's). Reductions in rank order on every rank. */
int frt_shm_all_reduce(FrtShm *s, void *buf, int64_t count, FrtDtype dt, FrtReduceOp op);
int frt_shm_all_gather(FrtShm *s, const void *send, void *recv, int64_t count, FrtDtype dt);
int frt_shm_reduce_scatter(FrtShm *s, const void *send, void *recv, int64_t count, FrtDtype dt, FrtReduceOp op);
int frt_shm_all_to_all(FrtShm *s, const void *send, void *recv, int64_t count, FrtDtype dt);
int frt_shm_broadcast(FrtShm *s, void *buf, int64_t count, FrtDtype dt, int32_t root);

/* ---- gpu_simt_mma.c --------------------------------------------------------------------------------- */

/* One warp's tensor-core mma (gpu_simt.h: frt_simt_mma, whose fragment layouts it implements): kind
 * FRT_SIMT_MMA_*, lane l's fragments a[l][4], b[l][2] and accumulators cd[l][4], updated in place. */
void frt_simt_warp_mma(int32_t kind, const uint32_t *const *a, const uint32_t *const *b, float *const *cd);

/* ---- gpu_simt_fiber.c ------------------------------------------------------------------------------- */

/* The fibers a SIMT block's threads run on (gpu_simt.c): fiber i runs fn(ctx, i), which never returns; it
 * gives the CPU back with frt_fiber_yield and gets it again from frt_fiber_resume. One OS thread at a time. */
typedef struct FrtFiberPool {
  void (*fn)(void *ctx, int32_t i); /* every fiber's function */
  void *ctx;
  bool use_ucontext;       /* makecontext/swapcontext instead of the hand-written switch */
  int32_t cap;             /* fibers with a stack */
  int32_t current;         /* the fiber running now, -1: the scheduler */
  bool *started;           /* per fiber: has a context to resume (frt_fiber_start since the last grow) */
  unsigned char *map;      /* cap slots of a guard page and a stack */
  size_t map_bytes, slot_bytes, guard_bytes, stack_bytes;
  void **sp;               /* hand-written switch: each fiber's saved stack pointer */
  void *sched_sp;          /* ... and the scheduler's */
  void *uc;                /* ucontext: ucontext_t[cap + 1], the last the scheduler's */
  bool from_scheduler;     /* the last switch was the scheduler's frt_fiber_resume */
  const void *sched_bottom; /* ASan: the scheduler's stack, learnt when it resumes a fiber */
  size_t sched_size;
} FrtFiberPool;

/* Reads $FLOWRT_SIMT_FIBERS (native | ucontext); no stacks yet. */
FrtStatus frt_fibers_init(FrtFiberPool *p, void (*fn)(void *ctx, int32_t i), void *ctx, FrtError *err);
/* At least n fibers. Growing replaces every stack: call it only between launches; every fiber then needs
 * frt_fiber_start again (started[] is cleared). */
FrtStatus frt_fibers_reserve(FrtFiberPool *p, int32_t n, FrtError *err);
/* (Re)starts fiber i at the beginning of fn, dropping whatever it was doing. */
FrtStatus frt_fiber_start(FrtFiberPool *p, int32_t i, FrtError *err);
/* Runs fiber i until it yields. */
void frt_fiber_resume(FrtFiberPool *p, int32_t i);
/* From inside the running fiber: back to the scheduler's frt_fiber_resume. */
void frt_fiber_yield(FrtFiberPool *p);
/* From inside the running fiber: straight to fiber `to` (started, not running), which runs until it yields
 * or switches in turn. */
void frt_fiber_switch(FrtFiberPool *p, int32_t to);
void frt_fibers_release(FrtFiberPool *p);

/* ---- gpu_cuda.c: the CUDA driver for the NCCL collectives ------------------------------------------- */

/* Loads the driver (FLOWRT_CUDA_LIBRARY as the GPU runner does) and makes the primary context of GPU
 * local_rank % (GPUs found) current, or the one $FLOWRT_CUDA_DEVICE names; 0, or -1 with one line in msg
 * ("no CUDA driver: ...", "cuInit: CUDA_ERROR_STUB_LIBRARY (...)", "no CUDA GPU found"). Once per process. */
int frt_cuda_bind_device(int32_t local_rank, char *msg, size_t cap);
/* Waits for a stream (a CUstream; NULL the legacy default one) of the bound GPU. */
int frt_cuda_stream_sync(void *stream, char *msg, size_t cap);
/* Copies device memory on the bound GPU and waits for it. */
int frt_cuda_copy(void *dst, const void *src, size_t bytes, void *stream, char *msg, size_t cap);
void frt_cuda_unbind_device(void);

#endif /* FLOWRT_INTERNAL_H */
