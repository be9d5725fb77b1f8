"""onnxruntime on the CPU, made in one place: `cpu_session` for any model, `Chain` for the subgraphs of a plan
run in plan order (the float golden of a partitioned model, calibration's exposed tensors, sensitivity's
probes)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime as ort

from fpga_runtime.plan import Plan, PlanError, SubgraphSpec


def cpu_session(model: str | Path | bytes, optimise: bool = True, threads: int | None = None,
                quiet: bool = True) -> ort.InferenceSession:
    """`optimise=False` keeps the graph as written (ORT_DISABLE_ALL: QDQ semantics, no fused float kernels);
    `threads` pins intra-op threads (a CPU worker runs one)."""
    options = ort.SessionOptions()
    if quiet:
        options.log_severity_level = 3
    if not optimise:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if threads is not None:
        options.intra_op_num_threads = threads
    source = model if isinstance(model, bytes) else str(model)
    try:
        return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    except Exception as exc:          # onnxruntime's own classes (InvalidProtobuf, Fail, ...) for a file it refuses
        if isinstance(model, bytes):
            raise
        reason = str(exc).split(" : ")[-1].strip() or type(exc).__name__
        raise PlanError(f"{model}: onnxruntime cannot load this model ({type(exc).__name__}: {reason[:300]}); a "
                        "corrupt or changed file: copy the build again or partition the model again") from None


class Chain:
    """Every subgraph of a plan as an onnxruntime session, run in plan order over one dict of values.
    `sessions` replaces a subgraph's session and the outputs asked of it (e.g. every node output exposed)."""

    def __init__(self, plan: Plan, optimise: bool = True,
                 sessions: dict[str, tuple[ort.InferenceSession, list[str]]] | None = None):
        self.plan = plan
        self.optimise = optimise
        given = sessions or {}
        self.steps: list[tuple[SubgraphSpec, ort.InferenceSession, list[str]]] = [
            (sg, *given[sg.name]) if sg.name in given else
            (sg, cpu_session(plan.onnx_path(sg), optimise), [t.name for t in sg.outputs])
            for sg in plan.subgraphs]

    def run(self, values: dict[str, np.ndarray], start: int = 0, stop: int | None = None,
            probe: ort.InferenceSession | None = None,
            after: Callable[[SubgraphSpec, list[str], dict[str, np.ndarray]], None] | None = None
            ) -> dict[str, np.ndarray]:
        """Subgraphs `start` to `stop` (excluded; default: to the end), on a copy of `values`; `probe` stands in
        for subgraph `start`'s session (same outputs); `after(sg, names, values)` sees each subgraph's results."""
        values = dict(values)
        for k, (sg, session, names) in enumerate(self.steps[start:stop]):
            session = probe if (k == 0 and probe is not None) else session
            names = [t.name for t in sg.outputs] if (k == 0 and probe is not None) else names
            values.update(zip(names, session.run(names, {t.name: values[t.name] for t in sg.inputs})))
            if after is not None:
                after(sg, names, values)
        return values

    def outputs(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        missing = [t.name for t in self.plan.inputs if t.name not in feeds]
        if missing:
            raise PlanError(f"missing model inputs {missing}")
        values = self.run(feeds)
        return {t.name: values[t.name] for t in self.plan.outputs}


def run_plan_on_onnxruntime(plan: Plan, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return Chain(plan).outputs(feeds)
