"""GELU as exporters spell it, rewritten to one Gelu node before the affine passes can take its constant Div and
Mul by 0.5 apart (they would turn them into channel affines and depthwise layers, and the activation fusion would
no longer see a GELU):
- erf form (torch before opset 20, transformers, timm): x * 0.5 * (1 + Erf(x / sqrt 2)), in any of the groupings
  (x * (1 + erf)) * 0.5, x * ((1 + erf) * 0.5), (x * 0.5) * (1 + erf), with Div by sqrt 2 or Mul by 1 / sqrt 2;
- tanh form (approximate='tanh', GPT-2 style): the same with 1 + Tanh(sqrt(2/pi) (x + 0.044715 x^3)), x^3 as
  Pow(x, 3) or x * x * x.
The IR's Gelu is fused as a table activation, and written back in opset 17's ops for a CPU subgraph."""
from __future__ import annotations

import math

from onnx import helper

from partitioner.ir.graph import Graph, Node, OpKind
from partitioner.ir.op_facts import scalar_const

_TOL = 1e-4


def _near(value: float | None, want: float) -> bool:
    return value is not None and abs(value - want) <= _TOL * max(1.0, abs(want))


def _other(node: Node, tensor: str) -> str | None:
    """The operand of a two-input node that is not `tensor` (None if `tensor` is not one of them)."""
    if len(node.inputs) != 2 or tensor not in node.inputs:
        return None
    return node.inputs[1] if node.inputs[0] == tensor else node.inputs[0]


def _scaled(graph: Graph, tensor: str, factor: float) -> str | None:
    """x where `tensor` = x * factor or x / (1 / factor)."""
    node = graph.producer(tensor)
    if node is None or len(node.inputs) != 2:
        return None
    if node.op_type == "Mul":
        for i in (0, 1):
            if _near(scalar_const(graph, node.inputs[i]), factor) and graph.const(node.inputs[1 - i]) is None:
                return node.inputs[1 - i]
    if node.op_type == "Div" and _near(scalar_const(graph, node.inputs[1]), 1 / factor):
        return node.inputs[0] if graph.const(node.inputs[0]) is None else None
    return None


def _cube_of(graph: Graph, tensor: str) -> str | None:
    """x where `tensor` = Pow(x, 3), x * (x * x) or (x * x) * x."""
    node = graph.producer(tensor)
    if node is None or len(node.inputs) != 2:
        return None
    if node.op_type == "Pow" and _near(scalar_const(graph, node.inputs[1]), 3.0):
        return node.inputs[0]
    if node.op_type != "Mul":
        return None
    for i in (0, 1):
        square = graph.producer(node.inputs[i])
        x = node.inputs[1 - i]
        if square is not None and square.op_type == "Mul" and square.inputs == [x, x]:
            return x
    return None


def _phi_argument(graph: Graph, phi: Node) -> tuple[str, bool] | None:
    """(x, tanh form?) where `phi` is Erf(x / sqrt 2) or Tanh(sqrt(2/pi) (x + 0.044715 x^3))."""
    if phi.op_type == "Erf":
        x = _scaled(graph, phi.inputs[0], 1 / math.sqrt(2.0))
        return (x, False) if x is not None else None
    if phi.op_type != "Tanh":
        return None
    inner = _scaled(graph, phi.inputs[0], math.sqrt(2 / math.pi))
    add = graph.producer(inner) if inner is not None else None
    if add is None or add.op_type != "Add" or len(add.inputs) != 2:
        return None
    for i in (0, 1):
        x = add.inputs[i]
        cube = _scaled(graph, add.inputs[1 - i], 0.044715)
        if cube is not None and _cube_of(graph, cube) == x:
            return x, True
    return None


def _chain_between(graph: Graph, start: str, stop: str) -> list[Node] | None:
    """The nodes from the producer of `start` back to (not including) the readers of `stop`, each read only by the
    next: a private computation that the rewrite may remove."""
    nodes, todo, seen = [], [start], set()
    while todo:
        t = todo.pop()
        if t == stop or t in seen or graph.const(t) is not None:
            continue
        seen.add(t)
        node = graph.producer(t)
        if node is None:
            return None
        nodes.append(node)
        todo += node.inputs
    return nodes


def _gelu_at(graph: Graph, mul: Node) -> tuple[str, bool, list[Node]] | None:
    """(x, tanh form?, the nodes) if `mul` ends a GELU of x."""
    if mul.op_type != "Mul" or len(mul.inputs) != 2:
        return None
    for i in (0, 1):
        a, b = mul.inputs[i], mul.inputs[1 - i]
        if scalar_const(graph, b) is not None and _near(scalar_const(graph, b), 0.5):
            # (x * (1 + phi)) * 0.5
            inner = graph.producer(a)
            if inner is None or inner.op_type != "Mul" or len(inner.inputs) != 2:
                continue
            for j in (0, 1):
                found = _one_plus_phi(graph, inner.inputs[j])
                if found and found[0] == inner.inputs[1 - j]:
                    return found[0], found[1], [inner, mul]
            continue
        # x * ((1 + phi) * 0.5)  or  (x * 0.5) * (1 + phi)
        half = _scaled(graph, a, 0.5)
        found = _one_plus_phi(graph, half) if half is not None else None
        if found and found[0] == b:
            return found[0], found[1], [graph.producer(a), mul]
        found = _one_plus_phi(graph, b)
        if found and _scaled(graph, a, 0.5) == found[0]:
            return found[0], found[1], [graph.producer(a), mul]
    return None


def _one_plus_phi(graph: Graph, tensor: str) -> tuple[str, bool] | None:
    add = graph.producer(tensor)
    if add is None or add.op_type != "Add" or len(add.inputs) != 2:
        return None
    for i in (0, 1):
        phi = graph.producer(add.inputs[i])
        if _near(scalar_const(graph, add.inputs[1 - i]), 1.0) and phi is not None:
            return _phi_argument(graph, phi)
    return None


def canonical_gelu(graph: Graph) -> Graph:
    """Each GELU chain whose inner nodes nothing else reads -> one Gelu node (approximate='tanh' for the tanh
    form)."""
    for mul in list(graph.nodes.values()):
        if mul.name not in graph.nodes:
            continue
        found = _gelu_at(graph, mul)
        if found is None:
            continue
        x, tanh, ends = found
        body = {n.name: n for e in ends for t in e.inputs if t != x for n in (_chain_between(graph, t, x) or [])}
        body.update((n.name, n) for n in ends)
        outputs = {o for n in body.values() for o in n.outputs}
        private = all(all(u.name in body for u in graph.consumers(o)) and o not in graph.outputs
                      for o in outputs - {mul.outputs[0]})
        if not private:
            continue
        order = [n for n in graph.nodes if n in body]
        gelu = Node(graph.names.fresh(f"{mul.name}_gelu"), OpKind.GELU, "Gelu", [x], [mul.outputs[0]],
                    [o for n in order for o in graph.nodes[n].origin],
                    attrs={"approximate": helper.make_attribute("approximate", "tanh" if tanh else "none")})
        graph.replace(order, gelu)
    graph.prune_tensors()
    return graph
