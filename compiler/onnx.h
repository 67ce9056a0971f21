/* onnx.h — the ONNX frontend: one internal header for compiler/onnx_*.c and compiler/lower_*.c.
 *
 * onnx_load.c    reads a model file within limits (size, message nesting), unpacks it with protobuf-c,
 *                resolves external data safely, converts TensorProto to FcTensor, and reads the tensor
 *                files (.npy, TensorProto .pb) given to --bind.
 * onnx_import.c  walks the graph in order, maps ONNX value names to IR values, turns initializers and
 *                Constant nodes into CONSTANT ops, dispatches each node to its legaliser through the table
 *                in onnx_ops.def, and reports every unsupported op at once.
 * onnx_export.c  the other way (--emit onnx): core ops back to ONNX nodes, constants to initializers,
 *                quantised conv/matmul to QDQ node groups.
 * lower_*.c      legalisers: each turns one ONNX node into core IR ops through an FcBuilder
 *                (lower_control.c: Loop, Scan and If into region ops, their subgraphs imported by
 *                onnx_import.c).
 */
#ifndef FLOWC_ONNX_H
#define FLOWC_ONNX_H

#include "ir.h"
#include "onnx.pb-c.h"

/* ---- options ------------------------------------------------------------------------------------- */

#define FC_DEFAULT_MAX_FILE_BYTES ((int64_t)2 << 30) /* 2 GiB */
#define FC_DEFAULT_MAX_NESTING 64                    /* protobuf message nesting (subgraphs) */
/* The highest --max-nesting: protobuf-c unpacks nested messages recursively, and under ASan an 8 MiB stack
 * overflows at about 20,000 levels; 1,000 keeps a margin of 20 for smaller stacks and other callers. */
#define FC_MAX_NESTING_CAP 1000

typedef struct FcImportLimits {
  int64_t max_file_bytes; /* model file and each external-data file */
  int max_nesting;        /* depth of nested messages, checked on the wire before unpacking */
  int max_rank;           /* every tensor type */
} FcImportLimits;

/* A graph input fixed at compile time (--bind NAME=FILE, FILE .npy or TensorProto .pb). */
typedef struct FcBinding {
  const char *name;
  const char *path;
} FcBinding;

/* Asked lazily for a graph input that a node needs as a constant (a shape, axes, k, ...), when no
 * FcBinding names it. Return FC_OK with *out set (allocated in `arena`), FC_ERR_UNSUPPORTED when the
 * callback has no value for it (the importer then reports that the input must be bound), or another
 * status with a message in diag. */
typedef FcStatus (*FcBindFn)(void *ctx, const char *input_name, int input_index, FcArena *arena,
                             FcTensor **out, FcDiag *diag);

/* Asked for the type of a graph input whose ONNX type has symbolic or unknown dims, when neither --bind
 * nor --shape fixes it (`flowc run` answers with the type of the file it will feed that input). `index`
 * is the input's position among the compiled model's inputs. Return FC_OK with *out set (dims in
 * `arena`) and *source naming where it came from (the file, for messages), FC_ERR_UNSUPPORTED when there
 * is nothing to go by (the input is then reported as dynamic), or another status with a message in diag. */
typedef FcStatus (*FcShapeFn)(void *ctx, const char *input_name, int index, FcArena *arena, FcType *out,
                              const char **source, FcDiag *diag);

/* A static shape for a graph input whose ONNX type has symbolic or unknown dims (--shape NAME=1x3x224x224).
 * It must agree with every dim the model does fix. */
typedef struct FcInputShape {
  const char *name;
  int rank;
  const int64_t *dims;
} FcInputShape;

typedef struct FcImportOptions {
  FcImportLimits limits;
  const FcInputShape *shapes;
  int n_shapes;
  const FcBinding *bindings;
  int n_bindings;
  FcBindFn bind_fn;
  void *bind_ctx;
  FcShapeFn shape_fn; /* NULL: only --shape fixes dynamic dims */
  void *shape_ctx;
} FcImportOptions;

void fc_import_options_default(FcImportOptions *o);

/* Imports an ONNX model file into a new module. On failure *out is NULL and diag holds one line. */
FcStatus fc_onnx_import(const char *path, const FcImportOptions *opts, FcModule **out, FcDiag *diag);

/* ---- onnx_export.c ------------------------------------------------------------------------------- */

/* Writes the module as an ONNX model (opset 19; quantised conv/matmul in QDQ form) to `out`.
 * FC_ERR_UNSUPPORTED naming the first op that has no ONNX form; FC_ERR_IO if writing fails. */
FcStatus fc_onnx_export(FILE *out, FcModule *m, FcDiag *diag);
/* The pass list `list` without the passes whose results have no ONNX form (fuse_epilogue, layout,
 * fuse_elementwise) and without lower_quant (ONNX has quantize/dequantize), into buf; false if it does
 * not fit. */
bool fc_onnx_export_passes(const char *list, char *buf, size_t cap);

/* ---- onnx_load.c --------------------------------------------------------------------------------- */

/* Reads `path` (at most max_file_bytes), checks message nesting against max_nesting on the wire with
 * the protobuf-c descriptors, and unpacks. Free with fc_onnx_model_free. */
FcStatus fc_onnx_load_model(const char *path, const FcImportLimits *lim, Onnx__ModelProto **out, FcDiag *diag);
void fc_onnx_model_free(Onnx__ModelProto *m);

/* Opens `path` for reading if it is a regular file and returns its size; a directory, FIFO or device is
 * refused without blocking (a FIFO is opened O_NONBLOCK). `what` names the file in messages ("the model
 * file"). Close *fd with close(). */
FcStatus fc_open_regular(const char *path, const char *what, int *fd, int64_t *size, FcDiag *diag);

/* Reads a TensorProto .pb file within lim (file size, nesting) and unpacks it; free *out with
 * onnx__tensor_proto__free_unpacked. Messages name the file. */
FcStatus fc_onnx_load_tensor_proto(const char *path, const FcImportLimits *lim, Onnx__TensorProto **out,
                                   FcDiag *diag);

/* Converts a TensorProto (raw_data, typed fields, or external data relative to `model_dir`) to an
 * FcTensor in `arena`. Refuses external paths that are absolute, contain "..", or resolve (through
 * symlinks) outside model_dir; offsets/lengths beyond the file; sizes that disagree with the dims. */
FcStatus fc_onnx_tensor_to_fc(const Onnx__TensorProto *tp, const char *model_dir, const FcImportLimits *lim,
                              FcArena *arena, FcTensor **out, FcDiag *diag);

/* Reads a tensor file: .npy (v1/v2/v3, little-endian, C order) or ONNX TensorProto .pb. */
FcStatus fc_read_tensor_file(const char *path, const FcImportLimits *lim, FcArena *arena, FcTensor **out,
                             FcDiag *diag);

/* ---- onnx_import.c: what legalisers see ----------------------------------------------------------- */

typedef struct FcImporter FcImporter; /* importer state, private to onnx_import.c */

/* One ONNX node being legalised. The legaliser reads inputs and attributes, builds core ops with `b`
 * (insertion at the end of the graph, loc = node name), and sets out[i] for every output the node
 * names (outputs named "" may stay NULL). */
typedef struct FcLower {
  FcImporter *imp;
  FcBuilder *b;
  const Onnx__NodeProto *node;
  int opset;      /* opset version of the node's domain */
  FcValue **in;   /* node inputs; NULL where the input name is "" (omitted optional) */
  int n_in;
  FcValue **out;  /* to fill */
  int n_out;
  FcDiag *diag;
  int arg;        /* the node's row in onnx_ops.def: the core op kind or FC_LX_* variant it names */
} FcLower;

typedef FcStatus (*FcLowerFn)(FcLower *l);

/* Attributes (absent → default / -1). Strings are NUL-terminated copies in the module arena. */
bool fc_lx_has_attr(const FcLower *l, const char *name);
int64_t fc_lx_int(const FcLower *l, const char *name, int64_t dflt);
float fc_lx_float(const FcLower *l, const char *name, float dflt);
const char *fc_lx_str(const FcLower *l, const char *name, const char *dflt);
int fc_lx_ints(const FcLower *l, const char *name, const int64_t **v);  /* -1 if absent */
int fc_lx_floats(const FcLower *l, const char *name, const float **v);  /* -1 if absent */
/* A TENSOR attribute converted to an FcTensor (NULL if absent; on a bad tensor records an error). */
const FcTensor *fc_lx_tensor_attr(FcLower *l, const char *name);

/* The compile-time value of input i: a constant, a chain of pure ops over constants (evaluated on
 * demand), or a graph input given by --bind / the bind callback (which the importer then turns into a
 * constant). NULL when it is not a constant; then an error naming the input and "--bind" is recorded. */
const FcTensor *fc_lx_const_input(FcLower *l, int i);
/* Same, but NULL without recording an error when the input is not constant. */
const FcTensor *fc_lx_try_const_input(FcLower *l, int i);
/* Integer contents of a constant input (any int dtype), as an int64 array in the arena; -1 on error. */
int fc_lx_const_ints(FcLower *l, int i, const int64_t **v);

/* Errors naming this node: "node '<name>' (<OpType>): <what>". fc_lx_unsupported marks the node as not
 * supported (collected into the one message listing every unsupported op); fc_lx_error is bad input. */
FcStatus fc_lx_unsupported(FcLower *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
FcStatus fc_lx_error(FcLower *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Checks the builder's sticky status after a chain of fc_b_* calls and that every named output is set. */
FcStatus fc_lx_finish(FcLower *l);

/* Normalises an axis in [-rank, rank) to [0, rank); false (and an error recorded) when out of range. */
bool fc_lx_axis(FcLower *l, int64_t axis, int rank, int64_t *out);

/* Small helpers every legaliser uses. */
FcArena *fc_lx_arena(const FcLower *l);                        /* the module arena */
int64_t *fc_lx_dims(FcLower *l, int n);                        /* n (at least 1) int64 slots in it */
FcValue *fc_lx_scalar(FcLower *l, const FcValue *like, double v); /* rank-0 constant of like's dtype */
bool fc_lx_out_named(const FcLower *l, int i);                 /* output i exists and has a name */
/* The status to return after a builder call or an fc_lx_* helper recorded an error. */
FcStatus fc_lx_bail(const FcLower *l);
/* Inputs [0, n) must be present; else an error naming the first missing one. */
FcStatus fc_lx_need_inputs(FcLower *l, int n);
/* x must have a float dtype; else an error (false). */
bool fc_lx_need_float(FcLower *l, const FcValue *x);
/* Builder shortcuts for the arithmetic legalisers spell out. */
FcValue *fc_lx_add(FcLower *l, FcValue *a, FcValue *b);
FcValue *fc_lx_sub(FcLower *l, FcValue *a, FcValue *b);
FcValue *fc_lx_mul(FcLower *l, FcValue *a, FcValue *b);
FcValue *fc_lx_div(FcLower *l, FcValue *a, FcValue *b);
FcValue *fc_lx_cast_to(FcLower *l, FcValue *v, FcDtype dt); /* v itself when it has dtype dt already */
/* A new arena tensor of the given type, refusing sizes beyond the tensor limit (NULL, error recorded). */
FcTensor *fc_lx_new_tensor(FcLower *l, FcDtype dt, int rank, const int64_t *dims);

/* ---- subgraphs (onnx_import.c) and region ops (lower_control.c) ------------------------------------ */

/* A GRAPH attribute (a Loop or Scan body, an If branch) and the names it reads from enclosing scopes
 * (its nested subgraphs' included), resolved in the node's scope. Constants among them are copied into
 * the body; the others are captures: operands of the region op, block arguments inside. */
typedef struct FcLxSubgraph {
  const char *attr;               /* "body", "then_branch", ... */
  const Onnx__GraphProto *gp;
  int n_free;
  const char **free_names;
  FcValue **free_vals;            /* in the node's scope */
  int *cap_index;                 /* per free name: its index in caps, or -1 for a constant */
  int n_caps;
  FcValue **caps;                 /* the captured values, in the node's scope */
} FcLxSubgraph;

/* Reads GRAPH attribute `name` and resolves what it reads from enclosing scopes. FC_ERR_UNSUPPORTED
 * without a message when it reads a value of an unsupported node (the importer then skips this node). */
FcStatus fc_lx_subgraph(FcLower *l, const char *name, FcLxSubgraph *sg);
/* Imports sg's nodes into graph g (a region, or the node's own graph to inline an If branch): the
 * subgraph's inputs are in[0..n_in), its captures cap_args[0..sg->n_caps) (block arguments, or the
 * captured values themselves when inlining). Sets out[i] for each of its outputs. */
FcStatus fc_lx_import_subgraph(FcLower *l, const FcLxSubgraph *sg, FcGraph *g, FcValue *const *in, int n_in,
                               FcValue *const *cap_args, FcValue **out);
/* The compile-time value of input i like fc_lx_const_input (graph inputs bound through the callback),
 * but NULL without an error when it is not constant. */
const FcTensor *fc_lx_bind_const_input(FcLower *l, int i);

/* A flow.loop being built by a legaliser: fc_lx_loop_begin creates it (not yet inserted) from operands
 * (trip, cond, `carried` initial values, captures) with `n_scan` scan outputs of static length
 * scan_len; the legaliser builds the body with lp->body (lp->args are the block arguments: iter, cond,
 * carried..., captured...) and fc_lx_loop_end yields (cond_next, carried_next..., scan...) and inserts the
 * loop at l->b. Both false/NULL after an error (recorded in l->diag). */
typedef struct FcLxLoop {
  FcOp *op;
  FcBuilder body;
  FcValue **args;
} FcLxLoop;
bool fc_lx_loop_begin(FcLower *l, FcLxLoop *lp, FcValue *const *ops, int n_ops, int carried, int n_scan,
                      int64_t scan_len);
FcOp *fc_lx_loop_end(FcLower *l, FcLxLoop *lp, FcValue *const *yields, int n);
/* Row t (a 0-d i64 value) of x along axis 0, built with b: flow.gather. */
FcValue *fc_lx_gather_row(FcBuilder *b, FcValue *x, FcValue *t);
/* x with its axis-0 rows in reverse order, built with b. */
FcValue *fc_lx_reverse_rows(FcLower *l, FcBuilder *b, FcValue *x);

/* ---- onnx_ops.def: ONNX op type → legaliser --------------------------------------------------------- */

/* Variants that the table's last column gives a legaliser serving several op types, where no single
 * core op kind says what to build. */
typedef enum FcLxActivation { /* fc_lower_activation */
  FC_LX_ACT_CELU, FC_LX_ACT_ELU, FC_LX_ACT_GELU, FC_LX_ACT_HARD_SIGMOID, FC_LX_ACT_HARD_SWISH,
  FC_LX_ACT_LEAKY_RELU, FC_LX_ACT_MISH, FC_LX_ACT_SELU, FC_LX_ACT_SHRINK, FC_LX_ACT_SOFTSIGN,
  FC_LX_ACT_THRESHOLDED_RELU,
} FcLxActivation;
typedef enum FcLxReduce { /* fc_lower_reduce; the first five have a core reduce op each */
  FC_LX_REDUCE_SUM, FC_LX_REDUCE_MEAN, FC_LX_REDUCE_MAX, FC_LX_REDUCE_MIN, FC_LX_REDUCE_PROD,
  FC_LX_REDUCE_L1, FC_LX_REDUCE_L2, FC_LX_REDUCE_LOGSUM, FC_LX_REDUCE_LOGSUMEXP, FC_LX_REDUCE_SUMSQ,
} FcLxReduce;
enum { /* fc_lower_random: flags; neither is RandomUniform */
  FC_LX_RANDOM_NORMAL = 1 << 0, /* RandomNormal*: normal rather than uniform */
  FC_LX_RANDOM_LIKE = 1 << 1,   /* *Like: shape and dtype from input 0 */
};
typedef enum FcLxWindow { /* fc_lower_window */
  FC_LX_WINDOW_HANN, FC_LX_WINDOW_HAMMING, FC_LX_WINDOW_BLACKMAN,
} FcLxWindow;

#define FC_ONNX_OP(domain, name, fn, arg, upto) FcStatus fn(FcLower *l);
#include "onnx_ops.def"
#undef FC_ONNX_OP

#endif /* FLOWC_ONNX_H */
