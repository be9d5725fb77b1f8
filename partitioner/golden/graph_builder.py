"""Small ONNX graphs written node by node, with explicit names and seeded weights: what the golden cases and
the tests build their models with. (The model zoo keeps its own builder: `models` stands alone by the layering
rule, and its networks want generated names and calibrated gammas.)"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class OnnxNet:
    """Inputs are float32 [1, C, H, W] (`rank=2`: [1, C]) named `x` (`x0`, `x1`, ... for several)."""

    def __init__(self, channels: int = 4, size: int = 6, seed: int = 0, inputs: int = 1, name: str = "net",
                 rank: int = 4, bias_scale: float = 0.1):
        self.name, self.c, self.s, self.bias_scale = name, channels, size, bias_scale
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs = [f"x{i}" if inputs > 1 else "x" for i in range(inputs)]
        self.input_shape = [1, channels, size, size] if rank == 4 else [1, channels]

    def weight(self, name: str, shape: tuple[int, ...], scale: float) -> str:
        """A seeded N(0, scale^2) float32 initializer."""
        return self.const(name, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    _w = weight

    def const(self, name: str, value) -> str:
        """A numpy array keeps its dtype, but float64 becomes float32; Python numbers and lists become float32."""
        array = np.asarray(value, None if isinstance(value, np.ndarray) else np.float32)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def node(self, op: str, inputs: list[str], name: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    op = node

    def conv(self, x: str, name: str, k: int = 3, cin: int | None = None, cout: int | None = None, stride: int = 1,
             pads: list[int] | None = None, dil: int = 1, group: int = 1, bias_scale: float | None = None) -> str:
        """He-scaled weights, bias N(0, bias_scale^2) (default: the net's); 'same' padding unless `pads`."""
        cin, cout = cin or self.c, cout or self.c
        w = self.weight(f"{name}.w", (cout, cin // group, k, k), np.sqrt(2.0 / (cin // group * k * k)))
        b = self.weight(f"{name}.b", (cout,), self.bias_scale if bias_scale is None else bias_scale)
        pads = pads if pads is not None else [dil * (k // 2)] * 4
        return self.node("Conv", [x, w, b], name, kernel_shape=[k, k], strides=[stride, stride], pads=pads,
                         dilations=[dil, dil], group=group)

    def model(self, outputs: list[str], opset: int = 17) -> onnx.ModelProto:
        g = helper.make_graph(self.nodes, self.name, [helper.make_tensor_value_info(i, TensorProto.FLOAT,
                                                                                    self.input_shape)
                                                      for i in self.inputs],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                              self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        return m

    def save(self, outputs: list[str], path: Path, opset: int = 17) -> Path:
        onnx.save(self.model(outputs, opset), str(path))
        return path
