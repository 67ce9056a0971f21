/* time.c — a monotonic clock for benchmarks (never affected by changes to the wall clock). */
#include <time.h>

#include "flowrt_internal.h"

double frt_now_seconds(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
    return 0.0;
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
