"""Class names by id, for labels drawn on detections: the model's own (ultralytics metadata, recorded in the plan),
COCO's 80, torchvision's 91 COCO ids or a user's file (`--names coco|coco91|FILE`)."""
from __future__ import annotations

import json
from pathlib import Path

from fpga_runtime.plan import small_text

MAX_CLASSES = 100_000
NAME_FILE_BYTES = 16 << 20

COCO = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
    "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee",
    "skis", "snowboard", "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
    "tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
    "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch",
    "potted plant", "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone",
    "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors", "teddy bear",
    "hair drier", "toothbrush",
)


_COCO91_GAPS = (12, 26, 29, 30, 45, 66, 68, 69, 71, 83)


def coco91() -> list[str]:
    """torchvision's COCO category ids: 0 the background, the 80 classes at their original ids 1..90 (the ids
    COCO left unused are "N/A")."""
    out, names = ["__background__"], iter(COCO)
    for i in range(1, 91):
        out.append("N/A" if i in _COCO91_GAPS else next(names))
    return out


class NamesError(ValueError):
    """A --names value that gives no list of class names."""


def names_by_id(names) -> list[str] | None:
    """A list of names, or a mapping id -> name (ids may skip: the gaps are named by their id); None for
    anything else, or ids past MAX_CLASSES."""
    if isinstance(names, dict) and names:
        try:
            ids = {int(k): str(v) for k, v in names.items()}
        except (TypeError, ValueError):
            return None
        if min(ids) < 0 or max(ids) >= MAX_CLASSES:
            return None
        return [ids.get(i, str(i)) for i in range(max(ids) + 1)]
    if isinstance(names, (list, tuple)) and names and len(names) <= MAX_CLASSES \
            and all(isinstance(v, str) for v in names):
        return list(names)
    return None


def read_names(spec: str) -> list[str]:
    """`coco` (80 ids, ultralytics and Darknet), `coco91` (torchvision's ids), or a file: one name per line
    (Darknet's .names, .txt), a JSON list or {id: name}, or an ultralytics data YAML's `names:` (list or mapping)."""
    if spec.lower() == "coco":
        return list(COCO)
    if spec.lower() == "coco91":
        return coco91()
    path = Path(spec)
    try:
        text = small_text(path, NAME_FILE_BYTES)
    except (OSError, ValueError) as exc:
        raise NamesError(f"{spec}: not 'coco' and no readable file of class names ({exc})") from None
    if path.suffix.lower() == ".json":
        try:
            found = names_by_id(json.loads(text))
        except json.JSONDecodeError as exc:
            raise NamesError(f"{spec}: not JSON ({exc})") from None
    elif path.suffix.lower() in (".yaml", ".yml"):
        found = names_by_id(_yaml_names(spec, text))
    else:
        found = [line.strip() for line in text.splitlines() if line.strip()] or None
    if not found:
        raise NamesError(f"{spec}: holds no class names (one per line, a JSON list or {{id: name}}, or a YAML "
                         "`names:`)")
    return found


def _yaml_names(spec: str, text: str):
    try:
        import yaml
    except ImportError:
        raise NamesError(f"{spec}: reading YAML needs PyYAML (pip install pyyaml), or give the names one per "
                         "line in a .txt file") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise NamesError(f"{spec}: not YAML ({exc})") from None
    return data.get("names") if isinstance(data, dict) else None
