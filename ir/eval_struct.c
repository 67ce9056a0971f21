/* eval_struct.c — what the structural evaluators share: operand checks, attribute fetching, index
 * normalisation, whole-tensor loads into the two arithmetic domains (double, uint64_t), correctly
 * rounded stores, a total order over elements, and a strided copy that every data-movement op reduces
 * to (transpose, broadcast and slice are the same loop with different strides).
 */
#include "eval_struct.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

FcStatus fc_ev_fail(const FcOp *op, FcDiag *diag, FcStatus st, const char *fmt, ...) {
  char msg[sizeof diag->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fc_error(diag, st, "%s: %s", fc_op_info(op->kind)->name, msg);
}

FcStatus fc_ev_check(const FcOp *op, const FcTensor *const *in, int n_required, FcDiag *diag) {
  if (op->n_operands < n_required)
    return fc_ev_fail(op, diag, FC_ERR_INTERNAL, "expects %d operands, has %d", n_required, op->n_operands);
  for (int i = 0; i < op->n_operands; i++) {
    const FcTensor *t = in[i];
    if (!t) {
      if (i < n_required) return fc_ev_fail(op, diag, FC_ERR_INTERNAL, "operand %d has no value", i);
      continue;
    }
    if (t->type.rank > FC_EV_MAX_RANK)
      return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "operand %d has rank %d (at most %d evaluated)", i, t->type.rank,
                        FC_EV_MAX_RANK);
    int64_t nbytes;
    if (!fc_type_nbytes(&t->type, &nbytes) || t->nbytes != nbytes)
      return fc_ev_fail(op, diag, FC_ERR_INTERNAL, "operand %d holds %lld bytes, not what its type needs", i,
                        (long long)t->nbytes);
    if (!t->data && nbytes > 0)
      return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "operand %d has no data (elided constant)", i);
    const FcValue *v = op->operands[i].value;
    if (v && !fc_type_equal(&v->type, &t->type))
      return fc_ev_fail(op, diag, FC_ERR_INTERNAL, "operand %d's data does not have the operand's type", i);
  }
  for (int i = 0; i < op->n_results; i++) {
    int64_t nbytes;
    if (op->results[i].type.rank > FC_EV_MAX_RANK)
      return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "result %d has rank %d (at most %d evaluated)", i,
                        op->results[i].type.rank, FC_EV_MAX_RANK);
    if (!fc_type_nbytes(&op->results[i].type, &nbytes) || nbytes > FC_DEFAULT_MAX_TENSOR_BYTES)
      return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "result %d is too large to evaluate", i);
  }
  return FC_OK;
}

void fc_ev_make_results(const FcOp *op, FcTensor **out, FcArena *arena) {
  for (int i = 0; i < op->n_results; i++) out[i] = fc_tensor_new(arena, op->results[i].type);
}

FcStatus fc_ev_ints(const FcOp *op, FcAttrName name, int count, int64_t dflt, int64_t *out, FcDiag *diag) {
  const FcAttr *a = fc_op_attr(op, name);
  if (a && a->kind != FC_AK_INTS)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "attribute '%s' must be ints", fc_attr_name_str(name));
  if (!a || a->ints.n == 0) {
    for (int i = 0; i < count; i++) out[i] = dflt;
    return FC_OK;
  }
  if (a->ints.n != count || !a->ints.v)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "attribute '%s' has %d entries, expected %d", fc_attr_name_str(name),
                      a->ints.n, count);
  memcpy(out, a->ints.v, (size_t)count * sizeof *out);
  return FC_OK;
}

FcStatus fc_ev_work(const FcOp *op, FcDiag *diag, int n, const int64_t *factors) {
  int64_t w = 1;
  for (int i = 0; i < n; i++)
    if (!fc_checked_mul(w, factors[i] > 0 ? factors[i] : 0, &w) || w > FC_EV_MAX_WORK)
      return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "too much work to evaluate at compile time (over %lld steps)",
                        (long long)FC_EV_MAX_WORK);
  return FC_OK;
}

bool fc_ev_index(int64_t idx, int64_t dim, int64_t *out) {
  if (idx < -dim || idx >= dim) return false;
  *out = idx < 0 ? idx + dim : idx;
  return true;
}

FcStatus fc_ev_bad_index(const FcOp *op, FcDiag *diag, const char *what, int64_t idx, int64_t dim) {
  return fc_ev_fail(op, diag, FC_ERR_INPUT, "%s%sindex %lld out of range [%lld, %lld)", what, *what ? " " : "",
                    (long long)idx, (long long)-dim, (long long)dim);
}

int64_t fc_ev_numel(const FcType *t) {
  int64_t n;
  FC_ASSERT(fc_type_numel(t, &n));
  return n;
}

void fc_ev_strides(const FcType *t, int64_t *strides) {
  int64_t s = 1;
  for (int d = t->rank - 1; d >= 0; d--) {
    strides[d] = s;
    s *= t->dims[d];
  }
}

FcEvDomain fc_ev_domain(FcDtype dt, bool ints_ok) {
  if (fc_dtype_is_float(dt)) return FC_EVD_F64;
  if (ints_ok && fc_dtype_is_int(dt)) return FC_EVD_U64;
  return FC_EVD_NONE;
}

double *fc_ev_load_f64(FcArena *scratch, const FcTensor *t) {
  int64_t n = fc_ev_numel(&t->type);
  double *v = FC_NEW_ARRAY(scratch, double, (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) v[i] = fc_tensor_get_f64(t, i);
  return v;
}

uint64_t *fc_ev_load_u64(FcArena *scratch, const FcTensor *t) {
  int64_t n = fc_ev_numel(&t->type);
  uint64_t *v = FC_NEW_ARRAY(scratch, uint64_t, (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < n; i++) v[i] = (uint64_t)fc_tensor_get_i64(t, i);
  return v;
}

/* Rounds to f32 with round-to-odd: with 13 (f16) or 16 (bf16) spare bits, rounding the result to
 * nearest-even again gives the correctly rounded narrow value, which double → float → half would not. */
static float f32_round_to_odd(double v) {
  float f = (float)v;
  if (!isfinite(f) || (double)f == v) return f;
  if (fabs((double)f) > fabs(v)) f = nextafterf(f, 0.0f);
  uint32_t bits;
  memcpy(&bits, &f, 4);
  bits |= 1;
  memcpy(&f, &bits, 4);
  return f;
}

void fc_ev_store_f64(FcTensor *t, int64_t i, double v) {
  unsigned char *p = fc_ev_at(t, i);
  uint16_t h;
  switch (t->type.dtype) {
  case FC_DT_F16: h = fc_f32_to_f16(f32_round_to_odd(v)); memcpy(p, &h, 2); return;
  case FC_DT_BF16: h = fc_f32_to_bf16(f32_round_to_odd(v)); memcpy(p, &h, 2); return;
  default: fc_tensor_set_f64(t, i, v); return;
  }
}

void fc_ev_store_u64(FcTensor *t, int64_t i, uint64_t v) {
  unsigned char *p = fc_ev_at(t, i);
  switch (t->type.dtype) {
  case FC_DT_I8: case FC_DT_U8: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); return; }
  case FC_DT_I16: case FC_DT_U16: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); return; }
  case FC_DT_I32: case FC_DT_U32: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); return; }
  case FC_DT_I64: case FC_DT_U64: memcpy(p, &v, 8); return;
  case FC_DT_BOOL: *p = v != 0; return;
  default: fc_tensor_set_f64(t, i, (double)(int64_t)v); return;
  }
}

bool fc_ev_is_nan(FcDtype dt, const void *p) {
  if (!fc_dtype_is_float(dt)) return false;
  FcTensor t = {.type = {dt, 0, NULL}, .data = p, .nbytes = (int64_t)fc_dtype_size(dt)};
  double v = fc_tensor_get_f64(&t, 0);
  return v != v;
}

int fc_ev_cmp(FcDtype dt, const void *a, const void *b) {
  FcTensor ta = {.type = {dt, 0, NULL}, .data = a, .nbytes = (int64_t)fc_dtype_size(dt)};
  FcTensor tb = {.type = {dt, 0, NULL}, .data = b, .nbytes = (int64_t)fc_dtype_size(dt)};
  switch (fc_dtype_class(dt)) {
  case FC_DTC_FLOAT: {
    double x = fc_tensor_get_f64(&ta, 0), y = fc_tensor_get_f64(&tb, 0);
    bool xn = x != x, yn = y != y;
    if (xn || yn) return xn - yn;
    return (x > y) - (x < y);
  }
  case FC_DTC_UINT: {
    uint64_t x = (uint64_t)fc_tensor_get_i64(&ta, 0), y = (uint64_t)fc_tensor_get_i64(&tb, 0);
    return (x > y) - (x < y);
  }
  case FC_DTC_SINT:
  case FC_DTC_BOOL: {
    int64_t x = fc_tensor_get_i64(&ta, 0), y = fc_tensor_get_i64(&tb, 0);
    return (x > y) - (x < y);
  }
  }
  FC_UNREACHABLE();
}

void fc_ev_copy_view(void *dst, const void *src, size_t esize, int64_t base, int rank, const int64_t *dims,
                     const int64_t *src_strides) {
  unsigned char *o = dst;
  const unsigned char *s = src;
  for (int d = 0; d < rank; d++)
    if (dims[d] == 0) return;
  if (rank == 0) {
    memcpy(o, s + (size_t)base * esize, esize);
    return;
  }
  int64_t idx[FC_EV_MAX_RANK] = {0};
  int64_t inner = dims[rank - 1], istride = src_strides[rank - 1], off = base;
  for (;;) {
    if (istride == 1) {
      memcpy(o, s + (size_t)off * esize, (size_t)inner * esize);
      o += (size_t)inner * esize;
    } else {
      for (int64_t j = 0; j < inner; j++, o += esize) memcpy(o, s + (size_t)(off + j * istride) * esize, esize);
    }
    int d = rank - 2;
    for (; d >= 0; d--) {
      off += src_strides[d];
      if (++idx[d] < dims[d]) break;
      off -= src_strides[d] * dims[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}
