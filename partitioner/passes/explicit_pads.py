"""`auto_pad` (SAME_UPPER, SAME_LOWER, VALID: keras2onnx and TF exporters write it even with static shapes) turned
into explicit `pads` on Conv, MaxPool and AveragePool wherever the shapes are static, so every later pass and the
engine see one spelling."""
from __future__ import annotations

from onnx import helper

from partitioner.ir.graph import Graph, Node
from partitioner.ir.op_facts import attr_text

PADDED_OPS = {"Conv", "MaxPool", "AveragePool"}


def explicit_pads(graph: Graph) -> Graph:
    for node in list(graph.nodes.values()):
        if node.op_type not in PADDED_OPS or node.domain not in ("", "ai.onnx"):
            continue
        auto = attr_text(node.attr("auto_pad", b"NOTSET"))
        if auto == "NOTSET":
            continue
        pads = _pads(node, graph, auto)
        if pads is None:
            continue
        node.attrs.pop("auto_pad")
        node.attrs["pads"] = helper.make_attribute("pads", pads)
    return graph


def _pads(node: Node, graph: Graph, auto: str) -> list[int] | None:
    """ONNX's rule: SAME pads so that out = ceil(in / stride), the odd pixel at the end (UPPER) or the start."""
    x = graph.tensors[node.inputs[0]]
    if not x.is_static or len(x.shape) != 4:
        return None
    if node.op_type == "Conv":
        w = graph.const(node.inputs[1]) if len(node.inputs) > 1 else None
        if w is None or w.ndim != 4:
            return None
        kernel = list(w.shape[2:])
    else:
        kernel = list(node.attr("kernel_shape", []))
    if len(kernel) != 2:
        return None
    if auto == "VALID":
        return [0, 0, 0, 0]
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        return None
    strides = list(node.attr("strides", [1, 1]))
    dil = list(node.attr("dilations", [1, 1]))
    total = []
    for i in range(2):
        size = x.shape[2 + i]
        out = -(-size // strides[i])
        total.append(max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - size))
    small = [t // 2 for t in total]
    big = [t - s for t, s in zip(total, small)]
    if auto == "SAME_UPPER":
        return [small[0], small[1], big[0], big[1]]
    return [big[0], big[1], small[0], small[1]]
