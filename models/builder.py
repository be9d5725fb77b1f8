"""A small ONNX graph builder with seeded weights and running parameter/MAC counts.

Weights are drawn so that activations keep a sensible range through deep nets (He scaling, BN statistics
near the real ones), because later the int8 pipeline must see realistic ranges, not 1e-9 or 1e9.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class GraphBuilder:
    def __init__(self, name: str, seed: int):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.params = 0          # trainable parameters: conv/gemm weights and biases, BN scale and shift
        self.conv_macs = 0
        self._count: dict[str, int] = {}

    # ---- naming and plumbing ----------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        i = self._count.get(hint, 0)
        self._count[hint] = i + 1
        return f"{hint}_{i}" if i else hint

    def input(self, name: str, elem: int, shape: tuple[int, ...]) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem, list(shape)))
        self.shapes[name] = tuple(shape)
        return name

    def const(self, hint: str, value: np.ndarray) -> str:
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(np.array(value, order="C"), name))
        return name

    def op(self, op_type: str, inputs: list[str], hint: str | None = None, outputs: int = 1,
           **attrs) -> str | list[str]:
        base = self.fresh(hint or op_type.lower())
        outs = [base if i == 0 else f"{base}_out{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=base, **attrs))
        return outs[0] if outputs == 1 else outs

    # ---- layers -----------------------------------------------------------------------------
    def conv(self, x: str, cout: int, k: int, stride: int = 1, pad: int | None = None, dilation: int = 1,
             group: int = 1, bias: bool = False, hint: str = "conv", gain: float = 2.0,
             bias_init: np.ndarray | None = None) -> str:
        n, cin, h, w = self.shapes[x]
        pad = (k // 2) * dilation if pad is None else pad
        std = np.sqrt(gain / (cin // group * k * k))
        wgt = (self.rng.standard_normal((cout, cin // group, k, k), dtype=np.float32) * std).astype(np.float32)
        inputs = [x, self.const(f"{hint}.weight", wgt)]
        if bias:
            b = self.rng.standard_normal(cout) * 0.1 + (0 if bias_init is None else bias_init)
            inputs.append(self.const(f"{hint}.bias", b.astype(np.float32)))
        y = self.op("Conv", inputs, hint, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4,
                    dilations=[dilation, dilation], group=group)
        ho = (h + 2 * pad - dilation * (k - 1) - 1) // stride + 1
        wo = (w + 2 * pad - dilation * (k - 1) - 1) // stride + 1
        self.shapes[y] = (n, cout, ho, wo)
        self.params += wgt.size + (cout if bias else 0)
        self.conv_macs += n * cout * ho * wo * (cin // group) * k * k
        return y

    def batchnorm(self, x: str, gamma_scale: float = 1.0, hint: str = "bn") -> str:
        c = self.shapes[x][1]
        r = self.rng
        gamma = (r.uniform(0.8, 1.2, c) * gamma_scale).astype(np.float32)
        beta = (r.standard_normal(c) * 0.1).astype(np.float32)
        mean = (r.standard_normal(c) * 0.1).astype(np.float32)
        var = r.uniform(0.8, 1.6, c).astype(np.float32)
        y = self.op("BatchNormalization", [x, self.const(f"{hint}.gamma", gamma), self.const(f"{hint}.beta", beta),
                                           self.const(f"{hint}.mean", mean), self.const(f"{hint}.var", var)],
                    hint, epsilon=1e-5)
        self.shapes[y] = self.shapes[x]
        self.params += 2 * c
        return y

    def activation(self, x: str, kind: str) -> str:
        if kind == "leaky":
            y = self.op("LeakyRelu", [x], "leaky", alpha=0.1)
        elif kind == "relu":
            y = self.op("Relu", [x], "relu")
        elif kind == "relu6":
            y = self.op("Clip", [x, self.const("zero", np.float32(0)), self.const("six", np.float32(6))], "relu6")
        elif kind == "silu":
            y = self.op("Mul", [x, self.op("Sigmoid", [x], "sigmoid")], "silu")
        elif kind == "hardswish":
            y = self.op("Mul", [x, self.op("HardSigmoid", [x], "hsig", alpha=1 / 6, beta=0.5)], "hswish")
        elif kind == "none":
            return x
        else:
            raise ValueError(kind)
        self.shapes[y] = self.shapes[x]
        return y

    def conv_bn_act(self, x: str, cout: int, k: int, stride: int = 1, act: str = "leaky", group: int = 1,
                    gamma_scale: float = 1.0, hint: str = "conv") -> str:
        y = self.conv(x, cout, k, stride, group=group, hint=hint)
        return self.activation(self.batchnorm(y, gamma_scale, hint=f"{hint}.bn"), act)

    def maxpool(self, x: str, k: int, stride: int, pads: tuple[int, int, int, int] = (0, 0, 0, 0),
                ceil: bool = False) -> str:
        n, c, h, w = self.shapes[x]
        y = self.op("MaxPool", [x], "pool", kernel_shape=[k, k], strides=[stride, stride], pads=list(pads),
                    ceil_mode=int(ceil))
        rnd = np.ceil if ceil else np.floor
        ho = int(rnd((h + pads[0] + pads[2] - k) / stride)) + 1
        wo = int(rnd((w + pads[1] + pads[3] - k) / stride)) + 1
        self.shapes[y] = (n, c, ho, wo)
        return y

    def add(self, a: str, b: str) -> str:
        y = self.op("Add", [a, b], "add")
        self.shapes[y] = self.shapes[a]
        return y

    def concat(self, xs: list[str], axis: int = 1) -> str:
        y = self.op("Concat", xs, "concat", axis=axis)
        s = list(self.shapes[xs[0]])
        s[axis] = sum(self.shapes[x][axis] for x in xs)
        self.shapes[y] = tuple(s)
        return y

    def upsample2(self, x: str) -> str:
        scales = self.const("up.scales", np.array([1, 1, 2, 2], np.float32))
        y = self.op("Resize", [x, "", scales], "upsample", mode="nearest",
                    coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        n, c, h, w = self.shapes[x]
        self.shapes[y] = (n, c, 2 * h, 2 * w)
        return y

    def gemm(self, x: str, cout: int, hint: str = "fc") -> str:
        n, k = self.shapes[x]
        wgt = (self.rng.standard_normal((cout, k), dtype=np.float32) * np.sqrt(2.0 / k)).astype(np.float32)
        b = (self.rng.standard_normal(cout) * 0.1).astype(np.float32)
        y = self.op("Gemm", [x, self.const(f"{hint}.weight", wgt), self.const(f"{hint}.bias", b)], hint, transB=1)
        self.shapes[y] = (n, cout)
        self.params += wgt.size + cout
        return y

    # ---- shared pre-processing --------------------------------------------------------------
    def image_input(self, batch: int, size: int, mean: tuple[float, ...] | None = None,
                    std: tuple[float, ...] | None = None) -> str:
        """uint8 NHWC frames in, normalised float NCHW out: what a camera pipeline hands over."""
        x = self.input("images", TensorProto.UINT8, (batch, size, size, 3))
        x = self.op("Cast", [x], "to_float", to=TensorProto.FLOAT)
        x = self.op("Transpose", [x], "nhwc_to_nchw", perm=[0, 3, 1, 2])
        if mean is None:
            x = self.op("Mul", [x, self.const("inv255", np.float32(1 / 255))], "normalise")
        else:
            m = np.array(mean, np.float32).reshape(1, 3, 1, 1)
            s = np.array(std, np.float32).reshape(1, 3, 1, 1)
            x = self.op("Div", [self.op("Sub", [x, self.const("mean", m)], "sub_mean"), self.const("std", s)],
                        "normalise")
        self.shapes[x] = (batch, 3, size, size)
        return x

    def build(self, outputs: list[str], doc: str = "") -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, self.name, self.inputs,
                                  [helper.make_empty_tensor_value_info(o) for o in outputs],
                                  self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="fpga-partitioner-models", doc_string=doc)
        model.ir_version = 8
        typed = self._output_types(model)
        del model.graph.output[:]
        model.graph.output.extend(typed[o] for o in outputs)
        return model

    def calibrate(self, model: onnx.ModelProto, convs: dict[str, float]) -> None:
        """Rescale the weights of the named conv outputs so that on a seeded random frame their standard
        deviation (around the bias) is the given value: heads then give a realistic number of detections."""
        import onnxruntime as ort

        probe = onnx.ModelProto()
        probe.CopyFrom(model)
        probe.graph.output.extend(helper.make_empty_tensor_value_info(name) for name in convs)
        del probe.graph.output[:-len(convs)]
        sess = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
        first = self.inputs[0]
        shape = [d.dim_value for d in first.type.tensor_type.shape.dim]
        rng = np.random.default_rng(1234)
        feed = (rng.integers(0, 256, shape, dtype=np.uint8) if first.type.tensor_type.elem_type == TensorProto.UINT8
                else rng.standard_normal(shape).astype(np.float32))
        values = dict(zip(convs, sess.run(list(convs), {first.name: feed})))
        inits = {t.name: t for t in model.graph.initializer}
        producers = {n.output[0]: n for n in model.graph.node}
        for name, target in convs.items():
            node = producers[name]
            w = inits[node.input[1]]
            b = numpy_helper.to_array(inits[node.input[2]]) if len(node.input) > 2 else 0
            spread = float(np.std(values[name] - np.reshape(b, (1, -1, 1, 1))))
            scaled = numpy_helper.to_array(w) * np.float32(target / max(spread, 1e-12))
            w.CopyFrom(numpy_helper.from_array(scaled.astype(np.float32), w.name))

    def _output_types(self, model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
        """Output types from shape inference on a weightless copy (fast even for YOLOv3's 248 MB)."""
        light = onnx.ModelProto()
        light.CopyFrom(model)
        del light.graph.initializer[:]
        for t in model.graph.initializer:
            if int(np.prod(t.dims)) > 64:
                light.graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
            else:
                light.graph.initializer.append(t)
        inferred = onnx.shape_inference.infer_shapes(light, strict_mode=True, data_prop=True)
        return {v.name: v for v in inferred.graph.value_info}
