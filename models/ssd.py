"""SSD300 with a VGG16 backbone and SSD with a MobileNet-v1 backbone, with prior-box decoding and NMS."""
from __future__ import annotations

import numpy as np
import onnx

from models.builder import GraphBuilder
from models.postprocess import nms, ssd_decode, ssd_head, ssd_priors

_IMAGENET_MEAN = (123.7, 116.3, 103.5)
_IMAGENET_STD = (58.4, 57.1, 57.4)


def _l2norm(b: GraphBuilder, x: str, scale: float = 20.0) -> str:
    c = b.shapes[x][1]
    norm = b.op("ReduceL2", [x], "l2", axes=[1], keepdims=1)
    norm = b.op("Add", [norm, b.const("eps", np.float32(1e-10))], "l2_eps")
    y = b.op("Mul", [b.op("Div", [x, norm], "l2_div"), b.const("l2.scale", np.full((1, c, 1, 1), scale, np.float32))],
             "l2norm")
    b.params += c
    b.shapes[y] = b.shapes[x]
    return y


def _conv_relu(b: GraphBuilder, x: str, cout: int, k: int, stride: int = 1, pad: int | None = None,
               dilation: int = 1) -> str:
    return b.activation(b.conv(x, cout, k, stride, pad=pad, dilation=dilation, bias=True), "relu")


def ssd300_vgg16(size: int = 300, batch: int = 1, classes: int = 91, seed: int = 0
                 ) -> tuple[onnx.ModelProto, GraphBuilder]:
    if size < 268:
        raise ValueError(f"SSD300-VGG16 needs an input of at least 268 pixels (its last maps are unpadded), got {size}")
    b = GraphBuilder("ssd300_vgg16", seed)
    x = b.image_input(batch, size, _IMAGENET_MEAN, _IMAGENET_STD)
    for cout, reps, ceil in [(64, 2, False), (128, 2, False), (256, 3, True), (512, 3, False)]:
        for _ in range(reps):
            x = _conv_relu(b, x, cout, 3)
        if cout == 512:
            conv4_3 = x
        x = b.maxpool(x, 2, 2, ceil=ceil)
    for _ in range(3):
        x = _conv_relu(b, x, 512, 3)
    x = b.maxpool(x, 3, 1, pads=(1, 1, 1, 1))
    x = _conv_relu(b, x, 1024, 3, pad=6, dilation=6)
    fc7 = _conv_relu(b, x, 1024, 1)
    features = [_l2norm(b, conv4_3), fc7]
    x = fc7
    for mid, out, stride, pad in [(256, 512, 2, 1), (128, 256, 2, 1), (128, 256, 1, 0), (128, 256, 1, 0)]:
        x = _conv_relu(b, _conv_relu(b, x, mid, 1), out, 3, stride=stride, pad=pad)
        features.append(x)
    fmaps = [b.shapes[f][2] for f in features]
    ratios = [[2], [2, 3], [2, 3], [2, 3], [2], [2]]
    s = size / 300
    priors = ssd_priors(fmaps, size, [30 * s, 60 * s, 111 * s, 162 * s, 213 * s, 264 * s],
                        [60 * s, 111 * s, 162 * s, 213 * s, 264 * s, 315 * s], ratios)
    return _finish(b, features, [2 + 2 * len(r) for r in ratios], priors, classes, size, 3,
                   "SSD300 with VGG16 backbone, seeded weights")


def _depthwise_separable(b: GraphBuilder, x: str, cout: int, stride: int) -> str:
    cin = b.shapes[x][1]
    x = b.conv_bn_act(x, cin, 3, stride=stride, act="relu6", group=cin, hint="dw")
    return b.conv_bn_act(x, cout, 1, act="relu6", hint="pw")


def ssd_mobilenet_v1(size: int = 300, batch: int = 1, classes: int = 91, seed: int = 0
                     ) -> tuple[onnx.ModelProto, GraphBuilder]:
    if size % 32 and size != 300 or size < 64:
        raise ValueError(f"SSD-MobileNet input size must be 300 or a multiple of 32 (>= 64), got {size}")
    b = GraphBuilder("ssd_mobilenet_v1", seed)
    x = b.image_input(batch, size, (127.5,) * 3, (127.5,) * 3)
    x = b.conv_bn_act(x, 32, 3, stride=2, act="relu6")
    plan = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    features = []
    for i, (cout, stride) in enumerate(plan):
        x = _depthwise_separable(b, x, cout, stride)
        if i == 10:
            features.append(x)
    features.append(x)
    for mid, out in [(256, 512), (128, 256), (128, 256), (64, 128)]:
        x = b.conv_bn_act(b.conv_bn_act(x, mid, 1, act="relu6"), out, 3, stride=2, act="relu6")
        features.append(x)
    fmaps = [b.shapes[f][2] for f in features]
    scales = np.linspace(0.2, 0.95, len(features) + 1) * size
    ratios = [[2]] + [[2, 3]] * 5
    priors = ssd_priors(fmaps, size, list(scales[:-1]), list(scales[1:]), ratios)
    return _finish(b, features, [2 + 2 * len(r) for r in ratios], priors, classes, size, 1,
                   "SSD with MobileNet-v1 backbone, seeded weights")


def _finish(b: GraphBuilder, features: list[str], per_loc: list[int], priors: np.ndarray, classes: int, size: int,
            k: int, doc: str) -> tuple[onnx.ModelProto, GraphBuilder]:
    locs, confs, heads = [], [], {}
    for f, n in zip(features, per_loc):
        loc, conf, raw = ssd_head(b, f, n, classes, k)
        locs.append(loc)
        confs.append(conf)
        heads.update(raw)
    boxes, scores = ssd_decode(b, locs, confs, priors, size)
    selected = nms(b, boxes, scores, score_threshold=0.2, skip_background=True)
    model = b.build([boxes, scores, selected], doc)
    b.calibrate(model, heads)
    return model, b
