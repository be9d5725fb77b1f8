"""SSD's L2Norm as exporters spell it becomes one LpNormalization (axis 1, p 2) node, which the engine runs
(ABI op L2NORM); a per-channel scale by constants in front of convolutions (L2Norm's gamma, an input
normalisation) folds into their weights.

Spellings: ReduceL2(x) or Sqrt(ReduceSumSquare(x)) or Sqrt(ReduceSum(x * x | x ^ 2)) over the channels, kept
dims; then an epsilon (Clip(min=eps), Max(., eps) or Add(., eps), eps <= 1e-6) and, optionally, an Expand back
to x's shape; then Div(x, .). Without the epsilon an all-zero pixel gives NaN, so that spelling is left alone.
The epsilon only matters where the norm is below it, which an activation that
reaches the engine (int8, its smallest step far above 1e-6) never is but for an all-zero pixel, where both
forms give 0 (onnxruntime's LpNormalization returns 0 for a zero vector)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from onnx import helper

from partitioner.ir.graph import ConvForm, Graph, Node, OpKind
from partitioner.ir.op_facts import clip_bounds, scalar_const
from partitioner.passes.folding import per_channel

EPS_MAX = 1e-6


def _only_reader(graph: Graph, tensor: str, reader: Node) -> bool:
    return graph.sole_consumer(tensor) is reader


def _channel_axes(node: Node, graph: Graph) -> bool:
    axes = node.attr("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1]:
        value = graph.const(node.inputs[1])
        axes = None if value is None else [int(a) for a in np.asarray(value).ravel()]
    rank = len(graph.tensors[node.inputs[0]].shape or ())
    return rank == 4 and axes is not None and [a % 4 for a in axes] == [1] and node.attr("keepdims", 1) == 1


def _small_eps(node: Node, graph: Graph, x: str) -> bool:
    if node.op_type == "Clip":
        bounds = clip_bounds(node, graph)
        return bounds is not None and bounds[1] is None and bounds[0] is not None and 0 <= bounds[0] <= EPS_MAX
    other = [t for t in node.inputs if t != x]
    eps = scalar_const(graph, other[0]) if len(other) == 1 else None
    return eps is not None and 0 <= eps <= EPS_MAX


def _norm_chain(graph: Graph, div: Node) -> list[Node] | None:
    """The nodes from the norm of Div's numerator to Div's denominator, each read only by the next."""
    x, den = div.inputs
    chain: list[Node] = []
    reader, node = div, graph.producer(den)
    if node is not None and node.op_type == "Expand" and _only_reader(graph, node.outputs[0], reader):
        chain.append(node)
        reader, node = node, graph.producer(node.inputs[0])
    if node is None or node.op_type not in ("Clip", "Max", "Add") or not _only_reader(graph, node.outputs[0], reader) \
            or not _small_eps(node, graph, next((t for t in node.inputs if graph.const(t) is None), "")):
        return None           # without an epsilon an all-zero pixel is 0 / 0 = NaN, which LpNormalization is not
    chain.append(node)
    reader, node = node, graph.producer(next(t for t in node.inputs if graph.const(t) is None))
    if node is None or not _only_reader(graph, node.outputs[0], reader):
        return None
    if node.op_type == "ReduceL2" and node.inputs[0] == x and _channel_axes(node, graph):
        return chain + [node]
    if node.op_type != "Sqrt":
        return None
    chain.append(node)
    reduce = graph.producer(node.inputs[0])
    if reduce is None or not _only_reader(graph, reduce.outputs[0], node) or not _channel_axes(reduce, graph):
        return None
    if reduce.op_type == "ReduceSumSquare" and reduce.inputs[0] == x:
        return chain + [reduce]
    square = graph.producer(reduce.inputs[0])
    if reduce.op_type != "ReduceSum" or square is None or not _only_reader(graph, square.outputs[0], reduce):
        return None
    if (square.op_type == "Mul" and square.inputs == [x, x]) or \
            (square.op_type == "Pow" and square.inputs[0] == x and scalar_const(graph, square.inputs[1]) == 2.0):
        return chain + [reduce, square]
    return None


def fuse_l2_normalization(graph: Graph) -> Graph:
    for div in list(graph.nodes.values()):
        if div.op_type != "Div" or div.name not in graph.nodes or len(div.inputs) != 2:
            continue
        chain = _norm_chain(graph, div)
        if chain is None:
            continue
        first = chain[-1]
        node = Node(first.name, OpKind.LP_NORMALIZATION, "LpNormalization", [div.inputs[0]], list(div.outputs),
                    [o for n in reversed(chain) for o in n.origin] + div.origin,
                    attrs={"axis": helper.make_attribute("axis", 1), "p": helper.make_attribute("p", 2)})
        graph.replace([n.name for n in chain] + [div.name], node)
    graph.prune_tensors()
    return graph


def _reads_as_conv_input(node: Node, tensor: str) -> bool:
    spec = node.conv
    return (node.kind is OpKind.FUSED_CONV and spec.form is ConvForm.CONV and node.inputs[0] == tensor
            and tensor not in node.inputs[1:] and not any(getattr(s, "tensor", None) == tensor for s in spec.epilogue))


def fold_scale_into_readers(graph: Graph) -> Graph:
    """Mul(x, s[c]) read only by convolutions, x an L2 normalisation's or a conv's -> each reader's weights scaled
    along their input channels (zero padding stays zero, so the fold is exact up to float rounding)."""
    for mul in list(graph.nodes.values()):
        if mul.op_type != "Mul" or len(mul.inputs) != 2 or mul.name not in graph.nodes:
            continue
        out = mul.outputs[0]
        shape = graph.tensors[out].shape
        readers = graph.consumers(out)
        if not shape or len(shape) != 4 or out in graph.outputs or not readers or out in graph.fixed_scales:
            continue
        consts = [t for t in mul.inputs if graph.const(t) is not None]
        if len(consts) != 1:
            continue
        x = next(t for t in mul.inputs if t != consts[0])
        source = graph.producer(x)
        if source is None or source.kind not in (OpKind.LP_NORMALIZATION, OpKind.FUSED_CONV):
            continue                 # pre-processing (an input's normalisation) stays where roles.py puts it
        scale = per_channel(graph, consts[0], shape[1], 4)
        if scale is None or graph.tensors[x].shape != shape or not all(_reads_as_conv_input(r, out) for r in readers):
            continue
        if not all(r.conv.group == 1 or r.conv.group == shape[1] for r in readers):
            continue
        for i, r in enumerate(readers):
            w = graph.const(r.conv.weight).astype(np.float64)
            w = w * (scale.reshape(1, -1, 1, 1) if r.conv.group == 1 else scale.reshape(-1, 1, 1, 1))
            wname = graph.new_const(f"{r.name}_weight_scaled", w.astype(np.float32))
            graph.nodes[r.name] = replace(r, inputs=[x, wname] + r.inputs[2:], conv=replace(r.conv, weight=wname),
                                          origin=(mul.origin if i == 0 else []) + r.origin)
        del graph.nodes[mul.name]
        graph.touch()
    graph.prune_tensors()
    return graph
