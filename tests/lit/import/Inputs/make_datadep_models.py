# Writes one-node ONNX models for the import tests of lower_datadep.c and lower_tfidf.c, for attribute
# forms that Debian's libonnx-testdata does not cover: make_datadep_models.py KIND OUT.onnx
# Kinds marked (+x) also write OUT.onnx.x.npy, a value to --bind to the model's input 'x'.
#   tfidf_idf       TfIdfVectorizer IDF with weights over a [6] i64 input; two n-grams share column 1, the
#                   3-gram level is above max_gram_length (its column stays zero), unigrams and bigrams
#                   with max_skip_count 1 (+x)
#   tfidf_tfidf     TfIdfVectorizer TFIDF with weights, min_gram_length 2, over a [2, 4] i32 input (+x)
#   tfidf_strings   TfIdfVectorizer with pool_strings (over an i64 input)
#   tfidf_dup       TfIdfVectorizer whose pool holds the bigram [1, 2] twice
#   nonzero_init    NonZero of an f32 initializer [2, 3] with a NaN and a -0
#   unique_unbound  Unique of a graph input (needs --bind) (+x)
#   nms_defaults    NonMaxSuppression with only boxes, scores and max_output_boxes_per_class (initializers):
#                   iou_threshold 0 and no score threshold
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I32 = TensorProto.INT32
I64 = TensorProto.INT64


def save(nodes, inputs, outputs, path, opset, inits=()):
    graph = helper.make_graph(nodes, 'g', inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
    model.ir_version = 7
    with open(path, 'wb') as f:
        f.write(model.SerializeToString())


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=op.lower(), **attrs)


def build(kind, path):
    if kind == 'tfidf_idf':
        # ids: unigrams 0:[1] 1:[2], bigrams 2:[1, 2] 3:[2, 3], trigram 4:[1, 2, 3]; ids 1 and 3 share column 1.
        save([node('TfIdfVectorizer', ['x'], ['y'], mode='IDF', min_gram_length=1, max_gram_length=2,
                   max_skip_count=1, ngram_counts=[0, 2, 6], ngram_indexes=[0, 1, 2, 1, 3],
                   pool_int64s=[1, 2, 1, 2, 2, 3, 1, 2, 3], weights=[0.5, 2.0, 4.0, 8.0])],
             [vi('x', I64, [6])], [vi('y', F, [4])], path, 9)
        np.save(path + '.x.npy', np.array([1, 2, 3, 1, 5, 2], dtype=np.int64))
    elif kind == 'tfidf_tfidf':
        save([node('TfIdfVectorizer', ['x'], ['y'], mode='TFIDF', min_gram_length=2, max_gram_length=2,
                   max_skip_count=0, ngram_counts=[0, 1], ngram_indexes=[0, 1, 2], pool_int64s=[7, 7, 8, 8, 7],
                   weights=[10.0, 0.25, 3.0])],
             [vi('x', I32, [2, 4])], [vi('y', F, [2, 3])], path, 9)
        np.save(path + '.x.npy', np.array([[7, 8, 7, 8], [8, 7, 7, 7]], dtype=np.int32))
    elif kind == 'tfidf_strings':
        save([node('TfIdfVectorizer', ['x'], ['y'], mode='TF', min_gram_length=1, max_gram_length=1,
                   max_skip_count=0, ngram_counts=[0], ngram_indexes=[0], pool_strings=['a'])],
             [vi('x', I64, [3])], [vi('y', F, [1])], path, 9)
    elif kind == 'tfidf_dup':
        save([node('TfIdfVectorizer', ['x'], ['y'], mode='TF', min_gram_length=2, max_gram_length=2,
                   max_skip_count=0, ngram_counts=[0, 0], ngram_indexes=[0, 1], pool_int64s=[1, 2, 1, 2])],
             [vi('x', I64, [3])], [vi('y', F, [2])], path, 9)
    elif kind == 'nonzero_init':
        c = numpy_helper.from_array(np.array([[0, np.nan, -0.0], [2, 0, 3]], dtype=np.float32), 'c')
        save([node('NonZero', ['c'], ['y'])], [], [vi('y', I64, None)], path, 13, [c])
    elif kind == 'unique_unbound':
        save([node('Unique', ['x'], ['y', '', 'inv'], sorted=0)], [vi('x', I64, [5])],
             [vi('y', I64, None), vi('inv', I64, None)], path, 11)
        np.save(path + '.x.npy', np.array([4, -1, 4, 4, 0], dtype=np.int64))
    elif kind == 'nms_defaults':
        boxes = numpy_helper.from_array(np.array([[[0, 0, 1, 1], [0, 0.5, 1, 1.5], [0, 5, 1, 6]]], dtype=np.float32),
                                        'boxes')
        scores = numpy_helper.from_array(np.array([[[0.5, 0.9, 0.1]]], dtype=np.float32), 'scores')
        mo = numpy_helper.from_array(np.array(5, dtype=np.int64), 'mo')
        save([node('NonMaxSuppression', ['boxes', 'scores', 'mo'], ['sel'])], [], [vi('sel', I64, None)], path, 11,
             [boxes, scores, mo])
    else:
        sys.exit('make_datadep_models.py: unknown kind ' + kind)


build(sys.argv[1], sys.argv[2])
