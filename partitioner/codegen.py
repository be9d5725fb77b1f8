"""Write the HLS engine of a build into `<build>/fpga/hls/`: the engine sources with a generated config
header (the build's parameters), ready for C-simulation (g++) and for Vitis HLS."""
from __future__ import annotations

import shutil
from pathlib import Path

import jinja2

from fpga_runtime.abi import ABI_VERSION, Descriptor, EngineConfig, Flag, Op
from fpga_runtime.engine_image import ENGINE_DIR
from hls_templates import ENGINE

from .names import safe_identifier

HLS_DIR = "hls"
SOURCES = ["engine.h", "engine.cpp", "csim_main.cpp"]


def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(ENGINE)), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, autoescape=False)


def engine_limits(descriptors: list[Descriptor], config: EngineConfig) -> dict[str, int]:
    """Sizes the generated engine needs for this build's layers."""
    widths = [d.conv_w for d in descriptors if d.op == Op.CONV] or [1]
    wtiles = [d.kh * d.kw * d.in_c * config.pe_rows for d in descriptors
              if d.op == Op.CONV and not d.flags & Flag.DEPTHWISE] or [64]
    return {"max_width": max(widths), "wbuf_bytes": max(wtiles)}


def write_hls(out_dir: Path, build_name: str, config: EngineConfig, descriptors: list[Descriptor]) -> Path:
    folder = out_dir / ENGINE_DIR / HLS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    context = {"build_name": safe_identifier(build_name), "abi_version": ABI_VERSION, "vec": config.vec,
               "pe_rows": config.pe_rows, "granule": config.granule, "max_kernel": config.max_kernel,
               **engine_limits(descriptors, config)}
    (folder / "engine_config.h").write_text(_env().get_template("engine_config.h.j2").render(context))
    for name in SOURCES:
        shutil.copyfile(ENGINE / name, folder / name)
    return folder
