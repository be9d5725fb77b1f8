"""Resource model of one engine compute unit, per parameter. Estimates for the design-space exploration;
DSP and BRAM counts follow from the engine's structure, LUT and FF counts are rough (to be checked against
synthesis: yosys here, Vivado on a real build).

- MAC array: PE_ROWS x VEC int8 multipliers. A DSP48E2 (UltraScale+) computes two int8 products that share
  one operand (the engine broadcasts each input lane to all PE rows, so row pairs share it): ceil(R*V / 2)
  DSPs; a DSP48E1 (Zynq-7000) one product each.
- Epilogue: per output lane one 32x32 requantisation multiply (2 DSPs in a 27x18 cascade when the shift
  discards the low half) and one residual rescale (1 DSP): 3 * PE_ROWS.
- Weight buffer: the largest weight tile of the build (kh * kw * in_c * PE_ROWS bytes), ping-pong, read
  R*V bytes per cycle: a memory count is the larger of width (R*V*8 / 72 bits) and depth (BRAM36 holds
  4,608 bytes, URAM288 36,864). On parts with UltraRAM the exploration tries the buffer in either.
- Pool line buffer: max_kernel rows x widest row x granule bytes; lookup tables in LUTRAM.
- LUTs: 6,000 for AXI masters, descriptor fetch and control; 12 per MAC (adder trees); 150 per output lane
  (requantisation, activation, saturation). FFs: twice the LUTs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from fpga_runtime.abi import EngineConfig
from fpga_runtime.boards import Board

BRAM36_BYTES, BRAM36_BITS = 4608, 72
URAM_BYTES, URAM_BITS = 36864, 72
BUDGET = 0.85            # share of each resource the engines may use; the rest is for the platform


@dataclass(frozen=True)
class Resources:
    dsp: int
    bram36: int
    uram: int
    lut: int
    ff: int

    def __add__(self, other: "Resources") -> "Resources":
        return Resources(*(a + b for a, b in zip(self.as_tuple(), other.as_tuple())))

    def times(self, k: int) -> "Resources":
        return Resources(*(a * k for a in self.as_tuple()))

    def as_tuple(self) -> tuple[int, ...]:
        return (self.dsp, self.bram36, self.uram, self.lut, self.ff)

    def fits(self, board: Board) -> bool:
        return all(used <= BUDGET * have for used, have in zip(self.as_tuple()[:4],
                                                                   (board.dsp, board.bram36, board.uram, board.lut)))

    def over_budget(self, board: Board) -> list[str]:
        """Each resource past the budget, as "DSP 2,240 of zcu104's 1,468 (85 % of 1,728)"."""
        return [f"{name} {used:,} of {board.name}'s {int(BUDGET * have):,} ({BUDGET:.0%} of {have:,})"
                for name, used, have in zip(("DSP", "BRAM36", "URAM", "LUT"), self.as_tuple()[:4],
                                            (board.dsp, board.bram36, board.uram, board.lut))
                if used > BUDGET * have]

    def share(self, board: Board) -> dict[str, float]:
        return {k: (v / have if have else 0.0) for k, v, have in
                zip(("dsp", "bram36", "uram", "lut"), self.as_tuple()[:4], (board.dsp, board.bram36, board.uram,
                                                                             board.lut))}


def _memories(nbytes: int, width_bits: int, unit_bytes: int, unit_bits: int) -> int:
    return max(math.ceil(width_bits / unit_bits), math.ceil(nbytes / unit_bytes))


def compute_unit(cfg: EngineConfig, board: Board, wbuf_bytes: int, max_width: int, weights_in_uram: bool = False
                 ) -> Resources:
    macs = cfg.pe_rows * cfg.vec
    dsp = math.ceil(macs / board.int8_macs_per_dsp) + 3 * cfg.pe_rows
    width = macs * 8
    if weights_in_uram:
        bram, uram = 0, 2 * _memories(wbuf_bytes, width, URAM_BYTES, URAM_BITS)
    else:
        bram, uram = 2 * _memories(wbuf_bytes, width, BRAM36_BYTES, BRAM36_BITS), 0
    bram += _memories(cfg.max_kernel * max_width * cfg.granule, cfg.granule * 8, BRAM36_BYTES, BRAM36_BITS)
    lut = 6000 + 12 * macs + 150 * cfg.pe_rows
    return Resources(dsp, bram, uram, lut, 2 * lut)
