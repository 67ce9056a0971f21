#!/bin/sh
# Runs the lit tests against a meson build of flowc.
#   tools/run_lit.sh [-B BUILD_DIR] [lit options and test paths...]
# BUILD_DIR defaults to ./build; with no test paths it runs all of tests/lit. flowc is rebuilt first.
# Examples: tools/run_lit.sh tests/lit/cli
#           tools/run_lit.sh -B /tmp/build-asan -v tests/lit/passes/fold.mlir
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
if [ "${1-}" = "-B" ]; then
  [ $# -ge 2 ] || { echo "run_lit.sh: -B needs a build directory" >&2; exit 2; }
  build=$(cd "$2" 2>/dev/null && pwd) || { echo "run_lit.sh: no directory $2" >&2; exit 2; }
  shift 2
fi
[ -f "$build/build.ninja" ] || { echo "run_lit.sh: $build is not a meson build directory (meson setup $build)" >&2; exit 2; }
ninja -C "$build" tools/flowc >/dev/null
have_path=no
for a in "$@"; do
  if [ -e "$a" ]; then have_path=yes; fi
done
if [ "$have_path" = no ]; then set -- "$@" "$root/tests/lit"; fi
exec /usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv \
  --param "flowc=$build/tools/flowc" --param "exec_root=$build/tests/lit" "$@"
