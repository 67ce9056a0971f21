/* cg_module.c — one flowc module becomes one LLVM module: constants, one kernel per op, the run function
 * and the model descriptor (the layout is described at the top of codegen.h).
 *
 * Order of work: every op must have an emitter (all that lack one are reported in one message), the memory
 * plan is computed (passes/memplan.h), then each op's kernel is built by its emitter from kernels.def, and
 * last the run function, which knows each kernel's outer iteration count only after its emitter ran.
 *
 * Kernel ABI: `void kN(ptr ctx, i64 begin, i64 end)`; ctx[0..n_operands) are the operand buffers,
 * ctx[n_operands..+n_results) the result buffers, the entry after them the run's status word and the
 * next the scratch area (fc_kernel_scratch: FC_CG_SCRATCH_SLOTS slots after the planned blocks; a
 * kernel indexes them with frt_task_index() and runs in at most that many chunks). One
 * ctx array (a stack slot of the run function, sized for the largest op) is refilled before each call:
 * kernels run one after the other, and frt_parallel_for returns only when all chunks are done.
 *
 * Workspace layout: the first FC_MEMPLAN_ALIGN bytes hold the status word (an i32, zeroed on entry,
 * written by fc_cg_flag_error), so every planned block keeps its 64-byte alignment; the plan's offsets
 * follow. The run returns the status word: 0, or 1 + the first kernel that found bad data.
 *
 * Regions (flow.loop, flow.if): every graph of the module (the function and each region) has its own
 * memory plan and constants (CgGraph); each region's plan gets its own area of the workspace after the
 * function's, so a body's blocks never meet the values around it, and a loop body's area ends with the
 * loop's state: the iteration counter and condition its body reads as block arguments, one buffer per
 * carried value, and the next condition and next carried values its yield writes. Body kernels are
 * ordinary kernels built by the same emitters; the run function calls them inside a real loop
 * (emit_loop: the trip count and condition tested before each iteration, the yielded values copied into
 * the carried buffers after it, each scan output written straight into row `iter` of the loop's result,
 * whose rows are zeroed first) or a branch (emit_if, whose branches yield straight into the if's results).
 * A body's captured values are read where they live outside it: regions are isolated from above, so the
 * only way in is an operand. The region op has a slot in the kernel list without a function: its node
 * name reports a scan that would overflow its scan_len (status 1 + that slot) and --profile charges the
 * loop's own copies to it, while body kernels accumulate their time over the iterations.
 *
 * Threads: a kernel goes through frt_parallel_for only when it has more than one outer iteration and at
 * least FC_CG_PARALLEL_MIN_WORK estimated scalar operations in all; below that, waking the pool costs
 * more than it saves (a few microseconds against ~10 ns per element-op), so it is called inline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Comdat.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "cg_private.h"

#define FC_CG_PARALLEL_MIN_WORK 32768.0
#define FC_CG_STATUS_BYTES FC_MEMPLAN_ALIGN

static const FcKernelFn emitters[FC_OP_COUNT] = {
#define FC_KERNEL(kind, fn) [FC_OP_##kind] = fn,
#include "kernels.def"
#undef FC_KERNEL
};

/* One built kernel, for the run function. */
typedef struct CgKernel {
  FcOp *op;
  LLVMValueRef fn;
  int64_t outer;
  double work_per_outer;
  bool scratch; /* uses per-task scratch: at most FC_CG_SCRATCH_SLOTS chunks */
  LLVMValueRef *subst; /* per operand (first 64): the global passed instead, or NULL */
  bool coarse;         /* one chunk per thread (fc_kernel_one_chunk_per_thread) */
} CgKernel;

static bool is_region_op(const FcOp *op) { return op->kind == FC_OP_LOOP || op->kind == FC_OP_IF; }

static bool needs_kernel(const FcOp *op) {
  return op->kind != FC_OP_CONSTANT && op->kind != FC_OP_RETURN && op->kind != FC_OP_YIELD && !is_region_op(op);
}

/* One graph of the module (the function or a region) as codegen sees it. */
typedef struct CgGraph {
  FcGraph *g;
  FcMemPlan plan;
  LLVMValueRef *const_globals; /* by constant ordinal in this graph, made on first use (const_global) */
  FcOp **const_ops;            /* by constant ordinal: the op, NULL when unused */
  int n_consts;
  int64_t ws_base;    /* where its plan's blocks start in the workspace, after the status word */
  int64_t state_base; /* a loop body: where the loop's state follows its plan (emit_loop) */
  int *kernel_of;     /* by op id: its entry in the kernel list, -1 for none */
} CgGraph;

/* Makes g's plan and constants the ones kernels and value addresses use. */
static void enter_graph(FcCg *cg, const CgGraph *cgg) {
  cg->plan = cgg->plan;
  cg->const_globals = cgg->const_globals;
  cg->const_ops = cgg->const_ops;
  cg->n_consts = cgg->n_consts;
}

static CgGraph *graph_of(CgGraph *gs, int n, const FcGraph *g) {
  for (int i = 0; i < n; i++)
    if (gs[i].g == g) return &gs[i];
  FC_UNREACHABLE();
}

/* Bytes rounded up to FC_MEMPLAN_ALIGN (sizes are planned values', already checked to fit). */
static int64_t round_block(int64_t n) { return (n + FC_MEMPLAN_ALIGN - 1) / FC_MEMPLAN_ALIGN * FC_MEMPLAN_ALIGN; }

/* A loop's state after its body's plan: iter (one block), cond (one block), the carried buffers, the next
 * cond (one block) and the next carried buffers. */
static bool loop_state_bytes(const FcOp *loop, int64_t *out) {
  int k = fc_loop_num_carried(loop);
  int64_t total = 3 * FC_MEMPLAN_ALIGN;
  for (int j = 0; j < k; j++) {
    int64_t n, r;
    if (!fc_type_nbytes(&loop->operands[2 + j].value->type, &n) || !fc_checked_add(n, FC_MEMPLAN_ALIGN - 1, &r) ||
        !fc_checked_mul(r / FC_MEMPLAN_ALIGN * FC_MEMPLAN_ALIGN, 2, &r) || !fc_checked_add(total, r, &total))
      return false;
  }
  *out = total;
  return true;
}

/* ---- unsupported ops -------------------------------------------------------------------------------- */

/* ---- globals ------------------------------------------------------------------------------------------ */

/* Blobs from this size up are content-addressed in a multiversioned artefact (below it, the symbols would
 * cost more than the copies). */
#define SHARED_BLOB_MIN_BYTES 1024

static uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  return k ^ (k >> 33);
}

/* A 128-bit hash of n bytes (MurmurHash3's x64 mixing over 8-byte words, two lanes): names a blob by its
 * contents, so an accidental collision between two different weights is out of reach (2^-64 per pair even
 * if the lanes were correlated). */
static void blob_hash(const unsigned char *p, size_t n, uint64_t h[2]) {
  const uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;
  uint64_t h1 = 0x9e3779b97f4a7c15ULL ^ n, h2 = 0xc2b2ae3d27d4eb4fULL ^ (n * c1);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    uint64_t k1, k2;
    memcpy(&k1, p + i, 8);
    memcpy(&k2, p + i + 8, 8);
    h1 ^= rotl64(k1 * c1, 31) * c2;
    h1 = (rotl64(h1, 27) + h2) * 5 + 0x52dce729;
    h2 ^= rotl64(k2 * c2, 33) * c1;
    h2 = (rotl64(h2, 31) + h1) * 5 + 0x38495ab5;
  }
  unsigned char tail[16] = {0};
  memcpy(tail, p + i, n - i);
  uint64_t k1, k2;
  memcpy(&k1, tail, 8);
  memcpy(&k2, tail + 8, 8);
  h1 ^= rotl64(k1 * c1, 31) * c2;
  h2 ^= rotl64(k2 * c2, 33) * c1;
  h1 += h2;
  h2 += h1;
  h1 = fmix64(h1);
  h2 = fmix64(h2);
  h1 += h2;
  h2 += h1;
  h[0] = h1;
  h[1] = h2;
}

/* A constant global holding `n` bytes: private, or, for a large blob of a multiversioned artefact, named by
 * its contents in a COMDAT group of its own (linkonce_odr, hidden). The variants are separate objects (or
 * modules linked into one for --emit obj), and most of their weights are packed alike (the same GEMM
 * panel on AVX2 and AVX-512): the linker keeps one copy of each group, so the artefact carries each distinct
 * blob once instead of once per CPU. */
static LLVMValueRef bytes_global(FcCg *cg, const char *name, const void *data, size_t n, unsigned align,
                                 bool nul_terminate) {
  bool shared = !nul_terminate && n >= SHARED_BLOB_MIN_BYTES && cg->opts->share_constants &&
                cg->target->shared_constants;
  char key[80];
  if (shared) {
    uint64_t h[2];
    blob_hash(data, n, h);
    snprintf(key, sizeof key, "flowc.blob.%016llx%016llx.%zu", (unsigned long long)h[0], (unsigned long long)h[1],
             n);
    LLVMValueRef old = LLVMGetNamedGlobal(cg->mod, key);
    if (old) {
      if (LLVMGetAlignment(old) < align) LLVMSetAlignment(old, align);
      return old;
    }
    name = key;
  }
  LLVMValueRef init = LLVMConstStringInContext2(cg->ctx, data, n, !nul_terminate);
  LLVMValueRef g = LLVMAddGlobal(cg->mod, LLVMTypeOf(init), name);
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  LLVMSetAlignment(g, align);
  if (shared) {
    LLVMSetLinkage(g, LLVMLinkOnceODRLinkage);
    LLVMSetVisibility(g, LLVMHiddenVisibility);
    LLVMComdatRef c = LLVMGetOrInsertComdat(cg->mod, key);
    LLVMSetComdatSelectionKind(c, LLVMAnyComdatSelectionKind);
    LLVMSetComdat(g, c);
  }
  return g;
}

static LLVMValueRef string_global(FcCg *cg, const char *s) { return bytes_global(cg, ".str", s, strlen(s), 1, true); }

LLVMValueRef fc_cg_bytes_global(FcCg *cg, const char *name, const void *data, size_t n) {
  return bytes_global(cg, name, data, n, FC_MEMPLAN_ALIGN, false);
}

/* Collects the constants of one graph by constant ordinal (the plan's numbering) and checks they have
 * data. Their globals are made when the run function first passes one to a kernel (const_global): a
 * constant every kernel reads in a re-laid-out copy (fc_kernel_substitute_operand) gets none. */
static FcStatus emit_constants(FcCg *cg, CgGraph *cgg, FcDiag *diag) {
  int n = 0;
  fc_graph_for_each_op(cgg->g, op) if (op->kind == FC_OP_CONSTANT) n++;
  cgg->n_consts = n;
  cgg->const_globals = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)(n ? n : 1));
  cgg->const_ops = FC_NEW_ARRAY(cg->arena, FcOp *, (size_t)(n ? n : 1));
  int i = 0;
  fc_graph_for_each_op(cgg->g, op) {
    if (op->kind != FC_OP_CONSTANT) continue;
    int ord = i++;
    /* A constant nobody uses (left behind when a pipeline without dce ran) gets no global. */
    if (!fc_value_has_uses(&op->results[0])) continue;
    const FcTensor *t = fc_value_const(&op->results[0]);
    if (!t || !t->data)
      return fc_error_node(diag, FC_ERR_UNSUPPORTED, fc_op_name(op), "constant",
                           "the constant's data was elided from the IR text; compile a model written with --weights");
    cgg->const_ops[ord] = op;
  }
  return FC_OK;
}

/* The global of constant `ord` of the current graph, made on first use: its bytes, or its 16-bit copy
 * and f32 buffer when it is stored in 16 bits (flow.storage). */
static LLVMValueRef const_global(FcCg *cg, int ord) {
  FC_ASSERT(ord >= 0 && ord < cg->n_consts && cg->const_ops[ord]);
  if (cg->const_globals[ord]) return cg->const_globals[ord];
  const FcOp *op = cg->const_ops[ord];
  const FcTensor *t = fc_value_const(&op->results[0]);
  char name[32];
  snprintf(name, sizeof name, "const.%d", ord);
  FcDtype storage = fc_op_storage_dtype(op);
  if (storage == FC_DT_F32)
    cg->const_globals[ord] = bytes_global(cg, name, t->data, (size_t)t->nbytes, FC_MEMPLAN_ALIGN, false);
  else
    cg->const_globals[ord] = fc_cg_weights_global(cg, name, t->data, (size_t)t->nbytes / sizeof(float), storage);
  return cg->const_globals[ord];
}

/* ---- kernels -------------------------------------------------------------------------------------------- */

static LLVMValueRef load_ctx_ptr(FcCg *cg, LLVMBuilderRef b, LLVMValueRef ctxp, int i) {
  LLVMValueRef idx = LLVMConstInt(cg->i64, (unsigned long long)i, 0);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(b, cg->ptr, ctxp, &idx, 1, "");
  return LLVMBuildLoad2(b, cg->ptr, p, "");
}

static FcStatus build_kernel(FcCg *cg, FcOp *op, int index, CgKernel *out, FcDiag *diag) {
  const FcOpInfo *info = fc_op_info(op->kind);
  char name[64];
  snprintf(name, sizeof name, "k%d_%s", index, info->name);
  LLVMTypeRef params[3] = {cg->ptr, cg->i64, cg->i64};
  LLVMValueRef fn = LLVMAddFunction(cg->mod, name, LLVMFunctionType(cg->v, params, 3, 0));
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  /* Kernels stay separate functions: inlining hundreds of them into the run function buys nothing (the
   * calls are per tensor, not per element) and makes big models slow to compile. */
  static const char *const attrs[] = {"nounwind", "noinline"};
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
    unsigned kind = LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i]));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, kind, 0));
  }
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(cg->ctx, fn, "entry");
  LLVMBuilderRef b = LLVMCreateBuilderInContext(cg->ctx);
  LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef ctxp = LLVMGetParam(fn, 0);
  FcKernel k = {
      .cg = cg,
      .op = op,
      .ctx = cg->ctx,
      .mod = cg->mod,
      .b = b,
      .fn = fn,
      .target = cg->target,
      .in = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)(op->n_operands ? op->n_operands : 1)),
      .out = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)(op->n_results ? op->n_results : 1)),
      .begin = LLVMGetParam(fn, 1),
      .end = LLVMGetParam(fn, 2),
      .outer = 1,
      .work_per_outer = 1,
      .diag = diag,
  };
  for (int i = 0; i < op->n_operands; i++)
    k.in[i] = op->operands[i].value ? load_ctx_ptr(cg, b, ctxp, i) : NULL;
  for (int i = 0; i < op->n_results; i++) k.out[i] = load_ctx_ptr(cg, b, ctxp, op->n_operands + i);
  cg->status = load_ctx_ptr(cg, b, ctxp, op->n_operands + op->n_results);
  cg->scratch_base = load_ctx_ptr(cg, b, ctxp, op->n_operands + op->n_results + 1);
  cg->kernel_scratch = 0;
  memset(cg->kernel_subst, 0, sizeof cg->kernel_subst);
  cg->kernel_coarse = false;
  cg->kernel_index = index;
  FcStatus st = emitters[op->kind](&k);
  if (st == FC_OK) {
    FC_ASSERT(LLVMGetInsertBlock(b) && !LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(b)));
    LLVMBuildRetVoid(b);
  } else {
    if (diag->status == FC_OK) fc_error_node(diag, st, fc_op_name(op), info->name, "kernel emitter failed without a message");
    LLVMDeleteFunction(fn); /* half built; the module must still verify if the caller goes on */
    fn = NULL;
  }
  LLVMDisposeBuilder(b);
  cg->status = NULL;
  cg->scratch_base = NULL;
  LLVMValueRef *subst = NULL;
  for (int i = 0; i < 64 && i < op->n_operands; i++)
    if (cg->kernel_subst[i]) {
      if (!subst) subst = FC_NEW_ARRAY(cg->arena, LLVMValueRef, 64);
      subst[i] = cg->kernel_subst[i];
    }
  *out = (CgKernel){op, fn, k.outer, k.work_per_outer, cg->kernel_scratch > 0, subst, cg->kernel_coarse};
  return st;
}

/* ---- shared kernels ------------------------------------------------------------------------------------------ */

/* Kernels built so far, as IR text with the function's own name blanked. */
typedef struct SharedKernels {
  char **text;
  LLVMValueRef *fn;
  int n;
} SharedKernels;

/* Ops of the same shape, attributes and epilogue produce the same kernel body (their weights come
 * through ctx slots: fc_kernel_substitute_operand), and a ResNet repeats each conv shape several times.
 * A kernel whose IR text, its name aside, equals an earlier one's is deleted and the earlier function
 * called instead, so LLVM optimises and compiles each distinct kernel once. Text equality is the whole
 * test: anything op-specific (a table global, a kernel index for run-time errors) makes texts differ.
 * Metadata numbers are ignored: the only metadata kernels carry are loop hints, which are performance
 * advice and made by the same emitter code for the same instructions. */
static void share_kernel(FcCg *cg, SharedKernels *sk, CgKernel *k) {
  char *text = LLVMPrintValueToString(k->fn);
  size_t nlen = 0;
  const char *name = LLVMGetValueName2(k->fn, &nlen);
  /* The name is in the header line only; it is dropped, not blanked, since names differ in length (k9_conv,
   * k10_conv). Metadata attachments (loop hints) print as module-wide numbers, !0, !27, ...: their numbers
   * are dropped too. */
  char *at = nlen > 0 ? strstr(text, name) : NULL;
  char *w = text;
  for (const char *r = text; *r; r++) {
    if (r == at) {
      r += nlen - 1;
      continue;
    }
    *w++ = *r;
    if (*r == '!')
      while (r[1] >= '0' && r[1] <= '9') r++;
  }
  *w = '\0';
  for (int i = 0; i < sk->n; i++)
    if (strcmp(sk->text[i], text) == 0) {
      LLVMDeleteFunction(k->fn);
      k->fn = sk->fn[i];
      LLVMDisposeMessage(text);
      cg->kernels_shared++;
      return;
    }
  sk->text[sk->n] = text;
  sk->fn[sk->n++] = k->fn;
}

/* ---- per-task scratch and re-laid-out constants ---------------------------------------------------------- */

LLVMValueRef fc_kernel_scratch(FcKernel *k, int64_t bytes) {
  FcCg *cg = k->cg;
  FC_ASSERT(cg->kernel_scratch == 0 && cg->scratch_base);
  int64_t slot = bytes < 1 ? 64 : bytes;
  if (slot > INT64_MAX / FC_CG_SCRATCH_SLOTS - 64) slot = INT64_MAX / FC_CG_SCRATCH_SLOTS - 64; /* caught by the workspace check */
  slot = (slot + 63) / 64 * 64;
  cg->kernel_scratch = slot;
  if (slot > cg->scratch_slot_max) cg->scratch_slot_max = slot;
  LLVMTypeRef fty = LLVMFunctionType(cg->i32, NULL, 0, 0);
  LLVMValueRef f = LLVMGetNamedFunction(cg->mod, "frt_task_index");
  if (!f) f = LLVMAddFunction(cg->mod, "frt_task_index", fty);
  LLVMValueRef idx = LLVMBuildCall2(k->b, fty, f, NULL, 0, "task");
  LLVMValueRef off = LLVMBuildMul(k->b, LLVMBuildZExt(k->b, idx, cg->i64, ""), LLVMConstInt(cg->i64, (unsigned long long)slot, 0), "");
  return LLVMBuildInBoundsGEP2(k->b, cg->i8, cg->scratch_base, &off, 1, "scratch");
}

void fc_kernel_one_chunk_per_thread(FcKernel *k) { k->cg->kernel_coarse = true; }

LLVMValueRef fc_kernel_cached_key(FcKernel *k) {
  fc_kernel_one_chunk_per_thread(k);
  LLVMValueRef key = fc_cg_entry_alloca(k, fc_cg_i64(k), "cached_key");
  LLVMBuildStore(k->b, fc_cg_const_i64(k, -1), key);
  return key;
}

bool fc_kernel_operand_in_result(const FcKernel *k, int i) {
  return fc_memplan_is_concat_part(&k->cg->plan, k->op, i);
}

LLVMValueRef fc_kernel_substitute_operand(FcKernel *k, int i, LLVMValueRef global) {
  FC_ASSERT(i >= 0 && i < 64 && i < k->op->n_operands && k->in[i]);
  k->cg->kernel_subst[i] = global;
  return k->in[i];
}

LLVMValueRef fc_cg_const_bytes(FcKernel *k, const void *data, size_t nbytes, const char *name) {
  return bytes_global(k->cg, name, data, nbytes, FC_MEMPLAN_ALIGN, false);
}

/* ---- the run function ------------------------------------------------------------------------------------- */

/* Where one graph's values are while its code runs. */
typedef struct RunState {
  LLVMBuilderRef b;
  LLVMValueRef ws;
  LLVMValueRef *in_ptrs, *out_ptrs; /* the function: the caller's buffers, loaded once in the entry block; a
                                       region: its block arguments' and its yield's (emit_loop, emit_if) */
  int64_t ws_base;                  /* the graph's area of the workspace */
} RunState;

/* The address of value v's bytes while the model runs. */
static LLVMValueRef value_addr(FcCg *cg, RunState *rs, const FcValue *v) {
  FC_ASSERT(v->id < cg->plan.n_values);
  const FcBufAssign *a = &cg->plan.by_value[v->id];
  FC_ASSERT(a->root < cg->plan.n_values);
  const FcBufAssign *r = &cg->plan.by_value[a->root];
  switch (r->kind) {
  case FC_BUF_WORKSPACE: {
    /* a->offset: the root's block plus where v starts in it (a concat part's slice) */
    LLVMValueRef off = LLVMConstInt(cg->i64, (unsigned long long)(a->offset + FC_CG_STATUS_BYTES + rs->ws_base), 0);
    return LLVMBuildInBoundsGEP2(rs->b, cg->i8, rs->ws, &off, 1, "");
  }
  case FC_BUF_INPUT: return rs->in_ptrs[r->index];
  case FC_BUF_OUTPUT: {
    if (!a->offset) return rs->out_ptrs[r->index];
    LLVMValueRef off = LLVMConstInt(cg->i64, (unsigned long long)a->offset, 0);
    return LLVMBuildInBoundsGEP2(rs->b, cg->i8, rs->out_ptrs[r->index], &off, 1, "");
  }
  case FC_BUF_CONSTANT: return const_global(cg, r->index);
  default: FC_UNREACHABLE();
  }
}

/* What the run function's code needs everywhere: its arguments, the ctx slots, the runtime's entry points. */
typedef struct RunFn {
  LLVMValueRef fn, slots, scratch, pool;
  LLVMTypeRef task_ty, pf_ty, pfm_ty, pt_ty, tick_ty;
  LLVMValueRef pf, pfm, pt, tick;
  const CgKernel *ks;
  CgGraph *graphs;
  int n_graphs;
} RunFn;

static LLVMValueRef runtime_fn(FcCg *cg, const char *name, LLVMTypeRef ty) {
  LLVMValueRef f = LLVMGetNamedFunction(cg->mod, name);
  return f ? f : LLVMAddFunction(cg->mod, name, ty);
}

static void profile_tick(FcCg *cg, const RunFn *rf, LLVMBuilderRef b, int index) {
  LLVMValueRef args[2] = {rf->pool, LLVMConstInt(cg->i32, (unsigned long long)index, 1)};
  LLVMBuildCall2(b, rf->tick_ty, rf->tick, args, 2, "");
}

static LLVMValueRef ws_at(FcCg *cg, RunState *rs, int64_t off) {
  LLVMValueRef o = LLVMConstInt(cg->i64, (unsigned long long)(off + FC_CG_STATUS_BYTES), 0);
  return LLVMBuildInBoundsGEP2(rs->b, cg->i8, rs->ws, &o, 1, "");
}

static void copy_bytes(FcCg *cg, LLVMBuilderRef b, LLVMValueRef dst, LLVMValueRef src, int64_t n) {
  if (n > 0) LLVMBuildMemCpy(b, dst, 1, src, 1, LLVMConstInt(cg->i64, (unsigned long long)n, 0));
}

/* Calls kernel i with its operands and results in the ctx slots. */
static void call_kernel(FcCg *cg, const RunFn *rf, RunState *rs, int i) {
  const CgKernel *kk = &rf->ks[i];
  const FcOp *op = kk->op;
  LLVMBuilderRef b = rs->b;
  if (kk->outer == 0) return; /* an empty tensor: nothing to compute */
  int slot = 0;
  for (int j = 0; j < op->n_operands + op->n_results + 2; j++) {
    LLVMValueRef a;
    if (j < op->n_operands) {
      const FcValue *v = op->operands[j].value;
      if (j < 64 && kk->subst && kk->subst[j]) a = kk->subst[j];
      else a = v ? value_addr(cg, rs, v) : LLVMConstNull(cg->ptr);
    } else if (j < op->n_operands + op->n_results) {
      a = value_addr(cg, rs, &op->results[j - op->n_operands]);
    } else if (j == op->n_operands + op->n_results) {
      a = rs->ws;
    } else {
      a = rf->scratch;
    }
    LLVMValueRef idx = LLVMConstInt(cg->i64, (unsigned long long)slot++, 0);
    LLVMBuildStore(b, a, LLVMBuildInBoundsGEP2(b, cg->ptr, rf->slots, &idx, 1, ""));
  }
  bool parallel = kk->outer > 1 && (double)kk->outer * kk->work_per_outer >= FC_CG_PARALLEL_MIN_WORK;
  if (parallel && (kk->scratch || kk->coarse)) {
    LLVMValueRef max_chunks = LLVMConstInt(cg->i32, FC_CG_SCRATCH_SLOTS, 0);
    if (kk->coarse) {
      /* min(threads, slots): frt_pool_threads at run time */
      LLVMValueRef t = LLVMBuildCall2(b, rf->pt_ty, rf->pt, (LLVMValueRef[]){rf->pool}, 1, "threads");
      if (kk->scratch) t = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, t, max_chunks, ""), t, max_chunks, "");
      max_chunks = t;
    }
    LLVMValueRef args[5] = {rf->pool, LLVMConstInt(cg->i64, (unsigned long long)kk->outer, 0), max_chunks, kk->fn,
                            rf->slots};
    LLVMBuildCall2(b, rf->pfm_ty, rf->pfm, args, 5, "");
  } else if (parallel) {
    LLVMValueRef args[4] = {rf->pool, LLVMConstInt(cg->i64, (unsigned long long)kk->outer, 0), kk->fn, rf->slots};
    LLVMBuildCall2(b, rf->pf_ty, rf->pf, args, 4, "");
  } else {
    LLVMValueRef args[3] = {rf->slots, LLVMConstInt(cg->i64, 0, 0),
                            LLVMConstInt(cg->i64, (unsigned long long)kk->outer, 0)};
    LLVMBuildCall2(b, rf->task_ty, kk->fn, args, 3, "");
  }
  profile_tick(cg, rf, b, i);
}

static void emit_graph(FcCg *cg, const RunFn *rf, CgGraph *cgg, RunState *rs);

/* The addresses of op's operands and results, taken while the plan of the graph holding op is current. */
static void op_addrs(FcCg *cg, RunState *rs, const FcOp *op, LLVMValueRef *in, LLVMValueRef *out) {
  for (int i = 0; i < op->n_operands; i++) in[i] = value_addr(cg, rs, op->operands[i].value);
  for (int i = 0; i < op->n_results; i++) out[i] = value_addr(cg, rs, &op->results[i]);
}

/* Sets the run's status word to 1 + index unless a kernel set it already. */
static void flag_status(FcCg *cg, LLVMBuilderRef b, LLVMValueRef ws, int index) {
  LLVMValueRef cur = LLVMBuildLoad2(b, cg->i32, ws, "");
  LLVMValueRef is0 = LLVMBuildICmp(b, LLVMIntEQ, cur, LLVMConstInt(cg->i32, 0, 0), "");
  LLVMBuildStore(b, LLVMBuildSelect(b, is0, LLVMConstInt(cg->i32, (unsigned long long)index + 1, 0), cur, ""), ws);
}

/* flow.loop `op` (kernel list entry `index`) as a loop of the run function (the contract in ir.h). */
static void emit_loop(FcCg *cg, const RunFn *rf, CgGraph *outer, RunState *rs, const FcOp *op, int index) {
  LLVMBuilderRef b = rs->b;
  CgGraph *body = graph_of(rf->graphs, rf->n_graphs, op->regions[0]);
  int k = fc_loop_num_carried(op), s = op->n_results - k, c = op->n_operands - 2 - k;
  LLVMValueRef *in = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)op->n_operands);
  LLVMValueRef *out = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)(op->n_results ? op->n_results : 1));
  op_addrs(cg, rs, op, in, out);
  /* The state after the body's plan. */
  int64_t at = body->state_base;
  LLVMValueRef iter = ws_at(cg, rs, at), cond = ws_at(cg, rs, at + FC_MEMPLAN_ALIGN);
  at += 2 * FC_MEMPLAN_ALIGN;
  LLVMValueRef *carry = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)(k ? k : 1));
  LLVMValueRef *next = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)(k ? k : 1));
  int64_t *size = FC_NEW_ARRAY(cg->arena, int64_t, (size_t)(k ? k : 1));
  for (int j = 0; j < k; j++) {
    fc_type_nbytes(&op->operands[2 + j].value->type, &size[j]);
    carry[j] = ws_at(cg, rs, at);
    at += round_block(size[j]);
  }
  LLVMValueRef cond_next = ws_at(cg, rs, at);
  at += FC_MEMPLAN_ALIGN;
  for (int j = 0; j < k; j++) {
    next[j] = ws_at(cg, rs, at);
    at += round_block(size[j]);
  }
  for (int j = 0; j < k; j++) copy_bytes(cg, b, carry[j], in[2 + j], size[j]);
  int64_t *row = FC_NEW_ARRAY(cg->arena, int64_t, (size_t)(s ? s : 1));
  for (int j = 0; j < s; j++) {
    int64_t n = 0;
    fc_type_nbytes(&op->results[k + j].type, &n);
    int64_t len = op->results[k + j].type.dims[0];
    row[j] = len > 0 ? n / len : 0;
    if (n > 0)
      LLVMBuildMemSet(b, out[k + j], LLVMConstInt(cg->i8, 0, 0), LLVMConstInt(cg->i64, (unsigned long long)n, 0), 1);
  }
  LLVMValueRef trip = LLVMBuildLoad2(b, cg->i64, in[0], "trip");
  LLVMBuildStore(b, LLVMConstInt(cg->i64, 0, 0), iter);
  LLVMBuildStore(b, LLVMBuildLoad2(b, cg->i8, in[1], ""), cond);
  profile_tick(cg, rf, b, index);

  LLVMBasicBlockRef header = LLVMAppendBasicBlockInContext(cg->ctx, rf->fn, "loop");
  LLVMBasicBlockRef run = LLVMAppendBasicBlockInContext(cg->ctx, rf->fn, "loop_body");
  LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(cg->ctx, rf->fn, "loop_exit");
  LLVMBuildBr(b, header);
  LLVMPositionBuilderAtEnd(b, header);
  LLVMValueRef i = LLVMBuildLoad2(b, cg->i64, iter, "iter");
  LLVMValueRef cond_now = LLVMBuildLoad2(b, cg->i8, cond, "");
  LLVMValueRef go = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSLT, i, trip, ""),
                                 LLVMBuildICmp(b, LLVMIntNE, cond_now, LLVMConstInt(cg->i8, 0, 0), ""), "");
  if (s > 0) {
    /* One more iteration than scan_len rows: the run's error, never a write past the result. */
    LLVMBasicBlockRef check = LLVMAppendBasicBlockInContext(cg->ctx, rf->fn, "loop_check");
    LLVMBasicBlockRef over = LLVMAppendBasicBlockInContext(cg->ctx, rf->fn, "loop_overflow");
    LLVMBuildCondBr(b, go, check, exit);
    LLVMPositionBuilderAtEnd(b, check);
    LLVMValueRef len = LLVMConstInt(cg->i64, (unsigned long long)fc_loop_scan_len(op), 0);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGE, i, len, ""), over, run);
    LLVMPositionBuilderAtEnd(b, over);
    flag_status(cg, b, rs->ws, index);
    LLVMBuildBr(b, exit);
  } else {
    LLVMBuildCondBr(b, go, run, exit);
  }
  LLVMPositionBuilderAtEnd(b, run);
  RunState brs = {.b = b, .ws = rs->ws, .ws_base = body->ws_base};
  brs.in_ptrs = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)(2 + k + c));
  brs.out_ptrs = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)(1 + k + s));
  brs.in_ptrs[0] = iter;
  brs.in_ptrs[1] = cond;
  for (int j = 0; j < k; j++) brs.in_ptrs[2 + j] = carry[j];
  for (int j = 0; j < c; j++) brs.in_ptrs[2 + k + j] = in[2 + k + j];
  brs.out_ptrs[0] = cond_next;
  for (int j = 0; j < k; j++) brs.out_ptrs[1 + j] = next[j];
  for (int j = 0; j < s; j++) {
    LLVMValueRef off = LLVMBuildMul(b, i, LLVMConstInt(cg->i64, (unsigned long long)row[j], 0), "");
    brs.out_ptrs[1 + k + j] = LLVMBuildInBoundsGEP2(b, cg->i8, out[k + j], &off, 1, "row");
  }
  emit_graph(cg, rf, body, &brs);
  enter_graph(cg, outer);
  for (int j = 0; j < k; j++) copy_bytes(cg, b, carry[j], next[j], size[j]);
  LLVMBuildStore(b, LLVMBuildLoad2(b, cg->i8, cond_next, ""), cond);
  LLVMBuildStore(b, LLVMBuildAdd(b, i, LLVMConstInt(cg->i64, 1, 0), ""), iter);
  profile_tick(cg, rf, b, index);
  LLVMBuildBr(b, header);
  LLVMPositionBuilderAtEnd(b, exit);
  for (int j = 0; j < k; j++) copy_bytes(cg, b, out[j], carry[j], size[j]);
  profile_tick(cg, rf, b, index);
}

/* flow.if `op` as a branch: each region reads the captured values where they are and yields straight into
 * the if's results. */
static void emit_if(FcCg *cg, const RunFn *rf, CgGraph *outer, RunState *rs, const FcOp *op, int index) {
  LLVMBuilderRef b = rs->b;
  LLVMValueRef *in = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)op->n_operands);
  LLVMValueRef *out = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)(op->n_results ? op->n_results : 1));
  op_addrs(cg, rs, op, in, out);
  LLVMValueRef c = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildLoad2(b, cg->i8, in[0], ""), LLVMConstInt(cg->i8, 0, 0), "");
  profile_tick(cg, rf, b, index);
  LLVMBasicBlockRef bb[2] = {LLVMAppendBasicBlockInContext(cg->ctx, rf->fn, "then"),
                             LLVMAppendBasicBlockInContext(cg->ctx, rf->fn, "else")};
  LLVMBasicBlockRef merge = LLVMAppendBasicBlockInContext(cg->ctx, rf->fn, "endif");
  LLVMBuildCondBr(b, c, bb[0], bb[1]);
  for (int r = 0; r < 2; r++) {
    LLVMPositionBuilderAtEnd(b, bb[r]);
    CgGraph *region = graph_of(rf->graphs, rf->n_graphs, op->regions[r]);
    RunState brs = {.b = b, .ws = rs->ws, .in_ptrs = in + 1, .out_ptrs = out, .ws_base = region->ws_base};
    emit_graph(cg, rf, region, &brs);
    enter_graph(cg, outer);
    LLVMBuildBr(b, merge);
  }
  LLVMPositionBuilderAtEnd(b, merge);
}

/* The code of one graph: its kernels and region ops in order, then the copies into its outputs that the
 * plan could not compute in place (inputs, constants, repeated values). */
static void emit_graph(FcCg *cg, const RunFn *rf, CgGraph *cgg, RunState *rs) {
  enter_graph(cg, cgg);
  fc_graph_for_each_op(cgg->g, op) {
    int i = op->id < cgg->g->next_op_id ? cgg->kernel_of[op->id] : -1;
    if (i < 0) continue;
    if (op->kind == FC_OP_LOOP) emit_loop(cg, rf, cgg, rs, op, i);
    else if (op->kind == FC_OP_IF) emit_if(cg, rf, cgg, rs, op, i);
    else call_kernel(cg, rf, rs, i);
  }
  int n_out = fc_graph_num_outputs(cgg->g);
  for (int i = 0; i < n_out; i++) {
    if (!fc_memplan_graph_output_is_copy(cgg->g, &cg->plan, i)) continue;
    const FcValue *v = fc_graph_output(cgg->g, i);
    copy_bytes(cg, rs->b, rs->out_ptrs[i], value_addr(cg, rs, v), cg->plan.by_value[v->id].size);
  }
}

static LLVMValueRef build_run(FcCg *cg, const CgKernel *ks, int n_kernels, CgGraph *graphs, int n_graphs,
                              int64_t areas_bytes, const char *prefix) {
  FcGraph *g = cg->m->graph;
  char name[256];
  snprintf(name, sizeof name, "%s_run", prefix);
  LLVMTypeRef params[4] = {cg->ptr, cg->ptr, cg->ptr, cg->ptr};
  LLVMValueRef fn = LLVMAddFunction(cg->mod, name, LLVMFunctionType(cg->i32, params, 4, 0));
  unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, nounwind, 0));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(cg->ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(cg->ctx, fn, "entry"));
  RunState rs = {.b = b, .ws = LLVMGetParam(fn, 2), .ws_base = graphs[0].ws_base};
  int n_out = fc_graph_num_outputs(g);
  rs.in_ptrs = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)(g->n_inputs ? g->n_inputs : 1));
  rs.out_ptrs = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)(n_out ? n_out : 1));
  for (int i = 0; i < g->n_inputs; i++) rs.in_ptrs[i] = load_ctx_ptr(cg, b, LLVMGetParam(fn, 0), i);
  for (int i = 0; i < n_out; i++) rs.out_ptrs[i] = load_ctx_ptr(cg, b, LLVMGetParam(fn, 1), i);
  LLVMBuildStore(b, LLVMConstInt(cg->i32, 0, 0), rs.ws);

  int max_slots = 1;
  for (int i = 0; i < n_kernels; i++) {
    int n = ks[i].op->n_operands + ks[i].op->n_results + 2;
    if (ks[i].fn && n > max_slots) max_slots = n;
  }
  RunFn rf = {.fn = fn, .pool = LLVMGetParam(fn, 3), .ks = ks, .graphs = graphs, .n_graphs = n_graphs};
  rf.slots = LLVMBuildArrayAlloca(b, cg->ptr, LLVMConstInt(cg->i32, (unsigned long long)max_slots, 0), "ctx");
  /* The entry block ends once every global is made (the constants are, on first use, below): with the
   * one-time expansion of the weights stored in 16 bits, when there are some. */
  LLVMBasicBlockRef entry = LLVMGetInsertBlock(b), body = LLVMAppendBasicBlockInContext(cg->ctx, fn, "run");
  LLVMPositionBuilderAtEnd(b, body);
  rf.task_ty = LLVMFunctionType(cg->v, (LLVMTypeRef[]){cg->ptr, cg->i64, cg->i64}, 3, 0);
  rf.pf_ty = LLVMFunctionType(cg->v, (LLVMTypeRef[]){cg->ptr, cg->i64, cg->ptr, cg->ptr}, 4, 0);
  rf.pf = runtime_fn(cg, "frt_parallel_for", rf.pf_ty);
  rf.pfm_ty = LLVMFunctionType(cg->v, (LLVMTypeRef[]){cg->ptr, cg->i64, cg->i32, cg->ptr, cg->ptr}, 5, 0);
  rf.pfm = runtime_fn(cg, "frt_parallel_for_max", rf.pfm_ty);
  rf.pt_ty = LLVMFunctionType(cg->i32, (LLVMTypeRef[]){cg->ptr}, 1, 0);
  rf.pt = runtime_fn(cg, "frt_pool_threads", rf.pt_ty);
  rf.scratch = ws_at(cg, &rs, areas_bytes);
  /* --profile: a tick before the first kernel and after each one (runtime/flowrt.h) */
  rf.tick_ty = LLVMFunctionType(cg->v, (LLVMTypeRef[]){cg->ptr, cg->i32}, 2, 0);
  rf.tick = runtime_fn(cg, "frt_profile_tick", rf.tick_ty);
  profile_tick(cg, &rf, b, -1);
  emit_graph(cg, &rf, &graphs[0], &rs);
  LLVMValueRef status = LLVMBuildLoad2(b, cg->i32, rs.ws, "status");
  LLVMBuildRet(b, status);
  LLVMPositionBuilderAtEnd(b, entry);
  fc_cg_weights_expand_once(cg, b, body);
  LLVMDisposeBuilder(b);
  return fn;
}

/* ---- the model descriptor ----------------------------------------------------------------------------------- */

static LLVMValueRef tensor_descs(FcCg *cg, const char *what, int n, FcValue *const *vals, const char *const *names) {
  LLVMTypeRef desc_ty = LLVMStructTypeInContext(cg->ctx, (LLVMTypeRef[]){cg->ptr, cg->i32, cg->i32, cg->ptr}, 4, 0);
  if (n == 0) return LLVMConstNull(cg->ptr);
  LLVMValueRef *elems = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)n);
  for (int i = 0; i < n; i++) {
    const FcType *t = &vals[i]->type;
    char fallback[48];
    snprintf(fallback, sizeof fallback, "%s_%d", what, i);
    const char *nm = names[i] && *names[i] ? names[i] : fallback;
    int rank = t->rank;
    LLVMValueRef *dims = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)(rank ? rank : 1));
    for (int d = 0; d < rank; d++) dims[d] = LLVMConstInt(cg->i64, (unsigned long long)t->dims[d], 0);
    if (!rank) dims[0] = LLVMConstInt(cg->i64, 0, 0); /* a valid pointer even for a scalar */
    LLVMValueRef arr = LLVMConstArray2(cg->i64, dims, (uint64_t)(rank ? rank : 1));
    LLVMValueRef dg = LLVMAddGlobal(cg->mod, LLVMTypeOf(arr), ".dims");
    LLVMSetInitializer(dg, arr);
    LLVMSetGlobalConstant(dg, 1);
    LLVMSetLinkage(dg, LLVMPrivateLinkage);
    LLVMValueRef f[4] = {string_global(cg, nm), LLVMConstInt(cg->i32, (unsigned long long)fc_dtype_to_onnx(t->dtype), 0),
                         LLVMConstInt(cg->i32, (unsigned long long)rank, 0), dg};
    elems[i] = LLVMConstNamedStruct(desc_ty, f, 4);
  }
  LLVMValueRef arr = LLVMConstArray2(desc_ty, elems, (uint64_t)n);
  LLVMValueRef gd = LLVMAddGlobal(cg->mod, LLVMTypeOf(arr), what);
  LLVMSetInitializer(gd, arr);
  LLVMSetGlobalConstant(gd, 1);
  LLVMSetLinkage(gd, LLVMPrivateLinkage);
  return gd;
}

static const char *model_display_name(FcCg *cg) {
  const char *src = cg->m->source ? cg->m->source : "model";
  const char *base = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
  const char *dot = strrchr(base, '.');
  return fc_arena_strndup(cg->arena, base, dot && dot != base ? (size_t)(dot - base) : strlen(base));
}

static void build_model(FcCg *cg, const CgKernel *ks, int n_kernels, LLVMValueRef run, const char *prefix,
                        int64_t ws_bytes) {
  FcGraph *g = cg->m->graph;
  int n_out = fc_graph_num_outputs(g);
  FcValue **outs = FC_NEW_ARRAY(cg->arena, FcValue *, (size_t)(n_out ? n_out : 1));
  const char **out_names = FC_NEW_ARRAY(cg->arena, const char *, (size_t)(n_out ? n_out : 1));
  const char **in_names = FC_NEW_ARRAY(cg->arena, const char *, (size_t)(g->n_inputs ? g->n_inputs : 1));
  for (int i = 0; i < n_out; i++) {
    outs[i] = fc_graph_output(g, i);
    out_names[i] = fc_graph_output_name(g, i);
  }
  for (int i = 0; i < g->n_inputs; i++) in_names[i] = g->inputs[i]->name;
  LLVMValueRef names = LLVMConstNull(cg->ptr), flops = LLVMConstNull(cg->ptr);
  if (n_kernels) {
    LLVMValueRef *strs = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)n_kernels);
    for (int i = 0; i < n_kernels; i++) {
      char *s = fc_arena_printf(cg->arena, "node '%s' (%s)", fc_op_name(ks[i].op), fc_op_info(ks[i].op->kind)->name);
      strs[i] = string_global(cg, s);
    }
    LLVMValueRef arr = LLVMConstArray2(cg->ptr, strs, (uint64_t)n_kernels);
    names = LLVMAddGlobal(cg->mod, LLVMTypeOf(arr), ".kernel_names");
    LLVMSetInitializer(names, arr);
    LLVMSetGlobalConstant(names, 1);
    LLVMSetLinkage(names, LLVMPrivateLinkage);
    /* Each kernel's FLOPs (ir/op_macs.c's convention), for --profile; 0 where it counts none or overflows. */
    LLVMTypeRef f64 = LLVMDoubleTypeInContext(cg->ctx);
    LLVMValueRef *fl = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)n_kernels);
    for (int i = 0; i < n_kernels; i++) {
      int64_t macs;
      fl[i] = LLVMConstReal(f64, fc_op_macs(ks[i].op, &macs) ? 2.0 * (double)macs : 0.0);
    }
    LLVMValueRef farr = LLVMConstArray2(f64, fl, (uint64_t)n_kernels);
    flops = LLVMAddGlobal(cg->mod, LLVMTypeOf(farr), ".kernel_flops");
    LLVMSetInitializer(flops, farr);
    LLVMSetGlobalConstant(flops, 1);
    LLVMSetLinkage(flops, LLVMPrivateLinkage);
  }
  /* The features the code may use, which the runtime checks before running it (runtime/cpu.c). */
  char features[1024];
  fc_cg_cpu_features(cg->target, features, sizeof features);
  char *cpu = LLVMGetTargetMachineCPU(cg->tm);
  LLVMValueRef cpu_name = string_global(cg, cpu);
  LLVMDisposeMessage(cpu);
  /* The mesh of an SBP program (flow.mesh, annot.c: each dim >= 1, product <= INT32_MAX). */
  const int64_t *mesh;
  int n_axes = fc_module_mesh(cg->m, &mesh);
  int64_t n_ranks = 0;
  LLVMValueRef mesh_global = LLVMConstNull(cg->ptr);
  if (n_axes > 0 && fc_mesh_group_size(cg->m, -1, &n_ranks)) {
    LLVMValueRef *dv = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)n_axes);
    for (int i = 0; i < n_axes; i++) dv[i] = LLVMConstInt(cg->i32, (unsigned long long)mesh[i], 0);
    LLVMValueRef arr = LLVMConstArray2(cg->i32, dv, (uint64_t)n_axes);
    mesh_global = LLVMAddGlobal(cg->mod, LLVMTypeOf(arr), ".mesh");
    LLVMSetInitializer(mesh_global, arr);
    LLVMSetGlobalConstant(mesh_global, 1);
    LLVMSetLinkage(mesh_global, LLVMPrivateLinkage);
  } else {
    n_axes = 0;
  }
  LLVMTypeRef model_ty = LLVMStructTypeInContext(
      cg->ctx,
      (LLVMTypeRef[]){cg->i32, cg->ptr, cg->i32, cg->i32, cg->ptr, cg->ptr, cg->i64, cg->ptr, cg->i32, cg->ptr, cg->ptr,
                      cg->ptr, cg->ptr, cg->i32, cg->ptr, cg->i32, cg->i32, cg->ptr, cg->ptr, cg->i32},
      20, 0);
  /* The GPU half (--device cuda) is its own object defining FrtGpuModel `gpu_symbol` (codegen/gpu_emit.c). */
  LLVMValueRef gpu = LLVMConstNull(cg->ptr);
  if (cg->opts->gpu_symbol) {
    gpu = LLVMGetNamedGlobal(cg->mod, cg->opts->gpu_symbol);
    if (!gpu) gpu = LLVMAddGlobal(cg->mod, LLVMInt8TypeInContext(cg->ctx), cg->opts->gpu_symbol);
  }
  /* A rank-specialised program (flow.rank) runs on its rank only (frt_model_variant, frt_main). */
  int64_t rank = n_axes > 0 ? fc_module_rank(cg->m) : -1;
  LLVMValueRef f[20] = {
      LLVMConstInt(cg->i32, 8, 0), /* FRT_ABI_VERSION */
      string_global(cg, model_display_name(cg)),
      LLVMConstInt(cg->i32, (unsigned long long)g->n_inputs, 0),
      LLVMConstInt(cg->i32, (unsigned long long)n_out, 0),
      tensor_descs(cg, ".inputs", g->n_inputs, g->inputs, in_names),
      tensor_descs(cg, ".outputs", n_out, outs, out_names),
      LLVMConstInt(cg->i64, (unsigned long long)ws_bytes, 0),
      run,
      LLVMConstInt(cg->i32, (unsigned long long)n_kernels, 0),
      names,
      flops,
      cpu_name,
      string_global(cg, features),
      LLVMConstInt(cg->i32, 0, 0), /* n_variants: cg_dispatch.c makes multiversioned descriptors */
      LLVMConstNull(cg->ptr),
      LLVMConstInt(cg->i32, (unsigned long long)n_ranks, 0), /* 0: one process; N: an SBP program */
      LLVMConstInt(cg->i32, (unsigned long long)n_axes, 0),
      mesh_global,
      gpu,
      LLVMConstInt(cg->i32, (unsigned long long)rank, 1), /* -1: any rank */
  };
  char name[256];
  snprintf(name, sizeof name, "%s_model", prefix);
  LLVMValueRef gm = LLVMAddGlobal(cg->mod, model_ty, name);
  LLVMSetInitializer(gm, LLVMConstNamedStruct(model_ty, f, 20));
  LLVMSetGlobalConstant(gm, 1);
  LLVMSetAlignment(gm, 8);
}

/* ---- entry points ---------------------------------------------------------------------------------------------- */

/* Plans every graph of the module and lays their areas out one after the other; *areas gets their total. */
static FcStatus plan_graphs(FcModule *m, CgGraph *gs, int n, int64_t *areas, FcDiag *diag) {
  int64_t at = 0;
  for (int i = 0; i < n; i++) {
    CgGraph *cgg = &gs[i];
    FcStatus st = fc_memplan_graph(cgg->g, NULL, &m->arena, &cgg->plan, diag);
    if (st != FC_OK) return st;
    cgg->ws_base = at;
    int64_t state = 0;
    if (!fc_checked_add(at, cgg->plan.workspace_bytes, &at))
      return fc_error(diag, FC_ERR_LIMIT, "the workspace size overflows");
    cgg->state_base = at;
    FcOp *parent = cgg->g->parent;
    if (parent && parent->kind == FC_OP_LOOP && (!loop_state_bytes(parent, &state) || !fc_checked_add(at, state, &at)))
      return fc_error(diag, FC_ERR_LIMIT, "the workspace size overflows");
    cgg->kernel_of = FC_NEW_ARRAY(&m->arena, int, (size_t)(cgg->g->next_op_id ? cgg->g->next_op_id : 1));
    for (uint32_t j = 0; j < cgg->g->next_op_id; j++) cgg->kernel_of[j] = -1;
  }
  *areas = at;
  return FC_OK;
}

FcStatus fc_codegen_module(FcModule *m, const FcCodegenOptions *o, LLVMContextRef ctx, const FcTarget *target,
                           LLVMModuleRef *out, FcDiag *diag) {
  *out = NULL;
  int n_graphs = fc_module_graphs(m, NULL, 0);
  FcGraph **glist = FC_NEW_ARRAY(&m->arena, FcGraph *, (size_t)n_graphs);
  fc_module_graphs(m, glist, n_graphs);
  CgGraph *graphs = FC_NEW_ARRAY(&m->arena, CgGraph, (size_t)n_graphs);
  for (int i = 0; i < n_graphs; i++) graphs[i].g = glist[i];
  /* Ops without an emitter are found before anything is planned or built. */
  FcCgUnsupportedList unsup = {0};
  for (int i = 0; i < n_graphs; i++)
    fc_graph_for_each_op(glist[i], op) if (needs_kernel(op) && !emitters[op->kind])
      fc_cg_unsupported_add(&m->arena, &unsup, op, NULL);
  if (unsup.n) return fc_cg_report_unsupported(&unsup, "unsupported ops in code generation", diag);
  FcStatus st;
  LLVMTargetMachineRef tm = fc_target_tm(target);
  FcCg cg = {.m = m, .opts = o, .ctx = ctx, .tm = tm, .target = target, .arena = &m->arena};
  int64_t areas = 0, ws_bytes = 0;
  st = plan_graphs(m, graphs, n_graphs, &areas, diag);
  if (st != FC_OK) return st;
  if (!fc_checked_add(areas, FC_CG_STATUS_BYTES, &ws_bytes))
    return fc_error(diag, FC_ERR_LIMIT, "the workspace size overflows");
  const char *prefix = o && o->model_name ? o->model_name : "flowc";
  cg.mod = LLVMModuleCreateWithNameInContext(m->source ? m->source : "flowc", ctx);
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(cg.mod, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(cg.mod, td);
  LLVMDisposeTargetData(td);
  cg.ptr = LLVMPointerTypeInContext(ctx, 0);
  cg.i8 = LLVMInt8TypeInContext(ctx);
  cg.i32 = LLVMInt32TypeInContext(ctx);
  cg.i64 = LLVMInt64TypeInContext(ctx);
  cg.v = LLVMVoidTypeInContext(ctx);

  st = FC_OK;
  for (int i = 0; i < n_graphs && st == FC_OK; i++) st = emit_constants(&cg, &graphs[i], diag);
  int n_kernels = 0;
  CgKernel *ks = NULL;
  if (st == FC_OK) {
    int n_ops = 0;
    for (int i = 0; i < n_graphs; i++) fc_graph_for_each_op(glist[i], op) n_ops++;
    ks = FC_NEW_ARRAY(&m->arena, CgKernel, (size_t)(n_ops ? n_ops : 1));
    SharedKernels shared = {.text = FC_NEW_ARRAY(&m->arena, char *, (size_t)(n_ops ? n_ops : 1)),
                            .fn = FC_NEW_ARRAY(&m->arena, LLVMValueRef, (size_t)(n_ops ? n_ops : 1))};
    int n_todo = 0;
    for (int i = 0; i < n_graphs; i++) {
      enter_graph(&cg, &graphs[i]);
      fc_graph_for_each_op(glist[i], op) n_todo += needs_kernel(op) && !fc_memplan_op_is_free(&cg.plan, op);
    }
    /* An emitter may refuse its op (a dtype or attribute it does not handle): those are collected, so
     * that one message lists every op this model needs; any other failure stops at once. */
    int step = 0;
    for (int gi = 0; gi < n_graphs && st == FC_OK; gi++) {
      CgGraph *cgg = &graphs[gi];
      enter_graph(&cg, cgg);
      fc_graph_for_each_op(cgg->g, op) {
        if (is_region_op(op)) { /* a slot for its name and profile time, no function */
          ks[n_kernels] = (CgKernel){.op = op};
          cgg->kernel_of[op->id] = n_kernels++;
          continue;
        }
        if (!needs_kernel(op) || fc_memplan_op_is_free(&cg.plan, op)) continue;
        fc_progress(o ? &o->progress : NULL, "codegen", NULL, ++step, n_todo);
        FcDiag d;
        fc_diag_init(&d);
        st = build_kernel(&cg, op, n_kernels, &ks[n_kernels], &d);
        if (st == FC_OK) share_kernel(&cg, &shared, &ks[n_kernels]);
        if (st == FC_ERR_UNSUPPORTED) {
          fc_cg_unsupported_add(&m->arena, &unsup, op, fc_cg_strip_node_prefix(&m->arena, op, d.msg));
          st = FC_OK;
          continue;
        }
        if (st != FC_OK) {
          fc_error(diag, st, "%s", d.msg);
          break;
        }
        cgg->kernel_of[op->id] = n_kernels++;
      }
    }
    for (int i = 0; i < shared.n; i++) LLVMDisposeMessage(shared.text[i]);
    if (st == FC_OK && unsup.n) st = fc_cg_report_unsupported(&unsup, "unsupported ops in code generation", diag);
  }
  if (st == FC_OK) {
    int64_t scratch_total;
    if (!fc_checked_mul(cg.scratch_slot_max, FC_CG_SCRATCH_SLOTS, &scratch_total) ||
        !fc_checked_add(ws_bytes, scratch_total, &ws_bytes))
      st = fc_error(diag, FC_ERR_LIMIT, "the workspace size overflows");
  }
  if (st == FC_OK) {
    LLVMValueRef run = build_run(&cg, ks, n_kernels, graphs, n_graphs, areas, prefix);
    build_model(&cg, ks, n_kernels, run, prefix, ws_bytes);
    char *msg = NULL;
    if (LLVMVerifyModule(cg.mod, LLVMReturnStatusAction, &msg)) {
      size_t n = strcspn(msg ? msg : "", "\n");
      st = fc_error(diag, FC_ERR_INTERNAL, "generated LLVM IR does not verify: %.*s", (int)n, msg ? msg : "");
    }
    if (msg) LLVMDisposeMessage(msg);
  }
  if (st != FC_OK) {
    LLVMDisposeModule(cg.mod);
    return st;
  }
  *out = cg.mod;
  return FC_OK;
}

FcStatus fc_codegen_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, int opt_level, FcDiag *diag) {
  int lvl = opt_level < 0 ? 0 : opt_level > 3 ? 3 : opt_level;
  char pipeline[16];
  snprintf(pipeline, sizeof pipeline, "default<O%d>", lvl);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(po, lvl >= 2);
  LLVMPassBuilderOptionsSetSLPVectorization(po, lvl >= 2);
  LLVMPassBuilderOptionsSetLoopUnrolling(po, lvl >= 2);
  LLVMErrorRef err = LLVMRunPasses(mod, pipeline, tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (err) {
    char *msg = LLVMGetErrorMessage(err);
    FcStatus st = fc_error(diag, FC_ERR_INTERNAL, "LLVM %s pipeline failed: %s", pipeline, msg);
    LLVMDisposeErrorMessage(msg);
    return st;
  }
  return FC_OK;
}

static void set_string_attr(LLVMContextRef ctx, LLVMValueRef fn, const char *key, const char *val) {
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(ctx, key, (unsigned)strlen(key), val, (unsigned)strlen(val)));
}

void fc_codegen_stamp_target(LLVMModuleRef mod, LLVMTargetMachineRef tm) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  char *cpu = LLVMGetTargetMachineCPU(tm), *features = LLVMGetTargetMachineFeatureString(tm);
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
    if (LLVMIsDeclaration(fn) || LLVMGetStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, "target-cpu", 10))
      continue;
    set_string_attr(ctx, fn, "target-cpu", cpu);
    set_string_attr(ctx, fn, "target-features", features);
  }
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
}
