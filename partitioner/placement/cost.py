"""Cost model: MACs, bytes and engine cycles per node; CPU and FPGA time per region; offload or not.

FPGA layers are timed by the engine's cycle model (fpga_runtime/cycle_model.py) for the build's engine
parameters; CPU work by measured per-op costs (fpga_runtime/cpu_costs.py); transfers and program starts by
fpga_runtime/timing.py. All live on the runtime side so `predict` re-times a build the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fpga_runtime.abi import Descriptor, EngineConfig, Flag, Op
from fpga_runtime.boards import Board
from fpga_runtime.cycle_model import LayerShape, layer_cycles, taps_inside
from fpga_runtime.prediction import cpu_costs, timing
from partitioner.ir.graph import ConvForm, Graph, Node, OpKind, Pool, ResidualAdd

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


def conv_output_hw(node: Node, graph: Graph) -> tuple[int, int]:
    """A fused conv's own output size, before any fused pooling."""
    spec = node.conv
    x = graph.tensors[node.inputs[0]].shape
    if spec.form is ConvForm.DENSE:
        return 1, 1
    if spec.form is ConvForm.TRANSPOSED:          # per output phase: a 1x1 conv over the input
        return x[2], x[3]
    h = (x[2] * spec.upsample + spec.pads[0] + spec.pads[2] - spec.dilations[0] * (spec.kernel[0] - 1) - 1) \
        // spec.strides[0] + 1
    w = (x[3] * spec.upsample + spec.pads[1] + spec.pads[3] - spec.dilations[1] * (spec.kernel[1] - 1) - 1) \
        // spec.strides[1] + 1
    return h, w


def conv_descriptor(node: Node, graph: Graph, cfg: EngineConfig) -> Descriptor | None:
    """The geometry fields of the descriptor a fused (non-dense) conv compiles to: what decides its RTL path."""
    spec = node.conv
    if node.kind is not OpKind.FUSED_CONV or spec is None or spec.form is ConvForm.DENSE:
        return None
    x = graph.tensors[node.inputs[0]].shape
    h, w = conv_output_hw(node, graph)
    residual = any(isinstance(step, ResidualAdd) for step in spec.epilogue)
    pool = any(isinstance(step, Pool) for step in spec.epilogue)
    flags = (Flag.DEPTHWISE * (spec.group > 1) | Flag.RESIDUAL * residual | Flag.UPSAMPLE2 * (spec.upsample > 1)
             | Flag.POOL * pool)
    y = graph.tensors[node.outputs[0]].shape
    if spec.form is ConvForm.TRANSPOSED:          # one of its four phases
        return Descriptor(op=Op.CONV, flags=int(flags), batch=x[0], in_h=x[2], in_w=x[3], in_c=cfg.padded(x[1]),
                          out_c=cfg.padded(y[1]), conv_h=h, conv_w=w, out_h=h, out_w=w, out_step=2)
    return Descriptor(op=Op.CONV, flags=int(flags), batch=x[0], in_h=x[2], in_w=x[3], in_c=cfg.padded(x[1]),
                      out_c=cfg.padded(y[1]),
                      conv_h=h, conv_w=w, kh=spec.kernel[0], kw=spec.kernel[1], stride_h=spec.strides[0],
                      stride_w=spec.strides[1], dil_h=spec.dilations[0], dil_w=spec.dilations[1], pad_t=spec.pads[0])


def layer_shape(node: Node, graph: Graph, cfg: EngineConfig) -> LayerShape | None:
    """The engine layer a node becomes (None: a concat, which costs no layer)."""
    y = graph.tensors[node.outputs[0]].shape
    if node.kind is OpKind.CONCAT:
        return None
    if node.kind is OpKind.FUSED_CONV:
        x = graph.tensors[node.inputs[0]].shape
        h, w = conv_output_hw(node, graph)
        spec = node.conv
        inside = 1.0
        if spec.form is ConvForm.TRANSPOSED:
            shape = LayerShape(Op.CONV, x[0], cfg.padded(x[1]), cfg.padded(y[1]), 1, 1, h, w, phases=4)
            return shape.on_window_path(conv_descriptor(node, graph, cfg), cfg)
        if spec.form is ConvForm.CONV:
            inside = (taps_inside(h, spec.kernel[0], spec.strides[0], spec.pads[0], spec.dilations[0],
                                  x[2] * spec.upsample)
                      * taps_inside(w, spec.kernel[1], spec.strides[1], spec.pads[1], spec.dilations[1],
                                    x[3] * spec.upsample))
        residual = any(isinstance(step, ResidualAdd) for step in spec.epilogue)
        shape = LayerShape(Op.CONV, x[0], cfg.padded(x[1]), cfg.padded(y[1]), spec.kernel[0], spec.kernel[1], h, w,
                           spec.group > 1, residual, inside=inside)
        desc = conv_descriptor(node, graph, cfg)
        return shape if desc is None else shape.on_window_path(desc, cfg)
    if node.kind is OpKind.GLOBAL_AVG_POOL:
        x = graph.tensors[node.inputs[0]].shape
        return LayerShape(Op.GLOBAL_AVG_POOL, x[0], cfg.padded(x[1]), cfg.padded(y[1]), 1, 1, x[2], x[3])
    op = {OpKind.ADD: Op.ADD, OpKind.MAXPOOL: Op.MAXPOOL, OpKind.MUL: Op.SCALE,
          OpKind.LP_NORMALIZATION: Op.L2NORM}.get(node.kind, Op.COPY)
    return LayerShape(op, y[0], cfg.padded(y[1]), cfg.padded(y[1]), 1, 1, y[2], y[3])


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

    def layer_split(self, node: Node, graph: Graph, cost: NodeCost) -> tuple[float, float]:
        """(compute seconds, memory seconds) of one engine layer."""
        shape = layer_shape(node, graph, self.engine)
        cycles = layer_cycles(shape, self.engine, self.board.port_bits // 8) if shape else 0
        return cycles / (self.engine.clock_mhz * 1e6), cost.bytes / (self.board.ddr_gbps * 1e9)

    def region(self, nodes: list[Node], graph: Graph, boundary_elements: int) -> RegionEstimate:
        costs = [node_cost(n, graph) for n in nodes]
        split = [self.layer_split(n, graph, c) for n, c in zip(nodes, costs)]
        return RegionEstimate(sum(c.macs for c in costs), sum(a for a, _ in split), sum(b for _, b in split),
                              sum(max(a, b) for a, b in split), timing.transfer_s(boundary_elements, self.board),
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
