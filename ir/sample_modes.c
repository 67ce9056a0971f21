/* sample_modes.c — lookups over ir/sample_modes.def: two flat tables expanded from it (the lists with
 * their attribute and first mode; every spelling with its list and mode), searched linearly, as the
 * lists hold a handful of names each. */
#include "sample_modes.h"

#include <stdio.h>
#include <string.h>

typedef struct Spelling {
  FcModeList list;
  FcMode mode;
  const char *name;
  bool alias;
} Spelling;

static const Spelling spellings[] = {
#define FC_MODE_LIST(L, A)
#define FC_MODE(L, E, s) {FC_ML_##L, FC_##L##_##E, s, false},
#define FC_MODE_ALIAS(L, E, s) {FC_ML_##L, FC_##L##_##E, s, true},
#include "sample_modes.def"
#undef FC_MODE_LIST
#undef FC_MODE
};
enum { N_SPELLINGS = sizeof spellings / sizeof spellings[0] };

static const FcAttrName list_attrs[FC_ML_COUNT] = {
#define FC_MODE_LIST(L, A) FC_ATTR_##A,
#define FC_MODE(L, E, s)
#include "sample_modes.def"
#undef FC_MODE_LIST
#undef FC_MODE
};

/* A mode's list and canonical spelling, indexed by FcMode. */
static const Spelling canonical[FC_MODE_COUNT] = {
#define FC_MODE_LIST(L, A)
#define FC_MODE(L, E, s) {FC_ML_##L, FC_##L##_##E, s, false},
#include "sample_modes.def"
#undef FC_MODE_LIST
#undef FC_MODE
};

static bool parse(FcModeList l, const char *s, bool aliases, FcMode *out) {
  for (int i = 0; i < N_SPELLINGS; i++)
    if (spellings[i].list == l && (aliases || !spellings[i].alias) && strcmp(spellings[i].name, s) == 0) {
      *out = spellings[i].mode;
      return true;
    }
  return false;
}

bool fc_mode_parse(FcModeList l, const char *s, FcMode *out) { return parse(l, s, false, out); }
bool fc_mode_parse_onnx(FcModeList l, const char *s, FcMode *out) { return parse(l, s, true, out); }

const char *fc_mode_name(FcMode m) { return canonical[m].name; }

FcAttrName fc_mode_attr(FcModeList l) { return list_attrs[l]; }

/* The first mode of list l (its default). */
static FcMode first_of(FcModeList l) {
  int m = 0;
  while (canonical[m].list != l) m++;
  return (FcMode)m;
}

const char *fc_mode_list_str(FcModeList l, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  for (int m = 0; m < FC_MODE_COUNT; m++)
    if (canonical[m].list == l && len < cap)
      len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? "|" : "", canonical[m].name);
  return buf;
}

bool fc_op_mode(const FcOp *op, FcModeList l, FcMode *out, const char **bad) {
  FcMode dflt = first_of(l);
  const char *s = fc_op_attr_str(op, list_attrs[l], fc_mode_name(dflt));
  if (fc_mode_parse(l, s, out)) return true;
  *bad = s;
  return false;
}
