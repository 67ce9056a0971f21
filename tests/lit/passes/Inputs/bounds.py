# Edge values for the epilogue's max/min against a constant bound (cg_epilogue.c, bound_op).
#   bounds.py model OUT.mlir   a graph of matmuls by [[1]] (exact: x * 1 keeps -0 and NaN), one per input
#                              (so CSE keeps them apart), each followed by max/min with a bound 0, -0, 6,
#                              -inf or NaN, which -O2 fuses
#   bounds.py input OUT.npy    x: NaN, infinities, both zeros, values around the bounds
#   bounds.py same A.npy B.npy prints "same" when the outputs agree bit for bit (any NaN equals any NaN)
import sys

import numpy as np

BOUNDS = [('max', '0.0'), ('max', '-0.0'), ('min', '0.0'), ('min', '-0.0'), ('max', '6.0'), ('min', '6.0'),
          ('max', '0xFF800000'), ('min', '0x7FC00000')]
N = 16


def model(path):
    t = 'tensor<%dx1xf32>' % N
    args = ', '.join('%%arg%d: %s' % (i, t) for i in range(len(BOUNDS)))
    lines = ['func.func @f(%s) -> (%s) {' % (args, ', '.join([t] * len(BOUNDS))),
             '  %one = "flow.constant"() {value = dense<1.0> : tensor<1x1xf32>} : () -> tensor<1x1xf32>']
    outs = []
    for i, (op, c) in enumerate(BOUNDS):
        lines.append('  %%c%d = "flow.constant"() {value = dense<%s> : tensor<f32>} : () -> tensor<f32>' % (i, c))
        lines.append('  %%m%d = "flow.matmul"(%%arg%d, %%one) : (%s, tensor<1x1xf32>) -> %s' % (i, i, t, t))
        # the bound first for odd i: both operand orders take the same path
        a, b = ('%%c%d' % i, '%%m%d' % i) if i % 2 else ('%%m%d' % i, '%%c%d' % i)
        at, bt = ('tensor<f32>', t) if i % 2 else (t, 'tensor<f32>')
        lines.append('  %%y%d = "flow.%s"(%s, %s) : (%s, %s) -> %s' % (i, op, a, b, at, bt, t))
        outs.append('%%y%d' % i)
    lines.append('  "func.return"(%s) : (%s) -> ()' % (', '.join(outs), ', '.join([t] * len(BOUNDS))))
    lines.append('}')
    open(path, 'w').write('\n'.join(lines) + '\n')


def inputs(path):
    x = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 6.0, -6.0, 5.5, 6.5, 1e-30, -1e-30,
                  3.0, -3.0, 7.0, 1e30], dtype=np.float32).reshape(N, 1)
    np.save(path, x)


def same(a, b):
    for i in range(len(BOUNDS)):
        x = np.load('%s/output_%d.npy' % (a, i))
        y = np.load('%s/output_%d.npy' % (b, i))
        both_nan = np.isnan(x) & np.isnan(y)
        bits = x.view(np.uint32) == y.view(np.uint32)
        if not np.all(both_nan | bits):
            print('output %d differs: %s vs %s' % (i, x.ravel(), y.ravel()))
            return
    print('same')


{'model': lambda: model(sys.argv[2]), 'input': lambda: inputs(sys.argv[2]),
 'same': lambda: same(sys.argv[2], sys.argv[3])}[sys.argv[1]]()
