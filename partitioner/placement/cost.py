"""Cost model: MACs, bytes and engine cycles per node; CPU and FPGA time per region; offload or not.

FPGA layers are timed by the engine's cycle model (fpga_runtime/cycle_model.py) for the build's engine
parameters; CPU work by measured per-op costs (fpga_runtime/cpu_costs.py); transfers and program starts by
fpga_runtime/timing.py. All live on the runtime side so `predict` re-times a build the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fpga_runtime.abi import EngineConfig
from fpga_runtime.boards import Board
from fpga_runtime.cycle_model import layer_bytes, layer_cycles
from fpga_runtime.prediction import cpu_costs, timing
from fpga_runtime.prediction.shared_ddr import layer_s
from partitioner.engine.geometry import conv_output_hw, layer_shape
from partitioner.ir.graph import ConvForm, Graph, Node, OpKind

# A parallel branch becomes a subgraph of its own only with this much engine time, and this share of its
# region's: each costs a program start (timing.INVOKE_S) and a hop of the host's scheduler, and splits the FPGA
# chain into more segments, for an overlap of at most the branch's own time.
PARALLEL_MIN_S = 4 * timing.INVOKE_S
PARALLEL_MIN_SHARE = 0.05


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
        elif not graph.tensors[node.inputs[0]].is_static:
            macs = 0                        # dynamic shape: stays on the CPU, no engine estimate needed
        else:
            n = graph.tensors[node.inputs[0]].shape[0]
            h, wd = conv_output_hw(node, graph)
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
    ops: list = field(default_factory=list)   # a CPU region's (op type, elements, MACs) per node (cpu_costs.py)

    @property
    def fpga_s(self) -> float | None:
        return self.fpga_layers_s + self.transfer_s + self.invoke_s if self.on_fpga else None

    @property
    def worth_offloading(self) -> bool:
        return self.fpga_s < self.cpu_s

    def as_dict(self) -> dict:
        if self.fpga_s is None:
            return {"macs": self.macs, "elements": self.elements, "cpu_s": self.cpu_s, "ops": self.ops,
                    "model": "cycle-v1"}
        return {"macs": self.macs, "fpga_s": self.fpga_s, "fpga_compute_s": self.fpga_compute_s,
                "fpga_memory_s": self.fpga_memory_s,
                "fpga_layers_s": self.fpga_layers_s, "transfer_s": self.transfer_s, "invoke_s": self.invoke_s,
                "cpu_s": self.cpu_s, "speedup": self.cpu_s / self.fpga_s if self.fpga_s else None,
                "boundary_elements": self.boundary_elements, "elements": self.elements,
                "model": "cycle-v1"}


def cpu_op(node: Node, cost: NodeCost) -> tuple[str, int, int]:
    """A node as the CPU cost table sees it: a fused conv is a Conv, by its MACs."""
    return ("Conv" if node.kind is OpKind.FUSED_CONV else node.op_type), cost.act_bytes, cost.macs


class CostModel:
    def __init__(self, board: Board, engine: EngineConfig | None = None):
        self.board = board
        self.engine = engine or EngineConfig(clock_mhz=board.clock_mhz)
        self.cpu_table = cpu_costs.load()

    def layer_split(self, node: Node, graph: Graph) -> tuple[float, float]:
        """(compute seconds, memory seconds) of one engine layer."""
        shape = layer_shape(node, graph, self.engine)
        if shape is None:                        # a concat: its producers write into its output
            return 0.0, 0.0
        cycles = layer_cycles(shape, self.engine, self.board.port_bits // 8)
        nbytes = layer_bytes(shape, self.engine)
        return cycles / (self.engine.clock_mhz * 1e6), nbytes / (self.board.ddr_sustained_gbps * 1e9)

    def region(self, nodes: list[Node], graph: Graph, boundary_elements: int) -> RegionEstimate:
        costs = [node_cost(n, graph) for n in nodes]
        split = [self.layer_split(n, graph) for n in nodes]
        return RegionEstimate(sum(c.macs for c in costs), sum(a for a, _ in split), sum(b for _, b in split),
                              sum(layer_s(a, b) for a, b in split), timing.transfer_s(boundary_elements, self.board),
                              timing.INVOKE_S, self.cpu_region(nodes, costs), boundary_elements=boundary_elements,
                              elements=sum(c.act_bytes for c in costs))

    def cpu_region(self, nodes: list[Node], costs: list[NodeCost], session: bool = False) -> float:
        """onnxruntime's time for these nodes on the board's CPU, from measured per-op costs (cpu_costs.py):
        what they add to a CPU subgraph, or (`session`) as a subgraph of their own."""
        return self.cpu_table.subgraph_s([cpu_op(n, c) for n, c in zip(nodes, costs)], self.board, session)

    def cpu_only(self, nodes: list[Node], graph: Graph) -> RegionEstimate:
        costs = [node_cost(n, graph) for n in nodes]
        return RegionEstimate(sum(c.macs for c in costs), 0.0, 0.0, 0.0, 0.0, 0.0,
                              self.cpu_region(nodes, costs, session=True),
                              on_fpga=False, elements=sum(c.act_bytes for c in costs),
                              ops=[list(cpu_op(n, c)) for n, c in zip(nodes, costs)])
