#!/usr/bin/python3
"""qdq_random.py — seeded random quantised layers at awkward sizes, run by onnxruntime and by flowc.

Each case is a small ONNX model written here with onnx.helper (no PyTorch):
  - a QDQ layer: QuantizeLinear -> DequantizeLinear around a Conv (dense, depthwise with multiplier 1 or 2,
    grouped, 1-D) or a MatMul with per-channel int8 weights, an int32 bias or none, an optional Relu, and for
    some convs a MaxPool, AveragePool, Add or Concat after it; or a conv whose weights are uint8 with a zero
    point (w - zw leaves int8: the 16-bit weight path);
  - QDQ around a pool (MaxPool with dilations, AveragePool with and without the pads counted, ceil mode,
    GlobalAveragePool, GlobalMaxPool), around Add, Sub, Mul or Concat of two inputs of different scales (the
    second broadcast per channel in some), or around float glue (HardSwish, HardSigmoid, Sigmoid, Tanh,
    LeakyRelu, Clip, Relu: the byte lookup tables and the f32 loops);
  - a QOperator node on uint8 tensors: QLinearConv (grouped in some), QLinearMatMul, and ConvInteger and
    MatMulInteger with their int32 results (uint8 and int8 weights, zero points or none).
Sizes, kernels, strides, dilations, asymmetric pads, channel counts, scales, zero points (u8 and, with
--int8-activations, i8) and inputs are drawn from one seed, so a failure is reproduced by seed and case (and
kind of host: the int8 weights stay within +-64 where onnxruntime's u8 x s8 products saturate, s8_weight_bound).

onnxruntime-node (bench/node_modules; tests/e2e/ort_run.js, all graph optimisations, one thread) runs each
model once; `flowc run` runs it for every CPU variant this machine can execute (its own CPU, x86-64-v4,
x86-64-v3 and the x86-64 baseline: the VNNI/AMX, AVX-512, AVX2 and scalar integer kernels), on 1 or 2
threads by case. Every 8-bit output element must be within 1 output quantisation step of onnxruntime's (the
runtimes may round a value that lies within a float rounding of a half step differently, and Sigmoid and
Tanh are approximated differently; no case differed at all when this was written) and int32 results must
be equal. One combination is left out: AveragePool counting the pads with ceil mode, where onnxruntime's
quantised pool divides a window that runs past the padded input by the whole kernel, while the ONNX
reference and PyTorch (and flowc) count only the positions inside it (onnxruntime issue 16203).
With --export each model is also written by `flowc build --emit onnx` (the module after the passes, its
quantised ops as QDQ node groups) and the export run in onnxruntime (by `flowc run` where onnxruntime could
saturate its int8 weights: check_export): within 1 step of `flowc run` on the original (int32 results equal).
Exit status 77 (skipped) without onnxruntime-node.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def cpu_flags():
    """The x86 feature flags of /proc/cpuinfo (empty elsewhere, or where it cannot be read)."""
    try:
        with open('/proc/cpuinfo') as f:
            return next((set(l.split(':', 1)[1].split()) for l in f if l.startswith('flags')), set())
    except OSError:
        return set()


def s8_weight_bound():
    """The largest |w| of the s8 weights drawn: 128, the full range, where onnxruntime's u8 x s8 products are
    exact; 64 where they may saturate. Its x86 kernels (MLAS) use vpdpbusd where the CPU has AVX512-VNNI or
    AVX-VNNI, and AVX2's vpmaddubsw otherwise, whose sum of two u8 x s8 products saturates at 16 bits:
    255 * 128 * 2 overflows it, 255 * 64 * 2 does not (onnxruntime's quantisation guide suggests reduce_range
    for that). flowc's kernels are exact with any weights; tests/lit checks the full range against flowc's
    reference evaluator on every host."""
    flags = cpu_flags()
    return 64 if 'avx2' in flags and not flags & {'avx512_vnni', 'avx_vnni'} else 128


S8_MAX = s8_weight_bound()


def s8_weights(rng, shape, limit=128):
    """Weights in [-limit, limit) where that is within S8_MAX, else in [-S8_MAX, S8_MAX]."""
    m = min(limit, S8_MAX)
    return rng.integers(-m, limit if m == limit else m + 1, shape)


def host_cpus():
    """The --cpu names this machine can run, best first (x86-64 only; elsewhere just the native one)."""
    flags = cpu_flags()
    if 'sse2' not in flags:
        return ['native']
    cpus = ['native']
    if {'avx512f', 'avx512bw', 'avx512dq', 'avx512vl'} <= flags:
        cpus.append('x86-64-v4')
    if {'avx2', 'fma', 'bmi2'} <= flags:
        cpus.append('x86-64-v3')
    return cpus + ['x86-64']


class Graph:
    """Nodes and initialisers of one model, with unique names."""

    def __init__(self, rng, int8_activations):
        self.rng, self.int8 = rng, int8_activations
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, prefix):
        self.count += 1
        return '%s%d' % (prefix, self.count)

    def const(self, prefix, value):
        n = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(value), n))
        return n

    def node(self, op, inputs, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def qdq(self, x, scale, zp):
        """QuantizeLinear then DequantizeLinear; u8 (or, half the time with --int8-activations, i8)."""
        if self.int8 and self.rng.random() < 0.5:
            z = self.const('z', np.int8(zp - 128))
        else:
            z = self.const('z', np.uint8(zp))
        s = self.const('s', np.float32(scale))
        return self.node('DequantizeLinear', [self.node('QuantizeLinear', [x, s, z]), s, z]), s

    def weights(self, w, scales, axis):
        q = self.const('w', w.astype(np.int8))
        return self.node('DequantizeLinear', [q, self.const('ws', scales.astype(np.float32)),
                                              self.const('wz', np.zeros(scales.shape, np.int8))], axis=axis)


def range_q(lo, hi):
    """The u8 scale and zero point of the float range [lo, hi] (widened to hold 0)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    s = (hi - lo) / 255.0 or 1.0
    return s, int(np.clip(round(-lo / s), 0, 255))


def conv_geometry(rng, spatial, big):
    """Kernel, strides, dilations and pads for input extents `spatial`, each axis big enough for its window."""
    n = len(spatial)
    ks = [int(rng.choice([1, 1, 2, 3, 3, 3, 5, 7])) for _ in range(n)]
    if big and rng.random() < 0.5:
        ks = [3] * n  # the Winograd and tap kernels' shape
    st = [int(rng.choice([1, 1, 2, 3])) for _ in range(n)]
    dl = [int(rng.choice([1, 1, 1, 2])) for _ in range(n)]
    pads = [int(rng.integers(0, k)) if k > 1 else 0 for k in ks] * 2
    pads[n:] = [int(rng.integers(0, k)) if k > 1 else 0 for k in ks]
    for a in range(n):
        short = dl[a] * (ks[a] - 1) + 1 - (spatial[a] + pads[a] + pads[a + n])
        if short > 0:
            pads[a + n] += short
    return ks, st, dl, pads


def scale_of(g, name):
    return float(numpy_helper.to_array([t for t in g.inits if t.name == name][0]))


def finish(g, y, inputs, out_type=TensorProto.FLOAT, opset=13):
    """The model of g's nodes with result y; inputs: [(name, array)]."""
    g.nodes.append(helper.make_node('Identity', [y], ['y']))
    types = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.uint8): TensorProto.UINT8}
    graph = helper.make_graph(g.nodes, 'qdq_random',
                              [helper.make_tensor_value_info(n, types[a.dtype], a.shape) for n, a in inputs],
                              [helper.make_tensor_value_info('y', out_type, None)], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
    model.ir_version = 8
    return model


def float_input(rng, shape, sx, zx):
    """Values on the grid of (sx, zx), half the time moved between the steps and past the range."""
    x = ((rng.integers(0, 256, shape) - zx) * sx).astype(np.float32)
    if rng.random() < 0.5:
        x = (x + rng.normal(0, sx * 0.3, shape)).astype(np.float32)
    return x


def qdq_case(rng, kind, big, int8_activations):
    """A QDQ layer: returns (model, inputs, output step)."""
    g = Graph(rng, int8_activations)
    sx, zx = float(rng.uniform(0.005, 0.05)), int(rng.integers(0, 256))
    batch = int(rng.choice([1, 1, 2]))
    if kind == 'matmul':
        K, M, rows = int(rng.integers(1, 300)), int(rng.integers(1, 200)), int(rng.integers(1, 70))
        shape = [rows, K]
    else:
        C = int(rng.integers(1, 130 if big else 40))
        spatial = [int(rng.integers(1, 60 if big else 30)) for _ in range(1 if kind == 'conv1d' else 2)]
        shape = [batch, C] + spatial
    x, _ = g.qdq('x', sx, zx)
    if kind == 'matmul':
        ws = rng.uniform(0.001, 0.02, M)
        y = g.node('MatMul', [x, g.weights(s8_weights(rng, (K, M)), ws, 1)])
    else:
        if kind == 'depthwise':
            G, M = C, C * int(rng.choice([1, 1, 2]))
        elif kind == 'grouped':
            divisors = [d for d in range(2, C + 1) if C % d == 0]
            G = int(rng.choice(divisors)) if divisors else 1
            M = G * int(rng.integers(1, 6))
        else:
            G, M = 1, int(rng.integers(1, 140 if big else 70))
        ks, st, dl, pads = conv_geometry(rng, shape[2:], big)
        K = C // G * int(np.prod(ks))
        limit = 21 if rng.random() < 0.3 else 128  # small weights too: sums far from i32's edges either way
        ws = rng.uniform(0.001, 0.02, M)
        inputs = [x, g.weights(s8_weights(rng, [M, C // G] + ks, limit), ws, 0)]
        if rng.random() < 0.7:
            b = g.const('b', rng.integers(-5000, 5000, M).astype(np.int32))
            inputs.append(g.node('DequantizeLinear', [b, g.const('bs', (sx * ws).astype(np.float32)),
                                                      g.const('bz', np.zeros(M, np.int32))], axis=0))
        y = g.node('Conv', inputs, kernel_shape=ks, strides=st, dilations=dl, pads=pads, group=G)
    spread = sx * 128 * np.sqrt(K) * 0.6  # about the accumulators' spread, times the weights' scale
    if rng.random() < 0.4:
        y = g.node('Relu', [y])
        s1, z1 = range_q(0, 2 * spread)
    else:
        s1, z1 = range_q(-spread, spread * float(rng.uniform(0.5, 2)))
    y, step = g.qdq(y, s1, z1)
    tail = kind == 'conv' and rng.random() < 0.6
    if tail:
        after = str(rng.choice(['MaxPool', 'AveragePool', 'Add', 'Concat']))
        if after in ('MaxPool', 'AveragePool'):
            k = int(rng.choice([2, 3]))
            k = max(1, min([k] + out_extents(shape[2:], ks, st, dl, pads)))
            pad = int(rng.integers(0, k)) if after == 'MaxPool' else 0
            y, step = g.qdq(g.node(after, [y], kernel_shape=[k, k], strides=[int(rng.choice([1, 2]))] * 2,
                                   pads=[pad] * 4), s1, z1)
        elif after == 'Add':
            s2, z2 = range_q(-2 * spread, 2 * spread)
            y, step = g.qdq(g.node('Add', [y, y]), s2, z2)
        else:
            y, step = g.qdq(g.node('Concat', [y, y], axis=1), s1, z1)
    x_val = float_input(rng, shape, sx, zx)
    model = finish(g, y, [('x', x_val)])
    return model, [('x', x_val)], scale_of(g, step)


def out_extents(spatial, ks, st, dl, pads):
    n = len(spatial)
    return [(spatial[a] + pads[a] + pads[a + n] - dl[a] * (ks[a] - 1) - 1) // st[a] + 1 for a in range(n)]


def qop_case(rng, kind, big):
    """A QOperator node on uint8 tensors: returns (model, inputs, 1.0: the outputs are the steps)."""
    g = Graph(rng, False)
    sx, zx = float(rng.uniform(0.005, 0.05)), int(rng.integers(0, 256))
    out_type = TensorProto.UINT8
    if kind == 'qlinearmatmul':
        K, M, rows = int(rng.integers(1, 300)), int(rng.integers(1, 200)), int(rng.integers(1, 70))
        shape = [rows, K]
        w = rng.integers(0, 256, (K, M)).astype(np.uint8)
        sw, zw = float(rng.uniform(0.001, 0.02)), int(rng.integers(0, 256))
        spread = sx * sw * 128 * 100 * np.sqrt(K)
        sy, zy = range_q(-spread, spread)
        ins = ['x', g.const('sx', np.float32(sx)), g.const('zx', np.uint8(zx)), g.const('w', w),
               g.const('sw', np.float32(sw)), g.const('zw', np.uint8(zw)), g.const('sy', np.float32(sy)),
               g.const('zy', np.uint8(zy))]
        y = g.node('QLinearMatMul', ins)
    elif kind == 'qlinearconv':
        G = 1 if rng.random() < 0.6 else int(rng.integers(2, 20))
        C = G * (int(rng.integers(1, 40)) if G == 1 else int(rng.choice([1, 1, 2, 3])))
        M = G * (int(rng.integers(1, 70)) if G == 1 else int(rng.choice([1, 1, 2, 4])))
        shape = [int(rng.choice([1, 2])), C] + [int(rng.integers(1, 60 if big else 30)) for _ in range(2)]
        ks, st, dl, pads = conv_geometry(rng, shape[2:], big)
        K = C // G * int(np.prod(ks))
        w = s8_weights(rng, [M, C // G] + ks).astype(np.int8)
        sw = rng.uniform(0.001, 0.02, M).astype(np.float32)
        spread = sx * float(sw.mean()) * 128 * 100 * np.sqrt(K)
        sy, zy = range_q(-spread, spread)
        ins = ['x', g.const('sx', np.float32(sx)), g.const('zx', np.uint8(zx)), g.const('w', w), g.const('sw', sw),
               g.const('zw', np.zeros(M, np.int8)), g.const('sy', np.float32(sy)), g.const('zy', np.uint8(zy))]
        if rng.random() < 0.7:
            ins.append(g.const('b', rng.integers(-5000, 5000, M).astype(np.int32)))
        y = g.node('QLinearConv', ins, kernel_shape=ks, strides=st, dilations=dl, pads=pads, group=G)
    else:  # convinteger, matmulinteger: the int32 sums themselves
        out_type = TensorProto.INT32
        wdt = np.int8 if rng.random() < 0.5 else np.uint8
        draw = (lambda shape: s8_weights(rng, shape)) if wdt == np.int8 else (lambda shape: rng.integers(0, 256, shape))
        if kind == 'convinteger':
            C, M = int(rng.integers(1, 40)), int(rng.integers(1, 70))
            shape = [int(rng.choice([1, 2])), C] + [int(rng.integers(1, 60 if big else 30)) for _ in range(2)]
            ks, st, dl, pads = conv_geometry(rng, shape[2:], big)
            w, attrs = draw([M, C] + ks), dict(kernel_shape=ks, strides=st, dilations=dl, pads=pads)
        else:
            K, M = int(rng.integers(1, 300)), int(rng.integers(1, 200))
            rows = int(rng.integers(1, 70))
            shape = [int(rng.integers(1, 4)), rows, K] if rng.random() < 0.4 else [rows, K]
            w, attrs = draw([K, M]), {}
        ins = ['x', g.const('w', w.astype(wdt))]
        if rng.random() < 0.7:
            ins += [g.const('zx', np.uint8(rng.integers(0, 256))), g.const('zw', wdt(rng.integers(0, 100)))]
        y = g.node('ConvInteger' if kind == 'convinteger' else 'MatMulInteger', ins, **attrs)
    inputs = [('x', rng.integers(0, 256, shape).astype(np.uint8))]
    return finish(g, y, inputs, out_type), inputs, 1.0


def u8_weights_case(rng, big):
    """QDQ around a conv whose weights are uint8 with a zero point: w - zw spans [-255, 255]."""
    g = Graph(rng, False)
    C, M = int(rng.integers(1, 40)), int(rng.integers(1, 70))
    shape = [int(rng.choice([1, 2])), C] + [int(rng.integers(1, 60 if big else 30)) for _ in range(2)]
    sx, zx = float(rng.uniform(0.005, 0.05)), int(rng.integers(0, 256))
    x, _ = g.qdq('x', sx, zx)
    ks, st, dl, pads = conv_geometry(rng, shape[2:], big)
    sw, zw = float(rng.uniform(0.001, 0.02)), int(rng.integers(0, 256))
    w = g.node('DequantizeLinear', [g.const('w', rng.integers(0, 256, [M, C] + ks).astype(np.uint8)),
                                    g.const('ws', np.float32(sw)), g.const('wz', np.uint8(zw))])
    y = g.node('Conv', [x, w], kernel_shape=ks, strides=st, dilations=dl, pads=pads)
    spread = sx * sw * 128 * 128 * np.sqrt(C * np.prod(ks)) * 0.6
    y, step = g.qdq(y, *range_q(-spread, spread))
    inputs = [('x', float_input(rng, shape, sx, zx))]
    return finish(g, y, inputs), inputs, scale_of(g, step)


def pool_case(rng):
    """QDQ around a pool, its result quantised like its input or not."""
    g = Graph(rng, False)
    small = rng.random() < 0.4  # maps of 1 to 3: windows past the padded input, in ceil mode
    shape = [int(rng.choice([1, 2])), int(rng.integers(1, 40))] + [int(rng.integers(1, 4) if small else rng.integers(3, 30))
                                                                   for _ in range(2)]
    sx, zx = float(rng.uniform(0.005, 0.05)), int(rng.integers(0, 256))
    x, _ = g.qdq('x', sx, zx)
    op = str(rng.choice(['MaxPool', 'AveragePool', 'AveragePool', 'GlobalAveragePool', 'GlobalMaxPool']))
    if op.startswith('Global'):
        y = g.node(op, [x])
    else:
        k = [int(rng.integers(1, 4)) for _ in range(2)]
        attrs = dict(kernel_shape=k, strides=[int(rng.integers(1, 4)) for _ in range(2)],
                     pads=[int(rng.integers(0, k[a % 2])) for a in range(4)], ceil_mode=int(rng.random() < 0.4))
        dl = [1, 1]
        if op == 'AveragePool':
            attrs['count_include_pad'] = 0 if attrs['ceil_mode'] else int(rng.random() < 0.5)  # see the top
        elif rng.random() < 0.3:
            dl = attrs['dilations'] = [int(rng.integers(1, 3)) for _ in range(2)]
        for a in range(2):  # at least one window: it may overhang the padded input by less than a stride in ceil mode
            ext, padded = dl[a] * (k[a] - 1) + 1, shape[2 + a] + attrs['pads'][a] + attrs['pads'][2 + a]
            if padded < ext and not (attrs['ceil_mode'] and ext - padded < attrs['strides'][a]):
                attrs['strides'][a] = ext - padded + 1
                attrs['ceil_mode'] = 1
                if op == 'AveragePool':
                    attrs['count_include_pad'] = 0
        y = g.node(op, [x], **attrs)
    if rng.random() < 0.5:
        y, step = g.qdq(y, sx, zx)
    else:
        y, step = g.qdq(y, sx * float(rng.uniform(0.5, 2)), int(rng.integers(0, 256)))
    inputs = [('x', float_input(rng, shape, sx, zx))]
    return finish(g, y, inputs), inputs, scale_of(g, step)


def binary_case(rng):
    """QDQ around Add, Sub, Mul or Concat of two inputs quantised differently (the second per channel in some)."""
    g = Graph(rng, False)
    C = int(rng.integers(1, 30))
    shape = [int(rng.choice([1, 2])), C, int(rng.integers(1, 20)), int(rng.integers(1, 20))]
    sx, zx = float(rng.uniform(0.005, 0.05)), int(rng.integers(0, 256))
    s2, z2 = float(rng.uniform(0.005, 0.05)), int(rng.integers(0, 256))
    op = str(rng.choice(['Add', 'Sub', 'Mul', 'Concat']))
    shape2 = list(shape) if op == 'Concat' or rng.random() < 0.6 else [1, C, 1, 1]
    x, _ = g.qdq('x', sx, zx)
    x2, _ = g.qdq('x2', s2, z2)
    a, b = max(zx, 255 - zx) * sx, max(z2, 255 - z2) * s2
    if op == 'Concat':
        y, bound = g.node('Concat', [x, x2], axis=int(rng.integers(1, 4))), max(a, b)
    else:
        y, bound = g.node(op, [x, x2]), a * b if op == 'Mul' else a + b
    y, step = g.qdq(y, *range_q(-bound * float(rng.uniform(0.3, 1)), bound * float(rng.uniform(0.3, 1))))
    inputs = [('x', float_input(rng, shape, sx, zx)), ('x2', float_input(rng, shape2, s2, z2))]
    return finish(g, y, inputs), inputs, scale_of(g, step)


def glue_case(rng):
    """QDQ around an activation: the float glue between integer layers."""
    g = Graph(rng, False)
    shape = [int(rng.choice([1, 2])), int(rng.integers(1, 30)), int(rng.integers(1, 20)), int(rng.integers(1, 20))]
    sx, zx = float(rng.uniform(0.005, 0.05)), int(rng.integers(0, 256))
    x, _ = g.qdq('x', sx, zx)
    op = str(rng.choice(['HardSwish', 'HardSigmoid', 'Sigmoid', 'Tanh', 'LeakyRelu', 'Clip', 'Relu']))
    if op == 'Clip':
        y = g.node('Clip', [x, g.const('lo', np.float32(rng.uniform(-1, 0))), g.const('hi', np.float32(rng.uniform(0, 2)))])
    else:
        y = g.node(op, [x])
    a = max(zx, 255 - zx) * sx
    y, step = g.qdq(y, *range_q(-a * float(rng.uniform(0.3, 1)), a * float(rng.uniform(0.3, 1))))
    inputs = [('x', float_input(rng, shape, sx, zx))]
    return finish(g, y, inputs, opset=14), inputs, scale_of(g, step)


KINDS = ['conv', 'conv', 'depthwise', 'grouped', 'conv1d', 'matmul', 'conv_u8_weights', 'pool', 'binary', 'glue',
         'qlinearconv', 'qlinearmatmul', 'convinteger', 'matmulinteger']
ORT_TYPES = {np.dtype(np.float32): 'float32', np.dtype(np.uint8): 'uint8'}
RESULT_TYPES = {'float32': np.float32, 'uint8': np.uint8, 'int32': np.int32}


def make_case(rng, kind, args):
    if kind in ('qlinearconv', 'qlinearmatmul', 'convinteger', 'matmulinteger'):
        return qop_case(rng, kind, args.big)
    if kind == 'conv_u8_weights':
        return u8_weights_case(rng, args.big)
    if kind == 'pool':
        return pool_case(rng)
    if kind == 'binary':
        return binary_case(rng)
    if kind == 'glue':
        return glue_case(rng)
    return qdq_case(rng, kind, args.big, args.int8_activations)


def differs(got, want, step, limit):
    """Why got is not within `limit` output steps of want on every element, or None."""
    if got.shape != want.shape:
        return 'shape %s against %s' % (got.shape, want.shape)
    steps = np.abs(got - want) / step
    if steps.size and steps.max() > limit + 0.001:
        return '%d of %d elements more than %d step(s) apart (max %.1f)' % (
            int((steps > limit + 0.001).sum()), steps.size, limit, steps.max())
    return None


def saturating_weights(model):
    """Whether an int8 initializer of model lies beyond +-S8_MAX (onnxruntime on this host may saturate it)."""
    return S8_MAX < 128 and any(numpy_helper.to_array(t).dtype == np.int8 and np.abs(numpy_helper.to_array(t)).max(
        initial=0) > S8_MAX for t in model.graph.initializer)


def check_export(args, ort_run, modules, d, path, feeds, files, ref, step, limit, kind, i):
    """flowc build --emit onnx of the case, run in onnxruntime, against `ref` (flowc run of the original's
    output); 1 on failure. An export whose int8 weights onnxruntime may saturate here (the exporter writes u8
    weights with a zero point as int8 ones of the full range) is run by `flowc run` instead: the export then
    still has to compute what the original does."""
    exported, out = os.path.join(d, 'export.onnx'), os.path.join(d, 'export-ort')
    os.makedirs(out, exist_ok=True)
    r = subprocess.run([args.flowc, 'build', path, '--emit', 'onnx', '-o', exported], capture_output=True, text=True)
    if r.returncode:
        print('case %d (%s, seed %d): flowc --emit onnx failed: %s' % (i, kind, args.seed, r.stderr.strip()))
        return 1
    by_flowc = saturating_weights(onnx.load(exported))
    cmd = ([args.flowc, 'run', exported] + files + ['--output-dir', out] if by_flowc
           else ['node', ort_run, modules, exported, out] + feeds)
    runner = 'flowc run' if by_flowc else 'onnxruntime'
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        print('case %d (%s, seed %d): %s on the export failed: %s' % (i, kind, args.seed, runner, r.stderr.strip()))
        return 1
    if by_flowc:
        got = np.load(os.path.join(out, 'output_0.npy')).astype(np.float64)
    else:
        meta = json.load(open(os.path.join(out, 'meta.json')))[0]
        got = np.fromfile(os.path.join(out, '0.bin'), RESULT_TYPES[meta['type']]).reshape(meta['dims']).astype(np.float64)
    why = differs(got, ref, step, limit)
    if why:
        print('case %d (%s, seed %d): the export in %s differs from flowc run: %s' % (i, kind, args.seed, runner, why))
        return 1
    if by_flowc:
        print('case %d (%s, seed %d): the export holds int8 weights beyond +-%d, which onnxruntime may saturate on '
              'this CPU: run by flowc' % (i, kind, args.seed, S8_MAX))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    ap.add_argument('--flowc', required=True)
    ap.add_argument('--source-root', required=True, help='the checkout (bench/node_modules, tests/e2e/ort_run.js)')
    ap.add_argument('--work', required=True)
    ap.add_argument('--cases', type=int, default=40)
    ap.add_argument('--seed', type=int, default=14)
    ap.add_argument('--big', action='store_true', help='channels up to 130 and maps up to 60 wide (slower)')
    ap.add_argument('--int8-activations', action='store_true', help='half the activations i8 instead of u8')
    ap.add_argument('--cpus', help='comma-separated --cpu names (default: every variant this machine runs)')
    ap.add_argument('--export', action='store_true',
                    help='also write each model with flowc build --emit onnx and run the export in onnxruntime: '
                         'within 1 step of flowc run on the original (int32 results equal)')
    ap.add_argument('--kinds', help='comma-separated kinds to draw from (default: all of %s)' % ', '.join(sorted(set(KINDS))))
    args = ap.parse_args()
    kinds = args.kinds.split(',') if args.kinds else KINDS
    if not set(kinds) <= set(KINDS):
        ap.error('unknown kinds: %s' % ', '.join(sorted(set(kinds) - set(KINDS))))
    modules = os.path.abspath(os.path.join(args.source_root, 'bench', 'node_modules'))
    if not os.path.isdir(os.path.join(modules, 'onnxruntime-node')):
        print('skipped: no onnxruntime-node in %s (tools/setup.sh test installs it)' % modules)
        return 77
    ort_run = os.path.join(args.source_root, 'tests', 'e2e', 'ort_run.js')
    cpus = args.cpus.split(',') if args.cpus else host_cpus()
    rng = np.random.default_rng(args.seed)
    os.makedirs(args.work, exist_ok=True)
    failures = 0
    for i in range(args.cases):
        kind = str(rng.choice(kinds))
        model, inputs, step = make_case(rng, kind, args)
        threads = 1 + i % 2
        d = os.path.join(args.work, 'case%d' % i)
        os.makedirs(os.path.join(d, 'ort'), exist_ok=True)
        path = os.path.join(d, 'model.onnx')
        onnx.save(model, path)
        feeds, files = [], []
        for name, a in inputs:
            a.tofile(os.path.join(d, name + '.bin'))
            np.save(os.path.join(d, name + '.npy'), a)
            feeds.append('%s=%s:%s:%s' % (name, os.path.join(d, name + '.bin'), ORT_TYPES[a.dtype], ','.join(map(str, a.shape))))
            files.append(os.path.join(d, name + '.npy'))
        r = subprocess.run(['node', ort_run, modules, path, os.path.join(d, 'ort')] + feeds, capture_output=True, text=True)
        if r.returncode:
            print('case %d (%s, seed %d): onnxruntime failed: %s' % (i, kind, args.seed, r.stderr.strip()))
            failures += 1
            continue
        meta = json.load(open(os.path.join(d, 'ort', 'meta.json')))[0]
        want = np.fromfile(os.path.join(d, 'ort', '0.bin'), RESULT_TYPES[meta['type']])
        want = want.reshape(meta['dims']).astype(np.float64)
        limit = 0 if meta['type'] == 'int32' else 1
        worst, ref = [], None
        for cpu in cpus:
            out = os.path.join(d, 'flowc-' + cpu)
            r = subprocess.run([args.flowc, 'run', path] + files + ['--cpu', cpu, '--threads', str(threads),
                                                                   '--output-dir', out], capture_output=True, text=True)
            if r.returncode:
                print('case %d (%s, seed %d) --cpu %s: flowc failed (%d): %s' % (i, kind, args.seed, cpu, r.returncode,
                                                                               r.stderr.strip()))
                failures += 1
                continue
            got = np.load(os.path.join(out, 'output_0.npy')).astype(np.float64)
            if ref is None:
                ref = got
            why = differs(got, want, step, limit)
            if why:
                print('case %d (%s, seed %d) --cpu %s: against onnxruntime, %s' % (i, kind, args.seed, cpu, why))
                failures += 1
            elif got.size:
                worst.append('%s %.0f' % (cpu, (np.abs(got - want) / step).max()))
        if args.export and ref is not None:  # (a failed flowc run is counted above)
            failures += check_export(args, ort_run, modules, d, path, feeds, files, ref, step, limit, kind, i)
        print('case %d: %s %s -> %s, %d thread(s); steps: %s' % (i, kind, [list(a.shape) for _, a in inputs],
                                                               list(want.shape), threads, ', '.join(worst)), flush=True)
    print('%d cases on %s: %d failures' % (args.cases, ', '.join(cpus), failures))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
