"""`SimulatedBoard`: a `pynq.Device` (PYNQ's extension point for new kinds of hardware) whose register reads and
writes go to simulated engine compute units and whose memory is `SimulatedMemory`. Made the active device, it
lets `pynq.Overlay`, `pynq.allocate` and `register_map` run unchanged, so the pynq backend's driver is the code
that runs on the board."""
from __future__ import annotations

import struct
from pathlib import Path

from pynq.pl_server.device import Device

from fpga_runtime.abi import ENGINE_VLNV
from fpga_runtime.boards import BOARDS
from fpga_runtime.pl_clocks import fabric_clock_ratio
from fpga_runtime.sim_board.memory import SimulatedBoardError, SimulatedMemory
from fpga_runtime.sim_board.processing_system import clock_windows, pl0_clock_mhz
from fpga_runtime.sim_board.units import CsimUnit, RegisterFile, RtlUnit


def pynq_version() -> str:
    from importlib.metadata import version
    return version("pynq")
ENGINES = ("verilator", "csim")


class SimulatedBoard(Device):
    """A Zynq board whose fabric holds the build's engine, simulated by `engine` ("verilator": the RTL; "csim":
    the HLS C++). `fpga` is the build's `fpga/` folder (the RTL and HLS sources)."""

    def __init__(self, fpga: Path, engine: str = "verilator", board: str | None = None, timing=None,
                 quiet: bool = False):
        if engine not in ENGINES:
            raise ValueError(f"--simulate {engine!r}: choose one of {', '.join(ENGINES)}")
        super().__init__(f"simulated-{engine}")
        spec = BOARDS.get((board or "").lower()) or BOARDS["zcu104"]
        if spec.family not in ("zynq7", "zynqmp"):
            raise ValueError(f"board {spec.name} is not a Zynq: PYNQ runs on Zynq-7000 and Zynq UltraScale+ boards")
        if spec.family == "zynq7" and int(pynq_version().split(".")[0]) >= 4:
            raise ValueError(f"{spec.name} is a Zynq-7000 board, which PYNQ {pynq_version()} no longer supports (its "
                             "overlay loader cannot read a Zynq-7000 PS clock); simulate it under pynq 3.x, the "
                             "version the board's image ships")
        self.board = spec
        self.name = f"simulated {spec.name}"
        self.arch = "armv7l" if spec.family == "zynq7" else "aarch64"
        self.capabilities = {"REGISTER_RW": True}
        self.default_memory = SimulatedMemory(self)
        self.engine = engine
        self.fpga = Path(fpga)
        self.timing = timing
        self.quiet = quiet
        self.bitfile_name = None
        self.timestamp = None
        self.units: dict[str, RtlUnit | CsimUnit] = {}
        self._csim = None
        self.mmcm_ratio = 1.0
        self._windows: list[tuple[int, int, object]] = list(clock_windows(spec.family))
        self._drop_stale_clock_object()

    @staticmethod
    def _drop_stale_clock_object() -> None:
        """PYNQ caches its clock driver per process for the first device's processor; a simulated board of
        another family must not write into that one."""
        from pynq.ps import Clocks
        if "_real_instance" in Clocks.__dict__:
            delattr(Clocks, "_real_instance")

    # ---- metadata and bitstream ---------------------------------------------------------------------------
    def get_bitfile_metadata(self, bitfile_name, partial: bool = False):
        """The overlay's .hwh through PYNQ's own metadata parser (the one a board uses for a full bitstream)."""
        from pynqmetadata.frontends import Metadata
        from pynqmetadata.views.runtime import RuntimeMetadataParser
        hwh = Path(bitfile_name).with_suffix(".hwh")
        if not hwh.is_file():
            raise OSError(f"{bitfile_name}: no {hwh.name} beside it (PYNQ reads the overlay's metadata from it)")
        try:
            return RuntimeMetadataParser(Metadata(input=str(hwh)))
        except Exception as exc:
            raise OSError(f"{hwh}: not overlay metadata PYNQ can read ({type(exc).__name__}: {exc})") from None

    def download(self, bitstream, parser=None) -> None:
        """Configure the fabric: one simulated compute unit per engine IP of the metadata, a register file for
        every other addressable IP."""
        parser = parser or self.get_bitfile_metadata(bitstream.bitfile_name)
        self._close_units()
        self.mmcm_ratio = fabric_clock_ratio(Path(bitstream.bitfile_name).with_suffix(".hwh"))
        windows = list(clock_windows(self.board.family))
        engines = sum(ip.get("type") == ENGINE_VLNV for ip in parser.ip_dict.values())
        for name, ip in parser.ip_dict.items():
            if "phys_addr" not in ip:
                continue
            if ip.get("type") == ENGINE_VLNV:
                handler = self.units[name] = self._unit(name, engines)
            else:
                handler = RegisterFile()
            windows.append((ip["phys_addr"], ip["addr_range"], handler))
        self._windows = windows
        self.post_download(bitstream, parser)

    def _unit(self, name: str, engines: int):
        if self.engine == "csim":
            from fpga_runtime.backends.csim import CsimEngine
            if self._csim is None:       # one library, one static engine state: the units take turns
                self._csim = CsimEngine(self.fpga / "hls", quiet=self.quiet)
            return CsimUnit(name, self._csim, self.default_memory)
        return RtlUnit(name, self.fpga / "rtl", self.default_memory, self.memory_timing(engines),
                       quiet=self.quiet or bool(self.units))

    def memory_timing(self, units: int):
        """The board's DDR as the engine sees it at its clock (each unit an equal share)."""
        from fpga_runtime.rtl_sim.engine import MemoryTiming
        if self.timing is not None:
            return self.timing
        return MemoryTiming.of_board(self.board.ddr_sustained_gbps, self.engine_clock_mhz, self.board.port_bits,
                                     units=units)

    @property
    def engine_clock_mhz(self) -> float:
        """PL clock 0 as PYNQ set it through the PS's registers, times the overlay's MMCM."""
        return pl0_clock_mhz(self.board.family) * self.mmcm_ratio

    # ---- AXI4-Lite -----------------------------------------------------------------------------------------
    def _window(self, address: int, length: int):
        for base, size, handler in self._windows:
            if base <= address and address + length <= base + size:
                return handler, address - base
        raise SimulatedBoardError(f"simulated board: no IP answers at {address:#x} (a real board would hang the bus)")

    def read_registers(self, address: int, length: int) -> bytes:
        handler, offset = self._window(address, length)
        words = [handler.read(offset + i) for i in range(0, max(4, length), 4)]
        return struct.pack(f"<{len(words)}I", *words)[:length]

    def write_registers(self, address: int, data: bytes) -> None:
        handler, offset = self._window(address, len(data))
        data = bytes(data) + b"\0" * (-len(data) % 4)
        for i in range(0, len(data), 4):
            handler.write(offset + i, int.from_bytes(data[i:i + 4], "little"))

    # ---- caches --------------------------------------------------------------------------------------------
    def flush(self, bo, offset, ptr, size) -> None:
        self.default_memory.flush(bo, offset, size)

    def invalidate(self, bo, offset, ptr, size) -> None:
        self.default_memory.invalidate(bo, offset, size)

    def _close_units(self) -> None:
        for unit in self.units.values():
            unit.close()
        self.units = {}

    def close(self) -> None:
        self._close_units()
