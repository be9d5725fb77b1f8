"""The RTL engine as Vivado IP and as a Vitis RTL kernel, described once: its bus interfaces (port maps onto
`engine_top`'s ports), its register map (fpga_runtime.abi.REGISTER_MAP), the parameters the driver checks, and
the kernel arguments. Rendered into `fpga/ip/package_ip.tcl` (Vivado's IP packager, `make ip`), `kernel.xml`
and `package_xo.tcl` (Alveo), and read by the block design script, so all of them name the same pins."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fpga_runtime.abi import ABI_VERSION, ENGINE_VLNV, REGISTER_MAP, Reg

IP_DIR = "ip"
TOP = "engine_top"
REGISTER_SPAN = 0x1000      # the control slave decodes 12 address bits (engine_top s_axi_control_*addr)

# AXI4 signals the engine drives or reads, with their direction seen from the master
AXI_DIRECTION = {
    **{s: "out" for s in ("AWVALID", "AWADDR", "AWLEN", "AWSIZE", "AWBURST", "WVALID", "WDATA", "WSTRB", "WLAST",
                          "BREADY", "ARVALID", "ARADDR", "ARLEN", "ARSIZE", "ARBURST", "RREADY")},
    **{s: "in" for s in ("AWREADY", "WREADY", "BVALID", "BRESP", "ARREADY", "RVALID", "RDATA", "RRESP", "RLAST")},
}
AXI_LITE = ("AWVALID", "AWREADY", "AWADDR", "WVALID", "WREADY", "WDATA", "WSTRB", "BVALID", "BREADY", "BRESP",
            "ARVALID", "ARREADY", "ARADDR", "RVALID", "RREADY", "RDATA", "RRESP")
AXI_READ = ("ARVALID", "ARREADY", "ARADDR", "ARLEN", "ARSIZE", "ARBURST", "RVALID", "RREADY", "RDATA", "RLAST")
AXI_WRITE = ("AWVALID", "AWREADY", "AWADDR", "AWLEN", "AWSIZE", "AWBURST", "WVALID", "WREADY", "WDATA", "WSTRB",
             "WLAST", "BVALID", "BREADY")


@dataclass(frozen=True)
class BusInterface:
    """One AXI interface of the engine; its pins are `<name>_<signal>` in lower case, as Vivado infers them."""

    name: str
    mode: str                    # "slave" | "master"
    signals: tuple[str, ...]

    def port_maps(self) -> list[tuple[str, str, str]]:
        """(logical, physical, direction at the engine) for every signal."""
        flip = {"out": "in", "in": "out"}
        return [(s, f"{self.name}_{s.lower()}", AXI_DIRECTION[s] if self.mode == "master" else flip[AXI_DIRECTION[s]])
                for s in self.signals]


CONTROL = BusInterface("s_axi_control", "slave", AXI_LITE)
ACT_MASTER = BusInterface("m_axi_act", "master", AXI_READ + AXI_WRITE)      # activations: read and written
CONST_MASTER = BusInterface("m_axi_const", "master", AXI_READ)             # program, weights, tables: read
INTERFACES = (CONTROL, ACT_MASTER, CONST_MASTER)
CLOCK, RESET, INTERRUPT = "ap_clk", "ap_rst_n", "interrupt"


@dataclass(frozen=True)
class KernelArg:
    """A Vitis kernel argument: a register of the ABI, and the master a pointer argument is used on."""

    name: str
    offset: int
    size: int
    port: str

    @property
    def pointer(self) -> bool:
        return self.port != CONTROL.name


KERNEL_ARGS = (KernelArg("program", Reg.PROGRAM_LO, 8, CONST_MASTER.name),
               KernelArg("layer_count", Reg.LAYER_COUNT, 4, CONTROL.name),
               KernelArg("act", Reg.ACT_BASE_LO, 8, ACT_MASTER.name),
               KernelArg("consts", Reg.CONST_BASE_LO, 8, CONST_MASTER.name))


def vlnv_parts() -> dict[str, str]:
    vendor, library, name, version = ENGINE_VLNV.split(":")
    return {"vendor": vendor, "library": library, "name": name, "version": version}


def ip_context(context: dict, sources: list[str], includes: list[str]) -> dict:
    """What the packaging scripts need beyond the build's engine context."""
    return {
        "top": TOP, "sources": sources, "includes": includes, "interfaces": INTERFACES, "clock": CLOCK,
        "reset": RESET, "interrupt": INTERRUPT, "registers": REGISTER_MAP, "register_span": REGISTER_SPAN,
        "kernel_args": KERNEL_ARGS, "vlnv": vlnv_parts(), "engine_vlnv": ENGINE_VLNV,
        "driver_parameters": {"VEC": context["vec"], "PE_ROWS": context["pe_rows"], "ABI_VERSION": ABI_VERSION,
                              "MAX_KERNEL": context["max_kernel"], **context["part_parameters"]},
        "clock_hz": int(round(float(context["clock_mhz"]) * 1e6)), "data_bits": 8 * context["vec"],
        "hex": lambda v: f"0x{v:X}",
    }


def write_engine_ip(fpga: Path, env, context: dict, sources: list[str], includes: list[str]) -> Path:
    """`fpga/ip/`: the packaging script, the engine's out-of-context clock constraint and, for Alveo, the
    kernel description and the .xo packaging script."""
    folder = fpga / IP_DIR
    folder.mkdir(exist_ok=True)
    ctx = dict(context, **ip_context(context, sources, includes))
    templates = ["package_ip.tcl", "engine_ooc.xdc"] + (["kernel.xml", "package_xo.tcl"] if context["alveo"] else [])
    for name in templates:
        (folder / name).write_text(env.get_template(f"ip/{name}.j2").render(ctx))
    return folder
