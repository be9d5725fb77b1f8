"""Partition -> `<build>/fpga/`: one program per FPGA subgraph over one memory image (kernel ABI v2). The engine
sources for that image are the code generator's (`codegen.sources.write_engine_sources`), a step of their own."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from fpga_runtime import engine_parts
from fpga_runtime.abi import Descriptor, EngineConfig, pack_program
from fpga_runtime.boards import Board
from fpga_runtime.engine_image import ENGINE_DIR, EngineImage, Program
from fpga_runtime.plan import Plan
from fpga_runtime.program_check import ProgramError, check_programs
from partitioner.engine import winograd
from partitioner.engine.calibration import Calibration, fpga_float_values
from partitioner.engine.geometry import engine_limits
from partitioner.engine.layers import LayerEmitter, bias_dominance_warning
from partitioner.engine.layout import engine_tensor_names, plan_layout, tensor_scales
from partitioner.engine.memory import ActivationArena, ConstArena
from partitioner.errors import ModelError
from partitioner.ir.graph import OpKind
from partitioner.placement.cost import node_cost
from partitioner.placement.partition import Device, Partition


@dataclass
class Compiled:
    image: EngineImage                     # saved with its memory and calibration table
    warnings: list[str]
    descriptors: list[Descriptor]          # every program's: what the generated engine must be sized for
    codes: dict[str, tuple[float, int]]    # (scale, zero point) per ONNX tensor name, fused stages included
    winograd: list[winograd.WinogradTrial] = field(default_factory=list)  # eligible convs, what --winograd chose


def compile_engine(part: Partition, plan: Plan, config: EngineConfig, calibration: Calibration, out_dir: Path,
                   board: Board | None = None, build_id: str | None = None, bias_correction: bool = True,
                   winograd_mode: str = "off", winograd_max_loss: float = winograd.MAX_LOSS,
                   column_packing: bool = True) -> Compiled:
    graph = part.graph
    warnings: list[str] = []
    fpga = [sg for sg in part.subgraphs if sg.device is Device.FPGA]
    nodes = [n for sg in fpga for n in sg.nodes]
    ranges = calibration.ranges(plan)
    if not calibration.frames:                  # a table of an earlier build: it must be this model's
        needed = [t for t in engine_tensor_names(graph, nodes) if t not in graph.fixed_scales]
        absent = [t for t in needed if t not in ranges]
        if absent:
            raise ModelError(f"{calibration.source}: covers {len(needed) - len(absent)} of the {len(needed)} "
                             f"engine tensors of this build ({len(absent)} missing, e.g. {absent[0]!r}): it is "
                             "another model's or another partition's; calibrate with --calibrate DIR instead")
    scales, zeros = tensor_scales(graph, nodes, ranges, warnings, calibration.bounds)
    activations = ActivationArena()
    trials = winograd.trials(graph, nodes, config, winograd_mode, board)
    if winograd_mode == "auto":
        _measure_winograd(trials, part, plan, calibration, scales, zeros, winograd_max_loss, warnings)
    layout = plan_layout(graph, nodes, scales, config, activations, zeros, {t.node for t in trials if t.chosen},
                         column_packing)
    consts = ConstArena()
    emitter = LayerEmitter(graph, layout.views, scales, config, consts,
                           calibration.means if bias_correction else None, zeros,
                           {t.node for t in trials if t.chosen})
    programs: dict[str, Program] = {}
    every: list = []
    layer_id = 0
    for sg in fpga:
        descriptors = []
        names = []
        for n in sg.nodes:
            node = graph.nodes[n]
            for c in (c for c in layout.copies if c.before == n):
                descriptors.append(emitter.copy(layout.views[c.src], layout.views[c.dst], layer_id))
                names.append(f"copy of {graph.tensors[c.src].onnx_name}")
                layer_id += 1
            if node.kind is OpKind.CONCAT:
                continue
            layers = emitter.emit(node, layer_id)
            descriptors += layers
            names += [node.label] if len(layers) == 1 else [f"{node.label} (phase {d.out_phase_y}{d.out_phase_x})"
                                                            for d in layers]
            layer_id += len(layers)
        every += descriptors
        addr = consts.put(pack_program(descriptors))
        programs[sg.name] = Program(sg.name, addr, len(descriptors), sum(node_cost(graph.nodes[n], graph).macs
                                                                         for n in sg.nodes), names)
    boundary = {}
    for sg in fpga:
        for t in sg.inputs + sg.outputs:
            boundary[graph.tensors[t].onnx_name] = layout.views[t]
    for n in nodes:                      # every layer's output too: per-layer accuracy reads them back
        for t in graph.nodes[n].outputs:
            boundary.setdefault(graph.tensors[t].onnx_name, layout.views[t])
    warnings += bias_dominance_warning(emitter.bias_dominated)
    limits = engine_limits(every, config)
    config = replace(config, weight_rows=limits["weight_rows"], window_words=limits["window_words"],  # the RTL's
                     depthwise_rows=limits["depthwise_rows"], winograd=limits["winograd"])
    config = engine_parts.trimmed(config, every)          # the optional parts the build's layers use
    image = EngineImage(config, consts.size, activations.end, programs, boundary,
                        calibration={"source": calibration.source, "frames": calibration.frame_count,
                                     "method": calibration.description,
                                     "bias_corrected": [list(c) for c in emitter.bias_corrected]},
                        build_id=build_id,
                        board=board.name if board is not None else None)
    const = consts.image()
    try:
        check_programs(image, np.frombuffer(const, np.uint8))    # what every backend checks before it runs one
    except ProgramError as exc:
        raise ModelError(f"internal: the compiler wrote a program the engines refuse: {exc}") from None
    image.save(out_dir / ENGINE_DIR, const)
    calibration.save(out_dir / ENGINE_DIR)
    return Compiled(image, warnings, every, {name: (scales[name], zeros[name]) for name in scales}, trials)


def _measure_winograd(trials: list[winograd.WinogradTrial], part: Partition, plan: Plan, calibration: Calibration,
                      scales: dict[str, float], zeros: dict[str, int], max_loss: float, warnings: list[str]) -> None:
    """`--winograd auto`'s cosine test on the first calibration frames (engine/winograd.py, `measure`)."""
    frames = calibration.frames[:winograd.TRIAL_FRAMES]
    if not trials:
        return
    if not frames:
        warnings.append(f"--winograd auto: {calibration.source} brings ranges but no frames, so the Winograd "
                        "layers were chosen by cycles alone (their int8 cosine loss is unmeasured); --calibrate DIR "
                        "measures it")
        return
    graph = part.graph
    values = [v for v, _ in fpga_float_values(plan, frames)]
    for t in trials:
        node = graph.nodes[t.node]
        x = graph.tensors[node.inputs[0]].onnx_name
        if any(x not in v for v in values):              # no float value to measure against: keep it direct
            t.chosen, t.why = False, "its input has no float value to measure the loss on"
            continue
        winograd.measure(t, node, graph, [v[x] for v in values], scales[x], zeros.get(x, 0), max_loss)
