/* lower_resize.c — legalisers for resampling: Resize, Upsample, GridSample, AffineGrid, RoiAlign.
 *
 * The core resize op is static: it carries the full output shape (`sizes`) together with the per-axis
 * scales and roi that ONNX's coordinate transformations use, so every form of the ONNX ops is reduced
 * to those three arrays here. Resize-10 and Upsample (all versions) predate the coordinate-
 * transformation attributes; their behaviour — output = floor(in * scale), x_original = x_resized /
 * scale, nearest picks floor — is exactly Resize-11's "asymmetric" transformation with nearest_mode
 * "floor", so they are written that way. When Resize gets `sizes`, the scale of each axis is
 * sizes / input, which ONNX's reference computes in double: the core op then carries no `scales`, and
 * its users derive them from the shapes in double (an f32 scale moves x_original off exact ties, so
 * nearest would pick another pixel than PyTorch and ONNX Runtime: output 35 of a 96 -> 70 resize). When it gets
 * `scales` (f32 in ONNX), the output size is floor(input * scale), times the roi extent for
 * tf_crop_and_resize. Mode names are checked against, and stored as, ir/sample_modes.def spells them.
 *
 * Resize-18 adds `axes` (scales, sizes and roi then cover only those axes; the others keep their size),
 * keep_aspect_ratio_policy (not_larger / not_smaller: one scale for the given axes, the min or max of
 * sizes / input, and sizes = round(scale * input); the core op then carries both) and antialias. An
 * antialiased linear or cubic resize widens the filter by 1 / scale when down-scaling, so it has no
 * fixed tap count: it is built here as one contraction per resized axis with a constant [in, out]
 * weight matrix (the reference's coefficients: filter support stretched by 1 / min(scale, 1), taps
 * edge-clamped, exclude_outside renormalising), x moved so the axis is last, matmul, moved back. As any
 * matmul, a NaN or infinity in the input reaches every output of its row, not only those it weighs.
 */
#include "onnx.h"
#include "resize_map.h"
#include "sample_modes.h"

#include <math.h>
#include <string.h>

static bool has_input(const FcLower *l, int i) { return i < l->n_in && l->in[i] != NULL; }

/* The mode that `s`, the value of ONNX attribute `name`, spells in list l; false after an error naming it
 * when l has no such mode. */
static bool lx_mode(FcLower *l, FcModeList list, const char *name, const char *s, FcMode *out) {
  if (fc_mode_parse_onnx(list, s, out)) return true;
  char known[256];
  fc_lx_error(l, "unknown %s '%s' (expected %s)", name, s, fc_mode_list_str(list, known, sizeof known));
  return false;
}

/* The elements of a constant float input as floats in the arena; *n = -1 when the input is absent. */
static FcStatus const_floats(FcLower *l, int i, float **v, int *n) {
  *n = -1;
  if (!has_input(l, i)) return FC_OK;
  const FcTensor *t = fc_lx_const_input(l, i);
  if (!t) return fc_lx_bail(l);
  int64_t numel;
  if (!fc_type_numel(&t->type, &numel) || numel > (1 << 20)) return fc_lx_error(l, "input %d is too large", i);
  *v = FC_NEW_ARRAY(fc_lx_arena(l), float, (size_t)(numel > 0 ? numel : 1));
  for (int64_t k = 0; k < numel; k++) (*v)[k] = (float)fc_tensor_get_f64(t, k);
  *n = (int)numel;
  return FC_OK;
}

typedef struct ResizeSpec {
  FcMode mode, ctm, nearest_mode;
  float cubic_a, extrapolation;
  int64_t exclude_outside;
  const float *scales; /* per axis, or NULL when sizes are given (both with keep_aspect_ratio_policy) */
  const int64_t *sizes; /* per axis, or NULL when scales are given */
  bool antialias;       /* Resize-18, linear and cubic */
  const float *roi;     /* 2 * rank values, or NULL for the default [0.., 1..] */
} ResizeSpec;

static FcStatus build_antialias(FcLower *l, const ResizeSpec *rs, const int64_t *sizes, const float *scales,
                                const float *roi);

/* Builds the core resize from a spec: completes sizes from scales, checks them, and fills the default
 * roi. Given sizes alone, the op carries no scales (see the file comment). */
static FcStatus build_resize(FcLower *l, const ResizeSpec *rs) {
  FcValue *x = l->in[0];
  int r = x->type.rank;
  const int64_t *in = x->type.dims;
  float *scales = FC_NEW_ARRAY(fc_lx_arena(l), float, (size_t)(r > 0 ? r : 1));
  float *roi = FC_NEW_ARRAY(fc_lx_arena(l), float, (size_t)(2 * r > 0 ? 2 * r : 1));
  int64_t *sizes = FC_NEW_ARRAY(fc_lx_arena(l), int64_t, (size_t)(r > 0 ? r : 1));
  for (int i = 0; i < r; i++) {
    roi[i] = rs->roi ? rs->roi[i] : 0.0f;
    roi[r + i] = rs->roi ? rs->roi[r + i] : 1.0f;
  }
  bool crop = rs->ctm == FC_RESIZE_CTM_TF_CROP_AND_RESIZE;
  for (int i = 0; i < r; i++) {
    if (rs->scales) scales[i] = rs->scales[i];
    if (rs->sizes) {
      sizes[i] = rs->sizes[i];
      if (sizes[i] < 0 || sizes[i] > ((int64_t)1 << 40))
        return fc_lx_error(l, "sizes[%d] = %lld is out of range", i, (long long)sizes[i]);
      if (in[i] == 0 && sizes[i] != 0)
        return fc_lx_error(l, "cannot resize an empty axis %d to %lld", i, (long long)sizes[i]);
    } else {
      if (!(scales[i] > 0) || !isfinite(scales[i]))
        return fc_lx_error(l, "scales[%d] = %g must be positive", i, (double)scales[i]);
      double extent = crop ? (double)roi[r + i] - (double)roi[i] : 1.0;
      double v = floor((double)in[i] * extent * (double)scales[i]);
      if (!(v >= 0) || v > (double)((int64_t)1 << 40))
        return fc_lx_error(l, "output size along axis %d is out of range", i);
      sizes[i] = (int64_t)v;
    }
  }
  FcType out_ty = {x->type.dtype, r, sizes};
  int64_t nbytes;
  if (!fc_type_nbytes(&out_ty, &nbytes) || nbytes > FC_DEFAULT_MAX_TENSOR_BYTES)
    return fc_lx_error(l, "output is too large");
  if (rs->antialias) return build_antialias(l, rs, sizes, rs->scales ? scales : NULL, roi);
  FcAttr a[9] = {
      FC_A_STR(COORDINATE_TRANSFORMATION_MODE, fc_mode_name(rs->ctm)),
      FC_A_FLOAT(CUBIC_COEFF_A, rs->cubic_a),
      FC_A_INT(EXCLUDE_OUTSIDE, rs->exclude_outside),
      FC_A_FLOAT(EXTRAPOLATION_VALUE, rs->extrapolation),
      FC_A_STR(MODE, fc_mode_name(rs->mode)),
      FC_A_STR(NEAREST_MODE, fc_mode_name(rs->nearest_mode)),
      FC_A_FLOATS(ROI, roi, 2 * r),
      FC_A_FLOATS(SCALES, scales, rs->scales ? r : 0),
      FC_A_INTS(SIZES, sizes, r),
  };
  l->out[0] = fc_b_op1(l->b, FC_OP_RESIZE, &x, 1, a, 9);
  return fc_lx_finish(l);
}

/* The antialiasing filter at distance d (in filter units): the linear tent, or the cubic kernel of a. */
static double aa_filter(FcMode mode, double a, double d) {
  d = fabs(d);
  if (mode == FC_RESIZE_MODE_LINEAR) return d < 1 ? 1 - d : 0;
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  return d < 2 ? ((a * d - 5 * a) * d + 8 * a) * d - 4 * a : 0;
}

/* The [in, out] weights of one antialiased axis, as f32 in the arena; NULL after an error. */
static float *aa_weights(FcLower *l, const ResizeSpec *rs, int64_t in, int64_t out, double scale, float r0, float r1) {
  FcResizeParams p = {rs->ctm, rs->mode, rs->nearest_mode, rs->cubic_a, rs->exclude_outside != 0};
  double s = scale < 1 ? scale : 1, half = rs->mode == FC_RESIZE_MODE_LINEAR ? 1 : 2;
  int64_t start = (int64_t)floor(-half / s) + 1, n = 2 - 2 * start, numel;
  if (n > (1 << 16) || !fc_checked_mul(in, out, &numel) || numel > (1 << 24)) {
    fc_lx_unsupported(l, "an antialiased resize from %lld to %lld is too large", (long long)in, (long long)out);
    return NULL;
  }
  float *w = FC_NEW_ARRAY(fc_lx_arena(l), float, (size_t)(numel > 0 ? numel : 1));
  double *c = FC_NEW_ARRAY(fc_lx_arena(l), double, (size_t)n);
  for (int64_t o = 0; o < out; o++) {
    double xo;
    if (!fc_resize_coord(&p, (double)o, scale, in, out, r0, r1, &xo)) {
      fc_lx_unsupported(l, "antialias with coordinate_transformation_mode 'tf_crop_and_resize' is not supported");
      return NULL;
    }
    /* as the reference: ratio in (0, 1], an integral x_original is ratio 1 of the tap on its left */
    double left = floor(xo) == xo ? xo - 1 : floor(xo), ratio = xo - left, sum = 0;
    if (!(fabs(left) < 1e15)) left = left > 0 ? 1e15 : -1e15;
    int64_t first = (int64_t)left + start;
    for (int64_t t = 0; t < n; t++) {
      int64_t i = first + t;
      bool outside = i < 0 || i >= in;
      c[t] = rs->exclude_outside && outside ? 0 : aa_filter(rs->mode, rs->cubic_a, (double)(start + t - ratio) * s);
      sum += c[t];
    }
    for (int64_t t = 0; t < n; t++) {
      int64_t i = first + t;
      i = i < 0 ? 0 : i >= in ? in - 1 : i;
      w[i * out + o] += (float)(sum != 0 ? c[t] / sum : 0);
    }
  }
  return w;
}

/* An antialiased resize (see the file comment): one constant-weight contraction per resized axis. */
static FcStatus build_antialias(FcLower *l, const ResizeSpec *rs, const int64_t *sizes, const float *scales,
                                const float *roi) {
  FcValue *x = l->in[0];
  int r = x->type.rank;
  for (int a = 0; a < r && x; a++) {
    int64_t in = x->type.dims[a], out = sizes[a];
    double scale = scales ? (double)scales[a] : in ? (double)out / (double)in : 1;
    if (in == out && scale == 1) continue;
    if (in == 0 || out == 0) return fc_lx_unsupported(l, "an antialiased resize of an empty axis is not supported");
    float *w = aa_weights(l, rs, in, out, scale, roi[a], roi[r + a]);
    if (!w) return fc_lx_bail(l);
    int64_t wd[2] = {in, out}, *perm = fc_lx_dims(l, r);
    for (int i = 0; i < r; i++) perm[i] = i == a ? r - 1 : i == r - 1 ? a : i; /* swaps a and the last axis */
    FcValue *wv = fc_lx_cast_to(l, fc_b_const(l->b, FC_DT_F32, 2, wd, w), x->type.dtype);
    FcValue *t = a == r - 1 ? x : fc_b_transpose(l->b, x, perm);
    t = fc_b_binary(l->b, FC_OP_MATMUL, t, wv);
    x = a == r - 1 ? t : fc_b_transpose(l->b, t, perm);
  }
  l->out[0] = x;
  return fc_lx_finish(l);
}

/* The legacy (Upsample, Resize-10) reading of `scales`, see the file comment. */
static FcStatus build_legacy(FcLower *l, const char *mode, const float *scales, int n) {
  int r = l->in[0]->type.rank;
  if (n != r) return fc_lx_error(l, "scales has %d values for rank %d", n, r);
  FcMode m;
  if (!fc_mode_parse_onnx(FC_ML_RESIZE_MODE, mode, &m) || m == FC_RESIZE_MODE_CUBIC)
    return fc_lx_error(l, "unknown mode '%s' (expected nearest|linear)", mode);
  ResizeSpec rs = {.mode = m, .ctm = FC_RESIZE_CTM_ASYMMETRIC, .nearest_mode = FC_RESIZE_NEAREST_FLOOR,
                   .cubic_a = -0.75f, .extrapolation = 0.0f, .exclude_outside = 0, .scales = scales};
  return build_resize(l, &rs);
}

/* Resize-18's keep_aspect_ratio_policy, given sizes for axes ax[0..na): not_larger / not_smaller take
 * the min / max of sizes / input over those axes as the one scale, and sizes = round(scale * input)
 * (computed in f32, as ONNX Runtime does); the op then carries that scale for the coordinate mapping. */
static FcStatus keep_aspect_ratio(FcLower *l, ResizeSpec *rs, const int64_t *ax, int na) {
  const char *pol = fc_lx_str(l, "keep_aspect_ratio_policy", "stretch");
  bool larger = !strcmp(pol, "not_larger"), smaller = !strcmp(pol, "not_smaller");
  if (l->opset < 18 || !strcmp(pol, "stretch")) return FC_OK;
  if (!larger && !smaller) return fc_lx_error(l, "unknown keep_aspect_ratio_policy '%s'", pol);
  const int64_t *in = l->in[0]->type.dims;
  int r = l->in[0]->type.rank;
  float scale = larger ? INFINITY : 0;
  for (int i = 0; i < na; i++) {
    if (in[ax[i]] == 0) return fc_lx_error(l, "cannot keep the aspect ratio of an empty axis %lld", (long long)ax[i]);
    float q = (float)rs->sizes[ax[i]] / (float)in[ax[i]];
    scale = larger ? fminf(scale, q) : fmaxf(scale, q);
  }
  if (!(scale > 0) || !isfinite(scale)) return fc_lx_error(l, "sizes give no usable scale");
  int64_t *sizes = fc_lx_dims(l, r > 0 ? r : 1);
  float *scales = FC_NEW_ARRAY(fc_lx_arena(l), float, (size_t)(r > 0 ? r : 1));
  for (int i = 0; i < r; i++) sizes[i] = in[i], scales[i] = 1;
  for (int i = 0; i < na; i++) {
    float v = roundf(scale * (float)in[ax[i]]);
    if (!(v >= 0) || v > (float)((int64_t)1 << 40))
      return fc_lx_error(l, "output size along axis %lld is out of range", (long long)ax[i]);
    sizes[ax[i]] = (int64_t)v;
    scales[ax[i]] = scale;
  }
  rs->sizes = sizes;
  rs->scales = scales;
  return FC_OK;
}

FcStatus fc_lower_resize(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, l->opset < 11 ? 2 : 1);
  if (st != FC_OK) return st;
  int r = l->in[0]->type.rank;
  float *scales = NULL, *roi = NULL;
  int ns, nr = -1;
  if (l->opset < 11) {
    if ((st = const_floats(l, 1, &scales, &ns)) != FC_OK) return st;
    return build_legacy(l, fc_lx_str(l, "mode", "nearest"), scales, ns);
  }
  ResizeSpec rs = {
      .cubic_a = fc_lx_float(l, "cubic_coeff_a", -0.75f),
      .extrapolation = fc_lx_float(l, "extrapolation_value", 0.0f),
      .exclude_outside = fc_lx_int(l, "exclude_outside", 0) != 0,
  };
  const char *ctm = fc_lx_str(l, "coordinate_transformation_mode", "half_pixel");
  bool tf_nn = !strcmp(ctm, "tf_half_pixel_for_nn"); /* Resize-11 only: a rewrite, see below */
  if (tf_nn && l->opset >= 13) return fc_lx_error(l, "unknown coordinate_transformation_mode '%s'", ctm);
  if (!lx_mode(l, FC_ML_RESIZE_MODE, "mode", fc_lx_str(l, "mode", "nearest"), &rs.mode) ||
      !lx_mode(l, FC_ML_RESIZE_NEAREST, "nearest_mode", fc_lx_str(l, "nearest_mode", "round_prefer_floor"),
               &rs.nearest_mode) ||
      !(tf_nn || lx_mode(l, FC_ML_RESIZE_CTM, "coordinate_transformation_mode", ctm, &rs.ctm)))
    return fc_lx_bail(l);
  /* Resize-11's tf_half_pixel_for_nn maps x to v = (x + 0.5) / scale; half_pixel maps it to w = v - 0.5.
   * For nearest, round_prefer_floor(v) = ceil(w) and floor(v) = round_prefer_ceil(w), so those two
   * combinations are rewritten into modes the core op has; the others have no equivalent. */
  if (tf_nn) {
    bool nearest = rs.mode == FC_RESIZE_MODE_NEAREST;
    if (nearest && rs.nearest_mode == FC_RESIZE_NEAREST_ROUND_PREFER_FLOOR) rs.nearest_mode = FC_RESIZE_NEAREST_CEIL;
    else if (nearest && rs.nearest_mode == FC_RESIZE_NEAREST_FLOOR)
      rs.nearest_mode = FC_RESIZE_NEAREST_ROUND_PREFER_CEIL;
    else
      return fc_lx_unsupported(l, "coordinate_transformation_mode 'tf_half_pixel_for_nn' is only supported with mode "
                                  "'nearest' and nearest_mode 'round_prefer_floor' or 'floor'");
    rs.ctm = FC_RESIZE_CTM_HALF_PIXEL;
  }
  /* Resize-18's axes: which axes roi, scales and sizes describe (all of them without it). */
  const int64_t *axes = NULL;
  int na = l->opset >= 18 ? fc_lx_ints(l, "axes", &axes) : -1;
  int64_t *ax = fc_lx_dims(l, r > 0 ? r : 1);
  if (na < 0) {
    na = r;
    for (int i = 0; i < r; i++) ax[i] = i;
  } else {
    if (na > r) return fc_lx_error(l, "axes has %d values for rank %d", na, r);
    for (int i = 0; i < na; i++) {
      if (!fc_lx_axis(l, axes[i], r, &ax[i])) return fc_lx_bail(l);
      for (int j = 0; j < i; j++)
        if (ax[j] == ax[i]) return fc_lx_error(l, "axis %lld is repeated", (long long)axes[i]);
    }
  }
  /* roi is only read by tf_crop_and_resize, so elsewhere it need not be a constant */
  if (rs.ctm == FC_RESIZE_CTM_TF_CROP_AND_RESIZE) {
    if ((st = const_floats(l, 1, &roi, &nr)) != FC_OK) return st;
    if (nr > 0 && nr != 2 * na) return fc_lx_error(l, "roi has %d values for %d axes", nr, na);
    if (nr > 0) {
      float *full = FC_NEW_ARRAY(fc_lx_arena(l), float, (size_t)(2 * r));
      for (int i = 0; i < r; i++) full[i] = 0, full[r + i] = 1;
      for (int i = 0; i < na; i++) full[ax[i]] = roi[i], full[r + ax[i]] = roi[na + i];
      rs.roi = full;
    }
  }
  if ((st = const_floats(l, 2, &scales, &ns)) != FC_OK) return st;
  if (ns > 0) {
    if (ns != na) return fc_lx_error(l, "scales has %d values for %d axes", ns, na);
    float *full = FC_NEW_ARRAY(fc_lx_arena(l), float, (size_t)(r > 0 ? r : 1));
    for (int i = 0; i < r; i++) full[i] = 1;
    for (int i = 0; i < na; i++) full[ax[i]] = scales[i];
    rs.scales = full;
  }
  if (has_input(l, 3)) {
    const int64_t *sizes;
    int nz = fc_lx_const_ints(l, 3, &sizes);
    if (nz < 0) return fc_lx_bail(l);
    if (nz > 0) {
      if (rs.scales) return fc_lx_error(l, "scales and sizes cannot both be given");
      if (nz != na) return fc_lx_error(l, "sizes has %d values for %d axes", nz, na);
      int64_t *full = fc_lx_dims(l, r > 0 ? r : 1);
      for (int i = 0; i < r; i++) full[i] = l->in[0]->type.dims[i];
      for (int i = 0; i < na; i++) full[ax[i]] = sizes[i];
      rs.sizes = full;
      if ((st = keep_aspect_ratio(l, &rs, ax, na)) != FC_OK) return st;
    }
  }
  if (!rs.scales && !rs.sizes) return fc_lx_error(l, "one of scales and sizes must be given");
  rs.antialias = l->opset >= 18 && fc_lx_int(l, "antialias", 0) != 0 && rs.mode != FC_RESIZE_MODE_NEAREST;
  return build_resize(l, &rs);
}

/* Upsample: scales from height_scale/width_scale on a 4-D input (opset 1), the `scales` attribute
 * (7), or a constant input (9, 10). */
FcStatus fc_lower_upsample(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, l->opset >= 9 ? 2 : 1);
  if (st != FC_OK) return st;
  const char *mode = fc_lx_str(l, "mode", "nearest");
  int r = l->in[0]->type.rank;
  if (l->opset >= 9) {
    float *scales;
    int n;
    if ((st = const_floats(l, 1, &scales, &n)) != FC_OK) return st;
    return build_legacy(l, mode, scales, n);
  }
  if (l->opset >= 7) {
    const float *v;
    int n = fc_lx_floats(l, "scales", &v);
    if (n < 0) return fc_lx_error(l, "attribute 'scales' is required");
    return build_legacy(l, mode, v, n);
  }
  if (r != 4) return fc_lx_error(l, "input must be 4-D, got rank %d", r);
  if (!fc_lx_has_attr(l, "height_scale") || !fc_lx_has_attr(l, "width_scale"))
    return fc_lx_error(l, "attributes 'height_scale' and 'width_scale' are required");
  float s[4] = {1.0f, 1.0f, fc_lx_float(l, "height_scale", 1.0f), fc_lx_float(l, "width_scale", 1.0f)};
  return build_legacy(l, mode, s, 4);
}

FcStatus fc_lower_grid_sample(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 2);
  if (st != FC_OK) return st;
  FcMode mode, pmode;
  if (!lx_mode(l, FC_ML_GRID_MODE, "mode", fc_lx_str(l, "mode", "bilinear"), &mode) ||
      !lx_mode(l, FC_ML_GRID_PAD, "padding_mode", fc_lx_str(l, "padding_mode", "zeros"), &pmode))
    return fc_lx_bail(l);
  /* GridSample-20 extends the op to N spatial dims; the core op samples 2-D images */
  if (l->opset >= 20 && (l->in[0]->type.rank != 4 || l->in[1]->type.rank != 4))
    return fc_lx_unsupported(l, "sampling %d-D inputs is not supported (only 4-D: N, C, H, W)", l->in[0]->type.rank);
  FcAttr a[3] = {FC_A_INT(ALIGN_CORNERS, fc_lx_int(l, "align_corners", 0) != 0), FC_A_STR(MODE, fc_mode_name(mode)),
                 FC_A_STR(PADDING_MODE, fc_mode_name(pmode))};
  l->out[0] = fc_b_op1(l->b, FC_OP_GRID_SAMPLE, l->in, 2, a, 3);
  return fc_lx_finish(l);
}

/* AffineGrid (20): the sampling grid of theta [N, 2, 3] (2-D) or [N, 3, 4] (3-D) over an output of
 * size [N, C, (D,) H, W]: the constant base grid [1, (D *) H * W, r + 1] of normalised coordinates
 * (x, y, (z,) 1) — pixel centres, or corners with align_corners, as GridSample reads them — times theta
 * transposed, viewed as [N, (D,) H, W, r]. */
FcStatus fc_lower_affine_grid(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 2);
  if (st != FC_OK) return st;
  FcValue *theta = l->in[0];
  const int64_t *size;
  int ns = fc_lx_const_ints(l, 1, &size);
  if (ns < 0) return fc_lx_bail(l);
  if (ns != 4 && ns != 5) return fc_lx_error(l, "size must have 4 or 5 values, has %d", ns);
  int r = ns - 2; /* spatial dims */
  if (!fc_lx_need_float(l, theta)) return FC_ERR_INPUT;
  const int64_t *td = theta->type.dims;
  if (theta->type.rank != 3 || td[0] != size[0] || td[1] != r || td[2] != r + 1)
    return fc_lx_error(l, "theta must have shape [%lld, %d, %d]", (long long)size[0], r, r + 1);
  bool align = fc_lx_int(l, "align_corners", 0) != 0;
  int64_t points = 1;
  for (int i = 2; i < ns; i++)
    if (size[i] < 1 || !fc_checked_mul(points, size[i], &points) || points > ((int64_t)1 << 22))
      return fc_lx_error(l, "size is out of range");
  float *base = FC_NEW_ARRAY(fc_lx_arena(l), float, (size_t)(points * (r + 1)));
  for (int64_t p = 0; p < points; p++) {
    int64_t rest = p;
    for (int d = 0; d < r; d++) { /* coordinate d is x, y, z: the last spatial dim first */
      int64_t n = size[ns - 1 - d], i = rest % n;
      rest /= n;
      double v = align ? (n > 1 ? -1 + 2.0 * (double)i / (double)(n - 1) : -1) : (2.0 * (double)i + 1) / (double)n - 1;
      base[p * (r + 1) + d] = (float)v;
    }
    base[p * (r + 1) + r] = 1;
  }
  int64_t bd[3] = {1, points, r + 1}, perm[3] = {0, 2, 1}, *od = fc_lx_dims(l, ns);
  FcValue *bv = fc_lx_cast_to(l, fc_b_const(l->b, FC_DT_F32, 3, bd, base), theta->type.dtype);
  FcValue *g = fc_b_binary(l->b, FC_OP_MATMUL, bv, fc_b_transpose(l->b, theta, perm));
  od[0] = size[0];
  for (int i = 0; i < r; i++) od[1 + i] = size[2 + i];
  od[ns - 1] = r;
  l->out[0] = fc_b_reshape(l->b, g, ns, od);
  return fc_lx_finish(l);
}

/* RoiAlign-10 had no coordinate_transformation_mode; it behaved as 16's "output_half_pixel". */
FcStatus fc_lower_roi_align(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 3);
  if (st != FC_OK) return st;
  const char *cs = l->opset >= 16 ? fc_lx_str(l, "coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
  FcMode mode, ctm;
  if (!lx_mode(l, FC_ML_ROI_MODE, "mode", fc_lx_str(l, "mode", "avg"), &mode) ||
      !lx_mode(l, FC_ML_ROI_CTM, "coordinate_transformation_mode", cs, &ctm))
    return fc_lx_bail(l);
  int64_t oh = fc_lx_int(l, "output_height", 1), ow = fc_lx_int(l, "output_width", 1),
          sr = fc_lx_int(l, "sampling_ratio", 0);
  if (oh < 1 || ow < 1 || oh > (1 << 20) || ow > (1 << 20))
    return fc_lx_error(l, "output_height/output_width out of range");
  if (sr < 0) return fc_lx_error(l, "sampling_ratio must be >= 0");
  FcAttr a[6] = {FC_A_STR(COORDINATE_TRANSFORMATION_MODE, fc_mode_name(ctm)), FC_A_STR(MODE, fc_mode_name(mode)),
                 FC_A_INT(OUTPUT_HEIGHT, oh), FC_A_INT(OUTPUT_WIDTH, ow), FC_A_INT(SAMPLING_RATIO, sr),
                 FC_A_FLOAT(SPATIAL_SCALE, fc_lx_float(l, "spatial_scale", 1.0f))};
  l->out[0] = fc_b_op1(l->b, FC_OP_ROI_ALIGN, l->in, 3, a, 6);
  return fc_lx_finish(l);
}
