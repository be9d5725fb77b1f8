"""The Zynq overlay of a build, described once and rendered twice: the Vivado block design script
(`overlay/overlay.tcl`) and the metadata PYNQ reads (`overlay/<name>.hwh`), so the two name the same IP, base
addresses, register map and interrupts. Vivado's own export of the .hwh (`make bitstream`) replaces the
generated one next to the bitstream; the generated one is what the simulated board reads until then."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fpga_runtime.abi import ENGINE_VLNV, REGISTER_MAP
from fpga_runtime.boards import Board
from fpga_runtime.pl_clocks import engine_clocking
from partitioner.codegen.engine_ip import ACT_MASTER, CONST_MASTER, IP_DIR, REGISTER_SPAN

ENGINE_SPAN = 0x10000            # one 64 KiB address segment per compute unit


@dataclass(frozen=True)
class EngineIP:
    """Where the block design finds the engine IP and what its AXI masters are called: the RTL engine packaged
    by `make ip` (the default), or the engine Vitis HLS exports (`partition --engine-impl hls`)."""

    impl: str
    repo: tuple[str, ...]              # the IP repository, relative to fpga/
    masters: tuple[str, ...]
    activation_master: str
    clock_port: bool                   # the HLS engine reads a free-running counter for its CYCLES register


ENGINE_IPS = {
    "rtl": EngineIP("rtl", (IP_DIR, "repo"), (ACT_MASTER.name, CONST_MASTER.name), ACT_MASTER.name, False),
    "hls": EngineIP("hls", ("hls", "engine_prj", "solution", "impl", "ip"),
                    ("m_axi_gmem0", "m_axi_gmem1", "m_axi_gmem2"), "m_axi_gmem1", True),
}


def master_ports(unit: int, hp_ports: tuple[str, ...], ip: EngineIP) -> dict[str, str]:
    """Each unit's activations on one high-performance port and its weights and program on the next, so the
    two streams a conv reads at once do not queue behind each other (units share ports beyond two)."""
    act = hp_ports[(2 * unit) % len(hp_ports)]
    const = hp_ports[(2 * unit + 1) % len(hp_ports)]
    return {m: act if m == ip.activation_master else const for m in ip.masters}


@dataclass(frozen=True)
class ProcessingSystem:
    """What differs between the Zynq-7000 and Zynq UltraScale+ processing systems in the block design."""

    modtype: str
    vlnv: str
    ctrl_master: str
    hp_ports: tuple[str, ...]
    irq_pin: str
    clock_pin: str
    ctrl_base: int
    ctrl_high: int
    ddr_high: int
    clock_params: dict


ZYNQ7 = ProcessingSystem(
    "processing_system7", "xilinx.com:ip:processing_system7:5.5", "M_AXI_GP0",
    ("S_AXI_HP0", "S_AXI_HP1", "S_AXI_HP2", "S_AXI_HP3"), "IRQ_F2P", "FCLK_CLK0", 0x43C0_0000, 0x7FFF_FFFF,
    0x1FFF_FFFF, {"enable": "PCW_FPGA_FCLK{i}_ENABLE", "freq": "PCW_ACT_FPGA{i}_PERIPHERAL_FREQMHZ",
                  "asked": "PCW_FPGA{i}_PERIPHERAL_FREQMHZ",
                  "div0": "PCW_FCLK{i}_PERIPHERAL_DIVISOR0", "div1": "PCW_FCLK{i}_PERIPHERAL_DIVISOR1",
                  "srcsel": "PCW_FCLK{i}_PERIPHERAL_CLKSRC"})
ZYNQMP = ProcessingSystem(
    "zynq_ultra_ps_e", "xilinx.com:ip:zynq_ultra_ps_e:3.5", "M_AXI_HPM0_FPD",
    ("S_AXI_HP0_FPD", "S_AXI_HP1_FPD", "S_AXI_HP2_FPD", "S_AXI_HP3_FPD"), "pl_ps_irq0", "pl_clk0", 0xA000_0000,
    0xAFFF_FFFF, 0x7FFF_FFFF, {"enable": "PSU__FPGA_PL{i}_ENABLE", "freq": "PSU__CRL_APB__PL{i}_REF_CTRL__ACT_FREQMHZ",
                               "div0": "PSU__CRL_APB__PL{i}_REF_CTRL__DIVISOR0",
                               "div1": "PSU__CRL_APB__PL{i}_REF_CTRL__DIVISOR1",
                               "srcsel": "PSU__CRL_APB__PL{i}_REF_CTRL__SRCSEL"})


def overlay_context(board: Board, units: int, clock_mhz: float, name: str, engine_impl: str = "rtl",
                    uram_units: int = 0, dsp_clock: int = 1) -> dict:
    """The block design's description; the first `uram_units` units keep their weights in UltraRAM; the engine
    clock made by an MMCM from PL clock 0 (`engine_clocking`)."""
    ps = ZYNQ7 if board.family == "zynq7" else ZYNQMP
    ip = ENGINE_IPS[engine_impl]
    clocking = engine_clocking(board.family, clock_mhz, dsp_clock)
    if abs(clocking.engine_mhz - clock_mhz) > 1e-3:
        raise ValueError(f"engine clock {clock_mhz:g} MHz: the overlay's MMCM makes {clocking.engine_mhz:g} MHz at "
                         "most (the build's clock should be one it makes: fpga_runtime/pl_clocks.clock_at_most)")
    div0, div1, pl0 = clocking.div0, clocking.div1, clocking.pl0_mhz
    engines = [
        {
            "name": f"engine_{i}",
            "base": ps.ctrl_base + i * ENGINE_SPAN,
            "high": ps.ctrl_base + (i + 1) * ENGINE_SPAN - 1,
            "ports": master_ports(i, ps.hp_ports, ip),
            "irq": i,
            "weight_uram": i < uram_units,
        }
        for i in range(units)
    ]
    intc_base = ps.ctrl_base + 0x10_0000
    clocks = []
    for i in range(4):
        on = i == 0
        clocks += [(ps.clock_params["enable"].format(i=i), int(on)),
                   (ps.clock_params["freq"].format(i=i), f"{pl0:.6f}" if on else "0"),
                   (ps.clock_params["div0"].format(i=i), div0 if on else 1),
                   (ps.clock_params["div1"].format(i=i), div1 if on else 1),
                   (ps.clock_params["srcsel"].format(i=i), 0)]
        if "asked" in ps.clock_params:
            clocks.append((ps.clock_params["asked"].format(i=i), f"{pl0:g}" if on else "0"))
    return {"ps": ps, "engines": engines, "units": units, "intc": {"name": "axi_intc_0", "base": intc_base,
            "high": intc_base + ENGINE_SPAN - 1}, "ps_clocks": clocks, "pl0_mhz": f"{pl0:g}",
            "pl0_hz": round(pl0 * 1e6), "mmcm": clocking.mmcm, "engine_hz": round(clocking.engine_mhz * 1e6),
            "engine_vlnv": ENGINE_VLNV, "masters": list(ip.masters), "registers": REGISTER_MAP,
            "engine_span": ENGINE_SPAN, "register_span": REGISTER_SPAN, "engine_ip": ip,
            "hex": lambda v: f"0x{v:08X}"}


def write_overlay(folder: Path, env, context: dict, board: Board) -> tuple[Path, Path]:
    """overlay.tcl and the generated <overlay_name>.hwh, from one description."""
    ctx = dict(context, **overlay_context(board, context["units"], float(context["clock_mhz"]),
                                          context["overlay_name"], context["engine_impl"],
                                          context["uram_units"], int(context["dsp_clock"])))
    tcl = folder / "overlay.tcl"
    hwh = folder / f"{context['overlay_name']}.hwh"
    tcl.write_text(env.get_template("overlay/zynq_overlay.tcl.j2").render(ctx))
    hwh.write_text(env.get_template("overlay/overlay.hwh.j2").render(ctx))
    return tcl, hwh
