"""make_qdq_conv.py OUT [C M] — a small QDQ model: x f32 [1, C, 9, 7] -> QuantizeLinear (u8) -> DequantizeLinear
-> Conv (M output channels, int8 weights per output channel through DequantizeLinear, f32 bias, 3x3, pads 1)
-> Relu -> QuantizeLinear (u8) -> DequantizeLinear -> y. C = 3, M = 5 by default. Weights are fixed by a
seed."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

C, M = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (3, 5)
rng = np.random.RandomState(7)
w = rng.randint(-127, 128, size=(M, C, 3, 3)).astype(np.int8)
ws = (rng.rand(M).astype(np.float32) * 0.01 + 0.002).astype(np.float32)
b = rng.randn(M).astype(np.float32) * 0.1
inits = [
    numpy_helper.from_array(np.array(0.05, np.float32), "xs"), numpy_helper.from_array(np.array(128, np.uint8), "xz"),
    numpy_helper.from_array(w, "wq"), numpy_helper.from_array(ws, "ws"),
    numpy_helper.from_array(np.zeros(M, np.int8), "wz"), numpy_helper.from_array(b, "b"),
    numpy_helper.from_array(np.array(0.1, np.float32), "ys"), numpy_helper.from_array(np.array(0, np.uint8), "yz"),
]
nodes = [
    helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="qx"),
    helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dqx"),
    helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], name="dqw", axis=0),
    helper.make_node("Conv", ["xd", "wd", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c"], ["r"], name="relu"),
    helper.make_node("QuantizeLinear", ["r", "ys", "yz"], ["yq"], name="qy"),
    helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], name="dqy"),
]
g = helper.make_graph(nodes, "qdq_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 9, 7])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, M, 9, 7])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 7
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1])
