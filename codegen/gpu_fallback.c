/* gpu_fallback.c — GPU kernels for the ops that have no SIMT emitter of their own (gather_elements, resize,
 * scatters, cumsum, topk, ...): the op's CPU emitter (kernels.def) builds its loop nest over the op's outer
 * iterations as a device function, and the GPU kernel runs one thread per outer iteration.
 *
 * That is correct wherever the CPU kernel is, because the CPU already runs outer iterations on different
 * threads in any order: each writes its own part of the result. It is not fast (an outer iteration is a row
 * or a plane, so there are few threads and none of them coalesce), which is why the hot ops have kernels of
 * their own; this covers the long tail so that a model with one rare op still runs on the GPU. The GPU
 * target's description has no vector features, so the emitters take their generic paths.
 *
 * A CPU emitter that needs what a GPU thread cannot have is refused: per-task scratch memory (a slot per
 * CPU thread), weights re-laid at compile time into a new global (fc_kernel_substitute_operand: the GPU's
 * weights are one uploaded blob), weights kept in 16 bits (the CPU's run function expands them), or a call
 * into libflowrt. Small tables an emitter builds at compile time (fc_cg_const_bytes) become globals of the
 * kernel's own module. The refusal names the reason and the op is then
 * listed as having no GPU kernel.
 */
#include <string.h>

#include "cg_private.h"
#include "gpu.h"

static const FcKernelFn cpu_emitters[FC_OP_COUNT] = {
#define FC_KERNEL(kind, fn) [FC_OP_##kind] = fn,
#include "kernels.def"
#undef FC_KERNEL
};

bool fc_gpu_fallback_exists(FcOpKind kind) { return cpu_emitters[kind] != NULL; }

/* The first function the body calls that is neither defined in the module nor an LLVM intrinsic (NULL:
 * none): the GPU has no libflowrt to call. */
static const char *foreign_call(LLVMValueRef fn) {
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
      if (LLVMGetInstructionOpcode(in) != LLVMCall) continue;
      LLVMValueRef callee = LLVMGetCalledValue(in);
      if (!LLVMIsAFunction(callee) || !LLVMIsDeclaration(callee)) continue;
      size_t n;
      const char *name = LLVMGetValueName2(callee, &n);
      if (strncmp(name, "llvm.", 5) != 0) return name;
    }
  return NULL;
}

FcStatus fc_gpu_fallback(FcGpuKernel *g) {
  FcKernel *gk = &g->k;
  FcCg *cg = gk->cg;
  FcOp *op = gk->op;
  FcArena *arena = cg->arena;
  const FcOpInfo *info = fc_op_info(op->kind);
  int n_slots = op->n_operands + op->n_results + 2; /* operands, results, status word, scratch */

  /* The body: void body(ptr ctx, i64 begin, i64 end), as cg_module.c builds CPU kernels. */
  char name[96];
  snprintf(name, sizeof name, "%s_%s", LLVMGetValueName(gk->fn), info->name);
  LLVMTypeRef params[3] = {cg->ptr, cg->i64, cg->i64};
  LLVMValueRef body = LLVMAddFunction(cg->mod, name, LLVMFunctionType(cg->v, params, 3, 0));
  LLVMSetLinkage(body, LLVMInternalLinkage);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(cg->ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(cg->ctx, body, "entry"));
  LLVMValueRef ctxp = LLVMGetParam(body, 0);
  FcKernel k = {.cg = cg, .op = op, .ctx = cg->ctx, .mod = cg->mod, .b = b, .fn = body, .target = gk->target,
                .in = FC_NEW_ARRAY(arena, LLVMValueRef, (size_t)op->n_operands + 1),
                .out = FC_NEW_ARRAY(arena, LLVMValueRef, (size_t)op->n_results + 1),
                .begin = LLVMGetParam(body, 1), .end = LLVMGetParam(body, 2), .outer = 1, .work_per_outer = 1,
                .diag = gk->diag};
  LLVMValueRef *slot = FC_NEW_ARRAY(arena, LLVMValueRef, (size_t)n_slots);
  for (int i = 0; i < n_slots; i++) {
    LLVMValueRef idx = LLVMConstInt(cg->i64, (unsigned long long)i, 0);
    slot[i] = LLVMBuildLoad2(b, cg->ptr, LLVMBuildInBoundsGEP2(b, cg->ptr, ctxp, &idx, 1, ""), "");
  }
  for (int i = 0; i < op->n_operands; i++) k.in[i] = op->operands[i].value ? slot[i] : NULL;
  for (int i = 0; i < op->n_results; i++) k.out[i] = slot[op->n_operands + i];
  LLVMValueRef gpu_status = cg->status;
  cg->status = slot[op->n_operands + op->n_results];
  cg->scratch_base = slot[op->n_operands + op->n_results + 1];
  cg->kernel_scratch = 0;
  memset(cg->kernel_subst, 0, sizeof cg->kernel_subst);
  int stored = cg->n_stored;
  FcStatus st = cpu_emitters[op->kind](&k);
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
  cg->status = gpu_status;
  cg->scratch_base = NULL;
  bool subst = false;
  for (int i = 0; i < 64; i++) subst |= cg->kernel_subst[i] != NULL;
  const char *call = st == FC_OK ? foreign_call(body) : NULL;
  if (st == FC_OK && cg->kernel_scratch > 0)
    st = fc_gpu_error(g, FC_ERR_UNSUPPORTED, "its CPU kernel needs per-thread scratch memory");
  else if (st == FC_OK && subst)
    st = fc_gpu_error(g, FC_ERR_UNSUPPORTED, "its CPU kernel re-lays its weights at compile time");
  else if (st == FC_OK && call)
    st = fc_gpu_error(g, FC_ERR_UNSUPPORTED, "its CPU kernel calls %s", call);
  else if (st == FC_OK && cg->n_stored != stored) /* expanded by the CPU's run function, which the GPU has not */
    st = fc_gpu_error(g, FC_ERR_UNSUPPORTED, "its CPU kernel keeps weights in 16 bits");
  if (st != FC_OK) {
    LLVMDeleteFunction(body);
    return st == FC_ERR_UNSUPPORTED || st == FC_ERR_LIMIT || st == FC_ERR_INPUT ? st : FC_ERR_UNSUPPORTED;
  }

  /* The kernel: thread t < outer runs body(ctx, t, t + 1) over a ctx array in its local memory. */
  if ((st = fc_gpu_launch_1d(g, k.outer, 128)) != FC_OK) return st;
  if (k.outer == 0) return FC_OK;
  LLVMBuilderRef B = gk->b;
  LLVMTypeRef arr = LLVMArrayType2(cg->ptr, (uint64_t)n_slots);
  LLVMValueRef ctx = fc_cg_entry_alloca(gk, arr, "ctx");
  for (int i = 0; i < n_slots; i++) {
    LLVMValueRef v = i < op->n_operands ? gk->in[i]
                     : i < op->n_operands + op->n_results ? gk->out[i - op->n_operands]
                     : i == op->n_operands + op->n_results ? cg->status
                                                           : NULL;
    if (!v) v = LLVMConstNull(cg->ptr);
    LLVMValueRef idx = LLVMConstInt(cg->i64, (unsigned long long)i, 0);
    LLVMBuildStore(B, v, LLVMBuildInBoundsGEP2(B, cg->ptr, ctx, &idx, 1, ""));
  }
  LLVMValueRef t = fc_gpu_global_idx_x(g);
  LLVMBasicBlockRef done = fc_cg_if_begin(gk, LLVMBuildICmp(B, LLVMIntSLT, t, fc_cg_const_i64(gk, k.outer), ""));
  LLVMValueRef args[3] = {ctx, t, LLVMBuildAdd(B, t, fc_cg_const_i64(gk, 1), "")};
  LLVMBuildCall2(B, LLVMGlobalGetValueType(body), body, args, 3, "");
  fc_cg_if_end(gk, done);
  return FC_OK;
}
