"""A stand-in board for load tests on one machine: each frame takes the build's predicted latency, frames start
one predicted period apart (the board's steady rate, from `fpga_runtime.predict`), and the answer is one result
recorded on the reference backend when the replica starts. Waiting is asyncio sleep, so many simulated boards
share two cores; what a load test measures is the serving path, not the host running the model."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np

from fpga_runtime.checking.frames import random_frame
from fpga_runtime.plan import read_plan
from fpga_runtime.prediction.virtual_time import predict
from fpga_runtime.run.session import Session


class BoardModel:
    """`frame_ms` fixes the period and latency (a benchmark's fixed per-frame board time); by default they are
    the prediction's for the build's board."""

    def __init__(self, build: str | Path, frame_ms: float | None = None, board_part: bool = False):
        self.plan = read_plan(build)
        if frame_ms is not None:
            self.period_s = self.latency_s = frame_ms / 1e3
        else:
            one = predict(build)
            self.latency_s = one.makespan_s
            self.period_s = 1.0 / one.steady_fps
        frame = random_frame(self.plan, 0)
        if board_part:                      # --cpu-on-head: the board's part only, fed as the head feeds it
            from fpga_runtime.serve.stages import CpuStages
            cpu = CpuStages(self.plan)
            _, frame = cpu.before(frame)
            self.plan = cpu.stages.board
        with Session(build, "reference", plan=self.plan) as session:
            self.recorded = dict(zip(session.output_names, session.run(None, frame)))
        self._next_start = 0.0

    async def infer(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The feeds are the replica's, already checked against `plan`."""
        now = time.monotonic()
        start = max(now, self._next_start)
        self._next_start = start + self.period_s
        await asyncio.sleep(start + self.latency_s - now)
        return self.recorded
