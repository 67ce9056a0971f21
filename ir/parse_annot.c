/* parse_annot.c — reads annotation values (discardable attributes like `flow.sbp = ...`) in IR text.
 *
 * A generic MLIR attribute reader: strings, typed numbers (an untyped integer is i64 and an untyped
 * float f64, as in MLIR), bool, unit, [...], {...} (sorted by name, as MLIR's DictionaryAttr keeps
 * them), array<T: ...>, dense / dense_resource, and types, tensor or quantised. Nesting is bounded by
 * MAX_ANNOT_DEPTH, so the recursion over [...] and {...} cannot exhaust the stack. Values are read
 * before their op exists, kept as AnnotText, and checked against annot.c's table when they are
 * attached (fc_ps_attach_annots), with errors pointing at the annotation's name.
 */
#include "parse_internal.h"

#include <stdlib.h>

enum { MAX_ANNOT_DEPTH = 32 }; /* nesting of [...] in an annotation value */

/* `1`, `-2 : i32`, `0.5`, `5.0e-01 : f32`: an untyped integer is i64 and an untyped float f64, as in MLIR. */
static bool parse_annot_number(Parser *ps, FcAnnotValue *v) {
  NumText n = fc_ps_number(ps);
  FcDtype dt = n.t.kind == TK_FLOAT ? FC_DT_F64 : FC_DT_I64;
  if (tok_is(ps, TK_COLON)) {
    fc_ps_next(ps);
    const Token *t = &ps->lx.tok;
    if (t->kind != TK_ID || !fc_dtype_from_name(t->p, t->n, &dt) || dt == FC_DT_BOOL || dt == FC_DT_F16 ||
        dt == FC_DT_BF16)
      return fc_ps_err(ps, "number annotations must be typed i8..i64, ui8..ui64, f32 or f64");
    fc_ps_next(ps);
  } else if (n.t.kind == TK_INT && is_hex_token(&n.t)) {
    dt = FC_DT_I64;
  }
  v->dtype = dt;
  if (fc_dtype_is_float(dt)) {
    v->kind = FC_AV_FLOAT;
    if (dt == FC_DT_F64) return fc_ps_float_value(ps, &n, dt, &v->f);
    float f;
    if (!fc_ps_float_value(ps, &n, dt, &f)) return false;
    v->f = f;
    return true;
  }
  int bits = 8 * (int)fc_dtype_size(dt);
  uint64_t hi = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1, u;
  int64_t lo = 0;
  if (fc_dtype_class(dt) == FC_DTC_SINT) {
    hi >>= 1;
    lo = -(int64_t)hi - 1;
  }
  v->kind = FC_AV_INT;
  if (!fc_ps_int_value(ps, &n, lo, hi, fc_dtype_name(dt), &u)) return false;
  v->i = (int64_t)u;
  return true;
}

/* One element of a dense array of element type *ctx (an FcDtype): true/false or a number for i1. */
static bool annot_array_elem(Parser *ps, void *vals, size_t i, const void *ctx) {
  FcDtype dt = *(const FcDtype *)ctx;
  if (dt == FC_DT_BOOL && (tok_is_id(ps, "true") || tok_is_id(ps, "false"))) {
    ((int64_t *)vals)[i] = tok_is_id(ps, "true");
    fc_ps_next(ps);
    return true;
  }
  Token at = ps->lx.tok;
  FcAnnotValue e;
  if (!parse_annot_number(ps, &e)) return false;
  if (fc_dtype_is_float(dt)) {
    if (e.kind != FC_AV_FLOAT) return fc_ps_err_at(ps, at.line, at.col, "expected a float element");
    ((double *)vals)[i] = dt == FC_DT_F32 ? (double)(float)e.f : e.f;
    return true;
  }
  int64_t lo, hi;
  if (dt == FC_DT_BOOL) lo = 0, hi = 1;
  else hi = (int64_t)(((uint64_t)1 << (8 * fc_dtype_size(dt) - 1)) - 1), lo = -hi - 1;
  if (e.kind != FC_AV_INT || e.i < lo || e.i > hi)
    return fc_ps_err_at(ps, at.line, at.col, "expected an integer element of %s", fc_dtype_name(dt));
  ((int64_t *)vals)[i] = e.i;
  return true;
}

/* `array<i64: 1, 2>` and the other dense arrays MLIR has (i1, i8, i16, i32, i64, f32, f64). */
static bool parse_annot_dense(Parser *ps, FcAnnotValue *v) {
  fc_ps_next(ps);
  if (!fc_ps_expect(ps, TK_LT, "'<' after 'array'")) return false;
  const Token *t = &ps->lx.tok;
  FcDtype dt;
  if (t->kind != TK_ID || !fc_dtype_from_name(t->p, t->n, &dt) ||
      !(dt == FC_DT_BOOL || dt == FC_DT_I8 || dt == FC_DT_I16 || dt == FC_DT_I32 || dt == FC_DT_I64 ||
        dt == FC_DT_F32 || dt == FC_DT_F64))
    return fc_ps_err(ps, "dense arrays must be array<i1|i8|i16|i32|i64|f32|f64: ...>");
  fc_ps_next(ps);
  void *vals;
  int n;
  if (!fc_ps_array_tail(ps, annot_array_elem, &dt, &vals, &n)) return false;
  v->kind = FC_AV_DENSE;
  v->dtype = dt;
  if (fc_dtype_is_float(dt)) {
    v->floats.v = vals;
    v->floats.n = n;
  } else {
    v->ints.v = vals;
    v->ints.n = n;
  }
  return true;
}

static bool parse_annot_value(Parser *ps, FcAnnotValue *v, int depth);

static int annot_cmp(const void *a, const void *b) {
  return strcmp(((const FcAnnot *)a)->name, ((const FcAnnot *)b)->name);
}

/* `{a = 1, "b c" = [2], d}` (an entry without a value is unit); entries are sorted by name, as MLIR's
 * DictionaryAttr keeps them, so the text mlir-opt prints back reads to the same value. */
static bool parse_annot_dict(Parser *ps, FcAnnotValue *v, int depth) {
  fc_ps_next(ps);
  FcAnnot *d = NULL;
  size_t n = 0, cap = 0;
  while (!tok_is(ps, TK_RBRACE)) {
    Token nt = ps->lx.tok;
    const char *name;
    if (nt.kind == TK_ID) name = fc_arena_strndup(&ps->scratch, nt.p, nt.n);
    else if (nt.kind == TK_STRING) name = fc_ps_decode_string(ps, &nt, &ps->scratch);
    else return fc_ps_err(ps, "expected a name in the dictionary");
    if (!name) return false;
    if (!*name) return fc_ps_err(ps, "empty name in the dictionary");
    for (size_t i = 0; i < n; i++)
      if (strcmp(d[i].name, name) == 0) return fc_ps_err(ps, "duplicate name '%.40s' in the dictionary", name);
    if (n == INT_MAX) return fc_ps_err(ps, "dictionary too long");
    d = fc_ps_grow(&ps->scratch, d, &cap, n + 1, sizeof *d);
    d[n].name = name;
    fc_ps_next(ps);
    if (tok_is(ps, TK_EQUAL)) {
      fc_ps_next(ps);
      if (!parse_annot_value(ps, &d[n].value, depth + 1)) return false;
    } else {
      d[n].value = (FcAnnotValue){.kind = FC_AV_UNIT};
    }
    n++;
    if (!tok_is(ps, TK_RBRACE) && !fc_ps_expect(ps, TK_COMMA, "',' or '}' in the dictionary")) return false;
  }
  fc_ps_next(ps);
  if (n > 1) qsort(d, n, sizeof *d, annot_cmp);
  v->kind = FC_AV_DICT;
  v->dict.v = d;
  v->dict.n = (int)n;
  return true;
}

static bool parse_annot_value(Parser *ps, FcAnnotValue *v, int depth) {
  const Token *t = &ps->lx.tok;
  memset(v, 0, sizeof *v);
  FcDtype dt;
  if ((t->kind == TK_LBRACKET || t->kind == TK_LBRACE) && depth >= MAX_ANNOT_DEPTH)
    return fc_ps_err_limit(ps, t->line, t->col, "annotation nested deeper than %d", MAX_ANNOT_DEPTH);
  switch (t->kind) {
  case TK_STRING: v->kind = FC_AV_STR; return fc_ps_string_value(ps, &v->s);
  case TK_MINUS:
  case TK_INT:
  case TK_FLOAT: return parse_annot_number(ps, v);
  case TK_LBRACKET: {
    fc_ps_next(ps);
    FcAnnotValue *arr = NULL;
    size_t n = 0, cap = 0;
    while (!tok_is(ps, TK_RBRACKET)) {
      if (n == INT_MAX) return fc_ps_err(ps, "array attribute too long");
      arr = fc_ps_grow(&ps->scratch, arr, &cap, n + 1, sizeof *arr);
      if (!parse_annot_value(ps, &arr[n++], depth + 1)) return false;
      if (!tok_is(ps, TK_RBRACKET) && !fc_ps_expect(ps, TK_COMMA, "',' or ']' in the array")) return false;
    }
    fc_ps_next(ps);
    v->kind = FC_AV_ARRAY;
    v->array.v = arr;
    v->array.n = (int)n;
    return true;
  }
  case TK_LBRACE: return parse_annot_dict(ps, v, depth);
  case TK_BANG:
    v->kind = FC_AV_TYPE;
    return fc_ps_quant_value(ps, &v->type);
  case TK_ID:
    if (tok_is_id(ps, "true") || tok_is_id(ps, "false")) {
      v->kind = FC_AV_BOOL;
      v->dtype = FC_DT_BOOL;
      v->b = tok_is_id(ps, "true");
      fc_ps_next(ps);
      return true;
    }
    if (tok_is_id(ps, "unit")) {
      v->kind = FC_AV_UNIT;
      fc_ps_next(ps);
      return true;
    }
    if (tok_is_id(ps, "array")) return parse_annot_dense(ps, v);
    if (tok_is_id(ps, "dense") || tok_is_id(ps, "dense_resource")) {
      v->kind = FC_AV_TENSOR;
      return fc_ps_tensor_value(ps, &v->tensor);
    }
    if (tok_is_id(ps, "tensor")) {
      v->kind = FC_AV_TYPE;
      return fc_ps_type(ps, &v->type);
    }
    if (fc_ps_dtype_token(ps, &dt)) {
      v->kind = FC_AV_TYPE;
      v->type = (FcType){.dtype = dt, .rank = -1};
      return true;
    }
    break;
  default: break;
  }
  return fc_ps_err_unsupported(ps, "annotation value");
}

/* `name = value` of an annotation whose name token `nt` (decoded: name, len) was already read. */
bool fc_ps_annot(Parser *ps, const Token *nt, const char *name, size_t len, AnnotList *out) {
  int shown = (int)(len > 40 ? 40 : len);
  if (!fc_annot_name_valid(name, len))
    return fc_ps_err_at(ps, nt->line, nt->col, "invalid annotation name '%.*s'", shown, name);
  for (size_t i = 0; i < out->n; i++)
    if (strlen(out->v[i].name) == len && memcmp(out->v[i].name, name, len) == 0)
      return fc_ps_err_at(ps, nt->line, nt->col, "duplicate attribute '%.*s'", shown, name);
  fc_ps_next(ps);
  if (!fc_ps_expect(ps, TK_EQUAL, "'=' after the attribute name")) return false;
  out->v = fc_ps_grow(&ps->scratch, out->v, &out->cap, out->n + 1, sizeof *out->v);
  AnnotText *a = &out->v[out->n++];
  a->name = fc_arena_strndup(&ps->scratch, name, len);
  a->at = *nt;
  return parse_annot_value(ps, &a->value, 0);
}

/* Checks each annotation against its subject's type and attaches it to the list `to`. */
bool fc_ps_attach_annots(Parser *ps, const AnnotList *l, FcAnnots *to, const FcType *subject) {
  for (size_t i = 0; i < l->n; i++) {
    char why[1024];
    if (!fc_annot_check(l->v[i].name, &l->v[i].value, subject, why, sizeof why))
      return fc_ps_err_at(ps, l->v[i].at.line, l->v[i].at.col, "%s", why);
    fc_annots_set(ps->arena, to, l->v[i].name, &l->v[i].value);
  }
  return true;
}
