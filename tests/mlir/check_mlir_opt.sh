#!/bin/sh
# check_mlir_opt.sh FILE... — every file must parse and verify with
# `mlir-opt-19 --allow-unregistered-dialect` (the IR text form's contract with MLIR).
# Prints one line per failing file with mlir-opt's first error, then "N files, N failed"; exits 1 on any
# failure, 77 (skipped) when mlir-opt-19 is missing. MLIR_OPT overrides the binary.
mlir_opt=${MLIR_OPT:-mlir-opt-19}
if ! command -v "$mlir_opt" >/dev/null 2>&1; then
  echo "check_mlir_opt: $mlir_opt not found" >&2
  exit 77
fi
if [ $# -eq 0 ]; then
  echo "usage: check_mlir_opt.sh FILE..." >&2
  exit 2
fi
total=0
failed=0
for f in "$@"; do
  total=$((total + 1))
  if ! err=$("$mlir_opt" --allow-unregistered-dialect "$f" -o /dev/null 2>&1) || [ -n "$err" ]; then
    failed=$((failed + 1))
    echo "FAIL $f: $(printf '%s\n' "$err" | grep -m1 . )"
  fi
done
echo "$total files, $failed failed"
[ "$failed" -eq 0 ]
