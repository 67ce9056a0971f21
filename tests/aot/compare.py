#!/usr/bin/python3
"""compare.py GOT WANT [--rtol R] [--atol A] — compares two tensor files (.npy or ONNX TensorProto .pb).

The rule is `flowc check`'s: dtype and shape exactly; integers and bools exactly; floats within
|got - want| <= atol + rtol * |want| (NaN equals NaN, infinities must match). Prints one line, `OK` or
`MISMATCH: ...` with the worst element, and exits 0 or 1. Used by the AOT lit tests (tests/lit/aot) to
check what built executables write against the ONNX test data.
"""
import argparse
import sys

import numpy as np


def load(path):
    with open(path, 'rb') as f:
        head = f.read(6)
    if head == b'\x93NUMPY':
        return np.load(path, allow_pickle=False)
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, 'rb') as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('got')
    ap.add_argument('want')
    ap.add_argument('--rtol', type=float, default=1e-3)
    ap.add_argument('--atol', type=float, default=1e-7)
    a = ap.parse_args()
    got, want = load(a.got), load(a.want)
    if got.dtype != want.dtype:
        print('MISMATCH: dtype %s, want %s' % (got.dtype, want.dtype))
        return 1
    if got.shape != want.shape:
        print('MISMATCH: shape %s, want %s' % (got.shape, want.shape))
        return 1
    if got.dtype.kind != 'f':
        bad = np.flatnonzero(got.ravel() != want.ravel())
        if bad.size:
            i = bad[0]
            print('MISMATCH: element %d is %s, want %s' % (i, got.ravel()[i], want.ravel()[i]))
            return 1
        print('OK')
        return 0
    g = got.astype(np.float64).ravel()
    w = want.astype(np.float64).ravel()
    both_nan = np.isnan(g) & np.isnan(w)
    with np.errstate(invalid='ignore'):
        err = np.where(both_nan | (g == w), 0.0, np.abs(g - w) - (a.atol + a.rtol * np.abs(w)))
    err = np.where(np.isnan(err), np.inf, err)
    if err.size and err.max() > 0:
        i = int(err.argmax())
        print('MISMATCH: element %d is %r, want %r' % (i, g[i], w[i]))
        return 1
    print('OK')
    return 0


if __name__ == '__main__':
    sys.exit(main())
