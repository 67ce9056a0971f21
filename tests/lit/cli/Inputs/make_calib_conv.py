"""A small CNN at awkward sizes for calibrate-conv.test, with calibration samples and a test input.

x [2, 6, 11, 13] -> conv 3x3 stride 2 pad 1, 2 groups, no bias (10 channels) -> relu -> depthwise 3x3 pad 1
with bias -> relu -> max_pool 2x2 -> 1x1 conv to 5 channels (no relu: a signed output) -> y [2, 5, 3, 3].
Five samples in DIR/s<k>/x.npy, one test input DIR/../test.npy, all standard normal (seed 1).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(1)
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 11, 13])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 3, 3])
inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in [
    ("w1", rng.standard_normal((10, 3, 3, 3)) * 0.3), ("w2", rng.standard_normal((10, 1, 3, 3)) * 0.3),
    ("b2", rng.standard_normal(10)), ("w3", rng.standard_normal((5, 10, 1, 1)) * 0.3)]]
nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="grouped", group=2, strides=[2, 2], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c1"], ["r1"], name="r1"),
         helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="dw", group=10, pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c2"], ["r2"], name="r2"),
         helper.make_node("MaxPool", ["r2"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Conv", ["p", "w3"], ["y"], name="pw")]
model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits), opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "m.onnx"))
for k in range(5):
    os.makedirs(os.path.join(out, "calib", f"s{k}"), exist_ok=True)
    np.save(os.path.join(out, "calib", f"s{k}", "x.npy"), rng.standard_normal((2, 6, 11, 13)).astype(np.float32))
np.save(os.path.join(out, "test.npy"), rng.standard_normal((2, 6, 11, 13)).astype(np.float32))
