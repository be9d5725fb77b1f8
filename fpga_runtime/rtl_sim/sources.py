"""The engine sources a simulation compiles (csim: the C model; verilator: the RTL and its harness), gathered so
that a build folder stays data: C++ and SystemVerilog come from the installed templates (`hls_templates`), never
from the build, and the build's generated parameter headers are admitted only where every line is a comment, a
numeric `#define` / `` `define `` or a row of a numeric table. An `__attribute__((constructor))` appended to a
build's `csim_main.cpp` is therefore never compiled.

A deploy bundle run by its own runtime (`./run.sh`, or its folder on PYTHONPATH) is the exception: its runtime
is its author's code already, so its engine sources are as trusted as the Python that runs them.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

from fpga_runtime.backends import BackendError
from fpga_runtime.plan import small_text

CACHE = Path(os.environ.get("FPGA_SOURCES_CACHE", Path.home() / ".cache" / "fpga-partitioner" / "sources"))
GENERATED = {"hls": ("engine_config.h", "rsqrt_table.h"), "rtl": ("engine_config.svh", "rsqrt_rom.svh")}
_C_LINE = re.compile(r"\s*(//.*)?|#pragma once|#include <stdint\.h>|#define ENGINE_\w+ -?\d+(\.\d+)?\s*(//.*)?"
                     r"|static const uint32_t RSQRT_TABLE\[\d+\] = \{|\s*(\d+, )*\d+,?|\};")
_SV_LINE = re.compile(r"\s*(//.*)?|`define ENGINE_\w+ -?\d+(\.\d+)?\s*(//.*)?|`define ENGINE_DSP_2X"
                      r"|`define ENGINE_WINOGRAD"
                      r"|\s*function automatic logic \[\d+:0\] rsqrt_rom\(input logic \[\d+:0\] i\);|\s*case \(i\)"
                      r"|\s*\d+'d\d+: rsqrt_rom = \d+'d\d+;|\s*default: rsqrt_rom = \d+'d0;|\s*endcase|\s*endfunction")
HEADER_BYTES = 1 << 20


def _installed(kind: str, folder: Path) -> tuple[Path, list[str]]:
    """The trusted template folder for `kind` and the static files to take from it."""
    try:
        from hls_templates import ENGINE, RTL
        root = ENGINE if kind == "hls" else RTL
    except ImportError:
        bundle = Path(__file__).resolve().parents[2]
        if bundle not in folder.resolve().parents:
            raise BackendError(f"{folder}: the {'C model' if kind == 'hls' else 'RTL simulation'} compiles only the "
                               "engine sources of the installed toolchain (hls_templates), never a build's own: "
                               "install the project (pip install fpga-partitioner) to simulate this build") from None
        root = folder                                    # a bundle running its own runtime: see the module doc
    if kind == "hls":
        names = sorted(p.name for p in root.iterdir() if p.suffix in (".cpp", ".h") and p.name not in GENERATED["hls"])
    else:
        from fpga_runtime.rtl_sim.build import FILE_LIST, rtl_sources
        names = [FILE_LIST, *rtl_sources(root), "sim/harness.cpp",
                 *sorted(p.name for p in root.glob("*.svh") if p.name not in GENERATED["rtl"])]
    return root, names


def _checked_header(path: Path, kind: str) -> bytes:
    """A generated header, refused unless every line is one the generator writes."""
    try:
        text = small_text(path, HEADER_BYTES, "ascii")
    except (OSError, ValueError) as exc:
        raise BackendError(f"{path}: no readable generated header ({exc}); partition the model again") from None
    grammar = _C_LINE if kind == "hls" else _SV_LINE
    for n, line in enumerate(text.splitlines(), 1):
        if not grammar.fullmatch(line) or "\\" in line or "??" in line:
            raise BackendError(f"{path}, line {n}: not a line `partition` generates ({line[:60]!r}); a build folder "
                               "is data, and its engine sources are never compiled (partition the model again)")
    return text.encode()


def trusted_sources(folder: Path, kind: str) -> Path:
    """A folder of sources to compile for the build's `folder` (its fpga/hls or fpga/rtl): the installed
    templates' files and the build's checked headers, in a cache folder named by their digest."""
    root, names = _installed(kind, folder)
    files = {name: (root / name).read_bytes() for name in names}
    for name in GENERATED[kind]:
        files[name] = _checked_header(folder / name, kind)
    digest = hashlib.sha256(b"".join(n.encode() + b"\0" + files[n] for n in sorted(files))).hexdigest()[:20]
    target = CACHE / f"{kind}-{digest}"
    if target.is_dir():
        return target
    tmp = CACHE / f".{kind}-{digest}.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    for name, data in files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_bytes(data)
    try:
        tmp.rename(target)
    except OSError:                                      # another process made it first
        shutil.rmtree(tmp, ignore_errors=True)
    return target
