"""Write the FPGA side of a build: `<build>/fpga/rtl/` (the SystemVerilog engine with the build's parameters),
`<build>/fpga/ip/` (its Vivado IP packaging and, for Alveo, the Vitis kernel description), `<build>/fpga/hls/`
(the C model and optional Vitis HLS engine: sources, config header, testbench, run_hls.tcl),
`<build>/fpga/overlay/` (the Vivado block design script and the PYNQ metadata it implies, or the Alveo link
configuration) and `<build>/fpga/Makefile`. Names from the model reach these files only as safe identifiers."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import jinja2

from fpga_runtime import engine_parts
from fpga_runtime.abi import ABI_VERSION, ENGINE_VLNV, Descriptor, EngineConfig, rsqrt_table
from fpga_runtime.boards import Board
from fpga_runtime.engine_image import ENGINE_DIR
from fpga_runtime.rtl_sim.build import FILE_LIST, rtl_sources
from hls_templates import ENGINE, ROOT, RTL
from partitioner.codegen.engine_ip import write_engine_ip
from partitioner.codegen.overlay import write_overlay
from partitioner.engine.geometry import engine_limits
from partitioner.ir.names import safe_identifier

HLS_DIR = "hls"
RTL_DIR = "rtl"
SOURCES = [
    "engine.h",
    "engine_memory.h",
    "engine_descriptor.h",
    "engine_epilogue.h",
    "engine_window.h",
    "engine.cpp",
    "csim_main.cpp",
    "testbench.cpp",
]
# Vivado board files, where the board has one (the part alone works too, without board presets)
BOARD_PARTS = {"pynq-z2": "tul.com.tw:pynq-z2:part0:1.0", "ultra96v2": "avnet.com:ultra96v2:part0:1.2",
               "kv260": "xilinx.com:kv260_som:part0:1.3", "zcu104": "xilinx.com:zcu104:part0:1.1",
               "zcu102": "xilinx.com:zcu102:part0:3.4"}
# the Vitis shell `v++ --link` targets by default on each Alveo card (make bitstream PLATFORM=... for another)
ALVEO_PLATFORMS = {"alveo-u250": "xilinx_u250_gen3x16_xdma_4_1_202210_1"}
ENGINE_IMPLS = ("rtl", "hls")
LINT_WAIVERS = "lint_waivers.vlt"


def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(ROOT)), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, autoescape=False)


def write_rtl(fpga: Path, context: dict, board: Board | None) -> Path:
    """The SystemVerilog engine with this build's parameters, and the Verilator harness, in `<fpga>/rtl`."""
    folder = fpga / RTL_DIR
    (folder / "sim").mkdir(parents=True, exist_ok=True)
    for name in [FILE_LIST, LINT_WAIVERS, *rtl_sources(RTL)]:
        shutil.copyfile(RTL / name, folder / name)
    for src in sorted(RTL.glob("*.svh")):
        shutil.copyfile(src, folder / src.name)
    shutil.copyfile(RTL / "sim" / "harness.cpp", folder / "sim" / "harness.cpp")
    rtl_context = dict(context, max_width=context["pool_width"],
                       pack=int(board is None or board.int8_macs_per_dsp == 2))
    (folder / "engine_config.svh").write_text(_env().get_template("rtl/engine_config.svh.j2").render(rtl_context))
    table = rsqrt_table()
    (folder / "rsqrt_rom.svh").write_text(_env().get_template("rtl/rsqrt_rom.svh.j2").render(
        entries=[(i, int(t)) for i, t in enumerate(table) if t]))
    return folder


DEFAULT_REGION_BYTES = 4 << 20          # m_axi depth of an engine built without a build's memory sizes (tests)


def write_engine_sources(out_dir: Path, build_name: str, config: EngineConfig, descriptors: list[Descriptor],
                         board: Board | None = None, region_bytes: tuple[int, int] | None = None,
                         engine_impl: str = "rtl", uram_units: int = 0) -> Path:
    """The HLS engine into `<out_dir>/fpga/hls` and the RTL engine into `fpga/rtl`; with a board also its IP
    packaging, run_hls.tcl, the overlay and the Makefile. Returns the HLS folder.
    `region_bytes` (activation, constant) sizes the m_axi depths co-simulation allocates; `engine_impl` is the
    engine the overlay instantiates (rtl: the packaged SystemVerilog engine; hls: the Vitis HLS export);
    `uram_units`: how many of the units keep their weights in UltraRAM (the first ones; the others' in block RAM)."""
    if engine_impl not in ENGINE_IMPLS:
        raise ValueError(f"engine_impl {engine_impl!r}: one of {', '.join(ENGINE_IMPLS)}")
    if not 0 <= uram_units <= config.compute_units:
        raise ValueError(f"uram_units {uram_units}: 0 to the engine's {config.compute_units} unit(s)")
    if uram_units and board is not None and not board.uram:
        raise ValueError(f"uram_units {uram_units}: {board.name} has no UltraRAM")
    if board is not None and board.family == "alveo" and 0 < uram_units < config.compute_units:
        raise ValueError(f"uram_units {uram_units} of {config.compute_units}: an Alveo build links one kernel "
                         "for every unit, so its units keep their weights in one kind of memory")
    fpga = out_dir / ENGINE_DIR
    folder = fpga / HLS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    context = {"build_name": safe_identifier(build_name), "abi_version": ABI_VERSION, "vec": config.vec,
               "pe_rows": config.pe_rows, "granule": config.granule,
               "epilogue_lanes": config.epilogue_lanes, "max_kernel": config.max_kernel,
               "pixels": config.pixels, "dsp_clock": config.dsp_clock,
               **engine_parts.built(config), "part_parameters": engine_parts.ip_parameters(config),
               "units": config.compute_units, "clock_mhz": f"{config.clock_mhz:g}", "uram_units": uram_units,
               "weight_uram": uram_units == config.compute_units,
               "period_ns": f"{1000.0 / config.clock_mhz:.3f}", **engine_limits(descriptors, config),
               "pool_ring": 1 << max(1, (config.max_kernel - 1).bit_length()),
               **{f"{k}_words": -(-max(64, b) // 64) for k, b in
                  zip(("act", "const"), region_bytes or (DEFAULT_REGION_BYTES, DEFAULT_REGION_BYTES))}}
    context["alveo"] = board is not None and board.family == "alveo"
    env = _env()
    (folder / "engine_config.h").write_text(env.get_template("engine/engine_config.h.j2").render(context))
    (folder / "rsqrt_table.h").write_text(env.get_template("engine/rsqrt_table.h.j2").render(
        table=[int(t) for t in rsqrt_table()]))
    for name in SOURCES:
        shutil.copyfile(ENGINE / name, folder / name)
    write_rtl(fpga, context, board)
    if board is None:
        return folder
    context.update(
        python=sys.executable,
        board=board.name,
        part=board.part,
        family=board.family,
        board_part=BOARD_PARTS.get(board.name),
        alveo=board.family == "alveo",
        overlay_name=f"engine_{context['build_name']}"[:60],
        engine_impl=engine_impl,
        engine_vlnv=ENGINE_VLNV,
        alveo_platform=ALVEO_PLATFORMS.get(board.name, ""),
    )
    rtl = fpga / RTL_DIR
    write_engine_ip(fpga, env, context, rtl_sources(rtl), sorted(p.name for p in rtl.glob("*.svh")))
    (folder / "run_hls.tcl").write_text(env.get_template("engine/run_hls.tcl.j2").render(context))
    overlay = fpga / "overlay"
    overlay.mkdir(exist_ok=True)
    if board.family == "alveo":
        for name in ("alveo_flow.md", "connectivity.cfg"):
            (overlay / name).write_text(env.get_template(f"overlay/{name}.j2").render(context))
    else:
        write_overlay(overlay, env, context, board)
    (fpga / "Makefile").write_text(env.get_template("Makefile.j2").render(context))
    return folder
