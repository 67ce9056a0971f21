#!/usr/bin/env bash
# update_conformance_list.sh [BUILD_DIR [simt]] — regenerates the conformance suites' expected-failure lists from
# runs of `flowc check` (BUILD_DIR/tools/flowc; default build/), and prints the counts per folder:
# tests/conformance/expected_failures.txt over all of libonnx-testdata, and
# tests/conformance/opsets/expected_failures.txt over the opset 18-21 cases (tests/conformance/opsets/data);
# with `simt`, tests/conformance/simt_expected_failures.txt instead: node and simple through --device simt.
# Review the diff before committing: every line is a case that does not pass.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
flowc=$build/tools/flowc
[ -x "$flowc" ] || { echo "update_conformance_list.sh: no $flowc; build first (ninja -C $build)" >&2; exit 2; }
jobs=${FLOWC_CHECK_JOBS:-$(nproc)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# update LIST WHAT DATA FOLDER...: runs each folder of DATA and writes LIST (WHAT names the cases).
update() {
  local list=$1 what=$2 data=$3
  shift 3
  local results=()
  for folder in "$@"; do
    "$flowc" check -j "$jobs" ${CHECK_ARGS:-} "$data/$folder" >"$tmp/$folder.txt" || [ $? -eq 1 ]
    awk -v f="$folder" '
      $1 == "PASS" { p++ } $1 == "FAIL" { x++ } $1 == "UNSUPPORTED" { u++ } $1 == "CONSTANT" { c++ }
      END { printf "%s: %d cases: %d passed, %d failed, %d unsupported, %d constant\n", f, p + x + u + c, p, x, u, c }
    ' "$tmp/$folder.txt"
    results+=("$tmp/$folder.txt")
  done
  {
    echo "# Cases of $what that do not pass 'flowc check', one per line: the case, its outcome"
    echo "# (FAIL, UNSUPPORTED, or CONSTANT: every output was computed at compile time, so no kernel ran), and"
    echo "# why. The conformance suite (tests/conformance) is strict: an unlisted non-PASS, a listed case that"
    echo "# passes, or a different outcome fails it. Regenerate with tools/update_conformance_list.sh."
    echo
    cat "${results[@]}" |
      awk '$1 == "FAIL" || $1 == "UNSUPPORTED" || $1 == "CONSTANT" {
        name = $2; sub(/:$/, "", name)
        why = $0; sub(/^[A-Z]+ [^ ]*:? ?/, "", why)
        if (length(why) > 110) why = substr(why, 1, 107) "..."
        printf "%-62s %-12s%s\n", name, $1, why == "" ? "" : "# " why
      }' | sort
  } >"$list"
  echo "wrote $list ($(grep -c '^[a-z]' "$list") cases)"
}

if [ "${2:-}" = simt ]; then
  # The GPU kernels on the SIMT host backend (flowc check --device simt): node and simple.
  CHECK_ARGS="--device simt" update "$root/tests/conformance/simt_expected_failures.txt" \
    "libonnx-testdata's node and simple folders on the SIMT host backend (--device simt)" \
    "${FLOWC_ONNX_DATA:-/usr/share/libonnx-testdata/data}" node simple
  exit 0
fi
update "$root/tests/conformance/expected_failures.txt" "Debian's libonnx-testdata" \
  "${FLOWC_ONNX_DATA:-/usr/share/libonnx-testdata/data}" node pytorch-converted pytorch-operator simple
update "$root/tests/conformance/opsets/expected_failures.txt" "the opset 18-21 tests (tests/conformance/opsets)" \
  "$root/tests/conformance/opsets" data
