/* types.c — element types (from dtypes.def), static tensor types and quantised element types.
 *
 * A quantised type is an ordinary tensor type of its storage integers plus an FcQuant (scales, zero
 * points, storage range, axis), spelled as MLIR's quant dialect prints it: `!quant.uniform<i8:f32,
 * 5.0e-02:-3>` per tensor, `!quant.uniform<i8<-127:127>:f32:1, {1.0e-01,2.0e-01:-1}>` per axis; a zero
 * point of 0 and the storage type's full range are left out, unsigned storage is `u8`. The checks are
 * MLIR's own (scale within the expressed type's positive range, narrowed range inside the storage
 * type's, min < max) plus what MLIR leaves to users: zero points inside the range, and for a tensor
 * the axis within its rank with one pair per element of that dim.
 */
#include "ir.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name;
  size_t size;
  int onnx;
  FcDtypeClass cls;
} dtype_table[FC_DT_COUNT] = {
#define FC_DTYPE(E, mlir, bytes, onnx, cls) [FC_DT_##E] = {mlir, bytes, onnx, cls},
#include "dtypes.def"
#undef FC_DTYPE
};

const char *fc_dtype_name(FcDtype dt) { return (unsigned)dt < FC_DT_COUNT ? dtype_table[dt].name : "?"; }
size_t fc_dtype_size(FcDtype dt) { return dtype_table[dt].size; }
FcDtypeClass fc_dtype_class(FcDtype dt) { return dtype_table[dt].cls; }
bool fc_dtype_is_float(FcDtype dt) { return dtype_table[dt].cls == FC_DTC_FLOAT; }
bool fc_dtype_is_int(FcDtype dt) {
  return dtype_table[dt].cls == FC_DTC_SINT || dtype_table[dt].cls == FC_DTC_UINT;
}
bool fc_matmul_is_int8(FcDtype a, FcDtype b) { return fc_dtype_is_8bit(a) && fc_dtype_is_8bit(b); }
int fc_dtype_to_onnx(FcDtype dt) { return dtype_table[dt].onnx; }

bool fc_dtype_from_onnx(int code, FcDtype *out) {
  for (int i = 0; i < FC_DT_COUNT; i++)
    if (dtype_table[i].onnx == code) {
      *out = (FcDtype)i;
      return true;
    }
  return false;
}

bool fc_dtype_from_name(const char *s, size_t n, FcDtype *out) {
  for (int i = 0; i < FC_DT_COUNT; i++)
    if (strlen(dtype_table[i].name) == n && memcmp(dtype_table[i].name, s, n) == 0) {
      *out = (FcDtype)i;
      return true;
    }
  return false;
}

bool fc_type_numel(const FcType *t, int64_t *out) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++)
    if (!fc_checked_mul(n, t->dims[i], &n)) return false;
  *out = n;
  return true;
}

bool fc_type_nbytes(const FcType *t, int64_t *out) {
  int64_t n;
  return fc_type_numel(t, &n) && fc_checked_mul(n, (int64_t)fc_dtype_size(t->dtype), out);
}

bool fc_shape_equal(const FcType *a, const FcType *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

bool fc_type_equal(const FcType *a, const FcType *b) {
  return a->dtype == b->dtype && fc_shape_equal(a, b) && fc_quant_equal(a->quant, b->quant);
}

FcType fc_type_make(FcArena *a, FcDtype dt, int rank, const int64_t *dims) {
  FC_ASSERT(rank >= 0);
  FcType t = {.dtype = dt, .rank = rank};
  if (rank > 0) t.dims = fc_arena_memdup(a, dims, (size_t)rank * sizeof(int64_t), _Alignof(int64_t));
  return t;
}

FcType fc_type_copy(FcArena *a, const FcType *t) {
  FcType c = fc_type_make(a, t->dtype, t->rank < 0 ? 0 : t->rank, t->dims);
  c.rank = t->rank;
  c.quant = t->quant ? fc_quant_copy(a, t->quant) : NULL;
  return c;
}

FcType fc_type_make_quant(FcArena *a, const FcQuant *q, int rank, const int64_t *dims) {
  FcType t = fc_type_make(a, q->storage, rank, dims);
  t.quant = fc_quant_copy(a, q);
  return t;
}

FcType fc_type_storage(const FcType *t) {
  FcType s = *t;
  s.quant = NULL;
  return s;
}

void fc_format_f64(char *buf, size_t cap, double d) {
  for (int p = 6; p <= 16; p++) {
    snprintf(buf, cap, "%.*e", p, d);
    double r = strtod(buf, NULL);
    if (memcmp(&r, &d, sizeof d) == 0) return;
  }
}

void fc_quant_print(FILE *out, const FcQuant *q) {
  int64_t lo = 0, hi = 0;
  fc_quant_storage_range(q->storage, &lo, &hi);
  /* MLIR spells unsigned storage `u8`, not the builtin `ui8`. */
  fputs("!quant.uniform<", out);
  if (fc_dtype_class(q->storage) == FC_DTC_UINT) fprintf(out, "u%s", fc_dtype_name(q->storage) + 2);
  else fputs(fc_dtype_name(q->storage), out);
  if (q->qmin != lo || q->qmax != hi) fprintf(out, "<%" PRId64 ":%" PRId64 ">", q->qmin, q->qmax);
  fprintf(out, ":%s", fc_dtype_name(q->expressed));
  if (q->axis >= 0) fprintf(out, ":%d, {", q->axis);
  else fputs(", ", out);
  for (int i = 0; i < q->n; i++) {
    char buf[64];
    fc_format_f64(buf, sizeof buf, q->scales[i]);
    fprintf(out, "%s%s", i ? "," : "", buf);
    if (q->zero_points[i] != 0) fprintf(out, ":%" PRId64, q->zero_points[i]);
  }
  fputs(q->axis >= 0 ? "}>" : ">", out);
}

void fc_type_print(FILE *out, const FcType *t) {
  if (t->rank >= 0) {
    fputs("tensor<", out);
    for (int i = 0; i < t->rank; i++) fprintf(out, "%" PRId64 "x", t->dims ? t->dims[i] : (int64_t)-1);
  }
  if (t->quant) fc_quant_print(out, t->quant);
  else fputs(fc_dtype_name(t->dtype), out);
  if (t->rank >= 0) fputc('>', out);
}

char *fc_type_str(const FcType *t, char *buf, size_t cap) {
  if (cap == 0) return buf;
  buf[0] = '\0';
  FILE *f = fmemopen(buf, cap, "w");
  if (!f) return buf;
  fc_type_print(f, t);
  fclose(f);
  buf[cap - 1] = '\0'; /* a full buffer is not terminated by fmemopen */
  return buf;
}

/* ---- quantised element types --------------------------------------------------------------------- */

bool fc_quant_storage_range(FcDtype dt, int64_t *lo, int64_t *hi) {
  switch (dt) {
  case FC_DT_I8: *lo = INT8_MIN, *hi = INT8_MAX; return true;
  case FC_DT_U8: *lo = 0, *hi = UINT8_MAX; return true;
  case FC_DT_I16: *lo = INT16_MIN, *hi = INT16_MAX; return true;
  case FC_DT_U16: *lo = 0, *hi = UINT16_MAX; return true;
  case FC_DT_I32: *lo = INT32_MIN, *hi = INT32_MAX; return true;
  default: return false;
  }
}

/* The positive range MLIR allows a scale of an expressed type: its smallest subnormal to its largest. */
static bool scale_range(FcDtype dt, double *lo, double *hi) {
  switch (dt) {
  case FC_DT_F32: *lo = 0x1p-149, *hi = FLT_MAX; return true;
  case FC_DT_F16: *lo = 0x1p-24, *hi = 65504.0; return true;
  case FC_DT_BF16: *lo = 0x1p-133, *hi = 0x1.FEp127; return true;
  case FC_DT_F64: *lo = 0x1p-1074, *hi = DBL_MAX; return true;
  default: return false;
  }
}

__attribute__((format(printf, 3, 4))) static bool why_set(char *why, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (cap) vsnprintf(why, cap, fmt, ap);
  va_end(ap);
  return true;
}

bool fc_quant_problem(const FcQuant *q, const FcType *t, char *why, size_t cap) {
  int64_t lo, hi;
  double slo, shi;
  if (!fc_quant_storage_range(q->storage, &lo, &hi))
    return why_set(why, cap, "storage type %s is not one of i8, u8, i16, u16, i32",
                   (unsigned)q->storage < FC_DT_COUNT ? fc_dtype_name(q->storage) : "?");
  if (!scale_range(q->expressed, &slo, &shi))
    return why_set(why, cap, "expressed type %s is not one of f32, f16, bf16, f64",
                   (unsigned)q->expressed < FC_DT_COUNT ? fc_dtype_name(q->expressed) : "?");
  if (q->qmin < lo || q->qmax > hi || q->qmin >= q->qmax)
    return why_set(why, cap, "storage range [%" PRId64 ", %" PRId64 "] is not a non-empty part of %s's [%" PRId64
                   ", %" PRId64 "]", q->qmin, q->qmax, fc_dtype_name(q->storage), lo, hi);
  if (q->n < 1 || !q->scales || !q->zero_points) return why_set(why, cap, "no scale");
  if (q->axis < 0 && q->n != 1) return why_set(why, cap, "%d scales without a quantised axis", q->n);
  for (int i = 0; i < q->n; i++) {
    double s = q->scales[i];
    if (!(s >= slo && s <= shi)) {
      char buf[64];
      fc_format_f64(buf, sizeof buf, s);
      return why_set(why, cap, "scale %s must be positive, finite and within %s's range", buf,
                     fc_dtype_name(q->expressed));
    }
    if (q->zero_points[i] < q->qmin || q->zero_points[i] > q->qmax)
      return why_set(why, cap, "zero point %" PRId64 " is outside the storage range [%" PRId64 ", %" PRId64 "]",
                     q->zero_points[i], q->qmin, q->qmax);
  }
  if (!t || t->rank < 0 || q->axis < 0) return false;
  if (t->dtype != q->storage)
    return why_set(why, cap, "element type %s differs from the storage type %s", fc_dtype_name(t->dtype),
                   fc_dtype_name(q->storage));
  if (q->axis >= t->rank)
    return why_set(why, cap, "quantised axis %d is out of range for rank %d", q->axis, t->rank);
  if (t->dims[q->axis] != q->n)
    return why_set(why, cap, "%d scales for axis %d of size %" PRId64, q->n, q->axis, t->dims[q->axis]);
  return false;
}

bool fc_quant_equal(const FcQuant *a, const FcQuant *b) {
  if (!a || !b) return a == b;
  if (a == b) return true;
  if (a->storage != b->storage || a->expressed != b->expressed || a->qmin != b->qmin || a->qmax != b->qmax ||
      a->axis != b->axis || a->n != b->n)
    return false;
  /* Scales compare by bits: the text round-trips them exactly. */
  return memcmp(a->scales, b->scales, (size_t)a->n * sizeof *a->scales) == 0 &&
         memcmp(a->zero_points, b->zero_points, (size_t)a->n * sizeof *a->zero_points) == 0;
}

float fc_quant_multiplier(double sx, double sw, double sy) {
  /* Two f32 roundings, not one of the exact quotient: on near-ties (an f32(acc)·m that rounds to a half)
   * the two formulas can round differently, and a deep network spreads each flip (a QDQ ResNet-50 from
   * PyTorch ended 3 output steps from onnxruntime with the exact quotient, bit-identical with this one). */
  return (float)(sx * sw) / (float)sy;
}

int64_t fc_quant_mean(const FcQuant *xq, const FcQuant *yq, int64_t sum, int64_t count) {
  /* |sum| and |count·zx| are at most 255·count, far inside i64 for any tensor; u64 arithmetic makes the
   * subtraction well defined whatever the operands (the kernels' i64 arithmetic wraps the same way). */
  int64_t s = (int64_t)((uint64_t)sum - (uint64_t)count * (uint64_t)xq->zero_points[0]);
  double v = nearbyint((double)s / (double)count * (xq->scales[0] / yq->scales[0])) + (double)yq->zero_points[0];
  return v < (double)yq->qmin ? yq->qmin : v > (double)yq->qmax ? yq->qmax : (int64_t)v;
}

const FcQuant *fc_quant_copy(FcArena *a, const FcQuant *q) {
  FcQuant *c = FC_NEW(a, FcQuant);
  *c = *q;
  size_t n = q->n > 0 ? (size_t)q->n : 0;
  c->scales = n ? fc_arena_memdup(a, q->scales, n * sizeof *q->scales, _Alignof(double)) : NULL;
  c->zero_points = n ? fc_arena_memdup(a, q->zero_points, n * sizeof *q->zero_points, _Alignof(int64_t)) : NULL;
  return c;
}

bool fc_broadcast_shapes(FcArena *a, const FcType *x, const FcType *y, int *rank_out, const int64_t **dims_out) {
  int r = x->rank > y->rank ? x->rank : y->rank;
  int64_t *d = r ? FC_NEW_ARRAY(a, int64_t, (size_t)r) : NULL;
  for (int i = 0; i < r; i++) {
    int xi = i - (r - x->rank), yi = i - (r - y->rank);
    int64_t xd = xi >= 0 ? x->dims[xi] : 1, yd = yi >= 0 ? y->dims[yi] : 1;
    if (xd == yd || yd == 1) d[i] = xd;
    else if (xd == 1) d[i] = yd;
    else return false;
  }
  *rank_out = r;
  *dims_out = d;
  return true;
}
