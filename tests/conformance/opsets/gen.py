#!/usr/bin/python3
"""gen.py — writes the opset 18-21 conformance cases into tests/conformance/opsets/data/.

Debian's test data stops at opset 17 and its onnx package has neither the newer schemas nor a reference
evaluator, so each case is one node built with onnx.helper (which writes any op type at any opset
without checking it), inputs drawn from a fixed seed, and the expected outputs computed by
onnxruntime-node 1.30 (ort_outputs.js). The layout is that of the ONNX backend node tests:
data/<case>/model.onnx and data/<case>/test_data_set_0/{input,output}_<i>.pb, so `flowc check` and the
conformance runner read them like Debian's. Inputs that exporters write as constants (axes, pads, sizes,
split, ...) are initializers.

The cases are committed, so the test suite needs neither npm nor onnxruntime; rerun this script (with
bench/node_modules installed) after changing a case:  /usr/bin/python3 tests/conformance/opsets/gen.py
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, 'data')
rng = np.random.default_rng(18)

ORT_TYPES = {np.float32: 'float32', np.float64: 'float64', np.int8: 'int8', np.uint8: 'uint8', np.int32: 'int32',
             np.int64: 'int64', np.bool_: 'bool', np.uint16: 'uint16', np.int16: 'int16'}
NP_OF_ORT = {v: k for k, v in ORT_TYPES.items()}

CASES = []  # (name, model, [input arrays by name])


def f32(*shape, lo=-3.0, hi=3.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def case(name, op, inputs, consts=None, attrs=None, opset=18, n_out=1, out_types=None, domain_opsets=None):
    """One node `op` whose inputs are `inputs` (graph inputs, name -> array) then `consts` (initializers,
    name -> array, or None for an omitted optional input), in that order."""
    consts = consts or {}
    names = list(inputs) + list(consts)
    node_inputs = ['' if (n in consts and consts[n] is None) else n for n in names]
    while node_inputs and node_inputs[-1] == '':
        node_inputs.pop()
    outs = ['y%d' % i for i in range(n_out)]
    node = helper.make_node(op, node_inputs, outs, name=op + '_0', **(attrs or {}))
    g_in = [helper.make_tensor_value_info(n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], a.shape)
            for n, a in inputs.items()]
    inits = [numpy_helper.from_array(a, n) for n, a in consts.items() if a is not None]
    out_types = out_types or [TensorProto.FLOAT] * n_out
    g_out = [helper.make_tensor_value_info(o, t, None) for o, t in zip(outs, out_types)]
    graph = helper.make_graph([node], name, g_in, g_out, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)], ir_version=8)
    CASES.append((name, model, inputs))


# ---- Reduce* (18: axes an input; 20: bool for Max/Min) ------------------------------------------------

REDUCES = ['ReduceL1', 'ReduceL2', 'ReduceLogSum', 'ReduceLogSumExp', 'ReduceMax', 'ReduceMean', 'ReduceMin',
           'ReduceProd', 'ReduceSum', 'ReduceSumSquare']


def reduces():
    for op in REDUCES:
        low = 0.1 if op == 'ReduceLogSum' else -1.5
        x = f32(3, 5, 7, lo=low, hi=1.5)
        short = op[6:].lower()
        case('reduce_%s_axes_neg_keep' % short, op, {'x': x}, {'axes': np.array([-1, 1], np.int64)},
             {'keepdims': 1})
        case('reduce_%s_axes_nokeep' % short, op, {'x': x}, {'axes': np.array([0, -1], np.int64)},
             {'keepdims': 0})
        case('reduce_%s_empty_axes' % short, op, {'x': x}, {'axes': np.array([], np.int64)}, {'keepdims': 0})
        case('reduce_%s_empty_axes_noop' % short, op, {'x': x}, {'axes': np.array([], np.int64)},
             {'noop_with_empty_axes': 1})
        case('reduce_%s_no_axes_noop' % short, op, {'x': x}, {}, {'noop_with_empty_axes': 1, 'keepdims': 0})
    for op in ('ReduceMax', 'ReduceMin'):
        b = rng.integers(0, 2, size=(4, 3, 5)).astype(np.bool_)
        b[1] = True
        b[2] = False
        short = op[6:].lower()
        case('reduce_%s_bool_20' % short, op, {'x': b}, {'axes': np.array([1, -1], np.int64)}, {'keepdims': 0},
             opset=20, out_types=[TensorProto.BOOL])
        case('reduce_%s_20' % short, op, {'x': f32(2, 3, 5)}, {'axes': np.array([2], np.int64)}, opset=20)


# ---- Split (18: num_outputs) --------------------------------------------------------------------------

def splits():
    x = f32(3, 7, 5)
    case('split_num_outputs_uneven', 'Split', {'x': x}, {}, {'axis': 1, 'num_outputs': 3}, n_out=3)
    case('split_num_outputs_neg_axis', 'Split', {'x': x}, {}, {'axis': -1, 'num_outputs': 2}, n_out=2)
    case('split_num_outputs_even', 'Split', {'x': f32(6, 4)}, {}, {'num_outputs': 3}, n_out=3)
    case('split_sizes_18', 'Split', {'x': x}, {'split': np.array([2, 4, 1], np.int64)}, {'axis': -2}, n_out=3)


# ---- Pad (18: axes; 19: wrap) -------------------------------------------------------------------------

def pads():
    x = f32(2, 5, 6)
    case('pad_axes_constant', 'Pad', {'x': x},
         {'pads': np.array([1, 2, 3, 0], np.int64), 'value': np.array(1.5, np.float32),
          'axes': np.array([-1, 1], np.int64)}, {'mode': 'constant'})
    case('pad_axes_reflect', 'Pad', {'x': x}, {'pads': np.array([2, 1, 3, 2], np.int64), 'value': None,
                                               'axes': np.array([1, 2], np.int64)}, {'mode': 'reflect'})
    case('pad_axes_edge_negative', 'Pad', {'x': x}, {'pads': np.array([-1, 3], np.int64), 'value': None,
                                                     'axes': np.array([2], np.int64)}, {'mode': 'edge'})
    case('pad_wrap_19', 'Pad', {'x': x}, {'pads': np.array([0, 2, 4, 1, 3, 5], np.int64)}, {'mode': 'wrap'}, opset=19)
    case('pad_wrap_axes_19', 'Pad', {'x': x}, {'pads': np.array([3, -2, 1, 4], np.int64), 'value': None,
                                               'axes': np.array([-2, -1], np.int64)}, {'mode': 'wrap'}, opset=19)
    case('pad_constant_21', 'Pad', {'x': x}, {'pads': np.array([1, 0, 2, 0, 1, 1], np.int64)}, opset=21)


# ---- Resize (18: antialias, axes, keep_aspect_ratio_policy; 19: half_pixel_symmetric) --------------------

def resizes():
    x = f32(1, 2, 9, 11)
    empty = np.array([], np.float32)
    sc = lambda *v: np.array(v, np.float32)
    sz = lambda *v: np.array(v, np.int64)
    case('resize_axes_scales', 'Resize', {'x': x}, {'roi': None, 'scales': sc(1.5, 0.75)},
         {'mode': 'linear', 'axes': [2, -1]})
    case('resize_axes_sizes_nearest', 'Resize', {'x': x}, {'roi': None, 'scales': None, 'sizes': sz(7, 4)},
         {'mode': 'nearest', 'axes': [-1, 2]})
    for pol in ('not_larger', 'not_smaller'):
        case('resize_keep_aspect_%s' % pol, 'Resize', {'x': x},
             {'roi': None, 'scales': None, 'sizes': sz(5, 8)},
             {'mode': 'linear', 'keep_aspect_ratio_policy': pol, 'axes': [2, 3]})
    case('resize_keep_aspect_not_larger_nearest_4d', 'Resize', {'x': x},
         {'roi': None, 'scales': None, 'sizes': sz(1, 2, 20, 15)},
         {'mode': 'nearest', 'keep_aspect_ratio_policy': 'not_larger'})
    case('resize_antialias_linear_down', 'Resize', {'x': x}, {'roi': None, 'scales': sc(1, 1, 0.6, 0.45)},
         {'mode': 'linear', 'antialias': 1})
    case('resize_antialias_cubic_down', 'Resize', {'x': x}, {'roi': None, 'scales': sc(1, 1, 0.7, 0.35)},
         {'mode': 'cubic', 'antialias': 1})
    case('resize_antialias_linear_sizes', 'Resize', {'x': x}, {'roi': None, 'scales': None, 'sizes': sz(4, 5)},
         {'mode': 'linear', 'antialias': 1, 'axes': [2, 3]})
    case('resize_antialias_linear_up', 'Resize', {'x': x}, {'roi': None, 'scales': sc(1, 1, 1.3, 0.8)},
         {'mode': 'linear', 'antialias': 1})
    case('resize_antialias_cubic_exclude_outside', 'Resize', {'x': x}, {'roi': None, 'scales': sc(1, 1, 0.55, 0.8)},
         {'mode': 'cubic', 'antialias': 1, 'exclude_outside': 1, 'cubic_coeff_a': -0.5})
    case('resize_antialias_linear_align_corners_3d', 'Resize', {'x': f32(3, 10, 7)},
         {'roi': None, 'scales': None, 'sizes': sz(4, 3)},
         {'mode': 'linear', 'antialias': 1, 'axes': [1, 0], 'coordinate_transformation_mode': 'align_corners'})
    case('resize_half_pixel_symmetric_19', 'Resize', {'x': x}, {'roi': None, 'scales': sc(1, 1, 1.7, 0.6)},
         {'mode': 'linear', 'coordinate_transformation_mode': 'half_pixel_symmetric'}, opset=19)
    case('resize_linear_empty_roi_19', 'Resize', {'x': x}, {'roi': empty, 'scales': sc(1, 1, 2, 0.5)},
         {'mode': 'linear'}, opset=19)


# ---- normalisation, pooling --------------------------------------------------------------------------

def norms():
    x = f32(2, 6, 5, 3)
    case('group_norm_18', 'GroupNormalization', {'x': x}, {'scale': f32(3), 'bias': f32(3)},
         {'num_groups': 3, 'epsilon': 1e-3})
    case('group_norm_18_one_group', 'GroupNormalization', {'x': f32(3, 4, 7)}, {'scale': f32(1), 'bias': f32(1)},
         {'num_groups': 1})
    case('group_norm_21', 'GroupNormalization', {'x': x}, {'scale': f32(6), 'bias': f32(6)},
         {'num_groups': 2, 'epsilon': 1e-4}, opset=21)
    case('group_norm_21_per_channel_groups', 'GroupNormalization', {'x': f32(1, 6, 7)},
         {'scale': f32(6), 'bias': f32(6)}, {'num_groups': 6}, opset=21)
    p = f32(1, 2, 9, 10)
    case('avgpool_dilations_19', 'AveragePool', {'x': p}, {},
         {'kernel_shape': [3, 2], 'dilations': [2, 3], 'strides': [1, 2]}, opset=19)
    case('avgpool_dilations_pads_19', 'AveragePool', {'x': p}, {},
         {'kernel_shape': [2, 3], 'dilations': [3, 2], 'pads': [1, 1, 1, 2], 'count_include_pad': 1}, opset=19)
    case('avgpool_dilations_ceil_19', 'AveragePool', {'x': p}, {},
         {'kernel_shape': [3, 3], 'dilations': [2, 2], 'strides': [2, 2], 'ceil_mode': 1, 'pads': [1, 1, 1, 1]},
         opset=19)


# ---- elementwise and casts -------------------------------------------------------------------------------

def elementwise():
    a = rng.integers(-100, 100, size=(3, 5)).astype(np.int32)
    b = rng.integers(-100, 100, size=(5,)).astype(np.int32)
    for op in ('BitwiseAnd', 'BitwiseOr', 'BitwiseXor'):
        case(op.lower() + '_18', op, {'a': a, 'b': b}, opset=18, out_types=[TensorProto.INT32])
    u = rng.integers(0, 255, size=(4, 3)).astype(np.uint8)
    case('bitwisenot_18', 'BitwiseNot', {'a': u}, opset=18, out_types=[TensorProto.UINT8])
    case('mish_18', 'Mish', {'x': f32(3, 7, lo=-6, hi=6)})
    case('gelu_20', 'Gelu', {'x': f32(3, 7, lo=-4, hi=4)}, opset=20)
    case('gelu_tanh_20', 'Gelu', {'x': f32(3, 7, lo=-4, hi=4)}, attrs={'approximate': 'tanh'}, opset=20)
    s = np.array([1.0, -np.inf, np.inf, np.nan, 0.0, -2.5], np.float32)
    case('isinf_20', 'IsInf', {'x': s}, opset=20, out_types=[TensorProto.BOOL])
    case('isinf_negative_20', 'IsInf', {'x': s}, attrs={'detect_positive': 0}, opset=20, out_types=[TensorProto.BOOL])
    case('isnan_20', 'IsNaN', {'x': s}, opset=20, out_types=[TensorProto.BOOL])
    case('equal_19', 'Equal', {'a': a, 'b': a[1]}, opset=19, out_types=[TensorProto.BOOL])
    case('cast_saturate_19', 'Cast', {'x': f32(3, 4, lo=-300, hi=300)}, attrs={'to': TensorProto.INT32, 'saturate': 1},
         opset=19, out_types=[TensorProto.INT32])
    case('cast_21', 'Cast', {'x': f32(3, 4)}, attrs={'to': TensorProto.DOUBLE}, opset=21,
         out_types=[TensorProto.DOUBLE])
    case('castlike_21', 'CastLike', {'x': f32(3, 4, lo=-9, hi=9)}, {'like': np.zeros((1,), np.int64)}, opset=21,
         out_types=[TensorProto.INT64])


# ---- shapes and data movement at 19/21 (new types only) -----------------------------------------------------

def shapes():
    x = f32(2, 1, 3, 4)
    case('reshape_21', 'Reshape', {'x': x}, {'shape': np.array([3, -1, 2], np.int64)}, opset=21)
    case('shape_21', 'Shape', {'x': x}, attrs={'start': 1, 'end': -1}, opset=21, out_types=[TensorProto.INT64])
    case('size_21', 'Size', {'x': x}, opset=21, out_types=[TensorProto.INT64])
    case('identity_21', 'Identity', {'x': x}, opset=21)
    case('flatten_21', 'Flatten', {'x': x}, attrs={'axis': -2}, opset=21)
    case('squeeze_21', 'Squeeze', {'x': x}, {'axes': np.array([1], np.int64)}, opset=21)
    case('unsqueeze_21', 'Unsqueeze', {'x': x}, {'axes': np.array([-1, 0], np.int64)}, opset=21)
    case('transpose_21', 'Transpose', {'x': x}, attrs={'perm': [3, 0, 2, 1]}, opset=21)
    d = f32(4, 5)
    idx = np.array([[1, 0, 3, 2, 1], [3, 3, 0, 0, 2]], np.int64)
    case('scatter_elements_max_18', 'ScatterElements', {'d': d, 'u': f32(2, 5)}, {'i': idx},
         {'axis': 0, 'reduction': 'max'})
    case('scatter_elements_min_18', 'ScatterElements', {'d': d, 'u': f32(2, 5)}, {'i': idx},
         {'axis': 0, 'reduction': 'min'})
    case('scatter_nd_max_18', 'ScatterND', {'d': d, 'u': f32(3, 5)}, {'i': np.array([[1], [3], [1]], np.int64)},
         {'reduction': 'max'})


def gen_order_fix():
    """ScatterElements takes (data, indices, updates): the generic case() puts graph inputs first, so
    those cases are rebuilt here with the right order."""
    fixed = []
    for name, model, inputs in CASES:
        node = model.graph.node[0]
        if node.op_type in ('ScatterElements', 'ScatterND'):
            del node.input[:]
            node.input.extend(['d', 'i', 'u'])
        fixed.append((name, model, inputs))
    CASES[:] = fixed


def constant_of_shape():
    # ConstantOfShape folds to a constant: it is combined with an input so a kernel runs.
    for opset, name in ((20, 'constantofshape_add_20'), (21, 'constantofshape_add_21')):
        shp = numpy_helper.from_array(np.array([3, 4], np.int64), 'shp')
        nodes = [helper.make_node('ConstantOfShape', ['shp'], ['c'], name='ConstantOfShape_0',
                                  value=numpy_helper.from_array(np.array([1.25], np.float32))),
                 helper.make_node('Add', ['x', 'c'], ['y0'], name='Add_0')]
        x = f32(3, 4)
        g = helper.make_graph(nodes, name, [helper.make_tensor_value_info('x', TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info('y0', TensorProto.FLOAT, None)], [shp])
        CASES.append((name, helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)], ir_version=8),
                      {'x': x}))


def quant():
    x = f32(2, 3, 4)
    case('quantize_linear_axis_21', 'QuantizeLinear', {'x': x},
         {'s': np.array([0.02, 0.05, 0.1], np.float32), 'z': np.array([3, -7, 0], np.int8)}, {'axis': 1}, opset=21,
         out_types=[TensorProto.INT8])
    q = rng.integers(0, 255, size=(2, 3, 4)).astype(np.uint8)
    case('dequantize_linear_axis_21', 'DequantizeLinear', {'q': q},
         {'s': np.array([0.02, 0.05, 0.1, 0.5], np.float32), 'z': np.array([128, 3, 0, 255], np.uint8)},
         {'axis': -1}, opset=21)
    case('quantize_linear_19', 'QuantizeLinear', {'x': x}, {'s': np.array(0.03, np.float32),
                                                           'z': np.array(5, np.uint8)}, opset=19,
         out_types=[TensorProto.UINT8])
    case('quantize_linear_output_dtype_21', 'QuantizeLinear', {'x': x}, {'s': np.array(0.02, np.float32)},
         {'output_dtype': TensorProto.INT8}, opset=21, out_types=[TensorProto.INT8])
    case('quantize_linear_blocked_21', 'QuantizeLinear', {'x': x}, {'s': np.full((2, 3, 2), 0.05, np.float32),
                                                                    'z': np.zeros((2, 3, 2), np.int8)},
         {'axis': -1, 'block_size': 2}, opset=21, out_types=[TensorProto.INT8])
    case('dequantize_linear_19', 'DequantizeLinear', {'q': q}, {'s': np.array(0.03, np.float32),
                                                               'z': np.array(5, np.uint8)}, opset=19)


def signal():
    """DFT-20 (dft_length and axis as inputs). The output gets 1 added: a real input's spectrum has imaginary
    parts that are exactly zero, which onnxruntime's FFT returns as round-off (1e-6) and an absolute
    tolerance of 1e-7 would refuse; offset, every element is compared within the relative tolerance."""
    for name, x, n, axis, attrs in (('dft_20_axis_input', f32(2, 8, 1), None, 1, {}),
                                    ('dft_20_length_inverse', f32(3, 6, 2), 5, -2, {'inverse': 1}),
                                    ('dft_20_onesided', f32(2, 7, 1), 9, None, {'onesided': 1}),
                                    ('dft_20_axis0_complex', f32(6, 3, 2), None, 0, {})):
        inits = [numpy_helper.from_array(np.array(1.0, np.float32), 'one')]
        ins = ['x', '', '']
        if n is not None:
            inits.append(numpy_helper.from_array(np.array(n, np.int64), 'n'))
            ins[1] = 'n'
        if axis is not None:
            inits.append(numpy_helper.from_array(np.array(axis, np.int64), 'axis'))
            ins[2] = 'axis'
        while ins[-1] == '':
            ins.pop()
        nodes = [helper.make_node('DFT', ins, ['d'], name='DFT_0', **attrs),
                 helper.make_node('Add', ['d', 'one'], ['y0'], name='Add_0')]
        g = helper.make_graph(nodes, name, [helper.make_tensor_value_info('x', TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info('y0', TensorProto.FLOAT, None)], inits)
        CASES.append((name, helper.make_model(g, opset_imports=[helper.make_opsetid('', 20)], ir_version=8), {'x': x}))


def grids():
    x = f32(1, 2, 5, 6)
    grid = rng.uniform(-1.2, 1.2, size=(1, 4, 3, 2)).astype(np.float32)
    for mode in ('linear', 'nearest', 'cubic'):
        for pm, ac in (('zeros', 0), ('border', 1), ('reflection', 0)):
            case('gridsample_20_%s_%s_ac%d' % (mode, pm, ac), 'GridSample', {'x': x, 'grid': grid}, {},
                 {'mode': mode, 'padding_mode': pm, 'align_corners': ac}, opset=20)
    x5 = f32(1, 2, 3, 4, 5)
    g5 = rng.uniform(-1.1, 1.1, size=(1, 2, 3, 2, 3)).astype(np.float32)
    for mode in ('linear', 'nearest'):
        case('gridsample_20_3d_%s' % mode, 'GridSample', {'x': x5, 'grid': g5}, {},
             {'mode': mode, 'padding_mode': 'border', 'align_corners': 0}, opset=20)
    theta = f32(2, 2, 3, lo=-1, hi=1)
    case('affine_grid_20', 'AffineGrid', {'theta': theta}, {'size': np.array([2, 3, 4, 5], np.int64)},
         {'align_corners': 0}, opset=20)
    case('affine_grid_20_ac', 'AffineGrid', {'theta': theta}, {'size': np.array([2, 3, 5, 3], np.int64)},
         {'align_corners': 1}, opset=20)
    theta3 = f32(1, 3, 4, lo=-1, hi=1)
    case('affine_grid_20_3d', 'AffineGrid', {'theta': theta3}, {'size': np.array([1, 1, 3, 2, 4], np.int64)}, {},
         opset=20)


def crops():
    x = f32(3, 5, 6)
    case('center_crop_pad_crop', 'CenterCropPad', {'x': x}, {'s': np.array([3, 3, 4], np.int64)})
    case('center_crop_pad_pad', 'CenterCropPad', {'x': x}, {'s': np.array([4, 8, 9], np.int64)})
    case('center_crop_pad_axes', 'CenterCropPad', {'x': x}, {'s': np.array([2, 9], np.int64)}, {'axes': [-1, 1]})
    cols = f32(2, 2 * 2 * 3, 25)
    case('col2im_18', 'Col2Im', {'x': cols}, {'im': np.array([5, 6], np.int64), 'blk': np.array([2, 3], np.int64)},
         {'pads': [0, 1, 1, 0]})
    cols2 = f32(1, 3 * 2 * 2, 12)
    case('col2im_18_dilation_stride', 'Col2Im', {'x': cols2},
         {'im': np.array([7, 6], np.int64), 'blk': np.array([2, 2], np.int64)},
         {'dilations': [2, 1], 'strides': [2, 2], 'pads': [1, 0, 1, 1]})


def to_json(name, a):
    a = np.ascontiguousarray(a)
    return {'name': name, 'type': ORT_TYPES[a.dtype.type], 'dims': list(a.shape),
            'data': base64.b64encode(a.tobytes()).decode()}


def main():
    only = set(sys.argv[1:])
    for make in (reduces, splits, pads, resizes, norms, elementwise, shapes, constant_of_shape, quant, signal,
                 grids, crops):
        make()
    gen_order_fix()
    cases = [c for c in CASES if not only or c[0] in only]
    tmp = tempfile.mkdtemp(prefix='flowc-opsets-')
    jobs = []
    for name, model, inputs in cases:
        d = os.path.join(DATA, 'test_' + name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(os.path.join(d, 'test_data_set_0'))
        onnx.save(model, os.path.join(d, 'model.onnx'))
        for i, (n, a) in enumerate(inputs.items()):
            t = numpy_helper.from_array(a, n)
            with open(os.path.join(d, 'test_data_set_0', 'input_%d.pb' % i), 'wb') as f:
                f.write(t.SerializeToString())
        jobs.append({'model': os.path.join(d, 'model.onnx'), 'inputs': [to_json(n, a) for n, a in inputs.items()],
                     'out': os.path.join(tmp, name + '.json')})
    job_file = os.path.join(tmp, 'jobs.json')
    with open(job_file, 'w') as f:
        json.dump(jobs, f)
    subprocess.run(['node', os.path.join(HERE, 'ort_outputs.js'), job_file], check=True)
    for (name, model, inputs), job in zip(cases, jobs):
        d = os.path.join(DATA, 'test_' + name, 'test_data_set_0')
        outs = json.load(open(job['out']))
        for i, o in enumerate(outs):
            a = np.frombuffer(base64.b64decode(o['data']), NP_OF_ORT[o['type']]).reshape(o['dims'])
            with open(os.path.join(d, 'output_%d.pb' % i), 'wb') as f:
                f.write(numpy_helper.from_array(a, model.graph.output[i].name).SerializeToString())
    shutil.rmtree(tmp)
    print('%d cases in %s' % (len(cases), DATA))


if __name__ == '__main__':
    main()
