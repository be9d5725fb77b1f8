"""The RTL engine's estimated Fmax over engine shapes: each shape's RTL through yosys synth_xilinx and the timing
estimate (partitioner/codegen/timing.py), with its resources and worst path. The table is what the exploration's
Fmax model (partitioner/explore/clock.py) is fitted to and checked against.

    python benchmarks/timing_estimate.py --board zcu104 8x8 16x8 2x8x16 16x16 4x16x16@2x [--keep DIR]

`+uram`: the weight RAM in UltraRAM (the engine's WEIGHT_URAM, which the overlay sets per unit), else in block
RAM. `+wino`: with the window path's Winograd unit (`partition --winograd`). `@2x`: the array's DSPs at twice the clock
(`partition --dsp-clock 2x`); its Fmax is the fabric clock's, with the DSP clock's paths counted at half the period.

`--paths N` also lists each shape's N worst paths (one per endpoint signal, as timing.json lists ten): what a round
of timing work has left to fix, the first of them the row's worst path.

Each shape takes minutes (yosys, one core).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fpga_runtime.boards import BOARDS  # noqa: E402
from partitioner.codegen.sources import write_engine_sources  # noqa: E402
from partitioner.codegen.synth import synthesize  # noqa: E402
from partitioner.explore.clock import rtl_digest, shape_config  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shapes", nargs="+", help="engine shapes: [PIXELSx]ROWSxVEC[:LANES][@2x][+wino][+lean][+uram]")
    ap.add_argument("--board", default="zcu104", choices=sorted(BOARDS))
    ap.add_argument("--keep", type=Path, default=None, help="keep each shape's fpga/ folder here")
    ap.add_argument("--json", type=Path, default=None, help="append each row to this JSON-lines file")
    ap.add_argument("--paths", type=int, default=1, metavar="N",
                    help="list each shape's N worst paths (one per endpoint signal) under its row")
    args = ap.parse_args()
    board = BOARDS[args.board]
    header = (f"{'shape':>12} {'DSP':>5} {'BRAM36':>7} {'URAM':>5} {'LUT':>7} {'FF':>7} {'Fmax MHz':>9} "
              f"{'DSP no M/P':>10}  worst path")
    print(f"board {board.name} ({board.part}), clock {board.clock_mhz:g} MHz")
    print(header)
    for shape in args.shapes:
        uram = shape.endswith("+uram")
        try:
            if uram and not board.uram:
                raise ValueError(f"{shape}: {board.name} has no UltraRAM")
            config = shape_config(shape.removesuffix("+uram"), board.clock_mhz)
        except ValueError as e:
            raise SystemExit(str(e)) from None
        folder = shape.replace(":", "_").replace("@", "_").replace("+", "_")
        root = (args.keep / folder) if args.keep else Path(tempfile.mkdtemp(prefix="timing-"))
        write_engine_sources(root, "timing", config, [], board, uram_units=config.compute_units if uram else 0)
        t0 = time.perf_counter()
        r = synthesize(root / "fpga", board, lambda s: print(f"  {s}", file=sys.stderr), board.clock_mhz,
                       worst=max(10, args.paths))
        t = r["timing"]
        worst = t["worst_paths"][0]
        print(f"{shape:>12} {r['DSP']:>5} {r['BRAM36']:>7g} {r['URAM']:>5} {r['LUT']:>7} {r['FF']:>7} "
              f"{t['estimated_fmax_mhz']:>9.1f} {t['dsp_without_mreg_preg']:>10}  {worst['from']} -> {worst['to']} "
              f"({worst['lut_levels']} LUT, {worst['carry_bits']} carry, {worst['dsp']} DSP, "
              f"{worst['delay_ns']} ns) [{time.perf_counter() - t0:.0f} s]", flush=True)
        for p in t["worst_paths"][1:args.paths]:
            print(f"{'':>12} {p['delay_ns']:.3f} ns {p['clock']}: {p['from']} -> {p['to']} ({p['lut_levels']} LUT, "
                  f"{p['carry_bits']} carry, {p['dsp']} DSP, {p['ram']} RAM, fan-out {p['fanout_max']})", flush=True)
        if args.json:
            with args.json.open("a") as f:
                f.write(json.dumps({"board": board.name, "shape": shape, "rtl_digest": rtl_digest(), "vec": config.vec,
                                    "pe_rows": config.pe_rows, "pixels": config.pixels,
                                    "epilogue_lanes": config.epilogue_lanes, "dsp_clock": config.dsp_clock,
                                    "winograd": config.winograd, "weights_in": "uram" if uram else "bram",
                                    **{k: r[k] for k in ("DSP", "BRAM36", "URAM", "LUT", "FF")},
                                    "fmax_mhz": t["estimated_fmax_mhz"],
                                    **({"fast_fmax_mhz": t["fast_estimated_fmax_mhz"]}
                                       if "fast_estimated_fmax_mhz" in t else {}),
                                    "worst": worst}) + "\n")


if __name__ == "__main__":
    main()
