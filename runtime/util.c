/* util.c — small pieces every other runtime file uses: the dtype table, one-line errors, overflow-checked
 * sizes, aligned allocation, type spelling and half-precision conversion.
 *
 * Dtype names are the IR's (MLIR) spellings, so a type in a runtime message reads exactly like the same
 * type in `flowc info` or a pass dump: tensor<1x10xf32>, tensor<3xi1>, tensor<ui8>.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowrt_internal.h"

size_t frt_dtype_size(FrtDtype dt) {
  switch (dt) {
  case FRT_U8: case FRT_I8: case FRT_BOOL: return 1;
  case FRT_U16: case FRT_I16: case FRT_F16: case FRT_BF16: return 2;
  case FRT_F32: case FRT_I32: case FRT_U32: return 4;
  case FRT_F64: case FRT_I64: case FRT_U64: return 8;
  }
  return 0;
}

const char *frt_dtype_name(FrtDtype dt) {
  switch (dt) {
  case FRT_F32: return "f32";
  case FRT_U8: return "ui8";
  case FRT_I8: return "i8";
  case FRT_U16: return "ui16";
  case FRT_I16: return "i16";
  case FRT_I32: return "i32";
  case FRT_I64: return "i64";
  case FRT_BOOL: return "i1";
  case FRT_F16: return "f16";
  case FRT_F64: return "f64";
  case FRT_U32: return "ui32";
  case FRT_U64: return "ui64";
  case FRT_BF16: return "bf16";
  }
  return "?";
}

FrtStatus frt_errorf(FrtError *err, FrtStatus st, const char *fmt, ...) {
  if (!err)
    return st;
  err->status = st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  frt_one_line(err->msg);
  return st;
}

void frt_one_line(char *s) {
  for (char *p = s; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      *p = '?';
}

bool frt_mul_overflows(size_t a, size_t b, size_t *out) { return __builtin_mul_overflow(a, b, out); }
bool frt_add_overflows(size_t a, size_t b, size_t *out) { return __builtin_add_overflow(a, b, out); }

bool frt_dense_nbytes(FrtDtype dt, int32_t rank, const int64_t *dims, size_t *nbytes) {
  size_t n = frt_dtype_size(dt);
  if (n == 0 || rank < 0 || rank > FRT_MAX_RANK)
    return false;
  /* Why the int64 bound too: element counts travel through int64_t (dims, parallel_for ranges). */
  size_t numel = 1;
  for (int32_t i = 0; i < rank; i++) {
    if (dims[i] < 0 || (uint64_t)dims[i] > SIZE_MAX || frt_mul_overflows(numel, (size_t)dims[i], &numel))
      return false;
  }
  if (numel > (size_t)INT64_MAX || frt_mul_overflows(numel, n, &n) || n > (size_t)INT64_MAX)
    return false;
  *nbytes = n;
  return true;
}

void *frt_alloc_aligned(size_t n) {
  /* C11 aligned_alloc wants a size that is a multiple of the alignment. */
  if (n == 0)
    n = FRT_ALIGN;
  if (n > SIZE_MAX - (FRT_ALIGN - 1))
    return NULL;
  n = (n + FRT_ALIGN - 1) / FRT_ALIGN * FRT_ALIGN;
  return aligned_alloc(FRT_ALIGN, n);
}

void frt_format_type(char *buf, size_t cap, FrtDtype dt, int32_t rank, const int64_t *dims) {
  if (cap == 0)
    return;
  size_t at = 0;
  int k = snprintf(buf, cap, "tensor<");
  for (int32_t i = 0; k >= 0 && i < rank && i < FRT_MAX_RANK; i++) {
    at += (size_t)k;
    if (at >= cap)
      return;
    k = snprintf(buf + at, cap - at, "%lldx", (long long)dims[i]);
  }
  if (k < 0)
    return;
  at += (size_t)k;
  if (at >= cap)
    return;
  snprintf(buf + at, cap - at, "%s>", frt_dtype_name(dt));
}

float frt_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {
    /* Subnormal half: normalise the mantissa into an f32 exponent. */
    int e = -1;
    do {
      man <<= 1;
      e++;
    } while (!(man & 0x400));
    bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

float frt_bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

int frt_coll_fail(char *msg, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, cap, fmt, ap);
  va_end(ap);
  return -1;
}
