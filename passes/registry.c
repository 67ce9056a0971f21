/* registry.c — the pass table, expanded once from passes.def.
 *
 * Lookups are a linear scan: the table has a handful of rows and is consulted only while a pipeline
 * string is parsed, so a hash would buy nothing.
 */
#include "passes.h"

#include <string.h>

static const FcPassInfo pass_table[] = {
#define FC_PASS(name, help) {#name, fc_pass_##name, help},
#include "passes.def"
#undef FC_PASS
};

enum { PASS_COUNT = (int)(sizeof pass_table / sizeof pass_table[0]) };

int fc_pass_count(void) { return PASS_COUNT; }

const FcPassInfo *fc_pass_at(int i) { return i >= 0 && i < PASS_COUNT ? &pass_table[i] : NULL; }

const FcPassInfo *fc_pass_lookup(const char *name) {
  if (!name) return NULL;
  for (int i = 0; i < PASS_COUNT; i++)
    if (strcmp(pass_table[i].name, name) == 0) return &pass_table[i];
  return NULL;
}
