"""How far the int8 pipeline is from the float original: per output SNR, cosine similarity and max abs error,
and for detection models whether the same objects come out (`detections.py`)."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from fpga_runtime.checking.detections import IOU_MATCH, DetectionAgreement, detection_agreement, ranked_outputs

RANKED_NOTE = "detections ordered by score: the F1 below judges them, not the cosine"


@dataclass
class OutputAccuracy:
    name: str
    snr_db: float
    cosine: float
    max_abs: float
    ref_max_abs: float
    note: str = ""        # e.g. a detection list whose length int8 changed: only the rows both have are compared
    ranked: bool = False  # rows of detections chosen and ordered by score: judged by the detections' F1, not cosine



def output_accuracy(name: str, ref: np.ndarray, got: np.ndarray) -> OutputAccuracy:
    note = ""
    if ref.shape != got.shape:      # a data-dependent size (detections after NMS): compare what both have
        note = (f"shape {'x'.join(map(str, got.shape)) or 'scalar'} in int8, "
                f"{'x'.join(map(str, ref.shape)) or 'scalar'} in float: leading elements compared")
        if ref.ndim != got.ndim:
            ref, got = ref.ravel(), got.ravel()
        common = tuple(slice(0, min(x, y)) for x, y in zip(ref.shape, got.shape))
        ref, got = ref[common], got[common]
    a, b = ref.astype(np.float64).ravel(), got.astype(np.float64).ravel()
    finite = np.isfinite(a) & np.isfinite(b)
    if not finite.all():            # an exp() that overflows (box decoding of an exploding network)
        left = f"{int((~np.isfinite(a)).sum())} non-finite in float, {int((~np.isfinite(b)).sum())} in int8, " \
               "left out"
        note = f"{note}; {left}" if note else left
        a, b = a[finite], b[finite]
    noise = np.sum((a - b) ** 2)
    signal = np.sum(a ** 2)
    snr = float("inf") if noise == 0 else 10 * np.log10(signal / noise) if signal else float("-inf")
    denom = np.sqrt(np.sum(a ** 2) * np.sum(b ** 2))
    cos = float(np.dot(a, b) / denom) if denom else float(np.array_equal(a, b))
    return OutputAccuracy(name, float(snr), cos, float(np.max(np.abs(a - b))) if a.size else 0.0,
                          float(np.max(np.abs(a))) if a.size else 0.0, note)


@dataclass
class AccuracyReport:
    outputs: list[OutputAccuracy]
    detections: DetectionAgreement | None
    frame: str = ""                      # what it was measured on, where that needs saying

    def as_dict(self) -> dict:
        d = {"outputs": [asdict(o) for o in self.outputs], **({"frame": self.frame} if self.frame else {})}
        if self.detections:
            d["detections"] = {**asdict(self.detections), "precision": self.detections.precision,
                               "recall": self.detections.recall, "f1": self.detections.f1, "iou": IOU_MATCH}
        return d

    def markdown(self) -> list[str]:
        lines = ["| output | SNR dB | cosine | max abs error | max abs of float |", "|---|---|---|---|---|"]
        lines += [f"| {o.name}{f' ({o.note})' if o.note else ''} | {o.snr_db:.1f} | {o.cosine:.5f} | "
                  f"{o.max_abs:.4g} | {o.ref_max_abs:.4g} |" for o in self.outputs]
        if self.detections:
            d = self.detections
            lines += ["", f"{d.rule}: {d.summary()}"]
        return lines


def compare(reference: dict[str, np.ndarray], got: dict[str, np.ndarray]) -> AccuracyReport:
    outs = [output_accuracy(k, v, got[k]) for k, v in reference.items() if v.dtype.kind == "f"]
    ranked = ranked_outputs(reference)
    for o in outs:
        if o.name in ranked:
            o.ranked = True
            o.note = "; ".join(x for x in (o.note, RANKED_NOTE) if x)
    return AccuracyReport(outs, detection_agreement(reference, got))


def summarise(reports: list[AccuracyReport]) -> AccuracyReport:
    """Several frames as one report: per output the worst SNR, cosine and max error over the frames; detections
    pooled (matches and counts summed)."""
    if len(reports) == 1:
        return reports[0]
    outputs = []
    for k, first in enumerate(reports[0].outputs):
        per = [r.outputs[k] for r in reports]
        outputs.append(OutputAccuracy(first.name, min(o.snr_db for o in per), min(o.cosine for o in per),
                                      max(o.max_abs for o in per), max(o.ref_max_abs for o in per),
                                      next((o.note for o in per if o.note), ""), any(o.ranked for o in per)))
    dets = [r.detections for r in reports if r.detections is not None]
    units = list(dict.fromkeys(d.unit for d in dets))
    unit = units[0] if len(units) == 1 else "; ".join(
        f"{sum(d.unit == u for d in dets)} frame(s): {u}" for u in units)
    pooled = DetectionAgreement(sum(d.float_detections for d in dets), sum(d.int8_detections for d in dets),
                                sum(d.matched for d in dets), unit) if dets else None
    return AccuracyReport(outputs, pooled)
