/* eval_sample.c — reference evaluators of the resampling ops: resize, grid_sample and roi_align.
 *
 * resize follows ONNX's numpy reference (onnx/backend/test/case/node/resize.py, which generated the
 * conformance data) in double precision: each output coordinate maps back per axis with
 * output_width = scale * input_width (not the rounded output size), the neighbours of x_original are
 * the ones its edge-padded reference picks (ratio in (0, 1], so an integral x takes the left tap set),
 * and N-d interpolation is separable, applied from the last axis to the first as the reference nests
 * it — tf_crop_and_resize's extrapolation included. The per-axis tap tables (ir/resize_map.c) drop
 * taps whose weight is exactly zero, so an inf next to a sampled point does not turn into 0 * inf = NaN.
 * One departure: pytorch_half_pixel maps a length-1 output to 0 as the ONNX spec and ONNX Runtime do
 * (the numpy reference uses -0.5).
 *
 * grid_sample (2-D, opset-16 modes) and roi_align follow ONNX Runtime's CPU kernels, which ONNX's
 * reference implementations mirror, including roi_align's max mode taking the max of the weighted
 * corner values. All arithmetic is double; results are stored with one rounding.
 */
#include "eval_struct.h"
#include "resize_map.h"
#include "sample_modes.h"

#include <math.h>
#include <string.h>

/* ---- resize -------------------------------------------------------------------------------------- */

FcStatus fc_eval_resize(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 1, diag));
  const FcType *xt = &in[0]->type, *rt = &op->results[0].type;
  int r = xt->rank;
  if (rt->rank != r || rt->dtype != xt->dtype)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "result rank/dtype differs from the operand's");
  FcResizeParams p;
  const char *an, *av;
  if (!fc_resize_params(op, &p, &an, &av)) return fc_ev_fail(op, diag, FC_ERR_INPUT, "unknown %s \"%s\"", an, av);
  double extrap = fc_op_attr_float(op, FC_ATTR_EXTRAPOLATION_VALUE, 0.0f);
  if (p.mode != FC_RESIZE_MODE_NEAREST && !fc_dtype_is_float(xt->dtype))
    return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "%s mode on %s", fc_mode_name(p.mode),
                      fc_dtype_name(xt->dtype));

  const float *scales, *roi;
  const int64_t *sizes;
  int ns = fc_op_attr_floats(op, FC_ATTR_SCALES, &scales), nr = fc_op_attr_floats(op, FC_ATTR_ROI, &roi);
  int nz = fc_op_attr_ints(op, FC_ATTR_SIZES, &sizes);
  if ((ns && ns != r) || (nr && nr != 2 * r) || (nz && nz != r))
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "scales, roi and sizes must have one entry per axis (roi two)");
  for (int d = 0; d < r; d++)
    if (nz && sizes[d] != rt->dims[d])
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "sizes differ from the result shape in axis %d", d);

  /* Per-axis scale: the given one, else output/input in double as the reference derives it from sizes. */
  double scale[FC_EV_MAX_RANK];
  for (int d = 0; d < r; d++) {
    if (xt->dims[d] == 0 && rt->dims[d] > 0)
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "cannot resize the empty axis %d to %lld", d, (long long)rt->dims[d]);
    scale[d] = ns ? (double)scales[d] : xt->dims[d] ? (double)rt->dims[d] / (double)xt->dims[d] : 1.0;
    if (!(scale[d] > 0) || !isfinite(scale[d]))
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "scale %g of axis %d must be positive", scale[d], d);
  }
  fc_ev_make_results(op, out, arena);
  int64_t total = fc_ev_numel(rt);
  if (total == 0) return FC_OK;

  FcArena scratch;
  fc_arena_init(&scratch);
  FcResizeAxis maps[FC_EV_MAX_RANK];
  int64_t work = 0;
  for (int d = 0; d < r; d++) {
    maps[d].in = xt->dims[d];
    maps[d].out = rt->dims[d];
    fc_resize_axis_map(&p, scale[d], nr ? roi[d] : 0.0f, nr ? roi[r + d] : 1.0f, &maps[d], &scratch);
  }
  size_t es = fc_dtype_size(xt->dtype);
  FcStatus st = FC_OK;
  if (p.mode == FC_RESIZE_MODE_NEAREST) {
    /* One gather over all axes: any axis extrapolating gives the extrapolation value. */
    int64_t xs[FC_EV_MAX_RANK], idx[FC_EV_MAX_RANK] = {0};
    fc_ev_strides(xt, xs);
    FcTensor *ev = fc_tensor_new(&scratch, (FcType){xt->dtype, 0, NULL});
    fc_ev_store_f64(ev, 0, extrap);
    for (int64_t i = 0; i < total; i++) {
      int64_t off = 0;
      bool ex = false;
      for (int d = 0; d < r && !ex; d++) {
        const FcResizeAxis *m = &maps[d];
        ex = m->extrap[idx[d]];
        if (!ex) off += m->idx[m->tap0[idx[d]]] * xs[d];
      }
      memcpy(fc_ev_at(out[0], i), ex ? ev->data : fc_ev_at(in[0], off), es);
      fc_ev_next(idx, rt->dims, r);
    }
    fc_arena_free(&scratch);
    return FC_OK;
  }

  /* Separable passes, last axis first, over double buffers of the shape resized so far. */
  int64_t cur[FC_EV_MAX_RANK];
  memcpy(cur, xt->dims, (size_t)r * sizeof *cur);
  double *buf = fc_ev_load_f64(&scratch, in[0]);
  for (int d = r - 1; d >= 0 && st == FC_OK; d--) {
    const FcResizeAxis *m = &maps[d];
    if (m->identity) continue;
    int64_t outer = 1, inner = 1, size = 1;
    for (int e = 0; e < d; e++) outer *= cur[e];
    for (int e = d + 1; e < r; e++) inner *= cur[e];
    int64_t f[3] = {outer, m->tap0[m->out] + m->out, inner};
    if ((st = fc_ev_work(op, diag, 3, f)) != FC_OK) break;
    if (!fc_checked_mul(outer * inner, m->out, &size) || !fc_checked_add(work, size, &work) || work > FC_EV_MAX_WORK) {
      st = fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "too much work to evaluate at compile time");
      break;
    }
    double *next = FC_NEW_ARRAY(&scratch, double, (size_t)(size > 0 ? size : 1));
    for (int64_t a = 0; a < outer; a++)
      for (int64_t o = 0; o < m->out; o++) {
        double *dst = next + (a * m->out + o) * inner;
        for (int64_t c = 0; c < inner; c++) dst[c] = m->extrap[o] ? extrap : 0.0;
        for (int64_t t = m->tap0[o]; t < m->tap0[o + 1]; t++) {
          const double *src = buf + (a * m->in + m->idx[t]) * inner;
          double w = m->w[t];
          for (int64_t c = 0; c < inner; c++) dst[c] += w * src[c];
        }
      }
    buf = next;
    cur[d] = m->out;
  }
  if (st == FC_OK)
    for (int64_t i = 0; i < total; i++) fc_ev_store_f64(out[0], i, buf[i]);
  fc_arena_free(&scratch);
  return st;
}

/* ---- grid_sample --------------------------------------------------------------------------------- */

/* Reflects x into [lo, hi] by the nearer border until it fits (ONNX Runtime's GsReflect). */
static double gs_reflect(double x, double lo, double hi) {
  double range = hi - lo;
  if (!(range > 0)) return lo;
  if (x < lo) {
    double dx = lo - x;
    double n = floor(dx / range), r = dx - n * range;
    return fmod(n, 2) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    double n = floor(dx / range), r = dx - n * range;
    return fmod(n, 2) == 0 ? hi - r : lo + r;
  }
  return x;
}

typedef struct GsPlane {
  const double *x; /* one H x W plane */
  int64_t H, W;
  FcMode pad; /* FC_GRID_PAD_* */
  double lo_x, hi_x, lo_y, hi_y; /* reflection borders */
} GsPlane;

static double gs_pixel(const GsPlane *g, int64_t y, int64_t x) {
  switch (g->pad) {
  case FC_GRID_PAD_ZEROS:
    if (x < 0 || x >= g->W || y < 0 || y >= g->H) return 0.0;
    break;
  case FC_GRID_PAD_BORDER:
    x = x < 0 ? 0 : x >= g->W ? g->W - 1 : x;
    y = y < 0 ? 0 : y >= g->H ? g->H - 1 : y;
    break;
  default: /* FC_GRID_PAD_REFLECTION */
    x = (int64_t)gs_reflect((double)x, g->lo_x, g->hi_x);
    y = (int64_t)gs_reflect((double)y, g->lo_y, g->hi_y);
    x = x < 0 ? 0 : x >= g->W ? g->W - 1 : x; /* reflection lands inside; guards rounding */
    y = y < 0 ? 0 : y >= g->H ? g->H - 1 : y;
    break;
  }
  return g->x[y * g->W + x];
}

static void gs_cubic_coeffs(double x, double *c) {
  const double A = -0.75;
  x = fabs(x);
  c[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
  c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
  c[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((A * (2 - x) - 5 * A) * (2 - x) + 8 * A) * (2 - x) - 4 * A;
}

/* Coordinates beyond the integer range are pinned far outside the plane, where every padding mode
 * still answers (zeros: 0; border: the edge; reflection works in double). */
static int64_t gs_int(double v) { return !(v > -1e15) ? (int64_t)-1e15 : v > 1e15 ? (int64_t)1e15 : (int64_t)v; }

FcStatus fc_eval_grid_sample(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena,
                             FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 2, diag));
  const FcType *xt = &in[0]->type, *gt = &in[1]->type, *rt = &op->results[0].type;
  if (xt->rank != 4)
    return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "only 2-D sampling (x of rank 4) is evaluated, not rank %d",
                      xt->rank);
  if (!fc_dtype_is_float(xt->dtype) || !fc_dtype_is_float(gt->dtype))
    return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "cannot evaluate on %s", fc_dtype_name(xt->dtype));
  int64_t N = xt->dims[0], C = xt->dims[1], H = xt->dims[2], W = xt->dims[3];
  if (gt->rank != 4 || gt->dims[0] != N || gt->dims[3] != 2 || rt->rank != 4 || rt->dtype != xt->dtype ||
      rt->dims[0] != N || rt->dims[1] != C || rt->dims[2] != gt->dims[1] || rt->dims[3] != gt->dims[2])
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "x [N,C,H,W], grid [N,Ho,Wo,2] and result [N,C,Ho,Wo] do not match");
  FcMode mode, pad;
  const char *s;
  if (!fc_op_mode(op, FC_ML_GRID_MODE, &mode, &s)) return fc_ev_fail(op, diag, FC_ERR_INPUT, "unknown mode \"%s\"", s);
  if (!fc_op_mode(op, FC_ML_GRID_PAD, &pad, &s))
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "unknown padding_mode \"%s\"", s);
  bool align = fc_op_attr_int(op, FC_ATTR_ALIGN_CORNERS, 0) != 0;
  int64_t Ho = gt->dims[1], Wo = gt->dims[2];
  int64_t work[5] = {N, C, Ho, Wo, 16};
  FC_EV_TRY(fc_ev_work(op, diag, 5, work));
  fc_ev_make_results(op, out, arena);
  if (fc_ev_numel(rt) == 0) return FC_OK;
  if (H == 0 || W == 0) {
    if (pad != FC_GRID_PAD_ZEROS)
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "cannot sample an empty image with padding");
    return FC_OK;
  }

  FcArena scratch;
  fc_arena_init(&scratch);
  const double *X = fc_ev_load_f64(&scratch, in[0]), *G = fc_ev_load_f64(&scratch, in[1]);
  GsPlane pl = {.H = H, .W = W, .pad = pad};
  pl.lo_x = align ? 0.0 : -0.5;
  pl.hi_x = align ? (double)W - 1 : (double)W - 0.5;
  pl.lo_y = align ? 0.0 : -0.5;
  pl.hi_y = align ? (double)H - 1 : (double)H - 0.5;
  for (int64_t b = 0; b < N; b++)
    for (int64_t c = 0; c < C; c++) {
      pl.x = X + (b * C + c) * H * W;
      for (int64_t i = 0; i < Ho * Wo; i++) {
        double nx = G[(b * Ho * Wo + i) * 2], ny = G[(b * Ho * Wo + i) * 2 + 1];
        double x = align ? (nx + 1) / 2 * (double)(W - 1) : ((nx + 1) * (double)W - 1) / 2;
        double y = align ? (ny + 1) / 2 * (double)(H - 1) : ((ny + 1) * (double)H - 1) / 2;
        if (mode == FC_GRID_MODE_NEAREST) { /* nearest rounds half to even (nearbyint), before padding */
          x = nearbyint(x);
          y = nearbyint(y);
        }
        if (x < pl.lo_x || x > pl.hi_x || y < pl.lo_y || y > pl.hi_y) {
          if (pad == FC_GRID_PAD_BORDER) {
            x = x < 0 ? 0 : x > (double)(W - 1) ? (double)(W - 1) : x;
            y = y < 0 ? 0 : y > (double)(H - 1) ? (double)(H - 1) : y;
          } else if (pad == FC_GRID_PAD_REFLECTION) {
            x = gs_reflect(x, pl.lo_x, pl.hi_x);
            y = gs_reflect(y, pl.lo_y, pl.hi_y);
          }
        }
        double v;
        if (x != x || y != y) {
          v = NAN;
        } else if (mode == FC_GRID_MODE_NEAREST) {
          v = gs_pixel(&pl, gs_int(y), gs_int(x));
        } else if (mode == FC_GRID_MODE_BILINEAR) {
          int64_t x1 = gs_int(floor(x)), y1 = gs_int(floor(y));
          double dx2 = (double)(x1 + 1) - x, dx1 = x - (double)x1, dy2 = (double)(y1 + 1) - y, dy1 = y - (double)y1;
          v = dy2 * (dx2 * gs_pixel(&pl, y1, x1) + dx1 * gs_pixel(&pl, y1, x1 + 1)) +
              dy1 * (dx2 * gs_pixel(&pl, y1 + 1, x1) + dx1 * gs_pixel(&pl, y1 + 1, x1 + 1));
        } else {
          int64_t x0 = gs_int(floor(x)) - 1, y0 = gs_int(floor(y)) - 1;
          double cx[4], cy[4], rows[4];
          gs_cubic_coeffs(x - (double)x0 - 1, cx);
          gs_cubic_coeffs(y - (double)y0 - 1, cy);
          for (int h = 0; h < 4; h++) {
            rows[h] = 0;
            for (int w = 0; w < 4; w++) rows[h] += cx[w] * gs_pixel(&pl, y0 + h, x0 + w);
          }
          v = cy[0] * rows[0] + cy[1] * rows[1] + cy[2] * rows[2] + cy[3] * rows[3];
        }
        fc_ev_store_f64(out[0], (b * C + c) * Ho * Wo + i, v);
      }
    }
  fc_arena_free(&scratch);
  return FC_OK;
}

/* ---- roi_align ----------------------------------------------------------------------------------- */

typedef struct RoiSample {
  int64_t pos[4];
  double w[4];
} RoiSample;

/* The four bilinear taps of sample (y, x) in an H x W plane (ONNX Runtime's pre_calc step): a sample
 * more than one pixel outside the plane has zero weights. */
static void roi_sample(double y, double x, int64_t H, int64_t W, RoiSample *s) {
  if (y < -1.0 || y > (double)H || x < -1.0 || x > (double)W) {
    memset(s, 0, sizeof *s);
    return;
  }
  y = y > 0 ? y : 0;
  x = x > 0 ? x : 0;
  int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
  if (yl >= H - 1) {
    yh = yl = H - 1;
    y = (double)yl;
  } else {
    yh = yl + 1;
  }
  if (xl >= W - 1) {
    xh = xl = W - 1;
    x = (double)xl;
  } else {
    xh = xl + 1;
  }
  double ly = y - (double)yl, lx = x - (double)xl, hy = 1.0 - ly, hx = 1.0 - lx;
  s->pos[0] = yl * W + xl;
  s->pos[1] = yl * W + xh;
  s->pos[2] = yh * W + xl;
  s->pos[3] = yh * W + xh;
  s->w[0] = hy * hx;
  s->w[1] = hy * lx;
  s->w[2] = ly * hx;
  s->w[3] = ly * lx;
}

/* std::max as ONNX Runtime's kernel uses it: the first argument unless the second is larger. */
static double std_max(double a, double b) { return a < b ? b : a; }

FcStatus fc_eval_roi_align(const FcOp *op, const FcTensor *const *in, FcTensor **out, FcArena *arena, FcDiag *diag) {
  FC_EV_TRY(fc_ev_check(op, in, 3, diag));
  const FcType *xt = &in[0]->type, *bt = &in[1]->type, *it = &in[2]->type, *rt = &op->results[0].type;
  if (!fc_dtype_is_float(xt->dtype) || !fc_dtype_is_float(bt->dtype))
    return fc_ev_fail(op, diag, FC_ERR_UNSUPPORTED, "cannot evaluate on %s", fc_dtype_name(xt->dtype));
  int64_t oh = fc_op_attr_int(op, FC_ATTR_OUTPUT_HEIGHT, 1), ow = fc_op_attr_int(op, FC_ATTR_OUTPUT_WIDTH, 1);
  int64_t ratio = fc_op_attr_int(op, FC_ATTR_SAMPLING_RATIO, 0);
  double spatial_scale = fc_op_attr_float(op, FC_ATTR_SPATIAL_SCALE, 1.0f);
  FcMode mode, ctm;
  const char *s;
  if (!fc_op_mode(op, FC_ML_ROI_MODE, &mode, &s)) return fc_ev_fail(op, diag, FC_ERR_INPUT, "unknown mode \"%s\"", s);
  if (!fc_op_mode(op, FC_ML_ROI_CTM, &ctm, &s))
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "unknown coordinate_transformation_mode \"%s\"", s);
  bool is_max = mode == FC_ROI_MODE_MAX, half_pixel = ctm == FC_ROI_CTM_HALF_PIXEL;
  if (xt->rank != 4 || bt->rank != 2 || bt->dims[1] != 4 || it->rank != 1 || it->dims[0] != bt->dims[0] ||
      !fc_dtype_is_int(it->dtype))
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "x [N,C,H,W], rois [R,4] and integer batch_indices [R] expected");
  int64_t N = xt->dims[0], C = xt->dims[1], H = xt->dims[2], W = xt->dims[3], R = bt->dims[0];
  if (oh < 1 || ow < 1 || ratio < 0 || rt->rank != 4 || rt->dtype != xt->dtype || rt->dims[0] != R ||
      rt->dims[1] != C || rt->dims[2] != oh || rt->dims[3] != ow)
    return fc_ev_fail(op, diag, FC_ERR_INPUT, "output_height/width, sampling_ratio or the result shape are invalid");
  for (int64_t n = 0; n < R; n++) {
    int64_t b = fc_tensor_get_i64(in[2], n);
    if (b < 0 || b >= N || (it->dtype == FC_DT_U64 && b < 0))
      return fc_ev_fail(op, diag, FC_ERR_INPUT, "batch index %lld of roi %lld out of range [0, %lld)", (long long)b,
                        (long long)n, (long long)N);
  }
  fc_ev_make_results(op, out, arena);
  if (fc_ev_numel(rt) == 0) return FC_OK;
  if (H == 0 || W == 0) return fc_ev_fail(op, diag, FC_ERR_INPUT, "cannot align rois on an empty feature map");

  FcArena scratch;
  fc_arena_init(&scratch);
  const double *X = fc_ev_load_f64(&scratch, in[0]);
  FcStatus st = FC_OK;
  int64_t work = 0;
  for (int64_t n = 0; n < R && st == FC_OK; n++) {
    int64_t b = fc_tensor_get_i64(in[2], n);
    double offset = half_pixel ? 0.5 : 0.0;
    double sw = fc_tensor_get_f64(in[1], n * 4 + 0) * spatial_scale - offset;
    double sh = fc_tensor_get_f64(in[1], n * 4 + 1) * spatial_scale - offset;
    double ew = fc_tensor_get_f64(in[1], n * 4 + 2) * spatial_scale - offset;
    double eh = fc_tensor_get_f64(in[1], n * 4 + 3) * spatial_scale - offset;
    double rw = ew - sw, rh = eh - sh;
    if (!half_pixel) { /* malformed rois are forced to 1x1 */
      rw = std_max(rw, 1.0);
      rh = std_max(rh, 1.0);
    }
    if (!isfinite(rw) || !isfinite(rh) || !isfinite(sw) || !isfinite(sh)) {
      st = fc_ev_fail(op, diag, FC_ERR_INPUT, "roi %lld is not finite", (long long)n);
      break;
    }
    double bh = rh / (double)oh, bw = rw / (double)ow;
    double gh_d = ratio > 0 ? (double)ratio : ceil(rh / (double)oh);
    double gw_d = ratio > 0 ? (double)ratio : ceil(rw / (double)ow);
    int64_t gh = gh_d > 0 ? (gh_d < 1e9 ? (int64_t)gh_d : (int64_t)1e9) : 0;
    int64_t gw = gw_d > 0 ? (gw_d < 1e9 ? (int64_t)gw_d : (int64_t)1e9) : 0;
    /* Work adds up over the rois; each sample costs about 16 steps. */
    int64_t f[7] = {oh, ow, gh, gw, C, 16, 1};
    if ((st = fc_ev_work(op, diag, 6, f)) != FC_OK) break;
    for (int i = 0; i < 6; i++) f[6] *= f[i];
    work += f[6];
    if (work > FC_EV_MAX_WORK && (st = fc_ev_work(op, diag, 1, &work)) != FC_OK) break;
    double count = gh * gw > 1 ? (double)(gh * gw) : 1.0;
    for (int64_t c = 0; c < C; c++) {
      const double *plane = X + (b * C + c) * H * W;
      for (int64_t ph = 0; ph < oh; ph++)
        for (int64_t pw = 0; pw < ow; pw++) {
          double acc = 0.0;
          for (int64_t iy = 0; iy < gh; iy++) {
            double y = sh + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
            for (int64_t ix = 0; ix < gw; ix++) {
              double x = sw + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
              RoiSample sm;
              roi_sample(y, x, H, W, &sm);
              double t[4];
              for (int q = 0; q < 4; q++) t[q] = sm.w[q] * plane[sm.pos[q]];
              if (!is_max) {
                acc += t[0] + t[1] + t[2] + t[3];
              } else {
                double v = std_max(std_max(std_max(t[0], t[1]), t[2]), t[3]);
                acc = iy == 0 && ix == 0 ? v : std_max(acc, v);
              }
            }
          }
          fc_ev_store_f64(out[0], ((n * C + c) * oh + ph) * ow + pw, is_max ? acc : acc / count);
        }
    }
  }
  fc_arena_free(&scratch);
  return st;
}
