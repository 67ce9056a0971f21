/* parse.c — reads the MLIR generic-operation text that print.c writes back into a module.
 *
 * A hand-written lexer and recursive-descent parser; no MLIR library is involved. The lexer keeps one
 * token of lookahead and its whole state fits in a struct, so the parser can save and rewind it: a
 * dense<...> literal comes before its type in MLIR syntax, so it is first skimmed to find its end,
 * the type after it is parsed, and then the literal is read again knowing the shape and element type.
 * Tensor types are read character by character, because `1x2xf32` and `0xf32` do not split into
 * ordinary tokens.
 *
 * Everything the text claims is checked as it is read: each op against the op table (name, operand
 * and result counts, attribute names, kinds and presence), each use against its definition (defined
 * earlier, same type), each constant's data against its type (element count, literal ranges), and
 * each op's result types against the op's own inference hook (fc_op_infer). Ranks above
 * FC_DEFAULT_MAX_RANK, element counts that overflow and constants over FC_DEFAULT_MAX_TENSOR_BYTES are
 * refused before anything is allocated for them. The only recursion is over the nesting of a dense
 * literal's brackets, which the skim bounds by the tensor rank limit first.
 *
 * Region ops (flow.loop, flow.if) take MLIR's generic region list after their operands. Each region is
 * read into its own graph before the op exists (the op needs its result count from the signature after
 * the regions); its block arguments become the graph's inputs, its last op must be flow.yield. Names are
 * scoped as MLIR scopes them (a region's names end with it), but a region may only use values it
 * defines: regions are isolated from above (ir.h), so a use of an outer value is refused here with a
 * message saying to pass it as an operand. Nesting is limited to FC_MAX_REGION_DEPTH, which bounds the
 * recursion of this reader and of every walker after it.
 *
 * Quantised element types (`!quant.uniform<...>`) are read character by character like the rest of a
 * tensor type (parse_quant.c) and checked against it (fc_quant_problem). A constant of a quantised type
 * carries its data with the storage type and gets the quantisation from its result type
 * (quantise_constant).
 *
 * Namespaced names in an attribute dictionary (`flow.sbp`, `mydialect.x`: a '.' in the name) are
 * annotations, read by parse_annot.c and checked against annot.c's table once the op exists, so errors
 * point at the annotation's name. Graph inputs take them as argument attributes; func.return takes them
 * in both forms. The lexer, the parser state and the readers the other files use are declared in
 * parse_internal.h.
 *
 * Errors are one line, "<source>:<line>:<col>: <what>", status FC_ERR_INPUT (FC_ERR_LIMIT for the
 * limits above). Temporaries live in a scratch arena freed when parsing ends; the module is only
 * handed out when the whole text was read without error.
 */
#include "ew_program.h"
#include "parse_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ---------------------------------------------------------------------------------------- */

bool fc_ps_fail(Parser *ps, FcStatus st, int line, int col, const char *fmt, ...) {
  if (!ps->failed) {
    ps->failed = true;
    char what[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fc_error(ps->diag, st, "%s:%d:%d: %s", ps->source, line, col, what);
  }
  return false;
}

/* The current token for messages: its text, shortened, or a description. */
const char *fc_ps_tok_desc(const Token *t, char *buf, size_t cap) {
  switch (t->kind) {
  case TK_EOF: return "end of input";
  case TK_ERROR: return "an invalid token";
  default: break;
  }
  size_t n = t->n < 40 ? t->n : 40;
  snprintf(buf, cap, "'%.*s%s'", (int)n, t->p, t->n > n ? "..." : "");
  return buf;
}

bool fc_ps_err_unsupported(Parser *ps, const char *what) {
  char buf[64];
  return fc_ps_err(ps, "unsupported %s %s", what, fc_ps_tok_desc(&ps->lx.tok, buf, sizeof buf));
}

/* ---- scratch memory and the map -------------------------------------------------------------------- */

static uint64_t hash_key(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

/* The slot for `key`: an entry with that key, or the empty one where it would go. */
static MapEntry *map_slot(Map *m, const char *key, size_t len) {
  size_t mask = m->cap - 1, i = (size_t)hash_key(key, len) & mask;
  while (m->e[i].key && !(m->e[i].len == len && memcmp(m->e[i].key, key, len) == 0)) i = (i + 1) & mask;
  return &m->e[i];
}

static void *map_get(Map *m, const char *key, size_t len) {
  if (!m->cap) return NULL;
  return map_slot(m, key, len)->val;
}

static void map_put(FcArena *scratch, Map *m, const char *key, size_t len, void *val) {
  if (2 * (m->n + 1) > m->cap) {
    Map bigger = {.cap = m->cap ? 2 * m->cap : 64};
    bigger.e = FC_NEW_ARRAY(scratch, MapEntry, bigger.cap);
    for (size_t i = 0; i < m->cap; i++)
      if (m->e[i].key) *map_slot(&bigger, m->e[i].key, m->e[i].len) = m->e[i];
    bigger.n = m->n;
    *m = bigger;
  }
  MapEntry *e = map_slot(m, key, len);
  if (!e->key) m->n++;
  *e = (MapEntry){key, len, val};
}

/* A growable array in the scratch arena (old storage is left behind; growth is geometric). */
void *fc_ps_grow(FcArena *scratch, void *arr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return arr;
  size_t ncap = *cap ? *cap : 8;
  while (ncap < need) ncap = fc_size_mul_or_die(ncap, 2);
  void *n = fc_arena_alloc(scratch, fc_size_mul_or_die(ncap, elem), 16);
  if (*cap) memcpy(n, arr, *cap * elem);
  *cap = ncap;
  return n;
}

/* ---- lexer ------------------------------------------------------------------------------------------ */

static bool is_hex(int c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static int hex_val(int c) { return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10; }
static bool is_suffix_char(int c) { return is_id_char(c) || c == '-'; }

/* Hex digit values plus one (0: not a hex digit): weight blobs are decoded through this table. */
static const unsigned char hex_table[256] = {
    ['0'] = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ['A'] = 11, 12, 13, 14, 15, 16, ['a'] = 11, 12, 13, 14, 15, 16,
};

/* Decodes 2*n hex digits into n bytes; false on a non-hex character. */
static bool decode_hex(const char *h, size_t n, unsigned char *out) {
  for (size_t i = 0; i < n; i++) {
    unsigned char a = (unsigned char)h[2 * i], b = (unsigned char)h[2 * i + 1];
    if (!hex_table[a] || !hex_table[b]) return false;
    out[i] = (unsigned char)((hex_table[a] - 1) << 4 | (hex_table[b] - 1));
  }
  return true;
}

static void newline(Lexer *lx, const char *after) {
  if (lx->line < INT_MAX) lx->line++;
  lx->line_start = after;
}

static void lex_fail(Parser *ps, Token *t, const char *at, const char *msg) {
  fc_ps_err_at(ps, t->line, col_of(&ps->lx, at), "%s", msg);
  t->kind = TK_ERROR;
  ps->lx.cur = ps->end; /* nothing after a lexical error is read */
}

/* Bytes that end the plain run of a string literal. */
static const bool str_stop[256] = {['"'] = true, ['\\'] = true, ['\n'] = true, ['\r'] = true};

void fc_ps_next(Parser *ps) {
  Lexer *lx = &ps->lx;
  Token *t = &lx->tok;
  const char *p = lx->cur, *end = ps->end;
  if (t->kind == TK_ERROR && ps->failed) return;
  for (;;) {
    if (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
    else if (p < end && *p == '\n') newline(lx, ++p);
    else if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
      while (p < end && *p != '\n') p++;
    } else break;
  }
  t->p = p;
  t->line = lx->line;
  t->col = col_of(lx, p);
  if (p >= end) {
    t->kind = TK_EOF;
    t->n = 0;
    lx->cur = p;
    return;
  }
  const char *s = p;
  int c = (unsigned char)*p;
  switch (c) {
  case '(': t->kind = TK_LPAREN; p++; break;
  case ')': t->kind = TK_RPAREN; p++; break;
  case '[': t->kind = TK_LBRACKET; p++; break;
  case ']': t->kind = TK_RBRACKET; p++; break;
  case '<': t->kind = TK_LT; p++; break;
  case '>': t->kind = TK_GT; p++; break;
  case ',': t->kind = TK_COMMA; p++; break;
  case '=': t->kind = TK_EQUAL; p++; break;
  case ':': t->kind = TK_COLON; p++; break;
  case '}': t->kind = TK_RBRACE; p++; break;
  case '!': t->kind = TK_BANG; p++; break;
  case '{':
    if (end - p >= 3 && p[1] == '-' && p[2] == '#') {
      t->kind = TK_META_BEGIN;
      p += 3;
    } else {
      t->kind = TK_LBRACE;
      p++;
    }
    break;
  case '-':
    if (end - p >= 2 && p[1] == '>') {
      t->kind = TK_ARROW;
      p += 2;
    } else {
      t->kind = TK_MINUS;
      p++;
    }
    break;
  case '#':
    if (end - p >= 3 && p[1] == '-' && p[2] == '}') {
      t->kind = TK_META_END;
      p += 3;
      break;
    }
    p++;
    if (p >= end || !is_suffix_char((unsigned char)*p)) return lex_fail(ps, t, s, "expected a name after '#'");
    while (p < end && is_suffix_char((unsigned char)*p)) p++;
    t->kind = TK_HASH;
    break;
  case '%':
  case '@':
  case '^':
    p++;
    if (c == '@' && p < end && *p == '"') {
      s = p; /* lex the quoted symbol as a string, then widen the token to include '@' */
      goto string;
    }
    if (p < end && is_digit((unsigned char)*p)) {
      while (p < end && is_digit((unsigned char)*p)) p++;
    } else if (p < end && (is_alpha((unsigned char)*p) || *p == '_' || *p == '$' || *p == '.' || *p == '-')) {
      while (p < end && is_suffix_char((unsigned char)*p)) p++;
    } else {
      return lex_fail(ps, t, s,
                      c == '%'   ? "expected a value name after '%'"
                      : c == '^' ? "expected a block name after '^'"
                                 : "expected a symbol name after '@'");
    }
    t->kind = c == '%' ? TK_VALUE : c == '^' ? TK_BLOCK : TK_SYMBOL;
    break;
  case '"':
  string:
    p++;
    for (;;) {
      while (p < end && !str_stop[(unsigned char)*p]) p++; /* fast path for long weight blobs */
      if (p >= end || *p == '\n' || *p == '\r') return lex_fail(ps, t, s, "unterminated string");
      if (*p == '"') break;
      if (*p == '\\') {
        if (end - p >= 2 && (p[1] == '"' || p[1] == '\\' || p[1] == 'n' || p[1] == 't')) p += 2;
        else if (end - p >= 3 && is_hex((unsigned char)p[1]) && is_hex((unsigned char)p[2])) p += 3;
        else return lex_fail(ps, t, p, "invalid escape in string");
      } else {
        p++;
      }
    }
    p++;
    t->kind = c == '@' ? TK_SYMBOL : TK_STRING;
    break;
  default:
    if (is_digit(c)) {
      if (c == '0' && end - p >= 3 && (p[1] == 'x' || p[1] == 'X') && is_hex((unsigned char)p[2])) {
        p += 2;
        while (p < end && is_hex((unsigned char)*p)) p++;
        t->kind = TK_INT;
        break;
      }
      while (p < end && is_digit((unsigned char)*p)) p++;
      t->kind = TK_INT;
      if (p < end && *p == '.') {
        t->kind = TK_FLOAT;
        p++;
        while (p < end && is_digit((unsigned char)*p)) p++;
        if (p < end && (*p == 'e' || *p == 'E')) {
          const char *q = p + 1;
          if (q < end && (*q == '+' || *q == '-')) q++;
          if (q < end && is_digit((unsigned char)*q)) {
            p = q;
            while (p < end && is_digit((unsigned char)*p)) p++;
          }
        }
      }
      break;
    }
    if (is_alpha(c) || c == '_') {
      while (p < end && is_id_char((unsigned char)*p)) p++;
      t->kind = TK_ID;
      break;
    }
    {
      char what[32];
      if (c >= 0x20 && c < 0x7f) snprintf(what, sizeof what, "unexpected '%c'", c);
      else snprintf(what, sizeof what, "unexpected byte 0x%02X", (unsigned)c);
      return lex_fail(ps, t, s, what);
    }
  }
  t->n = (size_t)(p - t->p);
  lx->cur = p;
}

bool fc_ps_dtype_token(Parser *ps, FcDtype *dt) {
  const Token *t = &ps->lx.tok;
  if (t->kind != TK_ID || !fc_dtype_from_name(t->p, t->n, dt)) return false;
  fc_ps_next(ps);
  return true;
}

bool fc_ps_expect(Parser *ps, TokKind k, const char *what) {
  if (ps->lx.tok.kind != k) {
    char buf[64];
    return fc_ps_err(ps, "expected %s, got %s", what, fc_ps_tok_desc(&ps->lx.tok, buf, sizeof buf));
  }
  fc_ps_next(ps);
  return true;
}

static bool expect_id(Parser *ps, const char *s) {
  if (!tok_is_id(ps, s)) {
    char buf[64];
    return fc_ps_err(ps, "expected '%s', got %s", s, fc_ps_tok_desc(&ps->lx.tok, buf, sizeof buf));
  }
  fc_ps_next(ps);
  return true;
}

/* Decodes a string token (escapes already validated by the lexer) into `a`. NUL bytes cannot live in
 * the IR's C strings and are refused. */
char *fc_ps_decode_string(Parser *ps, const Token *t, FcArena *a) {
  const char *p = t->p, *end = t->p + t->n - 1;
  while (*p != '"') p++; /* skip a leading '@' */
  p++;
  char *out = fc_arena_alloc(a, (size_t)(end - p) + 1, 1), *o = out;
  while (p < end) {
    if (*p != '\\') {
      *o++ = *p++;
      continue;
    }
    char e = p[1];
    if (e == '"' || e == '\\') *o++ = e, p += 2;
    else if (e == 'n') *o++ = '\n', p += 2;
    else if (e == 't') *o++ = '\t', p += 2;
    else {
      int v = hex_val((unsigned char)p[1]) * 16 + hex_val((unsigned char)p[2]);
      if (v == 0) {
        fc_ps_err_at(ps, t->line, t->col, "strings may not contain NUL bytes (\\00)");
        return NULL;
      }
      *o++ = (char)v;
      p += 3;
    }
  }
  *o = '\0';
  return out;
}

/* ---- numbers ---------------------------------------------------------------------------------------- */

/* The magnitude of an integer token (decimal or hex). */
static bool int_magnitude(Parser *ps, const Token *t, uint64_t *out) {
  uint64_t v = 0;
  if (t->n > 2 && t->p[0] == '0' && (t->p[1] == 'x' || t->p[1] == 'X')) {
    for (size_t i = 2; i < t->n; i++) {
      if (v >> 60) return fc_ps_err_at(ps, t->line, t->col, "integer literal too large");
      v = v * 16 + (uint64_t)hex_val((unsigned char)t->p[i]);
    }
  } else {
    for (size_t i = 0; i < t->n; i++) {
      unsigned d = (unsigned)(t->p[i] - '0');
      if (v > (UINT64_MAX - d) / 10) return fc_ps_err_at(ps, t->line, t->col, "integer literal too large");
      v = v * 10 + d;
    }
  }
  *out = v;
  return true;
}

NumText fc_ps_number(Parser *ps) {
  NumText n = {.start = ps->lx.tok};
  if (tok_is(ps, TK_MINUS)) {
    n.neg = true;
    fc_ps_next(ps);
  }
  n.t = ps->lx.tok;
  if (n.t.kind == TK_INT || n.t.kind == TK_FLOAT) fc_ps_next(ps);
  return n;
}

/* An integer in [lo, hi] (hi unsigned, for ui64), as two's-complement bits. */
bool fc_ps_int_value(Parser *ps, const NumText *n, int64_t lo, uint64_t hi, const char *type_name, uint64_t *bits) {
  const Token *t = &n->t;
  if (t->kind != TK_INT) {
    char buf[64];
    return fc_ps_err_at(ps, t->line, t->col, "expected an integer literal, got %s", fc_ps_tok_desc(t, buf, sizeof buf));
  }
  uint64_t mag;
  if (!int_magnitude(ps, t, &mag)) return false;
  bool ok = n->neg ? mag == 0 || (lo < 0 && mag - 1 <= (uint64_t)(-(lo + 1))) : mag <= hi;
  if (!ok)
    return fc_ps_err_at(ps, n->start.line, n->start.col, "integer literal %s%.*s out of range for %s",
                        n->neg ? "-" : "", (int)(t->n > 40 ? 40 : t->n), t->p, type_name);
  *bits = n->neg ? (uint64_t)0 - mag : mag;
  return true;
}

static bool parse_int(Parser *ps, int64_t lo, uint64_t hi, const char *type_name, uint64_t *bits) {
  NumText n = fc_ps_number(ps);
  return fc_ps_int_value(ps, &n, lo, hi, type_name, bits);
}

/* A float literal or a hex bit pattern for a float of dtype `dt`, written to `dst` as the element's
 * bytes. Decimal literals must have a '.', as MLIR requires. */
bool fc_ps_float_value(Parser *ps, const NumText *n, FcDtype dt, void *dst) {
  const Token *t = &n->t;
  const Token start = n->start;
  bool neg = n->neg;
  size_t width = fc_dtype_size(dt);
  if (t->kind == TK_INT && is_hex_token(t)) {
    uint64_t bits;
    if (neg) return fc_ps_err_at(ps, start.line, start.col, "hexadecimal float literals cannot be negative");
    if (!int_magnitude(ps, t, &bits)) return false;
    if (width < 8 && bits >> (8 * width))
      return fc_ps_err_at(ps, t->line, t->col, "hexadecimal literal too wide for %s", fc_dtype_name(dt));
    if (width == 2) {
      uint16_t h = (uint16_t)bits;
      memcpy(dst, &h, 2);
    } else if (width == 4) {
      uint32_t w = (uint32_t)bits;
      memcpy(dst, &w, 4);
    } else {
      memcpy(dst, &bits, 8);
    }
    return true;
  }
  if (t->kind == TK_INT)
    return fc_ps_err_at(ps, t->line, t->col, "expected a floating-point literal (with '.'), got integer '%.*s'",
                        (int)(t->n > 40 ? 40 : t->n), t->p);
  if (t->kind != TK_FLOAT) {
    char buf[64];
    return fc_ps_err_at(ps, t->line, t->col, "expected a floating-point literal, got %s",
                        fc_ps_tok_desc(t, buf, sizeof buf));
  }
  if (t->n >= MAX_NUMBER_LEN) return fc_ps_err_at(ps, t->line, t->col, "number literal too long");
  char buf[MAX_NUMBER_LEN + 2];
  snprintf(buf, sizeof buf, "%s%.*s", neg ? "-" : "", (int)t->n, t->p);
  errno = 0;
  if (dt == FC_DT_F64) {
    double d = strtod(buf, NULL);
    if (errno == ERANGE && isinf(d))
      return fc_ps_err_at(ps, start.line, start.col, "float literal out of range for f64");
    memcpy(dst, &d, 8);
  } else {
    float f = strtof(buf, NULL);
    if (errno == ERANGE && isinf(f))
      return fc_ps_err_at(ps, start.line, start.col, "float literal out of range for %s", fc_dtype_name(dt));
    if (dt == FC_DT_F32) {
      memcpy(dst, &f, 4);
    } else {
      uint16_t h = dt == FC_DT_F16 ? fc_f32_to_f16(f) : fc_f32_to_bf16(f);
      float back = dt == FC_DT_F16 ? fc_f16_to_f32(h) : fc_bf16_to_f32(h);
      if (isinf(back))
        return fc_ps_err_at(ps, start.line, start.col, "float literal out of range for %s", fc_dtype_name(dt));
      memcpy(dst, &h, 2);
    }
  }
  return true;
}

static bool parse_float(Parser *ps, FcDtype dt, void *dst) {
  NumText n = fc_ps_number(ps);
  return fc_ps_float_value(ps, &n, dt, dst);
}

/* ---- types ------------------------------------------------------------------------------------------ */

/* `tensor<d0xd1x...xT>`, read character by character from the end of the `tensor` token. dims go to
 * the scratch arena; the element count and byte size must not overflow. */
bool fc_ps_type(Parser *ps, FcType *out) {
  Lexer *lx = &ps->lx;
  if (!tok_is_id(ps, "tensor")) {
    char buf[64];
    return fc_ps_err(ps, "expected a tensor type, got %s", fc_ps_tok_desc(&lx->tok, buf, sizeof buf));
  }
  int tline = lx->tok.line, tcol = lx->tok.col;
  const char *p = lx->cur, *end = ps->end;
#define SKIP_BLANKS() while (p < end && (*p == ' ' || *p == '\t')) p++
#define FAIL_AT(...) return fc_ps_err_at(ps, lx->line, col_of(lx, p), __VA_ARGS__)
  SKIP_BLANKS();
  if (p >= end || *p != '<') FAIL_AT("expected '<' after 'tensor'");
  p++;
  int64_t dims[FC_DEFAULT_MAX_RANK];
  int rank = 0;
  for (;;) {
    SKIP_BLANKS();
    if (p < end && (*p == '?' || *p == '*')) FAIL_AT("dynamic or unranked shapes are not supported");
    if (p >= end || !is_digit((unsigned char)*p)) break;
    int64_t d = 0;
    const char *ds = p;
    while (p < end && is_digit((unsigned char)*p)) {
      if (d > (INT64_MAX - (*p - '0')) / 10) return fc_ps_err_at(ps, lx->line, col_of(lx, ds), "dimension too large");
      d = d * 10 + (*p++ - '0');
    }
    if (rank == FC_DEFAULT_MAX_RANK)
      return fc_ps_err_limit(ps, lx->line, col_of(lx, ds), "tensor rank exceeds the limit of %d", FC_DEFAULT_MAX_RANK);
    dims[rank++] = d;
    SKIP_BLANKS();
    if (p >= end || *p != 'x') FAIL_AT("expected 'x' after a dimension");
    p++;
  }
  const char *es = p;
  FcDtype dt;
  FcQuant quant, *q = NULL;
  if (p < end && *p == '!') {
    if (!fc_ps_quant(ps, &p, &quant)) return false;
    q = &quant;
    dt = quant.storage;
  } else {
    while (p < end && (is_alpha((unsigned char)*p) || is_digit((unsigned char)*p) || *p == '_')) p++;
    if (p == es) FAIL_AT("expected an element type");
    if (!fc_dtype_from_name(es, (size_t)(p - es), &dt))
      return fc_ps_err_at(ps, lx->line, col_of(lx, es), "unsupported element type '%.*s'",
                          (int)(p - es > 20 ? 20 : p - es), es);
  }
  SKIP_BLANKS();
  if (p < end && *p == ',') FAIL_AT("tensor encodings are not supported");
  if (p >= end || *p != '>') FAIL_AT("expected '>' to end the tensor type");
  p++;
#undef SKIP_BLANKS
#undef FAIL_AT
  lx->cur = p;
  *out = fc_type_make(&ps->scratch, dt, rank, dims);
  out->quant = q ? fc_quant_copy(&ps->scratch, q) : NULL;
  int64_t nbytes;
  if (!fc_type_nbytes(out, &nbytes)) return fc_ps_err_limit(ps, tline, tcol, "tensor type has too many elements");
  char why[512];
  if (q && fc_quant_problem(q, out, why, sizeof why))
    return fc_ps_err_at(ps, tline, col_of(lx, es), "invalid quantised type: %s", why);
  fc_ps_next(ps);
  return true;
}

/* ---- locations -------------------------------------------------------------------------------------- */

/* Skips tokens up to and including the ')' that closes an already consumed '('. */
static bool skip_to_rparen(Parser *ps) {
  for (size_t depth = 1;;) {
    switch (ps->lx.tok.kind) {
    case TK_LPAREN: depth++; break;
    case TK_RPAREN:
      if (--depth == 0) {
        fc_ps_next(ps);
        return true;
      }
      break;
    case TK_EOF:
    case TK_ERROR: return fc_ps_err(ps, "unterminated location");
    default: break;
    }
    fc_ps_next(ps);
  }
}

/* An optional `loc(...)`. loc("name") (a name location, possibly with a child or file position) gives
 * the name; loc(unknown) and other forms give NULL. */
static bool parse_opt_loc(Parser *ps, const char **out) {
  if (out) *out = NULL;
  if (!tok_is_id(ps, "loc")) return true;
  fc_ps_next(ps);
  if (!fc_ps_expect(ps, TK_LPAREN, "'(' after 'loc'")) return false;
  if (tok_is(ps, TK_HASH)) return fc_ps_err(ps, "location aliases are not supported");
  if (tok_is(ps, TK_STRING)) {
    char *s = fc_ps_decode_string(ps, &ps->lx.tok, ps->arena);
    if (!s) return false;
    if (out) *out = s;
    fc_ps_next(ps);
  }
  return skip_to_rparen(ps);
}

/* ---- values ----------------------------------------------------------------------------------------- */

static bool define_values(Parser *ps, const Token *name, FcValue *first, int count) {
  const char *key = name->p + 1;
  size_t len = name->n - 1;
  ValueDef *prev = map_get(&ps->values, key, len);
  if (prev)
    return fc_ps_err_at(ps, name->line, name->col, "redefinition of %.*s (first defined at %d:%d)",
                        (int)(name->n > 40 ? 40 : name->n), name->p, prev->line, prev->col);
  ValueDef *d = FC_NEW(&ps->scratch, ValueDef);
  *d = (ValueDef){ps->g, first, count, name->line, name->col};
  map_put(&ps->scratch, &ps->values, key, len, d);
  ps->scope = fc_ps_grow(&ps->scratch, ps->scope, &ps->cap_scope, ps->n_scope + 1, sizeof *ps->scope);
  ps->scope[ps->n_scope++] = *name;
  return true;
}

/* Ends the scope of the names defined since `mark` (a region's). */
static void end_scope(Parser *ps, size_t mark) {
  for (size_t i = mark; i < ps->n_scope; i++)
    map_put(&ps->scratch, &ps->values, ps->scope[i].p + 1, ps->scope[i].n - 1, NULL);
  ps->n_scope = mark;
}

/* A use `%name` or `%name#i`. */
static bool parse_use(Parser *ps, FcValue **out, Token *at) {
  Token t = ps->lx.tok;
  if (t.kind != TK_VALUE) {
    char buf[64];
    return fc_ps_err(ps, "expected a value, got %s", fc_ps_tok_desc(&t, buf, sizeof buf));
  }
  *at = t;
  int shown = (int)(t.n > 40 ? 40 : t.n);
  ValueDef *d = map_get(&ps->values, t.p + 1, t.n - 1);
  if (!d) return fc_ps_err(ps, "use of undefined value %.*s", shown, t.p);
  if (d->g != ps->g)
    return fc_ps_err(ps, "%.*s is defined outside this region; regions are isolated from above, so pass it as an "
                     "operand of the region op", shown, t.p);
  fc_ps_next(ps);
  int64_t idx = 0;
  bool has_idx = false;
  if (tok_is(ps, TK_HASH) && ps->lx.tok.p == t.p + t.n) {
    const Token *h = &ps->lx.tok;
    has_idx = true;
    idx = 0;
    for (size_t i = 1; i < h->n; i++) {
      if (!is_digit((unsigned char)h->p[i])) return fc_ps_err(ps, "expected a result number after '#'");
      idx = idx * 10 + (h->p[i] - '0');
      if (idx > INT_MAX) return fc_ps_err(ps, "result number too large");
    }
    fc_ps_next(ps);
  }
  if (!has_idx && d->count > 1)
    return fc_ps_err_at(ps, t.line, t.col, "%.*s names %d results; use %.*s#0 .. %.*s#%d", shown, t.p, d->count, shown,
                        t.p, shown, t.p, d->count - 1);
  if (idx >= d->count) return fc_ps_err_at(ps, t.line, t.col, "%.*s has no result #%d", shown, t.p, (int)idx);
  *out = d->first + idx;
  return true;
}

/* ---- constants -------------------------------------------------------------------------------------- */

static bool tensor_alloc(Parser *ps, const FcType *ty, bool with_data, int line, int col, FcTensor **out) {
  int64_t nbytes;
  FC_ASSERT(fc_type_nbytes(ty, &nbytes)); /* parse_type checked it */
  if (nbytes > FC_DEFAULT_MAX_TENSOR_BYTES)
    return fc_ps_err_limit(ps, line, col, "constant of %lld bytes exceeds the limit of %lld bytes", (long long)nbytes,
                           (long long)FC_DEFAULT_MAX_TENSOR_BYTES);
  if (ty->quant)
    return fc_ps_err_at(ps, line, col, "constant data takes its storage type (write %s, not a quantised type)",
                        fc_dtype_name(ty->dtype));
  FcTensor *t = FC_NEW(ps->arena, FcTensor);
  t->type = fc_type_make(ps->arena, ty->dtype, ty->rank, ty->dims);
  t->nbytes = nbytes;
  t->data = with_data ? fc_arena_alloc(ps->arena, (size_t)nbytes, 64) : NULL;
  *out = t;
  return true;
}

static bool parse_element(Parser *ps, FcTensor *t, int64_t i) {
  FcDtype dt = t->type.dtype;
  unsigned char *dst = (unsigned char *)t->data + (size_t)i * fc_dtype_size(dt);
  if (dt == FC_DT_BOOL) {
    if (tok_is_id(ps, "true") || tok_is_id(ps, "false")) {
      *dst = tok_is_id(ps, "true");
      fc_ps_next(ps);
      return true;
    }
    uint64_t v;
    if (!parse_int(ps, 0, 1, "i1", &v)) return false;
    *dst = (unsigned char)v;
    return true;
  }
  if (fc_dtype_is_float(dt)) return parse_float(ps, dt, dst);
  int bits = 8 * (int)fc_dtype_size(dt);
  int64_t lo = 0;
  uint64_t hi = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
  if (fc_dtype_class(dt) == FC_DTC_SINT) {
    hi >>= 1;
    lo = -(int64_t)hi - 1;
  }
  uint64_t v;
  if (!parse_int(ps, lo, hi, fc_dtype_name(dt), &v)) return false;
  switch (bits) {
  case 8: *dst = (unsigned char)v; break;
  case 16: { uint16_t x = (uint16_t)v; memcpy(dst, &x, 2); break; }
  case 32: { uint32_t x = (uint32_t)v; memcpy(dst, &x, 4); break; }
  default: memcpy(dst, &v, 8); break;
  }
  return true;
}

/* `[...]` for dimension `dim` and below; the skim already bounded the nesting by the rank limit. */
static bool parse_nested(Parser *ps, FcTensor *t, int dim, int64_t *next) {
  Token open = ps->lx.tok;
  if (dim >= t->type.rank) return fc_ps_err(ps, "dense literal is nested deeper than the rank of its type");
  if (!fc_ps_expect(ps, TK_LBRACKET, "'['")) return false;
  int64_t want = t->type.dims[dim], count = 0;
  if (!tok_is(ps, TK_RBRACKET)) {
    for (;;) {
      if (count == want)
        return fc_ps_err(ps, "dense literal has more than %lld elements in dimension %d", (long long)want, dim);
      if (dim + 1 == t->type.rank) {
        if (tok_is(ps, TK_LBRACKET)) return fc_ps_err(ps, "dense literal is nested deeper than the rank of its type");
        if (!parse_element(ps, t, (*next)++)) return false;
      } else if (!parse_nested(ps, t, dim + 1, next)) {
        return false;
      }
      count++;
      if (!tok_is(ps, TK_COMMA)) break;
      fc_ps_next(ps);
    }
  }
  if (count != want)
    return fc_ps_err_at(ps, open.line, open.col, "dense literal has %lld elements in dimension %d, its type has %lld",
                        (long long)count, dim, (long long)want);
  return fc_ps_expect(ps, TK_RBRACKET, "']' or ','");
}

/* dense<"0x..."> : raw little-endian data (or one element, splat), as MLIR writes large literals. */
static bool parse_dense_hex(Parser *ps, FcTensor *t, int64_t numel) {
  const Token *s = &ps->lx.tok;
  const char *p = s->p + 1;
  size_t n = s->n - 2;
  if (t->type.dtype == FC_DT_BOOL) return fc_ps_err(ps, "hexadecimal dense literals are not supported for i1");
  if (n < 2 || p[0] != '0' || (p[1] != 'x' && p[1] != 'X') || (n - 2) % 2)
    return fc_ps_err(ps, "malformed hexadecimal dense literal");
  size_t bytes = (n - 2) / 2, es = fc_dtype_size(t->type.dtype);
  unsigned char *d = (unsigned char *)t->data;
  if ((int64_t)bytes != t->nbytes && !(bytes == es && numel > 0))
    return fc_ps_err(ps, "hexadecimal dense literal has %zu bytes, its type needs %lld", bytes, (long long)t->nbytes);
  if (!decode_hex(p + 2, bytes, d)) return fc_ps_err(ps, "malformed hexadecimal dense literal");
  if ((int64_t)bytes != t->nbytes) /* one element: a splat */
    for (int64_t i = 1; i < numel; i++) memcpy(d + (size_t)i * es, d, es);
  fc_ps_next(ps);
  return true;
}

/* `dense<...> : tensor<...>`, the current token being `dense`. */
static bool parse_dense(Parser *ps, FcTensor **out) {
  Token at = ps->lx.tok;
  fc_ps_next(ps);
  if (!fc_ps_expect(ps, TK_LT, "'<' after 'dense'")) return false;
  Lexer literal = ps->lx;
  /* Skim to the closing '>' to reach the type, counting the values; brackets may nest no deeper than
   * the rank limit. */
  int64_t values = 0;
  for (int depth = 0;;) {
    TokKind k = ps->lx.tok.kind;
    if (k == TK_INT || k == TK_FLOAT || tok_is_id(ps, "true") || tok_is_id(ps, "false")) values++;
    if (k == TK_LBRACKET && ++depth > FC_DEFAULT_MAX_RANK)
      return fc_ps_err_limit(ps, ps->lx.tok.line, ps->lx.tok.col,
                             "dense literal nested deeper than the rank limit of %d", FC_DEFAULT_MAX_RANK);
    if (k == TK_RBRACKET && --depth < 0) return fc_ps_err(ps, "unbalanced ']' in dense literal");
    if (k == TK_GT) {
      if (depth) return fc_ps_err(ps, "unbalanced '[' in dense literal");
      break;
    }
    if (k != TK_LBRACKET && k != TK_RBRACKET && k != TK_INT && k != TK_FLOAT && k != TK_MINUS && k != TK_COMMA &&
        k != TK_STRING && !tok_is_id(ps, "true") && !tok_is_id(ps, "false")) {
      char buf[64];
      return fc_ps_err(ps, "unexpected %s in dense literal", fc_ps_tok_desc(&ps->lx.tok, buf, sizeof buf));
    }
    fc_ps_next(ps);
  }
  fc_ps_next(ps);
  if (!fc_ps_expect(ps, TK_COLON, "':' and the type of the dense literal")) return false;
  FcType ty;
  if (!fc_ps_type(ps, &ty)) return false;
  Lexer after = ps->lx;
  int64_t numel, nbytes;
  FC_ASSERT(fc_type_numel(&ty, &numel) && fc_type_nbytes(&ty, &nbytes));
  /* Only a splat may be smaller than its tensor: check the other forms' sizes before allocating, so
   * a short text cannot claim gigabytes. */
  char tbuf[256];
  const Token *first = &literal.tok;
  size_t hex_bytes = first->n >= 4 ? (first->n - 4) / 2 : 0;
  if (first->kind == TK_LBRACKET && values != numel)
    return fc_ps_err_at(ps, first->line, first->col, "dense literal has %lld values, %s has %lld elements",
                        (long long)values, fc_type_str(&ty, tbuf, sizeof tbuf), (long long)numel);
  if (first->kind == TK_STRING && (int64_t)hex_bytes != nbytes && !(hex_bytes == fc_dtype_size(ty.dtype) && numel > 0))
    return fc_ps_err_at(ps, first->line, first->col, "hexadecimal dense literal has %zu bytes, its type needs %lld",
                        hex_bytes, (long long)nbytes);
  /* A splat is the one form whose size the text does not bound: cap what it may materialise. */
  enum { SPLAT_MAX_BYTES = 256 << 20 }; /* print.c inlines splats up to the same size */
  bool splat = first->kind != TK_LBRACKET && first->kind != TK_STRING && first->kind != TK_GT;
  if ((splat || (first->kind == TK_STRING && (int64_t)hex_bytes != nbytes)) && nbytes > SPLAT_MAX_BYTES &&
      nbytes <= FC_DEFAULT_MAX_TENSOR_BYTES)
    return fc_ps_err_limit(ps, first->line, first->col,
                           "splat dense literal for %s would be %lld bytes, over the limit of %d",
                           fc_type_str(&ty, tbuf, sizeof tbuf), (long long)nbytes, SPLAT_MAX_BYTES);
  FcTensor *t;
  if (!tensor_alloc(ps, &ty, true, at.line, at.col, &t)) return false;

  ps->lx = literal;
  if (tok_is(ps, TK_GT)) {
    if (numel != 0)
      return fc_ps_err(ps, "empty dense literal for %s with %lld elements", fc_type_str(&t->type, tbuf, sizeof tbuf),
                       (long long)numel);
  } else if (tok_is(ps, TK_STRING)) {
    if (!parse_dense_hex(ps, t, numel)) return false;
  } else if (tok_is(ps, TK_LBRACKET)) {
    if (t->type.rank == 0) return fc_ps_err(ps, "dense literal for a rank-0 tensor must be a single value");
    int64_t next = 0;
    if (!parse_nested(ps, t, 0, &next)) return false;
  } else {
    /* One value: a scalar, or a splat filling every element. */
    if (numel == 0)
      return fc_ps_err(ps, "splat dense literal for %s, which has no elements",
                       fc_type_str(&t->type, tbuf, sizeof tbuf));
    if (!parse_element(ps, t, 0)) return false;
    size_t es = fc_dtype_size(t->type.dtype);
    unsigned char *d = (unsigned char *)t->data;
    for (int64_t i = 1; i < numel; i++) memcpy(d + (size_t)i * es, d, es);
  }
  if (!tok_is(ps, TK_GT)) {
    char buf[64];
    return fc_ps_err(ps, "expected '>' to end the dense literal, got %s", fc_ps_tok_desc(&ps->lx.tok, buf, sizeof buf));
  }
  ps->lx = after;
  *out = t;
  return true;
}

/* `dense_resource<key> : tensor<...>`; the data comes from the resource section at the end, except for
 * `__elided__`, which stays without data. */
static bool parse_dense_resource(Parser *ps, FcTensor **out) {
  Token at = ps->lx.tok;
  fc_ps_next(ps);
  if (!fc_ps_expect(ps, TK_LT, "'<' after 'dense_resource'")) return false;
  Token key = ps->lx.tok;
  if (!fc_ps_expect(ps, TK_ID, "a resource key")) return false;
  if (!fc_ps_expect(ps, TK_GT, "'>'") || !fc_ps_expect(ps, TK_COLON, "':' and the type of the resource")) return false;
  FcType ty;
  if (!fc_ps_type(ps, &ty)) return false;
  if (!tensor_alloc(ps, &ty, false, at.line, at.col, out)) return false;
  if (key.n == 10 && memcmp(key.p, "__elided__", 10) == 0) return true;
  ResRef *r = FC_NEW(&ps->scratch, ResRef);
  *r = (ResRef){*out, key.line, key.col, map_get(&ps->resources, key.p, key.n)};
  if (!r->next) {
    ps->refs = fc_ps_grow(&ps->scratch, ps->refs, &ps->cap_refs, ps->n_refs + 1, sizeof *ps->refs);
    ps->refs[ps->n_refs++] = r; /* the first reference to this key stands for the list */
  }
  map_put(&ps->scratch, &ps->resources, key.p, key.n, r);
  return true;
}

/* ---- attributes ------------------------------------------------------------------------------------- */

bool fc_ps_array_tail(Parser *ps, FcPsElem *elem, const void *ctx, void **vals, int *n) {
  void *v = NULL;
  size_t count = 0, cap = 0;
  if (tok_is(ps, TK_COLON)) {
    fc_ps_next(ps);
    for (;;) {
      if (count == INT_MAX) return fc_ps_err(ps, "array attribute too long");
      v = fc_ps_grow(&ps->scratch, v, &cap, count + 1, 8);
      if (!elem(ps, v, count++, ctx)) return false;
      if (!tok_is(ps, TK_COMMA)) break;
      fc_ps_next(ps);
    }
  }
  if (!fc_ps_expect(ps, TK_GT, "',' or '>' in the array attribute")) return false;
  *vals = v;
  *n = (int)count;
  return true;
}

/* One element of array<i64: ...> or array<f32: ...> (ctx: the FcDtype). */
static bool attr_array_elem(Parser *ps, void *vals, size_t i, const void *ctx) {
  if (*(const FcDtype *)ctx == FC_DT_F32) return parse_float(ps, FC_DT_F32, (float *)vals + i);
  uint64_t v;
  if (!parse_int(ps, INT64_MIN, INT64_MAX, "i64", &v)) return false;
  ((int64_t *)vals)[i] = (int64_t)v;
  return true;
}

static bool parse_array_attr(Parser *ps, FcAttr *a) {
  fc_ps_next(ps);
  if (!fc_ps_expect(ps, TK_LT, "'<' after 'array'")) return false;
  bool ints = tok_is_id(ps, "i64");
  if (!ints && !tok_is_id(ps, "f32"))
    return fc_ps_err(ps, "array attributes must be array<i64: ...> or array<f32: ...>");
  fc_ps_next(ps);
  FcDtype dt = ints ? FC_DT_I64 : FC_DT_F32;
  void *vals;
  int n;
  if (!fc_ps_array_tail(ps, attr_array_elem, &dt, &vals, &n)) return false;
  if (ints) {
    a->kind = FC_AK_INTS;
    a->ints.v = vals;
    a->ints.n = n;
  } else {
    a->kind = FC_AK_FLOATS;
    a->floats.v = vals;
    a->floats.n = n;
  }
  return true;
}

/* A number attribute: `1 : i64` (the type may be left out) or `1.5 : f32` / `0x7FC00000 : f32`. */
static bool parse_number_attr(Parser *ps, FcAttr *a) {
  NumText n = fc_ps_number(ps);
  bool is_float = false;
  if (tok_is(ps, TK_COLON)) {
    fc_ps_next(ps);
    is_float = tok_is_id(ps, "f32");
    if (!is_float && !tok_is_id(ps, "i64")) return fc_ps_err(ps, "number attributes must be typed i64 or f32");
    fc_ps_next(ps);
  } else if (n.t.kind == TK_FLOAT) {
    return fc_ps_err(ps, "expected ': f32' after the float attribute");
  }
  if (is_float) {
    a->kind = FC_AK_FLOAT;
    return fc_ps_float_value(ps, &n, FC_DT_F32, &a->f);
  }
  uint64_t v;
  a->kind = FC_AK_INT;
  if (!fc_ps_int_value(ps, &n, INT64_MIN, INT64_MAX, "i64", &v)) return false;
  a->i = (int64_t)v;
  return true;
}

/* The value forms inherent attributes and annotations share: a string, and constant data (the current
 * token being `dense` or `dense_resource`). */
bool fc_ps_string_value(Parser *ps, const char **out) {
  if (!(*out = fc_ps_decode_string(ps, &ps->lx.tok, &ps->scratch))) return false;
  fc_ps_next(ps);
  return true;
}

bool fc_ps_tensor_value(Parser *ps, const FcTensor **out) {
  FcTensor *t;
  if (!(tok_is_id(ps, "dense") ? parse_dense(ps, &t) : parse_dense_resource(ps, &t))) return false;
  *out = t;
  return true;
}

static bool parse_attr_value(Parser *ps, FcAttr *a) {
  switch (ps->lx.tok.kind) {
  case TK_STRING: a->kind = FC_AK_STR; return fc_ps_string_value(ps, &a->s);
  case TK_MINUS:
  case TK_INT:
  case TK_FLOAT: return parse_number_attr(ps, a);
  case TK_ID:
    if (tok_is_id(ps, "array")) return parse_array_attr(ps, a);
    if (tok_is_id(ps, "dense") || tok_is_id(ps, "dense_resource")) {
      a->kind = FC_AK_TENSOR;
      return fc_ps_tensor_value(ps, &a->tensor);
    }
    if (fc_ps_dtype_token(ps, &a->type)) {
      a->kind = FC_AK_TYPE;
      return true;
    }
    break;
  case TK_BANG: {
    FcType t;
    if (!fc_ps_quant_value(ps, &t)) return false;
    a->kind = FC_AK_TYPE;
    a->type = t.dtype;
    a->quant = t.quant;
    return true;
  }
  default: break;
  }
  return fc_ps_err_unsupported(ps, "attribute value");
}

/* A program attribute arrives as its text (a string) and is parsed here, once; its errors point at the
 * string. The op-dependent checks (operand numbers) are left to the op's inference. */
static bool parse_program_attr(Parser *ps, const FcOpInfo *info, const Token *vt, FcAttr *a) {
  FcEwProgram *p = FC_NEW(&ps->scratch, FcEwProgram);
  const char *why = fc_ew_program_parse(a->s, p);
  if (why)
    return fc_ps_err_at(ps, vt->line, vt->col, "%s: %s: element-wise program \"%.200s\": %s", info->full_name,
                        fc_attr_name_str(a->name), a->s, why);
  a->kind = FC_AK_PROGRAM;
  a->prog = p;
  return true;
}

/* ---- annotations (discardable attributes) ----------------------------------------------------------- */

/* `{name = value, ...}` of an op, checked against its schema (names, kinds, duplicates) into `list`,
 * which has room for every attribute of the schema; namespaced names (with a '.') are annotations and
 * go to `annots`. */
static bool parse_op_attrs(Parser *ps, const FcOpInfo *info, FcAttr *list, int *n_list, AnnotList *annots) {
  if (!fc_ps_expect(ps, TK_LBRACE, "'{'")) return false;
  if (tok_is(ps, TK_RBRACE)) {
    fc_ps_next(ps);
    return true;
  }
  for (;;) {
    Token nt = ps->lx.tok;
    const char *name;
    size_t len;
    if (nt.kind == TK_ID) {
      name = nt.p;
      len = nt.n;
    } else if (nt.kind == TK_STRING) {
      if (!(name = fc_ps_decode_string(ps, &nt, &ps->scratch))) return false;
      len = strlen(name);
    } else {
      char buf[64];
      return fc_ps_err(ps, "expected an attribute name, got %s", fc_ps_tok_desc(&nt, buf, sizeof buf));
    }
    int shown = (int)(len > 40 ? 40 : len);
    if (memchr(name, '.', len)) {
      if (!fc_ps_annot(ps, &nt, name, len, annots)) return false;
      if (tok_is(ps, TK_RBRACE)) break;
      if (!fc_ps_expect(ps, TK_COMMA, "',' or '}' in the attribute dictionary")) return false;
      continue;
    }
    FcAttrName an;
    if (!fc_attr_name_from_str(name, len, &an)) return fc_ps_err(ps, "unknown attribute '%.*s'", shown, name);
    const FcAttrSpec *spec = NULL;
    for (int i = 0; i < info->n_attrs; i++)
      if (info->attrs[i].name == an) spec = &info->attrs[i];
    if (!spec) return fc_ps_err(ps, "%s has no attribute '%.*s'", info->full_name, shown, name);
    for (int i = 0; i < *n_list; i++)
      if (list[i].name == an) return fc_ps_err(ps, "duplicate attribute '%.*s'", shown, name);
    fc_ps_next(ps);
    if (!fc_ps_expect(ps, TK_EQUAL, "'=' after the attribute name")) return false;
    Token vt = ps->lx.tok;
    FcAttr a = {.name = an};
    if (!parse_attr_value(ps, &a)) return false;
    if (spec->kind == FC_AK_PROGRAM && a.kind == FC_AK_STR && !parse_program_attr(ps, info, &vt, &a)) return false;
    if (a.kind != spec->kind)
      return fc_ps_err_at(ps, vt.line, vt.col, "attribute '%.*s' of %s must be %s, got %s", shown, name,
                          info->full_name, fc_attr_kind_str(spec->kind), fc_attr_kind_str(a.kind));
    FC_ASSERT(*n_list < info->n_attrs);
    list[(*n_list)++] = a;
    if (tok_is(ps, TK_RBRACE)) break;
    if (!fc_ps_expect(ps, TK_COMMA, "',' or '}' in the attribute dictionary")) return false;
  }
  fc_ps_next(ps);
  return true;
}

/* `{flow.name = "...", ...}` on a function argument or result: its name, and for an argument
 * (annots not NULL) its annotations. */
static bool parse_arg_attrs(Parser *ps, const char **name, AnnotList *annots) {
  fc_ps_next(ps);
  if (tok_is(ps, TK_RBRACE)) {
    fc_ps_next(ps);
    return true;
  }
  for (;;) {
    Token nt = ps->lx.tok;
    if (tok_is_id(ps, "flow.name")) {
      if (*name) return fc_ps_err(ps, "duplicate attribute 'flow.name'");
      fc_ps_next(ps);
      if (!fc_ps_expect(ps, TK_EQUAL, "'='")) return false;
      if (!tok_is(ps, TK_STRING)) return fc_ps_err(ps, "flow.name must be a string");
      if (!(*name = fc_ps_decode_string(ps, &ps->lx.tok, &ps->scratch))) return false;
      fc_ps_next(ps);
    } else if (annots && nt.kind == TK_ID) {
      if (!fc_ps_annot(ps, &nt, nt.p, nt.n, annots)) return false;
    } else {
      char buf[64];
      return fc_ps_err(ps, "unsupported %s attribute %s (%s)", annots ? "argument" : "result",
                       fc_ps_tok_desc(&ps->lx.tok, buf, sizeof buf),
                       annots ? "flow.name or a namespaced annotation" : "only flow.name");
    }
    if (tok_is(ps, TK_RBRACE)) break;
    if (!fc_ps_expect(ps, TK_COMMA, "',' or '}'")) return false;
  }
  fc_ps_next(ps);
  return true;
}

/* ---- ops -------------------------------------------------------------------------------------------- */

typedef struct OpText {
  Token at;              /* the op name, where op-level errors point */
  Token *group_names;    /* result groups `%a, %b:2 =` */
  int *group_sizes;
  size_t n_groups, cap_groups, cap_sizes;
  FcValue **operands;
  Token *operand_at;
  size_t n_operands, cap_operands, cap_operand_at;
  FcType *types;         /* operand types, then result types */
  size_t n_types, cap_types;
} OpText;

static bool parse_type_list(Parser *ps, OpText *o, bool parens_optional) {
  bool parens = tok_is(ps, TK_LPAREN) || !parens_optional;
  if (parens && !fc_ps_expect(ps, TK_LPAREN, "'(' to start a type list")) return false;
  if (parens && tok_is(ps, TK_RPAREN)) {
    fc_ps_next(ps);
    return true;
  }
  for (;;) {
    o->types = fc_ps_grow(&ps->scratch, o->types, &o->cap_types, o->n_types + 1, sizeof *o->types);
    if (!fc_ps_type(ps, &o->types[o->n_types++])) return false;
    if (!parens || !tok_is(ps, TK_COMMA)) break;
    fc_ps_next(ps);
  }
  return !parens || fc_ps_expect(ps, TK_RPAREN, "',' or ')' in the type list");
}

static bool check_count(Parser *ps, const OpText *o, const FcOpInfo *info, bool results, int n) {
  int lo = results ? info->out_min : info->in_min, hi = results ? info->out_max : info->in_max;
  if (n >= lo && (hi < 0 || n <= hi)) return true;
  const char *what = results ? "results" : "operands";
  if (hi < 0)
    return fc_ps_err_at(ps, o->at.line, o->at.col, "%s takes at least %d %s, got %d", info->full_name, lo, what, n);
  if (lo == hi) return fc_ps_err_at(ps, o->at.line, o->at.col, "%s takes %d %s, got %d", info->full_name, lo, what, n);
  return fc_ps_err_at(ps, o->at.line, o->at.col, "%s takes %d to %d %s, got %d", info->full_name, lo, hi, what, n);
}

static bool check_operand_types(Parser *ps, const OpText *o, size_t n_types) {
  if (n_types != o->n_operands)
    return fc_ps_err_at(ps, o->at.line, o->at.col, "%zu operands but %zu operand types", o->n_operands, n_types);
  for (size_t i = 0; i < o->n_operands; i++)
    if (!fc_type_equal(&o->types[i], &o->operands[i]->type)) {
      char a[256], b[256];
      const Token *t = &o->operand_at[i];
      return fc_ps_err_at(ps, t->line, t->col, "operand %.*s is used as %s but has type %s",
                          (int)(t->n > 40 ? 40 : t->n), t->p, fc_type_str(&o->types[i], a, sizeof a),
                          fc_type_str(&o->operands[i]->type, b, sizeof b));
    }
  return true;
}

/* A non-empty operand list `%a, %b#1`. */
static bool parse_operands(Parser *ps, OpText *o) {
  for (;;) {
    o->operands = fc_ps_grow(&ps->scratch, o->operands, &o->cap_operands, o->n_operands + 1, sizeof *o->operands);
    o->operand_at =
        fc_ps_grow(&ps->scratch, o->operand_at, &o->cap_operand_at, o->n_operands + 1, sizeof *o->operand_at);
    if (!parse_use(ps, &o->operands[o->n_operands], &o->operand_at[o->n_operands])) return false;
    o->n_operands++;
    if (!tok_is(ps, TK_COMMA)) return true;
    fc_ps_next(ps);
  }
}

typedef struct FuncSig {
  FcType *types;
  const char **names;
  size_t n, cap_types, cap_names;
} FuncSig;

/* The graph's RETURN: its operands must match the function's declared results. */
static bool finish_return(Parser *ps, OpText *o, const FuncSig *sig, const char *loc) {
  if (o->n_operands != sig->n)
    return fc_ps_err_at(ps, o->at.line, o->at.col, "func.return returns %zu values but @%s declares %zu results",
                        o->n_operands, ps->g->name, sig->n);
  for (size_t i = 0; i < sig->n; i++)
    if (!fc_type_equal(&sig->types[i], &o->operands[i]->type)) {
      char a[256], b[256];
      const Token *t = &o->operand_at[i];
      return fc_ps_err_at(ps, t->line, t->col, "returned value has type %s but @%s declares result %zu as %s",
                          fc_type_str(&o->operands[i]->type, a, sizeof a), ps->g->name, i,
                          fc_type_str(&sig->types[i], b, sizeof b));
    }
  FcOp *ret = fc_graph_set_outputs(ps->g, o->operands, sig->names, (int)sig->n);
  ret->loc = loc;
  return true;
}

/* `return {annotations} %a, %b : tensor<..>, tensor<..>` (the func dialect's custom form). */
static bool parse_custom_return(Parser *ps, OpText *o, const FuncSig *sig) {
  fc_ps_next(ps);
  FcAttr none[1];
  int n_none = 0;
  AnnotList annots = {0};
  if (tok_is(ps, TK_LBRACE) && !parse_op_attrs(ps, fc_op_info(FC_OP_RETURN), none, &n_none, &annots)) return false;
  if (tok_is(ps, TK_VALUE) && !parse_operands(ps, o)) return false;
  if (o->n_operands) {
    if (!fc_ps_expect(ps, TK_COLON, "':' and the types of the returned values")) return false;
    for (;;) {
      o->types = fc_ps_grow(&ps->scratch, o->types, &o->cap_types, o->n_types + 1, sizeof *o->types);
      if (!fc_ps_type(ps, &o->types[o->n_types++])) return false;
      if (!tok_is(ps, TK_COMMA)) break;
      fc_ps_next(ps);
    }
  }
  if (!check_operand_types(ps, o, o->n_types)) return false;
  const char *loc;
  if (!parse_opt_loc(ps, &loc)) return false;
  return finish_return(ps, o, sig, loc) && fc_ps_attach_annots(ps, &annots, &fc_graph_return(ps->g)->annots, NULL);
}

/* A constant of a quantised type holds its data with the storage type (MLIR's dense literals take no
 * quantised element type): the result type's quantisation is put on the value's tensor, which must
 * have exactly the storage type. The tensor is this parser's own, and a dense_resource reference still
 * points at it to receive its data, so it is updated in place rather than replaced. */
static bool quantise_constant(Parser *ps, FcOp *op, const OpText *o) {
  const FcType *rt = &op->results[0].type;
  const FcAttr *a = fc_op_attr(op, FC_ATTR_VALUE);
  if (op->n_results != 1 || !rt->quant || !a || a->kind != FC_AK_TENSOR || !a->tensor) return true;
  FcTensor *t = (FcTensor *)a->tensor;
  FcType storage = fc_type_storage(rt);
  if (!fc_type_equal(&t->type, &storage)) {
    char x[256], y[256], z[256];
    return fc_ps_err_at(ps, o->at.line, o->at.col, "flow.constant: value has type %s but a %s result needs %s",
                        fc_type_str(&t->type, x, sizeof x), fc_type_str(rt, y, sizeof y),
                        fc_type_str(&storage, z, sizeof z));
  }
  t->type = *rt;
  return true;
}

static bool parse_op(Parser *ps, const FuncSig *sig, bool *is_return);

/* One region `{ ^bb0(%a: T, ...): ops }` into graph r; the block label may be left out when there are no
 * arguments, as MLIR allows. */
static bool parse_region(Parser *ps, FcGraph *r) {
  if (!fc_ps_expect(ps, TK_LBRACE, "'{' to start a region")) return false;
  FcGraph *outer = ps->g;
  size_t mark = ps->n_scope;
  ps->g = r;
  ps->depth++;
  if (tok_is(ps, TK_BLOCK)) {
    fc_ps_next(ps);
    if (tok_is(ps, TK_LPAREN)) {
      fc_ps_next(ps);
      while (!tok_is(ps, TK_RPAREN)) {
        Token nt = ps->lx.tok;
        if (!fc_ps_expect(ps, TK_VALUE, "a block argument name or ')'")) return false;
        if (!fc_ps_expect(ps, TK_COLON, "':' and the block argument type")) return false;
        FcType ty;
        if (!fc_ps_type(ps, &ty) || !parse_opt_loc(ps, NULL)) return false;
        if (!define_values(ps, &nt, fc_graph_add_input(r, ty, NULL), 1)) return false;
        if (!tok_is(ps, TK_RPAREN) && !fc_ps_expect(ps, TK_COMMA, "',' or ')' after the block argument")) return false;
      }
      fc_ps_next(ps);
    }
    if (!fc_ps_expect(ps, TK_COLON, "':' after the block label")) return false;
  }
  bool yielded = false;
  while (!tok_is(ps, TK_RBRACE)) {
    if (yielded) return fc_ps_err(ps, "operations after flow.yield");
    if (tok_is(ps, TK_BLOCK)) return fc_ps_err(ps, "regions with more than one block are not supported");
    if (tok_is(ps, TK_EOF)) return fc_ps_err(ps, "unexpected end of input in a region");
    if (!parse_op(ps, NULL, &yielded)) return false;
  }
  if (!yielded) return fc_ps_err(ps, "the region does not end with flow.yield");
  fc_ps_next(ps);
  end_scope(ps, mark);
  ps->g = outer;
  ps->depth--;
  return true;
}

/* A region list `({...}, {...})` into new region graphs. */
static bool parse_regions(Parser *ps, FcGraph ***out, int *n) {
  Token at = ps->lx.tok;
  if (ps->depth >= FC_MAX_REGION_DEPTH)
    return fc_ps_err_limit(ps, at.line, at.col, "regions nest deeper than %d", FC_MAX_REGION_DEPTH);
  fc_ps_next(ps);
  size_t cap = 0, count = 0;
  FcGraph **list = NULL;
  for (;;) {
    list = fc_ps_grow(&ps->scratch, list, &cap, count + 1, sizeof *list);
    list[count] = fc_region_new(ps->m);
    if (!parse_region(ps, list[count++])) return false;
    if (!tok_is(ps, TK_COMMA)) break;
    fc_ps_next(ps);
  }
  *out = list;
  *n = (int)count;
  return fc_ps_expect(ps, TK_RPAREN, "',' or ')' after the regions");
}

/* One operation of a graph. Sets *is_return when it was the graph's terminator (func.return, or flow.yield
 * in a region; sig is NULL there). */
static bool parse_op(Parser *ps, const FuncSig *sig, bool *is_return) {
  OpText o = {0};
  *is_return = false;
  /* Result groups: `%3 =`, `%3:2 =`, `%a, %b:2 =`. */
  size_t n_bound = 0;
  if (tok_is(ps, TK_VALUE)) {
    for (;;) {
      Token nt = ps->lx.tok;
      if (!fc_ps_expect(ps, TK_VALUE, "a result name")) return false;
      int64_t size = 1;
      if (tok_is(ps, TK_COLON)) {
        fc_ps_next(ps);
        uint64_t v;
        Token ct = ps->lx.tok;
        if (!parse_int(ps, 1, INT_MAX, "a result count", &v)) return false;
        if (v == 0) return fc_ps_err_at(ps, ct.line, ct.col, "result count must be at least 1");
        size = (int64_t)v;
      }
      o.group_names = fc_ps_grow(&ps->scratch, o.group_names, &o.cap_groups, o.n_groups + 1, sizeof *o.group_names);
      o.group_sizes = fc_ps_grow(&ps->scratch, o.group_sizes, &o.cap_sizes, o.n_groups + 1, sizeof *o.group_sizes);
      o.group_names[o.n_groups] = nt;
      o.group_sizes[o.n_groups++] = (int)size;
      n_bound += (size_t)size;
      if (!tok_is(ps, TK_COMMA)) break;
      fc_ps_next(ps);
    }
    if (!fc_ps_expect(ps, TK_EQUAL, "'=' after the result names")) return false;
  }
  o.at = ps->lx.tok;
  if (tok_is_id(ps, "return") || tok_is_id(ps, "func.return")) {
    if (!sig) return fc_ps_err(ps, "func.return inside a region (regions end with flow.yield)");
    if (o.n_groups) return fc_ps_err(ps, "func.return has no results");
    *is_return = true;
    return parse_custom_return(ps, &o, sig);
  }
  if (!tok_is(ps, TK_STRING)) {
    char buf[64];
    return fc_ps_err(ps, "expected an operation, got %s", fc_ps_tok_desc(&o.at, buf, sizeof buf));
  }
  const char *opname = fc_ps_decode_string(ps, &o.at, &ps->scratch);
  if (!opname) return false;
  FcOpKind kind;
  if (!fc_op_kind_from_name(opname, strlen(opname), &kind))
    return fc_ps_err(ps, "unknown operation '%.*s'", (int)(strlen(opname) > 60 ? 60 : strlen(opname)), opname);
  const FcOpInfo *info = fc_op_info(kind);
  fc_ps_next(ps);
  if (!fc_ps_expect(ps, TK_LPAREN, "'(' and the operands")) return false;
  if (!tok_is(ps, TK_RPAREN) && !parse_operands(ps, &o)) return false;
  if (!fc_ps_expect(ps, TK_RPAREN, "',' or ')' after the operands")) return false;
  if (tok_is(ps, TK_LBRACKET)) return fc_ps_err(ps, "successors are not supported");
  if (tok_is(ps, TK_LT)) return fc_ps_err(ps, "properties are not supported");
  FcGraph **regions = NULL;
  int n_regions = 0;
  if (tok_is(ps, TK_LPAREN)) {
    if (kind != FC_OP_LOOP && kind != FC_OP_IF) return fc_ps_err(ps, "%s takes no regions", info->full_name);
    if (!parse_regions(ps, &regions, &n_regions)) return false;
  }
  if (!check_count(ps, &o, info, false, (int)o.n_operands)) return false;
  if ((kind == FC_OP_RETURN && !sig) || (kind == FC_OP_YIELD && sig))
    return fc_ps_err_at(ps, o.at.line, o.at.col, "%s",
                        sig ? "flow.yield outside a region" : "func.return inside a region (regions end with flow.yield)");

  /* The op can only be created once the signature gives its result count; attributes wait here. */
  FcAttr *attrs = FC_NEW_ARRAY(&ps->scratch, FcAttr, (size_t)info->n_attrs + 1);
  int n_attrs = 0;
  AnnotList annots = {0};
  if (tok_is(ps, TK_LBRACE) && !parse_op_attrs(ps, info, attrs, &n_attrs, &annots)) return false;

  if (!fc_ps_expect(ps, TK_COLON, "':' and the op's type")) return false;
  if (!parse_type_list(ps, &o, false)) return false;
  size_t n_operand_types = o.n_types;
  if (!check_operand_types(ps, &o, n_operand_types)) return false;
  if (!fc_ps_expect(ps, TK_ARROW, "'->' and the result types")) return false;
  if (!parse_type_list(ps, &o, true)) return false;
  size_t n_results = o.n_types - n_operand_types;
  if (o.n_groups && n_bound != n_results)
    return fc_ps_err_at(ps, o.at.line, o.at.col, "%zu result names bound for %zu results", n_bound, n_results);
  if (!check_count(ps, &o, info, true, (int)(n_results > INT_MAX ? INT_MAX : n_results))) return false;
  const char *loc;
  if (!parse_opt_loc(ps, &loc)) return false;

  if (kind == FC_OP_RETURN) {
    *is_return = true;
    if (!finish_return(ps, &o, sig, loc)) return false;
    return fc_ps_attach_annots(ps, &annots, &fc_graph_return(ps->g)->annots, NULL);
  }
  FcOp *op = fc_op_create(ps->g, kind, o.operands, (int)o.n_operands, (int)n_results);
  fc_op_set_regions(op, regions, n_regions);
  op->loc = loc;
  for (int i = 0; i < n_attrs; i++) fc_op_set_attr(op, attrs[i]);
  for (int i = 0; i < info->n_attrs; i++)
    if (!info->attrs[i].optional && !fc_op_attr(op, info->attrs[i].name))
      return fc_ps_err_at(ps, o.at.line, o.at.col, "%s is missing its attribute '%s'", info->full_name,
                          fc_attr_name_str(info->attrs[i].name));
  for (size_t i = 0; i < n_results; i++) {
    const FcType *t = &o.types[n_operand_types + i];
    op->results[i].type = fc_type_copy(ps->arena, t);
  }
  if (kind == FC_OP_CONSTANT && !quantise_constant(ps, op, &o)) return false;
  FcDiag d;
  fc_diag_init(&d);
  if (fc_op_infer(op, &d) != FC_OK) {
    size_t n = strlen(info->name);
    const char *msg = d.msg;
    if (strncmp(msg, info->name, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ') msg += n + 2; /* hooks prefix the mnemonic */
    return fc_ps_err_at(ps, o.at.line, o.at.col, "%s: %s", info->full_name, msg);
  }
  if (!fc_ps_attach_annots(ps, &annots, &op->annots, n_results ? &op->results[0].type : NULL)) return false;
  fc_op_insert_before(NULL, op);
  *is_return = kind == FC_OP_YIELD;
  int first = 0;
  for (size_t gi = 0; gi < o.n_groups; gi++) {
    if (!define_values(ps, &o.group_names[gi], &op->results[first], o.group_sizes[gi])) return false;
    first += o.group_sizes[gi];
  }
  return true;
}

/* ---- functions and the module ----------------------------------------------------------------------- */

static bool parse_signature(Parser *ps, FuncSig *sig) {
  if (!fc_ps_expect(ps, TK_LPAREN, "'(' and the arguments")) return false;
  while (!tok_is(ps, TK_RPAREN)) {
    Token nt = ps->lx.tok;
    if (!fc_ps_expect(ps, TK_VALUE, "an argument name or ')'")) return false;
    if (!fc_ps_expect(ps, TK_COLON, "':' and the argument type")) return false;
    FcType ty;
    if (!fc_ps_type(ps, &ty)) return false;
    const char *name = NULL;
    AnnotList annots = {0};
    if (tok_is(ps, TK_LBRACE) && !parse_arg_attrs(ps, &name, &annots)) return false;
    if (!parse_opt_loc(ps, NULL)) return false;
    FcValue *in = fc_graph_add_input(ps->g, ty, name);
    if (!fc_ps_attach_annots(ps, &annots, &in->annots, &in->type)) return false;
    if (!define_values(ps, &nt, in, 1)) return false;
    if (!tok_is(ps, TK_RPAREN) && !fc_ps_expect(ps, TK_COMMA, "',' or ')' after the argument")) return false;
  }
  fc_ps_next(ps);
  if (!tok_is(ps, TK_ARROW)) return true;
  fc_ps_next(ps);
  bool parens = tok_is(ps, TK_LPAREN);
  if (parens) fc_ps_next(ps);
  if (parens && tok_is(ps, TK_RPAREN)) {
    fc_ps_next(ps);
    return true;
  }
  for (;;) {
    sig->types = fc_ps_grow(&ps->scratch, sig->types, &sig->cap_types, sig->n + 1, sizeof *sig->types);
    sig->names = fc_ps_grow(&ps->scratch, sig->names, &sig->cap_names, sig->n + 1, sizeof *sig->names);
    if (!fc_ps_type(ps, &sig->types[sig->n])) return false;
    sig->names[sig->n] = NULL;
    if (parens && tok_is(ps, TK_LBRACE) && !parse_arg_attrs(ps, &sig->names[sig->n], NULL)) return false;
    sig->n++;
    if (!parens || !tok_is(ps, TK_COMMA)) break;
    fc_ps_next(ps);
  }
  return !parens || fc_ps_expect(ps, TK_RPAREN, "',' or ')' after the result types");
}

static bool parse_func(Parser *ps) {
  if (!expect_id(ps, "func.func")) return false;
  if (tok_is_id(ps, "public") || tok_is_id(ps, "private")) fc_ps_next(ps);
  Token sym = ps->lx.tok;
  if (!tok_is(ps, TK_SYMBOL)) return fc_ps_err(ps, "expected the function's @name");
  if (sym.p[1] == '"') {
    if (!(ps->g->name = fc_ps_decode_string(ps, &sym, ps->arena))) return false;
  } else {
    ps->g->name = fc_arena_strndup(ps->arena, sym.p + 1, sym.n - 1);
  }
  fc_ps_next(ps);
  FuncSig sig = {0};
  if (!parse_signature(ps, &sig)) return false;
  if (tok_is_id(ps, "attributes")) return fc_ps_err(ps, "function attributes are not supported");
  if (!fc_ps_expect(ps, TK_LBRACE, "'{' to start the function body")) return false;
  bool returned = false;
  while (!tok_is(ps, TK_RBRACE)) {
    if (returned) return fc_ps_err(ps, "operations after func.return");
    if (tok_is(ps, TK_EOF)) return fc_ps_err(ps, "unexpected end of input in the body of @%s", ps->g->name);
    if (!parse_op(ps, &sig, &returned)) return false;
  }
  if (!returned) return fc_ps_err(ps, "the body of @%s does not end with func.return", ps->g->name);
  fc_ps_next(ps);
  return parse_opt_loc(ps, NULL);
}

/* Blob "0x<alignment:4 bytes LE><data>" for every reference to `key`. */
static bool resolve_blob(Parser *ps, const Token *key, const Token *blob) {
  ResRef *r = map_get(&ps->resources, key->p, key->n);
  if (!r) return true; /* a resource nobody references is harmless */
  if (r->tensor->data)
    return fc_ps_err_at(ps, key->line, key->col, "duplicate resource '%.*s'", (int)(key->n > 40 ? 40 : key->n), key->p);
  const char *p = blob->p + 1;
  size_t n = blob->n - 2;
  unsigned char al[4];
  if (n < 10 || p[0] != '0' || p[1] != 'x' || n % 2 || !decode_hex(p + 2, 4, al))
    return fc_ps_err_at(ps, blob->line, blob->col, "malformed resource blob (expected \"0x\" and hex digits)");
  uint32_t align = (uint32_t)al[0] | (uint32_t)al[1] << 8 | (uint32_t)al[2] << 16 | (uint32_t)al[3] << 24;
  size_t bytes = (n - 10) / 2;
  if (align == 0 ? bytes != 0 : (align & (align - 1)) != 0)
    return fc_ps_err_at(ps, blob->line, blob->col, "resource blob alignment %u is not a power of two", (unsigned)align);
  for (ResRef *q = r; q; q = q->next)
    if ((int64_t)bytes != q->tensor->nbytes) {
      char tb[256];
      return fc_ps_err_at(ps, blob->line, blob->col, "resource '%.*s' has %zu bytes but %s (line %d) needs %lld",
                          (int)(key->n > 40 ? 40 : key->n), key->p, bytes, fc_type_str(&q->tensor->type, tb, sizeof tb),
                          q->line, (long long)q->tensor->nbytes);
    }
  unsigned char *d = fc_arena_alloc(ps->arena, bytes, 64);
  if (!decode_hex(p + 10, bytes, d))
    return fc_ps_err_at(ps, blob->line, blob->col, "malformed resource blob (expected \"0x\" and hex digits)");
  for (ResRef *q = r; q; q = q->next) {
    if (q->tensor->type.dtype == FC_DT_BOOL)
      for (size_t i = 0; i < bytes; i++)
        if (d[i] > 1) return fc_ps_err_at(ps, blob->line, blob->col, "i1 resource data must be bytes 0 or 1");
    q->tensor->data = d;
  }
  return true;
}

/* {-# dialect_resources: { builtin: { key: "0x...", ... } } #-} */
static bool parse_resources(Parser *ps) {
  fc_ps_next(ps);
  for (;;) {
    if (!tok_is_id(ps, "dialect_resources")) return fc_ps_err_unsupported(ps, "resource section");
    fc_ps_next(ps);
    if (!fc_ps_expect(ps, TK_COLON, "':'") || !fc_ps_expect(ps, TK_LBRACE, "'{'")) return false;
    while (!tok_is(ps, TK_RBRACE)) {
      if (!tok_is_id(ps, "builtin")) {
        char buf[64];
        return fc_ps_err(ps, "resources of dialect %s are not supported", fc_ps_tok_desc(&ps->lx.tok, buf, sizeof buf));
      }
      fc_ps_next(ps);
      if (!fc_ps_expect(ps, TK_COLON, "':'") || !fc_ps_expect(ps, TK_LBRACE, "'{'")) return false;
      while (!tok_is(ps, TK_RBRACE)) {
        Token key = ps->lx.tok;
        if (!fc_ps_expect(ps, TK_ID, "a resource key") || !fc_ps_expect(ps, TK_COLON, "':'")) return false;
        Token blob = ps->lx.tok;
        if (!fc_ps_expect(ps, TK_STRING, "a resource blob string")) return false;
        if (!resolve_blob(ps, &key, &blob)) return false;
        if (!tok_is(ps, TK_RBRACE) && !fc_ps_expect(ps, TK_COMMA, "',' or '}'")) return false;
      }
      fc_ps_next(ps);
      if (!tok_is(ps, TK_RBRACE) && !fc_ps_expect(ps, TK_COMMA, "',' or '}'")) return false;
    }
    fc_ps_next(ps);
    if (!tok_is(ps, TK_COMMA)) break;
    fc_ps_next(ps);
  }
  return fc_ps_expect(ps, TK_META_END, "'#-}' to end the resource section");
}

/* `attributes {name = value, ...}` of the module: annotations only (flow.mesh), checked without a subject. */
static bool parse_module_attrs(Parser *ps) {
  if (!fc_ps_expect(ps, TK_LBRACE, "'{' after 'attributes'")) return false;
  AnnotList annots = {0};
  while (!tok_is(ps, TK_RBRACE)) {
    Token nt = ps->lx.tok;
    if (nt.kind != TK_ID || !memchr(nt.p, '.', nt.n)) {
      char buf[64];
      return fc_ps_err(ps, "unsupported module attribute %s (only namespaced annotations such as flow.mesh)",
                       fc_ps_tok_desc(&nt, buf, sizeof buf));
    }
    if (!fc_ps_annot(ps, &nt, nt.p, nt.n, &annots)) return false;
    if (tok_is(ps, TK_RBRACE)) break;
    if (!fc_ps_expect(ps, TK_COMMA, "',' or '}' in the module attributes")) return false;
  }
  fc_ps_next(ps);
  return fc_ps_attach_annots(ps, &annots, &ps->m->annots, NULL);
}

static bool parse_module(Parser *ps) {
  fc_ps_next(ps);
  bool wrapped = tok_is_id(ps, "module");
  if (wrapped) {
    fc_ps_next(ps);
    if (tok_is(ps, TK_SYMBOL)) fc_ps_next(ps);
    if (tok_is_id(ps, "attributes")) {
      fc_ps_next(ps);
      if (!parse_module_attrs(ps)) return false;
    }
    if (!fc_ps_expect(ps, TK_LBRACE, "'{' after 'module'")) return false;
  }
  if (!parse_func(ps)) return false;
  if (tok_is_id(ps, "func.func")) return fc_ps_err(ps, "only one function is supported");
  if (wrapped) {
    if (!fc_ps_expect(ps, TK_RBRACE, "'}' to end the module")) return false;
    if (!parse_opt_loc(ps, NULL)) return false;
  }
  if (tok_is(ps, TK_META_BEGIN) && !parse_resources(ps)) return false;
  if (!tok_is(ps, TK_EOF)) {
    char buf[64];
    return fc_ps_err(ps, "expected end of input, got %s", fc_ps_tok_desc(&ps->lx.tok, buf, sizeof buf));
  }
  for (size_t i = 0; i < ps->n_refs; i++) {
    /* refs[i] was the first reference to its key; the map holds the list's newest head. */
    const ResRef *r = ps->refs[i];
    if (!r->tensor->data)
      return fc_ps_err_at(ps, r->line, r->col, "dense_resource has no data in the file's dialect_resources section");
  }
  return true;
}

FcStatus fc_parse_module(const char *text, size_t len, const char *source, FcModule **out, FcDiag *diag) {
  *out = NULL;
  if (!text) text = ""; /* NULL with len 0: empty input */
  Parser ps = {.text = text, .end = text + len, .source = source ? source : "<input>", .diag = diag};
  ps.lx.cur = text;
  ps.lx.line_start = text;
  ps.lx.line = 1;
  ps.m = fc_module_create(source);
  ps.g = ps.m->graph;
  ps.arena = &ps.m->arena;
  fc_arena_init(&ps.scratch);
  bool ok = parse_module(&ps);
  fc_arena_free(&ps.scratch);
  if (!ok) {
    fc_module_destroy(ps.m);
    if (diag && diag->status == FC_OK) fc_error(diag, FC_ERR_INPUT, "%s: cannot parse the IR text", ps.source);
    return diag && diag->status != FC_OK ? diag->status : FC_ERR_INPUT;
  }
  *out = ps.m;
  return FC_OK;
}
