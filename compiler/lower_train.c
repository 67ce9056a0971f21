/* lower_train.c — legalisers of the optimizer update rules of ai.onnx.preview.training: Adagrad, Adam
 * and Momentum.
 *
 * Each takes a learning rate R and a step count T (scalars) followed by groups of n tensors each
 * (X1..Xn, G1..Gn, then the optimizer state), and returns the updated groups in the same order. The
 * update is built per tensor, element-wise, with the formulas of the ONNX spec (and of its reference
 * implementation, which the comments repeat); R and T are cast to each tensor's float dtype. The
 * spec's "if T > 0" choices are selects on T, so T may be a run-time input.
 */
#include "onnx.h"

#include <string.h>



/* Checks R, T and `groups` groups of equally many tensors (at most `out_groups` groups of outputs);
 * returns the group size, or 0 after recording an error. */
static int optimizer_inputs(FcLower *l, int groups, int out_groups) {
  int rest = l->n_in - 2;
  if (rest < groups || rest % groups != 0) {
    fc_lx_error(l, "expects R, T and %d groups of equally many tensors, has %d inputs", groups, l->n_in);
    return 0;
  }
  for (int i = 0; i < l->n_in; i++)
    if (!l->in[i]) {
      fc_lx_error(l, "input %d is required", i);
      return 0;
    }
  int n = rest / groups;
  if (l->n_out > out_groups * n) {
    fc_lx_error(l, "has %d outputs, expects at most %d", l->n_out, out_groups * n);
    return 0;
  }
  FcValue *r = l->in[0], *t = l->in[1];
  if (!fc_dtype_is_float(r->type.dtype) || r->type.rank != 0) {
    fc_lx_error(l, "R must be a float scalar");
    return 0;
  }
  if (!fc_dtype_is_int(t->type.dtype) || t->type.rank != 0) {
    fc_lx_error(l, "T must be an integer scalar");
    return 0;
  }
  for (int i = 2; i < l->n_in; i++)
    if (!fc_dtype_is_float(l->in[i]->type.dtype)) {
      fc_lx_error(l, "input %d must have a float type, not %s", i, fc_dtype_name(l->in[i]->type.dtype));
      return 0;
    }
  return n;
}

/* g_regularized = norm_coefficient * x + g */
static FcValue *regularized(FcLower *l, FcValue *x, FcValue *g, double norm) {
  return fc_lx_add(l, fc_lx_mul(l, x, fc_lx_scalar(l, x, norm)), g);
}

/* T > 0 */
static FcValue *t_positive(FcLower *l) {
  return fc_b_binary(l->b, FC_OP_GREATER, l->in[1], fc_b_scalar(l->b, l->in[1]->type.dtype, 0));
}

FcStatus fc_lower_adagrad(FcLower *l) {
  int n = optimizer_inputs(l, 3, 2);
  if (!n) return FC_ERR_INPUT;
  double decay = fc_lx_float(l, "decay_factor", 0), eps = fc_lx_float(l, "epsilon", 1e-6f),
         norm = fc_lx_float(l, "norm_coefficient", 0);
  for (int i = 0; i < n; i++) {
    FcValue *x = l->in[2 + i], *g = l->in[2 + n + i], *h = l->in[2 + 2 * n + i];
    FcDtype dt = x->type.dtype;
    /* r_ = R / (1 + T * decay_factor) */
    FcValue *t = fc_lx_cast_to(l, l->in[1], dt);
    FcValue *den = fc_lx_mul(l, t, fc_lx_scalar(l, x, decay));
    den = fc_lx_add(l, den, fc_lx_scalar(l, x, 1));
    FcValue *r = fc_lx_cast_to(l, l->in[0], dt);
    r = fc_lx_div(l, r, den);
    FcValue *gr = regularized(l, x, g, norm);
    FcValue *h_new = fc_lx_add(l, h, fc_lx_mul(l, gr, gr));
    FcValue *h_sqrt = fc_b_unary(l->b, FC_OP_SQRT, h_new);
    h_sqrt = fc_lx_add(l, h_sqrt, fc_lx_scalar(l, x, eps));
    /* X_new = X - r_ * G_regularized / H_adaptive */
    if (fc_lx_out_named(l, i)) l->out[i] = fc_lx_sub(l, x, fc_lx_div(l, fc_lx_mul(l, r, gr), h_sqrt));
    if (fc_lx_out_named(l, n + i)) l->out[n + i] = h_new;
  }
  return fc_lx_finish(l);
}

FcStatus fc_lower_adam(FcLower *l) {
  int n = optimizer_inputs(l, 4, 3);
  if (!n) return FC_ERR_INPUT;
  double alpha = fc_lx_float(l, "alpha", 0.9f), beta = fc_lx_float(l, "beta", 0.999f),
         eps = fc_lx_float(l, "epsilon", 1e-6f), norm = fc_lx_float(l, "norm_coefficient", 0),
         norm_post = fc_lx_float(l, "norm_coefficient_post", 0);
  FcValue *t_pos = t_positive(l);
  for (int i = 0; i < n; i++) {
    FcValue *x = l->in[2 + i], *g = l->in[2 + n + i], *v = l->in[2 + 2 * n + i], *h = l->in[2 + 3 * n + i];
    FcDtype dt = x->type.dtype;
    FcValue *gr = regularized(l, x, g, norm);
    FcValue *v_new = fc_lx_mul(l, v, fc_lx_scalar(l, x, alpha));
    v_new = fc_lx_add(l, v_new, fc_lx_mul(l, gr, fc_lx_scalar(l, x, 1 - alpha)));
    FcValue *h_new = fc_lx_mul(l, h, fc_lx_scalar(l, x, beta));
    FcValue *g2 = fc_lx_mul(l, gr, gr);
    h_new = fc_lx_add(l, h_new, fc_lx_mul(l, g2, fc_lx_scalar(l, x, 1 - beta)));
    FcValue *h_sqrt = fc_b_unary(l->b, FC_OP_SQRT, h_new);
    h_sqrt = fc_lx_add(l, h_sqrt, fc_lx_scalar(l, x, eps));
    /* R_adjusted = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R (bias correction) */
    FcValue *r = fc_lx_cast_to(l, l->in[0], dt), *t = fc_lx_cast_to(l, l->in[1], dt);
    FcValue *one = fc_lx_scalar(l, x, 1);
    FcValue *bt = fc_lx_sub(l, one, fc_b_binary(l->b, FC_OP_POW, fc_lx_scalar(l, x, beta), t));
    FcValue *at = fc_lx_sub(l, one, fc_b_binary(l->b, FC_OP_POW, fc_lx_scalar(l, x, alpha), t));
    FcValue *r_adj = fc_b_select(l->b, t_pos, fc_lx_div(l, fc_lx_mul(l, r, fc_b_unary(l->b, FC_OP_SQRT, bt)), at), r);
    FcValue *x_new = fc_lx_sub(l, x, fc_lx_mul(l, r_adj, fc_lx_div(l, v_new, h_sqrt)));
    if (fc_lx_out_named(l, i)) l->out[i] = fc_lx_mul(l, x_new, fc_lx_scalar(l, x, 1 - norm_post));
    if (fc_lx_out_named(l, n + i)) l->out[n + i] = v_new;
    if (fc_lx_out_named(l, 2 * n + i)) l->out[2 * n + i] = h_new;
  }
  return fc_lx_finish(l);
}

FcStatus fc_lower_momentum(FcLower *l) {
  int n = optimizer_inputs(l, 3, 2);
  if (!n) return FC_ERR_INPUT;
  static const char *const required[] = {"alpha", "beta", "mode", "norm_coefficient"};
  for (int i = 0; i < 4; i++)
    if (!fc_lx_has_attr(l, required[i])) return fc_lx_error(l, "attribute '%s' is required", required[i]);
  double alpha = fc_lx_float(l, "alpha", 0), beta = fc_lx_float(l, "beta", 0),
         norm = fc_lx_float(l, "norm_coefficient", 0);
  const char *mode = fc_lx_str(l, "mode", "");
  bool nesterov = strcmp(mode, "nesterov") == 0;
  if (!nesterov && strcmp(mode, "standard") != 0)
    return fc_lx_error(l, "mode must be \"standard\" or \"nesterov\", is \"%s\"", mode);
  FcValue *t_pos = t_positive(l);
  for (int i = 0; i < n; i++) {
    FcValue *x = l->in[2 + i], *g = l->in[2 + n + i], *v = l->in[2 + 2 * n + i];
    FcValue *gr = regularized(l, x, g, norm);
    /* the gradient's coefficient is 1 at the first step */
    FcValue *one = fc_lx_scalar(l, x, 1);
    FcValue *beta_adj = fc_b_select(l->b, t_pos, fc_lx_scalar(l, x, beta), one);
    FcValue *v_new = fc_lx_mul(l, v, fc_lx_scalar(l, x, alpha));
    v_new = fc_lx_add(l, v_new, fc_lx_mul(l, gr, beta_adj));
    FcValue *r = fc_lx_cast_to(l, l->in[0], x->type.dtype);
    FcValue *step = nesterov ? fc_lx_add(l, gr, fc_lx_mul(l, v_new, fc_lx_scalar(l, x, alpha))) : v_new;
    if (fc_lx_out_named(l, i)) l->out[i] = fc_lx_sub(l, x, fc_lx_mul(l, r, step));
    if (fc_lx_out_named(l, n + i)) l->out[n + i] = v_new;
  }
  return fc_lx_finish(l);
}
