#!/usr/bin/python3
"""sbp.py — SBP programs under mpirun against the one-process program (issue 15).

For each case MODEL:RANKS:MODE[:MESH] the model exported by tools/export_e2e_models.py is built twice with
`flowc build`: as the one-process executable and with --ranks RANKS --sbp MODE [--mesh MESH]; the second runs
under `mpirun -np RANKS` (oversubscribed: 4 ranks on this 2-core machine), rank 0 writing the outputs. Every
output must equal the one-process output within rtol 1e-5 (atol 1e-5 for elements near 0: the ranks sum in
another order), and PyTorch's output within the e2e tolerance (rtol 1e-4, atol 1e-5). The run must also have
done what the mode promises: the IR of the distributed build has the collectives the mode implies (data: the
batch split and gathered; tensor: an all_reduce or reduce_scatter of partial sums; a per-axis list such as data,tensor: boxing ops
over each mesh axis and none over all ranks; pipeline[-M]: rank 0's own stage with its sends and recvs, no
collective, a send per micro-batch; pipeline,X on a mesh: a split within the stage), so a pass that silently kept everything
whole would fail here. Exits 77 (skipped) when mpirun is missing.

With --device cuda the distributed program is built for the GPU too (flowc build --device cuda --ranks N: its
PTX assembled by ptxas during the build, `--emit ptx` must show kernels) and run with --device auto: without a
GPU every rank runs the CPU program over MPI, rank 0 saying so in one line, and the outputs are checked as
above; `--device cuda` must then fail on every rank (exit 1) with one line each naming the missing GPU or
driver. On a machine with fewer than N GPUs (nvidia-smi) the run on GPUs is not attempted.

--rank-specialise auto|on|off is passed to the distributed build. A build that specialises per rank (its plan
slices a constant weight: tensor parallelism) must show it: its --emit ir is rank 0's program (a comment line
saying so and flow.rank = 0) with no local_slice of a constant left (pass fold_rank folded them), and its
program still refuses to start with the wrong number of ranks; one that does not (off, or a data plan) must
have neither.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop("timeout", 900), **kw)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-4000:]}")
    return r


def load_outputs(folder):
    return {f: np.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder)) if f.endswith(".npy")}


def gpus():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for l in out.splitlines() if l.startswith("GPU"))


def check_no_gpu(spec, dist, inp, ranks, work):
    """--device cuda without GPUs: every rank exits 1 with one line saying why."""
    r = subprocess.run(MPIRUN + ["-np", str(ranks), dist, inp, "--device", "cuda", "--output-dir",
                                 os.path.join(work, "outC")], capture_output=True, text=True, timeout=600)
    lines = [l for l in r.stderr.splitlines() if "error: --device cuda:" in l]
    ranks_said = sorted({l.split(":")[0] for l in lines})
    if r.returncode == 0 or ranks_said != [f"rank {k}" for k in range(ranks)] or len(lines) != ranks:
        sys.exit(f"FAIL {spec}: --device cuda without GPUs exited {r.returncode}; wanted one line from each of "
                 f"{ranks} ranks, got:\n{r.stderr}")
    if not re.search(r"no CUDA driver|CUDA_ERROR_STUB_LIBRARY|no CUDA GPU found|NCCL, which cannot be loaded", lines[0]):
        sys.exit(f"FAIL {spec}: --device cuda without GPUs does not say what is missing: {lines[0]}")


def check_specialised(spec, ir):
    """Whether --emit ir shows rank 0's program of a rank-specialised build; fails when it says so but a
    local_slice still takes a constant."""
    comment = ir.startswith("// rank 0's program of")
    attr = re.search(r"flow\.rank = 0 : i64", ir) is not None
    if comment != attr:
        sys.exit(f"FAIL {spec}: the IR's rank comment ({comment}) and flow.rank ({attr}) disagree")
    if not attr:
        return False
    constants = set(re.findall(r'(%\w+) = "flow\.constant"', ir))
    for operand in re.findall(r'"flow\.local_slice"\((%\w+)\)', ir):
        if operand in constants:
            sys.exit(f"FAIL {spec}: rank 0's program still slices constant {operand} at run time")
    return True


def check_case(args, spec):
    parts = spec.split(":")
    model, ranks, mode = parts[0], int(parts[1]), parts[2]
    mesh = parts[3] if len(parts) > 3 else None
    case = os.path.join(args.case_root, model)
    run([sys.executable, args.export, args.case_root, "--models", model], timeout=1800)
    work = os.path.join(args.work, spec.replace(":", "-"))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    onnx_path = os.path.join(case, "model.onnx")
    data = os.path.join(case, "test_data_set_0")
    inp = os.path.join(data, "input_0.pb")
    micro = None
    if mode.startswith("pipeline-"):  # pipeline-M: M micro-batches
        mode, micro = "pipeline", mode.split("-")[1]
    sbp = ["--ranks", str(ranks), "--sbp", mode] + (["--mesh", mesh] if mesh else [])
    sbp += ["--rank-specialise", args.rank_specialise] + (["--micro-batches", micro] if micro else [])

    ir = run([args.flowc, "build", onnx_path, "--emit", "ir"] + sbp).stdout
    specialised = check_specialised(spec, ir)
    if args.rank_specialise == "off" and specialised:
        sys.exit(f"FAIL {spec}: --rank-specialise off built one program per rank")
    if args.rank_specialise == "on" and "tensor" in mode and not specialised:
        sys.exit(f"FAIL {spec}: --rank-specialise on with a tensor plan built one program for all ranks")
    if mode.startswith("pipeline"):
        # Rank 0's own stage: its ops placed on it, transfers to the next stage; no collective unless the
        # stage is split over the mesh's other axes (pipeline,data|tensor), where some value is split.
        for op in ["flow.placement = array<i64: 0", "flow.send", "flow.recv"]:
            if op not in ir:
                sys.exit(f"FAIL {spec}: the --sbp {mode} program of rank 0 has no {op}")
        if "," not in mode and re.search(r"flow\.(all_reduce|all_gather|local_slice)", ir):
            sys.exit(f"FAIL {spec}: the --sbp pipeline program has a collective")
        if "," in mode and '"S(' not in ir:
            sys.exit(f"FAIL {spec}: the --sbp {mode} program of rank 0 splits nothing within its stage")
        if micro and int(micro) > 1 and ir.count("flow.send") < int(micro):
            sys.exit(f"FAIL {spec}: {micro} micro-batches but rank 0 sends {ir.count('flow.send')} times")
    elif mode == "auto":
        # The cost model may take any plan, but a model this size is worth distributing: some op must run split.
        if not re.search(r'flow\.sbp = \["S\(', ir):
            sys.exit(f"FAIL {spec}: the --sbp auto program splits nothing")
    elif "," in mode:
        # One strategy per mesh axis: boxing ops over single axes (each tensor axis has its own; a data axis
        # has none where the batch does not divide), and no group of all ranks.
        for axis, strategy in enumerate(mode.split(",")):
            if strategy == "tensor" and f"mesh_axis = {axis} : i64" not in ir:
                sys.exit(f"FAIL {spec}: the --sbp {mode} program has no boxing op over mesh axis {axis}")
        if "mesh_axis = -1" in ir:
            sys.exit(f"FAIL {spec}: the --sbp {mode} program has a boxing op over all ranks")
        if "tensor" in mode and not re.search(r"flow\.(all_reduce|reduce_scatter)", ir):
            sys.exit(f"FAIL {spec}: the --sbp {mode} program reduces no partial sums")
    else:
        want = ["flow.local_slice", "flow.all_gather"] if mode == "data" else ["flow.all_reduce|flow.reduce_scatter"]
        for op in want:
            if not re.search(op.replace(".", "\\."), ir):
                sys.exit(f"FAIL {spec}: the --sbp {mode} program has no {op}: nothing was distributed")

    one, dist = os.path.join(work, "one"), os.path.join(work, "dist")
    gpu = ["--device", "cuda"] if args.device == "cuda" else []
    run([args.flowc, "build", onnx_path, "-o", one])
    run([args.flowc, "build", onnx_path, "-o", dist] + sbp + gpu)
    run([one, inp, "--threads", "1", "--output-dir", os.path.join(work, "out1")])
    if gpu:
        ptx = run([args.flowc, "build", onnx_path, "--emit", "ptx", "-o", "-"] + sbp + gpu).stdout
        if ".entry" not in ptx:
            sys.exit(f"FAIL {spec}: --emit ptx of the GPU SBP program shows no kernel")
        if gpus() >= ranks:
            print(f"{spec}: {gpus()} GPUs: the GPU run is the device script's (tools/gpu_check.sh)")
        else:
            check_no_gpu(spec, dist, inp, ranks, work)
    r = run(MPIRUN + ["-np", str(ranks), dist, inp, "--threads", "1", "--output-dir", os.path.join(work, "outN")])
    if specialised:
        # One program per rank, chosen by rank: the wrong number of ranks is still refused before that.
        few = ranks // 2
        w = subprocess.run(MPIRUN + ["-np", str(few), dist, inp, "--threads", "1"], capture_output=True, text=True,
                           timeout=600)
        want = f"compiled for {ranks} ranks; it was started with {few}: run it with mpirun -np {ranks}"
        if w.returncode == 0 or want not in w.stderr:
            sys.exit(f"FAIL {spec}: started on {few} rank(s) it exited {w.returncode}, wanted '{want}':\n{w.stderr}")
    if gpu and gpus() < ranks:
        said = [l for l in r.stderr.splitlines() if "running the CPU code over MPI" in l]
        if len(said) != 1:
            sys.exit(f"FAIL {spec}: --device auto without GPUs: {len(said)} lines say so, not 1:\n{r.stderr}")
    ref, got = load_outputs(os.path.join(work, "out1")), load_outputs(os.path.join(work, "outN"))
    if sorted(ref) != sorted(got):
        sys.exit(f"FAIL {spec}: outputs {sorted(got)} differ from the one-process outputs {sorted(ref)}")
    worst = 0.0
    for i, name in enumerate(sorted(ref)):
        a, b = ref[name], got[name]
        if a.shape != b.shape:
            sys.exit(f"FAIL {spec}: {name} has shape {b.shape}, one process {a.shape}")
        err = np.abs(a.astype(np.float64) - b) / (1e-5 + 1e-5 * np.abs(a.astype(np.float64)))
        worst = max(worst, float(err.max()))
        if not np.allclose(b, a, rtol=1e-5, atol=1e-5):
            sys.exit(f"FAIL {spec}: {name} differs from the one-process output by up to "
                     f"{np.abs(a - b).max():.3g}")
        pb = os.path.join(data, f"output_{i}.pb")
        if os.path.exists(pb):
            t = numpy_helper.to_array(onnx.load_tensor(pb))
            if not np.allclose(b, t, rtol=1e-4, atol=1e-5):
                sys.exit(f"FAIL {spec}: {name} differs from PyTorch's output by up to {np.abs(t - b).max():.3g}")
    how = "one program per rank" if specialised else "one program for all ranks"
    print(f"{spec}: {len(ref)} output(s) equal the one-process run (worst error/tolerance {worst:.2f}; {how})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flowc", required=True)
    ap.add_argument("--export", required=True, help="tools/export_e2e_models.py")
    ap.add_argument("--case-root", required=True, help="where the exported models are kept")
    ap.add_argument("--work", required=True)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="cuda: build the distributed program with --device cuda (see above)")
    ap.add_argument("--rank-specialise", choices=["auto", "on", "off"], default="auto",
                    help="passed to the distributed build (see above)")
    ap.add_argument("cases", nargs="+", help="MODEL:RANKS:data|tensor|auto|pipeline[-M]|data,tensor[:MESH]")
    args = ap.parse_args()
    if not shutil.which("mpirun"):
        print("mpirun is missing (Debian openmpi-bin): skipped")
        sys.exit(77)
    # Open MPI's session directory under a base of this process's own: two mpirun started at once by
    # parallel tests race on creating the shared /tmp/ompi.HOST.UID ("mkdir ... File exists", orte_init fails)
    with tempfile.TemporaryDirectory(prefix="ompi-") as base:
        os.environ["OMPI_MCA_orte_tmpdir_base"] = base
        for spec in args.cases:
            check_case(args, spec)


if __name__ == "__main__":
    main()
