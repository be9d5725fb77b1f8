"""Conv, Gemm and MatMul with constant weights become FusedConv nodes (dense layers as 1x1 convolutions), and so
does a ConvTranspose of kernel = stride = 2 (its weight turned to the [out, in, kh, kw] of a conv, so BatchNorm
and per-channel affine folding see output channels on axis 0)."""
from __future__ import annotations

import numpy as np

from partitioner.errors import ModelError
from partitioner.ir.graph import ConvForm, FusedConv, Graph, Node, OpKind
from partitioner.ir.op_facts import conv_pads, transposed_conv_problem


def _check_channels(node: Node, cin: int | None, expected: int, what: str) -> None:
    """ONNX shape inference lets a channel mismatch through; onnxruntime would fail later, deep inside."""
    if isinstance(cin, int) and cin != expected:
        raise ModelError(f"bad shape: {what} expects {expected} input channels, the input has {cin}",
                         node=node.label, op=node.op_type)


def _conv(node: Node, graph: Graph) -> FusedConv | None:
    w = graph.const(node.inputs[1])
    bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    x = graph.tensors[node.inputs[0]].shape
    _check_weights(node, graph, x, w, bias)
    if w is None or w.ndim != 4 or (bias is not None and graph.const(bias) is None):
        return None
    group = node.attr("group", 1)
    _check_channels(node, x[1] if x and len(x) == 4 else None, w.shape[1] * group, f"weight {w.shape} x group {group}")
    pads = conv_pads(node)
    if pads is None:
        return None
    return FusedConv(ConvForm.CONV, node.inputs[1], bias, kernel=(w.shape[2], w.shape[3]),
                     strides=tuple(node.attr("strides", [1, 1])), pads=pads,
                     dilations=tuple(node.attr("dilations", [1, 1])), group=node.attr("group", 1))


def _check_weights(node: Node, graph: Graph, x: tuple | None, w, bias: str | None) -> None:
    """What ONNX shape inference does not check and onnxruntime only finds when it runs the node."""
    if w is None:
        return
    if x is not None and len(x) != w.ndim:
        raise ModelError(f"bad shape: weight of rank {w.ndim} {list(w.shape)} for an input of rank {len(x)}",
                         node=node.label, op=node.op_type)
    kernel = node.attr("kernel_shape", None)
    if kernel is not None and tuple(kernel) != tuple(w.shape[2:]):
        raise ModelError(f"bad shape: kernel_shape {list(kernel)} but the weight's kernel is {list(w.shape[2:])}",
                         node=node.label, op=node.op_type)
    b = graph.const(bias) if bias else None
    if b is not None and tuple(b.shape) != (w.shape[0],):
        raise ModelError(f"bad shape: bias {list(b.shape)} for {w.shape[0]} output channels",
                         node=node.label, op=node.op_type)


def _transposed(node: Node, graph: Graph) -> tuple[FusedConv, list[str]] | None:
    if transposed_conv_problem(node, graph) is not None:
        return None
    w = graph.const(node.inputs[1])
    x = graph.tensors[node.inputs[0]].shape
    _check_channels(node, x[1] if x and len(x) == 4 else None, w.shape[0], f"weight {w.shape}")
    bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    wname = graph.new_const(f"{node.name}_weight", np.ascontiguousarray(w.transpose(1, 0, 2, 3)))
    spec = FusedConv(ConvForm.TRANSPOSED, wname, bias, kernel=(2, 2), strides=(2, 2))
    return spec, [node.inputs[0], wname] + ([bias] if bias else [])


def _dense(node: Node, graph: Graph) -> tuple[FusedConv, list[str]] | None:
    """Gemm/MatMul as y = x @ W.T + b with W [out, in]; alpha, beta and transB are folded into W and b."""
    x = graph.tensors[node.inputs[0]]
    w = graph.const(node.inputs[1])
    if w is None or w.ndim != 2 or x.shape is None or len(x.shape) != 2:
        return None
    k = w.shape[1] if node.kind is OpKind.GEMM and node.attr("transB", 0) else w.shape[0]
    _check_channels(node, x.shape[1], k, f"weight {w.shape}")
    bias_name = None
    if node.kind is OpKind.GEMM:
        if node.attr("transA", 0):
            return None
        alpha, beta = node.attr("alpha", 1.0), node.attr("beta", 1.0)
        wt = (w if node.attr("transB", 0) else w.T) * np.float32(alpha)
        if len(node.inputs) > 2 and node.inputs[2]:
            b = graph.const(node.inputs[2])
            if b is None:
                return None
            b = np.broadcast_to(b * np.float32(beta), (wt.shape[0],)).astype(w.dtype)
            bias_name = graph.new_const(f"{node.name}_bias", np.ascontiguousarray(b))
    else:
        wt = w.T
    wname = graph.new_const(f"{node.name}_weight", np.ascontiguousarray(wt.astype(w.dtype)))
    inputs = [node.inputs[0], wname] + ([bias_name] if bias_name else [])
    return FusedConv(ConvForm.DENSE, wname, bias_name), inputs


def form_convolutions(graph: Graph) -> Graph:
    for node in list(graph.nodes.values()):
        if node.kind is OpKind.CONV:
            spec, inputs = _conv(node, graph), [t for t in node.inputs if t]
        elif node.kind in (OpKind.GEMM, OpKind.MATMUL, OpKind.CONV_TRANSPOSE):
            found = (_transposed if node.kind is OpKind.CONV_TRANSPOSE else _dense)(node, graph)
            spec, inputs = found if found else (None, [])
        else:
            continue
        if spec is None:
            continue
        graph.replace([node.name], Node(node.name, OpKind.FUSED_CONV, "FusedConv", inputs, list(node.outputs),
                                        list(node.origin), conv=spec))
    graph.prune_tensors()
    return graph
