/* test_task_split.c — fc_win_balance (codegen/cg_window.c), the model of how evenly a kernel's outer
 * iterations spread over the thread pool that kernels use to choose their split.
 *
 * The expected values are worked out by hand from runtime/pool.c's schedule: min(4T, tasks) chunks, each
 * thread's contiguous run of them first, then the last chunk of the next run that has one, the least
 * busy thread taking the next chunk. Equal tasks: a count that divides by 2 and 4 spreads evenly, 7
 * leaves one thread idle for a task at the tail (7/8 busy on 2 and on 4 threads), 11 is 11/12 busy on
 * both. Unequal tasks: 2 oc groups of 4 and 2 blocks over 7 rows (EfficientNet-B0's first expand conv,
 * 16 → 96 channels on 112×112, whose view the balance moves from 7 rows of 1792 to 8 of 1568) against
 * 8 rows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cg_window.h"

static double unit_cost(const void *ctx, int64_t t) {
  (void)ctx, (void)t;
  return 1.0;
}

/* Alternating 4 and 2: oc groups of J = 4 and Jl = 2 blocks, the group the fastest outer index. */
static double group_cost(const void *ctx, int64_t t) {
  (void)ctx;
  return t % 2 == 0 ? 4.0 : 2.0;
}

static void test_equal_tasks(void **state) {
  (void)state;
  assert_float_equal(fc_win_balance(8, unit_cost, NULL), 1.0, 1e-12);
  assert_float_equal(fc_win_balance(16, unit_cost, NULL), 1.0, 1e-12);
  assert_float_equal(fc_win_balance(64, unit_cost, NULL), 1.0, 1e-12);
  /* 7: 2 threads 3.5 / 4, 4 threads 1.75 / 2 */
  assert_float_equal(fc_win_balance(7, unit_cost, NULL), 0.875, 1e-12);
  /* 11: 2 threads 5.5 / 6; 4 threads 11 chunks, busiest 3: 2.75 / 3 */
  assert_float_equal(fc_win_balance(11, unit_cost, NULL), (5.5 / 6 + 2.75 / 3) / 2, 1e-12);
  /* 2 tasks: 2 threads even, 4 threads 0.5 / 1 */
  assert_float_equal(fc_win_balance(2, unit_cost, NULL), (1.0 + 0.5) / 2, 1e-12);
  /* 1 task: nothing to share */
  assert_float_equal(fc_win_balance(1, unit_cost, NULL), (0.5 + 0.25) / 2, 1e-12);
  assert_float_equal(fc_win_balance(0, unit_cost, NULL), 1.0, 1e-12);
}

static void test_unequal_tasks(void **state) {
  (void)state;
  /* 8 rows × 2 groups = 16 tasks, 48 in all: 8 chunks of a row (6) on 2 threads, 16 chunks of a task on
   * 4 threads (each thread's run is 2 rows: 12). */
  assert_float_equal(fc_win_balance(16, group_cost, NULL), 1.0, 1e-12);
  /* 7 rows = 14 tasks, 42 in all, on 2 threads: 8 chunks of 2,2,2,2,2,2,1,1 tasks (6 6 6 6 6 6 4 2);
   * thread 0 owns chunks 0..3, thread 1 4..7: both 6, 12; then thread 0 takes 2 (18), thread 1 6 (16),
   * thread 1 7 (18), thread 0 3 (24), thread 1 steals nothing: 21 / 24. On 4 threads: 14 chunks of one
   * task, runs of 4 4 3 3 tasks: the simulation's busiest thread is 12, against 10.5. */
  assert_float_equal(fc_win_balance(14, group_cost, NULL), (21.0 / 24 + 10.5 / 12) / 2, 1e-12);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_equal_tasks),
      cmocka_unit_test(test_unequal_tasks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
