"""QDQ models (onnxruntime `quantize_static`, QDQ format): a QuantizeLinear -> DequantizeLinear pair on an
activation is removed and its scale kept for the engine, so the model runs on the engine's integer semantics
with the scales it was quantised with. Weight DequantizeLinear nodes were already folded into float weights
at import (constant folding); the engine quantises them again per channel, which reproduces symmetric int8
weights exactly.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from partitioner.ir.graph import Graph, OpKind


def _scalar(graph: Graph, name: str) -> float | None:
    v = graph.const(name) if name else None
    return float(np.asarray(v).reshape(())) if v is not None and np.asarray(v).size == 1 else None


def absorb_qdq(graph: Graph) -> Graph:
    warned = False
    for q in list(graph.nodes.values()):
        if q.kind is not OpKind.OTHER or q.op_type != "QuantizeLinear" or graph.const(q.inputs[0]) is not None:
            continue
        users = graph.consumers(q.outputs[0])
        if len(users) != 1 or users[0].op_type != "DequantizeLinear" or q.outputs[0] in graph.outputs:
            continue
        dq = users[0]
        scale, dq_scale = _scalar(graph, q.inputs[1]), _scalar(graph, dq.inputs[1])
        zp = graph.const(q.inputs[2]) if len(q.inputs) > 2 and q.inputs[2] else np.int8(0)
        if scale is None or scale != dq_scale or dq.outputs[0] in graph.outputs:
            continue
        if np.asarray(zp).dtype != np.int8 or np.any(np.asarray(zp) != 0):
            if not warned:
                graph.warnings.append("QDQ model with asymmetric or uint8 activations: the engine is symmetric "
                                      "int8, so those scales are recalibrated")
                warned = True
            continue
        src, dst = q.inputs[0], dq.outputs[0]
        for user in graph.consumers(dst):
            user.inputs = [src if t == dst else t for t in user.inputs]
            user.implicit_inputs = [src if t == dst else t for t in user.implicit_inputs]
        graph.fixed_scales[graph.tensors[src].onnx_name] = scale
        del graph.nodes[q.name]
        del graph.nodes[dq.name]
        graph.touch()
    graph.prune_tensors()
    return graph


def strip_absorbed_qdq(model: onnx.ModelProto, scales: dict[str, float]) -> int:
    """Removes from an ONNX `model`, in place, the activation Q/DQ pairs `absorb_qdq` absorbed (`scales`: the
    graph's `fixed_scales`, by the ONNX name of each pair's input): the float model the partition computes, which
    `--verify` checks it against (the engine applies those scales in int8; the int8 report measures against the
    QDQ original). Returns the pairs removed."""
    g = model.graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    consts.update({n.output[0]: numpy_helper.to_array(a.t) for n in g.node if n.op_type == "Constant"
                   for a in n.attribute if a.name == "value"})
    readers: dict[str, list[onnx.NodeProto]] = {}
    for n in g.node:
        for t in n.input:
            readers.setdefault(t, []).append(n)
    outputs = {o.name for o in g.output}
    dropped: list[onnx.NodeProto] = []
    renames: dict[str, str] = {}
    for q in g.node:
        if q.op_type != "QuantizeLinear" or q.input[0] not in scales or q.output[0] in outputs:
            continue
        users = readers.get(q.output[0], [])
        if len(users) != 1 or users[0].op_type != "DequantizeLinear" or users[0].output[0] in outputs:
            continue
        dq = users[0]
        scale = consts.get(dq.input[1]) if len(dq.input) > 1 else None
        if scale is None or np.asarray(scale).size != 1 or float(np.asarray(scale).reshape(())) != scales[q.input[0]]:
            continue
        renames[dq.output[0]] = q.input[0]
        dropped += [q, dq]
    keep = [n for n in g.node if not any(n is d for d in dropped)]
    for n in keep:
        for i, t in enumerate(n.input):
            if t in renames:
                n.input[i] = renames[t]
    del g.node[:]
    g.node.extend(keep)
    gone = {t for n in dropped for t in n.output}
    kept_info = [v for v in g.value_info if v.name not in gone]
    del g.value_info[:]
    g.value_info.extend(kept_info)
    return len(dropped) // 2
