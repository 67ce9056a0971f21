/* gpu_module.c — a module's GPU half: one SIMT kernel per op and the launch plan that runs them
 * (gpu.h describes both builds and the kernel ABI).
 *
 * Order of work, as for the CPU (cg_module.c): the memory plan of the graph (the same planner: in-place
 * element-wise results and concat parts included), then every op's kernel from its GPU emitter
 * (gpu_kernels.def), all refusals reported in one message, then the plan's arguments. Value addresses are
 * buffer + offset pairs instead of pointers: the workspace (the status word's 64 bytes first, as on the
 * CPU, then the plan's blocks), an input, an output, or the weights blob, where every constant a kernel
 * reads is copied once at a 64-byte aligned offset. Graph outputs that the plan does not compute in place
 * (an input or a constant returned as it is, a value returned twice) get a copy kernel at the end.
 *
 * An SBP program's boxing ops (kernel_collective.c on the CPU) become collective entries of the plan, which
 * the runner executes on the host between kernels (FcGpuColl): their fields are the CPU kernels' views of
 * the tensor around the split dim, and those that re-lay rows out get scratch at the workspace's end, past
 * the memory plan's blocks (one area, as large as the largest need: the entries run one at a time).
 *
 * A kernel reading a constant sees the f32 data even where the CPU stores it in 16 bits (flow.storage):
 * the GPU's weights are uploaded once, so 16-bit storage would save upload time only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_private.h"
#include "gpu.h"

static const FcGpuKernelFn emitters[FC_OP_COUNT] = {
#define FC_GPU_KERNEL(kind, fn) [FC_OP_##kind] = fn,
#include "gpu_kernels.def"
#undef FC_GPU_KERNEL
};

#define STATUS_BYTES FC_MEMPLAN_ALIGN

typedef struct GpuCg {
  FcCg cg;              /* what codegen.h's helpers read (status word, arena, types) */
  const FcTarget *t;
  bool host;
  FcGpuPlan *plan;
  int64_t *const_at;    /* by constant ordinal: offset in the weights, -1 until placed */
  FcOp **const_ops;
  int n_consts;
  int cap_launches;
  int64_t scratch_at;   /* the collectives' scratch: its workspace offset, and the largest need so far */
  int64_t scratch_bytes;
} GpuCg;

static FcGpuColl coll_kind(FcOpKind kind) {
  switch (kind) {
  case FC_OP_ALL_REDUCE: return FC_GPU_COLL_ALL_REDUCE;
  case FC_OP_ALL_GATHER: return FC_GPU_COLL_ALL_GATHER;
  case FC_OP_REDUCE_SCATTER: return FC_GPU_COLL_REDUCE_SCATTER;
  case FC_OP_ALL_TO_ALL: return FC_GPU_COLL_ALL_TO_ALL;
  case FC_OP_LOCAL_SLICE: return FC_GPU_COLL_LOCAL_SLICE;
  default: return FC_GPU_COLL_NONE;
  }
}

static bool needs_kernel(const FcOp *op) { return op->kind != FC_OP_CONSTANT && op->kind != FC_OP_RETURN; }

/* The weights offset of constant ordinal `ord`, placing it on first use. */
static FcStatus const_offset(GpuCg *g, int ord, int64_t *out, FcDiag *diag) {
  FC_ASSERT(ord >= 0 && ord < g->n_consts && g->const_ops[ord]);
  if (g->const_at[ord] < 0) {
    const FcTensor *t = fc_value_const(&g->const_ops[ord]->results[0]);
    int64_t at = (g->plan->weights_bytes + FC_MEMPLAN_ALIGN - 1) / FC_MEMPLAN_ALIGN * FC_MEMPLAN_ALIGN, end;
    if (!fc_checked_add(at, t->nbytes, &end)) return fc_error(diag, FC_ERR_LIMIT, "the GPU weights overflow");
    unsigned char *w = realloc(g->plan->weights, end > 0 ? (size_t)end : 1);
    if (!w) return fc_error(diag, FC_ERR_LIMIT, "out of memory for %lld bytes of GPU weights", (long long)end);
    memset(w + g->plan->weights_bytes, 0, (size_t)(at - g->plan->weights_bytes));
    memcpy(w + at, t->data, (size_t)t->nbytes);
    g->plan->weights = w;
    g->plan->weights_bytes = end;
    g->const_at[ord] = at;
  }
  *out = g->const_at[ord];
  return FC_OK;
}

/* Where value v's bytes are. */
static FcStatus value_arg(GpuCg *g, const FcValue *v, FcGpuArg *out, FcDiag *diag) {
  const FcMemPlan *p = &g->plan->mem;
  FC_ASSERT(v->id < p->n_values);
  const FcBufAssign *a = &p->by_value[v->id];
  const FcBufAssign *r = &p->by_value[a->root];
  switch (r->kind) {
  case FC_BUF_WORKSPACE: *out = (FcGpuArg){FC_GPU_BUF_WORKSPACE, 0, a->offset + STATUS_BYTES}; return FC_OK;
  case FC_BUF_INPUT: *out = (FcGpuArg){FC_GPU_BUF_INPUT, r->index, 0}; return FC_OK;
  case FC_BUF_OUTPUT: *out = (FcGpuArg){FC_GPU_BUF_OUTPUT, r->index, a->offset}; return FC_OK;
  case FC_BUF_CONSTANT: {
    int64_t at = 0;
    FcStatus st = const_offset(g, r->index, &at, diag);
    *out = (FcGpuArg){FC_GPU_BUF_WEIGHTS, 0, at};
    return st;
  }
  default: FC_UNREACHABLE();
  }
}

static FcGpuLaunchPlan *new_launch(GpuCg *g, FcArena *arena) {
  FcGpuPlan *p = g->plan;
  if (p->n_launches == g->cap_launches) {
    int cap = g->cap_launches ? 2 * g->cap_launches : 32;
    FcGpuLaunchPlan *n = FC_NEW_ARRAY(arena, FcGpuLaunchPlan, (size_t)cap);
    if (p->n_launches) memcpy(n, p->launches, (size_t)p->n_launches * sizeof *n);
    p->launches = n;
    g->cap_launches = cap;
  }
  FcGpuLaunchPlan *l = &p->launches[p->n_launches];
  memset(l, 0, sizeof *l);
  snprintf(l->name, sizeof l->name, "g%d", p->n_launches);
  return l;
}

/* The kernel function of launch l with n_args pointer arguments, and the builder in its entry block; fills
 * ptrs[i] with argument i's pointer as the kernel body reads it. */
static LLVMValueRef kernel_function(GpuCg *g, FcGpuKernel *k, const FcGpuLaunchPlan *l, int n_args, LLVMValueRef *ptrs) {
  FcCg *cg = &g->cg;
  LLVMTypeRef *params = FC_NEW_ARRAY(cg->arena, LLVMTypeRef, (size_t)n_args + 2);
  LLVMValueRef fn;
  if (g->host) {
    params[0] = params[1] = cg->ptr;
    fn = LLVMAddFunction(cg->mod, l->name, LLVMFunctionType(cg->v, params, 2, 0));
  } else {
    for (int i = 0; i < n_args; i++) params[i] = cg->ptr;
    fn = LLVMAddFunction(cg->mod, l->name, LLVMFunctionType(cg->v, params, (unsigned)n_args, 0));
    LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
  }
  LLVMBuilderRef b = k->k.b;
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(cg->ctx, fn, "entry"));
  for (int i = 0; i < n_args; i++) {
    if (!g->host) {
      ptrs[i] = LLVMGetParam(fn, (unsigned)i);
      continue;
    }
    LLVMValueRef idx = LLVMConstInt(cg->i64, (unsigned long long)i, 0);
    ptrs[i] = LLVMBuildLoad2(b, cg->ptr, LLVMBuildInBoundsGEP2(b, cg->ptr, LLVMGetParam(fn, 1), &idx, 1, ""), "");
  }
  if (g->host) {
    k->thread = LLVMGetParam(fn, 0);
    LLVMValueRef off = LLVMConstInt(cg->i64, 24, 0); /* FrtSimtThread.shared (runtime/gpu_simt.h) */
    k->shared_host = LLVMBuildLoad2(b, cg->ptr, LLVMBuildInBoundsGEP2(b, cg->i8, k->thread, &off, 1, ""), "shared");
  }
  return fn;
}

/* Builds op's kernel (operands, results, workspace as arguments); FC_ERR_UNSUPPORTED when its emitter
 * refused. */
static FcStatus build_op(GpuCg *g, FcOp *op, int node, FcArena *arena, FcDiag *diag) {
  FcCg *cg = &g->cg;
  FcGpuLaunchPlan *l = new_launch(g, arena);
  int n_args = 0;
  int max_args = op->n_operands + op->n_results + 1;
  l->args = FC_NEW_ARRAY(arena, FcGpuArg, (size_t)max_args);
  int *in_slot = FC_NEW_ARRAY(arena, int, (size_t)op->n_operands + 1);
  for (int i = 0; i < op->n_operands; i++) {
    in_slot[i] = -1;
    if (!op->operands[i].value) continue;
    FcStatus st = value_arg(g, op->operands[i].value, &l->args[n_args], diag);
    if (st != FC_OK) return st;
    in_slot[i] = n_args++;
  }
  int out0 = n_args;
  for (int i = 0; i < op->n_results; i++) {
    FcStatus st = value_arg(g, &op->results[i], &l->args[n_args++], diag);
    if (st != FC_OK) return st;
  }
  l->args[n_args++] = (FcGpuArg){FC_GPU_BUF_WORKSPACE, 0, 0};
  l->n_args = n_args;
  l->node = node;

  /* The op's GPU emitter; where there is none, or it refuses this instance, the CPU emitter's loop nest
   * (gpu_fallback.c). */
  FcGpuKernel k = {0};
  FcStatus st = FC_ERR_UNSUPPORTED;
  for (int attempt = 0; attempt < 2 && st == FC_ERR_UNSUPPORTED; attempt++) {
    FcGpuKernelFn emit = attempt == 0 ? emitters[op->kind] : fc_gpu_fallback_exists(op->kind) ? fc_gpu_fallback : NULL;
    if (!emit) continue;
    if (k.k.fn) { /* the GPU emitter refused: start the function again */
      LLVMDeleteFunction(k.k.fn);
      LLVMDisposeBuilder(k.k.b);
      fc_diag_init(diag);
    }
    k = (FcGpuKernel){.host = g->host};
    k.k = (FcKernel){.cg = cg, .op = op, .ctx = cg->ctx, .mod = cg->mod, .target = g->t, .diag = diag, .outer = 1};
    k.k.b = LLVMCreateBuilderInContext(cg->ctx);
    LLVMValueRef *ptrs = FC_NEW_ARRAY(arena, LLVMValueRef, (size_t)n_args);
    k.k.fn = kernel_function(g, &k, l, n_args, ptrs);
    k.k.in = FC_NEW_ARRAY(arena, LLVMValueRef, (size_t)op->n_operands + 1);
    k.k.out = FC_NEW_ARRAY(arena, LLVMValueRef, (size_t)op->n_results + 1);
    for (int i = 0; i < op->n_operands; i++) k.k.in[i] = in_slot[i] >= 0 ? ptrs[in_slot[i]] : NULL;
    for (int i = 0; i < op->n_results; i++) k.k.out[i] = ptrs[out0 + i];
    cg->status = ptrs[n_args - 1]; /* the status word: the workspace's first bytes */
    cg->kernel_index = node;
    st = emit(&k);
  }
  if (st == FC_OK) {
    LLVMBuildRetVoid(k.k.b);
    memcpy(l->grid, k.grid, sizeof l->grid);
    memcpy(l->block, k.block, sizeof l->block);
    l->shared_bytes = k.shared_bytes;
    l->sync = k.sync;
    g->plan->n_launches++;
  } else if (k.k.fn) {
    LLVMDeleteFunction(k.k.fn);
  }
  if (k.k.b) LLVMDisposeBuilder(k.k.b);
  return st;
}

static int64_t outer_of(const FcType *t, int64_t d) {
  int64_t outer = 1;
  for (int64_t i = 0; i < d; i++) outer *= t->dims[i];
  return outer;
}

/* A boxing op as a collective entry: source, destination and scratch, and the rows of the views around
 * the split dim as kernel_collective.c's kernels take them (all sizes are those of planned values, so
 * their products fit; the row counts must fit the table's int32). */
static FcStatus build_coll(GpuCg *g, FcOp *op, FcGpuColl kind, int node, FcArena *arena, FcDiag *diag) {
  const FcType *x = &op->operands[0].value->type, *r = &op->results[0].type;
  int64_t axis = fc_op_attr_int(op, FC_ATTR_MESH_AXIS, -2), group, nx, nr;
  if (!fc_mesh_group_size(op->graph->module, axis, &group) || group > INT32_MAX)
    return fc_error(diag, FC_ERR_INPUT, "node '%s' (%s): mesh_axis %lld is not an axis of the module's mesh",
                    fc_op_name(op), fc_op_info(op->kind)->name, (long long)axis);
  FC_ASSERT(fc_type_numel(x, &nx) && fc_type_numel(r, &nr));
  int64_t count = nx, send_rows = 1, recv_rows = 1, es = (int64_t)fc_dtype_size(r->dtype);
  switch (kind) {
  case FC_GPU_COLL_LOCAL_SLICE:
    count = nr;
    send_rows = outer_of(x, fc_op_attr_int(op, FC_ATTR_DIM, 0));
    break;
  case FC_GPU_COLL_ALL_GATHER: recv_rows = outer_of(x, fc_op_attr_int(op, FC_ATTR_DIM, 0)); break;
  case FC_GPU_COLL_REDUCE_SCATTER:
    count = nr;
    send_rows = outer_of(x, fc_op_attr_int(op, FC_ATTR_DIM, 0));
    break;
  case FC_GPU_COLL_ALL_TO_ALL:
    count = nx / group;
    send_rows = outer_of(x, fc_op_attr_int(op, FC_ATTR_SPLIT_DIM, 0));
    recv_rows = outer_of(r, fc_op_attr_int(op, FC_ATTR_CONCAT_DIM, 0));
    break;
  default: break;
  }
  if (count == 0) send_rows = recv_rows = 1; /* an empty tensor: nothing moves */
  if (send_rows > INT32_MAX || recv_rows > INT32_MAX)
    return fc_error(diag, FC_ERR_LIMIT, "node '%s' (%s): more than 2^31-1 rows around the split dim", fc_op_name(op),
                    fc_op_info(op->kind)->name);
  int64_t all = count * es * group, scratch = (send_rows > 1 ? all : 0) + (recv_rows > 1 ? all : 0);
  if (scratch > g->scratch_bytes) g->scratch_bytes = scratch;
  FcGpuLaunchPlan *l = new_launch(g, arena);
  snprintf(l->name, sizeof l->name, "%s", fc_op_info(op->kind)->name);
  l->args = FC_NEW_ARRAY(arena, FcGpuArg, 3);
  FcStatus st = value_arg(g, op->operands[0].value, &l->args[0], diag);
  if (st == FC_OK) st = value_arg(g, &op->results[0], &l->args[1], diag);
  if (st != FC_OK) return st;
  l->args[2] = (FcGpuArg){FC_GPU_BUF_WORKSPACE, 0, g->scratch_at};
  l->n_args = 3;
  l->node = node;
  for (int i = 0; i < 3; i++) l->grid[i] = l->block[i] = 1;
  l->coll = kind;
  l->mesh_axis = (int)axis;
  l->group = (int)group;
  l->dtype = fc_dtype_to_onnx(r->dtype);
  const char *red = fc_op_attr_str(op, FC_ATTR_REDUCE, "sum");
  l->reduce_op = strcmp(red, "max") == 0 ? 1 : strcmp(red, "min") == 0 ? 2 : 0; /* FrtReduceOp */
  l->send_rows = (int)send_rows;
  l->recv_rows = (int)recv_rows;
  l->count = count;
  g->plan->n_launches++;
  return FC_OK;
}

/* A copy of n bytes from src to dst (a graph output the plan does not compute in place). */
static void build_copy(GpuCg *g, FcGpuArg dst, FcGpuArg src, int64_t n, int node, FcArena *arena) {
  FcCg *cg = &g->cg;
  FcGpuLaunchPlan *l = new_launch(g, arena);
  l->args = FC_NEW_ARRAY(arena, FcGpuArg, 2);
  l->args[0] = dst;
  l->args[1] = src;
  l->n_args = 2;
  l->node = node;
  FcGpuKernel k = {.host = g->host};
  k.k = (FcKernel){.cg = cg, .ctx = cg->ctx, .mod = cg->mod, .target = g->t, .outer = 1};
  k.k.b = LLVMCreateBuilderInContext(cg->ctx);
  LLVMValueRef ptrs[2];
  k.k.fn = kernel_function(g, &k, l, 2, ptrs);
  FcStatus st = fc_gpu_launch_1d(&k, n, 256);
  FC_ASSERT(st == FC_OK); /* n bytes of a planned value: far below 2^31 blocks of 256 */
  LLVMValueRef i = fc_gpu_global_idx_x(&k);
  LLVMBasicBlockRef done = fc_cg_if_begin(&k.k, LLVMBuildICmp(k.k.b, LLVMIntSLT, i, fc_cg_const_i64(&k.k, n), ""));
  LLVMValueRef s = LLVMBuildInBoundsGEP2(k.k.b, cg->i8, ptrs[1], &i, 1, "");
  LLVMValueRef d = LLVMBuildInBoundsGEP2(k.k.b, cg->i8, ptrs[0], &i, 1, "");
  LLVMBuildStore(k.k.b, LLVMBuildLoad2(k.k.b, cg->i8, s, ""), d);
  fc_cg_if_end(&k.k, done);
  LLVMBuildRetVoid(k.k.b);
  LLVMDisposeBuilder(k.k.b);
  memcpy(l->grid, k.grid, sizeof l->grid);
  memcpy(l->block, k.block, sizeof l->block);
  g->plan->n_launches++;
}

static FcStatus check_graph(FcGraph *g, FcArena *arena, FcDiag *diag) {
  FcCgUnsupportedList unsup = {0};
  for (FcOp *op = g->first; op; op = op->next)
    if (needs_kernel(op) && !coll_kind(op->kind) &&
        (op->n_regions > 0 || (!emitters[op->kind] && !fc_gpu_fallback_exists(op->kind))))
      fc_cg_unsupported_add(arena, &unsup, op, NULL);
  return unsup.n ? fc_cg_report_unsupported(&unsup, "no GPU kernel (--device cuda) for", diag) : FC_OK;
}

FcStatus fc_gpu_codegen_module(FcModule *m, const FcTarget *t, bool host, LLVMTargetMachineRef host_tm,
                               LLVMContextRef ctx, LLVMModuleRef *out, FcGpuPlan *plan, FcDiag *diag) {
  *out = NULL;
  memset(plan, 0, sizeof *plan);
  FC_ASSERT(t->simt);
  FcGraph *graph = m->graph;
  FcArena *arena = &m->arena;
  FcStatus st = check_graph(graph, arena, diag);
  if (st != FC_OK) return st;
  if ((st = fc_memplan_graph(graph, NULL, arena, &plan->mem, diag)) != FC_OK) return st;
  if (!fc_checked_add(plan->mem.workspace_bytes, STATUS_BYTES, &plan->workspace_bytes))
    return fc_error(diag, FC_ERR_LIMIT, "the workspace size overflows");

  LLVMTargetMachineRef tm = host ? host_tm : fc_target_tm(t);
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(host ? "flowc_gpu_host" : "flowc_gpu", ctx);
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(mod, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(mod, dl);
  LLVMDisposeTargetData(dl);

  GpuCg g = {.t = t, .host = host, .plan = plan};
  g.scratch_at = (plan->workspace_bytes + FC_MEMPLAN_ALIGN - 1) / FC_MEMPLAN_ALIGN * FC_MEMPLAN_ALIGN;
  /* Options CPU emitters may read when the fallback runs them (gpu_fallback.c): no content-addressed sharing. */
  static const FcCodegenOptions fallback_opts = {.opt_level = 2};
  g.cg = (FcCg){.m = m, .opts = &fallback_opts, .ctx = ctx, .mod = mod, .tm = tm, .target = t, .arena = arena,
                .plan = plan->mem};
  g.cg.ptr = LLVMPointerTypeInContext(ctx, 0);
  g.cg.i8 = LLVMInt8TypeInContext(ctx);
  g.cg.i32 = LLVMInt32TypeInContext(ctx);
  g.cg.i64 = LLVMInt64TypeInContext(ctx);
  g.cg.v = LLVMVoidTypeInContext(ctx);
  for (FcOp *op = graph->first; op; op = op->next) g.n_consts += op->kind == FC_OP_CONSTANT;
  g.const_ops = FC_NEW_ARRAY(arena, FcOp *, (size_t)g.n_consts + 1);
  g.const_at = FC_NEW_ARRAY(arena, int64_t, (size_t)g.n_consts + 1);
  int ord = 0;
  for (FcOp *op = graph->first; op; op = op->next)
    if (op->kind == FC_OP_CONSTANT) {
      g.const_at[ord] = -1;
      g.const_ops[ord++] = op;
    }

  int n_ops = 0;
  for (FcOp *op = graph->first; op; op = op->next) n_ops++;
  plan->kernel_names = FC_NEW_ARRAY(arena, const char *, (size_t)n_ops + 1);
  FcCgUnsupportedList unsup = {0};
  for (FcOp *op = graph->first; op && st == FC_OK; op = op->next) {
    if (!needs_kernel(op)) continue;
    const FcBufAssign *a = &plan->mem.by_value[op->results[0].id];
    if (op->n_results == 1 && a->kind == FC_BUF_ALIAS && a->is_view) continue; /* a view: no code */
    int node = plan->n_kernels;
    plan->kernel_names[node] = fc_arena_printf(arena, "node '%s' (%s)", fc_op_name(op), fc_op_info(op->kind)->name);
    FcDiag d = {0};
    FcGpuColl ck = coll_kind(op->kind);
    st = ck ? build_coll(&g, op, ck, node, arena, &d) : build_op(&g, op, node, arena, &d);
    if (st == FC_ERR_UNSUPPORTED) {
      fc_cg_unsupported_add(arena, &unsup, op, fc_cg_strip_node_prefix(arena, op, d.msg));
      st = FC_OK;
    } else if (st != FC_OK) {
      *diag = d;
    } else {
      plan->n_kernels++;
    }
  }
  if (st == FC_OK && unsup.n) st = fc_cg_report_unsupported(&unsup, "no GPU kernel (--device cuda) for", diag);
  if (st == FC_OK && g.scratch_bytes && !fc_checked_add(g.scratch_at, g.scratch_bytes, &plan->workspace_bytes))
    st = fc_error(diag, FC_ERR_LIMIT, "the workspace size overflows");
  /* Graph outputs the plan does not compute in place. */
  const FcOp *ret = fc_graph_return(graph);
  for (int i = 0; st == FC_OK && ret && i < ret->n_operands; i++) {
    if (!fc_memplan_output_is_copy(m, &plan->mem, i)) continue;
    const FcValue *v = ret->operands[i].value;
    FcGpuArg src;
    if ((st = value_arg(&g, v, &src, diag)) != FC_OK) break;
    int64_t n;
    FC_ASSERT(fc_type_nbytes(&v->type, &n));
    int node = plan->n_kernels++;
    plan->kernel_names[node] = fc_arena_printf(arena, "output %d (copy)", i);
    build_copy(&g, (FcGpuArg){FC_GPU_BUF_OUTPUT, i, 0}, src, n, node, arena);
  }
  if (st != FC_OK) {
    LLVMDisposeModule(mod);
    fc_gpu_plan_free(plan);
    return st;
  }
  *out = mod;
  return FC_OK;
}

void fc_gpu_plan_free(FcGpuPlan *plan) {
  free(plan->weights);
  plan->weights = NULL;
  plan->weights_bytes = 0;
}
