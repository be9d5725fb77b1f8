"""Detections out of a model's outputs and whether two runs find the same objects: precision and recall of the
int8 detections against the float ones, matched at IoU >= 0.5 with the same class; for a probability map (a text
or segmentation detector's), whether the same pixels pass its threshold.

Detections are read from these layouts: this project's zoo (boxes [N, B, 4] and NMS indices [K, 3]),
torchvision's post-processed ones (boxes [K, 4], scores and labels [K]), end-to-end heads ([1, K, 6] rows of x1 y1
x2 y2 score class, NMS or TopK in the graph), PaddleDetection's and darknet2onnx's, and raw YOLO heads (RawHead:
YOLOv5u/v8/v11's [1, 4 + classes, anchors], YOLOv5/YOLOX's [1, anchors, 5 + classes]; the best TOP_K after
class-wise NMS, so that untrained or unusual models with no confident box still compare).

Detections are compared at the score a user acts on (CONFIDENCE, ultralytics' predict default) wherever the float
run has any box at or above it: the low-score tail of a top-K list reorders under any rounding and is not what an
application keeps. A frame whose float run has no confident box (an untrained model) compares the best TOP_K
instead, and the summary says which rule held."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

IOU_MATCH = 0.5
TOP_K = 100
CONFIDENCE = 0.25          # ultralytics' predict default
CONFIDENT = f"detections scoring >= {CONFIDENCE}"
RANKED = f"the best {TOP_K} detections (float has none scoring >= {CONFIDENCE})"
MAP_THRESHOLD = 0.3        # DBNet's binarisation threshold


@dataclass
class DetectionAgreement:
    float_detections: int
    int8_detections: int
    matched: int
    unit: str = CONFIDENT            # or RANKED, "map pixels", or a mix of the first two over several frames

    @property
    def precision(self) -> float | None:
        """None (n/a) where int8 detected nothing: no detection is not a perfect one."""
        return self.matched / self.int8_detections if self.int8_detections else None

    @property
    def recall(self) -> float | None:
        return self.matched / self.float_detections if self.float_detections else None

    @property
    def f1(self) -> float | None:
        """2 matched / (float + int8): None where neither run detected anything."""
        total = self.float_detections + self.int8_detections
        return 2 * self.matched / total if total else None

    def summary(self) -> str:
        noun, rule = ("map pixels", "") if self.unit == "map pixels" else ("detections", f"; {self.unit}")
        return (f"precision {_ratio(self.precision)}, recall {_ratio(self.recall)}, F1 {_ratio(self.f1)} "
                f"({self.matched} of {self.float_detections} float / {self.int8_detections} int8 {noun} "
                f"matched{rule})")

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


Detection = tuple[int, int, np.ndarray, float]       # batch, class, box x1 y1 x2 y2, score


def detections(boxes: np.ndarray, selected: np.ndarray) -> list[Detection]:
    """Every row (batch, class, box index) of an NMS output; the graph's own NMS chose them, at its own score
    threshold, so each counts as confident."""
    return [(int(n), int(c), boxes[int(n), int(i)], np.inf) for n, c, i in selected]


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


@dataclass(frozen=True)
class RawHead:
    """A raw YOLO head, the model's one output: anchors on the last axis, [1, 4 + classes, anchors] (centre,
    size, class scores: YOLOv5u/v8/v11), or on the middle one with an objectness column, [1, anchors, 5 + classes]
    (YOLOv5/v7, YOLOX: a class's score is objectness x class probability)."""
    name: str
    objectness: bool

    def boxes_and_scores(self, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Boxes (x1 y1 x2 y2, input pixels) and class scores, one row per anchor."""
        rows = value[0].astype(np.float64)
        if not self.objectness:
            rows = rows.T
        cx, cy, w, h = rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3]
        boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
        scores = rows[:, 5:] * rows[:, 4:5] if self.objectness else rows[:, 4:]
        return boxes, scores


def _raw_yolo(head: RawHead, value: np.ndarray) -> list[Detection]:
    """Every anchor's best class, class-wise NMS at IOU_MATCH, the best TOP_K: no score threshold here, so
    untrained models still compare (detection_agreement applies CONFIDENCE)."""
    return [(0, c, box, score) for c, score, box in decode_yolo(head, value, -np.inf, IOU_MATCH, TOP_K)]


def _boxes_and_class_scores(boxes: np.ndarray, scores: np.ndarray) -> list[Detection]:
    """PaddleDetection's export without NMS: boxes [1, N, 4] (x1 y1 x2 y2) and class scores [1, C, N]."""
    rows = scores[0].T.astype(np.float64)
    classes = np.argmax(rows, axis=1)
    best = rows[np.arange(len(rows)), classes]
    b = boxes[0].astype(np.float64)
    return [(0, int(classes[i]), b[i], float(best[i])) for i in _class_nms(b, best, classes, TOP_K)]


def detection_reader(outputs: dict[str, np.ndarray]):
    """A function from a model's outputs to its detections [(batch, class, box, score)], for the layout these
    outputs have (the float reference's), or None when they are not a detector's."""
    names = find_detection_outputs(outputs)
    if names:
        b, s = names
        return lambda out: detections(out[b], out[s])
    post = post_processed(outputs)
    if post is not None:
        b, sc, lab = post
        return lambda out: [(0, int(c), box, float(out[sc][i]) if sc else np.inf)
                            for i, (c, box) in enumerate(zip(out[lab], out[b]))]
    e2e = end_to_end_output(outputs)
    if e2e is not None:
        return lambda out: _end_to_end_rows(out[e2e])
    head = raw_yolo_head(outputs)
    if head is not None:
        return lambda out: _raw_yolo(head, out[head.name])
    rows = [k for k, v in outputs.items() if v.dtype.kind == "f" and v.ndim == 2 and v.shape[1] == 6]
    counts = [k for k, v in outputs.items() if v.dtype.kind in "iu" and v.ndim in (1, 2) and v.shape[-1:] != (3,)]
    if len(rows) == 1 and len(outputs) - len(counts) == 1:       # PaddleDetection's NMS: label, score, x1y1x2y2
        return lambda out: [(0, int(r[0]), r[2:6].astype(np.float64), float(r[1])) for r in out[rows[0]]
                            if r[0] >= 0]
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


def _agreement(ref: list[Detection], got: list[Detection]) -> DetectionAgreement:
    """The detections both runs keep: those scoring >= CONFIDENCE where float has any, else the best TOP_K."""
    unit = CONFIDENT if any(d[3] >= CONFIDENCE for d in ref) else RANKED
    if unit == CONFIDENT:
        ref, got = [d for d in ref if d[3] >= CONFIDENCE], [d for d in got if d[3] >= CONFIDENCE]
    else:
        ref, got = _best(ref), _best(got)
    used = np.zeros(len(ref), bool)
    matched = 0
    for n, c, box, _ in got:
        candidates = [i for i, (rn, rc, _, _) in enumerate(ref) if rn == n and rc == c and not used[i]]
        if not candidates:
            continue
        ious = _iou(box, np.stack([ref[i][2] for i in candidates]))
        best = int(np.argmax(ious))
        if ious[best] >= IOU_MATCH:
            used[candidates[best]] = True
            matched += 1
    return DetectionAgreement(len(ref), len(got), matched, unit)


def _best(found: list[Detection]) -> list[Detection]:
    return sorted(found, key=lambda d: -d[3])[:TOP_K]


def probability_map(outputs: dict[str, np.ndarray]) -> str | None:
    """The name of the model's one output where it is a probability map [1, 1, H, W] in [0, 1] (DBNet's)."""
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
    pmap = probability_map(reference)
    if pmap is not None:
        a, b = reference[pmap] > MAP_THRESHOLD, got[pmap] > MAP_THRESHOLD
        return DetectionAgreement(int(a.sum()), int(b.sum()), int((a & b).sum()), "map pixels")
    return None


def post_processed(outputs: dict[str, np.ndarray]) -> tuple[str, str | None, str] | None:
    """(boxes [K, 4] x1 y1 x2 y2, scores [K] or None, labels [K]): torchvision's detectors after their own NMS."""
    boxes = [k for k, v in outputs.items() if v.dtype.kind == "f" and v.ndim == 2 and v.shape[-1] == 4]
    if not boxes:
        return None
    k = len(outputs[boxes[0]])
    labels = [n for n, v in outputs.items() if v.dtype.kind in "iu" and v.shape == (k,)]
    scores = [n for n, v in outputs.items() if v.dtype.kind == "f" and v.shape == (k,)]
    return (boxes[0], scores[0] if len(scores) == 1 else None, labels[0]) if labels else None


def raw_yolo_head(outputs: dict[str, np.ndarray]) -> RawHead | None:
    """The model's one output where it is a raw YOLO head of either layout (see RawHead), else None."""
    if len(outputs) != 1:
        return None
    (name, v), = outputs.items()
    if v.dtype.kind != "f" or v.ndim != 3 or v.shape[0] != 1:
        return None
    if 5 <= v.shape[1] <= 1004 and v.shape[2] > 2 * v.shape[1]:
        return RawHead(name, objectness=False)
    if 6 <= v.shape[2] <= 1005 and v.shape[1] > 2 * v.shape[2] and not _end_to_end(v):
        return RawHead(name, objectness=True)
    return None


def end_to_end_output(outputs: dict[str, np.ndarray]) -> str | None:
    """The one [1, K, 6] output of an end-to-end detector (YOLOv10/YOLO26, an export with NMS and TopK in the
    graph), whatever else the model outputs (a segmentation head's mask coefficients and prototypes)."""
    rows = [k for k, v in outputs.items() if v.dtype.kind == "f" and v.ndim == 3 and v.shape[0] == 1
            and v.shape[2] == 6 and v.shape[1] >= 1 and _end_to_end(v)]
    return rows[0] if len(rows) == 1 else None


def _end_to_end_rows(value: np.ndarray) -> list[Detection]:
    """The rows with a score, best first, at most TOP_K: the padding rows of a fixed-K output score 0."""
    rows = value[0].astype(np.float64)
    order = np.argsort(-rows[:, 4], kind="stable")[:TOP_K]
    return [(0, int(rows[i, 5]), rows[i, :4], float(rows[i, 4])) for i in order if rows[i, 4] > 0]


def ranked_outputs(outputs: dict[str, np.ndarray]) -> set[str]:
    """Outputs whose rows are detections chosen and ordered by score (after NMS or TopK): row k of float and of int8
    need not be the same object, so a cosine over them means nothing; the detections' F1 judges them."""
    names: set[str] = set()
    e2e = end_to_end_output(outputs)
    if e2e is not None:
        names.add(e2e)
    post = post_processed(outputs)
    if post is not None:
        names.update(n for n in post if n is not None)
    rows = [k for k, v in outputs.items() if v.dtype.kind == "f" and v.ndim == 2 and v.shape[1] == 6]
    if len(rows) == 1 and detection_reader(outputs) is not None and end_to_end_output(outputs) is None \
            and post is None:
        names.add(rows[0])                       # PaddleDetection's NMS rows
    return names


def _end_to_end(v: np.ndarray) -> bool:
    """[1, K, 6] rows of (x1, y1, x2, y2, score, class id) with whole class ids: an end-to-end head's output
    (NMS in the graph), not a one-class raw head's."""
    return v.shape[2] == 6 and bool(np.all(v[0, :, 5] == np.round(v[0, :, 5])))


def decode_yolo(head: RawHead, value: np.ndarray, conf: float = 0.25, iou: float = 0.7, max_det: int = 300
                ) -> list[tuple[int, float, np.ndarray]]:
    """(class, score, x1 y1 x2 y2 in input pixels) of a raw YOLO head, as ultralytics' predict gives them: the
    best class per anchor at or above `conf`, class-wise NMS at `iou`, at most `max_det`, best first."""
    boxes, scores = head.boxes_and_scores(value)
    classes = np.argmax(scores, axis=1)
    best = scores[np.arange(len(scores)), classes]
    keep = best >= conf
    boxes, classes, best = boxes[keep], classes[keep], best[keep]
    return [(int(classes[i]), float(best[i]), boxes[i]) for i in _class_nms(boxes, best, classes, max_det, iou)]
