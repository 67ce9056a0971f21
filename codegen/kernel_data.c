/* kernel_data.c — kernels of the data-movement and indexing ops: reshape, transpose, broadcast, concat,
 * slice, pad, gather, gather_elements, gather_nd, scatter_elements, scatter_nd, one_hot and
 * reverse_sequence. The reference semantics are ir/eval_data.c and ir/eval_index.c.
 *
 * None of these ops computes on values (scatter reductions aside), so elements move as integers of the
 * dtype's size (i8/i16/i32/i64): bits are copied, never converted, and every dtype works.
 *
 * Most kernels are row loops. A "row" is a run along the result's innermost dim (or a block of it) that
 * the emitter writes with one memcpy or one unit-stride loop; the rows are numbered row-major over the
 * remaining dims. The rows_* helpers split those row dims into an outer part, which is the kernel's
 * parallel outer iteration (its coordinates recovered by div/mod once per iteration), and an inner part
 * emitted as nested loops, choosing the split so each outer iteration carries at least KD_MIN_OUTER_WORK
 * elements: short rows do not pay a division each, and very long rows are cut into chunks so that a few
 * of them still spread over the threads.
 *
 * Transpose, broadcast and slice are strided views of their operand (permuted, zero or stepped strides)
 * copied by one routine: it drops unit dims and merges dims that stay contiguous, then copies rows with
 * memcpy (stride 1), a splat (stride 0) or a strided loop. A transpose whose innermost result dim walks
 * the source with a large stride while some other dim is the source's contiguous one is copied in
 * square tiles over those two dims, so both sides touch whole cache lines.
 *
 * Indices come from run-time data: each is widened to i64, negatives count from the end, and one outside
 * its dim is reported through fc_cg_flag_error; gathers then read element 0 instead (the dim is known to
 * be non-empty, or the kernel flags unconditionally and moves nothing), scatters skip the write. So a bad
 * index never touches memory out of bounds.
 *
 * Scatters copy data to the result and then apply the updates in order, sequentially (outer = 1): with
 * duplicate indices or a reduction, updates to one element must not race, and the last duplicate must
 * win as in the reference.
 */
#include "codegen.h"

#include <string.h>

#define KD_MAX_RANK 64
/* Elements an outer iteration should move at least, so the div/mod that recovers its coordinates and the
 * thread pool's per-chunk cost stay small beside the copy. */
#define KD_MIN_OUTER_WORK 4096.0
/* Bytes one outer iteration of a flat copy (reshape) moves. */
#define KD_COPY_CHUNK ((int64_t)1 << 18)
/* Source lines a tiled transpose reads at once along its strided dim (see emit_view_tiled). */
#define KD_TILE_Q 8
/* Elements beyond which a row (a contiguous run of the result) is cut into chunks of this many. */
#define KD_ROW_CHUNK ((int64_t)1 << 15)

/* ---- small IR helpers ------------------------------------------------------------------------------ */

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

static LLVMTypeRef bits_type(FcKernel *k, size_t es) { return LLVMIntTypeInContext(k->ctx, (unsigned)(8 * es)); }

static LLVMValueRef elem_ptr(FcKernel *k, size_t es, LLVMValueRef base, LLVMValueRef i) {
  return LLVMBuildGEP2(k->b, bits_type(k, es), base, &i, 1, "");
}

static LLVMValueRef load_bits(FcKernel *k, size_t es, LLVMValueRef base, LLVMValueRef i) {
  LLVMValueRef v = LLVMBuildLoad2(k->b, bits_type(k, es), elem_ptr(k, es, base, i), "");
  LLVMSetAlignment(v, (unsigned)es);
  return v;
}

static void store_bits(FcKernel *k, size_t es, LLVMValueRef base, LLVMValueRef i, LLVMValueRef v) {
  LLVMValueRef s = LLVMBuildStore(k->b, v, elem_ptr(k, es, base, i));
  LLVMSetAlignment(s, (unsigned)es);
}

/* dst[di .. di+n) = src[si .. si+n) for n >= 1 elements of es bytes; n is known at compile time, so LLVM
 * turns small copies into plain loads and stores. */
static void copy_elems(FcKernel *k, size_t es, LLVMValueRef dst, LLVMValueRef di, LLVMValueRef src, LLVMValueRef si,
                       int64_t n) {
  if (n == 1) {
    store_bits(k, es, dst, di, load_bits(k, es, src, si));
    return;
  }
  LLVMBuildMemCpy(k->b, elem_ptr(k, es, dst, di), (unsigned)es, elem_ptr(k, es, src, si), (unsigned)es,
                  c64(k, n * (int64_t)es));
}

/* acc + i * stride (stride may be 0 or negative). */
static LLVMValueRef add_scaled(FcKernel *k, LLVMValueRef acc, LLVMValueRef i, int64_t stride) {
  return stride == 0 ? acc : fc_cg_iadd(k, acc, fc_cg_imulc(k, i, stride));
}
static LLVMValueRef icmp(FcKernel *k, LLVMIntPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildICmp(k->b, p, a, b, "");
}
static LLVMValueRef min_c(FcKernel *k, LLVMValueRef a, int64_t c) {
  return fc_cg_select(k, icmp(k, LLVMIntSLT, a, c64(k, c)), a, c64(k, c));
}

/* Structured if / else over basic blocks appended to the kernel function. */
typedef struct KdIf {
  LLVMBasicBlockRef then_bb, else_bb, cont_bb;
} KdIf;

static void if_begin(FcKernel *k, KdIf *f, LLVMValueRef cond, bool with_else) {
  f->then_bb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "then");
  f->else_bb = with_else ? LLVMAppendBasicBlockInContext(k->ctx, k->fn, "else") : NULL;
  f->cont_bb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "endif");
  LLVMBuildCondBr(k->b, cond, f->then_bb, f->else_bb ? f->else_bb : f->cont_bb);
  LLVMPositionBuilderAtEnd(k->b, f->then_bb);
}

static void if_else(FcKernel *k, KdIf *f) {
  FC_ASSERT(f->else_bb);
  LLVMBuildBr(k->b, f->cont_bb);
  LLVMPositionBuilderAtEnd(k->b, f->else_bb);
}

static void if_end(FcKernel *k, KdIf *f) {
  LLVMBuildBr(k->b, f->cont_bb);
  LLVMPositionBuilderAtEnd(k->b, f->cont_bb);
}

/* ---- shapes ---------------------------------------------------------------------------------------- */

static const FcType *operand_type(const FcKernel *k, int i) { return &k->op->operands[i].value->type; }

/* a * b saturated at INT64_MAX. An empty operand may have dims whose product overflows (its element count
 * is 0 all the same); its strides are never used for an access, but must not be signed overflow. */
static int64_t mul_sat(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/* Product of dims[lo, hi). Callers take products of sub-shapes of non-empty verified types, whose element
 * count fits in int64, so these are exact. */
static int64_t prod(const int64_t *dims, int lo, int hi) {
  int64_t p = 1;
  for (int d = lo; d < hi; d++) p = mul_sat(p, dims[d]);
  return p;
}

static void row_major_strides(int rank, const int64_t *dims, int64_t *strides) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    strides[d] = s;
    s = mul_sat(s, dims[d]);
  }
}

static FcStatus kd_fail(FcKernel *k, FcStatus st, const char *what) {
  const FcOpInfo *info = fc_op_info(k->op->kind);
  return fc_error_node(k->diag, st, fc_op_name(k->op), info->name, "%s", what);
}

/* Refuses ranks beyond the per-dim scratch of this file; true when the result is empty (nothing to do). */
static FcStatus kd_begin(FcKernel *k, bool *empty) {
  for (int i = 0; i < k->op->n_operands; i++)
    if (k->op->operands[i].value && operand_type(k, i)->rank > KD_MAX_RANK)
      return kd_fail(k, FC_ERR_UNSUPPORTED, "rank above 64");
  const FcType *rt = &k->op->results[0].type;
  if (rt->rank > KD_MAX_RANK) return kd_fail(k, FC_ERR_UNSUPPORTED, "rank above 64");
  int64_t n;
  if (!fc_type_numel(rt, &n)) return kd_fail(k, FC_ERR_LIMIT, "result has too many elements");
  *empty = n == 0;
  if (*empty) fc_kernel_set_outer(k, 0, 0); /* the run function skips a kernel with no iterations */
  return FC_OK;
}

/* ---- row loops --------------------------------------------------------------------------------------- */

typedef struct Rows {
  int nr, s;                      /* row dims; [0, s) come from the outer index, [s, nr) are full loops */
  int bd;                         /* -1, or s - 1: a dim the outer index cuts into blocks of `block` */
  int64_t block, blocks;
  int64_t dims[KD_MAX_RANK];
  int64_t rstride[KD_MAX_RANK];   /* row-number stride of each row dim */
  FcLoop outer, loops[KD_MAX_RANK];
  LLVMValueRef idx[KD_MAX_RANK];  /* i64 coordinate of each row dim */
  LLVMValueRef blk;               /* the outer iteration's block of dim bd */
  LLVMValueRef row;               /* i64 row number, row-major over dims */
} Rows;

/* Picks the outer/inner split of `nr` row dims of `row_work` elements each and declares the outer count:
 * inner dims join each outer iteration until it carries KD_MIN_OUTER_WORK; the dim where that happens is
 * cut into blocks just large enough, rather than taken whole, so a [5000, 7] set of short rows still
 * gives many outer iterations. `sequential` puts every row in one outer iteration. */
static void rows_plan(FcKernel *k, Rows *r, int nr, const int64_t *dims, int64_t row_work, bool sequential) {
  FC_ASSERT(nr >= 0 && nr <= KD_MAX_RANK);
  r->nr = nr;
  memcpy(r->dims, dims, (size_t)nr * sizeof *dims);
  row_major_strides(nr, r->dims, r->rstride);
  double w = (double)(row_work > 0 ? row_work : 1); /* work of one outer iteration */
  int s = nr;
  r->bd = -1;
  r->block = r->blocks = 1;
  while (s > 0 && (sequential || w < KD_MIN_OUTER_WORK)) {
    double need = sequential ? (double)INT64_MAX : KD_MIN_OUTER_WORK / w;
    if ((double)dims[s - 1] > 2.0 * need) {
      r->bd = s - 1;
      r->block = (int64_t)need + 1;
      r->blocks = (dims[s - 1] + r->block - 1) / r->block;
      w *= (double)r->block;
      break;
    }
    s--;
    w *= (double)dims[s];
  }
  r->s = s;
  int64_t outer = r->bd >= 0 ? prod(dims, 0, r->bd) * r->blocks : prod(dims, 0, s);
  fc_kernel_set_outer(k, outer, w);
}

/* Opens the loop over this call's outer iterations and recovers the outer row coordinates. */
static void rows_open_outer(FcKernel *k, Rows *r) {
  LLVMValueRef rem = fc_cg_loop_begin(k, &r->outer, k->begin, k->end, 1, "outer");
  int top = r->s;
  if (r->bd >= 0) {
    r->blk = LLVMBuildURem(k->b, rem, c64(k, r->blocks), "");
    rem = LLVMBuildUDiv(k->b, rem, c64(k, r->blocks), "");
    top = r->bd;
  }
  for (int d = top - 1; d >= 1; d--) {
    r->idx[d] = LLVMBuildURem(k->b, rem, c64(k, r->dims[d]), "");
    rem = LLVMBuildUDiv(k->b, rem, c64(k, r->dims[d]), "");
  }
  if (top > 0) r->idx[0] = rem;
}

/* Opens the loops over the inner row dims; afterwards idx[] and row describe one row. */
static void rows_open_inner(FcKernel *k, Rows *r) {
  if (r->bd >= 0) {
    LLVMValueRef lo = fc_cg_imulc(k, r->blk, r->block);
    LLVMValueRef hi = min_c(k, fc_cg_iadd(k, lo, c64(k, r->block)), r->dims[r->bd]);
    r->idx[r->bd] = fc_cg_loop_begin(k, &r->loops[r->bd], lo, hi, 1, "blk");
  }
  for (int d = r->s; d < r->nr; d++)
    r->idx[d] = fc_cg_loop_begin(k, &r->loops[d], c64(k, 0), c64(k, r->dims[d]), 1, "row");
  LLVMValueRef row = c64(k, 0);
  for (int d = 0; d < r->nr; d++) row = add_scaled(k, row, r->idx[d], r->rstride[d]);
  r->row = row;
}

static void rows_open(FcKernel *k, Rows *r) {
  rows_open_outer(k, r);
  rows_open_inner(k, r);
}

static void rows_close(FcKernel *k, Rows *r) {
  for (int d = r->nr - 1; d >= r->s; d--) fc_cg_loop_end(k, &r->loops[d]);
  if (r->bd >= 0) fc_cg_loop_end(k, &r->loops[r->bd]);
  fc_cg_loop_end(k, &r->outer);
}

/* Σ idx[d] * strides[d] + base over the first n row dims. */
static LLVMValueRef row_offset(FcKernel *k, const Rows *r, int n, const int64_t *strides, int64_t base) {
  LLVMValueRef off = c64(k, base);
  for (int d = 0; d < n; d++) off = add_scaled(k, off, r->idx[d], strides[d]);
  return off;
}

/* ---- indices from data --------------------------------------------------------------------------------- */

/* Element i of an index tensor as i64: integers sign- or zero-extended by their dtype; floats (one_hot)
 * truncated toward zero with Cast semantics. */
static LLVMValueRef load_index(FcKernel *k, FcDtype dt, LLVMValueRef base, LLVMValueRef i) {
  if (fc_dtype_is_float(dt)) return fc_cg_convert(k, fc_cg_load(k, dt, base, i), dt, FC_DT_I64);
  size_t es = fc_dtype_size(dt);
  LLVMValueRef v = load_bits(k, es, base, i);
  if (es == 8) return v;
  return fc_dtype_class(dt) == FC_DTC_SINT ? LLVMBuildSExt(k->b, v, fc_cg_i64(k), "")
                                           : LLVMBuildZExt(k->b, v, fc_cg_i64(k), "");
}

/* Normalises an index against dim: a negative one of a signed dtype counts from the end. Returns the
 * normalised value and sets *bad (i1) where it lies outside [0, dim). An unsigned u64 index above
 * INT64_MAX is negative as i64 and so fails the unsigned range check as well. */
static LLVMValueRef normalize_index(FcKernel *k, FcDtype dt, LLVMValueRef v, int64_t dim, LLVMValueRef *bad) {
  if (fc_dtype_class(dt) == FC_DTC_SINT || fc_dtype_is_float(dt))
    v = fc_cg_select(k, icmp(k, LLVMIntSLT, v, c64(k, 0)), fc_cg_iadd(k, v, c64(k, dim)), v);
  *bad = icmp(k, LLVMIntUGE, v, c64(k, dim));
  return v;
}

/* A normalised index that is safe to address with: a bad one is flagged and replaced by 0 (dim >= 1). */
static LLVMValueRef checked_index(FcKernel *k, FcDtype dt, LLVMValueRef v, int64_t dim) {
  FC_ASSERT(dim >= 1);
  LLVMValueRef bad;
  v = normalize_index(k, dt, v, dim, &bad);
  fc_cg_flag_error(k, bad);
  return fc_cg_select(k, bad, c64(k, 0), v);
}

/* For a non-empty result whose indexed dim is empty: every index is out of range. */
static void flag_always(FcKernel *k) {
  fc_kernel_set_outer(k, 1, 1);
  fc_cg_flag_error(k, LLVMConstInt(LLVMInt1TypeInContext(k->ctx), 1, 0));
}

/* ---- reshape ----------------------------------------------------------------------------------------- */

/* A reshape only runs when the memory plan could not make it a view: a flat copy in chunks. */
FcStatus fc_kernel_reshape(FcKernel *k) {
  bool empty;
  FcStatus st = kd_begin(k, &empty);
  if (st != FC_OK || empty) return st;
  int64_t bytes;
  if (!fc_type_nbytes(&k->op->results[0].type, &bytes)) return kd_fail(k, FC_ERR_LIMIT, "result too large");
  unsigned es = (unsigned)fc_dtype_size(k->op->results[0].type.dtype);
  int64_t chunks = (bytes + KD_COPY_CHUNK - 1) / KD_COPY_CHUNK;
  fc_kernel_set_outer(k, chunks, (double)(bytes < KD_COPY_CHUNK ? bytes : KD_COPY_CHUNK) / 4.0);
  FcLoop l;
  LLVMValueRef o = fc_cg_loop_begin(k, &l, k->begin, k->end, 1, "chunk");
  LLVMValueRef off = fc_cg_imulc(k, o, KD_COPY_CHUNK);
  LLVMValueRef len = chunks == 1 ? c64(k, bytes) : min_c(k, fc_cg_isub(k, c64(k, bytes), off), KD_COPY_CHUNK);
  LLVMBuildMemCpy(k->b, elem_ptr(k, 1, k->out[0], off), es, elem_ptr(k, 1, k->in[0], off), es, len);
  fc_cg_loop_end(k, &l);
  return FC_OK;
}

/* ---- strided views: transpose, broadcast, slice -------------------------------------------------------- */

typedef struct View {
  int rank;
  int64_t base;                  /* source element offset of the first result element */
  int64_t dims[KD_MAX_RANK];     /* result dims */
  int64_t strides[KD_MAX_RANK];  /* source element step per result dim (0: broadcast, < 0: reversed) */
} View;

/* Drops unit dims and merges each dim into the next inner one where the source steps over that whole
 * inner dim contiguously (the result is contiguous, so the merged dim is a plain longer run). */
static void view_simplify(View *v) {
  int64_t dims[KD_MAX_RANK], strides[KD_MAX_RANK]; /* innermost first */
  int n = 0;
  for (int d = v->rank - 1; d >= 0; d--) {
    if (v->dims[d] == 1) continue;
    int64_t span;
    if (n > 0 && !__builtin_mul_overflow(strides[n - 1], dims[n - 1], &span) && span == v->strides[d]) {
      dims[n - 1] *= v->dims[d];
      continue;
    }
    dims[n] = v->dims[d];
    strides[n] = v->strides[d];
    n++;
  }
  v->rank = n;
  for (int i = 0; i < n; i++) {
    v->dims[i] = dims[n - 1 - i];
    v->strides[i] = strides[n - 1 - i];
  }
}

/* Tiled copy for a view whose innermost result dim q has a non-unit source stride while dim p is the
 * source's contiguous one: outer iterations are (other dims, a band of `tile` values of p); inside, tiles
 * of tile x KD_TILE_Q over (p, q). Each source line is read whole across consecutive p while only
 * KD_TILE_Q strided lines are live at once: with a power-of-two stride all of them fall into one L1 set,
 * and 8 stays within its ways, where the 32 lines of a square 32 x 32 tile would evict each other. */
static void emit_view_tiled(FcKernel *k, size_t es, LLVMValueRef dst, LLVMValueRef src, const View *v, int p) {
  int r = v->rank, last = r - 1;
  int64_t tile = es >= 4 ? 64 : 128, tq = KD_TILE_Q;
  int64_t ostr[KD_MAX_RANK];
  row_major_strides(r, v->dims, ostr);
  int others[KD_MAX_RANK], n_others = 0;
  for (int d = 0; d < last; d++)
    if (d != p) others[n_others++] = d;
  int64_t n_other = 1;
  for (int i = 0; i < n_others; i++) n_other *= v->dims[others[i]];
  int64_t bands = (v->dims[p] + tile - 1) / tile;
  fc_kernel_set_outer(k, n_other * bands, (double)tile * (double)v->dims[last]);

  FcLoop lo, lq, li, lj;
  LLVMValueRef o = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "band");
  LLVMValueRef band = LLVMBuildURem(k->b, o, c64(k, bands), "");
  LLVMValueRef rem = LLVMBuildUDiv(k->b, o, c64(k, bands), "");
  LLVMValueRef p0 = fc_cg_imulc(k, band, tile);
  LLVMValueRef sb = add_scaled(k, c64(k, v->base), p0, v->strides[p]);
  LLVMValueRef db = fc_cg_imulc(k, p0, ostr[p]);
  for (int i = n_others - 1; i >= 0; i--) {
    int d = others[i];
    LLVMValueRef c = i > 0 ? LLVMBuildURem(k->b, rem, c64(k, v->dims[d]), "") : rem;
    if (i > 0) rem = LLVMBuildUDiv(k->b, rem, c64(k, v->dims[d]), "");
    sb = add_scaled(k, sb, c, v->strides[d]);
    db = add_scaled(k, db, c, ostr[d]);
  }
  LLVMValueRef plen = min_c(k, fc_cg_isub(k, c64(k, v->dims[p]), p0), tile);
  LLVMValueRef q0 = fc_cg_loop_begin(k, &lq, c64(k, 0), c64(k, v->dims[last]), tq, "tile");
  LLVMValueRef qlen = min_c(k, fc_cg_isub(k, c64(k, v->dims[last]), q0), tq);
  LLVMValueRef i = fc_cg_loop_begin(k, &li, c64(k, 0), plen, 1, "i");
  LLVMValueRef drow = fc_cg_iadd(k, add_scaled(k, db, i, ostr[p]), q0);
  LLVMValueRef srow = add_scaled(k, add_scaled(k, sb, i, v->strides[p]), q0, v->strides[last]);
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(k, 0), qlen, 1, "j");
  store_bits(k, es, dst, fc_cg_iadd(k, drow, j), load_bits(k, es, src, add_scaled(k, srow, j, v->strides[last])));
  fc_cg_loop_end(k, &lj);
  fc_cg_loop_end(k, &li);
  fc_cg_loop_end(k, &lq);
  fc_cg_loop_end(k, &lo);
}

/* Copies the view into the contiguous dst. The view's result must be non-empty. Rows longer than
 * KD_ROW_CHUNK elements are cut into chunks, each a row of its own for the outer split, so a broadcast
 * of a scalar or a copy with few long rows still spreads over the threads. */
static void emit_view_copy(FcKernel *k, size_t es, LLVMValueRef dst, LLVMValueRef src, View *v) {
  view_simplify(v);
  if (v->rank == 0) {
    fc_kernel_set_outer(k, 1, 1);
    copy_elems(k, es, dst, c64(k, 0), src, c64(k, v->base), 1);
    return;
  }
  int last = v->rank - 1;
  int64_t n = v->dims[last], s = v->strides[last];
  int p = -1;
  for (int d = 0; d < last; d++)
    if (v->strides[d] == 1) p = d;
  if (s != 0 && s != 1 && p >= 0 && v->dims[p] >= 8 && n >= 8) {
    emit_view_tiled(k, es, dst, src, v, p);
    return;
  }
  int64_t ostr[KD_MAX_RANK], rdims[KD_MAX_RANK];
  row_major_strides(v->rank, v->dims, ostr);
  memcpy(rdims, v->dims, (size_t)last * sizeof *rdims);
  bool chunked = n > KD_ROW_CHUNK;
  int64_t chunk = chunked ? KD_ROW_CHUNK : n;
  if (chunked) rdims[last] = (n + chunk - 1) / chunk;
  Rows r;
  rows_plan(k, &r, chunked ? last + 1 : last, rdims, chunk, false);
  rows_open(k, &r);
  LLVMValueRef srow = row_offset(k, &r, last, v->strides, v->base), drow = row_offset(k, &r, last, ostr, 0);
  LLVMValueRef len = c64(k, n);
  if (chunked) {
    LLVMValueRef j0 = fc_cg_imulc(k, r.idx[last], chunk);
    srow = add_scaled(k, srow, j0, s);
    drow = fc_cg_iadd(k, drow, j0);
    len = min_c(k, fc_cg_isub(k, c64(k, n), j0), chunk);
  }
  if (s == 1 && !chunked) {
    copy_elems(k, es, dst, drow, src, srow, n);
  } else if (s == 1) {
    LLVMBuildMemCpy(k->b, elem_ptr(k, es, dst, drow), (unsigned)es, elem_ptr(k, es, src, srow), (unsigned)es,
                    fc_cg_imulc(k, len, (int64_t)es));
  } else {
    LLVMValueRef splat = s == 0 ? load_bits(k, es, src, srow) : NULL;
    FcLoop l;
    LLVMValueRef j = fc_cg_loop_begin(k, &l, c64(k, 0), len, 1, "j");
    store_bits(k, es, dst, fc_cg_iadd(k, drow, j), splat ? splat : load_bits(k, es, src, add_scaled(k, srow, j, s)));
    fc_cg_loop_end(k, &l);
  }
  rows_close(k, &r);
}

FcStatus fc_kernel_transpose(FcKernel *k) {
  bool empty;
  FcStatus st = kd_begin(k, &empty);
  if (st != FC_OK || empty) return st;
  const FcType *xt = operand_type(k, 0), *rt = &k->op->results[0].type;
  const int64_t *perm;
  int np = fc_op_attr_ints(k->op, FC_ATTR_PERM, &perm);
  if (np != xt->rank || rt->rank != xt->rank) return kd_fail(k, FC_ERR_INTERNAL, "perm does not match the rank");
  int64_t xs[KD_MAX_RANK];
  row_major_strides(xt->rank, xt->dims, xs);
  View v = {.rank = rt->rank, .base = 0};
  for (int d = 0; d < rt->rank; d++) {
    if (perm[d] < 0 || perm[d] >= xt->rank || xt->dims[perm[d]] != rt->dims[d])
      return kd_fail(k, FC_ERR_INTERNAL, "perm does not match the result shape");
    v.dims[d] = rt->dims[d];
    v.strides[d] = xs[perm[d]];
  }
  emit_view_copy(k, fc_dtype_size(xt->dtype), k->out[0], k->in[0], &v);
  return FC_OK;
}

FcStatus fc_kernel_broadcast(FcKernel *k) {
  bool empty;
  FcStatus st = kd_begin(k, &empty);
  if (st != FC_OK || empty) return st;
  const FcType *xt = operand_type(k, 0), *rt = &k->op->results[0].type;
  int lead = rt->rank - xt->rank;
  if (lead < 0) return kd_fail(k, FC_ERR_INTERNAL, "operand rank above the result's");
  int64_t xs[KD_MAX_RANK];
  row_major_strides(xt->rank, xt->dims, xs);
  View v = {.rank = rt->rank, .base = 0};
  for (int d = 0; d < rt->rank; d++) {
    int64_t xd = d < lead ? 1 : xt->dims[d - lead];
    if (xd != 1 && xd != rt->dims[d]) return kd_fail(k, FC_ERR_INTERNAL, "operand does not broadcast to the result");
    v.dims[d] = rt->dims[d];
    v.strides[d] = xd == 1 ? 0 : xs[d - lead];
  }
  emit_view_copy(k, fc_dtype_size(xt->dtype), k->out[0], k->in[0], &v);
  return FC_OK;
}

FcStatus fc_kernel_slice(FcKernel *k) {
  bool empty;
  FcStatus st = kd_begin(k, &empty);
  if (st != FC_OK || empty) return st;
  const FcType *xt = operand_type(k, 0), *rt = &k->op->results[0].type;
  const int64_t *starts, *ends, *steps;
  int ns = fc_op_attr_ints(k->op, FC_ATTR_STARTS, &starts), ne = fc_op_attr_ints(k->op, FC_ATTR_ENDS, &ends),
      nst = fc_op_attr_ints(k->op, FC_ATTR_STEPS, &steps);
  if (ns != xt->rank || ne != xt->rank || nst != xt->rank || rt->rank != xt->rank)
    return kd_fail(k, FC_ERR_INTERNAL, "starts/ends/steps do not match the rank");
  int64_t xs[KD_MAX_RANK];
  row_major_strides(xt->rank, xt->dims, xs);
  View v = {.rank = rt->rank, .base = 0};
  for (int d = 0; d < rt->rank; d++) {
    /* The first and the last element taken must lie in the axis (the verifier's normalised bounds imply
     * it); checked again because the copy trusts it. */
    int64_t n = rt->dims[d], last;
    if (starts[d] < 0 || starts[d] >= xt->dims[d] || __builtin_mul_overflow(n - 1, steps[d], &last) ||
        __builtin_add_overflow(last, starts[d], &last) || last < 0 || last >= xt->dims[d])
      return kd_fail(k, FC_ERR_INTERNAL, "slice leaves the operand");
    v.base += starts[d] * xs[d];
    v.dims[d] = n;
    v.strides[d] = steps[d] * xs[d];
  }
  emit_view_copy(k, fc_dtype_size(xt->dtype), k->out[0], k->in[0], &v);
  return FC_OK;
}

/* ---- concat ------------------------------------------------------------------------------------------ */

/* Rows are the result's dims before the axis; each row is the operands' blocks side by side. A row
 * longer than KD_ROW_CHUNK elements is cut into chunks (axis 0 or 1 of a batch-1 tensor is one or a few
 * rows); a chunk copies its overlap with each operand's block. Operands that the memory plan made parts
 * of the result are already in their place and are skipped (a concat of parts only has no kernel). */
FcStatus fc_kernel_concat(FcKernel *k) {
  bool empty;
  FcStatus st = kd_begin(k, &empty);
  if (st != FC_OK || empty) return st;
  const FcType *rt = &k->op->results[0].type;
  int64_t axis = fc_op_attr_int(k->op, FC_ATTR_AXIS, -1);
  if (axis < 0 || axis >= rt->rank) return kd_fail(k, FC_ERR_INTERNAL, "axis out of range");
  size_t es = fc_dtype_size(rt->dtype);
  int64_t inner = prod(rt->dims, (int)axis + 1, rt->rank), out_row = rt->dims[axis] * inner, total = 0;
  for (int i = 0; i < k->op->n_operands; i++) total += operand_type(k, i)->dims[axis] * inner;
  if (total != out_row) return kd_fail(k, FC_ERR_INTERNAL, "operands do not fill the result");
  bool chunked = out_row > KD_ROW_CHUNK;
  int64_t rdims[KD_MAX_RANK + 1];
  memcpy(rdims, rt->dims, (size_t)axis * sizeof *rdims);
  if (chunked) rdims[axis] = (out_row + KD_ROW_CHUNK - 1) / KD_ROW_CHUNK;
  Rows r;
  rows_plan(k, &r, chunked ? (int)axis + 1 : (int)axis, rdims, chunked ? KD_ROW_CHUNK : out_row, false);
  rows_open(k, &r);
  LLVMValueRef row = chunked ? LLVMBuildUDiv(k->b, r.row, c64(k, rdims[axis]), "") : r.row;
  LLVMValueRef drow = fc_cg_imulc(k, row, out_row), lo = NULL, hi = NULL;
  if (chunked) {
    lo = fc_cg_imulc(k, r.idx[axis], KD_ROW_CHUNK);
    hi = min_c(k, fc_cg_iadd(k, lo, c64(k, KD_ROW_CHUNK)), out_row);
  }
  int64_t col = 0;
  for (int i = 0; i < k->op->n_operands; i++) {
    int64_t w = operand_type(k, i)->dims[axis] * inner;
    if (w == 0) continue;
    if (fc_kernel_operand_in_result(k, i)) { /* computed in its slice already */
      col += w;
      continue;
    }
    LLVMValueRef srow = fc_cg_imulc(k, row, w);
    if (!chunked) {
      copy_elems(k, es, k->out[0], fc_cg_iadd(k, drow, c64(k, col)), k->in[i], srow, w);
    } else {
      /* [a, b) = [lo, hi) ∩ [col, col + w); an empty overlap copies 0 bytes. */
      LLVMValueRef a = fc_cg_select(k, icmp(k, LLVMIntSGT, lo, c64(k, col)), lo, c64(k, col));
      LLVMValueRef b = min_c(k, hi, col + w);
      LLVMValueRef n = fc_cg_select(k, icmp(k, LLVMIntSGT, b, a), fc_cg_isub(k, b, a), c64(k, 0));
      LLVMBuildMemCpy(k->b, elem_ptr(k, es, k->out[0], fc_cg_iadd(k, drow, a)), (unsigned)es,
                      elem_ptr(k, es, k->in[i], fc_cg_iadd(k, srow, fc_cg_isub(k, a, c64(k, col)))), (unsigned)es,
                      fc_cg_imulc(k, n, (int64_t)es));
    }
    col += w;
  }
  rows_close(k, &r);
  return FC_OK;
}

/* ---- pad --------------------------------------------------------------------------------------------- */

typedef enum PadMode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } PadMode;

/* pad_source of eval_data.c for the copying modes: the input coordinate that feeds coordinate j (i64,
 * possibly outside [0, n)) of an axis of n >= 1 elements. numpy's rules: reflect mirrors without
 * repeating the edge and keeps mirroring; wrap is periodic; edge clamps. */
static LLVMValueRef pad_source(FcKernel *k, PadMode m, LLVMValueRef j, int64_t n) {
  LLVMValueRef zero = c64(k, 0);
  switch (m) {
  case PAD_EDGE: {
    LLVMValueRef hi = fc_cg_select(k, icmp(k, LLVMIntSGT, j, c64(k, n - 1)), c64(k, n - 1), j);
    return fc_cg_select(k, icmp(k, LLVMIntSLT, j, zero), zero, hi);
  }
  case PAD_WRAP: {
    LLVMValueRef q = LLVMBuildSRem(k->b, j, c64(k, n), "");
    return fc_cg_select(k, icmp(k, LLVMIntSLT, q, zero), fc_cg_iadd(k, q, c64(k, n)), q);
  }
  case PAD_REFLECT: {
    if (n == 1) return zero;
    int64_t period = 2 * (n - 1);
    LLVMValueRef q = LLVMBuildSRem(k->b, j, c64(k, period), "");
    q = fc_cg_select(k, icmp(k, LLVMIntSLT, q, zero), fc_cg_iadd(k, q, c64(k, period)), q);
    return fc_cg_select(k, icmp(k, LLVMIntSLT, q, c64(k, n)), q, fc_cg_isub(k, c64(k, period), q));
  }
  case PAD_CONSTANT: break;
  }
  FC_UNREACHABLE();
}

/* out[drow + j] for j in [lo, hi) of the innermost axis outside its copied interior: the pad value, or
 * the element pad_source picks from the source row at srow. */
static void pad_edge_run(FcKernel *k, PadMode m, size_t es, LLVMValueRef srow, LLVMValueRef drow, int64_t lo,
                         int64_t hi, int64_t begin, int64_t n, LLVMValueRef value) {
  if (lo >= hi) return;
  FcLoop l;
  LLVMValueRef j = fc_cg_loop_begin(k, &l, c64(k, lo), c64(k, hi), 1, "pad");
  LLVMValueRef v = m == PAD_CONSTANT
                       ? value
                       : load_bits(k, es, k->in[0],
                                   fc_cg_iadd(k, srow, pad_source(k, m, fc_cg_isub(k, j, c64(k, begin)), n)));
  store_bits(k, es, k->out[0], fc_cg_iadd(k, drow, j), v);
  fc_cg_loop_end(k, &l);
}

/* Result-driven: each result row (innermost axis) maps its outer coordinates to source coordinates; in
 * constant mode a coordinate in the padding makes the whole row the pad value. Along the innermost axis
 * the part that comes from the source in order (clipped by negative pads) is one copy; the padding on
 * either side goes element by element. */
FcStatus fc_kernel_pad(FcKernel *k) {
  bool empty;
  FcStatus st = kd_begin(k, &empty);
  if (st != FC_OK || empty) return st;
  const FcType *xt = operand_type(k, 0), *rt = &k->op->results[0].type;
  int rank = xt->rank;
  size_t es = fc_dtype_size(xt->dtype);
  const char *ms = fc_op_attr_str(k->op, FC_ATTR_MODE, "constant");
  PadMode m;
  if (strcmp(ms, "constant") == 0) m = PAD_CONSTANT;
  else if (strcmp(ms, "reflect") == 0) m = PAD_REFLECT;
  else if (strcmp(ms, "edge") == 0) m = PAD_EDGE;
  else if (strcmp(ms, "wrap") == 0) m = PAD_WRAP;
  else return kd_fail(k, FC_ERR_INTERNAL, "unknown pad mode");
  const int64_t *pads;
  if (fc_op_attr_ints(k->op, FC_ATTR_PADS, &pads) != 2 * rank || rt->rank != rank)
    return kd_fail(k, FC_ERR_INTERNAL, "pads do not match the rank");
  for (int d = 0; d < rank; d++)
    if (m != PAD_CONSTANT && xt->dims[d] == 0) return kd_fail(k, FC_ERR_INTERNAL, "cannot pad an empty axis");
  if (rank == 0) {
    fc_kernel_set_outer(k, 1, 1);
    copy_elems(k, es, k->out[0], c64(k, 0), k->in[0], c64(k, 0), 1);
    return FC_OK;
  }
  int64_t xs[KD_MAX_RANK];
  row_major_strides(rank, xt->dims, xs);
  int last = rank - 1;
  int64_t len = rt->dims[last], n = xt->dims[last], begin = pads[last];
  /* The innermost axis: [0, a) padding, [a, b) source elements b - a.. in order, [b, len) padding. */
  int64_t a = begin < 0 ? 0 : begin > len ? len : begin;
  int64_t b = begin + n < a ? a : begin + n > len ? len : begin + n;

  Rows r;
  rows_plan(k, &r, last, rt->dims, len, false);
  rows_open(k, &r);
  LLVMValueRef value = LLVMConstInt(bits_type(k, es), 0, 0);
  if (m == PAD_CONSTANT && k->op->n_operands > 1 && k->in[1]) value = load_bits(k, es, k->in[1], c64(k, 0));
  LLVMValueRef srow = c64(k, 0), inside = NULL;
  for (int d = 0; d < last; d++) {
    LLVMValueRef j = fc_cg_isub(k, r.idx[d], c64(k, pads[d]));
    if (m == PAD_CONSTANT) {
      LLVMValueRef in_d = icmp(k, LLVMIntULT, j, c64(k, xt->dims[d]));
      inside = inside ? LLVMBuildAnd(k->b, inside, in_d, "") : in_d;
    } else {
      j = pad_source(k, m, j, xt->dims[d]);
    }
    srow = add_scaled(k, srow, j, xs[d]);
  }
  LLVMValueRef drow = fc_cg_imulc(k, r.row, len);
  KdIf f;
  if (inside) if_begin(k, &f, inside, true);
  pad_edge_run(k, m, es, srow, drow, 0, a, begin, n, value);
  if (b > a)
    copy_elems(k, es, k->out[0], fc_cg_iadd(k, drow, c64(k, a)), k->in[0], fc_cg_iadd(k, srow, c64(k, a - begin)),
               b - a);
  pad_edge_run(k, m, es, srow, drow, b, len, begin, n, value);
  if (inside) {
    if_else(k, &f);
    pad_edge_run(k, PAD_CONSTANT, es, srow, drow, 0, len, begin, n, value);
    if_end(k, &f);
  }
  rows_close(k, &r);
  return FC_OK;
}

/* ---- reverse_sequence ------------------------------------------------------------------------------- */

/* Element (.., t, .., b, ..) comes from time len[b]-1-t when t < len[b], else from t. Rows run along the
 * innermost dim: when it is neither the batch nor the time axis a row is one contiguous copy. */
FcStatus fc_kernel_reverse_sequence(FcKernel *k) {
  bool empty;
  FcStatus st = kd_begin(k, &empty);
  if (st != FC_OK || empty) return st;
  const FcType *xt = operand_type(k, 0), *lt = operand_type(k, 1);
  int rank = xt->rank, last = rank - 1;
  int64_t ba = fc_op_attr_int(k->op, FC_ATTR_BATCH_AXIS, 1), ta = fc_op_attr_int(k->op, FC_ATTR_TIME_AXIS, 0);
  if (rank < 2 || ba < 0 || ba >= rank || ta < 0 || ta >= rank || ba == ta || !fc_dtype_is_int(lt->dtype))
    return kd_fail(k, FC_ERR_INTERNAL, "batch_axis/time_axis or sequence lengths invalid");
  size_t es = fc_dtype_size(xt->dtype);
  int64_t xs[KD_MAX_RANK], T = xt->dims[ta], len_row = xt->dims[last];
  row_major_strides(rank, xt->dims, xs);
  Rows r;
  rows_plan(k, &r, last, xt->dims, len_row, false);
  rows_open(k, &r);
  LLVMValueRef drow = fc_cg_imulc(k, r.row, len_row);
  bool contiguous = ba != last && ta != last;
  FcLoop l;
  LLVMValueRef j = contiguous ? NULL : fc_cg_loop_begin(k, &l, c64(k, 0), c64(k, len_row), 1, "j");
  LLVMValueRef bi = ba == last ? j : r.idx[ba], t = ta == last ? j : r.idx[ta];
  LLVMValueRef len = load_index(k, lt->dtype, k->in[1], bi);
  /* A length outside [0, T] (a u64 above INT64_MAX is negative here) is flagged and treated as 0. */
  LLVMValueRef bad = LLVMBuildOr(k->b, icmp(k, LLVMIntSLT, len, c64(k, 0)), icmp(k, LLVMIntSGT, len, c64(k, T)), "");
  fc_cg_flag_error(k, bad);
  len = fc_cg_select(k, bad, c64(k, 0), len);
  LLVMValueRef from = fc_cg_select(k, icmp(k, LLVMIntSLT, t, len), fc_cg_isub(k, fc_cg_isub(k, len, c64(k, 1)), t), t);
  LLVMValueRef src = fc_cg_imulc(k, from, xs[ta]);
  for (int d = 0; d < last; d++)
    if (d != ta) src = add_scaled(k, src, r.idx[d], xs[d]);
  if (contiguous) {
    copy_elems(k, es, k->out[0], drow, k->in[0], src, len_row);
  } else {
    if (ta != last) src = fc_cg_iadd(k, src, j);
    store_bits(k, es, k->out[0], fc_cg_iadd(k, drow, j), load_bits(k, es, k->in[0], src));
    fc_cg_loop_end(k, &l);
  }
  rows_close(k, &r);
  return FC_OK;
}

/* ---- gather ------------------------------------------------------------------------------------------ */

/* Result [outer, n, inner] from data [outer, dim, inner]: rows are (outer, index) pairs, each a block of
 * `inner` elements. */
FcStatus fc_kernel_gather(FcKernel *k) {
  bool empty;
  FcStatus st = kd_begin(k, &empty);
  if (st != FC_OK || empty) return st;
  const FcType *xt = operand_type(k, 0), *it = operand_type(k, 1);
  int64_t axis = fc_op_attr_int(k->op, FC_ATTR_AXIS, 0);
  if (axis < 0 || axis >= xt->rank || !fc_dtype_is_int(it->dtype))
    return kd_fail(k, FC_ERR_INTERNAL, "axis or indices dtype invalid");
  int64_t dim = xt->dims[axis];
  if (dim == 0) {
    flag_always(k);
    return FC_OK;
  }
  size_t es = fc_dtype_size(xt->dtype);
  int64_t rdims[2] = {prod(xt->dims, 0, (int)axis), prod(it->dims, 0, it->rank)};
  int64_t inner = prod(xt->dims, (int)axis + 1, xt->rank);
  Rows r;
  rows_plan(k, &r, 2, rdims, inner, false);
  rows_open(k, &r);
  LLVMValueRef v = checked_index(k, it->dtype, load_index(k, it->dtype, k->in[1], r.idx[1]), dim);
  LLVMValueRef src = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, r.idx[0], dim), v), inner);
  copy_elems(k, es, k->out[0], fc_cg_imulc(k, r.row, inner), k->in[0], src, inner);
  rows_close(k, &r);
  return FC_OK;
}

/* Result (and indices) shape I, data shape X of the same rank: result[i] = data[i with i[axis] replaced
 * by indices[i]]. Rows run along the innermost dim of I. */
FcStatus fc_kernel_gather_elements(FcKernel *k) {
  bool empty;
  FcStatus st = kd_begin(k, &empty);
  if (st != FC_OK || empty) return st;
  const FcType *xt = operand_type(k, 0), *it = operand_type(k, 1);
  int rank = xt->rank, last = rank - 1;
  int64_t axis = fc_op_attr_int(k->op, FC_ATTR_AXIS, 0);
  if (axis < 0 || axis >= rank || it->rank != rank || !fc_dtype_is_int(it->dtype))
    return kd_fail(k, FC_ERR_INTERNAL, "axis or indices invalid");
  for (int d = 0; d < rank; d++)
    if (d != axis && it->dims[d] > xt->dims[d]) return kd_fail(k, FC_ERR_INTERNAL, "indices exceed the data");
  int64_t dim = xt->dims[axis];
  if (dim == 0) {
    flag_always(k);
    return FC_OK;
  }
  size_t es = fc_dtype_size(xt->dtype);
  int64_t xs[KD_MAX_RANK], n = it->dims[last];
  row_major_strides(rank, xt->dims, xs);
  int64_t bs[KD_MAX_RANK];
  for (int d = 0; d < last; d++) bs[d] = d == axis ? 0 : xs[d];
  Rows r;
  rows_plan(k, &r, last, it->dims, n, false);
  rows_open(k, &r);
  LLVMValueRef sbase = row_offset(k, &r, last, bs, 0), drow = fc_cg_imulc(k, r.row, n);
  FcLoop l;
  LLVMValueRef j = fc_cg_loop_begin(k, &l, c64(k, 0), c64(k, n), 1, "j");
  LLVMValueRef at = fc_cg_iadd(k, drow, j);
  LLVMValueRef v = checked_index(k, it->dtype, load_index(k, it->dtype, k->in[1], at), dim);
  LLVMValueRef src = add_scaled(k, axis == last ? sbase : fc_cg_iadd(k, sbase, j), v, xs[axis]);
  store_bits(k, es, k->out[0], at, load_bits(k, es, k->in[0], src));
  fc_cg_loop_end(k, &l);
  rows_close(k, &r);
  return FC_OK;
}

/* indices[B..., T..., m] address slices of data[B..., D(m)..., S...] (gather_nd and scatter_nd). */
typedef struct NdPlan {
  int64_t batches, tuples, m, slice; /* element counts */
  int64_t batch_stride;              /* data elements per batch */
  int64_t tdims[KD_MAX_RANK], tstrides[KD_MAX_RANK];
} NdPlan;

static bool nd_plan(const FcType *xt, const FcType *it, int64_t b, NdPlan *p) {
  int r = xt->rank, q = it->rank;
  if (q < 1) return false;
  int64_t m = it->dims[q - 1];
  if (b < 0 || b >= q || b > r || m < 0 || m > r - b) return false;
  int64_t xs[KD_MAX_RANK];
  row_major_strides(r, xt->dims, xs);
  p->batches = prod(xt->dims, 0, (int)b);
  for (int d = 0; d < b; d++)
    if (it->dims[d] != xt->dims[d]) return false;
  p->tuples = prod(it->dims, (int)b, q - 1);
  p->m = m;
  p->slice = prod(xt->dims, (int)(b + m), r);
  p->batch_stride = b > 0 ? xs[b - 1] : 0;
  for (int i = 0; i < m; i++) {
    p->tdims[i] = xt->dims[b + i];
    p->tstrides[i] = xs[b + i];
  }
  return true;
}

/* The data offset of the slice that index tuple `row` addresses (plus base); *bad (i1) is set where one
 * of its indices is out of range, in which case the offset is not usable. */
static LLVMValueRef nd_offset(FcKernel *k, const NdPlan *p, FcDtype dt, LLVMValueRef row, LLVMValueRef base,
                              LLVMValueRef *bad) {
  LLVMValueRef off = base, any = NULL;
  for (int64_t i = 0; i < p->m; i++) {
    LLVMValueRef b1, v = load_index(k, dt, k->in[1], fc_cg_iadd(k, fc_cg_imulc(k, row, p->m), c64(k, i)));
    v = normalize_index(k, dt, v, p->tdims[i], &b1);
    any = any ? LLVMBuildOr(k->b, any, b1, "") : b1;
    off = add_scaled(k, off, v, p->tstrides[i]);
  }
  *bad = any ? any : LLVMConstInt(LLVMInt1TypeInContext(k->ctx), 0, 0);
  return off;
}

FcStatus fc_kernel_gather_nd(FcKernel *k) {
  bool empty;
  FcStatus st = kd_begin(k, &empty);
  if (st != FC_OK || empty) return st;
  const FcType *xt = operand_type(k, 0), *it = operand_type(k, 1);
  NdPlan p;
  if (!fc_dtype_is_int(it->dtype) || !nd_plan(xt, it, fc_op_attr_int(k->op, FC_ATTR_BATCH_DIMS, 0), &p))
    return kd_fail(k, FC_ERR_INTERNAL, "batch_dims or indices invalid");
  for (int64_t i = 0; i < p.m; i++)
    if (p.tdims[i] == 0) {
      flag_always(k);
      return FC_OK;
    }
  size_t es = fc_dtype_size(xt->dtype);
  int64_t rdims[2] = {p.batches, p.tuples};
  Rows r;
  rows_plan(k, &r, 2, rdims, p.slice, false);
  rows_open(k, &r);
  LLVMValueRef bad, off = nd_offset(k, &p, it->dtype, r.row, fc_cg_imulc(k, r.idx[0], p.batch_stride), &bad);
  fc_cg_flag_error(k, bad);
  off = fc_cg_select(k, bad, c64(k, 0), off);
  copy_elems(k, es, k->out[0], fc_cg_imulc(k, r.row, p.slice), k->in[0], off, p.slice);
  rows_close(k, &r);
  return FC_OK;
}

/* ---- scatter ----------------------------------------------------------------------------------------- */

typedef enum Reduction { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } Reduction;

static bool get_reduction(const FcOp *op, Reduction *r) {
  static const char *const names[] = {"none", "add", "mul", "max", "min"};
  const char *s = fc_op_attr_str(op, FC_ATTR_REDUCTION, "none");
  for (int i = 0; i < 5; i++)
    if (strcmp(s, names[i]) == 0) {
      *r = (Reduction)i;
      return true;
    }
  return false;
}

/* out[oi] = reduce(out[oi], upd[ui]) with the reference's rules: floats compute in their compute type
 * (f16/bf16 in float, rounded once on the store); integers wrap; bool add is or and mul is and; max/min
 * keep the chosen element's bits and propagate NaN (a NaN already there stays; a NaN update wins). */
static void emit_reduce(FcKernel *k, FcDtype dt, Reduction red, LLVMValueRef oi, LLVMValueRef upd, LLVMValueRef ui) {
  size_t es = fc_dtype_size(dt);
  LLVMValueRef out = k->out[0];
  if (red == RED_NONE) {
    store_bits(k, es, out, oi, load_bits(k, es, upd, ui));
    return;
  }
  LLVMValueRef a = fc_cg_load(k, dt, out, oi), b = fc_cg_load(k, dt, upd, ui);
  bool fl = fc_dtype_is_float(dt);
  if (red == RED_ADD || red == RED_MUL) {
    LLVMValueRef v;
    if (dt == FC_DT_BOOL) v = red == RED_ADD ? LLVMBuildOr(k->b, a, b, "") : LLVMBuildAnd(k->b, a, b, "");
    else if (fl) v = red == RED_ADD ? LLVMBuildFAdd(k->b, a, b, "") : LLVMBuildFMul(k->b, a, b, "");
    else v = red == RED_ADD ? LLVMBuildAdd(k->b, a, b, "") : LLVMBuildMul(k->b, a, b, "");
    fc_cg_store(k, dt, out, oi, v);
    return;
  }
  LLVMValueRef take;
  if (fl) {
    LLVMValueRef a_nan = LLVMBuildFCmp(k->b, LLVMRealUNO, a, a, ""), b_nan = LLVMBuildFCmp(k->b, LLVMRealUNO, b, b, "");
    LLVMValueRef better = LLVMBuildFCmp(k->b, red == RED_MAX ? LLVMRealOGT : LLVMRealOLT, b, a, "");
    take = LLVMBuildAnd(k->b, LLVMBuildNot(k->b, a_nan, ""), LLVMBuildOr(k->b, b_nan, better, ""), "");
  } else {
    bool sgn = fc_dtype_class(dt) == FC_DTC_SINT;
    LLVMIntPredicate pr = red == RED_MAX ? (sgn ? LLVMIntSGT : LLVMIntUGT) : (sgn ? LLVMIntSLT : LLVMIntULT);
    take = icmp(k, pr, b, a);
  }
  store_bits(k, es, out, oi, fc_cg_select(k, take, load_bits(k, es, upd, ui), load_bits(k, es, out, oi)));
}

/* The result starts as a copy of data (outer = 1 for the whole kernel, see the top of the file). */
static void scatter_copy_data(FcKernel *k, const FcType *xt) {
  int64_t bytes;
  FC_ASSERT(fc_type_nbytes(xt, &bytes));
  if (bytes > 0) LLVMBuildMemCpy(k->b, k->out[0], (unsigned)fc_dtype_size(xt->dtype), k->in[0], (unsigned)fc_dtype_size(xt->dtype), c64(k, bytes));
}

FcStatus fc_kernel_scatter_elements(FcKernel *k) {
  bool empty;
  FcStatus st = kd_begin(k, &empty);
  if (st != FC_OK || empty) return st;
  const FcType *xt = operand_type(k, 0), *it = operand_type(k, 1), *ut = operand_type(k, 2);
  int rank = xt->rank, last = rank - 1;
  int64_t axis = fc_op_attr_int(k->op, FC_ATTR_AXIS, 0);
  Reduction red;
  if (!get_reduction(k->op, &red)) return kd_fail(k, FC_ERR_INTERNAL, "unknown reduction");
  if (axis < 0 || axis >= rank || it->rank != rank || !fc_shape_equal(it, ut) || ut->dtype != xt->dtype ||
      !fc_dtype_is_int(it->dtype))
    return kd_fail(k, FC_ERR_INTERNAL, "indices/updates do not match the data");
  for (int d = 0; d < rank; d++)
    if (d != axis && it->dims[d] > xt->dims[d]) return kd_fail(k, FC_ERR_INTERNAL, "indices exceed the data");
  int64_t nupd;
  FC_ASSERT(fc_type_numel(it, &nupd));
  Rows r;
  rows_plan(k, &r, nupd > 0 ? last : 0, it->dims, nupd > 0 ? it->dims[last] : 0, true);
  rows_open_outer(k, &r);
  scatter_copy_data(k, xt);
  if (nupd > 0) {
    int64_t xs[KD_MAX_RANK], bs[KD_MAX_RANK], n = it->dims[last], dim = xt->dims[axis];
    row_major_strides(rank, xt->dims, xs);
    for (int d = 0; d < last; d++) bs[d] = d == axis ? 0 : xs[d];
    rows_open_inner(k, &r);
    LLVMValueRef dbase = row_offset(k, &r, last, bs, 0), urow = fc_cg_imulc(k, r.row, n);
    FcLoop l;
    LLVMValueRef j = fc_cg_loop_begin(k, &l, c64(k, 0), c64(k, n), 1, "j");
    LLVMValueRef at = fc_cg_iadd(k, urow, j), bad;
    LLVMValueRef v = normalize_index(k, it->dtype, load_index(k, it->dtype, k->in[1], at), dim, &bad);
    fc_cg_flag_error(k, bad);
    KdIf f;
    if_begin(k, &f, LLVMBuildNot(k->b, bad, ""), false);
    LLVMValueRef dst = add_scaled(k, axis == last ? dbase : fc_cg_iadd(k, dbase, j), v, xs[axis]);
    emit_reduce(k, xt->dtype, red, dst, k->in[2], at);
    if_end(k, &f);
    fc_cg_loop_end(k, &l);
  }
  rows_close(k, &r);
  return FC_OK;
}

FcStatus fc_kernel_scatter_nd(FcKernel *k) {
  bool empty;
  FcStatus st = kd_begin(k, &empty);
  if (st != FC_OK || empty) return st;
  const FcType *xt = operand_type(k, 0), *it = operand_type(k, 1), *ut = operand_type(k, 2);
  Reduction red;
  NdPlan p;
  if (!get_reduction(k->op, &red)) return kd_fail(k, FC_ERR_INTERNAL, "unknown reduction");
  if (!fc_dtype_is_int(it->dtype) || !nd_plan(xt, it, 0, &p) || ut->dtype != xt->dtype)
    return kd_fail(k, FC_ERR_INTERNAL, "indices/updates do not match the data");
  bool ok = ut->rank == it->rank - 1 + xt->rank - (int)p.m;
  for (int d = 0; ok && d < ut->rank; d++)
    ok = ut->dims[d] == (d < it->rank - 1 ? it->dims[d] : xt->dims[d - (it->rank - 1) + p.m]);
  if (!ok) return kd_fail(k, FC_ERR_INTERNAL, "updates shape is not indices.shape[:-1] + data.shape[m:]");
  bool any = p.tuples > 0 && p.slice > 0;
  Rows r;
  rows_plan(k, &r, any ? 1 : 0, &p.tuples, p.slice, true);
  rows_open_outer(k, &r);
  scatter_copy_data(k, xt);
  if (any) {
    size_t es = fc_dtype_size(xt->dtype);
    rows_open_inner(k, &r);
    LLVMValueRef bad, off = nd_offset(k, &p, it->dtype, r.row, c64(k, 0), &bad);
    fc_cg_flag_error(k, bad);
    KdIf f;
    if_begin(k, &f, LLVMBuildNot(k->b, bad, ""), false);
    LLVMValueRef urow = fc_cg_imulc(k, r.row, p.slice);
    if (red == RED_NONE) {
      copy_elems(k, es, k->out[0], off, k->in[2], urow, p.slice);
    } else {
      FcLoop l;
      LLVMValueRef e = fc_cg_loop_begin(k, &l, c64(k, 0), c64(k, p.slice), 1, "e");
      emit_reduce(k, xt->dtype, red, fc_cg_iadd(k, off, e), k->in[2], fc_cg_iadd(k, urow, e));
      fc_cg_loop_end(k, &l);
    }
    if_end(k, &f);
  }
  rows_close(k, &r);
  return FC_OK;
}

/* ---- one_hot ----------------------------------------------------------------------------------------- */

/* Result [outer, depth, inner] from indices [outer, inner]: element (a, d, c) is `on` when indices[a, c]
 * (normalised, negatives from the end) equals d, else `off`. An index outside [-depth, depth) matches no
 * d and so gives a row of `off`, as ONNX says (not an error). Written result-order, unit stride in c. */
FcStatus fc_kernel_one_hot(FcKernel *k) {
  bool empty;
  FcStatus st = kd_begin(k, &empty);
  if (st != FC_OK || empty) return st;
  const FcType *it = operand_type(k, 0), *vt = operand_type(k, 1);
  int64_t axis = fc_op_attr_int(k->op, FC_ATTR_AXIS, -1), depth = fc_op_attr_int(k->op, FC_ATTR_DEPTH, -1);
  if (axis < 0 || axis > it->rank || depth < 1 || it->dtype == FC_DT_BOOL)
    return kd_fail(k, FC_ERR_INTERNAL, "axis, depth or indices invalid");
  size_t es = fc_dtype_size(vt->dtype);
  int64_t rdims[2] = {prod(it->dims, 0, (int)axis), depth}, inner = prod(it->dims, (int)axis, it->rank);
  Rows r;
  rows_plan(k, &r, 2, rdims, inner, false);
  rows_open(k, &r);
  LLVMValueRef off = load_bits(k, es, k->in[1], c64(k, 0)), on = load_bits(k, es, k->in[1], c64(k, 1));
  LLVMValueRef irow = fc_cg_imulc(k, r.idx[0], inner), drow = fc_cg_imulc(k, r.row, inner);
  FcLoop l;
  LLVMValueRef c = fc_cg_loop_begin(k, &l, c64(k, 0), c64(k, inner), 1, "c");
  LLVMValueRef bad,
      v = normalize_index(k, it->dtype, load_index(k, it->dtype, k->in[0], fc_cg_iadd(k, irow, c)), depth, &bad);
  store_bits(k, es, k->out[0], fc_cg_iadd(k, drow, c), fc_cg_select(k, icmp(k, LLVMIntEQ, v, r.idx[1]), on, off));
  fc_cg_loop_end(k, &l);
  rows_close(k, &r);
  return FC_OK;
}
