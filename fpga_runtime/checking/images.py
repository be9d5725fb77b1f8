"""Detections in pictures: boxes mapped back to the picture (pictures into models: preprocess.py), drawn, or a
probability map tinted over it, and written as JSON."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from fpga_runtime.preprocess import Fit


def class_offset(scores: np.ndarray, selected: np.ndarray) -> int:
    """NMS reports class k of the scores it was given; a model that dropped a background column first (SSD)
    reports k for column k + 1 of its scores output. The right column is the one whose scores passed NMS's
    threshold: pick the offset (0 or 1) under which the selected boxes score highest."""
    if len(selected) == 0 or scores.ndim != 3:
        return 0
    n, c, i = selected[:, 0], selected[:, 1], selected[:, 2]
    best, offset = -1.0, 0
    for k in (0, 1):
        if np.max(c) + k < scores.shape[-1]:
            total = float(np.sum(scores[n, i, c + k]))
            if total > best:
                best, offset = total, k
    return offset


def detection_list(boxes: np.ndarray, scores: np.ndarray | None, selected: np.ndarray, fit: Fit | None,
                   frame: int = 0) -> list[dict]:
    """The NMS selections of one batch element as records with boxes in the picture's pixels."""
    rows = selected[selected[:, 0] == frame] if len(selected) else selected
    offset = class_offset(scores, selected) if scores is not None else 0
    out = []
    for n, c, i in rows:
        box = boxes[int(n), int(i)]
        box = fit.to_image(box) if fit is not None else np.asarray(box, np.float64)
        score = float(scores[int(n), int(i), int(c) + offset]) if scores is not None else None
        out.append({"class": int(c), "score": score, "box": [round(float(v), 2) for v in box]})
    return out


class PictureDetections:
    """How a build's outputs hold detections, found once from one frame's outputs: NMS outputs (the zoo's, with a
    box list and selected indices), post-processed lists (torchvision's boxes, scores, labels), or a raw YOLO head
    decoded as ultralytics' predict does. `of` gives one frame's as records in the picture's pixels, at least
    `conf` where they carry scores (and, for a raw head, class-wise NMS at `iou`), at most `max_det`."""

    def __init__(self, outputs: dict[str, np.ndarray]):
        from fpga_runtime.checking.detections import find_detection_outputs, post_processed, raw_yolo_head
        self.nms = find_detection_outputs(outputs)
        self.post = post_processed(outputs) if self.nms is None else None
        self.head = raw_yolo_head(outputs) if self.nms is None and self.post is None else None

    @property
    def found(self) -> bool:
        return self.nms is not None or self.post is not None or self.head is not None

    def of(self, out: dict[str, np.ndarray], fit: Fit | None, class_names: list[str] | None = None,
           conf: float = 0.25, iou: float = 0.7, max_det: int = 300) -> list[dict]:
        from fpga_runtime.checking.detections import decode_yolo

        def to_image(box):
            return [round(float(v), 2) for v in (fit.to_image(box) if fit is not None else box)]

        if self.head is not None:
            found = [{"class": c, "score": round(score, 4), "box": to_image(box)}
                     for c, score, box in decode_yolo(self.head, out[self.head.name], conf, iou, max_det)]
        elif self.post is not None:
            boxes, scores, labels = self.post
            found = [{"class": int(c), "score": None if scores is None else round(float(out[scores][i]), 4),
                      "box": to_image(out[boxes][i].astype(np.float64))}
                     for i, c in enumerate(out[labels]) if scores is None or out[scores][i] >= conf][:max_det]
        elif self.nms is not None:
            boxes, selected = self.nms
            scores = next((n for n, v in out.items() if v.dtype.kind == "f" and v.ndim == 3 and n != boxes), None)
            found = detection_list(out[boxes], out[scores] if scores else None, out[selected], fit)
        else:
            return []
        for d in found:
            c = d["class"]
            d["name"] = class_names[c] if class_names and 0 <= c < len(class_names) else f"class {c}"
        return found


def draw_detections(picture, detections: list[dict], path: Path) -> Path:
    from PIL import ImageDraw
    img = picture.copy()
    pen = ImageDraw.Draw(img)
    width = max(2, round(max(img.size) / 300))
    for d in detections:
        colour = _PALETTE[d["class"] % len(_PALETTE)]
        x1, y1, x2, y2 = d["box"]
        pen.rectangle([x1, y1, x2, y2], outline=colour, width=width)
        label = d.get("name") or f"class {d['class']}"
        label += f" {d['score']:.2f}" if d["score"] is not None else ""
        left, top, right, bottom = pen.textbbox((x1, y1), label)
        top_y = y1 - (bottom - top) - 2 if y1 - (bottom - top) - 2 >= 0 else y1
        pen.rectangle([x1, top_y, x1 + (right - left) + 4, top_y + (bottom - top) + 2], fill=colour)
        pen.text((x1 + 2, top_y), label, fill="white")
    img.save(path)
    return path


def draw_map(picture, prob: np.ndarray, fit: Fit, input_size: tuple[int, int], threshold: float, path: Path
             ) -> tuple[Path, float]:
    """A probability map [H, W] (a text or segmentation detector's, in model-input geometry) laid over the
    picture: the pixels above `threshold` tinted. Returns the file and the share of the picture's pixels tinted."""
    from PIL import Image
    in_w, in_h = input_size
    rows, cols = prob.shape
    u = (np.arange(fit.width) + 0.5) * fit.sx + fit.pad_x                  # picture pixel -> model-input pixel
    v = (np.arange(fit.height) + 0.5) * fit.sy + fit.pad_y
    c = np.clip((u * cols / in_w).astype(np.int64), 0, cols - 1)
    r = np.clip((v * rows / in_h).astype(np.int64), 0, rows - 1)
    above = prob[np.ix_(r, c)] > threshold
    img = np.asarray(picture.convert("RGB"), np.float32).copy()
    img[above] = 0.45 * img[above] + 0.55 * np.array([255, 40, 40], np.float32)
    Image.fromarray(img.astype(np.uint8)).save(path)
    return path, float(above.mean())


def write_detections(detections: list[dict], fit: Fit | None, path: Path) -> Path:
    record = {"boxes": "x1, y1, x2, y2 in pixels of the original picture" if fit else "model-input pixels",
              "fit": None if fit is None else fit.__dict__, "detections": detections}
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


_PALETTE = ["#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#008080", "#9a6324", "#800000", "#808000",
            "#000075"]
