"""Calibration folders for calibrate.test, good and bad, under the folder given (argv[1])."""
import os
import sys

import numpy as np
from onnx import numpy_helper

root = sys.argv[1]


def put(path, arr):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if path.endswith(".pb"):
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(arr, "x").SerializeToString())
    else:
        np.save(path, arr)


a = np.array([[-1, 2, 0.5], [0, 0, 1]], np.float32)
b = np.array([[0.25, 3, -0.5], [1, 1, 1]], np.float32)
put(f"{root}/good/s0/x.npy", a)
put(f"{root}/good/s1/input_0.pb", b)
put(f"{root}/stacked/x.npy", np.arange(-4, 14, dtype=np.float32).reshape(6, 3) / 2)
put(f"{root}/missing/s0/x.npy", a)
os.makedirs(f"{root}/missing/s1", exist_ok=True)
put(f"{root}/extra/s0/x.npy", a)
put(f"{root}/extra/s0/z.npy", a)
put(f"{root}/twice/s0/input_0.pb", a)
put(f"{root}/twice/s0/x.npy", a)
put(f"{root}/shape/s0/x.npy", a.reshape(3, 2))
put(f"{root}/dtype/s0/x.npy", a.astype(np.float64))
put(f"{root}/stack5/x.npy", np.zeros((5, 3), np.float32))
put(f"{root}/mixed/s0/x.npy", a)
put(f"{root}/mixed/x.npy", a)
os.makedirs(f"{root}/corrupt/s0", exist_ok=True)
with open(f"{root}/corrupt/s0/x.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00garbage")
# Gaussian values (seed 0) and one outlier at 50: the methods disagree on purpose.
rng = np.random.default_rng(0)
g = rng.standard_normal((4000, 3)).astype(np.float32)
g[1234, 1] = 50.0
put(f"{root}/outlier/x.npy", g)
