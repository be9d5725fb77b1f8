"""float16 and bfloat16 models imported as float32: the engine quantises from float32, and onnxruntime's CPU
kernels compute most float16 ops by casting to float32 and back around each op anyway. The model's interface is
kept: a float16 input is cast to float32 where it enters, a float16 output cast back where it leaves, so the
partitioned model takes and gives what the original does (a bfloat16 model's take and give float32: Python has no
bfloat16 arrays). Inside, every float16 constant, attribute tensor and cast target is widened; the casts that then
cast float32 to float32 are removed by the IR's clean-up."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LOW_PRECISION = {TensorProto.FLOAT16: "float16", TensorProto.BFLOAT16: "bfloat16"}
_TYPE_ATTRS = {"Cast": "to", "EyeLike": "dtype", "RandomNormal": "dtype", "RandomNormalLike": "dtype",
               "RandomUniform": "dtype", "RandomUniformLike": "dtype", "Bernoulli": "dtype"}


def _widened(t: TensorProto) -> TensorProto:
    return numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name)


def _widen_value(vi: onnx.ValueInfoProto) -> bool:
    t = vi.type.tensor_type
    if t.elem_type in LOW_PRECISION:
        t.elem_type = TensorProto.FLOAT
        return True
    return False


def _widen_graph(g: onnx.GraphProto, counts: dict[str, int]) -> None:
    """Constants, attributes, cast targets and (for a body) the declared types of `g` and its bodies."""
    for i, t in enumerate(g.initializer):
        if t.data_type in LOW_PRECISION:
            g.initializer[i].CopyFrom(_widened(t))
            counts["constants"] += 1
    for vi in g.value_info:
        _widen_value(vi)
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type in LOW_PRECISION:
                a.t.CopyFrom(_widened(a.t))
                counts["constants"] += 1
            elif a.type == onnx.AttributeProto.TENSORS:
                for k, t in enumerate(a.tensors):
                    if t.data_type in LOW_PRECISION:
                        a.tensors[k].CopyFrom(_widened(t))
                        counts["constants"] += 1
            elif a.type == onnx.AttributeProto.GRAPH:
                _widen_body(a.g, counts)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for body in a.graphs:
                    _widen_body(body, counts)
            elif a.type == onnx.AttributeProto.INT and _TYPE_ATTRS.get(node.op_type) == a.name \
                    and a.i in LOW_PRECISION:
                a.i = TensorProto.FLOAT
                counts["casts"] += 1


def _widen_body(g: onnx.GraphProto, counts: dict[str, int]) -> None:
    for vi in list(g.input) + list(g.output):
        _widen_value(vi)
    _widen_graph(g, counts)


def _rename_reads(g: onnx.GraphProto, old: str, new: str) -> None:
    """Every read of `old` in `g` and in the bodies nested in it (which may read the outer scope by name)."""
    for node in g.node:
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new
        for a in node.attribute:
            for body in ([a.g] if a.type == onnx.AttributeProto.GRAPH else
                         list(a.graphs) if a.type == onnx.AttributeProto.GRAPHS else []):
                if old not in {vi.name for vi in body.input}:      # a body input of that name shadows it
                    _rename_reads(body, old, new)


def _names(g: onnx.GraphProto) -> set[str]:
    return {x for n in g.node for x in list(n.input) + list(n.output)} | {vi.name for vi in g.input} \
        | {t.name for t in g.initializer}


def _keep_interface(g: onnx.GraphProto, counts: dict[str, int]) -> None:
    """A float16 input or output keeps its type, cast to or from float32 at the edge; a bfloat16 one becomes
    float32 (numpy and onnxruntime's Python API have no bfloat16 arrays to feed or take)."""
    used = _names(g)

    def fresh(hint: str) -> str:
        name, k = hint, 1
        while name in used:
            name, k = f"{hint}_{k}", k + 1
        used.add(name)
        return name

    producer = {o: n for n in g.node for o in n.output if o}
    constants = {t.name for t in g.initializer}
    front: list[onnx.NodeProto] = []
    back: list[onnx.NodeProto] = []
    for vi, is_input in [(vi, True) for vi in g.input] + [(vi, False) for vi in g.output]:
        elem = vi.type.tensor_type.elem_type
        if elem not in LOW_PRECISION or vi.name in constants or not is_input and vi.name not in producer \
                and elem != TensorProto.BFLOAT16:
            continue
        counts["inputs" if is_input else "outputs"] += 1
        if elem == TensorProto.BFLOAT16:
            _widen_value(vi)
            continue
        wide = fresh(f"{vi.name}_float32")
        _rename_reads(g, vi.name, wide)
        if is_input:
            front.append(helper.make_node("Cast", [vi.name], [wide], name=fresh(f"{vi.name}_to_float32"),
                                          to=TensorProto.FLOAT))
        else:
            node = producer[vi.name]
            node.output[list(node.output).index(vi.name)] = wide
            back.append(helper.make_node("Cast", [wide], [vi.name], name=fresh(f"{vi.name}_to_{LOW_PRECISION[elem]}"),
                                         to=elem))
    nodes = front + list(g.node) + back
    del g.node[:]
    g.node.extend(nodes)


def widen_to_float32(model: onnx.ModelProto) -> dict[str, int]:
    """Widens `model` in place; the counts of what changed (all zero for a float32 model)."""
    g = model.graph
    counts = {"constants": 0, "casts": 0, "inputs": 0, "outputs": 0}
    _widen_graph(g, counts)
    _keep_interface(g, counts)
    if any(counts.values()):
        del g.value_info[:]                  # inferred again, in float32
    return counts


def model_precision(model: onnx.ModelProto) -> str:
    """'float16' or 'bfloat16' when the model computes in that type (its floating inputs, outputs or weights),
    else 'float32'."""
    g = model.graph
    for elem in [vi.type.tensor_type.elem_type for vi in list(g.input) + list(g.output)] + \
            [t.data_type for t in g.initializer]:
        if elem in LOW_PRECISION:
            return LOW_PRECISION[elem]
    return "float32"
