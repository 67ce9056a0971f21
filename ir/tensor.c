/* tensor.c — constant tensor data: element access across dtypes and f16/bf16 conversion.
 *
 * Element accessors go through double or int64 so folding and the importer can treat every dtype the
 * same way; the conversions for f16 and bf16 round to nearest even, like hardware converts.
 */
#include "ir.h"

#include <math.h>
#include <string.h>

FcTensor *fc_tensor_new(FcArena *a, FcType type) {
  FcTensor *t = FC_NEW(a, FcTensor);
  t->type = fc_type_copy(a, &type);
  int64_t nbytes;
  FC_ASSERT(fc_type_nbytes(&t->type, &nbytes));
  t->nbytes = nbytes;
  t->data = fc_arena_alloc(a, (size_t)nbytes, 64);
  return t;
}

float fc_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { /* subnormal: normalise */
      int e = -1;
      do {
        e++;
        man <<= 1;
      } while (!(man & 0x400));
      bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
    }
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t fc_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff)); /* NaN, keep quiet */
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);                         /* overflow → inf */
  if (ax < 0x38800000u) {                                                          /* subnormal or 0 */
    if (ax < 0x33000000u) return (uint16_t)sign;
    uint32_t e = ax >> 23, man = (ax & 0x7fffff) | 0x800000;
    uint32_t shift = 126 - e; /* 14..24 */
    uint32_t r = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) r++;
    return (uint16_t)(sign | r);
  }
  uint32_t r = ((ax >> 13) - ((127 - 15) << 10));
  uint32_t rem = ax & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
  return (uint16_t)(sign | r);
}

float fc_bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t fc_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

#define LOAD(T) \
  do {          \
    T v;        \
    memcpy(&v, p, sizeof v); \
    return v;   \
  } while (0)

double fc_tensor_get_f64(const FcTensor *t, int64_t i) {
  const unsigned char *p = (const unsigned char *)t->data + (size_t)i * fc_dtype_size(t->type.dtype);
  switch (t->type.dtype) {
  case FC_DT_F32: LOAD(float);
  case FC_DT_F64: LOAD(double);
  case FC_DT_F16: { uint16_t h; memcpy(&h, p, 2); return fc_f16_to_f32(h); }
  case FC_DT_BF16: { uint16_t h; memcpy(&h, p, 2); return fc_bf16_to_f32(h); }
  case FC_DT_I8: LOAD(int8_t);
  case FC_DT_U8: LOAD(uint8_t);
  case FC_DT_I16: LOAD(int16_t);
  case FC_DT_U16: LOAD(uint16_t);
  case FC_DT_I32: LOAD(int32_t);
  case FC_DT_U32: LOAD(uint32_t);
  case FC_DT_I64: LOAD(int64_t);
  case FC_DT_U64: LOAD(uint64_t);
  case FC_DT_BOOL: return *p != 0;
  case FC_DT_COUNT: break;
  }
  FC_UNREACHABLE();
}

int64_t fc_tensor_get_i64(const FcTensor *t, int64_t i) {
  const unsigned char *p = (const unsigned char *)t->data + (size_t)i * fc_dtype_size(t->type.dtype);
  switch (t->type.dtype) {
  case FC_DT_I8: LOAD(int8_t);
  case FC_DT_U8: LOAD(uint8_t);
  case FC_DT_I16: LOAD(int16_t);
  case FC_DT_U16: LOAD(uint16_t);
  case FC_DT_I32: LOAD(int32_t);
  case FC_DT_U32: LOAD(uint32_t);
  case FC_DT_I64: LOAD(int64_t);
  case FC_DT_U64: { uint64_t v; memcpy(&v, p, 8); return (int64_t)v; }
  case FC_DT_BOOL: return *p != 0;
  default: {
    double d = fc_tensor_get_f64(t, i);
    if (!(d == d)) return 0;
    if (d >= 9.2233720368547758e18) return INT64_MAX;
    if (d <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)d;
  }
  }
}
#undef LOAD

#define STORE(T, x) \
  do {              \
    T v_ = (T)(x);  \
    memcpy(p, &v_, sizeof v_); \
    return;         \
  } while (0)

/* Float to integer conversion saturates here (folding must not hit C's undefined behaviour). */
static int64_t sat_i64(double v, double lo, double hi) {
  if (!(v == v)) return 0;
  if (v <= lo) return (int64_t)lo;
  if (v >= hi) return (int64_t)hi;
  return (int64_t)v;
}

void fc_tensor_set_f64(FcTensor *t, int64_t i, double v) {
  unsigned char *p = (unsigned char *)t->data + (size_t)i * fc_dtype_size(t->type.dtype);
  switch (t->type.dtype) {
  case FC_DT_F32: STORE(float, v);
  case FC_DT_F64: STORE(double, v);
  case FC_DT_F16: STORE(uint16_t, fc_f32_to_f16((float)v));
  case FC_DT_BF16: STORE(uint16_t, fc_f32_to_bf16((float)v));
  case FC_DT_I8: STORE(int8_t, sat_i64(v, INT8_MIN, INT8_MAX));
  case FC_DT_U8: STORE(uint8_t, sat_i64(v, 0, UINT8_MAX));
  case FC_DT_I16: STORE(int16_t, sat_i64(v, INT16_MIN, INT16_MAX));
  case FC_DT_U16: STORE(uint16_t, sat_i64(v, 0, UINT16_MAX));
  case FC_DT_I32: STORE(int32_t, sat_i64(v, INT32_MIN, INT32_MAX));
  case FC_DT_U32: STORE(uint32_t, sat_i64(v, 0, UINT32_MAX));
  case FC_DT_I64: STORE(int64_t, sat_i64(v, -9.2233720368547758e18, 9.2233720368547748e18));
  case FC_DT_U64: {
    uint64_t u = !(v == v) || v <= 0 ? 0 : v >= 1.8446744073709552e19 ? UINT64_MAX : (uint64_t)v;
    memcpy(p, &u, 8);
    return;
  }
  case FC_DT_BOOL: *p = v != 0; return;
  case FC_DT_COUNT: break;
  }
  FC_UNREACHABLE();
}

void fc_tensor_set_i64(FcTensor *t, int64_t i, int64_t v) {
  unsigned char *p = (unsigned char *)t->data + (size_t)i * fc_dtype_size(t->type.dtype);
  switch (t->type.dtype) {
  case FC_DT_I8: STORE(int8_t, v);
  case FC_DT_U8: STORE(uint8_t, v);
  case FC_DT_I16: STORE(int16_t, v);
  case FC_DT_U16: STORE(uint16_t, v);
  case FC_DT_I32: STORE(int32_t, v);
  case FC_DT_U32: STORE(uint32_t, v);
  case FC_DT_I64: STORE(int64_t, v);
  case FC_DT_U64: STORE(uint64_t, v);
  case FC_DT_BOOL: *p = v != 0; return;
  default: fc_tensor_set_f64(t, i, (double)v); return;
  }
}
#undef STORE

const FcTensor *fc_value_const(const FcValue *v) {
  if (!v || !v->def || v->def->kind != FC_OP_CONSTANT) return NULL;
  const FcAttr *a = fc_op_attr(v->def, FC_ATTR_VALUE);
  return a && a->kind == FC_AK_TENSOR && a->tensor->data ? a->tensor : NULL;
}

const FcTensor *fc_value_scalar_f32(const FcValue *v) {
  const FcTensor *c = fc_value_const(v);
  int64_t n;
  return c && c->type.dtype == FC_DT_F32 && !c->type.quant && fc_type_numel(&c->type, &n) && n == 1 ? c : NULL;
}
