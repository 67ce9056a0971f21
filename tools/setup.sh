#!/usr/bin/env bash
# setup.sh — one command from a fresh Debian 12 machine to a working flowc.
#
#   tools/setup.sh demo   install what is missing, build, run the main job on the shipped example
#   tools/setup.sh test   install what is missing, build, run the whole test suite
#
# Idempotent and quiet when already set up: apt runs only for packages that are missing, meson only
# configures a build folder once. Runs as root (or with sudo available for apt).
#
# Warnings are errors in the test mode only (-Dwerror=true), never a project default, so a newer
# compiler's new warning cannot break a user's or a packager's build. The test mode also builds a second
# folder at --buildtype=release (GCC's -O3 warns about what -O2 does not see), warnings as errors there too.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-demo}
# The demo runs an optimised build; the tests run in a second build under ASan + UBSan.
case "$mode" in
demo) build=${BUILD_DIR:-build} ; meson_args=() ;;
test) build=${BUILD_DIR:-build-test} ; meson_args=(-Db_sanitize=address,undefined -Dwerror=true) ;;
*) echo "usage: tools/setup.sh demo|test" >&2; exit 2 ;;
esac

packages=(meson ninja-build pkg-config gcc g++ libprotobuf-c-dev protobuf-c-compiler libcmocka-dev
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools clang-19 libonnx-dev libonnx-testdata
  python3-onnx python3-numpy zlib1g-dev graphviz
  python3-torch python3-torchvision libopenblas0-openmp dataset-fashion-mnist openmpi-bin libopenmpi-dev)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Quiet on success; the full log on failure.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# build_folder DIR MESON_ARGS...: configures DIR once, then brings it up to date.
build_folder() {
  local dir=$1
  shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@" >"$log" 2>&1 || { cat "$log"; exit 1; }
  fi
  ninja -C "$dir" >"$log" 2>&1 || { cat "$log"; exit 1; }
}
build_folder "$build" "${meson_args[@]}"
if [ "$mode" = test ]; then
  build_folder "${RELEASE_BUILD_DIR:-build-release}" --buildtype=release -Dwerror=true
fi

# The tests check `--emit onnx` files in onnxruntime-node (npm, the version bench/package-lock.json pins;
# --ignore-scripts: its install script tries a download, the CPU library is in the package). Without npm
# or its registry that one test is skipped (exit 77), not failed.
if [ "$mode" = test ] && [ ! -f bench/node_modules/onnxruntime-node/package.json ] && command -v npm >/dev/null; then
  npm ci --prefix bench --ignore-scripts --no-audit --no-fund >"$log" 2>&1 ||
    echo "setup: npm could not install onnxruntime-node into bench/ (the --emit onnx check will be skipped)"
fi

case "$mode" in
demo)
  tools/demo.sh "$build"
  ;;
test)
  tools/run_tests.sh "$build"
  ;;
esac
