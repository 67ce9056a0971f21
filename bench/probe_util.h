/* probe_util.h — what the two machine probes (fma_peak.c, ukr_probe.c) share: a monotonic clock, the
 * parsing of their counts, and the median of a set of timings. Header-only, so each probe stays one
 * `cc` command (the probes include it by a relative path). */
#ifndef FLOWC_BENCH_PROBE_UTIL_H
#define FLOWC_BENCH_PROBE_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double probe_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A positive count of at most 2^40 from argument s, else a message naming prog and what, and exit 2. */
static inline long probe_parse_count(const char *prog, const char *s, const char *what)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v <= 0 || v > (1L << 40)) {
		fprintf(stderr, "%s: bad %s '%s'\n", prog, what, s);
		exit(2);
	}
	return v;
}

static inline int probe_cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

/* The median of v[0..n) (n > 0); sorts v. */
static inline double probe_median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof *v, probe_cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
