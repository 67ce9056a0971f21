#!/usr/bin/python3
"""bench/sbp_calibrate.py — measures, on this machine, the constants of the SBP cost model (FcSbpCosts in
codegen/target.c: gemm_gflops, weight_gbps, pack_gbps, transcendental_ns, mem_gbps, op_us, link_latency_us,
link_gbps, crowd_extra, crowd_sync_us) and
prints them with how each was obtained, so they can be set from a run on an idle machine. It changes nothing
itself.

    python3 bench/sbp_calibrate.py [--quick] [--build DIR] [--models-dir DIR] [--no-build] [--repeats N]

What each constant is measured from (each timing is repeated --repeats times; the median is taken):
  op_us        the fixed cost of a kernel: two chains of tiny MatMuls (1x8 by 8x8 constants, which nothing
               fuses), of 1 and 257 links, at 1 thread; the difference of their median latencies over the
               difference of their kernel counts (from --profile).
  gemm_gflops  one MatMul of [512, K] by a constant [K, 256] at 1 thread for K = 64 .. 1024. The model
               prices it 2·M·N·K / gemm_gflops plus the weights' stream (below): a line in K, whose slope (less
               the stream) gives gemm_gflops, free of the fixed costs in its intercept.
  pack_gbps    the same product at K = 256 with the right operand a constant (packed at compile time) and an
               input (packed on each run), interleaved: the operand's bytes over the difference.
  weight_gbps  a chain of two MatMuls by [1024, 1024] constants (8 MiB of weights, beyond L2, as a model's
               weights are) on 8, 16, 32 and 64 rows at 1 thread: the products grow with the rows, the
               weights' stream does not; the least-squares line's value at 0 rows is the time to read the
               weights once per run.
  transcendental_ns  Softmax of [4, 128, 128] (the transformer's attention) at 1 thread: its time less its
               bytes at mem_gbps and op_us, per element (Exp and Tanh printed beside it).
  mem_gbps     one element-wise Add of a [R, 1024] input and a constant, at 1 thread: the bytes the cost model
               counts for it (two operands and the result) over its latency less op_us. R = 128 (the
               transformer's largest activations, 512 KiB a tensor: cache-resident, as in the bench models) is
               the proposed value; R = 4096 (16 MiB a tensor, out of cache) is printed beside it.
  link         bench/mpi_link.c under `mpirun -np 2`, linked with BUILD's libflowrt: its rows for libflowrt's
               collectives, the path a built program takes (on one machine, the shared segment of
               runtime/coll_shm.c; FLOWRT_COLL_SHM=0 in the environment measures MPI's instead). The cost model prices a collective over G ranks of n
               bytes as op_us + steps × link_latency_us + factor × n / link_gbps (+ the repacking of an
               all_to_all at mem_gbps), with the ring's steps and factors (all_reduce 2(G-1), 2(G-1)/G;
               all_gather G-1, (G-1)/G; all_to_all G-1, (G-1)/G²). Each of the three at 256 KiB, less its 16 B
               time, implies a bandwidth; link_gbps is their geometric mean (one constant serves all three).
               They are taken at 256 KiB, what the bench models' collectives move (64x1024 or 128x256 floats;
               16 MiB ones, printed below, run at another speed).
               link_latency_us = (t(all_reduce of 16 B) - op_us) / 2(G-1), at least 0. The proposed constants
               then predict all three at 1 KiB, 256 KiB and 16 MiB on 2 ranks and on 4 ranks oversubscribed (the
               model's crowding: ranks / cores), printed beside what was measured.
  crowd_extra  the MLP and the transformer at 1 thread alone and as 2 × cores copies at once: the copies' wall
               time over the alone one, over copies / cores (the share a crowded rank gets), is what each loses
               beyond its share to shared caches and switches; the geometric mean of the two (at least 1).
  crowd_sync_us  bench/mpi_link.c's crowd rows on 4 ranks on this machine's cores (when it has fewer than 4):
               each rank computes (work timed alone, 60 us to 1 ms) then all_reduces 16 B or 128 KiB, in a
               loop; the iteration's time less the work crowded (× ranks / cores × crowd_extra) and less the
               model's crowded all_reduce is what a collective of crowded ranks waits for the scheduler to
               run each of them up to it; the median of the rows.
The current constants of this host's level are read from codegen/target.c for comparison. Runs are short
(a minute or two with --quick), but every number is only as good as the machine is idle: run it on an idle
machine and look at the load averages it prints.
"""
import argparse
import math
import os
import re
import shutil
import statistics
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
import run as bench  # noqa: E402  (re-executes under Debian's python3 when needed; the shared machinery)

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
LATENCY = re.compile(r"latency: min ([0-9.]+) ms, median ([0-9.]+) ms")
PROFILE_HEAD = re.compile(r"^profile: (\d+) kernels", re.M)
PROFILE_ROW = re.compile(r"^\s*([0-9.]+)\s+([0-9.]+)%\s+([0-9.]+)%\s+([0-9.]+|-)\s+(.*)$", re.M)
LINK_ROW = re.compile(r"^(allreduce|allgather|alltoall) (\d+) (\d+) ([0-9.]+)$", re.M)
CROWD_ROW = re.compile(r"^crowd (\d+) (\d+) ([0-9.]+) ([0-9.]+)$", re.M)
HOST = re.compile(r"^sbp predicted\s+per rank and run on this host \((\w+),", re.M)
BIG = 16 << 20  # the largest buffer of bench/mpi_link.c, bytes
FIT = 256 << 10  # the size the link is fitted at: what the bench models' collectives move (64-256 KiB each)
SMALL = 16
CHAIN = 257  # links of the long MatMul chain: enough that its run lasts microseconds (latency prints 0.1 us)


def median_latency(cmd, runs, repeats):
    """The median over `repeats` batches of `runs` runs of the batch medians, ms."""
    out = []
    for _ in range(repeats):
        m = LATENCY.search(bench.run(cmd + ["--threads", "1", "--bench", str(runs)]))
        if not m:
            sys.exit(f"sbp_calibrate.py: no latency from {' '.join(cmd)}")
        out.append(float(m.group(2)))
    return statistics.median(out)


def profile(cmd, runs):
    """(kernel count, [(us a run, GFLOP/s or None, kernel)], the batch's median latency in ms) of one --profile
    batch at 1 thread."""
    text = bench.run(cmd + ["--threads", "1", "--bench", str(runs), "--profile"])
    head, lat = PROFILE_HEAD.search(text), LATENCY.search(text)
    if not head or not lat:
        sys.exit(f"sbp_calibrate.py: no profile from {' '.join(cmd)}:\n{text[-1000:]}")
    rows = [(float(us), None if rate == "-" else float(rate), name)
            for us, _, _, rate, name in PROFILE_ROW.findall(text)]
    return int(head.group(1)), rows, float(lat.group(2))


def save_model(path, nodes, inputs, outputs, inits, x):
    from onnx import helper, numpy_helper
    import onnx
    graph = helper.make_graph(nodes, os.path.basename(path), inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="bench/sbp_calibrate.py")
    onnx.checker.check_model(model)
    onnx.save(model, path + ".onnx")
    with open(path + ".pb", "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())


def build(flowc, path):
    bench.run([flowc, "build", path + ".onnx", "-o", path])
    return [path, path + ".pb"]


def matmul_chain(flowc, work, links):
    """A chain x·W1·W2·…·Wn of 1x8 by 8x8 products, each W its own constant (so none are merged)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(links)
    nodes, inits, prev = [], [], "x"
    for i in range(links):
        w = (rng.standard_normal((8, 8)) / 3).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        out = "y" if i == links - 1 else f"h{i}"
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [out]))
        prev = out
    path = os.path.join(work, f"chain{links}")
    save_model(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], inits,
               rng.standard_normal((1, 8)).astype(np.float32))
    return build(flowc, path)


def add_model(flowc, work, rows):
    """y = x + c over [rows, 1024] floats, c a constant."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(rows)
    shape = [rows, 1024]
    path = os.path.join(work, f"add{rows}")
    save_model(path, [helper.make_node("Add", ["x", "c"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
               [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), "c")],
               rng.standard_normal(shape).astype(np.float32))
    return build(flowc, path), 3 * rows * 1024 * 4


def measure_op_us(flowc, work, cfg):
    short, long_ = matmul_chain(flowc, work, 1), matmul_chain(flowc, work, CHAIN)
    k_short, k_long = profile(short, 50)[0], profile(long_, 50)[0]  # kernel counts
    if k_long <= k_short:
        sys.exit(f"sbp_calibrate.py: the {CHAIN}-link chain has {k_long} kernels, the 1-link one {k_short}: fused?")
    t_short = median_latency(short, 2000, cfg["repeats"])
    t_long = median_latency(long_, 1000, cfg["repeats"])
    op_us = (t_long - t_short) * 1e3 / (k_long - k_short)
    return op_us, (f"chains of 1 and {CHAIN} tiny MatMuls: {k_short} and {k_long} kernels, {t_short * 1e3:.2f} and "
                   f"{t_long * 1e3:.2f} us a run at 1 thread (medians of {cfg['repeats']})")


def matmul_model(flowc, work, name, m, dims):
    """x[m, dims[0]] · W1[dims[0], dims[1]] · W2 ... (constants, seeded): a chain of len(dims) - 1 MatMuls."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(m * 7919 + sum(dims))
    nodes, inits, prev = [], [], "x"
    for i in range(len(dims) - 1):
        w = (rng.standard_normal((dims[i], dims[i + 1])) / math.sqrt(dims[i])).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        out = "y" if i == len(dims) - 2 else f"h{i}"
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [out]))
        prev = out
    path = os.path.join(work, name)
    save_model(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, dims[0]])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, dims[-1]])], inits,
               rng.standard_normal((m, dims[0])).astype(np.float32))
    return build(flowc, path)


def line_fit(xs, ys):
    """(slope, intercept) of the least-squares line through (xs, ys)."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    a = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return a, my - a * mx


GEMM_M, GEMM_N, GEMM_KS = 512, 256, (64, 128, 256, 512, 1024)
STREAM_WIDTH, STREAM_ROWS = 1024, (8, 16, 32, 64)


def measure_gemm(flowc, work, cfg, weight_gbps):
    """gemm_gflops: one MatMul of [512, K] by a constant [K, 256] for K = 64 .. 1024 at 1 thread. The model's
    time, 2·M·N·K / gemm_gflops plus the weights' stream (4·K·N bytes at weight_gbps), is a line in K: its
    slope, less the stream, gives gemm_gflops, free of the fixed costs (its intercept, printed)."""
    ts = []
    for kk in GEMM_KS:
        cmd = matmul_model(flowc, work, f"gemm_k{kk}", GEMM_M, [kk, GEMM_N])
        ts.append(median_latency(cmd, 200, cfg["repeats"]) * 1e-3)  # seconds
    slope, icpt = line_fit(GEMM_KS, ts)
    stream = 4 * GEMM_N / (weight_gbps * 1e9) if weight_gbps > 0 else 0.0
    gflops = 2 * GEMM_M * GEMM_N / (slope - stream) / 1e9
    return gflops, (f"MatMul [{GEMM_M}, K] x [K, {GEMM_N}] at 1 thread, K = {', '.join(map(str, GEMM_KS))}: "
                    f"{', '.join(f'{t * 1e6:.0f}' for t in ts)} us (medians of {cfg['repeats']}); the line through "
                    f"them: slope less the weights' stream (intercept {icpt * 1e6:.1f} us)")


def measure_pack(flowc, work, cfg):
    """pack_gbps: MatMul [512, 256] x [256, 256] at 1 thread with the right operand a constant (packed at
    compile time) and a second input (packed on each run): the difference over its bytes."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    m, kk, n = GEMM_M, 256, 256
    const_cmd = matmul_model(flowc, work, "pack_const", m, [kk, n])
    path = os.path.join(work, "pack_runtime")
    rng = np.random.default_rng(5)
    save_model(path, [helper.make_node("MatMul", ["x", "b"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, kk]),
                helper.make_tensor_value_info("b", TensorProto.FLOAT, [kk, n])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])], [],
               rng.standard_normal((m, kk)).astype(np.float32))
    with open(path + "_b.pb", "wb") as f:
        f.write(numpy_helper.from_array(rng.standard_normal((kk, n)).astype(np.float32), "b").SerializeToString())
    runtime_cmd = build(flowc, path) + [path + "_b.pb"]
    tc, tr = [], []
    for _ in range(cfg["repeats"]):  # interleaved: the two are compared
        tc.append(median_latency(const_cmd, 500, 1) * 1e-3)
        tr.append(median_latency(runtime_cmd, 500, 1) * 1e-3)
    c, r = statistics.median(tc), statistics.median(tr)
    nbytes = 4 * kk * n
    gbps = nbytes / (r - c) / 1e9 if r > c else float("nan")
    return gbps, (f"MatMul [{m}, {kk}] x [{kk}, {n}] at 1 thread: {c * 1e6:.1f} us with a constant right operand, "
                  f"{r * 1e6:.1f} us with an input one (medians of {cfg['repeats']}, interleaved); "
                  f"{nbytes >> 10} KiB over the difference")


def measure_weight_stream(flowc, work, cfg):
    """weight_gbps: a chain of two MatMuls by [1024, 1024] constants (8 MiB of weights, beyond L2) on 8 .. 64
    rows at 1 thread. The products grow with the rows, the weights' stream does not: the line's value at
    0 rows, less two kernels' op_us-scale fixed cost, is the time to stream the weights once."""
    ts = []
    for m in STREAM_ROWS:
        cmd = matmul_model(flowc, work, f"stream_m{m}", m, [STREAM_WIDTH] * 3)
        ts.append(median_latency(cmd, 500, cfg["repeats"]) * 1e-3)
    _, icpt = line_fit(STREAM_ROWS, ts)
    wbytes = 2 * STREAM_WIDTH * STREAM_WIDTH * 4
    gbps = wbytes / icpt / 1e9 if icpt > 0 else float("nan")
    return gbps, (f"two MatMuls by [{STREAM_WIDTH}, {STREAM_WIDTH}] constants ({wbytes >> 20} MiB) on "
                  f"{', '.join(map(str, STREAM_ROWS))} rows at 1 thread: "
                  f"{', '.join(f'{t * 1e6:.0f}' for t in ts)} us; the line's value at 0 rows "
                  f"({icpt * 1e6:.0f} us) is the weights' stream")


def unary_model(flowc, work, op, shape, **attrs):
    import numpy as np
    from onnx import TensorProto, helper
    path = os.path.join(work, op.lower())
    save_model(path, [helper.make_node(op, ["x"], ["y"], **attrs)],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], [],
               np.random.default_rng(1).standard_normal(shape).astype(np.float32))
    return build(flowc, path)


def measure_transcendental(flowc, work, cfg, op_us, mem_gbps):
    """transcendental_ns: Softmax over the last axis of [4, 128, 128] (the transformer's attention) at 1 thread,
    less its bytes at mem_gbps and op_us, per element. Exp and Tanh of the same shape are printed beside it."""
    shape, n = [4, 128, 128], 4 * 128 * 128
    per = {}
    for op, attrs in (("Softmax", {"axis": -1}), ("Exp", {}), ("Tanh", {})):
        t = median_latency(unary_model(flowc, work, op, shape, **attrs), 2000, cfg["repeats"]) * 1e-3
        per[op] = (t - op_us * 1e-6 - 2 * n * 4 / (mem_gbps * 1e9)) / n * 1e9
    return per["Softmax"], ("[4, 128, 128] at 1 thread, ns an element beyond the bytes at mem_gbps: " +
                            ", ".join(f"{op} {v:.2f}" for op, v in per.items()) + "; Softmax's")


def measure_crowding(flowc, models_dir, work, cfg):
    """crowd_extra: the one-process MLP and transformer at 1 thread, a batch of runs alone and then as
    2 × cores copies at once (what oversubscribed ranks are): the wall time of the copies' batches over the
    alone one's, over copies / cores (the share a crowded process gets), is how much more each loses to the
    shared caches and the switches between them. Wall times, not run latencies: a run shorter than the
    scheduler's slice often finishes unpreempted, which ranks that wait on each other in collectives do
    not get to do. The geometric mean of the two, at least 1."""
    import subprocess
    import time as _time
    cores = os.cpu_count() or 1
    copies = 2 * cores
    ratios, parts = [], []
    for name in ("mlp_b64", "transformer"):
        exe = os.path.join(work, f"{name}-crowd")
        bench.run([flowc, "build", os.path.join(models_dir, name, "model.onnx"), "-o", exe])
        cmd = [exe, os.path.join(models_dir, name, "test_data_set_0", "input_0.pb"), "--threads", "1", "--bench",
               str(cfg["mlp_runs"] * 2)]
        alone, crowd = [], []
        for _ in range(cfg["repeats"]):
            t0 = _time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
            alone.append(_time.perf_counter() - t0)
            t0 = _time.perf_counter()
            procs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL) for _ in range(copies)]
            for pr in procs:
                pr.wait()
            crowd.append(_time.perf_counter() - t0)
        r = statistics.median(crowd) / statistics.median(alone) / (copies / cores)
        ratios.append(r)
        parts.append(f"{name} {statistics.median(alone):.3f} s alone, {statistics.median(crowd):.3f} s crowded ({r:.2f})")
    extra = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    return max(1.0, extra), (f"{copies} copies at 1 thread on {cores} cores against one alone, batches of "
                             f"{cfg['mlp_runs'] * 2} runs, wall-time medians over {cfg['repeats']} rounds: "
                             f"{'; '.join(parts)}; the geometric mean, at least 1")


def measure_mem(flowc, work, cfg, op_us):
    out = {}
    for rows in (128, 4096):
        cmd, nbytes = add_model(flowc, work, rows)
        t = median_latency(cmd, 2000 if rows == 128 else 50, cfg["repeats"])
        out[rows] = (nbytes / ((t - op_us * 1e-3) * 1e-3) / 1e9, nbytes, t)
    (gbps, nbytes, t), (big_gbps, big_bytes, big_t) = out[128], out[4096]
    return gbps, (f"Add of [128, 1024] floats: {nbytes / 2**20:.1f} MiB counted in {t * 1e3:.1f} us at 1 thread "
                  f"(less op_us); out of cache, [4096, 1024]: {big_gbps:.1f} GB/s ({big_bytes / 2**20:.0f} MiB in "
                  f"{big_t:.2f} ms)")


def link_times(exe, ranks):
    """bench/mpi_link.c on `ranks` ranks: ({(kind, bytes): us}, [(bytes, work us alone, iteration us)] of
    its crowd rows)."""
    text = bench.run(MPIRUN + ["-np", str(ranks), exe])
    return ({(k, int(b)): float(us) for k, g, b, us in LINK_ROW.findall(text) if int(g) == ranks},
            [(int(b), float(w), float(it)) for g, b, w, it in CROWD_ROW.findall(text) if int(g) == ranks])




KINDS = ("allreduce", "allgather", "alltoall")


def ring(kind, g):
    """(steps, factor of the bytes sent, bytes repacked) of a collective over g ranks, as passes/sbp_cost.c."""
    return {"allreduce": (2 * (g - 1), 2 * (g - 1) / g, 0), "allgather": (g - 1, (g - 1) / g, 0),
            "alltoall": (g - 1, (g - 1) / g**2, 2 / g)}[kind]


def collective_us(kind, g, nbytes, k, cores):
    """The cost model's time of one collective (passes/sbp_cost.c) under constants k, microseconds."""
    steps, factor, copied = ring(kind, g)
    crowd = g / cores * k.get("crowd_extra", 1.0) if cores and g > cores else 1.0
    sync = k.get("crowd_sync_us", 0.0) if cores and g > cores else 0.0
    return (k["op_us"] + steps * k["link_latency_us"] + factor * nbytes / (k["link_gbps"] * 1e3) +
            copied * nbytes / (k["mem_gbps"] * 1e3)) * crowd + sync


def measure_link(work, op_us, mem_gbps, build_dir):
    """link_gbps: the geometric mean over all_reduce, all_gather and all_to_all of the bandwidth each implies
    at FIT bytes on 2 ranks (its time less its 16 B time and its repacking, over the bytes the ring sends);
    link_latency_us: from the 16 B all-reduce."""
    exe = os.path.join(work, "mpi_link")
    bench.run(["mpicc", "-O2", os.path.join(BENCH, "mpi_link.c"), "-I", os.path.join(bench.ROOT, "runtime"),
               os.path.join(build_dir, "runtime", "libflowrt.a"), "-lm", "-lpthread", "-o", exe])
    two = link_times(exe, 2)[0]
    missing = [f"{k} {n} B" for k in KINDS for n in (SMALL, FIT) if (k, n) not in two]
    if missing:
        sys.exit(f"sbp_calibrate.py: bench/mpi_link.c printed no {', '.join(missing)}")
    implied = {}
    for kind in KINDS:
        _, factor, copied = ring(kind, 2)
        t = two[(kind, FIT)] - two[(kind, SMALL)] - copied * FIT / (mem_gbps * 1e3)
        implied[kind] = factor * FIT / (t * 1e3) if t > 0 else float("nan")
    good = [v for v in implied.values() if v == v]
    if not good:
        sys.exit(f"sbp_calibrate.py: no collective took longer at {FIT} B than at {SMALL} B")
    gbps = statistics.geometric_mean(good)
    t_small = two[("allreduce", SMALL)]
    lat = max(0.0, (t_small - op_us) / 2)
    how_gbps = (f"bench/mpi_link.c, 2 ranks, {FIT >> 10} KiB: " +
                ", ".join(f"{k} {two[(k, FIT)]:.1f} us ({implied[k]:.2f} GB/s)" for k in KINDS) +
                "; their geometric mean")
    how_lat = (f"bench/mpi_link.c, 2 ranks: libflowrt's all_reduce of {SMALL} B {t_small:.2f} us; (that - op_us) over its 2 "
               "steps, at least 0")
    return gbps, lat, how_gbps, how_lat, exe, two


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 repeats, shorter MLP batches (smoke run)")
    ap.add_argument("--repeats", type=int, default=None, help="timings per measurement (default 7, --quick 3)")
    ap.add_argument("--build", default=os.path.join(bench.ROOT, "build"), help="flowc build dir (default build)")
    ap.add_argument("--models-dir", default=None, help="exported model cache (default BUILD/bench-models)")
    ap.add_argument("--no-build", action="store_true", help="use BUILD/tools/flowc as it is")
    args = ap.parse_args(argv)
    for tool in ("mpirun", "mpicc"):
        if not shutil.which(tool):
            sys.exit(f"sbp_calibrate.py: {tool} is missing (Debian: openmpi-bin, libopenmpi-dev)")
    cfg = {"repeats": args.repeats or (3 if args.quick else 7), "mlp_runs": 50 if args.quick else 200}
    build_dir = os.path.abspath(args.build)
    models_dir = os.path.abspath(args.models_dir or os.path.join(build_dir, "bench-models"))
    work = os.path.join(build_dir, "bench-work", "sbp_calibrate")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    flowc = os.path.join(build_dir, "tools", "flowc") if args.no_build else bench.build_flowc(build_dir)
    bench.run([sys.executable, os.path.join(bench.ROOT, "tools", "export_e2e_models.py"), models_dir,
               "--models", "mlp_b64,transformer"])
    load_start = os.getloadavg()[0]
    bench.log(f"calibrating on {bench.machine_info()['model']}, {os.cpu_count()} cores, load average {load_start:.2f}")

    op_us, how_op = measure_op_us(flowc, work, cfg)
    mem, how_mem = measure_mem(flowc, work, cfg, op_us)
    wgbps, how_w = measure_weight_stream(flowc, work, cfg)
    gemm, how_gemm = measure_gemm(flowc, work, cfg, wgbps)
    pack, how_pack = measure_pack(flowc, work, cfg)
    trans, how_trans = measure_transcendental(flowc, work, cfg, op_us, mem)
    gbps, lat, how_gbps, how_lat, exe, two = measure_link(work, op_us, mem, build_dir)
    crowd, how_crowd = measure_crowding(flowc, models_dir, work, cfg)
    four, crowd_rows = link_times(exe, 4)
    cores = os.cpu_count() or 1
    k0 = {"op_us": op_us, "link_latency_us": lat, "link_gbps": gbps, "mem_gbps": mem, "crowd_extra": crowd}
    if cores < 4 and crowd_rows:
        extras = [it - work_us * 4 / cores * crowd - collective_us("allreduce", 4, nbytes, k0, cores)
                  for nbytes, work_us, it in crowd_rows]
        sync = max(0.0, statistics.median(extras))
        how_sync = (f"bench/mpi_link.c, 4 ranks on {cores} cores computing between all_reduces (work us alone, "
                    "bytes: iteration us, less the work crowded and the model's crowded all_reduce): " +
                    "; ".join(f"{w:.0f}, {b} B: {it:.0f} ({e:+.0f})" for (b, w, it), e in zip(crowd_rows, extras)) +
                    "; the median")
    else:
        sync, how_sync = 0.0, f"not measured: {cores} cores take 4 ranks without crowding"
    level, current = current_constants(flowc, models_dir)

    bench.log(f"load average {load_start:.2f} at start, {os.getloadavg()[0]:.2f} at end\n")
    bench.log(f"FcSbpCosts for this host (level {level}; codegen/target.c's values in brackets):")
    for name, value, how in (("gemm_gflops", gemm, how_gemm), ("pack_gbps", pack, how_pack),
                             ("weight_gbps", wgbps, how_w), ("transcendental_ns", trans, how_trans),
                             ("mem_gbps", mem, how_mem), ("op_us", op_us, how_op),
                             ("link_latency_us", lat, how_lat), ("link_gbps", gbps, how_gbps),
                             ("crowd_extra", crowd, how_crowd), ("crowd_sync_us", sync, how_sync)):
        was = current.get(name)
        bench.log(f"  .{name} = {value:.3g}  [{'?' if was is None else f'{was:g}'}]  — {how}")
    bench.log(f"\n    .gemm_gflops = {gemm:.0f}, .weight_gbps = {wgbps:.0f}, .pack_gbps = {pack:.1f}, "
              f".transcendental_ns = {trans:.2f}, .mem_gbps = {mem:.0f}, .op_us = {op_us:.2f}, "
              f".link_latency_us = {lat:.2f}, .link_gbps = {gbps:.1f}, .crowd_extra = {crowd:.2f}, "
              f".crowd_sync_us = {sync:.1f},")
    bench.log("\nThe link so set against bench/mpi_link.c (model: passes/sbp_cost.c's collective cost, "
              "crowded by ranks / cores × crowd_extra):")
    k = dict(k0, crowd_sync_us=sync)
    for g, times in ((2, two), (4, four)):
        for kind in KINDS:
            for nbytes in (SMALL * 64, FIT, BIG):
                if (kind, nbytes) in times:
                    pred = collective_us(kind, g, nbytes, k, cores)
                    meas = times[(kind, nbytes)]
                    bench.log(f"  {g} ranks {kind:9s} {nbytes:>9d} B: measured {meas:9.1f} us, model {pred:9.1f} us "
                              f"({meas / pred:.2f}×)")


def current_constants(flowc, models_dir):
    """This host's level (from flowc info) and its FcSbpCosts in codegen/target.c, {name: value}."""
    text = bench.run([flowc, "info", os.path.join(models_dir, "mlp_b64", "model.onnx"), "--ranks", "2", "--sbp", "data"])
    m = HOST.search(text)
    level = m.group(1) if m else "?"
    with open(os.path.join(bench.ROOT, "codegen", "target.c")) as f:
        src = f.read()
    row = re.search(r'\{"%s",.*?&(sbp_\w+)\}' % re.escape(level), src, re.S)
    body = re.search(r"FcSbpCosts %s = \{(.*?)\};" % row.group(1), src, re.S) if row else None
    return level, {k: float(v) for k, v in re.findall(r"\.(\w+) = ([0-9.]+)", body.group(1))} if body else {}


if __name__ == "__main__":
    main()
