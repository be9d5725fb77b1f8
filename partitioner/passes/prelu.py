"""PRelu for the engine, in three passes of the pipeline:

- `shared_prelu_as_leaky_relu`: a slope shared by every channel (keras' shared axes, a scalar) is LeakyRelu, which
  the epilogue's table applies.
- `fuse_prelu`: a per-channel slope right after a conv (or dense layer) nothing else reads becomes the conv's
  first epilogue step; the requantiser multiplies a negative accumulator by its channel's negative-side
  multiplier (slope x multiplier, Flag.PRELU in the kernel ABI), so it costs nothing.
- `prelu_as_engine_layers`: any other per-channel PRelu (after an add, a concat, a conv read elsewhere too)
  becomes two channelwise engine layers, exact in float for any slope:

      PRelu(x) = x + (1 - a) * relu(-x)        n = Relu(depthwise(x, -1));  y = depthwise(n, 1 - a) + x

  (the second as a conv with a fused residual add; on a dense layer's [N, C], both are diagonal dense layers).
"""
from __future__ import annotations

import numpy as np
from onnx import helper

from partitioner.ir.graph import Activation, ActKind, ConvForm, FusedConv, Graph, Node, OpKind, Tensor
from partitioner.passes.folding import per_channel


def prelu_slopes(graph: Graph, node: Node) -> np.ndarray | None:
    """The [C] slopes of a PRelu over an NCHW tensor or a dense layer's [N, C] whose slope is a scalar or per
    channel, else None."""
    shape = graph.tensors[node.inputs[0]].shape
    if len(node.inputs) != 2 or not graph.tensors[node.inputs[0]].is_static or len(shape) not in (2, 4):
        return None
    return per_channel(graph, node.inputs[1], shape[1], len(shape))


def _channelwise(graph: Graph, hint: str, x: str, weight: np.ndarray, out_like: Tensor) -> Node:
    """y[c] = weight[c] x[c]: a 1x1 depthwise conv, or on a dense layer's [N, C] a diagonal dense layer."""
    name = graph.names.fresh(hint)
    y = graph.add_tensor(Tensor(name, name, out_like.elem_type, out_like.shape)).name
    if len(out_like.shape) == 2:
        w = graph.new_const(f"{name}_weight", np.diag(weight).astype(np.float32))
        spec = FusedConv(ConvForm.DENSE, w, None)
    else:
        w = graph.new_const(f"{name}_weight", weight.astype(np.float32).reshape(-1, 1, 1, 1))
        spec = FusedConv(ConvForm.CONV, w, None, kernel=(1, 1), group=len(weight))
    return Node(name, OpKind.FUSED_CONV, "FusedConv", [x, w], [y], [], conv=spec)


def shared_prelu_as_leaky_relu(graph: Graph) -> Graph:
    for node in list(graph.nodes.values()):
        if node.op_type != "PRelu" or node.domain not in ("", "ai.onnx"):
            continue
        slopes = prelu_slopes(graph, node)
        if slopes is not None and np.all(np.isfinite(slopes)) and np.all(slopes == slopes[0]):
            leaky = Node(node.name, OpKind.LEAKY_RELU, "LeakyRelu", [node.inputs[0]], list(node.outputs),
                         list(node.origin), attrs={"alpha": helper.make_attribute("alpha", float(slopes[0]))})
            graph.replace([node.name], leaky)
    graph.prune_tensors()
    return graph


def fuse_prelu(graph: Graph) -> Graph:
    for node in list(graph.nodes.values()):
        if node.op_type != "PRelu" or node.domain not in ("", "ai.onnx") or node.name not in graph.nodes:
            continue
        conv = graph.producer(node.inputs[0])
        slopes = prelu_slopes(graph, node)
        if conv is None or conv.kind is not OpKind.FUSED_CONV or conv.conv.epilogue or slopes is None \
                or not np.all(np.isfinite(slopes)) or graph.sole_consumer(node.inputs[0]) is not node:
            continue
        step = Activation(ActKind.PRELU, slopes=tuple(float(a) for a in slopes))
        spec = conv.conv.with_step(step, graph.tensors[conv.outputs[0]].onnx_name)
        graph.replace([conv.name, node.name], Node(conv.name, OpKind.FUSED_CONV, "FusedConv", list(conv.inputs),
                                                   list(node.outputs), conv.origin + node.origin, conv=spec))
    graph.prune_tensors()
    return graph


def prelu_as_engine_layers(graph: Graph) -> Graph:
    for node in list(graph.nodes.values()):
        if node.op_type != "PRelu" or node.domain not in ("", "ai.onnx"):
            continue
        slopes = prelu_slopes(graph, node)
        if slopes is None or not np.all(np.isfinite(slopes)):
            continue
        x, y = node.inputs[0], node.outputs[0]
        like = graph.tensors[x]
        negate = _channelwise(graph, f"{node.name}_negate", x, -np.ones_like(slopes), like)
        relu_name = graph.names.fresh(f"{node.name}_relu")
        relu_out = graph.add_tensor(Tensor(relu_name, relu_name, like.elem_type, like.shape)).name
        relu = Node(relu_name, OpKind.RELU, "Relu", negate.outputs, [relu_out], [])
        scale = _channelwise(graph, f"{node.name}_scale", relu_out, 1.0 - slopes, like)
        add = Node(node.name, OpKind.ADD, "Add", [scale.outputs[0], x], [y], list(node.origin))
        graph.splice(node.name, [negate, relu, scale, add])
    graph.prune_tensors()
    return graph
