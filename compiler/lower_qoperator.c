/* lower_qoperator.c — onnxruntime's QOperator ops of the com.microsoft domain (what its quantize_static writes
 * in the QOperator format next to QLinearConv/QLinearMatMul): QLinearAdd, QLinearMul, QLinearConcat,
 * QLinearAveragePool, QLinearGlobalAveragePool, QLinearLeakyRelu and QLinearSigmoid.
 *
 * Each is its float op between DequantizeLinear of every quantised input and QuantizeLinear of the result:
 * the node is legalised by the same legalisers run on a sub-FcLower (fc_lower_dequantize, the float op's own,
 * fc_lower_quantize), so with compile-time scales the operands come out as flow.dequantize of quantised types
 * and the result as flow.quantize — the QDQ form every other quantised region takes — and with run-time
 * scales as the f32 arithmetic those legalisers write. Attributes are read from the node by the float
 * legaliser (they share the names of the ai.onnx op: axis, alpha, kernel_shape, pads, ...); the layout
 * attribute channels_last = 1 (NHWC) is refused.
 */
#include "onnx.h"

/* The single result of `fn` run on this node with the given inputs, variant (arg) and opset; NULL after an
 * error (recorded). */
static FcValue *sub_lower(FcLower *l, FcLowerFn fn, FcValue **in, int n_in, int arg, int opset) {
  FcValue *out = NULL;
  FcLower s = *l;
  s.in = in;
  s.n_in = n_in;
  s.out = &out;
  s.n_out = 1;
  s.arg = arg;
  s.opset = opset;
  return fn(&s) == FC_OK ? out : NULL;
}

/* Input x at `i`, with its scale and zero point at i + 1 and i + 2, dequantized. */
static FcValue *dequantized(FcLower *l, int i) {
  if (i + 1 >= l->n_in || !l->in[i] || !l->in[i + 1]) {
    fc_lx_error(l, "input %d needs a scale", i);
    return NULL;
  }
  FcValue *in[3] = {l->in[i], l->in[i + 1], i + 2 < l->n_in ? l->in[i + 2] : NULL};
  return sub_lower(l, fc_lower_dequantize, in, in[2] ? 3 : 2, 0, 13);
}

/* y quantised with the scale and zero point at inputs s and s + 1, as the node's output. */
static FcStatus quantized_out(FcLower *l, FcValue *y, int s) {
  if (!y) return fc_lx_bail(l);
  if (s >= l->n_in || !l->in[s]) return fc_lx_error(l, "the output needs a scale (input %d)", s);
  FcValue *in[3] = {y, l->in[s], s + 1 < l->n_in ? l->in[s + 1] : NULL};
  l->out[0] = sub_lower(l, fc_lower_quantize, in, in[2] ? 3 : 2, 0, 13);
  return l->out[0] ? fc_lx_finish(l) : fc_lx_bail(l);
}

static bool refuse_nhwc(FcLower *l) {
  if (fc_lx_int(l, "channels_last", 0) == 0) return false;
  fc_lx_unsupported(l, "channels_last = 1 (NHWC) is not supported");
  return true;
}

/* QLinearAdd / QLinearMul (A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp): arg is the core op. */
FcStatus fc_lower_qlinear_binary(FcLower *l) {
  if (fc_lx_need_inputs(l, 7) != FC_OK) return FC_ERR_INPUT;
  FcValue *ab[2] = {dequantized(l, 0), NULL};
  if (ab[0]) ab[1] = dequantized(l, 3);
  if (!ab[1]) return fc_lx_bail(l);
  return quantized_out(l, sub_lower(l, fc_lower_binary, ab, 2, l->arg, 14), 6);
}

/* QLinearConcat (Y_scale, Y_zp, then X, X_scale, X_zp per input; axis). */
FcStatus fc_lower_qlinear_concat(FcLower *l) {
  if (fc_lx_need_inputs(l, 5) != FC_OK) return FC_ERR_INPUT;
  if ((l->n_in - 2) % 3) return fc_lx_error(l, "expects Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples");
  int n = (l->n_in - 2) / 3;
  FcValue **xs = FC_NEW_ARRAY(fc_lx_arena(l), FcValue *, (size_t)n);
  for (int i = 0; i < n; i++)
    if (!(xs[i] = dequantized(l, 2 + 3 * i))) return fc_lx_bail(l);
  return quantized_out(l, sub_lower(l, fc_lower_concat, xs, n, 0, 13), 0);
}

/* QLinearAveragePool / QLinearGlobalAveragePool (X, x_scale, x_zp, y_scale, y_zp) and QLinearLeakyRelu /
 * QLinearSigmoid (the same inputs): the float legaliser and its variant come from the row. */
static FcStatus unary_form(FcLower *l, FcLowerFn fn, int arg, int opset) {
  if (fc_lx_need_inputs(l, 4) != FC_OK) return FC_ERR_INPUT;
  if (refuse_nhwc(l)) return fc_lx_bail(l);
  FcValue *x = dequantized(l, 0);
  if (!x) return fc_lx_bail(l);
  return quantized_out(l, sub_lower(l, fn, &x, 1, arg, opset), 3);
}

FcStatus fc_lower_qlinear_avg_pool(FcLower *l) { return unary_form(l, fc_lower_pool, FC_OP_AVG_POOL, 11); }
FcStatus fc_lower_qlinear_global_avg_pool(FcLower *l) {
  return unary_form(l, fc_lower_global_pool, FC_OP_REDUCE_MEAN, 1);
}
FcStatus fc_lower_qlinear_leaky_relu(FcLower *l) {
  return unary_form(l, fc_lower_activation, FC_LX_ACT_LEAKY_RELU, 16);
}
FcStatus fc_lower_qlinear_sigmoid(FcLower *l) { return unary_form(l, fc_lower_unary, FC_OP_SIGMOID, 13); }
