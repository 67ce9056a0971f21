/* lower_control.c — ONNX Loop, Scan and If into flow.loop and flow.if (ir.h, "regions").
 *
 * A subgraph attribute is imported into the region of the op built for it (onnx_import.c does the
 * import: fc_lx_import_subgraph); what it reads from enclosing scopes arrives as captures (operands of
 * the op, block arguments inside), except constants, which are copied in so the body can fold with them.
 * Shapes inside a body are static: they follow from the outer types, and a loop-carried value whose type
 * changes from one iteration to the next, or If branches of different types, are refused.
 *
 * Loop keeps ONNX's semantics as they are: the trip count and the condition may be run-time values.
 * Scan outputs have a static length, so a Loop with scan outputs needs a compile-time trip count and a
 * condition that cannot end it early (a constant true, passed through by the body).
 *
 * Scan (opset 9 on) is a loop over the scan length: each scan input is moved to axis 0 outside the loop
 * and the body gathers its row t (t = iter, or L-1-iter for a reversed input); states are carried; scan
 * outputs come out in iteration order and are reversed and moved to their axis afterwards. Scan-8's
 * leading batch axis becomes one such loop per batch element (without sequence_lens).
 *
 * If becomes flow.if over the union of both branches' captures; with a compile-time condition the taken
 * branch is imported in place instead.
 */
#include "onnx.h"

#include <string.h>

/* ---- helpers shared with lower_rnn.c (onnx.h) ------------------------------------------------------ */

bool fc_lx_loop_begin(FcLower *l, FcLxLoop *lp, FcValue *const *ops, int n_ops, int carried, int n_scan,
                      int64_t scan_len) {
  FcAttr attrs[2] = {FC_A_INT(CARRIED, carried), FC_A_INT(SCAN_LEN, scan_len)};
  memset(lp, 0, sizeof *lp);
  lp->op = fc_b_region_op(l->b, FC_OP_LOOP, ops, n_ops, carried + n_scan, attrs, n_scan ? 2 : 1);
  if (!lp->op) return false;
  fc_builder_init(&lp->body, lp->op->regions[0], l->diag);
  lp->body.loc = l->b->loc;
  lp->args = lp->op->regions[0]->inputs;
  return true;
}

/* Drops a region op that will not be inserted (its operand uses included). */
static void drop_region_op(FcOp *op) {
  if (op) fc_op_erase(op);
}

FcOp *fc_lx_loop_end(FcLower *l, FcLxLoop *lp, FcValue *const *yields, int n) {
  bool ok = fc_b_status(&lp->body) == FC_OK && fc_b_status(l->b) == FC_OK;
  for (int i = 0; ok && i < n; i++) ok = yields[i] != NULL;
  if (!ok) {
    drop_region_op(lp->op);
    fc_b_fail(l->b, l->diag->status != FC_OK ? l->diag->status : FC_ERR_INTERNAL, "building a loop body failed");
    return NULL;
  }
  fc_graph_set_yield(lp->op->regions[0], yields, n);
  return fc_b_region_op_finish(l->b, lp->op);
}

FcValue *fc_lx_gather_row(FcBuilder *b, FcValue *x, FcValue *t) {
  if (!x || !t) return NULL;
  FcValue *ops[2] = {x, t};
  FcAttr a = FC_A_INT(AXIS, 0);
  return fc_b_op1(b, FC_OP_GATHER, ops, 2, &a, 1);
}

FcValue *fc_lx_reverse_rows(FcLower *l, FcBuilder *b, FcValue *x) {
  if (!x) return NULL;
  int64_t n = x->type.dims[0];
  int64_t *idx = FC_NEW_ARRAY(fc_lx_arena(l), int64_t, (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) idx[i] = n - 1 - i;
  FcValue *ops[2] = {x, fc_b_const(b, FC_DT_I64, 1, &n, idx)};
  FcAttr a = FC_A_INT(AXIS, 0);
  return fc_b_op1(b, FC_OP_GATHER, ops, 2, &a, 1);
}

/* ---- common checks ---------------------------------------------------------------------------------- */

static const char *type_str(FcLower *l, const FcType *t) {
  char buf[256];
  return fc_arena_strdup(fc_lx_arena(l), fc_type_str(t, buf, sizeof buf));
}

static int64_t numel_of(const FcValue *v) {
  int64_t n;
  return fc_type_numel(&v->type, &n) ? n : -1;
}

/* v (one element of dtype dt) as a 0-d tensor, built with b; NULL after recording an error. */
static FcValue *as_scalar(FcLower *l, FcBuilder *b, FcValue *v, FcDtype dt, const char *what) {
  if (!v) return NULL;
  if (v->type.dtype != dt || numel_of(v) != 1) {
    FcType want = {dt, 0, NULL};
    fc_lx_error(l, "%s must be %s, not %s", what, type_str(l, &want), type_str(l, &v->type));
    return NULL;
  }
  return v->type.rank == 0 ? v : fc_b_reshape(b, v, 0, NULL);
}

/* The carried value i of a body must keep its type: shapes are static. */
static bool check_carried(FcLower *l, const FcLxSubgraph *sg, int i, int out_index, const FcValue *init,
                          const FcValue *next) {
  if (fc_type_equal(&init->type, &next->type)) return true;
  const char *name = sg->gp->output[out_index]->name ? sg->gp->output[out_index]->name : "";
  fc_lx_error(l, "loop-carried value %d ('%s') changes type from %s to %s in the body; flowc needs static shapes",
                    i, name, type_str(l, &init->type), type_str(l, &next->type));
  return false;
}

/* Imports sg into the loop body: its inputs `in`, its captures after the first `n_args` block arguments. */
static FcStatus import_body(FcLower *l, const FcLxSubgraph *sg, FcLxLoop *lp, FcValue *const *in, int n_in, int n_args,
                            FcValue ***outs) {
  *outs = FC_NEW_ARRAY(fc_lx_arena(l), FcValue *, sg->gp->n_output + 1);
  return fc_lx_import_subgraph(l, sg, lp->op->regions[0], in, n_in, lp->args + n_args, *outs);
}

/* ---- Loop ------------------------------------------------------------------------------------------ */

/* With scan outputs the number of iterations must be known: a constant trip count, an initial condition
 * that is constant, and a body condition that stays true (the condition argument passed through, or a
 * constant true). Sets *len; false after recording an error. */
static bool static_trip(FcLower *l, int64_t *len) {
  const FcTensor *t = l->in[0] ? fc_lx_bind_const_input(l, 0) : NULL;
  if (l->diag->status != FC_OK) return false;
  if (!t) {
    fc_lx_error(l, "scan outputs need a static length: the trip count must be a compile-time constant");
    return false;
  }
  int64_t n = fc_tensor_get_i64(t, 0);
  *len = n > 0 ? n : 0;
  if (l->in[1]) {
    const FcTensor *c = fc_lx_bind_const_input(l, 1);
    if (l->diag->status != FC_OK) return false;
    if (!c) {
      fc_lx_error(l, "scan outputs need a static length: the initial condition must be a compile-time constant");
      return false;
    }
    if (fc_tensor_get_i64(c, 0) == 0) *len = 0;
  }
  return true;
}

static bool cond_stays_true(FcValue *cond_next, FcValue *cond_arg) {
  if (cond_next == cond_arg) return true;
  const FcTensor *c = fc_value_const(cond_next);
  return c && fc_tensor_get_i64(c, 0) != 0;
}

FcStatus fc_lower_loop(FcLower *l) {
  FcLxSubgraph sg;
  FcStatus st = fc_lx_subgraph(l, "body", &sg);
  if (st != FC_OK) return st;
  int k = l->n_in - 2;
  if (k < 0) return fc_lx_error(l, "needs inputs M and cond (either may be empty), has %d inputs", l->n_in);
  int n_scan = (int)sg.gp->n_output - 1 - k;
  if ((int)sg.gp->n_input != 2 + k)
    return fc_lx_error(l, "body has %zu inputs, expected %d (iteration number, condition, %d loop-carried values)",
                       sg.gp->n_input, 2 + k, k);
  if (n_scan < 0)
    return fc_lx_error(l, "body has %zu outputs, expected at least %d (condition, %d loop-carried values)",
                       sg.gp->n_output, 1 + k, k);
  if (l->n_out > k + n_scan) return fc_lx_error(l, "has %d outputs, but its body defines %d", l->n_out, k + n_scan);
  for (int i = 0; i < k; i++)
    if (!l->in[2 + i]) return fc_lx_error(l, "loop-carried input %d is missing", i);
  if (!l->in[0] && !l->in[1]) return fc_lx_unsupported(l, "has neither a trip count nor a condition: it never ends");
  int64_t len = 0;
  if (n_scan > 0) {
    if (!static_trip(l, &len)) return fc_lx_bail(l);
    /* Binding turned graph inputs into constants: resolve what the body reads again. */
    if ((st = fc_lx_subgraph(l, "body", &sg)) != FC_OK) return st;
  }

  FcValue *trip, *cond;
  if (l->in[0]) {
    trip = as_scalar(l, l->b, l->in[0], FC_DT_I64, "the trip count M");
  } else {
    int64_t unbounded = INT64_MAX;
    trip = fc_b_const(l->b, FC_DT_I64, 0, NULL, &unbounded);
  }
  cond = l->in[1] ? as_scalar(l, l->b, l->in[1], FC_DT_BOOL, "the condition") : fc_b_scalar(l->b, FC_DT_BOOL, 1);
  if (!trip || !cond) return fc_lx_bail(l);
  int n_ops = 2 + k + sg.n_caps;
  FcValue **ops = FC_NEW_ARRAY(fc_lx_arena(l), FcValue *, (size_t)n_ops);
  ops[0] = trip;
  ops[1] = cond;
  for (int i = 0; i < k; i++) ops[2 + i] = l->in[2 + i];
  for (int i = 0; i < sg.n_caps; i++) ops[2 + k + i] = sg.caps[i];
  FcLxLoop lp;
  if (!fc_lx_loop_begin(l, &lp, ops, n_ops, k, n_scan, len)) return fc_lx_bail(l);
  FcValue **outs;
  st = import_body(l, &sg, &lp, lp.args, 2 + k, 2 + k, &outs);
  if (st != FC_OK) {
    drop_region_op(lp.op);
    return st;
  }
  outs[0] = as_scalar(l, &lp.body, outs[0], FC_DT_BOOL, "the body's condition output");
  bool ok = outs[0] != NULL;
  if (!l->in[1]) outs[0] = lp.args[1]; /* without a condition input ONNX ignores the body's: a for loop */
  for (int i = 0; ok && i < k; i++) ok = check_carried(l, &sg, i, 1 + i, l->in[2 + i], outs[1 + i]);
  if (ok && n_scan > 0 && !cond_stays_true(outs[0], lp.args[1])) {
    fc_lx_error(l, "scan outputs need a static length, but the body's condition can end the loop early");
    ok = false;
  }
  if (!ok) {
    drop_region_op(lp.op);
    return fc_lx_bail(l);
  }
  FcOp *loop = fc_lx_loop_end(l, &lp, outs, 1 + k + n_scan);
  if (!loop) return fc_lx_bail(l);
  for (int i = 0; i < l->n_out; i++) l->out[i] = &loop->results[i];
  return fc_lx_finish(l);
}

/* ---- Scan ------------------------------------------------------------------------------------------ */

typedef struct ScanSpec {
  int n_states, n_scans, n_outs;      /* N states, M scan inputs, K scan outputs */
  const int64_t *in_rev, *out_rev;    /* per scan input / output: 1 when reversed (NULL: none) */
  const int64_t *out_axes;            /* per scan output: its axis (NULL: 0) */
} ScanSpec;

/* One loop over the scan length: states[0..N) carried, xs[0..M) scan inputs already along axis 0.
 * Sets res[0..N+K). */
static FcStatus scan_core(FcLower *l, const FcLxSubgraph *sg, const ScanSpec *sp, FcValue *const *states,
                          FcValue *const *xs, FcValue **res) {
  int N = sp->n_states, M = sp->n_scans, K = sp->n_outs;
  int64_t len = xs[0]->type.dims[0];
  for (int j = 1; j < M; j++)
    if (xs[j]->type.dims[0] != len)
      return fc_lx_error(l, "scan input %d has %lld elements along its scan axis, scan input 0 has %lld", j,
                         (long long)xs[j]->type.dims[0], (long long)len);
  int n_ops = 2 + N + M + sg->n_caps;
  FcValue **ops = FC_NEW_ARRAY(fc_lx_arena(l), FcValue *, (size_t)n_ops);
  ops[0] = fc_b_scalar(l->b, FC_DT_I64, (double)len);
  ops[1] = fc_b_scalar(l->b, FC_DT_BOOL, 1);
  for (int i = 0; i < N; i++) ops[2 + i] = states[i];
  for (int j = 0; j < M; j++) ops[2 + N + j] = xs[j];
  for (int i = 0; i < sg->n_caps; i++) ops[2 + N + M + i] = sg->caps[i];
  FcLxLoop lp;
  if (!fc_lx_loop_begin(l, &lp, ops, n_ops, N, K, len)) return fc_lx_bail(l);
  FcBuilder *b = &lp.body;
  FcValue *t_rev = NULL;
  FcValue **in = FC_NEW_ARRAY(fc_lx_arena(l), FcValue *, (size_t)(N + M));
  for (int i = 0; i < N; i++) in[i] = lp.args[2 + i];
  for (int j = 0; j < M; j++) {
    FcValue *t = lp.args[0];
    if (sp->in_rev && sp->in_rev[j]) {
      if (!t_rev) {
        FcValue *last = fc_b_scalar(b, FC_DT_I64, (double)(len - 1));
        t_rev = fc_b_binary(b, FC_OP_SUB, last, lp.args[0]);
      }
      t = t_rev;
    }
    in[N + j] = fc_lx_gather_row(b, lp.args[2 + N + j], t);
  }
  if (fc_b_status(b) != FC_OK) {
    drop_region_op(lp.op);
    return fc_lx_bail(l);
  }
  FcValue **outs;
  FcStatus st = import_body(l, sg, &lp, in, N + M, 2 + N + M, &outs);
  bool ok = st == FC_OK;
  for (int i = 0; ok && i < N; i++) ok = check_carried(l, sg, i, i, states[i], outs[i]);
  if (!ok) {
    drop_region_op(lp.op);
    return st != FC_OK ? st : fc_lx_bail(l);
  }
  FcValue **yields = FC_NEW_ARRAY(fc_lx_arena(l), FcValue *, (size_t)(1 + N + K));
  yields[0] = lp.args[1];
  for (int i = 0; i < N + K; i++) yields[1 + i] = outs[i];
  FcOp *loop = fc_lx_loop_end(l, &lp, yields, 1 + N + K);
  if (!loop) return fc_lx_bail(l);
  for (int i = 0; i < N; i++) res[i] = &loop->results[i];
  for (int j = 0; j < K; j++) {
    FcValue *y = &loop->results[N + j];
    if (sp->out_rev && sp->out_rev[j]) y = fc_lx_reverse_rows(l, l->b, y);
    int64_t axis = 0;
    if (y && sp->out_axes && !fc_lx_axis(l, sp->out_axes[j], y->type.rank, &axis)) return fc_lx_bail(l);
    if (y && axis != 0) { /* axis 0 (the iterations) moves to `axis` */
      int rank = y->type.rank;
      int64_t *perm = fc_lx_dims(l, rank);
      for (int p = 0; p < rank; p++) perm[p] = p < axis ? p + 1 : p == axis ? 0 : p;
      y = fc_b_transpose(l->b, y, perm);
    }
    res[N + j] = y;
  }
  return fc_b_status(l->b) == FC_OK ? FC_OK : fc_lx_bail(l);
}

/* A per-input attribute list: absent (NULL), or exactly n entries (each 0 or 1 for `directions`). */
static bool list_attr(FcLower *l, const char *name, int n, bool directions, const int64_t **v) {
  int c = fc_lx_ints(l, name, v);
  if (l->diag->status != FC_OK) return false;
  if (c >= 0 && c != n) {
    fc_lx_error(l, "attribute '%s' has %d entries, expected %d", name, c, n);
    return false;
  }
  for (int i = 0; c > 0 && i < c; i++) {
    if (directions && (*v)[i] != 0 && (*v)[i] != 1) {
      fc_lx_error(l, "attribute '%s' entry %d is %lld; directions are 0 or 1", name, i, (long long)(*v)[i]);
      return false;
    }
  }
  if (c < 0) *v = NULL;
  return true;
}

/* Scan-8: inputs (sequence_lens, states with a leading batch axis, scan inputs [batch, seq, ...]);
 * one loop per batch element, the results stacked again along the batch axis. */
static FcStatus scan8(FcLower *l, const FcLxSubgraph *sg, ScanSpec *sp) {
  int N = sp->n_states, M = sp->n_scans, K = sp->n_outs;
  if (l->in[0]) return fc_lx_unsupported(l, "sequence_lens is not supported");
  FcValue *first = N ? l->in[1] : l->in[1 + N];
  if (first->type.rank < 1) return fc_lx_error(l, "inputs need a leading batch axis");
  int64_t batch = first->type.dims[0];
  for (int i = 0; i < N + M; i++) {
    const FcValue *v = l->in[1 + i];
    if (v->type.rank < (i < N ? 1 : 2) || v->type.dims[0] != batch)
      return fc_lx_error(l, "input %d is %s; every input needs the batch axis of %lld (and scan inputs a scan axis)",
                         1 + i, type_str(l, &v->type), (long long)batch);
  }
  if (batch < 1) return fc_lx_unsupported(l, "an empty batch is not supported");
  FcValue **per = FC_NEW_ARRAY(fc_lx_arena(l), FcValue *, (size_t)((N + K) * batch));
  FcValue **in = FC_NEW_ARRAY(fc_lx_arena(l), FcValue *, (size_t)(N + M));
  for (int64_t bi = 0; bi < batch; bi++) {
    FcValue *idx = fc_b_scalar(l->b, FC_DT_I64, (double)bi);
    for (int i = 0; i < N + M; i++) in[i] = fc_lx_gather_row(l->b, l->in[1 + i], idx);
    if (fc_b_status(l->b) != FC_OK) return fc_lx_bail(l);
    FcStatus st = scan_core(l, sg, sp, in, in + N, per + bi * (N + K));
    if (st != FC_OK) return st;
  }
  FcValue **rows = FC_NEW_ARRAY(fc_lx_arena(l), FcValue *, (size_t)batch);
  for (int o = 0; o < N + K && o < l->n_out; o++) {
    for (int64_t bi = 0; bi < batch; bi++) {
      FcValue *v = per[bi * (N + K) + o];
      int64_t *dims = fc_lx_dims(l, v->type.rank + 1);
      dims[0] = 1;
      memcpy(dims + 1, v->type.dims, (size_t)v->type.rank * sizeof *dims);
      rows[bi] = fc_b_reshape(l->b, v, v->type.rank + 1, dims);
    }
    l->out[o] = batch == 1 ? rows[0] : fc_b_concat(l->b, rows, (int)batch, 0);
  }
  return fc_lx_finish(l);
}

FcStatus fc_lower_scan(FcLower *l) {
  FcLxSubgraph sg;
  FcStatus st = fc_lx_subgraph(l, "body", &sg);
  if (st != FC_OK) return st;
  int64_t m = fc_lx_int(l, "num_scan_inputs", -1);
  if (l->diag->status != FC_OK) return fc_lx_bail(l);
  bool v8 = l->opset < 9;
  int first = v8 ? 1 : 0; /* Scan-8's sequence_lens comes first */
  if (m < 1 || m > l->n_in - first)
    return fc_lx_error(l, "num_scan_inputs is %lld; it must be in [1, %d]", (long long)m, l->n_in - first);
  ScanSpec sp = {.n_states = l->n_in - first - (int)m, .n_scans = (int)m};
  sp.n_outs = (int)sg.gp->n_output - sp.n_states;
  if ((int)sg.gp->n_input != sp.n_states + sp.n_scans || sp.n_outs < 0)
    return fc_lx_error(l, "body has %zu inputs and %zu outputs; %d states and %d scan inputs need %d inputs and at "
                       "least %d outputs", sg.gp->n_input, sg.gp->n_output, sp.n_states, sp.n_scans,
                       sp.n_states + sp.n_scans, sp.n_states);
  if (l->n_out > sp.n_states + sp.n_outs)
    return fc_lx_error(l, "has %d outputs, but its body defines %d", l->n_out, sp.n_states + sp.n_outs);
  for (int i = first; i < l->n_in; i++)
    if (!l->in[i]) return fc_lx_error(l, "input %d is missing", i);
  if (v8) {
    if (!list_attr(l, "directions", sp.n_scans, true, &sp.in_rev)) return fc_lx_bail(l);
    return scan8(l, &sg, &sp);
  }
  const int64_t *in_axes, *out_axes;
  if (!list_attr(l, "scan_input_axes", sp.n_scans, false, &in_axes) ||
      !list_attr(l, "scan_input_directions", sp.n_scans, true, &sp.in_rev) ||
      !list_attr(l, "scan_output_axes", sp.n_outs, false, &out_axes) ||
      !list_attr(l, "scan_output_directions", sp.n_outs, true, &sp.out_rev))
    return fc_lx_bail(l);
  int N = sp.n_states;
  FcValue **xs = FC_NEW_ARRAY(fc_lx_arena(l), FcValue *, (size_t)sp.n_scans);
  for (int j = 0; j < sp.n_scans; j++) {
    FcValue *x = l->in[N + j];
    int rank = x->type.rank;
    int64_t a;
    if (rank < 1) return fc_lx_error(l, "scan input %d is 0-D", j);
    if (!fc_lx_axis(l, in_axes ? in_axes[j] : 0, rank, &a)) return fc_lx_bail(l);
    if (a != 0) { /* the scan axis first */
      int64_t *perm = fc_lx_dims(l, rank);
      perm[0] = a;
      for (int p = 1; p < rank; p++) perm[p] = p <= a ? p - 1 : p;
      x = fc_b_transpose(l->b, x, perm);
    }
    xs[j] = x;
  }
  if (fc_b_status(l->b) != FC_OK) return fc_lx_bail(l);
  sp.out_axes = out_axes; /* normalised against each output's rank, known once the body is built */
  FcValue **res = FC_NEW_ARRAY(fc_lx_arena(l), FcValue *, (size_t)(N + sp.n_outs + 1));
  st = scan_core(l, &sg, &sp, l->in, xs, res);
  if (st != FC_OK) return st;
  for (int i = 0; i < l->n_out; i++) l->out[i] = res[i];
  return fc_lx_finish(l);
}

/* ---- If -------------------------------------------------------------------------------------------- */

FcStatus fc_lower_if(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  FcLxSubgraph br[2];
  if ((st = fc_lx_subgraph(l, "then_branch", &br[0])) != FC_OK) return st;
  if ((st = fc_lx_subgraph(l, "else_branch", &br[1])) != FC_OK) return st;
  int n = (int)br[0].gp->n_output;
  if ((int)br[1].gp->n_output != n)
    return fc_lx_error(l, "then_branch has %d outputs and else_branch %zu", n, br[1].gp->n_output);
  if (l->n_out > n) return fc_lx_error(l, "has %d outputs, but its branches define %d", l->n_out, n);
  FcValue *cond = as_scalar(l, l->b, l->in[0], FC_DT_BOOL, "the condition");
  if (!cond) return fc_lx_bail(l);
  FcValue **outs[2];
  for (int r = 0; r < 2; r++) outs[r] = FC_NEW_ARRAY(fc_lx_arena(l), FcValue *, (size_t)n + 1);

  const FcTensor *c = fc_lx_try_const_input(l, 0);
  if (c) { /* the taken branch, in place */
    const FcLxSubgraph *taken = &br[fc_tensor_get_i64(c, 0) != 0 ? 0 : 1];
    if ((st = fc_lx_import_subgraph(l, taken, l->b->g, NULL, 0, taken->caps, outs[0])) != FC_OK) return st;
    for (int i = 0; i < l->n_out; i++) l->out[i] = outs[0][i];
    return fc_lx_finish(l);
  }

  /* Operands: cond, then the captures of both branches, each once. */
  int n_ops = 1;
  FcValue **ops = FC_NEW_ARRAY(fc_lx_arena(l), FcValue *, (size_t)(1 + br[0].n_caps + br[1].n_caps));
  int *at[2];
  ops[0] = cond;
  for (int r = 0; r < 2; r++) {
    at[r] = FC_NEW_ARRAY(fc_lx_arena(l), int, (size_t)br[r].n_caps + 1);
    for (int i = 0; i < br[r].n_caps; i++) {
      int j = 1;
      while (j < n_ops && ops[j] != br[r].caps[i]) j++;
      if (j == n_ops) ops[n_ops++] = br[r].caps[i];
      at[r][i] = j - 1;
    }
  }
  FcOp *op = fc_b_region_op(l->b, FC_OP_IF, ops, n_ops, n, NULL, 0);
  if (!op) return fc_lx_bail(l);
  for (int r = 0; r < 2 && st == FC_OK; r++) {
    FcGraph *g = op->regions[r];
    FcValue **args = FC_NEW_ARRAY(fc_lx_arena(l), FcValue *, (size_t)br[r].n_caps + 1);
    for (int i = 0; i < br[r].n_caps; i++) args[i] = g->inputs[at[r][i]];
    st = fc_lx_import_subgraph(l, &br[r], g, NULL, 0, args, outs[r]);
  }
  for (int i = 0; i < n && st == FC_OK; i++)
    if (!fc_type_equal(&outs[0][i]->type, &outs[1][i]->type))
      st = fc_lx_error(l, "output %d is %s in then_branch but %s in else_branch; flowc needs static shapes", i,
                             type_str(l, &outs[0][i]->type), type_str(l, &outs[1][i]->type));
  if (st != FC_OK) {
    drop_region_op(op);
    return st;
  }
  for (int r = 0; r < 2; r++) fc_graph_set_yield(op->regions[r], outs[r], n);
  if (!fc_b_region_op_finish(l->b, op)) return fc_lx_bail(l);
  for (int i = 0; i < l->n_out; i++) l->out[i] = &op->results[i];
  return fc_lx_finish(l);
}
