"""An LSTM for calibrate-rnn.test, with calibration samples and a test input.

x [9, 1, 20] (seq 9, batch 1) -> LSTM (hidden 64, forward, W [1, 256, 20], R [1, 256, 64], bias) -> Y [9, 1, 1, 64]
-> MatMul by a constant [64, 48] -> y [9, 1, 1, 48]. The input projection (x·Wᵀ for all steps, 20 x 256) is below
quantize_dynamic's size floor; the recurrent h·Rᵀ (64 x 256, inside the loop body) and the head (64 x 48) are not.
Weights uniform in +-1/8 (hidden 64: PyTorch's init scale). Eight samples in DIR/s<k>/x.npy and one test input
DIR/../test.npy, standard normal (seed 3).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(3)
S, B, I, H, O = 9, 1, 20, 64, 48
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [S, B, I])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [S, 1, B, O])
u = lambda *shape: rng.uniform(-0.125, 0.125, shape)
inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in [
    ("W", u(1, 4 * H, I)), ("R", u(1, 4 * H, H)), ("B", u(1, 8 * H)), ("head", u(H, O) * 4)]]
nodes = [helper.make_node("LSTM", ["x", "W", "R", "B"], ["Y"], name="lstm", hidden_size=H),
         helper.make_node("MatMul", ["Y", "head"], ["y"], name="head")]
model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits), opset_imports=[helper.make_opsetid("", 14)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "m.onnx"))
for k in range(8):
    os.makedirs(os.path.join(out, "calib", f"s{k}"), exist_ok=True)
    np.save(os.path.join(out, "calib", f"s{k}", "x.npy"), rng.standard_normal((S, B, I)).astype(np.float32))
np.save(os.path.join(out, "test.npy"), rng.standard_normal((S, B, I)).astype(np.float32))
