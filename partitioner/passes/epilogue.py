"""Passes that grow a FusedConv's epilogue: activation, residual add, max pooling; and the x2 upsample read mode.

Each only fuses a consumer that reads the conv's output alone, so no other node loses a tensor it needs.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from partitioner.ir.graph import Activation, ActKind, ConcatWrite, ConvForm, Graph, Node, OpKind, Pool, ResidualAdd
from partitioner.ir.op_facts import (
    DATA_MOVEMENT_OPS,
    clip_bounds,
    gelu_is_tanh,
    pool_of,
    scalar_const,
    upsample_factor,
)
from partitioner.passes.folding import spatial_pads


def _absorb(graph: Graph, conv: Node, eaten: list[Node], step, output: str, extra_inputs: list[str] = ()) -> None:
    spec = conv.conv.with_step(step, graph.tensors[conv.outputs[0]].onnx_name)
    fused = Node(conv.name, OpKind.FUSED_CONV, "FusedConv", conv.inputs + list(extra_inputs), [output],
                 conv.origin + [o for n in eaten for o in n.origin], conv=spec)
    graph.replace([conv.name] + [n.name for n in eaten], fused)


def _hard_sigmoid_is_hardswish_gate(node: Node) -> bool:
    return abs(node.attr("alpha", 0.2) - 1 / 6) < 1e-6 and abs(node.attr("beta", 0.5) - 0.5) < 1e-6


def _gated_mul(graph: Graph, gate: Node, x: str) -> Node | None:
    """The Mul computing x * gate(x), when gate's output feeds only that Mul."""
    mul = graph.sole_consumer(gate.outputs[0])
    if mul is None or mul.kind is not OpKind.MUL or sorted(mul.inputs) != sorted([x, gate.outputs[0]]):
        return None
    return mul


def _mish_chain(graph: Graph, first: Node, x: str) -> list[Node] | None:
    """x * Tanh(Softplus(x)), the softplus also spelt Log(Exp(x) + 1) (Darknet converters): the chain's nodes
    from `first` (a user of x) to the Mul, each feeding only the next."""
    chain = [first]
    node = first
    if node.op_type == "Exp":
        add = graph.sole_consumer(node.outputs[0])
        other = None if add is None or add.kind is not OpKind.ADD else next(
            (t for t in add.inputs if t != node.outputs[0]), None)
        if other is None or scalar_const(graph, other) != 1.0:
            return None
        log = graph.sole_consumer(add.outputs[0])
        if log is None or log.op_type != "Log":
            return None
        chain += [add, log]
        node = log
    elif node.op_type != "Softplus":
        return None
    tanh = graph.sole_consumer(node.outputs[0])
    if tanh is None or tanh.op_type != "Tanh":
        return None
    mul = _gated_mul(graph, tanh, x)
    return chain + [tanh, mul] if mul is not None else None


def _only_reaches_outputs(graph: Graph, tensor: str) -> bool:
    """True if `tensor` reaches nothing but model outputs, through data movement alone (a detection head's class
    map, a segmentation head's probability map)."""
    seen, todo = set(), [tensor]
    while todo:
        t = todo.pop()
        if t in seen:
            continue
        seen.add(t)
        for user in graph.consumers(t):
            if user.op_type not in DATA_MOVEMENT_OPS or user.domain not in ("", "ai.onnx"):
                return False
            todo += [o for o in user.outputs if o]
    return any(t in graph.outputs for t in seen)


def _smooth_activation(act: Node) -> Activation | None:
    """The table activations among ONNX's element-wise ops (and the IR's Gelu)."""
    if act.kind is OpKind.TANH:
        return Activation(ActKind.TANH)
    if act.kind is OpKind.SOFTPLUS:
        return Activation(ActKind.SOFTPLUS)
    if act.kind is OpKind.ELU:
        return Activation(ActKind.ELU, alpha=float(act.attr("alpha", 1.0)))
    if act.kind is OpKind.SELU:
        return Activation(ActKind.SELU, alpha=float(act.attr("alpha", 1.67326319217681884765625)),
                          beta=float(act.attr("gamma", 1.05070102214813232421875)))
    if act.kind is OpKind.GELU:
        return Activation(ActKind.GELU_TANH if gelu_is_tanh(act) else ActKind.GELU)
    return None


def _activation_after(graph: Graph, conv: Node) -> tuple[Activation, list[Node]] | None:
    y = conv.outputs[0]
    users = graph.consumers(y)
    if y in graph.outputs or not users:
        return None
    if len(users) == 1:
        act = users[0]
        if act.kind is OpKind.RELU:
            return Activation(ActKind.RELU), [act]
        if act.kind is OpKind.LEAKY_RELU:
            return Activation(ActKind.LEAKY_RELU, alpha=float(act.attr("alpha", 0.01))), [act]
        if act.kind is OpKind.HARD_SWISH:
            return Activation(ActKind.HARD_SWISH), [act]
        if act.kind is OpKind.CLIP:
            bounds = clip_bounds(act, graph)
            if bounds is None:
                return None
            if bounds == (0.0, 6.0):
                return Activation(ActKind.RELU6), [act]
            if bounds == (0.0, None):
                return Activation(ActKind.RELU), [act]
            return Activation(ActKind.CLIP, lo=bounds[0], hi=bounds[1]), [act]
        if act.kind is OpKind.SIGMOID:
            # a head's probabilities stay in float on the CPU: int8 after the sigmoid gives the many near-0
            # scores (class priors of 0.01) 1-2 LSB, a 40 % error; int8 before it keeps them to a few %
            if _only_reaches_outputs(graph, act.outputs[0]):
                return None
            return Activation(ActKind.SIGMOID), [act]
        if act.kind is OpKind.HARD_SIGMOID:
            return Activation(ActKind.HARD_SIGMOID, alpha=float(act.attr("alpha", 0.2)),
                              beta=float(act.attr("beta", 0.5))), [act]
        smooth = _smooth_activation(act)
        if smooth is not None:
            return smooth, [act]
    if len(users) == 2:
        for first in users:
            chain = _mish_chain(graph, first, y)
            if chain is not None and chain[-1] in users:
                return Activation(ActKind.MISH), chain
        gates = [u for u in users if u.kind in (OpKind.SIGMOID, OpKind.HARD_SIGMOID)]
        if len(gates) == 1:
            gate = gates[0]
            mul = _gated_mul(graph, gate, y)
            if mul is not None and mul in users:
                if gate.kind is OpKind.SIGMOID:
                    return Activation(ActKind.SILU), [gate, mul]
                if _hard_sigmoid_is_hardswish_gate(gate):
                    return Activation(ActKind.HARD_SWISH), [gate, mul]
    return None


def fuse_activation(graph: Graph) -> Graph:
    for conv in list(graph.nodes.values()):
        if conv.name not in graph.nodes or conv.kind is not OpKind.FUSED_CONV:
            continue
        steps = conv.conv.epilogue
        if steps and not isinstance(steps[-1], ResidualAdd):
            continue
        found = _activation_after(graph, conv)
        if found:
            act, eaten = found
            _absorb(graph, conv, eaten, act, eaten[-1].outputs[0])
    graph.prune_tensors()
    return graph


def fuse_residual_add(graph: Graph) -> Graph:
    for add in list(graph.nodes.values()):
        if add.kind is not OpKind.ADD or len(add.inputs) != 2:
            continue
        out_shape = graph.tensors[add.outputs[0]].shape
        order = list(graph.nodes)
        candidates = []
        for i, name in enumerate(add.inputs):
            other = add.inputs[1 - i]
            conv = graph.producer(name)
            if (conv is None or conv.kind is not OpKind.FUSED_CONV or graph.sole_consumer(name) is not add
                    or other == name or graph.const(other) is not None
                    or graph.tensors[other].shape != out_shape or graph.tensors[name].shape != out_shape
                    or any(isinstance(s, (ResidualAdd, Pool)) for s in conv.conv.epilogue)
                    or conv.conv.form is ConvForm.TRANSPOSED):     # its phases write interleaved, read no residual
                continue
            candidates.append((order.index(conv.name), conv, other))
        if candidates:
            _, conv, other = max(candidates, key=lambda c: c[0])
            _absorb(graph, conv, [add], ResidualAdd(other), add.outputs[0], [other])
    graph.prune_tensors()
    return graph


def _zero_pad_in_front(graph: Graph, pool_node: Node, pool: Pool) -> tuple[Node, Pool] | None:
    """(the Pad, the pool with its padding) for a zero Pad read only by a pool of no padding of its own (ultralytics'
    ZeroPad2d before YOLOv3-tiny's 2x2 stride-1 pool): the engine's pool can take zeros as its padding."""
    pad = graph.producer(pool_node.inputs[0])
    if pad is None or pad.op_type != "Pad" or pool.ceil_mode or any(pool.pads) or \
            graph.sole_consumer(pad.outputs[0]) is not pool_node:
        return None
    found = spatial_pads(pad, graph)
    if found is None or found[1] != 0.0:
        return None
    return pad, replace(pool, pads=found[0], pad_zero=True)


def fuse_maxpool(graph: Graph) -> Graph:
    for pool_node in list(graph.nodes.values()):
        pool = pool_of(pool_node)
        if pool is None:
            continue
        eaten = [pool_node]
        padded = _zero_pad_in_front(graph, pool_node, pool)
        if padded is not None:
            eaten, pool = [padded[0], pool_node], padded[1]
        conv = graph.producer(eaten[0].inputs[0])
        if (conv is None or conv.kind is not OpKind.FUSED_CONV or conv.conv.form is not ConvForm.CONV
                or graph.sole_consumer(eaten[0].inputs[0]) is not eaten[0]
                or any(isinstance(s, Pool) for s in conv.conv.epilogue)):
            continue
        _absorb(graph, conv, eaten, pool, pool_node.outputs[0])
    graph.prune_tensors()
    return graph


def fuse_upsample_input(graph: Graph) -> Graph:
    """A x2 nearest upsample read by one conv only becomes that conv's input read mode: no buffer, no copy."""
    for resize in list(graph.nodes.values()):
        if upsample_factor(resize, graph) != 2:
            continue
        conv = graph.sole_consumer(resize.outputs[0])
        if (conv is None or conv.kind is not OpKind.FUSED_CONV or conv.conv.form is not ConvForm.CONV
                or conv.conv.upsample != 1 or conv.inputs[0] != resize.outputs[0]
                or resize.outputs[0] in conv.inputs[1:]):
            continue
        fused = Node(conv.name, OpKind.FUSED_CONV, "FusedConv", [resize.inputs[0]] + conv.inputs[1:],
                     list(conv.outputs), resize.origin + conv.origin, conv=replace(conv.conv, upsample=2))
        graph.replace([resize.name, conv.name], fused)
    graph.prune_tensors()
    return graph


def mark_concat_writes(graph: Graph) -> Graph:
    """Channel concats of static NCHW tensors get their write offsets; whether they run free is the target's call."""
    for node in graph.nodes.values():
        if node.kind is not OpKind.CONCAT:
            continue
        shapes = [graph.tensors[t].shape for t in node.inputs]
        static = all(graph.tensors[t].is_static for t in node.inputs)
        if not static or any(len(s) != 4 for s in shapes) or node.attr("axis") not in (1, -3):
            continue
        channels = [s[1] for s in shapes]
        node.concat = ConcatWrite(tuple(int(x) for x in np.cumsum([0] + channels[:-1])), int(sum(channels)))
    return graph
