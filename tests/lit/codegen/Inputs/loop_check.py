"""Inputs and numpy references for tests/lit/codegen/loop.test.

  loop_check.py inputs DIR        writes the .npy inputs of the loop tests into DIR
  loop_check.py rnn DIR OUTDIR    checks loop_rnn.mlir's outputs in OUTDIR (h, y) against numpy
  loop_check.py exit DIR OUTDIR TRIP GO STOP   checks loop_exit.mlir's outputs (acc, count, ys)
  loop_check.py if DIR OUTDIR P   checks if.mlir's outputs (y, same)
  loop_check.py nested DIR OUTDIR TRIP   checks loop_nested.mlir's outputs (acc, ys)
Prints OK or what differs.
"""
import os
import sys

import numpy as np


def inputs(d):
    r = np.random.default_rng(1)
    np.save(os.path.join(d, "h0.npy"), r.standard_normal((1, 4)).astype(np.float32))
    np.save(os.path.join(d, "w.npy"), (r.standard_normal((4, 4)) * 0.5).astype(np.float32))
    np.save(os.path.join(d, "x.npy"), r.standard_normal((7, 1, 4)).astype(np.float32))
    np.save(os.path.join(d, "step.npy"), np.array([1.0, -0.5], np.float32))
    np.save(os.path.join(d, "x23.npy"), r.standard_normal((2, 3)).astype(np.float32))
    for v in (0, 3, 4, 7, 9):
        np.save(os.path.join(d, "i%d.npy" % v), np.array(v, np.int64))
    np.save(os.path.join(d, "true.npy"), np.array(True))
    np.save(os.path.join(d, "false.npy"), np.array(False))


def close(name, got, want):
    if got.shape != want.shape or got.dtype != want.dtype:
        return ["%s: %s %s, expected %s %s" % (name, got.dtype, got.shape, want.dtype, want.shape)]
    if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
        return ["%s: max difference %g" % (name, np.abs(got.astype(np.float64) - want).max())]
    return []


def main():
    what, d = sys.argv[1], sys.argv[2]
    if what == "inputs":
        inputs(d)
        return
    out = sys.argv[3]
    got = [np.load(os.path.join(out, "output_%d.npy" % i)) for i in range(3) if os.path.exists(os.path.join(out, "output_%d.npy" % i))]
    errs = []
    if what == "rnn":
        h, w, x = (np.load(os.path.join(d, n + ".npy")) for n in ("h0", "w", "x"))
        ys = np.zeros((7, 1, 4), np.float32)
        for t in range(7):
            h = h @ w + x[t]
            ys[t] = h
        errs += close("h", got[0], h) + close("y", got[1], ys)
    elif what == "exit":
        trip, go, stop = (int(a) for a in sys.argv[4:7])
        step = np.load(os.path.join(d, "step.npy"))
        acc, n, ys, i, c = np.zeros(2, np.float32), 0, np.zeros((5, 2), np.float32), 0, bool(go)
        while i < trip and c:
            acc = acc + step * np.float32(i)
            ys[i] = acc
            n += 1
            c = i + 1 < stop
            i += 1
        errs += close("acc", got[0], acc) + close("count", got[1], np.array(n, np.int64)) + close("ys", got[2], ys)
    elif what == "if":
        x = np.load(os.path.join(d, "x23.npy"))
        y = np.maximum(x, 0) * 2 if sys.argv[4] == "1" else -x
        errs += close("y", got[0], y) + close("same", got[1], x)
    elif what == "nested":
        step = np.load(os.path.join(d, "step.npy"))
        acc, ys = np.zeros(2, np.float32), np.zeros((4, 2), np.float32)
        for i in range(int(sys.argv[4])):
            s = np.zeros(2, np.float32)
            for _ in range(i + 1):
                s = s + step
            acc = acc + s if i % 2 == 0 else acc - s
            ys[i] = acc
        errs += close("acc", got[0], acc) + close("ys", got[1], ys)
    print("\n".join(errs) if errs else "OK")


main()
