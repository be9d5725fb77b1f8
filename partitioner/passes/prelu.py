"""PRelu for the engine. A slope shared by every channel (keras' shared axes, a scalar) is LeakyRelu, which the
epilogue's table applies. A per-channel slope a is not one function of the int8 code, so it becomes two 1x1
depthwise layers the engine already runs, exact in float for any slope:

    PRelu(x) = x + (1 - a) * relu(-x)        n = Relu(depthwise(x, -1));  y = depthwise(n, 1 - a) + x

(the second as a conv with a fused residual add; after a dense layer, [N, C], both are diagonal dense layers). It
costs two memory-bound layers per PRelu, not a separate negative-side multiplier in the requantiser, which the ABI
does not have."""
from __future__ import annotations

import numpy as np
from onnx import helper

from partitioner.ir.graph import ConvForm, FusedConv, Graph, Node, OpKind, Tensor
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


def prelu_as_engine_layers(graph: Graph) -> Graph:
    for node in list(graph.nodes.values()):
        if node.op_type != "PRelu" or node.domain not in ("", "ai.onnx"):
            continue
        slopes = prelu_slopes(graph, node)
        if slopes is None or not np.all(np.isfinite(slopes)):
            continue
        x, y = node.inputs[0], node.outputs[0]
        if np.all(slopes == slopes[0]):
            leaky = Node(node.name, OpKind.LEAKY_RELU, "LeakyRelu", [x], [y], list(node.origin),
                         attrs={"alpha": helper.make_attribute("alpha", float(slopes[0]))})
            graph.replace([node.name], leaky)
            continue
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
