/* ew_program.h — small element-wise programs: the epilogues fused into conv and matmul
 * (`epilogue` attribute) and the bodies of flow.fused ops (`program` attribute).
 *
 * Text form (what the IR prints; readable in --print-after dumps and stable across op-enum changes):
 *     program := step (';' ' '? step)*
 *     step    := mnemonic (' ' ref)*          mnemonic of an FC_OPF_ELEMENTWISE op without attributes
 *     ref     := 'x'                          the op's own computed value (conv/matmul: the product,
 *                                             plus conv's bias); not allowed in flow.fused
 *              | 'o' N                        operand N of the op (broadcast to the result shape)
 *              | 's' N                        the value of step N (N < the current step)
 * The value of the last step is the op's result. Example (a ResNet block's tail fused into its conv):
 *     flow.conv(%x, %w, %b, %residual) {epilogue = "add x o3; relu s0", ...}
 * Every step's operands and result have the result's dtype (ops that change the dtype, comparisons and
 * casts, are never fused); the program is evaluated element by element in the compute type.
 *
 * A program is parsed once, where its text enters the IR (the IR parser, for an attribute whose schema
 * kind is `program`), and kept on the op as an FC_AK_PROGRAM attribute; everything after that reads the
 * structure, and the printer writes it back as the text above. The parser checks what the text alone
 * decides: known element-wise mnemonics with the right arity, references spelled right, step references
 * earlier than their step, 1..FC_EW_MAX_STEPS steps. What depends on the op (operand indices below its
 * operand count, 'x' only where the op has a value of its own) is fc_ew_program_check's, which the ops'
 * inference (so the verifier) runs.
 */
#ifndef FLOWC_IR_EW_PROGRAM_H
#define FLOWC_IR_EW_PROGRAM_H

#include "ir.h"

#define FC_EW_MAX_STEPS 64
#define FC_EW_MAX_ARGS 3

enum {
  FC_EW_REF_X = -1, /* the op's own value ('x') */
};
/* Step references: FC_EW_REF_X, an operand index (>= 0), or FC_EW_STEP_REF(i) for step i. */
#define FC_EW_STEP_REF(i) (-2 - (i))
#define FC_EW_IS_STEP_REF(r) ((r) <= -2)
#define FC_EW_STEP_OF(r) (-2 - (r))

typedef struct FcEwStep {
  FcOpKind kind;
  int n_args;
  int32_t args[FC_EW_MAX_ARGS];
} FcEwStep;

typedef struct FcEwProgram {
  int n_steps;
  FcEwStep steps[FC_EW_MAX_STEPS];
} FcEwProgram;

/* The longest text a program formats to (64 steps of a mnemonic and up to 3 references). */
#define FC_EW_TEXT_MAX (16 + FC_EW_MAX_STEPS * 64)

/* Parses program text into *out. NULL on success, else what is wrong ("bad reference", ...), for a
 * message that the caller places (a line and column, or the node). */
const char *fc_ew_program_parse(const char *text, FcEwProgram *out);
/* The op-dependent rules: operand references below n_operands, 'x' only when allow_x, at least one
 * step. NULL when p keeps them, else what is wrong (worded as fc_ew_program_parse words it). */
const char *fc_ew_program_check(const FcEwProgram *p, int n_operands, bool allow_x);
/* Same steps, kinds and references. */
bool fc_ew_program_equal(const FcEwProgram *a, const FcEwProgram *b);
/* True when steps i and i + 1 compute SiLU, a · sigmoid(a) (a mul of step i's sigmoid by the sigmoid's own
 * argument, in either order), and no later step reads step i: kernels then compute the two as one. */
bool fc_ew_is_silu_pair(const FcEwProgram *p, int i);
/* Writes the text form of p into buf (cap bytes, at least FC_EW_TEXT_MAX for any program). */
void fc_ew_program_print(const FcEwProgram *p, char *buf, size_t cap);
/* The text form in `arena`. */
const char *fc_ew_program_format(const FcEwProgram *p, FcArena *arena);
/* Reference evaluation (for the eval hooks and constant folding): runs the program over the result
 * type `rt`, with x (NULL when the program has no 'x') and the op's constant operands `in` (indexed by
 * operand number, broadcast to rt), writing a new tensor of type rt in `arena` to *out. Uses the same
 * per-element semantics as the element-wise evaluators (ir/eval_elementwise.c). */
FcStatus fc_ew_program_eval(const FcOp *op, const FcEwProgram *p, const FcType *rt, const FcTensor *x,
                            const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag);
/* t converted as flow.cast converts it to `to` (t itself when it is `to` already), new tensors in `arena`;
 * op names errors. */
FcStatus fc_ew_cast_to(const FcOp *op, const FcTensor *t, FcDtype to, const FcTensor **out, FcArena *arena,
                       FcDiag *diag);

#endif /* FLOWC_IR_EW_PROGRAM_H */
