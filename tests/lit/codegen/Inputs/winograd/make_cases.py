#!/usr/bin/python3
"""make_cases.py OUTDIR — writes the ONNX backend-style cases of tests/lit/codegen/winograd.test:
3×3 stride-1 convolutions with constant weights (so codegen/kernel_winograd.c may take them), a bias,
and a residual Add + Relu that passes/fuse_epilogue.c folds into the conv's epilogue. Inputs, weights,
bias and residual are positive, so every output is a sum of positive terms and `flowc check`'s relative
tolerance (1e-3) applies to all of them: a wrong tap, tile or transform is off by O(1). Expected outputs
are computed in float64 here. Run with Debian's /usr/bin/python3 (numpy, onnx)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CASES = {
    # name: (N, C, H, W, M, pads [top, left, bottom, right])
    "f4_residual": (2, 24, 14, 11, 24, [1, 1, 1, 1]),  # F(4×4): odd tile rows, a cut last tile column
    "f2_small": (2, 32, 7, 7, 32, [1, 1, 1, 1]),       # F(2×2): a 7×7 image
}


def conv(x, w, b, pads):
    n, c, h, wd = x.shape
    pt, pl, pb, pr = pads
    xp = np.zeros((n, c, h + pt + pb, wd + pl + pr))
    xp[:, :, pt:pt + h, pl:pl + wd] = x
    oh, ow = h + pt + pb - 2, wd + pl + pr - 2
    y = np.zeros((n, w.shape[0], oh, ow))
    for ky in range(3):
        for kx in range(3):
            y += np.einsum("mc,nchw->nmhw", w[:, :, ky, kx], xp[:, :, ky:ky + oh, kx:kx + ow])
    return y + b[None, :, None, None]


def write(out, name, n, c, h, wd, m, pads, seed):
    rng = np.random.default_rng(seed)
    oh, ow = h + pads[0] + pads[2] - 2, wd + pads[1] + pads[3] - 2
    x = rng.uniform(0.5, 1.5, (n, c, h, wd)).astype(np.float32)
    r = rng.uniform(0.5, 1.5, (n, m, oh, ow)).astype(np.float32)
    w = rng.uniform(0.01, 0.1, (m, c, 3, 3)).astype(np.float32)
    b = rng.uniform(0.1, 0.5, m).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["y0"], kernel_shape=[3, 3], pads=pads, name="conv"),
        helper.make_node("Add", ["y0", "r"], ["y1"], name="add"),
        helper.make_node("Relu", ["y1"], ["y"], name="relu"),
    ]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
                                        helper.make_tensor_value_info("r", TensorProto.FLOAT, r.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, m, oh, ow])],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    y = np.maximum(conv(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), pads) + r, 0)
    for i, (t, nm) in enumerate([(x, "x"), (r, "r")]):
        with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(t, nm).SerializeToString())
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y.astype(np.float32), "y").SerializeToString())


if __name__ == "__main__":
    for seed, (name, args) in enumerate(sorted(CASES.items())):
        write(sys.argv[1], name, *args[:5], args[5], seed)
