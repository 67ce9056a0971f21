#!/usr/bin/env bash
# demo.sh [BUILD] — the main job on the shipped example (examples/fashion_cnn.onnx, the seed CNN trained on
# Fashion-MNIST by tools/train_example.py):
#   1. prints `flowc info` and writes the IR and DOT dumps to OUT (and an SVG when Graphviz is installed);
#   2. compiles the model for batches of 100 images into a static library with a C header
#      (`flowc build --emit lib`), and links it into tools/fashion_classify.c, a small C program that reads
#      the IDX files of Debian's dataset-fashion-mnist through zlib;
#   3. classifies all 10,000 test images and prints the accuracy and images/s; it fails unless the number
#      classified correctly equals PyTorch's on the same weights (examples/fashion_cnn.json).
# No Python runs. Environment: OUT_DIR (default out), CC and CFLAGS for the C compiler, THREADS (default 0:
# one per online core).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${OUT_DIR:-out}
flowc="$build/tools/flowc"
model=examples/fashion_cnn.onnx
shape=(--shape image=100x1x28x28)   # the export leaves the batch dimension symbolic
mkdir -p "$out"

"$flowc" info "$model" "${shape[@]}"
"$flowc" build "$model" "${shape[@]}" --emit ir -o "$out/fashion_cnn.mlir"
"$flowc" build "$model" "${shape[@]}" --emit dot -o "$out/fashion_cnn.dot"
if command -v dot >/dev/null; then
  dot -Tsvg "$out/fashion_cnn.dot" -o "$out/fashion_cnn.svg"
fi
echo "wrote $out/fashion_cnn.mlir, $out/fashion_cnn.dot$(command -v dot >/dev/null && echo ", $out/fashion_cnn.svg")"
echo

# The library is named libfashion_cnn.a, so its symbols are fashion_cnn_model, fashion_cnn_run, ...
"$flowc" build "$model" "${shape[@]}" --emit lib -o "$out/libfashion_cnn.a"
# shellcheck disable=SC2086  # CC and CFLAGS may hold several words
${CC:-cc} -std=c11 -O2 ${CFLAGS:-} -Iruntime -Itools tools/fashion_classify.c tools/idx.c "$out/libfashion_cnn.a" \
  -lz -lm -lpthread -o "$out/fashion_classify"
echo "built $out/fashion_classify from $out/libfashion_cnn.a and $out/fashion_cnn.h"

expected=$(sed -n 's/.*"correct": *\([0-9][0-9]*\).*/\1/p' examples/fashion_cnn.json)
"$out/fashion_classify" --threads "${THREADS:-0}" --expect "$expected"
