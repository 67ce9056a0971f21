#!/usr/bin/python3
"""onnx_export_models.py — ONNX models for the `--emit onnx` tests, written with onnx.helper.

  onnx_export_models.py ops OUT.onnx      one input x: f32[2, 3, 6, 7], values in (-0.9, 0.9), and one
                                          output per core op that the exporter maps (about 90): unary
                                          math, arithmetic, comparisons and logic, casts, reductions, conv
                                          (stride 2, padding, grouped and dilated), conv_transpose, pools,
                                          shape ops (a slice with a negative step that runs past element
                                          0), gathers and scatters, resize, topk, one_hot, einsum, det,
                                          grid_sample, roi_align, reverse_sequence

  onnx_export_models.py qdq OUT.onnx      a QDQ model as PyTorch and onnxruntime's quantize_static write
                                          them: x f32[2, 3, 11, 13] -> Q/DQ (u8, zero point 131) -> Conv (DQ
                                          of per-channel i8 weights, f32 bias, 5 channels, stride 2, pad 1)
                                          -> Relu -> Q/DQ (u8) -> MaxPool -> Q/DQ -> Flatten -> MatMul (DQ of
                                          per-column i8 weights with zero points, K = 45) -> Add bias -> Q/DQ (i8,
                                          zero point -3), the output f32; qdq_output_step() is its scale. The
                                          weights use 7 bits (quantize_static's reduce_range), within +-64:
                                          onnxruntime's u8 x s8 kernels on CPUs without VNNI add two products
                                          in a saturating i16, exact only then

  onnx_export_models.py mlp OUT.onnx      x f32[5, 100] -> MatMul [100, 64] -> Add -> Relu -> MatMul [64, 70]:
                                          both weights large enough (K*N >= 4096) for --quantize int8-dynamic

tests/lit/export uses it for the import -> export -> import round trip, tests/e2e/onnx_export.py to run
its export in onnxruntime. Awkward sizes throughout: 3 and 5 channels, 6x7 maps, K = 42.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def ops_model():
    rng = np.random.default_rng(7)
    nodes, inits, outs = [], [], []

    def const(name, arr):
        if all(t.name != name for t in inits):
            inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(op, ins, n_out=1, **attrs):
        name = f"{op.lower()}{len(nodes)}"
        o = [f"{name}_y{i}" for i in range(n_out)]
        nodes.append(helper.make_node(op, ins, o, name=name, **attrs))
        return o if n_out > 1 else o[0]

    def out(v):
        outs.append(v)
        return v

    x = "x"
    pos = node("Add", [node("Abs", [x]), const("half", np.float32(0.5))])
    # Unary math on x (|x| < 0.9, so asin, acos, atanh are defined) and on pos > 0.
    for op in ["Neg", "Abs", "Sign", "Ceil", "Floor", "Round", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh",
               "Cosh", "Tanh", "Asinh", "Atanh", "Erf", "Sigmoid", "Softplus", "Relu", "IsNaN"]:
        out(node(op, [x]))
    out(node("IsInf", [x], detect_negative=0))
    for op in ["Sqrt", "Log", "Reciprocal", "Exp"]:
        out(node(op, [pos]))
    out(node("Acosh", [node("Add", [pos, const("one", np.float32(1))])]))
    # Binary arithmetic, comparisons, logic, select.
    for op in ["Add", "Sub", "Mul", "Div", "Max", "Min"]:
        out(node(op, [x, pos]))
    out(node("Pow", [pos, x]))
    out(node("Mod", [x, pos], fmod=1))
    less = out(node("Less", [x, const("thr", np.float32(0.1))]))
    for op in ["Equal", "LessOrEqual", "Greater", "GreaterOrEqual"]:
        out(node(op, [node("Round", [node("Mul", [x, const("ten", np.float32(3))])]), const("zero", np.float32(0))]))
    gt = node("Greater", [x, const("thr2", np.float32(-0.2))])
    for op in ["And", "Or", "Xor"]:
        out(node(op, [less, gt]))
    out(node("Not", [less]))
    out(node("Where", [less, x, pos]))
    # Casts, integer ops.
    xi = out(node("Cast", [node("Mul", [x, const("hundred", np.float32(100))])], to=TensorProto.INT32))
    out(node("Mul", [xi, const("i3", np.int32(3))]))
    u = node("Cast", [node("Mul", [pos, const("k40", np.float32(40))])], to=TensorProto.UINT8)
    out(node("BitShift", [u, const("sh", np.uint8(2))], direction="LEFT"))
    out(node("BitShift", [u, const("sh2", np.uint8(1))], direction="RIGHT"))
    # Reductions and normalisations.
    out(node("ReduceSum", [x, const("ax13", np.array([1, 3], np.int64))], keepdims=1))
    out(node("ReduceMean", [x], axes=[2], keepdims=0))
    out(node("ReduceMax", [x], axes=[-1], keepdims=1))
    out(node("ReduceMin", [x], axes=[0, 2], keepdims=0))
    out(node("ReduceProd", [pos], axes=[1], keepdims=1))
    out(node("ArgMax", [x], axis=2, keepdims=0))
    out(node("ArgMin", [x], axis=1, select_last_index=1))
    out(node("Softmax", [x], axis=1))
    out(node("LogSoftmax", [x], axis=-1))
    ln = node("LayerNormalization", [x, const("ln_s", rng.random(7, np.float32) + 0.5),
                                     const("ln_b", rng.random(7, np.float32))], axis=-1, epsilon=1e-3)
    out(ln)
    out(node("CumSum", [x, const("ax2", np.int64(2))], exclusive=1, reverse=1))
    # Convolutions, pools, matmul.
    w = const("conv_w", rng.standard_normal((5, 3, 3, 3), np.float32) * 0.3)
    out(node("Conv", [x, w, const("conv_b", rng.standard_normal(5, np.float32))], strides=[2, 2], pads=[1, 1, 1, 1]))
    out(node("Conv", [x, const("dw_w", rng.standard_normal((3, 1, 3, 3), np.float32))], group=3, dilations=[2, 2],
             pads=[2, 1, 2, 1]))
    out(node("ConvTranspose", [x, const("ct_w", rng.standard_normal((3, 4, 3, 3), np.float32) * 0.3)], strides=[2, 2],
             pads=[1, 1, 1, 1], output_padding=[1, 0]))
    mp, idx = node("MaxPool", [x], 2, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
    out(mp)
    out(idx)
    out(node("AveragePool", [x], kernel_shape=[2, 3], strides=[2, 1], pads=[1, 0, 0, 1], count_include_pad=1))
    flat = node("Reshape", [x, const("shape_2_3_42", np.array([2, 3, 42], np.int64))])
    out(node("MatMul", [flat, const("mm_w", rng.standard_normal((42, 5), np.float32) * 0.2)]))
    # Data movement.
    out(node("Transpose", [x], perm=[0, 2, 3, 1]))
    out(node("Expand", [node("ReduceMean", [x], axes=[0, 2, 3], keepdims=0), const("ex_shape", np.array([2, 3], np.int64))]))
    out(node("Concat", [x, pos], axis=1))
    out(node("Slice", [x, const("sl_s", np.array([5, 0], np.int64)), const("sl_e", np.array([-100, 7], np.int64)),
                       const("sl_a", np.array([2, 3], np.int64)), const("sl_p", np.array([-2, 3], np.int64))]))
    out(node("Pad", [x, const("pads", np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64))], mode="reflect"))
    out(node("Pad", [x, const("pads2", np.array([0, 1, 0, 0, 0, 0, 1, 0], np.int64)), const("pv", np.float32(0.5))]))
    out(node("Pad", [x, const("pads3", np.array([0, 0, 2, 0, 0, 0, 0, 1], np.int64))], mode="edge"))
    out(node("Gather", [x, const("g_idx", np.array([[0, 2], [1, -1]], np.int64))], axis=1))
    out(node("GatherElements", [x, const("ge_idx", rng.integers(0, 7, (2, 3, 6, 2)).astype(np.int64))], axis=3))
    out(node("GatherND", [x, const("gnd_idx", np.array([[0, 1], [1, 2]], np.int64))]))
    out(node("ScatterElements", [x, const("se_idx", rng.integers(0, 3, (2, 2, 6, 7)).astype(np.int64)),
                                 const("se_upd", rng.standard_normal((2, 2, 6, 7), np.float32))], axis=1, reduction="add"))
    out(node("ScatterND", [x, const("snd_idx", np.array([[1, 0], [0, 2]], np.int64)),
                           const("snd_upd", rng.standard_normal((2, 6, 7), np.float32))]))
    # Resampling and the rest.
    out(node("Resize", [x, "", const("rs_scales", np.array([1, 1, 1.5, 2], np.float32))], mode="linear"))
    out(node("Resize", [x, "", "", const("rs_sizes", np.array([2, 3, 4, 5], np.int64))], mode="nearest",
             coordinate_transformation_mode="asymmetric", nearest_mode="floor"))
    # Cubic at half_pixel: onnxruntime 1.30's cubic with align_corners differs from the ONNX reference
    # (onnx.backend.test.case.node.resize.interpolate_nd) by up to 0.53 at these scales; flowc agrees with it.
    out(node("Resize", [x, "", const("rs_scales2", np.array([1, 1, 2, 1.5], np.float32))], mode="cubic"))
    vals, inds = node("TopK", [x, const("k3", np.array([3], np.int64))], 2, axis=-1)
    out(vals)
    out(inds)
    out(node("OneHot", [const("oh_idx", np.array([0, 4, 2, 1], np.int64)), const("oh_depth", np.int64(5)),
                        const("oh_vals", np.array([-1, 2], np.float32))], axis=0))
    x2 = node("Reshape", [x, const("shape_6_42", np.array([6, 42], np.int64))])
    out(node("Einsum", [x2, const("es_w", rng.standard_normal((42, 4), np.float32) * 0.2)], equation="ij,jk->ik"))
    sq = node("Slice", [x, const("sq_s", np.array([0, 0], np.int64)), const("sq_e", np.array([3, 3], np.int64)),
                        const("sq_a", np.array([2, 3], np.int64))])
    out(node("Det", [node("Add", [sq, const("eye3", np.eye(3, dtype=np.float32))])]))
    out(node("GridSample", [x, const("grid", rng.uniform(-1.1, 1.1, (2, 4, 5, 2)).astype(np.float32))]))
    out(node("RoiAlign", [x, const("rois", np.array([[0, 0, 3, 3], [1, 1.5, 4.5, 5]], np.float32)),
                          const("roi_b", np.array([0, 1], np.int64))], output_height=2, output_width=3, sampling_ratio=2))
    x3 = node("Reshape", [x, const("shape_6_7_6", np.array([6, 7, 6], np.int64))])
    out(node("ReverseSequence", [x3, const("seq", np.array([1, 2, 3, 4, 5, 6, 6], np.int64))], time_axis=0,
             batch_axis=1))

    xin = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 6, 7])
    outputs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs]
    graph = helper.make_graph(nodes, "ops", [xin], outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    # The graph outputs get the inferred types (shape inference fills in those it declared undefined).
    inferred = {vi.name: vi for vi in model.graph.value_info}
    for o in model.graph.output:
        if o.name in inferred:
            o.CopyFrom(inferred[o.name])
    onnx.checker.check_model(model, full_check=True)
    return model


QDQ_OUT_SCALE = 0.061


def qdq_model():
    rng = np.random.default_rng(5)
    nodes, inits = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def qdq(x, name, scale, zp, dtype):
        s, z = const(f"{name}_s", np.float32(scale)), const(f"{name}_z", np.array(zp, dtype))
        nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [f"{name}_q"], name=f"{name}_Q"))
        nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", s, z], [f"{name}_dq"], name=f"{name}_DQ"))
        return f"{name}_dq"

    def weight(name, w, scales, zps, axis):
        shape = [1] * w.ndim
        shape[axis] = -1
        q = np.clip(np.round(w / scales.reshape(shape)) + zps.reshape(shape), -128, 127).astype(np.int8)
        nodes.append(helper.make_node("DequantizeLinear", [const(f"{name}_q", q), const(f"{name}_s", scales.astype(np.float32)),
                                                           const(f"{name}_z", zps.astype(np.int8))], [f"{name}_dq"],
                                      name=f"{name}_DQ", axis=axis))
        return f"{name}_dq"

    x = qdq("x", "in", 0.0235, 131, np.uint8)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32) * 0.4
    ws = np.abs(w).reshape(5, -1).max(axis=1) / 64
    wq = weight("conv_w", w, ws, np.zeros(5, np.int64), 0)
    nodes.append(helper.make_node("Conv", [x, wq, const("conv_b", rng.standard_normal(5).astype(np.float32) * 0.3)],
                                  ["conv"], name="conv", strides=[2, 2], pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Relu", ["conv"], ["relu"], name="relu"))
    r = qdq("relu", "act", 0.047, 0, np.uint8)
    nodes.append(helper.make_node("MaxPool", [r], ["pool"], name="pool", kernel_shape=[2, 2], strides=[2, 2]))
    p = qdq("pool", "pool", 0.047, 0, np.uint8)
    nodes.append(helper.make_node("Flatten", [p], ["flat"], name="flat"))
    wm = rng.standard_normal((45, 7)).astype(np.float32) * 0.2
    zm = rng.integers(-3, 4, 7)
    sm = np.abs(wm).max(axis=0) / 61  # |q| <= 61 + |zm| <= 64
    mq = weight("fc_w", wm, sm, zm, 1)
    nodes.append(helper.make_node("MatMul", ["flat", mq], ["mm"], name="fc"))
    nodes.append(helper.make_node("Add", ["mm", const("fc_b", rng.standard_normal(7).astype(np.float32) * 0.1)], ["fc"],
                                  name="fc_bias"))
    y = qdq("fc", "out", QDQ_OUT_SCALE, -3, np.int8)
    nodes.append(helper.make_node("Identity", [y], ["y"], name="y"))
    # a global average pool of the activations: flowc's quantised mean, exported in QDQ form
    nodes.append(helper.make_node("GlobalAveragePool", [r], ["gap"], name="gap"))
    g = qdq("gap", "gap", 0.047, 0, np.uint8)
    nodes.append(helper.make_node("Identity", [g], ["g"], name="g"))
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 11, 13])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 7]),
                               helper.make_tensor_value_info("g", TensorProto.FLOAT, [2, 5, 1, 1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def qdq_input():
    return np.random.default_rng(9).uniform(-3, 3, (2, 3, 11, 13)).astype(np.float32)


def ops_input():
    return np.random.default_rng(3).uniform(-0.9, 0.9, (2, 3, 6, 7)).astype(np.float32)


def mlp_model():
    rng = np.random.default_rng(2)
    inits = [numpy_helper.from_array(rng.standard_normal((100, 64)).astype(np.float32) * 0.1, "w1"),
             numpy_helper.from_array(rng.standard_normal(64).astype(np.float32) * 0.1, "b1"),
             numpy_helper.from_array(rng.standard_normal((64, 70)).astype(np.float32) * 0.1, "w2")]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
             helper.make_node("Add", ["h", "b1"], ["hb"], name="fc1_bias"),
             helper.make_node("Relu", ["hb"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2")]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 100])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 70])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


MODELS = {"ops": ops_model, "qdq": qdq_model, "mlp": mlp_model}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in MODELS:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(MODELS)} OUT.onnx")
    onnx.save(MODELS[sys.argv[1]](), sys.argv[2])
