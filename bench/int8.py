#!/usr/bin/python3
"""bench/int8.py — the quantisation benchmark of issue 14: flowc's int8 builds against its f32 builds,
onnxruntime and PyTorch's own int8, in one run.

    python3 bench/run.py --int8 [--quick] [--models a,b] [--build DIR] [--models-dir DIR] [--no-build]
                                [--rounds N] [--cpu LIST] [--out bench/RESULTS.md]
    (or python3 bench/int8.py with the same options)

With bench/run.py's machinery (same interleaved rounds of batches, same runners, same input per model):
 1. QDQ models (bench/qdq_models.py: PyTorch's eager-mode post-training quantisation of ResNet-18 and
    MobileNetV2 at 224x224 and of the trained seed CNN at batch 64 — and, reported beyond the targets,
    ResNet-50, GoogLeNet, Inception-v3 and MobileNetV3-Large — exported by torch.onnx.export, with the
    float model each was made from): four runners side by side at 1 and 2 threads —
      flowc f32    `flowc build` of the float original (NAME_f32/model.onnx),
      flowc QDQ    `flowc build` of the QDQ file,
      onnxruntime  onnxruntime-node on the QDQ file,
      PyTorch int8 the quantised module itself (bench/torch_bench.py re-creates it; onednn engine);
    each output is compared with PyTorch's int8 output on the same input, in output quantisation steps
    (flowc f32 with PyTorch's float output, max |Δ|); sizes of the two flowc executables;
 2. dynamic quantisation: the bench MLP and transformer (tools/export_e2e_models.py's mlp_b64,
    transformer) built as f32 and with `--quantize int8-dynamic`, both timed in the same rounds (the
    README's earlier int8-dynamic figures were `--bench 50` medians of single runs; these are the
    interleaved medians); max |Δ| of each against PyTorch's float output;
 3. static quantisation of float models whose activations are not ReLU (SiLU, hardswish: bench/zoo_models.py's
    EfficientNet-B0 and MobileNetV3-Small, random seeded weights), built as f32 and with `--quantize int8
    --calibrate` on the one input they are timed on, both timed in the same rounds; max |Δ| against
    PyTorch's float output (no target: what a user's own float model gains);
 4. the int8 peak: bench/int8_peak.c (u8 x s8 multiply-accumulate chains: vpmaddubsw + vpmaddwd + vpaddd,
    AVX2's path, and vpdpbusd where the CPU has VNNI; disassembly checked) beside bench/fma_peak.c's f32
    FMA peak and the same probe's f32 FMA on ymm (`fma_peak --ymm`: the float peak of an AVX2 build where the
    CPU has AVX-512, so the AVX2 section's ratio compares like with like), best of short repetitions at the
    start and at the end; int8 GOP/s of each model = its
    multiply-accumulates (`flowc info` of the float model, 2 ops each) / median time.

The raw results go to INT8.json beside --out (INT8.<cpu>.json with --cpu: a section of its own); bench/report.py renders them as the "Quantisation" section of
the report (RESULTS.md, re-rendered with RESULTS.json when that exists). --quick: 2 rounds of shorter
batches, for a smoke run. --cpu LIST is passed to every flowc build (f32 and int8 alike; default flowc's
own, x86-64-v3 and x86-64-v4 side by side): `--cpu x86-64-v3` measures the AVX2 code the issue's targets
were stated for on a machine that has AVX-512, `--cpu icelake-server` the VNNI kernels. (The README's
earlier int8-dynamic speed-ups were single `--bench 50` medians per --cpu variant, from no script in the
tree; this file measures them interleaved.)
"""
import argparse
import datetime
import json
import os
import re
import shutil
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
import run as bench  # noqa: E402  (re-executes under Debian's python3 when needed; the shared machinery)
import report  # noqa: E402
import report_int8  # noqa: E402

QDQ_MODELS = {"qdq_resnet18": "ResNet-18, 1x3x224x224", "qdq_mobilenet_v2": "MobileNetV2, 1x3x224x224",
              "qdq_cnn_b64": "seed CNN (trained), batch 64",
              # beyond the targets (report_int8.SPEEDUP): models flowc was not tuned on
              "qdq_resnet50": "ResNet-50, 1x3x224x224", "qdq_googlenet": "GoogLeNet, 1x3x224x224",
              "qdq_inception_v3": "Inception-v3, 1x3x299x299", "qdq_mobilenet_v3": "MobileNetV3-Large, 1x3x224x224"}
DYNAMIC_MODELS = {"mlp_b64": "MLP 784-1024-1024-10, batch 64", "transformer": "2-layer encoder, d 256, seq 128"}
# --quantize int8 --calibrate on float models with activations other than ReLU (bench/zoo_models.py's exports,
# random seeded weights); reported, no target
STATIC_MODELS = {"efficientnet_b0": "EfficientNet-B0 (SiLU, squeeze-and-excitation), 1x3x224x224",
                 "mobilenet_v3_small": "MobileNetV3-Small (hardswish, squeeze-and-excitation), 1x3x224x224"}
INT8_CHAINS, INT8_UNROLL, VNNI_CHAINS, AMX_CHAINS = 6, 4, 12, 4  # bench/int8_peak.c's loop bodies
CPU_ARGS = ()  # ("--cpu", LIST) from the command line, for every flowc build


def log(msg):
    bench.log(msg)


# ---- the int8 peak probe ---------------------------------------------------------------------------

def build_int8_probe(tmp):
    cc = os.environ.get("CC", "cc")
    exe = os.path.join(tmp, "int8_peak")
    bench.run([cc, "-O2", "-mavx2", "-pthread", os.path.join(BENCH, "int8_peak.c"), "-o", exe])
    check_int8_asm(exe)
    return exe


def check_int8_asm(exe):
    """Each kernel's loop must hold CHAINS x UNROLL multiplies (else its op count, and so its peak, is wrong)."""
    text = bench.run(["objdump", "-d", "--no-show-raw-insn", exe])
    for func, insn, want in (("madd_chains_avx2", "vpmaddubsw", INT8_CHAINS * INT8_UNROLL),
                             ("madd_chains_vnni", "vpdpbusd", VNNI_CHAINS * INT8_UNROLL),
                             ("madd_chains_amx", "tdpbusd", AMX_CHAINS * INT8_UNROLL)):
        body = re.search(rf"<{func}>:\n(.*?)\n\n", text, re.S)
        got = len(re.findall(rf"\s{insn}\s", body.group(1))) if body else 0
        if got != want:
            sys.exit(f"int8.py: {func} holds {got} {insn}, expected {want}: its peak would be wrong")


def int8_peak(exe, reps, previous=None):
    """Best GOP/s per kernel (avx2, vnni, amx) and thread count, merged (max) with a previous measurement."""
    result = dict(previous or {})
    for threads in bench.THREADS:
        out = bench.run([exe, "--threads", str(threads), "--reps", str(reps)])
        for kernel, gops in re.findall(r"^kernel (\w+) threads \d+ gops ([\d.]+)", out, re.M):
            key = f"{kernel}_{threads}t"
            result[key] = max(float(gops), result.get(key, 0.0))
        result["vnni"] = "vnni unsupported" not in out
        result["amx"] = "amx unsupported" not in out
    return result


def ymm_peak(fma_probe, reps, ipeak):
    """Adds to ipeak (as fma_<threads>t, merged by max) the f32 FMA peak on ymm, bench/fma_peak.c's AVX2 kernel
    forced with --ymm, its disassembly checked as bench/run.py checks the probe's."""
    result = dict(ipeak)
    for threads in bench.THREADS:
        out = bench.run([fma_probe, "--ymm", "--threads", str(threads), "--reps", str(reps)])
        key = f"fma_{threads}t"
        result[key] = max(float(re.search(r"gflops ([\d.]+)", out).group(1)), result.get(key, 0.0))
    bench.check_probe_asm(fma_probe, "avx2+fma")
    return result


# ---- runners ---------------------------------------------------------------------------------------

def output_step(case_dir):
    with open(os.path.join(case_dir, "info.json")) as f:
        return json.load(f)["output"]["scale"]


def prepare(flowc, name, case_dir, work, build_args=()):
    build_args = tuple(build_args) + CPU_ARGS
    case = bench.prepare_case(flowc, name, case_dir, work, 1, build_args=build_args)
    if "error" in case:
        log(f"{name}{' ' + ' '.join(build_args) if build_args else ''}: {case['error']}")
    return case


def bench_qdq(flowc, name, models_dir, work, cfg):
    """flowc f32, flowc QDQ, onnxruntime on the QDQ file and PyTorch int8 on one QDQ model."""
    log(f"{name}: compiling the float original and the QDQ file")
    qdir, fdir = os.path.join(models_dir, name), os.path.join(models_dir, name + "_f32")
    fcase = prepare(flowc, name + "_f32", fdir, os.path.join(work, name + "_f32"))
    qcase = prepare(flowc, name, qdir, os.path.join(work, name))
    result = {"name": name, "what": QDQ_MODELS[name], "flops": fcase.get("flops"), "input": qcase["dims"],
              "step": output_step(qdir)}
    makers = {}
    for key, case in (("flowc_f32", fcase), ("flowc_int8", qcase)):
        if "error" in case:
            result.setdefault("build_errors", {})[key] = case["error"]
        else:
            result[f"{key}_exe_bytes"] = case["exe_bytes"]
            result[f"{key}_compile_s"] = case["compile_s"]
            makers[key] = (lambda c: lambda: bench.FlowcRunner(c))(case)
    makers["ort"] = lambda: bench.OrtRunner(qcase, bench.THREADS)
    makers["torch"] = lambda: bench.TorchRunner(qcase, qdir)
    runners = bench.time_case(result, makers, bench.THREADS, cfg)
    if "ort" in runners:
        result["ort_version"] = runners["ort"].version
    d = result.get("max_abs_diff", {})
    steps = {r: d[r] / result["step"] for r in ("flowc_int8", "ort", "torch") if d.get(r) is not None}
    result["max_steps"] = steps
    log(f"{name}: " + ", ".join(f"{r}/{t} {s['median_ms']:.2f} ms" for r_t, s in result.get("times", {}).items()
                                 for r, t in [r_t.split("/")])
        + "; steps from PyTorch int8: " + ", ".join(f"{r} {s:.1f}" for r, s in steps.items()))
    return result


def bench_dynamic(flowc, name, models_dir, work, cfg):
    """flowc f32 against flowc --quantize int8-dynamic on one float model."""
    return bench_float_pair(flowc, name, DYNAMIC_MODELS[name], models_dir, work, cfg, ("--quantize", "int8-dynamic"))


def bench_static(flowc, name, models_dir, work, cfg):
    """flowc f32 against flowc --quantize int8 --calibrate on one float model, calibrated on the input it is
    timed on (the export's one test input: ranges for speed, not an accuracy study)."""
    d = os.path.join(models_dir, name)
    calib = os.path.join(work, name + "_calib", "sample0")
    os.makedirs(calib, exist_ok=True)
    data = os.path.join(d, "test_data_set_0")
    for f in os.listdir(data):
        if f.startswith("input_") and not os.path.exists(os.path.join(calib, f)):
            shutil.copy(os.path.join(data, f), os.path.join(calib, f))
    return bench_float_pair(flowc, name, STATIC_MODELS[name], models_dir, work, cfg,
                            ("--quantize", "int8", "--calibrate", os.path.dirname(calib)))


def bench_float_pair(flowc, name, what, models_dir, work, cfg, quant_args):
    """flowc f32 against flowc with quant_args on one float model."""
    log(f"{name}: compiling f32 and {' '.join(quant_args[:2])}")
    d = os.path.join(models_dir, name)
    fcase = prepare(flowc, name, d, os.path.join(work, name + "_f32"))
    qcase = prepare(flowc, name, d, os.path.join(work, name + "_" + quant_args[1]), quant_args)
    result = {"name": name, "what": what, "flops": fcase.get("flops"), "input": fcase["dims"]}
    makers = {}
    for key, case in (("flowc_f32", fcase), ("flowc_int8", qcase)):
        if "error" in case:
            result.setdefault("build_errors", {})[key] = case["error"]
        else:
            result[f"{key}_exe_bytes"] = case["exe_bytes"]
            makers[key] = (lambda c: lambda: bench.FlowcRunner(c))(case)
    bench.time_case(result, makers, bench.THREADS, cfg)
    return result


def export(models_dir, qdq, dynamic, static):
    log(f"exporting models into {models_dir}")
    if qdq:
        bench.run([sys.executable, os.path.join(BENCH, "qdq_models.py"), models_dir, "--models", ",".join(qdq)])
    if dynamic:
        bench.run([sys.executable, os.path.join(bench.ROOT, "tools", "export_e2e_models.py"), models_dir,
                   "--models", ",".join(dynamic)])
    if static:
        bench.run([sys.executable, os.path.join(BENCH, "zoo_models.py"), models_dir, "--models", ",".join(static)])


def main(argv=None):
    known = list(QDQ_MODELS) + list(DYNAMIC_MODELS) + list(STATIC_MODELS)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 rounds of short batches (smoke run)")
    ap.add_argument("--models", default=",".join(known), help="comma-separated subset of: " + ", ".join(known))
    ap.add_argument("--out", default=os.path.join(BENCH, "RESULTS.md"), help="the report (default bench/RESULTS.md)")
    ap.add_argument("--build", default=os.path.join(bench.ROOT, "build"), help="flowc build dir (default build)")
    ap.add_argument("--models-dir", default=None, help="exported model cache (default BUILD/bench-models)")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 11, --quick 2)")
    ap.add_argument("--no-build", action="store_true", help="use BUILD/tools/flowc as it is")
    ap.add_argument("--cpu", help="flowc build --cpu LIST for every build (default: flowc's)")
    args = ap.parse_args(argv)
    global CPU_ARGS
    CPU_ARGS = ("--cpu", args.cpu) if args.cpu else ()
    names = bench.selected_models(ap, args.models, known)
    build = os.path.abspath(args.build)
    models_dir = os.path.abspath(args.models_dir or os.path.join(build, "bench-models"))
    work = os.path.join(build, "bench-work", "int8")
    cfg = {"rounds": args.rounds or (2 if args.quick else 11), "seconds": 0.2 if args.quick else 0.4,
           "peak_reps": 100 if args.quick else 400}
    t_start = time.time()
    load_start = os.getloadavg()[0]
    flowc = os.path.join(build, "tools", "flowc") if args.no_build else bench.build_flowc(build)
    if not os.access(flowc, os.X_OK):
        sys.exit(f"int8.py: no flowc at {flowc}")
    bench.ensure_ort()
    probe_dir = tempfile.TemporaryDirectory()
    fma_probe, _, cc_version = bench.build_probe(probe_dir.name)
    i8_probe = build_int8_probe(probe_dir.name)
    peak, ipeak = bench.fma_peak(fma_probe, cfg["peak_reps"]), int8_peak(i8_probe, cfg["peak_reps"])
    ipeak = ymm_peak(fma_probe, cfg["peak_reps"], ipeak)
    log(f"peaks on 1 thread: f32 FMA {peak['gflops_1t']:.1f} GFLOP/s ({peak['isa']}), "
        f"{ipeak.get('fma_1t', 0):.1f} (ymm), int8 (AVX2) {ipeak['avx2_1t']:.1f} GOP/s"
        + (f", int8 (VNNI) {ipeak['vnni_1t']:.1f} GOP/s" if ipeak["vnni"] else "")
        + (f", int8 (AMX) {ipeak['amx_1t']:.1f} GOP/s" if ipeak.get("amx") else ""))
    qdq = [n for n in names if n in QDQ_MODELS]
    dynamic = [n for n in names if n in DYNAMIC_MODELS]
    static = [n for n in names if n in STATIC_MODELS]
    export(models_dir, qdq, dynamic, static)
    os.makedirs(work, exist_ok=True)
    qdq_results = [bench_qdq(flowc, n, models_dir, work, cfg) for n in qdq]
    dyn_results = [bench_dynamic(flowc, n, models_dir, work, cfg) for n in dynamic]
    static_results = [bench_static(flowc, n, models_dir, work, cfg) for n in static]
    peak = bench.fma_peak(fma_probe, cfg["peak_reps"], peak)
    ipeak = ymm_peak(fma_probe, cfg["peak_reps"], int8_peak(i8_probe, cfg["peak_reps"], ipeak))
    probe_dir.cleanup()
    data = {
        "argv": "".join(f" {a}" for a in (sys.argv[1:] if argv is None else argv)),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": bench.machine_info(), "load_start": load_start, "load_end": os.getloadavg()[0],
        "git": bench.git_rev(), "no_build": args.no_build, "flowc_version": bench.tool_version([flowc, "--version"]),
        "build": os.path.relpath(build, bench.ROOT),
        "ort_version": next((r["ort_version"] for r in qdq_results if r.get("ort_version")), "unknown"),
        "torch_version": next((r["torch_ready"].get("torch") for r in qdq_results if r.get("torch_ready")),
                              "unknown"),
        "node_version": bench.tool_version(["node", "--version"]), "compiler": cc_version,
        "cfg": cfg, "cpu": args.cpu, "peak": peak, "int8_peak": ipeak, "qdq": qdq_results, "dynamic": dyn_results,
        "static": static_results,
        "seconds": time.time() - t_start,
    }
    raw = os.path.join(os.path.dirname(os.path.abspath(args.out)), report_int8.raw_name(args.cpu))
    with open(raw, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    report.render(args.out)
    log(f"wrote {raw} and {args.out} ({data['seconds'] / 60:.1f} min)")


if __name__ == "__main__":
    main()
