"""Design-space exploration per board: chosen engine, resources against the budget, modelled fps, latency, MAC
utilisation and DDR bandwidth for the zoo's detection models, with the Vitis AI DPU figures on ZCU104 beside them.

    python benchmarks/design_space.py [--boards pynq-z2,...] [--models yolov3,...] [--objective latency|fpga]
                                      [--dsp-clock 1x,2x] [--winograd off,all]

"FPGA fps" is the cycle model's (engine cycles at the design's clock, the "MHz" column: the board's fabric clock or,
where lower, the RTL's estimated Fmax, partitioner/explore/clock.py, the "Fmax est." column, as the overlay's
MMCM makes it, fpga_runtime/pl_clocks.py; "limit" says which; several compute units
processing frames side by side on the board's sustained DDR bandwidth, fpga_runtime/prediction/shared_ddr.py; "DDR
GB/s" is what the design moves, against the ZCU104's 16.0 sustained): FPGA subgraphs only, CPU pre/post-processing
excluded, as the DPU figures exclude it. "frames/s" schedules whole frames (CPU stages included, estimated from the
board's CPU figures) as `fpga-run run` does by default; "latency" is one frame alone. The design is the one the
objective picks (default: whole-frame throughput; `--objective fpga`: the FPGA layers' own fps). `--dsp-clock 1x,2x`
explores each board twice: with the array's DSPs at the engine clock and at twice it (`partition --dsp-clock 2x`;
"DSP clock" column; UltraScale+ Zynq boards only). A 2x design's DSP clock is twice the MHz column: the timing
estimate's DSP-clock paths reach it, but 600 MHz DSP timing on these devices is the DPU's proof, not checked here by
place and route. `--winograd off,all` explores each twice more: without and with the window path's Winograd unit
(`partition --winograd`; its eligible 3x3 convs as Winograd layers; its LUTs and FFs in the resources); "MAC util"
then counts a Winograd layer's direct-convolution MACs (MAC-equivalent utilisation, above 100 % possible).
"parts left out": the engine's optional parts no layer of the model uses, which its build leaves out
(fpga_runtime/engine_parts.PARTS: lane products, the epilogue's residual stage, its activation tables; their DSPs
and LUTs not counted).
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _zoo import SIZES, fused_graph

from fpga_runtime.boards import BOARDS, board
from fpga_runtime.engine_parts import left_out
from partitioner.explore.choice import choose_design
from partitioner.explore.clock import design_clock, estimated_fmax_mhz

# Vitis AI model zoo, ZCU104, 2 x DPUCZDX8G B4096 at 300 MHz (throughput, fps)
DPU_ZCU104 = {"yolov3": 27.3, "yolov3-tiny": 329.5, "ssd-mobilenet-v1": 303.5}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--boards", default=",".join(BOARDS))
    ap.add_argument("--models", default="yolov3,yolov3-tiny,ssd300-vgg16,ssd-mobilenet-v1")
    ap.add_argument("--objective", default="throughput", choices=["throughput", "latency", "fpga"])
    ap.add_argument("--dsp-clock", default="1x", help="1x, 2x or 1x,2x: the array's DSP clock(s) to explore")
    ap.add_argument("--winograd", default="off", help="off, all, auto or a list: partition --winograd to explore")
    args = ap.parse_args()
    clocks = [int(c.strip().rstrip("x")) for c in args.dsp_clock.split(",")]
    print(
        "| board | model | pixels x PE rows x VEC | DSP clock | Winograd | parts left out | epilogue lanes "
        "| window words | weight rows "
        "| CUs | MHz | limit | Fmax est. | weights | "
        "DSP | BRAM36 | URAM | LUT | FPGA fps | frames/s | latency ms | MAC util | DDR GB/s | Vitis AI DPU fps |"
    )
    print("|---" * 24 + "|")
    with tempfile.TemporaryDirectory() as tmp:
        graphs = {}
        for name in args.models.split(","):
            graphs[name] = fused_graph(name, Path(tmp))
        for bname in args.boards.split(","):
            b = board(bname)
            for name, graph in graphs.items():
                for dsp_clock, wino in ((c, w) for c in clocks for w in args.winograd.split(",")):
                    if dsp_clock == 2 and b.dsp_clock_2x_problem:
                        continue                # partition refuses --dsp-clock 2x there
                    ex = choose_design(graph, b, objective=args.objective, dsp_clock=dsp_clock, winograd=wino)
                    d = ex.chosen
                    if d is None:
                        print(f"| {bname} | {name} | - | {dsp_clock}x | {wino} |" + " - |" * 19)
                        continue
                    c, r = d.config, d.resources
                    share = r.share(b)
                    dpu = DPU_ZCU104.get(name, "") if bname == "zcu104" else ""
                    window = c.window_words if c.pixels > 1 else "-"
                    print(f"| {bname} | {name}-{SIZES[name]} | {c.pixels} x {c.pe_rows} x {c.vec} | "
                          f"{c.dsp_clock}x | {wino}{' (unit)' if c.winograd else ''} | {left_out(c)} | "
                          f"{c.epilogue_lanes or c.granule} | {window} | {c.weight_rows} | "
                          f"{c.compute_units} | {c.clock_mhz:g} | {design_clock(b, c)[1]} | "
                          f"{estimated_fmax_mhz(b, c):.1f} | {d.weights_in} | "
                          f"{r.dsp} ({share['dsp']:.0%}) | "
                          f"{r.bram36} ({share['bram36']:.0%}) | {r.uram} ({share['uram']:.0%}) | "
                          f"{r.lut} ({share['lut']:.0%}) | {d.fps:.1f} | {d.frame_fps:.1f} | {d.latency_s * 1e3:.1f} | "
                          f"{d.mac_utilisation:.0%} | {d.ddr_bytes * d.fps / 1e9:.2f} | {dpu} |")


if __name__ == "__main__":
    main()
