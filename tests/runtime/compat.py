#!/usr/bin/python3
"""compat.py DIR — the numpy/onnx side of test_runtime's compatibility test.

test_runtime writes c_*.npy / c_*.pb with libflowrt and a manifest (c_manifest.txt), then runs this
script, which:
  1. checks every file libflowrt wrote: numpy (or onnx.numpy_helper) loads it with the dtype, shape and
     bytes the manifest gives, and numpy.save / numpy_helper.from_array produce the identical file;
  2. writes files for libflowrt to read: np_* (.npy in v1/v2/v3, every dtype, odd headers, and files it
     must refuse) and pb_* (TensorProtos with typed fields, ONNX test data), with the expected bytes in
     *.bin and the expectations in py_manifest.txt: `FILE ok DTYPE RANK DIMS...` or `FILE refuse`.
Exit status 0 when every check passed; failures are printed one per line.
"""
import glob
import io
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

D = sys.argv[1]
failures = []

# FrtDtype codes (= ONNX) → numpy dtype; bf16 travels as '<u2'.
NP = {1: '<f4', 2: '|u1', 3: '|i1', 4: '<u2', 5: '<i2', 6: '<i4', 7: '<i8', 9: '|b1', 10: '<f2',
      11: '<f8', 12: '<u4', 13: '<u8', 16: '<u2'}


def pattern(code, n):
    """The bytes test_runtime fills a tensor with (keep in sync with fill_pattern in test_runtime.c)."""
    size = np.dtype(NP[code]).itemsize
    if code == 9:
        return bytes((k % 3 == 0) for k in range(n))
    return bytes(((k * 7 + 3) & 0xff) for k in range(n * size))


# ---- 1. files written by libflowrt ----------------------------------------------------------------------
with open(os.path.join(D, 'c_manifest.txt')) as f:
    for line in f:
        name, code, rank, *dims = line.split()
        code, rank, dims = int(code), int(rank), tuple(int(d) for d in dims)
        assert len(dims) == rank
        path = os.path.join(D, name)
        data = open(path, 'rb').read()
        n = int(np.prod(dims)) if dims else 1
        try:
            if name.endswith('.npy'):
                a = np.load(path)
                want = io.BytesIO()
                np.save(want, a)
                if want.getvalue() != data:
                    failures.append(f'{name}: numpy.save writes different bytes')
                got_dtype = a.dtype.str
            else:
                t = onnx.TensorProto()
                t.ParseFromString(data)
                if t.data_type != code:
                    failures.append(f'{name}: data_type {t.data_type}, expected {code}')
                a = numpy_helper.to_array(t)
                if code == 16:
                    a = (a.astype(np.float32).view(np.uint32) >> 16).astype('<u2')
                want = numpy_helper.from_array(np.frombuffer(data[-n * np.dtype(NP[code]).itemsize:] if n else b'',
                                                             NP[code]).reshape(dims), t.name)
                if code != 16 and want.SerializeToString() != data:
                    failures.append(f'{name}: numpy_helper.from_array writes different bytes')
                if t.name != 'tensor_' + name[2:-3]:
                    failures.append(f'{name}: name {t.name!r}')
                got_dtype = a.dtype.str
            if got_dtype != NP[code]:
                failures.append(f'{name}: dtype {got_dtype}, expected {NP[code]}')
            if a.shape != dims:
                failures.append(f'{name}: shape {a.shape}, expected {dims}')
            if a.tobytes() != pattern(code, n):
                failures.append(f'{name}: data differs from the pattern')
        except Exception as e:  # noqa: BLE001 — any failure to load is a test failure
            failures.append(f'{name}: {type(e).__name__}: {e}')

# ---- 2. files for libflowrt to read ----------------------------------------------------------------------
manifest = []
rng = np.random.default_rng(7)


def expect_ok(name, code, arr_bytes, dims):
    with open(os.path.join(D, name + '.bin'), 'wb') as f:
        f.write(arr_bytes)
    manifest.append(f'{name} ok {code} {len(dims)} ' + ' '.join(str(d) for d in dims))


def expect_refuse(name):
    manifest.append(f'{name} refuse')


def random_array(code, dims):
    dt = np.dtype(NP[code])
    if code == 9:
        return rng.integers(0, 2, dims).astype(bool)
    if dt.kind == 'f':
        return rng.standard_normal(dims).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, dims, dtype=dt, endpoint=True)


shapes = [(), (5,), (2, 3), (1, 4, 2), (2, 1, 3, 2), (0, 3), (1000,)]
for code in sorted(NP):
    if code == 16:
        continue
    for si, dims in enumerate(shapes):
        for version in [(1, 0), (2, 0), (3, 0)]:
            if version != (1, 0) and si not in (1, 2):
                continue
            a = random_array(code, dims)
            name = f'np_{code}_{si}_v{version[0]}.npy'
            with open(os.path.join(D, name), 'wb') as f:
                np.lib.format.write_array(f, a, version=version)
            expect_ok(name, code, a.tobytes(), dims)

# Headers numpy accepts but writes differently.
def raw_npy(name, header, payload, version=1):
    h = header.encode('latin1')
    prefix = b'\x93NUMPY' + bytes([version, 0])
    prefix += len(h).to_bytes(2 if version == 1 else 4, 'little')
    with open(os.path.join(D, name), 'wb') as f:
        f.write(prefix + h + payload)


a = np.arange(6, dtype='<i4')
raw_npy('np_odd_keys.npy', "{'shape': (2,3), 'fortran_order': False, 'descr': '<i4'}\n", a.tobytes())
expect_ok('np_odd_keys.npy', 6, a.tobytes(), (2, 3))
raw_npy('np_dquote.npy', '{"descr": "<i4", "fortran_order": False, "shape": (6,)}', a.tobytes())
expect_ok('np_dquote.npy', 6, a.tobytes(), (6,))
raw_npy('np_py2_long.npy', "{'descr': '<i4', 'fortran_order': False, 'shape': (2L, 3L), }  \n", a.tobytes())
expect_ok('np_py2_long.npy', 6, a.tobytes(), (2, 3))
raw_npy('np_native.npy', "{'descr': '=i4', 'fortran_order': False, 'shape': (6,), }\n", a.tobytes())
expect_ok('np_native.npy', 6, a.tobytes(), (6,))
raw_npy('np_bool_q.npy', "{'descr': '?', 'fortran_order': False, 'shape': (2,), }\n", b'\x01\x00')
expect_ok('np_bool_q.npy', 9, b'\x01\x00', (2,))
raw_npy('np_bool_2.npy', "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }\n", b'\x02\x00\xff')
expect_ok('np_bool_2.npy', 9, b'\x01\x00\x01', (3,))
# Fortran order where it equals C order is accepted; a real column-major 2-D array is not.
f1 = np.asfortranarray(np.arange(4, dtype='<f4').reshape(4, 1))
with open(os.path.join(D, 'np_fortran_col.npy'), 'wb') as f:
    np.lib.format.write_array(f, f1, version=(1, 0))
expect_ok('np_fortran_col.npy', 1, np.ascontiguousarray(f1).tobytes(), (4, 1))
for name, arr, kw in [
        ('np_fortran.npy', np.asfortranarray(np.arange(6, dtype='<f4').reshape(2, 3)), {}),
        ('np_big_endian.npy', np.arange(3, dtype='>i4'), {}),
        ('np_complex.npy', np.arange(3, dtype='<c8'), {}),
        ('np_unicode.npy', np.array(['ab', 'c']), {}),
        ('np_structured.npy', np.zeros(2, dtype=[('a', '<i4'), ('b', '<f4')]), {}),
        ('np_object.npy', np.array([1, 'x'], dtype=object), {'allow_pickle': True}),
        ('np_datetime.npy', np.array(['2020-01-01'], dtype='datetime64[D]'), {})]:
    with open(os.path.join(D, name), 'wb') as f:
        np.lib.format.write_array(f, arr, **kw)
    expect_refuse(name)

# TensorProtos with typed fields (what onnx.helper.make_tensor writes), every dtype.
for code in sorted(NP):
    for si, dims in enumerate([(), (5,), (2, 3), (0, 2)]):
        if code == 16:
            vals = rng.standard_normal(dims).astype(np.float32)
            t = helper.make_tensor(f't{code}', code, dims, vals.flatten().tolist())
            want = (numpy_helper.to_array(t).astype(np.float32).view(np.uint32) >> 16).astype('<u2')
        else:
            a = random_array(code, dims)
            t = helper.make_tensor(f't{code}', code, dims, a.flatten().tolist() if code != 10 else a.flatten())
            want = numpy_helper.to_array(t).astype(NP[code])
        name = f'pb_typed_{code}_{si}.pb'
        with open(os.path.join(D, name), 'wb') as f:
            f.write(t.SerializeToString())
        expect_ok(name, code, want.tobytes(), dims)

# Packed and unpacked encodings of the same values, split across keys, and unknown fields.
def key(field, wt):
    return varint(field << 3 | wt)


def varint(v):
    v &= (1 << 64) - 1
    out = b''
    while v >= 0x80:
        out += bytes([v & 0x7f | 0x80])
        v >>= 7
    return out + bytes([v])


def ld(field, payload):
    return key(field, 2) + varint(len(payload)) + payload


msg = (key(1, 0) + varint(3) + key(2, 0) + varint(7) + ld(12, b'doc') + ld(7, varint(-1) + varint(5)) +
       key(99, 0) + varint(1) + key(98, 1) + bytes(8) + key(97, 5) + bytes(4) + key(7, 0) + varint(1 << 40) + ld(8, b'n'))
with open(os.path.join(D, 'pb_split.pb'), 'wb') as f:
    f.write(msg)
expect_ok('pb_split.pb', 7, np.array([-1, 5, 1 << 40], '<i8').tobytes(), (3,))
msg = ld(1, varint(2) + varint(2)) + key(2, 0) + varint(1) + key(4, 5) + np.float32(1.5).tobytes() + \
    ld(4, np.array([2.5, -1, 7], '<f4').tobytes())
with open(os.path.join(D, 'pb_packed_dims.pb'), 'wb') as f:
    f.write(msg)
expect_ok('pb_packed_dims.pb', 1, np.array([1.5, 2.5, -1, 7], '<f4').tobytes(), (2, 2))
for name, msg in [
        ('pb_string.pb', key(1, 0) + varint(1) + key(2, 0) + varint(8) + ld(6, b'abc')),
        ('pb_external.pb', key(2, 0) + varint(1) + key(14, 0) + varint(1) + ld(13, ld(1, b'location') + ld(2, b'x'))),
        ('pb_segment.pb', key(1, 0) + varint(1) + key(2, 0) + varint(1) + ld(3, key(1, 0) + varint(0))),
        ('pb_complex.pb', key(1, 0) + varint(1) + key(2, 0) + varint(14) + ld(9, bytes(8))),
        ('pb_wrong_field.pb', key(1, 0) + varint(2) + key(2, 0) + varint(1) + ld(7, varint(1) + varint(2))),
        ('pb_both.pb', key(1, 0) + varint(1) + key(2, 0) + varint(6) + ld(9, bytes(4)) + ld(5, varint(1))),
        ('pb_count.pb', key(1, 0) + varint(3) + key(2, 0) + varint(6) + ld(5, varint(1) + varint(2))),
        ('pb_no_type.pb', key(1, 0) + varint(1) + ld(9, bytes(4))),
        ('pb_neg_dim.pb', key(1, 0) + varint(-2) + key(2, 0) + varint(1)),
        ('pb_overflow.pb', key(1, 0) + varint(1 << 62) + key(1, 0) + varint(1 << 62) + key(2, 0) + varint(1)),
        ('pb_rank17.pb', (key(1, 0) + varint(1)) * 17 + key(2, 0) + varint(1) + ld(9, bytes(4))),
        ('pb_group.pb', key(1, 0) + varint(1) + key(2, 0) + varint(1) + key(20, 3)),
        ('pb_raw_short.pb', key(1, 0) + varint(3) + key(2, 0) + varint(1) + ld(9, bytes(8)))]:
    with open(os.path.join(D, name), 'wb') as f:
        f.write(msg)
    expect_refuse(name)

# The ONNX backend test data: up to 4 files per (data_type, fields present) group. Files numpy_helper
# cannot read or that are not plain tensors (segments of sequences/optionals, strings) must be refused.
root = '/usr/share/libonnx-testdata/data'
groups = {}
for path in sorted(glob.glob(root + '/*/*/test_data_set_*/*.pb')):
    t = onnx.TensorProto()
    try:
        t.ParseFromString(open(path, 'rb').read())
    except Exception:  # noqa: BLE001 — not a TensorProto at all
        continue
    k = (t.data_type, tuple(sorted(d.name for d, _ in t.ListFields())))
    if len(groups.setdefault(k, [])) < 4:
        groups[k].append((path, t))
for (code, fields), items in sorted(groups.items()):
    for path, t in items:
        name = 'pb_data_' + path[len(root) + 1:].replace('/', '_')
        if os.path.lexists(os.path.join(D, name)):
            os.unlink(os.path.join(D, name))
        os.symlink(path, os.path.join(D, name))
        try:
            a = numpy_helper.to_array(t) if code in NP and 'segment' not in fields else None
        except Exception:  # noqa: BLE001 — numpy_helper refuses it, so must libflowrt
            a = None
        if a is not None:
            if code == 16:
                a = (a.astype(np.float32).view(np.uint32) >> 16).astype('<u2')
            expect_ok(name, code, np.ascontiguousarray(a).astype(NP[code]).tobytes(), tuple(t.dims))
        else:
            expect_refuse(name)

with open(os.path.join(D, 'py_manifest.txt'), 'w') as f:
    f.write('\n'.join(manifest) + '\n')
for line in failures:
    print(line)
sys.exit(1 if failures else 0)
