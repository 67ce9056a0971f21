#!/usr/bin/python3
"""torch_bench.py — times a benchmark model in PyTorch eager mode, for bench/run.py.

PyTorch cannot run the ONNX file, so the module is re-created exactly as tools/export_e2e_models.py makes
it before export: the same MODELS entry, the same per-model seed, the same BatchNorm calibration, eval().
The quantised models of bench/qdq_models.py (qdq_resnet18, ...) are re-created by its quantized_model():
the same seed, calibration and eager-mode quantisation, so PyTorch runs its own int8 module (on the onednn
engine) and NAME_f32 the float module it was made from.
The weights are then the ones in the ONNX file, which the ready line shows: it reports the largest
difference between PyTorch's output on the benchmark input (the exported input_0.pb) and the exported
output_0.pb. Timing is time.perf_counter around each forward under torch.no_grad().

It also reports the BLAS that PyTorch really calls: Debian's python3-torch links libblas.so.3, which the
alternatives system points at the reference BLAS (20x slower on Linear/MatMul) or at OpenBLAS
(libopenblas0-openmp). After one matmul the script reads /proc/self/maps, resolves the mapped
libblas.so.3 and, for OpenBLAS, asks the loaded library for openblas_get_config().

    torch_bench.py MODEL_NAME CASE_DIR
        prints {"ready": true, "first_ms": ..., "max_abs_diff": ..., "torch": ..., "blas": ...}, then reads
        stdin lines: "bench K THREADS" runs K timed forwards on THREADS threads (torch.set_num_threads,
        which also sets OpenMP's and so OpenBLAS's thread count) and prints
        {"min_ms": ..., "median_ms": ..., "runs": K}; "quit" or end of input exits.
"""
import ctypes
import json
import os
import statistics
import sys
import time

import numpy as np
import onnx
import torch
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import export_e2e_models as exporter  # noqa: E402  (the models and their calibration)
sys.path.insert(0, os.path.join(ROOT, "bench"))
import qdq_models  # noqa: E402  (the quantised models)


def read_pb(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def build(name):
    """The module as export_locked builds it: seed, constructor, BatchNorm calibration, eval()."""
    base = name[:-4] if name.endswith("_f32") else name
    if base in qdq_models.MODELS:
        model, qmodel, _ = qdq_models.quantized_model(base)
        return model if base != name else qmodel
    seed = sum(map(ord, name))
    torch.manual_seed(seed)
    np.random.seed(seed)
    model, x, _, _ = exporter.MODELS[name]()
    exporter.calibrate_batchnorm(model, x)
    model.eval()
    return model


def blas_in_use():
    """The BLAS library PyTorch's process has mapped, after a GEMM large enough to go to BLAS."""
    with torch.no_grad():
        torch.nn.functional.linear(torch.ones(64, 64), torch.ones(64, 64))
    mapped = set()
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and ("blas" in fields[5] or "mkl" in fields[5]):
                mapped.add(fields[5])
    real = sorted({os.path.realpath(p) for p in mapped})
    blas = [p for p in real if os.path.basename(p).startswith("libblas")]
    desc = ", ".join(blas or real) if real else "no BLAS mapped"
    for path in real:
        if "libopenblas" in os.path.basename(path):
            try:
                lib = ctypes.CDLL(path)
                lib.openblas_get_config.restype = ctypes.c_char_p
                return f"OpenBLAS ({lib.openblas_get_config().decode()}) via {desc}"
            except (OSError, AttributeError):
                return f"OpenBLAS via {desc}"
    if any("mkl" in p for p in real):
        return f"MKL via {desc}"
    return f"reference BLAS (not OpenBLAS) via {desc}"


def time_runs(model, x, k):
    times = []
    with torch.no_grad():
        for _ in range(k):
            t0 = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - t0) * 1e3)
    return {"min_ms": min(times), "median_ms": statistics.median(times), "runs": k}


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: torch_bench.py MODEL_NAME CASE_DIR")
    name, case = sys.argv[1], sys.argv[2]
    if name not in exporter.MODELS and name.removesuffix("_f32") not in qdq_models.MODELS:
        sys.exit(f"torch_bench: unknown model {name}")
    torch.set_num_threads(1)
    model = build(name)
    x = torch.from_numpy(read_pb(os.path.join(case, "test_data_set_0", "input_0.pb")).copy())
    want = read_pb(os.path.join(case, "test_data_set_0", "output_0.pb"))
    t0 = time.perf_counter()
    with torch.no_grad():
        got = model(x).numpy()
    first_ms = (time.perf_counter() - t0) * 1e3
    send({"ready": True, "first_ms": first_ms, "max_abs_diff": float(np.max(np.abs(got - want))),
          "torch": torch.__version__, "blas": blas_in_use()})
    for line in sys.stdin:
        words = line.split()
        if words and words[0] == "quit":
            break
        if len(words) == 3 and words[0] == "bench" and words[1].isdigit() and words[2].isdigit():
            torch.set_num_threads(int(words[2]))
            send(time_runs(model, x, int(words[1])))
        else:
            send({"error": f"unknown command '{line.strip()}'"})


if __name__ == "__main__":
    main()
