"""Reading the meaning of individual ONNX nodes: the facts that fusion passes and targets both need."""
from __future__ import annotations

import numpy as np

from partitioner.ir.graph import BY_REQUANTISER, Activation, Graph, Node, OpKind, Pool, ResidualAdd

# (coordinate_transformation_mode, nearest_mode) pairs under which integer x2 nearest resize is plain replication
_REPLICATING = {("asymmetric", "floor"), ("asymmetric", "round_prefer_floor"),
                ("half_pixel", "round_prefer_floor"), ("half_pixel", "round_prefer_ceil"),
                ("pytorch_half_pixel", "round_prefer_floor"), ("pytorch_half_pixel", "round_prefer_ceil")}


# ops that only move or select elements: no arithmetic on values
RESHAPING_OPS = ("Reshape", "Transpose", "Expand", "Tile", "Flatten", "Squeeze", "Unsqueeze")
DATA_MOVEMENT_OPS = frozenset(RESHAPING_OPS + ("Concat", "Slice", "Split", "Identity", "Gather"))


# kinds whose output is an engine layer's: what a lone activation or affine after them can join as a 1x1 layer
LAYER_KINDS = (OpKind.FUSED_CONV, OpKind.ADD, OpKind.MUL, OpKind.CONCAT, OpKind.RESIZE, OpKind.MAXPOOL,
               OpKind.GLOBAL_AVG_POOL)
# activations a layer's table or clamp applies (a lone one joins a 1x1 identity layer) ...
ACTIVATION_KINDS = (OpKind.RELU, OpKind.CLIP, OpKind.LEAKY_RELU, OpKind.HARD_SWISH, OpKind.HARD_SIGMOID,
                    OpKind.TANH, OpKind.ELU, OpKind.SELU, OpKind.SOFTPLUS, OpKind.GELU)
# ... and every activation op an engine epilogue takes (only fused into a conv, never a layer of its own)
EPILOGUE_ACTIVATION_KINDS = ACTIVATION_KINDS + (OpKind.SIGMOID,)


def epilogue_activations(steps) -> tuple[int | None, int | None, int | None]:
    """(residual add, act1, act2): the indices in a conv's epilogue steps of its residual add, its first activation
    before that add and its first after it (the descriptor's act1 and act2), each None where there is none."""
    res_at = next((i for i, s in enumerate(steps) if isinstance(s, ResidualAdd)), None)
    acts = [i for i, s in enumerate(steps) if isinstance(s, Activation)]
    act1 = next((i for i in acts if res_at is None or i < res_at), None)
    act2 = next((i for i in acts if res_at is not None and i > res_at), None)
    return res_at, act1, act2


def table_activations(steps) -> tuple[int | None, int | None]:
    """The indices in a conv's epilogue steps of the act1 and act2 the engine's activation tables apply, each None
    where there is none: act1 unless the requantiser applies it (a clamp, PRelu's second multiplier), act2 always.
    The compiler writes its tables by this and the exploration sizes the engine's by it."""
    _, act1, act2 = epilogue_activations(steps)
    return (act1 if act1 is not None and steps[act1].kind not in BY_REQUANTISER else None), act2


def takes_table(steps) -> bool:
    """Whether a conv's epilogue needs the engine's activation tables."""
    return table_activations(steps) != (None, None)


def attr_text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def replicating_upsample(node: Node, graph: Graph) -> int | None:
    """The integer factor f if `node` is a nearest-neighbour spatial upsample of an NCHW tensor by f in both
    directions that replicates each pixel into an f x f block (true of these modes for any integer f)."""
    if node.kind is not OpKind.RESIZE:
        return None
    mode = attr_text(node.attr("mode", b"nearest"))
    coord = attr_text(node.attr("coordinate_transformation_mode", b"half_pixel"))
    nearest = attr_text(node.attr("nearest_mode", b"round_prefer_floor"))
    if mode != "nearest" or (coord, nearest) not in _REPLICATING:
        return None
    src = graph.tensors[node.inputs[0]]
    dst = graph.tensors[node.outputs[0]]
    if not (src.is_static and dst.is_static and len(src.shape) == 4):
        return None
    n, c, h, w = src.shape
    f = dst.shape[2] // h if h else 0
    return f if f >= 2 and dst.shape == (n, c, f * h, f * w) else None


def upsample_factor(node: Node, graph: Graph) -> int | None:
    """2 if `node` is a nearest-neighbour x2 spatial upsample of an NCHW tensor, else None."""
    return 2 if replicating_upsample(node, graph) == 2 else None


def pool_of(node: Node) -> Pool | None:
    """The 2-D max pooling a MaxPool node performs, if it is one the engine's pooling unit can do."""
    if node.kind is not OpKind.MAXPOOL or len([o for o in node.outputs if o]) != 1:
        return None
    kernel = tuple(node.attr("kernel_shape", []))
    if len(kernel) != 2 or any(d != 1 for d in node.attr("dilations", [1, 1])):
        return None
    if attr_text(node.attr("auto_pad", b"NOTSET")) != "NOTSET" or node.attr("storage_order", 0):
        return None
    pads = tuple(node.attr("pads", [0, 0, 0, 0]))
    strides = tuple(node.attr("strides", [1, 1]))
    return Pool(kernel, strides, (pads[0], pads[1], pads[2], pads[3]), bool(node.attr("ceil_mode", 0)))


def clip_bounds(node: Node, graph: Graph) -> tuple[float | None, float | None] | None:
    """Constant (min, max) of a Clip node, None where a bound is absent; None if a bound is not constant."""
    bounds: list[float | None] = []
    for i in (1, 2):
        name = node.inputs[i] if len(node.inputs) > i else ""
        if not name:
            bounds.append(None)
            continue
        value = graph.const(name)
        if value is None or np.asarray(value).size != 1:
            return None
        bounds.append(float(np.asarray(value).reshape(())))
    return bounds[0], bounds[1]


def conv_pads(node: Node) -> tuple[int, int, int, int] | None:
    """Explicit (top, left, bottom, right) padding of a Conv; None where `auto_pad` is left (explicit_pads.py
    resolves it wherever the shapes are static)."""
    if attr_text(node.attr("auto_pad", b"NOTSET")) != "NOTSET":
        return None
    p = node.attr("pads", [0, 0, 0, 0])
    return (p[0], p[1], p[2], p[3]) if len(p) == 4 else None


def gelu_is_tanh(node: Node) -> bool:
    return attr_text(node.attr("approximate", "none")) == "tanh"


def scalar_const(graph: Graph, tensor: str) -> float | None:
    """The value of a one-element constant tensor, else None."""
    value = graph.const(tensor)
    if value is None or np.asarray(value).size != 1:
        return None
    return float(np.asarray(value).reshape(()))


def gate_operands(node: Node, graph: Graph) -> tuple[str, str] | None:
    """(data, gate) of a Mul that scales an [N, C, H, W] activation by an [N, C, 1, 1] one (an SE block's gate)."""
    if len(node.inputs) != 2 or any(graph.const(t) is not None for t in node.inputs):
        return None
    shapes = [graph.tensors[t].shape for t in node.inputs]
    for data, gate in ((0, 1), (1, 0)):
        a, g = shapes[data], shapes[gate]
        if a is not None and g is not None and len(a) == len(g) == 4 and tuple(g) == (a[0], a[1], 1, 1):
            return node.inputs[data], node.inputs[gate]
    return None


def transposed_conv_problem(node: Node, graph: Graph) -> str | None:
    """Why a ConvTranspose is not the engine's kind (kernel = stride = 2, no padding, one group: every output
    pixel has exactly one input pixel and tap, so each of the 4 output phases is a 1x1 conv); None if it is."""
    w = graph.const(node.inputs[1]) if len(node.inputs) > 1 else None
    if w is None or w.ndim != 4:
        return "transposed conv with non-constant or non-2-D weights"
    if len(node.inputs) > 2 and node.inputs[2] and graph.const(node.inputs[2]) is None:
        return "transposed conv with a non-constant bias"
    kernel = tuple(node.attr("kernel_shape", list(w.shape[2:])))
    strides = tuple(node.attr("strides", [1, 1]))
    pads = tuple(node.attr("pads", [0, 0, 0, 0]))
    x = graph.tensors[node.inputs[0]].shape
    if kernel != (2, 2) or strides != (2, 2):
        return (f"transposed conv kernel {list(kernel)} stride {list(strides)}: the engine runs kernel = stride = 2 "
                "(each output phase a 1x1 conv)")
    if node.attr("group", 1) != 1 or tuple(node.attr("dilations", [1, 1])) != (1, 1):
        return "grouped or dilated transposed conv"
    if any(pads) or any(node.attr("output_padding", [0, 0])):          # every auto_pad pads 0 at kernel = stride
        return f"transposed conv with padding {list(pads)} or output_padding"
    shape = node.attr("output_shape", None)
    if shape is not None and x is not None and len(x) == 4 and list(shape)[-2:] != [2 * x[2], 2 * x[3]]:
        return f"transposed conv output_shape {list(shape)} is not twice its input {list(x)}"
    return None
