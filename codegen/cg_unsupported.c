/* cg_unsupported.c — the one message that lists every op code generation cannot handle, in the importer's
 * form: kinds in alphabetical order, a few node names each, the emitter's reason when it gave one. The CPU
 * (cg_module.c) and the GPU (gpu_module.c) collect their refusals into one list each and report it once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_private.h"


#define FC_CG_UNSUPPORTED_NAMES_PER_KIND 5

void fc_cg_unsupported_add(FcArena *a, FcCgUnsupportedList *l, const FcOp *op, const char *reason) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    FcCgUnsupported *nv = FC_NEW_ARRAY(a, FcCgUnsupported, (size_t)cap);
    if (l->n) memcpy(nv, l->v, (size_t)l->n * sizeof *nv);
    l->v = nv;
    l->cap = cap;
  }
  l->v[l->n] = (FcCgUnsupported){op->kind, fc_op_name(op), reason, l->n};
  l->n++;
}

static int unsupported_cmp(const void *a, const void *b) {
  const FcCgUnsupported *x = a, *y = b;
  int c = strcmp(fc_op_info(x->kind)->name, fc_op_info(y->kind)->name);
  return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static bool same_reason(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* One FC_ERR_UNSUPPORTED in the importer's form: "<head>: det x1 ('d'),
 * cast x2 ('a', 'b': f16 to i4 is not supported)" — kinds in alphabetical order, nodes in graph order. */
FcStatus fc_cg_report_unsupported(FcCgUnsupportedList *l, const char *head, FcDiag *diag) {
  qsort(l->v, (size_t)l->n, sizeof *l->v, unsupported_cmp);
  char msg[sizeof diag->msg];
  size_t len = 0;
#define PUT(...) (len += len < sizeof msg ? (size_t)snprintf(msg + len, sizeof msg - len, __VA_ARGS__) : 0)
  PUT("%s: ", head);
  for (int i = 0; i < l->n;) {
    int j = i;
    while (j < l->n && l->v[j].kind == l->v[i].kind) j++;
    int shown = j - i < FC_CG_UNSUPPORTED_NAMES_PER_KIND ? j - i : FC_CG_UNSUPPORTED_NAMES_PER_KIND;
    bool one_reason = true;
    for (int k = i + 1; k < i + shown; k++) one_reason = one_reason && same_reason(l->v[k].reason, l->v[i].reason);
    PUT("%s%s x%d (", i ? ", " : "", fc_op_info(l->v[i].kind)->name, j - i);
    for (int k = i; k < i + shown; k++) {
      if (one_reason) PUT("%s'%s'", k > i ? ", " : "", l->v[k].node);
      else PUT("%s'%s': %s", k > i ? "; " : "", l->v[k].node, l->v[k].reason ? l->v[k].reason : "no kernel");
    }
    if (j - i > shown) PUT("%s...", one_reason ? ", " : "; ");
    if (one_reason && l->v[i].reason) PUT(": %s", l->v[i].reason);
    PUT(")");
    i = j;
  }
#undef PUT
  return fc_error(diag, FC_ERR_UNSUPPORTED, "%s", msg);
}

/* An emitter's message without the "node '<name>' (<op>): " prefix the list supplies itself. */
const char *fc_cg_strip_node_prefix(FcArena *a, const FcOp *op, const char *msg) {
  const char *p = fc_arena_printf(a, "node '%s' (%s): ", fc_op_name(op), fc_op_info(op->kind)->name);
  size_t n = strlen(p);
  return fc_arena_strdup(a, strncmp(msg, p, n) == 0 ? msg + n : msg);
}

