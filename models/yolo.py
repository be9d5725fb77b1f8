"""YOLOv3 and YOLOv3-tiny as in Darknet's cfg files, with pre-processing, region decoding and NMS in the graph."""
from __future__ import annotations

import numpy as np
import onnx

from models.builder import GraphBuilder
from models.postprocess import nms, yolo_decode

_V3_ANCHORS = [(10, 13), (16, 30), (33, 23), (30, 61), (62, 45), (59, 119), (116, 90), (156, 198), (373, 326)]
_TINY_ANCHORS = [(10, 14), (23, 27), (37, 58), (81, 82), (135, 169), (344, 319)]
CLASSES = 80
RESIDUAL_GAMMA = 0.35    # damps each residual branch so 23 shortcuts do not blow activations up


def _detect_bias() -> np.ndarray:
    """Darknet-style prior: objectness and class logits start low, so few random boxes pass the threshold."""
    per_anchor = np.concatenate([[0, 0, 0, 0, -2.0], np.full(CLASSES, -1.0)])
    return np.tile(per_anchor, 3).astype(np.float32)


def _detect(b: GraphBuilder, x: str) -> str:
    return b.conv(x, 3 * (5 + CLASSES), 1, bias=True, hint="detect", gain=0.3, bias_init=_detect_bias())


def _check_size(size: int) -> None:
    if size % 32 or size < 64:
        raise ValueError(f"YOLO input size must be a multiple of 32 and at least 64, got {size}")


def _darknet53(b: GraphBuilder, x: str) -> tuple[str, str, str]:
    """The backbone; returns the stride-8, -16 and -32 feature maps (routes 36, 61 and the last)."""
    x = b.conv_bn_act(x, 32, 3)
    routes = []
    for cout, blocks in [(64, 1), (128, 2), (256, 8), (512, 8), (1024, 4)]:
        x = b.conv_bn_act(x, cout, 3, stride=2)
        for _ in range(blocks):
            y = b.conv_bn_act(x, cout // 2, 1)
            y = b.conv_bn_act(y, cout, 3, gamma_scale=RESIDUAL_GAMMA)
            x = b.add(x, y)
        routes.append(x)
    return routes[2], routes[3], routes[4]


def _head_convs(b: GraphBuilder, x: str, width: int) -> tuple[str, str]:
    """Five alternating 1x1/3x3 convs; returns the branch point and the detection output."""
    for _ in range(2):
        x = b.conv_bn_act(x, width, 1)
        x = b.conv_bn_act(x, width * 2, 3)
    branch = b.conv_bn_act(x, width, 1)
    return branch, _detect(b, b.conv_bn_act(branch, width * 2, 3))


def yolov3(size: int = 416, batch: int = 1, seed: int = 0) -> tuple[onnx.ModelProto, GraphBuilder]:
    _check_size(size)
    b = GraphBuilder("yolov3", seed)
    x = b.image_input(batch, size)
    r36, r61, top = _darknet53(b, x)
    outputs = []
    branch, det = _head_convs(b, top, 512)
    outputs.append((det, _V3_ANCHORS[6:9], 32))
    for route, width, stride, anchors in [(r61, 256, 16, _V3_ANCHORS[3:6]), (r36, 128, 8, _V3_ANCHORS[0:3])]:
        up = b.upsample2(b.conv_bn_act(branch, width, 1))
        branch, det = _head_convs(b, b.concat([up, route]), width)
        outputs.append((det, anchors, stride))
    return _finish(b, outputs, "YOLOv3 (Darknet-53), seeded weights")


def yolov3_tiny(size: int = 416, batch: int = 1, seed: int = 0) -> tuple[onnx.ModelProto, GraphBuilder]:
    _check_size(size)
    b = GraphBuilder("yolov3_tiny", seed)
    x = b.image_input(batch, size)
    route = None
    for cout in [16, 32, 64, 128, 256]:
        x = b.conv_bn_act(x, cout, 3)
        if cout == 256:
            route = x
        x = b.maxpool(x, 2, 2)
    x = b.conv_bn_act(x, 512, 3)
    x = b.maxpool(x, 2, 1, pads=(0, 0, 1, 1))
    x = b.conv_bn_act(x, 1024, 3)
    branch = b.conv_bn_act(x, 256, 1)
    det1 = _detect(b, b.conv_bn_act(branch, 512, 3))
    up = b.upsample2(b.conv_bn_act(branch, 128, 1))
    y = b.conv_bn_act(b.concat([up, route]), 256, 3)
    det2 = _detect(b, y)
    return _finish(b, [(det1, _TINY_ANCHORS[3:6], 32), (det2, _TINY_ANCHORS[1:4], 16)],
                   "YOLOv3-tiny, seeded weights")


def _finish(b: GraphBuilder, heads: list[tuple[str, list, int]], doc: str) -> tuple[onnx.ModelProto, GraphBuilder]:
    boxes, scores = [], []
    detect_std = {det: 1.0 for det, _, _ in heads}
    for det, anchors, stride in heads:
        bx, sc = yolo_decode(b, det, anchors, stride, CLASSES)
        boxes.append(bx)
        scores.append(sc)
    box = b.op("Concat", boxes, "boxes", axis=1)
    score = b.op("Concat", scores, "scores", axis=1)
    selected = nms(b, box, score)
    model = b.build([box, score, selected], doc)
    b.calibrate(model, detect_std)
    return model, b
