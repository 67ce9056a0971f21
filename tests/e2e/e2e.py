#!/usr/bin/python3
"""e2e.py — the end-to-end tests (meson suite 'e2e'): flowc against PyTorch, and bad input at run time.
Tests may use Python; the programs under test never do. (The main job, tools/demo.sh, is the suite's
third kind of test; tests/e2e/meson.build runs it.)

  e2e.py compare --flowc FLOWC --case DIR --mode run|exe|simt|cuda [--threads 1,2] --work DIR [--export SCRIPT]
      DIR is a test case written by tools/export_e2e_models.py (model.onnx, test_data_set_0/input_<i>.pb,
      output_<i>.pb = PyTorch's outputs); with --export, SCRIPT first (re-)exports it when it is missing
      or stale. mode run: `flowc run MODEL INPUTS --threads N --output-dir D`;
      mode exe: `flowc build MODEL -o EXE` once (EXE may need only libc, libm and libpthread, says ldd),
      then `EXE INPUTS --threads N --output-dir D`; mode simt: `flowc run MODEL INPUTS --device simt` (the GPU
      kernels on the SIMT host backend); mode cuda: PTX for sm_80 and sm_90 through ptxas, then the
      `--device cuda` executable (on a machine without a GPU it must run the CPU code and say so once). Every
      output must have PyTorch's shape and dtype and agree element-wise within |got - want| <=
      atol + rtol * |want| (rtol 1e-4, atol 1e-5: issue 3's end-to-end tolerance), with no NaN or Inf.
      One line per thread count with the largest absolute and relative errors and the worst element.
      With --precision P (mode simt): `--precision P` is passed on (the GPU matmuls and convs on tensor cores
      with inputs rounded to P) and the tolerance is the precision's: rtol 1e-2 for fp16 and tf32 (issue 16's
      fp16 target), 4e-2 for bf16 (8 bits of mantissa, 8x fp16's rounding error), with atol = rtol times the
      output's mean |want|, as values near zero carry the absolute rounding error of the sums that made them.
      With --steps N (a quantised model written by bench/qdq_models.py, whose output_0.pb is PyTorch's int8
      output): every element within N output quantisation steps instead, the step being the scale of the
      model's last DequantizeLinear (info.json's output.scale); issue 14's target is 4. The line then gives
      the largest difference in steps and how many elements differ at all.
      With --ort-steps N as well: onnxruntime (npm onnxruntime-node under bench/node_modules, run by
      ort_run.js; the comparison is skipped, saying so, where it or node is missing) runs the same file on the
      same input, and flowc's output must be within N steps of its output too. PyTorch's onednn kernels and
      onnxruntime round near-ties of the requantisation differently, and a deep network spreads a flipped tie;
      flowc and onnxruntime compute the file's arithmetic alike (bit-identical on the bench's QDQ models), so
      this is the tighter check.

  e2e.py bad-input --flowc FLOWC --work DIR
      Builds a two-input model (pixels: f32[2,3], bias: f32[3]; z = pixels + bias) and feeds it bad
      inputs through `flowc run` and through the built executable: a wrong shape, a wrong dtype, a missing input, an
      unknown input name, too many files, a missing file, truncated .npy and .pb files, and headers that
      lie about the size. Each must exit 1 with exactly one line on stderr naming the input (or file),
      and nothing from the sanitizers; a valid run must exit 0 with the right sum.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnx_export  # the onnxruntime runner of the --emit onnx test, beside this file

RTOL, ATOL = 1e-4, 1e-5
TIMEOUT = 1200  # seconds for one compile or run; resnet18 under ASan is the slowest
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")


def run(cmd, **kw):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=TIMEOUT, **kw)
    p.seconds = time.time() - t0
    return p


def show(cmd):
    return " ".join(str(c) for c in cmd)


def fail(msg):
    print(f"FAIL {msg}")
    sys.exit(1)


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


# ---- compare with PyTorch -----------------------------------------------------------------------------

def case_files(case, kind):
    d = os.path.join(case, "test_data_set_0")
    files = []
    while os.path.exists(os.path.join(d, f"{kind}_{len(files)}.pb")):
        files.append(os.path.join(d, f"{kind}_{len(files)}.pb"))
    return files


def output_step(case):
    """The output's quantisation step of a bench/qdq_models.py case (its info.json's output.scale)."""
    with open(os.path.join(case, "info.json")) as f:
        step = json.load(f)["output"]["scale"]
    if not step > 0:
        fail(f"{case}/info.json: output scale {step} is not positive")
    return step


def compare_steps(got, want, step, steps):
    """(ok, text): got within `steps` quantisation steps of want on every element."""
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64)) / step
    worst = np.unravel_index(np.argmax(diff), diff.shape)
    # Half a step: a value one step away differs by 1 (up to float rounding of the dequantised outputs).
    differ = int(np.count_nonzero(diff > 0.5))
    return bool(diff.max() <= steps + 1e-3), (
        f"max {diff.max():.2f} steps of {step:.4g} (allowed {steps:g}), {differ} of {diff.size} elements differ, "
        f"worst at {list(map(int, worst))} (got {got[worst]:.6g}, want {want[worst]:.6g})")


PRECISION_RTOL = {"tf32": 1e-2, "fp16": 1e-2, "bf16": 4e-2}


def compare_outputs(out_dir, refs, step=None, steps=None, precision=None):
    """Returns (ok, line): the worst errors over every output (in quantisation steps when `step` is given)."""
    parts, ok = [], True
    for i, ref_path in enumerate(refs):
        want = numpy_helper.to_array(onnx.load_tensor(ref_path))
        path = os.path.join(out_dir, f"output_{i}.npy")
        if not os.path.exists(path):
            return False, f"output {i}: {path} was not written"
        got = np.load(path)
        if got.dtype != want.dtype or got.shape != want.shape:
            return False, f"output {i}: got {got.dtype}{list(got.shape)}, want {want.dtype}{list(want.shape)}"
        if not np.all(np.isfinite(got)):
            bad = np.argwhere(~np.isfinite(got))[0]
            return False, f"output {i}: non-finite value {got[tuple(bad)]} at {list(bad)}"
        if step is not None:
            ok_i, text = compare_steps(got, want, step, steps)
            ok = ok and ok_i
            parts.append(f"output {i}: {text}")
            continue
        g, w = got.astype(np.float64), want.astype(np.float64)
        err = np.abs(g - w)
        atol, rtol = ATOL, RTOL
        if precision and precision != "fp32":
            rtol = PRECISION_RTOL[precision]
            atol = rtol * float(np.mean(np.abs(w)))
        ratio = err / (atol + rtol * np.abs(w))
        worst = np.unravel_index(np.argmax(ratio), ratio.shape)
        rel = err / np.maximum(np.abs(w), 1e-30)
        ok = ok and bool(ratio.max() <= 1.0)
        parts.append(f"output {i}: max abs err {err.max():.2e}, max rel err {rel.max():.2e}, worst err/tol "
                     f"{ratio.max():.3f} at {list(map(int, worst))} (got {g[worst]:.8g}, want {w[worst]:.8g})")
    return ok, "; ".join(parts)


ALLOWED_LIBS = ("linux-vdso.so", "libc.so", "libm.so", "libpthread.so", "ld-linux")


def shared_libraries(exe):
    """The shared libraries ldd lists for exe (names only)."""
    p = run(["ldd", exe])
    if p.returncode != 0 and "not a dynamic executable" not in p.stdout + p.stderr:
        fail(f"ldd {exe} exited {p.returncode}: {p.stderr.strip()}")
    return [line.split()[0].rsplit("/", 1)[-1] for line in p.stdout.splitlines() if line.strip()
            and "not a dynamic executable" not in line]


def gpu_present():
    return any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0"))


def cuda_build(a, name, model, work):
    """mode cuda: the PTX for sm_80 and sm_90, each accepted by ptxas (flowc build runs it; FLOWC_PTXAS must
    not hide it), and the --device cuda executable, which runs on the GPU where there is one and on the CPU
    (--device auto) elsewhere; it still needs only libc, libm and libpthread (libcuda is loaded with dlopen)."""
    if not os.path.exists("/usr/local/cuda/bin/ptxas"):
        print(f"SKIP {name} cuda: no ptxas in /usr/local/cuda/bin")
        sys.exit(77)
    for gpu in ("sm_80", "sm_90"):
        ptx = os.path.join(work, f"{name}.{gpu}.ptx")
        cmd = [a.flowc, "build", model, "--device", "cuda", "--gpu", gpu, "--emit", "ptx", "-o", ptx]
        p = run(cmd)
        if p.returncode != 0:
            fail(f"{name} cuda: `{show(cmd)}` exited {p.returncode}: {(p.stderr or p.stdout).strip()[-2000:]}")
        with open(ptx) as f:
            entries = f.read().count(".entry ")
        print(f"PTX for {gpu}: {entries} kernels, accepted by ptxas ({p.seconds:.1f} s)")
    exe = os.path.join(work, name)
    cmd = [a.flowc, "build", model, "--device", "cuda", "-o", exe]
    p = run(cmd)
    if p.returncode != 0:
        fail(f"{name} cuda exe: `{show(cmd)}` exited {p.returncode}: {(p.stderr or p.stdout).strip()[-2000:]}")
    extra = [lib for lib in shared_libraries(exe) if not lib.startswith(ALLOWED_LIBS)]
    if extra:
        fail(f"{name} cuda exe: {exe} needs {', '.join(extra)} (only libc, libm and libpthread are allowed)")
    return [exe]


def cmd_compare(a):
    name = os.path.basename(os.path.normpath(a.case))
    if a.export:
        # The exporter skips a model that is already there and serialises concurrent exports of one model.
        cmd = [sys.executable, a.export, os.path.dirname(os.path.normpath(a.case)), "--models", name]
        p = run(cmd)
        if p.returncode != 0:
            fail(f"{name}: `{show(cmd)}` exited {p.returncode}: {(p.stderr or p.stdout).strip()[-3000:]}")
        print(f"{p.stdout.strip()} [export step: {p.seconds:.1f} s]")
    model = os.path.join(a.case, "model.onnx")
    inputs, refs = case_files(a.case, "input"), case_files(a.case, "output")
    if not os.path.exists(model) or not inputs or not refs:
        fail(f"{name}: {a.case} is not a complete test case (run tools/export_e2e_models.py)")
    step = output_step(a.case) if a.steps is not None else None
    work = fresh_dir(a.work)
    if a.mode == "cuda":
        base = cuda_build(a, name, model, work)
    elif a.mode == "exe":
        exe = os.path.join(work, name)
        cmd = [a.flowc, "build", model, "-o", exe]
        p = run(cmd)
        if p.returncode != 0 or not os.access(exe, os.X_OK):
            fail(f"{name} exe: `{show(cmd)}` exited {p.returncode}: {(p.stderr or p.stdout).strip()[-2000:]}")
        libs = shared_libraries(exe)
        extra = [lib for lib in libs if not lib.startswith(ALLOWED_LIBS)]
        if extra:
            fail(f"{name} exe: {exe} needs {', '.join(extra)} (only libc, libm and libpthread are allowed)")
        print(f"built {exe} in {p.seconds:.1f} s; it needs {', '.join(libs)}")
        base = [exe]
    elif a.mode == "simt":
        base = [a.flowc, "run", model, "--device", "simt"]
        if a.precision:
            base += ["--precision", a.precision]
    else:
        base = [a.flowc, "run", model]
    failed, ort = False, None
    for threads in a.threads.split(","):
        out_dir = fresh_dir(os.path.join(work, f"out_t{threads}"))
        cmd = base + inputs + ["--threads", threads, "--output-dir", out_dir]
        p = run(cmd)
        if p.returncode != 0:
            fail(f"{name} {a.mode} --threads {threads}: `{show(cmd)}` exited {p.returncode}: "
                 f"{(p.stderr or p.stdout).strip()[-2000:]}")
        if a.mode == "cuda" and not gpu_present():
            # no GPU here: --device auto runs the CPU code and says so once
            said = [line for line in p.stderr.splitlines() if "running on the CPU" in line]
            if len(said) != 1:
                fail(f"{name} cuda: expected one 'running on the CPU' line on stderr, got: {p.stderr.strip()[-500:]}")
        ok, line = compare_outputs(out_dir, refs, step, a.steps, a.precision)
        print(f"{'ok  ' if ok else 'FAIL'} {name} {a.mode} --threads {threads} ({p.seconds:.1f} s): {line}")
        failed |= not ok
        if a.ort_steps is not None:
            if ort is None:
                ort = ort_outputs(name, model, inputs, work)
            for i, want in enumerate(ort or []):
                got = np.load(os.path.join(out_dir, f"output_{i}.npy"))
                ok, text = (False, f"shape {list(got.shape)}, onnxruntime's {list(want.shape)}") \
                    if got.shape != want.shape else compare_steps(got, want, step, a.ort_steps)
                print(f"{'ok  ' if ok else 'FAIL'} {name} {a.mode} --threads {threads} against onnxruntime, "
                      f"output {i}: {text}")
                failed |= not ok
    sys.exit(1 if failed else 0)


def ort_outputs(name, model, inputs, work):
    """--ort-steps: onnxruntime's outputs on the case's inputs (onnx_export.py's runner); [] where it is not
    installed."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    modules = os.path.join(root, "bench", "node_modules")
    if not os.path.exists(os.path.join(modules, "onnxruntime-node", "package.json")) or not shutil.which("node"):
        print(f"skip {name}: no onnxruntime-node under bench/node_modules (or no node): onnxruntime not compared")
        return []
    graph = onnx.load(model).graph
    names = [i.name for i in graph.input if i.name not in {t.name for t in graph.initializer}]
    feeds = {n: numpy_helper.to_array(onnx.load_tensor(path)) for n, path in zip(names, inputs)}
    return onnx_export.ort_run(root, modules, model, feeds, fresh_dir(os.path.join(work, "ort")))


# ---- bad input at run time ----------------------------------------------------------------------------

def npy_bytes(arr, header_override=None):
    """A version-1 .npy file; header_override replaces the header dict text (to make it lie)."""
    header = header_override or ("{'descr': '%s', 'fortran_order': False, 'shape': %s, }"
                                 % (arr.dtype.str, repr(tuple(arr.shape))))
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * (pad % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + arr.tobytes()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def make_bad_input_model(path):
    x = helper.make_tensor_value_info("pixels", TensorProto.FLOAT, [2, 3])
    b = helper.make_tensor_value_info("bias", TensorProto.FLOAT, [3])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])
    g = helper.make_graph([helper.make_node("Add", ["pixels", "bias"], ["z"], name="add")], "bad_input", [x, b], [z])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)


def bad_input_cases(d):
    """(label, argv for the inputs, words that must all appear in the error line)."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([10, 20, 30], dtype=np.float32)
    good_x, good_b = write(f"{d}/x.npy", npy_bytes(x)), write(f"{d}/bias.npy", npy_bytes(b))
    good_b_pb = write(f"{d}/bias.pb", numpy_helper.from_array(b, "bias").SerializeToString())
    pb = numpy_helper.from_array(x, "pixels").SerializeToString()
    lying_pb = numpy_helper.from_array(x, "pixels")
    lying_pb.dims[:] = [2, 300000]  # raw_data holds 6 floats
    huge_pb = numpy_helper.from_array(x, "pixels")
    huge_pb.dims[:] = [1 << 31, 1 << 31, 1 << 31]
    files = {
        "wrong shape": write(f"{d}/x_shape.npy", npy_bytes(np.zeros((3, 2), np.float32))),
        "wrong rank": write(f"{d}/x_rank.npy", npy_bytes(np.zeros((6,), np.float32))),
        "wrong dtype": write(f"{d}/x_f64.npy", npy_bytes(x.astype(np.float64))),
        "wrong dtype (.pb)": write(f"{d}/x_i32.pb",
                                   numpy_helper.from_array(x.astype(np.int32), "pixels").SerializeToString()),
        "truncated .npy data": write(f"{d}/x_trunc.npy", npy_bytes(x)[:-5]),
        "truncated .npy header": write(f"{d}/x_trunc_header.npy", npy_bytes(x)[:30]),
        "truncated .pb": write(f"{d}/x_trunc.pb", pb[:len(pb) - 7]),
        ".npy header lies about the shape": write(
            f"{d}/x_lie.npy", npy_bytes(x, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 300000), }")),
        ".npy header claims a huge shape": write(
            f"{d}/x_huge.npy",
            npy_bytes(x, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }")),
        ".npy header length beyond the file": write(f"{d}/x_hlen.npy", b"\x93NUMPY\x01\x00\xff\xff{'descr': '<f4'"),
        ".pb dims lie about the data": write(f"{d}/x_lie.pb", lying_pb.SerializeToString()),
        ".pb dims claim a huge tensor": write(f"{d}/x_huge.pb", huge_pb.SerializeToString()),
        "not a tensor file": write(f"{d}/x_text.npy", b"hello, world\n" * 10),
        "empty file": write(f"{d}/x_empty.npy", b""),
    }
    cases = [(label, [path, good_b], ["pixels"]) for label, path in files.items()]
    cases += [
        ("bias of the wrong shape", [good_x, write(f"{d}/bias_shape.npy", npy_bytes(np.zeros((2, 3), np.float32)))],
         ["bias"]),
        ("missing input", [good_x], ["bias"]),
        ("missing input (--input)", ["--input", f"pixels={good_x}"], ["bias"]),
        ("unknown input name", ["--input", f"pixels={good_x}", "--input", f"nosuch={good_b}"], ["nosuch"]),
        ("too many files", [good_x, good_b, good_b], []),
        ("file does not exist", [f"{d}/does-not-exist.npy", good_b], ["pixels", "does-not-exist.npy"]),
        ("a folder as the file", [d, good_b], ["pixels"]),
    ]
    valid = [("valid .npy", [good_x, good_b]),
             ("valid .npy + .pb by name", ["--input", f"bias={good_b_pb}", "--input", f"pixels={good_x}"])]
    return cases, valid, x + b


def cmd_bad_input(a):
    work = fresh_dir(a.work)
    model = os.path.join(work, "bad_input.onnx")
    make_bad_input_model(model)
    exe = os.path.join(work, "bad_input")
    p = run([a.flowc, "build", model, "-o", exe])
    if p.returncode != 0:
        fail(f"flowc build {model} -o {exe} exited {p.returncode}: {p.stderr.strip()}")
    cases, valid, want = bad_input_cases(work)
    failures = 0
    for runner, base in (("flowc run", [a.flowc, "run", model]), ("exe", [exe])):
        for label, args in valid:
            out_dir = fresh_dir(os.path.join(work, "out"))
            p = run(base + args + ["--output-dir", out_dir])
            path = os.path.join(out_dir, "output_0.npy")
            ok = p.returncode == 0 and os.path.exists(path) and np.array_equal(np.load(path), want)
            print(f"{'ok  ' if ok else 'FAIL'} {runner}: {label}: exit {p.returncode} {p.stderr.strip()}")
            failures += not ok
        for label, args, words in cases:
            p = run(base + args + ["--output-dir", os.path.join(work, "out_bad")])
            lines = p.stderr.splitlines()
            problems = []
            if p.returncode != 1:
                problems.append(f"exit status {p.returncode}, want 1")
            if len(lines) != 1:
                problems.append(f"{len(lines)} lines on stderr, want 1")
            if any(m in p.stderr for m in SANITIZER_MARKS):
                problems.append("a sanitizer report")
            missing = [w for w in words if w not in (lines[0] if lines else "")]
            if missing:
                problems.append(f"the message does not name {', '.join(repr(w) for w in missing)}")
            shown = p.stderr.strip().replace("\n", " | ")[:600]
            verdict = f"FAIL {'; '.join(problems)}: " if problems else "ok   "
            print(f"{verdict}{runner}: {label}: {shown}")
            failures += bool(problems)
    print(f"{failures} failed")
    sys.exit(1 if failures else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("--flowc", required=True)
    c.add_argument("--case", required=True)
    c.add_argument("--export", help="tools/export_e2e_models.py (or bench/qdq_models.py): export the case first "
                   "if it is missing or stale")
    c.add_argument("--mode", choices=["run", "exe", "simt", "cuda"], required=True)
    c.add_argument("--threads", default="1,2")
    c.add_argument("--steps", type=float, help="tolerance in output quantisation steps (bench/qdq_models.py cases)")
    c.add_argument("--ort-steps", type=float, help="with --steps: also within this many steps of onnxruntime's output")
    c.add_argument("--precision", choices=["fp32", "tf32", "fp16", "bf16"],
                   help="mode simt: flowc run --precision P, compared within the precision's tolerance")
    c.add_argument("--work", required=True)
    b = sub.add_parser("bad-input")
    b.add_argument("--flowc", required=True)
    b.add_argument("--work", required=True)
    a = ap.parse_args()
    if a.cmd == "compare" and a.precision and a.mode != "simt":
        ap.error("--precision applies to --mode simt")
    if a.cmd == "compare" and a.ort_steps is not None and a.steps is None:
        ap.error("--ort-steps needs --steps (a bench/qdq_models.py case)")
    {"compare": cmd_compare, "bad-input": cmd_bad_input}[a.cmd](a)


if __name__ == "__main__":
    main()
