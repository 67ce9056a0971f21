#!/usr/bin/python3
"""make_test_models.py OUTDIR — writes the small crafted ONNX models and tensor files that
tests/unit/test_onnx_load.c reads (run with Debian's /usr/bin/python3, which has onnx and numpy).

Every file is generated from scratch, so the test can run it into a fresh temporary folder; nothing
here depends on the machine but the onnx and numpy packages. The models are not meant to be valid for
ONNX's checker: each one exercises one path of the loader or the importer (limits, external data,
typed fields, old IR versions, unsupported ops, bindings).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13


def save(model, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def model_of(graph, opset=OPSET, ir_version=8, extra_opsets=()):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), *extra_opsets])
    m.ir_version = ir_version
    return m


def vi(name, dtype=TensorProto.FLOAT, shape=(2, 3)):
    return helper.make_tensor_value_info(name, dtype, list(shape))


def msg_depth(msg):
    """Nesting depth of a protobuf message, the top-level message being 1 (as flowc counts)."""
    deepest = 0
    for field, value in msg.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        for sub in value if field.label == field.LABEL_REPEATED else [value]:
            deepest = max(deepest, msg_depth(sub))
    return 1 + deepest


# ---- simple models ---------------------------------------------------------------------------------

def tiny(out):
    w = numpy_helper.from_array(np.arange(1, 7, dtype=np.float32).reshape(2, 3), "w")
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "tiny",
                          [vi("x")], [vi("y")], [w])
    save(model_of(g), f"{out}/tiny.onnx")


def passthrough(out):
    """No nodes: the output is the input (imports without any legaliser)."""
    g = helper.make_graph([], "pass", [vi("x")], [vi("x")])
    save(model_of(g), f"{out}/passthrough.onnx")


def rank(out):
    for r in (16, 17):
        g = helper.make_graph([], "rank", [vi("x", shape=[1] * r)], [vi("x", shape=[1] * r)])
        save(model_of(g), f"{out}/rank{r}.onnx")
    t = numpy_helper.from_array(np.zeros([1] * 17, dtype=np.float32), "w")
    g = helper.make_graph([], "rank", [], [vi("w", shape=[1] * 17)], [t])
    save(model_of(g), f"{out}/init_rank17.onnx")


def dynamic(out):
    g = helper.make_graph([], "dyn", [vi("x", shape=["N", 3])], [vi("x", shape=["N", 3])])
    save(model_of(g), f"{out}/dynamic.onnx")


def opsets(out):
    for v in (6, 21, 22):
        g = helper.make_graph([], "op", [vi("x")], [vi("x")])
        save(model_of(g, opset=v), f"{out}/opset{v}.onnx")
    # An op imported at a newer version of its domain than its legaliser implements (the op table's last
    # column): Momentum is implemented for ai.onnx.preview.training 1 only.
    for v in (1, 2):
        node = helper.make_node("Momentum", ["r", "t", "x", "g", "v"], ["x2", "v2"], name="mom",
                                domain="ai.onnx.preview.training", alpha=0.9, beta=1.0, epsilon=0.0, mode="standard",
                                norm_coefficient=0.0)
        scalar = [helper.make_tensor_value_info(n, TensorProto.FLOAT, []) for n in ("r",)]
        step = [helper.make_tensor_value_info("t", TensorProto.INT64, [])]
        g = helper.make_graph([node], "mom", scalar + step + [vi("x"), vi("g"), vi("v")], [vi("x2"), vi("v2")])
        save(model_of(g, extra_opsets=[helper.make_opsetid("ai.onnx.preview.training", v)]),
             f"{out}/training_v{v}.onnx")


def old_ir(out):
    """IR version 3 lists every initializer again as a graph input."""
    w = numpy_helper.from_array(np.full((2, 3), 7, dtype=np.float32), "w")
    g = helper.make_graph([], "old", [vi("x"), vi("w")], [vi("w"), vi("x")], [w])
    save(model_of(g, opset=8, ir_version=3), f"{out}/old_ir.onnx")


def bad_graphs(out):
    g = helper.make_graph([helper.make_node("Add", ["x", "nothere"], ["y"], name="add")], "undef",
                          [vi("x")], [vi("y")])
    save(model_of(g), f"{out}/undefined_input.onnx")
    g = helper.make_graph([], "noout", [vi("x")], [vi("ghost")])
    save(model_of(g), f"{out}/undefined_output.onnx")
    s = helper.make_tensor("s", TensorProto.STRING, [2], [b"a", b"b"])
    g = helper.make_graph([], "str", [], [vi("s", TensorProto.STRING, [2])], [s])
    save(model_of(g), f"{out}/string_init.onnx")
    r = numpy_helper.from_array(np.zeros((2, 3), dtype=np.float32), "r")
    r.raw_data = r.raw_data[:-4]
    g = helper.make_graph([], "short", [], [vi("r")], [r])
    save(model_of(g), f"{out}/short_raw.onnx")


def constants(out):
    nodes = [
        helper.make_node("Constant", [], ["c_tensor"], name="c_tensor",
                         value=numpy_helper.from_array(np.array([1.5, -2.0], dtype=np.float32))),
        helper.make_node("Constant", [], ["c_float"], name="c_float", value_float=0.25),
        helper.make_node("Constant", [], ["c_floats"], name="c_floats", value_floats=[1.0, 2.0, 3.0]),
        helper.make_node("Constant", [], ["c_int"], name="c_int", value_int=-7),
        helper.make_node("Constant", [], ["c_ints"], name="c_ints", value_ints=[4, 5]),
    ]
    outs = [vi("c_tensor", shape=[2]), vi("c_float", shape=[]), vi("c_floats", shape=[3]),
            vi("c_int", TensorProto.INT64, []), vi("c_ints", TensorProto.INT64, [2])]
    save(model_of(helper.make_graph(nodes, "const", [], outs)), f"{out}/constants.onnx")
    nodes = [helper.make_node("Constant", [], ["s"], name="cs", value_string="hi"),
             helper.make_node("Constant", [], ["t"], name="ct", value_int=1)]
    g = helper.make_graph(nodes, "cstr", [], [vi("s", TensorProto.STRING, []), vi("t", TensorProto.INT64, [])])
    save(model_of(g), f"{out}/constant_string.onnx")
    bad = helper.make_node("Constant", [], ["b"], name="cbad")
    bad.attribute.add(name="value_float", type=onnx.AttributeProto.INT, i=3)
    g = helper.make_graph([bad], "cbad", [], [vi("b", shape=[])])
    save(model_of(g), f"{out}/constant_badattr.onnx")
    two = helper.make_node("Constant", [], ["b"], name="ctwo", value_int=1, value_float=2.0)
    g = helper.make_graph([two], "ctwo", [], [vi("b", shape=[])])
    save(model_of(g), f"{out}/constant_two.onnx")


def unsupported(out):
    # Op types flowc has no legaliser for (NonZero/Unique-like data-dependent ops are supported with bound
    # inputs, so sequence and string ops stand in for "unsupported"). The Loops are supported, but their
    # bodies are not: they are skipped without being listed themselves.
    body = helper.make_graph([helper.make_node("SequenceLength", ["bx"], ["by"], name="inner_nz"),
                              helper.make_node("SequenceErase", ["by"], ["bu"])],  # unnamed: loop_a/body/SequenceErase_1
                             "body", [vi("i", TensorProto.INT64, []), vi("c", TensorProto.BOOL, []), vi("bx")],
                             [vi("c", TensorProto.BOOL, []), vi("bu")])
    nodes = [
        helper.make_node("Loop", ["m", "", "x"], ["l1"], name="loop_a", body=body),
        helper.make_node("Loop", ["m", "", "x"], ["l2"], name="loop_b", body=body),
        helper.make_node("SequenceLength", ["x"], ["nz"], name="nz"),
        helper.make_node("Add", ["nz", "nz"], ["after"], name="after_nz"),  # skipped: input unsupported
        helper.make_node("SequenceErase", ["x"], ["u"]),                    # unnamed: SequenceErase_4
        helper.make_node("LinearClassifier", ["x"], ["lc"], name="lc", domain="ai.onnx.ml",
                         coefficients=[1.0]),
    ]
    nodes += [helper.make_node("StringNormalizer", ["x"], [f"nms{i}"], name=f"nms{i}") for i in range(7)]
    g = helper.make_graph(nodes, "unsup", [vi("x"), vi("m", TensorProto.INT64, [])], [vi("after")])
    save(model_of(g, extra_opsets=[helper.make_opsetid("ai.onnx.ml", 3)]), f"{out}/unsupported.onnx")


# ---- typed fields for every dtype ------------------------------------------------------------------

# name, ONNX code, numpy dtype (None: bf16, kept as its bit pattern), values
DTYPES = [
    ("f32", TensorProto.FLOAT, np.float32, [0, 1, -2, 3.5, -4.25, 100]),
    ("u8", TensorProto.UINT8, np.uint8, [0, 1, 2, 127, 255, 100]),
    ("i8", TensorProto.INT8, np.int8, [0, 1, -2, 127, -128, 100]),
    ("u16", TensorProto.UINT16, np.uint16, [0, 1, 2, 65535, 4, 100]),
    ("i16", TensorProto.INT16, np.int16, [0, 1, -2, 32767, -32768, 100]),
    ("i32", TensorProto.INT32, np.int32, [0, 1, -2, 2**31 - 1, -2**31, 100]),
    ("i64", TensorProto.INT64, np.int64, [0, 1, -2, 2**63 - 1, -2**63, 100]),
    ("bool", TensorProto.BOOL, np.bool_, [0, 1, 1, 0, 1, 0]),
    ("f16", TensorProto.FLOAT16, np.float16, [0, 1, -2, 3.5, -4.25, 65504]),
    ("f64", TensorProto.DOUBLE, np.float64, [0, 1, -2, 3.5, -4.25, 1e300]),
    ("u32", TensorProto.UINT32, np.uint32, [0, 1, 2, 2**32 - 1, 4, 100]),
    ("u64", TensorProto.UINT64, np.uint64, [0, 1, 2, 2**64 - 1, 4, 100]),
    ("bf16", TensorProto.BFLOAT16, None, [0, 1, -2, 3.5, -4.25, 100]),
]


def as_array(np_dtype, values):
    if np_dtype is None:  # bf16: the top half of the f32 bits (these values are exact in bf16)
        return (np.array(values, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return np.array(values, dtype=np_dtype)


def typed_tensor(name, code, arr):
    t = TensorProto()
    t.name = name
    t.data_type = code
    t.dims.extend([2, 3])
    flat = arr.reshape(-1)
    if code == TensorProto.FLOAT:
        t.float_data.extend(flat.tolist())
    elif code == TensorProto.DOUBLE:
        t.double_data.extend(flat.tolist())
    elif code == TensorProto.INT64:
        t.int64_data.extend(flat.tolist())
    elif code in (TensorProto.UINT32, TensorProto.UINT64):
        t.uint64_data.extend(int(v) for v in flat)
    elif code == TensorProto.FLOAT16:
        t.int32_data.extend(flat.view(np.uint16).astype(np.int32).tolist())
    else:  # i32, i16, i8, u16, u8, bool, bf16 (bits)
        t.int32_data.extend(int(v) for v in flat)
    return t


def typed(out):
    typed_inits, raw_inits, outs = [], [], []
    for name, code, np_dtype, values in DTYPES:
        arr = as_array(np_dtype, values).reshape(2, 3)
        np.save(f"{out}/dtypes/expected_{name}.npy", arr)
        typed_inits.append(typed_tensor(f"t_{name}", code, arr))
        r = TensorProto()
        r.name, r.data_type = f"t_{name}", code
        r.dims.extend([2, 3])
        r.raw_data = arr.tobytes()
        raw_inits.append(r)
        outs.append(vi(f"t_{name}", code, [2, 3]))
    save(model_of(helper.make_graph([], "typed", [], outs, typed_inits)), f"{out}/dtypes/typed.onnx")
    save(model_of(helper.make_graph([], "raw", [], outs, raw_inits)), f"{out}/dtypes/raw.onnx")
    # Data in a field that does not belong to the dtype (int64 data in float_data).
    bad = TensorProto()
    bad.name, bad.data_type = "bad", TensorProto.INT64
    bad.dims.extend([2])
    bad.float_data.extend([1.0, 2.0])
    g = helper.make_graph([], "wrongfield", [], [vi("bad", TensorProto.INT64, [2])], [bad])
    save(model_of(g), f"{out}/dtypes/wrong_field.onnx")


# ---- external data ---------------------------------------------------------------------------------

def ext_tensor(name, location, offset=None, length=None, dims=(2, 3)):
    t = TensorProto()
    t.name, t.data_type = name, TensorProto.FLOAT
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, str(v)
    return t


def ext_model(path, tensors):
    outs = [vi(t.name, shape=list(t.dims)) for t in tensors]
    save(model_of(helper.make_graph([], "ext", [], outs, tensors)), path)


def external(out):
    d = f"{out}/ext"
    os.makedirs(f"{d}/data", exist_ok=True)
    w = np.arange(6, dtype=np.float32)
    with open(f"{d}/w.bin", "wb") as f:
        f.write(w.tobytes())
    with open(f"{d}/data/more.bin", "wb") as f:
        f.write(b"\xff" * 8 + (w * 10).tobytes())
    with open(f"{out}/secret.bin", "wb") as f:
        f.write(np.ones(6, dtype=np.float32).tobytes())
    for name, target in (("link_out.bin", "../secret.bin"), ("link_in.bin", "w.bin")):
        if os.path.lexists(f"{d}/{name}"):
            os.remove(f"{d}/{name}")
        os.symlink(target, f"{d}/{name}")
    ext_model(f"{d}/ok.onnx", [ext_tensor("w", "w.bin", 0, 24), ext_tensor("w2", "data/more.bin", 8),
                               ext_tensor("w3", "link_in.bin")])
    ext_model(f"{d}/dotdot.onnx", [ext_tensor("w", "../secret.bin")])
    ext_model(f"{d}/dotdot_inner.onnx", [ext_tensor("w", "data/../w.bin")])
    ext_model(f"{d}/absolute.onnx", [ext_tensor("w", os.path.abspath(f"{out}/secret.bin"))])
    ext_model(f"{d}/symlink.onnx", [ext_tensor("w", "link_out.bin")])
    ext_model(f"{d}/offset.onnx", [ext_tensor("w", "w.bin", 4096)])
    ext_model(f"{d}/length.onnx", [ext_tensor("w", "w.bin", 8, 24)])
    ext_model(f"{d}/size.onnx", [ext_tensor("w", "w.bin", 4)])
    ext_model(f"{d}/missing.onnx", [ext_tensor("w", "nope.bin")])
    with open(f"{d}/big.bin", "wb") as f:  # larger than its model: for the per-file size limit
        f.write(np.zeros(16384, dtype=np.float32).tobytes())
    ext_model(f"{d}/big.onnx", [ext_tensor("big", "big.bin", dims=(16384,))])
    ext_model(f"{d}/badoffset.onnx", [ext_tensor("w", "w.bin", "-4")])


# ---- nesting ---------------------------------------------------------------------------------------

def nested_ifs(depth):
    """A model whose deepest message sits at exactly `depth` (model = 1), through nested If graphs:
    model(1) > graph(2) > node > attribute > graph(5) > ... The innermost graph's output type fills
    the remainder (1 to 3 levels)."""
    levels = (depth - 3) // 3
    rest = depth - 2 - 3 * levels  # 1..3 levels below the innermost graph
    inner_out = onnx.ValueInfoProto(name="o")
    if rest >= 2:
        inner_out.type.SetInParent()
    if rest >= 3:
        inner_out.type.tensor_type.elem_type = TensorProto.FLOAT
    g = helper.make_graph([], "g0", [], [inner_out])
    for i in range(levels):
        node = helper.make_node("If", ["c"], ["o"], name=f"if{levels - 1 - i}", then_branch=g)
        outer_out = onnx.ValueInfoProto(name="o")
        g = helper.make_graph([node], f"g{i + 1}", [], [outer_out])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    assert msg_depth(m) == depth, (msg_depth(m), depth)
    return m


def nesting(out):
    for d in (64, 65, 10, 11):
        save(nested_ifs(d), f"{out}/nest{d}.onnx")


# ---- bindings --------------------------------------------------------------------------------------

def bindings(out):
    g = helper.make_graph([], "bindpass", [vi("s", TensorProto.INT64, [2]), vi("x")],
                          [vi("s", TensorProto.INT64, [2]), vi("x")])
    save(model_of(g), f"{out}/bind/passthrough.onnx")
    g = helper.make_graph([], "binddyn", [vi("s", TensorProto.INT64, ["N"])], [vi("s", TensorProto.INT64, ["N"])])
    save(model_of(g), f"{out}/bind/dynamic.onnx")
    g = helper.make_graph([helper.make_node("Reshape", ["data", "shape"], ["out"], name="r")], "reshape",
                          [vi("data"), vi("shape", TensorProto.INT64, [2])], [vi("out", shape=[3, 2])])
    save(model_of(g), f"{out}/bind/reshape.onnx")
    nodes = [
        helper.make_node("Constant", [], ["a"], name="ca", value_ints=[3]),
        helper.make_node("Constant", [], ["b"], name="cb", value_ints=[2]),
        helper.make_node("Concat", ["a", "b"], ["shape"], name="cat", axis=0),
        helper.make_node("Reshape", ["data", "shape"], ["out"], name="r"),
    ]
    g = helper.make_graph(nodes, "fold", [vi("data")], [vi("out", shape=[3, 2])])
    save(model_of(g), f"{out}/bind/fold.onnx")
    np.save(f"{out}/bind/shape.npy", np.array([3, 2], dtype=np.int64))
    np.save(f"{out}/bind/shape3.npy", np.array([3, 2, 1], dtype=np.int64))
    np.save(f"{out}/bind/shape_f.npy", np.array([3, 2], dtype=np.float32))
    with open(f"{out}/bind/shape.pb", "wb") as f:
        f.write(numpy_helper.from_array(np.array([3, 2], dtype=np.int64), "shape").SerializeToString())


# ---- tensor files (.npy, .pb) ----------------------------------------------------------------------

def npy_bytes(arr, version):
    import io
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, version=version)
    return buf.getvalue()


def tensor_files(out):
    d = f"{out}/npy"
    os.makedirs(d, exist_ok=True)
    a = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    for v in ((1, 0), (2, 0), (3, 0)):
        with open(f"{d}/v{v[0]}.npy", "wb") as f:
            f.write(npy_bytes(a, v))
    np.save(f"{d}/bool.npy", np.array([True, False, True]))
    np.save(f"{d}/i8.npy", np.array([-1, 2, -3], dtype=np.int8))
    np.save(f"{d}/u16.npy", np.array([[1, 65535]], dtype=np.uint16))
    np.save(f"{d}/f16.npy", np.array([0.5, -1.0], dtype=np.float16))
    np.save(f"{d}/u64.npy", np.array([2**64 - 1], dtype=np.uint64))
    np.save(f"{d}/scalar.npy", np.array(4.0, dtype=np.float64))
    np.save(f"{d}/empty.npy", np.zeros((0, 3), dtype=np.int32))
    np.save(f"{d}/big_endian.npy", a.astype(">f4"))
    np.save(f"{d}/fortran.npy", np.asfortranarray(a))
    np.save(f"{d}/complex.npy", np.array([1 + 2j], dtype=np.complex64))
    np.save(f"{d}/rank17.npy", np.zeros([1] * 17, dtype=np.float32))
    good = npy_bytes(a, (1, 0))
    with open(f"{d}/truncated.npy", "wb") as f:
        f.write(good[:-4])
    with open(f"{d}/trailing.npy", "wb") as f:
        f.write(good + b"\0" * 4)
    lying = bytearray(good)
    lying[8:10] = (60000).to_bytes(2, "little")
    with open(f"{d}/lying_header.npy", "wb") as f:
        f.write(bytes(lying))
    hdr_start = 10
    hdr_len = int.from_bytes(good[8:10], "little")
    bad_dict = good[:hdr_start] + good[hdr_start:hdr_start + hdr_len].replace(b"'shape'", b"'shapf'") + \
        good[hdr_start + hdr_len:]
    with open(f"{d}/bad_key.npy", "wb") as f:
        f.write(bad_dict)
    with open(f"{d}/not_npy.bin", "wb") as f:
        f.write(b"hello world, not a tensor")
    with open(f"{d}/t.pb", "wb") as f:
        f.write(numpy_helper.from_array(a, "t").SerializeToString())
    with open(f"{d}/garbage.pb", "wb") as f:
        f.write(b"\x0a\xff\xff\xff\xff\x0f")  # field 1, length far past the end


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_test_models.py OUTDIR")
    out = sys.argv[1]
    for sub in ("", "dtypes", "ext", "bind", "npy"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    for make in (tiny, passthrough, rank, dynamic, opsets, old_ir, bad_graphs, constants, unsupported, typed,
                 external, nesting, bindings, tensor_files):
        make(out)


if __name__ == "__main__":
    main()
