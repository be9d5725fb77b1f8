"""An inference-mode BatchNormalization folded into the convolution that feeds it, or, with none to take it, run
as a 1x1 depthwise convolution."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from partitioner.ir.graph import ConvForm, FusedConv, Graph, Node, OpKind, Tensor
from partitioner.ir.op_facts import ACTIVATION_KINDS, LAYER_KINDS


def _affine(bn: Node, graph: Graph) -> tuple[np.ndarray, np.ndarray] | None:
    """An inference-mode BatchNormalization as y = scale * x + shift per channel (float64), None where its
    parameters are not constants."""
    params = [graph.const(t) for t in bn.inputs[1:5]]
    if bn.attr("training_mode", 0) or len(bn.outputs) != 1 or any(p is None for p in params):
        return None
    gamma, beta, mean, var = (p.astype(np.float64).ravel() for p in params)
    scale = gamma / np.sqrt(var + bn.attr("epsilon", 1e-5))
    return scale, beta - mean * scale


def fold_batchnorm(graph: Graph) -> Graph:
    for bn in list(graph.nodes.values()):
        if bn.kind is not OpKind.BATCHNORM:
            continue
        conv = graph.producer(bn.inputs[0])
        if conv is None or conv.kind is not OpKind.FUSED_CONV or conv.conv.epilogue or conv.conv.upsample != 1:
            continue
        if graph.sole_consumer(conv.outputs[0]) is not bn or (affine := _affine(bn, graph)) is None:
            continue
        scale, shift = affine
        spec = conv.conv
        w = graph.const(spec.weight)
        w = w * scale.astype(np.float32).reshape((-1,) + (1,) * (w.ndim - 1))
        b = graph.const(spec.bias).astype(np.float64) if spec.bias else np.zeros_like(scale)
        b = (b * scale + shift).astype(np.float32)
        wname = graph.new_const(f"{conv.name}_weight_bn", w)
        bname = graph.new_const(f"{conv.name}_bias_bn", b)
        fused = Node(conv.name, OpKind.FUSED_CONV, "FusedConv", [conv.inputs[0], wname, bname], list(bn.outputs),
                     conv.origin + bn.origin, conv=replace(spec, weight=wname, bias=bname))
        graph.replace([conv.name, bn.name], fused)
    graph.prune_tensors()
    return graph


def batchnorm_as_depthwise(graph: Graph) -> Graph:
    """A BatchNormalization with no conv to fold into (after a concat in CSP blocks, DenseNet's and pre-activation
    ResNets' BN -> ReLU -> conv) as a 1x1 depthwise conv with the same per-channel scale and shift: an engine
    layer that takes the activation after it, where the CPU would split the FPGA work in two. Runs after
    `fold_batchnorm`, so only the BNs it could not fold are left."""
    for bn in list(graph.nodes.values()):
        if bn.kind is not OpKind.BATCHNORM:
            continue
        shape = graph.tensors[bn.inputs[0]].shape
        affine = _affine(bn, graph)
        if shape is None or len(shape) != 4 or not isinstance(shape[1], int) or affine is None \
                or not all(p.size == shape[1] for p in affine):
            continue
        scale, shift = affine
        wname = graph.new_const(f"{bn.name}_weight_dw", scale.astype(np.float32).reshape(-1, 1, 1, 1))
        bname = graph.new_const(f"{bn.name}_bias_dw", shift.astype(np.float32))
        spec = FusedConv(ConvForm.CONV, wname, bname, kernel=(1, 1), group=shape[1])
        graph.replace([bn.name], Node(bn.name, OpKind.FUSED_CONV, "FusedConv", [bn.inputs[0], wname, bname],
                                      list(bn.outputs), list(bn.origin), conv=spec))
    graph.prune_tensors()
    return graph


def lone_activations_as_depthwise(graph: Graph) -> Graph:
    """An activation no conv can take (after an element-wise add of two branches as in HRNet's fuse layers,
    after a squeeze-and-excitation gate as in ReXNet, after a conv whose output is read elsewhere too) behind a
    1x1 depthwise conv of weight 1, which `fuse_activation` then gives it: one engine layer where the CPU would
    split the FPGA work in two. Exact in float; in int8 the identity requantises to the activation's input
    scale."""
    for act in list(graph.nodes.values()):
        if act.kind not in ACTIVATION_KINDS or not act.inputs:
            continue
        x = act.inputs[0]
        source = graph.producer(x)
        shape = graph.tensors[x].shape
        if source is None or source.kind not in LAYER_KINDS or shape is None or len(shape) != 4 \
                or not graph.tensors[x].is_static:
            continue
        if source.kind is OpKind.FUSED_CONV and graph.sole_consumer(x) is act:
            continue                                   # fuse_activation gives it to that conv
        if act.kind is OpKind.SOFTPLUS and len(graph.consumers(x)) > 1:
            continue                                   # Mish's first step: x * tanh(softplus(x)) needs x as well
        c = shape[1]
        name = graph.names.fresh(f"{act.name}_identity")
        t = graph.add_tensor(Tensor(name, name, graph.tensors[x].elem_type, shape)).name
        wname = graph.new_const(f"{name}_weight", np.ones((c, 1, 1, 1), np.float32))
        conv = Node(name, OpKind.FUSED_CONV, "FusedConv", [x, wname], [t], [],
                    conv=FusedConv(ConvForm.CONV, wname, None, kernel=(1, 1), group=c))
        act.inputs[0] = t
        graph.splice(act.name, [conv, act])
    return graph
