"""Delays of the Xilinx primitives yosys maps the engine to, per FPGA family and speed grade: what the timing
estimate (timing.py) adds up along each register-to-register path of the synthesised netlist.

Sources, and what is ours:
- DSP48E2 (UltraScale+): AMD DS925 (Zynq UltraScale+ MPSoC data sheet), table "DSP48 Slice Switching
  Characteristics": FMAX with all registers 775 / 645 MHz (-2 / -1 at 0.85 V), 644 MHz (-2 at 0.72 V); two-register
  multiply without MREG 544 / 456 / 440 MHz; without pipeline registers (MREG, ADREG) 410 / 338 / 323 MHz. The
  internal segments below are split so that those three figures come back out (tests/test_timing.py checks it):
  a register-to-register multiply stage is `dsp_cko + dsp_mult + dsp_setup`, one without MREG adds `dsp_alu`.
- DSP48E1 (Zynq-7000 -1): DS187, FMAX with all registers 464 MHz; the other segments scaled from the DSP48E2 ones
  by the ratio of the two all-register figures (ours, not a data-sheet figure).
- Block RAM and UltraRAM clock-to-out (with and without the output register) and setup: DS925 / DS187 block RAM
  and UltraRAM switching tables as we read them (block RAM FMAX 737 MHz at -2, kept as the RAM's own minimum
  period, `bram_min_period`); not re-checked against the current revision here (the searchable copy of DS925 has
  its DSP table but not its block RAM table).
- LUT, carry, wide-mux and net delays: UltraScale+ and 7-series data sheets no longer list CLB delays, so these are
  our estimates of a placed design's typical values (a LUT level with its net about 0.45 ns at -2; a net to a
  high-fanout load grows by `net_fanout` per doubling), tuned so that a 300 MHz path at -2 holds about six LUT
  levels, the rule of thumb for UltraScale+ at that clock. They are the least certain part of the model: treat
  the estimate as +-15 % (`MARGIN`).
- `uncertainty`: clock skew and jitter left off every period (ours).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

MARGIN = 0.15        # the estimate's stated uncertainty, as a fraction of the path delay


@dataclass(frozen=True)
class DelayModel:
    """All delays in ns."""

    name: str
    ff_cko: float            # FDRE clock to Q
    ff_setup: float          # D / CE / R setup
    lut: float               # LUT1..LUT6 logic
    net: float               # a routed net to one load
    net_fanout: float        # added per doubling of the net's loads
    local: float             # dedicated connections (LUT -> MUXF / CARRY, CARRY -> CARRY, DSP cascade)
    carry8: float            # through one CARRY8 (or CARRY4 on 7-series)
    muxf: float              # MUXF7 / MUXF8 / MUXF9
    lutram_cko: float        # distributed RAM / SRL: clock to output
    dsp_cko: float           # a DSP internal register's clock to out
    dsp_setup: float         # setup at a DSP internal register
    dsp_mult: float          # multiplier (25 x 18 into 45 bits)
    dsp_alu: float           # ALU / adder after the multiplier, to P
    dsp_out: float           # P (or PCOUT) pin out of an unregistered DSP
    bram_cko: float          # block RAM clock to DOUT, no output register
    bram_cko_reg: float      # ... with DOA_REG / DOB_REG
    bram_setup: float
    bram_min_period: float   # the block RAM's own FMAX as a period
    uram_cko: float          # UltraRAM clock to DOUT, no OREG
    uram_cko_reg: float
    uram_setup: float
    uncertainty: float       # clock skew and jitter

    def dsp_fmax(self, mreg: bool, preadd_unregistered: bool = False) -> float:
        """A DSP48's own register-to-register Fmax in MHz, as the data sheet's FMAX rows define it."""
        if mreg:
            stage = self.dsp_cko + self.dsp_mult + self.dsp_setup
        else:
            stage = self.dsp_cko + self.dsp_mult + self.dsp_alu + self.dsp_setup
            if preadd_unregistered:
                stage += self.dsp_alu
        return 1000.0 / stage


# UltraScale+ -2 at 0.85 V. DSP: (775, 544, 410) MHz <- cko 0.12 + mult 1.05 + setup 0.12 = 1.29 ns;
# + alu 0.56 = 1.85 ns (541); + pre-adder (same adder delay) 0.56 = 2.41 ns (415).
ULTRASCALE_PLUS_2 = DelayModel(
    "UltraScale+ -2 (0.85 V)", ff_cko=0.09, ff_setup=0.05, lut=0.12, net=0.33, net_fanout=0.04, local=0.05,
    carry8=0.10, muxf=0.08, lutram_cko=0.85, dsp_cko=0.12, dsp_setup=0.12, dsp_mult=1.05, dsp_alu=0.56,
    dsp_out=0.30, bram_cko=1.20, bram_cko_reg=0.35, bram_setup=0.45, bram_min_period=1000 / 737, uram_cko=1.50,
    uram_cko_reg=0.40, uram_setup=0.50, uncertainty=0.15)


def _scaled(model: DelayModel, name: str, factor: float) -> DelayModel:
    fields = {k: v * factor for k, v in model.__dict__.items() if isinstance(v, float)}
    return replace(model, name=name, **fields)


# -1 at 0.85 V and -2 at 0.72 V: DS925's DSP figures (645 and 644 MHz all-register) are 775 / 645 = 1.20x slower;
# the fabric is scaled by the same factor (ours).
ULTRASCALE_PLUS_1 = _scaled(ULTRASCALE_PLUS_2, "UltraScale+ -1 (0.85 V)", 775 / 645)
# At 0.72 V the DSP's adder slows more than its multiplier (440 and 323 MHz against 644): its own segment.
ULTRASCALE_PLUS_2LV = replace(_scaled(ULTRASCALE_PLUS_2, "UltraScale+ -2 (0.72 V)", 775 / 644), dsp_alu=0.75)
# 7-series -1: DS187's DSP48E1 all-register FMAX 464 MHz against 775; fabric nets slower still (ours: 1.6x); its
# block RAM FMAX 388 MHz (DS187, as we read it).
SEVEN_SERIES_1 = replace(
    _scaled(ULTRASCALE_PLUS_2, "7-series -1", 775 / 464), net=0.55, net_fanout=0.06, lut=0.124, carry8=0.25,
    bram_min_period=1000 / 388)


def delay_model(family: str, part: str) -> DelayModel:
    """The model for a board's part: its family and the speed grade in its part name (e.g. `-2LV`)."""
    if family == "zynq7":
        return SEVEN_SERIES_1
    grade = re.search(r"-(\d)(LV|L)?(-[a-z])?$", part, re.I)
    speed, low = (int(grade.group(1)), (grade.group(2) or "").upper()) if grade else (2, "")
    if speed >= 2:
        return ULTRASCALE_PLUS_2LV if low == "LV" else ULTRASCALE_PLUS_2
    return ULTRASCALE_PLUS_1
