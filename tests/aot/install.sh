#!/bin/sh
# install.sh BUILD WORK PREFIX BINDIR LIBDIR INCLUDEDIR — what a packager and a user of the installed tree do:
#   1. `meson install --destdir WORK/root` from BUILD (already built) puts flowc, libflowrt.a, flowrt.h and
#      flowrt.pc under WORK/root/PREFIX; libflowrt.a is a plain archive, usable after a copy;
#   2. the installed flowc compiles a model with --emit obj, and a C program (tests/aot/run_lib.c) links it
#      against the installed runtime with nothing but `pkg-config --cflags --libs flowrt` (PKG_CONFIG_PATH
#      and PKG_CONFIG_SYSROOT_DIR point into the staged tree), runs it and compares with the ONNX test data;
#   3. the installed flowc links --emit exe programs with the libflowrt.a installed beside it, before the
#      build tree's: a broken installed archive makes it fail naming that archive.
# BINDIR, LIBDIR and INCLUDEDIR are meson's options (relative to PREFIX, or absolute). Prints `install ok`.
set -eu
build=$1 work=$2 prefix=$3 bindir=$4 libdir=$5 includedir=$6
here=$(cd "$(dirname "$0")" && pwd)
data=/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding
under() { case "$1" in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }
fail() { echo "FAIL: $*"; exit 1; }

rm -rf "$work"
mkdir -p "$work"
root=$work/root
meson install -C "$build" --no-rebuild --destdir "$root" --quiet >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "meson install"; }
bin=$root$(under "$bindir") lib=$root$(under "$libdir") inc=$root$(under "$includedir")
for f in "$bin/flowc" "$lib/libflowrt.a" "$inc/flowrt.h" "$lib/pkgconfig/flowrt.pc"; do
  [ -f "$f" ] || fail "meson install did not install $f"
done
[ "$(head -c 8 "$lib/libflowrt.a")" = '!<arch>' ] || fail "$lib/libflowrt.a is not a plain ar archive"
cp "$lib/libflowrt.a" "$work/copy.a"
ar t "$work/copy.a" | grep -q '^pool\.c\.o$' || fail "a copy of libflowrt.a does not list its members"

# 2. --emit obj + pkg-config.
flowc=$bin/flowc
"$flowc" build "$data/model.onnx" --emit obj -o "$work/model.o"
flags=$(PKG_CONFIG_PATH="$lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root" pkg-config --cflags --libs flowrt)
case "$flags" in *"-I$inc"*"-L$lib"*) ;; *) fail "pkg-config --cflags --libs flowrt gave '$flags'" ;; esac
# shellcheck disable=SC2086  # the flags are words
${CC:-cc} -std=c11 -Wall -Wextra -Werror -pedantic -I"$work" -o "$work/run_obj" "$here/run_lib.c" "$work/model.o" $flags
out=$("$work/run_obj" "$(dirname "$data/model.onnx")")
[ "$out" = "PASS 1 outputs" ] || fail "the program linked with the installed runtime printed: $out"

# 3. --emit exe finds the runtime installed beside flowc.
"$flowc" build "$data/model.onnx" -o "$work/prog"
"$work/prog" "$data/test_data_set_0/input_0.pb" "$data/test_data_set_0/input_1.pb" --output-dir "$work/out" >/dev/null
/usr/bin/python3 "$here/compare.py" "$work/out/output_0.npy" "$data/test_data_set_0/output_0.pb" | grep -qx OK ||
  fail "the program the installed flowc linked gives a wrong result"
mv "$lib/libflowrt.a" "$lib/libflowrt.a.real"
echo "not an archive" >"$lib/libflowrt.a"
if "$flowc" build "$data/model.onnx" -o "$work/prog2" 2>"$work/err.txt"; then
  fail "the installed flowc linked without the libflowrt.a beside it"
fi
mv "$lib/libflowrt.a.real" "$lib/libflowrt.a"
grep -qF "$lib/libflowrt.a" "$work/err.txt" || fail "the installed flowc did not use $lib/libflowrt.a: $(cat "$work/err.txt")"
echo "install ok"
