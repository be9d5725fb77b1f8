"""Constant folding on the ONNX graph: Shape/Gather/Concat chains and other all-constant subgraphs
that exporters leave behind collapse into initializers before the IR is built."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

from .errors import ModelError
from .onnx_walk import dims_of, node_label, outer_scope_names, subgraphs

_NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                     "Multinomial", "Bernoulli"}
_MAX_FOLDED_ELEMENTS = 1 << 22


def _static_shapes(graph: onnx.GraphProto) -> dict[str, tuple]:
    shapes = {}
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        d = dims_of(vi)
        if d is not None and all(isinstance(x, int) for x in d):
            shapes[vi.name] = d
    return shapes


def _shape_value(node: onnx.NodeProto, shape: tuple) -> np.ndarray:
    start, end = 0, len(shape)
    for a in node.attribute:
        if a.name == "start":
            start = a.i
        elif a.name == "end":
            end = a.i
    return np.array(shape[slice(start, end)], dtype=np.int64)


def fold_constants(model: onnx.ModelProto, opset: int) -> tuple[onnx.ModelProto, list[str]]:
    """Evaluate every node whose inputs are all known, once; returns the model without them and their names."""
    g = model.graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    shapes = _static_shapes(g)
    outputs = {o.name for o in g.output}
    kept: list[onnx.NodeProto] = []
    folded: list[str] = []
    for i, node in enumerate(g.node):
        value: list[np.ndarray] | None = None
        foldable = (node.domain in ("", "ai.onnx") and node.op_type not in _NONDETERMINISTIC
                    and not any(True for _ in subgraphs(node)) and not outputs.intersection(node.output))
        if foldable and node.op_type == "Shape" and node.input[0] in shapes:
            value = [_shape_value(node, shapes[node.input[0]])]
        elif foldable and all(not x or x in consts for x in node.input):
            feeds = {x: consts[x] for x in node.input if x}
            try:
                value = ReferenceEvaluator(node, opsets={"": opset}).run(None, feeds)
            except Exception as exc:  # the reference evaluator rejects what it cannot evaluate
                raise ModelError(f"constant folding failed: {str(exc).splitlines()[0]}",
                                 node=node_label(node, i), op=node.op_type) from None
            if any(np.asarray(v).size > _MAX_FOLDED_ELEMENTS for v in value):
                value = None
        if value is None:
            kept.append(node)
            continue
        folded.append(node_label(node, i))
        for name, v in zip(node.output, value):
            if name:
                consts[name] = np.asarray(v)
    if not folded:
        return model, folded

    used = {o.name for o in g.output}
    for n in kept:
        used.update(n.input)
        used.update(outer_scope_names(n))
    del g.node[:]
    g.node.extend(kept)
    existing = {t.name for t in g.initializer}
    keep_inits = [t for t in g.initializer if t.name in used]
    new_inits = [numpy_helper.from_array(consts[name], name) for name in sorted(used - existing)
                 if name in consts]
    del g.initializer[:]
    g.initializer.extend(keep_inits + new_inits)
    vi = [v for v in g.value_info if v.name not in consts]
    del g.value_info[:]
    g.value_info.extend(vi)
    return model, folded
