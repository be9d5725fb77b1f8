"""`verilator` backend: the build's SystemVerilog engine (`fpga/rtl`), Verilated into a shared library and
driven through its AXI4-Lite registers like the board's IP, its AXI4 masters served by a memory model with
the board's port width, latency and DDR bandwidth. Every cycle it reports is a clock cycle of the RTL.
Each compute unit is its own simulator instance, so units run concurrently (ctypes releases the GIL)."""
from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fpga_runtime.backends import STATS_WINDOW, BackendError, HostMemoryBackend, timed
from fpga_runtime.boards import BOARDS
from fpga_runtime.cycle_model import LayerShape, layer_cycles
from fpga_runtime.engine_image import EngineImage, Program
from fpga_runtime.rtl_sim.build import ToolchainError, parts_disagreement
from fpga_runtime.rtl_sim.engine import MemoryTiming, RtlEngine, RunResult, SimulationError
from fpga_runtime.rtl_sim.single_layer import program_descriptors

RTL_DIR = "rtl"


@dataclass
class ProgramRun:
    program: Program
    unit: int
    result: RunResult


def board_timing(image: EngineImage, units: int) -> MemoryTiming:
    board = BOARDS.get((image.board or "").lower())
    if board is None:
        return MemoryTiming()
    return MemoryTiming.of_board(board.ddr_sustained_gbps, image.config.clock_mhz, board.port_bits, units=units)


def watchdog_cycles(const: np.ndarray, program: Program, config) -> int:
    """A program that runs 20 times longer than the cycle model says (plus a million cycles) has hung."""
    model = sum(
        layer_cycles(LayerShape.of(d, config), config, 4)
        for d in program_descriptors(const, program.addr, program.layers)
    )
    return 20 * model + 1_000_000


class VerilatorBackend(HostMemoryBackend):
    name = "verilator"
    rtl = True

    def __init__(self, image: EngineImage, folder: Path, compute_units: int | None = None, slots: int = 1):
        super().__init__(image, folder, compute_units, slots)
        rtl = folder / RTL_DIR
        if not rtl.is_dir():
            raise BackendError(f"{folder}: no RTL engine in {RTL_DIR}/ (a build from an older version: partition the "
                               "model again)")
        disagreement = parts_disagreement(rtl, image.config)
        if disagreement:
            raise BackendError(f"{disagreement}; partition the model again")
        self.timing = board_timing(image, self.units)
        try:
            self.sims = [RtlEngine(rtl, self.timing, quiet=i > 0) for i in range(self.units)]
        except ToolchainError as exc:
            raise BackendError(str(exc)) from None
        self.runs: deque[ProgramRun] = deque(maxlen=STATS_WINDOW)   # the most recent (profiles read them)
        self._lock = threading.Lock()
        self.watchdog = {name: watchdog_cycles(self.const, p, image.config) for name, p in image.programs.items()}

    def start(self, program: Program, unit: int = 0, slot: int = 0) -> Future:
        return self.pool.submit(unit, timed, program, unit, self._run_unit, unit, program, self.acts[slot])

    def _run_unit(self, unit: int, program: Program, act: np.ndarray) -> int:
        try:
            result = self.sims[unit].run(act, self.const, program.addr, program.layers, program.subgraph,
                                         self.watchdog.get(program.subgraph))
        except SimulationError as exc:
            raise BackendError(str(exc)) from None
        with self._lock:
            self.runs.append(ProgramRun(program, unit, result))
        return result.cycles

    def run(self, act: np.ndarray, const: np.ndarray, program_addr: int, layers: int) -> int:
        return self.sims[0].run(act, const, program_addr, layers).cycles

    def close(self) -> None:
        super().close()
        for sim in self.sims:
            sim.close()
