#!/usr/bin/env bash
# run_sweep.sh IMPORT_SWEEP EXPECT_FILE DUMP_DIR — the import sweep over Debian's libonnx-testdata,
# then mlir-opt-19 on every IR dump it wrote. Fails if the sweep fails (a FAIL, an unexpected pass or
# an unexpected unsupported model) or if any dump does not parse with mlir-opt.
set -uo pipefail
sweep=$1 expect=$2 dump=$3
data=/usr/share/libonnx-testdata/data
rm -rf "$dump" && mkdir -p "$dump"
"$sweep" --expect "$expect" --dump "$dump" "$data/node" "$data/pytorch-converted" "$data/pytorch-operator" "$data/simple"
status=$?
total=$(find "$dump" -name '*.mlir' | wc -l)
failed=$(find "$dump" -name '*.mlir' -print0 |
  xargs -0 -P "$(nproc)" -n 16 sh -c 'for f; do mlir-opt-19 --allow-unregistered-dialect "$f" >/dev/null 2>"$f.err" || echo "$f"; done' sh |
  tee "$dump/mlir-opt-failures.txt" | wc -l)
echo "mlir-opt-19: $((total - failed)) of $total IR dumps parse"
if [ "$failed" -ne 0 ]; then
  head -n 5 "$dump/mlir-opt-failures.txt" | while read -r f; do echo "  $f: $(head -n 1 "$f.err")"; done
  status=1
fi
exit $status
