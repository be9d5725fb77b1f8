"""First analytic cost model: MACs and bytes per node, CPU and FPGA time per region, offload or not.

Assumptions (to be replaced by the cycle model of the kernel issue, calibrated by RTL simulation):
- FPGA compute: int8 MACs at `MAC_EFFICIENCY` of the peak `dsp * macs_per_dsp * clock`, overlapped with
  memory traffic, so a layer costs max(compute, bytes / DDR bandwidth). Activations and weights are int8.
- Every FPGA subgraph pays `INVOKE_S` per start (descriptor program start and completion interrupt).
- Tensors crossing between CPU and FPGA are quantised or dequantised on the CPU (4 bytes read or written
  per element at the CPU's element-wise rate) and cross DDR once as int8.
- CPU: float32 MACs at the board's `cpu_gmacs`, element-wise work at `cpu_gbps`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fpga_runtime.boards import Board

from .ir import ConvForm, Graph, Node, OpKind

MAC_EFFICIENCY = 0.6
DSP_SHARE = 0.8          # DSPs the engine may take; the rest stay for the platform
INVOKE_S = 50e-6


@dataclass(frozen=True)
class NodeCost:
    macs: int
    act_bytes: int        # int8 activations read and written by the engine
    weight_bytes: int


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

    @property
    def fpga_s(self) -> float:
        return self.fpga_layers_s + self.transfer_s + self.invoke_s

    @property
    def worth_offloading(self) -> bool:
        return self.fpga_s < self.cpu_s

    def as_dict(self) -> dict:
        return {"macs": self.macs, "fpga_s": self.fpga_s, "fpga_compute_s": self.fpga_compute_s,
                "fpga_memory_s": self.fpga_memory_s,
                "fpga_layers_s": self.fpga_layers_s, "transfer_s": self.transfer_s, "invoke_s": self.invoke_s,
                "cpu_s": self.cpu_s, "speedup": self.cpu_s / self.fpga_s if self.fpga_s else None,
                "model": "analytic-v1"}


class CostModel:
    def __init__(self, board: Board):
        self.board = board

    @property
    def fpga_macs_per_s(self) -> float:
        b = self.board
        return b.dsp * DSP_SHARE * b.int8_macs_per_dsp * b.clock_mhz * 1e6 * MAC_EFFICIENCY

    def cpu_seconds(self, cost: NodeCost) -> float:
        return cost.macs / (self.board.cpu_gmacs * 1e9) + 4 * cost.act_bytes / (self.board.cpu_gbps * 1e9)

    def region(self, nodes: list[Node], graph: Graph, boundary_elements: int) -> RegionEstimate:
        costs = [node_cost(n, graph) for n in nodes]
        ddr = self.board.ddr_gbps * 1e9
        compute = [c.macs / self.fpga_macs_per_s for c in costs]
        memory = [(c.act_bytes + c.weight_bytes) / ddr for c in costs]
        transfer = boundary_elements * 4 / (self.board.cpu_gbps * 1e9) + boundary_elements / ddr
        return RegionEstimate(sum(c.macs for c in costs), sum(compute), sum(memory),
                              sum(max(a, b) for a, b in zip(compute, memory)), transfer, INVOKE_S,
                              sum(self.cpu_seconds(c) for c in costs))
