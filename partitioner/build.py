"""`partition` as data: `STEPS`, a list of named steps (name, function, when it runs, what `--save-steps` keeps
of it) that one runner times, reports and saves after. Each step reads what earlier ones left in a `BuildState`
and leaves its result there; nothing is read back from the folder being written, and plan.json is written once."""
from __future__ import annotations

import enum
import json
import time
import uuid
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Callable

import numpy as np
import onnx

from fpga_runtime import engine_parts
from fpga_runtime.abi import EngineConfig
from fpga_runtime.boards import BOARDS, BUDGET, Board
from fpga_runtime.boards import board as board_by_name
from fpga_runtime.checking.accuracy import AccuracyReport
from fpga_runtime.engine_image import ENGINE_DIR, EngineImage
from fpga_runtime.plan import Plan, data_files
from fpga_runtime.preprocess import Preprocess
from fpga_runtime.preprocess import choose as choose_preprocess
from partitioner.codegen.sources import write_engine_sources
from partitioner.codegen.synth import synthesize
from partitioner.engine.calibration import Calibration
from partitioner.engine.calibration_frames import accuracy_frames, choose_calibration, seeded_frame
from partitioner.engine.compile import compile_engine
from partitioner.engine.geometry import engine_limits, sized_buffers
from partitioner.engine.winograd import MAX_LOSS as WINOGRAD_MAX_LOSS
from partitioner.errors import ModelError
from partitioner.evaluate.float_check import DEFAULT_TOLERANCE, OutputCheck, verify
from partitioner.evaluate.int8_accuracy import LayerAccuracy, int8_accuracy
from partitioner.evaluate.sensitivity import TensorSensitivity, int8_sensitivity
from partitioner.explore.choice import check_fixed_engine, choose_design, fixed_engine_splits
from partitioner.explore.clock import asked_clock_warnings, design_clock, fixed_engine_clock
from partitioner.explore.design_space import (
    Exploration,
    describe,
    ranked,
    unit_resources,
)
from partitioner.explore.resources import fewest_uram_units
from partitioner.frontend.float16 import widen_to_float32
from partitioner.frontend.importer import ImportResult, import_model
from partitioner.frontend.metadata import class_names
from partitioner.ir.graph import Graph
from partitioner.ir.to_onnx import to_model
from partitioner.output.drawing import draw
from partitioner.output.plan_writer import retime_winograd, write_build
from partitioner.output.report import write_report
from partitioner.output.staging import StagedFolder
from partitioner.passes.pipeline import run_fusion
from partitioner.passes.qdq import strip_absorbed_qdq
from partitioner.placement.cost import CostModel
from partitioner.placement.partition import Device, Partition, partition
from partitioner.result import BuildResult
from partitioner.targets import cpu as cpu_target
from partitioner.targets import fpga as fpga_target


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
    accuracy_dir: Path | None = None         # held-out .npy frames or images the int8 report is measured on
    calibration_frames: int = 4
    calibration_table: Path | None = None    # a fpga/calibration.json of an earlier build: its ranges, no frames
    calibration_method: str = "mse"          # max | percentile | mse (engine/calibrate.py)
    engine: EngineConfig | None = None        # None: design-space exploration chooses it for the board
    target_fps: float | None = None
    objective: str = "throughput"             # what the exploration maximises: throughput | latency | fpga
    in_flight: int | None = None              # frames in flight the throughput figures assume (None: fpga-run's)
    compute_units: int | None = None          # restrict the exploration to this many engine instances
    accuracy: bool = True
    synth: bool = False                       # yosys synth_xilinx of the RTL engine (fpga/synth/)
    engine_impl: str = "rtl"                  # the engine the overlay instantiates: rtl (packaged IP) | hls
    clock_mhz: float | None = None            # the engine clock, fixed; None: the board's, or the estimated Fmax
    dsp_clock: int = 1                        # 2: the MAC array's DSPs at twice the engine clock (--dsp-clock 2x)
    sensitivity: bool = False                 # rank engine tensors by their int8 cost (sensitivity.py)
    keep_on_cpu: tuple[str, ...] = ()         # ONNX node names whose layers stay in float on the CPU
    bias_correction: bool = True              # remove the weights' rounding bias from conv outputs (layers.py)
    winograd: str = "off"                     # off | auto | all: 3x3 stride-1 convs as Winograd (engine/winograd.py)
    winograd_max_loss: float = WINOGRAD_MAX_LOSS   # auto: the int8 cosine a layer may lose against direct
    column_packing: bool = True               # a conv's host-written input column-packed where it pays (layout.py)
    preprocess: str | None = None             # yolo | imagenet | unit | none; None: found from the model
    preprocess_overrides: dict = field(default_factory=dict)   # fit, bgr, scale, mean, std given explicitly
    class_names: list[str] | None = None     # None: from the model's metadata


def _save_graph(graph, path: Path) -> None:
    model = to_model(graph, list(graph.nodes), graph.inputs, graph.outputs, graph.name, graph.opset_imports,
                     path.with_suffix(".weights"))
    onnx.save(model, str(path))


def run_partition(cfg: PartitionConfig, echo: Callable[[str], None] = lambda s: None) -> BuildResult:
    """Writes the build into a staging folder beside `cfg.out_dir` and moves it into place when complete."""
    try:
        board = board_by_name(cfg.board)
    except KeyError as exc:
        raise ModelError(str(exc.args[0])) from None
    staged = StagedFolder(cfg.out_dir)
    with staged as out_dir:
        state = BuildState(cfg, board, out_dir, echo)
        run_steps(state, STEPS, echo)
        write_outputs(state)
        staged.commit()
    state.plan.root = cfg.out_dir
    return state.result()


@dataclass
class BuildState:
    """What the steps have made so far, in memory."""
    cfg: PartitionConfig
    board: Board
    out_dir: Path
    echo: Callable[[str], None] = lambda m: None
    imported: ImportResult | None = None
    preprocess: Preprocess | None = None
    graph: Graph | None = None
    exploration: Exploration | None = None
    splits: Exploration | None = None          # the branch splits weighed (the exploration's, or a fixed engine's)
    engine: EngineConfig | None = None
    target: ModuleType | None = None          # targets.fpga or targets.cpu
    part: Partition | None = None
    build_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    plan: Plan | None = None
    warnings: list[str] = field(default_factory=list)
    calibration: Calibration | None = None
    image: EngineImage | None = None
    descriptors: list = field(default_factory=list)
    codes: dict[str, tuple[float, int]] = field(default_factory=dict)   # (scale, zero) per engine tensor
    winograd: list = field(default_factory=list)     # engine/winograd.py's WinogradTrial per eligible conv
    accuracy: AccuracyReport | None = None
    layers: list[LayerAccuracy] = field(default_factory=list)
    sensitivity: list[TensorSensitivity] = field(default_factory=list)
    synthesis: dict | None = None
    picture: Path | None = None
    checks: list[OutputCheck] | None = None
    timings: list[tuple[str, float]] = field(default_factory=list)

    @property
    def steps_dir(self) -> Path:
        return self.out_dir / "steps"

    @property
    def fpga_subgraphs(self) -> list:
        return [sg for sg in self.part.subgraphs if sg.device is Device.FPGA]

    def result(self) -> BuildResult:
        return BuildResult(self.plan, self.part, self.warnings, self.checks, self.timings, self.accuracy,
                           self.exploration, self.layers, self.sensitivity, self.splits)


@dataclass(frozen=True)
class Step:
    name: str
    run: Callable[[BuildState], None]
    planned: Callable[[PartitionConfig], bool] = lambda cfg: True    # numbered in the progress lines
    skipped: Callable[[BuildState], str | None] = lambda s: None     # why it does not run after all
    save: Callable[[BuildState, Path], None] | None = None           # what --save-steps keeps of it


def run_steps(state: BuildState, steps: list[Step], echo: Callable[[str], None]) -> None:
    names = [s.name for s in steps if s.planned(state.cfg)]
    if state.cfg.save_steps:
        state.steps_dir.mkdir()
    for step in steps:
        if not step.planned(state.cfg):
            continue
        label = f"[{names.index(step.name) + 1}/{len(names)}] {step.name:9s}"
        why = step.skipped(state)
        if why is not None:
            echo(f"{label} skipped ({why})")
            continue
        t0 = time.perf_counter()
        step.run(state)
        dt = time.perf_counter() - t0
        state.timings.append((step.name, dt))
        echo(f"{label} {dt:7.3f} s")
        if state.cfg.save_steps and step.save is not None:
            step.save(state, state.steps_dir)


def _save_json(path: Path, value) -> None:
    path.write_text(json.dumps(value, indent=1, default=str) + "\n")


# --- the steps, in order -------------------------------------------------------------------------------------

def _import(s: BuildState) -> None:
    s.imported = import_model(s.cfg.model, s.cfg.input_shapes)
    s.graph = s.imported.graph
    s.preprocess = _preprocess(s)


def _preprocess(s: BuildState) -> Preprocess | None:
    """How a picture becomes this model's input: asked for, or found from the model (said on the console); None
    for models whose input is no picture, unless asked for (then an error)."""
    cfg, g = s.cfg, s.graph
    asked = cfg.preprocess is not None or bool(cfg.preprocess_overrides)
    if len(g.inputs) != 1:
        if asked:
            raise ModelError(f"--preprocess serves single-input models; this one has {len(g.inputs)} inputs")
        return None
    t = g.tensors[g.inputs[0]]
    metadata = {p.key: p.value for p in s.imported.model.metadata_props}
    try:
        chosen, why = choose_preprocess(cfg.preprocess, t.shape, t.dtype_name, metadata, **cfg.preprocess_overrides)
    except ValueError as exc:
        if asked:
            raise ModelError(f"--preprocess: {exc}") from None
        return None
    s.echo(f"pre-processing: {chosen.describe()} ({why})")
    return chosen


def _fuse(s: BuildState) -> None:
    save = (lambda i, name, g: _save_graph(g, s.steps_dir / f"{i:02d}_{name}.onnx")) if s.cfg.save_steps else None
    s.graph = run_fusion(s.graph, save)


def _explores(cfg: PartitionConfig) -> bool:
    return cfg.engine is None and cfg.target is TargetName.FPGA


def _explore_step(s: BuildState) -> None:
    cfg = s.cfg
    s.exploration = choose_design(s.graph, s.board, keep_on_cpu=cfg.keep_on_cpu, offload_all=cfg.offload_everything,
                                  compute_units=cfg.compute_units, target_fps=cfg.target_fps,
                                  objective=cfg.objective, clock_mhz=cfg.clock_mhz, in_flight=cfg.in_flight,
                                  dsp_clock=cfg.dsp_clock, winograd=cfg.winograd)


def _save_exploration(s: BuildState, folder: Path) -> None:
    e = s.exploration
    _save_json(folder / "explore.json", {
        "objective": e.objective, "note": e.note, "chosen": describe(e.chosen) if e.chosen else None,
        "designs": [{"design": describe(d), "fps": d.fps, "frame_fps": d.frame_fps, "latency_s": d.latency_s,
                     "mac_utilisation": d.mac_utilisation, "weights_in": d.weights_in,
                     "uram_units": d.uram_units,
                     "split": d.split.label if d.split else None} for d in ranked(e)],
        "splits": [{**o.split.as_dict(), "best": describe(o.best), "latency_s": o.best.latency_s,
                    "frame_fps": o.best.frame_fps} for o in e.splits]})


def _partition(s: BuildState) -> None:
    """The engine the partition is costed with: the exploration's choice, a fixed one checked against the board
    (buffers sized as the code generator will size them), or none that fits (a CPU build that says why)."""
    cfg, s.target = s.cfg, TARGETS[s.cfg.target]
    s.engine = cfg.engine or EngineConfig(clock_mhz=s.board.clock_mhz)
    if cfg.winograd != "off" and s.engine.pixels > 1:
        s.engine = replace(s.engine, winograd=True)    # a window path: the Winograd unit runs the layers
    if s.exploration is not None:
        if s.exploration.chosen is not None:
            s.engine = s.exploration.chosen.config
        else:
            s.target = cpu_target
    else:
        if cfg.engine is not None and cfg.target is TargetName.FPGA:
            check_fixed_engine(s.graph, s.board, cfg.engine)
        clock, notes = fixed_engine_clock(s.board, s.engine, cfg.clock_mhz, cfg.target is TargetName.FPGA)
        s.warnings += notes
        s.engine = sized_buffers(s.graph, list(s.graph.nodes), replace(s.engine, clock_mhz=clock))
    if cfg.clock_mhz is not None and cfg.target is TargetName.FPGA:
        s.warnings += asked_clock_warnings(s.board, s.engine, cfg.clock_mhz)
    s.splits = s.exploration
    if s.exploration is None and s.target is TARGETS[TargetName.FPGA] and not cfg.offload_everything:
        s.splits = fixed_engine_splits(s.graph, s.board, s.engine, keep_on_cpu=cfg.keep_on_cpu,
                                       objective=cfg.objective, in_flight=cfg.in_flight, winograd=cfg.winograd)
    chosen = s.splits.chosen if s.splits is not None else None
    share = chosen.split.share if chosen is not None and chosen.split is not None else None
    if cfg.offload_everything:
        share = None                           # every branch split off, as that flag promises
    s.part = partition(s.graph, s.target, CostModel(s.board, s.engine), cfg.offload_everything, cfg.keep_on_cpu,
                       branch_share=share)


def _save_partition(s: BuildState, folder: Path) -> None:
    _save_json(folder / "partition.json", {
        "subgraphs": [{"name": sg.name, "device": sg.device.value, "role": sg.role.value, "nodes": list(sg.nodes),
                       "depends_on": list(sg.depends_on)} for sg in s.part.subgraphs],
        "fallbacks": s.part.fallbacks})


def _write(s: BuildState) -> None:
    s.plan = write_build(s.part, s.out_dir, s.cfg.model, s.cfg.target.value, s.board, s.imported.folded,
                         s.engine, s.build_id)
    s.plan.preprocess = s.preprocess.to_dict() if s.preprocess is not None else None
    if s.imported.precision != "float32":
        s.plan.model["precision"] = s.imported.precision
    s.plan.class_names = s.cfg.class_names or class_names({p.key: p.value for p in s.imported.model.metadata_props})
    s.warnings = list(s.imported.warnings) + s.graph.warnings + s.warnings      # + the engine clock's


def _save_plan_draft(s: BuildState, folder: Path) -> None:
    _save_json(folder / "write.json", s.plan.to_dict())


def _no_fpga(s: BuildState) -> str | None:
    return None if s.fpga_subgraphs else "no FPGA subgraph"


def _compile(s: BuildState) -> None:
    cfg = s.cfg
    s.calibration = choose_calibration(s.plan, cfg.calibration_table, cfg.calibrate_dir, cfg.calibration_frames,
                                       cfg.calibration_method, cfg.seed, s.preprocess, s.warnings)
    if s.exploration is not None and cfg.winograd != "off" and s.engine.pixels > 1 and not s.engine.winograd:
        s.warnings.append(f"--winograd {cfg.winograd}: the design the exploration chose ({s.engine.describe()}) has "
                          "no Winograd unit (with the unit's LUTs and its clock, partitioner/explore/clock.py, no "
                          "design was faster), so every conv stays direct; --engine PxRxV builds one with the unit")
    compiled = compile_engine(s.part, s.plan, s.engine, s.calibration, s.out_dir, s.board, s.build_id,
                              cfg.bias_correction, cfg.winograd, cfg.winograd_max_loss, cfg.column_packing)
    s.image, s.descriptors, s.codes = compiled.image, compiled.descriptors, compiled.codes
    s.winograd = compiled.winograd
    retime_winograd(s.plan, s.winograd)
    built = compiled.image.config         # the optional parts the build has: their resources
    s.engine = replace(s.engine, winograd=built.winograd, **engine_parts.built(built))
    if any(t.chosen for t in s.winograd):
        if s.engine.pixels < 2:
            s.warnings.append(f"{sum(t.chosen for t in s.winograd)} conv(s) compiled as Winograd layers (--winograd "
                              f"{cfg.winograd}) for an engine without a window path, which has no Winograd unit: the "
                              "reference and csim backends run this build, verilator and pynq refuse it (an engine "
                              "of 2 or more pixels, --engine PxRxV, runs them in RTL)")
    s.warnings += compiled.warnings
    s.plan.engine = f"{ENGINE_DIR}/engine.json"
    fpga = s.fpga_subgraphs
    s.plan.unit_resources = unit_resources(s.graph, [n for sg in fpga for n in sg.nodes], len(fpga), s.engine,
                                           BOARDS.values())
    s.plan.resource_budget = dict(BUDGET)
    s.plan.board_clocks = {b.name: design_clock(b, s.engine)[0] for b in BOARDS.values()}


def _codegen(s: BuildState) -> None:
    """The units' weight RAMs in UltraRAM: the fewest with which the engine as built fits the board (the
    exploration ranks the mixes of one design alike, so it chose the same)."""
    limits = engine_limits(s.descriptors, s.image.config)
    write_engine_sources(s.out_dir, s.graph.name, s.image.config, s.descriptors, s.board,
                         (s.image.act_bytes, s.image.const_bytes), s.cfg.engine_impl,
                         fewest_uram_units(s.image.config, s.board, limits["wbuf_bytes"], limits["pool_width"]))


def _save_compile(s: BuildState, folder: Path) -> None:
    _save_json(folder / "compile.json", {
        "config": asdict(s.image.config), "const_bytes": s.image.const_bytes, "act_bytes": s.image.act_bytes,
        "programs": {p.subgraph: {"layers": p.layers, "macs": p.macs} for p in s.image.programs.values()},
        "calibration": s.calibration.source})


def _accuracy_frames(s: BuildState) -> tuple[list[dict[str, np.ndarray]], str]:
    return accuracy_frames(s.plan, s.cfg.seed, s.cfg.inputs, s.cfg.calibrate_dir, s.calibration,
                           s.cfg.accuracy_dir, s.preprocess)


def _accuracy(s: BuildState) -> None:
    frames, what = _accuracy_frames(s)
    s.accuracy, s.layers = int8_accuracy(s.plan, s.image, s.out_dir, s.cfg.model, frames, s.echo)
    s.accuracy.frame = what + ("" if s.plan.original_takes_numpy else
                               "; against the model widened to float32: a bfloat16 original takes no numpy feed")


def _sensitivity(s: BuildState) -> None:
    feeds = _accuracy_frames(s)[0][0]
    nodes = [n for sg in s.fpga_subgraphs for n in sg.nodes]
    s.sensitivity = int8_sensitivity(s.plan, s.graph, nodes, s.calibration.table, feeds, s.echo, s.codes)


def _synth(s: BuildState) -> None:
    s.synthesis = synthesize(s.out_dir / ENGINE_DIR, s.board, s.echo, s.image.config.clock_mhz)
    timing = s.synthesis["timing"]
    if timing["estimated_fmax_mhz"] < timing["clock_mhz"]:
        s.warnings.append(f"the synthesised engine's estimated Fmax, {timing['estimated_fmax_mhz']:g} MHz, is below "
                          f"the build's {timing['clock_mhz']:g} MHz clock (the exploration's Fmax model gave more "
                          "for this shape): its times hold at the lower clock; `make bitstream CLOCK_MHZ=` sets it")


def _report(s: BuildState) -> None:
    s.picture = draw(s.part, s.out_dir) if s.cfg.picture else None


def _verify(s: BuildState) -> None:
    pairs = s.part.graph.absorbed_qdq           # a QDQ model's pairs the engine took: not in the partition's graph
    s.checks = verify(s.plan, s.cfg.model, seeded_frame(s.plan, s.cfg.seed, s.cfg.inputs), s.cfg.tolerance,
                      widen_to_float32 if s.imported.precision != "float32" else None,
                      (lambda model: strip_absorbed_qdq(model, pairs)) if pairs else None)


STEPS: list[Step] = [
    Step("import", _import, save=lambda s, d: _save_graph(s.graph, d / "00_imported.onnx")),
    Step("fuse", _fuse),                                    # saves after every fusion pass itself
    Step("explore", _explore_step, planned=_explores, save=_save_exploration),
    Step("partition", _partition, save=_save_partition),
    Step("write", _write, save=_save_plan_draft),
    Step("compile", _compile, skipped=_no_fpga, save=_save_compile),
    Step("codegen", _codegen, skipped=_no_fpga),            # fpga/hls, fpga/rtl, fpga/overlay, fpga/Makefile
    Step("accuracy", _accuracy, planned=lambda cfg: cfg.accuracy, skipped=_no_fpga,
         save=lambda s, d: _save_json(d / "accuracy.json", s.accuracy.as_dict())),
    Step("sensitivity", _sensitivity, planned=lambda cfg: cfg.accuracy and cfg.sensitivity, skipped=_no_fpga,
         save=lambda s, d: _save_json(d / "sensitivity.json", [asdict(t) for t in s.sensitivity])),
    Step("synth", _synth, planned=lambda cfg: cfg.synth, skipped=_no_fpga,
         save=lambda s, d: _save_json(d / "synth.json", s.synthesis)),
    Step("report", _report),                                # the picture; report.md is written with plan.json
    Step("verify", _verify, planned=lambda cfg: cfg.verify,
         save=lambda s, d: _save_json(d / "verify.json", [asdict(c) for c in s.checks])),
]


def write_outputs(s: BuildState) -> None:
    """plan.json (once, with every step's time), accuracy.json and report.md."""
    s.plan.steps = [{"name": n, "seconds": round(t, 4)} for n, t in s.timings]
    s.plan.files = data_files(s.out_dir)
    s.plan.write(s.out_dir)
    if s.accuracy is not None:
        record = {**s.accuracy.as_dict(), "calibration": s.calibration.source,
                  "layers": [asdict(layer) for layer in s.layers],
                  **({"sensitivity": [asdict(t) for t in s.sensitivity]} if s.cfg.sensitivity else {})}
        (s.out_dir / "accuracy.json").write_text(json.dumps(record, indent=1) + "\n")
    if s.exploration is not None and s.exploration.chosen is None:
        s.warnings.append(f"{s.exploration.note}: every layer stays on the CPU")
    write_report(s.plan, s.out_dir, s.picture, s.warnings, s.checks, s.accuracy, s.exploration, s.calibration,
                 s.layers, s.synthesis, s.sensitivity, s.image, s.cfg.engine_impl, s.splits, s.winograd)
