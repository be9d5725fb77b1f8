"""Board catalog: fabric resources, default clock, DDR bandwidth the fabric sees, and the host CPU.

Fabric figures are the device totals from the public AMD/Xilinx product tables: DS190 (Zynq-7000 family
overview), DS891 (Zynq UltraScale+ MPSoC overview), DS987 (Kria K26 SOM) and DS962 (Alveo U200/U250).
DDR bandwidth is the peak of the board's memory interface (bus width x transfer rate, from the board's user
guide); what the fabric sustains is that times `ddr_efficiency`, the share of the peak a measurement of the
same memory system moved (every timing model uses the sustained figure):
- Zynq UltraScale+ with 64-bit DDR4 (ZCU102, ZCU104, KV260): 75 %, and the Ultra96's LPDDR4: 92.5 %, measured
  from PL masters on the HP/HPC ports of a ZCU102 and an Ultra96 by Manev, Vaishnav and Koch, "Unexpected
  Diversity: Quantitative Memory Analysis for Zynq UltraScale+ Systems", FPT 2019.
- Zynq-7000: 75 %, the maximum efficiency AMD designed the DDR controller for (UG585, "DDR Efficiency").
- Alveo: no measured figure for the U250's memory controllers here; the ZCU102's 75 % is taken.
Host CPU throughput is our own rough figure for float32 onnxruntime on that CPU, used only by the cost model to
decide what is worth offloading; it is marked as an estimate in every report.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Board:
    name: str
    part: str
    family: str              # "zynq7" (DSP48E1), "zynqmp" or "alveo" (DSP48E2)
    dsp: int
    bram36: int
    uram: int
    lut: int
    ff: int
    clock_mhz: float         # default fabric clock for the engine
    ddr_gbps: float          # peak DDR bandwidth seen by the fabric, GB/s
    cpu: str
    cpu_gmacs: float         # estimate: float32 GMAC/s of onnxruntime on the host CPU
    cpu_gbps: float          # estimate: host memory throughput for element-wise work, GB/s
    cpu_ghz: float = 3.0     # the CPU's clock
    cpu_ipc: float = 1.0     # estimate: scalar work per clock against an out-of-order x86-64 core (in-order A53: 0.5)
    ddr_efficiency: float = 0.75   # sustained share of the DDR peak from the fabric (the sources above)

    @property
    def ddr_sustained_gbps(self) -> float:
        """The DDR bandwidth the fabric's masters sustain together, GB/s: what every timing model uses."""
        return self.ddr_gbps * self.ddr_efficiency

    @property
    def port_bits(self) -> int:
        """Data width of one fabric port to DDR: S_AXI_HP on Zynq-7000 (64), S_AXI_HP(C) on Zynq UltraScale+
        (128), a DDR4 controller's AXI port on Alveo (512)."""
        return {"zynq7": 64, "zynqmp": 128}.get(self.family, 512)

    @property
    def int8_macs_per_dsp(self) -> int:
        """DSP48E2 (UltraScale+) packs two int8 products sharing one operand; DSP48E1 does one."""
        return 1 if self.family == "zynq7" else 2

    @property
    def dsp_clock_2x_problem(self) -> str | None:
        """Why an engine with its DSPs at twice the clock (`--dsp-clock 2x`) cannot run here, or None."""
        if self.int8_macs_per_dsp != 2:
            return (f"2x needs UltraScale+ DSP48E2s; {self.name}'s DSP48E1s cannot take the packed products at twice "
                    "the clock")
        if self.family == "alveo":
            return (f"2x needs two clocks with aligned edges from one MMCM, which the Zynq overlay makes; "
                    f"{self.name}'s shell gives a kernel clocks it does not promise to align")
        return None


BOARDS: dict[str, Board] = {b.name: b for b in [
    # XC7Z020-1CLG400C; DDR3 16-bit at 1050 MT/s (PYNQ-Z2 reference manual)
    Board("pynq-z2", "xc7z020clg400-1", "zynq7", dsp=220, bram36=140, uram=0, lut=53_200, ff=106_400,
          clock_mhz=100, ddr_gbps=2.1, cpu="2x Cortex-A9 650 MHz", cpu_gmacs=0.6, cpu_gbps=0.8,
          cpu_ghz=0.65, cpu_ipc=0.5),
    # XCZU3EG-SBVA484-1; LPDDR4 32-bit at 2133 MT/s (Ultra96-V2 hardware user guide)
    Board("ultra96v2", "xczu3eg-sbva484-1-i", "zynqmp", dsp=360, bram36=216, uram=0, lut=70_560, ff=141_120,
          clock_mhz=200, ddr_gbps=8.5, cpu="4x Cortex-A53 1.5 GHz", cpu_gmacs=4.0, cpu_gbps=2.5,
          cpu_ghz=1.5, cpu_ipc=0.5, ddr_efficiency=0.925),
    # Kria K26 (XCK26-SFVC784-2LV-C); DDR4 64-bit at 2400 MT/s (DS987)
    Board("kv260", "xck26-sfvc784-2LV-c", "zynqmp", dsp=1_248, bram36=144, uram=64, lut=117_120, ff=234_240,
          clock_mhz=250, ddr_gbps=19.2, cpu="4x Cortex-A53 1.33 GHz", cpu_gmacs=3.5, cpu_gbps=3.0,
          cpu_ghz=1.33, cpu_ipc=0.5),
    # XCZU7EV-2FFVC1156; PS DDR4 64-bit at 2666 MT/s (UG1267)
    Board("zcu104", "xczu7ev-ffvc1156-2-e", "zynqmp", dsp=1_728, bram36=312, uram=96, lut=230_400, ff=460_800,
          clock_mhz=300, ddr_gbps=21.3, cpu="4x Cortex-A53 1.2 GHz", cpu_gmacs=3.2, cpu_gbps=3.0,
          cpu_ghz=1.2, cpu_ipc=0.5),
    # XCZU9EG-2FFVB1156; PS DDR4 64-bit at 2666 MT/s (UG1182)
    Board("zcu102", "xczu9eg-ffvb1156-2-e", "zynqmp", dsp=2_520, bram36=912, uram=0, lut=274_080, ff=548_160,
          clock_mhz=300, ddr_gbps=21.3, cpu="4x Cortex-A53 1.2 GHz", cpu_gmacs=3.2, cpu_gbps=3.0,
          cpu_ghz=1.2, cpu_ipc=0.5),
    # XCU250-FIGD2104-2L-E; 4x DDR4 64-bit at 2400 MT/s (DS962); host is a PCIe x86 server
    Board("alveo-u250", "xcu250-figd2104-2L-e", "alveo", dsp=12_288, bram36=2_688, uram=1_280, lut=1_728_000,
          ff=3_456_000, clock_mhz=300, ddr_gbps=77.0, cpu="x86-64 server, 16 cores", cpu_gmacs=200.0,
          cpu_gbps=20.0),
]}


# share of each resource the engines may use: the platform (AXI SmartConnects, the interrupt controller, the
# processor's ports) takes LUTs, FFs and block RAM but no DSP, so only timing closure limits the DSPs. Flip-flops
# (two per LUT on these parts) less than the LUTs: a register past one per LUT needs a slice's second flip-flop with
# the same clock enable and reset, so a design near every flip-flop does not pack. 70 % is our judgment, not an AMD
# figure; the double-pumped arrays are the register-heavy designs (65-95 % of the ZCU104's before this budget)
BUDGET = {"dsp": 0.95, "bram36": 0.85, "uram": 0.85, "lut": 0.85, "ff": 0.70}
RESOURCE_NAMES = {"dsp": "DSP", "bram36": "BRAM36", "uram": "URAM", "lut": "LUT", "ff": "FF"}


def over_budget(b: Board, used: dict[str, int], budget: dict[str, float] = BUDGET) -> list[str]:
    """Each resource past the budget, as "DSP 2,240 of zcu104's 1,641 (95% of 1,728)"."""
    return [f"{name} {used[key]:,} of {b.name}'s {int(budget[key] * getattr(b, key)):,} "
            f"({budget[key]:.0%} of {getattr(b, key):,})"
            for key, name in RESOURCE_NAMES.items() if key in budget and used[key] > budget[key] * getattr(b, key)]


def weight_mixes(b: Board, units: int) -> tuple[int, ...]:
    """How many of `units` engine compute units may keep their weights in UltraRAM, the others in block RAM: any
    count on a Zynq part with UltraRAM (the overlay sets each instance's WEIGHT_URAM), all or none on an Alveo card
    (`v++ --link` instantiates one kernel for every unit), none without UltraRAM."""
    if not b.uram:
        return (0,)
    return (0, units) if b.family == "alveo" else tuple(range(units + 1))


def mixed_units(in_bram: dict, in_uram: dict, units: int, uram_units: int) -> dict:
    """The resources of `units` units, `uram_units` of them with their weights in UltraRAM: one unit's each way."""
    return {k: (units - uram_units) * v + uram_units * in_uram[k] for k, v in in_bram.items()}


def board(name: str) -> Board:
    try:
        return BOARDS[name.lower()]
    except KeyError:
        raise KeyError(f"unknown board {name!r}; known boards: {', '.join(BOARDS)}") from None


def port_bytes(name: str | None) -> int:
    """Bytes per cycle of one fabric port to DDR on the named board (a ZU+ HP port's without a known board)."""
    b = BOARDS.get((name or "").lower())
    return b.port_bits // 8 if b is not None else 16
