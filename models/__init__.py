"""Model zoo: builders that write ONNX files with seeded weights (nothing is downloaded)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import onnx

from models.builder import GraphBuilder
from models.small import classifier, resblock, two_branch
from models.ssd import ssd300_vgg16, ssd_mobilenet_v1
from models.yolo import yolov3, yolov3_tiny

Builder = Callable[..., tuple[onnx.ModelProto, GraphBuilder]]

ZOO: dict[str, tuple[Builder, int]] = {
    "yolov3": (yolov3, 416),
    "yolov3-tiny": (yolov3_tiny, 416),
    "ssd300-vgg16": (ssd300_vgg16, 300),
    "ssd-mobilenet-v1": (ssd_mobilenet_v1, 300),
    "resblock": (resblock, 16),
    "two-branch": (two_branch, 16),
    "classifier": (classifier, 16),
}


def build(name: str, size: int | None = None, batch: int = 1, seed: int = 0) -> tuple[onnx.ModelProto, GraphBuilder]:
    if name not in ZOO:
        raise KeyError(f"unknown model {name!r}; the zoo has {', '.join(ZOO)}")
    fn, default = ZOO[name]
    return fn(size=size or default, batch=batch, seed=seed)


def build_to_file(name: str, path: str | Path, size: int | None = None, batch: int = 1, seed: int = 0
                  ) -> GraphBuilder:
    model, b = build(name, size, batch, seed)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return b
