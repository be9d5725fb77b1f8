"""Drive one simulated compute unit the way the board's driver drives the IP: base addresses and the
program through the AXI4-Lite registers, ap_start, wait for the interrupt (with a watchdog), read CYCLES,
STATUS and the performance counters."""
from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fpga_runtime.abi import CTRL_START, PERF_COUNTERS, Reg
from fpga_runtime.cycle_model import MEMORY_LATENCY_NS
from fpga_runtime.rtl_sim.build import build_library
from fpga_runtime.rtl_sim.sources import trusted_sources

# where the simulated board puts the two regions (any 64-byte aligned, non-overlapping bases do)
CONST_BASE = 0x1_0000_0000
ACT_BASE = 0x2_0000_0000
PROFILE_COLS = 2 + len(PERF_COUNTERS)


class SimulationError(Exception):
    pass


@dataclass
class MemoryTiming:
    """The board's memory as the engine sees it, in engine clock cycles."""
    latency: int = 39            # MEMORY_LATENCY_NS of the cycle model at 300 MHz
    port_bytes: int = 16
    ddr_bytes_per_cycle: float = 64.0
    max_reads: int = 64

    @classmethod
    def of_board(cls, ddr_gbps: float, clock_mhz: float, port_bits: int, latency_ns: float = MEMORY_LATENCY_NS,
                 units: int = 1) -> "MemoryTiming":
        """The DDR bandwidth (`ddr_gbps`: the board's sustained figure) split evenly between `units` compute units."""
        return cls(latency=max(1, round(latency_ns * clock_mhz / 1000)), port_bytes=port_bits // 8,
                   ddr_bytes_per_cycle=ddr_gbps * 1e9 / (clock_mhz * 1e6) / units)


@dataclass
class LayerCounters:
    layer: int
    cycles: int
    counters: dict[str, int] = field(default_factory=dict)

    @property
    def ddr_bytes(self) -> int:
        """The bytes the layer moved to and from DDR, both masters (what cycle_model.layer_bytes models)."""
        return sum(self.counters.get(k, 0) for k in ("act_bytes_read", "const_bytes_read", "act_bytes_written"))


@dataclass
class RunResult:
    cycles: int
    counters: dict[str, int]
    layers: list[LayerCounters]


class _Lib:
    _cache: dict[Path, ctypes.CDLL] = {}
    _lock = threading.Lock()

    @classmethod
    def load(cls, path: Path) -> ctypes.CDLL:
        with cls._lock:
            if path not in cls._cache:
                lib = ctypes.CDLL(str(path))
                lib.sim_new.restype = ctypes.c_void_p
                lib.sim_free.argtypes = [ctypes.c_void_p]
                lib.sim_config.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_double, ctypes.c_int]
                lib.sim_clear_regions.argtypes = [ctypes.c_void_p]
                lib.sim_map.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64]
                lib.sim_reg_write.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32]
                lib.sim_reg_read.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
                lib.sim_reg_read.restype = ctypes.c_uint32
                lib.sim_cycle.argtypes = [ctypes.c_void_p]
                lib.sim_cycle.restype = ctypes.c_uint64
                lib.sim_layer.argtypes = [ctypes.c_void_p]
                lib.sim_layer.restype = ctypes.c_uint32
                lib.sim_fault.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)]
                if hasattr(lib, "sim_run"):        # engines generated before the simulated board lack it
                    lib.sim_idle.argtypes = [ctypes.c_void_p]
                    lib.sim_run.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
                    lib.sim_run.restype = ctypes.c_uint64
                if hasattr(lib, "sim_run_together"):  # and before units clocked together on one DDR
                    lib.sim_interrupt.argtypes = [ctypes.c_void_p]
                    lib.sim_share_ddr.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
                    lib.sim_run_together.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_uint64]
                    lib.sim_run_together.restype = ctypes.c_uint64
                lib.sim_wait.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint32,
                                         ctypes.POINTER(ctypes.c_uint32)]
                cls._cache[path] = lib
            return cls._cache[path]


class RtlEngine:
    """One compute unit: a Verilated engine instance with its own memory model."""

    def __init__(self, rtl: Path, timing: MemoryTiming | None = None, quiet: bool = False,
                 max_cycles: int = 2_000_000_000):
        self.lib = _Lib.load(build_library(trusted_sources(rtl, "rtl"), quiet))
        self.handle = self.lib.sim_new()
        self.timing = timing or MemoryTiming()
        t = self.timing
        self.lib.sim_config(self.handle, t.latency, t.port_bytes, t.ddr_bytes_per_cycle, t.max_reads)
        self.max_cycles = max_cycles

    def close(self) -> None:
        if getattr(self, "handle", None):
            self.lib.sim_free(self.handle)
            self.handle = None

    def __del__(self):
        self.close()

    def write_reg(self, reg: int, value: int) -> None:
        self.lib.sim_reg_write(self.handle, int(reg), value & 0xFFFFFFFF)

    def read_reg(self, reg: int) -> int:
        return self.lib.sim_reg_read(self.handle, int(reg))

    def read_reg64(self, lo: int) -> int:
        return self.read_reg(lo) | self.read_reg(lo + 4) << 32

    def map_regions(self, regions: list[tuple[int, np.ndarray]]) -> None:
        """What the engine's masters can reach: (bus address, contiguous host array) pairs; the arrays must stay
        alive while mapped."""
        self.lib.sim_clear_regions(self.handle)
        for base, array in regions:
            self.lib.sim_map(self.handle, base, array.ctypes.data, array.nbytes)

    def advance(self, max_cycles: int) -> int:
        """Clock the engine until it is idle or `max_cycles` pass; the cycles it took."""
        return self.lib.sim_run(self.handle, max_cycles)

    def idle(self) -> bool:
        return bool(self.lib.sim_idle(self.handle))

    def fault(self) -> int | None:
        """The first address the engine reached outside every mapped region, if any."""
        addr = ctypes.c_uint64(0)
        return addr.value if self.lib.sim_fault(self.handle, ctypes.byref(addr)) else None

    def start(self, act: np.ndarray, const: np.ndarray, program_addr: int, layers: int) -> None:
        """Map the regions, write the program's registers and ap_start, as the driver does; the engine runs
        as it is clocked."""
        if not (act.flags.c_contiguous and const.flags.c_contiguous):
            raise ValueError("memory regions must be contiguous")
        lib, h = self.lib, self.handle
        lib.sim_clear_regions(h)
        lib.sim_map(h, CONST_BASE, const.ctypes.data, const.nbytes)
        lib.sim_map(h, ACT_BASE, act.ctypes.data, act.nbytes)
        for lo, value in ((Reg.PROGRAM_LO, CONST_BASE + program_addr), (Reg.ACT_BASE_LO, ACT_BASE),
                          (Reg.CONST_BASE_LO, CONST_BASE)):
            self.write_reg(lo, value)
            self.write_reg(lo + 4, value >> 32)
        self.write_reg(Reg.LAYER_COUNT, layers)
        self.write_reg(Reg.GIE, 1)
        self.write_reg(Reg.IER, 1)
        self.write_reg(Reg.CTRL, CTRL_START)

    def interrupt(self) -> bool:
        return bool(self.lib.sim_interrupt(self.handle))

    def run(self, act: np.ndarray, const: np.ndarray, program_addr: int, layers: int,
            program_name: str = "program", max_cycles: int | None = None) -> RunResult:
        """One program; a run longer than `max_cycles` (default: the engine's) is a hang."""
        self.start(act, const, program_addr, layers)
        lib, h = self.lib, self.handle
        profile = np.zeros((layers + 2, PROFILE_COLS), np.uint64)
        used = ctypes.c_uint32(0)
        limit = max_cycles or self.max_cycles
        hung = lib.sim_wait(h, limit, profile.ctypes.data, profile.shape[0], ctypes.byref(used))
        return self.finish(program_name, layers, hung, limit, profile[:used.value])

    def finish(self, program_name: str, layers: int, hung: bool = False, limit: int = 0,
               profile: np.ndarray | None = None) -> RunResult:
        """After the interrupt (or a hang): check the run, clear the interrupt and read the counters."""
        lib, h = self.lib, self.handle
        fault_addr = ctypes.c_uint64(0)
        if lib.sim_fault(h, ctypes.byref(fault_addr)):
            raise SimulationError(f"{program_name}: the engine accessed {fault_addr.value:#x}, outside the constant "
                                  "and activation regions")
        if hung:
            layer = lib.sim_layer(h)
            raise SimulationError(f"{program_name}: the engine did not finish within {limit:,} cycles "
                                  f"(hung in layer {layer} of {layers})")
        self.write_reg(Reg.ISR, self.read_reg(Reg.ISR))        # toggle-on-write: clears what is set
        self.read_reg(Reg.CTRL)                                 # clears ap_done
        if self.read_reg(Reg.STATUS) & 1:
            raise SimulationError(
                f"{program_name}: the engine refused layer {self.read_reg(Reg.ERROR_LAYER)} (it was not "
                "generated for this layer's size: partition the model again)"
            )
        cycles = self.read_reg64(Reg.CYCLES_LO)
        counters = {name: self.read_reg64(Reg.COUNTERS + 8 * i) for i, name in enumerate(PERF_COUNTERS)}
        rows = profile if profile is not None else np.zeros((0, PROFILE_COLS), np.uint64)
        per_layer = []
        for a, b in zip(rows[:-1], rows[1:]):
            per_layer.append(LayerCounters(int(a[0]), int(b[1] - a[1]),
                                           {n: int(b[2 + i] - a[2 + i]) for i, n in enumerate(PERF_COUNTERS)}))
        return RunResult(cycles, counters, per_layer)
