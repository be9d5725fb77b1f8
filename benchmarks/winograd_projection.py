"""What integer Winograd F(2x2, 3x3) would give the engine the exploration picks, before its RTL exists (issue
26): FPGA fps of each zoo detector with every eligible conv direct and as a Winograd layer, on the same design at
the same clock, beside the Vitis AI DPU's figure.

    python benchmarks/winograd_projection.py [--board zcu104] [--models yolov3,...] [--dsp-clock 1x,2x]

A projection, not a measurement: the Winograd layers' cycles are the cycle model's terms for the planned datapath
(fpga_runtime/cycle_model.py, `_winograd_steps`: 16 array steps per input-channel beat for `pixels` tiles of 2x2
outputs, two output rows per row of tiles), not fitted to any RTL; the Winograd unit's resources (the input
transform's adders, 16 accumulators per tile, the output transform) are not in the design's budget, so a design
that fits without them may not fit with them; its DDR traffic counts 16 weights per channel pair instead of 9. The
clock is the design's (the board's, or the RTL's estimated Fmax where lower), and the Winograd unit's paths are
not in that estimate. A conv is taken as a Winograd layer where that is faster (as `--winograd auto`'s cycle test
does; its cosine test needs frames). "3x3 share": the FPGA time the eligible convs take when direct.
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _zoo import SIZES, fused_graph
from design_space import DPU_ZCU104

from fpga_runtime.boards import board
from partitioner.engine.winograd import trials
from partitioner.explore.choice import choose_design


def project(graph, design, b) -> tuple[float, float, int, int]:
    """(FPGA fps with Winograd where it is faster, share of the direct FPGA time the eligible convs took, convs
    taken as Winograd layers, eligible convs)."""
    weighed = trials(graph, list(design.layer_s), design.config, "auto", b)   # auto's speed test, per conv
    chosen = [t for t in weighed if t.chosen]
    frame = design.frame_s + sum(t.winograd_s - design.layer_s[t.node] for t in chosen)
    extra_bytes = sum(t.extra_bytes for t in chosen)
    fps = min(design.config.compute_units / frame, b.ddr_gbps * 1e9 / max(design.ddr_bytes + extra_bytes, 1))
    return fps, sum(design.layer_s[t.node] for t in weighed) / design.frame_s, len(chosen), len(weighed)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--board", default="zcu104")
    ap.add_argument("--models", default="yolov3,yolov3-tiny,ssd300-vgg16,ssd-mobilenet-v1")
    ap.add_argument("--dsp-clock", default="1x,2x")
    args = ap.parse_args()
    b = board(args.board)
    print("| model | design | DSP clock | MHz | Winograd layers of eligible | 3x3 share of FPGA time | "
          "FPGA fps direct | FPGA fps Winograd (projected) | Vitis AI DPU fps |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            graph = fused_graph(name, Path(tmp))
            for clock in [int(c.strip().rstrip("x")) for c in args.dsp_clock.split(",")]:
                if clock == 2 and b.dsp_clock_2x_problem:
                    continue
                d = choose_design(graph, b, dsp_clock=clock).chosen
                if d is None:
                    print(f"| {name} | none fits | {clock}x |" + " - |" * 6)
                    continue
                fps, share, count, eligible = project(graph, d, b)
                c = d.config
                dpu = DPU_ZCU104.get(name, "") if b.name == "zcu104" else ""
                print(f"| {name}-{SIZES[name]} | {c.describe()} | {clock}x | {c.clock_mhz:g} | {count} of {eligible} "
                      f"| {share:.0%} | {d.fps:.1f} | {fps:.1f} | {dpu} |", flush=True)


if __name__ == "__main__":
    main()
