"""bench/report_int8.py — the "Quantisation (issue 14)" section of bench/RESULTS.md, from INT8.json.

bench/int8.py measures and writes INT8.json beside the report; bench/report.py calls section_int8() when the
file is there. As in report.py, nothing here is measured or typed in: it divides the measured medians,
converts differences into output quantisation steps (the step each QDQ model's info.json records) and
compares with issue 14's targets, all at 1 thread as the issue states them.
"""
import re

import report as rp


RUNNERS = ["flowc_f32", "flowc_int8", "ort", "torch"]
NAMES = {"flowc_f32": "flowc f32", "flowc_int8": "flowc QDQ", "ort": "onnxruntime QDQ", "torch": "PyTorch int8"}
# Issue 14's targets: speed-up of flowc's int8 build over its f32 build per model, flowc QDQ / onnxruntime
# on the same file, artefact size, and accuracy against PyTorch's int8 output.
# Models not named here (bench/int8.py's other QDQ models) are measured beyond the targets.
SPEEDUP = {"qdq_resnet18": 1.3, "qdq_mobilenet_v2": 1.6, "qdq_cnn_b64": 1.6, "mlp_b64": 1.5, "transformer": 1.5}
ORT_TARGET = ("qdq_resnet18", "qdq_mobilenet_v2")  # the issue states the onnxruntime target for these two
ORT_LIMIT, SIZE_LIMIT, STEP_LIMIT = 0.6, 0.3, 4
# A difference in steps is (a - b) / step of dequantised f32 values: a whole number up to their rounding
# (4.0000009 for 4 steps).
STEP_ROUNDING = 1e-3


def ratio(a, b):
    return a / b if a and b else None


def fmt_ratio(x):
    return "—" if x is None else f"{x:.2f}"


def speedup(r):
    """flowc's f32 time over its int8 time at 1 thread."""
    return ratio(rp.median_of(r, "flowc_f32", 1), rp.median_of(r, "flowc_int8", 1))


def ort_share(r):
    """flowc's int8 time over onnxruntime's on the same file, at 1 thread."""
    return ratio(rp.median_of(r, "flowc_int8", 1), rp.median_of(r, "ort", 1))


def size_share(r):
    return ratio(r.get("flowc_int8_exe_bytes"), r.get("flowc_f32_exe_bytes"))


def fmt_steps(r, runner):
    x = r.get("max_steps", {}).get(runner)
    return "—" if x is None else f"{x:.0f}"


def fmt_mib(n):
    return "—" if n is None else f"{n / 2**20:.1f}"


def gops_cell(flops, ms, peak):
    g = rp.gflops(flops, ms)
    return "—" if g is None else f"{g:.1f} ({rp.fmt_pct(100 * g / peak)})"


def raw_name(cpu):
    """The raw results' file beside the report: INT8.json for flowc's default CPUs, INT8.<cpu>.json for a run
    with --cpu (its own section, so that a default run and an AVX2-only run stand side by side)."""
    return rp.INT8_JSON if not cpu else "INT8." + re.sub(r"[^A-Za-z0-9_.-]", "+", cpu) + ".json"


def section_int8(add, d):
    ip, fp = d["int8_peak"], d["peak"]
    add("## Quantisation (issue 14)" + (f", `--cpu {d['cpu']}`" if d.get("cpu") else ""))
    add("")
    add(f"Produced by `python3 bench/run.py --int8{d['argv']}` on {d['date']} in {d['seconds'] / 60:.1f} min (git "
        f"{d['git']}, onnxruntime-node {d['ort_version']}, PyTorch {d['torch_version']}; load average "
        f"{d['load_start']:.2f} at start, {d['load_end']:.2f} at end); raw data in {raw_name(d.get('cpu'))}. flowc builds "
        + (f"with `--cpu {d['cpu']}` (onnxruntime and PyTorch pick their own kernels whatever the CPU list, so "
           "their columns measure the same code as in a run with flowc's default CPUs)." if d.get("cpu")
           else "with flowc's default CPUs.") + f" Timed as bench/run.py "
        f"times the models: {d['cfg']['rounds']} interleaved rounds, each visiting every runner at every thread "
        f"count once with a batch of about {d['cfg']['seconds']} s after its warm-up; the median over rounds of "
        "the batch medians.")
    add("")
    vnni = (f"; with VNNI (vpdpbusd on ymm) {ip['vnni_1t']:.1f} on 1 thread, {ip['vnni_2t']:.1f} on 2"
            if ip.get("vnni") else "; this CPU has no VNNI")
    if ip.get("amx"):
        vnni += (f"; with AMX tiles (tdpbusd, 2 x 2 tiles as flowc's tile kernels block them) {ip['amx_1t']:.1f} on "
                 f"1 thread, {ip['amx_2t']:.1f} on 2")
    add(f"Peaks (bench/int8_peak.c, disassembly checked; best of short repetitions at the start and the end): "
        f"u8 × s8 through AVX2's vpmaddubsw + vpmaddwd + vpaddd {ip['avx2_1t']:.1f} GOP/s on 1 thread, "
        f"{ip['avx2_2t']:.1f} on 2 (2 ops per multiply-accumulate){vnni}; the f32 FMA peak of the same run "
        f"{fp['gflops_1t']:.1f} GFLOP/s ({fp['isa']}), so the AVX2 int8 peak is "
        f"{ip['avx2_1t'] / fp['gflops_1t']:.2f}× the f32 one{ymm_ratio(ip)}. int8 GOP/s below: the model's multiply-accumulates "
        "(`flowc info` of the float model, 2 ops each) over the median time, in % of the AVX2 int8 peak × "
        "threads.")
    add("")
    section_qdq(add, d, ip)
    section_dynamic(add, d, ip)
    section_static(add, d, ip)
    section_targets(add, d)


def ymm_ratio(ip):
    """The AVX2 int8 peak against f32 FMA on the same ymm registers (the float code an AVX2 build runs), where
    the run measured it: what an AVX2 int8 kernel can gain over flowc's AVX2 f32 one at best."""
    if not ip.get("fma_1t"):
        return ""
    return (f"; against f32 FMA on the same 256-bit registers ({ip['fma_1t']:.1f} GFLOP/s on 1 thread, the f32 "
            f"peak of an AVX2 build) it is {ip['avx2_1t'] / ip['fma_1t']:.2f}×: the most an AVX2 int8 kernel "
            "can gain over an AVX2 f32 one of the same efficiency")


def section_qdq(add, d, ip):
    add("### QDQ models exported by PyTorch")
    add("")
    add("bench/qdq_models.py: torchvision's quantizable ResNet-18 and MobileNetV2 (random seeded weights, "
        "BatchNorm calibrated), the trained seed CNN and, where the run has them, torchvision's other "
        "quantizable models built like the first two (reported beyond the targets), quantised by PyTorch's "
        "eager-mode post-training quantisation (x86 qconfig: per-channel int8 weights, 7-bit u8 activations; "
        "onednn engine), exported by torch.onnx.export (opset 13). flowc f32 builds the float model each was "
        "made from; the other three run the QDQ file (PyTorch: the quantised module itself).")
    add("")
    add("| model | GOP | threads | flowc f32 ms | flowc QDQ ms | onnxruntime QDQ ms | PyTorch int8 ms "
        "| flowc f32 / QDQ | flowc QDQ / ORT | flowc QDQ GOP/s (% int8 peak) | load |")
    add("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in d["qdq"]:
        if not r.get("times"):
            add(f"| {r['name']} | | | failed: {first_error(r)} | | | | | | | |")
            continue
        for t in rp.THREADS:
            ms = {k: rp.median_of(r, k, t) for k in RUNNERS}
            add(f"| {r['name']} | {(r['flops'] or 0) / 1e9:.2f} | {t} | "
                + " | ".join(rp.fmt_ms(ms[k]) for k in RUNNERS)
                + f" | {fmt_ratio(ratio(ms['flowc_f32'], ms['flowc_int8']))}"
                f" | {fmt_ratio(ratio(ms['flowc_int8'], ms['ort']))}"
                f" | {gops_cell(r['flops'], ms['flowc_int8'], ip['avx2_1t'] * t)} | {r['load']:.1f} |")
    add("")
    section_failures(add, d["qdq"])
    add("Accuracy against PyTorch's int8 output on the same input, in output quantisation steps (the scale of the "
        "model's last DequantizeLinear; issue 14's target: within 4 on every element). PyTorch's own row checks "
        "that bench/torch_bench.py re-created the exported module. flowc f32 is compared with PyTorch's float "
        "output (max |Δ|). Sizes: the two flowc executables.")
    add("")
    add("| model | step | flowc QDQ steps | onnxruntime steps | PyTorch (re-created) steps | flowc f32 max abs diff "
        "| flowc f32 MiB | flowc QDQ MiB | QDQ / f32 size |")
    add("|---|---|---|---|---|---|---|---|---|")
    for r in d["qdq"]:
        s, diff = r.get("max_steps", {}), r.get("max_abs_diff", {})
        cells = [("—" if s.get(k) is None else f"{s[k]:.2f}") for k in ("flowc_int8", "ort", "torch")]
        f32 = diff.get("flowc_f32")
        a, b = r.get("flowc_f32_exe_bytes"), r.get("flowc_int8_exe_bytes")
        add(f"| {r['name']} | {r['step']:.4g} | {' | '.join(cells)} | {'—' if f32 is None else f'{f32:.1e}'} "
            f"| {fmt_mib(a)} | {fmt_mib(b)} | {fmt_ratio(ratio(b, a))} |")
    add("")


def section_dynamic(add, d, ip):
    section_float_pair(add, d["dynamic"], ip, "`--quantize int8-dynamic` (f32 models)",
                       "The bench MLP and transformer (tools/export_e2e_models.py), each built twice by flowc: as f32 "
                       "and with `--quantize int8-dynamic`; max |Δ| against PyTorch's float output.", "int8-dynamic")


def section_static(add, d, ip):
    section_float_pair(add, d.get("static", []), ip, "`--quantize int8 --calibrate` (f32 models, no target)",
                       "Float models whose activations are not ReLU (bench/zoo_models.py's exports, random seeded "
                       "weights), each built twice by flowc: as f32 and with `--quantize int8 --calibrate` on the one "
                       "input they are timed on (ranges for the timing, not an accuracy study: random weights amplify "
                       "any error through the depth); max |Δ| against PyTorch's float output.", "int8")


def section_float_pair(add, results, ip, title, intro, label):
    if not results:
        return
    add(f"### {title}")
    add("")
    add(intro)
    add("")
    add(f"| model | threads | f32 ms | {label} ms | speed-up | int8 GOP/s (% int8 peak) | max abs diff f32 / "
        f"{label} | exe MiB f32 / {label} | load |")
    add("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        if not r.get("times"):
            add(f"| {r['name']} | | failed: {first_error(r)} | | | | | | |")
            continue
        diff = r.get("max_abs_diff", {})
        diffs = " / ".join("—" if diff.get(k) is None else f"{diff[k]:.1e}" for k in ("flowc_f32", "flowc_int8"))
        for t in rp.THREADS:
            f, q = rp.median_of(r, "flowc_f32", t), rp.median_of(r, "flowc_int8", t)
            add(f"| {r['name']} | {t} | {rp.fmt_ms(f)} | {rp.fmt_ms(q)} | {fmt_ratio(ratio(f, q))} | "
                f"{gops_cell(r['flops'], q, ip['avx2_1t'] * t)} | {diffs} | "
                f"{fmt_mib(r.get('flowc_f32_exe_bytes'))} / {fmt_mib(r.get('flowc_int8_exe_bytes'))} | "
                f"{r['load']:.1f} |")
    add("")
    section_failures(add, results)


def first_error(r):
    """The first line of a result's first build or runner error."""
    errors = [*r.get("build_errors", {}).values(), *r.get("runner_errors", {}).values()]
    return rp.first_line(errors[0] if errors else None)


def section_failures(add, results):
    failures = [(r["name"], k, e) for r in results for k, e in {**r.get("build_errors", {}),
                                                                 **r.get("runner_errors", {})}.items()]
    if failures:
        add("Failed (shown as — above):")
        add("")
        for name, runner, err in failures:
            add(f"- {name}, {NAMES.get(runner, runner)}: `{rp.first_line(err, 300)}`")
        add("")


def section_targets(add, d):
    add("### Quantisation targets (1 thread)")
    add("")
    qdq = [r for r in d["qdq"] if r["name"] in SPEEDUP]
    for r in qdq + d["dynamic"]:
        s = speedup(r)
        what = "QDQ build" if r in qdq else "int8-dynamic build"
        add(f"- {r['name']}: flowc's {what} ≥ {SPEEDUP[r['name']]}× faster than its f32 build: "
            + ("not measured" if s is None else f"{s:.2f}×") + f" — {rp.verdict(s is not None and s >= SPEEDUP[r['name']])}")
    for r in qdq:
        if r["name"] not in ORT_TARGET:
            continue
        x = ort_share(r)
        add(f"- {r['name']}: flowc ≤ {ORT_LIMIT}× onnxruntime's time on the same QDQ file: "
            + ("not measured" if x is None else f"{x:.2f}") + f" — {rp.verdict(x is not None and x <= ORT_LIMIT)}")
    sizes = [(r["name"], size_share(r)) for r in qdq + d["dynamic"]]
    add(f"- int8 artefacts ≤ {SIZE_LIMIT}× the f32 artefact's size: "
        + ", ".join(f"{n} {fmt_ratio(x)}" for n, x in sizes)
        + f" — {rp.verdict(bool(sizes) and all(x is not None and x <= SIZE_LIMIT for _, x in sizes))}")
    steps = [(r["name"], r.get("max_steps", {}).get("flowc_int8")) for r in qdq]
    add(f"- QDQ models within {STEP_LIMIT} output quantisation steps of PyTorch's int8 output on every element: "
        + ", ".join(f"{n} {'—' if x is None else f'{x:.2f}'}" for n, x in steps)
        + f" — {rp.verdict(bool(steps) and all(x is not None and x <= STEP_LIMIT + STEP_ROUNDING for _, x in steps))}")
    add("")
    others = [r for r in d["qdq"] if r["name"] not in SPEEDUP]
    if others:
        add("Beyond the targets (models flowc was not tuned on; 1 thread): "
            + "; ".join(f"{r['name']} QDQ {fmt_ratio(speedup(r))}× faster than f32, {fmt_ratio(ort_share(r))}× "
                        f"onnxruntime's time, {fmt_steps(r, 'flowc_int8')} steps from PyTorch int8 "
                        f"(onnxruntime {fmt_steps(r, 'ort')}), size {fmt_ratio(size_share(r))}×" for r in others)
            + ".")
        add("")
