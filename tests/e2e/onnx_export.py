#!/usr/bin/python3
"""onnx_export.py — `flowc build --emit onnx` checked in onnxruntime (meson suite 'e2e').

  onnx_export.py --flowc FLOWC --source-root DIR --work DIR

Every exported file must pass Debian onnx's checker with full shape inference, and run in onnxruntime-node
(bench/node_modules, which bench/run.py installs with npm; without it the test is skipped, exit 77) with
the same results as flowc's own run of the model it came from:

  fashion_cnn   examples/fashion_cnn.onnx (f32, 3 images): the export runs in onnxruntime within
                |got - want| <= 1e-5 + 1e-5 |want| of `flowc run` on the original. flowc's kernels and
                onnxruntime's sum in different orders (flowc uses Winograd), so bit equality is not expected.

  ops           tests/e2e/onnx_export_models.py's model of ~90 core ops (f32 [2, 3, 6, 7]): exported at -O0
                and at -O2, each run in onnxruntime against `flowc run` on the original: floats within
                1e-5 + 1e-5 |want| (the same bound), integers and bools exactly.

One line per case with the largest error; exit 1 on the first failure.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx

TIMEOUT = 600
ORT_TYPES = {np.dtype(np.float32): "float32", np.dtype(np.uint8): "uint8", np.dtype(np.int8): "int8",
             np.dtype(np.int32): "int32", np.dtype(np.int64): "int64", np.dtype(np.bool_): "bool"}
NP_TYPES = {v: k for k, v in ORT_TYPES.items()}


def fail(msg):
    print(f"FAIL {msg}")
    sys.exit(1)


def run(cmd):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, errors="replace", timeout=TIMEOUT)
    if p.returncode != 0:
        fail(f"{' '.join(map(str, cmd))} exited {p.returncode}:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    if "Sanitizer" in p.stderr or "runtime error:" in p.stderr:
        fail(f"{' '.join(map(str, cmd))}: sanitizer report:\n{p.stderr[-3000:]}")
    return p


class Env:
    def __init__(self, args):
        self.flowc = args.flowc
        self.root = os.path.abspath(args.source_root)
        self.work = args.work
        self.modules = os.path.join(self.root, "bench", "node_modules")

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def export(self, model, out, *flags):
        run([self.flowc, "build", model, "--emit", "onnx", "-o", out, *flags])
        m = onnx.load(out)
        onnx.checker.check_model(m, full_check=True)
        return m

    def flowc_run(self, model, inputs, tag, *flags):
        """Runs `flowc run` on named inputs (dict name -> array); returns the outputs in order."""
        d = self.path(tag)
        os.makedirs(d, exist_ok=True)
        args = []
        for name, arr in inputs.items():
            f = os.path.join(d, f"in_{name}.npy")
            np.save(f, arr)
            args += ["--input", f"{name}={f}"]
        run([self.flowc, "run", model, *args, "--output-dir", d, *flags])
        outs = []
        while os.path.exists(os.path.join(d, f"output_{len(outs)}.npy")):
            outs.append(np.load(os.path.join(d, f"output_{len(outs)}.npy")))
        return outs

    def ort_run(self, model, inputs, tag):
        d = self.path(tag)
        os.makedirs(d, exist_ok=True)
        specs = []
        for name, arr in inputs.items():
            f = os.path.join(d, f"in_{name}.bin")
            np.ascontiguousarray(arr).tofile(f)
            specs.append(f"{name}={f}:{ORT_TYPES[arr.dtype]}:{','.join(map(str, arr.shape))}")
        run(["node", os.path.join(self.root, "tests", "e2e", "ort_run.js"), self.modules, model, d, *specs])
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
        return [np.fromfile(os.path.join(d, f"{i}.bin"), NP_TYPES[m["type"]]).reshape(m["dims"])
                for i, m in enumerate(meta)]


def compare(case, got, want, atol, rtol):
    if len(got) != len(want):
        fail(f"{case}: {len(got)} outputs, expected {len(want)}")
    worst = 0.0
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            fail(f"{case}: output {i} has shape {list(g.shape)}, expected {list(w.shape)}")
        err = np.abs(g.astype(np.float64) - w.astype(np.float64))
        ratio = err / (atol + rtol * np.abs(w.astype(np.float64)))
        k = np.unravel_index(np.argmax(ratio), ratio.shape)
        if ratio[k] > 1.0:
            fail(f"{case}: output {i} at {list(map(int, k))}: got {g[k]}, want {w[k]} (error {err[k]:.3g}, "
                 f"tolerance {atol} + {rtol} |want|)")
        worst = max(worst, float(err.max()))
    return worst


def case_fashion_cnn(env):
    model = os.path.join(env.root, "examples", "fashion_cnn.onnx")
    x = np.random.default_rng(1).random((3, 1, 28, 28), dtype=np.float32)
    want = env.flowc_run(model, {"image": x}, "fashion-flowc")
    out = env.path("fashion_cnn.onnx")
    env.export(model, out, "--shape", "image=3x1x28x28")
    got = env.ort_run(out, {"image": x}, "fashion-ort")
    err = compare("fashion_cnn", got, want, 1e-5, 1e-5)
    print(f"PASS fashion_cnn (f32): onnxruntime on the export vs flowc run, max abs error {err:.2e}")


def case_ops(env):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import onnx_export_models
    model = env.path("ops.onnx")
    onnx.save(onnx_export_models.ops_model(), model)
    x = onnx_export_models.ops_input()
    want = env.flowc_run(model, {"x": x}, "ops-flowc")
    for level in ["-O0", "-O2"]:
        out = env.path(f"ops{level}.onnx")
        env.export(model, out, level)
        got = env.ort_run(out, {"x": x}, f"ops{level}-ort")
        for i, (g, w) in enumerate(zip(got, want)):
            if g.dtype != w.dtype:
                fail(f"ops {level}: output {i} is {g.dtype}, flowc run gives {w.dtype}")
        err = compare(f"ops {level}", got, want, 1e-5, 1e-5)
        print(f"PASS ops {level}: {len(want)} outputs, onnxruntime on the export vs flowc run, max abs error "
              f"{err:.2e}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flowc", required=True)
    ap.add_argument("--source-root", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    env = Env(args)
    if not os.path.isdir(os.path.join(env.modules, "onnxruntime-node")):
        print(f"SKIP: {env.modules}/onnxruntime-node is absent (bench/run.py installs it with npm)")
        sys.exit(77)
    if not shutil.which("node"):
        print("SKIP: node is not installed")
        sys.exit(77)
    shutil.rmtree(env.work, ignore_errors=True)
    os.makedirs(env.work)
    case_fashion_cnn(env)
    case_ops(env)


if __name__ == "__main__":
    main()
