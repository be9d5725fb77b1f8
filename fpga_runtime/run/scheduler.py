"""The concurrent scheduler: runs the subgraphs of many frames on CPU worker threads and FPGA compute units.

Independent branches run at once (YOLOv3's heads on separate compute units while the CPU post-processes what
is ready) and frames pipeline: frame k+1's pre-processing and FPGA work overlap frame k's post-processing, at
most `in_flight` frames at a time, each in its own activation slot of the engine. Results do not depend on
the interleaving: every frame's tensors are its own.
"""
from __future__ import annotations

import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Protocol

import numpy as np

from fpga_runtime.plan import Plan, PlanError, SubgraphSpec, check_feeds
from fpga_runtime.run.policy import CPU_WORKERS, IN_FLIGHT, Policy, Task, check_counts
from fpga_runtime.run.trace import Span


class TaskError(Exception):
    """A subgraph failed or hung; its frame was cancelled."""

    def __init__(self, task: Task, reason: str):
        self.task = task
        super().__init__(f"frame {task.frame}, subgraph {task.subgraph!r}: {reason}")


@dataclass
class _Running:
    task: Task
    lane: str
    start: float


SPAN_WINDOW = 20_000      # spans a stream keeps (the most recent): a day at 30 fps must not grow without bound


@dataclass
class ScheduleStats:
    """The spans of a run (all of them, or the most recent `window` of a long stream) and running totals."""
    window: int | None = SPAN_WINDOW
    spans: deque = field(default_factory=deque)
    frames: int = 0
    tasks: int = 0
    nonfinite: int = 0          # NaN / infinite input values seen (see check_feeds)
    wall_s: float = 0.0

    def __post_init__(self):
        self.spans = deque(self.spans, maxlen=self.window)

    def add(self, span: Span) -> None:
        self.spans.append(span)
        self.tasks += 1


class SubgraphRunner(Protocol):
    """What the scheduler needs of a session: the plan, the backend's unit and slot counts (None: CPU only), and
    one subgraph of one frame run on a given compute unit and activation slot."""
    plan: Plan
    refuse_nonfinite: bool          # inputs with NaN or infinities are refused (else counted)
    backend: Any

    def run_subgraph(self, sg: SubgraphSpec, values: dict[str, np.ndarray], unit: int = 0, slot: int = 0
                     ) -> dict[str, np.ndarray]: ...


def estimated_durations(session: SubgraphRunner) -> dict[str, float]:
    out = {}
    for s in session.plan.subgraphs:
        est = s.estimate or {}
        out[s.name] = est.get("fpga_s") if s.device == "fpga" and est.get("fpga_s") else est.get("cpu_s", 1e-4)
    return out


class Scheduler:
    def __init__(self, session: SubgraphRunner, cpu_workers: int = CPU_WORKERS, compute_units: int | None = None,
                 in_flight: int = IN_FLIGHT, task_timeout_s: float = 600.0, keep_spans: int | None = SPAN_WINDOW):
        """`keep_spans`: the spans kept for traces (the most recent; None: every one, for runs of given frames)."""
        check_counts(cpu_workers=cpu_workers, compute_units=compute_units, in_flight=in_flight)
        self.session = session
        self.cpu_workers = cpu_workers
        backend = session.backend
        self.units = compute_units or (backend.units if backend else 1)
        if backend is not None and (self.units > backend.units or in_flight > backend.slots):
            raise ValueError(f"the session's backend has {backend.units} compute unit(s) and {backend.slots} "
                             f"activation slot(s); asked for {self.units} compute unit(s) and {in_flight} frame(s) "
                             "in flight")
        self.in_flight = in_flight
        self.timeout_s = task_timeout_s
        self.stats = ScheduleStats(keep_spans)

    def _run_task(self, sg_name: str, inputs: dict[str, np.ndarray], unit: int, slot: int) -> dict[str, np.ndarray]:
        return self.session.run_subgraph(self.session.plan.subgraph(sg_name), inputs, unit, slot)

    def stream(self, frames: Iterable[dict[str, np.ndarray]]) -> Iterator[dict[str, np.ndarray]]:
        """Outputs of each frame, in frame order. A failing frame (or one whose inputs are refused) raises when its
        turn comes: the frames before it are delivered first."""
        plan = self.session.plan
        policy = Policy(plan, estimated_durations(self.session), self.in_flight)
        source = iter(frames)
        exhausted = False
        values: dict[int, dict[str, np.ndarray]] = {}
        finished: dict[int, dict[str, np.ndarray] | TaskError] = {}
        next_out = admitted = 0
        refused: tuple[int, Exception] | None = None
        cpu_pool = ThreadPoolExecutor(self.cpu_workers, thread_name_prefix="cpu")
        unit_pools = [ThreadPoolExecutor(1, thread_name_prefix=f"fpga{u}") for u in range(self.units)]
        free = {"cpu": [f"cpu-{i}" for i in range(self.cpu_workers)],
                "fpga": [f"fpga-cu{i}" for i in range(self.units)]}
        running: dict[Future, _Running] = {}
        t0 = time.perf_counter()
        try:
            while True:
                while not exhausted and policy.can_admit():
                    try:
                        feeds = next(source, None)
                        if feeds is None:
                            exhausted = True
                            break
                        self.stats.nonfinite += check_feeds(plan, feeds, self.session.refuse_nonfinite)
                    except (PlanError, ValueError, TypeError) as exc:
                        refused = (admitted, exc)        # raised once every frame before it is out
                        exhausted = True
                        break
                    policy.admit(admitted)
                    values[admitted] = dict(feeds)
                    admitted += 1
                for task, lane in policy.assign(free):
                    sg = plan.subgraph(task.subgraph)
                    have = values[task.frame]
                    inputs = {t.name: have[t.name] for t in sg.inputs if t.name in have}
                    unit = int(lane[len("fpga-cu"):]) if lane.startswith("fpga") else 0
                    pool = unit_pools[unit] if lane.startswith("fpga") else cpu_pool
                    fut = pool.submit(self._run_task, task.subgraph, inputs, unit, policy.slot[task.frame])
                    running[fut] = _Running(task, lane, time.perf_counter())
                while next_out in finished:
                    result = finished.pop(next_out)
                    values.pop(next_out, None)
                    next_out += 1
                    if isinstance(result, TaskError):
                        raise result
                    self.stats.frames += 1
                    yield result
                if refused is not None and next_out == refused[0]:
                    raise refused[1]
                if not running:
                    if exhausted and not policy.busy():
                        break
                    if not policy.busy():
                        continue
                    raise RuntimeError("scheduler stalled: no task running and none ready")
                oldest = min(r.start for r in running.values())
                done, _ = wait(running, timeout=max(0.0, oldest + self.timeout_s - time.perf_counter()),
                               return_when=FIRST_COMPLETED)
                now = time.perf_counter()
                for fut in done:
                    r = running.pop(fut)
                    free[r.lane.split("-")[0]].append(r.lane)
                    self.stats.add(Span(r.task.subgraph, r.task.frame, r.lane, r.start - t0, now - t0))
                    if r.task.frame in policy.cancelled:
                        continue
                    exc = fut.exception()
                    if exc is not None:
                        finished[r.task.frame] = TaskError(r.task, f"{type(exc).__name__}: {exc}")
                        policy.cancel(r.task.frame)
                        continue
                    values[r.task.frame].update(fut.result())
                    if policy.complete(r.task):
                        out = values[r.task.frame]
                        finished[r.task.frame] = {t.name: out[t.name] for t in plan.outputs}
                for fut, r in list(running.items()):
                    if now - r.start > self.timeout_s and r.task.frame not in policy.cancelled:
                        finished[r.task.frame] = TaskError(r.task, f"did not finish within {self.timeout_s} s")
                        policy.cancel(r.task.frame)
                        del running[fut]          # its worker stays busy; the lane is not handed out again
        finally:
            self.stats.wall_s = time.perf_counter() - t0
            cpu_pool.shutdown(wait=False, cancel_futures=True)
            for p in unit_pools:
                p.shutdown(wait=False, cancel_futures=True)

    def run(self, frames: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
        return list(self.stream(frames))
