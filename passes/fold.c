/* fold.c — constant folding and algebraic identities with a constant operand.
 *
 * Folding: a pure op whose operands are all constants with data is evaluated by the reference
 * evaluator (fc_op_eval, the semantics generated kernels are tested against); each used result
 * becomes a CONSTANT op with the op's loc, and the op is erased, together with operand constants that
 * lost their last use. Graph inputs are values without a defining op, so they are never folded; an
 * input the importer bound with --bind arrives as a CONSTANT and folds like one. An evaluator that
 * answers FC_ERR_UNSUPPORTED leaves the op alone; any other evaluator error (an out-of-range constant
 * index, say) is the model's error and is reported. Ops whose results are all unused are skipped:
 * dce removes them, and a dead op must not fail the compile.
 *
 * Bounds, so that folding never bloats the module or stalls the compiler:
 *   - size: a fold is done only when its results total at most 64 MiB, and at most 16x the bytes of
 *     its constant operands or at most 64 KiB (a broadcast of a scalar to a 1x1000 bias folds; a
 *     broadcast of a scalar to a 256 MiB activation-sized tensor does not);
 *   - work: an estimate of the evaluator's element operations (matmul M*N*K, conv output * C/g * K,
 *     pools output * window, others linear in their operands and results) must stay under 2^30.
 * Neither bound applies to the ops that only move elements (transpose, reshape): their result has the
 * bytes of their operand and costs one copy, so folding them adds nothing a run would not allocate
 * anyway, and it is what puts a weight in the layout its kernel packs at compile time: a Gemm's
 * transposed weight left unfolded would be transposed into the workspace on every run and packed
 * again per task, so a weight's layout, and its layer's speed, would hinge on its size.
 *
 * Identities (no evaluation; the op is replaced by one operand x, and only when the result type equals
 * x's type, so no broadcast is lost). Floats only where IEEE makes them exact for every x, NaN and
 * signed zeros included:
 *   add   x + 0 (integers), x + (-0.0) (floats; x + (+0.0) turns -0.0 into +0.0, so it stays)
 *   sub   x - 0 (integers), x - (+0.0) (floats)
 *   mul   x * 1; x * 0 -> 0 (integers only: NaN and inf times 0 is NaN)
 *   div   x / 1
 *   shl/shr  x << 0, x >> 0
 *   and   x & true -> x, x & false -> false;  or: x | false -> x, x | true -> true;  xor: x ^ false -> x
 *   select  a constant all-true / all-false condition picks an operand; select(c, x, x) -> x
 * "A constant 0" means every element is 0 (any shape that broadcasts without changing the result
 * type). A result that is itself a constant (x * 0, x & false) is materialised under the size bound.
 * Commutative ops match the constant on either side.
 */
#include "passes.h"
#include "rewrite.h"

#include <math.h>

#define FOLD_MAX_RESULT_BYTES ((int64_t)64 << 20)
#define FOLD_SMALL_RESULT_BYTES ((int64_t)64 << 10)
#define FOLD_MAX_GROWTH 16
#define FOLD_MAX_COST ((int64_t)1 << 30)

enum { MAX_RESULTS = 8 }; /* ops.def allows at most 3 */

typedef struct Fold {
  FcModule *m;
  FcDiag *diag;
  FcOpStack scratch;
} Fold;

static int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  return fc_checked_mul(a, b, &r) ? r : INT64_MAX;
}

static int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  return fc_checked_add(a, b, &r) ? r : INT64_MAX;
}

static int64_t numel_of(const FcType *t) {
  int64_t n;
  return fc_type_numel(t, &n) ? n : INT64_MAX;
}

static bool size_ok(int64_t result_bytes, int64_t operand_bytes) {
  if (result_bytes > FOLD_MAX_RESULT_BYTES) return false;
  return result_bytes <= FOLD_SMALL_RESULT_BYTES || result_bytes <= sat_mul(operand_bytes, FOLD_MAX_GROWTH);
}

/* Element operations the evaluator will do, overestimated where exactness would need the op's whole
 * semantics; INT64_MAX when it overflows. */
static int64_t fold_cost(const FcOp *op) {
  int64_t linear = 0;
  for (int i = 0; i < op->n_operands; i++) linear = sat_add(linear, numel_of(&op->operands[i].value->type));
  for (int i = 0; i < op->n_results; i++) linear = sat_add(linear, numel_of(&op->results[i].type));
  const FcType *x = &op->operands[0].value->type;
  int64_t out = numel_of(&op->results[0].type);
  /* Ops with too few operands are malformed (the verifier says so); only the linear estimate applies. */
  if ((op->kind == FC_OP_CONV || op->kind == FC_OP_CONV_BLOCKED || op->kind == FC_OP_CONV_TRANSPOSE) &&
      op->n_operands < 2)
    return linear;
  switch (op->kind) {
  case FC_OP_MATMUL:
    return sat_add(linear, sat_mul(out, x->rank ? x->dims[x->rank - 1] : 1));
  case FC_OP_CONV:
  case FC_OP_CONV_BLOCKED:
  case FC_OP_CONV_TRANSPOSE: {
    /* conv: each output reads C/g * K.. weights; conv_transpose: each input writes M/g * K.. outputs.
     * Both are the weight count divided by its first dim. */
    const FcType *w = &op->operands[1].value->type;
    int64_t per = w->rank && w->dims[0] > 0 ? numel_of(w) / w->dims[0] : numel_of(w);
    return sat_add(linear, sat_mul(op->kind == FC_OP_CONV_TRANSPOSE ? numel_of(x) : out, per));
  }
  case FC_OP_MAX_POOL:
  case FC_OP_AVG_POOL: {
    const int64_t *k;
    int n = fc_op_attr_ints(op, FC_ATTR_KERNEL_SHAPE, &k);
    int64_t win = 1;
    for (int i = 0; i < n; i++) win = sat_mul(win, k[i] > 0 ? k[i] : 1);
    return sat_add(linear, sat_mul(out, win));
  }
  case FC_OP_DET: /* n^3 per n x n matrix = numel * n */
    return sat_add(linear, sat_mul(numel_of(x), x->rank ? x->dims[x->rank - 1] : 1));
  case FC_OP_EINSUM: { /* the product of operand sizes bounds any contraction */
    int64_t p = 1;
    for (int i = 0; i < op->n_operands; i++) p = sat_mul(p, numel_of(&op->operands[i].value->type));
    return sat_add(linear, p);
  }
  case FC_OP_ROI_ALIGN: {
    int64_t sr = fc_op_attr_int(op, FC_ATTR_SAMPLING_RATIO, 0);
    int64_t hw = x->rank == 4 ? sat_mul(x->dims[2], x->dims[3]) : numel_of(x);
    return sat_add(linear, sat_mul(out, sr > 0 ? sat_mul(sat_mul(sr, sr), 4) : sat_mul(hw, 4)));
  }
  case FC_OP_RESIZE:
  case FC_OP_GRID_SAMPLE: /* at most 4x4 taps per spatial pair (cubic), more in 3-D: 64 bounds it */
  case FC_OP_TOPK:        /* n log n sort */
    return sat_add(linear, sat_mul(out, 64));
  default: return linear;
  }
}

/* Replaces the used results of `op` with constants `t[i]`, then erases `op`. */
static FcStatus replace_with_constants(Fold *f, FcOp *op, FcTensor *const *t) {
  FcValue *with[MAX_RESULTS];
  for (int i = 0; i < op->n_results; i++) {
    /* An unused result needs no constant; "replacing" it by itself is a no-op and lets the op go. */
    if (!fc_value_has_uses(&op->results[i])) {
      with[i] = &op->results[i];
      continue;
    }
    with[i] = fc_rw_make_constant(op, t[i], op->loc, f->diag);
    if (!with[i]) return f->diag->status ? f->diag->status : FC_ERR_INTERNAL;
  }
  fc_rw_replace_op(op, with, &f->scratch);
  return FC_OK;
}

typedef enum { FOLD_SKIP, FOLD_DONE } FoldResult;

static FcStatus try_eval(Fold *f, FcOp *op, FoldResult *res) {
  *res = FOLD_SKIP;
  const FcOpInfo *info = fc_op_info(op->kind);
  if (!info->eval || op->n_results < 1 || op->n_results > MAX_RESULTS || op->n_operands < 1) return FC_OK;
  /* A dequantized constant (a quantised model's weight) keeps its 8-bit storage: fold_qdq gives it to an
   * integer kernel; lower_quant lowers what is left to core ops, which then fold. */
  if (op->kind == FC_OP_DEQUANTIZE) return FC_OK;
  int64_t in_bytes = 0, out_bytes = 0;
  for (int i = 0; i < op->n_operands; i++) {
    const FcTensor *t = fc_value_const(op->operands[i].value);
    if (!t) return FC_OK;
    in_bytes = sat_add(in_bytes, t->nbytes);
  }
  for (int i = 0; i < op->n_results; i++) {
    int64_t nb;
    if (!fc_type_nbytes(&op->results[i].type, &nb)) return FC_OK;
    out_bytes = sat_add(out_bytes, nb);
  }
  bool moves_only = op->kind == FC_OP_TRANSPOSE || op->kind == FC_OP_RESHAPE || op->kind == FC_OP_SCAST;
  if (!moves_only && (!size_ok(out_bytes, in_bytes) || fold_cost(op) > FOLD_MAX_COST)) return FC_OK;

  FcTensor *out[MAX_RESULTS] = {0};
  FcDiag ed;
  fc_diag_init(&ed);
  FcStatus st = fc_op_eval(op, &f->m->arena, out, &ed);
  if (st == FC_ERR_UNSUPPORTED) return FC_OK;
  if (st != FC_OK) return fc_rw_op_error(f->diag, op, st, ed.msg);
  for (int i = 0; i < op->n_results; i++)
    if (!out[i] || !out[i]->data || !fc_type_equal(&out[i]->type, &op->results[i].type))
      return fc_rw_op_error(f->diag, op, FC_ERR_INTERNAL, "the evaluator returned a result of the wrong type");
  *res = FOLD_DONE;
  return replace_with_constants(f, op, out);
}

/* ---- identities ---------------------------------------------------------------------------------- */

typedef enum { ALL_ZERO, ALL_POS_ZERO, ALL_NEG_ZERO, ALL_ONE, ALL_TRUE, ALL_FALSE } Splat;

/* True when every element of `t` is the value `want` (exactly, signed zeros distinguished for floats). */
static bool all_are(const FcTensor *t, Splat want) {
  int64_t n = numel_of(&t->type);
  if (n == INT64_MAX) return false;
  bool fl = fc_dtype_is_float(t->type.dtype);
  for (int64_t i = 0; i < n; i++) {
    bool ok;
    if (fl) {
      double v = fc_tensor_get_f64(t, i);
      switch (want) {
      case ALL_POS_ZERO: ok = v == 0.0 && !signbit(v); break;
      case ALL_NEG_ZERO: ok = v == 0.0 && signbit(v); break;
      case ALL_ONE: ok = v == 1.0; break;
      default: ok = false; break;
      }
    } else {
      int64_t v = fc_tensor_get_i64(t, i);
      switch (want) {
      case ALL_ZERO:
      case ALL_FALSE: ok = v == 0; break;
      case ALL_ONE:
      case ALL_TRUE: ok = v == 1; break;
      default: ok = false; break;
      }
    }
    if (!ok) return false;
  }
  return true;
}

/* Operand `i` is a constant with data whose every element is `want`. */
static bool operand_is(const FcOp *op, int i, Splat want) {
  const FcTensor *t = fc_value_const(op->operands[i].value);
  return t && all_are(t, want);
}

static bool same_type_as_result(const FcOp *op, const FcValue *v) { return fc_type_equal(&v->type, &op->results[0].type); }

/* Replaces op by operand `i` when the types allow it. */
static bool forward_operand(Fold *f, FcOp *op, int i) {
  FcValue *x = op->operands[i].value;
  if (!same_type_as_result(op, x)) return false;
  fc_rw_replace_op(op, &x, &f->scratch);
  return true;
}

/* Replaces op by a constant of its result type filled with `v` (0 or 1), under the size bound with
 * the constant operand `ci` as the operand bytes. */
static FcStatus materialise(Fold *f, FcOp *op, int ci, int64_t v, bool *done) {
  int64_t nb;
  const FcTensor *c = fc_value_const(op->operands[ci].value);
  if (!c || !fc_type_nbytes(&op->results[0].type, &nb) || !size_ok(nb, c->nbytes)) return FC_OK;
  FcTensor *t = fc_tensor_new(&f->m->arena, op->results[0].type);
  int64_t n = numel_of(&t->type);
  for (int64_t i = 0; v != 0 && i < n; i++) fc_tensor_set_i64(t, i, v);
  *done = true;
  return replace_with_constants(f, op, &t);
}

static FcStatus try_identity(Fold *f, FcOp *op) {
  if (op->n_results != 1 || op->n_operands < 2) return FC_OK;
  FcDtype dt = op->operands[0].value->type.dtype;
  bool is_int = fc_dtype_is_int(dt), is_float = fc_dtype_is_float(dt), is_bool = dt == FC_DT_BOOL;
  bool done = false;
  switch (op->kind) {
  case FC_OP_ADD:
    for (int c = 1; c >= 0 && !done; c--)
      if ((is_int && operand_is(op, c, ALL_ZERO)) || (is_float && operand_is(op, c, ALL_NEG_ZERO)))
        done = forward_operand(f, op, 1 - c);
    break;
  case FC_OP_SUB:
    if ((is_int && operand_is(op, 1, ALL_ZERO)) || (is_float && operand_is(op, 1, ALL_POS_ZERO)))
      forward_operand(f, op, 0);
    break;
  case FC_OP_MUL:
    for (int c = 1; c >= 0 && !done; c--) {
      if ((is_int || is_float) && operand_is(op, c, ALL_ONE)) done = forward_operand(f, op, 1 - c);
      else if (is_int && operand_is(op, c, ALL_ZERO)) {
        FcStatus st = materialise(f, op, c, 0, &done);
        if (st != FC_OK) return st;
      }
    }
    break;
  case FC_OP_DIV:
    if ((is_int || is_float) && operand_is(op, 1, ALL_ONE)) forward_operand(f, op, 0);
    break;
  case FC_OP_BITSHIFT_LEFT:
  case FC_OP_BITSHIFT_RIGHT:
    if (is_int && operand_is(op, 1, ALL_ZERO)) forward_operand(f, op, 0);
    break;
  case FC_OP_AND:
  case FC_OP_OR:
  case FC_OP_XOR:
    if (!is_bool) break;
    for (int c = 1; c >= 0 && !done; c--) {
      /* The neutral element forwards x; the absorbing one (and: false, or: true) is the result. */
      Splat neutral = op->kind == FC_OP_AND ? ALL_TRUE : ALL_FALSE;
      if (operand_is(op, c, neutral)) done = forward_operand(f, op, 1 - c);
      else if (op->kind != FC_OP_XOR && operand_is(op, c, op->kind == FC_OP_AND ? ALL_FALSE : ALL_TRUE)) {
        FcStatus st = materialise(f, op, c, op->kind == FC_OP_AND ? 0 : 1, &done);
        if (st != FC_OK) return st;
      }
    }
    break;
  case FC_OP_SELECT:
    if (op->operands[1].value == op->operands[2].value) done = forward_operand(f, op, 1);
    if (!done && operand_is(op, 0, ALL_TRUE)) done = forward_operand(f, op, 1);
    if (!done && operand_is(op, 0, ALL_FALSE)) forward_operand(f, op, 2);
    break;
  default: break;
  }
  return FC_OK;
}

FcStatus fc_pass_fold(FcModule *m, FcPassContext *pc) {
  FcDiag *diag = pc->diag;
  Fold f = {.m = m, .diag = diag};
  fc_op_stack_init(&f.scratch, &m->arena);
  fc_graph_for_each_op_safe(m->graph, op, next) {
    if (op->kind == FC_OP_CONSTANT || !fc_rw_removable(op)) continue;
    bool used = false;
    for (int i = 0; i < op->n_results && !used; i++) used = fc_value_has_uses(&op->results[i]);
    if (!used) continue;
    FoldResult r;
    FcStatus st = try_eval(&f, op, &r);
    if (st != FC_OK) return st;
    if (r == FOLD_SKIP && (st = try_identity(&f, op)) != FC_OK) return st;
  }
  return FC_OK;
}
