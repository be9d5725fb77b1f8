"""Virtual time: the scheduler's policy as a discrete-event simulation with task durations from the timing
model, to predict latency and throughput on a board we do not have.

Durations are recomputed from the plan's layer counts (MACs, bytes) for the chosen board, so a build made
for one board can be predicted on another. The CPU figure of a board is the whole CPU's onnxruntime
throughput, so CPU tasks run one at a time unless `cpu_workers` says otherwise.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from pathlib import Path

from fpga_runtime.boards import Board
from fpga_runtime.boards import board as board_by_name
from fpga_runtime.plan import Plan, check_fits, read_plan
from fpga_runtime.prediction import cpu_costs, timing
from fpga_runtime.prediction.shared_ddr import layer_s, unit_bandwidth
from fpga_runtime.run.policy import CPU_WORKERS, Policy, Task, check_counts, default_in_flight, upward_ranks
from fpga_runtime.run.trace import Span

STEADY_FRAMES = (8, 24)   # the steady rate: frames completed between the ends of two runs of at least these
                          # lengths, ramp-up and drain left out (steady_frames)


def steady_frames(compute_units: int) -> tuple[int, int]:
    """The two runs' lengths: STEADY_FRAMES rounded up to whole rounds of the units, so the longer run adds whole
    rounds (8 and 24 frames on 6 units add 2 rounds of 6 frames but count 16 frames: 19 % too fast)."""
    first = compute_units * -(-STEADY_FRAMES[0] // compute_units)
    return first, first + compute_units * -(-(STEADY_FRAMES[1] - STEADY_FRAMES[0]) // compute_units)


@dataclass
class Prediction:
    board: str
    compute_units: int
    cpu_workers: int
    frames: int
    makespan_s: float
    critical_path_s: float          # longest dependency chain of one frame
    lower_bound_s: float            # max(critical path, per resource: earliest start + work / lanes + shortest tail)
    sequential_s: float             # every task of every frame one after the other
    utilisation: dict[str, float]   # per lane: busy time / makespan
    spans: list[Span] = field(default_factory=list, repr=False)
    limited_by: str = "fpga"        # the side whose work per frame, spread over its lanes, is the larger
    steady_fps: float = 0.0         # frames/s of a long stream (steady_frames), the figure the report gives
    clock_mhz: float = 0.0          # the engine clock every FPGA duration assumes

    @property
    def speedup(self) -> float:
        return self.sequential_s / self.makespan_s

    @property
    def fps(self) -> float:
        return self.frames / self.makespan_s

    @property
    def gap_to_bound(self) -> float:
        return self.makespan_s / self.lower_bound_s - 1.0


def clock_mhz(plan: Plan, board: Board) -> float:
    """The build's clock on its own board; on another, the clock `partition` found for the engine there (the
    board's default fabric clock, or the engine's estimated Fmax where lower), else the board's default."""
    if board.name == plan.board:
        return (plan.engine_config or {}).get("clock_mhz", board.clock_mhz)
    return (plan.board_clocks or {}).get(board.name, board.clock_mhz)


def durations_for(plan: Plan, board: Board, compute_units: int = 1) -> dict[str, float]:
    """Engine cycles come from the build (its engine parameters); the clock is `clock_mhz`'s (the build's on its
    own board, the engine's clock there on another), the DDR each unit's share while `compute_units` units run
    frames (shared_ddr.py). CPU subgraphs are timed op by op from the cost table (cpu_costs.py: the build's own,
    measured on the board, where there is one)."""
    clock = clock_mhz(plan, board)
    table = cpu_costs.load(plan.root)
    fpga = [s for s in plan.subgraphs if s.device == "fpga"]
    layers = [layer for s in fpga for layer in s.layers]
    ddr = unit_bandwidth([layer.cycles / (clock * 1e6) for layer in layers], [layer.bytes for layer in layers],
                         compute_units, board.ddr_sustained_gbps * 1e9, len(fpga) * timing.INVOKE_S)
    out = {}
    for s in plan.subgraphs:
        est = s.estimate or {}
        if s.device == "fpga":
            out[s.name] = timing.fpga_subgraph_s([(layer.cycles, layer.bytes) for layer in s.layers], clock,
                                                 est.get("boundary_elements", 0), board, ddr)
        elif "ops" in est:
            out[s.name] = table.subgraph_s(est["ops"], board)
        else:                        # a plan written before op costs
            out[s.name] = timing.cpu_s(est.get("macs", 0), est.get("elements", 0), board)
    return out


def simulate(plan: Plan, durations: dict[str, float], compute_units: int, cpu_workers: int, frames: int,
             in_flight: int) -> tuple[float, list[Span]]:
    policy = Policy(plan, durations, in_flight)
    free = {"cpu": [f"cpu-{i}" for i in range(cpu_workers)], "fpga": [f"fpga-cu{i}" for i in range(compute_units)]}
    events: list[tuple[float, int, Task, str]] = []
    spans: list[Span] = []
    now, admitted, seq = 0.0, 0, 0
    while True:
        while admitted < frames and policy.can_admit():
            policy.admit(admitted)
            admitted += 1
        for task, lane in policy.assign(free):
            end = now + durations[task.subgraph]
            heapq.heappush(events, (end, seq, task, lane))
            seq += 1
            spans.append(Span(task.subgraph, task.frame, lane, now, end))
        if not events:
            break
        now, _, task, lane = heapq.heappop(events)
        free[lane.split("-")[0]].append(lane)
        free[lane.split("-")[0]].sort()
        policy.complete(task)
    return now, spans


def steady_fps(plan, durations: dict[str, float], compute_units: int, cpu_workers: int, in_flight: int) -> float:
    """Frames per second of a long stream: the frames finished between the ends of a short and a longer run."""
    runs = steady_frames(compute_units)
    first, last = (simulate(plan, durations, compute_units, cpu_workers, n, in_flight)[0] for n in runs)
    return (runs[1] - runs[0]) / (last - first)


def limited_by(plan, durations: dict[str, float], cpu_workers: int, compute_units: int) -> str:
    """"cpu" or "fpga": the side whose work per frame, spread over its lanes, is the larger."""
    work = {dev: sum(durations[s.name] for s in plan.subgraphs if s.device == dev) / lanes
            for dev, lanes in (("cpu", cpu_workers), ("fpga", compute_units))}
    return "cpu" if work["cpu"] > work["fpga"] else "fpga"


def _resource_bound(plan: Plan, durations: dict[str, float], device: str, lanes: int, frames: int) -> float:
    """No schedule beats, for any time T: T, plus the work of the `device` tasks that cannot start before T (their
    longest chain from the frame's start reaches T) spread over its lanes, plus the shortest chain that must
    follow the last of them. T = the earliest start of all is the plain resource bound; a later T counts the
    tail of the frame a serial prefix leaves to be shared (e.g. the branches after a long backbone)."""
    tasks = [s for s in plan.subgraphs if s.device == device]
    if not tasks:
        return 0.0
    rank = upward_ranks(plan, durations)
    head: dict[str, float] = {}
    for s in plan.subgraphs:
        head[s.name] = max((head[d] + durations[d] for d in s.depends_on), default=0.0)
    by_head = sorted(tasks, key=lambda s: head[s.name], reverse=True)
    bound, work, tail = 0.0, 0.0, float("inf")
    for s in by_head:                          # the tasks with head >= T, T falling through every head
        work += durations[s.name]
        tail = min(tail, rank[s.name] - durations[s.name])
        bound = max(bound, head[s.name] + frames * work / lanes + tail)
    return bound


def build_compute_units(plan: Plan) -> int:
    return int((plan.engine_config or {}).get("compute_units", 1))


def predict(build_dir: str | Path, compute_units: int | None = None, board: str | None = None,
            cpu_workers: int = CPU_WORKERS, frames: int = 1, in_flight: int | None = None) -> Prediction:
    """Latency and throughput of a build on a board in virtual time; the defaults are `fpga-run run`'s (compute
    units: the build's)."""
    check_counts(compute_units=compute_units, cpu_workers=cpu_workers, frames=frames, in_flight=in_flight)
    plan = read_plan(build_dir)
    compute_units = compute_units or build_compute_units(plan)
    in_flight = in_flight or default_in_flight(compute_units)
    b = board_by_name(board or plan.board)
    check_fits(plan, b.name, compute_units)
    # the DDR is shared by the frames that run at once: these `frames` for the makespan, a long stream for the rate
    running, streaming = min(compute_units, frames, in_flight), min(compute_units, in_flight)
    durations = durations_for(plan, b, running)
    stream = durations if running == streaming else durations_for(plan, b, streaming)
    makespan, spans = simulate(plan, durations, compute_units, cpu_workers, frames, in_flight)
    critical = max(upward_ranks(plan, durations).values())
    bound = max(critical, *(_resource_bound(plan, durations, d, n, frames)
                            for d, n in (("cpu", cpu_workers), ("fpga", compute_units))))
    busy: dict[str, float] = {}
    for s in spans:
        busy[s.lane] = busy.get(s.lane, 0.0) + s.end_s - s.start_s
    lanes_all = [f"fpga-cu{i}" for i in range(compute_units)] + [f"cpu-{i}" for i in range(cpu_workers)]
    return Prediction(b.name, compute_units, cpu_workers, frames, makespan, critical, bound,
                      frames * sum(durations.values()), {lane: busy.get(lane, 0.0) / makespan for lane in lanes_all},
                      spans, limited_by(plan, durations, cpu_workers, compute_units),
                      min(steady_fps(plan, stream, compute_units, cpu_workers, in_flight), _ddr_fps(plan, b)),
                      clock_mhz(plan, b))


def _ddr_fps(plan: Plan, board: Board) -> float:
    """The units share the board's DDR: its sustained bandwidth caps the rate (a schedule with CPU stages between
    FPGA ones can bunch the units' DDR traffic more than shared_ddr.py's mean field assumes)."""
    nbytes = sum(layer.bytes for s in plan.subgraphs if s.device == "fpga" for layer in s.layers)
    return board.ddr_sustained_gbps * 1e9 / nbytes if nbytes else float("inf")


def frame_engine_cycles(plan: Plan, engine_cycles: dict[str, float], compute_units: int) -> float:
    """One frame's wall-clock engine cycles when each FPGA subgraph takes `engine_cycles` (measured on the RTL,
    or `model_engine_cycles`): the runtime's schedule of one frame replayed on `compute_units` units with those
    times, CPU subgraphs, transfers and program starts left out, so that two sources of engine cycles compare
    alone. Subgraphs of parallel branches overlap on different units: the frame takes the longest chain."""
    durations = {s.name: float(engine_cycles.get(s.name, 0.0)) if s.device == "fpga" else 0.0
                 for s in plan.subgraphs}
    return simulate(plan, durations, compute_units, CPU_WORKERS, 1, 1)[0]


def model_engine_cycles(plan: Plan, board: Board, compute_units: int) -> dict[str, float]:
    """The cycle model's engine cycles per FPGA subgraph, each layer's cycles and its DDR bytes at a
    1/`compute_units` share of the board's sustained bandwidth (what each unit of the `verilator` backend is
    given)."""
    clock = clock_mhz(plan, board) * 1e6
    per_cycle = board.ddr_sustained_gbps * 1e9 / clock / compute_units
    return {s.name: sum(layer_s(layer.cycles, layer.bytes / per_cycle) for layer in s.layers)
            for s in plan.subgraphs if s.device == "fpga"}
