"""`fpga-run run --backend verilator --profile`: clock cycles of every layer as the RTL ran it, beside the cycle
model, with the array's use, why it stalled and the bytes moved (profile.json and a table)."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from fpga_runtime.abi import Descriptor, Flag, Op
from fpga_runtime.boards import port_bytes
from fpga_runtime.cycle_model import LayerShape, layer_cycles
from fpga_runtime.engine_image import EngineImage
from fpga_runtime.rtl_sim.single_layer import program_descriptors

STALLS = {"input": "stall_input", "weights": "stall_weights", "output": "stall_output", "epilogue": "stall_epilogue"}
_OPS = {Op.CONV: "conv", Op.ADD: "add", Op.MAXPOOL: "maxpool", Op.COPY: "copy", Op.GLOBAL_AVG_POOL: "global_avg_pool",
        Op.SCALE: "scale", Op.L2NORM: "l2norm"}


def op_name(d: Descriptor) -> str:
    if d.op == Op.CONV and d.flags & Flag.DEPTHWISE:
        return "depthwise_conv"
    return _OPS.get(Op(d.op), str(d.op))


def layer_macs(d: Descriptor) -> int:
    """Multiply-accumulates the engine does for the layer (physical channels, padding included)."""
    if d.op != Op.CONV:
        return 0
    pixels = d.batch * d.conv_h * d.conv_w * d.kh * d.kw
    return pixels * d.out_c * (1 if d.flags & Flag.DEPTHWISE else d.in_c)


def build_profile(image: EngineImage, const: np.ndarray, runs) -> dict:
    """Layers of every program run (`runs`: backend ProgramRun records), averaged over the runs of a program."""
    cfg = image.config
    sums: dict[tuple[str, int], dict] = {}
    counts: dict[str, int] = defaultdict(int)
    for run in runs:
        counts[run.program.subgraph] += 1
        descriptors = program_descriptors(const, run.program.addr, run.program.layers)
        for k, (d, measured) in enumerate(zip(descriptors, run.result.layers)):
            key = (run.program.subgraph, k)
            row = sums.setdefault(key, {
                "subgraph": run.program.subgraph, "program": run.program.subgraph, "layer": int(d.layer_id),
                "name": run.program.layer_names[k] if k < len(run.program.layer_names) else "",
                "op": op_name(d), "macs": layer_macs(d), "cycles": 0,
                "model_cycles": layer_cycles(LayerShape.of(d, cfg), cfg, port_bytes(image.board)), "mac_busy": 0,
                "stalls": {s: 0 for s in STALLS}, "bytes_read": 0, "bytes_written": 0})
            c = measured.counters
            row["cycles"] += measured.cycles
            row["mac_busy"] += c["mac_busy"]
            for s, counter in STALLS.items():
                row["stalls"][s] += c[counter]
            row["bytes_read"] += c["act_bytes_read"] + c["const_bytes_read"]
            row["bytes_written"] += c["act_bytes_written"]
    layers = []
    for (subgraph, _), row in sums.items():
        n = counts[subgraph]
        for key in ("cycles", "mac_busy", "bytes_read", "bytes_written"):
            row[key] = round(row[key] / n)
        row["stalls"] = {s: round(v / n) for s, v in row["stalls"].items()}
        layers.append(row)
    layers.sort(key=lambda r: r["layer"])
    return {"clock_mhz": cfg.clock_mhz, "engine": f"{cfg.pe_rows}x{cfg.vec}", "board": image.board,
            "layers": layers, "total_cycles": sum(r["cycles"] for r in layers),
            "total_model_cycles": sum(r["model_cycles"] for r in layers)}


def write_profile(profile: dict, path: Path) -> None:
    path.write_text(json.dumps(profile, indent=1) + "\n")


def profile_table(profile: dict, array_macs: int, limit: int | None = None) -> str:
    """Per layer: measured and modelled cycles, MAC utilisation (MACs / (cycles x array)), stall shares."""
    rows = profile["layers"]
    shown = sorted(rows, key=lambda r: -r["cycles"])[:limit] if limit else rows
    head = (f"{'layer':>5} {'op':<15} {'name':<28} {'cycles':>11} {'model':>11} {'err':>6} {'MAC util':>8} "
            f"{'in':>5} {'wts':>5} {'out':>5} {'epi':>5} {'MB r/w':>11}")
    lines = [head, "-" * len(head)]
    for r in sorted(shown, key=lambda r: r["layer"]):
        cyc = max(r["cycles"], 1)
        util = r["macs"] / (cyc * array_macs)
        st = {s: v / cyc for s, v in r["stalls"].items()}
        lines.append(
            f"{r['layer']:>5} {r['op']:<15} {r['name'][:28]:<28} {r['cycles']:>11,} {r['model_cycles']:>11,} "
            f"{r['model_cycles'] / cyc - 1:>+6.1%} {util:>8.1%} {st['input']:>5.0%} {st['weights']:>5.0%} "
            f"{st['output']:>5.0%} {st['epilogue']:>5.0%} "
            f"{r['bytes_read'] / 1e6:>5.1f}/{r['bytes_written'] / 1e6:<5.1f}"
        )
    total, model = profile["total_cycles"], profile["total_model_cycles"]
    macs = sum(r["macs"] for r in rows)
    lines.append(
        f"total: {total:,} cycles = {total / (profile['clock_mhz'] * 1e3):.3f} ms at {profile['clock_mhz']:g} MHz "
        f"(model {model:,}, {model / max(total, 1) - 1:+.1%}); MAC utilisation "
        f"{macs / max(total * array_macs, 1):.1%}"
    )
    if limit and len(rows) > limit:
        lines.append(f"({limit} slowest of {len(rows)} layers shown; all in profile.json)")
    return "\n".join(lines)
