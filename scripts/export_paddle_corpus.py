"""Export PaddleDetection-style PicoDet detectors with Paddle and paddle2onnx, into the same corpus as
export_corpus.py: the op spellings of Paddle's exporter (HardSigmoid * x for HardSwish, BatchNormalization left
unfolded, Identity casts, channel shuffles as Reshape/Transpose/Reshape, DFL as Softmax and MatMul).

Two backbones, as PicoDet ships them: LCNet (PicoDet v2, depthwise-separable blocks with SE) and ESNet
(PicoDet v1, ShuffleNet-style split / shuffle units with SE). Neck: a CSP-PAN with depthwise convs and nearest
upsampling; head: GFL-style class maps (sigmoid) and distribution-focal box regression decoded to boxes over
4 strides. Weights are seeded, then given trained statistics: BatchNorm statistics measured on image-like
frames, spread gammas and betas, class-prior head biases.

    python scripts/export_paddle_corpus.py OUT_DIR [--only NAME ...]     (bash scripts/export_paddle_corpus.sh)
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from corpus_frames import export_all, frames_nchw
from paddle import nn

SIZE = 416
STRIDES = (8, 16, 32, 64)


class ConvBN(nn.Layer):
    def __init__(self, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: str | None = "hardswish"):
        super().__init__()
        self.conv = nn.Conv2D(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias_attr=False)
        self.bn = nn.BatchNorm2D(cout)
        self.act = act

    def forward(self, x):
        x = self.bn(self.conv(x))
        return F.hardswish(x) if self.act == "hardswish" else x


class SE(nn.Layer):
    def __init__(self, c: int):
        super().__init__()
        self.reduce, self.expand = nn.Conv2D(c, c // 4, 1), nn.Conv2D(c // 4, c, 1)

    def forward(self, x):
        gate = F.hardsigmoid(self.expand(F.relu(self.reduce(F.adaptive_avg_pool2d(x, 1)))), slope=0.2, offset=0.5)
        return x * gate


class DepthwiseSeparable(nn.Layer):
    """PP-LCNet's block: depthwise k x k, optional SE, pointwise."""

    def __init__(self, cin: int, cout: int, k: int, stride: int, se: bool):
        super().__init__()
        self.dw = ConvBN(cin, cin, k, stride, groups=cin)
        self.se = SE(cin) if se else None
        self.pw = ConvBN(cin, cout, 1)

    def forward(self, x):
        x = self.dw(x)
        return self.pw(self.se(x) if self.se is not None else x)


LCNET = [(3, 16, 32, 1, False), (3, 32, 64, 2, False), (3, 64, 64, 1, False), (3, 64, 128, 2, False),
         (3, 128, 128, 1, False), (3, 128, 256, 2, False), (5, 256, 256, 1, False), (5, 256, 256, 1, False),
         (5, 256, 256, 1, False), (5, 256, 512, 2, True), (5, 512, 512, 1, True)]


class LCNet(nn.Layer):
    channels = (128, 256, 512)

    def __init__(self):
        super().__init__()
        self.stem = ConvBN(3, 16, 3, 2)
        self.blocks = nn.LayerList([DepthwiseSeparable(cin, cout, k, s, se) for k, cin, cout, s, se in LCNET])

    def forward(self, x):
        x, outs = self.stem(x), []
        for i, block in enumerate(self.blocks):
            x = block(x)
            if i in (4, 8, 10):
                outs.append(x)
        return outs


def channel_shuffle(x, groups: int = 2):
    n, c, h, w = x.shape
    x = paddle.reshape(x, [n, groups, c // groups, h, w]).transpose([0, 2, 1, 3, 4])
    return paddle.reshape(x, [n, c, h, w])


class ESUnit(nn.Layer):
    """ESNet's unit: stride 1 splits the channels, runs one half, concatenates and shuffles; stride 2 runs two
    branches on the whole input, concatenates, shuffles and mixes with a depthwise and a pointwise conv."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.stride, mid = stride, cout // 2
        if stride == 1:
            self.pw1, self.dw = ConvBN(mid, mid, 1), ConvBN(mid, mid, 3, groups=mid, act=None)
            self.se, self.pw2 = SE(mid), ConvBN(mid, mid, 1)
        else:
            self.left_dw, self.left_pw = ConvBN(cin, cin, 3, 2, groups=cin, act=None), ConvBN(cin, mid, 1)
            self.pw1, self.dw = ConvBN(cin, mid, 1), ConvBN(mid, mid, 3, 2, groups=mid, act=None)
            self.se, self.pw2 = SE(mid), ConvBN(mid, mid, 1)
            self.mix_dw, self.mix_pw = ConvBN(cout, cout, 3, groups=cout), ConvBN(cout, cout, 1)

    def forward(self, x):
        if self.stride == 1:
            keep, x = paddle.split(x, 2, axis=1)
            return channel_shuffle(paddle.concat([keep, self.pw2(self.se(self.dw(self.pw1(x))))], 1))
        left = self.left_pw(self.left_dw(x))
        right = self.pw2(self.se(self.dw(self.pw1(x))))
        return self.mix_pw(self.mix_dw(channel_shuffle(paddle.concat([left, right], 1))))


class ESNet(nn.Layer):
    channels = (96, 192, 384)

    def __init__(self):
        super().__init__()
        self.stem, self.pool = ConvBN(3, 24, 3, 2), nn.MaxPool2D(3, 2, 1)
        units, cin = [], 24
        for cout, repeat in zip(self.channels, (3, 7, 3)):
            for i in range(repeat):
                units.append(ESUnit(cin, cout, 2 if i == 0 else 1))
                cin = cout
        self.units = nn.LayerList(units)
        self.taps = {2, 9, 12}

    def forward(self, x):
        x, outs = self.pool(self.stem(x)), []
        for i, unit in enumerate(self.units):
            x = unit(x)
            if i in self.taps:
                outs.append(x)
        return outs


class CSPLayer(nn.Layer):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        mid = cout // 2
        self.main, self.short = ConvBN(cin, mid, 1), ConvBN(cin, mid, 1)
        self.pw, self.dw = ConvBN(mid, mid, 1), ConvBN(mid, mid, 5, groups=mid)
        self.fuse = ConvBN(2 * mid, cout, 1)

    def forward(self, x):
        m = self.main(x)
        return self.fuse(paddle.concat([m + self.dw(self.pw(m)), self.short(x)], 1))


class CSPPAN(nn.Layer):
    def __init__(self, ins: tuple[int, int, int], c: int = 96):
        super().__init__()
        self.reduce = nn.LayerList([ConvBN(i, c, 1) for i in ins])
        self.top_down = nn.LayerList([CSPLayer(2 * c, c) for _ in range(2)])
        self.down = nn.LayerList([ConvBN(c, c, 5, 2, groups=c) for _ in range(2)])
        self.bottom_up = nn.LayerList([CSPLayer(2 * c, c) for _ in range(2)])
        self.extra_dw, self.extra_pw = ConvBN(c, c, 5, 2, groups=c), ConvBN(c, c, 1)

    def forward(self, feats):
        f = [r(x) for r, x in zip(self.reduce, feats)]
        inner = [f[2]]
        for k, i in enumerate((1, 0)):
            top = inner[0]
            up = F.interpolate(top, size=[top.shape[2] * 2, top.shape[3] * 2], mode="nearest")
            inner.insert(0, self.top_down[k](paddle.concat([up, f[i]], 1)))
        outs = [inner[0]]
        for i in range(2):
            outs.append(self.bottom_up[i](paddle.concat([self.down[i](outs[-1]), inner[i + 1]], 1)))
        outs.append(self.extra_pw(self.extra_dw(outs[-1])))
        return outs


class GFLHead(nn.Layer):
    """Shared-style PicoHead: per level two depthwise-separable convs, a class map and a DFL box regression
    (reg_max + 1 bins per side, softmax, expectation) decoded to x1y1x2y2 around the anchor points."""

    def __init__(self, c: int = 96, classes: int = 80, reg_max: int = 7):
        super().__init__()
        self.reg_max = reg_max
        self.towers = nn.LayerList([nn.Sequential(ConvBN(c, c, 5, groups=c), ConvBN(c, c, 1),
                                                  ConvBN(c, c, 5, groups=c), ConvBN(c, c, 1)) for _ in STRIDES])
        self.cls = nn.LayerList([nn.Conv2D(c, classes, 1) for _ in STRIDES])
        self.reg = nn.LayerList([nn.Conv2D(c, 4 * (reg_max + 1), 1) for _ in STRIDES])
        self.register_buffer("bins", paddle.to_tensor(np.arange(reg_max + 1, dtype=np.float32)))
        for i, s in enumerate(STRIDES):
            n = -(-SIZE // s)
            ys, xs = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
            centres = np.stack([(xs + 0.5) * s, (ys + 0.5) * s], -1).reshape(1, -1, 2).astype(np.float32)
            self.register_buffer(f"centres{i}", paddle.to_tensor(centres))

    def forward(self, feats):
        boxes, scores = [], []
        for i, x in enumerate(feats):
            t = self.towers[i](x)
            cls = F.sigmoid(self.cls[i](t))
            reg = self.reg[i](t)
            n, _, h, w = reg.shape
            reg = paddle.reshape(reg.transpose([0, 2, 3, 1]), [n, h * w, 4, self.reg_max + 1])
            dist = paddle.matmul(F.softmax(reg, axis=-1), self.bins) * STRIDES[i]
            centres = getattr(self, f"centres{i}")
            boxes.append(paddle.concat([centres - dist[:, :, :2], centres + dist[:, :, 2:]], -1))
            scores.append(paddle.reshape(cls, [n, cls.shape[1], h * w]))
        return paddle.concat(boxes, 1), paddle.concat(scores, 2)


class PicoDet(nn.Layer):
    def __init__(self, backbone: str):
        super().__init__()
        self.backbone = ESNet() if backbone == "esnet" else LCNet()
        self.neck, self.head = CSPPAN(self.backbone.channels), GFLHead()

    def forward(self, image):
        return self.head(self.neck(self.backbone(image)))


def trained_like(model: nn.Layer, frames: list[np.ndarray], seed: int) -> None:
    """Spread weights, gammas and betas; class-prior biases (-4.6: p = 0.01) on the class maps; then BatchNorm
    running statistics measured on the frames (momentum 0: the statistics of the last batch). Gammas around 0.3
    keep the network stable as trained ones are: 1 % noise on the input moves the outputs' cosine by < 0.001.
    Around 1 the random network is chaotic (0.58 for the class maps), and no int8 scheme could follow it."""
    rng = np.random.default_rng(seed)
    for name, p in model.named_parameters():
        shape = tuple(p.shape)
        if name.endswith("bn.weight"):
            v = 0.3 * np.exp(rng.normal(0, 0.3, shape))
        elif name.endswith("bn.bias"):
            v = rng.normal(0, 0.3, shape)
        elif ".cls." in name and name.endswith("bias"):
            v = np.full(shape, -4.6)
        elif len(shape) == 4:
            fan = shape[1] * shape[2] * shape[3]
            v = rng.normal(0, 1, shape) * np.sqrt(2.0 / fan) * np.exp(rng.normal(0, 0.25, (shape[0], 1, 1, 1)))
        else:
            v = rng.normal(0, 0.1, shape)
        p.set_value(v.astype(np.float32))
    norms = [m for m in model.sublayers() if isinstance(m, nn.BatchNorm2D)]
    for m in norms:
        m._momentum = 0.0
    model.train()
    with paddle.no_grad():
        model(paddle.to_tensor(np.concatenate(frames)))
    model.eval()


def export(backbone: str, out: Path, opset: int) -> dict:
    paddle.seed(0)
    model = PicoDet(backbone)
    trained_like(model, frames_nchw(6, SIZE, SIZE, 4), seed=1)
    name = f"picodet_{backbone}"
    with tempfile.TemporaryDirectory() as tmp:
        prefix = str(Path(tmp) / name)
        paddle.jit.save(model, prefix, input_spec=[paddle.static.InputSpec([1, 3, SIZE, SIZE], "float32", "image")])
        import paddle2onnx
        program = prefix + (".json" if Path(prefix + ".json").exists() else ".pdmodel")
        paddle2onnx.export(program, prefix + ".pdiparams", str(out / f"{name}.onnx"), opset_version=opset)
    return {"file": f"{name}.onnx", "input": "image", "shape": [1, 3, SIZE, SIZE],
            "exporter": f"Paddle {paddle.__version__} jit.save + paddle2onnx {paddle2onnx.__version__} opset {opset}",
            "frames": "float NCHW in [0, 1]"}


MODELS = {
    "picodet_lcnet": lambda out: export("lcnet", out, 13),
    "picodet_esnet": lambda out: export("esnet", out, 11),
}


def main() -> None:
    export_all(MODELS, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
