"""Models of opset 18 and later, written in opset 17 (the IR's canonical opset) node by node, because onnx's
version converter has no downward adapters for most of them ("No Adapter From Version $18 for Split").

Every op whose versions after 17 only widened its types is kept as it is. An op whose meaning changed is spelt
in opset 17 where an exact spelling exists: Reduce* with `axes` as an input, Split with `num_outputs`, Pad with
`axes`, Resize, AveragePool, Cast, GridSample and ScatterElements/ScatterND with their new attributes at values
opset 17 means anyway; Mish (18) and Gelu (20) as the ops they stand for. The rest is refused in one line that
names the node, the op and the opset. Ops ONNX dropped (ImageScaler, which the model zoo's Tiny YOLOv2-8 opens with)
are spelt the same way at any opset, before the checker (`spell_retired_ops`)."""
from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

from partitioner.errors import ModelError
from partitioner.frontend.onnx_walk import dims_of, node_label, subgraphs

TARGET = 17
# versions 18-22 of these only admit more element types (bfloat16, float8, int4, strings): the same meaning
SAME_MEANING = frozenset("""
    Acos Acosh Asin Asinh Atan Atanh Bernoulli CastLike Constant ConstantOfShape Conv ConvTranspose Cos Cosh
    DequantizeLinear Det Dropout Elu Equal EyeLike Flatten GRU GlobalAveragePool GlobalLpPool GlobalMaxPool
    HardSigmoid HardSwish Identity If InstanceNormalization IsInf IsNaN LSTM Loop LpNormalization MaxPool
    MaxRoiPool MaxUnpool Multinomial NegativeLogLikelihoodLoss QLinearMatMul QuantizeLinear RNN RandomNormal
    RandomNormalLike RandomUniform RandomUniformLike Reshape RoiAlign Round Scan Selu Shape Sin Sinh Size
    Softplus Softsign Squeeze Tan ThresholdedRelu Transpose Unsqueeze""".split())
REDUCE_AXES_INPUT = frozenset({"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
                               "ReduceMin", "ReduceProd", "ReduceSumSquare"})


class _Model:
    """Constants and shapes of the model being rewritten, and the nodes it gains."""

    def __init__(self, model: onnx.ModelProto, opset: int):
        self.model, self.opset = model, opset
        g = model.graph
        self.consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        for node in g.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                attr = {a.name: a for a in node.attribute}
                if "value" in attr:
                    self.consts[node.output[0]] = numpy_helper.to_array(attr["value"].t)
        try:
            inferred = shape_inference.infer_shapes(model).graph
        except Exception:                          # noqa: BLE001 - shapes only help Split; it says so
            inferred = g
        self.shapes = {vi.name: dims_of(vi) for vi in list(inferred.input) + list(inferred.value_info)
                       + list(inferred.output)}
        self.count = 0

    def const_input(self, node: onnx.NodeProto, i: int) -> np.ndarray | None:
        """Input i's value, None where absent; a ModelError where it is computed (not a constant)."""
        if len(node.input) <= i or not node.input[i]:
            return None
        if node.input[i] not in self.consts:
            raise self.refuse(node, f"its input {node.input[i]!r} is computed, and opset 17 needs it as an attribute")
        return self.consts[node.input[i]]

    def fresh(self, hint: str) -> str:
        self.count += 1
        return f"{hint}__op17_{self.count}"

    def refuse(self, node: onnx.NodeProto, why: str) -> ModelError:
        return ModelError(f"opset {self.opset} {node.op_type} has no opset-{TARGET} form here: {why}; export the "
                          f"model with opset {TARGET} (e.g. torch.onnx.export(..., opset_version={TARGET}))",
                          node=node.name or None, op=node.op_type)

    def add_const(self, hint: str, value: np.ndarray) -> str:
        name = self.fresh(hint)
        self.model.graph.initializer.append(numpy_helper.from_array(value, name))
        self.consts[name] = value
        return name


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _without(node: onnx.NodeProto, *names: str) -> None:
    keep = [a for a in node.attribute if a.name not in names]
    del node.attribute[:]
    node.attribute.extend(keep)


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _reduce(node, m: _Model) -> list[onnx.NodeProto]:
    attrs = _attrs(node)
    axes = m.const_input(node, 1)
    if axes is None and attrs.get("noop_with_empty_axes", 0):
        return [helper.make_node("Identity", [node.input[0]], list(node.output), name=node.name)]
    _without(node, "noop_with_empty_axes")
    del node.input[1:]
    if axes is not None and axes.size:
        node.attribute.append(helper.make_attribute("axes", [int(a) for a in axes.reshape(-1)]))
    return [node]


def _split(node, m: _Model) -> list[onnx.NodeProto]:
    attrs = _attrs(node)
    if "num_outputs" not in attrs:
        return [node]                            # sizes as an input: opset 13's form
    parts = int(attrs["num_outputs"])
    shape = m.shapes.get(node.input[0])
    axis = int(attrs.get("axis", 0))
    if shape is None or not isinstance(shape[axis], int):
        raise m.refuse(node, "num_outputs over a dimension whose size is not known statically (pin it with "
                            "--input-shape)")
    size = shape[axis]
    chunk = math.ceil(size / parts)
    sizes = [chunk] * (parts - 1) + [size - chunk * (parts - 1)]
    _without(node, "num_outputs")
    node.input.append(m.add_const(f"{node.name or 'split'}_sizes", np.array(sizes, np.int64)))
    return [node]


def _pad(node, m: _Model) -> list[onnx.NodeProto]:
    attrs = _attrs(node)
    if _text(attrs.get("mode", "constant")) == "wrap":
        raise m.refuse(node, "mode 'wrap' (opset 19) has no opset-17 form")
    if len(node.input) < 4 or not node.input[3]:
        return [node]
    axes = m.const_input(node, 3)
    pads = m.const_input(node, 1)
    shape = m.shapes.get(node.input[0])
    if pads is None or shape is None:
        raise m.refuse(node, "pads over chosen axes of a tensor whose rank is not known")
    rank = len(shape)
    full = np.zeros(2 * rank, np.int64)
    k = len(axes)
    for j, a in enumerate(int(a) % rank for a in axes.reshape(-1)):
        full[a], full[rank + a] = pads[j], pads[k + j]
    del node.input[3:]
    node.input[1] = m.add_const(f"{node.name or 'pad'}_pads", full)
    return [node]


def _resize(node, m: _Model) -> list[onnx.NodeProto]:
    attrs = _attrs(node)
    if int(attrs.get("antialias", 0)):
        raise m.refuse(node, "antialias=1")
    if "axes" in attrs:
        raise m.refuse(node, "scales or sizes over chosen axes")
    if _text(attrs.get("keep_aspect_ratio_policy", "stretch")) != "stretch":
        raise m.refuse(node, f"keep_aspect_ratio_policy {_text(attrs['keep_aspect_ratio_policy'])!r}")
    if _text(attrs.get("coordinate_transformation_mode", "half_pixel")) == "half_pixel_symmetric":
        raise m.refuse(node, "coordinate_transformation_mode 'half_pixel_symmetric' (opset 19)")
    _without(node, "antialias", "axes", "keep_aspect_ratio_policy")
    return [node]


def _average_pool(node, m: _Model) -> list[onnx.NodeProto]:
    dilations = _attrs(node).get("dilations")
    if dilations is not None and any(int(d) != 1 for d in dilations):
        raise m.refuse(node, f"dilations {list(dilations)} (opset 19)")
    _without(node, "dilations")
    return [node]


def _cast(node, m: _Model) -> list[onnx.NodeProto]:
    _without(node, "saturate", "round_mode")     # they only concern float8 targets, which opset 17 refuses
    return [node]


def _scatter(node, m: _Model) -> list[onnx.NodeProto]:
    if _text(_attrs(node).get("reduction", "none")) in ("max", "min"):
        raise m.refuse(node, f"reduction {_text(_attrs(node)['reduction'])!r} (opset 18)")
    return [node]


def _lp_pool(node, m: _Model) -> list[onnx.NodeProto]:
    attrs = _attrs(node)
    if int(attrs.get("ceil_mode", 0)) or any(int(d) != 1 for d in attrs.get("dilations", [])):
        raise m.refuse(node, "ceil_mode or dilations (opset 18)")
    _without(node, "ceil_mode", "dilations")
    return [node]


def _grid_sample(node, m: _Model) -> list[onnx.NodeProto]:
    mode = _text(_attrs(node).get("mode", "linear"))
    old = {"linear": "bilinear", "cubic": "bicubic", "nearest": "nearest"}.get(mode)
    shape = m.shapes.get(node.input[0])
    if old is None or shape is None or len(shape) != 4:
        raise m.refuse(node, f"mode {mode!r} over a tensor that is not known to be 4-D")
    _without(node, "mode")
    node.attribute.append(helper.make_attribute("mode", old))
    return [node]


def _mish(node, m: _Model) -> list[onnx.NodeProto]:
    """x * tanh(softplus(x)): the spelling the fusion passes take into a conv."""
    x, y = node.input[0], node.output[0]
    sp, th = m.fresh(f"{y}_softplus"), m.fresh(f"{y}_tanh")
    name = node.name or y
    return [helper.make_node("Softplus", [x], [sp], name=f"{name}/softplus"),
            helper.make_node("Tanh", [sp], [th], name=f"{name}/tanh"),
            helper.make_node("Mul", [x, th], [y], name=name)]


def _gelu(node, m: _Model) -> list[onnx.NodeProto]:
    """x * 0.5 * (1 + erf(x / sqrt 2)); approximate='tanh': x * 0.5 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    x, y = node.input[0], node.output[0]
    name = node.name or y
    half = m.add_const(f"{y}_half", np.array(0.5, np.float32))
    one = m.add_const(f"{y}_one", np.array(1.0, np.float32))
    t = [m.fresh(f"{y}_t") for _ in range(7)]
    if _text(_attrs(node).get("approximate", "none")) == "tanh":
        cube = m.add_const(f"{y}_c", np.array(0.044715, np.float32))
        k = m.add_const(f"{y}_k", np.array(math.sqrt(2 / math.pi), np.float32))
        three = m.add_const(f"{y}_three", np.array(3.0, np.float32))
        inner = [helper.make_node("Pow", [x, three], [t[0]], name=f"{name}/cube"),
                 helper.make_node("Mul", [t[0], cube], [t[1]], name=f"{name}/scale_cube"),
                 helper.make_node("Add", [x, t[1]], [t[2]], name=f"{name}/inner"),
                 helper.make_node("Mul", [t[2], k], [t[3]], name=f"{name}/scale"),
                 helper.make_node("Tanh", [t[3]], [t[4]], name=f"{name}/tanh")]
    else:
        root2 = m.add_const(f"{y}_sqrt2", np.array(math.sqrt(2.0), np.float32))
        inner = [helper.make_node("Div", [x, root2], [t[3]], name=f"{name}/div"),
                 helper.make_node("Erf", [t[3]], [t[4]], name=f"{name}/erf")]
    return inner + [helper.make_node("Add", [t[4], one], [t[5]], name=f"{name}/plus_one"),
                    helper.make_node("Mul", [x, t[5]], [t[6]], name=f"{name}/times_x"),
                    helper.make_node("Mul", [t[6], half], [y], name=name)]


def _image_scaler(node, m: _Model) -> list[onnx.NodeProto]:
    """scale * x + bias[c] (ImageScaler of opsets 1-9, dropped since)."""
    attrs = _attrs(node)
    if len(node.input) != 1 or len(node.output) != 1 or set(attrs) - {"scale", "bias"}:
        raise ModelError("ImageScaler takes one input, gives one output and has only 'scale' and 'bias'",
                         node=node.name or None, op=node.op_type)
    x, y = node.input[0], node.output[0]
    name = node.name or y
    scale = m.add_const(f"{y}_scale", np.array(attrs.get("scale", 1.0), np.float32))
    if not attrs.get("bias"):
        return [helper.make_node("Mul", [x, scale], [y], name=name)]
    bias = m.add_const(f"{y}_bias", np.asarray(attrs["bias"], np.float32).reshape(1, -1, 1, 1))
    scaled = m.fresh(f"{y}_scaled")
    return [helper.make_node("Mul", [x, scale], [scaled], name=f"{name}/scale"),
            helper.make_node("Add", [scaled, bias], [y], name=name)]


# ops ONNX dropped, in the ops that replaced them, whatever the model's opset (onnxruntime still runs them)
RETIRED = {"ImageScaler": _image_scaler}
REWRITES = {"Split": _split, "Pad": _pad, "Resize": _resize, "AveragePool": _average_pool, "Cast": _cast,
            "ScatterElements": _scatter, "ScatterND": _scatter, "LpPool": _lp_pool, "GridSample": _grid_sample,
            "Mish": _mish, "Gelu": _gelu, **{op: _reduce for op in REDUCE_AXES_INPUT}}


def _since(op: str, opset: int) -> int:
    try:
        return onnx.defs.get_schema(op, opset, "").since_version
    except Exception:                             # noqa: BLE001 - not an op of that opset at all
        return 0


def _rewrite(graph: onnx.GraphProto, m: _Model, opset: int) -> None:
    out: list[onnx.NodeProto] = []
    for i, node in enumerate(graph.node):
        for body in subgraphs(node):
            _rewrite(body, m, opset)
        if node.domain not in ("", "ai.onnx") or _since(node.op_type, opset) <= TARGET:
            out.append(node)
        elif node.op_type in REWRITES:
            out += REWRITES[node.op_type](node, m)
        elif node.op_type in SAME_MEANING:
            out.append(node)
        else:
            node.name = node.name or node_label(node, i)
            raise m.refuse(node, f"{node.op_type} (opset {_since(node.op_type, opset)}) is newer than opset "
                                f"{TARGET} and has no spelling in it here")
    del graph.node[:]
    graph.node.extend(out)


def spell_retired_ops(model: onnx.ModelProto) -> list[str]:
    """Rewrite every op of RETIRED in the main graph in place (before the checker, which knows none of them);
    returns the rewritten nodes' labels."""
    g = model.graph
    retired = [node_label(n, i) for i, n in enumerate(g.node) if n.op_type in RETIRED and n.domain in ("", "ai.onnx")]
    if retired:
        opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), TARGET)
        m = _Model(model, opset)
        out = [x for n in g.node for x in (RETIRED[n.op_type](n, m) if n.op_type in RETIRED and
                                           n.domain in ("", "ai.onnx") else [n])]
        del g.node[:]
        g.node.extend(out)
    return retired


def downgrade(model: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    """`model` (default-domain opset `opset` > 17) in opset 17, or a ModelError naming the first node that has no
    opset-17 form."""
    m = _Model(model, opset)
    _rewrite(model.graph, m, opset)
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = TARGET
    model.ir_version = min(model.ir_version, 8)      # the IR version of opset 17
    return model
