"""How a Zynq overlay makes its engine clock: an MMCM in the fabric (Vivado's clocking wizard) turns the PS's PL
clock 0, at 100 MHz, into it, as the DPU's reference designs make theirs.

The PS alone makes only its PLL over whole divisors (1500 / 6 = 250 MHz, then 1500 / 5 = 300 MHz on Zynq
UltraScale+; 1500 / 8 = 187.5 for the Ultra96-V2's 200 MHz), so an engine whose estimated Fmax falls between two of
them would lose up to 17 % to the step below. The MMCM's VCO is its input times a multiplier in eighths, over a
whole output divisor: the engine clock in steps of 2-3 MHz. With the DSPs at twice the engine clock both come from
the one MMCM, the fast one on half the slow one's divisor, so their edges align.

MMCM limits: UltraScale+ (MMCME4), the "MMCM Specification" table as DS923 (Virtex) and DS931 (Artix UltraScale+)
print it: VCO 800-1600 MHz on every grade, output at most 775 (-2) / 667 (-1) MHz (DS925's own copy of the table,
for Zynq UltraScale+, was not in the searchable documents here); CLKFBOUT_MULT_F 2-128 in steps of 0.125 (UG572).
Zynq-7000 (MMCME2) at -1: VCO 600-1200 MHz as DS189 prints it for 7-series -1 parts, a global clock buffer at most
464 MHz (DS187's -1 figure, not re-read here), CLKFBOUT_MULT_F 2-64 (UG472). We keep every output at or below the
slower grade's figure and the multiplier's eighths on the feedback path only (each output divisor whole)."""
from __future__ import annotations

import bisect
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from fpga_runtime.abi import ENGINE_VLNV

# The PL clock's source PLL on a Zynq's PS (the IOPLL, as the PS configuration presets have it): a PL clock is this
# rate over two 6-bit divisors, so the PS makes only some clocks (1500 / 14 = 107.1 MHz, 1500 / 15 = 100 MHz).
PL_PLL_MHZ = {"zynq7": 1000.0, "zynqmp": 1500.0}
MMCM_INPUT_MHZ = 100.0      # PL clock 0 feeding the MMCM: the PS makes it exactly on both families (1500/15, 1000/10)


@dataclass(frozen=True)
class MmcmLimits:
    vco_mhz: tuple[float, float]
    out_max_mhz: float
    mult_max: float


MMCM_LIMITS = {"zynqmp": MmcmLimits((800.0, 1600.0), 667.0, 128.0),
               "zynq7": MmcmLimits((600.0, 1200.0), 464.0, 64.0)}


def _divisor_pairs() -> dict[int, tuple[int, int]]:
    """Each product two 6-bit divisors make, with its lowest pair."""
    pairs: dict[int, tuple[int, int]] = {}
    for a in range(1, 64):
        for b in range(1, 64):
            pairs.setdefault(a * b, (a, b))
    return pairs


DIVISOR_PAIRS = _divisor_pairs()


def pl_divisors(pll_mhz: float, clock_mhz: float) -> tuple[int, int, float]:
    """Two 6-bit divisors whose product comes closest to pll / clock, and the clock they give."""
    n = min(DIVISOR_PAIRS, key=lambda k: (abs(pll_mhz / k - clock_mhz), DIVISOR_PAIRS[k]))
    return (*DIVISOR_PAIRS[n], pll_mhz / n)


def ps_clock_at_most(family: str, mhz: float) -> float:
    """The fastest clock the PS alone makes not above `mhz`: its PLL over two 6-bit divisors (what the overlay's
    engine clock would be without the MMCM)."""
    pll = PL_PLL_MHZ[family]
    return pll / min(k for k in DIVISOR_PAIRS if pll / k <= mhz + 1e-9)


@dataclass(frozen=True)
class Mmcm:
    """One MMCM setting: VCO = input x mult / divclk; the engine clock = VCO / divide; with the DSPs at twice it,
    their clock = VCO / fast_divide (fast_divide = divide / 2)."""

    input_mhz: float
    mult: float                 # CLKFBOUT_MULT_F, in eighths
    divclk: int                 # DIVCLK_DIVIDE
    divide: int                 # CLKOUT0_DIVIDE_F (whole): the engine clock
    fast_divide: int | None     # CLKOUT1_DIVIDE: the DSPs' clock at 2x, or None

    @property
    def vco_mhz(self) -> float:
        return self.input_mhz * self.mult / self.divclk

    @property
    def mhz(self) -> float:
        return self.vco_mhz / self.divide

    @property
    def fast_mhz(self) -> float | None:
        return None if self.fast_divide is None else self.vco_mhz / self.fast_divide


@lru_cache(maxsize=None)
def _mmcm_table(family: str, double: bool) -> tuple[list[int], list[Mmcm]]:
    """Every engine clock (whole kHz) an MMCM from MMCM_INPUT_MHZ makes within the family's limits, with the
    setting of the highest VCO (the least jitter), sorted by clock. The input is not divided (the phase detector at
    100 MHz, the wizard's own first choice): the VCO then moves in 12.5 MHz steps, so the engine clock in steps
    of 2-3 MHz near 250 MHz."""
    lim = MMCM_LIMITS[family]
    in_khz = round(MMCM_INPUT_MHZ * 1000)
    lo = max(16, -(-int(lim.vco_mhz[0] * 8) // int(MMCM_INPUT_MHZ)))
    hi = min(int(lim.mult_max * 8), int(lim.vco_mhz[1] * 8 // MMCM_INPUT_MHZ))
    best: dict[int, Mmcm] = {}
    for m8 in range(lo, hi + 1):
        for divide in range(2 if double else 1, 129, 2 if double else 1):
            if (in_khz * m8) % (8 * divide):
                continue
            khz = in_khz * m8 // (8 * divide)
            if (2 * khz if double else khz) > lim.out_max_mhz * 1000:
                continue
            if khz not in best or m8 > best[khz].mult * 8:
                best[khz] = Mmcm(MMCM_INPUT_MHZ, m8 / 8, 1, divide, divide // 2 if double else None)
    keys = sorted(best)
    return keys, [best[k] for k in keys]


def mmcm_at_most(family: str, mhz: float, double: bool = False) -> Mmcm | None:
    """The MMCM setting of the fastest engine clock not above `mhz` (None without an MMCM model for the family,
    or below every clock it makes)."""
    if family not in MMCM_LIMITS:
        return None
    keys, settings = _mmcm_table(family, double)
    i = bisect.bisect_right(keys, int(round(mhz * 1000, 6)))
    return settings[i - 1] if i else None


@dataclass(frozen=True)
class EngineClocking:
    """PL clock 0 as the PS makes it (its PLL over div0 x div1), and the MMCM that makes the engine clock (and the
    DSPs' at 2x) from it."""

    pl0_mhz: float
    div0: int
    div1: int
    mmcm: Mmcm

    @property
    def engine_mhz(self) -> float:
        return self.mmcm.mhz


def engine_clocking(family: str, clock_mhz: float, dsp_clock: int = 1) -> EngineClocking:
    """How the overlay makes `clock_mhz` (at most that, to the kHz)."""
    mmcm = mmcm_at_most(family, clock_mhz, double=dsp_clock == 2)
    if mmcm is None:
        raise ValueError(f"no MMCM setting makes an engine clock of at most {clock_mhz:g} MHz on a {family} part "
                         f"(its slowest is {slowest_mmcm_mhz(family, dsp_clock):g} MHz)")
    div0, div1, made = pl_divisors(PL_PLL_MHZ[family], MMCM_INPUT_MHZ)
    return EngineClocking(made, div0, div1, mmcm)


def slowest_mmcm_mhz(family: str, dsp_clock: int = 1) -> float:
    return _mmcm_table(family, dsp_clock == 2)[0][0] / 1000


def clock_at_most(family: str, mhz: float, dsp_clock: int = 1) -> float | None:
    """The fastest engine clock a Zynq overlay makes that is not above `mhz` (None on a board without a PS:
    Alveo, whose shell makes the kernel clock; or below the slowest the MMCM makes)."""
    mmcm = mmcm_at_most(family, mhz, double=dsp_clock == 2)
    return mmcm.mhz if mmcm else None


def _engine_clock_source(root: ET.Element) -> tuple[ET.Element | None, str]:
    """The clocking wizard driving the first engine's ap_clk and which of its outputs, by the .hwh's connections;
    without connections, the overlay's one wizard (None where it has none or several)."""
    modules = {m.get("INSTANCE"): m for m in root.iter("MODULE")}
    for m in modules.values():
        if m.get("VLNV") != ENGINE_VLNV:
            continue
        port = next((p for p in m.iter("PORT") if p.get("NAME") == "ap_clk"), None)
        link = port.find("CONNECTIONS/CONNECTION") if port is not None else None
        if link is not None:
            source = modules.get(link.get("INSTANCE"))
            wizard = source if source is not None and source.get("MODTYPE") == "clk_wiz" else None
            return wizard, link.get("PORT", "clk_out1")
        break
    wizards = [m for m in modules.values() if m.get("MODTYPE") == "clk_wiz"]
    return (wizards[0] if len(wizards) == 1 else None), "clk_out1"


def fabric_clock_ratio(hwh: Path) -> float:
    """The engine clock over PL clock 0: what the clocking wizard (MMCM) driving the engines multiplies it by, from
    the .hwh's clk_wiz parameters (1 where PL clock 0 drives them). The simulated board's engine clock is PL clock 0
    times it."""
    try:
        root = ET.parse(hwh).getroot()
    except (OSError, ET.ParseError) as exc:
        raise OSError(f"{hwh}: not overlay metadata ({exc})") from None
    wizard, output = _engine_clock_source(root)
    if wizard is None:
        return 1.0
    n = int(output[len("clk_out"):]) if output.startswith("clk_out") and output[7:].isdigit() else 1
    divider = "MMCM_CLKOUT0_DIVIDE_F" if n == 1 else f"MMCM_CLKOUT{n - 1}_DIVIDE"
    params = {p.get("NAME"): p.get("VALUE") for p in wizard.iter("PARAMETER")}
    try:
        mult, divclk, divide = (float(params[k]) for k in ("MMCM_CLKFBOUT_MULT_F", "MMCM_DIVCLK_DIVIDE", divider))
    except (KeyError, TypeError, ValueError):
        raise OSError(f"{hwh}: its clocking wizard {wizard.get('INSTANCE')!r} lacks a readable "
                      f"MMCM_CLKFBOUT_MULT_F, MMCM_DIVCLK_DIVIDE or {divider}") from None
    if not (2 <= mult <= 128 and 1 <= divclk <= 106 and 1 <= divide <= 128):
        raise OSError(f"{hwh}: clocking wizard setting out of an MMCM's range (mult {mult:g}, divclk {divclk:g}, "
                      f"divide {divide:g})")
    return mult / (divclk * divide)
