/* decompose_conv_transpose.c — a strided conv_transpose as one stride-1 conv per output phase, interleaved:
 * the fast conv kernels (GEMM, Winograd, integer) then run the decoders of segmentation networks, GANs and
 * autoencoders instead of the conv_transpose loop nest (kernel_nn.c: a strided scatter per tap into a row,
 * which does not vectorise); and calibration and quantize_static see convs, so an int8 build quantises them.
 *
 * Along one spatial dim (stride s, kernel K, dilation 1, pads pb/pe, output size O), output o = s·q + r
 * (phase r in [0, s)) receives input i through tap kk when i·s + kk - pb = s·q + r: the taps
 * kk ≡ r + pb (mod s), i.e. kk = k0 + j·s (k0 = (r + pb) mod s, j < n_r = ceil((K - k0) / s)), each reading
 * input i = q + u0 - j (u0 = floor((r + pb) / s)). So phase r is an ordinary correlation over x, stride 1,
 * with the n_r taps in reverse order (tap j' = n_r - 1 - j is kk = k0 + (n_r - 1 - j')·s) and pad
 * n_r - 1 - u0 in front; every phase computes Q = ceil(O / s) outputs (its end pad set for that), so the
 * phases have one shape. In 2-D the phases are the pairs (rh, rw), each a conv of n_rh × n_rw taps: no tap
 * is computed that the conv_transpose does not have (a common kernel for all phases would pad DCGAN's 4×4
 * stride 2 to 3×3 taps per phase against its 2×2). The weights w[C, M/G, K..] become, per phase,
 * W[g·Mg + m][c][j'..] = w[g·Cg + c][m][kk(j')..]; the bias goes to every phase.
 * The phase results [N, M, Qh, Qw] are concatenated along the channels (rh-major), viewed as
 * [N, sh, sw, M, Qh, Qw], transposed to [N, M, Qh, sh, Qw, sw] and viewed as [N, M, Qh·sh, Qw·sw], then
 * sliced to [Oh, Ow] where the phases overran it (the overrun reads padding only).
 * Stride 1 everywhere is one phase: one conv, the flipped kernel. A one-pixel input with one group (a GAN
 * generator's projection of its code to a 4x4 map) is a matmul instead, each tap one output pixel; as a conv
 * its taps would read padding for all outputs but one.
 * Applies to 1-D and 2-D f32 conv_transposes with constant weights and dilation 1 whose phases all have taps
 * and non-negative pads (pb < K: otherwise the output crops the input and a phase would need a negative pad);
 * the others keep the loop nest. Each phase adds the products of its taps in a different order than the
 * loop nest (per input channel, then tap) does, which moves f32 results by rounding only.
 */
#include "passes.h"
#include "rewrite.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_DIMS = 2, MAX_STRIDE = 8 }; /* at most 64 phases */

/* One spatial dim's phases. */
typedef struct Dim {
  int64_t I, K, s, pb, O, Q;
  int64_t k0[MAX_STRIDE], n[MAX_STRIDE], pad0[MAX_STRIDE], pad1[MAX_STRIDE];
} Dim;

static bool plan_dim(Dim *d) {
  if (d->s < 1 || d->s > MAX_STRIDE || d->pb < 0 || d->pb >= d->K || d->O < 1) return false;
  d->Q = (d->O + d->s - 1) / d->s;
  for (int64_t r = 0; r < d->s; r++) {
    int64_t k0 = (r + d->pb) % d->s, u0 = (r + d->pb) / d->s;
    if (k0 >= d->K) return false; /* a phase without taps: its outputs are the bias alone */
    int64_t n = (d->K - k0 + d->s - 1) / d->s;
    d->k0[r] = k0;
    d->n[r] = n;
    d->pad0[r] = n - 1 - u0;
    d->pad1[r] = d->Q - d->I - d->pad0[r] + n - 1;
    if (d->pad0[r] < 0 || d->pad1[r] < 0) return false;
  }
  return true;
}

/* The phase's conv weights [M, Cg, n..] from w [C, Mg, K..] (f32), written at dst. */
static void phase_weights(const FcTensor *w, int nd, const Dim *dims, const int64_t *r, int64_t G, float *dst) {
  int64_t C = w->type.dims[0], Mg = w->type.dims[1], Cg = C / G, M = Mg * G;
  int64_t Kh = nd == 2 ? dims[0].K : 1, Kw = dims[nd - 1].K;
  const float *src = w->data;
  int64_t nh = nd == 2 ? dims[0].n[r[0]] : 1, nw = dims[nd - 1].n[r[nd - 1]];
  int64_t k0h = nd == 2 ? dims[0].k0[r[0]] : 0, k0w = dims[nd - 1].k0[r[nd - 1]];
  int64_t sh = nd == 2 ? dims[0].s : 1, sw = dims[nd - 1].s;
  for (int64_t mo = 0; mo < M; mo++)
    for (int64_t c = 0; c < Cg; c++)
      for (int64_t jh = 0; jh < nh; jh++)
        for (int64_t jw = 0; jw < nw; jw++) {
          int64_t g = mo / Mg, mg = mo % Mg;
          int64_t kh = k0h + (nh - 1 - jh) * sh, kw = k0w + (nw - 1 - jw) * sw;
          dst[((mo * Cg + c) * nh + jh) * nw + jw] = src[(((g * Cg + c) * Mg + mg) * Kh + kh) * Kw + kw];
        }
}

/* The bias [M] once per phase, [phases · M]: a constant where it is one (quantize_static takes only convs
 * with a constant bias), else broadcast at run time. */
static FcValue *tiled_bias(FcBuilder *b, FcValue *bias, int64_t phases, int64_t M) {
  const FcTensor *t = fc_value_const(bias);
  if (t && t->data) {
    int64_t n = phases * M;
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) fc_die(__FILE__, __LINE__, "out of memory");
    for (int64_t i = 0; i < n; i++) v[i] = ((const float *)t->data)[i % M];
    FcValue *c = fc_b_const(b, FC_DT_F32, 1, &n, v);
    free(v);
    return c;
  }
  int64_t bd[2] = {phases, M};
  return fc_b_reshape(b, fc_b_broadcast(b, fc_b_reshape(b, bias, 2, (int64_t[2]){1, M}), 2, bd), 1,
                      (int64_t[1]){phases * M});
}

/* A conv_transpose of a one-pixel input with one group (a generator's projection of its code) is a matmul,
 * each tap one output pixel: y[n, m, k..] = Σ_c x[n, c]·w[c, m, k..] + b[m], sliced from the pads on. */
static FcStatus as_matmul(FcModule *m, FcOp *op, const FcTensor *w, int nd, const Dim *dims, int64_t N, int64_t M,
                          FcOpStack *scratch, FcDiag *diag) {
  FcBuilder b;
  fc_rw_builder_before(&b, op, diag);
  int64_t C = w->type.dims[0], taps = 1;
  for (int i = 0; i < nd; i++) taps *= dims[i].K;
  int64_t wd[2] = {C, M * taps}, xd[2] = {N, C}, yd[2 + MAX_DIMS] = {N, M, 1, 1}, bd[1 + MAX_DIMS] = {M, 1, 1};
  FcTensor *wm = fc_tensor_new(&m->arena, fc_type_make(&m->arena, FC_DT_F32, 2, wd));
  memcpy((void *)wm->data, w->data, (size_t)w->nbytes); /* [C, M, K..] is [C, M·taps] */
  FcValue *y = fc_b_binary(&b, FC_OP_MATMUL, fc_b_reshape(&b, op->operands[0].value, 2, xd), fc_b_const_tensor(&b, wm));
  for (int i = 0; i < nd; i++) yd[2 + i] = dims[i].K;
  y = fc_b_reshape(&b, y, 2 + nd, yd);
  if (op->n_operands == 3) y = fc_b_binary(&b, FC_OP_ADD, y, fc_b_reshape(&b, op->operands[2].value, 1 + nd, bd));
  bool crop = false;
  int64_t st[2 + MAX_DIMS] = {0, 0}, en[2 + MAX_DIMS] = {N, M}, sp[2 + MAX_DIMS] = {1, 1, 1, 1};
  for (int i = 0; i < nd; i++) {
    st[2 + i] = dims[i].pb;
    en[2 + i] = dims[i].pb + dims[i].O;
    crop |= dims[i].O != dims[i].K;
  }
  if (crop) y = fc_b_slice(&b, y, st, en, sp);
  return fc_rw_replace_built(&b, op, y, scratch);
}

static FcStatus decompose(FcModule *m, FcOp *op, FcOpStack *scratch, FcDiag *diag) {
  if (op->kind != FC_OP_CONV_TRANSPOSE || op->n_results != 1) return FC_OK;
  const FcValue *x = op->operands[0].value, *wv = op->operands[1].value;
  const FcType *yt = &op->results[0].type;
  const FcTensor *w = fc_value_const(wv);
  int nd = x->type.rank - 2;
  if (nd < 1 || nd > MAX_DIMS || x->type.dtype != FC_DT_F32 || x->type.quant || wv->type.dtype != FC_DT_F32 ||
      wv->type.quant || !w || !w->data || yt->dtype != FC_DT_F32)
    return FC_OK;
  for (int i = 0; i < x->type.rank; i++)
    if (x->type.dims[i] < 1 || wv->type.dims[i] < 1) return FC_OK; /* empty tensors: nothing to gain */
  if (op->n_operands == 3) {
    const FcValue *bias = op->operands[2].value;
    if (bias->type.dtype != FC_DT_F32 || bias->type.quant) return FC_OK;
  }
  const int64_t *s, *d, *p;
  if (fc_op_attr_ints(op, FC_ATTR_STRIDES, &s) != nd || fc_op_attr_ints(op, FC_ATTR_DILATIONS, &d) != nd ||
      fc_op_attr_ints(op, FC_ATTR_PADS, &p) != 2 * nd)
    return FC_OK;
  int64_t G = fc_op_attr_int(op, FC_ATTR_GROUP, 1), phases = 1;
  Dim dims[MAX_DIMS];
  for (int i = 0; i < nd; i++) {
    if (d[i] != 1) return FC_OK;
    dims[i] = (Dim){.I = x->type.dims[2 + i], .K = wv->type.dims[2 + i], .s = s[i], .pb = p[i], .O = yt->dims[2 + i]};
    if (!plan_dim(&dims[i])) return FC_OK;
    phases *= s[i];
  }
  if (G < 1 || x->type.dims[1] % G != 0) return FC_OK;
  int64_t N = yt->dims[0], M = yt->dims[1];
  bool one_pixel = G == 1;
  for (int i = 0; i < nd; i++) one_pixel &= dims[i].I == 1 && dims[i].O <= dims[i].K - dims[i].pb;
  if (one_pixel) return as_matmul(m, op, w, nd, dims, N, M, scratch, diag);

  /* Phases of one geometry (K a multiple of the stride and the pads alike: FCN's and UNet's 2x2 stride 2)
   * make one conv with their weights stacked along the output channels, which is the concatenation itself
   * and a wider GEMM; grouped ones stay apart, since stacking would regroup the channels. */
  bool one_conv = G == 1 && phases > 1;
  for (int i = 0; i < nd; i++)
    for (int64_t q = 1; q < dims[i].s; q++)
      one_conv &= dims[i].n[q] == dims[i].n[0] && dims[i].pad0[q] == dims[i].pad0[0] &&
                  dims[i].pad1[q] == dims[i].pad1[0];
  FcBuilder b;
  fc_rw_builder_before(&b, op, diag);
  FcValue *parts[MAX_STRIDE * MAX_STRIDE];
  FcTensor *pw = NULL;
  int64_t r[MAX_DIMS] = {0, 0};
  for (int64_t ph = 0; ph < phases; ph++) {
    r[nd - 1] = ph % dims[nd - 1].s;
    if (nd == 2) r[0] = ph / dims[1].s;
    /* [M, Cg, n..], or all phases' stacked along M for one conv (their total is w's size) */
    int64_t wd[2 + MAX_DIMS] = {one_conv ? phases * M : M, x->type.dims[1] / G, 1, 1}, per = wd[1] * M;
    for (int i = 0; i < nd; i++) per *= wd[2 + i] = dims[i].n[r[i]];
    if (!one_conv || ph == 0) pw = fc_tensor_new(&m->arena, fc_type_make(&m->arena, FC_DT_F32, 2 + nd, wd));
    phase_weights(w, nd, dims, r, G, (float *)pw->data + (one_conv ? ph * per : 0));
    if (one_conv && ph + 1 < phases) continue;
    int64_t *strides = FC_NEW_ARRAY(&m->arena, int64_t, nd), *dil = FC_NEW_ARRAY(&m->arena, int64_t, nd);
    int64_t *pads = FC_NEW_ARRAY(&m->arena, int64_t, 2 * nd);
    for (int i = 0; i < nd; i++) {
      strides[i] = dil[i] = 1;
      pads[i] = dims[i].pad0[r[i]];
      pads[nd + i] = dims[i].pad1[r[i]];
    }
    FcAttr attrs[4] = {FC_A_INTS(DILATIONS, dil, nd), FC_A_INT(GROUP, G), FC_A_INTS(PADS, pads, 2 * nd),
                       FC_A_INTS(STRIDES, strides, nd)};
    FcValue *bias = op->n_operands == 3 ? op->operands[2].value : NULL;
    if (bias && one_conv) bias = tiled_bias(&b, bias, phases, M);
    FcValue *ops[3] = {op->operands[0].value, fc_b_const_tensor(&b, pw), bias};
    parts[one_conv ? 0 : ph] = fc_b_op1(&b, FC_OP_CONV, ops, op->n_operands, attrs, 4);
  }
  if (phases == 1) return fc_rw_replace_built(&b, op, parts[0], scratch); /* stride 1: Q = O */
  /* interleave: [N, sh·sw·M, Q..] -> [N, sh, sw, M, Qh, Qw] -> [N, M, Qh, sh, Qw, sw] -> [N, M, Qh·sh, Qw·sw] */
  FcValue *y = one_conv ? parts[0] : fc_b_concat(&b, parts, (int)phases, 1);
  int64_t sh = nd == 2 ? dims[0].s : 1, Qh = nd == 2 ? dims[0].Q : 1, sw = dims[nd - 1].s, Qw = dims[nd - 1].Q;
  int64_t split[6] = {N, sh, sw, M, Qh, Qw}, perm[6] = {0, 3, 4, 1, 5, 2};
  y = fc_b_transpose(&b, fc_b_reshape(&b, y, 6, split), perm);
  int64_t full[4] = {N, M, Qh * sh, Qw * sw};
  y = fc_b_reshape(&b, y, 2 + nd, nd == 2 ? full : (int64_t[3]){N, M, Qw * sw});
  bool over = false;
  for (int i = 0; i < nd; i++) over |= dims[i].Q * dims[i].s != dims[i].O;
  if (over) {
    int64_t st[4] = {0, 0, 0, 0}, en[4] = {N, M, 0, 0}, sp[4] = {1, 1, 1, 1};
    for (int i = 0; i < nd; i++) en[2 + i] = dims[i].O;
    y = fc_b_slice(&b, y, st, en, sp);
  }
  return fc_rw_replace_built(&b, op, y, scratch);
}

FcStatus fc_pass_decompose_conv_transpose(FcModule *m, FcPassContext *pc) {
  FcOpStack scratch;
  fc_op_stack_init(&scratch, &m->arena);
  FcStatus st = FC_OK;
  fc_graph_for_each_op_safe(m->graph, op, next) {
    if (st == FC_OK) st = decompose(m, op, &scratch, pc->diag);
  }
  return st;
}
