"""IR back to ONNX: every IR node becomes standard ONNX nodes that onnxruntime runs, and a set of IR nodes
becomes a self-contained ONNX model (its own inputs, outputs and initializers)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from partitioner.ir.graph import Activation, ActKind, ConvForm, Graph, Node, OpKind, Pool, ResidualAdd
from partitioner.ir.op_facts import gelu_is_tanh

_SIMPLE_ACT = {ActKind.RELU: "Relu", ActKind.SIGMOID: "Sigmoid", ActKind.HARD_SWISH: "HardSwish",
               ActKind.TANH: "Tanh", ActKind.SOFTPLUS: "Softplus"}


class _Emitter:
    def __init__(self, graph: Graph, node: Node):
        self.graph = graph
        self.node = node
        self.nodes: list[onnx.NodeProto] = []
        self.consts: dict[str, np.ndarray] = {}
        self.label = node.origin[-1] if node.origin else node.name

    def onnx(self, tensor: str) -> str:
        return self.graph.tensors[tensor].onnx_name if tensor else ""


    def const(self, step: str, value: np.ndarray) -> str:
        name = f"{self.label}__{step}"
        self.consts[name] = value
        return name

    def emit(self, op: str, inputs: list[str], output: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op, inputs, [output], name=f"{self.label}__{op}_{len(self.nodes)}",
                                           **attrs))
        return output


def _activation(e: _Emitter, act: Activation, x: str, out: str) -> str:
    if act.kind in _SIMPLE_ACT:
        return e.emit(_SIMPLE_ACT[act.kind], [x], out)
    if act.kind is ActKind.LEAKY_RELU:
        return e.emit("LeakyRelu", [x], out, alpha=act.alpha)
    if act.kind is ActKind.HARD_SIGMOID:
        return e.emit("HardSigmoid", [x], out, alpha=act.alpha, beta=act.beta)
    if act.kind is ActKind.SILU:
        return e.emit("Mul", [x, e.emit("Sigmoid", [x], f"{out}__sigmoid")], out)
    if act.kind is ActKind.MISH:
        softplus = e.emit("Softplus", [x], f"{out}__softplus")
        return e.emit("Mul", [x, e.emit("Tanh", [softplus], f"{out}__tanh")], out)
    if act.kind is ActKind.ELU:
        return e.emit("Elu", [x], out, alpha=act.alpha)
    if act.kind is ActKind.SELU:
        return e.emit("Selu", [x], out, alpha=act.alpha, gamma=act.beta)
    if act.kind in (ActKind.GELU, ActKind.GELU_TANH):
        return _gelu(e, x, out, act.kind is ActKind.GELU_TANH)
    if act.kind is ActKind.PRELU:                   # slopes per channel: [C, 1, 1] on NCHW, [C] on [N, C]
        rank = len(e.graph.tensors[e.node.outputs[0]].shape or (0, 0, 0, 0))
        slopes = np.asarray(act.slopes, np.float32).reshape((-1,) + (1,) * (rank - 2))
        return e.emit("PRelu", [x, e.const(f"prelu_slope_{len(e.nodes)}", slopes)], out)
    lo, hi = (0.0, 6.0) if act.kind is ActKind.RELU6 else (act.lo, act.hi)
    k = len(e.nodes)                             # unique constant names when a conv has two Clip steps
    bounds = [e.const(f"clip_{k}_{i}", np.array(v, np.float32)) if v is not None else ""
              for i, v in enumerate((lo, hi))]
    return e.emit("Clip", [x] + bounds, out)


def _gelu(e: _Emitter, x: str, out: str, tanh: bool) -> str:
    """Opset 17 has no Gelu: the erf form x * 0.5 * (1 + erf(x / sqrt 2)), or the tanh approximation."""
    k = len(e.nodes)                             # unique constant names when a conv has two GELU steps

    def f32(step: str, v: float) -> str:
        return e.const(f"{step}_{k}", np.array(v, np.float32))

    if tanh:
        cube = e.emit("Mul", [x, e.emit("Mul", [x, x], f"{out}__sq")], f"{out}__cube")
        inner = e.emit("Add", [x, e.emit("Mul", [cube, f32("gelu_c", 0.044715)], f"{out}__c3")],
                       f"{out}__inner")
        phi = e.emit("Tanh", [e.emit("Mul", [inner, f32("gelu_k", math.sqrt(2 / math.pi))],
                                     f"{out}__scaled")], f"{out}__tanh")
    else:
        phi = e.emit("Erf", [e.emit("Div", [x, f32("gelu_root2", math.sqrt(2.0))], f"{out}__div")],
                     f"{out}__erf")
    gate = e.emit("Add", [phi, f32("gelu_one", 1.0)], f"{out}__plus_one")
    return e.emit("Mul", [e.emit("Mul", [x, gate], f"{out}__times_x"), f32("gelu_half", 0.5)], out)


def stage_names(graph: Graph, node: Node) -> list[str]:
    """ONNX names of a fused conv's stages: the conv output, then one per epilogue step (the last is the node's
    output). They are the original model's names, so calibration ranges and QDQ scales line up with them."""
    return list(node.conv.stages) + [graph.tensors[node.outputs[0]].onnx_name]


def _fused_conv(e: _Emitter) -> None:
    node, spec = e.node, e.node.conv
    x = e.onnx(node.inputs[0])
    if spec.upsample != 1:
        scales = e.const("up_scales", np.array([1, 1, spec.upsample, spec.upsample], np.float32))
        x = e.emit("Resize", [x, "", scales], f"{e.onnx(node.outputs[0])}__up", mode="nearest",
                   coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    stages = stage_names(e.graph, node)
    steps = spec.epilogue
    out = stages[0]
    wb = [e.onnx(spec.weight)] + ([e.onnx(spec.bias)] if spec.bias else [])
    if spec.form is ConvForm.CONV and len(e.graph.tensors[node.outputs[0]].shape or ()) == 2:
        # a dense layer over a flattened map (flattened_dense.py): the conv's [N, out, 1, 1] as [N, out]
        e.emit("Flatten", [e.emit("Conv", [x] + wb, f"{out}__map", kernel_shape=list(spec.kernel),
                                  pads=list(spec.pads))], out, axis=1)
    elif spec.form is ConvForm.CONV:
        e.emit("Conv", [x] + wb, out, kernel_shape=list(spec.kernel), strides=list(spec.strides),
               pads=list(spec.pads), dilations=list(spec.dilations), group=spec.group)
    elif spec.form is ConvForm.TRANSPOSED:        # the weight back to ConvTranspose's [in, out, kh, kw]
        w = e.const("convT_weight", np.ascontiguousarray(e.graph.const(spec.weight).transpose(1, 0, 2, 3)))
        e.emit("ConvTranspose", [x, w] + wb[1:], out, kernel_shape=list(spec.kernel), strides=list(spec.strides))
    else:
        e.emit("Gemm", [x] + wb, out, transB=1)
    for i, step in enumerate(steps):
        x, out = out, stages[i + 1]
        if isinstance(step, Activation):
            _activation(e, step, x, out)
        elif isinstance(step, ResidualAdd):
            e.emit("Add", [x, e.onnx(step.tensor)], out)
        elif isinstance(step, Pool) and step.pad_zero:
            t, left, b, r = step.pads
            pads = e.const(f"pads{i}", np.array([0, 0, t, left, 0, 0, b, r], np.int64))
            padded = e.emit("Pad", [x, pads], f"{out}__padded")
            e.emit("MaxPool", [padded], out, kernel_shape=list(step.kernel), strides=list(step.strides),
                   ceil_mode=int(step.ceil_mode))
        elif isinstance(step, Pool):
            e.emit("MaxPool", [x], out, kernel_shape=list(step.kernel), strides=list(step.strides),
                   pads=list(step.pads), ceil_mode=int(step.ceil_mode))


def lower_node(graph: Graph, node: Node) -> tuple[list[onnx.NodeProto], dict[str, np.ndarray]]:
    e = _Emitter(graph, node)
    if node.conv is not None:
        _fused_conv(e)
    elif node.kind is OpKind.GELU:               # the IR's Gelu (smooth_activations.py) in opset 17's ops
        _gelu(e, e.onnx(node.inputs[0]), e.onnx(node.outputs[0]), gelu_is_tanh(node))
    else:
        proto = helper.make_node(node.op_type, [e.onnx(t) for t in node.inputs], [e.onnx(t) for t in node.outputs],
                                 name=node.label, domain=node.domain or None)
        proto.attribute.extend(node.attrs.values())
        e.nodes.append(proto)
    return e.nodes, e.consts


def _value_info(graph: Graph, tensor: str) -> onnx.ValueInfoProto:
    t = graph.tensors[tensor]
    shape = None if t.shape is None else [d if d is not None else None for d in t.shape]
    return helper.make_tensor_value_info(t.onnx_name, t.elem_type, shape)


EXTERNAL_MIN_BYTES = 4096
_ALIGN = 64


def _external(name: str, array: np.ndarray, f, location: str) -> onnx.TensorProto:
    """A TensorProto whose bytes live in `f` at a 64-byte aligned offset; no copy through protobuf."""
    array = np.ascontiguousarray(array)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    pad = (-f.tell()) % _ALIGN
    f.write(b"\0" * pad)
    offset = f.tell()
    f.write(memoryview(array).cast("B"))
    t = onnx.TensorProto(name=name, data_type=helper.np_dtype_to_tensor_dtype(array.dtype), dims=array.shape,
                         data_location=onnx.TensorProto.EXTERNAL)
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(array.nbytes))):
        entry = t.external_data.add()
        entry.key, entry.value = k, v
    return t


def to_model(graph: Graph, nodes: list[str], inputs: list[str], outputs: list[str], name: str,
             opset_imports: list[onnx.OperatorSetIdProto], weights_file: Path | None = None) -> onnx.ModelProto:
    """With `weights_file`, initializers of 4 KiB and more go there as ONNX external data (next to the model)."""
    protos: list[onnx.NodeProto] = []
    consts: dict[str, np.ndarray] = {}
    used: list[str] = []
    for n in nodes:
        node = graph.nodes[n]
        p, c = lower_node(graph, node)
        protos.extend(p)
        consts.update(c)
        used.extend(t for t in node.all_inputs if graph.const(t) is not None)
    arrays = [(graph.tensors[t].onnx_name, graph.tensors[t].data) for t in dict.fromkeys(used)]
    arrays += list(consts.items())
    g = helper.make_graph(protos, name, [_value_info(graph, t) for t in inputs],
                          [_value_info(graph, t) for t in outputs])
    big = [(k, v) for k, v in arrays if weights_file is not None and v.nbytes >= EXTERNAL_MIN_BYTES]
    g.initializer.extend(numpy_helper.from_array(v, k) for k, v in arrays
                         if weights_file is None or v.nbytes < EXTERNAL_MIN_BYTES)
    if big:
        with open(weights_file, "wb") as f:
            g.initializer.extend(_external(k, v, f, weights_file.name) for k, v in big)
    model = helper.make_model(g, opset_imports=list(opset_imports), producer_name="fpga-partitioner")
    model.ir_version = 8
    return model
