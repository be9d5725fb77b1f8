"""Ops the ONNX standard once had and dropped, spelt in the ops that replaced them, so that the checker, the opset
converter and shape inference take the model: ImageScaler (opsets 1-9's experimental per-channel scale and bias,
which the ONNX model zoo's Tiny YOLOv2 and other Windows ML era exports open with; onnxruntime still runs it) becomes
Mul and Add with constants."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from partitioner.errors import ModelError
from partitioner.frontend.onnx_walk import node_label


def _fresh(taken: set[str], base: str) -> str:
    name, k = base, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


def spell_retired_ops(model: onnx.ModelProto) -> list[str]:
    """Rewrite every ImageScaler of the main graph in place; returns the rewritten nodes' labels."""
    g = model.graph
    if not any(n.op_type == "ImageScaler" and n.domain in ("", "ai.onnx") for n in g.node):
        return []
    taken = {t.name for t in g.initializer} | {i.name for i in g.input} | {n.name for n in g.node}
    taken |= {o for n in g.node for o in list(n.input) + list(n.output)}
    nodes, done = [], []
    for i, n in enumerate(g.node):
        if n.op_type != "ImageScaler" or n.domain not in ("", "ai.onnx"):
            nodes.append(n)
            continue
        label = node_label(n, i)
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if len(n.input) != 1 or len(n.output) != 1 or set(attrs) - {"scale", "bias"}:
            raise ModelError("ImageScaler takes one input, gives one output and has only 'scale' and 'bias'",
                             node=label, op=n.op_type)
        base = n.name or n.output[0]
        scale = numpy_helper.from_array(np.array(attrs.get("scale", 1.0), np.float32), _fresh(taken, f"{base}_scale"))
        g.initializer.append(scale)
        bias = attrs.get("bias")
        scaled = _fresh(taken, f"{base}_scaled") if bias else n.output[0]
        nodes.append(helper.make_node("Mul", [n.input[0], scale.name], [scaled], name=_fresh(taken, f"{base}_mul")))
        if bias:
            shift = numpy_helper.from_array(np.asarray(bias, np.float32).reshape(1, -1, 1, 1),
                                            _fresh(taken, f"{base}_bias"))
            g.initializer.append(shift)
            nodes.append(helper.make_node("Add", [scaled, shift.name], [n.output[0]],
                                          name=_fresh(taken, f"{base}_add")))
        done.append(label)
    del g.node[:]
    g.node.extend(nodes)
    return done
