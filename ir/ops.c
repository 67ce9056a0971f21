/* ops.c — the op table, expanded from ops.def.
 *
 * Each row's schema string ("axis:int keepdims:int") is parsed once, on first use, into FcAttrSpec
 * slots; a malformed schema is a bug in ops.def and dies at start-up, never on user input.
 */
#include "ir.h"

#include <pthread.h>
#include <string.h>

typedef struct OpRow {
  const char *name, *full_name;
  int in_min, in_max, out_min, out_max;
  unsigned flags;
  const char *schema;
  FcInferFn infer;
  FcEvalFn eval;
} OpRow;

static const OpRow op_rows[FC_OP_COUNT] = {
#define FC_OP(E, mn, imin, imax, omin, omax, flags, schema, infer, eval) \
  [FC_OP_##E] = {mn, (FC_OP_##E == FC_OP_RETURN ? "func." mn : "flow." mn), imin, imax, omin, omax, flags, schema, fc_infer_##infer, fc_eval_##eval},
#include "ops.def"
#undef FC_OP
};

enum { MAX_ATTRS_PER_OP = 12 };
static FcOpInfo op_infos[FC_OP_COUNT];
static FcAttrSpec op_specs[FC_OP_COUNT][MAX_ATTRS_PER_OP];
static pthread_once_t op_once = PTHREAD_ONCE_INIT;

/* A schema kind is spelled as fc_attr_kind_str names it ("?" past the last kind). */
static FcAttrKind parse_kind(const char *s, size_t n, const char *row) {
  for (int k = 0; strcmp(fc_attr_kind_str((FcAttrKind)k), "?") != 0; k++)
    if (strlen(fc_attr_kind_str((FcAttrKind)k)) == n && memcmp(fc_attr_kind_str((FcAttrKind)k), s, n) == 0)
      return (FcAttrKind)k;
  fc_die(__FILE__, __LINE__, "ops.def: bad attribute kind in schema of %s", row);
}

static void init_table(void) {
  for (int k = 0; k < FC_OP_COUNT; k++) {
    const OpRow *r = &op_rows[k];
    FcOpInfo *info = &op_infos[k];
    info->name = r->name;
    info->full_name = r->full_name;
    info->in_min = r->in_min;
    info->in_max = r->in_max;
    info->out_min = r->out_min;
    info->out_max = r->out_max;
    info->flags = r->flags;
    info->infer = r->infer;
    info->eval = r->eval == fc_eval_none ? NULL : r->eval;
    info->attrs = op_specs[k];
    int n = 0;
    for (const char *p = r->schema; *p;) {
      while (*p == ' ') p++;
      if (!*p) break;
      const char *colon = strchr(p, ':');
      if (!colon) fc_die(__FILE__, __LINE__, "ops.def: bad schema for %s", r->name);
      const char *end = colon + 1;
      while (*end && *end != ' ' && *end != '?') end++;
      FC_ASSERT(n < MAX_ATTRS_PER_OP);
      FcAttrSpec *s = &op_specs[k][n++];
      if (!fc_attr_name_from_str(p, (size_t)(colon - p), &s->name))
        fc_die(__FILE__, __LINE__, "ops.def: attribute of %s missing from attrs.def", r->name);
      s->kind = parse_kind(colon + 1, (size_t)(end - colon - 1), r->name);
      s->optional = *end == '?';
      p = *end == '?' ? end + 1 : end;
    }
    info->n_attrs = n;
  }
}

const FcOpInfo *fc_op_info(FcOpKind k) {
  pthread_once(&op_once, init_table);
  FC_ASSERT((unsigned)k < FC_OP_COUNT);
  return &op_infos[k];
}

bool fc_op_kind_from_name(const char *s, size_t n, FcOpKind *out) {
  pthread_once(&op_once, init_table);
  for (int k = 0; k < FC_OP_COUNT; k++)
    if (strlen(op_infos[k].full_name) == n && memcmp(op_infos[k].full_name, s, n) == 0) {
      *out = (FcOpKind)k;
      return true;
    }
  return false;
}
