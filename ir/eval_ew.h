/* eval_ew.h — helpers shared by the element-wise and reduction evaluators (eval_elementwise.c,
 * eval_reduce.c).
 *
 * Arithmetic runs in the natural domain of a dtype: floats in double (f16/bf16 stored with a single
 * rounding), signed integers in int64_t and unsigned ones in uint64_t, with wrapping arithmetic done in
 * uint64_t so that the final truncation to the dtype's width gives two's-complement wraparound without
 * C's undefined behaviour. fc_op_eval re-infers each op before calling a hook, so hooks may rely on the
 * attribute checks of the inference hooks (axes in range, flags 0/1, shapes consistent).
 */
#ifndef FLOWC_EVAL_EW_H
#define FLOWC_EVAL_EW_H

#include "ir.h"

#define FC_EE_TRY(expr)              \
  do {                               \
    FcStatus st_ = (expr);           \
    if (st_ != FC_OK) return st_;    \
  } while (0)

typedef enum FcEeDomain { FC_EE_FLOAT, FC_EE_SINT, FC_EE_UINT } FcEeDomain; /* bool counts as UINT */
FcEeDomain fc_ee_domain(FcDtype dt);

/* Records "<mnemonic>: <msg>" with `st` and returns it. */
FcStatus fc_ee_fail(const FcOp *op, FcDiag *diag, FcStatus st, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static inline double fc_ee_getf(const FcTensor *t, int64_t i) { return fc_tensor_get_f64(t, i); }
/* Integer bits, sign- or zero-extended to 64 (u64 keeps its bit pattern). */
static inline uint64_t fc_ee_getu(const FcTensor *t, int64_t i) { return (uint64_t)fc_tensor_get_i64(t, i); }
/* Stores a double with one rounding to the dtype (f16/bf16 via round-to-odd f32). */
void fc_ee_setf(FcTensor *t, int64_t i, double v);
/* Stores the low bits of v (bool: v != 0). */
static inline void fc_ee_setu(FcTensor *t, int64_t i, uint64_t v) { fc_tensor_set_i64(t, i, (int64_t)v); }

int64_t fc_ee_numel(const FcType *t);

/* Walks the elements of a result of shape `out` in row-major order, tracking the element offset of
 * each of up to three operands broadcast into it (NumPy rules, already checked by inference). */
enum { FC_EE_MAX_BCAST = 3 };
typedef struct FcEeBcast {
  int rank, n;
  const int64_t *dims;
  int64_t *ctr;                       /* rank */
  int64_t *strides[FC_EE_MAX_BCAST];  /* per operand, per result axis: 0 where broadcast */
  int64_t off[FC_EE_MAX_BCAST];
} FcEeBcast;
void fc_ee_bcast_init(FcEeBcast *it, FcArena *arena, const FcType *out, const FcType *const *ins, int n);
void fc_ee_bcast_next(FcEeBcast *it);

/* Product of dims[0..n): 0 if any is 0, else saturating at INT64_MAX (which only happens when
 * another factor of the tensor is 0, so callers check the element count before iterating). */
int64_t fc_ee_prod(const int64_t *dims, int n);

/* A tensor viewed as [outer, n, inner] around `axis` (products as fc_ee_prod). */
typedef struct FcEeAxis {
  int64_t outer, n, inner;
} FcEeAxis;
FcEeAxis fc_ee_axis_split(const FcType *t, int axis);

#endif /* FLOWC_EVAL_EW_H */
