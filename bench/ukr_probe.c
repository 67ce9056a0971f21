/* ukr_probe.c — the instruction mix of flowc's AVX2 GEMM microkernel, over slivers that stay in L1.
 *
 * fma_peak.c measures the FMA pipes alone: twelve register-only chains. A GEMM's inner loop also feeds
 * them: per k step, flowc's 6×16 microkernel (codegen/cg_gemm.c) loads two vectors of the packed B
 * sliver, broadcasts six scalars of the packed A sliver, issues twelve FMAs into twelve accumulators,
 * and prefetches B ahead, unrolled four times. This probe runs exactly that mix on an A sliver of
 * 6 × 256 floats (6 KiB) and a B sliver of 256 × 16 (16 KiB), both in L1, so it never waits on memory:
 * on a quiet core it runs near the FMA peak. When it does not while fma_peak does, something else
 * takes the core's load ports or front end (on a VM, another guest on the same physical core), and a
 * GEMM measured at that time pays for it too. bench/run.py runs both probes interleaved with the GEMM
 * micro-benchmarks, in the same rounds, to report that interference next to the GEMM numbers.
 *
 * FLOPs = 2 · 6 · 16 · 256 per pass. A repetition is --iters passes; the result is the best and the
 * median over --reps repetitions (best: the quiet core; median: what the same rounds' GEMMs saw).
 *
 * Build: cc -O2 -mavx2 -mfma bench/ukr_probe.c -o ukr_probe
 * Usage: ukr_probe [--iters N] [--reps N]; prints "gflops BEST median MEDIAN", "rep_ms min X median Y"
 * and "checksum X".
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe_util.h"

enum { MR = 6, NR = 16, KC = 256 };

/* One k step: two B vectors, then per row a broadcast of A and two FMAs; B prefetched 16 steps ahead as
 * flowc's microkernel does (within the sliver, so the lines are already in L1). */
#define STEP(kk)                                                                                            \
	do {                                                                                                \
		const float *bk = b + (kk) * NR, *ak = a + (kk) * MR;                                        \
		_mm_prefetch((const char *)(bk + 16 * NR), _MM_HINT_T0);                                     \
		__m256 b0 = _mm256_loadu_ps(bk), b1 = _mm256_loadu_ps(bk + 8), x;                            \
		x = _mm256_broadcast_ss(ak + 0), c00 = _mm256_fmadd_ps(x, b0, c00), c01 = _mm256_fmadd_ps(x, b1, c01); \
		x = _mm256_broadcast_ss(ak + 1), c10 = _mm256_fmadd_ps(x, b0, c10), c11 = _mm256_fmadd_ps(x, b1, c11); \
		x = _mm256_broadcast_ss(ak + 2), c20 = _mm256_fmadd_ps(x, b0, c20), c21 = _mm256_fmadd_ps(x, b1, c21); \
		x = _mm256_broadcast_ss(ak + 3), c30 = _mm256_fmadd_ps(x, b0, c30), c31 = _mm256_fmadd_ps(x, b1, c31); \
		x = _mm256_broadcast_ss(ak + 4), c40 = _mm256_fmadd_ps(x, b0, c40), c41 = _mm256_fmadd_ps(x, b1, c41); \
		x = _mm256_broadcast_ss(ak + 5), c50 = _mm256_fmadd_ps(x, b0, c50), c51 = _mm256_fmadd_ps(x, b1, c51); \
	} while (0)

/* One pass over the slivers into the 6×16 tile at c (accumulated, as a later K-block does). */
__attribute__((noinline)) static void ukr_6x16(const float *a, const float *b, float *c)
{
	__m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
	__m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
	for (int k = 0; k < KC; k += 4) {
		STEP(k);
		STEP(k + 1);
		STEP(k + 2);
		STEP(k + 3);
	}
	__m256 acc[MR * 2] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51};
	for (int i = 0; i < MR * 2; i++)
		_mm256_storeu_ps(c + 8 * i, _mm256_add_ps(_mm256_loadu_ps(c + 8 * i), acc[i]));
}

int main(int argc, char **argv)
{
	long iters = 1000, reps = 200;
	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && strcmp(argv[i], "--iters") == 0)
			iters = probe_parse_count("ukr_probe", argv[++i], "iteration count");
		else if (i + 1 < argc && strcmp(argv[i], "--reps") == 0)
			reps = probe_parse_count("ukr_probe", argv[++i], "repetition count");
		else {
			fprintf(stderr, "usage: ukr_probe [--iters N] [--reps N]\n");
			return 2;
		}
	}
	__builtin_cpu_init();
	if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
		fprintf(stderr, "ukr_probe: the CPU lacks AVX2+FMA\n");
		return 1;
	}
	float *a = aligned_alloc(64, sizeof(float) * MR * KC), *b = aligned_alloc(64, sizeof(float) * KC * NR);
	float *c = aligned_alloc(64, sizeof(float) * MR * NR);
	double *ms = malloc(sizeof(double) * (size_t)reps);
	if (!a || !b || !c || !ms) {
		fprintf(stderr, "ukr_probe: out of memory\n");
		return 1;
	}
	/* Small values that neither overflow nor go denormal over many passes. */
	for (int i = 0; i < MR * KC; i++)
		a[i] = 1e-3f * (float)(i % 7 + 1);
	for (int i = 0; i < KC * NR; i++)
		b[i] = 1e-3f * (float)(i % 5 + 1);
	memset(c, 0, sizeof(float) * MR * NR);
	for (double t0 = probe_now_s(); probe_now_s() - t0 < 0.05;) /* warm-up */
		ukr_6x16(a, b, c);
	for (long r = 0; r < reps; r++) {
		double t0 = probe_now_s();
		for (long i = 0; i < iters; i++)
			ukr_6x16(a, b, c);
		ms[r] = (probe_now_s() - t0) * 1e3;
	}
	double med = probe_median(ms, reps); /* sorts ms: ms[0] is the fastest */
	double flops = 2.0 * MR * NR * KC * (double)iters;
	printf("gflops %.2f median %.2f\n", flops / ms[0] * 1e-6, flops / med * 1e-6);
	printf("rep_ms min %.4f median %.4f\n", ms[0], med);
	double checksum = 0;
	for (int i = 0; i < MR * NR; i++)
		checksum += c[i];
	printf("checksum %g\n", checksum);
	free(a);
	free(b);
	free(c);
	free(ms);
	return 0;
}
