#!/usr/bin/python3
"""gpt2_info.py — `flowc info --ranks 4 --mesh 2x2 --sbp auto` on a small GPT-2-style decoder exported by
tools/export_gpt2.py (2 layers, d 64, 4 heads, seq 16, vocab 100): the predictions of data, tensor, the per-axis
data,tensor and auto, per rank memory, and auto never predicted slower than any of them (issue 15). Exits 77 without PyTorch."""
import re
import subprocess
import sys

flowc, export, work = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    import torch  # noqa: F401
except ImportError:
    print("PyTorch is missing: skipped")
    sys.exit(77)
subprocess.run(["mkdir", "-p", work], check=True)
model = f"{work}/gpt2_small.onnx"
subprocess.run([sys.executable, export, model, "--layers", "2", "--d", "64", "--heads", "4", "--seq", "16",
                "--vocab", "100"], check=True)
out = subprocess.run([flowc, "info", model, "--ranks", "4", "--mesh", "2x2", "--sbp", "auto"], capture_output=True,
                     text=True, check=True).stdout
ms = {}
for name in ("data", "tensor", "data,tensor", "auto"):
    m = re.search(rf"^  {name} +([0-9.]+) ms \(compute [0-9.]+, communication [0-9.]+\); .* memory .* weights \+ .* "
                  r"activations", out, re.M)
    if not m:
        sys.exit(f"FAIL: no prediction row for {name} in:\n{out}")
    ms[name] = float(m.group(1))
if ms["auto"] > min(ms["data"], ms["tensor"], ms["data,tensor"]) * (1 + 1e-9):
    sys.exit(f"FAIL: auto predicted slower than data, tensor or the per-axis data,tensor: {ms}")
for row in ("sbp auto plan", "sbp  ", "workspace"):
    if row.strip() not in out:
        sys.exit(f"FAIL: no '{row.strip()}' row in:\n{out}")
print(f"predicted ms per run: {ms}")
