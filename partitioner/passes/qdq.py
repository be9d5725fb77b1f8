"""QDQ models (onnxruntime `quantize_static`, QDQ format): a QuantizeLinear -> DequantizeLinear pair on an
activation is removed and its scale kept for the engine, so the model runs on the engine's integer semantics
with the scales it was quantised with. The engine is symmetric int8: a pair with a zero point or uint8 codes
(onnxruntime's default, `ActivationSymmetric` off) gives the symmetric scale that covers the same range, its
widest side over 127 (one bit coarser at most, on a one-sided range). A one-sided pair also becomes a Clip to its
range: onnxruntime's quantiser drops the Relu or Clip before such a pair, whose codes then do the clamping; the
Clip fuses into the layer before it as the requantiser's bounds. A two-sided range's narrower side (the
calibration's extreme, not an activation) is not clamped, so an activation behind it still fuses; nor is a model
input (a picture in [0, 1] is already in its range; a clamp there would cost a layer of its own).
Weight DequantizeLinear nodes were already folded into float weights at import (constant folding); the engine
quantises them again per channel, which reproduces symmetric int8 weights exactly.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from partitioner.ir.graph import Graph, Node, OpKind


def _scalar(graph: Graph, name: str) -> float | None:
    v = graph.const(name) if name else None
    return float(np.asarray(v).reshape(())) if v is not None and np.asarray(v).size == 1 else None


def represented_range(scale: float, zero_point: np.ndarray) -> tuple[float, float]:
    """What a QDQ pair of this scale and zero point (its dtype: int8 or uint8) represents:
    [(qmin - zp) * scale, (qmax - zp) * scale]."""
    info = np.iinfo(zero_point.dtype)
    zp = int(np.asarray(zero_point).reshape(()))
    return (info.min - zp) * scale, (info.max - zp) * scale


def _clip(graph: Graph, src: str, dst: str, lo: float, hi: float, origin: list[str]) -> Node:
    bounds = [graph.new_const(f"{dst}_{side}", np.array(v, np.float32)) for side, v in (("min", lo), ("max", hi))]
    return Node(graph.names.fresh(f"{dst}_range"), OpKind.CLIP, "Clip", [src] + bounds, [dst], origin)


# ops whose every output value is one of their inputs' values (a max, a copy): a range their inputs keep, they keep
_RANGE_KEEPING = (OpKind.MAXPOOL, OpKind.CONCAT, OpKind.RESIZE)


def _within(graph: Graph, tensor: str, lo: float, hi: float, clamped: dict[str, tuple[float, float]]) -> bool:
    """Whether `tensor` already lies in [lo, hi]: a clamp made here, or a max pool, concat or nearest resize of such
    tensors (SPP's and a ResNet stem's pools between two pairs of one range: no second clamp)."""
    if tensor in clamped:
        return lo <= clamped[tensor][0] and clamped[tensor][1] <= hi
    node = graph.producer(tensor)
    if node is None or node.kind not in _RANGE_KEEPING or (node.kind is OpKind.RESIZE
                                                             and node.attr("mode", b"nearest") != b"nearest"):
        return False
    data = node.inputs[:1] if node.kind is OpKind.RESIZE else [t for t in node.inputs if t]
    return all(_within(graph, t, lo, hi, clamped) for t in data)


def absorb_qdq(graph: Graph) -> Graph:
    converted = 0
    clamped: dict[str, tuple[float, float]] = {}
    for q in list(graph.nodes.values()):
        if q.kind is not OpKind.OTHER or q.op_type != "QuantizeLinear" or graph.const(q.inputs[0]) is not None:
            continue
        users = graph.consumers(q.outputs[0])
        if len(users) != 1 or users[0].op_type != "DequantizeLinear" or q.outputs[0] in graph.outputs:
            continue
        dq = users[0]
        scale, dq_scale = _scalar(graph, q.inputs[1]), _scalar(graph, dq.inputs[1])
        zp = np.asarray(graph.const(q.inputs[2]) if len(q.inputs) > 2 and q.inputs[2] else np.uint8(0))
        dq_zp = np.asarray(graph.const(dq.inputs[2]) if len(dq.inputs) > 2 and dq.inputs[2] else np.uint8(0))
        if scale is None or scale != dq_scale or dq.outputs[0] in graph.outputs or zp.size != 1 \
                or zp.dtype not in (np.int8, np.uint8) or zp.dtype != dq_zp.dtype or not np.array_equal(zp, dq_zp):
            continue
        src, dst = q.inputs[0], dq.outputs[0]
        src_name, dst_name = graph.tensors[src].onnx_name, graph.tensors[dst].onnx_name
        lo = hi = None
        if zp.dtype != np.int8 or np.any(zp != 0):
            converted += 1
            lo, hi = represented_range(scale, zp)
            scale = max(-lo, hi) / 127.0
            if lo < 0.0 < hi or src in graph.inputs or _within(graph, src, lo, hi, clamped):
                lo = hi = None              # two-sided, or already in range: no clamp (a model input's is its range)
        if lo is not None:                  # one-sided: the Relu or Clip the quantiser folded into the pair
            graph.replace([q.name, dq.name], _clip(graph, src, dst, lo, hi, q.origin + dq.origin))
            clamped[dst] = (lo, hi)
        else:
            for user in graph.consumers(dst):
                user.inputs = [src if t == dst else t for t in user.inputs]
                user.implicit_inputs = [src if t == dst else t for t in user.implicit_inputs]
            del graph.nodes[q.name]
            del graph.nodes[dq.name]
            graph.touch()
        graph.fixed_scales[dst_name if lo is not None else src_name] = scale
        graph.absorbed_qdq[dst_name] = (src_name, lo, hi)
    if converted:
        graph.warnings.append(f"QDQ model with asymmetric or uint8 activations: the engine is symmetric int8, so each "
                              f"of those {converted} Q/DQ pairs gives the symmetric scale covering its range (at most "
                              "one bit coarser) and, where that range is one-sided, a clamp to it")
    graph.prune_tensors()
    return graph


def strip_absorbed_qdq(model: onnx.ModelProto, pairs: dict[str, tuple[str, float | None, float | None]]) -> int:
    """Takes out of an ONNX `model`, in place, the activation Q/DQ pairs `absorb_qdq` absorbed (`pairs`: the
    graph's `absorbed_qdq`, each pair's DequantizeLinear output -> its QuantizeLinear input and the clamp it became,
    if any): the float model the partition computes, which `--verify` checks it against (the engine applies their
    scales in int8; the int8 report measures against the QDQ original). Returns the pairs taken out."""
    g = model.graph
    producer = {t: n for n in g.node for t in n.output}
    standing: dict[int, list[onnx.NodeProto]] = {}      # a pair's Q and DQ (by id) -> the nodes that stand there
    renames: dict[str, str] = {}
    gone: set[str] = set()
    for dq in g.node:
        if dq.op_type != "DequantizeLinear" or dq.output[0] not in pairs:
            continue
        src, lo, hi = pairs[dq.output[0]]
        q = producer.get(dq.input[0])
        if q is None or q.op_type != "QuantizeLinear" or q.input[0] != src:
            continue
        standing[id(q)] = []
        gone.add(q.output[0])
        if lo is None:
            standing[id(dq)] = []
            renames[dq.output[0]] = src
            gone.add(dq.output[0])
            continue
        bounds = [f"{dq.output[0]}__{side}" for side in ("min", "max")]
        g.initializer.extend(numpy_helper.from_array(np.array(v, np.float32), n) for n, v in zip(bounds, (lo, hi)))
        standing[id(dq)] = [onnx.helper.make_node("Clip", [src] + bounds, [dq.output[0]])]
    kept = [m for n in g.node for m in standing.get(id(n), [n])]
    for n in kept:
        for i, t in enumerate(n.input):
            n.input[i] = renames.get(t, t)
    del g.node[:]
    g.node.extend(kept)
    kept_info = [v for v in g.value_info if v.name not in gone]
    del g.value_info[:]
    g.value_info.extend(kept_info)
    return len(standing) // 2
