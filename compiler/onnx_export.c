/* onnx_export.c — `--emit onnx`: writes a module (after the passes) as an ONNX model, opset 19.
 *
 * Approach: one walk over the graph's ops in order, each core op becoming one ONNX node (or a few), with
 * protobuf-c messages built in a scratch arena and packed once at the end. Every IR value gets one ONNX
 * tensor name: graph inputs and outputs keep their model names, constants become initializers (raw_data)
 * named after their loc (the initializer name the importer gave them), everything else a fresh name.
 * Names are made unique through one hash set, so a generated name never collides with a model name.
 *
 * Opset 17 (IR version 8), raised to 18 or 19 only for a module that uses what only those have: 17 has
 * everything the quantised parts need (per-axis QuantizeLinear/DequantizeLinear since 13) and
 * LayerNormalization, and it is the newest opset Debian's onnx 1.12 knows, so its checker and shape
 * inference can validate what flowc writes (onnxruntime 1.30 and flowc's importer take 17 to 21). Opset 18
 * adds BitwiseNot/And/Or/Xor and ScatterElements/ScatterND max and min (and moves the reduce ops' axes to
 * an input); 19 adds AveragePool dilations, Pad's wrap mode and Resize's half_pixel_symmetric.
 *
 * Quantised values are tensors of their storage integers; their scale and zero point travel on the IR
 * type and reappear where a value is read as real numbers: flow.quantize/dequantize become
 * QuantizeLinear/DequantizeLinear, flow.scast is no node at all (the same tensor under another type), the
 * pass-through ops (reshape, transpose, slice, concat, max_pool) run on the integers as the IR does, and a
 * quantised conv/matmul is written in QDQ form: DequantizeLinear on its input, its int8 weights (an
 * initializer) and its i32 bias (scale sx*sw), the float Conv/Gemm/MatMul, Relu or Clip for a narrowed
 * output range, and QuantizeLinear to its result type — the pattern onnxruntime fuses into QLinearConv /
 * QLinearMatMul / QGemm; a quantised mean likewise as DequantizeLinear, ReduceMean, QuantizeLinear.
 *
 * What has no ONNX form (element-wise programs of fuse_elementwise, epilogues, the blocked layout,
 * regions) is refused with one line naming the node; fc_onnx_export_passes drops the passes that make
 * them, so `--emit onnx` writes the module as it stands before fuse_epilogue/layout/fuse_elementwise/
 * fuse_casts.
 */
#include "onnx.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FC_ONNX_EXPORT_OPSET_MIN 17

typedef Onnx__NodeProto Node;

/* A growable array of message pointers in the arena. */
typedef struct PtrVec {
  void **v;
  size_t n, cap;
} PtrVec;

/* An open-addressing hash set of names. */
typedef struct NameSet {
  const char **v;
  size_t cap, n;
} NameSet;

typedef struct Ex {
  FcArena *a;
  FcDiag *diag;
  FcGraph *g;
  int opset;          /* of the default domain: 17, or 18/19 where an op needs it (opset_needed) */
  const char **names; /* by value id: the ONNX tensor name */
  PtrVec nodes, inits;
  NameSet tensors;    /* every tensor name in use */
  NameSet node_names; /* every node name in use: onnxruntime refuses a model with two nodes of one name */
  struct QuantInits { const FcQuant *q; const char *scale, *zp; } *qinits; /* written once per parameter set */
  int n_qinits, cap_qinits;
} Ex;

static void vec_push(FcArena *a, PtrVec *v, void *p) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? 2 * v->cap : 64;
    void **nv = FC_NEW_ARRAY(a, void *, cap);
    if (v->n) memcpy(nv, v->v, v->n * sizeof *nv);
    v->v = nv;
    v->cap = cap;
  }
  v->v[v->n++] = p;
}

/* ---- names ----------------------------------------------------------------------------------------- */

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static bool set_has(const NameSet *set, const char *s) {
  if (!set->cap) return false;
  for (size_t i = hash_str(s) & (set->cap - 1); set->v[i]; i = (i + 1) & (set->cap - 1))
    if (strcmp(set->v[i], s) == 0) return true;
  return false;
}

static void set_add(FcArena *a, NameSet *set, const char *s) {
  if (2 * (set->n + 1) > set->cap) {
    size_t cap = set->cap ? 2 * set->cap : 256;
    const char **nv = FC_NEW_ARRAY(a, const char *, cap);
    for (size_t i = 0; i < set->cap; i++) {
      if (!set->v[i]) continue;
      size_t j = hash_str(set->v[i]) & (cap - 1);
      while (nv[j]) j = (j + 1) & (cap - 1);
      nv[j] = set->v[i];
    }
    set->v = nv;
    set->cap = cap;
  }
  size_t j = hash_str(s) & (set->cap - 1);
  while (set->v[j]) j = (j + 1) & (set->cap - 1);
  set->v[j] = s;
  set->n++;
}

/* `want` if the set does not hold it yet, else want_1, want_2, ...; recorded as taken. */
static const char *unique_in(FcArena *a, NameSet *set, const char *want) {
  const char *s = want;
  for (int k = 1; set_has(set, s); k++) s = fc_arena_printf(a, "%s_%d", want, k);
  s = fc_arena_strdup(a, s);
  set_add(a, set, s);
  return s;
}

static const char *unique_name(Ex *e, const char *want) {
  return unique_in(e->a, &e->tensors, want && *want ? want : "t");
}

/* A fresh name for a tensor made by the exporter (`what` of the op's node), such as "conv1/w_scale". */
static const char *fresh(Ex *e, const FcOp *op, const char *what) {
  const char *loc = op && op->loc && *op->loc ? op->loc : "flowc";
  return unique_name(e, fc_arena_printf(e->a, "%s/%s", loc, what));
}

static const char *vname(const Ex *e, const FcValue *v) {
  if (!v) return "";
  FC_ASSERT(v->id < e->g->next_value_id && e->names[v->id]);
  return e->names[v->id];
}

/* ---- messages -------------------------------------------------------------------------------------- */

static char *dup(Ex *e, const char *s) { return fc_arena_strdup(e->a, s); }

static Node *node(Ex *e, const char *op_type, const FcOp *op, const char *const *in, int n_in,
                  const char *const *out, int n_out) {
  Node *n = FC_NEW(e->a, Node);
  onnx__node_proto__init(n);
  n->op_type = dup(e, op_type);
  n->domain = dup(e, "");
  /* The importer gives every op of a node that node's name, so one loc may stand for several nodes. */
  n->name = op && op->loc && *op->loc ? (char *)unique_in(e->a, &e->node_names, op->loc) : dup(e, "");
  n->n_input = (size_t)n_in;
  n->input = FC_NEW_ARRAY(e->a, char *, n_in ? (size_t)n_in : 1);
  for (int i = 0; i < n_in; i++) n->input[i] = dup(e, in[i] ? in[i] : "");
  n->n_output = (size_t)n_out;
  n->output = FC_NEW_ARRAY(e->a, char *, n_out ? (size_t)n_out : 1);
  for (int i = 0; i < n_out; i++) n->output[i] = dup(e, out[i]);
  vec_push(e->a, &e->nodes, n);
  return n;
}

static Onnx__AttributeProto *attr(Ex *e, Node *n, const char *name, Onnx__AttributeProto__AttributeType type) {
  Onnx__AttributeProto *at = FC_NEW(e->a, Onnx__AttributeProto);
  onnx__attribute_proto__init(at);
  at->name = dup(e, name);
  at->has_type = true;
  at->type = type;
  Onnx__AttributeProto **na = FC_NEW_ARRAY(e->a, Onnx__AttributeProto *, n->n_attribute + 1);
  if (n->n_attribute) memcpy(na, n->attribute, n->n_attribute * sizeof *na);
  na[n->n_attribute++] = at;
  n->attribute = na;
  return at;
}

static void attr_int(Ex *e, Node *n, const char *name, int64_t v) {
  Onnx__AttributeProto *at = attr(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  at->has_i = true;
  at->i = v;
}

static void attr_float(Ex *e, Node *n, const char *name, float v) {
  Onnx__AttributeProto *at = attr(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  at->has_f = true;
  at->f = v;
}

static void attr_str(Ex *e, Node *n, const char *name, const char *s) {
  Onnx__AttributeProto *at = attr(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
  at->has_s = true;
  at->s.len = strlen(s);
  at->s.data = (uint8_t *)dup(e, s);
}

static void attr_ints(Ex *e, Node *n, const char *name, const int64_t *v, int cnt) {
  Onnx__AttributeProto *at = attr(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  at->n_ints = (size_t)cnt;
  at->ints = cnt ? fc_arena_memdup(e->a, v, (size_t)cnt * sizeof *v, _Alignof(int64_t)) : NULL;
}

static void attr_floats(Ex *e, Node *n, const char *name, const float *v, int cnt) {
  Onnx__AttributeProto *at = attr(e, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
  at->n_floats = (size_t)cnt;
  at->floats = cnt ? fc_arena_memdup(e->a, v, (size_t)cnt * sizeof *v, _Alignof(float)) : NULL;
}

/* An initializer named `name` (already unique) holding nbytes of little-endian data. */
static const char *init_raw(Ex *e, const char *name, FcDtype dt, int rank, const int64_t *dims, const void *data,
                            int64_t nbytes) {
  Onnx__TensorProto *tp = FC_NEW(e->a, Onnx__TensorProto);
  onnx__tensor_proto__init(tp);
  tp->name = dup(e, name);
  tp->has_data_type = true;
  tp->data_type = fc_dtype_to_onnx(dt);
  tp->n_dims = (size_t)rank;
  tp->dims = rank ? fc_arena_memdup(e->a, dims, (size_t)rank * sizeof *dims, _Alignof(int64_t)) : NULL;
  tp->has_raw_data = true;
  tp->raw_data.len = (size_t)nbytes;
  tp->raw_data.data = nbytes ? (uint8_t *)data : NULL;
  vec_push(e->a, &e->inits, tp);
  return name;
}

/* Small initializers the exporter makes (axes, shapes, scales): rank 0 when n < 0, else 1-D [n]. */
static const char *init_i64(Ex *e, const FcOp *op, const char *what, const int64_t *v, int n) {
  int64_t d = n < 0 ? 1 : n;
  const void *p = fc_arena_memdup(e->a, v, (size_t)d * sizeof *v, _Alignof(int64_t));
  return init_raw(e, fresh(e, op, what), FC_DT_I64, n < 0 ? 0 : 1, &d, p, d * (int64_t)sizeof *v);
}

static const char *init_f32(Ex *e, const FcOp *op, const char *what, const float *v, int n) {
  int64_t d = n < 0 ? 1 : n;
  const void *p = fc_arena_memdup(e->a, v, (size_t)d * sizeof *v, _Alignof(float));
  return init_raw(e, fresh(e, op, what), FC_DT_F32, n < 0 ? 0 : 1, &d, p, d * (int64_t)sizeof *v);
}

/* Integers of an element type (u8, i8, i32) stored from int64 values. */
static const char *init_ints_as(Ex *e, const FcOp *op, const char *what, FcDtype dt, const int64_t *v, int n) {
  int64_t d = n < 0 ? 1 : n;
  size_t sz = fc_dtype_size(dt);
  uint8_t *p = fc_arena_alloc(e->a, (size_t)d * sz, 8);
  for (int64_t i = 0; i < d; i++) {
    if (dt == FC_DT_U8) p[i] = (uint8_t)v[i];
    else if (dt == FC_DT_I8) ((int8_t *)p)[i] = (int8_t)v[i];
    else if (dt == FC_DT_I32) memcpy(p + 4 * i, &(int32_t){(int32_t)v[i]}, 4);
    else FC_UNREACHABLE();
  }
  return init_raw(e, fresh(e, op, what), dt, n < 0 ? 0 : 1, &d, p, d * (int64_t)sz);
}

static Onnx__ValueInfoProto *value_info(Ex *e, const char *name, const FcType *t) {
  Onnx__ValueInfoProto *vi = FC_NEW(e->a, Onnx__ValueInfoProto);
  onnx__value_info_proto__init(vi);
  vi->name = dup(e, name);
  Onnx__TypeProto *tp = FC_NEW(e->a, Onnx__TypeProto);
  onnx__type_proto__init(tp);
  Onnx__TypeProto__Tensor *tt = FC_NEW(e->a, Onnx__TypeProto__Tensor);
  onnx__type_proto__tensor__init(tt);
  tt->has_elem_type = true;
  tt->elem_type = fc_dtype_to_onnx(t->dtype); /* a quantised value: its storage integers */
  Onnx__TensorShapeProto *sh = FC_NEW(e->a, Onnx__TensorShapeProto);
  onnx__tensor_shape_proto__init(sh);
  sh->n_dim = (size_t)t->rank;
  sh->dim = FC_NEW_ARRAY(e->a, Onnx__TensorShapeProto__Dimension *, t->rank ? (size_t)t->rank : 1);
  for (int i = 0; i < t->rank; i++) {
    Onnx__TensorShapeProto__Dimension *d = FC_NEW(e->a, Onnx__TensorShapeProto__Dimension);
    onnx__tensor_shape_proto__dimension__init(d);
    d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d->dim_value = t->dims[i];
    sh->dim[i] = d;
  }
  tt->shape = sh;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  vi->type = tp;
  return vi;
}

/* ---- errors ---------------------------------------------------------------------------------------- */

static FcStatus no_form(Ex *e, const FcOp *op, const char *why) {
  return fc_error_node(e->diag, FC_ERR_UNSUPPORTED, fc_op_name(op), fc_op_info(op->kind)->full_name,
                       "cannot be written as ONNX: %s", why);
}

/* ---- the op table ---------------------------------------------------------------------------------- */

/* Writes op's node(s); in/out are the operand and result names. */
typedef FcStatus (*ExFn)(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                         const char *onnx);

typedef struct ExRow {
  const char *onnx;  /* ONNX op type; NULL: the op has no ONNX form */
  const char *attrs; /* IR attributes copied as ONNX attributes of the same name, space-separated */
  ExFn fn;           /* NULL: one node, operands and results in order */
} ExRow;

static FcStatus ex_plain(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                         const char *onnx);
static FcStatus ex_cast(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                        const char *onnx);
static FcStatus ex_logic(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                         const char *onnx);
static FcStatus ex_shift(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                         const char *onnx);
static FcStatus ex_reduce(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                          const char *onnx);
static FcStatus ex_cumsum(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                          const char *onnx);
static FcStatus ex_random(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                          const char *onnx);
static FcStatus ex_matmul(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                          const char *onnx);
static FcStatus ex_quantize(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                            const char *onnx);
static FcStatus ex_dequantize(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                              const char *onnx);
static FcStatus ex_conv(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                        const char *onnx);
static FcStatus ex_reshape(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                           const char *onnx);
static FcStatus ex_expand(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                          const char *onnx);
static FcStatus ex_slice(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                         const char *onnx);
static FcStatus ex_pad(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                       const char *onnx);
static FcStatus ex_resize(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                          const char *onnx);
static FcStatus ex_avg_pool(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                            const char *onnx);
static FcStatus ex_topk(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                        const char *onnx);
static FcStatus ex_one_hot(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                           const char *onnx);

static const ExRow ex_rows[FC_OP_COUNT] = {
    [FC_OP_NEG] = {"Neg", "", NULL},
    [FC_OP_ABS] = {"Abs", "", NULL},
    [FC_OP_SIGN] = {"Sign", "", NULL},
    [FC_OP_CEIL] = {"Ceil", "", NULL},
    [FC_OP_FLOOR] = {"Floor", "", NULL},
    [FC_OP_ROUND] = {"Round", "", NULL},
    [FC_OP_SQRT] = {"Sqrt", "", NULL},
    [FC_OP_RECIPROCAL] = {"Reciprocal", "", NULL},
    [FC_OP_EXP] = {"Exp", "", NULL},
    [FC_OP_LOG] = {"Log", "", NULL},
    [FC_OP_SIN] = {"Sin", "", NULL},
    [FC_OP_COS] = {"Cos", "", NULL},
    [FC_OP_TAN] = {"Tan", "", NULL},
    [FC_OP_ASIN] = {"Asin", "", NULL},
    [FC_OP_ACOS] = {"Acos", "", NULL},
    [FC_OP_ATAN] = {"Atan", "", NULL},
    [FC_OP_SINH] = {"Sinh", "", NULL},
    [FC_OP_COSH] = {"Cosh", "", NULL},
    [FC_OP_TANH] = {"Tanh", "", NULL},
    [FC_OP_ASINH] = {"Asinh", "", NULL},
    [FC_OP_ACOSH] = {"Acosh", "", NULL},
    [FC_OP_ATANH] = {"Atanh", "", NULL},
    [FC_OP_ERF] = {"Erf", "", NULL},
    [FC_OP_SIGMOID] = {"Sigmoid", "", NULL},
    [FC_OP_SOFTPLUS] = {"Softplus", "", NULL},
    [FC_OP_RELU] = {"Relu", "", NULL},
    [FC_OP_NOT] = {"Not", "", NULL},
    [FC_OP_BITWISE_NOT] = {"BitwiseNot", "", NULL},
    [FC_OP_ISNAN] = {"IsNaN", "", NULL},
    [FC_OP_ISINF] = {"IsInf", "detect_negative detect_positive", NULL},
    [FC_OP_CAST] = {"Cast", "", ex_cast},
    [FC_OP_QUANTIZE] = {"QuantizeLinear", "", ex_quantize},
    [FC_OP_DEQUANTIZE] = {"DequantizeLinear", "", ex_dequantize},
    [FC_OP_ADD] = {"Add", "", NULL},
    [FC_OP_SUB] = {"Sub", "", NULL},
    [FC_OP_MUL] = {"Mul", "", NULL},
    [FC_OP_DIV] = {"Div", "", NULL},
    [FC_OP_POW] = {"Pow", "", NULL},
    [FC_OP_MAX] = {"Max", "", NULL},
    [FC_OP_MIN] = {"Min", "", NULL},
    [FC_OP_MOD] = {"Mod", "fmod", NULL},
    [FC_OP_BITSHIFT_LEFT] = {"BitShift", "", ex_shift},
    [FC_OP_BITSHIFT_RIGHT] = {"BitShift", "", ex_shift},
    [FC_OP_AND] = {"And", "", ex_logic},
    [FC_OP_OR] = {"Or", "", ex_logic},
    [FC_OP_XOR] = {"Xor", "", ex_logic},
    [FC_OP_EQUAL] = {"Equal", "", NULL},
    [FC_OP_LESS] = {"Less", "", NULL},
    [FC_OP_LESS_EQUAL] = {"LessOrEqual", "", NULL},
    [FC_OP_GREATER] = {"Greater", "", NULL},
    [FC_OP_GREATER_EQUAL] = {"GreaterOrEqual", "", NULL},
    [FC_OP_SELECT] = {"Where", "", NULL},
    [FC_OP_REDUCE_SUM] = {"ReduceSum", "keepdims", ex_reduce},
    [FC_OP_REDUCE_MEAN] = {"ReduceMean", "keepdims", ex_reduce},
    [FC_OP_REDUCE_MAX] = {"ReduceMax", "keepdims", ex_reduce},
    [FC_OP_REDUCE_MIN] = {"ReduceMin", "keepdims", ex_reduce},
    [FC_OP_REDUCE_PROD] = {"ReduceProd", "keepdims", ex_reduce},
    [FC_OP_ARGMAX] = {"ArgMax", "axis keepdims select_last_index", NULL},
    [FC_OP_ARGMIN] = {"ArgMin", "axis keepdims select_last_index", NULL},
    [FC_OP_SOFTMAX] = {"Softmax", "axis", NULL},
    [FC_OP_LOG_SOFTMAX] = {"LogSoftmax", "axis", NULL},
    [FC_OP_LAYER_NORM] = {"LayerNormalization", "axis epsilon", NULL},
    [FC_OP_CUMSUM] = {"CumSum", "exclusive reverse", ex_cumsum},
    [FC_OP_RANDOM_UNIFORM] = {"RandomUniform", "high low seed shape", ex_random},
    [FC_OP_MATMUL] = {"MatMul", "", ex_matmul},
    [FC_OP_CONV] = {"Conv", "dilations group pads strides", ex_conv},
    [FC_OP_CONV_TRANSPOSE] = {"ConvTranspose", "dilations group output_padding pads strides", NULL},
    [FC_OP_MAX_POOL] = {"MaxPool", "ceil_mode dilations kernel_shape pads storage_order strides", NULL},
    [FC_OP_AVG_POOL] = {"AveragePool", "ceil_mode count_include_pad kernel_shape pads strides", ex_avg_pool},
    [FC_OP_RESHAPE] = {"Reshape", "", ex_reshape},
    [FC_OP_TRANSPOSE] = {"Transpose", "perm", NULL},
    [FC_OP_BROADCAST] = {"Expand", "", ex_expand},
    [FC_OP_CONCAT] = {"Concat", "axis", NULL},
    [FC_OP_SLICE] = {"Slice", "", ex_slice},
    [FC_OP_PAD] = {"Pad", "mode", ex_pad},
    [FC_OP_GATHER] = {"Gather", "axis", NULL},
    [FC_OP_GATHER_ELEMENTS] = {"GatherElements", "axis", NULL},
    [FC_OP_GATHER_ND] = {"GatherND", "batch_dims", NULL},
    [FC_OP_SCATTER_ELEMENTS] = {"ScatterElements", "axis reduction", NULL},
    [FC_OP_SCATTER_ND] = {"ScatterND", "reduction", NULL},
    [FC_OP_RESIZE] = {"Resize",
                      "coordinate_transformation_mode cubic_coeff_a exclude_outside extrapolation_value mode nearest_mode",
                      ex_resize},
    [FC_OP_TOPK] = {"TopK", "axis largest sorted", ex_topk},
    [FC_OP_ONE_HOT] = {"OneHot", "axis", ex_one_hot},
    [FC_OP_EINSUM] = {"Einsum", "equation", NULL},
    [FC_OP_DET] = {"Det", "", NULL},
    [FC_OP_GRID_SAMPLE] = {"GridSample", "align_corners mode padding_mode", NULL},
    [FC_OP_ROI_ALIGN] = {"RoiAlign",
                         "coordinate_transformation_mode mode output_height output_width sampling_ratio spatial_scale",
                         NULL},
    [FC_OP_REVERSE_SEQUENCE] = {"ReverseSequence", "batch_axis time_axis", NULL},
};

/* Copies the row's attributes that op has to n. */
static void copy_attrs(Ex *e, const FcOp *op, const char *list, Node *n) {
  for (const char *p = list; p && *p;) {
    size_t len = strcspn(p, " ");
    FcAttrName an;
    FC_ASSERT(fc_attr_name_from_str(p, len, &an)); /* a typo in the table is a bug */
    const FcAttr *at = fc_op_attr(op, an);
    const char *name = fc_attr_name_str(an);
    if (at) {
      switch (at->kind) {
      case FC_AK_INT: attr_int(e, n, name, at->i); break;
      case FC_AK_FLOAT: attr_float(e, n, name, at->f); break;
      case FC_AK_STR: attr_str(e, n, name, at->s); break;
      case FC_AK_INTS: attr_ints(e, n, name, at->ints.v, at->ints.n); break;
      case FC_AK_FLOATS: attr_floats(e, n, name, at->floats.v, at->floats.n); break;
      case FC_AK_TYPE: attr_int(e, n, name, fc_dtype_to_onnx(at->type)); break;
      default: FC_UNREACHABLE();
      }
    }
    p += len;
    while (*p == ' ') p++;
  }
}

static Node *row_node(Ex *e, const FcOp *op, const char *onnx, const char **in, int n_in, const char **out,
                      int n_out) {
  Node *n = node(e, onnx, op, in, n_in, out, n_out);
  copy_attrs(e, op, ex_rows[op->kind].attrs, n);
  return n;
}

static FcStatus ex_plain(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                         const char *onnx) {
  row_node(e, op, onnx, in, n_in, out, n_out);
  return FC_OK;
}

static FcStatus ex_cast(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                        const char *onnx) {
  Node *n = row_node(e, op, onnx, in, n_in, out, n_out);
  attr_int(e, n, "to", fc_dtype_to_onnx(op->results[0].type.dtype));
  return FC_OK;
}

/* and/or/xor: bool operands are ONNX's logical ops, integers its bitwise ones. */
static FcStatus ex_logic(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                         const char *onnx) {
  if (op->operands[0].value->type.dtype != FC_DT_BOOL) onnx = fc_arena_printf(e->a, "Bitwise%s", onnx);
  row_node(e, op, onnx, in, n_in, out, n_out);
  return FC_OK;
}

static FcStatus ex_shift(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                         const char *onnx) {
  Node *n = row_node(e, op, onnx, in, n_in, out, n_out);
  attr_str(e, n, "direction", op->kind == FC_OP_BITSHIFT_LEFT ? "LEFT" : "RIGHT");
  return FC_OK;
}

static FcStatus ex_cumsum(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                          const char *onnx) {
  (void)n_in;
  int64_t axis = fc_op_attr_int(op, FC_ATTR_AXIS, 0);
  const char *ins[2] = {in[0], init_i64(e, op, "axis", &axis, -1)};
  row_node(e, op, onnx, ins, 2, out, n_out);
  return FC_OK;
}

static FcStatus ex_random(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                          const char *onnx) {
  Node *n = row_node(e, op, onnx, in, n_in, out, n_out);
  attr_int(e, n, "dtype", fc_dtype_to_onnx(op->results[0].type.dtype));
  return FC_OK;
}

/* ---- quantisation ---------------------------------------------------------------------------------- */

/* QuantizeLinear/DequantizeLinear take 8-bit integers up to opset 19 (16-bit from 21). */
static bool onnx_storage(const FcQuant *q) { return q->storage == FC_DT_U8 || q->storage == FC_DT_I8; }

/* Initializers for q's scales (f32) and zero points (its storage type): rank 0 per tensor, 1-D per axis. */
static void quant_params(Ex *e, const FcOp *op, const char *what, const FcQuant *q, const char **scale,
                         const char **zp) {
  /* Parameters differing only in range (a narrowed qtype and its operand's) share initializers. */
  for (int i = 0; i < e->n_qinits; i++) {
    const FcQuant *c = e->qinits[i].q;
    if (c->storage == q->storage && c->axis == q->axis && c->n == q->n &&
        !memcmp(c->scales, q->scales, (size_t)q->n * sizeof *q->scales) &&
        !memcmp(c->zero_points, q->zero_points, (size_t)q->n * sizeof *q->zero_points)) {
      *scale = e->qinits[i].scale;
      *zp = e->qinits[i].zp;
      return;
    }
  }
  float *s = FC_NEW_ARRAY(e->a, float, (size_t)q->n);
  for (int i = 0; i < q->n; i++) s[i] = (float)q->scales[i];
  int n = q->axis < 0 ? -1 : q->n;
  *scale = init_f32(e, op, fc_arena_printf(e->a, "%s_scale", what), s, n);
  *zp = init_ints_as(e, op, fc_arena_printf(e->a, "%s_zero_point", what), q->storage, q->zero_points, n);
  if (e->n_qinits == e->cap_qinits) {
    int cap = e->cap_qinits ? 2 * e->cap_qinits : 16;
    struct QuantInits *nq = FC_NEW_ARRAY(e->a, struct QuantInits, (size_t)cap);
    if (e->n_qinits) memcpy(nq, e->qinits, (size_t)e->n_qinits * sizeof *nq);
    e->qinits = nq;
    e->cap_qinits = cap;
  }
  e->qinits[e->n_qinits++] = (struct QuantInits){q, *scale, *zp};
}

/* DequantizeLinear(x) of q-typed tensor x into a new tensor; returns its name. */
static const char *dequantize_linear(Ex *e, const FcOp *op, const char *what, const char *x, const FcQuant *q) {
  const char *scale, *zp, *y = fresh(e, op, fc_arena_printf(e->a, "%s_dq", what));
  quant_params(e, op, what, q, &scale, &zp);
  const char *in[3] = {x, scale, zp};
  Node *n = node(e, "DequantizeLinear", op, in, 3, &y, 1);
  if (q->axis >= 0) attr_int(e, n, "axis", q->axis);
  return y;
}

/* QuantizeLinear(x) to q into `y`. ONNX saturates to the storage type's range: a narrowed range
 * [qmin, qmax] gets a Clip of the integers after it (Clip takes 8-bit integers since opset 12). */
static void quantize_linear(Ex *e, const FcOp *op, const char *x, const FcQuant *q, const char *y) {
  int64_t lo, hi;
  FC_ASSERT(fc_quant_storage_range(q->storage, &lo, &hi));
  bool narrowed = q->qmin > lo || q->qmax < hi;
  const char *scale, *zp, *qv = narrowed ? fresh(e, op, "q_wide") : y;
  quant_params(e, op, "y", q, &scale, &zp);
  const char *in[3] = {x, scale, zp};
  Node *n = node(e, "QuantizeLinear", op, in, 3, &qv, 1);
  if (q->axis >= 0) attr_int(e, n, "axis", q->axis);
  if (!narrowed) return;
  const char *cin[3] = {qv, q->qmin > lo ? init_ints_as(e, op, "qmin", q->storage, &q->qmin, -1) : "",
                        q->qmax < hi ? init_ints_as(e, op, "qmax", q->storage, &q->qmax, -1) : ""};
  node(e, "Clip", op, cin, 3, &y, 1);
}

static FcStatus ex_quantize(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                            const char *onnx) {
  (void)n_in, (void)n_out, (void)onnx;
  const FcQuant *q = op->results[0].type.quant;
  if (!onnx_storage(q)) return no_form(e, op, "QuantizeLinear stores 8-bit integers only (16-bit needs opset 21)");
  quantize_linear(e, op, in[0], q, out[0]);
  return FC_OK;
}

static FcStatus ex_dequantize(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                              const char *onnx) {
  (void)n_in, (void)n_out;
  const FcQuant *q = op->operands[0].value->type.quant;
  const char *scale, *zp;
  int n_ins = 3;
  if (q->storage == FC_DT_I32) {
    /* int32 (a bias a conv did not take as an integer one): ONNX has no zero point for it, it is 0 */
    for (int i = 0; i < q->n; i++)
      if (q->zero_points[i]) return no_form(e, op, "DequantizeLinear of int32 takes zero points of 0 only");
    float *s = FC_NEW_ARRAY(e->a, float, (size_t)q->n);
    for (int i = 0; i < q->n; i++) s[i] = (float)q->scales[i];
    scale = init_f32(e, op, "x_scale", s, q->axis < 0 ? -1 : q->n);
    zp = NULL, n_ins = 2;
  } else if (!onnx_storage(q)) {
    return no_form(e, op, "DequantizeLinear reads 8-bit and 32-bit integers only (16-bit needs opset 21)");
  } else {
    quant_params(e, op, "x", q, &scale, &zp);
  }
  const char *ins[3] = {in[0], scale, zp};
  Node *n = node(e, onnx, op, ins, n_ins, out, 1);
  if (q->axis >= 0) attr_int(e, n, "axis", q->axis);
  return FC_OK;
}

/* scast is the same tensor under another type: no node, its result takes the operand's name (an Identity
 * only where the result is a graph output, which has its own name). */
static FcStatus ex_scast(Ex *e, const FcOp *op) {
  const FcValue *r = &op->results[0];
  const char *x = vname(e, op->operands[0].value);
  if (!e->names[r->id]) {
    e->names[r->id] = x;
    return FC_OK;
  }
  node(e, "Identity", op, &x, 1, &e->names[r->id], 1);
  return FC_OK;
}

/* The axes are an attribute before opset 18, an input from 18 on (ReduceSum's from 13 on). A quantised
 * mean is written in QDQ form: DequantizeLinear, ReduceMean, QuantizeLinear (which onnxruntime fuses into
 * its integer average where it has one). */
static FcStatus ex_reduce(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                          const char *onnx) {
  (void)n_in;
  const FcAttr *qa = fc_op_attr(op, FC_ATTR_QTYPE);
  const FcQuant *qx = op->operands[0].value->type.quant;
  if (qa && (!onnx_storage(qx) || !onnx_storage(qa->quant)))
    return no_form(e, op, "QuantizeLinear/DequantizeLinear take 8-bit integers only");
  const char *x = qa ? dequantize_linear(e, op, "x", in[0], qx) : in[0], *y = qa ? fresh(e, op, "y_f") : out[0];
  const int64_t *axes;
  int na = fc_op_attr_ints(op, FC_ATTR_AXES, &axes);
  bool as_input = e->opset >= 18 || op->kind == FC_OP_REDUCE_SUM;
  const char *ins[2] = {x, na && as_input ? init_i64(e, op, "axes", axes, na) : ""};
  Node *n = row_node(e, op, onnx, ins, na && as_input ? 2 : 1, &y, n_out);
  if (na && !as_input) attr_ints(e, n, "axes", axes, na);
  if (qa) quantize_linear(e, op, y, qa->quant, out[0]);
  return FC_OK;
}

/* A quantised conv or matmul in QDQ form: DequantizeLinear on the input, the weight and the i32 bias (scale
 * sx*sw[c], zero point 0), the float op, and QuantizeLinear to qtype (none for qtype f32), with a Clip of
 * the integers where qtype's range is narrowed (a fused activation). A matmul with a bias and 2-D operands is a Gemm, the
 * form onnxruntime fuses with its bias (QGemm); otherwise MatMul and Add. */
static FcStatus ex_quant_compute(Ex *e, const FcOp *op, const char **in, int n_in, const char **out) {
  const FcQuant *qx = op->operands[0].value->type.quant, *qw = op->operands[1].value->type.quant;
  const FcAttr *qa = fc_op_attr(op, FC_ATTR_QTYPE);
  const FcQuant *qy = qa->quant;
  bool conv = op->kind == FC_OP_CONV;
  if (!onnx_storage(qx) || !onnx_storage(qw) || (qy && !onnx_storage(qy)))
    return no_form(e, op, "QuantizeLinear/DequantizeLinear take 8-bit integers only");
  const char *xf = dequantize_linear(e, op, "x", in[0], qx);
  const char *wf = dequantize_linear(e, op, "w", in[1], qw);
  const char *bf = "";
  if (n_in > 2 && *in[2]) {
    /* The bias is in units of sx * sw[c]: its scales per output channel when the weight has them. */
    FcQuant qb = {.storage = FC_DT_I32, .expressed = FC_DT_F32, .axis = qw->axis < 0 ? -1 : 0, .n = qw->n};
    double *sb = FC_NEW_ARRAY(e->a, double, (size_t)qw->n);
    for (int i = 0; i < qw->n; i++) sb[i] = qx->scales[0] * qw->scales[i];
    qb.scales = sb;
    float *s = FC_NEW_ARRAY(e->a, float, (size_t)qb.n);
    for (int i = 0; i < qb.n; i++) s[i] = (float)sb[i];
    const char *scale = init_f32(e, op, "b_scale", s, qb.axis < 0 ? -1 : qb.n);
    bf = fresh(e, op, "b_dq");
    const char *bin[2] = {in[2], scale};
    Node *n = node(e, "DequantizeLinear", op, bin, 2, &bf, 1);
    if (qb.axis >= 0) attr_int(e, n, "axis", 0);
  }
  const char *y = qy ? fresh(e, op, "y_f") : out[0];
  if (conv) {
    const char *cin[3] = {xf, wf, bf};
    row_node(e, op, "Conv", cin, *bf ? 3 : 2, &y, 1);
  } else if (*bf && op->operands[0].value->type.rank == 2) {
    const char *gin[3] = {xf, wf, bf};
    node(e, "Gemm", op, gin, 3, &y, 1);
  } else {
    const char *min[2] = {xf, wf}, *mm = *bf ? fresh(e, op, "mm_f") : y;
    node(e, "MatMul", op, min, 2, &mm, 1);
    if (*bf) {
      const char *ain[2] = {mm, bf};
      node(e, "Add", op, ain, 2, &y, 1);
    }
  }
  /* A narrowed range (a fused ReLU or Clip) is the Clip of the integers after QuantizeLinear: the IR clamps
   * after rounding too, and onnxruntime still fuses DequantizeLinear, Conv and QuantizeLinear (a float Relu
   * between Conv and QuantizeLinear would keep it from doing so unless the zero point is the range's
   * lower end). */
  if (qy) quantize_linear(e, op, y, qy, out[0]);
  return FC_OK;
}

static FcStatus ex_matmul(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                          const char *onnx) {
  if (fc_op_attr(op, FC_ATTR_QTYPE)) return ex_quant_compute(e, op, in, n_in, out);
  if (fc_op_attr(op, FC_ATTR_EPILOGUE)) return no_form(e, op, "a fused epilogue (export before fuse_epilogue)");
  const FcType *a = &op->operands[0].value->type, *b = &op->operands[1].value->type;
  /* 8-bit operands accumulate into i32: ONNX's MatMulInteger without zero points. */
  if (fc_matmul_is_int8(a->dtype, b->dtype)) onnx = "MatMulInteger";
  row_node(e, op, onnx, in, n_in, out, n_out);
  return FC_OK;
}

/* The i32 data of constant value v, or NULL. */
static const int32_t *i32_constant(const FcValue *v, int64_t *count) {
  const FcAttr *at = v && v->def && v->def->kind == FC_OP_CONSTANT ? fc_op_attr(v->def, FC_ATTR_VALUE) : NULL;
  const FcTensor *t = at ? at->tensor : NULL;
  if (!t || !t->data || t->type.dtype != FC_DT_I32) return NULL;
  *count = (int64_t)(t->nbytes / 4);
  return t->data;
}

/* An integer conv's input as ConvInteger's import leaves it: an 8-bit tensor cast to i32, less a scalar
 * constant (its zero point; *zp = 0 without one). Returns the 8-bit tensor, or NULL. */
static const FcValue *int8_input(const FcValue *x, int64_t *zp) {
  int64_t n;
  *zp = 0;
  if (x->def && x->def->kind == FC_OP_SUB) {
    const int32_t *c = i32_constant(x->def->operands[1].value, &n);
    if (!c || n != 1) return NULL;
    *zp = c[0];
    x = x->def->operands[0].value;
  }
  if (!x->def || x->def->kind != FC_OP_CAST || !fc_dtype_is_8bit(x->def->operands[0].value->type.dtype)) return NULL;
  return x->def->operands[0].value;
}

/* An integer conv of an 8-bit input less its zero point and constant weights that fit 8 bits with one zero
 * point, written back as ConvInteger; false where it is not that. */
static bool conv_integer(Ex *e, const FcOp *op, int n, const char **out) {
  int64_t zx, wn, lo = INT64_MAX, hi = INT64_MIN;
  const FcValue *x8 = int8_input(op->operands[0].value, &zx);
  const int32_t *w = i32_constant(op->operands[1].value, &wn);
  if (n != 2 || !x8 || !w || op->results[0].type.dtype != FC_DT_I32) return false;
  FcDtype xt = x8->type.dtype;
  if (xt == FC_DT_U8 ? zx < 0 || zx > 255 : zx < -128 || zx > 127) return false;
  for (int64_t i = 0; i < wn; i++) lo = w[i] < lo ? w[i] : lo, hi = w[i] > hi ? w[i] : hi;
  /* int8 weights as they are, else uint8 ones with the zero point zw that puts them in [0, 255] */
  bool s8 = lo >= -128 && hi <= 127;
  int64_t zw = s8 ? 0 : lo < 0 ? -lo : 0;
  if (!s8 && (zw > 255 || hi + zw > 255)) return false;
  FcDtype wt = s8 ? FC_DT_I8 : FC_DT_U8;
  uint8_t *wb = fc_arena_alloc(e->a, (size_t)wn, 1);
  for (int64_t i = 0; i < wn; i++) wb[i] = (uint8_t)(w[i] + zw); /* the two's-complement byte for int8 */
  const FcType *wty = &op->operands[1].value->type;
  const char *ins[4] = {vname(e, x8), init_raw(e, fresh(e, op, "w_8bit"), wt, wty->rank, wty->dims, wb, wn),
                        init_ints_as(e, op, "x_zero_point", xt, &zx, -1), init_ints_as(e, op, "w_zero_point", wt, &zw, -1)};
  copy_attrs(e, op, ex_rows[FC_OP_CONV].attrs, node(e, "ConvInteger", op, ins, 4, out, 1));
  return true;
}

static FcStatus ex_conv(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                        const char *onnx) {
  if (fc_op_attr(op, FC_ATTR_QTYPE)) return ex_quant_compute(e, op, in, n_in, out);
  if (fc_op_attr(op, FC_ATTR_EPILOGUE)) return no_form(e, op, "a fused epilogue (export before fuse_epilogue)");
  /* An absent bias (null operand 2) is dropped rather than written as "". */
  int n = n_in == 3 && !*in[2] ? 2 : n_in;
  FcDtype dt = op->results[0].type.dtype;
  if (fc_dtype_is_float(dt)) {
    row_node(e, op, onnx, in, n, out, n_out);
    return FC_OK;
  }
  /* ONNX's Conv is floating point only. An integer conv in ConvInteger's import form is written back as
   * ConvInteger (its 8-bit input is still there; the cast and subtraction before the conv go unused). */
  if (conv_integer(e, op, n, out)) return FC_OK;
  return no_form(e, op, "an integer conv other than ConvInteger's (an 8-bit input less a scalar zero point, constant "
                        "weights within 8 bits of one zero point, no bias)");
}

/* The IR carries the full result shape, so a 0 in it is a real 0 (allowzero), never "copy this dim". */
static FcStatus ex_reshape(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                           const char *onnx) {
  (void)n_in;
  const int64_t *shape;
  int n = fc_op_attr_ints(op, FC_ATTR_SHAPE, &shape);
  bool zero = false;
  for (int i = 0; i < n; i++) zero |= shape[i] == 0;
  const char *ins[2] = {in[0], init_i64(e, op, "shape", shape, n)};
  Node *nd = row_node(e, op, onnx, ins, 2, out, n_out);
  if (zero) attr_int(e, nd, "allowzero", 1);
  return FC_OK;
}

static FcStatus ex_expand(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                          const char *onnx) {
  (void)n_in;
  const int64_t *shape;
  int n = fc_op_attr_ints(op, FC_ATTR_SHAPE, &shape);
  const char *ins[2] = {in[0], init_i64(e, op, "shape", shape, n)};
  row_node(e, op, onnx, ins, 2, out, n_out);
  return FC_OK;
}

/* The IR's bounds are clamped per axis: a negative step may start or end at -1, "before element 0",
 * which ONNX would read as the last element; -(dim + 1) is the spelling ONNX clamps back to -1. */
static FcStatus ex_slice(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                         const char *onnx) {
  (void)n_in;
  const FcType *x = &op->operands[0].value->type;
  const int64_t *st, *en, *sp;
  int r = fc_op_attr_ints(op, FC_ATTR_STARTS, &st);
  FC_ASSERT(fc_op_attr_ints(op, FC_ATTR_ENDS, &en) == r && fc_op_attr_ints(op, FC_ATTR_STEPS, &sp) == r);
  int64_t *s = FC_NEW_ARRAY(e->a, int64_t, r ? (size_t)r : 1), *en2 = FC_NEW_ARRAY(e->a, int64_t, r ? (size_t)r : 1);
  int64_t *axes = FC_NEW_ARRAY(e->a, int64_t, r ? (size_t)r : 1);
  for (int i = 0; i < r; i++) {
    s[i] = st[i] == -1 && sp[i] < 0 ? -(x->dims[i] + 1) : st[i];
    en2[i] = en[i] == -1 && sp[i] < 0 ? -(x->dims[i] + 1) : en[i];
    axes[i] = i;
  }
  const char *ins[5] = {in[0], init_i64(e, op, "starts", s, r), init_i64(e, op, "ends", en2, r),
                        init_i64(e, op, "axes", axes, r), init_i64(e, op, "steps", sp, r)};
  row_node(e, op, onnx, ins, 5, out, n_out);
  return FC_OK;
}

static FcStatus ex_pad(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                       const char *onnx) {
  const int64_t *pads;
  int n = fc_op_attr_ints(op, FC_ATTR_PADS, &pads);
  const char *ins[3] = {in[0], init_i64(e, op, "pads", pads, n), n_in > 1 ? in[1] : ""};
  row_node(e, op, onnx, ins, n_in > 1 ? 3 : 2, out, n_out);
  return FC_OK;
}

/* Resize with the scales it carries when it has them (the output is then floor(in * scale), which must be
 * the size the IR recorded), else with sizes; roi only for tf_crop_and_resize, the one mode that reads it. */
static FcStatus ex_resize(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                          const char *onnx) {
  (void)n_in;
  const FcType *x = &op->operands[0].value->type;
  const float *scales, *roi;
  const int64_t *sizes;
  int ns = fc_op_attr_floats(op, FC_ATTR_SCALES, &scales), nr = fc_op_attr_floats(op, FC_ATTR_ROI, &roi);
  int nz = fc_op_attr_ints(op, FC_ATTR_SIZES, &sizes);
  const char *ctm = fc_op_attr_str(op, FC_ATTR_COORDINATE_TRANSFORMATION_MODE, "half_pixel");
  bool crop = strcmp(ctm, "tf_crop_and_resize") == 0;
  if (ns) {
    for (int i = 0; i < ns && i < x->rank; i++) {
      double extent = crop && nr == 2 * x->rank ? (double)roi[x->rank + i] - roi[i] : 1.0;
      if ((int64_t)floor((double)x->dims[i] * scales[i] * extent) != sizes[i])
        return no_form(e, op, "its scales do not give its output size (keep_aspect_ratio_policy)");
    }
  }
  const char *ins[4] = {in[0], crop && nr ? init_f32(e, op, "roi", roi, nr) : "", ns ? init_f32(e, op, "scales", scales, ns) : "",
                        ns ? "" : init_i64(e, op, "sizes", sizes, nz)};
  row_node(e, op, onnx, ins, ns ? 3 : 4, out, n_out);
  return FC_OK;
}

/* AveragePool has dilations from opset 19 on (opset_needed raises it for dilations other than 1). */
static FcStatus ex_avg_pool(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                            const char *onnx) {
  Node *n = row_node(e, op, onnx, in, n_in, out, n_out);
  const int64_t *d;
  int nd = fc_op_attr_ints(op, FC_ATTR_DILATIONS, &d);
  if (e->opset >= 19 && nd) attr_ints(e, n, "dilations", d, nd);
  return FC_OK;
}

static FcStatus ex_topk(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                        const char *onnx) {
  (void)n_in;
  int64_t k = fc_op_attr_int(op, FC_ATTR_K, 0);
  const char *ins[2] = {in[0], init_i64(e, op, "k", &k, 1)};
  row_node(e, op, onnx, ins, 2, out, n_out);
  return FC_OK;
}

static FcStatus ex_one_hot(Ex *e, const FcOp *op, const char **in, int n_in, const char **out, int n_out,
                           const char *onnx) {
  (void)n_in;
  int64_t depth = fc_op_attr_int(op, FC_ATTR_DEPTH, 0);
  const char *ins[3] = {in[0], init_i64(e, op, "depth", &depth, -1), in[1]};
  row_node(e, op, onnx, ins, 3, out, n_out);
  return FC_OK;
}

/* ---- the walk -------------------------------------------------------------------------------------- */

/* The opset an op needs: 17 unless it uses a form that only a later opset defines. */
static int opset_needed(const FcOp *op) {
  const int64_t *v;
  switch (op->kind) {
  case FC_OP_AND:
  case FC_OP_OR:
  case FC_OP_XOR: return op->operands[0].value->type.dtype == FC_DT_BOOL ? 17 : 18;
  case FC_OP_BITWISE_NOT: return 18;
  case FC_OP_SCATTER_ELEMENTS:
  case FC_OP_SCATTER_ND: {
    const char *r = fc_op_attr_str(op, FC_ATTR_REDUCTION, "none");
    return strcmp(r, "max") == 0 || strcmp(r, "min") == 0 ? 18 : 17;
  }
  case FC_OP_AVG_POOL:
    for (int i = 0, n = fc_op_attr_ints(op, FC_ATTR_DILATIONS, &v); i < n; i++)
      if (v[i] != 1) return 19;
    return 17;
  case FC_OP_PAD: return strcmp(fc_op_attr_str(op, FC_ATTR_MODE, "constant"), "wrap") == 0 ? 19 : 17;
  case FC_OP_RESIZE:
    return strcmp(fc_op_attr_str(op, FC_ATTR_COORDINATE_TRANSFORMATION_MODE, ""), "half_pixel_symmetric") == 0 ? 19
                                                                                                               : 17;
  default: return 17;
  }
}

/* A constant becomes an initializer named after its loc (the importer's initializer name). */
static FcStatus ex_constant(Ex *e, const FcOp *op) {
  const FcAttr *at = fc_op_attr(op, FC_ATTR_VALUE);
  const FcTensor *t = at ? at->tensor : NULL;
  if (!t || !t->data) return no_form(e, op, "its data was elided from the IR text (write it with --weights)");
  const FcValue *v = &op->results[0];
  if (!e->names[v->id]) e->names[v->id] = unique_name(e, op->loc && *op->loc ? op->loc : "const");
  init_raw(e, e->names[v->id], t->type.dtype, t->type.rank, t->type.dims, t->data, t->nbytes);
  return FC_OK;
}

static FcStatus ex_op(Ex *e, const FcOp *op) {
  if (op->kind == FC_OP_CONSTANT) return ex_constant(e, op);
  if (op->kind == FC_OP_SCAST) return ex_scast(e, op);
  const ExRow *row = &ex_rows[op->kind];
  if (!row->onnx) {
    const char *why = op->kind == FC_OP_FUSED          ? "an element-wise program of fuse_elementwise or fuse_casts (export before them)"
                      : op->kind == FC_OP_CONV_BLOCKED ? "the blocked layout of the layout pass (export before it)"
                      : op->n_regions                  ? "region ops (Loop, If) are not written yet"
                                                       : "no ONNX op is known for it";
    return no_form(e, op, why);
  }
  const char **in = FC_NEW_ARRAY(e->a, const char *, op->n_operands ? (size_t)op->n_operands : 1);
  const char **out = FC_NEW_ARRAY(e->a, const char *, (size_t)op->n_results);
  for (int i = 0; i < op->n_operands; i++) in[i] = vname(e, op->operands[i].value);
  for (int i = 0; i < op->n_results; i++) {
    const FcValue *r = &op->results[i];
    /* An unused optional result (max_pool's indices) is left out, so ONNX does not compute it. */
    if (i > 0 && !fc_value_has_uses(r) && !e->names[r->id]) {
      out[i] = "";
      continue;
    }
    if (!e->names[r->id]) e->names[r->id] = fresh(e, op, i ? fc_arena_printf(e->a, "out%d", i) : "out");
    out[i] = e->names[r->id];
  }
  int n_out = op->n_results;
  while (n_out > 1 && !*out[n_out - 1]) n_out--;
  return (row->fn ? row->fn : ex_plain)(e, op, in, op->n_operands, out, n_out, row->onnx);
}

/* Values the RETURN names take the output names, so most outputs need no Identity node. A value returned
 * twice, a graph input or a constant returned as an output gets an Identity per extra name. */
static FcStatus name_outputs(Ex *e) {
  int n = fc_graph_num_outputs(e->g);
  NameSet outs = {0};
  for (int i = 0; i < n; i++) {
    FcValue *v = fc_graph_output(e->g, i);
    const char *name = fc_graph_output_name(e->g, i);
    if (!name || !*name) continue;
    /* scast writes no node: the name goes to the value whose tensor it is. */
    while (v->def && v->def->kind == FC_OP_SCAST) v = v->def->operands[0].value;
    /* ONNX names each tensor once: two outputs of one name, or an output named like an input it is not. */
    if (set_has(&outs, name)) return fc_error(e->diag, FC_ERR_INPUT, "two graph outputs are named '%s'", name);
    set_add(e->a, &outs, name);
    if (set_has(&e->tensors, name)) {
      if (v->def || strcmp(e->names[v->id], name) != 0)
        return fc_error(e->diag, FC_ERR_INPUT, "graph output '%s' has the name of a graph input", name);
      continue;
    }
    set_add(e->a, &e->tensors, fc_arena_strdup(e->a, name));
    if (v->def && v->def->kind != FC_OP_CONSTANT && !e->names[v->id]) e->names[v->id] = name;
  }
  return FC_OK;
}

static FcStatus finish_outputs(Ex *e, Onnx__GraphProto *gp) {
  int n = fc_graph_num_outputs(e->g);
  gp->n_output = (size_t)n;
  gp->output = FC_NEW_ARRAY(e->a, Onnx__ValueInfoProto *, n ? (size_t)n : 1);
  NameSet outs = {0};
  for (int i = 0; i < n; i++) {
    FcValue *v = fc_graph_output(e->g, i);
    const char *name = fc_graph_output_name(e->g, i);
    const char *have = vname(e, v);
    /* An output the model did not name is the tensor itself, unless an earlier output is. */
    if (!name || !*name) name = set_has(&outs, have) ? unique_name(e, fc_arena_printf(e->a, "output_%d", i)) : have;
    set_add(e->a, &outs, name);
    if (strcmp(have, name) != 0) {
      const char *in[1] = {have}, *out[1] = {name};
      node(e, "Identity", NULL, in, 1, out, 1);
    }
    gp->output[i] = value_info(e, name, &v->type);
  }
  return FC_OK;
}

static FcStatus export_graph(Ex *e, Onnx__GraphProto *gp) {
  FcGraph *g = e->g;
  gp->name = dup(e, g->name ? g->name : "main");
  gp->n_input = (size_t)g->n_inputs;
  gp->input = FC_NEW_ARRAY(e->a, Onnx__ValueInfoProto *, g->n_inputs ? (size_t)g->n_inputs : 1);
  for (int i = 0; i < g->n_inputs; i++) {
    FcValue *v = g->inputs[i];
    const char *want = v->name && *v->name ? v->name : fc_arena_printf(e->a, "input_%d", i);
    if (set_has(&e->tensors, want)) return fc_error(e->diag, FC_ERR_INPUT, "graph input name '%s' is used twice", want);
    e->names[v->id] = unique_name(e, want);
    gp->input[i] = value_info(e, e->names[v->id], &v->type);
  }
  FcStatus st = name_outputs(e);
  if (st != FC_OK) return st;
  fc_graph_for_each_op(g, op) {
    if (op->kind == FC_OP_RETURN) continue;
    st = ex_op(e, op);
    if (st != FC_OK) return st;
  }
  st = finish_outputs(e, gp);
  if (st != FC_OK) return st;
  gp->n_node = e->nodes.n;
  gp->node = (Node **)e->nodes.v;
  gp->n_initializer = e->inits.n;
  gp->initializer = (Onnx__TensorProto **)e->inits.v;
  return FC_OK;
}

FcStatus fc_onnx_export(FILE *out, FcModule *m, FcDiag *diag) {
  FcArena arena;
  fc_arena_init(&arena);
  Ex e = {.a = &arena, .diag = diag, .g = m->graph, .opset = FC_ONNX_EXPORT_OPSET_MIN};
  fc_graph_for_each_op(m->graph, op) {
    int need = opset_needed(op);
    if (need > e.opset) e.opset = need;
  }
  e.names = FC_NEW_ARRAY(&arena, const char *, m->graph->next_value_id ? m->graph->next_value_id : 1);

  Onnx__GraphProto *gp = FC_NEW(&arena, Onnx__GraphProto);
  onnx__graph_proto__init(gp);
  FcStatus st = export_graph(&e, gp);

  Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT;
  opset.domain = (char *)"";
  opset.has_version = true;
  opset.version = e.opset;
  Onnx__OperatorSetIdProto *opsets[1] = {&opset};
  Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
  model.has_ir_version = true;
  model.ir_version = e.opset >= 19 ? 9 : 8; /* the IR version of the ONNX release that made the opset */
  model.n_opset_import = 1;
  model.opset_import = opsets;
  model.producer_name = (char *)"flowc";
  model.graph = gp;

  if (st == FC_OK) {
    size_t size = onnx__model_proto__get_packed_size(&model);
    /* protobuf's own limit: larger models need external data files, which flowc does not write. */
    if (size > INT32_MAX) {
      st = fc_error(diag, FC_ERR_LIMIT, "the ONNX model would be %zu bytes, over protobuf's 2 GiB limit", size);
    } else {
      uint8_t *buf = malloc(size ? size : 1);
      if (!buf) fc_die(__FILE__, __LINE__, "out of memory");
      size_t packed = onnx__model_proto__pack(&model, buf);
      FC_ASSERT(packed == size);
      if (fwrite(buf, 1, size, out) != size) st = fc_error(diag, FC_ERR_IO, "cannot write the ONNX model");
      free(buf);
    }
  }
  fc_arena_free(&arena);
  return st;
}

/* Passes left out of an --emit onnx pipeline: those whose results have no ONNX form (epilogues, the blocked
 * layout, element-wise programs, casts folded into them), and lower_quant, which would write
 * quantize/dequantize as f32 arithmetic where ONNX has QuantizeLinear/DequantizeLinear. */
static const char *const unexportable_passes[] = {"fuse_epilogue", "layout", "layout_i8", "fuse_elementwise",
                                                  "fuse_casts", "lower_quant"};

bool fc_onnx_export_passes(const char *list, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  for (const char *p = list; *p;) {
    size_t n = strcspn(p, ",");
    bool drop = false;
    for (size_t k = 0; k < sizeof unexportable_passes / sizeof *unexportable_passes; k++)
      drop |= strlen(unexportable_passes[k]) == n && strncmp(p, unexportable_passes[k], n) == 0;
    if (!drop && n) {
      int w = snprintf(buf + len, cap - len, "%s%.*s", len ? "," : "", (int)n, p);
      if (w < 0 || (size_t)w >= cap - len) return false;
      len += (size_t)w;
    }
    p += n;
    if (*p == ',') p++;
  }
  return true;
}
