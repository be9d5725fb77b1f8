"""The CPU target: onnxruntime runs every standard op, so everything is supported."""
from __future__ import annotations

from ..ir import Graph, Node
from . import YES, Verdict

NAME = "cpu"


def check(node: Node, graph: Graph, on_fpga: dict[str, bool]) -> Verdict:
    return YES
