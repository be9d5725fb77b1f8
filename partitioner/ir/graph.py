"""The graph IR: typed nodes and tensors over a networkx DAG.

Every name in the IR is a safe identifier (see names.py); `onnx_name` and `origin` keep what the user's
model called things, so reports and the partitioned ONNX files speak the user's language.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

import networkx as nx
import numpy as np
import onnx
from onnx import helper

from partitioner.ir.names import NameTable

Dim = int | str | None


class OpKind(enum.Enum):
    """Ops the passes reason about; everything else is OTHER and keeps its ONNX op type."""

    CONV = "Conv"
    CONV_TRANSPOSE = "ConvTranspose"
    GEMM = "Gemm"
    MATMUL = "MatMul"
    BATCHNORM = "BatchNormalization"
    RELU = "Relu"
    LEAKY_RELU = "LeakyRelu"
    CLIP = "Clip"
    SIGMOID = "Sigmoid"
    HARD_SIGMOID = "HardSigmoid"
    HARD_SWISH = "HardSwish"
    TANH = "Tanh"
    ELU = "Elu"
    SELU = "Selu"
    SOFTPLUS = "Softplus"
    GELU = "Gelu"          # opset 20's op; in the IR at opset 17 too (smooth_activations.py), lowered back on export
    MUL = "Mul"
    ADD = "Add"
    MAXPOOL = "MaxPool"
    CONCAT = "Concat"
    RESIZE = "Resize"
    GLOBAL_AVG_POOL = "GlobalAveragePool"
    LP_NORMALIZATION = "LpNormalization"
    FUSED_CONV = "FusedConv"
    OTHER = "Other"

    @classmethod
    def of(cls, op_type: str, domain: str) -> "OpKind":
        if domain not in ("", "ai.onnx"):
            return cls.OTHER
        try:
            kind = cls(op_type)
        except ValueError:
            return cls.OTHER
        return cls.OTHER if kind is cls.FUSED_CONV else kind


class ConvForm(enum.Enum):
    CONV = "conv"      # NCHW convolution
    DENSE = "dense"    # Gemm/MatMul with constant weights, run as a 1x1 convolution over [N, K]
    TRANSPOSED = "transposed"  # ConvTranspose with kernel = stride = 2: weight [out, in, 2, 2], one 1x1 conv per
                               # output phase (dy, dx), written interleaved


class ActKind(enum.Enum):
    RELU = "relu"
    RELU6 = "relu6"
    CLIP = "clip"
    LEAKY_RELU = "leaky_relu"
    SIGMOID = "sigmoid"
    SILU = "silu"
    HARD_SWISH = "hard_swish"
    HARD_SIGMOID = "hard_sigmoid"
    MISH = "mish"                  # x * tanh(softplus(x)): YOLOv4's and CSPDarknet's activation
    TANH = "tanh"
    ELU = "elu"                    # alpha: the negative side's scale
    SELU = "selu"                  # alpha, beta = gamma
    SOFTPLUS = "softplus"
    GELU = "gelu"                  # x * Phi(x), erf form
    GELU_TANH = "gelu_tanh"        # the tanh approximation (approximate='tanh')
    PRELU = "prelu"                # per-channel slopes: the requantiser's negative-side multiplier (Flag.PRELU)


# activations that only clamp: the requantiser's saturation bounds do them, no table needed
CLAMPS = frozenset({ActKind.RELU, ActKind.RELU6, ActKind.CLIP})
# ... and those the requantiser applies itself, writing the activation's output codes with no stage before it
BY_REQUANTISER = CLAMPS | {ActKind.PRELU}


@dataclass(frozen=True)
class Activation:
    kind: ActKind
    alpha: float = 0.0          # LeakyRelu slope; HardSigmoid slope; Elu and Selu alpha
    beta: float = 0.0           # HardSigmoid offset; Selu gamma
    lo: float | None = None     # Clip bounds
    hi: float | None = None
    slopes: tuple[float, ...] | None = None     # PRelu, per output channel


@dataclass(frozen=True)
class ResidualAdd:
    tensor: str                 # the other addend (safe tensor name)


@dataclass(frozen=True)
class Pool:
    kernel: tuple[int, int]
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]   # top, left, bottom, right
    ceil_mode: bool = False
    pad_zero: bool = False            # padding taps are zeros (a zero Pad in front), not -inf


EpilogueStep = Activation | ResidualAdd | Pool


@dataclass(frozen=True)
class FusedConv:
    """A convolution (or dense layer) with everything the engine applies on its way in and out."""

    form: ConvForm
    weight: str
    bias: str | None
    kernel: tuple[int, int] = (1, 1)
    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilations: tuple[int, int] = (1, 1)
    group: int = 1
    upsample: int = 1                       # nearest-neighbour read mode on the input
    epilogue: tuple[EpilogueStep, ...] = ()
    stages: tuple[str, ...] = ()            # ONNX names of the conv output and of each step's output but the last

    def with_step(self, step: EpilogueStep, previous_output: str) -> "FusedConv":
        """Append a step; `previous_output` (ONNX name) is what the fused node produced before it."""
        return replace(self, epilogue=self.epilogue + (step,), stages=self.stages + (previous_output,))

    def describe(self) -> str:
        parts = [
            f"{'convT' if self.form is ConvForm.TRANSPOSED else self.form.value} {self.kernel[0]}x{self.kernel[1]}"
        ]
        if self.strides != (1, 1):
            parts.append(f"s{self.strides[0]}")
        if self.dilations != (1, 1):
            parts.append(f"d{self.dilations[0]}")
        if self.group != 1:
            parts.append(f"g{self.group}")
        if self.upsample != 1:
            parts.insert(0, f"up{self.upsample}")
        for step in self.epilogue:
            if isinstance(step, Activation):
                parts.append(step.kind.value)
            elif isinstance(step, ResidualAdd):
                parts.append("+res")
            else:
                parts.append(f"maxpool{step.kernel[0]}" + (" pad0" if step.pad_zero else ""))
        return " ".join(parts)


@dataclass(frozen=True)
class ConcatWrite:
    """A channel concat done for free: each producer writes at its channel offset of one buffer."""

    offsets: tuple[int, ...]
    channels: int


@dataclass
class Tensor:
    name: str
    onnx_name: str
    elem_type: int                       # onnx.TensorProto element type
    shape: tuple[Dim, ...] | None        # None: rank unknown
    data: np.ndarray | None = None       # set for initializers

    @property
    def is_const(self) -> bool:
        return self.data is not None

    @property
    def is_static(self) -> bool:
        return self.shape is not None and all(isinstance(d, int) and d >= 0 for d in self.shape)

    @property
    def dtype_name(self) -> str:
        return helper.tensor_dtype_to_np_dtype(self.elem_type).name if self.elem_type else "undefined"

    def numel(self) -> int:
        return int(np.prod(self.shape)) if self.is_static else 0


@dataclass
class Node:
    name: str
    kind: OpKind
    op_type: str
    inputs: list[str]                    # '' marks an omitted optional input
    outputs: list[str]
    origin: list[str]                    # original ONNX node names this node stands for
    attrs: dict[str, onnx.AttributeProto] = field(default_factory=dict)
    domain: str = ""
    conv: FusedConv | None = None
    concat: ConcatWrite | None = None
    implicit_inputs: list[str] = field(default_factory=list)   # outer-scope names used by If/Loop bodies

    @property
    def label(self) -> str:
        """The ONNX name this node goes by: its first original node, or its own name where a rewrite made it
        (a chain that stands for one original node carries the origin on its last link only)."""
        return self.origin[0] if self.origin else self.name

    def attr(self, key: str, default: Any = None) -> Any:
        a = self.attrs.get(key)
        return default if a is None else helper.get_attribute_value(a)

    @property
    def all_inputs(self) -> list[str]:
        return [t for t in self.inputs if t] + self.implicit_inputs

    def describe(self) -> str:
        return self.conv.describe() if self.conv else self.op_type


class Graph:
    """Nodes in a valid topological order plus the tensors between them."""

    def __init__(self, names: NameTable, opset: int, name: str = "model"):
        self.names = names
        self.opset = opset
        self.name = name
        self.nodes: dict[str, Node] = {}
        self.tensors: dict[str, Tensor] = {}
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.opset_imports: list[onnx.OperatorSetIdProto] = [helper.make_opsetid("", opset)]
        self.fixed_scales: dict[str, float] = {}     # ONNX tensor name -> int8 scale given by a QDQ model
        # its Q/DQ pairs taken out: DQ output -> (Q input, and the clamp an asymmetric pair became, if any)
        self.absorbed_qdq: dict[str, tuple[str, float | None, float | None]] = {}
        self.warnings: list[str] = []
        self._index: tuple[dict[str, str], dict[str, list[str]]] | None = None
        self._reads: dict[str, tuple[str, ...]] = {}      # what the index holds of each node
        self._writes: dict[str, tuple[str, ...]] = {}

    # ---- structure -------------------------------------------------------------------------
    def _maps(self) -> tuple[dict[str, str], dict[str, list[str]]]:
        if self._index is None:
            prod: dict[str, str] = {}
            cons: dict[str, list[str]] = {}
            self._reads, self._writes = {}, {}
            for n in self.nodes.values():
                self._record(n, prod, cons)
            self._index = (prod, cons)
        return self._index

    def _record(self, n: "Node", prod: dict[str, str], cons: dict[str, list[str]]) -> list[str]:
        writes = tuple(t for t in n.outputs if t)
        reads = tuple(dict.fromkeys(n.all_inputs))
        self._writes[n.name], self._reads[n.name] = writes, reads
        for t in writes:
            prod[t] = n.name
        for t in reads:
            cons.setdefault(t, []).append(n.name)
        return [t for t in reads if len(cons[t]) > 1]

    def _patch(self, gone: Iterable[str], added: list["Node"]) -> None:
        """Bring the producer/consumer index up to date after an edit that removed the nodes `gone` and put
        `added` in place, instead of rebuilding it from every node (a rebuild per fusion made the passes quadratic
        in graph size). Removed nodes are unindexed by what the index recorded of them, so a node changed in place
        before the edit is still unindexed right; readers stay in node order."""
        if self._index is None:
            return
        prod, cons = self._index
        for name in gone:
            for t in self._writes.pop(name, ()):
                if prod.get(t) == name:
                    del prod[t]
            for t in self._reads.pop(name, ()):
                readers = cons.get(t)
                if readers and name in readers:
                    readers.remove(name)
        shared = [t for n in added for t in self._record(n, prod, cons)]
        if shared:
            pos = {n: i for i, n in enumerate(self.nodes)}
            for t in set(shared):
                cons[t].sort(key=pos.__getitem__)

    def producer(self, tensor: str) -> Node | None:
        name = self._maps()[0].get(tensor)
        return self.nodes[name] if name else None

    def consumers(self, tensor: str) -> list[Node]:
        return [self.nodes[n] for n in self._maps()[1].get(tensor, [])]

    def sole_consumer(self, tensor: str) -> Node | None:
        """The one node reading `tensor`, if it is read once and is not a graph output."""
        users = self.consumers(tensor)
        if len(users) == 1 and tensor not in self.outputs:
            return users[0]
        return None

    def dag(self) -> nx.DiGraph:
        g = nx.DiGraph()
        g.add_nodes_from(self.nodes)
        prod = self._maps()[0]
        for n in self.nodes.values():
            for t in n.all_inputs:
                src = prod.get(t)
                if src is not None:
                    if g.has_edge(src, n.name):
                        g[src][n.name]["tensors"].append(t)
                    else:
                        g.add_edge(src, n.name, tensors=[t])
        return g

    def const(self, tensor: str) -> np.ndarray | None:
        t = self.tensors.get(tensor)
        return None if t is None else t.data

    # ---- edits -----------------------------------------------------------------------------
    def add_tensor(self, t: Tensor) -> Tensor:
        self.tensors[t.name] = t
        return t

    def new_const(self, hint: str, data: np.ndarray) -> str:
        name = self.names.fresh(hint)
        self.tensors[name] = Tensor(name, name, helper.np_dtype_to_tensor_dtype(data.dtype), data.shape, data)
        return name

    def replace(self, old: Iterable[str], new: Node) -> None:
        """Put `new` where the last of `old` stood (its inputs are all produced before that point)."""
        old = list(old)
        order = list(self.nodes) if len(old) > 1 or old[0] != new.name else old    # one node in place: no scan
        at = sorted(order.index(o) for o in old)
        if at[-1] - at[0] + 1 == len(old) and order[at[0]] == new.name:
            self.nodes[new.name] = new            # a contiguous run headed by the new node's name: in place
            for name in old:
                if name != new.name:
                    del self.nodes[name]
        else:
            drop = set(old)
            keys = (order[:at[0]] + [n for n in order[at[0]:at[-1]] if n not in drop] + [new.name]
                    + order[at[-1] + 1:])
            self.nodes = dict(zip(keys, map(self.nodes.get, keys)))    # C-speed: replace runs once per fusion
            self.nodes[new.name] = new
        self._patch(old, [new])

    def splice(self, name: str, chain: list[Node]) -> None:
        """Put `chain` where node `name` stood, in order (it may hold that node itself, moved or kept)."""
        rebuilt: dict[str, Node] = {}
        for key, node in self.nodes.items():
            if key == name:
                rebuilt.update((c.name, c) for c in chain)
            else:
                rebuilt[key] = node
        self.nodes = rebuilt
        self._patch([name], chain)

    def rewire(self, old: str, new: str) -> None:
        """Readers of tensor `old` read `new` instead."""
        readers = self.consumers(old)
        for node in readers:
            node.inputs = [new if t == old else t for t in node.inputs]
        self._patch([n.name for n in readers], readers)

    def prune_tensors(self) -> None:
        """Drop tensors no node, input or output refers to any more (folded weights, fused intermediates)."""
        used = set(self.inputs) | set(self.outputs)
        for n in self.nodes.values():
            used.update(n.all_inputs)
            used.update(n.outputs)
        self.tensors = {k: v for k, v in self.tensors.items() if k in used}
        self._index = None

    def touch(self) -> None:
        self._index = None

    # ---- views -----------------------------------------------------------------------------
    def signature(self) -> list[tuple]:
        """A compact, comparable description used by pass tests."""
        return [(n.kind.name, n.describe(), tuple(n.inputs), tuple(n.outputs)) for n in self.nodes.values()]

    def origin_names(self) -> list[str]:
        return [o for n in self.nodes.values() for o in n.origin]
