"""Pre-, compute- and post-processing: what comes before the first heavy op and after the last stays on the CPU."""
from __future__ import annotations

import enum

import networkx as nx

from partitioner.ir.graph import Graph, OpKind


class Role(enum.Enum):
    PRE = "pre"
    COMPUTE = "compute"
    POST = "post"


def assign_roles(graph: Graph, dag: nx.DiGraph) -> dict[str, Role]:
    """A node with no heavy op (a FusedConv) at or before it is PRE; with none at or after it, POST."""
    heavy = {n for n, node in graph.nodes.items() if node.kind is OpKind.FUSED_CONV}
    order = list(graph.nodes)
    after_heavy: dict[str, bool] = {}
    for n in order:
        after_heavy[n] = n in heavy or any(after_heavy[p] for p in dag.predecessors(n))
    before_heavy: dict[str, bool] = {}
    for n in reversed(order):
        before_heavy[n] = n in heavy or any(before_heavy[s] for s in dag.successors(n))
    return {n: Role.PRE if not after_heavy[n] else Role.POST if not before_heavy[n] else Role.COMPUTE
            for n in order}
