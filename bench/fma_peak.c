/* fma_peak.c — measures this machine's f32 fused multiply-add peak, in GFLOP/s, on 1..N threads.
 *
 * Each thread runs CHAINS independent accumulator chains, acc_i = acc_i * m + a, over full vector
 * registers (8 floats with AVX2's ymm, 16 with AVX-512's zmm, picked at run time through
 * __builtin_cpu_supports). CHAINS = 12 covers the FMA latency × throughput product of current x86 cores
 * (Zen 3: 4 cycles × 2 pipes = 8 chains in flight; Intel: 4 × 2), so the loop is bound by the FMA ports
 * and not by the dependency of one chain on itself. Every chain starts from a DIFFERENT value: with equal
 * start values the compiler sees identical chains and computes one of them for all (the probe would then
 * count FLOPs it never ran and overstate the peak). m = 1 - 2^-12 and a keep the values bounded and away
 * from denormals. The results are folded into a checksum that is printed, so no chain is dead code.
 * bench/run.py disassembles the binary and checks that the loop body holds CHAINS × UNROLL FMAs on
 * distinct registers.
 *
 * FLOPs = 2 per lane per FMA. The result is the best of --reps repetitions of --iters iterations (best,
 * not mean: the peak is the fastest the core can go; slower runs are interference). A repetition is short
 * by default (about 1.5 ms at 100 GFLOP/s, under a scheduler time slice) and there are many, so on a
 * machine shared with other jobs some repetitions still run alone on their cores. With N threads the
 * threads start together at a barrier, and the rate is the total FLOPs over the slowest thread's time.
 *
 * Build: cc -O2 -mavx2 -mfma -pthread bench/fma_peak.c -o fma_peak (the AVX-512 kernel is compiled through
 * a target attribute, so no -mavx512f is needed and the binary runs on AVX2-only machines).
 * Usage: fma_peak [--threads N] [--iters N] [--reps N] [--ymm]; --ymm measures the AVX2 kernel even where the
 * CPU has AVX-512 (the float peak of an AVX2-only build: bench/int8.py's like-for-like ratio for AVX2's int8
 * sequence); prints "isa ...", "threads N gflops G per_core G
 * median M" (M: the median repetition's rate, for comparisons with other timings of the same rounds) and
 * "checksum X".
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe_util.h"

#define CHAINS 12
#define UNROLL 4

/* The chains live in named variables v0..v11 and each step is one inline-asm block of CHAINS FMAs
 * (vfmadd213ps: v = v * m + a), so the compiler can neither keep them in memory (gcc -O2 does not unroll
 * a loop over an array of vectors and spills it), nor merge chains, nor drop one. */
#define CHAIN_LIST(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define FMA_INSN(i) "vfmadd213ps %[a], %[m], %[v" #i "]\n\t"
#define ASM_OPERAND(i) [v##i] "+" REG(v##i),
#define DECLARE(i) VEC v##i = SET1(1.0f + 0.125f * (float)(i)); /* a different start per chain */
#define FOLD(i) s = ADD(s, v##i);
#define FMA_STEP                                                                              \
	__asm__ volatile(CHAIN_LIST(FMA_INSN) CHAIN_LIST(FMA_INSN) CHAIN_LIST(FMA_INSN)         \
				 CHAIN_LIST(FMA_INSN)                                         \
			 : CHAIN_LIST(ASM_OPERAND)[m] "+" REG(m) /* in-out: ends the list */ \
			 : [a] REG(a))
_Static_assert(CHAINS == 12 && UNROLL == 4, "CHAIN_LIST and FMA_STEP spell out 12 chains, 4 steps");

/* The AVX2 kernel: iters × UNROLL × CHAINS ymm FMAs. Returns the sum of all lanes (the checksum). */
#define VEC __m256
#define SET1 _mm256_set1_ps
#define ADD _mm256_add_ps
#define REG(x) "x"(x)
__attribute__((noinline)) static float fma_chains_avx2(long iters)
{
	CHAIN_LIST(DECLARE)
	VEC m = SET1(1.0f - 1.0f / 4096.0f);
	const VEC a = SET1(1.0f / 4096.0f);
	for (long i = 0; i < iters; i++)
		FMA_STEP;
	VEC s = SET1(0.0f);
	CHAIN_LIST(FOLD)
	float lanes[8];
	_mm256_storeu_ps(lanes, s);
	float sum = 0;
	for (int l = 0; l < 8; l++)
		sum += lanes[l];
	return sum;
}
#undef VEC
#undef SET1
#undef ADD
#undef REG

/* The AVX-512 kernel, compiled for avx512f only; called only when the CPU reports it. */
#define VEC __m512
#define SET1 _mm512_set1_ps
#define ADD _mm512_add_ps
#define REG(x) "v"(x)
__attribute__((noinline, target("avx512f"))) static float fma_chains_avx512(long iters)
{
	CHAIN_LIST(DECLARE)
	VEC m = SET1(1.0f - 1.0f / 4096.0f);
	const VEC a = SET1(1.0f / 4096.0f);
	for (long i = 0; i < iters; i++)
		FMA_STEP;
	VEC s = SET1(0.0f);
	CHAIN_LIST(FOLD)
	return _mm512_reduce_add_ps(s);
}
#undef VEC
#undef SET1
#undef ADD
#undef REG

struct probe {
	int lanes;
	float (*kernel)(long iters);
	long iters;
	pthread_barrier_t *barrier;
	double seconds;
	float checksum;
};

static void *probe_thread(void *arg)
{
	struct probe *p = arg;
	pthread_barrier_wait(p->barrier);
	double t0 = probe_now_s();
	p->checksum = p->kernel(p->iters);
	p->seconds = probe_now_s() - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = 1, iters = 200000, reps = 200;
	int ymm = 0;
	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && strcmp(argv[i], "--threads") == 0)
			threads = probe_parse_count("fma_peak", argv[++i], "thread count");
		else if (i + 1 < argc && strcmp(argv[i], "--iters") == 0)
			iters = probe_parse_count("fma_peak", argv[++i], "iteration count");
		else if (i + 1 < argc && strcmp(argv[i], "--reps") == 0)
			reps = probe_parse_count("fma_peak", argv[++i], "repetition count");
		else if (strcmp(argv[i], "--ymm") == 0)
			ymm = 1;
		else {
			fprintf(stderr, "usage: fma_peak [--threads N] [--iters N] [--reps N] [--ymm]\n");
			return 2;
		}
	}
	if (threads > 1024) {
		fprintf(stderr, "fma_peak: at most 1024 threads\n");
		return 2;
	}

	__builtin_cpu_init();
	int avx512 = !ymm && __builtin_cpu_supports("avx512f");
	if (!avx512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
		fprintf(stderr, "fma_peak: the CPU has neither AVX-512F nor AVX2+FMA\n");
		return 1;
	}
	int lanes = avx512 ? 16 : 8;
	float (*kernel)(long) = avx512 ? fma_chains_avx512 : fma_chains_avx2;
	printf("isa %s (%d f32 lanes, %d chains, unroll %d)\n", avx512 ? "avx512f" : "avx2+fma", lanes, CHAINS,
	       UNROLL);

	struct probe *probes = calloc((size_t)threads, sizeof *probes);
	pthread_t *tids = calloc((size_t)threads, sizeof *tids);
	if (!probes || !tids) {
		fprintf(stderr, "fma_peak: out of memory\n");
		return 1;
	}
	pthread_barrier_t barrier;
	pthread_barrier_init(&barrier, NULL, (unsigned)threads);
	double best = 0;
	float checksum = 0;
	double *rate = malloc(sizeof(double) * (size_t)reps);
	if (!rate) {
		fprintf(stderr, "fma_peak: out of memory\n");
		return 1;
	}
	/* Warm-up, about 0.1 s: lets the core reach its steady clock. */
	for (double t0 = probe_now_s(); probe_now_s() - t0 < 0.1;)
		checksum += kernel(iters);
	for (long r = 0; r < reps; r++) {
		for (long t = 0; t < threads; t++) {
			probes[t] = (struct probe){lanes, kernel, iters, &barrier, 0, 0};
			if (t > 0 && pthread_create(&tids[t], NULL, probe_thread, &probes[t]) != 0) {
				fprintf(stderr, "fma_peak: cannot start a thread\n");
				return 1;
			}
		}
		probe_thread(&probes[0]);
		double slowest = probes[0].seconds;
		checksum += probes[0].checksum;
		for (long t = 1; t < threads; t++) {
			pthread_join(tids[t], NULL);
			if (probes[t].seconds > slowest)
				slowest = probes[t].seconds;
			checksum += probes[t].checksum;
		}
		double flops = 2.0 * lanes * CHAINS * UNROLL * (double)iters * (double)threads;
		double gflops = flops / slowest * 1e-9;
		if (gflops > best)
			best = gflops;
		rate[r] = gflops;
	}
	pthread_barrier_destroy(&barrier);
	double median = probe_median(rate, reps);
	printf("threads %ld gflops %.2f per_core %.2f median %.2f\n", threads, best, best / (double)threads, median);
	printf("checksum %g\n", (double)checksum);
	free(rate);
	free(probes);
	free(tids);
	return 0;
}
