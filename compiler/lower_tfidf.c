/* lower_tfidf.c — legaliser of TfIdfVectorizer, decomposed into core ops (the output shape is static).
 *
 * The pool (pool_int64s) holds n-grams grouped in levels: level i, from ngram_counts[i] to the next start
 * (or the pool's end), holds (i+1)-grams. Every pool n-gram has an id in pool order; ngram_indexes maps
 * id → output column, and the output has max(ngram_indexes)+1 columns. Only levels with
 * min_gram_length <= n <= max_gram_length are counted; the other ids keep zero columns.
 *
 * As ONNX's reference (a port of onnxruntime's trie walk) counts: an n-gram with n >= 2 is counted at
 * every skip distance d = 1..max_skip_count+1 (elements p, p+d, .., p+(n-1)d of a row), a unigram only
 * once (skips do not change it). Matching a pool n-gram through the trie is the same as matching it on
 * its own, so per level and skip distance the counts of all Gn n-grams of the level come from one
 * vectorised compare:
 *   x3 = reshape(cast(x, i64), [B, 1, C]);  for k < n: e_k = equal(x3[:, :, k*d : k*d+P], V_k[1, Gn, 1])
 *   count = reduce_sum(cast(and(e_0, .., e_{n-1}), i64), axis 2)                  → [B, Gn]
 * with P = C - (n-1)d positions, summed over d. The counts of all levels are concatenated with one zero
 * column appended, and each output column gathers its n-gram's count (or the zero column). When several
 * ids share a column (their counts add, as in the reference), the counts are gathered in column order
 * instead, and each column is the difference of their running sum (cumsum) at its range's ends.
 * Then TF = count, IDF = count > 0 ? weight : 0 (1 without weights), TFIDF = count * weight, with weights
 * indexed by output column as the reference does. The input is widened to i64 so a pool value outside
 * an i32 input's range never matches.
 *
 * pool_strings needs string tensors, which flowc does not have: unsupported. A pool holding one n-gram
 * twice is refused as ambiguous (the trie keeps one id for it; which one differs between runtimes).
 */
#include "onnx.h"

#include <stdlib.h>
#include <string.h>

/* The most slice/compare steps one node may expand to; beyond it the node is reported unsupported
 * rather than flooding the graph (e.g. a huge max_skip_count over long rows). */
#define TFIDF_MAX_STEPS ((int64_t)1 << 16)

typedef struct Gram {
  const int64_t *v; /* n values in the pool */
  int n;
  int64_t id;       /* position in pool order */
} Gram;

static int cmp_gram(const void *pa, const void *pb) {
  const Gram *a = pa, *b = pb;
  for (int k = 0; k < a->n; k++)
    if (a->v[k] != b->v[k]) return a->v[k] < b->v[k] ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

static bool required_int(FcLower *l, const char *name, int64_t *out) {
  if (!fc_lx_has_attr(l, name)) {
    fc_lx_error(l, "attribute '%s' is required", name);
    return false;
  }
  *out = fc_lx_int(l, name, 0);
  return true;
}

/* Counts of the Gn n-grams `grams` (all of length n) in each row of x3 [B, 1, C], summed over skip
 * distances 1..dmax: [B, Gn] i64. */
static FcValue *count_level(FcLower *l, FcValue *x3, const Gram *grams, int64_t gn, int n, int64_t dmax) {
  FcBuilder *b = l->b;
  FcArena *arena = &b->g->module->arena;
  int64_t B = x3->type.dims[0], C = x3->type.dims[2];
  int64_t cdims[3] = {1, gn, 1};
  FcValue **cols = FC_NEW_ARRAY(arena, FcValue *, (size_t)n);
  for (int k = 0; k < n; k++) {
    int64_t *v = FC_NEW_ARRAY(arena, int64_t, (size_t)gn);
    for (int64_t g = 0; g < gn; g++) v[g] = grams[g].v[k];
    cols[k] = fc_b_const(b, FC_DT_I64, 3, cdims, v);
  }
  FcValue *total = NULL;
  for (int64_t d = 1; d <= dmax; d++) {
    int64_t p = C - (int64_t)(n - 1) * d; /* > 0: dmax keeps (n-1)*d < C */
    FcValue *match = NULL;
    for (int k = 0; k < n; k++) {
      int64_t starts[3] = {0, 0, k * d}, ends[3] = {B, 1, k * d + p}, steps[3] = {1, 1, 1};
      FcValue *win = p == C ? x3 : fc_b_slice(b, x3, starts, ends, steps); /* unigrams see the whole row */
      FcValue *e = fc_b_binary(b, FC_OP_EQUAL, win, cols[k]);
      match = match ? fc_b_binary(b, FC_OP_AND, match, e) : e;
    }
    int64_t axis = 2;
    FcValue *cnt = fc_b_reduce(b, FC_OP_REDUCE_SUM, fc_b_cast(b, match, FC_DT_I64), 1, &axis, false);
    total = total ? fc_b_binary(b, FC_OP_ADD, total, cnt) : cnt;
  }
  return total;
}

/* The counts [B, n_cols] of the levels (concatenated) placed at their output columns: [B, n_out] i64.
 * col_of[id] is id's column in the counts (-1: never counted), indexes[id] its output column. */
static FcValue *place_counts(FcLower *l, FcValue **level_counts, int n_counted, int64_t n_cols, const int64_t *col_of,
                             const int64_t *indexes, int64_t n_grams, int64_t n_out) {
  FcBuilder *b = l->b;
  FcArena *arena = &b->g->module->arena;
  int64_t B = level_counts[0]->type.dims[0], zdims[2] = {B, 1}, idims[1] = {n_out};
  FcAttr axis1 = FC_A_INT(AXIS, 1);
  /* start[j]..start[j+1]: the counted ids of output column j, once sorted by column (a counting sort). */
  int64_t *start = FC_NEW_ARRAY(arena, int64_t, (size_t)n_out + 1);
  bool shared = false;
  for (int64_t id = 0; id < n_grams; id++)
    if (col_of[id] >= 0) shared |= ++start[indexes[id] + 1] > 1;
  for (int64_t j = 0; j < n_out; j++) start[j + 1] += start[j];
  /* The counts of all levels and a zero column at index n_cols (level_counts has room for it). */
  level_counts[n_counted++] = fc_b_broadcast(b, fc_b_scalar(b, FC_DT_I64, 0), 2, zdims);
  FcValue *all = fc_b_concat(b, level_counts, n_counted, 1);
  if (!shared) {
    /* One id at most per column: gather its count, or the zero column. */
    int64_t *idx = FC_NEW_ARRAY(arena, int64_t, (size_t)n_out);
    for (int64_t j = 0; j < n_out; j++) idx[j] = n_cols;
    for (int64_t id = 0; id < n_grams; id++)
      if (col_of[id] >= 0) idx[indexes[id]] = col_of[id];
    FcValue *ops[2] = {all, fc_b_const(b, FC_DT_I64, 1, idims, idx)};
    return fc_b_op1(b, FC_OP_GATHER, ops, 2, &axis1, 1);
  }
  /* Ids sharing a column add up: gather the counts in column order behind a leading zero (the zero
   * column), take their running sum, and each column is the difference of the running
   * sum at the ends of its range. */
  int64_t *fill = FC_NEW_ARRAY(arena, int64_t, (size_t)n_out);
  int64_t *perm = FC_NEW_ARRAY(arena, int64_t, (size_t)n_cols + 1);
  perm[0] = n_cols;
  for (int64_t id = 0; id < n_grams; id++)
    if (col_of[id] >= 0) {
      int64_t j = indexes[id];
      perm[1 + start[j] + fill[j]++] = col_of[id];
    }
  FC_ASSERT(start[n_out] == n_cols);
  int64_t pdims[1] = {n_cols + 1};
  FcValue *ops[2] = {all, fc_b_const(b, FC_DT_I64, 1, pdims, perm)};
  FcAttr cs[3] = {FC_A_INT(AXIS, 1), FC_A_INT(EXCLUSIVE, 0), FC_A_INT(REVERSE, 0)};
  FcValue *run = fc_b_op1(b, FC_OP_GATHER, ops, 2, &axis1, 1);
  run = fc_b_op1(b, FC_OP_CUMSUM, &run, 1, cs, 3);
  FcValue *lo_ops[2] = {run, fc_b_const(b, FC_DT_I64, 1, idims, start)};
  FcValue *hi_ops[2] = {run, fc_b_const(b, FC_DT_I64, 1, idims, start + 1)};
  return fc_b_binary(b, FC_OP_SUB, fc_b_op1(b, FC_OP_GATHER, hi_ops, 2, &axis1, 1),
                     fc_b_op1(b, FC_OP_GATHER, lo_ops, 2, &axis1, 1));
}

FcStatus fc_lower_tfidf(FcLower *l) {
  if (fc_lx_has_attr(l, "pool_strings")) return fc_lx_unsupported(l, "pool_strings needs string tensors");
  if (l->n_in < 1 || !l->in[0]) return fc_lx_error(l, "input 0 is required");
  FcValue *x = l->in[0];
  FcBuilder *b = l->b;
  FcArena *arena = &b->g->module->arena;
  char tbuf[128];
  if (x->type.rank != 1 && x->type.rank != 2)
    return fc_lx_error(l, "input must be 1-D or 2-D, not %s", fc_type_str(&x->type, tbuf, sizeof tbuf));
  if (x->type.dtype != FC_DT_I32 && x->type.dtype != FC_DT_I64)
    return fc_lx_error(l, "input must be i32 or i64 with pool_int64s, not %s",
                       fc_type_str(&x->type, tbuf, sizeof tbuf));

  int64_t min_n, max_n, max_skip;
  if (!required_int(l, "min_gram_length", &min_n) || !required_int(l, "max_gram_length", &max_n) ||
      !required_int(l, "max_skip_count", &max_skip))
    return fc_lx_bail(l);
  if (min_n < 1 || max_n < min_n)
    return fc_lx_error(l, "need 1 <= min_gram_length <= max_gram_length, have %lld and %lld", (long long)min_n,
                       (long long)max_n);
  if (max_skip < 0) return fc_lx_error(l, "max_skip_count must be >= 0, is %lld", (long long)max_skip);
  const char *mode = fc_lx_str(l, "mode", NULL);
  if (!mode) return fc_lx_error(l, "attribute 'mode' is required");
  enum { TF, IDF, TFIDF } m;
  if (strcmp(mode, "TF") == 0) m = TF;
  else if (strcmp(mode, "IDF") == 0) m = IDF;
  else if (strcmp(mode, "TFIDF") == 0) m = TFIDF;
  else return fc_lx_error(l, "mode must be TF, IDF or TFIDF, not '%s'", mode);

  const int64_t *pool, *counts, *indexes;
  int n_pool = fc_lx_ints(l, "pool_int64s", &pool);
  if (n_pool < 0) return fc_lx_error(l, "attribute 'pool_int64s' (or pool_strings) is required");
  int n_levels = fc_lx_ints(l, "ngram_counts", &counts);
  if (n_levels < 0) return fc_lx_error(l, "attribute 'ngram_counts' is required");
  int n_idx = fc_lx_ints(l, "ngram_indexes", &indexes);
  if (n_idx < 1) return fc_lx_error(l, "attribute 'ngram_indexes' is required and must not be empty");

  /* Split the pool into n-grams, checking the level boundaries. */
  Gram *grams = FC_NEW_ARRAY(arena, Gram, (size_t)n_pool + 1);
  int64_t n_grams = 0;
  for (int i = 0; i < n_levels; i++) {
    int64_t start = counts[i], end = i + 1 < n_levels ? counts[i + 1] : n_pool;
    int n = i + 1;
    if (start < 0 || end < start || end > n_pool)
      return fc_lx_error(l, "ngram_counts[%d] = %lld gives level [%lld, %lld) outside the pool of %d", i,
                         (long long)counts[i], (long long)start, (long long)end, n_pool);
    if ((end - start) % n != 0)
      return fc_lx_error(l, "level %d holds %lld values, not a multiple of its n-gram length %d", i,
                         (long long)(end - start), n);
    for (int64_t s = start; s < end; s += n) {
      grams[n_grams] = (Gram){pool + s, n, n_grams};
      n_grams++;
    }
  }
  if (n_idx != n_grams)
    return fc_lx_error(l, "ngram_indexes holds %d entries for %lld n-grams in the pool", n_idx, (long long)n_grams);
  int64_t n_out = 0;
  for (int i = 0; i < n_idx; i++) {
    if (indexes[i] < 0 || indexes[i] >= FC_DEFAULT_MAX_TENSOR_BYTES)
      return fc_lx_error(l, "ngram_indexes[%d] = %lld is out of range", i, (long long)indexes[i]);
    if (indexes[i] + 1 > n_out) n_out = indexes[i] + 1;
  }
  const float *weights = NULL;
  int n_w = fc_lx_floats(l, "weights", &weights);
  if (n_w <= 0) weights = NULL; /* absent or empty: unweighted, as the reference */
  else if (m != TF && n_w < n_out)
    return fc_lx_error(l, "weights holds %d values for %lld output columns", n_w, (long long)n_out);

  bool one_d = x->type.rank == 1;
  int64_t B = one_d ? 1 : x->type.dims[0], C = x->type.dims[x->type.rank - 1];
  int64_t out_dims[2] = {B, n_out}, out_bytes, idx_bytes;
  /* The output, and the i64 index constants of one row's length. */
  if (!fc_checked_mul(B, n_out, &out_bytes) || !fc_checked_mul(out_bytes, 4, &out_bytes) ||
      out_bytes > FC_DEFAULT_MAX_TENSOR_BYTES || !fc_checked_mul(n_out + 1, 8, &idx_bytes) ||
      idx_bytes > FC_DEFAULT_MAX_TENSOR_BYTES)
    return fc_lx_error(l, "output of %lld x %lld values is too large", (long long)B, (long long)n_out);

  /* Duplicates: equal n-grams are adjacent once a copy of each level is sorted. */
  Gram *sorted = FC_NEW_ARRAY(arena, Gram, (size_t)n_grams + 1);
  memcpy(sorted, grams, (size_t)n_grams * sizeof *grams);
  for (int64_t g = 0; g < n_grams;) {
    int64_t e = g;
    while (e < n_grams && sorted[e].n == sorted[g].n) e++;
    qsort(sorted + g, (size_t)(e - g), sizeof *sorted, cmp_gram);
    for (int64_t k = g + 1; k < e; k++)
      if (memcmp(sorted[k].v, sorted[k - 1].v, (size_t)sorted[k].n * sizeof(int64_t)) == 0)
        return fc_lx_error(l, "the pool holds the %d-gram at ids %lld and %lld twice", sorted[k].n,
                           (long long)sorted[k - 1].id, (long long)sorted[k].id);
    g = e;
  }

  /* Per counted level: its skip distances, and the size/step budget. */
  int64_t steps_total = 0;
  int64_t *col_of = FC_NEW_ARRAY(arena, int64_t, (size_t)n_grams + 1); /* id → column in the counts, -1: none */
  for (int64_t g = 0; g < n_grams; g++) col_of[g] = -1;
  FcValue **level_counts = FC_NEW_ARRAY(arena, FcValue *, (size_t)n_levels + 1);
  int n_counted = 0;
  int64_t n_cols = 0;
  FcValue *x3 = NULL;
  for (int64_t g = 0; g < n_grams;) {
    int n = grams[g].n;
    int64_t e = g;
    while (e < n_grams && grams[e].n == n) e++;
    int64_t gn = e - g, dmax;
    if (n < min_n || n > max_n || C < n) dmax = 0;
    else if (n == 1) dmax = 1;
    else dmax = (C - 1) / (n - 1) < max_skip + 1 ? (C - 1) / (n - 1) : max_skip + 1;
    if (dmax > 0) {
      int64_t cmp_bytes, steps;
      if (!fc_checked_mul(B, gn, &cmp_bytes) || !fc_checked_mul(cmp_bytes, C, &cmp_bytes) ||
          cmp_bytes > FC_DEFAULT_MAX_TENSOR_BYTES)
        return fc_lx_error(l, "comparing %lld %d-grams with %lld x %lld inputs is too large", (long long)gn, n,
                           (long long)B, (long long)C);
      if (!fc_checked_mul(dmax, n, &steps) || !fc_checked_add(steps_total, steps, &steps_total) ||
          steps_total > TFIDF_MAX_STEPS)
        return fc_lx_unsupported(l, "counting would take more than %lld slice/compare steps",
                                 (long long)TFIDF_MAX_STEPS);
      if (!x3) {
        x3 = x->type.dtype == FC_DT_I64 ? x : fc_b_cast(b, x, FC_DT_I64);
        int64_t d3[3] = {B, 1, C};
        x3 = fc_b_reshape(b, x3, 3, d3);
        if (!x3) return fc_lx_bail(l);
      }
      level_counts[n_counted++] = count_level(l, x3, grams + g, gn, n, dmax);
      for (int64_t k = g; k < e; k++) col_of[grams[k].id] = n_cols + (k - g);
      n_cols += gn;
    }
    g = e;
  }
  if (b->status != FC_OK) return fc_lx_bail(l);

  FcValue *y;
  if (n_cols == 0) {
    /* Nothing can be counted: every column is zero in every mode. */
    y = fc_b_broadcast(b, fc_b_scalar(b, FC_DT_F32, 0), 2, out_dims);
  } else {
    FcValue *cnt = place_counts(l, level_counts, n_counted, n_cols, col_of, indexes, n_grams, n_out);
    if (!cnt) return fc_lx_bail(l);
    FcValue *w = NULL;
    if (weights && m != TF) {
      int64_t wdims[1] = {n_out};
      w = fc_b_const(b, FC_DT_F32, 1, wdims, weights);
    }
    if (m == TF) {
      y = fc_b_cast(b, cnt, FC_DT_F32);
    } else if (m == IDF) {
      FcValue *hit = fc_b_binary(b, FC_OP_GREATER, cnt, fc_b_scalar(b, FC_DT_I64, 0));
      y = w ? fc_b_select(b, hit, w, fc_b_scalar(b, FC_DT_F32, 0)) : fc_b_cast(b, hit, FC_DT_F32);
    } else {
      y = fc_b_cast(b, cnt, FC_DT_F32);
      if (w) y = fc_b_binary(b, FC_OP_MUL, y, w);
    }
  }
  if (one_d) y = fc_b_reshape(b, y, 1, &n_out);
  l->out[0] = y;
  return fc_lx_finish(l);
}
