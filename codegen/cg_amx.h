/* cg_amx.h — Intel AMX tiles (AMX-TILE + AMX-INT8, Sapphire Rapids and later) for the 8-bit GEMMs.
 *
 * A tile register holds up to 16 rows of 64 bytes. tdpb{us,su}d C += A · B takes A as rows of 64 bytes (16
 * groups of 4 consecutive k), B as 16 rows of 4-byte groups (row r = the r-th group of k, 16 columns x 4 k)
 * and C as rows of 16 i32: one instruction is 16 x 16 x 64 multiply-accumulates, about 14x what vpdpbusd
 * on one ymm register does in its time. The kernels' packings are built for it: a matmul's B panels hold
 * 16 columns' k-quads in 64-byte rows (kernel_matmul_i8.c), a conv's weights are 16-channel rows of 64 bytes
 * of k (kernel_conv_i8.c), the im2col block is k-quads of pixels; tiles are loaded from them in place.
 *
 * fc_amx_gemm emits one register-blocked product: na row tiles of A (up to 2) times nb column tiles of B
 * (up to 2) over `chunks` 64-byte chunks of k, with the na·nb accumulators in tile registers across the k
 * loop (LLVM's AMX lowering turns the <256 x i32> values the loop carries back into tiles and writes the
 * tile configuration), then stores the accumulators as rows of 16 i32 (64 bytes) into `c` for the caller's
 * requantising store. Every tile is a whole 16 x 64 bytes: LLVM configures the tile registers once per
 * function with one shape each, so tiles of other shapes (a last chunk of k, a last block of rows) would
 * need registers of their own beyond the 8 there are. Callers pad instead: packed weights with zero rows
 * and channels, and a partial A (the last chunk of a row that ends before 64 bytes, the last rows) from a
 * zero-padded copy (`a_last`).
 */
#ifndef FLOWC_CG_AMX_H
#define FLOWC_CG_AMX_H

#include "codegen.h"

typedef enum FcAmxDot {
  FC_AMX_BUSD, /* A u8 x B s8 (tdpbusd): a matmul's activations times its packed weights */
  FC_AMX_BSUD, /* A s8 x B u8 (tdpbsud): a conv's weights times its im2col block */
} FcAmxDot;

enum { FC_AMX_ROWS = 16, FC_AMX_ROW_BYTES = 64, FC_AMX_MAX_TILES = 2 };

typedef struct FcAmxOperand {
  LLVMValueRef base[FC_AMX_MAX_TILES]; /* i8 pointer to each tile's first row in the first chunk */
  int64_t stride;                      /* bytes from one row of a tile to the next */
  int64_t chunk_step;                  /* bytes from a tile in one 64-byte chunk of k to the same in the next */
} FcAmxOperand;

typedef struct FcAmxGemm {
  FcAmxDot dot;
  int na, nb;                    /* row tiles of A and column tiles of B (1 or 2 each) */
  FcAmxOperand a, b;
  int64_t chunks;                /* chunks of k: 16 groups of 4 k (64 bytes of an A row), at least 1 */
  LLVMValueRef a_last[FC_AMX_MAX_TILES]; /* when set: the last chunk's A tiles from here instead, */
  int64_t a_last_stride;         /* rows this far apart */
  LLVMValueRef c;                /* i32 out: tile (i, j) at byte ((i * nb + j) * 16) * 64, rows of 64 bytes */
} FcAmxGemm;

void fc_amx_gemm(FcKernel *k, const FcAmxGemm *g);

#endif /* FLOWC_CG_AMX_H */
