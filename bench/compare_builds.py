#!/usr/bin/python3
"""bench/compare_builds.py — two flowc binaries side by side: does a change make the built programs slower?

    python3 bench/compare_builds.py OLD_FLOWC NEW_FLOWC --models-dir DIR [--rounds 9] [--models a,b]
                                    [--threads 1,2] [--] [extra flowc build options, e.g. --cpu native]

Builds each model of DIR (the e2e export: DIR/<name>/model.onnx and test_data_set_0/input_0.pb, as
tools/export_e2e_models.py writes it and bench/run.py caches it) with both flowc binaries, then times the
two executables in interleaved rounds (`--bench K`, the order alternating from round to round, K chosen so
that a batch lasts about 0.3 s) and prints, per model and thread count, the median over rounds of the
batch medians, new/old, and each side's range over rounds: a ratio inside the ranges is the machine's
noise, not the change. Needs only the two binaries and the exported models.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

MODELS = ["cnn_b1", "cnn_b64", "mlp_b64", "resnet18", "mobilenet_v2", "squeezenet1_1", "transformer"]


def bench_once(exe, inp, threads, n):
    r = subprocess.run([exe, inp, "--bench", str(n), "--threads", str(threads)], capture_output=True, text=True,
                       check=True)
    return float(re.search(r"median ([0-9.]+) ms", r.stdout).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--models-dir", required=True)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("build_args", nargs="*", help="extra options for both `flowc build` runs")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="flowc-compare-")
    exes = {}
    for m in a.models.split(","):
        for tag, fc in (("old", a.old), ("new", a.new)):
            exe = os.path.join(work, f"{m}.{tag}")
            subprocess.run([fc, "build", os.path.join(a.models_dir, m, "model.onnx"), "-o", exe, *a.build_args],
                           check=True)
            exes[m, tag] = exe
    print(f"{'model':14s} thr  {'old ms':>9s} {'new ms':>9s}  new/old  (old range; new range over {a.rounds} rounds)")
    for th in (int(t) for t in a.threads.split(",")):
        for m in a.models.split(","):
            inp = os.path.join(a.models_dir, m, "test_data_set_0", "input_0.pb")
            n = max(5, min(2000, int(300 / max(bench_once(exes[m, "old"], inp, th, 5), 0.01))))
            t = {"old": [], "new": []}
            for r in range(a.rounds):
                for tag in (("old", "new") if r % 2 == 0 else ("new", "old")):
                    t[tag].append(bench_once(exes[m, tag], inp, th, n))
            o, w = statistics.median(t["old"]), statistics.median(t["new"])
            print(f"{m:14s} {th:3d}  {o:9.3f} {w:9.3f}  {w / o:7.3f}  ({min(t['old']):.3f}-{max(t['old']):.3f}; "
                  f"{min(t['new']):.3f}-{max(t['new']):.3f})", flush=True)


if __name__ == "__main__":
    sys.exit(main())
