#!/usr/bin/python3
"""bench/qdq_models.py — the quantised models of issue 14: QDQ ONNX files written by PyTorch itself.

    /usr/bin/python3 bench/qdq_models.py OUTDIR [--models a,b] [--force]

The models (MODELS): qdq_resnet18 and qdq_mobilenet_v2, torchvision's "quantizable" ResNet-18 and
MobileNetV2 (torchvision.models.quantization: QuantStub/DeQuantStub, FloatFunctional adds, MobileNetV2
with ReLU for ReLU6) with random seeded weights and He-initialised classifiers, on 1x3x224x224 images;
qdq_cnn_b64, the trained seed CNN (examples/fashion_cnn.onnx) on the first 64 Fashion-MNIST test images,
calibrated on 256 training images; qdq_small, every layer kind of those at awkward sizes in a shallow
network (SmallQNet); and, beyond issue 14's targets, qdq_resnet50, qdq_googlenet, qdq_inception_v3 (299x299)
and qdq_mobilenet_v3 (Large), torchvision's other quantizable models, built like the first two. Each is
quantised the way PyTorch's eager-mode post-training quantisation documents:
BatchNorm statistics calibrated as tools/export_e2e_models.py does, eval(), fuse_model() (conv+BN+ReLU),
qconfig get_default_qconfig("x86") (fbgemm's: HistogramObserver activations with reduce_range, so u8
activations use 0..127 of their scale, and per-channel symmetric int8 weights), prepare, calibration
batches through the observers, convert. Debian's torch 1.13 has neither the fbgemm nor the x86 quantised
engine (torch.backends.quantized.supported_engines: qnnpack, onednn), so the converted module runs on
ENGINE = onednn; with 7-bit activations no AVX2 u8 x s8 pair sum can saturate, so its integers are exact
on every x86 CPU. torch.onnx.export (opset 13) of the converted module writes what a PyTorch user gets:
QuantizeLinear/DequantizeLinear around float Conv/Gemm/Add/Relu/MaxPool/GlobalAveragePool/Flatten/Concat,
weights as int8 constants with per-channel DequantizeLinear (axis 0, also for the Gemm's [N, K] weight
with transB), each bias as an int32 constant with a DequantizeLinear of its own (per-channel scale
sx*sw[c], zero point from ConstantOfShape + Cast), and a Cast to uint8 after every QuantizeLinear.

One change to PyTorch's module before the reference output is taken (snap_biases): its onednn kernels
take the float bias b[c] (rounded to int32 units of sx*sw[c]), while torch.onnx.export writes the int32
bias as Cast(Div(b, sx*sw[c])) in float32 — truncation, not rounding. On random weights the unit the two
disagree by in some channels (a few thousandths of an output step) flips the rounding of a few outputs in
the first layers, and the network amplifies the flips layer by layer: MobileNetV2's output moved 11 to 24
steps away from PyTorch's, ResNet-18's by 5, for onnxruntime and flowc alike (which run the file). So each
bias is set to the float next to b_int·sx·sw[c] that the export truncates to b_int, and PyTorch then
computes what the exported file says (its convolutions equal the exact integer arithmetic of qspec §2 on
every element checked).

Every entry NAME is written as two ONNX backend test cases (the layout of tools/export_e2e_models.py, so
bench/run.py, bench/int8.py and tests/e2e/e2e.py read them as they read the other models):

    OUTDIR/NAME/model.onnx                   the QDQ model
    OUTDIR/NAME/test_data_set_0/input_0.pb   the benchmark and test input
    OUTDIR/NAME/test_data_set_0/output_0.pb  PyTorch's int8 output on it (dequantised, float32)
    OUTDIR/NAME/reference_int8.npy           the same output as .npy (and input.npy, the same input)
    OUTDIR/NAME/info.json                    the output's quantisation (scale = the "step" of issue 14's
                                             accuracy target, zero point), its spread in steps, how far
                                             PyTorch's float model is from its int8 model in steps, op counts
    OUTDIR/NAME_f32/...                      the float module the int8 one was made from (unfused; fused
                                             computes the same), with PyTorch's float32 output

An int8 output whose standard deviation covers fewer than MIN_SPREAD_STEPS steps stops the export: a
test in steps would prove little. How far apart two correct runtimes end up on a deep random network:
given the same input, PyTorch's quantised convs equal the file's integer arithmetic except at near-ties of
its f32 requantisation (3 of MobileNetV2's 6.7 million conv outputs), and the next layers spread each
flipped tie; at 224x224 ResNet-18 ends 2 steps from PyTorch and MobileNetV2 2 (6 when built on two threads:
another draw of near-ties), with flowc bit-identical to onnxruntime on both. So the e2e test uses the 224
ResNet-18, the trained CNN and the shallow network, and also compares with onnxruntime.

Cached like bench/zoo_models.py: a case is skipped when its info.json names the same source hash (this
file, tools/export_e2e_models.py, the example), unless --force; concurrent exports take turns on a lock.
bench/torch_bench.py re-creates the int8 module with quantized_model() to time PyTorch's own int8.
"""
import argparse
import contextlib
import copy
import fcntl
import json
import os
import shutil
import sys
import time
import warnings
from collections import Counter

import numpy as np
import onnx
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools"))
import export_e2e_models as exporter  # noqa: E402  (BatchNorm calibration, .pb writing, source hash)

OPSET = 13
ENGINE = "onednn"      # the quantised engine that runs the converted model (see above)
QCONFIG = "x86"        # the observers: fbgemm's / x86's (7-bit activations, per-channel int8 weights)
CAL_BATCHES, CAL_BATCH = 4, 8
MIN_SPREAD_STEPS = 8   # the output's standard deviation, in steps, below which a test proves little
                       # (7-bit activations: a bell-shaped output over 128 steps has a spread near 16)


class SmallQNet(nn.Module):
    """Every quantised layer kind of the two networks, at awkward sizes, in a network too shallow for
    rounding differences to grow (the e2e test's exactness check): a strided conv with 15 output channels,
    a depthwise conv, a grouped conv (3 groups of 5 -> 7), a 1x1 conv, a residual add+ReLU, a 3x3 stride-2
    max pool with padding, a 5x5 conv (K = 375, not a multiple of 4), global average pool, a Linear
    17 -> 11, and a concat of the 5x5 conv's map (flattened) with the Linear's output, so every pixel of the
    last map is an output element and no average hides a difference. Input 1x3x33x35."""

    def __init__(self):
        super().__init__()
        tq = torch.ao.quantization
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.conv1, self.bn1, self.relu1 = nn.Conv2d(3, 15, 3, stride=2, padding=1), nn.BatchNorm2d(15), nn.ReLU()
        self.dw, self.bn2, self.relu2 = nn.Conv2d(15, 15, 3, padding=1, groups=15), nn.BatchNorm2d(15), nn.ReLU()
        self.grouped, self.bn3, self.relu3 = nn.Conv2d(15, 21, 3, padding=1, groups=3), nn.BatchNorm2d(21), nn.ReLU()
        self.project, self.bn4 = nn.Conv2d(21, 15, 1), nn.BatchNorm2d(15)
        self.add = nn.quantized.FloatFunctional()
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.conv5, self.relu5 = nn.Conv2d(15, 17, 5, padding=2), nn.ReLU()
        self.fc = nn.Linear(17, 11)
        self.cat = nn.quantized.FloatFunctional()

    def forward(self, x):
        x = self.relu1(self.bn1(self.conv1(self.quant(x))))
        y = self.relu2(self.bn2(self.dw(x)))
        y = self.bn4(self.project(self.relu3(self.bn3(self.grouped(y)))))
        x = self.pool(self.add.add_relu(x, y))
        x = self.relu5(self.conv5(x))
        y = self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))
        return self.dequant(self.cat.cat([torch.flatten(x, 1), y], dim=1))

    def fuse_model(self):
        torch.ao.quantization.fuse_modules(self, [["conv1", "bn1", "relu1"], ["dw", "bn2", "relu2"],
                                                  ["grouped", "bn3", "relu3"], ["project", "bn4"],
                                                  ["conv5", "relu5"]], inplace=True)


def he_linear(model):
    """He initialisation of the classifier (as bench/zoo_models.py): MobileNetV2's std-0.01 init gives logits
    so flat that a few quantisation steps cover their whole range."""
    for m in model.modules():
        if isinstance(m, nn.Linear):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
    return model


class QuantSeedCNN(nn.Module):
    """The trained seed CNN (examples/fashion_cnn.onnx, tools/train_example.py's SeedCNN) between a QuantStub
    and a DeQuantStub, with the ReLUs after its convs fused into them (torch 1.13 cannot export a fused
    quantised Linear+ReLU: the classifier's ReLU stays a quantised ReLU of its own)."""

    def __init__(self):
        super().__init__()
        tq = torch.ao.quantization
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.net = exporter.seed_cnn(1)()[0]  # the trained weights, read from the example's initializers

    def forward(self, x):
        return self.dequant(self.net(self.quant(x)))

    def fuse_model(self):
        torch.ao.quantization.fuse_modules(self.net.features, [["0", "1"], ["3", "4"]], inplace=True)


def torchvision_quantizable(arch):
    def build():
        import torchvision.models.quantization as tvq
        return he_linear(getattr(tvq, arch)(weights=None, quantize=False))
    return build


def random_images(shape):
    """The input (a seeded random image) and calibration batches drawn like it."""
    def make():
        x = torch.randn(*shape)
        return x, [torch.randn(CAL_BATCH, *shape[1:]) for _ in range(CAL_BATCHES)]
    return make


def fashion_images(batch, calibration=256):
    """The first `batch` Fashion-MNIST test images (cnn_b64's input) and `calibration` training images in
    batches of 64, scaled as tools/train_example.py does."""
    def make():
        from train_example import find, read_idx
        test = read_idx(find("t10k-images-idx3-ubyte"))[:batch]
        train = read_idx(find("train-images-idx3-ubyte"))[:calibration]
        scale = lambda a: torch.from_numpy(a.astype(np.float32) / 255.0).unsqueeze(1)  # noqa: E731
        return scale(test), list(scale(train).split(64))
    return make


# name -> (builder of the float module, maker of (input, calibration batches))
MODELS = {
    "qdq_resnet18": (torchvision_quantizable("resnet18"), random_images((1, 3, 224, 224))),
    "qdq_mobilenet_v2": (torchvision_quantizable("mobilenet_v2"), random_images((1, 3, 224, 224))),
    "qdq_cnn_b64": (QuantSeedCNN, fashion_images(64)),
    "qdq_small": (SmallQNet, random_images((1, 3, 33, 35))),
    # beyond issue 14's targets: the rest of torchvision's quantizable models that torch.onnx.export writes
    # (ShuffleNetV2's channel split is a quantised Slice it cannot export), to see flowc on models it was not
    # tuned on: bottlenecks, Inception concats and pools, squeeze-and-excitation with hardswish/hardsigmoid
    "qdq_resnet50": (torchvision_quantizable("resnet50"), random_images((1, 3, 224, 224))),
    "qdq_googlenet": (torchvision_quantizable("googlenet"), random_images((1, 3, 224, 224))),
    "qdq_inception_v3": (torchvision_quantizable("inception_v3"), random_images((1, 3, 299, 299))),
    "qdq_mobilenet_v3": (torchvision_quantizable("mobilenet_v3_large"), random_images((1, 3, 224, 224))),
}


def seed(name):
    s = sum(map(ord, name))
    torch.manual_seed(s)
    np.random.seed(s)


@contextlib.contextmanager
def one_thread():
    """PyTorch's float reductions (BatchNorm calibration, the observers' histograms) depend on its thread
    count: built on 1 and on 2 threads, MobileNetV2's activation scales differed by 0.4% and its int8 output
    by 20 steps. Built on one thread, a model is the same on every machine, and bench/torch_bench.py
    re-creates exactly the module that was exported."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def float_model(name):
    """The float module (eval, BatchNorm calibrated), the case's input and the calibration batches, from the
    name's seed."""
    build, inputs = MODELS[name]
    seed(name)
    model = build()
    x, calibration = inputs()
    exporter.calibrate_batchnorm(model, x)
    model.eval()
    return model, x, calibration


def quantize(model, x, calibration):
    """Eager-mode post-training quantisation of a copy of `model` (fuse, observe the calibration batches,
    convert, snap the biases)."""
    torch.backends.quantized.engine = ENGINE
    q = copy.deepcopy(model)
    q.fuse_model()
    q.qconfig = torch.ao.quantization.get_default_qconfig(QCONFIG)
    with warnings.catch_warnings():  # reduce_range's deprecation; observers of adds that never run
        warnings.simplefilter("ignore")
        torch.ao.quantization.prepare(q, inplace=True)
        with torch.no_grad():
            for batch in calibration:
                q(batch)
        torch.ao.quantization.convert(q, inplace=True)
    snap_biases(q, x)
    return q


def snap_biases(q, x):
    """Puts every quantised conv's and linear's bias on the int32 grid, as the float the ONNX export writes
    back exactly.

    PyTorch's onednn kernels round b / (sx * sw[c]) to int32; torch.onnx.export writes int32(b / (sx *
    sw[c])) computed in float32, which truncates (torch/onnx/symbolic_helper.py, requantize_bias_helper).
    b_int = round(b / unit) in double; the float nearest b_int * unit, moved away from zero ulp by ulp until
    the export's float32 quotient no longer truncates below |b_int|, makes both of them b_int."""
    scales = {}

    def record(m, inputs, _):  # returns None: a forward hook's result would replace the output
        scales[m] = inputs[0].q_scale()

    hooks = [m.register_forward_hook(record) for m in q.modules() if isinstance(m, QUANTISED_LINEAR_OPS)]
    with torch.no_grad():
        q(x)
    for h in hooks:
        h.remove()
    for m, sx in scales.items():
        w, b = m.weight(), m.bias()
        if b is None:
            continue
        sw = (w.q_per_channel_scales().double() if w.qscheme() in (torch.per_channel_affine,
                                                                  torch.per_channel_symmetric)
              else torch.tensor([w.q_scale()], dtype=torch.float64))
        unit = (sx * sw).numpy()
        unit32 = (sw.float() * torch.tensor(sx, dtype=torch.float64).float()).numpy()  # the export's Mul
        b_int = np.round(b.detach().double().numpy() / unit)
        snapped = (b_int * unit).astype(np.float32)
        away = np.where(b_int < 0, np.float32(-np.inf), np.float32(np.inf)).astype(np.float32)
        for _ in range(64):
            q_export = np.trunc(snapped / unit32).astype(np.float64)  # float32 division, as the export
            short = q_export != b_int
            if not short.any():
                break
            snapped = np.where(short, np.nextafter(snapped, away), snapped).astype(np.float32)
        else:
            raise SystemExit(f"{type(m).__name__}: no float32 bias truncates to its int32 grid value")
        m.set_weight_bias(w, torch.from_numpy(snapped))


QUANTISED_LINEAR_OPS = (torch.ao.nn.quantized.Conv2d, torch.ao.nn.quantized.Linear)


def quantized_model(name):
    """(float module, int8 module, input) exactly as the export makes them (bench/torch_bench.py)."""
    with one_thread():
        model, x, calibration = float_model(name)
        return model, quantize(model, x, calibration), x


def output_quant(path):
    """Scale and zero point of the QDQ model's last DequantizeLinear (the one producing the graph output)."""
    m = onnx.load(path)
    out = m.graph.output[0].name
    consts = {n.output[0]: onnx.numpy_helper.to_array(n.attribute[0].t) for n in m.graph.node
              if n.op_type == "Constant"}
    consts.update({t.name: onnx.numpy_helper.to_array(t) for t in m.graph.initializer})
    node = next(n for n in m.graph.node if out in n.output)
    if node.op_type != "DequantizeLinear":
        raise SystemExit(f"{path}: the output comes from {node.op_type}, not DequantizeLinear")
    return float(consts[node.input[1]]), int(consts[node.input[2]]), Counter(n.op_type for n in m.graph.node)


def write_case(out, model, x, y, in_name, out_name, info, npys=()):
    """Writes one test case (and the .npy files `npys`, name -> array) into out + '.tmp' and swaps it in,
    info.json last (no reader sees half a case)."""
    final, tmp = out, out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "test_data_set_0"))
    path = os.path.join(tmp, "model.onnx")
    with warnings.catch_warnings():  # torch 1.13 warns about shape inference of its own quantised ops
        warnings.simplefilter("ignore")
        torch.onnx.export(model, x, path, opset_version=OPSET, input_names=[in_name], output_names=[out_name],
                          do_constant_folding=True)
    onnx.checker.check_model(onnx.load(path))
    exporter.save_pb(x.numpy(), in_name, os.path.join(tmp, "test_data_set_0", "input_0.pb"))
    exporter.save_pb(y, out_name, os.path.join(tmp, "test_data_set_0", "output_0.pb"))
    for npy_name, a in dict(npys).items():
        np.save(os.path.join(tmp, npy_name), a)
    info = info(path) if callable(info) else info
    with open(os.path.join(tmp, "info.json"), "w") as f:
        json.dump(info, f, indent=2)
        f.write("\n")
    shutil.rmtree(final + ".old", ignore_errors=True)
    if os.path.exists(final):
        os.rename(final, final + ".old")
    os.rename(tmp, final)
    shutil.rmtree(final + ".old", ignore_errors=True)
    return info


def export_locked(name, out_root, digest):
    # The export traces the int8 module, running it once more: on one thread too, as torch 1.13's onednn
    # fails some of MobileNetV2's 1x1 convs on 2 threads on AMD Zen 4 ("could not create a primitive
    # descriptor for a reorder primitive"; on 1 thread they run).
    with one_thread():
        export_one_thread(name, out_root, digest)


def export_one_thread(name, out_root, digest):
    t0 = time.time()
    model, x, calibration = float_model(name)
    qmodel = quantize(model, x, calibration)
    with torch.no_grad():
        y8 = qmodel(x).numpy()
        y32 = model(x).numpy()
    common = {"arch": type(model).__name__, "input": {"name": "input", "shape": list(x.shape)},
              "torch": torch.__version__, "opset": OPSET, "source_sha256": digest}

    # The float original first: the int8 case's info.json is written last, so the pair is complete when it is.
    write_case(os.path.join(out_root, name + "_f32"), model, x, y32, "input", "output",
               dict(common, model=name + "_f32", quantized=False, int8_case=name))

    def int8_info(path):
        scale, zp, ops = output_quant(path)
        steps_f32 = float(np.max(np.abs(y32.astype(np.float64) - y8)) / scale)
        spread = float(np.std(y8) / scale)
        if spread < MIN_SPREAD_STEPS:
            raise SystemExit(f"{name}: PyTorch's int8 output spreads over {spread:.1f} steps only; the test "
                             "would prove little")
        return dict(common, model=name, quantized=True, engine=ENGINE, qconfig=QCONFIG,
                    calibration_images=sum(len(b) for b in calibration),
                    output={"name": "output", "shape": list(y8.shape), "scale": scale, "zero_point": zp,
                            "std_steps": spread, "min": float(y8.min()), "max": float(y8.max())},
                    f32_vs_int8_max_steps=steps_f32, ops=dict(sorted(ops.items())))

    info = write_case(os.path.join(out_root, name), qmodel, x, y8, "input", "output", int8_info,
                      {"reference_int8.npy": y8, "input.npy": x.numpy()})
    o = info["output"]
    print(f"{name}: output {o['shape']} step {o['scale']:.4g} (zero point {o['zero_point']}), spread "
          f"{o['std_steps']:.0f} steps, f32 model {info['f32_vs_int8_max_steps']:.1f} steps from int8, "
          f"{info['ops'].get('QuantizeLinear', 0)} QuantizeLinear ({time.time() - t0:.1f} s)")


def export(name, out_root, force):
    digest = exporter.source_hash([os.path.abspath(__file__)])
    with open(os.path.join(out_root, f".{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not force and exporter.up_to_date(os.path.join(out_root, name), digest) and \
                exporter.up_to_date(os.path.join(out_root, name + "_f32"), digest):
            print(f"{name}: up to date")
            return
        export_locked(name, out_root, digest)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of: " + ", ".join(MODELS))
    ap.add_argument("--force", action="store_true", help="re-export models that are already there")
    args = ap.parse_args()
    # The e2e test names a case folder; NAME_f32 is written with NAME.
    names = [n[:-4] if n.endswith("_f32") else n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        ap.error(f"unknown model(s): {', '.join(unknown)}")
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    os.makedirs(args.outdir, exist_ok=True)
    for name in dict.fromkeys(names):
        export(name, args.outdir, args.force)


if __name__ == "__main__":
    main()
