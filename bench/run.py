#!/usr/bin/python3
"""bench/run.py — the CPU benchmark of issue 4: flowc-built programs against onnxruntime and PyTorch.

    python3 bench/run.py [--quick] [--models a,b] [--out bench/RESULTS.md] [--build DIR] [--models-dir DIR]
    python3 bench/run.py --zoo [--quick] ...     the zoo of issue 13 instead (bench/zoo.py, its own options)
    python3 bench/run.py --int8 [--quick] ...    quantisation, issue 14, instead (bench/int8.py, its own options)
    python3 bench/run.py --sbp [--quick] ...     distribution over MPI ranks, issue 15 (bench/sbp.py)

One run does everything on the same inputs and writes bench/RESULTS.md, with the raw numbers beside it
in bench/RESULTS.json (bench/report.py renders the one from the other):

 1. builds flowc (`meson setup` if needed, `ninja -C BUILD`) and the FMA peak probe bench/fma_peak.c, whose
    disassembly is checked (12 FMA chains on 12 distinct registers, 48 FMAs per loop iteration) before its
    best-of-N GFLOP/s on 1 and 2 threads is trusted;
 2. exports the models with tools/export_e2e_models.py (cached in --models-dir; the exporter skips
    up-to-date ones) and installs onnxruntime-node 1.30 into bench/node_modules when it is missing;
 3. compiles each model with `flowc build model.onnx -o exe` (-O2), timing it; reads its FLOPs from
    `flowc info` (2 per multiply-accumulate of conv and matmul: direct-convolution FLOPs);
 4. times three runners per model at 1 and 2 threads: the flowc executable (`--bench K`), onnxruntime
    (bench/ort_bench.js: optimisation level 'all', intra-op threads N, inter-op 1, sequential) and PyTorch
    eager (bench/torch_bench.py, which also reports the BLAS it really calls). ORT and PyTorch run as
    long-lived workers fed over stdin, so a round costs K runs and not a process start-up. Runs are
    interleaved: each round visits every (threads, runner) pair once, the runner order rotating from round
    to round, and each visit is a batch of K runs after the runner's warm-up; K is picked per runner and
    thread count from a few probe runs so that a batch lasts about 0.4 s (0.2 s with --quick). The
    reported time is the median over rounds of the batch medians. Each runner's output on the benchmark
    input is compared with the exported PyTorch output (max |difference|), so a fast wrong answer shows.
    A runner that fails (a flowc build that crashes, say) is reported as failed; the others go on;
 5. measures peak RSS (ru_maxrss, through /usr/bin/time) of the flowc executable and of a node process
    that builds the same ORT session and runs it, minus a node process that only loads onnxruntime-node
    (method stated in the report);
 6. GEMM micro-benchmarks: one-MatMul ONNX models (A an input, B a constant initializer) at 256³, 512³,
    1024³ and the model set's GEMM shapes, flowc vs onnxruntime at 1 thread, with two probes in the same
    rounds: the FMA peak probe and bench/ukr_probe.c (flowc's microkernel loop over slivers in L1), whose
    medians against their bests show how much of the core the GEMMs had; and the per-run floor, a
    one-Relu model of 16 floats timed the same way, which shows each runner's fixed cost per run;
 7. writes the report (bench/report.py): machine, load, versions, the FMA peak, the tables, the issue's
    targets with MET / NOT MET, and a "Graph passes: measured effect" table read from
    bench/pass_effects.json (pass name -> text), which others fill in.

Nothing in the report is typed in by hand: every number is measured by this run. --quick uses fewer
rounds and shorter batches, for a smoke run. Needs /usr/bin/python3 with numpy, onnx, torch (Debian
packages), node + npm, cc, objdump, meson and ninja.
"""
import argparse
import datetime
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch, python3-onnx and numpy
try:
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper, TensorProto
    import report
    if importlib.util.find_spec("torch") is None:  # the PyTorch worker needs it
        raise ImportError("no torch")
except ImportError:
    # `python3` may be another interpreter on PATH (pyenv, a venv); the Debian one has the packages.
    if os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) and os.path.exists(SYSTEM_PYTHON):
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, *sys.argv])
    raise

MODELS, THREADS = report.MODELS, report.THREADS
# (M, K, N): cubes, then the MLP's layers (batch 64) and the transformer's (seq 128, d 256, ff 1024).
GEMMS = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024),
         (64, 784, 1024), (64, 1024, 1024),
         (128, 256, 256), (128, 256, 1024), (128, 1024, 256)]
ORT_VERSION = "1.30"


def log(msg):
    print(msg, flush=True)


def failure(cmd, rc, stderr):
    """A one-line account of a failed command: program, exit status or signal, the end of its stderr."""
    how = f"killed by signal {-rc}" if rc < 0 else f"exited with status {rc}"
    tail = " / ".join(line.strip() for line in stderr.strip().splitlines()[-3:])
    return f"{os.path.basename(str(cmd[0]))} {how}" + (f": {tail[-600:]}" if tail else "")


def run(cmd, **kw):
    """Runs cmd, returns its stdout; raises RuntimeError (see failure()) if it fails."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError(failure(cmd, p.returncode, p.stderr))
    return p.stdout


class Timeout(RuntimeError):
    """A command that ran past its time limit (and was killed with its children)."""


def run_rusage(cmd, stdout=subprocess.DEVNULL, timeout=None):
    """Runs cmd; returns (exit status, wall seconds, its rusage, stderr text). With a timeout (seconds),
    a command still running then is killed with its process group (a linker it started too) and Timeout
    is raised."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=stdout, stderr=err, start_new_session=timeout is not None)
        while True:
            pid, status, usage = os.wait4(p.pid, 0 if timeout is None else os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout:
                os.killpg(p.pid, signal.SIGKILL)
                os.wait4(p.pid, 0)
                p.returncode = -signal.SIGKILL
                raise Timeout(f"{os.path.basename(str(cmd[0]))} timed out after {timeout:.0f} s")
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return p.returncode, wall, usage, err.read().decode(errors="replace")


# ---- machine, versions -------------------------------------------------------------------------------

def machine_info():
    info = {}
    try:
        for line in run(["lscpu"]).splitlines():
            key, _, value = line.partition(":")
            info[key.strip()] = value.strip()
    except (OSError, RuntimeError):
        pass
    return {
        "model": info.get("Model name", platform.processor() or "unknown"),
        "cpus": info.get("CPU(s)", str(os.cpu_count())),
        "threads_per_core": info.get("Thread(s) per core", "?"),
        "l1d": info.get("L1d cache", "?"), "l2": info.get("L2 cache", "?"), "l3": info.get("L3 cache", "?"),
        "flags_avx512f": "avx512f" in info.get("Flags", "").split(),
        "hypervisor": info.get("Hypervisor vendor", ""),
        "kernel": platform.release(),
    }


def git_rev():
    try:
        rev = run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"]).strip()
        dirty = run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"]).strip()
        return rev + (" with uncommitted changes" if dirty else "")
    except (OSError, RuntimeError):
        return "unknown"


def tool_version(cmd):
    try:
        return run(cmd).strip().splitlines()[0]
    except (OSError, RuntimeError, IndexError):
        return "unknown"


# ---- building ----------------------------------------------------------------------------------------

def build_flowc(build):
    if not os.path.exists(os.path.join(build, "build.ninja")):
        log(f"meson setup {build}")
        run(["meson", "setup", build], cwd=ROOT)
    log(f"ninja -C {build}")
    p = subprocess.run(["ninja", "-C", build], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        sys.exit(f"run.py: building flowc in {build} failed; fix the tree or pass --build DIR\n"
                 f"{p.stdout[-3000:]}")
    flowc = os.path.join(build, "tools", "flowc")
    if not os.access(flowc, os.X_OK):
        sys.exit(f"run.py: {flowc} was not built")
    return flowc


def ensure_ort():
    try:
        with open(os.path.join(BENCH, "node_modules", "onnxruntime-node", "package.json")) as f:
            if json.load(f).get("version", "").startswith(ORT_VERSION + "."):
                return
    except (OSError, ValueError):
        pass
    # --ignore-scripts: the package's install script tries a download that fails offline; the CPU library
    # is already inside the package.
    log(f"npm install --prefix bench onnxruntime-node@{ORT_VERSION} --ignore-scripts")
    run(["npm", "install", "--prefix", BENCH, f"onnxruntime-node@{ORT_VERSION}", "--ignore-scripts"])


# ---- the FMA peak probe ------------------------------------------------------------------------------

CHAINS, UNROLL = 12, 4


def check_probe_asm(exe, isa):
    """The probe's loop must hold CHAINS x UNROLL FMAs on CHAINS distinct destination registers."""
    func = "fma_chains_avx512" if isa.startswith("avx512") else "fma_chains_avx2"
    text = run(["objdump", "-d", "--no-show-raw-insn", exe])
    body = re.search(rf"<{func}>:\n(.*?)\n\n", text, re.S)
    if not body:
        sys.exit(f"run.py: no {func} in the probe's disassembly")
    fmas = re.findall(r"vfmadd\w+ps\s+\S+,\s*%([xyz]mm\d+)\s*$", body.group(1), re.M)
    if len(fmas) != CHAINS * UNROLL or len(set(fmas)) != CHAINS:
        sys.exit(f"run.py: the probe's loop has {len(fmas)} FMAs on {len(set(fmas))} registers, "
                 f"expected {CHAINS * UNROLL} on {CHAINS}: its peak would be wrong")
    return {"function": func, "fmas": len(fmas), "registers": sorted(set(fmas), key=lambda r: int(r[3:]))}


def build_probe(tmp):
    """Builds the FMA peak probe and the microkernel probe; returns their paths and the compiler's version."""
    cc = os.environ.get("CC", "cc")
    exes = []
    for name in ("fma_peak", "ukr_probe"):
        exe = os.path.join(tmp, name)
        run([cc, "-O2", "-mavx2", "-mfma", "-pthread", os.path.join(BENCH, f"{name}.c"), "-o", exe])
        exes.append(exe)
    return exes[0], exes[1], tool_version([cc, "--version"])


def fma_peak(exe, reps, previous=None):
    """Best GFLOP/s of the probe on 1 and 2 threads, merged (max) with a previous measurement."""
    result = dict(previous or {})
    for threads in THREADS:
        out = run([exe, "--threads", str(threads), "--reps", str(reps)])
        result["isa"] = re.search(r"^isa (\S+)", out, re.M).group(1)
        gflops = float(re.search(r"gflops ([\d.]+)", out).group(1))
        key = f"gflops_{threads}t"
        result[key] = max(gflops, result.get(key, 0.0))
        result.setdefault("samples", []).append({"threads": threads, "gflops": gflops})
    result["asm"] = check_probe_asm(exe, result["isa"])
    result["chains"], result["unroll"] = CHAINS, UNROLL
    return result


# ---- models and inputs -------------------------------------------------------------------------------

def read_pb(path):
    tensor = TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return tensor.name, numpy_helper.to_array(tensor)


def flowc_flops(flowc, model, timeout=None):
    try:
        out = run([flowc, "info", model], timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Timeout(f"flowc info timed out after {timeout:.0f} s") from None
    m = re.search(r"^flops\s+(\d+)", out, re.M)
    if not m:
        raise RuntimeError(f"flowc info {model}: no flops line")
    return int(m.group(1))


def prepare_case(flowc, name, case_dir, work, compile_reps, timeout=None, build_args=()):
    """Compiles one model (`flowc build model.onnx -o exe` plus build_args) and writes its raw input;
    returns the case's description or its error (with "timed_out" set when flowc ran past `timeout`
    seconds)."""
    os.makedirs(work, exist_ok=True)
    model = os.path.join(case_dir, "model.onnx")
    input_pb = os.path.join(case_dir, "test_data_set_0", "input_0.pb")
    in_name, x = read_pb(input_pb)
    _, want = read_pb(os.path.join(case_dir, "test_data_set_0", "output_0.pb"))
    raw = os.path.join(work, "input.f32")
    x.astype("<f4").tofile(raw)
    case = {"name": name, "model": model, "input_pb": input_pb, "input_raw": raw, "input_name": in_name,
            "dims": ",".join(map(str, x.shape)), "expected": want, "work": work}
    exe = os.path.join(work, "model.exe")
    walls, cpus = [], []
    try:
        case["flops"] = flowc_flops(flowc, model, timeout)
        for _ in range(compile_reps):
            rc, wall, usage, err = run_rusage([flowc, "build", model, "-o", exe, *build_args], timeout=timeout)
            if rc != 0:
                case["error"] = failure(["flowc build"], rc, err)
                return case
            walls.append(wall)
            cpus.append(usage.ru_utime + usage.ru_stime)
    except RuntimeError as e:
        case["error"] = str(e)
        case["timed_out"] = isinstance(e, Timeout)
        return case
    case.update(exe=exe, compile_s=min(walls), compile_all_s=walls, compile_cpu_s=min(cpus),
                exe_bytes=os.path.getsize(exe))
    return case


def write_one_node_case(d, name, node, x, y, inits=()):
    """Writes a test case folder: a model of one node from input X to output Y, with its data."""
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    graph = helper.make_graph(
        [node], name, [helper.make_tensor_value_info(node.input[0], TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT, list(y.shape))], list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="bench/run.py")
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for what, name_, a in (("input", node.input[0], x), ("output", node.output[0], y)):
        with open(os.path.join(d, "test_data_set_0", f"{what}_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, name_).SerializeToString())


def make_gemm_case(flowc, m, k, n, root):
    """A one-MatMul model, Y = A·B with A [m,k] an input and B [k,n] a constant; returns its case."""
    name = f"gemm_{m}x{k}x{n}"
    d = os.path.join(root, name)
    rng = np.random.default_rng(m * 1_000_003 + k * 1009 + n)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = (rng.standard_normal((k, n), dtype=np.float32) / np.sqrt(k)).astype(np.float32)
    y = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    write_one_node_case(d, name, helper.make_node("MatMul", ["A", "B"], ["Y"]), a, y, [numpy_helper.from_array(b, "B")])
    case = prepare_case(flowc, name, d, os.path.join(d, "work"), 1)
    case["shape"] = (m, k, n)
    if "flops" in case and case["flops"] != 2 * m * k * n:
        case["error"] = f"flowc info counts {case['flops']} FLOPs, expected 2·M·K·N = {2 * m * k * n}"
    return case


def make_floor_case(flowc, root):
    """The per-run floor: one Relu over 16 floats, so a run costs what the runner spends around a model."""
    name = "floor_relu16"
    d = os.path.join(root, name)
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 16)
    write_one_node_case(d, name, helper.make_node("Relu", ["X"], ["Y"]), x, np.maximum(x, 0))
    return prepare_case(flowc, name, d, os.path.join(d, "work"), 1)


def max_abs_diff(got, want):
    got = np.asarray(got, dtype=np.float32).reshape(-1)
    want = np.asarray(want, dtype=np.float32).reshape(-1)
    if got.size != want.size:
        return float("nan")
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if got.size else 0.0


# ---- runners -----------------------------------------------------------------------------------------

LATENCY = re.compile(r"latency: min ([\d.]+) ms, median ([\d.]+) ms")


class FlowcRunner:
    """The flowc executable, one process per batch (its --bench K does a warm-up run, then K runs)."""

    def __init__(self, case):
        self.case = case

    def check_output(self):
        out = os.path.join(self.case["work"], "flowc_out")
        shutil.rmtree(out, ignore_errors=True)
        run([self.case["exe"], self.case["input_pb"], "--output-dir", out, "--threads", "1"])
        return max_abs_diff(np.load(os.path.join(out, "output_0.npy")), self.case["expected"])

    def bench(self, k, threads):
        out = run([self.case["exe"], self.case["input_pb"], "--threads", str(threads), "--bench", str(k)])
        m = LATENCY.search(out)
        if not m:
            raise RuntimeError(f"{self.case['exe']}: no latency line in {out!r}")
        return {"min_ms": float(m.group(1)), "median_ms": float(m.group(2)), "runs": k}

    def probe_ms(self, threads):
        return self.bench(PROBE_RUNS, threads)["median_ms"]

    def close(self):
        pass


class ProbeRunner:
    """A probe timed like a runner, for the rounds of the GEMM micro-benchmarks: the FMA peak probe
    (bench/fma_peak.c, register-only FMA chains) or the microkernel probe (bench/ukr_probe.c, the GEMM
    microkernel's loads, broadcasts and FMAs over slivers in L1). A batch is K repetitions of about 1.5 ms
    on a quiet core; its times come from the probe's best and median rate. Neither probe touches memory
    beyond L1, so when they slow down in the same rounds as the GEMMs, the core itself was shared."""

    def __init__(self, exe, iters, flops_per_iter):
        self.exe, self.iters = exe, iters
        self.flops = flops_per_iter * iters

    def check_output(self):
        return None

    def bench(self, k, threads):
        if threads != 1:
            raise ValueError("the probes run on 1 thread here")
        out = run([self.exe, "--iters", str(self.iters), "--reps", str(k)])
        m = re.search(r"gflops ([\d.]+).* median ([\d.]+)", out)
        if not m:
            raise RuntimeError(f"{self.exe}: no rate line in {out!r}")
        best, median = float(m.group(1)), float(m.group(2))
        return {"min_ms": self.flops / best * 1e-6, "median_ms": self.flops / median * 1e-6, "runs": k}

    def probe_ms(self, threads):
        return self.bench(PROBE_RUNS, threads)["median_ms"]

    def close(self):
        pass


def probe_runners(probes):
    """Makers of the two probes as runners, each repetition about 1.5 ms on a 100 GFLOP/s core."""
    fma, ukr = probes
    return {"fma_probe": lambda: ProbeRunner(fma, 200000, 2 * 8 * CHAINS * UNROLL),
            "ukr_probe": lambda: ProbeRunner(ukr, 3000, 2 * 6 * 16 * 256)}


class Worker:
    """A long-lived benchmark process speaking one JSON line per command (ort_bench.js, torch_bench.py)."""

    def __init__(self, cmd):
        self.cmd = cmd
        self.err = tempfile.TemporaryFile(mode="w+")  # a file, not a pipe: nobody drains it while timing
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                     text=True, bufsize=1)
        self.ready = self._read()
        if not self.ready.get("ready"):
            raise RuntimeError(f"{cmd[:3]} did not start: {self.ready}")

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            self.err.seek(0)
            err = self.err.read()
            raise RuntimeError(failure(self.cmd, self.proc.returncode, err))
        return json.loads(line)

    def command(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        reply = self._read()
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.err.close()


class OrtRunner:
    """onnxruntime-node: one worker (one session) per thread count."""

    def __init__(self, case, threads_list):
        self.workers = {}
        self.outputs = {}
        for t in threads_list:
            out = os.path.join(case["work"], f"ort_out_{t}.f32")
            self.workers[t] = Worker(["node", os.path.join(BENCH, "ort_bench.js"), "serve", case["model"],
                                      case["input_raw"], case["input_name"], case["dims"], str(t), out])
            self.outputs[t] = np.fromfile(out, dtype="<f4")
        self.case = case
        self.version = self.workers[threads_list[0]].ready.get("version")

    def check_output(self):
        return max(max_abs_diff(o, self.case["expected"]) for o in self.outputs.values())

    def probe_ms(self, threads):
        return self.workers[threads].command(f"bench {PROBE_RUNS}")["median_ms"]

    def bench(self, k, threads):
        return self.workers[threads].command(f"bench {k}")

    def close(self):
        for w in self.workers.values():
            w.close()


class TorchRunner:
    """PyTorch eager: one worker per model; the thread count is set per batch."""

    def __init__(self, case, case_dir):
        self.worker = Worker([sys.executable, os.path.join(BENCH, "torch_bench.py"), case["name"], case_dir])
        self.ready = self.worker.ready

    def check_output(self):
        return self.ready["max_abs_diff"]

    def probe_ms(self, threads):
        return self.worker.command(f"bench {PROBE_RUNS} {threads}")["median_ms"]

    def bench(self, k, threads):
        return self.worker.command(f"bench {k} {threads}")

    def close(self):
        self.worker.close()


PROBE_RUNS = 3  # runs (after the warm-up) whose median sets a runner's batch size K


def batch_size(probe_ms, seconds, kmin=3, kmax=1000):
    return int(min(kmax, max(kmin, round(seconds * 1e3 / max(probe_ms, 1e-3)))))


def interleave(runners, threads_list, rounds, seconds, errors):
    """Times every (runner, threads) pair in `rounds` interleaved rounds; returns per-pair statistics.

    A runner that raises is recorded in `errors` (runner -> message) and left out from then on."""
    def attempt(r, fn):
        try:
            return fn()
        except (RuntimeError, OSError, ValueError) as e:
            errors[r] = str(e)
            return None

    ks = {}
    for t in threads_list:
        for r in runners:
            if r not in errors:
                # K from the median of a few runs after the runner's own warm-up.
                probe = attempt(r, lambda: runners[r].probe_ms(t))
                if probe is not None:
                    ks[(r, t)] = batch_size(probe, seconds)
    batches = {key: [] for key in ks}
    names = list(runners)
    for rnd in range(rounds):
        order = names[rnd % len(names):] + names[:rnd % len(names)]
        for t in threads_list:
            for r in order:
                if r in errors:
                    continue
                batch = attempt(r, lambda: runners[r].bench(ks[(r, t)], t))
                if batch is not None:
                    batches[(r, t)].append(batch)
                time.sleep(0.05)  # lets idle worker threads of the previous runner park
    stats = {}
    for (r, t), bs in batches.items():
        if r in errors or not bs:
            continue
        medians = [b["median_ms"] for b in bs]
        stats[f"{r}/{t}"] = {"median_ms": statistics.median(medians), "min_ms": min(b["min_ms"] for b in bs),
                             "batch_medians_ms": medians, "k": ks[(r, t)]}
    return stats


def start_runners(makers, errors):
    """Starts each runner and checks its output; failures go to `errors`. Returns the runners and diffs."""
    runners, diffs = {}, {}
    for name, make in makers.items():
        try:
            runner = make()
        except (RuntimeError, OSError, ValueError) as e:
            errors[name] = str(e)
            continue
        runners[name] = runner
        try:
            diffs[name] = runner.check_output()
        except (RuntimeError, OSError, ValueError) as e:
            errors[name] = str(e)
    return runners, diffs


def time_case(result, makers, threads_list, cfg):
    """Starts the runners, checks their outputs and times them; fills result's diffs, times, errors."""
    errors = {}
    runners, result["max_abs_diff"] = start_runners(makers, errors)
    try:
        for r in runners:
            if hasattr(runners[r], "ready"):
                result[f"{r}_ready"] = runners[r].ready
        result["load"] = os.getloadavg()[0]
        log(f"{result['name']}: timing ({cfg['rounds']} rounds, load average {result['load']:.2f})")
        result["times"] = interleave(runners, threads_list, cfg["rounds"], cfg["seconds"], errors)
    finally:
        for r in runners.values():
            r.close()
    if errors:
        result["runner_errors"] = errors
        for r, e in errors.items():
            log(f"{result['name']}: {r} failed: {e.strip()[-500:]}")
    return runners


# ---- memory ------------------------------------------------------------------------------------------

def peak_rss_kib(cmd):
    """Peak resident set of cmd in KiB, from GNU time's %M (its wait4's ru_maxrss).

    Not os.wait4 on a child of this script: Linux carries the high-water mark of the forked copy of this
    (large) Python process across exec into the child's ru_maxrss. /usr/bin/time is small and forks the
    command itself, so the figure is the command's own."""
    with tempfile.NamedTemporaryFile(mode="r", suffix=".rss") as out:
        rc, _, _, err = run_rusage(["/usr/bin/time", "-f", "%M", "-o", out.name, *cmd])
        if rc != 0:
            raise RuntimeError(failure(cmd, rc, err))
        return int(out.read().split()[-1])


def measure_memory(case, baseline_kib, runs=3):
    exe = peak_rss_kib([case["exe"], case["input_pb"], "--threads", "1", "--bench", str(runs)])
    ort = peak_rss_kib(["node", os.path.join(BENCH, "ort_bench.js"), "mem", case["model"], case["input_raw"],
                        case["input_name"], case["dims"], "1", str(runs)])
    return {"flowc_kib": exe, "ort_kib": ort, "ort_net_kib": ort - baseline_kib}


# ---- the benchmark -----------------------------------------------------------------------------------

def bench_model(flowc, name, case_dir, work, cfg, baseline_kib):
    log(f"{name}: compiling")
    case = prepare_case(flowc, name, case_dir, os.path.join(work, name),
                        cfg["compile_reps"] if name == "resnet18" else 1)
    result = {"name": name, "flops": case.get("flops"), "input": case["dims"]}
    if "error" in case:
        result["error"] = case["error"]
        log(f"{name}: {case['error']}")
        return result
    result.update({k: case[k] for k in ("compile_s", "compile_all_s", "compile_cpu_s", "exe_bytes")})
    runners = time_case(result, {"flowc": lambda: FlowcRunner(case),
                                 "ort": lambda: OrtRunner(case, THREADS),
                                 "torch": lambda: TorchRunner(case, case_dir)}, THREADS, cfg)
    if "ort" in runners:
        result["ort_version"] = runners["ort"].version
    try:
        result["memory"] = measure_memory(case, baseline_kib)
    except RuntimeError as e:
        result["memory_error"] = str(e)
    return result


def bench_gemm(flowc, m, k, n, root, cfg, probes):
    name = f"gemm_{m}x{k}x{n}"
    log(f"{name}: compiling")
    case = make_gemm_case(flowc, m, k, n, root)
    result = {"name": name, "shape": [m, k, n], "flops": case.get("flops")}
    if "error" in case:
        result["error"] = case["error"]
        log(f"{name}: {case['error']}")
        return result
    result["compile_s"] = case["compile_s"]
    makers = {"flowc": lambda: FlowcRunner(case), "ort": lambda: OrtRunner(case, [1]), **probe_runners(probes)}
    runners = time_case(result, makers, [1], cfg)
    result["probe_flops"] = {r: runners[r].flops for r in runners if isinstance(runners[r], ProbeRunner)}
    return result


def bench_floor(flowc, root, cfg):
    """Times the floor case on 1 thread: each runner's fixed cost per run (for onnxruntime-node, the call
    from JavaScript into the session and the output tensor it returns)."""
    log("floor: compiling")
    case = make_floor_case(flowc, root)
    result = {"name": case["name"]}
    if "error" in case:
        result["error"] = case["error"]
        return result
    time_case(result, {"flowc": lambda: FlowcRunner(case), "ort": lambda: OrtRunner(case, [1])}, [1], cfg)
    return result


# ---- main --------------------------------------------------------------------------------------------

def selected_models(ap, text, known):
    """The names of a --models list ("a,b"), each checked against `known` (a usage error otherwise)."""
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in known]
    if unknown:
        ap.error(f"unknown model(s): {', '.join(unknown)}")
    return names


def main():
    if "--zoo" in sys.argv[1:]:  # the zoo has options of its own (bench/zoo.py)
        import zoo
        return zoo.main([a for a in sys.argv[1:] if a != "--zoo"])
    if "--int8" in sys.argv[1:]:  # so has the quantisation benchmark (bench/int8.py)
        import int8
        return int8.main([a for a in sys.argv[1:] if a != "--int8"])
    if "--sbp" in sys.argv[1:]:  # and the distribution benchmark (bench/sbp.py)
        import sbp
        return sbp.main([a for a in sys.argv[1:] if a != "--sbp"])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zoo", action="store_true", help="run the zoo of bench/zoo.py instead (its own options)")
    ap.add_argument("--int8", action="store_true", help="run bench/int8.py's quantisation benchmark instead")
    ap.add_argument("--sbp", action="store_true", help="run bench/sbp.py's distribution benchmark instead")
    ap.add_argument("--quick", action="store_true", help="fewer rounds and shorter batches (smoke run)")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of: " + ", ".join(MODELS))
    ap.add_argument("--out", default=os.path.join(BENCH, "RESULTS.md"), help="the report (default bench/RESULTS.md)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="flowc build dir (default build)")
    ap.add_argument("--models-dir", default=None, help="exported model cache (default BUILD/bench-models)")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 15, --quick 2)")
    ap.add_argument("--no-build", action="store_true",
                    help="use BUILD/tools/flowc as it is (when the tree does not build right now)")
    ap.add_argument("--no-gemm", action="store_true", help="skip the GEMM micro-benchmarks")
    args = ap.parse_args()
    names = selected_models(ap, args.models, MODELS)
    build = os.path.abspath(args.build)
    models_dir = os.path.abspath(args.models_dir or os.path.join(build, "bench-models"))
    work = os.path.join(build, "bench-work")
    cfg = {"rounds": args.rounds or (2 if args.quick else 15), "seconds": 0.2 if args.quick else 0.4,
           "compile_reps": 1 if args.quick else 3, "peak_reps": 100 if args.quick else 400}
    t_start = time.time()
    load_start = os.getloadavg()[0]

    flowc = os.path.join(build, "tools", "flowc") if args.no_build else build_flowc(build)
    if not os.access(flowc, os.X_OK):
        sys.exit(f"run.py: no flowc at {flowc}")
    ensure_ort()
    probe_dir = tempfile.TemporaryDirectory()
    probe, ukr_probe, cc_version = build_probe(probe_dir.name)
    peak = fma_peak(probe, cfg["peak_reps"])
    log(f"FMA peak: {peak['gflops_1t']:.1f} GFLOP/s on 1 thread, {peak['gflops_2t']:.1f} on 2 ({peak['isa']})")
    log(f"exporting models into {models_dir}")
    run([sys.executable, os.path.join(ROOT, "tools", "export_e2e_models.py"), models_dir, "--models",
         ",".join(names)])
    os.makedirs(work, exist_ok=True)
    baseline_kib = peak_rss_kib(["node", os.path.join(BENCH, "ort_bench.js"), "baseline"])

    results = [bench_model(flowc, n, os.path.join(models_dir, n), work, cfg, baseline_kib) for n in names]
    gemms = [] if args.no_gemm else [bench_gemm(flowc, m, k, n, os.path.join(work, "gemm"), cfg, (probe, ukr_probe))
                                     for m, k, n in GEMMS]
    floor = bench_floor(flowc, work, cfg)

    # Measured again at the end, the best of both kept: the machine may be busier at one of the two times.
    peak = fma_peak(probe, cfg["peak_reps"], peak)
    peak["compiler"] = cc_version
    probe_dir.cleanup()
    log(f"FMA peak (best of start and end): {peak['gflops_1t']:.1f} GFLOP/s on 1 thread, "
        f"{peak['gflops_2t']:.1f} on 2")
    torch_ready = next((r["torch_ready"] for r in results if "torch_ready" in r), {})
    data = {
        "argv": "".join(f" {a}" for a in sys.argv[1:]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_info(), "load_start": load_start, "load_end": os.getloadavg()[0],
        "git": git_rev(), "no_build": args.no_build, "flowc_version": tool_version([flowc, "--version"]),
        "build": os.path.relpath(build, ROOT),
        "ort_version": next((r["ort_version"] for r in results if r.get("ort_version")), "unknown"),
        "node_version": tool_version(["node", "--version"]),
        "torch_version": torch_ready.get("torch", "unknown"), "blas": torch_ready.get("blas", "unknown"),
        "peak": peak, "cfg": cfg, "ort_baseline_kib": baseline_kib, "models": results, "gemms": gemms,
        "floor": floor,
        "seconds": time.time() - t_start,
    }
    raw = os.path.splitext(args.out)[0] + ".json"
    with open(raw, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    geomean = report.write_report(args.out, data)
    log(f"wrote {args.out} and {raw} ({data['seconds']:.0f} s); geometric mean flowc/ORT "
        + ("—" if geomean is None else f"{geomean:.2f}"))


if __name__ == "__main__":
    main()
