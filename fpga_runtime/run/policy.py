"""The scheduling policy shared by the real scheduler and the virtual-time simulator.

Tasks are (frame, subgraph) pairs; a task is ready when the subgraphs it depends on have run for its frame.
Ready tasks are taken by priority: the longest remaining path to the outputs (estimated seconds, the task's
own included), then the older frame. Frames are admitted while fewer than `in_flight` are unfinished; each
admitted frame holds one activation slot of the engine until it finishes.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

from fpga_runtime.plan import Plan

# Defaults shared by `fpga-run run`, `fpga-run predict`, `predict()`, `Session.stream` and the scheduler, so a
# prediction describes the run that the same command line makes. Compute units default to the build's.
CPU_WORKERS = 2
IN_FLIGHT = 2


def default_in_flight(compute_units: int) -> int:
    """Frames in flight by default: one per compute unit and one more for the CPU stages, so that k units are
    all busy as the design-space exploration assumed (it models k frames at once); at least IN_FLIGHT."""
    return max(IN_FLIGHT, compute_units + 1)


def check_counts(**counts: int | None) -> None:
    """Worker, unit, slot and frame counts must be whole numbers >= 1 (None: the default applies)."""
    for name, value in counts.items():
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")


@dataclass(frozen=True, order=True)
class Task:
    frame: int
    subgraph: str


def upward_ranks(plan: Plan, durations: dict[str, float]) -> dict[str, float]:
    rank: dict[str, float] = {}
    successors = {s.name: [] for s in plan.subgraphs}
    for s in plan.subgraphs:
        for d in s.depends_on:
            successors[d].append(s.name)
    for s in reversed(plan.subgraphs):
        rank[s.name] = durations[s.name] + max((rank[x] for x in successors[s.name]), default=0.0)
    return rank


class Policy:
    def __init__(self, plan: Plan, durations: dict[str, float], in_flight: int):
        self.device = {s.name: s.device for s in plan.subgraphs}
        self.index = {s.name: i for i, s in enumerate(plan.subgraphs)}
        self.deps = {s.name: list(s.depends_on) for s in plan.subgraphs}
        self.successors: dict[str, list[str]] = {s.name: [] for s in plan.subgraphs}
        for s in plan.subgraphs:
            for d in s.depends_on:
                self.successors[d].append(s.name)
        self.rank = upward_ranks(plan, durations)
        self.in_flight = in_flight
        self.free_slots = list(range(in_flight))
        self.slot: dict[int, int] = {}
        self.waiting: dict[Task, int] = {}
        self.remaining: dict[int, int] = {}
        self.ready: dict[str, list] = {"cpu": [], "fpga": []}
        self.cancelled: set[int] = set()

    def can_admit(self) -> bool:
        return bool(self.free_slots)

    def admit(self, frame: int) -> int:
        slot = self.free_slots.pop(0)
        self.slot[frame] = slot
        self.remaining[frame] = len(self.deps)
        for name, deps in self.deps.items():
            if deps:
                self.waiting[Task(frame, name)] = len(deps)
            else:
                self._push(Task(frame, name))
        return slot

    def _push(self, task: Task) -> None:
        heapq.heappush(self.ready[self.device[task.subgraph]],
                       (-self.rank[task.subgraph], task.frame, self.index[task.subgraph], task))

    def pop(self, device: str) -> Task | None:
        heap = self.ready[device]
        while heap:
            task = heapq.heappop(heap)[-1]
            if task.frame not in self.cancelled:
                return task
        return None

    def assign(self, free: dict[str, list[str]]) -> list[tuple[Task, str]]:
        """Pair ready tasks with free lanes ("fpga-cu0", "cpu-1", ...), FPGA first, best priority first;
        the lanes handed out are removed from `free`."""
        out = []
        for device in ("fpga", "cpu"):
            while free[device]:
                task = self.pop(device)
                if task is None:
                    break
                out.append((task, free[device].pop(0)))
        return out

    def complete(self, task: Task) -> bool:
        """Marks a task done; True when its frame is finished."""
        for s in self.successors[task.subgraph]:
            key = Task(task.frame, s)
            self.waiting[key] -= 1
            if self.waiting[key] == 0:
                del self.waiting[key]
                self._push(key)
        self.remaining[task.frame] -= 1
        if self.remaining[task.frame] == 0:
            self._release(task.frame)
            return True
        return False

    def cancel(self, frame: int) -> None:
        """Drop a frame's pending tasks (tasks already running finish, their results are ignored)."""
        self.cancelled.add(frame)
        for key in [k for k in self.waiting if k.frame == frame]:
            del self.waiting[key]
        self._release(frame)

    def _release(self, frame: int) -> None:
        if frame in self.slot:
            self.free_slots.append(self.slot.pop(frame))
            self.free_slots.sort()
            self.remaining.pop(frame, None)

    def busy(self) -> bool:
        return bool(self.slot)
