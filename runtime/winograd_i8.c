/* winograd_i8.c — the transformed weights of the integer Winograd conv (codegen/kernel_conv_i8_winograd.c),
 * made when the model first runs (frt_winograd_i8_weights).
 *
 * U = G'·w'·G'ᵀ takes (m+2)²/9 × 2 bytes a weight (4 for F(2×2, 3×3), 8 for F(4×4, 3×3)) where the weights
 * themselves take 1, so the artefact stores w' and the generated code calls this once, through its one-time
 * expansion (codegen/cg_weights_once.c), into a zeroed buffer. The integer G' rows, the layout and the bounds
 * (|U| <= 9·255 or 49·255: i16) are the kernel's; the kernel's comment explains them.
 */
#include <string.h>

#include "flowrt.h"

void frt_winograd_i8_weights(void *dst, const void *src, const int64_t *p) {
  static const int G2[4][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};
  static const int G4[6][3] = {{3, 0, 0}, {1, 1, 1}, {1, -1, 1}, {1, 2, 4}, {1, -2, 4}, {0, 0, 3}};
  const int(*G)[3] = p[FRT_WINO_M] == 4 ? G4 : G2;
  int A = (int)p[FRT_WINO_M] + 2;
  int64_t M = p[FRT_WINO_OUT_CH], C = p[FRT_WINO_IN_CH], MT = p[FRT_WINO_MT], CP = p[FRT_WINO_CP];
  int64_t MR = p[FRT_WINO_MR], wb = p[FRT_WINO_W_BYTES];
  const unsigned char *w = src;
  int16_t *u = dst;
  for (int64_t m = 0; m < M; m++)
    for (int64_t ch = 0; ch < C; ch++) {
      int g[9], tmp[6][3];
      for (int i = 0; i < 9; i++) {
        int64_t at = (m * C + ch) * 9 + i;
        int16_t v16 = 0;
        if (wb == 2) memcpy(&v16, w + 2 * at, 2);
        g[i] = wb == 2 ? v16 : (int8_t)w[at];
      }
      for (int a = 0; a < A; a++)
        for (int j = 0; j < 3; j++) tmp[a][j] = G[a][0] * g[j] + G[a][1] * g[3 + j] + G[a][2] * g[6 + j];
      for (int a = 0; a < A; a++)
        for (int b = 0; b < A; b++) {
          int v = G[b][0] * tmp[a][0] + G[b][1] * tmp[a][1] + G[b][2] * tmp[a][2];
          int64_t at = ((((int64_t)(a * A + b) * MT + m / MR) * CP + ch / 2) * MR + m % MR) * 2 + ch % 2;
          u[at] = (int16_t)v;
        }
    }
  /* the corrections (i32) and multipliers (f32) of M channels follow the weights; the kernel reads Mp of each */
  const unsigned char *tail = w + M * C * 9 * wb;
  unsigned char *out = (unsigned char *)dst + p[FRT_WINO_U_BYTES];
  memcpy(out, tail, (size_t)M * 4);
  memcpy(out + 4 * p[FRT_WINO_MP], tail + 4 * M, (size_t)M * 4);
}
