/* lower_resize.c — legalisers for resampling: Resize, Upsample, GridSample, RoiAlign.
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
 */
#include "onnx.h"
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
  const float *scales; /* per axis, or NULL when sizes are given */
  const int64_t *sizes; /* per axis, or NULL when scales are given */
  const float *roi;     /* 2 * rank values, or NULL for the default [0.., 1..] */
} ResizeSpec;

/* Builds the core resize from a spec: completes sizes from scales, checks them, and fills the default
 * roi. Given sizes, the op carries no scales (see the file comment). */
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
    if (rs->sizes) {
      sizes[i] = rs->sizes[i];
      if (sizes[i] < 0 || sizes[i] > ((int64_t)1 << 40))
        return fc_lx_error(l, "sizes[%d] = %lld is out of range", i, (long long)sizes[i]);
      if (in[i] == 0 && sizes[i] != 0)
        return fc_lx_error(l, "cannot resize an empty axis %d to %lld", i, (long long)sizes[i]);
    } else {
      scales[i] = rs->scales[i];
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
  FcAttr a[9] = {
      FC_A_STR(COORDINATE_TRANSFORMATION_MODE, fc_mode_name(rs->ctm)),
      FC_A_FLOAT(CUBIC_COEFF_A, rs->cubic_a),
      FC_A_INT(EXCLUDE_OUTSIDE, rs->exclude_outside),
      FC_A_FLOAT(EXTRAPOLATION_VALUE, rs->extrapolation),
      FC_A_STR(MODE, fc_mode_name(rs->mode)),
      FC_A_STR(NEAREST_MODE, fc_mode_name(rs->nearest_mode)),
      FC_A_FLOATS(ROI, roi, 2 * r),
      FC_A_FLOATS(SCALES, scales, rs->sizes ? 0 : r),
      FC_A_INTS(SIZES, sizes, r),
  };
  l->out[0] = fc_b_op1(l->b, FC_OP_RESIZE, &x, 1, a, 9);
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
  /* roi is only read by tf_crop_and_resize, so elsewhere it need not be a constant */
  if (rs.ctm == FC_RESIZE_CTM_TF_CROP_AND_RESIZE) {
    if ((st = const_floats(l, 1, &roi, &nr)) != FC_OK) return st;
    if (nr > 0 && nr != 2 * r) return fc_lx_error(l, "roi has %d values for rank %d", nr, r);
    if (nr > 0) rs.roi = roi;
  }
  if ((st = const_floats(l, 2, &scales, &ns)) != FC_OK) return st;
  if (ns > 0) {
    if (ns != r) return fc_lx_error(l, "scales has %d values for rank %d", ns, r);
    rs.scales = scales;
  }
  if (has_input(l, 3)) {
    const int64_t *sizes;
    int nz = fc_lx_const_ints(l, 3, &sizes);
    if (nz < 0) return fc_lx_bail(l);
    if (nz > 0) {
      if (rs.scales) return fc_lx_error(l, "scales and sizes cannot both be given");
      if (nz != r) return fc_lx_error(l, "sizes has %d values for rank %d", nz, r);
      rs.sizes = sizes;
    }
  }
  if (!rs.scales && !rs.sizes) return fc_lx_error(l, "one of scales and sizes must be given");
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
  FcAttr a[3] = {FC_A_INT(ALIGN_CORNERS, fc_lx_int(l, "align_corners", 0) != 0), FC_A_STR(MODE, fc_mode_name(mode)),
                 FC_A_STR(PADDING_MODE, fc_mode_name(pmode))};
  l->out[0] = fc_b_op1(l->b, FC_OP_GRID_SAMPLE, l->in, 2, a, 3);
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
