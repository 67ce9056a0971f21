/* parse_quant.c — reads a quantised element type, `!quant.uniform<...>`, for the IR text parser.
 *
 * MLIR's quant types do not split into the parser's ordinary tokens (`i8<-127:127>:f32:1`), so, like
 * the rest of a tensor type, they are read character by character with small readers that take a
 * cursor, skip blanks first and report errors at the character where they are. The reader only checks
 * the grammar and the storage/expressed type names; whether the parameters fit a tensor (axis, scale
 * count, ranges) is fc_quant_problem's job, called by the caller that knows the shape.
 */
#include "parse_internal.h"

#include <stdlib.h>

/* Character-level readers for the inside of a type, where the ordinary tokens do not apply. Each takes
 * the cursor *pp, skips blanks first, and reports errors at the character where they are. */
static void skip_blanks(Parser *ps, const char **pp) {
  while (*pp < ps->end && (**pp == ' ' || **pp == '\t')) (*pp)++;
}

static bool char_err(Parser *ps, const char *p, const char *what) {
  return fc_ps_err_at(ps, ps->lx.line, col_of(&ps->lx, p), "%s", what);
}

static bool expect_char(Parser *ps, const char **pp, char c, const char *what) {
  skip_blanks(ps, pp);
  if (*pp >= ps->end || **pp != c) return char_err(ps, *pp, what);
  (*pp)++;
  return true;
}

/* An identifier-like word [A-Za-z0-9_]+; its length (0 if none). */
static size_t char_word(Parser *ps, const char **pp, const char **start) {
  skip_blanks(ps, pp);
  *start = *pp;
  while (*pp < ps->end && (is_alpha((unsigned char)**pp) || is_digit((unsigned char)**pp) || **pp == '_')) (*pp)++;
  return (size_t)(*pp - *start);
}

static bool char_int(Parser *ps, const char **pp, int64_t *out) {
  skip_blanks(ps, pp);
  const char *p = *pp;
  bool neg = p < ps->end && *p == '-';
  if (neg) p++;
  if (p >= ps->end || !is_digit((unsigned char)*p)) return char_err(ps, *pp, "expected an integer");
  uint64_t v = 0;
  while (p < ps->end && is_digit((unsigned char)*p)) {
    v = v * 10 + (uint64_t)(*p++ - '0');
    if (v > (uint64_t)INT64_MAX) return char_err(ps, *pp, "integer too large");
  }
  *out = neg ? -(int64_t)v : (int64_t)v;
  *pp = p;
  return true;
}

/* A float as MLIR's parseFloat reads it: [-]digits[.digits][e[+-]digits]. */
static bool char_float(Parser *ps, const char **pp, double *out) {
  skip_blanks(ps, pp);
  const char *p = *pp, *start = p;
  if (p < ps->end && *p == '-') p++;
  if (p >= ps->end || !is_digit((unsigned char)*p)) return char_err(ps, start, "expected a scale (a float literal)");
  while (p < ps->end && (is_digit((unsigned char)*p) || *p == '.')) p++;
  if (p < ps->end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < ps->end && (*p == '+' || *p == '-')) p++;
    while (p < ps->end && is_digit((unsigned char)*p)) p++;
  }
  if (p - start >= MAX_NUMBER_LEN) return char_err(ps, start, "number literal too long");
  char buf[MAX_NUMBER_LEN + 1];
  memcpy(buf, start, (size_t)(p - start));
  buf[p - start] = '\0';
  char *endp;
  *out = strtod(buf, &endp);
  if (*endp) return char_err(ps, start, "malformed float literal");
  *pp = p;
  return true;
}

/* `!quant.uniform<i8<-127:127>:f32:1, {0.1,0.2:-1}>` from its '!' at *pp (MLIR's quant grammar:
 * storage type, optional storage range, expressed type, optional axis, then one scale[:zero_point]
 * or, per axis, a braced list). The parameters go to the scratch arena; they are checked by the caller,
 * which knows the tensor's shape. */
bool fc_ps_quant(Parser *ps, const char **pp, FcQuant *q) {
  static const char head[] = "!quant.uniform";
  const char *p = *pp, *w;
  size_t hn = sizeof head - 1;
  if ((size_t)(ps->end - p) < hn || memcmp(p, head, hn) != 0 || (p + hn < ps->end && is_id_char((unsigned char)p[hn])))
    return char_err(ps, p, "unsupported dialect type (only !quant.uniform<...>)");
  p += hn;
  if (!expect_char(ps, &p, '<', "expected '<' after '!quant.uniform'")) return false;
  size_t n = char_word(ps, &p, &w);
  /* MLIR spells unsigned storage `u8`; the builtin `ui8` is accepted too. */
  char name[16];
  if (n >= 2 && n < sizeof name - 1 && w[0] == 'u' && is_digit((unsigned char)w[1])) {
    snprintf(name, sizeof name, "ui%.*s", (int)(n - 1), w + 1);
  } else {
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), w);
  }
  int64_t lo, hi;
  if (!fc_dtype_from_name(name, strlen(name), &q->storage) || !fc_quant_storage_range(q->storage, &lo, &hi))
    return char_err(ps, w, "quantised storage type must be i8, u8, i16, u16 or i32");
  q->qmin = lo;
  q->qmax = hi;
  skip_blanks(ps, &p);
  if (p < ps->end && *p == '<') {
    p++;
    if (!char_int(ps, &p, &q->qmin) || !expect_char(ps, &p, ':', "expected ':' in the storage range") ||
        !char_int(ps, &p, &q->qmax) || !expect_char(ps, &p, '>', "expected '>' to end the storage range"))
      return false;
  }
  if (!expect_char(ps, &p, ':', "expected ':' and the expressed type")) return false;
  n = char_word(ps, &p, &w);
  if (!fc_dtype_from_name(w, n, &q->expressed) || !fc_dtype_is_float(q->expressed))
    return char_err(ps, w, "quantised expressed type must be f32, f16, bf16 or f64");
  q->axis = -1;
  skip_blanks(ps, &p);
  if (p < ps->end && *p == ':') {
    p++;
    int64_t axis;
    const char *at = p;
    if (!char_int(ps, &p, &axis)) return false;
    if (axis < 0 || axis >= FC_DEFAULT_MAX_RANK) return char_err(ps, at, "quantised axis out of range");
    q->axis = (int)axis;
  }
  if (!expect_char(ps, &p, ',', "expected ',' and the scale")) return false;
  if (q->axis >= 0 && !expect_char(ps, &p, '{', "expected '{' and the per-axis scales")) return false;
  double *scales = NULL;
  int64_t *zps = NULL;
  size_t cap_s = 0, cap_z = 0, count = 0;
  for (;;) {
    if (count == INT_MAX) return char_err(ps, p, "too many scales");
    scales = fc_ps_grow(&ps->scratch, scales, &cap_s, count + 1, sizeof *scales);
    zps = fc_ps_grow(&ps->scratch, zps, &cap_z, count + 1, sizeof *zps);
    zps[count] = 0;
    if (!char_float(ps, &p, &scales[count])) return false;
    skip_blanks(ps, &p);
    if (p < ps->end && *p == ':') {
      p++;
      if (!char_int(ps, &p, &zps[count])) return false;
    }
    count++;
    skip_blanks(ps, &p);
    if (q->axis < 0 || p >= ps->end || *p != ',') break;
    p++;
  }
  if (q->axis >= 0 && !expect_char(ps, &p, '}', "expected ',' or '}' in the per-axis scales")) return false;
  if (!expect_char(ps, &p, '>', "expected '>' to end the quantised type")) return false;
  q->n = (int)count;
  q->scales = scales;
  q->zero_points = zps;
  *pp = p;
  return true;
}

bool fc_ps_quant_value(Parser *ps, FcType *out) {
  const Token *t = &ps->lx.tok;
  const char *p = t->p;
  FcQuant q;
  char why[512];
  int line = t->line, col = t->col;
  if (!fc_ps_quant(ps, &p, &q)) return false;
  if (fc_quant_problem(&q, NULL, why, sizeof why)) return fc_ps_err_at(ps, line, col, "invalid quantised type: %s", why);
  ps->lx.cur = p;
  fc_ps_next(ps);
  *out = (FcType){.dtype = q.storage, .rank = -1, .quant = fc_quant_copy(&ps->scratch, &q)};
  return true;
}
