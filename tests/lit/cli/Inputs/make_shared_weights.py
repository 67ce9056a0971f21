"""Layers that share their weights, for calibrate-shared.test, with calibration samples and a test input.

x [1, 32, 12, 12] -> conv 3x3 pad 1 by w (32 -> 32, bias b1) -> relu -> the same conv by w again (bias b2) ->
relu -> 1x1 conv to 128 channels -> relu -> global average pool -> flatten [1, 128] -> MatMul by m [128, 128]
-> relu -> MatMul by m again -> y [1, 128]. Each shared weight is read by two ops whose activations have
their own ranges. Four samples in DIR/s<k>/x.npy, a test input DIR/../test.npy, standard normal (seed 5).
DIR/unshared.onnx is the same model with the second conv and the second MatMul reading -w and -m: the same
sizes, but weights of their own.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(5)
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 12, 12])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 128])
inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in [
    ("w", rng.standard_normal((32, 32, 3, 3)) * 0.08), ("b1", rng.standard_normal(32) * 0.1),
    ("b2", rng.standard_normal(32) * 0.1), ("p", rng.standard_normal((128, 32, 1, 1)) * 0.2),
    ("m", rng.standard_normal((128, 128)) * 0.12)]]
nodes = [helper.make_node("Conv", ["x", "w", "b1"], ["c1"], name="conv_a", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c1"], ["r1"]),
         helper.make_node("Conv", ["r1", "w", "b2"], ["c2"], name="conv_b", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c2"], ["r2"]),
         helper.make_node("Conv", ["r2", "p"], ["c3"], name="expand"),
         helper.make_node("Relu", ["c3"], ["r3"]),
         helper.make_node("GlobalAveragePool", ["r3"], ["g"]),
         helper.make_node("Flatten", ["g"], ["f"]),
         helper.make_node("MatMul", ["f", "m"], ["h"], name="fc_a"),
         helper.make_node("Relu", ["h"], ["rh"]),
         helper.make_node("MatMul", ["rh", "m"], ["y"], name="fc_b")]
model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits), opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "m.onnx"))
neg = [numpy_helper.from_array(-numpy_helper.to_array(t), t.name + "_neg") for t in inits if t.name in ("w", "m")]
for n in nodes:
    if n.name in ("conv_b", "fc_b"):
        n.input[1] += "_neg"
model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits + neg),
                          opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "unshared.onnx"))
for k in range(4):
    os.makedirs(os.path.join(out, "calib", f"s{k}"), exist_ok=True)
    np.save(os.path.join(out, "calib", f"s{k}", "x.npy"), rng.standard_normal((1, 32, 12, 12)).astype(np.float32))
np.save(os.path.join(out, "test.npy"), rng.standard_normal((1, 32, 12, 12)).astype(np.float32))
