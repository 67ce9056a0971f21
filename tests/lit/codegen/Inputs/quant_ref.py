"""The int8 kernel tests' shared part (quant_kernels.test, quant_conv_few_pixels.test): a NumPy reference of
qspec §2 (exact i32 accumulation, the f32 multiplier f32(f32(sx*sw) / sy) of ir/types.c, the product in f32,
round half to even, clamp to the result type's [qmin, qmax]), one-op IR text models, and `run`, which
compares flowc's evaluator and `flowc run` on every CPU in CPUS (1 and 2 threads) with it bit for bit, and
only compiles (`--emit obj`) for the CPUs this machine cannot run. Call init(flowc, out_dir) first."""
import json
import os
import subprocess

import numpy as np

FLOWC = OUT = rng = None


def init(flowc, out, seed=2026):
    global FLOWC, OUT, rng
    FLOWC, OUT, rng = flowc, out, np.random.default_rng(seed)


CPUS = ['x86-64-v3', 'alderlake', 'x86-64-v4', 'icelake-server', 'sapphirerapids', 'znver4', 'x86-64']
FLAGS = {l.split(':')[0].strip(): l.split(':')[1].split() for l in open('/proc/cpuinfo') if l.startswith('flags')}
HOST = set(FLAGS.get('flags', []))
NEEDS = {'x86-64-v3': {'avx2'}, 'alderlake': {'avx2', 'avx_vnni'}, 'x86-64-v4': {'avx512bw', 'avx512vl'},
         'icelake-server': {'avx512bw', 'avx512vl', 'avx512_vnni'},
         'sapphirerapids': {'avx512bw', 'avx512vl', 'avx512_vnni', 'avx512_bf16', 'avx512_fp16', 'amx_tile', 'amx_int8'},
         'znver4': {'avx512bw', 'avx512vl', 'avx512_vnni', 'avx512_bf16', 'avx512vbmi', 'gfni', 'vaes', 'sse4a', 'clzero'},
         'x86-64': set()}
RANGE = {'u8': (0, 255), 'i8': (-128, 127)}
NP = {'u8': np.uint8, 'i8': np.int8}


class Q:
    """A quantised element type: storage u8/i8, scales/zero points (one: per tensor), axis, narrowed range."""

    def __init__(self, st, scales, zps, axis=-1, rng_=None):
        self.st, self.scales, self.zps, self.axis = st, list(scales), list(zps), axis
        self.qmin, self.qmax = rng_ if rng_ else RANGE[st]

    def text(self):
        st = self.st if (self.qmin, self.qmax) == RANGE[self.st] else '%s<%d:%d>' % (self.st, self.qmin, self.qmax)
        if self.axis < 0:
            return '!quant.uniform<%s:f32, %r:%d>' % (st, self.scales[0], self.zps[0])
        pairs = ','.join('%r:%d' % (s, z) for s, z in zip(self.scales, self.zps))
        return '!quant.uniform<%s:f32:%d, {%s}>' % (st, self.axis, pairs)


def ttype(shape, el):
    return 'tensor<%s%s>' % (''.join('%dx' % d for d in shape), el)


def storage_name(st):
    return {'u8': 'ui8', 'i8': 'i8'}[st]


def requant(acc, xq, wq, yq, chan):
    """qspec §2 on int64 accumulators; chan: the channel index of every element (broadcastable)."""
    acc = acc.astype(np.int64)
    acc = ((acc + 2**31) % 2**32 - 2**31).astype(np.int32)
    sw = np.array(wq.scales, dtype=np.float64)[chan if wq.axis >= 0 else 0]
    s = xq.scales[0] * sw
    if yq is None:
        return acc.astype(np.float32) * s.astype(np.float32)
    m = s.astype(np.float32) / np.float32(yq.scales[0])  # fc_quant_multiplier: two f32 roundings
    r = np.rint(acc.astype(np.float32) * m).astype(np.float64) + yq.zps[0]
    return np.clip(r, yq.qmin, yq.qmax).astype(NP[yq.st])


def conv_acc(x, w, b, xq, wq, G, s, d, pads):
    """sum over taps of (x - zx)(w - zw[m]) + b[m] in int64, N-D, padding reads zx (a shifted 0)."""
    n = x.ndim - 2
    xs = x.astype(np.int64) - xq.zps[0]
    zw = np.array(wq.zps, dtype=np.int64).reshape((-1,) + (1,) * (w.ndim - 1)) if wq.axis >= 0 else wq.zps[0]
    ws = w.astype(np.int64) - zw
    xs = np.pad(xs, [(0, 0), (0, 0)] + [(pads[i], pads[n + i]) for i in range(n)])
    N, C = x.shape[:2]
    M, Cg = w.shape[:2]
    Ks = w.shape[2:]
    O = [(xs.shape[2 + i] - d[i] * (Ks[i] - 1) - 1) // s[i] + 1 for i in range(n)]
    y = np.zeros((N, M) + tuple(O), dtype=np.int64)
    Mg = M // G
    for kk in np.ndindex(*Ks):
        sl = tuple(slice(kk[i] * d[i], kk[i] * d[i] + s[i] * (O[i] - 1) + 1, s[i]) for i in range(n))
        for g in range(G):
            xg = xs[(slice(None), slice(g * Cg, (g + 1) * Cg)) + sl]  # N, Cg, O...
            wg = ws[(slice(g * Mg, (g + 1) * Mg), slice(None)) + kk]  # Mg, Cg
            y[:, g * Mg:(g + 1) * Mg] += np.einsum('nc...,mc->nm...', xg, wg)
    if b is not None:
        y += b.reshape((1, -1) + (1,) * n)
    return y


def head(xshape, xq, yshape, yel):
    """The function header: x comes in as its storage integers (.npy files hold those) and is cast to its
    quantised type by flow.scast."""
    return ('module {\n  func.func @main(%%arg0: %s {flow.name = "x"}) -> (%s {flow.name = "y"}) {\n'
            '    %%x = "flow.scast"(%%arg0) {qtype = %s} : (%s) -> %s\n') % (
        ttype(xshape, storage_name(xq.st)), ttype(yshape, yel), xq.text(), ttype(xshape, storage_name(xq.st)),
        ttype(xshape, xq.text()))


def run(label, text, x, want, xname='x', tol=0):
    """tol: the largest |difference| from `want` allowed (0: bit for bit)."""
    path = os.path.join(OUT, label + '.mlir')
    with open(path, 'w') as f:
        f.write(text)
    xin = os.path.join(OUT, label + '.x.npy')
    np.save(xin, x)
    # the evaluator: x bound as a constant, the fold pass computes the op
    d = os.path.join(OUT, label + '.eval')
    r = subprocess.run([FLOWC, 'run', path, '--bind', '%s=%s' % (xname, xin), '--output-dir', d],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print('%s FAIL: flowc run --bind: %s' % (label, r.stderr.strip()))
        return
    ev = np.load(os.path.join(d, 'output_0.npy'))
    if ev.dtype != want.dtype or ev.shape != want.shape or differ(ev, want, tol):
        print('%s FAIL: the evaluator differs from the NumPy reference (%s %s)' % (label, ev.dtype, ev.shape))
        return
    for cpu in CPUS:
        if not NEEDS[cpu] <= HOST:
            r = subprocess.run([FLOWC, 'build', path, '--cpu', cpu, '--emit', 'obj', '-o', path + cpu + '.o'],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print('%s FAIL: build --cpu %s: %s' % (label, cpu, r.stderr.strip()))
                return
            continue
        for threads in ('1', '2'):
            d = os.path.join(OUT, '%s.%s.%s' % (label, cpu, threads))
            r = subprocess.run([FLOWC, 'run', path, xin, '--cpu', cpu, '--threads', threads, '--output-dir', d],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print('%s FAIL: flowc run --cpu %s: %s' % (label, cpu, r.stderr.strip()))
                return
            got = np.load(os.path.join(d, 'output_0.npy'))
            if got.shape != want.shape or got.dtype != want.dtype:
                print('%s FAIL: %s %s, expected %s %s' % (label, got.shape, got.dtype, want.shape, want.dtype))
                return
            if differ(got, want, tol):
                bad = np.argwhere(got != want)
                print('%s FAIL (--cpu %s --threads %s): %d wrong, first at %s: got %s expected %s' % (
                    label, cpu, threads, len(bad), bad[0], got[tuple(bad[0])], want[tuple(bad[0])]))
                return
    print('%s ok' % label)


def differ(got, want, tol):
    if tol == 0:
        return not np.array_equal(got, want)
    return np.abs(got.astype(np.float64) - want.astype(np.float64)).max() > tol


class Epilogue:
    """A quantised conv's epilogue (ops.def): `program` over the f32 product x and one-element f32 constants
    `consts` (operands 3..), the result converted to `to` ('u8', 'i8' or None: f32); ref(y) computes it in
    NumPy from the f32 product; tol as run's."""

    def __init__(self, program, consts, to, ref, tol=0):
        self.program, self.consts, self.to, self.ref, self.tol = program, consts, to, ref, tol


def rand(st, shape, lo=None, hi=None):
    a, b = RANGE[st]
    return rng.integers(a if lo is None else lo, (b if hi is None else hi) + 1, size=shape).astype(NP[st])


def conv_case(label, xshape, xq, wshape, wq, yq, group=1, strides=None, dil=None, pads=None, bias=False,
              wlo=None, whi=None, xhi=None, xfn=None, wfn=None, bfn=None, ep=None):
    """xhi: x drawn up to it (the type keeps its full range); xfn, wfn, bfn: x = xfn(x), w = wfn(w),
    b = bfn(b) after the draw, to place particular values; ep: an Epilogue (yq None: qtype f32; the bias is
    always an operand then, zeros without `bias`)."""
    n = len(xshape) - 2
    strides, dil, pads = strides or [1] * n, dil or [1] * n, pads or [0] * (2 * n)
    x = rand(xq.st, xshape, xq.qmin, xq.qmax if xhi is None else xhi)
    w = rand(wq.st, wshape, wlo, whi)
    if xfn:
        x = xfn(x)
    if wfn:
        w = wfn(w)
    M = wshape[0]
    b = rng.integers(-3000, 3000, size=M).astype(np.int32) if bias else None
    if bfn:
        b = bfn(b)
    acc = conv_acc(x, w, b, xq, wq, group, strides, dil, pads)
    want = requant(acc, xq, wq, yq, np.arange(M).reshape((1, -1) + (1,) * n))
    yel = yq.text() if yq else 'f32'
    if ep:
        if b is None:
            b, bias = np.zeros(M, dtype=np.int32), True
        want = ep.ref(want)
        yel = {'u8': 'ui8', 'i8': 'i8', None: 'f32'}[ep.to]
    operands = '%x, %w' + (', %b' if bias else '') + ''.join(', %%e%d' % i for i in range(len(ep.consts) if ep else 0))
    otypes = [ttype(xshape, xq.text()), ttype(wshape, wq.text())] + ([ttype([M], 'i32')] if bias else [])
    otypes += ['tensor<f32>'] * (len(ep.consts) if ep else 0)
    text = head(xshape, xq, want.shape, yel)
    for i, c in enumerate(ep.consts if ep else []):
        text += '    %%e%d = "flow.constant"() {value = dense<%s> : tensor<f32>} : () -> tensor<f32>\n' % (
            i, np.format_float_scientific(np.float32(c), unique=True))
    text += '    %%w = "flow.constant"() {value = dense<%s> : %s} : () -> %s\n' % (
        json.dumps(w.tolist()), ttype(wshape, storage_name(wq.st)), otypes[1])
    if bias:
        text += '    %%b = "flow.constant"() {value = dense<%s> : %s} : () -> %s\n' % (
            json.dumps(b.tolist()), ttype([M], 'i32'), otypes[2])
    arr = lambda v: 'array<i64: %s>' % ', '.join(str(i) for i in v)
    attrs = 'dilations = %s, ' % arr(dil)
    if ep:
        attrs += 'epilogue = "%s", ' % ep.program
    attrs += 'group = %d : i64, pads = %s, qtype = %s, strides = %s' % (group, arr(pads), yq.text() if yq else 'f32',
                                                                       arr(strides))
    if ep and ep.to:
        attrs += ', to = %s' % storage_name(ep.to)
    text += '    %%y = "flow.conv"(%s) {%s} : (%s) -> %s\n' % (operands, attrs, ', '.join(otypes),
                                                                ttype(want.shape, yel))
    text += '    "func.return"(%%y) : (%s) -> ()\n  }\n}\n' % ttype(want.shape, yel)
    run(label, text, x, want, tol=ep.tol if ep else 0)


def matmul_case(label, ashape, aq, bshape, bq, yq, bias=False, blo=None, bhi=None, ahi=None, afn=None, bfn=None):
    """ahi, afn, bfn: as conv_case's xhi, xfn, wfn."""
    a = rand(aq.st, ashape, aq.qmin, aq.qmax if ahi is None else ahi)
    bw = rand(bq.st, bshape, blo, bhi)
    if afn:
        a = afn(a)
    if bfn:
        bw = bfn(bw)
    K, N = bshape
    bb = rng.integers(-3000, 3000, size=N).astype(np.int32) if bias else None
    zb = np.array(bq.zps, dtype=np.int64).reshape(1, -1) if bq.axis >= 0 else bq.zps[0]
    acc = np.matmul(a.astype(np.int64) - aq.zps[0], bw.astype(np.int64) - zb)
    if bias:
        acc = acc + bb
    want = requant(acc, aq, bq, yq, np.arange(N))
    yel = yq.text() if yq else 'f32'
    operands = '%x, %w' + (', %b' if bias else '')
    otypes = [ttype(ashape, aq.text()), ttype(bshape, bq.text())] + ([ttype([N], 'i32')] if bias else [])
    text = head(ashape, aq, want.shape, yel)
    text += '    %%w = "flow.constant"() {value = dense<%s> : %s} : () -> %s\n' % (
        json.dumps(bw.tolist()), ttype(bshape, storage_name(bq.st)), otypes[1])
    if bias:
        text += '    %%b = "flow.constant"() {value = dense<%s> : %s} : () -> %s\n' % (
            json.dumps(bb.tolist()), ttype([N], 'i32'), otypes[2])
    text += '    %%y = "flow.matmul"(%s) {qtype = %s} : (%s) -> %s\n' % (operands, yel, ', '.join(otypes),
                                                                         ttype(want.shape, yel))
    text += '    "func.return"(%%y) : (%s) -> ()\n  }\n}\n' % ttype(want.shape, yel)
    run(label, text, a, want)


def axis(st, n, ax, zlo=0, zhi=0):
    return Q(st, [float(v) for v in np.round(rng.uniform(0.002, 0.02, n), 5)],
             [int(z) for z in rng.integers(zlo, zhi + 1, n)], axis=ax)
