/* fuse_epilogue.c — fuses the element-wise ops that consume a conv's or matmul's result into the op
 * itself, as its `epilogue` program (ir/ew_program.h): bias adds, residual adds, ReLU, Clip, SiLU, GELU,
 * HardSwish and the like are then applied while the product is still in registers, and the
 * intermediate tensors disappear.
 *
 * For each f32 conv/matmul P with result X, a forward walk over the ops after P (at most WALK_LIMIT,
 * stopping once every use of the region's values has been seen) grows a region: an op joins when it
 * reads a region value, reads nothing that depends on the region from outside it ("tainted": results of
 * ops that read region values but did not join, transitively), is element-wise without attributes
 * (not a cast), has X's type as its result type (so it never broadcasts X up) and X's dtype on every
 * operand. Its other operands become extra operands of P (deduplicated), which broadcast to X's shape
 * because the op's result has exactly that shape.
 *
 * The walk is a topological order of the region, and the pass takes its longest prefix that is closed:
 * X and every value computed in the prefix except the last op's result have all their uses inside the
 * prefix (use counts, decremented as the prefix grows). That handles chains (conv → add → relu) and DAGs
 * where X or an intermediate value has several users that all join (SiLU: x * sigmoid(x); GELU:
 * x * 0.5 * (1 + erf(x / sqrt 2))). The prefix is also cut where the program would exceed
 * FC_EW_MAX_STEPS steps or the op the FC_PRODUCT_MAX_OPERANDS operands ops.def allows (10 extras for matmul, 9 for
 * conv).
 *
 * Rewriting: a new conv/matmul with P's operands, the extras after them and the program is created
 * just before the prefix's last op (every operand is defined before that point: P's operands precede P,
 * and each extra precedes the region op that read it), takes over that op's uses, and the region and P
 * are erased. A conv's first region op that adds a per-output-channel constant becomes (part of) the
 * conv's bias instead of a step. ops.def lets a conv's bias be absent only without extras, and the IR
 * has no null operand (the verifier, printer and parser all require operands), so a conv without a
 * bias that gets extras is given an explicit zero bias. An existing epilogue is extended: its last step
 * stands for X. f32 only: the CPU kernels compute epilogues for f32 convs and matmuls.
 * A quantised conv with an f32 result (qtype f32: the activation after it has no form as a qtype's range,
 * SiLU above all, or the quantisation after it is written out as float steps) takes an epilogue too, over
 * its f32 product, whose extras must be one-element constants (the kernels apply it to the product as
 * they requantise, with no operand to load): the activation, and the quantisation of the next layer's
 * input, div/round/add/max/min by the scale, the zero point and the bounds (the division as the product by
 * the scale's reciprocal: divisions_as_products). When the prefix's last result
 * only feeds a cast to u8 or i8, the conv takes the cast as its `to`, and writes the bytes: the f32 tensor
 * between a quantised model's convs disappears. Its i32 bias stays its own (a conv without one gets a zero
 * i32 bias where extras follow).
 * An integer matmul of 8-bit operands whose i32 result is only cast to f32 first takes the cast
 * (widen_int8_matmul: `to = f32`), and then its epilogue grows as an f32 matmul's.
 */
#include "ew_program.h"
#include "passes.h"
#include "rewrite.h"

#include <math.h>
#include <string.h>

enum {
  WALK_LIMIT = 512,          /* ops visited past P looking for its region's users */
  MAX_OPERANDS = FC_PRODUCT_MAX_OPERANDS, /* ops.def: what conv and matmul take at most */
  MAX_REGION = FC_EW_MAX_STEPS,
};

enum { ST_NONE, ST_REGION, ST_TAINT };

/* Per-value walk state, valid where gen[id] == cur (so no clearing between walks); grown on demand
 * because rewrites create values (new ops, zero biases) with fresh ids. */
typedef struct Marks {
  FcArena *arena;
  uint32_t cap, cur;
  uint32_t *gen;
  uint8_t *state;
  int32_t *slot; /* ST_REGION: 0 for X, j + 1 for region op j's result */
} Marks;

static void marks_grow(Marks *mk, uint32_t need) {
  if (need <= mk->cap) return;
  uint32_t cap = mk->cap ? mk->cap : 256;
  while (cap < need) cap *= 2;
  uint32_t *gen = FC_NEW_ARRAY(mk->arena, uint32_t, cap);
  uint8_t *state = FC_NEW_ARRAY(mk->arena, uint8_t, cap);
  int32_t *slot = FC_NEW_ARRAY(mk->arena, int32_t, cap);
  if (mk->cap) {
    memcpy(gen, mk->gen, mk->cap * sizeof *gen);
    memcpy(state, mk->state, mk->cap * sizeof *state);
    memcpy(slot, mk->slot, mk->cap * sizeof *slot);
  }
  mk->gen = gen;
  mk->state = state;
  mk->slot = slot;
  mk->cap = cap;
}

static int mark_of(const Marks *mk, const FcValue *v) {
  return v->id < mk->cap && mk->gen[v->id] == mk->cur ? mk->state[v->id] : ST_NONE;
}

static void mark(Marks *mk, const FcValue *v, int state, int32_t slot) {
  marks_grow(mk, v->id + 1);
  mk->gen[v->id] = mk->cur;
  mk->state[v->id] = (uint8_t)state;
  mk->slot[v->id] = slot;
}

typedef struct Fuser {
  FcModule *m;
  FcDiag *diag;
  Marks mk;
  FcOpStack scratch;
} Fuser;

/* Can `u` join a region whose root value is x? (Its operands' region membership is the caller's.) */
static bool joinable(const FcOp *u, const FcValue *x) {
  const FcOpInfo *info = fc_op_info(u->kind);
  if (!(info->flags & FC_OPF_ELEMENTWISE) || info->n_attrs != 0 || u->kind == FC_OP_CAST) return false;
  if (u->n_results != 1 || u->n_attrs != 0 || u->n_operands > FC_EW_MAX_ARGS) return false;
  if (!fc_type_equal(&u->results[0].type, &x->type) || !fc_value_has_uses(&u->results[0])) return false;
  for (int i = 0; i < u->n_operands; i++)
    if (u->operands[i].value->type.dtype != x->type.dtype) return false;
  return true;
}

/* The constant added to x by `u` when it is x + c or c + x with c per output channel of a conv result
 * of type xt (dims 1 except the channel dim), or NULL. */
static const FcTensor *channel_bias(const FcOp *u, const FcValue *x) {
  if (u->kind != FC_OP_ADD || u->n_operands != 2) return NULL;
  int ci = u->operands[0].value == x ? 1 : 0; /* the other operand */
  if (u->operands[1 - ci].value != x) return NULL;
  const FcTensor *c = fc_value_const(u->operands[ci].value);
  const FcType *xt = &x->type;
  if (!c || c->type.dtype != FC_DT_F32 || c->type.rank > xt->rank) return NULL;
  for (int i = 0; i < c->type.rank; i++) {
    int d = xt->rank - c->type.rank + i;
    if (c->type.dims[i] != 1 && (d != 1 || c->type.dims[i] != xt->dims[1])) return NULL;
  }
  return c;
}

/* Element m of a per-channel constant c (from channel_bias). */
static float channel_at(const FcTensor *c, int64_t m) {
  int64_t n = 1;
  for (int i = 0; i < c->type.rank; i++) n *= c->type.dims[i];
  float v;
  memcpy(&v, (const unsigned char *)c->data + (n == 1 ? 0 : m) * 4, 4);
  return v;
}

/* Index of v in list[0..n), appending it when absent. */
static int intern(FcValue **list, int *n, FcValue *v) {
  for (int i = 0; i < *n; i++)
    if (list[i] == v) return i;
  list[*n] = v;
  return (*n)++;
}

/* The cast to u8 or i8 that is the only use of v, or NULL. */
static FcOp *byte_cast_of(const FcValue *v) {
  if (fc_value_num_uses(v) != 1) return NULL;
  FcOp *c = v->first_use->user;
  FcDtype to = c->results[0].type.dtype;
  return c->kind == FC_OP_CAST && !c->results[0].type.quant && (to == FC_DT_U8 || to == FC_DT_I8) ? c : NULL;
}

/* Whether v is an operand of an op of region[0 .. n) other than skip. */
static bool read_by_other(FcOp **region, int n, const FcOp *skip, const FcValue *v) {
  for (int j = 0; j < n; j++)
    for (int i = 0; i < region[j]->n_operands && region[j] != skip; i++)
      if (region[j]->operands[i].value == v) return true;
  return false;
}

/* In the prefix region[0 .. n) fused into a quantised conv, x / c by a one-element constant becomes
 * x · RN(1/c) (where that is a normal f32 and no other op of the prefix reads c, so the extras stay as
 * many): the quantisation's division by its scale turned into a multiplier, as the requantisation of a
 * quantised result is (ops.def), written in the IR so that the evaluator computes what the kernels do. A
 * quotient within an ulp of a rounding boundary then rounds to the other side of it: one step of the 8-bit
 * result, on 2.5e-7 of the elements (NumPy, 200 scales, values over the whole 8-bit range). The division
 * cost EfficientNet-B0's int8 build 13% of its time (a vdivps per vector). region's entries are replaced by
 * the products. */
static FcStatus divisions_as_products(Fuser *f, FcOp **region, int n, FcValue **extras, int n_extra) {
  for (int j = 0; j < n; j++) {
    FcOp *u = region[j];
    if (u->kind != FC_OP_DIV || mark_of(&f->mk, u->operands[0].value) != ST_REGION ||
        mark_of(&f->mk, u->operands[1].value) != ST_NONE || !fc_value_scalar_f32(u->operands[1].value) ||
        read_by_other(region, n, u, u->operands[1].value))
      continue;
    float r = (float)(1.0 / fc_tensor_get_f64(fc_value_scalar_f32(u->operands[1].value), 0));
    if (!isnormal(r)) continue;
    FcBuilder b;
    fc_rw_builder_before(&b, u, f->diag);
    b.loc = u->loc;
    FcValue *c = u->operands[1].value, *ops[2] = {u->operands[0].value, fc_b_const(&b, FC_DT_F32, 0, NULL, &r)};
    FcValue *y = fc_b_op1(&b, FC_OP_MUL, ops, 2, NULL, 0);
    FcStatus st = fc_b_status(&b);
    if (st != FC_OK) return st;
    for (int i = 0; i < n_extra; i++) /* the reciprocal takes c's place among the extras */
      if (extras[i] == c) extras[i] = ops[1];
    mark(&f->mk, y, ST_REGION, f->mk.slot[u->results[0].id]);
    fc_rw_replace_op(u, &y, &f->scratch);
    region[j] = y->def;
  }
  return FC_OK;
}

static FcStatus fuse_into(Fuser *f, FcOp *p) {
  if (p->erased || p->n_results != 1) return FC_OK;
  FcValue *x = &p->results[0];
  if (x->type.dtype != FC_DT_F32 || x->type.quant) return FC_OK;
  bool is_conv = p->kind == FC_OP_CONV;
  /* integer kernels: only a quantised conv's f32 product, see the top */
  bool quant = fc_rw_is_quantised(p);
  if (quant && (!is_conv || fc_op_attr(p, FC_ATTR_TO))) return FC_OK;
  int fixed = is_conv ? 3 : 2, max_extra = MAX_OPERANDS - fixed;
  const FcEwProgram *old_prog = fc_op_attr_program(p, FC_ATTR_EPILOGUE);
  FcEwProgram prog;
  if (old_prog) prog = *old_prog;
  else memset(&prog, 0, sizeof prog);

  /* ---- the walk ---- */
  f->mk.cur++;
  mark(&f->mk, x, ST_REGION, 0);
  FcOp *region[MAX_REGION];
  int n = 0;
  int64_t open = fc_value_num_uses(x);
  int visited = 0;
  for (FcOp *u = p->next; u && open > 0 && visited < WALK_LIMIT; u = u->next, visited++) {
    int in_region = 0;
    bool tainted = false;
    for (int i = 0; i < u->n_operands; i++) {
      int s = mark_of(&f->mk, u->operands[i].value);
      in_region += s == ST_REGION;
      tainted |= s == ST_TAINT;
    }
    if (!in_region && !tainted) continue;
    open -= in_region;
    if (in_region && !tainted && n < MAX_REGION && joinable(u, x)) {
      region[n] = u;
      mark(&f->mk, &u->results[0], ST_REGION, n + 1);
      open += fc_value_num_uses(&u->results[0]);
      n++;
    } else {
      for (int r = 0; r < u->n_results; r++) mark(&f->mk, &u->results[r], ST_TAINT, 0);
    }
  }
  if (n == 0) return FC_OK;

  /* ---- the longest closed prefix within the limits ---- */
  const FcTensor *bias_c = NULL;
  FcValue *bias_v = is_conv && p->n_operands == 3 ? p->operands[2].value : NULL;
  if (is_conv && !quant && !old_prog && (!bias_v || fc_value_const(bias_v))) bias_c = channel_bias(region[0], x);
  FcValue *extras[MAX_OPERANDS + FC_EW_MAX_ARGS];
  int n_extra = 0;
  for (int i = fixed; i < p->n_operands; i++) extras[n_extra++] = p->operands[i].value;
  int64_t rem[MAX_REGION + 1];
  rem[0] = fc_value_num_uses(x);
  int pending = 1, best = -1, best_extra = n_extra, steps = prog.n_steps;
  for (int j = 0; j < n; j++) {
    FcOp *u = region[j];
    bool loads = false; /* reads an operand a quantised conv's epilogue cannot take */
    for (int i = 0; i < u->n_operands; i++) {
      FcValue *v = u->operands[i].value;
      if (mark_of(&f->mk, v) == ST_REGION) {
        if (--rem[f->mk.slot[v->id]] == 0) pending--;
      } else if (!(j == 0 && bias_c)) {
        intern(extras, &n_extra, v);
        loads |= quant && !fc_value_scalar_f32(v);
      }
    }
    if (loads) break;
    rem[j + 1] = fc_value_num_uses(&u->results[0]);
    pending++;
    if (!(j == 0 && bias_c)) steps++;
    if (n_extra > max_extra || steps > FC_EW_MAX_STEPS) break;
    if (pending == 1) {
      best = j;
      best_extra = n_extra;
    }
  }
  if (best < 0) return FC_OK;
  n_extra = best_extra;
  if (quant) {
    FcStatus st = divisions_as_products(f, region, best + 1, extras, n_extra);
    if (st != FC_OK) return st;
  }

  /* ---- the program ---- */
  int32_t ref[MAX_REGION + 1];
  ref[0] = prog.n_steps ? FC_EW_STEP_REF(prog.n_steps - 1) : FC_EW_REF_X;
  for (int j = 0; j <= best; j++) {
    FcOp *u = region[j];
    if (j == 0 && bias_c) {
      ref[1] = FC_EW_REF_X; /* the bias is part of x */
      continue;
    }
    FcEwStep *st = &prog.steps[prog.n_steps];
    st->kind = u->kind;
    st->n_args = u->n_operands;
    for (int i = 0; i < u->n_operands; i++) {
      FcValue *v = u->operands[i].value;
      st->args[i] = mark_of(&f->mk, v) == ST_REGION ? ref[f->mk.slot[v->id]] : fixed + intern(extras, &n_extra, v);
    }
    ref[j + 1] = FC_EW_STEP_REF(prog.n_steps);
    prog.n_steps++;
  }
  FC_ASSERT(n_extra == best_extra);

  /* ---- the new op, just before the prefix's last op (or the cast after it it takes) ---- */
  FcOp *sink = region[best], *cast = quant ? byte_cast_of(&sink->results[0]) : NULL;
  if (cast) sink = cast;
  FcBuilder b;
  fc_builder_init(&b, p->graph, f->diag);
  b.before = sink;
  b.loc = p->loc;
  FcValue *ops[MAX_OPERANDS];
  int n_ops = 0;
  for (int i = 0; i < fixed && i < p->n_operands; i++) ops[n_ops++] = p->operands[i].value;
  if (is_conv && (bias_c || (n_extra > 0 && !bias_v))) {
    int64_t M = x->type.dims[1];
    /* a quantised conv's bias is i32: zeros (bias_c is f32 only, so it has none here) */
    FcTensor *t = fc_tensor_new(&f->m->arena, fc_type_make(&f->m->arena, quant ? FC_DT_I32 : FC_DT_F32, 1, &M));
    const FcTensor *old = bias_v ? fc_value_const(bias_v) : NULL;
    float *d = (float *)t->data;
    if (quant) memset(d, 0, (size_t)t->nbytes);
    for (int64_t i = 0; i < M && !quant; i++) {
      float o = 0.0f;
      if (old) memcpy(&o, (const unsigned char *)old->data + i * 4, 4);
      d[i] = bias_c ? o + channel_at(bias_c, i) : o;
    }
    FcValue *nb = fc_b_const_tensor(&b, t);
    if (n_ops == 3) ops[2] = nb;
    else ops[n_ops++] = nb;
  }
  for (int i = 0; i < n_extra; i++) ops[n_ops++] = extras[i];
  FcAttr attrs[16];
  int n_attrs = 0;
  for (int i = 0; i < p->n_attrs && n_attrs < 14; i++)
    if (p->attrs[i].name != FC_ATTR_EPILOGUE) attrs[n_attrs++] = p->attrs[i];
  if (prog.n_steps > 0) attrs[n_attrs++] = FC_A_PROGRAM(EPILOGUE, &prog);
  if (cast) attrs[n_attrs++] = FC_A_TYPE(TO, cast->results[0].type.dtype);
  FcValue *y = fc_b_op1(&b, p->kind, ops, n_ops, attrs, n_attrs);
  FcStatus st = fc_b_status(&b);
  if (st != FC_OK) return st;
  fc_rw_replace_op(sink, &y, &f->scratch);
  FC_ASSERT(p->erased);
  return FC_OK;
}

/* An integer matmul of 8-bit operands whose i32 result only feeds a cast to f32 (the dynamic quantisation's
 * dequantize: quantize_dynamic.c) becomes one matmul with an f32 result (`to`), so that the dequantize, bias
 * and activation after it join its epilogue like any f32 matmul's: the i32 tensor is never written. Returns
 * the new matmul, or p when the pattern is absent. */
static FcOp *widen_int8_matmul(Fuser *f, FcOp *p) {
  if (p->kind != FC_OP_MATMUL || p->erased || p->n_operands != 2 || p->n_attrs != 0 || fc_rw_is_quantised(p))
    return p;
  FcValue *x = &p->results[0];
  if (x->type.dtype != FC_DT_I32 || fc_value_num_uses(x) != 1) return p;
  FcOp *c = x->first_use->user;
  if (c->kind != FC_OP_CAST || c->results[0].type.dtype != FC_DT_F32 ||
      !fc_matmul_is_int8(p->operands[0].value->type.dtype, p->operands[1].value->type.dtype))
    return p;
  FcBuilder b;
  fc_rw_builder_before(&b, c, f->diag);
  b.loc = p->loc;
  FcValue *ops[2] = {p->operands[0].value, p->operands[1].value};
  FcAttr to = FC_A_TYPE(TO, FC_DT_F32);
  FcValue *y = fc_b_op1(&b, FC_OP_MATMUL, ops, 2, &to, 1);
  if (fc_b_status(&b) != FC_OK) return NULL;
  fc_rw_replace_op(c, &y, &f->scratch);
  return y->def;
}

FcStatus fc_pass_fuse_epilogue(FcModule *m, FcPassContext *pc) {
  FcDiag *diag = pc->diag;
  Fuser f = {.m = m, .diag = diag, .mk = {.arena = &m->arena}};
  fc_op_stack_init(&f.scratch, &m->arena);
  marks_grow(&f.mk, m->graph->next_value_id + 1);
  FcOpStack todo;
  fc_op_stack_init(&todo, &pc->scratch);
  fc_graph_for_each_op(m->graph, op) {
    if (op->kind == FC_OP_CONV || op->kind == FC_OP_MATMUL) fc_op_stack_push(&todo, op);
  }
  for (int i = 0; i < todo.n; i++) {
    FcOp *p = widen_int8_matmul(&f, todo.v[i]);
    if (!p) return diag->status != FC_OK ? diag->status : FC_ERR_INTERNAL;
    FcStatus st = fuse_into(&f, p);
    if (st != FC_OK) return st;
  }
  return FC_OK;
}
