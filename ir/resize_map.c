/* resize_map.c — resize's per-axis tap tables (see resize_map.h), in ONNX's numpy reference's operation
 * order: each output coordinate maps back with output_width = scale * input_width (not the rounded
 * output size); the neighbourhood has ratio in (0, 1], so an integral x_original takes the left tap set;
 * nearest rounds by nearest_mode; exclude_outside renormalises the weights of the taps inside the input;
 * taps whose weight is exactly zero are dropped, so an inf next to a sampled point does not turn into
 * 0 * inf = NaN. One departure: pytorch_half_pixel maps a length-1 output to 0 as the ONNX spec and
 * ONNX Runtime do (the numpy reference uses -0.5).
 */
#include "resize_map.h"

#include <math.h>

bool fc_resize_params(const FcOp *op, FcResizeParams *p, const char **attr, const char **value) {
  static const FcModeList lists[3] = {FC_ML_RESIZE_CTM, FC_ML_RESIZE_MODE, FC_ML_RESIZE_NEAREST};
  FcMode *fields[3] = {&p->ctm, &p->mode, &p->nearest};
  for (int i = 0; i < 3; i++)
    if (!fc_op_mode(op, lists[i], fields[i], value)) {
      *attr = fc_attr_name_str(fc_mode_attr(lists[i]));
      return false;
    }
  p->cubic_a = fc_op_attr_float(op, FC_ATTR_CUBIC_COEFF_A, -0.75f);
  p->exclude_outside = fc_op_attr_int(op, FC_ATTR_EXCLUDE_OUTSIDE, 0) != 0;
  return true;
}

bool fc_resize_moves_data(const FcOp *op) {
  FcResizeParams p;
  const char *attr, *value;
  return fc_resize_params(op, &p, &attr, &value) && p.mode == FC_RESIZE_MODE_NEAREST &&
         p.ctm != FC_RESIZE_CTM_TF_CROP_AND_RESIZE;
}

int fc_resize_taps_per(FcMode mode) {
  return mode == FC_RESIZE_MODE_CUBIC ? 4 : mode == FC_RESIZE_MODE_LINEAR ? 2 : 1;
}

bool fc_resize_coord(const FcResizeParams *p, double x, double scale, int64_t in, int64_t out, float r0,
                         float r1, double *xo) {
  double iw = (double)in, ow = scale * iw;
  switch (p->ctm) {
  case FC_RESIZE_CTM_HALF_PIXEL: *xo = (x + 0.5) / scale - 0.5; return true;
  case FC_RESIZE_CTM_HALF_PIXEL_SYMMETRIC: {
    double adjustment = (double)out / ow, center = iw / 2;
    *xo = center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
    return true;
  }
  case FC_RESIZE_CTM_PYTORCH_HALF_PIXEL: *xo = ow > 1 ? (x + 0.5) / scale - 0.5 : 0.0; return true;
  case FC_RESIZE_CTM_ALIGN_CORNERS: *xo = ow == 1 ? 0.0 : x * (iw - 1) / (ow - 1); return true;
  case FC_RESIZE_CTM_ASYMMETRIC: *xo = x / scale; return true;
  case FC_RESIZE_CTM_TF_CROP_AND_RESIZE: {
    /* The reference subtracts the f32 roi values in f32. */
    double span = (double)(r1 - r0);
    *xo = ow == 1 ? span * (iw - 1) / 2 : x * span * (iw - 1) / (ow - 1);
    *xo += (double)r0 * (iw - 1);
    return !(*xo < 0 || *xo > iw - 1);
  }
  default: break; /* fc_resize_params only gives the modes above */
  }
  FC_UNREACHABLE();
}

/* Interpolation coefficients for ratio in (0, 1] over the taps left-1 .. left+2 (cubic) or left ..
 * left+1 (linear). */
static int resize_coeffs(const FcResizeParams *p, double ratio, double *c) {
  if (p->mode == FC_RESIZE_MODE_LINEAR) {
    c[0] = 1 - ratio;
    c[1] = ratio;
    return 2;
  }
  double A = p->cubic_a, r1 = ratio + 1, q = 1 - ratio, q1 = q + 1;
  c[0] = ((A * r1 - 5 * A) * r1 + 8 * A) * r1 - 4 * A;
  c[1] = ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1;
  c[2] = ((A + 2) * q - (A + 3)) * q * q + 1;
  c[3] = ((A * q1 - 5 * A) * q1 + 8 * A) * q1 - 4 * A;
  return 4;
}

void fc_resize_axis_map(const FcResizeParams *p, double scale, float r0, float r1, FcResizeAxis *m, FcArena *a) {
  int64_t per = fc_resize_taps_per(p->mode);
  m->tap0 = FC_NEW_ARRAY(a, int64_t, (size_t)m->out + 1);
  m->idx = FC_NEW_ARRAY(a, int64_t, (size_t)(m->out * per + 1));
  m->w = FC_NEW_ARRAY(a, double, (size_t)(m->out * per + 1));
  m->extrap = FC_NEW_ARRAY(a, bool, (size_t)m->out + 1);
  m->identity = m->in == m->out;
  int64_t nt = 0;
  for (int64_t o = 0; o < m->out; o++) {
    m->tap0[o] = nt;
    double xo;
    if (!fc_resize_coord(p, (double)o, scale, m->in, m->out, r0, r1, &xo)) {
      m->extrap[o] = true;
      m->identity = false;
      continue;
    }
    /* The reference's neighbourhood: ratio in (0, 1], an integral x_original counts as ratio 1 of the
     * tap on its left. */
    double fl = floor(xo);
    bool integral = fl == xo;
    double left = integral ? xo - 1 : fl, ratio = integral ? 1.0 : xo - fl;
    if (!(fabs(left) < 4e18)) left = left > 0 ? 4e18 : -4e18; /* NaN/huge coordinates: clamped below */
    int64_t l = (int64_t)left;
    if (p->mode == FC_RESIZE_MODE_NEAREST) {
      bool up;
      switch (p->nearest) {
      case FC_RESIZE_NEAREST_ROUND_PREFER_FLOOR: up = ratio > 0.5; break;
      case FC_RESIZE_NEAREST_ROUND_PREFER_CEIL: up = ratio >= 0.5; break;
      case FC_RESIZE_NEAREST_FLOOR: up = false; break;
      default: up = true; break;
      }
      int64_t i = integral ? l + 1 : up ? l + 1 : l;
      m->idx[nt] = i < 0 ? 0 : i >= m->in ? m->in - 1 : i;
      m->w[nt++] = 1.0;
      m->identity &= m->idx[nt - 1] == o;
      continue;
    }
    double c[4];
    int n = resize_coeffs(p, ratio, c);
    int64_t first = n == 4 ? l - 1 : l;
    if (p->exclude_outside) {
      double sum = 0;
      for (int t = 0; t < n; t++) {
        int64_t i = first + t;
        if (i < 0 || i >= m->in) c[t] = 0;
        sum += c[t];
      }
      for (int t = 0; t < n; t++) c[t] /= sum;
    }
    int64_t start = nt;
    for (int t = 0; t < n; t++) {
      if (c[t] == 0.0) continue;
      int64_t i = first + t;
      m->idx[nt] = i < 0 ? 0 : i >= m->in ? m->in - 1 : i;
      m->w[nt++] = c[t];
    }
    m->identity &= nt == start + 1 && m->idx[start] == o && m->w[start] == 1.0;
  }
  m->tap0[m->out] = nt;
}
