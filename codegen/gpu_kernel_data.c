/* gpu_kernel_data.c — GPU kernels of the data-movement ops: transpose, reshape and scast (a copy where the
 * memory plan made no view), broadcast, slice, concat, pad and gather, with the CPU's semantics
 * (kernel_data.c; reference ir/eval_data.c).
 *
 * Elements move as integers of the dtype's size, so every dtype works and bits are never converted.
 * Most kernels are one thread per result element, consecutive threads on consecutive result elements
 * (coalesced stores): transpose, broadcast and slice are strided views of the operand (permuted, zero or
 * stepped strides), simplified as on the CPU (unit dims dropped, dims that stay contiguous merged) and
 * gathered; concat finds the operand of its column by comparisons against compile-time boundaries and
 * leaves the columns of operands the memory plan computed in place alone; pad maps each coordinate to
 * its source (numpy's reflect / edge / wrap rules) or to the pad value; gather reads its index, flags
 * one out of range through the status word (fc_cg_flag_error) and then reads element 0 instead.
 *
 * A transpose (or any view) whose innermost result dim walks the source with a stride while another
 * result dim is the source's contiguous one goes through a 32 x 33 shared-memory tile: a block of
 * 32 x 8 threads reads a 32 x 32 tile along the source's contiguous dim, and after a barrier writes it
 * along the result's, so both sides are coalesced (the 33rd column keeps the transposed reads of the
 * tile off a single bank).
 */
#include <string.h>

#include "gpu.h"

enum { THREADS = 256, MAX_RANK = 64, TILE = 32, TILE_ROWS = 8 };

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

static LLVMTypeRef bits_type(FcKernel *k, size_t es) { return LLVMIntTypeInContext(k->ctx, (unsigned)(8 * es)); }

static LLVMValueRef load_bits(FcKernel *k, size_t es, LLVMValueRef base, LLVMValueRef i) {
  LLVMTypeRef t = bits_type(k, es);
  LLVMValueRef v = LLVMBuildLoad2(k->b, t, LLVMBuildGEP2(k->b, t, base, &i, 1, ""), "");
  LLVMSetAlignment(v, (unsigned)es);
  return v;
}

static void store_bits(FcKernel *k, size_t es, LLVMValueRef base, LLVMValueRef i, LLVMValueRef v) {
  LLVMTypeRef t = bits_type(k, es);
  LLVMSetAlignment(LLVMBuildStore(k->b, v, LLVMBuildGEP2(k->b, t, base, &i, 1, "")), (unsigned)es);
}

/* The one-thread-per-element frame over n result elements: sets the launch and leaves the builder inside
 * the guard with *i the element (i64); *done is the join block (NULL: empty, nothing to build). */
static FcStatus each_element(FcGpuKernel *g, int64_t n, LLVMValueRef *i, LLVMBasicBlockRef *done) {
  *done = NULL;
  FcStatus st = fc_gpu_launch_1d(g, n, THREADS);
  if (st != FC_OK || n == 0) return st;
  *i = fc_gpu_global_idx_x(g);
  *done = fc_cg_if_begin(&g->k, LLVMBuildICmp(g->k.b, LLVMIntSLT, *i, c64(&g->k, n), "in"));
  return FC_OK;
}

static FcStatus result_numel(FcGpuKernel *g, int64_t *n) {
  if (!fc_type_numel(&g->k.op->results[0].type, n)) return fc_gpu_error(g, FC_ERR_LIMIT, "result is too large");
  return FC_OK;
}

/* ---- strided views: transpose, broadcast, slice --------------------------------------------------- */

typedef struct View {
  int rank;
  int64_t dims[MAX_RANK], strides[MAX_RANK], base;
} View;

/* Drops unit dims and merges neighbours the source walks as one. */
static void simplify(View *v) {
  int r = 0;
  for (int d = 0; d < v->rank; d++) {
    if (v->dims[d] == 1) continue;
    if (r > 0 && v->strides[r - 1] == v->strides[d] * v->dims[d]) {
      v->dims[r - 1] *= v->dims[d];
      v->strides[r - 1] = v->strides[d];
      continue;
    }
    v->dims[r] = v->dims[d];
    v->strides[r] = v->strides[d];
    r++;
  }
  v->rank = r;
}

static LLVMValueRef view_offset(FcKernel *k, const View *v, LLVMValueRef lin, int skip_a, int skip_b) {
  LLVMValueRef idx[MAX_RANK], off = c64(k, v->base);
  if (v->rank == 0) return off;
  fc_cg_unflatten(k, lin, v->dims, v->rank, idx);
  for (int d = 0; d < v->rank; d++)
    if (d != skip_a && d != skip_b && v->strides[d]) off = fc_cg_iadd(k, off, fc_cg_imulc(k, idx[d], v->strides[d]));
  return off;
}

/* The tiled copy of a view whose last dim L has a stride != 1 while dim q has stride 1: blocks of
 * 32 x 8 threads, one 32 x 32 tile of (q, L) for one index of the other dims each. */
static FcStatus tiled_copy(FcGpuKernel *g, size_t es, const View *v, int q) {
  FcKernel *k = &g->k;
  LLVMBuilderRef b = k->b;
  int L = v->rank - 1;
  int64_t Q = v->dims[q], N = v->dims[L], qt = (Q + TILE - 1) / TILE, nt = (N + TILE - 1) / TILE;
  View rest = {.rank = 0, .base = 0}; /* the other dims, in order, for the block's base offsets */
  int64_t rstride[MAX_RANK], others = 1;
  int64_t dst_stride[MAX_RANK], acc = 1;
  for (int d = v->rank - 1; d >= 0; d--) {
    dst_stride[d] = acc;
    acc *= v->dims[d];
  }
  for (int d = 0; d < v->rank; d++)
    if (d != q && d != L) {
      rest.dims[rest.rank] = v->dims[d];
      rest.strides[rest.rank] = v->strides[d];
      rstride[rest.rank++] = dst_stride[d];
      others *= v->dims[d];
    }
  int64_t blocks;
  if (!fc_checked_mul(others, qt * nt, &blocks) || blocks > INT32_MAX)
    return fc_gpu_error(g, FC_ERR_LIMIT, "a transpose of %lld tiles needs more than 2^31-1 blocks", (long long)blocks);
  g->grid[0] = (uint32_t)blocks;
  g->grid[1] = g->grid[2] = 1;
  g->block[0] = TILE;
  g->block[1] = TILE_ROWS;
  g->block[2] = 1;
  LLVMTypeRef et = bits_type(k, es), i64 = fc_cg_i64(k);
  LLVMValueRef tile = fc_gpu_shared(g, et, TILE * (TILE + 1), "tile");
  if (!tile) return FC_ERR_LIMIT;
  LLVMValueRef bid = LLVMBuildZExt(b, fc_gpu_block_idx(g, 0), i64, "");
  LLVMValueRef tx = LLVMBuildZExt(b, fc_gpu_thread_idx(g, 0), i64, "tx");
  LLVMValueRef ty = LLVMBuildZExt(b, fc_gpu_thread_idx(g, 1), i64, "ty");
  LLVMValueRef nb = LLVMBuildURem(b, bid, c64(k, nt), ""), r1 = LLVMBuildUDiv(b, bid, c64(k, nt), "");
  LLVMValueRef qb = LLVMBuildURem(b, r1, c64(k, qt), ""), ob = LLVMBuildUDiv(b, r1, c64(k, qt), "");
  LLVMValueRef q0 = fc_cg_imulc(k, qb, TILE), n0 = fc_cg_imulc(k, nb, TILE);
  LLVMValueRef sbase = c64(k, v->base), dbase = c64(k, 0);
  if (rest.rank) {
    LLVMValueRef idx[MAX_RANK];
    fc_cg_unflatten(k, ob, rest.dims, rest.rank, idx);
    for (int d = 0; d < rest.rank; d++) {
      if (rest.strides[d]) sbase = fc_cg_iadd(k, sbase, fc_cg_imulc(k, idx[d], rest.strides[d]));
      dbase = fc_cg_iadd(k, dbase, fc_cg_imulc(k, idx[d], rstride[d]));
    }
  }
  /* Read: q = q0 + tx (the source's contiguous dim), n = n0 + ty + 8j; tile[ty + 8j][tx]. */
  for (int j = 0; j < TILE / TILE_ROWS; j++) {
    LLVMValueRef r = fc_cg_iadd(k, ty, c64(k, TILE_ROWS * j));
    LLVMValueRef qq = fc_cg_iadd(k, q0, tx), nn = fc_cg_iadd(k, n0, r);
    LLVMValueRef in = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSLT, qq, c64(k, Q), ""),
                                   LLVMBuildICmp(b, LLVMIntSLT, nn, c64(k, N), ""), "");
    LLVMBasicBlockRef skip = fc_cg_if_begin(k, in);
    LLVMValueRef src = fc_cg_iadd(k, sbase, fc_cg_iadd(k, qq, fc_cg_imulc(k, nn, v->strides[L])));
    LLVMValueRef at = fc_cg_iadd(k, fc_cg_imulc(k, r, TILE + 1), tx);
    LLVMBuildStore(b, load_bits(k, es, k->in[0], src), LLVMBuildGEP2(b, et, tile, &at, 1, ""));
    fc_cg_if_end(k, skip);
  }
  fc_gpu_barrier(g);
  /* Write: n = n0 + tx (the result's contiguous dim), q = q0 + ty + 8j; tile[tx][ty + 8j]. */
  for (int j = 0; j < TILE / TILE_ROWS; j++) {
    LLVMValueRef r = fc_cg_iadd(k, ty, c64(k, TILE_ROWS * j));
    LLVMValueRef qq = fc_cg_iadd(k, q0, r), nn = fc_cg_iadd(k, n0, tx);
    LLVMValueRef in = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSLT, qq, c64(k, Q), ""),
                                   LLVMBuildICmp(b, LLVMIntSLT, nn, c64(k, N), ""), "");
    LLVMBasicBlockRef skip = fc_cg_if_begin(k, in);
    LLVMValueRef at = fc_cg_iadd(k, fc_cg_imulc(k, tx, TILE + 1), r);
    LLVMValueRef val = LLVMBuildLoad2(b, et, LLVMBuildGEP2(b, et, tile, &at, 1, ""), "");
    LLVMValueRef dst = fc_cg_iadd(k, dbase, fc_cg_iadd(k, nn, fc_cg_imulc(k, qq, dst_stride[q])));
    store_bits(k, es, k->out[0], dst, val);
    fc_cg_if_end(k, skip);
  }
  return FC_OK;
}

static FcStatus view_copy(FcGpuKernel *g, size_t es, View *v) {
  FcKernel *k = &g->k;
  int64_t n;
  FcStatus st = result_numel(g, &n);
  if (st != FC_OK) return st;
  simplify(v);
  /* The tile pays where the result's last dim is strided in the source and another dim is contiguous. */
  int L = v->rank - 1, q = -1;
  if (n > 0 && v->rank >= 2 && v->strides[L] != 1 && v->strides[L] != 0)
    for (int d = 0; d < L; d++)
      if (v->strides[d] == 1) q = d;
  if (q >= 0 && v->dims[L] >= 4 && v->dims[q] >= 4) return tiled_copy(g, es, v, q);
  LLVMValueRef i;
  LLVMBasicBlockRef done;
  if ((st = each_element(g, n, &i, &done)) != FC_OK || !done) return st;
  store_bits(k, es, k->out[0], i, load_bits(k, es, k->in[0], view_offset(k, v, i, -1, -1)));
  fc_cg_if_end(k, done);
  return FC_OK;
}

static void row_major_strides(int rank, const int64_t *dims, int64_t *s) {
  int64_t acc = 1;
  for (int d = rank - 1; d >= 0; d--) {
    s[d] = acc;
    acc *= dims[d];
  }
}

FcStatus fc_gpu_transpose(FcGpuKernel *g) {
  FcOp *op = g->k.op;
  const FcType *xt = &op->operands[0].value->type, *rt = &op->results[0].type;
  const int64_t *perm;
  if (fc_op_attr_ints(op, FC_ATTR_PERM, &perm) != xt->rank || rt->rank != xt->rank || xt->rank > MAX_RANK)
    return fc_gpu_error(g, FC_ERR_INTERNAL, "perm does not match the rank");
  int64_t xs[MAX_RANK];
  row_major_strides(xt->rank, xt->dims, xs);
  View v = {.rank = rt->rank};
  for (int d = 0; d < rt->rank; d++) {
    if (perm[d] < 0 || perm[d] >= xt->rank || xt->dims[perm[d]] != rt->dims[d])
      return fc_gpu_error(g, FC_ERR_INTERNAL, "perm does not match the result shape");
    v.dims[d] = rt->dims[d];
    v.strides[d] = xs[perm[d]];
  }
  return view_copy(g, fc_dtype_size(xt->dtype), &v);
}

FcStatus fc_gpu_broadcast(FcGpuKernel *g) {
  FcOp *op = g->k.op;
  const FcType *xt = &op->operands[0].value->type, *rt = &op->results[0].type;
  int lead = rt->rank - xt->rank;
  if (lead < 0 || rt->rank > MAX_RANK) return fc_gpu_error(g, FC_ERR_INTERNAL, "operand rank above the result's");
  int64_t xs[MAX_RANK];
  row_major_strides(xt->rank, xt->dims, xs);
  View v = {.rank = rt->rank};
  for (int d = 0; d < rt->rank; d++) {
    int64_t xd = d < lead ? 1 : xt->dims[d - lead];
    if (xd != 1 && xd != rt->dims[d]) return fc_gpu_error(g, FC_ERR_INTERNAL, "operand does not broadcast to the result");
    v.dims[d] = rt->dims[d];
    v.strides[d] = xd == 1 ? 0 : xs[d - lead];
  }
  return view_copy(g, fc_dtype_size(xt->dtype), &v);
}

FcStatus fc_gpu_slice(FcGpuKernel *g) {
  FcOp *op = g->k.op;
  const FcType *xt = &op->operands[0].value->type, *rt = &op->results[0].type;
  const int64_t *starts, *ends, *steps;
  int ns = fc_op_attr_ints(op, FC_ATTR_STARTS, &starts), ne = fc_op_attr_ints(op, FC_ATTR_ENDS, &ends),
      nst = fc_op_attr_ints(op, FC_ATTR_STEPS, &steps);
  if (ns != xt->rank || ne != xt->rank || nst != xt->rank || rt->rank != xt->rank || xt->rank > MAX_RANK)
    return fc_gpu_error(g, FC_ERR_INTERNAL, "starts/ends/steps do not match the rank");
  int64_t n;
  FcStatus st = result_numel(g, &n);
  if (st != FC_OK) return st;
  int64_t xs[MAX_RANK];
  row_major_strides(xt->rank, xt->dims, xs);
  View v = {.rank = rt->rank};
  for (int d = 0; d < rt->rank && n > 0; d++) {
    int64_t len = rt->dims[d], last;
    if (starts[d] < 0 || starts[d] >= xt->dims[d] || __builtin_mul_overflow(len - 1, steps[d], &last) ||
        __builtin_add_overflow(last, starts[d], &last) || last < 0 || last >= xt->dims[d])
      return fc_gpu_error(g, FC_ERR_INTERNAL, "slice leaves the operand");
    v.base += starts[d] * xs[d];
    v.dims[d] = len;
    v.strides[d] = steps[d] * xs[d];
  }
  return view_copy(g, fc_dtype_size(xt->dtype), &v);
}

/* ---- flat copies: reshape, scast ------------------------------------------------------------------ */

FcStatus fc_gpu_copy(FcGpuKernel *g) {
  FcKernel *k = &g->k;
  int64_t n;
  FcStatus st = result_numel(g, &n);
  if (st != FC_OK) return st;
  size_t es = fc_dtype_size(k->op->results[0].type.dtype);
  if (fc_dtype_size(k->op->operands[0].value->type.dtype) != es)
    return fc_gpu_error(g, FC_ERR_INTERNAL, "operand and result element sizes differ");
  LLVMValueRef i;
  LLVMBasicBlockRef done;
  if ((st = each_element(g, n, &i, &done)) != FC_OK || !done) return st;
  store_bits(k, es, k->out[0], i, load_bits(k, es, k->in[0], i));
  fc_cg_if_end(k, done);
  return FC_OK;
}

/* ---- concat --------------------------------------------------------------------------------------- */

/* Rows are the result's dims before the axis; a row is the operands' blocks side by side. */
FcStatus fc_gpu_concat(FcGpuKernel *g) {
  FcKernel *k = &g->k;
  FcOp *op = k->op;
  LLVMBuilderRef b = k->b;
  const FcType *rt = &op->results[0].type;
  int64_t axis = fc_op_attr_int(op, FC_ATTR_AXIS, -1);
  if (axis < 0 || axis >= rt->rank) return fc_gpu_error(g, FC_ERR_INTERNAL, "axis out of range");
  size_t es = fc_dtype_size(rt->dtype);
  int64_t inner = 1, n;
  for (int d = (int)axis + 1; d < rt->rank; d++) inner *= rt->dims[d];
  int64_t out_row = rt->dims[axis] * inner, total = 0;
  for (int j = 0; j < op->n_operands; j++) total += op->operands[j].value->type.dims[axis] * inner;
  if (total != out_row) return fc_gpu_error(g, FC_ERR_INTERNAL, "operands do not fill the result");
  FcStatus st = result_numel(g, &n);
  if (st != FC_OK) return st;
  LLVMValueRef i;
  LLVMBasicBlockRef done;
  if ((st = each_element(g, n, &i, &done)) != FC_OK || !done) return st;
  LLVMValueRef row = LLVMBuildUDiv(b, i, c64(k, out_row), "row"), col = LLVMBuildURem(b, i, c64(k, out_row), "col");
  int64_t c0 = 0;
  for (int j = 0; j < op->n_operands; j++) {
    int64_t w = op->operands[j].value->type.dims[axis] * inner;
    if (w > 0 && !fc_kernel_operand_in_result(k, j)) { /* an operand computed in its slice is there already */
      LLVMValueRef in = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSGE, col, c64(k, c0), ""),
                                     LLVMBuildICmp(b, LLVMIntSLT, col, c64(k, c0 + w), ""), "");
      LLVMBasicBlockRef skip = fc_cg_if_begin(k, in);
      LLVMValueRef src = fc_cg_iadd(k, fc_cg_imulc(k, row, w), fc_cg_isub(k, col, c64(k, c0)));
      store_bits(k, es, k->out[0], i, load_bits(k, es, k->in[j], src));
      fc_cg_if_end(k, skip);
    }
    c0 += w;
  }
  fc_cg_if_end(k, done);
  return FC_OK;
}

/* ---- pad ------------------------------------------------------------------------------------------ */

typedef enum PadMode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } PadMode;

/* The input coordinate feeding coordinate j (i64, maybe outside [0, n)) of an axis of n >= 1 elements, as
 * kernel_data.c's pad_source: reflect mirrors without repeating the edge, wrap is periodic, edge clamps. */
static LLVMValueRef pad_source(FcKernel *k, PadMode m, LLVMValueRef j, int64_t n) {
  LLVMBuilderRef b = k->b;
  LLVMValueRef zero = c64(k, 0);
  switch (m) {
  case PAD_EDGE: return fc_cg_smax(k, fc_cg_smin(k, j, c64(k, n - 1)), zero);
  case PAD_WRAP: {
    LLVMValueRef q = LLVMBuildSRem(b, j, c64(k, n), "");
    return fc_cg_select(k, LLVMBuildICmp(b, LLVMIntSLT, q, zero, ""), fc_cg_iadd(k, q, c64(k, n)), q);
  }
  case PAD_REFLECT: {
    if (n == 1) return zero;
    int64_t period = 2 * (n - 1);
    LLVMValueRef q = LLVMBuildSRem(b, j, c64(k, period), "");
    q = fc_cg_select(k, LLVMBuildICmp(b, LLVMIntSLT, q, zero, ""), fc_cg_iadd(k, q, c64(k, period)), q);
    return fc_cg_select(k, LLVMBuildICmp(b, LLVMIntSLT, q, c64(k, n), ""), q, fc_cg_isub(k, c64(k, period), q));
  }
  case PAD_CONSTANT: break;
  }
  FC_UNREACHABLE();
}

FcStatus fc_gpu_pad(FcGpuKernel *g) {
  FcKernel *k = &g->k;
  FcOp *op = k->op;
  LLVMBuilderRef b = k->b;
  const FcType *xt = &op->operands[0].value->type, *rt = &op->results[0].type;
  int rank = xt->rank;
  size_t es = fc_dtype_size(xt->dtype);
  const char *ms = fc_op_attr_str(op, FC_ATTR_MODE, "constant");
  PadMode m;
  if (strcmp(ms, "constant") == 0) m = PAD_CONSTANT;
  else if (strcmp(ms, "reflect") == 0) m = PAD_REFLECT;
  else if (strcmp(ms, "edge") == 0) m = PAD_EDGE;
  else if (strcmp(ms, "wrap") == 0) m = PAD_WRAP;
  else return fc_gpu_error(g, FC_ERR_INTERNAL, "unknown pad mode");
  const int64_t *pads;
  if (fc_op_attr_ints(op, FC_ATTR_PADS, &pads) != 2 * rank || rt->rank != rank || rank > MAX_RANK)
    return fc_gpu_error(g, FC_ERR_INTERNAL, "pads do not match the rank");
  for (int d = 0; d < rank; d++)
    if (m != PAD_CONSTANT && xt->dims[d] == 0) return fc_gpu_error(g, FC_ERR_INTERNAL, "cannot pad an empty axis");
  int64_t n, xs[MAX_RANK];
  FcStatus st = result_numel(g, &n);
  if (st != FC_OK) return st;
  row_major_strides(rank, xt->dims, xs);
  LLVMValueRef i;
  LLVMBasicBlockRef done;
  if ((st = each_element(g, n, &i, &done)) != FC_OK || !done) return st;
  LLVMValueRef idx[MAX_RANK], src = c64(k, 0), inside = LLVMConstInt(LLVMInt1TypeInContext(k->ctx), 1, 0);
  if (rank) fc_cg_unflatten(k, i, rt->dims, rank, idx);
  for (int d = 0; d < rank; d++) {
    LLVMValueRef j = fc_cg_isub(k, idx[d], c64(k, pads[d]));
    if (m == PAD_CONSTANT) {
      LLVMValueRef in_d = LLVMBuildICmp(b, LLVMIntULT, j, c64(k, xt->dims[d]), "");
      inside = LLVMBuildAnd(b, inside, in_d, "");
      j = fc_cg_select(k, in_d, j, c64(k, 0));
    } else {
      j = pad_source(k, m, j, xt->dims[d]);
    }
    src = fc_cg_iadd(k, src, fc_cg_imulc(k, j, xs[d]));
  }
  LLVMValueRef value = LLVMConstInt(bits_type(k, es), 0, 0);
  if (m == PAD_CONSTANT && op->n_operands > 1 && k->in[1]) value = load_bits(k, es, k->in[1], c64(k, 0));
  if (m == PAD_CONSTANT) {
    LLVMBasicBlockRef outside = fc_cg_if_begin(k, LLVMBuildNot(b, inside, ""));
    store_bits(k, es, k->out[0], i, value);
    fc_cg_if_end(k, outside);
    LLVMBasicBlockRef copy = fc_cg_if_begin(k, inside);
    store_bits(k, es, k->out[0], i, load_bits(k, es, k->in[0], src));
    fc_cg_if_end(k, copy);
  } else {
    store_bits(k, es, k->out[0], i, load_bits(k, es, k->in[0], src));
  }
  fc_cg_if_end(k, done);
  return FC_OK;
}

/* ---- gather --------------------------------------------------------------------------------------- */

/* Result [outer, n, inner] from data [outer, dim, inner] and n indices. */
FcStatus fc_gpu_gather(FcGpuKernel *g) {
  FcKernel *k = &g->k;
  FcOp *op = k->op;
  LLVMBuilderRef b = k->b;
  const FcType *xt = &op->operands[0].value->type, *it = &op->operands[1].value->type;
  int64_t axis = fc_op_attr_int(op, FC_ATTR_AXIS, 0);
  if (axis < 0 || axis >= xt->rank || !fc_dtype_is_int(it->dtype))
    return fc_gpu_error(g, FC_ERR_INTERNAL, "axis or indices dtype invalid");
  int64_t dim = xt->dims[axis], outer = 1, inner = 1, nidx = 1, n;
  for (int d = 0; d < axis; d++) outer *= xt->dims[d];
  for (int d = (int)axis + 1; d < xt->rank; d++) inner *= xt->dims[d];
  for (int d = 0; d < it->rank; d++) nidx *= it->dims[d];
  size_t es = fc_dtype_size(xt->dtype);
  FcStatus st = result_numel(g, &n);
  if (st != FC_OK) return st;
  LLVMValueRef i;
  LLVMBasicBlockRef done;
  if ((st = each_element(g, n, &i, &done)) != FC_OK || !done) return st;
  if (dim == 0) { /* a non-empty result from an empty axis: every index is out of range */
    fc_cg_flag_error(k, LLVMConstInt(LLVMInt1TypeInContext(k->ctx), 1, 0));
    fc_cg_if_end(k, done);
    return FC_OK;
  }
  LLVMValueRef in = LLVMBuildURem(b, i, c64(k, inner), ""), r = LLVMBuildUDiv(b, i, c64(k, inner), "");
  LLVMValueRef t = LLVMBuildURem(b, r, c64(k, nidx), ""), o = LLVMBuildUDiv(b, r, c64(k, nidx), "");
  LLVMValueRef v = fc_cg_load(k, it->dtype, k->in[1], t);
  size_t is = fc_dtype_size(it->dtype);
  bool sgn = fc_dtype_class(it->dtype) == FC_DTC_SINT;
  if (is < 8) v = sgn ? LLVMBuildSExt(b, v, fc_cg_i64(k), "") : LLVMBuildZExt(b, v, fc_cg_i64(k), "");
  if (sgn) v = fc_cg_select(k, LLVMBuildICmp(b, LLVMIntSLT, v, c64(k, 0), ""), fc_cg_iadd(k, v, c64(k, dim)), v);
  LLVMValueRef bad = LLVMBuildICmp(b, LLVMIntUGE, v, c64(k, dim), "");
  fc_cg_flag_error(k, bad);
  v = fc_cg_select(k, bad, c64(k, 0), v);
  LLVMValueRef src = fc_cg_iadd(k, fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, o, dim), v), inner), in);
  store_bits(k, es, k->out[0], i, load_bits(k, es, k->in[0], src));
  fc_cg_if_end(k, done);
  return FC_OK;
}
