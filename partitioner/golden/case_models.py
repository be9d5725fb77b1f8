"""The golden cases' models: one tiny ONNX model per engine feature, built node by node with seeded weights
(`CASES`; `WINOGRAD_CASES`, compiled with `--winograd all`). cases.py compiles them and writes their files."""
from __future__ import annotations

from typing import Callable

import numpy as np
import onnx
from onnx import helper, numpy_helper

from partitioner.golden.graph_builder import OnnxNet


def _Case(name: str, channels: int = 8, size: int = 8, seed: int = 0, rank: int = 4) -> OnnxNet:
    return OnnxNet(channels, size, seed, name=name, rank=rank, bias_scale=0.2)


def _act(kind: str) -> Callable[[OnnxNet, str, str], str]:
    def build(c: OnnxNet, x: str, name: str) -> str:
        if kind == "relu":
            return c.op("Relu", [x], name)
        if kind == "relu6":
            return c.op("Clip", [x, c.const(f"{name}.lo", 0.0), c.const(f"{name}.hi", 6.0)], name)
        if kind == "clip":
            return c.op("Clip", [x, c.const(f"{name}.lo", -0.5), c.const(f"{name}.hi", 0.75)], name)
        if kind == "leaky":
            return c.op("LeakyRelu", [x], name, alpha=0.1)
        if kind == "sigmoid":
            return c.op("Sigmoid", [x], name)
        if kind == "silu":
            return c.op("Mul", [x, c.op("Sigmoid", [x], f"{name}.sig")], name)
        if kind == "mish":
            return c.op("Mul", [x, c.op("Tanh", [c.op("Softplus", [x], f"{name}.softplus")], f"{name}.tanh")], name)
        if kind == "gelu":         # torch's erf form before opset 20
            erf = c.op("Erf", [c.op("Div", [x, c.const(f"{name}.root2", 1.4142135)], f"{name}.div")], f"{name}.erf")
            gate = c.op("Add", [erf, c.const(f"{name}.one", 1.0)], f"{name}.plus_one")
            return c.op("Mul", [c.op("Mul", [x, gate], f"{name}.times_x"), c.const(f"{name}.half", 0.5)], name)
        if kind in ("tanh", "softplus"):
            return c.op(kind.capitalize(), [x], name)
        if kind == "elu":
            return c.op("Elu", [x], name, alpha=0.8)
        if kind == "prelu":        # a slope per channel: the requantiser's negative-side multipliers (PRELU)
            slopes = np.linspace(-0.25, 0.75, 8, dtype=np.float32).reshape(8, 1, 1)
            return c.op("PRelu", [x, c.const(f"{name}.slope", slopes)], name)
        return c.op("HardSwish", [x], name)
    return build


def _resize(c: OnnxNet, x: str, name: str) -> str:
    return c.op("Resize", [x, "", c.const(f"{name}.scales", [1, 1, 2, 2])], name, mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")


def _conv_case(name: str, **kw) -> Callable[[], onnx.ModelProto]:
    def build() -> onnx.ModelProto:
        c = _Case(name, channels=kw.pop("cin", 8), size=kw.pop("size", 8))
        return c.model([c.conv("x", "conv", cin=c.c, cout=kw.pop("cout", 8), **kw)])
    return build


def _act_case(kind: str) -> Callable[[], onnx.ModelProto]:
    def build() -> onnx.ModelProto:
        c = _Case(f"act_{kind}")
        y = _act(kind)(c, c.conv("x", "conv", cin=8, cout=8), "act")
        # a sigmoid that only reaches the output stays in float on the CPU (a head's probabilities): read it
        return c.model([c.conv(y, "tail", cin=8, cout=8, k=1) if kind == "sigmoid" else y])
    return build


def _residual(after: bool) -> onnx.ModelProto:
    c = _Case("residual_relu" if after else "residual")
    a = c.op("Relu", [c.conv("x", "a", cin=8, cout=8)], "a_relu")
    s = c.op("Add", [c.op("LeakyRelu", [c.conv(a, "b", cin=8, cout=8)], "b_leaky", alpha=0.1), a], "sum")
    return c.model([c.op("Relu", [s], "out") if after else s])


def _residual_wide() -> onnx.ModelProto:
    """Rows wide enough (64 rows of 112) that the window path's residual operands fill their queue and hold
    the stream."""
    c = _Case("residual_wide", channels=8)
    c.input_shape = [1, 8, 64, 112]
    a = c.op("Relu", [c.conv("x", "a", cin=8, cout=16, k=1)], "a_relu")
    b = c.op("LeakyRelu", [c.conv(a, "b", cin=16, cout=16)], "b_leaky", alpha=0.1)
    return c.model([c.op("Add", [b, a], "sum")])


def _conv_pool(name: str, k: int, s: int, pads: list[int], ceil: int = 0, size: int = 8) -> Callable:
    def build() -> onnx.ModelProto:
        c = _Case(name, size=size)
        y = c.op("Relu", [c.conv("x", "conv", cin=8, cout=8)], "relu")
        return c.model([c.op("MaxPool", [y], "pool", kernel_shape=[k, k], strides=[s, s], pads=pads, ceil_mode=ceil)])
    return build


def _conv_zero_pad_pool() -> onnx.ModelProto:
    """ultralytics' YOLOv3-tiny: a LeakyReLU conv, ZeroPad2d((0, 1, 0, 1)), MaxPool 2x2 stride 1: the zeros can
    win over negative values, so they are the pool's padding (POOL_PAD_ZERO), not -128."""
    c = _Case("conv_zero_pad_pool", size=7)
    y = c.op("LeakyRelu", [c.conv("x", "conv", cin=8, cout=8)], "leaky", alpha=0.1)
    pads = numpy_helper.from_array(np.array([0, 0, 0, 0, 0, 0, 1, 1], np.int64), "pads")
    c.inits.append(pads)
    y = c.op("MaxPool", [c.op("Pad", [y, "pads"], "zero_pad")], "pool", kernel_shape=[2, 2], strides=[1, 1])
    return c.model([y])


def _standalone_pool_and_add() -> onnx.ModelProto:
    c = _Case("standalone_pool_add")
    a = c.conv("x", "a", cin=8, cout=8)
    b = c.conv("x", "b", cin=8, cout=8)
    s = c.op("Add", [a, b], "sum")
    p = c.op("MaxPool", [s], "pool", kernel_shape=[2, 2], strides=[2, 2])
    return c.model([c.conv(p, "tail", cin=8, cout=8), a, b])     # a and b are read twice: the add stays a layer


def _upsample_read_mode() -> onnx.ModelProto:
    c = _Case("upsample_read_mode", size=4)
    return c.model([c.conv(_resize(c, c.conv("x", "a", cin=8, cout=8), "up"), "b", cin=8, cout=8)])


def _upsample_concat(odd: bool) -> onnx.ModelProto:
    c = _Case("concat_odd_channels" if odd else "upsample_concat", size=4)
    small = c.conv("x", "a", cin=8, cout=3 if odd else 8, k=1)
    up = _resize(c, small, "up")
    big = c.conv(_resize(c, "x", "up_x"), "b", cin=8, cout=5 if odd else 8)
    cat = c.op("Concat", [up, big], "cat", axis=1)
    return c.model([c.conv(cat, "tail", cin=8 if odd else 16, cout=6)])


def _concat_duplicate() -> onnx.ModelProto:
    c = _Case("concat_duplicate")
    a = c.conv("x", "a", cin=8, cout=8, k=1)
    cat = c.op("Concat", [a, c.conv("x", "b", cin=8, cout=8), a], "cat", axis=1)
    return c.model([c.conv(cat, "tail", cin=24, cout=8)])


def _squeeze_excite(gate: str) -> Callable[[], onnx.ModelProto]:
    """MobileNetV3's SE block: GlobalAveragePool -> 1x1 conv -> ReLU -> 1x1 conv -> gate -> channel-wise Mul."""
    def build() -> onnx.ModelProto:
        c = _Case(f"squeeze_excite_{gate}", channels=16)
        x = c.op("Relu", [c.conv("x", "conv", cin=16, cout=16)], "relu")
        squeeze = c.op("GlobalAveragePool", [x], "gap")
        hidden = c.op("Relu", [c.conv(squeeze, "fc1", cin=16, cout=8, k=1)], "fc1_relu")
        fc2 = c.conv(hidden, "fc2", cin=8, cout=16, k=1)
        g = c.op("HardSigmoid", [fc2], "gate", alpha=1 / 6, beta=0.5) if gate == "hardsigmoid" else \
            c.op("Sigmoid", [fc2], "gate")
        return c.model([c.conv(c.op("Mul", [x, g], "excite"), "tail", cin=16, cout=8)])
    return build


def _conv_transpose() -> onnx.ModelProto:
    """A 2x2 stride-2 transposed conv (four interleaved phase layers) with an odd channel count, written into
    a concat slot beside a conv of the upsampled input."""
    c = _Case("conv_transpose", size=6)
    a = c.op("Relu", [c.conv("x", "a", cin=8, cout=8)], "a_relu")
    w = c.rng.standard_normal((8, 5, 2, 2)) * 0.4
    t = c.op("ConvTranspose", [a, c.const("up.w", w), c.const("up.b", c.rng.standard_normal(5) * 0.2)], "up",
             kernel_shape=[2, 2], strides=[2, 2])
    t = c.op("LeakyRelu", [t], "up_leaky", alpha=0.1)
    big = c.conv(_resize(c, "x", "up_x"), "b", cin=8, cout=8)
    cat = c.op("Concat", [t, big], "cat", axis=1)
    return c.model([c.conv(cat, "tail", cin=13, cout=6)])


def _l2_norm() -> onnx.ModelProto:
    """SSD's L2Norm as torchvision exports it (ReduceL2, Clip(min=eps), Expand, Div, then a per-channel gamma)
    between a ReLU conv of 20 channels (padding channels in the sum) and the convs that read it."""
    c = _Case("l2_norm", channels=8, size=6)
    x = c.op("Relu", [c.conv("x", "conv", cin=8, cout=20)], "relu")
    norm = c.op("ReduceL2", [x], "norm", axes=[1], keepdims=1)
    norm = c.op("Clip", [norm, c.const("eps", 1e-12)], "norm_eps")
    norm = c.op("Expand", [norm, c.inits.append(numpy_helper.from_array(np.array([1, 20, 6, 6], np.int64), "shape"))
                           or "shape"], "norm_expand")
    y = c.op("Div", [x, norm], "l2")
    y = c.op("Mul", [c.const("gamma", c.rng.uniform(10, 30, (1, 20, 1, 1))), y], "l2_scaled")
    return c.model([c.conv(y, "loc", cin=20, cout=8), c.conv(y, "conf", cin=20, cout=6, k=1)])


def _channel_shuffle() -> onnx.ModelProto:
    """ESNet's unit twice: split, a 1x1 -> depthwise -> 1x1 branch on one half, concat, shuffle (Reshape ->
    Transpose -> Reshape). The second unit splits a shuffled tensor (a permutation conv, cut per half); a
    depthwise conv and a 1x1 read the last shuffle (folded into their weights)."""
    c = _Case("channel_shuffle", channels=8, size=6)

    def ints(name: str, value: list[int]) -> str:
        c.inits.append(numpy_helper.from_array(np.array(value, np.int64), name))
        return name

    x = c.op("Relu", [c.conv("x", "stem", cin=8, cout=8)], "stem_relu")
    for u in ("u1", "u2"):
        c.nodes.append(helper.make_node("Split", [x, ints(f"{u}.halves", [4, 4])], [f"{u}.a", f"{u}.b"],
                                        name=f"{u}.split", axis=1))
        b = c.op("Relu", [c.conv(f"{u}.b", f"{u}.pw1", cin=4, cout=4, k=1)], f"{u}.pw1_relu")
        b = c.conv(b, f"{u}.dw", cin=4, cout=4, group=4)
        b = c.op("Relu", [c.conv(b, f"{u}.pw2", cin=4, cout=4, k=1)], f"{u}.pw2_relu")
        y = c.op("Concat", [f"{u}.a", b], f"{u}.cat", axis=1)
        y = c.op("Reshape", [y, ints(f"{u}.groups", [1, 2, 4, 6, 6])], f"{u}.to_groups")
        y = c.op("Transpose", [y], f"{u}.swap", perm=[0, 2, 1, 3, 4])
        x = c.op("Reshape", [y, ints(f"{u}.back", [1, 8, 6, 6])], f"{u}.shuffled")
    x = c.op("Relu", [c.conv(x, "dw", cin=8, cout=8, group=8)], "dw_relu")
    return c.model([c.conv(x, "head", cin=8, cout=6, k=1)])


def _global_avgpool() -> onnx.ModelProto:
    c = _Case("global_avgpool", channels=8, size=7)
    x = c.op("Relu", [c.conv("x", "conv", cin=8, cout=24)], "relu")
    return c.model([c.conv(c.op("GlobalAveragePool", [x], "gap"), "fc", cin=24, cout=10, k=1)])


def _dense() -> onnx.ModelProto:
    c = _Case("dense", channels=40, rank=2)
    w = c.rng.standard_normal((24, 40)) * 0.2
    y = c.op("Gemm", ["x", c.const("fc.w", w), c.const("fc.b", c.rng.standard_normal(24) * 0.1)], "fc", transB=1)
    return c.model([c.op("Relu", [y], "relu")])


def _dense_prelu() -> onnx.ModelProto:
    """A face cascade's tail (MTCNN's ONet as keras2onnx writes it): a conv map flattened in NHWC order into a dense
    layer (one conv with the 3x3 map as its kernel and a [N, out] result) with a PRelu per feature (PRELU) and a
    dense head."""
    c = _Case("dense_prelu", channels=8, size=3)
    y = c.op("Transpose", [c.conv("x", "conv", cin=8, cout=16)], "permute", perm=[0, 2, 3, 1])
    y = c.op("Reshape", [y, c.const("flatten.shape", np.array([1, -1], np.int64))], "flatten")
    y = c.op("Gemm", [y, c.const("fc1.w", c.rng.standard_normal((32, 144)) * 0.1),
                      c.const("fc1.b", c.rng.standard_normal(32) * 0.1)], "fc1", transB=1)
    y = c.op("PRelu", [y, c.const("fc1.slope", np.linspace(-0.2, 0.6, 32, dtype=np.float32))], "fc1_prelu")
    return c.model([c.op("Gemm", [y, c.const("fc2.w", c.rng.standard_normal((16, 32)) * 0.2)], "fc2", transB=1)])


def _prelu_after_add() -> onnx.ModelProto:
    """A per-channel PRelu no conv can take (after a residual add): two channelwise layers, x + (1 - a) relu(-x),
    the second with a fused residual add."""
    c = _Case("prelu_after_add")
    s = c.op("Add", [c.conv("x", "a", cin=8, cout=8), c.conv("x", "b", cin=8, cout=8)], "sum")
    y = c.op("PRelu", [s, c.const("slope", np.linspace(-0.3, 1.4, 8, dtype=np.float32).reshape(8, 1, 1))], "prelu")
    return c.model([c.conv(y, "tail", cin=8, cout=8, k=1)])


def _zero_point_padding() -> onnx.ModelProto:
    """Asymmetric tensors (a ReLU's, a HardSwish's) read with padding by a standard, a depthwise and a strided
    conv and a max pool: the taps outside the image are the reader's zero point (`in_zero`), not 0."""
    c = _Case("zero_point_padding", size=10)
    a = c.op("Relu", [c.conv("x", "a", cin=8, cout=16)], "a_relu")
    b = c.op("HardSwish", [c.conv(a, "b", cin=16, cout=16)], "b_hswish")
    d = c.op("Relu", [c.conv(b, "dw", cin=16, cout=16, group=16)], "dw_relu")
    p = c.op("MaxPool", [d], "pool", kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    return c.model([c.conv(p, "out", cin=16, cout=8, stride=2)])


def _grouped_conv() -> onnx.ModelProto:
    """ResNeXt's middle: 1x1 conv -> grouped 3x3 conv (8 groups of 4 channels) -> 1x1. The grouped conv runs as two
    pieces of 4 groups (16 channels), each reading the slice a piece of the 1x1 conv writes and writing its
    channels of the concat."""
    c = _Case("grouped_conv", channels=32, size=6)
    x = c.op("Relu", [c.conv("x", "reduce", cin=32, cout=32, k=1)], "reduce_relu")
    x = c.op("Relu", [c.conv(x, "grouped", cin=32, cout=32, group=8)], "grouped_relu")
    return c.model([c.conv(x, "expand", cin=32, cout=8, k=1)])


def _pools_and_norms_as_depthwise() -> onnx.ModelProto:
    """Ops that become depthwise convs: a BatchNormalization after a concat (with a LeakyReLU), an average pool
    2x2 stride 2 (DenseNet's transition) and one 3x3 stride 1 with padding counted (Inception's branch)."""
    c = _Case("pools_and_norms_as_depthwise", channels=8, size=8)
    cat = c.op("Concat", [c.conv("x", "a", cin=8, cout=8), c.conv("x", "b", cin=8, cout=8)], "cat", axis=1)
    params = [c.const(f"bn.{p}", v) for p, v in (("scale", c.rng.uniform(0.5, 2.0, 16)),
                                                  ("bias", c.rng.standard_normal(16) * 0.3),
                                                  ("mean", c.rng.standard_normal(16) * 0.2),
                                                  ("var", c.rng.uniform(0.5, 1.5, 16)))]
    y = c.op("LeakyRelu", [c.op("BatchNormalization", [cat] + params, "bn")], "bn_leaky", alpha=0.1)
    y = c.op("AveragePool", [y], "avg2", kernel_shape=[2, 2], strides=[2, 2])
    y = c.op("AveragePool", [c.conv(y, "mid", cin=16, cout=16, k=1)], "avg3", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
             count_include_pad=1)
    return c.model([c.conv(y, "out", cin=16, cout=8, k=1)])


CASES: dict[str, Callable[[], onnx.ModelProto]] = {
    "conv1x1": _conv_case("conv1x1", k=1),
    "conv1x1_tiles": _conv_case("conv1x1_tiles", k=1, cin=40, cout=72, size=6),
    "conv3x3": _conv_case("conv3x3"),
    "conv5x5": _conv_case("conv5x5", k=5),
    "conv7x7_s2": _conv_case("conv7x7_s2", k=7, stride=2, size=12),
    "conv3x3_s2": _conv_case("conv3x3_s2", stride=2),
    "conv3x3_asym_pad": _conv_case("conv3x3_asym_pad", pads=[0, 1, 1, 0], stride=2),
    "conv3x3_no_pad": _conv_case("conv3x3_no_pad", pads=[0, 0, 0, 0]),
    "conv3x3_dilated": _conv_case("conv3x3_dilated", dil=2, size=10),
    "conv_odd_channels": _conv_case("conv_odd_channels", cin=3, cout=5),
    "conv_wide": _conv_case("conv_wide", cin=40, cout=33, size=4),
    "depthwise3x3": _conv_case("depthwise3x3", group=8),
    "depthwise3x3_s2": _conv_case("depthwise3x3_s2", group=8, stride=2),
    "dense": _dense,
    "dense_prelu": _dense_prelu,
    "prelu_after_add": _prelu_after_add,
    **{f"act_{k}": _act_case(k) for k in ("relu", "relu6", "clip", "leaky", "sigmoid", "silu", "hardswish",
                                           "mish", "gelu", "tanh", "softplus", "elu", "prelu")},
    "residual": lambda: _residual(False),
    "residual_relu": lambda: _residual(True),
    "residual_wide": _residual_wide,
    "conv_maxpool2": _conv_pool("conv_maxpool2", 2, 2, [0, 0, 0, 0]),
    "conv_maxpool3_s1": _conv_pool("conv_maxpool3_s1", 3, 1, [1, 1, 1, 1]),
    "conv_maxpool_ceil": _conv_pool("conv_maxpool_ceil", 2, 2, [0, 0, 0, 0], ceil=1, size=7),
    # floor mode on an odd map: no pooled row reads the conv's last row or column
    "conv_maxpool_floor_odd": _conv_pool("conv_maxpool_floor_odd", 2, 2, [0, 0, 0, 0], size=9),
    "conv_maxpool_asym": _conv_pool("conv_maxpool_asym", 2, 1, [0, 0, 1, 1]),
    "standalone_pool_add": _standalone_pool_and_add,
    "conv_zero_pad_pool": _conv_zero_pad_pool,
    "upsample_read_mode": _upsample_read_mode,
    "upsample_concat": lambda: _upsample_concat(False),
    "concat_odd_channels": lambda: _upsample_concat(True),
    "concat_duplicate": _concat_duplicate,
    "global_avgpool": _global_avgpool,
    "conv_transpose": _conv_transpose,
    "l2_norm": _l2_norm,
    "channel_shuffle": _channel_shuffle,
    "squeeze_excite_hardsigmoid": _squeeze_excite("hardsigmoid"),
    "squeeze_excite_sigmoid": _squeeze_excite("sigmoid"),
    "zero_point_padding": _zero_point_padding,
    "grouped_conv": _grouped_conv,
    "pools_and_norms_as_depthwise": _pools_and_norms_as_depthwise,
}


def _winograd_residual_pool() -> onnx.ModelProto:
    """A Winograd conv with a fused ReLU, residual add and 2x2 max pool on an odd map: the epilogue and the
    pool's ring take a row of tiles' two output rows in order, the last tile's second row and column unwritten."""
    c = _Case("winograd_residual_pool", size=9)
    a = c.op("Relu", [c.conv("x", "a", cin=8, cout=16, k=1)], "a_relu")
    s = c.op("Add", [c.op("Relu", [c.conv(a, "b", cin=16, cout=16)], "b_relu"), a], "sum")
    return c.model([c.op("MaxPool", [s], "pool", kernel_shape=[2, 2], strides=[2, 2])])


def _winograd_residual() -> onnx.ModelProto:
    """YOLOv3's residual block on an odd map: a 1x1 conv, then a Winograd conv with a fused LeakyRelu and the
    residual add, twice. The RTL reads the residual in the order the tiles leave (pairs of rows, even columns then
    odd), skipping the positions past the map's right and bottom edges; the second block's input is the first's
    sum, so the residual is also read at a channel offset of a wider tensor's write."""
    c = _Case("winograd_residual", size=11)
    x = c.op("LeakyRelu", [c.conv("x", "stem", cin=8, cout=16, k=1)], "stem_leaky", alpha=0.1)
    for i in range(2):
        a = c.op("LeakyRelu", [c.conv(x, f"reduce{i}", cin=16, cout=8, k=1)], f"reduce{i}_leaky", alpha=0.1)
        b = c.op("LeakyRelu", [c.conv(a, f"expand{i}", cin=8, cout=16)], f"expand{i}_leaky", alpha=0.1)
        x = c.op("Add", [b, x], f"sum{i}")
    return c.model([x])


def _winograd_pool() -> onnx.ModelProto:
    """YOLOv3-tiny's conv and max pool: a Winograd conv with a fused LeakyRelu and 2x2 stride-2 max pool on an even
    map, then one with a 3x3 stride-1 padded pool on an odd map (11 wide: a last group of tiles three columns wide
    on 2-, 4- and 8-pixel engines, whose rows end at their second-last column: the RTL's pool ring takes a pair
    of rows interleaved, as the tiles leave)."""
    c = _Case("winograd_pool", size=22)
    a = c.op("LeakyRelu", [c.conv("x", "a", cin=8, cout=16)], "a_leaky", alpha=0.1)
    a = c.op("MaxPool", [a], "pool_a", kernel_shape=[2, 2], strides=[2, 2])
    b = c.op("LeakyRelu", [c.conv(a, "b", cin=16, cout=16)], "b_leaky", alpha=0.1)
    return c.model([c.op("MaxPool", [b], "pool_b", kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])])


def _winograd_zero_point() -> onnx.ModelProto:
    """Winograd convs reading an asymmetric tensor (a ReLU's), with 'same', no and one-sided padding: the taps
    outside the image are the zero point, folded into the bias through the weights' gain at position (1, 1)."""
    c = _Case("winograd_zero_point", size=10)
    a = c.op("Relu", [c.conv("x", "a", cin=8, cout=16, k=1)], "a_relu")
    b = c.op("Relu", [c.conv(a, "same", cin=16, cout=16)], "same_relu")
    b = c.op("LeakyRelu", [c.conv(b, "valid", cin=16, cout=16, pads=[0, 0, 0, 0])], "valid_leaky", alpha=0.1)
    return c.model([c.conv(b, "onesided", cin=16, cout=8, pads=[0, 1, 1, 0])])


# Cases compiled with `--winograd all` (make_case), their files kept apart in tests/golden/winograd/: the engine
# they are compiled for has no window path, so the RTL replays them compiled again for one that has
# (tests/test_winograd.py); the reference and csim replay the files.
WINOGRAD_CASES: dict[str, Callable[[], onnx.ModelProto]] = {
    "winograd3x3": _conv_case("winograd3x3"),
    "winograd_odd_wide": _conv_case("winograd_odd_wide", cin=40, cout=33, size=7),
    "winograd_residual": _winograd_residual,
    "winograd_residual_pool": _winograd_residual_pool,
    "winograd_pool": _winograd_pool,
    "winograd_zero_point": _winograd_zero_point,
}
