#!/bin/sh
# san_flags.sh FLOWC — prints the -fsanitize flag a program must be linked with to use the libflowrt of
# the build FLOWC comes from: empty for a normal build; -fsanitize=address,undefined (or part of it) when
# meson built with -Db_sanitize, since libflowrt's objects then call the sanitizer runtimes. flowc links
# its executables the same way; the AOT tests use this for the C programs they compile themselves.
set -eu
deps=$(ldd "$1" 2>/dev/null || true)
s=""
case "$deps" in *libasan.so*) s="address" ;; esac
case "$deps" in *libubsan.so*) s="${s:+$s,}undefined" ;; esac
[ -n "$s" ] && echo "-fsanitize=$s" || true
