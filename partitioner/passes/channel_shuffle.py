"""Channel permutations (`data_movement.recognise_data_movement` makes them 1x1 convs with 0/1 weights from
ShuffleNet/ESNet's shuffles and channel Gathers) moved forward through channel-wise layers and concats and folded
into the weights of the convs that read them. A permutation that reaches a conv costs nothing; one that does not
(a Split, an output behind it) runs on the engine as the 1x1 conv it is, instead of a trip to the CPU and back."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from partitioner.ir.graph import Activation, ConvForm, FusedConv, Graph, Node, OpKind, Tensor

# layers that treat every channel alike and alone: a permutation of their input permutes their output
_CHANNELWISE = {OpKind.RELU, OpKind.CLIP, OpKind.LEAKY_RELU, OpKind.SIGMOID, OpKind.HARD_SIGMOID, OpKind.HARD_SWISH,
                OpKind.MAXPOOL, OpKind.RESIZE, OpKind.GLOBAL_AVG_POOL, OpKind.LP_NORMALIZATION}
_CHANNELWISE_TYPES = {"AveragePool", "Elu", "Selu", "Softplus", "Tanh", "Neg", "Abs", "Mish", "Gelu"}


def permutation_conv(graph: Graph, name: str, x: str, y: str, perm: np.ndarray, origin: list[str]) -> Node:
    """A bare 1x1 conv with y[:, c] = x[:, perm[c]]."""
    c = len(perm)
    w = np.zeros((c, c, 1, 1), np.float32)
    w[np.arange(c), perm, 0, 0] = 1.0
    wname = graph.new_const(f"{name}_permutation", w)
    return Node(name, OpKind.FUSED_CONV, "FusedConv", [x, wname], [y], origin,
                conv=FusedConv(ConvForm.CONV, wname, None))


def permutation_of(node: Node, graph: Graph) -> np.ndarray | None:
    """perm if `node` is a bare 1x1 conv whose weights copy input channel perm[c] to output channel c."""
    spec = node.conv
    if node.kind is not OpKind.FUSED_CONV or spec.form is not ConvForm.CONV or spec.bias or spec.epilogue or \
            spec.kernel != (1, 1) or spec.strides != (1, 1) or spec.pads != (0, 0, 0, 0) or spec.group != 1 or \
            spec.upsample != 1:
        return None
    w = graph.const(spec.weight)
    if w is None or w.shape[0] != w.shape[1]:
        return None
    m = w.reshape(w.shape[0], w.shape[1])
    perm = np.argmax(m, axis=1)
    expected = np.zeros_like(m)
    expected[np.arange(len(perm)), perm] = 1.0
    if not np.array_equal(m, expected) or len(set(perm.tolist())) != len(perm):
        return None
    return perm


def _permute_channelwise(user: Node, graph: Graph, inverse: np.ndarray) -> Node | None:
    """`user` rewritten to work on the unpermuted tensor (its per-channel constants reordered), or None."""
    if user.kind in _CHANNELWISE or user.op_type in _CHANNELWISE_TYPES:
        extra = [t for t in user.inputs[1:] if t]
        return user if all(graph.const(t) is not None for t in extra) else None
    spec = user.conv
    if user.kind is not OpKind.FUSED_CONV or spec.form is not ConvForm.CONV or \
            not all(isinstance(step, Activation) for step in spec.epilogue):
        return None
    w = graph.const(spec.weight)
    c = len(inverse)
    if spec.group != c or w is None or w.shape[0] != c or w.shape[1] != 1:
        return None
    # depthwise: the new conv's channel perm[c] does what the old one's channel c did
    wname = graph.new_const(f"{user.name}_weight_unshuffled", np.ascontiguousarray(w[inverse]))
    bname = None
    if spec.bias:
        bias = graph.const(spec.bias)
        bname = graph.new_const(f"{user.name}_bias_unshuffled", np.ascontiguousarray(bias[inverse]))
    return replace(user, inputs=[user.inputs[0], wname] + ([bname] if bname else []),
                   conv=replace(spec, weight=wname, bias=bname))


def _absorb(user: Node, graph: Graph, perm: np.ndarray) -> Node | None:
    """A standard conv reading the permuted tensor, with its input-channel axis reordered to read the original."""
    spec = user.conv
    if user.kind is not OpKind.FUSED_CONV or spec.form not in (ConvForm.CONV, ConvForm.TRANSPOSED) or \
            spec.group != 1:
        return None
    w = graph.const(spec.weight)
    if w is None or w.ndim != 4 or w.shape[1] != len(perm):
        return None
    inverse = np.argsort(perm)
    wname = graph.new_const(f"{user.name}_weight_unshuffled", np.ascontiguousarray(w[:, inverse]))
    return replace(user, inputs=[user.inputs[0], wname] + user.inputs[2:], conv=replace(spec, weight=wname))


def _split_readers(graph: Graph, perm_node: Node) -> list[Node]:
    """One permutation node per reader of its output (model outputs keep the original), so each can move alone."""
    y = perm_node.outputs[0]
    users = graph.consumers(y)
    keep_original = y in graph.outputs
    clones = [perm_node]
    for user in users[0 if keep_original else 1:]:
        if sum(t == y for t in user.inputs) != 1 or user.inputs[0] != y:
            continue
        t = graph.tensors[y]
        out = graph.names.fresh(f"{y}_for_{user.name}")
        graph.add_tensor(Tensor(out, out, t.elem_type, t.shape))
        clone = replace(perm_node, name=graph.names.fresh(f"{perm_node.name}_for_{user.name}"), outputs=[out],
                        origin=[])
        user.inputs = [out if i == y else i for i in user.inputs]
        _insert_after(graph, perm_node.name, clone)
        clones.append(clone)
    graph.touch()
    return clones


def _insert_after(graph: Graph, anchor: str, node: Node) -> None:
    rebuilt: dict[str, Node] = {}
    for name, n in graph.nodes.items():
        if name != node.name:
            rebuilt[name] = n
        if name == anchor:
            rebuilt[node.name] = node
    graph.nodes = rebuilt
    graph.touch()


def _move_forward(graph: Graph, perm_node: Node, perm: np.ndarray) -> bool:
    """Fold `perm_node` into its one reader, or swap it behind a channel-wise reader. True if the graph changed."""
    y = perm_node.outputs[0]
    user = graph.sole_consumer(y)
    if user is None or user.inputs[0] != y or y in user.inputs[1:]:
        return False
    absorbed = _absorb(user, graph, perm)
    if absorbed is not None:
        absorbed.inputs[0] = perm_node.inputs[0]
        absorbed.origin = absorbed.origin + perm_node.origin     # the shuffle's nodes live on in the reader
        del graph.nodes[perm_node.name]
        graph.nodes[user.name] = absorbed
        graph.touch()
        return True
    if user.kind is OpKind.CONCAT:
        return _through_concat(graph, perm_node, perm, user)
    moved = _permute_channelwise(user, graph, np.argsort(perm))
    out = user.outputs[0] if user.outputs else None
    if moved is None or len([o for o in user.outputs if o]) != 1 or graph.tensors[out].shape is None or \
            len(graph.tensors[out].shape) != 4 or graph.tensors[out].shape[1] != len(perm):
        return False
    t = graph.tensors[out]
    between = graph.names.fresh(f"{out}_unshuffled")
    graph.add_tensor(Tensor(between, between, t.elem_type, t.shape))
    graph.nodes[user.name] = replace(moved, inputs=[perm_node.inputs[0]] + moved.inputs[1:], outputs=[between])
    perm_node.inputs = [between] + perm_node.inputs[1:]
    perm_node.outputs = [out]
    _insert_after(graph, user.name, perm_node)
    return True


def _through_concat(graph: Graph, perm_node: Node, perm: np.ndarray, concat: Node) -> bool:
    """Concat(.., P x, ..) = Q Concat(.., x, ..), Q permuting P's block of channels only."""
    y, out = perm_node.outputs[0], concat.outputs[0]
    shapes = [graph.tensors[t].shape for t in concat.inputs]
    rank = len(graph.tensors[out].shape or ())
    if concat.attr("axis", 0) % max(rank, 1) != 1 or rank != 4 or concat.inputs.count(y) != 1 or \
            any(sh is None or len(sh) != 4 or not isinstance(sh[1], int) for sh in shapes):
        return False
    k = concat.inputs.index(y)
    offset = sum(sh[1] for sh in shapes[:k])
    total = sum(sh[1] for sh in shapes)
    block = np.arange(total)
    block[offset:offset + len(perm)] = offset + perm
    t = graph.tensors[out]
    between = graph.names.fresh(f"{out}_unshuffled")
    graph.add_tensor(Tensor(between, between, t.elem_type, t.shape))
    inputs = list(concat.inputs)
    inputs[k] = perm_node.inputs[0]
    graph.nodes[concat.name] = replace(concat, inputs=inputs, outputs=[between])
    del graph.nodes[perm_node.name]
    widened = permutation_conv(graph, perm_node.name, between, out, block, perm_node.origin)
    _insert_after(graph, concat.name, widened)
    return True


def _remove_identity(graph: Graph, node: Node) -> None:
    x, y = node.inputs[0], node.outputs[0]
    users = graph.consumers(y)
    for user in users:
        user.inputs = [x if t == y else t for t in user.inputs]
    users[0].origin = users[0].origin + node.origin            # the nodes that cancelled out are placed with it
    del graph.nodes[node.name]
    graph.touch()


def fold_channel_permutations(graph: Graph) -> Graph:
    """Move every channel permutation forward until a conv folds it (free) or something stops it."""
    changed = True
    while changed:
        changed = False
        for name in list(graph.nodes):
            node = graph.nodes.get(name)          # a step before may have rewritten or removed it
            if node is None:
                continue
            perm = permutation_of(node, graph)
            if perm is None or graph.tensors[node.outputs[0]].shape is None:
                continue
            if np.array_equal(perm, np.arange(len(perm))) and node.outputs[0] not in graph.outputs:
                _remove_identity(graph, node)       # two shuffles that undo each other
                changed = True
                continue
            for piece in _split_readers(graph, node):
                changed |= _move_forward(graph, piece, perm)
    graph.prune_tensors()
    return graph
