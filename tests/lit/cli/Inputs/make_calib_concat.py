"""An inception block feeding two ShuffleNet units, for calibrate-concat.test, with calibration samples and a
test input.

x [2, 4, 9, 11] -> conv 3x3 pad 1 (8 channels) -> relu -> inception block: 1x1 conv (6), 3x3 conv pad 1 (10)
and max_pool 3x3 stride 1 pad 1 -> 1x1 conv (4), each with relu, concatenated (20 channels) -> two ShuffleNet
units: Split in halves of 10, the second through 1x1 conv + relu, depthwise 3x3 pad 1, 1x1 conv + relu,
concatenated with the first half and shuffled (reshape [N, 2, 10, H, W], transpose, reshape) -> concatenated
with itself downsampled (3x3 stride-2 conv to 8 channels + relu, 5x6) and resized back to 9x11 (nearest,
asymmetric, floor: a feature pyramid's top-down path) -> 1x1 conv to 5 channels (no relu: a signed output)
-> y [2, 5, 9, 11]. Five samples in DIR/calib/s<k>/x.npy, one test input
DIR/test.npy, all standard normal (seed 3).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(3)
N, H, W = 2, 9, 11
inits, nodes = [], []


def const(name, a, dtype=np.float32):
    inits.append(numpy_helper.from_array(np.asarray(a, dtype), name))
    return name


def conv(name, x, cin, cout, k, relu=True, group=1):
    w = const(name + "_w", rng.standard_normal((cout, cin // group, k, k)) * (1.5 / np.sqrt(cin // group * k * k)))
    b = const(name + "_b", rng.standard_normal(cout) * 0.1)
    nodes.append(helper.make_node("Conv", [x, w, b], [name], name=name, group=group, pads=[k // 2] * 4))
    if not relu:
        return name
    nodes.append(helper.make_node("Relu", [name], [name + "_r"], name=name + "_relu"))
    return name + "_r"


def unit(name, x):
    nodes.append(helper.make_node("Split", [x], [name + "_a", name + "_b"], name=name + "_split", axis=1))
    b = conv(name + "_pw1", name + "_b", 10, 10, 1)
    b = conv(name + "_dw", b, 10, 10, 3, relu=False, group=10)
    b = conv(name + "_pw2", b, 10, 10, 1)
    nodes.append(helper.make_node("Concat", [name + "_a", b], [name + "_cat"], name=name + "_concat", axis=1))
    shape5 = const(name + "_s5", [N, 2, 10, H, W], np.int64)
    shape4 = const(name + "_s4", [N, 20, H, W], np.int64)
    nodes.append(helper.make_node("Reshape", [name + "_cat", shape5], [name + "_r5"], name=name + "_reshape5"))
    nodes.append(helper.make_node("Transpose", [name + "_r5"], [name + "_t"], name=name + "_shuffle", perm=[0, 2, 1, 3, 4]))
    nodes.append(helper.make_node("Reshape", [name + "_t", shape4], [name], name=name + "_reshape4"))
    return name


stem = conv("stem", "x", 4, 8, 3)
b1 = conv("b1", stem, 8, 6, 1)
b2 = conv("b2", stem, 8, 10, 3)
nodes.append(helper.make_node("MaxPool", [stem], ["pool"], name="pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
b3 = conv("b3", "pool", 8, 4, 1)
nodes.append(helper.make_node("Concat", [b1, b2, b3], ["inception"], name="inception", axis=1))
u = unit("u2", unit("u1", "inception"))
w = const("down_w", rng.standard_normal((8, 20, 3, 3)) * (1.5 / np.sqrt(180)))
nodes.append(helper.make_node("Conv", [u, w], ["down"], name="down", strides=[2, 2], pads=[1, 1, 1, 1]))
nodes.append(helper.make_node("Relu", ["down"], ["down_r"], name="down_relu"))
sizes = const("up_sizes", [N, 8, H, W], np.int64)
nodes.append(helper.make_node("Resize", ["down_r", "", "", sizes], ["up"], name="up", mode="nearest",
                              coordinate_transformation_mode="asymmetric", nearest_mode="floor"))
nodes.append(helper.make_node("Concat", [u, "up"], ["fpn"], name="fpn", axis=1))
conv("y", "fpn", 28, 5, 1, relu=False)
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, 4, H, W])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [N, 5, H, W])
model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits), opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "m.onnx"))
for k in range(5):
    os.makedirs(os.path.join(out, "calib", f"s{k}"), exist_ok=True)
    np.save(os.path.join(out, "calib", f"s{k}", "x.npy"), rng.standard_normal((N, 4, H, W)).astype(np.float32))
np.save(os.path.join(out, "test.npy"), rng.standard_normal((N, 4, H, W)).astype(np.float32))
