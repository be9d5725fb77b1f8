"""Scales and memory views of the tensors the engine touches.

Scale rules (int8, per tensor): the scale a QDQ model gives the tensor, else the calibrated range / 127, or
the calibrated span / 255 with a zero point where that pays (`zero_points`). Max pooling, copies
(upsampling) and zero-copy channel concats do no arithmetic, so their inputs and outputs share one scale: the
largest of the group.

Layout rules: int8 NHWC, channels padded to the engine's granule. A channel concat is one buffer holding each
input in its own padded slot; readers of the concat see the slots' padding as channels with zero weights.
An input that already lives elsewhere (read by two concats, or twice by one) is copied into its slot.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from fpga_runtime.abi import EngineConfig
from fpga_runtime.engine_image import TensorView
from partitioner.engine.activations import useful_span
from partitioner.engine.geometry import column_taps, cpu_fed_convs, packed_width
from partitioner.engine.memory import ActivationArena
from partitioner.engine.zero_points import ASYMMETRIC_GAIN, UNBOUNDED_MARGIN, asymmetric, eligible_tensors
from partitioner.ir.graph import BY_REQUANTISER, Activation, Graph, OpKind, ResidualAdd
from partitioner.ir.op_facts import gate_operands
from partitioner.ir.to_onnx import stage_names


class _Groups:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)


def engine_tensor_names(graph: Graph, fpga_nodes: list[str]) -> list[str]:
    """Every tensor an FPGA node reads or writes and every fused stage, by ONNX name, in order: what needs a
    calibrated range (or a fixed QDQ scale)."""
    names: list[str] = []
    for n in fpga_nodes:
        node = graph.nodes[n]
        names += [graph.tensors[t].onnx_name for t in node.inputs if t and graph.const(t) is None]
        names += [graph.tensors[t].onnx_name for t in node.outputs]
        if node.conv is not None:
            names += stage_names(graph, node)
    return list(dict.fromkeys(names))


def tensor_scales(graph: Graph, fpga_nodes: list[str], ranges: dict[str, float], warnings: list[str],
                  bounds: dict[str, tuple[float, float]] | None = None) -> tuple[dict[str, float], dict[str, int]]:
    """Scale and zero point per ONNX tensor name: every tensor an FPGA node reads or writes, and every fused stage
    (symmetric, but for the stage a table activation reads: `_table_stage`). Zero points come from the calibrated
    signed bounds (`zero_points`); without them every tensor is symmetric."""
    groups = _Groups()
    names: list[str] = []
    for n in fpga_nodes:
        node = graph.nodes[n]
        io = [graph.tensors[t].onnx_name for t in node.inputs if t and graph.const(t) is None]
        out = [graph.tensors[t].onnx_name for t in node.outputs]
        names += io + out
        if node.conv is not None:
            names += stage_names(graph, node)
        if node.kind in (OpKind.MAXPOOL, OpKind.RESIZE, OpKind.CONCAT):
            for t in io:
                groups.union(t, out[0])
    best: dict[str, float] = {}
    fixed = graph.fixed_scales
    missing = []
    for name in dict.fromkeys(names):
        if name in fixed:
            root = groups.find(name)
            best[root] = max(best.get(root, 0.0), fixed[name] * 127.0)
            continue
        if name not in ranges:
            missing.append(name)
        elif not np.isfinite(ranges[name]):
            warnings.append(f"tensor {name!r} reached {ranges[name]} on the calibration frames; its int8 range is "
                            "set to +-127 (scale 1.0): check the model and the frames")
        root = groups.find(name)
        value = ranges.get(name, 127.0)
        best[root] = max(best.get(root, 0.0), value if np.isfinite(value) else 127.0)
    if missing:
        listed = ", ".join(repr(m) for m in missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        warnings.append(f"no calibration range for {len(missing)} engine tensor(s) ({listed}); using scale 1.0")
    scales = {name: (best[groups.find(name)] / 127.0) or 1.0 for name in dict.fromkeys(names)}
    zeros = {name: 0 for name in scales}
    if not bounds:
        return scales, zeros
    eligible, bounded = eligible_tensors(graph, fpga_nodes)
    stages = {s for n in fpga_nodes if graph.nodes[n].conv is not None for s in graph.nodes[n].conv.stages}
    members: dict[str, list[str]] = {}
    for name in scales:
        members.setdefault(groups.find(name), []).append(name)
    for root, group in members.items():
        if any(m not in eligible or m in stages or m not in bounds for m in group):
            continue
        span = (min(bounds[m][0] for m in group), max(bounds[m][1] for m in group))
        # a mover (pool, copy, concat) bounds nothing itself: the group is trusted when its writers are
        trusted = all(m in bounded for m in group)
        chosen = asymmetric(best[root], span, trusted)
        if chosen is not None:
            for m in group:
                scales[m], zeros[m] = chosen
    for n in fpga_nodes:
        node = graph.nodes[n]
        if node.conv is not None and node.conv.epilogue and table_first(node.conv.epilogue[0]) \
                and node.conv.stages[0] not in fixed:
            names = stage_names(graph, node)
            chosen = _table_stage(node.conv.epilogue[0], best[groups.find(names[0])], bounds.get(names[0]),
                                  scales[names[1]])
            if chosen is not None:
                scales[names[0]], zeros[names[0]] = chosen
    return scales, zeros


def table_first(step) -> bool:
    """Whether a fused conv's first epilogue step is a table activation (its stage, the conv output, is the
    table's index)."""
    return isinstance(step, Activation) and step.kind not in BY_REQUANTISER


def _table_stage(act: Activation, threshold: float, bounds: tuple[float, float] | None, s_out: float
                 ) -> tuple[float, int] | None:
    """(scale, zero) of the stage a table activation reads: only the span where the function still moves its
    output (`useful_span`: SiLU's flat negative tail, a sigmoid's two) gets codes, with a zero point where the span
    is lopsided. The stage is internal to the layer (the requantiser writes it, the table reads it), so its zero
    point costs nothing at run time: it is in the bias and in the table. An end the function did not clip has its
    calibrated reach widened, as for any tensor whose writer does not bound it (`zero_points`)."""
    if bounds is None or not threshold > 0 or not np.isfinite(threshold):
        return None
    lo, hi = max(min(bounds[0], 0.0), -threshold), min(max(bounds[1], 0.0), threshold)
    a, b, clipped_lo, clipped_hi = useful_span(act, s_out, lo, hi)
    a = a if clipped_lo else max(a * UNBOUNDED_MARGIN, -threshold)
    b = b if clipped_hi else min(b * UNBOUNDED_MARGIN, threshold)
    a, b = min(a, 0.0), max(b, 0.0)
    scale = (b - a) / 255.0
    if not scale > 0 or scale > ASYMMETRIC_GAIN * threshold / 127.0:
        return None
    return scale, int(np.clip(np.rint(-128.0 - a / scale), -128, 127))


@dataclass
class Copy:
    """A COPY layer the compiler must add before `before` (the concat) so `src` also lands in `dst`."""
    src: str
    dst: str
    before: str


@dataclass
class Layout:
    views: dict[str, TensorView] = field(default_factory=dict)       # by IR tensor name
    copies: list[Copy] = field(default_factory=list)


def _nhwc(graph: Graph, tensor: str) -> tuple[int, int, int, int, str]:
    shape = graph.tensors[tensor].shape
    if len(shape) == 4:
        return shape[0], shape[2], shape[3], shape[1], "nchw"
    return shape[0], 1, 1, shape[1], "nc"


def plan_layout(graph: Graph, fpga_nodes: list[str], scales: dict[str, float], config: EngineConfig,
                arena: ActivationArena, zeros: dict[str, int] | None = None,
                winograd: set[str] | frozenset[str] = frozenset(), column_packing: bool = True) -> Layout:
    """Every engine tensor's view; a conv's input the host writes column-packed where that pays (`column_taps`),
    unless the conv is a Winograd layer (`winograd`: its 4x4 input patches read the plain layout) or packing is off
    (the golden cases, which exercise the kernels and paddings they are named for)."""
    layout = Layout()
    onnx = {t: graph.tensors[t].onnx_name for t in graph.tensors}

    def view(tensor: str, addr: int, c_stride: int, c_offset: int, name: str | None = None) -> TensorView:
        n, h, w, c, kind = _nhwc(graph, tensor)
        return TensorView(name or onnx[tensor], addr, n, h, w, c_stride, c_offset, list(range(c)),
                          scales[onnx[tensor]], kind, (zeros or {}).get(onnx[tensor], 0))

    shared = _shared_layouts(graph, fpga_nodes)
    members: dict[str, list[str]] = {}
    for t in list(shared.parent):
        members.setdefault(shared.find(t), []).append(t)

    def placed_like(t: str) -> TensorView | None:
        return next((layout.views[m] for m in members.get(shared.find(t), []) if m in layout.views), None)

    for name in fpga_nodes:
        node = graph.nodes[name]
        if node.kind is not OpKind.CONCAT:
            continue
        n, h, w, _, _ = _nhwc(graph, node.outputs[0])
        # an input placed already (an inner concat, or a tensor read twice) keeps its channel placement in
        # its copy, and one that must share a placement already made (a residual onto an earlier concat) takes
        # it; its slot is as wide as that placement
        maps = [list(layout.views[t].channel_map) if t in layout.views
                else list(like.channel_map) if (like := placed_like(t)) is not None
                else list(range(_nhwc(graph, t)[3])) for t in node.inputs]
        slots = [config.padded(max(m, default=-1) + 1) for m in maps]
        stride = sum(slots)
        addr = arena.alloc(n * h * w * stride)
        offsets = [sum(slots[:i]) for i in range(len(slots))]
        for i, (t, off) in enumerate(zip(node.inputs, offsets)):
            if t in layout.views:
                copy_name = graph.names.fresh(f"{onnx[t]}_copy")
                layout.views[copy_name] = view(t, addr, stride, off, name=copy_name)
                layout.views[copy_name].channel_map = list(maps[i])
                layout.copies.append(Copy(t, copy_name, name))
            else:
                layout.views[t] = view(t, addr, stride, off)
                layout.views[t].channel_map = list(maps[i])
        out = view(node.outputs[0], addr, stride, 0)
        out.channel_map = [off + k for m, off in zip(maps, offsets) for k in m]
        layout.views[node.outputs[0]] = out
    packed = {graph.nodes[n].inputs[0]: graph.nodes[n] for n in cpu_fed_convs(graph, fpga_nodes)
              if column_packing and n not in winograd and column_taps(graph.nodes[n], graph, config, True) > 1}
    for name in fpga_nodes:
        node = graph.nodes[name]
        for t in [t for t in node.inputs if t and graph.const(t) is None] + node.outputs:
            if t in layout.views:
                continue
            n, h, w, c, _ = _nhwc(graph, t)
            if t in packed:                # read by its conv alone (cpu_fed_convs): it shares no placement
                conv = packed[t]
                taps, wide = conv.conv.kernel[1], packed_width(conv, graph)
                stride = config.padded(taps * c)
                v = view(t, arena.alloc(n * h * wide * stride), stride, 0)
                v.w, v.channel_map = wide, list(range(taps * c))
                v.column_taps, v.column_pad, v.source_w = taps, conv.conv.pads[1], w
                layout.views[t] = v
                continue
            like = placed_like(t)
            channel_map = list(like.channel_map) if like is not None else list(range(c))
            stride = config.padded(max(channel_map, default=-1) + 1)
            layout.views[t] = view(t, arena.alloc(n * h * w * stride), stride, 0)
            layout.views[t].channel_map = channel_map
    return layout


def _shared_layouts(graph: Graph, fpga_nodes: list[str]) -> _Groups:
    """Tensors that must share one channel placement, which may be a concat's with padding between its slots:
    the output and the input of a global average pool, a standalone max pool or upsample, or a depthwise conv;
    a channel gate (SE block), the gated activation and the result; both addends and the sum of an element-wise
    add; a conv's output and the residual it adds. Channels are independent there, so whichever of them is
    placed first (a concat's output, say) places the others."""
    groups = _Groups()
    for name in fpga_nodes:
        node = graph.nodes[name]
        residual = [s.tensor for s in node.conv.epilogue if isinstance(s, ResidualAdd)] if node.conv else []
        if residual:
            groups.union(node.outputs[0], residual[0])
        if node.conv is not None and node.conv.group > 1:          # depthwise (a lone BatchNorm's, say)
            groups.union(node.outputs[0], node.inputs[0])
        if node.kind is OpKind.ADD:
            groups.union(node.inputs[1], node.inputs[0])
            groups.union(node.outputs[0], node.inputs[0])
        elif node.kind in (OpKind.GLOBAL_AVG_POOL, OpKind.LP_NORMALIZATION, OpKind.MAXPOOL, OpKind.RESIZE):
            groups.union(node.outputs[0], node.inputs[0])      # lane-wise: channel k in, channel k out
        elif node.kind is OpKind.MUL and (operands := gate_operands(node, graph)) is not None:
            data, gate = operands
            groups.union(gate, data)
            groups.union(node.outputs[0], data)
    return groups


def layout_conflict(graph: Graph, node_name: str, views: dict[str, TensorView]) -> str | None:
    """Why the engine cannot run this node with these channel placements: a lane-wise layer (depthwise conv,
    residual or element-wise add, channel gate, global pool, L2 norm) whose operands were placed differently by
    two concats. None when it can."""
    node = graph.nodes[node_name]

    def same(*tensors: str) -> bool:
        maps = [views[t].channel_map for t in tensors if t in views]
        return all(m == maps[0] for m in maps)

    x, y = node.inputs[0], node.outputs[0]
    if node.kind is OpKind.ADD and not same(x, node.inputs[1], y):
        return "engine add of tensors with different channel layouts"
    if node.kind in (OpKind.GLOBAL_AVG_POOL, OpKind.LP_NORMALIZATION, OpKind.MAXPOOL, OpKind.RESIZE) \
            and not same(x, y):
        return f"{node.kind.value} whose input and output channel layouts differ"
    if node.kind is OpKind.MUL and (operands := gate_operands(node, graph)) is not None \
            and not same(operands[0], operands[1], y):
        return "channel scale of tensors with different channel layouts"
    if node.conv is not None:
        if node.conv.group > 1 and not same(x, y):
            return "depthwise conv whose input and output channel layouts differ"
        residual = [st.tensor for st in node.conv.epilogue if isinstance(st, ResidualAdd)]
        if residual and not same(residual[0], y):
            return "residual input with a different channel layout"
    return None


def layout_conflicts(graph: Graph, fpga_nodes: list[str], config: EngineConfig) -> dict[str, str]:
    """The FPGA nodes whose operands two concats place differently (MixNet's mixed-kernel depthwise convs
    between a split and a concat, ReXNet's residual onto part of a concat), each with its reason: the
    partitioner keeps them on the CPU. Placement does not depend on scales or addresses."""
    layout = plan_layout(graph, fpga_nodes, defaultdict(lambda: 1.0), config, ActivationArena())
    found = {}
    for n in fpga_nodes:
        if (why := layout_conflict(graph, n, layout.views)) is not None:
            found[n] = f"{why} on the engine (two concats place its channels differently)"
    return found
