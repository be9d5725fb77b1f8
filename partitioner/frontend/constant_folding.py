"""Constant folding on the ONNX graph: every node whose inputs are all known is evaluated (onnx's reference
evaluator, so no per-op list to grow), Shape and Size of statically shaped tensors included. The importer
alternates folding and shape inference until nothing more folds, so a Shape -> Gather -> Div -> Cast ->
Unsqueeze -> Slice chain behind a Resize whose sizes were themselves folded still collapses.

Weights are set aside from the skeleton (`weights`, big initializers by name); folding reads them too (a Cast
of fp16 weights, a DequantizeLinear of int8 ones), and a folded result that is big joins them.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

from partitioner.errors import ModelError
from partitioner.frontend.onnx_walk import dims_of, node_label, outer_scope_names, subgraphs

BIG_ELEMENTS = 1024            # initializers above this size live outside the skeleton
_NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                     "Multinomial", "Bernoulli"}
FOLD_LIMIT_BYTES = 1 << 30     # a constant bigger than this is refused: no model for this engine has one
_MAX_NEW_ELEMENTS = 1 << 22    # a folded tensor larger than this and than its inputs (ConstantOfShape, Expand
                               # of a constant, Tile) stays a node: folding it would only bloat the model


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


class _Constants:
    """Known values by name: the skeleton's initializers, the weights set aside (converted on first use), and
    what folding computes."""

    def __init__(self, graph: onnx.GraphProto, weights: dict[str, onnx.TensorProto]):
        self.protos = {t.name: t for t in graph.initializer} | weights
        self.values: dict[str, np.ndarray] = {}

    def __contains__(self, name: str) -> bool:
        return name in self.values or name in self.protos

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.values:
            self.values[name] = numpy_helper.to_array(self.protos[name])
        return self.values[name]

    def size(self, name: str) -> int:
        proto = self.protos.get(name)
        return int(np.prod(proto.dims)) if proto is not None else int(self.values[name].size)


def _elements_made(node: onnx.NodeProto, consts: _Constants, shapes: dict[str, tuple]) -> int | None:
    """The elements a node's largest output would hold, known before evaluating it (static shapes, or the
    constant shape operand of the ops that make tensors from one), or None."""
    sizes = [int(np.prod(shapes[o], dtype=np.float64)) for o in node.output if o in shapes]
    try:
        if node.op_type in ("ConstantOfShape", "Expand") and len(node.input) >= 1:
            dims = consts[node.input[0 if node.op_type == "ConstantOfShape" else 1]].astype(np.float64)
            sizes.append(int(np.prod(np.maximum(dims, 1) if node.op_type == "Expand" else dims)))
        elif node.op_type == "Tile" and len(node.input) == 2:
            sizes.append(consts.size(node.input[0]) * int(np.prod(consts[node.input[1]].astype(np.float64))))
        elif node.op_type == "Range" and len(node.input) == 3:
            start, limit, delta = (float(np.asarray(consts[x]).reshape(-1)[0]) for x in node.input)
            sizes.append(int(max(0.0, np.ceil((limit - start) / delta))) if delta else 0)
    except (ValueError, TypeError, OverflowError, IndexError):
        return None
    return max(sizes) if sizes else None


def _evaluate(node: onnx.NodeProto, index: int, consts: _Constants, shapes: dict[str, tuple], opset: int
              ) -> list[np.ndarray] | None:
    if node.op_type == "Shape" and node.input[0] in shapes:
        return [_shape_value(node, shapes[node.input[0]])]
    if node.op_type == "Size" and node.input[0] in shapes:
        return [np.array(int(np.prod(shapes[node.input[0]])), dtype=np.int64)]
    if not all(not x or x in consts for x in node.input):
        return None
    largest_input = max((consts.size(x) for x in node.input if x), default=0)
    made = _elements_made(node, consts, shapes)
    if made is not None and made * 8 > FOLD_LIMIT_BYTES:
        raise ModelError(f"makes a tensor of {made:,} elements ({made * 8 / 2**30:.1f} GiB at 8 bytes each), more "
                         "than any model this toolchain runs needs: a corrupt or hostile file",
                         node=node_label(node, index), op=node.op_type)
    if made is not None and made > max(_MAX_NEW_ELEMENTS, largest_input):
        return None                          # left as a node, as a result this big would be after evaluation
    feeds = {x: consts[x] for x in node.input if x}
    try:
        value = ReferenceEvaluator(node, opsets={"": opset}).run(None, feeds)
    except Exception as exc:  # the reference evaluator rejects what it cannot evaluate
        raise ModelError(f"constant folding failed: {str(exc).splitlines()[0]}",
                         node=node_label(node, index), op=node.op_type) from None
    if any(np.asarray(v).size > max(_MAX_NEW_ELEMENTS, largest_input) for v in value):
        return None
    return [np.asarray(v) for v in value]


def _defined(branch: onnx.GraphProto) -> set[str]:
    return {t.name for t in branch.initializer} | {o for n in branch.node for o in n.output} | \
        {n.name for n in branch.node if n.name}


def _graph_names(g: onnx.GraphProto, weights: dict) -> set[str]:
    return ({t.name for t in g.initializer} | {x.name for x in g.input} | set(weights)
            | {o for n in g.node for o in n.output} | {n.name for n in g.node})


def _taken_branch(node: onnx.NodeProto, consts: _Constants, names: set[str]) -> onnx.GraphProto | None:
    """The branch an If with a constant condition always takes (scripted exports test shapes and flags that
    folding makes constant): its nodes then stand in the If's place, so a conv inside is a layer like any other.
    None where the branch's own names would clash with the graph's (two branches of two Ifs may reuse names)."""
    if node.op_type != "If" or node.domain not in ("", "ai.onnx") or node.input[0] not in consts:
        return None
    cond = np.asarray(consts[node.input[0]])
    if cond.size != 1:
        return None
    branch = next((a.g for a in node.attribute if a.name == ("then_branch" if cond.reshape(-1)[0] else
                                                              "else_branch")), None)
    if branch is None or len(branch.output) != len(node.output) or _defined(branch) & names:
        return None
    return branch


def fold_constants(model: onnx.ModelProto, opset: int, weights: dict[str, onnx.TensorProto]
                   ) -> tuple[onnx.ModelProto, list[str]]:
    """One pass in topological order; returns the model without the folded nodes and their names. `weights` is
    updated: results above BIG_ELEMENTS join it, weights nothing reads any more leave it."""
    g = model.graph
    consts = _Constants(g, weights)
    shapes = _static_shapes(g)
    outputs = {o.name for o in g.output}
    kept: list[onnx.NodeProto] = []
    folded: list[str] = []
    names: set[str] | None = None          # the graph's names, gathered at its first If
    for i, node in enumerate(g.node):
        if node.op_type == "If" and names is None:
            names = _graph_names(g, weights)
        taken = _taken_branch(node, consts, names) if node.op_type == "If" else None
        if taken is not None:
            folded.append(node_label(node, i))
            names |= _defined(taken)
            kept.extend(taken.node)
            kept.extend(onnx.helper.make_node("Identity", [o.name], [out])
                        for o, out in zip(taken.output, node.output))
            g.initializer.extend(taken.initializer)
            continue
        foldable = (node.domain in ("", "ai.onnx") and node.op_type not in _NONDETERMINISTIC
                    and not any(True for _ in subgraphs(node)) and not outputs.intersection(node.output))
        value = _evaluate(node, i, consts, shapes, opset) if foldable else None
        if value is None:
            kept.append(node)
            continue
        folded.append(node_label(node, i))
        for name, v in zip(node.output, value):
            if name:
                consts.values[name] = v
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
    new_inits = []
    for name in sorted(used - existing - set(weights)):
        if name in consts.values:
            proto = numpy_helper.from_array(consts.values[name], name)
            if consts.values[name].size > BIG_ELEMENTS:
                weights[name] = proto
                g.input.append(onnx.helper.make_tensor_value_info(name, proto.data_type, list(proto.dims)))
            else:
                new_inits.append(proto)
    del g.initializer[:]
    g.initializer.extend(keep_inits + new_inits)
    for name in [w for w in weights if w not in used]:
        del weights[name]
    inputs = [i for i in g.input if i.name in used or i.name not in consts]
    del g.input[:]
    g.input.extend(inputs)
    vi = [v for v in g.value_info if v.name not in consts]
    del g.value_info[:]
    g.value_info.extend(vi)
    return model, folded
