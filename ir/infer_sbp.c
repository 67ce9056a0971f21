/* infer_sbp.c — the mesh of an SBP program and the result types of its boxing ops (ops.def, last section).
 *
 * The group size G of a boxing op is not an attribute: it is a dim of the module's mesh (the module
 * annotation flow.mesh = array<i64: ...>, which the sbp pass records, or the product of all dims for
 * mesh_axis -1), so one annotation fixes every op's group and the text of a dump recompiles as it is.
 * Each hook checks what the kernel relies on: the split dims divide by G (a local chunk is a whole number
 * of rows, the same on every rank) and the grown dims do not overflow.
 */
#include "infer_internal.h"

#include <string.h>

int fc_module_mesh(const FcModule *m, const int64_t **dims) {
  const FcAnnotValue *v = m ? fc_annots_get(&m->annots, fc_annot_name(FC_ANNOT_MESH)) : NULL;
  if (!v || v->kind != FC_AV_DENSE || v->dtype != FC_DT_I64 || v->ints.n < 1) {
    if (dims) *dims = NULL;
    return 0;
  }
  if (dims) *dims = v->ints.v;
  return v->ints.n;
}

int64_t fc_module_rank(const FcModule *m) {
  const FcAnnotValue *v = m ? fc_annots_get(&m->annots, fc_annot_name(FC_ANNOT_RANK)) : NULL;
  return v && v->kind == FC_AV_INT && v->i >= 0 ? v->i : -1;
}

bool fc_mesh_rank_coord(const FcModule *m, int64_t rank, int64_t axis, int64_t *coord) {
  const int64_t *dims;
  int n = fc_module_mesh(m, &dims);
  int64_t all;
  if (n == 0 || axis < -1 || axis >= n || rank < 0 || !fc_mesh_group_size(m, -1, &all) || rank >= all) return false;
  if (axis == -1) {
    *coord = rank;
    return true;
  }
  /* Row-major, the last axis fastest, as the runtime numbers them (runtime/coll.c). */
  int64_t stride = 1;
  for (int i = n - 1; i > axis; i--) stride *= dims[i];
  *coord = rank / stride % dims[axis];
  return true;
}

bool fc_mesh_group_size(const FcModule *m, int64_t axis, int64_t *out) {
  const int64_t *dims;
  int n = fc_module_mesh(m, &dims);
  if (n == 0 || axis < -1 || axis >= n) return false;
  if (axis >= 0) {
    *out = dims[axis];
    return true;
  }
  int64_t g = 1;
  for (int i = 0; i < n; i++)
    if (!fc_checked_mul(g, dims[i], &g)) return false;
  *out = g;
  return true;
}

/* The group size of op's mesh_axis. */
static FcStatus group_size(const FcOp *op, int64_t *g, FcDiag *diag) {
  int64_t axis;
  FC_ITRY(fc_ih_int(op, FC_ATTR_MESH_AXIS, &axis, diag));
  const FcModule *m = op->graph ? op->graph->module : NULL;
  int n = fc_module_mesh(m, NULL);
  if (n == 0) return fc_ih_fail(op, diag, "the module has no flow.mesh (compile with --ranks N)");
  if (!fc_mesh_group_size(m, axis, g))
    return fc_ih_fail(op, diag, "mesh_axis %lld is not -1 or an axis of the %d-axis mesh", (long long)axis, n);
  return FC_OK;
}

static const char *const reduce_ops[] = {"sum", "max", "min", NULL};

/* x's dims, with dim `d` divided by g (shrink) or multiplied by g. */
static FcStatus set_scaled(FcOp *op, FcArena *arena, int64_t d, int64_t g, bool shrink, FcDiag *diag) {
  const FcType *x = fc_ih_in(op, 0);
  int64_t *dims = fc_ih_dims(arena, x->rank);
  if (x->rank) memcpy(dims, x->dims, (size_t)x->rank * sizeof *dims);
  if (shrink) {
    if (dims[d] % g != 0)
      return fc_ih_fail(op, diag, "dim %lld (%lld) does not divide into %lld equal parts", (long long)d,
                        (long long)dims[d], (long long)g);
    dims[d] /= g;
  } else if (!fc_checked_mul(dims[d], g, &dims[d])) {
    return fc_ih_fail(op, diag, "dim %lld grows too large", (long long)d);
  }
  fc_ih_set(op, 0, arena, x->dtype, x->rank, dims);
  return FC_OK;
}

static FcStatus infer_split(FcOp *op, FcArena *arena, bool shrink, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  int64_t g, d;
  FC_ITRY(group_size(op, &g, diag));
  FC_ITRY(fc_ih_axis(op, FC_ATTR_DIM, fc_ih_in(op, 0)->rank, &d, diag));
  return set_scaled(op, arena, d, g, shrink, diag);
}

FcStatus fc_infer_local_slice(FcOp *op, FcArena *arena, FcDiag *diag) { return infer_split(op, arena, true, diag); }
FcStatus fc_infer_all_gather(FcOp *op, FcArena *arena, FcDiag *diag) { return infer_split(op, arena, false, diag); }

FcStatus fc_infer_all_reduce(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  int64_t g;
  const char *red;
  FC_ITRY(group_size(op, &g, diag));
  FC_ITRY(fc_ih_choice(op, FC_ATTR_REDUCE, reduce_ops, &red, diag));
  const FcType *x = fc_ih_in(op, 0);
  if (x->dtype == FC_DT_BOOL) return fc_ih_fail(op, diag, "cannot reduce i1 values");
  fc_ih_set(op, 0, arena, x->dtype, x->rank, x->dims);
  return FC_OK;
}

FcStatus fc_infer_reduce_scatter(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const char *red;
  FC_ITRY(fc_ih_choice(op, FC_ATTR_REDUCE, reduce_ops, &red, diag));
  if (fc_ih_in(op, 0)->dtype == FC_DT_BOOL) return fc_ih_fail(op, diag, "cannot reduce i1 values");
  return infer_split(op, arena, true, diag);
}

FcStatus fc_infer_all_to_all(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  const FcType *x = fc_ih_in(op, 0);
  int64_t g, sd, cd;
  FC_ITRY(group_size(op, &g, diag));
  FC_ITRY(fc_ih_axis(op, FC_ATTR_SPLIT_DIM, x->rank, &sd, diag));
  FC_ITRY(fc_ih_axis(op, FC_ATTR_CONCAT_DIM, x->rank, &cd, diag));
  if (sd == cd) return fc_ih_fail(op, diag, "split_dim and concat_dim are both %lld", (long long)sd);
  int64_t *dims = fc_ih_dims(arena, x->rank);
  memcpy(dims, x->dims, (size_t)x->rank * sizeof *dims);
  if (dims[sd] % g != 0)
    return fc_ih_fail(op, diag, "dim %lld (%lld) does not divide into %lld equal parts", (long long)sd,
                      (long long)dims[sd], (long long)g);
  dims[sd] /= g;
  if (!fc_checked_mul(dims[cd], g, &dims[cd])) return fc_ih_fail(op, diag, "dim %lld grows too large", (long long)cd);
  fc_ih_set(op, 0, arena, x->dtype, x->rank, dims);
  return FC_OK;
}

/* send and recv: a peer among the mesh's ranks (not the module's own rank: a transfer to oneself would wait
 * for ever) and a tag MPI accepts everywhere (its guaranteed bound is 32767). */
static FcStatus check_peer(const FcOp *op, FcDiag *diag) {
  int64_t peer, tag, all;
  FC_ITRY(fc_ih_int(op, FC_ATTR_PEER, &peer, diag));
  FC_ITRY(fc_ih_int(op, FC_ATTR_TAG, &tag, diag));
  const FcModule *m = op->graph ? op->graph->module : NULL;
  if (!fc_mesh_group_size(m, -1, &all)) return fc_ih_fail(op, diag, "the module has no flow.mesh (compile with --ranks N)");
  if (peer < 0 || peer >= all) return fc_ih_fail(op, diag, "peer %lld is not a rank of the %lld-rank mesh", (long long)peer, (long long)all);
  if (peer == fc_module_rank(m)) return fc_ih_fail(op, diag, "peer %lld is this program's own rank", (long long)peer);
  if (tag < 0 || tag > 32767) return fc_ih_fail(op, diag, "tag %lld is not in 0..32767", (long long)tag);
  return FC_OK;
}

FcStatus fc_infer_send(FcOp *op, FcArena *arena, FcDiag *diag) {
  (void)arena;
  FC_ITRY(fc_ih_counts(op, diag));
  return check_peer(op, diag);
}

FcStatus fc_infer_recv(FcOp *op, FcArena *arena, FcDiag *diag) {
  FC_ITRY(fc_ih_counts(op, diag));
  FC_ITRY(check_peer(op, diag));
  FcDtype dt;
  const int64_t *shape;
  int n;
  FC_ITRY(fc_ih_dtype(op, FC_ATTR_DTYPE, &dt, diag));
  FC_ITRY(fc_ih_shape(op, &shape, &n, diag));
  fc_ih_set(op, 0, arena, dt, n, shape);
  return FC_OK;
}
