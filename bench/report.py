#!/usr/bin/python3
"""bench/report.py — renders bench/RESULTS.md from the raw results bench/run.py measured.

    python3 bench/report.py [bench/RESULTS.json] [--out bench/RESULTS.md]

bench/run.py calls write_report() at the end of a run and saves its raw data beside the report
(RESULTS.json). Run on its own, this script re-renders the report from that file without measuring
again — for instance after bench/pass_effects.json (pass name → text, the "Graph passes: measured
effect" table, filled in by whoever measured a pass) changed. Nothing here computes a number that is
not derived from the measured data: latencies, FLOP counts, the FMA peak, RSS and compile times all come
from the run; this file only divides, takes geometric means and compares with the issue's targets.
The "Zoo" section comes from ZOO.json beside the results (bench/zoo.py, `python3 bench/run.py --zoo`), the
"Quantisation" section from INT8.json (bench/int8.py, `python3 bench/run.py --int8`; rendered by
bench/report_int8.py), the "Distribution" section from SBP.json (bench/sbp.py, `python3 bench/run.py --sbp`;
rendered by bench/report_sbp.py).
"""
import argparse
import json
import math
import os
import re

import report_int8
import report_sbp

BENCH = os.path.dirname(os.path.abspath(__file__))
MODELS = ["cnn_b1", "cnn_b64", "mlp_b64", "resnet18", "mobilenet_v2", "squeezenet1_1", "transformer"]
THREADS = [1, 2]
RUNNERS = ["flowc", "ort", "torch"]
RUNNER_NAMES = {"flowc": "flowc", "ort": "onnxruntime", "torch": "PyTorch"}
GEMM_WHERE = {(64, 784, 1024): "MLP layer 1", (64, 1024, 1024): "MLP layer 2",
              (128, 256, 256): "transformer attention projections", (128, 256, 1024): "transformer FF up",
              (128, 1024, 256): "transformer FF down"}


def load_pass_effects():
    path = os.path.join(BENCH, "pass_effects.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def fmt_ms(x):
    return "—" if x is None else (f"{x:.3f}" if x < 1 else f"{x:.2f}" if x < 100 else f"{x:.1f}")


def fmt_pct(x):
    return "—" if x is None else f"{x:.0f}%"


def median_of(res, runner, t, stat="median_ms"):
    s = res.get("times", {}).get(f"{runner}/{t}")
    return s[stat] if s else None


def ort_ratio(res, t):
    """flowc's and onnxruntime's medians at t threads, and flowc / onnxruntime (None when one is missing)."""
    f, o = median_of(res, "flowc", t), median_of(res, "ort", t)
    return f, o, (f / o if f and o else None)


def each_pair(add, models, failed_row, ratios):
    """Yields (result, threads, flowc ms, onnxruntime ms, ratio) for each model × thread count of a latency
    table, appending the measured ratios to `ratios`; a model that failed gets add(failed_row(result))."""
    for res in models:
        if "error" in res:
            add(failed_row(res))
            continue
        for t in THREADS:
            f, o, ratio = ort_ratio(res, t)
            if ratio:
                ratios.append((res["name"], t, ratio))
            yield res, t, f, o, ratio


def add_geomean(add, ratios):
    """The paragraph under a latency table: the geometric mean of its flowc / onnxruntime ratios (returned)."""
    geomean = geometric_mean([r for _, _, r in ratios])
    add(f"Geometric mean of the flowc / onnxruntime ratios over {len(ratios)} model × thread pairs: "
        + ("—" if geomean is None else f"**{geomean:.2f}**") + ".")
    add("")
    return geomean


def min_ratio(res, t):
    """flowc's best run over onnxruntime's best run: less sensitive to other jobs than the medians."""
    f, o = median_of(res, "flowc", t, "min_ms"), median_of(res, "ort", t, "min_ms")
    return "—" if not (f and o) else f"{f / o:.2f}"


def gflops(flops, ms):
    return None if not flops or not ms else flops / (ms * 1e-3) / 1e9


def verdict(ok):
    return "**MET**" if ok else "**NOT MET**"


def plural(t):
    return f"{t} thread" + ("s" if t > 1 else "")


def first_line(text, n=120):
    return (text or "?").strip().splitlines()[0][:n] if (text or "").strip() else "?"


def section_machine(add, data):
    mc = data["machine"]
    add("## Machine and versions")
    add("")
    add(f"- CPU: {mc['model']}, {mc['cpus']} CPUs ({mc['threads_per_core']} thread per core)"
        + (f", under {mc['hypervisor']}" if mc["hypervisor"] else "") + f"; Linux {mc['kernel']}")
    add(f"- Caches (lscpu, summed over instances): L1d {mc['l1d']}, L2 {mc['l2']}, L3 {mc['l3']}")
    add(f"- Load average (1 min) at start {data['load_start']:.2f}, at end {data['load_end']:.2f}: the machine is "
        "shared, so other jobs may have run during the measurements")
    add(f"- flowc: git {data['git']} ({data['flowc_version']}), build dir `{data['build']}`"
        + (" used as it was (--no-build: the binary may predate the tree)" if data["no_build"] else "")
        + "; models built with `flowc build model.onnx -o exe` (default -O2, default CPU)")
    add(f"- onnxruntime: onnxruntime-node {data['ort_version']} (npm), node {data['node_version']}")
    add(f"- PyTorch: {data['torch_version']} (Debian python3-torch), BLAS in use: {data['blas']}")
    if "OpenBLAS" not in data["blas"] and "MKL" not in data["blas"]:
        add("  - **PyTorch is not using OpenBLAS**: its Linear and MatMul run about 20× slower on the reference "
            "BLAS, so its column flatters flowc. Install libopenblas0-openmp.")
    add(f"- FMA probe compiler: {data['peak']['compiler']}")
    add("")


def section_peak(add, data):
    p = data["peak"]
    samples = ", ".join(f"{s['gflops']:.1f} on {plural(s['threads'])}" for s in p["samples"])
    add("## FMA peak")
    add("")
    add(f"bench/fma_peak.c, {p['isa']}: {p['chains']} independent accumulator chains with distinct start values, "
        f"{p['unroll']} steps per loop iteration; run.py checked that the disassembly of `{p['asm']['function']}` "
        f"holds {p['asm']['fmas']} FMAs on {len(p['asm']['registers'])} distinct registers. Best of "
        f"{data['cfg']['peak_reps']} short repetitions, measured at the start and at the end of the run "
        f"(GFLOP/s of each: {samples}).")
    add("")
    add("| threads | GFLOP/s | per core |")
    add("|---|---|---|")
    for t in THREADS:
        g = p[f"gflops_{t}t"]
        add(f"| {t} | {g:.1f} | {g / t:.1f} |")
    add("")
    add(f"Percentages of peak below use the 1-thread figure, {p['gflops_1t']:.1f} GFLOP/s, times the thread "
        "count.")
    add("")


def section_models(add, data, peak1):
    """The latency table; returns the (model, threads, flowc/ORT ratio) triples."""
    add("## Models: median latency")
    add("")
    add(f"{data['cfg']['rounds']} interleaved rounds; each round times every runner at every thread count once, "
        f"as a batch of K runs after the runner's warm-up (K chosen so a batch lasts about "
        f"{data['cfg']['seconds']} s, at least 3), the runner order rotating between rounds. The time is the "
        "median over rounds of the batch medians. GFLOP/s = the model's FLOPs from `flowc info` (2 per "
        "multiply-accumulate of conv and matmul, direct convolution) / median time. Load: the 1-minute load "
        "average when the model's timing began (2 means both cores already busy with other jobs). "
        "The min ratio compares the fastest single runs, for reference when the machine was busy; the targets "
        "use the medians.")
    add("")
    add("| model | GFLOP | threads | flowc ms | onnxruntime ms | PyTorch ms | flowc / ORT | (min) "
        "| flowc GFLOP/s (% peak) | ORT GFLOP/s (% peak) | PyTorch GFLOP/s (% peak) | load |")
    add("|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios = []
    def failed(res):
        return f"| {res['name']} | | | failed: {first_line(res.get('error'))} | | | | | | | | |"
    for res, t, f, o, ratio in each_pair(add, data["models"], failed, ratios):
        y = median_of(res, "torch", t)
        cells = []
        for ms in (f, o, y):
            g = gflops(res["flops"], ms)
            cells.append("—" if g is None else f"{g:.1f} ({fmt_pct(100 * g / (peak1 * t))})")
        add(f"| {res['name']} | {res['flops'] / 1e9:.3f} | {t} | {fmt_ms(f)} | {fmt_ms(o)} | {fmt_ms(y)} | "
            f"{'—' if ratio is None else f'{ratio:.2f}'} | {min_ratio(res, t)} | {' | '.join(cells)} "
            f"| {res['load']:.1f} |")
    add("")
    geomean = add_geomean(add, ratios)
    floor = data.get("floor", {})
    f, o = median_of(floor, "flowc", 1), median_of(floor, "ort", 1)
    if f and o:
        add(f"Fixed cost of one run, timed the same way on a model of one Relu over 16 floats (1 thread): flowc "
            f"{f * 1e3:.1f} µs, onnxruntime {o * 1e3:.1f} µs (for onnxruntime-node, the call from JavaScript into "
            "the session and the output tensor it returns). It is part of every time above and matters only "
            "for models that run in well under a millisecond: cnn_b1.")
        add("")
    section_failures(add, data["models"])
    return ratios


def section_failures(add, results):
    """Lists the runners that failed (their cells show —), with the first line of each error."""
    failures = [(res["name"], r, e) for res in results for r, e in res.get("runner_errors", {}).items()]
    if not failures:
        return
    add("Failed runners (shown as — above):")
    add("")
    for name, runner, err in failures:
        add(f"- {name}, {RUNNER_NAMES[runner]}: `{first_line(err, 300)}`")
    add("")


def geometric_mean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def section_resources(add, data):
    add("## Compile time, size, memory, correctness")
    add("")
    add("Compile: wall time of `flowc build` (its CPU time in brackets). Peak RSS: `ru_maxrss` (GNU time's %M) of "
        "a process that loads the model and runs it 3 times on 1 thread — the flowc executable itself; for "
        "onnxruntime, a node process that creates the same session (level 'all', 1 intra-op thread) and runs "
        f"it, minus a node process that only loads onnxruntime-node ({data['ort_baseline_kib'] / 1024:.1f} MiB: "
        "node itself and the onnxruntime library), so the net figure is what the model costs onnxruntime. "
        "Max |Δ|: largest absolute difference of each runner's output on the benchmark input from the "
        "exported PyTorch output (PyTorch's own: the re-created module against its export).")
    add("")
    add("| model | compile s | exe MiB | flowc RSS MiB | ORT RSS MiB (net) | ORT RSS MiB (raw) "
        "| max abs diff flowc / ORT / PyTorch |")
    add("|---|---|---|---|---|---|---|")
    for res in data["models"]:
        if "compile_s" not in res:
            add(f"| {res['name']} | failed | | | | | |")
            continue
        cs = f"{res['compile_s']:.2f} ({res['compile_cpu_s']:.2f})"
        if len(res["compile_all_s"]) > 1:
            cs += f", best of {len(res['compile_all_s'])}"
        mem = res.get("memory")
        memcells = (f"{mem['flowc_kib'] / 1024:.1f} | {mem['ort_net_kib'] / 1024:.1f} | {mem['ort_kib'] / 1024:.1f}"
                    if mem else "— | — | —")
        d = res.get("max_abs_diff", {})
        diffs = " / ".join("—" if r not in d else f"{d[r]:.1e}" for r in RUNNERS)
        add(f"| {res['name']} | {cs} | {res['exe_bytes'] / 2**20:.1f} | {memcells} | {diffs} |")
    add("")


PROBES = ["fma_probe", "ukr_probe"]


def probe_gflops(res, probe):
    """A probe's median GFLOP/s in a GEMM case's rounds (None when it was not run)."""
    return gflops(res.get("probe_flops", {}).get(probe), median_of(res, probe, 1))


def fmt_probe(res, probe, peak1):
    g = probe_gflops(res, probe)
    return "—" if g is None else f"{g:.1f} ({fmt_pct(100 * g / peak1)})"


def section_gemm(add, data, peak1):
    """The GEMM table; returns flowc's % of peak at 1024³ (None when not measured)."""
    add("## GEMM micro-benchmarks (1 thread)")
    add("")
    if not data["gemms"]:
        add("Not run (--no-gemm).")
        add("")
        return None
    add("One MatMul, Y[M,N] = A[M,K] · B[K,N], A a graph input and B a constant initializer (the weight "
        "layout of the models); FLOPs 2·M·K·N. Same rounds and batches as above, flowc and onnxruntime "
        "interleaved. Max |Δ| is against a float64 NumPy product.")
    add("")
    add("Two probes ran in the same rounds, interleaved with the GEMMs, and are shown as their median GFLOP/s "
        "(% of the peak above): the FMA peak probe (register-only FMA chains) and the microkernel probe "
        "(bench/ukr_probe.c: flowc's 6×16 microkernel loop, loads, broadcasts and FMAs, over slivers that "
        "stay in L1, so it never waits on memory). On a quiet core both run near the peak; when the "
        "microkernel probe falls well below it while the FMA probe does not, the core's load ports and "
        "front end were shared with other work (here: other guests of the host), and the GEMMs timed in "
        "those rounds paid for it too.")
    add("")
    add("| M×K×N | shape of | flowc ms | GFLOP/s | % peak | ORT ms | GFLOP/s | % peak | flowc / ORT | (min) "
        "| FMA probe | microkernel probe | max abs diff flowc / ORT | load |")
    add("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    pct_1024 = None
    for res in data["gemms"]:
        m, k, n = res["shape"]
        where = GEMM_WHERE.get((m, k, n), "cube")
        if "error" in res:
            add(f"| {m}×{k}×{n} | {where} | failed: {first_line(res.get('error'))} | | | | | | | | | | | |")
            continue
        f, o = median_of(res, "flowc", 1), median_of(res, "ort", 1)
        gf, go = gflops(res["flops"], f), gflops(res["flops"], o)
        if (m, k, n) == (1024, 1024, 1024) and gf is not None:
            pct_1024 = 100 * gf / peak1
        d = res.get("max_abs_diff", {})
        cells = []
        for g in (gf, go):
            cells.append("— | —" if g is None else f"{g:.1f} | {fmt_pct(100 * g / peak1)}")
        diffs = " / ".join("—" if r not in d else f"{d[r]:.1e}" for r in ("flowc", "ort"))
        probes = " | ".join(fmt_probe(res, p, peak1) for p in PROBES)
        add(f"| {m}×{k}×{n} | {where} | {fmt_ms(f)} | {cells[0]} | {fmt_ms(o)} | {cells[1]} | "
            f"{'—' if not (f and o) else f'{f / o:.2f}'} | {min_ratio(res, 1)} | {probes} | {diffs} | "
            f"{res['load']:.1f} |")
    add("")
    section_failures(add, data["gemms"])
    return pct_1024


def section_targets(add, data, peak1, ratios, pct_1024):
    add("## Targets")
    add("")
    by_name = {r["name"]: r for r in data["models"]}
    expected = len(MODELS) * len(THREADS)
    complete = len(ratios) == expected
    worst = max(ratios, key=lambda x: x[2]) if ratios else None
    slower = [f"{n} at {plural(t)} ({r:.2f})" for n, t, r in ratios if r > 1.0]
    add(f"- flowc / onnxruntime median time ratio ≤ 1.0 for every model at 1 and 2 threads: "
        f"{len(ratios)} of {expected} pairs measured"
        + (f", worst {worst[2]:.2f} ({worst[0]}, {plural(worst[1])})" if worst else "")
        + (f"; slower on {len(slower)}: {', '.join(slower)}" if slower else "")
        + f" — {verdict(complete and not slower)}")
    geomean = geometric_mean([r for _, _, r in ratios])
    add(f"- geometric mean ratio ≤ 0.8 over the {expected} pairs: "
        + ("not measured" if geomean is None else f"{geomean:.2f} over {len(ratios)} pairs")
        + f" — {verdict(complete and geomean is not None and geomean <= 0.8)}")
    add("- GEMM 1024³ ≥ 90% of the FMA peak on 1 thread: "
        + ("not measured" if pct_1024 is None
           else f"{pct_1024:.0f}% ({pct_1024 * peak1 / 100:.1f} of {peak1:.1f} GFLOP/s)")
        + f" — {verdict(pct_1024 is not None and pct_1024 >= 90)}")
    g1024 = next((g for g in data["gemms"] if g.get("shape") == [1024, 1024, 1024]), {})
    best_ms = median_of(g1024, "flowc", 1, "min_ms")
    if pct_1024 is not None and best_ms:
        probes = [(p, probe_gflops(g1024, p)) for p in PROBES]
        add(f"  (its fastest single run: {100 * gflops(g1024['flops'], best_ms) / peak1:.0f}%"
            + "".join(f"; {name} in the same rounds, by median: {fmt_pct(100 * g / peak1)}"
                      for name, g in zip(("FMA probe", "microkernel probe"), (g for _, g in probes)) if g)
            + ")")
    r18 = by_name.get("resnet18", {})
    r18_ms = median_of(r18, "flowc", 1)
    r18_g = gflops(r18.get("flops"), r18_ms)
    add("- ResNet-18 at 1 thread ≥ 100% of the FMA peak in effective GFLOP/s (direct-convolution FLOPs / time): "
        + ("not measured" if r18_g is None else f"{r18_g:.1f} GFLOP/s = {100 * r18_g / peak1:.0f}% "
           f"({r18['flops'] / 1e9:.2f} GFLOP in {fmt_ms(r18_ms)} ms)")
        + f" — {verdict(r18_g is not None and r18_g >= peak1)}")
    r18_c = r18.get("compile_s")
    add("- ResNet-18 compiles in ≤ 5 s at -O2: "
        + ("not measured" if r18_c is None else f"{r18_c:.2f} s wall (best of {len(r18['compile_all_s'])}; "
           f"{r18['compile_cpu_s']:.2f} s CPU)") + f" — {verdict(r18_c is not None and r18_c <= 5.0)}")
    mem = r18.get("memory")
    add("- ResNet-18 executable's peak RSS ≤ onnxruntime's for the same model: "
        + ("not measured" if not mem else f"{mem['flowc_kib'] / 1024:.1f} MiB vs {mem['ort_net_kib'] / 1024:.1f} "
           f"MiB (onnxruntime net of its {data['ort_baseline_kib'] / 1024:.1f} MiB baseline; "
           f"{mem['ort_kib'] / 1024:.1f} MiB raw)")
        + f" — {verdict(bool(mem) and mem['flowc_kib'] <= mem['ort_net_kib'])}")
    with_mem = [r for r in data["models"] if r.get("memory")]
    if with_mem:
        within = sum(r["memory"]["flowc_kib"] <= r["memory"]["ort_net_kib"] for r in with_mem)
        add(f"  (all models: the flowc executable's peak RSS ≤ onnxruntime's net RSS on {within} of {len(with_mem)})")
    add("- outputs within the end-to-end tolerances: checked by the e2e test suite (`meson test --suite e2e`), "
        "not by this benchmark; the max |Δ| columns above show each runner's distance from the reference "
        "on the benchmark input.")
    add("")
    return geomean


def section_passes(add, effects):
    add("## Graph passes: measured effect")
    add("")
    if not effects:
        add("No measurements recorded yet: bench/pass_effects.json (a JSON object, pass name → text) is absent "
            "or empty.")
        add("")
        return
    add("From bench/pass_effects.json (measured by `python3 bench/pass_effects.py`: each pass off and on, interleaved; `python3 bench/report.py` "
        "re-renders this file after it changes):")
    add("")
    add("| pass | measured effect |")
    add("|---|---|")
    for name, text in effects.items():
        cell = str(text).replace("|", "\\|").replace("\n", " ")
        add(f"| {name} | {cell} |")
    add("")



# ---- the zoo (bench/zoo.py) --------------------------------------------------------------------------

ZOO_JSON = "ZOO.json"  # bench/zoo.py's raw results, beside the report
INT8_JSON = "INT8.json"  # bench/int8.py's raw results (rendered by bench/report_int8.py)
SBP_JSON = "SBP.json"  # bench/sbp.py's raw results (rendered by bench/report_sbp.py)
ZOO_RSS_LIMIT, ZOO_RATIO_LIMIT, ZOO_GEOMEAN_LIMIT, RNN_BUILD_LIMIT_S, RNN_LONG_STEPS = 1.2, 1.0, 0.8, 5.0, 1000


def load_int8_cpus(path):
    """The quantisation runs with --cpu (INT8.<cpu>.json beside the report), by file name."""
    folder = os.path.dirname(os.path.abspath(path))
    out = []
    for name in sorted(os.listdir(folder)):
        if name.startswith("INT8.") and name.endswith(".json") and name != INT8_JSON:
            with open(os.path.join(folder, name)) as f:
                out.append(json.load(f))
    return out


def load_beside(path, name):
    """The JSON file `name` in the report's folder, or None."""
    p = os.path.join(os.path.dirname(os.path.abspath(path)), name)
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


def zoo_build_failure(res):
    what = "export failed" if res.get("export_failed") else "build timed out" if res.get("timed_out") else "build failed"
    return f"{what}: {first_line(res.get('error'))}"


def kernel_cell(k):
    """A --profile row as "conv `…block.0.0/Conv` 38%": the kernel's op kind, then the end of its node name
    (the ONNX node it comes from; the start of a long path says less than its end)."""
    m = re.fullmatch(r"node '(.*)' \((.*)\)", k["kernel"])
    kind, name = (m.group(2), m.group(1)) if m else ("", k["kernel"])
    name = name if len(name) <= 40 else "…" + name[-39:]
    return f"{kind} `{name}` {k['share']:.0f}%".replace("|", "\\|").strip()


def section_zoo(add, zoo):
    """The Zoo section: latency, resources, kernels, the recurrent build scaling and the zoo's targets."""
    add("## Zoo (issue 13)")
    add("")
    add(f"Produced by `python3 bench/run.py --zoo{zoo['argv']}` on {zoo['date']} in {zoo['seconds'] / 60:.1f} min "
        f"(git {zoo['git']}, onnxruntime-node {zoo['ort_version']}; load average {zoo['load_start']:.2f} at start, "
        f"{zoo['load_end']:.2f} at end); raw data in {ZOO_JSON}. Models from bench/zoo_models.py, random seeded "
        "weights, exported by PyTorch at bench time. flowc and onnxruntime timed as above "
        f"({zoo['cfg']['rounds']} interleaved rounds, batches of about {zoo['cfg']['seconds']} s); each `flowc "
        f"build` limited to {zoo['cfg']['build_timeout']:.0f} s.")
    add("")
    add("| model | covers | GFLOP | threads | flowc ms | onnxruntime ms | flowc / ORT | (min) | load |")
    add("|---|---|---|---|---|---|---|---|---|")
    ratios = []
    def failed(res):
        return f"| {res['name']} | {res['what']} | | | {zoo_build_failure(res)} | | | | |"
    for res, t, f, o, ratio in each_pair(add, zoo["models"], failed, ratios):
        add(f"| {res['name']} | {res['what']} | {res['flops'] / 1e9:.3f} | {t} | {fmt_ms(f)} | {fmt_ms(o)} | "
            f"{'—' if ratio is None else f'{ratio:.2f}'} | {min_ratio(res, t)} | {res['load']:.1f} |")
    add("")
    geomean = add_geomean(add, ratios)
    section_failures(add, zoo["models"])
    add("Compile: wall time of `flowc build` (CPU time in brackets). Peak RSS as above (onnxruntime net of its "
        f"{zoo['ort_baseline_kib'] / 1024:.1f} MiB baseline; the RSS ratio is flowc over that net figure). "
        "Max |Δ| against PyTorch's output; the tolerance is max(1e-4 · max|y|, 10 × PyTorch's own float32 vs "
        "float64 error) + 1e-5.")
    add("")
    add("| model | compile s | exe MiB | flowc RSS MiB | ORT RSS MiB net (raw) | RSS ratio "
        "| max abs diff flowc / ORT | tolerance | within |")
    add("|---|---|---|---|---|---|---|---|---|")
    for res in zoo["models"]:
        if "error" in res:
            add(f"| {res['name']} | {zoo_build_failure(res)} | | | | | | | |")
            continue
        mem = res.get("memory")
        memcells = ("— | — | —" if not mem else
                    f"{mem['flowc_kib'] / 1024:.1f} | {mem['ort_net_kib'] / 1024:.1f} ({mem['ort_kib'] / 1024:.1f}) "
                    f"| {mem['flowc_kib'] / max(mem['ort_net_kib'], 1):.2f}")
        d = res.get("max_abs_diff", {})
        diffs = " / ".join("—" if r not in d else f"{d[r]:.1e}" for r in ("flowc", "ort"))
        ok = [r for r in ("flowc", "ort") if r in d and d[r] <= res["tolerance"]]
        within = ", ".join(f"{RUNNER_NAMES[r]} {'ok' if r in ok else '**OFF**'}" for r in ("flowc", "ort") if r in d)
        add(f"| {res['name']} | {res['compile_s']:.2f} ({res['compile_cpu_s']:.2f}) | {res['exe_bytes'] / 2**20:.1f} "
            f"| {memcells} | {diffs} | {res['tolerance']:.1e} | {within or '—'} |")
    add("")
    add("Top three kernels by time, from the flowc executable's `--profile` (1 thread, mean of 5 runs): share "
        "of the time in kernels.")
    add("")
    add("| model | kernels | ms in kernels | first | second | third |")
    add("|---|---|---|---|---|---|")
    for res in zoo["models"]:
        prof = res.get("profile")
        if not prof:
            continue
        cells = [kernel_cell(k) for k in prof["top"]] + [""] * (3 - len(prof["top"]))
        add(f"| {res['name']} | {prof['kernels']} | {fmt_ms(prof['kernel_ms'])} | {' | '.join(cells)} |")
    add("")
    section_scaling(add, zoo)
    section_zoo_targets(add, zoo, ratios, geomean)


def section_scaling(add, zoo):
    if not zoo.get("scaling"):
        return
    add("Recurrent models: build time by sequence length (`flowc build`, wall; the model at each length is the "
        "zoo's, with a longer input).")
    add("")
    add("| model | steps | build s |")
    add("|---|---|---|")
    for e in zoo["scaling"]:
        cell = (f"not attempted: {e['skipped']}" if "skipped" in e else zoo_build_failure(e) if "error" in e
                else f"{e['compile_s']:.2f} ({e['compile_cpu_s']:.2f} CPU)")
        add(f"| {e['what']} | {e['steps']} | {cell} |")
    add("")


def scaling_verdicts(zoo):
    """(text, met) for the 1000-step build limit and for linear growth, over each recurrent kind."""
    kinds = {}
    for e in zoo.get("scaling", []):
        kinds.setdefault(e["kind"], []).append(e)
    long_parts, growth_parts, long_ok, growth_ok = [], [], bool(kinds), bool(kinds)
    for kind, es in kinds.items():
        es.sort(key=lambda e: e["steps"])
        last = next((e for e in es if e["steps"] == RNN_LONG_STEPS), None)
        if last and "compile_s" in last:
            long_parts.append(f"{kind} {last['compile_s']:.2f} s")
            long_ok &= last["compile_s"] <= RNN_BUILD_LIMIT_S
        else:
            long_parts.append(f"{kind} " + ("not measured" if not last else "not attempted" if "skipped" in last
                                            else "timed out" if last.get("timed_out") else "failed"))
            long_ok = False
        built = [e for e in es if "compile_s" in e]
        steps = []
        for a, b in zip(built, built[1:]):
            growth = b["compile_s"] / a["compile_s"]
            steps.append(f"{a['steps']}→{b['steps']} steps ×{growth:.2f} (steps ×{b['steps'] / a['steps']:.1f})")
            growth_ok &= growth <= b["steps"] / a["steps"]
        if len(built) < len(es):
            steps.append(f"{len(es) - len(built)} length(s) not built")
            growth_ok = False
        growth_parts.append(f"{kind}: " + ", ".join(steps or ["nothing to compare"]))
    return "; ".join(long_parts), long_ok, "; ".join(growth_parts), growth_ok


def section_zoo_targets(add, zoo, ratios, geomean):
    add("### Zoo targets")
    add("")
    expected = len(zoo["models"]) * len(THREADS)
    failed = [r["name"] for r in zoo["models"] if "error" in r]
    slower = [f"{n} at {plural(t)} ({r:.2f})" for n, t, r in ratios if r > ZOO_RATIO_LIMIT]
    worst = max(ratios, key=lambda x: x[2]) if ratios else None
    complete = len(ratios) == expected
    add(f"- every zoo model ≤ {ZOO_RATIO_LIMIT:.1f}× onnxruntime's median at 1 and 2 threads: {len(ratios)} of "
        f"{expected} pairs measured"
        + (f" (not built: {', '.join(failed)})" if failed else "")
        + (f", worst {worst[2]:.2f} ({worst[0]}, {plural(worst[1])})" if worst else "")
        + (f"; slower on {len(slower)}: {', '.join(slower)}" if slower else "")
        + f" — {verdict(complete and not slower)}")
    add(f"- geometric mean ≤ {ZOO_GEOMEAN_LIMIT} over the zoo: "
        + ("not measured" if geomean is None else f"{geomean:.2f} over {len(ratios)} of {expected} pairs")
        + f" — {verdict(complete and geomean is not None and geomean <= ZOO_GEOMEAN_LIMIT)}")
    with_mem = [r for r in zoo["models"] if r.get("memory")]
    over = [f"{r['name']} ({r['memory']['flowc_kib'] / max(r['memory']['ort_net_kib'], 1):.2f})" for r in with_mem
            if r["memory"]["flowc_kib"] > ZOO_RSS_LIMIT * r["memory"]["ort_net_kib"]]
    add(f"- peak RSS ≤ {ZOO_RSS_LIMIT}× onnxruntime's (net) for every zoo model: {len(with_mem)} of "
        f"{len(zoo['models'])} measured" + (f"; over on {len(over)}: {', '.join(over)}" if over else "")
        + f" — {verdict(len(with_mem) == len(zoo['models']) and not over)}")
    diffs = [r for r in zoo["models"] if "flowc" in r.get("max_abs_diff", {})]
    off = [r["name"] for r in diffs if r["max_abs_diff"]["flowc"] > r["tolerance"]]
    add(f"- flowc's output within the tolerance of PyTorch's: {len(diffs) - len(off)} of {len(zoo['models'])}"
        + (f"; off on {', '.join(off)}" if off else "") + f" — {verdict(len(diffs) == len(zoo['models']) and not off)}")
    if zoo.get("scaling"):
        long_text, long_ok, growth_text, growth_ok = scaling_verdicts(zoo)
        add(f"- a {RNN_LONG_STEPS}-step GRU/LSTM model builds in ≤ {RNN_BUILD_LIMIT_S:.0f} s: {long_text} — "
            f"{verdict(long_ok)}")
        add(f"- build time grows at most linearly with the sequence length (build-time ratio ≤ steps ratio): "
            f"{growth_text} — {verdict(growth_ok)}")
    else:
        add("- recurrent build-time scaling: not run (--no-scaling)")
    add("")


def write_zoo_only(path, zoo, int8=None, sbp=None):
    """The report when only the zoo, the quantisation and/or the distribution benchmark were measured (no
    RESULTS.json)."""
    lines = ["# flowc CPU benchmark", ""]
    some = zoo or int8 or sbp
    mc = some["machine"]
    lines += [f"Machine: {mc['model']}, {mc['cpus']} CPUs; flowc {some['flowc_version']}, build dir "
              f"`{some['build']}`; node {some['node_version']}. The main benchmark (`python3 bench/run.py`) has not "
              "been run beside this report.", ""]
    if zoo:
        section_zoo(lines.append, zoo)
    if int8:
        report_int8.section_int8(lines.append, int8)
    for extra in load_int8_cpus(path):
        report_int8.section_int8(lines.append, extra)
    if sbp:
        report_sbp.section_sbp(lines.append, sbp)
    with open(path, "w") as f:
        f.write("\n".join(lines))


def render(path):
    """Re-renders the report at `path` from the raw results beside it (RESULTS.json, ZOO.json, INT8.json,
    SBP.json)."""
    raw = os.path.splitext(path)[0] + ".json"
    if os.path.exists(raw):
        with open(raw) as f:
            return write_report(path, json.load(f))
    zoo, int8, sbp = load_beside(path, ZOO_JSON), load_beside(path, INT8_JSON), load_beside(path, SBP_JSON)
    if zoo or int8 or sbp:
        write_zoo_only(path, zoo, int8, sbp)
    return None

def write_report(path, data, effects=None, zoo=None):
    """Writes the Markdown report for `data` (run.py's results), with the zoo section when ZOO.json (or
    `zoo`) is there; returns the geometric mean ratio."""
    peak1 = data["peak"]["gflops_1t"]
    lines = []
    add = lines.append
    add("# flowc CPU benchmark (issue 4)")
    add("")
    add(f"Produced by `python3 bench/run.py{data['argv']}` on {data['date']} in {data['seconds'] / 60:.1f} min. "
        "Every number below was measured by that run; the raw data is in RESULTS.json beside this file "
        "(`python3 bench/report.py` re-renders this report from it).")
    add("")
    section_machine(add, data)
    section_peak(add, data)
    ratios = section_models(add, data, peak1)
    section_resources(add, data)
    pct_1024 = section_gemm(add, data, peak1)
    geomean = section_targets(add, data, peak1, ratios, pct_1024)
    zoo = load_beside(path, ZOO_JSON) if zoo is None else zoo
    if zoo:
        section_zoo(add, zoo)
    int8 = load_beside(path, INT8_JSON)
    if int8:
        report_int8.section_int8(add, int8)
    for extra in load_int8_cpus(path):
        report_int8.section_int8(add, extra)
    sbp = load_beside(path, SBP_JSON)
    if sbp:
        report_sbp.section_sbp(add, sbp)
    section_passes(add, load_pass_effects() if effects is None else effects)
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return geomean


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="?", default=os.path.join(BENCH, "RESULTS.json"))
    ap.add_argument("--out", default=None, help="the report (default: the results file with .md)")
    args = ap.parse_args()
    out = args.out or os.path.splitext(args.results)[0] + ".md"
    if os.path.exists(args.results):
        with open(args.results) as f:
            write_report(out, json.load(f), zoo=load_beside(args.results, ZOO_JSON))
    else:
        render(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
