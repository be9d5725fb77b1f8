"""Exporter no-ops removed before anything else: Identity, inference Dropout, full-range Slice, single-input
Concat, Resize by 1, Cast to the type it has. Each only passes its input on."""
from __future__ import annotations

import numpy as np

from partitioner.ir.graph import Graph, Node, OpKind


def _drop_passthrough(graph: Graph, node: Node, source: str) -> None:
    """Remove a node whose output equals its input `source`, unless the output is a model output."""
    out = node.outputs[0]
    if out in graph.outputs:
        return
    graph.rewire(out, source)
    del graph.nodes[node.name]
    graph.touch()


def _full_range_slice(node: Node, graph: Graph) -> bool:
    x = graph.tensors[node.inputs[0]]
    if not x.is_static or len(node.inputs) < 3:
        return False
    starts, ends = graph.const(node.inputs[1]), graph.const(node.inputs[2])
    axes = graph.const(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] else np.arange(len(starts))
    steps = graph.const(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] else np.ones(len(starts))
    if starts is None or ends is None or axes is None or steps is None:
        return False
    for start, end, axis, step in zip(starts, ends, axes, steps):
        size = x.shape[int(axis)]
        start = int(start) + size if int(start) < 0 else int(start)
        if int(step) != 1 or start > 0 or int(end) < size:
            return False
    return True


def _same_static_shape(graph: Graph, a: str, b: str) -> bool:
    ta, tb = graph.tensors[a], graph.tensors[b]
    return ta.is_static and tb.is_static and ta.shape == tb.shape


def remove_exporter_noops(graph: Graph) -> Graph:
    for node in list(graph.nodes.values()):
        outs = [o for o in node.outputs if o]
        if node.domain not in ("", "ai.onnx") or len(outs) != 1 or node.outputs[0] != outs[0]:
            continue
        if node.op_type == "Identity":
            _drop_passthrough(graph, node, node.inputs[0])
        elif node.op_type == "Dropout" and not node.attr("training_mode", 0) and \
                (len(node.inputs) < 3 or not node.inputs[2] or graph.const(node.inputs[2]) is not None
                 and not bool(np.asarray(graph.const(node.inputs[2])))):
            _drop_passthrough(graph, node, node.inputs[0])
        elif node.kind is OpKind.CONCAT and len(node.inputs) == 1:
            _drop_passthrough(graph, node, node.inputs[0])
        elif node.op_type == "Slice" and _full_range_slice(node, graph):
            _drop_passthrough(graph, node, node.inputs[0])
        elif node.op_type == "Cast" and graph.tensors[node.inputs[0]].elem_type == node.attr("to") \
                and graph.tensors[node.inputs[0]].elem_type:
            _drop_passthrough(graph, node, node.inputs[0])          # float32 -> float32 (a widened float16 model)
        elif node.kind is OpKind.RESIZE and _same_static_shape(graph, node.inputs[0], node.outputs[0]):
            _drop_passthrough(graph, node, node.inputs[0])          # a resize by 1 (any mode) copies
    graph.prune_tensors()
    return graph


def drop_unread_nodes(graph: Graph) -> Graph:
    """Nodes whose every output no node reads and no model output is: rewrites can leave them (a permutation
    cut into per-slice pieces whose one slice a later rewrite no longer reads). A subgraph of them would have no
    outputs. Their original nodes, where no other node covers them, join the producer of their input."""
    changed = True
    while changed:
        changed = False
        for node in reversed(list(graph.nodes.values())):
            if any(o in graph.outputs or graph.consumers(o) for o in node.outputs if o):
                continue
            covered = {o for other in graph.nodes.values() if other is not node for o in other.origin}
            lost = [o for o in node.origin if o not in covered]
            owner = next((graph.producer(t) for t in node.inputs if t and graph.producer(t) is not None), None)
            if lost and owner is None:
                continue                        # it alone stands for a node of the model: keep it
            if lost:
                owner.origin = owner.origin + lost
            del graph.nodes[node.name]
            graph.touch()
            changed = True
    graph.prune_tensors()
    return graph
