/* cg_weights_once.c — weights the artefact stores in a smaller form and expands once, before the first run:
 * f32 weights stored in 16 bits (`--quantize fp16|bf16`), and blobs a runtime function derives from compact
 * ones (fc_cg_derived_bytes: the integer Winograd kernel's transformed weights, made from the weights).
 *
 * A blob of f32 values that comes from a constant annotated `flow.storage = "f16"` (or "bf16"; the pass
 * store_weights_16bit.c adds it) — the constant itself, or what a kernel made of it at compile time
 * (packed GEMM panels, blocked filters, Winograd-transformed filters) — becomes two globals:
 *   - a private constant holding the values rounded to 16 bits (to nearest even, ir/tensor.c), half the
 *     bytes of the f32 blob in the artefact's read-only data;
 *   - a zero-initialised internal [n x float] buffer, which costs no file size (.bss), and which the
 *     kernels read instead: the model computes in f32 as before.
 * The data of an annotated constant was rounded by the pass already, so storing the constant loses
 * nothing more; a derived blob (Winograd's U = G·g·Gᵀ, a sum of rounded weights) is rounded to 16 bits a
 * second time here. Packing only moves values, so packed panels are exact.
 * A derived blob is likewise a private constant (its source) and a zeroed buffer, filled by a call of the
 * runtime function that the kernel named, with a constant table of its parameters: the transform is
 * written once, in C, in the runtime, and the artefact carries only what it is made from.
 * A quantised kernel's packed constant whose weights other ops share (fc_cg_packed_weights_bytes) is a
 * zeroed buffer too, assembled from two private constants by byte copies: the part made from the weights,
 * which is byte-identical in every op that shares them (LLVM's constant merging, or the content-hashed
 * blobs of a multiversioned artefact, keep one), and the op's own corrections and multipliers; otherwise
 * layers that share their weights would store them once per layer. Ops whose weights are their own keep one
 * constant, read in place (a copy would double their memory).
 *
 * Expansion: every 16-bit blob is an entry {16-bit source, f32 buffer, count} of a table (one per format),
 * and one internal function walks the tables, converting each element: `fpext half` where the target
 * converts f16 in hardware (vcvtph2ps with F16C, fcvtl on AArch64), the exact integer widening of
 * cg_util.c elsewhere (no library call, runs on any x86-64); bf16 is a 16-bit shift. One table walk
 * instead of a loop per blob keeps the code the same size for 10 blobs or 1000. The same function then
 * calls each derived blob's runtime function. The run function calls it
 * through frt_once (runtime/once.c) while its `weights_ready` word is 0: once per process and thread-safe,
 * before the first kernel, in every kind of artefact (exe, obj, lib, so, the JIT of flowc run), and for a
 * multiversioned artefact only in the variant that runs. The cost is one acquire load per run afterwards.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_private.h"

/* One stored blob: its 16-bit copy and the f32 buffer it expands into, or a derived blob's source and buffer
 * with the runtime function that fills it and its parameters. */
struct FcCgStored {
  LLVMValueRef src, dst;
  uint64_t count;
  FcDtype dtype;      /* FC_DT_F16 or FC_DT_BF16; FC_DT_U8 for a derived blob; FC_DT_I8 for a byte copy */
  const char *fn;     /* derived: the runtime function */
  LLVMValueRef params; /* derived: its i64 parameters */
};

/* A zeroed, internal, 64-byte aligned global of count elems (.bss: no file size). */
static LLVMValueRef zeroed_buffer(FcCg *cg, const char *name, LLVMTypeRef elem, uint64_t count) {
  LLVMTypeRef ty = LLVMArrayType2(elem, count ? count : 1);
  LLVMValueRef dst = LLVMAddGlobal(cg->mod, ty, name);
  LLVMSetInitializer(dst, LLVMConstNull(ty));
  LLVMSetLinkage(dst, LLVMInternalLinkage);
  LLVMSetAlignment(dst, FC_MEMPLAN_ALIGN);
  return dst;
}

static void add_stored(FcCg *cg, FcCgStored s) {
  if (cg->n_stored == cg->cap_stored) {
    int cap = cg->cap_stored ? 2 * cg->cap_stored : 16;
    FcCgStored *v = FC_NEW_ARRAY(cg->arena, FcCgStored, (size_t)cap);
    if (cg->n_stored) memcpy(v, cg->stored, (size_t)cg->n_stored * sizeof *v);
    cg->stored = v;
    cg->cap_stored = cap;
  }
  cg->stored[cg->n_stored++] = s;
}

LLVMValueRef fc_cg_weights_global(FcCg *cg, const char *name, const float *data, size_t count, FcDtype storage) {
  if (storage != FC_DT_F16 && storage != FC_DT_BF16) return fc_cg_bytes_global(cg, name, data, count * sizeof(float));
  /* count * 4 bytes already exist in memory, so count * 2 cannot overflow. */
  uint16_t *bits = malloc(count * sizeof *bits + 1);
  if (!bits) fc_die(__FILE__, __LINE__, "out of memory");
  for (size_t i = 0; i < count; i++) bits[i] = storage == FC_DT_F16 ? fc_f32_to_f16(data[i]) : fc_f32_to_bf16(data[i]);
  char name16[64];
  snprintf(name16, sizeof name16, "%s.%s", name, fc_dtype_name(storage));
  LLVMValueRef src = fc_cg_bytes_global(cg, name16, bits, count * sizeof *bits);
  free(bits);
  LLVMValueRef dst = zeroed_buffer(cg, name, LLVMFloatTypeInContext(cg->ctx), count);
  add_stored(cg, (FcCgStored){.src = src, .dst = dst, .count = count, .dtype = storage});
  return dst;
}

LLVMValueRef fc_cg_derived_bytes(FcKernel *k, const char *fn, const void *src, size_t src_bytes, size_t dst_bytes,
                                 const int64_t *params, int n_params, const char *name) {
  FcCg *cg = k->cg;
  char src_name[64];
  snprintf(src_name, sizeof src_name, "%s.src", name);
  LLVMValueRef s = fc_cg_bytes_global(cg, src_name, src, src_bytes);
  LLVMValueRef dst = zeroed_buffer(cg, name, cg->i8, dst_bytes);
  LLVMValueRef *p = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)(n_params ? n_params : 1));
  for (int i = 0; i < n_params; i++) p[i] = LLVMConstInt(cg->i64, (unsigned long long)params[i], 1);
  LLVMValueRef init = LLVMConstArray2(cg->i64, p, (uint64_t)n_params);
  LLVMValueRef pg = LLVMAddGlobal(cg->mod, LLVMTypeOf(init), "derived_params");
  LLVMSetInitializer(pg, init);
  LLVMSetGlobalConstant(pg, 1);
  LLVMSetLinkage(pg, LLVMPrivateLinkage);
  add_stored(cg, (FcCgStored){.src = s, .dst = dst, .count = dst_bytes, .dtype = FC_DT_U8, .fn = fn, .params = pg});
  return dst;
}

enum { SPLIT_MIN_HEAD = 4096 }; /* below this, one more constant and two copies cost more than they save */

/* Whether another conv or matmul than op reads op's weights (operand 1). */
static bool weights_shared(const FcOp *op) {
  if (op->n_operands < 2) return false;
  int readers = 0;
  for (const FcUse *u = op->operands[1].value->first_use; u; u = u->next_use)
    readers += u->index == 1 && (u->user->kind == FC_OP_CONV || u->user->kind == FC_OP_MATMUL);
  return readers > 1;
}

LLVMValueRef fc_cg_packed_weights_bytes(FcKernel *k, const void *data, size_t nbytes, size_t head, const char *name) {
  if (head < SPLIT_MIN_HEAD || head >= nbytes || !weights_shared(k->op))
    return fc_cg_const_bytes(k, data, nbytes, name);
  FcCg *cg = k->cg;
  char part[64];
  snprintf(part, sizeof part, "%s.weights", name);
  LLVMValueRef w = fc_cg_bytes_global(cg, part, data, head);
  snprintf(part, sizeof part, "%s.op", name);
  LLVMValueRef rest = fc_cg_bytes_global(cg, part, (const uint8_t *)data + head, nbytes - head);
  LLVMValueRef dst = zeroed_buffer(cg, name, cg->i8, nbytes);
  LLVMValueRef off = LLVMConstInt(cg->i64, head, 0);
  add_stored(cg, (FcCgStored){.src = w, .dst = dst, .count = head, .dtype = FC_DT_I8});
  add_stored(cg, (FcCgStored){.src = rest, .dst = LLVMConstInBoundsGEP2(cg->i8, dst, &off, 1), .count = nbytes - head,
                              .dtype = FC_DT_I8});
  return dst;
}

LLVMValueRef fc_cg_const_f32(FcKernel *k, const FcValue *src, const float *data, size_t count, const char *name) {
  FcDtype storage = src && src->def ? fc_op_storage_dtype(src->def) : FC_DT_F32;
  return fc_cg_weights_global(k->cg, name, data, count, storage);
}

/* The table of the blobs stored as dt: {ptr src, ptr dst, i64 count} each; NULL when there are none. */
static LLVMValueRef stored_table(FcCg *cg, LLVMTypeRef entry_ty, FcDtype dt, int *n) {
  *n = 0;
  for (int i = 0; i < cg->n_stored; i++) *n += cg->stored[i].dtype == dt;
  if (!*n) return NULL;
  LLVMValueRef *rows = FC_NEW_ARRAY(cg->arena, LLVMValueRef, (size_t)*n);
  int j = 0;
  for (int i = 0; i < cg->n_stored; i++) {
    const FcCgStored *s = &cg->stored[i];
    if (s->dtype != dt) continue;
    LLVMValueRef f[3] = {s->src, s->dst, LLVMConstInt(cg->i64, s->count, 0)};
    rows[j++] = LLVMConstNamedStruct(entry_ty, f, 3);
  }
  LLVMValueRef init = LLVMConstArray2(entry_ty, rows, (uint64_t)*n);
  const char *name = dt == FC_DT_F16 ? ".stored_f16" : dt == FC_DT_BF16 ? ".stored_bf16" : ".stored_copies";
  LLVMValueRef g = LLVMAddGlobal(cg->mod, LLVMTypeOf(init), name);
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  return g;
}

/* The loops over one table in the expansion function that `k` describes. */
static void expand_table(FcKernel *k, LLVMTypeRef entry_ty, LLVMValueRef table, int n, FcDtype dt) {
  FcCg *cg = k->cg;
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i16 = LLVMInt16TypeInContext(cg->ctx), f32 = LLVMFloatTypeInContext(cg->ctx);
  bool hw = dt == FC_DT_F16 && fc_target_converts_f16(cg->target);
  FcLoop le, li;
  LLVMValueRef e = fc_cg_loop_begin(k, &le, fc_cg_const_i64(k, 0), fc_cg_const_i64(k, n), 1, "blob");
  LLVMValueRef idx[2] = {e, NULL};
  LLVMValueRef row = LLVMBuildInBoundsGEP2(b, entry_ty, table, idx, 1, "");
  LLVMValueRef src = LLVMBuildLoad2(b, cg->ptr, LLVMBuildStructGEP2(b, entry_ty, row, 0, ""), "src");
  LLVMValueRef dst = LLVMBuildLoad2(b, cg->ptr, LLVMBuildStructGEP2(b, entry_ty, row, 1, ""), "dst");
  LLVMValueRef count = LLVMBuildLoad2(b, cg->i64, LLVMBuildStructGEP2(b, entry_ty, row, 2, ""), "count");
  if (dt == FC_DT_I8) { /* byte copies */
    LLVMBuildMemCpy(b, dst, 1, src, 1, count);
    fc_cg_loop_end(k, &le);
    return;
  }
  LLVMValueRef i = fc_cg_loop_begin(k, &li, fc_cg_const_i64(k, 0), count, 1, "elem");
  LLVMValueRef v;
  if (hw) {
    LLVMValueRef at = LLVMBuildInBoundsGEP2(b, i16, src, &i, 1, "");
    LLVMValueRef h = LLVMBuildLoad2(b, LLVMHalfTypeInContext(cg->ctx), at, "");
    LLVMSetAlignment(h, 2);
    v = LLVMBuildFPExt(b, h, f32, "");
  } else {
    v = fc_cg_load(k, dt, src, i); /* exact, integer operations only */
  }
  LLVMValueRef st = LLVMBuildStore(b, v, LLVMBuildInBoundsGEP2(b, f32, dst, &i, 1, ""));
  LLVMSetAlignment(st, 4);
  fc_cg_loop_end(k, &li);
  fc_cg_loop_end(k, &le);
}

/* `void expand_weights(void)`: every stored blob into its f32 buffer. */
static LLVMValueRef build_expander(FcCg *cg) {
  LLVMValueRef fn = LLVMAddFunction(cg->mod, "expand_weights", LLVMFunctionType(cg->v, NULL, 0, 0));
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, nounwind, 0));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(cg->ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(cg->ctx, fn, "entry"));
  /* The loop and load helpers of cg_util.c need only these fields of a kernel. */
  FcKernel k = {.cg = cg, .ctx = cg->ctx, .mod = cg->mod, .b = b, .fn = fn, .target = cg->target};
  LLVMTypeRef entry_ty = LLVMStructTypeInContext(cg->ctx, (LLVMTypeRef[]){cg->ptr, cg->ptr, cg->i64}, 3, 0);
  static const FcDtype formats[3] = {FC_DT_F16, FC_DT_BF16, FC_DT_I8};
  for (int f = 0; f < 3; f++) {
    int n;
    LLVMValueRef table = stored_table(cg, entry_ty, formats[f], &n);
    if (table) expand_table(&k, entry_ty, table, n, formats[f]);
  }
  LLVMTypeRef derive_ty = LLVMFunctionType(cg->v, (LLVMTypeRef[]){cg->ptr, cg->ptr, cg->ptr}, 3, 0);
  for (int i = 0; i < cg->n_stored; i++) {
    const FcCgStored *s = &cg->stored[i];
    if (!s->fn) continue;
    LLVMValueRef callee = LLVMGetNamedFunction(cg->mod, s->fn);
    if (!callee) callee = LLVMAddFunction(cg->mod, s->fn, derive_ty);
    LLVMBuildCall2(b, derive_ty, callee, (LLVMValueRef[]){s->dst, s->src, s->params}, 3, "");
  }
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
  return fn;
}

void fc_cg_weights_expand_once(FcCg *cg, LLVMBuilderRef b, LLVMBasicBlockRef next) {
  if (!cg->n_stored) {
    LLVMBuildBr(b, next);
    return;
  }
  LLVMValueRef fn = build_expander(cg);
  LLVMValueRef ready = LLVMAddGlobal(cg->mod, cg->i32, "weights_ready");
  LLVMSetInitializer(ready, LLVMConstInt(cg->i32, 0, 0));
  LLVMSetLinkage(ready, LLVMInternalLinkage);
  LLVMSetAlignment(ready, 4);
  LLVMValueRef state = LLVMBuildLoad2(b, cg->i32, ready, "weights_ready");
  LLVMSetOrdering(state, LLVMAtomicOrderingAcquire);
  LLVMSetAlignment(state, 4);
  LLVMValueRef run_fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
  LLVMBasicBlockRef init = LLVMAppendBasicBlockInContext(cg->ctx, run_fn, "expand_weights");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, state, LLVMConstInt(cg->i32, 0, 0), ""), next, init);
  LLVMPositionBuilderAtEnd(b, init);
  LLVMTypeRef once_ty = LLVMFunctionType(cg->v, (LLVMTypeRef[]){cg->ptr, cg->ptr}, 2, 0);
  LLVMValueRef once = LLVMGetNamedFunction(cg->mod, "frt_once");
  if (!once) once = LLVMAddFunction(cg->mod, "frt_once", once_ty);
  LLVMBuildCall2(b, once_ty, once, (LLVMValueRef[]){ready, fn}, 2, "");
  LLVMBuildBr(b, next);
}
