#!/usr/bin/python3
"""linear_weights.py — Linear layers whose transposed weights are packed at compile time whatever their size,
against PyTorch and a float64 NumPy reference, through `flowc run` (meson suite 'e2e').

  linear_weights.py --flowc FLOWC --work DIR

One model exported by PyTorch at test time: Linear(4096, N) on a [2, 4096] input for N = 4097 (a weight of
just over 64 MiB, the constant-folding size bound: PyTorch writes Gemm with transB=1, and the transpose must
still be folded so the matmul packs the weight at compile time), 1001 and 1, and Linear(512, 1001) on a
[2, 3, 512] input (PyTorch writes MatMul with the weight transposed at export). Awkward N: panels of the
microkernel cut at one column (4097), a remainder of 9 columns (1001) and a single column. The IR
after the passes must hold no transpose, and every output must match within rtol 1e-4 / atol 1e-5 of
PyTorch and of float64.
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
from torch import nn


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.wide = nn.Linear(4096, 4097)
        self.mid = nn.Linear(4096, 1001)
        self.one = nn.Linear(4096, 1)
        self.seq = nn.Linear(512, 1001)

    def forward(self, x, s):
        return self.wide(x), self.mid(x), self.one(x), self.seq(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flowc", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    torch.manual_seed(13)
    model = Heads().eval()
    x, s = torch.randn(2, 4096), torch.randn(2, 3, 512)
    path = os.path.join(a.work, "heads.onnx")
    with torch.no_grad():
        want = [y.numpy() for y in model(x, s)]
        torch.onnx.export(model, (x, s), path, opset_version=17, input_names=["x", "s"],
                          output_names=["wide", "mid", "one", "seq"], do_constant_folding=True)
    params = {n: p.detach().double().numpy() for n, p in model.named_parameters()}
    xd, sd = x.double().numpy(), s.double().numpy()
    ref = [xd @ params[f"{n}.weight"].T + params[f"{n}.bias"] for n in ("wide", "mid", "one")]
    ref.append(sd @ params["seq.weight"].T + params["seq.bias"])

    ir = subprocess.run([a.flowc, "build", path, "--emit", "ir"], capture_output=True, text=True)
    if ir.returncode != 0:
        sys.exit(f"FAIL flowc build --emit ir: {ir.stderr}")
    if '"flow.transpose"' in ir.stdout:
        sys.exit("FAIL a transpose is left at run time: the weights are not packed at compile time")

    files = []
    for name, v in (("x", x), ("s", s)):
        files.append(os.path.join(a.work, f"{name}.npy"))
        np.save(files[-1], v.numpy())
    failures = 0
    for threads in ("1", "2"):
        out = os.path.join(a.work, f"out{threads}")
        p = subprocess.run([a.flowc, "run", path, *files, "--threads", threads, "--output-dir", out],
                           capture_output=True, text=True, timeout=1200)
        if p.returncode != 0:
            sys.exit(f"FAIL flowc run: exit {p.returncode}\n{p.stderr}")
        for i, name in enumerate(("wide", "mid", "one", "seq")):
            got = np.load(os.path.join(out, f"output_{i}.npy"))
            for what, w in (("PyTorch", want[i]), ("float64", ref[i])):
                if got.shape != w.shape or not np.allclose(got, w, rtol=1e-4, atol=1e-5):
                    err = np.abs(got - w).max() if got.shape == w.shape else "shape " + str(got.shape)
                    print(f"FAIL {name} ({threads} threads) vs {what}: max error {err}")
                    failures += 1
    if failures:
        sys.exit(1)
    print("linear weights: 4 outputs match PyTorch and float64 on 1 and 2 threads")


if __name__ == "__main__":
    main()
