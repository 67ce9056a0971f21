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
 * Threads: a kernel goes through frt_parallel_for only when it has more than one outer iteration and at
 * least FC_CG_PARALLEL_MIN_WORK estimated scalar operations in all; below that, waking the pool costs
 * more than it saves (a few microseconds against ~10 ns per element-op), so it is called inline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
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

static bool needs_kernel(const FcOp *op) { return op->kind != FC_OP_CONSTANT && op->kind != FC_OP_RETURN; }

/* ---- unsupported ops -------------------------------------------------------------------------------- */

/* An op codegen cannot handle: no emitter for its kind (reason NULL), or its emitter refused it. */
typedef struct Unsupported {
  FcOpKind kind;
  const char *node, *reason;
  int seq;
} Unsupported;

typedef struct UnsupportedList {
  Unsupported *v;
  int n, cap;
} UnsupportedList;

#define FC_CG_UNSUPPORTED_NAMES_PER_KIND 5

static void unsupported_add(FcArena *a, UnsupportedList *l, const FcOp *op, const char *reason) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    Unsupported *nv = FC_NEW_ARRAY(a, Unsupported, (size_t)cap);
    if (l->n) memcpy(nv, l->v, (size_t)l->n * sizeof *nv);
    l->v = nv;
    l->cap = cap;
  }
  l->v[l->n] = (Unsupported){op->kind, fc_op_name(op), reason, l->n};
  l->n++;
}

static int unsupported_cmp(const void *a, const void *b) {
  const Unsupported *x = a, *y = b;
  int c = strcmp(fc_op_info(x->kind)->name, fc_op_info(y->kind)->name);
  return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static bool same_reason(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* One FC_ERR_UNSUPPORTED in the importer's form: "unsupported ops in code generation: det x1 ('d'),
 * cast x2 ('a', 'b': f16 to i4 is not supported)" — kinds in alphabetical order, nodes in graph order. */
static FcStatus report_unsupported(UnsupportedList *l, FcDiag *diag) {
  qsort(l->v, (size_t)l->n, sizeof *l->v, unsupported_cmp);
  char msg[sizeof diag->msg];
  size_t len = 0;
#define PUT(...) (len += len < sizeof msg ? (size_t)snprintf(msg + len, sizeof msg - len, __VA_ARGS__) : 0)
  PUT("unsupported ops in code generation: ");
  for (int i = 0; i < l->n;) {
    int j = i;
    while (j < l->n && l->v[j].kind == l->v[i].kind) j++;
    int shown = j - i < FC_CG_UNSUPPORTED_NAMES_PER_KIND ? j - i : FC_CG_UNSUPPORTED_NAMES_PER_KIND;
    bool one_reason = true;
    for (int k = i + 1; k < i + shown; k++) one_reason = one_reason && same_reason(l->v[k].reason, l->v[i].reason);
    PUT("%s%s x%d (", i ? ", " : "", fc_op_info(l->v[i].kind)->name, j - i);
    for (int k = i; k < i + shown; k++) {
      if (one_reason) PUT("%s'%s'", k > i ? ", " : "", l->v[k].node);
      else PUT("%s'%s': %s", k > i ? "; " : "", l->v[k].node, l->v[k].reason ? l->v[k].reason : "no kernel");
    }
    if (j - i > shown) PUT("%s...", one_reason ? ", " : "; ");
    if (one_reason && l->v[i].reason) PUT(": %s", l->v[i].reason);
    PUT(")");
    i = j;
  }
#undef PUT
  return fc_error(diag, FC_ERR_UNSUPPORTED, "%s", msg);
}

/* An emitter's message without the "node '<name>' (<op>): " prefix the list supplies itself. */
static const char *strip_node_prefix(FcArena *a, const FcOp *op, const char *msg) {
  const char *p = fc_arena_printf(a, "node '%s' (%s): ", fc_op_name(op), fc_op_info(op->kind)->name);
  size_t n = strlen(p);
  return fc_arena_strdup(a, strncmp(msg, p, n) == 0 ? msg + n : msg);
}

/* ---- globals ------------------------------------------------------------------------------------------ */

/* A private constant global holding `n` bytes. */
static LLVMValueRef bytes_global(FcCg *cg, const char *name, const void *data, size_t n, unsigned align,
                                 bool nul_terminate) {
  LLVMValueRef init = LLVMConstStringInContext2(cg->ctx, data, n, !nul_terminate);
  LLVMValueRef g = LLVMAddGlobal(cg->mod, LLVMTypeOf(init), name);
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  LLVMSetAlignment(g, align);
  return g;
}

static LLVMValueRef string_global(FcCg *cg, const char *s) { return bytes_global(cg, ".str", s, strlen(s), 1, true); }

/* Makes the constant globals, indexed by constant ordinal (the plan's numbering). */
static FcStatus emit_constants(FcCg *cg, FcDiag *diag) {
  int n = 0;
  fc_graph_for_each_op(cg->m->graph, op) if (op->kind == FC_OP_CONSTANT) n++;
  cg->n_consts = n;
  cg->const_globals = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)(n ? n : 1));
  int i = 0;
  fc_graph_for_each_op(cg->m->graph, op) {
    if (op->kind != FC_OP_CONSTANT) continue;
    int ord = i++;
    /* A constant nobody uses (left behind when a pipeline without dce ran) gets no global. */
    if (!fc_value_has_uses(&op->results[0])) continue;
    const FcTensor *t = fc_value_const(&op->results[0]);
    if (!t || !t->data)
      return fc_error_node(diag, FC_ERR_UNSUPPORTED, fc_op_name(op), "constant",
                           "the constant's data was elided from the IR text; compile a model written with --weights");
    char name[32];
    snprintf(name, sizeof name, "const.%d", ord);
    cg->const_globals[ord] = bytes_global(cg, name, t->data, (size_t)t->nbytes, FC_MEMPLAN_ALIGN, false);
  }
  return FC_OK;
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
  char *at = strstr(text, name);
  if (at && nlen > 0) memset(at, '#', nlen); /* the name is in the header line only */
  /* Metadata attachments (loop hints) print as module-wide numbers, !0, !27, ...: drop the numbers. */
  char *w = text;
  for (const char *r = text; *r; r++) {
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

typedef struct RunState {
  LLVMBuilderRef b;
  LLVMValueRef ws;
  LLVMValueRef *in_ptrs, *out_ptrs; /* the caller's buffers, loaded once in the entry block */
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
    LLVMValueRef off = LLVMConstInt(cg->i64, (unsigned long long)(a->offset + FC_CG_STATUS_BYTES), 0);
    return LLVMBuildInBoundsGEP2(rs->b, cg->i8, rs->ws, &off, 1, "");
  }
  case FC_BUF_INPUT: return rs->in_ptrs[r->index];
  case FC_BUF_OUTPUT: {
    if (!a->offset) return rs->out_ptrs[r->index];
    LLVMValueRef off = LLVMConstInt(cg->i64, (unsigned long long)a->offset, 0);
    return LLVMBuildInBoundsGEP2(rs->b, cg->i8, rs->out_ptrs[r->index], &off, 1, "");
  }
  case FC_BUF_CONSTANT:
    FC_ASSERT(r->index >= 0 && r->index < cg->n_consts && cg->const_globals[r->index]);
    return cg->const_globals[r->index];
  default: FC_UNREACHABLE();
  }
}

static LLVMValueRef build_run(FcCg *cg, const CgKernel *ks, int n_kernels, const char *prefix) {
  FcGraph *g = cg->m->graph;
  char name[256];
  snprintf(name, sizeof name, "%s_run", prefix);
  LLVMTypeRef params[4] = {cg->ptr, cg->ptr, cg->ptr, cg->ptr};
  LLVMValueRef fn = LLVMAddFunction(cg->mod, name, LLVMFunctionType(cg->i32, params, 4, 0));
  unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, nounwind, 0));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(cg->ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(cg->ctx, fn, "entry"));
  RunState rs = {.b = b, .ws = LLVMGetParam(fn, 2)};
  int n_out = fc_graph_num_outputs(g);
  rs.in_ptrs = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)(g->n_inputs ? g->n_inputs : 1));
  rs.out_ptrs = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)(n_out ? n_out : 1));
  for (int i = 0; i < g->n_inputs; i++) rs.in_ptrs[i] = load_ctx_ptr(cg, b, LLVMGetParam(fn, 0), i);
  for (int i = 0; i < n_out; i++) rs.out_ptrs[i] = load_ctx_ptr(cg, b, LLVMGetParam(fn, 1), i);
  LLVMBuildStore(b, LLVMConstInt(cg->i32, 0, 0), rs.ws);

  int max_slots = 1;
  for (int i = 0; i < n_kernels; i++) {
    int n = ks[i].op->n_operands + ks[i].op->n_results + 2;
    if (n > max_slots) max_slots = n;
  }
  LLVMValueRef slots = LLVMBuildArrayAlloca(b, cg->ptr, LLVMConstInt(cg->i32, (unsigned long long)max_slots, 0), "ctx");
  LLVMTypeRef task_params[3] = {cg->ptr, cg->i64, cg->i64};
  LLVMTypeRef task_ty = LLVMFunctionType(cg->v, task_params, 3, 0);
  LLVMTypeRef pf_params[4] = {cg->ptr, cg->i64, cg->ptr, cg->ptr};
  LLVMTypeRef pf_ty = LLVMFunctionType(cg->v, pf_params, 4, 0);
  LLVMValueRef pf = LLVMGetNamedFunction(cg->mod, "frt_parallel_for");
  if (!pf) pf = LLVMAddFunction(cg->mod, "frt_parallel_for", pf_ty);
  LLVMTypeRef pfm_params[5] = {cg->ptr, cg->i64, cg->i32, cg->ptr, cg->ptr};
  LLVMTypeRef pfm_ty = LLVMFunctionType(cg->v, pfm_params, 5, 0);
  LLVMValueRef pfm = LLVMGetNamedFunction(cg->mod, "frt_parallel_for_max");
  if (!pfm) pfm = LLVMAddFunction(cg->mod, "frt_parallel_for_max", pfm_ty);
  LLVMTypeRef pt_ty = LLVMFunctionType(cg->i32, (LLVMTypeRef[]){cg->ptr}, 1, 0);
  LLVMValueRef pt = LLVMGetNamedFunction(cg->mod, "frt_pool_threads");
  if (!pt) pt = LLVMAddFunction(cg->mod, "frt_pool_threads", pt_ty);
  LLVMValueRef scratch_off = LLVMConstInt(cg->i64, (unsigned long long)(cg->plan.workspace_bytes + FC_CG_STATUS_BYTES), 0);
  LLVMValueRef scratch = LLVMBuildInBoundsGEP2(b, cg->i8, rs.ws, &scratch_off, 1, "scratch");
  /* --profile: a tick before the first kernel and after each one (runtime/flowrt.h) */
  LLVMTypeRef tick_ty = LLVMFunctionType(cg->v, (LLVMTypeRef[]){cg->ptr, cg->i32}, 2, 0);
  LLVMValueRef tick = LLVMGetNamedFunction(cg->mod, "frt_profile_tick");
  if (!tick) tick = LLVMAddFunction(cg->mod, "frt_profile_tick", tick_ty);
  LLVMBuildCall2(b, tick_ty, tick, (LLVMValueRef[]){LLVMGetParam(fn, 3), LLVMConstInt(cg->i32, (unsigned long long)-1, 1)}, 2, "");

  for (int i = 0; i < n_kernels; i++) {
    const CgKernel *kk = &ks[i];
    const FcOp *op = kk->op;
    if (kk->outer == 0) continue; /* an empty tensor: nothing to compute */
    int slot = 0;
    for (int j = 0; j < op->n_operands + op->n_results + 2; j++) {
      LLVMValueRef a;
      if (j < op->n_operands) {
        const FcValue *v = op->operands[j].value;
        if (j < 64 && kk->subst && kk->subst[j]) a = kk->subst[j];
        else a = v ? value_addr(cg, &rs, v) : LLVMConstNull(cg->ptr);
      } else if (j < op->n_operands + op->n_results) {
        a = value_addr(cg, &rs, &op->results[j - op->n_operands]);
      } else if (j == op->n_operands + op->n_results) {
        a = rs.ws;
      } else {
        a = scratch;
      }
      LLVMValueRef idx = LLVMConstInt(cg->i64, (unsigned long long)slot++, 0);
      LLVMBuildStore(b, a, LLVMBuildInBoundsGEP2(b, cg->ptr, slots, &idx, 1, ""));
    }
    if (kk->outer > 1 && (double)kk->outer * kk->work_per_outer >= FC_CG_PARALLEL_MIN_WORK && (kk->scratch || kk->coarse)) {
      LLVMValueRef max_chunks = LLVMConstInt(cg->i32, FC_CG_SCRATCH_SLOTS, 0);
      if (kk->coarse) {
        /* min(threads, slots): frt_pool_threads at run time */
        LLVMValueRef t = LLVMBuildCall2(b, pt_ty, pt, (LLVMValueRef[]){LLVMGetParam(fn, 3)}, 1, "threads");
        if (kk->scratch)
          t = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, t, max_chunks, ""), t, max_chunks, "");
        max_chunks = t;
      }
      LLVMValueRef args[5] = {LLVMGetParam(fn, 3), LLVMConstInt(cg->i64, (unsigned long long)kk->outer, 0), max_chunks,
                              kk->fn, slots};
      LLVMBuildCall2(b, pfm_ty, pfm, args, 5, "");
    } else if (kk->outer > 1 && (double)kk->outer * kk->work_per_outer >= FC_CG_PARALLEL_MIN_WORK) {
      LLVMValueRef args[4] = {LLVMGetParam(fn, 3), LLVMConstInt(cg->i64, (unsigned long long)kk->outer, 0), kk->fn,
                              slots};
      LLVMBuildCall2(b, pf_ty, pf, args, 4, "");
    } else {
      LLVMValueRef args[3] = {slots, LLVMConstInt(cg->i64, 0, 0), LLVMConstInt(cg->i64, (unsigned long long)kk->outer, 0)};
      LLVMBuildCall2(b, task_ty, kk->fn, args, 3, "");
    }
    LLVMBuildCall2(b, tick_ty, tick, (LLVMValueRef[]){LLVMGetParam(fn, 3), LLVMConstInt(cg->i32, (unsigned long long)i, 0)}, 2, "");
  }

  /* Outputs the plan could not compute in place: inputs, constants, repeated values. */
  for (int i = 0; i < n_out; i++) {
    if (!fc_memplan_output_is_copy(cg->m, &cg->plan, i)) continue;
    const FcValue *v = fc_graph_output(g, i);
    int64_t nbytes = cg->plan.by_value[v->id].size;
    if (nbytes <= 0) continue;
    LLVMBuildMemCpy(b, rs.out_ptrs[i], 1, value_addr(cg, &rs, v), 1, LLVMConstInt(cg->i64, (unsigned long long)nbytes, 0));
  }
  LLVMValueRef status = LLVMBuildLoad2(b, cg->i32, rs.ws, "status");
  LLVMBuildRet(b, status);
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
  LLVMTypeRef model_ty = LLVMStructTypeInContext(
      cg->ctx,
      (LLVMTypeRef[]){cg->i32, cg->ptr, cg->i32, cg->i32, cg->ptr, cg->ptr, cg->i64, cg->ptr, cg->i32, cg->ptr, cg->ptr,
                      cg->ptr, cg->ptr, cg->i32, cg->ptr},
      15, 0);
  LLVMValueRef f[15] = {
      LLVMConstInt(cg->i32, 4, 0), /* FRT_ABI_VERSION */
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
  };
  char name[256];
  snprintf(name, sizeof name, "%s_model", prefix);
  LLVMValueRef gm = LLVMAddGlobal(cg->mod, model_ty, name);
  LLVMSetInitializer(gm, LLVMConstNamedStruct(model_ty, f, 15));
  LLVMSetGlobalConstant(gm, 1);
  LLVMSetAlignment(gm, 8);
}

/* ---- entry points ---------------------------------------------------------------------------------------------- */

/* No kernel computes with quantised types yet, and their dtype is the storage integer type: emitting them
 * would treat scaled integers as plain i8 data. They are refused before anything is built. */
static FcStatus refuse_quantised(FcGraph *g, FcDiag *diag) {
  char buf[256];
  for (int i = 0; i < g->n_inputs; i++)
    if (fc_type_is_quant(&g->inputs[i]->type))
      return fc_error(diag, FC_ERR_UNSUPPORTED, "input '%s' has the quantised type %s: code generation for "
                      "quantised types is not implemented yet", g->inputs[i]->name ? g->inputs[i]->name : "",
                      fc_type_str(&g->inputs[i]->type, buf, sizeof buf));
  fc_graph_for_each_op(g, op) for (int i = 0; i < op->n_results; i++) if (fc_type_is_quant(&op->results[i].type))
    return fc_error_node(diag, FC_ERR_UNSUPPORTED, fc_op_name(op), fc_op_info(op->kind)->name, "result %d has the "
                         "quantised type %s: code generation for quantised types is not implemented yet", i,
                         fc_type_str(&op->results[i].type, buf, sizeof buf));
  return FC_OK;
}

FcStatus fc_codegen_module(FcModule *m, const FcCodegenOptions *o, LLVMContextRef ctx, const FcTarget *target,
                           LLVMModuleRef *out, FcDiag *diag) {
  *out = NULL;
  if (refuse_quantised(m->graph, diag) != FC_OK) return diag->status;
  /* Ops without an emitter are found before anything is planned or built. */
  UnsupportedList unsup = {0};
  fc_graph_for_each_op(m->graph, op) if (needs_kernel(op) && !emitters[op->kind]) unsupported_add(&m->arena, &unsup, op, NULL);
  if (unsup.n) return report_unsupported(&unsup, diag);
  FcStatus st;
  LLVMTargetMachineRef tm = fc_target_tm(target);
  FcCg cg = {.m = m, .opts = o, .ctx = ctx, .tm = tm, .target = target, .arena = &m->arena};
  st = fc_memplan(m, NULL, &m->arena, &cg.plan, diag);
  if (st != FC_OK) return st;
  int64_t ws_bytes;
  if (!fc_checked_add(cg.plan.workspace_bytes, FC_CG_STATUS_BYTES, &ws_bytes))
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

  st = emit_constants(&cg, diag);
  int n_kernels = 0;
  CgKernel *ks = NULL;
  if (st == FC_OK) {
    int n_ops = 0;
    fc_graph_for_each_op(m->graph, op) n_ops++;
    ks = FC_NEW_ARRAY(&m->arena, CgKernel, (size_t)(n_ops ? n_ops : 1));
    SharedKernels shared = {.text = FC_NEW_ARRAY(&m->arena, char *, (size_t)(n_ops ? n_ops : 1)),
                            .fn = FC_NEW_ARRAY(&m->arena, LLVMValueRef, (size_t)(n_ops ? n_ops : 1))};
    int n_todo = 0;
    fc_graph_for_each_op(m->graph, op) n_todo += needs_kernel(op) && !fc_memplan_op_is_free(&cg.plan, op);
    /* An emitter may refuse its op (a dtype or attribute it does not handle): those are collected, so
     * that one message lists every op this model needs; any other failure stops at once. */
    int step = 0;
    fc_graph_for_each_op(m->graph, op) {
      if (!needs_kernel(op) || fc_memplan_op_is_free(&cg.plan, op)) continue;
      fc_progress(o ? &o->progress : NULL, "codegen", NULL, ++step, n_todo);
      FcDiag d;
      fc_diag_init(&d);
      st = build_kernel(&cg, op, n_kernels, &ks[n_kernels], &d);
      if (st == FC_OK) share_kernel(&cg, &shared, &ks[n_kernels]);
      if (st == FC_ERR_UNSUPPORTED) {
        unsupported_add(&m->arena, &unsup, op, strip_node_prefix(&m->arena, op, d.msg));
        st = FC_OK;
        continue;
      }
      if (st != FC_OK) {
        fc_error(diag, st, "%s", d.msg);
        break;
      }
      n_kernels++;
    }
    for (int i = 0; i < shared.n; i++) LLVMDisposeMessage(shared.text[i]);
    if (st == FC_OK && unsup.n) st = report_unsupported(&unsup, diag);
  }
  if (st == FC_OK) {
    int64_t scratch_total;
    if (!fc_checked_mul(cg.scratch_slot_max, FC_CG_SCRATCH_SLOTS, &scratch_total) ||
        !fc_checked_add(ws_bytes, scratch_total, &ws_bytes))
      st = fc_error(diag, FC_ERR_LIMIT, "the workspace size overflows");
  }
  if (st == FC_OK) {
    LLVMValueRef run = build_run(&cg, ks, n_kernels, prefix);
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
