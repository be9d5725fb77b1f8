"""A build cut in three for serving with its CPU pre- and post-processing on the head host (`--cpu-on-head`): the
pre-processing subgraphs, what a board runs (every FPGA subgraph and the CPU subgraphs between them), and the
post-processing subgraphs. Roles make the cut sequential: nothing before a heavy op reads a board result, and
nothing a board runs reads a post-processing result (a post node has no heavy op after it)."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fpga_runtime.onnx_chain import Chain
from fpga_runtime.plan import Plan, TensorSpec


@dataclass
class Stages:
    pre: Plan
    board: Plan
    post: Plan


def _part(plan: Plan, subgraphs: list, later_reads: set[str]) -> Plan:
    names = {s.name for s in subgraphs}
    produced: dict[str, TensorSpec] = {t.name: t for s in subgraphs for t in s.outputs}
    inputs: dict[str, TensorSpec] = {}
    for s in subgraphs:
        for t in s.inputs:
            if t.name not in produced:
                inputs.setdefault(t.name, t)
    outputs = [produced[n] for n in dict.fromkeys(later_reads) if n in produced]
    kept = [replace(s, depends_on=[d for d in s.depends_on if d in names],
                    concurrent_with=[c for c in s.concurrent_with if c in names]) for s in subgraphs]
    return replace(plan, subgraphs=kept, inputs=list(inputs.values()), outputs=outputs)


def split(plan: Plan) -> Stages:
    pre = [s for s in plan.subgraphs if s.device == "cpu" and s.role == "pre"]
    post = [s for s in plan.subgraphs if s.device == "cpu" and s.role == "post"]
    board = [s for s in plan.subgraphs if s not in pre and s not in post]
    model_outputs = {t.name for t in plan.outputs}
    return Stages(_part(plan, pre, _reads(board) | _reads(post) | model_outputs),
                  _part(plan, board, _reads(post) | model_outputs), _part(plan, post, model_outputs))


def _reads(subgraphs: list) -> set[str]:
    return {t.name for s in subgraphs for t in s.inputs}


class CpuStages:
    """The pre and post parts on onnxruntime, for the head host."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.stages = split(plan)
        self._pre = Chain(self.stages.pre) if self.stages.pre.subgraphs else None
        self._post = Chain(self.stages.post) if self.stages.post.subgraphs else None

    def before(self, feeds: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """(every value so far, the board's feeds)."""
        values = self._pre.run(feeds) if self._pre is not None else dict(feeds)
        return values, {t.name: values[t.name] for t in self.stages.board.inputs}

    def after(self, values: dict[str, np.ndarray], board: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        values = {**values, **board}
        if self._post is not None:
            values = self._post.run(values)
        return {t.name: values[t.name] for t in self.plan.outputs}
