"""Fold an inference-mode BatchNormalization into the convolution that feeds it."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..ir import Graph, Node, OpKind


def fold_batchnorm(graph: Graph) -> Graph:
    for bn in list(graph.nodes.values()):
        if bn.kind is not OpKind.BATCHNORM or bn.attr("training_mode", 0) or len(bn.outputs) != 1:
            continue
        conv = graph.producer(bn.inputs[0])
        if conv is None or conv.kind is not OpKind.FUSED_CONV or conv.conv.epilogue or conv.conv.upsample != 1:
            continue
        if graph.sole_consumer(conv.outputs[0]) is not bn:
            continue
        params = [graph.const(t) for t in bn.inputs[1:5]]
        if any(p is None for p in params):
            continue
        gamma, beta, mean, var = (p.astype(np.float64) for p in params)
        scale = gamma / np.sqrt(var + bn.attr("epsilon", 1e-5))
        spec = conv.conv
        w = graph.const(spec.weight)
        w = w * scale.astype(np.float32).reshape((-1,) + (1,) * (w.ndim - 1))
        b = graph.const(spec.bias).astype(np.float64) if spec.bias else np.zeros_like(scale)
        b = ((b - mean) * scale + beta).astype(np.float32)
        wname = graph.new_const(f"{conv.name}_weight_bn", w)
        bname = graph.new_const(f"{conv.name}_bias_bn", b)
        fused = Node(conv.name, OpKind.FUSED_CONV, "FusedConv", [conv.inputs[0], wname, bname], list(bn.outputs),
                     conv.origin + bn.origin, conv=replace(spec, weight=wname, bias=bname))
        graph.replace([conv.name, bn.name], fused)
    graph.prune_tensors()
    return graph
