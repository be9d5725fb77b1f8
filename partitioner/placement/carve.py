"""Target-neutral carving: merge neighbouring nodes of one label into convex clusters, and split a cluster
into the branches that may run in parallel.

Convexity is kept by construction: two clusters joined by an edge merge only if no other path links them,
so the graph of clusters stays acyclic after every merge.
"""
from __future__ import annotations

from collections import deque
from typing import Callable, Hashable

import networkx as nx


def _reaches_around(c: nx.DiGraph, a: Hashable, b: Hashable) -> bool:
    """Is there a path a -> x -> ... -> b with x neither a nor b?"""
    seen = set()
    queue = deque(s for s in c.successors(a) if s != b)
    while queue:
        x = queue.popleft()
        if x == b:
            return True
        if x in seen:
            continue
        seen.add(x)
        queue.extend(c.successors(x))
    return False


def carve(dag: nx.DiGraph, label: dict[str, Hashable], order: dict[str, int]) -> list[set[str]]:
    """Clusters of equal-label nodes, each convex, in order of their first node."""
    rep = {n: n for n in dag}
    members = {n: {n} for n in dag}
    c = nx.DiGraph()
    c.add_nodes_from(dag)
    c.add_edges_from(dag.edges)
    for u, v in sorted(dag.edges, key=lambda e: (order[e[0]], order[e[1]])):
        a, b = rep[u], rep[v]
        if a == b or label[u] != label[v] or _reaches_around(c, a, b):
            continue
        for p in list(c.predecessors(b)):
            if p != a:
                c.add_edge(p, a)
        for s in list(c.successors(b)):
            if s != a:
                c.add_edge(a, s)
        c.remove_node(b)
        for n in members[b]:
            rep[n] = a
        members[a] |= members.pop(b)
    return sorted(members.values(), key=lambda m: min(order[n] for n in m))


def cluster_graph(dag: nx.DiGraph, clusters: list[set[str]]) -> nx.DiGraph:
    owner = {n: i for i, m in enumerate(clusters) for n in m}
    g = nx.DiGraph()
    g.add_nodes_from(range(len(clusters)))
    g.add_edges_from((owner[u], owner[v]) for u, v in dag.edges if owner[u] != owner[v])
    return g


class _Groups:
    def __init__(self) -> None:
        self.next = 0

    def new(self) -> int:
        self.next += 1
        return self.next


def sequential_nodes(sub: nx.DiGraph, topo: list[str]) -> list[str]:
    """The nodes of DAG `sub` comparable with every other (its ancestors and descendants are all the others), in
    the topological order `topo`. Reachability as bit sets (Python ints), built once in each direction: O(edges
    x nodes / 64) word operations instead of a graph search from every node."""
    pos = {n: i for i, n in enumerate(topo)}
    below = _reachable(topo, pos, sub.successors, range(len(topo) - 1, -1, -1))      # bit j: topo[j] a descendant
    above = _reachable(topo, pos, sub.predecessors, range(len(topo)))                # bit j: topo[j] an ancestor
    return [n for i, n in enumerate(topo) if below[i].bit_count() + above[i].bit_count() == len(topo) - 1]


def _reachable(topo: list[str], pos: dict[str, int], neighbours, visit: range) -> list[int]:
    """Per node, the bit set of nodes reachable through `neighbours`, visiting in an order where every
    neighbour's set is complete before it is read."""
    bits = [0] * len(topo)
    for i in visit:
        acc = 0
        for w in neighbours(topo[i]):
            j = pos[w]
            acc |= bits[j] | (1 << j)
        bits[i] = acc
    return bits


def split_parallel(dag: nx.DiGraph, members: set[str], order: dict[str, int], groups: _Groups | None = None,
                   group: int | None = None, worth: Callable[[set[str]], bool] = lambda branch: True,
                   works: Callable[[set[str]], bool] = lambda part: True) -> list[tuple[set[str], int | None]]:
    """Cut a convex cluster where it forks into branches with no path between them.

    A node comparable with every other node of the cluster is *sequential*. The others fall into sections by
    how many sequential nodes precede them (section k lies between the k-th and the (k+1)-th sequential node;
    along every edge that count never falls, so sections are in execution order). Within one section, two or
    more weakly connected components are parallel branches: each becomes its own part (recursively split)
    sharing a fresh group id. Components are taken per section, never across a sequential node, so an edge
    that skips a sequential node (x -> s1 -> y with x -> y) cannot tie two parts into a cycle. Only branches that
    are `worth` a subgraph of their own are split off (a parallel part costs a program start and cuts the chain
    into more segments); the others stay in the sequential part before the group. Nor is a fork split where the
    sequential part before it would be left without work of its own (`works`: e.g. an L2 normalisation in front
    of two heads, which alone would be a program without MACs).
    """
    groups = groups or _Groups()
    sub = dag.subgraph(members)
    topo = sorted(members, key=order.__getitem__)
    sequential = sequential_nodes(sub, topo)
    if not sequential and nx.is_weakly_connected(sub):
        return [(set(members), group)]     # entangled (e.g. an N shape): no clean fork to cut at
    seq_set = set(sequential)
    by_section: dict[int, set[str]] = {}
    before = 0                             # a sequential node is an ancestor of every node after it
    for n in topo:
        if n in seq_set:
            before += 1
        else:
            by_section.setdefault(before, set()).add(n)
    sections = {k: list(nx.weakly_connected_components(sub.subgraph(nodes))) for k, nodes in by_section.items()}

    parts: list[tuple[set[str], int | None]] = []
    current: set[str] = set()

    def flush() -> None:
        nonlocal current
        if current:
            parts.append((current, group))
            current = set()

    for k in range(len(sequential) + 1):
        comps = sorted(sections.get(k, []), key=lambda m: min(order[n] for n in m))
        heavy = [c for c in comps if worth(c)] if len(comps) >= 2 else []
        if len(heavy) >= 2 and current and not works(current | {c for comp in comps if comp not in heavy
                                                                for c in comp}):
            heavy = []
        if len(heavy) >= 2:
            for comp in comps:
                if comp not in heavy:
                    current |= comp
            flush()
            g = groups.new()
            for comp in heavy:
                parts.extend(split_parallel(dag, comp, order, groups, g, worth, works))
            comps = []
        for comp in comps:
            inner = split_parallel(dag, comp, order, groups, group, worth, works)
            if len(inner) == 1:
                current |= inner[0][0]
            else:
                if current and not works(current) and inner[0][1] == group:
                    inner[0] = (inner[0][0] | current, group)      # a join without work rides with what follows
                    current = set()
                flush()
                parts.extend(inner)
        if k < len(sequential):
            current.add(sequential[k])
    flush()
    return parts
