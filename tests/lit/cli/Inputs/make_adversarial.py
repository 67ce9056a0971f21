# Writes hostile inputs for tests/lit/cli/adversarial.test: make_adversarial.py KIND OUT
#   claim_raw, claim_typed, claim_external   a model whose initializer 'w' claims 2^30 floats but holds 4
#                  bytes (raw_data, float_data, or an external file OUT's folder/w.bin of 4 bytes)
#   claim_pb       a TensorProto .pb claiming 2^30 floats with 4 bytes of raw_data
#   claim_npy      a .npy whose header claims 2^30 floats, followed by 4 bytes
#   relu           y = Relu(x), x and y f32[4]; with ir_version 1000000 for KIND relu_irv
#   comment_names  Relu whose input and output names hold '/*' and '*/' (C comment markers)
#   pad_huge       Pad of an f32[1] by 2^40 at the end: a 4 TiB result
#   onehot_huge    OneHot with depth 2^40: a 4 TiB result
#   unsupported    300 nodes of distinct unknown op types: a message longer than a diagnostic holds
#   deep_N         a graph input whose type nests sequences N levels deep (4 + 2N + 1 messages)
# Models are serialised without onnx.checker, which refuses some of them on purpose.
import os
import struct
import sys

import onnx
from onnx import TensorProto, helper


def model(graph, ir_version=8):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    m.ir_version = ir_version
    return m.SerializeToString()


def claim(kind):
    t = TensorProto()
    t.name = 'w'
    t.data_type = TensorProto.FLOAT
    t.dims.append(1 << 30)
    if kind == 'raw':
        t.raw_data = b'\0\0\0\0'
    elif kind == 'typed':
        t.float_data.append(1.0)
    else:
        t.data_location = TensorProto.EXTERNAL
        e = t.external_data.add()
        e.key, e.value = 'location', 'w.bin'
    return t


def claim_model(kind, out):
    x = helper.make_tensor_value_info('x', TensorProto.FLOAT, [1 << 30])
    y = helper.make_tensor_value_info('y', TensorProto.FLOAT, [1 << 30])
    g = helper.make_graph([helper.make_node('Add', ['x', 'w'], ['y'])], 'claim', [x], [y], [claim(kind)])
    if kind == 'external':
        with open(os.path.join(os.path.dirname(out) or '.', 'w.bin'), 'wb') as f:
            f.write(b'\0\0\0\0')
    return model(g)


def relu(x_name='x', y_name='y', ir_version=8):
    x = helper.make_tensor_value_info(x_name, TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info(y_name, TensorProto.FLOAT, [4])
    return model(helper.make_graph([helper.make_node('Relu', [x_name], [y_name], name='r')], 'relu', [x], [y]),
                 ir_version)


def huge(op):
    x = helper.make_tensor_value_info('x', TensorProto.FLOAT if op == 'Pad' else TensorProto.INT64, [1])
    if op == 'Pad':
        c = helper.make_tensor('pads', TensorProto.INT64, [2], [0, 1 << 40])
        node = helper.make_node('Pad', ['x', 'pads'], ['y'], name='pad')
        y = helper.make_tensor_value_info('y', TensorProto.FLOAT, None)
        inits = [c]
    else:
        depth = helper.make_tensor('depth', TensorProto.INT64, [], [1 << 40])
        values = helper.make_tensor('values', TensorProto.FLOAT, [2], [0.0, 1.0])
        node = helper.make_node('OneHot', ['x', 'depth', 'values'], ['y'], name='onehot')
        y = helper.make_tensor_value_info('y', TensorProto.FLOAT, None)
        inits = [depth, values]
    return model(helper.make_graph([node], op.lower(), [x], [y], inits))


def unsupported():
    x = helper.make_tensor_value_info('x', TensorProto.FLOAT, [4])
    nodes, prev = [], 'x'
    for i in range(300):
        out = 'y' if i == 299 else 't%d' % i
        nodes.append(helper.make_node('NoSuchOperatorNumber%03d' % i, [prev], [out], name='n%d' % i))
        prev = out
    y = helper.make_tensor_value_info('y', TensorProto.FLOAT, [4])
    return model(helper.make_graph(nodes, 'unsupported', [x], [y]))


def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7f, n >> 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def field(num, payload):
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def deep(levels):
    # Built from bytes: protobuf's Python runtime has a recursion limit of its own.
    t = onnx.TypeProto()
    t.tensor_type.elem_type = TensorProto.FLOAT
    data = t.SerializeToString()
    for _ in range(levels):
        data = field(4, field(1, data))  # TypeProto.sequence_type = 4, Sequence.elem_type = 1
    y = helper.make_tensor_value_info('y', TensorProto.FLOAT, [1])
    value = helper.make_tensor('v', TensorProto.FLOAT, [1], [1.0])
    g = helper.make_graph([helper.make_node('Constant', [], ['y'], value=value)], 'deep', [], [y])
    graph = g.SerializeToString() + field(11, field(1, b'x') + field(2, data))  # GraphProto.input = 11
    m = onnx.ModelProto()
    m.ir_version = 8
    m.opset_import.extend([helper.make_opsetid('', 13)])
    return m.SerializeToString() + field(7, graph)  # ModelProto.graph = 7


def npy_claim():
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1073741824,), }"
    header += b' ' * (63 - (10 + len(header)) % 64) + b'\n'
    return b'\x93NUMPY\x01\x00' + struct.pack('<H', len(header)) + header + b'\0\0\0\0'


kind, out = sys.argv[1], sys.argv[2]
if kind.startswith('claim_') and kind not in ('claim_pb', 'claim_npy'):
    data = claim_model(kind[len('claim_'):], out)
elif kind.startswith('deep_'):
    data = deep(int(kind[len('deep_'):]))
else:
    data = {
        'claim_pb': lambda: claim('raw').SerializeToString(),
        'claim_npy': npy_claim,
        'relu': relu,
        'relu_irv': lambda: relu(ir_version=1000000),
        'comment_names': lambda: relu('in/*put', 'out*/put'),
        'pad_huge': lambda: huge('Pad'),
        'onehot_huge': lambda: huge('OneHot'),
        'unsupported': unsupported,
    }[kind]()
with open(out, 'wb') as f:
    f.write(data)
