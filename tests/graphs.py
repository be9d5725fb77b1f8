"""Hand-built ONNX graphs for tests, on the golden cases' builder: activations [1, C, H, W] float32, seeded weights."""
from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

from partitioner.golden.graph_builder import OnnxNet


class Net(OnnxNet):
    """The shared builder, with the exporter spellings only tests need."""

    def conv_valid(self, x: str, name: str, k: int = 3) -> str:
        """A conv without padding of its own (exporters put a Pad node before it)."""
        w = self._w(f"{name}.w", (self.c, self.c, k, k), np.sqrt(2.0 / (self.c * k * k)))
        b = self._w(f"{name}.b", (self.c,), 0.1)
        return self.node("Conv", [x, w, b], name, kernel_shape=[k, k], pads=[0] * 4)

    def conv_transpose(self, x: str, name: str, k: int = 2, pad: int = 0) -> str:
        """Stride 2: kernel 2 (the engine's kind) doubles the size; kernel 4, pad 1 does too (a CPU op)."""
        w = self._w(f"{name}.w", (self.c, self.c, k, k), np.sqrt(2.0 / self.c))
        b = self._w(f"{name}.b", (self.c,), 0.1)
        return self.node("ConvTranspose", [x, w, b], name, kernel_shape=[k, k], strides=[2, 2], pads=[pad] * 4)

    def bn(self, x: str, name: str) -> str:
        c = self.c
        ps = [self._w(f"{name}.{p}", (c,), 0.1) for p in ("scale", "bias", "mean")]
        var = f"{name}.var"
        self.inits.append(numpy_helper.from_array(self.rng.uniform(0.5, 1.5, c).astype(np.float32), var))
        return self.node("BatchNormalization", [x] + ps + [var], name, epsilon=1e-5)


def channel_shuffle(n: Net, x: str, name: str, channels: int, groups: int = 2) -> str:
    """ShuffleNet's shuffle as exporters write it: Reshape [N, g, C/g, H, W] -> Transpose -> Reshape back."""
    s = n.s
    five = n.const(f"{name}.shape5", np.array([1, groups, channels // groups, s, s], np.int64))
    four = n.const(f"{name}.shape4", np.array([1, channels, s, s], np.int64))
    y = n.node("Reshape", [x, five], f"{name}.split_groups")
    y = n.node("Transpose", [y], f"{name}.swap", perm=[0, 2, 1, 3, 4])
    return n.node("Reshape", [y, four], name)


def shufflenet_unit(n: Net, x: str, name: str, then_split: bool = False) -> str:
    """ShuffleNetV2's stride-1 unit on n.c channels: split, a 1x1 -> depthwise 3x3 -> 1x1 branch on one half,
    concat, shuffle. `then_split` ends with the next unit's split (ESNet) instead of a depthwise conv."""
    half = n.c // 2
    n.nodes.append(helper.make_node("Split", [x, n.const(f"{name}.halves", np.array([half, half]))],
                                    [f"{name}.a", f"{name}.b"], name=f"{name}.split", axis=1))
    b = n.node("Relu", [n.conv(f"{name}.b", f"{name}.pw1", k=1, cin=half, cout=half)], f"{name}.pw1_relu")
    wd = n._w(f"{name}.dw.w", (half, 1, 3, 3), 0.4)
    b = n.node("Conv", [b, wd], f"{name}.dw", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=half)
    b = n.node("Relu", [n.conv(b, f"{name}.pw2", k=1, cin=half, cout=half)], f"{name}.pw2_relu")
    return channel_shuffle(n, n.node("Concat", [f"{name}.a", b], f"{name}.cat", axis=1), name, n.c)


def gelu_erf(n: Net, x: str, name: str, grouping: str = "torch", scale_by_mul: bool = False) -> str:
    """GELU as exporters spell it before opset 20: torch (x * (1 + erf)) * 0.5, transformers (x * 0.5) * (1 + erf),
    or x * ((1 + erf) * 0.5); x / sqrt 2 or x * (1 / sqrt 2)."""
    if scale_by_mul:
        arg = n.node("Mul", [x, n.const(f"{name}.inv_root2", np.array(0.70710677, np.float32))], f"{name}.div")
    else:
        arg = n.node("Div", [x, n.const(f"{name}.root2", np.array(1.4142135, np.float32))], f"{name}.div")
    erf = n.node("Erf", [arg], f"{name}.erf")
    gate = n.node("Add", [erf, n.const(f"{name}.one", np.array(1.0, np.float32))], f"{name}.plus_one")
    half = n.const(f"{name}.half", np.array(0.5, np.float32))
    if grouping == "torch":
        return n.node("Mul", [n.node("Mul", [x, gate], f"{name}.times_x"), half], name)
    if grouping == "transformers":
        return n.node("Mul", [n.node("Mul", [x, half], f"{name}.half_x"), gate], name)
    return n.node("Mul", [x, n.node("Mul", [gate, half], f"{name}.half_gate")], name)


def gelu_tanh(n: Net, x: str, name: str, cube: str = "pow") -> str:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), x^3 as Pow(x, 3) or x * x * x (GPT-2's exports)."""
    if cube == "pow":
        x3 = n.node("Pow", [x, n.const(f"{name}.three", np.array(3.0, np.float32))], f"{name}.cube")
    else:
        x3 = n.node("Mul", [x, n.node("Mul", [x, x], f"{name}.square")], f"{name}.cube")
    inner = n.node("Add", [x, n.node("Mul", [x3, n.const(f"{name}.c", np.array(0.044715, np.float32))],
                                     f"{name}.scaled_cube")], f"{name}.inner")
    t = n.node("Tanh", [n.node("Mul", [n.const(f"{name}.k", np.array(0.7978846, np.float32)), inner],
                               f"{name}.scaled")], f"{name}.tanh")
    gate = n.node("Add", [n.const(f"{name}.one", np.array(1.0, np.float32)), t], f"{name}.plus_one")
    return n.node("Mul", [n.node("Mul", [n.const(f"{name}.half", np.array(0.5, np.float32)), x], f"{name}.half_x"),
                          gate], name)


def prelu(n: Net, x: str, name: str, slopes) -> str:
    """keras2onnx and torch write the slope [C, 1, 1] (per channel) or [1, 1, 1] (shared)."""
    return n.node("PRelu", [x, n.const(f"{name}.slope", np.asarray(slopes, np.float32))], name)


def float16_model(model):
    """`model` as a float16 export: float16 weights, inputs and outputs (onnxconverter-common's keep_io_types=False)."""
    from onnx import TensorProto
    g = model.graph
    for i, t in enumerate(g.initializer):
        a = numpy_helper.to_array(t)
        if a.dtype == np.float32:
            g.initializer[i].CopyFrom(numpy_helper.from_array(a.astype(np.float16), t.name))
    for vi in list(g.input) + list(g.output):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16
    return model
