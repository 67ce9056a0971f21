#!/usr/bin/python3
"""calibrate_fashion.py — issue 14's accuracy target for `flowc build --quantize int8 --calibrate DIR`.

Makes a calibration folder from the first 1,000 Fashion-MNIST training images (one stacked image.npy,
[1000, 1, 28, 28] f32 scaled as tools/train_example.py scales them), builds examples/fashion_cnn.onnx at
batch 100 twice with --emit lib (f32, and int8 calibrated on that folder with each --calibrate-method asked
for), links each with tools/fashion_classify.c, classifies the 10,000 test images and checks that int8 loses
at most --max-drop points (0.3) of accuracy against f32. The training images are not the test images, so
the check is not calibrated on what it measures. Prints one line per build:

    f32                                accuracy 0.8982
    int8 minmax (x86-64-v3)            accuracy 0.8979 (drop 0.03 points)

Exit status: 0 when every method asked for is within the bound, 1 otherwise (or on a failed build).
"""
import argparse
import gzip
import os
import re
import shlex
import subprocess
import sys

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist/"


def read_idx_images(path, count):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if raw[:4] != b"\x00\x00\x08\x03":
        sys.exit(f"{path}: not an IDX file of u8 images")
    n, h, w = (int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(3))
    pixels = np.frombuffer(raw, dtype=np.uint8, offset=16, count=n * h * w).reshape(n, 1, h, w)
    return pixels[:count]


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(map(shlex.quote, cmd))}\n{r.stdout}{r.stderr}")
    return r.stdout


def classify(exe, variant):
    env = dict(os.environ)
    if variant:
        env["FLOWRT_CPU_VARIANT"] = variant
    text = run([exe, "--threads", "2"], env=env)
    m = re.search(r"^accuracy\s+([0-9.]+) \((\d+)/(\d+) correct\)", text, re.M)
    if not m:
        sys.exit(f"{exe}: no accuracy line in\n{text}")
    return int(m.group(2)) / int(m.group(3))


def build(args, name, extra):
    out = os.path.join(args.work, name)
    os.makedirs(out, exist_ok=True)
    lib = os.path.join(out, "libfashion_cnn.a")
    report = run([args.flowc, "build", args.model, "--shape", "image=100x1x28x28", "--emit", "lib", "-o", lib,
                  "--quiet"] + extra)
    exe = os.path.join(out, "fashion_classify")
    cc = shlex.split(os.environ.get("CC", "cc"))
    cflags = shlex.split(os.environ.get("CFLAGS", ""))
    run(cc + ["-std=c11", "-O2"] + cflags + ["-I" + os.path.join(args.source, "runtime"),
              "-I" + os.path.join(args.source, "tools"), os.path.join(args.source, "tools", "fashion_classify.c"),
              os.path.join(args.source, "tools", "idx.c"), lib, "-lz", "-lm", "-lpthread", "-o", exe])
    return exe, report


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flowc", required=True)
    ap.add_argument("--source", required=True, help="the source tree (tools/, runtime/, examples/)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--methods", default="minmax", help="comma-separated --calibrate-method values")
    ap.add_argument("--extra", default="", help="more flowc options for the int8 builds")
    ap.add_argument("--max-drop", type=float, default=0.3, help="points of accuracy int8 may lose")
    ap.add_argument("--variants", default="best,x86-64-v3",
                    help="CPU variants of the int8 artefact to classify with (FLOWRT_CPU_VARIANT; best: this "
                         "machine's pick, with VNNI where it has it; x86-64-v3: AVX2, weights in [-64, 64])")
    args = ap.parse_args()
    args.model = os.path.join(args.source, "examples", "fashion_cnn.onnx")
    calib = os.path.join(args.work, "calib")
    os.makedirs(calib, exist_ok=True)
    images = read_idx_images(DATA + "train-images-idx3-ubyte.gz", 1000)
    np.save(os.path.join(calib, "image.npy"), images.astype(np.float32) / 255.0)

    exe, _ = build(args, "f32", [])
    base = classify(exe, None)
    print(f"{'f32':<34} accuracy {base:.4f}")
    ok = True
    for method in args.methods.split(","):
        extra = ["--quantize", "int8", "--calibrate", calib, "--calibrate-method", method] + shlex.split(args.extra)
        exe, report = build(args, "int8-" + method, extra)
        for variant in args.variants.split(","):
            acc = classify(exe, None if variant == "best" else variant)
            drop = (base - acc) * 100
            verdict = "" if drop <= args.max_drop else f"  FAIL: more than {args.max_drop} points"
            print(f"{'int8 ' + method + ' (' + variant + ')':<34} accuracy {acc:.4f} (drop {drop:.2f} points){verdict}")
            ok = ok and drop <= args.max_drop
        if report.strip():
            print(report.rstrip())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
