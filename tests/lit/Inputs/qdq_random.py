"""What the random QDQ differential tests share (tests/lit/codegen/quant_conv_random.test,
quant_matmul_random.test, tests/lit/passes/layout_i8_random.test, layout_i8_one_copy.test): an ONNX graph
under construction with its constants and QuantizeLinear/DequantizeLinear pairs, the weight kinds that decide
which k quads vpmaddubsw may pair, `flowc run` into a folder, and the CPUs this machine runs."""
import os
import subprocess

import numpy as np
from onnx import numpy_helper, helper

with open('/proc/cpuinfo') as _f:
    HOST = set(next(l.split(':')[1].split() for l in _f if l.startswith('flags')))


class Graph:
    """Initializers and nodes of an ONNX graph being written."""

    def __init__(self):
        self.inits, self.nodes = [], []

    def const(self, name, a, dt=np.float32):
        self.inits.append(numpy_helper.from_array(np.asarray(a, dt), name))
        return name

    def qdq(self, x, name, scale, zp, dt=np.uint8):
        s, z = self.const(name + '_s', scale), self.const(name + '_z', zp, dt)
        self.nodes.append(helper.make_node('QuantizeLinear', [x, s, z], [name + '_q']))
        self.nodes.append(helper.make_node('DequantizeLinear', [name + '_q', s, z], [name]))
        return name


def weights(rng, m, k, kind):
    """[m, k] integer weights (m output channels): 'full' s8 range (no k quads pair), 'small' (all pair),
    'units' (every other unit of 16 channels full range) or 'heavy' (small, with large positive weights on a few
    quads of each chunk of 64 k, so that only some pair patterns hold)."""
    if kind == 'full':
        return rng.integers(-127, 128, size=[m, k])
    w = rng.integers(-12, 13, size=[m, k])
    if kind == 'units':
        for u in range(0, m, 32):
            w[u:u + 16] = rng.integers(-127, 128, size=w[u:u + 16].shape)
    elif kind == 'heavy':
        for c in range(0, k, 64):
            for q in rng.choice(16, size=rng.integers(1, 5), replace=False):
                k0 = c + 4 * q
                if k0 < k:
                    w[:, k0:k0 + 4] = rng.integers(90, 111, size=w[:, k0:k0 + 4].shape)
    return w


def run(flowc, out, model, tag, *flags):
    """`flowc run` of model into out/tag: its first output, or None after printing a FAIL line."""
    d = os.path.join(out, tag)
    r = subprocess.run([flowc, 'run', model, *flags, '--output-dir', d], capture_output=True, text=True)
    if r.returncode != 0:
        print('FAIL %s: %s' % (tag, r.stderr.strip()))
        return None
    return np.load(os.path.join(d, 'output_0.npy'))


def cpu_targets():
    """(tag, flags) of the host's CPU, x86-64-v3 on 1 and 2 threads and x86-64-v4, those this machine runs."""
    targets = [('host', [])]
    if 'avx2' in HOST:
        targets += [('x86-64-v3 1 thread', ['--cpu', 'x86-64-v3', '--threads', '1']),
                    ('x86-64-v3 2 threads', ['--cpu', 'x86-64-v3', '--threads', '2'])]
    if 'avx512bw' in HOST:
        targets += [('x86-64-v4', ['--cpu', 'x86-64-v4', '--threads', '1'])]
    return targets


def differ(got, want):
    """'' where got equals want bit for bit, else what differs."""
    if np.array_equal(got, want):
        return ''
    return '%d bytes differ, max |d| %g' % (np.sum(got != want), np.abs(got - want).max())
