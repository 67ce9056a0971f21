/* fuse_elementwise.c — merges chains and DAGs of element-wise ops into flow.fused ops (ir/ew_program.h),
 * so a chain such as sub → mul → add → tanh runs as one loop with no intermediate tensors.
 *
 * Members: element-wise ops without attributes (not cast) whose operands all have the result's dtype, so
 * a program never changes dtype (comparisons into bool, select on a bool condition stay out), and
 * existing flow.fused ops, whose programs are inlined (so the pass composes with itself and is
 * idempotent). Conv and matmul are never members: fuse_epilogue runs first and has already taken the
 * element-wise ops it can put in their epilogues; what is left here is everything else.
 *
 * Groups grow from a root, backwards: the ops are visited last to first, and each member not yet in a
 * group roots a new one. A producer of a group value joins when it is a member kind with the root's
 * dtype, every use of its result is inside the group (so nothing else needs the intermediate, and it is
 * computed once per element even when several members read it: x * sigmoid(x)), the program stays within
 * FC_EW_MAX_STEPS steps and the op within MAX_OPERANDS operands, and its result has as many elements as
 * the root's. A smaller intermediate (a per-row mean, a scalar) broadcasts just as an operand does, but
 * inside the program it is recomputed for every result element, so such a producer joins only when it
 * is cheap (a few scalar operations: add, mul, max, neg, ...; not sqrt, div, exp). Joining repeats until
 * no producer joins; a group of one step is left as it is.
 *
 * Rewriting: the members, in op order, become the program's steps; values from outside the group become
 * the fused op's operands (deduplicated, in first-use order); its dtype and shape are the root's. The
 * fused op is created just before the root (every operand is defined before the member that reads it,
 * hence before the root), takes over the root's uses, and the members, now unused, are erased.
 * pow(x, 2) with a constant 2 becomes the step `mul x x`: x * x is the correctly rounded square, which is
 * what the evaluator's pow gives (x² of an f32, f16 or bf16 is exact in double; f64 pow is correctly
 * rounded), and it saves the general pow.
 */
#include "ew_program.h"
#include "passes.h"
#include "rewrite.h"

#include <string.h>

enum {
  MAX_MEMBERS = FC_EW_MAX_STEPS, /* every member contributes at least one step */
  MAX_OPERANDS = 16,             /* operands of one fused op: one pointer and one offset each per row */
  MAX_POW_CONST = 4096,          /* elements of a pow exponent constant checked for "all 2" */
};

typedef struct Fuse {
  FcModule *m;
  FcDiag *diag;
  FcOpStack scratch;
  uint32_t n_ids;   /* ops with id < n_ids existed when the pass started */
  int *pos;         /* position in the op list, by op id */
  uint32_t *stamp;  /* group number that op id belongs to (0: none) */
  int *slot;        /* index in the group's member array, by op id (valid where stamp matches) */
  uint32_t gid;     /* the group being grown */
  FcOp *mem[MAX_MEMBERS];
  int n_mem, steps;
} Fuse;

static bool in_group(const Fuse *f, const FcOp *op) { return op && op->id < f->n_ids && f->stamp[op->id] == f->gid; }

/* True for ops that may be members; *dt is their (single) dtype. */
static bool member_kind(const FcOp *op, FcDtype *dt) {
  if (op->erased || op->n_results != 1) return false;
  FcDtype d = op->results[0].type.dtype;
  if (op->kind != FC_OP_FUSED) {
    const FcOpInfo *info = fc_op_info(op->kind);
    if (!(info->flags & FC_OPF_ELEMENTWISE) || info->n_attrs != 0 || op->kind == FC_OP_CAST) return false;
  }
  for (int i = 0; i < op->n_operands; i++)
    if (!op->operands[i].value || op->operands[i].value->type.dtype != d) return false;
  *dt = d;
  return true;
}

static int member_steps(const FcOp *op) {
  if (op->kind != FC_OP_FUSED) return 1;
  const FcEwProgram *p = fc_op_attr_program(op, FC_ATTR_PROGRAM);
  return p ? p->n_steps : -1;
}

/* Recomputing the op per element of a larger result costs about as much as loading its value. */
static bool cheap_kind(FcOpKind k) {
  switch (k) {
  case FC_OP_NEG: case FC_OP_ABS: case FC_OP_RELU: case FC_OP_ADD: case FC_OP_SUB: case FC_OP_MUL:
  case FC_OP_MAX: case FC_OP_MIN: case FC_OP_AND: case FC_OP_OR: case FC_OP_XOR: case FC_OP_NOT:
  case FC_OP_BITWISE_NOT: case FC_OP_SIGN: case FC_OP_CEIL: case FC_OP_FLOOR: case FC_OP_ROUND: return true;
  default: return false;
  }
}

static bool cheap(const FcOp *op) {
  if (op->kind != FC_OP_FUSED) return cheap_kind(op->kind);
  const FcEwProgram *p = fc_op_attr_program(op, FC_ATTR_PROGRAM);
  if (!p) return false;
  for (int i = 0; i < p->n_steps; i++)
    if (!cheap_kind(p->steps[i].kind)) return false;
  return true;
}

static int64_t numel_of(const FcValue *v) {
  int64_t n;
  return fc_type_numel(&v->type, &n) ? n : -1;
}

/* pow(x, c) where every element of the constant c is 2. */
static bool is_square(const FcOp *op) {
  if (op->kind != FC_OP_POW || !fc_dtype_is_float(op->results[0].type.dtype)) return false;
  const FcTensor *c = fc_value_const(op->operands[1].value);
  int64_t n;
  if (!c || !fc_type_numel(&c->type, &n) || n < 1 || n > MAX_POW_CONST) return false;
  for (int64_t i = 0; i < n; i++)
    if (fc_tensor_get_f64(c, i) != 2.0) return false;
  return true;
}

/* The group's operands if `extra` joined: values read by members and not computed by one (or by extra),
 * counted up to MAX_OPERANDS + 1. */
static int count_operands(const Fuse *f, const FcOp *extra) {
  const FcValue *seen[MAX_OPERANDS + 1];
  int n = 0;
  for (int i = 0; i <= f->n_mem; i++) {
    const FcOp *op = i < f->n_mem ? f->mem[i] : extra;
    for (int j = 0; j < op->n_operands; j++) {
      const FcValue *v = op->operands[j].value;
      if (in_group(f, v->def) || v->def == extra || (j == 1 && is_square(op))) continue;
      bool dup = false;
      for (int k = 0; k < n && !dup; k++) dup = seen[k] == v;
      if (dup) continue;
      if (n == MAX_OPERANDS) return MAX_OPERANDS + 1;
      seen[n++] = v;
    }
  }
  return n;
}

/* True when every annotation of a producer is also the group root's, leaving out flow.calib_range: that one
 * records the range calibration saw on the producer's result (quantize_static has used it by now), a value
 * that becomes the group's intermediate and leaves the IR with it, so it must not keep a quantised model's
 * activation (x * sigmoid(x), annotated) apart from the quantisation that follows it. */
static bool annots_fit_root(const FcAnnots *producer, const FcAnnots *root) {
  const char *calib = fc_annot_name(FC_ANNOT_CALIB_RANGE);
  for (int i = 0; i < producer->n; i++) {
    if (strcmp(producer->v[i].name, calib) == 0) continue;
    const FcAnnotValue *v = fc_annots_get(root, producer->v[i].name);
    if (!v || !fc_annot_value_equal(&producer->v[i].value, v)) return false;
  }
  return true;
}

/* Whether the producer of v may join the group rooted at root (dtype dt, numel n). */
static bool may_join(Fuse *f, const FcValue *v, FcDtype dt, int64_t n) {
  FcOp *d = v->def;
  FcDtype ddt;
  if (!d || d->id >= f->n_ids || f->stamp[d->id] != 0 || !member_kind(d, &ddt) || ddt != dt) return false;
  /* The fused op carries the root's annotations only: a producer annotated otherwise (another placement
   * or SBP) stays out. */
  if (!annots_fit_root(&d->annots, &f->mem[0]->annots)) return false;
  for (const FcUse *u = v->first_use; u; u = u->next_use)
    if (!in_group(f, u->user)) return false;
  int64_t dn = numel_of(v);
  if (dn != n && !(dn >= 0 && dn < n && cheap(d))) return false;
  int s = member_steps(d);
  if (s < 1 || f->steps + s > FC_EW_MAX_STEPS || f->n_mem == MAX_MEMBERS) return false;
  return count_operands(f, d) <= MAX_OPERANDS;
}

static void join(Fuse *f, FcOp *op) {
  f->stamp[op->id] = f->gid;
  f->mem[f->n_mem++] = op;
  f->steps += member_steps(op);
}

typedef struct Build {
  FcValue *operands[MAX_OPERANDS];
  int n_operands;
  int32_t res_step[MAX_MEMBERS]; /* by member slot: the step holding its result */
} Build;

static int32_t ref_of(Fuse *f, Build *b, FcValue *v) {
  if (in_group(f, v->def)) return FC_EW_STEP_REF(b->res_step[f->slot[v->def->id]]);
  for (int i = 0; i < b->n_operands; i++)
    if (b->operands[i] == v) return i;
  FC_ASSERT(b->n_operands < MAX_OPERANDS); /* may_join counted them */
  b->operands[b->n_operands] = v;
  return b->n_operands++;
}

/* Insertion sort by list position (groups are at most MAX_MEMBERS ops). */
static void sort_members(Fuse *f) {
  for (int i = 1; i < f->n_mem; i++) {
    FcOp *x = f->mem[i];
    int j = i - 1;
    for (; j >= 0 && f->pos[f->mem[j]->id] > f->pos[x->id]; j--) f->mem[j + 1] = f->mem[j];
    f->mem[j + 1] = x;
  }
}

/* Replaces the group rooted at `root` by one fused op; returns it, or NULL with an error in f->diag. */
static FcOp *rewrite(Fuse *f, FcOp *root) {
  sort_members(f);
  for (int i = 0; i < f->n_mem; i++) f->slot[f->mem[i]->id] = i;
  Build b = {.n_operands = 0};
  FcEwProgram p = {.n_steps = 0};
  for (int i = 0; i < f->n_mem; i++) {
    FcOp *op = f->mem[i];
    if (op->kind == FC_OP_FUSED) {
      const FcEwProgram *q = fc_op_attr_program(op, FC_ATTR_PROGRAM);
      if (!q) {
        fc_error_node(f->diag, FC_ERR_INPUT, fc_op_name(op), "fused", "attribute 'program' is missing");
        return NULL;
      }
      int base = p.n_steps;
      for (int s = 0; s < q->n_steps; s++) {
        FcEwStep t = q->steps[s];
        for (int a = 0; a < t.n_args; a++)
          t.args[a] = FC_EW_IS_STEP_REF(t.args[a]) ? FC_EW_STEP_REF(base + FC_EW_STEP_OF(t.args[a]))
                                                   : ref_of(f, &b, op->operands[t.args[a]].value);
        p.steps[p.n_steps++] = t;
      }
    } else {
      FcEwStep t = {.kind = op->kind, .n_args = op->n_operands};
      if (is_square(op)) {
        t.kind = FC_OP_MUL;
        t.args[0] = t.args[1] = ref_of(f, &b, op->operands[0].value);
      } else {
        for (int a = 0; a < op->n_operands; a++) t.args[a] = ref_of(f, &b, op->operands[a].value);
      }
      p.steps[p.n_steps++] = t;
    }
    b.res_step[i] = p.n_steps - 1;
  }
  const FcType *rt = &root->results[0].type;
  FcAttr attrs[3] = {
      FC_A_TYPE(DTYPE, rt->dtype),
      FC_A_PROGRAM(PROGRAM, &p),
      FC_A_INTS(SHAPE, rt->dims, rt->rank),
  };
  FcBuilder bld;
  fc_builder_init(&bld, f->m->graph, f->diag);
  bld.before = root;
  bld.loc = root->loc;
  FcOp *fused = fc_b_op(&bld, FC_OP_FUSED, b.operands, b.n_operands, 1, attrs, 3);
  if (!fused) return NULL;
  FcValue *y = &fused->results[0];
  fc_rw_replace_op(root, &y, &f->scratch);
  return fused;
}

FcStatus fc_pass_fuse_elementwise(FcModule *m, FcPassContext *pc) {
  FcDiag *diag = pc->diag;
  FcGraph *g = m->graph;
  Fuse f = {.m = m, .diag = diag, .n_ids = g->next_op_id};
  fc_op_stack_init(&f.scratch, &m->arena);
  f.pos = FC_NEW_ARRAY(&pc->scratch, int, (size_t)f.n_ids + 1);
  f.stamp = FC_NEW_ARRAY(&pc->scratch, uint32_t, (size_t)f.n_ids + 1);
  f.slot = FC_NEW_ARRAY(&pc->scratch, int, (size_t)f.n_ids + 1);
  int n = 0;
  fc_graph_for_each_op(g, op) f.pos[op->id] = n++;

  FcOp *op = g->last;
  while (op) {
    FcOp *prev = op->prev;
    FcDtype dt;
    if (op->id >= f.n_ids || f.stamp[op->id] != 0 || !member_kind(op, &dt) || member_steps(op) < 1) {
      op = prev;
      continue;
    }
    f.gid++;
    f.n_mem = 0;
    f.steps = 0;
    join(&f, op);
    int64_t n_root = numel_of(&op->results[0]);
    for (bool grew = true; grew;) {
      grew = false;
      for (int i = 0; i < f.n_mem; i++)
        for (int j = 0; j < f.mem[i]->n_operands; j++) {
          FcValue *v = f.mem[i]->operands[j].value;
          if (may_join(&f, v, dt, n_root)) {
            join(&f, v->def);
            grew = true;
          }
        }
    }
    if (f.n_mem < 2) { /* nothing joined: a lone op (or fused op) stays as it is */
      op = prev;
      continue;
    }
    FcOp *fused = rewrite(&f, op);
    if (!fused) return diag->status != FC_OK ? diag->status : FC_ERR_INTERNAL;
    op = fused->prev;
  }
  return FC_OK;
}
