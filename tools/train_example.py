#!/usr/bin/python3
"""Train the seed CNN on Fashion-MNIST and export it to ONNX (examples/fashion_cnn.onnx).

The network is the one from flowc's seed description:
  Conv2d(1,32,3,1,1)-ReLU-MaxPool2-Conv2d(32,64,3,1,1)-ReLU-MaxPool2-Flatten-Linear(3136,128)-ReLU-Linear(128,10)
Data: Debian's dataset-fashion-mnist (IDX files, gzip). Uses Debian's python3-torch; CPU only.
Also writes examples/fashion_cnn.json with PyTorch's accuracy on the 10,000 test images, which the
flowc-built program must reproduce exactly on the same weights.

Run: /usr/bin/python3 tools/train_example.py [--epochs 3]
"""
import argparse
import gzip
import json
import os
import struct
import time

import numpy as np
import torch
import torch.nn as nn

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(name):
    for cand in (name, name + ".gz"):
        p = os.path.join(DATA, cand)
        if os.path.exists(p):
            return p
    raise SystemExit(f"missing {name} in {DATA} (apt-get install dataset-fashion-mnist)")


class SeedCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def to_input(images):
    # uint8 [N,28,28] -> float32 [N,1,28,28] in [0,1]; the flowc demo applies the same scaling.
    return torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "examples"))
    args = ap.parse_args()
    torch.manual_seed(0)
    np.random.seed(0)
    torch.set_num_threads(os.cpu_count() or 1)

    xtr = to_input(read_idx(find("train-images-idx3-ubyte")))
    ytr = torch.from_numpy(read_idx(find("train-labels-idx1-ubyte")).astype(np.int64))
    xte = to_input(read_idx(find("t10k-images-idx3-ubyte")))
    yte = torch.from_numpy(read_idx(find("t10k-labels-idx1-ubyte")).astype(np.int64))

    model = SeedCNN()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        t0 = time.time()
        model.train()
        perm = torch.randperm(len(xtr))
        for i in range(0, len(xtr), 128):
            idx = perm[i:i + 128]
            opt.zero_grad()
            loss = loss_fn(model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            pred = torch.cat([model(xte[i:i + 1000]).argmax(1) for i in range(0, len(xte), 1000)])
        acc = (pred == yte).float().mean().item()
        print(f"epoch {epoch + 1}: loss {loss.item():.4f} test accuracy {acc:.4f} ({time.time() - t0:.0f} s)")

    os.makedirs(args.out, exist_ok=True)
    onnx_path = os.path.join(args.out, "fashion_cnn.onnx")
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), onnx_path, opset_version=13,
                      input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    correct = int((pred == yte).sum().item())
    with open(os.path.join(args.out, "fashion_cnn.json"), "w") as f:
        json.dump({"test_images": len(yte), "correct": correct, "accuracy": correct / len(yte),
                   "epochs": args.epochs, "torch": torch.__version__}, f, indent=2)
        f.write("\n")
    print(f"wrote {onnx_path}: {correct}/{len(yte)} correct")


if __name__ == "__main__":
    main()
