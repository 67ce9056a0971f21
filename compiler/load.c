/* load.c — opening a model by its content, so an IR dump is accepted wherever an .onnx model is.
 *
 * The format is sniffed from the first significant bytes: the text form starts with `module` (or the
 * generic `"builtin.module"`) after whitespace and `//` comments, and lit test files carry long comment
 * headers, so the sniffer streams through comments instead of looking at a fixed-size prefix; a binary
 * model stops it at the first byte. ONNX goes to the importer; text is read within the file-size limit,
 * parsed, and then given the same treatment the importer gives a model: the rank limit on every value and
 * --bind turning named graph inputs into constants.
 *
 * --split-input-file cuts text at `// -----` lines. Each part is padded with the newlines of the lines
 * before it, so parser messages carry the line numbers of the whole file and tests can match them.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *fc_model_format_name(FcModelFormat f) { return f == FC_FORMAT_TEXT ? "ir text" : "onnx"; }

static bool is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
static bool is_ident(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

/* A character source for the sniffer: either a buffer or a FILE. */
typedef struct Sniff {
  const char *buf;
  size_t len, pos;
  FILE *f;
} Sniff;

static int sniff_get(Sniff *s) {
  if (s->f) return getc(s->f);
  return s->pos < s->len ? (unsigned char)s->buf[s->pos++] : EOF;
}

/* The sniffing itself: skip whitespace and `//` lines, then compare with the keywords. */
static bool sniff_text(Sniff *s) {
  int c = sniff_get(s);
  /* A UTF-8 byte-order mark from an editor. */
  if (c == 0xEF) {
    if (sniff_get(s) != 0xBB || sniff_get(s) != 0xBF) return false;
    c = sniff_get(s);
  }
  for (;;) {
    while (c != EOF && is_space(c)) c = sniff_get(s);
    if (c != '/') break;
    if (sniff_get(s) != '/') return false;
    while (c != EOF && c != '\n') c = sniff_get(s);
  }
  static const char *const keywords[] = {"module", "\"builtin.module\""};
  char word[20];
  size_t n = 0;
  while (c != EOF && n < sizeof word - 1) {
    word[n++] = (char)c;
    if (c == '"' && n > 1) break;
    c = sniff_get(s);
    if (!is_ident(c) && c != '"') break;
  }
  word[n] = '\0';
  /* After the keyword comes a space, `{`, `@name` or `(`, never more identifier characters. */
  if (is_ident(c) && word[0] != '"') return false;
  for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++)
    if (strcmp(word, keywords[i]) == 0) return true;
  return false;
}

bool fc_looks_like_ir_text(const char *text, size_t len) {
  Sniff s = {.buf = text, .len = len};
  return sniff_text(&s);
}

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Opens a regular file; directories, pipes and devices are refused (the sniffer reads the start of the
 * file and the loader reads it again, which only a regular file allows), a FIFO without blocking. */
static FcStatus open_model_file(const char *path, FILE **out, int64_t *size, FcDiag *diag) {
  *out = NULL;
  int fd;
  FcStatus st = fc_open_regular(path, "the model file", &fd, size, diag);
  if (st != FC_OK) return st;
  *out = fdopen(fd, "rb");
  if (*out) return FC_OK;
  int e = errno;
  close(fd);
  return fc_error(diag, FC_ERR_IO, "cannot open the model file: %s", strerror(e));
}

FcStatus fc_model_format_of(const char *path, FcModelFormat *out, FcDiag *diag) {
  FILE *f;
  int64_t size;
  FcStatus st = open_model_file(path, &f, &size, diag);
  if (st != FC_OK) return st;
  Sniff s = {.f = f};
  bool text = sniff_text(&s);
  int err = ferror(f) ? errno : 0;
  fclose(f);
  if (err) return fc_error(diag, FC_ERR_IO, "cannot read the model file: %s", strerror(err));
  *out = text || has_suffix(path, ".mlir") ? FC_FORMAT_TEXT : FC_FORMAT_ONNX;
  return FC_OK;
}

FcStatus fc_read_file(const char *path, int64_t max_bytes, char **out, size_t *len, FcDiag *diag) {
  *out = NULL;
  *len = 0;
  FILE *f;
  int64_t size;
  FcStatus st = open_model_file(path, &f, &size, diag);
  if (st != FC_OK) return st;
  if (size > max_bytes || (uint64_t)size >= SIZE_MAX) {
    fclose(f);
    return fc_error(diag, FC_ERR_LIMIT,
                    "the model file is %lld bytes, over the limit of %lld bytes (raise it with --max-file-size)",
                    (long long)size, (long long)max_bytes);
  }
  char *buf = malloc((size_t)size + 1);
  if (!buf) {
    fclose(f);
    return fc_error(diag, FC_ERR_LIMIT, "cannot allocate %lld bytes to read the model file", (long long)size);
  }
  size_t got = fread(buf, 1, (size_t)size, f);
  int err = ferror(f) ? errno : 0;
  fclose(f);
  if (got != (size_t)size) {
    free(buf);
    return err ? fc_error(diag, FC_ERR_IO, "cannot read the model file: %s", strerror(err))
               : fc_error(diag, FC_ERR_IO, "cannot read the model file: the file shrank while reading");
  }
  buf[got] = '\0';
  *out = buf;
  *len = got;
  return FC_OK;
}

typedef struct RankCheck {
  int max_rank;
  FcDiag *diag;
} RankCheck;

/* One graph of the module (the function or a loop/if body, whose inputs are block arguments). */
static FcStatus check_graph_ranks(FcGraph *g, void *ctx) {
  const RankCheck *rc = ctx;
  int max_rank = rc->max_rank;
  FcDiag *diag = rc->diag;
  for (int i = 0; i < g->n_inputs; i++) {
    if (g->inputs[i]->type.rank <= max_rank) continue;
    if (g->parent)
      return fc_error_node(diag, FC_ERR_LIMIT, fc_op_name(g->parent), fc_op_info(g->parent->kind)->name,
                           "block argument %d has rank %d, over the limit of %d (raise it with --max-rank)", i,
                           g->inputs[i]->type.rank, max_rank);
    return fc_error(diag, FC_ERR_LIMIT, "input '%s' has rank %d, over the limit of %d (raise it with --max-rank)",
                    g->inputs[i]->name ? g->inputs[i]->name : "", g->inputs[i]->type.rank, max_rank);
  }
  fc_graph_for_each_op(g, op) {
    for (int i = 0; i < op->n_results; i++)
      if (op->results[i].type.rank > max_rank)
        return fc_error_node(diag, FC_ERR_LIMIT, fc_op_name(op), fc_op_info(op->kind)->name,
                             "result %d has rank %d, over the limit of %d (raise it with --max-rank)", i,
                             op->results[i].type.rank, max_rank);
  }
  return FC_OK;
}

static FcStatus check_ranks(FcModule *m, int max_rank, FcDiag *diag) {
  RankCheck rc = {max_rank, diag};
  return fc_graph_walk(m->graph, check_graph_ranks, &rc);
}

/* Replaces graph input `name` by a constant read from `path`, and drops the input. */
static FcStatus bind_input(FcModule *m, const FcBinding *bnd, const FcImportLimits *lim, FcDiag *diag) {
  FcGraph *g = m->graph;
  int k = -1;
  for (int i = 0; i < g->n_inputs && k < 0; i++)
    if (g->inputs[i]->name && strcmp(g->inputs[i]->name, bnd->name) == 0) k = i;
  if (k < 0) return fc_error(diag, FC_ERR_INPUT, "--bind %s: the model has no graph input named '%s'", bnd->name,
                      bnd->name);
  FcValue *in = g->inputs[k];
  FcTensor *t = NULL;
  FcDiag local;
  fc_diag_init(&local);
  FcStatus st = fc_read_tensor_file(bnd->path, lim, &m->arena, &t, &local);
  if (st != FC_OK) return fc_error(diag, st, "--bind %s: %s", bnd->name, local.msg);
  if (!fc_type_equal(&t->type, &in->type)) {
    char have[256], want[256];
    return fc_error(diag, FC_ERR_INPUT, "--bind %s: the file holds %s, but input '%s' is declared %s", bnd->name,
                    fc_type_str(&t->type, have, sizeof have), bnd->name, fc_type_str(&in->type, want, sizeof want));
  }
  FcBuilder b;
  fc_builder_init(&b, g, diag);
  b.before = g->first;
  b.loc = bnd->name;
  FcValue *c = fc_b_const_tensor(&b, t);
  if (!c) return fc_b_status(&b);
  fc_value_replace_all_uses(in, c);
  for (int i = k; i + 1 < g->n_inputs; i++) {
    g->inputs[i] = g->inputs[i + 1];
    g->inputs[i]->index = i;
  }
  g->n_inputs--;
  return FC_OK;
}

FcStatus fc_load_text(const char *text, size_t len, const char *source, const FcImportOptions *opts,
                      FcModule **out, FcDiag *diag) {
  *out = NULL;
  FcModule *m = NULL;
  FcStatus st = fc_parse_module(text, len, source, &m, diag);
  if (st != FC_OK) {
    fc_module_destroy(m);
    return st;
  }
  st = check_ranks(m, opts->limits.max_rank, diag);
  if (st == FC_OK && opts->n_shapes)
    st = fc_error(diag, FC_ERR_INPUT, "--shape applies to ONNX models; IR text has static shapes already");
  for (int i = 0; i < opts->n_bindings && st == FC_OK; i++)
    st = bind_input(m, &opts->bindings[i], &opts->limits, diag);
  if (st != FC_OK) {
    fc_module_destroy(m);
    return st;
  }
  *out = m;
  return FC_OK;
}

FcStatus fc_load_model(const char *path, const FcImportOptions *opts, FcModule **out, FcModelFormat *format,
                       FcDiag *diag) {
  *out = NULL;
  FcModelFormat fmt;
  FcStatus st = fc_model_format_of(path, &fmt, diag);
  if (st != FC_OK) return st;
  if (format) *format = fmt;
  if (fmt == FC_FORMAT_ONNX) return fc_onnx_import(path, opts, out, diag);
  char *text;
  size_t len;
  st = fc_read_file(path, opts->limits.max_file_bytes, &text, &len, diag);
  if (st != FC_OK) return st;
  st = fc_load_text(text, len, path, opts, out, diag);
  free(text);
  return st;
}

/* A separator line: optional blanks, `// -----`, optional blanks. */
static bool is_separator(const char *line, size_t n) {
  static const char marker[] = "// -----";
  size_t i = 0;
  while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
  if (n - i < sizeof marker - 1 || memcmp(line + i, marker, sizeof marker - 1) != 0) return false;
  for (i += sizeof marker - 1; i < n; i++)
    if (!is_space((unsigned char)line[i])) return false;
  return true;
}

static FcChunk make_chunk(const char *text, size_t begin, size_t end, int first_line) {
  FcChunk c = {.first_line = first_line};
  size_t pad = (size_t)first_line - 1;
  c.len = pad + (end - begin);
  c.text = malloc(c.len + 1);
  if (!c.text) fc_die(__FILE__, __LINE__, "out of memory splitting input");
  memset(c.text, '\n', pad);
  memcpy(c.text + pad, text + begin, end - begin);
  c.text[c.len] = '\0';
  return c;
}

int fc_split_input(const char *text, size_t len, FcChunk **out) {
  int n = 0, cap = 4;
  FcChunk *chunks = malloc((size_t)cap * sizeof *chunks);
  if (!chunks) fc_die(__FILE__, __LINE__, "out of memory splitting input");
  size_t begin = 0, pos = 0;
  int line = 1, begin_line = 1;
  while (pos < len) {
    const char *nl = memchr(text + pos, '\n', len - pos);
    size_t eol = nl ? (size_t)(nl - text) : len;
    size_t next = nl ? eol + 1 : len;
    if (is_separator(text + pos, eol - pos)) {
      if (n == cap) {
        cap *= 2;
        FcChunk *nc = realloc(chunks, (size_t)cap * sizeof *chunks);
        if (!nc) fc_die(__FILE__, __LINE__, "out of memory splitting input");
        chunks = nc;
      }
      chunks[n++] = make_chunk(text, begin, pos, begin_line);
      begin = next;
      begin_line = line + 1;
    }
    pos = next;
    line++;
  }
  if (n == cap) {
    FcChunk *nc = realloc(chunks, (size_t)(cap + 1) * sizeof *chunks);
    if (!nc) fc_die(__FILE__, __LINE__, "out of memory splitting input");
    chunks = nc;
  }
  chunks[n++] = make_chunk(text, begin, len, begin_line);
  *out = chunks;
  return n;
}

void fc_chunks_free(FcChunk *chunks, int n) {
  for (int i = 0; i < n; i++) free(chunks[i].text);
  free(chunks);
}
