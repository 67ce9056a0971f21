#!/usr/bin/env bash
# run_tests.sh BUILD — runs every test suite with meson and prints `N passed, N failed[, N skipped]`.
#
# meson 1.0.1 exits with the number of failed tests (so 256 failures would exit 0): the verdict comes
# from meson-logs/testlog.json instead of the exit status.
set -uo pipefail
build=${1:-build}
meson test -C "$build" --print-errorlogs --num-processes "$(nproc)" "${@:2}" >"$build/meson-test-output.txt" 2>&1
tail -n 40 "$build/meson-test-output.txt"
/usr/bin/python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, sys
passed = failed = skipped = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    res = r.get("result")
    if res in ("OK", "EXPECTEDFAIL"):
        passed += 1
    elif res == "SKIP":
        skipped += 1
    else:
        failed += 1
        print(f"FAILED: {r.get('name')} ({res})")
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or passed == 0 else 0)
PY
