/* kernel_collective.c — the SBP boxing ops and the pipeline transfers (ops.def, last section) as calls of
 * libflowrt's collectives (frt_coll_*, runtime/flowrt.h "collectives"; declared here by name like the
 * runtime's other functions).
 *
 * The collectives move contiguous buffers in group order, so each kernel views its tensors as
 * [outer, n, inner] around the dim it splits or joins. A split of dim 0 (outer = 1) is already contiguous:
 * the collective reads and writes the op's buffers directly, which is the common case (data parallelism
 * splits the batch). Any other dim needs a re-layout between [outer, G, chunk] and [G, outer, chunk] on one
 * side of the collective, in kernel scratch (codegen.h: fc_kernel_scratch): all_gather receives into
 * scratch and spreads the G blocks into the rows of the result; reduce_scatter and all_to_all pack the
 * send side block by block first (all_to_all also receives into scratch and spreads). local_slice needs no
 * communication: it copies this rank's rows (frt_coll_rank), one memcpy per outer row.
 *
 * send and recv (the transfers between pipeline stages, passes/split_stages.c) are frt_coll_send and
 * frt_coll_recv of the whole buffer with a global peer rank.
 *
 * A kernel runs once per run (one outer iteration: never split over threads, so each rank calls each
 * collective exactly once and in op order, as the collectives require). A non-zero return from frt_coll_*
 * flags the run's status word, so the run returns this kernel's index and frt_main reports the node with
 * frt_coll_last_error()'s message.
 */
#include "codegen.h"

#include <string.h>

typedef struct Coll {
  FcKernel *k;
  LLVMTypeRef i8, i32, i64, ptr;
  int64_t group; /* G */
  int32_t axis;  /* mesh_axis */
  size_t es;     /* element bytes */
} Coll;

static LLVMValueRef c64(const Coll *c, int64_t v) { return LLVMConstInt(c->i64, (unsigned long long)v, 1); }
static LLVMValueRef c32(const Coll *c, int64_t v) { return LLVMConstInt(c->i32, (unsigned long long)v, 1); }

static LLVMValueRef byte_ptr(const Coll *c, LLVMValueRef base, LLVMValueRef byte_off) {
  return LLVMBuildGEP2(c->k->b, c->i8, base, &byte_off, 1, "");
}

/* Calls runtime function `name` (int32 result) with the given LLVM parameter types. */
static LLVMValueRef call_rt(const Coll *c, const char *name, LLVMTypeRef *params, unsigned n, LLVMValueRef *args) {
  LLVMTypeRef fty = LLVMFunctionType(c->i32, params, n, 0);
  LLVMValueRef f = LLVMGetNamedFunction(c->k->mod, name);
  if (!f) f = LLVMAddFunction(c->k->mod, name, fty);
  return LLVMBuildCall2(c->k->b, fty, f, args, n, "");
}

/* A collective's status: non-zero fails the run at this kernel. */
static void check(const Coll *c, LLVMValueRef rc) {
  fc_cg_flag_error(c->k, LLVMBuildICmp(c->k->b, LLVMIntNE, rc, c32(c, 0), "coll_failed"));
}

/* Copies `rows` runs of `row` elements: run (j, o) for j < G, o < outer goes from src's position
 * `src_major ? (j*outer + o) : (o*G + j)` to dst's other order. */
static void relayout(const Coll *c, LLVMValueRef dst, LLVMValueRef src, int64_t outer, int64_t row, bool src_major) {
  FcKernel *k = c->k;
  int64_t bytes = row * (int64_t)c->es;
  FcLoop lj, lo;
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(c, 0), c64(c, c->group), 1, "blk");
  LLVMValueRef o = fc_cg_loop_begin(k, &lo, c64(c, 0), c64(c, outer), 1, "row");
  LLVMValueRef major = fc_cg_iadd(k, fc_cg_imulc(k, j, outer), o);            /* [G, outer] */
  LLVMValueRef minor = fc_cg_iadd(k, fc_cg_imulc(k, o, c->group), j);          /* [outer, G] */
  LLVMValueRef s = fc_cg_imulc(k, src_major ? major : minor, bytes), d = fc_cg_imulc(k, src_major ? minor : major, bytes);
  LLVMBuildMemCpy(k->b, byte_ptr(c, dst, d), 1, byte_ptr(c, src, s), 1, c64(c, bytes));
  fc_cg_loop_end(k, &lo);
  fc_cg_loop_end(k, &lj);
}

static void dims_around(const FcType *t, int64_t d, int64_t *outer, int64_t *inner) {
  *outer = 1;
  *inner = 1;
  for (int64_t i = 0; i < d; i++) *outer *= t->dims[i];
  for (int64_t i = d + 1; i < t->rank; i++) *inner *= t->dims[i];
}

static FcStatus coll_begin(FcKernel *k, Coll *c, bool *empty) {
  c->k = k;
  c->i8 = LLVMInt8TypeInContext(k->ctx);
  c->i32 = LLVMInt32TypeInContext(k->ctx);
  c->i64 = LLVMInt64TypeInContext(k->ctx);
  c->ptr = LLVMPointerTypeInContext(k->ctx, 0);
  int64_t axis = fc_op_attr_int(k->op, FC_ATTR_MESH_AXIS, -2);
  if (!fc_mesh_group_size(k->op->graph->module, axis, &c->group))
    return fc_cg_error(k, FC_ERR_INPUT, "mesh_axis %lld is not an axis of the module's mesh", (long long)axis);
  c->axis = (int32_t)axis;
  c->es = fc_dtype_size(k->op->results[0].type.dtype);
  int64_t n, bytes;
  if (!fc_type_numel(&k->op->operands[0].value->type, &n) || !fc_type_nbytes(&k->op->results[0].type, &bytes))
    return fc_cg_error(k, FC_ERR_LIMIT, "tensor too large");
  *empty = n == 0 || bytes == 0;
  /* One call per run, on the calling thread (see the top of the file); an empty tensor is empty on every rank. */
  fc_kernel_set_outer(k, *empty ? 0 : 1, 0.0);
  return FC_OK;
}

static int32_t reduce_code(const FcOp *op) {
  const char *r = fc_op_attr_str(op, FC_ATTR_REDUCE, "sum");
  return strcmp(r, "max") == 0 ? 1 : strcmp(r, "min") == 0 ? 2 : 0; /* FrtReduceOp */
}

static LLVMValueRef dtype_code(const Coll *c, const FcType *t) { return c32(c, fc_dtype_to_onnx(t->dtype)); }

FcStatus fc_kernel_local_slice(FcKernel *k) {
  Coll c;
  bool empty;
  FcStatus st = coll_begin(k, &c, &empty);
  if (st != FC_OK || empty) return st;
  const FcType *x = &k->op->operands[0].value->type, *r = &k->op->results[0].type;
  int64_t d = fc_op_attr_int(k->op, FC_ATTR_DIM, 0), outer, inner;
  dims_around(x, d, &outer, &inner);
  int64_t n = x->dims[d], ch = r->dims[d], row_bytes = ch * inner * (int64_t)c.es;
  LLVMValueRef rank = call_rt(&c, "frt_coll_rank", &c.i32, 1, (LLVMValueRef[]){c32(&c, c.axis)});
  LLVMValueRef first = fc_cg_imulc(k, LLVMBuildSExt(k->b, rank, c.i64, ""), ch * inner * (int64_t)c.es);
  FcLoop l;
  LLVMValueRef o = fc_cg_loop_begin(k, &l, c64(&c, 0), c64(&c, outer), 1, "row");
  LLVMValueRef src = fc_cg_iadd(k, fc_cg_imulc(k, o, n * inner * (int64_t)c.es), first);
  LLVMBuildMemCpy(k->b, byte_ptr(&c, k->out[0], fc_cg_imulc(k, o, row_bytes)), 1, byte_ptr(&c, k->in[0], src), 1,
                  c64(&c, row_bytes));
  fc_cg_loop_end(k, &l);
  return FC_OK;
}

FcStatus fc_kernel_all_gather(FcKernel *k) {
  Coll c;
  bool empty;
  FcStatus st = coll_begin(k, &c, &empty);
  if (st != FC_OK || empty) return st;
  const FcType *x = &k->op->operands[0].value->type;
  int64_t d = fc_op_attr_int(k->op, FC_ATTR_DIM, 0), outer, inner, count;
  dims_around(x, d, &outer, &inner);
  fc_type_numel(x, &count);
  LLVMValueRef recv = outer == 1 ? k->out[0] : fc_kernel_scratch(k, count * c.group * (int64_t)c.es);
  LLVMTypeRef p[5] = {c.i32, c.ptr, c.ptr, c.i64, c.i32};
  LLVMValueRef a[5] = {c32(&c, c.axis), k->in[0], recv, c64(&c, count), dtype_code(&c, x)};
  check(&c, call_rt(&c, "frt_coll_all_gather", p, 5, a));
  /* Block j (rank j's [outer, chunk]) goes to rows j*chunk.. of each outer row of the result. */
  if (outer != 1) relayout(&c, k->out[0], recv, outer, x->dims[d] * inner, true);
  return FC_OK;
}

FcStatus fc_kernel_all_reduce(FcKernel *k) {
  Coll c;
  bool empty;
  FcStatus st = coll_begin(k, &c, &empty);
  if (st != FC_OK || empty) return st;
  const FcType *x = &k->op->operands[0].value->type;
  int64_t count, bytes;
  fc_type_numel(x, &count);
  fc_type_nbytes(x, &bytes);
  LLVMBuildMemCpy(k->b, k->out[0], 1, k->in[0], 1, c64(&c, bytes));
  LLVMTypeRef p[5] = {c.i32, c.ptr, c.i64, c.i32, c.i32};
  LLVMValueRef a[5] = {c32(&c, c.axis), k->out[0], c64(&c, count), dtype_code(&c, x), c32(&c, reduce_code(k->op))};
  check(&c, call_rt(&c, "frt_coll_all_reduce", p, 5, a));
  return FC_OK;
}

FcStatus fc_kernel_reduce_scatter(FcKernel *k) {
  Coll c;
  bool empty;
  FcStatus st = coll_begin(k, &c, &empty);
  if (st != FC_OK || empty) return st;
  const FcType *x = &k->op->operands[0].value->type, *r = &k->op->results[0].type;
  int64_t d = fc_op_attr_int(k->op, FC_ATTR_DIM, 0), outer, inner, count, bytes;
  dims_around(x, d, &outer, &inner);
  fc_type_numel(r, &count);
  fc_type_nbytes(x, &bytes);
  LLVMValueRef send = k->in[0];
  if (outer != 1) { /* [outer, G, chunk] -> [G, outer, chunk]: rank j's part contiguous */
    send = fc_kernel_scratch(k, bytes);
    relayout(&c, send, k->in[0], outer, r->dims[d] * inner, false);
  }
  LLVMTypeRef p[6] = {c.i32, c.ptr, c.ptr, c.i64, c.i32, c.i32};
  LLVMValueRef a[6] = {c32(&c, c.axis), send, k->out[0], c64(&c, count), dtype_code(&c, x), c32(&c, reduce_code(k->op))};
  check(&c, call_rt(&c, "frt_coll_reduce_scatter", p, 6, a));
  return FC_OK;
}

FcStatus fc_kernel_all_to_all(FcKernel *k) {
  Coll c;
  bool empty;
  FcStatus st = coll_begin(k, &c, &empty);
  if (st != FC_OK || empty) return st;
  const FcType *x = &k->op->operands[0].value->type, *r = &k->op->results[0].type;
  int64_t sd = fc_op_attr_int(k->op, FC_ATTR_SPLIT_DIM, 0), cd = fc_op_attr_int(k->op, FC_ATTR_CONCAT_DIM, 0);
  int64_t s_outer, s_inner, c_outer, c_inner, bytes, count;
  dims_around(x, sd, &s_outer, &s_inner);
  dims_around(r, cd, &c_outer, &c_inner);
  fc_type_nbytes(x, &bytes);
  fc_type_numel(x, &count);
  LLVMValueRef scr = fc_kernel_scratch(k, 2 * bytes);
  LLVMValueRef send = scr, recv = byte_ptr(&c, scr, c64(&c, bytes));
  /* Chunk j along split_dim, for rank j: [outer, G, chunk] -> [G, outer, chunk]. */
  relayout(&c, send, k->in[0], s_outer, r->dims[sd] * s_inner, false);
  LLVMTypeRef p[5] = {c.i32, c.ptr, c.ptr, c.i64, c.i32};
  LLVMValueRef a[5] = {c32(&c, c.axis), send, recv, c64(&c, count / c.group), dtype_code(&c, x)};
  check(&c, call_rt(&c, "frt_coll_all_to_all", p, 5, a));
  /* Block j (from rank j, the local chunk's shape) becomes rows j*n.. of concat_dim. */
  relayout(&c, k->out[0], recv, c_outer, x->dims[cd] * c_inner, true);
  return FC_OK;
}

/* send and recv (pipeline stages): one blocking transfer with a global peer rank, on the calling thread. */
static FcStatus p2p_begin(FcKernel *k, Coll *c, const FcType *t, int64_t *count) {
  c->k = k;
  c->i8 = LLVMInt8TypeInContext(k->ctx);
  c->i32 = LLVMInt32TypeInContext(k->ctx);
  c->i64 = LLVMInt64TypeInContext(k->ctx);
  c->ptr = LLVMPointerTypeInContext(k->ctx, 0);
  c->group = 1;
  c->axis = -1;
  c->es = fc_dtype_size(t->dtype);
  if (!fc_type_numel(t, count)) return fc_cg_error(k, FC_ERR_LIMIT, "tensor too large");
  /* An empty tensor is empty on both ranks: neither side calls. */
  fc_kernel_set_outer(k, *count ? 1 : 0, 0.0);
  return FC_OK;
}

static FcStatus p2p(FcKernel *k, const char *fn, LLVMValueRef buf, const FcType *t) {
  Coll c;
  int64_t count;
  FcStatus st = p2p_begin(k, &c, t, &count);
  if (st != FC_OK || !count) return st;
  int64_t peer = fc_op_attr_int(k->op, FC_ATTR_PEER, -1), tag = fc_op_attr_int(k->op, FC_ATTR_TAG, 0);
  LLVMTypeRef p[5] = {c.ptr, c.i64, c.i32, c.i32, c.i32};
  LLVMValueRef a[5] = {buf, c64(&c, count), dtype_code(&c, t), c32(&c, peer), c32(&c, tag)};
  check(&c, call_rt(&c, fn, p, 5, a));
  return FC_OK;
}

FcStatus fc_kernel_send(FcKernel *k) { return p2p(k, "frt_coll_send", k->in[0], &k->op->operands[0].value->type); }
FcStatus fc_kernel_recv(FcKernel *k) { return p2p(k, "frt_coll_recv", k->out[0], &k->op->results[0].type); }
