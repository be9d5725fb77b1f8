"""One board behind Ray Serve: a replica holds a `Session` on its board (or the board model), takes frames as
they come and runs them in batches of up to `in_flight` through `Session.stream`, so a replica pipelines as
`fpga-run run` does. A board that hangs or fails marks the replica unhealthy: Serve restarts it, and the ingress
sends its requests to another replica."""
from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from ray import serve
from ray.serve import metrics

from fpga_runtime.plan import PlanError, check_feeds
from fpga_runtime.serve.errors import BoardDown, RequestRefused
from fpga_runtime.serve.stats import ReplicaStats

LATENCY_BOUNDARIES_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000]
BATCH_WAIT_S = 0.002


class BoardReplica:
    def __init__(self, build: str, backend: str, build_id: str | None, in_flight: int, simulate: str | None = None,
                 compute_units: int | None = None, frame_ms: float | None = None, cpu_on_head: bool = False,
                 engine_timeout_s: float | None = None):
        """`cpu_on_head`: this board runs only its part of the build (stages.py); the head runs the rest.
        `engine_timeout_s`: a program still running after this long is a hung board (default: the Session's)."""
        if backend == "board-model":
            from fpga_runtime.serve.board_model import BoardModel
            self.model, self.session = BoardModel(build, frame_ms, cpu_on_head), None
            plan = self.model.plan
        else:
            from fpga_runtime.run.session import Session
            self.model = None
            part = None
            if cpu_on_head:
                from fpga_runtime.bundle import checked_plan
                from fpga_runtime.serve.stages import split
                part = split(checked_plan(build)).board
            timeout = {"timeout_s": engine_timeout_s} if engine_timeout_s else {}
            self.session = Session(build, backend, compute_units, slots=in_flight, simulate=simulate, plan=part,
                                   **timeout)
            plan = self.session.plan
        if build_id is not None and plan.build_id != build_id:
            raise PlanError(f"{build}: this board has build {plan.build_id}, the head serves {build_id} (copy the "
                            "same `partition` output to every board)")
        self.plan = plan
        self.backend = backend
        self.replica = serve.get_replica_context().replica_id.unique_id
        self.stats = ReplicaStats()
        self.broken: str | None = None
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="board")
        self._batch.set_max_batch_size(max(1, in_flight))
        self._frames = metrics.Counter("fpga_serve_frames", description="frames this board ran")
        self._latency = metrics.Histogram("fpga_serve_frame_latency_ms", description="frame latency in the replica",
                                          boundaries=LATENCY_BOUNDARIES_MS)
        self._depth = metrics.Gauge("fpga_serve_queue_depth", description="requests waiting or running on the board")

    async def infer(self, feeds: dict[str, np.ndarray]) -> dict:
        """One frame's outputs, with this replica's id and figures (the ingress keeps them for /health)."""
        if self.broken:
            raise BoardDown(f"replica {self.replica}: {self.broken}")
        try:                    # here, so a bad frame is refused alone and never fails a batch (and the board)
            check_feeds(self.plan, feeds)
        except (PlanError, ValueError, TypeError) as exc:
            raise RequestRefused(str(exc)) from None
        t0 = time.perf_counter()
        self.stats.queued += 1
        self._depth.set(self.stats.queued)
        try:
            outputs = await (self.model.infer(feeds) if self.model is not None else self._batch(feeds))
        except BoardDown:
            self.stats.failed += 1
            raise
        finally:
            self.stats.queued -= 1
            self._depth.set(self.stats.queued)
        latency = time.perf_counter() - t0
        self.stats.done(latency)
        self._frames.inc()
        self._latency.observe(latency * 1e3)
        return {"outputs": outputs, "replica": self.replica, "build_id": self.plan.build_id,
                "stats": self.stats.summary()}

    @serve.batch(max_batch_size=4, batch_wait_timeout_s=BATCH_WAIT_S)
    async def _batch(self, frames: list[dict]) -> list[dict]:
        try:
            return await asyncio.get_running_loop().run_in_executor(self.pool, self._run, frames)
        except Exception as exc:            # the board failed: every frame of the batch goes to another replica
            self.broken = f"the board failed ({type(exc).__name__}: {exc})"
            raise BoardDown(f"replica {self.replica}: {self.broken}") from None

    def _run(self, frames: list[dict]) -> list[dict]:
        names = self.session.output_names
        return [dict(zip(names, out)) for out in self.session.stream(frames)]

    def summary(self) -> dict:
        return {"replica": self.replica, "backend": self.backend, "build_id": self.plan.build_id,
                "healthy": self.broken is None, **self.stats.summary()}

    def check_health(self) -> None:
        """Serve calls this periodically; raising restarts the replica (a hung or failed board)."""
        if self.broken:
            raise RuntimeError(self.broken)

    def __del__(self):
        if getattr(self, "session", None) is not None:
            self.session.close()
