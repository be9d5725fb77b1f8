"""int8 against float: the build's int8 pipeline (reference backend) against the float original, per output and
per FPGA layer."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fpga_runtime.checking.accuracy import AccuracyReport, output_accuracy, summarise
from fpga_runtime.checking.accuracy import compare as accuracy_compare
from fpga_runtime.checking.frames import original_outputs
from fpga_runtime.engine_image import EngineImage
from fpga_runtime.onnx_chain import run_plan_on_onnxruntime
from fpga_runtime.plan import Plan
from fpga_runtime.run.session import Session
from partitioner.engine.calibration import fpga_float_values


@dataclass
class LayerAccuracy:
    tensor: str                # ONNX name of the layer's output
    subgraph: str
    cosine: float
    snr_db: float


def int8_accuracy(plan: Plan, image: EngineImage, build_dir: Path, model_path: Path,
                  frames: list[dict[str, np.ndarray]], echo=lambda s: None
                  ) -> tuple[AccuracyReport, list[LayerAccuracy]]:
    """The int8 pipeline (reference backend) against the float original on `frames`: per model output (the worst
    frame's figures, detections pooled), and per FPGA layer against the float partition's same tensor (read back
    from engine memory), on the first frame, in execution order. A bfloat16 original takes no numpy feed: the float
    partition (the model widened to float32) stands for it."""
    reports, layers = [], []
    with Session(build_dir, plan=plan, image=image) as session:
        for k, (feeds, (want, owner)) in enumerate(zip(frames, fpga_float_values(plan, frames))):
            got = dict(zip(session.output_names, session.run(None, feeds)))
            if k == 0:
                for name, value in want.items():
                    view = session.image.tensors.get(name)
                    if name in owner and view is not None:
                        acc = output_accuracy(name, value, session.backend.read(view))
                        layers.append(LayerAccuracy(name, owner[name], acc.cosine, acc.snr_db))
            float_out = (original_outputs(model_path, feeds) if plan.original_takes_numpy
                         else run_plan_on_onnxruntime(plan, feeds))
            reports.append(accuracy_compare(float_out, got))
            if len(frames) > 10 and (k + 1) % 10 == 0:
                echo(f"accuracy: {k + 1}/{len(frames)} frames")
    return summarise(reports), layers
