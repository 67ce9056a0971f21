/* int8_peak.c — measures this machine's u8 x s8 integer multiply-accumulate peak, in GOP/s, on 1..N threads.
 *
 * The int8 counterpart of fma_peak.c, for bench/int8.py's "% of int8 peak" column. An op is half a
 * multiply-accumulate of a u8 x s8 pair (2 ops per MAC, as 2 FLOPs per FMA lane), so the figures compare
 * directly with the f32 FMA peak. Two kernels, both on 256-bit registers (the AVX2 code path of
 * flowc's integer GEMM):
 *   avx2  the sequence integer GEMMs use without VNNI: vpmaddubsw (32 u8 x s8 products, adjacent pairs
 *         summed to i16) + vpmaddwd against ones (pairs of i16 summed to i32) + vpaddd into the accumulator:
 *         3 instructions per 32 MACs, of which the two multiplies share the vector multiply ports;
 *   vnni  vpdpbusd (AVX512-VNNI on ymm, with AVX512VL): 32 MACs into 8 i32 lanes in one instruction; run
 *         only when the CPU has it ("vnni unsupported" otherwise);
 *   amx   tdpbusd on AMX tiles (Sapphire Rapids and later): 16 x 16 x 64 = 16384 MACs per instruction into a
 *         16 x 16 i32 tile, 4 accumulator tiles from 2 A and 2 B tiles as flowc's tile kernels block them
 *         (codegen/cg_amx.h); run only when the CPU has AMX-INT8 and Linux grants the tile state
 *         ("amx unsupported" otherwise).
 * CHAINS independent accumulators, UNROLL steps per loop iteration in one inline-asm block each, so the
 * compiler can neither merge nor drop chains; every chain starts from a different value and the results
 * are folded into a printed checksum. Best of --reps repetitions (the peak is the fastest the core goes),
 * the median beside it; threads start together at a barrier and the rate is the total over the slowest.
 *
 * Build: cc -O2 -mavx2 -pthread bench/int8_peak.c -o int8_peak (the VNNI kernel is compiled through a
 * target attribute). Usage: int8_peak [--threads N] [--iters N] [--reps N]; prints one line per kernel,
 * "kernel avx2 threads N gops G per_core G median M", and "checksum X".
 */
#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_util.h"

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define CHAINS 6 /* avx2: 6 accumulators + 6 temporaries + 3 operands fit the 16 ymm registers */
#define UNROLL 4
#define MACS_PER_STEP 32 /* u8 x s8 products per 256-bit instruction group */

#define AVX2_STEP(i)                                                                                  \
	"vpmaddubsw %[b], %[a], %[t" #i "]\n\t"                                                       \
	"vpmaddwd %[ones], %[t" #i "], %[t" #i "]\n\t"                                                \
	"vpaddd %[t" #i "], %[v" #i "], %[v" #i "]\n\t"
#define AVX2_ROUND AVX2_STEP(0) AVX2_STEP(1) AVX2_STEP(2) AVX2_STEP(3) AVX2_STEP(4) AVX2_STEP(5)

__attribute__((noinline)) static int64_t madd_chains_avx2(long iters)
{
	__m256i v0 = _mm256_set1_epi32(0), v1 = _mm256_set1_epi32(1), v2 = _mm256_set1_epi32(2);
	__m256i v3 = _mm256_set1_epi32(3), v4 = _mm256_set1_epi32(4), v5 = _mm256_set1_epi32(5);
	__m256i t0, t1, t2, t3, t4, t5;
	const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
	for (long i = 0; i < iters; i++)
		__asm__ volatile(AVX2_ROUND AVX2_ROUND AVX2_ROUND AVX2_ROUND
				 : [v0] "+x"(v0), [v1] "+x"(v1), [v2] "+x"(v2), [v3] "+x"(v3), [v4] "+x"(v4),
				   [v5] "+x"(v5), [t0] "=&x"(t0), [t1] "=&x"(t1), [t2] "=&x"(t2), [t3] "=&x"(t3),
				   [t4] "=&x"(t4), [t5] "=&x"(t5)
				 : [a] "x"(a), [b] "x"(b), [ones] "x"(ones));
	__m256i s = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(v0, v1), _mm256_add_epi32(v2, v3)),
				     _mm256_add_epi32(v4, v5));
	int32_t lanes[8];
	_mm256_storeu_si256((__m256i *)lanes, s);
	int64_t sum = 0;
	for (int l = 0; l < 8; l++)
		sum += lanes[l];
	return sum;
}
_Static_assert(CHAINS == 6 && UNROLL == 4, "AVX2_ROUND spells out 6 chains, the asm block 4 rounds");

/* VNNI: 12 chains cover vpdpbusd's latency (5) times its throughput (2 a cycle). */
#define VNNI_CHAINS 12
#define DP(i) "vpdpbusd %[b], %[a], %[v" #i "]\n\t"
#define VNNI_ROUND DP(0) DP(1) DP(2) DP(3) DP(4) DP(5) DP(6) DP(7) DP(8) DP(9) DP(10) DP(11)

__attribute__((noinline, target("avx512vnni,avx512vl"))) static int64_t madd_chains_vnni(long iters)
{
	__m256i v0 = _mm256_set1_epi32(0), v1 = _mm256_set1_epi32(1), v2 = _mm256_set1_epi32(2);
	__m256i v3 = _mm256_set1_epi32(3), v4 = _mm256_set1_epi32(4), v5 = _mm256_set1_epi32(5);
	__m256i v6 = _mm256_set1_epi32(6), v7 = _mm256_set1_epi32(7), v8 = _mm256_set1_epi32(8);
	__m256i v9 = _mm256_set1_epi32(9), v10 = _mm256_set1_epi32(10), v11 = _mm256_set1_epi32(11);
	const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
	for (long i = 0; i < iters; i++)
		__asm__ volatile(VNNI_ROUND VNNI_ROUND VNNI_ROUND VNNI_ROUND
				 : [v0] "+v"(v0), [v1] "+v"(v1), [v2] "+v"(v2), [v3] "+v"(v3), [v4] "+v"(v4),
				   [v5] "+v"(v5), [v6] "+v"(v6), [v7] "+v"(v7), [v8] "+v"(v8), [v9] "+v"(v9),
				   [v10] "+v"(v10), [v11] "+v"(v11)
				 : [a] "v"(a), [b] "v"(b));
	__m256i s = _mm256_add_epi32(v0, v1);
	s = _mm256_add_epi32(s, _mm256_add_epi32(v2, v3));
	s = _mm256_add_epi32(s, _mm256_add_epi32(v4, v5));
	s = _mm256_add_epi32(s, _mm256_add_epi32(v6, v7));
	s = _mm256_add_epi32(s, _mm256_add_epi32(v8, v9));
	s = _mm256_add_epi32(s, _mm256_add_epi32(v10, v11));
	int32_t lanes[8];
	_mm256_storeu_si256((__m256i *)lanes, s);
	int64_t sum = 0;
	for (int l = 0; l < 8; l++)
		sum += lanes[l];
	return sum;
}

/* AMX: 4 accumulator tiles (tmm0-3) fed by A tiles tmm4, tmm5 and B tiles tmm6, tmm7, as flowc's 2 x 2 tile
 * blocks; each thread configures its own tiles and releases them after. */
#define AMX_CHAINS 4
#define AMX_MACS 16384 /* 16 x 16 x 64 */
#define AMX_ROUND                                                                                      \
	"tdpbusd %%tmm6, %%tmm4, %%tmm0\n\t"                                                            \
	"tdpbusd %%tmm7, %%tmm4, %%tmm1\n\t"                                                            \
	"tdpbusd %%tmm6, %%tmm5, %%tmm2\n\t"                                                            \
	"tdpbusd %%tmm7, %%tmm5, %%tmm3\n\t"

struct tile_config {
	uint8_t palette, start_row, reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
};

__attribute__((noinline, target("amx-tile,amx-int8"))) static int64_t madd_chains_amx(long iters)
{
	struct tile_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.palette = 1;
	for (int t = 0; t < 8; t++) {
		cfg.colsb[t] = 64;
		cfg.rows[t] = 16;
	}
	static int8_t a[1024], b[1024];
	for (int i = 0; i < 1024; i++) {
		a[i] = (int8_t)(i % 7 + 1);
		b[i] = (int8_t)(i % 5 - 2);
	}
	_tile_loadconfig(&cfg);
	_tile_zero(0);
	_tile_zero(1);
	_tile_zero(2);
	_tile_zero(3);
	_tile_loadd(4, a, 64);
	_tile_loadd(5, b, 64);
	_tile_loadd(6, b, 64);
	_tile_loadd(7, a, 64);
	for (long i = 0; i < iters; i++)
		__asm__ volatile(AMX_ROUND AMX_ROUND AMX_ROUND AMX_ROUND ::: "memory");
	static _Thread_local int32_t c[4][256];
	_tile_stored(0, c[0], 64);
	_tile_stored(1, c[1], 64);
	_tile_stored(2, c[2], 64);
	_tile_stored(3, c[3], 64);
	_tile_release();
	int64_t sum = 0;
	for (int t = 0; t < 4; t++)
		for (int l = 0; l < 256; l++)
			sum += c[t][l];
	return sum;
}

/* Whether this CPU has AMX-INT8 (CPUID leaf 7, EDX bits 24 and 25) and Linux lets the process use the tile
 * data (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), as flowc's runtime asks (runtime/cpu.c). */
static int amx_usable(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d >> 24 & 1) || !(d >> 25 & 1))
		return 0;
#if defined(__linux__) && defined(SYS_arch_prctl)
	return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
	return 0;
#endif
}

struct probe {
	int64_t (*kernel)(long iters);
	long iters;
	pthread_barrier_t *barrier;
	double seconds;
	int64_t checksum;
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

/* Best and median GOP/s of `kernel` over reps repetitions on `threads` threads; adds to *checksum.
 * Returns 0, or 1 when a thread cannot be started. */
static int measure(int64_t (*kernel)(long), long chains, double macs_per_step, long threads, long iters, long reps,
		   double *best, double *median, int64_t *checksum)
{
	struct probe *probes = calloc((size_t)threads, sizeof *probes);
	pthread_t *tids = calloc((size_t)threads, sizeof *tids);
	double *rate = malloc(sizeof(double) * (size_t)reps);
	if (!probes || !tids || !rate) {
		fprintf(stderr, "int8_peak: out of memory\n");
		return 1;
	}
	pthread_barrier_t barrier;
	pthread_barrier_init(&barrier, NULL, (unsigned)threads);
	for (double t0 = probe_now_s(); probe_now_s() - t0 < 0.1;) /* warm-up: the core's steady clock */
		*checksum += kernel(iters);
	*best = 0;
	for (long r = 0; r < reps; r++) {
		for (long t = 0; t < threads; t++) {
			probes[t] = (struct probe){kernel, iters, &barrier, 0, 0};
			if (t > 0 && pthread_create(&tids[t], NULL, probe_thread, &probes[t]) != 0) {
				fprintf(stderr, "int8_peak: cannot start a thread\n");
				return 1;
			}
		}
		probe_thread(&probes[0]);
		double slowest = probes[0].seconds;
		*checksum += probes[0].checksum;
		for (long t = 1; t < threads; t++) {
			pthread_join(tids[t], NULL);
			if (probes[t].seconds > slowest)
				slowest = probes[t].seconds;
			*checksum += probes[t].checksum;
		}
		double ops = 2.0 * macs_per_step * (double)chains * UNROLL * (double)iters * (double)threads;
		rate[r] = ops / slowest * 1e-9;
		if (rate[r] > *best)
			*best = rate[r];
	}
	pthread_barrier_destroy(&barrier);
	*median = probe_median(rate, reps);
	free(rate);
	free(probes);
	free(tids);
	return 0;
}

int main(int argc, char **argv)
{
	long threads = 1, iters = 100000, reps = 200;
	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && strcmp(argv[i], "--threads") == 0)
			threads = probe_parse_count("int8_peak", argv[++i], "thread count");
		else if (i + 1 < argc && strcmp(argv[i], "--iters") == 0)
			iters = probe_parse_count("int8_peak", argv[++i], "iteration count");
		else if (i + 1 < argc && strcmp(argv[i], "--reps") == 0)
			reps = probe_parse_count("int8_peak", argv[++i], "repetition count");
		else {
			fprintf(stderr, "usage: int8_peak [--threads N] [--iters N] [--reps N]\n");
			return 2;
		}
	}
	if (threads > 1024) {
		fprintf(stderr, "int8_peak: at most 1024 threads\n");
		return 2;
	}
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx2")) {
		fprintf(stderr, "int8_peak: the CPU has no AVX2\n");
		return 1;
	}
	int64_t checksum = 0;
	double best, median;
	if (measure(madd_chains_avx2, CHAINS, MACS_PER_STEP, threads, iters, reps, &best, &median, &checksum))
		return 1;
	printf("kernel avx2 threads %ld gops %.2f per_core %.2f median %.2f\n", threads, best,
	       best / (double)threads, median);
	if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl")) {
		if (measure(madd_chains_vnni, VNNI_CHAINS, MACS_PER_STEP, threads, iters, reps, &best, &median, &checksum))
			return 1;
		printf("kernel vnni threads %ld gops %.2f per_core %.2f median %.2f\n", threads, best,
		       best / (double)threads, median);
	} else {
		printf("kernel vnni unsupported\n");
	}
	if (amx_usable()) {
		/* a tile instruction takes ~16 cycles: fewer iterations for the same time */
		if (measure(madd_chains_amx, AMX_CHAINS, AMX_MACS, threads, iters / 64 + 1, reps, &best, &median, &checksum))
			return 1;
		printf("kernel amx threads %ld gops %.2f per_core %.2f median %.2f\n", threads, best,
		       best / (double)threads, median);
	} else {
		printf("kernel amx unsupported\n");
	}
	printf("checksum %lld\n", (long long)checksum);
	return 0;
}
