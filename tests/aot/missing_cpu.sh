#!/bin/sh
# missing_cpu.sh — prints "CPU FEATURE": an LLVM --cpu whose code this host cannot run and one feature
# (LLVM's spelling) it needs that the host lacks, chosen from /proc/cpuinfo at test time, so the CPU
# check tests work on an AVX2-only host (skylake-avx512: avx512f), on an AVX-512 one without AVX-512 FP16
# or AMX (sapphirerapids), on a Sapphire Rapids (graniterapids: amx-fp16) and, last, on any Intel CPU
# (znver1: AMD's sse4a).
set -eu
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { case "$flags" in *" $1 "*) return 0 ;; esac; return 1; }
if ! has avx512f; then echo "skylake-avx512 avx512f"
elif ! has avx512_fp16; then echo "sapphirerapids avx512fp16"
elif ! has amx_tile; then echo "sapphirerapids amx-tile"
elif ! has amx_fp16; then echo "graniterapids amx-fp16"
elif ! has sse4a; then echo "znver1 sse4a"
else echo "missing_cpu.sh: this host has every feature of the CPUs it knows" >&2; exit 1
fi
