/* print.c — a module as MLIR generic-operation text.
 *
 * The output parses with `mlir-opt-19 --allow-unregistered-dialect` and with fc_parse_module, and
 * print → parse → print is byte-identical. One func.func @main holds the graph: inputs are %argN with
 * their ONNX names as argument attributes {flow.name = "..."}, outputs carry theirs as result
 * attributes, every op is printed in generic form ("flow.conv"(...) {...} : (...) -> ...) with its node
 * name as loc("..."), and the RETURN op closes the body.
 *
 * Values are numbered in print order, one number per op that has results (`%3:2 = ...` defines %3#0
 * and %3#1), as MLIR numbers them. Numbers are assigned in a first pass so that a broken module (a use
 * before its definition, after a buggy pass) still prints every name; the verifier reports such
 * modules, the printer only shows them, and fails only when the stream does.
 *
 * Floats print with the fewest digits (at least seven) that read back to the same bits, always with a
 * '.', which MLIR requires of float literals; NaN and infinities print as hex bit patterns
 * (0x7FC00000), which MLIR accepts for float elements and attributes. Constants print inline as
 * dense<...> when they have at most opts->inline_limit elements or all their elements are equal
 * (splat, `dense<0.000000e+00>`); others print as dense_resource<__elided__>, or, with opts->weights,
 * as dense_resource<cN> with the data in the trailing dialect_resources section.
 *
 * Region ops (flow.loop, flow.if) print MLIR's generic region list after their operands,
 * `({\n ^bb0(%b0_0: T, ...):\n ops \n "flow.yield"(...) ...\n }, {...})`, each region's ops indented two
 * more columns. MLIR scopes SSA names lexically and a non-isolated region sees the names around it, so
 * one running op number covers the whole module (nested ops continue the count) and the block arguments
 * of the Nth region printed are %bN_0, %bN_1, ...; no name is defined twice.
 *
 * Annotations (annot.c) follow an op's inherent attributes in the same dictionary, as MLIR prints
 * discardable attributes; a graph input's follow its flow.name among the argument attributes. A
 * constant of a quantised type writes its data with the storage type (`dense<[1, -2]> : tensor<2xi8>`)
 * because MLIR's dense literals take no quantised element type; its result type carries the
 * quantisation.
 */
#include "ew_program.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The printed names of one graph's values. */
typedef struct GraphNames {
  const FcGraph *g;
  int region_no;           /* N of its block arguments %bN_i; -1 for the function (%argI) */
  uint32_t n_ids;          /* size of the two maps below: the graph's next_value_id */
  const FcValue **val_of;  /* value id -> the value numbered under that id (NULL: not in the graph) */
  int64_t *num_of;         /* value id -> printed op number */
} GraphNames;

typedef struct Printer {
  FILE *out;
  const FcPrintOptions *opts;
  GraphNames *names;       /* every graph of the module, in print order */
  int n_names;
  const GraphNames *cur;   /* the graph being printed */
  int depth;               /* region nesting of the op being printed */
  const FcTensor **blobs;  /* constants printed as dense_resource<cN>, N = index here */
  size_t n_blobs, cap_blobs;
} Printer;

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) fc_die(__FILE__, __LINE__, "out of memory");
  return p;
}

/* Strings as MLIR escapes them (llvm::printEscapedString): printable ASCII stays, '\' doubles, every
 * other byte (quote, control, non-ASCII) is \XX with two upper-case hex digits. */
static void print_string(FILE *out, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '\\') fputs("\\\\", out);
    else if (*p >= 0x20 && *p < 0x7f && *p != '"') fputc(*p, out);
    else {
      fputc('\\', out);
      fputc(hex[*p >> 4], out);
      fputc(hex[*p & 15], out);
    }
  }
  fputc('"', out);
}

/* Names print bare when they are MLIR bare identifiers, quoted otherwise. */
static void print_name(FILE *out, const char *s) {
  bool bare = s[0] && (s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'));
  for (const char *p = s; bare && *p; p++)
    bare = *p == '_' || *p == '$' || *p == '.' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
           (*p >= '0' && *p <= '9');
  if (bare) fputs(s, out);
  else print_string(out, s);
}

static void print_symbol(FILE *out, const char *s) {
  fputc('@', out);
  print_name(out, s);
}

/* Shortest "%.*e" form (7 to 9 significant digits) that strtof reads back to the same bits. */
static void fmt_f32(char *buf, size_t cap, float f) {
  for (int p = 6; p <= 8; p++) {
    snprintf(buf, cap, "%.*e", p, (double)f);
    float r = strtof(buf, NULL);
    if (memcmp(&r, &f, sizeof f) == 0) return;
  }
}

/* An f32 or f64 (dt) stored at p. Read from memory rather than passed as a value so that a signalling
 * NaN keeps its bits (a float -> double conversion would quieten it). */
static void print_float(FILE *out, const void *p, FcDtype dt) {
  char buf[64];
  if (dt == FC_DT_F32) {
    float f;
    uint32_t bits;
    memcpy(&f, p, 4);
    memcpy(&bits, p, 4);
    if (isfinite(f)) fmt_f32(buf, sizeof buf, f);
    else snprintf(buf, sizeof buf, "0x%08" PRIX32, bits);
  } else {
    double d;
    uint64_t bits;
    memcpy(&d, p, 8);
    memcpy(&bits, p, 8);
    if (isfinite(d)) fc_format_f64(buf, sizeof buf, d);
    else snprintf(buf, sizeof buf, "0x%016" PRIX64, bits);
  }
  fputs(buf, out);
}

/* An annotation float: held as a double, printed as the f32 or f64 it was written as. */
static void print_annot_float(FILE *out, double d, FcDtype dt) {
  float f = (float)d;
  print_float(out, dt == FC_DT_F32 ? (const void *)&f : &d, dt == FC_DT_F32 ? FC_DT_F32 : FC_DT_F64);
}

static void print_type(FILE *out, const FcType *t) { fc_type_print(out, t); }

/* One element of constant data, in the form the parser reads back bit-exactly. */
static void print_element(FILE *out, const FcTensor *t, int64_t i) {
  const unsigned char *p = (const unsigned char *)t->data + (size_t)i * fc_dtype_size(t->type.dtype);
  switch (t->type.dtype) {
  case FC_DT_F32:
  case FC_DT_F64: print_float(out, p, t->type.dtype); return;
  case FC_DT_F16:
  case FC_DT_BF16: {
    uint16_t h;
    memcpy(&h, p, 2);
    float f = t->type.dtype == FC_DT_F16 ? fc_f16_to_f32(h) : fc_bf16_to_f32(h);
    /* f16/bf16 values are exact in f32, so the f32 digits read back to the same half bits. */
    if (!isfinite(f)) fprintf(out, "0x%04X", (unsigned)h);
    else print_float(out, &f, FC_DT_F32);
    return;
  }
  case FC_DT_BOOL: fputs(*p ? "true" : "false", out); return;
  case FC_DT_U8:
  case FC_DT_U16:
  case FC_DT_U32:
  case FC_DT_U64: fprintf(out, "%" PRIu64, (uint64_t)fc_tensor_get_i64(t, i)); return;
  default: fprintf(out, "%" PRId64, fc_tensor_get_i64(t, i)); return;
  }
}

static void print_nested(FILE *out, const FcTensor *t, int dim, int64_t *next) {
  fputc('[', out);
  for (int64_t k = 0; k < t->type.dims[dim]; k++) {
    if (k) fputs(", ", out);
    if (dim + 1 == t->type.rank) print_element(out, t, (*next)++);
    else print_nested(out, t, dim + 1, next);
  }
  fputc(']', out);
}

static bool is_splat(const FcTensor *t, int64_t numel) {
  size_t es = fc_dtype_size(t->type.dtype);
  const unsigned char *d = t->data;
  if (t->type.dtype == FC_DT_BOOL) {
    for (int64_t i = 1; i < numel; i++)
      if ((d[i] != 0) != (d[0] != 0)) return false;
    return true;
  }
  for (int64_t i = 1; i < numel; i++)
    if (memcmp(d + (size_t)i * es, d, es) != 0) return false;
  return true;
}

static void print_tensor(Printer *pr, const FcTensor *t) {
  FILE *out = pr->out;
  int64_t numel = 0, nbytes = 0;
  bool sane = t->type.rank >= 0 && t->type.rank <= FC_DEFAULT_MAX_RANK && (t->type.rank == 0 || t->type.dims) &&
              (unsigned)t->type.dtype < FC_DT_COUNT && fc_type_numel(&t->type, &numel) &&
              fc_type_nbytes(&t->type, &nbytes) && nbytes == t->nbytes;
  int64_t limit = pr->opts->inline_limit > 0 ? pr->opts->inline_limit : 0;
  if (!sane || !t->data) {
    fputs("dense_resource<__elided__>", out);
  } else if (numel == 0) {
    fputs("dense<>", out);
  } else if (t->type.rank == 0 || (numel > 1 && t->nbytes <= (256 << 20) && is_splat(t, numel))) {
    fputs("dense<", out);
    print_element(out, t, 0);
    fputc('>', out);
  } else if (numel <= limit) {
    int64_t next = 0;
    fputs("dense<", out);
    print_nested(out, t, 0, &next);
    fputc('>', out);
  } else if (pr->opts->weights) {
    if (pr->n_blobs == pr->cap_blobs) {
      pr->cap_blobs = pr->cap_blobs ? 2 * pr->cap_blobs : 16;
      pr->blobs = realloc(pr->blobs, fc_size_mul_or_die(pr->cap_blobs, sizeof *pr->blobs));
      if (!pr->blobs) fc_die(__FILE__, __LINE__, "out of memory");
    }
    fprintf(out, "dense_resource<c%zu>", pr->n_blobs);
    pr->blobs[pr->n_blobs++] = t;
  } else {
    fputs("dense_resource<__elided__>", out);
  }
  /* MLIR's dense literals cannot have a quantised element type: the data is written with its storage
   * type, and the constant's result type carries the quantisation (parse.c puts it back). */
  FcType storage = fc_type_storage(&t->type);
  fputs(" : ", out);
  print_type(out, &storage);
}

/* An annotation value (annot.c's kinds) in MLIR attribute syntax. */
static void print_annot_value(Printer *pr, const FcAnnotValue *v) {
  FILE *out = pr->out;
  switch (v->kind) {
  case FC_AV_UNIT: fputs("unit", out); return;
  case FC_AV_BOOL: fputs(v->b ? "true" : "false", out); return;
  case FC_AV_INT:
    if (fc_dtype_class(v->dtype) == FC_DTC_UINT) fprintf(out, "%" PRIu64, (uint64_t)v->i);
    else fprintf(out, "%" PRId64, v->i);
    fprintf(out, " : %s", fc_dtype_name(v->dtype));
    return;
  case FC_AV_FLOAT:
    print_annot_float(out, v->f, v->dtype);
    fprintf(out, " : %s", fc_dtype_name(v->dtype));
    return;
  case FC_AV_STR: print_string(out, v->s ? v->s : ""); return;
  case FC_AV_ARRAY:
    fputc('[', out);
    for (int i = 0; i < v->array.n; i++) {
      if (i) fputs(", ", out);
      print_annot_value(pr, &v->array.v[i]);
    }
    fputc(']', out);
    return;
  case FC_AV_DENSE: {
    bool is_float = fc_dtype_is_float(v->dtype);
    int n = is_float ? v->floats.n : v->ints.n;
    fprintf(out, "array<%s%s", fc_dtype_name(v->dtype), n ? ": " : "");
    for (int i = 0; i < n; i++) {
      if (i) fputs(", ", out);
      if (is_float) print_annot_float(out, v->floats.v[i], v->dtype);
      else if (v->dtype == FC_DT_BOOL) fputs(v->ints.v[i] ? "true" : "false", out);
      else if (fc_dtype_class(v->dtype) == FC_DTC_UINT) fprintf(out, "%" PRIu64, (uint64_t)v->ints.v[i]);
      else fprintf(out, "%" PRId64, v->ints.v[i]);
    }
    fputc('>', out);
    return;
  }
  case FC_AV_TYPE: print_type(out, &v->type); return;
  case FC_AV_TENSOR:
    if (v->tensor) print_tensor(pr, v->tensor);
    else fputs("unit", out); /* only a hand-broken module gets here; the verifier reports it */
    return;
  case FC_AV_DICT:
    fputc('{', out);
    for (int i = 0; i < v->dict.n; i++) {
      if (i) fputs(", ", out);
      print_name(out, v->dict.v[i].name);
      fputs(" = ", out);
      print_annot_value(pr, &v->dict.v[i].value);
    }
    fputc('}', out);
    return;
  }
}

/* `name = value` pairs of an annotation list, each preceded by ", " unless it is the first of the
 * dictionary (`first`). */
static void print_annots(Printer *pr, const FcAnnots *list, bool first) {
  for (int i = 0; i < list->n; i++) {
    fputs(first && i == 0 ? "" : ", ", pr->out);
    fprintf(pr->out, "%s = ", list->v[i].name);
    print_annot_value(pr, &list->v[i].value);
  }
}

static void print_attr(Printer *pr, const FcAttr *a) {
  FILE *out = pr->out;
  fprintf(out, "%s = ", fc_attr_name_str(a->name));
  switch (a->kind) {
  case FC_AK_INT: fprintf(out, "%" PRId64 " : i64", a->i); break;
  case FC_AK_FLOAT:
    print_float(out, &a->f, FC_DT_F32);
    fputs(" : f32", out);
    break;
  case FC_AK_STR: print_string(out, a->s ? a->s : ""); break;
  case FC_AK_PROGRAM: {
    char text[FC_EW_TEXT_MAX];
    if (a->prog) fc_ew_program_print(a->prog, text, sizeof text);
    print_string(out, a->prog ? text : "");
    break;
  }
  case FC_AK_INTS:
    fputs(a->ints.n > 0 ? "array<i64: " : "array<i64", out);
    for (int i = 0; i < a->ints.n; i++) fprintf(out, "%s%" PRId64, i ? ", " : "", a->ints.v[i]);
    fputc('>', out);
    break;
  case FC_AK_FLOATS:
    fputs(a->floats.n > 0 ? "array<f32: " : "array<f32", out);
    for (int i = 0; i < a->floats.n; i++) {
      if (i) fputs(", ", out);
      print_float(out, &a->floats.v[i], FC_DT_F32);
    }
    fputc('>', out);
    break;
  case FC_AK_TYPE:
    if (a->quant) fc_quant_print(out, a->quant);
    else fputs(fc_dtype_name(a->type), out);
    break;
  case FC_AK_TENSOR:
    if (a->tensor) print_tensor(pr, a->tensor);
    else fputs("unit", out); /* only a hand-broken module gets here; the verifier reports it */
    break;
  }
}

static const GraphNames *names_of(const Printer *pr, const FcGraph *g) {
  for (int i = 0; g && i < pr->n_names; i++)
    if (pr->names[i].g == g) return &pr->names[i];
  return NULL;
}

static void print_block_arg(FILE *out, const GraphNames *gn, int i) {
  if (gn->region_no < 0) fprintf(out, "%%arg%d", i);
  else fprintf(out, "%%b%d_%d", gn->region_no, i);
}

/* A graph input is looked up in the graph being printed and then in the graphs around it, so that a
 * module breaking isolation (a bug the verifier reports) still prints the names it uses. */
static void print_value(Printer *pr, const FcValue *v) {
  FILE *out = pr->out;
  if (!v) {
    fputs("%<null>", out);
    return;
  }
  if (!v->def) {
    for (const GraphNames *gn = pr->cur; gn; gn = gn->g->parent ? names_of(pr, gn->g->parent->graph) : NULL)
      if (v->index >= 0 && v->index < gn->g->n_inputs && gn->g->inputs[v->index] == v) {
        print_block_arg(out, gn, v->index);
        return;
      }
    fputs("%<invalid>", out);
    return;
  }
  const GraphNames *gn = names_of(pr, v->def->graph);
  if (gn && v->id < gn->n_ids && gn->val_of[v->id] == v) {
    fprintf(out, "%%%" PRId64, gn->num_of[v->id]);
    if (v->def->n_results > 1) fprintf(out, "#%d", v->index);
  } else {
    fputs("%<invalid>", out);
  }
}

static void print_loc(FILE *out, const char *loc) {
  if (!loc) return;
  fputs(" loc(", out);
  print_string(out, loc);
  fputc(')', out);
}

static void print_indent(Printer *pr) { fprintf(pr->out, "%*s", 4 + 2 * pr->depth, ""); }

static void print_op(Printer *pr, const FcOp *op);

/* `{\n^bb0(%bN_0: T, ...):\n ops }` of one region, its ops one level deeper. */
static void print_region(Printer *pr, const FcGraph *g) {
  FILE *out = pr->out;
  const GraphNames *outer = pr->cur;
  pr->cur = names_of(pr, g);
  fputs("{\n", out);
  print_indent(pr);
  fputs("^bb0", out);
  if (g->n_inputs) fputc('(', out);
  for (int i = 0; i < g->n_inputs; i++) {
    if (i) fputs(", ", out);
    if (pr->cur) print_block_arg(out, pr->cur, i);
    fputs(": ", out);
    print_type(out, &g->inputs[i]->type);
  }
  fputs(g->n_inputs ? "):\n" : ":\n", out);
  pr->depth++;
  fc_graph_for_each_op(g, op) print_op(pr, op);
  pr->depth--;
  print_indent(pr);
  fputc('}', out);
  pr->cur = outer;
}

static void print_op(Printer *pr, const FcOp *op) {
  FILE *out = pr->out;
  print_indent(pr);
  if (op->n_results > 0) {
    const FcValue *v = &op->results[0];
    const GraphNames *gn = pr->cur;
    if (gn && v->id < gn->n_ids && gn->val_of[v->id] == v) fprintf(out, "%%%" PRId64, gn->num_of[v->id]);
    else fputs("%<invalid>", out);
    if (op->n_results > 1) fprintf(out, ":%d", op->n_results);
    fputs(" = ", out);
  }
  fprintf(out, "\"%s\"(", fc_op_info(op->kind)->full_name);
  for (int i = 0; i < op->n_operands; i++) {
    if (i) fputs(", ", out);
    print_value(pr, op->operands[i].value);
  }
  fputc(')', out);
  if (op->n_regions > 0) {
    fputs(" (", out);
    for (int r = 0; r < op->n_regions; r++) {
      if (r) fputs(", ", out);
      print_region(pr, op->regions[r]);
    }
    fputc(')', out);
  }
  if (op->n_attrs > 0 || op->annots.n > 0) {
    fputs(" {", out);
    for (int i = 0; i < op->n_attrs; i++) {
      if (i) fputs(", ", out);
      print_attr(pr, &op->attrs[i]);
    }
    print_annots(pr, &op->annots, op->n_attrs == 0);
    fputc('}', out);
  }
  fputs(" : (", out);
  for (int i = 0; i < op->n_operands; i++) {
    if (i) fputs(", ", out);
    const FcValue *v = op->operands[i].value;
    if (v) print_type(out, &v->type);
    else fputs("none", out);
  }
  fputs(") -> ", out);
  if (op->n_results != 1) fputc('(', out);
  for (int i = 0; i < op->n_results; i++) {
    if (i) fputs(", ", out);
    print_type(out, &op->results[i].type);
  }
  if (op->n_results != 1) fputc(')', out);
  print_loc(out, op->loc);
  fputc('\n', out);
}

static void print_blobs(Printer *pr) {
  static const char hex[] = "0123456789ABCDEF";
  FILE *out = pr->out;
  if (pr->n_blobs == 0) return;
  fputs("\n{-#\n  dialect_resources: {\n    builtin: {\n", out);
  for (size_t b = 0; b < pr->n_blobs; b++) {
    const FcTensor *t = pr->blobs[b];
    uint32_t align = (uint32_t)fc_dtype_size(t->type.dtype);
    fprintf(out, "      c%zu: \"0x%02X%02X%02X%02X", b, align & 0xff, (align >> 8) & 0xff, (align >> 16) & 0xff,
            align >> 24);
    const unsigned char *d = t->data;
    char buf[4096];
    size_t n = 0;
    for (int64_t i = 0; i < t->nbytes; i++) {
      buf[n++] = hex[d[i] >> 4];
      buf[n++] = hex[d[i] & 15];
      if (n == sizeof buf) {
        fwrite(buf, 1, n, out);
        n = 0;
      }
    }
    fwrite(buf, 1, n, out);
    fputs(b + 1 < pr->n_blobs ? "\",\n" : "\"\n", out);
  }
  fputs("    }\n  }\n#-}\n", out);
}

void fc_print_annot_value(FILE *out, const FcAnnotValue *v) {
  static const FcPrintOptions defaults = {.weights = false, .inline_limit = FC_PRINT_INLINE_LIMIT_DEFAULT};
  Printer pr = {.out = out, .opts = &defaults};
  print_annot_value(&pr, v);
}

/* Numbers the ops of `g` and, right after each op, those of its regions: the order they print in. */
static void number_graph(Printer *pr, const FcGraph *g, int64_t *next, int *region_no) {
  GraphNames *gn = &pr->names[pr->n_names++];
  *gn = (GraphNames){.g = g, .region_no = g->parent ? (*region_no)++ : -1, .n_ids = g->next_value_id};
  gn->val_of = xcalloc(gn->n_ids, sizeof *gn->val_of);
  gn->num_of = xcalloc(gn->n_ids, sizeof *gn->num_of);
  fc_graph_for_each_op(g, op) {
    for (int i = 0; i < op->n_results; i++) {
      const FcValue *v = &op->results[i];
      if (v->id < gn->n_ids) {
        gn->val_of[v->id] = v;
        gn->num_of[v->id] = *next;
      }
    }
    if (op->n_results) (*next)++;
    for (int r = 0; r < op->n_regions; r++) number_graph(pr, op->regions[r], next, region_no);
  }
}

FcStatus fc_print_module(FILE *out, FcModule *m, const FcPrintOptions *opts, FcDiag *diag) {
  static const FcPrintOptions defaults = {.weights = false, .inline_limit = FC_PRINT_INLINE_LIMIT_DEFAULT};
  FcGraph *g = m->graph;
  Printer pr = {.out = out, .opts = opts ? opts : &defaults};
  int n_graphs = fc_module_graphs(m, NULL, 0);
  pr.names = xcalloc((size_t)n_graphs, sizeof *pr.names);
  int64_t next = 0;
  int region_no = 0;
  number_graph(&pr, g, &next, &region_no);
  pr.cur = &pr.names[0];

  fputs("module ", out);
  if (m->annots.n) {
    fputs("attributes {", out);
    print_annots(&pr, &m->annots, true);
    fputs("} ", out);
  }
  fputs("{\n  func.func ", out);
  print_symbol(out, g->name ? g->name : "main");
  fputc('(', out);
  for (int i = 0; i < g->n_inputs; i++) {
    const FcValue *v = g->inputs[i];
    fprintf(out, "%s%%arg%d: ", i ? ", " : "", i);
    print_type(out, &v->type);
    if (v->name || v->annots.n) {
      fputs(" {", out);
      if (v->name) {
        fputs("flow.name = ", out);
        print_string(out, v->name);
      }
      print_annots(&pr, &v->annots, !v->name);
      fputc('}', out);
    }
  }
  fputs(") -> (", out);
  FcOp *ret = fc_graph_return(g);
  for (int i = 0; ret && i < ret->n_operands; i++) {
    if (i) fputs(", ", out);
    const FcValue *v = ret->operands[i].value;
    if (v) print_type(out, &v->type);
    else fputs("none", out);
    const char *name = fc_graph_output_name(g, i);
    if (name) {
      fputs(" {flow.name = ", out);
      print_string(out, name);
      fputc('}', out);
    }
  }
  fputs(") {\n", out);
  fc_graph_for_each_op(g, op) print_op(&pr, op);
  fputs("  }\n}\n", out);
  print_blobs(&pr);

  for (int i = 0; i < pr.n_names; i++) {
    free(pr.names[i].val_of);
    free(pr.names[i].num_of);
  }
  free(pr.names);
  free(pr.blobs);
  if (fflush(out) != 0 || ferror(out)) return fc_error(diag, FC_ERR_IO, "cannot write the IR text");
  return FC_OK;
}
