"""`partition` as a list of named steps, each timed and reported, each result inspectable."""
from __future__ import annotations

import enum
import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import onnx

from fpga_runtime.abi import EngineConfig
from fpga_runtime.accuracy import AccuracyReport
from fpga_runtime.boards import BOARDS, BUDGET
from fpga_runtime.boards import board as board_by_name
from fpga_runtime.engine_image import ENGINE_DIR, EngineImage
from fpga_runtime.frames import random_frame
from fpga_runtime.plan import Plan

from .calibration_data import load_frames
from .cost import CostModel
from .drawing import draw
from .errors import ModelError
from .importer import ImportResult, import_model
from .lower import to_model
from .dse import UNITS, Exploration, Stage, check_fixed, describe, explore, sized_buffers, unit_resources
from .engine.calibrate import Calibration
from .engine.compile import compile_engine
from .partition import Device, Partition, partition
from .pipeline import run_fusion
from .plan_writer import write_build
from .report import write_report
from .synth import synthesize
from .staging import StagedFolder
from .targets import cpu as cpu_target
from .targets import fpga as fpga_target
from .sensitivity import TensorSensitivity, int8_sensitivity
from .verify import DEFAULT_TOLERANCE, LayerAccuracy, OutputCheck, int8_accuracy, verify


class TargetName(str, enum.Enum):
    FPGA = "fpga"
    CPU = "cpu"


TARGETS = {TargetName.FPGA: fpga_target, TargetName.CPU: cpu_target}


@dataclass
class PartitionConfig:
    model: Path
    out_dir: Path
    target: TargetName = TargetName.FPGA
    board: str = "zcu104"
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    verify: bool = False
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    tolerance: float = DEFAULT_TOLERANCE
    save_steps: bool = False
    picture: bool = True
    offload_everything: bool = False
    seed: int = 0
    calibrate_dir: Path | None = None        # .npy frames or images; none: seeded random frames
    calibration_frames: int = 4
    calibration_table: Path | None = None    # a fpga/calibration.json of an earlier build: its ranges, no frames
    calibration_method: str = "mse"          # max | percentile | mse (engine/calibrate.py)
    engine: EngineConfig | None = None        # None: design-space exploration chooses it for the board
    target_fps: float | None = None
    objective: str = "throughput"             # what the exploration maximises: throughput | latency (dse.py)
    compute_units: int | None = None          # restrict the exploration to this many engine instances
    accuracy: bool = True
    synth: bool = False                       # yosys synth_xilinx of the RTL engine (fpga/synth/)
    sensitivity: bool = False                 # rank engine tensors by their int8 cost (sensitivity.py)
    keep_on_cpu: tuple[str, ...] = ()         # ONNX node names whose layers stay in float on the CPU


@dataclass
class BuildResult:
    plan: Plan
    partition: Partition
    warnings: list[str]
    checks: list[OutputCheck] | None
    timings: list[tuple[str, float]]
    accuracy: AccuracyReport | None = None
    exploration: Exploration | None = None
    layers: list[LayerAccuracy] = field(default_factory=list)
    sensitivity: list[TensorSensitivity] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return self.checks is not None and all(c.ok for c in self.checks)

    def below(self, min_cosine: float) -> tuple[str, str] | None:
        """(worst output, first layer) where int8 falls below `min_cosine` against float, or None."""
        if self.accuracy is None:
            return None
        low = [o for o in self.accuracy.outputs if o.cosine < min_cosine]
        if not low:
            return None
        first = next((layer.tensor for layer in self.layers if layer.cosine < min_cosine), "none of the FPGA layers")
        return min(low, key=lambda o: o.cosine).name, first


def _save_graph(graph, path: Path) -> None:
    model = to_model(graph, list(graph.nodes), graph.inputs, graph.outputs, graph.name, graph.opset_imports,
                     path.with_suffix(".weights"))
    onnx.save(model, str(path))


def _offload_all(graph, board, keep: tuple[str, ...] = ()) -> tuple[list[str], int, list[Stage]]:
    """The layers a full offload would put on the FPGA (the cost model needs a design first), in how many
    subgraphs, and that draft's stages for the frame schedule. Parallel branches split off as the final
    partition splits them (worth a program start of their own), not each one: a grouped conv's pieces are
    dozens of branches."""
    draft = partition(graph, fpga_target, CostModel(board), offload_everything=True, keep_on_cpu=keep,
                      split_all_branches=False)
    fpga = [sg for sg in draft.subgraphs if sg.device is Device.FPGA]
    stages = []
    for sg in draft.subgraphs:
        est = sg.estimate
        on_fpga = sg.device is Device.FPGA
        fixed = (est.transfer_s + est.invoke_s if on_fpga else est.cpu_s) if est is not None else 0.0
        stages.append(Stage(sg.name, sg.device.value, tuple(sg.depends_on), tuple(sg.nodes) if on_fpga else (),
                            fixed))
    return [n for sg in fpga for n in sg.nodes], max(1, len(fpga)), stages


def _explore(graph, board, cfg: PartitionConfig) -> Exploration:
    """The design for this model and board; a board no design fits, or a rate no design reaches, is an error."""
    nodes, subgraphs, stages = _offload_all(graph, board, cfg.keep_on_cpu)
    units = (cfg.compute_units,) if cfg.compute_units else UNITS
    exploration = explore(graph, nodes, subgraphs, board, cfg.target_fps, units, cfg.objective, stages)
    if exploration.chosen is None and (cfg.compute_units or cfg.target_fps):
        raise ModelError(exploration.note + (f" (with --compute-units {cfg.compute_units})" if cfg.compute_units else ""))
    if cfg.target_fps is not None and exploration.chosen is not None and exploration.chosen.rate < cfg.target_fps:
        best = exploration.chosen
        raise ModelError(f"--target-fps {cfg.target_fps:g}: no engine design reaches it on {board.name}; the fastest "
                         f"that fits, {describe(best)}, gives {best.rate:.1f} fps (modelled)")
    return exploration


def _check_fixed_engine(graph, board, engine: EngineConfig) -> None:
    nodes, subgraphs, _ = _offload_all(graph, board)
    if nodes:
        why = check_fixed(graph, nodes, subgraphs, engine, board)
        if why:
            raise ModelError(why)


def seeded_frame(plan: Plan, seed: int, given: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """random_frame, with a dynamic model input reported as the user's problem (exit 2), not a crash."""
    try:
        return random_frame(plan, seed, given)
    except ValueError as exc:
        raise ModelError(f"{exc} (or give this input with --input NAME=FILE.npy)") from None


def _calibration(cfg: PartitionConfig, plan: Plan, warnings: list[str]) -> Calibration:
    if cfg.calibration_table is not None:
        return Calibration.from_table(cfg.calibration_table)
    if cfg.calibrate_dir is not None:
        frames = load_frames(cfg.calibrate_dir, plan.inputs)
        if frames:
            return Calibration(f"{len(frames)} frames from {cfg.calibrate_dir}", frames=frames,
                               method=cfg.calibration_method)
    warnings.append(f"no calibration data: int8 scales come from {cfg.calibration_frames} seeded random "
                    "inputs; fine for testing, not for accuracy (use --calibrate DIR)")
    frames = [seeded_frame(plan, cfg.seed + i) for i in range(cfg.calibration_frames)]
    return Calibration(f"{len(frames)} seeded random frames (testing only)", frames=frames,
                       method=cfg.calibration_method)


def run_partition(cfg: PartitionConfig, echo: Callable[[str], None] = lambda s: None) -> BuildResult:
    """Writes the build into a staging folder beside `cfg.out_dir` and moves it into place when complete."""
    try:
        board = board_by_name(cfg.board)
    except KeyError as exc:
        raise ModelError(str(exc.args[0])) from None
    staged = StagedFolder(cfg.out_dir)
    with staged as out_dir:
        result = _build(cfg, board, out_dir, echo)
        staged.commit()
    result.plan.root = cfg.out_dir
    return result


def _build(cfg: PartitionConfig, board, out_dir: Path, echo: Callable[[str], None]) -> BuildResult:
    timings: list[tuple[str, float]] = []
    explores = cfg.engine is None and cfg.target is TargetName.FPGA
    names = (["import", "fuse"] + (["explore"] if explores else []) + ["partition", "write", "compile"]
             + (["accuracy"] if cfg.accuracy else []) + (["sensitivity"] if cfg.accuracy and cfg.sensitivity else [])
             + (["synth"] if cfg.synth else []) + ["report"]
             + (["verify"] if cfg.verify else []))

    def step(name: str, fn: Callable):
        t0 = time.perf_counter()
        result = fn()
        dt = time.perf_counter() - t0
        timings.append((name, dt))
        echo(f"[{names.index(name) + 1}/{len(names)}] {name:9s} {dt:7.3f} s")
        return result

    def skip(name: str, why: str) -> None:
        if name in names:
            echo(f"[{names.index(name) + 1}/{len(names)}] {name:9s} skipped ({why})")

    imported: ImportResult = step("import", lambda: import_model(cfg.model, cfg.input_shapes))
    graph = imported.graph
    steps_dir = out_dir / "steps"
    if cfg.save_steps:
        steps_dir.mkdir()
        _save_graph(graph, steps_dir / "00_imported.onnx")

    def fuse():
        saver = (lambda i, name, g: _save_graph(g, steps_dir / f"{i:02d}_{name}.onnx")) if cfg.save_steps else None
        return run_fusion(graph, saver)

    graph = step("fuse", fuse)
    exploration = None
    engine = cfg.engine or EngineConfig(clock_mhz=board.clock_mhz)
    target = TARGETS[cfg.target]
    if explores:
        exploration = step("explore", lambda: _explore(graph, board, cfg))
        if exploration.chosen is not None:
            engine = exploration.chosen.config
        else:                      # no engine fits the board: a CPU build that says why
            target = cpu_target
    elif cfg.engine is not None and cfg.target is TargetName.FPGA:
        _check_fixed_engine(graph, board, cfg.engine)
    if not explores:          # the buffers the code generator will size, so the cost model sees that engine
        engine = sized_buffers(graph, list(graph.nodes), engine)
    part = step("partition", lambda: partition(graph, target, CostModel(board, engine),
                                               cfg.offload_everything, cfg.keep_on_cpu))
    build_id = uuid.uuid4().hex
    plan = step("write", lambda: write_build(part, out_dir, cfg.model, cfg.target.value, board,
                                             imported.folded, engine, build_id))
    warnings = list(imported.warnings) + graph.warnings
    accuracy: AccuracyReport | None = None
    layers: list[LayerAccuracy] = []
    sensitivity: list[TensorSensitivity] = []
    calibration: Calibration | None = None
    synthesis: dict | None = None
    if any(sg.device is Device.FPGA for sg in part.subgraphs):
        calibration = _calibration(cfg, plan, warnings)
        _, more = step("compile", lambda: compile_engine(part, plan, engine, calibration, out_dir, board, build_id))
        warnings += more
        plan.engine = f"{ENGINE_DIR}/engine.json"
        fpga_sgs = [sg for sg in part.subgraphs if sg.device is Device.FPGA]
        plan.unit_resources = unit_resources(graph, [n for sg in fpga_sgs for n in sg.nodes], len(fpga_sgs), engine,
                                             BOARDS.values())
        plan.resource_budget = dict(BUDGET)
        plan.write(out_dir)
        if cfg.accuracy:
            feeds = seeded_frame(plan, cfg.seed + 1000, cfg.inputs)
            accuracy, layers = step("accuracy", lambda: int8_accuracy(plan, out_dir, cfg.model, feeds))
            if cfg.sensitivity:
                nodes = [n for sg in fpga_sgs for n in sg.nodes]
                views = EngineImage.load(out_dir / ENGINE_DIR).tensors
                sensitivity = step("sensitivity", lambda: int8_sensitivity(
                    plan, graph, nodes, calibration.table, feeds, echo,
                    {v.name: (v.scale, v.zero) for v in views.values()}))
            record = {**accuracy.as_dict(), "calibration": calibration.source,
                      "layers": [asdict(layer) for layer in layers],
                      **({"sensitivity": [asdict(t) for t in sensitivity]} if cfg.sensitivity else {})}
            (out_dir / "accuracy.json").write_text(json.dumps(record, indent=1) + "\n")
        if cfg.synth:
            synthesis = step("synth", lambda: synthesize(out_dir / ENGINE_DIR, board, echo))
    else:
        skip("compile", "no FPGA subgraph")
        skip("accuracy", "no FPGA subgraph")
        skip("sensitivity", "no FPGA subgraph")
        skip("synth", "no FPGA subgraph")
    picture = step("report", lambda: draw(part, out_dir) if cfg.picture else None)
    checks = None
    if cfg.verify:
        checks = step("verify", lambda: verify(plan, cfg.model, seeded_frame(plan, cfg.seed, cfg.inputs),
                                               cfg.tolerance))
    plan.steps = [{"name": n, "seconds": round(t, 4)} for n, t in timings]
    plan.write(out_dir)
    if exploration is not None and exploration.chosen is None:
        warnings.append(f"{exploration.note}: every layer stays on the CPU")
    write_report(plan, out_dir, picture, warnings, checks, accuracy, exploration, calibration, layers, synthesis,
                 sensitivity)
    return BuildResult(plan, part, warnings, checks, timings, accuracy, exploration, layers, sensitivity)
