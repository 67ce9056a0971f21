# Writes small ONNX models for the CLI tests: make_model.py KIND OUT.onnx
#   quoted   names with quotes, a backslash and a newline (DOT escaping)
#   consts   a chain of 70 Adds with one initializer each (more constants than --emit dot draws)
#   gemm     Gemm with weights and bias initializers (parameters and FLOPs in flowc info)
#   dynamic  y = a + b + c with a: [N, 3], b: [N, T] (symbolic N, T) and c: [3] (static)
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def quoted():
    x = helper.make_tensor_value_info('in"put', TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info('out\\put', TensorProto.FLOAT, [2, 3])
    node = helper.make_node('Relu', ['in"put'], ['out\\put'], name='say "hi"\nnext line')
    return helper.make_graph([node], 'quoted', [x], [y])


def consts():
    n = 70
    x = helper.make_tensor_value_info('x', TensorProto.FLOAT, [4])
    nodes, inits, prev = [], [], 'x'
    for i in range(n):
        c = 'c%d' % i
        inits.append(numpy_helper.from_array(np.full([4], i, dtype=np.float32), c))
        out = 'y' if i == n - 1 else 't%d' % i
        nodes.append(helper.make_node('Add', [prev, c], [out], name='add%d' % i))
        prev = out
    y = helper.make_tensor_value_info('y', TensorProto.FLOAT, [4])
    return helper.make_graph(nodes, 'consts', [x], [y], inits)


def gemm():
    # y[8, 16] = x[8, 32] . W^T[32, 16] + b[16]: 8*16*32 = 4096 MACs, 32*16 + 16 = 528 parameters.
    x = helper.make_tensor_value_info('x', TensorProto.FLOAT, [8, 32])
    y = helper.make_tensor_value_info('y', TensorProto.FLOAT, [8, 16])
    w = numpy_helper.from_array(np.arange(16 * 32, dtype=np.float32).reshape(16, 32) / 512, 'W')
    b = numpy_helper.from_array(np.ones([16], dtype=np.float32), 'b')
    node = helper.make_node('Gemm', ['x', 'W', 'b'], ['y'], name='fc', transB=1)
    return helper.make_graph([node], 'gemm', [x], [y], [w, b])


def dynamic():
    a = helper.make_tensor_value_info('a', TensorProto.FLOAT, ['N', 3])
    b = helper.make_tensor_value_info('b', TensorProto.FLOAT, ['N', 'T'])
    c = helper.make_tensor_value_info('c', TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info('y', TensorProto.FLOAT, ['N', 3])
    nodes = [helper.make_node('Add', ['a', 'b'], ['ab'], name='add_ab'),
             helper.make_node('Add', ['ab', 'c'], ['y'], name='add_c')]
    return helper.make_graph(nodes, 'dynamic', [a, b, c], [y])


save({'quoted': quoted, 'consts': consts, 'gemm': gemm, 'dynamic': dynamic}[sys.argv[1]](), sys.argv[2])
