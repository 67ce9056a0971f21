/* memplan.c — static memory planning: one workspace per model, offsets by greedy-by-size.
 *
 * Where values live:
 *   - a graph input lives in the caller's input buffer (FC_BUF_INPUT) and a constant in the binary
 *     (FC_BUF_CONSTANT); neither is ever written while the model runs;
 *   - a value returned as graph output i is computed straight into the caller's output buffer i
 *     (FC_BUF_OUTPUT), unless it is an input or a constant, or an earlier output position already returns
 *     it: those positions are filled by a copy after the run (n_outputs_copied counts them);
 *   - every other op result owns a workspace block (FC_BUF_WORKSPACE) or shares one (FC_BUF_ALIAS).
 *
 * Lifetimes come from the schedule, which is the op list: a value is live from its defining op to its
 * last user (a result nobody uses is live at its defining op only, since the kernel still writes it).
 * Values that share bytes form a group owned by its root (the end of the alias_of chain); the root's
 * block is busy from the root's definition to the last use of any member.
 *
 * Sharing, decided in op order (each result sees its operands' final assignment):
 *   - view: a reshape result shares its operand's bytes (same bytes, row-major) whatever the operand's
 *     storage — workspace, input, constant or output buffer. Views are only ever read: the in-place rule
 *     below never writes into a group whose root is not a workspace value, so a view of an input or a
 *     constant is never written, and a view of an output value never clobbers it. A reshape whose own
 *     result is a graph output is computed into the output buffer (a copy) instead.
 *   - in place: an elementwise op (FC_OPF_ELEMENTWISE, or flow.fused) may write its result over an operand x when x's
 *     group is rooted in the workspace, no member of that group is used after this op, x has the result's
 *     shape and element size (hence its byte size: no broadcast), and no other operand of the op is a
 *     different member of x's group (which could be read at other positions after being overwritten).
 *     Kernels read element i of every operand before writing element i of the result, so this is legal.
 *     The first operand that qualifies is taken.
 *   - concat parts: an operand x of a concat whose result R owns a workspace block (or is computed into
 *     an output buffer) is computed by its own op straight into its slice of R, and the concat copies
 *     only the other operands, when: R's dims before the axis are all 1 (so each operand's slice is one
 *     contiguous run of bytes), the slice starts at a multiple of FC_MEMPLAN_ALIGN (kernels assume that
 *     alignment of every value), x owns its own workspace block with nothing sharing it yet, and x is
 *     not another operand of the same concat as well. R's block is then busy from the earliest part's
 *     definition; views and in-place results made of a part later share its slice. A part is written
 *     only by its own op, the slices are disjoint, and the block is reserved over all their lives, so no
 *     other value can be written over a part while it is needed. SqueezeNet's fire modules, Inception
 *     blocks and detection heads concatenate conv results this way, and their copies disappear.
 *
 * A region (a loop or if body) is planned as a graph of its own (fc_memplan_graph): its block arguments
 * are its inputs and its yield's operands its outputs, and codegen says where those live (the loop's
 * carried-value buffers, the outer values a body captures, the rows of a scan output). To the graph around
 * it a region op is an ordinary op reading its operands and writing its results.
 *
 * Offsets: greedy by size, as TFLite's arena planner and ggml's gallocr do. Workspace roots are sorted by
 * block size (rounded up to FC_MEMPLAN_ALIGN) descending, then by definition; each is placed in the
 * smallest gap between already placed blocks whose busy ranges intersect its own (best fit, lowest offset
 * on ties), or after the highest of them. Zero-size values take no space (offset 0).
 */
#include "memplan.h"

#include <inttypes.h>
#include <stdlib.h>

void fc_memplan_options_default(FcMemPlanOptions *o) {
  o->in_place = true;
  o->reshape_view = true;
  o->concat_parts = true;
}

/* Rounds a size up to FC_MEMPLAN_ALIGN; false on overflow. */
static bool round_up(int64_t n, int64_t *out) {
  int64_t t;
  if (!fc_checked_add(n, FC_MEMPLAN_ALIGN - 1, &t)) return false;
  *out = t / FC_MEMPLAN_ALIGN * FC_MEMPLAN_ALIGN;
  return true;
}

typedef struct Planner {
  FcGraph *g;
  FcMemPlan *p;
  FcArena *arena;
  FcDiag *diag;
  int *pos_of_op;  /* by op id: position in the list, -1 for ops not in it */
  int *busy_begin; /* by root value id: its definition, or an earlier part's */
  int *busy_end;   /* by root value id: last position at which any member of its group is used */
  int64_t *block;  /* by root value id: the block size, rounded */
} Planner;

static FcStatus value_size(Planner *pl, const FcValue *v, const FcOp *def, int64_t *out) {
  if (fc_type_nbytes(&v->type, out)) return FC_OK;
  if (!def) return fc_error(pl->diag, FC_ERR_LIMIT, "memplan: graph input %d: size overflows", v->index);
  return fc_error_node(pl->diag, FC_ERR_LIMIT, fc_op_name(def), fc_op_info(def->kind)->name,
                       "memplan: result %d: size overflows", v->index);
}

/* Records a value's id, size and definition; extends its range over its uses. */
static FcStatus add_value(Planner *pl, const FcValue *v, const FcOp *def, int def_pos) {
  if (v->id >= pl->p->n_values)
    return fc_error(pl->diag, FC_ERR_INTERNAL, "memplan: value id %" PRIu32 " out of range", v->id);
  FcBufAssign *a = &pl->p->by_value[v->id];
  FcStatus st = value_size(pl, v, def, &a->size);
  if (st != FC_OK) return st;
  a->first = a->last = def_pos;
  for (const FcUse *u = v->first_use; u; u = u->next_use) {
    const FcOp *user = u->user;
    int up = user && user->id < pl->g->next_op_id ? pl->pos_of_op[user->id] : -1;
    if (up < 0 || up < def_pos)
      return fc_error(pl->diag, FC_ERR_INTERNAL, "memplan: value %" PRIu32 " is used outside the schedule", v->id);
    if (up > a->last) a->last = up;
  }
  return FC_OK;
}

static void set_alias(Planner *pl, FcValue *r, const FcValue *x, bool view) {
  FcBufAssign *a = &pl->p->by_value[r->id];
  uint32_t root = pl->p->by_value[x->id].root;
  a->kind = FC_BUF_ALIAS;
  a->alias_of = x->id;
  a->root = root;
  a->is_view = view;
  a->at = pl->p->by_value[x->id].at;
  if (a->last > pl->busy_end[root]) pl->busy_end[root] = a->last;
}

/* Whether any other value shares the bytes of root `id` yet. */
static bool has_members(const Planner *pl, uint32_t id) {
  for (uint32_t v = 0; v < pl->p->n_values; v++)
    if (v != id && pl->p->by_value[v].kind != FC_BUF_NONE && pl->p->by_value[v].root == id) return true;
  return false;
}

/* Makes the operands of concat `op` that qualify parts of its result (the rules at the top). */
static void place_concat_parts(Planner *pl, const FcOp *op) {
  const FcValue *r = &op->results[0];
  FcBufAssign *ra = &pl->p->by_value[r->id];
  if (ra->kind != FC_BUF_WORKSPACE && ra->kind != FC_BUF_OUTPUT) return;
  int64_t axis = fc_op_attr_int(op, FC_ATTR_AXIS, -1);
  if (axis < 0 || axis >= r->type.rank) return;
  for (int d = 0; d < axis; d++)
    if (r->type.dims[d] != 1) return;
  int64_t at = 0;
  for (int j = 0; j < op->n_operands; j++) {
    const FcValue *x = op->operands[j].value;
    if (!x) return;
    FcBufAssign *xa = &pl->p->by_value[x->id];
    int64_t next;
    if (!fc_checked_add(at, xa->size, &next) || next > ra->size) return; /* a concat that does not verify */
    bool once = true;
    for (int k = 0; k < op->n_operands; k++) once &= k == j || op->operands[k].value != x;
    if (xa->kind == FC_BUF_WORKSPACE && xa->size > 0 && at % FC_MEMPLAN_ALIGN == 0 && once &&
        !has_members(pl, x->id)) {
      xa->kind = FC_BUF_ALIAS;
      xa->alias_of = r->id;
      xa->root = r->id;
      xa->is_part = true;
      xa->at = at;
      if (xa->first < pl->busy_begin[r->id]) pl->busy_begin[r->id] = xa->first;
      if (pl->busy_end[x->id] > pl->busy_end[r->id]) pl->busy_end[r->id] = pl->busy_end[x->id];
    }
    at = next;
  }
}

/* The operand of elementwise `op` (at `pos`) whose buffer its result may take over, or NULL. */
static const FcValue *in_place_operand(Planner *pl, const FcOp *op, int pos) {
  const FcValue *r = &op->results[0];
  for (int j = 0; j < op->n_operands; j++) {
    const FcValue *x = op->operands[j].value;
    if (!x) continue;
    uint32_t root = pl->p->by_value[x->id].root;
    if (pl->p->by_value[root].kind != FC_BUF_WORKSPACE || pl->busy_end[root] != pos) continue;
    if (!fc_shape_equal(&x->type, &r->type) || fc_dtype_size(x->type.dtype) != fc_dtype_size(r->type.dtype))
      continue;
    bool shared = false;
    for (int k = 0; k < op->n_operands && !shared; k++) {
      const FcValue *y = op->operands[k].value;
      shared = y && y != x && pl->p->by_value[y->id].root == root;
    }
    if (!shared) return x;
  }
  return NULL;
}

/* Decides, in op order, whether each op result owns a workspace block or shares an operand's. */
static void assign_sharing(Planner *pl, const FcMemPlanOptions *o) {
  int pos = 0;
  fc_graph_for_each_op(pl->g, op) {
    for (int i = 0; i < op->n_results; i++) {
      FcValue *r = &op->results[i];
      FcBufAssign *a = &pl->p->by_value[r->id];
      if (a->kind != FC_BUF_NONE) continue; /* constant or output */
      const FcValue *x = op->n_operands > 0 ? op->operands[0].value : NULL;
      /* A verified reshape (or scast, the same bytes under another type) keeps its byte size; the size
       * test only keeps a broken one from making a view that is larger than its root. */
      if ((op->kind == FC_OP_RESHAPE || op->kind == FC_OP_SCAST) && o->reshape_view && x && pl->p->by_value[x->id].size == a->size) {
        set_alias(pl, r, x, true);
        continue;
      }
      if (o->in_place && ((fc_op_info(op->kind)->flags & FC_OPF_ELEMENTWISE) || op->kind == FC_OP_FUSED) &&
          op->n_results == 1 &&
          (x = in_place_operand(pl, op, pos))) {
        set_alias(pl, r, x, false);
        continue;
      }
      a->kind = FC_BUF_WORKSPACE;
      pl->busy_end[r->id] = a->last;
    }
    if (op->kind == FC_OP_CONCAT && o->concat_parts && op->n_results == 1) place_concat_parts(pl, op);
    pos++;
  }
}

/* A workspace root to place, with its sort key. */
typedef struct Block {
  int64_t size; /* rounded */
  int first;
  uint32_t id;
} Block;

/* Block size descending, then definition, then id: a total order, so the plan is deterministic. */
static int cmp_block(const void *pa, const void *pb) {
  const Block *a = pa, *b = pb;
  if (a->size != b->size) return a->size > b->size ? -1 : 1;
  if (a->first != b->first) return a->first < b->first ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

/* Greedy by size with best fit. `placed` holds the roots placed so far, ordered by offset. */
static FcStatus place_blocks(Planner *pl) {
  FcMemPlan *p = pl->p;
  int n = 0;
  for (uint32_t id = 0; id < p->n_values; id++)
    if (p->by_value[id].kind == FC_BUF_WORKSPACE && pl->block[id] > 0) n++;
  if (n == 0) return FC_OK;
  Block *order = FC_NEW_ARRAY(pl->arena, Block, (size_t)n);
  uint32_t *placed = FC_NEW_ARRAY(pl->arena, uint32_t, (size_t)n);
  int k = 0;
  for (uint32_t id = 0; id < p->n_values; id++)
    if (p->by_value[id].kind == FC_BUF_WORKSPACE && pl->block[id] > 0)
      order[k++] = (Block){pl->block[id], pl->busy_begin[id], id};
  qsort(order, (size_t)n, sizeof *order, cmp_block);
  int n_placed = 0;
  for (int i = 0; i < n; i++) {
    uint32_t id = order[i].id;
    int64_t size = order[i].size;
    int first = pl->busy_begin[id], end = pl->busy_end[id];
    int64_t cur = 0, best = -1, best_gap = INT64_MAX;
    for (int j = 0; j < n_placed; j++) {
      uint32_t o = placed[j];
      if (pl->busy_end[o] < first || pl->busy_begin[o] > end) continue;
      int64_t off = p->by_value[o].offset, gap = off - cur;
      if (gap >= size && gap < best_gap) {
        best = cur;
        best_gap = gap;
      }
      int64_t top = off + pl->block[o]; /* cannot overflow: checked when `o` was placed */
      if (top > cur) cur = top;
    }
    int64_t off = best >= 0 ? best : cur, top;
    if (!fc_checked_add(off, size, &top))
      return fc_error(pl->diag, FC_ERR_LIMIT, "memplan: workspace size overflows");
    p->by_value[id].offset = off;
    if (top > p->workspace_bytes) p->workspace_bytes = top;
    int at = n_placed;
    while (at > 0 && p->by_value[placed[at - 1]].offset > off) at--;
    for (int j = n_placed; j > at; j--) placed[j] = placed[j - 1];
    placed[at] = id;
    n_placed++;
  }
  return FC_OK;
}

FcStatus fc_memplan(FcModule *m, const FcMemPlanOptions *opts, FcArena *arena, FcMemPlan *out, FcDiag *diag) {
  return fc_memplan_graph(m->graph, opts, arena, out, diag);
}

FcStatus fc_memplan_graph(FcGraph *g, const FcMemPlanOptions *opts, FcArena *arena, FcMemPlan *out, FcDiag *diag) {
  FcMemPlanOptions dflt;
  if (!opts) {
    fc_memplan_options_default(&dflt);
    opts = &dflt;
  }
  *out = (FcMemPlan){0};
  FcOp *ret = fc_graph_return(g);
  if (!ret) return fc_error(diag, FC_ERR_INPUT, "memplan: the graph has no return");
  FcMemPlan *p = out;
  p->n_values = g->next_value_id;
  p->by_value = FC_NEW_ARRAY(arena, FcBufAssign, p->n_values ? p->n_values : 1);
  Planner pl = {.g = g, .p = p, .arena = arena, .diag = diag};
  pl.pos_of_op = FC_NEW_ARRAY(arena, int, g->next_op_id ? g->next_op_id : 1);
  pl.busy_begin = FC_NEW_ARRAY(arena, int, p->n_values ? p->n_values : 1);
  pl.busy_end = FC_NEW_ARRAY(arena, int, p->n_values ? p->n_values : 1);
  pl.block = FC_NEW_ARRAY(arena, int64_t, p->n_values ? p->n_values : 1);
  for (uint32_t id = 0; id < p->n_values; id++)
    p->by_value[id] = (FcBufAssign){.kind = FC_BUF_NONE, .index = -1, .alias_of = id, .root = id, .first = -1,
                                    .last = -1};
  for (uint32_t i = 0; i < g->next_op_id; i++) pl.pos_of_op[i] = -1;
  fc_graph_for_each_op(g, op) {
    if (op->id >= g->next_op_id || pl.pos_of_op[op->id] >= 0 || p->n_ops == INT32_MAX)
      return fc_error(diag, FC_ERR_INTERNAL, "memplan: op ids are not unique");
    pl.pos_of_op[op->id] = p->n_ops++;
  }

  FcStatus st;
  for (int i = 0; i < g->n_inputs; i++) {
    FcValue *v = g->inputs[i];
    if ((st = add_value(&pl, v, NULL, -1)) != FC_OK) return st;
    p->by_value[v->id].kind = FC_BUF_INPUT;
    p->by_value[v->id].index = i;
  }
  int n_const = 0, pos = 0;
  fc_graph_for_each_op(g, op) {
    for (int i = 0; i < op->n_results; i++) {
      if ((st = add_value(&pl, &op->results[i], op, pos)) != FC_OK) return st;
      if (op->kind == FC_OP_CONSTANT) {
        p->by_value[op->results[i].id].kind = FC_BUF_CONSTANT;
        p->by_value[op->results[i].id].index = n_const++;
      }
    }
    pos++;
  }
  for (uint32_t id = 0; id < p->n_values; id++) pl.busy_begin[id] = p->by_value[id].first;
  for (int i = 0; i < ret->n_operands; i++) {
    const FcValue *v = ret->operands[i].value;
    if (!v) return fc_error(diag, FC_ERR_INTERNAL, "memplan: graph output %d is missing", i);
    FcBufAssign *a = &p->by_value[v->id];
    if (a->kind != FC_BUF_NONE) {
      p->n_outputs_copied++;
      continue;
    }
    a->kind = FC_BUF_OUTPUT;
    a->index = i;
  }

  assign_sharing(&pl, opts);

  for (uint32_t id = 0; id < p->n_values; id++) {
    FcBufAssign *a = &p->by_value[id];
    if (a->kind == FC_BUF_NONE || a->kind == FC_BUF_INPUT || a->kind == FC_BUF_CONSTANT || a->kind == FC_BUF_OUTPUT)
      continue;
    int64_t r, sum;
    if (!round_up(a->size, &r) || !fc_checked_add(p->naive_bytes, r, &sum))
      return fc_error(diag, FC_ERR_LIMIT, "memplan: total intermediate size overflows");
    p->naive_bytes = sum;
    if (a->kind == FC_BUF_WORKSPACE) {
      pl.block[id] = r;
      p->n_workspace_values++;
    } else {
      p->n_aliases++;
    }
  }
  if ((st = place_blocks(&pl)) != FC_OK) return st;

  for (uint32_t id = 0; id < p->n_values; id++) {
    FcBufAssign *a = &p->by_value[id];
    const FcBufAssign *r = &p->by_value[a->root];
    FC_ASSERT(r->kind != FC_BUF_ALIAS);
    a->storage = r->kind;
    if (a->kind == FC_BUF_ALIAS) {
      a->offset = r->offset + a->at; /* within the root's block: no overflow */
      a->index = r->index;
    }
  }
  return FC_OK;
}

bool fc_memplan_output_is_copy(const FcModule *m, const FcMemPlan *p, int i) {
  return fc_memplan_graph_output_is_copy(m->graph, p, i);
}

bool fc_memplan_graph_output_is_copy(FcGraph *g, const FcMemPlan *p, int i) {
  const FcValue *v = fc_graph_output(g, i);
  const FcBufAssign *a = &p->by_value[v->id];
  return !(a->kind == FC_BUF_OUTPUT && a->index == i);
}

static void print_value(FILE *out, const FcMemPlan *p, const FcValue *v, const FcOp *def) {
  const FcBufAssign *a = &p->by_value[v->id];
  char ty[256];
  fc_type_str(&v->type, ty, sizeof ty);
  char what[64];
  if (def) snprintf(what, sizeof what, "%s", fc_op_info(def->kind)->name);
  else snprintf(what, sizeof what, "input");
  fprintf(out, "v%-6" PRIu32 " %-16s %-28s %12" PRId64 " B  ", v->id, what, ty, a->size);
  if (a->kind == FC_BUF_ALIAS)
    fprintf(out, "%s of v%" PRIu32 " -> ", a->is_view ? "view" : a->is_part ? "part" : "in place", a->alias_of);
  switch (a->storage) {
  case FC_BUF_WORKSPACE: fprintf(out, "workspace @%" PRId64, a->offset); break;
  case FC_BUF_INPUT: fprintf(out, "input #%d", a->index); break;
  case FC_BUF_OUTPUT:
    fprintf(out, "output #%d", a->index);
    if (a->offset) fprintf(out, " @%" PRId64, a->offset);
    break;
  case FC_BUF_CONSTANT: fprintf(out, "constant #%d", a->index); break;
  default: fprintf(out, "none"); break;
  }
  if (a->kind != FC_BUF_CONSTANT) fprintf(out, "  live [%d, %d]", a->first, a->last);
  if (def && def->loc) fprintf(out, "  '%s'", def->loc);
  fputc('\n', out);
}

bool fc_memplan_is_concat_part(const FcMemPlan *p, const FcOp *op, int i) {
  const FcValue *x = op->operands[i].value;
  if (op->kind != FC_OP_CONCAT || !x || x->id >= p->n_values) return false;
  const FcBufAssign *a = &p->by_value[x->id];
  return a->kind == FC_BUF_ALIAS && a->is_part && a->alias_of == op->results[0].id;
}

bool fc_memplan_op_is_free(const FcMemPlan *p, const FcOp *op) {
  if (op->n_results != 1 || op->results[0].id >= p->n_values) return false;
  const FcBufAssign *a = &p->by_value[op->results[0].id];
  if (a->kind == FC_BUF_ALIAS && a->is_view) return true;
  if (op->kind != FC_OP_CONCAT) return false;
  for (int i = 0; i < op->n_operands; i++)
    if (!fc_memplan_is_concat_part(p, op, i)) return false;
  return true;
}

void fc_memplan_print(FILE *out, const FcModule *m, const FcMemPlan *p) {
  fprintf(out,
          "// memplan: workspace %" PRId64 " bytes, naive %" PRId64 " bytes; %d blocks, %d aliases, "
          "%d outputs copied\n",
          p->workspace_bytes, p->naive_bytes, p->n_workspace_values, p->n_aliases, p->n_outputs_copied);
  const FcGraph *g = m->graph;
  for (int i = 0; i < g->n_inputs; i++) print_value(out, p, g->inputs[i], NULL);
  fc_graph_for_each_op(g, op)
    for (int i = 0; i < op->n_results; i++) print_value(out, p, &op->results[i], op);
}
