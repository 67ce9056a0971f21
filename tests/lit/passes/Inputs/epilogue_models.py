# Writes ONNX test cases for fold_batchnorm and fuse_epilogue: epilogue_models.py OUT_DIR
# Each case is OUT_DIR/<name>/model.onnx + test_data_set_0/{input_0,output_0}.pb, the layout
# `flowc check` reads. Expected outputs are computed here with NumPy in float64. Inputs, weights and
# BatchNormalization parameters are small multiples of 1/8 (and the BN variance makes 1/sqrt(var + eps)
# a power of two), so every product and sum before the activation is exact in f32: the check then
# measures the epilogue's activations, not summation order.
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)


def grid(shape, lo=-4, hi=4):
    return (rng.integers(lo * 8, hi * 8 + 1, size=shape) / 8).astype(np.float32)


def conv_ref(x, w, b=None, pads=(1, 1), group=1):
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[0]), (pads[1], pads[1])))
    oh, ow = h + 2 * pads[0] - kh + 1, wd + 2 * pads[1] - kw + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for o in range(m):
        g = o // mg
        for ci in range(cg):
            for i in range(kh):
                for j in range(kw):
                    y[:, o] += w[o, ci, i, j] * xp[:, g * cg + ci, i:i + oh, j:j + ow]
    if b is not None:
        y += b[None, :, None, None]
    return y


def bn_params(c):
    # scale, bias, mean, var with var + eps a power of 4, so 1/sqrt(var + eps) is exact
    eps = 1e-5
    scale = grid([c], -2, 2)
    scale[scale == 0] = 0.5
    bias = grid([c])
    mean = grid([c])
    var = (4.0 ** rng.integers(-1, 2, size=[c]) - eps).astype(np.float32)
    return scale, bias, mean, var, eps


def bn_ref(y, scale, bias, mean, var, eps):
    s = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + np.float64(np.float32(eps)))
    t = bias - mean * s
    return y * s[None, :, None, None] + t[None, :, None, None]


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def save(out, name, nodes, inputs, inits, outputs, feeds, results, opset=13):
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, 'test_data_set_0'), exist_ok=True)
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(d, 'model.onnx'))
    for i, a in enumerate(feeds):
        onnx.save_tensor(numpy_helper.from_array(a), os.path.join(d, 'test_data_set_0', 'input_%d.pb' % i))
    for i, a in enumerate(results):
        onnx.save_tensor(numpy_helper.from_array(a.astype(np.float32)),
                         os.path.join(d, 'test_data_set_0', 'output_%d.pb' % i))


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def init(name, a):
    return numpy_helper.from_array(a, name)


def conv_bn(out, name, act, residual=False, group=1, c=4, m=8):
    """Conv (no bias) -> BatchNormalization -> [Add x] -> activation."""
    if group > 1:
        c = m = group
    x = grid([2, c, 6, 7])
    w = grid([m, c // group, 3, 3], -1, 1)
    scale, bias, mean, var, eps = bn_params(m)
    inits = [init('w', w), init('scale', scale), init('bias', bias), init('mean', mean), init('var', var)]
    nodes = [helper.make_node('Conv', ['x', 'w'], ['c'], pads=[1, 1, 1, 1], group=group),
             helper.make_node('BatchNormalization', ['c', 'scale', 'bias', 'mean', 'var'], ['n'], epsilon=eps)]
    y = bn_ref(conv_ref(x, w, group=group), scale, bias, mean, var, eps)
    last = 'n'
    if residual:
        r = grid([2, m, 6, 7])
        inits.append(init('r', r))
        nodes.append(helper.make_node('Add', ['n', 'r'], ['s']))
        y, last = y + r, 's'
    if act == 'relu':
        nodes.append(helper.make_node('Relu', [last], ['y']))
        y = np.maximum(y, 0)
    elif act == 'relu6':
        inits += [init('lo', np.array(0, np.float32)), init('hi', np.array(6, np.float32))]
        nodes.append(helper.make_node('Clip', [last, 'lo', 'hi'], ['y']))
        y = np.clip(y, 0, 6)
    elif act == 'hardswish':
        nodes.append(helper.make_node('HardSwish', [last], ['y']))
        y = y * np.clip(y / 6 + 0.5, 0, 1)
    save(out, name, nodes, [vi('x', x.shape)], inits, [vi('y', y.shape)], [x], [y], opset=14)


def linear(out, name, act):
    """Gemm (weights, bias) -> activation, on [16, 24] x [24, 20]."""
    x = grid([16, 24], -2, 2)
    w = grid([20, 24], -1, 1)
    b = grid([20])
    nodes = [helper.make_node('Gemm', ['x', 'w', 'b'], ['g'], transB=1)]
    inits = [init('w', w), init('b', b)]
    y = x.astype(np.float64) @ w.T.astype(np.float64) + b
    if act == 'silu':
        nodes += [helper.make_node('Sigmoid', ['g'], ['sg']), helper.make_node('Mul', ['g', 'sg'], ['y'])]
        y = y * sigmoid(y)
    elif act == 'gelu':
        # GELU as PyTorch exports it (erf form): x * 0.5 * (1 + erf(x / sqrt(2)))
        inits += [init('sqrt2', np.array(math.sqrt(2), np.float32)), init('one', np.array(1, np.float32)),
                  init('half', np.array(0.5, np.float32))]
        nodes += [helper.make_node('Div', ['g', 'sqrt2'], ['d']), helper.make_node('Erf', ['d'], ['e']),
                  helper.make_node('Add', ['e', 'one'], ['a']), helper.make_node('Mul', ['g', 'a'], ['p']),
                  helper.make_node('Mul', ['p', 'half'], ['y'])]
        erf = np.vectorize(math.erf)
        y = y * 0.5 * (1 + erf(y / np.float64(np.float32(math.sqrt(2)))))
    elif act == 'bn_relu':
        # BatchNorm1d after a Linear: its scale folds into the weights' columns
        scale, bias, mean, var, eps = bn_params(20)
        inits += [init('scale', scale), init('bias', bias), init('mean', mean), init('var', var)]
        nodes += [helper.make_node('BatchNormalization', ['g', 'scale', 'bias', 'mean', 'var'], ['n'], epsilon=eps),
                  helper.make_node('Relu', ['n'], ['y'])]
        s = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + np.float64(np.float32(eps)))
        y = np.maximum(y * s + (bias - mean * s), 0)
    save(out, name, nodes, [vi('x', x.shape)], inits, [vi('y', y.shape)], [x], [y])


out = sys.argv[1]
conv_bn(out, 'conv_bn_relu', 'relu')
conv_bn(out, 'conv_bn_add_relu', 'relu', residual=True)
conv_bn(out, 'conv_bn_relu6', 'relu6')
conv_bn(out, 'conv_bn_hardswish', 'hardswish')
conv_bn(out, 'dwconv_bn_relu6', 'relu6', group=8)
linear(out, 'linear_silu', 'silu')
linear(out, 'linear_gelu', 'gelu')
linear(out, 'linear_bn_relu', 'bn_relu')
