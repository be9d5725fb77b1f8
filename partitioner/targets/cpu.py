"""The CPU target: onnxruntime runs every standard op, so everything is supported."""
from __future__ import annotations

from partitioner.ir.graph import Graph, Node
from partitioner.targets import YES, Verdict

NAME = "cpu"


def check(node: Node, graph: Graph, on_fpga: dict[str, bool]) -> Verdict:
    return YES


def layout_conflicts(graph: Graph, nodes: list[str], config) -> dict[str, str]:
    return {}
