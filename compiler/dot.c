/* dot.c — `--emit dot`: the graph as a Graphviz digraph.
 *
 * One vertex per op, labelled with the op's mnemonic and its node name (loc); graph inputs and outputs
 * are ellipses of their own colours; every edge carries the type of the value it stands for
 * ("1x32x28x28 f32", "#1 ..." for a second result). The RETURN op is not drawn: its operands become edges
 * into the output vertices.
 *
 * Constants are the readability problem: a large model has hundreds of weights. Up to
 * FC_DOT_MAX_CONST_VERTICES they are drawn as small grey boxes with their name (a one-element constant
 * shows its value); above it they are not drawn, and each user lists its constant operands in its own
 * label instead.
 *
 * Annotations (flow.sbp, flow.placement, ...) add one label line each, in the IR text's spelling, to their
 * op or input vertex; quantised types show their parameters on the edges. In an SBP program an op's fill
 * says how its result lies on the ranks (sbp_fill: split, partial, or a boxing op).
 *
 * Every string from the model goes through dot_str, which escapes quotes and backslashes, turns newlines
 * into \n and drops other control characters, so no node name can break the file.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* The fill of an op of an SBP program, by the signature of its result (flow.sbp): boxing ops red, split
 * results green, partial sums orange; B (or no signature) keeps the default. */
static const char *sbp_fill(const FcOp *op) {
  switch (op->kind) {
  case FC_OP_LOCAL_SLICE:
  case FC_OP_ALL_GATHER:
  case FC_OP_ALL_REDUCE:
  case FC_OP_REDUCE_SCATTER:
  case FC_OP_ALL_TO_ALL: return "#f4b6b6";
  default: break;
  }
  const FcAnnotValue *v = fc_op_annot(op, fc_annot_name(FC_ANNOT_SBP));
  if (!v || v->kind != FC_AV_ARRAY || v->array.n < 1 || v->array.v[0].kind != FC_AV_STR || !v->array.v[0].s) return NULL;
  for (int i = 0; i < v->array.n; i++) {
    const char *e = v->array.v[i].kind == FC_AV_STR && v->array.v[i].s ? v->array.v[i].s : "";
    if (e[0] == 'P') return "#fcd9a8";
    if (e[0] == 'S') return "#c8ecc8";
  }
  return NULL;
}

static void dot_str(FILE *out, const char *s) {
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
    else if (c == '\n') fputs("\\n", out);
    else if (c >= 0x20 && c != 0x7f) fputc(c, out);
  }
}

/* "1x32x28x28 f32"; a rank-0 type is just its dtype; a quantised one shows its !quant.uniform<...>. */
static void dot_type(FILE *out, const FcType *t) {
  for (int i = 0; i < t->rank; i++) fprintf(out, "%lld%s", (long long)t->dims[i], i + 1 < t->rank ? "x" : " ");
  if (t->quant) fc_quant_print(out, t->quant); /* digits, letters and <>{}:,.- only: nothing to escape */
  else fputs(fc_dtype_name(t->dtype), out);
}

/* One label line per annotation, "flow.sbp = [\"S(0)\"]", cut at DOT_ANNOT_MAX characters. */
enum { DOT_ANNOT_MAX = 80 };
static void dot_annots(FILE *out, const FcAnnots *l) {
  for (int i = 0; i < l->n; i++) {
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m) continue;
    fprintf(m, "%s = ", l->v[i].name);
    fc_print_annot_value(m, &l->v[i].value);
    fclose(m);
    if (len > DOT_ANNOT_MAX) strcpy(text + DOT_ANNOT_MAX - 3, "...");
    fputs("\\n", out);
    dot_str(out, text);
    free(text);
  }
}

static bool is_const(const FcValue *v) { return v->def && v->def->kind == FC_OP_CONSTANT; }

/* The vertex a value comes from. */
static void dot_source(FILE *out, const FcValue *v) {
  if (v->def) fprintf(out, "op%u", v->def->id);
  else fprintf(out, "in%d", v->index);
}

static void dot_edge_label(FILE *out, const FcValue *v) {
  fputs(" [label=\"", out);
  if (v->def && v->def->n_results > 1) fprintf(out, "#%d ", v->index);
  dot_type(out, &v->type);
  fputs("\"]", out);
}

/* A one-element constant with data shows its value. */
static void dot_const_value(FILE *out, const FcValue *v) {
  const FcTensor *t = fc_value_const(v);
  int64_t n;
  if (!t || !fc_type_numel(&t->type, &n) || n != 1) return;
  if (fc_dtype_is_float(t->type.dtype)) fprintf(out, " = %g", fc_tensor_get_f64(t, 0));
  else fprintf(out, " = %lld", (long long)fc_tensor_get_i64(t, 0));
}

FcStatus fc_dot_print(FILE *out, FcModule *m, FcDiag *diag) {
  FcGraph *g = m->graph;
  int n_consts = 0;
  fc_graph_for_each_op(g, op) n_consts += op->kind == FC_OP_CONSTANT;
  bool draw_consts = n_consts <= FC_DOT_MAX_CONST_VERTICES;

  fputs("digraph \"", out);
  dot_str(out, g->name);
  fputs("\" {\n", out);
  fputs("  rankdir=TB;\n", out);
  fputs("  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef2f8\", fontname=\"Helvetica\", "
        "fontsize=11];\n",
        out);
  fputs("  edge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\"];\n", out);

  for (int i = 0; i < g->n_inputs; i++) {
    fprintf(out, "  in%d [label=\"", i);
    dot_str(out, g->inputs[i]->name && *g->inputs[i]->name ? g->inputs[i]->name : "input");
    dot_annots(out, &g->inputs[i]->annots);
    fputs("\", shape=ellipse, style=filled, fillcolor=\"#cfe3ff\"];\n", out);
  }

  fc_graph_for_each_op(g, op) {
    if (op->kind == FC_OP_RETURN) continue;
    const FcOpInfo *info = fc_op_info(op->kind);
    if (op->kind == FC_OP_CONSTANT) {
      if (!draw_consts) continue;
      fprintf(out, "  op%u [label=\"%s", op->id, info->name);
      dot_const_value(out, &op->results[0]);
      if (op->loc && *op->loc) {
        fputs("\\n", out);
        dot_str(out, op->loc);
      }
      dot_annots(out, &op->annots);
      fputs("\", shape=box, style=filled, fillcolor=\"#dddddd\", fontsize=8, height=0.2, "
            "margin=\"0.05,0.02\"];\n",
            out);
      continue;
    }
    fprintf(out, "  op%u [label=\"%s", op->id, info->name);
    if (op->loc && *op->loc) {
      fputs("\\n", out);
      dot_str(out, op->loc);
    }
    if (!draw_consts)
      for (int i = 0; i < op->n_operands; i++) {
        const FcValue *v = op->operands[i].value;
        if (!v || !is_const(v)) continue;
        fprintf(out, "\\n#%d const ", i);
        dot_type(out, &v->type);
        dot_const_value(out, v);
      }
    dot_annots(out, &op->annots);
    const char *fill = sbp_fill(op);
    if (fill) fprintf(out, "\", fillcolor=\"%s\"];\n", fill);
    else fputs("\"];\n", out);
  }

  int n_out = fc_graph_num_outputs(g);
  for (int i = 0; i < n_out; i++) {
    fprintf(out, "  out%d [label=\"", i);
    const char *name = fc_graph_output_name(g, i);
    dot_str(out, name && *name ? name : "output");
    fputs("\", shape=ellipse, style=filled, fillcolor=\"#d4f0d4\"];\n", out);
  }

  fc_graph_for_each_op(g, op) {
    bool ret = op->kind == FC_OP_RETURN;
    for (int i = 0; i < op->n_operands; i++) {
      const FcValue *v = op->operands[i].value;
      if (!v || (is_const(v) && !draw_consts && !ret)) continue;
      /* A constant returned as an output is drawn for that edge even when constants are folded. */
      if (is_const(v) && !draw_consts) {
        fprintf(out, "  op%u [label=\"constant\", shape=box, style=filled, fillcolor=\"#dddddd\", fontsize=8];\n",
                v->def->id);
      }
      fputs("  ", out);
      dot_source(out, v);
      if (ret) fprintf(out, " -> out%d", i);
      else fprintf(out, " -> op%u", op->id);
      dot_edge_label(out, v);
      fputs(";\n", out);
    }
  }
  fputs("}\n", out);
  if (fflush(out) != 0 || ferror(out)) return fc_error(diag, FC_ERR_IO, "cannot write the graph");
  return FC_OK;
}
