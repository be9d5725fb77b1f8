"""Detection post-processing written as ONNX ops: YOLO and SSD box decoding and non-maximum suppression."""
from __future__ import annotations

import numpy as np

from models.builder import GraphBuilder


def dynamic_reshape(b: GraphBuilder, x: str, tail: list[int]) -> str:
    """Reshape to [N, *tail] with N read by Shape/Gather as exporters write it (folded at import)."""
    shape = b.op("Shape", [x], "shape")
    n = b.op("Gather", [shape, b.const("idx0", np.array(0, np.int64))], "batch", axis=0)
    n = b.op("Unsqueeze", [n, b.const("axes0", np.array([0], np.int64))], "batch_1d")
    target = b.op("Concat", [n, b.const("tail", np.array(tail, np.int64))], "target_shape", axis=0)
    return b.op("Reshape", [x, target], "reshape")


def _slice_last(b: GraphBuilder, x: str, start: int, end: int) -> str:
    return b.op("Slice", [x, b.const("s", np.array([start], np.int64)), b.const("e", np.array([end], np.int64)),
                          b.const("ax", np.array([-1], np.int64))], "slice")


def yolo_decode(b: GraphBuilder, p: str, anchors: list[tuple[int, int]], stride: int, classes: int
                ) -> tuple[str, str]:
    """Darknet's region decoding: boxes [N, A*H*W, 4] (x1, y1, x2, y2 in pixels) and scores [N, A*H*W, C]."""
    _, _, h, w = b.shapes[p]
    a = len(anchors)
    x = dynamic_reshape(b, p, [a, 5 + classes, h, w])
    x = b.op("Transpose", [x], "to_anchor_last", perm=[0, 1, 3, 4, 2])
    gy, gx = np.meshgrid(np.arange(h, dtype=np.float32), np.arange(w, dtype=np.float32), indexing="ij")
    grid = np.stack([gx, gy], -1).reshape(1, 1, h, w, 2)
    anc = np.array(anchors, np.float32).reshape(1, a, 1, 1, 2)
    xy = b.op("Sigmoid", [_slice_last(b, x, 0, 2)], "xy_sigmoid")
    xy = b.op("Mul", [b.op("Add", [xy, b.const("grid", grid)], "xy_grid"), b.const("stride", np.float32(stride))],
              "xy")
    wh = b.op("Mul", [b.op("Exp", [_slice_last(b, x, 2, 4)], "wh_exp"), b.const("anchors", anc)], "wh")
    half = b.op("Mul", [wh, b.const("half", np.float32(0.5))], "half_wh")
    box = b.op("Concat", [b.op("Sub", [xy, half], "x1y1"), b.op("Add", [xy, half], "x2y2")], "box", axis=-1)
    obj = b.op("Sigmoid", [_slice_last(b, x, 4, 5)], "objectness")
    cls = b.op("Sigmoid", [_slice_last(b, x, 5, 5 + classes)], "class_prob")
    score = b.op("Mul", [obj, cls], "score")
    return dynamic_reshape(b, box, [-1, 4]), dynamic_reshape(b, score, [-1, classes])


def nms(b: GraphBuilder, boxes: str, scores: str, max_per_class: int = 100, iou: float = 0.45,
        score_threshold: float = 0.25, skip_background: bool = False) -> str:
    """ONNX NonMaxSuppression over [N, B, 4] boxes and [N, B, C] scores; returns [K, 3] selections
    (batch, class, box). With `skip_background`, class 0 is left out and class k is reported as k - 1."""
    if skip_background:
        scores = _slice_last(b, scores, 1, 1 << 30)
    per_class = b.op("Transpose", [scores], "scores_by_class", perm=[0, 2, 1])
    return b.op("NonMaxSuppression", [boxes, per_class, b.const("max_out", np.array([max_per_class], np.int64)),
                                      b.const("iou", np.array([iou], np.float32)),
                                      b.const("score_th", np.array([score_threshold], np.float32))],
                "selected_indices", center_point_box=0)


def ssd_priors(fmaps: list[int], size: int, min_sizes: list[float], max_sizes: list[float],
               ratios: list[list[float]]) -> np.ndarray:
    """Prior boxes (cx, cy, w, h), normalised to [0, 1], in the order the heads are concatenated."""
    out = []
    for f, lo, hi, rs in zip(fmaps, min_sizes, max_sizes, ratios):
        for i in range(f):
            for j in range(f):
                cx, cy = (j + 0.5) / f, (i + 0.5) / f
                s = lo / size
                out.append((cx, cy, s, s))
                s2 = np.sqrt(lo * hi) / size
                out.append((cx, cy, s2, s2))
                for r in rs:
                    q = np.sqrt(r)
                    out.append((cx, cy, s * q, s / q))
                    out.append((cx, cy, s / q, s * q))
    return np.clip(np.array(out, np.float32), 0.0, 1.0)


def ssd_head(b: GraphBuilder, feature: str, boxes_per_loc: int, classes: int, k: int
             ) -> tuple[str, str, dict[str, float]]:
    """Loc and conf convs of one feature map, reshaped to [N, boxes, 4] and [N, boxes, C]; also the raw conv
    outputs with the spread their weights are calibrated to."""
    loc = b.conv(feature, boxes_per_loc * 4, k, bias=True, hint="loc", gain=0.05)
    background = np.tile(np.concatenate([[3.0], np.zeros(classes - 1)]), boxes_per_loc)
    conf = b.conv(feature, boxes_per_loc * classes, k, bias=True, hint="conf", gain=0.5, bias_init=background)
    raw = {loc: 0.5, conf: 1.5}
    loc = dynamic_reshape(b, b.op("Transpose", [loc], "loc_nhwc", perm=[0, 2, 3, 1]), [-1, 4])
    conf = dynamic_reshape(b, b.op("Transpose", [conf], "conf_nhwc", perm=[0, 2, 3, 1]), [-1, classes])
    return loc, conf, raw


def ssd_decode(b: GraphBuilder, locs: list[str], confs: list[str], priors: np.ndarray, size: int
               ) -> tuple[str, str]:
    """Softmax scores and centre-size decoding with variances (0.1, 0.2); boxes in pixels."""
    loc = b.op("Concat", locs, "loc_all", axis=1)
    conf = b.op("Concat", confs, "conf_all", axis=1)
    scores = b.op("Softmax", [conf], "class_softmax", axis=-1)
    p = priors[None]
    cxcy = b.op("Add", [b.op("Mul", [_slice_last(b, loc, 0, 2), b.const("var_c", p[..., 2:] * 0.1)], "dcxcy"),
                        b.const("prior_c", p[..., :2])], "cxcy")
    wh = b.op("Mul", [b.op("Exp", [b.op("Mul", [_slice_last(b, loc, 2, 4), b.const("var_s", np.float32(0.2))],
                                        "dwh")], "ewh"), b.const("prior_wh", p[..., 2:])], "wh")
    half = b.op("Mul", [wh, b.const("half", np.float32(0.5))], "half_wh")
    box = b.op("Concat", [b.op("Sub", [cxcy, half], "x1y1"), b.op("Add", [cxcy, half], "x2y2")], "box", axis=-1)
    box = b.op("Mul", [box, b.const("image_size", np.float32(size))], "boxes")
    return box, scores
