/* cg_epilogue.h — applying a conv's or matmul's fused epilogue (its bias and the `epilogue` program of
 * ir/ew_program.h) inside the kernel that computes the op, so the result is written once.
 *
 * The result is viewed as a matrix [rows, cols]: cols is the product of its last `col_dims` dims (conv:
 * the spatial dims, col_dims = rank - 2, so a row is one (batch, channel) plane; matmul: N, col_dims 1).
 * Each extra operand is classified at compile time against that view: constant along a row (a bias, a
 * scalar: loaded once per row and splat), contiguous along a row (a residual: loaded with the values'
 * shape), or general (gathered). Conv's own bias (operand 2) is the first thing added.
 */
#ifndef FLOWC_CG_EPILOGUE_H
#define FLOWC_CG_EPILOGUE_H

#include "codegen.h"

typedef struct FcCgEpilogue FcCgEpilogue;

/* Prepares k->op's epilogue over the [rows, cols] view (col_dims trailing dims). *out is NULL when there
 * is nothing to apply (no bias, no program). Errors (a step the dtype does not allow) name the op. */
FcStatus fc_cg_epilogue_init(FcKernel *k, int col_dims, FcCgEpilogue **out);

/* The epilogue of a quantised conv (cg_requant.h) over its f32 product: computed in f32 (the result may be
 * u8 or i8, its `to`), the i32 bias left to the accumulator, and a quotient by a constant kept a division,
 * as the evaluator computes it, so that its bytes are the evaluator's (fuse_epilogue already wrote the
 * quantisation's x / scale as a product). */
FcStatus fc_cg_epilogue_init_dequantised(FcKernel *k, FcCgEpilogue **out);

/* The epilogue of values v (an f32 scalar or vector of lanes values in the compute type) for result
 * elements (row, col .. col + lanes - 1), all in one row; row and col are i64. Returns the final values
 * (same shape as v). Emitted at the builder's position; loads extra operands from k->in. */
LLVMValueRef fc_cg_epilogue_value(FcKernel *k, FcCgEpilogue *e, LLVMValueRef v, LLVMValueRef row, LLVMValueRef col);

/* f32 SiLU, a · sigmoid(a), of scalar or vector a in one exp and one division (the steps
 * fc_ew_is_silu_pair finds): what epilogues and flow.fused compute for that pair of steps. */
LLVMValueRef fc_cg_silu(FcKernel *k, LLVMValueRef a);

/* In place over a run of the result buffer: dst[row * cols + c] for c in [c0, c0 + n) (i64 values),
 * emitted as a loop LLVM vectorises. */
void fc_cg_epilogue_row(FcKernel *k, FcCgEpilogue *e, LLVMValueRef dst, LLVMValueRef row, LLVMValueRef c0,
                        LLVMValueRef n);

#endif /* FLOWC_CG_EPILOGUE_H */
