/* cli.h — what the `flowc` command line needs from the library, one section per file:
 *
 * load.c   opens a model by its content (ONNX protobuf or IR text), applies the import limits and
 *          --bind to text input too, and splits text on `// -----` lines (--split-input-file).
 * info.c   `flowc info`: inputs, outputs, op histogram, parameters, FLOPs as one aligned block.
 * dot.c    `--emit dot`: the graph for Graphviz.
 *
 * Everything here returns a status and fills an FcDiag; only compiler/main.c prints errors and exits.
 */
#ifndef FLOWC_CLI_H
#define FLOWC_CLI_H

#include <stdio.h>

#include "ir.h"
#include "onnx.h"

/* ---- load.c -------------------------------------------------------------------------------------- */

typedef enum FcModelFormat {
  FC_FORMAT_ONNX, /* protobuf ModelProto */
  FC_FORMAT_TEXT, /* the IR's MLIR text form */
} FcModelFormat;

const char *fc_model_format_name(FcModelFormat f); /* "onnx", "ir text" */

/* True when `text` is the IR text form: after whitespace and `//` comment lines it starts with `module`
 * or `"builtin.module"`. */
bool fc_looks_like_ir_text(const char *text, size_t len);

/* Decides the format of `path` from its first significant bytes (streamed, so a binary model is not read
 * twice); a file that does not look like text but is named *.mlir is text, so the parser reports it. */
FcStatus fc_model_format_of(const char *path, FcModelFormat *out, FcDiag *diag);

/* Reads a whole regular file (at most max_bytes) into a malloc'd, NUL-terminated buffer; free() it. */
FcStatus fc_read_file(const char *path, int64_t max_bytes, char **out, size_t *len, FcDiag *diag);

/* Parses IR text, then applies opts: the rank limit to every value and the bindings (each named graph
 * input becomes a constant read from its file; the types must match). bind_fn is not consulted: text
 * has no node that asks for a constant input. */
FcStatus fc_load_text(const char *text, size_t len, const char *source, const FcImportOptions *opts,
                      FcModule **out, FcDiag *diag);

/* Loads `path` in whichever format it is in. */
FcStatus fc_load_model(const char *path, const FcImportOptions *opts, FcModule **out, FcModelFormat *format,
                       FcDiag *diag);

/* One `// -----` separated part of a text file. `text` is a malloc'd copy preceded by as many newlines
 * as there are lines before the part, so the parser's line numbers are those of the whole file. */
typedef struct FcChunk {
  char *text;
  size_t len;
  int first_line; /* 1-based line of the part's first line in the file */
} FcChunk;

/* Splits at lines that are exactly `// -----` (trailing spaces allowed). Returns the number of chunks
 * (>= 1) and a malloc'd array in *out; free with fc_chunks_free. */
int fc_split_input(const char *text, size_t len, FcChunk **out);
void fc_chunks_free(FcChunk *chunks, int n);

/* ---- info.c -------------------------------------------------------------------------------------- */

/* Multiply-accumulates of one op: conv, conv_transpose and matmul count one per product term; every
 * other op 0. False when the count overflows int64. FLOPs are reported as 2 x MACs. */
bool fc_op_macs(const FcOp *op, int64_t *out);

/* Prints the `flowc info` block for a module loaded from `path` in `format`. FC_ERR_IO if writing fails. */
FcStatus fc_info_print(FILE *out, FcModule *m, const char *path, FcModelFormat format, FcDiag *diag);

/* ---- dot.c --------------------------------------------------------------------------------------- */

/* Above this many constants, constants are listed inside their users' labels instead of being drawn. */
#define FC_DOT_MAX_CONST_VERTICES 64

/* Writes the graph as a Graphviz digraph: one vertex per op (op name, node name), graph inputs and
 * outputs as distinct vertices, edges labelled with the tensor type. FC_ERR_IO if writing fails. */
FcStatus fc_dot_print(FILE *out, FcModule *m, FcDiag *diag);

#endif /* FLOWC_CLI_H */
