/* lower_signal.c — spectral ops, window functions, MelWeightMatrix and Det.
 *
 * With static shapes a DFT of length L along one axis is a matrix product with a constant matrix: the
 * signal axis and the real/imaginary pair are moved last and flattened to rows of n*c values
 * (c = 1 real, 2 complex), and W[(n, ci), (k, co)] holds the cos/sin terms that map them onto the
 * (k, re/im) outputs. Zero padding to dft_length needs no rows (zeros contribute nothing); truncation is
 * a slice; onesided keeps the first L/2 + 1 columns. STFT frames the signal with a gather of constant
 * indices, multiplies by the window and applies the same matrix.
 *
 * HannWindow, HammingWindow and BlackmanWindow are constants computed like the ONNX function bodies
 * compute them (float arithmetic, the same constants); MelWeightMatrix is a constant computed like the
 * ONNX reference (backend test generator), including its integer bin placement.
 */
#include "onnx.h"

#include <math.h>
#include <string.h>

static bool has_input(const FcLower *l, int i) { return i < l->n_in && l->in[i] != NULL; }

/* A constant one-element input as a double / an integer. */
static FcStatus const_scalar(FcLower *l, int i, double *out) {
  *out = 0;
  const FcTensor *t = fc_lx_const_input(l, i);
  if (!t) return fc_lx_bail(l);
  int64_t n;
  if (!fc_type_numel(&t->type, &n) || n != 1 || t->type.rank > 1) return fc_lx_error(l, "input %d must be a scalar", i);
  *out = fc_tensor_get_f64(t, 0);
  return FC_OK;
}

static FcStatus const_int(FcLower *l, int i, int64_t *out) {
  *out = 0;
  const FcTensor *t = fc_lx_const_input(l, i);
  if (!t) return fc_lx_bail(l);
  int64_t n;
  if (!fc_type_numel(&t->type, &n) || n != 1 || t->type.rank > 1) return fc_lx_error(l, "input %d must be a scalar", i);
  *out = fc_tensor_get_i64(t, 0);
  return FC_OK;
}

static FcStatus output_dtype(FcLower *l, FcDtype *dt) {
  int64_t code = fc_lx_int(l, "output_datatype", 1);
  if (code < 0 || code > 1000 || !fc_dtype_from_onnx((int)code, dt))
    return fc_lx_error(l, "unsupported output_datatype %lld", (long long)code);
  return FC_OK;
}

/* DFT lengths are bounded so that k * n (< L^2) and the matrix size stay well inside int64. */
#define DFT_MAX_LEN ((int64_t)1 << 24)

/* ---- DFT matrix ----------------------------------------------------------------------------------- */

/* W [rows * c, K * 2] for a length-L transform of `rows` input samples with c components each
 * (forward: X[k] = sum x[n] e^{-2 pi i k n / L}; inverse: e^{+...} / L). The angle is reduced with
 * (k * n) mod L first, so large k * n lose no precision. */
static FcValue *dft_matrix(FcLower *l, FcDtype dt, int64_t rows, int c, int64_t L, int64_t K, bool inverse) {
  int64_t dims[2] = {rows * c, K * 2};
  FcTensor *t = fc_lx_new_tensor(l, dt, 2, dims);
  if (!t) return NULL;
  double scale = inverse ? 1.0 / (double)L : 1.0, sgn = inverse ? 1.0 : -1.0;
  for (int64_t n = 0; n < rows; n++)
    for (int64_t k = 0; k < K; k++) {
      double th = 2.0 * M_PI * (double)((k * n) % L) / (double)L;
      double co = cos(th) * scale, si = sgn * sin(th) * scale; /* e^{sgn i th} = co + i si */
      int64_t col = k * 2;
      /* (a + ib)(co + i si) = (a co - b si) + i (a si + b co) */
      fc_tensor_set_f64(t, (n * c) * dims[1] + col, co);
      fc_tensor_set_f64(t, (n * c) * dims[1] + col + 1, si);
      if (c == 2) {
        fc_tensor_set_f64(t, (n * c + 1) * dims[1] + col, -si);
        fc_tensor_set_f64(t, (n * c + 1) * dims[1] + col + 1, co);
      }
    }
  return fc_b_const_tensor(l->b, t);
}

/* Applies the DFT along the second-to-last axis of x [..., n, c]: [..., n*c] x W → [..., K, 2]. */
static FcValue *dft_last(FcLower *l, FcValue *x, int64_t L, int64_t K, bool inverse) {
  if (!x) return NULL;
  int r = x->type.rank;
  int64_t n = x->type.dims[r - 2];
  int c = (int)x->type.dims[r - 1];
  int64_t *flat = FC_NEW_ARRAY(fc_lx_arena(l), int64_t, (size_t)r),
          *res = FC_NEW_ARRAY(fc_lx_arena(l), int64_t, (size_t)r);
  for (int i = 0; i < r - 2; i++) flat[i] = res[i] = x->type.dims[i];
  flat[r - 2] = n * c;
  res[r - 2] = K;
  res[r - 1] = 2;
  FcValue *w = dft_matrix(l, x->type.dtype, n, c, L, K, inverse);
  FcValue *y = fc_b_binary(l->b, FC_OP_MATMUL, fc_b_reshape(l->b, x, r - 1, flat), w);
  return fc_b_reshape(l->b, y, r, res);
}

static FcStatus signal_dims(FcLower *l, const FcValue *x, int min_rank) {
  if (x->type.rank < min_rank) return fc_lx_error(l, "input must have rank >= %d, got %d", min_rank, x->type.rank);
  int64_t c = x->type.dims[x->type.rank - 1];
  if (c != 1 && c != 2) return fc_lx_error(l, "last dim must be 1 (real) or 2 (complex), got %lld", (long long)c);
  if (!fc_dtype_is_float(x->type.dtype)) return fc_lx_error(l, "input must be a float tensor");
  return FC_OK;
}

FcStatus fc_lower_dft(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  if ((st = signal_dims(l, x, 3)) != FC_OK) return st;
  int r = x->type.rank;
  /* DFT-20 takes the axis as an optional scalar input (default -2, and 0 is allowed), no longer an attribute */
  int64_t axis = l->opset >= 20 ? -2 : fc_lx_int(l, "axis", 1), given;
  if (l->opset >= 20 && has_input(l, 2) && (st = const_int(l, 2, &axis)) != FC_OK) return st;
  given = axis;
  if (axis < 0) axis += r;
  if (axis < (l->opset >= 20 ? 0 : 1) || axis > r - 2)
    return fc_lx_error(l, "axis %lld must name a signal dimension", (long long)given);
  bool inverse = fc_lx_int(l, "inverse", 0) != 0, onesided = fc_lx_int(l, "onesided", 0) != 0;
  if (inverse && onesided) return fc_lx_unsupported(l, "inverse with onesided is not supported");
  int64_t n = x->type.dims[axis], L = n;
  if (has_input(l, 1) && (st = const_int(l, 1, &L)) != FC_OK) return st;
  if (L < 1 || L > DFT_MAX_LEN) return fc_lx_error(l, "dft_length %lld is out of range", (long long)L);
  int64_t K = onesided ? L / 2 + 1 : L;
  /* move the axis next to the re/im dim */
  int64_t *perm = FC_NEW_ARRAY(fc_lx_arena(l), int64_t, (size_t)r),
          *inv = FC_NEW_ARRAY(fc_lx_arena(l), int64_t, (size_t)r);
  for (int i = 0, k = 0; i < r - 1; i++)
    if (i != axis) perm[k++] = i;
  perm[r - 2] = axis;
  perm[r - 1] = r - 1;
  for (int i = 0; i < r; i++) inv[perm[i]] = i;
  FcBuilder *b = l->b;
  if (axis != r - 2) x = fc_b_transpose(b, x, perm);
  if (x && n > L) {
    int64_t *s = FC_NEW_ARRAY(fc_lx_arena(l), int64_t, (size_t)r),
            *e = FC_NEW_ARRAY(fc_lx_arena(l), int64_t, (size_t)r),
            *t = FC_NEW_ARRAY(fc_lx_arena(l), int64_t, (size_t)r);
    for (int i = 0; i < r; i++) {
      s[i] = 0;
      e[i] = x->type.dims[i];
      t[i] = 1;
    }
    e[r - 2] = L;
    x = fc_b_slice(b, x, s, e, t);
  }
  FcValue *y = dft_last(l, x, L, K, inverse);
  if (axis != r - 2) y = fc_b_transpose(b, y, inv);
  l->out[0] = y;
  return fc_lx_finish(l);
}

/* STFT: output [batch, frames, K, 2] with frames = (len - L) / step + 1. */
FcStatus fc_lower_stft(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 2);
  if (st != FC_OK) return st;
  FcBuilder *b = l->b;
  FcValue *sig = l->in[0], *win = has_input(l, 2) ? l->in[2] : NULL;
  if (sig->type.rank == 2) { /* [batch, len] is accepted as a real signal */
    int64_t d[3] = {sig->type.dims[0], sig->type.dims[1], 1};
    sig = fc_b_reshape(b, sig, 3, d);
    if (!sig) return fc_lx_finish(l);
  }
  if ((st = signal_dims(l, sig, 3)) != FC_OK) return st;
  if (sig->type.rank != 3) return fc_lx_error(l, "signal must be [batch, length, 1|2]");
  int64_t step, L = -1, len = sig->type.dims[1];
  if ((st = const_int(l, 1, &step)) != FC_OK) return st;
  if (step < 1) return fc_lx_error(l, "frame_step must be positive");
  if (has_input(l, 3) && (st = const_int(l, 3, &L)) != FC_OK) return st;
  if (win) {
    if (win->type.rank != 1) return fc_lx_error(l, "window must be 1-D");
    if (win->type.dtype != sig->type.dtype) return fc_lx_error(l, "window's dtype differs from the signal's");
    if (L >= 0 && L != win->type.dims[0])
      return fc_lx_error(l, "frame_length %lld differs from the window length %lld", (long long)L,
                         (long long)win->type.dims[0]);
    L = win->type.dims[0];
  }
  if (L < 0) return fc_lx_error(l, "one of window and frame_length must be given");
  if (L < 1 || L > DFT_MAX_LEN || L > len)
    return fc_lx_error(l, "frame length %lld is out of range for a signal of %lld", (long long)L, (long long)len);
  int64_t frames = (len - L) / step + 1, count;
  if (!fc_checked_mul(frames, L, &count) || count > ((int64_t)1 << 30)) return fc_lx_error(l, "too many frame samples");
  int64_t idims[2] = {frames, L};
  FcTensor *idx = fc_lx_new_tensor(l, FC_DT_I64, 2, idims);
  if (!idx) return fc_lx_bail(l);
  int64_t *ip = (int64_t *)idx->data;
  for (int64_t f = 0; f < frames; f++)
    for (int64_t n = 0; n < L; n++) ip[f * L + n] = f * step + n;
  FcValue *ops[2] = {sig, fc_b_const_tensor(b, idx)};
  FcAttr ax = FC_A_INT(AXIS, 1);
  FcValue *framed = fc_b_op1(b, FC_OP_GATHER, ops, 2, &ax, 1); /* [batch, frames, L, c] */
  if (win) {
    int64_t wd[4] = {1, 1, L, 1};
    framed = fc_b_binary(b, FC_OP_MUL, framed, fc_b_reshape(b, win, 4, wd));
  }
  bool onesided = fc_lx_int(l, "onesided", 1) != 0;
  l->out[0] = dft_last(l, framed, L, onesided ? L / 2 + 1 : L, false);
  return fc_lx_finish(l);
}

/* ---- constants ------------------------------------------------------------------------------------ */

/* The coefficients of the ONNX function bodies (float32 values of 25/46, 0.42, 0.08, ...). */
static const struct {
  float a0, a1, a2;
} window_coeffs[] = {
    [FC_LX_WINDOW_HANN] = {0.5f, 0.5f, 0.0f},
    [FC_LX_WINDOW_HAMMING] = {0.54347825050354f, 0.45652174949645996f, 0.0f},
    [FC_LX_WINDOW_BLACKMAN] = {0.41999998688697815f, 0.5f, 0.07999999821186066f},
};

/* w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size (periodic) or size - 1, computed in
 * float exactly as the ONNX function bodies do and then cast to output_datatype. */
FcStatus fc_lower_window(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  size_t w = (size_t)l->arg; /* the table row's FcLxWindow */
  FC_ASSERT(w < sizeof window_coeffs / sizeof window_coeffs[0]);
  float a0 = window_coeffs[w].a0, a1 = window_coeffs[w].a1, a2 = window_coeffs[w].a2;
  int64_t size;
  FcDtype dt;
  if ((st = const_int(l, 0, &size)) != FC_OK || (st = output_dtype(l, &dt)) != FC_OK) return st;
  if (size < 0 || size > ((int64_t)1 << 30)) return fc_lx_error(l, "size %lld is out of range", (long long)size);
  bool periodic = fc_lx_int(l, "periodic", 1) != 0;
  FcTensor *t = fc_lx_new_tensor(l, dt, 1, &size);
  if (!t) return fc_lx_bail(l);
  const float tau = 6.2831854820251465f;
  float n_fp = (float)size, denom = periodic ? n_fp : n_fp - 1.0f, inc = tau / denom;
  for (int64_t i = 0; i < size; i++) {
    float ra = (float)i * inc, two = ra * 2.0f;
    fc_tensor_set_f64(t, i, (a0 - a1 * cosf(ra)) + a2 * cosf(two));
  }
  l->out[0] = fc_b_const_tensor(l->b, t);
  return fc_lx_finish(l);
}

/* MelWeightMatrix [dft_length/2 + 1, num_mel_bins]: triangles between num_mel_bins + 2 points spaced
 * evenly on the mel scale (the step divides by num_mel_bins + 2, as the reference does), placed on
 * integer bins floor((dft_length + 1) * f / sample_rate). The mel edges are float, as in the
 * reference's float32 scalars; the rest is double. */
FcStatus fc_lower_mel_weight_matrix(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 5);
  if (st != FC_OK) return st;
  int64_t bins, dft, rate;
  double lo, hi;
  FcDtype dt;
  if ((st = const_int(l, 0, &bins)) != FC_OK || (st = const_int(l, 1, &dft)) != FC_OK ||
      (st = const_int(l, 2, &rate)) != FC_OK || (st = const_scalar(l, 3, &lo)) != FC_OK ||
      (st = const_scalar(l, 4, &hi)) != FC_OK || (st = output_dtype(l, &dt)) != FC_OK)
    return st;
  if (bins < 1 || bins > (1 << 20)) return fc_lx_error(l, "num_mel_bins %lld is out of range", (long long)bins);
  if (dft < 1 || dft > DFT_MAX_LEN) return fc_lx_error(l, "dft_length %lld is out of range", (long long)dft);
  if (rate < 1) return fc_lx_error(l, "sample_rate must be positive");
  if (!(lo >= 0) || !(hi > lo) || !isfinite(hi)) return fc_lx_error(l, "need 0 <= lower_edge_hertz < upper_edge_hertz");
  int64_t spec = dft / 2 + 1, dims[2] = {spec, bins};
  FcTensor *t = fc_lx_new_tensor(l, dt, 2, dims);
  if (!t) return fc_lx_bail(l);
  float lo_mel = 2595.0f * log10f(1.0f + (float)lo / 700.0f), hi_mel = 2595.0f * log10f(1.0f + (float)hi / 700.0f);
  float step = (hi_mel - lo_mel) / (float)(bins + 2);
  int64_t *fb = FC_NEW_ARRAY(fc_lx_arena(l), int64_t, (size_t)(bins + 2));
  for (int64_t i = 0; i < bins + 2; i++) {
    double mel = (double)i * (double)step + (double)lo_mel;
    double hz = 700.0 * (pow(10.0, mel / 2595.0) - 1.0);
    fb[i] = (int64_t)floor((double)(dft + 1) * hz / (double)rate);
    if (fb[i] < 0 || fb[i] >= spec)
      return fc_lx_error(l, "mel bin edge %lld falls outside the %lld spectrogram bins", (long long)fb[i],
                         (long long)spec);
  }
  for (int64_t i = 0; i < bins; i++) {
    int64_t left = fb[i], center = fb[i + 1], right = fb[i + 2];
    if (center == left) fc_tensor_set_f64(t, center * bins + i, 1.0);
    else
      for (int64_t j = left; j <= center; j++)
        fc_tensor_set_f64(t, j * bins + i, (double)(j - left) / (double)(center - left));
    if (right > center)
      for (int64_t j = center; j < right; j++)
        fc_tensor_set_f64(t, j * bins + i, (double)(right - j) / (double)(right - center));
  }
  l->out[0] = fc_b_const_tensor(l->b, t);
  return fc_lx_finish(l);
}

FcStatus fc_lower_det(FcLower *l) {
  FcStatus st = fc_lx_need_inputs(l, 1);
  if (st != FC_OK) return st;
  FcValue *x = l->in[0];
  int r = x->type.rank;
  if (r < 2 || x->type.dims[r - 1] != x->type.dims[r - 2]) return fc_lx_error(l, "input must be [..., M, M]");
  if (!fc_dtype_is_float(x->type.dtype)) return fc_lx_error(l, "input must be a float tensor");
  l->out[0] = fc_b_unary(l->b, FC_OP_DET, x);
  return fc_lx_finish(l);
}
