"""Run every subgraph of a plan through onnxruntime, in plan order: the float golden of a partitioned model."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort

from .plan import Plan, PlanError


def _session(path: str) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def run_plan_on_onnxruntime(plan: Plan, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    missing = [t.name for t in plan.inputs if t.name not in feeds]
    if missing:
        raise PlanError(f"missing model inputs {missing}")
    values = dict(feeds)
    for sg in plan.subgraphs:
        sess = _session(str(plan.onnx_path(sg)))
        outs = sess.run([t.name for t in sg.outputs], {t.name: values[t.name] for t in sg.inputs})
        values.update(zip((t.name for t in sg.outputs), outs))
    return {t.name: values[t.name] for t in plan.outputs}
