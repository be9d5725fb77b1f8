"""Folds of what exporters leave between convs into the conv (or pool) itself, exact up to float rounding:
per-channel Mul/Div/Add/Sub by constants (a BatchNorm left unfolded), a zero Pad before a conv, and a Pad
before a max pool where padding cannot win the max."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from onnx import helper

from partitioner.ir.graph import ConvForm, FusedConv, Graph, Node, OpKind
from partitioner.ir.op_facts import ACTIVATION_KINDS, LAYER_KINDS, clip_bounds, pool_of, scalar_const

_NONNEGATIVE = {OpKind.RELU, OpKind.SIGMOID, OpKind.HARD_SIGMOID}
EDGE = "edge"           # a Pad that repeats the border (Darknet converters' max pool of size 2, stride 1)


def per_channel(graph: Graph, tensor: str, channels: int, rank: int) -> np.ndarray | None:
    """A constant that broadcasts over the channel axis only (scalar, [C], [C,1,1], [1,C,1,1]) as a [C] vector."""
    value = graph.const(tensor)
    if value is None:
        return None
    v = np.asarray(value, np.float64)
    if v.size == 1:
        return np.full(channels, float(v.reshape(())))
    shape = (1,) * (rank - v.ndim) + v.shape
    want = [1] * rank
    want[1] = channels
    if list(shape) != want:
        return None
    return v.reshape(channels)


def fold_channel_affine(graph: Graph) -> Graph:
    """conv -> Mul/Div/Add/Sub by per-channel constants -> the conv's weights and bias (exact up to rounding)."""
    changed = True
    while changed:
        changed = False
        for conv in list(graph.nodes.values()):
            if conv.kind is not OpKind.FUSED_CONV or conv.conv.epilogue or conv.conv.upsample != 1:
                continue
            user = graph.sole_consumer(conv.outputs[0])
            if user is None or user.op_type not in ("Mul", "Div", "Add", "Sub") or len(user.inputs) != 2:
                continue
            y = conv.outputs[0]
            other = user.inputs[1] if user.inputs[0] == y else user.inputs[0]
            if other == y or (user.op_type in ("Div", "Sub") and user.inputs[0] != y):
                continue
            shape = graph.tensors[y].shape
            if shape is None or graph.tensors[user.outputs[0]].shape != shape:
                continue
            vec = per_channel(graph, other, shape[1], len(shape))
            if vec is None or (user.op_type == "Div" and np.any(vec == 0)):
                continue
            spec = conv.conv
            w = graph.const(spec.weight).astype(np.float64)
            b = graph.const(spec.bias).astype(np.float64) if spec.bias else np.zeros(w.shape[0])
            if user.op_type in ("Mul", "Div"):
                k = vec if user.op_type == "Mul" else 1.0 / vec
                w = w * k.reshape((-1,) + (1,) * (w.ndim - 1))
                b = b * k
            else:
                b = b + (vec if user.op_type == "Add" else -vec)
            wname = graph.new_const(f"{conv.name}_weight_affine", w.astype(np.float32))
            bname = graph.new_const(f"{conv.name}_bias_affine", b.astype(np.float32))
            fused = Node(conv.name, OpKind.FUSED_CONV, "FusedConv", [conv.inputs[0], wname, bname],
                         list(user.outputs), conv.origin + user.origin, conv=replace(spec, weight=wname, bias=bname))
            graph.replace([conv.name, user.name], fused)
            changed = True
    graph.prune_tensors()
    return graph


_LAYER_OUTPUTS = ACTIVATION_KINDS + LAYER_KINDS


def _feeds_a_conv(graph: Graph, tensor: str, hops: int = 3) -> bool:
    """Whether a conv reads the tensor, directly or through a few affines, activations and concats: the affine
    sits between layers, not in a head's box decoding."""
    for user in graph.consumers(tensor):
        if user.kind is OpKind.FUSED_CONV:
            return True
        if hops > 1 and (user.op_type in ("Mul", "Div", "Add", "Sub", "Pad") or user.kind in _LAYER_OUTPUTS) \
                and _feeds_a_conv(graph, user.outputs[0], hops - 1):
            return True
    return False


def channel_affines_as_depthwise(graph: Graph) -> Graph:
    """A Mul/Div/Add/Sub by per-channel (or scalar) constants that no conv before it takes, after a layer's output
    (HGNetV2's learnable affine after each activation), as a 1x1 depthwise conv: an engine
    layer that `fold_channel_affine` then merges the next affine into. The model's own inputs are left alone:
    their normalisation is pre-processing, for the CPU."""
    for node in list(graph.nodes.values()):
        if node.op_type not in ("Mul", "Div", "Add", "Sub") or node.domain not in ("", "ai.onnx") \
                or len(node.inputs) != 2 or not _feeds_a_conv(graph, node.outputs[0]):
            continue
        x = node.inputs[0] if graph.const(node.inputs[0]) is None else node.inputs[1]
        other = node.inputs[1] if x == node.inputs[0] else node.inputs[0]
        source, shape = graph.producer(x), graph.tensors[x].shape
        if source is None or source.kind not in _LAYER_OUTPUTS or not graph.tensors[x].is_static \
                or len(shape) != 4 or graph.tensors[node.outputs[0]].shape != shape \
                or (node.op_type in ("Div", "Sub") and x != node.inputs[0]):
            continue
        if source.kind is OpKind.FUSED_CONV and not source.conv.epilogue and graph.sole_consumer(x) is node:
            continue                    # fold_channel_affine folds it into that conv (this pass's, say)
        vec = per_channel(graph, other, shape[1], 4)
        if vec is None or (node.op_type == "Div" and np.any(vec == 0)):
            continue
        scale = vec if node.op_type == "Mul" else 1.0 / vec if node.op_type == "Div" else np.ones_like(vec)
        shift = {"Add": vec, "Sub": -vec}.get(node.op_type, np.zeros_like(vec))
        wname = graph.new_const(f"{node.name}_weight_dw", scale.astype(np.float32).reshape(-1, 1, 1, 1))
        bname = graph.new_const(f"{node.name}_bias_dw", shift.astype(np.float32))
        spec = FusedConv(ConvForm.CONV, wname, bname, kernel=(1, 1), group=shape[1])
        graph.replace([node.name], Node(node.name, OpKind.FUSED_CONV, "FusedConv", [x, wname, bname],
                                        list(node.outputs), list(node.origin), conv=spec))
    graph.prune_tensors()
    return graph


def spatial_pads(node: Node, graph: Graph) -> tuple[tuple[int, int, int, int], float | str] | None:
    """((top, left, bottom, right), value) of a constant-mode Pad of a 4-D tensor that pads H and W only; value
    EDGE for an edge-mode Pad."""
    mode = node.attr("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if node.op_type != "Pad" or mode not in ("constant", "edge") or len(node.inputs) < 2:
        return None
    pads = graph.const(node.inputs[1])
    if mode == "edge":
        value = EDGE
    else:
        value = scalar_const(graph, node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else 0.0
    axes = graph.const(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] else None
    x = graph.tensors[node.inputs[0]]
    if pads is None or value is None or x.shape is None or len(x.shape) != 4:
        return None
    pads = [int(p) for p in np.asarray(pads).ravel()]
    axes = [int(a) % 4 for a in np.asarray(axes).ravel()] if axes is not None else [0, 1, 2, 3]
    full = [0] * 8
    for i, a in enumerate(axes):
        full[a], full[a + 4] = pads[i], pads[i + len(axes)]
    if any(full[i] for i in (0, 1, 4, 5)) or any(p < 0 for p in full):
        return None
    return (full[2], full[3], full[6], full[7]), value


def _never_negative(graph: Graph, tensor: str) -> bool:
    p = graph.producer(tensor)
    if p is None:
        return False
    if p.kind in _NONNEGATIVE:
        return True
    if p.kind is OpKind.CLIP:
        lo = (clip_bounds(p, graph) or (None, None))[0]
        return lo is not None and lo >= 0
    return False


def _edge_cannot_win(pool, extra: tuple[int, int, int, int]) -> bool:
    """Border copies cannot change a max when every window that reaches them also covers the border pixel they
    copy: true when a dimension's padding (the pool's own and the Pad's) totals at most kernel - 1, as then
    the last window starts on a real pixel."""
    pads = [a + b for a, b in zip(pool.pads, extra)]
    return pads[0] + pads[2] <= pool.kernel[0] - 1 and pads[1] + pads[3] <= pool.kernel[1] - 1 and \
        all(p == 0 for p in pool.pads)


def fold_pad(graph: Graph) -> Graph:
    for pad in list(graph.nodes.values()):
        found = spatial_pads(pad, graph)
        user = graph.sole_consumer(pad.outputs[0]) if found else None
        if user is None or user.inputs[0] != pad.outputs[0]:
            continue
        extra, value = found
        if user.kind is OpKind.FUSED_CONV and user.conv.form is ConvForm.CONV and user.conv.upsample == 1 \
                and value == 0.0:
            pads = tuple(a + b for a, b in zip(user.conv.pads, extra))
            fused = Node(user.name, OpKind.FUSED_CONV, "FusedConv", [pad.inputs[0]] + user.inputs[1:],
                         list(user.outputs), pad.origin + user.origin, conv=replace(user.conv, pads=pads))
            graph.replace([pad.name, user.name], fused)
        elif user.kind is OpKind.MAXPOOL and pool_of(user) is not None and \
                (value == -np.inf or value == 0.0 and _never_negative(graph, pad.inputs[0]) or
                 value == EDGE and _edge_cannot_win(pool_of(user), extra)):
            old = pool_of(user).pads
            attrs = dict(user.attrs)
            attrs["pads"] = helper.make_attribute("pads", [old[0] + extra[0], old[1] + extra[1],
                                                           old[2] + extra[2], old[3] + extra[3]])
            merged = Node(user.name, OpKind.MAXPOOL, "MaxPool", [pad.inputs[0]], list(user.outputs),
                          pad.origin + user.origin, attrs=attrs)
            graph.replace([pad.name, user.name], merged)
    graph.prune_tensors()
    return graph
