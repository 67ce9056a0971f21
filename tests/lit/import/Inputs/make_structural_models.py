# Writes one-node ONNX models for the import tests of the structural legalisers (lower_nn.c, lower_shape.c,
# lower_gather.c, lower_resize.c, lower_rnn.c, lower_signal.c), for opsets and attribute forms that
# Debian's libonnx-testdata does not cover: make_structural_models.py KIND OUT.onnx
#   matmul_1d        MatMul of a [4] vector and a [2, 4, 3] batch
#   conv_same_lower  Conv with auto_pad SAME_LOWER, stride 2, kernel from the weight
#   convt_outshape   ConvTranspose with output_shape [10, 8], stride 3 (pads generated)
#   slice9           Slice-9 with starts/ends/axes attributes (negative and INT_MAX bounds)
#   slice_negstep    Slice-13 with constant steps -2 and INT64_MIN end
#   pad2             Pad-7 with pads and value attributes
#   split7           Split-7 with a split attribute, one output unnamed
#   tile7            Tile-7 with constant repeats [1, 3]
#   reshape_dynamic  Reshape whose shape is a graph input (needs --bind)
#   topk9            TopK-9 with the k attribute
#   compress         Compress with a constant condition and no axis
#   upsample7        Upsample-7 with scales attribute [1, 1, 2, 3]
#   resize_tfnn      Resize-11 with tf_half_pixel_for_nn and sizes
#   rnn_lens         RNN-14 bidirectional, seq 3, constant sequence_lens [3, 1]
#   rnn_bad_act      RNN with an unknown activation
#   dft_onesided     DFT-17 of a real [1, 4, 1] signal, onesided
#   global_avg       GlobalAveragePool-1 of a [1, 2, 3, 4] input (opset 13)
#   lstm_seq2        LSTM-14 forward, seq 2, hidden 3, peepholes, no Y output
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def save(nodes, inputs, outputs, path, opset, inits=()):
    graph = helper.make_graph(nodes, 'g', inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
    model.ir_version = 7
    with open(path, 'wb') as f:
        f.write(model.SerializeToString())


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype), name)


def build(kind, path):
    node = helper.make_node
    if kind == 'matmul_1d':
        save([node('MatMul', ['a', 'b'], ['y'], name='mm')], [vi('a', F, [4]), vi('b', F, [2, 4, 3])],
             [vi('y', F, [2, 3])], path, 13)
    elif kind == 'conv_same_lower':
        save([node('Conv', ['x', 'w'], ['y'], name='conv', auto_pad='SAME_LOWER', strides=[2, 2])],
             [vi('x', F, [1, 1, 5, 6]), vi('w', F, [2, 1, 4, 3])], [vi('y', F, [1, 2, 3, 3])], path, 11)
    elif kind == 'convt_outshape':
        save([node('ConvTranspose', ['x', 'w'], ['y'], name='convt', strides=[3, 2], output_shape=[10, 8])],
             [vi('x', F, [1, 1, 3, 3]), vi('w', F, [1, 2, 3, 3])], [vi('y', F, [1, 2, 10, 8])], path, 11)
    elif kind == 'slice9':
        save([node('Slice', ['x'], ['y'], name='slice', starts=[1, -3], ends=[2**31 - 1, -1], axes=[0, -1])],
             [vi('x', F, [4, 5, 6])], [vi('y', F, [3, 5, 2])], path, 9)
    elif kind == 'slice_negstep':
        inits = [const('s', [-1]), const('e', [-2**63]), const('a', [1]), const('t', [-2])]
        save([node('Slice', ['x', 's', 'e', 'a', 't'], ['y'], name='slice')], [vi('x', F, [2, 5])],
             [vi('y', F, [2, 3])], path, 13, inits)
    elif kind == 'pad2':
        save([node('Pad', ['x'], ['y'], name='pad', pads=[0, 1, 1, 2], value=1.5)], [vi('x', F, [2, 3])],
             [vi('y', F, [3, 6])], path, 7)
    elif kind == 'split7':
        save([node('Split', ['x'], ['a', '', 'c'], name='split', axis=1, split=[1, 2, 3])], [vi('x', F, [2, 6])],
             [vi('a', F, [2, 1]), vi('c', F, [2, 3])], path, 7)
    elif kind == 'tile7':
        save([node('Tile', ['x', 'r'], ['y'], name='tile')], [vi('x', F, [2, 3])], [vi('y', F, [2, 9])], path, 7,
             [const('r', [1, 3])])
    elif kind == 'reshape_dynamic':
        save([node('Reshape', ['x', 'shape'], ['y'], name='reshape')], [vi('x', F, [2, 3]), vi('shape', I64, [2])],
             [vi('y', F, [3, 2])], path, 13)
    elif kind == 'topk9':
        save([node('TopK', ['x'], ['v', 'i'], name='topk', k=2)], [vi('x', F, [3, 4])],
             [vi('v', F, [3, 2]), vi('i', I64, [3, 2])], path, 9)
    elif kind == 'compress':
        cond = numpy_helper.from_array(np.array([False, True, True, False, True], bool), 'c')
        save([node('Compress', ['x', 'c'], ['y'], name='compress')], [vi('x', F, [2, 3])], [vi('y', F, [3])],
             path, 11, [cond])
    elif kind == 'upsample7':
        save([node('Upsample', ['x'], ['y'], name='up', scales=[1.0, 1.0, 2.0, 3.0])], [vi('x', F, [1, 1, 2, 2])],
             [vi('y', F, [1, 1, 4, 6])], path, 7)
    elif kind == 'resize_tfnn':
        inits = [numpy_helper.from_array(np.zeros(0, np.float32), n) for n in ('roi', 'scales')]
        inits.append(const('sizes', [1, 1, 3, 2]))
        save([node('Resize', ['x', 'roi', 'scales', 'sizes'], ['y'], name='resize',
                   coordinate_transformation_mode='tf_half_pixel_for_nn')],
             [vi('x', F, [1, 1, 4, 4])], [vi('y', F, [1, 1, 3, 2])], path, 11, inits)
    elif kind in ('rnn_lens', 'rnn_bad_act'):
        rng = np.random.default_rng(1)
        inits = [numpy_helper.from_array(rng.standard_normal((2, 2, 3)).astype(np.float32), 'W'),
                 numpy_helper.from_array(rng.standard_normal((2, 2, 2)).astype(np.float32), 'R'),
                 numpy_helper.from_array(np.array([3, 1], np.int32), 'L')]
        acts = ['Tanh', 'Relu'] if kind == 'rnn_lens' else ['Tanh', 'Gauss']
        save([node('RNN', ['X', 'W', 'R', '', 'L'], ['Y', 'Y_h'], name='rnn', hidden_size=2,
                   direction='bidirectional', activations=acts)],
             [vi('X', F, [3, 2, 3])], [vi('Y', F, [3, 2, 2, 2]), vi('Y_h', F, [2, 2, 2])], path, 14, inits)
    elif kind == 'dft_onesided':
        save([node('DFT', ['x'], ['y'], name='dft', onesided=1)], [vi('x', F, [1, 4, 1])], [vi('y', F, [1, 3, 2])],
             path, 17)
    elif kind == 'global_avg':
        save([node('GlobalAveragePool', ['x'], ['y'], name='gap')], [vi('x', F, [1, 2, 3, 4])],
             [vi('y', F, [1, 2, 1, 1])], path, 13)
    elif kind == 'lstm_seq2':
        rng = np.random.default_rng(2)
        inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
                 for n, s in (('W', (1, 12, 2)), ('R', (1, 12, 3)), ('B', (1, 24)), ('P', (1, 9)))]
        save([node('LSTM', ['X', 'W', 'R', 'B', '', '', '', 'P'], ['', 'Y_h', 'Y_c'], name='lstm', hidden_size=3)],
             [vi('X', F, [2, 1, 2])], [vi('Y_h', F, [1, 1, 3]), vi('Y_c', F, [1, 1, 3])], path, 14, inits)
    else:
        sys.exit('make_structural_models.py: unknown kind ' + kind)


build(sys.argv[1], sys.argv[2])
