"""The engine clock per board and engine shape: the estimated Fmax (partitioner/explore/clock.py), the clock the
processor alone would make below it (its PLL over whole divisors), and the one the overlay's MMCM makes
(fpga_runtime/pl_clocks.py), with the MMCM's setting and what it gains. Every fps figure scales with this clock.

    python benchmarks/engine_clocks.py [--boards zcu104,kv260,...] [--shapes 4x16x16,8x16x16,...]
"""
from __future__ import annotations

import argparse
from dataclasses import replace

from fpga_runtime.abi import EngineConfig
from fpga_runtime.boards import BOARDS
from fpga_runtime.pl_clocks import PL_PLL_MHZ, engine_clocking, ps_clock_at_most
from partitioner.explore.clock import design_clock, estimated_fmax_mhz

SHAPES = "8x8,16x16,2x8x16,4x16x16,4x16x16+wino,4x16x16@2x,8x16x16,8x16x8,4x32x16@2x"


def _config(shape: str) -> EngineConfig:
    base, _, clock = shape.partition("@")
    base, _, wino = base.partition("+")
    cfg = EngineConfig.from_shape(base, dsp_clock=2 if clock == "2x" else 1)
    return replace(cfg, winograd=wino == "wino")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--boards", default=",".join(b for b, s in BOARDS.items() if s.family in PL_PLL_MHZ))
    ap.add_argument("--shapes", default=SHAPES)
    args = ap.parse_args()
    print("| board | shape | board clock | Fmax est. | PS alone | MMCM clock | MMCM setting (100 MHz x mult / divide) "
          "| gain |")
    print("|---" * 8 + "|")
    for name in args.boards.split(","):
        board = BOARDS[name]
        for shape in args.shapes.split(","):
            cfg = _config(shape)
            if cfg.dsp_clock_problem() or (cfg.dsp_clock == 2 and board.dsp_clock_2x_problem):
                continue
            fmax = estimated_fmax_mhz(board, cfg)
            ps = ps_clock_at_most(board.family, min(board.clock_mhz, fmax))
            clock, _ = design_clock(board, cfg)
            m = engine_clocking(board.family, clock, cfg.dsp_clock).mmcm
            setting = f"x {m.mult:g} / {m.divide}" + (f" (DSPs / {m.fast_divide})" if m.fast_divide else "")
            print(f"| {name} | {shape} | {board.clock_mhz:g} | {fmax:.1f} | {ps:.1f} | {clock:g} | {setting}, VCO "
                  f"{m.vco_mhz:g} MHz | {100 * (clock / ps - 1):+.1f} % |")


if __name__ == "__main__":
    main()
