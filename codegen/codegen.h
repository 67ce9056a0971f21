/* codegen.h — flowc's code generator: one internal header for codegen/, one section per file.
 *
 * A module becomes one LLVM module:
 *   - each constant becomes a private global (64-byte aligned) holding its bytes, or, stored in 16 bits
 *     (flow.storage), a 16-bit copy and an f32 buffer it is expanded into once (cg_weights_once.c);
 *   - each op with a kernel becomes an internal function `void kN(ptr ctx, i64 begin, i64 end)` whose
 *     ctx points at an array of buffer pointers (operands first, then results) and which computes the
 *     op's outer iterations [begin, end) — the shape of FrtTaskFn, so the run function hands it straight
 *     to frt_parallel_for (runtime/flowrt.h);
 *   - `flowc_run(ptr inputs, ptr outputs, ptr workspace, ptr pool)` computes every value's address from
 *     the memory plan (passes/memplan.h): caller input/output buffers, workspace offsets, constant
 *     globals, aliases — and calls the kernels in op order;
 *   - `flowc_model`, an FrtModel describing inputs, outputs, workspace size and the run function.
 * The module is optimised with LLVM's new pass manager and then either emitted as an object (AOT:
 * cg_emit.c, linked with libflowrt into an executable or archived into a library) or JIT-compiled with
 * ORC (cg_jit.c) for `flowc run` and `flowc check`.
 *
 * Kernels are generated code: one emitter per op family (kernel_*.c), chosen through the table in
 * kernels.def. An emitter sees an FcKernel: the op, an IRBuilder positioned in the kernel function's
 * entry, the buffer pointers, and the [begin, end) range; it first declares how many outer iterations the
 * op has (fc_kernel_set_outer) and then emits loops over its iterations in [begin, end).
 *
 * The target is a description resolved once (target.h: FcTarget), which every emitter asks through
 * FcKernel.target; target kinds are rows of a table, so NVPTX plugs in later beside the CPU.
 */
#ifndef FLOWC_CODEGEN_H
#define FLOWC_CODEGEN_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "ew_program.h"
#include "ir.h"
#include "target.h"

/* ---- target.c: targets ------------------------------------------------------------------------- */

/* The description (target.h) resolved through LLVM: its target machine, which codegen uses for the
 * module's data layout, LLVM's pipeline and the object file. Owned by the description. */
LLVMTargetMachineRef fc_target_tm(const FcTarget *t);
/* target_llvm.cpp: the features LLVM enables for the machine's CPU and feature string, comma-separated
 * ("avx,avx2,fma,"), malloc'd (NULL when out of memory). */
char *fc_llvm_tm_features(LLVMTargetMachineRef tm);

/* ---- cg_module.c: module → LLVM module ---------------------------------------------------------- */

typedef struct FcCg FcCg; /* per-module codegen state (private to cg_module.c; emitters use accessors) */

/* Builds the LLVM module for `m` (which must verify; run the pipeline first) in `ctx`. Ops without a
 * kernel fail with FC_ERR_UNSUPPORTED naming every such op kind once. */
FcStatus fc_codegen_module(FcModule *m, const FcCodegenOptions *o, LLVMContextRef ctx, const FcTarget *target,
                           LLVMModuleRef *out, FcDiag *diag);
/* Runs LLVM's default<O0..3> pipeline for the target machine. */
FcStatus fc_codegen_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, int opt_level, FcDiag *diag);
/* Gives every function defined in mod that names no CPU of its own tm's CPU and features ("target-cpu",
 * "target-features"), so that another target machine generating its code — the one object of a
 * multiversioned artefact, the JIT's host machine — still selects instructions for tm's CPU. */
void fc_codegen_stamp_target(LLVMModuleRef mod, LLVMTargetMachineRef tm);

/* ---- cg_emit.c: objects, executables, libraries --------------------------------------------------- */

FcStatus fc_emit_object(LLVMModuleRef mod, LLVMTargetMachineRef tm, const char *path, FcDiag *diag);
/* Links a model's objects (objs[0] the one with its entry points, then a multiversioned model's other CPU
 * variants) with libflowrt (and the runtime's main) into an executable needing only libc, libm and
 * libpthread; links them with all of libflowrt into a shared library needing only those (--emit so);
 * writes a static library (the objects + libflowrt members) and a C header for --emit lib. */
FcStatus fc_link_executable(const char *const *objs, int n_objs, const char *out, FcDiag *diag);
FcStatus fc_link_shared_library(const char *const *objs, int n_objs, const char *out, FcDiag *diag);
FcStatus fc_write_library(const char *const *objs, int n_objs, const char *out_archive, const char *header,
                          const char *name, FcModule *m, FcDiag *diag);

/* ---- cg_jit.c: in-process compilation ------------------------------------------------------------- */

typedef struct FcJit FcJit;
/* JIT-compiles the module (takes ownership of mod and its context); runtime symbols (frt_*) resolve to
 * the ones linked into flowc. */
FcStatus fc_jit_create(LLVMModuleRef mod, LLVMContextRef ctx, FcJit **out, FcDiag *diag);
const struct FrtModel *fc_jit_model(FcJit *j); /* the `flowc_model` descriptor (NULL for a module without one) */
/* The address of symbol `name` of the JIT's module (compiling it on first use); NULL with a message. */
void *fc_jit_lookup(FcJit *j, const char *name, FcDiag *diag);
void fc_jit_destroy(FcJit *j);

/* ---- kernels: what an emitter sees ---------------------------------------------------------------- */

typedef struct FcKernel {
  FcCg *cg;
  FcOp *op;
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;       /* positioned in the kernel function, after the buffer loads */
  LLVMValueRef fn;        /* the kernel function */
  const FcTarget *target; /* what to generate for: ask it, never the triple (target.h) */
  LLVMValueRef *in;       /* operand buffer pointers (ptr), op->n_operands (NULL for absent optional) */
  LLVMValueRef *out;      /* result buffer pointers (ptr), op->n_results */
  LLVMValueRef begin, end; /* i64: the outer iterations this call computes */
  int64_t outer;          /* set with fc_kernel_set_outer before emitting loops (default 1) */
  double work_per_outer;  /* estimated scalar operations per outer iteration (for the parallel cut-off) */
  FcDiag *diag;
} FcKernel;

typedef FcStatus (*FcKernelFn)(FcKernel *k);

/* The number of outer iterations (parallelised over the thread pool) and the work in each. */
void fc_kernel_set_outer(FcKernel *k, int64_t outer, double work_per_outer);

/* Scratch memory private to the calling task (one chunk of the kernel's parallel loop, which runs on
 * one thread): at least `bytes` bytes, 64-byte aligned, contents undefined on entry, valid until the
 * kernel returns. Call at most once per kernel, from the entry block (before any loop). The model's
 * workspace holds FC_CG_SCRATCH_SLOTS slots of the largest request after the planned blocks; a kernel
 * that asks for scratch is split into at most that many chunks (runtime: frt_parallel_for_max), so it
 * uses at most 16 threads. Sixteen keeps the workspace small (slots beyond the thread count are never
 * touched, but a library caller allocates them all): ResNet-18's is ~15 MB. */
#define FC_CG_SCRATCH_SLOTS 16
LLVMValueRef fc_kernel_scratch(FcKernel *k, int64_t bytes);

/* Asks for one chunk per thread (instead of the pool's several): for a kernel that keeps state across
 * the iterations of one call (a packed operand reused by consecutive iterations). */
void fc_kernel_one_chunk_per_thread(FcKernel *k);
/* fc_kernel_one_chunk_per_thread, and the state key of such a kernel: an i64 slot (entry-block alloca)
 * holding -1 until the kernel stores the key of what it built (a packed operand it keeps for the
 * following iterations while their key matches). */
LLVMValueRef fc_kernel_cached_key(FcKernel *k);

/* True when operand i already lies in its place in the result (a concat operand its own op computed
 * straight into its slice: passes/memplan.h), so the kernel must not copy it. */
bool fc_kernel_operand_in_result(const FcKernel *k, int i);

/* Substitutes a re-laid-out copy of constant operand i (packed GEMM panels, Winograd-transformed
 * filters: a global made with fc_cg_const_bytes) for the operand itself: the run function passes
 * `global` in the operand's ctx slot, and the returned pointer (the kernel's k->in[i]) is how the kernel
 * must read it. The kernel's code then names no per-op global, so ops of the same shape share one
 * kernel function (cg_module.c), and the original constant is dropped from the binary when nothing else
 * uses it. Operands 0..63 only. */
LLVMValueRef fc_kernel_substitute_operand(FcKernel *k, int i, LLVMValueRef global);

/* A private constant global (64-byte aligned) holding `nbytes` bytes copied from data: weights that a
 * kernel re-laid-out at compile time (packed GEMM panels, Winograd-transformed filters). */
LLVMValueRef fc_cg_const_bytes(FcKernel *k, const void *data, size_t nbytes, const char *name);
/* fc_cg_const_bytes for a quantised kernel's packed constant whose first `head` bytes come from its weights
 * (operand 1) alone and the rest from the op (corrections, multipliers: its activations' scales). Where other
 * convs or matmuls read the same weights (layers that share them: ALBERT, an unrolled recurrence), the head
 * and the rest become two constants, identical heads merging into one, copied into a zeroed buffer
 * before the first run (cg_weights_once.c), so that the artefact stores shared weights once. */
LLVMValueRef fc_cg_packed_weights_bytes(FcKernel *k, const void *data, size_t nbytes, size_t head, const char *name);
/* The same for `count` f32 values made from the constant `src` (packed, re-laid-out or transformed
 * weights), stored the way src's flow.storage annotation says (fc_op_storage_dtype): in 16 bits, the
 * global then being an f32 buffer filled before the model's first run (cg_weights_once.c), or as f32. */
LLVMValueRef fc_cg_const_f32(FcKernel *k, const FcValue *src, const float *data, size_t count, const char *name);
/* A zeroed buffer of dst_bytes (no file size) that the runtime function `fn` fills before the model's first
 * run, as fn(dst, src, params) with src a private constant of src_bytes copied from `src` and params one of
 * n_params i64 (cg_weights_once.c): weights whose transformed form is larger than what it is made from
 * (the integer Winograd kernel's U, 4 or 8 bytes a weight, from the weights' 1). fn must be one of the
 * runtime's (flowrt.h) and known to the JIT (cg_jit.c). */
LLVMValueRef fc_cg_derived_bytes(FcKernel *k, const char *fn, const void *src, size_t src_bytes, size_t dst_bytes,
                                 const int64_t *params, int n_params, const char *name);

#define FC_KERNEL(kind, fn) FcStatus fn(FcKernel *k);
#include "kernels.def"
#undef FC_KERNEL

/* Convolution strategies, chosen by fc_kernel_conv (kernel_nn.c) per op. Each `_applies` is a pure
 * compile-time test of the op (shapes, attributes, dtype) and the target. */
bool fc_conv_depthwise_applies(const FcKernel *k); /* kernel_dwconv.c: group == C == M, f32 */
FcStatus fc_conv_depthwise(FcKernel *k);
/* flow.conv_blocked strategies, chosen by fc_kernel_conv_blocked (kernel_nn.c). */
bool fc_conv_blocked_depthwise_applies(const FcKernel *k); /* kernel_dwconv_blocked.c: group == C == M, f32 */
FcStatus fc_conv_blocked_depthwise(FcKernel *k);
/* kernel_conv_blocked.c: group == 1, f32, blocked or plain x, constant weights */
bool fc_conv_blocked_dense_applies(const FcKernel *k);
FcStatus fc_conv_blocked_dense(FcKernel *k);
/* kernel_fused_lut.c: flow.fused whose value is an exactly computed function of one byte, as a table lookup
 * (where the target has AVX-512 VBMI); fc_kernel_fused asks it first. False, with nothing emitted, where it
 * does not apply. */
bool fc_fused_lut(FcKernel *k);
/* Pool strategy, chosen by fc_kernel_pool (kernel_nn.c): kernel_pool.c, f32 1-D/2-D max_pool without
 * indices and avg_pool, vectorised along the output width. */
bool fc_pool_window_applies(const FcKernel *k);
FcStatus fc_pool_window(FcKernel *k);
/* kernel_pool_blocked.c: the same f32 pools over NCHW8c, [N, C/8, H, W, 8] with a third spatial dim of kernel 1 */
bool fc_pool_blocked_applies(const FcKernel *k);
FcStatus fc_pool_blocked(FcKernel *k);
bool fc_conv_winograd_applies(const FcKernel *k);  /* kernel_winograd.c: 2-D 3×3, stride 1, dilation 1, group 1, f32 */
FcStatus fc_conv_winograd(FcKernel *k);
bool fc_conv_few_pixels_applies(const FcKernel *k); /* kernel_conv_few_pixels.c: a small output image, transposed */
FcStatus fc_conv_few_pixels(FcKernel *k);
bool fc_conv_gemm_applies(const FcKernel *k);      /* kernel_conv_gemm.c: 2-D, group 1, f32: implicit im2col GEMM */
FcStatus fc_conv_gemm(FcKernel *k);
/* Matrix products: f32 through the packed GEMM (kernel_matmul.c); other dtypes use the loop nest. */
bool fc_matmul_gemm_applies(const FcKernel *k);
FcStatus fc_matmul_gemm(FcKernel *k);
/* kernel_matmul_i8.c: u8 A × constant i8 2-D B → i32 on x86 (vpdpbusd, vpmaddubsw or vpmaddwd). */
bool fc_matmul_i8_applies(const FcKernel *k);
FcStatus fc_matmul_i8(FcKernel *k);
/* kernel_matmul_amx.c: the same on AMX tiles (targets with AMX-INT8; u8 A, K a multiple of 4). */
bool fc_matmul_amx_applies(const FcKernel *k);
FcStatus fc_matmul_amx(FcKernel *k);
/* kernel_conv_i8.c: quantised 1-D/2-D conv (qspec §2) with at least mr/2 channels per group on x86, as an
 * integer GEMM over im2col blocks with the requantisation in the store. Other quantised convs take the
 * direct loop nest of kernel_nn.c. */
bool fc_conv_i8_applies(const FcKernel *k);
FcStatus fc_conv_i8(FcKernel *k);
bool fc_conv_i8_winograd_applies(const FcKernel *k); /* kernel_conv_i8_winograd.c: 3×3 stride 1 on AVX2 */
FcStatus fc_conv_i8_winograd(FcKernel *k);
/* kernel_conv_i8_few_pixels.c: such a conv on a small output map (7×7) with the output channels in the
 * vector lanes, where that pads its tiles less (the shape decides; AMX targets keep their tiles). */
bool fc_conv_i8_few_pixels_applies(const FcKernel *k);
FcStatus fc_conv_i8_few_pixels(FcKernel *k);
/* kernel_dwconv_i8.c: quantised depthwise 1-D/2-D conv (group == C, any channel multiplier) on x86, vectorised
 * over the output pixels of a row with vpmaddwd on pairs of taps (fc_target_i8_depthwise). */
bool fc_conv_dw_i8_applies(const FcKernel *k);
FcStatus fc_conv_dw_i8(FcKernel *k);
/* The quantised flow.conv_blocked of passes/layout_i8.c (block 8), or an error naming what the kernel lacks:
 * depthwise (kernel_dwconv_i8_channels.c: input blocked or NCHW) and 1x1 (kernel_matmul_i8.c: the integer GEMM
 * over each image's pixels, reading and writing blocks of 8 channels). */
FcStatus fc_conv_dw_i8_blocked(FcKernel *k);
FcStatus fc_matmul_i8_blocked(FcKernel *k);

/* ---- cg_util.c: helpers every emitter uses ------------------------------------------------------- */

LLVMTypeRef fc_cg_i64(FcKernel *k);
LLVMValueRef fc_cg_const_i64(FcKernel *k, int64_t v);
/* The constant c in every lane of vector type ty (c itself when ty is a scalar type). */
LLVMValueRef fc_cg_splat_const(LLVMTypeRef ty, LLVMValueRef c);
/* The value of a one-element constant of dtype dt as an LLVM constant of its compute type, or NULL (another
 * dtype, more elements, bool): scalars such as clip bounds then cost no load, and LLVM folds them into the
 * instructions that use them. */
LLVMValueRef fc_cg_immediate(FcKernel *k, FcDtype dt, const FcTensor *t);
/* The run-time scalar v in each of n lanes (v itself when n == 1). */
LLVMValueRef fc_cg_splat(FcKernel *k, LLVMValueRef v, unsigned n);
/* Integer shortcuts for index arithmetic in loop nests (signed min/max; imulc returns a for c == 1). */
LLVMValueRef fc_cg_iadd(FcKernel *k, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef fc_cg_isub(FcKernel *k, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef fc_cg_imul(FcKernel *k, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef fc_cg_imulc(FcKernel *k, LLVMValueRef a, int64_t c);
LLVMValueRef fc_cg_smin(FcKernel *k, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef fc_cg_smax(FcKernel *k, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef fc_cg_select(FcKernel *k, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b);
/* The LLVM type kernels compute `dt` in: f16/bf16 compute in float; bool is i8 in memory and i1 in
 * registers; other ints their width; f32/f64 themselves. */
LLVMTypeRef fc_cg_compute_type(FcKernel *k, FcDtype dt);
LLVMTypeRef fc_cg_storage_type(FcKernel *k, FcDtype dt); /* in memory: half→i16, bf16→i16, bool→i8 */
/* Element `index` (i64) of buffer `base` with dtype dt: address, load (converted to the compute type),
 * store (converted from the compute type). f16/bf16 conversions are emitted inline (round to nearest
 * even), never as library calls. */
LLVMValueRef fc_cg_gep(FcKernel *k, FcDtype dt, LLVMValueRef base, LLVMValueRef index);
LLVMValueRef fc_cg_load(FcKernel *k, FcDtype dt, LLVMValueRef base, LLVMValueRef index);
void fc_cg_store(FcKernel *k, FcDtype dt, LLVMValueRef base, LLVMValueRef index, LLVMValueRef v);
/* Converts a computed value between dtypes with ONNX Cast semantics (float→int truncates toward zero,
 * saturating, NaN→0; →bool is x != 0). */
LLVMValueRef fc_cg_convert(FcKernel *k, LLVMValueRef v, FcDtype from, FcDtype to);

/* Counted loops: for (i = lo; i < hi; i += step). fc_cg_loop_begin returns the induction variable and
 * leaves the builder in the body; fc_cg_loop_end closes it (the builder continues after the loop). */
typedef struct FcLoop {
  LLVMBasicBlockRef header, body, latch, exit;
  LLVMValueRef iv, next;
  LLVMValueRef step;
} FcLoop;
LLVMValueRef fc_cg_loop_begin(FcKernel *k, FcLoop *l, LLVMValueRef lo, LLVMValueRef hi, int64_t step, const char *name);
void fc_cg_loop_end(FcKernel *k, FcLoop *l);

/* Row-major strides of a type, and the strides of an operand broadcast to a result shape (0 on
 * broadcast dims), both in elements; arrays of rank entries in `a`. */
const int64_t *fc_cg_strides(FcArena *a, const FcType *t);
const int64_t *fc_cg_broadcast_strides(FcArena *a, const FcType *operand, const FcType *result);

/* Run-time data errors (an index out of range): where `bad` (i1) is true, records the failure in the
 * run's status word so flowc_run returns 1 + this kernel's index; the kernel must still not touch memory
 * out of bounds (clamp or skip after flagging). */
void fc_cg_flag_error(FcKernel *k, LLVMValueRef bad);

/* Small emit helpers shared by the kernel emitters. */
/* A node-level error for the kernel's op (FcDiag), returning st. */
FcStatus fc_cg_error(FcKernel *k, FcStatus st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A call of an intrinsic overloaded on one type ty (llvm.fmuladd, ...), or not overloaded (ty NULL:
 * llvm.x86.avx512.vpdpbusd.512, ...). */
LLVMValueRef fc_cg_intrinsic(FcKernel *k, const char *name, LLVMTypeRef ty, LLVMValueRef *args, unsigned n);
/* Masked vector load / store (alignment 4): lanes with a false mask bit are not accessed; loads give
 * `passthru` there. */
LLVMValueRef fc_cg_masked_load(FcKernel *k, LLVMTypeRef vt, LLVMValueRef p, LLVMValueRef mask, LLVMValueRef passthru);
void fc_cg_masked_store(FcKernel *k, LLVMValueRef v, LLVMValueRef p, LLVMValueRef mask);
/* The vectors v[0 .. n) of one type (n a power of two), one after the other in one vector; v is overwritten. */
LLVMValueRef fc_cg_concat(FcKernel *k, LLVMValueRef *v, int n);
/* The first n lanes of vector v stored at p (n known here, at most v's lanes), as plain stores of pieces of
 * halving powers of two (14 lanes: 8, 4, 2): what a masked store of a constant prefix becomes where the target
 * has no masked store of v's elements (bytes on AVX2, which LLVM otherwise scalarises lane by lane). */
void fc_cg_store_prefix(FcKernel *k, LLVMValueRef v, LLVMValueRef p, unsigned n);
/* Outer iteration o (i64) of a loop over rows of `inner` elements, each cut into nchunks chunks of `chunk`:
 * the row, and the chunk's element range [*lo, *hi) (the whole row when nchunks is 1). */
void fc_cg_row_chunk(FcKernel *k, LLVMValueRef o, int64_t inner, int64_t chunk, int64_t nchunks, LLVMValueRef *row,
                     LLVMValueRef *lo, LLVMValueRef *hi);
/* a * b + c in the compute type: llvm.fmuladd for floats, wrapping integer arithmetic otherwise. */
LLVMValueRef fc_cg_madd(FcKernel *k, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c);
/* An alloca (64-byte aligned) in the function's entry block, so LLVM treats it as a fixed stack slot. */
LLVMValueRef fc_cg_entry_alloca(FcKernel *k, LLVMTypeRef t, const char *name);
/* A stack tile of n (at least 1) elements of type t, and the address of element i. */
LLVMValueRef fc_cg_tile_new(FcKernel *k, LLVMTypeRef t, int64_t n, const char *name);
LLVMValueRef fc_cg_tile_at(FcKernel *k, LLVMTypeRef t, LLVMValueRef tile, LLVMValueRef i);
/* A private constant global array of the n constants vals of type t (vals must have room for one
 * element when n == 0: an empty table holds one zero); an equal table made before is returned instead. */
LLVMValueRef fc_cg_const_table(FcKernel *k, LLVMTypeRef t, LLVMValueRef *vals, int64_t n, const char *name);
/* A private constant i64 table; elements are read with fc_cg_load(k, FC_DT_I64, table, i). */
LLVMValueRef fc_cg_i64_table(FcKernel *k, const int64_t *v, int64_t n, const char *name);
/* shufflevector of a and b (equal types; b NULL: undef) with the constant mask idx[0 .. n), n <= 256. */
LLVMValueRef fc_cg_shuffle(FcKernel *k, LLVMValueRef a, LLVMValueRef b, const int *idx, int n);
/* dst[j] = v (a byte) for j in [lo, hi) (i64), a byte loop LLVM turns into a memset. */
void fc_cg_fill_bytes(FcKernel *k, LLVMValueRef dst, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef v);
/* if (cond) { ... }: fc_cg_if_begin leaves the builder in the then-block and returns the join block,
 * fc_cg_if_end branches to it and continues there. */
LLVMBasicBlockRef fc_cg_if_begin(FcKernel *k, LLVMValueRef cond);
void fc_cg_if_end(FcKernel *k, LLVMBasicBlockRef cont);
/* Splits a row-major linear index into coordinates over dims[0..n) (the last varies fastest); the
 * first coordinate takes what is left, so lin need not be reduced modulo the product. */
void fc_cg_unflatten(FcKernel *k, LLVMValueRef lin, const int64_t *dims, int n, LLVMValueRef *coord);

/* A matmul's batch strides, in matrices, of operands a and b over the result's nb = rank - 2 batch dims
 * (NumPy broadcasting: size-1 or missing dims have stride 0); *na, *nb_out: the matrices each holds. */
void fc_cg_matmul_batch_strides(const FcType *a, const FcType *b, const FcType *r, int64_t *as, int64_t *bs,
                                int64_t *na, int64_t *nb_out);

/* Stand-in ops for the steps of an element-wise program (ew_program.h), for fc_cg_scalar_op: each step's
 * kind with scalar operands and result of dtype dt. fc_cg_program_steps builds them (in the module's
 * arena) and checks every step against its op's inference hook, so a hand-made module with a step the
 * dtype does not allow (sqrt on i32) is an error naming the op ("<what> step N ...") rather than an
 * assertion in the emitter. */
typedef struct FcCgStep {
  FcOp op;
  FcUse uses[FC_EW_MAX_ARGS];
  FcValue args[FC_EW_MAX_ARGS];
  FcValue res;
} FcCgStep;
FcStatus fc_cg_program_steps(FcKernel *k, const FcEwProgram *p, FcDtype dt, const char *what, FcCgStep **out);

/* Scalar element-wise computation of an op kind on compute-type values (shared by the element-wise
 * kernel and, later, fusion): x, y, z as the op needs; dt is the operands' dtype. */
LLVMValueRef fc_cg_scalar_op(FcKernel *k, const FcOp *op, FcDtype dt, LLVMValueRef x, LLVMValueRef y, LLVMValueRef z);

/* ---- cg_reduce.c: what the CPU and GPU reductions share ------------------------------------------- */

typedef enum FcAccKind { FC_ACC_SUM, FC_ACC_PROD, FC_ACC_MAX, FC_ACC_MIN } FcAccKind;

/* A reduce_* op: its accumulator, and its input dims merged into ng runs of kept or reduced dims (sizes gd,
 * strides gs, gr: reduced), listed as kept[0..nk) and red[0..nr) (outermost first). */
typedef struct FcReducePlan {
  FcDtype dt;
  FcDtypeClass cls;   /* bool as uint: max/min of i1 are or/and */
  FcAccKind kind;
  bool mean;
  const FcQuant *xq, *yq; /* a quantised mean (ops.def): the operand's and the result's parameters, else NULL */
  LLVMTypeRef at;     /* accumulator type (the integer mean: i64) */
  int64_t count;      /* elements per output */
  int64_t n_out;      /* outputs */
  int ng, nk, nr;
  int64_t *gd, *gs;
  bool *gr;
  int *kept, *red;
} FcReducePlan;
FcStatus fc_cg_reduce_plan(FcKernel *k, FcReducePlan *r);
/* off + the offset of flat index `flat` decomposed over runs g[0..n) of r (outermost first). */
LLVMValueRef fc_cg_reduce_offset(FcKernel *k, const FcReducePlan *r, LLVMValueRef off, LLVMValueRef flat,
                                 const int *g, int n);
/* The identity of an accumulator, and one step of it (float sums and products reassociable when asked: the
 * CPU's vectorised loops; NaN-propagating max/min). */
LLVMValueRef fc_cg_acc_init(FcAccKind kind, FcDtypeClass cls, LLVMTypeRef t);
LLVMValueRef fc_cg_acc_step(FcKernel *k, FcAccKind kind, FcDtypeClass cls, LLVMValueRef acc, LLVMValueRef v,
                            bool reassociate);
/* Input element idx as an accumulator value; the finished accumulator of output idx stored (a mean divided). */
LLVMValueRef fc_cg_reduce_load(FcKernel *k, const FcReducePlan *r, LLVMValueRef idx);
void fc_cg_reduce_store(FcKernel *k, const FcReducePlan *r, LLVMValueRef idx, LLVMValueRef acc);
/* kernel_reduce_minmax.c: the max (min) of the n f32 input elements from index base, as llvm.maximum
 * (minimum) would fold them: NaN if any is NaN, -0 below +0. */
LLVMValueRef fc_cg_reduce_minmax_f32(FcKernel *k, bool is_max, LLVMValueRef base, int64_t n);

#endif /* FLOWC_CODEGEN_H */
