"""First analytic cost model: MACs and bytes per node, CPU and FPGA time per region, offload or not.

The timing formulas and their assumptions are in fpga_runtime/timing.py (shared with `predict`); this module
counts what they need. To be replaced by the cycle model of the kernel issue, calibrated by RTL simulation.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fpga_runtime import timing
from fpga_runtime.boards import Board

from .ir import ConvForm, Graph, Node, OpKind


@dataclass(frozen=True)
class NodeCost:
    macs: int
    act_bytes: int        # int8 activations read and written by the engine
    weight_bytes: int

    @property
    def bytes(self) -> int:
        return self.act_bytes + self.weight_bytes


def node_cost(node: Node, graph: Graph) -> NodeCost:
    ins = [graph.tensors[t] for t in node.inputs if t and graph.const(t) is None]
    outs = [graph.tensors[t] for t in node.outputs if t]
    act = sum(t.numel() for t in ins + outs)
    if node.kind is OpKind.FUSED_CONV:
        spec = node.conv
        w = graph.const(spec.weight)
        y = graph.tensors[node.outputs[0]]
        if spec.form is ConvForm.DENSE:
            macs = int(np.prod(w.shape)) * (graph.tensors[node.inputs[0]].shape[0] if y.is_static else 1)
        else:
            pre_pool = graph.tensors[node.inputs[0]].shape
            n = pre_pool[0] if y.is_static else 1
            # MACs are counted at the conv's own output size, before any fused pooling
            h = (pre_pool[2] * spec.upsample + spec.pads[0] + spec.pads[2]
                 - spec.dilations[0] * (spec.kernel[0] - 1) - 1) // spec.strides[0] + 1
            wd = (pre_pool[3] * spec.upsample + spec.pads[1] + spec.pads[3]
                  - spec.dilations[1] * (spec.kernel[1] - 1) - 1) // spec.strides[1] + 1
            macs = int(n * w.shape[0] * h * wd * int(np.prod(w.shape[1:])))
        wbytes = w.size + 4 * (w.shape[0] if spec.bias else 0)
        return NodeCost(macs, act, wbytes)
    return NodeCost(0, act, 0)


@dataclass(frozen=True)
class RegionEstimate:
    macs: int
    fpga_compute_s: float
    fpga_memory_s: float
    fpga_layers_s: float      # per layer max(compute, memory), summed
    transfer_s: float
    invoke_s: float
    cpu_s: float
    on_fpga: bool = True
    boundary_elements: int = 0
    elements: int = 0                # activation elements the nodes read and write (CPU element-wise cost)

    @property
    def fpga_s(self) -> float | None:
        return self.fpga_layers_s + self.transfer_s + self.invoke_s if self.on_fpga else None

    @property
    def worth_offloading(self) -> bool:
        return self.fpga_s < self.cpu_s

    def as_dict(self) -> dict:
        if self.fpga_s is None:
            return {"macs": self.macs, "elements": self.elements, "cpu_s": self.cpu_s, "model": "analytic-v1"}
        return {"macs": self.macs, "fpga_s": self.fpga_s, "fpga_compute_s": self.fpga_compute_s,
                "fpga_memory_s": self.fpga_memory_s,
                "fpga_layers_s": self.fpga_layers_s, "transfer_s": self.transfer_s, "invoke_s": self.invoke_s,
                "cpu_s": self.cpu_s, "speedup": self.cpu_s / self.fpga_s if self.fpga_s else None,
                "boundary_elements": self.boundary_elements, "elements": self.elements,
                "model": "analytic-v1"}


class CostModel:
    def __init__(self, board: Board):
        self.board = board

    def region(self, nodes: list[Node], graph: Graph, boundary_elements: int) -> RegionEstimate:
        costs = [node_cost(n, graph) for n in nodes]
        split = [timing.fpga_layer_s(c.macs, c.bytes, self.board) for c in costs]
        return RegionEstimate(sum(c.macs for c in costs), sum(a for a, _ in split), sum(b for _, b in split),
                              sum(max(a, b) for a, b in split), timing.transfer_s(boundary_elements, self.board),
                              timing.INVOKE_S, self.cpu_region(costs), boundary_elements=boundary_elements,
                              elements=sum(c.act_bytes for c in costs))

    def cpu_region(self, costs: list[NodeCost]) -> float:
        return sum(timing.cpu_s(c.macs, c.act_bytes, self.board) for c in costs)

    def cpu_only(self, nodes: list[Node], graph: Graph) -> RegionEstimate:
        costs = [node_cost(n, graph) for n in nodes]
        return RegionEstimate(sum(c.macs for c in costs), 0.0, 0.0, 0.0, 0.0, 0.0, self.cpu_region(costs),
                              on_fpga=False, elements=sum(c.act_bytes for c in costs))
