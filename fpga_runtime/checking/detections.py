"""Detections out of a model's outputs and whether two runs find the same objects: precision and recall of the
int8 detections against the float ones, matched at IoU >= 0.5 with the same class; for a probability map (a text
or segmentation detector's), whether the same pixels pass its threshold.

Detections are read from three layouts: this project's zoo (boxes [N, B, 4] and NMS indices [K, 3]),
torchvision's post-processed ones (boxes [K, 4], labels [K]) and raw YOLO heads ([1, 4 + classes, anchors]:
centre, size, class scores; the best TOP_K after class-wise NMS, so that untrained or unusual models with no
confident box still compare)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

IOU_MATCH = 0.5
TOP_K = 100
MAP_THRESHOLD = 0.3        # DBNet's binarisation threshold


@dataclass
class DetectionAgreement:
    float_detections: int
    int8_detections: int
    matched: int
    unit: str = "detections"         # or "map pixels"

    @property
    def precision(self) -> float | None:
        """None (n/a) where int8 detected nothing: no detection is not a perfect one."""
        return self.matched / self.int8_detections if self.int8_detections else None

    @property
    def recall(self) -> float | None:
        return self.matched / self.float_detections if self.float_detections else None

    def summary(self) -> str:
        return (f"precision {_ratio(self.precision)}, recall {_ratio(self.recall)} ({self.matched} of "
                f"{self.float_detections} float / {self.int8_detections} int8 {self.unit} matched)")

    @property
    def rule(self) -> str:
        return (f"Map pixels above {MAP_THRESHOLD}" if self.unit == "map pixels"
                else f"Detections (IoU >= {IOU_MATCH}, same class)")


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of box a (x1, y1, x2, y2) with each row of b."""
    x1, y1 = np.maximum(a[0], b[:, 0]), np.maximum(a[1], b[:, 1])
    x2, y2 = np.minimum(a[2], b[:, 2]), np.minimum(a[3], b[:, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area = lambda r: np.clip(r[..., 2] - r[..., 0], 0, None) * np.clip(r[..., 3] - r[..., 1], 0, None)
    union = area(a) + area(b) - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def detections(boxes: np.ndarray, selected: np.ndarray) -> list[tuple[int, int, np.ndarray]]:
    """(batch, class, box) for every row (batch, class, box index) of an NMS output."""
    return [(int(n), int(c), boxes[int(n), int(i)]) for n, c, i in selected]


def _class_nms(boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, keep: int, iou: float = IOU_MATCH
               ) -> list[int]:
    """Greedy NMS per class at `iou`, best first, at most `keep` boxes."""
    out: list[int] = []
    suppressed = np.zeros(len(scores), bool)
    for i in np.argsort(-scores, kind="stable"):
        if suppressed[i]:
            continue
        out.append(int(i))
        if len(out) == keep:
            break
        same = classes == classes[i]
        suppressed |= same & (_iou(boxes[i], boxes) >= iou)
    return out


def _raw_yolo(head: np.ndarray) -> list[tuple[int, int, np.ndarray]]:
    rows = head[0].T.astype(np.float64)                   # [anchors, 4 + classes]
    cx, cy, w, h = rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3]
    boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    classes = np.argmax(rows[:, 4:], axis=1)
    scores = rows[np.arange(len(rows)), 4 + classes]
    return [(0, int(classes[i]), boxes[i]) for i in _class_nms(boxes, scores, classes, TOP_K)]


def _boxes_and_class_scores(boxes: np.ndarray, scores: np.ndarray) -> list[tuple[int, int, np.ndarray]]:
    """PaddleDetection's export without NMS: boxes [1, N, 4] (x1 y1 x2 y2) and class scores [1, C, N]."""
    rows = scores[0].T.astype(np.float64)
    classes = np.argmax(rows, axis=1)
    best = rows[np.arange(len(rows)), classes]
    b = boxes[0].astype(np.float64)
    return [(0, int(classes[i]), b[i]) for i in _class_nms(b, best, classes, TOP_K)]


def detection_reader(outputs: dict[str, np.ndarray]):
    """A function from a model's outputs to its detections [(batch, class, box)], for the layout these outputs
    have (the float reference's), or None when they are not a detector's."""
    names = find_detection_outputs(outputs)
    if names:
        b, s = names
        return lambda out: detections(out[b], out[s])
    boxes = [k for k, v in outputs.items() if v.dtype.kind == "f" and v.ndim == 2 and v.shape[-1] == 4]
    labels = [k for k, v in outputs.items() if v.dtype.kind in "iu" and v.ndim == 1]
    if boxes and labels and len(outputs[boxes[0]]) == len(outputs[labels[0]]):
        b, lab = boxes[0], labels[0]
        return lambda out: [(0, int(c), box) for c, box in zip(out[lab], out[b])]
    heads = [k for k, v in outputs.items() if v.dtype.kind == "f" and v.ndim == 3 and v.shape[0] == 1
             and 5 <= v.shape[1] <= 1004 and v.shape[2] > 2 * v.shape[1]]
    if len(heads) == 1 and len(outputs) == 1:
        return lambda out: _raw_yolo(out[heads[0]])
    rows = [k for k, v in outputs.items() if v.dtype.kind == "f" and v.ndim == 2 and v.shape[1] == 6]
    counts = [k for k, v in outputs.items() if v.dtype.kind in "iu" and v.ndim in (1, 2) and v.shape[-1:] != (3,)]
    if len(rows) == 1 and len(outputs) - len(counts) == 1:       # PaddleDetection's NMS: label, score, x1y1x2y2
        return lambda out: [(0, int(r[0]), r[2:6].astype(np.float64)) for r in out[rows[0]] if r[0] >= 0]
    boxes = [k for k, v in outputs.items() if v.dtype.kind == "f" and v.ndim == 4 and v.shape[0] == 1
             and v.shape[2:] == (1, 4)]
    if len(boxes) == 1 and len(outputs) == 2:           # darknet2onnx: boxes [1, N, 1, 4], confidences [1, N, C]
        n = outputs[boxes[0]].shape[1]
        confs = [k for k, v in outputs.items() if k != boxes[0] and v.dtype.kind == "f" and v.shape[:2] == (1, n)
                 and v.ndim == 3]
        if confs:
            return lambda out: _boxes_and_class_scores(out[boxes[0]][:, :, 0], out[confs[0]].transpose(0, 2, 1))
    boxes = [k for k, v in outputs.items() if v.dtype.kind == "f" and v.ndim == 3 and v.shape[0] == 1
             and v.shape[2] == 4]
    if len(boxes) == 1 and len(outputs) == 2:
        n = outputs[boxes[0]].shape[1]
        scores = [k for k, v in outputs.items() if k != boxes[0] and v.dtype.kind == "f" and v.shape[:1] == (1,)
                  and v.ndim == 3 and v.shape[2] == n and v.shape[1] < n]
        if scores:
            return lambda out: _boxes_and_class_scores(out[boxes[0]], out[scores[0]])
    return None


def _agreement(ref: list, got: list) -> DetectionAgreement:
    used = np.zeros(len(ref), bool)
    matched = 0
    for n, c, box in got:
        candidates = [i for i, (rn, rc, _) in enumerate(ref) if rn == n and rc == c and not used[i]]
        if not candidates:
            continue
        ious = _iou(box, np.stack([ref[i][2] for i in candidates]))
        best = int(np.argmax(ious))
        if ious[best] >= IOU_MATCH:
            used[candidates[best]] = True
            matched += 1
    return DetectionAgreement(len(ref), len(got), matched)


def _probability_map(outputs: dict[str, np.ndarray]) -> str | None:
    maps = [k for k, v in outputs.items() if v.dtype.kind == "f" and v.ndim == 4 and v.shape[1] == 1
            and v.size >= 256 and v.min() >= 0.0 and v.max() <= 1.0]
    return maps[0] if len(maps) == 1 and len(outputs) == 1 else None


def find_detection_outputs(outputs: dict[str, np.ndarray]) -> tuple[str, str] | None:
    """(boxes [N, B, 4] float, selected [K, 3] int) among a model's outputs, if it has them."""
    boxes = [k for k, v in outputs.items() if v.dtype.kind == "f" and v.ndim == 3 and v.shape[-1] == 4]
    selected = [k for k, v in outputs.items() if v.dtype.kind in "iu" and v.ndim == 2 and v.shape[-1] == 3]
    return (boxes[0], selected[0]) if boxes and selected else None


def detection_agreement(reference: dict[str, np.ndarray], got: dict[str, np.ndarray]) -> DetectionAgreement | None:
    """How far `got` finds the objects (or map pixels) `reference` finds; None where the outputs hold neither."""
    read = detection_reader(reference)
    if read is not None:
        return _agreement(read(reference), read(got))
    pmap = _probability_map(reference)
    if pmap is not None:
        a, b = reference[pmap] > MAP_THRESHOLD, got[pmap] > MAP_THRESHOLD
        return DetectionAgreement(int(a.sum()), int(b.sum()), int((a & b).sum()), "map pixels")
    return None


def raw_yolo_head(outputs: dict[str, np.ndarray]) -> str | None:
    """The name of a YOLOv5u/v8/v11-style raw head [1, 4 + classes, anchors] (centre, size, class scores), where
    it is the model's one output."""
    heads = [k for k, v in outputs.items() if v.dtype.kind == "f" and v.ndim == 3 and v.shape[0] == 1
             and 5 <= v.shape[1] <= 1004 and v.shape[2] > 2 * v.shape[1]]
    return heads[0] if len(heads) == 1 and len(outputs) == 1 else None


def decode_yolo(head: np.ndarray, conf: float = 0.25, iou: float = 0.7, max_det: int = 300
                ) -> list[tuple[int, float, np.ndarray]]:
    """(class, score, x1 y1 x2 y2 in input pixels) of a raw YOLO head, as ultralytics' predict gives them: the
    best class per anchor at or above `conf`, class-wise NMS at `iou`, at most `max_det`, best first."""
    rows = head[0].T.astype(np.float64)
    classes = np.argmax(rows[:, 4:], axis=1)
    scores = rows[np.arange(len(rows)), 4 + classes]
    keep = scores >= conf
    rows, classes, scores = rows[keep], classes[keep], scores[keep]
    cx, cy, w, h = rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3]
    boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    return [(int(classes[i]), float(scores[i]), boxes[i]) for i in _class_nms(boxes, scores, classes, max_det, iou)]
