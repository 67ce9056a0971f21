/* cg_epilogue.c — a conv's or matmul's bias and fused `epilogue` program, applied inside its kernel
 * (cg_epilogue.h).
 *
 * The result is a matrix [rows, cols] (cols: the product of the last col_dims dims). Every operand the
 * epilogue reads (conv's bias, operand 2, and each extra an `oN` names) is classified once, here, by
 * its element strides over the result's dims (broadcast dims have stride 0; conv's 1-D bias has stride
 * 1 along the channel dim):
 *   ROW      constant along a row (every col dim of size > 1 has stride 0): a bias, a scalar, a
 *            per-channel scale. One load per row at its row offset, splat to the values' lanes;
 *            fc_cg_epilogue_row loads it once before its loop.
 *   CONTIG   along a row it is laid out as the result is (each col dim of size > 1 has the result's own
 *            stride): a residual, a matmul bias [N]. Loaded at row offset + col, lanes at once.
 *   GENERAL  anything else (e.g. [1, 1, H, 1] against a conv's [N, M, H, W]): each lane's offset is
 *            computed from its col's coordinates; gathered lane by lane.
 * A one-element constant operand is not loaded at all: its value is an immediate.
 * A row offset is the row's coordinates over the leading dims times the operand's strides: 0 when
 * they are all 0, row * cols when the operand is laid out as the result (a residual), else the
 * coordinates from constant-divisor divisions.
 *
 * Values are computed in the result dtype's compute type; the bias is added first, then the program's
 * steps run through fc_cg_scalar_op on stand-in ops (the kind and scalar types it reads), on scalars or
 * vectors alike, except max/min against a constant bound (Clip), which take a cheaper exact form, and
 * f32 SiLU (sigmoid a, then a times it: EfficientNet's activation), computed at once (fc_cg_silu), and
 * f32 GELU's 1 + erf(u), computed as erfc(-u) by fc_math_emit_erfc_fast (half the instructions of the
 * accurate erf; accurate to GELU's needs and, unlike 1 + erf, in relative terms for negative u).
 * A quantised conv's epilogue (fc_cg_epilogue_init_dequantised) runs on its f32 product in the kernels'
 * requantising store (cg_requant.c), reads only one-element constants, and keeps divisions exact.
 * fc_cg_epilogue_row is a loop over the run with whole vectors of the target's width
 * (loads, steps and the store on <VW x T>) and a scalar loop for the rest, like the fused element-wise
 * kernel (kernel_fused.c): the memory plan never places a conv's or matmul's result over an operand, so
 * reading the extras and rewriting dst in vectors is correct with no overlap checks, which LLVM's loop
 * vectoriser would otherwise add for every extra.
 */
#include <math.h>
#include <string.h>

#include "cg_epilogue.h"
#include "ew_program.h"
#include "fcmath.h"

typedef enum { EP_ROW, EP_CONTIG, EP_GENERAL } EpKind;

typedef struct EpOperand {
  int index;            /* operand index in the op (2: conv's bias) */
  EpKind kind;
  const int64_t *lead;  /* strides over the leading (row) dims */
  const int64_t *col;   /* strides over the col dims */
  int row_mode;         /* 0: row offset 0; 1: row * cols; 2: from coordinates */
  LLVMValueRef imm;     /* a one-element constant (a clip bound, GELU's 0.5): its value, else NULL */
  double imm_value;     /* imm's value (floats) */
} EpOperand;

struct FcCgEpilogue {
  FcDtype dt;
  int rank, nlead, ncol;
  const int64_t *dims;  /* the result's dims: nlead leading, then ncol col dims */
  int64_t rows, cols;
  EpOperand ops[FC_PRODUCT_MAX_OPERANDS]; /* the bias first (when present), then the referenced extras */
  int n_ops;
  int slot_of[FC_PRODUCT_MAX_OPERANDS];   /* operand index -> position in ops[], -1 if unused */
  bool has_bias;
  const FcEwProgram *prog; /* the op's `epilogue` attribute, or no steps */
  FcCgStep *steps;
  bool direct;          /* stored as computed (f32, f64, ints): vector loads and stores need no conversion */
  bool exact_div;       /* a quotient by a constant stays a division (a quantisation's x / scale) */
  int vw;               /* lanes of fc_cg_epilogue_row's vector loop; 1: scalar only */
};

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

/* Classifies an operand with element strides `s` over the result's dims. */
static void classify(FcCgEpilogue *e, EpOperand *o, const int64_t *s) {
  o->lead = s;
  o->col = s + e->nlead;
  bool zero = true, contig = true;
  int64_t acc = 1;
  for (int d = e->rank - 1; d >= e->nlead; d--) {
    if (e->dims[d] != 1) {
      zero &= s[d] == 0;
      contig &= s[d] == acc;
    }
    acc *= e->dims[d];
  }
  o->kind = zero ? EP_ROW : contig ? EP_CONTIG : EP_GENERAL;
  bool lzero = true, lcontig = true;
  acc = e->cols;
  for (int d = e->nlead - 1; d >= 0; d--) {
    if (e->dims[d] != 1) {
      lzero &= s[d] == 0;
      lcontig &= s[d] == acc;
    }
    acc *= e->dims[d];
  }
  o->row_mode = lzero ? 0 : lcontig ? 1 : 2;
}

/* fc_cg_epilogue_init, or (dequantised) that of a quantised conv's f32 product: computed in f32 whatever
 * the result's dtype, its i32 bias already in the accumulator, and divisions by a constant kept exact. */
static FcStatus init(FcKernel *k, int col_dims, bool dequantised, FcCgEpilogue **out) {
  *out = NULL;
  FcOp *op = k->op;
  FcArena *arena = &op->graph->module->arena;
  const FcType *rt = &op->results[0].type;
  /* conv_blocked adds its bias (one vector per channel block) in its kernel: only its extras come here. */
  bool is_conv = op->kind == FC_OP_CONV;
  int first = is_conv || op->kind == FC_OP_CONV_BLOCKED ? 3 : 2;
  const FcEwProgram *prog = fc_op_attr_program(op, FC_ATTR_EPILOGUE);
  bool has_bias = is_conv && !dequantised && op->n_operands >= 3 && op->operands[2].value;
  if (!prog && !has_bias) return FC_OK;
  if (col_dims < 0 || col_dims > rt->rank || op->n_operands > FC_PRODUCT_MAX_OPERANDS || (is_conv && rt->rank < 2))
    return fc_cg_error(k, FC_ERR_INTERNAL, "epilogue: %d col dims of a rank-%d result", col_dims, rt->rank);

  FcCgEpilogue *e = FC_NEW(arena, FcCgEpilogue);
  e->dt = dequantised ? FC_DT_F32 : rt->dtype;
  e->exact_div = dequantised;
  e->rank = rt->rank;
  e->ncol = col_dims;
  e->nlead = rt->rank - col_dims;
  e->dims = rt->dims;
  e->rows = 1;
  e->cols = 1;
  for (int d = 0; d < rt->rank; d++) {
    if (d < e->nlead) e->rows *= rt->dims[d];
    else e->cols *= rt->dims[d];
  }
  e->has_bias = has_bias;
  for (int i = 0; i < FC_PRODUCT_MAX_OPERANDS; i++) e->slot_of[i] = -1;
  static const FcEwProgram no_steps;
  e->prog = prog ? prog : &no_steps;
  FcStatus st = fc_cg_program_steps(k, e->prog, e->dt, "epilogue", &e->steps);
  if (st != FC_OK) return st;

  if (has_bias) {
    const FcType *bt = &op->operands[2].value->type;
    if (bt->dtype != e->dt || bt->rank != 1 || bt->dims[0] != rt->dims[1])
      return fc_cg_error(k, FC_ERR_INTERNAL, "epilogue: the bias is not [%lld]", (long long)rt->dims[1]);
    int64_t *s = FC_NEW_ARRAY(arena, int64_t, (size_t)rt->rank);
    s[1] = rt->dims[1] == 1 ? 0 : 1;
    EpOperand *o = &e->ops[e->n_ops];
    o->index = 2;
    classify(e, o, s);
    e->slot_of[2] = e->n_ops++;
  }
  for (int i = 0; i < e->prog->n_steps; i++) {
    const FcEwStep *stp = &e->prog->steps[i];
    for (int a = 0; a < stp->n_args; a++) {
      int32_t r = stp->args[a];
      if (r < 0 || e->slot_of[r] >= 0) continue;
      if (r < first || r >= op->n_operands || !op->operands[r].value)
        return fc_cg_error(k, FC_ERR_INTERNAL, "epilogue references operand %d, not an extra", (int)r);
      const FcType *t = &op->operands[r].value->type;
      if (t->dtype != e->dt || t->rank > rt->rank)
        return fc_cg_error(k, FC_ERR_INTERNAL, "epilogue operand %d does not broadcast to the result", (int)r);
      for (int d = 0; d < t->rank; d++) {
        int64_t od = t->dims[t->rank - 1 - d], rd = rt->dims[rt->rank - 1 - d];
        if (od != 1 && od != rd)
          return fc_cg_error(k, FC_ERR_INTERNAL, "epilogue operand %d does not broadcast to the result", (int)r);
      }
      EpOperand *o = &e->ops[e->n_ops];
      o->index = r;
      classify(e, o, fc_cg_broadcast_strides(arena, t, rt));
      const FcTensor *c = fc_value_const(op->operands[r].value);
      o->imm = fc_cg_immediate(k, e->dt, c);
      if (o->imm && fc_dtype_is_float(e->dt)) o->imm_value = fc_tensor_get_f64(c, 0);
      e->slot_of[r] = e->n_ops++;
    }
  }

  e->vw = 1;
  e->direct = fc_cg_storage_type(k, e->dt) == fc_cg_compute_type(k, e->dt);
  if (e->direct) {
    int vw = fc_target_lanes(k->target, e->dt);
    e->vw = vw < 2 ? 1 : vw > 64 ? 64 : vw;
  }
  *out = e;
  return FC_OK;
}

FcStatus fc_cg_epilogue_init(FcKernel *k, int col_dims, FcCgEpilogue **out) { return init(k, col_dims, false, out); }

FcStatus fc_cg_epilogue_init_dequantised(FcKernel *k, FcCgEpilogue **out) {
  return init(k, k->op->results[0].type.rank - 2, true, out);
}

/* ---- emission ------------------------------------------------------------------------------------ */

static unsigned lanes_of(LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetVectorSize(t) : 1;
}

/* Sum of coord[d] * s[d] over n dims of sizes dims (coordinates of lin, row-major). */
static LLVMValueRef offset_of(FcKernel *k, LLVMValueRef lin, const int64_t *dims, const int64_t *s, int n) {
  LLVMValueRef coord[FC_DEFAULT_MAX_RANK + 1];
  FC_ASSERT(n <= FC_DEFAULT_MAX_RANK);
  fc_cg_unflatten(k, lin, dims, n, coord);
  LLVMValueRef off = c64(k, 0);
  for (int d = 0; d < n; d++)
    if (s[d] != 0 && dims[d] != 1) off = LLVMBuildAdd(k->b, off, LLVMBuildMul(k->b, coord[d], c64(k, s[d]), ""), "");
  return off;
}

static LLVMValueRef row_offset(FcKernel *k, const FcCgEpilogue *e, const EpOperand *o, LLVMValueRef row) {
  switch (o->row_mode) {
  case 0: return c64(k, 0);
  case 1: return LLVMBuildMul(k->b, row, c64(k, e->cols), "");
  default: return offset_of(k, row, e->dims, o->lead, e->nlead);
  }
}

static LLVMValueRef load_row_value(FcKernel *k, const FcCgEpilogue *e, const EpOperand *o, LLVMValueRef row) {
  if (o->imm) return o->imm;
  return fc_cg_load(k, e->dt, k->in[o->index], row_offset(k, e, o, row));
}

/* Operand o's values at (row, col .. col + lanes - 1). `row_val` is its row value when already loaded. */
static LLVMValueRef operand_value(FcKernel *k, const FcCgEpilogue *e, const EpOperand *o, LLVMValueRef row,
                                  LLVMValueRef col, unsigned lanes, LLVMValueRef row_val) {
  LLVMBuilderRef b = k->b;
  if (o->kind == EP_ROW) return fc_cg_splat(k, row_val ? row_val : load_row_value(k, e, o, row), lanes);
  LLVMValueRef base = row_offset(k, e, o, row);
  if (o->kind == EP_CONTIG && (lanes == 1 || e->direct)) {
    LLVMValueRef idx = LLVMBuildAdd(b, base, col, "");
    if (lanes == 1) return fc_cg_load(k, e->dt, k->in[o->index], idx);
    LLVMTypeRef vt = LLVMVectorType(fc_cg_storage_type(k, e->dt), lanes);
    LLVMValueRef v = LLVMBuildLoad2(b, vt, fc_cg_gep(k, e->dt, k->in[o->index], idx), "");
    LLVMSetAlignment(v, (unsigned)fc_dtype_size(e->dt));
    return v;
  }
  /* Lane by lane. */
  LLVMValueRef v = lanes > 1 ? LLVMGetUndef(LLVMVectorType(fc_cg_compute_type(k, e->dt), lanes)) : NULL;
  for (unsigned l = 0; l < lanes; l++) {
    LLVMValueRef c = l ? LLVMBuildAdd(b, col, c64(k, l), "") : col;
    LLVMValueRef off = o->kind == EP_CONTIG ? c : offset_of(k, c, e->dims + e->nlead, o->col, e->ncol);
    LLVMValueRef x = fc_cg_load(k, e->dt, k->in[o->index], LLVMBuildAdd(b, base, off, ""));
    if (lanes == 1) return x;
    v = LLVMBuildInsertElement(b, v, x, c64(k, l), "");
  }
  return v;
}

/* max/min of a float x and a constant bound (Clip, ReLU6) in one compare and one select, where that
 * is exactly the full op (ir/eval_elementwise.c: NaN propagates; of two zeros max takes +0, min -0):
 * with a bound that is not NaN, "x > c or x is NaN" picks x, and on a tie c is the right zero unless
 * it is -0 for max or +0 for min. Returns NULL where the general form is needed. */
static LLVMValueRef bound_op(FcKernel *k, const FcCgEpilogue *e, const FcEwStep *st, LLVMValueRef *a) {
  if ((st->kind != FC_OP_MAX && st->kind != FC_OP_MIN) || !fc_dtype_is_float(e->dt)) return NULL;
  bool is_max = st->kind == FC_OP_MAX;
  for (int j = 0; j < 2; j++) {
    int32_t r = st->args[j];
    if (r < 0) continue;
    const EpOperand *o = &e->ops[e->slot_of[r]];
    double c = o->imm_value;
    if (!o->imm || isnan(c) || (c == 0 && (signbit(c) != 0) == is_max)) continue;
    LLVMValueRef x = a[1 - j], cv = fc_cg_splat(k, o->imm, lanes_of(x));
    LLVMValueRef take_x = LLVMBuildFCmp(k->b, is_max ? LLVMRealUGT : LLVMRealULT, x, cv, "");
    return LLVMBuildSelect(k->b, take_x, x, cv, "");
  }
  return NULL;
}

/* A float quotient by a one-element constant c as the product by 1/c: one multiply instead of a division
 * (GELU's x / sqrt(2), attention's scores / sqrt(d)), which on AVX-512 costs as much as the rest of a
 * cheap epilogue. The product is within an ulp of the quotient, and exact where c is a power of two
 * (f16 and bf16 compute in f32, where 1/c of a moderate c stays a normal number).
 * Returns NULL where the general form is needed. */
static LLVMValueRef quotient_op(FcKernel *k, const FcCgEpilogue *e, const FcEwStep *st, LLVMValueRef *a) {
  if (st->kind != FC_OP_DIV || !fc_dtype_is_float(e->dt) || e->exact_div || st->args[1] < 0) return NULL;
  const EpOperand *o = &e->ops[e->slot_of[st->args[1]]];
  double c = o->imm_value;
  if (!o->imm || !(fabs(c) > 0x1p-100 && fabs(c) < 0x1p100)) return NULL; /* 1/c normal in every float type */
  LLVMTypeRef t = LLVMTypeOf(a[0]);
  LLVMTypeRef st_t = LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
  return LLVMBuildFMul(k->b, a[0], fc_cg_splat_const(t, LLVMConstReal(st_t, 1.0 / c)), "");
}

/* SiLU a · sigmoid(a) = num / (1 + e) with e = exp(-|a|) (never overflows) and num = a (a >= 0) or a · e:
 * one exp (the short form for non-positive arguments, within 1 ulp), one division, and errors of the
 * same order as sigmoid's then a mul (exp's, then three roundings), at about half the instructions of
 * sigmoid's double-word form (math.c), which matters in EfficientNet's convs, whose every result goes
 * through it. */
LLVMValueRef fc_cg_silu(FcKernel *k, LLVMValueRef a) {
  LLVMTypeRef t = LLVMTypeOf(a);
  LLVMValueRef abs = fc_cg_intrinsic(k, "llvm.fabs", t, &a, 1);
  LLVMValueRef ex = fc_math_emit_exp_nonpos(k->mod, k->b, LLVMBuildFNeg(k->b, abs, ""));
  LLVMValueRef one = fc_cg_splat_const(t, LLVMConstReal(LLVMFloatTypeInContext(k->ctx), 1.0));
  LLVMValueRef neg = LLVMBuildFCmp(k->b, LLVMRealOLT, a, LLVMConstNull(t), "");
  LLVMValueRef num = LLVMBuildSelect(k->b, neg, LLVMBuildFMul(k->b, a, ex, ""), a, "");
  return LLVMBuildFDiv(k->b, num, LLVMBuildFAdd(k->b, one, ex, ""), "silu");
}

/* The step that adds 1 to step i, an f32 erf (GELU's 1 + erf(u), the add in either order), when it is
 * the only step that reads the erf; else -1. */
static int erf_plus_one(const FcCgEpilogue *e, int i) {
  const FcEwStep *st = e->prog->steps;
  if (e->dt != FC_DT_F32 || st[i].kind != FC_OP_ERF) return -1;
  int32_t s = FC_EW_STEP_REF(i);
  int add = -1;
  for (int j = i + 1; j < e->prog->n_steps; j++)
    for (int r = 0; r < st[j].n_args; r++) {
      if (st[j].args[r] != s) continue;
      if (add >= 0 || st[j].kind != FC_OP_ADD || st[j].n_args != 2) return -1;
      int32_t other = st[j].args[1 - r];
      if (other < 0) return -1;
      const EpOperand *o = &e->ops[e->slot_of[other]];
      if (!o->imm || o->imm_value != 1) return -1;
      add = j;
    }
  return add;
}

/* The epilogue of v; row_vals[i] (or NULL) holds ops[i]'s row value when it is loaded already. */
static LLVMValueRef apply(FcKernel *k, const FcCgEpilogue *e, LLVMValueRef v, LLVMValueRef row, LLVMValueRef col,
                          LLVMValueRef const *row_vals) {
  unsigned lanes = lanes_of(v);
  LLVMValueRef vals[FC_PRODUCT_MAX_OPERANDS] = {NULL};
  for (int i = 0; i < e->n_ops; i++)
    vals[i] = operand_value(k, e, &e->ops[i], row, col, lanes, row_vals ? row_vals[i] : NULL);
  LLVMValueRef x = v;
  if (e->has_bias) {
    FcOp stand = {.kind = FC_OP_ADD};
    x = fc_cg_scalar_op(k, &stand, e->dt, x, vals[e->slot_of[2]], NULL);
  }
  if (e->prog->n_steps == 0) return x;
  LLVMValueRef *sv = FC_NEW_ARRAY(&k->op->graph->module->arena, LLVMValueRef, (size_t)e->prog->n_steps);
  for (int i = 0; i < e->prog->n_steps; i++) {
    const FcEwStep *st = &e->prog->steps[i];
    if (sv[i]) continue; /* computed with an earlier step */
    LLVMValueRef a[FC_EW_MAX_ARGS] = {NULL, NULL, NULL};
    for (int j = 0; j < st->n_args; j++) {
      int32_t r = st->args[j];
      a[j] = r == FC_EW_REF_X ? x : FC_EW_IS_STEP_REF(r) ? sv[FC_EW_STEP_OF(r)] : vals[e->slot_of[r]];
    }
    if (e->dt == FC_DT_F32 && fc_ew_is_silu_pair(e->prog, i)) { /* steps i and i + 1 at once */
      sv[i + 1] = fc_cg_silu(k, a[0]);
      i++;
      continue;
    }
    int one_plus = erf_plus_one(e, i);
    if (one_plus >= 0) { /* 1 + erf(u) = erfc(-u) at step one_plus; nothing else reads step i */
      sv[i] = sv[one_plus] = fc_math_emit_erfc_fast(k->mod, k->b, LLVMBuildFNeg(k->b, a[0], ""));
      continue;
    }
    sv[i] = bound_op(k, e, st, a);
    if (!sv[i]) sv[i] = quotient_op(k, e, st, a);
    if (!sv[i]) sv[i] = fc_cg_scalar_op(k, &e->steps[i].op, e->dt, a[0], a[1], a[2]);
  }
  return sv[e->prog->n_steps - 1];
}

LLVMValueRef fc_cg_epilogue_value(FcKernel *k, FcCgEpilogue *e, LLVMValueRef v, LLVMValueRef row, LLVMValueRef col) {
  return apply(k, e, v, row, col, NULL);
}

/* dst[row * cols + c] = epilogue(dst[...]) for c in [lo, hi), `lanes` at a time (hi - lo a multiple). */
static void emit_run(FcKernel *k, FcCgEpilogue *e, LLVMValueRef dst, LLVMValueRef row, LLVMValueRef lo,
                     LLVMValueRef hi, unsigned lanes, LLVMValueRef const *row_vals) {
  LLVMBuilderRef b = k->b;
  FcLoop l;
  LLVMValueRef c = fc_cg_loop_begin(k, &l, lo, hi, lanes, lanes > 1 ? "ev" : "e");
  LLVMValueRef idx = LLVMBuildAdd(b, LLVMBuildMul(b, row, c64(k, e->cols), ""), c, "");
  LLVMValueRef v;
  if (lanes > 1) {
    LLVMTypeRef vt = LLVMVectorType(fc_cg_storage_type(k, e->dt), lanes);
    v = LLVMBuildLoad2(b, vt, fc_cg_gep(k, e->dt, dst, idx), "");
    LLVMSetAlignment(v, (unsigned)fc_dtype_size(e->dt));
  } else {
    v = fc_cg_load(k, e->dt, dst, idx);
  }
  LLVMValueRef y = apply(k, e, v, row, c, row_vals);
  if (lanes > 1) {
    LLVMValueRef s = LLVMBuildStore(b, y, fc_cg_gep(k, e->dt, dst, idx));
    LLVMSetAlignment(s, (unsigned)fc_dtype_size(e->dt));
  } else {
    fc_cg_store(k, e->dt, dst, idx, y);
  }
  fc_cg_loop_end(k, &l);
}

void fc_cg_epilogue_row(FcKernel *k, FcCgEpilogue *e, LLVMValueRef dst, LLVMValueRef row, LLVMValueRef c0,
                        LLVMValueRef n) {
  LLVMBuilderRef b = k->b;
  /* Row-constant operands: one load for the whole run. */
  LLVMValueRef row_vals[FC_PRODUCT_MAX_OPERANDS] = {NULL};
  for (int i = 0; i < e->n_ops; i++)
    if (e->ops[i].kind == EP_ROW) row_vals[i] = load_row_value(k, e, &e->ops[i], row);
  LLVMValueRef end = LLVMBuildAdd(b, c0, n, "");
  LLVMValueRef tail = c0;
  if (e->vw > 1) {
    LLVMValueRef nv = (e->vw & (e->vw - 1)) == 0
                          ? LLVMBuildAnd(b, n, c64(k, ~(int64_t)(e->vw - 1)), "")
                          : LLVMBuildMul(b, LLVMBuildSDiv(b, n, c64(k, e->vw), ""), c64(k, e->vw), "");
    tail = LLVMBuildAdd(b, c0, nv, "");
    emit_run(k, e, dst, row, c0, tail, (unsigned)e->vw, row_vals);
  }
  emit_run(k, e, dst, row, tail, end, 1, row_vals);
}
