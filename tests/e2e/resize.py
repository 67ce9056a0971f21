#!/usr/bin/python3
"""resize.py — Resize against PyTorch and against an independent float64 NumPy implementation of the ONNX
spec, through `flowc run` (meson suite 'e2e').

  resize.py --flowc FLOWC --work DIR

Two models, each compiled and run once:
  - torch: F.interpolate calls exported by torch.onnx.export at test time (nearest, linear, bilinear,
    bicubic, trilinear; with `size` and with `scale_factor`; align_corners both ways) on inputs whose
    values are their own indices, at awkward ratios (96->70, 7->3, 5->13, odd sizes, 1-D/2-D/3-D, down
    and up). Every output must equal PyTorch's; nearest exactly, except where the exact (rational)
    source coordinate lies within 1e-6 of a rounding boundary, where PyTorch's f32 arithmetic and the
    spec's float64 may round to different neighbours (flowc must then give the float64 answer).
  - onnx: Resize nodes built with onnx.helper for every nearest_mode, coordinate_transformation_mode
    and mode (cubic with exclude_outside and A = -0.5 too, tf_crop_and_resize with a roi), each with
    `sizes` and with `scales`, on a 2-D (7x5 -> 3x13: down and up at once) and a 1-D (96 -> 70) case.
    Where PyTorch computes the same function (nearest = asymmetric/floor, nearest-exact =
    half_pixel/round_prefer_ceil, bilinear/bicubic = half_pixel or align_corners), it is compared too.
Every output of both is compared with the float64 reference: nearest exactly, linear and cubic within
2e-6 * (1 + |want|) (one f32 rounding of weights and sums).
"""
import argparse
import io
import math
import os
import shutil
import subprocess
import sys
from fractions import Fraction

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TIE = 1e-6     # a source coordinate this close to a rounding boundary may round either way in f32
F32_TOL = 2e-6  # linear/cubic: |got - want| <= F32_TOL * (1 + |want|) against float64
TORCH_TOL = 2e-5

# ---- the float64 reference (ONNX Resize, opset 13-19 text) ----------------------------------------


def source_coord(x, scale, n_in, n_out, ctm, roi):
    """x_original of output coordinate x along one axis, in float64 as the spec writes it."""
    iw, ow = float(n_in), scale * n_in
    if ctm == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if ctm == "half_pixel_symmetric":
        adjustment = n_out / ow
        return iw / 2 * (1 - adjustment) + (x + 0.5) / scale - 0.5
    if ctm == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if n_out > 1 else 0.0
    if ctm == "align_corners":
        return 0.0 if ow == 1 else x * (iw - 1) / (ow - 1)
    if ctm == "asymmetric":
        return x / scale
    if ctm == "tf_crop_and_resize":
        span = float(np.float32(roi[1]) - np.float32(roi[0]))
        xo = span * (iw - 1) / 2 if ow == 1 else x * span * (iw - 1) / (ow - 1)
        return xo + float(np.float32(roi[0])) * (iw - 1)
    raise ValueError(ctm)


def cubic_coeffs(r, a):
    def outer(t):
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a

    def inner(t):
        return ((a + 2) * t - (a + 3)) * t * t + 1

    return [outer(r + 1), inner(r), inner(1 - r), outer(2 - r)]


def axis_taps(n_in, n_out, scale, p, roi):
    """Per output coordinate: None (extrapolate) or a list of (input index, weight)."""
    taps = []
    for x in range(n_out):
        xo = source_coord(float(x), scale, n_in, n_out, p["ctm"], roi)
        if p["ctm"] == "tf_crop_and_resize" and (xo < 0 or xo > n_in - 1):
            taps.append(None)
            continue
        base = math.floor(xo)
        # The neighbourhood has ratio in (0, 1]: an integral x_original is ratio 1 of the tap on its left.
        ratio, base = (1.0, base - 1) if xo == base else (xo - base, base)
        if p["mode"] == "nearest":
            nm = p["nearest_mode"]
            up = xo == base + 1 or {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5,
                                     "floor": False, "ceil": True}[nm]
            taps.append([(min(max(base + 1 if up else base, 0), n_in - 1), 1.0)])
            continue
        if p["mode"] == "linear":
            idx, w = [base, base + 1], [1 - ratio, ratio]
        else:
            idx, w = [base - 1, base, base + 1, base + 2], cubic_coeffs(ratio, p["cubic_a"])
        if p["exclude_outside"]:
            w = [0.0 if i < 0 or i >= n_in else c for i, c in zip(idx, w)]
            s = sum(w)
            w = [c / s for c in w]
        taps.append([(min(max(i, 0), n_in - 1), c) for i, c in zip(idx, w)])
    return taps


def reference(x, out_shape, scales, p, roi=None):
    """ONNX Resize in float64; scales None means sizes/input per axis (float64, as the spec derives them)."""
    y = x.astype(np.float64)
    r = x.ndim
    for d in reversed(range(r)):  # separable, last axis first as the spec's reference nests it
        n_in, n_out = x.shape[d], out_shape[d]
        scale = n_out / n_in if scales is None else float(np.float32(scales[d]))
        taps = axis_taps(n_in, n_out, scale, p, None if roi is None else (roi[d], roi[r + d]))
        moved = np.moveaxis(y, d, 0)
        res = np.zeros((n_out,) + moved.shape[1:])
        for o, t in enumerate(taps):
            res[o] = p["extrapolation_value"] if t is None else sum(c * moved[i] for i, c in t)
        y = np.moveaxis(res, 0, d)
    return y


def near_tie(n_in, n_out, scale, p, x):
    """Whether output x's exact source coordinate is within TIE of where nearest_mode switches neighbours."""
    s = Fraction(n_out, n_in) if scale is None else Fraction(float(np.float32(scale)))
    ctm = p["ctm"]
    if ctm == "asymmetric":
        xo = x / s
    elif ctm in ("half_pixel", "pytorch_half_pixel"):
        xo = (x + Fraction(1, 2)) / s - Fraction(1, 2)
    elif ctm == "align_corners":
        xo = Fraction(0) if n_out == 1 else Fraction(x * (n_in - 1), n_out - 1)
    else:
        return False
    boundary = Fraction(1, 2) if p["mode"] == "nearest" and p["nearest_mode"].startswith("round") else Fraction(0)
    frac = xo - math.floor(xo - boundary) - boundary
    return min(frac, 1 - frac) < TIE * max(1, abs(xo))


# ---- running flowc ----------------------------------------------------------------------------------


def run_flowc(flowc, model, inputs, work):
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    files = []
    for i, x in enumerate(inputs):
        files.append(os.path.join(work, f"input_{i}.npy"))
        np.save(files[-1], x)
    p = subprocess.run([flowc, "run", model, *files, "--output-dir", out], capture_output=True, text=True,
                       timeout=1200)
    if p.returncode != 0:
        sys.exit(f"FAIL flowc run {model}: exit {p.returncode}\n{p.stderr}")
    return lambda i: np.load(os.path.join(out, f"output_{i}.npy"))


class Checker:
    def __init__(self):
        self.failures = 0
        self.ties = 0

    def check(self, name, got, want, nearest, tol, ties_ok=None):
        """got vs want; nearest: exact except at the indices ties_ok allows (a flat-index predicate)."""
        if got.shape != want.shape:
            return self.fail(name, f"shape {got.shape}, want {want.shape}")
        if nearest:
            bad = np.flatnonzero(got.ravel() != want.ravel())
            allowed = [i for i in bad if ties_ok and ties_ok(i)]
            self.ties += len(allowed)
            bad = [i for i in bad if i not in allowed]
            if bad:
                i = bad[0]
                return self.fail(name, f"{len(bad)} outputs differ; first at {np.unravel_index(i, got.shape)}: "
                                       f"got {got.ravel()[i]}, want {want.ravel()[i]}")
            return
        err = np.abs(got.astype(np.float64) - want) - tol * (1 + np.abs(want))
        if not np.isfinite(got).all() or (err > 0).any():
            i = int(np.argmax(err))
            return self.fail(name, f"at {np.unravel_index(i, got.shape)}: got {got.ravel()[i]!r}, "
                                   f"want {want.ravel()[i]!r}")

    def fail(self, name, what):
        print(f"FAIL {name}: {what}")
        self.failures += 1


def index_input(shape):
    """Values that name their own position, so a nearest output shows which element it read."""
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


def random_input(shape, seed):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


# ---- the PyTorch-exported model ------------------------------------------------------------------


def torch_cases():
    """(input index, F.interpolate keyword arguments, spec parameters of the exported Resize)."""
    def p(mode, ctm, nearest_mode="floor"):
        return dict(mode=mode, ctm=ctm, nearest_mode=nearest_mode, cubic_a=-0.75, exclude_outside=False,
                    extrapolation_value=0.0)

    near = p("nearest", "asymmetric")
    cases = [
        (0, dict(size=(1, 70), mode="nearest"), near),  # the case: 1x1x1x96 -> 70
        (1, dict(size=(3, 13), mode="nearest"), near),   # 7x5 -> 3x13
        (1, dict(size=(13, 3), mode="nearest"), near),   # 7x5 -> 13x3
        (2, dict(size=9, mode="nearest"), near),         # 1-D 13 -> 9
        (2, dict(size=29, mode="nearest"), near),        # 1-D 13 -> 29
        (1, dict(scale_factor=(0.45, 2.7), mode="nearest"), near),
        (0, dict(scale_factor=(1.0, 0.73), mode="nearest"), near),
        (3, dict(size=(5, 3, 7), mode="nearest"), near),  # 3-D 3x4x5
    ]
    for ac in (False, True):
        ctm = "align_corners" if ac else "half_pixel"  # torch exports half_pixel for align_corners=False
        cases += [
            (4, dict(size=(1, 70), mode="bilinear", align_corners=ac), p("linear", ctm)),
            (5, dict(size=(3, 13), mode="bilinear", align_corners=ac), p("linear", ctm)),
            (5, dict(size=(3, 13), mode="bicubic", align_corners=ac), p("cubic", ctm)),
            (5, dict(size=(13, 3), mode="bicubic", align_corners=ac), p("cubic", ctm)),
            (6, dict(size=9, mode="linear", align_corners=ac), p("linear", ctm)),
            (6, dict(size=29, mode="linear", align_corners=ac), p("linear", ctm)),
            (7, dict(size=(5, 3, 7), mode="trilinear", align_corners=ac), p("linear", ctm)),
        ]
    # With scale_factor, PyTorch maps coordinates with the scale itself only when align_corners is off.
    cases += [
        (5, dict(scale_factor=(0.45, 2.7), mode="bilinear", align_corners=False), p("linear", "half_pixel")),
        (5, dict(scale_factor=(1.3, 0.6), mode="bicubic", align_corners=False), p("cubic", "half_pixel")),
    ]
    return cases


def torch_inputs():
    return [index_input((1, 1, 1, 96)), index_input((1, 2, 7, 5)), index_input((1, 1, 13)),
            index_input((1, 1, 3, 4, 5)), random_input((1, 1, 1, 96), 1), random_input((1, 2, 7, 5), 2),
            random_input((1, 1, 13), 3), random_input((1, 1, 3, 4, 5), 4)]


def check_torch(flowc, work, chk):
    import torch
    import torch.nn.functional as F

    cases, xs = torch_cases(), torch_inputs()

    class Model(torch.nn.Module):
        def forward(self, *inputs):
            return tuple(F.interpolate(inputs[i], **kw) for i, kw, _ in cases)

    model = os.path.join(work, "torch.onnx")
    tx = tuple(torch.from_numpy(x) for x in xs)
    with torch.no_grad():
        want = [t.numpy() for t in Model()(*tx)]
        buf = io.BytesIO()
        torch.onnx.export(Model(), tx, buf, opset_version=13)
    with open(model, "wb") as f:
        f.write(buf.getvalue())
    got = run_flowc(flowc, model, xs, work)
    for k, (i, kw, p) in enumerate(cases):
        name = f"torch {xs[i].shape} {kw}"
        x = xs[i]
        sf = kw.get("scale_factor")
        scales = None if sf is None else [1.0, 1.0] + list(sf if isinstance(sf, tuple) else [sf] * (x.ndim - 2))
        ref = reference(x, want[k].shape, scales, p)
        nearest = p["mode"] == "nearest"
        g = got(k)
        chk.check(name + " vs float64", g, ref, nearest, F32_TOL)

        def ties_ok(flat, shape=want[k].shape, x=x, scales=scales, p=p):
            pos = np.unravel_index(flat, shape)
            return any(near_tie(x.shape[d], shape[d], None if scales is None else scales[d], p, int(pos[d]))
                       for d in range(2, x.ndim))

        chk.check(name + " vs PyTorch", g, want[k], nearest, TORCH_TOL, ties_ok)


# ---- the onnx.helper model (modes PyTorch cannot export) ----------------------------------------------


def onnx_cases():
    shapes = [((1, 1, 7, 5), (1, 1, 3, 13), [1.0, 1.0, 0.45, 2.7]),
              ((1, 1, 1, 96), (1, 1, 1, 70), [1.0, 1.0, 1.0, 0.73])]
    params = []
    base = dict(cubic_a=-0.75, exclude_outside=False, extrapolation_value=0.0, nearest_mode="round_prefer_floor")
    ctms = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"]
    for ctm in ctms:
        for nm in ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]:
            params.append(dict(base, mode="nearest", ctm=ctm, nearest_mode=nm))
        params.append(dict(base, mode="linear", ctm=ctm))
        params.append(dict(base, mode="cubic", ctm=ctm))
    params.append(dict(base, mode="cubic", ctm="half_pixel", exclude_outside=True, cubic_a=-0.5))
    params.append(dict(base, mode="linear", ctm="tf_crop_and_resize", extrapolation_value=-7.0))
    cases = []
    for si, (xs, ys, sc) in enumerate(shapes):
        for p in params:
            for by in ("sizes", "scales"):
                cases.append((si, xs, ys, sc, by, p))
    return cases


def torch_equivalent(p):
    """The F.interpolate arguments that compute the same function as Resize parameters p, or None."""
    m, ctm, nm = p["mode"], p["ctm"], p["nearest_mode"]
    if p["exclude_outside"] or p["cubic_a"] != -0.75:
        return None
    if m == "nearest":
        return {("asymmetric", "floor"): dict(mode="nearest"),
                ("half_pixel", "round_prefer_ceil"): dict(mode="nearest-exact")}.get((ctm, nm))
    if ctm in ("half_pixel", "align_corners"):
        return dict(mode="bilinear" if m == "linear" else "bicubic", align_corners=ctm == "align_corners")
    return None


ROI = [0.0, 0.0, 0.3, 0.1, 1.0, 1.0, 0.85, 1.2]  # tf_crop_and_resize: crops and extrapolates


def check_onnx(flowc, work, chk):
    cases = onnx_cases()
    xs = [random_input((1, 1, 7, 5), 5), index_input((1, 1, 1, 96))]
    nodes, inits, outs = [], [], []
    inputs = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, list(x.shape)) for i, x in enumerate(xs)]
    for k, (si, _, ys, sc, by, p) in enumerate(cases):
        roi = ROI if p["ctm"] == "tf_crop_and_resize" else []
        inits.append(numpy_helper.from_array(np.array(roi, np.float32), f"roi{k}"))
        if by == "sizes":
            inits.append(numpy_helper.from_array(np.array(ys, np.int64), f"sizes{k}"))
            ins = [f"x{si}", f"roi{k}", "", f"sizes{k}"]
        else:
            inits.append(numpy_helper.from_array(np.array(sc, np.float32), f"scales{k}"))
            ins = [f"x{si}", f"roi{k}", f"scales{k}"]
        nodes.append(helper.make_node("Resize", ins, [f"y{k}"], name=f"r{k}", mode=p["mode"],
                                      coordinate_transformation_mode=p["ctm"], nearest_mode=p["nearest_mode"],
                                      cubic_coeff_a=p["cubic_a"], exclude_outside=int(p["exclude_outside"]),
                                      extrapolation_value=p["extrapolation_value"]))
        outs.append(helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "resize_modes", inputs, outs, initializer=inits)
    model = os.path.join(work, "modes.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    got = run_flowc(flowc, model, xs, work)

    import torch
    import torch.nn.functional as F
    for k, (si, xshape, ys, sc, by, p) in enumerate(cases):
        x = xs[si]
        roi = ROI if p["ctm"] == "tf_crop_and_resize" else None
        scales = None if by == "sizes" else sc
        out_shape = ys if by == "sizes" else [
            int(math.floor(n * (float(np.float32(roi[d + 4])) - float(np.float32(roi[d]))
                                if roi else 1.0) * float(np.float32(s))))
            for d, (n, s) in enumerate(zip(xshape, sc))]
        name = f"onnx {xshape}->{tuple(out_shape)} by {by} {p['mode']} {p['ctm']}" + \
            (f" {p['nearest_mode']}" if p["mode"] == "nearest" else "") + \
            (f" A={p['cubic_a']} exclude_outside" if p["exclude_outside"] else "")
        g = got(k)
        nearest = p["mode"] == "nearest"
        chk.check(name + " vs float64", g, reference(x, out_shape, scales, p, roi), nearest, F32_TOL)
        eq = torch_equivalent(p)
        if eq is None or by == "scales":
            continue
        with torch.no_grad():
            want = F.interpolate(torch.from_numpy(x), size=tuple(out_shape[2:]), **eq).numpy()

        def ties_ok(flat, shape=want.shape, x=x, p=p):
            pos = np.unravel_index(flat, shape)
            return any(near_tie(x.shape[d], shape[d], None, p, int(pos[d])) for d in range(2, x.ndim))

        chk.check(name + f" vs PyTorch {eq}", g, want, nearest, TORCH_TOL, ties_ok)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flowc", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    chk = Checker()
    for part, fn in (("torch", check_torch), ("onnx", check_onnx)):
        work = os.path.join(a.work, part)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        fn(a.flowc, work, chk)
    if chk.failures:
        print(f"FAIL {chk.failures} comparisons")
        sys.exit(1)
    print(f"PASS every output; {chk.ties} nearest outputs at exact ties differ from PyTorch's f32 rounding")


if __name__ == "__main__":
    main()
