/* test_target.h — the target description unit tests run passes for: x86-64-v3, the artefacts' default,
 * resolved once per group (cmocka group setup/teardown), so the pipeline and the passes see one target
 * whatever the host is. */
#ifndef FLOWC_TEST_TARGET_H
#define FLOWC_TEST_TARGET_H

#include "target.h"

static FcTarget *target;

static int setup_target(void **state) {
  (void)state;
  FcCodegenOptions o = {.triple = "x86_64-linux-gnu", .opt_level = 2};
  FcDiag d;
  fc_diag_init(&d);
  return fc_target_resolve(&o, &target, &d) == FC_OK ? 0 : -1;
}

static int teardown_target(void **state) {
  (void)state;
  fc_target_free(target);
  return 0;
}

#endif /* FLOWC_TEST_TARGET_H */
