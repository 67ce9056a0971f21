/* gpu_simt_mma.c — the SIMT emulator's tensor cores: one warp's mma.sync.aligned.row.col with f32
 * accumulation, from the fragments its 32 lanes offer (gpu_simt.c collects them like a shuffle's values).
 *
 * The fragments are first gathered into whole matrices A [16 x K], B [K x 8] and C [16 x 8] through the PTX
 * ISA's fragment layouts (the tables for m16n8k16 .f16/.bf16 and m16n8k8 .tf32, restated in gpu_simt.h),
 * then D = A·B + C is computed plainly and scattered back through C's layout. Keeping the layout in the two
 * small index functions below (and nowhere else) is the point: a kernel that packs its registers in any
 * other order computes a different product here, as it would on a GPU.
 *
 * Inputs are decoded exactly (f16 with subnormals, bf16 as the top half of an f32, tf32 as an f32 whose low
 * 13 bits are dropped, as the hardware ignores them); products of such values are exact in double and the
 * sum is rounded to f32 once.
 */
#include <math.h>
#include <string.h>

#include "flowrt_internal.h"
#include "gpu_simt.h"

enum { MMA_M = 16, MMA_N = 8, MMA_KMAX = 16 };

static double f16_value(uint32_t h) {
  uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v;
  if (e == 0)
    v = ldexp((double)m, -24); /* subnormal */
  else if (e == 31)
    v = m ? NAN : INFINITY;
  else
    v = ldexp((double)(m | 0x400), (int)e - 25);
  return (h & 0x8000) ? -v : v;
}

static double f32_bits_value(uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* The value of the idx-th element (0 or 1) of a fragment register. */
static double element(int32_t kind, uint32_t reg, int idx) {
  if (kind == FRT_SIMT_MMA_TF32)
    return f32_bits_value(reg & 0xffffe000u);
  uint32_t half = idx ? reg >> 16 : reg & 0xffffu;
  return kind == FRT_SIMT_MMA_F16 ? f16_value(half) : f32_bits_value(half << 16);
}

/* Where element e of lane l's A fragment (e in [0, 8) for k16: register e/2, half e%2; [0, 4) for tf32:
 * register e) lies in A, and likewise for B (e in [0, 4) / [0, 2)). */
static void a_position(int32_t kind, int l, int e, int *row, int *col) {
  int g = l >> 2, t = l & 3;
  if (kind == FRT_SIMT_MMA_TF32) {
    *row = g + 8 * (e & 1);
    *col = t + 4 * (e >> 1);
  } else {
    int reg = e >> 1;
    *row = g + 8 * (reg & 1);
    *col = 2 * t + (e & 1) + 8 * (reg >> 1);
  }
}

static void b_position(int32_t kind, int l, int e, int *row, int *col) {
  int g = l >> 2, t = l & 3;
  *col = g;
  if (kind == FRT_SIMT_MMA_TF32)
    *row = t + 4 * e;
  else
    *row = 2 * t + (e & 1) + 8 * (e >> 1);
}

void frt_simt_warp_mma(int32_t kind, const uint32_t *const *a, const uint32_t *const *b, float *const *cd) {
  bool tf32 = kind == FRT_SIMT_MMA_TF32;
  int K = tf32 ? 8 : 16, per_reg = tf32 ? 1 : 2;
  double A[MMA_M][MMA_KMAX], B[MMA_KMAX][MMA_N];
  float C[MMA_M][MMA_N];
  for (int l = 0; l < FRT_SIMT_WARP; l++) {
    int r, c;
    for (int e = 0; e < 4 * per_reg; e++) {
      a_position(kind, l, e, &r, &c);
      A[r][c] = element(kind, a[l][e / per_reg], e % per_reg);
    }
    for (int e = 0; e < 2 * per_reg; e++) {
      b_position(kind, l, e, &r, &c);
      B[r][c] = element(kind, b[l][e / per_reg], e % per_reg);
    }
    int g = l >> 2, t = l & 3;
    for (int e = 0; e < 4; e++)
      C[g + 8 * (e >> 1)][2 * t + (e & 1)] = cd[l][e];
  }
  for (int i = 0; i < MMA_M; i++)
    for (int j = 0; j < MMA_N; j++) {
      double s = C[i][j];
      for (int k = 0; k < K; k++)
        s += A[i][k] * B[k][j];
      C[i][j] = (float)s;
    }
  for (int l = 0; l < FRT_SIMT_WARP; l++) {
    int g = l >> 2, t = l & 3;
    for (int e = 0; e < 4; e++)
      cd[l][e] = C[g + 8 * (e >> 1)][2 * t + (e & 1)];
  }
}
