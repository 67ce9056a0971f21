"""A 3-D CNN for calibrate-conv3d.test (video and volume models): x [1, 8, 6, 10, 10] -> Conv3d 3x3x3 pad 1 to 48
channels -> relu -> Conv3d 3x3x3 pad 1 to 64 channels -> y. Weights 48·8·27 + 64·48·27 = 93312. Four samples in
DIR/s<k>/x.npy and a test input DIR/../test.npy, standard normal (seed 7).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(7)
shape = [1, 8, 6, 10, 10]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 6, 10, 10])
inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in [
    ("w1", rng.standard_normal((48, 8, 3, 3, 3)) * 0.1), ("w2", rng.standard_normal((64, 48, 3, 3, 3)) * 0.05)]]
nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1] * 6),
         helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
         helper.make_node("Conv", ["r1", "w2"], ["y"], name="conv2", pads=[1] * 6)]
model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits), opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "m.onnx"))
for k in range(4):
    os.makedirs(os.path.join(out, "calib", f"s{k}"), exist_ok=True)
    np.save(os.path.join(out, "calib", f"s{k}", "x.npy"), rng.standard_normal(shape).astype(np.float32))
np.save(os.path.join(out, "test.npy"), rng.standard_normal(shape).astype(np.float32))
