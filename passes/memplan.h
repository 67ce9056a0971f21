/* memplan.h — the static memory plan: where every value of a graph lives while the model runs.
 *
 * An analysis, not a pass: fc_memplan reads the graph and fills an FcMemPlan; the IR is left as it is.
 * Codegen lays its kernels' pointers out from the plan and `flowc info` prints its totals. The rules
 * (what goes in the workspace, lifetimes, offsets, in-place and views) are described at the top of
 * passes/memplan.c.
 *
 * How codegen reads it: for a value v, `by_value[v->id].storage` says which buffer holds its bytes and
 * `offset` / `index` where; the run's pointers are
 *   FC_BUF_WORKSPACE  workspace + offset
 *   FC_BUF_INPUT      the caller's input buffer `index`
 *   FC_BUF_OUTPUT     the caller's output buffer `index`
 *   FC_BUF_CONSTANT   the constant's data in the binary (`index` numbers the constants in op order)
 * An op whose result has kind FC_BUF_ALIAS and `is_view` (a reshape) needs no code at all; one with
 * kind FC_BUF_ALIAS, !is_view and !is_part is an elementwise op (or a flow.fused loop) computed in place
 * over operand `alias_of`, which is legal because element i of every operand is read before element i of
 * the result is written. A result with `is_part` is a concat operand that its own op computes straight
 * into its slice of the concat result `alias_of`; the concat copies only its other operands
 * (fc_memplan_is_concat_part), and none at all when every operand is such a part.
 * Graph output i needs a copy after the run exactly when fc_memplan_output_is_copy says so (it is an
 * input, a constant, or a value that an earlier output position already returns); the copy's source is
 * the value's own storage. The caller's input and output buffers must not overlap one another: outputs
 * are written while inputs may still be read.
 */
#ifndef FLOWC_PASSES_MEMPLAN_H
#define FLOWC_PASSES_MEMPLAN_H

#include <stdio.h>

#include "ir.h"

#define FC_MEMPLAN_ALIGN 64 /* every workspace block starts at a multiple of this many bytes */

typedef enum FcBufKind {
  FC_BUF_NONE,      /* not a live value of the graph (an id left behind by an erased op) */
  FC_BUF_WORKSPACE, /* owns a block of the workspace at `offset` */
  FC_BUF_INPUT,     /* a graph input: the caller's input buffer `index` */
  FC_BUF_OUTPUT,    /* computed directly into the caller's output buffer `index` */
  FC_BUF_CONSTANT,  /* a constant: data in the binary */
  FC_BUF_ALIAS,     /* shares the bytes of value `alias_of` (a reshape view or an in-place result) */
} FcBufKind;

typedef struct FcBufAssign {
  FcBufKind kind;    /* how the value got its bytes */
  FcBufKind storage; /* where the bytes are: `kind`, or for an alias the kind of its root (never ALIAS) */
  int64_t offset;    /* storage WORKSPACE: byte offset in the workspace; storage OUTPUT: byte offset in the
                        output buffer (0 but for concat parts); 0 otherwise. Always a multiple of
                        FC_MEMPLAN_ALIGN */
  int index;         /* storage INPUT/OUTPUT: the input/output position; CONSTANT: the constant's ordinal
                        among the graph's CONSTANT ops in op order; -1 otherwise */
  uint32_t alias_of; /* kind ALIAS: the operand value whose buffer this value reuses, or for a part the
                        concat result it is computed into; else the own id */
  uint32_t root;     /* the value that owns the bytes: the end of the alias_of chain (the own id unless
                        kind is ALIAS) */
  bool is_view;      /* kind ALIAS: true for a reshape (no code runs), false for an in-place result */
  bool is_part;      /* kind ALIAS: a concat operand computed into bytes [at, at + size) of its root */
  int64_t at;        /* where the value's bytes start inside its root's: 0, but for a concat part (and
                        the views and in-place results of one) its slice's position */
  int64_t size;      /* the value's size in bytes (not rounded) */
  int first, last;   /* live range in op positions (0 = the graph's first op, ops in list order): the
                        defining op's position (-1 for a graph input) to the last user's position (the
                        RETURN's for graph outputs; `first` for a result nobody uses). For a root the
                        block is busy over the union of its aliases' ranges as well. */
} FcBufAssign;

typedef struct FcMemPlan {
  int64_t workspace_bytes; /* size of the one workspace the plan lays out (a multiple of FC_MEMPLAN_ALIGN) */
  int64_t naive_bytes;     /* what one buffer per intermediate value would take: the sum over every op
                              result that is neither a constant nor computed into an output buffer
                              (aliases included), each rounded up to FC_MEMPLAN_ALIGN */
  uint32_t n_values;       /* entries of by_value: graph->next_value_id */
  FcBufAssign *by_value;   /* indexed by FcValue.id; in the arena passed to fc_memplan */
  int n_ops;               /* ops in the graph (positions 0..n_ops-1; the RETURN is the last) */
  int n_workspace_values;  /* values of kind FC_BUF_WORKSPACE (block owners) */
  int n_aliases;           /* values of kind FC_BUF_ALIAS (views and in-place results) */
  int n_outputs_copied;    /* graph output positions that codegen fills with a copy after the run */
} FcMemPlan;

typedef struct FcMemPlanOptions {
  bool in_place;     /* an elementwise result may take over the buffer of an operand that dies there */
  bool reshape_view; /* a reshape result may share its operand's bytes */
  bool concat_parts; /* a concat operand may be computed straight into its slice of the result */
} FcMemPlanOptions;

void fc_memplan_options_default(FcMemPlanOptions *o); /* all on */

/* Plans module `m` (a verified graph). `opts` NULL: the defaults. The plan's arrays are allocated in
 * `arena`. FC_ERR_LIMIT when a size or the workspace overflows int64, FC_ERR_INPUT for a graph without
 * a RETURN, FC_ERR_INTERNAL for a malformed graph (a use by an op outside the graph). */
FcStatus fc_memplan(FcModule *m, const FcMemPlanOptions *opts, FcArena *arena, FcMemPlan *out, FcDiag *diag);

/* The same for one graph of the module: the function or a region, whose block arguments are its inputs
 * (FC_BUF_INPUT) and whose yield operands are its outputs (FC_BUF_OUTPUT). */
FcStatus fc_memplan_graph(FcGraph *g, const FcMemPlanOptions *opts, FcArena *arena, FcMemPlan *out, FcDiag *diag);

/* True when graph output `i` is not computed in place into output buffer i and codegen must copy it
 * there from the value's storage after the run. */
bool fc_memplan_output_is_copy(const FcModule *m, const FcMemPlan *p, int i);
bool fc_memplan_graph_output_is_copy(FcGraph *g, const FcMemPlan *p, int i);

/* True when operand `i` of concat `op` is a part of its result (computed there by its own op), so the
 * concat must not copy it. */
bool fc_memplan_is_concat_part(const FcMemPlan *p, const FcOp *op, int i);

/* True when `op` needs no code: a reshape view, or a concat all of whose operands are parts. */
bool fc_memplan_op_is_free(const FcMemPlan *p, const FcOp *op);

/* A debug dump: a header with the totals, then one line per value (graph inputs first, then op results
 * in op order): id, defining op and node name, size, where it lives, live range. */
void fc_memplan_print(FILE *out, const FcModule *m, const FcMemPlan *p);

#endif /* FLOWC_PASSES_MEMPLAN_H */
