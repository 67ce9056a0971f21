# --precision on the SIMT host backend: GPU matmuls and convs (codegen/gpu_gemm_mma.c: tensor-core mma on
# inputs rounded to the precision, f32 accumulation) against the CPU kernels, on random normal data at
# awkward sizes (partial 64 x 64 tiles, K not a multiple of 16, batch broadcasting, groups, strides, bias and
# a fused ReLU). Two checks per output element, with S = sum_k |a_k||b_k| (the same product on |inputs|):
#   1. against the CPU (f32 inputs): |simt - cpu| <= (2u + u^2 + 4 K 2^-24) S, u the precision's unit
#      roundoff (fp16 and tf32 2^-11, bf16 2^-8, fp32 0): each input rounds with relative error <= u, so a
#      product moves by <= (2u + u^2)|a||b|; both sides' f32 sums of K terms add <= 2 K 2^-24 S each;
#   2. against float64 products of the inputs rounded as the precision says (f16: to nearest even; bf16: to
#      nearest even; tf32: to nearest, ties away, as cvt.rna.tf32.f32): |simt - ref| <= 2 K 2^-24 S, which
#      only f32 summation may explain, so rounding to the wrong precision (or not at all) fails it.
# A line per case and precision: 'ok' or 'FAIL', and the worst error as a fraction of each bound.
# usage: precision_vs_cpu.py FLOWC WORKDIR
import os, subprocess, sys, numpy as np, onnx, torch
from onnx import helper, TensorProto, numpy_helper
F = sys.argv[1]; D = sys.argv[2]
rng = np.random.default_rng(3)
U = {'fp32': 0.0, 'tf32': 2.0 ** -11, 'fp16': 2.0 ** -11, 'bf16': 2.0 ** -8}

def round_to(x, p):
    x = np.asarray(x, np.float32)
    if p == 'fp16': return x.astype(np.float16).astype(np.float64)
    bits = x.view(np.uint32).astype(np.uint64)
    if p == 'bf16': bits = ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) << 16
    elif p == 'tf32': bits = (bits + 0x1000) & 0xffffe000
    else: return x.astype(np.float64)
    return (bits & 0xffffffff).astype(np.uint32).view(np.float32).astype(np.float64)

def run(model, feeds, device, prec=None):
    out = os.path.join(D, 'out')
    subprocess.run(['rm', '-rf', out])
    args = [F, 'run', model, '--device', device, '--output-dir', out, '--quiet']
    if prec: args += ['--precision', prec]
    for n, v in feeds.items():
        p = os.path.join(D, n + '.npy'); np.save(p, v); args += ['--input', n + '=' + p]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode: return None, r.stderr.strip()
    return np.load(os.path.join(out, 'output_0.npy')).astype(np.float64), ''

def case(name, node, x_shape, w, bias, ref_fn, K, relu=False):
    inits = [numpy_helper.from_array(w, 'w')] + ([numpy_helper.from_array(bias, 'b')] if bias is not None else [])
    nodes = [node] + ([helper.make_node('Relu', ['t'], ['y'])] if relu else [])
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info('x', TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]); m.ir_version = 8
    path = os.path.join(D, name + '.onnx'); onnx.save(m, path)
    x = rng.standard_normal(x_shape).astype(np.float32)
    cpu, e = run(path, {'x': x}, 'cpu')
    if cpu is None: print('FAIL', name, 'cpu', e); return
    b64 = None if bias is None else bias.astype(np.float64)
    S = ref_fn(np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64)), None if b64 is None else np.abs(b64))
    for p in ['fp32', 'tf32', 'fp16', 'bf16']:
        got, e = run(path, {'x': x}, 'simt', p)
        if got is None: print('FAIL', name, p, e); continue
        ref = ref_fn(round_to(x, p), round_to(w, p), b64)
        if relu: ref = np.maximum(ref, 0)
        u = U[p]; acc = 2 * K * 2.0 ** -24
        r1 = np.max(np.abs(got - cpu) / ((2 * u + u * u + 2 * acc) * S + 1e-30))
        r2 = np.max(np.abs(got - ref) / (acc * S + 1e-30))
        print('ok  ' if r1 <= 1 and r2 <= 1 else 'FAIL', name, p, 'cpu %.3f ref %.3f' % (r1, r2))

def mm(name, x_shape, w_shape, bias=False, relu=False):
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[-1]).astype(np.float32) if bias else None
    node = (helper.make_node('Gemm', ['x', 'w', 'b'], ['t' if relu else 'y']) if bias
            else helper.make_node('MatMul', ['x', 'w'], ['t' if relu else 'y']))
    case(name, node, x_shape, w, b, lambda x, w, b: x @ w + (0 if b is None else b), w_shape[-2], relu)

def conv(name, x_shape, w_shape, relu=False, **attrs):
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    n = len(x_shape) - 2
    f = torch.nn.functional.conv1d if n == 1 else torch.nn.functional.conv2d
    pads = attrs.get('pads', [0] * 2 * n)
    assert pads[:n] == pads[n:]
    def ref(x, w, b):
        t = torch.from_numpy
        return f(t(x), t(w), None if b is None else t(b), stride=attrs.get('strides', 1), padding=tuple(pads[:n]),
                 dilation=attrs.get('dilations', 1), groups=attrs.get('group', 1)).numpy()
    node = helper.make_node('Conv', ['x', 'w', 'b'], ['t' if relu else 'y'], **attrs)
    case(name, node, x_shape, w, b, ref, int(np.prod(w_shape[1:])), relu)

mm('mm_1_1_1', [1, 1], [1, 1])
mm('mm_31_33_65', [31, 33], [33, 65])
mm('mm_65_17_63', [65, 17], [17, 63])
mm('mm_2_1000_129', [2, 1000], [1000, 129])
mm('mm_batch_tall', [3, 7, 40], [40, 70])
mm('gemm_bias_relu', [37, 50], [50, 70], bias=True, relu=True)
conv('conv3x3_p1', [2, 3, 9, 11], [8, 3, 3, 3], pads=[1, 1, 1, 1])
conv('conv7x7_s2_relu', [1, 3, 33, 31], [16, 3, 7, 7], relu=True, strides=[2, 2], pads=[3, 3, 3, 3])
conv('conv_group2_dil', [1, 8, 12, 13], [6, 4, 3, 3], group=2, dilations=[2, 2], pads=[2, 2, 2, 2])
conv('conv1x1', [2, 70, 5, 7], [65, 70, 1, 1])
conv('conv1d_s3', [2, 5, 31], [7, 5, 4], strides=[3], dilations=[2], pads=[1, 1])
