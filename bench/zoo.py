#!/usr/bin/python3
"""bench/zoo.py — the zoo benchmark of issue 13: flowc against onnxruntime on architectures users bring.

    python3 bench/run.py --zoo [--quick] [--models a,b] [--build DIR] [--models-dir DIR] [--no-build]
                               [--rounds N] [--build-timeout S] [--no-scaling] [--out bench/RESULTS.md]
    (or python3 bench/zoo.py with the same options)

The models are bench/zoo_models.py's ZOO (random seeded weights, exported by PyTorch at bench time into
--models-dir, cached like bench/run.py's). For each model, with bench/run.py's machinery:
 1. `flowc info` (FLOPs) and `flowc build` under a time limit (--build-timeout, default 90 s): a build that
    fails or runs past it is reported as such and the model's other measurements are skipped;
 2. correctness: flowc's and onnxruntime's outputs on the exported input against PyTorch's, max |Δ|, within
    the tolerance max(1e-4·max|y|, 10·PyTorch's own float32-vs-float64 error) + 1e-5 (ok / OFF);
 3. timing: the flowc executable and onnxruntime-node at 1 and 2 threads, interleaved rounds of batches as
    in bench/run.py (PyTorch is not timed here);
 4. peak RSS of each, as in bench/run.py (onnxruntime net of node's own);
 5. the top three kernels by time from the executable's `--profile` (1 thread).
Then the recurrent build-time scaling: zoo_models.SCALING (GRU and LSTM at 100, 250 and 1000 steps) built
under the same limit; once one length fails or times out, the longer ones of that kind are not attempted.

The raw results go to ZOO.json beside --out; bench/report.py renders them as the "Zoo" section of the
report (RESULTS.md, re-rendered with RESULTS.json when that exists). --quick: 2 rounds of shorter batches
and a 60 s build limit, for a smoke run.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
import run as bench  # noqa: E402  (re-executes under Debian's python3 when needed; the shared machinery)
import report  # noqa: E402
from zoo_models import SCALING, ZOO  # noqa: E402

PROFILE = re.compile(r"^\s*([\d.]+)\s+([\d.]+)%\s+([\d.]+)%\s+(\S+)\s+(.+)$", re.M)


def log(msg):
    bench.log(msg)


def tolerance(case_dir, want):
    """The stated tolerance: 1e-4 of the output's largest magnitude, or 10x PyTorch's own float32 error
    (float32 against float64 on the same input) when that is larger, plus 1e-5."""
    with open(os.path.join(case_dir, "info.json")) as f:
        info = json.load(f)
    scale = float(abs(want).max()) if want.size else 0.0
    return max(1e-4 * scale, 10 * info.get("torch_f32_vs_f64_max_abs_err", 0.0)) + 1e-5


def top_kernels(case, n=3, runs=5):
    """The n kernels with the most time in the executable's --profile table (1 thread)."""
    out = bench.run([case["exe"], case["input_pb"], "--threads", "1", "--bench", str(runs), "--profile"])
    total = re.search(r"^profile: (\d+) kernels, ([\d.]+) ms a run", out, re.M)
    rows = [{"us": float(m.group(1)), "share": float(m.group(2)), "kernel": m.group(5).strip()}
            for m in PROFILE.finditer(out)]
    return {"kernels": int(total.group(1)) if total else None,
            "kernel_ms": float(total.group(2)) if total else None, "top": rows[:n]}


def export_models(models_dir, names):
    """Exports (or finds up to date) the models; returns name -> why, for those that could not be."""
    log(f"exporting {len(names)} models into {models_dir}")
    p = subprocess.run([sys.executable, os.path.join(BENCH, "zoo_models.py"), models_dir, "--models", ",".join(names)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    errors = dict(re.findall(r"^(\S+): export failed: (.*)$", p.stdout, re.M))
    for name in names:
        if name not in errors and not os.path.exists(os.path.join(models_dir, name, "info.json")):
            errors[name] = bench.failure(["zoo_models.py"], p.returncode, p.stdout)
    for name, why in errors.items():
        log(f"{name}: export failed: {why}")
    return errors


def bench_zoo_model(flowc, name, case_dir, work, cfg, baseline_kib):
    log(f"{name}: compiling (limit {cfg['build_timeout']:.0f} s)")
    case = bench.prepare_case(flowc, name, case_dir, os.path.join(work, name), 1, cfg["build_timeout"])
    result = {"name": name, "what": ZOO[name][1], "flops": case.get("flops"), "input": case["dims"],
              "tolerance": tolerance(case_dir, case["expected"])}
    if "error" in case:
        result.update(error=case["error"], timed_out=case.get("timed_out", False))
        log(f"{name}: {case['error']}")
        return result
    result.update({k: case[k] for k in ("compile_s", "compile_cpu_s", "exe_bytes")})
    runners = bench.time_case(result, {"flowc": lambda: bench.FlowcRunner(case),
                                       "ort": lambda: bench.OrtRunner(case, bench.THREADS)}, bench.THREADS, cfg)
    if "ort" in runners:
        result["ort_version"] = runners["ort"].version
    for what, fn in (("memory", lambda: bench.measure_memory(case, baseline_kib)),
                     ("profile", lambda: top_kernels(case))):
        try:
            result[what] = fn()
        except RuntimeError as e:
            result[f"{what}_error"] = str(e)
    t = result.get("times", {})
    log(f"{name}: " + ", ".join(f"{r}/{n} {t[f'{r}/{n}']['median_ms']:.2f} ms" for n in bench.THREADS
                                 for r in ("flowc", "ort") if f"{r}/{n}" in t)
        + f"; max |Δ| {result.get('max_abs_diff')} (tolerance {result['tolerance']:.1e})")
    return result


def scaling(flowc, models_dir, work, cfg, export_errors):
    """Build times of the recurrent models by sequence length; longer ones skipped after a failure."""
    results, stopped = [], set()
    for name, (_, what) in SCALING.items():
        kind, steps = name.rsplit("_", 1)
        entry = {"name": name, "kind": kind, "steps": int(steps), "what": what}
        if kind in stopped:
            entry["skipped"] = "a shorter sequence already failed or timed out"
        elif name in export_errors:
            entry.update(error=export_errors[name], export_failed=True)
        else:
            log(f"{name}: compiling (limit {cfg['build_timeout']:.0f} s)")
            case = bench.prepare_case(flowc, name, os.path.join(models_dir, name), os.path.join(work, name), 1,
                                      cfg["build_timeout"])
            if "error" in case:
                entry.update(error=case["error"], timed_out=case.get("timed_out", False))
                stopped.add(kind)
            else:
                entry.update(compile_s=case["compile_s"], compile_cpu_s=case["compile_cpu_s"])
            log(f"{name}: " + (entry.get("error") or f"{entry['compile_s']:.2f} s"))
        results.append(entry)
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 rounds, short batches, 60 s build limit (smoke run)")
    ap.add_argument("--models", default=",".join(ZOO), help="comma-separated subset of: " + ", ".join(ZOO))
    ap.add_argument("--out", default=os.path.join(BENCH, "RESULTS.md"), help="the report (default bench/RESULTS.md)")
    ap.add_argument("--build", default=os.path.join(bench.ROOT, "build"), help="flowc build dir (default build)")
    ap.add_argument("--models-dir", default=None, help="exported model cache (default BUILD/bench-models)")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 7, --quick 2)")
    ap.add_argument("--build-timeout", type=float, default=None, help="seconds per flowc build (default 90)")
    ap.add_argument("--no-build", action="store_true", help="use BUILD/tools/flowc as it is")
    ap.add_argument("--no-scaling", action="store_true", help="skip the recurrent build-time scaling")
    args = ap.parse_args(argv)
    names = bench.selected_models(ap, args.models, ZOO)
    build = os.path.abspath(args.build)
    models_dir = os.path.abspath(args.models_dir or os.path.join(build, "bench-models"))
    work = os.path.join(build, "bench-work", "zoo")
    cfg = {"rounds": args.rounds or (2 if args.quick else 7), "seconds": 0.15 if args.quick else 0.3,
           "build_timeout": args.build_timeout or (60.0 if args.quick else 90.0)}
    t_start = time.time()
    load_start = os.getloadavg()[0]
    flowc = os.path.join(build, "tools", "flowc") if args.no_build else bench.build_flowc(build)
    if not os.access(flowc, os.X_OK):
        sys.exit(f"zoo.py: no flowc at {flowc}")
    bench.ensure_ort()
    exports = names + ([] if args.no_scaling else list(SCALING))
    export_errors = export_models(models_dir, exports)
    os.makedirs(work, exist_ok=True)
    baseline_kib = bench.peak_rss_kib(["node", os.path.join(BENCH, "ort_bench.js"), "baseline"])
    results = [{"name": n, "what": ZOO[n][1], "error": export_errors[n], "export_failed": True} if n in export_errors
               else bench_zoo_model(flowc, n, os.path.join(models_dir, n), work, cfg, baseline_kib) for n in names]
    scale = [] if args.no_scaling else scaling(flowc, models_dir, work, cfg, export_errors)
    data = {
        "argv": "".join(f" {a}" for a in (sys.argv[1:] if argv is None else argv)),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": bench.machine_info(), "load_start": load_start, "load_end": os.getloadavg()[0],
        "git": bench.git_rev(), "no_build": args.no_build, "flowc_version": bench.tool_version([flowc, "--version"]),
        "build": os.path.relpath(build, bench.ROOT),
        "ort_version": next((r["ort_version"] for r in results if r.get("ort_version")), "unknown"),
        "node_version": bench.tool_version(["node", "--version"]),
        "cfg": cfg, "ort_baseline_kib": baseline_kib, "models": results, "scaling": scale,
        "seconds": time.time() - t_start,
    }
    raw = os.path.join(os.path.dirname(os.path.abspath(args.out)), report.ZOO_JSON)
    with open(raw, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    report.render(args.out)
    log(f"wrote {raw} and {args.out} ({data['seconds'] / 60:.1f} min)")


if __name__ == "__main__":
    main()
