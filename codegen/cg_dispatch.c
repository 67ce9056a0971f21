/* cg_dispatch.c — multiversioned artefacts: one model compiled for several CPUs (`--cpu x86-64-v3,x86-64-v4`),
 * the best one this CPU supports chosen when the model first runs.
 *
 * The memory plan, the layout pass's block (NCHW8c or NCHW16c), the GEMM tiles and the packed constants all
 * depend on the target, so each variant is the whole pipeline run for its target: the caller runs the
 * passes on a fresh module per target and hands it to fc_multi_add, which generates its LLVM module under
 * a private prefix (NAME__cpuK_model, NAME__cpuK_run) and optimises it for that target's machine. Every function of the variant is stamped with its target's "target-cpu" and "target-features"
 * (LLVM picks the subtarget per function, as for clang's target attribute).
 *
 * LLVM's pipeline and instruction selection are most of a build, so the variants compile side by side:
 * every variant but the last gets its own LLVM context and a worker thread that optimises it and writes
 * its object into a private folder, while the caller imports and runs the passes for the next one (at most
 * one worker per other CPU this process may run on; none on one CPU). Its descriptor stays a hidden global (linked, never
 * exported from a .so), its run internal. The last (most portable) variant is generated in the build's
 * own context, gets the dispatching descriptor, the entry points and the CPU guard, and is emitted by the
 * caller; the workers' objects are then linked or archived beside it (fc_emit_finish). --emit obj must be
 * one object without a linker, so there every variant is linked into the last one's LLVM module instead
 * and emitted as one object by one target machine.
 *
 * A rank-specialised SBP program (flowc build --ranks N, each rank's module folded with its rank, flow.rank)
 * is the same machinery with more variants: one per CPU and rank, CPU-major, each descriptor carrying its
 * rank (FrtModel.rank), and frt_model_variant takes the first whose CPU this machine has and whose rank is
 * the process's. Weights the ranks share are content-hashed weak symbols (share_constants), stored once.
 *
 * The public descriptor NAME_model (runtime/flowrt.h) lists the variants best first and describes the
 * model as a whole: the largest workspace of any variant, the CPUs, the last (most portable) variant's
 * features as the least the model needs. Its run function (also NAME_run for obj/lib/so) asks the
 * runtime for the variant once (frt_model_variant: FLOWRT_CPU_VARIANT, else the first whose features this
 * CPU has), keeps the choice in an atomic pointer and calls the variant's run; -1 when no variant can run
 * here. That function and NAME_check_cpu are compiled for the architecture's baseline, like the
 * single-variant guard (cg_cpu_guard.c), since they run before any check.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Linker.h>

#include "cg_emit.h"
#include "cg_private.h"
#include "flowrt.h"
#include "gpu.h"

/* FrtModel's fields (runtime/flowrt.h) that the dispatching descriptor sets itself. */
enum {
  FIELD_WORKSPACE = 6,
  FIELD_RUN = 7,
  FIELD_N_KERNELS = 8,
  FIELD_KERNEL_NAMES = 9,
  FIELD_KERNEL_FLOPS = 10,
  FIELD_CPU = 11,
  FIELD_CPU_FEATURES = 12,
  FIELD_N_VARIANTS = 13,
  FIELD_VARIANTS = 14,
  FIELD_RANK = 19,
  N_FIELDS = 20 /* n_ranks, n_mesh_axes, mesh and gpu (15-18) are the last variant's, like its other fields */
};

/* A variant compiled apart: its module, optimised and emitted to `obj` by a thread of its own. */
typedef struct VariantJob {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMTargetMachineRef tm; /* the variant's own target machine: no other thread uses it meanwhile */
  int opt_level;
  char *obj;
  uint64_t workspace; /* its descriptor's, read before the module left this thread */
  bool running;       /* a thread works on it and is yet to be joined */
  pthread_t thread;
  FcStatus st;
  FcDiag diag;
} VariantJob;

struct FcMultiBuild {
  FcCodegenOptions o;
  FcEmitKind kind;
  LLVMContextRef ctx;
  LLVMModuleRef mod;              /* the last variant, and for obj every variant linked into it */
  const FcTarget *last;           /* the last (most portable) variant's target: it emits the object */
  int n, total;                   /* variants added; announced */
  int max_running;                /* worker threads at once */
  char *tmp;                      /* the folder of the workers' objects */
  VariantJob *apart[FC_MULTI_MAX_VARIANTS]; /* NULL: the variant is in mod */
  char cpus[FC_MULTI_MAX_VARIANTS * 64]; /* "x86-64-v4,x86-64-v3", each once */
};

static int count_features(const FcTarget *t) {
  char f[1024];
  fc_cg_cpu_features(t, f, sizeof f);
  int n = f[0] != '\0';
  for (const char *p = f; *p; p++) n += *p == ',';
  return n;
}

FcStatus fc_emit_order_variants(FcTarget **t, int n, FcDiag *diag) {
  if (n > FC_MULTI_MAX_CPUS)
    return fc_error(diag, FC_ERR_INPUT, "--cpu lists %d CPUs, at most %d", n, FC_MULTI_MAX_CPUS);
  int count[FC_MULTI_MAX_CPUS];
  for (int i = 0; i < n; i++) {
    if (t[i]->arch != FC_ARCH_X86_64)
      return fc_error(diag, FC_ERR_INPUT, "--cpu lists several CPUs, which needs an x86-64 target (the run-time "
                      "choice reads the CPU's features), not %s", t[i]->triple);
    count[i] = count_features(t[i]);
  }
  /* Insertion sort, most features first; equal counts keep the order given. */
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && count[j] > count[j - 1]; j--) {
      FcTarget *tt = t[j];
      t[j] = t[j - 1];
      t[j - 1] = tt;
      int c = count[j];
      count[j] = count[j - 1];
      count[j - 1] = c;
    }
  char a[1024], b[1024];
  for (int i = 1; i < n; i++) {
    fc_cg_cpu_features(t[i - 1], a, sizeof a);
    fc_cg_cpu_features(t[i], b, sizeof b);
    if (strcmp(a, b) == 0)
      return fc_error(diag, FC_ERR_INPUT, "--cpu lists %s and %s, which use the same checked instructions: the "
                      "run-time choice could not tell them apart; keep one", t[i - 1]->cpu, t[i]->cpu);
  }
  return FC_OK;
}

FcStatus fc_multi_begin(const FcCodegenOptions *o, FcEmitKind kind, int n_variants, FcMultiBuild **out,
                        FcDiag *diag) {
  *out = NULL;
  if (!o->model_name && kind != FC_EMIT_EXE)
    return fc_error(diag, FC_ERR_INTERNAL, "--emit obj/lib without a model name");
  if (n_variants < 1 || n_variants > FC_MULTI_MAX_VARIANTS)
    return fc_error(diag, FC_ERR_INTERNAL, "%d variants", n_variants);
  FcMultiBuild *mb = calloc(1, sizeof *mb);
  if (!mb) fc_die(__FILE__, __LINE__, "out of memory");
  mb->o = *o;
  if (!mb->o.model_name) mb->o.model_name = "flowc";
  mb->kind = kind;
  mb->total = n_variants;
  int cpus = frt_default_threads();
  mb->max_running = cpus > FC_MULTI_MAX_CPUS ? FC_MULTI_MAX_CPUS : cpus - 1;
  mb->ctx = LLVMContextCreate();
  FcStatus st = kind != FC_EMIT_OBJ && n_variants > 1 ? fc_emit_tmpdir_make(&mb->tmp, diag) : FC_OK;
  if (st != FC_OK) {
    fc_multi_abort(mb);
    return st;
  }
  *out = mb;
  return FC_OK;
}

static void drop_module(VariantJob *j) {
  if (j->mod) LLVMDisposeModule(j->mod);
  if (j->ctx) LLVMContextDispose(j->ctx);
  j->mod = NULL;
  j->ctx = NULL;
}

static void *compile_apart(void *arg) {
  VariantJob *j = arg;
  j->st = fc_codegen_optimize(j->mod, j->tm, j->opt_level, &j->diag);
  if (j->st == FC_OK) j->st = fc_emit_object(j->mod, j->tm, j->obj, &j->diag);
  drop_module(j);
  return NULL;
}

/* Waits for the workers (all, or the oldest running one); the first failure goes to diag. */
static FcStatus join_jobs(FcMultiBuild *mb, bool one, FcDiag *diag) {
  FcStatus st = FC_OK;
  for (int k = 0; k < mb->n; k++) {
    VariantJob *j = mb->apart[k];
    if (!j || !j->running) continue;
    pthread_join(j->thread, NULL);
    j->running = false;
    if (j->st != FC_OK && st == FC_OK) st = fc_error(diag, j->st, "%s", j->diag.msg);
    if (one) break;
  }
  return st;
}

void fc_multi_abort(FcMultiBuild *mb) {
  if (!mb) return;
  FcDiag ignored;
  fc_diag_init(&ignored);
  join_jobs(mb, false, &ignored);
  for (int k = 0; k < FC_MULTI_MAX_VARIANTS; k++)
    if (mb->apart[k]) {
      free(mb->apart[k]->obj);
      free(mb->apart[k]);
    }
  fc_emit_tmpdir_remove(&mb->tmp);
  if (mb->mod) LLVMDisposeModule(mb->mod);
  if (mb->ctx) LLVMContextDispose(mb->ctx);
  free(mb);
}

static void variant_symbol(const FcMultiBuild *mb, int k, const char *what, char *buf, size_t cap) {
  snprintf(buf, cap, "%s__cpu%d_%s", mb->o.model_name, k, what);
}

/* The variant's descriptor NAME__cpuK_model in mod and its workspace bytes; NULL when it is missing. */
static LLVMValueRef variant_descriptor(const FcMultiBuild *mb, LLVMModuleRef mod, int k, uint64_t *workspace) {
  char sym[400];
  variant_symbol(mb, k, "model", sym, sizeof sym);
  LLVMValueRef g = LLVMGetNamedGlobal(mod, sym);
  LLVMValueRef init = g ? LLVMGetInitializer(g) : NULL;
  LLVMValueRef w = init && LLVMGetNumOperands(init) == N_FIELDS ? LLVMGetOperand(init, FIELD_WORKSPACE) : NULL;
  if (!w || !LLVMIsAConstantInt(w)) return NULL;
  *workspace = LLVMConstIntGetZExtValue(w);
  return g;
}

/* Hands variant k's module (in its own context) to a worker thread, after the oldest running one finished
 * when max_running are busy; compiles it on this thread when there may be none. */
static FcStatus start_apart(FcMultiBuild *mb, int k, LLVMContextRef ctx, LLVMModuleRef mod, const FcTarget *t,
                            FcDiag *diag) {
  VariantJob *j = calloc(1, sizeof *j);
  if (!j) fc_die(__FILE__, __LINE__, "out of memory");
  mb->apart[k] = j;
  j->ctx = ctx;
  j->mod = mod;
  j->tm = fc_target_tm(t);
  j->opt_level = mb->o.opt_level;
  fc_diag_init(&j->diag);
  size_t cap = strlen(mb->tmp) + 32;
  j->obj = malloc(cap);
  if (!j->obj) fc_die(__FILE__, __LINE__, "out of memory");
  snprintf(j->obj, cap, "%s/cpu%d.o", mb->tmp, k);
  LLVMValueRef g = variant_descriptor(mb, mod, k, &j->workspace);
  if (!g) {
    drop_module(j);
    return j->st = fc_error(diag, FC_ERR_INTERNAL, "the descriptor of the %d-th CPU variant is missing", k);
  }
  /* NAME_model points at the descriptor from another object: a hidden global keeps it out of a .so's
   * exports. Its run is reached only through it. */
  LLVMSetVisibility(g, LLVMHiddenVisibility);
  LLVMSetLinkage(LLVMGetOperand(LLVMGetInitializer(g), FIELD_RUN), LLVMInternalLinkage);
  int running = 0;
  for (int i = 0; i < k; i++) running += mb->apart[i] && mb->apart[i]->running;
  FcStatus st = running && running >= mb->max_running ? join_jobs(mb, true, diag) : FC_OK;
  if (st != FC_OK) {
    drop_module(j);
    return st;
  }
  if (mb->max_running > 0 && pthread_create(&j->thread, NULL, compile_apart, j) == 0) {
    j->running = true;
    return FC_OK;
  }
  compile_apart(j); /* no CPU to spare, or no thread could start: compile it here */
  return j->st != FC_OK ? fc_error(diag, j->st, "%s", j->diag.msg) : FC_OK;
}

FcStatus fc_multi_add(FcMultiBuild *mb, FcModule *m, const FcTarget *t, FcDiag *diag) {
  if (mb->n == mb->total) return fc_error(diag, FC_ERR_INTERNAL, "more CPU variants than announced");
  char prefix[320];
  snprintf(prefix, sizeof prefix, "%s__cpu%d", mb->o.model_name, mb->n);
  FcCodegenOptions co = mb->o;
  co.model_name = prefix;
  co.share_constants = true;
  LLVMTargetMachineRef tm = fc_target_tm(t);
  bool apart = mb->tmp && mb->n < mb->total - 1;
  LLVMContextRef ctx = apart ? LLVMContextCreate() : mb->ctx;
  LLVMModuleRef mod = NULL;
  FcStatus st = fc_codegen_module(m, &co, ctx, t, &mod, diag);
  if (st == FC_OK) fc_codegen_stamp_target(mod, tm);
  if (st == FC_OK && apart) {
    st = start_apart(mb, mb->n, ctx, mod, t, diag);
    ctx = NULL;
    mod = NULL;
  } else if (st == FC_OK) {
    fc_progress(&mb->o.progress, "LLVM optimisation", NULL, 0, 0);
    st = fc_codegen_optimize(mod, tm, co.opt_level, diag);
    if (st == FC_OK && !mb->mod) {
      mb->mod = mod;
      mod = NULL;
    } else if (st == FC_OK) {
      bool failed = LLVMLinkModules2(mb->mod, mod); /* consumes mod */
      mod = NULL;
      if (failed) st = fc_error(diag, FC_ERR_INTERNAL, "cannot link the %s variant into the model", t->cpu);
    }
  }
  if (mod) LLVMDisposeModule(mod);
  if (apart && ctx) LLVMContextDispose(ctx);
  if (st != FC_OK) return st;
  /* Each CPU once, though a rank-specialised build has a variant per CPU and rank. */
  size_t used = strlen(mb->cpus), len = strlen(t->cpu);
  bool listed = false;
  for (const char *p = mb->cpus; *p && !listed; p += strcspn(p, ","), p += *p == ',')
    listed = strncmp(p, t->cpu, len) == 0 && (p[len] == ',' || p[len] == '\0');
  if (!listed) snprintf(mb->cpus + used, sizeof mb->cpus - used, "%s%s", used ? "," : "", t->cpu);
  mb->last = t;
  mb->n++;
  return FC_OK;
}

static LLVMValueRef private_const(LLVMModuleRef mod, LLVMValueRef init, const char *name) {
  LLVMValueRef g = LLVMAddGlobal(mod, LLVMTypeOf(init), name);
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  return g;
}

/* int run(in, out, ws, pool): the chosen variant's run, the choice made once. */
static LLVMValueRef build_dispatch(FcMultiBuild *mb, LLVMValueRef model, LLVMTypeRef model_ty, LLVMTypeRef run_ty,
                                   const char *run_name) {
  LLVMModuleRef mod = mb->mod;
  LLVMContextRef ctx = mb->ctx;
  LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0), i32 = LLVMInt32TypeInContext(ctx);
  LLVMValueRef chosen = LLVMAddGlobal(mod, ptr, ".chosen_variant");
  LLVMSetInitializer(chosen, LLVMConstNull(ptr));
  LLVMSetLinkage(chosen, LLVMInternalLinkage);
  LLVMTypeRef pick_params[2] = {ptr, ptr};
  LLVMTypeRef pick_ty = LLVMFunctionType(ptr, pick_params, 2, 0);
  LLVMValueRef pick = LLVMGetNamedFunction(mod, "frt_model_variant");
  if (!pick) pick = LLVMAddFunction(mod, "frt_model_variant", pick_ty);

  LLVMValueRef fn = LLVMAddFunction(mod, run_name, run_ty);
  fc_cg_baseline_fn(mod, mb->last, fn);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ctx, fn, "entry"),
                    choose = LLVMAppendBasicBlockInContext(ctx, fn, "choose"),
                    none = LLVMAppendBasicBlockInContext(ctx, fn, "none"),
                    run = LLVMAppendBasicBlockInContext(ctx, fn, "run");
  LLVMPositionBuilderAtEnd(b, entry);
  /* Threads racing on the first run all store the same choice: monotonic is enough. */
  LLVMValueRef known = LLVMBuildLoad2(b, ptr, chosen, "known");
  LLVMSetOrdering(known, LLVMAtomicOrderingMonotonic);
  LLVMSetAlignment(known, 8);
  LLVMBuildCondBr(b, LLVMBuildIsNull(b, known, ""), choose, run);
  LLVMPositionBuilderAtEnd(b, choose);
  LLVMValueRef args[2] = {model, LLVMConstNull(ptr)};
  LLVMValueRef picked = LLVMBuildCall2(b, pick_ty, pick, args, 2, "picked");
  LLVMBasicBlockRef keep = LLVMAppendBasicBlockInContext(ctx, fn, "keep");
  LLVMBuildCondBr(b, LLVMBuildIsNull(b, picked, ""), none, keep);
  LLVMPositionBuilderAtEnd(b, keep);
  LLVMValueRef store = LLVMBuildStore(b, picked, chosen);
  LLVMSetOrdering(store, LLVMAtomicOrderingMonotonic);
  LLVMSetAlignment(store, 8);
  LLVMBuildBr(b, run);
  LLVMPositionBuilderAtEnd(b, none);
  LLVMBuildRet(b, LLVMConstInt(i32, (unsigned long long)-1, 1));
  LLVMPositionBuilderAtEnd(b, run);
  LLVMValueRef v = LLVMBuildPhi(b, ptr, "variant");
  LLVMAddIncoming(v, (LLVMValueRef[]){known, picked}, (LLVMBasicBlockRef[]){entry, keep}, 2);
  LLVMValueRef body = LLVMBuildLoad2(b, ptr, LLVMBuildStructGEP2(b, model_ty, v, FIELD_RUN, ""), "body");
  LLVMValueRef pass[4];
  for (unsigned i = 0; i < 4; i++) pass[i] = LLVMGetParam(fn, i);
  LLVMBuildRet(b, LLVMBuildCall2(b, run_ty, body, pass, 4, ""));
  LLVMDisposeBuilder(b);
  return fn;
}

/* int NAME_check_cpu(char *msg, size_t cap): frt_model_check_cpu of the model. */
static void build_check_cpu(FcMultiBuild *mb, LLVMValueRef model) {
  LLVMModuleRef mod = mb->mod;
  LLVMContextRef ctx = mb->ctx;
  LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0), i32 = LLVMInt32TypeInContext(ctx);
  LLVMTypeRef size_ty = LLVMIntPtrTypeInContext(ctx, LLVMGetModuleDataLayout(mod));
  LLVMTypeRef check_params[3] = {ptr, ptr, size_ty};
  LLVMTypeRef check_ty = LLVMFunctionType(i32, check_params, 3, 0);
  LLVMValueRef check = LLVMGetNamedFunction(mod, "frt_model_check_cpu");
  if (!check) check = LLVMAddFunction(mod, "frt_model_check_cpu", check_ty);
  char sym[400];
  snprintf(sym, sizeof sym, "%s_check_cpu", mb->o.model_name);
  LLVMTypeRef params[2] = {ptr, size_ty};
  LLVMValueRef fn = LLVMAddFunction(mod, sym, LLVMFunctionType(i32, params, 2, 0));
  fc_cg_baseline_fn(mod, mb->last, fn);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
  LLVMValueRef args[3] = {model, LLVMGetParam(fn, 0), LLVMGetParam(fn, 1)};
  LLVMBuildRet(b, LLVMBuildCall2(b, check_ty, check, args, 3, ""));
  LLVMDisposeBuilder(b);
}

/* NAME_model: the descriptor of the whole, over the variants' descriptors (best first). */
static FcStatus build_model(FcMultiBuild *mb, FcDiag *diag) {
  LLVMModuleRef mod = mb->mod;
  LLVMContextRef ctx = mb->ctx;
  LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0), i32 = LLVMInt32TypeInContext(ctx),
              i64 = LLVMInt64TypeInContext(ctx);
  LLVMValueRef variants[FC_MULTI_MAX_VARIANTS];
  uint64_t ws = 0, bytes = 0;
  /* The last variant is always in mod: its descriptor gives the type and the model-wide fields. */
  LLVMValueRef last = variant_descriptor(mb, mod, mb->n - 1, &bytes);
  if (!last) return fc_error(diag, FC_ERR_INTERNAL, "the descriptor of the %d-th CPU variant is missing", mb->n - 1);
  LLVMValueRef last_init = LLVMGetInitializer(last);
  LLVMTypeRef model_ty = LLVMGlobalGetValueType(last);
  for (int k = 0; k < mb->n; k++) {
    if (mb->apart[k]) {
      char sym[400];
      variant_symbol(mb, k, "model", sym, sizeof sym);
      variants[k] = LLVMAddGlobal(mod, model_ty, sym); /* defined in the worker's object */
      LLVMSetVisibility(variants[k], LLVMHiddenVisibility);
      bytes = mb->apart[k]->workspace;
    } else {
      variants[k] = variant_descriptor(mb, mod, k, &bytes);
      if (!variants[k]) return fc_error(diag, FC_ERR_INTERNAL, "the descriptor of the %d-th CPU variant is missing", k);
      /* Reached only through NAME_model from now on (external until here, so that LLVM's pipeline kept them). */
      LLVMSetLinkage(variants[k], LLVMInternalLinkage);
      LLVMSetLinkage(LLVMGetOperand(LLVMGetInitializer(variants[k]), FIELD_RUN), LLVMInternalLinkage);
    }
    if (bytes > ws) ws = bytes;
  }
  LLVMValueRef f[N_FIELDS];
  for (int i = 0; i < N_FIELDS; i++) f[i] = LLVMGetOperand(last_init, (unsigned)i);
  char name[400];
  snprintf(name, sizeof name, "%s_model", mb->o.model_name);
  LLVMValueRef model = LLVMAddGlobal(mod, model_ty, name);
  LLVMTypeRef run_ty = LLVMGlobalGetValueType(f[FIELD_RUN]);
  snprintf(name, sizeof name, "%s_run", mb->o.model_name);
  LLVMValueRef run = build_dispatch(mb, model, model_ty, run_ty, name);
  if (mb->kind == FC_EMIT_EXE) LLVMSetLinkage(run, LLVMInternalLinkage);
  else build_check_cpu(mb, model);

  f[FIELD_WORKSPACE] = LLVMConstInt(i64, ws, 0);
  f[FIELD_RUN] = run;
  /* The run's return code indexes the chosen variant's kernel names (frt_model_variant), not these. */
  f[FIELD_N_KERNELS] = LLVMConstInt(i32, 0, 0);
  f[FIELD_KERNEL_NAMES] = f[FIELD_KERNEL_FLOPS] = LLVMConstNull(ptr);
  f[FIELD_CPU] = private_const(mod, LLVMConstStringInContext2(ctx, mb->cpus, strlen(mb->cpus), 0), ".cpus");
  f[FIELD_N_VARIANTS] = LLVMConstInt(i32, (unsigned long long)mb->n, 0);
  f[FIELD_VARIANTS] = private_const(mod, LLVMConstArray2(ptr, variants, (uint64_t)mb->n), ".variants");
  f[FIELD_RANK] = LLVMConstInt(i32, (unsigned long long)-1, 1); /* the whole: any rank, each variant its own */
  LLVMSetInitializer(model, LLVMConstNamedStruct(model_ty, f, N_FIELDS));
  LLVMSetGlobalConstant(model, 1);
  LLVMSetAlignment(model, 8);
  return FC_OK;
}

FcStatus fc_multi_finish(FcMultiBuild *mb, FcModule *m, const char *out, FcDiag *diag) {
  FcStatus st = join_jobs(mb, false, diag);
  if (st == FC_OK && (mb->n != mb->total || !mb->mod))
    st = fc_error(diag, FC_ERR_INTERNAL, "%d of %d CPU variants were built", mb->n, mb->total);
  if (st == FC_OK) st = build_model(mb, diag);
  if (st == FC_OK && mb->o.gpu_plan)
    st = fc_gpu_add_descriptor(mb->mod, mb->o.gpu_plan, mb->o.gpu_ptx, mb->o.gpu_target, mb->o.gpu_symbol, diag);
  const char *name = mb->o.model_name;
  if (st == FC_OK) st = fc_emit_add_entry_points(mb->mod, name, mb->kind, diag);
  /* For exe this compiles `main` for the baseline; obj/lib/so have their dispatching NAME_run instead. */
  if (st == FC_OK && mb->kind == FC_EMIT_EXE) st = fc_emit_cpu_guard(mb->mod, mb->last, name, mb->kind, diag);
  const char *objs[FC_MULTI_MAX_VARIANTS];
  int n_objs = 0;
  for (int k = 0; k < mb->n; k++)
    if (mb->apart[k]) objs[n_objs++] = mb->apart[k]->obj;
  st = fc_emit_finish(st, mb->mod, mb->ctx, mb->last ? fc_target_tm(mb->last) : NULL, m, mb->kind, name, out, objs,
                      n_objs, &mb->o.progress, diag);
  mb->mod = NULL; /* fc_emit_finish disposed of them */
  mb->ctx = NULL;
  fc_multi_abort(mb);
  return st;
}
