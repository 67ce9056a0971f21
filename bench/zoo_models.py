#!/usr/bin/python3
"""bench/zoo_models.py — the model zoo of issue 13: architectures beyond the seven benchmark models.

    /usr/bin/python3 bench/zoo_models.py OUTDIR [--models a,b] [--force]

Each entry builds a PyTorch module with random, seeded weights (nothing is downloaded: torchvision
builders get weights=None and weights_backbone=None) and one float32 input, and is exported by
tools/export_e2e_models.py's machinery (same seeding, BatchNorm calibration, test-case layout and cache),
so bench/zoo.py reads each as an ONNX backend test case. The set covers what a user brings that the seven do
not: grouped convolutions (RegNet, ResNeXt), depthwise and squeeze-and-excitation blocks (MobileNetV3,
EfficientNet), channel shuffles, concatenating blocks (GoogLeNet, DenseNet), large fully connected layers
(AlexNet, VGG-11), a vision transformer, dilated convolutions (DeepLabV3's ASPP), a detection backbone
(ResNet-18 + feature pyramid), a 1-D audio network (M5 over one second at 16 kHz), transposed convolutions
(a small UNet, DCGAN's generator), recurrent networks
(bidirectional GRU, LSTM), and transformer encoders and GPT-style causal decoders of two sizes.

Every model has one input and one output (the feature pyramid's levels are flattened and concatenated),
because the benchmark's runners feed one float tensor and compare one output. Sizes are chosen so one
inference takes well under a second on one core. RNN_STEPS are the sequence lengths of the recurrent
build-time scaling (bench/zoo.py builds those without timing their runs).
"""
import math
import os
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools"))
import export_e2e_models as exporter  # noqa: E402  (seeding, calibration, test-case layout, cache)


def image(size=224):
    return torch.randn(1, 3, size, size)


def he_linear(model):
    """He initialisation of the fully connected layers, as tools/export_e2e_models.py's MLP: torchvision
    initialises classifiers with a small normal or uniform spread (MobileNetV3: std 0.01), which makes
    random-weight logits so flat (std below 0.01) that any tolerance would pass."""
    for m in model.modules():
        if isinstance(m, nn.Linear):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
    return model


def torchvision_model(name, size=224, **kw):
    def build():
        import torchvision
        return he_linear(getattr(torchvision.models, name)(weights=None, **kw)), image(size), ["input"], ["output"]
    return build


def deeplab():
    from torchvision.models import segmentation
    model = segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, aux_loss=False)
    return OutKey(model, "out"), image(256), ["input"], ["output"]


class OutKey(nn.Module):
    """Returns one entry of a model's dict output (torchvision's segmentation models return {"out": ...})."""

    def __init__(self, model, key):
        super().__init__()
        self.model, self.key = model, key

    def forward(self, x):
        return self.model(x)[self.key]


class FlatFeatures(nn.Module):
    """A backbone whose levels (a dict of NCHW maps) are flattened and concatenated into one output."""

    def __init__(self, backbone):
        super().__init__()
        self.backbone = backbone

    def forward(self, x):
        return torch.cat([f.flatten(1) for f in self.backbone(x).values()], dim=1)


def resnet18_fpn():
    from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
    # BatchNorm (calibrated like the other models) instead of the frozen identity BatchNorm of a random
    # detection backbone, whose activations would grow layer by layer.
    backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None, norm_layer=nn.BatchNorm2d,
                                   trainable_layers=5)
    return FlatFeatures(backbone), image(256), ["input"], ["output"]


class M5(nn.Module):
    """M5 (Dai et al. 2017), the raw-waveform classifier of torchaudio's speech-command tutorial."""

    def __init__(self, n_output=35, stride=16, channels=32):
        super().__init__()
        c = channels
        layers = [nn.Conv1d(1, c, 80, stride=stride), nn.BatchNorm1d(c), nn.ReLU(), nn.MaxPool1d(4)]
        for cin, cout in ((c, c), (c, 2 * c), (2 * c, 2 * c)):
            layers += [nn.Conv1d(cin, cout, 3), nn.BatchNorm1d(cout), nn.ReLU(), nn.MaxPool1d(4)]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(2 * c, n_output)

    def forward(self, x):
        x = self.features(x)
        return self.fc(x.mean(dim=-1))


def m5():
    return M5(), torch.randn(1, 1, 16000), ["input"], ["output"]


class Recurrent(nn.Module):
    """An RNN layer stack whose sequence output (not the final state) is the model's output."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        return self.rnn(x)[0]


def gru(steps=64):
    def build():
        rnn = nn.GRU(64, 128, num_layers=2, bidirectional=True, batch_first=True)
        return Recurrent(rnn), torch.randn(1, steps, 64), ["input"], ["output"]
    return build


def lstm(steps=64):
    def build():
        rnn = nn.LSTM(64, 256, num_layers=2, batch_first=True)
        return Recurrent(rnn), torch.randn(1, steps, 64), ["input"], ["output"]
    return build


def encoder(d, layers, seq):
    def build():
        layer = nn.TransformerEncoderLayer(d_model=d, nhead=max(2, d // 64), dim_feedforward=4 * d,
                                           batch_first=True)
        # Without nested tensors eval() never takes PyTorch's fused fast path, which ONNX export cannot trace.
        model = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
        return model, torch.randn(1, seq, d), ["input"], ["output"]
    return build


class CausalBlock(nn.Module):
    """A GPT-2 block: pre-LayerNorm causal self-attention and a GELU MLP, each with a residual."""

    def __init__(self, d, heads, seq):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        # Added to the scores: 0 on and below the diagonal, a large negative number above (a finite one,
        # so no runtime has to handle inf - inf).
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), -1e4), diagonal=1))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads) + self.mask
        y = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class Gpt(nn.Module):
    """A GPT-style decoder over token embeddings (the input: the lookup itself needs integer input):
    learned positions, causal blocks, a final LayerNorm and the vocabulary projection."""

    def __init__(self, d, layers, seq, vocab=1024):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.02)
        self.blocks = nn.Sequential(*[CausalBlock(d, max(2, d // 64), seq) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, x):
        return self.head(self.ln(self.blocks(x + self.pos)))


def gpt(d, layers, seq):
    def build():
        return Gpt(d, layers, seq), torch.randn(1, seq, d), ["input"], ["output"]
    return build


def vit_tiny():
    from torchvision.models.vision_transformer import VisionTransformer
    model = VisionTransformer(image_size=224, patch_size=16, num_layers=4, num_heads=3, hidden_dim=192,
                              mlp_dim=768)
    return he_linear(model), image(224), ["input"], ["output"]  # its head starts at zero: all-zero logits


class UNet(nn.Module):
    """A small UNet (Ronneberger et al. 2015): three levels of conv-BN-ReLU pairs, 2x2 stride-2 transposed
    convs up, skip concatenations, a 1x1 head of 5 classes."""

    def __init__(self, c=32, classes=5):
        super().__init__()

        def pair(i, o, s=1):
            return nn.Sequential(nn.Conv2d(i, o, 3, s, 1), nn.BatchNorm2d(o), nn.ReLU(),
                                 nn.Conv2d(o, o, 3, 1, 1), nn.BatchNorm2d(o), nn.ReLU())
        self.e1, self.e2, self.e3 = pair(3, c), pair(c, 2 * c, 2), pair(2 * c, 4 * c, 2)
        self.u2, self.d2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, 2), pair(4 * c, 2 * c)
        self.u1, self.d1 = nn.ConvTranspose2d(2 * c, c, 2, 2), pair(2 * c, c)
        self.head = nn.Conv2d(c, classes, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(a)
        d = self.d2(torch.cat([self.u2(self.e3(b)), b], 1))
        return self.head(self.d1(torch.cat([self.u1(d), a], 1)))


def unet():
    return UNet(), image(128), ["input"], ["output"]


def dcgan():
    """DCGAN's generator (Radford et al. 2016): a 100-d code through 4x4 stride-2 pad-1 transposed convs with
    batch norm and ReLU to a 64x64 RGB image (tanh)."""
    def up(i, o):
        return [nn.ConvTranspose2d(i, o, 4, 2, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]
    model = nn.Sequential(nn.ConvTranspose2d(100, 512, 4, 1, 0, bias=False), nn.BatchNorm2d(512), nn.ReLU(),
                          *up(512, 256), *up(256, 128), *up(128, 64), nn.ConvTranspose2d(64, 3, 4, 2, 1, bias=False),
                          nn.Tanh())
    return model, torch.randn(1, 100, 1, 1), ["input"], ["output"]


# name -> (builder, what it stands for in the issue)
ZOO = {
    "regnet_x_400mf": (torchvision_model("regnet_x_400mf"), "grouped conv (group width 16)"),
    "regnet_y_400mf": (torchvision_model("regnet_y_400mf"), "grouped conv + squeeze-excitation"),
    "resnext50_32x4d": (torchvision_model("resnext50_32x4d"), "grouped conv (32 groups)"),
    "mobilenet_v3_small": (torchvision_model("mobilenet_v3_small"), "depthwise, SE, hardswish"),
    "efficientnet_b0": (torchvision_model("efficientnet_b0"), "5x5 depthwise, SE, SiLU"),
    "shufflenet_v2_x1_0": (torchvision_model("shufflenet_v2_x1_0"), "channel shuffle, split, concat"),
    "googlenet": (torchvision_model("googlenet", aux_logits=False, init_weights=True), "concat (inception) blocks"),
    "densenet121": (torchvision_model("densenet121"), "dense concat blocks"),
    "alexnet": (torchvision_model("alexnet"), "large FC layers (9216x4096)"),
    "vgg11": (torchvision_model("vgg11"), "large FC layers (25088x4096)"),
    "vit_tiny": (vit_tiny, "vision transformer, 4 layers, d 192, 197 tokens"),
    "deeplabv3_mbv3": (deeplab, "segmentation, dilated ASPP, 256x256"),
    "resnet18_fpn": (resnet18_fpn, "detection backbone + feature pyramid, 256x256"),
    "m5_audio": (m5, "Conv1d stack over 16000 samples"),
    "unet_small": (unet, "segmentation, 2x2 stride-2 transposed convs + skip concats, 128x128"),
    "dcgan_g": (dcgan, "GAN generator, 4x4 stride-2 transposed convs to 64x64"),
    "gru_bi2": (gru(64), "2-layer bidirectional GRU, 64 steps"),
    "lstm2": (lstm(64), "2-layer LSTM, 64 steps"),
    "encoder_s": (encoder(128, 2, 64), "TransformerEncoder d 128, 2 layers, seq 64"),
    "encoder_l": (encoder(512, 6, 128), "TransformerEncoder d 512, 6 layers, seq 128"),
    "gpt_s": (gpt(128, 2, 64), "causal decoder d 128, 2 layers, seq 64"),
    "gpt_l": (gpt(512, 6, 128), "causal decoder d 512, 6 layers, seq 128"),
}

# Build-time scaling of the recurrent models with the sequence length: name -> builder.
RNN_STEPS = [100, 250, 1000]
SCALING = {f"{kind}_{n}": (make(n), f"{kind} at {n} steps") for kind, make in (("gru", gru), ("lstm", lstm))
           for n in RNN_STEPS}

TABLE = {name: build for name, (build, _) in {**ZOO, **SCALING}.items()}


def main():
    exporter.main_for(TABLE, [os.path.abspath(__file__)], keep_going=True)


if __name__ == "__main__":
    main()
