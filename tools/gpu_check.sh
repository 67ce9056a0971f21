#!/usr/bin/env bash
# gpu_check.sh — the real-GPU checks of issue 16, as one prepared run for a machine with an NVIDIA GPU (the
# `device` machine a session may be lent). Elsewhere it exits 77 (skipped) at once.
#
#   tools/gpu_check.sh [BUILD_DIR]     (default: build; configured and built here when missing)
#
# 1. the e2e models (tools/export_e2e_models.py) built with --device cuda, each run on the GPU and on the CPU
#    code of the same executable: every output within rtol 1e-3, atol 1e-4 (fp32); and on the GPU again with
#    FLOWRT_CUDA_GRAPHS=0 (the launches one by one instead of one CUDA graph a run): the same check, and both
#    latencies;
# 2. --profile of ResNet-18 on the GPU (per-node device times);
# 3. a 4096^3 f32 matmul's GFLOP/s on the GPU (flowc's GEMM; tensor cores are not used yet).
# Prints what it measured; exit status 0 only when every comparison held.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
if ! { [ -e /dev/nvidia0 ] || [ -e /dev/nvidiactl ]; } || ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  echo "gpu_check: no NVIDIA GPU or driver here: skipped"
  exit 77
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader
if [ ! -x "$build/tools/flowc" ]; then
  [ -f "$build/build.ninja" ] || meson setup "$build" --buildtype=release >/dev/null || exit 1
  ninja -C "$build" >/dev/null || exit 1
fi
flowc=$build/tools/flowc
work=${GPU_CHECK_DIR:-/tmp/flowc-gpu-check}
mkdir -p "$work"
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d . | tr -d ' ')
gpu=sm_${cc:-80}
status=0
# compare DIR REF WHAT: every .npy of REF against DIR's, within rtol 1e-3, atol 1e-4.
compare() {
  /usr/bin/python3 - "$@" <<'PY'
import os, sys
import numpy as np
g, c, name = sys.argv[1:]
worst = 0.0
for f in sorted(os.listdir(c)):
    a, b = np.load(os.path.join(g, f)).astype(np.float64), np.load(os.path.join(c, f)).astype(np.float64)
    bad = np.abs(a - b) > 1e-4 + 1e-3 * np.abs(b)
    worst = max(worst, float(np.max(np.abs(a - b) / (1e-4 + np.abs(b)))) if a.size else 0.0)
    if a.shape != b.shape or bad.any():
        print(f"FAIL {name}: {f}: {int(bad.sum())} of {a.size} elements beyond rtol 1e-3")
        sys.exit(1)
print(f"ok   {name} within rtol 1e-3 (worst |d|/(1e-4+|ref|) {worst:.2e})")
PY
}
models=(mlp_b64 cnn_b64 transformer resnet18 mobilenet_v2)
/usr/bin/python3 tools/export_e2e_models.py "$work/models" --models "$(IFS=,; echo "${models[*]}")" >/dev/null || exit 1
for m in "${models[@]}"; do
  d=$work/models/$m
  if ! "$flowc" build "$d/model.onnx" --device cuda --gpu "$gpu" -o "$work/$m" 2>"$work/$m.err"; then
    echo "FAIL $m: build: $(tail -1 "$work/$m.err")"; status=1; continue
  fi
  ins=$(ls "$d"/test_data_set_0/input_*.pb)
  rm -rf "$work/$m.gpu" "$work/$m.cpu" "$work/$m.nograph"
  "$work/$m" $ins --device cuda --output-dir "$work/$m.gpu" || { echo "FAIL $m: GPU run"; status=1; continue; }
  "$work/$m" $ins --device cpu --output-dir "$work/$m.cpu" || { echo "FAIL $m: CPU run"; status=1; continue; }
  FLOWRT_CUDA_GRAPHS=0 "$work/$m" $ins --device cuda --output-dir "$work/$m.nograph" ||
    { echo "FAIL $m: GPU run without CUDA graphs"; status=1; continue; }
  compare "$work/$m.gpu" "$work/$m.cpu" "$m: GPU = CPU" || status=1
  compare "$work/$m.gpu" "$work/$m.nograph" "$m: GPU with CUDA graphs = without" || status=1
  "$work/$m" $ins --device cuda --bench 20 | sed "s/^/     $m GPU: /"
  FLOWRT_CUDA_GRAPHS=0 "$work/$m" $ins --device cuda --bench 20 | sed "s/^/     $m GPU, no CUDA graphs: /"
  "$work/$m" $ins --device cpu --bench 5 | sed "s/^/     $m CPU: /"
done
[ -x "$work/resnet18" ] && "$work/resnet18" "$work"/models/resnet18/test_data_set_0/input_0.pb --device cuda --profile | head -25
# 4096^3 GEMM
/usr/bin/python3 - "$work/gemm.onnx" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
n = 4096
b = numpy_helper.from_array(np.random.default_rng(0).standard_normal((n, n)).astype(np.float32), "b")
g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "gemm",
                      [helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])], [b])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
/usr/bin/python3 -c "import numpy as np; np.save('$work/a.npy', np.random.default_rng(1).standard_normal((4096, 4096)).astype(np.float32))"
if "$flowc" build "$work/gemm.onnx" --device cuda --gpu "$gpu" -o "$work/gemm" 2>"$work/gemm.err"; then
  "$work/gemm" "$work/a.npy" --device cuda --bench 20 | sed 's/^/gemm 4096^3 f32: /'
  echo "(2*4096^3 = 137.4 GFLOP a run: GFLOP/s = 137.4 / median seconds)"
else
  echo "FAIL gemm: build: $(tail -1 "$work/gemm.err")"; status=1
fi
exit $status
