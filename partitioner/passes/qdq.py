"""QDQ models (onnxruntime `quantize_static`, QDQ format): a QuantizeLinear -> DequantizeLinear pair on an
activation is removed and its scale kept for the engine, so the model runs on the engine's integer semantics
with the scales it was quantised with. Weight DequantizeLinear nodes were already folded into float weights
at import (constant folding); the engine quantises them again per channel, which reproduces symmetric int8
weights exactly.
"""
from __future__ import annotations

import numpy as np

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
