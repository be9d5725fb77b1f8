"""Small facts about ONNX protos that several importer steps need."""
from __future__ import annotations

from typing import Iterator

import onnx


def subgraphs(node: onnx.NodeProto) -> Iterator[onnx.GraphProto]:
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.g
        elif a.type == onnx.AttributeProto.GRAPHS:
            yield from a.graphs


def outer_scope_names(node: onnx.NodeProto) -> list[str]:
    """Names a control-flow node's bodies read from the enclosing graph (its implicit inputs)."""
    found: list[str] = []

    def walk(g: onnx.GraphProto, defined: set[str]) -> None:
        defined = defined | {i.name for i in g.input} | {t.name for t in g.initializer}
        for n in g.node:
            for name in n.input:
                if name and name not in defined and name not in found:
                    found.append(name)
            for sub in subgraphs(n):
                walk(sub, defined)
            defined = defined | set(n.output)

    for g in subgraphs(node):
        walk(g, set())
    return found


def node_label(node: onnx.NodeProto, index: int) -> str:
    """The name a node is known by: its own, or `<op>_<index>` when the exporter left it empty."""
    return node.name or f"{node.op_type}_{index}"


def dims_of(vi: onnx.ValueInfoProto) -> tuple | None:
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return None
    out: list = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            out.append(int(d.dim_value))
        elif d.HasField("dim_param") and d.dim_param:
            out.append(d.dim_param)
        else:
            out.append(None)
    return tuple(out)
