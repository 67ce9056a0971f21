# The GPU matmul, conv, pool and data-movement kernels (codegen/gpu_kernel_{matmul,conv,pool,data}.c) on the
# SIMT host backend against the CPU kernels: small ONNX models with awkward sizes (rows of 1, 31, 33, 65,
# 1000, 1025; partial GEMM tiles; batch broadcasting; groups, dilations, strides, asymmetric pads; ceil
# mode; every pad mode; negative gather indices). Inputs and weights are small integers, so every sum is
# exact in f32 whatever the order of accumulation: results must match exactly ('rel 0').
# usage: simt_vs_cpu.py FLOWC WORKDIR [NAME-FILTER ...]
import os, subprocess, sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
F = sys.argv[1]; D = sys.argv[2]; only = sys.argv[3:] 
rng = np.random.default_rng(1)
def run(model, feeds, device):
    out = os.path.join(D, 'out_' + device)
    subprocess.run(['rm', '-rf', out])
    args = [F, 'run', model, '--device', device, '--output-dir', out, '--quiet']
    for n, v in feeds.items():
        p = os.path.join(D, n + '.npy'); np.save(p, v); args += ['--input', n + '=' + p]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode: return None, r.stderr.strip()
    res = []; i = 0
    while os.path.exists(os.path.join(out, 'output_%d.npy' % i)):
        res.append(np.load(os.path.join(out, 'output_%d.npy' % i))); i += 1
    return res, r.stderr.strip()
def case(name, nodes, inputs, outputs, inits=()):
    if only and not any(o in name for o in only): return
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
                          [numpy_helper.from_array(v, n) for n, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]); m.ir_version = 8
    p = os.path.join(D, name + '.onnx'); onnx.save(m, p)
    feeds = {n: rng.integers(-3, 4, s).astype(np.float32) for n, s in inputs}
    a, ea = run(p, feeds, 'cpu'); b, eb = run(p, feeds, 'simt')
    if a is None or b is None: print('FAIL', name, ea, eb); return
    worst = 0.0
    for x, y in zip(a, b):
        if x.shape != y.shape: print('FAIL', name, 'shape', x.shape, y.shape); return
        err = np.abs(x - y) / (1e-4 + np.abs(x)); worst = max(worst, float(err.max()) if err.size else 0.0)
    print(('ok  ' if worst == 0 and len(a) == len(b) else 'FAIL'), name, 'rel %.2g' % worst, eb[:200])
W = lambda *s: rng.integers(-3, 4, s).astype(np.float32)
# matmul
for (m, k, n) in [(1, 1, 1), (31, 33, 65), (64, 16, 64), (65, 17, 63), (1, 1000, 1025), (100, 3, 5), (2, 0, 3)] :
    if k == 0: continue
    case('mm_%d_%d_%d' % (m, k, n), [helper.make_node('MatMul', ['a', 'b'], ['y'])], [('a', [m, k]), ('b', [k, n])], ['y'])
case('mm_batch_bcast', [helper.make_node('MatMul', ['a', 'b'], ['y'])], [('a', [2, 1, 31, 5]), ('b', [3, 5, 7])], ['y'])
case('mm_batch_tall', [helper.make_node('MatMul', ['a', 'b'], ['y'])], [('a', [3, 7, 33])], ['y'], [('b', W(33, 70))])
case('gemm_bias_relu', [helper.make_node('Gemm', ['a', 'b', 'c'], ['t'], transB=1), helper.make_node('Relu', ['t'], ['y'])],
     [('a', [37, 50])], ['y'], [('b', W(70, 50)), ('c', W(70))])
case('mm_residual', [helper.make_node('MatMul', ['a', 'b'], ['t']), helper.make_node('Add', ['t', 'r'], ['y'])],
     [('a', [5, 40, 24]), ('r', [5, 40, 33])], ['y'], [('b', W(24, 33))])
# conv
def conv(name, x, w, bias=True, relu=False, **attrs):
    nodes = [helper.make_node('Conv', ['x', 'w', 'b'] if bias else ['x', 'w'], ['t' if relu else 'y'], **attrs)]
    if relu: nodes.append(helper.make_node('Relu', ['t'], ['y']))
    inits = [('w', W(*w))] + ([('b', W(w[0]))] if bias else [])
    case(name, nodes, [('x', x)], ['y'], inits)
conv('conv3x3_p1', [2, 3, 9, 11], [8, 3, 3, 3], pads=[1, 1, 1, 1])
conv('conv7x7_s2_p3_relu', [1, 3, 33, 31], [16, 3, 7, 7], relu=True, strides=[2, 2], pads=[3, 3, 3, 3])
conv('conv1x1', [2, 70, 5, 7], [65, 70, 1, 1], bias=False)
conv('conv_group2_dil', [1, 8, 12, 13], [6, 4, 3, 3], group=2, dilations=[2, 2], pads=[2, 1, 0, 2])
conv('conv_dw', [2, 16, 10, 9], [16, 1, 3, 3], group=16, pads=[1, 1, 1, 1], relu=True)
conv('conv_dw_mult2_s2', [1, 4, 11, 10], [8, 1, 3, 3], group=4, strides=[2, 2], pads=[1, 0, 1, 0])
conv('conv1d', [2, 5, 31], [7, 5, 4], strides=[3], dilations=[2], pads=[1, 2])
conv('conv3d', [1, 2, 5, 6, 7], [3, 2, 2, 3, 2], pads=[0, 1, 1, 1, 0, 0])
conv('conv_big_k', [1, 64, 8, 8], [33, 64, 3, 3], pads=[1, 1, 1, 1])
# pools
def pool(name, op, x, outs=('y',), **attrs):
    case(name, [helper.make_node(op, ['x'], list(outs), **attrs)], [('x', x)], list(outs))
pool('maxpool_3s2p1', 'MaxPool', [2, 3, 11, 12], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
pool('maxpool_ceil_dil', 'MaxPool', [1, 2, 10, 9], kernel_shape=[3, 2], strides=[2, 3], dilations=[2, 1], ceil_mode=1)
pool('avgpool_pad', 'AveragePool', [2, 3, 9, 8], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
pool('avgpool_pad_incl_ceil', 'AveragePool', [1, 2, 10, 7], kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 0, 1], count_include_pad=1, ceil_mode=1)
pool('avgpool1d', 'AveragePool', [2, 3, 33], kernel_shape=[4], strides=[3])
pool('maxpool_idx', 'MaxPool', [2, 3, 9, 10], outs=('y', 'i'), kernel_shape=[2, 3], strides=[2, 2], pads=[0, 1, 1, 0])
pool('maxpool_idx_colmajor', 'MaxPool', [1, 2, 7, 6], outs=('y', 'i'), kernel_shape=[2, 2], storage_order=1)
# data movement
def one(name, nodes, inputs, inits=()):
    case(name, nodes, inputs, ['y'], inits)
one('transpose_2d', [helper.make_node('Transpose', ['x'], ['y'], perm=[1, 0])], [('x', [33, 70])])
one('transpose_0213', [helper.make_node('Transpose', ['x'], ['y'], perm=[0, 2, 1, 3])], [('x', [2, 5, 31, 7])])
one('transpose_0231', [helper.make_node('Transpose', ['x'], ['y'], perm=[0, 2, 3, 1])], [('x', [2, 37, 5, 9])])
one('transpose_small', [helper.make_node('Transpose', ['x'], ['y'], perm=[2, 1, 0])], [('x', [3, 1, 2])])
one('expand', [helper.make_node('Expand', ['x', 's'], ['y'])], [('x', [3, 1, 5])], [('s', np.array([2, 3, 4, 5], np.int64))])
one('slice_steps', [helper.make_node('Slice', ['x', 'st', 'en', 'ax', 'sp'], ['y'])], [('x', [7, 40, 9])],
    [('st', np.array([1, 38, 0], np.int64)), ('en', np.array([7, 2, 9], np.int64)), ('ax', np.array([0, 1, 2], np.int64)), ('sp', np.array([2, -3, 4], np.int64))])
one('concat_axis1', [helper.make_node('Concat', ['a', 'b', 'c'], ['y'], axis=1)], [('a', [2, 3, 5]), ('b', [2, 1, 5]), ('c', [2, 7, 5])])
one('concat_inplace', [helper.make_node('Relu', ['a'], ['ra']), helper.make_node('Neg', ['b'], ['nb']), helper.make_node('Concat', ['ra', 'nb', 'c'], ['y'], axis=0)], [('a', [3, 5]), ('b', [2, 5]), ('c', [1, 5])])
for mode in ['constant', 'reflect', 'edge', 'wrap']:
    if mode == 'wrap': continue  # opset 19's; these models are opset 17
    one('pad_' + mode, [helper.make_node('Pad', ['x', 'p', 'v'] if mode == 'constant' else ['x', 'p'], ['y'], mode=mode)], [('x', [2, 5, 6])],
        [('p', np.array([0, 2, 3, 1, 4, 2] if mode != 'constant' else [1, -1, 3, 0, 2, -2], np.int64))] + ([('v', np.array(1.5, np.float32))] if mode == 'constant' else []))
one('gather_axis1', [helper.make_node('Gather', ['x', 'i'], ['y'], axis=1)], [('x', [3, 10, 4])], [('i', np.array([[0, -1, 9], [3, 3, -10]], np.int64))])
one('gather_i32_axis0', [helper.make_node('Gather', ['x', 'i'], ['y'], axis=0)], [('x', [1025, 33])], [('i', np.array([1024, 0, 5, -1025], np.int32))])
one('reshape_copy', [helper.make_node('Transpose', ['x'], ['t'], perm=[1, 0]), helper.make_node('Reshape', ['t', 's'], ['y'])], [('x', [6, 35])], [('s', np.array([5, 42], np.int64))])
