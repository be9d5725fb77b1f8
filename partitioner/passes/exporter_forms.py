"""Rewrite what exporters spell in many ways into the forms the engine passes know, so ops between convs do not
cut the FPGA work into fragments. Every rewrite computes the same numbers (exactly, or to float rounding):

- exporter no-ops: Identity, inference Dropout, full-range Slice, single-input Concat, Resize by 1;
- HardSigmoid and HardSwish spelt with Add/Clip/Div/Mul (opset 12 and older exports, Paddle);
- per-channel Mul/Add/Sub/Div by constants after a conv (a BatchNorm an exporter left unfolded);
- a zero Pad before a conv, and a Pad before a max pool where padding cannot win the max, into their pads;
- max pools of odd kernels above 3 with stride 1 (SPP, SPPF) as chains of 3x3 ones;
- nearest upsampling by 4 or 8 (FPN) as chains of x2 ones;
- channel slices and splits of a conv's output as convs of the slices (C2f, route layers);
- grouped convs (not depthwise) as block-diagonal standard convs.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from onnx import helper

from ..ir import ConvForm, Graph, Node, OpKind, ResidualAdd, Tensor
from ..op_facts import clip_bounds, pool_of, replicating_upsample

_NONNEGATIVE = {OpKind.RELU, OpKind.SIGMOID, OpKind.HARD_SIGMOID}


def _scalar(graph: Graph, tensor: str) -> float | None:
    value = graph.const(tensor)
    if value is None or np.asarray(value).size != 1:
        return None
    return float(np.asarray(value).reshape(()))


def _rewire(graph: Graph, old: str, new: str) -> None:
    """Readers of tensor `old` read `new` instead."""
    for node in graph.consumers(old):
        node.inputs = [new if t == old else t for t in node.inputs]
    graph.touch()


def _drop_passthrough(graph: Graph, node: Node, source: str) -> bool:
    """Remove a node whose output equals its input `source`, unless the output is a model output."""
    out = node.outputs[0]
    if out in graph.outputs:
        return False
    _rewire(graph, out, source)
    del graph.nodes[node.name]
    graph.touch()
    return True


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
        elif node.kind is OpKind.RESIZE and _same_static_shape(graph, node.inputs[0], node.outputs[0]):
            _drop_passthrough(graph, node, node.inputs[0])          # a resize by 1 (any mode) copies
    graph.prune_tensors()
    return graph


# ---- HardSigmoid / HardSwish spelt out ------------------------------------------------------------------------

def _plus_three(graph: Graph, tensor: str) -> str | None:
    """x where `tensor` = Add(x, 3), read only by its Clip."""
    add = graph.producer(tensor)
    if add is None or add.kind is not OpKind.ADD or len(add.inputs) != 2:
        return None
    for i in (0, 1):
        if _scalar(graph, add.inputs[i]) == 3.0 and graph.const(add.inputs[1 - i]) is None:
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
    if node.op_type == "Div" and len(node.inputs) == 2 and _scalar(graph, node.inputs[1]) == 6.0:
        return node.inputs[0]
    if node.kind is OpKind.MUL and len(node.inputs) == 2:
        for i in (0, 1):
            v = _scalar(graph, node.inputs[i])
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


# ---- per-channel affine after a conv ---------------------------------------------------------------------------

def _per_channel(graph: Graph, tensor: str, channels: int, rank: int) -> np.ndarray | None:
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
            vec = _per_channel(graph, other, shape[1], len(shape))
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


# ---- Pad into the consumer's padding -------------------------------------------------------------------------

def _spatial_pads(node: Node, graph: Graph) -> tuple[tuple[int, int, int, int], float] | None:
    """((top, left, bottom, right), value) of a constant-mode Pad of a 4-D tensor that pads H and W only."""
    mode = node.attr("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if node.op_type != "Pad" or mode != "constant" or len(node.inputs) < 2:
        return None
    pads = graph.const(node.inputs[1])
    value = _scalar(graph, node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else 0.0
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


def fold_pad(graph: Graph) -> Graph:
    for pad in list(graph.nodes.values()):
        found = _spatial_pads(pad, graph)
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
                (value == -np.inf or value == 0.0 and _never_negative(graph, pad.inputs[0])):
            old = pool_of(user).pads
            attrs = dict(user.attrs)
            attrs["pads"] = helper.make_attribute("pads", [old[0] + extra[0], old[1] + extra[1],
                                                           old[2] + extra[2], old[3] + extra[3]])
            merged = Node(user.name, OpKind.MAXPOOL, "MaxPool", [pad.inputs[0]], list(user.outputs),
                          pad.origin + user.origin, attrs=attrs)
            graph.replace([pad.name, user.name], merged)
    graph.prune_tensors()
    return graph


# ---- chains of small windows ---------------------------------------------------------------------------------

def _intermediate(graph: Graph, like: str, hint: str) -> str:
    t = graph.tensors[like]
    name = graph.names.fresh(hint)
    graph.add_tensor(Tensor(name, name, t.elem_type, t.shape))
    return name


def decompose_max_pools(graph: Graph) -> Graph:
    """MaxPool k x k (k odd, 5..15), stride 1, padding k // 2 on every side: (k - 1) / 2 chained 3x3 pools with
    padding 1 take the max over the same window (padding never wins a max)."""
    for node in list(graph.nodes.values()):
        pool = pool_of(node)
        if pool is None or pool.ceil_mode or pool.strides != (1, 1) or pool.kernel[0] != pool.kernel[1]:
            continue
        k = pool.kernel[0]
        if k < 5 or k % 2 == 0 or k > 15 or pool.pads != (k // 2,) * 4:
            continue
        x = node.inputs[0]
        chain = []
        for i in range((k - 1) // 2):
            last = i == (k - 1) // 2 - 1
            out = node.outputs[0] if last else _intermediate(graph, node.outputs[0], f"{node.name}_3x3_{i}")
            chain.append(Node(graph.names.fresh(f"{node.name}_3x3_{i}"), OpKind.MAXPOOL, "MaxPool", [x], [out],
                              list(node.origin) if last else [], attrs={
                                  "kernel_shape": helper.make_attribute("kernel_shape", [3, 3]),
                                  "pads": helper.make_attribute("pads", [1, 1, 1, 1]),
                                  "strides": helper.make_attribute("strides", [1, 1])}))
            x = out
        _splice(graph, node, chain)
    graph.prune_tensors()
    return graph


def decompose_upsample(graph: Graph) -> Graph:
    """Nearest upsampling by 4 or 8 (replicating modes) as chained x2 Resizes: the x2 one is what the engine
    reads for free (conv read mode) or copies."""
    for node in list(graph.nodes.values()):
        factor = replicating_upsample(node, graph)
        if factor not in (4, 8):
            continue
        steps = factor.bit_length() - 1
        x = node.inputs[0]
        scales = graph.new_const(f"{node.name}_x2", np.array([1, 1, 2, 2], np.float32))
        chain = []
        n, c, h, w = graph.tensors[x].shape
        for i in range(steps):
            last = i == steps - 1
            if last:
                out = node.outputs[0]
            else:
                out = graph.names.fresh(f"{node.name}_x2_{i}")
                graph.add_tensor(Tensor(out, out, graph.tensors[x].elem_type, (n, c, h * 2 ** (i + 1),
                                                                                w * 2 ** (i + 1))))
            chain.append(Node(graph.names.fresh(f"{node.name}_x2_{i}"), OpKind.RESIZE, "Resize", [x, "", scales],
                              [out], list(node.origin) if last else [], attrs={
                                  "mode": helper.make_attribute("mode", "nearest"),
                                  "coordinate_transformation_mode": helper.make_attribute(
                                      "coordinate_transformation_mode", "asymmetric"),
                                  "nearest_mode": helper.make_attribute("nearest_mode", "floor")}))
            x = out
        _splice(graph, node, chain)
    graph.prune_tensors()
    return graph


def _splice(graph: Graph, node: Node, chain: list[Node]) -> None:
    """Put `chain` where `node` stood, in order. Only the last link carries the original node's name, so the
    plan still names every original node once."""
    order = list(graph.nodes)
    rebuilt: dict[str, Node] = {}
    for name in order:
        if name == node.name:
            rebuilt.update((c.name, c) for c in chain)
        else:
            rebuilt[name] = graph.nodes[name]
    graph.nodes = rebuilt
    graph.touch()



# ---- channel slices of a conv's output -----------------------------------------------------------------------

def _channel_pieces(node: Node, graph: Graph, channels: int) -> list[tuple[str, int, int]] | None:
    """[(output, first channel, end)] of a Slice or Split of a 4-D tensor along channels; None otherwise."""
    if node.domain not in ("", "ai.onnx"):
        return None
    if node.op_type == "Slice" and len(node.inputs) >= 4 and all(graph.const(t) is not None for t in node.inputs[1:4]):
        starts, ends, axes = (np.asarray(graph.const(t)).ravel() for t in node.inputs[1:4])
        steps = graph.const(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] else np.ones(1)
        if len(axes) != 1 or int(axes[0]) % 4 != 1 or int(np.asarray(steps).ravel()[0]) != 1:
            return None
        start, end = int(starts[0]), int(ends[0])
        start = max(0, start + channels if start < 0 else start)
        end = min(channels, end + channels if end < 0 else end)
        return [(node.outputs[0], start, end)] if end > start else None
    if node.op_type == "Split" and node.attr("axis", 0) % 4 == 1:
        outs = node.outputs
        if len(node.inputs) > 1 and node.inputs[1]:
            sizes = graph.const(node.inputs[1])
            if sizes is None:
                return None
            sizes = [int(s) for s in np.asarray(sizes).ravel()]
        elif channels % len(outs) == 0:
            sizes = [channels // len(outs)] * len(outs)
        else:
            return None
        bounds = np.cumsum([0] + sizes)
        if bounds[-1] != channels or not all(outs):
            return None
        return [(o, int(a), int(b)) for o, a, b in zip(outs, bounds[:-1], bounds[1:])]
    return None


def split_conv_outputs(graph: Graph) -> Graph:
    """A conv whose output is only ever read through channel slices (YOLOv8's C2f split, Darknet route groups)
    becomes one conv per slice, each with its rows of the weights: the pieces are ordinary engine tensors a
    concat can write and a conv can read, and no data moves. Exact: a conv's output channels are independent."""
    for conv in list(graph.nodes.values()):
        if conv.kind is not OpKind.FUSED_CONV or conv.conv.form is not ConvForm.CONV or conv.conv.group != 1:
            continue
        spec, y = conv.conv, conv.outputs[0]
        shape = graph.tensors[y].shape
        users = graph.consumers(y)
        if y in graph.outputs or not users or shape is None or len(shape) != 4 or \
                any(isinstance(s, ResidualAdd) for s in spec.epilogue):
            continue
        pieces = [_channel_pieces(u, graph, shape[1]) for u in users]
        if any(p is None for p in pieces) or any(u.inputs[0] != y for u in users):
            continue
        w, b = graph.const(spec.weight), graph.const(spec.bias) if spec.bias else None
        made: list[Node] = []
        for user, parts in zip(users, pieces):
            for k, (out, start, end) in enumerate(parts):
                origin = (conv.origin if not made else []) + (user.origin if k == 0 else [])
                name = graph.names.fresh(f"{conv.name}_ch{start}_{end}")
                wname = graph.new_const(f"{name}_weight", np.ascontiguousarray(w[start:end]))
                bname = graph.new_const(f"{name}_bias", np.ascontiguousarray(b[start:end])) if b is not None else None
                stages = tuple(f"{s}__ch{start}_{end}" for s in spec.stages)
                made.append(Node(name, OpKind.FUSED_CONV, "FusedConv", [conv.inputs[0], wname] + ([bname] if bname
                                 else []), [out], origin, conv=replace(spec, weight=wname, bias=bname, stages=stages)))
        _splice_many(graph, [conv] + users, made)
    graph.prune_tensors()
    return graph


def _splice_many(graph: Graph, old: list[Node], new: list[Node]) -> None:
    """Replace the nodes `old` by `new`, placed where the first of `old` stood (they read only its inputs)."""
    drop = {n.name for n in old}
    rebuilt: dict[str, Node] = {}
    for name, node in graph.nodes.items():
        if name == old[0].name:
            rebuilt.update((n.name, n) for n in new)
        if name not in drop:
            rebuilt[name] = node
    graph.nodes = rebuilt
    graph.touch()


MAX_EXPANDED_GROUPS = 8


def expand_grouped_convs(graph: Graph) -> Graph:
    """A grouped conv that is not depthwise (ResNeXt, ShuffleNet, depth multipliers) as a standard conv with
    block-diagonal weights: exact, on the engine, at `group` times the MACs; above MAX_EXPANDED_GROUPS groups
    that price is too high and the conv stays as it is."""
    for node in list(graph.nodes.values()):
        if node.kind is not OpKind.FUSED_CONV or node.conv.form is not ConvForm.CONV:
            continue
        spec = node.conv
        x, y = graph.tensors[node.inputs[0]].shape, graph.tensors[node.outputs[0]].shape
        if spec.group == 1 or x is None or y is None or (spec.group == x[1] == y[1]):
            continue
        if spec.group > MAX_EXPANDED_GROUPS:
            continue
        w = graph.const(spec.weight)
        g, cout, cin_g = spec.group, w.shape[0], w.shape[1]
        full = np.zeros((cout, cin_g * g) + w.shape[2:], w.dtype)
        per_out = cout // g
        for k in range(g):
            full[k * per_out:(k + 1) * per_out, k * cin_g:(k + 1) * cin_g] = w[k * per_out:(k + 1) * per_out]
        wname = graph.new_const(f"{node.name}_weight_dense", full)
        node.inputs = [node.inputs[0], wname] + node.inputs[2:]
        node.conv = replace(spec, weight=wname, group=1)
        graph.touch()
    graph.prune_tensors()
    return graph
