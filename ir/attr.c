/* attr.c — attribute names (attrs.def) and kinds. */
#include "ir.h"

#include <string.h>

static const char *const attr_names[FC_ATTR_NAME_COUNT] = {
#define FC_ATTR_NAME(E, s) [FC_ATTR_##E] = s,
#include "attrs.def"
#undef FC_ATTR_NAME
};

const char *fc_attr_name_str(FcAttrName n) { return (unsigned)n < FC_ATTR_NAME_COUNT ? attr_names[n] : "?"; }

bool fc_attr_name_from_str(const char *s, size_t n, FcAttrName *out) {
  for (int i = 0; i < FC_ATTR_NAME_COUNT; i++)
    if (strlen(attr_names[i]) == n && memcmp(attr_names[i], s, n) == 0) {
      *out = (FcAttrName)i;
      return true;
    }
  return false;
}

const char *fc_attr_kind_str(FcAttrKind k) {
  static const char *const names[] = {"int", "float", "str", "ints", "floats", "type", "tensor", "program"};
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}
