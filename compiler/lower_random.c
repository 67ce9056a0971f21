/* lower_random.c — legalisers of randomness: RandomUniform(Like), RandomNormal(Like), Bernoulli and
 * Dropout.
 *
 * Everything random comes from the one core source, random_uniform (never folded or CSE'd). Normal
 * samples use Box–Muller on a single uniform draw of shape [2, shape..] split in two halves u1, u2:
 * z = sqrt(-2 log(1 - u1)) * cos(2 pi u2), where 1 - u1 lies in (0, 1] so the log is finite.
 * Half-precision results are computed in f32 and cast. Bernoulli is cast(uniform < p).
 *
 * Dropout is the identity with an all-true mask unless it runs in training mode (the training_mode
 * input, opset >= 12; earlier opsets only describe inference — before 7 is_test=0 meant training, which
 * an inference compiler does not model either). In training mode with ratio r, mask = uniform >= r and
 * y = mask ? x / (1 - r) : 0, as the spec's reference. A constant training_mode/ratio picks the form
 * at compile time; a run-time one is handled with selects, so both fit one graph.
 */
#include "onnx.h"

#include <string.h>

/* A uniform draw in [low, high) of `dt` and the given shape, seeded when has_seed. */
static FcValue *uniform(FcLower *l, FcDtype dt, int rank, const int64_t *shape, double low, double high,
                        bool has_seed, float seed) {
  FcAttr a[5];
  int n = 0;
  a[n++] = FC_A_TYPE(DTYPE, dt);
  a[n++] = FC_A_FLOAT(HIGH, (float)high);
  a[n++] = FC_A_FLOAT(LOW, (float)low);
  if (has_seed) a[n++] = FC_A_FLOAT(SEED, seed);
  a[n++] = FC_A_INTS(SHAPE, shape, rank);
  return fc_b_op1(l->b, FC_OP_RANDOM_UNIFORM, NULL, 0, a, n);
}

/* The output dtype: the `dtype` attribute (an ONNX type code), else `dflt`; must be a float type. */
static bool random_dtype(FcLower *l, FcDtype dflt, bool has_dflt, FcDtype *out) {
  if (fc_lx_has_attr(l, "dtype")) {
    int64_t code = fc_lx_int(l, "dtype", 1);
    if (code < 0 || code > 1000 || !fc_dtype_from_onnx((int)code, out)) {
      fc_lx_unsupported(l, "dtype %lld is not supported", (long long)code);
      return false;
    }
  } else if (has_dflt) {
    *out = dflt;
  } else {
    *out = FC_DT_F32;
  }
  return true;
}

static bool need_float_dtype(FcLower *l, FcDtype dt) {
  if (fc_dtype_is_float(dt)) return true;
  fc_lx_error(l, "output dtype must be a float type, not %s", fc_dtype_name(dt));
  return false;
}

FcStatus fc_lower_random(FcLower *l) {
  bool like = l->arg & FC_LX_RANDOM_LIKE, normal = l->arg & FC_LX_RANDOM_NORMAL; /* the table row's */
  int rank;
  const int64_t *shape;
  FcDtype dt;
  if (like) {
    if (l->n_in < 1 || !l->in[0]) return fc_lx_error(l, "input 0 is required");
    rank = l->in[0]->type.rank;
    shape = l->in[0]->type.dims;
    if (!random_dtype(l, l->in[0]->type.dtype, true, &dt)) return FC_ERR_UNSUPPORTED;
  } else {
    int n = fc_lx_ints(l, "shape", &shape);
    if (n < 0) return fc_lx_error(l, "attribute 'shape' is required");
    for (int i = 0; i < n; i++)
      if (shape[i] < 0) return fc_lx_error(l, "shape has a negative dim %lld", (long long)shape[i]);
    rank = n;
    if (!random_dtype(l, FC_DT_F32, false, &dt)) return FC_ERR_UNSUPPORTED;
  }
  if (!need_float_dtype(l, dt)) return FC_ERR_INPUT;
  bool has_seed = fc_lx_has_attr(l, "seed");
  float seed = fc_lx_float(l, "seed", 0);
  if (!normal) {
    l->out[0] = uniform(l, dt, rank, shape, fc_lx_float(l, "low", 0), fc_lx_float(l, "high", 1), has_seed, seed);
    return fc_lx_finish(l);
  }
  FcDtype work = fc_dtype_size(dt) < 4 ? FC_DT_F32 : dt;
  int64_t *two = fc_lx_dims(l, rank + 1);
  two[0] = 2;
  for (int i = 0; i < rank; i++) two[i + 1] = shape[i];
  FcValue *u = uniform(l, work, rank + 1, two, 0, 1, has_seed, seed);
  FcValue *half[2];
  int64_t *starts = fc_lx_dims(l, rank + 1), *ends = fc_lx_dims(l, rank + 1), *steps = fc_lx_dims(l, rank + 1);
  for (int k = 0; k < 2; k++) {
    for (int i = 0; i <= rank; i++) {
      starts[i] = i == 0 ? k : 0;
      ends[i] = i == 0 ? k + 1 : two[i];
      steps[i] = 1;
    }
    half[k] = fc_b_reshape(l->b, fc_b_slice(l->b, u, starts, ends, steps), rank, shape);
  }
  FcBuilder *b = l->b;
  FcValue *lg = fc_b_unary(b, FC_OP_LOG, fc_b_binary(b, FC_OP_SUB, fc_lx_scalar(l, u, 1), half[0]));
  FcValue *radius = fc_b_unary(b, FC_OP_SQRT, fc_b_binary(b, FC_OP_MUL, lg, fc_lx_scalar(l, u, -2)));
  FcValue *tau = fc_lx_scalar(l, u, 6.283185307179586476925);
  FcValue *angle = fc_b_unary(b, FC_OP_COS, fc_b_binary(b, FC_OP_MUL, half[1], tau));
  FcValue *z = fc_b_binary(b, FC_OP_MUL, radius, angle);
  z = fc_b_binary(b, FC_OP_MUL, z, fc_lx_scalar(l, u, fc_lx_float(l, "scale", 1)));
  z = fc_b_binary(b, FC_OP_ADD, z, fc_lx_scalar(l, u, fc_lx_float(l, "mean", 0)));
  l->out[0] = work == dt ? z : fc_b_cast(b, z, dt);
  return fc_lx_finish(l);
}

FcStatus fc_lower_bernoulli(FcLower *l) {
  if (l->n_in < 1 || !l->in[0]) return fc_lx_error(l, "input 0 is required");
  FcValue *p = l->in[0];
  if (!fc_dtype_is_float(p->type.dtype)) return fc_lx_error(l, "input must have a float type");
  FcDtype dt;
  if (!random_dtype(l, p->type.dtype, true, &dt)) return FC_ERR_UNSUPPORTED;
  FcValue *u = uniform(l, p->type.dtype, p->type.rank, p->type.dims, 0, 1, fc_lx_has_attr(l, "seed"),
                       fc_lx_float(l, "seed", 0));
  FcValue *hit = fc_b_binary(l->b, FC_OP_LESS, u, p);
  l->out[0] = dt == FC_DT_BOOL ? hit : fc_b_cast(l->b, hit, dt);
  return fc_lx_finish(l);
}

/* ---- Dropout ------------------------------------------------------------------------------------- */

/* An all-true mask of x's shape: bool from opset 10, x's dtype (ones) before. */
static FcValue *keep_all(FcLower *l, FcValue *x) {
  FcValue *one = l->opset >= 10 ? fc_b_scalar(l->b, FC_DT_BOOL, 1) : fc_lx_scalar(l, x, 1);
  return fc_b_broadcast(l->b, one, x->type.rank, x->type.dims);
}

FcStatus fc_lower_dropout(FcLower *l) {
  if (l->n_in < 1 || !l->in[0]) return fc_lx_error(l, "input 0 is required");
  FcValue *x = l->in[0];
  if (!fc_dtype_is_float(x->type.dtype)) return fc_lx_error(l, "input must have a float type");
  bool want_mask = fc_lx_out_named(l, 1);
  FcValue *ratio_in = l->opset >= 12 && l->n_in > 1 ? l->in[1] : NULL;
  FcValue *mode_in = l->opset >= 12 && l->n_in > 2 ? l->in[2] : NULL;

  /* training_mode: absent or constant false → inference; constant true → training; else run time */
  const FcTensor *mode_c = mode_in ? fc_lx_try_const_input(l, 2) : NULL;
  if (mode_in && mode_in->type.dtype != FC_DT_BOOL) return fc_lx_error(l, "training_mode must be bool");
  if (mode_in && (mode_in->type.rank != 0 && !(mode_in->type.rank == 1 && mode_in->type.dims[0] == 1)))
    return fc_lx_error(l, "training_mode must be a scalar");
  bool infer_only = !mode_in || (mode_c && mode_c->data && fc_tensor_get_i64(mode_c, 0) == 0);
  /* ratio: constant 0 makes training mode the identity too */
  double ratio = 0.5;
  FcValue *ratio_v = NULL;
  if (l->opset < 12) {
    ratio = fc_lx_float(l, "ratio", 0.5f);
  } else if (ratio_in) {
    if (!fc_dtype_is_float(ratio_in->type.dtype)) return fc_lx_error(l, "ratio must have a float type");
    const FcTensor *rc = fc_lx_try_const_input(l, 1);
    if (rc && rc->data) ratio = fc_tensor_get_f64(rc, 0);
    else ratio_v = ratio_in->type.dtype == x->type.dtype ? ratio_in : fc_b_cast(l->b, ratio_in, x->type.dtype);
  }
  if (!infer_only && !ratio_v && !(ratio >= 0 && ratio < 1))
    return fc_lx_error(l, "ratio %g is outside [0, 1)", ratio);
  if (infer_only || (!ratio_v && ratio == 0)) {
    l->out[0] = x;
    if (want_mask) l->out[1] = keep_all(l, x);
    return fc_lx_finish(l);
  }

  FcBuilder *b = l->b;
  if (!ratio_v) ratio_v = fc_lx_scalar(l, x, ratio);
  FcValue *u = uniform(l, x->type.dtype, x->type.rank, x->type.dims, 0, 1, fc_lx_has_attr(l, "seed"),
                       (float)fc_lx_int(l, "seed", 0));
  FcValue *mask = fc_b_binary(b, FC_OP_GREATER_EQUAL, u, ratio_v);
  FcValue *one = fc_lx_scalar(l, x, 1);
  FcValue *scale = fc_b_binary(b, FC_OP_DIV, one, fc_b_binary(b, FC_OP_SUB, one, ratio_v));
  FcValue *zero = fc_lx_scalar(l, x, 0);
  FcValue *y = fc_b_select(b, mask, fc_b_binary(b, FC_OP_MUL, x, scale), zero);
  if (!mode_c || !mode_c->data) {
    /* training_mode known only at run time */
    FcValue *mode = mode_in->type.rank ? fc_b_reshape(b, mode_in, 0, NULL) : mode_in;
    y = fc_b_select(b, mode, y, x);
    mask = fc_b_binary(b, FC_OP_OR, mask, fc_b_unary(b, FC_OP_NOT, mode));
  }
  l->out[0] = y;
  if (want_mask) l->out[1] = mask;
  return fc_lx_finish(l);
}
