#!/bin/sh
# python_example.sh FLOWC WORK — examples/python_ctypes.py as its docstring says to run it: the shipped
# Fashion-MNIST model built with `--emit so` for batches of 100, then all 10,000 test images classified from
# Python (ctypes + numpy) on two threads, which must get exactly as many right as PyTorch does on the same
# weights (examples/fashion_cnn.json).
set -eu
flowc=$1 work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work"
mkdir -p "$work"
"$flowc" build "$root/examples/fashion_cnn.onnx" --shape image=100x1x28x28 --emit so -o "$work/libfashion_cnn.so"
expected=$(sed -n 's/.*"correct": *\([0-9][0-9]*\).*/\1/p' "$root/examples/fashion_cnn.json")
/usr/bin/python3 "$root/examples/python_ctypes.py" "$work/libfashion_cnn.so" --threads 2 --expect "$expected"
