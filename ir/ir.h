/* ir.h — flowc's SSA IR over tensors: the one internal header of ir/, one section per .c file.
 *
 * A module owns an arena and one graph (the model's function). A graph is a list of ops; each op has
 * operands (uses of values), results (values) and typed attributes. Values carry a static type
 * (dtype + shape). Every value keeps a doubly linked list of its uses, so replace-all-uses and dead-code
 * checks are O(uses). The last op of a graph is a RETURN whose operands are the graph outputs.
 *
 * Memory: everything a module holds is allocated in its arena and freed at once with the module
 * (fc_module_destroy). Passes never free; erased ops are unlinked and left in the arena. Allocation
 * failure is fatal (fc_arena_alloc aborts with a message): input sizes are limit-checked before they
 * reach an allocation, so running out of memory is not a user error we can report per node.
 *
 * Errors: library code returns FcStatus and fills an FcDiag with a one-line message; only the CLI exits.
 * Internal invariants go through FC_ASSERT, which stays on in release builds.
 */
#ifndef FLOWC_IR_H
#define FLOWC_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- diag.c: status codes, diagnostics, internal asserts ---------------------------------------- */

typedef enum FcStatus {
  FC_OK = 0,
  FC_ERR_INPUT,       /* malformed or inconsistent input (model, text, data file) */
  FC_ERR_UNSUPPORTED, /* valid input that flowc does not handle (yet) */
  FC_ERR_LIMIT,       /* input beyond a configured limit (file size, nesting, rank, element count) */
  FC_ERR_IO,          /* cannot open/read/write a file */
  FC_ERR_INTERNAL,    /* a bug in flowc reported as a status (verifier failure after a pass, ...) */
} FcStatus;

/* One diagnostic: the first error wins (later ones do not overwrite it). `msg` is one line without the
 * "flowc: error: <file>: " prefix, which the CLI adds; messages about a node start with
 * "node '<name>' (<OpType>): ". */
typedef struct FcDiag {
  FcStatus status;
  char msg[2048];
} FcDiag;

void fc_diag_init(FcDiag *d);
/* Records an error (if none is recorded yet) and returns `st`, so callers can `return fc_error(...)`. */
FcStatus fc_error(FcDiag *d, FcStatus st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
FcStatus fc_verror(FcDiag *d, FcStatus st, const char *fmt, va_list ap);
/* Same, prefixed with "node '<node>' (<op>): ". */
FcStatus fc_error_node(FcDiag *d, FcStatus st, const char *node, const char *op, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
const char *fc_status_name(FcStatus st);

_Noreturn void fc_die(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define FC_ASSERT(cond)                                                            \
  do {                                                                             \
    if (!(cond)) fc_die(__FILE__, __LINE__, "assertion failed: %s", #cond);         \
  } while (0)
#define FC_UNREACHABLE() fc_die(__FILE__, __LINE__, "unreachable")

/* ---- arena.c: bump allocator with whole-lifetime free -------------------------------------------- */

typedef struct FcArenaChunk FcArenaChunk;
typedef struct FcArena {
  FcArenaChunk *head; /* newest chunk first */
  size_t total;       /* bytes obtained from the system */
} FcArena;

void fc_arena_init(FcArena *a);
void fc_arena_free(FcArena *a);
/* Zeroed memory, aligned to `align` (a power of two <= 64). Aborts on out-of-memory. */
void *fc_arena_alloc(FcArena *a, size_t size, size_t align);
#define FC_NEW(a, T) ((T *)fc_arena_alloc((a), sizeof(T), _Alignof(T)))
#define FC_NEW_ARRAY(a, T, n) ((T *)fc_arena_alloc((a), fc_size_mul_or_die((n), sizeof(T)), _Alignof(T)))
char *fc_arena_strdup(FcArena *a, const char *s);
char *fc_arena_strndup(FcArena *a, const char *s, size_t n);
void *fc_arena_memdup(FcArena *a, const void *p, size_t n, size_t align);
char *fc_arena_printf(FcArena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- checked.c: overflow-checked arithmetic for every size computed from input ------------------- */

/* Each returns false on overflow (or negative input where sizes must be >= 0) and leaves *out unset. */
bool fc_checked_mul(int64_t a, int64_t b, int64_t *out);
bool fc_checked_add(int64_t a, int64_t b, int64_t *out);
size_t fc_size_mul_or_die(size_t a, size_t b); /* for internal sizes already known to be sane */

/* ---- types.c: dtypes and tensor types ------------------------------------------------------------ */

typedef enum FcDtypeClass { FC_DTC_FLOAT, FC_DTC_SINT, FC_DTC_UINT, FC_DTC_BOOL } FcDtypeClass;

typedef enum FcDtype {
#define FC_DTYPE(E, mlir, bytes, onnx, cls) FC_DT_##E,
#include "dtypes.def"
#undef FC_DTYPE
  FC_DT_COUNT
} FcDtype;

const char *fc_dtype_name(FcDtype dt);  /* MLIR spelling: "f32", "i64", "ui8", "i1", ... */
size_t fc_dtype_size(FcDtype dt);
FcDtypeClass fc_dtype_class(FcDtype dt);
bool fc_dtype_is_float(FcDtype dt);
bool fc_dtype_is_int(FcDtype dt);       /* signed or unsigned integer, not bool */
/* An 8-bit integer matmul's operand pair (u8 or i8 each): flow.matmul then accumulates into i32. */
bool fc_matmul_is_int8(FcDtype a, FcDtype b);
/* u8 or i8: the storage of 8-bit quantised values. */
static inline bool fc_dtype_is_8bit(FcDtype dt) { return dt == FC_DT_U8 || dt == FC_DT_I8; }
bool fc_dtype_from_onnx(int onnx_code, FcDtype *out);
int fc_dtype_to_onnx(FcDtype dt);
bool fc_dtype_from_name(const char *s, size_t n, FcDtype *out);

/* Limits applied wherever a type is created from input. */
#define FC_DEFAULT_MAX_RANK 16
#define FC_DEFAULT_MAX_TENSOR_BYTES ((int64_t)1 << 34) /* 16 GiB: larger tensors are refused */

/* Uniform quantisation parameters of a quantised element type, MLIR's `!quant.uniform<...>`: a stored
 * integer q stands for the real value scale * (q - zero_point). Immutable once made; lives in an arena. */
typedef struct FcQuant {
  FcDtype storage;            /* I8, U8, I16, U16 or I32: the integers the tensor holds */
  FcDtype expressed;          /* F32, F16, BF16 or F64: the real type the integers stand for */
  int64_t qmin, qmax;         /* storage range; the storage type's full range unless narrowed (i8<-127:127>) */
  int axis;                   /* quantised dimension, or -1 for per-tensor parameters */
  int n;                      /* scale/zero-point pairs: 1 per tensor, dims[axis] per axis */
  const double *scales;       /* each > 0, finite and within the expressed type's range */
  const int64_t *zero_points; /* each within [qmin, qmax] */
} FcQuant;

/* A static tensor type. dims[] lives in an arena (or is NULL for rank 0); a dim may be 0. A quantised
 * tensor has quant != NULL and dtype == quant->storage, so sizes and constant data are those of the
 * storage integers; code that computes must check `quant` (fc_type_is_quant) before trusting dtype. */
typedef struct FcType {
  FcDtype dtype;
  int rank;
  const int64_t *dims;
  const FcQuant *quant; /* NULL: a plain element type */
} FcType;

/* numel/nbytes with overflow checks; false if the count overflows int64. */
bool fc_type_numel(const FcType *t, int64_t *out);
bool fc_type_nbytes(const FcType *t, int64_t *out);
bool fc_type_equal(const FcType *a, const FcType *b);
bool fc_shape_equal(const FcType *a, const FcType *b);
/* Makes a type with dims copied into the arena. */
FcType fc_type_make(FcArena *a, FcDtype dt, int rank, const int64_t *dims);
/* A copy of `t` whose dims and quantisation parameters live in `a`. */
FcType fc_type_copy(FcArena *a, const FcType *t);
/* A quantised type: dtype q->storage, q copied into the arena. */
FcType fc_type_make_quant(FcArena *a, const FcQuant *q, int rank, const int64_t *dims);
static inline bool fc_type_is_quant(const FcType *t) { return t->quant != NULL; }
/* The storage view of a type: the same type without quantisation parameters. */
FcType fc_type_storage(const FcType *t);
/* Writes "tensor<1x3xf32>" into buf (always NUL-terminated, truncated if needed); returns buf. */
char *fc_type_str(const FcType *t, char *buf, size_t cap);
/* Writes the MLIR spelling of a tensor type ("tensor<2x!quant.uniform<i8:f32, 5.0e-01:-3>>") or, for
 * rank < 0, of its element type alone ("f32", "!quant.uniform<...>"). */
void fc_type_print(FILE *out, const FcType *t);
/* Shortest "%.*e" spelling (at least 7 significant digits) that strtod reads back to the same bits. */
void fc_format_f64(char *buf, size_t cap, double d);

/* Quantised element types (types.c). */
/* The full range of a storage type; false if `dt` cannot be a quantised storage type. */
bool fc_quant_storage_range(FcDtype dt, int64_t *lo, int64_t *hi);
/* Why `q` is malformed (for a tensor of type `t`: axis within its rank, one pair per element of that
 * dim; t NULL checks the element type alone), written into why; false if it is well formed. */
bool fc_quant_problem(const FcQuant *q, const FcType *t, char *why, size_t cap);
bool fc_quant_equal(const FcQuant *a, const FcQuant *b); /* NULL equals only NULL */
const FcQuant *fc_quant_copy(FcArena *a, const FcQuant *q);
/* The requantisation multiplier of a quantised product (ops.def): f32(f32(sx·sw) / f32(sy)), the product
 * rounded to f32, then the f32 quotient, as onnxruntime's QLinearConv and ONNX's reference evaluator form it. */
float fc_quant_multiplier(double sx, double sw, double sy);
/* The quantised mean (ops.def reduce_mean) of `count` (> 0) elements of type xq whose storage integers sum to
 * `sum`, as a yq integer: clamp(rne((f64(sum - count·zx) / f64(count)) · (sx / sy)) + zy, qmin, qmax). */
int64_t fc_quant_mean(const FcQuant *xq, const FcQuant *yq, int64_t sum, int64_t count);
void fc_quant_print(FILE *out, const FcQuant *q);
/* NumPy broadcast of two shapes into `out` (arena); false if incompatible. */
bool fc_broadcast_shapes(FcArena *a, const FcType *x, const FcType *y, int *rank_out, const int64_t **dims_out);

/* ---- attr.c: typed attributes and the per-op attribute schema ------------------------------------ */

typedef enum FcAttrName {
#define FC_ATTR_NAME(E, s) FC_ATTR_##E,
#include "attrs.def"
#undef FC_ATTR_NAME
  FC_ATTR_NAME_COUNT
} FcAttrName;

typedef enum FcAttrKind {
  FC_AK_INT,    /* int64, printed `1 : i64` */
  FC_AK_FLOAT,  /* f32, printed `1.000000e+00 : f32` */
  FC_AK_STR,    /* printed "..." */
  FC_AK_INTS,   /* printed array<i64: 1, 2> */
  FC_AK_FLOATS, /* printed array<f32: 1.0, 2.0> */
  FC_AK_TYPE,   /* an element type, printed bare (`f32`) */
  FC_AK_TENSOR, /* constant data, printed dense<...> or dense_resource<...> */
  FC_AK_PROGRAM, /* a parsed element-wise program (ew_program.h), printed as its text "add x o3; relu s0" */
} FcAttrKind;

typedef struct FcEwProgram FcEwProgram;

/* Constant tensor data. `data` is NULL when the text form elided it (dense_resource<__elided__>):
 * such a module can be printed and verified but not folded or compiled. */
typedef struct FcTensor {
  FcType type;
  const void *data; /* numel * dtype size bytes, little-endian, row-major; bool is one byte 0/1 */
  int64_t nbytes;
} FcTensor;

typedef struct FcAttr {
  FcAttrName name;
  FcAttrKind kind;
  union {
    int64_t i;
    float f;
    const char *s;
    struct { const int64_t *v; int n; } ints;
    struct { const float *v; int n; } floats;
    FcDtype type;
    const FcTensor *tensor;
    const FcEwProgram *prog;
  };
  const FcQuant *quant; /* FC_AK_TYPE: a quantised element type (type is then its storage), else NULL */
} FcAttr;

/* One attribute slot of an op's schema, parsed once from ops.def. */
typedef struct FcAttrSpec {
  FcAttrName name;
  FcAttrKind kind;
  bool optional;
} FcAttrSpec;

const char *fc_attr_name_str(FcAttrName n);
bool fc_attr_name_from_str(const char *s, size_t n, FcAttrName *out);
const char *fc_attr_kind_str(FcAttrKind k);

/* Convenience constructors for builder calls (arrays are copied into the arena by the builder). */
#define FC_A_INT(n, val) ((FcAttr){.name = FC_ATTR_##n, .kind = FC_AK_INT, .i = (val)})
#define FC_A_FLOAT(n, val) ((FcAttr){.name = FC_ATTR_##n, .kind = FC_AK_FLOAT, .f = (val)})
#define FC_A_STR(n, val) ((FcAttr){.name = FC_ATTR_##n, .kind = FC_AK_STR, .s = (val)})
#define FC_A_INTS(n, arr, cnt) ((FcAttr){.name = FC_ATTR_##n, .kind = FC_AK_INTS, .ints = {(arr), (cnt)}})
#define FC_A_FLOATS(n, arr, cnt) ((FcAttr){.name = FC_ATTR_##n, .kind = FC_AK_FLOATS, .floats = {(arr), (cnt)}})
#define FC_A_TYPE(n, val) ((FcAttr){.name = FC_ATTR_##n, .kind = FC_AK_TYPE, .type = (val)})
#define FC_A_QTYPE(n, q) ((FcAttr){.name = FC_ATTR_##n, .kind = FC_AK_TYPE, .type = (q)->storage, .quant = (q)})
#define FC_A_PROGRAM(n, p) ((FcAttr){.name = FC_ATTR_##n, .kind = FC_AK_PROGRAM, .prog = (p)})

/* ---- annot.c: annotations, MLIR's discardable attributes (`{flow.sbp = ["S(0)"]}`) -----------------
 * Passes attach namespaced attributes to ops and graph inputs without touching the op table: SBP
 * signatures, placement, quantisation parameters, pruning masks, or anything of another dialect. An op's
 * annotations describe the op and its results; a graph input's are printed as argument attributes of
 * the function. Names are "<dialect>.<name>" (a bare MLIR identifier with a '.'); values use a subset of
 * MLIR's attribute syntax. Names of the flow dialect must be known (annots.def), which fixes their
 * value kind and what a rewrite does with them; other dialects' annotations are kept as they are. */

typedef enum FcAnnotKind {
  FC_AV_UNIT,   /* unit */
  FC_AV_BOOL,   /* true / false */
  FC_AV_INT,    /* `3 : i64`: .i, dtype its integer type */
  FC_AV_FLOAT,  /* `5.0e-01 : f32`: .f, dtype F32 or F64 */
  FC_AV_STR,    /* "..." */
  FC_AV_ARRAY,  /* [v, ...]: .array */
  FC_AV_DENSE,  /* array<i64: 1, 2>: dtype the element type; .ints (integers, i1) or .floats (f32, f64) */
  FC_AV_TYPE,   /* a type attribute: tensor<...>, or an element type (rank -1) such as !quant.uniform<...> */
  FC_AV_TENSOR, /* dense<...> / dense_resource<...> : tensor<...> */
  FC_AV_DICT,   /* {a = 1, b}: .dict, entries sorted by name as MLIR keeps them; names need not be namespaced */
} FcAnnotKind;

typedef struct FcAnnotValue FcAnnotValue;
typedef struct FcAnnot FcAnnot;
struct FcAnnotValue {
  FcAnnotKind kind;
  FcDtype dtype;
  union {
    bool b;
    int64_t i;
    double f;
    const char *s;
    struct { const FcAnnotValue *v; int n; } array;
    struct { const int64_t *v; int n; } ints;
    struct { const double *v; int n; } floats;
    FcType type;
    const FcTensor *tensor;
    struct { const FcAnnot *v; int n; } dict;
  };
};

struct FcAnnot {
  const char *name; /* "flow.sbp" */
  FcAnnotValue value;
};

/* A list of annotations, sorted by name (so text and comparisons do not depend on the order passes
 * added them), in the module arena. */
typedef struct FcAnnots {
  FcAnnot *v;
  int n;
} FcAnnots;

/* The flow dialect's known annotations (annots.def). */
typedef enum FcAnnotId {
#define FC_ANNOT(E, name, policy, doc) FC_ANNOT_##E,
#include "annots.def"
#undef FC_ANNOT
  FC_ANNOT_COUNT
} FcAnnotId;

/* What fc_rw_replace_op does with an annotation of the replaced op. */
typedef enum FcAnnotPolicy {
  FC_ANNOT_KEEP, /* it describes the values, which the replacement computes too: copy it over */
  FC_ANNOT_DROP, /* it describes the op (or its meaning is unknown): drop it */
} FcAnnotPolicy;

const char *fc_annot_name(FcAnnotId id);
/* True when `name` is a valid annotation name: a bare MLIR identifier "<dialect>.<rest>". */
bool fc_annot_name_valid(const char *name, size_t n);
/* Policy by name: the flow table's column, FC_ANNOT_DROP for other dialects. */
FcAnnotPolicy fc_annot_policy(const char *name);
/* Checks an annotation against the flow table (unknown flow.* names are refused) for a subject of
 * type `subject` (an op's first result or a graph input; NULL: shape checks are skipped). Writes why
 * into `why` and returns false when it is malformed; other dialects' annotations always pass. */
bool fc_annot_check(const char *name, const FcAnnotValue *v, const FcType *subject, char *why, size_t cap);

/* Sets (or replaces) `name`, deep-copying the value into `a`. */
void fc_annots_set(FcArena *a, FcAnnots *list, const char *name, const FcAnnotValue *v);
const FcAnnotValue *fc_annots_get(const FcAnnots *list, const char *name); /* NULL if absent */
bool fc_annots_remove(FcAnnots *list, const char *name);                  /* false if absent */
bool fc_annots_equal(const FcAnnots *a, const FcAnnots *b);
bool fc_annot_value_equal(const FcAnnotValue *a, const FcAnnotValue *b);
/* True when every annotation of `a` is in `b` with an equal value. */
bool fc_annots_subset(const FcAnnots *a, const FcAnnots *b);
/* Copies to `to` every annotation of `from` whose policy is FC_ANNOT_KEEP and that `to` lacks. */
void fc_annots_copy_kept(FcArena *a, FcAnnots *to, const FcAnnots *from);

/* Value constructors for passes (arrays and strings are copied by fc_annots_set). */
#define FC_AV_STRING(val) ((FcAnnotValue){.kind = FC_AV_STR, .s = (val)})
#define FC_AV_I64(val) ((FcAnnotValue){.kind = FC_AV_INT, .dtype = FC_DT_I64, .i = (val)})
#define FC_AV_I64S(arr, cnt) ((FcAnnotValue){.kind = FC_AV_DENSE, .dtype = FC_DT_I64, .ints = {(arr), (cnt)}})
#define FC_AV_LIST(arr, cnt) ((FcAnnotValue){.kind = FC_AV_ARRAY, .array = {(arr), (cnt)}})

/* ---- ops.c: the op table (expanded from ops.def) ------------------------------------------------- */

/* The most operands a conv, conv_blocked or matmul takes (ops.def): its own, the bias and the extras of a
 * fused epilogue (a HardSwish and the quantisation after it read 7 one-element constants). */
#define FC_PRODUCT_MAX_OPERANDS 12

typedef enum FcOpKind {
#define FC_OP(E, mn, imin, imax, omin, omax, flags, schema, infer, eval) FC_OP_##E,
#include "ops.def"
#undef FC_OP
  FC_OP_COUNT
} FcOpKind;

enum {
  FC_OPF_PURE = 1 << 0,        /* no side effects: may be folded, CSE'd, and removed when unused */
  FC_OPF_ELEMENTWISE = 1 << 1, /* result[i] depends only on operand elements at i (after broadcast) */
  FC_OPF_COMMUTATIVE = 1 << 2, /* binary op whose operands may be swapped */
  FC_OPF_TERMINATOR = 1 << 3,  /* ends a graph (RETURN, or YIELD in a region) */
};

/* Result count limit of the variadic region ops (loop/if): far above any model, small enough that
 * arrays sized from it never overflow. */
#define FC_MAX_REGION_VALUES 65536

typedef struct FcOp FcOp;
/* Computes the result types of `op` from its operand types and attributes (writes op->results[i].type).
 * Returns FC_ERR_INPUT with a message naming the op when operands/attributes are inconsistent. */
typedef FcStatus (*FcInferFn)(FcOp *op, FcArena *arena, FcDiag *diag);
/* Evaluates `op` on constant operands in[0..n_operands) (NULL for an absent optional operand), making
 * out[i] (in `arena`) with op->results[i].type. FC_ERR_UNSUPPORTED when this op/dtype cannot be
 * evaluated at compile time (the caller then leaves the op alone). Semantics are the reference ones
 * that generated kernels are tested against. */
typedef FcStatus (*FcEvalFn)(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena,
                             FcDiag *diag);

typedef struct FcOpInfo {
  const char *name;        /* mnemonic, e.g. "conv" */
  const char *full_name;   /* "flow.conv" / "func.return" */
  int in_min, in_max;      /* in_max -1: variadic */
  int out_min, out_max;
  unsigned flags;
  const FcAttrSpec *attrs; /* schema, in the order of ops.def (alphabetical by convention) */
  int n_attrs;
  FcInferFn infer;
  FcEvalFn eval;           /* NULL for `none` */
} FcOpInfo;

const FcOpInfo *fc_op_info(FcOpKind k);
/* Looks up "flow.conv" / "func.return" (full name, length n); false if unknown. */
bool fc_op_kind_from_name(const char *s, size_t n, FcOpKind *out);

/* ---- graph.c: modules, graphs, values, ops, use lists -------------------------------------------- */

typedef struct FcValue FcValue;
typedef struct FcGraph FcGraph;

/* One use of a value: operand `index` of `user`. Lives inside the user's operand array. */
typedef struct FcUse {
  FcValue *value;
  FcOp *user;
  int index;
  struct FcUse *prev_use, *next_use; /* the value's use list */
} FcUse;

struct FcValue {
  FcType type;
  FcOp *def;         /* defining op; NULL for a graph input */
  int index;         /* result index in def, or input index in the graph */
  FcUse *first_use;
  uint32_t id;       /* unique within the graph, for maps in passes */
  const char *name;  /* ONNX name for graph inputs/outputs (NULL otherwise) */
  FcAnnots annots;   /* a graph input's annotations (argument attributes); a result's are its op's */
};

struct FcOp {
  FcOpKind kind;
  int n_operands, n_results, n_attrs;
  FcUse *operands;   /* operands[i].value */
  FcValue *results;
  FcAttr *attrs;     /* in schema order; only present attributes are stored */
  FcAnnots annots;   /* discardable, namespaced attributes added by passes (annot.c) */
  const char *loc;   /* ONNX node name (printed as loc("...")), may be NULL */
  FcOp *prev, *next; /* position in the graph's op list */
  FcGraph *graph;
  FcGraph **regions; /* nested graphs (loop: body; if: then, else), each ending in YIELD; NULL if none */
  int n_regions;
  uint32_t id;
  bool erased;
};

struct FcGraph {
  struct FcModule *module;
  const char *name;  /* function name, "main" */
  FcValue **inputs;  /* graph inputs, in order */
  int n_inputs, cap_inputs;
  const char **output_names; /* ONNX names of the outputs, by position */
  int n_output_names;
  FcOp *first, *last;
  uint32_t next_value_id, next_op_id;
  FcOp *parent;      /* the op owning this region; NULL for the module's graph */
};

typedef struct FcModule {
  FcArena arena;
  FcGraph *graph;
  const char *source; /* file the module came from (for messages) */
  FcAnnots annots;    /* module attributes (`module attributes {flow.mesh = ...}`): the SBP mesh */
} FcModule;

FcModule *fc_module_create(const char *source);
void fc_module_destroy(FcModule *m);

FcValue *fc_graph_add_input(FcGraph *g, FcType type, const char *name);
/* The graph's terminator (RETURN, or YIELD in a region; NULL while the graph is being built); outputs
 * are its operands. */
FcOp *fc_graph_return(FcGraph *g);
int fc_graph_num_outputs(FcGraph *g);
FcValue *fc_graph_output(FcGraph *g, int i);
const char *fc_graph_output_name(FcGraph *g, int i);
/* Appends the RETURN op with the graph outputs and records their names. */
FcOp *fc_graph_set_outputs(FcGraph *g, FcValue *const *outputs, const char *const *names, int n);

/* Creates an op (not yet in a graph) with the given operands and `n_results` untyped results. */
FcOp *fc_op_create(FcGraph *g, FcOpKind kind, FcValue *const *operands, int n_operands, int n_results);

/* Copies attributes (and their arrays/strings) into the arena; replaces one with the same name. */
void fc_op_set_attr(FcOp *op, FcAttr attr);
const FcAttr *fc_op_attr(const FcOp *op, FcAttrName name); /* NULL if absent */
int64_t fc_op_attr_int(const FcOp *op, FcAttrName name, int64_t dflt);
float fc_op_attr_float(const FcOp *op, FcAttrName name, float dflt);
const char *fc_op_attr_str(const FcOp *op, FcAttrName name, const char *dflt);
const FcEwProgram *fc_op_attr_program(const FcOp *op, FcAttrName name); /* NULL if absent */
/* Array attributes: returns the count and sets *v (NULL/0 if absent). */
int fc_op_attr_ints(const FcOp *op, FcAttrName name, const int64_t **v);
int fc_op_attr_floats(const FcOp *op, FcAttrName name, const float **v);

/* Annotations of an op or a graph input (copied into the module arena). */
void fc_op_set_annot(FcOp *op, const char *name, const FcAnnotValue *v);
const FcAnnotValue *fc_op_annot(const FcOp *op, const char *name);
void fc_input_set_annot(FcGraph *g, FcValue *input, const char *name, const FcAnnotValue *v);
/* How an f32 constant's data is stored in the artefact (its flow.storage annotation): FC_DT_F16 or
 * FC_DT_BF16 (16 bits, expanded to f32 once before the first run), else FC_DT_F32 (also for any op that is
 * not an f32 constant). */
FcDtype fc_op_storage_dtype(const FcOp *op);

void fc_op_insert_before(FcOp *pos, FcOp *op);  /* pos NULL: append at the end of op's graph */
void fc_op_insert_after(FcOp *pos, FcOp *op);
/* Unlinks an op whose results have no uses; drops its operand uses. */
void fc_op_erase(FcOp *op);
void fc_op_set_operand(FcOp *op, int i, FcValue *v);
void fc_value_replace_all_uses(FcValue *from, FcValue *to);
bool fc_value_has_uses(const FcValue *v);
int fc_value_num_uses(const FcValue *v);
/* The op's node name for messages: its loc, or "". */
const char *fc_op_name(const FcOp *op);
/* Multiply-accumulates of one op (ir/op_macs.c): conv, conv_transpose and matmul count one per product
 * term; every other op 0. False when the count overflows int64. FLOPs are reported as 2 x MACs. */
bool fc_op_macs(const FcOp *op, int64_t *out);

#define fc_graph_for_each_op(g, op) for (FcOp *op = (g)->first; op; op = op->next)
/* Safe against erasing `op` inside the loop. */
#define fc_graph_for_each_op_safe(g, op, tmp) \
  for (FcOp *op = (g)->first, *tmp = op ? op->next : NULL; op; op = tmp, tmp = op ? op->next : NULL)

/* ---- region.c: ops that own nested graphs ---------------------------------------------------------
 * flow.loop and flow.if own regions: graphs whose inputs are the block arguments and whose last op is
 * flow.yield. Regions are isolated from above: a body reads only its block arguments and values it
 * defines; every outer value it needs is an operand of the region op (a capture) and arrives as a block
 * argument. So every pass stays graph-local and runs on each graph of the module in turn.
 *
 * flow.loop(trip: tensor<i64>, cond: tensor<i1>, carried_0..k-1, captured_0..c-1) {carried = k,
 *   scan_len = L (required when the body has scan outputs)}; body inputs (iter: tensor<i64>,
 *   cond: tensor<i1>, carried.., captured..); body yields (cond_next: tensor<i1>, carried_next.., scan..).
 *   Results: k final carried values, then each scan output as tensor<L x T>. Runs
 *   `for (i = 0; i < trip && cond; i++) { body; cond = cond_next; carried = next }`; more iterations than
 *   scan_len with scan outputs is a run-time error; rows of iterations that did not run are zero.
 * flow.if(cond: tensor<i1>, captured..): regions then and else, inputs = the captured types, each
 *   yielding the op's results. */

/* Nesting limit of regions (the parser and importers refuse deeper ones), bounding every recursive walk. */
#define FC_MAX_REGION_DEPTH 64
/* A new empty graph in the module arena, to become a region of an op (fc_op_set_regions). */
FcGraph *fc_region_new(FcModule *m);
/* Makes regions[0..n) the regions of op (which has none yet), setting their parent. */
void fc_op_set_regions(FcOp *op, FcGraph *const *regions, int n);
/* Creates an op like fc_op_create with `n_regions` empty region graphs (parent = op). */
FcOp *fc_op_create_with_regions(FcGraph *g, FcOpKind kind, FcValue *const *operands, int n_operands, int n_results,
                                int n_regions);
/* Adds to each region of a loop/if the block arguments the contract gives it from the op's operands
 * (loop: iter, cond, carried and captured types; if: the captured types). */
void fc_op_add_block_args(FcOp *op);
/* The first captured operand of a loop (2 + carried) or if (1); operands from there on are captures. */
int fc_region_op_first_capture(const FcOp *op);
/* Removes captured operand i (>= fc_region_op_first_capture) of a loop or if together with its block
 * argument in every region, which must have no uses left; later operands and block arguments move down. */
void fc_region_op_drop_capture(FcOp *op, int i);
/* Appends the YIELD terminator with operands vals[0..n) to a region graph. */
FcOp *fc_graph_set_yield(FcGraph *region, FcValue *const *vals, int n);
/* The module's graphs in pre-order (the top graph first, then each region op's regions recursively, in
 * op order): fills out[0..cap) and returns the count (which may exceed cap: call again with more). */
int fc_module_graphs(FcModule *m, FcGraph **out, int cap);
/* Calls fn on `g` and then on every region nested in it, in pre-order; stops at the first non-OK status. */
FcStatus fc_graph_walk(FcGraph *g, FcStatus (*fn)(FcGraph *g, void *ctx), void *ctx);
/* Number of loop-carried values / scan outputs of a flow.loop (from its attribute and its body's yield). */
int fc_loop_num_carried(const FcOp *loop);
int fc_loop_num_scan(const FcOp *loop);
/* The loop's static scan length (0 when absent). */
int64_t fc_loop_scan_len(const FcOp *loop);

/* ---- build.c: a builder with an insertion point and a sticky error --------------------------------
 * Every fc_b_* call appends one op before `before` (or at the end), infers its result types and
 * returns its first result. After the first failure all calls return NULL and do nothing, so callers
 * check fc_b_status() once at the end. */

typedef struct FcBuilder {
  FcGraph *g;
  FcOp *before;     /* insertion point; NULL: end of graph */
  const char *loc;  /* loc of the ops created */
  FcDiag *diag;
  FcStatus status;
} FcBuilder;

void fc_builder_init(FcBuilder *b, FcGraph *g, FcDiag *diag);
FcStatus fc_b_status(const FcBuilder *b);
/* The general form: creates op `kind`, sets attrs, infers, inserts; returns the op (NULL on error). */
FcOp *fc_b_op(FcBuilder *b, FcOpKind kind, FcValue *const *operands, int n_operands, int n_results,
              const FcAttr *attrs, int n_attrs);
FcValue *fc_b_op1(FcBuilder *b, FcOpKind kind, FcValue *const *operands, int n_operands,
                  const FcAttr *attrs, int n_attrs);
FcValue *fc_b_unary(FcBuilder *b, FcOpKind kind, FcValue *x);
FcValue *fc_b_binary(FcBuilder *b, FcOpKind kind, FcValue *x, FcValue *y);
FcValue *fc_b_select(FcBuilder *b, FcValue *cond, FcValue *x, FcValue *y);
FcValue *fc_b_cast(FcBuilder *b, FcValue *x, FcDtype to);
FcValue *fc_b_reshape(FcBuilder *b, FcValue *x, int rank, const int64_t *dims);
FcValue *fc_b_transpose(FcBuilder *b, FcValue *x, const int64_t *perm);
FcValue *fc_b_broadcast(FcBuilder *b, FcValue *x, int rank, const int64_t *dims);
FcValue *fc_b_reduce(FcBuilder *b, FcOpKind kind, FcValue *x, int n_axes, const int64_t *axes, bool keepdims);
FcValue *fc_b_slice(FcBuilder *b, FcValue *x, const int64_t *starts, const int64_t *ends, const int64_t *steps);
FcValue *fc_b_concat(FcBuilder *b, FcValue *const *xs, int n, int64_t axis);
/* Constants: data is copied. */
FcValue *fc_b_const(FcBuilder *b, FcDtype dt, int rank, const int64_t *dims, const void *data);
FcValue *fc_b_const_tensor(FcBuilder *b, const FcTensor *t); /* shares t (must live in the arena) */
FcValue *fc_b_scalar(FcBuilder *b, FcDtype dt, double v);    /* rank-0 constant, value converted */
FcValue *fc_b_const_i64(FcBuilder *b, int n, const int64_t *v); /* 1-D i64 */
/* Region ops: fc_b_region_op creates a loop/if (not yet inserted) with its regions and their block
 * arguments (fc_op_add_block_args) and its attributes; the caller fills each region (a builder pointed
 * at op->regions[r], then fc_graph_set_yield) and calls fc_b_region_op_finish, which infers the results
 * from the yields (and scan_len) and inserts the op at the builder's insertion point. Both return NULL
 * after an error (sticky, as every fc_b_* call). */
FcOp *fc_b_region_op(FcBuilder *b, FcOpKind kind, FcValue *const *operands, int n_operands, int n_results,
                     const FcAttr *attrs, int n_attrs);
FcOp *fc_b_region_op_finish(FcBuilder *b, FcOp *op);
/* Records an error in the builder (first one wins) and returns NULL. */
FcValue *fc_b_fail(FcBuilder *b, FcStatus st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- build_quant.c: quantisation built as IR (element-wise f32 ops and reductions) ---------------- */

/* round(v) (+ zp_f), clamped to [lo, hi] and cast to dt; v and zp_f (may be NULL) are f32. */
FcValue *fc_b_round_saturate(FcBuilder *b, FcValue *v, FcValue *zp_f, FcDtype dt, double lo, double hi);
/* Per-tensor asymmetric u8 quantisation of f32 x at run time, as ONNX DynamicQuantizeLinear: scale =
 * (max(x, 0) - min(x, 0)) / 255, zero point = saturate(round(-min / scale)), y = saturate(round(x / scale)
 * + zero point). A min_scale > 0 bounds the scale from below, so that an all-zero x quantises to zeros
 * instead of dividing 0 by 0 (the ONNX operator leaves that case to the runtime: the importer passes 0).
 * With `reciprocal`, y = saturate(round(x · r) + zero point), r = 1 / scale rounded to f32 once: a
 * multiply per element instead of a division (as PyTorch's and fbgemm's quantisation do; the two differ
 * only where x / scale lies within about an ulp of a rounding tie). Returns y (u8, x's shape) and sets
 * *scale (f32) and *zp (u8) to rank-0 values; NULL after an error. */
FcValue *fc_b_dynamic_quantize(FcBuilder *b, FcValue *x, double min_scale, bool reciprocal, FcValue **scale,
                               FcValue **zp);
/* The ops of quantised types (ops.def): quantize to q, dequantize, and scast to q (NULL: to the plain
 * storage dtype). */
FcValue *fc_b_quantize(FcBuilder *b, FcValue *x, const FcQuant *q);
FcValue *fc_b_dequantize(FcBuilder *b, FcValue *x);
FcValue *fc_b_scast(FcBuilder *b, FcValue *x, const FcQuant *q);
/* quantize and dequantize written as core f32 ops (div, round, add, clamp, cast; cast, sub, mul) on the
 * storage integers, with the same results: what lower_quant replaces them by. */
FcValue *fc_b_quantize_core(FcBuilder *b, FcValue *x, const FcQuant *q);
FcValue *fc_b_dequantize_core(FcBuilder *b, FcValue *x);

/* ---- tensor.c: constant data helpers -------------------------------------------------------------- */

/* Makes an arena tensor of `type` (data zeroed). */
FcTensor *fc_tensor_new(FcArena *a, FcType type);
/* Element i as double / int64 (any dtype; bool → 0/1; f16/bf16 converted). */
double fc_tensor_get_f64(const FcTensor *t, int64_t i);
int64_t fc_tensor_get_i64(const FcTensor *t, int64_t i);
void fc_tensor_set_f64(FcTensor *t, int64_t i, double v); /* converts to the dtype (ints truncate) */
void fc_tensor_set_i64(FcTensor *t, int64_t i, int64_t v);
float fc_f16_to_f32(uint16_t h);
uint16_t fc_f32_to_f16(float f);   /* round to nearest even */
float fc_bf16_to_f32(uint16_t h);
uint16_t fc_f32_to_bf16(float f);  /* round to nearest even */
/* The constant behind a value, or NULL when it is not defined by a CONSTANT op with data. */
const FcTensor *fc_value_const(const FcValue *v);
/* fc_value_const of a plain f32 tensor of one element (a scalar, or [1, 1, ..]), else NULL. */
const FcTensor *fc_value_scalar_f32(const FcValue *v);

/* ---- infer_*.c: shape/dtype inference hooks named in ops.def -------------------------------------- */

#define FC_OP(E, mn, imin, imax, omin, omax, flags, schema, infer, eval) \
  FcStatus fc_infer_##infer(FcOp *op, FcArena *arena, FcDiag *diag);
#include "ops.def"
#undef FC_OP

/* ---- infer_sbp.c: the mesh of an SBP program and its boxing ops' shapes ---------------------------- */

/* The module's mesh (its flow.mesh annotation): the number of axes, *dims set to the sizes; 0 when the
 * module has none (a one-process program). */
int fc_module_mesh(const FcModule *m, const int64_t **dims);
/* The size of the group of mesh axis `axis` (-1: every rank, the mesh's product); false when the module
 * has no mesh or the axis is out of range. */
bool fc_mesh_group_size(const FcModule *m, int64_t axis, int64_t *out);
/* The rank whose program m is (its flow.rank: a rank-specialised build), or -1 for every rank's. */
int64_t fc_module_rank(const FcModule *m);
/* Rank `rank`'s coordinate along mesh axis `axis` of m's mesh (axis -1: the rank itself), numbered as the
 * runtime numbers them (row-major, the last axis fastest); false when the mesh has no such axis or rank. */
bool fc_mesh_rank_coord(const FcModule *m, int64_t rank, int64_t axis, int64_t *coord);

/* ---- eval_*.c: reference evaluators named in ops.def ---------------------------------------------- */

#define FC_OP(E, mn, imin, imax, omin, omax, flags, schema, infer, eval) \
  FcStatus fc_eval_##eval(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag);
#include "ops.def"
#undef FC_OP

/* Evaluates an op whose operands are all constants with data (see FcEvalFn). */
FcStatus fc_op_eval(const FcOp *op, FcArena *arena, FcTensor **out, FcDiag *diag);

/* Re-infers one op's result types and checks them against the recorded ones (verifier, shape pass). */
FcStatus fc_op_infer(FcOp *op, FcDiag *diag);
/* Sets op's result types from its inference hook, after refusing quantised operands (which no op but the
 * terminator takes yet), and refuses (FC_ERR_LIMIT) any static result larger than
 * FC_DEFAULT_MAX_TENSOR_BYTES: the builder, the shape pass and fc_op_infer all infer through it. */
FcStatus fc_op_infer_results(FcOp *op, FcArena *arena, FcDiag *diag);
/* op moves storage integers without computing on them (reshape, transpose, max_pool, slice, concat, a nearest
 * resize): a per-tensor quantised operand passes its type through (max commutes with the monotone
 * quantisation; the others only move elements). The one list fold_qdq and quantize_static ask too. */
bool fc_op_passes_quant_through(const FcOp *op);

/* ---- verify.c ------------------------------------------------------------------------------------- */

/* Checks: op table counts, attribute schema (presence, kinds), types re-inferred equal the recorded
 * ones, operands defined before use (SSA dominance in a single block), use lists consistent, exactly
 * one RETURN at the end, rank/size limits; and each region as a graph of its own: YIELD at its end,
 * isolation from above, nesting within FC_MAX_REGION_DEPTH. */
FcStatus fc_verify(FcModule *m, FcDiag *diag);

/* ---- print.c / parse.c: MLIR generic-operation text ----------------------------------------------- */

typedef struct FcPrintOptions {
  bool weights;            /* write every constant's data (dense_resource blobs) so the text is complete */
  int64_t inline_limit;    /* constants with at most this many elements print inline as dense<...> */
} FcPrintOptions;
#define FC_PRINT_INLINE_LIMIT_DEFAULT 16

FcStatus fc_print_module(FILE *out, FcModule *m, const FcPrintOptions *opts, FcDiag *diag);
/* One annotation value as fc_print_module writes it (large tensors elided), for DOT labels and messages. */
void fc_print_annot_value(FILE *out, const FcAnnotValue *v);
/* Parses text produced by fc_print_module (and hand-written text in the same form). `source` names
 * the file in messages ("<file>:<line>:<col>: ..."). */
FcStatus fc_parse_module(const char *text, size_t len, const char *source, FcModule **out, FcDiag *diag);

#endif /* FLOWC_IR_H */
