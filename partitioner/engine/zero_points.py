"""Which int8 tensors get a zero point, and which one.

Symmetric codes waste half their range on a tensor without negatives (a ReLU's output) and most of it on one
with few (HardSwish, SiLU and LeakyReLU outputs, an image in [0, 1]). There the codes are asymmetric: a value is
(q - zero) * scale, with the calibrated span over all 256 codes.

Every layer touching such a tensor must take the zero point exactly:
- a conv reading it folds the zero point into its bias (sum w (q - z) = sum w q - z sum w), since the engine
  fills the taps outside the image with the same z (descriptor `in_zero`);
- a conv writing it adds the zero point in its bias (the requantiser's rounding of that is far below one output
  step) or in its activation table;
- max pools, upsampling copies and concats only move codes: a group of them shares one scale and zero point.
Adds, channel gates, average pools, L2 normalisation and a fused residual do arithmetic that assumes zero = 0,
so what they read or write stays symmetric, as does every tensor of a QDQ model (it brings its own scales).

Asymmetric codes have no room beyond the calibrated small side, so they are taken on trust only where the
writer bounds that side by itself (ReLU, ReLU6, sigmoids: 0; SiLU -0.28; HardSwish -0.375). Elsewhere (a
LeakyReLU's or a linear conv's output, a host-written input) the small side is doubled first, which keeps most
of such tensors symmetric: a frame reaching past the calibrated minimum would otherwise be clipped.
"""
from __future__ import annotations

import numpy as np

from partitioner.ir.graph import Activation, ActKind, Graph, Node, OpKind, Pool, ResidualAdd
from partitioner.ir.op_facts import gate_operands, pool_of

ASYMMETRIC_GAIN = 0.8        # asymmetric where its step is at most this share of the symmetric step (>= 1.9 dB)
UNBOUNDED_MARGIN = 2.0       # the calibrated small side is widened so much where the writer does not bound it
_MOVERS = (OpKind.MAXPOOL, OpKind.RESIZE, OpKind.CONCAT)
_BOUNDED_BELOW = {ActKind.RELU, ActKind.RELU6, ActKind.SIGMOID, ActKind.HARD_SIGMOID, ActKind.SILU,
                  ActKind.HARD_SWISH, ActKind.MISH, ActKind.TANH, ActKind.ELU, ActKind.SELU, ActKind.SOFTPLUS,
                  ActKind.GELU, ActKind.GELU_TANH}


def last_arithmetic_step(node: Node) -> int | None:
    """Index of the epilogue step that writes the output's codes (pools after it only pick among them); None: the
    requantiser itself."""
    return next((i for i in reversed(range(len(node.conv.epilogue)))
                 if not isinstance(node.conv.epilogue[i], Pool)), None)


def writes_zero_point(node: Node) -> bool:
    if node.kind in _MOVERS:
        pool = pool_of(node) if node.kind is OpKind.MAXPOOL else None
        return pool is None or not pool.pad_zero
    if node.conv is None or any(isinstance(s, Pool) and s.pad_zero or isinstance(s, Activation)
                                and s.kind is ActKind.PRELU for s in node.conv.epilogue):
        return False                    # PRELU: a zero point in the bias would move where the sign flips
    last = last_arithmetic_step(node)
    return last is None or not isinstance(node.conv.epilogue[last], ResidualAdd)


def reads_zero_point(node: Node, tensor: str) -> bool:
    if node.conv is not None:
        residual = {s.tensor for s in node.conv.epilogue if isinstance(s, ResidualAdd)}
        return node.inputs[0] == tensor and tensor not in residual
    return writes_zero_point(node) if node.kind in _MOVERS else False


def bounds_its_output(node: Node) -> bool:
    """Whether the layer's last arithmetic step limits its output's negative side whatever the input."""
    if node.conv is None:
        return False
    last = last_arithmetic_step(node)
    step = node.conv.epilogue[last] if last is not None else None
    return isinstance(step, Activation) and (step.kind in _BOUNDED_BELOW
                                             or step.kind is ActKind.CLIP and step.lo is not None)


def eligible_tensors(graph: Graph, fpga_nodes: list[str]) -> tuple[set[str], set[str]]:
    """ONNX names of tensors whose every FPGA writer and reader can take a zero point (before grouping), and of
    those whose writer bounds their negative side. None for a QDQ model."""
    if graph.fixed_scales:
        return set(), set()
    ok: dict[str, bool] = {}
    bounded: set[str] = set()
    for n in fpga_nodes:
        node = graph.nodes[n]
        for t in node.outputs:
            name = graph.tensors[t].onnx_name
            ok[name] = ok.get(name, True) and writes_zero_point(node)
            if bounds_its_output(node) or node.kind in _MOVERS:
                bounded.add(name)
        operands = gate_operands(node, graph) if node.kind is OpKind.MUL else None
        gate = operands[1] if operands else None
        for t in node.inputs:
            if t and graph.const(t) is None:
                name = graph.tensors[t].onnx_name
                ok[name] = ok.get(name, True) and (reads_zero_point(node, t) or t == gate)   # SCALE's offset
    return {name for name, good in ok.items() if good}, bounded


def asymmetric(threshold: float, bounds: tuple[float, float] | None, trusted: bool) -> tuple[float, int] | None:
    """(scale, zero) over the calibrated [min, max] clipped to +-threshold, where that beats symmetric codes.
    Untrusted bounds have their small side widened by UNBOUNDED_MARGIN first."""
    if bounds is None or not threshold > 0 or not np.isfinite(threshold):
        return None
    lo, hi = min(0.0, bounds[0]), max(0.0, bounds[1])
    if not trusted:
        lo, hi = (lo * UNBOUNDED_MARGIN, hi) if -lo < hi else (lo, hi * UNBOUNDED_MARGIN)
    lo = max(lo, -threshold)
    hi = min(hi, threshold)
    scale = (hi - lo) / 255.0
    if not scale > 0 or scale > ASYMMETRIC_GAIN * threshold / 127.0:
        return None
    zero = int(np.clip(np.rint(-128.0 - lo / scale), -128, 127))
    return scale, zero
