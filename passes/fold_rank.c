/* fold_rank.c — in a rank's own program (the module attribute flow.rank = r: a rank-specialised build,
 * flowc build --ranks N), a local_slice of a constant becomes the constant chunk that rank r takes.
 *
 * After the sbp pass a weight that an op takes split arrives through flow.local_slice, which copies the
 * rank's chunk out of the whole weight on every run (the rank is known only then: frt_coll_rank). When the
 * module is one rank's program the chunk is known at compile time: the slice is replaced by a constant
 * holding rank r's coordinate along the op's mesh axis (mesh_axis -1: r itself; axis k: r's coordinate k,
 * numbered as the runtime numbers them, fc_mesh_rank_coord), so the GEMM, conv and int8 packing of the later
 * passes and kernels see an ordinary constant weight. Slices of slices (a weight split along two mesh axes)
 * fold in one forward walk: the first fold makes the second slice's operand a constant. The whole weight is
 * left to dce once no other op reads it.
 *
 * Without flow.rank the pass does nothing (every rank runs the same program). Quantised constants keep their
 * slices (a per-axis scale along the split dim would need slicing too; the sbp rules never split them).
 */
#include "passes.h"
#include "rewrite.h"

#include <string.h>

/* Rank r's chunk of constant t along dim d, as local_slice `op` (result type its result's) takes it; NULL
 * when it cannot tell (no such axis) or the constant is quantised. */
static FcTensor *chunk_of(FcModule *m, const FcOp *op, const FcTensor *t, int64_t rank) {
  const FcType *x = &t->type, *r = &op->results[0].type;
  int64_t d = fc_op_attr_int(op, FC_ATTR_DIM, -1), axis = fc_op_attr_int(op, FC_ATTR_MESH_AXIS, -2), coord, g;
  if (x->quant || r->quant || d < 0 || d >= x->rank || r->rank != x->rank || t->nbytes <= 0) return NULL;
  if (!fc_mesh_rank_coord(m, rank, axis, &coord) || !fc_mesh_group_size(m, axis, &g) || coord >= g) return NULL;
  /* nbytes > 0: every dim is positive, so these products are at most the element count. */
  int64_t outer = 1, inner = 1, ch = r->dims[d];
  for (int64_t i = 0; i < d; i++) outer *= x->dims[i];
  for (int64_t i = d + 1; i < x->rank; i++) inner *= x->dims[i];
  if (ch * g != x->dims[d]) return NULL;
  FcTensor *out = fc_tensor_new(&m->arena, *r);
  size_t es = fc_dtype_size(x->dtype), row = (size_t)(ch * inner) * es;
  for (int64_t o = 0; o < outer; o++)
    memcpy((char *)out->data + (size_t)o * row, (const char *)t->data + (size_t)((o * x->dims[d] + coord * ch) * inner) * es,
           row);
  return out;
}

FcStatus fc_pass_fold_rank(FcModule *m, FcPassContext *pc) {
  int64_t rank = fc_module_rank(m);
  if (rank < 0) return FC_OK;
  FcOpStack scratch;
  fc_op_stack_init(&scratch, &m->arena);
  fc_graph_for_each_op_safe(m->graph, op, next) {
    if (op->kind != FC_OP_LOCAL_SLICE || !fc_value_has_uses(&op->results[0])) continue;
    const FcValue *x = op->operands[0].value;
    const FcTensor *t = x && x->def && x->def->kind == FC_OP_CONSTANT ? fc_value_const(x) : NULL;
    FcTensor *c = t ? chunk_of(m, op, t, rank) : NULL;
    if (!c) continue;
    FcValue *k = fc_rw_make_constant(op, c, op->loc, pc->diag);
    if (!k) return pc->diag->status != FC_OK ? pc->diag->status : FC_ERR_INTERNAL;
    fc_rw_replace_op(op, &k, &scratch);
  }
  return FC_OK;
}
