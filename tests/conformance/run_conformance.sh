#!/usr/bin/env bash
# run_conformance.sh FLOWC EXPECT_FILE OUT_DIR [DATA FOLDER...] — ONNX test cases through `flowc check`.
#
# By default the cases are Debian's libonnx-testdata (DATA is $FLOWC_ONNX_DATA or its install folder):
# runs every case of node, pytorch-converted, pytorch-operator and simple (one `flowc check` per folder,
# results in OUT_DIR/<folder>.txt), prints the counts per folder, and compares each case's outcome with
# the expected-failure list: a case that does not PASS must be listed with exactly its outcome (FAIL,
# UNSUPPORTED or CONSTANT), and a listed case that passes is an unexpected pass. Either mismatch fails the
# suite, so the list stays true; tools/update_conformance_list.sh regenerates it.
set -uo pipefail
flowc=$1 expect=$2 out=$3
data=${4:-${FLOWC_ONNX_DATA:-/usr/share/libonnx-testdata/data}}
folders=(node pytorch-converted pytorch-operator simple)
[ $# -gt 4 ] && folders=("${@:5}")
jobs=${FLOWC_CHECK_JOBS:-$(nproc)}
mkdir -p "$out"
status=0
for folder in "${folders[@]}"; do
  "$flowc" check -j "$jobs" ${FLOWC_CHECK_ARGS:-} "$data/$folder" >"$out/$folder.txt" 2>"$out/$folder.err"
  rc=$?
  # exit 1 only means some case failed; anything else (a usage error, a crash of flowc itself) is fatal
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
    echo "flowc check $folder exited with status $rc:"; tail -n 5 "$out/$folder.err"; status=1
  fi
  awk -v f="$folder" '
    $1 == "PASS" { p++ } $1 == "FAIL" { x++ } $1 == "UNSUPPORTED" { u++ } $1 == "CONSTANT" { c++ }
    END { printf "%s: %d cases: %d passed, %d failed, %d unsupported, %d constant\n", f, p + x + u + c, p, x, u, c }
  ' "$out/$folder.txt"
done
# name -> outcome of this run, and of the list
results=()
for folder in "${folders[@]}"; do results+=("$out/$folder.txt"); done
cat "${results[@]}" |
  awk '$1 ~ /^(PASS|FAIL|UNSUPPORTED|CONSTANT)$/ { name = $2; sub(/:$/, "", name); print name, $1 }' | sort >"$out/outcomes.txt"
sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$expect" | awk 'NF >= 2 { print $1, $2 }' | sort >"$out/expected.txt"
mismatch=$(join -a 1 -a 2 -e NONE -o 0,1.2,2.2 "$out/outcomes.txt" "$out/expected.txt" | awk '
  $2 == $3 || ($3 == "NONE" && $2 == "PASS") { next }
  $2 == "PASS" { print $1 "\tUNEXPECTED PASS " $1 " (listed as " $3 "; remove it from the list)"; next }
  $2 == "NONE" { print $1 "\tNOT RUN " $1 " (listed as " $3 ")"; next }
  $3 == "NONE" { print $1 "\tUNEXPECTED " $2 " " $1 " (not in the list)"; next }
  { print $1 "\tCHANGED " $1 ": " $2 ", listed as " $3 }')
# FLOWC_COVERAGE_OF=LIST (the SIMT run): how many of the cases the CPU passes (those of these folders not in
# the CPU's LIST) pass here too: issue 16's target is 90%.
if [ -n "${FLOWC_COVERAGE_OF:-}" ]; then
  sed -e 's/#.*//' "$FLOWC_COVERAGE_OF" | awk 'NF >= 2 { print $1 }' | sort >"$out/cpu_not_passing.txt"
  awk '{ print $1 }' "$out/outcomes.txt" | sort | comm -23 - "$out/cpu_not_passing.txt" >"$out/cpu_passing.txt"
  awk '$2 == "PASS" { print $1 }' "$out/outcomes.txt" | sort | comm -12 - "$out/cpu_passing.txt" >"$out/both.txt"
  echo "coverage: $(wc -l <"$out/both.txt") of the $(wc -l <"$out/cpu_passing.txt") cases the CPU passes pass here" \
    "($(awk -v a="$(wc -l <"$out/both.txt")" -v b="$(wc -l <"$out/cpu_passing.txt")" 'BEGIN { printf "%.1f", b ? 100 * a / b : 0 }')%)"
fi
if [ -n "$mismatch" ]; then
  printf '%s\n' "$mismatch" | while IFS=$'\t' read -r name msg; do
    echo "$msg"
    cat "${results[@]}" |
      awk -v n="$name" '{ x = $2; sub(/:$/, "", x) } x == n { print "    " $0; exit }'
  done
  echo "conformance: FAILED ($(printf '%s\n' "$mismatch" | wc -l) differences from the list; tools/update_conformance_list.sh regenerates it)"
  status=1
else
  echo "conformance: every outcome as listed"
fi
exit $status
