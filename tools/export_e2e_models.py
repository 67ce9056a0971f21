#!/usr/bin/python3
"""export_e2e_models.py OUTDIR [--models a,b,...] [--force] — exports the end-to-end test models.

Each model becomes an ONNX backend test case that `flowc check` (and tests/e2e/compare.py) can read:

    OUTDIR/<name>/model.onnx
    OUTDIR/<name>/test_data_set_0/input_0.pb     (ONNX TensorProto, named after the graph input)
    OUTDIR/<name>/test_data_set_0/output_0.pb    PyTorch's float32 output on that input
    OUTDIR/<name>/info.json                      shapes, output statistics, PyTorch f32 vs f64 error

The models (issue 3, section 8), all exported with opset 13 and static shapes:
  cnn_b1, cnn_b64      the seed CNN with the trained weights of examples/fashion_cnn.onnx, on the first
                       1 / 64 Fashion-MNIST test images, scaled as tools/train_example.py does;
  resnet18, mobilenet_v2, squeezenet1_1
                       torchvision architectures, random init, 1x3x224x224;
  transformer          nn.TransformerEncoder, 2 layers, d_model 256, 4 heads, ff 1024, batch_first,
                       input 1x128x256;
  mlp_b64              784-1024-1024-10 with ReLU, batch 64;
  opsets17, opsets18   a small network whose ops changed signature in opsets 18-21 (GroupNorm, reflect
                       pad, split/chunk, bilinear resize, mean/amax/L2-norm/logsumexp reductions) on a
                       2x3x17x19 input, exported at opset 17 (the newest Debian's torch 1.13 writes) and at
                       18: directly where the installed torch can, else the opset 17 export with each op
                       whose signature changed in 18 rewritten into its opset 18 form, as torch 2.x writes
                       it (Reduce* axes as an input; Split with num_outputs when the parts are equal).
  gru_bidir            nn.GRU, 2 layers, bidirectional, input 16, hidden 32, on a 50x2x16 sequence; outputs
                       the sequence and the final states;
  lstm                 nn.LSTM, 1 layer, input 16, hidden 24, on a 50x2x16 sequence; outputs the sequence and
                       both final states;
  script_loop_if       a torch.jit.script module whose forward runs a Python `for` over the rows of its
                       12x8 input with a data-dependent `if` inside (exported as ONNX Loop and If).

Random weights need realistic statistics: each BatchNorm's running mean and variance are set from a
few forward passes in training mode on data drawn like the test input (momentum None, so they are the
plain average of the batch statistics) before eval() and export. Otherwise random-init mobilenet_v2
outputs values near 1e-9 and any tolerance passes. info.json records the output's spread and how far
PyTorch's float32 result is from its own float64 result (the accuracy headroom of the test).

Everything is seeded, so a re-export gives the same files. A model is skipped when its folder holds a
complete export (info.json is written last) made by the same exporter, training script and example
(their SHA-256 is kept in info.json), unless --force. Concurrent exports of one model (tests running
in parallel) take turns on a lock file, so the second finds the first's result. Runs on the CPU with
Debian's python3-torch 1.13 and python3-torchvision 0.14: /usr/bin/python3 tools/export_e2e_models.py OUT
"""
import argparse
import fcntl
import hashlib
import json
import os
import shutil
import sys
import time

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from train_example import SeedCNN, find, read_idx  # noqa: E402  (the same network and IDX reader)

OPSET = 13
EXAMPLE = os.path.join(HERE, "..", "examples", "fashion_cnn.onnx")


# ---- the models ------------------------------------------------------------------------------------

def seed_cnn(batch):
    """The trained example, re-created in PyTorch from the ONNX file's initializers."""
    def build():
        model = SeedCNN()
        onnx_model = onnx.load(EXAMPLE)
        state = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in onnx_model.graph.initializer}
        model.load_state_dict(state, strict=True)
        images = read_idx(find("t10k-images-idx3-ubyte"))[:batch]
        x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
        return model, x, ["image"], ["logits"]
    return build


def torchvision_model(name):
    def build():
        import torchvision
        model = getattr(torchvision.models, name)()  # random init (no weights downloaded)
        return model, image_batch(1), ["input"], ["output"]
    return build


def image_batch(n):
    return torch.randn(n, 3, 224, 224)


def transformer():
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
    # Without nested tensors eval() never takes PyTorch's fused fast path, which ONNX export cannot trace.
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    return model, torch.randn(1, 128, 256), ["input"], ["output"]


def mlp():
    model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    # He initialisation keeps activations near unit scale through the ReLUs, as in a trained network;
    # PyTorch's default shrinks them layer by layer (outputs near 0.05).
    for layer in model:
        if isinstance(layer, nn.Linear):
            nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
    return model, torch.rand(64, 784), ["input"], ["output"]


class OpsetNet(nn.Module):
    """Ops whose ONNX signature changed in opsets 18-21, at odd sizes."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 12, 3, padding=1)
        self.norm = nn.GroupNorm(3, 12)
        self.conv2 = nn.Conv2d(12, 12, 3)
        self.proj = nn.Conv2d(12, 11, 1)
        self.fc = nn.Linear(35, 10)

    def forward(self, x):
        x = torch.nn.functional.silu(self.norm(self.conv1(x)))
        x = torch.nn.functional.pad(x, (1, 2, 2, 1), mode="reflect")
        a, b, c = torch.chunk(self.conv2(x), 3, dim=1)
        x = torch.cat([a * torch.sigmoid(b), c, a - c], dim=1)
        x = torch.nn.functional.interpolate(x, scale_factor=0.6, mode="bilinear", align_corners=False)
        p, q, r = torch.split(self.proj(x), 4, dim=1)  # 4, 4, 3
        y = torch.cat([p.mean(dim=(2, 3)), q.amax(dim=(-1, -2)), r.amin(dim=(2, 3)),
                       torch.linalg.vector_norm(x, dim=(2, 3)), torch.logsumexp(x, dim=(2, 3))], dim=1)
        return torch.log_softmax(self.fc(y) + y.mean(dim=1, keepdim=True), dim=-1)


def opset_net():
    return OpsetNet(), torch.randn(2, 3, 17, 19), ["input"], ["output"]


# The ops whose signature changed in opset 18 (ReduceSum changed in 13) and how the rewrite reads them.
REDUCE_18 = {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
             "ReduceProd", "ReduceSumSquare"}


def upgrade_to_18(model):
    """The opset 17 model in opset 18's form: Reduce* axes attribute -> int64 input; Split with constant
    sizes that num_outputs gives (parts of ceil(total / n), the last one smaller) -> num_outputs;
    everything else has the same form in 17 and 18."""
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    consts = {n.output[0]: n for n in g.node if n.op_type == "Constant"}
    for i, node in enumerate(g.node):
        if node.op_type in REDUCE_18:
            axes = [a for a in node.attribute if a.name == "axes"]
            if axes:
                name = f"{node.name or node.op_type + str(i)}_axes18"
                g.initializer.append(numpy_helper.from_array(np.array(list(axes[0].ints), np.int64), name))
                node.attribute.remove(axes[0])
                node.input.append(name)
        elif node.op_type == "Split" and len(node.input) == 2:
            src = inits.get(node.input[1])
            sizes = numpy_helper.to_array(src) if src is not None else None
            if src is None and node.input[1] in consts:
                sizes = numpy_helper.to_array(consts[node.input[1]].attribute[0].t)
            n = len(node.output)
            part = -(-int(sizes.sum()) // n) if sizes is not None else 0
            if sizes is not None and sizes.tolist() == [part] * (n - 1) + [int(sizes.sum()) - part * (n - 1)]:
                del node.input[1:]
                node.attribute.append(onnx.helper.make_attribute("num_outputs", len(node.output)))
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = 18
    return model


class RecurrentNet(nn.Module):
    """A recurrent layer returning every output it has, flattened into one tuple."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        y, state = self.rnn(x)
        return (y,) + (tuple(state) if isinstance(state, tuple) else (state,))


def gru_bidir():
    return RecurrentNet(nn.GRU(16, 32, num_layers=2, bidirectional=True)), torch.randn(50, 2, 16), ["input"], \
        ["output", "h_n"]


def lstm():
    return RecurrentNet(nn.LSTM(16, 24)), torch.randn(50, 2, 16), ["input"], ["output", "h_n", "c_n"]


class LoopIf(nn.Module):
    """A data-dependent loop and branch: scripting keeps them as control flow (ONNX Loop and If)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = torch.zeros_like(x[0])
        for t in range(x.size(0)):
            v = self.lin(x[t]) + h
            if x[t].sum() > 0:
                h = torch.tanh(v)
            else:
                h = torch.sigmoid(v) - 0.5 * h
        return h


def script_loop_if():
    return torch.jit.script(LoopIf()), torch.randn(12, 8), ["input"], ["output"]


MODELS = {
    "cnn_b1": seed_cnn(1),
    "cnn_b64": seed_cnn(64),
    "resnet18": torchvision_model("resnet18"),
    "mobilenet_v2": torchvision_model("mobilenet_v2"),
    "squeezenet1_1": torchvision_model("squeezenet1_1"),
    "transformer": transformer,
    "mlp_b64": mlp,
    "opsets17": opset_net,
    "opsets18": opset_net,
    "gru_bidir": gru_bidir,
    "lstm": lstm,
    "script_loop_if": script_loop_if,
}
OPSETS = {"opsets17": 17, "opsets18": 18}  # the others: OPSET


# ---- export ----------------------------------------------------------------------------------------

def calibrate_batchnorm(model, x):
    """Sets every BatchNorm's running statistics from training-mode passes on inputs drawn like x."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return 0
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average of the batches seen
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(8, *x.shape[1:]) * x.std() + x.mean())
    return len(bns)


def as_tuple(out):
    """A model's output(s) as a tuple of NumPy arrays."""
    return tuple(t.numpy() for t in (out if isinstance(out, tuple) else (out,)))


def save_pb(array, name, path):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def source_hash(extra=()):
    h = hashlib.sha256()
    for path in (__file__, os.path.join(HERE, "train_example.py"), EXAMPLE, *extra):
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def up_to_date(out, digest):
    try:
        with open(os.path.join(out, "info.json")) as f:
            return json.load(f).get("source_sha256") == digest
    except (OSError, ValueError):
        return False


def export(name, out_root, force, table=None, extra_sources=()):
    """Exports table[name] (default: MODELS) unless up to date; extra_sources join the cache key."""
    out = os.path.join(out_root, name)
    digest = source_hash(extra_sources)
    with open(os.path.join(out_root, f".{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not force and up_to_date(out, digest):
            print(f"{name}: up to date")
            return
        export_locked(name, (table or MODELS)[name], out, digest)


def export_locked(name, build, out, digest):
    t0 = time.time()
    # One seed per model, so each export is reproducible on its own and in any order.
    seed = sum(map(ord, name))
    torch.manual_seed(seed)
    np.random.seed(seed)
    model, x, in_names, out_names = build()
    n_bn = calibrate_batchnorm(model, x)
    model.eval()
    with torch.no_grad():
        ys = as_tuple(model(x))
        y64s = as_tuple(model.double()(x.double()))
        model.float()
    for y in ys:
        if not np.all(np.isfinite(y)):
            raise SystemExit(f"{name}: PyTorch's output is not finite")
        # Outputs this flat would pass the tests' absolute tolerance whatever flowc computes.
        if np.std(y) < 1e-2:
            raise SystemExit(f"{name}: PyTorch's output is degenerate (std {np.std(y):.3g}); the test would prove "
                             "nothing")
    y = ys[0]

    # Written beside the old export and swapped in at the end, so no reader ever sees half a case.
    final, out = out, out + ".tmp"
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "test_data_set_0"))
    path = os.path.join(out, "model.onnx")
    opset = OPSETS.get(name, OPSET)
    direct = min(opset, torch.onnx._constants.ONNX_MAX_OPSET)
    torch.onnx.export(model, x, path, opset_version=direct, input_names=in_names, output_names=out_names,
                      do_constant_folding=True)
    if direct < opset:
        onnx.save(upgrade_to_18(onnx.load(path)), path)
    if opset <= onnx.defs.onnx_opset_version():
        onnx.checker.check_model(onnx.load(path))
    save_pb(x.numpy(), in_names[0], os.path.join(out, "test_data_set_0", "input_0.pb"))
    for i, (yi, name_i) in enumerate(zip(ys, out_names)):
        save_pb(yi, name_i, os.path.join(out, "test_data_set_0", f"output_{i}.pb"))

    err64 = np.concatenate([np.abs(a.astype(np.float64) - b).ravel() for a, b in zip(ys, y64s)])
    y64 = np.concatenate([b.ravel() for b in y64s])
    info = {
        "model": name,
        "input": {"name": in_names[0], "shape": list(x.shape)},
        "output": {"name": out_names[0], "shape": list(y.shape),
                   "mean_abs": float(np.mean(np.abs(y))), "std": float(np.std(y)),
                   "max_abs": float(np.max(np.abs(y)))},
        "batchnorm_layers_calibrated": n_bn,
        "torch_f32_vs_f64_max_abs_err": float(err64.max()),
        "torch_f32_vs_f64_max_err_over_tol": float((err64 / (1e-5 + 1e-4 * np.abs(y64))).max()),
        "torch": torch.__version__,
        "opset": opset,
        "source_sha256": digest,
    }
    with open(os.path.join(out, "info.json"), "w") as f:
        json.dump(info, f, indent=2)
        f.write("\n")
    shutil.rmtree(final + ".old", ignore_errors=True)
    if os.path.exists(final):
        os.rename(final, final + ".old")
    os.rename(out, final)
    shutil.rmtree(final + ".old", ignore_errors=True)
    print(f"{name}: output {list(y.shape)} mean |y| {info['output']['mean_abs']:.3g}, "
          f"PyTorch f32 vs f64 max error {info['torch_f32_vs_f64_max_abs_err']:.2e} ({time.time() - t0:.1f} s)")


def main_for(table, extra_sources=(), keep_going=False):
    """The command line for a table of models (name -> builder): this file's, or bench/zoo_models.py's.
    With keep_going, a model that cannot be exported is reported ("NAME: export failed: why") and the
    others are still exported; the exit status is then 1."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--models", default=",".join(table), help="comma-separated subset of: " + ", ".join(table))
    ap.add_argument("--force", action="store_true", help="re-export models that are already there")
    args = ap.parse_args()
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in table]
    if unknown:
        ap.error(f"unknown model(s): {', '.join(unknown)}")
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    os.makedirs(args.outdir, exist_ok=True)
    failed = 0
    for name in names:
        try:
            export(name, args.outdir, args.force, table, extra_sources)
        except (SystemExit, Exception) as e:  # noqa: BLE001  (any failure of one model's export)
            if not keep_going:
                raise
            print(f"{name}: export failed: {str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__}",
                  flush=True)
            failed += 1
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main_for(MODELS)
