#!/usr/bin/python3
"""bench/pass_effects.py — the measured effect of each graph pass: every benchmark model the pass
changes is built with flowc's -O2 pipeline and with the same pipeline minus that pass, and both
executables are timed at 1 thread, interleaved (rounds × `--bench 20`): the median of the per-round
medians, and the minimum, which a noisy (shared, virtualised) machine disturbs least.
Writes bench/pass_effects.json (pass → one line of text), which bench/report.py puts into RESULTS.md.

    python3 bench/pass_effects.py [--build build] [--models-dir DIR] [--rounds 5]

A model counts as changed by a pass when the IR after -O2 differs from the IR without it; models it
leaves alone are named as such. A pass that changes no model at -O2 (fuse_elementwise: fuse_epilogue
takes every chain of these models first) is measured again on -O2 without fuse_epilogue, so its own
effect shows. DIR holds the models as tools/export_e2e_models.py writes them (default
build/bench-models, the directory bench/run.py fills).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
MODELS = ["cnn_b1", "cnn_b64", "mlp_b64", "resnet18", "mobilenet_v2", "squeezenet1_1", "transformer"]
PASSES = ["fuse_layer_norm", "eliminate_transpose", "fold_batchnorm", "fuse_epilogue", "layout", "fuse_elementwise"]
# Why a pass can leave every benchmark model alone (said beside "changes none").
WHY_NONE = {"fold_batchnorm": "PyTorch's exporter already folds eval-mode BatchNorm into these models' convs; "
                              "tests/lit/passes/fold_batchnorm.mlir and fuse_epilogue_models.test check the folding "
                              "on Conv+BatchNormalization models"}


def o2_pipeline():
    """The -O2 pass list, read from its one definition (passes/pipeline.c, pinned by test_passes.c)."""
    src = open(os.path.join(ROOT, "passes", "pipeline.c")).read()
    m = re.search(r'level_pipelines\[4\] = \{\s*"",\s*"[^"]*",\s*((?:"[^"]*"\s*)+),', src)
    return "".join(re.findall(r'"([^"]*)"', m.group(1)))


def ir(flowc, model, passes):
    return subprocess.run([flowc, "build", model, "--emit", "ir", f"--passes={passes}"], check=True,
                          capture_output=True, text=True).stdout


def time_exe(exe, inp):
    line = subprocess.run([exe, inp, "--threads", "1", "--bench", "20"], check=True, capture_output=True,
                          text=True).stdout.strip().splitlines()[-1]
    return float(re.search(r"median ([0-9.]+) ms", line).group(1)), float(re.search(r"min ([0-9.]+) ms", line).group(1))


def measure(flowc, a, tmp, pipeline, p):
    """'pipeline' without -> with pass p on every model p changes; None when it changes none."""
    without = ",".join(x for x in pipeline.split(",") if x != p)
    parts, same = [], []
    for m in MODELS:
        model = os.path.join(a.models_dir, m, "model.onnx")
        inp = os.path.join(a.models_dir, m, "test_data_set_0", "input_0.pb")
        if ir(flowc, model, pipeline) == ir(flowc, model, without):
            same.append(m)
            continue
        exes = {}
        for tag, passes in (("with", pipeline), ("without", without)):
            exes[tag] = os.path.join(tmp, f"{m}_{p}_{tag}")
            subprocess.run([flowc, "build", model, f"--passes={passes}", "-o", exes[tag]], check=True)
        t = {"with": [], "without": []}
        for _ in range(a.rounds):
            for tag in ("without", "with"):
                t[tag].append(time_exe(exes[tag], inp))
        w = statistics.median(x[0] for x in t["with"])
        wo = statistics.median(x[0] for x in t["without"])
        wm, wom = min(x[1] for x in t["with"]), min(x[1] for x in t["without"])
        parts.append(f"{m} {wo:.2f} → {w:.2f} ms ({(w / wo - 1) * 100:+.0f}%; min {wom:.2f} → {wm:.2f}, "
                     f"{(wm / wom - 1) * 100:+.0f}%)")
        print(f"{p}: {parts[-1]}", flush=True)
    if not parts:
        return None
    text = "; ".join(parts)
    if same:
        text += f"; no change to {', '.join(same)}"
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "build", "bench-models"))
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--passes", default=",".join(PASSES), help="the passes to measure (default: all)")
    a = ap.parse_args()
    flowc = os.path.join(a.build, "tools", "flowc")
    full = o2_pipeline()
    effects = {}
    with tempfile.TemporaryDirectory() as tmp:
        for p in a.passes.split(","):
            text = measure(flowc, a, tmp, full, p)
            if text is None:
                base = ",".join(x for x in full.split(",") if x != "fuse_epilogue")
                text = measure(flowc, a, tmp, base, p)
                text = ("changes none of the benchmark models" + (f": {WHY_NONE[p]}" if p in WHY_NONE else "")
                        if text is None else
                        "at -O2 none (fuse_epilogue takes these chains first); without fuse_epilogue: " + text)
            effects[p] = text + " (1 thread, pipeline without → with the pass)"
    path = os.path.join(BENCH, "pass_effects.json")
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        old.update(effects)
        effects = old
    with open(os.path.join(BENCH, "pass_effects.json"), "w") as f:
        json.dump(effects, f, indent=1, ensure_ascii=False)
    print("wrote bench/pass_effects.json")


if __name__ == "__main__":
    main()
