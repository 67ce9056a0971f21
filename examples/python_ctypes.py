#!/usr/bin/python3
"""python_ctypes.py — a model compiled by `flowc build --emit so`, run from Python with ctypes and numpy.

    flowc build examples/fashion_cnn.onnx --shape image=100x1x28x28 --emit so -o out/libfashion_cnn.so
    /usr/bin/python3 examples/python_ctypes.py out/libfashion_cnn.so [--count N] [--threads N] [--expect N]

FlowcModel (below) is the part to copy: it loads the shared library, reads the model's description
(NAME_model, the FrtModel of runtime/flowrt.h: each input's and output's dtype and shape), and calls
NAME_run with numpy buffers, a 64-byte aligned workspace of NAME_workspace_size() bytes and a thread pool
from the library's own libflowrt (frt_pool_create). NAME comes from the file name as flowc derives it
(libfashion_cnn.so -> fashion_cnn). Nothing is copied: inputs must already have the model's dtype and shape.

The rest is the example: the first N images of Fashion-MNIST's test set (Debian's dataset-fashion-mnist),
scaled as tools/train_example.py scales them for PyTorch (uint8 / 255 in float32), classified in batches
of the model's batch size (the last one padded with zeros). It prints how many are right; --expect N
exits 1 unless exactly N are (examples/fashion_cnn.json holds PyTorch's count for all 10,000).
"""
import argparse
import ctypes
import gzip
import os
import re
import sys

import numpy as np

DATA_DIR = "/usr/share/datasets/fashion-mnist/"

# FrtDtype codes (ONNX TensorProto.DataType) -> numpy; bf16 travels as its uint16 bits.
DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
          9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64, 16: np.uint16}


class FrtTensorDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("dims", ctypes.POINTER(ctypes.c_int64))]


class FrtModel(ctypes.Structure):
    # The leading fields of FrtModel (runtime/flowrt.h); this code reads no others.
    _fields_ = [("abi_version", ctypes.c_uint32), ("name", ctypes.c_char_p),
                ("n_inputs", ctypes.c_int32), ("n_outputs", ctypes.c_int32),
                ("inputs", ctypes.POINTER(FrtTensorDesc)), ("outputs", ctypes.POINTER(FrtTensorDesc)),
                ("workspace_size", ctypes.c_uint64)]


class FrtError(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("msg", ctypes.c_char * 512)]


def model_name(path):
    """The symbol prefix flowc gives a library written to `path` (cg_emit.h, fc_emit_model_name)."""
    base = os.path.basename(path)
    stem = base[:base.rindex(".")] if "." in base[1:] else base
    if stem.startswith("lib") and len(stem) > 3:
        stem = stem[3:]
    stem = re.sub(r"[^A-Za-z0-9_]", "_", stem)
    return stem if stem[:1].isalpha() else "m_" + stem


class FlowcModel:
    def __init__(self, path, threads=1, name=None):
        self.lib = ctypes.CDLL(os.path.abspath(path))
        name = name or model_name(path)
        desc = FrtModel.in_dll(self.lib, name + "_model")
        if desc.abi_version != 8:
            raise RuntimeError(f"{path}: runtime ABI {desc.abi_version}, this script reads ABI 8")
        # A library built for features this CPU lacks refuses to run; say why before the first run.
        check_cpu = getattr(self.lib, name + "_check_cpu")
        check_cpu.restype = ctypes.c_int
        check_cpu.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        msg = ctypes.create_string_buffer(512)
        if check_cpu(msg, len(msg)) != 0:
            raise RuntimeError(f"{path}: {msg.value.decode()}")

        def tensors(arr, n):
            return [(arr[i].name.decode(), np.dtype(DTYPES[arr[i].dtype]),
                     tuple(arr[i].dims[d] for d in range(arr[i].rank))) for i in range(n)]

        self.inputs = tensors(desc.inputs, desc.n_inputs)    # [(name, dtype, shape)]
        self.outputs = tensors(desc.outputs, desc.n_outputs)
        self._run = getattr(self.lib, name + "_run")
        self._run.restype = ctypes.c_int
        self._run.argtypes = [ctypes.c_void_p] * 4
        ws_size = getattr(self.lib, name + "_workspace_size")
        ws_size.restype = ctypes.c_size_t
        # One workspace for this object's runs, 64-byte aligned inside a slightly larger numpy buffer.
        self._ws_buf = np.empty(ws_size() + 64, np.uint8)
        self._ws = self._ws_buf.ctypes.data + (-self._ws_buf.ctypes.data) % 64
        self.lib.frt_pool_create.restype = ctypes.c_void_p
        self.lib.frt_pool_create.argtypes = [ctypes.c_int, ctypes.POINTER(FrtError)]
        self.lib.frt_pool_destroy.argtypes = [ctypes.c_void_p]
        err = FrtError()
        self._pool = self.lib.frt_pool_create(threads, ctypes.byref(err))
        if not self._pool:
            raise RuntimeError(err.msg.decode())

    def __call__(self, *args):
        if len(args) != len(self.inputs):
            raise ValueError(f"the model takes {len(self.inputs)} inputs, got {len(args)}")
        for a, (name, dt, shape) in zip(args, self.inputs):
            if a.dtype != dt or a.shape != shape or not a.flags.c_contiguous:
                raise ValueError(f"input '{name}' must be a C-contiguous {dt} array of shape {shape}, "
                                 f"got {a.dtype} {a.shape}")
        outs = [np.empty(shape, dt) for _, dt, shape in self.outputs]
        ins = (ctypes.c_void_p * max(1, len(args)))(*[a.ctypes.data for a in args])
        ptrs = (ctypes.c_void_p * max(1, len(outs)))(*[o.ctypes.data for o in outs])
        rc = self._run(ins, ptrs, self._ws, self._pool)
        if rc != 0:
            raise RuntimeError(f"the model found bad data in kernel {rc - 1}")
        return outs

    def close(self):
        if self._pool:
            self.lib.frt_pool_destroy(self._pool)
            self._pool = None


def read_idx(path, header):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), np.uint8, offset=header)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("library", help="a model built with flowc build --emit so (-o libNAME.so)")
    ap.add_argument("--count", type=int, default=10000, help="how many test images to classify")
    ap.add_argument("--threads", type=int, default=0, help="threads (0: one per online core)")
    ap.add_argument("--expect", type=int, help="exit 1 unless exactly this many are classified correctly")
    a = ap.parse_args()

    model = FlowcModel(a.library, a.threads)
    (iname, idt, ishape), (_, _, oshape) = model.inputs[0], model.outputs[0]
    if len(model.inputs) != 1 or idt != np.float32 or int(np.prod(ishape[1:])) != 784 or len(oshape) != 2:
        sys.exit(f"{a.library}: expected one f32 input of B x 1 x 28 x 28 images and B x C scores")
    batch = ishape[0]
    images = read_idx(DATA_DIR + "t10k-images-idx3-ubyte.gz", 16).reshape(-1, 784)[:a.count]
    labels = read_idx(DATA_DIR + "t10k-labels-idx1-ubyte.gz", 8)[:a.count]
    x = images.astype(np.float32) / 255.0
    correct = 0
    for i in range(0, len(x), batch):
        chunk = np.zeros((batch, 784), np.float32)
        chunk[:len(x[i:i + batch])] = x[i:i + batch]
        (scores,) = model(chunk.reshape(ishape))
        n = min(batch, len(x) - i)
        correct += int((scores[:n].argmax(axis=1) == labels[i:i + n]).sum())
    model.close()
    print(f"{correct}/{len(x)} correct ({100.0 * correct / max(1, len(x)):.2f}%), input '{iname}' in batches of {batch}")
    if a.expect is not None and correct != a.expect:
        sys.exit(f"expected {a.expect} correct")


if __name__ == "__main__":
    main()
