/* sbp_file.c — pass sbp_file (flowc build --ranks N --sbp FILE): distributes the graph as a user's assignment
 * file says, and by the rules (sbp_rules.def) elsewhere.
 *
 * The file (its path is the module attribute flow.sbp_file, which the pass drops) has one assignment a line:
 *
 *     # comments run to the end of a line; blank lines are skipped
 *     input: S(0)            a graph input, sliced once at the top
 *     /fc1/Gemm: S(1)        an op (by node name): its first result
 *     logits: B, B           a graph output; one entry per mesh axis, or one for all
 *
 * A name is a graph input's, a graph output's (the op that computes it) or a node's (its first result),
 * as `flowc build --emit ir` prints them. A signature is B, S(k) or P(sum|max|min), spelt as flow.sbp and
 * checked by the verifier's check of flow.sbp (the axis exists). When every line gives one signature (or the
 * same one per axis), the plan is flat: each split is over all ranks. When a line gives the mesh axes
 * different signatures ("x: S(0), S(1)"), the plan is per axis (sbp_axes.c): each entry is that axis's, and
 * every line's single signature stands for all axes. Unassigned values take what the rules give them (as
 * sbp_data without the input split). An op whose rules cannot give the assigned signature, a dim that does
 * not divide by the ranks, a bad line or an unknown name is an error naming FILE:LINE (for a per-axis plan,
 * an op's refusal names the node and the mesh axis instead).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sbp.h"

typedef struct Assign {
  FcValue *v;
  int line;
} Assign;

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t') s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n')) s[--n] = '\0';
  return s;
}

static bool parse_sig(const char *s, FcSbp *out) {
  if (strcmp(s, "B") == 0) return *out = FC_SBP_BCAST, true;
  if (strcmp(s, "P(sum)") == 0) return *out = FC_SBP_PARTIAL(FC_SBP_SUM), true;
  if (strcmp(s, "P(max)") == 0) return *out = FC_SBP_PARTIAL(FC_SBP_MAX), true;
  if (strcmp(s, "P(min)") == 0) return *out = FC_SBP_PARTIAL(FC_SBP_MIN), true;
  int d, n = 0;
  if (sscanf(s, "S(%d)%n", &d, &n) == 1 && s[n] == '\0' && d >= 0) return *out = FC_SBP_SPLIT(d), true;
  return false;
}

/* The value a name stands for: a graph input, a graph output, or a node's first result. */
static FcValue *lookup(FcGraph *g, const char *name) {
  for (int i = 0; i < g->n_inputs; i++)
    if (g->inputs[i]->name && strcmp(g->inputs[i]->name, name) == 0) return g->inputs[i];
  for (int i = 0; i < fc_graph_num_outputs(g); i++) {
    const char *on = fc_graph_output_name(g, i);
    if (on && strcmp(on, name) == 0) return fc_graph_output(g, i);
  }
  fc_graph_for_each_op(g, op)
    if (op->n_results > 0 && op->kind != FC_OP_CONSTANT && op->loc && strcmp(op->loc, name) == 0) return &op->results[0];
  return NULL;
}

/* One line "name: sig[, sig...]" into want[]; FC_ERR_INPUT naming path:line. */
static FcStatus parse_line(const FcSbpPlan *p, int n_axes, char *text, const char *path, int line, FcSbp *want,
                           Assign *assigned, bool *differ, FcDiag *diag) {
  char *colon = strrchr(text, ':');
  if (!colon) return fc_error(diag, FC_ERR_INPUT, "%s:%d: expected 'name: signature' (such as 'x: S(0)')", path, line);
  *colon = '\0';
  char *name = trim(text), *sigs = trim(colon + 1);
  if (!*name) return fc_error(diag, FC_ERR_INPUT, "%s:%d: the line names no value", path, line);
  FcValue *v = lookup(p->g, name);
  if (!v) return fc_error(diag, FC_ERR_INPUT, "%s:%d: no graph input, output or node named '%s'", path, line, name);
  if (assigned[v->id].v)
    return fc_error(diag, FC_ERR_INPUT, "%s:%d: '%s' is assigned already on line %d", path, line, name, assigned[v->id].line);
  FcSbp sig = FC_SBP_BCAST, per_axis[16];
  FcAnnotValue entries[16];
  bool same = true;
  int n = 0;
  for (char *tok = strtok(sigs, ","); tok; tok = strtok(NULL, ",")) {
    char *t = trim(tok);
    FcSbp s;
    if (!parse_sig(t, &s))
      return fc_error(diag, FC_ERR_INPUT, "%s:%d: '%s' is not a signature (B, S(k), P(sum), P(max) or P(min))", path, line, t);
    if (n == 16) return fc_error(diag, FC_ERR_INPUT, "%s:%d: more signatures than mesh axes", path, line);
    if (n > 0 && !fc_sbp_equal(s, sig)) same = false;
    if (n == 0) sig = s;
    per_axis[n] = s;
    entries[n++] = FC_AV_STRING(t);
  }
  if (n == 0) return fc_error(diag, FC_ERR_INPUT, "%s:%d: '%s' has no signature", path, line, name);
  if (n != 1 && n != n_axes)
    return fc_error(diag, FC_ERR_INPUT, "%s:%d: %d signatures for a mesh of %d axes", path, line, n, n_axes);
  /* The verifier's own check of flow.sbp (spelling, the axis exists). */
  FcAnnotValue list = FC_AV_LIST(entries, n);
  char why[256] = "";
  if (!fc_annot_check(fc_annot_name(FC_ANNOT_SBP), &list, &v->type, why, sizeof why))
    return fc_error(diag, FC_ERR_INPUT, "%s:%d: '%s': %s", path, line, name, *why ? why : "not a valid flow.sbp");
  for (int a = 0; a < n_axes; a++) want[(size_t)v->id * (size_t)n_axes + (size_t)a] = per_axis[n == 1 ? 0 : a];
  assigned[v->id] = (Assign){v, line};
  if (!same) {
    /* Per axis: nested divisibility and the rules are checked when the plan is made (fc_sbp_plan_forward). */
    for (int a = 0; a < n; a++)
      if (per_axis[a].kind == FC_SBP_P && !v->def)
        return fc_error(diag, FC_ERR_INPUT, "%s:%d: graph input '%s' arrives whole: it can be B or S(k), not partial",
                        path, line, name);
    *differ = true;
    return FC_OK;
  }
  if (sig.kind == FC_SBP_S && (v->type.dims[sig.dim] < p->group || v->type.dims[sig.dim] % p->group))
    return fc_error(diag, FC_ERR_INPUT, "%s:%d: '%s': dim %d (%lld) does not divide into %lld equal chunks", path, line,
                    name, sig.dim, (long long)v->type.dims[sig.dim], (long long)p->group);
  if (sig.kind == FC_SBP_P && !v->def)
    return fc_error(diag, FC_ERR_INPUT, "%s:%d: graph input '%s' arrives whole: it can be B or S(k), not partial", path,
                    line, name);
  if (v->def) {
    /* An op's rules must be able to give it (the same candidates sbp_auto searches). */
    FcArena tmp;
    fc_arena_init(&tmp);
    FcSbpChoice *list_c;
    int k = p->index_of[v->def->id], nc = fc_sbp_candidates(p, k, &tmp, &list_c);
    bool ok = false;
    for (int c = 0; c < nc && !ok; c++) ok = fc_sbp_equal(list_c[c].out[v->index], sig);
    fc_arena_free(&tmp);
    char b[32];
    if (!ok)
      return fc_error(diag, FC_ERR_INPUT, "%s:%d: '%s': no SBP rule of %s gives its result as %s", path, line, name,
                      fc_op_info(v->def->kind)->name, fc_sbp_str(sig, b, sizeof b));
  }
  return FC_OK;
}

FcStatus fc_sbp_file_plan(FcModule *m, FcArena *a, FcSbpPlan *plan, FcDiag *diag) {
  const FcAnnotValue *pa = fc_annots_get(&m->annots, fc_annot_name(FC_ANNOT_SBP_FILE));
  if (!pa || pa->kind != FC_AV_STR || !pa->s)
    return fc_error(diag, FC_ERR_INPUT, "pass sbp_file needs the module attribute flow.sbp_file (flowc build --sbp FILE)");
  const char *path = fc_arena_strdup(a, pa->s);
  int n_axes = fc_module_mesh(m, NULL);
  if (n_axes == 0)
    return fc_error(diag, FC_ERR_INPUT, "pass sbp_file needs the module's mesh (flow.mesh: flowc build --ranks N)");
  FcSbpPlan p;
  FcStatus st = fc_sbp_plan_init(&p, m, a, diag);
  if (st != FC_OK) return st;
  size_t na = (size_t)n_axes;
  FcSbp *want = FC_NEW_ARRAY(a, FcSbp, ((size_t)p.n_ids + 1) * na);
  Assign *assigned = FC_NEW_ARRAY(a, Assign, (size_t)p.n_ids + 1);
  bool differ = false;
  for (size_t i = 0; i < ((size_t)p.n_ids + 1) * na; i++) want[i].kind = (FcSbpKind)-1;
  for (uint32_t i = 0; i <= p.n_ids; i++) assigned[i] = (Assign){NULL, 0};
  FILE *f = fopen(path, "r");
  if (!f) return fc_error(diag, FC_ERR_IO, "%s: %s", path, strerror(errno));
  char buf[4096];
  int line = 0;
  while (st == FC_OK && fgets(buf, sizeof buf, f)) {
    line++;
    size_t len = strlen(buf);
    if (len == sizeof buf - 1 && buf[len - 1] != '\n') {
      st = fc_error(diag, FC_ERR_INPUT, "%s:%d: line longer than %zu bytes", path, line, sizeof buf - 2);
      break;
    }
    char *hash = strchr(buf, '#');
    if (hash) *hash = '\0';
    char *t = trim(buf);
    if (*t) st = parse_line(&p, n_axes, t, path, line, want, assigned, &differ, diag);
  }
  if (st == FC_OK && ferror(f)) st = fc_error(diag, FC_ERR_IO, "%s: read error", path);
  fclose(f);
  if (st == FC_OK && differ) {
    /* Per axis: the plan with one signature per axis; want is indexed so already. */
    FcSbpStrategy s[FC_SBP_MAX_AXES];
    for (int i = 0; i < FC_SBP_MAX_AXES; i++) s[i] = FC_SBP_ASSIGNED;
    st = fc_sbp_plan_init_axes(&p, m, a, diag);
    if (st == FC_OK && p.group > 1) st = fc_sbp_plan_forward(&p, s, want, a, diag);
  } else if (st == FC_OK && p.group > 1) {
    /* Flat: axis 0's entries (all axes alike) in a want of one entry per value. */
    for (uint32_t i = 0; i < p.n_ids; i++) want[i] = want[(size_t)i * na];
    st = fc_sbp_plan_forward(&p, &(FcSbpStrategy){FC_SBP_ASSIGNED}, want, a, diag);
  }
  *plan = p;
  return st;
}

FcStatus fc_pass_sbp_file(FcModule *m, FcPassContext *pc) {
  if (m->graph->parent) return FC_OK;
  FcSbpPlan p;
  FcStatus st = fc_sbp_file_plan(m, &pc->scratch, &p, pc->diag);
  fc_annots_remove(&m->annots, fc_annot_name(FC_ANNOT_SBP_FILE));
  return st == FC_OK ? fc_sbp_apply(&p, pc) : st;
}
