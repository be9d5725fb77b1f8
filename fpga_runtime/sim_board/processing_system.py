"""The processor's clock registers on the simulated board: PYNQ's `Overlay.download()` sets the PL clock from the
overlay metadata by writing them (PL0_REF_CTRL in CRL_APB on Zynq UltraScale+ (UG1085), FPGA0_CLK_CTRL in
SLCR on Zynq-7000 (UG585)), and the simulated engine then runs at the clock PYNQ really set.

PYNQ keeps one clock object per process, bound to the first device it saw, so the registers are one per
process here too, as a board has one processing system."""
from __future__ import annotations

from fpga_runtime.sim_board.units import RegisterFile

# (window base, size, reset words) per family, with the PLL the PL clock divides: ZU+ IOPLL = 33.333 MHz x 90 / 2,
# Zynq-7000 IO PLL = 50 MHz x 20; the PL clock resets to 100 MHz
CRL_APB, CRF_APB, SLCR = 0xFF5E_0000, 0xFD1A_0000, 0xF800_0000
ZU_REF_MHZ, ZYNQ_REF_MHZ = 33.333, 50.0
IOPLL_CTRL, PL0_REF_CTRL = 0x20, 0xC0
IO_PLL_CTRL, FPGA0_CLK_CTRL = 0x108, 0x170

_WINDOWS = {
    "zynqmp": [(CRL_APB, 0x1000, {IOPLL_CTRL: 90 << 8 | 1 << 16, PL0_REF_CTRL: 1 << 24 | 1 << 16 | 15 << 8}),
               (CRF_APB, 0x1000, {})],
    "zynq7": [(SLCR, 0x1000, {IO_PLL_CTRL: 20 << 12, FPGA0_CLK_CTRL: 1 << 20 | 10 << 8})],
}
_FILES: dict[int, RegisterFile] = {}


def clock_windows(family: str) -> list[tuple[int, int, RegisterFile]]:
    return [(base, size, _FILES.setdefault(base, RegisterFile(reset))) for base, size, reset in _WINDOWS[family]]


def _bits(word: int, offset: int, width: int) -> int:
    return word >> offset & ((1 << width) - 1)


def pl0_clock_mhz(family: str) -> float:
    """PL clock 0 as the registers now set it."""
    if family == "zynq7":
        regs = clock_windows(family)[0][2]
        pll = ZYNQ_REF_MHZ * _bits(regs.read(IO_PLL_CTRL), 12, 7)
        ctrl = regs.read(FPGA0_CLK_CTRL)
        return pll / max(1, _bits(ctrl, 8, 6) * _bits(ctrl, 20, 6))
    regs = clock_windows(family)[0][2]
    pll_word = regs.read(IOPLL_CTRL)
    pll = ZU_REF_MHZ * _bits(pll_word, 8, 7) / (2 if _bits(pll_word, 16, 1) else 1)
    ctrl = regs.read(PL0_REF_CTRL)
    return pll / max(1, _bits(ctrl, 8, 6) * _bits(ctrl, 16, 6))
