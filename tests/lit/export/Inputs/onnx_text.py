# Prints an ONNX model as stable text for FileCheck: onnx_text.py MODEL.onnx
#   opset <domain>:<version> / ir_version N
#   input NAME <elem type>[dims]          output NAME <elem type>[dims]
#   init NAME <elem type>[dims] = v0 v1 ... (values shown for at most 16 elements)
#   OpType(in, ...) -> (out, ...) {attr = value, ...} name=NODE
import sys

import onnx
from onnx import helper, numpy_helper

m = onnx.load(sys.argv[1])
g = m.graph
for o in m.opset_import:
    print(f"opset {o.domain or 'ai.onnx'}:{o.version}")
print(f"ir_version {m.ir_version}")


def ty(t):
    tt = t.tensor_type
    dims = "x".join(str(d.dim_value) if d.HasField("dim_value") else d.dim_param for d in tt.shape.dim)
    return f"{onnx.TensorProto.DataType.Name(tt.elem_type)}[{dims}]"


for i in g.input:
    print(f"input {i.name} {ty(i.type)}")
for t in g.initializer:
    a = numpy_helper.to_array(t)
    vals = " = " + " ".join(repr(v.item()) for v in a.ravel()) if a.size <= 16 else ""
    print(f"init {t.name} {onnx.TensorProto.DataType.Name(t.data_type)}[{'x'.join(map(str, t.dims))}]{vals}")
for n in g.node:
    attrs = ", ".join(f"{a.name} = {helper.get_attribute_value(a)!r}" for a in n.attribute)
    print(f"{n.op_type}({', '.join(n.input)}) -> ({', '.join(n.output)}) {{{attrs}}} name={n.name}")
for o in g.output:
    print(f"output {o.name} {ty(o.type)}")
