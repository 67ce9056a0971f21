/* ew_program.c — parsing, printing and reference evaluation of element-wise programs (ew_program.h).
 *
 * The parser is a single left-to-right scan over the text: steps split at ';', words at spaces; each
 * mnemonic is looked up in the op table and must name an element-wise op without attributes whose
 * operand count matches. It ends with fc_ew_program_check, the one validator, which the ops' inference
 * also runs on programs that passes build in memory. Evaluation reuses the element-wise evaluators:
 * each step runs the op's own eval hook on a stand-in op (kind and result type only, no attributes)
 * over tensors of the result type, so a fused op computes exactly what its unfused chain did.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_ew.h"
#include "ew_program.h"

static FcStatus bad(const FcOp *op, FcDiag *diag, const char *what, const char *text) {
  return fc_error_node(diag, FC_ERR_INPUT, op ? fc_op_name(op) : "?", op ? fc_op_info(op->kind)->name : "?",
                       "element-wise program \"%s\": %s", text, what);
}

static bool fusable_kind(FcOpKind k) {
  if ((unsigned)k >= FC_OP_COUNT) return false;
  const FcOpInfo *info = fc_op_info(k);
  return (info->flags & FC_OPF_ELEMENTWISE) && info->n_attrs == 0 && k != FC_OP_CAST;
}

/* Parses one reference word [s, e); ranges are fc_ew_program_check's. */
static bool parse_ref(const char *s, const char *e, int32_t *out) {
  if (e - s == 1 && *s == 'x') {
    *out = FC_EW_REF_X;
    return true;
  }
  if (e - s < 2 || (*s != 'o' && *s != 's')) return false;
  long v = 0;
  for (const char *p = s + 1; p < e; p++) {
    if (*p < '0' || *p > '9' || v > 100000) return false;
    v = v * 10 + (*p - '0');
  }
  *out = *s == 'o' ? (int32_t)v : FC_EW_STEP_REF((int32_t)v);
  return true;
}

const char *fc_ew_program_parse(const char *text, FcEwProgram *out) {
  memset(out, 0, sizeof *out);
  if (!text) return "missing";
  const char *p = text;
  for (;;) {
    while (*p == ' ') p++;
    const char *se = strchr(p, ';');
    if (!se) se = p + strlen(p);
    if (out->n_steps == FC_EW_MAX_STEPS) return "too many steps";
    FcEwStep *st = &out->steps[out->n_steps];
    /* mnemonic */
    const char *w = p;
    while (w < se && *w != ' ') w++;
    if (w == p) return "empty step";
    char full[64];
    if ((size_t)(w - p) > sizeof full - 8) return "unknown op";
    snprintf(full, sizeof full, "flow.%.*s", (int)(w - p), p);
    FcOpKind kind;
    if (!fc_op_kind_from_name(full, strlen(full), &kind) || !fusable_kind(kind))
      return "not an element-wise op without attributes";
    st->kind = kind;
    /* references */
    const char *q = w;
    while (q < se) {
      while (q < se && *q == ' ') q++;
      if (q == se) break;
      const char *re = q;
      while (re < se && *re != ' ') re++;
      if (st->n_args == FC_EW_MAX_ARGS) return "too many operands in a step";
      if (!parse_ref(q, re, &st->args[st->n_args])) return "bad reference";
      st->n_args++;
      q = re;
    }
    const FcOpInfo *info = fc_op_info(kind);
    if (st->n_args < info->in_min || st->n_args > info->in_max) return "wrong operand count";
    out->n_steps++;
    if (!*se) break;
    p = se + 1;
  }
  return fc_ew_program_check(out, INT_MAX, true);
}

const char *fc_ew_program_check(const FcEwProgram *p, int n_operands, bool allow_x) {
  if (p->n_steps < 1) return "no steps";
  if (p->n_steps > FC_EW_MAX_STEPS) return "too many steps";
  for (int i = 0; i < p->n_steps; i++) {
    const FcEwStep *st = &p->steps[i];
    if (!fusable_kind(st->kind)) return "not an element-wise op without attributes";
    const FcOpInfo *info = fc_op_info(st->kind);
    if (st->n_args < info->in_min || st->n_args > info->in_max || st->n_args > FC_EW_MAX_ARGS)
      return "wrong operand count";
    for (int a = 0; a < st->n_args; a++) {
      int32_t r = st->args[a];
      bool ok = r == FC_EW_REF_X ? allow_x : FC_EW_IS_STEP_REF(r) ? FC_EW_STEP_OF(r) < i : r < n_operands;
      if (!ok) return "bad reference";
    }
  }
  return NULL;
}

bool fc_ew_program_equal(const FcEwProgram *a, const FcEwProgram *b) {
  if (a->n_steps != b->n_steps) return false;
  for (int i = 0; i < a->n_steps; i++) {
    const FcEwStep *x = &a->steps[i], *y = &b->steps[i];
    if (x->kind != y->kind || x->n_args != y->n_args) return false;
    for (int k = 0; k < x->n_args; k++)
      if (x->args[k] != y->args[k]) return false;
  }
  return true;
}

bool fc_ew_is_silu_pair(const FcEwProgram *p, int i) {
  if (i < 0 || i + 1 >= p->n_steps) return false;
  const FcEwStep *sg = &p->steps[i], *mu = sg + 1;
  if (sg->kind != FC_OP_SIGMOID || mu->kind != FC_OP_MUL || mu->n_args != 2) return false;
  int32_t a = sg->args[0], s = FC_EW_STEP_REF(i);
  if (!((mu->args[0] == a && mu->args[1] == s) || (mu->args[0] == s && mu->args[1] == a))) return false;
  for (int j = i + 2; j < p->n_steps; j++)
    for (int r = 0; r < p->steps[j].n_args; r++)
      if (p->steps[j].args[r] == s) return false;
  return true;
}

void fc_ew_program_print(const FcEwProgram *p, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = 0;
  for (int i = 0; i < p->n_steps && n < cap; i++) {
    const FcEwStep *st = &p->steps[i];
    n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? "; " : "", fc_op_info(st->kind)->name);
    for (int a = 0; a < st->n_args && n < cap; a++) {
      int32_t r = st->args[a];
      if (r == FC_EW_REF_X) n += (size_t)snprintf(buf + n, cap - n, " x");
      else if (FC_EW_IS_STEP_REF(r)) n += (size_t)snprintf(buf + n, cap - n, " s%d", FC_EW_STEP_OF(r));
      else n += (size_t)snprintf(buf + n, cap - n, " o%d", r);
    }
  }
}

const char *fc_ew_program_format(const FcEwProgram *p, FcArena *arena) {
  char *buf = FC_NEW_ARRAY(arena, char, FC_EW_TEXT_MAX);
  fc_ew_program_print(p, buf, FC_EW_TEXT_MAX);
  return buf;
}

/* t broadcast to the result type rt (a copy; t itself when it already has rt's shape). Unary evaluators
 * iterate over their operand, so a smaller operand must be widened first. */
static const FcTensor *widen(const FcTensor *t, const FcType *rt, FcArena *arena) {
  bool same = t->type.rank == rt->rank;
  for (int d = 0; same && d < rt->rank; d++) same = t->type.dims[d] == rt->dims[d];
  if (same) return t;
  FcType wt = *rt;
  wt.dtype = t->type.dtype;
  FcTensor *w = fc_tensor_new(arena, wt);
  size_t es = fc_dtype_size(wt.dtype);
  int64_t n = fc_ee_numel(&wt);
  const FcType *ts[1] = {&t->type};
  FcEeBcast it;
  fc_ee_bcast_init(&it, arena, &wt, ts, 1);
  for (int64_t i = 0; i < n; i++, fc_ee_bcast_next(&it))
    memcpy((char *)w->data + (size_t)i * es, (const char *)t->data + (size_t)it.off[0] * es, es);
  return w;
}

FcStatus fc_ew_program_eval(const FcOp *op, const FcEwProgram *p, const FcType *rt, const FcTensor *x,
                            const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  if (p->n_steps < 1) return bad(op, diag, "no steps", "");
  const FcTensor **vals = FC_NEW_ARRAY(arena, const FcTensor *, (size_t)p->n_steps);
  for (int i = 0; i < p->n_steps; i++) {
    const FcEwStep *st = &p->steps[i];
    const FcTensor *args[FC_EW_MAX_ARGS];
    for (int a = 0; a < st->n_args; a++) {
      int32_t r = st->args[a];
      const FcTensor *t = r == FC_EW_REF_X ? x : FC_EW_IS_STEP_REF(r) ? vals[FC_EW_STEP_OF(r)] : in[r];
      if (!t) return bad(op, diag, "a referenced value is missing", fc_ew_program_format(p, arena));
      args[a] = st->n_args == 1 ? widen(t, rt, arena) : t;
    }
    /* A stand-in op: the element-wise hooks read only the kind, the result type and the operand
     * tensors' own types. */
    FcValue res = {.type = *rt};
    FcOp tmp = {.kind = st->kind, .n_operands = st->n_args, .n_results = 1, .results = &res, .loc = op ? op->loc : NULL};
    const FcOpInfo *info = fc_op_info(st->kind);
    if (!info->eval) return bad(op, diag, "a step cannot be evaluated", fc_ew_program_format(p, arena));
    FcTensor *y = NULL;
    FcStatus s = info->eval(&tmp, args, &y, arena, diag);
    if (s != FC_OK) return s;
    vals[i] = y;
  }
  *out = (FcTensor *)vals[p->n_steps - 1];
  return FC_OK;
}

FcStatus fc_ew_cast_to(const FcOp *op, const FcTensor *t, FcDtype to, const FcTensor **out, FcArena *arena,
                       FcDiag *diag) {
  if (t->type.dtype == to) {
    *out = t;
    return FC_OK;
  }
  FcValue res = {.type = t->type};
  res.type.dtype = to;
  FcOp tmp = {.kind = FC_OP_CAST, .n_operands = 1, .n_results = 1, .results = &res, .loc = op->loc};
  FcTensor *y = NULL;
  FcStatus st = fc_eval_cast(&tmp, &t, &y, arena, diag);
  *out = y;
  return st;
}
