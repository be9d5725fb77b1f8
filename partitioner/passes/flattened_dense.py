"""A dense layer over a flattened feature map (keras' Flatten after a Transpose to NHWC, torch's Flatten of NCHW;
MTCNN's ONet, VGG-style heads) as one conv whose kernel is the whole map: the weight's columns, reordered by where
the flatten put each (c, h, w), become a [out, C, H, W] kernel read with no padding, so the Transpose and Reshape
between the last conv and the dense layer leave the graph instead of costing a CPU hop. The conv's [N, out, 1, 1]
result is the dense layer's [N, out] in the engine's memory; the float model flattens it back."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from partitioner.ir.graph import ConvForm, Graph, Node, OpKind
from partitioner.ir.op_facts import RESHAPING_OPS
from partitioner.passes.data_movement import evaluate_movement

MAX_KERNEL = 7           # the engine's largest kernel (targets/fpga.py): a bigger map stays a dense layer
_MAX_ELEMENTS = 1 << 20


def _flatten_chain(graph: Graph, tensor: str) -> tuple[list[Node], str] | None:
    """(the reshaping nodes, the 4-D map they start from) where `tensor` [N, K] is a layer's map flattened."""
    chain: list[Node] = []
    t = tensor
    while len(chain) < 4:
        node = graph.producer(t)
        if node is None or node.op_type not in RESHAPING_OPS or node.domain not in ("", "ai.onnx"):
            break
        chain.insert(0, node)
        t = node.inputs[0]
    x = graph.tensors[t]
    return (chain, t) if chain and x.is_static and len(x.shape) == 4 else None


def _column_order(chain: list[Node], graph: Graph, x: str) -> np.ndarray | None:
    """For a flatten chain of an [N, C, H, W] map: the column k of the [N, K] result that each (c, h, w) lands in,
    as a [C, H, W] array; None if rows mix batches or the chain does more than reorder."""
    n, c, h, w = graph.tensors[x].shape
    if n * c * h * w > _MAX_ELEMENTS:
        return None
    index = np.arange(n * c * h * w, dtype=np.int64).reshape(n, c, h, w)
    moved = evaluate_movement(chain, graph, index)
    if moved is None or moved.shape != (n, c * h * w):
        return None
    per_image = c * h * w
    if not np.array_equal(moved // per_image, np.repeat(np.arange(n)[:, None], per_image, axis=1)):
        return None
    where = np.empty(per_image, np.int64)
    where[moved[0] % per_image] = np.arange(per_image)
    return where.reshape(c, h, w)


def flattened_dense_as_conv(graph: Graph) -> Graph:
    for node in list(graph.nodes.values()):
        if node.name not in graph.nodes or node.kind is not OpKind.FUSED_CONV or node.conv.form is not ConvForm.DENSE:
            continue
        flat = node.inputs[0]
        found = _flatten_chain(graph, flat)
        if found is None:
            continue
        chain, x = found
        _, c, h, w = graph.tensors[x].shape
        readers = graph.consumers(flat)
        if max(h, w) > MAX_KERNEL or flat in graph.outputs or any(
                r.kind is not OpKind.FUSED_CONV or r.conv.form is not ConvForm.DENSE or r.inputs[0] != flat
                for r in readers) or any(graph.sole_consumer(n.outputs[0]) is None for n in chain[:-1]):
            continue
        order = _column_order(chain, graph, x)
        if order is None:
            continue
        moved = [o for link in chain for o in link.origin]       # the first dense layer stands for the links
        for k, dense in enumerate(readers):
            weight = graph.const(dense.conv.weight)             # [out, K]
            kernel = graph.new_const(f"{dense.name}_map_kernel",
                                     np.ascontiguousarray(weight[:, order]).astype(weight.dtype))
            spec = replace(dense.conv, form=ConvForm.CONV, weight=kernel, kernel=(h, w))
            inputs = [x, kernel] + [t for t in dense.inputs[2:]]
            graph.replace([dense.name], Node(dense.name, OpKind.FUSED_CONV, "FusedConv", inputs, list(dense.outputs),
                                             (moved if k == 0 else []) + dense.origin, conv=spec))
        for link in reversed(chain):
            del graph.nodes[link.name]
        graph.touch()
    graph.prune_tensors()
    return graph
