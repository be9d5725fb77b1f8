"""HardSigmoid and HardSwish as older exports (opset <= 12) and Paddle spell them: Clip(x + 3, 0, 6) / 6 and
x * Clip(x + 3, 0, 6) / 6 in either grouping. Rewritten to the ONNX ops, which the activation fusion knows."""
from __future__ import annotations

from onnx import helper

from partitioner.ir.graph import Graph, Node, OpKind
from partitioner.ir.op_facts import clip_bounds, scalar_const


def _plus_three(graph: Graph, tensor: str) -> str | None:
    """x where `tensor` = Add(x, 3), read only by its Clip."""
    add = graph.producer(tensor)
    if add is None or add.kind is not OpKind.ADD or len(add.inputs) != 2:
        return None
    for i in (0, 1):
        if scalar_const(graph, add.inputs[i]) == 3.0 and graph.const(add.inputs[1 - i]) is None:
            return add.inputs[1 - i]
    return None


def _relu6_of_plus_three(graph: Graph, tensor: str) -> tuple[str, list[Node]] | None:
    """(x, [Add, Clip]) where `tensor` = Clip(x + 3, 0, 6) and each feeds only the next."""
    clip = graph.producer(tensor)
    if clip is None or clip.kind is not OpKind.CLIP or clip_bounds(clip, graph) != (0.0, 6.0):
        return None
    x = _plus_three(graph, clip.inputs[0])
    if x is None or graph.sole_consumer(clip.inputs[0]) is not clip:
        return None
    return x, [graph.producer(clip.inputs[0]), clip]


def _divided_by_six(graph: Graph, node: Node) -> str | None:
    """The non-constant operand of node = a / 6 or a * (1/6)."""
    if node.op_type == "Div" and len(node.inputs) == 2 and scalar_const(graph, node.inputs[1]) == 6.0:
        return node.inputs[0]
    if node.kind is OpKind.MUL and len(node.inputs) == 2:
        for i in (0, 1):
            v = scalar_const(graph, node.inputs[i])
            if v is not None and abs(v - 1 / 6) < 1e-6:
                return node.inputs[1 - i]
    return None


def _replace_with(graph: Graph, eaten: list[Node], op_type: str, x: str, output: str, **attrs) -> None:
    node = Node(graph.names.fresh(f"{eaten[-1].name}_{op_type.lower()}"), OpKind.of(op_type, ""), op_type, [x],
                [output], [o for n in eaten for o in n.origin],
                attrs={k: helper.make_attribute(k, v) for k, v in attrs.items()})
    graph.replace([n.name for n in eaten], node)


def canonical_hard_activations(graph: Graph) -> Graph:
    """Clip(x + 3, 0, 6) / 6 -> HardSigmoid(x); x * Clip(x + 3, 0, 6) / 6 (either grouping) -> HardSwish(x)."""
    for node in list(graph.nodes.values()):
        if node.name not in graph.nodes:
            continue
        a = _divided_by_six(graph, node)
        if a is None:
            continue
        found = _relu6_of_plus_three(graph, a)
        if found and graph.sole_consumer(a) is node:
            x, chain = found
            gate_user = graph.sole_consumer(node.outputs[0])
            partner = None
            if gate_user is not None and gate_user.kind is OpKind.MUL and len(gate_user.inputs) == 2:
                partner = gate_user.inputs[1] if gate_user.inputs[0] == node.outputs[0] else gate_user.inputs[0]
            if partner == x:                                 # x * (Clip(x + 3, 0, 6) / 6)
                _replace_with(graph, chain + [node, gate_user], "HardSwish", x, gate_user.outputs[0])
            else:
                _replace_with(graph, chain + [node], "HardSigmoid", x, node.outputs[0], alpha=1 / 6, beta=0.5)
            continue
        mul = graph.producer(a)                              # (x * Clip(x + 3, 0, 6)) / 6
        if mul is None or mul.kind is not OpKind.MUL or len(mul.inputs) != 2 or graph.sole_consumer(a) is not node:
            continue
        for i in (0, 1):
            found = _relu6_of_plus_three(graph, mul.inputs[i])
            if found and found[0] == mul.inputs[1 - i] and graph.sole_consumer(mul.inputs[i]) is mul:
                _replace_with(graph, found[1] + [mul, node], "HardSwish", found[0], node.outputs[0])
                break
    graph.prune_tensors()
    return graph
