#!/usr/bin/python3
"""bench/quant_kernels.py — GOP/s of the integer kernels (codegen/kernel_conv_i8.c, kernel_matmul_i8.c) against
the f32 kernels of the same shapes, on one thread, per CPU flavour of the dot step.

    python3 bench/quant_kernels.py FLOWC [--cpus x86-64-v3,x86-64-v4,icelake-server] [--runs 50]

Writes one-op IR text models (a quantised conv 64->64 3x3 pad 1 on 56x56 and a quantised matmul 128x512 by a
constant 512x2048, both u8 x i8 requantised to u8; the same ops in f32) into a temporary folder, runs each with
`flowc run --bench RUNS --threads 1 --cpu CPU` and prints the min and median latency and GOP/s (2·MACs / time;
the min is the figure to quote on a machine shared with other jobs). The
f32 conv goes through the default -O2 pipeline (Winograd or the blocked layout, whatever flowc picks), so the
comparison is against flowc's best f32 build of that layer. CPUs the host cannot run are skipped.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

NEEDS = {'x86-64-v3': {'avx2'}, 'alderlake': {'avx2', 'avx_vnni'}, 'x86-64-v4': {'avx512bw', 'avx512vl'},
         'icelake-server': {'avx512bw', 'avx512vl', 'avx512_vnni'}}


def host_flags():
    for line in open('/proc/cpuinfo'):
        if line.startswith('flags'):
            return set(line.split(':')[1].split())
    return set()


def tt(shape, el):
    return 'tensor<%s%s>' % (''.join('%dx' % d for d in shape), el)


def conv_text(quant, rng):
    xs, ws, ys = [1, 64, 56, 56], [64, 64, 3, 3], [1, 64, 56, 56]
    if quant:
        xq, wq, yq = '!quant.uniform<u8:f32, 0.02:128>', '!quant.uniform<i8:f32, 0.01>', '!quant.uniform<u8:f32, 0.1:128>'
        w = rng.integers(-64, 65, size=ws).tolist()
        wt, attr = 'i8', ', qtype = %s' % yq
        x = rng.integers(0, 256, size=xs).astype(np.uint8)
    else:
        xq = wq = yq = 'f32'
        w = np.round(rng.uniform(-1, 1, size=ws), 3).tolist()
        wt, attr = 'f32', ''
        x = rng.uniform(-1, 1, size=xs).astype(np.float32)
    return ('module {\n  func.func @main(%%arg0: %s {flow.name = "x"}) -> (%s {flow.name = "y"}) {\n'
            '    %%w = "flow.constant"() {value = dense<%s> : %s} : () -> %s\n'
            '    %%y = "flow.conv"(%%arg0, %%w) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>%s, '
            'strides = array<i64: 1, 1>} : (%s, %s) -> %s\n'
            '    "func.return"(%%y) : (%s) -> ()\n  }\n}\n') % (
        tt(xs, xq), tt(ys, yq), json.dumps(w), tt(ws, wt), tt(ws, wq), attr, tt(xs, xq), tt(ws, wq), tt(ys, yq),
        tt(ys, yq)), x, 2.0 * 64 * 64 * 9 * 56 * 56


def matmul_text(quant, rng):
    M, K, N = 128, 512, 2048
    if quant:
        aq, bq, yq = '!quant.uniform<u8:f32, 0.02:128>', '!quant.uniform<i8:f32, 0.01>', '!quant.uniform<u8:f32, 0.1:128>'
        b = rng.integers(-64, 65, size=[K, N]).tolist()
        bt, attr = 'i8', ' {qtype = %s}' % yq
        x = rng.integers(0, 256, size=[M, K]).astype(np.uint8)
    else:
        aq = bq = yq = 'f32'
        b = np.round(rng.uniform(-1, 1, size=[K, N]), 3).tolist()
        bt, attr = 'f32', ''
        x = rng.uniform(-1, 1, size=[M, K]).astype(np.float32)
    return ('module {\n  func.func @main(%%arg0: %s {flow.name = "x"}) -> (%s {flow.name = "y"}) {\n'
            '    %%w = "flow.constant"() {value = dense<%s> : %s} : () -> %s\n'
            '    %%y = "flow.matmul"(%%arg0, %%w)%s : (%s, %s) -> %s\n'
            '    "func.return"(%%y) : (%s) -> ()\n  }\n}\n') % (
        tt([M, K], aq), tt([M, N], yq), json.dumps(b), tt([K, N], bt), tt([K, N], bq), attr, tt([M, K], aq),
        tt([K, N], bq), tt([M, N], yq), tt([M, N], yq)), x, 2.0 * M * K * N


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('flowc')
    ap.add_argument('--cpus', default='x86-64-v3,x86-64-v4,icelake-server')
    ap.add_argument('--runs', type=int, default=50)
    o = ap.parse_args()
    host = host_flags()
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as d:
        cases = []
        for name, make in (('conv 64->64 3x3 56x56', conv_text), ('matmul 128x512x2048', matmul_text)):
            for quant in (True, False):
                text, x, ops = make(quant, rng)
                p = os.path.join(d, '%s_%d.mlir' % (name.split()[0], quant))
                with open(p, 'w') as f:
                    f.write(text)
                np.save(p + '.npy', x)
                cases.append((name, 'int8' if quant else 'f32', p, ops))
        for cpu in o.cpus.split(','):
            if not NEEDS.get(cpu, set()) <= host:
                print('%-16s skipped: the host lacks %s' % (cpu, ' '.join(sorted(NEEDS[cpu] - host))))
                continue
            for name, kind, p, ops in cases:
                r = subprocess.run([o.flowc, 'run', p, p + '.npy', '--cpu', cpu, '--threads', '1', '--bench',
                                    str(o.runs), '--quiet'], capture_output=True, text=True)
                m = re.search(r'min ([0-9.]+) ms, median ([0-9.]+) ms', r.stdout)
                if r.returncode != 0 or not m:
                    print('%-16s %-24s %-5s FAILED: %s' % (cpu, name, kind, (r.stderr or r.stdout).strip()))
                    continue
                lo, med = float(m.group(1)), float(m.group(2))
                print('%-16s %-24s %-5s min %7.3f ms %7.1f GOP/s   median %7.3f ms %7.1f GOP/s' % (
                    cpu, name, kind, lo, ops / lo / 1e6, med, ops / med / 1e6))
    return 0


if __name__ == '__main__':
    sys.exit(main())
