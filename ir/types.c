/* types.c — element types (from dtypes.def) and static tensor types. */
#include "ir.h"

#include <stdio.h>
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

bool fc_type_equal(const FcType *a, const FcType *b) { return a->dtype == b->dtype && fc_shape_equal(a, b); }

FcType fc_type_make(FcArena *a, FcDtype dt, int rank, const int64_t *dims) {
  FC_ASSERT(rank >= 0);
  FcType t = {dt, rank, NULL};
  if (rank > 0) t.dims = fc_arena_memdup(a, dims, (size_t)rank * sizeof(int64_t), _Alignof(int64_t));
  return t;
}

char *fc_type_str(const FcType *t, char *buf, size_t cap) {
  size_t n = 0;
  n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "tensor<");
  for (int i = 0; i < t->rank; i++)
    n += (size_t)snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, "%lldx", (long long)t->dims[i]);
  snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, "%s>", fc_dtype_name(t->dtype));
  return buf;
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
