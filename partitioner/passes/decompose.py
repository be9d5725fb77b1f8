"""Rewrites into pieces the engine runs, each computing the same numbers: max pools of odd kernels 5..15 with
stride 1 (SPP, SPPF) as chains of 3x3 ones, nearest upsampling by 4 or 8 as chains of x2, channel slices and
splits of a conv's output as convs of the slices (C2f, route layers), grouped convs as block-diagonal
pieces, average pools as depthwise convs."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from onnx import helper

from partitioner.ir.graph import ConvForm, FusedConv, Graph, Node, OpKind, ResidualAdd, Tensor
from partitioner.ir.op_facts import pool_of, replicating_upsample


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
        graph.splice(node.name, chain)
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
        graph.splice(node.name, chain)
    graph.prune_tensors()
    return graph


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
    """A conv whose output is read through channel slices (YOLOv8's C2f split, Darknet route groups, ESNet)
    becomes one conv per slice, each with its rows of the weights: the pieces are ordinary engine tensors a
    concat can write and a conv can read, and no data moves. Exact: a conv's output channels are independent.
    Where the whole output is read too, the slices must tile it; a concat of the pieces then stands for it."""
    for conv in list(graph.nodes.values()):
        if conv.kind is not OpKind.FUSED_CONV or conv.conv.form is not ConvForm.CONV or conv.conv.group != 1:
            continue
        spec, y = conv.conv, conv.outputs[0]
        shape = graph.tensors[y].shape
        users = graph.consumers(y)
        if not users or shape is None or len(shape) != 4 or any(isinstance(s, ResidualAdd) for s in spec.epilogue):
            continue
        pieces = [_channel_pieces(u, graph, shape[1]) if u.inputs[0] == y else None for u in users]
        slicers = [(u, p) for u, p in zip(users, pieces) if p is not None]
        whole = len(slicers) < len(users) or y in graph.outputs
        bounds = sorted((a, b) for _, parts in slicers for _, a, b in parts)
        tiles = [a for a, _ in bounds] == [0] + [b for _, b in bounds[:-1]] and bounds and bounds[-1][1] == shape[1]
        if not slicers or whole and not tiles:
            continue
        w, b = graph.const(spec.weight), graph.const(spec.bias) if spec.bias else None
        made: list[Node] = []
        starts: list[int] = []
        for user, parts in slicers:
            for k, (out, start, end) in enumerate(parts):
                origin = (conv.origin if not made else []) + (user.origin if k == 0 else [])
                name = graph.names.fresh(f"{conv.name}_ch{start}_{end}")
                wname = graph.new_const(f"{name}_weight", np.ascontiguousarray(w[start:end]))
                bname = graph.new_const(f"{name}_bias", np.ascontiguousarray(b[start:end])) if b is not None else None
                stages = tuple(graph.names.fresh(f"{s}__ch{start}_{end}") for s in spec.stages)
                starts.append(start)
                made.append(Node(name, OpKind.FUSED_CONV, "FusedConv", [conv.inputs[0], wname] + ([bname] if bname
                                 else []), [out], origin, conv=replace(spec, weight=wname, bias=bname, stages=stages)))
        if whole:       # the whole output is still read: the pieces write it as a concat, at no cost
            pieces_in_order = [m for _, m in sorted(zip(starts, made), key=lambda pair: pair[0])]
            made.append(Node(graph.names.fresh(f"{conv.name}_whole"), OpKind.CONCAT, "Concat",
                             [m.outputs[0] for m in pieces_in_order], [y], [],
                             attrs={"axis": helper.make_attribute("axis", 1)}))
        _splice_many(graph, [conv] + [u for u, _ in slicers], made)
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


MAX_EXPANDED_GROUPS = 8      # a grouped conv made one block-diagonal conv costs `group` times its MACs
PIECE_CHANNELS = 16          # a piece's input and output channels: at least one engine lane block


def _block_diagonal(w: np.ndarray, groups: int) -> np.ndarray:
    """[cout, cin/groups, kh, kw] grouped weights as the [cout, cin, kh, kw] of a standard conv: exact."""
    cout, cin_g = w.shape[:2]
    full = np.zeros((cout, cin_g * groups) + w.shape[2:], w.dtype)
    per_out = cout // groups
    for k in range(groups):
        full[k * per_out:(k + 1) * per_out, k * cin_g:(k + 1) * cin_g] = w[k * per_out:(k + 1) * per_out]
    return full


def _splittable_producer(graph: Graph, x: str) -> bool:
    """Whether `split_conv_outputs` will turn channel slices of `x` into convs of their own (so the slices cost
    nothing): `x` is written by a plain standard conv."""
    conv = graph.producer(x)
    return (conv is not None and conv.kind is OpKind.FUSED_CONV and conv.conv.form is ConvForm.CONV
            and conv.conv.group == 1 and not any(isinstance(s, ResidualAdd) for s in conv.conv.epilogue))


def _pieces(groups: int, cin_g: int, cout_g: int) -> list[tuple[int, int]]:
    """Runs of consecutive groups, each the fewest whose channels fill an engine lane block on both sides; a
    short remainder joins the last run (13 groups of 8 channels: five pairs and a triple)."""
    k = next((k for k in range(1, groups + 1) if k * cin_g >= PIECE_CHANNELS and k * cout_g >= PIECE_CHANNELS),
             groups)
    runs = [(a, min(a + k, groups)) for a in range(0, groups, k)]
    if len(runs) > 1 and runs[-1][1] - runs[-1][0] < k:
        runs[-2:] = [(runs[-2][0], groups)]
    return runs


def split_grouped_convs(graph: Graph) -> Graph:
    """A grouped conv that is not depthwise (ResNeXt, RegNet, ShuffleNet v1, CSP variants) on the engine, exact:
    - where a standard conv writes its input, as pieces of a few groups each (enough to fill a lane block),
      each a standard conv with block-diagonal weights reading its channel slice, their outputs concatenated:
      the producer splits into one conv per slice (`split_conv_outputs`) and the concat is channel-offset
      writes, so nothing moves, and the MACs grow only by the groups a piece shares;
    - else, with at most MAX_EXPANDED_GROUPS groups, as one block-diagonal standard conv (`group` times the
      MACs); else it stays as it is (the CPU runs it).
    Runs after activation fusion, so each piece carries the conv's activation."""
    for node in list(graph.nodes.values()):
        if node.kind is not OpKind.FUSED_CONV or node.conv.form is not ConvForm.CONV:
            continue
        spec = node.conv
        x, y = graph.tensors[node.inputs[0]].shape, graph.tensors[node.outputs[0]].shape
        if spec.group == 1 or x is None or y is None or (spec.group == x[1] == y[1]):
            continue
        w = graph.const(spec.weight)
        g, cout, cin_g = spec.group, w.shape[0], w.shape[1]
        runs = _pieces(g, cin_g, cout // g)
        if len(runs) > 1 and _splittable_producer(graph, node.inputs[0]) \
                and not any(isinstance(s, ResidualAdd) for s in spec.epilogue):
            _split_into_pieces(graph, node, runs)
        elif g <= MAX_EXPANDED_GROUPS:
            wname = graph.new_const(f"{node.name}_weight_dense", _block_diagonal(w, g))
            node.inputs = [node.inputs[0], wname] + node.inputs[2:]
            node.conv = replace(spec, weight=wname, group=1)
            graph.touch()
    graph.prune_tensors()
    return graph


def _split_into_pieces(graph: Graph, node: Node, runs: list[tuple[int, int]]) -> None:
    spec = node.conv
    w, b = graph.const(spec.weight), graph.const(spec.bias) if spec.bias else None
    cout, cin_g = w.shape[:2]
    per_out = cout // spec.group
    x, y = node.inputs[0], node.outputs[0]
    made: list[Node] = []
    pieces: list[str] = []
    for i, (g0, g1) in enumerate(runs):
        lo_in, hi_in, lo_out, hi_out = g0 * cin_g, g1 * cin_g, g0 * per_out, g1 * per_out
        name = graph.names.fresh(f"{node.name}_groups{g0}_{g1}")
        n, _, h, wd = graph.tensors[x].shape
        sliced = graph.names.fresh(f"{name}_input")
        graph.add_tensor(Tensor(sliced, sliced, graph.tensors[x].elem_type, (n, hi_in - lo_in, h, wd)))
        made.append(Node(graph.names.fresh(f"{name}_slice"), OpKind.OTHER, "Slice",
                         [x] + [graph.new_const(f"{name}_{what}", np.array([v], np.int64))
                                for what, v in (("starts", lo_in), ("ends", hi_in), ("axes", 1))],
                         [sliced], []))
        out = graph.names.fresh(f"{name}_output")
        graph.add_tensor(Tensor(out, out, graph.tensors[y].elem_type,
                                (n, hi_out - lo_out) + graph.tensors[y].shape[2:]))
        wname = graph.new_const(f"{name}_weight",
                                _block_diagonal(np.ascontiguousarray(w[lo_out:hi_out]), g1 - g0))
        bname = graph.new_const(f"{name}_bias", np.ascontiguousarray(b[lo_out:hi_out])) if b is not None else None
        stages = tuple(graph.names.fresh(f"{s}__groups{g0}_{g1}") for s in spec.stages)
        made.append(Node(name, OpKind.FUSED_CONV, "FusedConv", [sliced, wname] + ([bname] if bname else []), [out],
                         list(node.origin) if i == 0 else [],
                         conv=replace(spec, weight=wname, bias=bname, group=1, stages=stages)))
        pieces.append(out)
    made.append(Node(graph.names.fresh(f"{node.name}_pieces"), OpKind.CONCAT, "Concat", pieces, [y], [],
                     attrs={"axis": helper.make_attribute("axis", 1)}))
    graph.splice(node.name, made)


def average_pools_as_depthwise(graph: Graph) -> Graph:
    """AveragePool as a depthwise conv whose weights are all 1 / (kh * kw) (DenseNet's transitions, Inception's
    pool branches): exact wherever every window divides by its full size, that is without padding or with
    count_include_pad, and without a ceil-mode window that runs past the input."""
    for node in list(graph.nodes.values()):
        if node.op_type != "AveragePool" or node.domain not in ("", "ai.onnx") or len(node.outputs) != 1:
            continue
        x, y = graph.tensors[node.inputs[0]].shape, graph.tensors[node.outputs[0]].shape
        kernel = tuple(node.attr("kernel_shape", []))
        if x is None or y is None or len(x) != 4 or len(kernel) != 2 or not all(isinstance(d, int) for d in x[1:]):
            continue
        pads = tuple(node.attr("pads", [0, 0, 0, 0]))
        strides = tuple(node.attr("strides", [1, 1]))
        if any(d != 1 for d in node.attr("dilations", [1, 1])) or len(pads) != 4 or len(strides) != 2 \
                or node.attr("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET") \
                or (any(pads) and not node.attr("count_include_pad", 0)):
            continue
        floor = tuple((x[2 + i] + pads[i] + pads[i + 2] - kernel[i]) // strides[i] + 1 for i in range(2))
        if tuple(y[2:]) != floor:       # a ceil-mode window past the input divides by fewer
            continue
        c = x[1]
        weights = np.full((c, 1) + kernel, 1.0 / (kernel[0] * kernel[1]), np.float32)
        spec = FusedConv(ConvForm.CONV, graph.new_const(f"{node.name}_weight_avg", weights), None, kernel=kernel,
                         strides=strides, pads=pads, group=c)
        graph.replace([node.name], Node(node.name, OpKind.FUSED_CONV, "FusedConv", [node.inputs[0], spec.weight],
                                        list(node.outputs), list(node.origin), conv=spec))
    graph.prune_tensors()
    return graph


def spatial_means_as_global_pool(graph: Graph) -> Graph:
    """ReduceMean over both spatial axes of a 4-D tensor, dimensions kept: GlobalAveragePool spelt the way
    `x.mean((2, 3), keepdim=True)` exports (timm's and many hand-written squeeze-and-excitation blocks)."""
    for node in list(graph.nodes.values()):
        if node.op_type != "ReduceMean" or node.domain not in ("", "ai.onnx") or not node.attr("keepdims", 1):
            continue
        x = graph.tensors[node.inputs[0]].shape
        if x is None or len(x) != 4:
            continue
        if len(node.inputs) > 1 and node.inputs[1]:            # opset 18: the axes are an input
            given = graph.const(node.inputs[1])
            axes = None if given is None else [int(a) for a in np.asarray(given).ravel()]
        else:
            axes = node.attr("axes", None)
            axes = None if axes is None else [int(a) for a in axes]
        if axes is None or sorted(a % 4 for a in axes) != [2, 3]:
            continue
        graph.replace([node.name], Node(node.name, OpKind.GLOBAL_AVG_POOL, "GlobalAveragePool", [node.inputs[0]],
                                        list(node.outputs), list(node.origin)))
    graph.prune_tensors()
    return graph


def slices_of_concats(graph: Graph) -> Graph:
    """A channel Slice or Split of a concat whose pieces fall on the concat's input boundaries (DPN's dual path
    splits each block's concat back into its residual and dense parts): each piece is the concat's inputs it
    covers, one input itself or a concat of the run. Exact, and nothing moves where the inputs are engine
    tensors already. The slice's origin goes to the concat that stands for it; where the slice was the concat's
    last reader, the concat goes too, and both origins go to a node that stands for them."""
    for node in list(graph.nodes.values()):
        cat = graph.producer(node.inputs[0]) if node.inputs else None
        shape = graph.tensors[node.inputs[0]].shape if node.inputs else None
        if cat is None or cat.kind is not OpKind.CONCAT or cat.attr("axis", 0) % 4 != 1 or shape is None \
                or len(shape) != 4:
            continue
        widths = [graph.tensors[t].shape[1] if graph.tensors[t].shape else None for t in cat.inputs]
        pieces = _channel_pieces(node, graph, shape[1])
        if pieces is None or None in widths or any(out in graph.outputs for out, _, _ in pieces):
            continue
        bounds = [int(b) for b in np.cumsum([0] + widths)]
        if not all(a in bounds and b in bounds for _, a, b in pieces):
            continue
        runs = [cat.inputs[bounds.index(a):bounds.index(b)] for _, a, b in pieces]
        # the concat's last reader: it goes too, its origin with the slice's to a node that stands for them
        dead = cat.outputs[0] not in graph.outputs and all(r is node for r in graph.consumers(cat.outputs[0]))
        host = graph.producer(cat.inputs[0]) if dead and all(len(r) == 1 for r in runs) else None
        if dead and host is None and all(len(r) == 1 for r in runs):
            continue
        made: list[Node] = []
        for (out, a, b), run in zip(pieces, runs):
            if len(run) == 1:
                graph.rewire(out, run[0])
            else:
                made.append(Node(graph.names.fresh(f"{node.name}_{a}_{b}"), OpKind.CONCAT, "Concat", list(run), [out],
                                 [], attrs={"axis": helper.make_attribute("axis", 1)}))
        owner = made[0] if made else host or cat
        owner.origin = owner.origin + (cat.origin if dead else []) + node.origin
        graph.splice(node.name, made)
        if dead:
            del graph.nodes[cat.name]
            graph.touch()
    graph.prune_tensors()
    return graph
