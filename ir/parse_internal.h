/* parse_internal.h — the lexer and parser state shared by ir/parse*.c (the IR text reader).
 *
 * parse.c owns the lexer, the numbers, tensor types, constants, ops and the module; parse_quant.c reads
 * `!quant.uniform<...>` element types; parse_annot.c reads annotation values (discardable attributes).
 * Every reader reports through fc_ps_err* (the first error wins, later ones are dropped) and returns
 * false; temporaries go to ps->scratch.
 */
#ifndef FLOWC_PARSE_INTERNAL_H
#define FLOWC_PARSE_INTERNAL_H

#include "ir.h"

#include <limits.h>
#include <string.h>

typedef enum TokKind {
  TK_EOF,
  TK_ERROR,      /* the lexer already reported it */
  TK_ID,         /* bare identifier: module, func.func, dense, f32, flow.name, ... */
  TK_VALUE,      /* %name */
  TK_SYMBOL,     /* @name or @"name" */
  TK_BLOCK,      /* ^name (a block label) */
  TK_HASH,       /* #name (result numbers, location aliases) */
  TK_STRING,     /* "..." including the quotes */
  TK_INT,        /* decimal or 0x hex */
  TK_FLOAT,      /* digits '.' digits [exponent] */
  TK_LPAREN, TK_RPAREN, TK_LBRACE, TK_RBRACE, TK_LBRACKET, TK_RBRACKET, TK_LT, TK_GT,
  TK_COMMA, TK_EQUAL, TK_COLON, TK_ARROW, TK_MINUS,
  TK_BANG,       /* '!' starting a dialect type (!quant.uniform<...>), read character by character */
  TK_META_BEGIN, /* {-# */
  TK_META_END,   /* #-} */
} TokKind;

typedef struct Token {
  TokKind kind;
  const char *p; /* start in the text */
  size_t n;      /* length */
  int line, col;
} Token;

typedef struct Lexer {
  const char *cur;        /* first character after `tok` */
  const char *line_start; /* start of the line `cur` is on */
  int line;
  Token tok;
} Lexer;

/* A string-keyed hash map (open addressing) in the scratch arena. */
typedef struct MapEntry {
  const char *key;
  size_t len;
  void *val;
} MapEntry;
typedef struct Map {
  MapEntry *e;
  size_t cap, n;
} Map;

/* A named group of values: a graph input or the results an op binds to one %name. */
typedef struct ValueDef {
  FcGraph *g;     /* the graph (function body or region) defining it */
  FcValue *first; /* graph input, or the first result of the group (results are contiguous) */
  int count;
  int line, col;
} ValueDef;

/* A dense_resource<key> reference waiting for its blob in the trailing resource section. */
typedef struct ResRef {
  FcTensor *tensor;
  int line, col;
  struct ResRef *next; /* other references to the same key */
} ResRef;

typedef struct Parser {
  const char *text, *end;
  const char *source;
  Lexer lx;
  FcDiag *diag;
  bool failed;
  FcModule *m;
  FcGraph *g;
  FcArena *arena;  /* the module's */
  FcArena scratch; /* temporaries, freed when parsing ends */
  Map values;      /* value name (without '%') -> ValueDef; NULL once its region has ended */
  Token *scope;    /* names defined so far, innermost region last, to end their scope with the region */
  size_t n_scope, cap_scope;
  int depth;       /* region nesting of the op being read */
  Map resources;   /* resource key -> ResRef list */
  ResRef **refs;   /* every reference list head, in order, to report unresolved keys */
  size_t n_refs, cap_refs;
} Parser;

enum { MAX_NUMBER_LEN = 128 };

/* ---- parse.c: errors, scratch memory, lexer ---------------------------------------------------------- */

/* Records "<source>:<line>:<col>: <what>" with status st unless an error was already recorded (the first
 * one is the one the user sees); always false. The macros are the usual forms: an input error at a
 * position, at the current token, and a limit error. */
bool fc_ps_fail(Parser *ps, FcStatus st, int line, int col, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
#define fc_ps_err_at(ps, line, col, ...) fc_ps_fail(ps, FC_ERR_INPUT, line, col, __VA_ARGS__)
#define fc_ps_err(ps, ...) fc_ps_fail(ps, FC_ERR_INPUT, (ps)->lx.tok.line, (ps)->lx.tok.col, __VA_ARGS__)
#define fc_ps_err_limit(ps, line, col, ...) fc_ps_fail(ps, FC_ERR_LIMIT, line, col, __VA_ARGS__)
/* The token for messages: its text, shortened, or a description. */
const char *fc_ps_tok_desc(const Token *t, char *buf, size_t cap);
/* Reports "unsupported <what> <the current token>". */
bool fc_ps_err_unsupported(Parser *ps, const char *what);
/* A growable array in the scratch arena (old storage is left behind; growth is geometric). */
void *fc_ps_grow(FcArena *scratch, void *arr, size_t *cap, size_t need, size_t elem);

static inline bool is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static inline bool is_digit(int c) { return c >= '0' && c <= '9'; }
static inline bool is_id_char(int c) { return is_alpha(c) || is_digit(c) || c == '_' || c == '$' || c == '.'; }

/* The 1-based column of `p` on the lexer's current line. */
static inline int col_of(const Lexer *lx, const char *p) {
  size_t c = (size_t)(p - lx->line_start) + 1;
  return c > INT_MAX ? INT_MAX : (int)c;
}

/* Moves to the next token. */
void fc_ps_next(Parser *ps);
static inline bool tok_is(const Parser *ps, TokKind k) { return ps->lx.tok.kind == k; }
static inline bool tok_is_id(const Parser *ps, const char *s) {
  const Token *t = &ps->lx.tok;
  return t->kind == TK_ID && t->n == strlen(s) && memcmp(t->p, s, t->n) == 0;
}
/* Consumes a token of kind k, or reports "expected <what>". */
bool fc_ps_expect(Parser *ps, TokKind k, const char *what);
/* If the current token names an element type (f32, i64, ...), consumes it and returns true. */
bool fc_ps_dtype_token(Parser *ps, FcDtype *dt);
/* Decodes a string token into `a`; NULL after an error. */
char *fc_ps_decode_string(Parser *ps, const Token *t, FcArena *a);

/* ---- parse.c: numbers, types and values -------------------------------------------------------------- */

/* A number as written: an optional '-' (at `start`) and the number token `t`. */
typedef struct NumText {
  bool neg;
  Token start, t;
} NumText;

static inline bool is_hex_token(const Token *t) {
  return t->n > 2 && t->p[0] == '0' && (t->p[1] == 'x' || t->p[1] == 'X');
}
/* Reads an optional '-' and a number token. */
NumText fc_ps_number(Parser *ps);
/* An integer in [lo, hi] (hi unsigned, for ui64), as two's-complement bits. */
bool fc_ps_int_value(Parser *ps, const NumText *n, int64_t lo, uint64_t hi, const char *type_name, uint64_t *bits);
/* A float literal or a hex bit pattern for a float of dtype `dt`, written to `dst` as the element's bytes. */
bool fc_ps_float_value(Parser *ps, const NumText *n, FcDtype dt, void *dst);
/* Reads one array element into slot i of vals (8 bytes a slot); ctx is the caller's. */
typedef bool FcPsElem(Parser *ps, void *vals, size_t i, const void *ctx);
/* The rest of `array<T` after its element type: an optional `: e, e, ...` and the '>'. The elements
 * go to the scratch arena (NULL, 0 when there are none). */
bool fc_ps_array_tail(Parser *ps, FcPsElem *elem, const void *ctx, void **vals, int *n);
/* `tensor<...>` (the current token being `tensor`); dims in the scratch arena. */
bool fc_ps_type(Parser *ps, FcType *out);
/* A string token, decoded into the scratch arena. */
bool fc_ps_string_value(Parser *ps, const char **out);
/* Constant data: the current token being `dense` or `dense_resource`. */
bool fc_ps_tensor_value(Parser *ps, const FcTensor **out);

/* ---- parse_quant.c ----------------------------------------------------------------------------------- */

/* `!quant.uniform<...>` from its '!' at *pp, character by character; *pp moves past the closing '>'.
 * The parameters go to the scratch arena and are not checked against a tensor (the caller does that). */
bool fc_ps_quant(Parser *ps, const char **pp, FcQuant *q);
/* A quantised element type as an attribute or annotation value, the current token being its '!': checked on
 * its own (no tensor), an element type (rank -1) whose parameters live in the scratch arena. */
bool fc_ps_quant_value(Parser *ps, FcType *out);

/* ---- parse_annot.c ----------------------------------------------------------------------------------- */

/* Annotations as read, kept until the op or argument they belong to exists. */
typedef struct AnnotText {
  const char *name;
  FcAnnotValue value;
  Token at; /* the name, where errors about the annotation point */
} AnnotText;
typedef struct AnnotList {
  AnnotText *v;
  size_t n, cap;
} AnnotList;
/* `name = value` of an annotation whose name token `nt` (decoded: name, len) was already read. */
bool fc_ps_annot(Parser *ps, const Token *nt, const char *name, size_t len, AnnotList *out);
/* Checks each annotation against its subject's type and attaches it to the list `to`. */
bool fc_ps_attach_annots(Parser *ps, const AnnotList *l, FcAnnots *to, const FcType *subject);

#endif /* FLOWC_PARSE_INTERNAL_H */
