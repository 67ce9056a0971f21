#!/usr/bin/python3
"""bench/sbp_calibrate.py — measures, on this machine, the constants of the SBP cost model (FcSbpCosts in
codegen/target.c: gemm_gflops, mem_gbps, op_us, link_latency_us, link_gbps, crowd_extra, crowd_sync_us) and
prints them with how each was obtained, so they can be set from a run on an idle machine. It changes nothing
itself.

    python3 bench/sbp_calibrate.py [--quick] [--build DIR] [--models-dir DIR] [--no-build] [--repeats N]

What each constant is measured from (each timing is repeated --repeats times; the median is taken):
  op_us        the fixed cost of a kernel: two chains of tiny MatMuls (1x8 by 8x8 constants, which nothing
               fuses), of 1 and 257 links, at 1 thread; the difference of their median latencies over the
               difference of their kernel counts (from --profile).
  gemm_gflops  the bench MLP (batch 64, 784-1024-1024-10) at 1 thread with --profile: the FLOPs of its large
               GEMM kernels (each ≥ 10% of the FLOPs) over their share of the profile times the batch's median
               latency. (The profile's times are means over the runs, which a preempted run inflates on a
               busy machine; the shares and the median are not.) These products are full-width (M 64, N 1024,
               K ≥ 784), which is what the model's gemm_gflops stands for.
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
  crowd_sync_us  libflowrt's all_reduce of 16 B on 4 ranks on this machine's cores (when it has fewer than 4),
               less what the model gives it crowded without this constant: how long a collective of crowded
               ranks waits for the scheduler to run each of them up to it.
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


def measure_gemm(flowc, models_dir, work, cfg):
    onnx_path = os.path.join(models_dir, "mlp_b64", "model.onnx")
    exe = os.path.join(work, "mlp_b64")
    bench.run([flowc, "build", onnx_path, "-o", exe])
    cmd = [exe, os.path.join(models_dir, "mlp_b64", "test_data_set_0", "input_0.pb")]
    rates, names = [], set()
    for _ in range(cfg["repeats"]):
        _, rows, median_ms = profile(cmd, cfg["mlp_runs"])
        total = sum(us for us, _, _ in rows)
        all_flops = sum(us * 1e-6 * rate * 1e9 for us, rate, _ in rows if rate)
        # large by FLOPs (the profile's us × GFLOP/s is the kernel's FLOP count), which no preempted run moves
        big = [(us, rate, name) for us, rate, name in rows if rate and us * rate * 1e3 >= 0.1 * all_flops]
        flops = sum(us * 1e-6 * rate * 1e9 for us, rate, _ in big)
        share = sum(us for us, _, _ in big) / total
        rates.append(flops / (share * median_ms * 1e-3) / 1e9)
        names.update(name for _, _, name in big)
    return statistics.median(rates), (f"MLP b64 --profile at 1 thread, kernels {', '.join(sorted(names))}: "
                                      f"{', '.join(f'{r:.1f}' for r in rates)} GFLOP/s over {cfg['repeats']} batches "
                                      f"of {cfg['mlp_runs']} runs (their FLOPs over their share of the median "
                                      "run); the median")


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
    """{(kind, bytes): us} of bench/mpi_link.c on `ranks` ranks."""
    text = bench.run(MPIRUN + ["-np", str(ranks), exe])
    return {(k, int(b)): float(us) for k, g, b, us in LINK_ROW.findall(text) if int(g) == ranks}


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
    two = link_times(exe, 2)
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
    gemm, how_gemm = measure_gemm(flowc, models_dir, work, cfg)
    mem, how_mem = measure_mem(flowc, work, cfg, op_us)
    gbps, lat, how_gbps, how_lat, exe, two = measure_link(work, op_us, mem, build_dir)
    crowd, how_crowd = measure_crowding(flowc, models_dir, work, cfg)
    four = link_times(exe, 4)
    cores = os.cpu_count() or 1
    k0 = {"op_us": op_us, "link_latency_us": lat, "link_gbps": gbps, "mem_gbps": mem, "crowd_extra": crowd}
    if cores < 4 and ("allreduce", SMALL) in four:
        t4 = four[("allreduce", SMALL)]
        sync = max(0.0, t4 - collective_us("allreduce", 4, SMALL, k0, cores))
        how_sync = (f"bench/mpi_link.c, 4 ranks on {cores} cores: libflowrt's all_reduce of {SMALL} B {t4:.1f} us, less "
                    "the model's crowded time for it without this wait")
    else:
        sync, how_sync = 0.0, f"not measured: {cores} cores take 4 ranks without crowding"
    level, current = current_constants(flowc, models_dir)

    bench.log(f"load average {load_start:.2f} at start, {os.getloadavg()[0]:.2f} at end\n")
    bench.log(f"FcSbpCosts for this host (level {level}; codegen/target.c's values in brackets):")
    for name, value, how in (("gemm_gflops", gemm, how_gemm), ("mem_gbps", mem, how_mem), ("op_us", op_us, how_op),
                             ("link_latency_us", lat, how_lat), ("link_gbps", gbps, how_gbps),
                             ("crowd_extra", crowd, how_crowd), ("crowd_sync_us", sync, how_sync)):
        was = current.get(name)
        bench.log(f"  .{name} = {value:.3g}  [{'?' if was is None else f'{was:g}'}]  — {how}")
    bench.log(f"\n    .gemm_gflops = {gemm:.0f}, .mem_gbps = {mem:.0f}, .op_us = {op_us:.2f}, "
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
