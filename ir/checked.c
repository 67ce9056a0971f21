/* checked.c — overflow-checked size arithmetic.
 *
 * Every element count, byte size, stride and offset computed from input goes through these, so a model
 * that claims a 2^62 x 2^62 tensor is refused with a message instead of wrapping into a small buffer.
 */
#include "ir.h"

bool fc_checked_mul(int64_t a, int64_t b, int64_t *out) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}

bool fc_checked_add(int64_t a, int64_t b, int64_t *out) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}

size_t fc_size_mul_or_die(size_t a, size_t b) {
  size_t r;
  if (__builtin_mul_overflow(a, b, &r)) fc_die(__FILE__, __LINE__, "size overflow in %zu * %zu", a, b);
  return r;
}
