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

  quant-ir      hand-written IR of qspec's quantised ops (x f32 [1, 3, 7, 9] -> quantize u8 -> conv with per-channel
                i8 weights, 5 channels, stride 2, padding, a narrowed (ReLU) result range -> max_pool -> reshape ->
                matmul with per-column i8 weights with zero points, bias, i8 result -> dequantize; a conv with an
                f32 result; a batched matmul with per-tensor weights and an f32 result) exported in QDQ form. Each
                quantised stage of onnxruntime's run must be within one quantisation step of the IR's semantics
                (ops.def: exact i32 accumulation, requantisation multiplier f32(f32(sx*sw)/sy)) applied, in NumPy, to
                onnxruntime's own previous stage; f32 results within 1e-5 + 1e-5 |want|.

  qdq           tests/e2e/onnx_export_models.py's QDQ model (per-channel conv, ReLU, max_pool, per-column matmul
                with weight zero points): `flowc run` on it against onnxruntime on its export, within one
                output quantisation step (its scale 0.061, times 1.0001 for the float error of the comparison).

  int8-dynamic  tests/e2e/onnx_export_models.py's MLP built with --quantize int8-dynamic --emit onnx: its two
                integer matmuls become MatMulInteger (the dynamic quantisation ops around them core ops), and
                onnxruntime on it agrees with `flowc run --quantize int8-dynamic` within 1e-5 + 1e-5 |want|.

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
        return ort_run(self.root, self.modules, model, inputs, self.path(tag))


def ort_run(root, modules, model, inputs, d):
    """Runs `model` once in onnxruntime (tests/e2e/ort_run.js, the package under `modules`) on named inputs
    (dict name -> array), in the folder d; returns its outputs in the model's order."""
    os.makedirs(d, exist_ok=True)
    specs = []
    for name, arr in inputs.items():
        f = os.path.join(d, f"in_{name}.bin")
        np.ascontiguousarray(arr).tofile(f)
        specs.append(f"{name}={f}:{ORT_TYPES[arr.dtype]}:{','.join(map(str, arr.shape))}")
    run(["node", os.path.join(root, "tests", "e2e", "ort_run.js"), modules, model, d, *specs])
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
        tol = atol + rtol * np.abs(w.astype(np.float64))
        ratio = np.divide(err, tol, out=np.where(err > 0, np.inf, 0.0), where=tol > 0)
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


def case_qdq(env):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import onnx_export_models
    model = env.path("qdq.onnx")
    onnx.save(onnx_export_models.qdq_model(), model)
    x = onnx_export_models.qdq_input()
    want = env.flowc_run(model, {"x": x}, "qdq-flowc")
    out = env.path("qdq.x.onnx")
    m = env.export(model, out)
    ops = [n.op_type for n in m.graph.node]
    if "QuantizeLinear" not in ops or "DequantizeLinear" not in ops or "ReduceMean" not in ops:
        fail(f"qdq: the export is not in QDQ form (with the quantised mean as ReduceMean): {ops}")
    got = env.ort_run(out, {"x": x}, "qdq-ort")
    step = onnx_export_models.QDQ_OUT_SCALE
    err = compare("qdq", got, want, step * 1.0001, 0)
    print(f"PASS qdq: onnxruntime on the export vs flowc run, max abs error {err:.3g} = {err / step:.2f} output "
          f"steps (at most 1)")


def case_int8_dynamic(env):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import onnx_export_models
    model = env.path("mlp.onnx")
    onnx.save(onnx_export_models.mlp_model(), model)
    x = np.random.default_rng(4).standard_normal((5, 100)).astype(np.float32)
    # The weights quantise to |q| <= 64 without VNNI: flowc run must target the CPU the export was made for.
    want = env.flowc_run(model, {"x": x}, "mlp-flowc", "--quantize", "int8-dynamic", "--cpu", "x86-64-v3")
    out = env.path("mlp.x.onnx")
    m = env.export(model, out, "--quantize", "int8-dynamic", "--cpu", "x86-64-v3")
    n = sum(nd.op_type == "MatMulInteger" for nd in m.graph.node)
    if n != 2:
        fail(f"int8-dynamic: the export has {n} MatMulInteger nodes, expected 2")
    got = env.ort_run(out, {"x": x}, "mlp-ort")
    err = compare("int8-dynamic", got, want, 1e-5, 1e-5)
    print(f"PASS int8-dynamic: 2 MatMulInteger; onnxruntime on the export vs flowc run --quantize int8-dynamic, "
          f"max abs error {err:.2e}")


# ---- quantised IR -------------------------------------------------------------------------------------

def dense(a):
    """An MLIR dense literal of a NumPy array."""
    def rec(x):
        if x.ndim == 0:
            return repr(float(x)) if x.dtype.kind == "f" else str(int(x))
        return "[" + ", ".join(rec(e) for e in x) + "]"
    return f"dense<{rec(np.asarray(a))}>"


def qtype(storage, scale, zp, rng=None):
    r = f"<{rng[0]}:{rng[1]}>" if rng else ""
    if np.ndim(scale):
        return f"!quant.uniform<{storage}{r}:f32:{zp}, {{{', '.join(repr(float(v)) for v in scale)}}}>"
    return f"!quant.uniform<{storage}{r}:f32, {float(scale)!r}:{zp}>"


def qtype_axis(storage, axis, scales, zps):
    pairs = ", ".join(f"{float(s)!r}:{int(z)}" for s, z in zip(scales, zps))
    return f"!quant.uniform<{storage}:f32:{axis}, {{{pairs}}}>"


def rne_f32(v):
    return np.round(v.astype(np.float32))  # NumPy rounds half to even


def requant(acc, m, zy, lo, hi):
    """ops.def: clamp(rne(f32(acc) * f32 m) + zy, qmin, qmax), the product in f32."""
    return np.clip(rne_f32(acc.astype(np.float32) * m) + zy, lo, hi).astype(np.int64)


def conv_acc(xq, zx, w, zw, b, stride, pad):
    """Exact integer conv: sum (x - zx)(w - zw[m]) + b[m]; padding reads x = zx."""
    x = np.pad(xq.astype(np.int64) - zx, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    m, c, kh, kw = w.shape
    oh, ow = (x.shape[2] - kh) // stride + 1, (x.shape[3] - kw) // stride + 1
    wd = w.astype(np.int64) - np.asarray(zw).reshape(-1, 1, 1, 1)
    acc = np.zeros((x.shape[0], m, oh, ow), np.int64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            acc[:, :, i, j] = np.einsum("nchw,mchw->nm", patch, wd)
    return acc + (0 if b is None else np.asarray(b, np.int64).reshape(1, -1, 1, 1))


def case_quant_ir(env):
    rng = np.random.default_rng(11)
    sx, zx = 0.0235, 131
    # int8 weights within +-64: onnxruntime's u8 x s8 kernels without VNNI add two products in a saturating i16
    # (AVX2's vpmaddubsw), which 255 * 64 * 2 still fits, so its results are exact on every x86 host
    w = rng.integers(-64, 65, (5, 3, 3, 3)).astype(np.int8)
    sw = np.array([0.011, 0.0073, 0.02, 0.0051, 0.013])
    b = rng.integers(-3000, 3000, 5).astype(np.int32)
    sc, zc, c_lo = 0.047, 17, 17  # the conv's result: u8<17:255>, a fused ReLU
    wm = rng.integers(-64, 65, (60, 7)).astype(np.int8)
    swm, zwm = rng.uniform(0.002, 0.01, 7), rng.integers(-4, 5, 7)
    bm = rng.integers(-2000, 2000, 7).astype(np.int32)
    sm, zm = 0.11, -3
    wb = rng.integers(-64, 65, (12, 4)).astype(np.int8)
    swb, zwb = 0.0093, 2
    bb = rng.integers(-500, 500, 4).astype(np.int32)
    tx = qtype("u8", sx, zx)
    tw = qtype_axis("i8", 0, sw, [0] * 5)
    tc = f"!quant.uniform<u8<{c_lo}:255>:f32, {sc!r}:{zc}>"
    twm = qtype_axis("i8", 1, swm, zwm)
    tm = qtype("i8", sm, zm)
    twb = qtype("i8", swb, zwb)
    text = f"""module {{
  func.func @main(%x: tensor<1x3x7x9xf32> {{flow.name = "x"}}) -> (tensor<1x5x4x5xui8> {{flow.name = "c"}}, tensor<1x7xi8> {{flow.name = "m"}}, tensor<1x7xf32> {{flow.name = "y"}}, tensor<1x5x4x5xf32> {{flow.name = "yf"}}, tensor<1x5x4xf32> {{flow.name = "yb"}}) {{
    %w = "flow.constant"() {{value = {dense(w)} : tensor<5x3x3x3xi8>}} : () -> tensor<5x3x3x3x{tw}>
    %b = "flow.constant"() {{value = {dense(b)} : tensor<5xi32>}} : () -> tensor<5xi32>
    %wm = "flow.constant"() {{value = {dense(wm)} : tensor<60x7xi8>}} : () -> tensor<60x7x{twm}>
    %bm = "flow.constant"() {{value = {dense(bm)} : tensor<7xi32>}} : () -> tensor<7xi32>
    %wb = "flow.constant"() {{value = {dense(wb)} : tensor<12x4xi8>}} : () -> tensor<12x4x{twb}>
    %bb = "flow.constant"() {{value = {dense(bb)} : tensor<4xi32>}} : () -> tensor<4xi32>
    %q = "flow.quantize"(%x) {{qtype = {tx}}} : (tensor<1x3x7x9xf32>) -> tensor<1x3x7x9x{tx}>
    %c = "flow.conv"(%q, %w, %b) {{dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, qtype = {tc}, strides = array<i64: 2, 2>}} : (tensor<1x3x7x9x{tx}>, tensor<5x3x3x3x{tw}>, tensor<5xi32>) -> tensor<1x5x4x5x{tc}>
    %cs = "flow.scast"(%c) {{qtype = ui8}} : (tensor<1x5x4x5x{tc}>) -> tensor<1x5x4x5xui8>
    %p = "flow.max_pool"(%c) {{ceil_mode = 0 : i64, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, storage_order = 0 : i64, strides = array<i64: 1, 1>}} : (tensor<1x5x4x5x{tc}>) -> tensor<1x5x3x4x{tc}>
    %r = "flow.reshape"(%p) {{shape = array<i64: 1, 60>}} : (tensor<1x5x3x4x{tc}>) -> tensor<1x60x{tc}>
    %m = "flow.matmul"(%r, %wm, %bm) {{qtype = {tm}}} : (tensor<1x60x{tc}>, tensor<60x7x{twm}>, tensor<7xi32>) -> tensor<1x7x{tm}>
    %ms = "flow.scast"(%m) {{qtype = i8}} : (tensor<1x7x{tm}>) -> tensor<1x7xi8>
    %y = "flow.dequantize"(%m) : (tensor<1x7x{tm}>) -> tensor<1x7xf32>
    %yf = "flow.conv"(%q, %w) {{dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, qtype = f32, strides = array<i64: 2, 2>}} : (tensor<1x3x7x9x{tx}>, tensor<5x3x3x3x{tw}>) -> tensor<1x5x4x5xf32>
    %r3 = "flow.reshape"(%p) {{shape = array<i64: 1, 5, 12>}} : (tensor<1x5x3x4x{tc}>) -> tensor<1x5x12x{tc}>
    %yb = "flow.matmul"(%r3, %wb, %bb) {{qtype = f32}} : (tensor<1x5x12x{tc}>, tensor<12x4x{twb}>, tensor<4xi32>) -> tensor<1x5x4xf32>
    "func.return"(%cs, %ms, %y, %yf, %yb) : (tensor<1x5x4x5xui8>, tensor<1x7xi8>, tensor<1x7xf32>, tensor<1x5x4x5xf32>, tensor<1x5x4xf32>) -> ()
  }}
}}
"""
    src = env.path("quant.mlir")
    with open(src, "w") as f:
        f.write(text)
    out = env.path("quant.onnx")
    m = env.export(src, out, "--passes=shapes")
    ops = [n.op_type for n in m.graph.node]
    for want in ["QuantizeLinear", "DequantizeLinear", "Conv", "Gemm", "MatMul", "MaxPool", "Clip"]:
        if want not in ops:
            fail(f"quant-ir: the export has no {want} node: {ops}")
    x = rng.uniform(-3, 3.2, (1, 3, 7, 9)).astype(np.float32)
    c, mq, y, yf, yb = env.ort_run(out, {"x": x}, "quant-ort")

    # Each stage from onnxruntime's previous one, by the IR's semantics.
    xq = np.clip(rne_f32(x / np.float32(sx)) + zx, 0, 255).astype(np.int64)
    acc = conv_acc(xq, zx, w, 0, b, 2, 1)
    want_c = requant(acc, ((sx * sw).astype(np.float32) / np.float32(sc)).reshape(1, -1, 1, 1), zc, c_lo, 255)
    dc = np.abs(c.astype(np.int64) - want_c).max()
    p = np.lib.stride_tricks.sliding_window_view(c.astype(np.int64), (2, 2), axis=(2, 3)).max(axis=(4, 5))
    accm = (p.reshape(1, 60) - zc) @ (wm.astype(np.int64) - zwm) + bm
    want_m = requant(accm, ((sc * swm).astype(np.float32) / np.float32(sm)), zm, -128, 127)
    dm = np.abs(mq.astype(np.int64) - want_m).max()
    if dc > 1 or dm > 1:
        fail(f"quant-ir: onnxruntime's conv differs by {dc} steps, its matmul by {dm} (at most 1 allowed)")
    compare("quant-ir dequantize", [y], [((mq.astype(np.int64) - zm).astype(np.float32) * np.float32(sm))], 0, 0)
    want_yf = conv_acc(xq, zx, w, 0, None, 2, 1).astype(np.float32) * (sx * sw).astype(np.float32).reshape(1, -1, 1, 1)
    accb = (p.reshape(1, 5, 12) - zc) @ (wb.astype(np.int64) - zwb) + bb
    want_yb = accb.astype(np.float32) * np.float32(sc * swb)
    err = compare("quant-ir f32 results", [yf, yb], [want_yf, want_yb], 1e-5, 1e-5)
    print(f"PASS quant-ir: onnxruntime's conv within {dc} step(s), matmul within {dm} step(s) of the IR's semantics; "
          f"f32 results within {err:.2e}")


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
    case_quant_ir(env)
    case_qdq(env)
    case_int8_dynamic(env)


if __name__ == "__main__":
    main()
