"""Chains of pure data movement (Reshape, Transpose, Expand, Tile, Flatten, Squeeze, Unsqueeze) recognised by
what they do, not by how an exporter spelt them: the chain is run on a tensor of element indices, and the result
is compared with the two movements the engine has a form for.

- A channel permutation (ShuffleNet/ESNet's Reshape -> Transpose -> Reshape shuffle; a Gather of channels)
  becomes a 1x1 permutation conv, which `channel_shuffle.fold_channel_permutations` moves into its readers.
- Nearest upsampling by 2, 4 or 8 (Darknet converters' Reshape -> Expand -> Reshape) becomes a Resize, which the
  engine reads for free or copies.
"""
from __future__ import annotations

import numpy as np
from onnx import helper

from partitioner.ir.graph import Graph, Node, OpKind
from partitioner.ir.op_facts import RESHAPING_OPS
from partitioner.passes.channel_shuffle import permutation_conv

_MAX_CHAIN = 6
_MAX_PROBE = 1 << 22            # elements of the index tensor a chain is evaluated on
_UPSAMPLE_FACTORS = (2, 4, 8)


def evaluate_movement(nodes: list[Node], graph: Graph, x: np.ndarray) -> np.ndarray | None:
    """`x` moved as the chain of reshaping nodes moves its input (None where a shape is unknown)."""
    for node in nodes:
        shape = graph.tensors[node.outputs[0]].shape
        if shape is None or not all(isinstance(d, int) and d >= 0 for d in shape):
            return None
        if node.op_type == "Transpose":
            perm = node.attr("perm")
            x = np.transpose(x, perm) if perm is not None else x.T
        elif node.op_type in ("Expand", "Tile"):
            if node.op_type == "Tile":
                reps = graph.const(node.inputs[1]) if len(node.inputs) > 1 else None
                if reps is None:
                    return None
                x = np.tile(x, [int(r) for r in np.asarray(reps).ravel()])
            else:
                try:
                    x = np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(shape)))
                except ValueError:
                    return None
        elif int(np.prod(shape)) == x.size:
            x = x.reshape(shape)
        else:
            return None
        if tuple(x.shape) != tuple(shape):
            return None
    return x


def _movement(nodes: list[Node], graph: Graph) -> tuple[str, object] | None:
    """("permutation", perm) or ("upsample", factor) if the chain from a 4-D NCHW tensor does only that."""
    x, y = graph.tensors[nodes[0].inputs[0]], graph.tensors[nodes[-1].outputs[0]]
    if not (x.is_static and y.is_static) or len(x.shape) != 4 or len(y.shape) != 4 or x.numel() > _MAX_PROBE:
        return None
    n, c, h, w = x.shape
    if y.shape[:2] != (n, c) or y.numel() > _MAX_PROBE:
        return None
    index = np.arange(x.numel(), dtype=np.int64).reshape(x.shape)
    moved = evaluate_movement(nodes, graph, index)
    if moved is None:
        return None
    if y.shape == x.shape and c >= 2:
        perm = moved[0, :, 0, 0] // (h * w) % c
        if np.array_equal(moved, index[:, perm]) and not np.array_equal(perm, np.arange(c)):
            return "permutation", perm
        return None
    for f in _UPSAMPLE_FACTORS:
        if y.shape == (n, c, f * h, f * w) and np.array_equal(moved, index.repeat(f, axis=2).repeat(f, axis=3)):
            return "upsample", f
    return None


def _chain_from(start: Node, graph: Graph) -> tuple[list[Node], tuple[str, object]] | None:
    """The longest run of data-movement nodes from `start` (each link read only by the next) that moves data as
    the engine can."""
    chain, found = [start], None
    while len(chain) <= _MAX_CHAIN:
        movement = _movement(chain, graph) if len(chain) > 1 or start.op_type in ("Expand", "Tile") else None
        if movement is not None:
            found = (list(chain), movement)
        nxt = graph.sole_consumer(chain[-1].outputs[0])
        if nxt is None or nxt.op_type not in RESHAPING_OPS or nxt.inputs[0] != chain[-1].outputs[0]:
            break
        chain.append(nxt)
    return found


def _gather_permutation(node: Node, graph: Graph) -> np.ndarray | None:
    if node.attr("axis", 0) != 1 or len(node.inputs) != 2:
        return None
    x, idx = graph.tensors[node.inputs[0]], graph.const(node.inputs[1])
    if not x.is_static or len(x.shape) != 4 or idx is None or idx.ndim != 1:
        return None
    c = x.shape[1]
    perm = np.where(idx < 0, idx + c, idx).astype(np.int64)
    if sorted(perm.tolist()) != list(range(c)) or np.array_equal(perm, np.arange(c)):
        return None
    return perm


def _nearest_resize(graph: Graph, name: str, x: str, y: str, factor: int, origin: list[str]) -> Node:
    scales = graph.new_const(f"{name}_scales", np.array([1, 1, factor, factor], np.float32))
    return Node(name, OpKind.RESIZE, "Resize", [x, "", scales], [y], origin, attrs={
        "mode": helper.make_attribute("mode", "nearest"),
        "coordinate_transformation_mode": helper.make_attribute("coordinate_transformation_mode", "asymmetric"),
        "nearest_mode": helper.make_attribute("nearest_mode", "floor")})


def recognise_data_movement(graph: Graph) -> Graph:
    for node in list(graph.nodes.values()):
        if node.name not in graph.nodes or node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type == "Gather":
            perm = _gather_permutation(node, graph)
            found = ([node], ("permutation", perm)) if perm is not None else None
        elif node.op_type in RESHAPING_OPS:
            found = _chain_from(node, graph)
        else:
            continue
        if found is None:
            continue
        chain, (kind, value) = found
        x, y = chain[0].inputs[0], chain[-1].outputs[0]
        origin = [o for n in chain for o in n.origin]
        if kind == "permutation":
            new = permutation_conv(graph, graph.names.fresh(f"{chain[-1].name}_shuffle"), x, y, value, origin)
        else:
            new = _nearest_resize(graph, graph.names.fresh(f"{chain[-1].name}_upsample"), x, y, value, origin)
        graph.replace([n.name for n in chain], new)
    graph.prune_tensors()
    return graph
