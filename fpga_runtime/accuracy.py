"""How far the int8 pipeline is from the float original: per output SNR, cosine similarity and max abs error;
for detection models also whether the same objects come out (precision and recall of the int8 detections
against the float ones, matched at IoU >= 0.5 with the same class)."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

IOU_MATCH = 0.5


@dataclass
class OutputAccuracy:
    name: str
    snr_db: float
    cosine: float
    max_abs: float
    ref_max_abs: float


@dataclass
class DetectionAgreement:
    float_detections: int
    int8_detections: int
    matched: int

    @property
    def precision(self) -> float | None:
        """None (n/a) where int8 detected nothing: no detection is not a perfect one."""
        return self.matched / self.int8_detections if self.int8_detections else None

    @property
    def recall(self) -> float | None:
        return self.matched / self.float_detections if self.float_detections else None

    def summary(self) -> str:
        return (f"precision {_ratio(self.precision)}, recall {_ratio(self.recall)} ({self.matched} of "
                f"{self.float_detections} float / {self.int8_detections} int8 matched)")


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def output_accuracy(name: str, ref: np.ndarray, got: np.ndarray) -> OutputAccuracy:
    a, b = ref.astype(np.float64).ravel(), got.astype(np.float64).ravel()
    noise = np.sum((a - b) ** 2)
    signal = np.sum(a ** 2)
    snr = float("inf") if noise == 0 else 10 * np.log10(signal / noise) if signal else float("-inf")
    denom = np.sqrt(np.sum(a ** 2) * np.sum(b ** 2))
    cos = float(np.dot(a, b) / denom) if denom else float(np.array_equal(a, b))
    return OutputAccuracy(name, float(snr), cos, float(np.max(np.abs(a - b))) if a.size else 0.0,
                          float(np.max(np.abs(a))) if a.size else 0.0)


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


def detection_agreement(boxes_ref: np.ndarray, selected_ref: np.ndarray, boxes: np.ndarray,
                        selected: np.ndarray) -> DetectionAgreement:
    ref = detections(boxes_ref, selected_ref)
    got = detections(boxes, selected)
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


def find_detection_outputs(outputs: dict[str, np.ndarray]) -> tuple[str, str] | None:
    """(boxes [N, B, 4] float, selected [K, 3] int) among a model's outputs, if it has them."""
    boxes = [k for k, v in outputs.items() if v.dtype.kind == "f" and v.ndim == 3 and v.shape[-1] == 4]
    selected = [k for k, v in outputs.items() if v.dtype.kind in "iu" and v.ndim == 2 and v.shape[-1] == 3]
    return (boxes[0], selected[0]) if boxes and selected else None


@dataclass
class AccuracyReport:
    outputs: list[OutputAccuracy]
    detections: DetectionAgreement | None

    def as_dict(self) -> dict:
        d = {"outputs": [asdict(o) for o in self.outputs]}
        if self.detections:
            d["detections"] = {**asdict(self.detections), "precision": self.detections.precision,
                               "recall": self.detections.recall, "iou": IOU_MATCH}
        return d

    def markdown(self) -> list[str]:
        lines = ["| output | SNR dB | cosine | max abs error | max abs of float |", "|---|---|---|---|---|"]
        lines += [f"| {o.name} | {o.snr_db:.1f} | {o.cosine:.5f} | {o.max_abs:.4g} | {o.ref_max_abs:.4g} |"
                  for o in self.outputs]
        if self.detections:
            d = self.detections
            lines += ["", f"Detections (IoU >= {IOU_MATCH}, same class): {d.summary()}"]
        return lines


def compare(reference: dict[str, np.ndarray], got: dict[str, np.ndarray]) -> AccuracyReport:
    outs = [output_accuracy(k, v, got[k]) for k, v in reference.items() if v.dtype.kind == "f"]
    det = None
    names = find_detection_outputs(reference)
    if names:
        b, s = names
        det = detection_agreement(reference[b], reference[s], got[b], got[s])
    return AccuracyReport(outs, det)


def summarise(reports: list[AccuracyReport]) -> AccuracyReport:
    """Several frames as one report: per output the worst SNR, cosine and max error over the frames; detections
    pooled (matches and counts summed)."""
    if len(reports) == 1:
        return reports[0]
    outputs = []
    for k, first in enumerate(reports[0].outputs):
        per = [r.outputs[k] for r in reports]
        outputs.append(OutputAccuracy(first.name, min(o.snr_db for o in per), min(o.cosine for o in per),
                                      max(o.max_abs for o in per), max(o.ref_max_abs for o in per)))
    dets = [r.detections for r in reports if r.detections is not None]
    pooled = DetectionAgreement(sum(d.float_detections for d in dets), sum(d.int8_detections for d in dets),
                                sum(d.matched for d in dets)) if dets else None
    return AccuracyReport(outputs, pooled)
