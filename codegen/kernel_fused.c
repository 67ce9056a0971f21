/* kernel_fused.c — the kernel of flow.fused: an element-wise program (ir/ew_program.h) over operands
 * broadcast to the result, computed in one loop nest with no intermediate buffers.
 *
 * Iteration space: as in fc_kernel_elementwise, result dims of size 1 are dropped and neighbours merged
 * wherever every operand steps through them as one, so a program over same-shape operands and scalars is
 * one flat loop and a per-channel operand gives [rows, plane]. The last merged dim is the inner loop,
 * where each operand's stride is 1 (it varies along the row) or 0 (it is constant along the row: loaded
 * once per row, before the inner loop). The outer iterations are the rows, times the chunks of a long
 * row, so that one long row still spreads over the threads.
 *
 * The inner loop is vectorised here, not left to LLVM's loop vectoriser, for the dtypes whose storage is
 * their compute type (f32, f64, integers): VW lanes per step (the target's vector width), each program
 * step computed on vectors by fc_cg_scalar_op (an f32 SiLU's sigmoid and mul at once, as cg_epilogue.c's
 * fc_cg_silu computes it in a conv's epilogue), then a scalar loop for the last (n mod VW) elements. The
 * loop vectoriser would need a run-time overlap check between each operand and the result; the memory
 * plan may compute the result in place over an operand (memplan.h), and then that check sends every row
 * to the scalar loop. A vector step reads all of its lanes of every operand before it writes the result's
 * lanes, so it is correct in place without any check. f16, bf16 and bool, whose loads and stores convert,
 * get a scalar loop that LLVM vectorises where it can, in copies of the nest specialised for each operand
 * of the result's shape being the result's own buffer: read through the result pointer at the store's own
 * index, it is a dependence of distance 0, which the vectoriser accepts without a check.
 *
 * Each step is checked when the kernel is built by running its op's inference hook on scalars of the
 * compute dtype: a step the op does not define for that dtype (sqrt of an integer), or one that changes the
 * dtype (a comparison), is an error naming the fused op rather than an assertion in fc_cg_scalar_op.
 *
 * An operand of another dtype is loaded as it is stored and converted by fc_cg_convert, the code of
 * flow.cast; so is the program's value when the result is stored as another dtype (`to`): a quantised
 * model's u8 tensors go through the float glue between its integer kernels in one pass, a byte read and a
 * byte written per element. Such 8-bit results are computed GLUE_UNROLL vectors at a time where the row is
 * long enough (u8 ones from f32 converted by x86's saturating packs: u8_by_packs), then vector by vector, then
 * element by element. A program of one byte made of exactly rounded
 * steps is a table lookup instead where the target has AVX2 or AVX-512 VBMI (kernel_fused_lut.c, asked first).
 */
#include "cg_requant.h"
#include "ew_program.h"

/* Rows longer than FU_SPLIT_ABOVE elements are cut into chunks of FU_CHUNK (a multiple of every vector
 * width) so that one long row still spreads across threads. */
enum { FU_SPLIT_ABOVE = 32768, FU_CHUNK = 16384 };
/* Copies of the scalar nest specialised for an operand computed in place (see fc_kernel_fused). */
enum { IN_PLACE_COPIES = 3 };
/* Vectors per step of an f32 loop that stores 8-bit integers: converted one by one, each vector's bytes
 * would take their own shuffles to narrow (4 on AVX2); a block of 4 narrows with 2 packs, a pack and a
 * permute. */
enum { GLUE_UNROLL = 4 };

typedef struct Fused {
  const FcEwProgram *prog; /* the op's `program` attribute */
  FcCgStep *steps; /* prog.n_steps stand-ins (fc_cg_program_steps) */
  FcDtype dt;      /* the compute dtype */
  FcDtype st;      /* the result's (stored) dtype */
  FcDtype *odt;    /* operand j's dtype */
  int n_in;
  int cr;         /* merged dims */
  int64_t *cd;    /* merged dim sizes, outermost first */
  int64_t **cs;   /* cs[j]: operand j's strides over the merged dims */
  int64_t inner, chunk, nchunks;
  int vw;         /* lanes of the hand-vectorised loop; 1: scalar loop only */
} Fused;

/* Rough scalar operations per element of one step, for the parallel cut-off. */
static double step_cost(FcOpKind kind) {
  switch (kind) {
  case FC_OP_EXP: case FC_OP_LOG: case FC_OP_SIN: case FC_OP_COS: case FC_OP_TAN: case FC_OP_ASIN:
  case FC_OP_ACOS: case FC_OP_ATAN: case FC_OP_SINH: case FC_OP_COSH: case FC_OP_TANH: case FC_OP_ASINH:
  case FC_OP_ACOSH: case FC_OP_ATANH: case FC_OP_ERF: case FC_OP_SIGMOID: case FC_OP_SOFTPLUS: return 30;
  case FC_OP_POW: return 60;
  case FC_OP_DIV: case FC_OP_MOD: case FC_OP_SQRT: case FC_OP_RECIPROCAL: return 8;
  default: return 2;
  }
}

/* The merged iteration space (see the top of the file). */
static void merge_dims(FcKernel *k, Fused *f, FcArena *arena) {
  FcOp *op = k->op;
  const FcType *rt = &op->results[0].type;
  int r = rt->rank, n_in = f->n_in;
  f->cd = FC_NEW_ARRAY(arena, int64_t, (size_t)r + 1);
  f->cs = FC_NEW_ARRAY(arena, int64_t *, (size_t)n_in);
  const int64_t **st = FC_NEW_ARRAY(arena, const int64_t *, (size_t)n_in);
  for (int j = 0; j < n_in; j++) {
    st[j] = fc_cg_broadcast_strides(arena, &op->operands[j].value->type, rt);
    f->cs[j] = FC_NEW_ARRAY(arena, int64_t, (size_t)r + 1);
  }
  int cr = 0;
  for (int a = 0; a < r; a++) {
    if (rt->dims[a] == 1) continue;
    bool merge = cr > 0;
    for (int j = 0; merge && j < n_in; j++) merge = f->cs[j][cr - 1] == st[j][a] * rt->dims[a];
    if (merge) {
      f->cd[cr - 1] *= rt->dims[a];
      for (int j = 0; j < n_in; j++) f->cs[j][cr - 1] = st[j][a];
    } else {
      f->cd[cr] = rt->dims[a];
      for (int j = 0; j < n_in; j++) f->cs[j][cr] = st[j][a];
      cr++;
    }
  }
  if (cr == 0) { /* a single element */
    f->cd[0] = 1;
    for (int j = 0; j < n_in; j++) f->cs[j][0] = 0;
    cr = 1;
  }
  f->cr = cr;
  f->inner = f->cd[cr - 1];
  f->chunk = f->inner > FU_SPLIT_ABOVE ? FU_CHUNK : f->inner;
  f->nchunks = (f->inner + f->chunk - 1) / f->chunk;
}

/* Lanes for the hand-vectorised loop: the target's vector width (its widest registers for a result of 8-bit
 * integers) where loads and stores need no conversion and every operand's inner stride is 0 or 1; else 1. */
static bool stored_as_computed(FcDtype dt) { return dt != FC_DT_F16 && dt != FC_DT_BF16 && dt != FC_DT_BOOL; }

static int vector_lanes(FcKernel *k, const Fused *f) {
  if (!stored_as_computed(f->dt) || !stored_as_computed(f->st)) return 1;
  for (int j = 0; j < f->n_in; j++) {
    int64_t s = f->cs[j][f->cr - 1];
    if ((s != 0 && s != 1) || !stored_as_computed(f->odt[j])) return 1;
  }
  bool glue = f->st == FC_DT_U8 || f->st == FC_DT_I8; /* a quantised model's glue: see the target's call */
  int vw = glue ? fc_target_lanes_8bit_glue(k->target, f->dt) : fc_target_lanes(k->target, f->dt);
  if (vw < 2 || f->inner < vw) return 1;
  return vw > 64 ? 64 : vw;
}

/* n lanes (n > 1) of a dtype stored as it is computed, from or to base[index ..]. */
static LLVMValueRef load_lanes(FcKernel *k, FcDtype dt, LLVMValueRef base, LLVMValueRef index, int n) {
  LLVMTypeRef vt = LLVMVectorType(fc_cg_storage_type(k, dt), (unsigned)n);
  LLVMValueRef v = LLVMBuildLoad2(k->b, vt, fc_cg_gep(k, dt, base, index), "");
  LLVMSetAlignment(v, (unsigned)fc_dtype_size(dt));
  return v;
}

static void store_lanes(FcKernel *k, FcDtype dt, LLVMValueRef base, LLVMValueRef index, LLVMValueRef v) {
  LLVMValueRef s = LLVMBuildStore(k->b, v, fc_cg_gep(k, dt, base, index));
  LLVMSetAlignment(s, (unsigned)fc_dtype_size(dt));
}

/* The program on operand values `in` (scalars, or vectors of one width), at the builder's position. */
static LLVMValueRef run_program(FcKernel *k, const Fused *f, LLVMValueRef *in, LLVMValueRef *vals) {
  for (int i = 0; i < f->prog->n_steps; i++) {
    const FcEwStep *st = &f->prog->steps[i];
    LLVMValueRef a[FC_EW_MAX_ARGS] = {NULL, NULL, NULL};
    for (int j = 0; j < st->n_args; j++) {
      int32_t r = st->args[j];
      a[j] = FC_EW_IS_STEP_REF(r) ? vals[FC_EW_STEP_OF(r)] : in[r];
    }
    if (f->dt == FC_DT_F32 && fc_ew_is_silu_pair(f->prog, i)) { /* as an epilogue computes it */
      vals[i] = a[0]; /* read by no later step */
      vals[i + 1] = fc_cg_silu(k, a[0]);
      i++;
      continue;
    }
    vals[i] = fc_cg_scalar_op(k, &f->steps[i].op, f->dt, a[0], a[1], a[2]);
  }
  return vals[f->prog->n_steps - 1];
}

/* Whether the program's value is at most 255 or NaN: its last step is a min with a one-element constant of at
 * most 255 (whatever min makes of a NaN, nothing above the constant comes out). */
static bool program_at_most_255(const FcKernel *k, const Fused *f) {
  const FcEwStep *st = &f->prog->steps[f->prog->n_steps - 1];
  if (st->kind != FC_OP_MIN) return false;
  for (int j = 0; j < st->n_args; j++) {
    const FcTensor *c = st->args[j] >= 0 ? fc_value_scalar_f32(k->op->operands[st->args[j]].value) : NULL;
    if (c && ((const float *)c->data)[0] <= 255.0f) return true;
  }
  return false;
}

/* GLUE_UNROLL vectors of vw f32 lanes (vw the target's pack width: AVX2 or AVX-512BW) converted to u8 as
 * flow.cast converts them (toward zero, saturating, NaN to 0) by the requantising stores' packs: a vminps with
 * 255 first (x86's min returns its second operand, the value, when either is NaN; left out when the program
 * already ends at most 255), vcvttps2dq (0x80000000 for a NaN and for anything outside i32), then the
 * signed-saturating pack to i16 and the unsigned-saturating one to u8, which take everything below 0, and
 * 0x80000000, to 0; one vpermd puts the 128-bit lanes' dwords back in element order (fc_qp_packs_in_order).
 * fc_cg_convert's clamps to [0, 255] in f32 and its truncation's masks before LLVM's packs are what this
 * leaves out. */
static LLVMValueRef u8_by_packs(FcKernel *k, const Fused *f, LLVMValueRef y) {
  unsigned w = (unsigned)f->vw;
  bool wide = w == 16;
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef vf = LLVMVectorType(f32, w), vd = LLVMVectorType(i32, w);
  bool clamp = !program_at_most_255(k, f);
  LLVMValueRef r[GLUE_UNROLL], h[GLUE_UNROLL / 2];
  int part[64];
  for (int v = 0; v < GLUE_UNROLL; v++) {
    for (unsigned e = 0; e < w; e++) part[e] = (int)(v * w + e);
    LLVMValueRef x = fc_cg_shuffle(k, y, NULL, part, (int)w);
    if (clamp) {
      LLVMValueRef a[3] = {fc_cg_splat_const(vf, LLVMConstReal(f32, 255.0)), x, LLVMConstInt(i32, 4, 0)};
      x = fc_cg_intrinsic(k, wide ? "llvm.x86.avx512.min.ps.512" : "llvm.x86.avx.min.ps.256", NULL, a, wide ? 3 : 2);
    }
    LLVMValueRef c[4] = {x, LLVMGetUndef(vd), LLVMConstInt(LLVMInt16TypeInContext(k->ctx), 0xffff, 0),
                         LLVMConstInt(i32, 4, 0)};
    r[v] = fc_cg_intrinsic(k, wide ? "llvm.x86.avx512.mask.cvttps2dq.512" : "llvm.x86.avx.cvtt.ps2dq.256", NULL, c,
                           wide ? 4 : 1);
  }
  for (int j = 0; j < GLUE_UNROLL / 2; j++)
    h[j] = fc_cg_intrinsic(k, wide ? "llvm.x86.avx512.packssdw.512" : "llvm.x86.avx2.packssdw", NULL, r + 2 * j, 2);
  LLVMValueRef bytes = fc_cg_intrinsic(k, wide ? "llvm.x86.avx512.packuswb.512" : "llvm.x86.avx2.packuswb", NULL, h, 2);
  return fc_qp_packs_in_order(k, bytes, GLUE_UNROLL, (int)w);
}

/* Per-kernel emission state: the operand pointers of this copy of the nest and the row's offsets. */
typedef struct Nest {
  LLVMValueRef *ptrs;  /* operand j's buffer; the result pointer for an operand computed in place */
  LLVMValueRef *off;   /* operand j's offset of the row */
  LLVMValueRef *fixed, *vfixed; /* row-constant operands (stride 0): loaded scalars, and splat */
  LLVMValueRef *in, *vals;      /* scratch: operand values and step values */
  LLVMValueRef base;   /* the row's first result element */
} Nest;

/* One inner loop over [lo, hi) of a row: operand j at off[j] + i * stride, the result at base + i. An
 * operand read through the result pointer (in place: it has the result's shape) is read at the result's
 * own index, the same address expression as the store, so LLVM sees a dependence distance of 0 rather
 * than two ranges that overlap. */
static void emit_inner(FcKernel *k, const Fused *f, const Nest *n, LLVMValueRef lo, LLVMValueRef hi, int lanes) {
  FcOp *op = k->op;
  LLVMBuilderRef B = k->b;
  FcLoop l;
  LLVMValueRef i = fc_cg_loop_begin(k, &l, lo, hi, lanes, lanes > 1 ? "v" : "i");
  LLVMValueRef oi = LLVMBuildAdd(B, n->base, i, "");
  for (int j = 0; j < f->n_in; j++) {
    int64_t s = f->cs[j][f->cr - 1];
    if (s == 0) {
      n->in[j] = lanes == 1         ? n->fixed[j]
                 : lanes == f->vw ? n->vfixed[j]
                                  : fc_cg_splat(k, n->fixed[j], (unsigned)lanes);
      continue;
    }
    LLVMValueRef idx = n->ptrs[j] == k->out[0] ? oi
                       : LLVMBuildAdd(B, n->off[j], s == 1 ? i : LLVMBuildMul(B, i, fc_cg_const_i64(k, s), ""), "");
    n->in[j] = lanes > 1 ? load_lanes(k, f->odt[j], n->ptrs[j], idx, lanes) : fc_cg_load(k, f->odt[j], n->ptrs[j], idx);
    n->in[j] = fc_cg_convert(k, n->in[j], f->odt[j], f->dt);
  }
  LLVMValueRef y = run_program(k, f, n->in, n->vals);
  bool packs = lanes == GLUE_UNROLL * f->vw && f->st == FC_DT_U8 && f->dt == FC_DT_F32 &&
               fc_target_i8_pack_lanes(k->target) == f->vw;
  y = packs ? u8_by_packs(k, f, y) : fc_cg_convert(k, y, f->dt, f->st);
  if (lanes > 1) store_lanes(k, op->results[0].type.dtype, k->out[0], oi, y);
  else fc_cg_store(k, op->results[0].type.dtype, k->out[0], oi, y);
  fc_cg_loop_end(k, &l);
}

/* The loop nest over the outer iterations [begin, end), reading operand j from ptrs[j]. */
static void emit_nest(FcKernel *k, const Fused *f, Nest *n) {
  LLVMBuilderRef B = k->b;
  int cr = f->cr;
  FcLoop lo_outer;
  LLVMValueRef o = fc_cg_loop_begin(k, &lo_outer, k->begin, k->end, 1, "o");
  LLVMValueRef row, lo, hi;
  fc_cg_row_chunk(k, o, f->inner, f->chunk, f->nchunks, &row, &lo, &hi);
  /* operand offsets of the row: its index decomposed over the outer dims (constant divisors) */
  LLVMValueRef rem = row;
  for (int j = 0; j < f->n_in; j++) n->off[j] = fc_cg_const_i64(k, 0);
  for (int a = cr - 2; a >= 0; a--) {
    LLVMValueRef idx = rem;
    if (a > 0) {
      idx = LLVMBuildURem(B, rem, fc_cg_const_i64(k, f->cd[a]), "");
      rem = LLVMBuildUDiv(B, rem, fc_cg_const_i64(k, f->cd[a]), "");
    }
    for (int j = 0; j < f->n_in; j++)
      if (f->cs[j][a] != 0)
        n->off[j] = LLVMBuildAdd(B, n->off[j], LLVMBuildMul(B, idx, fc_cg_const_i64(k, f->cs[j][a]), ""), "");
  }
  /* row-constant operands: one load per row, none for a one-element constant (an immediate) */
  for (int j = 0; j < f->n_in; j++) {
    if (f->cs[j][cr - 1] != 0) continue;
    n->fixed[j] = fc_cg_immediate(k, f->dt, fc_value_const(k->op->operands[j].value));
    if (!n->fixed[j])
      n->fixed[j] = fc_cg_convert(k, fc_cg_load(k, f->odt[j], n->ptrs[j], n->off[j]), f->odt[j], f->dt);
    if (f->vw > 1) n->vfixed[j] = fc_cg_splat(k, n->fixed[j], (unsigned)f->vw);
  }
  n->base = LLVMBuildMul(B, row, fc_cg_const_i64(k, f->inner), "base");
  LLVMValueRef tail = lo;
  if (f->vw > 1) {
    /* whole vectors over [lo, lo + (hi - lo) / vw * vw), then the scalar rest */
    LLVMValueRef len = LLVMBuildSub(B, hi, lo, "");
    LLVMValueRef nv = (f->vw & (f->vw - 1)) == 0
                          ? LLVMBuildAnd(B, len, fc_cg_const_i64(k, ~(int64_t)(f->vw - 1)), "")
                          : LLVMBuildMul(B, LLVMBuildUDiv(B, len, fc_cg_const_i64(k, f->vw), ""),
                                         fc_cg_const_i64(k, f->vw), "");
    tail = LLVMBuildAdd(B, lo, nv, "tail");
    LLVMValueRef mid = lo;
    if ((f->st == FC_DT_U8 || f->st == FC_DT_I8) && f->dt == FC_DT_F32 && GLUE_UNROLL * f->vw <= 64) {
      /* blocks of GLUE_UNROLL vectors first: their bytes narrow together (vpackusdw/vpackuswb on x86) */
      int64_t blk = (int64_t)GLUE_UNROLL * f->vw;
      mid = LLVMBuildAdd(B, lo, LLVMBuildMul(B, LLVMBuildUDiv(B, len, fc_cg_const_i64(k, blk), ""),
                                             fc_cg_const_i64(k, blk), ""), "mid");
      emit_inner(k, f, n, lo, mid, GLUE_UNROLL * f->vw);
    }
    emit_inner(k, f, n, mid, tail, f->vw);
  }
  emit_inner(k, f, n, tail, hi, 1);
  fc_cg_loop_end(k, &lo_outer);
}

FcStatus fc_kernel_fused(FcKernel *k) {
  if (fc_fused_lut(k)) return FC_OK;
  FcOp *op = k->op;
  FcArena *arena = &op->graph->module->arena;
  const FcType *rt = &op->results[0].type;
  const FcAttr *dta = fc_op_attr(op, FC_ATTR_DTYPE);
  if (!dta || dta->kind != FC_AK_TYPE) return fc_cg_error(k, FC_ERR_INPUT, "attribute 'dtype' is missing");
  Fused f = {.dt = dta->type, .st = rt->dtype, .n_in = op->n_operands};
  f.prog = fc_op_attr_program(op, FC_ATTR_PROGRAM);
  if (!f.prog) return fc_cg_error(k, FC_ERR_INPUT, "attribute 'program' is missing");
  FcStatus st;
  if ((st = fc_cg_program_steps(k, f.prog, f.dt, "program", &f.steps)) != FC_OK) return st;
  f.odt = FC_NEW_ARRAY(arena, FcDtype, (size_t)f.n_in + 1);
  for (int j = 0; j < f.n_in; j++) {
    if (!op->operands[j].value) return fc_cg_error(k, FC_ERR_INPUT, "operand %d is missing", j);
    f.odt[j] = op->operands[j].value->type.dtype;
  }
  int64_t numel;
  FC_ASSERT(fc_type_numel(rt, &numel));
  if (numel == 0) {
    fc_kernel_set_outer(k, 0, 0);
    return FC_OK;
  }
  merge_dims(k, &f, arena);
  f.vw = vector_lanes(k, &f);
  double cost = (double)f.n_in;
  for (int i = 0; i < f.prog->n_steps; i++) cost += step_cost(f.prog->steps[i].kind);
  fc_kernel_set_outer(k, numel / f.inner * f.nchunks, (double)f.chunk * cost);

  size_t n_in = (size_t)f.n_in + 1;
  Nest n = {
      .ptrs = FC_NEW_ARRAY(arena, LLVMValueRef, n_in),
      .off = FC_NEW_ARRAY(arena, LLVMValueRef, n_in),
      .fixed = FC_NEW_ARRAY(arena, LLVMValueRef, n_in),
      .vfixed = FC_NEW_ARRAY(arena, LLVMValueRef, n_in),
      .in = FC_NEW_ARRAY(arena, LLVMValueRef, n_in),
      .vals = FC_NEW_ARRAY(arena, LLVMValueRef, (size_t)f.prog->n_steps),
  };
  LLVMBuilderRef B = k->b;
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "done");
  /* The scalar loop is LLVM's to vectorise, behind a run-time overlap check that fails when the memory
   * plan computes the result in place over an operand; so for each operand of the result's shape (at
   * most IN_PLACE_COPIES) a copy of the nest reads it through the result pointer. The hand-vectorised
   * loop needs no check and no copy. */
  int copies = 0;
  for (int j = 0; f.vw == 1 && j < f.n_in && copies < IN_PLACE_COPIES; j++) {
    const FcValue *v = op->operands[j].value;
    bool seen = false;
    for (int i = 0; i < j; i++) seen |= op->operands[i].value == v;
    if (seen || !fc_shape_equal(&v->type, rt)) continue;
    copies++;
    LLVMBasicBlockRef same = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "in_place");
    LLVMBasicBlockRef other = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "not_in_place");
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, k->in[j], k->out[0], ""), same, other);
    LLVMPositionBuilderAtEnd(B, same);
    for (int i = 0; i < f.n_in; i++) n.ptrs[i] = op->operands[i].value == v ? k->out[0] : k->in[i];
    emit_nest(k, &f, &n);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, other);
  }
  for (int i = 0; i < f.n_in; i++) n.ptrs[i] = k->in[i];
  emit_nest(k, &f, &n);
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, done);
  return FC_OK;
}
