"""int8 against float: the build's int8 pipeline (reference backend) against the float original, per output and
per FPGA layer."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fpga_runtime.checking.accuracy import AccuracyReport, output_accuracy
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


def int8_accuracy(plan: Plan, image: EngineImage, build_dir: Path, model_path: Path, feeds: dict[str, np.ndarray]
                  ) -> tuple[AccuracyReport, list[LayerAccuracy]]:
    """The int8 pipeline (reference backend) against the float original on one frame: per model output, and per
    FPGA layer against the float partition's same tensor (read back from engine memory), in execution order."""
    want, owner = next(fpga_float_values(plan, [feeds]))
    layers = []
    with Session(build_dir, plan=plan, image=image) as session:
        got = dict(zip(session.output_names, session.run(None, feeds)))
        for name, value in want.items():
            view = session.image.tensors.get(name)
            if name in owner and view is not None:
                acc = output_accuracy(name, value, session.backend.read(view))
                layers.append(LayerAccuracy(name, owner[name], acc.cosine, acc.snr_db))
    if plan.model.get("precision") == "bfloat16":       # onnxruntime's Python API cannot feed the original
        return accuracy_compare(run_plan_on_onnxruntime(plan, feeds), got), layers
    return accuracy_compare(original_outputs(model_path, feeds), got), layers

