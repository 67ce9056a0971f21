#!/bin/sh
# check_mlir_opt.sh FILE...        — every file must parse and verify with
#                                    `mlir-opt-19 --allow-unregistered-dialect` (the IR text's contract).
# check_mlir_opt.sh --run PROG ARG... — runs PROG with FLOWC_TEXT_DUMP=<temp dir> (test_text writes every
#                                    text it prints there), then checks every *.mlir it wrote.
# Prints one line per failing file with mlir-opt's first error, then "N files, N failed". Exits 1 on any
# failure (or when --run's program fails or writes nothing), 77 (skipped) without mlir-opt-19.
# MLIR_OPT overrides the binary.
mlir_opt=${MLIR_OPT:-mlir-opt-19}
if ! command -v "$mlir_opt" >/dev/null 2>&1; then
  echo "check_mlir_opt: $mlir_opt not found" >&2
  exit 77
fi
if [ "$1" = "--run" ]; then
  shift
  [ $# -ge 1 ] || { echo "usage: check_mlir_opt.sh --run PROG [ARG...]" >&2; exit 2; }
  dir=$(mktemp -d) || exit 1
  trap 'rm -rf "$dir"' EXIT
  if ! FLOWC_TEXT_DUMP="$dir" "$@" >"$dir/run.log" 2>&1; then
    cat "$dir/run.log" >&2
    echo "check_mlir_opt: $1 failed" >&2
    exit 1
  fi
  set -- "$dir"/*.mlir
  [ -e "$1" ] || { echo "check_mlir_opt: no .mlir files were written" >&2; exit 1; }
fi
if [ $# -eq 0 ]; then
  echo "usage: check_mlir_opt.sh FILE... | --run PROG [ARG...]" >&2
  exit 2
fi
# One mlir-opt run over all files joined by `// -----` (--split-input-file) is fast; only when it fails
# is each file run alone, to name the failing ones.
all=$(mktemp) || exit 1
for f in "$@"; do
  cat "$f" >>"$all" || { rm -f "$all"; exit 1; }
  printf '\n// -----\n' >>"$all"
done
if err=$("$mlir_opt" --allow-unregistered-dialect --split-input-file "$all" -o /dev/null 2>&1) && [ -z "$err" ]; then
  rm -f "$all"
  echo "$# files, 0 failed"
  exit 0
fi
rm -f "$all"
total=0
failed=0
for f in "$@"; do
  total=$((total + 1))
  if ! err=$("$mlir_opt" --allow-unregistered-dialect "$f" -o /dev/null 2>&1) || [ -n "$err" ]; then
    failed=$((failed + 1))
    echo "FAIL $f: $(printf '%s\n' "$err" | grep -m1 .)"
  fi
done
echo "$total files, $failed failed"
[ "$failed" -eq 0 ] && [ "$total" -gt 0 ] && {
  echo "check_mlir_opt: the files pass one by one but not joined with // -----" >&2
  exit 1
}
[ "$failed" -eq 0 ]
