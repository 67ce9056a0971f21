/* einsum_plan.c — compiles an einsum equation into a loop nest over labels.
 *
 * Terms are parsed into label ids (letters, then right-aligned ellipsis dims); label sizes are unified
 * with numpy's rule that a size-1 dim broadcasts; the output labels are the explicit ones, or (implicit
 * form) the ellipsis followed by every letter used exactly once, alphabetically. The loop order puts the
 * output labels first so a walk over them is a row-major walk of the result. */
#include "einsum_plan.h"

#include <stdio.h>
#include <string.h>

typedef struct EinTerm {
  int labels[FC_EIN_MAX_RANK]; /* per axis; ellipsis dims are filled in once its width is known */
  int n_explicit;              /* letters */
  int ell_pos;                 /* axis index of the ellipsis, -1 if none */
} EinTerm;

static int ein_letter(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + c - 'a';
  return -1;
}

/* Parses one term up to ',' '-' or the end; returns the position after it or NULL on a syntax error. */
static const char *ein_term(const char *p, EinTerm *t) {
  t->n_explicit = 0;
  t->ell_pos = -1;
  for (;; p++) {
    while (*p == ' ') p++;
    if (*p == '.') {
      if (p[1] != '.' || p[2] != '.' || t->ell_pos >= 0) return NULL;
      t->ell_pos = t->n_explicit;
      p += 2;
      continue;
    }
    int l = ein_letter(*p);
    if (l < 0) return p;
    if (t->n_explicit >= FC_EIN_MAX_RANK) return NULL;
    t->labels[t->n_explicit++] = l;
  }
}

/* Expands a term's ellipsis of width w (total ellipsis width E, right-aligned) into label ids. */
static int ein_expand(EinTerm *t, int w, int E) {
  if (t->ell_pos < 0) return t->n_explicit;
  for (int i = t->n_explicit - 1; i >= t->ell_pos; i--) t->labels[i + w] = t->labels[i];
  for (int j = 0; j < w; j++) t->labels[t->ell_pos + j] = FC_EIN_LETTERS + (E - w) + j;
  return t->n_explicit + w;
}

static char label_char(int l) { return l < FC_EIN_LETTERS ? (char)(l < 26 ? 'A' + l : 'a' + l - 26) : '.'; }

#define FAIL(st, ...) (snprintf(why, whycap, __VA_ARGS__), (st))

FcStatus fc_einsum_plan(const char *eq, int nops, const FcType *const *in, const FcType *rt, FcArena *arena,
                        FcEinsumPlan *plan, char *why, size_t whycap) {
  if (nops > FC_EIN_MAX_OPS) return FAIL(FC_ERR_UNSUPPORTED, "more than %d operands", FC_EIN_MAX_OPS);
  EinTerm *terms = FC_NEW_ARRAY(arena, EinTerm, (size_t)(nops > 0 ? nops : 1)), outt;
  const char *p = eq;
  for (int k = 0; k < nops; k++) {
    if (in[k]->rank > FC_EIN_MAX_RANK) return FAIL(FC_ERR_UNSUPPORTED, "operand rank too large");
    p = ein_term(p, &terms[k]);
    if (!p || (k + 1 < nops ? *p != ',' : (*p != '\0' && *p != '-')))
      return FAIL(FC_ERR_INPUT, "equation \"%s\" does not parse for %d operands", eq, nops);
    if (k + 1 < nops) p++;
  }
  bool explicit_out = *p == '-';
  if (explicit_out) {
    if (p[1] != '>') return FAIL(FC_ERR_INPUT, "equation \"%s\" does not parse", eq);
    p = ein_term(p + 2, &outt);
    while (p && *p == ' ') p++;
    if (!p || *p) return FAIL(FC_ERR_INPUT, "equation \"%s\" does not parse", eq);
  }
  /* Ellipsis width per operand and overall. */
  int E = 0, ranks[FC_EIN_MAX_OPS];
  for (int k = 0; k < nops; k++) {
    int w = in[k]->rank - terms[k].n_explicit;
    if (w < 0 || (w > 0 && terms[k].ell_pos < 0))
      return FAIL(FC_ERR_INPUT, "term %d of \"%s\" does not match operand rank %d", k, eq, in[k]->rank);
    if (terms[k].ell_pos >= 0 && w > E) E = w;
  }
  for (int k = 0; k < nops; k++) ranks[k] = ein_expand(&terms[k], in[k]->rank - terms[k].n_explicit, E);
  /* Label sizes: a size-1 dim broadcasts against the others, as numpy allows for letters too. */
  int64_t size[FC_EIN_MAX_LABELS];
  int count[FC_EIN_MAX_LABELS] = {0};
  for (int l = 0; l < FC_EIN_MAX_LABELS; l++) size[l] = -1;
  for (int k = 0; k < nops; k++)
    for (int a = 0; a < ranks[k]; a++) {
      int l = terms[k].labels[a];
      int64_t d = in[k]->dims[a];
      count[l]++;
      if (size[l] < 0 || size[l] == 1) size[l] = d;
      else if (size[l] != d && d != 1)
        return FAIL(FC_ERR_INPUT, "label '%c' has sizes %lld and %lld", label_char(l), (long long)size[l],
                    (long long)d);
    }
  int out_labels[FC_EIN_MAX_LABELS], n_out = 0;
  bool is_out[FC_EIN_MAX_LABELS] = {false};
  if (explicit_out) {
    int orank = ein_expand(&outt, outt.ell_pos >= 0 ? E : 0, E);
    /* numpy (ONNX's reference) refuses to sum the ellipsis away implicitly. */
    if (outt.ell_pos < 0 && E > 0) return FAIL(FC_ERR_INPUT, "output of \"%s\" drops the ellipsis", eq);
    for (int a = 0; a < orank; a++) {
      int l = outt.labels[a];
      if (is_out[l] || size[l] < 0)
        return FAIL(FC_ERR_INPUT, "output of \"%s\" repeats a label or names an unused one", eq);
      is_out[l] = true;
      out_labels[n_out++] = l;
    }
  } else {
    for (int l = FC_EIN_LETTERS; l < FC_EIN_LETTERS + E; l++) is_out[out_labels[n_out++] = l] = true;
    for (int l = 0; l < FC_EIN_LETTERS; l++)
      if (count[l] == 1) is_out[out_labels[n_out++] = l] = true;
  }
  if (rt->rank != n_out) return FAIL(FC_ERR_INPUT, "result rank differs from the equation's output");
  for (int a = 0; a < n_out; a++)
    if (rt->dims[a] != size[out_labels[a]])
      return FAIL(FC_ERR_INPUT, "result dim %d differs from the equation's output", a);
  /* Loop order: output labels (row-major over the result), then the contracted ones. */
  int order[FC_EIN_MAX_LABELS], nl = n_out;
  memcpy(order, out_labels, (size_t)n_out * sizeof *order);
  for (int l = 0; l < FC_EIN_MAX_LABELS; l++)
    if (size[l] >= 0 && !is_out[l]) order[nl++] = l;
  plan->nops = nops;
  plan->n_out = n_out;
  plan->nl = nl;
  for (int i = 0; i < nl; i++) plan->dims[i] = size[order[i]];
  plan->strides = (int64_t(*)[FC_EIN_MAX_LABELS])FC_NEW_ARRAY(arena, int64_t,
                                                              (size_t)(nops > 0 ? nops : 1) * FC_EIN_MAX_LABELS);
  for (int k = 0; k < nops; k++) {
    /* Row-major strides of operand k; the product of the trailing dims fits (the type's numel does). */
    int64_t xs[FC_EIN_MAX_RANK], s = 1;
    for (int a = in[k]->rank - 1; a >= 0; a--) {
      xs[a] = s;
      s *= in[k]->dims[a] > 0 ? in[k]->dims[a] : 1;
    }
    for (int i = 0; i < nl; i++) {
      plan->strides[k][i] = 0;
      for (int a = 0; a < ranks[k]; a++)
        if (terms[k].labels[a] == order[i] && in[k]->dims[a] != 1) plan->strides[k][i] += xs[a];
    }
  }
  return FC_OK;
}
