# Writes small ONNX models with control flow and recurrent layers for the import tests of lower_control.c and
# lower_rnn.c: make_control_models.py KIND OUT.onnx
#   gru_bidir        GRU-14 bidirectional, seq 20, batch 2, input 3, hidden 4, constant weights
#   loop_runtime     Loop with a run-time trip count and condition, one carried value, reading outer x
#   loop_nocond      Loop with a trip count and no condition input whose body yields a constant false
#   loop_scan_dyn    Loop with a scan output and a run-time trip count (refused: the length is not static)
#   loop_grow        Loop whose carried value grows by a Concat each iteration (refused: not static)
#   loop_if_nested   Loop (trip 3) whose body holds an If reading w from the outermost scope
#   scan_axes        Scan-16 with a scan input along axis 1, reversed, and a scan output along axis 1
#   if_runtime       If on a run-time condition; then x + 1, else x * x
#   if_const         If on a constant condition (inlined)
#   if_mismatch      If whose branches yield different shapes (refused)
#   if_deep          65 Ifs on a run-time condition, each in the then branch of the one before
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64
B = TensorProto.BOOL
node = helper.make_node


def save(nodes, inputs, outputs, path, opset, inits=()):
    graph = helper.make_graph(nodes, 'g', inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
    model.ir_version = 8
    with open(path, 'wb') as f:
        f.write(model.SerializeToString())


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def tensor(name, values, dtype=np.float32):
    return numpy_helper.from_array(np.array(values, dtype), name)


def constant(out, values, dtype=np.float32):
    return node('Constant', [], [out], value=tensor(out + '_v', values, dtype))


def loop_body(nodes, extra_inputs, outputs):
    """A Loop body graph: (iteration, condition, carried...) -> (condition, carried..., scans...)."""
    inputs = [vi('i', I64, []), vi('c', B, [])] + extra_inputs
    return helper.make_graph(nodes, 'body', inputs, outputs)


def build(kind, path):
    if kind == 'gru_bidir':
        rng = np.random.default_rng(3)
        inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
                 for n, s in (('W', (2, 12, 3)), ('R', (2, 12, 4)), ('Bias', (2, 24)))]
        save([node('GRU', ['X', 'W', 'R', 'Bias'], ['Y', 'Y_h'], name='gru', hidden_size=4,
                   direction='bidirectional')],
             [vi('X', F, [20, 2, 3])], [vi('Y', F, [20, 2, 2, 4]), vi('Y_h', F, [2, 2, 4])], path, 14, inits)
    elif kind == 'loop_runtime':
        body = loop_body([node('Add', ['y', 'x'], ['y2']), node('Identity', ['c'], ['c2'])],
                         [vi('y', F, [3])], [vi('c2', B, []), vi('y2', F, [3])])
        save([node('Loop', ['M', 'cond', 'y0'], ['y_end'], name='loop', body=body)],
             [vi('M', I64, []), vi('cond', B, []), vi('y0', F, [3]), vi('x', F, [3])], [vi('y_end', F, [3])],
             path, 13)
    elif kind == 'loop_nocond':
        body = loop_body([node('Add', ['y', 'y'], ['y2']), constant('stop', False, np.bool_)],
                         [vi('y', F, [3])], [vi('stop', B, []), vi('y2', F, [3])])
        save([node('Loop', ['M', '', 'y0'], ['y_end'], name='loop', body=body)],
             [vi('M', I64, []), vi('y0', F, [3])], [vi('y_end', F, [3])], path, 13)
    elif kind == 'loop_scan_dyn':
        body = loop_body([node('Add', ['y', 'x'], ['y2']), node('Identity', ['c'], ['c2']),
                          node('Identity', ['y2'], ['s'])],
                         [vi('y', F, [3])], [vi('c2', B, []), vi('y2', F, [3]), vi('s', F, [3])])
        save([node('Loop', ['M', '', 'y0'], ['y_end', 'ys'], name='loop', body=body)],
             [vi('M', I64, []), vi('y0', F, [3]), vi('x', F, [3])], [vi('y_end', F, [3]), vi('ys', F, [None, 3])],
             path, 13)
    elif kind == 'loop_grow':
        body = loop_body([node('Concat', ['y', 'y'], ['y2'], axis=0), node('Identity', ['c'], ['c2'])],
                         [vi('y', F, None)], [vi('c2', B, []), vi('y2', F, None)])
        save([node('Loop', ['M', '', 'y0'], ['y_end'], name='loop', body=body)],
             [vi('M', I64, []), vi('y0', F, [2])], [vi('y_end', F, None)], path, 13)
    elif kind == 'loop_if_nested':
        then_g = helper.make_graph([node('Mul', ['y', 'w'], ['t'])], 'then', [], [vi('t', F, [2])])
        else_g = helper.make_graph([node('Sub', ['y', 'w'], ['e'])], 'else', [], [vi('e', F, [2])])
        body = loop_body([node('ReduceSum', ['y'], ['s'], keepdims=0), constant('zero', 0.0),
                          node('Greater', ['s', 'zero'], ['pos']),
                          node('If', ['pos'], ['y2'], name='branch', then_branch=then_g, else_branch=else_g),
                          node('Identity', ['c'], ['c2'])],
                         [vi('y', F, [2])], [vi('c2', B, []), vi('y2', F, [2])])
        save([constant('M', 3, np.int64), node('Loop', ['M', '', 'y0'], ['y_end'], name='loop', body=body)],
             [vi('y0', F, [2]), vi('w', F, [2])], [vi('y_end', F, [2])], path, 13)
    elif kind == 'scan_axes':
        body = helper.make_graph([node('Add', ['acc', 'xt'], ['acc2']), node('Identity', ['acc2'], ['out'])],
                                 'body', [vi('acc', F, [2]), vi('xt', F, [2])], [vi('acc2', F, [2]), vi('out', F, [2])])
        save([node('Scan', ['init', 'x'], ['final', 'ys'], name='scan', body=body, num_scan_inputs=1,
                   scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[-1])],
             [vi('init', F, [2]), vi('x', F, [2, 5])], [vi('final', F, [2]), vi('ys', F, [2, 5])], path, 16)
    elif kind in ('if_runtime', 'if_const', 'if_mismatch'):
        then_g = helper.make_graph([constant('one', 1.0), node('Add', ['x', 'one'], ['t'])], 'then', [],
                                   [vi('t', F, [3])])
        if kind == 'if_mismatch':
            else_g = helper.make_graph([node('Concat', ['x', 'x'], ['e'], axis=0)], 'else', [], [vi('e', F, [6])])
        else:
            else_g = helper.make_graph([node('Mul', ['x', 'x'], ['e'])], 'else', [], [vi('e', F, [3])])
        nodes = [node('If', ['cond'], ['y'], name='branch', then_branch=then_g, else_branch=else_g)]
        inputs = [vi('x', F, [3])]
        if kind == 'if_const':
            nodes.insert(0, constant('cond', False, np.bool_))
        else:
            inputs.insert(0, vi('cond', B, []))
        save(nodes, inputs, [vi('y', F, None)], path, 13)
    elif kind == 'if_deep':
        then_nodes, then_out = [node('Identity', ['x'], ['t'])], 't'
        for level in range(65):
            then_g = helper.make_graph(then_nodes, f'then{level}', [], [vi(then_out, F, [3])])
            else_g = helper.make_graph([node('Neg', ['x'], [f'e{level}'])], f'else{level}', [],
                                       [vi(f'e{level}', F, [3])])
            then_nodes = [node('If', ['cond'], [f'o{level}'], name=f'if{64 - level}', then_branch=then_g,
                               else_branch=else_g)]
            then_out = f'o{level}'
        save(then_nodes, [vi('cond', B, []), vi('x', F, [3])], [vi(then_out, F, [3])], path, 13)
    else:
        sys.exit('make_control_models.py: unknown kind ' + kind)


build(sys.argv[1], sys.argv[2])
