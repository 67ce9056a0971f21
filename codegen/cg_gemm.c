/* cg_gemm.c — the packed GEMM building blocks (cg_gemm.h): the target's blocking, host-side packing of
 * constant operands, and the microkernel functions.
 *
 * The microkernel is written directly as LLVM IR over vector types, so its register tile is exactly the
 * one chosen here rather than whatever the loop vectoriser would make of a loop nest: mr·nv accumulators
 * (<vl x float>) live in phis across the k loop; each k step loads nv vectors of the packed B sliver,
 * broadcasts mr scalars of the packed A sliver and issues mr·nv llvm.fmuladd calls (one FMA each where
 * the target has FMA; a multiply and an add where it has not, as on plain x86-64, where llvm.fma would be
 * a call of libm's fmaf per lane, far slower than the multiply and add it replaces). With mr·nv + nv + 1
 * registers no greater than the register file (6·2 + 3 = 15 of AVX2's 16; 14·2 + 3 = 31 of AVX-512's
 * 32), LLVM keeps the tile in registers (AVX-512 folds the broadcasts into the FMAs' memory operands). The
 * edge variant runs the full microkernel into a stack tile and copies the valid rows and columns in and
 * out, so partial tiles at the matrix's border never read or write outside C.
 *
 * Blocking: kc = 256 keeps an A sliver (mr·kc floats, 6 KiB) and a B sliver (nr·kc, 16 KiB) in a 32 KiB
 * L1; a packed B block of kc·nc floats (nc = 128: 128 KiB) sits in L2. Kernels pick their own m/n
 * blocks per shape (fc_gemm_arch gives the maxima).
 */
#include <stdlib.h>
#include <string.h>

#include "cg_epilogue.h"
#include "cg_gemm.h"

/* ---- arch ------------------------------------------------------------------------------------------------- */

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* The target's tile table (target.h) decides; the shapes are described at the top of cg_gemm.h. */
void fc_gemm_arch(const FcKernel *k, FcGemmArch *g) { fc_target_gemm_arch(k->target, g); }

/* Long K-blocks for products whose B is a packed constant and whose A each task packs once (activations ×
 * weights): K in blocks of at most MAX_KC_STREAMED_B, so each C tile is loaded and stored once per 1024 k
 * rather than once per 256. The B sliver (kc·nr floats, 64 KiB at kc = 1024) then lives in L2 and reaches
 * L1 through the microkernel's prefetch; the A slivers of an m-block (mc·kc floats) must share L2 with
 * it, so when M is split anyway, its blocks shrink to A_BLOCK_BYTES (a quarter of a 512 KiB L2).
 *
 * A B of STREAM_B_BYTES or more (a large Linear layer's weights) does not stay in cache between runs: each
 * m-block reads all of it from L3 or memory again, so there one m-block takes every row of M when their A
 * slice fits the budget with K-blocks no shorter than the arch's kc (they shorten until it does; taller
 * products keep the blocking above, whose B re-reads are a smaller share). The budget doubles with
 * 16-lane vectors: AVX-512 machines have 1-2 MiB of L2 a core (AVX2 ones 256 KiB-1 MiB). Then a 128-row
 * product (a transformer's tokens) reads each weight once a run, where two m-blocks of 70 read it twice. */
enum { MAX_KC_STREAMED_B = 1024, A_BLOCK_BYTES = 144 * 1024, STREAM_B_BYTES = 1024 * 1024 };

void fc_gemm_arch_stream_b(FcGemmArch *g, int64_t M, int64_t K, int64_t N) {
  int64_t budget = A_BLOCK_BYTES * (g->vl >= 16 ? 2 : 1), rows = round_up(M, g->mr);
  if (K * N >= STREAM_B_BYTES / 4 && rows > 0 && 4 * rows * (K < g->kc ? K : g->kc) <= budget) {
    int64_t kmax = budget / (4 * rows);
    if (kmax > MAX_KC_STREAMED_B) kmax = MAX_KC_STREAMED_B;
    if (K > g->kc) {
      int64_t blocks = (K + kmax - 1) / kmax;
      g->kc = (K + blocks - 1) / blocks;
    }
    g->mc = rows;
    return;
  }
  if (K <= g->kc) return;
  int64_t blocks = (K + MAX_KC_STREAMED_B - 1) / MAX_KC_STREAMED_B;
  g->kc = (K + blocks - 1) / blocks;
  if (M > g->mc) {
    int64_t panels = A_BLOCK_BYTES / (4 * g->kc * g->mr);
    if (panels < 1) panels = 1;
    if (panels * g->mr < g->mc) g->mc = panels * g->mr;
  }
}

void fc_gemm_arch_for_rows(const FcKernel *k, int64_t M, bool pow2_panels, FcGemmArch *g) {
  fc_target_gemm_arch_for_rows(k->target, M, pow2_panels, g);
}

/* ---- host packing --------------------------------------------------------------------------------------------- */

int64_t fc_gemm_packed_a_size(const FcGemmArch *g, int64_t M, int64_t K) { return round_up(M, g->mr) * K; }
int64_t fc_gemm_packed_b_size(const FcGemmArch *g, int64_t K, int64_t N) { return round_up(N, g->nr) * K; }

void fc_gemm_pack_a_host(const FcGemmArch *g, const float *A, int64_t M, int64_t K, int64_t rs, int64_t cs, float *dst) {
  int64_t mr = g->mr;
  for (int64_t p = 0; p < round_up(M, mr) / mr; p++)
    for (int64_t kk = 0; kk < K; kk++)
      for (int64_t i = 0; i < mr; i++) {
        int64_t row = p * mr + i;
        dst[(p * K + kk) * mr + i] = row < M ? A[row * rs + kk * cs] : 0.0f;
      }
}

void fc_gemm_pack_b_host(const FcGemmArch *g, const float *B, int64_t K, int64_t N, int64_t rs, int64_t cs, float *dst) {
  int64_t nr = g->nr;
  for (int64_t q = 0; q < round_up(N, nr) / nr; q++)
    for (int64_t kk = 0; kk < K; kk++)
      for (int64_t j = 0; j < nr; j++) {
        int64_t col = q * nr + j;
        dst[(q * K + kk) * nr + j] = col < N ? B[kk * rs + col * cs] : 0.0f;
      }
}

/* ---- microkernels ------------------------------------------------------------------------------------------------ */

/* The microkernel's type; `next` adds the streaming variant's last parameter (emit_ukr_body's pfn). */
static LLVMTypeRef ukr_type(FcKernel *k, bool next) {
  LLVMTypeRef i64 = fc_cg_i64(k), ptr = LLVMPointerTypeInContext(k->ctx, 0);
  LLVMTypeRef params[8] = {i64, ptr, ptr, ptr, i64, LLVMInt1TypeInContext(k->ctx), i64, ptr};
  return LLVMFunctionType(LLVMVoidTypeInContext(k->ctx), params, next ? 8 : 7, 0);
}

static LLVMTypeRef edge_type(FcKernel *k) {
  LLVMTypeRef i64 = fc_cg_i64(k), ptr = LLVMPointerTypeInContext(k->ctx, 0);
  LLVMTypeRef params[9] = {i64, ptr, ptr, ptr, i64, LLVMInt1TypeInContext(k->ctx), i64, i64, i64};
  return LLVMFunctionType(LLVMVoidTypeInContext(k->ctx), params, 9, 0);
}

static void add_fn_attrs(FcKernel *k, LLVMValueRef fn, bool inline_never) {
  const char *attrs[] = {"nounwind", inline_never ? "noinline" : "nounwind"};
  for (size_t i = 0; i < 2; i++) {
    unsigned kind = LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i]));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(k->ctx, kind, 0));
  }
  LLVMSetLinkage(fn, LLVMInternalLinkage);
}

/* A builder-state swap: emit into another function with the same FcKernel helpers, then restore. */
typedef struct Saved {
  LLVMBuilderRef b;
  LLVMValueRef fn;
} Saved;

static Saved enter_fn(FcKernel *k, LLVMValueRef fn) {
  Saved s = {k->b, k->fn};
  k->b = LLVMCreateBuilderInContext(k->ctx);
  k->fn = fn;
  LLVMPositionBuilderAtEnd(k->b, LLVMAppendBasicBlockInContext(k->ctx, fn, "entry"));
  return s;
}

static void leave_fn(FcKernel *k, Saved s) {
  LLVMDisposeBuilder(k->b);
  k->b = s.b;
  k->fn = s.fn;
}

static LLVMValueRef fptr(FcKernel *k, LLVMValueRef base, LLVMValueRef idx) {
  return LLVMBuildGEP2(k->b, LLVMFloatTypeInContext(k->ctx), base, &idx, 1, "");
}

enum { MAX_MR = 16, MAX_NV = 4, PREFETCH_K = 16 };

/* Independent accumulator sets over k: a tile of fewer than 8 vectors cannot cover the FMA latency with
 * its own chains, so small-mr kernels (matrix-vector products) keep `sets` copies of the tile, each
 * summing every sets-th k, and add them at the end. */
static int ukr_sets(int mr, int nv) {
  int chains = mr * nv, sets = 1;
  while (chains * sets < 8 && sets < 4) sets *= 2;
  return sets;
}

/* k steps per iteration of the microkernel's loop (at least `sets`). One step of the AVX2 6×16 tile is 20
 * instructions besides the loop's own three (two counter adds and a fused compare-and-branch) and the
 * prefetch: unrolled 4 times the loop issues 21.75 rather than 24 per 12 FMAs. That matters when the
 * core's other hardware thread is busy (as when virtual CPUs share cores with other guests): the two
 * threads then split the core's dispatch slots, and the FMAs wait on the front end rather than on the
 * FMA pipes. The bodies inlined into kernels (last K-block, finished in registers) unroll twice: they
 * are many (one per kernel and row count) and LLVM's time grows with them. */
enum { UKR_UNROLL = 4, UKR_UNROLL_INLINE = 2 };

/* llvm.prefetch of the line at p for reading or (write) for writing, into L1 (locality 3: prefetcht0) or
 * L2 (locality 2: prefetcht1). */
static void prefetch(FcKernel *k, LLVMValueRef p, bool write, int locality) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx), ptr = LLVMPointerTypeInContext(k->ctx, 0);
  unsigned id = LLVMLookupIntrinsicID("llvm.prefetch", strlen("llvm.prefetch"));
  LLVMTypeRef ov[1] = {ptr};
  LLVMValueRef pf = LLVMGetIntrinsicDeclaration(k->mod, id, ov, 1);
  LLVMTypeRef pft = LLVMIntrinsicGetType(k->ctx, id, ov, 1);
  LLVMValueRef args[4] = {p, LLVMConstInt(i32, write, 0), LLVMConstInt(i32, (unsigned long long)locality, 0),
                           LLVMConstInt(i32, 1, 0)};
  LLVMBuildCall2(k->b, pft, pf, args, 4, "");
}

/* Where ukr_step prefetches B, relative to the row it reads (floats, i64). Packed slivers are contiguous
 * and the hardware prefetcher streams them, so PREFETCH_K rows ahead covers a sliver's first pass. A B
 * read in place (ldb != nr) has one row per line, kc lines PREFETCH_K·ldb apart, which the hardware
 * does not follow, and the first PREFETCH_K rows of each sliver would miss: there, while kc is short,
 * the same row of the next panel (the next line) is fetched instead, a whole sliver (every row panel of
 * the block) ahead. Only up to kc = PREFETCH_NEXT_KC: beyond it the next sliver no longer fits L1 beside
 * the current one, so longer slivers keep the PREFETCH_K distance. */
enum { PREFETCH_NEXT_KC = 128 };

static LLVMValueRef prefetch_offset(FcKernel *k, const FcGemmArch *g, LLVMValueRef kc, LLVMValueRef ldb) {
  LLVMBuilderRef b = k->b;
  LLVMValueRef in_place = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntNE, ldb, fc_cg_const_i64(k, g->nr), ""),
                                       LLVMBuildICmp(b, LLVMIntSLE, kc, fc_cg_const_i64(k, PREFETCH_NEXT_KC), ""), "");
  return LLVMBuildSelect(b, in_place, fc_cg_const_i64(k, g->nr),
                         LLVMBuildMul(b, ldb, fc_cg_const_i64(k, PREFETCH_K), ""), "");
}

/* One k step into accumulator set s: acc[s] += A[kk, :] ⊗ B[kk, :]. */
static void ukr_step(FcKernel *k, const FcGemmArch *g, int mr, LLVMValueRef pa, LLVMValueRef pb, LLVMValueRef ldb,
                     LLVMValueRef pfoff, LLVMValueRef kk, LLVMValueRef *slots) {
  LLVMBuilderRef b = k->b;
  int vl = g->vl, nv = g->nr / g->vl;
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx), vt = LLVMVectorType(f32, (unsigned)vl);
  LLVMValueRef bv[MAX_NV];
  LLVMValueRef boff = LLVMBuildMul(b, kk, ldb, "");
  /* Software prefetch of B ahead (prefetch_offset): a sliver's first pass over kc (one per m panel loop)
   * reads it from L2 or L3, where the hardware prefetcher alone leaves the FMAs waiting. */
  prefetch(k, fptr(k, pb, LLVMBuildAdd(b, boff, pfoff, "")), false, 3);
  for (int j = 0; j < nv; j++) {
    LLVMValueRef l = LLVMBuildLoad2(b, vt, fptr(k, pb, LLVMBuildAdd(b, boff, fc_cg_const_i64(k, (int64_t)j * vl), "")), "b");
    LLVMSetAlignment(l, 4);
    bv[j] = l;
  }
  LLVMValueRef aoff = LLVMBuildMul(b, kk, fc_cg_const_i64(k, g->mr), ""); /* panels are g->mr wide */
  for (int i = 0; i < mr; i++) {
    LLVMValueRef a = LLVMBuildLoad2(b, f32, fptr(k, pa, LLVMBuildAdd(b, aoff, fc_cg_const_i64(k, i), "")), "a");
    LLVMValueRef av = fc_cg_splat(k, a, (unsigned)vl);
    for (int j = 0; j < nv; j++) {
      LLVMValueRef slot = slots[i * nv + j];
      LLVMValueRef args[3] = {av, bv[j], LLVMBuildLoad2(b, vt, slot, "")};
      LLVMBuildStore(b, fc_cg_intrinsic(k, "llvm.fmuladd", vt, args, 3), slot);
    }
  }
}

/* A tile's finishing function (the op's fused epilogue) on one accumulator vector at C(m, n .. n + vl). */
typedef struct UkrFinish {
  LLVMValueRef (*value)(FcKernel *k, void *user, LLVMValueRef v, LLVMValueRef m, LLVMValueRef n);
  void *user;
  LLVMValueRef m, n; /* the tile's first row and column in C (i64) */
} UkrFinish;

/* Streaming a constant B from memory (FcGemmOperand.stream): a B sliver is read from L3 or DRAM by the
 * first tile of its panel only, and the others find it in L2, so the first tile would wait on memory at
 * the microkernel's pace (two lines per k step with AVX-512, far more than one core's share of memory
 * bandwidth) while the rest never touch it. Instead every full tile of a panel prefetches its share of the
 * next sliver into L2 (prefetcht1, so the current A and B slivers keep L1): one line per NEXT_K k steps,
 * kc·16/NEXT_K floats a call, so nr/(16/NEXT_K) tiles cover a sliver (4 with AVX-512, 2 with AVX2) and the
 * memory reads spread over the whole panel's compute. */
enum { NEXT_K = 2, NEXT_FLOATS_PER_K = 16 / NEXT_K };

/* The microkernel's body at the builder's position: C[0..mr)[0..nr) (row stride ldc) = (accum ? C : 0)
 * + A sliver · B sliver over kc, each result vector passed through `fin` (when given) before its store.
 * With pfn (else NULL), the lines [pfn, pfn + kc·NEXT_FLOATS_PER_K floats) are prefetched into L2 on the
 * way (the streaming comment above).
 * The accumulators live in allocas of the current function's entry block (promoted to registers by
 * SROA): the k loop runs max(sets, UKR_UNROLL) steps per iteration, step s into set s % sets, then the
 * remaining steps into set 0. */
static void emit_ukr_body(FcKernel *k, const FcGemmArch *g, int mr, LLVMValueRef kc, LLVMValueRef pa, LLVMValueRef pb,
                          LLVMValueRef ldb, LLVMValueRef pc, LLVMValueRef ldc, LLVMValueRef accum, const UkrFinish *fin,
                          LLVMValueRef pfn) {
  LLVMBuilderRef b = k->b;
  int vl = g->vl, nv = g->nr / g->vl, sets = ukr_sets(mr, nv);
  FC_ASSERT(mr <= MAX_MR && nv <= MAX_NV);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx), vt = LLVMVectorType(f32, (unsigned)vl);
  LLVMValueRef slots[4][MAX_MR * MAX_NV];
  for (int s = 0; s < sets; s++)
    for (int t = 0; t < mr * nv; t++) {
      slots[s][t] = fc_cg_entry_alloca(k, vt, "acc");
      LLVMBuildStore(b, LLVMConstNull(vt), slots[s][t]);
    }
  LLVMValueRef pfoff = prefetch_offset(k, g, kc, ldb);
  int unroll = fin ? UKR_UNROLL_INLINE : UKR_UNROLL;
  int step = sets > unroll ? sets : unroll; /* k steps per iteration, a multiple of sets (and of NEXT_K) */
  FC_ASSERT(step % NEXT_K == 0);
  LLVMValueRef kmain = LLVMBuildSub(b, kc, LLVMBuildSRem(b, kc, fc_cg_const_i64(k, step), ""), "");
  FcLoop l1;
  LLVMValueRef kk = fc_cg_loop_begin(k, &l1, fc_cg_const_i64(k, 0), kmain, step, "k");
  for (int s = 0; s < step; s++) {
    LLVMValueRef ks = LLVMBuildAdd(b, kk, fc_cg_const_i64(k, s), "");
    ukr_step(k, g, mr, pa, pb, ldb, pfoff, ks, slots[s % sets]);
    if (pfn && s % NEXT_K == 0)
      prefetch(k, fptr(k, pfn, LLVMBuildMul(b, ks, fc_cg_const_i64(k, NEXT_FLOATS_PER_K), "")), false, 2);
  }
  fc_cg_loop_end(k, &l1);
  if (step > 1) {
    FcLoop l2;
    kk = fc_cg_loop_begin(k, &l2, kmain, kc, 1, "krem");
    ukr_step(k, g, mr, pa, pb, ldb, pfoff, kk, slots[0]);
    fc_cg_loop_end(k, &l2);
  }
  /* The tile's final values; then two store paths, so a first K-block never reads C. */
  LLVMValueRef res[MAX_MR * MAX_NV];
  for (int t = 0; t < mr * nv; t++) {
    res[t] = LLVMBuildLoad2(b, vt, slots[0][t], "");
    for (int s = 1; s < sets; s++) res[t] = LLVMBuildFAdd(b, res[t], LLVMBuildLoad2(b, vt, slots[s][t], ""), "");
  }
  LLVMBasicBlockRef add_bb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "accumulate");
  LLVMBasicBlockRef set_bb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "store");
  LLVMBasicBlockRef join_bb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "stored");
  LLVMBuildCondBr(b, accum, add_bb, set_bb);
  for (int pass = 0; pass < 2; pass++) {
    LLVMPositionBuilderAtEnd(b, pass ? set_bb : add_bb);
    for (int i = 0; i < mr; i++) {
      LLVMValueRef row = LLVMBuildMul(b, ldc, fc_cg_const_i64(k, i), "");
      for (int j = 0; j < nv; j++) {
        LLVMValueRef p = fptr(k, pc, LLVMBuildAdd(b, row, fc_cg_const_i64(k, (int64_t)j * vl), ""));
        LLVMValueRef v = res[i * nv + j];
        if (!pass) {
          LLVMValueRef old = LLVMBuildLoad2(b, vt, p, "");
          LLVMSetAlignment(old, 4);
          v = LLVMBuildFAdd(b, v, old, "");
        }
        if (fin)
          v = fin->value(k, fin->user, v, LLVMBuildAdd(b, fin->m, fc_cg_const_i64(k, i), ""),
                         LLVMBuildAdd(b, fin->n, fc_cg_const_i64(k, (int64_t)j * vl), ""));
        LLVMSetAlignment(LLVMBuildStore(b, v, p), 4);
      }
    }
    LLVMBuildBr(b, join_bb);
  }
  LLVMPositionBuilderAtEnd(b, join_bb);
}

static void build_ukr(FcKernel *k, const FcGemmArch *g, int mr, LLVMValueRef fn, bool next) {
  Saved sv = enter_fn(k, fn);
  emit_ukr_body(k, g, mr, LLVMGetParam(fn, 0), LLVMGetParam(fn, 1), LLVMGetParam(fn, 2), LLVMGetParam(fn, 6),
                LLVMGetParam(fn, 3), LLVMGetParam(fn, 4), LLVMGetParam(fn, 5), NULL, next ? LLVMGetParam(fn, 7) : NULL);
  LLVMBuildRetVoid(k->b);
  leave_fn(k, sv);
}

/* The edge microkernel: a tile with rows <= mr valid rows and cols <= nr valid columns, computed in a stack
 * tile. C's valid part is copied in (when accumulating) and out with masked vector loads and stores, one per
 * row and vector, so nothing outside it is touched. When cols fit one vector, a one-vector-wide
 * microkernel runs instead of the full one: the narrow remainder panel an odd N leaves (N = 49: a fourth
 * panel of one column) then costs half a tile. */
static LLVMValueRef get_fn(FcKernel *k, const FcGemmArch *g, bool edge, int rows, bool next);

static void build_edge(FcKernel *k, const FcGemmArch *g, LLVMValueRef fn, LLVMValueRef ukr) {
  Saved sv = enter_fn(k, fn);
  LLVMBuilderRef b = k->b;
  int vl = g->vl, nv = g->nr / g->vl;
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx), vt = LLVMVectorType(f32, (unsigned)vl);
  LLVMTypeRef i64 = fc_cg_i64(k);
  LLVMValueRef kc = LLVMGetParam(fn, 0), pa = LLVMGetParam(fn, 1), pb = LLVMGetParam(fn, 2);
  LLVMValueRef pc = LLVMGetParam(fn, 3), ldc = LLVMGetParam(fn, 4), accum = LLVMGetParam(fn, 5);
  LLVMValueRef rows = LLVMGetParam(fn, 6), cols = LLVMGetParam(fn, 7), ldb = LLVMGetParam(fn, 8);
  LLVMValueRef tile = fc_cg_tile_new(k, f32, (int64_t)g->mr * g->nr, "tile");
  LLVMValueRef nr = fc_cg_const_i64(k, g->nr);
  /* Lane masks: column j·vl + l < cols, per vector j; and per row, i < rows. */
  LLVMValueRef colmask[MAX_NV], rowmask[MAX_MR];
  LLVMValueRef cols_v = fc_cg_splat(k, cols, (unsigned)vl);
  for (int j = 0; j < nv; j++) {
    LLVMValueRef lanes[16];
    for (int l = 0; l < vl; l++) lanes[l] = LLVMConstInt(i64, (unsigned long long)(j * vl + l), 0);
    colmask[j] = LLVMBuildICmp(b, LLVMIntSLT, LLVMConstVector(lanes, (unsigned)vl), cols_v, "");
  }
  for (int i = 0; i < g->mr; i++)
    rowmask[i] = fc_cg_splat(k, LLVMBuildICmp(b, LLVMIntSLT, fc_cg_const_i64(k, i), rows, ""), (unsigned)vl);
  /* Copy in: C's valid part when accumulating, zeros elsewhere, so the tile is fully defined. */
  LLVMValueRef acc_v = fc_cg_splat(k, accum, (unsigned)vl);
  for (int i = 0; i < g->mr; i++)
    for (int j = 0; j < nv; j++) {
      LLVMValueRef off = LLVMBuildAdd(b, LLVMBuildMul(b, fc_cg_const_i64(k, i), ldc, ""), fc_cg_const_i64(k, (int64_t)j * vl), "");
      LLVMValueRef m = LLVMBuildAnd(b, LLVMBuildAnd(b, colmask[j], rowmask[i], ""), acc_v, "");
      LLVMValueRef cp = LLVMBuildGEP2(b, f32, pc, &off, 1, "");
      LLVMValueRef v = fc_cg_masked_load(k, vt, cp, m, LLVMConstNull(vt));
      LLVMSetAlignment(LLVMBuildStore(b, v, fptr(k, tile, fc_cg_const_i64(k, (int64_t)i * g->nr + (int64_t)j * vl))), 4);
    }
  LLVMValueRef args[7] = {kc, pa, pb, tile, nr, accum, ldb};
  if (nv > 1) {
    FcGemmArch g1 = *g;
    g1.nr = vl;
    LLVMValueRef narrow = LLVMBuildICmp(b, LLVMIntSLE, cols, fc_cg_const_i64(k, vl), "");
    LLVMBasicBlockRef nb = LLVMAppendBasicBlockInContext(k->ctx, fn, "narrow");
    LLVMBasicBlockRef wb = LLVMAppendBasicBlockInContext(k->ctx, fn, "wide");
    LLVMBasicBlockRef jb = LLVMAppendBasicBlockInContext(k->ctx, fn, "computed");
    LLVMBuildCondBr(b, narrow, nb, wb);
    LLVMPositionBuilderAtEnd(b, nb);
    LLVMBuildCall2(b, ukr_type(k, false), get_fn(k, &g1, false, g->mr, false), args, 7, "");
    LLVMBuildBr(b, jb);
    LLVMPositionBuilderAtEnd(b, wb);
    LLVMBuildCall2(b, ukr_type(k, false), ukr, args, 7, "");
    LLVMBuildBr(b, jb);
    LLVMPositionBuilderAtEnd(b, jb);
  } else {
    LLVMBuildCall2(b, ukr_type(k, false), ukr, args, 7, "");
  }
  /* Copy out the valid part. */
  for (int i = 0; i < g->mr; i++)
    for (int j = 0; j < nv; j++) {
      LLVMValueRef off = LLVMBuildAdd(b, LLVMBuildMul(b, fc_cg_const_i64(k, i), ldc, ""), fc_cg_const_i64(k, (int64_t)j * vl), "");
      LLVMValueRef v = LLVMBuildLoad2(b, vt, fptr(k, tile, fc_cg_const_i64(k, (int64_t)i * g->nr + (int64_t)j * vl)), "");
      LLVMSetAlignment(v, 4);
      fc_cg_masked_store(k, v, LLVMBuildGEP2(b, f32, pc, &off, 1, ""), LLVMBuildAnd(b, colmask[j], rowmask[i], ""));
    }
  LLVMBuildRetVoid(b);
  leave_fn(k, sv);
}

/* The module's microkernel for the arch's tile, or (rows < mr, not edge) the one that computes only the
 * first `rows` rows of an mr-wide A panel: the full-width tiles of a last row panel that M leaves short.
 * `next` (not edge): the streaming variant, which also prefetches its share of the next B sliver. */
static LLVMValueRef get_fn(FcKernel *k, const FcGemmArch *g, bool edge, int rows, bool next) {
  char name[64];
  const char *sfx = next ? "_next" : "";
  if (rows == g->mr) snprintf(name, sizeof name, "fc_gemm_ukr%s_f32_%dx%d%s", edge ? "_edge" : "", g->mr, g->nr, sfx);
  else snprintf(name, sizeof name, "fc_gemm_ukr_f32_%dx%d_rows%d%s", g->mr, g->nr, rows, sfx);
  LLVMValueRef fn = LLVMGetNamedFunction(k->mod, name);
  if (fn) return fn;
  fn = LLVMAddFunction(k->mod, name, edge ? edge_type(k) : ukr_type(k, next));
  add_fn_attrs(k, fn, true);
  if (edge) build_edge(k, g, fn, get_fn(k, g, false, g->mr, false));
  else build_ukr(k, g, rows, fn, next);
  return fn;
}

/* The calls with B's row stride ldb (i64): nr for packed panels, a matrix's row stride for a B read in
 * place (full panels only: the edge variant still computes whole tiles); pfn: NULL, or the streaming
 * variant's prefetch region. */
static void call_ukr_rows(FcKernel *k, const FcGemmArch *g, int rows, LLVMValueRef kc, LLVMValueRef a, LLVMValueRef b,
                          LLVMValueRef ldb, LLVMValueRef c, LLVMValueRef ldc, LLVMValueRef accumulate,
                          LLVMValueRef pfn) {
  LLVMValueRef args[8] = {kc, a, b, c, ldc, accumulate, ldb, pfn};
  LLVMBuildCall2(k->b, ukr_type(k, pfn != NULL), get_fn(k, g, false, rows, pfn != NULL), args, pfn ? 8 : 7, "");
}

static void call_ukr(FcKernel *k, const FcGemmArch *g, LLVMValueRef kc, LLVMValueRef a, LLVMValueRef b, LLVMValueRef ldb,
                     LLVMValueRef c, LLVMValueRef ldc, LLVMValueRef accumulate) {
  call_ukr_rows(k, g, g->mr, kc, a, b, ldb, c, ldc, accumulate, NULL);
}

static void call_edge(FcKernel *k, const FcGemmArch *g, LLVMValueRef kc, LLVMValueRef a, LLVMValueRef b, LLVMValueRef ldb,
                      LLVMValueRef c, LLVMValueRef ldc, LLVMValueRef accumulate, LLVMValueRef rows, LLVMValueRef cols) {
  LLVMValueRef args[9] = {kc, a, b, c, ldc, accumulate, rows, cols, ldb};
  LLVMBuildCall2(k->b, edge_type(k), get_fn(k, g, true, g->mr, false), args, 9, "");
}

static bool is_const_eq(LLVMValueRef v, int64_t c) {
  return LLVMIsAConstantInt(v) && LLVMConstIntGetSExtValue(v) == c;
}

static void call_tile(FcKernel *k, const FcGemmArch *g, LLVMValueRef kc, LLVMValueRef a, LLVMValueRef b, LLVMValueRef ldb,
                      LLVMValueRef c, LLVMValueRef ldc, LLVMValueRef accumulate, LLVMValueRef rows, LLVMValueRef cols) {
  if (is_const_eq(rows, g->mr) && is_const_eq(cols, g->nr)) {
    call_ukr(k, g, kc, a, b, ldb, c, ldc, accumulate);
    return;
  }
  LLVMValueRef full = LLVMBuildAnd(k->b, LLVMBuildICmp(k->b, LLVMIntEQ, rows, fc_cg_const_i64(k, g->mr), ""),
                                   LLVMBuildICmp(k->b, LLVMIntEQ, cols, fc_cg_const_i64(k, g->nr), ""), "");
  LLVMBasicBlockRef fb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "full");
  LLVMBasicBlockRef eb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "edge");
  LLVMBasicBlockRef jb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "tile_done");
  LLVMBuildCondBr(k->b, full, fb, eb);
  LLVMPositionBuilderAtEnd(k->b, fb);
  call_ukr(k, g, kc, a, b, ldb, c, ldc, accumulate);
  LLVMBuildBr(k->b, jb);
  LLVMPositionBuilderAtEnd(k->b, eb);
  call_edge(k, g, kc, a, b, ldb, c, ldc, accumulate, rows, cols);
  LLVMBuildBr(k->b, jb);
  LLVMPositionBuilderAtEnd(k->b, jb);
}

void fc_gemm_call_ukr(FcKernel *k, const FcGemmArch *g, LLVMValueRef kc, LLVMValueRef a, LLVMValueRef b,
                      LLVMValueRef c, LLVMValueRef ldc, LLVMValueRef accumulate) {
  call_ukr(k, g, kc, a, b, fc_cg_const_i64(k, g->nr), c, ldc, accumulate);
}

void fc_gemm_call_ukr_edge(FcKernel *k, const FcGemmArch *g, LLVMValueRef kc, LLVMValueRef a, LLVMValueRef b,
                           LLVMValueRef c, LLVMValueRef ldc, LLVMValueRef accumulate, LLVMValueRef rows,
                           LLVMValueRef cols) {
  call_edge(k, g, kc, a, b, fc_cg_const_i64(k, g->nr), c, ldc, accumulate, rows, cols);
}

void fc_gemm_call_tile(FcKernel *k, const FcGemmArch *g, LLVMValueRef kc, LLVMValueRef a, LLVMValueRef b,
                       LLVMValueRef c, LLVMValueRef ldc, LLVMValueRef accumulate, LLVMValueRef rows,
                       LLVMValueRef cols) {
  call_tile(k, g, kc, a, b, fc_cg_const_i64(k, g->nr), c, ldc, accumulate, rows, cols);
}

/* ---- the blocked driver ------------------------------------------------------------------------------------------------- */

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }
static LLVMValueRef smin(FcKernel *k, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(k->b, LLVMBuildICmp(k->b, LLVMIntSLT, a, b, ""), a, b, "");
}

LLVMValueRef fc_gemm_block_of(FcKernel *k, LLVMValueRef it, int64_t mblocks, int64_t nblocks, LLVMValueRef *mb,
                              LLVMValueRef *nb) {
  LLVMBuilderRef b = k->b;
  *nb = LLVMBuildSRem(b, it, c64(k, nblocks), "nb");
  LLVMValueRef rest = LLVMBuildSDiv(b, it, c64(k, nblocks), "");
  if (mb) *mb = LLVMBuildSRem(b, rest, c64(k, mblocks), "mb");
  return LLVMBuildSDiv(b, rest, c64(k, mblocks), "batch");
}

int64_t fc_gemm_block_scratch_bytes(const FcGemmBlock *t) {
  int64_t floats = 0; /* whole panels: a partial last one is packed at its panel's offset */
  if (!t->a.packed) floats += t->g->kc * round_up(t->mc, t->g->mr);
  if (!t->b.packed) floats += t->g->kc * round_up(t->nc, t->g->nr);
  return floats * 4 + 64;
}

void fc_gemm_choose_blocks(const FcGemmArch *g, int64_t batch, int64_t M, int64_t N, int64_t min_tasks,
                           bool a_packed_per_task, int64_t b_weight, int64_t *mc, int64_t *nc) {
  int64_t mp = round_up(M, g->mr) / g->mr, np = round_up(N, g->nr) / g->nr; /* panels */
  int64_t mbp = g->mc / g->mr, nbp = g->nc / g->nr;                        /* panels per block, at most */
  int64_t mb, nb;                                                          /* blocks */
  if (a_packed_per_task) {
    /* A is packed by each task: give a task all of N, so each A block is packed once and reused across
     * every column (B is the constant, streamed panel by panel), and split M into blocks of at most mc
     * rows. Blocks shrink below that for parallelism only when N has no panels left to split: a B sliver
     * is reused across a block's rows, and short blocks would stream B from L3 for a few rows each. So
     * further tasks split N, and then M: a classifier's last layer (64 x 1024 x 10, one panel) would
     * otherwise be one task, run on one core while it reads the half of A that the other core just wrote. */
    mb = (mp + mbp - 1) / mbp;
    nb = 1;
    while (batch * mb * nb < min_tasks && nb < np) nb++;
    while (batch * mb * nb < min_tasks && mb < mp) mb++;
  } else {
    /* A is a constant (or packed per task) and B is read in place or packed per task (conv's im2col): a
     * block spans all of M, so each B block is read or packed once for every row (the M loop inside a
     * K-block keeps an mc-row slice of A in L2, emit_kblock). While there are too few tasks, split where
     * it costs less traffic: one more N-block re-reads all of A (M·K), one more M-block all of B (K·N,
     * weighted by b_weight when B is gathered rather than streamed). */
    mb = 1;
    nb = (np + nbp - 1) / nbp;
    while (batch * mb * nb < min_tasks) {
      bool can_n = nb < np && (np + nb) / (nb + 1) >= 2, can_m = mb < mp;
      if (can_n && (!can_m || M <= N * b_weight)) nb++;
      else if (can_m) mb++;
      else break;
    }
  }
  *mc = (mp + mb - 1) / mb * g->mr;
  *nc = (np + nb - 1) / nb * g->nr;
}

/* The packed buffers of one task and its block's extent. */
typedef struct BlockState {
  LLVMValueRef m0, n0, mlen, nlen, abuf, bbuf;
} BlockState;

/* One tile of a K-block: its A and B slivers (B's row stride ldb), C at (crow, ccol), and its valid rows and
 * columns (i64 values); pfn: NULL, or where a full tile prefetches its share of the next B sliver. */
typedef struct Tile {
  LLVMValueRef ap, bp, ldb, cp, crow, ccol, rows, cols, pfn;
} Tile;

/* A tile of `mr_rows` rows and full width: inline with the epilogue on its registers when finishing
 * (`fin`), else a call of the module's microkernel for that many rows. */
static void emit_tile_rows(FcKernel *k, const FcGemmBlock *t, const Tile *tl, int mr_rows, LLVMValueRef kc,
                           LLVMValueRef accumulate, bool fin) {
  LLVMValueRef pfn = mr_rows == t->g->mr ? tl->pfn : NULL; /* short tiles: no second microkernel variant */
  if (fin) {
    UkrFinish f = {t->finish_value, t->finish_user, tl->crow, tl->ccol};
    emit_ukr_body(k, t->g, mr_rows, kc, tl->ap, tl->bp, tl->ldb, tl->cp, c64(k, t->ldc), accumulate, &f, pfn);
  } else {
    call_ukr_rows(k, t->g, mr_rows, kc, tl->ap, tl->bp, tl->ldb, tl->cp, c64(k, t->ldc), accumulate, pfn);
  }
}

/* Dispatches a tile: full tiles, the full-width tiles of the last row panel when M is not a multiple of mr
 * (their row count M % mr is static, so they get a microkernel of that many rows rather than the edge
 * variant's stack tile and masked copies: M = 64 in 6-row panels leaves a 4-row panel under every tenth
 * tile, whose copies would be a large share of a small 1x1 conv's time), and other edges.
 * With `last` and a finishing function the result is finished here. */
static void emit_tile(FcKernel *k, const FcGemmBlock *t, const Tile *tl, LLVMValueRef kc, LLVMValueRef accumulate,
                      bool last) {
  const FcGemmArch *g = t->g;
  LLVMBuilderRef b = k->b;
  bool fin = last && t->finish_value;
  int rem = (int)(t->M % g->mr);
  LLVMValueRef wide = LLVMBuildICmp(b, LLVMIntEQ, tl->cols, c64(k, g->nr), "");
  LLVMValueRef full = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, tl->rows, c64(k, g->mr), ""), wide, "");
  LLVMBasicBlockRef fb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "tile_full");
  LLVMBasicBlockRef nb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "tile_notfull");
  LLVMBasicBlockRef eb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "tile_edge");
  LLVMBasicBlockRef jb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "tile_done");
  LLVMBuildCondBr(b, full, fb, nb);
  LLVMPositionBuilderAtEnd(b, fb);
  emit_tile_rows(k, t, tl, g->mr, kc, accumulate, fin);
  LLVMBuildBr(b, jb);
  LLVMPositionBuilderAtEnd(b, nb);
  if (rem) {
    LLVMBasicBlockRef sb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "tile_short");
    LLVMBuildCondBr(b, LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, tl->rows, c64(k, rem), ""), wide, ""), sb, eb);
    LLVMPositionBuilderAtEnd(b, sb);
    emit_tile_rows(k, t, tl, rem, kc, accumulate, fin);
    LLVMBuildBr(b, jb);
  } else {
    LLVMBuildBr(b, eb);
  }
  LLVMPositionBuilderAtEnd(b, eb);
  call_edge(k, g, kc, tl->ap, tl->bp, tl->ldb, tl->cp, c64(k, t->ldc), accumulate, tl->rows, tl->cols);
  if (fin) {
    FcLoop lm;
    LLVMValueRef m = fc_cg_loop_begin(k, &lm, tl->crow, LLVMBuildAdd(b, tl->crow, tl->rows, ""), 1, "fin");
    t->finish_row(k, t->finish_user, m, tl->ccol, tl->cols);
    fc_cg_loop_end(k, &lm);
  }
  LLVMBuildBr(b, jb);
  LLVMPositionBuilderAtEnd(b, jb);
}

/* Where the last K-block starts: K is static, so every K-block but the last runs in a loop and the last
 * one, which finishes the tiles, is peeled. */
static int64_t last_kblock_start(const FcGemmBlock *t) { return (t->K - 1) / t->g->kc * t->g->kc; }

/* One K-block [k0, k0 + kc) of the task's block: pack the run-time operands, then every tile. With
 * `last` and a finishing function, full tiles run the microkernel inline with the epilogue applied to
 * its registers before the store, and edge tiles are finished row by row after their call. */
static void emit_kblock(FcKernel *k, const FcGemmBlock *t, const BlockState *bs, LLVMValueRef k0, LLVMValueRef kc,
                        LLVMValueRef accumulate, bool last) {
  const FcGemmArch *g = t->g;
  LLVMBuilderRef b = k->b;
  if (bs->bbuf && t->b.direct) {
    /* Full panels are read in place; only a partial last panel is packed (with its zero columns). */
    LLVMValueRef q_last = LLVMBuildMul(b, LLVMBuildSDiv(b, LLVMBuildSub(b, bs->nlen, c64(k, 1), ""), c64(k, g->nr), ""),
                                       c64(k, g->nr), "");
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildSub(b, bs->nlen, q_last, ""), c64(k, g->nr), ""));
    t->b.pack(k, t->b.user, fptr(k, bs->bbuf, LLVMBuildMul(b, q_last, c64(k, g->kc), "")), LLVMBuildAdd(b, bs->n0, q_last, ""),
              k0, kc);
    fc_cg_if_end(k, cont);
  } else if (bs->bbuf) {
    FcLoop lq;
    LLVMValueRef q0 = fc_cg_loop_begin(k, &lq, c64(k, 0), bs->nlen, g->nr, "pb");
    LLVMValueRef dst = fptr(k, bs->bbuf, LLVMBuildMul(b, q0, c64(k, g->kc), ""));
    t->b.pack(k, t->b.user, dst, LLVMBuildAdd(b, bs->n0, q0, ""), k0, kc);
    fc_cg_loop_end(k, &lq);
  }
  if (bs->abuf) {
    FcLoop lp;
    LLVMValueRef p0 = fc_cg_loop_begin(k, &lp, c64(k, 0), bs->mlen, g->mr, "pa");
    LLVMValueRef dst = fptr(k, bs->abuf, LLVMBuildMul(b, p0, c64(k, g->kc), ""));
    t->a.pack(k, t->a.user, dst, LLVMBuildAdd(b, bs->m0, p0, ""), k0, kc);
    fc_cg_loop_end(k, &lp);
  }
  /* Rows in slices of the arch's mc, each swept by every column panel: the slice of A's K-block (mc·kc
   * floats) stays in L2 while the panels pass, where a whole tall block would stream from L3 per panel. */
  bool sliced = t->mc > g->mc;
  FcLoop li;
  LLVMValueRef i0 = c64(k, 0), i_end = bs->mlen;
  if (sliced) {
    i0 = fc_cg_loop_begin(k, &li, c64(k, 0), bs->mlen, g->mc, "ic");
    i_end = smin(k, LLVMBuildAdd(b, i0, c64(k, g->mc), ""), bs->mlen);
  }
  FcLoop lq;
  LLVMValueRef q0 = fc_cg_loop_begin(k, &lq, c64(k, 0), bs->nlen, g->nr, "jr");
  LLVMValueRef bp;
  if (bs->bbuf) {
    bp = fptr(k, bs->bbuf, LLVMBuildMul(b, q0, c64(k, g->kc), ""));
  } else {
    /* panel (n0 + q0) / nr of the whole packed B, at row k0 */
    LLVMValueRef panel = LLVMBuildSDiv(b, LLVMBuildAdd(b, bs->n0, q0, ""), c64(k, g->nr), "");
    bp = fptr(k, t->b.packed, LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, panel, c64(k, t->K), ""), k0, ""), c64(k, g->nr), ""));
  }
  LLVMValueRef cols = smin(k, c64(k, g->nr), LLVMBuildSub(b, bs->nlen, q0, ""));
  LLVMValueRef ldb = c64(k, g->nr);
  LLVMValueRef next = NULL; /* the B sliver the block reads after this one (streamed B) */
  if (t->b.stream && !bs->bbuf) {
    /* The next panel at k0; after the block's last panel, its first panel at k0 + kc, or after the last
     * K-block the memory right after this sliver: the next panel at k = 0, the first of the next n-block,
     * which is the thread's next task (blocks run n fastest). */
    LLVMValueRef first = LLVMBuildMul(b, LLVMBuildSDiv(b, bs->n0, c64(k, g->nr), ""), c64(k, t->K), "");
    LLVMValueRef first_next_k = LLVMBuildAdd(b, LLVMBuildAdd(b, first, k0, ""), kc, "");
    LLVMValueRef wrap = last ? fptr(k, bp, LLVMBuildMul(b, kc, c64(k, g->nr), ""))
                             : fptr(k, t->b.packed, LLVMBuildMul(b, first_next_k, c64(k, g->nr), ""));
    LLVMValueRef more = LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildAdd(b, q0, c64(k, g->nr), ""), bs->nlen, "");
    next = LLVMBuildSelect(b, more, fptr(k, bp, c64(k, t->K * g->nr)), wrap, "");
  }
  if (t->b.direct) {
    const FcGemmMatrix *bm = t->b.user;
    LLVMValueRef in_place = fptr(k, bm->base, LLVMBuildAdd(b, LLVMBuildMul(b, k0, c64(k, bm->ld), ""), LLVMBuildAdd(b, bs->n0, q0, ""), ""));
    LLVMValueRef full = LLVMBuildICmp(b, LLVMIntEQ, cols, c64(k, g->nr), "");
    bp = LLVMBuildSelect(b, full, in_place, bp, "");
    ldb = LLVMBuildSelect(b, full, c64(k, bm->ld), ldb, "");
  }
  FcLoop lp;
  LLVMValueRef p0 = fc_cg_loop_begin(k, &lp, i0, i_end, g->mr, "ir");
  LLVMValueRef ap;
  if (bs->abuf) {
    ap = fptr(k, bs->abuf, LLVMBuildMul(b, p0, c64(k, g->kc), ""));
  } else if (t->a.block_local) {
    LLVMValueRef panel = LLVMBuildSDiv(b, p0, c64(k, g->mr), "");
    ap = fptr(k, t->a.packed, LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, panel, c64(k, t->K), ""), k0, ""), c64(k, g->mr), ""));
  } else {
    LLVMValueRef panel = LLVMBuildSDiv(b, LLVMBuildAdd(b, bs->m0, p0, ""), c64(k, g->mr), "");
    ap = fptr(k, t->a.packed, LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, panel, c64(k, t->K), ""), k0, ""), c64(k, g->mr), ""));
  }
  LLVMValueRef rows = smin(k, c64(k, g->mr), LLVMBuildSub(b, bs->mlen, p0, ""));
  LLVMValueRef crow = LLVMBuildAdd(b, bs->m0, p0, ""), ccol = LLVMBuildAdd(b, bs->n0, q0, "");
  LLVMValueRef cp = fptr(k, t->c, LLVMBuildAdd(b, LLVMBuildMul(b, crow, c64(k, t->ldc), ""), ccol, ""));
  LLVMValueRef pfn = NULL;
  if (next) {
    /* The tile's share: the tile-th part of kc·NEXT_FLOATS_PER_K floats of the next sliver (nr·kc); tiles
     * past the sliver's end repeat the last part, which L2 then already holds. */
    int64_t parts = g->nr / NEXT_FLOATS_PER_K > 1 ? g->nr / NEXT_FLOATS_PER_K : 1;
    LLVMValueRef part = smin(k, LLVMBuildSDiv(b, LLVMBuildSub(b, p0, i0, ""), c64(k, g->mr), ""), c64(k, parts - 1));
    pfn = fptr(k, next, LLVMBuildMul(b, LLVMBuildMul(b, part, kc, ""), c64(k, NEXT_FLOATS_PER_K), ""));
  }
  /* The last K-block writes C: its lines two column panels ahead are prefetched for writing, one per
   * row of the tile, so the write-allocate misses overlap the FMAs instead of stalling the stores
   * (C rows are ldc apart, one line per tile row, which the hardware prefetcher does not follow).
   * Past C's end these are harmless: prefetches do not fault. Only after a short last K-block (kc <=
   * PREFETCH_NEXT_KC, as for B): with a long one the A and B slivers fill L1 and the lines fetched
   * for writing would evict them. */
  if (last && t->K - last_kblock_start(t) <= PREFETCH_NEXT_KC)
    for (int i = 0; i < g->mr; i++) prefetch(k, fptr(k, cp, c64(k, i * t->ldc + 2 * (int64_t)g->nr)), true, 3);
  Tile tile = {ap, bp, ldb, cp, crow, ccol, rows, cols, pfn};
  emit_tile(k, t, &tile, kc, accumulate, last);
  fc_cg_loop_end(k, &lp);
  fc_cg_loop_end(k, &lq);
  if (sliced) fc_cg_loop_end(k, &li);
}

void fc_gemm_emit_block(FcKernel *k, const FcGemmBlock *t, LLVMValueRef m0, LLVMValueRef n0) {
  const FcGemmArch *g = t->g;
  LLVMBuilderRef b = k->b;
  FC_ASSERT(t->K > 0 && (!t->finish_value || t->finish_row));
  BlockState bs = {.m0 = m0, .n0 = n0};
  bs.mlen = smin(k, c64(k, t->mc), LLVMBuildSub(b, c64(k, t->M), m0, ""));
  bs.nlen = smin(k, c64(k, t->nc), LLVMBuildSub(b, c64(k, t->N), n0, ""));
  if (!t->b.packed) bs.bbuf = t->scratch;
  if (!t->a.packed) bs.abuf = t->b.packed ? t->scratch : fptr(k, t->scratch, c64(k, g->kc * round_up(t->nc, g->nr)));
  int64_t k_last = last_kblock_start(t);
  if (k_last > 0) {
    FcLoop lk;
    LLVMValueRef k0 = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, k_last), g->kc, "k0");
    emit_kblock(k, t, &bs, k0, c64(k, g->kc), LLVMBuildICmp(b, LLVMIntSGT, k0, c64(k, 0), ""), false);
    fc_cg_loop_end(k, &lk);
  }
  LLVMValueRef acc_last = LLVMConstInt(LLVMInt1TypeInContext(k->ctx), k_last > 0, 0);
  emit_kblock(k, t, &bs, c64(k, k_last), c64(k, t->K - k_last), acc_last, true);
  if (t->finish_row && !t->finish_value) {
    FcLoop lm;
    LLVMValueRef m = fc_cg_loop_begin(k, &lm, m0, LLVMBuildAdd(b, m0, bs.mlen, ""), 1, "fin");
    t->finish_row(k, t->finish_user, m, n0, bs.nlen);
    fc_cg_loop_end(k, &lm);
  }
}

static void epilogue_row(FcKernel *k, void *user, LLVMValueRef m, LLVMValueRef n0, LLVMValueRef n) {
  FcGemmEpilogue *f = user;
  fc_cg_epilogue_row(k, f->e, f->out, LLVMBuildAdd(k->b, f->row0, m, ""), n0, n);
}

static LLVMValueRef epilogue_value(FcKernel *k, void *user, LLVMValueRef v, LLVMValueRef m, LLVMValueRef n) {
  FcGemmEpilogue *f = user;
  return fc_cg_epilogue_value(k, f->e, v, LLVMBuildAdd(k->b, f->row0, m, ""), n);
}

void fc_gemm_use_epilogue(FcGemmBlock *t, FcGemmEpilogue *fe) {
  t->finish_row = epilogue_row;
  t->finish_value = epilogue_value;
  t->finish_user = fe;
}

LLVMValueRef fc_gemm_const_packed(FcKernel *k, const FcGemmArch *g, bool as_a, const FcValue *src, const float *data,
                                  int64_t count, int64_t stride, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  int64_t one = as_a ? fc_gemm_packed_a_size(g, rows, cols) : fc_gemm_packed_b_size(g, rows, cols);
  size_t total = (size_t)(one * count);
  float *buf = malloc(total * sizeof(float) + 1);
  if (!buf) fc_die(__FILE__, __LINE__, "out of memory");
  for (int64_t i = 0; i < count; i++) {
    if (as_a) fc_gemm_pack_a_host(g, data + i * stride, rows, cols, rs, cs, buf + i * one);
    else fc_gemm_pack_b_host(g, data + i * stride, rows, cols, rs, cs, buf + i * one);
  }
  LLVMValueRef gv = fc_cg_const_f32(k, src, buf, total, as_a ? "packed_a" : "packed_b");
  free(buf);
  return gv;
}

void fc_gemm_pack_a_block(FcKernel *k, const FcGemmArch *g,
                          void (*pack)(FcKernel *k, void *user, LLVMValueRef dst, LLVMValueRef i0, LLVMValueRef k0, LLVMValueRef kc),
                          void *user, LLVMValueRef dst, LLVMValueRef m0, LLVMValueRef rows, int64_t K) {
  LLVMBuilderRef b = k->b;
  FcLoop lp, lk;
  LLVMValueRef p0 = fc_cg_loop_begin(k, &lp, c64(k, 0), rows, g->mr, "apk");
  LLVMValueRef k0 = fc_cg_loop_begin(k, &lk, c64(k, 0), c64(k, K), g->kc, "apk0");
  LLVMValueRef kc = smin(k, LLVMBuildSub(b, c64(k, K), k0, ""), c64(k, g->kc));
  LLVMValueRef panel = LLVMBuildSDiv(b, p0, c64(k, g->mr), "");
  LLVMValueRef off = LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, panel, c64(k, K), ""), k0, ""), c64(k, g->mr), "");
  pack(k, user, fptr(k, dst, off), LLVMBuildAdd(b, m0, p0, ""), k0, kc);
  fc_cg_loop_end(k, &lk);
  fc_cg_loop_end(k, &lp);
}

/* ---- run-time packing of row-major matrices --------------------------------------------------------------------- */

/* Transposes the L×L block r (L = 4 or 8 rows of <L x float>) in place, as the classic unpack / 64-bit
 * shuffle / 128-bit lane swap stages: vunpck[lh]ps, vshufps and vperm2f128 on AVX, unpck[lh]ps and
 * shufps on SSE. Zero rows fold away. */
static void transpose(FcKernel *k, LLVMValueRef *r, int L) {
  LLVMValueRef t[8], u[8];
  int lo[8], hi[8], lo2[8], hi2[8];
  for (int e = 0; e < L; e++) {
    int lane = e / 4 * 4, q = e % 4;
    lo[e] = lane + q / 2 + (q % 2) * L;     /* a0 b0 a1 b1 per 128-bit lane */
    hi[e] = lane + 2 + q / 2 + (q % 2) * L; /* a2 b2 a3 b3 */
    lo2[e] = lane + q % 2 + (q / 2) * L;     /* a0 a1 b0 b1 (64-bit pairs) */
    hi2[e] = lane + 2 + q % 2 + (q / 2) * L; /* a2 a3 b2 b3 */
  }
  for (int i = 0; i < L; i += 2) {
    t[i] = fc_cg_shuffle(k, r[i], r[i + 1], lo, L);
    t[i + 1] = fc_cg_shuffle(k, r[i], r[i + 1], hi, L);
  }
  for (int i = 0; i < L; i += 4)
    for (int h = 0; h < 2; h++) {
      u[i + 2 * h] = fc_cg_shuffle(k, t[i + h], t[i + h + 2], lo2, L);
      u[i + 2 * h + 1] = fc_cg_shuffle(k, t[i + h], t[i + h + 2], hi2, L);
    }
  /* u[i] holds k values i and i + 4 of rows 0-3 (i < 4) or 4-7 (i >= 4), one per 128-bit lane. */
  if (L == 4) {
    for (int i = 0; i < 4; i++) r[i] = u[i];
    return;
  }
  static const int low[8] = {0, 1, 2, 3, 8, 9, 10, 11}, high[8] = {4, 5, 6, 7, 12, 13, 14, 15};
  for (int i = 0; i < 4; i++) {
    r[i] = fc_cg_shuffle(k, u[i], u[i + 4], low, 8);
    r[i + 4] = fc_cg_shuffle(k, u[i], u[i + 4], high, 8);
  }
}

/* Packs rows [i0, i0 + width) × k [k0, k0 + kc) of a row-major A as dst[kk·width + i] (zero rows past
 * `rows`). Vector path, for panels whose rows all exist and width >= L/2: for each L consecutive k
 * (L = 8, or 4 on SSE), the rows in chunks of L (a partial last chunk first) are loaded as one vector
 * each, transposed in registers and stored as L runs of `width` floats, each run as a whole vector (the
 * chunk's c rows and L - c lanes past them). Lanes past a run fall on later k of this group or, for a
 * partial chunk, on the next k's first chunk, which later stores rewrite; past the group they reach at
 * most one k further (width >= L/2), so when no k follows the group those runs are stored as
 * <c x float>. The kc % L tail and a partial last panel stay scalar. 6-row panels on AVX2: 6 loads,
 * 22 shuffles (unpck/blend/vinsertf128/vperm2f128) and 8 stores per 48 floats rather than 48 loads,
 * selects and stores. That matters most for products with few columns (small N), where packing A is a
 * large share of the time. */
void fc_gemm_pack_a_rowmajor(FcKernel *k, void *user, LLVMValueRef dst, LLVMValueRef i0, LLVMValueRef k0, LLVMValueRef kc) {
  FcGemmMatrix *p = user;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx);
  LLVMValueRef fzero = LLVMConstReal(f32, 0.0);
  int w = p->width, L = k->target->gemm.vl >= 8 ? 8 : 4;
  LLVMValueRef kv = c64(k, 0); /* where the scalar loop starts */
  if (2 * w >= L && w <= MAX_MR) {
    LLVMTypeRef vt = LLVMVectorType(f32, (unsigned)L);
    LLVMValueRef full = LLVMBuildICmp(b, LLVMIntSLE, LLVMBuildAdd(b, i0, c64(k, w), ""), c64(k, p->rows), "");
    kv = LLVMBuildSelect(b, full, LLVMBuildAnd(b, kc, c64(k, -L), ""), c64(k, 0), "");
    LLVMValueRef src = LLVMBuildAdd(b, LLVMBuildMul(b, i0, c64(k, p->ld), ""), k0, "");
    FcLoop lg;
    LLVMValueRef kk = fc_cg_loop_begin(k, &lg, c64(k, 0), kv, L, "pkv");
    LLVMValueRef more = LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildAdd(b, kk, c64(k, L), ""), kc, "");
    static const int first[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    int chunks = (w + L - 1) / L;
    for (int n = 0; n < chunks; n++) {
      int r0 = (chunks - 1 - n) * L, c = w - r0 < L ? w - r0 : L;
      LLVMValueRef r[8], at[8];
      for (int i = 0; i < L; i++) {
        if (i >= c) {
          r[i] = LLVMConstNull(vt);
          continue;
        }
        LLVMValueRef off = LLVMBuildAdd(b, LLVMBuildAdd(b, src, c64(k, (int64_t)(r0 + i) * p->ld), ""), kk, "");
        r[i] = LLVMBuildLoad2(b, vt, fptr(k, p->base, off), "");
        LLVMSetAlignment(r[i], 4);
      }
      transpose(k, r, L);
      int inside = 0; /* runs whose whole vector stays inside this group's L·width floats */
      for (int j = 0; j < L; j++) {
        LLVMValueRef run = LLVMBuildMul(b, LLVMBuildAdd(b, kk, c64(k, j), ""), c64(k, w), "");
        at[j] = fptr(k, dst, LLVMBuildAdd(b, run, c64(k, r0), ""));
        if (j * w + r0 + L <= L * w) inside = j + 1;
      }
      for (int j = 0; j < inside; j++) LLVMSetAlignment(LLVMBuildStore(b, r[j], at[j]), 4);
      if (inside == L) continue;
      LLVMBasicBlockRef whole = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "pkv_more");
      LLVMBasicBlockRef last = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "pkv_last");
      LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "pkv_join");
      LLVMBuildCondBr(b, more, whole, last);
      LLVMPositionBuilderAtEnd(b, whole);
      for (int j = inside; j < L; j++) LLVMSetAlignment(LLVMBuildStore(b, r[j], at[j]), 4);
      LLVMBuildBr(b, join);
      LLVMPositionBuilderAtEnd(b, last);
      for (int j = inside; j < L; j++)
        LLVMSetAlignment(LLVMBuildStore(b, fc_cg_shuffle(k, r[j], LLVMGetUndef(vt), first, c), at[j]), 4);
      LLVMBuildBr(b, join);
      LLVMPositionBuilderAtEnd(b, join);
    }
    fc_cg_loop_end(k, &lg);
  }
  FcLoop li;
  LLVMValueRef i = fc_cg_loop_begin(k, &li, c64(k, 0), c64(k, w), 1, "pi");
  LLVMValueRef row = LLVMBuildAdd(b, i0, i, "");
  LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntSLT, row, c64(k, p->rows), "");
  LLVMValueRef src = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildSelect(b, ok, row, c64(k, 0), ""), c64(k, p->ld), ""), k0, "");
  FcLoop lk;
  LLVMValueRef kk = fc_cg_loop_begin(k, &lk, kv, kc, 1, "pk");
  LLVMValueRef v = LLVMBuildSelect(b, ok, fc_cg_load(k, FC_DT_F32, p->base, LLVMBuildAdd(b, src, kk, "")), fzero, "");
  fc_cg_store(k, FC_DT_F32, dst, LLVMBuildAdd(b, LLVMBuildMul(b, kk, c64(k, w), ""), i, ""), v);
  fc_cg_loop_end(k, &lk);
  fc_cg_loop_end(k, &li);
}

void fc_gemm_pack_b_rowmajor(FcKernel *k, void *user, LLVMValueRef dst, LLVMValueRef j0, LLVMValueRef k0, LLVMValueRef kc) {
  FcGemmMatrix *p = user;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx), vt = LLVMVectorType(f32, (unsigned)p->width);
  LLVMValueRef fzero = LLVMConstReal(f32, 0.0);
  /* A full panel: each k row is one contiguous run of `width` floats, copied as one vector. */
  LLVMValueRef full = LLVMBuildICmp(b, LLVMIntSLE, LLVMBuildAdd(b, j0, c64(k, p->width), ""), c64(k, p->cols), "");
  LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "packb_full");
  LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "packb_edge");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "packb_done");
  LLVMBuildCondBr(b, full, fast, slow);
  LLVMPositionBuilderAtEnd(b, fast);
  {
    FcLoop lk;
    LLVMValueRef kk = fc_cg_loop_begin(k, &lk, c64(k, 0), kc, 1, "pk");
    LLVMValueRef src = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildAdd(b, k0, kk, ""), c64(k, p->ld), ""), j0, "");
    LLVMValueRef v = LLVMBuildLoad2(b, vt, fptr(k, p->base, src), "");
    LLVMSetAlignment(v, 4);
    LLVMSetAlignment(LLVMBuildStore(b, v, fptr(k, dst, LLVMBuildMul(b, kk, c64(k, p->width), ""))), 4);
    fc_cg_loop_end(k, &lk);
    LLVMBuildBr(b, done);
  }
  LLVMPositionBuilderAtEnd(b, slow);
  FcLoop lk;
  LLVMValueRef kk = fc_cg_loop_begin(k, &lk, c64(k, 0), kc, 1, "pk");
  LLVMValueRef src = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildAdd(b, k0, kk, ""), c64(k, p->ld), ""), j0, "");
  LLVMValueRef drow = LLVMBuildMul(b, kk, c64(k, p->width), "");
  FcLoop lj;
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(k, 0), c64(k, p->width), 1, "pj");
  LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildAdd(b, j0, j, ""), c64(k, p->cols), "");
  LLVMValueRef idx = LLVMBuildSelect(b, ok, LLVMBuildAdd(b, src, j, ""), c64(k, 0), "");
  LLVMValueRef v = LLVMBuildSelect(b, ok, fc_cg_load(k, FC_DT_F32, p->base, idx), fzero, "");
  fc_cg_store(k, FC_DT_F32, dst, LLVMBuildAdd(b, drow, j, ""), v);
  fc_cg_loop_end(k, &lj);
  fc_cg_loop_end(k, &lk);
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
}
