/* infer_internal.h — helpers shared by ir/infer*.c (shape/dtype inference hooks).
 *
 * Hooks are called both by fc_op_infer (which has checked counts already) and directly by the builder
 * and the parser, so every hook starts with fc_ih_counts and never trusts an attribute to be present,
 * of the right kind, or in range. Messages start with the op's mnemonic ("conv: ..."); the caller adds
 * the node prefix.
 */
#ifndef FLOWC_INFER_INTERNAL_H
#define FLOWC_INFER_INTERNAL_H

#include "ir.h"
#include "sample_modes.h"

#define FC_ITRY(expr)                \
  do {                               \
    FcStatus st_ = (expr);           \
    if (st_ != FC_OK) return st_;    \
  } while (0)

/* Records "<mnemonic>: <msg>" as FC_ERR_INPUT and returns it. */
FcStatus fc_ih_fail(const FcOp *op, FcDiag *diag, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Operand/result counts against the op table; every operand must be attached to a value. */
FcStatus fc_ih_counts(const FcOp *op, FcDiag *diag);

/* Required attributes: missing or of another kind is an error. */
FcStatus fc_ih_int(const FcOp *op, FcAttrName n, int64_t *out, FcDiag *diag);
FcStatus fc_ih_flag(const FcOp *op, FcAttrName n, int64_t *out, FcDiag *diag); /* int, 0 or 1 */
FcStatus fc_ih_ints(const FcOp *op, FcAttrName n, const int64_t **v, int *count, FcDiag *diag);
/* Attribute n as a plain element type. */
FcStatus fc_ih_dtype(const FcOp *op, FcAttrName n, FcDtype *out, FcDiag *diag);
/* The `shape` attribute: dims >= 0 whose product fits in int64. */
FcStatus fc_ih_shape(const FcOp *op, const int64_t **shape, int *rank, FcDiag *diag);
FcStatus fc_ih_floats(const FcOp *op, FcAttrName n, const float **v, int *count, FcDiag *diag);
FcStatus fc_ih_float(const FcOp *op, FcAttrName n, float *out, FcDiag *diag);
FcStatus fc_ih_str(const FcOp *op, FcAttrName n, const char **out, FcDiag *diag);
/* A required program attribute (ew_program.h) that keeps fc_ew_program_check's rules for this op. */
FcStatus fc_ih_program(const FcOp *op, FcAttrName n, bool allow_x, FcArena *arena, const FcEwProgram **out,
                       FcDiag *diag);
/* A required string attribute that must be one of the NULL-terminated `choices`. */
FcStatus fc_ih_choice(const FcOp *op, FcAttrName n, const char *const *choices, const char **out, FcDiag *diag);
/* A required string attribute holding a mode of list l (ir/sample_modes.def). */
FcStatus fc_ih_mode(const FcOp *op, FcModeList l, FcMode *out, FcDiag *diag);
/* A required int attribute `n` with 0 <= value < rank. */
FcStatus fc_ih_axis(const FcOp *op, FcAttrName n, int rank, int64_t *axis, FcDiag *diag);

/* Operand i's type (the operand is attached: fc_ih_counts checked it). */
static inline const FcType *fc_ih_in(const FcOp *op, int i) { return &op->operands[i].value->type; }
/* Sets result i to a type whose dims are copied into the arena. */
void fc_ih_set(FcOp *op, int i, FcArena *arena, FcDtype dt, int rank, const int64_t *dims);
/* Scratch dims in the arena (never NULL, even for rank 0). */
int64_t *fc_ih_dims(FcArena *arena, int rank);

/* The quantised forms of conv (w_axis 0) and matmul (w_axis 1), ops.def: *quantised says whether the op has
 * one (a quantised operand or a qtype); if so, its operands, bias dtype and qtype are checked here. */
FcStatus fc_ih_quant_compute(const FcOp *op, int w_axis, bool *quantised, FcDiag *diag);
/* Result 0 of a quantised conv/matmul: the shape, element type qtype; the bias must have `channels`. */
FcStatus fc_ih_set_quant_compute(FcOp *op, FcArena *arena, int64_t channels, int rank, const int64_t *dims,
                                 FcDiag *diag);

/* Result 0 of a quantised reduce_mean (ops.def: a qtype or a quantised operand): checks the operand, the
 * qtype and that the mean is of at least one element (`count`), and sets the reduced shape. */
FcStatus fc_ih_set_quant_mean(FcOp *op, FcArena *arena, int64_t count, int rank, const int64_t *dims, FcDiag *diag);

/* Adds possibly negative sizes; false on overflow. */
bool fc_ih_add_signed(int64_t a, int64_t b, int64_t *out);

#endif /* FLOWC_INFER_INTERNAL_H */
