# Writes one-node ONNX models for the import tests, for opsets and attribute forms that Debian's
# libonnx-testdata does not cover: make_model.py KIND OUT.onnx
#   logsoftmax11     LogSoftmax-11 at axis 1 of a 2x3x4 input (coerced to 2-D)
#   clip10           Clip-10 with min/max attributes
#   instancenorm     InstanceNormalization-7 with scale/bias initializers
#   bn9_train        BatchNormalization-9 naming all five outputs (training statistics)
#   random_normal    RandomNormal 2x3, mean 1, scale 2, seed 7
#   qlinear_matmul   QLinearMatMul with per-row a scale and per-column b scale
#   convint_same     ConvInteger with auto_pad SAME_UPPER, stride 2
#   bad_bitshift     BitShift with direction "UP" (invalid)
#   bad_random_dtype RandomUniform with dtype int32 (invalid)
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def save(nodes, inputs, outputs, path, opset, inits=()):
    graph = helper.make_graph(nodes, 'g', inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
    model.ir_version = 7
    with open(path, 'wb') as f:
        f.write(model.SerializeToString())


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def build(kind, path):
    if kind == 'logsoftmax11':
        save([helper.make_node('LogSoftmax', ['x'], ['y'], name='ls', axis=1)], [vi('x', F, [2, 3, 4])],
             [vi('y', F, [2, 3, 4])], path, 11)
    elif kind == 'clip10':
        save([helper.make_node('Clip', ['x'], ['y'], name='clip', min=-1.0, max=2.0)], [vi('x', F, [4])],
             [vi('y', F, [4])], path, 10)
    elif kind == 'instancenorm':
        inits = [numpy_helper.from_array(np.array([1.0, 2.0], np.float32), 's'),
                 numpy_helper.from_array(np.array([0.5, -0.5], np.float32), 'b')]
        save([helper.make_node('InstanceNormalization', ['x', 's', 'b'], ['y'], name='in', epsilon=0.01)],
             [vi('x', F, [1, 2, 3, 4])], [vi('y', F, [1, 2, 3, 4])], path, 7, inits)
    elif kind == 'bn9_train':
        outs = ['y', 'running_mean', 'running_var', 'saved_mean', 'saved_var']
        save([helper.make_node('BatchNormalization', ['x', 's', 'b', 'm', 'v'], outs, name='bn', momentum=0.75)],
             [vi('x', F, [2, 3, 4])] + [vi(n, F, [3]) for n in 'sbmv'],
             [vi('y', F, [2, 3, 4])] + [vi(n, F, [3]) for n in outs[1:]], path, 9)
    elif kind == 'random_normal':
        save([helper.make_node('RandomNormal', [], ['y'], name='rn', shape=[2, 3], mean=1.0, scale=2.0, seed=7.0)],
             [], [vi('y', F, [2, 3])], path, 17)
    elif kind == 'qlinear_matmul':
        U8 = TensorProto.UINT8
        names = ['a', 'a_scale', 'a_zp', 'b', 'b_scale', 'b_zp', 'y_scale', 'y_zp']
        types = [(U8, [2, 4]), (F, [2]), (U8, [2]), (U8, [4, 3]), (F, [3]), (U8, [3]), (F, []), (U8, [])]
        save([helper.make_node('QLinearMatMul', names, ['y'], name='qmm')],
             [vi(n, t, s) for n, (t, s) in zip(names, types)], [vi('y', U8, [2, 3])], path, 10)
    elif kind == 'convint_same':
        U8 = TensorProto.UINT8
        save([helper.make_node('ConvInteger', ['x', 'w', 'x_zp', 'w_zp'], ['y'], name='ci', auto_pad='SAME_UPPER',
                               strides=[2, 2])],
             [vi('x', U8, [1, 2, 5, 5]), vi('w', U8, [3, 2, 3, 3]), vi('x_zp', U8, []), vi('w_zp', U8, [3])],
             [vi('y', TensorProto.INT32, [1, 3, 3, 3])], path, 10)
    elif kind == 'bad_bitshift':
        U8 = TensorProto.UINT8
        save([helper.make_node('BitShift', ['x', 's'], ['y'], name='shift', direction='UP')],
             [vi('x', U8, [3]), vi('s', U8, [3])], [vi('y', U8, [3])], path, 11)
    elif kind == 'bad_random_dtype':
        save([helper.make_node('RandomUniform', [], ['y'], name='ru', shape=[2], dtype=TensorProto.INT32)],
             [], [vi('y', TensorProto.INT32, [2])], path, 17)
    else:
        sys.exit('make_model.py: unknown kind ' + kind)


build(sys.argv[1], sys.argv[2])
