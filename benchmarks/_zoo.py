"""Shared by the benchmarks: build a zoo model and partition it once into a folder."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import models  # noqa: E402
from partitioner.build import PartitionConfig, run_partition  # noqa: E402

SIZES = {"yolov3": 416, "yolov3-tiny": 416, "ssd300-vgg16": 300, "ssd-mobilenet-v1": 300}


def fused_graph(name: str, folder: Path):
    """The zoo model `name` at its benchmark size, imported and fused (the graph the exploration weighs)."""
    from partitioner.frontend.importer import import_model
    from partitioner.passes.pipeline import run_fusion
    path = folder / f"{name}.onnx"
    models.build_to_file(name, path, SIZES[name])
    return run_fusion(import_model(path).graph)


def partitioned(name: str, folder: Path, board: str = "zcu104", **kw):
    path = folder / f"{name}.onnx"
    if not path.exists():
        models.build_to_file(name, path, SIZES[name])
    return run_partition(PartitionConfig(model=path, out_dir=folder / f"build-{name}-{board}", board=board,
                                         picture=False, **kw))
