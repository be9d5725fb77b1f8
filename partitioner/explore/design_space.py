"""Design-space exploration: the engine parameters (pixels x PE rows x VEC lanes, epilogue width, compute
units; the input window sized to the model's layers) that best serve the objective on a board, within its DSP,
BRAM/URAM and LUT budget; with a target rate, the smallest design that meets it.

FPGA model: one frame's FPGA time T is the sum over layers of layer_s(cycles / clock, bytes / DDR share) plus a
program start per FPGA subgraph (cycle_model.py, timing.py); k compute units process k frames at once and share
the board's sustained DDR bandwidth (fpga_runtime/prediction/shared_ddr.py), so the FPGA alone gives k / T.

Whole frames: given the draft partition's stages (its FPGA and CPU subgraphs and their dependencies), each
design's frames are scheduled in virtual time by the runtime's own policy and defaults (frames in flight,
CPU workers; fpga_runtime/virtual_time.py), which gives the rate `fpga-run run` reaches (CPU pre- and
post-processing included) and one frame's latency. `objective` "throughput" picks the highest rate,
"latency" the shortest frame, "fpga" the most frames a second on the FPGA layers alone (the figure accelerator
vendors quote: where the board's CPU bounds whole frames, fewer larger units may win it and lose the whole-frame
rate, which breaks its ties).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from fpga_runtime import engine_parts
from fpga_runtime.abi import EngineConfig
from fpga_runtime.boards import Board, weight_mixes
from fpga_runtime.cycle_model import layer_bytes, layer_cycles
from fpga_runtime.prediction import timing
from fpga_runtime.prediction.shared_ddr import unit_layer_s
from fpga_runtime.prediction.virtual_time import limited_by, simulate, steady_fps
from fpga_runtime.run.policy import CPU_WORKERS, default_in_flight
from partitioner.engine.geometry import (
    GOLDEN_WIDTH,
    cpu_fed_convs,
    layer_shape,
    sized_buffers,
    winograd_problem,
    winograd_shape,
)
from partitioner.explore.clock import design_clock, overlay_clock
from partitioner.explore.draft import BranchSplit, Stage
from partitioner.explore.resources import Resources, units_with_weights, weights_label
from partitioner.ir.graph import Graph, OpKind, Pool
from partitioner.placement.cost import node_cost

VECS = (8, 16, 32, 64)
ROWS = (8, 16, 32, 64)
UNITS = (1, 2, 3, 4, 5, 6)
PIXELS = (1, 2, 4, 8)
EPILOGUE_PASSES = (1, 2, 4)      # the epilogue at all, half or a quarter of the result lanes
WEIGHT_RAM_SCALES = (2, 4)       # window engines also with 2 or 4 times the weight RAM the largest layer needs: a
                                 # 3x3 layer's group of output-channel tiles then shares one load of its input
                                 # (stride-2 layers are bound by those loads), for BRAM or otherwise idle URAM
OBJECTIVES = ("throughput", "latency", "fpga")


@dataclass(frozen=True)
class _Schedule:
    subgraphs: tuple[Stage, ...]


@dataclass
class Design:
    config: EngineConfig
    resources: Resources
    frame_s: float
    fps: float                   # the FPGA alone
    mac_utilisation: float
    uram_units: int = 0              # the units (the first ones) whose weight RAM is UltraRAM
    layer_s: dict[str, float] = field(default_factory=dict, repr=False)
    ddr_bytes: int = 0               # the FPGA layers' DDR traffic per frame
    frame_fps: float | None = None   # whole frames under the runtime's defaults (with stages)
    latency_s: float | None = None   # one frame alone
    cpu_bound: bool = False          # the CPU stages, not the engine, limit frame_fps
    split: BranchSplit | None = None # how the FPGA regions are cut at their forks (the best for this design)

    @property
    def rate(self) -> float:
        return self.frame_fps if self.frame_fps is not None else self.fps

    @property
    def weights_in(self) -> str:
        return weights_label(self.uram_units, self.config.compute_units)


@dataclass
class Exploration:
    board: Board
    chosen: Design | None
    feasible: list[Design] = field(default_factory=list)
    note: str = ""
    objective: str = "throughput"
    splits: list["SplitOutcome"] = field(default_factory=list)   # per branch split tried, its best design
    in_flight: int | None = None     # the frames in flight rates assume (None: the runtime's default per design)


@dataclass
class _Table:
    names: list[str]
    shape_of: list[int]
    bytes: list[int]
    distinct: list
    pool_width: int


class _Layers:
    """What the exploration asks of every layer for every candidate, computed once per distinct question: a
    node's cost, the buffers and each layer's shape for an array (the same for any number of units and
    epilogue lanes). A model of many identical pieces (a grouped conv's) has hundreds of layers."""

    def __init__(self, graph: Graph, nodes: list[str], winograd: str = "off"):
        self.graph, self.nodes = graph, nodes
        self.winograd = winograd             # `--winograd`: on an engine with the unit, its layers' shapes
        self.costs = {n: node_cost(graph.nodes[n], graph) for n in nodes}
        self.cpu_fed = cpu_fed_convs(graph, nodes)     # their input may be written column-packed
        self._pooled = {n for n in nodes if graph.nodes[n].conv is not None
                        and any(isinstance(step, Pool) for step in graph.nodes[n].conv.epilogue)}
        self.total_macs = sum(c.macs for c in self.costs.values())
        self._tables: dict[int, _Table] = {}
        ids: dict = {}
        self._geometry = [None if g is None else ids.setdefault(g, len(ids))      # an int per distinct geometry
                          for g in (self._geometry_of(n) for n in nodes)]
        self._sized: dict[EngineConfig, EngineConfig] = {}
        self._shapes: dict[EngineConfig, list] = {}
        self._cycles: dict[tuple, int] = {}

    def cycles(self, shape, one_unit: EngineConfig, port_bytes: int) -> int:
        """A layer's cycles on one unit (`one_unit`: the design with compute_units=1; the same for any number)."""
        key = (shape, one_unit, port_bytes)
        if key not in self._cycles:
            self._cycles[key] = layer_cycles(shape, one_unit, port_bytes)
        return self._cycles[key]

    def sized(self, cfg: EngineConfig) -> EngineConfig:
        key = replace(cfg, compute_units=1, epilogue_lanes=0, clock_mhz=0)
        if key not in self._sized:
            self._sized[key] = sized_buffers(self.graph, self.nodes, key)
        got = self._sized[key]
        return replace(cfg, weight_rows=got.weight_rows, window_words=got.window_words,
                       depthwise_rows=got.depthwise_rows, winograd=got.winograd, **engine_parts.built(got))

    def shapes(self, cfg: EngineConfig) -> list:
        """[(node, its LayerShape or None)] under the array of `cfg`."""
        key = replace(cfg, compute_units=1, clock_mhz=0)
        if key not in self._shapes:
            by_geometry: dict[int, object] = {}
            out = []
            for n, geometry in zip(self.nodes, self._geometry):
                if geometry is None:
                    out.append((n, layer_shape(self.graph.nodes[n], self.graph, cfg, n in self.cpu_fed)))
                    continue
                if geometry not in by_geometry:
                    by_geometry[geometry] = self._shape(self.graph.nodes[n], cfg)
                out.append((n, by_geometry[geometry]))
            self._shapes[key] = out
        return self._shapes[key]

    def _shape(self, node, cfg: EngineConfig):
        """A conv's shape; on an engine with the Winograd unit, as a Winograd layer where it is eligible and
        (`auto`) the cycle model makes it faster (the compiler's cosine test comes later)."""
        fed = node.name in self.cpu_fed
        shape = layer_shape(node, self.graph, cfg, fed)
        if not cfg.winograd or self.winograd == "off" or winograd_problem(node, self.graph, cfg) is not None:
            return shape
        wshape = winograd_shape(node, self.graph, cfg)
        one = replace(cfg, compute_units=1)
        return wshape if self.winograd == "all" or layer_cycles(wshape, one) < layer_cycles(shape, one) else shape

    def table(self, cfg: EngineConfig) -> "_Table":
        """The layers with a shape under the array of `cfg`, each by the index of its distinct shape: a design
        is then timed per distinct shape, not per layer (a chain of 10,000 alike convs has one)."""
        shapes = self.shapes(cfg)
        key = id(shapes)                             # one table per list of shapes (kept in self._shapes)
        if key not in self._tables:
            distinct: dict = {}
            names, shape_of, nbytes = [], [], []
            width = GOLDEN_WIDTH
            for n, shape in shapes:
                if shape is None:
                    continue
                names.append(n)
                shape_of.append(distinct.setdefault(id(shape), (len(distinct), shape))[0])   # shared objects
                nbytes.append(layer_bytes(shape, cfg))
                if n in self._pooled:
                    width = max(width, shape.conv_w)         # the fused pool's ring of conv rows
            self._tables[key] = _Table(names, shape_of, nbytes, [v[1] for v in distinct.values()], width)
        return self._tables[key]

    def _geometry_of(self, n: str):
        """What a conv's LayerShape depends on (not its weights): pieces of a grouped conv share it."""
        node = self.graph.nodes[n]
        spec = node.conv
        if node.kind is not OpKind.FUSED_CONV or spec is None:
            return None
        steps = tuple(s if isinstance(s, Pool) else type(s).__name__ for s in spec.epilogue)
        return (spec.form, spec.kernel, spec.strides, spec.pads, spec.dilations, spec.group > 1, spec.upsample, steps,
                self.graph.tensors[node.inputs[0]].shape, self.graph.tensors[node.outputs[0]].shape, n in self.cpu_fed)


def _evaluate(graph: Graph, nodes: list[str], subgraphs: int, cfg: EngineConfig, board: Board,
              layers: _Layers | None = None) -> list[Design]:
    layers = layers or _Layers(graph, nodes)
    if not cfg.weight_rows:
        cfg = layers.sized(cfg)
    frame = subgraphs * timing.INVOKE_S
    wbuf = cfg.weight_rows * cfg.pe_rows * cfg.vec
    one_unit = replace(cfg, compute_units=1)
    table = layers.table(cfg)
    port = board.port_bits // 8
    seconds = [layers.cycles(shape, one_unit, port) / (cfg.clock_mhz * 1e6) for shape in table.distinct]
    times = unit_layer_s([seconds[k] for k in table.shape_of], table.bytes, cfg.compute_units,
                         board.ddr_sustained_gbps * 1e9, frame)
    layer_s = dict(zip(table.names, times))
    frame = sum(times, frame)                        # in layer order, as one loop over the layers adds them
    nbytes, macs, width = sum(table.bytes), layers.total_macs, table.pool_width
    fps = cfg.compute_units / frame                  # within the DDR's bandwidth: the shared model's root keeps it
    peak = cfg.compute_units * cfg.array_macs * cfg.clock_mhz * 1e6
    return [Design(cfg, units_with_weights(cfg, board, wbuf, width, u), frame, fps, macs * fps / peak, u, layer_s,
                   nbytes) for u in weight_mixes(board, cfg.compute_units)]


def schedule(design: Design, stages: list[Stage] | tuple[Stage, ...], memo: dict | None = None,
             in_flight: int | None = None) -> Design:
    """`design` with its steady whole-frame rate (`in_flight` frames in flight, by default the runtime's, and its
    CPU workers; ramp-up and drain left out), one frame's latency, and whether the CPU stages bound the rate.
    `memo` keeps the virtual schedules of designs with the same stages, stage times and units (weights in BRAM or
    URAM: the same layers)."""
    durations = {s.name: s.fixed_s + sum(design.layer_s.get(n, 0.0) for n in s.nodes) for s in stages}
    units = design.config.compute_units
    key = (id(stages), units, tuple(durations.values()))
    if memo is None or key not in memo:
        plan = _Schedule(tuple(stages))
        latency, _ = simulate(plan, durations, units, CPU_WORKERS, 1, 1)
        rate = steady_fps(plan, durations, units, CPU_WORKERS, in_flight or default_in_flight(units))
        found = latency, rate, limited_by(plan, durations, CPU_WORKERS, units) == "cpu"
        if memo is None:
            memo = {}
        memo[key] = found
    latency, rate, cpu_bound = memo[key]
    # the schedule does not see the units share the DDR: the FPGA's own bound caps the rate
    rate = min(rate, design.fps)
    return replace(design, frame_fps=rate, latency_s=latency, cpu_bound=cpu_bound)


SPLIT_GAIN = 0.005   # a split (more program starts, more segments) is kept only where it wins by more than this


@dataclass
class SplitOutcome:
    """A branch split the exploration tried, and the best design under it for the objective."""
    split: BranchSplit
    best: Design


def _split_design(design: Design, split: BranchSplit, base: int, board: Board) -> Design:
    """`design` under `split`: a program start per FPGA subgraph more (or fewer) than the `base` count its FPGA
    time was made with."""
    frame = design.frame_s + (split.fpga_subgraphs - base) * timing.INVOKE_S
    fps = min(design.config.compute_units / frame, board.ddr_sustained_gbps * 1e9 / max(design.ddr_bytes, 1))
    return replace(design, frame_s=frame, fps=fps, mac_utilisation=design.mac_utilisation * fps / design.fps,
                   split=split)


def _better(a: Design, b: Design, objective: str, margin: float = 0.0) -> bool:
    """Is `a` better than `b` on the objective by more than `margin` (the other figure breaks exact ties)?"""
    if objective == "latency":
        return a.latency_s < b.latency_s * (1 - margin) or (a.latency_s == b.latency_s and a.rate > b.rate)
    if objective == "fpga":          # a split's program starts cost FPGA time: whole frames only break ties
        return a.fps > b.fps * (1 + margin) or (a.fps == b.fps and a.rate > b.rate)
    return a.rate > b.rate * (1 + margin) or (a.rate == b.rate and a.latency_s < b.latency_s)


def _schedule_splits(feasible: list[Design], splits: list[BranchSplit], base: int, board: Board,
                     objective: str, in_flight: int | None = None) -> tuple[list[Design], list[SplitOutcome]]:
    """Every design under the first split (none), and under the others where a split could still matter: each
    design keeps the split that serves the objective best (a split only where it beats the cuts before it by
    SPLIT_GAIN), and each split its best design among those scheduled under it (the no-split choice always is).
    A design is not scheduled under the other splits where no split can bring it within TIE of the best
    no-split design, nor beat its own no-split figure: one frame's latency is at least its engine layers'
    time spread over all its units, and no schedule runs more frames a second than the units' layer time
    allows."""
    memo: dict = {}
    plain = [schedule(_split_design(d, splits[0], base, board), splits[0].stages, memo, in_flight) for d in feasible]
    if objective == "latency":
        best = min(d.latency_s for d in plain)
    else:
        best = max(d.rate for d in plain)
    leader = next(d for d in plain if (d.latency_s if objective == "latency" else d.rate) == best)
    chosen: list[Design] = []
    best_of: list[Design | None] = [None] * len(splits)
    for d in plain:
        work = sum(d.layer_s.values()) / d.config.compute_units
        if objective == "latency":
            hopeless = work >= best * (1 + TIE) or work >= d.latency_s * (1 - SPLIT_GAIN)
        else:
            hopeless = not work or 1 / work <= best * (1 - TIE) or 1 / work <= d.rate * (1 + SPLIT_GAIN)
        if hopeless and d is not leader:
            chosen.append(d)
            continue
        pick = d
        for i, sp in enumerate(splits):
            o = d if i == 0 else schedule(_split_design(d, sp, base, board), sp.stages, memo, in_flight)
            if i and _better(o, pick, objective, SPLIT_GAIN):
                pick = o
            if best_of[i] is None or _better(o, best_of[i], objective):
                best_of[i] = o
        chosen.append(pick)
    return chosen, [SplitOutcome(sp, b) for sp, b in zip(splits, best_of)]


def describe(d: Design) -> str:
    return d.config.describe()


def unit_resources(graph: Graph, nodes: list[str], subgraphs: int, cfg: EngineConfig, boards) -> dict[str, dict]:
    """One compute unit of this engine on every board of the catalog, weights in block RAM, and on parts with
    UltraRAM (`uram_weights`) the memories of a unit with its weights there: recorded in the plan so `fpga-run
    predict --board` can refuse a board it does not fit with any mix of the two (`check_fits`)."""
    from dataclasses import asdict, replace
    out = {}
    for b in boards:
        if cfg.dsp_clock == 2 and b.dsp_clock_2x_problem:
            continue                 # no such engine there (check_fits refuses the board)
        designs = _evaluate(graph, nodes, subgraphs, replace(cfg, compute_units=1, clock_mhz=b.clock_mhz), b)
        by_memory = {d.uram_units: d.resources for d in designs}
        out[b.name] = asdict(by_memory[0])
        if 1 in by_memory:
            out[b.name]["uram_weights"] = {"bram36": by_memory[1].bram36, "uram": by_memory[1].uram}
    return out


def check_fixed(graph: Graph, nodes: list[str], subgraphs: int, cfg: EngineConfig, board: Board) -> str | None:
    """Why an engine fixed by hand (--engine, --compute-units) does not fit the board, or None where it does
    (weights in BRAM or, on parts with it, UltraRAM)."""
    designs = _evaluate(graph, nodes, subgraphs, cfg, board)
    if any(d.resources.fits(board) for d in designs):
        return None
    over = "; ".join(designs[0].resources.over_budget(board))
    return f"engine {describe(designs[0])} does not fit {board.name}: needs {over}"


def explore(graph: Graph, fpga_nodes: list[str], subgraphs: int, board: Board, target_fps: float | None = None,
            units: tuple[int, ...] = UNITS, objective: str = "throughput", stages: list[Stage] | None = None,
            clock_mhz: float | None = None, splits: list[BranchSplit] | None = None,
            fixed: EngineConfig | None = None, in_flight: int | None = None, dsp_clock: int = 1,
            winograd: str = "off") -> Exploration:
    """The design for `objective` among those that fit; with `stages` (one draft partition) or `splits` (the
    ways of cutting the FPGA regions at their forks, branch_splits()), rates are whole frames' (`schedule`), else
    the FPGA's alone, and with `splits` each design is scheduled under each and keeps its best. `subgraphs`: the
    FPGA subgraphs the FPGA time counts program starts for (with `splits`, the first's). Each design runs at its
    `design_clock`, or at `clock_mhz` where the user fixes it; `fixed` weighs the splits for one engine only.
    `in_flight`: the frames in flight whole-frame rates assume (None: the runtime's default for each design).
    `dsp_clock` 2: every candidate's array DSPs at twice its clock (`--dsp-clock 2x`), only where asked.
    `winograd` (`--winograd all|auto`): window-path candidates also with the Winograd unit, its resources and its
    layers' cycles."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, not {objective!r}")
    layers = _Layers(graph, fpga_nodes, winograd)
    if fixed is not None:
        sized = [fixed if fixed.weight_rows else layers.sized(fixed)]
    else:
        sized = _candidates(board, units, clock_mhz, layers, dsp_clock, winograd != "off")
    designs = [d for c in sized for d in _evaluate(graph, fpga_nodes, subgraphs, c, board, layers)]
    feasible = [d for d in designs if d.resources.fits(board)] or (designs if fixed is not None else [])
    if not feasible:
        smallest = min(designs, key=lambda d: len(d.resources.over_budget(board)) + d.resources.dsp / 1e6)
        return Exploration(board, None, [], f"no engine design fits {board.name}: the smallest, {describe(smallest)}, "
                                            f"needs {'; '.join(smallest.resources.over_budget(board))}")
    if stages and not splits:
        splits = [BranchSplit(math.inf, tuple(stages), subgraphs, 0)]
    outcomes: list[SplitOutcome] = []
    if splits:
        feasible, outcomes = _schedule_splits(feasible, splits, subgraphs, board, objective, in_flight)
    what = "whole frames" if splits else "the FPGA layers"
    if target_fps is not None:
        meeting = [d for d in feasible if d.rate >= target_fps]
        if meeting:
            best = min(meeting, key=lambda d: (d.resources.dsp, d.resources.bram36 + 8 * d.resources.uram,
                                               d.resources.lut))
            return Exploration(board, best, feasible, f"smallest design reaching {target_fps:g} fps ({what})",
                               objective, outcomes, in_flight)
        note = f"no design reaches {target_fps:g} fps; the fastest one is chosen"
    elif objective == "latency":
        note = f"shortest frame ({what}) within the budget"
    elif objective == "fpga":
        note = "highest FPGA frames/s (the engine layers alone) within the budget"
    else:
        note = f"highest throughput ({what}) within the budget"
    exploration = Exploration(board, None, feasible, note, objective, outcomes, in_flight)
    exploration.chosen = ranked(exploration)[0]
    return exploration


def _candidates(board: Board, units: tuple[int, ...], clock_mhz: float | None, layers: _Layers,
                dsp_clock: int = 1, winograd: bool = False) -> list[EngineConfig]:
    configs = [EngineConfig(vec=v, pe_rows=r, pixels=px, compute_units=k, clock_mhz=board.clock_mhz,
                            epilogue_lanes=max(v, r) // p if p > 1 else 0, dsp_clock=dsp_clock)
               for v in VECS for r in ROWS for px in PIXELS for p in EPILOGUE_PASSES for k in units
               if k * px * r * v <= board.dsp * board.int8_macs_per_dsp * dsp_clock]   # the array alone must fit
    configs = [c for c in configs if c.dsp_clock_problem() is None]     # the 2x array's shape rule (abi.py)
    if winograd:                         # each window-path design also with the Winograd unit
        configs += [replace(c, winograd=True) for c in configs if c.pixels > 1]
    # each design at the clock it reaches: the board's, or the RTL's estimated Fmax where lower (clock.py)
    configs = [replace(c, clock_mhz=overlay_clock(board, clock_mhz, c.dsp_clock) if clock_mhz else
                       design_clock(board, c)[0]) for c in configs]
    sized = [layers.sized(c) for c in configs]
    # where the model has depthwise layers the window path would take, also try the engine without that logic
    # (its LUTs against the depthwise layers' speed)
    sized += [replace(c, depthwise_rows=False) for c in sized if c.depthwise_rows]
    sized += [replace(c, weight_rows=c.weight_rows * k) for c in sized if c.pixels > 1 for k in WEIGHT_RAM_SCALES]
    return sized


TIE = 0.01       # designs within 1 % on the objective count as equal; the other figure of merit decides


def _latency(d: Design) -> float:
    return d.latency_s if d.latency_s is not None else d.frame_s


def _order_key(d: Design, objective: str, best: float):
    """Sort key: the objective up to TIE, then the other objective, then the smaller design. Where the CPU
    bounds every design's rate, the fastest engine still wins, not the smallest."""
    if objective == "fpga":
        if d.fps >= best * (1 - TIE):
            return 0, -d.rate, _latency(d), d.resources.dsp
        return 1, -d.fps, -d.rate, d.resources.dsp
    if objective == "latency":
        if _latency(d) <= best * (1 + TIE):
            return 0, -d.rate, _latency(d), d.resources.dsp
        return 1, _latency(d), -d.rate, d.resources.dsp
    if d.rate >= best * (1 - TIE):
        return 0, -d.fps, _latency(d), d.resources.dsp
    return 1, -d.rate, _latency(d), d.resources.dsp


def ranked(exploration: Exploration) -> list[Design]:
    """The feasible designs best first by the exploration's objective, each engine once (its weights in
    whichever memory ranks first)."""
    objective = exploration.objective
    best = (min(_latency(d) for d in exploration.feasible) if objective == "latency"
            else max(d.fps for d in exploration.feasible) if objective == "fpga"
            else max(d.rate for d in exploration.feasible))
    order = sorted(exploration.feasible, key=lambda d: _order_key(d, objective, best))
    seen, out = set(), []
    for d in order:
        if d.config not in seen:
            seen.add(d.config)
            out.append(d)
    return out
