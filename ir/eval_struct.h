/* eval_struct.h — helpers shared by the reference evaluators of the structural ops (eval_struct.c,
 * eval_data.c, eval_index.c, eval_nn.c, eval_sample.c).
 *
 * Evaluators may assume the verifier passed, yet they re-check every attribute they index with and
 * every index that comes from tensor data, so a malformed module or bad data gives a message, never an
 * out-of-bounds read. Messages start with the op's mnemonic ("gather: ..."); the caller adds the node.
 *
 * Arithmetic runs in two domains: float dtypes in double (one correctly rounded store at the end) and
 * integer dtypes in uint64_t, whose wraparound equals the dtype's two's-complement wraparound after the
 * final truncation. Temporaries go to a scratch arena that the evaluator frees before returning, so a
 * folded conv leaves only its result in the module arena.
 */
#ifndef FLOWC_EVAL_STRUCT_H
#define FLOWC_EVAL_STRUCT_H

#include "ir.h"

#define FC_EV_TRY(expr)              \
  do {                               \
    FcStatus st_ = (expr);           \
    if (st_ != FC_OK) return st_;    \
  } while (0)

/* Ranks above this are refused (FC_ERR_UNSUPPORTED) so per-dim scratch can live on the stack. */
#define FC_EV_MAX_RANK 64
/* Upper bound on the elementary steps (multiply-adds; samples count as their taps) of one evaluation,
 * a few seconds: folding is a compile-time convenience, and a constant 4k x 4k x 4k matmul or a roi
 * with a huge sampling grid would stall the compiler. Beyond it an evaluator answers
 * FC_ERR_UNSUPPORTED, which leaves the op alone. */
#define FC_EV_MAX_WORK ((int64_t)1 << 32)

/* Records "<mnemonic>: <msg>" with status `st` and returns it. */
FcStatus fc_ev_fail(const FcOp *op, FcDiag *diag, FcStatus st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Operands [0, n_required) must be present with data; present optional ones must have data too.
 * Operand and result ranks must be <= FC_EV_MAX_RANK. */
FcStatus fc_ev_check(const FcOp *op, const FcTensor *const *in, int n_required, FcDiag *diag);
/* Makes every result tensor (zeroed) from op->results[i].type. */
void fc_ev_make_results(const FcOp *op, FcTensor **out, FcArena *arena);
/* An ints attribute of exactly `count` entries into out[]; absent or empty gives `dflt` everywhere. */
FcStatus fc_ev_ints(const FcOp *op, FcAttrName name, int count, int64_t dflt, int64_t *out, FcDiag *diag);
/* Checks that the product of `n` factors stays within FC_EV_MAX_WORK (FC_ERR_UNSUPPORTED otherwise). */
FcStatus fc_ev_work(const FcOp *op, FcDiag *diag, int n, const int64_t *factors);
/* Normalises a possibly negative index from tensor data against `dim`; false if outside [-dim, dim). */
bool fc_ev_index(int64_t idx, int64_t dim, int64_t *out);
/* "<what> index I out of range [-D, D)" as FC_ERR_INPUT. */
FcStatus fc_ev_bad_index(const FcOp *op, FcDiag *diag, const char *what, int64_t idx, int64_t dim);

int64_t fc_ev_numel(const FcType *t);
/* Row-major element strides of `t` into strides[0..rank). */
void fc_ev_strides(const FcType *t, int64_t *strides);

static inline unsigned char *fc_ev_at(const FcTensor *t, int64_t i) {
  return (unsigned char *)t->data + (size_t)i * fc_dtype_size(t->type.dtype);
}

/* The arithmetic domain of an arithmetic op's dtype. */
typedef enum FcEvDomain { FC_EVD_F64, FC_EVD_U64, FC_EVD_NONE } FcEvDomain;
FcEvDomain fc_ev_domain(FcDtype dt, bool ints_ok);
/* The whole tensor as double / as uint64_t (sign-extended two's complement), in `scratch`. */
double *fc_ev_load_f64(FcArena *scratch, const FcTensor *t);
uint64_t *fc_ev_load_u64(FcArena *scratch, const FcTensor *t);
/* Stores with one rounding (f16/bf16 go through round-to-odd f32, so no double rounding). */
void fc_ev_store_f64(FcTensor *t, int64_t i, double v);
/* Stores the low bits (wraparound) for integers; bool gets v != 0; floats get the signed value. */
void fc_ev_store_u64(FcTensor *t, int64_t i, uint64_t v);

/* Total order over elements of one dtype: NaN is above every number (and equal to NaN). */
int fc_ev_cmp(FcDtype dt, const void *a, const void *b);
bool fc_ev_is_nan(FcDtype dt, const void *p);

/* Copies the strided view (dims, src element strides, may be negative or 0) of `src` starting at
 * element offset `base` into the contiguous row-major `dst`. */
void fc_ev_copy_view(void *dst, const void *src, size_t esize, int64_t base, int rank, const int64_t *dims,
                     const int64_t *src_strides);

/* Advances a row-major multi-index; false once it wraps around past the last element. */
static inline bool fc_ev_next(int64_t *idx, const int64_t *dims, int rank) {
  for (int d = rank - 1; d >= 0; d--) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

/* ---- eval_quant.c: the quantised forms of conv and matmul ----------------------------------------- */

/* The integers of quantised tensor t minus their zero points, as i32, in `a`. */
FcTensor *fc_ev_quant_shifted(FcArena *a, const FcTensor *t);
/* op's result from its i32 accumulators (ops.def: requantised to a quantised qtype, or scaled to f32, the
 * input of a quantised conv's epilogue); the channel of element i is (i / inner) % (number of weight scales)
 * when wq is per axis. */
FcTensor *fc_ev_requantize(const FcOp *op, FcArena *arena, const int32_t *acc, const FcQuant *xq, const FcQuant *wq,
                           int64_t inner);
FcStatus fc_eval_quant_matmul(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena,
                              FcDiag *diag);

#endif /* FLOWC_EVAL_STRUCT_H */
