#!/bin/sh
# build_c.sh FLOWC OUT CC_ARGS... — compiles a test program against a library or object flowc wrote:
# strict C11 with warnings as errors, runtime/ on the include path (flowrt.h), libm and libpthread last,
# and the sanitizer flags of FLOWC's build (san_flags.sh) when flowc's libflowrt is instrumented.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
flowc=$1 out=$2
shift 2
# shellcheck disable=SC2046  # the flags are words
exec "${CC:-cc}" -std=c11 -Wall -Wextra -Werror -pedantic $(sh "$here/san_flags.sh" "$flowc") \
  -I"$here/../../runtime" -o "$out" "$@" -lm -lpthread
