#!/usr/bin/python3
"""bench/sbp.py — the distribution benchmark of issue 15: SBP programs under mpirun against the same model in
one process, and the cost model's prediction next to each measured time, in one run.

    python3 bench/run.py --sbp [--quick] [--models a,b] [--ranks 2,4] [--build DIR] [--models-dir DIR]
                               [--no-build] [--rounds N] [--out bench/RESULTS.md]
    (or python3 bench/sbp.py with the same options)

For the bench MLP (batch 64) and transformer encoder (tools/export_e2e_models.py) these programs run side by
side, in interleaved rounds (each round visits the programs in the same order, with `--bench` runs of about
0.4 s after a warm-up; the median over rounds of the runs' medians):
  1 thread          the one-process build at --threads 1,
  2 threads         the same at --threads 2,
  N ranks data      `--ranks N --sbp data` under `mpirun -np N`, one thread per rank,
  N ranks tensor    `--ranks N --sbp tensor`, likewise,
  N ranks auto      `--ranks N --sbp auto` (the cost model's plan), likewise,
  N ranks pipeline  `--ranks N --sbp pipeline` (N stages, micro-batches auto), likewise,
for each N of --ranks. Ranks beyond the machine's cores run oversubscribed (mpirun --oversubscribe: 4 ranks on
2 cores take turns), so their programs are visited in fewer rounds (half, at least 2) to keep a default run
within a few minutes. rank 0's `--profile` gives the time a run spends in collectives; every distributed output
is compared with the one-process output (max |Δ|).

Predictions: for each distributed program, `flowc info model.onnx --ranks N --sbp X` prints the cost model's
"sbp predicted" block: one line per strategy (data, tensor, auto), each "0.859 ms (compute 0.840,
communication 0.019)". The program's own strategy's line is its prediction; the three lines of the auto call
are kept for the check that auto is never predicted slower than data or tensor. A pipeline's prediction is
the "pipeline" row of `flowc info --sbp pipeline` (its replayed schedule).

Issue 15's targets, judged by bench/report_sbp.py: `tensor` on 2 ranks at least 1.6× faster than 1 thread and
no slower than 2 threads; every prediction within 25% of the measured time, for 2 and 4 ranks; auto's
prediction no more than data's and tensor's. The raw results go to SBP.json beside --out; bench/report.py
renders them as the report's "Distribution" section.
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
STRATEGIES = ["data", "tensor", "auto"]
PROGRAMS = STRATEGIES + ["pipeline"]  # pipeline: its stages, default micro-batches, its own prediction row
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
LATENCY = re.compile(r"latency: min ([0-9.]+) ms, median ([0-9.]+) ms")
COMM = re.compile(r"communication: ([0-9.]+) ms")
# flowc info's prediction lines: "  data         0.859 ms (compute 0.840, communication 0.019); ..."
PREDICTED = re.compile(r"^\s+(data|tensor|auto)\s+([0-9.]+) ms \(compute ([0-9.]+), communication ([0-9.]+)\)"
                       r"(?:.*; (the search's plan|\w+'s plan[^;\n]*))?", re.M)
PREDICTED_ON = re.compile(r"^sbp predicted\s+(.*)$", re.M)
# "pipeline     2 stages: predicted 1.000 ms a run on this host (avx512; ...); the same ops back to back on one rank 1.436 ms"
PIPELINE = re.compile(r"^pipeline\s+(\d+) stages: predicted ([0-9.]+) ms a run on this host \((.*)\); the same ops", re.M)


def parse_predictions(text):
    """{strategy: {"ms", "compute_ms", "comm_ms"}} (auto also "taken") and the "per rank and run on this host
    (...)" header from flowc info's "sbp predicted" block; sys.exit when a strategy's line is missing."""
    pred = {}
    for m in PREDICTED.finditer(text):
        pred[m.group(1)] = {"ms": float(m.group(2)), "compute_ms": float(m.group(3)), "comm_ms": float(m.group(4))}
        if m.group(1) == "auto" and m.group(5):
            pred["auto"]["taken"] = m.group(5)
    missing = [s for s in STRATEGIES if s not in pred]
    on = PREDICTED_ON.search(text)
    if missing or not on:
        sys.exit(f"sbp.py: flowc info printed no prediction for {', '.join(missing) or 'the host'}:\n{text[-2000:]}")
    return pred, on.group(1).strip()


def predict(flowc, onnx_path, ranks, strategy):
    text = bench.run([flowc, "info", onnx_path, "--ranks", str(ranks), "--sbp", strategy])
    if strategy != "pipeline":
        return parse_predictions(text)
    m = PIPELINE.search(text)
    if not m:
        sys.exit(f"sbp.py: flowc info printed no pipeline prediction:\n{text[-2000:]}")
    return {"pipeline": {"ms": float(m.group(2)), "stages": int(m.group(1))}}, m.group(3)


def program_rounds(ranks, rounds):
    """The rounds in which a program of `ranks` ranks (None: one process) runs: all of them within the cores,
    else half of them (at least 2), spread evenly."""
    cores = os.cpu_count() or 1
    if ranks is None or ranks <= cores:
        return set(range(rounds))
    k = min(rounds, max(2, rounds // 2))
    return {i * rounds // k for i in range(k)}


def runners(flowc, name, models_dir, work, ranks_list, rounds):
    """The programs, built into work: dicts of label, prefix (the command), threads, ranks, sbp, rounds."""
    onnx_path = os.path.join(models_dir, name, "model.onnx")
    specs = [("1 thread", [], 1, None, None), ("2 threads", [], 2, None, None)]
    for n in ranks_list:
        specs += [(f"{n} ranks {s}", ["--ranks", str(n), "--sbp", s], 1, n, s) for s in PROGRAMS]
    out = []
    for label, opts, threads, ranks, sbp in specs:
        exe = os.path.join(work, f"{name}-{'-'.join(opts) or 'one'}".replace("--", ""))
        if not os.path.exists(exe):
            bench.run([flowc, "build", onnx_path, "-o", exe] + opts)
        prefix = (MPIRUN + ["-np", str(ranks)] if ranks else []) + [exe]
        out.append({"label": label, "prefix": prefix, "threads": threads, "ranks": ranks, "sbp": sbp,
                    "rounds": program_rounds(ranks, rounds)})
    return out


def time_once(prefix, threads, inp, n):
    r = bench.run(prefix + [inp, "--threads", str(threads), "--bench", str(n)])
    m = LATENCY.search(r)
    if not m:
        sys.exit(f"sbp.py: no latency in the output of {' '.join(prefix)}:\n{r[-2000:]}")
    return float(m.group(2))


def bench_model(flowc, name, models_dir, work, ranks_list, cfg):
    onnx_path = os.path.join(models_dir, name, "model.onnx")
    inp = os.path.join(models_dir, name, "test_data_set_0", "input_0.pb")
    progs = runners(flowc, name, models_dir, work, ranks_list, cfg["rounds"])
    predictions = {}
    for n in ranks_list:
        predictions[str(n)] = {s: predict(flowc, onnx_path, n, s) for s in PROGRAMS}
    bench.log(f"{name}: timing ({cfg['rounds']} rounds, load average {os.getloadavg()[0]:.2f})")
    # runs per batch: about cfg["seconds"] at the one-thread latency
    first = time_once(progs[0]["prefix"], 1, inp, 3)
    n_runs = max(5, int(cfg["seconds"] * 1000 / max(first, 1e-3)))
    times = {p["label"]: [] for p in progs}
    for i in range(cfg["rounds"]):
        for p in progs:
            if i in p["rounds"]:
                times[p["label"]].append(time_once(p["prefix"], p["threads"], inp, n_runs))
    res = {"name": name, "what": MODELS[name], "runs_per_batch": n_runs, "load": os.getloadavg()[0], "programs": [],
           "predictions": {}}
    ref_dir = os.path.join(work, f"{name}-ref")
    shutil.rmtree(ref_dir, ignore_errors=True)
    bench.run(progs[0]["prefix"] + [inp, "--threads", "1", "--output-dir", ref_dir])
    import numpy as np
    ref = np.load(os.path.join(ref_dir, "output_0.npy"))
    for p in progs:
        out = {"label": p["label"], "ranks": p["ranks"], "sbp": p["sbp"],
               "median_ms": statistics.median(times[p["label"]]), "rounds_ms": times[p["label"]]}
        if p["ranks"]:
            pred, on = predictions[str(p["ranks"])][p["sbp"]]
            out["predicted"] = pred[p["sbp"]]
            prof = bench.run(p["prefix"] + [inp, "--threads", str(p["threads"]), "--bench", str(n_runs), "--profile"])
            m = COMM.search(prof)
            out["comm_ms"] = float(m.group(1)) if m else None
            d = os.path.join(work, f"{name}-{p['label'].replace(' ', '_')}")
            shutil.rmtree(d, ignore_errors=True)
            bench.run(p["prefix"] + [inp, "--threads", str(p["threads"]), "--output-dir", d])
            out["max_abs_diff"] = float(np.max(np.abs(np.load(os.path.join(d, "output_0.npy")) - ref)))
        res["programs"].append(out)
    for n in ranks_list:
        pred, on = predictions[str(n)]["auto"]
        res["predictions"][str(n)] = dict(pred, host=on)
    return res


def parse_ranks(ap, text):
    try:
        ranks = [int(x) for x in text.split(",") if x]
    except ValueError:
        ap.error(f"--ranks: not a comma-separated list of numbers: {text!r}")
    if not ranks or any(n < 2 for n in ranks):
        ap.error(f"--ranks: each a number of ranks ≥ 2: {text!r}")
    return sorted(set(ranks))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 rounds of short batches (smoke run)")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of: " + ", ".join(MODELS))
    ap.add_argument("--ranks", default="2,4", help="comma-separated ranks of the distributed programs (default 2,4)")
    ap.add_argument("--out", default=os.path.join(BENCH, "RESULTS.md"), help="the report (default bench/RESULTS.md)")
    ap.add_argument("--build", default=os.path.join(bench.ROOT, "build"), help="flowc build dir (default build)")
    ap.add_argument("--models-dir", default=None, help="exported model cache (default BUILD/bench-models)")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 9, --quick 2)")
    ap.add_argument("--no-build", action="store_true", help="use BUILD/tools/flowc as it is")
    args = ap.parse_args(argv)
    ranks_list = parse_ranks(ap, args.ranks)
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
    results = [bench_model(flowc, n, models_dir, work, ranks_list, cfg) for n in names]
    data = {
        "argv": "".join(f" {a}" for a in (sys.argv[1:] if argv is None else argv)),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": bench.machine_info(), "load_start": load_start, "load_end": os.getloadavg()[0],
        "git": bench.git_rev(), "flowc_version": bench.tool_version([flowc, "--version"]),
        "build": os.path.relpath(build, bench.ROOT), "node_version": bench.tool_version(["node", "--version"]),
        "ranks": ranks_list, "cores": os.cpu_count(), "cfg": cfg, "models": results,
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
