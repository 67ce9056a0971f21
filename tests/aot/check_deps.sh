#!/bin/sh
# check_deps.sh PROGRAM FLOWC — checks that a program flowc built needs only libc, libm and libpthread
# (plus the dynamic loader and the vDSO). Prints `deps ok` or one line per unexpected library and exits 1.
#
# The program's own needs (its DT_NEEDED entries, from readelf) must be among those three or the loader
# (which provides __tls_get_addr for libflowrt's thread-local variable). In a sanitizer
# build of flowc (FLOWC itself needs libasan/libubsan), libflowrt is compiled with the sanitizers, so the
# program also needs their runtimes; only then are libasan/libubsan and the libraries they bring in
# (libstdc++, libgcc_s) accepted, and only as what the sanitizer runtimes need, never directly otherwise.
set -eu
prog=$1 flowc=$2
san=$(ldd "$flowc" | sed -n 's/^[[:space:]]*\(lib[a-z]*san\.so[^ ]*\).*/\1/p' | sort -u)
bad=0
needed=$(readelf -d "$prog" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p')
[ -n "$needed" ] || { echo "no DT_NEEDED entries in $prog (not a dynamic program?)"; exit 1; }
for lib in $needed; do
  case "$lib" in
  libc.so.6 | libm.so.6 | libpthread.so.0 | ld-linux*.so.*) ;;
  *) if [ -n "$san" ] && echo "$san" | grep -qx "$lib"; then :; else echo "unexpected NEEDED: $lib"; bad=1; fi ;;
  esac
done
for lib in $(ldd "$prog" | awk '{print $1}'); do
  case "$lib" in
  linux-vdso.so.* | */ld-linux*.so.* | ld-linux*.so.* | libc.so.6 | libm.so.6 | libpthread.so.0) ;;
  libstdc++.so.* | libgcc_s.so.*) [ -n "$san" ] || { echo "unexpected library: $lib"; bad=1; } ;;
  *) if [ -n "$san" ] && echo "$san" | grep -qx "$lib"; then :; else echo "unexpected library: $lib"; bad=1; fi ;;
  esac
done
[ $bad -eq 0 ] && echo "deps ok"
exit $bad
