"""qoperator_check.py FLOWC DIR — onnxruntime's QOperator ops (com.microsoft QLinearAdd, QLinearMul,
QLinearConcat, QLinearAveragePool, QLinearGlobalAveragePool, QLinearLeakyRelu, QLinearSigmoid) in one
model, run by `flowc run` and compared with NumPy doing what the op's contrib schema says: dequantize the
inputs ((q - zp) * scale in f32), the float op, quantize the result (round half to even, saturate).
Add, Mul, Concat and LeakyRelu must match exactly; the pools and Sigmoid within one quantisation step
(their f32 sums and exp may round differently). Prints OK or the first mismatch."""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

flowc, d = sys.argv[1], sys.argv[2]
rng = np.random.RandomState(3)
S = [1, 3, 5, 7]
params = {"as": (0.03, 120), "bs": (0.05, 100), "cs": (0.06, 128), "ms": (0.2, 10), "ps": (0.025, 117),
          "gs": (0.02, 130), "ls": (0.04, 90), "ss": (1 / 256, 0), "ys": (0.07, 125)}
inits = []
for k, (s, z) in params.items():
    inits += [numpy_helper.from_array(np.array(s, np.float32), k), numpy_helper.from_array(np.array(z, np.uint8), k + "z")]
N = lambda op, ins, out, **kw: helper.make_node(op, ins, [out], name=out, domain="com.microsoft", **kw)
nodes = [
    N("QLinearAdd", ["a", "as", "asz", "b", "bs", "bsz", "cs", "csz"], "add"),
    N("QLinearMul", ["a", "as", "asz", "b", "bs", "bsz", "ms", "msz"], "mul"),
    N("QLinearAveragePool", ["add", "cs", "csz", "ps", "psz"], "pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
      strides=[2, 2], count_include_pad=0),
    N("QLinearGlobalAveragePool", ["mul", "ms", "msz", "gs", "gsz"], "gap", channels_last=0),
    N("QLinearLeakyRelu", ["a", "as", "asz", "ls", "lsz"], "leaky", alpha=0.1),
    N("QLinearSigmoid", ["b", "bs", "bsz", "ss", "ssz"], "sig"),
    N("QLinearConcat", ["ys", "ysz", "a", "as", "asz", "leaky", "ls", "lsz"], "cat", axis=1),
]
outs = ["add", "mul", "pool", "gap", "leaky", "sig", "cat"]
g = helper.make_graph(nodes, "qop", [helper.make_tensor_value_info(n, TensorProto.UINT8, S) for n in "ab"],
                      [helper.make_tensor_value_info(o, TensorProto.UINT8, None) for o in outs], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
m.ir_version = 7
onnx.save(m, os.path.join(d, "qop.onnx"))
a = rng.randint(0, 256, S).astype(np.uint8)
b = rng.randint(0, 256, S).astype(np.uint8)
np.save(os.path.join(d, "a.npy"), a)
np.save(os.path.join(d, "b.npy"), b)
subprocess.run([flowc, "run", os.path.join(d, "qop.onnx"), "--input", "a=" + os.path.join(d, "a.npy"), "--input",
                "b=" + os.path.join(d, "b.npy"), "--output-dir", os.path.join(d, "out")], check=True)

f32 = np.float32
dq = lambda q, k: (q.astype(np.int32) - params[k][1]).astype(f32) * f32(params[k][0])
q = lambda y, k: np.clip(np.round(y.astype(f32) / f32(params[k][0])) + params[k][1], 0, 255).astype(np.uint8)
A, B = dq(a, "as"), dq(b, "bs")
add = q(A + B, "cs")
mul = q(A * B, "ms")
xp = np.pad(dq(add, "cs"), ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=np.nan)
pool = np.zeros((1, 3, 3, 4), f32)
for i in range(3):
    for j in range(4):
        w = xp[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3]
        pool[:, :, i, j] = np.nanmean(w, axis=(2, 3))
ref = {"add": (add, 0), "mul": (mul, 0), "pool": (q(pool, "ps"), 1),
       "gap": (q(dq(mul, "ms").mean(axis=(2, 3), keepdims=True), "gs"), 1),
       "leaky": (q(np.where(A >= 0, A, f32(0.1) * A), "ls"), 0), "sig": (q(1 / (1 + np.exp(-B)), "ss"), 1)}
ref["cat"] = (q(np.concatenate([A, dq(ref["leaky"][0], "ls")], axis=1), "ys"), 0)
for i, o in enumerate(outs):
    got = np.load(os.path.join(d, "out", "output_%d.npy" % i))
    want, tol = ref[o]
    if got.shape != want.shape or got.dtype != np.uint8:
        sys.exit("%s: got %s %s, want %s uint8" % (o, got.shape, got.dtype, want.shape))
    diff = np.abs(got.astype(int) - want.astype(int)).max()
    if diff > tol:
        sys.exit("%s: off by %d steps (allowed %d)" % (o, diff, tol))
print("OK")
