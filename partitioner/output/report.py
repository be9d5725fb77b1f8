"""report.md for a person, and the short table printed on the console."""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

from fpga_runtime import engine_parts
from fpga_runtime.boards import board as board_by_name
from fpga_runtime.engine_image import ENGINE_DIR, EngineImage
from fpga_runtime.pl_clocks import PL_PLL_MHZ, engine_clocking, ps_clock_at_most
from fpga_runtime.plan import Plan
from fpga_runtime.prediction import cpu_costs
from fpga_runtime.run.policy import CPU_WORKERS
from partitioner.evaluate.float_check import CONDITIONING_FACTOR, OWN_QUANTISATION, OWN_ROUNDING
from partitioner.explore.clock import estimated_fmax_mhz
from partitioner.explore.design_space import ranked


def _ms(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds * 1e3:.3f}"


def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return out


def subgraph_rows(plan: Plan) -> list[list]:
    rows = []
    for sg in plan.subgraphs:
        est = sg.estimate or {}
        rows.append([sg.name, sg.device, sg.role, len(sg.nodes), len(sg.layers) or "",
                     f"{est.get('macs', 0) / 1e6:.1f}" if est.get("macs") else "", _ms(est.get("fpga_s")),
                     _ms(est.get("cpu_s")),
                     "" if sg.parallel_group is None else sg.parallel_group, ", ".join(sg.depends_on)])
    return rows


SUBGRAPH_HEADER = ["subgraph", "device", "role", "ONNX nodes", "layers", "MMAC", "FPGA est. ms", "CPU est. ms",
                   "parallel group", "depends on"]


def console_table(plan: Plan, last_width: int = 36) -> str:
    """The subgraph table for a terminal; a long last column (`depends on`) wraps onto continuation lines."""
    rows = [[str(c) for c in r] for r in subgraph_rows(plan)]
    wrapped = [(r[:-1], textwrap.wrap(r[-1], last_width, break_on_hyphens=False) or [""]) for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(SUBGRAPH_HEADER[:-1])]
    widths.append(max(len(SUBGRAPH_HEADER[-1]), *(len(piece) for _, pieces in wrapped for piece in pieces)))
    fmt = "  ".join(f"{{:{w}}}" for w in widths)
    lines = [fmt.format(*SUBGRAPH_HEADER).rstrip(), fmt.format(*("-" * w for w in widths))]
    for cells, pieces in wrapped:
        lines.append(fmt.format(*cells, pieces[0]).rstrip())
        lines += [fmt.format(*([""] * len(cells)), piece).rstrip() for piece in pieces[1:]]
    return "\n".join(lines)


def _design_row(d, role: str) -> list:
    c, r = d.config, d.resources
    window = c.window_words if c.pixels > 1 else "-"
    frames = "-" if d.frame_fps is None else f"{d.frame_fps:.1f}" + (" (CPU-bound)" if d.cpu_bound else "")
    latency = "-" if d.latency_s is None else f"{d.latency_s * 1e3:.2f}"
    depthwise = "-" if c.pixels == 1 else ("kernel row" if c.depthwise_rows else "tap")
    return [role, f"{c.pixels} x {c.pe_rows} x {c.vec}", f"{c.dsp_clock}x", c.epilogue_lanes or c.granule, window,
            depthwise, engine_parts.left_out(c),
            c.weight_rows, c.compute_units,
            f"{c.clock_mhz:g}", d.weights_in, r.dsp, r.bram36, r.uram, r.lut,
            f"{d.frame_s * 1e3:.2f}", f"{d.fps:.1f}", frames, latency, f"{d.mac_utilisation:.0%}"]


def design_section(exploration) -> list[str]:
    b, chosen = exploration.board, exploration.chosen
    header = ["", "pixels x PE rows x VEC", "DSP clock", "epilogue lanes", "window words", "depthwise per step",
              "parts left out", "weight rows",
              "CUs", "MHz",
              "weights in", "DSP",
              "BRAM36", "URAM", "LUT", "FPGA ms/frame", "FPGA fps", "frames/s (fpga-run)", "latency ms", "MAC util"]
    share = chosen.resources.share(b)
    lines = ["## Engine design (design-space exploration)", "",
             f"{exploration.note} on {b.name} ({b.dsp} DSP, {b.bram36} BRAM36, {b.uram} URAM, {b.lut} LUT); "
             f"uses {share['dsp']:.0%} DSP, {share['bram36']:.0%} BRAM, {share['uram']:.0%} URAM, "
             f"{share['lut']:.0%} LUT (resource model: partitioner/explore/resources.py); objective: "
             f"{exploration.objective}.", ""]
    others = [d for d in ranked(exploration) if d.config != chosen.config][:4]
    rows = [_design_row(chosen, "chosen")] + [_design_row(d, "runner-up" if i == 0 else "")
                                               for i, d in enumerate(others)]
    lines += _table(header, rows)
    lines += ["", "FPGA fps: the engine layers alone (k units, k frames at once, sharing the DDR's sustained "
              f"{b.ddr_sustained_gbps:.1f} GB/s: {b.ddr_efficiency:.1%} of its {b.ddr_gbps:g} GB/s peak, "
              "fpga_runtime/boards.py). frames/s: whole frames, CPU pre- "
              "and post-processing included, scheduled as `fpga-run run` schedules them "
              f"({CPU_WORKERS} CPU workers, frames in flight "
              + (f"{exploration.in_flight}, as --in-flight says" if exploration.in_flight else
                 "one per unit and one more") + "); latency: one frame alone. parts left out: the RTL engine's "
              "optional parts no layer of this model uses, which the build leaves out and the resources do not count "
              "(lane products: a depthwise conv off the window path, L2 norm; residual stage: ADD, SCALE, a fused "
              "residual; fpga_runtime/engine_parts.py).",
              ""]
    clock = chosen.config.clock_mhz
    fmax = estimated_fmax_mhz(b, chosen.config)
    if clock > fmax:
        lines += [f"Engine clock {clock:g} MHz, as fixed (--clock-mhz): **above** this engine's estimated Fmax "
                  f"({fmax:.0f} MHz, partitioner/explore/clock.py). Times and rates here hold only if a routed "
                  "design meets it.", ""]
    elif clock < b.clock_mhz:
        lines += [f"Engine clock {clock:g} MHz: the estimated Fmax of this engine's RTL ({fmax:.0f} MHz, "
                  f"partitioner/explore/clock.py), below {b.name}'s default {b.clock_mhz:g} MHz fabric clock. Every "
                  f"time and rate here holds at {clock:g} MHz, the clock the overlay is built for; `partition "
                  "--synth` estimates this build's own netlist.", ""]
    else:
        lines += [f"Engine clock {clock:g} MHz, {b.name}'s default fabric clock; the engine's estimated Fmax "
                  f"({fmax:.0f} MHz) reaches it.", ""]
    lines[-2] += _clock_source(b, chosen.config)
    lines += dsp_clock_note(chosen.config)
    if chosen.cpu_bound:
        lines += [f"The CPU stages limit the chosen design's rate: their work per frame on {CPU_WORKERS} workers "
                  "exceeds the engine's on its units, so a bigger engine would not run faster.", ""]
    return lines


def _clock_source(b, config) -> str:
    """How the overlay makes the engine clock on a Zynq (nothing on Alveo, whose shell makes it)."""
    if b.family not in PL_PLL_MHZ:
        return ""
    try:
        m = engine_clocking(b.family, config.clock_mhz, config.dsp_clock).mmcm
    except ValueError as exc:
        return f" The overlay cannot make it: {exc}."
    return (f" The overlay makes it with an MMCM from the processor's {m.input_mhz:g} MHz PL clock 0 "
            f"(x {m.mult:g} / {m.divide}, VCO {m.vco_mhz:g} MHz; fpga_runtime/pl_clocks.py); the processor alone, "
            f"its {PL_PLL_MHZ[b.family]:g} MHz PLL over whole divisors, would make "
            f"{ps_clock_at_most(b.family, config.clock_mhz):.1f} MHz.")


def _figure(d, objective: str) -> str:
    return f"{d.latency_s * 1e3:.2f} ms a frame" if objective == "latency" else f"{d.rate:.2f} frames/s"


def split_section(splits) -> list[str]:
    """The ways of cutting the FPGA regions at their forks that were weighed, each with its best design, and
    why the chosen one won (`splits`: the exploration, or a fixed engine's weighing of the splits)."""
    chosen, objective = splits.chosen, splits.objective
    if chosen is None or chosen.split is None or not splits.splits:
        return []
    if len(splits.splits) == 1 and not math.isinf(chosen.split.share):
        return ["## Branch splits (parallel FPGA subgraphs)", "",
                "--offload-all: every parallel branch with MACs is an FPGA subgraph of its own; no split was weighed.",
                ""]
    rows = []
    for o in splits.splits:
        mine = o.split == chosen.split
        d = chosen if mine else o.best
        rows.append(["**chosen**" if mine else "", o.split.label, o.split.fpga_subgraphs, o.split.parallel_groups,
                     d.config.describe(), f"{d.latency_s * 1e3:.2f}", f"{d.rate:.2f}"])
    lines = ["## Branch splits (parallel FPGA subgraphs)", "",
             "Each candidate cuts the FPGA regions at their forks: every parallel branch holding at least that share "
             "of the offloaded MACs becomes an FPGA subgraph of its own, which another compute unit may run while "
             "the rest of the frame goes on (and CPU branches overlap FPGA ones). Each is scheduled in virtual time "
             f"by the runtime's policy with every design; objective: {objective}.", ""]
    lines += _table(["", "split", "FPGA subgraphs", "parallel groups", "best design", "latency ms", "frames/s"], rows)
    single = splits.splits[0].best
    if math.isinf(chosen.split.share):
        others = [o.best for o in splits.splits[1:]]
        if not others:
            why = ("the FPGA regions have no fork with multiply-accumulate work on both sides, so there is nothing "
                   "to split")
        else:
            best_split = min(others, key=lambda d: d.latency_s) if objective == "latency" else max(
                others, key=lambda d: d.rate)
            why = (f"no split: the best split design ({best_split.split.label}, {best_split.config.describe()}) gives "
                   f"{_figure(best_split, objective)} against {_figure(chosen, objective)} without: the branches "
                   "beside the critical path are too small for what their extra units or program starts cost")
    else:
        why = (f"split ({chosen.split.label}): {_figure(chosen, objective)} against {_figure(single, objective)} for "
               f"the best single-subgraph design ({single.config.describe()})")
    return lines + ["", f"Chosen: {why}.", ""]


def synthesis_section(synthesis: dict, exploration) -> list[str]:
    """yosys' count for one compute unit beside the resource model's estimate (when the exploration ran)."""
    model = exploration.chosen.resources.times(1) if exploration is not None and exploration.chosen else None
    units = exploration.chosen.config.compute_units if model is not None else 1
    rows = []
    for key, attr in (("DSP", "dsp"), ("BRAM36", "bram36"), ("URAM", "uram"), ("LUT", "lut"), ("FF", "ff")):
        estimate = getattr(model, attr) / units if model is not None else None
        rows.append([key, f"{synthesis[key]:g}", "-" if estimate is None else f"{estimate:g}"])
    lines = (["## Synthesis (yosys synth_xilinx, one compute unit)", "",
              f"Family `{synthesis['family']}`, {synthesis.get('seconds', 0):g} s; fpga/synth/resources.json and "
              "yosys.log. yosys maps only bare multiplies into DSPs on UltraScale+, so its LUT and FF counts are "
              "pessimistic; DSP and RAM counts are the ones to trust.", ""]
             + _table(["resource", "yosys", "resource model"], rows) + [""])
    timing = synthesis.get("timing")
    if timing:
        lines += timing_section(timing)
    return lines


def dsp_clock_note(config) -> list[str]:
    """What `--dsp-clock 2x` assumes, said plainly."""
    if config.dsp_clock != 2:
        return []
    return [f"The MAC array's DSP48E2s run at twice the engine clock ({2 * config.clock_mhz:g} MHz, `--dsp-clock 2x`, "
            "mac_quad.sv: one DSP per two lanes of two output rows, half the array's DSPs). The timing estimate counts "
            "the DSP clock's paths at half the period, and its Fmax covers them; that DSP48E2s close timing at "
            "600 MHz on these devices is what AMD's DPU shows, not something place and route has checked here "
            "(`make bitstream` is the check: it stops if the routed design misses either clock).", ""]


def timing_section(timing: dict) -> list[str]:
    """The estimated Fmax against the build's clock, and the worst paths by their RTL names."""
    fmax, clock = timing["estimated_fmax_mhz"], timing["clock_mhz"]
    verdict = "reaches" if fmax >= clock else "does **not** reach"
    lines = ["### Timing estimate (fpga/synth/timing.json)", "",
             f"Estimated Fmax **{fmax:.0f} MHz** ({timing['margin']}, {timing['model']}): the engine {verdict} the "
             f"build's {clock:g} MHz clock. {timing['dsp_without_mreg_preg']} of {timing['dsp_cells']} DSP48s run "
             f"without their multiplier or output register; {timing['dsp_cascaded']} add another's product "
             "through their cascade input (the MAC array's lane pairs). A pre-placement estimate from yosys's netlist: "
             "Vivado's routed timing (`make bitstream` stops if it misses the clock) is the word that counts.", ""]
    if timing.get("dsp_clock") == "2x":
        lines += [f"DSPs at twice the clock: the DSP clock's worst path takes {timing['fast_critical_path_ns']} ns "
                  f"({timing['fast_estimated_fmax_mhz']:.0f} MHz DSP clock, {clock * 2:g} MHz needed); paths marked "
                  "2x count twice their delay against the engine clock. 600 MHz DSP timing on these devices is the "
                  "DPU's proof, not checked by place and route here.", ""]
    rows = [[p["delay_ns"], f"{1000 / p['delay_ns']:.0f}", p.get("clock", "1x"), f"`{p['from']}`", f"`{p['to']}`",
             p["lut_levels"], p["carry_bits"], p["dsp"], p.get("dsp_unregistered", 0), p["ram"],
             p.get("fanout_max", 0)]
            for p in timing["worst_paths"]]
    return lines + _table(["ns", "MHz", "clock", "from", "to", "LUT levels", "carry bits", "DSP", "DSP unregistered",
                           "RAM", "max fan-out"], rows) + [""]


def _cpu_costs_source(board_name: str) -> str:
    table = cpu_costs.load()
    b = board_by_name(board_name)
    return (f"measured on {table.machine} and scaled x{table.scale_for(b):.1f} to {board_name}'s CPU "
            f"({table.gbps:.0f} vs {b.cpu_gbps:g} GB/s element-wise; `fpga-run measure-cpu BUILD` on the board "
            "measures its own)")


def _sensitivity(ranked: list, shown: int = 15) -> list[str]:
    lines = ["### int8 sensitivity (one tensor at a time in int8, the rest float)", "",
             f"{len(ranked)} engine tensors probed on the accuracy frame; the worst output's cosine against the "
             "all-float partition, worst first. A tensor leaves int8 only when every layer writing or reading it "
             "runs on the CPU:", ""]
    lines += _table(["tensor", "layers writing or reading it", "subgraph", "cosine"],
                    [[t.tensor, ", ".join(t.layers), t.subgraph, f"{t.cosine:.5f}"] for t in ranked[:shown]]) + [""]
    worst = ranked[0]
    if worst.layers:
        lines += [f"To take `{worst.tensor}` out of int8 (more CPU time, more FPGA segments): "
                  + " ".join(f"`--keep-on-cpu {n}`" for n in worst.layers), ""]
    return lines


def winograd_section(trials: list) -> list[str]:
    """The 3x3 stride-1 convs `--winograd` weighed: cycles both ways by the cycle model, the measured int8 cosines
    (auto) and the choice."""
    chosen = [t for t in trials if t.chosen]
    direct = sum(t.direct_cycles for t in trials)
    after = sum(t.winograd_cycles if t.chosen else t.direct_cycles for t in trials)
    lines = ["## Winograd F(2x2, 3x3) layers", "",
             f"{len(chosen)} of {len(trials)} eligible convs compiled as integer Winograd layers: their cycles "
             f"{direct:,} -> {after:,} on one compute unit, by the cycle model (checked against Verilator on the "
             "RTL engine's Winograd unit: `benchmarks/rtl_cycles.py`). Cosines: the layer's int8 output before its "
             "activation, direct and Winograd from the same int8 input, against the float conv of the float input, "
             "on the first calibration frames (`--winograd auto` only).", ""]
    rows = [[t.node, f"{t.direct_cycles:,}", f"{t.winograd_cycles:,}",
             "-" if t.cosine_direct is None else f"{t.cosine_direct:.6f}",
             "-" if t.cosine_winograd is None else f"{t.cosine_winograd:.6f}",
             "-" if t.loss is None else f"{t.loss:.2g}", "Winograd" if t.chosen else f"direct ({t.why})"]
            for t in trials]
    return lines + _table(["conv", "direct cycles", "Winograd cycles", "cosine direct", "cosine Winograd",
                           "loss", "compiled as"], rows) + [""]


def write_report(plan: Plan, out_dir: Path, picture: Path | None, warnings: list[str],
                 verification: list | None = None, accuracy=None, exploration=None, calibration=None,
                 layers: list | None = None, synthesis: dict | None = None, sensitivity: list | None = None,
                 image: EngineImage | None = None, engine_impl: str = "rtl", splits=None,
                 winograd: list | None = None) -> Path:
    fpga = [s for s in plan.subgraphs if s.device == "fpga"]
    macs_fpga = sum(s.estimate["macs"] for s in fpga if s.estimate)
    total_nodes = sum(len(s.nodes) for s in plan.subgraphs)
    lines = [f"# Partition report: {plan.model['name']}", "",
             f"- model: `{plan.model['path']}` (sha256 `{plan.model['sha256'][:16]}…`, opset {plan.model['opset']})",
             f"- target: **{plan.target}**, board: **{plan.board}**",
             f"- {total_nodes} ONNX nodes in {len(plan.subgraphs)} subgraphs, {len(fpga)} on the FPGA "
             f"({sum(len(s.nodes) for s in fpga)} ONNX nodes fused into {sum(len(s.layers) for s in fpga)} layers, "
             f"{macs_fpga / 1e9:.3f} GMAC)",
             f"- longest chain of FPGA subgraphs a frame runs one after another: {len(plan.fpga_chain())}"
             + (f" ({' -> '.join(plan.fpga_chain())}); parallel heads and branches run beside it" if fpga else ""),
             f"- {len(plan.folded)} ONNX nodes folded into constants at import (shape arithmetic and the like) or "
             "dropped as read by nothing",
             "- times are estimates of the analytic cost model (cost.py), for the board, not measurements: "
             "engine layers by the RTL-fitted cycle model, CPU subgraphs by onnxruntime's per-op costs "
             f"{_cpu_costs_source(plan.board)}"]
    if plan.engine and engine_impl == "rtl":
        lines.append("- engine on the board: the SystemVerilog engine (`fpga/rtl`, packaged by `make ip`, built "
                     "into the overlay by `make bitstream`), the one Verilator simulates and yosys synthesises: "
                     "every cycle, resource and fps figure here describes it")
    elif plan.engine:
        lines.append("- engine on the board: the Vitis HLS engine (`--engine-impl hls`: `make hls`, then `make "
                     "bitstream`). The cycle, resource and fps figures here describe the RTL engine, not this one: "
                     "the HLS engine has not been through Vitis HLS here (its II and Fmax are unknown), and it has no "
                     "STATUS, ERROR_LAYER or performance counter registers")
    if calibration is not None:
        lines.append(f"- int8 calibration: {calibration.source}; {calibration.frame_count} frame(s) behind the "
                     f"ranges, {calibration.description}")
    if plan.engine:
        image = image or EngineImage.load(plan.root / ENGINE_DIR)
        corrected = image.calibration.get("bias_corrected") or []
        if corrected:
            lines.append(f"- bias correction: {sum(c[1] for c in corrected)} output channels of {len(corrected)} "
                         "convs lose the mean error their weights' int8 rounding adds, (Wq - W) E[x] from the "
                         "calibrated input means (`--no-bias-correction` leaves them)")
        views = image.tensors.values()
        lopsided = sum(v.zero != 0 for v in views)
        lines.append(f"- int8 codes: {lopsided} of {len(views)} engine tensors asymmetric (a zero point where the "
                     "values are lopsided, e.g. after ReLU or HardSwish; engine/zero_points.py), the rest symmetric")
    lines.append("")
    if warnings:
        lines += ["## Warnings", ""] + [f"- {w}" for w in warnings] + [""]
    lines += ["## Subgraphs (execution order)", ""] + _table(SUBGRAPH_HEADER, subgraph_rows(plan)) + [""]
    if picture is not None:
        lines += ["## Picture", "", f"![partitioned graph]({picture.name})", "",
                  "Orange: FPGA; blue: CPU pre-processing; grey: CPU compute; green: CPU post-processing.", ""]
    elif (out_dir / "partition.dot").exists():
        lines += ["## Picture", "", "`partition.dot` (Graphviz source): `dot` is not installed here or did not draw "
                  "it within its time limit; `dot -Tsvg partition.dot -o partition.svg` draws it elsewhere.", ""]
    if verification:
        lines += ["## Verification (partitioned vs original, onnxruntime)", ""]

        def where(c) -> str:
            return ("the original's own rounding (information)" if c.subgraph == OWN_ROUNDING else
                    "the original's own activation Q/DQ (information)" if c.subgraph == OWN_QUANTISATION else
                    f"{c.subgraph} alone" if c.subgraph else "the chain (model output)")
        lines += _table(["checked", "tensor", "max abs error", "max rel error", "bound", "onnxruntime vs itself", "ok"],
                        [[where(c), c.name, f"{c.max_abs:.3g}", f"{c.max_rel:.3g}", f"{c.bound:.3g}",
                          f"{c.own_gap:.3g}", "yes" if c.ok else "**NO**"] for c in verification])
        lines += ["", "Each subgraph alone is fed the original model's own tensors at its inputs and checked at its "
                  "outputs with the stated tolerance of each tensor's largest value; the chain is checked at the "
                  "model's outputs with that tolerance times the subgraphs in series before the output. "
                  "onnxruntime vs itself: the original model with graph optimisations off against on; an "
                  "ill-conditioned model moves that much from re-associated sums alone, and a check allows "
                  f"{CONDITIONING_FACTOR:g}x that where it is larger.", ""]
    if exploration is not None and exploration.chosen is not None:
        lines += design_section(exploration)
    elif image is not None:
        lines += dsp_clock_note(image.config)
    if splits is not None:
        lines += split_section(splits)
    if synthesis is not None:
        lines += synthesis_section(synthesis, exploration)
    if accuracy is not None:
        lines += [f"## int8 accuracy (reference backend vs float original, on {accuracy.frame or 'one frame'})", ""]
        if calibration is not None and "random" in calibration.source:
            lines += ["**The int8 scales come from seeded random frames**: on a trained model these figures say "
                      "little about real inputs. Calibrate with representative frames (`--calibrate DIR`).", ""]
        lines += accuracy.markdown() + [""]
    if layers:
        lines += ["### Per FPGA layer (int8 output read back from engine memory vs the float partition)", ""]
        lines += _table(["layer output", "subgraph", "cosine", "SNR dB"],
                        [[x.tensor, x.subgraph, f"{x.cosine:.5f}", f"{x.snr_db:.1f}"] for x in layers]) + [""]
    if sensitivity:
        lines += _sensitivity(sensitivity)
    if winograd:
        lines += winograd_section(winograd)
    if fpga:
        lines += ["## Fused FPGA layers", ""]
        rows = [
            [s.name, l.name, l.describe, f"{l.macs / 1e6:.1f}", ", ".join(l.covers)] for s in fpga for l in s.layers
        ]
        lines += _table(["subgraph", "layer", "operation", "MMAC", "original ONNX nodes"], rows) + [""]
    if plan.fallbacks:
        lines += ["## Compute nodes kept on the CPU", ""]
        lines += _table(["node", "op", "reason"], [[f["node"], f["op"], f["reason"]] for f in plan.fallbacks]) + [""]
    if plan.decisions:
        lines += ["## Offload decisions (cost model)", ""]
        rows = [[", ".join(d["nodes"][:3]) + (f" (+{len(d['nodes']) - 3})" if len(d["nodes"]) > 3 else ""),
                 "offload" if d["accepted"] else "keep on CPU", f"{d['estimate']['macs'] / 1e6:.1f}",
                 _ms(d["estimate"]["fpga_layers_s"]), _ms(d["estimate"]["transfer_s"]), _ms(d["estimate"]["invoke_s"]),
                 _ms(d["estimate"]["fpga_s"]), _ms(d["estimate"]["cpu_s"])] for d in plan.decisions]
        lines += _table(["region", "decision", "MMAC", "FPGA layers ms", "transfer ms", "invoke ms", "FPGA total ms",
                         "CPU ms"], rows) + [""]
    if plan.steps:
        lines += ["## Steps", ""] + _table(
            ["step", "seconds"], [[s["name"], f"{s['seconds']:.3f}"] for s in plan.steps]
        )
    path = out_dir / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
