/* lower_rnn.c — RNN, GRU and LSTM, each direction one flow.loop over the time steps.
 *
 * Per direction, the input projection of all time steps is one matmul ([seq*batch, I] x [I, G*H]) plus
 * the combined biases, outside the loop; the loop body (whose size does not depend on the sequence
 * length) reads row t of it (t = iter, or seq-1-iter in reverse), adds h_{t-1} R^T, slices out the gates,
 * and applies the gate equations of the ONNX spec with the layer's activations (the defaults or the
 * listed ones with their alpha/beta, consumed from activation_alpha/activation_beta in list order as
 * onnxruntime does), clip, GRU's linear_before_reset and LSTM's peepholes and input_forget. h (and c)
 * are loop-carried; the step's Y row is a scan output. The weights the body reads are captures.
 *
 * When some sequence may be shorter than the tensor, each step selects between the new and the carried
 * state with a [batch, 1] mask (t < len[b]) against the lengths (a constant when sequence_lens is one,
 * no mask at all when every length is full, else the captured run-time lengths), and the step's Y row is
 * zero where the mask is off. Running the reverse direction from t = seq-1 down with the same masks
 * starts each sequence at its own last element, as the spec requires; its scan rows come out in
 * iteration order and are reversed once. Y, Y_h and Y_c are assembled from the loops' results with
 * concat/reshape (and a transpose for layout 1).
 */
#include "onnx.h"

#include <string.h>
#include <strings.h>

static bool has_input(const FcLower *l, int i) { return i < l->n_in && l->in[i] != NULL; }

/* ---- activations ---------------------------------------------------------------------------------- */

typedef enum {
  ACT_RELU, ACT_TANH, ACT_SIGMOID, ACT_AFFINE, ACT_LEAKY_RELU, ACT_THRESHOLDED_RELU, ACT_SCALED_TANH,
  ACT_HARD_SIGMOID, ACT_ELU, ACT_SOFTSIGN, ACT_SOFTPLUS,
} ActKind;

static const struct {
  const char *name;
  ActKind kind;
  int n_params;      /* 0: none, 1: alpha, 2: alpha and beta */
  float alpha, beta; /* defaults when the lists run out */
} act_table[] = {
    {"Relu", ACT_RELU, 0, 0, 0},
    {"Tanh", ACT_TANH, 0, 0, 0},
    {"Sigmoid", ACT_SIGMOID, 0, 0, 0},
    {"Affine", ACT_AFFINE, 2, 1.0f, 0.0f},
    {"LeakyRelu", ACT_LEAKY_RELU, 1, 0.01f, 0},
    {"ThresholdedRelu", ACT_THRESHOLDED_RELU, 1, 1.0f, 0},
    {"ScaledTanh", ACT_SCALED_TANH, 2, 1.0f, 1.0f},
    {"HardSigmoid", ACT_HARD_SIGMOID, 2, 0.2f, 0.5f},
    {"Elu", ACT_ELU, 1, 1.0f, 0},
    {"Softsign", ACT_SOFTSIGN, 0, 0, 0},
    {"Softplus", ACT_SOFTPLUS, 0, 0, 0},
};

typedef struct Act {
  ActKind kind;
  float alpha, beta;
} Act;

enum { MAX_ACTS = 3, N_SCALARS = 16 };

typedef struct { double v; FcValue *val; } ScalarCache[N_SCALARS];

typedef struct Rnn {
  FcLower *l;
  FcBuilder *b;
  FcDtype dt;
  int G;                 /* gates: RNN 1, GRU 3, LSTM 4 */
  int n_acts;            /* activations per direction: 1, 2, 3 */
  int dirs;
  bool reverse_only;
  int64_t seq, batch, input, H;
  bool has_clip;
  float clip;
  bool lbr;              /* GRU linear_before_reset */
  bool input_forget;     /* LSTM */
  const int64_t *lens;   /* constant sequence_lens, NULL when every sequence is full or lens_col is set */
  FcValue *lens_col;     /* a non-constant sequence_lens as [batch, 1] */
  Act act[2][MAX_ACTS];
  ScalarCache scalars;   /* reused constants of the graph being built */
  int n_scalars;
} Rnn;

static FcValue *scalar(Rnn *r, double v) {
  for (int i = 0; i < r->n_scalars; i++)
    if (r->scalars[i].v == v) return r->scalars[i].val;
  FcValue *s = fc_b_scalar(r->b, r->dt, v);
  if (s && r->n_scalars < N_SCALARS) {
    r->scalars[r->n_scalars].v = v;
    r->scalars[r->n_scalars++].val = s;
  }
  return s;
}

static FcValue *bin(Rnn *r, FcOpKind k, FcValue *x, FcValue *y) { return fc_b_binary(r->b, k, x, y); }

/* Every builder call below is its own statement: C leaves the order in which a call's arguments are
 * evaluated unspecified, so two op-creating arguments would number ops differently under gcc and clang. */
static FcValue *apply_act(Rnn *r, const Act *a, FcValue *x) {
  FcBuilder *b = r->b;
  switch (a->kind) {
  case ACT_RELU: return fc_b_unary(b, FC_OP_RELU, x);
  case ACT_TANH: return fc_b_unary(b, FC_OP_TANH, x);
  case ACT_SIGMOID: return fc_b_unary(b, FC_OP_SIGMOID, x);
  case ACT_SOFTPLUS: return fc_b_unary(b, FC_OP_SOFTPLUS, x);
  case ACT_AFFINE: {
    FcValue *alpha = scalar(r, a->alpha), *beta = scalar(r, a->beta);
    FcValue *ax = bin(r, FC_OP_MUL, x, alpha);
    return bin(r, FC_OP_ADD, ax, beta);
  }
  case ACT_LEAKY_RELU: {
    FcValue *zero = scalar(r, 0), *alpha = scalar(r, a->alpha);
    FcValue *neg = bin(r, FC_OP_LESS, x, zero);
    FcValue *ax = bin(r, FC_OP_MUL, x, alpha);
    return fc_b_select(b, neg, ax, x);
  }
  case ACT_THRESHOLDED_RELU: {
    FcValue *zero = scalar(r, 0), *alpha = scalar(r, a->alpha);
    FcValue *above = bin(r, FC_OP_GREATER, x, alpha);
    return fc_b_select(b, above, x, zero);
  }
  case ACT_SCALED_TANH: {
    FcValue *alpha = scalar(r, a->alpha), *beta = scalar(r, a->beta);
    FcValue *bx = bin(r, FC_OP_MUL, x, beta);
    FcValue *t = fc_b_unary(b, FC_OP_TANH, bx);
    return bin(r, FC_OP_MUL, t, alpha);
  }
  case ACT_HARD_SIGMOID: {
    FcValue *alpha = scalar(r, a->alpha), *beta = scalar(r, a->beta), *one = scalar(r, 1), *zero = scalar(r, 0);
    FcValue *ax = bin(r, FC_OP_MUL, x, alpha);
    FcValue *y = bin(r, FC_OP_ADD, ax, beta);
    FcValue *lo = bin(r, FC_OP_MIN, y, one);
    return bin(r, FC_OP_MAX, lo, zero);
  }
  case ACT_ELU: {
    FcValue *one = scalar(r, 1), *alpha = scalar(r, a->alpha), *zero = scalar(r, 0);
    FcValue *e = fc_b_unary(b, FC_OP_EXP, x);
    FcValue *em1 = bin(r, FC_OP_SUB, e, one);
    FcValue *neg = bin(r, FC_OP_MUL, em1, alpha);
    FcValue *is_neg = bin(r, FC_OP_LESS, x, zero);
    return fc_b_select(b, is_neg, neg, x);
  }
  case ACT_SOFTSIGN: {
    FcValue *one = scalar(r, 1);
    FcValue *ax = fc_b_unary(b, FC_OP_ABS, x);
    FcValue *den = bin(r, FC_OP_ADD, ax, one);
    return bin(r, FC_OP_DIV, x, den);
  }
  }
  FC_UNREACHABLE();
}

/* clip(x) then activation k of direction d. */
static FcValue *gate(Rnn *r, int d, int k, FcValue *x) {
  if (r->has_clip) {
    FcValue *hi = scalar(r, r->clip), *lo = scalar(r, -r->clip);
    FcValue *m = bin(r, FC_OP_MIN, x, hi);
    x = bin(r, FC_OP_MAX, m, lo);
  }
  return apply_act(r, &r->act[d][k], x);
}

static const Onnx__AttributeProto *find_attr(const FcLower *l, const char *name) {
  for (size_t i = 0; i < l->node->n_attribute; i++)
    if (l->node->attribute[i]->name && !strcmp(l->node->attribute[i]->name, name)) return l->node->attribute[i];
  return NULL;
}

/* Reads activations/activation_alpha/activation_beta into r->act, starting from the op's defaults.
 * One list for each direction, or (bidirectional) one list shared by both. */
static FcStatus parse_acts(Rnn *r, const ActKind *defaults) {
  FcLower *l = r->l;
  for (int d = 0; d < 2; d++)
    for (int k = 0; k < r->n_acts; k++) r->act[d][k] = (Act){defaults[k], 0, 0};
  const Onnx__AttributeProto *a = find_attr(l, "activations");
  if (!a || a->n_strings == 0) return FC_OK;
  int n = (int)a->n_strings;
  if (n != r->n_acts * r->dirs && n != r->n_acts)
    return fc_lx_error(l, "%d activations given, expected %d", n, r->n_acts * r->dirs);
  const float *alphas, *betas;
  int na = fc_lx_floats(l, "activation_alpha", &alphas), nb = fc_lx_floats(l, "activation_beta", &betas);
  int ia = 0, ib = 0;
  Act parsed[2 * MAX_ACTS];
  for (int i = 0; i < n; i++) {
    const ProtobufCBinaryData *s = &a->strings[i];
    size_t t = 0, nt = sizeof act_table / sizeof act_table[0];
    while (t < nt &&
           !(strlen(act_table[t].name) == s->len && !strncasecmp(act_table[t].name, (const char *)s->data, s->len)))
      t++;
    if (t == nt)
      return fc_lx_unsupported(l, "activation '%.*s' is not supported", (int)(s->len > 64 ? 64 : s->len),
                               (const char *)s->data);
    Act *p = &parsed[i];
    p->kind = act_table[t].kind;
    p->alpha = act_table[t].alpha;
    p->beta = act_table[t].beta;
    if (act_table[t].n_params >= 1 && ia < na) p->alpha = alphas[ia++];
    if (act_table[t].n_params >= 2 && ib < nb) p->beta = betas[ib++];
  }
  for (int d = 0; d < r->dirs; d++)
    for (int k = 0; k < r->n_acts; k++) r->act[d][k] = parsed[n == r->n_acts ? k : d * r->n_acts + k];
  return FC_OK;
}

/* ---- tensor helpers ------------------------------------------------------------------------------- */

static FcValue *slice_axis(Rnn *r, FcValue *x, int axis, int64_t start, int64_t len) {
  if (!x) return NULL;
  int rank = x->type.rank;
  int64_t *s = FC_NEW_ARRAY(fc_lx_arena(r->l), int64_t, (size_t)rank),
          *e = FC_NEW_ARRAY(fc_lx_arena(r->l), int64_t, (size_t)rank),
          *st = FC_NEW_ARRAY(fc_lx_arena(r->l), int64_t, (size_t)rank);
  for (int i = 0; i < rank; i++) {
    s[i] = 0;
    e[i] = x->type.dims[i];
    st[i] = 1;
  }
  s[axis] = start;
  e[axis] = start + len;
  return fc_b_slice(r->b, x, s, e, st);
}

/* x[d] of a [dirs, ...] tensor, as a tensor of rank - 1. */
static FcValue *take_dir(Rnn *r, FcValue *x, int d) {
  FcValue *s = slice_axis(r, x, 0, d, 1);
  return s ? fc_b_reshape(r->b, s, s->type.rank - 1, s->type.dims + 1) : NULL;
}

static FcValue *cols(Rnn *r, FcValue *x, int64_t gate_index, int64_t n_gates) {
  return slice_axis(r, x, 1, gate_index * r->H, n_gates * r->H);
}

static FcValue *transpose2(Rnn *r, FcValue *x) {
  static const int64_t swap[2] = {1, 0};
  return fc_b_transpose(r->b, x, swap);
}

/* [batch, 1] mask of the sequences still running at time t (a 0-d i64: the iteration's time index in
 * the loop body, or a constant outside it): t < lens, against the lengths as a [batch, 1] constant or the
 * run-time column (folded when both are constants). */
static FcValue *step_mask(Rnn *r, FcValue *t) {
  FcValue *lens = r->lens_col;
  if (!lens) {
    int64_t dims[2] = {r->batch, 1};
    lens = fc_b_const(r->b, FC_DT_I64, 2, dims, r->lens);
  }
  FcValue *tc = lens->type.dtype == FC_DT_I64 ? t : fc_b_cast(r->b, t, lens->type.dtype);
  return fc_b_binary(r->b, FC_OP_LESS, tc, lens);
}

/* ---- the layer ------------------------------------------------------------------------------------ */

typedef enum { K_RNN, K_GRU, K_LSTM } Kind;

typedef struct DirOut {
  FcValue *y; /* [seq, batch, H] in time order */
  FcValue *h, *c;
} DirOut;

/* What the loop body reads from outside: captured operands, each replaced by its block argument while
 * the body is built. */
enum { CAP_XW, CAP_RT, CAP_RT_ZR, CAP_RT_H, CAP_RB_H, CAP_P_I, CAP_P_O, CAP_P_F, CAP_LENS, N_CAPS };

/* One step of the recurrence at time index t (0-d i64): the gate equations on xt = row t of the input
 * projection. Sets *hn (and *cn for LSTM) from h (and c). */
static void step(Rnn *r, Kind kind, int d, FcValue *const *cap, FcValue *xt, FcValue *h, FcValue *c, FcValue **hn_out,
                 FcValue **cn_out) {
  FcValue *hn, *cn = NULL;
  FcValue *rt = cap[CAP_RT];
  if (kind == K_RNN) {
    hn = gate(r, d, 0, bin(r, FC_OP_ADD, xt, bin(r, FC_OP_MATMUL, h, rt)));
  } else if (kind == K_GRU) {
    FcValue *z, *rg, *hh;
    /* Each builder call is its own statement (argument evaluation order is unspecified in C). */
    FcValue *hg = bin(r, FC_OP_MATMUL, h, r->lbr ? rt : cap[CAP_RT_ZR]); /* h times the z, r (and h) blocks */
    FcValue *xz = cols(r, xt, 0, 1), *hz = cols(r, hg, 0, 1);
    z = gate(r, d, 0, bin(r, FC_OP_ADD, xz, hz));
    FcValue *xr = cols(r, xt, 1, 1), *hr_ = cols(r, hg, 1, 1);
    rg = gate(r, d, 0, bin(r, FC_OP_ADD, xr, hr_));
    FcValue *xh = cols(r, xt, 2, 1), *rec;
    if (!r->lbr) {
      FcValue *rh = bin(r, FC_OP_MUL, rg, h);
      rec = bin(r, FC_OP_MATMUL, rh, cap[CAP_RT_H]);
    } else {
      FcValue *hr = cols(r, hg, 2, 1);
      if (cap[CAP_RB_H]) hr = bin(r, FC_OP_ADD, hr, cap[CAP_RB_H]);
      rec = bin(r, FC_OP_MUL, rg, hr);
    }
    hh = gate(r, d, 1, bin(r, FC_OP_ADD, xh, rec));
    /* (1 - z) * hh + z * h, written as hh + z * (h - hh) */
    hn = bin(r, FC_OP_ADD, hh, bin(r, FC_OP_MUL, z, bin(r, FC_OP_SUB, h, hh)));
  } else {
    FcValue *g = bin(r, FC_OP_ADD, xt, bin(r, FC_OP_MATMUL, h, rt)); /* gates i, o, f, c */
    FcValue *ip = cols(r, g, 0, 1), *op = cols(r, g, 1, 1), *fp = cols(r, g, 2, 1), *cp = cols(r, g, 3, 1);
    if (cap[CAP_P_I]) ip = bin(r, FC_OP_ADD, ip, bin(r, FC_OP_MUL, cap[CAP_P_I], c));
    FcValue *ig = gate(r, d, 0, ip), *fg;
    if (r->input_forget) {
      fg = bin(r, FC_OP_SUB, scalar(r, 1), ig);
    } else {
      if (cap[CAP_P_F]) fp = bin(r, FC_OP_ADD, fp, bin(r, FC_OP_MUL, cap[CAP_P_F], c));
      fg = gate(r, d, 0, fp);
    }
    FcValue *keep = bin(r, FC_OP_MUL, fg, c);
    FcValue *cand = gate(r, d, 1, cp);
    FcValue *add = bin(r, FC_OP_MUL, ig, cand);
    cn = bin(r, FC_OP_ADD, keep, add);
    if (cap[CAP_P_O]) op = bin(r, FC_OP_ADD, op, bin(r, FC_OP_MUL, cap[CAP_P_O], cn));
    FcValue *og = gate(r, d, 0, op);
    FcValue *hc = apply_act(r, &r->act[d][2], cn);
    hn = bin(r, FC_OP_MUL, og, hc);
  }
  *hn_out = hn;
  *cn_out = cn;
}

static bool loop_dir(Rnn *r, Kind kind, int d, FcValue *const *cap, DirOut *o);

/* Direction d as one flow.loop over the time steps. x2 is [seq*batch, I]; h0/c0 are [batch, H]. The
 * input projection of every step is one matmul outside the loop; the body reads its row t (seq-1-iter
 * when reversed), carries h (and c), and yields the step's Y row as a scan output. */
static void run_dir(Rnn *r, Kind kind, int d, FcValue *x2, FcValue *h0, FcValue *c0, DirOut *o) {
  FcLower *l = r->l;
  int G = r->G;
  int64_t H = r->H;
  FcValue *cap[N_CAPS] = {0};
  FcValue *w = take_dir(r, l->in[1], d), *rw = take_dir(r, l->in[2], d); /* [G*H, I], [G*H, H] */
  FcValue *xw = bin(r, FC_OP_MATMUL, x2, transpose2(r, w));              /* [seq*batch, G*H] */
  if (has_input(l, 3)) {
    FcValue *bias = take_dir(r, l->in[3], d); /* [2*G*H] */
    FcValue *wb = slice_axis(r, bias, 0, 0, G * H), *rb = slice_axis(r, bias, 0, G * H, G * H);
    FcValue *xb;
    if (kind == K_GRU && r->lbr) {
      FcValue *zr = bin(r, FC_OP_ADD, slice_axis(r, wb, 0, 0, 2 * H), slice_axis(r, rb, 0, 0, 2 * H));
      FcValue *parts[2] = {zr, slice_axis(r, wb, 0, 2 * H, H)};
      xb = fc_b_concat(r->b, parts, 2, 0);
      cap[CAP_RB_H] = slice_axis(r, rb, 0, 2 * H, H); /* GRU lbr: Rb of the h gate */
    } else {
      xb = bin(r, FC_OP_ADD, wb, rb);
    }
    xw = bin(r, FC_OP_ADD, xw, xb);
  }
  int64_t xw3d[3] = {r->seq, r->batch, G * H};
  cap[CAP_XW] = fc_b_reshape(r->b, xw, 3, xw3d);
  FcValue *rt = transpose2(r, rw); /* [H, G*H] */
  if (kind == K_GRU && !r->lbr) {
    cap[CAP_RT_ZR] = slice_axis(r, rt, 1, 0, 2 * H);
    cap[CAP_RT_H] = slice_axis(r, rt, 1, 2 * H, H);
  } else {
    cap[CAP_RT] = rt;
  }
  if (kind == K_LSTM && has_input(l, 7)) {
    FcValue *p = take_dir(r, l->in[7], d); /* [3H] */
    cap[CAP_P_I] = slice_axis(r, p, 0, 0, H);
    cap[CAP_P_O] = slice_axis(r, p, 0, H, H);
    cap[CAP_P_F] = slice_axis(r, p, 0, 2 * H, H);
  }
  cap[CAP_LENS] = r->lens_col;
  o->h = h0;
  o->c = c0;
  if (r->seq > 0 && !loop_dir(r, kind, d, cap, o)) return;

  /* A sequence of length 0 ends in a zero state rather than the initial one, as in onnxruntime. */
  bool empty = r->lens_col != NULL;
  for (int64_t i = 0; r->lens && i < r->batch; i++) empty |= r->lens[i] == 0;
  if (empty) {
    FcValue *m = step_mask(r, fc_b_scalar(r->b, FC_DT_I64, 0));
    o->h = fc_b_select(r->b, m, o->h, scalar(r, 0));
    if (o->c) o->c = fc_b_select(r->b, m, o->c, scalar(r, 0));
  }
}

/* The loop of direction d, from the initial state in o->h (and o->c); sets o's Y rows and final state. */
static bool loop_dir(Rnn *r, Kind kind, int d, FcValue *const *cap, DirOut *o) {
  FcLower *l = r->l;
  FcValue *c0 = o->c;
  bool reverse = r->reverse_only || d == 1;
  /* Operands: trip, cond, h0 (, c0), then the captures present. */
  FcValue *ops[4 + N_CAPS];
  int n = 0, k = c0 ? 2 : 1;
  ops[n++] = fc_b_scalar(r->b, FC_DT_I64, (double)r->seq);
  ops[n++] = fc_b_scalar(r->b, FC_DT_BOOL, 1);
  ops[n++] = o->h;
  if (c0) ops[n++] = c0;
  int cap_at[N_CAPS];
  for (int i = 0; i < N_CAPS; i++) {
    cap_at[i] = cap[i] ? n : -1;
    if (cap[i]) ops[n++] = cap[i];
  }
  FcLxLoop lp;
  if (!fc_lx_loop_begin(l, &lp, ops, n, k, 1, r->seq)) return false;

  /* The body: r->b and the lens column point into it while it is built; constants are its own. */
  FcBuilder *outer = r->b;
  FcValue *outer_lens = r->lens_col;
  int outer_n_scalars = r->n_scalars;
  ScalarCache outer_scalars;
  memcpy(outer_scalars, r->scalars, sizeof outer_scalars);
  r->b = &lp.body;
  r->n_scalars = 0;
  FcValue *bcap[N_CAPS];
  for (int i = 0; i < N_CAPS; i++) bcap[i] = cap_at[i] >= 0 ? lp.args[cap_at[i]] : NULL;
  r->lens_col = bcap[CAP_LENS];
  FcValue *iter = lp.args[0], *h = lp.args[2], *c = c0 ? lp.args[3] : NULL;
  FcValue *t = iter;
  if (reverse) {
    FcValue *last = fc_b_scalar(r->b, FC_DT_I64, (double)(r->seq - 1));
    t = fc_b_binary(r->b, FC_OP_SUB, last, iter);
  }
  FcValue *xt = fc_lx_gather_row(r->b, bcap[CAP_XW], t); /* [batch, G*H] */
  FcValue *hn, *cn, *y;
  step(r, kind, d, bcap, xt, h, c, &hn, &cn);
  if (r->lens || r->lens_col) {
    FcValue *m = step_mask(r, t);
    y = fc_b_select(r->b, m, hn, scalar(r, 0));
    hn = fc_b_select(r->b, m, hn, h);
    if (cn) cn = fc_b_select(r->b, m, cn, c);
  } else {
    y = hn;
  }
  FcValue *yields[4] = {lp.args[1], hn, cn ? cn : y, y};
  r->b = outer;
  r->lens_col = outer_lens;
  r->n_scalars = outer_n_scalars;
  memcpy(r->scalars, outer_scalars, sizeof outer_scalars);
  FcOp *loop = fc_lx_loop_end(l, &lp, yields, 2 + k);
  if (!loop) return false;
  o->h = &loop->results[0];
  o->c = c0 ? &loop->results[1] : NULL;
  o->y = &loop->results[k];
  if (reverse) o->y = fc_lx_reverse_rows(l, r->b, o->y);
  return fc_b_status(r->b) == FC_OK;
}

/* Initial state [dirs, batch, H] (layout 0) or [batch, dirs, H] (layout 1) for direction d, or zeros. */
static FcValue *initial_state(Rnn *r, int idx, bool layout1, int d) {
  int64_t dims[2] = {r->batch, r->H};
  if (!has_input(r->l, idx)) return fc_b_broadcast(r->b, scalar(r, 0), 2, dims);
  FcValue *s = r->l->in[idx];
  if (layout1) {
    static const int64_t perm[3] = {1, 0, 2};
    s = fc_b_transpose(r->b, s, perm);
  }
  return take_dir(r, s, d);
}

static FcStatus check_shape(FcLower *l, const FcValue *v, const char *what, int rank, const int64_t *dims) {
  bool ok = v->type.rank == rank;
  for (int i = 0; ok && i < rank; i++) ok = v->type.dims[i] == dims[i];
  if (ok) return FC_OK;
  FcType want = {v->type.dtype, rank, dims};
  char got[256], exp[256];
  fc_type_str(&v->type, got, sizeof got);
  fc_type_str(&want, exp, sizeof exp);
  return fc_lx_error(l, "%s has type %s, expected %s", what, got, exp);
}

static FcStatus lower_recurrent(FcLower *l, Kind kind) {
  for (int i = 0; i < 3; i++)
    if (!has_input(l, i)) return fc_lx_error(l, "input %d is required", i);
  Rnn *r = FC_NEW(fc_lx_arena(l), Rnn);
  r->l = l;
  r->b = l->b;
  r->G = kind == K_RNN ? 1 : kind == K_GRU ? 3 : 4;
  r->n_acts = kind == K_RNN ? 1 : kind == K_GRU ? 2 : 3;
  FcValue *x = l->in[0], *w = l->in[1], *rw = l->in[2];
  r->dt = x->type.dtype;
  if (!fc_dtype_is_float(r->dt)) return fc_lx_error(l, "X must be a float tensor, got %s", fc_dtype_name(r->dt));
  if (x->type.rank != 3 || w->type.rank != 3 || rw->type.rank != 3) return fc_lx_error(l, "X, W and R must be 3-D");
  int64_t layout = l->opset >= 14 ? fc_lx_int(l, "layout", 0) : 0;
  if (layout != 0 && layout != 1) return fc_lx_error(l, "layout must be 0 or 1");
  const char *dir = fc_lx_str(l, "direction", "forward");
  if (!strcmp(dir, "forward")) r->dirs = 1;
  else if (!strcmp(dir, "reverse")) r->dirs = 1, r->reverse_only = true;
  else if (!strcmp(dir, "bidirectional")) r->dirs = 2;
  else return fc_lx_error(l, "unknown direction '%s'", dir);
  r->seq = x->type.dims[layout ? 1 : 0];
  r->batch = x->type.dims[layout ? 0 : 1];
  r->input = x->type.dims[2];
  r->H = rw->type.dims[2];
  if (fc_lx_has_attr(l, "hidden_size") && fc_lx_int(l, "hidden_size", 0) != r->H)
    return fc_lx_error(l, "hidden_size %lld disagrees with R's %lld", (long long)fc_lx_int(l, "hidden_size", 0),
                       (long long)r->H);
  int64_t gh, sb;
  if (!fc_checked_mul(r->G, r->H, &gh) || !fc_checked_mul(r->seq, r->batch, &sb))
    return fc_lx_error(l, "sizes overflow");
  FcStatus st;
  int64_t wd[3] = {r->dirs, gh, r->input}, rd[3] = {r->dirs, gh, r->H}, bd[2] = {r->dirs, 2 * gh};
  int64_t hd[3] = {layout ? r->batch : r->dirs, layout ? r->dirs : r->batch, r->H}, pd[2] = {r->dirs, 3 * r->H};
  if ((st = check_shape(l, w, "W", 3, wd)) != FC_OK || (st = check_shape(l, rw, "R", 3, rd)) != FC_OK) return st;
  if (has_input(l, 3) && (st = check_shape(l, l->in[3], "B", 2, bd)) != FC_OK) return st;
  if (has_input(l, 5) && (st = check_shape(l, l->in[5], "initial_h", 3, hd)) != FC_OK) return st;
  if (kind == K_LSTM && has_input(l, 6) && (st = check_shape(l, l->in[6], "initial_c", 3, hd)) != FC_OK) return st;
  if (kind == K_LSTM && has_input(l, 7) && (st = check_shape(l, l->in[7], "P", 2, pd)) != FC_OK) return st;
  for (int i = 1; i < l->n_in; i++)
    if (has_input(l, i) && i != 4 && l->in[i]->type.dtype != r->dt)
      return fc_lx_error(l, "input %d's dtype differs from X's", i);

  const FcTensor *t = has_input(l, 4) ? fc_lx_try_const_input(l, 4) : NULL;
  if (has_input(l, 4)) {
    FcValue *sl = l->in[4];
    if (sl->type.rank != 1 || sl->type.dims[0] != r->batch)
      return fc_lx_error(l, "sequence_lens must have shape [%lld]", (long long)r->batch);
    if (!fc_dtype_is_int(sl->type.dtype)) return fc_lx_error(l, "sequence_lens must hold integers");
  }
  if (t) {
    int64_t *lens = FC_NEW_ARRAY(fc_lx_arena(l), int64_t, (size_t)(r->batch > 0 ? r->batch : 1));
    bool all_full = true;
    for (int64_t i = 0; i < r->batch; i++) {
      lens[i] = fc_tensor_get_i64(t, i);
      if (lens[i] < 0 || lens[i] > r->seq)
        return fc_lx_error(l, "sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)i, (long long)lens[i],
                           (long long)r->seq);
      all_full &= lens[i] == r->seq;
    }
    if (!all_full) r->lens = lens;
  }
  if (fc_lx_has_attr(l, "clip")) {
    r->has_clip = true;
    r->clip = fc_lx_float(l, "clip", 0);
    if (!(r->clip > 0)) return fc_lx_error(l, "clip must be positive");
  }
  r->lbr = kind == K_GRU && l->opset >= 3 && fc_lx_int(l, "linear_before_reset", 0) != 0;
  r->input_forget = kind == K_LSTM && fc_lx_int(l, "input_forget", 0) != 0;
  static const ActKind dflt[3][3] = {{ACT_TANH}, {ACT_SIGMOID, ACT_TANH}, {ACT_SIGMOID, ACT_TANH, ACT_TANH}};
  if ((st = parse_acts(r, dflt[kind])) != FC_OK) return st;
  if (has_input(l, 4) && !t) {
    int64_t col[2] = {r->batch, 1};
    r->lens_col = fc_b_reshape(l->b, l->in[4], 2, col);
  }

  FcBuilder *b = l->b;
  if (layout) {
    static const int64_t perm[3] = {1, 0, 2};
    x = fc_b_transpose(b, x, perm);
  }
  int64_t x2d[2] = {sb, r->input};
  FcValue *x2 = fc_b_reshape(b, x, 2, x2d);
  DirOut outs[2];
  for (int d = 0; d < r->dirs; d++) {
    FcValue *h0 = initial_state(r, 5, layout, d), *c0 = kind == K_LSTM ? initial_state(r, 6, layout, d) : NULL;
    run_dir(r, kind, d, x2, h0, c0, &outs[d]);
    if (fc_b_status(b) != FC_OK) return fc_lx_finish(l);
  }

  if (fc_lx_out_named(l, 0)) {
    int64_t yd[4] = {r->seq, r->dirs, r->batch, r->H};
    FcValue *y;
    if (r->seq == 0) {
      y = fc_b_broadcast(b, scalar(r, 0), 4, yd);
    } else {
      FcValue *per_dir[2];
      int64_t one[4] = {r->seq, 1, r->batch, r->H};
      for (int d = 0; d < r->dirs; d++) per_dir[d] = fc_b_reshape(b, outs[d].y, 4, one);
      y = r->dirs == 1 ? per_dir[0] : fc_b_concat(b, per_dir, 2, 1);
    }
    if (layout) {
      static const int64_t perm[4] = {2, 0, 1, 3};
      y = fc_b_transpose(b, y, perm);
    }
    l->out[0] = y;
  }
  for (int k = 1; k <= (kind == K_LSTM ? 2 : 1); k++) {
    if (!fc_lx_out_named(l, k)) continue;
    FcValue *parts[2];
    int64_t one[3] = {1, r->batch, r->H};
    for (int d = 0; d < r->dirs; d++) parts[d] = fc_b_reshape(b, k == 1 ? outs[d].h : outs[d].c, 3, one);
    FcValue *y = r->dirs == 1 ? parts[0] : fc_b_concat(b, parts, 2, 0);
    if (layout) {
      static const int64_t perm[3] = {1, 0, 2};
      y = fc_b_transpose(b, y, perm);
    }
    l->out[k] = y;
  }
  return fc_lx_finish(l);
}

FcStatus fc_lower_rnn(FcLower *l) { return lower_recurrent(l, K_RNN); }
FcStatus fc_lower_gru(FcLower *l) { return lower_recurrent(l, K_GRU); }
FcStatus fc_lower_lstm(FcLower *l) { return lower_recurrent(l, K_LSTM); }
