#!/usr/bin/python3
"""bench/sbp.py — the distribution benchmark of issue 15: SBP programs under mpirun against the same model in
one process, in one run.

    python3 bench/run.py --sbp [--quick] [--models a,b] [--ranks N] [--build DIR] [--models-dir DIR]
                               [--no-build] [--rounds N] [--out bench/RESULTS.md]
    (or python3 bench/sbp.py with the same options)

For the bench MLP (batch 64) and transformer encoder (tools/export_e2e_models.py) four programs run side by
side, in interleaved rounds (each round visits every program once, in the same order, with `--bench` runs
of about 0.4 s after a warm-up; the median over rounds of the runs' medians):
  1 thread     the one-process build at --threads 1,
  2 threads    the same at --threads 2,
  N ranks data    `--ranks N --sbp data` under `mpirun -np N`, one thread per rank,
  N ranks tensor  `--ranks N --sbp tensor`, likewise;
rank 0's `--profile` gives the time a run spends in collectives; every distributed output is compared with
the one-process output (max |Δ|). Issue 15's speed target: with `tensor`, at least 1.6× faster than 1 thread
and no slower than 2 threads. The raw results go to SBP.json beside --out; bench/report.py renders them as the
report's "Distribution" section (bench/report_sbp.py).
"""
import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
import run as bench  # noqa: E402  (re-executes under Debian's python3 when needed; the shared machinery)
import report  # noqa: E402

MODELS = {"mlp_b64": "MLP 784-1024-1024-10, batch 64", "transformer": "2-layer encoder, d 256, seq 128"}
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
LATENCY = re.compile(r"latency: min ([0-9.]+) ms, median ([0-9.]+) ms")
COMM = re.compile(r"communication: ([0-9.]+) ms")


def runners(flowc, name, models_dir, work, ranks):
    """[(label, command prefix, flowc build options)] of the four programs, built into work."""
    onnx_path = os.path.join(models_dir, name, "model.onnx")
    out = []
    for label, opts, threads, mpi in (("1 thread", [], 1, False), ("2 threads", [], 2, False),
                                      (f"{ranks} ranks data", ["--ranks", str(ranks), "--sbp", "data"], 1, True),
                                      (f"{ranks} ranks tensor", ["--ranks", str(ranks), "--sbp", "tensor"], 1, True)):
        exe = os.path.join(work, f"{name}-{'-'.join(opts) or 'one'}".replace("--", ""))
        if not os.path.exists(exe):
            bench.run([flowc, "build", onnx_path, "-o", exe] + opts)
        prefix = (MPIRUN + ["-np", str(ranks)] if mpi else []) + [exe]
        out.append((label, prefix, threads))
    return out


def time_once(prefix, threads, inp, n):
    r = bench.run(prefix + [inp, "--threads", str(threads), "--bench", str(n)])
    m = LATENCY.search(r)
    if not m:
        sys.exit(f"sbp.py: no latency in the output of {' '.join(prefix)}:\n{r[-2000:]}")
    return float(m.group(2))


def bench_model(flowc, name, models_dir, work, ranks, cfg):
    inp = os.path.join(models_dir, name, "test_data_set_0", "input_0.pb")
    progs = runners(flowc, name, models_dir, work, ranks)
    bench.log(f"{name}: timing ({cfg['rounds']} rounds, load average {os.getloadavg()[0]:.2f})")
    # runs per batch: about cfg["seconds"] at the one-thread latency
    first = time_once(progs[0][1], 1, inp, 3)
    n = max(5, int(cfg["seconds"] * 1000 / max(first, 1e-3)))
    times = {label: [] for label, _, _ in progs}
    for _ in range(cfg["rounds"]):
        for label, prefix, threads in progs:
            times[label].append(time_once(prefix, threads, inp, n))
    res = {"name": name, "what": MODELS[name], "runs_per_batch": n, "load": os.getloadavg()[0], "programs": []}
    ref_dir = os.path.join(work, f"{name}-ref")
    shutil.rmtree(ref_dir, ignore_errors=True)
    bench.run(progs[0][1] + [inp, "--threads", "1", "--output-dir", ref_dir])
    import numpy as np
    ref = np.load(os.path.join(ref_dir, "output_0.npy"))
    for label, prefix, threads in progs:
        p = {"label": label, "median_ms": statistics.median(times[label]), "rounds_ms": times[label]}
        if prefix[0] == MPIRUN[0]:
            prof = bench.run(prefix + [inp, "--threads", str(threads), "--bench", str(n), "--profile"])
            m = COMM.search(prof)
            p["comm_ms"] = float(m.group(1)) if m else None
            d = os.path.join(work, f"{name}-{label.replace(' ', '_')}")
            shutil.rmtree(d, ignore_errors=True)
            bench.run(prefix + [inp, "--threads", str(threads), "--output-dir", d])
            p["max_abs_diff"] = float(np.max(np.abs(np.load(os.path.join(d, "output_0.npy")) - ref)))
        res["programs"].append(p)
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 rounds of short batches (smoke run)")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of: " + ", ".join(MODELS))
    ap.add_argument("--ranks", type=int, default=2, help="ranks of the distributed programs (default 2)")
    ap.add_argument("--out", default=os.path.join(BENCH, "RESULTS.md"), help="the report (default bench/RESULTS.md)")
    ap.add_argument("--build", default=os.path.join(bench.ROOT, "build"), help="flowc build dir (default build)")
    ap.add_argument("--models-dir", default=None, help="exported model cache (default BUILD/bench-models)")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 9, --quick 2)")
    ap.add_argument("--no-build", action="store_true", help="use BUILD/tools/flowc as it is")
    args = ap.parse_args(argv)
    if not shutil.which(MPIRUN[0]):
        sys.exit("sbp.py: mpirun is missing (Debian: openmpi-bin; tools/setup.sh installs it)")
    names = bench.selected_models(ap, args.models, list(MODELS))
    build = os.path.abspath(args.build)
    models_dir = os.path.abspath(args.models_dir or os.path.join(build, "bench-models"))
    work = os.path.join(build, "bench-work", "sbp")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cfg = {"rounds": args.rounds or (2 if args.quick else 9), "seconds": 0.2 if args.quick else 0.4}
    t_start, load_start = time.time(), os.getloadavg()[0]
    flowc = os.path.join(build, "tools", "flowc") if args.no_build else bench.build_flowc(build)
    bench.log(f"exporting models into {models_dir}")
    bench.run([sys.executable, os.path.join(bench.ROOT, "tools", "export_e2e_models.py"), models_dir,
               "--models", ",".join(names)])
    results = [bench_model(flowc, n, models_dir, work, args.ranks, cfg) for n in names]
    data = {
        "argv": "".join(f" {a}" for a in (sys.argv[1:] if argv is None else argv)),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": bench.machine_info(), "load_start": load_start, "load_end": os.getloadavg()[0],
        "git": bench.git_rev(), "flowc_version": bench.tool_version([flowc, "--version"]),
        "build": os.path.relpath(build, bench.ROOT), "node_version": bench.tool_version(["node", "--version"]),
        "ranks": args.ranks, "cfg": cfg, "models": results,
        "mpirun": bench.tool_version(["mpirun", "--version"]), "seconds": time.time() - t_start,
    }
    raw = os.path.join(os.path.dirname(os.path.abspath(args.out)), report.SBP_JSON)
    with open(raw, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    report.render(args.out)
    bench.log(f"wrote {raw} and {args.out} ({data['seconds'] / 60:.1f} min)")


if __name__ == "__main__":
    main()
