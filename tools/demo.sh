#!/usr/bin/env bash
# demo.sh BUILD — the main job on the shipped example (examples/fashion_cnn.onnx, the seed CNN trained on
# Fashion-MNIST by tools/train_example.py): prints `flowc info`, writes the IR and DOT dumps to out/
# (and an SVG of the graph when Graphviz's dot is installed).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
flowc="$build/tools/flowc"
model=examples/fashion_cnn.onnx
shape=(--shape image=1x1x28x28)   # the export leaves the batch dimension symbolic
mkdir -p out
"$flowc" info "$model" "${shape[@]}"
"$flowc" build "$model" "${shape[@]}" --emit ir -o out/fashion_cnn.mlir
"$flowc" build "$model" "${shape[@]}" --emit dot -o out/fashion_cnn.dot
if command -v dot >/dev/null; then
  dot -Tsvg out/fashion_cnn.dot -o out/fashion_cnn.svg
fi
echo "wrote out/fashion_cnn.mlir, out/fashion_cnn.dot$(command -v dot >/dev/null && echo ', out/fashion_cnn.svg')"
